//! A query run by trace_processor_shell over a trace: `-q FILE TRACE`,
//! whose answer is the last statement's rows as it prints them — a header
//! of quoted names, then rows whose text is quoted, numbers bare (reals
//! with six decimals) and NULL as `"[NULL]"` — and whose failure is its
//! last lines on standard error.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::statements::Statement;
use super::Answer;
use crate::error::{plain, Error, Result};
use crate::render::table::Cell;

/// The variable that names trace_processor_shell where no flag does.
pub const TRACE_PROCESSOR_VARIABLE: &str = "NSYS2PERFETTO_TRACE_PROCESSOR";

/// The trace_processor to run: `given` (a flag's), else the one
/// [`TRACE_PROCESSOR_VARIABLE`] names, else `trace_processor_shell` or
/// `trace_processor` on PATH; none where none is at hand.
pub fn find_trace_processor(given: Option<&Path>) -> Option<PathBuf> {
    if let Some(given) = given {
        return Some(given.to_owned());
    }
    if let Some(named) = std::env::var_os(TRACE_PROCESSOR_VARIABLE).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(named));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| ["trace_processor_shell", "trace_processor"].map(|name| dir.join(name)))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(path: &Path) -> bool {
    path.is_file()
}

/// Runs `statements` with `tp` over `trace`; stopped (the process killed,
/// nothing left) once `cancel` is set, as [`Error::Interrupted`] of `run`.
pub(super) fn run(
    tp: &Path,
    trace: &Path,
    statements: &[Statement],
    cancel: Option<&AtomicBool>,
    run: &Path,
) -> Result<Answer> {
    let scratch = crate::temporaries::directory("query")?;
    let sql_path = scratch.path().join("query.sql");
    let sql: String = statements
        .iter()
        .map(|s| format!("{};\n", s.text))
        .collect();
    std::fs::write(&sql_path, sql).map_err(Error::temporary)?;
    let mut out = tempfile::tempfile_in(scratch.path()).map_err(Error::temporary)?;
    let mut err = tempfile::tempfile_in(scratch.path()).map_err(Error::temporary)?;
    let mut child = Command::new(tp)
        .arg("-q")
        .arg(&sql_path)
        .arg(trace)
        .stdin(Stdio::null())
        .stdout(out.try_clone().map_err(Error::temporary)?)
        .stderr(err.try_clone().map_err(Error::temporary)?)
        .spawn()
        .map_err(|e| failed(&format!("cannot start {}: {}", tp.display(), plain(&e))))?;
    let status = loop {
        if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Interrupted {
                path: run.to_owned(),
            });
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(failed(&format!("{}: {}", tp.display(), plain(&e)))),
        }
    };
    let read = |file: &mut std::fs::File| -> Result<String> {
        let mut text = String::new();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_string(&mut text))
            .map_err(Error::temporary)?;
        Ok(text)
    };
    if !status.success() {
        return Err(failed(&last_error(&read(&mut err)?)));
    }
    parse(&read(&mut out)?)
}

fn failed(reason: &str) -> Error {
    Error::QueryFailed {
        reason: reason.to_owned(),
    }
}

/// What trace_processor said of a failed query, on one line: its lines
/// after the loading notes (`[time] file.cc:line ...`), the SQL it quotes
/// and the caret under it left out.
fn last_error(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('[') && !l.starts_with("Loading trace"))
        .collect();
    let said = lines
        .last()
        .copied()
        .unwrap_or("trace_processor failed, saying nothing");
    said.to_owned()
}

