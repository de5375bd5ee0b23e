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
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, Union

from . import _cli, _parallel, _ranks, _temporaries
from ._tables import check_backend, read_csv

PathLike = Union[str, "os.PathLike[str]"]


def _trace_name(report: PathLike, options: Mapping[str, Any]) -> Path:
    """The file name `convert` gives the trace of `report`: its name, its
    extension replaced by the trace's (as the program names it)."""
    extension = ".json" if options.get("format") == "json" else ".perfetto-trace"
    return Path(Path(report).name).with_suffix(extension)


def _is_many(reports: Any) -> bool:
    """Whether `reports` is several reports (a list of them) rather than one path."""
    return not isinstance(reports, (str, bytes, os.PathLike))


def _names_directory(out: PathLike) -> bool:
    """Whether `out` names a directory: one that exists, or a name ending
    in a slash (made as the program makes it, with any missing parent)."""
    text = os.fspath(out)
    return text.endswith(("/", os.sep)) or Path(text).is_dir()


def convert(
    report: PathLike | Sequence[PathLike],
    out: PathLike | None = None,
    *,
    progress: bool = False,
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    rank_from_name: str | None = None,
    backend: str = "pandas",
    **options: Any,
) -> Any:
    """Converts a report (an SQLite export, a .nsys-rep or .qdrep) into a
    trace; returns the trace's path.

    `out` defaults to the report's name with the trace's extension, beside
    it; a directory (one that exists, or a name ending in ``/``, made with
    any missing parent) receives the trace under that name. Options are
    `convert`'s flags: ``format="json"``, ``level=6``, ``no_gzip=True``,
    ``exclude=["samples", "sched"]``, ``only=[...]``, ``findings=True``,
    ``time="11s:11.1s"``, ``pid=[...]``, ``gpu=[...]``, ``kernels="gemm"``,
    ``nvtx="^step"``, ``nvtx_domain=[...]``, ``gpu_in_nvtx=True``,
    ``nsys="/path/to/nsys"``. With ``progress=True`` the program's summary
    line (and its progress, where it has a terminal) is printed to
    ``sys.stderr``.

    `report` a directory: every export and report below it is converted by
    the program, `jobs` at a time, each trace beside its input or, with
    `out`, into that directory in the input's tree; returns the list of the
    traces written, in name order.

    `report` a list of reports: each is converted on `client` (see
    :func:`stats`), into `out` (a directory) or beside it; returns a
    DataFrame with columns ``report``, ``rank`` and ``trace``, a row per
    report in the order given (and ``error``, with ``errors="row"``).
    """
    _parallel.check_errors(errors)
    if _is_many(report):
        reports = list(report)
        _refuse_directories(reports)
        if out is not None:
            out = os.path.join(os.fspath(out), "")
            _refuse_one_name(reports, Path(out), options)
        outcomes = _parallel.run_each(
            _convert_file, reports, client=client, jobs=jobs, errors=errors,
            out=out, options=options,
        )
        return _frame(
            reports, outcomes, rank_from_name, backend, errors, lambda trace: {"trace": trace}
        )
    if client is not None:
        raise ValueError("client= converts a list of reports; one report or a directory runs here")
    if Path(report).is_dir():
        return _convert_directory(report, out, progress, jobs, options)
    return Path(_convert_file(report, out, options, echo=progress))


def _convert_file(
    report: PathLike, out: PathLike | None, options: Mapping[str, Any], echo: bool = False
) -> str:
    """One report's trace, written where `out` says; its path."""
    if out is None:
        target = Path(report).parent / _trace_name(report, options)
        args = ["-o", target]
    elif _names_directory(out):
        target = Path(out) / _trace_name(report, options)
        # The program makes a directory named with a trailing slash; a
        # pathlib.Path would drop the slash.
        args = ["-o", os.path.join(os.fspath(out), "")]
    else:
        target = Path(out)
        args = ["-o", target]
    _cli.run(["convert", report, *args, *_cli.flags(options)], echo_stderr=echo)
    return str(target)


