"""convert, merge and profile: the files the program makes, byte for byte as
from the command line; errors as nsys2perfetto.Error with the program's
one-line message; Ctrl-C leaving nothing behind; the program the wheel
installed."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import nsys2perfetto
from conftest import cli, need


def test_the_program_is_the_wheels(tmp_path):
    """The program is installed beside the package (the environment's
    scripts), is the one on PATH there, and is of the package's version."""
    program = Path(nsys2perfetto.program())
    assert program.name == "nsys2perfetto"
    assert Path(sys.prefix) in program.parents, f"{program} is not in {sys.prefix}"
    version = cli("--version").stdout.split()
    assert version == ["nsys2perfetto", nsys2perfetto.__version__]


@pytest.mark.parametrize(
    "options, flags",
    [
        ({}, []),
        (
            {"exclude": ["nvtx_gpu", "osrt"], "level": 6},
            ["--exclude", "nvtx_gpu,osrt", "--level", "6"],
        ),
        (
            {"nvtx": "^step", "gpu_in_nvtx": True, "time": "11s:"},
            ["--nvtx", "^step", "--gpu-in-nvtx", "--time", "11s:"],
        ),
        ({"format": "json"}, ["--format", "json"]),
    ],
)
def test_convert_writes_the_clis_trace(sqlite, tmp_path, options, flags):
    """The same report and options give the bytes of the command line's
    trace (conversions are deterministic); the trace goes beside the report
    by default, named as the program names it."""
    report = tmp_path / "run.v2.sqlite"
    shutil.copyfile(sqlite("h100_torch_graph_node"), report)
    trace = nsys2perfetto.convert(report, **options)
    extension = ".json" if options.get("format") == "json" else ".perfetto-trace"
    assert trace == tmp_path / f"run.v2{extension}"
    expected = tmp_path / "cli" / trace.name
    expected.parent.mkdir()
    cli("convert", report, "-o", f"{expected.parent}/", "-q", *flags)
    assert trace.read_bytes() == expected.read_bytes()
    out = nsys2perfetto.convert(report, tmp_path / "named.perfetto-trace", no_gzip=True)
    assert out.read_bytes()[:1] == b"\n"  # a raw TracePacket field, not gzip's magic


def test_convert_shows_its_summary_when_asked(sqlite, tmp_path, capfd):
    nsys2perfetto.convert(sqlite("nsys-ai_mock"), tmp_path / "a.perfetto-trace")
    assert capfd.readouterr().err == ""
    nsys2perfetto.convert(sqlite("nsys-ai_mock"), tmp_path / "b.perfetto-trace", progress=True)
    err = capfd.readouterr().err
    assert "-> " in err and "b.perfetto-trace" in err, err


def test_warnings_are_python_warnings(sqlite, tmp_path):
    """What the program warns about (here: events before the capture's
    records) comes as nsys2perfetto.Nsys2PerfettoWarning, in its words."""
    report = sqlite("h100_torch_graph_node")
    out = tmp_path / "t.perfetto-trace"
    said = [
        line.removeprefix("nsys2perfetto: warning: ")
        for line in cli("convert", report, "-o", out).stderr.splitlines()
        if line.startswith("nsys2perfetto: warning: ")
    ]
    with pytest.warns() as caught:
        nsys2perfetto.convert(report, out)
    got = [str(w.message) for w in caught if w.category is nsys2perfetto.Nsys2PerfettoWarning]
    assert got == said
    assert said, "this report is expected to draw a warning"


