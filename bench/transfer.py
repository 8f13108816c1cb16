#!/usr/bin/env python3
"""Transfer across devices: every recorded space whose kernel was recorded on other devices too,
replayed with no prior, with each other device's recording as prior, and with all of them, by
`tessera-tune strategies compare --replay FILE --prior OTHER ...`. Prints, per strategy, the
evaluations to 95% of the optimum (mean with a miss counted as the budget, median, runs that
reached it) and the largest median with one prior and with all."""
import argparse
import concurrent.futures as cf
import glob
import json
import os
import statistics
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--tt", required=True, help="the tessera-tune binary")
    ap.add_argument("--data", required=True, help="directory of recordings KERNEL_DEVICE.json[.gz]")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--strategies", default="model,evolutionary")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()

    by_kernel = {}
    for f in sorted(glob.glob(os.path.join(a.data, "*.json*"))):
        base = os.path.basename(f).split(".json")[0]
        kernel, _, device = base.partition("_")
        by_kernel.setdefault(kernel, []).append((device, f))
    jobs = []
    for kernel, files in sorted(by_kernel.items()):
        if len(files) < 2:
            continue
        for dev, f in files:
            others = [(d, g) for d, g in files if g != f]
            for prior in [[]] + [[o] for o in others] + ([others] if len(others) > 1 else []):
                for s in a.strategies.split(","):
                    jobs.append((s, kernel, dev, f, prior))
    if not jobs:
        sys.exit("transfer: no kernel in %s is recorded on two devices" % a.data)

    def run(job):
        s, kernel, dev, f, prior = job
        cmd = [a.tt, "strategies", "compare", "--replay", f, "--budget", str(a.budget),
               "--repeats", str(a.seeds), "--strategy", s, "--json"]
        for _, g in prior:
            cmd += ["--prior", g]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit("transfer: %s failed: %s" % (" ".join(cmd), p.stderr.strip()))
        e = json.loads(p.stdout)["strategies"][0]["evals_to_95"]
        capped = [x if x is not None else a.budget for x in e]
        return (sum(capped) / len(capped), statistics.median(capped),
                sum(1 for x in e if x is not None))

    with cf.ThreadPoolExecutor(a.workers) as ex:
        results = list(ex.map(run, jobs))

    print("# bench/transfer.sh --seeds %d --budget %d: evaluations to 95%% of the optimum, "
          "seeds 1..%d, a miss counted as %d" % (a.seeds, a.budget, a.seeds, a.budget))
    for s in a.strategies.split(","):
        print("\n## %s\n" % s)
        print("| kernel | target | prior | mean | median | reached |")
        print("|---|---|---|---|---|---|")
        worst = {1: 0, 2: 0}
        for (js, kernel, dev, f, prior), (mean, med, n) in zip(jobs, results):
            if js != s:
                continue
            names = " + ".join(d for d, _ in prior) or "none"
            print("| %s | %s | %s | %.1f | %g | %d/%d |" % (kernel, dev, names, mean, med, n,
                                                             a.seeds))
            if prior:
                k = 1 if len(prior) == 1 else 2
                worst[k] = max(worst[k], med)
        print("\nlargest median: %g with one other device as prior, %g with all the others"
              % (worst[1], worst[2]))


if __name__ == "__main__":
    main()
