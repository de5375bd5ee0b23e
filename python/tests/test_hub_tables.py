"""The hub's long tables, driven by Chromium: the stats page of a run with
16,582 NVTX ranges shows the GPU's kernels first and each table's first
rows, with a filter box, sorting by any column and "Show all", all working
on every row of the table (checked against what `stats --format csv`
prints); the compare page shows each name first, a long C++ name shortened
with the whole name at hand (checked against `compare --format csv`).

Skipped (failed in CI) without Playwright or /usr/bin/chromium. With
NSYS2PERFETTO_SCREENS set to a directory, screenshots of the pages go there.
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from pathlib import Path

import pytest

try:
    from playwright.sync_api import expect
except ImportError:  # the browser fixture skips (fails in CI) saying so
    expect = None

from nsys2perfetto._cli import program
from test_serve import browser, page, screenshot, start_hub, sync_playwright  # noqa: F401

BIG = "nsys-ai_h100_2gpu_1s"
# Two runs of one workload whose kernels have C++ names of up to 1,386 characters.
COMPARED = ("h100_torch_graph_node", "h100_torch_graph_whole")
FIRST_ROWS = 50
# The longest name shown whole.
LONGEST = 56


@pytest.fixture
def hub(tmp_path, sqlite):
    """`serve` on a directory of the big run and the two compared: its URL
    (with the token) and the directory."""
    directory = tmp_path / "runs"
    directory.mkdir()
    for name in (BIG, *COMPARED):
        shutil.copy(sqlite(name), directory / f"{name}.sqlite")
    url, process = start_hub(directory, tmp_path / "cache", "http://127.0.0.1:9/")
    yield url, directory
    process.terminate()
    process.wait(timeout=30)


def cli_table(export: Path, report: str) -> tuple[list[str], list[list[str]]]:
    """A summary as `stats --format csv` prints it: header and rows."""
    out = subprocess.run(
        [program(), "stats", str(export), "--report", report, "--format", "csv"],
        check=True, capture_output=True, text=True,
    ).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return rows[0], rows[1:]


def stats_page(page, hub):
    url, _ = hub
    base = url.split("?")[0]
    page.goto(url)
    page.goto(f"{base}stats/0/{BIG}.sqlite")
    page.wait_for_selector("div.table-controls")


def section(page, name: str):
    """The table of the summary `name` (its heading names it)."""
    heading = page.locator("h2", has=page.locator(f"code:text-is('{name}')"))
    return heading.locator("xpath=following-sibling::section[1]")


def shown_rows(table) -> list[list[str]]:
    """The rows shown, each cell's whole text (a shortened name's is its
    tooltip)."""
    return table.locator("tbody").evaluate(
        """(body) => [...body.rows].map((tr) => [...tr.cells].map((td) => {
             const summary = td.querySelector("summary");
             return summary ? summary.title : td.textContent.trim();
           }))"""
    )


def test_the_stats_page_shows_kernels_first_and_long_tables_in_part(hub, page, sqlite):
    stats_page(page, hub)
    headings = page.locator("h2 code").all_text_contents()
    assert headings.index("cuda_gpu_kern_sum") == 0, headings
    assert headings.index("nvtx_sum") == len(headings) - 1, headings
    # The kernels are on the first screen.
    kernels = section(page, "cuda_gpu_kern_sum").locator("table")
    assert kernels.bounding_box()["y"] < page.viewport_size["height"]
    screenshot(page, "tables-stats", full_page=False)

    header, rows = cli_table(sqlite(BIG), "nvtx_sum")
    assert len(rows) > 10_000
    nvtx = section(page, "nvtx_sum")
    assert nvtx.locator("th").all_text_contents() == header
    assert shown_rows(nvtx) == rows[:FIRST_ROWS]
    assert nvtx.locator("span.shown").text_content() == f"The first 50 of {len(rows):,} rows."
    # Show all: every row of the summary, in its order; then the first again.
    nvtx.locator("button:text-is('Show all')").click()
    expect(nvtx.locator("tbody tr")).to_have_count(len(rows), timeout=60_000)
    assert shown_rows(nvtx) == rows
    assert nvtx.locator("span.shown").text_content() == f"All {len(rows):,} rows."
    nvtx.locator("button:text-is('Show the first 50')").click()
    assert nvtx.locator("tbody tr").count() == FIRST_ROWS


def test_a_long_table_is_filtered_over_all_its_rows(hub, page, sqlite):
    stats_page(page, hub)
    _, rows = cli_table(sqlite(BIG), "nvtx_sum")
    nvtx = section(page, "nvtx_sum")
    # Matches far down the table, fewer than a page of them.
    needle = rows[-1][-1]
    matching = [r for r in rows if any(needle.lower() in cell.lower() for cell in r)]
    assert 0 < len(matching) < FIRST_ROWS and rows.index(matching[0]) >= FIRST_ROWS
    nvtx.locator("input[type=search]").fill(needle)
    expect(nvtx.locator("tbody tr")).to_have_count(len(matching))
    assert shown_rows(nvtx) == matching
    assert nvtx.locator("span.shown").text_content() == (
        f"All {len(matching)} matching of {len(rows):,} rows."
    )
    nvtx.scroll_into_view_if_needed()
    screenshot(page, "tables-filtered", full_page=False)
    # More matches than a page: the first 50 of them, and Show all.
    needle = "aten::"
    matching = [r for r in rows if any(needle in cell.lower() for cell in r)]
    assert len(matching) > FIRST_ROWS
    nvtx.locator("input[type=search]").fill(needle)
    expect(nvtx.locator("span.shown")).to_have_text(
        f"The first 50 of {len(matching):,} matching of {len(rows):,} rows."
    )
    assert shown_rows(nvtx) == matching[:FIRST_ROWS]


def test_a_long_table_is_sorted_by_any_column(hub, page, sqlite):
    stats_page(page, hub)
    header, rows = cli_table(sqlite(BIG), "nvtx_sum")
    nvtx = section(page, "nvtx_sum")
    column = header.index("Instances")
    by_count = sorted(rows, key=lambda r: -int(r[column]))
    nvtx.locator("th", has_text="Instances").click()
    expect(nvtx.locator("th[aria-sort]")).to_have_attribute("aria-sort", "descending")
    assert shown_rows(nvtx) == by_count[:FIRST_ROWS]
    nvtx.locator("th").first.scroll_into_view_if_needed()
    screenshot(page, "tables-sorted", full_page=False)
    # Again: the other way, fewest first (ties in the summary's order).
    nvtx.locator("th", has_text="Instances").click()
    expect(nvtx.locator("th[aria-sort]")).to_have_attribute("aria-sort", "ascending")
    by_count = sorted(rows, key=lambda r: int(r[column]))
    assert shown_rows(nvtx) == by_count[:FIRST_ROWS]
    # A short table (its rows in the page) sorts too: kernels A to Z.
    header, rows = cli_table(sqlite(BIG), "cuda_gpu_kern_sum")
    kernels = section(page, "cuda_gpu_kern_sum")
    kernels.locator("th", has_text="Name").click()
    expect(kernels.locator("th[aria-sort]")).to_have_attribute("aria-sort", "ascending")
    shown = [row[header.index("Name")] for row in shown_rows(kernels)]
    assert sorted(shown) == sorted(row[header.index("Name")] for row in rows)
    assert shown != [row[header.index("Name")] for row in rows]
    # In the order of the browser's collation (what a user reads as A to Z).
    collated = page.evaluate("(names) => [...names].sort((a, b) => a.localeCompare(b))", shown)
    assert shown == collated


def test_the_compare_page_shows_names_first_shortened_with_the_whole_name_at_hand(
    hub, page, sqlite
):
    url, directory = hub
    base = url.split("?")[0]
    a, b = (f"{name}.sqlite" for name in COMPARED)
    page.goto(url)
    page.goto(f"{base}compare?a=0/{a}&b=0/{b}")
    page.wait_for_selector("h1:has-text('vs')")
    out = subprocess.run(
        [program(), "compare", str(directory / a), str(directory / b), "--top", "10",
         "--format", "csv"],
        check=True, capture_output=True, text=True,
    ).stdout
    cli = list(csv.reader(io.StringIO(out)))
    names = [row[cli[0].index("Name")] for row in cli[1:]]
    long = [n for n in names if len(n) > LONGEST]
    assert long, "the compared runs have long names"
    differences = page.locator("table.data").last
    assert differences.locator("th").first.text_content() == "Name"
    cells = differences.locator("tbody tr td:first-child")
    assert cells.count() == len(names)
    for i, name in enumerate(names):
        cell = cells.nth(i)
        summary = cell.locator("summary")
        if len(name) <= LONGEST:
            assert summary.count() == 0 and cell.text_content() == name
            continue
        short = summary.text_content()
        assert len(short) <= LONGEST and short != name, short
        assert summary.get_attribute("title") == name
        # Shortened: the whole name is not shown until asked for.
        assert cell.evaluate("(td) => td.innerText.trim()") == short
    differences.scroll_into_view_if_needed()
    screenshot(page, "tables-compare", full_page=False)
    # The whole name a click away.
    first_long = cells.nth(names.index(long[0]))
    first_long.locator("summary").click()
    assert name_visible(first_long, long[0])
    screenshot(page, "tables-compare-opened", full_page=False)


def name_visible(cell, name: str) -> bool:
    return cell.locator("details").evaluate(
        "(d, name) => d.open && d.innerText.includes(name)", name
    )
