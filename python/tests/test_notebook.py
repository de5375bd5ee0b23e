"""open_in_notebook in headless Chromium: the button's page opens a stand-in
for the Perfetto UI (served on 127.0.0.1) that answers PING with PONG as the
UI does, after a few; the trace's bytes and title come only after the
PONG, whole."""

from __future__ import annotations

import http.server
import json
import shutil
import subprocess
import threading

import pytest

import nsys2perfetto
from conftest import need

# The stand-in UI: it answers the third PING with PONG (so that a page that
# posts the trace before the handshake is caught) and reports what it got.
STAND_IN_UI = """<!doctype html><meta charset="utf-8"><title>ui</title>
<script>
let pings = 0;
let ponged = false;
window.addEventListener("message", async (event) => {
  if (event.data === "PING") {
    pings += 1;
    if (pings >= 3) { ponged = true; event.source.postMessage("PONG", event.origin); }
    return;
  }
  const trace = event.data && event.data.perfetto;
  const report = {
    pings: pings, ponged: ponged, origin: event.origin,
    keys: trace ? Object.keys(trace).sort() : null,
    title: trace ? trace.title : null,
    is_array_buffer: trace ? trace.buffer instanceof ArrayBuffer : false,
  };
  await fetch("/report?" + encodeURIComponent(JSON.stringify(report)), {
    method: "POST", body: trace ? trace.buffer : "",
  });
});
</script>
"""

# The notebook's output cell in a page, its button pressed as a user would.
NOTEBOOK = """<!doctype html><meta charset="utf-8"><title>notebook</title>
{cell}
<script>document.querySelector("button").click();</script>
"""


class Received:
    def __init__(self) -> None:
        self.reports: list[tuple[dict, bytes]] = []
        self.event = threading.Event()


def _server(pages: dict[str, str], received: Received) -> http.server.ThreadingHTTPServer:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            page = pages.get(self.path)
            if page is None:
                self.send_error(404)
                return
            body = page.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            from urllib.parse import unquote

            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            report = json.loads(unquote(self.path.partition("?")[2]))
            received.reports.append((report, body))
            received.event.set()
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _chromium() -> str | None:
    return next((p for p in map(shutil.which, ["chromium", "chromium-browser"]) if p), None)


def test_the_button_hands_the_trace_to_the_ui_after_its_handshake(sqlite, tmp_path):
    chromium = _chromium()
    need(chromium is not None, "Chromium on PATH (apt-get install chromium)")
    trace = nsys2perfetto.convert(sqlite("h100_torch_graph_node"), tmp_path / "run.perfetto-trace")
    pages: dict[str, str] = {"/ui.html": STAND_IN_UI}
    received = Received()
    server = _server(pages, received)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        button = nsys2perfetto.open_in_notebook(
            trace, title="step </script> 1", ui=f"{base}/ui.html"
        )
        pages["/notebook.html"] = NOTEBOOK.format(cell=button._repr_html_())
        browser = subprocess.Popen(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-popup-blocking",
                f"--user-data-dir={tmp_path / 'chromium'}",
                f"{base}/notebook.html",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert received.event.wait(120), "the stand-in UI received nothing in two minutes"
        finally:
            browser.terminate()
            browser.wait(30)
    finally:
        server.shutdown()
    (report, body), *more = received.reports
    assert more == []
    assert report["ponged"] and report["pings"] >= 3, report
    assert report["origin"] == base
    assert report["keys"] == ["buffer", "title"] and report["is_array_buffer"], report
    assert report["title"] == "step </script> 1"
    assert body == trace.read_bytes()


def test_the_button_is_html_for_a_notebook(tmp_path):
    import gzip

    trace = tmp_path / "x.perfetto-trace"
    trace.write_bytes(gzip.compress(b"\x0a\x02" + bytes(range(256)) * 3))
    button = nsys2perfetto.open_in_notebook(trace)
    html = button._repr_html_()
    assert html.count("<script>") == 1 and "https://ui.perfetto.dev" in html
    assert "x.perfetto-trace" in html and button.size == trace.stat().st_size
    with pytest.raises(FileNotFoundError):
        nsys2perfetto.open_in_notebook(tmp_path / "missing.perfetto-trace")


def test_the_button_refuses_what_is_not_a_trace(sqlite, tmp_path):
    """An SQLite export (or a report, or anything else) named like a trace is
    refused, saying what it is, rather than handed to the UI as one."""
    export = tmp_path / "run.perfetto-trace"
    shutil.copyfile(sqlite("nsys-ai_mock"), export)
    with pytest.raises(ValueError, match="an SQLite export, not a trace"):
        nsys2perfetto.open_in_notebook(export)
    text = tmp_path / "notes.json"
    text.write_text("not json at all")
    with pytest.raises(ValueError, match="neither a Perfetto trace nor a JSON trace"):
        nsys2perfetto.open_in_notebook(text)
    trace = nsys2perfetto.convert(sqlite("nsys-ai_mock"), tmp_path / "t.perfetto-trace")
    assert nsys2perfetto.open_in_notebook(trace).size == trace.stat().st_size
    raw = nsys2perfetto.convert(sqlite("nsys-ai_mock"), tmp_path / "raw.perfetto-trace", no_gzip=True)
    assert nsys2perfetto.open_in_notebook(raw).size == raw.stat().st_size
    chrome = nsys2perfetto.convert(sqlite("nsys-ai_mock"), tmp_path / "t.json", format="json")
    assert nsys2perfetto.open_in_notebook(chrome).size == chrome.stat().st_size


def test_a_trace_too_large_to_embed_is_refused_saying_how_to_serve_it(sqlite, tmp_path):
    """Over the limit the button is refused with the size and the way out
    (``nsys2perfetto open``), not embedded in silence."""
    trace = nsys2perfetto.convert(sqlite("h100_torch_graph_node"), tmp_path / "t.perfetto-trace")
    size = trace.stat().st_size
    with pytest.raises(ValueError, match=r"nsys2perfetto open .*max_bytes=None"):
        nsys2perfetto.open_in_notebook(trace, max_bytes=size - 1)
    assert nsys2perfetto.open_in_notebook(trace, max_bytes=size).size == size
    assert nsys2perfetto.open_in_notebook(trace, max_bytes=None).size == size
