"""Many reports at once: stats, analyze, convert, report and series over a
list of reports (the ranks of a job), each report's work here `jobs` at a
time, on a concurrent.futures Executor, or on a real Dask cluster of worker
processes. The results are one DataFrame, in the order of the reports, with
the report and its rank (merge's rule, held to the program's own answer);
they equal the sequential ones and the program's; a failed report, a lost
worker or a restarted cluster is an error or a row saying so, never a gap.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path

import pytest

import nsys2perfetto
from conftest import assert_frame_is_csv, cli, cli_csv, need

SUMMARIES = ["cuda_api_sum", "cuda_gpu_kern_sum"]
RANK_IN_NAME = r"report(\d+)"


@pytest.fixture
def job(cori_ranks, sqlite) -> list[Path]:
    """The 8 Cori ranks and the H100 pair: 10 reports of two machines."""
    return [*cori_ranks, sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")]


def _frames_equal(a, b) -> None:
    import pandas.testing

    pandas.testing.assert_frame_equal(a, b, check_dtype=True)


def _is_the_clis(frame, reports, args) -> None:
    """Each report's rows of `frame` (pandas or polars), less report and
    rank, are the program's CSV for it; the reports come in the order given."""
    named = list(frame["report"])
    assert [r for i, r in enumerate(named) if i == 0 or named[i - 1] != r] == [
        str(r) for r in reports if str(r) in named
    ]
    for report in reports:
        header, rows = cli_csv(args[0], report, *args[1:])
        if hasattr(frame, "filter") and hasattr(frame, "iter_rows"):
            import polars

            mine = frame.filter(polars.col("report") == str(report)).drop(["report", "rank"])
        else:
            mine = frame[frame["report"] == str(report)].drop(columns=["report", "rank"])
            mine = mine.reset_index(drop=True)
        assert_frame_is_csv(mine, header, rows)


# --- the rank rule -----------------------------------------------------------------


def test_ranks_are_the_programs(sqlite, tmp_path):
    """The rank of each report is the one `report --step` gives it: from
    MPI_RANKS where the export names one, else from the name by the pattern,
    else its place."""
    whole = sqlite("h100_torch_graph_whole")
    mpi = tmp_path / "mpi.sqlite"
    shutil.copyfile(whole, mpi)
    with sqlite3.connect(mpi) as db:
        db.execute("CREATE TABLE MPI_RANKS (globalTid INTEGER, rank INTEGER)")
        db.executemany("INSERT INTO MPI_RANKS VALUES (?, 7)", [(1,), (2,)])
    named = tmp_path / "report12.sqlite"
    shutil.copyfile(whole, named)
    reports = [sqlite("h100_torch_graph_node"), mpi, named, whole]
    for pattern in [None, RANK_IN_NAME]:
        flags = ["--rank-from-name", pattern] if pattern else []
        page = json.loads(
            cli("report", *reports, "--step", "step *", "--format", "json", *flags).stdout
        )
        said = [(r["rank"], r["rank_from"]) for r in page["steps"]["ranks"]]
        assert nsys2perfetto.ranks(reports, pattern) == said
    assert [r for r, _ in nsys2perfetto.ranks(reports, RANK_IN_NAME)] == [0, 7, 12, 3]


# --- here, jobs at a time, and on an Executor ------------------------------------


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_stats_of_many_reports_is_each_reports_in_order(sqlite, backend):
    reports = [sqlite("h100_torch_graph_whole"), sqlite("nsys-ai_mock"), sqlite("dlprof_nsys_profile")]
    frame = nsys2perfetto.stats(reports, "cuda_api_sum", backend=backend, jobs=2)
    assert list(frame.columns[:2]) == ["report", "rank"]
    _is_the_clis(frame, reports, ["stats", "--report", "cuda_api_sum"])
    ranks = dict(zip(frame["report"], frame["rank"]))
    assert [ranks[str(r)] for r in reports] == [0, 1, 2]


def test_analyze_on_an_executor_is_the_sequential_one(sqlite):
    reports = [sqlite("h100_torch_graph_node"), sqlite("nsys-ai_mock")]
    sequential = nsys2perfetto.analyze(reports, jobs=1)
    with concurrent.futures.ProcessPoolExecutor(2) as pool:
        spread = nsys2perfetto.analyze(reports, client=pool)
    _frames_equal(sequential, spread)
    _is_the_clis(sequential, reports, ["analyze", "--rows", "0"])


