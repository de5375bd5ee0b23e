//! The flags that choose what a trace holds and how it is written, shared by
//! the subcommands that convert (`convert`, `profile`; `merge` takes how it
//! is written and which parts).

use std::path::Path;

use nsys2perfetto::analyze::Thresholds;
use nsys2perfetto::{output_format, Filter, Format, GpuModel, Options, Part, Parts, TimeWindow};

/// What goes into the trace, and how it is written.
#[derive(clap::Args, Clone, Debug)]
pub struct Conversion {
    #[command(flatten)]
    pub encoding: Encoding,

    #[command(flatten)]
    selection: Selection,

    /// Add an "Analysis" track group: what `nsys2perfetto analyze` finds
    /// (with its default thresholds), as slices over the offending time.
    #[arg(long)]
    findings: bool,

    #[command(flatten)]
    filters: Filters,
}

/// How a trace is written: its format and its compression.
#[derive(clap::Args, Clone, Debug)]
pub struct Encoding {
    /// Write Perfetto's protobuf, or Chrome's trace event JSON for tools that
    /// read only JSON (default: as the output's name says, json for .json and
    /// .json.gz; a format the name contradicts is refused). JSON is gzipped
    /// only when its name ends in .gz; it carries no CPU samples, context
    /// switches or call stacks.
    #[arg(long, value_name = "FORMAT")]
    format: Option<TraceFormat>,

    /// Write raw protobuf instead of gzip.
    #[arg(long, conflicts_with = "level")]
    no_gzip: bool,

    /// Gzip level: 1 is fastest, 9 smallest (default: 3). Level 1 compresses
    /// in 70% of the default's time into 6% more bytes; 6 saves 7% at twice
    /// the time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=9))]
    level: Option<u32>,

    /// How GPU work is written: trackevent, slices on a track per stream
    /// (every arg and flow, least trace_processor memory); or typed,
    /// Perfetto's own GPU model, which fills trace_processor's gpu_slice,
    /// gpu_context and gpu tables and the UI's GPU compute views (see
    /// docs/gpu-model.md). Perfetto's format only.
    #[arg(long, value_name = "MODEL", default_value = "trackevent")]
    gpu_model: GpuModelName,
}

/// What `--format` names: a [`Format`]. (No doc comments on the values:
/// clap would list them in the help, which names them in the flag's.)
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum TraceFormat {
    Perfetto,
    Json,
}

/// What `--gpu-model` names: a [`GpuModel`].
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum GpuModelName {
    #[value(name = "trackevent")]
    TrackEvent,
    Typed,
}

/// Which parts of the report the trace holds.
#[derive(clap::Args, Clone, Debug)]
pub struct Selection {
    /// Leave these out of the trace, for a lighter one (see docs/usage.md for
    /// what each part holds).
    #[arg(long, value_name = "PART,...", value_delimiter = ',')]
    exclude: Vec<Part>,

    /// Only these parts in the trace (then --exclude leaves out of them).
    #[arg(long, value_name = "PART,...", value_delimiter = ',')]
    only: Vec<Part>,
}

impl Encoding {
    /// Sets the format and gzip level of `options` as the name of the trace,
    /// `name`, asks for them, with no flag given (`compare --trace`).
    pub fn apply_named(options: &mut Options, name: &Path) -> Result<(), String> {
        let asked_for_nothing = Encoding {
            format: None,
            no_gzip: false,
            level: None,
            gpu_model: GpuModelName::TrackEvent,
        };
        asked_for_nothing.apply(options, Some(name))
    }

