//! The MCP server: its tools and resources over the library's answers
//! ([`super::answers`]). Each call runs on a thread of its own, its work
//! stopped by the call's cancellation (the library's cancel flag), its
//! progress sent as MCP progress notifications where the client asked.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{json, Map, Value};

use nsys2perfetto::hub::{scan, Cache};
use nsys2perfetto::report::{report_files, write_page, PageFormat, ReportOptions};
use nsys2perfetto::Options;

use super::answers::{self, capped, Answer, Context, DEFAULT_LIMIT};
use super::scope::Scope;

/// The server: its state, shared with the threads of its calls.
#[derive(Clone)]
pub struct Server(pub Arc<State>);

/// What the server reads from.
pub struct State {
    pub scope: Scope,
    pub cache: Cache,
    pub nsys: std::path::PathBuf,
    pub max_bytes: usize,
}

/// The URI of a run's report page.
const REPORT_URI: &str = "nsys2perfetto://report/";

fn schema(properties: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let schema = json!({"type": "object", "properties": properties, "required": required});
    Arc::new(schema.as_object().expect("an object").clone())
}

fn tools() -> Vec<Tool> {
    let run = json!({"type": "string", "description": "a report or export: absolute, or relative to a served directory"});
    let limit = json!({"type": "integer", "minimum": 0, "description": "at most this many rows (default 50); the answer says how many were left out"});
    vec![
        Tool::new(
            "list_reports",
            "The runs under the served directories, newest first, with their headlines (capture, GPUs, busy share, top kernel).",
            schema(json!({"limit": limit}), &[]),
        ),
        Tool::new(
            "report",
            "One run's answers, as `nsys2perfetto report RUN --format json`: busy/idle per GPU and why, top kernels, kinds of work, overlap, launch delay, findings counted.",
            schema(json!({"run": run}), &["run"]),
        ),
        Tool::new(
            "stats",
            "One summary table of `nsys2perfetto stats` (cuda_gpu_kern_sum, cuda_api_sum, nvtx_sum, ...), its largest rows first, optionally only the rows whose name holds `name`.",
            schema(
                json!({"run": run, "table": {"type": "string"}, "name": {"type": "string"}, "limit": limit}),
                &["run", "table"],
            ),
        ),
        Tool::new(
            "findings",
            "One run's findings, as `nsys2perfetto analyze RUN --rule RULE --rows LIMIT --format json` (an object per rule, in `rules`): one rule (gpu_gaps, gpu_time_util, cuda_memcpy_sync, ...; by nsys's names old or new) or every rule, the most important first.",
            schema(json!({"run": run, "rule": {"type": "string"}, "limit": limit}), &["run"]),
        ),
        Tool::new(
            "compare",
            "Two runs compared, as `nsys2perfetto compare A B --format json --top LIMIT`: per kernel, CUDA graph, API function and NVTX range the change of total time, count and share of GPU time, largest first.",
            schema(json!({"a": run, "b": run, "limit": limit}), &["a", "b"]),
        ),
        Tool::new(
            "steps",
            "The job the runs make, each a rank, and its steps (the NVTX ranges `pattern` matches, a glob as `ProfilerStep*`), as `nsys2perfetto report --step PATTERN RUN... --format json` writes them in `steps`: per step each rank's time and GPU busy time, the slowest rank and by how much, the skew over the job.",
            schema(
                json!({"runs": {"type": "array", "items": run, "minItems": 1}, "pattern": {"type": "string"}, "limit": limit}),
                &["runs", "pattern"],
            ),
        ),
        Tool::new(
            "query",
            "Read-only SQL over a run, as `nsys2perfetto query RUN SQL --format json`: trace_processor's tables over its Perfetto trace (or the SQLite export's where no trace_processor is at hand). Writing SQL is refused.",
            schema(json!({"run": run, "sql": {"type": "string"}, "limit": limit}), &["run", "sql"]),
        ),
        Tool::new(
            "convert",
            "Converts a run into a Perfetto trace in the folder `into` (under a served directory; never over an input) and says how to open it.",
            schema(json!({"run": run, "into": {"type": "string"}}), &["run", "into"]),
        ),
    ]
}

/// A tool's arguments, read.
struct Arguments(Map<String, Value>);

impl Arguments {
    fn text(&self, name: &str) -> Result<&str, String> {
        self.0
            .get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("missing argument {name:?} (text)"))
    }

    fn optional_text(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    fn texts(&self, name: &str) -> Result<Vec<&str>, String> {
        let missing = || format!("missing argument {name:?} (a list of text)");
        let list = self
            .0
            .get(name)
            .and_then(Value::as_array)
            .ok_or_else(missing)?;
        list.iter()
            .map(|v| v.as_str().ok_or_else(missing))
            .collect()
    }

    fn limit(&self) -> Result<usize, String> {
        match self.0.get("limit") {
            None | Some(Value::Null) => Ok(DEFAULT_LIMIT),
            Some(v) => v
                .as_u64()
                .map(|n| n as usize)
                .ok_or_else(|| format!("limit must be a whole number, not {v}")),
        }
    }
}