def _convert_directory(
    directory: PathLike,
    out: PathLike | None,
    progress: bool,
    jobs: int | None,
    options: Mapping[str, Any],
) -> list[Path]:
    """The program's conversion of a directory; the traces it wrote. Each
    trace is written to a new file renamed into place, so the traces written
    are those of the trace's extension below the output tree that are new
    files since the run began."""
    root = Path(out) if out is not None else Path(directory)
    extension = _trace_name("x", options).suffix
    before = _files_below(root, extension)
    args: list[Any] = ["convert", directory]
    if out is not None:
        args += ["-o", os.path.join(os.fspath(out), "")]
    if jobs is not None:
        args += ["-j", str(jobs)]
    # Not -q: its warnings (which -q leaves out) become Python warnings.
    _cli.run([*args, *_cli.flags(options)], echo_stderr=progress)
    after = _files_below(root, extension)
    return sorted(Path(p) for p, identity in after.items() if before.get(p) != identity)


def _files_below(root: Path, extension: str) -> dict[str, tuple[int, int]]:
    """Each file with `extension` below `root` (links to directories not
    followed, as the program does not), by its device and inode."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            if name.endswith(extension):
                path = os.path.join(directory, name)
                try:
                    status = os.stat(path)
                except OSError:
                    continue
                found[path] = (status.st_dev, status.st_ino)
    return found


def _refuse_directories(reports: Sequence[PathLike]) -> None:
    for report in reports:
        if Path(report).is_dir():
            raise ValueError(
                f"{os.fspath(report)} is a directory: convert it on its own "
                "(the program converts what is below it, jobs at a time)"
            )


def _refuse_one_name(reports: Sequence[PathLike], out: Path, options: Mapping[str, Any]) -> None:
    """Refuses reports whose traces would be one file in `out`, before any runs."""
    seen: dict[Path, PathLike] = {}
    for report in reports:
        name = _trace_name(report, options)
        if name in seen:
            raise ValueError(
                f"{os.fspath(seen[name])} and {os.fspath(report)} would both be written to "
                f"{out / name}; convert them into different directories"
            )
        seen[name] = report


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
    with _temporaries.directory() as directory:
        table = Path(directory) / "table.csv"
        _cli.run([*args, *(["--format", "csv"] if csv_flag else []), "-o", table])
        return read_csv(table, backend)


def _frame(
    reports: Sequence[PathLike],
    outcomes: list,
    rank_from_name: str | None,
    backend: str,
    errors: str,
    rows: Any = None,
) -> Any:
    """One DataFrame of the reports' results: columns ``report`` and
    ``rank`` first, each report's rows in the order of `reports`; a failed
    report, with ``errors="row"``, a row of its own with its ``error``.
    `rows` turns a value that is not a DataFrame into one row's cells."""
    numbered = _ranks.ranks(reports, rank_from_name)
    parts = []
    for report, (rank, _), outcome in zip(reports, numbered, outcomes):
        named = {"report": os.fspath(report), "rank": rank}
        if outcome.error is not None:
            parts.append(_rows(backend, [{**named, "error": _parallel.describe(outcome.error)}]))
            continue
        value = outcome.value
        if rows is not None:
            part = _rows(backend, [{**named, **rows(value)}])
        else:
            part = _with_columns(value, named, backend)
        if errors == "row":
            part = _with_columns(part, {"error": None}, backend, first=False)
        parts.append(part)
    return _concat(parts, backend)


def _rows(backend: str, rows: list[dict]) -> Any:
    if backend == "polars":
        import polars

        return polars.DataFrame(rows)
    import pandas

    return pandas.DataFrame(rows)


def _with_columns(frame: Any, values: dict, backend: str, first: bool = True) -> Any:
    """`frame` with a column for each of `values` (one value in every row),
    before its own columns or after them."""
    if backend == "polars":
        import polars

        extra = [polars.lit(v).alias(k) for k, v in values.items()]
        if first:
            return frame.select([*extra, polars.all()])
        return frame.with_columns(extra)
    frame = frame.copy()
    for position, (name, value) in enumerate(values.items()):
        frame.insert(position if first else len(frame.columns), name, value)
    return frame


