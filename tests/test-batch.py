#!/usr/bin/env python3
"""test-batch.py — end-to-end tests of `tessera-tune batch FILE` on the CPU, through the real
binary and a real SQLite file: a list of workloads tuned into one cache, each once (a repeated
line is not tuned again), the line's options over the batch's, a re-run that measures nothing,
the JSON output, and files with bad lines refused before anything is tuned. Prints TAP."""
import json
import os
import socket
import sys

from taputil import done, ok, rows, run, scratch

TT = sys.argv[1]
TMP = scratch("tessera-batch-test-")
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"))


def tt(*args, check=None):
    return run([TT, *args], ENV, check)


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path



SPACE = "block(m=[72], n=[2016], k=[256]).micro(m=[6], n=[8,16]).vector([8]).threads([1])"
db = os.path.join(TMP, "batch.db")
good = write("model.txt", f"""# the shapes of a small model
gemm --shape M=64,N=48,K=32 --space '{SPACE}'
gemm --shape M=96,N=64,K=32 --space '{SPACE}' --budget 1

softmax_safe --shape M=32,N=128 --strategy random
gemm --shape M=64,N=48,K=32 --space '{SPACE}'   # the same layer again
""")
p = tt("batch", good, "--backend", "cpu", "--db", db, "--budget", "2", check=0)
ok(p.returncode == 0, "a batch of three workloads and a repeat is tuned")
ok([l for l in p.stdout.splitlines() if l.startswith("== workload")] == [
    f"== workload 1 of 3 ({good} line 2): gemm M=64,N=48,K=32 f32 in {SPACE}",
    f"== workload 2 of 3 ({good} line 3): gemm M=96,N=64,K=32 f32 in {SPACE}",
    f"== workload 3 of 3 ({good} line 5): softmax_safe M=32,N=128 f32"],
   "each workload is tuned once, in file order, named with its line")
table = p.stdout[p.stdout.index("batch " + good):].splitlines()
ok(table[0] == f"batch {good}: 4 workloads" and len(table) == 6 and
   table[2].split()[:2] == ["2", "tuned"] and table[5].split()[:3] == ["6", "repeat", table[2].split()[2]],
   "the closing table lists every line, the repeat with its first line's best")
counts = dict(rows(db, "SELECT w.op || ' ' || w.shape, count(*) FROM trial t "
                       "JOIN workload w ON w.id = t.workload_id GROUP BY w.id"))
ok(counts == {"gemm M=64,N=48,K=32": 2, "gemm M=96,N=64,K=32": 1, "softmax_safe M=32,N=128": 2},
   "every workload's trials are in the one cache; the line's --budget 1 beats the batch's 2")
ok(rows(db, "SELECT count(*) FROM best")[0][0] == 3, "each workload has its best stored")
ok(rows(db, "SELECT DISTINCT host, rank FROM trial") == [(socket.gethostname(), None)],
   "every trial names the host that measured it (no MPI rank outside MPI)")
strategies = rows(db, "SELECT DISTINCT r.strategy FROM tune_run r JOIN trial t ON t.run_id = r.id "
                      "JOIN workload w ON w.id = t.workload_id WHERE w.op = 'softmax_safe'")
ok(strategies == [("random",)], "a line's --strategy applies to its workload alone")

# Again: every stored trial is resumed, not measured again (the budget buys new points where
# the space has any); JSON lines, one a workload, then the batch's.
p = tt("batch", good, "--backend", "cpu", "--db", db, "--budget", "2", "--json", check=0)
objs = [json.loads(l) for l in p.stdout.splitlines()]
ok(p.returncode == 0 and len(objs) == 4 and [o["resumed"] for o in objs[:3]] == [2, 1, 2] and
   objs[0]["measured"] == 0 and objs[0]["exhausted"],
   "a re-run resumes every stored trial and prints one JSON object a workload")
summary = objs[3]["workloads"]
ok([w["line"] for w in summary] == [2, 3, 5, 6] and
   [w["status"] for w in summary] == ["tuned", "tuned", "tuned", "repeat"] and
   summary[3]["repeats_line"] == 2 and
   summary[3]["best_median_ns"] == summary[0]["best_median_ns"] > 0,
   "the batch's JSON object gives each line's status and best time")

# Bad lines: every one reported with its line number, nothing tuned.
bad = write("bad.txt", """gemm --shape M=64,N=48,K=32
gemmm --shape M=64,N=48,K=32
gemm --shape M=64,N=48
gemm --shape M=8,N=8,K=8 --db other.db
gemm --shape 'M=8,N=8,K=8
--shape M=8,N=8,K=8
""")
fresh = os.path.join(TMP, "fresh.db")
p = tt("batch", bad, "--backend", "cpu", "--db", fresh, check=2)
err = p.stderr
ok(p.returncode == 2 and f"{bad}:2: " in err and "gemmm" in err,
   "an unknown op is named with its line")
ok(f"{bad}:3: " in err and "K" in err.split(f"{bad}:3: ")[1].splitlines()[0],
   "a shape missing a dim is named with its line")
ok(f"{bad}:4: " in err and "the whole batch's" in err, "--db on a line is refused, saying why")
ok(f"{bad}:5: " in err, "an unterminated quote is named with its line")
ok(f"{bad}:6: " in err and "one OP first" in err, "a line without an OP is refused")
ok(not os.path.exists(fresh) or rows(fresh, "SELECT count(*) FROM trial")[0][0] == 0,
   "nothing is tuned when a line is bad")

p = tt("batch", write("empty.txt", "# nothing\n\n"), "--backend", "cpu", "--db", fresh, check=2)
ok(p.returncode == 2 and "names no workload" in p.stderr, "a file without workloads is refused")
p = tt("batch", os.path.join(TMP, "missing.txt"), "--backend", "cpu", check=2)
ok(p.returncode == 2 and "missing.txt" in p.stderr, "a missing file is named")
p = tt("batch", good, "--shape", "M=1,N=1,K=1", check=2)
ok(p.returncode == 2, "--shape belongs to a line, not the batch")

done()
