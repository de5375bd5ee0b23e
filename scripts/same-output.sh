#!/usr/bin/env bash
# Runs every command that writes a result (convert, convert --format json,
# convert --findings, merge, stats, analyze, compare, report, series) on every
# fixture and the demo, and compares the outputs of two binaries byte for
# byte: a change that should not alter any output (a refactoring, a speed-up)
# shows it does not.
#
#   scripts/same-output.sh [BASE]
#       the binary of git revision BASE (default: main) against the working
#       tree's, both built in release mode
#   BASE_BIN=path/to/nsys2perfetto scripts/same-output.sh
#       (a base binary built already: no worktree, no build of the base)
#   NEW_BIN=path/to/nsys2perfetto scripts/same-output.sh
#       (the new binary built already, e.g. a debug build: no release build)
#   KEEP=DIR scripts/same-output.sh
#       (the outputs are kept in DIR/old and DIR/new)
#
# The two halves, for binaries built elsewhere or at other times:
#
#   scripts/same-output.sh run BIN DIR     # every output of BIN into DIR (made empty)
#   scripts/same-output.sh diff DIR1 DIR2  # lists the outputs that differ or are
#                                          # missing from either; exits 1 if any
#
# Standard output and the exit status of each command are outputs too;
# standard error is not (it carries progress and file names). Needs
# ../shared/fixtures. Exits 1 if any output differs.
set -euo pipefail
# Paths given to run and diff are the caller's, before the cd below.
args=("$@")
if [ "${1:-}" = run ] || [ "${1:-}" = diff ]; then
  for i in 1 2; do
    [ -n "${args[$i]:-}" ] && args[$i]=$(realpath -m "${args[$i]}")
  done
  set -- "${args[@]}"
fi
cd "$(dirname "$0")/.."
fixtures=../shared/fixtures
[ -d "$fixtures" ] || { echo "same-output: $fixtures is absent" >&2; exit 2; }

