//! Framing TracePackets as the `Trace.packet` stream.

use prost::Message;

use super::proto::TracePacket;

/// `Trace { repeated TracePacket packet = 1; }`: field 1, wire type 2.
const PACKET_TAG: u8 = 0x0A;

/// Appends `packet`, framed as one `Trace.packet` field, to `buf`.
pub fn encode_packet(packet: &TracePacket, buf: &mut Vec<u8>) {
    buf.push(PACKET_TAG);
    prost::encoding::encode_varint(packet.encoded_len() as u64, buf);
    packet.encode_raw(buf);
}
