#!/usr/bin/env python3
"""test-tune.py — end-to-end tests of `tessera-tune tune` and the cache commands on the CPU,
through the real binary and a real SQLite file: exhaustive tuning and lookup, faulty candidates
(crash, abort, hang, wrong answer, compile error), kill -9 and resume, four tuners on one
database, export/import, and the bad-input errors. Prints TAP."""
import json
import re
import os
import signal
import shutil
import sqlite3
import subprocess
import sys
import time

from taputil import scratch

TT = sys.argv[1]
TMP = scratch("tessera-tune-test-")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"), TESSERA_TEST_OPS="1")
# Its own artifact cache, not the one dev.sh shares among the suites: it checks what compiling
# its candidates cost, which another test's compiles of the same code would hide.
ENV.pop("TESSERA_ARTIFACT_DIR", None)
count = 0


def ok(cond, what):
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


def tt(*args, check=None, timeout=600):
    p = subprocess.run([TT, *args], env=ENV, capture_output=True, text=True, timeout=timeout)
    if check is not None and p.returncode != check:
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (p.returncode, args, p.stdout[-2000:],
                                                               p.stderr[-2000:]))
    return p


def db_rows(db, sql, *params):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def mann_whitney_less(a, b):
    """P-value that a is stochastically smaller than b (normal approximation with tie and
    continuity corrections), as tuner/ts-tune-stats.c computes it."""
    import math
    if len(a) < 3 or len(b) < 3:
        return 1.0
    tagged = sorted([(v, 1) for v in a] + [(v, 0) for v in b])
    n, i, rank_a, ties = len(tagged), 0, 0.0, 0.0
    while i < n:
        j = i
        while j + 1 < n and tagged[j + 1][0] == tagged[i][0]:
            j += 1
        mid, k = (i + j) / 2.0 + 1.0, j - i + 1
        ties += k ** 3 - k
        rank_a += mid * sum(1 for m in range(i, j + 1) if tagged[m][1])
        i = j + 1
    u = rank_a - len(a) * (len(a) + 1) / 2.0
    var = len(a) * len(b) / 12.0 * ((n + 1) - ties / (n * (n - 1.0)))
    if var <= 0:
        return 1.0
    z = (u - len(a) * len(b) / 2.0 + 0.5) / math.sqrt(var)
    return 0.5 * math.erfc(-z / math.sqrt(2))


GEMM = ["gemm", "--shape", "M=40,N=36,K=20"]
SPACE = ("block(m=[12,24], n=[32], k=[8,16]).micro(m=[4,6], n=[8,16]).vector([8])"
         ".unroll([2]).threads([1])")

# 1. Exhaustive tune of a small space: every valid point stored, best = min over stored, lookup.
db1 = os.path.join(TMP, "one.db")
p = tt("tune", *GEMM, "--space", SPACE, "--strategy", "exhaustive", "--budget", "100",
       "--db", db1, "--json", check=0)
ok(p.returncode == 0, "exhaustive tune exits 0")
summary = json.loads(p.stdout)
ok(summary["exhausted"] and summary["measured"] == summary["valid_points"] == 16,
   "exhaustive measures every valid point (%s)" % summary["measured"])
rows = db_rows(db1, "SELECT id, median_ns, samples FROM trial WHERE status = 'ok'")
ok(len(rows) == 16, "16 verified trials stored")
best = db_rows(db1, "SELECT trial_id FROM best")
ok(len(best) == 1, "one best row")
# The best changes only for a candidate faster beyond noise, and the run ends by comparing the
# fastest stored trial with the best: so the best is the fastest trial, or the fastest is not
# faster than it beyond noise (the tuner's own test: one-sided Mann-Whitney U, p < 0.01).
fastest = min(rows, key=lambda r: r[1])
best_row = [r for r in rows if r[0] == best[0][0]][0]
p_value = mann_whitney_less(json.loads(fastest[2]), json.loads(best_row[2]))
ok(fastest[0] == best_row[0] or p_value >= 0.01,
   "the best (%.0f ns) is the fastest (%.0f ns) up to noise (p = %.3g)"
   % (best_row[1], fastest[1], p_value))
