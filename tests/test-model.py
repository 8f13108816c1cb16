#!/usr/bin/env python3
"""test-model.py — end-to-end tests of the cost model through the real binary on the CPU: a
cache filled by exhaustive tunes of three small gemm shapes; `model eval` holds each out and
judges the ranking; `model train` stores a model with its quality; `tune --strategy model`
starts from it, stores the analytic prediction with every trial and retrains the stored model;
`strategies compare OP --db` replays a workload's trials with the model strategy among the
others; bad input (unknown action, empty cache, corrupt stored model) fails clearly.
Prints TAP."""
import json
import math
import os
import re
import sqlite3
import subprocess
import sys

from taputil import scratch

TT = sys.argv[1]
TMP = scratch("tessera-model-test-")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"))
DB = os.path.join(TMP, "m.db")
# 16 points, all valid: enough to rank, small enough to measure exhaustively in seconds.
SPACE = ("block(m=[72,96], n=[2016], k=[128,256]).micro(m=[4,6], n=[8,16]).vector([8])"
         ".unroll([4]).threads([1])")
SHAPES = ["M=96,N=96,K=96", "M=144,N=64,K=128", "M=64,N=160,K=96"]
count = 0


def ok(cond, what):
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


def tt(*args, timeout=900):
    p = subprocess.run([TT, *args], env=ENV, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (p.returncode, args,
                                                               p.stdout[-2000:], p.stderr[-2000:]))
    return p


def rows(sql, *params):
    con = sqlite3.connect(DB)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


# ---- bad input before there is anything ----
p = tt("model", "frobnicate", "--db", DB)
ok(p.returncode == 2 and "train, eval or show" in p.stderr, "an unknown action: exit 2 naming the actions")
p = tt("model", "eval", "--db", DB)
ok(p.returncode == 3 and "nothing tuned yet" in p.stderr, "eval without a cache: exit 3 saying so")
p = tt("model", "train", "--db", DB)
ok(p.returncode == 2 and "tune some workloads first" in p.stderr,
   "train on an empty cache (created): exit 2 saying to tune first")
p = tt("model", "eval", "--db", DB)
ok(p.returncode == 2 and "tune some workloads first" in p.stderr,
   "eval on an empty cache: exit 2 saying to tune first")
p = tt("model", "show", "--db", DB)
ok(p.returncode == 1 and "tessera-tune model train" in p.stderr,
   "show without a model: exit 1 saying how to train one")
p = tt("model", "train", "--backend", "tpu", "--db", DB)
ok(p.returncode == 2, "an unknown backend: exit 2")

# ---- the cache ----
for shape in SHAPES:
    p = tt("tune", "gemm", "--shape", shape, "--backend", "cpu", "--space", SPACE,
           "--strategy", "exhaustive", "--budget", "100", "--db", DB)
    ok(p.returncode == 0 and "all explored" in p.stdout, "exhaustive tune of gemm %s" % shape)
n = rows("SELECT count(*) FROM trial WHERE status = 'ok'")[0][0]
ok(n == 48, "48 verified trials stored (%d)" % n)
pred = rows("SELECT count(*) FROM trial WHERE predicted_cost > 0")[0][0]
ok(pred == 48, "every trial carries the analytic estimate as predicted_cost")

# ---- eval ----
p = tt("model", "eval", "--db", DB)
ok(p.returncode == 0, "model eval exits 0")
lines = [l for l in p.stdout.splitlines() if l.startswith("gemm ")]
ok(len(lines) == 3, "one row per held-out workload")
ok(re.search(r"^mean\s+-?\d", p.stdout, re.M) is not None, "a mean row")
p = tt("model", "eval", "--db", DB, "--json")
ok(p.returncode == 0, "model eval --json exits 0")
e = json.loads(p.stdout)["cpu"]
ok(e["heldout"] == "workload" and len(e["workloads"]) == 3, "JSON: three held-out workloads")
for w in e["workloads"]:
    ok(w["rows"] == 16 and w["ok"] == 16, "%s: 16 rows, all verified" % w["group"].split(" | ")[0])
    for k in ["tau", "analytic_tau"]:
        ok(w[k] is not None and -1 <= w[k] <= 1, "%s in [-1, 1]" % k)
    for k in ["recall_5_in_20", "analytic_recall_5_in_20"]:
        # 16 rows: the top 20 holds everything
        ok(w[k] == 1.0, "%s is 1 when the top 20 covers all 16" % k)
    ok(w["regret"] is not None and w["regret"] >= 0, "regret >= 0")
ok(isinstance(e["mean_tau"], float) and math.isfinite(e["mean_tau"]), "a finite mean tau")

# ---- train and show ----
p = tt("model", "train", "--db", DB)
ok(p.returncode == 0 and re.search(r"model 1 \(xgb-rank/cpu\): 48 trials of 3 workloads", p.stdout),
   "model train stores model 1 on 48 trials of 3 workloads")
