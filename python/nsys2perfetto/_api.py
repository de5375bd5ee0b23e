"""The commands of nsys2perfetto as Python functions.

Options are the command's flags with dashes as underscores (``exclude=
["samples"]``, ``gpu_in_nvtx=True``, ``level=6``); tables come back as
pandas DataFrames, or polars ones with ``backend="polars"``, with the
columns the command's CSV has.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from . import _cli
from ._tables import check_backend, read_csv

PathLike = Union[str, "os.PathLike[str]"]


def _trace_name(report: PathLike, options: Mapping[str, Any]) -> Path:
    """Where `convert` writes the trace of `report` when no `out` is given:
    beside it, its extension replaced by the trace's (as the program names it)."""
    extension = ".json" if options.get("format") == "json" else ".perfetto-trace"
    return Path(report).with_suffix(extension)


def convert(
    report: PathLike, out: PathLike | None = None, *, progress: bool = False, **options: Any
) -> Path:
    """Converts a report (an SQLite export, a .nsys-rep or .qdrep) into a
    trace; returns the trace's path.

    `out` defaults to the report's name with the trace's extension, beside
    it. Options are `convert`'s flags: ``format="json"``, ``level=6``,
    ``no_gzip=True``, ``exclude=["samples", "sched"]``, ``only=[...]``,
    ``findings=True``, ``time="11s:11.1s"``, ``pid=[...]``, ``gpu=[...]``,
    ``kernels="gemm"``, ``nvtx="^step"``, ``nvtx_domain=[...]``,
    ``gpu_in_nvtx=True``, ``nsys="/path/to/nsys"``. With ``progress=True``
    the program's summary line (and its progress, where it has a terminal)
    is printed to ``sys.stderr``.
    """
    target = Path(out) if out is not None else _trace_name(report, options)
    _cli.run(["convert", report, "-o", target, *_cli.flags(options)], echo_stderr=progress)
    return target


def merge(
    reports: Iterable[PathLike], out: PathLike, *, progress: bool = False, **options: Any
) -> Path:
    """Merges the reports of one job (one per rank or node) into one trace
    at `out`, aligned on the wall clock; returns its path. Options are
    `merge`'s flags (``rank_from_name=r"report(\\d+)"``, ``format``,
    ``level``, ``exclude``, ...)."""
    _cli.run(
        ["merge", *reports, "-o", out, *_cli.flags(options)],
        echo_stderr=progress,
    )
    return Path(out)


def _table(args: list[Any], backend: str, *, csv_flag: bool = True) -> Any:
    """Runs a command that writes a CSV table (``--format csv``, unless it
    writes nothing else) to ``-o`` and reads it."""
    check_backend(backend)
    with tempfile.TemporaryDirectory(prefix="nsys2perfetto-") as directory:
        table = Path(directory) / "table.csv"
        _cli.run([*args, *(["--format", "csv"] if csv_flag else []), "-o", table])
        return read_csv(table, backend)


def stats(report: PathLike, report_name: str, *, backend: str = "pandas", **options: Any) -> Any:
    """One summary of `nsys stats` (``"cuda_gpu_kern_sum"``, ``"nvtx_sum"``,
    or its old name ``"gpukernsum"``...) of a report, as a DataFrame with the
    columns of ``nsys2perfetto stats --format csv``. ``group_names=True``
    sums NVTX ranges by group name (``aten::mm, op_id = 317126`` as
    ``aten::mm``; see ``stats --help``)."""
    return _table(["stats", report, "--report", report_name, *_cli.flags(options)], backend)


def analyze(report: PathLike, *, backend: str = "pandas", **options: Any) -> Any:
    """The findings of the rules of `nsys analyze` on a report, every one of
    them (unless ``rows=N``), as a DataFrame with the columns of
    ``nsys2perfetto analyze --format csv``: a row per finding, and a row per
    rule that could not run, saying why in ``Skipped``. Options:
    ``rule=[...]``, ``gap=MS``, ``chunks=N``, ``util_threshold=PERCENT``."""
    options = {"rows": 0, **options}
    return _table(["analyze", report, *_cli.flags(options)], backend)


