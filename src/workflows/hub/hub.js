// The script of the hub's pages (`nsys2perfetto serve`). Every page is
// whole without it; it adds what only a script can do: uploads by drag and
// drop or a file picker (with progress), the home page's list kept fresh,
// a conversion's progress live with a Cancel button, and the trace handed to the Perfetto UI the documented way (open the UI,
// PING until it answers PONG, post the trace's bytes). It never builds HTML
// from data: text goes in as textContent, pages come from the server. It
// runs from its own file only (the pages' Content-Security-Policy allows no
// inline script or handler). Whatever starts work is a POST carrying the
// hub's CSRF token (from /api/config, which other sites cannot read).
"use strict";

const config = fetch("/api/config", { credentials: "same-origin" }).then((r) => r.json());

// What a refusal says: the API's JSON `error`, else its line of text.
async function refusal(answer) {
  const text = (await answer.text()).trim();
  try {
    const said = JSON.parse(text);
    if (said && typeof said.error === "string") {
      return said.error;
    }
  } catch (e) {
    // Not JSON: the text is the message.
  }
  return text;
}

// A POST of the page's to `url` (its CSRF token in a header).
async function posted(url, signal) {
  const { csrf } = await config;
  return fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: { "X-CSRF-Token": csrf },
    signal,
  });
}

function status(text) {
  let line = document.getElementById("hub-status");
  if (!line) {
    line = document.createElement("p");
    line.id = "hub-status";
    line.setAttribute("role", "status");
    // Above the list, under the buttons that act on the runs chosen,
    // where there is one; else under the heading.
    const list = document.querySelector("section.reports");
    if (list) {
      list.before(line);
    } else {
      document.querySelector("h1").after(line);
    }
  }
  line.textContent = text;
}

// How long the UI may take to answer PING before the page says so.
const PONG_WAIT_S = 10;

// Open in Perfetto: links to /open/ID.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[href^='/open/']");
  if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) {
    return;
  }
  event.preventDefault();
  openInPerfetto(link.getAttribute("href").slice("/open/".length));
});

async function openInPerfetto(id) {
  // Opened now, while the click lets a page open a window; pointed at the
  // UI once its address is known.
  const win = window.open("about:blank", "_blank");
  if (!win) {
    status("The browser blocked the Perfetto tab: allow pop-ups for this page.");
    return;
  }
  const { ui } = await config;
  const origin = new URL(ui).origin;
  win.location.href = ui;
  // The run as the list names it: its path under its DIR.
  const shownName = decodeURIComponent(id.slice(id.indexOf("/") + 1));
  try {
    await followed("/api/convert/" + id, "Converting " + shownName);
  } catch (message) {
    status(String(message));
    win.close();
    return;
  }
  // Too big for a tab: not handed to the UI, trace_processor offered.
  let fit;
  try {
    const answer = await fetch("/api/fit/" + id, { credentials: "same-origin" });
    if (!answer.ok) {
      status(await refusal(answer));
      win.close();
      return;
    }
    fit = await answer.json();
  } catch (e) {
    status("The server stopped answering: " + e);
    win.close();
    return;
  }
  if (!fit.fits) {
    win.close();
    offerTraceProcessor(id, fit);
    return;
  }
  let buffer;
  try {
    const response = await fetch("/trace/" + id, { credentials: "same-origin" });
    if (!response.ok) {
      status(await refusal(response));
      win.close();
      return;
    }
    buffer = await response.arrayBuffer();
  } catch (e) {
    status("The trace could not be fetched: " + e);
    win.close();
    return;
  }
  status("Handing " + buffer.byteLength + " bytes to the Perfetto UI…");
  const name = decodeURIComponent(id.split("/").pop());
  const ping = setInterval(() => win.postMessage("PING", origin), 50);
  // A UI that never answers (not reachable, not the UI, the tab closed):
  // said, with what to check, while the PINGs go on.
  const silent = setTimeout(() => {
    status(
      "The Perfetto UI at " + origin + " has not answered in " + PONG_WAIT_S + " s. Check that its tab " +
        "opened (pop-ups allowed for this page?) and loads: is " + ui + " (the hub's --ui) " +
        "reachable from this browser?",
    );
  }, PONG_WAIT_S * 1000);
  const answered = (event) => {
    if (event.source !== win || event.data !== "PONG") {
      return;
    }
    clearTimeout(silent);
    clearInterval(ping);
    window.removeEventListener("message", answered);
    win.postMessage(
      { perfetto: { buffer, title: name, fileName: name + ".perfetto-trace" } },
      origin,
      [buffer],
    );
    status("Opened " + name + " in Perfetto.");
  };
  window.addEventListener("message", answered);
}