def _concat(parts: list, backend: str) -> Any:
    """The parts one below the other; where a row of errors leaves integer
    columns empty, they stay integers (pandas' nullable Int64), not reals."""
    if backend == "polars":
        import polars

        return polars.concat(parts, how="diagonal_relaxed")
    import pandas

    joined = pandas.concat(parts, ignore_index=True, sort=False)
    integers = {
        column
        for part in parts
        for column, dtype in part.dtypes.items()
        if pandas.api.types.is_integer_dtype(dtype)
    }
    for column in integers:
        if not pandas.api.types.is_integer_dtype(joined[column].dtype):
            joined[column] = joined[column].astype("Int64")
    return joined


def stats(
    report: PathLike | Sequence[PathLike],
    report_name: str | Sequence[str],
    *,
    backend: str = "pandas",
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    rank_from_name: str | None = None,
    **options: Any,
) -> Any:
    """One summary of `nsys stats` (``"cuda_gpu_kern_sum"``, ``"nvtx_sum"``,
    or its old name ``"gpukernsum"``...) of a report, as a DataFrame with the
    columns of ``nsys2perfetto stats --format csv``. ``group_names=True``
    sums NVTX ranges by group name (``aten::mm, op_id = 317126`` as
    ``aten::mm``; see ``stats --help``).

    A list of summaries gives a dict of them, by the names given. A summary
    the report has no data for (kernels of a report without any) is an
    empty DataFrame and a :class:`NoDataWarning` saying why, as the program
    says "no data".

    A list of reports (one per rank of a job, say) gives one DataFrame of
    them all: columns ``report`` and ``rank`` (``merge``'s rule: the
    export's ``MPI_RANKS``, else ``rank_from_name``'s match in the file
    name, else the place in the list), then the summary's, each report's
    rows in the order of the list. Each report's work runs on `client` (a
    ``dask.distributed.Client`` or any ``concurrent.futures.Executor``; its
    workers need this package installed), else here `jobs` at a time
    (default: the number of cores). A report that fails raises
    :class:`Error` naming it (``errors="raise"``), or becomes a row with
    its message in column ``error`` (``errors="row"``).
    """
    check_backend(backend)
    _parallel.check_errors(errors)
    names = [report_name] if isinstance(report_name, str) else list(report_name)
    if not _is_many(report):
        if client is not None:
            raise ValueError("client= runs the work of a list of reports")
        tables = _stats_tables(report, names, backend, options)
        return tables[report_name] if isinstance(report_name, str) else tables
    reports = list(report)
    outcomes = _parallel.run_each(
        _stats_tables, reports, client=client, jobs=jobs, errors=errors,
        names=names, backend=backend, options=options,
    )
    tables = {}
    for name in names:
        each = [_parallel.Outcome(o.report, o.value and o.value[name], o.error) for o in outcomes]
        tables[name] = _frame(reports, each, rank_from_name, backend, errors)
    return tables[report_name] if isinstance(report_name, str) else tables


def _stats_tables(
    report: PathLike, names: Sequence[str], backend: str, options: Mapping[str, Any]
) -> dict[str, Any]:
    """The summaries `names` of one report, by name; an empty one with the
    program's reason for it as a NoDataWarning."""
    tables = {}
    for name in names:
        args = ["stats", report, "--report", name, *_cli.flags(options)]
        table = _table(args, backend)
        if len(table) == 0:
            _cli.warn(
                f"{name} of {os.fspath(report)}: {_no_data(args)}", _cli.NoDataWarning, stacklevel=2
            )
        tables[name] = table
    return tables


_NO_DATA = re.compile(r"^\s*\((no data.*)\)\s*$", re.MULTILINE)


def _no_data(args: list[Any]) -> str:
    """Why a summary is empty, in the program's words (``no data: the
    export has no CUPTI_ACTIVITY_KIND_KERNEL``): its table as printed for a
    terminal says so (the CSV has only the header)."""
    _, printed, _ = _cli.run(args)
    said = _NO_DATA.search(printed)
    return said.group(1) if said else "no data"


