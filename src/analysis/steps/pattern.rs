//! Which NVTX ranges are steps: a glob over their names.

use std::fmt;
use std::str::FromStr;

use regex::Regex;

use crate::error::{Error, Result};

/// A glob over NVTX range names that picks a job's steps: `*` stands for any
/// run of characters, `?` for one, every other character for itself, and the
/// whole name must match (`ProfilerStep*` matches `ProfilerStep#12`, not
/// `Before ProfilerStep#12`).
#[derive(Clone, Debug)]
pub struct StepPattern {
    text: String,
    regex: Regex,
}

impl StepPattern {
    /// The glob `text`; an empty one is an
    /// [`Error::InvalidOption`](crate::Error::InvalidOption).
    pub fn new(text: &str) -> Result<StepPattern> {
        if text.is_empty() {
            return Err(Error::InvalidOption(
                "the step pattern is empty (a glob over NVTX range names, as ProfilerStep*)".into(),
            ));
        }
        let mut expression = String::with_capacity(text.len() + 8);
        expression.push_str("(?s)^");
        let mut literal = [0u8; 4];
        for c in text.chars() {
            match c {
                '*' => expression.push_str(".*"),
                '?' => expression.push('.'),
                c => expression.push_str(&regex::escape(c.encode_utf8(&mut literal))),
            }
        }
        expression.push('$');
        // Escaped literals and two wildcards always compile; a pattern too
        // large for the regex crate's limits is told as any other.
        let regex = crate::pattern::compile(&format!("step pattern {text:?}"), &expression)?;
        Ok(StepPattern {
            text: text.to_owned(),
            regex,
        })
    }

    /// The glob as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether the range name `name` is a step's.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.is_match(name)
    }
}

impl FromStr for StepPattern {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        StepPattern::new(text)
    }
}

impl fmt::Display for StepPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_matches_whole_names() {
        let p = StepPattern::new("ProfilerStep*").unwrap();
        assert!(p.matches("ProfilerStep#12"));
        assert!(p.matches("ProfilerStep"));
        assert!(!p.matches("Before ProfilerStep#12"));
        assert!(!p.matches("profilerstep#1"));
        let p = StepPattern::new("step ?").unwrap();
        assert!(p.matches("step 4"));
        assert!(!p.matches("step 10"));
        // Regex syntax is literal: a dot, brackets and a plus are themselves.
        let p = StepPattern::new("iter[1].+*").unwrap();
        assert!(p.matches("iter[1].+ forward"));
        assert!(!p.matches("iter1x+"));
        let p = StepPattern::new("a*b").unwrap();
        assert!(p.matches("a\nmiddle\nb"), "a star spans lines");
    }

    #[test]
    fn an_empty_pattern_is_refused() {
        let e = StepPattern::new("").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
    }
}