m = rows("SELECT kind, quality, trained_on FROM model")
ok(len(m) == 1 and m[0][0] == "xgb-rank/cpu", "one model row of kind xgb-rank/cpu")
ok(json.loads(m[0][1])["heldout"] == "workload", "its quality is the held-out evaluation")
trained = json.loads(m[0][2])
ok(trained["rows"] == 48 and len(trained["groups"]) == 3 and "est.log2_time" in trained["features"],
   "trained_on names the rows, groups and features (the analytic estimate among them)")
p = tt("model", "show", "--db", DB)
ok(p.returncode == 0 and "xgb-rank/cpu" in p.stdout and "mean_tau" in p.stdout,
   "model show prints the model and its quality")


# ---- each trial's estimate beside its measurement ----
p = tt("show", "gemm", "--shape", SHAPES[0], "--backend", "cpu", "--db", DB, "--estimate",
       "--json")
shown = json.loads(p.stdout) if p.returncode == 0 else []
ok(len(shown) == 16 and all(r["estimate_ns"] > 0 and r["bound"] in
                            ("compute", "dram", "cache", "launch") for r in shown),
   "show --estimate --json gives every trial an estimate and what bounds it")
p = tt("show", "gemm", "--shape", SHAPES[0], "--backend", "cpu", "--db", DB, "--estimate")
m = re.search(r"^# model: Kendall tau (-?[\d.]+) against the measured order over 16 verified "
              r"trials; its first pick, trial (\d+), measured ([\d.]+)x the fastest", p.stdout, re.M)
pick = min(shown, key=lambda r: (r["estimate_ns"], r["median_ns"])) if shown else None
fastest = min(r["median_ns"] for r in shown) if shown else 0
ok(p.returncode == 0 and "model ms" in p.stdout and m and -1 <= float(m.group(1)) <= 1 and
   abs(float(m.group(3)) - pick["median_ns"] / fastest) < 0.006,
   "show --estimate adds the columns and judges the order: tau, and the first pick's measured "
   "time over the fastest (%s)" % (m.group(0) if m else p.stdout[-400:]))


def set_taus(model_id, tau, analytic_tau):
    """Rewrites a stored model's held-out figures: measured ones on three tiny shapes could
    fall either way, and the tuner's choice of prior follows them."""
    q = json.loads(rows("SELECT quality FROM model WHERE id = ?", model_id)[0][0])
    for w in q["workloads"]:
        w["tau"], w["analytic_tau"] = tau, analytic_tau
    con = sqlite3.connect(DB)
    con.execute("UPDATE model SET quality = ? WHERE id = ?", (json.dumps(q), model_id))
    con.commit()
    con.close()


# ---- a model-guided tune ----
set_taus(1, 0.9, 0.1)
p = tt("tune", "gemm", "--shape", "M=120,N=96,K=64", "--backend", "cpu", "--space", SPACE,
       "--strategy", "model", "--budget", "6", "--db", DB)
ok(p.returncode == 0, "tune --strategy model exits 0")
ok("model: learned prior 1 (xgb-rank/cpu) from the cache" in p.stdout,
   "it starts from the stored model, which ranked held-out shapes better than the estimate")
ok(re.search(r"model: retrained on 54 trials of 4 workloads, stored as model 2", p.stdout),
   "and stores a model retrained with its trials")
q2 = json.loads(rows("SELECT quality FROM model WHERE id = 2")[0][0] or "{}")
ok(q2.get("heldout") == "workload" and len(q2.get("workloads", [])) == 3,
   "with its held-out evaluation (the 3 shapes of 10 trials or more)")
t = rows("SELECT count(*), min(predicted_cost) FROM trial t JOIN workload w ON w.id = t.workload_id"
         " WHERE w.shape = 'M=120,N=96,K=64' AND t.strategy = 'model'")
ok(t[0][0] == 6 and t[0][1] > 0, "6 trials stored with strategy 'model' and a prediction")

# ---- strategy comparison on a cached workload ----
p = tt("strategies", "compare", "gemm", "--shape", SHAPES[0], "--backend", "cpu", "--space",
       SPACE, "--db", DB, "--budget", "16", "--repeats", "3")
ok(p.returncode == 0, "strategies compare gemm --db exits 0")
ok("model prior: trained on 38 trials of 3 other workloads" in p.stdout,
   "the model's prior holds the compared workload out")
ok("16 recorded of 16 configurations, 16 valid" in p.stdout, "the whole space is replayed")
for s in ["random", "annealing", "evolutionary", "model"]:
    r = re.search(r"^%s\s+([\d.]+)\s+[\d.]+\s+(\d+)/3" % s, p.stdout, re.M)
    ok(r is not None and r.group(2) == "3" and float(r.group(1)) == 1.0,
       "%s reaches the optimum within the whole space in every repeat" % s)
