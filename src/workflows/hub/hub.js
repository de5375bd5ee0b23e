// The script of the hub's pages (`nsys2perfetto serve`), in parts served
// as one file: this one (what every page needs: the hub's config, its
// POSTs, where a status is shown, a job followed live), then the hand-off
// to the Perfetto UI (perfetto.js), the home page's list (list.js) and its
// uploads (drop.js). Every page is whole without it; it adds what only a
// script can do. It never builds HTML from data: text goes in as
// textContent, pages come from the server. It runs from its own file only
// (the pages' Content-Security-Policy allows no inline script or
// handler). Whatever starts work is a POST carrying the hub's CSRF token
// (from /api/config, which other sites cannot read).
"use strict";

const config = fetch("/api/config", { credentials: "same-origin" }).then((r) => r.json());

// What a refusal's body says: the API's JSON `error`, else its line of text.
function said(body) {
  const text = body.trim();
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed.error === "string") {
      return parsed.error;
    }
  } catch (e) {
    // Not JSON: the text is the message.
  }
  return text;
}

// What a refused fetch says.
async function refusal(answer) {
  return said(await answer.text()) || "refused: " + answer.status;
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

// Where a job's status is shown: an element holding a line of text (its
// `.hub-status`) and what a job puts beside it (its progress, Cancel).
class Place {
  constructor(holder) {
    this.holder = holder;
    this.line = holder.querySelector(":scope > .hub-status");
    if (!this.line) {
      this.line = document.createElement("span");
      this.line.className = "hub-status";
      this.line.setAttribute("role", "status");
      holder.prepend(this.line);
    }
  }

  say(text) {
    this.line.textContent = text;
  }

  add(...elements) {
    this.holder.append(...elements);
  }
}

// The place of a status where `element` was clicked: in the home list, a
// row of its own under the run's row (rowPlace, list.js); elsewhere, a
// line right after the block clicked in (the buttons that act on the runs
// chosen, the paragraph of a link).
function placeNear(element) {
  const row = element.closest("section.reports tr");
  if (row) {
    return rowPlace(row);
  }
  const block = element.closest("div.hub-tools, p, li, section") || document.querySelector("h1");
  let box = block.nextElementSibling;
  if (!box || !box.classList.contains("hub-status-box")) {
    box = document.createElement("p");
    box.className = "hub-status-box";
    block.after(box);
  }
  return new Place(box);
}

// Starts a job on the server by a POST to `url` and follows it (its
// answer: server-sent events) until it ends, at `place`: its progress as
// a bar, and a Cancel button. Closing the answer is leaving the job, which
// the server cancels when no one else waits.
function followed(url, doing, place) {
  return new Promise((resolve, reject) => {
    place.say(doing + " (once; later asks are instant)…");
    const bar = document.createElement("progress");
    bar.className = "hub-progress";
    bar.max = 1;
    const cancel = document.createElement("button");
    cancel.className = "hub-cancel";
    cancel.textContent = "Cancel";
    place.add(bar, cancel);
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
        place.say(doing + ": " + Math.round(job.done * 100) + "%");
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
