#!/usr/bin/env python3
"""test-perfgate.py — end-to-end tests of `tessera-perfgate` on the CPU through the real binary
and a real SQLite file: bad suites and a missing baseline exit 2 with an actionable message; an
unchanged build passes; a workload made 15% slower (the hidden --inject-slowdown hook, a real
busy-wait inside each timed sample) fails with exit 1 in the table, the Markdown and the JUnit
XML; a kernel that now computes wrong results fails; stored runs are compared by id and commit.
Prints TAP."""
import os
import shutil
import sqlite3
import subprocess
import sys
import xml.etree.ElementTree as ET

from taputil import scratch

GATE = sys.argv[1]
TMP = scratch("tessera-perfgate-test-")
DB = os.path.join(TMP, "gate.db")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"), TESSERA_TEST_OPS="1")
count = 0


def ok(cond, what):
    global count
    count += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (count, what), flush=True)
    if not cond:
        print("1..%d" % count)
        sys.exit(1)


def gate(*args, expect=None):
    p = subprocess.run([GATE, *args], env=ENV, capture_output=True, text=True, timeout=900,
                       cwd=TMP)
    if expect is not None and p.returncode != expect:
        print("# exit %d from %s\n# stdout: %s\n# stderr: %s" % (
            p.returncode, args, p.stdout[-3000:].replace("\n", "\n# "),
            p.stderr[-3000:].replace("\n", "\n# ")))
    return p


