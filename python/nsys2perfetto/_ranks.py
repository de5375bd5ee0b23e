"""Which rank each report of a job is: the rule of ``nsys2perfetto merge``
(and of ``report --step``), so that a row of a DataFrame over many reports
names the rank the merged trace shows.

The rule, in order: the rank the export's ``MPI_RANKS`` table gives, where
every row of it names the same one; else the number that
``rank_from_name`` (a regular expression: its first group, or the whole
match) finds in the file's name; else the report's place among the inputs,
from 0. The test suite holds this to the program's own answer (``report
--step --format json``, whose ``ranks`` carry ``rank`` and ``rank_from``).

A report that is not an SQLite export (``.nsys-rep``, ``.qdrep``) has no
``MPI_RANKS`` to read until nsys exports it: its rank comes from its name or
its place, and ``rank_from`` says which.
"""

from __future__ import annotations

import os
import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Sequence

_SQLITE_MAGIC = b"SQLite format 3\0"
_NUMBER = re.compile(r"[+-]?[0-9]+")


def ranks(
    reports: Sequence[str | os.PathLike[str]], rank_from_name: str | None = None
) -> list[tuple[int, str]]:
    """Each report's rank and where it came from (``"mpi_ranks"``,
    ``"file_name"`` or ``"order"``, the words of ``report --step``'s JSON)."""
    pattern = re.compile(rank_from_name) if rank_from_name is not None else None
    found = []
    for place, report in enumerate(reports):
        rank = _mpi_rank(Path(report))
        if rank is not None:
            found.append((rank, "mpi_ranks"))
            continue
        named = _named_rank(pattern, Path(report).name) if pattern else None
        found.append((named, "file_name") if named is not None else (place, "order"))
    return found


def _mpi_rank(report: Path) -> int | None:
    """The one rank of an SQLite export's MPI_RANKS, if it names exactly one."""
    try:
        with open(report, "rb") as file:
            if file.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                return None
    except OSError:
        return None  # the work on it will say why it cannot be read
    uri = f"{report.resolve().as_uri()}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as db:
            columns = {row[1] for row in db.execute("PRAGMA table_info(MPI_RANKS)")}
            if not {"globalTid", "rank"} <= columns:
                return None
            found = db.execute(
                "SELECT DISTINCT rank FROM MPI_RANKS "
                "WHERE globalTid IS NOT NULL AND rank IS NOT NULL LIMIT 2"
            ).fetchall()
    except sqlite3.Error:
        return None
    return int(found[0][0]) if len(found) == 1 else None


def _named_rank(pattern: re.Pattern[str], name: str) -> int | None:
    """The number `pattern` finds in a file name: its first group, or the
    whole match where the group took no part."""
    found = pattern.search(name)
    if found is None:
        return None
    text = found.group(1) if found.re.groups and found.group(1) is not None else found.group(0)
    return int(text) if _NUMBER.fullmatch(text) else None
