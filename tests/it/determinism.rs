//! The same report converts to the same bytes every time, however the threads
//! that write its sequences happen to interleave: each sequence is written
//! whole, in sequence-id order, after the descriptors of every track in use.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::support::converted::converted;
use crate::support::program::demo;
use nsys2perfetto::perfetto::proto::{self, trace_packet};
use nsys2perfetto::perfetto::{
    Arg, ArgValue, CounterUnit, CounterValue, SequenceWriter, Slice, SliceTrack, Stacking, Trace,
    TrackSpec,
};
use nsys2perfetto::Options;
use prost::Message;
use rustc_hash::FxHashMap;

/// A real export from ../shared/fixtures, or `None` (having said why) where
/// a fresh clone has none; CI must have them.
fn fixture(name: &str) -> Option<PathBuf> {
    crate::support::fixtures::fixture(name)
}

/// The trace file `input` converts to with `options`, checked by the
/// checker and trace_processor.
fn convert(input: &Path, options: &Options) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.perfetto-trace");
    let (trace, _) = crate::support::convert::convert_into(input, &output, options);
    trace.assert_valid();
    std::fs::read(output).unwrap()
}

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    if !bytes.starts_with(&[0x1f, 0x8b]) {
        return bytes.to_vec();
    }
    let mut raw = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .expect("valid gzip");
    raw
}

/// How many gzip members `bytes` holds, one after the other.
fn gzip_members(mut bytes: &[u8]) -> usize {
    let mut members = 0;
    while !bytes.is_empty() {
        let mut member = flate2::bufread::GzDecoder::new(bytes);
        std::io::copy(&mut member, &mut std::io::sink()).expect("valid gzip");
        bytes = member.into_inner();
        members += 1;
    }
    members
}

/// Checks the layout that makes the bytes repeatable: first the clock
/// snapshot and every track descriptor, on a sequence of their own; then each
/// other sequence whole, in increasing id order. Returns the number of those.
fn assert_layout(trace: &[u8]) -> usize {
    let packets = proto::Trace::decode(&gunzip(trace)[..])
        .expect("a Trace")
        .packet;
    let mut descriptors = None;
    let mut sequences: Vec<u32> = Vec::new();
    for packet in &packets {
        let sequence = match packet.optional_trusted_packet_sequence_id {
            Some(trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)) => id,
            None => {
                assert!(descriptors.is_none(), "the clock snapshot comes first");
                continue;
            }
        };
        let is_descriptor = matches!(packet.data, Some(trace_packet::Data::TrackDescriptor(_)));
        if is_descriptor {
            assert!(sequences.is_empty(), "descriptors come first");
            assert!(
                *descriptors.get_or_insert(sequence) == sequence,
                "on one sequence"
            );
        } else if sequences.last() != Some(&sequence) {
            assert!(
                sequences.last() < Some(&sequence) && descriptors != Some(sequence),
                "sequence {sequence} comes whole, in id order (after {sequences:?})"
            );
            sequences.push(sequence);
        }
    }
    assert!(descriptors.is_some(), "tracks are described");
    sequences.len()
}

/// The bytes `input` converts to with `options`, not judged: a repeat of a
/// conversion already judged needs only to equal it byte for byte.
fn convert_bytes(input: &Path, options: &Options) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("out.perfetto-trace");
    nsys2perfetto::convert_file(input, &output, options, &mut |_| {})
        .unwrap_or_else(|e| panic!("{}: {e}", input.display()));
    std::fs::read(output).unwrap()
}

/// Asserts that `runs` more conversions of `input` give the bytes of `first`, the
/// judged conversion, and that those hold several sequences.
fn assert_same_bytes_as(input: &Path, options: &Options, first: &[u8], runs: usize) {
    assert!(
        assert_layout(first) >= 2,
        "{}: several sequences, written by several threads",
        input.display()
    );
    for run in 1..=runs {
        assert!(
            convert_bytes(input, options) == first,
            "{}: run {run} wrote other bytes than the first",
            input.display()
        );
    }
}

/// Converts `input` `runs` times and asserts the files are equal, byte for byte.
fn assert_same_bytes(input: &Path, options: &Options, runs: usize) -> Vec<u8> {
    let first = convert(input, options);
    assert_same_bytes_as(input, options, &first, runs - 1);
    first
}

#[test]
fn the_demo_converts_to_the_same_bytes_every_time() {
    let gzipped = assert_same_bytes(&demo(), &Options::default(), 5);
    assert_eq!(&gzipped[..2], &[0x1f, 0x8b], "gzipped");
    let mut raw = Options::default();
    raw.gzip = None;
    let raw = assert_same_bytes(&demo(), &raw, 3);
    assert_eq!(gunzip(&gzipped), raw, "the gzipped trace holds the raw one");
}

#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn real_reports_convert_to_the_same_bytes_every_time() {
    // CUDA, NVTX (with its GPU projection), OS runtime, samples, context
    // switches and metrics: every thread of the conversion has work.
    for name in [
        "llama3_real_inference_simulation.sqlite",
        "h100_torch_graph_node.sqlite",
        "nsys-ai_h100_2gpu_1s.sqlite",
    ] {
        let Some(input) = fixture(name) else { return };
        // The run's shared conversion is the judged first one.
        let first = std::fs::read(&converted(&input).path).unwrap();
        assert_same_bytes_as(&input, &Options::default(), &first, 2);
    }
}

