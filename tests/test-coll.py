#!/usr/bin/env python3
"""test-coll.py — collectives tuned over MPI end to end: `tessera-tune all_reduce|all_gather|
reduce_scatter --ranks R` launches R ranks (oversubscribed on a small machine) for each point of
Open MPI's algorithm space, verifies every result against the exact sums, stores every trial
under a key with the ranks and topology, and resumes without measuring again. A launch that
crashes, hangs or returns wrong sums is that candidate's trial status and the tune goes on; a
workload, space or launcher that cannot work is refused with a message naming it.
tessera-studio's bandwidth view draws the cache's sizes as a line per algorithm.
Usage: test-coll.py TESSERA_TUNE WITH_MPI(yes|no) [TESSERA_STUDIO|none]. Prints TAP; skips (77)
without mpirun or MPI."""
import json
import os
import stat
import sys
import xml.etree.ElementTree as ET

from taputil import done, mpi_env, ok, rows, run, scratch, without_leak_check

TT, WITH_MPI = sys.argv[1], sys.argv[2] == "yes"
STUDIO = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] != "none" else None
TMP = scratch("tessera-coll-test-")
# The collectives' ranks leave no Open MPI block that the fast unwinder cannot attribute to a
# suppressed library (a distributed tune's ranks, test-mpi.py, do): under ASan each launch
# costs a quarter of the CPU it did with the slow one, and leaks are still checked.
MPIRUN, ENV = mpi_env(WITH_MPI, os.path.join(TMP, "cache"), slow_unwind=False)
# The whole space's launches repeat the all_reduce f32 path that the model-guided tune and the
# sweep below leak-check.
ENV_REPEAT = without_leak_check(ENV)
DB = os.path.join(TMP, "coll.db")
# Short launches: a few rounds of a few ms each.
QUICK = ["--db", DB, "--samples", "3", "--json"]


def tune(op, shape, ranks, *extra, check=0, env=ENV):
    p = run([TT, op, "--shape", shape, "--ranks", str(ranks), *QUICK, *extra], env, check)
    return p, (json.loads(p.stdout) if p.returncode in (0, 1) and p.stdout.strip() else None)


def algorithm(schedule):
    return schedule.split('algorithm="')[1].split('"')[0]


def forced_ok(trial, param):
    """The library's own name for what ran (MPI_T) is the point's algorithm."""
    got = trial["metrics"]["forced"][param]
    want = algorithm(trial["schedule"])
    return got == ("ignore" if want == "default" else want)


# --- all_reduce f32 at 2 ranks: the whole space, verified, and the key ---
p, out = tune("all_reduce", "BYTES=65536", 2, env=ENV_REPEAT)
ok(p.returncode == 0 and out is not None, "all_reduce f32 at 2 ranks tunes")
ok(out["n_valid"] == 10 and out["n_measured"] == 10 and out["exhausted"],
   "all 10 points of Open MPI's allreduce space are launched (segments only on the segmented ring)")
ok(out["n_ok"] == 10 and all(t["status"] == "ok" for t in out["trials"]),
   "every algorithm's sums are exact")
ok(all(forced_ok(t, "coll_tuned_allreduce_algorithm") for t in out["trials"]),
   "each trial ran the algorithm it is filed under, as Open MPI itself reports it")
seg = [t for t in out["trials"] if algorithm(t["schedule"]) == "segmented_ring"]
ok(len(seg) == 4 and all(
    t["metrics"]["forced"]["coll_tuned_allreduce_algorithm_segmentsize"] ==
    int(t["schedule"].split("segment=")[1].rstrip(")")) for t in seg),
   "the segmented ring's segment size reaches the library")
best = out["best"]
ok(best is not None and best["busbw_GBps"] > 0 and best["speedup_vs_default"] >= 1.0,
   "a best is kept, at least as fast as Open MPI's own choice")
ok(abs(best["busbw_GBps"] - best["algbw_GBps"]) < 1e-9,
   "at 2 ranks all_reduce's bus bandwidth is its algorithm bandwidth (2(n-1)/n = 1)")
ok(abs(best["algbw_GBps"] - 65536 / best["median_ns"]) < 1e-6, "algbw is BYTES / time")
ok(rows(DB, "SELECT op, shape, dtype FROM workload") == [("all_reduce", "BYTES=65536,RANKS=2",
                                                          "f32")],
   "the workload key holds the size and the rank count")
