"""Each report's work run where the caller says: one after another here,
`jobs` at a time on threads of this process (each run is a process of its
own, so threads suffice), or on a `concurrent.futures.Executor` or a
`dask.distributed.Client` given as ``client=``.

The work of one report is a plain function of module level (it travels to
the workers by pickle, so they need this package installed, as for any Dask
job). What comes back is one :class:`Outcome` per report, in the order of
the reports whatever order they finished in; a report whose work failed,
or whose worker died or was restarted under it, is an outcome with its
error, never a missing one. Whether such an outcome raises or becomes a row
is the caller's choice (``errors="raise"`` or ``"row"``).

A function over reports is then three parts: the work of one report (a
run of the program, returning a DataFrame or a value), :func:`run_each`,
and the combination of the outcomes in the caller (``_api._frame`` for
tables). Steps across ranks fit the same way: each rank's step durations
measured by ``report --step P --measure-only`` on a worker, the
cross-rank comparison made from them in the caller.
"""

from __future__ import annotations

import concurrent.futures
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from . import _cli

ERRORS = ("raise", "row")


@dataclass
class Outcome:
    """What one report's work gave: its `value`, or the `error` that ended it."""

    report: str
    value: Any = None
    error: BaseException | None = None
    warnings: list = field(default_factory=list)


def check_errors(errors: str) -> None:
    """Refuses an `errors` other than "raise" and "row" before anything runs."""
    if errors not in ERRORS:
        raise ValueError(f"errors={errors!r}: one of {', '.join(map(repr, ERRORS))}")


def run_each(
    work: Callable[..., Any],
    reports: Sequence[Any],
    *,
    client: Any = None,
    jobs: int | None = None,
    errors: str = "raise",
    **kwargs: Any,
) -> list[Outcome]:
    """``work(report, **kwargs)`` for each of `reports`, on `client` (an
    Executor or a Dask client) or here `jobs` at a time (default: the number
    of cores); the outcomes in the order of `reports`. With
    ``errors="raise"`` the first failed report (in input order) raises its
    error, naming the report; with ``"row"`` every outcome is returned."""
    check_errors(errors)
    if client is None:
        workers = max(1, min(jobs or os.cpu_count() or 1, len(reports) or 1))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            outcomes = _on_executor(pool, work, reports, kwargs)
    elif _is_dask_client(client):
        outcomes = _on_dask(client, work, reports, kwargs)
    elif isinstance(client, concurrent.futures.Executor):
        outcomes = _on_executor(client, work, reports, kwargs)
    else:
        raise TypeError(
            f"client={type(client).__name__}: a dask.distributed.Client or a "
            "concurrent.futures.Executor"
        )
    for outcome in outcomes:
        for category, message in outcome.warnings:
            _cli.warn(f"{outcome.report}: {message}", category, stacklevel=3)
    if errors == "raise":
        for outcome in outcomes:
            if outcome.error is not None:
                raise _naming(outcome) from outcome.error
    return outcomes


def _job(work: Callable[..., Any], report: Any, kwargs: dict) -> tuple[Any, list]:
    """One report's work where it runs, its warnings kept to be given to the
    caller (a worker's own would be lost in its log)."""
    token = _cli._collected.set([])
    try:
        value = work(report, **kwargs)
        return value, _cli._collected.get()
    finally:
        _cli._collected.reset(token)


def _naming(outcome: Outcome) -> BaseException:
    """The outcome's error as raised to the caller: the program's Error with
    the report named in front, anything else (a worker lost, a cancelled
    job) as an Error saying what happened to which report."""
    error = outcome.error
    if isinstance(error, _cli.Error):
        message = error.message
        if outcome.report not in message:
            message = f"{outcome.report}: {message}"
        return _cli.Error(message, error.returncode, error.stderr)
    return _cli.Error(f"{outcome.report}: {describe(error)}", 1, "")


def describe(error: BaseException) -> str:
    """One line for an error of a report's work, as a row's ``error`` cell."""
    if isinstance(error, _cli.Error):
        return error.message
    kind = type(error).__name__
    if kind == "KilledWorker":
        return f"its worker died while running it, each time it was tried ({error})"
    if isinstance(error, concurrent.futures.CancelledError) or kind == "CancelledError":
        return "its job was cancelled before it finished (the client restarted or closed)"
    text = str(error) or kind
    return text if kind in text else f"{kind}: {text}"


def _is_dask_client(client: Any) -> bool:
    """Whether `client` is a dask.distributed Client (judged without
    importing dask where the caller has not)."""
    return any(
        cls.__name__ == "Client" and cls.__module__.startswith("distributed")
        for cls in type(client).__mro__
    )


def _on_executor(
    executor: concurrent.futures.Executor,
    work: Callable[..., Any],
    reports: Sequence[Any],
    kwargs: dict,
) -> list[Outcome]:
    futures = [executor.submit(_job, work, report, kwargs) for report in reports]
    return [_outcome(report, future.result) for report, future in zip(reports, futures)]


def _on_dask(client: Any, work: Callable[..., Any], reports: Sequence[Any], kwargs: dict):
    # pure=False: the same report asked twice is two jobs (its file may have
    # changed in between), and each job's key is its own.
    futures = [client.submit(_job, work, report, kwargs, pure=False) for report in reports]
    try:
        return [_outcome(report, future.result) for report, future in zip(reports, futures)]
    finally:
        client.cancel(futures)


def _outcome(report: Any, result: Callable[[], Any]) -> Outcome:
    name = os.fspath(report) if isinstance(report, os.PathLike) else str(report)
    try:
        value, warned = result()
        return Outcome(name, value=value, warnings=warned)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:  # noqa: BLE001 - every failure is the report's outcome
        return Outcome(name, error=error)
