//! Makes an NVTX-heavy Nsight Systems export for benchmarks: a PyTorch
//! training run recorded with `torch.autograd.profiler.emit_nvtx()`.
//!
//! ```sh
//! cargo run --release --example nvtx_heavy_report -- INPUT.sqlite OUTPUT.sqlite 1500000
//! ```
//!
//! INPUT is a real export (scripts/bench.sh uses `nsys-ai_h100_2gpu_1s`): its
//! schema, strings, processes, threads, devices, streams and the columns of
//! its rows are kept; its events are replaced. Each process of INPUT that ran
//! kernels trains a model of `LAYERS` layers for as many steps as make about
//! EVENTS events in all. A step, on the process's main thread, is a
//! `ProfilerStep#N` range around the data loader, the copy of the batch to the
//! GPU, the forward pass, the loss, the backward pass (on the autograd thread,
//! as PyTorch runs it), an NCCL all-reduce on a stream of its own, the
//! optimizer and `loss.item()` (a copy back and a stream synchronization).
//! Every operator is an NVTX push/pop range named as `emit_nvtx` names it
//! (`aten::mm, seq = 12, op_id = 3456`: nearly every name distinct), nested as
//! PyTorch nests them; operators that compute launch a kernel
//! (`cudaLaunchKernel` inside the range, the kernel queued on the stream,
//! linked by correlation id). About 58% of the events are NVTX ranges, as in
//! a real capture of this kind (1.47 M events, 858 k ranges).
//! The output is the same bytes for the same arguments.

#[path = "common/input_output_count.rs"]
mod input_output_count;

use std::collections::HashMap;
use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection};

/// Layers of the model: each adds 33 NVTX ranges and 12 kernels a step.
const LAYERS: usize = 24;

fn main() {
    let (input, output, events) = input_output_count::parse("nvtx_heavy_report", "EVENTS");
    input_output_count::finish("nvtx_heavy_report", make(&input, &output, events));
}