/// Conversions side by side: each one's threads are scheduled around the
/// others', so their sequences fill up in other orders than alone.
#[test]
#[cfg_attr(
    not(shared_fixtures),
    ignore = "needs ../shared/fixtures, absent when the tests were built"
)]
fn conversions_side_by_side_give_the_same_bytes() {
    let input = fixture("llama3_real_inference_simulation.sqlite").unwrap_or_else(demo);
    let alone = convert(&input, &Options::default());
    let side_by_side: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| convert_bytes(&input, &Options::default())))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for (i, bytes) in side_by_side.iter().enumerate() {
        assert!(*bytes == alone, "conversion {i} of 4 side by side differs");
    }
}

/// How the threads of [`write_trace`] are run.
#[derive(Clone, Copy, Debug)]
enum Schedule {
    /// One after the other, in this order of parts.
    OneByOne([usize; 3]),
    /// All at once, each pausing now and then as a seeded generator says.
    AtOnce(u64),
}

/// Three sequences, written as `schedule` says, that share thread tracks and
/// a group, and make lanes and counter tracks of their own. Large enough
/// that every sequence goes through its spill.
fn write_trace(schedule: Schedule, gzip: Option<u32>) -> Vec<u8> {
    let trace = Trace::new(Vec::new(), 0x5EED, gzip);
    let sequences: Vec<_> = (0..3).map(|_| trace.sequence()).collect();
    let mut seeds = [0u64; 3];
    match schedule {
        Schedule::OneByOne(order) => {
            let mut sequences: Vec<Option<_>> = sequences.into_iter().map(Some).collect();
            for part in order {
                let mut seq = sequences[part].take().unwrap();
                std::thread::scope(|scope| {
                    scope.spawn(|| write_part(&mut seq, part, None));
                });
                sequences[part] = Some(seq);
            }
            finish(&trace, sequences.into_iter().flatten().collect());
        }
        Schedule::AtOnce(seed) => {
            for (part, s) in seeds.iter_mut().enumerate() {
                *s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (part as u64 + 1);
            }
            let mut sequences = sequences;
            std::thread::scope(|scope| {
                for (part, seq) in sequences.iter_mut().enumerate() {
                    let seed = seeds[part];
                    scope.spawn(move || write_part(seq, part, Some(seed)));
                }
            });
            finish(&trace, sequences);
        }
    }
    trace.finish().unwrap()
}

fn finish(trace: &Trace<Vec<u8>>, sequences: Vec<SequenceWriter<'_, Vec<u8>>>) {
    let end = trace.last_timestamp().unwrap();
    for seq in sequences {
        seq.close(end).unwrap();
    }
}

/// Part `part`'s events; with a seed, the thread pauses at random points.
fn write_part(seq: &mut SequenceWriter<'_, Vec<u8>>, part: usize, seed: Option<u64>) {
    let mut rng = seed.unwrap_or(0) | 1;
    let mut pause = || {
        if seed.is_none() {
            return;
        }
        // xorshift64
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        // Rare: each sleep or yield hands the core to whatever else runs (the
        // other tests, in CI), and thousands of them made this test wait minutes
        // on a busy machine while the interleavings came from the scheduler anyway.
        match rng % 4096 {
            0 => std::thread::sleep(std::time::Duration::from_micros(rng % 200)),
            1..=16 => std::thread::yield_now(),
            _ => {}
        }
    };
    let group = seq.with_tracks(|t| t.group(7, || TrackSpec::new(None, "shared group")));
    let counter = seq.add_counter_track(
        TrackSpec::new(Some(group), format!("part {part} count")),
        CounterUnit::Count,
    );
    let mut tracks: FxHashMap<i64, SliceTrack> = FxHashMap::default();
    let names: Vec<String> = (0..40).map(|i| format!("op {i} of part {part}")).collect();
    for k in 0..60_000u64 {
        pause();
        // The parts take the shared threads in different orders.
        let tid = 100 + (k * (part as u64 + 1) + part as u64) as i64 % 5;
        let track = *tracks.entry(tid).or_insert_with(|| {
            let thread = seq
                .with_tracks(|t| t.thread(1, tid, || "process".into(), || format!("thread {tid}")));
            seq.slice_track(
                TrackSpec::new(Some(thread), format!("part {part}")),
                Stacking::Nest,
            )
        });
        let start = k * 100;
        // Overlapping without nesting now and then: extra lanes.
        let end = start + 50 + (k % 7) * 40;
        let args = [
            Arg::new("k", ArgValue::Uint(k)),
            Arg::new("part", ArgValue::Str(&names[part])),
        ];
        let name = &names[(k % 40) as usize];
        seq.slice(track, &Slice::new(start, Some(end), name, "test", &args))
            .unwrap();
        if k % 10 == 0 {
            seq.counter(counter, start, CounterValue::Int(k as i64))
                .unwrap();
        }
    }
    seq.drain().unwrap();
}

#[test]
fn sequences_written_in_any_interleaving_give_the_same_bytes() {
    for gzip in [None, Some(3)] {
        let first = write_trace(Schedule::OneByOne([0, 1, 2]), gzip);
        assert_eq!(assert_layout(&first), 3);
        // Each of the three sequences outgrew its buffer several times:
        // gzipped, its chunks are members compressed by several threads.
        assert!(gunzip(&first).len() > 3 * 3 * (1 << 20));
        if gzip.is_some() {
            assert!(gzip_members(&first) > 3 * 3, "{}", gzip_members(&first));
        }
        let others = [
            Schedule::OneByOne([2, 1, 0]),
            Schedule::OneByOne([1, 2, 0]),
            Schedule::AtOnce(1),
            Schedule::AtOnce(2),
            Schedule::AtOnce(3),
        ];
        for schedule in others {
            assert!(
                write_trace(schedule, gzip) == first,
                "{schedule:?} (gzip {gzip:?}) wrote other bytes than one by one in order"
            );
        }
    }
}