    /// Sets the format and gzip level of `options` for a trace written to
    /// `name` (`None`: to standard output, or under a name made from the
    /// format), or says how these flags contradict the name.
    pub fn apply(&self, options: &mut Options, name: Option<&Path>) -> Result<(), String> {
        options.format = self.format(name)?;
        options.gzip = self.gzip(options.format, name)?;
        options.gpu_model = match self.gpu_model {
            GpuModelName::Typed if options.format == Format::Json => return Err(
                "--gpu-model typed with JSON: Chrome's JSON has no place for Perfetto's GPU model"
                    .into(),
            ),
            GpuModelName::Typed => GpuModel::Typed,
            GpuModelName::TrackEvent => GpuModel::TrackEvent,
        };
        Ok(())
    }

    /// `--format`, else the format `name` names, else Perfetto's.
    fn format(&self, name: Option<&Path>) -> Result<Format, String> {
        let asked = self.format.map(|format| match format {
            TraceFormat::Json => Format::Json,
            TraceFormat::Perfetto => Format::Perfetto,
        });
        output_format(asked, name, Format::Perfetto).map_err(|e| e.to_string())
    }

    /// The gzip level: Perfetto's protobuf is gzipped unless --no-gzip; JSON
    /// only where its name ends in .gz (readers of JSON often take only
    /// plain text).
    fn gzip(&self, format: Format, name: Option<&Path>) -> Result<Option<u32>, String> {
        let level = self.level.unwrap_or(nsys2perfetto::DEFAULT_GZIP_LEVEL);
        if format != Format::Json {
            return Ok((!self.no_gzip).then_some(level));
        }
        let gz = name.filter(|n| n.to_string_lossy().ends_with(".gz"));
        match (gz, name) {
            (Some(_), _) if self.no_gzip => {
                Err("--no-gzip with an output name ending in .gz: drop one".into())
            }
            (Some(_), _) => Ok(Some(level)),
            (None, Some(name)) if self.level.is_some() => Err(format!(
                "--level and the output {}, plain JSON: JSON is gzipped only when its name ends in .gz",
                name.display()
            )),
            (None, None) if self.level.is_some() => Err(
                "--level with plain JSON: JSON is gzipped only when its name ends in .gz".into(),
            ),
            (None, _) => Ok(None),
        }
    }
}

impl Selection {
    /// The parts these flags keep, or why they contradict themselves:
    /// `--only nvtx_gpu` without the parts the projection is made of.
    pub fn parts(&self) -> Result<Parts, String> {
        let sources = [Part::Cuda, Part::Nvtx];
        if self.only.contains(&Part::NvtxGpu) {
            let missing: Vec<&str> = sources
                .into_iter()
                .filter(|p| !self.only.contains(p) || self.exclude.contains(p))
                .map(Part::name)
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "--only nvtx_gpu needs {}: the NVTX projection is made of the cuda and \
                     nvtx parts (--only cuda,nvtx,nvtx_gpu)",
                    missing.join(" and ")
                ));
            }
        }
        let chosen = self.chosen();
        if !Part::ALL.into_iter().any(|p| chosen.has(p)) {
            let names: Vec<&str> = Part::ALL.into_iter().map(Part::name).collect();
            let flags = |list: &[Part]| list.iter().map(|p| p.name()).collect::<Vec<_>>().join(",");
            let asked: Vec<String> = [("--only", &self.only), ("--exclude", &self.exclude)]
                .into_iter()
                .filter(|(_, list)| !list.is_empty())
                .map(|(flag, list)| format!("{flag} {}", flags(list)))
                .collect();
            return Err(format!(
                "{} leaves no part to convert (the parts are {})",
                asked.join(" "),
                names.join(", ")
            ));
        }
        Ok(chosen)
    }

    fn chosen(&self) -> Parts {
        let chosen = match self.only.is_empty() {
            true => Parts::all(),
            false => Part::ALL
                .into_iter()
                .filter(|p| !self.only.contains(p))
                .fold(Parts::all(), |parts, p| parts.without(p)),
        };
        self.exclude
            .iter()
            .fold(chosen, |parts, p| parts.without(*p))
    }
}

