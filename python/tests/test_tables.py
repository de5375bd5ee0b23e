"""stats, analyze, compare and series as DataFrames: the columns and every
cell of the program's CSV for the same reports, in pandas and in polars;
and the summaries against NVIDIA's own (nsys 2025.3's stored CSV)."""

from __future__ import annotations

import csv
import shutil
import sqlite3

import pytest

import nsys2perfetto
from conftest import assert_frame_is_csv, cli, cli_csv, need

BACKENDS = ["pandas", "polars"]

SUMMARIES = [
    "cuda_api_sum",
    "cuda_gpu_kern_sum",
    "cuda_gpu_mem_time_sum",
    "cuda_gpu_mem_size_sum",
    "cuda_gpu_sum",
    "cuda_kern_exec_sum",
    "nvtx_sum",
    "nvtx_kern_sum",
    "nvtx_gpu_proj_sum",
    "osrt_sum",
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("summary", SUMMARIES)
def test_stats_are_nvidias_summaries(fixtures, sqlite, summary, backend):
    """Each summary of the H100 export is, cell for cell, what nsys 2025.3
    wrote for the same report (and so the CLI's CSV, which tests/it/stats.rs
    holds to the same files)."""
    stored = fixtures / "nsys-2025.3-stats" / f"h100_torch_graph_node_{summary}.csv"
    with open(stored, newline="") as f:
        header, *rows = list(csv.reader(f))
    frame = nsys2perfetto.stats(sqlite("h100_torch_graph_node"), summary, backend=backend)
    assert_frame_is_csv(frame, header, rows)
    assert len(rows) > 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    "fixture", ["cori_run1_report1", "pipit_saxpy_mpi_cuda_rank0", "nsys-ai_h100_2gpu_1s"]
)
def test_stats_are_the_clis_csv(sqlite, fixture, backend):
    """Other exports (nsys 2021 to 2025), under nsys's old names too."""
    for summary in ["gpukernsum", "cuda_api_sum", "nvtx_sum", "cuda_gpu_mem_time_sum"]:
        header, rows = cli_csv("stats", sqlite(fixture), "--report", summary)
        frame = nsys2perfetto.stats(sqlite(fixture), summary, backend=backend)
        assert_frame_is_csv(frame, header, rows)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_table_that_could_not_be_read_is_a_warning_and_the_frame_reads(
    tmp_path, sqlite, backend
):
    """Kernels without their stream: the findings that depend on them are
    incomplete, which the program says (a warning) and marks in its CSV;
    the frame is the table after the marks, with the columns of a whole one."""
    export = tmp_path / "x.sqlite"
    shutil.copyfile(sqlite("h100_torch_graph_node"), export)
    with sqlite3.connect(export) as db:
        db.execute("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN streamId TO s")
    with pytest.warns(nsys2perfetto.Nsys2PerfettoWarning, match="has no streamId column"):
        frame = nsys2perfetto.analyze(export, backend=backend)
    header, _ = cli_csv("analyze", sqlite("h100_torch_graph_node"))
    assert list(frame.columns) == header
    assert len(frame) > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_analyze_is_the_clis_csv_with_every_finding(sqlite, backend):
    report = sqlite("h100_torch_graph_node")
    header, rows = cli_csv("analyze", report, "--rows", "0")
    frame = nsys2perfetto.analyze(report, backend=backend)
    assert_frame_is_csv(frame, header, rows)
    # More than the 50 rows a rule shows by default: every finding.
    assert len(rows) > 50
    header, rows = cli_csv("analyze", report, "--rule", "gpu_gaps", "--gap", "1ms")
    frame = nsys2perfetto.analyze(report, rule=["gpu_gaps"], gap="1ms", backend=backend)
    assert_frame_is_csv(frame, header, rows)


@pytest.mark.parametrize("backend", BACKENDS)
def test_analyze_says_which_rules_were_skipped(sqlite, backend):
    """An export without CUDA calls: the rules that need them are rows that
    say so, as in the CLI's CSV."""
    report = sqlite("nsys-ai_mock")
    header, rows = cli_csv("analyze", report, "--rows", "0")
    frame = nsys2perfetto.analyze(report, backend=backend)
    assert_frame_is_csv(frame, header, rows)


@pytest.mark.parametrize("backend", BACKENDS)
def test_compare_is_the_clis_csv(sqlite, backend):
    a, b = sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")
    header, rows = cli_csv("compare", a, b)
    frame = nsys2perfetto.compare(a, b, backend=backend)
    assert_frame_is_csv(frame, header, rows)
    assert {"kernel", "graph", "api", "nvtx"} <= {r[0] for r in rows}
    header, rows = cli_csv("compare", a, b, "--kind", "kernel,nvtx", "--top", "3")
    frame = nsys2perfetto.compare(a, b, kind=["kernel", "nvtx"], top=3, backend=backend)
    assert_frame_is_csv(frame, header, rows)


@pytest.mark.parametrize("backend", BACKENDS)
def test_series_is_the_clis_csv(sqlite, tmp_path, backend):
    node, whole = sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")
    events = ["gemm", "api:^cudaLaunchKernel", "nvtx:forward", "nvtx-gpu:step"]
    header, rows = _series_csv(node, whole, events)
    svg = tmp_path / "plot.svg"
    frame = nsys2perfetto.series(
        {"node": node, "whole": whole}, events, name="graph", svg=svg, backend=backend
    )
    assert_frame_is_csv(frame, header, rows)
    assert svg.read_text().lstrip().startswith("<svg")


