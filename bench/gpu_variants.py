#!/usr/bin/env python3
"""gpu_variants.py DB — what each kernel design is worth, from the trials a GPU-kit tune stored.
For every gemm workload of the schedule cache: the fastest verified trial of each wgmma design
(schedule plain / coop / pingpong, one CTA a tile or persistent, direct or TMA-store epilogue,
cluster pair or none) in TFLOP/s, and its ratio to the fastest plain one-CTA-a-tile
direct-store trial. For every attention workload (causal or not): the fastest verified trial
of each design (FlashAttention-2 on mma.sync; on wgmma the consumer schedule coop / overlap /
pingpong, one CTA a query tile or persistent, direct or TMA-store epilogue) and its ratio to
the fastest mma.sync trial. All measured in the same tune. Designs no trial of which verified
are listed with what their trials ended in."""
import re
import sqlite3
import sys


def knob(point, name, default):
    m = re.search(name + r'\("?([a-z_0-9]+)"?\)', point)
    return m.group(1) if m else default


def grid(point):
    return "persistent" if knob(point, "persistent", "0") != "0" else "tile-per-cta"


def gemm_design(point):
    """The design knobs of a gemm point's text, with the defaults of points that omit them."""
    cl = re.search(r'cluster\(m=(\d+), n=(\d+)\)', point)
    cluster = "x".join(cl.groups()) if cl else "1x1"
    return (knob(point, "schedule", "plain"), grid(point), knob(point, "epilogue", "direct"),
            "cluster " + cluster)


def attn_design(point):
    mma = knob(point, "mma", "sync")
    return (mma, knob(point, "schedule", "coop"), grid(point), knob(point, "epilogue", "direct"))


def gemm_flops(dims, op):
    return 2.0 * int(dims["M"]) * int(dims["N"]) * int(dims["K"])


def attn_flops(dims, op):
    f = 4.0 * int(dims["B"]) * int(dims["H"]) * int(dims["S"]) ** 2 * int(dims["D"])
    return f / 2 if op.endswith("causal") else f


KINDS = [
    # ops, trial filter, design, its columns, the design it is compared with, flops
    (("gemm",), "t.schedule LIKE '%mma(\"wgmma\")%'", gemm_design,
     (("schedule", 8), ("grid", 12), ("store", 7), ("cluster", 11)), "plain",
     ("plain", "tile-per-cta", "direct", "cluster 1x1"), gemm_flops, "(wgmma)"),
    (("flash_attention", "flash_attention_causal"), "1", attn_design,
     (("mma", 5), ("schedule", 8), ("grid", 12), ("store", 6)), "sync", None, attn_flops,
     "(sync: FlashAttention-2)"),
]


def report(db, ops, where, design, cols, base_name, base_design, flops_of, note):
    marks = ",".join("?" * len(ops))
    rows = db.execute(
        "SELECT w.op, w.shape || ' ' || w.dtype, t.schedule, t.status, t.median_ns FROM trial t "
        "JOIN workload w ON w.id = t.workload_id WHERE w.op IN (%s) AND %s "
        "ORDER BY w.op, w.shape, w.dtype" % (marks, where), ops).fetchall()
    if not rows:
        print("%s designs: no trials in the cache" % ops[0])
        return
    by_workload = {}
    for op, shape, point, status, ns in rows:
        by_workload.setdefault((op, shape), []).append((point, status, ns))
    fmt = "  " + " ".join("%%-%ds" % w for _, w in cols) + " %10s %8s  %s"
    cols = tuple(name for name, _ in cols)
    for (op, shape), trials in by_workload.items():
        dims = dict(kv.split("=") for kv in shape.split(" ")[0].split(","))
        flops = flops_of(dims, op)
        best, failed = {}, {}
        for point, status, ns in trials:
            d = design(point)
            if status == "ok" and ns and ns > 0:
                if d not in best or ns < best[d][0]:
                    best[d] = (ns, point)
            else:
                failed.setdefault(d, set()).add(status)
        if base_design is not None:
            base = best.get(base_design)
        else:  # the fastest of the designs whose first knob is base_name
            base = min((v for d, v in best.items() if d[0] == base_name), default=None)
        print("%s %s: fastest verified trial of each design %s" % (op, shape, note))
        print(fmt % (cols + ("TFLOP/s", "vs " + base_name, "point")))
        for d, (ns, point) in sorted(best.items(), key=lambda kv: kv[1][0]):
            ratio = "%.2fx" % (base[0] / ns) if base else "-"
            print(fmt % (d + ("%.1f" % (flops / ns / 1e3), ratio, point)))
        for d, statuses in sorted(failed.items()):
            if d not in best:
                print(fmt % (d + ("-", "-", "no trial verified: " + ", ".join(sorted(statuses)))))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gpu_variants.py SCHEDULE_CACHE_DB")
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    for i, kind in enumerate(KINDS):
        if i:
            print()
        report(db, *kind)
    return 0


if __name__ == "__main__":
    sys.exit(main())
