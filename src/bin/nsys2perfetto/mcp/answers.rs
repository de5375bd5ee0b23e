//! Each tool's answer, computed by the library and written by its one
//! renderer in JSON, as `--format json` of the command line writes it; a
//! short summary in words beside it. Rows are cut to the `limit` asked, and
//! the answer then to the byte cap, saying how many rows were left out.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use nsys2perfetto::analyze::{analyze_file, write_findings, Rule, Thresholds};
use nsys2perfetto::compare::{
    compare, compare_files, comparison_table, incomplete_sides, top_by_kind, Kind,
};
use nsys2perfetto::hub::{scan, Cache};
use nsys2perfetto::query::{find_trace_processor, query_file, Engine};
use nsys2perfetto::report::{report_files, write_page, PageFormat, ReportOptions};
use nsys2perfetto::stats::{summarize_file, Fit, RangeNames, StatsReport, Table, TableFormat};
use nsys2perfetto::steps::{StepOptions, StepPattern};
use nsys2perfetto::{convert_file, Options, OutputFile, Progress};

use super::scope::Scope;

/// A tool's answer: the JSON of the command line, and a line or two in words.
pub struct Answer {
    pub json: Value,
    pub summary: String,
}

/// What every tool is given: the scope, the cache, the options of the
/// reading (its cancellation flag), where its progress goes.
pub struct Context<'c> {
    pub scope: &'c Scope,
    pub cache: &'c Cache,
    pub options: Options,
    pub progress: &'c mut dyn FnMut(String),
}

/// Rows shown where no `limit` is asked.
pub const DEFAULT_LIMIT: usize = 50;

type Answered = Result<Answer, String>;

/// `table` in JSON (one object, as a table alone is written), at most
/// `limit` rows, `more_rows` saying how many more there were.
fn table_json(table: &Table, files: &[String], limit: usize) -> Value {
    let mut cut = table.clone();
    let left_out = cut.rows.len().saturating_sub(limit);
    cut.rows.truncate(limit);
    let mut text = Vec::new();
    cut.write(&mut text, TableFormat::Json, files, Fit::Whole)
        .expect("writing to memory");
    let mut value: Value = serde_json::from_slice(&text).expect("the renderer writes JSON");
    if left_out > 0 {
        value["more_rows"] = json!(left_out);
    }
    value
}

/// Leaves out findings from the end of the rule with the most rows left,
/// again and again, until `excess` bytes (and room for what says so) are
/// gone; each rule's `more_rows` counts what it lost. Returns how many.
fn cut_findings(rules: &mut [Value], excess: usize, size: impl Fn(&Value) -> usize) -> usize {
    // Room for the fields that say what was left out.
    let mut excess = excess + 200 + 24 * rules.len();
    let sizes: Vec<Vec<usize>> = (rules.iter())
        .map(|rule| {
            rule["rows"]
                .as_array()
                .map_or(Vec::new(), |rows| rows.iter().map(&size).collect())
        })
        .collect();
    let mut kept: Vec<usize> = sizes.iter().map(Vec::len).collect();
    while excess > 0 {
        let Some(longest) = (0..kept.len())
            .filter(|&r| kept[r] > 0)
            .max_by_key(|&r| kept[r])
        else {
            break;
        };
        kept[longest] -= 1;
        excess = excess.saturating_sub(sizes[longest][kept[longest]] + 1);
    }
    let mut dropped = 0;
    for (rule, keep) in rules.iter_mut().zip(kept) {
        let Some(rows) = rule.get_mut("rows").and_then(Value::as_array_mut) else {
            continue;
        };
        let left_out = rows.len() - keep;
        if left_out > 0 {
            rows.truncate(keep);
            let more = rule["more_rows"].as_u64().unwrap_or(0) + left_out as u64;
            rule["more_rows"] = json!(more);
            dropped += left_out;
        }
    }
    dropped
}

/// The lists an answer may be cut at, each with the field counting what
/// was left out of it: a table's rows, the job's steps.
const CUTTABLE: [(&str, &str); 2] = [("rows", "more_rows"), ("steps", "more_steps")];

