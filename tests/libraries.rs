//! Library calls (cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX) and MPI ranks from
//! synthetic exports built to the documented schema: no fixture has these tables.

mod support;

use rusqlite::types::Value;
use support::checker::Value as Arg;
use support::convert::convert;
use support::synth::{Synth, Thread};

#[test]
fn library_calls_land_on_their_threads_with_their_details() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("libs.sqlite");
    let mut s = Synth::new(&path);
    let main = Thread { pid: 100, tid: 100 };
    let worker = Thread { pid: 100, tid: 101 };
    s.process(100, "trainer");
    s.thread(main, "trainer");
    s.thread(worker, "worker");
    let g = |t: Thread| Value::Integer(t.global_tid());
    let conv = s.string("cudnnConvolutionForward");
    let gemm = s.string("cublasSgemm_v2");
    let launch = s.string("acc_enqueue_launch");
    let file = s.string("saxpy.c");
    let func = s.string("main");
    let kernel = s.string("main_12_gpu");
    let parallel = s.string("omp_parallel");
    let send = s.string("MPI_Send");
    let allreduce = s.string("MPI_Allreduce");
    s.row(
        "CUDNN_EVENTS",
        vec![
            ("start", 1000.into()),
            ("end", 2000.into()),
            ("eventClass", 0.into()),
            ("globalTid", g(main)),
            ("nameId", conv.into()),
        ],
    );
    // Nested in the cuDNN call's time but another library: a track of its own.
    s.row(
        "CUBLAS_EVENTS",
        vec![
            ("start", 1500.into()),
            ("end", 2500.into()),
            ("eventClass", 0.into()),
            ("globalTid", g(main)),
            ("nameId", gemm.into()),
        ],
    );
    s.row(
        "CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH",
        vec![
            ("start", 3000.into()),
            ("end", 3100.into()),
            ("nameId", launch.into()),
            ("globalTid", g(worker)),
            ("eventKind", 0.into()),
            ("DeviceType", 0.into()),
            ("lineNo", 12.into()),
            ("cuDeviceId", 0.into()),
            ("cuContextId", 1.into()),
            ("cuStreamId", 7.into()),
            ("srcFile", file.into()),
            ("funcName", func.into()),
            ("numGangs", 80.into()),
            ("numWorkers", 1.into()),
            ("vectorLength", 128.into()),
            ("kernelName", kernel.into()),
        ],
    );
    s.row(
        "OPENMP_EVENT_KIND_PARALLEL",
        vec![
            ("start", 500.into()),
            ("end", 4000.into()),
            ("eventClass", 0.into()),
            ("globalTid", g(worker)),
            ("nameId", parallel.into()),
        ],
    );
    s.row(
        "MPI_P2P_EVENTS",
        vec![
            ("start", 5000.into()),
            ("end", 5600.into()),
            ("globalTid", g(main)),
            ("textId", send.into()),
            ("tag", 3.into()),
            ("remoteRank", 1.into()),
            ("size", 4096.into()),
        ],
    );
    s.row(
        "MPI_COLLECTIVES_EVENTS",
        vec![
            ("start", 6000.into()),
            ("end", 6900.into()),
            ("globalTid", g(main)),
            ("textId", allreduce.into()),
            ("rootRank", 0.into()),
            ("collSendSize", 1024.into()),
            ("collRecvSize", 1024.into()),
        ],
    );
    s.finish();

    let (trace, summary) = convert(&path, &Default::default());
    trace.assert_valid();
    for (category, n) in [
        ("cudnn", 1),
        ("cublas", 1),
        ("openacc", 1),
        ("openmp", 1),
        ("mpi", 2),
    ] {
        assert_eq!(trace.count(category), n, "{category}");
        assert_eq!(
            summary.slices.get(category).copied(),
            Some(n),
            "{category} in the summary"
        );
    }
    let slice = |name: &str| {
        trace
            .slices
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let on = |name: &str| {
        let s = slice(name);
        let track = trace.tracks[&s.track].name.clone().unwrap();
        let thread = trace.thread_of(s.track).and_then(|t| t.tid).unwrap();
        (track, thread, s.ts, s.dur)
    };
    assert_eq!(
        on("cudnnConvolutionForward"),
        ("cuDNN".into(), 100, 1000, 1000)
    );
    assert_eq!(on("cublasSgemm_v2"), ("cuBLAS".into(), 100, 1500, 1000));
    assert_eq!(on("acc_enqueue_launch"), ("OpenACC".into(), 101, 3000, 100));
    assert_eq!(on("omp_parallel"), ("OpenMP".into(), 101, 500, 3500));
    assert_eq!(on("MPI_Send"), ("MPI".into(), 100, 5000, 600));
    let acc = &slice("acc_enqueue_launch").args;
    assert_eq!(acc.get("file"), Some(&Arg::Str("saxpy.c".into())));
    assert_eq!(acc.get("line"), Some(&Arg::Int(12)));
    assert_eq!(acc.get("kernel"), Some(&Arg::Str("main_12_gpu".into())));
    assert_eq!(acc.get("gangs"), Some(&Arg::Int(80)));
    let send = &slice("MPI_Send").args;
    assert_eq!(
        (send.get("bytes"), send.get("tag"), send.get("remote_rank")),
        (
            Some(&Arg::Int(4096)),
            Some(&Arg::Int(3)),
            Some(&Arg::Int(1))
        )
    );
    let all = &slice("MPI_Allreduce").args;
    assert_eq!(
        (all.get("send_bytes"), all.get("root_rank")),
        (Some(&Arg::Int(1024)), Some(&Arg::Int(0)))
    );

    // --exclude libraries leaves them all out.
    let mut options = nsys2perfetto::Options::default();
    options.parts = options.parts.without(nsys2perfetto::Part::Libraries);
    let (light, _) = convert(&path, &options);
    for category in ["cudnn", "cublas", "openacc", "openmp", "mpi"] {
        assert_eq!(light.count(category), 0, "{category} excluded");
    }
}

