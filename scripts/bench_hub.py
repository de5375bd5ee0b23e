#!/usr/bin/env python3
"""The hub's click-to-trace time against `convert` alone, runs interleaved.

    scripts/bench_hub.py PROGRAM INPUT [RUNS]

Each run: `convert INPUT -o OUT` (wall time), then `serve` on a directory
holding INPUT with an empty cache: once its headline is computed (as a user
sees the page before clicking), the time from asking for the trace (what
"Open in Perfetto" and "download" fetch: `/trace/RUN`, which converts once
and sends it) to its last byte received over HTTP on 127.0.0.1; the bytes
are checked to be `convert`'s. Prints each run and the medians, and the
server's RSS (VmRSS idle with the headline computed, VmHWM after sending).
"""

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def rss(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def main() -> None:
    program, source = sys.argv[1], Path(sys.argv[2])
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
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


if __name__ == "__main__":
    main()
