#!/usr/bin/env bash
# Builds the release wheels: x86_64 (and aarch64 with --aarch64) for glibc >= 2.17
# (manylinux2014), linked by zig (PyPI's `ziglang`), so the program runs on RHEL/Rocky 8,
# Ubuntu 20.04 and older clusters, whatever glibc this machine has.
#
#   scripts/build-wheels.sh [--aarch64 | --aarch64-only] [OUT_DIR]   (default: target/wheels)
#
# Needs Rust (rustup: for --aarch64, `rustup target add aarch64-unknown-linux-gnu`) and
# Python 3; maturin and ziglang are installed into a virtual environment of the build's own
# (target/wheel-build-venv), at the versions pinned below.
#
# Reproducible: the wheel's file dates are SOURCE_DATE_EPOCH (the last commit's time, unless
# set), and the build's own paths (this checkout, cargo's registry) are remapped out of the
# program, so the same commit and toolchain give the same wheel.
set -euo pipefail
cd "$(dirname "$0")/.."

MATURIN_VERSION="1.16.0"
ZIGLANG_VERSION="0.17.1"
targets=(x86_64-unknown-linux-gnu)
case "${1:-}" in
  --aarch64) targets+=(aarch64-unknown-linux-gnu); shift ;;
  --aarch64-only) targets=(aarch64-unknown-linux-gnu); shift ;;
esac
out=${1:-target/wheels}

venv=target/wheel-build-venv
if [ ! -x "$venv/bin/maturin" ] || [ ! -d "$venv/lib" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check \
  "maturin==$MATURIN_VERSION" "ziglang==$ZIGLANG_VERSION"
# maturin finds zig as `python -m ziglang` of the Python it runs under.
export PATH="$PWD/$venv/bin:$PATH"

export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$PWD=/nsys2perfetto \
  --remap-path-prefix=$cargo_home=/cargo"

# Rust's standard library (1.95) calls gettid(), which glibc has only from 2.30: linked
# against zig's glibc 2.17 it is undefined. A gettid of our own, the system call itself
# (which is all glibc's is), is linked into the program; on a newer glibc it stands in
# for glibc's, to the same effect. Passed to the program's crate alone (after --), so the
# dependencies' builds are not redone for it.
shim_dir=target/wheel-build-shim
mkdir -p "$shim_dir"
cat > "$shim_dir/gettid.c" <<'C'
#define _GNU_SOURCE
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
pid_t gettid(void) { return (pid_t)syscall(SYS_gettid); }
C
for target in "${targets[@]}"; do
  arch=${target%%-*}
  python3=$PWD/$venv/bin/python3
  "$python3" -m ziglang cc -target "$arch-linux-gnu.2.17" -O2 -fPIC -c \
    "$shim_dir/gettid.c" -o "$shim_dir/gettid-$arch.o"
  maturin build --release --locked --zig --compatibility manylinux2014 \
    --target "$target" --out "$out" -- -C "link-arg=$PWD/$shim_dir/gettid-$arch.o"
done
# The promise of the manylinux2014 tag, checked on what was built: no glibc symbol newer
# than 2.17 in the program's dynamic symbol table (python/tests/test_files.py checks the
# installed wheel the same way).
for wheel in "$out"/nsys2perfetto-*manylinux*.whl; do
  check=$(mktemp -d)
  python3 -m zipfile -e "$wheel" "$check"
  newest=$(objdump -T "$check"/*.data/scripts/nsys2perfetto | grep -o 'GLIBC_[0-9.]*' |
    sort -uV | tail -1)
  rm -rf "$check"
  if [ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" != GLIBC_2.17 ]; then
    echo "$wheel: its program needs $newest, newer than manylinux2014's GLIBC_2.17" >&2
    exit 1
  fi
done
ls -l "$out"
