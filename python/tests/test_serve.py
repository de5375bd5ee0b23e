"""`nsys2perfetto serve`, the hub, driven by a real browser: Debian's
Chromium under Playwright, as a user would use the page. The home page
lists the fixtures with their headlines; a report dropped on the page (a
real drop event carrying a file) appears, and its trace is `convert`'s;
"Open in Perfetto" hands the exact bytes of the trace to a stand-in of the
Perfetto UI that answers PING with PONG as ui.perfetto.dev does; no page
logs an error to the console.

Skipped (failed in CI) without Playwright or /usr/bin/chromium. With
NSYS2PERFETTO_SCREENS set to a directory, screenshots of the pages go there.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import os
import shutil
import socket
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import need
from nsys2perfetto._cli import program

CHROMIUM = Path("/usr/bin/chromium")

# The stand-in of the Perfetto UI: answers PING with PONG, as the UI does,
# and keeps what it was posted: its length and SHA-256.
STAND_IN = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>stand-in</title></head>
<body><p id="state">waiting</p><script>
window.addEventListener("message", async (event) => {
  if (event.data === "PING") { event.source.postMessage("PONG", event.origin); return; }
  const posted = event.data && event.data.perfetto;
  if (!posted) { return; }
  const digest = await crypto.subtle.digest("SHA-256", posted.buffer);
  const hex = Array.from(new Uint8Array(digest)).map((b) => b.toString(16).padStart(2, "0")).join("");
  window.received = { length: posted.buffer.byteLength, sha256: hex, title: posted.title };
  document.getElementById("state").textContent = "received " + posted.buffer.byteLength;
});
</script></body></html>"""


def sync_playwright():
    try:
        from playwright.sync_api import sync_playwright as start
    except ImportError:
        need(False, "Playwright for Python (pip install playwright)")
    need(CHROMIUM.exists(), f"Chromium at {CHROMIUM} (apt-get install chromium)")
    return start


