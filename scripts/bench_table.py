#!/usr/bin/env python3
"""Print the median time per iteration of every criterion benchmark saved
under target/criterion (the latest run of each), one line per benchmark,
optionally only those whose id matches a regular expression. With --ratio
A B, also print each benchmark's median divided by that of its sibling
with implementation A replaced by B (same group, same parameter).

    cargo bench --bench store -- lease_renew
    python3 scripts/bench_table.py lease_renew
    python3 scripts/bench_table.py lease_renew --ratio store dashmap_cas
"""
import json
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "target", "criterion")


def medians():
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        if "estimates.json" in files and os.path.basename(dirpath) == "new":
            bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
            est = json.load(open(os.path.join(dirpath, "estimates.json")))
            out[bench["full_id"]] = est["median"]["point_estimate"]
    return out


def main(args):
    ratio = None
    if "--ratio" in args:
        i = args.index("--ratio")
        ratio = (args[i + 1], args[i + 2])
        args = args[:i] + args[i + 3:]
    pattern = re.compile(args[0]) if args else None
    all_ = medians()
    for full_id in sorted(all_):
        if pattern and not pattern.search(full_id):
            continue
        line = f"{full_id:<64} {all_[full_id]:>12.1f} ns"
        if ratio and f"/{ratio[0]}/" in full_id:
            other = all_.get(full_id.replace(f"/{ratio[0]}/", f"/{ratio[1]}/"))
            if other:
                line += f"   {ratio[0]}/{ratio[1]} = {all_[full_id] / other:.2f}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
