//! Every page of the hub carries its header, the way home: the report,
//! stats, findings, open and compare pages, the page asking for what is not
//! made yet, the steps page once made, and a refusal as a browser sees it.

use super::{runs, Server};

#[test]
fn serve_puts_its_header_atop_every_page() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite", "dlprof_nsys_profile.sqlite"]) else {
        return;
    };
    let server = Server::start(&[dir.path()], &[]);
    let (a, b) = ("0/nsys-ai_mock.sqlite", "0/dlprof_nsys_profile.sqlite");
    let html = [("Accept", "text/html")];
    for path in [
        format!("/report/{a}"),
        format!("/stats/{a}"),
        format!("/findings/{a}"),
        format!("/open/{a}"),
        format!("/compare?a={a}&b={b}"),
        format!("/trace/{a}"),
        format!("/made/merge?run={a}&run={b}"),
        "/no/such/page".to_owned(),
        "/report/0/no-such-run.sqlite".to_owned(),
    ] {
        let page = server.send("GET", &path, &html, &[]);
        let text = page.text();
        assert_eq!(
            page.header("content-type"),
            Some("text/html; charset=utf-8"),
            "{path}"
        );
        assert!(
            text.contains("<a href=\"/\">← all runs</a>"),
            "{path} has no way home: {text}"
        );
    }
    // The steps page, once made (by POST; its events end as it is made).
    let steps = format!("run={a}&step=nomatch*");
    let made = server.post(&format!("/api/make/steps?{steps}"));
    assert_eq!(made.status, 200, "{}", made.text());
    let page = server.send("GET", &format!("/made/steps?{steps}"), &html, &[]);
    let text = page.text();
    assert_eq!(page.status, 200, "{text}");
    assert!(text.contains("<section class=\"job-steps\">"), "{text}");
    assert!(
        text.contains("<a href=\"/\">← all runs</a>"),
        "the steps page has no way home: {text}"
    );
    // A run's pages link to each other.
    let report = server.get(&format!("/report/{a}")).text();
    assert!(report.contains(&format!("href=\"/stats/{a}\"")), "{report}");
}
