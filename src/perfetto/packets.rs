//! Framing TracePackets as the `Trace.packet` stream.

use prost::Message;

use super::proto::TracePacket;
use super::wire::PACKET_KEY;

/// Appends `packet`, framed as one `Trace.packet` field, to `buf`.
pub(super) fn encode_packet(packet: &TracePacket, buf: &mut Vec<u8>) {
    buf.push(PACKET_KEY);
    prost::encoding::encode_varint(packet.encoded_len() as u64, buf);
    packet.encode_raw(buf);
}