p = tt("strategies", "compare", "gemm", "--shape", "M=8,N=8,K=8", "--db", DB)
ok(p.returncode == 2 and "has no trials of gemm M=8,N=8,K=8" in p.stderr,
   "comparing a workload the cache lacks: exit 2 naming it")

# A cache written before the dot and walk knobs existed: its schedules lack them, and are read at
# the one value the space gives each; a space offering several walks cannot guess theirs.
OLD_DB = os.path.join(TMP, "before-knobs.db")
con = sqlite3.connect(DB)
con.execute("VACUUM INTO ?", (OLD_DB,))
con.close()
con = sqlite3.connect(OLD_DB)
con.execute("UPDATE trial SET schedule = replace(replace(schedule, '.dot(\"fma\")', ''),"
            " '.walk(\"panels\")', '')")
con.commit()
n_old = con.execute("SELECT count(*) FROM trial WHERE schedule LIKE '%walk%'").fetchone()[0]
con.close()
ok(n_old == 0, "the copied cache's schedules lack walk and dot")
p = tt("strategies", "compare", "gemm", "--shape", SHAPES[0], "--backend", "cpu", "--space",
       SPACE, "--db", OLD_DB, "--budget", "16", "--repeats", "1")
ok(p.returncode == 0 and "16 recorded of 16 configurations, 16 valid" in p.stdout,
   "schedules stored before a knob existed replay at its one value in the space")
p = tt("strategies", "compare", "gemm", "--shape", SHAPES[0], "--backend", "cpu", "--space",
       SPACE + '.walk(["panels", "tiles"])', "--db", OLD_DB, "--budget", "4", "--repeats", "1")
ok(p.returncode == 2 and "none of the 16 stored trials" in p.stderr and "'walk'" in p.stderr,
   "where the space gives the missing knob several values: exit 2 naming it (%s)" % p.stderr[-300:])

# ---- a stored model that ranks worse than the analytic estimate ----
set_taus(2, 0.1, 0.9)
p = tt("tune", "gemm", "--shape", "M=72,N=64,K=64", "--backend", "cpu", "--space", SPACE,
       "--strategy", "model", "--budget", "2", "--db", DB)
ok(p.returncode == 0 and "model: learned prior 2 (xgb-rank/cpu) ranks held-out gemm workloads "
   "below the analytic estimate (mean Kendall tau 0.10 against 0.90 over 3): the analytic "
   "estimate ranks the first candidates" in p.stdout,
   "a stored model that ranked held-out gemm shapes worse than the estimate is set aside, "
   "saying so (%s)" % p.stdout[:400])
ok(re.search(r"model: retrained on 56 trials of 5 workloads, stored as model 3", p.stdout),
   "the tune still runs, and retrains the stored model")

# ---- a corrupt stored model ----
con = sqlite3.connect(DB)
con.execute("UPDATE model SET blob = x'00ff00' WHERE id = 3")
con.commit()
con.close()
p = tt("model", "show", "--db", DB)
ok(p.returncode == 2 and "stored cost model" in p.stderr, "a corrupt model: exit 2 naming it")
ok(rows("SELECT count(*) FROM trial")[0][0] == 56, "and no trial is lost")

# ---- a kernel file's trials: estimated, and ranked as any op's ----
KSM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "softmax.tsk")
p = tt("tune", "--kernel", KSM, "--shape", "M=8,N=64", "--backend", "cpu", "--strategy",
       "exhaustive", "--budget", "100", "--db", DB, "--json")
res = json.loads(p.stdout) if p.returncode == 0 else {}
ok(res.get("ok", 0) >= 10 and res.get("ok") == res.get("measured"),
   "exhaustive tune of softmax.tsk at M=8,N=64 (%s)" % (res.get("ok") or p.stderr[-300:]))
kt = rows("SELECT count(*), min(predicted_cost) FROM trial t JOIN workload w"
          " ON w.id = t.workload_id WHERE w.op LIKE 'kernel:softmax@%'")
ok(kt[0][0] == res.get("measured") and kt[0][1] is not None and kt[0][1] > 0,
   "every trial of the kernel file carries the analytic estimate (%s)" % (kt,))
p = tt("model", "eval", "--db", DB, "--json")
e = json.loads(p.stdout)["cpu"] if p.returncode == 0 else {"workloads": []}
kw = [w for w in e["workloads"] if w["group"].startswith("kernel:softmax@")]
ok(len(kw) == 1 and kw[0]["rows"] == res.get("measured") and kw[0]["analytic_tau"] is not None,
   "model eval holds the kernel file's workload out as any op's, with the analytic's tau (%s)"
   % (kw or p.stderr[-300:]))

print("1..%d" % count)
