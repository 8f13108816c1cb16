#!/usr/bin/env python3
"""test-studio-export.py — `tessera-studio --export` end to end, without a display: a real CPU
tune and a real profile into a fresh cache, then every view exported through the real binary
and its content checked against the cache (not pixels): one roofline mark per verified trial,
one ceiling per roof stored in the device row, one history line per tuning run, the timeline's
events those of the stored profile and of the Chrome trace, the lowering's four stages; PNGs
decode to the asked size; bad input fails with a message naming it. Prints TAP."""
import json
import os
import re
import sqlite3
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET

from taputil import scratch

TT, STUDIO, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = scratch("tessera-studio-export-")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"))
ENV.pop("DISPLAY", None)  # exports need no display
ENV.pop("WAYLAND_DISPLAY", None)
DB = os.path.join(TMP, "s.db")
SHAPE = ["gemm", "--shape", "M=64,N=64,K=64", "--db", DB]
SVGNS = "{http://www.w3.org/2000/svg}"
count = 0


def ok(cond, what):
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


def run(prog, *args):
    p = subprocess.run([prog, *args], env=ENV, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (
            p.returncode, args, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def rows(sql, *params):
    con = sqlite3.connect(DB)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def export(view, out, *extra):
    return run(STUDIO, DB, "--export", view, "--output", os.path.join(TMP, out), *extra)


def svg(out):
    return ET.parse(os.path.join(TMP, out)).getroot()


def groups(root, cls_prefix):
    return [g for g in root.iter(SVGNS + "g")
            if (g.get("class") or "").startswith(cls_prefix)]


def title(g):
    t = g.find(SVGNS + "title")
    return t.text if t is not None else ""


# ---- a real cache: two tuning runs, a profile ----
ok(run(TT, "tune", *SHAPE, "--budget", "6", "--strategy", "random").returncode == 0,
   "a CPU tune of gemm 64^3 fills a fresh cache")
ok(run(TT, "tune", *SHAPE, "--budget", "10", "--strategy", "annealing").returncode == 0,
   "a second tuning run with another strategy")
trace = os.path.join(TMP, "trace.json")
ok(run(TT, "profile", *SHAPE, "--output", trace).returncode == 0, "a profiled run is stored")
wid = rows("SELECT id FROM workload")[0][0]

# ---- roofline ----
p = export("roofline", "roof.svg", "--workload", str(wid))
ok(p.returncode == 0, "export roofline exits 0")
root = svg("roof.svg")
verified = rows("SELECT id FROM trial WHERE status = 'ok' AND json_extract(metrics, "
                "'$.roofline.intensity') IS NOT NULL")
marks = groups(root, "trial ")
ok(len(marks) == len(verified) and len(verified) > 0,
   "one roofline mark per verified trial (%d marks, %d trials)" % (len(marks), len(verified)))
ok(sorted(int(g.get("id").split("-")[1]) for g in marks) == sorted(r[0] for r in verified),
   "the marks' ids are the verified trials' ids")
ok(all(g.get("class") == "trial ok" for g in marks), "every mark is of class 'trial ok'")
peaks = json.loads(rows("SELECT peaks FROM device")[0][0])
roofs = set(peaks["compute"]) | set(peaks["memory"])
ceil_ids = {g.get("id")[len("ceiling-"):] for g in groups(root, "ceiling")}
ok(ceil_ids == roofs, "one ceiling per roof in the device row (%s)" % sorted(roofs))
best_sched = rows("SELECT t.schedule FROM best b JOIN trial t ON t.id = b.trial_id")[0][0]
ok(any(best_sched in title(g) for g in marks), "a mark's title carries the best schedule")
text = "".join(t.text or "" for t in root.iter(SVGNS + "text"))
ok("arithmetic intensity" in text and "(FLOP/s)" in text, "the axes are labelled")

# ---- history ----
ok(export("history", "hist.svg").returncode == 0, "export history (default workload) exits 0")
runs = groups(svg("hist.svg"), "run")
ok(len(runs) == rows("SELECT count(*) FROM tune_run")[0][0] == 2,
   "one history line per tuning run (%d)" % len(runs))
ok(export("history-wall", "histw.svg").returncode == 0, "export history by wall time")
ok(export("predicted", "pred.svg").returncode == 0, "export predicted vs measured")
pred = groups(svg("pred.svg"), "trial ")
n_pred = rows("SELECT count(*) FROM trial WHERE status = 'ok' AND predicted_cost IS NOT NULL")[0][0]
ok(len(pred) == n_pred, "one predicted-vs-measured point per trial with a prediction (%d)" % n_pred)

# ---- the learned model: none stored says how to train one; trained, it ranks every trial ----
ok(export("learned", "learned0.svg").returncode == 0, "export learned without a model exits 0")
ok("tessera-tune model train" in open(os.path.join(TMP, "learned0.svg")).read(),
   "without a model the plot says how to train one")
ok(run(TT, "model", "train", "--db", DB, "--backend", "cpu").returncode == 0, "model train")
ok(export("learned", "learned.svg").returncode == 0, "export learned")
ranked = groups(svg("learned.svg"), "trial ")
n_ok = rows("SELECT count(*) FROM trial WHERE status = 'ok'")[0][0]
learned_text = open(os.path.join(TMP, "learned.svg")).read()
ok(len(ranked) == n_ok and "Kendall τ-b" in learned_text and "in-sample" in learned_text,
   "one ranked point per verified trial (%d of %d), tau in the title, in-sample said"
   % (len(ranked), n_ok))

# ---- timeline: from the cache and from the trace file ----
events = rows("SELECT kind, name FROM profile_event ORDER BY seq")
# Allocations and frees are drawn as the memory-in-use area, every other event as a mark.
marked = [e for e in events if e[0] not in ("alloc", "free")]
p = export("timeline", "tl.svg", "--width", "4000")
ok(p.returncode == 0, "export timeline exits 0")
drawn = groups(svg("tl.svg"), "event ")
folds = groups(svg("tl.svg"), "fold")
n_folded = sum(int(title(f).split()[0]) for f in folds)
ok(len(drawn) + n_folded == len(marked) and len(marked) > 0,
   "the timeline draws every stored event, alone or folded (%d + %d of %d)"
   % (len(drawn), n_folded, len(marked)))
has_alloc = any(e[0] == "alloc" for e in events)
ok(not has_alloc or len(groups(svg("tl.svg"), "memory")) == 1,
   "the allocations are drawn as memory in use")
ok(re.search(r" — profile \d+ of gemm ", p.stdout), "the summary names whose profile it is: %s"
   % p.stdout.strip())
kinds = {g.get("class").split()[1] for g in drawn}
# Compiles take milliseconds and are drawn alone; a 64^3 kernel's few microseconds are folded
# with their neighbours where the gaps between them come under TS_TL_FOLD_PX (a loaded machine
# stretches the compiles and the span), so kernels are drawn alone or folded, never dropped.
n_kernels = sum(1 for e in events if e[0] == "kernel")
ok("compile" in kinds and n_kernels > 0 and ("kernel" in kinds or n_folded > 0),
   "kernels and compiles are on the timeline (%d kernels; drawn alone: %s; %d folded)"
   % (n_kernels, sorted(kinds), n_folded))
p = run(STUDIO, "--export", "timeline", "--trace", trace, "--width", "4000",
        "--output", os.path.join(TMP, "tl2.svg"))
ok(p.returncode == 0, "export timeline from a Chrome trace file, no cache")
drawn2 = groups(svg("tl2.svg"), "event ")
folds2 = groups(svg("tl2.svg"), "fold")
ok(len(drawn2) + sum(int(title(f).split()[0]) for f in folds2) == len(marked),
   "the trace file gives the same events as the cache")

# A workload never profiled: another workload's profile, named as such, never a silent stand-in.
ok(run(TT, "tune", "saxpy", "--shape", "N=4096", "--backend", "cpu", "--budget", "1", "--db", DB).returncode
   == 0, "a second workload, tuned but not profiled")
saxpy = rows("SELECT id FROM workload WHERE op = 'saxpy'")[0][0]
p = export("timeline", "tl3.svg", "--workload", str(saxpy))
ok(p.returncode == 0 and re.search(r"saxpy N=4096 \S+ has no profile; shown instead: profile \d+ "
                                   r"of gemm ", p.stdout),
   "the stand-in profile is named: %s" % p.stdout.strip())

# ---- lowering and diff ----
ok(export("lowering", "low.svg").returncode == 0, "export lowering of the best trial")
stages = [g.get("id") for g in groups(svg("low.svg"), "stage")]
ok(stages == ["stage-graph", "stage-schedule", "stage-tile", "stage-target"],
   "the four lowering stages, in order")
low_text = " ".join(t.text or "" for t in svg("low.svg").iter(SVGNS + "text"))
ok(best_sched.split(".")[0] in low_text, "the lowering shows the best schedule")
two = rows("SELECT id FROM trial WHERE status = 'ok' AND workload_id = ? ORDER BY median_ns "
           "LIMIT 2", wid)
ok(export("diff", "diff.svg", "--trial", str(two[0][0]), "--trial-b", str(two[1][0])).returncode == 0,
   "export the Target IR diff of two trials")
changed = groups(svg("diff.svg"), "diff add") + groups(svg("diff.svg"), "diff del")
ok(len(changed) > 0, "two schedules' target sources differ in the diff (%d lines)" % len(changed))

# ---- a kernel file's workload: its lowering drawn from the source the cache keeps ----
kfile = os.path.join(TMP, "scale_relu.tsk")
with open(os.path.join(SRC, "tests", "kernels", "affine_relu.tsk")) as f:
    ktext = f.read()
with open(kfile, "w") as f:
    f.write(ktext)
ok(run(TT, "tune", "--kernel", kfile, "--shape", "N=4096", "--budget", "2", "--db", DB).returncode
   == 0, "a kernel file tuned into the cache")
os.remove(kfile)  # the studio has only the cache
kw = rows("SELECT id, op FROM workload WHERE op LIKE 'kernel:affine_relu@%'")
ok(len(kw) == 1, "the kernel's workload is keyed by its op (%s)" % kw)
ok(export("lowering", "klow.svg", "--workload", str(kw[0][0])).returncode == 0,
   "export the lowering of the kernel's best trial, without its file")
ktext_svg = " ".join(t.text or "" for t in svg("klow.svg").iter(SVGNS + "text"))
ok([g.get("id") for g in groups(svg("klow.svg"), "stage")] ==
   ["stage-graph", "stage-schedule", "stage-tile", "stage-target"] and kw[0][1] in ktext_svg
   and "tile.map" in ktext_svg, "the four stages of the kernel's lowering, its op and its map")

# ... and an attention kernel tuned with its causal flag set: the flag is in the op's name.
afile = os.path.join(TMP, "attention.tsk")
with open(os.path.join(SRC, "examples", "flash_attention.tsk")) as f:
    atext = f.read()
with open(afile, "w") as f:
    f.write(atext)
ok(run(TT, "tune", "--kernel", afile, "flash_attention+causal", "--shape", "B=1,H=2,S=64,D_h=16",
       "--budget", "1", "--db", DB).returncode == 0, "a causal attention kernel tuned into the cache")
os.remove(afile)
aw = rows("SELECT id, op FROM workload WHERE op LIKE 'kernel:flash_attention+causal@%'")
ok(len(aw) == 1 and export("lowering", "alow.svg", "--workload", str(aw[0][0])).returncode == 0,
   "export the lowering of the causal kernel's best trial, without its file (%s)" % aw)
atext_svg = " ".join(t.text or "" for t in svg("alow.svg").iter(SVGNS + "text"))
ok(aw[0][1] in atext_svg and "tile.mma" in atext_svg and "tile.pack_bt" in atext_svg,
   "its stages: the op with its flag, the template's products of Q and K^T and of P and V")

# ---- PNG, dark ----
p = export("roofline", "roof.png", "--width", "640", "--height", "400", "--dark")
ok(p.returncode == 0, "export a PNG")
with open(os.path.join(TMP, "roof.png"), "rb") as f:
    head = f.read(24)
ok(head[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", head[16:24]) == (640, 400),
   "the PNG has the asked size")
export("roofline", "dark.svg", "--dark")
bg = [r for r in svg("dark.svg").iter(SVGNS + "rect") if r.get("class") == "background"]
ok(bg and bg[0].get("fill") < "#404040", "--dark draws on a dark background")

# ---- bad input ----
p = export("nope", "x.svg")
ok(p.returncode == 2 and "nope" in p.stderr, "an unknown view exits 2 naming it")
p = export("roofline", "x.svg", "--workload", "999")
ok(p.returncode != 0 and "999" in p.stderr, "an unknown workload is refused, naming it")
p = export("roofline", "x.jpg")
ok(p.returncode != 0 and "x.jpg" in p.stderr, "an unknown image format is refused, naming the file")
for opt, val in (("--width", "0"), ("--height", "-3"), ("--scale", "0"), ("--width", "40000")):
    p = export("roofline", "x.svg", opt, val)
    ok(p.returncode == 2 and opt in p.stderr, "%s %s is refused naming the option: %s"
       % (opt, val, p.stderr.strip()))
p = export("lowering", "low2.svg")
ok(p.returncode == 0 and re.search(r"lowering: \d+ of \d+ lines drawn", p.stdout),
   "the lowering's summary counts lines: %s" % p.stdout.strip())
n_drawn, n_total = map(int, re.search(r"(\d+) of (\d+)", p.stdout).groups())
ok(n_drawn <= n_total, "never more drawn than there are")
bad = os.path.join(TMP, "bad.db")
with open(bad, "wb") as f:
    f.write(b"this is not a database" * 100)
p = run(STUDIO, bad, "--export", "roofline", "--output", os.path.join(TMP, "x.svg"))
ok(p.returncode == 3 and "bad.db" in p.stderr, "a corrupt cache exits 3 naming the file")
ok(open(bad, "rb").read() == b"this is not a database" * 100, "the corrupt file is left as it was")

print("1..%d" % count)