def test_merge_writes_the_clis_trace(sqlite, tmp_path):
    reports = [sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")]
    trace = nsys2perfetto.merge(reports, tmp_path / "job.perfetto-trace", exclude=["sched"])
    assert trace == tmp_path / "job.perfetto-trace"
    cli("merge", *reports, "-o", tmp_path / "cli.perfetto-trace", "--exclude", "sched")
    assert trace.read_bytes() == (tmp_path / "cli.perfetto-trace").read_bytes()


def test_report_is_the_clis_page(sqlite, tmp_path):
    import json

    reports = [sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")]
    page = nsys2perfetto.report(reports, step="step *")
    said = json.loads(cli("report", *reports, "--step", "step *", "--format", "json").stdout)
    assert page == said
    assert [run["path"] for run in page["runs"]] == [str(r) for r in reports]
    assert len(page["steps"]["steps"]) >= 5
    one = nsys2perfetto.report(reports[0], kind=["mine=gemm"])
    assert "steps" not in one and any(k["kind"] == "mine" for k in one["runs"][0]["kinds"])
    html = nsys2perfetto.report(reports[0], tmp_path / "page.html")
    assert html == tmp_path / "page.html" and html.read_text().startswith("<!DOCTYPE html>")


def _cli_error(*args: object) -> tuple[str, int]:
    run = cli(*args, check=False)
    lines = run.stderr.splitlines()
    assert lines and lines[-1].startswith("nsys2perfetto: error: "), run.stderr
    return lines[-1].removeprefix("nsys2perfetto: error: "), run.returncode


@pytest.mark.parametrize(
    "call, args",
    [
        (
            lambda d: nsys2perfetto.convert(d / "not-a-report.txt", d / "x.perfetto-trace"),
            lambda d: ["convert", d / "not-a-report.txt", "-o", d / "x.perfetto-trace"],
        ),
        (
            lambda d: nsys2perfetto.stats(d / "missing.sqlite", "cuda_api_sum"),
            lambda d: [
                "stats",
                d / "missing.sqlite",
                "--report",
                "cuda_api_sum",
                "--format",
                "csv",
            ],
        ),
        (
            lambda d: nsys2perfetto.stats(d / "not-a-report.txt", "no_such_summary"),
            lambda d: ["stats", d / "not-a-report.txt", "--report", "no_such_summary"],
        ),
        (
            lambda d: nsys2perfetto.convert(d / "not-a-report.txt", d / "x.json", level=12),
            lambda d: ["convert", d / "not-a-report.txt", "-o", d / "x.json", "--level", "12"],
        ),
        (
            lambda d: nsys2perfetto.analyze(d / "not-a-report.txt", rule=["no_such_rule"]),
            lambda d: ["analyze", d / "not-a-report.txt", "--rule", "no_such_rule"],
        ),
        (
            lambda d: nsys2perfetto.compare(d / "not-a-report.txt", d / "missing.sqlite"),
            lambda d: ["compare", d / "not-a-report.txt", d / "missing.sqlite"],
        ),
        (
            lambda d: nsys2perfetto.series({1: d / "missing.sqlite"}, ["gemm"]),
            lambda d: ["series", "--param", "p=1", d / "missing.sqlite", "--events", "gemm"],
        ),
        (
            lambda d: nsys2perfetto.merge([d / "not-a-report.txt"], d / "job.perfetto-trace"),
            lambda d: ["merge", d / "not-a-report.txt", "-o", d / "job.perfetto-trace"],
        ),
    ],
)
def test_errors_carry_the_programs_message(tmp_path, call, args):
    """One exception type, with the line the program prints (without its
    prefix) and its exit status (2 for options refused); nothing written."""
    (tmp_path / "not-a-report.txt").write_text("hello\n")
    message, status = _cli_error(*args(tmp_path))
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(nsys2perfetto.Error) as raised:
        call(tmp_path)
    assert str(raised.value) == message
    assert raised.value.returncode == status
    assert "\n" not in str(raised.value)
    assert sorted(os.listdir(tmp_path)) == before


def test_a_missing_program_says_how_to_get_it(monkeypatch, tmp_path):
    monkeypatch.setenv("NSYS2PERFETTO", str(tmp_path / "nowhere"))
    with pytest.raises(nsys2perfetto.Error, match="cannot run .*nowhere: No such file"):
        nsys2perfetto.stats(tmp_path / "x.sqlite", "cuda_api_sum")


INTERRUPTED = textwrap.dedent(
    """\
    import sys
    import nsys2perfetto
    try:
        nsys2perfetto.convert(sys.argv[1], sys.argv[2], format="json", level=9, nsys=sys.argv[3])
    except KeyboardInterrupt:
        sys.exit(42)
    print("finished")
    """
)


def _nvtx_times(source: Path, copy: Path, times: int) -> None:
    """`copy`: `source` with its NVTX ranges `times` times over, each copy
    after the previous one in time: an export that takes seconds to convert."""
    shutil.copyfile(source, copy)
    copy.chmod(0o644)
    with sqlite3.connect(copy) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(NVTX_EVENTS)")]
        first, last = db.execute(
            "SELECT MIN(start), MAX(COALESCE(end, start)) FROM NVTX_EVENTS"
        ).fetchone()
        shifted = ", ".join(f"{c} + :shift" if c in ("start", "end") else c for c in columns)
        for k in range(1, times):
            db.execute(
                f"INSERT INTO NVTX_EVENTS ({', '.join(columns)}) "
                f"SELECT {shifted} FROM NVTX_EVENTS WHERE start <= :last",
                {"shift": k * (last - first + 1), "last": last},
            )
    db.close()


def _interrupt_when_started(args: list[str], started, out_dir: Path) -> str:
    """Runs INTERRUPTED with `args`, sends SIGINT to Python once `started()`,
    and says how it ended: "interrupted" (leaving `out_dir` as it found it is
    for the caller to check) or "finished" (before the signal came)."""
    python = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not started() and python.poll() is None:
        assert time.monotonic() < deadline, "the conversion did not start in a minute"
        time.sleep(0.005)
    python.send_signal(signal.SIGINT)
    out, err = python.communicate(timeout=60)
    if "finished" in out:
        return "finished"
    assert python.returncode == 42, err
    return "interrupted"


def test_ctrl_c_stops_a_conversion_and_leaves_nothing(sqlite, tmp_path):
    """SIGINT to Python (as a terminal's Ctrl-C or a notebook's interrupt)
    while the program writes the trace: KeyboardInterrupt, and neither the
    trace nor the temporary file beside it is left."""
    report = tmp_path / "long.sqlite"
    _nvtx_times(sqlite("nsys-ai_h100_2gpu_1s"), report, 20)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [str(report), str(out_dir / "t.json.gz"), "nsys"]
    for _ in range(3):
        # The program is writing once its temporary file is there.
        ended = _interrupt_when_started(args, lambda: bool(os.listdir(out_dir)), out_dir)
        if ended == "interrupted":
            assert os.listdir(out_dir) == []
            return
        for name in os.listdir(out_dir):
            os.remove(out_dir / name)
    pytest.fail("the conversion finished before SIGINT three times")


# A stand-in for `nsys export`: it writes part of its export, then waits in
# a child (as nsys's helpers would), whose pid it notes in $NSYS_PID.
SLOW_NSYS = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "NVIDIA Nsight Systems version 2099.1.1.1-0000000"; exit 0; fi
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then out=$2; fi
    shift
done
echo "partial" > "$out"
sleep 300 &
echo $! > "$NSYS_PID.tmp"
mv "$NSYS_PID.tmp" "$NSYS_PID"
wait
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return not stat.rpartition(") ")[2].startswith("Z")


def test_ctrl_c_stops_an_export_and_leaves_nothing(tmp_path, monkeypatch):
    """SIGINT while nsys exports a report: nsys and its helper are stopped,
    its partial export removed, no trace written."""
    nsys = tmp_path / "slow-nsys"
    _executable(nsys, SLOW_NSYS)
    pid_file = tmp_path / "nsys.pid"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("NSYS_PID", str(pid_file))
    monkeypatch.setenv("TMPDIR", str(temporary))
    report = tmp_path / "run.nsys-rep"
    report.write_text("NVIDIA Tegra Profiler Report 1.\nrest")
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    args = [str(report), str(out_dir / "t.json.gz"), str(nsys)]
    assert _interrupt_when_started(args, pid_file.exists, out_dir) == "interrupted"
    assert os.listdir(out_dir) == []
    # The user's folder of temporaries stays, empty, for the next run.
    users_folder = temporary / f"nsys2perfetto-{os.geteuid()}"
    assert [temporary / n for n in os.listdir(temporary)] in ([], [users_folder])
    assert not users_folder.exists() or os.listdir(users_folder) == []
    helper = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while _alive(helper):
        assert time.monotonic() < deadline, f"nsys's child {helper} still runs"
        time.sleep(0.01)


# A stand-in for the program: notes its pid in $PROGRAM_PID, then waits as
# a long run would.
WAITING_PROGRAM = """#!/bin/sh
echo $$ > "$PROGRAM_PID.tmp"
mv "$PROGRAM_PID.tmp" "$PROGRAM_PID"
exec sleep 300
"""


def test_a_folder_left_by_sigterm_is_removed_by_the_programs_next_run(tmp_path):
    """SIGTERM (a batch system's cancel, a kernel's shutdown) ends Python
    without its `finally` blocks: the temporary folder of the call it was in
    stays, but in the program's own folder of temporaries, named by Python's
    pid, so that the program's next run removes it as it removes what its own
    killed runs left."""
    program = tmp_path / "waiting-program"
    _executable(program, WAITING_PROGRAM)
    pid_file = tmp_path / "program.pid"
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    report = tmp_path / "run.sqlite"
    report.write_bytes(b"")
    env = {**os.environ, "TMPDIR": str(temporary)}
    call = "import sys, nsys2perfetto\nnsys2perfetto.analyze(sys.argv[1])\n"
    python = subprocess.Popen(
        [sys.executable, "-c", call, str(report)],
        env={**env, "NSYS2PERFETTO": str(program), "PROGRAM_PID": str(pid_file)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not pid_file.exists():
            assert python.poll() is None, python.communicate()[1]
            assert time.monotonic() < deadline, "the program did not start in a minute"
            time.sleep(0.01)
        python.send_signal(signal.SIGTERM)
        python.communicate(timeout=60)
        assert python.returncode == -signal.SIGTERM
    finally:
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
    users_folder = temporary / f"nsys2perfetto-{os.geteuid()}"
    assert os.listdir(temporary) == [users_folder.name]
    (left,) = os.listdir(users_folder)
    assert left.startswith(f"python-{python.pid}-")
    # Any run of the program, even one that fails, removes it.
    ran = subprocess.run(
        [nsys2perfetto._cli.program(), "stats", str(tmp_path / "missing.sqlite")],
        env=env,
        capture_output=True,
    )
    assert ran.returncode == 1
    assert os.listdir(users_folder) == []


# A stand-in for `nsys profile`: runs nothing, leaves the raw capture
# <output>.qdstrm and exits 5 (the profiled command's status, as nsys passes
# it on); `nsys export` is the real nsys's.
QDSTRM_ONLY_NSYS = """#!/bin/sh
if [ "$1" = "export" ] || [ "$1" = "--version" ]; then
    exec "$REAL_NSYS" "$@"
fi
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "--output" ]; then out=$2; fi
    shift
done
echo "raw capture" > "$out.qdstrm"
exit 5
"""

# A stand-in for QdstrmImporter: the report (-o) is a copy of $REAL_REPORT.
IMPORTER = """#!/bin/sh
out=
while [ $# -gt 0 ]; do
    if [ "$1" = "-o" ]; then out=$2; fi
    shift
done
cp "$REAL_REPORT" "$out"
"""


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def test_profile_gives_the_report_and_its_trace(fixtures, tmp_path, monkeypatch):
    """As far as profile can be tested without a GPU (as tests/it/profile.rs):
    a stand-in nsys that leaves its raw capture, the install's importer
    making the report, the real nsys exporting it; the command's status."""
    real = shutil.which("nsys")
    need(real is not None, "the nsys CLI on PATH (.ci/install-nsys)")
    install = tmp_path / "nsys-install"
    nsys = install / "target-linux-x64" / "nsys"
    _executable(nsys, QDSTRM_ONLY_NSYS)
    _executable(install / "host-linux-x64" / "QdstrmImporter", IMPORTER)
    monkeypatch.setenv("REAL_NSYS", real)
    monkeypatch.setenv("REAL_REPORT", str(fixtures / "reports" / "dlprof_nsys_profile.nsys-rep"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    made = nsys2perfetto.profile(["./train", "--epochs", "1"], "run", nsys=nsys, exclude=["sched"])
    report, trace = made
    assert (report, trace) == (Path("run.nsys-rep"), Path("run.perfetto-trace"))
    assert made.returncode == 5
    assert sorted(os.listdir(work)) == ["run.nsys-rep", "run.perfetto-trace"]
    # The trace of the report, as convert makes it.
    cli("convert", report, "-o", tmp_path / "cli.perfetto-trace", "-q", "--exclude", "sched")
    assert trace.read_bytes() == (tmp_path / "cli.perfetto-trace").read_bytes()


def test_profile_errors_carry_the_programs_message(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken.nsys-rep").write_text("")
    # A missing nsys is a runtime error (1); a name refused, a usage error (2).
    for kwargs, needle, returncode in [
        ({"nsys": "/nonexistent/nsys"}, "/nonexistent/nsys was not found", 1),
        ({"out": "taken"}, "taken.nsys-rep exists", 2),
    ]:
        with pytest.raises(nsys2perfetto.Error) as raised:
            nsys2perfetto.profile("true", **kwargs)
        assert needle in str(raised.value)
        assert raised.value.returncode == returncode
    assert os.listdir(tmp_path) == ["taken.nsys-rep"]


# What a manylinux wheel may link to: glibc's libraries and GCC's unwinder,
# which glibc itself loads (PEP 600's policy lists the same).
MANYLINUX_LIBRARIES = {
    "linux-vdso.so.1",
    "ld-linux-x86-64.so.2",
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libgcc_s.so.1",
}


def _wheel_tags() -> list[str]:
    from importlib.metadata import distribution

    return [
        line.split(":", 1)[1].strip()
        for line in distribution("nsys2perfetto").read_text("WHEEL").splitlines()
        if line.startswith("Tag:")
    ]


def _glibc_versions_needed(program: str) -> set[tuple[int, int]]:
    """The GLIBC_x.y symbol versions the program's dynamic symbol table asks
    for (``objdump -T``, as the dynamic loader reads them)."""
    table = subprocess.run(
        ["objdump", "-T", program], capture_output=True, text=True, check=True
    ).stdout
    return {(int(a), int(b)) for a, b in re.findall(r"\bGLIBC_(\d+)\.(\d+)", table)}


def test_the_program_links_only_to_glibc():
    """The installed program links only to glibc (and its unwinder): what a
    manylinux wheel may carry."""
    need(sys.platform == "linux" and shutil.which("ldd") is not None, "Linux with ldd")
    program = nsys2perfetto.program()
    linked = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    libraries = {line.split()[0].rsplit("/", 1)[-1] for line in linked.splitlines() if line.strip()}
    assert libraries <= MANYLINUX_LIBRARIES, libraries - MANYLINUX_LIBRARIES


def _promised_glibc(tag: str):
    """The oldest glibc a wheel tag says its program runs on (PEP 600:
    manylinux_X_Y; manylinux2014 is 2.17), or None for a tag that promises
    none (linux_*: this machine only)."""
    if "manylinux2014" in tag:
        return (2, 17)
    found = re.search(r"manylinux_(\d+)_(\d+)", tag)
    return (int(found.group(1)), int(found.group(2))) if found else None


def test_the_wheel_runs_on_the_glibc_its_tag_promises():
    """The installed wheel's program asks for no glibc symbol newer than its
    tag promises. The release wheels (scripts/build-wheels.sh) promise 2.17,
    manylinux2014 (RHEL/CentOS 7; so they run on Rocky 8's 2.28, Ubuntu
    20.04's 2.31), and the script refuses a program that needs more; CI's
    wheel, made from the tests' build, promises this machine's glibc. A
    wheel tagged linux_* promises nothing: this test skips it, saying so."""
    need(sys.platform == "linux" and shutil.which("objdump") is not None, "Linux with objdump")
    tags = _wheel_tags()
    assert tags, "the installed package has no wheel tags"
    promised = [_promised_glibc(tag) for tag in tags]
    if all(p is None for p in promised):
        pytest.skip(f"the wheel's tags {tags} promise no glibc (a local build)")
    needed = _glibc_versions_needed(nsys2perfetto.program())
    assert needed, "no GLIBC symbol versions found: not a glibc program?"
    oldest = min(p for p in promised if p is not None)
    assert max(needed) <= oldest, (tags, sorted(v for v in needed if v > oldest))


def _new_traces(root: Path, before: set) -> list[Path]:
    return sorted(p for p in root.rglob("*.perfetto-trace") if p not in before)


def test_convert_of_a_directory_returns_the_traces_the_program_writes(sqlite, tmp_path):
    """A directory converts as the program converts it (every export below
    it), and the traces written come back, not the directory: beside the
    inputs, into a directory named with a trailing slash (made), and into
    one that exists; each is the program's trace, byte for byte."""
    tree = tmp_path / "job"
    (tree / "a").mkdir(parents=True)
    (tree / "b").mkdir()
    shutil.copyfile(sqlite("nsys-ai_mock"), tree / "a" / "rank0.sqlite")
    shutil.copyfile(sqlite("h100_torch_graph_whole"), tree / "b" / "rank1.sqlite")
    cli_tree = tmp_path / "cli-job"
    shutil.copytree(tree, cli_tree)
    cli("convert", cli_tree, "-q")
    expected = sorted(p.relative_to(cli_tree) for p in cli_tree.rglob("*.perfetto-trace"))
    assert len(expected) == 2

    beside = nsys2perfetto.convert(tree)
    assert [p.relative_to(tree) for p in beside] == expected
    for trace in beside:
        assert trace.read_bytes() == (cli_tree / trace.relative_to(tree)).read_bytes()

    made = nsys2perfetto.convert(tree, f"{tmp_path}/new/traces/", jobs=1)
    assert [p.relative_to(tmp_path / "new" / "traces") for p in made] == expected
    existing = tmp_path / "existing"
    existing.mkdir()
    again = nsys2perfetto.convert(tree, existing)
    assert [p.relative_to(existing) for p in again] == expected
    assert all(p.is_file() for p in made + again)


def test_convert_into_a_directory_returns_the_trace(sqlite, tmp_path):
    """One report into a directory (named with a trailing slash, or one
    that exists) gives the trace's path in it, not the directory's."""
    report = sqlite("nsys-ai_mock")
    made = nsys2perfetto.convert(report, f"{tmp_path}/new/")
    assert made == tmp_path / "new" / "nsys-ai_mock.perfetto-trace" and made.is_file()
    existing = tmp_path / "existing"
    existing.mkdir()
    into = nsys2perfetto.convert(report, existing, format="json")
    assert into == existing / "nsys-ai_mock.json" and into.is_file()
