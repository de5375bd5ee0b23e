//! Protobuf wire format by hand, for the packets written millions of times
//! (slice BEGIN and END): no message structs, no allocations, one pass.
//! Everything else is encoded by prost. Tests decode what this writes with
//! prost and compare.

/// Wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

/// Inlined everywhere: a key's value is a constant there, and most values
/// take one byte, so the common case is one push.
#[inline]
pub(super) fn varint(buf: &mut Vec<u8>, v: u64) {
    if v < 0x80 {
        buf.push(v as u8);
    } else {
        long_varint(buf, v);
    }
}

/// A varint of two bytes or more, made on the stack and appended at once:
/// one capacity check instead of one per byte.
fn long_varint(buf: &mut Vec<u8>, mut v: u64) {
    let mut bytes = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        bytes[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    bytes[n] = v as u8;
    buf.extend_from_slice(&bytes[..=n]);
}

/// A varint field encoded once and written many times: a track's uuid,
/// which takes ten bytes and goes with every event on the track.
#[derive(Clone, Copy, Default)]
pub(super) struct EncodedField {
    bytes: [u8; 12],
    len: u8,
}

impl EncodedField {
    pub(super) fn uint(field: u32, v: u64) -> Self {
        let mut buf = Vec::with_capacity(12);
        uint(&mut buf, field, v);
        let mut bytes = [0; 12];
        bytes[..buf.len()].copy_from_slice(&buf);
        Self {
            bytes,
            len: buf.len() as u8,
        }
    }

    /// Appends the field: all twelve bytes are copied (a copy of fixed
    /// size, without a call) and the unused ones cut off.
    #[inline]
    pub(super) fn write(&self, buf: &mut Vec<u8>) {
        let len = buf.len();
        buf.extend_from_slice(&self.bytes);
        buf.truncate(len + usize::from(self.len));
    }
}

#[inline]
fn key(buf: &mut Vec<u8>, field: u32, wire_type: u64) {
    varint(buf, (u64::from(field) << 3) | wire_type);
}

#[inline]
pub(super) fn uint(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, VARINT);
    varint(buf, v);
}

/// An `int64`: negative values take ten bytes, as the wire format says.
#[inline]
pub(super) fn int(buf: &mut Vec<u8>, field: u32, v: i64) {
    uint(buf, field, v as u64);
}

#[inline]
pub(super) fn fixed64(buf: &mut Vec<u8>, field: u32, v: u64) {
    key(buf, field, FIXED64);
    buf.extend_from_slice(&v.to_le_bytes());
}

pub(super) fn double(buf: &mut Vec<u8>, field: u32, v: f64) {
    fixed64(buf, field, v.to_bits());
}

#[inline]
pub(super) fn bytes(buf: &mut Vec<u8>, field: u32, v: &[u8]) {
    key(buf, field, LEN);
    varint(buf, v.len() as u64);
    buf.extend_from_slice(v);
}

/// A nested message written by `body`. Its length is only known afterwards:
/// one byte is reserved, and the body is moved along in the rare case that
/// the length needs more.
#[inline]
pub(super) fn message(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(buf, field, LEN);
    let at = buf.len();
    buf.push(0);
    body(buf);
    let len = buf.len() - at - 1;
    if len < 0x80 {
        buf[at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        varint(&mut prefix, len as u64);
        buf.splice(at..=at, prefix);
    }
}

/// Field numbers of the messages encoded by hand (see
/// proto/perfetto_trace.proto).
pub(super) mod field {
    pub(in crate::perfetto) const TRACE_PACKET: u32 = 1;
    pub(in crate::perfetto) const PACKET_TIMESTAMP: u32 = 8;
    pub(in crate::perfetto) const PACKET_TRUSTED_SEQUENCE_ID: u32 = 10;
    pub(in crate::perfetto) const PACKET_TRACK_EVENT: u32 = 11;
    pub(in crate::perfetto) const PACKET_INTERNED_DATA: u32 = 12;
    pub(in crate::perfetto) const PACKET_SEQUENCE_FLAGS: u32 = 13;
    pub(in crate::perfetto) const PACKET_TIMESTAMP_CLOCK_ID: u32 = 58;
    pub(in crate::perfetto) const TRACK_EVENT_CATEGORY_IIDS: u32 = 3;
    pub(in crate::perfetto) const TRACK_EVENT_DEBUG_ANNOTATIONS: u32 = 4;
    pub(in crate::perfetto) const TRACK_EVENT_TYPE: u32 = 9;
    pub(in crate::perfetto) const TRACK_EVENT_NAME_IID: u32 = 10;
    pub(in crate::perfetto) const TRACK_EVENT_TRACK_UUID: u32 = 11;
    pub(in crate::perfetto) const TRACK_EVENT_NAME: u32 = 23;
    pub(in crate::perfetto) const TRACK_EVENT_FLOW_IDS: u32 = 47;
    pub(in crate::perfetto) const TRACK_EVENT_TERMINATING_FLOW_IDS: u32 = 48;
    pub(in crate::perfetto) const TRACK_EVENT_CALLSTACK_IID: u32 = 56;
    pub(in crate::perfetto) const TRACK_EVENT_COUNTER_VALUE: u32 = 30;
    pub(in crate::perfetto) const TRACK_EVENT_DOUBLE_COUNTER_VALUE: u32 = 44;
    pub(in crate::perfetto) const ANNOTATION_NAME_IID: u32 = 1;
    pub(in crate::perfetto) const ANNOTATION_BOOL: u32 = 2;
    pub(in crate::perfetto) const ANNOTATION_UINT: u32 = 3;
    pub(in crate::perfetto) const ANNOTATION_INT: u32 = 4;
    pub(in crate::perfetto) const ANNOTATION_DOUBLE: u32 = 5;
    pub(in crate::perfetto) const ANNOTATION_STRING: u32 = 6;
    pub(in crate::perfetto) const ANNOTATION_STRING_IID: u32 = 17;
}

/// The key of `Trace.packet` (field 1, length-delimited), before each packet
/// of a trace.
pub(super) const PACKET_KEY: u8 = ((field::TRACE_PACKET as u8) << 3) | LEN as u8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_match_prost() {
        for v in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut ours = Vec::new();
            varint(&mut ours, v);
            let mut theirs = Vec::new();
            prost::encoding::encode_varint(v, &mut theirs);
            assert_eq!(ours, theirs, "{v}");
        }
    }

    #[test]
    fn long_nested_messages_get_longer_length_prefixes() {
        for n in [0usize, 1, 127, 128, 200, 20_000] {
            let mut buf = vec![0xAA];
            message(&mut buf, 4, |b| b.extend(std::iter::repeat_n(7u8, n)));
            let mut expected = vec![0xAA];
            bytes(&mut expected, 4, &vec![7u8; n]);
            assert_eq!(buf, expected, "{n}");
        }
    }
}
