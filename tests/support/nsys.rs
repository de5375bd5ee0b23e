//! The `nsys` CLI for tests that compare with NVIDIA's own tools. Without it
//! they say why and skip, except in CI, which must have it.

#![allow(dead_code)]

use std::process::Command;

pub fn available(test: &str) -> bool {
    let found = Command::new("nsys")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        let in_ci = std::env::var("CI").is_ok_and(|v| !v.is_empty());
        assert!(
            !in_ci,
            "{test}: nsys is not on PATH in CI (.ci/install-nsys should have installed it)"
        );
        eprintln!(
            "SKIP {test}: nsys is not on PATH (run .ci/install-nsys, or install Nsight Systems)"
        );
    }
    found
}

/// The rows of a CSV text (RFC 4180 quoting), as fields.
pub fn csv_rows(text: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut row = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut field)),
            ('\n', false) => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
            }
            ('\r', false) => {}
            (c, _) => field.push(c),
        }
    }
    if !field.is_empty() || !row.is_empty() {
        row.push(field);
        rows.push(row);
    }
    rows
}
