"""Steps across the ranks of a job, at the scale of a cluster: each
report's steps measured apart, where the caller says (``report --step P
--measure-only`` on a worker, its documents returned as data), and the
cross-rank comparison (matching the steps, the slowest rank, the skew) made
here by the program from those documents, as ``report --step`` over the
reports themselves makes it: the same numbers.

What comes back is the page's ``steps`` section as tidy tables: a row per
rank, a row per step and rank, a row per step.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import _cli, _parallel, _ranks, _temporaries
from ._tables import check_backend


@dataclass
class Steps:
    """The job's steps, as :func:`steps` found them.

    ``ranks``: a row per rank compared (a report, or each process that
    recorded steps where a report holds several): ``label`` (``rank 3
    (host)``), ``report``, ``rank`` and ``rank_from`` (``merge``'s rule),
    ``pid``, ``steps``, ``open_steps``, ``gpus``, ``gpu_busy_ns`` (its GPU
    work over the whole capture), ``nvtx_ranges``, ``unattributed_gpu_ops``,
    ``slowest_in`` (steps it was slowest in); with ``errors="row"``, a row
    per failed report too, with its ``error``.

    ``times``: a row per step and rank, steps in the page's order, ranks in
    theirs: ``step`` (its place), ``step_name``, ``label``, ``rank``,
    ``name`` (the rank's own range), ``start_ns``, ``duration_ns``,
    ``gpu_busy_ns`` (GPU work within the step), ``slowest`` (whether the rank
    was the step's slowest); a rank that lacks the step has a row with
    ``missing`` true and no times.

    ``per_step``: a row per step: ``step``, ``step_name``, ``ranks`` (how
    many took it), ``missing`` (the labels of those that did not, joined by
    ``"; "``), ``slowest`` and ``fastest`` (labels) with their ``rank``s,
    ``median_ns``, ``lead_over_median_ns``, ``skew_ns`` (slowest less
    fastest); no slowest where fewer than two ranks took it.

    ``page``: the program's JSON of the steps (``skew``, ``notes``,
    ``matched_by``...), as ``report --step --format json`` has it under
    ``"steps"``. ``out``: the page written, where ``out=`` was given.
    """

    ranks: Any
    times: Any
    per_step: Any
    page: dict
    out: Path | None = None


def steps(
    reports: Sequence[str | os.PathLike[str]],
    step: str,
    *,
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    rank_from_name: str | None = None,
    out: str | os.PathLike[str] | None = None,
    format: str | None = None,
    backend: str = "pandas",
    **options: Any,
) -> Steps:
    """The steps of a job (the NVTX ranges `step` matches, a glob such as
    ``"ProfilerStep*"``) across its ranks, one report per rank: each report
    measured on `client` (a ``dask.distributed.Client`` or a
    ``concurrent.futures.Executor``; without it here, `jobs` at a time),
    the ranks compared here, as ``report --step`` compares them. Returns a
    :class:`Steps` of DataFrames (pandas, or polars with
    ``backend="polars"``), and with `out` (``.html``, ``.md`` or ``.json``)
    writes the program's page of the steps there, in the format its name
    says or `format` (``"html"``, ``"md"``, ``"json"``). Ranks are named by
    ``merge``'s rule (`rank_from_name` as there). Options are `report`'s
    flags for measuring (``nsys="/path/to/nsys"``).

    A report that fails raises :class:`Error` naming it
    (``errors="raise"``), or with ``errors="row"`` is left out of the
    comparison and is a row of ``ranks`` with its ``error`` (ranks numbered
    by their place are then numbered among the reports measured)."""
    check_backend(backend)
    _parallel.check_errors(errors)
    if format is not None and out is None:
        raise ValueError(
            f"format={format!r} is the format of the page out= writes: give out= too "
            "(the steps come back as tables whatever the format)"
        )
    if isinstance(reports, (str, bytes, os.PathLike)):
        reports = [reports]
    reports = list(reports)
    if not reports:
        raise ValueError("steps() needs one report or more")
    outcomes = _parallel.run_each(
        _measure, reports, client=client, jobs=jobs, errors=errors, step=step, options=options
    )
    measured = [o.value for o in outcomes if o.error is None]
    if not measured:
        failed = "; ".join(f"{o.report}: {_parallel.describe(o.error)}" for o in outcomes)
        raise _cli.Error(f"no report of the job could be measured ({failed})", 1, "")
    page, written = _combine(measured, step, rank_from_name, out, format)
    failed = [(report, outcome) for report, outcome in zip(reports, outcomes) if outcome.error]
    return Steps(
        ranks=_ranks_table(page, reports, failed, rank_from_name, errors, backend),
        times=_times_table(page, backend),
        per_step=_per_step_table(page, backend),
        page=page,
        out=written,
    )


def _measure(report: Any, step: str, options: Mapping[str, Any]) -> list[dict]:
    """One report's measured-steps documents (one per report), as data."""
    _, printed, _ = _cli.run(
        ["report", "--step", step, "--measure-only", report, *_cli.flags(options)]
    )
    return [json.loads(line) for line in printed.splitlines() if line.strip()]


def _combine(
    measured: list[list[dict]],
    step: str,
    rank_from_name: str | None,
    out: str | os.PathLike[str] | None,
    format: str | None = None,
) -> tuple[dict, Path | None]:
    """The program's comparison of the measured documents, in the reports'
    order (their place numbers the ranks the rank rule leaves unnumbered):
    its steps JSON, and the page written to `out` if given (in `format`,
    else as its name says)."""
    naming = ["--rank-from-name", rank_from_name] if rank_from_name is not None else []
    with _temporaries.directory() as directory:
        files = []
        for place, documents in enumerate(measured):
            path = Path(directory) / f"{place:08d}.steps.json"
            path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
            files.append(path)
        page_json = Path(directory) / "page.json"
        _cli.run(["report", "--step", step, *files, *naming, "-o", page_json])
        page = json.loads(page_json.read_text(encoding="utf-8"))["steps"]
        if out is not None:
            formatted = ["--format", format] if format is not None else []
            _cli.run(["report", "--step", step, *files, *naming, *formatted, "-o", out])
    return page, (Path(out) if out is not None else None)


def _ranks_table(
    page: dict,
    reports: list,
    failed: list,
    rank_from_name: str | None,
    errors: str,
    backend: str,
) -> Any:
    rows = [
        {
            "label": r["label"],
            "report": r["input"],
            "rank": r["rank"],
            "rank_from": r["rank_from"],
            "pid": r["pid"],
            "steps": r["steps"],
            "open_steps": r["open_steps"],
            "gpus": ",".join(map(str, r["gpus"])),
            "gpu_busy_ns": r["gpu_busy_ns"],
            "nvtx_ranges": r["nvtx_ranges"],
            "unattributed_gpu_ops": r["unattributed_gpu_ops"],
            "slowest_in": r["slowest_in"],
        }
        for r in page["ranks"]
    ]
    if errors == "row":
        for row in rows:
            row["error"] = None
        numbered = dict(zip(map(os.fspath, reports), _ranks.ranks(reports, rank_from_name)))
        for report, outcome in failed:
            rank, rank_from = numbered[os.fspath(report)]
            rows.append(
                {
                    "report": os.fspath(report),
                    "rank": rank,
                    "rank_from": rank_from,
                    "error": _parallel.describe(outcome.error),
                }
            )
    columns = [*_RANK_COLUMNS, *(["error"] if errors == "row" else [])]
    return _frame(rows, columns, backend)


def _times_table(page: dict, backend: str) -> Any:
    ranks = page["ranks"]
    rows = []
    for place, step in enumerate(page["steps"]):
        slowest = step["slowest"]["rank"] if step["slowest"] else None
        for index, (rank, time) in enumerate(zip(ranks, step["times"])):
            time = time or {}
            rows.append(
                {
                    "step": place,
                    "step_name": step["name"],
                    "label": rank["label"],
                    "rank": rank["rank"],
                    "name": time.get("name"),
                    "start_ns": time.get("start_ns"),
                    "duration_ns": time.get("duration_ns"),
                    "gpu_busy_ns": time.get("gpu_busy_ns"),
                    "slowest": index == slowest,
                    "missing": not time,
                }
            )
    return _frame(rows, _TIME_COLUMNS, backend)


def _per_step_table(page: dict, backend: str) -> Any:
    ranks = page["ranks"]
    rows = []
    for place, step in enumerate(page["steps"]):
        slowest = step["slowest"] or {}
        took = sum(1 for t in step["times"] if t is not None)

        def label(key: str) -> Any:
            return ranks[slowest[key]]["label"] if key in slowest else None

        def number(key: str) -> Any:
            return ranks[slowest[key]]["rank"] if key in slowest else None

        rows.append(
            {
                "step": place,
                "step_name": step["name"],
                "ranks": took,
                "missing": "; ".join(ranks[r]["label"] for r in step["missing"]),
                "slowest": label("rank"),
                "slowest_rank": number("rank"),
                "fastest": label("fastest_rank"),
                "fastest_rank": number("fastest_rank"),
                "median_ns": slowest.get("median_ns"),
                "lead_over_median_ns": slowest.get("lead_over_median_ns"),
                "skew_ns": slowest.get("skew_ns"),
            }
        )
    return _frame(rows, _STEP_COLUMNS, backend)


_RANK_COLUMNS = [
    "label", "report", "rank", "rank_from", "pid", "steps", "open_steps", "gpus",
    "gpu_busy_ns", "nvtx_ranges", "unattributed_gpu_ops", "slowest_in",
]
_TIME_COLUMNS = [
    "step", "step_name", "label", "rank", "name", "start_ns", "duration_ns", "gpu_busy_ns",
    "slowest", "missing",
]
_STEP_COLUMNS = [
    "step", "step_name", "ranks", "missing", "slowest", "slowest_rank", "fastest",
    "fastest_rank", "median_ns", "lead_over_median_ns", "skew_ns",
]
_INTEGERS = {
    "rank", "pid", "steps", "open_steps", "gpu_busy_ns", "nvtx_ranges", "unattributed_gpu_ops",
    "slowest_in", "step", "start_ns", "duration_ns", "ranks", "slowest_rank", "fastest_rank",
    "skew_ns",
}
# A median of an even count of ranks may fall between two integers.
_REALS = {"median_ns", "lead_over_median_ns"}


def _frame(rows: list[dict], columns: list[str], backend: str) -> Any:
    """The rows as a DataFrame of `columns` (those of an empty one too), its
    integer columns integers even where a cell is missing (pandas' nullable
    Int64), not reals."""
    rows = [
        {
            column: float(row[column]) if column in _REALS and row.get(column) is not None
            else row.get(column)
            for column in columns
        }
        for row in rows
    ]
    if backend == "polars":
        import polars

        if not rows:
            return polars.DataFrame({column: [] for column in columns})
        return polars.DataFrame(rows, infer_schema_length=None)
    import pandas

    frame = pandas.DataFrame(rows, columns=columns)
    for column in frame.columns:
        if column in _INTEGERS:
            frame[column] = frame[column].astype("Int64")
    return frame
