#!/usr/bin/env bash
# Runs every command that writes a result (convert, convert --format json,
# convert --findings, merge, stats, analyze, compare, series) on every fixture
# and the demo, with the binary of git revision BASE (default: main) and with
# the working tree's, and compares the outputs byte for byte: a change that
# should not alter any output (a refactoring) shows it does not.
#
#   scripts/same-output.sh [BASE]
#   BASE_BIN=path/to/nsys2perfetto scripts/same-output.sh
#       (a base binary built already: no worktree, no build of the base)
#   NEW_BIN=path/to/nsys2perfetto scripts/same-output.sh
#       (the new binary built already, e.g. a debug build: no release build)
#   KEEP=DIR scripts/same-output.sh
#       (the outputs are kept in DIR/old and DIR/new)
#
# Needs ../shared/fixtures. Exits 1 if any output differs.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-main}
fixtures=../shared/fixtures
[ -d "$fixtures" ] || { echo "same-output: $fixtures is absent" >&2; exit 2; }

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

inputs=("$fixtures"/sqlite/*.sqlite "$fixtures"/local/*.sqlite demo/demo.sqlite)
mkdir -p "$work/old" "$work/new"

# Runs one command with both binaries: `each NAME ARGS...`, where ARGS may
# name the output as @OUT@. Standard output and the exit status are compared
# too; standard error is not (it carries progress and file names).
each() {
  local name=$1
  shift
  local side bin out args
  for side in old new; do
    if [ "$side" = old ]; then bin=$old; else bin=$new; fi
    out="$work/$side/$name"
    args=("${@//@OUT@/$out}")
    set +e
    "$bin" "${args[@]}" >"$out.stdout" 2>/dev/null
    echo "exit $?" >>"$out.stdout"
    set -e
  done
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

differ=0
count=0
for file in "$work"/old/*; do
  count=$((count + 1))
  if ! cmp -s "$file" "$work/new/$(basename "$file")"; then
    echo "differs: $(basename "$file")"
    differ=$((differ + 1))
  fi
done
if [ -n "${KEEP:-}" ]; then
  rm -rf "$KEEP"
  mkdir -p "$KEEP"
  cp -r "$work/old" "$work/new" "$KEEP/"
fi
echo "$count outputs compared with $base_name: $differ differ"
[ "$differ" -eq 0 ]
