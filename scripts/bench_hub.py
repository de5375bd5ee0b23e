#!/usr/bin/env python3
"""The hub's speed and memory (BENCHMARKS.md, "Hub" and "Hub (issue 38)").

    scripts/bench_hub.py PROGRAM INPUT [RUNS]
        the click-to-trace time against `convert` alone (below)
    scripts/bench_hub.py paint PROGRAM INPUT [RUNS]
        the stats page of INPUT in Chromium: its first contentful paint
    scripts/bench_hub.py list PROGRAM FIXTURES N [RUNS]
        a home page of N runs (copies of FIXTURES' smallest exports, in /tmp)
    scripts/bench_hub.py clients PROGRAM INPUT [CLIENTS] [ROUNDS]
        the hub's memory while CLIENTS clients ask for pages at once

The click-to-trace time: each run, `convert INPUT -o OUT` (wall time), then `serve` on a directory
holding INPUT with an empty cache: once its headline is computed (as a user
sees the page before clicking), the time from asking for the trace (what
"Open in Perfetto" and "download" fetch: `/trace/RUN`, which converts once
and sends it) to its last byte received over HTTP on 127.0.0.1; the bytes
are checked to be `convert`'s. Prints each run and the medians, and the
server's RSS (VmRSS idle with the headline computed, VmHWM after sending).
"""

import itertools
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"


