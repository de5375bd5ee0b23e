//! The command line the examples that derive a benchmark export from a fixture share:
//! `NAME INPUT.sqlite OUTPUT.sqlite COUNT`. Included by each with `#[path]` (an example
//! is a crate of its own); a folder without `main.rs` is no example itself.

use std::path::PathBuf;

/// INPUT, OUTPUT and COUNT (a whole number from 1, named `count_name` in messages),
/// or the usage said and exit status 2.
pub fn parse<N>(example: &str, count_name: &str) -> (PathBuf, PathBuf, N)
where
    N: std::str::FromStr + PartialOrd + From<u8>,
{
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output, count] = args.as_slice() else {
        eprintln!("usage: {example} INPUT.sqlite OUTPUT.sqlite {count_name}");
        std::process::exit(2);
    };
    match count.parse() {
        Ok(n) if n >= N::from(1) => (input.into(), output.into(), n),
        _ => {
            eprintln!("{example}: {count_name} must be a whole number from 1");
            std::process::exit(2);
        }
    }
}

/// Exits with status 1 saying `error`, if there is one.
pub fn finish<E: std::fmt::Display>(example: &str, result: Result<(), E>) {
    if let Err(e) = result {
        eprintln!("{example}: {e}");
        std::process::exit(1);
    }
}
