#!/usr/bin/env python3
"""Compare two builds on the same benches, alternating them run by run.

    python3 scripts/bench_ab.py BASE [--bench store] [--runs 3] [--stat median|fastest] REGEX [criterion args]

BASE is any git revision; the other side is the work tree as it is now
(uncommitted changes included). Both bench binaries are built first
(BASE in a temporary worktree, into `target/bench_ab`), then run
alternately, BASE first, `--runs` times each, with criterion's results of
every run kept apart. Printed per benchmark: each side's median of the
per-run medians (ns per iteration) and the median of the per-run ratios
(work tree / BASE) with the runs' own ratios, as ADR 0012 judges targets.
With `--stat fastest` each run's figure is its fastest sample (time per
iteration) instead of criterion's median: when the machine's own load
comes and goes within a run, the fastest sample is what the code costs
with the least of it added (noise only ever adds time).

On a shared machine a bench that neither build changes is the noise
floor of the same hour: include one in REGEX and read the others against
it. Extra arguments go to criterion, e.g. `--warm-up-time 1
--measurement-time 3`.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def build(tree, target_dir, bench):
    """Builds the bench binary in `tree` (into `target_dir`, or the tree's
    own target directory if None) and returns its path."""
    env = dict(os.environ)
    if target_dir:
        env["CARGO_TARGET_DIR"] = target_dir
    out = subprocess.run(
        ["cargo", "bench", "--bench", bench, "--no-run", "--message-format=json"],
        cwd=tree,
        env=env,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout.decode()
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == bench:
            if msg.get("executable"):
                return msg["executable"]
    sys.exit(f"no executable for bench {bench} in {tree}")


def figures(home, stat):
    """Per benchmark id under `home`: criterion's median, or (`fastest`)
    the fastest sample's time per iteration."""
    out = {}
    for dirpath, _, files in os.walk(home):
        if "estimates.json" in files and os.path.basename(dirpath) == "new":
            with open(os.path.join(dirpath, "benchmark.json")) as f:
                full_id = json.load(f)["full_id"]
            if stat == "fastest":
                with open(os.path.join(dirpath, "sample.json")) as f:
                    sample = json.load(f)
                out[full_id] = min(t / n for t, n in zip(sample["times"], sample["iters"]))
            else:
                with open(os.path.join(dirpath, "estimates.json")) as f:
                    out[full_id] = json.load(f)["median"]["point_estimate"]
    return out


def main(args):
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    base, args = args[0], args[1:]
    bench, runs, stat = "store", 3, "median"
    while args and args[0] in ("--bench", "--runs", "--stat"):
        if args[0] == "--bench":
            bench = args[1]
        elif args[0] == "--stat":
            stat = args[1]
            if stat not in ("median", "fastest"):
                sys.exit("--stat is median or fastest")
        else:
            runs = int(args[1])
            if runs < 1:
                sys.exit("--runs needs at least 1")
        args = args[2:]
    if not args:
        sys.exit("a REGEX of benchmark ids is needed")
    regex, extra = args[0], args[1:]
    known = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", base + "^{commit}"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )
    if known.returncode != 0:
        sys.exit(f"{base} names no commit here")

    work = tempfile.mkdtemp(prefix="bench_ab.")
    tree = os.path.join(work, "base")
    try:
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", tree, base], cwd=ROOT, check=True
        )
        binaries = {}
        # The base builds into a target directory kept between calls (its
        # dependencies are built once), the work tree into its own.
        kept = os.path.join(ROOT, "target", "bench_ab")
        for label, where, target_dir in (("base", tree, kept), ("work tree", ROOT, None)):
            built = build(where, target_dir, bench)
            binaries[label] = shutil.copy(built, os.path.join(work, label.replace(" ", "-")))
        results = {label: [] for label in binaries}
        for run in range(1, runs + 1):
            for label, binary in binaries.items():
                home = os.path.join(work, f"criterion-{label.replace(' ', '-')}-{run}")
                print(f"run {run}/{runs}: {label}", file=sys.stderr)
                done = subprocess.run(
                    [binary, "--bench", regex, "--noplot", *extra],
                    cwd=ROOT,
                    env={**os.environ, "CRITERION_HOME": home},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                if done.returncode != 0:
                    sys.stderr.write(done.stderr.decode(errors="replace"))
                    sys.exit(f"{label}'s bench binary failed ({done.returncode})")
                results[label].append(figures(home, stat))
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=ROOT)
        shutil.rmtree(work, ignore_errors=True)

    a, b = results["base"], results["work tree"]
    ids = sorted(set.intersection(*(set(r) for r in a + b)))
    print(f"{'benchmark':<58} {'base ns':>10} {'tree ns':>10}  tree/base (per run)")
    for full_id in ids:
        xs = [r[full_id] for r in a]
        ys = [r[full_id] for r in b]
        ratios = [y / x for x, y in zip(xs, ys)]
        runs_text = ", ".join(f"{r:.2f}" for r in ratios)
        print(
            f"{full_id:<58} {statistics.median(xs):>10.1f} {statistics.median(ys):>10.1f}"
            f"  {statistics.median(ratios):.2f} ({runs_text})"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
