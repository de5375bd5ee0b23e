//! The findings' encoding in the files of sorted runs: compact, and read
//! back one finding at a time.
//!
//! Integers are zigzag LEB128 varints, an optional value a byte 0 (absent)
//! or 1 and the value, text its length and bytes.

use std::io;

use super::{Finding, Place, Rule};
use crate::nsys::MEMORY_KINDS;

fn put_int(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn put_opt(out: &mut Vec<u8>, v: Option<i64>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_int(out, v);
        }
    }
}

/// A memory kind as one byte: 0 for none, else 1 + its index in [`MEMORY_KINDS`].
fn put_kind(out: &mut Vec<u8>, kind: Option<&'static str>) {
    let code = kind.map_or(0, |k| {
        1 + MEMORY_KINDS
            .iter()
            .position(|&m| m == k)
            .expect("a memory kind of super::memory_kind")
    });
    out.push(code as u8);
}

pub(super) fn encode(f: &Finding, out: &mut Vec<u8>) {
    out.push(f.rule.index() as u8);
    put_int(out, f.start);
    put_int(out, f.duration);
    match f.place {
        Place::Thread { pid, tid } => {
            out.push(0);
            put_int(out, pid.into());
            put_int(out, tid.into());
        }
        Place::Gpu {
            pid,
            device,
            context,
            stream,
        } => {
            out.push(1);
            put_opt(out, pid.map(i64::from));
            put_int(out, device);
            put_opt(out, context);
            put_opt(out, stream);
        }
    }
    match &f.api {
        None => out.push(0),
        Some(api) => {
            out.push(1);
            put_int(out, api.len() as i64);
            out.extend_from_slice(api.as_bytes());
        }
    }
    put_int(out, f.correlation_ids.len() as i64);
    for &id in &f.correlation_ids {
        put_int(out, id);
    }
    put_kind(out, f.src_kind);
    put_kind(out, f.dst_kind);
    put_kind(out, f.memory_kind);
    put_opt(out, f.bytes);
    match f.in_use_percent {
        None => out.push(0),
        Some(p) => {
            out.push(1);
            out.extend_from_slice(&p.to_bits().to_le_bytes());
        }
    }
    match f.gap_between {
        None => out.push(0),
        Some([before, after]) => {
            out.push(1);
            put_opt(out, before);
            put_opt(out, after);
        }
    }
}

fn truncated() -> io::Error {
    io::Error::from(io::ErrorKind::UnexpectedEof)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("a finding read back from its temporary file has {what}"),
    )
}

fn get_byte(input: &mut &[u8]) -> io::Result<u8> {
    let (&b, rest) = input.split_first().ok_or_else(truncated)?;
    *input = rest;
    Ok(b)
}

fn get_int(input: &mut &[u8]) -> io::Result<i64> {
    let mut z = 0u64;
    for shift in (0..64).step_by(7) {
        let b = get_byte(input)?;
        z |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((z >> 1) as i64 ^ -((z & 1) as i64));
        }
    }
    Err(invalid("an integer too long"))
}

fn get_flag(input: &mut &[u8]) -> io::Result<bool> {
    match get_byte(input)? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(invalid("a bad presence flag")),
    }
}

fn get_opt(input: &mut &[u8]) -> io::Result<Option<i64>> {
    match get_flag(input)? {
        false => Ok(None),
        true => get_int(input).map(Some),
    }
}

fn get_u32(input: &mut &[u8]) -> io::Result<u32> {
    u32::try_from(get_int(input)?).map_err(|_| invalid("a bad process or thread id"))
}

fn get_kind(input: &mut &[u8]) -> io::Result<Option<&'static str>> {
    match get_byte(input)? {
        0 => Ok(None),
        code => MEMORY_KINDS
            .get(usize::from(code) - 1)
            .copied()
            .map(Some)
            .ok_or_else(|| invalid("an unknown memory kind")),
    }
}

fn get_len(input: &mut &[u8]) -> io::Result<usize> {
    let n = usize::try_from(get_int(input)?).map_err(|_| invalid("a bad length"))?;
    // A length past what is left means more is to be read.
    match n <= input.len() {
        true => Ok(n),
        false => Err(truncated()),
    }
}

