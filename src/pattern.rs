//! Regular expressions the user gives, compiled the one way: an invalid one
//! is an [`Error::InvalidOption`] on one line.

use regex::Regex;

use crate::error::{Error, Result};

/// `pattern` compiled, or an [`Error::InvalidOption`] that says `what`
/// (the words before the reason: `--nvtx '(' is not a regular expression`),
/// a colon, and why. The regex crate explains over several lines, pointing
/// at the error; only the last, which says why, is kept.
pub(crate) fn compile(what: &str, pattern: &str) -> Result<Regex> {
    Regex::new(pattern).map_err(|e| {
        let why = e.to_string();
        let why = why.lines().last().unwrap_or("").trim();
        let why = why.strip_prefix("error: ").unwrap_or(why);
        Error::InvalidOption(format!("{what}: {why}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invalid_pattern_is_told_on_one_line_with_why() {
        let e = compile("--nvtx '(' is not a regular expression", "(").unwrap_err();
        assert_eq!(
            e.to_string(),
            "--nvtx '(' is not a regular expression: unclosed group"
        );
        assert!(compile("any", "a+").unwrap().is_match("aa"));
    }
}
