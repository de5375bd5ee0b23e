// Uploads on the home page: files dropped on its section.upload or chosen
// with its file picker, sent one after the other, each with a line of its
// own under the box: its progress, then added (under which name) or
// refused and why, in the server's words.

const zone = document.querySelector("section.upload");
if (zone) {
  const picker = document.createElement("input");
  picker.type = "file";
  picker.multiple = true;
  picker.accept = ".sqlite,.nsys-rep,.qdrep";
  picker.addEventListener("change", () => uploadAll(picker.files));
  // One line per file of the last drop or choice.
  const told = document.createElement("ul");
  told.className = "hub-uploads";
  told.setAttribute("aria-live", "polite");
  zone.append(picker, told);
  zone.addEventListener("dragover", (event) => {
    event.preventDefault();
    zone.classList.add("over");
  });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    uploadAll(event.dataTransfer.files);
  });

  async function uploadAll(files) {
    const sent = Array.from(files);
    told.textContent = "";
    const lines = sent.map((file) => {
      const line = document.createElement("li");
      line.textContent = file.name + ": waiting";
      told.append(line);
      return line;
    });
    for (const [at, file] of sent.entries()) {
      const line = lines[at];
      try {
        const saved = await upload(file, line);
        line.className = "added";
        line.textContent =
          saved === file.name ? "Added " + saved + "." : "Added " + file.name + " as " + saved + ".";
      } catch (why) {
        line.className = "refused";
        line.textContent = refusedLine(file.name, String(why));
      }
    }
    refresh();
  }
}

// What the page says of an upload of `name` the server refused: its
// words, without the name where they start with it.
function refusedLine(name, message) {
  if (!message.startsWith("refused: ")) {
    return "Not added: " + name + ": " + message;
  }
  let why = message.slice("refused: ".length);
  if (why.startsWith(name + ": ")) {
    why = why.slice(name.length + 2);
  }
  return "Refused " + name + ": " + why;
}

// Sends `file` as the body of one POST (streamed to disk by the server),
// its progress on `line`: the name it was saved under, or why not.
async function upload(file, line) {
  const { csrf } = await config;
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", "/upload?name=" + encodeURIComponent(file.name));
    request.setRequestHeader("Content-Type", "application/octet-stream");
    request.setRequestHeader("X-CSRF-Token", csrf);
    line.textContent = "Uploading " + file.name + "…";
    const bar = document.createElement("progress");
    bar.max = 1;
    bar.value = 0;
    line.append(bar);
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) {
        bar.value = event.loaded / event.total;
      }
    };
    request.onload = () => {
      if (request.status === 200) {
        resolve(request.responseText.trim());
      } else {
        reject(said(request.responseText) || "upload failed: " + request.status);
      }
    };
    request.onerror = () => reject("the upload failed: the server did not answer");
    request.send(file);
  });
}
