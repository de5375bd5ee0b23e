//! Calls into CUDA libraries and runtimes that nsys traces in tables of their
//! own: cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX, NVIDIA video codecs. Each row
//! is a call on a thread (start, end, globalTid, a name), with a few details.

use rusqlite::Row;

use super::ids::{pid_of, tid_of};
use super::scan::{order_key, NoPrescan, Streamed, TableScan};
use super::strings::StringTable;
use super::Report;

/// A library and the tables its calls are in.
pub struct Library {
    /// Shown as the thread's track name ("cuDNN").
    pub name: &'static str,
    /// The slices' category ("cudnn").
    pub category: &'static str,
    tables: &'static [&'static str],
    /// Tables whose name starts with this, too (OpenMP has one per event kind).
    table_prefix: Option<&'static str>,
}

pub const LIBRARIES: &[Library] = &[
    Library {
        name: "cuDNN",
        category: "cudnn",
        tables: &["CUDNN_EVENTS"],
        table_prefix: None,
    },
    Library {
        name: "cuBLAS",
        category: "cublas",
        tables: &["CUBLAS_EVENTS"],
        table_prefix: None,
    },
    Library {
        name: "OpenACC",
        category: "openacc",
        tables: &[
            "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
            "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
            "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
        ],
        table_prefix: None,
    },
    Library {
        name: "OpenMP",
        category: "openmp",
        tables: &[],
        table_prefix: Some("OPENMP_EVENT_KIND_"),
    },
    Library {
        name: "MPI",
        category: "mpi",
        tables: &[
            "MPI_P2P_EVENTS",
            "MPI_COLLECTIVES_EVENTS",
            "MPI_START_WAIT_EVENTS",
            "MPI_OTHER_EVENTS",
        ],
        table_prefix: None,
    },
    // `--trace=ucx`: UCX's UCP layer, as NVIDIA's SQLite schema reference
    // documents it (sends and receives, their progress, other calls).
    Library {
        name: "UCX",
        category: "ucx",
        tables: &["UCP_SUBMIT_EVENTS", "UCP_PROGRESS_EVENTS", "UCP_EVENTS"],
        table_prefix: None,
    },
    Library {
        name: "NVIDIA Video Codec",
        category: "nvvideo",
        tables: &["NVVIDEO_ENCODER_API", "NVVIDEO_DECODER_API"],
        table_prefix: None,
    },
];

/// Integer details, each from the first of its columns a table has.
pub const INT_ARGS: [(&str, &[&str]); 10] = [
    ("bytes", &["bytes", "size", "packedSize"]),
    ("tag", &["tag"]),
    ("remote_rank", &["remoteRank"]),
    // The UCP worker at the other end (UCP_WORKERS maps workers to threads).
    ("peer_worker", &["peerWorkerUid"]),
    ("root_rank", &["rootRank"]),
    ("send_bytes", &["collSendSize"]),
    ("recv_bytes", &["collRecvSize"]),
    ("line", &["lineNo"]),
    ("gangs", &["numGangs"]),
    ("vector_length", &["vectorLength"]),
];

/// String details (StringIds ids).
pub const STR_ARGS: [(&str, &[&str]); 4] = [
    ("file", &["srcFile"]),
    ("function", &["funcName"]),
    ("variable", &["varName"]),
    ("kernel", &["kernelName"]),
];

pub struct LibraryCall<'r> {
    /// Index into [`LIBRARIES`].
    pub library: usize,
    pub start: i64,
    pub end: i64,
    pub pid: u32,
    pub tid: u32,
    pub name: &'r str,
    /// By [`INT_ARGS`] position.
    pub ints: [Option<i64>; INT_ARGS.len()],
    /// By [`STR_ARGS`] position.
    pub strs: [Option<&'r str>; STR_ARGS.len()],
}

impl Report {
    /// The library tables of this export, with their library's index.
    pub fn library_tables(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (i, lib) in LIBRARIES.iter().enumerate() {
            for table in lib.tables {
                if self.schema.has_table(table) {
                    out.push((i, (*table).to_owned()));
                }
            }
            if let Some(prefix) = lib.table_prefix {
                let mut tables: Vec<String> = self
                    .schema
                    .tables()
                    .filter(|t| t.starts_with(prefix))
                    .map(str::to_owned)
                    .collect();
                tables.sort();
                out.extend(tables.into_iter().map(|t| (i, t)));
            }
        }
        out
    }

    /// Calls `f` with every library call, in time order.
    pub fn for_each_library_call<E: From<rusqlite::Error>>(
        &self,
        mut f: impl FnMut(LibraryCall<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let s = &self.schema;
        let mut scans = Vec::new();
        for (library, table) in self.library_tables() {
            let name = ["nameId", "textId"]
                .into_iter()
                .find(|c| s.has_column(&table, c));
            if !self.readable(&table, &["start", "end", "globalTid"]) {
                continue;
            }
            let Some(name) = name else {
                self.note_unreadable(&table, "nameId or textId".to_owned());
                continue;
            };
            let first_of = |names: &[&str]| {
                names
                    .iter()
                    .find(|c| s.has_column(&table, c))
                    .map_or("NULL".to_owned(), |c| format!("\"{c}\""))
            };
            let mut columns = vec![
                "start".to_owned(),
                "\"end\"".to_owned(),
                "globalTid".to_owned(),
                name.to_owned(),
                library.to_string(),
            ];
            columns.extend(INT_ARGS.iter().map(|(_, c)| first_of(c)));
            columns.extend(STR_ARGS.iter().map(|(_, c)| first_of(c)));
            scans.push(TableScan {
                table,
                time: "start",
                columns: columns.join(", "),
                filter: String::new(),
                decode,
                key: |c: &LibraryCall| order_key(c.start, c.end),
                prescan: String::new(),
            });
        }
        if scans.is_empty() {
            return Ok(());
        }
        self.stream(scans, NoPrescan, |item| match item {
            Streamed::Prescanned(()) => Ok(()),
            Streamed::Event(call) => f(call),
        })
    }
}

fn decode<'r>(strings: &'r StringTable, r: &Row<'_>) -> rusqlite::Result<LibraryCall<'r>> {
    let gtid = r.get::<_, Option<i64>>(2)?.unwrap_or(0);
    let string = |i: usize| -> rusqlite::Result<Option<&'r str>> {
        Ok(r.get::<_, Option<i64>>(i)?.and_then(|id| strings.get(id)))
    };
    let mut ints = [None; INT_ARGS.len()];
    for (k, slot) in ints.iter_mut().enumerate() {
        *slot = r.get(5 + k)?;
    }
    let mut strs = [None; STR_ARGS.len()];
    for (k, slot) in strs.iter_mut().enumerate() {
        *slot = string(5 + INT_ARGS.len() + k)?;
    }
    Ok(LibraryCall {
        library: r.get::<_, i64>(4)? as usize,
        start: r.get(0)?,
        end: r.get::<_, Option<i64>>(1)?.unwrap_or(r.get(0)?),
        pid: pid_of(gtid),
        tid: tid_of(gtid),
        name: string(3)?.unwrap_or(""),
        ints,
        strs,
    })
}
