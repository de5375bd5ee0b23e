//! The hub's cache under `--cache-size`: past the limit the least recently
//! used pages and traces go, what is asked for again is made again with
//! the same bytes, and a file in use (being made or sent) is never removed.

use std::path::Path;
use std::process::Command;

use nsys2perfetto::hub::{self, Cache};
use nsys2perfetto::Options;

use super::{names_in, runs, Server, BIN};

/// The trace `convert` writes for `input`.
pub(super) fn converted_by_cli(input: &Path) -> Vec<u8> {
    let out = tempfile::tempdir().unwrap();
    let trace = out.path().join("t.perfetto-trace");
    let status = Command::new(BIN)
        .arg("convert")
        .arg(input)
        .arg("-o")
        .arg(&trace)
        .arg("-q")
        .status()
        .unwrap();
    assert!(status.success(), "convert {}", input.display());
    std::fs::read(&trace).unwrap()
}

/// The bytes of the files of `dir` that count against the limit (all but
/// the headlines).
fn counted_bytes(dir: &Path) -> u64 {
    names_in(dir)
        .iter()
        .filter(|n| !n.ends_with(".headline.json"))
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len())
        .sum()
}

#[test]
fn serve_keeps_its_cache_under_cache_size_evicting_the_least_recently_used() {
    let names = [
        "dlprof_nsys_profile.sqlite",
        "nsys-ai_mock.sqlite",
        "nsys-ai_healthy_1pct.sqlite",
    ];
    let Some((dir, copies)) = runs(&names) else {
        return;
    };
    let mut traces: Vec<(usize, Vec<u8>)> = copies
        .iter()
        .map(|c| converted_by_cli(c))
        .enumerate()
        .collect();
    // b: the smallest, so that a and b fit the limit together, and c and a
    // do, but not all three.
    traces.sort_by_key(|(_, t)| t.len());
    let (b, a, c) = (&traces[0], &traces[1], &traces[2]);
    let limit = a.1.len() + c.1.len() + b.1.len() / 2;
    let server = Server::start(&[dir.path()], &["--cache-size", &limit.to_string()]);
    let list = server.reports_with_headlines();
    let url = |(index, _): &(usize, Vec<u8>)| {
        let id = super::id_in(&list, names[*index]);
        format!("/trace/{id}")
    };
    // The report pages, made with the headlines, are the oldest.
    let cache = server.cache_dir();
    // a, b, then a again: b is now the least recently used trace.
    for trace in [a, b, a, c] {
        let served = server.post(&url(trace));
        assert_eq!(served.status, 200, "{}", served.text());
        assert!(served.body == trace.1, "{} differs", names[trace.0]);
    }
    let held: Vec<Vec<u8>> = names_in(cache)
        .iter()
        .filter(|n| n.contains(".trace."))
        .map(|n| std::fs::read(cache.join(n)).unwrap())
        .collect();
    assert!(held.contains(&a.1), "the trace used again was evicted");
    assert!(held.contains(&c.1), "the newest trace was evicted");
    assert!(
        !held.contains(&b.1),
        "the least recently used trace was kept"
    );
    assert!(
        counted_bytes(cache) <= limit as u64,
        "{} bytes over a limit of {limit}",
        counted_bytes(cache)
    );
    // The headlines stay; the pages, older than every trace, went first.
    let in_cache = names_in(cache);
    assert_eq!(
        in_cache
            .iter()
            .filter(|n| n.ends_with(".headline.json"))
            .count(),
        3,
        "{in_cache:?}"
    );
    assert!(
        !in_cache.iter().any(|n| n.ends_with(".report.html")),
        "{in_cache:?}"
    );
    // What went is made again when asked for: the same bytes.
    let again = server.post(&url(b));
    assert!(again.body == b.1, "b made again differs");
    let id = list[0]["id"].as_str().unwrap();
    let page = server.get(&format!("/report/{id}"));
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(page.text().contains(list[0]["path"].as_str().unwrap()));
}

#[test]
fn cache_never_evicts_a_file_in_use() {
    let Some((dir, _)) = runs(&["nsys-ai_mock.sqlite", "nsys-ai_healthy_1pct.sqlite"]) else {
        return;
    };
    let place = tempfile::tempdir().unwrap();
    // Nothing may stay but what is in use.
    let cache = Cache::open(place.path(), 0).unwrap();
    let (entries, _) = hub::scan(&[dir.path().to_owned()]);
    assert_eq!(entries.len(), 2);
    // A file being written: a temporary file of the one output path.
    let writing = place.path().join(".nsys2perfetto-being-written.tmp");
    std::fs::write(&writing, b"half a trace").unwrap();
    let first = cache
        .trace(&entries[0], &Options::default(), &mut |_| {})
        .unwrap();
    let second = cache
        .trace(&entries[1], &Options::default(), &mut |_| {})
        .unwrap();
    // Making the second evicted what it could: neither trace, both in use.
    assert!(first.path().is_file() && second.path().is_file());
    assert!(writing.is_file(), "a file being written was removed");
    let (first_path, second_path) = (first.path().to_owned(), second.path().to_owned());
    drop(first);
    // Released past the limit: gone.
    assert!(!first_path.exists(), "released, over the limit, yet kept");
    assert!(second_path.is_file());
    drop(second);
    assert!(!second_path.exists());
    assert!(writing.is_file());
}

#[test]
fn cache_makes_again_a_headline_an_older_hub_kept() {
    let Some((dir, _)) = runs(&["nsys-ai_h100_2gpu_1s.sqlite"]) else {
        return;
    };
    let place = tempfile::tempdir().unwrap();
    let cache = Cache::open(place.path(), 1 << 30).unwrap();
    let (entries, _) = hub::scan(&[dir.path().to_owned()]);
    let made = cache
        .compute_headline(&entries[0], &Options::default())
        .unwrap();
    // What a hub kept before the busy share was of the GPUs' span: the share
    // of the capture, under another name.
    let kept: Vec<_> = names_in(place.path())
        .into_iter()
        .filter(|n| n.ends_with(".headline.json"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let file = place.path().join(&kept[0]);
    let older = std::fs::read_to_string(&file)
        .unwrap()
        .replace("\"busy_of_span\":", "\"busy_share\":");
    std::fs::write(&file, older).unwrap();
    assert_eq!(cache.headline(&entries[0]), None);
    // Made again, not an error, not shown as it was.
    let again = cache
        .compute_headline(&entries[0], &Options::default())
        .unwrap();
    assert_eq!(again, made);
    assert!(made.busy_of_span.unwrap() > 0.99, "{made:?}");
}
