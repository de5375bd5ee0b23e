//! What the hub offers is named after its runs, and works: a download is
//! named after the runs it was made of (not `merge.perfetto-trace`), and a
//! run that cannot be read offers no link to a page or a trace it has not.

use super::{id_in, runs, Server};

/// The file name a download's `Content-Disposition` gives, once the job
/// that makes it (`job`, a POST as the page's button sends) has ended.
fn download_name(server: &Server, job: &str, path: &str) -> String {
    let made = server.post(job);
    assert_eq!(made.status, 200, "{job}: {}", made.text());
    let response = server.get(path);
    assert_eq!(response.status, 200, "{path}: {}", response.text());
    let disposition = response.header("Content-Disposition").unwrap_or("");
    disposition
        .split_once("filename=\"")
        .and_then(|(_, rest)| rest.strip_suffix('"'))
        .unwrap_or_else(|| panic!("{path}: no file name in {disposition:?}"))
        .to_owned()
}

#[test]
fn serve_names_downloads_after_their_runs() {
    let names = ["nsys-ai_mock.sqlite", "nsys-ai_healthy_1pct.sqlite"];
    let Some((dir, _)) = runs(&names) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    let (a, b) = (id_in(&list, names[0]), id_in(&list, names[1]));
    assert_eq!(
        download_name(
            &server,
            &format!("/api/convert/{a}"),
            &format!("/trace/{a}")
        ),
        "nsys-ai_mock.perfetto-trace"
    );
    assert_eq!(
        download_name(
            &server,
            &format!("/api/make/merge?run={a}&run={b}"),
            &format!("/made/merge?run={a}&run={b}")
        ),
        "nsys-ai_mock+nsys-ai_healthy_1pct.perfetto-trace"
    );
    assert_eq!(
        download_name(
            &server,
            &format!("/api/make/compare?run={b}&run={a}"),
            &format!("/made/compare?run={b}&run={a}")
        ),
        "nsys-ai_healthy_1pct-vs-nsys-ai_mock.perfetto-trace"
    );
}

#[test]
fn serve_offers_no_links_for_a_run_that_cannot_be_read() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite"]) else {
        return;
    };
    // SQLite's signature, then nothing an export holds.
    let mut broken = b"SQLite format 3\0".to_vec();
    broken.extend(vec![0xff; 4096]);
    std::fs::write(dir.path().join("broken.sqlite"), broken).unwrap();
    let server = Server::start(&[dir.path()], &[]);
    let list = server.reports_with_headlines();
    let unreadable = list.iter().find(|r| r["path"] == "broken.sqlite").unwrap();
    assert!(!unreadable["headline"]["error"].is_null(), "{unreadable}");
    let home = server.get("/").text();
    let row_of = |name: &str| {
        home.split("<tr")
            .find(|row| row.contains(name))
            .unwrap_or_else(|| panic!("no row of {name}: {home}"))
            .to_owned()
    };
    let row = row_of("broken.sqlite");
    assert!(
        !row.contains("href="),
        "the unreadable run offers links: {row}"
    );
    assert!(row.contains("cannot be read"), "{row}");
    // Every link a readable run offers works.
    let readable = row_of("nsys-ai_mock.sqlite");
    let links: Vec<&str> = readable
        .split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(links.len() >= 5, "{readable}");
    for link in links {
        let link = link.replace("&amp;", "&");
        let response = server.get(&link);
        assert_eq!(response.status, 200, "{link}: {}", response.text());
    }
}