impl State {
    /// Runs tool `name` with `arguments`: its answer, or its error's line.
    fn answer(
        &self,
        name: &str,
        arguments: &Arguments,
        cx: &mut Context<'_>,
    ) -> Result<Answer, String> {
        let run = |key: &str| -> Result<std::path::PathBuf, String> {
            self.scope.inside(arguments.text(key)?)
        };
        match name {
            "list_reports" => answers::list_reports(cx, arguments.limit()?),
            "report" => answers::report(cx, &run("run")?),
            "stats" => answers::stats(
                cx,
                &run("run")?,
                arguments.text("table")?,
                arguments.optional_text("name"),
                arguments.limit()?,
            ),
            "findings" => answers::findings(
                cx,
                &run("run")?,
                arguments.optional_text("rule"),
                arguments.limit()?,
            ),
            "steps" => {
                let runs = (arguments.texts("runs")?.into_iter())
                    .map(|path| self.scope.inside(path))
                    .collect::<Result<Vec<_>, _>>()?;
                answers::steps(cx, &runs, arguments.text("pattern")?, arguments.limit()?)
            }
            "compare" => answers::compare_runs(cx, &run("a")?, &run("b")?, arguments.limit()?),
            "query" => answers::query(cx, &run("run")?, arguments.text("sql")?, arguments.limit()?),
            "convert" => {
                let into = self.scope.folder(arguments.text("into")?)?;
                answers::convert(cx, &run("run")?, &into)
            }
            other => Err(format!("no tool {other:?}")),
        }
    }

    fn options(&self, cancel: Arc<AtomicBool>) -> Options {
        let mut options = Options::default();
        options.read.nsys = self.nsys.clone();
        options.read.cancel = Some(cancel);
        options
    }
}

/// A tool's error: its one line, as the command line prints it.
fn tool_error(line: &str) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::error(vec![ContentBlock::text(
        line.to_owned(),
    )]))
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "nsys2perfetto",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Answers about NVIDIA Nsight Systems runs (reports and SQLite exports) under \
                 the served directories: list_reports first, then report, stats, findings, \
                 compare, steps (a job's steps across runs), query (read-only SQL) or convert \
                 a run, named by its path.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Arguments(request.arguments.clone().unwrap_or_default());
        let name = request.name.to_string();
        let cancel = Arc::new(AtomicBool::new(false));
        // The call's cancellation sets the library's flag: the work stops
        // and leaves nothing.
        let watch = {
            let (ct, cancel) = (context.ct.clone(), cancel.clone());
            tokio::spawn(async move {
                ct.cancelled().await;
                cancel.store(true, Ordering::Relaxed);
            })
        };
        let (said, mut heard) = tokio::sync::mpsc::unbounded_channel::<String>();
        let token = context.meta.get_progress_token();
        let peer = context.peer.clone();
        let notifier = tokio::spawn(async move {
            let mut step = 0.0;
            while let Some(message) = heard.recv().await {
                if let Some(token) = &token {
                    step += 1.0;
                    let mut note = ProgressNotificationParam::new(token.clone(), step);
                    note.message = Some(message);
                    let _ = peer.notify_progress(note).await;
                }
            }
        });
        let this = self.0.clone();
        let options = this.options(cancel.clone());
        let worked = tokio::task::spawn_blocking(move || {
            let mut tell = |message: String| {
                let _ = said.send(message);
            };
            let mut cx = Context {
                scope: &this.scope,
                cache: &this.cache,
                options,
                progress: &mut tell,
            };
            let answer = this.answer(&name, &arguments, &mut cx);
            answer.and_then(|a| Ok((capped(a.json, this.max_bytes)?, a.summary)))
        })
        .await;
        watch.abort();
        let _ = notifier.await;
        if cancel.load(Ordering::Relaxed) {
            return Ok(tool_error(
                "cancelled: the work was stopped and nothing was kept",
            ));
        }
        match worked {
            Ok(Ok((json, summary))) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(summary)]);
                result.structured_content = Some(json);
                Ok(CallToolResponse::Complete(result))
            }
            Ok(Err(line)) => Ok(tool_error(&line)),
            Err(e) => Err(ErrorData::internal_error(e.to_string(), None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (entries, _) = scan(self.0.scope.roots());
        let resources = entries
            .iter()
            .map(|entry| {
                let uri = format!("{REPORT_URI}{}", entry.path.display());
                Resource::new(uri, entry.relative().to_owned())
                    .with_description("the run's report page, Markdown")
                    .with_mime_type("text/markdown")
            })
            .collect();
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let refused = |why: String| ErrorData::resource_not_found(why, None);
        let path = request
            .uri
            .strip_prefix(REPORT_URI)
            .ok_or_else(|| refused(format!("no resource {}", request.uri)))?;
        let run = self.0.scope.inside(path).map_err(refused)?;
        let options = self.0.options(Arc::new(AtomicBool::new(false)));
        let page = tokio::task::spawn_blocking(move || {
            report_files(
                &[run],
                &ReportOptions::default(),
                &options.read,
                &mut |_| {},
            )
        })
        .await
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
        .map_err(|e| refused(e.to_string()))?;
        let mut text = Vec::new();
        write_page(&mut text, &page, PageFormat::Markdown).expect("writing to memory");
        let text = String::from_utf8_lossy(&text).into_owned();
        let contents =
            ResourceContents::text(text, request.uri.clone()).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
