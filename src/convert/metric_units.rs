//! The unit of a GPU metric, from the bracket of its name ("SMs Active
//! [Throughput %]" is in %), and its samples in that unit.
//!
//! nsys stores each metric as the counter it samples: the clocks ("GPC
//! Clock Frequency [MHz]", "SYS Clock Frequency [MHz]") are
//! `gpc__cycles_elapsed.avg.per_second` and the like, cycles per second,
//! and the MHz of the name is applied only when nsys displays them: an H100
//! whose `TARGET_INFO_GPU.clockRate` is 1,980,000,000 Hz has samples of
//! 2,100,040,000 "MHz". Frequencies are turned into the unit their name
//! says. Percentages, warps, workloads and requests are stored as named.

use crate::nsys::metrics::MetricValue;
use crate::perfetto::{CounterUnit, CounterValue, GpuCounterGroup, GpuCounterUnit};

/// A metric's unit, and what turns its samples into it.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct MetricUnit {
    pub(super) unit: CounterUnit,
    /// Hertz per unit, for a frequency ("MHz": 1e6).
    hertz: Option<f64>,
}

/// Samples at or above this are hertz: GPU clocks run from about 100 MHz to
/// a few GHz, so a clock in Hz is 1e8 or more and one in MHz (as an export
/// that stored the named unit would have it) is below 1e4.
const HERTZ_AT_LEAST: f64 = 1e6;

impl MetricUnit {
    /// The unit of the metric named `name`.
    pub(super) fn of(name: &str) -> Self {
        let Some(inner) = name
            .rsplit_once('[')
            .and_then(|(_, rest)| rest.strip_suffix(']'))
        else {
            return Self {
                unit: CounterUnit::Unspecified,
                hertz: None,
            };
        };
        let hertz = match inner.trim() {
            "Hz" => Some(1.0),
            "kHz" => Some(1e3),
            "MHz" => Some(1e6),
            "GHz" => Some(1e9),
            _ => None,
        };
        let unit = match inner.ends_with('%') {
            true => "%".to_owned(),
            false => inner.trim().to_owned(),
        };
        Self {
            unit: CounterUnit::Named(unit),
            hertz,
        }
    }

    /// The unit as a GPU counter has it: those Perfetto names (percent and
    /// frequencies); the others (warps, requests, ...) stay in the name.
    pub(super) fn gpu_unit(&self) -> GpuCounterUnit {
        match (&self.unit, self.hertz) {
            (_, Some(1.0)) => GpuCounterUnit::Hertz,
            (_, Some(1e3)) => GpuCounterUnit::Kilohertz,
            (_, Some(1e6)) => GpuCounterUnit::Megahertz,
            (_, Some(1e9)) => GpuCounterUnit::Gigahertz,
            (CounterUnit::Named(unit), _) if unit == "%" => GpuCounterUnit::Percent,
            _ => GpuCounterUnit::None,
        }
    }

    /// A sample, as stored, in the metric's unit.
    pub(super) fn value(&self, stored: MetricValue) -> CounterValue {
        let as_stored = match stored {
            MetricValue::Int(v) => CounterValue::Int(v),
            MetricValue::Real(v) => CounterValue::Double(v),
        };
        let Some(hertz) = self.hertz.filter(|&h| h != 1.0) else {
            return as_stored;
        };
        let v = match stored {
            MetricValue::Int(v) => v as f64,
            MetricValue::Real(v) => v,
        };
        match v.abs() >= HERTZ_AT_LEAST {
            true => CounterValue::Double(v / hertz),
            false => as_stored,
        }
    }
}

