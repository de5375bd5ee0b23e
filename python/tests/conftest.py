"""What the tests of the Python package share: the fixtures (real nsys
exports in ../shared/fixtures, or $NSYS2PERFETTO_SHARED/fixtures; the 8
Cori ranks exported by nsys), the program itself to compare with, how a
cell of its CSV compares with a DataFrame's value, and a Dask cluster of
worker processes.

Without the fixtures the tests that need them are skipped, saying why; in
CI (``CI`` set) they fail instead, as the Rust tests do.
"""

from __future__ import annotations

import csv
import io
import concurrent.futures
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import nsys2perfetto


def shared_dir() -> Path:
    chosen = os.environ.get("NSYS2PERFETTO_SHARED")
    if chosen:
        return Path(chosen)
    # python/tests/ in a checkout: ../shared beside the repository.
    return Path(__file__).resolve().parents[2].parent / "shared"


def need(condition: bool, reason: str) -> None:
    """Skips the test (fails it in CI) unless `condition` holds."""
    if condition:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI needs {reason}")
    pytest.skip(reason)


@pytest.fixture
def fixtures() -> Path:
    path = shared_dir() / "fixtures"
    need(path.is_dir(), f"the fixtures at {path} (../shared/fixtures, or set NSYS2PERFETTO_SHARED)")
    return path


@pytest.fixture
def sqlite(fixtures: Path):
    """The SQLite export of a fixture, by name."""

    def export(name: str) -> Path:
        return fixtures / "sqlite" / f"{name}.sqlite"

    return export


def cli(*args: object, check: bool = True) -> subprocess.CompletedProcess:
    """The program run directly, as from a shell."""
    run = subprocess.run([nsys2perfetto.program(), *map(str, args)], capture_output=True, text=True)
    if check and run.returncode != 0:
        raise AssertionError(f"{args}: exit {run.returncode}: {run.stderr}")
    return run


def cli_csv(*args: object) -> tuple[list[str], list[list[str]]]:
    """The header and rows of the one CSV table the program prints: a table
    alone starts with its header (no ``# TITLE (NAME) of FILE`` line)."""
    text = cli(*args, "--format", "csv").stdout
    assert not text.startswith("# "), f"{args}: a marker line before one table: {text[:80]!r}"
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows, f"{args}: no CSV"
    return rows[0], rows[1:]


def rows_of(frame) -> list[list[object]]:
    """A pandas or polars DataFrame's rows, missing values as None."""
    if hasattr(frame, "iter_rows"):
        return [list(row) for row in frame.iter_rows()]
    return [
        [
            None if (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType" else v
            for v in row
        ]
        for row in frame.itertuples(index=False, name=None)
    ]


def same_cell(value: object, cell: str) -> bool:
    """Whether a DataFrame's value is the CSV cell: the same text, the same
    integer, the same real as printed, or missing for an empty cell."""
    if cell == "":
        return value is None
    if value is None:
        return False
    if isinstance(value, str):
        return value == cell
    if isinstance(value, bool):
        return str(value).lower() == cell.lower()
    if isinstance(value, int) or (
        hasattr(value, "is_integer") and float(value).is_integer() and "." not in cell
    ):
        return int(value) == int(cell)
    return float(value) == float(cell)


def assert_frame_is_csv(frame, header: list[str], rows: list[list[str]]) -> None:
    """`frame` holds exactly the CSV's columns and cells."""
    assert list(frame.columns) == header
    got = rows_of(frame)
    assert len(got) == len(rows)
    for number, (values, cells) in enumerate(zip(got, rows)):
        for column, value, cell in zip(header, values, cells):
            assert same_cell(value, cell), f"row {number}, {column}: {value!r} is not {cell!r}"


@pytest.fixture(scope="session")
def cori_ranks(tmp_path_factory) -> list[Path]:
    """The 8 ranks of the Cori job, exported by nsys once for the session
    (their .qdrep need nsys; each worker would export them again)."""
    reports = sorted((shared_dir() / "fixtures" / "reports").glob("cori_run1_report*.qdrep"))
    need(len(reports) == 8, "the 8 Cori reports in ../shared/fixtures/reports")
    need(shutil.which("nsys") is not None, "nsys (.ci/install-nsys) to export the Cori reports")
    out = tmp_path_factory.mktemp("cori")

    def export(report: Path) -> Path:
        target = out / report.with_suffix(".sqlite").name
        subprocess.run(
            ["nsys", "export", "--type", "sqlite", "--output", str(target), str(report)],
            check=True,
            capture_output=True,
        )
        return target

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(export, reports))


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip(
        "distributed", reason="dask.distributed is not installed (pip install 'dask[distributed]')"
    )
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()
