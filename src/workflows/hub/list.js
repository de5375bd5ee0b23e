// The home page's list of runs: fetched again now and then (new files,
// headlines), sorted by any column (its header clicked; again, the other
// way), filtered by name, one line a run (names cut short are whole on
// hover; the links beyond the first two in a menu), a status row under a
// run where one of its links was clicked, and the runs chosen by their
// boxes: two compared on /compare, or put in one trace; several merged, or
// their steps measured across ranks.

const reports = document.querySelector("section.reports");

// The list as the server last sent it (the page's own is rearranged).
let shown = reports ? reports.innerHTML : "";

// The runs chosen, by id, in the order chosen.
const chosen = [];

// Each run's status row, by run id: kept across refreshes and sorts.
const statusRows = new Map();

// The column the list is sorted by (null: the server's order, newest
// first), and which way.
let sortedBy = null;
let descending = false;

// The id of a run's row (its report link's), or null where it cannot be
// read (no links).
function runId(row) {
  const link = row.querySelector("td:first-child a[href^='/report/']");
  return link ? link.getAttribute("href").slice("/report/".length) : null;
}

// The rows of runs, without the header and the status rows.
function runRows() {
  return Array.from(reports.querySelectorAll("tr")).filter(
    (row) => row.cells.length > 0 && row.cells[0].tagName === "TD" && !row.classList.contains("hub-status-row"),
  );
}

function columnCount() {
  const header = reports.querySelector("tr");
  return header ? header.cells.length : 1;
}

// The status place of `row`'s run: a row of its own right under it.
function rowPlace(row) {
  const id = runId(row) || "";
  let statusRow = statusRows.get(id);
  if (!statusRow) {
    statusRow = document.createElement("tr");
    statusRow.className = "hub-status-row";
    const cell = document.createElement("td");
    cell.colSpan = columnCount();
    const dismiss = document.createElement("button");
    dismiss.className = "hub-dismiss";
    dismiss.textContent = "×";
    dismiss.title = "hide this status";
    dismiss.addEventListener("click", () => {
      statusRow.remove();
      statusRows.delete(id);
    });
    statusRow.append(cell);
    statusRows.set(id, statusRow);
    // First, floated right: on the status's first line.
    new Place(cell);
    cell.prepend(dismiss);
  }
  row.after(statusRow);
  statusRow.hidden = row.hidden;
  return new Place(statusRow.cells[0]);
}

// A cell's value to sort by: a number (durations in ns, sizes in bytes,
// shares in percent) in a column of numbers, else its text; null where
// there is none (–, … while computed), sorted last either way.
const UNITS = { "": 1, ns: 1, "µs": 1e3, ms: 1e6, s: 1e9, B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, "%": 1 };
function sortKey(cell) {
  const text = cell.textContent.trim();
  if (text === "" || text === "–" || text === "…") {
    return null;
  }
  if (!cell.classList.contains("n")) {
    return text;
  }
  const below = text.startsWith("<");
  const number = /^<?\s*(-?[\d.]+)\s*(\S*)$/.exec(text);
  if (!number || !(number[2] in UNITS)) {
    return null;
  }
  const value = parseFloat(number[1]) * UNITS[number[2]];
  return below ? value / 2 : value;
}

function compareKeys(a, b) {
  if (a === null || b === null) {
    return (a === null) - (b === null);
  }
  const order =
    typeof a === "number" ? a - b : a.localeCompare(b, undefined, { numeric: true, sensitivity: "base" });
  return descending ? -order : order;
}

// The headers as buttons that sort (all but the links').
function addSortButtons() {
  const headers = Array.from(reports.querySelectorAll("tr:first-child th"));
  headers.slice(0, -1).forEach((th, column) => {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "hub-sort";
    button.textContent = th.textContent;
    button.title = "sort by " + th.textContent + " (again: the other way)";
    th.textContent = "";
    th.append(button);
    if (column === sortedBy) {
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
    }
    button.addEventListener("click", () => {
      descending = column === sortedBy ? !descending : false;
      sortedBy = column;
      for (const other of headers) {
        other.removeAttribute("aria-sort");
      }
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      arrange();
    });
  });
}

