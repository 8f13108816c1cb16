#!/usr/bin/env python3
"""test-profile.py — end-to-end tests of `tessera-tune profile` on the CPU through the real
binary: the run is stored as a trial with roofline coordinates and counters (or the reason they
are unavailable), the profile and its timeline are stored, the Chrome trace parses and holds the
expected events in order, export from the cache reproduces it, and bad input fails clearly.
`tune --profile` stores the whole session as a profile of kind "tune": one range per trial with
its phases and kernels nested, the timed launches being the stored samples. Prints TAP."""
import json
import os
import re
import sqlite3
import subprocess
import sys

from taputil import scratch

TT = sys.argv[1]
TMP = scratch("tessera-profile-test-")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"))
DB = os.path.join(TMP, "p.db")
GEMM = ["gemm", "--shape", "M=64,N=48,K=32", "--db", DB]
count = 0


def ok(cond, what, why=None):
    """why: called on failure, returns what to print about it (the values that disagreed)."""
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        if why is not None:
            print("# " + why().replace("\n", "\n# "), flush=True)
        print("1..%d" % count)
        sys.exit(1)


def tt(*args, env=None, timeout=600):
    p = subprocess.run([TT, *args], env=env or ENV, capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode not in (0,):
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (p.returncode, args,
                                                               p.stdout[-2000:], p.stderr[-2000:]))
    return p


def rows(sql, *params):
    return rows_in(DB, sql, *params)


def rows_in(db, sql, *params):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def inside(inner, outer):
    return (inner["tid"] == outer["tid"] and inner["ts"] >= outer["ts"] - 1e-3 and
            inner["ts"] + inner.get("dur", 0) <= outer["ts"] + outer["dur"] + 1e-3)


trace = os.path.join(TMP, "trace.json")
p = tt("profile", *GEMM, "--output", trace)
ok(p.returncode == 0, "profile gemm exits 0")
for label in ["workload", "schedule", "status", "time", "roofline", "counters", "timeline",
              "trace", "stored"]:
    ok(re.search(r"^%s +\S" % label, p.stdout, re.M) is not None, "the report has a %s line" % label)
ok("(default)" in p.stdout, "with nothing cached, the op's default point is profiled")

# The trial: stored with its roofline coordinates and per-launch counters.
(metrics, status, strategy), = rows("SELECT metrics, status, strategy FROM trial")
m = json.loads(metrics)
ok(status == "ok" and strategy == "profile", "the run is stored as a verified trial")
roof = m["roofline"]
ok(roof["intensity"] > 0 and 0 < roof["fraction"] and roof["bound"] in ("f32", "dram"),
   "the trial has roofline coordinates")
c = m["counters"]
ok(("cycles" in c and c["instructions"] > 0) or
   c.get("unavailable", "").startswith("counters unavailable: "),
   "the trial has hardware counters or says why not")
ok("unavailable" not in c or "cycles" not in c, "unavailable counters are left out, not zero")

# The profile row and its timeline.
(pid, trial_id, n_events, summary), = rows(
    "SELECT p.id, p.trial_id, (SELECT count(*) FROM profile_event e WHERE e.profile_id = p.id),"
    " p.summary FROM profile p")
s = json.loads(summary)
ok(trial_id is not None and n_events > 10, "the profile is stored with its trial and events")
ok(s["events"]["kernel"] >= 5 and s["status"] == "ok", "the summary counts the kernel launches")

# The Chrome trace: valid JSON, the events in order, nested as they happened.
with open(trace) as f:
    doc = json.load(f)
ev = doc["traceEvents"]
ok(any(e["ph"] == "M" and e["name"] == "process_name" for e in ev), "the trace names its process")
xs = [e for e in ev if e["ph"] == "X"]
ok(xs == sorted(xs, key=lambda e: e["ts"]), "complete events are in time order")
ranges = {e["name"]: e for e in xs if e["cat"] == "range"}
ok(set(ranges) >= {"tessera: profile gemm", "tessera: compile", "tessera: verify",
                   "tessera: measure"}, "the tuner phases are ranges")
