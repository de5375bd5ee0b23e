"""A trace handed to the Perfetto UI from a notebook.

The UI's documented way for a page to give it a trace: open the UI in a
window, post it "PING" until it answers "PONG" (it is ready to listen), then
post ``{perfetto: {buffer, title}}``, the trace's bytes in an ArrayBuffer.
The bytes travel inside the output cell (base64), so this works wherever
the notebook's page runs (a remote Jupyter, VS Code), with no server.
"""

from __future__ import annotations

import base64
import html
import json
import os
import uuid
from pathlib import Path

PERFETTO_UI = "https://ui.perfetto.dev"

_PAGE = """\
<div id="{id}">
<button type="button">Open {label} in the Perfetto UI</button>
<span></span>
<script>
(function () {{
  const root = document.getElementById({id_js});
  const button = root.querySelector("button");
  const status = root.querySelector("span");
  const ui = {ui_js};
  const origin = new URL(ui).origin;
  const title = {title_js};
  const bytes = {data_js};
  button.addEventListener("click", function () {{
    const text = atob(bytes);
    const buffer = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) buffer[i] = text.charCodeAt(i);
    const win = window.open(ui);
    if (!win) {{
      status.textContent = " the browser blocked the UI's window: allow pop-ups for this page";
      return;
    }}
    status.textContent = " waiting for the UI...";
    const ping = setInterval(function () {{ win.postMessage("PING", origin); }}, 50);
    window.addEventListener("message", function answered(event) {{
      if (event.source !== win || event.data !== "PONG") return;
      clearInterval(ping);
      window.removeEventListener("message", answered);
      win.postMessage({{perfetto: {{buffer: buffer.buffer, title: title}}}}, origin);
      status.textContent = " sent to the UI";
    }});
  }});
}})();
</script>
</div>
"""


def _js(value: object) -> str:
    """`value` as a JavaScript literal that cannot end the script element."""
    return json.dumps(value).replace("</", "<\\/")


class PerfettoButton:
    """A notebook output: a button that opens the trace in the Perfetto UI.

    Shown by Jupyter as the value of a cell (or with ``display()``); its
    HTML is also ``html`` (a page of its own: save it, open it in a
    browser)."""

    def __init__(self, html: str, size: int) -> None:
        self.html = html
        self.size = size

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return f"<PerfettoButton for a trace of {self.size} bytes>"


def open_in_notebook(
    trace: str | os.PathLike[str],
    title: str | None = None,
    *,
    ui: str = PERFETTO_UI,
) -> PerfettoButton:
    """A button that opens `trace` (a .perfetto-trace, gzipped or not, or a
    Chrome JSON trace) in ui.perfetto.dev, titled `title` (default: the
    file's name). The trace is embedded in the cell's output, a third again
    its size: for traces over a few tens of megabytes, ``nsys2perfetto open``
    serves the file instead."""
    path = Path(trace)
    data = path.read_bytes()
    element = f"nsys2perfetto-{uuid.uuid4().hex}"
    page = _PAGE.format(
        id=element,
        id_js=_js(element),
        label=html.escape(path.name),
        ui_js=_js(ui),
        title_js=_js(title if title is not None else path.name),
        data_js=_js(base64.b64encode(data).decode("ascii")),
    )
    return PerfettoButton(page, len(data))