def analyze(
    report: PathLike | Sequence[PathLike],
    *,
    backend: str = "pandas",
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    rank_from_name: str | None = None,
    **options: Any,
) -> Any:
    """The findings of the rules of `nsys analyze` on a report, every one of
    them (unless ``rows=N``), as a DataFrame with the columns of
    ``nsys2perfetto analyze --format csv``: a row per finding, and a row per
    rule that could not run, saying why in ``Skipped``. Options:
    ``rule=[...]``, ``gap=MS``, ``chunks=N``, ``util_threshold=PERCENT``.
    A list of reports gives one DataFrame of them all, as for :func:`stats`."""
    check_backend(backend)
    _parallel.check_errors(errors)
    options = {"rows": 0, **options}
    if not _is_many(report):
        if client is not None:
            raise ValueError("client= runs the work of a list of reports")
        return _analyze_one(report, backend, options)
    reports = list(report)
    outcomes = _parallel.run_each(
        _analyze_one, reports, client=client, jobs=jobs, errors=errors,
        backend=backend, options=options,
    )
    return _frame(reports, outcomes, rank_from_name, backend, errors)


def _analyze_one(report: PathLike, backend: str, options: Mapping[str, Any]) -> Any:
    return _table(["analyze", report, *_cli.flags(options)], backend)


def report(
    reports: PathLike | Iterable[PathLike],
    out: PathLike | None = None,
    *,
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    **options: Any,
) -> Any:
    """Where the GPU time of each run went: the page of ``nsys2perfetto
    report``. Without `out`, returns the page as a dict, the program's JSON
    (``{"runs": [...]}``, with ``"steps"`` where ``step="ProfilerStep*"`` is
    given); with `out` (``.html``, ``.md`` or ``.json``), writes the page
    there and returns its path. Options are `report`'s flags: ``kind=
    ["attention=flash|fmha"]``, ``step="ProfilerStep*"``,
    ``rank_from_name=r"rank(\\d+)"``, ``nsys="/path/to/nsys"``.

    With `client` (or `jobs`), each run of the page is computed on its own
    there, and the page (``{"runs": [...]}``, in the order of `reports`) is
    the program's for them all; a failed report raises, or with
    ``errors="row"`` is a run ``{"path": ..., "error": ...}``. Steps across
    ranks need every rank at once: ``step=`` runs here, in one program;
    :func:`steps` measures each rank on `client` and compares them here."""
    import json

    _parallel.check_errors(errors)
    if isinstance(reports, (str, os.PathLike)):
        reports = [reports]
    reports = list(reports)
    if client is not None or jobs is not None:
        if out is not None or options.get("step"):
            raise ValueError(
                "client=/jobs= compute each run's page apart: without out= and step= "
                "(steps across ranks compare every rank at once: steps() measures each on a client)"
            )
        outcomes = _parallel.run_each(
            _report_runs, reports, client=client, jobs=jobs, errors=errors, options=options
        )
        runs = []
        for report_path, outcome in zip(reports, outcomes):
            if outcome.error is not None:
                runs.append({"path": os.fspath(report_path), "error": _parallel.describe(outcome.error)})
            else:
                runs += outcome.value
        return {"runs": runs}
    if out is not None:
        _cli.run(["report", *reports, "-o", out, *_cli.flags(options)])
        return Path(out)
    with _temporaries.directory() as directory:
        page = Path(directory) / "page.json"
        _cli.run(["report", *reports, "-o", page, *_cli.flags(options)])
        return json.loads(page.read_text(encoding="utf-8"))


def _report_runs(report: PathLike, options: Mapping[str, Any]) -> list:
    """The runs of one report's page."""
    import json

    with _temporaries.directory() as directory:
        page = Path(directory) / "page.json"
        _cli.run(["report", report, "-o", page, *_cli.flags(options)])
        return json.loads(page.read_text(encoding="utf-8"))["runs"]


