#!/usr/bin/env python3
"""search_vs_kt.py — tessera's search strategies against Kernel Tuner's on recorded GPU spaces.

Every recorded space (Kernel Tuner cache files, plain or gzip) is replayed through every
tessera strategy (`tessera-tune strategies compare --replay FILE --json`) and through Kernel
Tuner's strategies in simulation mode (`tune_kernel(..., simulation_mode=True, cache=FILE)`),
with the same budget and the same seeds. The figure is the evaluations needed to first reach
95% of the recorded optimum (optimum time / best time found >= 0.95), a miss counted as the
whole budget ("capped"), averaged over seeds. An evaluation is a distinct recorded
configuration, valid or failed, in both tools (Kernel Tuner's result list repeats
configurations it revisits; those are counted once).

Differences that remain: tessera's replay treats configurations the file did not record as
failures that cost nothing; Kernel Tuner is restricted to the recorded configurations (the
tuning scripts' restrictions are not in the files), so it never proposes the others. Kernel Tuner's strategies that stop early (its
genetic algorithm ends after a fixed number of generations) are scored on what they reached.

Prints one table per file (each strategy's capped mean and success rate), then per file the
best of each tool, their ratio, tessera's default strategy against Kernel Tuner's best, and the
geometric means; also the ratio when each tool's strategy is chosen on the odd seeds and scored
on the even ones (choosing the best on the same seeds it is scored on flatters both tools).
A benchmark, not a test."""
import argparse
import hashlib
import glob
import gzip
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time

REACH = 0.95
# Kernel Tuner 1.5's strategies that run on a recorded space without extra packages
# (brute_force is exhaustive search in its own order).
KT_STRATEGIES = ["basinhopping", "bayes_opt", "diff_evo", "dual_annealing", "firefly_algorithm",
                 "genetic_algorithm", "greedy_ils", "greedy_mls", "minimize", "mls",
                 "ordered_greedy_mls", "pso", "random_sample", "simulated_annealing"]


