//! Text made safe for each format the answers are written in, once each:
//! a CSV field, a JSON string, HTML and XML (pages, SVG charts), a cell of
//! a CommonMark (GitHub Markdown) table.

use std::borrow::Cow;

/// A CSV field (RFC 4180): quoted, its quotes doubled, where it holds a
/// comma, a quote or a line break (`\n` or `\r`); as it is otherwise.
pub(crate) fn csv_field(text: &str) -> Cow<'_, str> {
    match text.contains([',', '"', '\n', '\r']) {
        true => Cow::Owned(format!("\"{}\"", text.replace('"', "\"\""))),
        false => Cow::Borrowed(text),
    }
}

/// JSON as serde_json writes it compactly, its strings escaped as this
/// project's JSON always escaped them: quotes and backslashes escaped, the
/// control characters JSON forbids raw as `\n`, `\r`, `\t` or `\u00XX`
/// (backspace and form feed too, where serde_json writes `\b` and `\f`).
pub(crate) struct JsonCompact;

impl serde_json::ser::Formatter for JsonCompact {
    fn write_char_escape<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        escape: serde_json::ser::CharEscape,
    ) -> std::io::Result<()> {
        use serde_json::ser::{CharEscape, CompactFormatter};
        match escape {
            CharEscape::Backspace => w.write_all(b"\\u0008"),
            CharEscape::FormFeed => w.write_all(b"\\u000c"),
            other => CompactFormatter.write_char_escape(w, other),
        }
    }
}

/// A JSON string literal, as [`JsonCompact`] writes it.
pub(crate) fn json_string(text: &str) -> String {
    let mut out = Vec::new();
    let mut json = serde_json::Serializer::with_formatter(&mut out, JsonCompact);
    // A str always serializes, and the formatter writes UTF-8.
    serde::Serialize::serialize(text, &mut json).expect("a string serializes");
    String::from_utf8(out).expect("JSON is UTF-8")
}

/// A JSON string literal to go in an HTML page's data block (`<script
/// type="application/json">`): as [`json_string`], with `<` as `\u003c`,
/// so that no text can end the block (`</script>`) or open a comment.
pub(crate) fn json_in_html(text: &str) -> String {
    json_string(text).replace('<', "\\u003c")
}

