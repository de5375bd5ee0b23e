//! Framing TracePackets as the `Trace.packet` stream.

use std::io::{self, Write};

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

/// Writes framed packets; the concatenation is a valid `Trace` message.
pub struct PacketWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    bytes: u64,
}

impl<W: Write> PacketWriter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            buf: Vec::with_capacity(4096),
            bytes: 0,
        }
    }

    pub fn write(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        encode_packet(packet, &mut self.buf);
        self.bytes += self.buf.len() as u64;
        self.out.write_all(&self.buf)
    }

    /// Writes packets framed by [`encode_packet`].
    pub fn write_encoded(&mut self, packets: &[u8]) -> io::Result<()> {
        self.bytes += packets.len() as u64;
        self.out.write_all(packets)
    }

    /// Whether nothing has been written yet.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}
