//! The mapping from flags to the library's options, unit-tested (as inferno
//! tests its `into_parts`): the program's own flag modules, compiled into
//! this test binary, parse a command line and give the options the library
//! is then called with. The program itself is tested as a program
//! (`test = false` in Cargo.toml spares CI a second build of it): these
//! modules hold the mapping and depend on nothing else of it.

use std::path::Path;

use clap::Parser;
use nsys2perfetto::analyze::Thresholds;
use nsys2perfetto::{Filter, Format, GpuModel, Options, Part, DEFAULT_GZIP_LEVEL};

#[allow(dead_code)]
#[path = "../../src/bin/nsys2perfetto/conversion.rs"]
mod conversion;

#[allow(dead_code)]
#[path = "../../src/bin/nsys2perfetto/flags.rs"]
mod flags;

/// A command line of conversion flags, as `convert` takes them.
#[derive(Parser)]
struct Convert {
    #[command(flatten)]
    conversion: conversion::Conversion,
}

/// The options `flags` ask for, for a trace written to `output`.
fn options(flags: &[&str], output: Option<&str>) -> Result<Options, String> {
    let line = std::iter::once("convert").chain(flags.iter().copied());
    let parsed = Convert::try_parse_from(line).map_err(|e| e.to_string())?;
    let encoding = parsed.conversion.encoding.clone();
    let mut options = parsed.conversion.options().map_err(|e| e.to_string())?;
    encoding.apply(&mut options, output.map(Path::new))?;
    Ok(options)
}

#[test]
fn no_flags_ask_for_the_librarys_defaults() {
    let given = options(&[], None).unwrap();
    let default = Options::default();
    assert_eq!(given.parts, default.parts);
    assert_eq!(given.format, Format::Perfetto);
    assert_eq!(given.gzip, Some(DEFAULT_GZIP_LEVEL));
    assert_eq!(given.gpu_model, GpuModel::TrackEvent);
    assert_eq!(given.findings, None);
    assert_eq!(
        format!("{:?}", given.filter),
        format!("{:?}", Filter::default())
    );
}

#[test]
fn only_and_exclude_choose_the_parts() {
    let given = options(&["--exclude", "osrt,samples"], None).unwrap();
    for part in Part::ALL {
        let kept = !matches!(part, Part::Osrt | Part::Samples);
        assert_eq!(given.parts.has(part), kept, "{}", part.name());
    }
    let given = options(
        &["--only", "cuda,nvtx,nvtx_gpu", "--exclude", "nvtx_gpu"],
        None,
    )
    .unwrap();
    for part in Part::ALL {
        let kept = matches!(part, Part::Cuda | Part::Nvtx);
        assert_eq!(given.parts.has(part), kept, "{}", part.name());
    }
    let refused = options(&["--only", "nvtx_gpu,cuda"], None).unwrap_err();
    assert!(refused.contains("--only nvtx_gpu needs nvtx"), "{refused}");
    let none_left = options(&["--only", "cuda", "--exclude", "cuda"], None).unwrap_err();
    assert!(
        none_left.contains("leaves no part to convert"),
        "{none_left}"
    );
    let unknown = options(&["--exclude", "cudaa"], None).unwrap_err();
    assert!(unknown.contains("[possible values: "), "{unknown}");
}

#[test]
fn filters_and_findings_become_the_librarys() {
    let given = options(
        &[
            "--time",
            "1.5s:2s",
            "--pid",
            "7,9",
            "--gpu",
            "1",
            "--kernels",
            "gemm",
            "--nvtx",
            "^step",
            "--nvtx-domain",
            "default",
            "--gpu-in-nvtx",
            "--findings",
        ],
        None,
    )
    .unwrap();
    let expected = Filter::default()
        .time("1.5s:2s".parse().unwrap())
        .pids(vec![7, 9])
        .gpus(vec![1])
        .kernels("gemm")
        .unwrap()
        .nvtx("^step")
        .unwrap()
        .nvtx_domain("default")
        .gpu_in_nvtx();
    assert_eq!(format!("{:?}", given.filter), format!("{expected:?}"));
    assert_eq!(given.findings, Some(Thresholds::default()));
    let bad = options(&["--nvtx", "("], None).unwrap_err();
    assert!(bad.contains("is not a regular expression"), "{bad}");
}

#[test]
fn the_format_and_gzip_follow_the_flags_and_the_name() {
    let json = options(&[], Some("x.json")).unwrap();
    assert_eq!((json.format, json.gzip), (Format::Json, None));
    let gz = options(&["--level", "9"], Some("x.json.gz")).unwrap();
    assert_eq!((gz.format, gz.gzip), (Format::Json, Some(9)));
    let raw = options(&["--no-gzip"], Some("x.perfetto-trace")).unwrap();
    assert_eq!((raw.format, raw.gzip), (Format::Perfetto, None));
    let typed = options(&["--gpu-model", "typed"], None).unwrap();
    assert_eq!(typed.gpu_model, GpuModel::Typed);

    let contradicted = options(&["--format", "perfetto"], Some("x.json")).unwrap_err();
    assert!(contradicted.contains("x.json"), "{contradicted}");
    let plain_level = options(&["--level", "6"], Some("x.json")).unwrap_err();
    assert!(plain_level.contains("JSON is gzipped only when its name ends in .gz"));
    let typed_json = options(&["--gpu-model", "typed", "--format", "json"], None).unwrap_err();
    assert!(
        typed_json.contains("--gpu-model typed with JSON"),
        "{typed_json}"
    );
}

#[test]
fn sizes_read_as_the_hub_takes_them() {
    assert_eq!(flags::parse_size("4096"), Ok(4096));
    assert_eq!(flags::parse_size("500M"), Ok(500 << 20));
    assert_eq!(flags::parse_size("8GiB"), Ok(8 << 30));
    assert_eq!(flags::parse_size(" 2 kb "), Ok(2048));
    assert!(flags::parse_size("8X")
        .unwrap_err()
        .contains("unknown unit"));
    assert!(flags::parse_size("M").unwrap_err().contains("is no size"));
    assert!(flags::parse_size("99999999999T")
        .unwrap_err()
        .contains("too large"));
    assert!(flags::parse_rank_pattern("rank(\\d+)").is_ok());
    assert!(flags::parse_rank_pattern("(").is_err());
}
