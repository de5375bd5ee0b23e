"""Turns `perf script | inferno-collapse-perf --tid` into a flame graph's input
with threads named by role, and prints where the CPU goes as a table.

    python3 scripts/profile_table.py FOLDED_WITH_TIDS ROLE_FOLDED_OUT
"""

import collections
import re
import sys


def strip_generics(frame):
    """`f<T, U>::g` -> `f::g`: generic arguments name other functions' types."""
    out, depth, prev = [], 0, ""
    for ch in frame:
        if ch == "<" and (depth > 0 or (prev and (prev.isalnum() or prev in "_:"))):
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(ch)
        prev = ch
    return "".join(out)


stacks = []
for line in open(sys.argv[1]):
    stack, n = line.rstrip().rsplit(" ", 1)
    frames = stack.split(";")
    stacks.append((frames[0], [strip_generics(f) for f in frames[1:]], int(n)))


def has(frames, *keys):
    return any(k in f for f in frames for k in keys)


# A thread's role, from its name (readers inherit their parent's) and stacks.
readers = {t for t, fr, _ in stacks if has(fr, "merge_in_time_order")}
PARTS = {"nvtx": "NVTX", "cpu": "other parts"}


def role(thread):
    comm = re.sub(r"-\?/\d+$", "", thread)
    if comm == "gzip":
        return "gzip"
    part = PARTS.get(comm, "CUDA")
    return f"{part} reader" if thread in readers else f"{part} conversion"


ALLOC = ("malloc", "free", "realloc", "_int_", "__rust_alloc", "__rust_dealloc", "unlink_chunk")
total = sum(n for _, _, n in stacks)
where = collections.Counter()
with open(sys.argv[2], "w") as out:
    for thread, fr, n in stacks:
        r = role(thread)
        out.write(";".join([r] + fr) + f" {n}\n")
        leaf = fr[-1] if fr else ""
        if r == "gzip":
            what = "deflate (libdeflate)"
        elif r.endswith("reader"):
            if has(fr, "sqlite3"):
                what = "SQLite: step, VDBE, B-tree, column values"
            elif any(a in leaf for a in ALLOC):
                what = "allocation"
            elif has(fr, "nsys::select::", "rusqlite"):
                what = "column accessors (nsys::select, rusqlite)"
            else:
                what = "decoding rows, merging tables in time order, batches"
        elif has(fr, "projection::"):
            what = "NVTX GPU projection"
        elif has(fr, "Metadata::load", "nvtx_last_time", "sqlite3"):
            what = "queries before the stream (metadata, last NVTX time)"
        elif has(fr, "perfetto::intern::"):
            what = "interning names and arg strings"
        elif has(fr, "nsys2perfetto::perfetto::"):
            what = "encoding packets, lanes, spills"
        elif has(fr, "convert::"):
            what = "mapping rows to slices, args and flows"
        else:
            what = "start, exit, waiting on channels"
        where[(r, what)] += n

print("| thread | what | share of CPU |")
print("|---|---|---|")
for (r, what), n in sorted(where.items(), key=lambda x: -x[1]):
    if n / total >= 0.002:
        print(f"| {r} | {what} | {100 * n / total:.1f}% |")
by_role = collections.Counter()
for (r, _), n in where.items():
    by_role[r] += n
print()
print("| thread | share of CPU |")
print("|---|---|")
for r, n in by_role.most_common():
    print(f"| {r} | {100 * n / total:.1f}% |")
