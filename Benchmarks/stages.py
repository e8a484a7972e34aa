#!/usr/bin/env python3
"""Where the time of a change goes, stage by stage, from the stage marks of a writer and an observer.

Build prefs-bench with the marks compiled in, run a measurement, then read the two processes' marks:

    swift build -c release --product prefs-bench --scratch-path .build-stages -Xswiftc -DSHAREDPREFS_STAGES
    mkdir -p /tmp/stages && SHAREDPREFS_STAGES=/tmp/stages .build-stages/release/prefs-bench --only 3
    python3 Benchmarks/stages.py /tmp/stages/<bench pid>.txt /tmp/stages/<observer pid>.txt

Each process writes `<pid>.txt` at its end: one `<mark> <CLOCK_MONOTONIC ns>` line per mark (see
Sources/SharedPrefs/Internal/Stages.swift). The bench is the writer; pass the observer of the row to
study (the files are in the order the processes ended). For each change the writer made while that
observer ran, the script follows the marks in order and prints each stage's p50, p90 and p99 in µs.
"""
import bisect
import sys

WRITER = [("S", "set → the writer's job starts (a GCD hop)"),
          ("W", "open the directory"),
          ("D", "take the lock"),
          ("L", "confirm the file"),
          ("C", "merge, encode, take the temporary file"),
          ("O", "write the data"),
          ("w", "link it in"),
          ("B", "rename")]
OBSERVER = [("N", "→ inotify read returns, counted from the rename's start"),
            ("R", "events handled → re-read scheduled"),
            ("X", "open the directory and the file"),
            ("Y", "read the file"),
            ("P", "compare, decode what changed, adopt"),
            ("H", "→ the observer's handler runs (its queue)")]


def load(path):
    marks = {}
    for line in open(path):
        mark, time = line.split()
        marks.setdefault(mark, []).append(int(time))
    return marks


def after(times, t):
    i = bisect.bisect_left(times, t)
    return times[i] if i < len(times) else None


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main(writer_path, observer_path):
    w, o = load(writer_path), load(observer_path)
    handled = o.get("H", [])
    if not handled:
        sys.exit(f"{observer_path} has no handler marks: is it an observer's file?")
    rows = []
    for sent in w.get("S", []):
        # The changes this observer saw: its first arrives within a few ms of the first set.
        if not handled[0] - 50_000_000 <= sent <= handled[-1]:
            continue
        times = [sent]
        for mark, _ in WRITER[1:]:
            times.append(after(w.get(mark, []), times[-1]))
        renamed = times[-1]
        if renamed is None:
            continue
        times.append(after(w.get("A", []), renamed))
        seen = [renamed]
        for mark, _ in OBSERVER:
            seen.append(after(o.get(mark, []), seen[-1]))
        # A change the observer saw is one it handled within 100 ms (the longest row's gap).
        if None in times or None in seen or seen[-1] - sent > 100_000_000:
            continue
        rows.append([b - a for a, b in zip(times, times[1:])] + [b - a for a, b in zip(seen, seen[1:])] + [seen[-1] - sent])
    names = [d for _, d in WRITER] + [d for _, d in OBSERVER] + ["total: set → handler"]
    print(f"{len(rows)} changes; µs")
    print("| stage | p50 | p90 | p99 |\n|---|---|---|---|")
    for i, name in enumerate(names):
        column = [r[i] / 1000 for r in rows]
        print(f"| {name} | {percentile(column, .5):.0f} | {percentile(column, .9):.0f} | {percentile(column, .99):.0f} |")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