dev = rows(DB, "SELECT backend, arch, compute_units FROM device")
ok(dev == [("mpi", "1 host x 2 ranks", 2)], "the device key holds the topology: %r" % dev)
tc = rows(DB, "SELECT compiler, kgen_version FROM toolchain")
ok(len(tc) == 1 and tc[0][0].startswith("Open MPI") and tc[0][1] == "tessera-coll-1",
   "the toolchain key is the MPI library: %r" % tc)
ok(rows(DB, "SELECT COUNT(*) FROM trial WHERE host IS NOT NULL AND rank IS NULL") == [(10,)],
   "trials record the host of rank 0 and no single rank")

p = run([TT, "show", "all_reduce", "--shape", "BYTES=64K", "--ranks", "2", "--db", DB, "--json"],
        ENV, 0)
shown = json.loads(p.stdout) if p.returncode == 0 else []
ok(len(shown) == 1 and len(shown[0]["trials"]) == 10 and shown[0]["backend"] == "mpi" and
   shown[0]["best"]["schedule"] == best["schedule"],
   "show lists the key's 10 trials, its best the tune's")
p = run([TT, "lookup", "all_reduce", "--shape", "BYTES=65536,RANKS=2", "--db", DB], ENV, 0)
ok(p.returncode == 0 and best["schedule"] in p.stdout and
   "run it with: OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm="
   in p.stdout, "lookup gives the best and the environment that runs it")
p = run([TT, "lookup", "all_reduce", "--shape", "BYTES=128K", "--ranks", "2", "--db", DB], ENV, 1)
ok(p.returncode == 1 and "no trials stored" in p.stdout, "lookup of a size never tuned: exit 1")

p, again = tune("all_reduce", "BYTES=65536", 2)
ok(p.returncode == 0 and again["n_resumed"] == 10 and again["n_measured"] == 0
   and again["best"]["schedule"] == best["schedule"],
   "a re-run resumes from the cache: nothing is launched again, the best stands")

# --- the α–β model: calibrated by the cache, predicting, ordering a budgeted tune ---
p, out = tune("all_reduce", "BYTES=262144", 2, "--strategy", "model", "--budget", "3")
ok(p.returncode == 0 and out["n_measured"] == 3, "a model-guided tune of 3 points")
got = rows(DB, "SELECT t.schedule, t.predicted_cost, t.strategy FROM trial t JOIN workload w "
               "ON w.id = t.workload_id WHERE w.shape = 'BYTES=262144,RANKS=2' ORDER BY t.id")
ok(len(got) == 3 and algorithm(got[0][0]) == "default" and got[0][1] is None,
   "Open MPI's own choice is measured first, as the baseline (no prediction)")
ok(all(g[1] is not None and g[1] > 0 and g[2] == "model" for g in got[1:]) and
   got[1][1] <= got[2][1],
   "then the points the model, calibrated on the cache's 10 trials, predicts fastest: %r" % got)
p = run([TT, "coll-model", "--db", DB, "--json"], ENV, 0)
model = json.loads(p.stdout) if p.returncode == 0 else {"machines": [], "links": []}
m = [x for x in model["machines"] if x["dtype"] == "f32" and x["machine"].endswith(", 1 host")]
ok(len(m) == 1 and m[0]["points"] == 11 and m[0]["median_rel_err"] >= 0 and
   len(m[0]["predictions"]) == 18,
   "coll-model fits the 2-rank machine's f32 trials and predicts all_reduce at 8 and 72 ranks")
links = {x["name"]: x for x in model["links"]}
h100 = [x for x in links.get("h100-nvlink", {}).get("predictions", [])
        if x["algorithm"] == "ring" and x["ranks"] == 8 and x["bytes"] == 2 ** 30]
ok(len(h100) == 1 and 430 < h100[0]["busbw_GBps"] < 450 and "gb200-nvl72" in links,
   "and NVLink machines from their figures: a GiB on 8 H100s just under the 450 GB/s links")

# --- other ops, dtypes and rank counts ---
p, out = tune("all_reduce", "BYTES=4096", 3, "--dtype", "bf16", "--space",
              'dict(algorithm=["ring", "recursive_doubling"])')