def suite(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# Small workloads so the test stays quick; the measuring time is cut with --time-scale.
SUITE = suite("small.suite", """\
[gate]
name = small
backend = cpu
time = 600ms

[gemm]
op = gemm
shape = M=96,N=96,K=96
schedule = default

[fault]
op = test_fault
shape = N=65536
schedule = dict(mode="ok")
threshold = 10%
""")


def junit(path):
    root = ET.parse(path).getroot()
    ts = root if root.tag == "testsuite" else root.find("testsuite")
    cases = {c.get("name"): c for c in ts.iter("testcase")}
    return ts, cases


# ---- bad input: exit 2 with a message naming what is wrong ----
p = gate()
ok(p.returncode == 2 and "baseline" in p.stderr and "check" in p.stderr,
   "no command: exit 2 and the command list")
p = gate("check", "--suite", os.path.join(TMP, "missing.suite"), "--db", DB)
ok(p.returncode == 2 and "missing.suite" in p.stderr, "a missing suite file: exit 2 naming it")
bad = suite("bad-op.suite", "[g]\nop = gemmm\nshape = M=8,N=8,K=8\n")
p = gate("baseline", "--suite", bad, "--db", DB)
ok(p.returncode == 2 and "[g]" in p.stderr and "gemmm" in p.stderr,
   "an unknown op: exit 2 naming the workload and the op")
bad = suite("bad-key.suite", "[g]\nop = gemm\nshape = M=8,N=8,K=8\nthreshhold = 5%\n")
p = gate("baseline", "--suite", bad, "--db", DB)
ok(p.returncode == 2 and "threshhold" in p.stderr and "threshold" in p.stderr,
   "a misspelt key: exit 2 with a suggestion")
bad = suite("bad-thr.suite", "[g]\nop = gemm\nshape = M=8,N=8,K=8\nthreshold = 150%\n")
p = gate("baseline", "--suite", bad, "--db", DB)
ok(p.returncode == 2 and "threshold" in p.stderr, "a threshold out of range: exit 2")
bad = suite("bad-shape.suite", "[g]\nop = gemm\nshape = M=8,N=8\n")
p = gate("baseline", "--suite", bad, "--db", DB)
ok(p.returncode == 2 and "K" in p.stderr, "a shape missing a dim: exit 2 naming it")
bad = suite("empty.suite", "[gate]\nname = nothing\n")
p = gate("baseline", "--suite", bad, "--db", DB)
ok(p.returncode == 2 and "no workloads" in p.stderr, "a suite without workloads: exit 2")
bad = suite("best.suite", "[g]\nop = gemm\nshape = M=8,N=8,K=8\nschedule = best\n")
p = gate("baseline", "--suite", bad, "--db", DB)
ok(p.returncode == 2 and "tessera-tune tune" in p.stderr,
   "schedule=best never tuned: exit 2 saying how to tune it")

p = gate("check", "--suite", SUITE, "--db", DB)
ok(p.returncode == 2 and "no baseline" in p.stderr
   and "tessera-perfgate baseline --suite" in p.stderr,
   "check without a baseline: exit 2 saying how to record one")
p = gate("check", "--suite", SUITE, "--db", DB, "--threshold", "abc")
ok(p.returncode == 2 and "--threshold" in p.stderr, "a malformed --threshold: exit 2")

# ---- a baseline, then an unchanged check passes ----
COMMIT = "0123456789abcdef0123456789abcdef01234567"
p = gate("baseline", "--suite", SUITE, "--db", DB, "--commit", COMMIT, "--label", "test",
         expect=0)
ok(p.returncode == 0 and "baseline #1" in p.stdout, "baseline: stored as run #1")
rows = sqlite3.connect(DB).execute(
    "SELECT name, status, length(samples) > 10, artifact_hash IS NOT NULL FROM gate_result "
    "WHERE run_id = 1 ORDER BY id").fetchall()
ok(rows == [("gemm", "ok", 1, 1), ("fault", "ok", 1, 1)],
   "baseline: samples and kernel binaries stored per workload")
ints = sqlite3.connect(DB).execute(
    "SELECT launch_ints FROM gate_result WHERE run_id = 1 AND name = 'gemm'").fetchone()[0]
ok(ints is not None and len(ints.split(",")) == 5 and all(v.isdigit() for v in ints.split(",")),
   "baseline: the CPU gemm binary's block and micro-tile sizes stored with it (%s)" % ints)

md, xml = os.path.join(TMP, "pass.md"), os.path.join(TMP, "pass.xml")
p = gate("check", "--suite", SUITE, "--db", DB, "--markdown", md, "--junit", xml, expect=0)
ok(p.returncode == 0, "an unchanged build passes (exit 0)")
ok("baseline kernel binary" not in p.stdout + open(md).read(),
   "the stored binaries ran side by side with the current ones, launched as stored")
ok("gemm" in p.stdout and "fault" in p.stdout and "pass" in p.stdout.lower(),
   "the table lists every workload with its verdict")
ts, cases = junit(xml)
ok(ts.get("tests") == "2" and ts.get("failures") == "0" and set(cases) == {"gemm", "fault"},
   "JUnit: two test cases, no failure")
text = open(md).read()
ok(text.startswith("## ") and "pass" in text.lower() and "| gemm" in text.replace("|gemm", "| gemm"),
   "Markdown: a pass title and the table")

# ---- a 15% slowdown of one workload fails ----
md, xml = os.path.join(TMP, "slow.md"), os.path.join(TMP, "slow.xml")
p = gate("check", "--suite", SUITE, "--db", DB, "--inject-slowdown", "0.15", "--inject-only",
         "gemm", "--markdown", md, "--junit", xml, expect=1)
ok(p.returncode == 1, "a 15% slower gemm fails the gate (exit 1)")
gemm_line = [l for l in p.stdout.splitlines() if l.strip().startswith("gemm")]
ok(gemm_line and "regression" in gemm_line[0].lower(), "the table marks gemm as a regression")
fault_line = [l for l in p.stdout.splitlines() if l.strip().startswith("fault")]
ok(fault_line and "regression" not in fault_line[0].lower(), "... and not the untouched workload")
ts, cases = junit(xml)
ok(ts.get("failures") == "1" and cases["gemm"].find("failure") is not None
   and cases["fault"].find("failure") is None, "JUnit: one failure, on gemm")
text = open(md).read()
ok("regression" in text.lower() and text.find("gemm") < text.find("fault"),
   "Markdown: regression title, the regression listed first")
verdicts = sqlite3.connect(DB).execute(
    "SELECT r.name, r.verdict FROM gate_result r JOIN gate_run g ON g.id = r.run_id "
    "WHERE g.id = (SELECT max(id) FROM gate_run) ORDER BY r.id").fetchall()
ok(verdicts == [("gemm", "regression"), ("fault", "pass")], "the check's verdicts are stored")

# ---- a kernel that is now wrong fails; a new workload passes with a note ----
broken = suite("broken.suite", open(SUITE).read().replace('mode="ok"', 'mode="wrong"') +
               "\n[saxpy]\nop = saxpy\nshape = N=4096\n")
p = gate("check", "--suite", broken, "--db", DB, "--no-store", expect=1)
fault_line = [l for l in p.stdout.splitlines() if l.strip().startswith("fault")]
ok(p.returncode == 1 and fault_line and "fail" in fault_line[0].lower(),
   "a kernel that now computes wrong results fails the gate")
saxpy_line = [l for l in p.stdout.splitlines() if l.strip().startswith("saxpy")]
ok(saxpy_line and "new" in saxpy_line[0].lower(), "a workload missing from the baseline is new")

# ---- stored runs: list, compare by id and by commit ----
p = gate("list", "--db", DB, expect=0)
ok(p.returncode == 0 and "baseline" in p.stdout and "check" in p.stdout and "0123456789" in p.stdout,
   "list shows the baseline and the checks with their commit")
p = gate("compare", "--db", DB, "--base", "#1", "--head", "#1", expect=0)
ok(p.returncode == 0, "a run compared with itself passes")
p = gate("compare", "--db", DB, "--suite", SUITE, "--backend", "cpu", "--base", "0123456",
         "--head", "#1", expect=0)
ok(p.returncode == 0, "a run found by a commit prefix")
p = gate("compare", "--db", DB, "--suite", SUITE, "--backend", "cpu", "--base", "fedcba98")
ok(p.returncode == 2 and "fedcba98" in p.stderr and "tessera-perfgate list" in p.stderr,
   "an unknown commit: exit 2 saying how to list runs")
p = gate("check", "--suite", SUITE, "--db", DB, "--base", "#99")
ok(p.returncode == 2 and "#99" in p.stderr, "check --base with an unknown run: exit 2")
n_runs = sqlite3.connect(DB).execute("SELECT count(*) FROM gate_run").fetchone()[0]
ok(n_runs == 3, "--no-store left no run behind (baseline + two checks)")

# ---- a cache whose stored baseline binary was replaced: never loaded, the check fails ----
evil_c, evil_so, pwned = (os.path.join(TMP, n) for n in ("evil.c", "evil.so", "pwned"))
with open(evil_c, "w") as f:
    f.write('#include <stdio.h>\n__attribute__((constructor)) static void own(void)\n'
            '{ FILE *f = fopen("%s", "w"); if (f) fclose(f); }\n'
            'void ts_kernel(void) {}\n' % pwned)
subprocess.run(["cc", "-shared", "-fPIC", "-o", evil_so, evil_c], check=True)
tampered = os.path.join(TMP, "tampered.db")
shutil.copy(DB, tampered)
con = sqlite3.connect(tampered)
con.execute("UPDATE gate_artifact SET bytes = ? WHERE hash = (SELECT artifact_hash FROM "
            "gate_result WHERE run_id = 1 AND name = 'gemm')", (open(evil_so, "rb").read(),))
con.commit()
con.close()
p = gate("check", "--suite", SUITE, "--db", tampered, "--no-store")
ok(p.returncode not in (0, 1) and "altered" in p.stderr and "not loaded" in p.stderr,
   "a replaced baseline binary fails the check, named (exit %d): %s" % (
       p.returncode, p.stderr.strip()[-200:]))
ok(not os.path.exists(pwned), "... and its code never ran")

# ---- kernels that crash or hang fail their workload; the gate still reports ----
crashy = suite("crashy.suite", """\
[gate]
name = crashy
backend = cpu
time = 300ms

[boom]
op = test_fault
shape = N=4096
schedule = dict(mode="segv")

[spin]
op = test_fault
shape = N=4096
schedule = dict(mode="hang")

[gemm]
op = gemm
shape = M=64,N=64,K=64
schedule = default
""")
CDB = os.path.join(TMP, "crashy.db")
# (Under AddressSanitizer a crash is an exit with its status, not a signal.)
CRASH = ("signal 11", "exited with status")
p = gate("baseline", "--suite", crashy, "--db", CDB, "--timeout", "3", "--commit", COMMIT)
ok(p.returncode == 1 and any(c in p.stdout for c in CRASH) and "within 3.0 s" in p.stdout,
   "baseline: a crashing and a hanging kernel fail, named (exit %d)" % p.returncode)
md, xml = os.path.join(TMP, "crashy.md"), os.path.join(TMP, "crashy.xml")
p = gate("check", "--suite", crashy, "--db", CDB, "--timeout", "3", "--markdown", md, "--junit",
         xml)
lines = {l.split()[0]: l for l in p.stdout.splitlines() if l.strip()}
ok(p.returncode == 1 and "fail" in lines.get("boom", "").lower()
   and "fail" in lines.get("spin", "").lower(),
   "check: the crash and the hang are failed workloads (exit %d)" % p.returncode)
ok(any(c in p.stdout for c in CRASH) and "hung" in p.stdout,
   "... the table says which crashed, which hung")
ts, cases = junit(xml)
ok(os.path.exists(md) and cases["boom"].find("failure") is not None
   and cases["spin"].find("failure") is not None and cases["gemm"].find("failure") is None,
   "... the Markdown and JUnit reports are written; the healthy workload is not failed (%s)"
   % (lines.get("gemm", "no gemm line"),))
con = sqlite3.connect(CDB)
runs = con.execute("SELECT kind, status FROM gate_run ORDER BY id").fetchall()
stored = con.execute("SELECT name, status FROM gate_result WHERE run_id = 2 ORDER BY id").fetchall()
con.close()
ok(runs == [("baseline", "done"), ("check", "done")], "... both runs finished: %s" % runs)
ok(stored == [("boom", "runtime_error"), ("spin", "timeout"), ("gemm", "ok")],
   "... stored as runtime_error and timeout: %s" % stored)

# A stored baseline binary that crashes (its hash consistent: a cache from an older build):
# the check compares with the stored samples and says why.
segv_c, segv_so = os.path.join(TMP, "segv.c"), os.path.join(TMP, "segv.so")
with open(segv_c, "w") as f:
    f.write("#include <stdint.h>\n"
            "void ts_kernel(void *const *b, const int64_t *i, const double *d)\n"
            "{ (void)b; (void)i; (void)d; *(volatile int *)(uintptr_t)8 = 1; }\n")
subprocess.run(["cc", "-shared", "-fPIC", "-o", segv_so, segv_c], check=True)
import hashlib
blob = open(segv_so, "rb").read()
digest = hashlib.sha256(blob).hexdigest()
crashbase = os.path.join(TMP, "crashbase.db")
shutil.copy(DB, crashbase)
con = sqlite3.connect(crashbase)
con.execute("INSERT INTO gate_artifact (hash, backend, entry, bytes) VALUES (?, 'cpu', "
            "'ts_kernel', ?)", (digest, blob))
con.execute("UPDATE gate_result SET artifact_hash = ? WHERE run_id = 1 AND name = 'fault'",
            (digest,))
con.commit()
con.close()
p = gate("check", "--suite", SUITE, "--db", crashbase, "--no-store", "--timeout", "5")
fault_line = [l for l in p.stdout.splitlines() if l.strip().startswith("fault")]
ok(p.returncode in (0, 1) and fault_line and "fail" not in fault_line[0].lower()
   and "crashes here" in p.stdout and any(c in p.stdout for c in CRASH),
   "a baseline binary that crashes: compared with its samples, the crash named (exit %d)"
   % p.returncode)

# ---- a kernel file's kernels as workloads (kernel=, op= naming the kernel and its flags) ----
kdir = os.path.join(TMP, "k")
os.makedirs(kdir)
kfile = os.path.join(kdir, "affine.tsk")
shutil.copy(os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels",
                         "affine_flag.tsk"), kfile)