/// The finding at the start of `input`, which is advanced past it; an
/// [`io::ErrorKind::UnexpectedEof`] error where `input` ends within it.
pub(super) fn decode(input: &mut &[u8]) -> io::Result<Finding> {
    let rule = *Rule::ALL
        .get(usize::from(get_byte(input)?))
        .ok_or_else(|| invalid("an unknown rule"))?;
    let start = get_int(input)?;
    let duration = get_int(input)?;
    let place = match get_byte(input)? {
        0 => Place::Thread {
            pid: get_u32(input)?,
            tid: get_u32(input)?,
        },
        1 => Place::Gpu {
            pid: get_opt(input)?
                .map(|p| u32::try_from(p).map_err(|_| invalid("a bad process id")))
                .transpose()?,
            device: get_int(input)?,
            context: get_opt(input)?,
            stream: get_opt(input)?,
        },
        _ => return Err(invalid("an unknown place")),
    };
    let api = match get_flag(input)? {
        false => None,
        true => {
            let n = get_len(input)?;
            let (text, rest) = input.split_at(n);
            *input = rest;
            let text = std::str::from_utf8(text).map_err(|_| invalid("a name not UTF-8"))?;
            Some(text.to_owned())
        }
    };
    let ids = usize::try_from(get_int(input)?).map_err(|_| invalid("a bad length"))?;
    let mut correlation_ids = Vec::with_capacity(ids.min(input.len()));
    for _ in 0..ids {
        correlation_ids.push(get_int(input)?);
    }
    let mut f = Finding::new(rule, start, start + duration, place);
    f.api = api;
    f.correlation_ids = correlation_ids;
    f.src_kind = get_kind(input)?;
    f.dst_kind = get_kind(input)?;
    f.memory_kind = get_kind(input)?;
    f.bytes = get_opt(input)?;
    f.in_use_percent = match get_flag(input)? {
        false => None,
        true => {
            let bytes = input.get(..8).ok_or_else(truncated)?;
            let bits = u64::from_le_bytes(bytes.try_into().expect("8 bytes"));
            *input = &input[8..];
            Some(f64::from_bits(bits))
        }
    };
    f.gap_between = match get_flag(input)? {
        false => None,
        true => Some([get_opt(input)?, get_opt(input)?]),
    };
    Ok(f)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Findings of every kind, with ties in both orders.
    pub(in crate::analysis::analyze) fn examples() -> Vec<Finding> {
        let mut all = Vec::new();
        for i in 0..500i64 {
            let rule = Rule::ALL[(i * 7 % 6) as usize];
            let place = match i % 3 {
                0 => Place::Thread {
                    pid: 10 + (i % 4) as u32,
                    tid: u32::MAX - i as u32,
                },
                _ => Place::Gpu {
                    pid: (i % 5 != 0).then_some(3),
                    device: i % 2,
                    context: (i % 4 != 0).then_some(1),
                    stream: (i % 6 == 1).then_some(-7),
                },
            };
            let start = (i * 37) % 101 - 50;
            let mut f = Finding::new(rule, start, start + (i * 13) % 17, place);
            f.api = (i % 2 == 0)
                .then(|| format!("cudaMemcpy{}Async_v3020", "x".repeat((i % 9) as usize)));
            f.correlation_ids = (0..i % 3).map(|k| i * 1_000_000_007 + k).collect();
            f.src_kind = (i % 4 == 1).then_some("Pageable");
            f.dst_kind = (i % 4 == 2).then_some("Managed Static");
            f.memory_kind = (i % 5 == 3).then_some("Unknown");
            f.bytes = (i % 3 == 2).then_some(i64::MIN + i);
            f.in_use_percent = (rule == Rule::GpuTimeUtil).then_some(((i % 4) as f64) * 10.1);
            f.gap_between = (rule == Rule::GpuGaps).then_some([Some(i), None]);
            all.push(f);
        }
        all
    }

    #[test]
    fn an_encoded_finding_decodes_to_itself() {
        for f in examples() {
            let mut buf = Vec::new();
            encode(&f, &mut buf);
            let mut input = &buf[..];
            assert_eq!(decode(&mut input).unwrap(), f);
            assert!(input.is_empty());
            // Cut anywhere, it asks for more.
            for cut in 0..buf.len() {
                let mut input = &buf[..cut];
                let e = decode(&mut input).unwrap_err();
                assert_eq!(
                    e.kind(),
                    io::ErrorKind::UnexpectedEof,
                    "cut at {cut} of {f:?}"
                );
            }
        }
    }
}
