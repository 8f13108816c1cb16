#!/usr/bin/env python3
"""gpu_variants.py DB — what each gemm kernel design is worth, from the trials a GPU-kit tune
stored: for every gemm workload of the schedule cache, the fastest verified trial of each
design (schedule plain / coop / pingpong, one CTA a tile or persistent, direct or TMA-store
epilogue, cluster pair or none) in TFLOP/s, and its ratio to the fastest plain one-CTA-a-tile
direct-store trial, all measured in the same tune. Designs no trial of which verified are
listed with what their trials ended in."""
import re
import sqlite3
import sys


def design(point):
    """The design knobs of a gemm point's text, with the defaults of points that omit them."""
    def knob(name, default):
        m = re.search(name + r'\("?([a-z_0-9]+)"?\)', point)
        return m.group(1) if m else default
    cl = re.search(r'cluster\(m=(\d+), n=(\d+)\)', point)
    cluster = "x".join(cl.groups()) if cl else "1x1"
    persistent = knob("persistent", "0") != "0"
    return (knob("schedule", "plain"), "persistent" if persistent else "tile-per-cta",
            knob("epilogue", "direct"), "cluster " + cluster)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_variants.py SCHEDULE_CACHE_DB")
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    rows = db.execute(
        "SELECT w.shape || ' ' || w.dtype, t.schedule, t.status, t.median_ns FROM trial t "
        "JOIN workload w ON w.id = t.workload_id WHERE w.op = 'gemm' "
        "AND t.schedule LIKE '%mma(\"wgmma\")%' ORDER BY w.shape, w.dtype").fetchall()
    if not rows:
        print("gemm designs: no wgmma gemm trials in the cache")
        return 0
    by_shape = {}
    for shape, point, status, ns in rows:
        by_shape.setdefault(shape, []).append((point, status, ns))
    for shape, trials in by_shape.items():
        dims = dict(kv.split("=") for kv in shape.split(" ")[0].split(","))
        flops = 2.0 * int(dims["M"]) * int(dims["N"]) * int(dims["K"])
        best, failed = {}, {}
        for point, status, ns in trials:
            d = design(point)
            if status == "ok" and ns and ns > 0:
                if d not in best or ns < best[d][0]:
                    best[d] = (ns, point)
            else:
                failed.setdefault(d, set()).add(status)
        base = best.get(("plain", "tile-per-cta", "direct", "cluster 1x1"))
        print("gemm %s: fastest verified trial of each design (wgmma)" % shape)
        print("  %-8s %-12s %-7s %-11s %10s %8s  %s" %
              ("schedule", "grid", "store", "cluster", "TFLOP/s", "vs plain", "point"))
        for d, (ns, point) in sorted(best.items(), key=lambda kv: kv[1][0]):
            ratio = "%.2fx" % (base[0] / ns) if base else "-"
            print("  %-8s %-12s %-7s %-11s %10.1f %8s  %s" %
                  (d + (flops / ns / 1e3, ratio, point)))
        for d, statuses in sorted(failed.items()):
            if d not in best:
                print("  %-8s %-12s %-7s %-11s %10s %8s  no trial verified: %s" %
                      (d + ("-", "-", ", ".join(sorted(statuses)))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
