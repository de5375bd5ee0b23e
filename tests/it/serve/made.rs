//! Traces made of several runs, as jobs: both runs of a comparison in one
//! trace (the bytes `compare A B --trace` writes) and a merge (the bytes
//! `merge` writes), followed live and kept in the cache.

use std::path::Path;
use std::process::Command;

use super::{id_in, names_in, percent_encode, runs, Server, BIN};

/// What the CLI writes to the file it is given after `args`.
fn written_by_cli(args: &[&std::ffi::OsStr], flag: &str) -> Vec<u8> {
    let out = tempfile::tempdir().unwrap();
    let trace = out.path().join("t.perfetto-trace");
    let done = Command::new(BIN)
        .args(args)
        .arg(flag)
        .arg(&trace)
        .arg("-q")
        .output()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    std::fs::read(&trace).unwrap()
}

/// The last event of following `path` (started by a POST), once the job
/// ended.
fn followed_to_the_end(server: &Server, path: &str) -> serde_json::Value {
    let response = server.post(path);
    assert_eq!(response.status, 200, "{}", response.text());
    let text = response.text();
    let last = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .unwrap_or_else(|| panic!("no event in {text:?}"));
    serde_json::from_str(last).unwrap()
}

#[test]
fn serve_makes_both_runs_in_one_trace_and_merges_as_the_cli_does() {
    let names = [
        "h100_torch_graph_whole.sqlite",
        "h100_torch_graph_node.sqlite",
    ];
    let Some((dir, copies)) = runs(&names) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    let id = |name: &str| id_in(&list, name);
    let query = format!("run={}&run={}", id(names[0]), id(names[1]));
    let (a, b): (&Path, &Path) = (&copies[0], &copies[1]);
    for (kind, cli, flag) in [
        (
            "compare",
            vec!["compare".as_ref(), a.as_os_str(), b.as_os_str()],
            "--trace",
        ),
        (
            "merge",
            vec!["merge".as_ref(), a.as_os_str(), b.as_os_str()],
            "-o",
        ),
    ] {
        let ended = followed_to_the_end(&server, &format!("/api/make/{kind}?{query}"));
        assert_eq!(ended["state"], "done", "{kind}: {ended}");
        assert_eq!(ended["done"], 1.0, "{kind}: {ended}");
        let served = server.get(&format!("/made/{kind}?{query}"));
        assert_eq!(served.status, 200, "{kind}: {}", served.text());
        let expected = written_by_cli(&cli, flag);
        assert!(served.body == expected, "{kind}: differs from the CLI's");
        // Kept: the cache holds it.
        let kept = std::fs::read_dir(server.cache_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.to_string_lossy()
                    .ends_with(&format!(".{kind}.perfetto-trace"))
            })
            .count();
        assert_eq!(kept, 1, "{kind}");
    }
    // A comparison needs two runs; runs not in the list are none.
    let one = server.get(&format!("/made/compare?run={}", id(names[0])));
    assert_eq!(one.status, 400, "{}", one.text());
    let foreign = server.get(&format!(
        "/made/merge?run={}&run=0/../../etc/passwd",
        id(names[0])
    ));
    assert_eq!(foreign.status, 404, "{}", foreign.text());
}

/// What `report --step PATTERN NAMES... -o page.html` writes, run in `dir`
/// (the runs named as the hub's list names them), or its one-line error.
fn steps_page_by_cli(dir: &Path, pattern: &str, names: &[&str]) -> Result<Vec<u8>, String> {
    let out = tempfile::tempdir().unwrap();
    let page = out.path().join("page.html");
    let done = Command::new(BIN)
        .current_dir(dir)
        .args(["report", "--step", pattern])
        .args(names)
        .arg("-o")
        .arg(&page)
        .arg("-q")
        .output()
        .unwrap();
    match done.status.success() {
        true => Ok(std::fs::read(&page).unwrap()),
        false => Err(String::from_utf8_lossy(&done.stderr).trim().to_owned()),
    }
}

