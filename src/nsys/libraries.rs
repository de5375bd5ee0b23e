//! Calls into CUDA libraries and runtimes that nsys traces in tables of their
//! own: cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX, NVIDIA video codecs, OpenGL
//! (and the GPU work of OpenGL calls). Each row is a call on a thread (start,
//! end, globalTid, a name), with a few details.
//! How each library is shown is the mapping's business.

use super::columns::columns;
use super::ids::{pid_of, tid_of};
use super::row_filter::RowFilter;
use super::scan::{order_key, TableScan};
use super::select::{Col, Row, Select};
use super::Report;

columns! {
    /// The columns every library table has; its rows are named by
    /// [`NAME_COLUMNS`], their details by [`INT_ARGS`] and [`STR_ARGS`].
    pub(crate) struct LibraryColumns = LIBRARY {
        start: i64 = required("start"),
        end: Option<i64> = required("end"),
        global_tid: Option<i64> = required("globalTid"),
    }
}

/// What names a call (a StringIds id): the first of these a table has.
const NAME_COLUMNS: [&str; 2] = ["nameId", "textId"];

/// The libraries and runtimes nsys traces in tables of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Library {
    Cudnn,
    Cublas,
    OpenAcc,
    OpenMp,
    Mpi,
    /// UCX's UCP layer (`--trace=ucx`).
    Ucx,
    /// NVIDIA Video Codec SDK: encoder and decoder.
    VideoCodec,
    /// OpenGL calls (`--trace=opengl`).
    OpenGl,
    /// The GPU work of OpenGL calls: on the GPU, as nsys shows it, though
    /// its rows name the calling thread too.
    OpenGlWorkload,
}

impl Library {
    pub(crate) const ALL: [Library; 9] = [
        Library::Cudnn,
        Library::Cublas,
        Library::OpenAcc,
        Library::OpenMp,
        Library::Mpi,
        Library::Ucx,
        Library::VideoCodec,
        Library::OpenGl,
        Library::OpenGlWorkload,
    ];

    /// The tables its calls are in, by name.
    pub(crate) fn tables(self) -> &'static [&'static str] {
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
            Library::OpenGl => &[OPENGL_API],
            Library::OpenGlWorkload => &[OPENGL_WORKLOAD],
        }
    }

    /// The library whose calls `table` holds, if any.
    pub(crate) fn of_table(table: &str) -> Option<Library> {
        Library::ALL.into_iter().find(|l| {
            l.tables().contains(&table) || l.table_prefix().is_some_and(|p| table.starts_with(p))
        })
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

pub(crate) const OPENGL_API: &str = "OPENGL_API";
pub(crate) const OPENGL_WORKLOAD: &str = "OPENGL_WORKLOAD";

/// Integer details, each from the first of its columns a table has.
pub(crate) const INT_ARGS: [(&str, &[&str]); 13] = [
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
    // OpenGL: the frame (from 1), the GL context, the GPU (its index).
    ("frame", &["frameId"]),
    ("context", &["contextId"]),
    ("gpu", &["gpu"]),
];

/// String details (StringIds ids).
pub(crate) const STR_ARGS: [(&str, &[&str]); 4] = [
    ("file", &["srcFile"]),
    ("function", &["funcName"]),
    ("variable", &["varName"]),
    ("kernel", &["kernelName"]),
];

/// The columns of detail `name` of [`INT_ARGS`] or [`STR_ARGS`].
pub(crate) fn arg_columns(name: &str) -> &'static [&'static str] {
    INT_ARGS
        .iter()
        .chain(&STR_ARGS)
        .find(|(arg, _)| *arg == name)
        .map_or(&[], |(_, columns)| columns)
}

/// What every library call is read with.
#[derive(Clone, Copy)]
pub(crate) struct CallCols {
    pub start: Col<i64>,
    pub end: Col<Option<i64>>,
    pub global_tid: Col<Option<i64>>,
    pub name: Col<Option<i64>>,
}

pub(crate) struct LibraryCall<'r> {
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

    /// Takes the columns of a call of a library table into `s`, or notes
    /// why its rows cannot be read.
    pub(crate) fn library_call_columns(&self, s: &mut Select) -> Option<CallCols> {
        let call = CallCols {
            start: s.take(LIBRARY.start),
            end: s.take(LIBRARY.end),
            global_tid: s.take(LIBRARY.global_tid),
            name: s.first_of(&NAME_COLUMNS),
        };
        if !self.readable(s) {
            return None;
        }
        if !NAME_COLUMNS.iter().any(|c| s.has(c)) {
            self.note_unreadable(s.table(), NAME_COLUMNS.join(" or "));
            return None;
        }
        Some(call)
    }

    /// Calls `f` with every library call that `filter` keeps, in time order.
    pub(crate) fn for_each_library_call<E: From<rusqlite::Error>>(
        &self,
        filter: &RowFilter,
        f: impl FnMut(LibraryCall<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let strings = &self.strings;
        let mut scans = Vec::new();
        for (library, table) in self.library_tables() {
            let mut s = Select::new(&self.schema, &table);
            let Some(CallCols {
                start,
                end,
                global_tid: gtid,
                name,
            }) = self.library_call_columns(&mut s)
            else {
                continue;
            };
            let ints = INT_ARGS.map(|(_, columns)| s.first_of::<i64>(columns));
            let strs = STR_ARGS.map(|(_, columns)| s.first_of::<i64>(columns));
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
        self.stream_events(scans, filter, f)
    }
}

impl LibraryCall<'_> {
    /// Its integer detail `name` (of [`INT_ARGS`]), where recorded.
    pub(crate) fn int(&self, name: &str) -> Option<i64> {
        let at = INT_ARGS.iter().position(|(n, _)| *n == name)?;
        self.ints[at]
    }
}
