"""The aarch64 release wheel (Grace Hopper nodes), built on x86_64 by
scripts/build-wheels.sh --aarch64: its program is an aarch64 binary that
asks for no glibc newer than 2.17, and run under qemu-user (Debian's
`qemu-user`, with the aarch64 glibc of `libc6-arm64-cross`) it writes the
same trace and the same summary as the x86_64 program does.

The wheel is named by NSYS2PERFETTO_AARCH64_WHEEL (CI sets it where it
built one); without it the tests skip saying why, and without qemu they
skip (fail in CI, which installs it with the wheel).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from conftest import cli, need

AARCH64_SYSROOT = Path("/usr/aarch64-linux-gnu")
EM_AARCH64 = 183


@pytest.fixture
def aarch64_program(tmp_path) -> Path:
    wheel = os.environ.get("NSYS2PERFETTO_AARCH64_WHEEL")
    if not wheel:  # built only where rustup could add the target (CI says which)
        pytest.skip("no aarch64 wheel named by NSYS2PERFETTO_AARCH64_WHEEL")
    wheel = Path(wheel)
    assert re.search(r"manylinux_2_17_aarch64|manylinux2014_aarch64", wheel.name), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith(".data/scripts/nsys2perfetto")]
        program = tmp_path / "nsys2perfetto-aarch64"
        program.write_bytes(archive.read(member))
    program.chmod(0o755)
    return program


def test_the_aarch64_program_needs_glibc_2_17_at_most(aarch64_program):
    header = aarch64_program.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and int.from_bytes(header[18:20], "little") == EM_AARCH64
    need(shutil.which("objdump") is not None, "objdump (binutils)")
    table = subprocess.run(
        ["objdump", "-T", aarch64_program], capture_output=True, text=True, check=True
    ).stdout
    needed = {(int(a), int(b)) for a, b in re.findall(r"\bGLIBC_(\d+)\.(\d+)", table)}
    assert needed and max(needed) <= (2, 17), sorted(needed)


def test_the_aarch64_program_under_qemu_writes_the_same_trace(aarch64_program, sqlite, tmp_path):
    qemu = shutil.which("qemu-aarch64")
    need(qemu is not None, "qemu-aarch64 (Debian's qemu-user)")
    need(AARCH64_SYSROOT.is_dir(), f"aarch64 glibc at {AARCH64_SYSROOT} (libc6-arm64-cross)")
    report = sqlite("h100_torch_graph_whole")

    def on_arm(*args: object) -> subprocess.CompletedProcess:
        return subprocess.run(
            [qemu, "-L", str(AARCH64_SYSROOT), str(aarch64_program), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=600,
        )

    trace = tmp_path / "arm.perfetto-trace"
    ran = on_arm("convert", report, "-o", trace, "-q")
    assert ran.returncode == 0, ran.stderr
    cli("convert", report, "-o", tmp_path / "x86.perfetto-trace", "-q")
    assert trace.read_bytes() == (tmp_path / "x86.perfetto-trace").read_bytes()
    summary = ["stats", report, "--report", "cuda_gpu_kern_sum", "--format", "csv"]
    arm = on_arm(*summary)
    assert arm.returncode == 0, arm.stderr
    assert arm.stdout == cli(*summary).stdout