p = tt("lookup", *GEMM, "--db", db1, "--json", check=0)
look = json.loads(p.stdout)
ok(look["trial"] == best[0][0] and look["exact"], "lookup returns the stored best")
p = tt("lookup", "gemm", "--shape", "M=80,N=36,K=20", "--db", db1, "--nearest", "--json", check=0)
near = json.loads(p.stdout)
ok(not near["exact"] and near["shape"] == "M=40,N=36,K=20", "lookup --nearest borrows from M=40")
p = tt("lookup", "gemm", "--shape", "M=80,N=36,K=20", "--db", db1)
ok(p.returncode == 1 and "--nearest" in p.stderr, "lookup of an untuned shape says so")

# Resume: a second run measures nothing again.
p = tt("tune", *GEMM, "--space", SPACE, "--strategy", "exhaustive", "--budget", "100",
       "--db", db1, "--json", check=0)
again = json.loads(p.stdout)
ok(again["measured"] == 0 and again["resumed"] == 16, "a re-run resumes and measures nothing")
p = tt("show", *GEMM, "--db", db1, "--json", check=0)
ok(len(json.loads(p.stdout)) == 16, "show lists every trial")

p = tt("tune", *GEMM, "--space", SPACE, "--strategy", "exhaustive", "--db", db1)
ok("% roof" in p.stdout and "measured f32 peak" in p.stdout,
   "the final table reports each candidate against the measured roofline")
# The 16 points have 4 micro-kernel shapes; their blocks are read at run time: 4 sources.
ok(re.search(r"^compile: median \d+ ms a candidate, \d+ ms of CPU \(median of 4\), over the 4 "
             r"compiled \(others came from the artifact cache\); \d+ ms of compile CPU a trial "
             r"over all 16$", p.stdout, re.M)
   and "compile ms" in p.stdout,
   "the final table reports what compiling a candidate cost, each source compiled once")
# Points that differ only in their blocks share one source: a batch of them compiles it once,
# not once a point side by side.
p = tt("tune", *GEMM, "--space", "block(m=[12,24], n=[32], k=[8,16]).micro(m=[6], n=[16])"
       ".vector([8]).unroll([4]).threads([1])", "--strategy", "exhaustive",
       "--db", os.path.join(TMP, "blocks.db"), check=0)
ok(re.search(r"^compile: .*\(median of 1\), over the 1 compiled", p.stdout, re.M),
   "four points of one micro-kernel shape compile one source")
# Every verified trial carries its roofline coordinates against the stored ceilings.
con = sqlite3.connect(db1)
peaks = json.loads(con.execute("SELECT peaks FROM device WHERE backend = 'cpu'").fetchone()[0])
metrics = [json.loads(m) for (m,) in con.execute("SELECT metrics FROM trial WHERE status = 'ok'")]
roofs = [m["roofline"] for m in metrics]
con.close()
ok(all(m.get("verification", "").startswith("full f64 reference (") for m in metrics),
   "every verified trial says which check ran (a small gemm: the full reference)")
# A CPU kernel's CPU time is stored beside its wall time, and the table relates the two.
ok(all(m["process_cpu_ns"] >= m["thread_cpu_ns"] > 0 for m in metrics),
   "every CPU trial stores its thread and process CPU time")
ok(re.search(r"^[ *] +1 +ok .* \d+\.\d\d  block", p.stdout, re.M) and "cpu/wall:" in p.stdout,
   "the final table gives each CPU candidate's CPU time over its wall time")
# The table marks the cache's best with *, as `show` does, and says why a faster-looking rank 1
# is not it. A copy of the cache where trial x is the best, at 1000 ns every sample (no spread:
# nothing is measured again), and trial y's samples straddle it with a lower median: not
# faster at p < 0.01, so a run that measures nothing keeps x.
db1b = os.path.join(TMP, "one-marked.db")
shutil.copyfile(db1, db1b)
con = sqlite3.connect(db1b)
(x, ), (y, ) = con.execute("SELECT id FROM trial WHERE status = 'ok' ORDER BY id LIMIT 2").fetchall()
con.execute("UPDATE trial SET samples = ?, median_ns = 1000 WHERE id = ?",
            ("[1000,1000,1000,1000,1000]", x))
con.execute("UPDATE trial SET samples = ?, median_ns = 998 WHERE id = ?",
            ("[990,1005,998,1002,995]", y))
