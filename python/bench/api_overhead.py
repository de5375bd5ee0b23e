"""What the Python API costs over the command line: the time to a DataFrame
and the peak memory, on a summary of a million rows and on the 50x bench
input's summaries.

    python python/bench/api_overhead.py [--runs 3] [--x50 target/bench/h100_x50.sqlite]

Run it where the wheel is installed (``nsys2perfetto`` importable, its
program beside it). Each measurement is a fresh Python process; the time is
wall time in it, from before the call to the DataFrame; the memory is the
peak resident size of the Python process and, for the CLI alone, of the
program (``getrusage``; a child's count starts from the pages of the Python
process it was forked from, so it is shown for the CLI alone only). The CLI alone is ``nsys2perfetto stats --format csv -o FILE``
timed the same way. The DataFrame library is imported before the clock
starts, as a notebook has it imported already. With ``--extension MODULE``, a module with
``stats_columns(path, report) -> {column: list}`` (an extension linking the
library) is measured beside it: ``pandas.DataFrame(stats_columns(...))``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURE = r"""
import json, resource, subprocess, sys, time
how, report, summary, backend, extension = sys.argv[1:6]
# A notebook has its DataFrame library imported already: not timed.
if backend:
    __import__(backend)
start = time.perf_counter()
if how == "api":
    import nsys2perfetto
    frame = nsys2perfetto.stats(report, summary, backend=backend)
    rows = len(frame)
elif how == "cli":
    import nsys2perfetto
    subprocess.run([nsys2perfetto.program(), "stats", report, "--report", summary,
                    "--format", "csv", "-o", sys.argv[6]], check=True)
    rows = None
else:
    import importlib
    columns = importlib.import_module(extension).stats_columns(report, summary)
    if backend == "polars":
        import polars
        frame = polars.DataFrame(columns)
    else:
        import pandas
        frame = pandas.DataFrame(columns)
    rows = len(frame)
elapsed = time.perf_counter() - start
own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"s": elapsed, "python_kb": own, "program_kb": child, "rows": rows}))
"""


def wide_export(path: Path, rows: int) -> None:
    """An export whose `cuda_api_sum` has `rows` rows: as many CUDA API
    functions, named apart, called once each."""
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        db.executescript(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
            "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, end INTEGER,"
            " globalTid INTEGER, correlationId INTEGER, nameId INTEGER);"
        )
        db.executemany(
            "INSERT INTO StringIds VALUES (?, ?)",
            ((i, f"cudaFunction{i:07d}_v12000") for i in range(rows)),
        )
        db.executemany(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 281479271677994, ?, ?)",
            ((1000 * i, 1000 * i + 1 + i % 997, i, i) for i in range(rows)),
        )
    db.close()


def measure(how: str, report: Path, summary: str, backend: str, extension: str, runs: int) -> dict:
    results = []
    with tempfile.TemporaryDirectory() as directory:
        for _ in range(runs):
            out = subprocess.run(
                [
                    sys.executable,
                    "-c",
                    MEASURE,
                    how,
                    str(report),
                    summary,
                    backend,
                    extension,
                    str(Path(directory) / "t.csv"),
                ],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            results.append(json.loads(out))
    return {
        "s": statistics.median(r["s"] for r in results),
        "s_range": (min(r["s"] for r in results), max(r["s"] for r in results)),
        "python_mb": max(r["python_kb"] for r in results) / 1024,
        "program_mb": max(r["program_kb"] for r in results) / 1024,
        "rows": results[0]["rows"],
    }


def row(label: str, m: dict, program_too: bool = False) -> str:
    low, high = m["s_range"]
    program = f"{m['program_mb']:.0f} MB" if program_too else "-"
    return (
        f"| {label} | {m['s']:.2f} s ({low:.2f}-{high:.2f}) | {m['python_mb']:.0f} MB | {program} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=Path("target/bench"))
    parser.add_argument("--x50", type=Path, default=Path("target/bench/h100_x50.sqlite"))
    parser.add_argument("--extension", default="")
    parser.add_argument("--no-wide", action="store_true", help="only the 50x input's summaries")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    wide = args.work / f"api_{args.rows}.sqlite"
    if not wide.exists():
        wide_export(wide, args.rows)
    print(
        "| measured | time to the DataFrame (median, range) | peak RSS, Python | peak RSS, program |"
    )
    print("|---|---|---|---|")
    cases = [] if args.no_wide else [(wide, "cuda_api_sum")]
    if args.x50.exists():
        cases += [(args.x50, "cuda_gpu_kern_sum"), (args.x50, "nvtx_sum")]
    else:
        print(f"({args.x50} not found: scripts/bench.sh makes it)", file=sys.stderr)
    for report, summary in cases:
        name = f"{report.name} {summary}"
        print(row(f"{name}: CLI to CSV", measure("cli", report, summary, "", "", args.runs), True))
        for backend in ["pandas", "polars"]:
            m = measure("api", report, summary, backend, "", args.runs)
            print(row(f"{name}: API, {backend} ({m['rows']} rows)", m))
            if args.extension and report == wide:
                m = measure("ext", report, summary, backend, args.extension, args.runs)
                print(row(f"{name}: extension, {backend}", m))


if __name__ == "__main__":
    main()
