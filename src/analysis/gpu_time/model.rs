//! What a report says of one run: plain values, each section a field, for
//! the page writers and for programs (`--format json`).

/// One run's answers.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct RunReport {
    /// The input, as given.
    pub path: String,
    /// The capture's start and end (ns, the export's clock), where the
    /// export records them; else from the first to the last CUDA event.
    pub capture: Option<(i64, i64)>,
    /// Per GPU, by device number.
    pub gpus: Vec<GpuUse>,
    /// The time line buckets' width (ns) and the first's start, shared by
    /// every GPU's [`GpuUse::timeline`].
    pub timeline: (i64, i64),
    /// GPU time by kind of work, every GPU together, largest first.
    pub kinds: Vec<KindTime>,
    /// Launch call time and launch-to-start delay, per kind of work.
    pub launches: Vec<LaunchDelays>,
    /// The kernels with most GPU time, by name.
    pub top_kernels: Vec<NamedTime>,
    /// The summed time of every kernel.
    pub kernel_time: i128,
    /// The NVTX ranges with most projected GPU time, names grouped.
    pub nvtx: NvtxScopes,
    /// What the rules of `analyze` found.
    pub findings: Vec<RuleFindings>,
    /// The tables it could not read (they lack columns their rows need):
    /// the numbers that depend on them are incomplete. Empty where every
    /// table was read.
    pub incomplete: Vec<crate::Unreadable>,
    /// CUDA events left out of the GPU numbers for times that cannot be
    /// right: ending before they start, or far past the capture's end.
    pub impossible_times: u64,
}

impl RunReport {
    /// Lines that explain events left out of the numbers.
    pub fn warnings(&self) -> Vec<String> {
        crate::nsys::impossible_times_warning(self.impossible_times)
            .into_iter()
            .collect()
    }

    /// How busy its GPUs were while they worked (0 to 1): each GPU's busy
    /// time over its own work's span (the page's "Busy" figure, a GPU
    /// whose work has no length busy for none of it), averaged over the
    /// GPUs; none without GPUs. Not a share of the capture, which an export
    /// cropped around a second of work in minutes of capture would show as
    /// nearly idle. The hub's headline and `compare --fail-if 'busy...'`.
    pub fn busy_of_span(&self) -> Option<f64> {
        let shares = self.gpus.iter().map(|gpu| match gpu.span() {
            0 => 0.0,
            span => gpu.busy as f64 / span as f64,
        });
        (!self.gpus.is_empty()).then(|| shares.sum::<f64>() / self.gpus.len() as f64)
    }
}

/// How one GPU spent the run.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct GpuUse {
    /// `deviceId`.
    pub device: i64,
    /// Its name, where the export records it.
    pub name: Option<String>,
    /// The first start and the last end of its work.
    pub first_start: i64,
    /// See `first_start`.
    pub last_end: i64,
    /// The union of its kernels, memcpys, memsets and whole-graph runs.
    pub busy: i64,
    /// Idle time between its first and last work with no work launched for
    /// it yet: the host had not asked (see the module's doc).
    pub host_bound: i64,
    /// Idle time in which the work that ended the idleness had been
    /// launched already: it waited (behind a synchronization, a copy, the
    /// launch's own latency).
    pub waiting: i64,
    /// Idle time ended by work whose launch call the export lacks.
    pub unattributed: i64,
    /// The union of its communication kernels.
    pub communication: i64,
    /// Of `communication`, the time in which a computing kernel ran too.
    pub overlapped: i64,
    /// The longest idle stretches, longest first.
    pub largest_idle: Vec<IdleStretch>,
    /// Its busy and waiting time over the run.
    pub timeline: GpuTimeline,
}

impl GpuUse {
    /// From its first work's start to its last work's end.
    pub fn span(&self) -> i64 {
        self.last_end - self.first_start
    }
}

/// A GPU's busy and waiting time per bucket of the run's time line (see
/// [`RunReport::timeline`]): also its shape in the page's JSON.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct GpuTimeline {
    /// Busy time per bucket (ns).
    pub busy: Vec<i64>,
    /// Waiting time per bucket (ns).
    pub waiting: Vec<i64>,
}

