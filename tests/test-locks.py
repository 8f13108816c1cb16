#!/usr/bin/env python3
"""test-locks.py — processes on one host take turns at its CPU (runtime/ts-measure-lock.h),
seen from the real binaries: a run waits while another process measures, its --timeout stops
meanwhile, and a lock held too long is given up on and told in the trial's message; the perf
gate's measuring process takes its turns too, and its report says when it could not.

The other process here is this test, holding the lock file with flock(2) as tessera does."""
import fcntl
import json
import os
import re
import subprocess
import sys
import time

from taputil import done, ok, run, scratch

TT, GATE = sys.argv[1], sys.argv[2]
TMP = scratch("tessera-locks-test-")
LOCKS = os.path.join(TMP, "locks")
os.makedirs(LOCKS)
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"), TESSERA_LOCK_DIR=LOCKS)
ENV.pop("TESSERA_MEASURE_LOCK", None)
RUN = [TT, "run", "gemm", "--shape", "M=64,N=64,K=64", "--backend", "cpu", "--json"]

p = run([*RUN, "--timeout", "60"], ENV, check=0)
ok(p.returncode == 0 and json.loads(p.stdout)["message"] == "",
   "a run with the host to itself: measured alone, no note")
ok(os.path.exists(os.path.join(LOCKS, "host.lock")), "it took its turn on the host's lock file")


def hold(what):
    f = open(os.path.join(LOCKS, "host.lock"), "r+")
    fcntl.flock(f, fcntl.LOCK_EX)
    f.truncate(0)
    f.write("%d\t%s\n" % (os.getpid(), what))
    f.flush()
    return f


def let_go(f):
    f.truncate(0)
    f.flush()
    fcntl.flock(f, fcntl.LOCK_UN)
    f.close()


# The kernel is in the artifact cache now: the run's own work takes well under a second, so a
# 2 s timeout is only met if the 11 s wait does not count; past 10 s the wait is told.
HELD_S = 11.0
f = hold("test-locks.py: holding the host")
t0 = time.monotonic()
proc = subprocess.Popen([*RUN, "--timeout", "2"], env=ENV, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
time.sleep(HELD_S)
ok(proc.poll() is None, "while another process holds the host, the run waits")
let_go(f)
out, err = proc.communicate(timeout=120)
took = time.monotonic() - t0
r = json.loads(out) if proc.returncode == 0 else {}
ok(proc.returncode == 0 and r.get("status") == "ok",
   "the wait did not count against --timeout 2 (%.1f s in all; %s)" % (took, (out + err)[-400:]))
ok(took >= HELD_S and r["message"] == "", "it measured once the holder let go, alone")
ok("tessera-tune: waiting for its turn at the device: pid %d (test-locks.py: holding the host)"
   % os.getpid() in err, "a wait over 10 s is told on stderr, naming the holder: %s" % err.strip())

# A holder that never lets go: after TESSERA_MEASURE_LOCK seconds the run goes ahead, and says
# whom it waited for.
f = hold("test-locks.py: a stuck holder")
env = dict(ENV, TESSERA_MEASURE_LOCK="0.5")
t0 = time.monotonic()
p = run([*RUN, "--timeout", "60"], env, check=0)
took = time.monotonic() - t0
let_go(f)
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and took >= 0.5, "a stuck holder is given up on after 0.5 s")
msg = r["message"]
ok(msg.startswith("not measured alone: waited ") and " s for the host lock, held by pid %d "
   "(test-locks.py: a stuck holder), and went ahead without it" % os.getpid() in msg,
   "the trial's message names the holder: %s" % msg)

# The perf gate: its timed rounds wait for the device too, and a turn not had is a note.
suite = os.path.join(TMP, "small.suite")
with open(suite, "w") as f:
    f.write("[gate]\nname = small\nbackend = cpu\ntime = 300ms\n\n"
            "[gemm]\nop = gemm\nshape = M=96,N=96,K=96\nschedule = default\n")
gdb = os.path.join(TMP, "gate.db")
p = run([GATE, "baseline", "--suite", suite, "--db", gdb], ENV, check=0)
ok(p.returncode == 0, "a gate baseline with the host to itself")
f = hold("test-locks.py: holding the gate off")
p = run([GATE, "check", "--suite", suite, "--db", gdb], dict(ENV, TESSERA_MEASURE_LOCK="0.3"))
let_go(f)
ok(p.returncode in (0, 1) and re.search(r"note: not measured alone: waited 0\.\d s for the host "
                                        r"lock, held by pid %d \(test-locks\.py: holding the gate "
                                        r"off\)" % os.getpid(), p.stdout) is not None,
   "the gate's check measured past a held lock and its report says so (%s)" % p.stdout[-600:])

# Locking off: no wait at all.
f = hold("test-locks.py: ignored")
t0 = time.monotonic()
p = run([*RUN, "--timeout", "60"], dict(ENV, TESSERA_MEASURE_LOCK="off"), check=0)
took = time.monotonic() - t0
let_go(f)
ok(p.returncode == 0 and json.loads(p.stdout)["message"] == "",
   "TESSERA_MEASURE_LOCK=off measures without asking (%.1f s)" % took)
done()