outer = ranges["tessera: profile gemm"]
ok(all(inside(ranges[r], outer) for r in ranges if r != outer["name"]),
   "the phases nest inside the profile range")
ok(ranges["tessera: compile"]["ts"] < ranges["tessera: verify"]["ts"] <
   ranges["tessera: measure"]["ts"], "compile, then verify, then measure")
compiles = [e for e in xs if e["cat"] == "compile"]
ok(len(compiles) == 1 and inside(compiles[0], ranges["tessera: compile"]),
   "the compile is inside the compile phase")
kernels = [e for e in xs if e["cat"] == "kernel"]
verify_k = [k for k in kernels if inside(k, ranges["tessera: verify"])]
measure_k = [k for k in kernels if inside(k, ranges["tessera: measure"])]
ok(len(verify_k) == 1 and verify_k[0]["args"]["detail"] == "launch",
   "verification launches the kernel once")
ok(len(measure_k) == len(kernels) - 1 and
   [k["args"]["detail"] for k in measure_k][:2] == ["warm-up", "warm-up"] and
   all(k["args"]["detail"] == "timed" for k in measure_k[2:]),
   "measurement: warm-ups, then the timed launches")
ok(len(measure_k) - 2 == s["samples"] + 1, "every timed launch is on the timeline")
copies = [e for e in xs if e["cat"] == "memcpy"]
h2d = [e for e in copies if e["name"] == "HtoD"]
d2h = [e for e in copies if e["name"] == "DtoH"]
ok(len(h2d) == 3 and all(e["ts"] < verify_k[0]["ts"] for e in h2d),
   "the inputs are uploaded before the first launch")
ok(len(d2h) >= 1 and d2h[0]["ts"] > verify_k[0]["ts"], "the output is read back after it")
ok(h2d[0]["args"]["bytes"] == 64 * 32 * 4, "copies carry their sizes")
mem = [e for e in ev if e["ph"] == "C" and e["name"] == "memory in use"]
peak = max(e["args"]["bytes"] for e in mem)
ok(peak == (64 * 32 + 32 * 48 + 64 * 48) * 4 and s["peak_bytes"] == peak,
   "the memory counter peaks at the three buffers")
ok(mem[-1]["args"]["bytes"] == 0, "and returns to zero when they are freed")

# Export from the cache gives the same events.
exported = os.path.join(TMP, "exported.json")
p = tt("profile", "export", str(pid), "--output", exported, "--db", DB)
ok(p.returncode == 0, "profile export exits 0")
with open(exported) as f:
    again = json.load(f)["traceEvents"]
strip = lambda evs: [(e["ph"], e["name"], e.get("cat"), e["ts"], e.get("dur"), e.get("args"))
                     for e in evs if e["ph"] != "M"]
ok(strip(again) == strip(ev), "the exported trace equals the one written at the run")
p = tt("profile", "list", "--db", DB)
ok(p.returncode == 0 and re.search(r"^\s+%d\s" % pid, p.stdout, re.M), "profile list shows it")

# A second profile of the same workload uses the cached best once there is one.
p = tt("tune", *GEMM, "--budget", "2", "--strategy", "random")
ok(p.returncode == 0, "a short tune caches a best")
p = tt("profile", *GEMM)
ok(p.returncode == 0 and "(cached best)" in p.stdout, "profile then runs the cached best")

# Counters turned off: said plainly, and the trial is still stored.
env = dict(ENV, TESSERA_PERF_COUNTERS="0")
p = tt("profile", *GEMM, "--schedule", "block(m=36)", env=env)
ok(p.returncode == 0 and "counters unavailable: turned off by TESSERA_PERF_COUNTERS=0" in p.stdout,
   "counters off: the report says so")
(metrics,), = rows("SELECT metrics FROM trial WHERE strategy = 'profile' AND schedule LIKE"
                   " 'block(m=36,%'")
ok("roofline" in json.loads(metrics) and "unavailable" in json.loads(metrics)["counters"],
   "counters off: the trial is stored with its roofline and the reason")