def _series_csv(node, whole, events):
    """`series`' table as the CLI prints it (it has no --format)."""
    out = cli(
        "series",
        "--param",
        "graph=node",
        node,
        "--param",
        "graph=whole",
        whole,
        "-q",
        "--events",
        *events,
    ).stdout
    header, *rows = list(csv.reader(out.splitlines()))
    return header, rows


def test_a_bad_backend_is_refused_before_anything_runs(sqlite):
    with pytest.raises(ValueError, match="backend='arrow'"):
        nsys2perfetto.stats(sqlite("nsys-ai_mock"), "cuda_api_sum", backend="arrow")


def test_the_readme_notebook_example(fixtures, sqlite, tmp_path):
    """The README's notebook steps: a converted trace loaded by the perfetto
    package's TraceProcessor holds the kernels `stats` counts, to the
    nanosecond of their total time."""
    try:
        from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig
    except ImportError:
        need(False, "the perfetto package (pip install perfetto)")
    shell = fixtures.parent / "tools" / "trace_processor_shell"
    need(shell.is_file(), f"Perfetto's trace_processor_shell at {shell}")
    report = sqlite("h100_torch_graph_node")
    trace = nsys2perfetto.convert(report, tmp_path / "run.perfetto-trace", exclude=["samples"])
    tp = TraceProcessor(trace=str(trace), config=TraceProcessorConfig(bin_path=str(shell)))
    try:
        loaded = tp.query(
            "SELECT COUNT(*) AS n, SUM(dur) AS total FROM slice WHERE category = 'cuda_kernel'"
        ).as_pandas_dataframe()
    finally:
        tp.close()
    kernels = nsys2perfetto.stats(report, "cuda_gpu_kern_sum")
    assert int(loaded["n"][0]) == int(kernels["Instances"].sum()) > 0
    assert int(loaded["total"][0]) == int(kernels["Total Time (ns)"].sum())


def test_the_readmes_advice_reads_names_with_a_hash_whole(tmp_path, sqlite):
    """Issue 27 D: a CSV table the program writes to a file starts with its
    header, and is read as it is, as the README advises: by Python's csv
    module, and by pandas where it is installed. The former advice,
    ``comment='#'``, cut ``ProfilerStep#3`` to ``ProfilerStep``."""
    import shutil
    import sqlite3

    # A real capture (the tests run apart from the checkout, so not demo/), its
    # "forward" ranges renamed as PyTorch's profiler names its steps.
    report = tmp_path / "steps.sqlite"
    shutil.copy(sqlite("h100_torch_graph_node"), report)
    with sqlite3.connect(report) as db:
        renamed = db.execute(
            "UPDATE NVTX_EVENTS SET text = 'ProfilerStep#3' WHERE text = 'forward'"
        ).rowcount
        renamed += db.execute(
            "UPDATE StringIds SET value = 'ProfilerStep#3' WHERE value = 'forward'"
        ).rowcount
        assert renamed > 0
    table = tmp_path / "nvtx.csv"
    cli("stats", report, "--report", "nvtx_sum", "--format", "csv", "-o", table)
    # The README's advice, with Python's csv module: the header, then rows.
    with open(table, newline="") as f:
        header, *rows = list(csv.reader(f))
    assert header[-1] == "Range"
    names = [row[-1] for row in rows]
    assert ":ProfilerStep#3" in names, names
    try:
        import pandas
    except ImportError:
        return
    # The README's advice, with pandas.
    frame = pandas.read_csv(table, keep_default_na=False, na_values=[""])
    assert list(frame.columns) == header
    assert ":ProfilerStep#3" in list(frame["Range"])
    # What the former advice did.
    cut = pandas.read_csv(table, comment="#")
    assert ":ProfilerStep#3" not in list(cut["Range"])


@pytest.mark.parametrize("backend", BACKENDS)
def test_stats_takes_a_list_of_summaries(sqlite, backend):
    """A list of summaries gives each, by the name asked, as asked alone."""
    report = sqlite("h100_torch_graph_node")
    names = ["cuda_api_sum", "nvtx_sum", "gpukernsum"]
    tables = nsys2perfetto.stats(report, names, backend=backend)
    assert list(tables) == names
    for name in names:
        header, rows = cli_csv("stats", report, "--report", name)
        assert_frame_is_csv(tables[name], header, rows)


def test_a_summary_without_data_says_why_as_the_program_does(sqlite):
    """An empty summary comes with a NoDataWarning in the program's words
    ("no data: the export has no ..."), not silently."""
    report = sqlite("kmeans_report1")
    printed = cli("stats", report, "--report", "cuda_gpu_kern_sum").stdout
    said = next(line.strip()[1:-1] for line in printed.splitlines() if "(no data" in line)
    with pytest.warns(nsys2perfetto.NoDataWarning) as caught:
        frame = nsys2perfetto.stats(report, "cuda_gpu_kern_sum")
    assert len(frame) == 0 and "Name" in frame.columns
    messages = [str(w.message) for w in caught if w.category is nsys2perfetto.NoDataWarning]
    assert messages == [f"cuda_gpu_kern_sum of {report}: {said}"], messages
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in said