// A trace too big for a browser tab, as `open` handles it: loaded by
// trace_processor on the server's machine, which the UI uses as its
// accelerator ("Use loaded trace"); where there is none, why.
function offerTraceProcessor(id, fit) {
  if (!fit.tp) {
    status(
      fit.message +
        ". Opening it with trace_processor as the UI's accelerator is not offered: " +
        fit.no_tp +
        ".",
    );
    return;
  }
  status(fit.message + ".");
  const button = document.createElement("button");
  button.id = "hub-tp";
  button.textContent = "Open it with trace_processor as the UI's accelerator";
  document.getElementById("hub-status").after(button);
  button.addEventListener("click", async () => {
    button.remove();
    const win = window.open("about:blank", "_blank");
    const answer = await posted("/api/tp/" + id);
    if (!answer.ok) {
      status(await refusal(answer));
      if (win) {
        win.close();
      }
      return;
    }
    const { url } = await answer.json();
    if (win) {
      win.location.href = url;
    }
    status('trace_processor loads the trace: in the Perfetto UI choose "Use loaded trace" (' + url + ").");
  });
}

// Starts a job on the server by a POST to `url` and follows it (its
// answer: server-sent events) until it ends: its progress as a bar, and a
// Cancel button. Closing the answer is leaving the job, which the server
// cancels when no one else waits.
function followed(url, doing) {
  return new Promise((resolve, reject) => {
    status(doing + " (once; later asks are instant)…");
    const line = document.getElementById("hub-status");
    const bar = document.createElement("progress");
    bar.id = "hub-conversion";
    bar.max = 1;
    const cancel = document.createElement("button");
    cancel.id = "hub-cancel";
    cancel.textContent = "Cancel";
    line.after(bar, cancel);
    const leaving = new AbortController();
    let ended = false;
    const finish = () => {
      ended = true;
      leaving.abort();
      bar.remove();
      cancel.remove();
    };
    cancel.addEventListener("click", () => {
      finish();
      reject("Cancelled: " + doing + ".");
    });
    // One event: the job as JSON; true once it ended.
    const heard = (job) => {
      if (job.done !== null) {
        bar.value = job.done;
        status(doing + ": " + Math.round(job.done * 100) + "%");
      }
      if (job.state === "done") {
        finish();
        resolve();
      } else if (job.state === "failed") {
        finish();
        reject("error: " + job.error);
      } else if (job.state === "cancelled") {
        finish();
        reject("Cancelled: " + doing + ".");
      } else {
        return false;
      }
      return true;
    };
    (async () => {
      try {
        const answer = await posted(url, leaving.signal);
        if (!answer.ok) {
          finish();
          reject(await refusal(answer));
          return;
        }
        const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
        let pending = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            break;
          }
          pending += value;
          let at;
          while ((at = pending.indexOf("\n\n")) >= 0) {
            const event = pending.slice(0, at);
            pending = pending.slice(at + 2);
            const data = event.split("\n").find((l) => l.startsWith("data: "));
            if (data && heard(JSON.parse(data.slice("data: ".length)))) {
              return;
            }
          }
        }
        if (!ended) {
          finish();
          reject("The server stopped answering.");
        }
      } catch (e) {
        if (!ended) {
          finish();
          reject("The server stopped answering.");
        }
      }
    })();
  });
}

// Uploads: the home page's section.upload.
const zone = document.querySelector("section.upload");
if (zone) {
  const picker = document.createElement("input");
  picker.type = "file";
  picker.multiple = true;
  picker.accept = ".sqlite,.nsys-rep,.qdrep";
  picker.addEventListener("change", () => uploadAll(picker.files));
  const bar = document.createElement("progress");
  bar.max = 1;
  bar.value = 0;
  bar.hidden = true;
  zone.append(picker, bar);
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
    for (const file of Array.from(files)) {
      try {
        const answer = await upload(file, bar);
        status("Added " + answer + ".");
      } catch (message) {
        status(String(message));
      }
    }
    refresh();
  }
}

// Sends `file` as the body of one POST (streamed to disk by the server).
async function upload(file, bar) {
  const { csrf } = await config;
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", "/upload?name=" + encodeURIComponent(file.name));
    request.setRequestHeader("Content-Type", "application/octet-stream");
    request.setRequestHeader("X-CSRF-Token", csrf);
    bar.hidden = false;
    request.upload.onprogress = (event) => {
      if (event.lengthComputable) {
        bar.value = event.loaded / event.total;
      }
    };
    request.onload = () => {
      bar.hidden = true;
      if (request.status === 200) {
        resolve(request.responseText);
      } else {
        reject(request.responseText || "upload failed: " + request.status);
      }
    };
    request.onerror = () => {
      bar.hidden = true;
      reject("upload of " + file.name + " failed");
    };
    status("Uploading " + file.name + "…");
    request.send(file);
  });
}

