"""Steps across ranks at a cluster's scale: `steps()` measures each report
on a worker (a thread pool, a Dask cluster of worker processes) and has
the program combine what they returned. Its numbers are held to `report
--step` run directly over the same reports, read from the program's JSON
cell by cell: every rank, every step's time on every rank, every step's
slowest rank and skew."""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
from pathlib import Path

import pytest

import nsys2perfetto
from conftest import cli, rows_of

STEP = "step *"
RANK_IN_NAME = r"report(\d+)"


def _direct(reports, step, *flags) -> dict:
    """The steps of `report --step` over the reports themselves."""
    page = json.loads(cli("report", "--step", step, *reports, "--format", "json", *flags).stdout)
    return page["steps"]


def _records(frame) -> list[dict]:
    """A pandas or polars DataFrame's rows as dicts, missing values as None."""
    return [dict(zip(frame.columns, row)) for row in rows_of(frame)]


def _is_the_direct_page(found: nsys2perfetto.Steps, direct: dict) -> None:
    """`found`'s page is the direct one, and each of its tables says what
    the direct page says, cell by cell."""
    assert found.page == direct
    ranks = direct["ranks"]
    assert [
        (r["label"], r["report"], r["rank"], r["rank_from"], r["pid"], r["steps"],
         r["gpu_busy_ns"], r["slowest_in"])
        for r in _records(found.ranks)
    ] == [
        (r["label"], r["input"], r["rank"], r["rank_from"], r["pid"], r["steps"],
         r["gpu_busy_ns"], r["slowest_in"])
        for r in ranks
    ]
    times = _records(found.times)
    assert len(times) == len(direct["steps"]) * len(ranks)
    for row in times:
        step = direct["steps"][row["step"]]
        rank = next(i for i, r in enumerate(ranks) if r["label"] == row["label"])
        time = step["times"][rank]
        assert row["step_name"] == step["name"]
        assert row["missing"] == (time is None) == (rank in step["missing"])
        for key in ["name", "start_ns", "duration_ns", "gpu_busy_ns"]:
            assert row[key] == (time[key] if time else None), (row, key)
        assert row["slowest"] == (step["slowest"] is not None and step["slowest"]["rank"] == rank)
    per_step = _records(found.per_step)
    assert [row["step_name"] for row in per_step] == [s["name"] for s in direct["steps"]]
    for row, step in zip(per_step, direct["steps"]):
        slowest = step["slowest"]
        assert row["ranks"] == sum(t is not None for t in step["times"])
        if slowest is None:
            assert row["slowest"] is None and row["skew_ns"] is None
            continue
        assert row["slowest"] == ranks[slowest["rank"]]["label"]
        assert row["slowest_rank"] == ranks[slowest["rank"]]["rank"]
        assert row["fastest"] == ranks[slowest["fastest_rank"]]["label"]
        assert row["skew_ns"] == slowest["skew_ns"]
        assert math.isclose(row["median_ns"], slowest["median_ns"], rel_tol=0, abs_tol=0)
        assert row["lead_over_median_ns"] == slowest["lead_over_median_ns"]


@pytest.fixture
def h100_pair(sqlite) -> list[Path]:
    return [sqlite("h100_torch_graph_whole"), sqlite("h100_torch_graph_node")]


@pytest.mark.parametrize("backend", ["pandas", "polars"])
def test_steps_on_an_executor_are_report_steps(h100_pair, backend, tmp_path):
    if backend == "polars":
        pytest.importorskip("polars", reason="polars is not installed")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        found = nsys2perfetto.steps(h100_pair, step=STEP, client=pool, backend=backend)
    direct = _direct(h100_pair, STEP)
    assert len(direct["steps"]) == 6 and len(direct["ranks"]) == 2  # the fixture's, not nothing
    _is_the_direct_page(found, direct)
    assert found.out is None


def test_steps_writes_the_programs_page(h100_pair, tmp_path):
    """out= is the program's page of the steps, as `report --step` writes
    it from the measured documents."""
    found = nsys2perfetto.steps(h100_pair, step=STEP, jobs=2, out=tmp_path / "job.json")
    assert found.out == tmp_path / "job.json"
    written = json.loads(found.out.read_text())
    assert written["steps"] == _direct(h100_pair, STEP) and written["runs"] == []
    html = nsys2perfetto.steps(h100_pair, step=STEP, out=tmp_path / "job.html").out
    text = html.read_text()
    assert "<svg" in text and "rank 0 (vm)" in text and "step 0" in text


def test_format_is_the_format_of_the_page(h100_pair, tmp_path):
    """format= chooses the format of the page out= writes (a name of no
    format of its own, say), as `report --format` does; without out= it is
    refused, saying what it is for."""
    by_name = nsys2perfetto.steps(h100_pair, step=STEP, out=tmp_path / "job.md").out
    asked = nsys2perfetto.steps(h100_pair, step=STEP, out=tmp_path / "job.txt", format="md")
    assert asked.out.read_text() == by_name.read_text()
    assert asked.page == _direct(h100_pair, STEP)
    with pytest.raises(ValueError, match="format='md' is the format of the page out= writes"):
        nsys2perfetto.steps(h100_pair, step=STEP, format="md")


def test_a_failed_report_raises_naming_it_or_is_a_row(h100_pair, tmp_path):
    bad = tmp_path / "not-a-report.sqlite"
    bad.write_text("hello")
    reports = [h100_pair[0], bad, h100_pair[1]]
    with pytest.raises(nsys2perfetto.Error) as raised:
        nsys2perfetto.steps(reports, step=STEP)
    message = cli("report", "--step", STEP, "--measure-only", bad, check=False).stderr
    message = message.strip().splitlines()[-1].removeprefix("nsys2perfetto: error: ")
    assert str(bad) in str(raised.value) and message in str(raised.value)
    found = nsys2perfetto.steps(reports, step=STEP, errors="row")
    # The others compared as `report --step` compares them alone.
    assert found.page == _direct(h100_pair, STEP)
    rows = _records(found.ranks)
    assert [r["report"] for r in rows] == [str(h100_pair[0]), str(h100_pair[1]), str(bad)]
    assert [r["error"] for r in rows] == [None, None, message]
    assert rows[2]["rank"] == 1 and rows[2]["rank_from"] == "order"  # its place in the list
    with pytest.raises(nsys2perfetto.Error, match="no report of the job could be measured"):
        nsys2perfetto.steps([bad], step=STEP, errors="row")


def test_steps_on_dask_are_report_steps(dask_client, cori_ranks, h100_pair):
    """The 8 Cori ranks (numbered by their file names) and the H100 pair,
    each report measured on a worker process: the page of `report --step`
    over them."""
    workers = dask_client.run(os.getpid)
    assert len(set(workers.values()) | {os.getpid()}) == 3, "2 worker processes, not threads"
    cori = nsys2perfetto.steps(
        cori_ranks, step="ProfilerStep*", client=dask_client, rank_from_name=RANK_IN_NAME
    )
    _is_the_direct_page(
        cori, _direct(cori_ranks, "ProfilerStep*", "--rank-from-name", RANK_IN_NAME)
    )
    assert list(cori.ranks["rank"]) == list(range(1, 9))
    assert list(cori.ranks["report"]) == [str(r) for r in cori_ranks]
    pair = nsys2perfetto.steps(h100_pair, step=STEP, client=dask_client)
    _is_the_direct_page(pair, _direct(h100_pair, STEP))
    assert len(pair.page["steps"]) == 6
