//! Reading the CSV that `nsys stats` prints (trace_processor prints the same
//! dialect). Tests that run nsys ask `fixtures::require(Need::Nsys)` first.

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

/// The CSV that `stats`, `compare` and `analyze` write less the line that
/// marks each table (`# CUDA API Summary (cuda_api_sum) of run.sqlite`):
/// what nsys writes. Each table must have its line.
pub fn unmarked(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut table_starts = true;
    for line in text.split_inclusive('\n') {
        if table_starts {
            assert!(
                line.starts_with("# ") && line.contains(") of "),
                "a table without its marker line: {line:?}"
            );
            table_starts = false;
            continue;
        }
        table_starts = line == "\n";
        out.push_str(line);
    }
    out
}

/// Writes `script` to `path` as an executable stand-in for a program, and
/// returns once it can be run. While the file is open for writing, another
/// test thread may fork; its child holds the descriptor until it execs, and
/// running the script then fails with "text file busy" (ETXTBSY). Running it
/// once, retrying on that error, waits those children out.
#[cfg(unix)]
pub fn stand_in(path: &std::path::Path, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    const ETXTBSY: i32 = 26;
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    for _ in 0..500 {
        // What the script does with no argument does not matter here, only
        // that it starts: its output and status are dropped.
        match std::process::Command::new(path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .arg("--version")
            .status()
        {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => return,
        }
    }
    panic!("{} stayed busy for 5 s", path.display());
}
