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
import zlib
from pathlib import Path

PERFETTO_UI = "https://ui.perfetto.dev"

# Above this, the button is refused rather than embedded: the notebook
# would carry the trace a third again its size in base64, saved with it,
# and browsers grow slow to open it.
EMBED_LIMIT = 64 * 1024 * 1024

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


def _what_it_is(head: bytes) -> str | None:
    """Why the file starting with `head` is not a trace, or None where it is
    one: a Perfetto trace starts with a TracePacket (field 1, bytes: 0x0a),
    a JSON trace with ``{`` or ``[``; either may be gzipped."""
    if head.startswith(b"SQLite format 3\0"):
        return "an SQLite export, not a trace: convert it first (nsys2perfetto.convert)"
    if head.startswith(b"NVIDIA Tegra Profiler Report"):
        return "an Nsight Systems report, not a trace: convert it first (nsys2perfetto.convert)"
    if head.startswith(b"\x1f\x8b"):
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 64)
        except zlib.error:
            return "gzipped, but not as gzip writes it"
        if not head:
            return "an empty gzip stream"
    stripped = head.lstrip(b" \t\r\n")
    if head[:1] == b"\x0a" or stripped[:1] in (b"{", b"["):
        return None
    return "neither a Perfetto trace nor a JSON trace (gzipped or not)"


def open_in_notebook(
    trace: str | os.PathLike[str],
    title: str | None = None,
    *,
    ui: str = PERFETTO_UI,
    max_bytes: int | None = EMBED_LIMIT,
) -> PerfettoButton:
    """A button that opens `trace` (a .perfetto-trace, gzipped or not, or a
    Chrome JSON trace) in ui.perfetto.dev, titled `title` (default: the
    file's name). The trace is embedded in the cell's output, a third again
    its size; a trace over `max_bytes` (64 MiB; None: no limit) is refused,
    saying to serve it with ``nsys2perfetto open`` instead. A file that is
    not a trace (an SQLite export, a report) is refused with ValueError."""
    path = Path(trace)
    with open(path, "rb") as file:
        why = _what_it_is(file.read(4096))
    if why is not None:
        raise ValueError(f"{path} is {why}")
    size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise ValueError(
            f"{path} is {size / 1e6:.0f} MB, over the {max_bytes / 1e6:.0f} MB a notebook "
            f"carries well (embedded, it would add {size * 4 / 3 / 1e6:.0f} MB of base64 to "
            f"the notebook): serve it with `nsys2perfetto open {path}`, make it smaller "
            "(convert with exclude= or time=), or pass max_bytes=None to embed it anyway"
        )
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
