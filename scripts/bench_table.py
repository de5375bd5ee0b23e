"""Turns the raw lines of scripts/bench.sh into the tables of BENCHMARKS.md."""

import statistics
import sys
from collections import defaultdict

times_path, sizes_path = sys.argv[1], sys.argv[2]
runs = defaultdict(list)
for line in open(times_path):
    parts = line.split()
    if len(parts) == 4 and parts[0].startswith("x"):
        scale, tool, wall, rss = parts
        runs[(scale, tool)].append((float(wall), int(rss)))
sizes = {}
for line in open(sizes_path):
    parts = line.split()
    sizes[(parts[0], parts[1])] = [int(p) for p in parts[2:]]

scales = sorted({s for s, _ in runs}, key=lambda s: int(s[1:]))
tools = ["nsys2perfetto", "nsys-chrome", "floor-read", "floor-gzip", "stats", "nsys-stats"]
print("| input | tool | wall median (min-max) s | peak RSS median (min-max) MB | runs |")
print("|---|---|---|---|---|")
med = {}
for scale in scales:
    for tool in tools:
        r = runs.get((scale, tool))
        if not r:
            continue
        walls, rss = [w for w, _ in r], [m / 1024 for _, m in r]
        med[(scale, tool)] = (statistics.median(walls), statistics.median(rss))
        print(
            f"| {scale} | {tool} | {statistics.median(walls):.2f} ({min(walls):.2f}-{max(walls):.2f}) "
            f"| {statistics.median(rss):.0f} ({min(rss):.0f}-{max(rss):.0f}) | {len(r)} |"
        )
print()
print("| input | events | input MB | ours MB | bytes/event | nsys-chrome MB | speed vs nsys-chrome | RSS vs nsys-chrome | size vs nsys-chrome | time vs floor read |")
print("|---|---|---|---|---|---|---|---|---|---|")
for scale in scales:
    size_in, events = sizes[(scale, "input")]
    ours = sizes[(scale, "nsys2perfetto")][0]
    peer = sizes[(scale, "nsys-chrome")][0]
    o, p, f = med[(scale, "nsys2perfetto")], med[(scale, "nsys-chrome")], med[(scale, "floor-read")]
    print(
        f"| {scale} | {events:,} | {size_in / 1e6:.0f} | {ours / 1e6:.1f} | {ours / events:.1f} | {peer / 1e6:.1f} "
        f"| {p[0] / o[0]:.1f}x faster | {o[1] / p[1]:.3f} | {ours / peer:.2f} | {o[0] / f[0]:.2f}x |"
    )
if len(scales) >= 2:
    a, b = scales[0], scales[-1]
    factor = int(b[1:]) / int(a[1:])
    t = med[(b, "nsys2perfetto")][0] / med[(a, "nsys2perfetto")][0]
    m = med[(b, "nsys2perfetto")][1] / med[(a, "nsys2perfetto")][1]
    print()
    print(f"Scaling {a} -> {b} ({factor:.0f}x the events): time {t:.1f}x, peak RSS {m:.2f}x.")
