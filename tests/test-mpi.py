#!/usr/bin/env python3
"""test-mpi.py — distributed tuning end to end: `mpirun -np 3 tessera-tune tune|batch` on the CPU
backend (oversubscribed on a small machine). A distributed tune stores the same trials as a
serial one with the same seed, every rank measures and is recorded, `batch` covers every
workload once, failing candidates are statuses on any rank, ranks with another device are
refused by name, and a rank killed mid-run takes
the job down without losing what was stored: a re-run resumes and measures only the rest.
Usage: test-mpi.py TESSERA_TUNE WITH_MPI(yes|no). Prints TAP; skips (77) without mpirun or MPI."""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from taputil import done, mpi_env, ok, rows, run, scratch

TT, WITH_MPI = sys.argv[1], sys.argv[2] == "yes"
TMP = scratch("tessera-mpi-test-")
MPIRUN, ENV = mpi_env(WITH_MPI, os.path.join(TMP, "cache"), TESSERA_TEST_OPS="1")
MPI = [MPIRUN, "--oversubscribe"]


def mrun(argv, check=None):
    return run(argv, ENV, check)


# 16 points. A one-row micro-tile has one or two accumulators, so its FMAs wait on each other's
# latency: it runs 2-4x slower than a six-row one on any x86 this runs on, whatever the vector
# unit's width (a wider vector is not: Zen 1 splits 256-bit FMAs in two and runs vector(4) as
# fast as vector(8)).
SPACE = ("block(m=[72,144], n=[2016], k=[256]).micro(m=[1,6], n=[8,16]).vector([8])"
         ".threads([1]).unroll([4,8])")
GEMM = ["gemm", "--shape", "M=192,N=192,K=192", "--backend", "cpu", "--space", SPACE]

serial, dist = os.path.join(TMP, "serial.db"), os.path.join(TMP, "dist.db")
args = ["tune", *GEMM, "--strategy", "random", "--seed", "7", "--budget", "7", "--json"]
p = mrun([TT, *args, "--db", serial], check=0)
ok(p.returncode == 0, "a serial random tune of 7 of 16 points")
p = mrun([*MPI, "-np", "3", TT, *args, "--db", dist], check=0)
ok(p.returncode == 0, "the same tune on 3 MPI ranks")
out = json.loads(p.stdout)
ok(out["measured"] == 7, "rank 0 alone prints the result, with every trial counted")
q = "SELECT schedule FROM trial ORDER BY schedule"
ok(rows(serial, q) == rows(dist, q) and len(rows(dist, q)) == 7,
   "the distributed tune stores the same trials as the serial one with the same seed")
ranks = sorted(r for (r,) in rows(dist, "SELECT DISTINCT rank FROM trial"))
ok(ranks == [0, 1, 2], "every rank measured trials, and each trial names its rank")
ok(rows(dist, "SELECT count(DISTINCT host) FROM trial WHERE host IS NOT NULL")[0][0] == 1,
   "and its host")
best = {db: rows(db, "SELECT t.schedule FROM best b JOIN trial t ON t.id = b.trial_id")[0][0]
        for db in (serial, dist)}
ok(all("micro(m=6," in s for s in best.values()),
   "both runs find a six-row micro-tile best (%s; %s)" % (best[serial], best[dist]))

# Candidates that crash, hang, answer wrong or do not compile, measured on whichever rank: each
# is its trial's status, as in a serial run, and the job goes on.
fdb = os.path.join(TMP, "fault.db")
p = mrun([*MPI, "-np", "3", TT, "tune", "test_fault", "--shape", "N=1000", "--backend", "cpu",
         "--strategy", "exhaustive", "--timeout", "5", "--db", fdb, "--json"],
        check=0)
status = dict(rows(fdb, "SELECT schedule, status FROM trial"))
want = {"oob": "runtime_error", "ok": "ok", "slow": "ok", "wrong": "wrong_result",
        "segv": "runtime_error", "abort": "runtime_error", "hang": "timeout",
        "nocompile": "compile_error"}
ok(p.returncode == 0 and {k: status.get('dict(mode="%s")' % k) for k in want} == want,
   "crashes, hangs, wrong answers and compile errors on any rank are their trials' statuses")