/// `text` safe inside XML and HTML, in elements and quoted attributes:
/// markup characters as entities, and the control characters XML 1.0
/// cannot hold as `?`.
pub(crate) fn html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// `text` as CommonMark (and GitHub's tables) shows it literally, on one
/// line: the characters that would start markup (emphasis, code, links,
/// HTML such as `<unnamed>`, entities, table cells, GitHub's `$` math) backslash-escaped;
/// `_` only where it could emphasise (not between two letters or digits,
/// as in `sm80_xmma`); line breaks and other control characters as spaces.
pub(crate) fn commonmark(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        let word = |j: Option<usize>| {
            j.and_then(|j| chars.get(j))
                .is_some_and(|c| c.is_alphanumeric())
        };
        match c {
            '\\' | '`' | '*' | '<' | '>' | '[' | ']' | '|' | '~' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '_' if !(word(i.checked_sub(1)) && word(Some(i + 1))) => out.push_str("\\_"),
            // An entity (`&amp;`, `&#60;`) would be decoded.
            '&' if chars
                .get(i + 1)
                .is_some_and(|n| n.is_alphanumeric() || *n == '#') =>
            {
                out.push_str("\\&")
            }
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// [`commonmark`] for text that starts a line (a paragraph, a list item,
/// a heading): also what would make the line a heading, a list, a rule or
/// a quote (`# x`, `- x`, `1. x`, `+ x`, `= x`).
pub(crate) fn commonmark_line(text: &str) -> String {
    let escaped = commonmark(text);
    let digits = escaped.bytes().take_while(u8::is_ascii_digit).count();
    let starts_block = match escaped.as_bytes().get(digits) {
        _ if escaped.starts_with(['#', '-', '+', '=']) => true,
        Some(b'.' | b')') if digits > 0 => {
            return format!("{}\\{}", &escaped[..digits], &escaped[digits..]);
        }
        _ => false,
    };
    match starts_block {
        true => format!("\\{escaped}"),
        false => escaped,
    }
}

/// `code` as a CommonMark code span: fenced by more backticks than it
/// holds in a row, padded where it starts or ends with one; pipes escaped
/// (GitHub splits table cells at them even in code).
pub(crate) fn code_span(code: &str) -> String {
    let code = code.replace(['\n', '\r'], " ").replace('|', "\\|");
    let longest = code.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = match code.starts_with('`') || code.ends_with('`') {
        true => " ",
        false => "",
    };
    format!("{fence}{pad}{code}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that break a writer that escapes too little.
    const HOSTILE: [&str; 9] = [
        "f(a, \"b\")",
        "line\nbreak",
        "carriage\rreturn",
        "<unnamed> & <float>",
        "a|b`c`",
        "tab\tnul\u{0}bell\u{7}del\u{7f}",
        "back\\slash",
        "é ünïcödé \u{2028} \u{fffd}",
        "ProfilerStep#3 *x* _y_ [z](u) ~~s~~ $m$ !",
    ];

    #[test]
    fn csv_fields_read_back_as_written() {
        for text in HOSTILE {
            assert_eq!(read_csv_field(&csv_field(text)), text, "{text:?}");
        }
    }

    /// One field as RFC 4180 reads it: the quoted form unquoted, quotes
    /// undoubled; a bare field must hold no comma, quote or line break.
    fn read_csv_field(field: &str) -> String {
        match field.strip_prefix('"').and_then(|f| f.strip_suffix('"')) {
            Some(inner) => {
                assert!(!inner.replace("\"\"", "").contains('"'), "{field:?}");
                inner.replace("\"\"", "\"")
            }
            None => {
                assert!(!field.contains([',', '"', '\n', '\r']), "{field:?}");
                field.to_owned()
            }
        }
    }

    #[test]
    fn json_strings_read_back_as_written() {
        for text in HOSTILE {
            let literal = json_string(text);
            assert!(
                !literal.chars().any(|c| (c as u32) < 0x20),
                "{literal:?} holds a raw control character"
            );
            assert_eq!(read_json_string(&literal), text);
        }
    }

    #[test]
    fn json_in_html_ends_no_block_and_reads_back_as_written() {
        for text in HOSTILE
            .iter()
            .chain(&["</script><script>alert(1)</script>", "<!-- x"])
        {
            let literal = json_in_html(text);
            assert!(!literal.contains('<'), "{literal:?}");
            let read: String = serde_json::from_str(&literal).unwrap();
            assert_eq!(read, *text);
        }
    }

    /// A JSON string literal read as RFC 8259 reads it.
    fn read_json_string(literal: &str) -> String {
        let inner = literal.strip_prefix('"').and_then(|l| l.strip_suffix('"'));
        let mut chars = inner.expect("a quoted literal").chars();
        let mut out = String::new();
        while let Some(c) = chars.next() {
            assert!(c != '"', "a raw quote in {literal:?}");
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next().expect("an escape") {
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'u' => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let code = u32::from_str_radix(&hex, 16).expect("4 hex digits");
                    out.push(char::from_u32(code).expect("a character"));
                }
                c @ ('"' | '\\' | '/') => out.push(c),
                c => panic!("\\{c} is no JSON escape"),
            }
        }
        out
    }

    #[test]
    fn html_leaves_no_markup_and_no_control_characters() {
        assert_eq!(
            html("a<b & \"c\" 'd'>"),
            "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"
        );
        assert_eq!(html("x\u{1}y\tz"), "x?y\tz");
        for text in HOSTILE {
            let escaped = html(text);
            assert!(!escaped.contains(['<', '>', '"', '\'']), "{escaped:?}");
            // Every & starts an entity of ours.
            for (at, _) in escaped.match_indices('&') {
                let rest = &escaped[at..];
                assert!(
                    ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                        .iter()
                        .any(|e| rest.starts_with(e)),
                    "{escaped:?}"
                );
            }
        }
    }

    #[test]
    fn commonmark_holds_no_markup_and_stays_one_line() {
        for text in HOSTILE {
            let cell = commonmark(text);
            assert!(!cell.chars().any(char::is_control), "{cell:?}");
            // Every markup character is escaped, and unescaping gives the
            // text back (control characters as spaces).
            let mut read = String::new();
            let mut chars = cell.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => read.push(chars.next().expect("an escaped character")),
                    '`' | '*' | '[' | ']' | '<' | '>' | '|' | '~' | '$' => {
                        panic!("{c:?} unescaped in {cell:?}")
                    }
                    c => read.push(c),
                }
            }
            let expected: String = text
                .chars()
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect();
            assert_eq!(read, expected);
        }
    }

    #[test]
    fn each_escape_writes_its_examples_as_they_are() {
        let csv = |text: &str| csv_field(text).into_owned();
        type Escape = fn(&str) -> String;
        let cases: [(Escape, &str, &str); 20] = [
            (csv, "plain", "plain"),
            (csv, "f(a, \"b\")", "\"f(a, \"\"b\"\")\""),
            (csv, "carriage\rreturn", "\"carriage\rreturn\""),
            (json_string, "\u{8}\u{c}", r#""\u0008\u000c""#),
            (json_string, "a\"b\\c\n", r#""a\"b\\c\n""#),
            (json_string, "\u{1}", r#""\u0001""#),
            (commonmark, "<unnamed>", "\\<unnamed\\>"),
            (commonmark, "a|b", "a\\|b"),
            (commonmark, "line\nbreak", "line break"),
            (
                commonmark,
                "at::native::<unnamed>::f<float>",
                "at::native::\\<unnamed\\>::f\\<float\\>",
            ),
            (
                commonmark,
                "a|b *c* `d` [e](f)",
                "a\\|b \\*c\\* \\`d\\` \\[e\\](f)",
            ),
            (commonmark, "sm80_xmma_gemm _x_", "sm80_xmma_gemm \\_x\\_"),
            (commonmark, "a &amp; b & c", "a \\&amp; b & c"),
            (commonmark, "two\nlines", "two lines"),
            (commonmark_line, "# not a heading", "\\# not a heading"),
            (commonmark_line, "12. not a list", "12\\. not a list"),
            (commonmark_line, "12 ok", "12 ok"),
            (code_span, "step *", "`step *`"),
            (code_span, "a`b|c", "``a`b\\|c``"),
            (code_span, "`x", "`` `x ``"),
        ];
        for (escape, text, escaped) in cases {
            assert_eq!(escape(text), escaped, "{text:?}");
        }
    }
}
