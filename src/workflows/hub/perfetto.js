// A run opened in the Perfetto UI the documented way: converted (once,
// followed live), the UI opened, PINGed until it answers PONG, posted the
// trace's bytes; a trace too big for a tab offered to trace_processor
// instead. Its status is shown where its link was clicked.

// How long the UI may take to answer PING before the page says so.
const PONG_WAIT_S = 10;

// Open in Perfetto: links to /open/ID.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[href^='/open/']");
  if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) {
    return;
  }
  event.preventDefault();
  openInPerfetto(link.getAttribute("href").slice("/open/".length), placeNear(link));
});

async function openInPerfetto(id, place) {
  // Opened now, while the click lets a page open a window; pointed at the
  // UI once its address is known.
  const win = window.open("about:blank", "_blank");
  if (!win) {
    place.say("The browser blocked the Perfetto tab: allow pop-ups for this page.");
    return;
  }
  const { ui } = await config;
  const origin = new URL(ui).origin;
  win.location.href = ui;
  // The run as the list names it: its path under its DIR.
  const shownName = decodeURIComponent(id.slice(id.indexOf("/") + 1));
  try {
    await followed("/api/convert/" + id, "Converting " + shownName, place);
  } catch (message) {
    place.say(String(message));
    win.close();
    return;
  }
  // Too big for a tab: not handed to the UI, trace_processor offered.
  const fit = await fetched("/api/fit/" + id, (answer) => answer.json(), "The server stopped answering: ", place, win);
  if (!fit) {
    return;
  }
  if (!fit.fits) {
    win.close();
    offerTraceProcessor(id, fit, place);
    return;
  }
  const buffer = await fetched(
    "/trace/" + id,
    (answer) => answer.arrayBuffer(),
    "The trace could not be fetched: ",
    place,
    win,
  );
  if (!buffer) {
    return;
  }
  place.say("Handing " + buffer.byteLength + " bytes to the Perfetto UI…");
  const name = decodeURIComponent(id.split("/").pop());
  const ping = setInterval(() => win.postMessage("PING", origin), 50);
  // A UI that never answers (not reachable, not the UI, the tab closed):
  // said, with what to check, while the PINGs go on.
  const silent = setTimeout(() => {
    place.say(
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
    place.say("Opened " + name + " in Perfetto.");
  };
  window.addEventListener("message", answered);
}

// What `read` makes of the answer to a GET of `url`; null where the server
// refused (its reason said in `place`) or could not be reached (`lost` and
// why said), the UI's tab `win` closed then.
async function fetched(url, read, lost, place, win) {
  try {
    const answer = await fetch(url, { credentials: "same-origin" });
    if (!answer.ok) {
      place.say(await refusal(answer));
      win.close();
      return null;
    }
    return await read(answer);
  } catch (e) {
    place.say(lost + e);
    win.close();
    return null;
  }
}

// A trace too big for a browser tab, as `open` handles it: loaded by
// trace_processor on the server's machine, which the UI uses as its
// accelerator ("Use loaded trace"); where there is none, why.
function offerTraceProcessor(id, fit, place) {
  if (!fit.tp) {
    place.say(
      fit.message +
        ". Opening it with trace_processor as the UI's accelerator is not offered: " +
        fit.no_tp +
        ".",
    );
    return;
  }
  place.say(fit.message + ".");
  const button = document.createElement("button");
  button.className = "hub-tp";
  button.textContent = "Open it with trace_processor as the UI's accelerator";
  place.add(button);
  button.addEventListener("click", async () => {
    button.remove();
    const win = window.open("about:blank", "_blank");
    const answer = await posted("/api/tp/" + id);
    if (!answer.ok) {
      place.say(await refusal(answer));
      if (win) {
        win.close();
      }
      return;
    }
    const { url } = await answer.json();
    if (win) {
      win.location.href = url;
    }
    place.say('trace_processor loads the trace: in the Perfetto UI choose "Use loaded trace" (' + url + ").");
  });
}