/// What a step's operator does besides calling its children.
#[derive(Clone, Copy)]
enum Work {
    None,
    /// Launches a kernel of this kind lasting about this many ns.
    Kernel(Kind, i64),
    /// `cudaMemcpyAsync` of this copy kind (1: to the device, 2: back).
    Memcpy(i64, i64),
    /// `cudaMemsetAsync` of this many bytes.
    Memset(i64),
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
enum Kind {
    Gemm,
    Elementwise,
    Reduce,
    Softmax,
    Nccl,
}

/// An operator: its name, whether `emit_nvtx` gives it a sequence number
/// (autograd records it) and an op id (every `aten::` operator), its work and
/// the operators it calls.
struct Op {
    name: &'static str,
    seq: bool,
    op_id: bool,
    work: Work,
    children: Vec<Op>,
}

fn op(name: &'static str, work: Work, children: Vec<Op>) -> Op {
    Op {
        name,
        seq: false,
        op_id: name.starts_with("aten::"),
        work,
        children,
    }
}

/// An operator autograd records: it has a sequence number.
fn seq_op(name: &'static str, work: Work, children: Vec<Op>) -> Op {
    Op {
        seq: true,
        ..op(name, work, children)
    }
}

/// A range PyTorch names plainly (`record_function`, the autograd engine).
fn plain(name: &'static str, children: Vec<Op>) -> Op {
    Op {
        name,
        seq: false,
        op_id: false,
        work: Work::None,
        children,
    }
}

fn transpose() -> Op {
    op(
        "aten::t",
        Work::None,
        vec![op(
            "aten::transpose",
            Work::None,
            vec![op("aten::as_strided", Work::None, vec![])],
        )],
    )
}

fn forward_layer() -> Vec<Op> {
    vec![
        seq_op(
            "aten::linear",
            Work::None,
            vec![
                transpose(),
                seq_op("aten::addmm", Work::Kernel(Kind::Gemm, 120_000), vec![]),
            ],
        ),
        seq_op("aten::relu", Work::Kernel(Kind::Elementwise, 8_000), vec![]),
        seq_op(
            "aten::layer_norm",
            Work::None,
            vec![op(
                "aten::native_layer_norm",
                Work::Kernel(Kind::Reduce, 9_000),
                vec![],
            )],
        ),
    ]
}

fn backward_layer() -> Vec<Op> {
    let accumulate = || {
        plain(
            "autograd::engine::evaluate_function: torch::autograd::AccumulateGrad",
            vec![plain(
                "torch::autograd::AccumulateGrad",
                vec![op(
                    "aten::add_",
                    Work::Kernel(Kind::Elementwise, 4_000),
                    vec![],
                )],
            )],
        )
    };
    vec![
        plain(
            "autograd::engine::evaluate_function: NativeLayerNormBackward0",
            vec![seq_op(
                "NativeLayerNormBackward0",
                Work::None,
                vec![op(
                    "aten::native_layer_norm_backward",
                    Work::Kernel(Kind::Reduce, 12_000),
                    vec![],
                )],
            )],
        ),
        plain(
            "autograd::engine::evaluate_function: ReluBackward0",
            vec![seq_op(
                "ReluBackward0",
                Work::None,
                vec![op(
                    "aten::threshold_backward",
                    Work::Kernel(Kind::Elementwise, 8_000),
                    vec![],
                )],
            )],
        ),
        plain(
            "autograd::engine::evaluate_function: AddmmBackward0",
            vec![seq_op(
                "AddmmBackward0",
                Work::None,
                vec![
                    transpose(),
                    op("aten::mm", Work::Kernel(Kind::Gemm, 110_000), vec![]),
                    transpose(),
                    op("aten::mm", Work::Kernel(Kind::Gemm, 115_000), vec![]),
                    op("aten::sum", Work::Kernel(Kind::Reduce, 9_000), vec![]),
                ],
            )],
        ),
        accumulate(),
        accumulate(),
    ]
}

fn optimizer_layer() -> Vec<Op> {
    let update = || op("aten::add_", Work::Kernel(Kind::Elementwise, 5_000), vec![]);
    vec![update(), update()]
}

fn data_loader() -> Op {
    let collate: Vec<Op> = (0..4)
        .map(|_| {
            op(
                "aten::stack",
                Work::None,
                vec![op("aten::cat", Work::None, vec![])],
            )
        })
        .collect();
    plain(
        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
        collate,
    )
}

fn to_device() -> Op {
    op(
        "aten::to",
        Work::None,
        vec![op(
            "aten::_to_copy",
            Work::None,
            vec![
                op("aten::empty_strided", Work::None, vec![]),
                op("aten::copy_", Work::Memcpy(1, 4 << 20), vec![]),
            ],
        )],
    )
}

fn loss() -> Op {
    seq_op(
        "aten::cross_entropy_loss",
        Work::None,
        vec![
            seq_op(
                "aten::log_softmax",
                Work::None,
                vec![op(
                    "aten::_log_softmax",
                    Work::Kernel(Kind::Softmax, 6_000),
                    vec![],
                )],
            ),
            seq_op(
                "aten::nll_loss_nd",
                Work::None,
                vec![op(
                    "aten::nll_loss",
                    Work::None,
                    vec![op(
                        "aten::nll_loss_forward",
                        Work::Memset(4),
                        vec![op("aten::zero_", Work::Kernel(Kind::Reduce, 5_000), vec![])],
                    )],
                )],
            ),
        ],
    )
}

fn all_reduce() -> Op {
    plain(
        "c10d::allreduce_",
        vec![plain(
            "record_param_comms",
            vec![op(
                "nccl:all_reduce",
                Work::Kernel(Kind::Nccl, 400_000),
                vec![],
            )],
        )],
    )
}

fn item() -> Op {
    op(
        "aten::item",
        Work::None,
        vec![op(
            "aten::_local_scalar_dense",
            Work::Memcpy(2, 4),
            vec![plain("cudaStreamSynchronize", vec![])],
        )],
    )
}

/// One row to insert: its table's template row with columns replaced.
struct Row {
    table: usize,
    start: i64,
    values: Vec<(usize, Value)>,
}

/// A table of the output: its template rows (by kind of row) and the
/// positions of the columns set.
struct Table {
    name: &'static str,
    columns: Vec<String>,
}

impl Table {
    fn col(&self, name: &str) -> usize {
        self.columns
            .iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("{} has no column {name}", self.name))
    }
}