con.execute("UPDATE best SET trial_id = ?", (x, ))
con.commit()
con.close()
p = tt("tune", *GEMM, "--space", SPACE, "--strategy", "exhaustive", "--db", db1b, check=0)
ok(db_rows(db1b, "SELECT trial_id FROM best") == [(x, )] and
   re.search(r"^  +1  ok +0\.0010 ", p.stdout, re.M) and
   re.search(r"^\*  +2  ok +0\.0010 ", p.stdout, re.M) and
   re.search(r"^\(rank 1's median is 0\.2% lower, within the noise .* \* marks the best\)$",
             p.stdout, re.M),
   "the table marks the best (rank 2) and says why rank 1, faster-looking, is not it")
con = sqlite3.connect(db1b)
con.execute("UPDATE best SET trial_id = ?", (y, ))
con.commit()
con.close()
p = tt("tune", *GEMM, "--space", SPACE, "--strategy", "exhaustive", "--db", db1b, check=0)
ok(re.search(r"^\*  +1  ok +0\.0010 ", p.stdout, re.M) and "rank 1's median" not in p.stdout,
   "where the best is rank 1 the table marks it and adds nothing")
f32, dram = peaks["compute"]["f32"]["gflops"], peaks["memory"]["dram"]["gbps"]
ok(len(roofs) == 16 and all(
    r["compute"] == "f32" and r["intensity"] > 0 and
    abs(r["bound_gflops"] - min(f32, r["intensity"] * dram)) < 1e-6 * r["bound_gflops"] and
    abs(r["fraction"] - r["gflops"] / r["bound_gflops"]) < 1e-9 for r in roofs),
   "every verified trial has roofline coordinates against the device's ceilings")
ok(db_rows(db1, "SELECT peaks FROM device")[0][0] is not None, "the ceilings are stored")
# Ceilings below what the kernels ran (as all-core peaks timed beside other work read) are
# called too low under the table; ceilings above them are not.
# A DRAM roof they may pass honestly, their data in a cache: said apart.
COMPUTE_NOTE = (r"^% roof above 100: (\d+) of these candidates ran faster than the stored compute "
                r"peak allows \(up to \d+%\), so the ceilings are too low.*"
                r"`tessera-tune devices --measure`")
DRAM_NOTE = (r"^% roof above 100: (\d+) of these candidates, held to DRAM's bandwidth, ran past "
             r"it \(up to \d+%\): their data came from a cache, or the stored DRAM figure is too "
             r"low.*`tessera-tune devices --measure`")
for f32_peak, dram_bw, said, what in (
        (1e-6, 1e9, COMPUTE_NOTE, "faster than the stored f32 peak: the ceilings are too low"),
        (1e9, 1e-6, DRAM_NOTE, "past the DRAM roof: from a cache, or the DRAM figure is low"),
        (1e9, 1e9, None, "under the stored peaks: the table says nothing of them")):
    dbp = os.path.join(TMP, "peaks-%g-%g.db" % (f32_peak, dram_bw))
    shutil.copyfile(db1, dbp)
    planted = json.loads(json.dumps(peaks))
    planted["compute"]["f32"] = {"gflops": f32_peak, "per_core": f32_peak}
    planted["memory"]["dram"] = {"gbps": dram_bw, "per_core": dram_bw}
    con = sqlite3.connect(dbp)
    con.execute("UPDATE device SET peaks = ? WHERE backend = 'cpu'", (json.dumps(planted), ))
    con.commit()
    con.close()
    p = tt("tune", *GEMM, "--space", SPACE, "--strategy", "exhaustive", "--db", dbp, check=0)
    notes = [re.search(n, p.stdout, re.M) for n in (COMPUTE_NOTE, DRAM_NOTE)]
    rows = len(re.findall(r"^[ *] +\d+  ok ", p.stdout, re.M))
    ok(p.returncode == 0 and rows > 0 and
       all((m is not None) == (n == said) for m, n in zip(notes, (COMPUTE_NOTE, DRAM_NOTE))) and
       all(m is None or int(m.group(1)) == rows for m in notes),
       "candidates " + what)

# 2. Faulty candidates are recorded with the right status and the tune completes.
db2 = os.path.join(TMP, "faults.db")
p = tt("tune", "test_fault", "--shape", "N=1000", "--strategy", "exhaustive", "--timeout", "3",
       "--budget", "20", "--db", db2, check=0)