def test_a_failed_report_raises_naming_it_or_is_a_row(sqlite, tmp_path):
    """errors="raise" (the default) raises the program's error, naming the
    report; errors="row" gives every report its rows, the failed one a row
    with its message: no report is missing without a word."""
    bad = tmp_path / "not-a-report.sqlite"
    bad.write_text("hello")
    reports = [sqlite("nsys-ai_mock"), bad, sqlite("h100_torch_graph_whole")]
    message = cli("stats", bad, "--report", "cuda_api_sum", check=False).stderr.strip()
    message = message.splitlines()[-1].removeprefix("nsys2perfetto: error: ")
    with pytest.raises(nsys2perfetto.Error) as raised:
        nsys2perfetto.stats(reports, "cuda_api_sum")
    assert str(bad) in str(raised.value) and message in str(raised.value)
    rows = nsys2perfetto.stats(reports, "cuda_api_sum", errors="row")
    assert list(rows["report"].unique()) == [str(r) for r in reports]
    failed = rows[rows["report"] == str(bad)]
    assert len(failed) == 1 and failed["error"].iloc[0] == message
    assert rows[rows["report"] != str(bad)]["error"].isna().all()
    good = rows[rows["report"] != str(bad)].drop(columns=["error"]).reset_index(drop=True)
    alone = nsys2perfetto.stats([reports[0], reports[2]], "cuda_api_sum")
    assert list(good.columns) == list(alone.columns)
    import pandas.testing

    pandas.testing.assert_frame_equal(good.drop(columns="rank"), alone.drop(columns="rank"), check_dtype=False)
    assert str(rows["Num Calls"].dtype) == "Int64"  # integers still, beside the row of errors
    with pytest.raises(ValueError, match="errors="):
        nsys2perfetto.stats(reports, "cuda_api_sum", errors="ignore")


def test_convert_many_writes_the_clis_traces(sqlite, tmp_path):
    reports = [sqlite("nsys-ai_mock"), sqlite("h100_torch_graph_whole")]
    frame = nsys2perfetto.convert(reports, tmp_path / "traces", jobs=2)
    assert list(frame.columns) == ["report", "rank", "trace"]
    for report, trace in zip(reports, frame["trace"]):
        assert Path(trace) == tmp_path / "traces" / Path(report).with_suffix(".perfetto-trace").name
        cli("convert", report, "-o", tmp_path / "cli.perfetto-trace", "-q")
        assert Path(trace).read_bytes() == (tmp_path / "cli.perfetto-trace").read_bytes()
    with pytest.raises(ValueError, match="would both be written"):
        nsys2perfetto.convert([reports[0], reports[0]], tmp_path / "x")