const NVTX: usize = 0;
const RUNTIME: usize = 1;
const KERNEL: usize = 2;
const MEMCPY: usize = 3;
const MEMSET: usize = 4;
const SYNC: usize = 5;
const TABLES: [&str; 6] = [
    "NVTX_EVENTS",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
];

/// A process of the input that ran kernels, and what its events reuse.
struct Process {
    global_pid: i64,
    main_tid: i64,
    autograd_tid: i64,
    device: Value,
    context: Value,
    stream: i64,
    /// Template rows: a kernel row per kind, and one row of each other table.
    kernels: HashMap<Kind, Vec<Value>>,
    templates: [Vec<Value>; 6],
}

/// The generator's state: clocks, ids and the rows made so far.
struct Gen {
    tables: Vec<Table>,
    rows: Vec<Row>,
    correlation: i64,
    op_id: i64,
    seq: i64,
    /// A small deterministic jitter (xorshift).
    state: u64,
    api: HashMap<&'static str, i64>,
}

impl Gen {
    fn jitter(&mut self, base: i64) -> i64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        base + (self.state % (base as u64 / 2 + 1)) as i64
    }

    fn push(&mut self, table: usize, start: i64, values: Vec<(&str, Value)>) {
        let t = &self.tables[table];
        let values = values.into_iter().map(|(c, v)| (t.col(c), v)).collect();
        self.rows.push(Row {
            table,
            start,
            values,
        });
    }

    /// A CUDA API call of `tid` from `start` lasting about `dur`; its end.
    fn api_call(&mut self, tid: i64, name: &'static str, start: i64, dur: i64) -> (i64, i64) {
        let end = start + self.jitter(dur);
        self.correlation += 1;
        let id = self.api[name];
        let corr = self.correlation;
        self.push(
            RUNTIME,
            start,
            vec![
                ("start", Value::Integer(start)),
                ("end", Value::Integer(end)),
                ("globalTid", Value::Integer(tid)),
                ("correlationId", Value::Integer(corr)),
                ("nameId", Value::Integer(id)),
            ],
        );
        (end, corr)
    }

    /// GPU work on `stream` of `p`, queued after `after`; its end.
    #[allow(clippy::too_many_arguments)]
    fn gpu(
        &mut self,
        p: &Process,
        table: usize,
        template: Vec<Value>,
        stream: i64,
        clocks: &mut HashMap<i64, i64>,
        after: i64,
        dur: i64,
        corr: i64,
        extra: Vec<(&str, Value)>,
    ) -> i64 {
        let clock = clocks.entry(stream).or_insert(0);
        let start = (*clock).max(after) + self.jitter(1_500);
        let end = start + self.jitter(dur);
        *clock = end;
        let mut values = vec![
            ("start", Value::Integer(start)),
            ("end", Value::Integer(end)),
            ("streamId", Value::Integer(stream)),
            ("correlationId", Value::Integer(corr)),
            ("deviceId", p.device.clone()),
            ("contextId", p.context.clone()),
            ("globalPid", Value::Integer(p.global_pid)),
        ];
        values.extend(extra);
        let t = &self.tables[table];
        let mut row: Vec<(usize, Value)> = template.into_iter().enumerate().collect();
        for (c, v) in values {
            row[t.col(c)].1 = v;
        }
        self.rows.push(Row {
            table,
            start,
            values: row,
        });
        end
    }

    /// Runs `op` on thread `tid` from `now`: its range, its children's and
    /// its work. Returns the time it returns.
    fn run(
        &mut self,
        p: &Process,
        tid: i64,
        o: &Op,
        now: i64,
        clocks: &mut HashMap<i64, i64>,
    ) -> i64 {
        let start = now;
        let mut now = now + self.jitter(1_200);
        let mut name = o.name.to_owned();
        if o.seq {
            self.seq += 1;
            name.push_str(&format!(", seq = {}", self.seq));
        }
        if o.op_id {
            self.op_id += 1;
            name.push_str(&format!(", op_id = {}", self.op_id));
        }
        for child in &o.children {
            now = self.run(p, tid, child, now, clocks) + self.jitter(400);
        }
        match o.work {
            Work::None => now += self.jitter(1_500),
            Work::Kernel(kind, dur) => {
                let (end, corr) = self.api_call(tid, "cudaLaunchKernel_v7000", now, 4_000);
                let template = p.kernels[&kind].clone();
                let stream = match kind {
                    Kind::Nccl => p.stream + 1,
                    _ => p.stream,
                };
                self.gpu(
                    p,
                    KERNEL,
                    template,
                    stream,
                    clocks,
                    now + 2_000,
                    dur,
                    corr,
                    vec![],
                );
                now = end;
            }
            Work::Memcpy(kind, bytes) => {
                let (end, corr) = self.api_call(tid, "cudaMemcpyAsync_v3020", now, 6_000);
                self.gpu(
                    p,
                    MEMCPY,
                    p.templates[MEMCPY].clone(),
                    p.stream,
                    clocks,
                    now + 2_000,
                    2_000 + bytes / 20,
                    corr,
                    vec![
                        ("copyKind", Value::Integer(kind)),
                        ("bytes", Value::Integer(bytes)),
                        ("srcKind", Value::Integer(if kind == 1 { 1 } else { 2 })),
                        ("dstKind", Value::Integer(if kind == 1 { 2 } else { 1 })),
                    ],
                );
                now = end;
            }
            Work::Memset(bytes) => {
                let (end, corr) = self.api_call(tid, "cudaMemsetAsync_v3020", now, 3_000);
                self.gpu(
                    p,
                    MEMSET,
                    p.templates[MEMSET].clone(),
                    p.stream,
                    clocks,
                    now + 2_000,
                    1_000,
                    corr,
                    vec![("bytes", Value::Integer(bytes))],
                );
                now = end;
            }
        }
        if o.name == "cudaStreamSynchronize" {
            // Not a range PyTorch writes: the call `aten::_local_scalar_dense`
            // makes once its copy is queued, waiting for the stream.
            let gpu_done = clocks.get(&p.stream).copied().unwrap_or(0);
            let dur = (gpu_done - start).max(0) + 2_000;
            let (end, corr) = self.api_call(tid, "cudaStreamSynchronize_v3020", start, dur);
            let mut row: Vec<(usize, Value)> =
                p.templates[SYNC].clone().into_iter().enumerate().collect();
            let t = &self.tables[SYNC];
            for (c, v) in [
                ("start", Value::Integer(start + 500)),
                ("end", Value::Integer(end - 500)),
                ("streamId", Value::Integer(p.stream)),
                ("correlationId", Value::Integer(corr)),
                ("deviceId", p.device.clone()),
                ("contextId", p.context.clone()),
                ("globalPid", Value::Integer(p.global_pid)),
                ("syncType", Value::Integer(3)),
                // What nsys writes for a stream synchronization: no event.
                ("eventId", Value::Integer(4_294_967_295)),
                ("eventSyncId", Value::Integer(0)),
            ] {
                // (Columns an older schema lacks are left out.)
                if let Some(i) = t.columns.iter().position(|name| name == c) {
                    row[i].1 = v;
                }
            }
            self.rows.push(Row {
                table: SYNC,
                start: start + 500,
                values: row,
            });
            return end;
        }
        let end = now;
        let range = vec![
            ("start", Value::Integer(start)),
            ("end", Value::Integer(end)),
            ("text", Value::Text(name)),
            ("globalTid", Value::Integer(tid)),
        ];
        self.push(NVTX, start, range);
        end
    }

    /// One training step of `p` from `now`: returns its end.
    fn step(&mut self, p: &Process, step: usize, now: i64, clocks: &mut HashMap<i64, i64>) -> i64 {
        let start = now;
        let mut now = now + self.jitter(2_000);
        let main = p.main_tid;
        for o in [data_loader(), to_device(), to_device()] {
            now = self.run(p, main, &o, now, clocks) + self.jitter(3_000);
        }
        for _ in 0..LAYERS {
            for o in forward_layer() {
                now = self.run(p, main, &o, now, clocks) + self.jitter(800);
            }
        }
        now = self.run(p, main, &loss(), now, clocks) + self.jitter(5_000);
        // loss.backward(): the autograd thread runs the backward pass while
        // the main thread waits.
        let mut back = now + self.jitter(10_000);
        for layer in 0..LAYERS {
            for o in backward_layer() {
                back = self.run(p, p.autograd_tid, &o, back, clocks) + self.jitter(700);
            }
            if layer == LAYERS / 2 || layer == LAYERS - 1 {
                back = self.run(p, p.autograd_tid, &all_reduce(), back, clocks);
            }
        }
        now = back + self.jitter(10_000);
        let mut optimizer = Vec::new();
        for _ in 0..LAYERS {
            optimizer.extend(optimizer_layer());
        }
        now = self.run(
            p,
            main,
            &plain("Optimizer.step#SGD.step", optimizer),
            now,
            clocks,
        );
        now += self.jitter(2_000);
        now = self.run(p, main, &item(), now, clocks);
        let end = now + self.jitter(3_000);
        let name = format!("ProfilerStep#{step}");
        self.push(
            NVTX,
            start,
            vec![
                ("start", Value::Integer(start)),
                ("end", Value::Integer(end)),
                ("text", Value::Text(name)),
                ("globalTid", Value::Integer(main)),
            ],
        );
        end + self.jitter(20_000)
    }
}

