//! The pieces of JSON the transcoder writes: strings, times, values.

use std::fmt::Write as _;

/// Appends `s` as a JSON string, quotes included.
pub(super) fn string(out: &mut String, s: &str) {
    out.push('"');
    let mut plain = 0;
    for (i, c) in s.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[plain..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(escaped);
        }
        plain = i + c.len_utf8();
    }
    out.push_str(&s[plain..]);
    out.push('"');
}

/// Appends a time or duration in nanoseconds as JSON's microseconds, with
/// the nanoseconds as three decimals: exact, whatever its size (no float
/// ever holds it).
pub(super) fn micros(out: &mut String, ns: u64) {
    let _ = write!(out, "{}.{:03}", ns / 1000, ns % 1000);
}

/// Appends a float as a JSON number that reads back as a float (18.0, not
/// 18), or as a string where JSON has no number for it (NaN, infinities).
pub(super) fn double(out: &mut String, v: f64) {
    if v.is_finite() {
        let at = out.len();
        // Display writes the shortest digits that read back as `v`, never
        // with an exponent.
        let _ = write!(out, "{v}");
        if !out[at..].contains('.') {
            out.push_str(".0");
        }
    } else {
        string(out, &v.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped_as_json_says() {
        let mut out = String::new();
        string(&mut out, "a\"b\\c\nd\u{1}é");
        assert_eq!(out, r#""a\"b\\c\nd\u0001é""#);
    }

    #[test]
    fn times_keep_every_nanosecond() {
        let mut out = String::new();
        micros(&mut out, 1_234_567_890_123_456_789);
        assert_eq!(out, "1234567890123456.789");
        out.clear();
        micros(&mut out, 5);
        assert_eq!(out, "0.005");
    }

    #[test]
    fn floats_without_a_json_number_become_strings() {
        let mut out = String::new();
        double(&mut out, f64::NAN);
        out.push(',');
        double(&mut out, 2.5);
        out.push(',');
        double(&mut out, 18.0);
        assert_eq!(out, r#""NaN",2.5,18.0"#);
    }
}