/// The group of the GPU metric named `name`, where its name tells: clocks
/// are the GPU's own, DRAM, PCIe and NVLink traffic is memory, SMs, warps
/// and tensor cores are compute.
pub(super) fn metric_group(name: &str) -> Option<GpuCounterGroup> {
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if has(&["Clock"]) {
        Some(GpuCounterGroup::System)
    } else if has(&["DRAM", "PCIe", "NVLink", "NVLINK", "Memory", "BAR1", "L2"]) {
        Some(GpuCounterGroup::Memory)
    } else if has(&["SM", "Warp", "Tensor", "Compute", "GR Active"]) {
        Some(GpuCounterGroup::Compute)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_from_the_bracket() {
        let unit = |name| MetricUnit::of(name).unit;
        assert_eq!(
            unit("SMs Active [Throughput %]"),
            CounterUnit::Named("%".into())
        );
        assert_eq!(
            unit("GPC Clock Frequency [MHz]"),
            CounterUnit::Named("MHz".into())
        );
        assert_eq!(
            unit("Compute Warps in Flight [Avg Warps per Cycle]"),
            CounterUnit::Named("Avg Warps per Cycle".into())
        );
        assert_eq!(unit("Unallocated Warps"), CounterUnit::Unspecified);
    }

    #[test]
    fn gpu_counters_name_the_units_perfetto_knows() {
        let unit = |name| MetricUnit::of(name).gpu_unit();
        assert_eq!(unit("SMs Active [Throughput %]"), GpuCounterUnit::Percent);
        assert_eq!(unit("GPC Clock Frequency [MHz]"), GpuCounterUnit::Megahertz);
        assert_eq!(unit("Clock [GHz]"), GpuCounterUnit::Gigahertz);
        assert_eq!(unit("Clock [Hz]"), GpuCounterUnit::Hertz);
        assert_eq!(
            unit("PCIe Read Requests to BAR1 [Requests]"),
            GpuCounterUnit::None
        );
        assert_eq!(unit("Unallocated Warps"), GpuCounterUnit::None);
    }

    #[test]
    fn metric_groups_come_from_the_name() {
        assert_eq!(
            metric_group("GPC Clock Frequency [MHz]"),
            Some(GpuCounterGroup::System)
        );
        assert_eq!(
            metric_group("DRAM Read Bandwidth [Throughput %]"),
            Some(GpuCounterGroup::Memory)
        );
        assert_eq!(
            metric_group("PCIe RX Throughput [Throughput %]"),
            Some(GpuCounterGroup::Memory)
        );
        assert_eq!(
            metric_group("SMs Active [Throughput %]"),
            Some(GpuCounterGroup::Compute)
        );
        assert_eq!(
            metric_group("Tensor Active [Throughput %]"),
            Some(GpuCounterGroup::Compute)
        );
        assert_eq!(metric_group("Something else"), None);
    }

    #[test]
    fn clocks_stored_in_hertz_are_given_in_their_unit() {
        let mhz = MetricUnit::of("GPC Clock Frequency [MHz]");
        assert_eq!(
            mhz.value(MetricValue::Int(2_100_040_000)),
            CounterValue::Double(2100.04)
        );
        assert_eq!(
            mhz.value(MetricValue::Real(1.98e9)),
            CounterValue::Double(1980.0)
        );
        // Already in MHz, or stopped: as stored.
        assert_eq!(mhz.value(MetricValue::Int(1755)), CounterValue::Int(1755));
        assert_eq!(mhz.value(MetricValue::Int(0)), CounterValue::Int(0));
        let ghz = MetricUnit::of("Clock [GHz]");
        assert_eq!(
            ghz.value(MetricValue::Int(1_500_000_000)),
            CounterValue::Double(1.5)
        );
        // Not a frequency: as stored.
        let percent = MetricUnit::of("SMs Active [Throughput %]");
        assert_eq!(percent.value(MetricValue::Int(97)), CounterValue::Int(97));
        let requests = MetricUnit::of("PCIe Read Requests to BAR1 [Requests]");
        assert_eq!(
            requests.value(MetricValue::Int(5_000_000)),
            CounterValue::Int(5_000_000)
        );
    }
}
