//! The same report converts to the same trace every time, although its CUDA
//! and NVTX sequences are written by two threads at once: each sequence's
//! packets, the track uuids and the sequence ids do not depend on timing.
//! (Which sequence first describes a shared process or thread track may.)

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nsys2perfetto::perfetto::proto::{trace_packet, Trace};
use nsys2perfetto::Options;
use prost::Message;

/// Per sequence, its packets other than track descriptors (encoded); and the
/// descriptors, whoever sent them.
type Canonical = (BTreeMap<u32, Vec<Vec<u8>>>, Vec<Vec<u8>>);

fn canonical(input: &Path) -> Canonical {
    let dir = tempfile::tempdir().unwrap();
    let output = dir.path().join("t.pb");
    let options = Options {
        gzip: None,
        ..Options::default()
    };
    support::convert::convert_into(input, &output, &options)
        .0
        .assert_valid();
    let bytes = std::fs::read(&output).unwrap();
    let trace = Trace::decode(&bytes[..]).unwrap().packet;
    let mut sequences: BTreeMap<u32, Vec<Vec<u8>>> = BTreeMap::new();
    let mut descriptors = Vec::new();
    for packet in trace {
        let sequence = match packet.optional_trusted_packet_sequence_id {
            Some(trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(id)) => id,
            None => 0,
        };
        if let Some(trace_packet::Data::TrackDescriptor(d)) = &packet.data {
            descriptors.push(d.encode_to_vec());
        } else {
            sequences
                .entry(sequence)
                .or_default()
                .push(packet.encode_to_vec());
        }
    }
    descriptors.sort();
    (sequences, descriptors)
}

fn assert_repeatable(input: &Path) {
    let first = canonical(input);
    assert!(first.0.len() >= 2, "a CUDA and an NVTX sequence");
    for _ in 0..3 {
        assert!(
            canonical(input) == first,
            "{} converts differently",
            input.display()
        );
    }
}

#[test]
fn the_demo_converts_the_same_every_time() {
    assert_repeatable(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("demo/demo.sqlite"));
}

#[test]
fn a_real_report_converts_the_same_every_time() {
    let Some(input) = support::fixtures::fixture("nsys-ai_h100_2gpu_1s.sqlite") else {
        return;
    };
    assert_repeatable(&input);
}
