#!/usr/bin/env python3
"""Run the hot-read bench several times and print what the records issue
judges it by, each a median over the runs, with the runs' own figures:

- how one hot record scales: two threads' reads per second over one
  thread's, for the lease, the listing, the presence record and each floor
  (`benches/hot.rs` says what the floors are);
- each collection's scaling over the sequence-checked floor's, in the same
  run;
- one thread's read of a lease over a plain HashMap get by id, and of a
  listing or presence record over one by (tenant, name);
- one reading of the production clock over the get by id (every store
  read takes one; no map read does), and each collection's read over the
  get plus that reading;
- one reading of a `CoarseClock` over the get by id, and one thread's
  read of each collection in a store on that clock over its get.

    python3 scripts/hot_table.py [--runs 5] [criterion args]

Extra arguments go to criterion (default: --warm-up-time 1
--measurement-time 2).
"""
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "target", "criterion")
KINDS = ["lease", "listing", "presence"]
FLOORS = ["seq", "papaya", "dashmap", "mutex"]


def medians():
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        if ("estimates.json" in files and "benchmark.json" in files
                and os.path.basename(dirpath) == "new"):
            bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
            if bench["group_id"].startswith("read_hot/"):
                est = json.load(open(os.path.join(dirpath, "estimates.json")))
                out[bench["full_id"]] = est["median"]["point_estimate"]
    return out


def figures(m):
    """Ratios of one run: ns per iteration, where an iteration of `2t` is
    one read on each of two threads."""
    out = {}

    def scaling(one, two):
        return 2 * m[one] / m[two]

    for kind in KINDS:
        out[f"{kind} hot 2t/1t"] = scaling(
            f"read_hot/{kind}/hot/1t", f"read_hot/{kind}/hot/2t")
    for floor in FLOORS:
        out[f"floor {floor} hot 2t/1t"] = scaling(
            f"read_hot/floor/{floor}/hot/1t", f"read_hot/floor/{floor}/hot/2t")
    for kind in KINDS:
        out[f"{kind} scaling / seq floor's"] = (
            out[f"{kind} hot 2t/1t"] / out["floor seq hot 2t/1t"])
    out["lease 1t / hashbrown get by id"] = (
        m["read_hot/lease/hot/1t"] / m["read_hot/floor/hashbrown_id/1t"])
    for kind in ["listing", "presence"]:
        out[f"{kind} 1t / hashbrown get by name"] = (
            m[f"read_hot/{kind}/hot/1t"] / m["read_hot/floor/hashbrown_name/1t"])
    clock = m["read_hot/floor/clock/1t"]
    out["clock reading / hashbrown get by id"] = (
        clock / m["read_hot/floor/hashbrown_id/1t"])
    out["lease 1t / (get by id + clock)"] = (
        m["read_hot/lease/hot/1t"] / (m["read_hot/floor/hashbrown_id/1t"] + clock))
    for kind in ["listing", "presence"]:
        out[f"{kind} 1t / (get by name + clock)"] = (
            m[f"read_hot/{kind}/hot/1t"]
            / (m["read_hot/floor/hashbrown_name/1t"] + clock))
    if "read_hot/coarse_clock/lease/hot/1t" in m:
        out["coarse clock reading / hashbrown get by id"] = (
            m["read_hot/floor/coarse_clock/1t"] / m["read_hot/floor/hashbrown_id/1t"])
        out["lease 1t, coarse clock / get by id"] = (
            m["read_hot/coarse_clock/lease/hot/1t"] / m["read_hot/floor/hashbrown_id/1t"])
        for kind in ["listing", "presence"]:
            out[f"{kind} 1t, coarse clock / get by name"] = (
                m[f"read_hot/coarse_clock/{kind}/hot/1t"]
                / m["read_hot/floor/hashbrown_name/1t"])
    return out


def main(args):
    runs = 5
    if "--runs" in args:
        i = args.index("--runs")
        runs = int(args[i + 1])
        args = args[:i] + args[i + 2:]
    extra = args or ["--warm-up-time", "1", "--measurement-time", "2"]
    per_run = []
    for run in range(runs):
        print(f"run {run + 1} of {runs}", file=sys.stderr)
        subprocess.run(
            ["cargo", "bench", "--bench", "hot", "--", "read_hot/", *extra],
            check=True, stdout=subprocess.DEVNULL)
        per_run.append(figures(medians()))
    for name in per_run[0]:
        values = [r[name] for r in per_run]
        runs_text = ", ".join(f"{v:.2f}" for v in values)
        print(f"{name:40} {statistics.median(values):6.2f}x  ({runs_text})")


if __name__ == "__main__":
    main(sys.argv[1:])