# batch: every workload once, spread over the ranks' measurements.
shapes = os.path.join(TMP, "shapes.txt")
with open(shapes, "w") as f:
    f.write("gemm --shape M=64,N=48,K=32 --space '%s'\n" % SPACE)
    f.write("softmax_safe --shape M=32,N=128\n")
    f.write("gemm --shape M=96,N=64,K=32 --space '%s'\n" % SPACE)
bdb = os.path.join(TMP, "batch.db")
p = mrun([*MPI, "-np", "3", TT, "batch", shapes, "--backend", "cpu", "--budget", "4", "--db", bdb],
        check=0)
ok(p.returncode == 0 and p.stdout.count("== workload") == 3, "batch over 3 ranks")
per = dict(rows(bdb, "SELECT w.op || ' ' || w.shape, count(*) FROM trial t JOIN workload w "
                     "ON w.id = t.workload_id GROUP BY w.id"))
ok(per == {"gemm M=64,N=48,K=32": 4, "softmax_safe M=32,N=128": 4, "gemm M=96,N=64,K=32": 4},
   "batch tunes every workload once, each to its budget")
ok(rows(bdb, "SELECT count(DISTINCT rank) FROM trial")[0][0] == 3, "all ranks measured for it")

# A rank on another device: refused before anything is measured, named.
other = os.path.join(TMP, "other.db")
p = mrun([*MPI, "-np", "1", TT, "tune", *GEMM, "--db", other, ":",
         "-np", "1", TT, "tune", *GEMM[:-4], "--backend", "cuda", "--space", SPACE,
         "--db", other])
ok(p.returncode == 3 and "rank 1 on " in p.stderr and "rank 0's device" in p.stderr,
   "a rank with another device is refused by name")
ok(not os.path.exists(other) or rows(other, "SELECT count(*) FROM trial")[0][0] == 0,
   "and nothing was measured")

# Kill rank 1 mid-run: the job goes down (MPI's semantics), nothing stored is lost, a re-run
# resumes and measures only the rest.
kdb = os.path.join(TMP, "kill.db")
kargs = [*MPI, "-np", "3", TT, "tune", *GEMM, "--strategy", "exhaustive", "--budget", "16",
         "--db", kdb, "--json"]
job = subprocess.Popen(kargs, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
victim, stored = None, 0
deadline = time.time() + 120
while time.time() < deadline and job.poll() is None:
    if os.path.exists(kdb):
        try:
            stored = rows(kdb, "SELECT count(*) FROM trial")[0][0]
        except sqlite3.Error:
            stored = 0
    if stored >= 3:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/environ" % pid, "rb") as f:
                    env = f.read().split(b"\0")
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if b"OMPI_COMM_WORLD_RANK=1" in env and b"worker" not in cmd and \
                    os.path.basename(cmd[0]) == b"tessera-tune":
                victim = int(pid)
                break
        if victim:
            os.kill(victim, signal.SIGKILL)
            break
    time.sleep(0.05)
out, err = job.communicate(timeout=300)
ok(victim is not None and job.returncode != 0, "killing rank 1 mid-run takes the job down")
before = rows(kdb, "SELECT count(*) FROM trial")[0][0]
ok(rows(kdb, "PRAGMA integrity_check") == [("ok",)] and 3 <= before < 12,
   "the cache is intact and keeps the %d trials stored before the kill" % before)
# mpirun may return before rank 0 is gone; its run (and the points it claimed) stays 'running'
# until then, and a tuner leaves points claimed by a live run to it.
for (pid,) in rows(kdb, "SELECT pid FROM tune_run WHERE status = 'running'"):
    for _ in range(600):
        if not os.path.exists("/proc/%d" % pid):
            break
        time.sleep(0.05)
p = mrun(kargs, check=0)
res = json.loads(p.stdout)
valid = res["valid_points"]
ok(p.returncode == 0 and res["resumed"] == before and res["measured"] == valid - before and
   rows(kdb, "SELECT count(*) FROM trial")[0][0] == valid and res["exhausted"],
   "a re-run resumes the stored trials and measures only the rest")

done()
