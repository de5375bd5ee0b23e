//! Library calls (cuDNN, cuBLAS, OpenACC, OpenMP, MPI, UCX) and MPI ranks from
//! synthetic exports built to the documented schema: no fixture has these tables.

use crate::support::checker::Value as Arg;
use crate::support::convert::convert;
use crate::support::synth::{GpuStream, Synth, Thread};

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
    s.cudnn(main, 1000..2000, "cudnnConvolutionForward");
    // Nested in the cuDNN call's time but another library: a track of its own.
    s.cublas(main, 1500..2500, "cublasSgemm_v2");
    let stream = GpuStream {
        pid: 100,
        device: 0,
        context: 1,
        stream: 7,
    };
    s.openacc(worker, 3000..3100, "acc_enqueue_launch")
        .on(stream)
        .file("saxpy.c")
        .line(12)
        .function("main")
        .kernel("main_12_gpu")
        .gangs(80)
        .workers(1)
        .vector_length(128);
    s.openmp(worker, 500..4000, "omp_parallel");
    s.mpi_p2p(main, 5000..5600, "MPI_Send")
        .tag(3)
        .remote_rank(1)
        .bytes(4096);
    s.mpi_collective(main, 6000..6900, "MPI_Allreduce")
        .root_rank(0)
        .send_bytes(1024)
        .recv_bytes(1024);
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
    s.ucx_worker(main, 0xabc);
    s.ucx(main, 500..900, "ucp_worker_create");
    s.ucx_submit(main, 1000..1400, "ucp_tag_send_nbx")
        .buffer(0x1000)
        .bytes(8192)
        .peer(0xdef)
        .tag(42);
    s.ucx_progress(progress, 1200..1300, "ucp_tag_recv_nbx")
        .buffer(0x2000)
        .bytes(4096)
        .peer(0xdef)
        .tag(43);
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
    s.mpi_rank(ranked, 3);
    s.mpi_rank(ranked_worker, 3);
    s.mpi_rank(doubly, 4);
    s.mpi_rank(doubly_worker, 5);
    for (i, thread) in [ranked, unranked, doubly].into_iter().enumerate() {
        let start = 1000 * (i as i64 + 1);
        s.mpi_p2p(thread, start..start + 100, "MPI_Barrier");
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