/// `value` within `max_bytes`: items of its list (`value["rows"]`, else
/// `value["steps"]`) left out from the end, counted as `limit` counts them,
/// until it fits; refused where it cannot.
pub fn capped(mut value: Value, max_bytes: usize) -> Result<Value, String> {
    let size = |v: &Value| serde_json::to_vec(v).map_or(usize::MAX, |t| t.len());
    let whole = size(&value);
    if whole <= max_bytes {
        return Ok(value);
    }
    let refused = || {
        format!("the answer takes {whole} bytes, more than the cap of {max_bytes}: ask for less")
    };
    if let Some(rules) = value.get_mut("rules").and_then(Value::as_array_mut) {
        let dropped = cut_findings(rules, whole - max_bytes, size);
        value["capped"] = json!(format!(
            "{dropped} findings left out to fit the cap of {max_bytes} bytes, the longest \
             rule's first (each rule's more_rows counts them; ask for fewer with limit)"
        ));
        return match size(&value) <= max_bytes {
            true => Ok(value),
            false => Err(refused()),
        };
    }
    let Some((list, more_key)) = CUTTABLE
        .into_iter()
        .find(|(list, _)| value.get(list).is_some_and(Value::is_array))
    else {
        return Err(refused());
    };
    let items = value[list].as_array_mut().expect("found an array");
    // Room for the two fields that say what was left out.
    let mut excess = whole - max_bytes + 200;
    let mut keep = items.len();
    while keep > 0 && excess > 0 {
        keep -= 1;
        excess = excess.saturating_sub(size(&items[keep]) + 1);
    }
    let dropped = items.len() - keep;
    items.truncate(keep);
    let more = value[more_key].as_u64().unwrap_or(0) + dropped as u64;
    value[more_key] = json!(more);
    value["capped"] = json!(format!(
        "{dropped} {list} left out to fit the cap of {max_bytes} bytes (ask for fewer with limit)"
    ));
    match size(&value) <= max_bytes {
        true => Ok(value),
        false => Err(refused()),
    }
}

/// The runs under the directories, newest first, with their headlines.
pub fn list_reports(cx: &mut Context<'_>, limit: usize) -> Answered {
    let (entries, failed) = scan(cx.scope.roots());
    let mut reports = Vec::new();
    for entry in entries.iter().take(limit) {
        (cx.progress)(format!("reading {}", entry.path.display()));
        let headline = cx
            .cache
            .compute_headline(entry, &cx.options)
            .map_err(|e| e.to_string())?;
        reports.push(json!({
            "path": entry.path.display().to_string(),
            "size": entry.size,
            "headline": headline,
        }));
    }
    let left_out = entries.len().saturating_sub(limit);
    let unreadable: Vec<String> = failed
        .iter()
        .map(|(dir, e)| format!("{}: {e}", dir.display()))
        .collect();
    Ok(Answer {
        summary: format!(
            "{} run(s) under the served directories; {} shown, {left_out} left out",
            entries.len(),
            reports.len()
        ),
        json: json!({"reports": reports, "left_out": left_out, "unreadable": unreadable}),
    })
}

/// One run's report, as `report RUN --format json`.
pub fn report(cx: &mut Context<'_>, run: &Path) -> Answered {
    (cx.progress)(format!("reading {}", run.display()));
    let page = report_files(
        &[run.to_owned()],
        &ReportOptions::default(),
        &cx.options.read,
        &mut |_| {},
    )
    .map_err(|e| e.to_string())?;
    let mut text = Vec::new();
    write_page(&mut text, &page, PageFormat::Json).expect("writing to memory");
    let json: Value = serde_json::from_slice(&text).expect("the renderer writes JSON");
    Ok(Answer {
        summary: format!("the report of {}", run.display()),
        json,
    })
}

/// One summary table of `stats`, its rows whose name holds `name`, at most
/// `limit`.
pub fn stats(
    cx: &mut Context<'_>,
    run: &Path,
    table: &str,
    name: Option<&str>,
    limit: usize,
) -> Answered {
    let which: StatsReport = table.parse()?;
    (cx.progress)(format!("summarizing {}", run.display()));
    let tables = summarize_file(run, &[which], RangeNames::Recorded, &cx.options.read)
        .map_err(|e| e.to_string())?;
    let mut found = tables.into_iter().next().ok_or("no such summary")?;
    if let Some(name) = name {
        let at = found.columns.iter().position(|c| c == "Name");
        if let Some(at) = at {
            found
                .rows
                .retain(|row| row.get(at).is_some_and(|c| c.text().contains(name)));
        }
    }
    let rows = found.rows.len();
    Ok(Answer {
        summary: format!("{} of {}: {rows} row(s)", found.title, run.display()),
        json: table_json(&found, &[run.display().to_string()], limit),
    })
}

/// One run's findings of `rule` (default: every rule), as `analyze RUN
/// --rule RULE --rows LIMIT --format json` writes them: its objects, one per
/// rule (each saying in `more_rows` how many findings `limit` left out), in
/// `rules`.
pub fn findings(cx: &mut Context<'_>, run: &Path, rule: Option<&str>, limit: usize) -> Answered {
    let rules = match rule {
        Some(name) => vec![name.parse::<Rule>()?],
        None => Rule::ALL.to_vec(),
    };
    (cx.progress)(format!("analyzing {}", run.display()));
    let found = analyze_file(run, &rules, &Thresholds::default(), &cx.options.read)
        .map_err(|e| e.to_string())?;
    let mut text = Vec::new();
    let name = run.display().to_string();
    write_findings(&mut text, &found, &name, TableFormat::Json, Some(limit))
        .expect("writing to memory");
    let objects: Vec<Value> = (text.split(|&b| b == b'\n'))
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).expect("the renderer writes JSON"))
        .collect();
    let counts: Vec<String> = (found.rules().iter())
        .map(|&rule| format!("{} {rule}", found.count(rule)))
        .collect();
    let mut summary = format!("findings of {name}: {}", counts.join(", "));
    for warning in found.warnings() {
        summary.push_str(&format!("; {warning}"));
    }
    Ok(Answer {
        summary,
        json: json!({"rules": objects}),
    })
}

