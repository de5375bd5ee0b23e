#!/usr/bin/env bash
# Benchmarks nsys2perfetto side by side with the fastest peer and with the floor.
#
#   scripts/bench.sh            # writes target/bench/results.md
#   RUNS=5 SCALES="50 500" NVTX_HEAVY=1500000 scripts/bench.sh
#   SCALES="" scripts/bench.sh      # the NVTX-heavy input alone
#   NVTX_HEAVY="" scripts/bench.sh  # without it
#
# Inputs: ../shared/fixtures/sqlite/nsys-ai_h100_2gpu_1s.sqlite scaled by
# examples/scale_report.rs (every event table repeated, shifted in time and
# correlation id), labelled xN; and "nvtx", an NVTX-heavy input of about
# NVTX_HEAVY events made from the same fixture by examples/nvtx_heavy_report.rs
# (a PyTorch training run under emit_nvtx: 58% of its events are NVTX ranges,
# nearly every name distinct). Tools, each run RUNS times, wall time and peak
# RSS from GNU time:
#   nsys2perfetto   convert, gzipped output
#   nsys-chrome     nCompass's Rust converter, from the PyPI wheel ncompass==0.1.15
#   floor read      examples/read_floor.rs: a plain scan of the tables and columns we read
#   floor gzip      examples/gzip_floor.rs: our compressor on our raw (--no-gzip) trace
#   stats           nsys2perfetto stats, the summaries in STATS_REPORTS, as CSV
#   nsys-stats      `nsys stats` on the same export and summaries (when nsys is on PATH)
#   one core        nsys2perfetto again, pinned to one core (taskset -c 0)
# Then, on the inputs of LOAD_SCALES (default 50), the time to open: each trace
# loaded by Perfetto's trace_processor (../shared/tools/trace_processor_shell),
# ours and nsys-chrome's JSON, RUNS times taking turns.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-5}
SCALES=${SCALES-"50 500"}
NVTX_HEAVY=${NVTX_HEAVY-1500000}
LOAD_SCALES=${LOAD_SCALES:-"50"}
TRACE_PROCESSOR=${TRACE_PROCESSOR:-../shared/tools/trace_processor_shell}
WORK=${WORK:-target/bench}
SOURCE=${SOURCE:-../shared/fixtures/sqlite/nsys-ai_h100_2gpu_1s.sqlite}
STATS_REPORTS=${STATS_REPORTS:-cudaapisum,gpukernsum,gpumemtimesum,gpumemsizesum,gpusum,nvtxsum}
mkdir -p "$WORK"

if [ ! -f "$SOURCE" ]; then
  echo "bench: $SOURCE not found (it comes with ../shared)" >&2
  exit 1
fi
if ! /usr/bin/time -f %e true >/dev/null 2>&1; then
  apt-get install -y -qq time >/dev/null
fi

cargo build --release --quiet --bin nsys2perfetto --example scale_report --example nvtx_heavy_report --example read_floor --example gzip_floor
OURS=target/release/nsys2perfetto

# The peer: the binary inside the ncompass wheel (no need for its Python deps).
PEER="$WORK/ncompass/ncompass/bin/nsys-chrome"
if [ ! -x "$PEER" ]; then
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$WORK/wheel" ncompass==0.1.15
  python3 -m zipfile -e "$WORK"/wheel/ncompass-0.1.15-*.whl "$WORK/ncompass"
  chmod +x "$PEER"
fi

# once NAME CMD...: runs CMD once, appends a "name wall_s rss_kb user_s sys_s" line.
once() {
  local name=$1
  shift
  /usr/bin/time -f "$name %e %M %U %S" -a -o "$WORK/times.txt" "$@" >/dev/null 2>&1
}
# One core of the machine's, for how the conversion scales (none when it has one).
ONE_CORE=()
if [ "$(nproc)" -gt 1 ] && command -v taskset >/dev/null; then
  ONE_CORE=(taskset -c 0)
fi

