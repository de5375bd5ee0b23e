//! Long tables on the hub's pages: the stats page of a run of 16,582 NVTX
//! ranges holds the first rows of each table as HTML, the GPU's kernels
//! first, and its script gets every row (from the page, or for a long
//! table from `/api/rows`); checked against what `stats --format csv`
//! prints. (Filtering, sorting and "Show all" in a browser:
//! python/tests/test_hub_tables.py.)

use std::process::Command;

use super::{html_rows, runs, Server, BIN};

/// How many rows a hub page shows of a table.
const FIRST_ROWS: usize = 50;

/// Each summary of the stats page: its name (the heading's code), the
/// rows of its table in HTML, and every row its script gets (a name shown
/// shortened given whole), in the page's order.
type Shown = Vec<(String, Vec<Vec<String>>, Vec<Vec<String>>)>;

fn summaries(server: &Server, html: &str) -> Shown {
    html.split("<h2>")
        .skip(1)
        .map(|part| {
            let name = part.split("<code>").nth(1).unwrap();
            let name = name.split("</code>").next().unwrap().to_owned();
            let data = match part.split_once(" data-src=\"") {
                Some((_, rest)) => {
                    let at = rest.split('"').next().unwrap().replace("&amp;", "&");
                    let answer = server.get(&at);
                    assert_eq!(answer.status, 200, "{at}: {}", answer.text());
                    answer.text()
                }
                None => part
                    .split("<script type=\"application/json\" class=\"rows\">")
                    .nth(1)
                    .map(|rest| rest.split("</script>").next().unwrap())
                    .unwrap_or("[]")
                    .to_owned(),
            };
            let data: Vec<Vec<serde_json::Value>> = serde_json::from_str(&data).unwrap();
            let data = data
                .into_iter()
                .map(|row| {
                    row.into_iter()
                        .map(|cell| match cell {
                            serde_json::Value::String(text) => text,
                            serde_json::Value::Array(short_whole) => {
                                short_whole[1].as_str().unwrap().to_owned()
                            }
                            other => panic!("a cell {other}"),
                        })
                        .collect()
                })
                .collect();
            (name, html_rows(part), data)
        })
        .collect()
}

#[test]
fn serve_stats_page_shows_kernels_first_and_the_first_rows_of_long_tables() {
    let Some((dir, copies)) = runs(&["nsys-ai_h100_2gpu_1s.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let page = server.get("/stats/0/nsys-ai_h100_2gpu_1s.sqlite");
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    let shown = summaries(&server, &html);
    let names: Vec<&str> = shown.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "cuda_gpu_kern_sum",
            "cuda_gpu_mem_time_sum",
            "cuda_gpu_mem_size_sum",
            "cuda_api_sum",
            "nvtx_sum"
        ]
    );
    for (name, html, data) in &shown {
        let out = Command::new(BIN)
            .arg("stats")
            .arg(&copies[0])
            .args(["--report", name, "--format", "csv"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let rows = crate::support::nsys::csv_rows(&String::from_utf8(out.stdout).unwrap());
        let rows = &rows[1..];
        assert!(!rows.is_empty(), "{name}");
        assert_eq!(data, rows, "{name}: the page's data");
        assert_eq!(
            html[..],
            rows[..rows.len().min(FIRST_ROWS)],
            "{name}: the rows shown"
        );
    }
    let nvtx = &shown[4].2;
    assert!(nvtx.len() > 10_000, "{}", nvtx.len());
    assert!(html.contains(&format!("The first 50 of {} rows.", thousands(nvtx.len()))));
    // The page is its first rows: not 4.1 MB of 16,582 rows.
    assert!(html.len() < 200_000, "{} bytes", html.len());
    let refused = server.get("/api/rows/0/nsys-ai_h100_2gpu_1s.sqlite?summary=nope");
    assert_eq!(refused.status, 400);
}

fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
