#!/usr/bin/env python3
"""perfgate_power.py — how often the perf gate cries wolf, and what it catches (a benchmark,
not a test: it takes minutes and its figures depend on the machine).

  bench/perfgate_power.py [--gate build/tools/tessera-perfgate] [--suite bench/gate-power.suite]
                          [--checks 20] [--trials 10] [--slowdowns 2,3,4,5,7,10]

1. records one baseline of the suite in a fresh database;
2. runs `check` --checks times against it with the build unchanged: every failure is a false
   alarm;
3. for each slowdown s%, runs `check --inject-slowdown s/100` --trials times (a real busy-wait
   of s% inside every timed sample of the current kernel) and counts the detections.
Prints the false-alarm count and, per slowdown, the detection rate and the median estimated
change; the smallest slowdown detected in every trial is what the gate reliably catches."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--gate", default=os.path.join(here, "..", "build", "tools", "tessera-perfgate"))
ap.add_argument("--suite", default=os.path.join(here, "gate-power.suite"))
ap.add_argument("--checks", type=int, default=20)
ap.add_argument("--trials", type=int, default=10)
ap.add_argument("--slowdowns", default="2,3,4,5,7,10")
args = ap.parse_args()

tmp = tempfile.mkdtemp(prefix="perfgate-power-")
db = os.path.join(tmp, "gate.db")


def gate(*a):
    t0 = time.time()
    p = subprocess.run([args.gate, *a, "--db", db, "--suite", args.suite], capture_output=True,
                       text=True)
    if p.returncode not in (0, 1):
        sys.exit("perfgate_power: %s failed (%d):\n%s" % (a[0], p.returncode, p.stderr))
    return p, time.time() - t0


def changes(stdout):
    """The change column of every workload row: '+6.1%' -> 0.061."""
    return [float(m) / 100 for m in re.findall(r"\s([+-]\d+\.\d)%", stdout)]


p, secs = gate("baseline")
print(p.stdout.strip())
print("baseline: %.0f s" % secs, flush=True)

alarms, est, total = 0, [], 0.0
for i in range(args.checks):
    p, secs = gate("check", "--no-store")
    total += secs
    alarms += p.returncode == 1
    est += changes(p.stdout)
    if p.returncode == 1:
        print("false alarm in check %d:\n%s" % (i + 1, p.stdout), flush=True)
print("unchanged build: %d of %d checks failed (false alarms); estimated change median %+.2f%%, "
      "range %+.2f%% .. %+.2f%%; %.1f s per check" % (
          alarms, args.checks, 100 * statistics.median(est), 100 * min(est), 100 * max(est),
          total / args.checks), flush=True)

print("%9s  %9s  %16s" % ("slowdown", "detected", "median estimate"))
caught = []
for s in [float(x) for x in args.slowdowns.split(",")]:
    hits, est = 0, []
    for _ in range(args.trials):
        p, _secs = gate("check", "--no-store", "--inject-slowdown", str(s / 100))
        hits += p.returncode == 1
        est += changes(p.stdout)
    print("%8.1f%%  %4d/%-4d  %+15.2f%%" % (s, hits, args.trials, 100 * statistics.median(est)),
          flush=True)
    caught.append((s, hits == args.trials))
# Reliable: caught in every trial at this slowdown and at every larger one measured.
reliable = None
for s, all_hit in reversed(caught):
    if not all_hit:
        break
    reliable = s
print("smallest slowdown caught in every trial (and every larger one): %s" % (
    "%.1f%%" % reliable if reliable else "none"))