ok(p.returncode == 0 and out["n_ok"] == 2, "bf16 all_reduce at 3 ranks (software sum) is exact")
ok(out["device"].endswith("x 3 ranks") and out["topology"].startswith("1 host x 3 ranks"),
   "3 ranks are another key")
p, out = tune("all_gather", "BYTES=8192", 3, "--dtype", "f16")
ok(p.returncode == 0 and out["n_valid"] == 4 and out["n_ok"] == 4,
   "all_gather at 3 ranks: neighbor (even), two_proc (2) and recursive doubling (powers of 2) "
   "are left out, the rest exact")
ok(all(forced_ok(t, "coll_tuned_allgather_algorithm") for t in out["trials"]),
   "all_gather's algorithms reach the library")
ok(abs(out["best"]["algbw_GBps"] - 3 * 8192 / out["best"]["median_ns"]) < 1e-6 and
   abs(out["best"]["busbw_GBps"] - out["best"]["algbw_GBps"] * 2 / 3) < 1e-6,
   "all_gather's size is BYTES x RANKS and its bus factor (n-1)/n")
p, out = tune("reduce_scatter", "BYTES=8192", 4)
ok(p.returncode == 0 and out["n_valid"] == 5 and out["n_ok"] == 5,
   "reduce_scatter at 4 ranks: all 5 algorithms exact")
ok(abs(out["best"]["busbw_GBps"] - out["best"]["algbw_GBps"] * 3 / 4) < 1e-6,
   "reduce_scatter's bus factor is (n-1)/n")

p, out = tune("all_reduce", "BYTES=1K..4K", 2, "--space", 'dict(algorithm=["ring"])')
ok(p.returncode == 0 and [x["shape"] for x in out["sizes"]] ==
   ["BYTES=1024,RANKS=2", "BYTES=2048,RANKS=2", "BYTES=4096,RANKS=2"] and
   all(x["n_ok"] == 1 for x in out["sizes"]),
   "BYTES=1K..4K sweeps the sizes, doubling, each its own key")
p = run([TT, "all_reduce", "--shape", "BYTES=4K..1K", "--ranks", "2", "--db", DB], ENV, 2)
ok(p.returncode == 2 and "not a size sweep" in p.stderr, "a malformed sweep is refused")

if STUDIO:
    # Every size of all_reduce f32 at 2 ranks in the cache: 1K, 2K, 4K (ring only), 64K (the
    # whole space), 256K (the three the model picked, which depend on the timings).
    svg_path = os.path.join(TMP, "bw.svg")
    wid = rows(DB, "SELECT id FROM workload WHERE op = 'all_reduce' AND dtype = 'f32' AND "
                   "shape = 'BYTES=1024,RANKS=2'")[0][0]
    sizes = {}
    for shape, schedule in rows(DB, "SELECT w.shape, t.schedule FROM trial t JOIN workload w ON "
                                    "w.id = t.workload_id WHERE w.op = 'all_reduce' AND "
                                    "w.dtype = 'f32' AND w.shape LIKE '%,RANKS=2' AND "
                                    "t.status = 'ok'"):
        sizes.setdefault(algorithm(schedule), set()).add(shape)
    env = dict(ENV)
    env.pop("DISPLAY", None)
    p = run([STUDIO, DB, "--export", "bandwidth", "--workload", str(wid), "--output", svg_path],
            env, 0)
    NS = "{http://www.w3.org/2000/svg}"
    series = {}
    if p.returncode == 0:
        for g in ET.parse(svg_path).getroot().iter(NS + "g"):
            if g.get("class") == "series":
                series[g.get("id")] = [c for c in g if c.tag != NS + "title" and
                                       c.tag != NS + "polyline"]
    ok(set(series) == set(sizes) and len(series) == 7,
       "tessera-studio's bandwidth view: a line per algorithm of the cache's sizes: %r"
       % sorted(series))
    ok(all(len(series[a]) == len(sizes[a]) for a in series) and len(series["ring"]) >= 4,
       "each algorithm's line has a point per size it was measured at: %r"
       % {a: len(v) for a, v in series.items()})
else:
    print("# no tessera-studio in this build: its bandwidth view is not checked")

