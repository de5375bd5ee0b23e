//! Calls into CUDA libraries and runtimes that nsys traces in tables of their
//! own: cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX, NVIDIA video codecs. Each row
//! is a call on a thread (start, end, globalTid, a name), with a few details.
//! How each library is shown is the mapping's business.

use super::ids::{pid_of, tid_of};
use super::scan::{order_key, TableScan};
use super::select::{Row, Select};
use super::Report;

/// The libraries and runtimes nsys traces in tables of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Library {
    Cudnn,
    Cublas,
    OpenAcc,
    OpenMp,
    Mpi,
    /// UCX's UCP layer (`--trace=ucx`).
    Ucx,
    /// NVIDIA Video Codec SDK: encoder and decoder.
    VideoCodec,
}

impl Library {
    pub const ALL: [Library; 7] = [
        Library::Cudnn,
        Library::Cublas,
        Library::OpenAcc,
        Library::OpenMp,
        Library::Mpi,
        Library::Ucx,
        Library::VideoCodec,
    ];

    /// The tables its calls are in, by name.
    fn tables(self) -> &'static [&'static str] {
        match self {
            Library::Cudnn => &["CUDNN_EVENTS"],
            Library::Cublas => &["CUBLAS_EVENTS"],
            Library::OpenAcc => &[
                "CUPTI_ACTIVITY_KIND_OPENACC_DATA",
                "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
                "CUPTI_ACTIVITY_KIND_OPENACC_OTHER",
            ],
            Library::OpenMp => &[],
            Library::Mpi => &[
                "MPI_P2P_EVENTS",
                "MPI_COLLECTIVES_EVENTS",
                "MPI_START_WAIT_EVENTS",
                "MPI_OTHER_EVENTS",
            ],
            // As NVIDIA's SQLite schema reference documents them: sends and
            // receives, their progress, other calls.
            Library::Ucx => &["UCP_SUBMIT_EVENTS", "UCP_PROGRESS_EVENTS", "UCP_EVENTS"],
            Library::VideoCodec => &["NVVIDEO_ENCODER_API", "NVVIDEO_DECODER_API"],
        }
    }

    /// Tables whose name starts with this are its tables too (OpenMP has one
    /// per event kind).
    fn table_prefix(self) -> Option<&'static str> {
        match self {
            Library::OpenMp => Some("OPENMP_EVENT_KIND_"),
            _ => None,
        }
    }
}

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
    pub library: Library,
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
    /// The library tables of this export, with their library.
    pub(crate) fn library_tables(&self) -> Vec<(Library, String)> {
        let mut out = Vec::new();
        for library in Library::ALL {
            for table in library.tables() {
                if self.schema.has_table(table) {
                    out.push((library, (*table).to_owned()));
                }
            }
            if let Some(prefix) = library.table_prefix() {
                let mut tables: Vec<String> = self
                    .schema
                    .tables()
                    .filter(|t| t.starts_with(prefix))
                    .map(str::to_owned)
                    .collect();
                tables.sort();
                out.extend(tables.into_iter().map(|t| (library, t)));
            }
        }
        out
    }

    /// Calls `f` with every library call, in time order.
    pub(crate) fn for_each_library_call<E: From<rusqlite::Error>>(
        &self,
        f: impl FnMut(LibraryCall<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let strings = &self.strings;
        let mut scans = Vec::new();
        for (library, table) in self.library_tables() {
            let mut s = Select::new(&self.schema, &table);
            let start = s.required("start");
            let end = s.required::<Option<i64>>("end");
            let gtid = s.required::<Option<i64>>("globalTid");
            let name = s.first_of::<i64>(&["nameId", "textId"]);
            let ints = INT_ARGS.map(|(_, columns)| s.first_of::<i64>(columns));
            let strs = STR_ARGS.map(|(_, columns)| s.first_of::<i64>(columns));
            if !self.readable(&s) {
                continue;
            }
            if !(s.has("nameId") || s.has("textId")) {
                self.note_unreadable(&table, "nameId or textId".to_owned());
                continue;
            }
            let decode = move |r: &Row| {
                let gtid = gtid.get(r)?.unwrap_or(0);
                let start = start.get(r)?;
                let mut int_values = [None; INT_ARGS.len()];
                for (value, col) in int_values.iter_mut().zip(ints) {
                    *value = col.get(r)?;
                }
                let mut str_values = [None; STR_ARGS.len()];
                for (value, col) in str_values.iter_mut().zip(strs) {
                    *value = strings.lookup(col.get(r)?);
                }
                Ok(LibraryCall {
                    library,
                    start,
                    end: end.get(r)?.unwrap_or(start),
                    pid: pid_of(gtid),
                    tid: tid_of(gtid),
                    name: strings.name(name.get(r)?),
                    ints: int_values,
                    strs: str_values,
                })
            };
            let key = |c: &LibraryCall| order_key(c.start, c.end);
            scans.push(TableScan::new(&s, decode, key));
        }
        self.stream_events(scans, f)
    }
}