// Each run's box, to choose it by.
function addBoxes() {
  for (const row of runRows()) {
    const id = runId(row);
    if (id === null) {
      continue;
    }
    const box = document.createElement("input");
    box.type = "checkbox";
    box.className = "choose";
    box.title = "choose: compare, merge, steps across ranks";
    box.checked = chosen.includes(id);
    box.addEventListener("change", () => {
      const at = chosen.indexOf(id);
      if (box.checked && at < 0) {
        chosen.push(id);
      } else if (!box.checked && at >= 0) {
        chosen.splice(at, 1);
      }
      updateButtons();
    });
    row.cells[0].prepend(box, " ");
  }
}

// The links of a run past Perfetto and stats, in a menu ("more").
const SHOWN_LINKS = ["Perfetto", "stats"];
function addMenus() {
  for (const row of runRows()) {
    const cell = row.cells[row.cells.length - 1];
    const links = Array.from(cell.querySelectorAll("a"));
    const more = links.filter((a) => !SHOWN_LINKS.includes(a.textContent));
    if (more.length === 0) {
      continue;
    }
    const menu = document.createElement("details");
    menu.className = "hub-menu";
    const summary = document.createElement("summary");
    summary.textContent = "more";
    const items = document.createElement("div");
    items.append(...more);
    menu.append(summary, items);
    cell.textContent = "";
    for (const link of links.filter((a) => SHOWN_LINKS.includes(a.textContent))) {
      cell.append(link, " · ");
    }
    cell.append(menu);
  }
}

// A click anywhere closes the menus it is not in.
document.addEventListener("click", (event) => {
  for (const menu of document.querySelectorAll("details.hub-menu[open]")) {
    if (!menu.contains(event.target) || event.target.closest("a")) {
      menu.open = false;
    }
  }
});

// Cells cut short carry their whole text, shown on hover.
function addTitles() {
  for (const row of runRows()) {
    for (const cell of Array.from(row.cells).slice(0, -1)) {
      if (cell.scrollWidth > cell.clientWidth) {
        cell.title = cell.textContent.trim();
      } else {
        cell.removeAttribute("title");
      }
    }
  }
}

// The filter by name, and how many runs it leaves.
let filterField = null;
let filterCount = null;

// The rows in the order chosen, those the filter leaves shown, each
// followed by its status row.
function arrange() {
  const rows = runRows();
  if (rows.length === 0) {
    return;
  }
  if (sortedBy !== null) {
    // Ties in the server's order (newest first), whichever way.
    const keyed = rows.map((row) => ({ row, at: Number(row.dataset.listed), key: sortKey(row.cells[sortedBy]) }));
    keyed.sort((a, b) => compareKeys(a.key, b.key) || a.at - b.at);
    rows.splice(0, rows.length, ...keyed.map((k) => k.row));
  }
  const needle = filterField ? filterField.value.trim().toLowerCase() : "";
  const body = rows[0].parentNode;
  let left = 0;
  for (const row of rows) {
    row.hidden = needle !== "" && !row.cells[0].textContent.toLowerCase().includes(needle);
    left += row.hidden ? 0 : 1;
    body.append(row);
    const statusRow = statusRows.get(runId(row) || "");
    if (statusRow) {
      statusRow.hidden = row.hidden;
      body.append(statusRow);
    }
  }
  // The status of a run no longer listed stays, last.
  for (const statusRow of statusRows.values()) {
    if (!statusRow.isConnected) {
      body.append(statusRow);
    }
  }
  if (filterCount) {
    filterCount.textContent = needle === "" ? "" : left + " of " + rows.length + " runs";
  }
}

// The list made the page's: sort buttons, boxes, menus, order, titles.
function decorate() {
  runRows().forEach((row, at) => {
    row.dataset.listed = at;
  });
  addSortButtons();
  addBoxes();
  addMenus();
  arrange();
  addTitles();
}

// The buttons that act on the runs chosen.
let compareButton = null;
let bothButton = null;
let mergeButton = null;
let stepsButton = null;
let stepField = null;

function updateButtons() {
  compareButton.disabled = chosen.length !== 2;
  compareButton.textContent =
    chosen.length === 2 ? "Compare the two chosen runs" : "Choose two runs to compare";
  bothButton.disabled = chosen.length !== 2;
  mergeButton.disabled = chosen.length < 2;
  stepsButton.disabled = chosen.length < 1;
}