def report(
    reports: PathLike | Iterable[PathLike], out: PathLike | None = None, **options: Any
) -> Any:
    """Where the GPU time of each run went: the page of ``nsys2perfetto
    report``. Without `out`, returns the page as a dict, the program's JSON
    (``{"runs": [...]}``, with ``"steps"`` where ``step="ProfilerStep*"`` is
    given); with `out` (``.html``, ``.md`` or ``.json``), writes the page
    there and returns its path. Options are `report`'s flags: ``kind=
    ["attention=flash|fmha"]``, ``step="ProfilerStep*"``,
    ``rank_from_name=r"rank(\\d+)"``, ``nsys="/path/to/nsys"``."""
    import json

    if isinstance(reports, (str, os.PathLike)):
        reports = [reports]
    if out is not None:
        _cli.run(["report", *reports, "-o", out, *_cli.flags(options)])
        return Path(out)
    with tempfile.TemporaryDirectory(prefix="nsys2perfetto-") as directory:
        page = Path(directory) / "page.json"
        _cli.run(["report", *reports, "-o", page, *_cli.flags(options)])
        return json.loads(page.read_text(encoding="utf-8"))


def compare(a: PathLike, b: PathLike, *, backend: str = "pandas", **options: Any) -> Any:
    """What changed between two runs (kernels, CUDA graphs, API calls, NVTX
    ranges), as a DataFrame with the columns of ``nsys2perfetto compare
    --format csv``. Options: ``kind=["kernel", "nvtx"]``, ``top=N``,
    ``trace="both.perfetto-trace"``, ``group_names=True`` (NVTX ranges by
    group name, as for `stats`)."""
    return _table(["compare", a, b, *_cli.flags(options)], backend)


def series(
    runs: Mapping[Any, PathLike],
    events: Sequence[str],
    *,
    name: str = "p",
    backend: str = "pandas",
    **options: Any,
) -> Any:
    """Chosen events measured across runs that differ in one parameter:
    `runs` maps each value of the parameter `name` to its report, in order;
    `events` are `series`' patterns (``"gemm"``, ``"api:^cudaMemcpy"``,
    ``"nvtx:forward"``, ``"nvtx-gpu:step"``). A DataFrame with the columns of
    ``nsys2perfetto series``' CSV; ``svg="plot.svg"`` also draws the plot;
    ``group_names=True`` matches NVTX patterns against group names, as for
    `stats`."""
    if isinstance(events, str):
        events = [events]
    params: list[Any] = []
    for value, report in runs.items():
        params += ["--param", f"{name}={value}", report]
    return _table(
        ["series", *params, *_cli.flags(options), "--events", *events], backend, csv_flag=False
    )


class Profiled(tuple):
    """What :func:`profile` made: ``(report, trace)``, and ``returncode``, the
    profiled command's exit status."""

    returncode: int

    def __new__(cls, report: Path, trace: Path, returncode: int) -> "Profiled":
        made = super().__new__(cls, (report, trace))
        made.returncode = returncode
        return made

    @property
    def report(self) -> Path:
        """The report nsys wrote (``.nsys-rep``)."""
        return self[0]

    @property
    def trace(self) -> Path:
        """Its trace."""
        return self[1]


_MADE = re.compile(r"^(report|trace):\s+(.*)$")


def profile(
    command: str | Sequence[PathLike],
    out: PathLike | None = None,
    *,
    progress: bool = False,
    **options: Any,
) -> Profiled:
    """Runs `command` (a list of arguments, or a string split as a shell
    would) under ``nsys profile`` and converts its report: returns
    ``(report, trace)``. The command's exit status is ``returncode`` of the
    result; a status other than 0 is not an error, as the report is made.

    `out` names both files (``NAME.nsys-rep``, ``NAME.perfetto-trace``;
    default: report1, report2, ... in the current directory). Options are
    `profile`'s flags: ``trace="cuda,nvtx"`` (nsys's ``-t``), ``force=True``,
    ``nsys="/path/to/nsys"``, ``nsys_args=["--sample=none"]`` and
    `convert`'s. What the command and nsys print goes to ``sys.stdout`` and
    ``sys.stderr``; with ``progress=True`` as it comes, else once done."""
    if isinstance(command, str):
        command = shlex.split(command)
    options = dict(options)
    nsys_args = options.pop("nsys_args", None) or []
    args: list[Any] = ["profile", *_cli.flags(options)]
    if out is not None:
        args += ["-o", out]
    if nsys_args:
        args += ["--nsys-args", *nsys_args, "--"]
    # Any status is the command's own; a failure of ours says so on stderr.
    status, stdout, stderr = _cli.run(
        [*args, "--", *command],
        echo_stdout=progress,
        echo_stderr=progress,
        ok_statuses=range(-255, 256),
    )
    made = dict(m.groups() for m in map(_MADE.match, stderr.splitlines()) if m)
    if "report" not in made or "trace" not in made:
        raise _cli.Error(_cli._message(stderr, status), status, stderr)
    if not progress:
        sys.stdout.write(stdout)
        sys.stderr.write(stderr)
    return Profiled(Path(made["report"]), Path(made["trace"]), status)