# --- candidates that crash, hang or sum wrong: their trials, and the tune goes on ---
wrapper = os.path.join(TMP, "launcher.sh")
with open(wrapper, "w") as f:
    f.write("""#!/bin/sh
# ring crashes, recursive doubling hangs, nonoverlapping's rank 1 spoils its sums.
case "$OMPI_MCA_coll_tuned_allreduce_algorithm" in
  4) kill -SEGV $$ ;;
  3) exec sleep 120 ;;
  2) export TESSERA_TEST_OPS=1 TESSERA_TEST_COLL_CORRUPT=1 ;;
esac
exec %s "$@"
""" % MPIRUN)
os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IEXEC)
DB2 = os.path.join(TMP, "faults.db")
p = run([TT, "all_reduce", "--shape", "BYTES=4096", "--ranks", "2", "--db", DB2, "--samples",
         "2", "--json", "--timeout", "10", "--launcher", wrapper, "--space",
         'dict(algorithm=["ring", "recursive_doubling", "nonoverlapping", "basic_linear"])'],
        ENV, 0)
out = json.loads(p.stdout) if p.returncode == 0 else None
status = {algorithm(t["schedule"]): t for t in out["trials"]} if out else {}
ok(out is not None and out["n_measured"] == 4, "the tune survives its faulty candidates")
ok(status.get("ring", {}).get("status") == "runtime_error" and
   "signal 11" in status["ring"]["message"],
   "a launch that crashes is a runtime_error naming the signal: %r" % status.get("ring"))
ok(status.get("recursive_doubling", {}).get("status") == "timeout",
   "a launch that hangs is killed at --timeout and is a timeout trial")
msg = status.get("nonoverlapping", {}).get("message", "")
ok(status.get("nonoverlapping", {}).get("status") == "wrong_result" and "rank 1" in msg and
   "element 0" in msg, "wrong sums are a wrong_result naming the rank and element: %r" % msg)
ok(status.get("basic_linear", {}).get("status") == "ok" and
   out["best"]["schedule"] == 'dict(algorithm="basic_linear", segment=0)',
   "the sound candidate after them is measured and is the best")

# --- NCCL: one rank needs no MPI; without a GPU it says so ---
p = run([TT, "all_reduce", "--backend", "nccl", "--shape", "BYTES=1M", "--ranks", "1", "--db",
         DB, "--dtype", "bf16", "--space", 'dict(protocol=["default"])', "--json"], ENV)
if p.returncode == 3:
    ok("no CUDA device" in p.stderr or "NCCL cannot be loaded" in p.stderr,
       "NCCL on a machine without a GPU: exit 3, saying why: " + p.stderr.strip()[-200:])
else:
    out = json.loads(p.stdout) if p.returncode == 0 else None
    ok(out is not None and out["n_ok"] == 1 and out["backend"] == "nccl",
       "NCCL at one rank on this machine's GPU: verified and timed")

# --- what is refused, and how ---
p = run([TT, "all_reduce", "--shape", "BYTES=6", "--ranks", "2", "--db", DB], ENV, 2)
ok(p.returncode == 2 and "not a whole number of f32 elements" in p.stderr,
   "a size that is not whole elements is refused: " + p.stderr.strip())
p = run([TT, "reduce_scatter", "--shape", "BYTES=8", "--ranks", "4", "--db", DB], ENV, 2)
ok(p.returncode == 2 and "does not split into 4 blocks" in p.stderr,
   "a reduce_scatter size that does not split over the ranks is refused")
p = run([TT, "all_reduce", "--shape", "BYTES=64", "--ranks", "2", "--db", DB, "--space",
         'dict(algorithm=["rings"])'], ENV, 2)
ok(p.returncode == 2 and '"rings"' in p.stderr and '"ring"' in p.stderr,
   "an unknown algorithm is refused, listing Open MPI's")
p = run([TT, "all_reduce", "--shape", "BYTES=64", "--ranks", "2", "--db", DB, "--launcher",
         os.path.join(TMP, "no-such-mpirun")], ENV, 3)
ok(p.returncode == 3 and "cannot start the launcher" in p.stderr,
   "a launcher that does not exist is a machine error naming it")
p = run([MPIRUN, "-np", "2", TT, "all_reduce", "--shape", "BYTES=64", "--db", DB], ENV, 2)
ok(p.returncode == 2 and "outside mpirun" in p.stderr,
   "started under mpirun, a collective's tune says to run it outside")
ok(rows(DB, "SELECT COUNT(*) FROM workload WHERE shape = 'BYTES=64,RANKS=2'") == [(0,)],
   "nothing refused was stored")

done()
