"""`nsys2perfetto mcp` driven by a real MCP client (the `mcp` package):
initialize, list the tools, call each on the fixtures, and check each
answer equals the command line's JSON for the same question; a path
outside the served directories, writing SQL and an answer past the byte
cap refused or cut with a clear message; a cancelled conversion leaves
nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import need, shared_dir

mcp = pytest.importorskip("mcp", reason="the MCP client package (pip install mcp) is not installed")
anyio = pytest.importorskip("anyio")  # installed with mcp
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

import nsys2perfetto  # noqa: E402

PAIR = ("h100_torch_graph_node.sqlite", "h100_torch_graph_whole.sqlite")


@pytest.fixture
def served(tmp_path: Path) -> Path:
    """A directory holding the H100 pair (linked) and a folder to write in."""
    sqlite = shared_dir() / "fixtures" / "sqlite"
    need(sqlite.is_dir(), f"the fixtures at {sqlite}")
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in PAIR:
        shutil.copy(sqlite / name, runs / name)
    (runs / "out").mkdir()
    return runs


def cli_json(*args: str | os.PathLike) -> dict:
    out = subprocess.run(
        [nsys2perfetto.program(), *map(os.fspath, args)], capture_output=True, check=True
    )
    return json.loads(out.stdout)


def session_run(served: Path, cache: Path, work, *extra: str):
    """Runs `work(session)` against a server over `served`."""
    params = StdioServerParameters(
        command=nsys2perfetto.program(),
        args=["mcp", str(served), "--cache", str(cache), *extra],
        env={"NSYS2PERFETTO_TRACE_PROCESSOR": str(shared_dir() / "tools" / "trace_processor_shell")},
    )

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)

    return anyio.run(main)


def test_each_tool_answers_as_the_command_line(served: Path, tmp_path: Path) -> None:
    a, b = (served / name for name in PAIR)
    sql = "SELECT name, COUNT(*) AS n FROM slice GROUP BY name ORDER BY n DESC, name LIMIT 5"

    async def work(session):
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= {"list_reports", "report", "stats", "compare", "query", "convert"}
        answers = {}
        for name, arguments in [
            ("list_reports", {}),
            ("report", {"run": str(a)}),
            ("stats", {"run": str(a), "table": "cuda_gpu_kern_sum", "limit": 1000}),
            ("compare", {"a": str(a), "b": str(b), "limit": 3}),
            ("query", {"run": str(b), "sql": sql}),
            ("convert", {"run": PAIR[1], "into": "out"}),
        ]:
            result = await session.call_tool(name, arguments)
            assert not result.is_error, (name, result.content)
            assert result.content[0].text, name
            answers[name] = result.structured_content
        resources = (await session.list_resources()).resources
        page = await session.read_resource(resources[0].uri)
        return answers, [r.name for r in resources], page.contents[0].text

    answers, resources, page = session_run(served, tmp_path / "cache", work)
    assert sorted(r["path"] for r in answers["list_reports"]["reports"]) == sorted(
        str(served.resolve() / name) for name in PAIR
    )
    assert answers["list_reports"]["left_out"] == 0
    assert sorted(resources) == sorted(PAIR)
    assert page.startswith("#"), page[:200]
    real_a, real_b = (served.resolve() / name for name in PAIR)
    assert answers["report"] == cli_json("report", real_a, "--format", "json")
    assert answers["stats"] == cli_json(
        "stats", real_a, "--report", "cuda_gpu_kern_sum", "--format", "json"
    )
    assert answers["compare"] == cli_json("compare", real_a, real_b, "--top", "3", "--format", "json")
    assert answers["query"] == cli_json(
        "query", real_b, sql, "--format", "json", "--cache", tmp_path / "cli-cache",
        "--trace-processor", shared_dir() / "tools" / "trace_processor_shell",
    )
    trace = Path(answers["convert"]["trace"])
    assert trace.parent == served.resolve() / "out" and trace.stat().st_size > 0


def cli_json_lines(*args: str | os.PathLike) -> list[dict]:
    out = subprocess.run(
        [nsys2perfetto.program(), *map(os.fspath, args)], capture_output=True, check=True
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def test_findings_and_steps_answer_as_the_command_line(served: Path, tmp_path: Path) -> None:
    a, b = (served / name for name in PAIR)

    async def work(session):
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= {"findings", "steps"}
        answers = {}
        for label, name, arguments in [
            ("all rules", "findings", {"run": str(a), "limit": 2}),
            ("one rule", "findings", {"run": PAIR[0], "rule": "gpu-starv"}),
            ("steps", "steps", {"runs": [str(a), PAIR[1]], "pattern": "step *"}),
            ("two steps", "steps", {"runs": [str(a), str(b)], "pattern": "step *", "limit": 2}),
        ]:
            result = await session.call_tool(name, arguments)
            assert not result.is_error, (label, result.content)
            assert result.content[0].text, label
            answers[label] = result.structured_content
        return answers

    answers = session_run(served, tmp_path / "cache", work)
    real_a, real_b = (served.resolve() / name for name in PAIR)
    # Every rule, two findings each: the command line's objects, and what
    # the cut left out counted against all of them.
    every = cli_json_lines("analyze", real_a, "--rows", "0", "--format", "json")
    cut = answers["all rules"]["rules"]
    assert cut == cli_json_lines("analyze", real_a, "--rows", "2", "--format", "json")
    left_out = [rule.get("more_rows", 0) for rule in cut]
    assert left_out == [max(len(rule.get("rows", [])) - 2, 0) for rule in every]
    assert any(left_out), "the fixture has a rule with more than two findings"
    assert answers["one rule"]["rules"] == cli_json_lines(
        "analyze", real_a, "--rule", "gpu_gaps", "--format", "json"
    )
    job = cli_json("report", "--step", "step *", real_a, real_b, "--format", "json")["steps"]
    assert job["steps"], "the H100 pair has steps"
    assert answers["steps"] == job
    two = answers["two steps"]
    assert two.pop("more_steps") == len(job["steps"]) - 2
    assert two == {**job, "steps": job["steps"][:2]}


def test_refusals_are_tool_errors_with_one_clear_line(served: Path, tmp_path: Path) -> None:
    outside = shared_dir() / "fixtures" / "sqlite" / "kmeans_report1.sqlite"

    async def work(session):
        results = {}
        for label, name, arguments in [
            ("outside", "report", {"run": str(outside)}),
            ("up", "report", {"run": os.path.relpath(outside, served)}),
            ("writing", "query", {"run": PAIR[0], "sql": "DELETE FROM StringIds"}),
            ("over input", "convert", {"run": PAIR[0], "into": "/"}),
            ("huge", "stats", {"run": PAIR[0], "table": "cuda_api_sum", "limit": 100000}),
            ("no rule", "findings", {"run": PAIR[0], "rule": "gpu_nope"}),
            ("no pattern", "steps", {"runs": [PAIR[0]], "pattern": ""}),
            ("steps outside", "steps", {"runs": [PAIR[0], str(outside)], "pattern": "step *"}),
        ]:
            results[label] = await session.call_tool(name, arguments)
        return results

    results = session_run(served, tmp_path / "cache", work, "--max-answer-bytes", "4000")
    assert results["no rule"].is_error
    assert results["no rule"].content[0].text.startswith('unknown rule "gpu_nope" (rules: ')
    assert results["no pattern"].is_error and results["no pattern"].content[0].text
    assert "\n" not in results["no pattern"].content[0].text.strip()
    for label in ["outside", "up", "over input", "steps outside"]:
        assert results[label].is_error, label
        assert "outside the served directories" in results[label].content[0].text, label
    assert results["writing"].is_error
    assert results["writing"].content[0].text.startswith("query refused: DELETE is no read")
    huge = results["huge"]
    assert not huge.is_error
    assert huge.structured_content["more_rows"] > 0
    assert "cap of 4000 bytes" in huge.structured_content["capped"]
    assert len(json.dumps(huge.structured_content, separators=(",", ":"))) <= 4000


def test_a_cancelled_conversion_stops_and_leaves_nothing(served: Path, tmp_path: Path) -> None:
    cori = shared_dir() / "fixtures" / "sqlite" / "cori_run1_report1.sqlite"
    need(cori.is_file(), str(cori))
    shutil.copy(cori, served / cori.name)

    async def work(session):
        heard = anyio.Event()

        async def progress(done, total, message):
            heard.set()

        async with anyio.create_task_group() as group:
            async def call():
                await session.call_tool(
                    "convert", {"run": cori.name, "into": "out"}, progress_callback=progress
                )

            group.start_soon(call)
            with anyio.fail_after(60):
                await heard.wait()
            group.cancel_scope.cancel()
        # The server still answers, and the conversion left nothing.
        await anyio.sleep(6)
        return await session.call_tool("list_reports", {})

    after = session_run(served, tmp_path / "cache", work)
    assert not after.is_error
    assert list((served / "out").iterdir()) == []


def test_steps_past_the_byte_cap_are_cut_and_counted(served: Path, tmp_path: Path) -> None:
    async def work(session):
        return await session.call_tool("steps", {"runs": list(PAIR), "pattern": "step *"})

    result = session_run(served, tmp_path / "cache", work, "--max-answer-bytes", "2000")
    real = [served.resolve() / name for name in PAIR]
    job = cli_json("report", "--step", "step *", *real, "--format", "json")["steps"]
    need(len(json.dumps(job, separators=(",", ":"))) > 2000, "a job larger than the cap")
    assert not result.is_error, result.content
    cut = dict(result.structured_content)
    assert len(json.dumps(cut, separators=(",", ":"))) <= 2000
    assert "cap of 2000 bytes" in cut.pop("capped")
    kept = len(cut["steps"])
    assert cut.pop("more_steps") == len(job["steps"]) - kept > 0
    assert cut == {**job, "steps": job["steps"][:kept]}


def test_findings_past_the_byte_cap_are_cut_and_counted(served: Path, tmp_path: Path) -> None:
    cap = 6000

    async def work(session):
        return await session.call_tool("findings", {"run": PAIR[0], "limit": 1000})

    result = session_run(served, tmp_path / "cache", work, "--max-answer-bytes", str(cap))
    real = served.resolve() / PAIR[0]
    every = cli_json_lines("analyze", real, "--rows", "0", "--format", "json")
    need(len(json.dumps(every, separators=(",", ":"))) > cap, "findings larger than the cap")
    assert not result.is_error, result.content
    cut = dict(result.structured_content)
    assert len(json.dumps(cut, separators=(",", ":"))) <= cap
    said = cut.pop("capped")
    assert f"cap of {cap} bytes" in said
    # Each rule keeps its first findings, in the command line's order, and
    # counts in more_rows what the cap left out; the message counts them all.
    dropped = 0
    for kept, whole in zip(cut.pop("rules"), every, strict=True):
        rows = whole.get("rows", [])
        assert kept.get("rows", []) == rows[: len(kept.get("rows", []))]
        left_out = len(rows) - len(kept.get("rows", []))
        assert kept.get("more_rows", 0) == left_out
        dropped += left_out
        assert {k: v for k, v in kept.items() if k not in ("rows", "more_rows")} == {
            k: v for k, v in whole.items() if k not in ("rows", "more_rows")
        }
    assert dropped > 0 and said.startswith(f"{dropped} findings left out")
    assert cut == {}
