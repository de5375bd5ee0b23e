// The data tables of the hub's pages (src/render/data_table.rs): a page
// shows a table's first rows, and says where all of them are (JSON: fetched
// from `data-src`, else in a data block beside the table); this adds a
// filter box, sorting by any column (click its header) and "Show all",
// working on every row. The rows are read on the first use only, so a page
// of 16,582 rows paints as fast as one of 50. It never builds HTML from
// data: cells get their text as textContent.
"use strict";

(() => {
  const count = (n) => n.toLocaleString("en-US");
  // A cell of the data: its text, or [short, whole] for a long name.
  const whole = (cell) => (Array.isArray(cell) ? cell[1] : cell);

  function cellOf(cell, numeric) {
    const td = document.createElement("td");
    if (numeric) {
      td.className = "n";
      td.textContent = cell;
    } else if (Array.isArray(cell)) {
      // As the server writes it: the short name, the whole one a click away.
      td.className = "name";
      const details = document.createElement("details");
      const summary = document.createElement("summary");
      summary.title = cell[1];
      summary.textContent = cell[0];
      details.append(summary, cell[1]);
      td.append(details);
    } else {
      td.textContent = cell;
    }
    return td;
  }

  // A number of a numeric column (NaN for an empty cell: sorted last).
  const number = (cell) => (cell === "" ? NaN : Number(cell));

  function setUp(holder) {
    const table = holder.querySelector("table.data");
    const block = holder.querySelector("script.rows");
    const headers = [...table.tHead.rows[0].cells];
    const numeric = headers.map((th) => th.classList.contains("n"));
    const first = Number(holder.dataset.first);
    const total = Number(holder.dataset.rows);
    const state = { filter: "", column: -1, descending: false, all: false };
    // [{cells, index, text}], fetched or read from the block once.
    let rows = null;
    const data = () => {
      rows ??= (async () => {
        let cells;
        if (holder.dataset.src) {
          shown.textContent = `Loading ${count(total)} rows…`;
          const answer = await fetch(holder.dataset.src, { credentials: "same-origin" });
          if (!answer.ok) {
            throw new Error(`${answer.status} ${(await answer.text()).trim()}`);
          }
          cells = await answer.json();
        } else {
          cells = JSON.parse(block.textContent);
        }
        return cells.map((row, index) => ({
          cells: row,
          index,
          text: row.map(whole).join("\u0000").toLowerCase(),
        }));
      })();
      return rows;
    };
    // Each change draws the table; only the latest one's drawing stays.
    let drawing = 0;

    const controls = document.createElement("div");
    controls.className = "table-controls";
    const shown = document.createElement("span");
    shown.className = "shown";
    shown.setAttribute("role", "status");
    let filter = null;
    let all = null;
    if (total > first) {
      filter = document.createElement("input");
      filter.type = "search";
      filter.placeholder = `Filter ${count(total)} rows`;
      filter.setAttribute("aria-label", "Filter the rows");
      all = document.createElement("button");
      all.type = "button";
      controls.append(filter, all, shown);
      table.before(controls);
      const note = holder.querySelector("p.shown");
      if (note) {
        note.remove();
      }
    }

    async function draw() {
      const mine = ++drawing;
      let list;
      try {
        list = await data();
      } catch (error) {
        rows = null;
        shown.textContent = `The rows could not be read (${error.message}): reload the page.`;
        return;
      }
      if (mine !== drawing) {
        return;
      }
      const needle = state.filter.trim().toLowerCase();
      if (needle) {
        list = list.filter((row) => row.text.includes(needle));
      }
      if (state.column >= 0) {
        const c = state.column;
        const sign = state.descending ? -1 : 1;
        const key = numeric[c] ? (row) => number(whole(row.cells[c])) : (row) => whole(row.cells[c]);
        list = list
          .map((row) => ({ row, key: key(row) }))
          .sort((x, y) => {
            const [a, b] = [x.key, y.key];
            if (numeric[c] && (Number.isNaN(a) || Number.isNaN(b))) {
              return Number.isNaN(a) - Number.isNaN(b) || x.row.index - y.row.index;
            }
            const order = numeric[c] ? a - b : a.localeCompare(b);
            return sign * order || x.row.index - y.row.index;
          })
          .map((keyed) => keyed.row);
      }
      const drawn = state.all ? list : list.slice(0, first);
      const body = document.createElement("tbody");
      for (const row of drawn) {
        const tr = document.createElement("tr");
        row.cells.forEach((cell, i) => tr.append(cellOf(cell, numeric[i])));
        body.append(tr);
      }
      table.tBodies[0].replaceWith(body);
      // The headers say the order shown.
      headers.forEach((h, i) => {
        if (i === state.column) {
          h.setAttribute("aria-sort", state.descending ? "descending" : "ascending");
        } else {
          h.removeAttribute("aria-sort");
        }
      });
      if (all) {
        const of = needle ? `${count(list.length)} matching of ${count(total)}` : count(total);
        shown.textContent = drawn.length === list.length
          ? `All ${of} rows.`
          : `The first ${count(drawn.length)} of ${of} rows.`;
        all.textContent = state.all ? `Show the first ${count(first)}` : "Show all";
        all.hidden = !state.all && list.length <= first;
      }
    }

    if (all) {
      let typing = null;
      filter.addEventListener("input", () => {
        clearTimeout(typing);
        typing = setTimeout(() => {
          state.filter = filter.value;
          draw();
        }, 150);
      });
      all.addEventListener("click", () => {
        state.all = !state.all;
        draw();
      });
      all.textContent = "Show all";
      shown.textContent = `The first ${count(first)} of ${count(total)} rows.`;
    }
    headers.forEach((th, i) => {
      th.tabIndex = 0;
      th.title = "Sort by this column";
      const sort = () => {
        // Numbers largest first, names A to Z; again: the other way.
        state.descending = state.column === i ? !state.descending : numeric[i];
        state.column = i;
        draw();
      };
      th.addEventListener("click", sort);
      th.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          sort();
        }
      });
    });
  }

  const start = () => document.querySelectorAll("div.data-table").forEach(setUp);
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