# A profiled tuning session: the whole timeline stored as a profile of kind "tune".
TDB = os.path.join(TMP, "tune.db")
TUNE = ["tune", "gemm", "--shape", "M=64,N=64,K=64", "--budget", "4", "--strategy", "random",
        "--db", TDB]
session = os.path.join(TMP, "session.json")
p = tt(*TUNE, "--profile", "--trace-output", session)
ok(p.returncode == 0, "tune --profile exits 0")
m = re.search(r"^profile +(\d+) \(kind tune\)", p.stdout.strip().splitlines()[-1])
ok(m is not None, "tune --profile ends with the profile id")
tpid = int(m.group(1))
con = sqlite3.connect(TDB)
(kind, wid, trial_id, schedule, tsummary), = con.execute(
    "SELECT kind, workload_id, trial_id, schedule, summary FROM profile WHERE id = ?", (tpid,))
(run_id, strategy), = con.execute("SELECT id, strategy FROM tune_run")
trials = con.execute("SELECT id, schedule, status, samples FROM trial WHERE run_id = ?"
                     " ORDER BY id", (run_id,)).fetchall()
(best,), = con.execute("SELECT t.schedule FROM best b JOIN trial t ON t.id = b.trial_id")
(twid,), = con.execute("SELECT DISTINCT workload_id FROM trial")
con.close()
ts_ = json.loads(tsummary)
ok(kind == "tune" and trial_id is None and wid == twid and schedule == best,
   "the session profile is keyed by the workload, has no trial, and names the best schedule")
ok(ts_["run_id"] == run_id and ts_["strategy"] == strategy == "random" and
   ts_["trials"] == len(trials) == 4, "its summary names the run, the strategy and the trials")
ok(ts_["span_ns"] > 0 and 0 < ts_["kernel_ns"] < ts_["span_ns"] and
   ts_["peak_bytes"] == 3 * 64 * 64 * 4, "its summary has the span, kernel time and peak memory")

with open(session) as f:
    sev = json.load(f)["traceEvents"]
sxs = [e for e in sev if e["ph"] == "X"]
ok(sxs == sorted(sxs, key=lambda e: e["ts"]), "the session's events are in time order")
tranges = [e for e in sxs if e["cat"] == "range" and re.match(r"trial \d+: ", e["name"])]
ok(len(tranges) == len(trials) and
   [r["name"].split(": ", 1)[1] for r in tranges] == [t[1] for t in trials],
   "one 'trial N: POINT' range per trial measured, in order")
top = [e for e in sxs if e["name"] == "tessera: tune gemm"]
ok(len(top) == 1 and all(top[0]["ts"] - 1e-3 <= e["ts"] and
                         e["ts"] + e["dur"] <= top[0]["ts"] + top[0]["dur"] + 1e-3
                         for e in sxs), "everything happens inside the session's range")
batch = [e for e in sxs if e["cat"] == "compile" and not any(inside(e, r) for r in tranges)]
ok(len(batch) == len(trials), "the batches compile every candidate once, outside the trials")
skernels = [e for e in sxs if e["cat"] == "kernel"]
ok(all(any(inside(k, r) for r in tranges) for k in skernels),
   "every kernel launch is nested in its trial's range")
ok(all(r["name"] == "trial %d: %s" % (t[0], t[1]) for r, t in zip(tranges, trials)),
   "each trial's range is named by its database id, as the CLI and the studio name it")


def remeasures_of(events, tid=None):
    """The ranges of an incumbent's re-measurements (of trial tid, or of any)."""
    head = r"re-measure trial %s: " % (r"\d+" if tid is None else tid)
    return [e for e in events if e["cat"] == "range" and re.match(head, e["name"])]


def held_by(events, r):
    """What trial range r holds of its own: not its incumbent's re-measurements."""
    skip = remeasures_of(events)
    return [e for e in events if e is not r and inside(e, r) and
            not any(e is s or inside(e, s) for s in skip)]


