"""The package's temporary folders, kept where the program keeps its own.

SIGTERM (a batch system's cancel, a notebook kernel's shutdown) ends Python
without running its ``finally`` blocks, so a ``TemporaryDirectory`` of its
own would stay behind. The program already cleans up after runs that died
(src/temporaries.rs): its folders live in one folder per user,
``<TMPDIR>/nsys2perfetto-<uid>`` (mode 0700), each named
``<kind>-<pid>-<random>``, and every run removes those whose pid is gone.
The package's folders follow that rule, so the program's next run removes
what a killed Python process left.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from ._cli import Error

# What the program's entries say they hold; no `-` in it (see `pid_of`).
KIND = "python"


def directory() -> tempfile.TemporaryDirectory:
    """A new temporary folder, removed when its ``with`` block ends, and
    by the program's next run if this process is killed before."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:
        # No uid to name the folder by, nor pids for the program to check.
        return tempfile.TemporaryDirectory(prefix="nsys2perfetto-")
    # As Rust's std::env::temp_dir(): $TMPDIR, else /tmp.
    folder = Path(os.environ.get("TMPDIR") or "/tmp") / f"nsys2perfetto-{geteuid()}"
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError as e:
        raise Error(f"cannot make {folder}: {e.strerror}", 1, "") from e
    # Another user's folder (or a link to one) could be read or filled by them.
    meta = os.lstat(folder)
    if not stat.S_ISDIR(meta.st_mode):
        raise Error(f"{folder} is not a folder", 1, "")
    if meta.st_uid != geteuid():
        raise Error(f"{folder} belongs to another user (uid {meta.st_uid}): remove it", 1, "")
    if meta.st_mode & 0o077:
        os.chmod(folder, 0o700)
    return tempfile.TemporaryDirectory(prefix=f"{KIND}-{os.getpid()}-", dir=folder)