def test_report_and_series_of_runs_apart_are_the_programs(sqlite):
    reports = [sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")]
    assert nsys2perfetto.report(reports, jobs=2) == nsys2perfetto.report(reports)
    runs = {1: reports[0], 2: reports[1]}
    events = ["gemm", "nvtx:step"]
    _frames_equal(
        nsys2perfetto.series(runs, events, jobs=2), nsys2perfetto.series(runs, events)
    )


# --- a real Dask cluster of worker processes ---------------------------------------


def test_stats_on_dask_are_the_sequential_ones_and_the_clis(dask_client, job):
    workers = dask_client.run(os.getpid)
    assert len(set(workers.values()) | {os.getpid()}) == 3, "2 worker processes, not threads"
    sequential = nsys2perfetto.stats(job, SUMMARIES, jobs=1, rank_from_name=RANK_IN_NAME)
    spread = nsys2perfetto.stats(job, SUMMARIES, client=dask_client, rank_from_name=RANK_IN_NAME)
    for name in SUMMARIES:
        _frames_equal(sequential[name], spread[name])
        _is_the_clis(spread[name], job, ["stats", "--report", name])
    ranks = spread["cuda_api_sum"].drop_duplicates("report")["rank"].tolist()
    assert ranks == [1, 2, 3, 4, 5, 6, 7, 8, 8, 9]  # the Cori files' numbers, then places


def test_convert_on_dask_writes_the_clis_traces(dask_client, job, tmp_path):
    spread = nsys2perfetto.convert(job, tmp_path / "dask", client=dask_client)
    sequential = nsys2perfetto.convert(job, tmp_path / "here", jobs=1)
    assert spread["report"].tolist() == [str(r) for r in job]
    for report, a, b in zip(job, spread["trace"], sequential["trace"]):
        assert Path(a).read_bytes() == Path(b).read_bytes(), report
    cli("convert", *job, "-o", f"{tmp_path}/cli/", "-q")
    for trace in spread["trace"]:
        assert Path(trace).read_bytes() == (tmp_path / "cli" / Path(trace).name).read_bytes()


def _slow_program(tmp_path: Path) -> tuple[Path, Path]:
    """A stand-in for the program that notes each start and waits a second
    before running the real one: long enough to lose a worker under it."""
    started = tmp_path / "started"
    started.mkdir()
    wrapper = tmp_path / "slow-nsys2perfetto"
    wrapper.write_text(
        f'#!/bin/sh\ntouch "{started}/$$"\nsleep 1\nexec "{nsys2perfetto.program()}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, started


class _WhenStarted(threading.Thread):
    """`action()` once a report's program has started (or after a minute);
    its error, if any, raised by join()."""

    def __init__(self, started: Path, action) -> None:
        super().__init__()
        self.started, self.action, self.error = started, action, None
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + 60
        while not any(self.started.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        try:
            self.action()
        except BaseException as error:  # noqa: BLE001 - given to the test by join()
            self.error = error

    def join(self, timeout=None) -> None:
        super().join(timeout)
        if self.error is not None:
            raise self.error


def _when_started(started: Path, action) -> _WhenStarted:
    return _WhenStarted(started, action)


def _whole_or_said(frame, job, sequential) -> None:
    """Every report is in `frame`: with its rows as the sequential run
    has them, or with a row whose error says what happened."""
    assert list(frame["report"].unique()) == [str(r) for r in job]
    for report in map(str, job):
        mine = frame[frame["report"] == report]
        if mine["error"].notna().any():
            assert len(mine) == 1 and mine["error"].iloc[0]
        else:
            want = sequential[sequential["report"] == report].drop(columns="rank")
            got = mine.drop(columns=["rank", "error"])
            assert got.reset_index(drop=True).equals(want.reset_index(drop=True)), report


def test_a_worker_killed_mid_job_is_retried_or_said(job, tmp_path, monkeypatch):
    """A worker process killed (SIGKILL) while it runs a report: Dask runs
    the report again on another worker, and the result is whole; or, where
    it gives up, the report's error says its worker died. Never a report
    missing without a word."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    import signal

    sequential = nsys2perfetto.stats(job, "cuda_api_sum", jobs=2)
    wrapper, started = _slow_program(tmp_path)
    monkeypatch.setenv("NSYS2PERFETTO", str(wrapper))  # the workers inherit it
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        pid = next(iter(client.run(os.getpid).values()))
        killer = _when_started(started, lambda: os.kill(pid, signal.SIGKILL))
        try:
            frame = nsys2perfetto.stats(job, "cuda_api_sum", client=client, errors="row")
        finally:
            killer.join()
        assert pid not in client.run(os.getpid).values(), "the worker was not killed"
    _whole_or_said(frame, job, sequential)
    said = frame["error"].dropna().tolist()
    assert all("worker died" in e for e in said), said


def _restarted_under(distributed, started: Path, wrapper: Path, call):
    """`call(client)` on a cluster of its own, restarted under it once a
    report's program has started on a worker (each worker running the slow
    stand-in). The restart does not wait for the workers to come back: on a
    loaded machine they may take minutes, and what is tested is the job's
    answer."""
    for marker in started.iterdir():
        marker.unlink()
    program = str(wrapper)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        # A lambda travels by value (a bound method of os.environ would set a copy's).
        client.run(lambda: os.environ.__setitem__("NSYS2PERFETTO", program))
        restarter = _when_started(started, lambda: client.restart(wait_for_workers=False))
        try:
            return call(client)
        finally:
            restarter.join()


def test_a_cluster_restarted_mid_job_raises_or_says_so(job, tmp_path):
    """client.restart() under a job cancels its reports: each says so in
    its row (errors="row"), or the first raises an Error naming its report
    and saying it was cancelled; never a DataFrame short of reports."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is not installed")
    sequential = nsys2perfetto.stats(job, "cuda_api_sum", jobs=2)
    wrapper, started = _slow_program(tmp_path)
    frame = _restarted_under(
        distributed,
        started,
        wrapper,
        lambda client: nsys2perfetto.stats(job, "cuda_api_sum", client=client, errors="row"),
    )
    _whole_or_said(frame, job, sequential)
    said = frame["error"].dropna().tolist()
    assert said, "the restart came after every report was done"
    assert all("cancelled" in e or "worker died" in e for e in said), said
    with pytest.raises(nsys2perfetto.Error, match="cancelled|worker died") as raised:
        _restarted_under(
            distributed,
            started,
            wrapper,
            lambda client: nsys2perfetto.stats(job, "cuda_api_sum", client=client),
        )
    assert any(str(r) in str(raised.value) for r in job), raised.value
