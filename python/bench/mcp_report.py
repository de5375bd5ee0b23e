"""The MCP server's `report` against the command line's: the time from a
`tools/call` of `report` to its answer, and the server's peak memory, set
against `nsys2perfetto report RUN --format json` run whole (its wall time
and peak memory, GNU time's %M). Medians of several runs.

    python python/bench/mcp_report.py [--runs 5] [--program PATH] RUN

The server is started once and initialized before the clock starts; each
call is timed from the request to the answer in the client (the `mcp`
package). Its memory is the server's peak resident size (VmHWM) after the
calls. The command line's time is a fresh process each run (under
/usr/bin/time), its memory the peak resident size of that process.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def cli(program: str, run: Path, runs: int) -> tuple[float, float]:
    """The median wall time and the largest peak resident size (GNU time's
    %M) of `report RUN --format json`, each run a fresh process."""
    times, peaks = [], []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", program, "report", str(run), "--format", "json"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        times.append(time.perf_counter() - start)
        peaks.append(int(done.stderr.strip().splitlines()[-1]) / 1024)
    return statistics.median(times), max(peaks)


def server(program: str, run: Path, runs: int) -> tuple[float, float]:
    cache = tempfile.mkdtemp(prefix="mcp-bench-")
    params = StdioServerParameters(command=program, args=["mcp", str(run.parent), "--cache", cache])

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                times = []
                for _ in range(runs):
                    start = time.perf_counter()
                    result = await session.call_tool("report", {"run": str(run)})
                    times.append(time.perf_counter() - start)
                    assert not result.is_error, result.content
                peak = 0.0
                for pid in Path("/proc").iterdir():
                    try:
                        cmdline = (pid / "cmdline").read_bytes().split(b"\0")
                    except OSError:
                        continue
                    if cmdline[:2] == [program.encode(), b"mcp"] and cache.encode() in cmdline:
                        status = (pid / "status").read_text()
                        hwm = next(l for l in status.splitlines() if l.startswith("VmHWM"))
                        peak = int(hwm.split()[1]) / 1024
                return statistics.median(times), peak

    return anyio.run(main)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("run", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--program", default=os.environ.get("NSYS2PERFETTO", "nsys2perfetto"))
    args = parser.parse_args()
    run = args.run.resolve()
    mcp_time, mcp_peak = server(args.program, run, args.runs)
    cli_time, cli_peak = cli(args.program, run, args.runs)
    print(f"MCP report call: median {mcp_time * 1000:.0f} ms, server peak {mcp_peak:.0f} MiB")
    print(f"CLI report:      median {cli_time * 1000:.0f} ms, process peak {cli_peak:.0f} MiB")


if __name__ == "__main__":
    main()
