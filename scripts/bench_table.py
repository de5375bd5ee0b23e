"""Turns the raw lines of scripts/bench.sh into the tables of BENCHMARKS.md."""

import statistics
import sys
from collections import defaultdict

times_path, sizes_path = sys.argv[1], sys.argv[2]
runs = defaultdict(list)
cpu = defaultdict(list)
for line in open(times_path):
    parts = line.split()
    if len(parts) in (4, 6):
        scale, tool, wall, rss = parts[:4]
        runs[(scale, tool)].append((float(wall), int(rss)))
        if len(parts) == 6:
            cpu[(scale, tool)].append(float(parts[4]) + float(parts[5]))
sizes = {}
for line in open(sizes_path):
    parts = line.split()
    sizes[(parts[0], parts[1])] = [int(p) for p in parts[2:]]

def scaled(label):
    """The copies of a scaled input (x50: 50), or None for another input (nvtx)."""
    return int(label[1:]) if label[:1] == "x" and label[1:].isdigit() else None


# The scaled inputs by size, then the others (the NVTX-heavy one).
scales = sorted({s for s, _ in runs}, key=lambda s: (scaled(s) is None, scaled(s) or 0, s))
tools = ["nsys2perfetto", "nsys-chrome", "floor-read", "floor-gzip", "one-core", "stats", "report", "nsys-stats"]
print("| input | tool | wall median (min-max) s | CPU (user+sys) median s | peak RSS median (min-max) MB | runs |")
print("|---|---|---|---|---|---|")
med = {}


def cpu_median(scale, tool):
    c = cpu.get((scale, tool))
    return f"{statistics.median(c):.2f}" if c else "-"


for scale in scales:
    for tool in tools:
        r = runs.get((scale, tool))
        if not r:
            continue
        walls, rss = [w for w, _ in r], [m / 1024 for _, m in r]
        med[(scale, tool)] = (statistics.median(walls), statistics.median(rss))
        print(
            f"| {scale} | {tool} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) "
            f"| {cpu_median(scale, tool)} | {statistics.median(rss):.0f} ({min(rss):.0f}-{max(rss):.0f}) | {len(r)} |"
        )
print()
print("| input | events | input MB | ours MB | bytes/event | nsys-chrome MB | speed vs nsys-chrome | RSS vs nsys-chrome | size vs nsys-chrome | time vs floor read | CPU vs floor read |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def cpu_ratio(scale):
    ours, floor = cpu.get((scale, "nsys2perfetto")), cpu.get((scale, "floor-read"))
    if not ours or not floor:
        return "-"
    return f"{statistics.median(ours) / statistics.median(floor):.2f}x"


for scale in scales:
    size_in, events = sizes[(scale, "input")]
    ours = sizes[(scale, "nsys2perfetto")][0]
    peer = sizes[(scale, "nsys-chrome")][0]
    o, p, f = med[(scale, "nsys2perfetto")], med[(scale, "nsys-chrome")], med[(scale, "floor-read")]
    print(
        f"| {scale} | {events:,} | {size_in / 1e6:.0f} | {ours / 1e6:.1f} | {ours / events:.1f} | {peer / 1e6:.1f} "
        f"| {p[0] / o[0]:.1f}x faster | {o[1] / p[1]:.3f} | {ours / peer:.2f} | {o[0] / f[0]:.2f}x "
        f"| {cpu_ratio(scale)} |"
    )
copies = [s for s in scales if scaled(s)]
if len(copies) >= 2:
    a, b = copies[0], copies[-1]
    factor = scaled(b) / scaled(a)
    t = med[(b, "nsys2perfetto")][0] / med[(a, "nsys2perfetto")][0]
    m = med[(b, "nsys2perfetto")][1] / med[(a, "nsys2perfetto")][1]
    print()
    print(f"Scaling {a} -> {b} ({factor:.0f}x the events): time {t:.1f}x, peak RSS {m:.2f}x.")

one = [s for s in scales if (s, "one-core") in med]
if one:
    print()
    print("| input | wall, 1 core s | wall, all cores s | speedup | CPU, 1 core s | CPU, all cores s | CPU per event, all cores ns |")
    print("|---|---|---|---|---|---|---|")
    for scale in one:
        events = sizes[(scale, "input")][1]
        w1, wn = med[(scale, "one-core")][0], med[(scale, "nsys2perfetto")][0]
        c1 = statistics.median(cpu[(scale, "one-core")])
        cn = statistics.median(cpu[(scale, "nsys2perfetto")])
        print(
            f"| {scale} | {w1:.2f} | {wn:.2f} | {w1 / wn:.2f}x | {c1:.2f} | {cn:.2f} | {cn / events * 1e9:.0f} |"
        )
loads = [s for s in scales if (s, "load-nsys2perfetto") in runs]
if loads:
    print()
    print("Time to open: the trace loaded by trace_processor (`trace_processor_shell query TRACE "
          "\"select count(*) from slice\"`).")
    print()
    print("| input | trace | slices | wall median s | CPU median s | peak RSS median MB | CPU per slice us | RSS per slice bytes |")
    print("|---|---|---|---|---|---|---|---|")
    per = {}
    for scale in loads:
        for tool in ["nsys2perfetto", "nsys-chrome"]:
            r = runs[(scale, "load-" + tool)]
            slices = sizes[(scale, "slices-" + tool)][0]
            wall = statistics.median(w for w, _ in r)
            rss = statistics.median(m * 1024 for _, m in r)
            c = statistics.median(cpu[(scale, "load-" + tool)])
            per[(scale, tool)] = (c / slices, rss / slices)
            print(
                f"| {scale} | {tool} | {slices:,} | {wall:.2f} | {c:.2f} | {rss / 1e6:.0f} "
                f"| {c / slices * 1e6:.2f} | {rss / slices:.0f} |"
            )
        o, p = per[(scale, "nsys2perfetto")], per[(scale, "nsys-chrome")]
        print(
            f"| {scale} | ours vs JSON, per slice | | | | | {p[0] / o[0]:.2f}x faster | {o[1] / p[1]:.2f} of the memory |"
        )