ok(p.returncode == 0, "a tune with crashing, hanging and wrong candidates completes")
status = dict(db_rows(db2, "SELECT schedule, status FROM trial"))
want = {"oob": "runtime_error", "ok": "ok", "slow": "ok", "wrong": "wrong_result",
        "segv": "runtime_error",
        "abort": "runtime_error", "hang": "timeout", "nocompile": "compile_error"}
for mode, st in want.items():
    got = status.get('dict(mode="%s")' % mode)
    ok(got == st, "mode %s recorded as %s (got %s)" % (mode, st, got))
wrong = db_rows(db2, "SELECT metrics FROM trial WHERE status = 'wrong_result'")
ok(len(wrong) == 1 and json.loads(wrong[0][0])["verification"].startswith("full f64"),
   "a wrong result says which check caught it")
msg = db_rows(db2, "SELECT error FROM trial WHERE schedule = 'dict(mode=\"oob\")'")[0][0]
ok("wrote past the end of buffer 2" in msg and "the worker exits" in msg,
   "a write out of bounds is a runtime error and replaces the worker: %s" % msg)
msg = db_rows(db2, "SELECT error FROM trial WHERE schedule = 'dict(mode=\"segv\")'")[0][0]
# Under AddressSanitizer the worker's own handler turns the signal into an exit status.
ok("signal 11" in msg or "exited with status" in msg, "the crash is explained: %s" % msg)
best = db_rows(db2, "SELECT t.schedule FROM best b JOIN trial t ON t.id = b.trial_id")
ok(best and best[0][0] in ('dict(mode="ok")', 'dict(mode="slow")'), "only a verified trial is best")