def timed_in(events):
    return [e["dur"] * 1e3 for e in events if e["cat"] == "kernel" and
            e["args"].get("detail") == "timed"]


def samples_match(timed, stored):
    """The first timed launch sizes the rounds and is not kept."""
    return len(timed) == len(stored) + 1 and all(abs(a - b) < 1 for a, b in zip(timed[1:], stored))


for r, (tid, sched, status, samples) in zip(tranges, trials):
    held = held_by(sxs, r)
    phases = [e["name"] for e in held if e["cat"] == "range"]
    fetch = [e for e in held if e["cat"] == "compile"]
    ok(phases == ["tessera: compile", "tessera: verify", "tessera: measure"] and
       len(fetch) == 1 and any(b["name"] == fetch[0]["name"] and
                               b["ts"] + b["dur"] <= r["ts"] for b in batch),
       "trial %d holds its compile, verify and measure phases; its module was built before" % tid)
    # A busy machine can make a later challenger re-measure this trial (ts-tune.c), replacing
    # its samples by those of one of the re-measurements.
    sets = [timed_in(held)] + [timed_in([e for e in sxs if inside(e, m)])
                               for m in remeasures_of(sxs, tid)]
    stored = json.loads(samples)
    ok(status == "ok" and any(samples_match(t, stored) for t in sets),
       "trial %d's stored samples are its timed launches on the timeline" % tid,
       lambda: "status %s, %d stored samples: %s\ntimed launches (ns) of the trial and of its "
       "re-measurements: %s\nthe trial's range: %s" % (status, len(stored), stored, sets, r))

sexported = os.path.join(TMP, "session-exported.json")
p = tt("profile", "export", str(tpid), "--output", sexported, "--db", TDB)
with open(sexported) as f:
    sagain = json.load(f)["traceEvents"]
ok(p.returncode == 0 and strip(sagain) == strip(sev),
   "profile export of the session equals the trace written by tune")
p = tt("profile", "list", "--db", TDB)
ok(p.returncode == 0 and re.search(r"^\s+%d\s.*\stune\s.*trial -" % tpid, p.stdout, re.M),
   "profile list shows the session profile")

p = tt(*TUNE)
ok(p.returncode == 0 and "profile " not in p.stdout and
   rows_in(TDB, "SELECT count(*) FROM profile") == [(1,)],
   "a tune without --profile stores no profile")
# An incumbent whose stored samples are noise (as a busy machine leaves them) is measured again
# when a faster-looking challenger cannot beat that noise (ts-tune.c): on the timeline each
# re-measurement is a range of its own inside the challenger's trial, whose own phases stay
# apart, and the incumbent's new stored samples are one re-measurement's timed launches.
NDB = os.path.join(TMP, "noisy.db")
NOISY = ["tune", "test_fault", "--shape", "N=262144", "--db", NDB, "--strategy", "exhaustive",
         "--json"]
TENV = dict(ENV, TESSERA_TEST_OPS="1")
p = tt(*NOISY, "--space", 'dict(mode=["slow"])', env=TENV)
slow = json.loads(p.stdout)["best"]
con = sqlite3.connect(NDB)
con.execute("UPDATE trial SET samples = ?, median_ns = ?, min_ns = ?, max_ns = ? WHERE id = ?",
            (json.dumps([1.0] * 20 + [20 * slow["median_ns"]] * 30), 20 * slow["median_ns"], 1.0,
             20 * slow["median_ns"], slow["trial"]))
con.commit()
con.close()
ntrace = os.path.join(TMP, "noisy.json")
p = tt(*NOISY, "--space", 'dict(mode=["slow", "ok"])', "--trace-output", ntrace, env=TENV)
res = json.loads(p.stdout) if p.returncode == 0 else {}
with open(ntrace) as f:
    nxs = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
chal = [e for e in nxs if e["cat"] == "range" and re.match(r'trial \d+: dict\(mode="ok"\)$',
                                                            e["name"])]
