//! Parsers of flag values that more than one command takes: a command
//! reads its flags through these, never through another command's module.

use nsys2perfetto::merge::RankPattern;

/// A size, as `--cache-size` and `--max-upload` take it: bytes, or with a
/// unit (K, M, G, T: powers of 1024, as KiB...).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is no size (say 500M or 8GiB)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{text:?}: unknown unit (K, M, G, T)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// `--rank-from-name`'s pattern (`merge`, `report --step`), or why it is
/// none, in one line.
pub fn parse_rank_pattern(s: &str) -> Result<RankPattern, String> {
    RankPattern::new(s).map_err(|e| e.to_string())
}
