//! What JSON documents of in-memory models (written by `serde` derives)
//! need beyond serde's defaults: numbers as the hand-written documents
//! before them wrote them, so that their bytes stay the same.

use serde::Serializer;

/// A number that is an `f64` in memory, written as Rust's `Display` writes
/// it: a whole value without a fraction (`1500`, where serde writes
/// `1500.0`), any other as the shortest text that reads back the same (as
/// serde does, for the magnitudes of nanoseconds).
pub(crate) fn number<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    // Whole values up to 2^53 are exact as integers too.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match value.fract() == 0.0 && value.abs() <= EXACT {
        true => s.serialize_i64(*value as i64),
        false => s.serialize_f64(*value),
    }
}

/// [`number`], or `null`.
pub(crate) fn optional_number<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => number(v, s),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    #[derive(serde::Serialize)]
    struct Numbers {
        #[serde(serialize_with = "super::number")]
        whole: f64,
        #[serde(serialize_with = "super::number")]
        half: f64,
        #[serde(serialize_with = "super::optional_number")]
        none: Option<f64>,
    }

    #[test]
    fn numbers_read_as_display_writes_them() {
        let n = Numbers {
            whole: 1500.0,
            half: 2.5,
            none: None,
        };
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(
            json,
            format!(r#"{{"whole":{},"half":{},"none":null}}"#, 1500.0, 2.5)
        );
    }
}