# Every output of binary $1 into directory $2.
run_all() {
  local bin=$1 dir=$2
  inputs=("$fixtures"/sqlite/*.sqlite "$fixtures"/local/*.sqlite demo/demo.sqlite)

  # Runs one command with binary $bin into directory $dir: `each NAME ARGS...`,
  # where ARGS may name the output as @OUT@. Standard output and the exit status
  # are kept too.
  each() {
    local name=$1
    shift
    local out="$dir/$name"
    local args=("${@//@OUT@/$out}")
    set +e
    "$bin" "${args[@]}" >"$out.stdout" 2>/dev/null
    echo "exit $?" >>"$out.stdout"
    set -e
  }

  for input in "${inputs[@]}"; do
    n=$(basename "$input" .sqlite)
    each "$n.perfetto-trace" convert -q "$input" -o @OUT@
    each "$n.json" convert -q --format json "$input" -o @OUT@
    each "$n.findings.perfetto-trace" convert -q --findings "$input" -o @OUT@
    each "$n.stats.csv" stats --format csv "$input"
    each "$n.stats.json" stats --format json "$input"
    each "$n.stats.txt" stats "$input"
    each "$n.analyze.csv" analyze --format csv "$input"
    each "$n.analyze.json" analyze --format json "$input"
    each "$n.analyze.txt" analyze "$input"
    each "$n.compare.csv" compare --format csv "$input" demo/demo.sqlite
    each "$n.report.html" report "$input" -o @OUT@
    each "$n.report.md" report "$input" --format md
    each "$n.report.json" report "$input" --format json
  done

  h100=("$fixtures"/sqlite/h100_torch_graph_node.sqlite "$fixtures"/sqlite/h100_torch_graph_whole.sqlite)
  each "compare-h100.csv" compare --format csv "${h100[@]}"
  each "compare-h100.json" compare --format json "${h100[@]}"
  each "compare-h100.txt" compare "${h100[@]}"
  each "compare-h100.perfetto-trace" compare --format csv "${h100[@]}" --trace @OUT@
  each "series-h100.csv" series -q --param graphs=node "${h100[0]}" --param graphs=whole "${h100[1]}" \
    --events 'kernel:.' 'api:^cuda' 'nvtx:.' 'nvtx-gpu:.' --svg @OUT@.svg
  # The pages of a job's steps: two ranks matched by name, two processes of
  # one report matched by order, and ranks without steps.
  for format in html md json; do
    each "steps-h100.$format" report --step 'step *' "${h100[@]}" --format $format
    each "steps-2gpu.$format" report --step 'aten::linear*' \
      "$fixtures"/sqlite/nsys-ai_h100_2gpu_1s.sqlite --format $format
    each "steps-none.$format" report --step 'ProfilerStep*' "$fixtures"/sqlite/cori_run1_report1.sqlite \
      "$fixtures"/sqlite/pipit_saxpy_mpi_cuda_rank0.sqlite --format $format
  done
  each "merge-cori.perfetto-trace" merge -q "$fixtures"/sqlite/cori_run1_report1.sqlite \
    "$fixtures"/sqlite/pipit_saxpy_mpi_cuda_rank0.sqlite -o @OUT@
  each "merge-h100.perfetto-trace" merge -q "${h100[@]}" -o @OUT@
}

# Lists the outputs of directory $1 that differ from, or are missing in, $2
# (and those of $2 missing in $1); returns 1 if any. Prints the count.
diff_all() {
  local a=$1 b=$2 differ=0 count=0 file name
  for file in "$a"/* "$b"/*; do
    name=$(basename "$file")
    [ -e "$file" ] || continue
    if [ "$(dirname "$file")" = "$b" ]; then
      [ -e "$a/$name" ] || { echo "only in $b: $name"; differ=$((differ + 1)); }
      continue
    fi
    count=$((count + 1))
    if [ ! -e "$b/$name" ]; then
      echo "only in $a: $name"
      differ=$((differ + 1))
    elif ! cmp -s "$file" "$b/$name"; then
      echo "differs: $name"
      differ=$((differ + 1))
    fi
  done
  echo "$count outputs compared: $differ differ"
  [ "$differ" -eq 0 ]
}

case "${1:-}" in
  run)
    [ $# -eq 3 ] || { echo "usage: scripts/same-output.sh run BIN DIR" >&2; exit 2; }
    [ -x "$2" ] || { echo "same-output: $2 is not an executable" >&2; exit 2; }
    rm -rf "$3"
    mkdir -p "$3"
    run_all "$2" "$3"
    echo "$(ls "$3" | wc -l) outputs of $2 in $3"
    exit 0
    ;;
  diff)
    [ $# -eq 3 ] || { echo "usage: scripts/same-output.sh diff DIR1 DIR2" >&2; exit 2; }
    diff_all "$2" "$3"
    exit
    ;;
esac

base=${1:-main}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

if [ -n "${BASE_BIN:-}" ]; then
  old=$BASE_BIN
  base_name=$BASE_BIN
else
  git worktree add --quiet --detach "$work/base" "$base"
  # The base builds into a target directory of its own beside this one's, so
  # that switching between the two does not rebuild either from scratch.
  CARGO_TARGET_DIR=target/same-output-base cargo build --quiet --release \
    --manifest-path "$work/base/Cargo.toml"
  old=target/same-output-base/release/nsys2perfetto
  base_name="$base ($(git rev-parse --short "$base"))"
fi
if [ -n "${NEW_BIN:-}" ]; then
  new=$NEW_BIN
else
  cargo build --quiet --release
  new=target/release/nsys2perfetto
fi

mkdir -p "$work/old" "$work/new"
run_all "$old" "$work/old"
run_all "$new" "$work/new"
if [ -n "${KEEP:-}" ]; then
  rm -rf "$KEEP"
  mkdir -p "$KEEP"
  cp -r "$work/old" "$work/new" "$KEEP/"
fi
echo "base: $base_name"
diff_all "$work/old" "$work/new"