fn make(input: &Path, output: &Path, events: usize) -> rusqlite::Result<()> {
    if output.exists() {
        std::fs::remove_file(output).expect("remove the old output");
    }
    let source = Connection::open_with_flags(
        format!("file:{}?mode=ro&immutable=1", input.display()),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )?;
    source.execute("VACUUM INTO ?1", [output.to_string_lossy()])?;
    drop(source);
    let db = Connection::open(output)?;
    db.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;

    let mut tables = Vec::new();
    for name in TABLES {
        let columns: Vec<String> = db
            .prepare("SELECT name FROM pragma_table_info(?1)")?
            .query_map([name], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        assert!(
            !columns.is_empty(),
            "{} has no table {name}",
            input.display()
        );
        tables.push(Table { name, columns });
    }
    let mut api = HashMap::new();
    for name in [
        "cudaLaunchKernel_v7000",
        "cudaMemcpyAsync_v3020",
        "cudaMemsetAsync_v3020",
        "cudaStreamSynchronize_v3020",
    ] {
        api.insert(name, string_id(&db, name)?);
    }
    let processes = processes(&db, &tables)?;
    assert!(!processes.is_empty(), "{} has no kernels", input.display());
    let origin: i64 = db.query_row("SELECT MIN(start) FROM NVTX_EVENTS", [], |r| r.get(0))?;

    // Clear the events: every row of a table with a `start` column but the
    // NVTX rows that name things (domains, categories, threads).
    let event_tables: Vec<String> = db
        .prepare(
            "SELECT m.name FROM sqlite_master m WHERE m.type = 'table' AND EXISTS \
             (SELECT 1 FROM pragma_table_info(m.name) WHERE name = 'start')",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    for table in &event_tables {
        let keep = match table.as_str() {
            "NVTX_EVENTS" => " WHERE eventType IN (33, 34, 39, 59, 60, 65, 70, 71)",
            _ => "",
        };
        db.execute(&format!("DELETE FROM \"{table}\"{keep}"), [])?;
    }

    let mut gen = Gen {
        tables,
        rows: Vec::new(),
        correlation: 1,
        op_id: 0,
        seq: 0,
        state: 0x9E37_79B9_7F4A_7C15,
        api,
    };
    // Each process takes its share of steps, all starting together.
    let per_step = 1 + 16 + 2 * 12 + 2 + LAYERS * 57 + 12 + 2 * 6 + 8;
    let steps = events.div_ceil(per_step * processes.len()).max(1);
    let mut last = origin;
    for p in &processes {
        let mut clocks = HashMap::new();
        let mut now = origin + 1_000_000;
        for step in 0..steps {
            now = gen.step(p, step, now, &mut clocks);
        }
        last = last
            .max(now)
            .max(clocks.values().copied().max().unwrap_or(0));
    }

    // Rows in time order, as nsys writes them.
    gen.rows.sort_by_key(|r| (r.table, r.start));
    let mut counts = [0usize; 6];
    db.execute_batch("BEGIN")?;
    for (table, t) in gen.tables.iter().enumerate() {
        let templates: Vec<Value> = match table {
            NVTX => processes[0].templates[NVTX].clone(),
            RUNTIME => processes[0].templates[RUNTIME].clone(),
            _ => vec![],
        };
        let marks = vec!["?"; t.columns.len()].join(", ");
        let mut insert = db.prepare(&format!("INSERT INTO \"{}\" VALUES ({marks})", t.name))?;
        for row in gen.rows.iter().filter(|r| r.table == table) {
            counts[table] += 1;
            let values: Vec<Value> = if templates.is_empty() {
                row.values.iter().map(|(_, v)| v.clone()).collect()
            } else {
                let mut values = templates.clone();
                for (c, v) in &row.values {
                    values[*c] = v.clone();
                }
                values
            };
            insert.execute(params_from_iter(values))?;
        }
    }
    // The capture's length covers the new events.
    db.execute(
        "UPDATE ANALYSIS_DETAILS SET duration = ?1 - startTime, stopTime = ?1",
        [last + 1_000_000],
    )?;
    db.execute_batch("COMMIT; VACUUM")?;
    for (name, n) in TABLES.iter().zip(counts) {
        eprintln!("{name}: {n} rows");
    }
    eprintln!(
        "{} events, {} steps on each of {} processes",
        counts.iter().sum::<usize>(),
        steps,
        processes.len()
    );
    Ok(())
}

/// The id of `value` in StringIds, added if absent.
fn string_id(db: &Connection, value: &str) -> rusqlite::Result<i64> {
    let found: Option<i64> = db
        .query_row("SELECT id FROM StringIds WHERE value = ?1", [value], |r| {
            r.get(0)
        })
        .ok();
    match found {
        Some(id) => Ok(id),
        None => {
            db.execute(
                "INSERT INTO StringIds (id, value) SELECT MAX(id) + 1, ?1 FROM StringIds",
                [value],
            )?;
            Ok(db.last_insert_rowid())
        }
    }
}

/// The processes of the input that ran kernels, with their main thread (the
/// one that launched most) and the templates of their rows.
fn processes(db: &Connection, tables: &[Table]) -> rusqlite::Result<Vec<Process>> {
    let row = |sql: &str, arg: i64| -> rusqlite::Result<Vec<Value>> {
        db.query_row(sql, [arg], |r| {
            (0..r.as_ref().column_count())
                .map(|i| r.get::<_, Value>(i))
                .collect()
        })
    };
    let pids: Vec<(i64, i64)> = db
        .prepare(
            "SELECT globalPid, MIN(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL \
             GROUP BY globalPid ORDER BY globalPid",
        )?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let nccl_short = string_id(db, "ncclDevKernel_AllReduce_Sum_f32_RING_LL")?;
    let nccl_long = string_id(
        db,
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    )?;
    let mut out = Vec::new();
    for (global_pid, first_kernel) in pids {
        let pid_bits = global_pid & !0xFF_FFFF;
        let main_tid: i64 = db.query_row(
            "SELECT globalTid FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE globalTid & ~16777215 = ?1 \
             GROUP BY globalTid ORDER BY COUNT(*) DESC, globalTid LIMIT 1",
            [pid_bits],
            |r| r.get(0),
        )?;
        // The autograd engine's thread: another thread of the process.
        let autograd_tid: i64 = db
            .query_row(
                "SELECT MIN(globalTid) FROM ThreadNames WHERE globalTid & ~16777215 = ?1 \
                 AND globalTid <> ?2",
                [pid_bits, main_tid],
                |r| r.get::<_, Option<i64>>(0),
            )?
            .unwrap_or(main_tid);
        let kernel_row = row(
            "SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?1",
            first_kernel,
        )?;
        let k = &tables[KERNEL];
        let device = kernel_row[k.col("deviceId")].clone();
        let context = kernel_row[k.col("contextId")].clone();
        let stream = match kernel_row[k.col("streamId")] {
            Value::Integer(s) => s,
            _ => 7,
        };
        let mut kernels = HashMap::new();
        for (kind, pattern) in [
            (Kind::Gemm, "%gemm%"),
            (Kind::Elementwise, "vectorized_elementwise_kernel"),
            (Kind::Reduce, "reduce_kernel"),
            (Kind::Softmax, "softmax%"),
        ] {
            // The process's first kernel of this kind, or its first kernel.
            let rowid: Option<i64> = db.query_row(
                "SELECT MIN(k.rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s \
                 ON s.id = k.shortName WHERE k.globalPid = ?1 AND s.value LIKE ?2",
                rusqlite::params![global_pid, pattern],
                |r| r.get(0),
            )?;
            let found = row(
                "SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?1",
                rowid.unwrap_or(first_kernel),
            )?;
            kernels.insert(kind, found);
        }
        let mut nccl = kernel_row.clone();
        nccl[k.col("shortName")] = Value::Integer(nccl_short);
        nccl[k.col("demangledName")] = Value::Integer(nccl_long);
        if let Some(c) = k.columns.iter().position(|c| c == "mangledName") {
            nccl[c] = Value::Integer(nccl_long);
        }
        kernels.insert(Kind::Nccl, nccl);
        let template = |table: usize| -> rusqlite::Result<Vec<Value>> {
            let t = &tables[table];
            let filter = match table {
                NVTX | RUNTIME => "globalTid",
                _ => "globalPid",
            };
            let arg = match table {
                NVTX | RUNTIME => main_tid,
                _ => global_pid,
            };
            let sql = format!(
                "SELECT * FROM \"{}\" WHERE {filter} = ?1 ORDER BY rowid LIMIT 1",
                t.name
            );
            match row(&sql, arg) {
                Ok(r) => Ok(r),
                // None of this process: any row, or one of NULLs.
                Err(rusqlite::Error::QueryReturnedNoRows) => {
                    match db.query_row(&format!("SELECT * FROM \"{}\" LIMIT 1", t.name), [], |r| {
                        (0..r.as_ref().column_count())
                            .map(|i| r.get::<_, Value>(i))
                            .collect()
                    }) {
                        Ok(r) => Ok(r),
                        Err(rusqlite::Error::QueryReturnedNoRows) => {
                            Ok(vec![Value::Null; t.columns.len()])
                        }
                        Err(e) => Err(e),
                    }
                }
                Err(e) => Err(e),
            }
        };
        let templates = [
            template(NVTX)?,
            template(RUNTIME)?,
            template(KERNEL)?,
            template(MEMCPY)?,
            template(MEMSET)?,
            template(SYNC)?,
        ];
        out.push(Process {
            global_pid,
            main_tid,
            autograd_tid,
            device,
            context,
            stream,
            kernels,
            templates,
        });
    }
    Ok(out)
}