KSUITE = suite("kernels.suite", """\
[gate]
name = kernels
backend = cpu
time = 400ms

[relu]
kernel = k/affine.tsk
shape = N=65536

[plain]
kernel = k/affine.tsk
op = affine+relu=false
shape = N=65536
schedule = block(n=1024).vector(4)
""")
KDB = os.path.join(TMP, "kernels.db")
p = gate("baseline", "--suite", KSUITE, "--db", KDB, expect=0)
ok(p.returncode == 0 and "baseline #1" in p.stdout and "kernel:affine@" in p.stderr
   and "kernel:affine+relu=false@" in p.stderr,
   "baseline of a kernel file's kernels, with and without their flag: stored under their ops")
con = sqlite3.connect(KDB)
sources = [r[0] for r in con.execute("SELECT op FROM kernel_source ORDER BY op")]
con.close()
ok(len(sources) == 2 and all(s.startswith("kernel:affine") for s in sources),
   "the gate's database keeps the kernels' source (%s)" % sources)
p = gate("check", "--suite", KSUITE, "--db", KDB, "--no-store", expect=0)
lines = [l for l in p.stdout.splitlines() if l.strip().startswith(("relu", "plain"))]
ok(p.returncode == 0 and len(lines) == 2 and all("pass" in l.lower() for l in lines),
   "an unchanged kernel file passes the check")
with open(kfile, "a") as f:
    f.write("# edited\n")
p = gate("check", "--suite", KSUITE, "--db", KDB, "--no-store", expect=0)
lines = [l for l in p.stdout.splitlines() if l.strip().startswith(("relu", "plain"))]
ok(p.returncode == 0 and len(lines) == 2 and all("pass" in l.lower() for l in lines)
   and "kernel:affine@" in p.stderr and sources[0].split("@")[1] not in p.stderr,
   "an edited kernel file is another op, checked against its workload's baseline of the "
   "earlier text")

print("1..%d" % count)