def children(pid):
    """The pids whose parent is pid, with their command lines."""
    out = []
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append((int(d), cmd))
    return out


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# A tuner killed while its worker runs a hung candidate takes the worker with it: an orphan
# would spin on, holding the host's compile/verify lock that every other tuner then waits for.
proc = subprocess.Popen([TT, "tune", "test_fault", "--shape", "N=1000", "--space",
                         'dict(mode=["hang"])', "--timeout", "300", "--db",
                         os.path.join(TMP, "orphan.db")], env=ENV, stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
worker, deadline = None, time.time() + 120
while worker is None and time.time() < deadline and proc.poll() is None:
    time.sleep(0.2)
    worker = next((c for c, cmd in children(proc.pid) if b"worker" in cmd), None)
time.sleep(2)  # into the hung candidate
proc.send_signal(signal.SIGKILL)
proc.wait()
gone_at = time.time() + 10
while worker is not None and alive(worker) and time.time() < gone_at:
    time.sleep(0.1)
stopped = worker is not None and not alive(worker)
if worker is not None and not stopped:
    os.kill(worker, signal.SIGKILL)  # not left to stall the tests after this one
ok(stopped, "a worker whose tuner is killed mid-candidate stops too (worker %s)" % worker)

# 3. kill -9 mid-run, then a re-run: integrity, nothing lost, nothing measured twice.
db3 = os.path.join(TMP, "kill.db")
# Enough points that the run is still going when it is killed: with micro-kernels assembled
# in milliseconds, the 96 points this space had took under half a second.
BIG = ("block(m=[12,24,36], n=[32,64], k=[8,16,24,32]).micro(m=[4,6], n=[8,16]).vector([8])"
       ".unroll([1,2,4,8]).threads([1])")
proc = subprocess.Popen([TT, "tune", *GEMM, "--space", BIG, "--strategy", "random",
                         "--budget", "400", "--db", db3], env=ENV, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
stored_before = 0
while time.time() < deadline:
    time.sleep(0.05)
    if os.path.exists(db3):
        try:
            stored_before = db_rows(db3, "SELECT count(*) FROM trial")[0][0]
        except sqlite3.Error:
            continue
    if stored_before >= 5:
        break
proc.send_signal(signal.SIGKILL)
proc.wait()
ok(stored_before >= 5, "the tuner stored %d trials before kill -9" % stored_before)
ok(db_rows(db3, "PRAGMA integrity_check")[0][0] == "ok", "integrity_check ok after kill -9")
kept = set(r[0] for r in db_rows(db3, "SELECT schedule_hash FROM trial"))
ok(len(kept) >= stored_before, "no committed trial lost (%d >= %d)" % (len(kept), stored_before))
p = tt("tune", *GEMM, "--space", BIG, "--strategy", "random", "--budget", "10", "--db", db3,
       "--json", check=0)
res = json.loads(p.stdout)
ok(res["resumed"] == len(kept), "the re-run resumed the %d stored trials" % len(kept))
runs = db_rows(db3, "SELECT status FROM tune_run ORDER BY id")
ok(runs == [("interrupted",), ("done",)],
   "the killed run is closed as interrupted when the next begins (%s)" % runs)
hashes = [r[0] for r in db_rows(db3, "SELECT schedule_hash FROM trial")]
ok(len(hashes) == len(set(hashes)) == len(kept) + res["measured"],
   "no point measured twice (%d rows, %d distinct)" % (len(hashes), len(set(hashes))))

# 4. Four tuners at once on one database: two workloads, two processes each.
db4 = os.path.join(TMP, "four.db")
SMALL = ("block(m=[12,24], n=[32,64], k=[8,16]).micro(m=[4], n=[8,16]).vector([8])"
         ".unroll([2]).threads([1])")
jobs = []
for shape, seed in (("M=40,N=36,K=20", "1"), ("M=40,N=36,K=20", "2"),
                    ("M=24,N=24,K=24", "3"), ("M=24,N=24,K=24", "4")):
    jobs.append(subprocess.Popen([TT, "tune", "gemm", "--shape", shape, "--space", SMALL,
                                  "--strategy", "random", "--seed", seed, "--budget", "8",
                                  "--db", db4, "--json"], env=ENV, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True))
outs = [j.communicate(timeout=600) for j in jobs]
codes = [j.returncode for j in jobs]
ok(codes == [0, 0, 0, 0], "four concurrent tuners exit 0 (%s)" % codes)
ok(not any("locked" in e or "busy" in e.lower() for _, e in outs), "no 'database is locked'")
measured = [json.loads(o)["measured"] for o, _ in outs]
rows = db_rows(db4, "SELECT w.shape, count(*) FROM trial t JOIN workload w ON w.id = t.workload_id"
                    " GROUP BY w.shape")
per_shape = dict(rows)
ok(all(per_shape.get(s, 0) >= 8 for s in ("M=40,N=36,K=20", "M=24,N=24,K=24")),
   "every workload has its trials (%s; processes measured %s)" % (per_shape, measured))
ok(db_rows(db4, "PRAGMA integrity_check")[0][0] == "ok", "integrity ok after concurrent tuners")

# Two tuners on one workload with the same seed propose the same points; each claims a point
# before measuring it, so together they measure distinct points (they measured the same ones).
db6 = os.path.join(TMP, "claims.db")
jobs = [subprocess.Popen([TT, "tune", "gemm", "--shape", "M=40,N=36,K=20", "--space", SMALL,
                          "--strategy", "random", "--seed", "7", "--budget", "8", "--db", db6,
                          "--json"], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True) for _ in range(2)]
outs = [j.communicate(timeout=600) for j in jobs]
ok([j.returncode for j in jobs] == [0, 0], "two same-seed tuners exit 0")
res6 = [json.loads(o) for o, _ in outs]
hashes = [r[0] for r in db_rows(db6, "SELECT schedule_hash FROM trial")]
ok(sum(r["measured"] for r in res6) == len(set(hashes)) == 16,
   "same-seed tuners measured distinct points (%s measured, %d distinct trials)" % (
       [r["measured"] for r in res6], len(set(hashes))))
ok(db_rows(db6, "SELECT count(*) FROM trial_claim")[0][0] == 0, "no claim outlives its run")

# An incumbent measured on a busy machine (bimodal samples: 40% far below its real time, 60%
# far above) is measured again when a faster-looking candidate cannot beat that noise; the
# honest measurement lets the really faster kernel win. Without it the slow kernel stayed best.
# The low mode sits below any kernel's time (1 ns), not at a fraction of the slow one's: on a
# loaded machine the fast kernel could land below that fraction and win without the re-measure.
db7 = os.path.join(TMP, "noisy.db")
FAULT = ["test_fault", "--shape", "N=262144", "--db", db7, "--json", "--strategy", "exhaustive"]
p = tt("tune", *FAULT, "--space", 'dict(mode=["slow"])', check=0)
slow = json.loads(p.stdout)["best"]
true_ns = slow["median_ns"]
noisy = [1.0] * 20 + [20 * true_ns] * 30
con = sqlite3.connect(db7)
con.execute("UPDATE trial SET samples = ?, median_ns = ?, min_ns = ?, max_ns = ? WHERE id = ?",
            (json.dumps(noisy), 20 * true_ns, 1.0, 20 * true_ns, slow["trial"]))
con.commit()
con.close()
p = tt("tune", *FAULT, "--space", 'dict(mode=["slow", "ok"])', check=0)
res7 = json.loads(p.stdout)
ok(res7["remeasured"] == 1, "the noisy incumbent was measured again (%d)" % res7["remeasured"])
ok(res7["best"]["schedule"] == 'dict(mode="ok")',
   "the really faster kernel is best: %s" % res7["best"]["schedule"])
stored = db_rows(db7, "SELECT median_ns FROM trial WHERE id = ?", slow["trial"])[0][0]
ok(stored < 3 * true_ns, "the incumbent's stored median is honest again (%.0f ns, measured %.0f)"
   % (stored, true_ns))
p = tt("show", "test_fault", "--shape", "N=262144", "--db", db7, check=0)
ok(re.search(r"^\* best: trial %d" % res7["best"]["trial"], p.stdout, re.M) is not None,
   "show marks the best")

# 5. Export and import round trip into a fresh database.
exp = os.path.join(TMP, "export.json")
tt("export", "--db", db1, "--output", exp, check=0)
db5 = os.path.join(TMP, "imported.db")
p = tt("import", exp, "--db", db5, check=0)
ok(p.returncode == 0 and "16 trials added" in p.stdout, "import adds the 16 trials")
p = tt("import", exp, "--db", db5, check=0)
ok("0 trials added" in p.stdout, "importing twice adds nothing")

# Warm start: the same workload's trials from before a kernel-generator upgrade (another
# toolchain key) are the seeds of a new tune, best first. The imported copy ranks the slowest
# point fastest, so only the seeds can make it the first one measured.
with open(exp) as f:
    old = json.load(f)
old["toolchains"][0]["kgen_version"] = "tessera-kgen-0"
slowest = max((t for t in old["trials"] if t["status"] == "ok"), key=lambda t: t["median_ns"])
slowest["median_ns"] = 1.0
slowest.update(samples_ns=[1.0] * 3, min_ns=1.0, max_ns=1.0)
old["best"] = []
old_exp = os.path.join(TMP, "old-toolchain.json")
with open(old_exp, "w") as f:
    json.dump(old, f)
db_ws = os.path.join(TMP, "warm.db")
tt("import", old_exp, "--db", db_ws, check=0)
p = tt("tune", *GEMM, "--space", SPACE, "--budget", "1", "--db", db_ws, check=0)
ok(p.returncode == 0 and re.search(r"^warm start: 16 configurations .* on 1 other", p.stdout, re.M),
   "a tune warm-starts from the other toolchain's 16 trials: %s" % p.stdout[-300:])
first = db_rows(db_ws, "SELECT t.schedule FROM trial t JOIN toolchain c ON c.id = t.toolchain_id "
                "WHERE c.kgen_version != 'tessera-kgen-0' ORDER BY t.id")
ok([r[0] for r in first] == [slowest["schedule"]],
   "the first point measured is the other toolchain's best: %s" % first)
p = tt("tune", *GEMM, "--space", SPACE, "--budget", "1", "--strategy", "random", "--db", db_ws,
       "--json", check=0)
ok(json.loads(p.stdout)["seeds"] == 0, "a strategy that does not warm-start takes no seeds")

# Import checks meaning, not only types: each poisoned copy is refused whole, naming the JSON
# path, and the cache is unchanged.
with open(exp) as f:
    good = json.load(f)
before = db_rows(db5, "SELECT count(*) FROM trial")[0][0]
poisons = [
    ("an unparseable schedule", lambda d: d["trials"][0].update(schedule="block(m=[12"),
     "$.trials[0].schedule", "does not parse"),
    ("a negative time", lambda d: d["trials"][0].update(median_ns=-5.0),
     "$.trials[0].median_ns", "not a positive value"),
    ("a zero time (a best nothing could beat)", lambda d: d["trials"][0].update(median_ns=0.0),
     "$.trials[0].median_ns", "not a positive value"),
    ("a hash that is not its schedule's", lambda d: d["trials"][0].update(hash="0123456789abcdef"),
     "$.trials[0].schedule", "is not its schedule's"),
    ("an unknown op", lambda d: d["workloads"][0].update(op="gemmm"),
     "$.workloads[0]", "unknown op 'gemmm'"),
    ("an unknown dtype", lambda d: d["workloads"][0].update(dtype="bf17"),
     "$.workloads[0]", "bf17"),
    ("compute units past any device", lambda d: d["devices"][0].update(compute_units=2 ** 40),
     "$.devices[0].compute_units", "is not a device's figure"),
    ("a time faster than any device (a best no tune could beat)",
     lambda d: d["trials"][0].update(median_ns=1e-6), "$.trials[0].median_ns",
     "faster than any device"),
]
for what, poison, path, needle in poisons:
    doc = json.loads(json.dumps(good))
    poison(doc)
    bad_file = os.path.join(TMP, "poisoned.json")
    with open(bad_file, "w") as f:
        json.dump(doc, f)
    p = tt("import", bad_file, "--db", db5)
    ok(p.returncode == 2 and path in p.stderr and needle in p.stderr,
       "import refuses %s at %s (exit %d: %s)" % (what, path, p.returncode, p.stderr.strip()[:160]))
ok(db_rows(db5, "SELECT count(*) FROM trial")[0][0] == before, "the refused imports added nothing")

# A best that is not a schedule (a cache edited by hand) is refused by lookup, not handed on.
poisoned_db = os.path.join(TMP, "poisoned.db")
shutil.copy(db5, poisoned_db)
con = sqlite3.connect(poisoned_db)
con.execute("UPDATE trial SET schedule = 'block(m=[12' WHERE id IN (SELECT trial_id FROM best)")
con.commit()
con.close()
p = tt("lookup", *GEMM, "--db", poisoned_db)
ok(p.returncode != 0 and "is not a usable schedule" in p.stderr and "tune the workload again" in p.stderr,
   "lookup refuses a best that does not parse (exit %d: %s)" % (p.returncode, p.stderr.strip()[:160]))

# 6. Bad input: one line naming the problem, exit 2 (3 for the machinery), no row lost.
with open(os.path.join(TMP, "bad.json"), "w") as f:
    f.write("{not json")
bad = [
    (("tune", "gem", "--shape", "M=1", "--db", db1), 2, "unknown op 'gem'"),
    (("tune", "gemm", "--shape", "M=8,N=8,K=8", "--dtype", "bf17", "--db", db1), 2, "bf17"),
    (("tune", "gemm", "--shape", "M=8,N=8", "--db", db1), 2, "lacks dim 'K'"),
    (("tune", *GEMM, "--space", "block(m=[12,24]", "--db", db1), 2, "schedule:1:"),
    (("tune", *GEMM, "--space", "block(m=[7]).micro(m=[4])", "--db", db1), 2, "no point"),
    (("tune", *GEMM, "--strategy", "greedy", "--db", db1), 2, "greedy"),
    (("tune", *GEMM, "--db", TMP), 3, TMP),
    (("import", os.path.join(TMP, "bad.json"), "--db", db1), 2, "bad.json"),
]
for args, code, needle in bad:
    p = tt(*args)
    ok(p.returncode == code and needle in p.stderr,
       "%s -> exit %d naming %r (got %d: %s)" % (" ".join(args[:2]), code, needle, p.returncode,
                                                 p.stderr.strip()[:200]))
notdb = os.path.join(TMP, "notdb.db")
with open(notdb, "w") as f:
    f.write("this is not a database" * 100)
p = tt("tune", *GEMM, "--db", notdb)
ok(p.returncode == 3 and "not a database" in p.stderr, "a file that is not SQLite is refused")
ok(len(db_rows(db1, "SELECT id FROM trial")) == 16, "no stored row lost after the bad inputs")

print("1..%d" % count)