/// A page's head and body (what is between `<body>` and `</body>`).
fn head_and_body(page: &str) -> (&str, &str) {
    let (head, rest) = page.split_once("<body>").expect("a body");
    let (body, _) = rest.rsplit_once("</body>").expect("a body's end");
    (head, body)
}

/// A page's title, as its head says it.
fn title(head: &str) -> &str {
    let (_, rest) = head.split_once("<title>").expect("a title");
    rest.split_once("</title>").expect("a title's end").0
}

#[test]
fn serve_makes_the_steps_page_report_step_writes() {
    let names = [
        "h100_torch_graph_whole.sqlite",
        "h100_torch_graph_node.sqlite",
    ];
    let Some((dir, _)) = runs(&names) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    let id = |name: &str| id_in(&list, name);
    let runs = format!("run={}&run={}", id(names[0]), id(names[1]));
    // Steps that match, and a pattern that matches nothing (the page says
    // what exists instead): the CLI's page under the hub's header, made
    // once.
    for pattern in ["step *", "nomatch*"] {
        let query = format!("{runs}&step={}", percent_encode(pattern));
        let ended = followed_to_the_end(&server, &format!("/api/make/steps?{query}"));
        assert_eq!(ended["state"], "done", "{pattern}: {ended}");
        assert_eq!(ended["done"], 1.0, "{pattern}: {ended}");
        let served = server.get(&format!("/made/steps?{query}"));
        assert_eq!(served.status, 200, "{pattern}: {}", served.text());
        assert_eq!(
            served.header("content-type"),
            Some("text/html; charset=utf-8")
        );
        assert_eq!(
            served.header("content-disposition"),
            None,
            "shown, not saved"
        );
        let text = served.text();
        let cli = steps_page_by_cli(dir.path(), pattern, &names).unwrap();
        let cli = String::from_utf8(cli).unwrap();
        let (served_head, served_body) = head_and_body(&text);
        let (cli_head, cli_body) = head_and_body(&cli);
        // The CLI's page whole, its numbers too, under the hub's header.
        let header = served_body
            .strip_suffix(cli_body)
            .unwrap_or_else(|| panic!("{pattern}: the CLI's page is not the served one's end"));
        assert!(
            header.contains("<a href=\"/\">← all runs</a>"),
            "{pattern}: no way home in {header:?}"
        );
        assert!(!header.contains("<section"), "{pattern}: {header:?}");
        assert_eq!(title(served_head), title(cli_head), "{pattern}");
        assert!(text.contains("<section class=\"job-steps\">"), "{pattern}");
        if pattern == "nomatch*" {
            assert!(text.contains("has no NVTX range matching"), "{text}");
        }
    }
    let kept = names_in(server.cache_dir())
        .iter()
        .filter(|n| n.ends_with(".steps.html"))
        .count();
    assert_eq!(kept, 2, "one page per pattern");
    // A bad pattern: the CLI's message, as the one event of the job that
    // could not start (the page shows it) and as the refusal of the page;
    // the server goes on serving.
    let cli = steps_page_by_cli(dir.path(), "", &names).unwrap_err();
    let event = followed_to_the_end(&server, &format!("/api/make/steps?{runs}&step="));
    assert_eq!(event["state"], "failed", "{event}");
    let said = event["error"].as_str().unwrap();
    assert!(cli.ends_with(said), "{said:?} is not the CLI's {cli:?}");
    let refused = server.get(&format!("/made/steps?{runs}&step="));
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert_eq!(refused.text().trim(), format!("error: {said}"));
    let missing = server.get(&format!("/made/steps?{runs}"));
    assert_eq!(missing.status, 400, "{}", missing.text());
    assert!(missing.text().contains("step="), "{}", missing.text());
    let event = followed_to_the_end(&server, &format!("/api/make/steps?{runs}"));
    assert_eq!(event["state"], "failed", "{event}");
    assert_eq!(server.get("/").status, 200);
}
