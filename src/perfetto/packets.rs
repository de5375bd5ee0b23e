//! Framing TracePackets as the `Trace.packet` stream.

use std::io::{self, Write};

use prost::Message;

use super::proto::TracePacket;

/// `Trace { repeated TracePacket packet = 1; }`: field 1, wire type 2.
const PACKET_TAG: u8 = 0x0A;

/// Writes packets one by one; the concatenation is a valid `Trace` message.
pub struct PacketWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    packets: u64,
}

impl<W: Write> PacketWriter<W> {
    pub fn new(out: W) -> Self {
        Self {
            out,
            buf: Vec::with_capacity(4096),
            packets: 0,
        }
    }

    pub fn write(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        self.buf.push(PACKET_TAG);
        prost::encoding::encode_varint(packet.encoded_len() as u64, &mut self.buf);
        packet.encode_raw(&mut self.buf);
        self.packets += 1;
        self.out.write_all(&self.buf)
    }

    /// Number of packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}