def rss(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def click_to_trace(program: str, source: Path, runs: int) -> None:
    converts, hubs = [], []
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        directory = work / "runs"
        directory.mkdir()
        shutil.copy(source, directory / source.name)
        for run in range(runs):
            out = work / "convert.perfetto-trace"
            started = time.monotonic()
            subprocess.run([program, "convert", str(source), "-o", str(out), "-q"], check=True)
            converts.append(time.monotonic() - started)
            expected = out.read_bytes()
            out.unlink()

            cache = work / f"cache{run}"
            server = subprocess.Popen(
                [program, "serve", str(directory), "--port", "0", "--cache", str(cache), "-q"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            )
            try:
                url = server.stdout.readline().strip()
                while True:
                    listed = json.load(urllib.request.urlopen(url + "api/reports"))
                    if all(r["headline"] is not None for r in listed):
                        break
                    time.sleep(0.05)
                idle = rss(server.pid)
                started = time.monotonic()
                with urllib.request.urlopen(url + "trace/0/" + source.name) as response:
                    delivered = response.read()
                hubs.append(time.monotonic() - started)
                peak = rss(server.pid)
            finally:
                server.terminate()
                server.wait()
            assert delivered == expected, "the hub's trace differs from convert's"
            print(
                f"run {run + 1}: convert {converts[-1]:.2f} s, hub click-to-trace "
                f"{hubs[-1]:.2f} s ({len(delivered)} bytes); hub RSS idle "
                f"{idle['VmRSS'] / 1024:.1f} MiB, peak {peak['VmHWM'] / 1024:.1f} MiB",
                flush=True,
            )
    print(
        f"median of {runs}: convert {statistics.median(converts):.2f} s "
        f"({min(converts):.2f}-{max(converts):.2f}), hub {statistics.median(hubs):.2f} s "
        f"({min(hubs):.2f}-{max(hubs):.2f}), ratio "
        f"{statistics.median(hubs) / statistics.median(converts):.3f}"
    )


class Hub:
    """`serve` on `directory` with an empty cache, until closed: its URL
    (with its token) and process."""

    def __init__(self, program: str, directory: Path, cache: Path):
        self.process = subprocess.Popen(
            [program, "serve", str(directory), "--port", "0", "--cache", str(cache), "-q"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )
        self.url = self.process.stdout.readline().strip()
        self.base, _, self.query = self.url.partition("?")

    def get(self, path: str) -> bytes:
        joint = "&" if "?" in path else "?"
        with urllib.request.urlopen(f"{self.base}{path}{joint}{self.query}") as response:
            return response.read()

    def reports(self) -> list:
        return json.loads(self.get("api/reports"))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait()


def chromium():
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    return playwright, playwright.chromium.launch(executable_path=CHROMIUM, headless=True)


# What a page's Performance API says of its load, in ms from navigation:
# first contentful paint, the DOM read, the load event.
TIMINGS = """() => {
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  const nav = performance.getEntriesByType("navigation")[0];
  return { fcp: paint ? paint.startTime : null, dcl: nav.domContentLoadedEventEnd,
           load: nav.loadEventEnd, bytes: nav.transferSize };
}"""


# When the stats page's kernels are on the screen: the first frame after
# their table has a row (a MutationObserver set before the page loads).
KERNELS_SHOWN = """
window.kernelsShown = null;
new MutationObserver((_, observer) => {
  const code = [...document.querySelectorAll("h2 code")]
    .find((c) => c.textContent === "cuda_gpu_kern_sum");
  let next = code && code.closest("h2").nextElementSibling;
  while (next && next.tagName === "P") { next = next.nextElementSibling; }
  if (next && next.querySelector("td")) {
    observer.disconnect();
    requestAnimationFrame(() => requestAnimationFrame(() => {
      window.kernelsShown = performance.now();
    }));
  }
}).observe(document, { childList: true, subtree: true });
"""


def load_page(browser, hub: Hub, path: str) -> dict:
    """`path` loaded in a fresh tab (the hub's cookie set first): its
    timings, and how many table rows its DOM holds."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(hub.url)
    page.add_init_script(KERNELS_SHOWN)
    page.goto(f"{hub.base}{path}", wait_until="load")
    page.wait_for_timeout(300)
    timings = page.evaluate(TIMINGS)
    timings["kernels"] = page.evaluate("window.kernelsShown")
    timings["rows"] = page.evaluate("document.querySelectorAll('tr').length")
    context.close()
    return timings


def summary(name: str, values: list) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return f"{name} -"
    return (
        f"{name} {statistics.median(values):.0f} ms "
        f"({min(values):.0f}-{max(values):.0f})"
    )


def paint(program: str, source: Path, runs: int) -> None:
    """The stats page of `source` in Chromium, `runs` times: its first
    contentful paint, DOMContentLoaded and load, medians."""
    playwright, browser = chromium()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        directory = work / "runs"
        directory.mkdir()
        shutil.copy(source, directory / source.name)
        hub = Hub(program, directory, work / "cache")
        try:
            path = f"stats/0/{source.name}"
            hub.get(path)  # once, to warm the file system's cache
            started = time.monotonic()
            page_bytes = len(hub.get(path))
            served = time.monotonic() - started
            loads = [load_page(browser, hub, path) for _ in range(runs)]
        finally:
            hub.close()
            browser.close()
            playwright.stop()
    for i, load in enumerate(loads):
        print(f"run {i + 1}: {load}")
    print(
        f"stats page of {source.name}: {page_bytes} bytes, made in {served * 1000:.0f} ms, "
        f"{loads[0]['rows']} table rows in the DOM; median of {runs}: "
        + ", ".join(summary(k, [l[k] for l in loads]) for k in ("fcp", "kernels", "dcl", "load"))
    )


def smallest_exports(fixtures: Path, count: int = 4) -> list:
    exports = sorted((fixtures / "sqlite").glob("*.sqlite"), key=lambda p: p.stat().st_size)
    return exports[:count]


def listing(program: str, fixtures: Path, n: int, runs: int) -> None:
    """A hub of `n` runs: the home page's size, time to make and paint
    (with its headlines pending, then computed), the time to compute every
    headline, and the hub's memory."""
    playwright, browser = chromium()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        directory = work / "runs"
        directory.mkdir()
        for i, export in zip(range(n), itertools.cycle(smallest_exports(fixtures))):
            shutil.copy(export, directory / f"run{i:04}_{export.name}")
        hub = Hub(program, directory, work / "cache")
        try:
            started = time.monotonic()
            home = hub.get("")
            made_pending = time.monotonic() - started
            pending = [load_page(browser, hub, "") for _ in range(runs)]
            started = time.monotonic()
            while any(r["headline"] is None for r in hub.reports()):
                time.sleep(0.2)
            headlines = time.monotonic() - started
            idle = rss(hub.process.pid)
            started = time.monotonic()
            home_done = hub.get("")
            made_done = time.monotonic() - started
            listed = json.dumps(hub.reports())
            done = [load_page(browser, hub, "") for _ in range(runs)]
            peak = rss(hub.process.pid)
        finally:
            hub.close()
            browser.close()
            playwright.stop()
    print(f"{n} runs: home page {len(home)} bytes made in {made_pending * 1000:.0f} ms, headlines pending: "
          + ", ".join(summary(k, [l[k] for l in pending]) for k in ("fcp", "dcl", "load")))
    print(f"every headline computed {headlines:.1f} s after the first page; hub RSS then "
          f"{idle['VmRSS'] / 1024:.1f} MiB (peak {idle['VmHWM'] / 1024:.1f} MiB)")
    print(f"home page {len(home_done)} bytes made in {made_done * 1000:.0f} ms, /api/reports "
          f"{len(listed)} bytes, headlines shown: "
          + ", ".join(summary(k, [l[k] for l in done]) for k in ("fcp", "dcl", "load"))
          + f"; {done[0]['rows']} table rows; hub peak RSS {peak['VmHWM'] / 1024:.1f} MiB")


def clients(program: str, source: Path, count: int, rounds: int) -> None:
    """`count` clients at once, each asking `rounds` times for the home
    page, the list and the stats page of `source` (and, where the page
    fetches its long tables' rows, those of its NVTX summary, as "Show
    all" does): the hub's RSS sampled meanwhile, and the pages' times."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        directory = work / "runs"
        directory.mkdir()
        shutil.copy(source, directory / source.name)
        hub = Hub(program, directory, work / "cache")
        try:
            while any(r["headline"] is None for r in hub.reports()):
                time.sleep(0.1)
            stats = f"stats/0/{source.name}"
            paths = ["", "api/reports", stats]
            if b"data-src" in hub.get(stats):
                paths.append(f"api/rows/0/{source.name}?summary=nvtx_sum")
            idle = rss(hub.process.pid)
            samples = []
            sampling = True

            def sample():
                while sampling:
                    samples.append(rss(hub.process.pid)["VmRSS"])
                    time.sleep(0.01)

            def client(_):
                times = []
                for _ in range(rounds):
                    for path in paths:
                        started = time.monotonic()
                        hub.get(path)
                        times.append((path, time.monotonic() - started))
                return times

            with ThreadPoolExecutor(count + 1) as pool:
                sampler = pool.submit(sample)
                started = time.monotonic()
                answered = list(pool.map(client, range(count)))
                wall = time.monotonic() - started
                sampling = False
                sampler.result()
            peak = rss(hub.process.pid)
        finally:
            hub.close()
    stats_times = [t * 1000 for times in answered for p, t in times if p == stats]
    rows_times = [t * 1000 for times in answered for p, t in times if "api/rows" in p]
    print(
        f"{count} clients x {rounds} rounds ({', '.join(p or 'home' for p in paths)}) in "
        f"{wall:.1f} s: stats page {summary('median', stats_times)}, its NVTX rows "
        f"{summary('median', rows_times)}; hub RSS idle "
        f"{idle['VmRSS'] / 1024:.1f} MiB, during: median {statistics.median(samples) / 1024:.1f} "
        f"MiB, max {max(samples) / 1024:.1f} MiB (VmHWM {peak['VmHWM'] / 1024:.1f} MiB)"
    )


def main() -> None:
    args = sys.argv[1:]
    match args:
        case ["paint", program, source, *rest]:
            paint(program, Path(source), int(rest[0]) if rest else 7)
        case ["list", program, fixtures, n, *rest]:
            listing(program, Path(fixtures), int(n), int(rest[0]) if rest else 5)
        case ["clients", program, source, *rest]:
            count = int(rest[0]) if rest else 50
            rounds = int(rest[1]) if len(rest) > 1 else 5
            clients(program, Path(source), count, rounds)
        case [program, source, *rest]:
            click_to_trace(program, Path(source), int(rest[0]) if rest else 5)
        case _:
            sys.exit(__doc__)


if __name__ == "__main__":
    main()
