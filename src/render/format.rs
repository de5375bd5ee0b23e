//! Durations as people read them, in one place: every page,
//! and chart of the commands formats its times here, so that a time
//! reads the same wherever it is shown.

/// A unit of time, from nanoseconds to seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TimeUnit {
    Ns,
    Us,
    Ms,
    S,
}

impl TimeUnit {
    /// The largest unit of which `ns` is at least one (ns below 1 µs).
    pub(crate) fn of(ns: f64) -> TimeUnit {
        match ns.abs() {
            a if a >= 1e9 => TimeUnit::S,
            a if a >= 1e6 => TimeUnit::Ms,
            a if a >= 1e3 => TimeUnit::Us,
            _ => TimeUnit::Ns,
        }
    }

    /// Its length in nanoseconds.
    pub(crate) fn ns(self) -> f64 {
        match self {
            TimeUnit::Ns => 1.0,
            TimeUnit::Us => 1e3,
            TimeUnit::Ms => 1e6,
            TimeUnit::S => 1e9,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            TimeUnit::Ns => "ns",
            TimeUnit::Us => "µs",
            TimeUnit::Ms => "ms",
            TimeUnit::S => "s",
        }
    }
}

/// `ns` in `unit` with `decimals` decimals: `in_unit(2.5e6, Ms, 3)` is `2.500 ms`.
pub(crate) fn in_unit(ns: f64, unit: TimeUnit, decimals: usize) -> String {
    format!("{:.decimals$} {}", ns / unit.ns(), unit.name())
}

/// A duration to three or four significant digits, in the unit that suits
/// it: `812 ns`, `3.410 µs`, `12.90 ms`, `123.4 ms`, `1.230 s`.
pub(crate) fn duration(ns: i128) -> String {
    let unit = TimeUnit::of(ns as f64);
    if unit == TimeUnit::Ns {
        return format!("{ns} ns");
    }
    let decimals = match (ns as f64 / unit.ns()).abs() {
        v if v >= 100.0 => 1,
        v if v >= 10.0 => 2,
        _ => 3,
    };
    in_unit(ns as f64, unit, decimals)
}

/// A duration with three decimals in the unit that suits it, whole
/// nanoseconds below a microsecond: `812 ns`, `3.250 ms`.
pub(crate) fn duration_3(ns: i64) -> String {
    match TimeUnit::of(ns as f64) {
        TimeUnit::Ns => format!("{ns} ns"),
        unit => in_unit(ns as f64, unit, 3),
    }
}

/// A duration in milliseconds, to the microsecond: the unit of a table
/// whose times are compared down a column.
pub(crate) fn ms(ns: f64) -> String {
    in_unit(ns, TimeUnit::Ms, 3)
}

/// A size in bytes as people read it, in binary units to one decimal:
/// `512 B`, `1.5 KiB`, `3.2 GiB`.
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

/// A time on an export's clock, in seconds, to the microsecond.
pub(crate) fn seconds(ns: i128) -> String {
    format!("{:.6} s", ns as f64 / 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_the_unit_that_suits_them() {
        assert_eq!(duration(812), "812 ns");
        assert_eq!(duration(3_410), "3.410 µs");
        assert_eq!(duration(12_900_000), "12.90 ms");
        assert_eq!(duration(123_400_000), "123.4 ms");
        assert_eq!(duration(-1_230_000_000), "-1.230 s");
        assert_eq!(duration_3(812), "812 ns");
        assert_eq!(duration_3(3_250_000), "3.250 ms");
        assert_eq!(ms(380_292_408.0), "380.292 ms");
        assert_eq!(seconds(5_786_769_000), "5.786769 s");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
