"""The hub's home page as a list to work in (issue 38, items 7, 8, 10),
in Debian's Chromium under Playwright at a 1280-pixel-wide window: its
rows one line tall, sorted by any column (against the keys read from the
files and from `report --format json`), filtered by name, its "GPU busy"
the report page's figure (the share of the GPUs' work span) on a cropped
export whose capture is 300 times its GPU work, a job's status under the
row clicked, and a drop of several files telling each one's fate in the
server's words.

The browser, the hub and its helpers are test_serve.py's.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nsys2perfetto._cli import program
from test_serve import (  # noqa: F401 (fixtures used by name)
    assert_right_under,
    browser,
    posted,
    row_of,
    screenshot,
    stand_in,
    start_hub,
    status_under,
    wait_for_headline,
)

# Runs whose shown values differ in every column but GPUs (ties there keep
# the list's order), one with no GPU work at all (its values missing: last
# whichever way), and a cropped export (nsys-ai_h100_2gpu_1s: 295.7 s of
# capture, under a second of work on each of its two GPUs).
RUNS = [
    "nsys-ai_h100_2gpu_1s",
    "dlprof_nsys_profile",
    "memfusion_report1",
    "openacc_report12",
    "kmeans_report1",
]

WIDE = {"width": 1280, "height": 800}


@pytest.fixture
def many_runs(tmp_path, sqlite):
    directory = tmp_path / "runs"
    directory.mkdir()
    for i, name in enumerate(RUNS):
        copy = directory / f"{name}.sqlite"
        shutil.copy(sqlite(name), copy)
        os.utime(copy, (1_700_000_000 + 3600 * i, 1_700_000_000 + 3600 * i))
    return directory


@pytest.fixture
def hub(many_runs, tmp_path, stand_in):
    url, process = start_hub(many_runs, tmp_path / "cache", stand_in)
    yield url
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=WIDE)
    errors: list[str] = []

    def console(p, m):
        # An upload refused (4xx) is what the drop test sends on purpose.
        if m.type == "error" and "/upload?" not in m.location.get("url", ""):
            errors.append(f"{p.url}: {m.text}")

    def watch(p):
        p.on("console", lambda m: console(p, m))
        p.on("pageerror", lambda e: errors.append(f"{p.url}: {e}"))

    context.on("page", watch)
    page = context.new_page()
    yield page
    context.close()
    assert errors == [], errors


def report_json(path: Path) -> dict:
    out = subprocess.run(
        [program(), "report", str(path), "--format", "json", "-q"],
        check=True, capture_output=True, text=True,
    ).stdout
    return json.loads(out)["runs"][0]


def all_headlines(page, many_runs):
    for name in RUNS:
        wait_for_headline(page, f"{name}.sqlite")


def shown_names(page) -> list[str]:
    """The names of the runs shown, top to bottom."""
    return [
        name.strip()
        for name in page.locator("section.reports tr:visible td:first-child a").all_text_contents()
    ]


def test_rows_are_one_line_and_gpu_busy_is_the_report_pages_share_of_the_gpus_span(
    hub, many_runs, page
):
    page.goto(hub)
    all_headlines(page, many_runs)
    header = page.locator("section.reports th").nth(5).text_content()
    assert "GPU busy" in header and "of GPU span" in header, header
    rows = page.locator("section.reports tr:has(td)")
    assert rows.count() == len(RUNS)
    for i in range(rows.count()):
        box = rows.nth(i).bounding_box()
        assert box["height"] <= 40, (rows.nth(i).text_content(), box)
    # Nothing sticks out to the right of the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDE["width"]
    for name in RUNS:
        run = report_json(many_runs / f"{name}.sqlite")
        cell = row_of(page, f"{name}.sqlite").locator("td").nth(5).text_content()
        if not run["gpus"]:
            assert cell == "–", (name, cell)
            continue
        # The report page's figure, busy over each GPU's work span, averaged
        # over the GPUs: not the share of the capture.
        of_span = sum(g["busy_share_of_span"] for g in run["gpus"]) / len(run["gpus"])
        of_capture = sum(g["busy_share_of_capture"] for g in run["gpus"]) / len(run["gpus"])
        shown = float(cell.rstrip("%"))
        assert abs(shown - of_span) <= 0.051, (name, cell, of_span, of_capture)
    # The cropped export: a GPU 99% busy while it worked, 0.3% of the capture.
    cropped = report_json(many_runs / "nsys-ai_h100_2gpu_1s.sqlite")["gpus"]
    assert all(g["busy_share_of_capture"] < 1 and g["busy_share_of_span"] > 99 for g in cropped)
    screenshot(page, "home-1280")
    # The links past the first two, in a menu.
    row = row_of(page, "dlprof_nsys_profile.sqlite")
    assert not row.locator("a:text-is('findings')").is_visible()
    row.locator("details.hub-menu summary").click()
    assert row.locator("a:text-is('findings')").is_visible()
    screenshot(page, "home-menu", full_page=False)


def sort_keys(many_runs: Path) -> dict[str, list]:
    """Per run, its value in each sortable column, read from the file and
    `report --format json` (None: nothing to sort by)."""
    keys = {}
    for name in RUNS:
        path = many_runs / f"{name}.sqlite"
        run = report_json(path)
        capture = run["capture"]
        gpus = run["gpus"]
        keys[path.name] = [
            path.name.casefold(),
            path.stat().st_mtime_ns,
            path.stat().st_size,
            capture and capture["end"] - capture["start"],
            len(gpus),
            sum(g["busy_share_of_span"] for g in gpus) / len(gpus) if gpus else None,
            run["top_kernels"][0]["name"].casefold() if run["top_kernels"] else None,
        ]
    return keys


def expected_order(listed: list[str], keys: dict, column: int, descending: bool) -> list[str]:
    """`listed` (the server's order) sorted by `column`, stably, the runs
    without a value last either way."""
    having = [n for n in listed if keys[n][column] is not None]
    lacking = [n for n in listed if keys[n][column] is None]
    return sorted(having, key=lambda n: keys[n][column], reverse=descending) + lacking


def test_the_list_sorts_by_every_column_and_again_the_other_way(hub, many_runs, page):
    page.goto(hub)
    all_headlines(page, many_runs)
    listed = shown_names(page)
    # The server's order: newest first.
    assert listed == [f"{n}.sqlite" for n in reversed(RUNS)]
    keys = sort_keys(many_runs)
    headers = page.locator("section.reports th button.hub-sort")
    assert headers.count() == 7
    for column in range(7):
        for descending in (False, True):
            headers.nth(column).click()
            name = headers.nth(column).text_content()
            assert shown_names(page) == expected_order(listed, keys, column, descending), (
                name, descending,
            )
            th = page.locator("section.reports th").nth(column)
            assert th.get_attribute("aria-sort") == ("descending" if descending else "ascending")
        if column == 2:
            screenshot(page, "home-sorted-by-size", full_page=False)
    # The order holds when the list is fetched again (a new file).
    shutil.copy(many_runs / "dlprof_nsys_profile.sqlite", many_runs / "zz_new.sqlite")
    wait_for_headline(page, "zz_new.sqlite")
    keys["zz_new.sqlite"] = keys["dlprof_nsys_profile.sqlite"][:]
    names = shown_names(page)
    tops = [keys[n][6] for n in names]
    assert tops[: len(names) - 1] == sorted(tops[:-1], reverse=True) and tops[-1] is None, names


def test_the_filter_shows_the_runs_whose_name_holds_it(hub, many_runs, page):
    page.goto(hub)
    all_headlines(page, many_runs)
    every = shown_names(page)
    field = page.locator("#hub-filter")
    for needle in ("h100", "REPORT", "_", "nothing-like-it", ""):
        field.fill(needle)
        expected = [n for n in every if needle.casefold() in n.casefold()]
        assert shown_names(page) == expected, needle
        if needle == "REPORT":
            screenshot(page, "home-filtered", full_page=False)
    # Sorted while filtered, then the filter emptied: every run, in order.
    field.fill("report")
    page.locator("section.reports th button.hub-sort").nth(2).click()
    field.fill("")
    sizes = [(many_runs / n).stat().st_size for n in shown_names(page)]
    assert sizes == sorted(sizes) and len(sizes) == len(RUNS)


def test_a_jobs_status_is_under_the_row_clicked(hub, many_runs, page):
    page.goto(hub)
    all_headlines(page, many_runs)
    # The last row, below the others.
    name = shown_names(page)[-1]
    row = row_of(page, name)
    with page.expect_popup() as opened:
        row.locator("a:text-is('Perfetto')").click()
    ui = opened.value
    ui.wait_for_function("window.received !== undefined", timeout=120_000)
    said = status_under(page, row).locator(".hub-status")
    status_under(page, row).locator(".hub-status:has-text('Opened')").wait_for()
    assert said.text_content() == f"Opened {name} in Perfetto."
    assert_right_under(row, said)
    # Nothing said above the list.
    assert page.locator(".hub-status").count() == 1
    assert page.locator("p.hub-status-box").count() == 0
    # Sorted, it goes with its row.
    page.locator("section.reports th button.hub-sort").nth(0).click()
    assert_right_under(row, said)
    page.bring_to_front()
    screenshot(page, "home-status-under-row", full_page=False)
    # Hidden again by its ×.
    status_under(page, row).locator("button.hub-dismiss").click()
    assert page.locator("tr.hub-status-row").count() == 0


def said(body: str) -> str:
    """What a refusal says: its JSON's `error`, else its text."""
    try:
        return json.loads(body)["error"]
    except (ValueError, KeyError, TypeError):
        return body.strip()


def drop(page, files: list[tuple[str, bytes]]) -> None:
    """A real drop event on the upload box, carrying `files`."""
    transfer = page.evaluate_handle(
        """(files) => { const transfer = new DataTransfer();
             for (const [name, data] of files) {
               const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
               transfer.items.add(new File([bytes], name));
             }
             return transfer; }""",
        [[name, base64.b64encode(data).decode()] for name, data in files],
    )
    page.dispatch_event("section.upload", "drop", {"dataTransfer": transfer})


def test_a_drop_of_several_files_tells_each_ones_fate(hub, many_runs, page, sqlite):
    page.goto(hub)
    page.wait_for_selector("section.upload input[type=file]")
    good = sqlite("nsys-ai_mock").read_bytes()
    files = [("empty.sqlite", b""), ("good run.sqlite", good), ("notes.txt", b"not a report\n")]
    # What the server says of each bad one, asked directly.
    base = hub.split("?")[0]
    csrf = page.request.get(base + "api/config").json()["csrf"]
    reasons = {}
    for name, data in files:
        if name == "good run.sqlite":
            continue
        answer = page.request.post(
            f"{base}upload?name={name}", data=data,
            headers={"Origin": base.rstrip("/"), "X-CSRF-Token": csrf,
                     "Content-Type": "application/octet-stream"},
        )
        assert answer.status in (400, 422), (name, answer.status)
        reasons[name] = said(answer.text()).removeprefix("refused: ").removeprefix(f"{name}: ")
    drop(page, files)
    lines = page.locator("section.upload ul.hub-uploads li")
    page.wait_for_function(
        """() => { const lines = document.querySelectorAll('section.upload ul.hub-uploads li');
             return lines.length === 3 && [...lines].every((l) => /^(Added|Refused|Not added)/.test(l.textContent)); }""",
        timeout=60_000,
    )
    told = lines.all_text_contents()
    assert told == [
        f"Refused empty.sqlite: {reasons['empty.sqlite']}",
        "Added good run.sqlite.",
        f"Refused notes.txt: {reasons['notes.txt']}",
    ], told
    assert "it is empty" in told[0] and "is no report" in told[2], told
    assert sorted(p.name for p in many_runs.iterdir() if p.name.startswith(("empty", "good", "notes"))) == [
        "good run.sqlite"
    ]
    assert (many_runs / "good run.sqlite").read_bytes() == good
    wait_for_headline(page, "good run.sqlite")
    screenshot(page, "home-dropped", full_page=False)
    # The file picker's choice: each file told too.
    bad = many_runs.parent / "bad.qdrep"
    bad.write_bytes(b"no signature")
    page.set_input_files("section.upload input[type=file]", [str(many_runs / "good run.sqlite"), str(bad)])
    page.wait_for_function(
        """() => { const lines = document.querySelectorAll('section.upload ul.hub-uploads li');
             return lines.length === 2 && [...lines].every((l) => /^(Added|Refused)/.test(l.textContent)); }""",
        timeout=60_000,
    )
    told = lines.all_text_contents()
    assert told[0] == "Added good run.sqlite as good run-2.sqlite.", told
    assert told[1].startswith("Refused bad.qdrep: ") and "signature" in told[1], told
