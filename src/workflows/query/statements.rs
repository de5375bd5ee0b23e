//! SQL read as statements, with what makes a statement a read: its first
//! word is `SELECT`, `WITH`, `VALUES` or `INCLUDE` (trace_processor's
//! `INCLUDE PERFETTO MODULE`, which loads its standard library's views),
//! and no word of a write (`INSERT`, `CREATE`, `ATTACH`, ...) stands
//! outside its strings, quoted names and comments. trace_processor has no
//! way to ask it whether a statement writes, so it is judged here, by its
//! words; the SQLite export is asked besides (`sqlite3_stmt_readonly`).

use crate::error::{Error, Result};

/// Words no read holds outside strings and quoted names. `REPLACE` is
/// also a function (`replace(x, y, z)`), so only `REPLACE INTO` counts.
const WRITING: &[&str] = &[
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "ALTER",
    "ATTACH",
    "DETACH",
    "PRAGMA",
    "VACUUM",
    "REINDEX",
    "SAVEPOINT",
    "RELEASE",
    "ROLLBACK",
    "BEGIN",
    "COMMIT",
    "ANALYZE",
];

/// The first words a read starts with.
const READING: &[&str] = &["SELECT", "WITH", "VALUES", "INCLUDE"];

/// One statement of a query: its text (without the `;`) and its words
/// outside strings, quoted names and comments, in upper case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    /// Its text, without its `;`.
    pub text: String,
    /// Its words outside strings, quoted names and comments, in upper case.
    pub words: Vec<String>,
}

/// The statements of `sql`, empty ones (`;;`, comments alone) left out.
pub fn statements(sql: &str) -> Vec<Statement> {
    let mut found = Vec::new();
    let mut text = String::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut chars = sql.chars().peekable();
    let end_word = |word: &mut String, words: &mut Vec<String>| {
        if !word.is_empty() {
            words.push(std::mem::take(word).to_ascii_uppercase());
        }
    };
    while let Some(c) = chars.next() {
        // A quoted part is copied whole: its words are no words of the SQL.
        let closing = match c {
            '\'' => Some('\''),
            '"' => Some('"'),
            '`' => Some('`'),
            '[' => Some(']'),
            _ => None,
        };
        if let Some(close) = closing {
            end_word(&mut word, &mut words);
            text.push(c);
            for q in chars.by_ref() {
                text.push(q);
                if q == close {
                    break;
                }
            }
            continue;
        }
        if c == '-' && chars.peek() == Some(&'-') {
            end_word(&mut word, &mut words);
            for q in chars.by_ref() {
                if q == '\n' {
                    text.push('\n');
                    break;
                }
            }
            continue;
        }
        if c == '/' && chars.peek() == Some(&'*') {
            end_word(&mut word, &mut words);
            chars.next();
            let mut last = ' ';
            for q in chars.by_ref() {
                if last == '*' && q == '/' {
                    break;
                }
                last = q;
            }
            text.push(' ');
            continue;
        }
        if c == ';' {
            end_word(&mut word, &mut words);
            if !words.is_empty() {
                found.push(Statement {
                    text: std::mem::take(&mut text).trim().to_owned(),
                    words: std::mem::take(&mut words),
                });
            }
            text.clear();
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            end_word(&mut word, &mut words);
        }
        text.push(c);
    }
    end_word(&mut word, &mut words);
    if !words.is_empty() {
        found.push(Statement {
            text: text.trim().to_owned(),
            words,
        });
    }
    found
}

/// The statements of `sql`, each a read; else why not, naming the first
/// statement that is none.
pub fn reads(sql: &str) -> Result<Vec<Statement>> {
    let found = statements(sql);
    if found.is_empty() {
        return Err(refused("the query holds no statement"));
    }
    for statement in &found {
        if let Some(why) = why_not_a_read(statement) {
            return Err(refused(&format!(
                "{why} in {:?}: only reads (SELECT, WITH, VALUES, INCLUDE PERFETTO MODULE) are run",
                shortened(&statement.text)
            )));
        }
    }
    Ok(found)
}

/// Why `statement` is no read, if it is none.
fn why_not_a_read(statement: &Statement) -> Option<String> {
    let first = statement.words.first()?;
    if !READING.contains(&first.as_str()) {
        return Some(format!("{first} is no read"));
    }
    if first == "INCLUDE"
        && statement.words.get(1..3) != Some(&["PERFETTO".into(), "MODULE".into()])
    {
        return Some("INCLUDE other than INCLUDE PERFETTO MODULE is no read".into());
    }
    let mut pairs = statement.words.windows(2);
    let replace = pairs.any(|pair| pair[0] == "REPLACE" && pair[1] == "INTO");
    if replace {
        return Some("REPLACE INTO writes".into());
    }
    let writing = statement
        .words
        .iter()
        .find(|w| WRITING.contains(&w.as_str()))?;
    Some(format!("{writing} writes"))
}

/// A query refused, or one that failed: its one line.
pub fn refused(reason: &str) -> Error {
    Error::QueryRefused {
        reason: reason.to_owned(),
    }
}

/// `text` on one line, at most 60 characters.
fn shortened(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pass_and_writes_are_refused() {
        assert!(reads("SELECT 1; -- DROP TABLE x\n select 'DELETE' as \"insert\"").is_ok());
        assert!(reads("include perfetto module slices.with_context; select 1").is_ok());
        assert!(
            reads("WITH a AS (SELECT replace(name, 'a', 'b') FROM slice) SELECT * FROM a").is_ok()
        );
        for writing in [
            "DELETE FROM slice",
            "select 1; drop table slice",
            "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a",
            "ATTACH 'x.db' AS x",
            "create perfetto table t as select 1",
            "select 1 /* ; */; pragma writable_schema=1",
            "INCLUDE 'x'",
            "",
            "-- nothing",
        ] {
            let e = reads(writing).expect_err(writing);
            assert!(e.to_string().starts_with("query refused: "), "{e}");
        }
    }

    #[test]
    fn statements_split_outside_quotes() {
        let found = statements("select ';' as a;; select [x;y] from \"t;u\" -- c;\n");
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].text, "select ';' as a");
        assert_eq!(found[1].words, ["SELECT", "FROM"]);
    }
}
