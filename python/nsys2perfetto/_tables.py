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


INCOMPLETE = "# incomplete: "


def read_csv(path: str | os.PathLike[str], backend: str) -> Any:
    """The CSV table at `path` as a pandas or polars DataFrame. A table the
    program writes to a file of its own starts with its header: it is read
    as it is (no line is skipped, no character taken for a comment: names
    such as ``ProfilerStep#3`` stay whole). A table whose numbers are
    incomplete (a table of the export could not be read) starts with a
    ``# incomplete: ...`` line per reason, which the program's warning (a
    :class:`Nsys2PerfettoWarning`) says too: the table is read after them."""
    skip = _incomplete_lines(path)
    if backend == "polars":
        return _polars_csv(path, skip)
    import pandas

    # Only an empty cell is missing: a kernel or range may be named "NA".
    return pandas.read_csv(path, keep_default_na=False, na_values=[""], skiprows=skip)


def _incomplete_lines(path: str | os.PathLike[str]) -> int:
    """How many ``# incomplete:`` lines the table starts with."""
    lines = 0
    with open(path, encoding="utf-8", newline="") as f:
        for line in f:
            if not line.startswith(INCOMPLETE):
                break
            lines += 1
    return lines


def _polars_csv(path: str | os.PathLike[str], skip: int = 0) -> Any:
    """The CSV read as text, then each column as integers or reals where all
    its cells are: the whole column decides, as in pandas (a column whose
    first rows are empty, such as a share a kind has not, may hold reals
    further down), at a fraction of the cost of polars inferring types
    from every row."""
    import polars

    frame = polars.read_csv(path, infer_schema_length=0, skip_rows=skip)
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
