"""Running the command-line program the wheel carries.

Every function of the package is one run of the `nsys2perfetto` program:
its flags are built here from keyword arguments, its errors become
:class:`Error`, its warnings Python warnings, and Ctrl-C stops it the way
it stops at a terminal (it cleans up, then the interruption goes on).
"""

from __future__ import annotations

import contextvars
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import warnings
from pathlib import Path
from typing import IO, Any, Iterable, Mapping, Sequence

PROGRAM = "nsys2perfetto"
_ERROR = f"{PROGRAM}: error: "
_WARNING = f"{PROGRAM}: warning: "


class Error(Exception):
    """A run of nsys2perfetto that failed.

    ``str(error)`` is the program's one-line message (without its
    ``nsys2perfetto: error:`` prefix); ``returncode`` its exit status (1 for
    a failure, 2 for options it refused); ``stderr`` all that it printed.
    """

    def __init__(self, message: str, returncode: int, stderr: str) -> None:
        super().__init__(message)
        self.message = message
        self.returncode = returncode
        self.stderr = stderr


class RuleBroken(Error):
    """A rule of ``compare(..., fail_if=[...])`` broke: the program exited
    with status 3. ``lines`` are its lines, one per broken rule (``RULE: A
    ..., B ..., change ... > LIMIT``), without their prefix; ``str(error)``
    is them joined by newlines."""

    def __init__(self, message: str, returncode: int, stderr: str, lines: list[str]) -> None:
        super().__init__(message, returncode, stderr)
        self.lines = lines


#: The exit status of ``compare --fail-if`` where a rule broke.
RULE_BROKEN = 3
#: How the program starts the line of a broken rule.
BROKEN = "nsys2perfetto: rule broken: "


class Nsys2PerfettoWarning(UserWarning):
    """What the program warns about a result it made nevertheless (events it
    could not place, tables it does not convert)."""


class NoDataWarning(Nsys2PerfettoWarning):
    """A table that is empty because the report lacks what it summarises
    (``stats`` of kernels of a report without any), as the program says
    "no data" and why."""


# Where the warnings of one report's work go when it runs on a worker
# (a list of (category, message)), to be given to the caller there; unset,
# they are Python warnings at once.
_collected: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "nsys2perfetto_warnings", default=None
)


def warn(message: str, category: type = Nsys2PerfettoWarning, stacklevel: int = 3) -> None:
    """A warning of the program's (or of the package's about its result)."""
    collected = _collected.get()
    if collected is not None:
        collected.append((category, message))
    else:
        warnings.warn(message, category, stacklevel=stacklevel + 1)


def program() -> str:
    """The path of the nsys2perfetto program: ``$NSYS2PERFETTO`` if set,
    else the one installed with this package (in the environment's scripts
    directory), else the one on PATH."""
    chosen = os.environ.get("NSYS2PERFETTO")
    if chosen:
        return chosen
    name = PROGRAM + (".exe" if os.name == "nt" else "")
    user = "nt_user" if os.name == "nt" else "posix_user"
    directories = [sysconfig.get_path("scripts")]
    if user in sysconfig.get_scheme_names():
        directories.append(sysconfig.get_path("scripts", user))
    for directory in directories:
        candidate = Path(directory) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(PROGRAM)
    if found:
        return found
    raise Error(
        f"the {PROGRAM} program is not installed beside this package nor on PATH "
        f"(reinstall with `pip install {PROGRAM}`, or set NSYS2PERFETTO to its path)",
        1,
        "",
    )


def flags(options: Mapping[str, Any]) -> list[str]:
    """Keyword arguments as the program's flags: ``gpu_in_nvtx=True`` is
    ``--gpu-in-nvtx``, ``level=6`` is ``--level 6``, ``exclude=["samples",
    "sched"]`` is ``--exclude samples --exclude sched``, ``j=4`` is ``-j 4``;
    False and None leave the flag out."""
    out: list[str] = []
    for key, value in options.items():
        flag = ("-" if len(key) == 1 else "--") + key.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return out


def _pump(source: IO[bytes], lines: list[str], echo: IO[str] | None) -> None:
    """Reads a pipe of the program to its end, keeping its lines and, where
    asked, writing them on as they come (but warnings, which become Python
    warnings once the program is done)."""
    for raw in iter(source.readline, b""):
        line = raw.decode("utf-8", "replace")
        lines.append(line)
        if echo is not None and not line.startswith(_WARNING):
            echo.write(line)
            echo.flush()
    source.close()


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    echo_stderr: bool = False,
    echo_stdout: bool = False,
    ok_statuses: Iterable[int] = (0,),
) -> tuple[int, str, str]:
    """Runs the program with `args`; returns its exit status, standard output
    and standard error, or raises :class:`Error` with its one-line message
    when the status is not among `ok_statuses`.

    The program runs in a process group of its own, so that Ctrl-C (a
    terminal's, or a notebook's "interrupt kernel") reaches this process
    only; it is passed on as one SIGINT, on which the program stops, removes
    what it was writing and exits. KeyboardInterrupt is raised once it has.
    A second Ctrl-C while it cleans up is passed on too, and ends it at once.
    """
    command = [program(), *map(os.fspath, args)]
    try:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        raise Error(f"cannot run {command[0]}: {e.strerror}", 1, "") from e
    out_lines: list[str] = []
    err_lines: list[str] = []
    readers: list[threading.Thread] = []
    interrupted = False
    # Every Ctrl-C from here on is passed on, whenever it comes: one that came
    # while the readers were being started, before the wait, used to leave the
    # program running alone in its session, with what it was writing.
    while True:
        try:
            if not readers:
                readers = [
                    threading.Thread(
                        target=_pump,
                        args=(process.stdout, out_lines, sys.stdout if echo_stdout else None),
                        daemon=True,
                    ),
                    threading.Thread(
                        target=_pump,
                        args=(process.stderr, err_lines, sys.stderr if echo_stderr else None),
                        daemon=True,
                    ),
                ]
            for reader in readers:
                if reader.ident is None:
                    reader.start()
            status = process.wait()
            break
        except KeyboardInterrupt:
            interrupted = True
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
    for reader in readers:
        reader.join()
    stdout, stderr = "".join(out_lines), "".join(err_lines)
    if interrupted:
        raise KeyboardInterrupt
    if status not in tuple(ok_statuses):
        raise Error(_message(stderr, status), status, stderr)
    for line in stderr.splitlines():
        if line.startswith(_WARNING):
            warn(line[len(_WARNING) :], stacklevel=3)
    return status, stdout, stderr


def _message(stderr: str, status: int) -> str:
    """The program's one-line error message in `stderr`."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(_ERROR):
            return line[len(_ERROR) :]
    if lines:
        last = lines[-1]
        return last[len(PROGRAM) + 2 :] if last.startswith(PROGRAM + ": ") else last
    if status < 0:
        return f"{PROGRAM} was killed by signal {-status}"
    return f"{PROGRAM} exited with status {status}"
