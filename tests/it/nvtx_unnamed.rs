//! NVTX events without a message, such as the marks of nsys's Python
//! sampling and backtrace domains, are named by their domain.

use crate::support::convert::convert_synthetic;
use crate::support::synth::Thread;
use rusqlite::types::Value;

const MAIN: Thread = Thread { pid: 100, tid: 100 };

#[test]
fn events_without_text_are_named_by_their_domain() {
    let (trace, summary) = convert_synthetic(|s| {
        s.nvtx_domain(MAIN, 3, "Python sampling").at(10);
        // Marks and a range without text: in a named domain, an unnamed
        // one and the default domain.
        for (ts, domain) in [(1_000, 3), (2_000, 4), (3_000, 0)] {
            s.nvtx_mark(MAIN, ts, "")
                .domain(domain)
                .set("text", Value::Null);
        }
        s.nvtx_push_pop(MAIN, 4_000..5_000, "").domain(3);
        // A message names its event as before.
        s.nvtx_mark(MAIN, 6_000, "checkpoint").domain(3);
    });
    let seen: Vec<(u64, &str, &str)> = trace
        .slices
        .iter()
        .map(|s| {
            let track = trace.tracks[&s.track].name.as_deref().unwrap_or("");
            (s.ts, s.name.as_str(), track)
        })
        .collect();
    assert_eq!(
        seen,
        [
            (1_000, "Python sampling", "NVTX: Python sampling"),
            (2_000, "NVTX domain 4", "NVTX: domain 4"),
            (3_000, "NVTX", "NVTX"),
            (4_000, "Python sampling", "NVTX: Python sampling"),
            (6_000, "checkpoint", "NVTX: Python sampling"),
        ]
    );
    assert_eq!(summary.slices.get("nvtx"), Some(&5));
}