#[test]
fn ucx_calls_land_on_their_threads_with_their_details() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ucx.sqlite");
    let mut s = Synth::new(&path);
    let main = Thread { pid: 200, tid: 200 };
    let progress = Thread { pid: 200, tid: 201 };
    s.process(200, "pingpong");
    let g = |t: Thread| Value::Integer(t.global_tid());
    let send = s.string("ucp_tag_send_nbx");
    let recv = s.string("ucp_tag_recv_nbx");
    let create = s.string("ucp_worker_create");
    s.row(
        "UCP_WORKERS",
        vec![("globalTid", g(main)), ("workerUid", 0xabc.into())],
    );
    s.row(
        "UCP_EVENTS",
        vec![
            ("start", 500.into()),
            ("end", 900.into()),
            ("globalTid", g(main)),
            ("textId", create.into()),
        ],
    );
    s.row(
        "UCP_SUBMIT_EVENTS",
        vec![
            ("start", 1000.into()),
            ("end", 1400.into()),
            ("globalTid", g(main)),
            ("textId", send.into()),
            ("bufferAddr", 0x1000.into()),
            ("packedSize", 8192.into()),
            ("peerWorkerUid", 0xdef.into()),
            ("tag", 42.into()),
        ],
    );
    s.row(
        "UCP_PROGRESS_EVENTS",
        vec![
            ("start", 1200.into()),
            ("end", 1300.into()),
            ("globalTid", g(progress)),
            ("textId", recv.into()),
            ("bufferAddr", 0x2000.into()),
            ("packedSize", 4096.into()),
            ("peerWorkerUid", 0xdef.into()),
            ("tag", 43.into()),
        ],
    );
    s.finish();

    let (trace, summary) = convert(&path, &Default::default());
    trace.assert_valid();
    assert_eq!(trace.count("ucx"), 3);
    assert_eq!(summary.slices.get("ucx").copied(), Some(3));
    let slice = |name: &str| {
        let s = trace
            .slices
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("{name}"));
        let track = trace.tracks[&s.track].name.clone().unwrap();
        let thread = trace.thread_of(s.track).and_then(|t| t.tid).unwrap();
        (s, (track, thread, s.ts, s.dur))
    };
    let (created, at) = slice("ucp_worker_create");
    assert_eq!(at, ("UCX".into(), 200, 500, 400));
    assert!(created.args.is_empty(), "UCP_EVENTS have no details");
    let (sent, at) = slice("ucp_tag_send_nbx");
    assert_eq!(at, ("UCX".into(), 200, 1000, 400));
    assert_eq!(
        (
            sent.args.get("bytes"),
            sent.args.get("tag"),
            sent.args.get("peer_worker")
        ),
        (
            Some(&Arg::Int(8192)),
            Some(&Arg::Int(42)),
            Some(&Arg::Int(0xdef))
        )
    );
    let (received, at) = slice("ucp_tag_recv_nbx");
    assert_eq!(at, ("UCX".into(), 201, 1200, 100));
    assert_eq!(received.args.get("bytes"), Some(&Arg::Int(4096)));

    let mut options = nsys2perfetto::Options::default();
    options.parts = options.parts.without(nsys2perfetto::Part::Libraries);
    assert_eq!(convert(&path, &options).0.count("ucx"), 0);
}

#[test]
fn processes_carry_their_mpi_rank_in_their_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ranks.sqlite");
    let mut s = Synth::new(&path);
    let ranked = Thread { pid: 100, tid: 100 };
    let ranked_worker = Thread { pid: 100, tid: 101 };
    let unranked = Thread { pid: 200, tid: 200 };
    // Unnamed, and its threads in two ranks: the name says both.
    let doubly = Thread { pid: 300, tid: 300 };
    let doubly_worker = Thread { pid: 300, tid: 301 };
    s.process(100, "trainer");
    s.process(200, "helper");
    let barrier = s.string("MPI_Barrier");
    for (thread, rank) in [
        (ranked, 3),
        (ranked_worker, 3),
        (doubly, 4),
        (doubly_worker, 5),
    ] {
        s.row(
            "MPI_RANKS",
            vec![
                ("globalTid", thread.global_tid().into()),
                ("rank", rank.into()),
            ],
        );
    }
    for (i, thread) in [ranked, unranked, doubly].into_iter().enumerate() {
        let start = 1000 * (i as i64 + 1);
        s.row(
            "MPI_P2P_EVENTS",
            vec![
                ("start", start.into()),
                ("end", (start + 100).into()),
                ("globalTid", thread.global_tid().into()),
                ("textId", barrier.into()),
            ],
        );
    }
    s.finish();

    let (trace, _) = convert(&path, &Default::default());
    trace.assert_valid();
    let mut names: Vec<(i32, String)> = trace
        .tracks
        .values()
        .filter_map(|t| Some((t.pid?, t.process_name.clone()?)))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            (100, "trainer (MPI rank 3)".to_owned()),
            (200, "helper".to_owned()),
            (300, "Process 300 (MPI ranks 4, 5)".to_owned()),
        ]
    );
}
