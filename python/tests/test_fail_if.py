"""`compare(a, b, fail_if=[...])`: a rule that breaks raises RuleBroken
with the program's own lines (as `compare --fail-if` prints them); rules
that hold give the comparison, as without them."""

from __future__ import annotations

import os
import subprocess

import pytest

import nsys2perfetto


def test_a_broken_rule_raises_with_the_programs_lines(sqlite) -> None:
    a, b = sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")
    rules = ["gpu_time>+50%", "nvtx::step 0>+3%", "busy<-5%"]
    program = subprocess.run(
        [nsys2perfetto.program(), "compare", os.fspath(a), os.fspath(b), "--fail-if", *rules],
        capture_output=True,
        text=True,
    )
    assert program.returncode == 3
    lines = [
        line.removeprefix("nsys2perfetto: rule broken: ")
        for line in program.stderr.splitlines()
        if line.startswith("nsys2perfetto: rule broken: ")
    ]
    assert len(lines) == 2, program.stderr
    with pytest.raises(nsys2perfetto.RuleBroken) as raised:
        nsys2perfetto.compare(a, b, fail_if=rules)
    assert raised.value.lines == lines
    assert str(raised.value) == "\n".join(lines)
    assert raised.value.returncode == 3


def test_rules_that_hold_give_the_comparison(sqlite) -> None:
    a, b = sqlite("h100_torch_graph_node"), sqlite("h100_torch_graph_whole")
    held = nsys2perfetto.compare(a, b, fail_if=["gpu_time>+50%", "busy<-90%"], top=3)
    plain = nsys2perfetto.compare(a, b, top=3)
    assert held.equals(plain)