// A trace made of the chosen runs (`compare --trace`, `merge`), made as a
// job followed live beside the buttons, then downloaded.
async function makeTrace(kind, doing, place) {
  const query = chosen.map((id) => "run=" + id).join("&");
  try {
    await followed("/api/make/" + kind + "?" + query, doing, place);
  } catch (message) {
    place.say(String(message));
    return;
  }
  place.say("Made: downloading it.");
  window.location.href = "/made/" + kind + "?" + query;
}

// The steps of the chosen runs across their ranks (`report --step
// PATTERN`), measured as a job followed live, then shown: the CLI's page.
async function showSteps(place) {
  const query =
    chosen.map((id) => "run=" + id).join("&") + "&step=" + encodeURIComponent(stepField.value);
  try {
    await followed("/api/make/steps?" + query, "Measuring the steps of the chosen runs", place);
  } catch (message) {
    place.say(String(message));
    return;
  }
  window.location.href = "/made/steps?" + query;
}

if (reports) {
  const tools = document.createElement("div");
  tools.className = "hub-tools hub-choose";
  compareButton = document.createElement("button");
  compareButton.id = "hub-compare";
  compareButton.addEventListener("click", () => {
    if (chosen.length === 2) {
      window.location.href = "/compare?a=" + chosen[0] + "&b=" + chosen[1];
    }
  });
  bothButton = document.createElement("button");
  bothButton.id = "hub-both";
  bothButton.textContent = "Both runs in one trace";
  bothButton.addEventListener("click", () =>
    makeTrace("compare", "Putting both runs in one trace", placeNear(tools)),
  );
  mergeButton = document.createElement("button");
  mergeButton.id = "hub-merge";
  mergeButton.textContent = "Merge the chosen runs into one trace";
  mergeButton.addEventListener("click", () =>
    makeTrace("merge", "Merging the chosen runs", placeNear(tools)),
  );
  stepField = document.createElement("input");
  stepField.id = "hub-step-pattern";
  stepField.type = "text";
  stepField.value = "ProfilerStep*";
  stepField.title =
    "the steps: NVTX ranges whose names match this glob (* any text, ? one character), as report --step takes it";
  stepField.setAttribute("aria-label", "step pattern");
  stepsButton = document.createElement("button");
  stepsButton.id = "hub-steps";
  stepsButton.textContent = "Steps across ranks";
  stepsButton.addEventListener("click", () => showSteps(placeNear(tools)));
  stepField.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !stepsButton.disabled) {
      showSteps(placeNear(tools));
    }
  });
  const stepLabel = document.createElement("label");
  stepLabel.append("step pattern ", stepField);
  tools.append(compareButton, bothButton, mergeButton, stepsButton, stepLabel);

  const find = document.createElement("div");
  find.className = "hub-tools hub-find";
  filterField = document.createElement("input");
  filterField.id = "hub-filter";
  filterField.type = "search";
  filterField.placeholder = "part of a run's name";
  filterField.addEventListener("input", () => {
    arrange();
    addTitles();
  });
  const filterLabel = document.createElement("label");
  filterLabel.append("Filter by name ", filterField);
  filterCount = document.createElement("span");
  filterCount.className = "hub-filter-count";
  find.append(filterLabel, filterCount);

  reports.before(tools, find);
  updateButtons();
  decorate();
  window.addEventListener("resize", addTitles);
}

async function refresh() {
  if (!reports) {
    return;
  }
  try {
    const response = await fetch("/", { credentials: "same-origin" });
    const page = new DOMParser().parseFromString(await response.text(), "text/html");
    const fresh = page.querySelector("section.reports");
    if (fresh && fresh.innerHTML !== shown) {
      shown = fresh.innerHTML;
      reports.innerHTML = fresh.innerHTML;
      decorate();
    }
    const count = page.querySelector("h1 + p");
    const mine = document.querySelector("h1 + p");
    if (count && mine && count.textContent !== mine.textContent) {
      mine.textContent = count.textContent;
    }
  } catch (e) {
    // The server is gone or restarting: try again later.
  }
}
if (reports) {
  setInterval(refresh, 2000);
}