// The home page's list, fetched again now and then: new files, headlines.
const reports = document.querySelector("section.reports");

// The list as the server last sent it (the page's own has boxes added).
let shown = reports ? reports.innerHTML : "";

// Runs chosen by their boxes: two compared on /compare, or put in one
// trace; several merged, or their steps measured across ranks.
const chosen = [];
let compareButton = null;
function addBoxes() {
  for (const link of reports.querySelectorAll("tr td:first-child a[href^='/report/']")) {
    const id = link.getAttribute("href").slice("/report/".length);
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "choose";
    box.title = "choose: compare, merge, steps across ranks";
    box.checked = chosen.includes(id);
    box.addEventListener("change", () => {
      const at = chosen.indexOf(id);
      if (box.checked && at < 0) {
        chosen.push(id);
      } else if (!box.checked && at >= 0) {
        chosen.splice(at, 1);
      }
      updateCompare();
    });
    link.before(box, " ");
  }
}
function updateCompare() {
  compareButton.disabled = chosen.length !== 2;
  compareButton.textContent =
    chosen.length === 2 ? "Compare the two chosen runs" : "Choose two runs to compare";
  bothButton.disabled = chosen.length !== 2;
  mergeButton.disabled = chosen.length < 2;
  stepsButton.disabled = chosen.length < 1;
}

// A trace made of the chosen runs (`compare --trace`, `merge`), made as a
// job followed live, then downloaded.
async function makeTrace(kind, doing) {
  const query = chosen.map((id) => "run=" + id).join("&");
  try {
    await followed("/api/make/" + kind + "?" + query, doing);
  } catch (message) {
    status(String(message));
    return;
  }
  status("Made: downloading it.");
  window.location.href = "/made/" + kind + "?" + query;
}
// The steps of the chosen runs across their ranks (`report --step
// PATTERN`), measured as a job followed live, then shown: the CLI's page.
async function showSteps() {
  const query =
    chosen.map((id) => "run=" + id).join("&") + "&step=" + encodeURIComponent(stepField.value);
  try {
    await followed("/api/make/steps?" + query, "Measuring the steps of the chosen runs");
  } catch (message) {
    status(String(message));
    return;
  }
  window.location.href = "/made/steps?" + query;
}
let bothButton = null;
let mergeButton = null;
let stepsButton = null;
let stepField = null;
if (reports) {
  compareButton = document.createElement("button");
  compareButton.id = "hub-compare";
  compareButton.addEventListener("click", () => {
    if (chosen.length === 2) {
      window.location.href = "/compare?a=" + chosen[0] + "&b=" + chosen[1];
    }
  });
  bothButton = document.createElement("button");
  bothButton.id = "hub-both";
  bothButton.textContent = "Both runs in one trace";
  bothButton.addEventListener("click", () =>
    makeTrace("compare", "Putting both runs in one trace"),
  );
  mergeButton = document.createElement("button");
  mergeButton.id = "hub-merge";
  mergeButton.textContent = "Merge the chosen runs into one trace";
  mergeButton.addEventListener("click", () => makeTrace("merge", "Merging the chosen runs"));
  stepField = document.createElement("input");
  stepField.id = "hub-step-pattern";
  stepField.type = "text";
  stepField.value = "ProfilerStep*";
  stepField.title =
    "the steps: NVTX ranges whose names match this glob (* any text, ? one character), as report --step takes it";
  stepField.setAttribute("aria-label", "step pattern");
  stepsButton = document.createElement("button");
  stepsButton.id = "hub-steps";
  stepsButton.textContent = "Steps across ranks";
  stepsButton.addEventListener("click", showSteps);
  stepField.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !stepsButton.disabled) {
      showSteps();
    }
  });
  const stepLabel = document.createElement("label");
  stepLabel.append("step pattern ", stepField);
  reports.before(
    compareButton, " ", bothButton, " ", mergeButton, " ", stepsButton, " ", stepLabel,
  );
  updateCompare();
  addBoxes();
}
async function refresh() {
  if (!reports) {
    return;
  }
  try {
    const response = await fetch("/", { credentials: "same-origin" });
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = page.querySelector("section.reports");
    if (fresh && fresh.innerHTML !== shown) {
      shown = fresh.innerHTML;
      reports.innerHTML = fresh.innerHTML;
      addBoxes();
    }
    const count = page.querySelector("h1 + p");
    const mine = document.querySelector("h1 + p");
    if (count && mine && count.textContent !== mine.textContent) {
      mine.textContent = count.textContent;
    }
  } catch (e) {
    // The server is gone or restarting: try again later.
  }
}
if (reports) {
  setInterval(refresh, 2000);
}
