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
    """The CSV table at `path` as a pandas or polars DataFrame."""
    if backend == "polars":
        import polars

        # The whole file decides each column's type: a column whose first
        # rows are empty (no average yet) may hold reals further down.
        return polars.read_csv(path, infer_schema_length=None, null_values=[""])
    import pandas

    # Only an empty cell is missing: a kernel or range may be named "NA".
    return pandas.read_csv(path, keep_default_na=False, na_values=[""])