def load_cache(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def optimum_ms(cache):
    times = [e["time"] for e in cache["cache"].values()
             if isinstance(e.get("time"), (int, float)) and math.isfinite(e["time"])]
    return min(times)


def ours(tt, path, budget, seeds, strategies):
    cmd = [tt, "strategies", "compare", "--replay", path, "--budget", str(budget),
           "--repeats", str(seeds), "--seed", "1", "--json"]
    if strategies:
        cmd += ["--strategy", ",".join(strategies)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc["optimum_ms"], {s["strategy"]: [e or None for e in s["evals_to_95"]]
                               for s in doc["strategies"]}


def kt_one(job):
    """One Kernel Tuner run: (strategy, seed) on a plain-JSON copy of the cache."""
    plain, strategy, seed, budget, opt = job
    import numpy as np
    from kernel_tuner import tune_kernel
    cache = load_cache(plain)
    keys = cache["tune_params_keys"]
    recorded = set(cache["cache"])

    # The tuning script's restrictions are not in the file: Kernel Tuner searches exactly the
    # recorded configurations (a configuration it proposes outside them stops it).
    def restrict(p):
        return ",".join(str(p[k]) for k in keys) in recorded

    random.seed(seed)
    np.random.seed(seed)
    t0 = time.time()
    try:
        res, _ = tune_kernel(cache["kernel_name"], "__global__ void k() {}", cache["problem_size"],
                             [], cache["tune_params"], restrictions=restrict,
                             simulation_mode=True, cache=plain, strategy=strategy,
                             strategy_options={"max_fevals": budget}, verbose=False, quiet=True)
    except Exception as e:  # a strategy that cannot run here is reported, not fatal
        return strategy, seed, "error: %s" % str(e).splitlines()[0][:100], time.time() - t0
    seen = set()
    for r in res:
        key = tuple(r[k] for k in keys)
        if key in seen:
            continue
        seen.add(key)
        if len(seen) > budget:
            break
        t = r.get("time")
        if isinstance(t, (int, float)) and math.isfinite(t) and opt / t >= REACH:
            return strategy, seed, len(seen), time.time() - t0
    return strategy, seed, None, time.time() - t0


def kt_cache_path(cache_dir, path, budget):
    """Kernel Tuner's runs are deterministic for a file, version, strategy, seed and budget, and
    take an hour of CPU for the seven files: they are kept, keyed by all five, so that a rerun
    after a change to tessera's side measures only that side."""
    import kernel_tuner
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:16]
    return os.path.join(cache_dir, "kt%s-%s-b%d.json" % (kernel_tuner.__version__, digest, budget))


def run_kernel_tuner(path, opt, budget, seeds, strategies, workers, tmp, cache_dir):
    plain = os.path.join(tmp, os.path.basename(path).replace(".gz", ""))
    with open(plain, "w") as f:  # Kernel Tuner reads plain JSON, and may touch its cache file
        json.dump(load_cache(path), f)
    kept = {}
    store = kt_cache_path(cache_dir, path, budget) if cache_dir else None
    if store and os.path.exists(store):
        with open(store) as f:
            kept = json.load(f)
    out, errors, seconds = {s: [None] * seeds for s in strategies}, {}, {}
    jobs = []
    for s in strategies:
        for seed in range(1, seeds + 1):
            k = "%s/%d" % (s, seed)
            if k in kept:
                evals, dt = kept[k]
                seconds[s] = seconds.get(s, 0) + dt
                out[s][seed - 1] = evals
            else:
                jobs.append((plain, s, seed, budget, opt))
    with multiprocessing.Pool(workers) as pool:
        for s, seed, evals, dt in pool.imap_unordered(kt_one, jobs):
            seconds[s] = seconds.get(s, 0) + dt
            if isinstance(evals, str):
                errors[s] = evals
            else:
                out[s][seed - 1] = evals
                kept["%s/%d" % (s, seed)] = (evals, dt)
    if store and jobs:
        os.makedirs(cache_dir, exist_ok=True)
        with open(store + ".tmp", "w") as f:
            json.dump(kept, f)
        os.replace(store + ".tmp", store)
    for s in errors:
        del out[s]
    return out, errors, seconds


def capped(evals, budget):
    return sum(e if e is not None else budget for e in evals) / len(evals)


def best_of(runs, budget, idx=None):
    def score(s):
        e = runs[s] if idx is None else [runs[s][i] for i in idx]
        return capped(e, budget)
    name = min(runs, key=score)
    return name, score(name)


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tt", required=True, help="the tessera-tune binary")
    ap.add_argument("--data", required=True, help="a directory of recorded spaces, or a file")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--no-kt", action="store_true", help="tessera's strategies only")
    ap.add_argument("--kt-strategies", default=",".join(KT_STRATEGIES))
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--default", default="model", help="tessera's default strategy")
    ap.add_argument("--kt-cache", default="",
                    help="directory keeping Kernel Tuner's results between runs (none: rerun)")
    a = ap.parse_args()
    files = sorted(glob.glob(os.path.join(a.data, "*.json*"))) if os.path.isdir(a.data) \
        else [a.data]
    if not files:
        sys.exit("search_vs_kt: no recorded spaces in %s" % a.data)
    kt = not a.no_kt
    if kt:
        try:
            import kernel_tuner  # noqa: F401
        except ImportError:
            print("# Kernel Tuner is not installed for %s: tessera's strategies only" %
                  sys.executable)
            kt = False
    if kt:
        import kernel_tuner
        print("# Kernel Tuner %s, strategies: %s" % (kernel_tuner.__version__, a.kt_strategies))
    print("# budget %d evaluations, seeds 1..%d, figure: evaluations to %d%% of the optimum, "
          "a miss counted as %d" % (a.budget, a.seeds, REACH * 100, a.budget))
    summary = []
    odd = [i for i in range(a.seeds) if i % 2 == 0]   # seeds 1, 3, 5, ...
    even = [i for i in range(a.seeds) if i % 2 == 1]  # seeds 2, 4, 6, ...
    with tempfile.TemporaryDirectory(prefix="search-vs-kt-") as tmp:
        for path in files:
            name = os.path.basename(path).split(".json")[0]
            t0 = time.time()
            opt, mine = ours(a.tt, path, a.budget, a.seeds, None)
            ours_s = time.time() - t0
            cache_opt = optimum_ms(load_cache(path))
            theirs, errors, kt_s = ({}, {}, {})
            if kt:
                theirs, errors, kt_s = run_kernel_tuner(path, cache_opt, a.budget, a.seeds,
                                                        a.kt_strategies.split(","), a.workers,
                                                        tmp, a.kt_cache)
            print("\n## %s (optimum %.4g ms)" % (name, opt))
            print("%-26s %10s %9s" % ("strategy", "capped", "reached"))
            rows = [("tessera " + s, e) for s, e in mine.items()] + \
                   [("kt " + s, e) for s, e in theirs.items()]
            for label, e in sorted(rows, key=lambda r: capped(r[1], a.budget)):
                n = sum(x is not None for x in e)
                print("%-26s %10.1f %6d/%d" % (label, capped(e, a.budget), n, len(e)))
            for s, why in errors.items():
                print("%-26s %s" % ("kt " + s, why))
            row = {"file": name, "ours_s": ours_s, "kt_s": sum(kt_s.values())}
            row["ours_best"] = best_of(mine, a.budget)
            row["default"] = (a.default, capped(mine[a.default], a.budget))
            if theirs and a.seeds >= 2:
                row["kt_best"] = best_of(theirs, a.budget)
                # chosen on odd seeds, scored on even ones
                o = best_of(mine, a.budget, odd)[0]
                k = best_of(theirs, a.budget, odd)[0]
                row["held_out"] = (o, k, capped([mine[o][i] for i in even], a.budget) /
                                   capped([theirs[k][i] for i in even], a.budget))
            summary.append(row)

    print("\n## summary: capped evaluations to %d%%, lower is better" % (REACH * 100))
    if not any("kt_best" in r for r in summary):
        for r in summary:
            print("%-28s tessera best %-13s %7.1f   default %-13s %7.1f" % (
                r["file"], r["ours_best"][0], r["ours_best"][1], r["default"][0],
                r["default"][1]))
        return
    print("%-28s %-24s %-26s %7s %9s %11s" % ("file", "tessera best", "Kernel Tuner best",
                                              "ratio", "default", "held-out"))
    ratios, defaults, held = [], [], []
    for r in summary:
        ob, kb, d = r["ours_best"], r["kt_best"], r["default"]
        ratios.append(ob[1] / kb[1])
        defaults.append(d[1] / kb[1])
        held.append(r["held_out"][2])
        print("%-28s %-15s %7.1f  %-17s %7.1f  %7.2f %9.2f %11.2f" % (
            r["file"], ob[0], ob[1], kb[0], kb[1], ob[1] / kb[1], d[1] / kb[1],
            r["held_out"][2]))
    print("%-28s %-24s %-26s %7.2f %9.2f %11.2f" % ("geometric mean", "", "", geomean(ratios),
                                                    geomean(defaults), geomean(held)))
    print("ratio: tessera's best strategy on the file / Kernel Tuner's best; default: tessera's "
          "default (%s) / Kernel Tuner's best;\nheld-out: each tool's strategy chosen on the odd "
          "seeds, scored on the even ones" % a.default)
    print("time: tessera %.1f s, Kernel Tuner %.1f s (summed over its workers)" % (
        sum(r["ours_s"] for r in summary), sum(r["kt_s"] for r in summary)))


if __name__ == "__main__":
    main()
