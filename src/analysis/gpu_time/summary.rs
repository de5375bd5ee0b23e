//! Two runs' headline numbers side by side (`compare --summary`): per GPU
//! its busy share and idle split, per kind of work its share of GPU time,
//! communication overlap, and the launch delay's median and p90 per kind,
//! with the difference B minus A. A measure one run lacks (a GPU, a kind)
//! is empty on that side, and has no difference; one neither has is no row.

use std::collections::BTreeSet;

use crate::analysis::stats::{Cell, Table};

use super::model::RunReport;
use super::page::percent;

/// One measure of a run: a share in percent, or nanoseconds.
#[derive(Clone, Copy)]
enum Value {
    Percent(f64),
    Ns(i64),
}

impl Value {
    fn cell(self) -> Cell {
        match self {
            Value::Percent(p) => Cell::Real(p, 2),
            Value::Ns(n) => Cell::Int(n.into()),
        }
    }

    fn minus(self, other: Value) -> Cell {
        match (self, other) {
            (Value::Percent(b), Value::Percent(a)) => Cell::Real(b - a, 2),
            (Value::Ns(b), Value::Ns(a)) => Cell::Int(i128::from(b) - i128::from(a)),
            _ => Cell::Empty,
        }
    }
}

/// How a measure is read from a run, given its key (a device, a kind).
type Read = fn(&RunReport, &str) -> Option<Value>;
type Measure = (String, Read);

fn gpu<'r>(run: &'r RunReport, device: &str) -> Option<&'r super::GpuUse> {
    run.gpus.iter().find(|g| g.device.to_string() == device)
}

fn kind_share(run: &RunReport, kind: &str) -> Option<Value> {
    let total: i128 = run.kinds.iter().map(|k| k.time).sum();
    let k = run.kinds.iter().find(|k| k.kind == kind)?;
    Some(Value::Percent(percent(k.time, total)))
}

/// The headline numbers of `a` and `b`, a row per measure: its name, A, B,
/// and B - A.
pub fn summary_table(a: &RunReport, b: &RunReport) -> Table {
    let devices: BTreeSet<i64> = a.gpus.iter().chain(&b.gpus).map(|g| g.device).collect();
    let mut measures: Vec<(String, String, Read)> = Vec::new();
    let gpu_measures: [Measure; 6] = [
        ("busy % of its work's span".into(), |r, d| {
            gpu(r, d).map(|g| Value::Percent(percent(g.busy.into(), g.span().into())))
        }),
        ("busy % of the capture".into(), |r, d| {
            let capture = r.capture.map(|(s, e)| e - s)?;
            gpu(r, d).map(|g| Value::Percent(percent(g.busy.into(), capture.into())))
        }),
        ("idle host-bound (ns)".into(), |r, d| {
            gpu(r, d).map(|g| Value::Ns(g.host_bound))
        }),
        ("idle waiting (ns)".into(), |r, d| {
            gpu(r, d).map(|g| Value::Ns(g.waiting))
        }),
        ("idle unattributed (ns)".into(), |r, d| {
            gpu(r, d).map(|g| Value::Ns(g.unattributed))
        }),
        ("communication overlapped %".into(), |r, d| {
            gpu(r, d)
                .filter(|g| g.communication > 0)
                .map(|g| Value::Percent(percent(g.overlapped.into(), g.communication.into())))
        }),
    ];
    for device in &devices {
        for (name, f) in &gpu_measures {
            measures.push((format!("GPU {device} {name}"), device.to_string(), *f));
        }
    }
    let mut kinds: Vec<String> = Vec::new();
    for k in a.kinds.iter().chain(&b.kinds) {
        if !kinds.contains(&k.kind) {
            kinds.push(k.kind.clone());
        }
    }
    for kind in &kinds {
        measures.push((
            format!("{kind} share of GPU time %"),
            kind.clone(),
            kind_share,
        ));
    }
    let launch_measures: [Measure; 2] = [
        ("launch delay p50 (ns)".into(), |r, k| {
            r.launches
                .iter()
                .find(|l| l.kind == k)
                .map(|l| Value::Ns(l.delay[0]))
        }),
        ("launch delay p90 (ns)".into(), |r, k| {
            r.launches
                .iter()
                .find(|l| l.kind == k)
                .map(|l| Value::Ns(l.delay[1]))
        }),
    ];
    for kind in &kinds {
        for (name, f) in &launch_measures {
            measures.push((format!("{kind} {name}"), kind.clone(), *f));
        }
    }
    let rows = measures
        .into_iter()
        .filter_map(|(name, key, f)| {
            let (va, vb) = (f(a, &key), f(b, &key));
            // Neither run has it (no communication kernels in either): no row.
            va.or(vb)?;
            let difference = match (va, vb) {
                (Some(va), Some(vb)) => vb.minus(va),
                _ => Cell::Empty,
            };
            Some(vec![
                Cell::Text(name),
                va.map_or(Cell::Empty, Value::cell),
                vb.map_or(Cell::Empty, Value::cell),
                difference,
            ])
        })
        .collect();
    Table {
        name: "report_summary_diff".into(),
        title: "Report headline numbers, A and B".into(),
        columns: ["Measure", "A", "B", "B - A"].map(String::from).to_vec(),
        rows,
        no_data: None,
        incomplete: crate::analysis::compare::incomplete_sides(&a.incomplete, &b.incomplete),
    }
}