/// Two runs compared, as `compare A B --format json --top LIMIT`.
pub fn compare_runs(cx: &mut Context<'_>, a: &Path, b: &Path, limit: usize) -> Answered {
    (cx.progress)(format!("comparing {} and {}", a.display(), b.display()));
    let (sa, sb) =
        compare_files(a, b, RangeNames::Recorded, &cx.options.read).map_err(|e| e.to_string())?;
    let mut table = comparison_table(&top_by_kind(compare(&sa, &sb), &Kind::ALL, Some(limit)));
    table.incomplete = incomplete_sides(&sa.incomplete, &sb.incomplete);
    let files = [a.display().to_string(), b.display().to_string()];
    Ok(Answer {
        summary: format!(
            "{} against {}: the {limit} largest changes of each kind",
            b.display(),
            a.display()
        ),
        json: table_json(&table, &files, usize::MAX),
    })
}

/// The job the `runs` make, as ranks: its steps (the NVTX ranges `pattern`
/// matches), as `report --step PATTERN RUN... --format json` writes them in
/// its `steps`; at most `limit` steps, `more_steps` saying how many more.
pub fn steps(cx: &mut Context<'_>, runs: &[PathBuf], pattern: &str, limit: usize) -> Answered {
    let pattern = StepPattern::new(pattern).map_err(|e| e.to_string())?;
    let mut options = ReportOptions::default();
    options.steps = Some(StepOptions::new(pattern));
    let progress = &mut *cx.progress;
    let page = report_files(runs, &options, &cx.options.read, &mut |run: &Path| {
        progress(format!("reading {}", run.display()))
    })
    .map_err(|e| e.to_string())?;
    let mut text = Vec::new();
    write_page(&mut text, &page, PageFormat::Json).expect("writing to memory");
    let mut whole: Value = serde_json::from_slice(&text).expect("the renderer writes JSON");
    let mut json = whole["steps"].take();
    let Some(steps) = json.get_mut("steps").and_then(Value::as_array_mut) else {
        return Err("no steps were measured".into());
    };
    let count = steps.len();
    steps.truncate(limit);
    if count > limit {
        json["more_steps"] = json!(count - limit);
    }
    Ok(Answer {
        summary: format!(
            "{count} step(s) across {} run(s); {} shown",
            runs.len(),
            count.min(limit)
        ),
        json,
    })
}

/// Read-only SQL over a run, as `query RUN SQL --format json`.
pub fn query(cx: &mut Context<'_>, run: &Path, sql: &str, limit: usize) -> Answered {
    let engine = match find_trace_processor(None) {
        Some(tp) => Engine::TraceProcessor(tp),
        None => Engine::Export,
    };
    (cx.progress)(format!("querying {}", run.display()));
    let answer = query_file(cx.cache, run, sql, &engine, &cx.options, &mut |_| {})
        .map_err(|e| e.to_string())?;
    let rows = answer.rows.len();
    let over = match &engine {
        Engine::TraceProcessor(_) => "trace_processor over its trace",
        Engine::Export => "its SQLite export (no trace_processor at hand)",
    };
    Ok(Answer {
        summary: format!("{rows} row(s) of {}, by {over}", run.display()),
        json: table_json(&answer.table(), &[run.display().to_string()], limit),
    })
}

/// `run` converted into the folder `into` (never over an input).
pub fn convert(cx: &mut Context<'_>, run: &Path, into: &Path) -> Answered {
    let stem = run
        .file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let path: PathBuf = into.join(format!("{stem}.perfetto-trace"));
    let output = OutputFile::new(&path).inputs(&[run]);
    output.check().map_err(|e| e.to_string())?;
    let progress = &mut *cx.progress;
    let mut heard = |p: Progress| {
        if p.rows_total > 0 {
            progress(format!("{} of about {} rows", p.rows_read, p.rows_total));
        }
    };
    convert_file(run, &output, &cx.options, &mut heard).map_err(|e| e.to_string())?;
    let shown = path.display().to_string();
    Ok(Answer {
        summary: format!(
            "{} -> {shown}; open it with `nsys2perfetto open {shown}`",
            run.display()
        ),
        json: json!({"trace": shown, "open": format!("nsys2perfetto open {shown}")}),
    })
}