: >"$WORK/times.txt"
: >"$WORK/sizes.txt"
INPUTS=()
for scale in $SCALES; do INPUTS+=("x$scale"); done
[ -n "$NVTX_HEAVY" ] && INPUTS+=(nvtx)
for label in "${INPUTS[@]}"; do
  if [ "$label" = nvtx ]; then
    input="$WORK/nvtx_heavy_$NVTX_HEAVY.sqlite"
    if [ ! -f "$input" ]; then
      target/release/examples/nvtx_heavy_report "$SOURCE" "$input" "$NVTX_HEAVY" 2>/dev/null
    fi
  else
    input="$WORK/h100_$label.sqlite"
    if [ ! -f "$input" ]; then
      target/release/examples/scale_report "$SOURCE" "$input" "${label#x}" 2>/dev/null
    fi
  fi
  events=$(python3 - "$input" <<'PY'
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?immutable=1", uri=True)
tables = ["CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
          "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS"]
present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
print(sum(db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in tables if t in present))
PY
)
  echo "$label input $(stat -c %s "$input") $events" >>"$WORK/sizes.txt"

  "$OURS" convert "$input" -o "$WORK/out_$label.pb" --no-gzip -q
  # Tools take turns, run after run, so that a machine that speeds up or slows
  # down meanwhile moves every tool's numbers alike.
  for _ in $(seq "$RUNS"); do
    once "$label nsys2perfetto" "$OURS" convert "$input" -o "$WORK/out_$label.perfetto-trace" -q
    once "$label nsys-chrome" "$PEER" "$input" -o "$WORK/out_$label.json.gz"
    once "$label floor-read" target/release/examples/read_floor "$input"
    once "$label floor-gzip" target/release/examples/gzip_floor "$WORK/out_$label.pb"
    once "$label stats" "$OURS" stats "$input" --report "$STATS_REPORTS" --format csv -o "$WORK/stats_$label.csv"
    once "$label report" "$OURS" report "$input" -o "$WORK/report_$label.json"
    if command -v nsys >/dev/null; then
      once "$label nsys-stats" nsys stats -q --format csv --report "$STATS_REPORTS" \
        --force-overwrite true -o "$WORK/nsys_stats_$label" "$input"
    fi
    if [ ${#ONE_CORE[@]} -gt 0 ]; then
      once "$label one-core" "${ONE_CORE[@]}" "$OURS" convert "$input" -o "$WORK/out_$label.1core" -q
    fi
  done
  rm -f "$WORK/out_$label.1core"
  # Time to open: the load into trace_processor, of our trace and of the JSON.
  if [[ " $LOAD_SCALES " == *" ${label#x} "* ]] && [ -x "$TRACE_PROCESSOR" ]; then
    count="select count(*) from slice"
    for _ in $(seq "$RUNS"); do
      once "$label load-nsys2perfetto" "$TRACE_PROCESSOR" query "$WORK/out_$label.perfetto-trace" "$count"
      once "$label load-nsys-chrome" "$TRACE_PROCESSOR" query "$WORK/out_$label.json.gz" "$count"
    done
    for tool in nsys2perfetto nsys-chrome; do
      out="$WORK/out_$label.perfetto-trace"
      [ "$tool" = nsys-chrome ] && out="$WORK/out_$label.json.gz"
      echo "$label slices-$tool $("$TRACE_PROCESSOR" query "$out" "$count" 2>/dev/null | tail -1)" >>"$WORK/sizes.txt"
    done
  fi
  echo "$label nsys2perfetto $(stat -c %s "$WORK/out_$label.perfetto-trace")" >>"$WORK/sizes.txt"
  echo "$label nsys-chrome $(stat -c %s "$WORK/out_$label.json.gz")" >>"$WORK/sizes.txt"
  echo "$label raw $(stat -c %s "$WORK/out_$label.pb")" >>"$WORK/sizes.txt"
  rm -f "$WORK/out_$label.pb" "$WORK/out_$label.json.gz"
done

{
  echo "Machine: $(nproc) cores, $(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/^Mem:/ {print $2}') GiB;" \
    "$(. /etc/os-release && echo "$PRETTY_NAME"); $(rustc --version)."
  echo "Run: $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD), RUNS=$RUNS, SCALES=\"$SCALES\", NVTX_HEAVY=\"$NVTX_HEAVY\"."
  echo
  python3 scripts/bench_table.py "$WORK/times.txt" "$WORK/sizes.txt"
} | tee "$WORK/results.md"

# Fidelity on the largest input and the NVTX-heavy one: the same checks as the fixtures.
checked=()
if [ -n "$SCALES" ]; then
  checked+=("$WORK/h100_x$(echo $SCALES | tr ' ' '\n' | sort -n | tail -1).sqlite")
fi
[ -n "$NVTX_HEAVY" ] && checked+=("$WORK/nvtx_heavy_$NVTX_HEAVY.sqlite")
for input in "${checked[@]}"; do
  NSYS2PERFETTO_SCALED="$input" cargo test --release --quiet --test it scale:: -- --ignored --nocapture 2>&1 |
    grep -E "slices, .* flows checked|test result" | tee -a "$WORK/results.md"
done