# A UI that never answers PING (unreachable, or not the UI).
SILENT = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>silent</title></head>
<body><p>never answers</p></body></html>"""


class StandIn(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (the standard library's name)
        page = SILENT if self.path.startswith("/silent") else STAND_IN
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ui.html"
    server.shutdown()


@pytest.fixture
def runs(tmp_path, sqlite):
    """A directory of two runs, the second an hour newer."""
    directory = tmp_path / "runs"
    directory.mkdir()
    for i, name in enumerate(["nsys-ai_h100_2gpu_1s", "dlprof_nsys_profile"]):
        copy = directory / f"{name}.sqlite"
        shutil.copy(sqlite(name), copy)
        os.utime(copy, (1_700_000_000 + 3600 * i, 1_700_000_000 + 3600 * i))
    return directory


def start_hub(runs: Path, cache: Path, ui: str, *extra: str):
    """`serve` on the runs with `extra` flags, its UI `ui`: (URL, process).
    The URL carries the hub's token (`?token=`), which the browser keeps as
    a cookie of the hub's."""
    process = subprocess.Popen(
        [program(), "serve", str(runs), "--port", "0", "--cache", str(cache), "--ui", ui, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and "/?token=" in url, url
    threading.Thread(target=process.stdout.read, daemon=True).start()
    return url, process


@pytest.fixture
def hub(runs, tmp_path, stand_in):
    """`serve` on the runs, its UI the stand-in: its URL."""
    url, process = start_hub(runs, tmp_path / "cache", stand_in)
    yield url
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def browser():
    start = sync_playwright()
    with start() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    """A page whose console errors and uncaught exceptions are collected,
    and checked to be none at the end."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    errors: list[str] = []

    def watch(p):
        p.on("console", lambda m: errors.append(f"{p.url}: {m.text}") if m.type == "error" else None)
        p.on("pageerror", lambda e: errors.append(f"{p.url}: {e}"))

    context.on("page", watch)
    page = context.new_page()
    yield page
    context.close()
    assert errors == [], errors


def screenshot(page, name: str, full_page: bool = True) -> None:
    """The page (whole, or what the window shows: a page of hundreds of
    rows is too long to look at whole)."""
    directory = os.environ.get("NSYS2PERFETTO_SCREENS")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(directory) / f"{name}.png"), full_page=full_page)


def posted(page, hub: str, path: str):
    """A POST of the hub's page to `path` (its Origin and CSRF token), with
    the browser's cookies: what starts a job."""
    base = hub.split("?")[0]
    csrf = page.request.get(base + "api/config").json()["csrf"]
    return page.request.post(
        base + path, headers={"Origin": base.rstrip("/"), "X-CSRF-Token": csrf}
    )


def converted(report: Path, tmp_path: Path) -> bytes:
    """The trace `convert` writes of `report`."""
    out = tmp_path / f"{report.stem}.convert.perfetto-trace"
    subprocess.run([program(), "convert", str(report), "-o", str(out), "-q"], check=True)
    return out.read_bytes()


def gpus_of(export: Path) -> int:
    """How many GPUs did work, by SQL over the export."""
    with sqlite3.connect(f"file:{export}?mode=ro", uri=True) as db:
        return db.execute(
            "SELECT count(DISTINCT deviceId) FROM (SELECT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL "
            "UNION ALL SELECT deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY)"
        ).fetchone()[0]


def row_of(page, name: str):
    return page.locator("section.reports tr", has=page.locator(f"a:text-is('{name}')"))


def status_under(page, row):
    """The status row the page shows under `row`: the row right after it."""
    return row.locator("xpath=following-sibling::tr[1][contains(@class, 'hub-status-row')]")


def assert_right_under(row, said) -> None:
    """`said` is shown right under `row`: the first thing below it, not
    above the list."""
    above = row.bounding_box()
    box = said.bounding_box()
    bottom = above["y"] + above["height"]
    assert bottom - 1 <= box["y"] <= bottom + 30, (above, box)


def wait_for_headline(page, name: str, timeout: float = 120_000):
    """The row of `name` once its headline is shown (the page refreshes
    its list by itself)."""
    row = row_of(page, name)
    row.wait_for(timeout=timeout)
    page.wait_for_function(
        """(name) => { const link = [...document.querySelectorAll('section.reports a')]
             .find((a) => a.textContent === name);
           return link && !link.closest('tr').textContent.includes('…'); }""",
        arg=name, timeout=timeout,
    )
    return row


def test_home_lists_the_runs_newest_first_with_their_headlines(hub, runs, page):
    page.goto(hub)
    for export in sorted(runs.iterdir()):
        row = wait_for_headline(page, export.name)
        cells = row.locator("td").all_text_contents()
        assert cells[4] == str(gpus_of(export)), cells
        assert cells[5].endswith("%"), cells
    names = page.locator("section.reports tr td:first-child a").all_text_contents()
    assert names == ["dlprof_nsys_profile.sqlite", "nsys-ai_h100_2gpu_1s.sqlite"]
    screenshot(page, "home")
    # The report page, the stats and the findings: the renderer's pages.
    page.locator("a:text-is('dlprof_nsys_profile.sqlite')").click()
    page.wait_for_selector("h1")
    assert "dlprof_nsys_profile.sqlite" in page.locator("h1").first.text_content()
    assert page.locator("text=Top kernels").count() >= 1
    screenshot(page, "report")
    page.go_back()
    row_of(page, "dlprof_nsys_profile.sqlite").locator("a:text-is('stats')").click()
    page.wait_for_selector("text=cuda_gpu_kern_sum")
    screenshot(page, "stats")


def test_two_chosen_runs_are_compared_with_compares_numbers(hub, runs, page):
    page.goto(hub)
    for export in sorted(runs.iterdir()):
        wait_for_headline(page, export.name)
    button = page.locator("#hub-compare")
    assert button.is_disabled()
    first, second = "nsys-ai_h100_2gpu_1s.sqlite", "dlprof_nsys_profile.sqlite"
    row_of(page, first).locator("input.choose").check()
    # The list is fetched again meanwhile: the choice stays.
    page.wait_for_timeout(2500)
    row_of(page, second).locator("input.choose").check()
    assert button.is_enabled()
    button.click()
    page.wait_for_selector("h1:has-text('vs')")
    assert page.locator("h1").text_content() == f"{first} vs {second}"
    shown = [
        [cell.strip() for cell in row.locator("td").all_text_contents()]
        for row in page.locator("tr").all()
    ]
    out = subprocess.run(
        [program(), "compare", str(runs / first), str(runs / second), "--summary", "--format", "csv"],
        check=True, capture_output=True, text=True,
    ).stdout
    import csv
    import io

    for row in list(csv.reader(io.StringIO(out)))[1:]:
        assert row in shown, row
    screenshot(page, "compare")


def test_a_dropped_report_is_uploaded_listed_and_converted(hub, runs, page, sqlite, tmp_path):
    page.goto(hub)
    page.wait_for_selector("section.upload input[type=file]")
    source = sqlite("nsys-ai_mock")
    data = base64.b64encode(source.read_bytes()).decode()
    # A real drop event, carrying the file.
    transfer = page.evaluate_handle(
        """(data) => { const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
             const transfer = new DataTransfer();
             transfer.items.add(new File([bytes], 'dropped run.sqlite'));
             return transfer; }""",
        data,
    )
    page.dispatch_event("section.upload", "drop", {"dataTransfer": transfer})
    page.wait_for_selector("section.upload li:has-text('Added dropped run.sqlite.')")
    saved = runs / "dropped run.sqlite"
    assert saved.read_bytes() == source.read_bytes()
    wait_for_headline(page, "dropped run.sqlite")
    served = posted(page, hub, "trace/0/dropped%20run.sqlite")
    assert served.ok, served.text()
    assert served.body() == converted(saved, tmp_path)
    # The same name again: a name of its own, the first untouched.
    page.dispatch_event("section.upload", "drop", {"dataTransfer": transfer})
    page.wait_for_selector("section.upload li:has-text('Added dropped run.sqlite as dropped run-2.sqlite.')")
    assert (runs / "dropped run-2.sqlite").read_bytes() == source.read_bytes()
    wait_for_headline(page, "dropped run-2.sqlite")


def test_open_in_perfetto_hands_the_ui_the_exact_trace(hub, runs, page, tmp_path):
    page.goto(hub)
    name = "dlprof_nsys_profile.sqlite"
    row = wait_for_headline(page, name)
    with page.expect_popup() as opened:
        row.locator("a:text-is('Perfetto')").click()
    ui = opened.value
    ui.wait_for_function("window.received !== undefined", timeout=120_000)
    received = ui.evaluate("window.received")
    trace = converted(runs / name, tmp_path)
    assert received["length"] == len(trace)
    assert received["sha256"] == hashlib.sha256(trace).hexdigest()
    assert received["title"] == name
    # Said under the run's row.
    said = status_under(page, row)
    said.locator(".hub-status:has-text('Opened')").wait_for()


def test_a_ui_that_never_answers_ping_is_said_to_be_silent(runs, page, tmp_path, stand_in):
    silent = stand_in.replace("/ui.html", "/silent.html")
    url, process = start_hub(runs, tmp_path / "cache", silent)
    try:
        page.goto(url)
        row = wait_for_headline(page, "dlprof_nsys_profile.sqlite")
        with page.expect_popup():
            row.locator("a:text-is('Perfetto')").click()
        under = status_under(page, row)
        under.locator(".hub-status:has-text('Handing')").wait_for(timeout=120_000)
        said = under.locator(".hub-status:has-text('has not answered')")
        said.wait_for(timeout=60_000)
        text = said.text_content()
        assert "pop-ups allowed" in text and silent in text, text
        # Where the user clicked: right under the run's row, not above the list.
        assert_right_under(row, said)
        screenshot(page, "ui-silent", full_page=False)
        page.goto("about:blank")
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_conversion_shows_its_progress_and_is_cancelled_from_the_page(
    hub, runs, page, sqlite, tmp_path
):
    # The largest fixture, its CUDA calls, kernels and copies repeated 16 times: its
    # conversion lasts long enough to be seen and cancelled on a busy machine too (as it
    # was, the conversion of 0.5 s sometimes ended before the click's Cancel came).
    # Grown beside the runs and then moved in whole: the hub lists what it finds, and a
    # file that changes after it was listed is refused as changed.
    growing = tmp_path / "cori_run1_report1.sqlite"
    shutil.copyfile(sqlite("cori_run1_report1"), growing)
    with sqlite3.connect(growing) as db:
        for _ in range(4):
            for table in ("RUNTIME", "KERNEL", "MEMCPY"):
                db.execute(
                    f"INSERT INTO CUPTI_ACTIVITY_KIND_{table} SELECT * FROM CUPTI_ACTIVITY_KIND_{table}"
                )
    db.close()
    big = runs / growing.name
    os.replace(growing, big)
    page.goto(hub)
    row = wait_for_headline(page, big.name)
    with page.expect_popup() as opened:
        row.locator("a:text-is('Perfetto')").click()
    popup = opened.value
    # Back to the hub's tab, as a user would be to press Cancel: in a tab behind the UI's,
    # Chromium may hold back the frames by which a click waits for the button to be still,
    # and by which a wait polls by default (so it polls by the clock).
    page.bring_to_front()
    # The progress, its Cancel and the status, where they are: read at once,
    # in the page, while the conversion runs (Cancel is clicked right after).
    shown = page.wait_for_function(
        """() => { const bar = document.querySelector('tr.hub-status-row progress.hub-progress');
             if (!bar || !(bar.value > 0)) { return null; }
             const under = bar.closest('tr');
             const box = (e) => { const r = e.getBoundingClientRect(); return { y: r.y, height: r.height }; };
             return { row: box(under.previousElementSibling), bar: box(bar),
                      cancel: box(under.querySelector('button.hub-cancel')),
                      status: box(under.querySelector('.hub-status')),
                      said: under.querySelector('.hub-status').textContent,
                      name: under.previousElementSibling.cells[0].textContent.trim() }; }""",
        timeout=120_000,
        polling=100,
    ).json_value()
    under = status_under(page, row)
    under.locator("button.hub-cancel").click()
    assert shown["name"] == big.name, shown
    assert "Converting cori_run1_report1.sqlite" in shown["said"], shown
    bottom = shown["row"]["y"] + shown["row"]["height"]
    for what in ("bar", "cancel", "status"):
        assert bottom - 1 <= shown[what]["y"] <= bottom + 30, (what, shown)
    said = under.locator(".hub-status:has-text('Cancelled')")
    said.wait_for()
    assert_right_under(row, said)
    # The tab opened for the UI is closed again.
    for _ in range(100):
        if popup.is_closed():
            break
        page.wait_for_timeout(100)
    assert popup.is_closed()
    base = hub.split("?")[0]
    # No one else waited: the job ends cancelled, and leaves nothing.
    for _ in range(600):
        jobs = page.request.get(base + "api/jobs").json()
        if jobs and jobs[-1]["state"] != "running":
            break
        page.wait_for_timeout(100)
    assert jobs[-1]["state"] == "cancelled", jobs
    assert jobs[-1]["what"] == "convert cori_run1_report1.sqlite", jobs
    left = [p.name for p in (tmp_path / "cache").iterdir() if ".trace." in p.name or p.name.startswith(".")]
    assert left == [], left


def test_chosen_runs_make_one_trace_a_merge_and_their_steps_as_the_cli_does(
    hub, runs, page, tmp_path
):
    page.goto(hub)
    for export in sorted(runs.iterdir()):
        wait_for_headline(page, export.name)
    first, second = "nsys-ai_h100_2gpu_1s.sqlite", "dlprof_nsys_profile.sqlite"

    def choose():
        for name in (first, second):
            row_of(page, name).locator("input.choose").check()

    choose()
    # Both runs in one trace (`compare --trace`) and a merge (`merge`):
    # each made as a job, then downloaded: the CLI's bytes.
    for button, command, flag in [
        ("#hub-both", "compare", "--trace"),
        ("#hub-merge", "merge", "-o"),
    ]:
        with page.expect_download(timeout=120_000) as downloading:
            page.locator(button).click()
        delivered = Path(downloading.value.path()).read_bytes()
        expected = tmp_path / f"{command}.perfetto-trace"
        subprocess.run(
            [program(), command, str(runs / first), str(runs / second), flag, str(expected), "-q"],
            check=True,
        )
        assert delivered == expected.read_bytes(), button
    # Steps across ranks: the page `report --step` writes (the runs named
    # as the list names them) under the hub's header, its numbers those of
    # the CLI's page.
    pattern = "aten::mul*"
    page.fill("#hub-step-pattern", pattern)
    page.locator("#hub-steps").click()
    page.wait_for_url("**/made/steps?**", timeout=120_000)
    page.wait_for_selector("section.job-steps")
    cli_page = tmp_path / "steps.html"
    subprocess.run(
        [program(), "report", "--step", pattern, first, second, "-o", str(cli_page), "-q"],
        check=True, cwd=runs,
    )
    # The CLI's page under the hub's header: the CLI's body whole at the end
    # of the served one, after the way home.
    served = page.request.get(page.url).body().decode()
    cli = cli_page.read_text()
    served_body = served.split("<body>", 1)[1].split("</body>", 1)[0]
    cli_body = cli.split("<body>", 1)[1].split("</body>", 1)[0]
    assert served_body.endswith(cli_body)
    assert '<a href="/">' in served_body[: len(served_body) - len(cli_body)]
    shown = page.locator("section.job-steps").inner_text()
    assert "308 steps" in shown, shown
    other = page.context.new_page()
    other.set_content(cli_page.read_text())
    assert other.locator("section.job-steps").inner_text() == shown
    other.close()
    screenshot(page, "steps", full_page=False)
    # A bad pattern: the CLI's one-line message on the page; the server
    # goes on serving.
    page.goto(hub)
    wait_for_headline(page, first)
    choose()
    page.fill("#hub-step-pattern", "")
    page.locator("#hub-steps").click()
    said = page.locator(".hub-status:has-text('error:')")
    said.wait_for(timeout=120_000)
    # Beside the buttons clicked: the first thing under them.
    bar = page.locator("div.hub-choose").bounding_box()
    box = said.bounding_box()
    assert bar["y"] + bar["height"] - 1 <= box["y"] <= bar["y"] + bar["height"] + 30, (bar, box)
    cli_said = subprocess.run(
        [program(), "report", "--step", "", str(runs / first)], capture_output=True, text=True
    ).stderr.strip()
    message = said.text_content().removeprefix("error: ")
    assert message and cli_said.endswith(message), (message, cli_said)
    screenshot(page, "steps-refused")
    assert page.request.get(hub).ok


def test_a_trace_too_big_for_a_tab_is_offered_to_trace_processor(
    runs, page, tmp_path, stand_in, fixtures
):
    tp = fixtures.parent / "tools" / "trace_processor_shell"
    need(tp.exists(), f"trace_processor at {tp}")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    name = "dlprof_nsys_profile.sqlite"
    # The tab's limit lowered (the hidden --tab-limit): the small run is
    # "too big"; trace_processor at hand.
    url, process = start_hub(
        runs, tmp_path / "cache", stand_in,
        "--tab-limit", "1K", "--tp", str(tp), "--tp-port", str(port),
    )
    try:
        page.goto(url)
        wait_for_headline(page, name).locator("a:text-is('Perfetto')").click()
        page.wait_for_selector(f".hub-status:has-text('{name} needs about')", timeout=120_000)
        assert "more than a browser tab has (1.0 KiB)" in page.locator(".hub-status").text_content()
        with page.expect_popup() as opened:
            page.locator(".hub-tp").click()
        ui = opened.value
        ui.wait_for_url(f"**/ui.html#!/?rpc_port={port}")
        page.wait_for_selector(".hub-status:has-text('Use loaded trace')")
        # trace_processor serves the trace, as `open --tp` leaves it (once
        # it listens).
        for _ in range(600):
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            page.wait_for_timeout(100)
        status = page.request.get(f"http://127.0.0.1:{port}/status")
        assert status.ok and b".trace.perfetto-trace" in status.body()
        screenshot(page, "too-big")
        # Left before the server stops: its list is fetched no more.
        page.goto("about:blank")
    finally:
        process.terminate()
        process.wait(timeout=30)
    # Stopped with the server.
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    # None at hand: the page says why there is no offer.
    url, process = start_hub(
        runs, tmp_path / "cache2", stand_in,
        "--tab-limit", "1K", "--tp", "/nonexistent/trace_processor_shell",
    )
    try:
        page.goto(url)
        wait_for_headline(page, name).locator("a:text-is('Perfetto')").click()
        said = page.locator(".hub-status:has-text('is not offered')")
        said.wait_for(timeout=120_000)
        assert "--tp /nonexistent/trace_processor_shell: no such file" in said.text_content()
        assert page.locator(".hub-tp").count() == 0
        screenshot(page, "too-big-no-tp")
        page.goto("about:blank")
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_a_download_not_made_yet_is_asked_for_by_its_button(hub, runs, page, tmp_path):
    """A GET of a download makes nothing: it shows a page whose button (a
    form's POST, with the hub's CSRF token) converts the run and sends the
    trace, `convert`'s bytes."""
    name = "dlprof_nsys_profile.sqlite"
    page.goto(hub)
    row = wait_for_headline(page, name)
    row.locator("details.hub-menu summary").click()
    row.locator("a:text-is('download')").click()
    button = page.locator("form[method=post] button")
    button.wait_for()
    assert page.locator("h1").text_content() == f"Download {name}"
    screenshot(page, "download-asked", full_page=False)
    base = hub.split("?")[0]
    assert page.request.get(base + "api/jobs").json() == []
    with page.expect_download(timeout=120_000) as downloading:
        button.click()
    assert downloading.value.suggested_filename == "dlprof_nsys_profile.perfetto-trace"
    delivered = Path(downloading.value.path()).read_bytes()
    assert delivered == converted(runs / name, tmp_path)


def test_two_hubs_in_one_browser_keep_their_own_tokens(runs, page, tmp_path, stand_in):
    """Two hubs on one host (whose cookies a browser shares, whatever the
    port): opening the second leaves the first logged in, and neither is
    sent the other's token as its own."""
    tokens = ["hub-a-token-0123456789abcdef", "hub-b-token-0123456789abcdef"]
    hubs = [
        start_hub(runs, tmp_path / f"cache-{i}", stand_in, "--token", token)
        for i, token in enumerate(tokens)
    ]
    try:
        for (url, _), token in zip(hubs, tokens):
            assert url.endswith("?token=" + token), url
            assert page.goto(url).ok
            page.wait_for_selector("h1:text-is('Runs')")
        # Back to each without its token: its own cookie still opens it.
        for url, _ in hubs:
            base = url.split("?")[0]
            answer = page.goto(base)
            assert answer.status == 200, (base, answer.status, answer.text())
            page.wait_for_selector("h1:text-is('Runs')")
        names = sorted(c["name"] for c in page.context.cookies() if "token" in c["name"])
        ports = sorted(url.split("?")[0].rstrip("/").rsplit(":", 1)[1] for url, _ in hubs)
        assert names == sorted(f"nsys2perfetto_token_{p}" for p in ports), names
        page.goto("about:blank")
    finally:
        for _, process in hubs:
            process.terminate()
            process.wait(timeout=30)


def test_another_page_starts_no_job_on_the_hub(hub, runs, browser, tmp_path, stand_in):
    """A page of another origin of the same host (its requests carry the
    hub's cookie: same site) points `<img>`s and no-cors fetches, GETs and
    POSTs, at every URL of the hub that makes something: no job starts,
    nothing is made."""
    context = browser.new_context()
    page = context.new_page()
    try:
        assert page.goto(hub).ok
        wait_for_headline(page, "dlprof_nsys_profile.sqlite")
        base = hub.split("?")[0]
        a, b = "0/dlprof_nsys_profile.sqlite", "0/nsys-ai_h100_2gpu_1s.sqlite"
        urls = [
            base + path
            for path in [
                f"trace/{a}",
                f"trace/{a}?format=json",
                f"api/convert/{a}",
                f"api/make/merge?run={a}&run={b}",
                f"api/make/compare?run={a}&run={b}",
                f"api/make/steps?run={a}&step=*",
                f"made/merge?run={a}&run={b}",
                f"made/compare?run={a}&run={b}",
                f"made/steps?run={a}&step=*",
                f"api/fit/{a}",
                f"api/tp/{a}",
            ]
        ]
        page.goto(stand_in)
        assert page.evaluate("location.origin") != base.rstrip("/")
        page.evaluate(
            """async (urls) => {
                 for (const url of urls) {
                   const img = document.createElement("img");
                   img.src = url;
                   document.body.append(img);
                 }
                 const asks = [];
                 for (const url of urls) {
                   for (let i = 0; i < 3; i++) {
                     asks.push(fetch(url, { mode: "no-cors", credentials: "include" }).catch(() => null));
                     asks.push(fetch(url, { mode: "no-cors", method: "POST", credentials: "include" })
                       .catch(() => null));
                   }
                 }
                 await Promise.all(asks);
               }""",
            urls,
        )
        page.wait_for_timeout(2000)
        # As the hub's own page sees it: no job, nothing made.
        page.goto(hub)
        jobs = page.request.get(base + "api/jobs").json()
        assert jobs == [], jobs
        made = [
            p.name for p in (tmp_path / "cache").iterdir()
            if ".trace." in p.name or p.name.endswith((".perfetto-trace", ".steps.html"))
            or p.name.startswith(".")
        ]
        assert made == [], made
    finally:
        context.close()