/// The rows trace_processor printed. Its output escapes no quote inside a
/// string, so a string holding a quote before a comma or a line break can
/// be read as more fields or rows than it is: a row whose count of
/// fields is not the columns' is refused, never shown cut or shifted.
fn parse(printed: &str) -> Result<Answer> {
    let mut lines = Fields::new(printed);
    let columns: Vec<String> = lines
        .next_row()
        .map(|row| row.into_iter().map(|v| v.text()).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    while let Some(row) = lines.next_row() {
        if row.len() != columns.len() {
            return Err(failed(&format!(
                "a row of the answer reads as {} fields under {} columns: one of its strings \
                 holds a quote before a comma or a line break, which trace_processor's output \
                 cannot tell apart from its own; select that string through replace(), or \
                 ask the export with --export",
                row.len(),
                columns.len()
            )));
        }
        rows.push(row);
    }
    Ok(Answer {
        columns,
        rows,
        left_out: 0,
    })
}

/// The printed rows, field by field: a quoted field ends at a quote
/// followed by a comma or the line's end (trace_processor escapes no
/// quote inside one), a bare one at a comma.
struct Fields<'t> {
    rest: &'t str,
}

impl<'t> Fields<'t> {
    fn new(text: &'t str) -> Fields<'t> {
        Fields { rest: text }
    }

    fn next_row(&mut self) -> Option<Vec<Cell>> {
        if self.rest.is_empty() {
            return None;
        }
        let mut row = Vec::new();
        loop {
            let (field, ended_line) = self.next_field();
            row.push(field);
            if ended_line || self.rest.is_empty() {
                return Some(row);
            }
        }
    }

    /// The next field, and whether the line ended after it.
    fn next_field(&mut self) -> (Cell, bool) {
        if let Some(quoted) = self.rest.strip_prefix('"') {
            let bytes = quoted.as_bytes();
            let mut end = None;
            for (at, _) in quoted.match_indices('"') {
                match bytes.get(at + 1) {
                    None | Some(b',' | b'\n') => {
                        end = Some(at);
                        break;
                    }
                    _ => {}
                }
            }
            let end = end.unwrap_or(quoted.len());
            let text = &quoted[..end];
            let after = quoted.get(end + 1..).unwrap_or("");
            let ended_line = !after.starts_with(',');
            self.rest = after.get(1..).unwrap_or("");
            let value = match text {
                "[NULL]" => Cell::Empty,
                text => Cell::Text(text.to_owned()),
            };
            return (value, ended_line);
        }
        let end = self.rest.find([',', '\n']).unwrap_or(self.rest.len());
        let text = &self.rest[..end];
        let ended_line = !self.rest[end..].starts_with(',');
        self.rest = self.rest.get(end + 1..).unwrap_or("");
        (number(text), ended_line)
    }
}

/// A bare field: an integer, or a real with as many decimals as printed
/// (text where it is neither).
fn number(text: &str) -> Cell {
    if let Ok(n) = text.parse::<i128>() {
        return Cell::Int(n);
    }
    match text.parse::<f64>() {
        Ok(real) => {
            let decimals = text.split_once('.').map_or(0, |(_, d)| {
                d.chars().take_while(char::is_ascii_digit).count()
            });
            Cell::Real(real, u8::try_from(decimals).unwrap_or(u8::MAX))
        }
        Err(_) => Cell::Text(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printed_rows_are_read_back() {
        let answer = parse("\"name\",\"n\",\"ms\",\"z\"\n\"a\"b,c\",2691,0.756191,\"[NULL]\"\n\"x\",-3,1e+20,\"\"\n")
            .unwrap();
        assert_eq!(answer.columns, ["name", "n", "ms", "z"]);
        assert_eq!(
            answer.rows[0],
            [
                Cell::Text("a\"b,c".into()),
                Cell::Int(2691),
                Cell::Real(0.756191, 6),
                Cell::Empty
            ]
        );
        assert_eq!(answer.rows[1][1], Cell::Int(-3));
        assert_eq!(answer.rows[1][3], Cell::Text(String::new()));
    }

    #[test]
    fn strings_the_output_cannot_tell_apart_are_refused_not_misread() {
        // The strings `a",b` and `a"` + line break + `b`, as trace_processor
        // prints them: no escape.
        for printed in ["\"s\",\"n\"\n\"a\",b\",1\n", "\"s\",\"n\"\n\"a\"\nb\",1\n"] {
            let refused = parse(printed).unwrap_err().to_string();
            assert!(refused.contains("fields under 2 columns"), "{refused}");
        }
    }
}