again = remeasures_of(nxs, slow["trial"])
ok(res.get("remeasured") == 1 and len(chal) == 1 and 1 <= len(again) <= 3 and
   all(m["name"] == 're-measure trial %d: dict(mode="slow")' % slow["trial"] and
       inside(m, chal[0]) for m in again),
   "each re-measurement of the noisy incumbent is a range inside the challenger's trial",
   lambda: "remeasured %s; challenger ranges %s; re-measure ranges %s" % (
       res.get("remeasured"), chal, again))
ok(len(chal) == 1 and [e["name"] for e in held_by(nxs, chal[0]) if e["cat"] == "range"] ==
   ["tessera: compile", "tessera: verify", "tessera: measure"] and
   all([e["name"] for e in nxs if e is not m and inside(e, m) and e["cat"] == "range"] ==
       ["tessera: compile", "tessera: verify", "tessera: measure"] for m in again),
   "the challenger's own phases stay apart from the re-measurements, which hold theirs",
   lambda: "the challenger holds %s\nthe re-measurements hold %s" % (
       [e["name"] for e in held_by(nxs, chal[0]) if e["cat"] == "range"] if chal else None,
       [[e["name"] for e in nxs if e is not m and inside(e, m) and e["cat"] != "kernel"]
        for m in again]))
(nstored,), = rows_in(NDB, "SELECT samples FROM trial WHERE id = ?", slow["trial"])
ok(any(samples_match(timed_in([e for e in nxs if inside(e, m)]), json.loads(nstored))
       for m in again),
   "the incumbent's stored samples are the timed launches of one of its re-measurements")

# Candidates that crash, hang or do not compile: each keeps its trial range, with nothing the
# dead worker could not report.
FDB = os.path.join(TMP, "faults.db")
faults = os.path.join(TMP, "faults.json")
p = tt("tune", "test_fault", "--shape", "N=1000", "--strategy", "exhaustive", "--timeout", "3",
       "--budget", "20", "--db", FDB, "--trace-output", faults,
       env=dict(ENV, TESSERA_TEST_OPS="1"))
status = dict(rows_in(FDB, "SELECT schedule, status FROM trial"))
with open(faults) as f:
    fxs = [e for e in json.load(f)["traceEvents"] if e["ph"] == "X"]
franges = {e["name"].split(": ", 1)[1]: e for e in fxs if e["cat"] == "range" and
           re.match(r"trial \d+: ", e["name"])}
ok(p.returncode == 0 and set(franges) == set(status) and len(status) == 8,
   "a profiled tune with failing candidates has one range per trial")
ok(all(not any(e["cat"] == "kernel" and inside(e, franges[s]) for e in fxs)
       for s, st in status.items() if st in ("runtime_error", "timeout", "compile_error")) and
   all(any(e["cat"] == "kernel" and inside(e, franges[s]) for e in fxs)
       for s, st in status.items() if st == "ok"),
   "crashed, hung and uncompiled trials hold no kernels, verified ones do")

p = tt("tune", "--help")
ok(p.returncode == 0 and "--profile" in p.stdout and "--trace-output" in p.stdout and
   "kind 'tune'" in p.stdout, "tune --help documents --profile")

# Bad input.
p = tt("profile", "export", "999", "--output", exported, "--db", DB)
ok(p.returncode != 0 and "no profile 999" in p.stderr, "export of an unknown profile says so")
p = tt("profile", "export", "abc", "--output", exported, "--db", DB)
ok(p.returncode == 2 and "profile id" in p.stderr, "export of a non-number says so")
p = tt("profile", "gemm", "--shape", "M=64", "--db", DB)
ok(p.returncode == 2 and "lacks dim" in p.stderr, "a bad shape is a usage error")
p = tt("profile", *GEMM, "--schedule", "block(m=", env=env)
ok(p.returncode == 2, "a malformed schedule is a usage error")
p = tt("profile", "--help")
ok(p.returncode == 0 and all(w in p.stdout for w in
                             ["roofline", "counters unavailable", "timeline", "Chrome trace"]),
   "profile --help documents the outputs")

print("1..%d" % count)