/// An idle stretch of a GPU, and what the CPU threads did meanwhile.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct IdleStretch {
    /// Start and end, ns.
    pub start: i64,
    /// See `start`.
    pub end: i64,
    /// From when the stretch was waiting: the start of the call that
    /// launched the work ending it (clamped to the stretch); `None` where
    /// that call is not in the export.
    pub waiting_from: Option<i64>,
    /// The process whose work ended it.
    pub pid: Option<u32>,
    /// What each of that process's threads did: the call it spent most
    /// time in, the NVTX range that overlapped the stretch most, the
    /// function it was sampled in most; the threads with the most calls and
    /// samples first.
    pub threads: Vec<ThreadActivity>,
}

/// What one thread did during an idle stretch.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ThreadActivity {
    /// The thread id.
    pub tid: u32,
    /// Its name, where recorded.
    pub name: Option<String>,
    /// The call (CUDA API or OS runtime) the thread spent most time in
    /// during the stretch: its name, and how long its calls of that name
    /// overlapped the stretch together.
    pub call: Option<(String, i64)>,
    /// How many calls (CUDA API and OS runtime) of the thread overlapped
    /// the stretch.
    pub calls: u64,
    /// The NVTX range that overlapped the stretch most (the innermost of
    /// equals), and by how much.
    pub range: Option<(String, i64)>,
    /// The function most of the thread's CPU samples in the stretch were
    /// taken in (the innermost frame), and how many were.
    pub sampled: Option<(String, u64)>,
    /// How many CPU samples of the thread the stretch holds.
    pub samples: u64,
}

/// GPU time of one kind of work.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct KindTime {
    /// The kind (`GEMM`, `memcpy Host-to-Device`).
    pub kind: String,
    /// Summed durations (concurrent work adds up).
    pub time: i128,
    /// How many operations.
    pub count: u64,
}

/// Launch overhead of one kind of work: quantiles by nearest rank, within
/// 1/128 of the exact values (a bounded histogram).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct LaunchDelays {
    /// The kind of work.
    pub kind: String,
    /// Launch calls, each counted once, under the kind of its first work.
    pub calls: u64,
    /// The calls' durations: median, p90, p99.
    pub call_time: [i64; 3],
    /// Operations with their launch call.
    pub launched: u64,
    /// From the launch call's end to the work's start (0 where the work
    /// started before the call returned): median, p90, p99.
    pub delay: [i64; 3],
}

/// A name and its time.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct NamedTime {
    /// The name.
    pub name: String,
    /// Its time, ns.
    pub time: i128,
    /// How many instances, where counted.
    pub count: Option<u64>,
}

/// The NVTX scopes section.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct NvtxScopes {
    /// Why there is none, where the section could not be made.
    pub skipped: Option<String>,
    /// By projected GPU time (first start to last end of the GPU work
    /// launched within each range), ranges of one grouped name summed.
    /// The count of each is how many ranges of the name launched GPU work.
    pub top: Vec<NamedTime>,
    /// The span of the run's GPU work, which shares are of.
    pub gpu_span: i128,
}

/// What one rule of `analyze` found: also its shape in the page's JSON.
#[derive(Clone, Debug, Default, serde::Serialize)]
#[non_exhaustive]
pub struct RuleFindings {
    /// The rule's name (`gpu_gaps`).
    pub rule: String,
    /// What it finds, as a heading.
    pub title: String,
    /// How many findings.
    pub count: usize,
    /// Why it did not run, where it did not.
    pub skipped: Option<String>,
    /// The first few, in the rule's order (longest first), each as a line.
    pub top: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(busy: i64, span: i64) -> GpuUse {
        GpuUse {
            first_start: 1_000,
            last_end: 1_000 + span,
            busy,
            ..GpuUse::default()
        }
    }

    #[test]
    fn busy_of_span_is_the_mean_of_each_gpus_share() {
        let run = |gpus| RunReport {
            gpus,
            ..RunReport::default()
        };
        let close = |run: RunReport, share: f64| {
            let found = run.busy_of_span().unwrap();
            assert!((found - share).abs() < 1e-12, "{found} is not {share}");
        };
        assert_eq!(run(vec![]).busy_of_span(), None);
        // Half of 100 ns and a tenth of 1,000 ns: 0.3, not 150 of 1,100.
        close(run(vec![gpu(50, 100), gpu(100, 1_000)]), 0.3);
        // A GPU whose work has no length counts as idle.
        close(run(vec![gpu(50, 100), gpu(100, 1_000), gpu(0, 0)]), 0.2);
    }
}