/// Which events stay: each filter is applied while the report is read.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Filters")]
pub struct Filters {
    /// Keep only events that overlap this span of session time, START:END,
    /// either side optional, each with its unit, ns, us, ms or s:
    /// `1.5s:2s`, `500ms:`, `:100us`. Slices reaching beyond it are cut at
    /// its edges, their recorded times in the args clipped_start/clipped_end.
    #[arg(long, value_name = "START:END", allow_hyphen_values = true)]
    time: Option<TimeWindow>,

    /// Keep only the events of these processes (GPU metrics, which belong
    /// to no process, stay).
    #[arg(long, value_name = "PID,...", value_delimiter = ',', value_parser = pid,
          allow_negative_numbers = true)]
    pid: Vec<u32>,

    /// Keep only the GPU work, GPU metrics, CUDA memory and page faults of
    /// these GPUs (deviceId, 0 or more).
    #[arg(long, value_name = "ID,...", value_delimiter = ',', value_parser = gpu_id,
          allow_negative_numbers = true)]
    gpu: Vec<i64>,

    /// Keep only the kernels whose short or demangled name matches this
    /// regular expression (other GPU work stays).
    #[arg(long, value_name = "REGEX")]
    kernels: Option<String>,

    /// Keep only the NVTX ranges and marks whose name matches this regular
    /// expression.
    #[arg(long, value_name = "REGEX")]
    nvtx: Option<String>,

    /// Keep only the NVTX events of this domain (`default` for NVTX's
    /// default domain); repeat it for several.
    #[arg(long, value_name = "NAME")]
    nvtx_domain: Vec<String>,

    /// Keep only the CUDA API calls made inside the NVTX ranges kept (by
    /// --nvtx, --nvtx-domain; any range without them) and the GPU work they
    /// launched; synchronizations are left out. With --time, each event is
    /// kept by its own time (GPU work in the window launched before it
    /// stays, without its launch).
    #[arg(long)]
    gpu_in_nvtx: bool,
}

/// A process id, as `--pid` takes it.
fn pid(text: &str) -> Result<u32, String> {
    text.trim()
        .parse()
        .map_err(|_| "not a process id (a number, 0 or more)".into())
}

/// A GPU's deviceId, as `--gpu` takes it: -1 would keep no GPU work at all.
fn gpu_id(text: &str) -> Result<i64, String> {
    match text.trim().parse::<i64>() {
        Ok(id) if id >= 0 => Ok(id),
        Ok(_) => Err("a GPU id is 0 or more (nsys's deviceId)".into()),
        Err(_) => Err("not a GPU id (nsys's deviceId: 0, 1, ...)".into()),
    }
}

impl Conversion {
    /// The options these flags ask for, or why they cannot be had (a bad
    /// regular expression). The format and gzip level are the default's:
    /// [`Encoding::apply`] sets them for the output.
    pub fn options(self) -> nsys2perfetto::Result<Options> {
        let Conversion {
            encoding: _,
            selection,
            findings,
            filters,
        } = self;
        let mut options = Options::default();
        options.parts = selection
            .parts()
            .map_err(nsys2perfetto::Error::InvalidOption)?;
        options.findings = findings.then(Thresholds::default);
        options.filter = filters.filter()?;
        Ok(options)
    }
}

impl Filters {
    fn filter(self) -> nsys2perfetto::Result<Filter> {
        let Filters {
            time,
            pid,
            gpu,
            kernels,
            nvtx,
            nvtx_domain,
            gpu_in_nvtx,
        } = self;
        let mut f = Filter::default()
            .time(time.unwrap_or_default())
            .pids(pid)
            .gpus(gpu);
        if let Some(pattern) = &kernels {
            f = f.kernels(pattern)?;
        }
        if let Some(pattern) = &nvtx {
            f = f.nvtx(pattern)?;
        }
        for domain in &nvtx_domain {
            f = f.nvtx_domain(domain);
        }
        if gpu_in_nvtx {
            f = f.gpu_in_nvtx();
        }
        Ok(f)
    }
}
