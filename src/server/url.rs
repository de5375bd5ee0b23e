//! URLs, both ways: a name encoded as a path segment ([`encode`]), and a
//! query's values decoded ([`query_value`], [`query_values`], [`decode`]),
//! with the origin of an http(s) URL ([`origin`]). The little the servers
//! need, in one place, so that what one side writes the other reads.

/// A name as a URL path segment: unreserved characters as they are, every
/// other byte %-encoded.
pub fn encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Every value of `name` in a query string, percent-decoded, in order.
pub fn query_values(query: &str, name: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|pair| value_of(pair, name))
        .collect()
}

/// `name`'s first value in a query string, percent-decoded.
pub fn query_value(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| value_of(pair, name))
}

/// The value of a query's `pair` (`k=v`, or `k` alone) if its key is `name`.
fn value_of(pair: &str, name: &str) -> Option<String> {
    let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
    (decode(k)? == name).then(|| decode(v)).flatten()
}

/// `text` percent-decoded (`+` as a space, as forms write it); none where
/// it is not UTF-8.
pub fn decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The origin (`scheme://host[:port]`) of an http(s) URL; none for any
/// other.
pub fn origin(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    if scheme != "http" && scheme != "https" {
        return None;
    }
    let host = rest.split(['/', '?', '#']).next()?;
    (!host.is_empty()).then(|| format!("{scheme}://{host}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_encoded_for_urls() {
        assert_eq!(encode("run 1.perfetto-trace"), "run%201.perfetto-trace");
        assert_eq!(encode("a#b?c"), "a%23b%3Fc");
    }

    #[test]
    fn what_is_encoded_decodes_to_itself() {
        for name in ["run 1.sqlite", "a#b?c&d=e", "ünï cödé+%", "x/y"] {
            assert_eq!(decode(&encode(name)).as_deref(), Some(name));
        }
    }

    #[test]
    fn queries_give_every_value_in_order() {
        let query = "run=a%2Fb&step=x+y&run=c&flag";
        assert_eq!(query_values(query, "run"), ["a/b", "c"]);
        assert_eq!(query_value(query, "step").as_deref(), Some("x y"));
        assert_eq!(query_value(query, "flag").as_deref(), Some(""));
        assert_eq!(query_value(query, "none"), None);
    }

    #[test]
    fn only_http_urls_have_an_origin() {
        assert_eq!(
            origin("https://ui.perfetto.dev/#!/").as_deref(),
            Some("https://ui.perfetto.dev")
        );
        assert_eq!(origin("ftp://x"), None);
        assert_eq!(origin("http://"), None);
    }
}
