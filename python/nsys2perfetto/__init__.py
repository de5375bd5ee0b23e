"""nsys2perfetto: NVIDIA Nsight Systems reports as Perfetto traces, and their
summaries, findings and comparisons as DataFrames.

Each function runs the ``nsys2perfetto`` program installed with this
package (the same as ``cargo install nsys2perfetto``)::

    import nsys2perfetto as n2p

    trace = n2p.convert("run.nsys-rep")                  # run.perfetto-trace
    kernels = n2p.stats("run.sqlite", "cuda_gpu_kern_sum")  # a pandas DataFrame
    changes = n2p.compare("a.sqlite", "b.sqlite", backend="polars")
    page = n2p.report("run.sqlite")                      # GPU busy/idle, kinds, ... as a dict
    n2p.open_in_notebook(trace)                          # a button for ui.perfetto.dev

    # Many reports (the ranks of a job) in one DataFrame, with columns
    # "report" and "rank", each report's work on a Dask cluster (or any
    # concurrent.futures.Executor; without client=, here, jobs=N at a time):
    kernels = n2p.stats(ranks, "cuda_gpu_kern_sum", client=dask_client)
    job = n2p.steps(ranks, step="ProfilerStep*", client=dask_client)
    job.per_step                                         # slowest rank, skew per step

Options are the command's flags, dashes written as underscores. A failure
raises :class:`Error` with the program's one-line message; Ctrl-C stops the
program, which removes what it was writing, and raises KeyboardInterrupt.
"""

from importlib.metadata import PackageNotFoundError, version

from ._api import Profiled, analyze, compare, convert, merge, profile, report, series, stats
from ._cli import Error, NoDataWarning, Nsys2PerfettoWarning, RuleBroken, program
from ._ranks import ranks
from ._steps import Steps, steps
from ._notebook import PerfettoButton, open_in_notebook

try:
    __version__ = version("nsys2perfetto")
except PackageNotFoundError:  # run from a checkout without being installed
    __version__ = "unknown"

__all__ = [
    "Error",
    "RuleBroken",
    "NoDataWarning",
    "Nsys2PerfettoWarning",
    "PerfettoButton",
    "Profiled",
    "analyze",
    "compare",
    "convert",
    "merge",
    "open_in_notebook",
    "profile",
    "report",
    "program",
    "ranks",
    "series",
    "stats",
    "steps",
    "Steps",
]