def compare(
    a: PathLike,
    b: PathLike,
    *,
    backend: str = "pandas",
    fail_if: str | Sequence[str] | None = None,
    **options: Any,
) -> Any:
    """What changed between two runs (kernels, CUDA graphs, API calls, NVTX
    ranges), as a DataFrame with the columns of ``nsys2perfetto compare
    --format csv``. Options: ``kind=["kernel", "nvtx"]``, ``top=N``,
    ``trace="both.perfetto-trace"``, ``group_names=True`` (NVTX ranges by
    group name, as for `stats`).

    ``fail_if=["gpu_time>+5%", "kernel:.*gemm.*>+10%"]``: the rules of
    ``compare --fail-if``; where one breaks, :class:`RuleBroken` is raised,
    its message the program's lines, one per broken rule."""
    if not fail_if:
        return _table(["compare", a, b, *_cli.flags(options)], backend)
    rules = [fail_if] if isinstance(fail_if, str) else list(fail_if)
    check_backend(backend)
    with _temporaries.directory() as directory:
        table = Path(directory) / "table.csv"
        status, _, stderr = _cli.run(
            ["compare", a, b, *_cli.flags(options), "--format", "csv", "-o", table,
             *[arg for rule in rules for arg in ("--fail-if", rule)]],
            ok_statuses=(0, _cli.RULE_BROKEN),
        )
        if status == _cli.RULE_BROKEN:
            lines = [
                line[len(_cli.BROKEN):] for line in stderr.splitlines()
                if line.startswith(_cli.BROKEN)
            ]
            raise _cli.RuleBroken("\n".join(lines), status, stderr, lines)
        # Two CSV tables to a file go to a file each, named after it:
        # the comparison to table_compare.csv, the verdicts beside it.
        return read_csv(Path(directory) / "table_compare.csv", backend)


def series(
    runs: Mapping[Any, PathLike],
    events: Sequence[str],
    *,
    name: str = "p",
    backend: str = "pandas",
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    **options: Any,
) -> Any:
    """Chosen events measured across runs that differ in one parameter:
    `runs` maps each value of the parameter `name` to its report, in order;
    `events` are `series`' patterns (``"gemm"``, ``"api:^cudaMemcpy"``,
    ``"nvtx:forward"``, ``"nvtx-gpu:step"``). A DataFrame with the columns of
    ``nsys2perfetto series``' CSV; ``svg="plot.svg"`` also draws the plot;
    ``group_names=True`` matches NVTX patterns against group names, as for
    `stats`.

    With `client` (or `jobs`), each run is measured on its own there and
    the columns joined: the program's table for them all. A failed run
    raises, or with ``errors="row"`` its columns are one, ``NAME=VALUE
    error``, holding its message."""
    if isinstance(events, str):
        events = [events]
    check_backend(backend)
    _parallel.check_errors(errors)
    if client is None and jobs is None:
        params: list[Any] = []
        for value, report_path in runs.items():
            params += ["--param", f"{name}={value}", report_path]
        return _table(
            ["series", *params, *_cli.flags(options), "--events", *events], backend, csv_flag=False
        )
    if options.get("svg"):
        raise ValueError("svg= draws every run at once: without client= and jobs=")
    labels = [f"{name}={value}" for value in runs]
    outcomes = _parallel.run_each(
        _series_one, list(zip(labels, runs.values())), client=client, jobs=jobs,
        errors=errors, events=list(events), backend=backend, options=options,
    )
    return _join_series(labels, outcomes, backend)


def _series_one(
    labelled: tuple[str, PathLike], events: list[str], backend: str, options: Mapping[str, Any]
) -> Any:
    label, report_path = labelled
    return _table(
        ["series", "--param", label, report_path, *_cli.flags(options), "--events", *events],
        backend,
        csv_flag=False,
    )


def _join_series(labels: list[str], outcomes: list, backend: str) -> Any:
    """The runs' tables side by side on their first columns (event, kind),
    whose rows are the events in the order asked, the same in every run."""
    keys: Any = None
    columns: list = []
    for label, outcome in zip(labels, outcomes):
        if outcome.error is None:
            frame = outcome.value
            if keys is None:
                keys = frame[["event", "kind"]]
            columns.append(frame.drop(["event", "kind"]) if backend == "polars"
                           else frame.drop(columns=["event", "kind"]))
        else:
            columns.append({f"{label} error": _parallel.describe(outcome.error)})
    if keys is None:
        return _rows(backend, [{f"{label} error": _parallel.describe(o.error)}
                               for label, o in zip(labels, outcomes)])
    height = len(keys)
    parts = [keys] + [
        c if not isinstance(c, dict) else _rows(backend, [c] * height) for c in columns
    ]
    if backend == "polars":
        import polars

        return polars.concat(parts, how="horizontal")
    import pandas

    return pandas.concat([p.reset_index(drop=True) for p in parts], axis=1)


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
