"""Many reports through the Python package: 64 copies of one fixture (hard
links, named rank0..rank63) summarised one after another in a plain loop,
as one list (jobs=1, jobs=2), and on a Dask LocalCluster of 2 worker
processes; and the package's overhead per report over running the program
directly. Each figure is the median of --runs runs (their range beside it).

    python python/bench/many_reports.py [--fixture PATH] [--summary NAME | --analyze] [--runs N]

Needs the package and its program installed (or NSYS2PERFETTO set), pandas,
and dask[distributed]. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import nsys2perfetto as n2p

COPIES = 64


def timed(call, runs: int) -> tuple[float, float, float]:
    took = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        took.append(time.perf_counter() - start)
    return statistics.median(took), min(took), max(took)


def main() -> None:
    shared = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "sqlite"
    parser = argparse.ArgumentParser()
    parser.add_argument("--fixture", type=Path, default=shared / "h100_torch_graph_node.sqlite")
    parser.add_argument("--summary", default="cuda_api_sum")
    parser.add_argument("--analyze", action="store_true", help="analyze instead of stats")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.analyze:
        work, what = (lambda r, **kw: n2p.analyze(r, **kw)), "analyze"
        cli_args = ["analyze", "--rows", "0"]
    else:
        work, what = (lambda r, **kw: n2p.stats(r, args.summary, **kw)), "stats"
        cli_args = ["stats", "--report", args.summary]

    from dask.distributed import Client, LocalCluster

    with tempfile.TemporaryDirectory(prefix="n2p-many-") as directory:
        reports = []
        for rank in range(COPIES):
            copy = Path(directory) / f"rank{rank}.sqlite"
            try:
                os.link(args.fixture, copy)
            except OSError:
                shutil.copyfile(args.fixture, copy)
            reports.append(copy)
        rows = []

        def row(what: str, figures: tuple[float, float, float], per: int) -> None:
            median, low, high = figures
            rows.append(
                f"| {what} | {median:.2f} s ({low:.2f}-{high:.2f}) | {1000 * median / per:.0f} ms |"
            )

        program = n2p.program()
        csv = Path(directory) / "out.csv"
        one = reports[0]
        alone = [program, cli_args[0], one, *cli_args[1:], "--format", "csv", "-o", csv]
        row(
            f"the program alone, one report (`{' '.join(cli_args)} --format csv -o`)",
            timed(lambda: subprocess.run(alone, check=True, capture_output=True), args.runs * 3),
            1,
        )
        row(f"`n2p.{what}(report)`, one report", timed(lambda: work(one), args.runs * 3), 1)
        row(
            f"{COPIES} reports, a loop of `n2p.{what}(report)`",
            timed(lambda: [work(r) for r in reports], args.runs),
            COPIES,
        )
        row(
            f"{COPIES} reports, `n2p.{what}(reports, jobs=1)`",
            timed(lambda: work(reports, jobs=1), args.runs),
            COPIES,
        )
        row(
            f"{COPIES} reports, `n2p.{what}(reports, jobs=2)`",
            timed(lambda: work(reports, jobs=2), args.runs),
            COPIES,
        )
        start = time.perf_counter()
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        )
        client = Client(cluster)
        started = time.perf_counter() - start
        work(reports[:2], client=client)  # the workers import the package once
        row(
            f"{COPIES} reports, `n2p.{what}(reports, client=Client(LocalCluster(n_workers=2)))`"
            f" (the cluster's start, {started:.1f} s, not counted)",
            timed(lambda: work(reports, client=client), args.runs),
            COPIES,
        )
        client.close()
        cluster.close()

    print(f"fixture: {args.fixture.name}, {' '.join(cli_args)}, {args.runs} runs (3x for one report)")
    print("| what | time: median (range) | per report |")
    print("|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
