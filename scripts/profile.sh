#!/usr/bin/env bash
# Profiles one conversion with perf and draws where the CPU goes.
#
#   scripts/profile.sh INPUT.sqlite [OUT_DIR]    # OUT_DIR defaults to bench/
#
# Writes OUT_DIR/flamegraph.svg (threads named by role: "CUDA reader",
# "NVTX conversion", "gzip", ...) and OUT_DIR/profile.md (the share of CPU
# per thread and per kind of work). Needs perf (perf_event_paranoid <= 2) and
# inferno (`cargo install inferno`).
set -euo pipefail
cd "$(dirname "$0")/.."
INPUT=${1:?usage: scripts/profile.sh INPUT.sqlite [OUT_DIR]}
OUT=${2:-bench}
FREQ=${FREQ:-2999}
mkdir -p "$OUT" target/profile
cargo build --release --quiet --bin nsys2perfetto
work=target/profile
perf record -q -F "$FREQ" -g --call-graph dwarf,16384 -o "$work/perf.data" \
  target/release/nsys2perfetto convert "$INPUT" -o "$work/out.perfetto-trace" -q
perf script -i "$work/perf.data" 2>/dev/null | inferno-collapse-perf --tid >"$work/folded"
python3 scripts/profile_table.py "$work/folded" "$work/by_role.folded" >"$OUT/profile.md"
inferno-flamegraph --title "nsys2perfetto convert $(basename "$INPUT"), perf at $FREQ Hz, threads by role" \
  --countname ns --minwidth 0.5 --width 1400 <"$work/by_role.folded" >"$OUT/flamegraph.svg"
cat "$OUT/profile.md"
