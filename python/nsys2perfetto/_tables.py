"""The program's tables (`--format csv`) as DataFrames.

The one place that reads them: columns keep the CSV header's names exactly,
empty cells (an average over nothing, a share a kind has not) are missing
values, and every other cell keeps its text where the column is text.
"""

from __future__ import annotations

import os
from typing import Any

BACKENDS = ("pandas", "polars")


def check_backend(backend: str) -> None:
    """Refuses a backend other than pandas and polars before anything runs."""
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: one of {', '.join(map(repr, BACKENDS))}")


def read_csv(path: str | os.PathLike[str], backend: str) -> Any:
    """The CSV table at `path` as a pandas or polars DataFrame (after the
    line that says which table of which report it is, where it has one)."""
    skip = 1 if _is_marked(path) else 0
    if backend == "polars":
        return _polars_csv(path, skip)
    import pandas

    # Only an empty cell is missing: a kernel or range may be named "NA".
    return pandas.read_csv(path, skiprows=skip, keep_default_na=False, na_values=[""])


def _is_marked(path: str | os.PathLike[str]) -> bool:
    """Whether the table starts with its marker line, ``# TITLE (NAME) of
    FILE``, as the program writes before each table of ``--format csv``."""
    with open(path, encoding="utf-8") as table:
        first = table.readline()
    return first.startswith("# ") and ") of " in first


def _polars_csv(path: str | os.PathLike[str], skip: int) -> Any:
    """The CSV read as text, then each column as integers or reals where all
    its cells are: the whole column decides, as in pandas (a column whose
    first rows are empty, such as a share a kind has not, may hold reals
    further down), at a fraction of the cost of polars inferring types
    from every row."""
    import polars

    frame = polars.read_csv(path, skip_rows=skip, infer_schema_length=0)
    columns = []
    for column in frame.get_columns():
        for dtype in (polars.Int64, polars.Float64):
            try:
                column = column.cast(dtype, strict=True)
                break
            except polars.exceptions.PolarsError:
                continue
        columns.append(column)
    return polars.DataFrame(columns)
