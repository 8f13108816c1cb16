#!/usr/bin/env python3
"""test-kernels.py — end-to-end tests of kernels written in the kernel language, through the
real binary: `lower --kernel` prints every stage of a kernel file's lowering, `run --kernel`
verifies it (against the op it implements, else its own expression in f64) in the tuner's
worker, `tune --kernel` stores its trials under a name that changes with the source, and each
bad input is a usage error that says what was wrong. Prints TAP."""
import json
import os
import re
import sqlite3
import sys

from taputil import done, ok, run, scratch

TT, SRC = sys.argv[1], sys.argv[2]
TMP = scratch("tessera-kernels-test-")


def with_space(src, name, knobs):
    """A copy of kernel file src in TMP whose space also names knobs ('math=[...], ')."""
    with open(src) as f:
        text = f.read()
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text.replace("space=dict(", "space=dict(" + knobs, 1))
    return path
ENV = dict(os.environ, XDG_CACHE_HOME=os.path.join(TMP, "cache"))
SAXPY = os.path.join(SRC, "examples", "saxpy.tsk")
AFFINE = os.path.join(SRC, "tests", "kernels", "affine_relu.tsk")
WRONG = os.path.join(SRC, "tests", "kernels", "wrong_saxpy.tsk")


def tt(*args):
    p = run([TT, *args], ENV, timeout=600)
    print("# tessera-tune %s -> exit %d" % (" ".join(args), p.returncode))
    return p


def rel_errors(f, shape, schedules):
    """`run --kernel f` at each schedule: its relative error, or what went wrong."""
    errs = []
    for sched in schedules:
        p = tt("run", "--kernel", f, "--shape", shape, "--schedule", sched, "--json")
        r = json.loads(p.stdout) if p.returncode == 0 else {}
        errs.append(r.get("rel_error") if r.get("status") == "ok" else (r or p.stderr))
    return errs


def as_accurate(errs):
    """Every run verified, the later ones within 1.5x the first's error (or 1e-6)."""
    return all(isinstance(v, float) for v in errs) and max(errs[1:]) <= max(1.5 * errs[0], 1e-6)


# Runs at 16 lanes need 512-bit registers; a CPU without them runs its widest, 8.
_cpu = re.search(r"^cpu .* (\d+)-bit SIMD", run([TT, "devices"], ENV).stdout, re.M)
WIDE = 16 if _cpu and int(_cpu.group(1)) >= 512 else 8
VECS = [".vector(16)", ".vector(8)"] if WIDE == 16 else [".vector(8)"]
if WIDE < 16:
    print("# this CPU has no 512-bit SIMD: runs at vector(16) are run at vector(8)")


# lower: every stage, from the kernel's own signature and space.
p = tt("lower", "--kernel", SAXPY, "--shape", "N=100000", "--stage", "all")
ok(p.returncode == 0, "lower --kernel saxpy.tsk exits 0 (%s)" % p.stderr.strip())
op = re.search(r"^graph (kernel:saxpy@[0-9a-f]{8})\(N=100000\)", p.stdout, re.M)
ok(op is not None, "the Graph IR names the kernel's op kernel:saxpy@HASH")
ok('%Y_OUT = ' + op.group(1) + '(%X, %Y) {alpha=1.5} : Tensor["N", f32]' in p.stdout,
   "y, read and written, is an input and the output; alpha takes saxpy's value")
ok(re.search(r'^space: block\(n=\[2048,4096,8192\]\)\.vector\(\[4,8\]\)'
             r'\.store\(\["cached","stream"\]\)\.threads\(\d+\)'
             r'\.where\(vector <= simd_floats\)$', p.stdout, re.M) is not None,
   "the space is the decorator's, with the threads and the machine's vectors")
ok("y_out = tile.map(((alpha * x) + y), j < min(BN, N - i0))" in p.stdout,
   "the body lowers to a Tile IR map")
ok("const float ts_v_ = ((alpha * x) + y);" in p.stdout and "Y_OUT[(i0) + j] = ts_v_;" in p.stdout,
   "the C target computes it")

# The CUDA target: one CTA per BN elements, the map over each thread's register tiles.
p = tt("lower", "--kernel", AFFINE, "--shape", "N=1000003", "--backend", "cuda", "--stage", "all")
ok(p.returncode == 0, "lower --kernel --backend cuda exits 0 (%s)" % p.stderr.strip())
ok(re.search(r"^space: .*warps\(\[4,8\]\)\.where\(BN % \(warps \* 32 \* vector\) == 0", p.stdout, re.M)
   is not None, "the CUDA space adds the warps (4 or 8) and the register-tile constraint")
ok("z = tile.map(fmaxf(((a * x) + (b * y)), 0.0f), j < PER * VEC)" in p.stdout,
   "the Tile IR maps the register tiles with the CUDA expression")
ok(re.search(r"ts_rows_load<float, 1, THREADS, VEC, BN, NCOLS>\(r_x, X, 0, i0, 1, N\);", p.stdout)
   and "r_z[(0) + j] = fmaxf(((a * x) + (b * y)), 0.0f);" in p.stdout
   and re.search(r"ts_rows_store<.*>\(Z, 0, i0, 1, r_z, 1.0f, nullptr, nullptr\);", p.stdout),
   "the CUDA C loads, maps and stores")

# run: verified against the implemented op's reference, or the kernel's own expression.
p = tt("run", "--kernel", SAXPY, "--shape", "N=100003", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["verification"].startswith("full f64 reference"),
   "saxpy.tsk runs and matches saxpy's reference (%s)" % (r or p.stderr))
p = tt("run", "--kernel", AFFINE, "--shape", "N=100003", "--schedule", "block(n=4096).vector(8)",
       "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["rel_error"] < 1e-6,
   "a kernel that implements no op matches its own expression in f64 (%s)" % (r or p.stderr))
p = tt("run", "--kernel", os.path.join(SRC, "tests", "kernels", "saxpy_bf16.tsk"), "--shape",
       "N=5001", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["tolerance"] == 0.01 and " bf16" in r["workload"],
   "a bf16 kernel runs in bf16, under bf16's bound (%s)" % (r or p.stderr))
p = tt("run", "--kernel", WRONG, "--shape", "N=4096", "--json")
r = json.loads(p.stdout) if p.stdout.startswith("{") else {}
ok(r.get("status") == "wrong_result",
   "a kernel that says it implements saxpy but subtracts is a wrong result (%s)" % r)

# Row kernels: softmax keeps exp(x - max) in a scratch row (one exp an element), layernorm
# computes its mean and rstd once a row; both match the built-in ops' references, and a row
# kernel of its own matches its row program in f64.
EX = os.path.join(SRC, "examples")
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=64,N=1000",
       "--stage", "tile")
ok(p.returncode == 0 and re.search(
    r"r0 = tile\.reduce_max\(x, j < N\).*\n.*w0 = tile\.map\(exp\(\(x - r0\)\), j < N\) sum->r1 .*\n"
    r".*let h0: f32 = 1\.0f / r1\n.*y = tile\.map\(\(w0 \* h0\), j < N\)", p.stdout)
   and "W0 = tile.alloc(shared f32[N], one f32 row, per-worker)" in p.stdout
   and "reduce_sum" not in p.stdout,
   "softmax.tsk lowers to max, a stored exp row summed as it is written, and the row scaled "
   "by its sum's reciprocal, taken once")
SM_STREAM = os.path.join(SRC, "tests", "kernels", "softmax_stream.tsk")
p = tt("lower", "--kernel", SM_STREAM, "--shape", "M=64,N=1000",
       "--schedule", 'block(m=4).store("stream")', "--stage", "all")
ok(p.returncode == 0 and re.search(r"y = tile\.map\(\(w0 \* h0\), j < N\)  with .* stream", p.stdout)
   and "ts_vf_stream_f32(Y + (i * N) + j, ts_v_);" in p.stdout
   and "ts_stream_fence();" in p.stdout,
   "a row kernel's store(\"stream\") writes its output with non-temporal stores (%s)" % p.stderr.strip())
p = tt("run", "--kernel", SM_STREAM, "--shape", "M=37,N=203",
       "--schedule", 'block(m=4).store("stream")', "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok", "softmax.tsk streaming its output verifies (%s)" % (r or p.stderr))
p = tt("lower", "--kernel", SM_STREAM, "--shape", "M=37,N=203", "--backend", "cuda",
       "--stage", "schedule")
ok(p.returncode == 0 and '.store("cached").' in p.stdout and "12 points" in p.stdout,
   "on CUDA a space's store() holds \"cached\" alone: no point repeats another (%s)"
   % (p.stdout.splitlines()[1:3] if p.returncode == 0 else p.stderr.strip()))
p = tt("lower", "--kernel", SM_STREAM, "--shape", "M=37,N=203", "--backend", "cuda",
       "--schedule", 'store("stream")', "--stage", "tile")
ok(p.returncode == 2 and 'store("stream") is a CPU knob' in p.stderr,
   "on CUDA store(\"stream\") is refused (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", SM_STREAM, "--shape", "M=64,N=1000",
       "--schedule", 'block(m=4).store("nt")', "--stage", "tile")
ok(p.returncode == 2 and 'store("nt") is not one of "cached", "stream"' in p.stderr,
   "an unknown store() is a schedule error naming it (%s)" % p.stderr.strip())
# pipeline("next"): a row's first reduction taken in the pass that writes the row before it,
# the work item's first row reduced before its loop; as accurate as "none" (the carried max of
# bf16 rows taken on the bits); refused where the first step is a scratch row, on an
# elementwise kernel, and on CUDA, where the space has "none" alone.
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=64,N=1000",
       "--schedule", 'block(m=4).pipeline("next")', "--stage", "tile")
ok(p.returncode == 0 and re.search(
    r"let iend: index = min\(i0 \+ BM, M\)\n\s*r0 = tile\.reduce_max\(x, j < N\)  with x = X\[i0 \* N:\]"
    r".*\n\s*for i in tile\.range\(i0, iend, 1\):\n\s*w0 = tile\.map\(exp", p.stdout)
   and re.search(r"y = tile\.map\(\(w0 \* h0\), j < N\) carry r0 = reduce_max\(x_nx\)  with .*"
                 r"x_nx = X\[\(min\(i \+ 1, iend - 1\)\) \* N:\] prefetch_l2=", p.stdout)
   and p.stdout.count("reduce_max") == 2,
   "softmax.tsk with pipeline(\"next\") carries each row's max in the pass before it (%s)"
   % p.stderr.strip())
SM_NEXT = os.path.join(SRC, "tests", "kernels", "softmax_next_bf16.tsk")
for f, extra in ([(os.path.join(EX, "softmax.tsk"), ""), (os.path.join(EX, "layernorm.tsk"), "")]
                 + [(SM_NEXT, v) for v in VECS]):
    errs = rel_errors(f, "M=37,N=203",
                      ['block(m=4)%s.pipeline("%s")' % (extra, pl) for pl in ("none", "next")])
    ok(as_accurate(errs),
       "%s%s verifies with pipeline(\"next\"), as accurate as \"none\" (%s)"
       % (os.path.basename(f), extra, errs))
# pipeline("skew"): row i's scratch pass takes row i + 1's max and writes row i - 1 from the
# other of two scratch rows, with that row's per-row parts kept in P0; refused where the
# kernel's rows are not a reduction, a scratch row and the output, or the output reads the
# first reduction, and on CUDA.
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=64,N=1000",
       "--schedule", 'block(m=4).pipeline("skew").store("stream")', "--stage", "tile")
ok(p.returncode == 0
   and "W0 = tile.alloc(shared f32[2 * N], two f32 rows" in p.stdout
   and "P0 = tile.alloc(register f32[1]," in p.stdout
   and re.search(r"for i in tile\.range\(i0 \+ 1, iend, 1\):\n\s*let p0: f32 = P0\[0\]\n"
                 r"\s*w0 = tile\.map\(exp\(\(x - r0\)\), j < N\) sum->r1 carry r0 = "
                 r"reduce_max\(x_nx\) and y = \(w0_pv \* p0\) \(stream\)  with .*"
                 r"y = Y\[\(i - 1\) \* N:\], w0_pv = W0\[\(i - i0 \+ 1\) % 2 \* N:\]", p.stdout)
   and re.search(r"let h0: f32 = 1\.0f / r1\n\s*P0\[0\] = h0\n\s*let p0: f32 = P0\[0\]\n"
                 r"\s*y = tile\.map\(\(w0_pv \* p0\), j < N\)  with y = Y\[\(iend - 1\) \* N:\]",
                 p.stdout)
   and p.stdout.count("reduce_max(x, j < N)") == 1,
   "softmax.tsk with pipeline(\"skew\") writes the row before from the pass over this one (%s)"
   % p.stderr.strip())
MIX = os.path.join(SRC, "tests", "kernels", "softmax_mix.tsk")
for f, extra in [(os.path.join(EX, "softmax.tsk"), ""), (MIX, VECS[0])] + [(SM_NEXT, v)
                                                                        for v in VECS]:
    errs = rel_errors(f, "M=37,N=203", [
        'block(m=%d)%s.pipeline("%s")%s' % (bm, extra, pl, "" if f == MIX else '.store("stream")')
        for pl, bm in (("none", 4), ("skew", 1), ("skew", 4), ("skew", 16))])
    ok(as_accurate(errs),
       "%s%s verifies with pipeline(\"skew\") at 1, 4 and 16 rows an item, as accurate as "
       "\"none\" (%s)" % (os.path.basename(f), extra, errs))
p = tt("lower", "--kernel", MIX, "--shape", "M=64,N=1000", "--schedule",
       'block(m=4).pipeline("skew")', "--stage", "tile")
ok(p.returncode == 0 and "P0 = tile.alloc(register f32[2]," in p.stdout
   and "and y = ((w0_pv * p0) + ((x_pv * g) * p1))" in p.stdout
   and "x_pv = X[(i - 1) * N:]" in p.stdout and "let h1: f32 = (0.5f / r1)" in p.stdout,
   "a skewed output reading x, an [N] tensor and two per-row parts reads the row before's (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(SRC, "tests", "kernels", "softmax_shift.tsk"),
       "--shape", "M=37,N=203")
ok(p.returncode == 2 and "softmax_shift.tsk:4:24: the space's pipeline(\"skew\")" in p.stderr
   and "writes its output from the first reduction" in p.stderr,
   "a space naming skew for a kernel whose output reads the first reduction is refused (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(EX, "layernorm.tsk"), "--shape", "M=37,N=203",
       "--schedule", 'pipeline("skew")', "--stage", "tile")
ok(p.returncode == 2 and 'pipeline("skew") takes a row\'s scratch pass' in p.stderr
   and "is not a reduction, one scratch row" in p.stderr,
   "pipeline(\"skew\") at a point of layernorm.tsk, two reductions, is refused (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=37,N=203",
       "--backend", "cuda", "--schedule", 'pipeline("skew")', "--stage", "tile")
ok(p.returncode == 2 and 'pipeline("skew") is a CPU knob' in p.stderr,
   "on CUDA pipeline(\"skew\") is refused (%s)" % p.stderr.strip())
# jam(2): a kernel of reductions runs the output passes of two rows as one, the second row's
# values r<k>_b, its views NAME_b, the next pair's first reductions carried; the item's last
# row paired with itself when its count is odd. Refused for a kernel with a scratch row,
# without pipeline("next"), and on CUDA.
LN = os.path.join(EX, "layernorm.tsk")
p = tt("lower", "--kernel", LN, "--shape", "M=64,N=1000", "--schedule",
       'block(m=4).pipeline("next").jam(2)', "--stage", "tile")
ok(p.returncode == 0 and re.search(
    r"r0 = tile\.reduce_sum\(x, j < N\)  with x = X\[i0 \* N:\].*\n\s*r0_b = tile\.reduce_sum"
    r"\(x, j < N\)  with x = X\[\(min\(i0 \+ 1, iend - 1\)\) \* N:\].*\n\s*for i in tile\.range"
    r"\(i0, iend, 2\):\n\s*let i1: index = min\(i \+ 1, iend - 1\)", p.stdout)
   and "r1_b = tile.reduce_sum(((x - h0_b) * (x - h0_b)), j < N)  with x = X[i1 * N:]" in p.stdout
   and re.search(r"y = tile\.map\(\(\(\(\(x - h0\) \* h1\) \* gamma\) \+ beta\), j < N\) carry r0 = "
                 r"reduce_sum\(x_nx\) carry r0_b = reduce_sum\(x_nx2\) and y_b = \(\(\(\(x_b - h0_b\) "
                 r"\* h1_b\) \* gamma\) \+ beta\)  with .*x_nx2 = X\[\(min\(i \+ 3, iend - 1\)\) \* N:\]",
                 p.stdout),
   "layernorm.tsk with jam(2) writes two rows a pass, carrying the next pair's sums (%s)"
   % p.stderr.strip())
lnb = with_space(os.path.join(SRC, "tests", "kernels", "layernorm_bf16.tsk"),
                 "layernorm_bf16_jam.tsk", 'pipeline=["none", "next"], jam=[1, 2], ')
for f, extra in [(LN, "")] + [(lnb, v) for v in VECS]:
    errs = rel_errors(f, "M=37,N=203", ['block(m=%d)%s.pipeline("next").jam(%d)' % (bm, extra, jam)
                                        for bm, jam in ((4, 1), (4, 2), (16, 2), (37, 2))])
    ok(as_accurate(errs),
       "%s%s verifies with jam(2) (odd items, 37 rows), as accurate as jam(1) (%s)"
       % (os.path.basename(f), extra, errs))
jammed = with_space(os.path.join(EX, "softmax.tsk"), "softmax_jam.tsk", "jam=[1, 2], ")
p = tt("lower", "--kernel", jammed, "--shape", "M=37,N=203")
ok(p.returncode == 2 and "the space's jam(2) runs the output passes of two rows as one" in p.stderr
   and "keeps a scratch row" in p.stderr,
   "a space offering jam(2) to a kernel with a scratch row is refused (%s)" % p.stderr.strip())
jammed = with_space(os.path.join(SRC, "tests", "kernels", "rms_scale.tsk"), "rms_jam.tsk",
                    "jam=[1, 2], ")
p = tt("lower", "--kernel", jammed, "--shape", "M=37,N=203")
ok(p.returncode == 2 and "has no pipeline(\"next\")" in p.stderr,
   "a space offering jam(2) without pipeline(\"next\") is refused (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", LN, "--shape", "M=37,N=203", "--schedule",
       'block(m=4).pipeline("none").jam(2)', "--stage", "tile")
ok(p.returncode == 2 and "violates the constraint 'jam == 1 || pipeline == \"next\"'" in p.stderr,
   "jam(2) without pipeline(\"next\") is outside the space (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", LN, "--shape", "M=37,N=203", "--backend", "cuda", "--stage",
       "schedule")
q = tt("lower", "--kernel", LN, "--shape", "M=37,N=203", "--backend", "cuda", "--schedule",
       "jam(2)", "--stage", "tile")
ok(p.returncode == 0 and ".jam(1)." in p.stdout and q.returncode == 2
   and "jam(2) is a CPU knob" in q.stderr,
   "on CUDA the space holds jam(1) and jam(2) is refused (%s)" % q.stderr.strip())
# apply("tile"): a kernel of reductions that reads [N] inputs takes a work item's reductions
# first, keeping each row's parts of the output (ST), then writes its rows in tiles of TN
# columns with each [N] input's tile widened to f32 once (t<a>). Verified as accurately as
# apply("row") (test-ops checks the bytes); refused with pipeline("next"), for a kernel with a
# scratch row or without an [N] input, and on CUDA.
p = tt("lower", "--kernel", LN, "--shape", "M=37,N=600", "--schedule",
       'block(m=4).pipeline("none").apply("tile")', "--stage", "tile")
ok(p.returncode == 0
   and "let h2: f32 = (1.0f / __builtin_sqrtf(((r1 / (float)N) + eps)))" in p.stdout
   and "ST[2 * (i - i0) + 1] = h2" in p.stdout
   and re.search(r"for jc in tile\.range\(0, N, TN\):\n\s*let nc: index = min\(TN, N - jc\)\n"
                 r"\s*t1 = tile\.map\(gamma, j < nc\)  with gamma = GAMMA\[jc:\], t1 = T1\[0:\]\n"
                 r"\s*t2 = tile\.map\(beta, j < nc\)  with beta = BETA\[jc:\], t2 = T2\[0:\]\n"
                 r"\s*for i in tile\.range\(i0, iend, 1\):\n\s*let h1: f32 = ST\[2 \* \(i - i0\) \+ 0\]"
                 r"\n\s*let h2: f32 = ST\[2 \* \(i - i0\) \+ 1\]\n\s*y = tile\.map\(\(\(\(\(x - h1\) \* h2\) "
                 r"\* gamma\) \+ beta\), j < nc\)  with x = X\[i \* N \+ jc:\], gamma = T1\[0:\], "
                 r"beta = T2\[0:\], y = Y\[i \* N \+ jc:\]", p.stdout),
   "layernorm.tsk with apply(\"tile\") keeps each row's mean and 1/std, then writes tiles of "
   "rows with gamma and beta widened once a tile (%s)" % p.stderr.strip())
lnt = with_space(os.path.join(SRC, "tests", "kernels", "layernorm_bf16.tsk"),
                 "layernorm_bf16_tile.tsk", 'apply=["row", "tile"], ')
rmt = with_space(os.path.join(SRC, "tests", "kernels", "rms_scale.tsk"), "rms_tile.tsk",
                 'apply=["row", "tile"], ')
for f, extra in [(LN, ""), (rmt, "")] + [(lnt, v) for v in VECS]:
    errs = rel_errors(f, "M=37,N=600", ['block(m=%d)%s.apply("%s")' % (bm, extra, apply)
                                        for bm, apply in ((4, "row"), (4, "tile"), (16, "tile"),
                                                          (37, "tile"))])
    ok(as_accurate(errs),
       "%s%s verifies with apply(\"tile\") (two tiles and a tail, odd items), as accurate as "
       "apply(\"row\") (%s)" % (os.path.basename(f), extra, errs))
p = tt("lower", "--kernel", LN, "--shape", "M=37,N=203", "--schedule",
       'block(m=4).pipeline("next").apply("tile")', "--stage", "tile")
ok(p.returncode == 2 and "violates the constraint 'apply == \"row\" || pipeline == \"none\"'"
   in p.stderr, "apply(\"tile\") with pipeline(\"next\") is outside the space (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", with_space(os.path.join(EX, "softmax.tsk"), "softmax_tile.tsk",
                                       'apply=["row", "tile"], '), "--shape", "M=37,N=203")
ok(p.returncode == 2 and "the space's apply(\"tile\") writes a work item's rows in tiles"
   in p.stderr and "keeps a scratch row" in p.stderr,
   "a space offering apply(\"tile\") to a kernel with a scratch row is refused (%s)"
   % p.stderr.strip())
centre = os.path.join(TMP, "centre.tsk")
with open(centre, "w") as f:
    f.write('@kernel.autotune(space=dict(BM=[4], apply=["row", "tile"]))\n'
            'def centre(x: Tensor["M", "N", f32], y: mut Tensor["M", "N", f32]):\n'
            '    T = tile.context()\n'
            '    xr = tile.load(x, rows=T.m)\n'
            '    tile.store(y, xr - (tile.row_sum(xr) / x.shape[1])[:, None])\n')
p = tt("lower", "--kernel", centre, "--shape", "M=37,N=203")
ok(p.returncode == 2 and "has no [N] input to widen" in p.stderr and "take \"tile\" out" in p.stderr,
   "a space offering apply(\"tile\") to a kernel without an [N] input is refused (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", LN, "--shape", "M=37,N=203", "--backend", "cuda", "--schedule",
       'apply("tile")', "--stage", "tile")
ok(p.returncode == 2 and 'apply("tile") is a CPU knob' in p.stderr,
   "on CUDA apply(\"tile\") is refused (%s)" % p.stderr.strip())
# math("fast"): a 16-bit kernel's vector exps by the built-in softmax's short polynomial, with
# exp(x - m) folding m into its constants once a row; refused for f32, for a kernel without an
# exp, and on CUDA.
errs = {}
for pl in ("none", "next", "skew"):
    for how in ("exact", "fast"):
        p = tt("run", "--kernel", SM_NEXT, "--shape", "M=37,N=203", "--schedule",
               'block(m=4).vector(%d).pipeline("%s").math("%s")' % (WIDE, pl, how), "--json")
        r = json.loads(p.stdout) if p.returncode == 0 else {}
        errs[pl, how] = r.get("rel_error") if r.get("status") == "ok" else (r or p.stderr)
ok(all(isinstance(v, float) for v in errs.values())
   and all(errs[pl, "fast"] <= 1.05 * errs[pl, "exact"] for pl in ("none", "next", "skew")),
   "softmax_next_bf16.tsk verifies with math(\"fast\") in every pipeline, as accurate as "
   "\"exact\" at bf16's rounding (%s)" % errs)
p = tt("lower", "--kernel", SM_NEXT, "--shape", "M=64,N=1000", "--schedule",
       'block(m=4).vector(16).pipeline("skew").math("fast")', "--stage", "all")
ok(p.returncode == 0 and p.stdout.count("tile.map(exp_fast_sub(x, r0), j < N) sum->r1") == 2
   and "const TsExpSub ts_es" in p.stdout and "ts_vf_exp_fast_sub_row(x, ts_es" in p.stdout
   and "ts_vf_exp(" not in p.stdout,
   "math(\"fast\") takes exp(x - m) as exp_fast_sub, its row constants made once a row (%s)"
   % p.stderr.strip())
fast32 = with_space(os.path.join(EX, "softmax.tsk"), "softmax_fast32.tsk", 'math=["exact", "fast"], ')
p = tt("lower", "--kernel", fast32, "--shape", "M=37,N=203")
ok(p.returncode == 2 and "the space's math(\"fast\") takes exp by a polynomial" in p.stderr
   and "writes f32" in p.stderr, "an f32 kernel's space may not offer math(\"fast\") (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", SM_NEXT, "--shape", "M=37,N=203", "--backend", "cuda",
       "--schedule", 'math("fast")', "--stage", "tile")
ok(p.returncode == 2 and 'math("fast") is a CPU knob' in p.stderr,
   "on CUDA math(\"fast\") is refused (%s)" % p.stderr.strip())
expo = os.path.join(TMP, "expo_bf16.tsk")
with open(expo, "w") as f:
    f.write('@kernel.autotune(space=dict(BN=[4096], vector=[%d], math=["exact", "fast"]))\n'
            % WIDE +
            'def expo(x: Tensor["N", bf16], y: mut Tensor["N", bf16]):\n'
            '    i = tile.linear_id()\n'
            '    y[i] = tile.exp(x[i] * 0.5) + 1.0\n')
errs = []
for how in ("exact", "fast"):
    p = tt("run", "--kernel", expo, "--shape", "N=10007", "--schedule", 'math("%s")' % how,
           "--json")
    r = json.loads(p.stdout) if p.returncode == 0 else {}
    errs.append(r.get("rel_error") if r.get("status") == "ok" else (r or p.stderr))
p = tt("lower", "--kernel", expo, "--shape", "N=10007", "--schedule", 'math("fast")',
       "--stage", "tile")
ok(all(isinstance(v, float) for v in errs) and errs[1] <= 1.05 * errs[0]
   and "exp_fast((x * 0.5f))" in p.stdout,
   "an elementwise bf16 kernel verifies with math(\"fast\") (%s)" % errs)
mathless = with_space(SAXPY, "saxpy_math.tsk", 'math=["exact", "fast"], ')
p = tt("lower", "--kernel", mathless, "--shape", "N=4096")
ok(p.returncode == 2 and "the space's math(\"fast\")" in p.stderr and "has no tile.exp" in p.stderr,
   "a kernel without an exp may not offer math(\"fast\") (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", SM_NEXT, "--shape", "M=64,N=1000", "--schedule",
       'block(m=4).vector(16).pipeline("next")', "--stage", "target")
ok(p.returncode == 0 and "ts_vf_load2_bf16(X + (i * N) + j, &x_e_, &x_o_);" in p.stdout
   and "ts_vf_store2_bf16(Y + (i * N) + j, ts_ve_, ts_vo_);" in p.stdout
   and "const ts_vf w0_o_ = ts_vf_load_f32(W0 + (0) + j + TS_VEC);" in p.stdout
   and p.stdout.count("= ts_vk_max(") == 3 + 2,
   "a bf16 row kernel runs in lane pairs, its scratch row holding the pairs, its maxes on the "
   "bits (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(SRC, "tests", "kernels", "expnorm_scratch.tsk"),
       "--shape", "M=37,N=203")
ok(p.returncode == 2 and "expnorm_scratch.tsk:4:24: the space's knob pipeline takes a row's "
   "first reduction" in p.stderr and "starts its rows with a scratch row" in p.stderr,
   "a space naming pipeline for a kernel whose first step is a scratch row is refused (%s)"
   % p.stderr.strip())
piped = with_space(SAXPY, "saxpy_piped.tsk", 'pipeline=["none", "next"], ')
p = tt("lower", "--kernel", piped, "--shape", "N=4096")
ok(p.returncode == 2 and "the space's knob pipeline" in p.stderr and "is elementwise" in p.stderr,
   "an elementwise kernel's space may not name pipeline (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=37,N=203",
       "--backend", "cuda", "--schedule", 'pipeline("next")', "--stage", "tile")
ok(p.returncode == 2 and 'pipeline("next") is a CPU knob' in p.stderr,
   "on CUDA pipeline(\"next\") is refused, the space holding \"none\" (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=37,N=203",
       "--backend", "cuda", "--stage", "schedule")
ok(p.returncode == 0 and '.pipeline("none").' in p.stdout,
   "the CUDA space of a kernel whose space names pipeline has one value, \"none\"")
# A row kernel with no space of its own gets the CPU knobs that apply to it; on CUDA each
# holds one value.
def spaceless(src):
    """A copy of kernel file src in TMP without its @kernel.autotune decorator."""
    with open(src) as f:
        text = f.read()
    path = os.path.join(TMP, "spaceless-" + os.path.basename(src))
    with open(path, "w") as f:
        f.write(re.sub(r"@kernel\.autotune\(.*?\)\n(?=@|def )", "", text, count=1, flags=re.S))
    return path


bare = spaceless(os.path.join(SRC, "tests", "kernels", "rms_scale.tsk"))
spaces = {}
for be in ("cpu", "cuda"):
    p = tt("lower", "--kernel", bare, "--shape", "M=37,N=203", "--backend", be,
           "--stage", "schedule")
    spaces[be] = p.stdout.splitlines()[1] if p.returncode == 0 else p.stderr.strip()
ok('.store(["cached","stream"]).pipeline(["none","next"]).jam([1,2])' in spaces["cpu"]
   and '.store("cached").pipeline("none")' in spaces["cuda"],
   "a row kernel without a space searches store and pipeline on the CPU, not on CUDA (%s)"
   % spaces)
p = tt("lower", "--kernel", spaceless(SM_STREAM), "--shape", "M=37,N=203", "--stage", "schedule")
ok(p.returncode == 0 and '.pipeline(["none","next","skew"]).threads' in p.stdout,
   "a softmax-shaped row kernel without a space searches pipeline(\"skew\") too (%s)"
   % (p.stdout.splitlines()[1:2] if p.returncode == 0 else p.stderr.strip()))
p = tt("lower", "--kernel", spaceless(SM_NEXT), "--shape", "M=37,N=203", "--stage", "schedule")
ok(p.returncode == 0 and '.pipeline(["none","next","skew"]).math(["exact","fast"])' in p.stdout,
   "a bf16 row kernel with an exp and no space searches math(\"fast\") too (%s)"
   % (p.stdout.splitlines()[1:2] if p.returncode == 0 else p.stderr.strip()))
p = tt("lower", "--kernel", os.path.join(EX, "layernorm.tsk"), "--shape", "M=64,N=1000",
       "--stage", "tile")
ok(p.returncode == 0 and "let h0: f32 = (r0 / (float)N)" in p.stdout
   and "y = tile.map(((((x - h0) * h1) * gamma) + beta), j < N)" in p.stdout
   and p.stdout.count("let h") == 2, "layernorm.tsk computes the mean and rstd once a row")
for name, op in (("softmax.tsk", "softmax"), ("layernorm.tsk", "layernorm")):
    p = tt("run", "--kernel", os.path.join(EX, name), "--shape", "M=37,N=203", "--json")
    r = json.loads(p.stdout) if p.returncode == 0 else {}
    ok(r.get("status") == "ok" and r["verification"].startswith("full f64 reference"),
       "%s matches the built-in op's reference (%s)" % (name, r or p.stderr))
p = tt("run", "--kernel", os.path.join(SRC, "tests", "kernels", "rms_scale.tsk"), "--shape",
       "M=37,N=203", "--schedule", "block(m=4)", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["rel_error"] < 1e-6,
   "a row kernel that implements no op matches its row program in f64 (%s)" % (r or p.stderr))
p = tt("run", "--kernel", os.path.join(SRC, "tests", "kernels", "wrong_softmax.tsk"), "--shape",
       "M=37,N=203", "--json")
r = json.loads(p.stdout) if p.stdout.startswith("{") else {}
ok(r.get("status") == "wrong_result", "a softmax normalised by its max is a wrong result (%s)" % r)
p = tt("lower", "--kernel", os.path.join(EX, "layernorm.tsk"), "--shape", "M=37,N=203",
       "--backend", "cuda", "--stage", "all")
ok(p.returncode == 0 and re.search(r"ts_rows_load_bcast<float, .*>\(r_gamma, GAMMA, 0\);", p.stdout)
   and re.search(r"ts_rows_allreduce<ts_sum, BM, THREADS>\(r1, red \+ WARPS\);", p.stdout)
   and "r_y[(0) + j] = ((((x - h0) * h1) * gamma) + beta);" in p.stdout,
   "on CUDA a row kernel holds its rows in registers: gamma broadcast, reductions alternating "
   "their shared slots, the output mapped and stored (%s)" % p.stderr.strip())
# A row too long for the registers is streamed, one row a CTA: a pass over its column tiles
# for each reduction and one for the output, a scratch row recomputed in the passes that read
# it; softmax's max and sum of exps in one online pass (the CUDA emulator runs such kernels:
# tests/cuda-emu).
LOOP = "for (long long c0 = 0; c0 < (N); c0 += COLS) {"
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=8,N=100000",
       "--backend", "cuda", "--schedule", "block(m=1)", "--stage", "target")
ok(p.returncode == 0 and p.stdout.count(LOOP) == 2
   and "ts_rows_accum_softmax<BM, THREADS, VEC, COLS, NCOLS>(r0, r1, r_t, c0);" in p.stdout
   and "ts_rows_allreduce_softmax<BM, THREADS>(r0, r1, red);" in p.stdout
   and p.stdout.count("r_w0[(0) + j] = expf((x - r0));") == 1
   and re.search(r"ts_rows_store<float, .*>\(Y, r0_, c0, M, r_y,", p.stdout),
   "a softmax row too long for the registers is streamed in two passes: the online max and "
   "sum, then the output (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(SRC, "tests", "kernels", "softmax_recompute_bf16.tsk"),
       "--shape", "M=8,N=100000", "--backend", "cuda", "--schedule", "block(m=1)",
       "--stage", "target")
ok(p.returncode == 0 and p.stdout.count(LOOP) == 3 and "softmax<" not in p.stdout
   and p.stdout.count("r_w0[(0) + j] = expf(((x - r0) - 1.0f));") == 2
   and "ts_rows_accum<ts_sum, BM, THREADS, VEC, COLS, NCOLS>(r1, r_t, c0);" in p.stdout,
   "exps shifted past the max: a pass for the max, one for the sum and one for the output, "
   "the scratch row of exps recomputed in both (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=8,N=100000",
       "--backend", "cuda", "--schedule", "block(m=4)")
ok(p.returncode == 2 and "violates the constraint" in p.stderr and "BM == 1 ||" in p.stderr,
   "... with one row a CTA: several are outside the CUDA space (%s)" % p.stderr.strip())

# A space offering vectors wider than the machine's registers (softmax.tsk's vector 16 without
# AVX-512) loses those points to a constraint: the search spends no evaluation pruning them.
p = tt("tune", "--kernel", os.path.join(EX, "softmax.tsk"), "--shape", "M=8,N=64", "--db",
       os.path.join(TMP, "wide.db"), "--strategy", "exhaustive", "--budget", "40", "--json")
res = json.loads(p.stdout) if p.returncode == 0 else {}
ok(res.get("valid_points") == (36 if WIDE == 16 else 18) and res.get("pruned") == 0
   and res.get("measured") == res.get("valid_points"),
   "softmax.tsk's space keeps the vectors this machine has: none pruned (%s)"
   % (res and {k: res[k] for k in ("valid_points", "measured", "pruned")} or p.stderr))

# tune: trials stored under the kernel's op; a re-run resumes them; an edit is a new workload.
db = os.path.join(TMP, "k.db")
p = tt("tune", "--kernel", AFFINE, "--shape", "N=65536", "--db", db, "--budget", "4", "--json")
res = json.loads(p.stdout) if p.returncode == 0 else {}
ok(res.get("measured") == 4 and res["best"]["schedule"].startswith("block(n="),
   "tune --kernel measures 4 points and keeps a best (%s)" % (res or p.stderr))
con = sqlite3.connect(db)
ops = [r[0] for r in con.execute("SELECT DISTINCT w.op FROM trial t JOIN workload w "
                                 "ON w.id = t.workload_id")]
con.close()
ok(len(ops) == 1 and re.fullmatch(r"kernel:affine_relu@[0-9a-f]{8}", ops[0]),
   "the trials are keyed by the kernel's op (%s)" % ops)
p = tt("tune", "--kernel", AFFINE, "--shape", "N=65536", "--db", db, "--budget", "4", "--json")
res = json.loads(p.stdout) if p.returncode == 0 else {}
ok(res.get("measured") == 0 and res.get("resumed") == 4,
   "the same kernel resumes its stored trials (%s)" % res)
con = sqlite3.connect(db)
kept = con.execute("SELECT path, source FROM kernel_source WHERE op = ?", (ops[0],)).fetchall()
con.close()
with open(AFFINE) as f:
    ok(kept == [(AFFINE, f.read())], "the cache keeps the kernel's source and file")
p = tt("show", ops[0], "--shape", "N=65536", "--db", db)
ok(p.returncode == 0 and "best: trial" in p.stdout,
   "show by the op's name finds the kernel in the cache, without the file (%s)" % p.stderr.strip())
p = tt("show", "kernel:nosuch@12345678", "--shape", "N=8", "--db", db)
ok(p.returncode == 2 and "holds no source for kernel:nosuch@12345678" in p.stderr,
   "an op the cache has no source of says so (%s)" % p.stderr.strip())
p = tt("show", "--kernel", AFFINE, "--shape", "N=65536", "--db", db)
ok(p.returncode == 0 and re.search(r"^\* best: trial %d" % res["best"]["trial"], p.stdout, re.M),
   "show --kernel lists the kernel's trials, best first")
edited = os.path.join(TMP, "affine_relu.tsk")
with open(AFFINE) as f:
    text = f.read()
with open(edited, "w") as f:
    f.write(text.replace("max(t, 0.0)", "max(t, 0.5)"))
p = tt("lower", "--kernel", edited, "--shape", "N=64", "--stage", "graph")
other = re.search(r"^graph (kernel:affine_relu@[0-9a-f]{8})", p.stdout, re.M)
ok(other is not None and other.group(1) != ops[0],
   "an edited kernel is another op (%s, was %s)" % (other and other.group(1), ops[0]))

# GEMM kernels lower through the gemm templates: the kernel's tiles, the template's other knobs.
GEMM = os.path.join(SRC, "examples", "gemm.tsk")
GEMM16 = os.path.join(SRC, "tests", "kernels", "gemm_f16.tsk")
p = tt("lower", "--kernel", GEMM, "--shape", "M=256,N=256,K=256", "--stage", "all")
ok(p.returncode == 0 and re.search(r"^space: block\(m=\[64,128\], n=\[64,128\], k=\[32,64\]\)"
                                   r"\.micro\(m=\[4,6,8,", p.stdout, re.M)
   and re.search(r"^point: block\(m=128, n=128, k=64\)\.micro\(m=6, n=16\).*walk\(\"tiles\"\)",
                 p.stdout, re.M)
   and "tile.pack_a(A + ib * BM * K" in p.stdout
   and re.search(r"tile\.mma\(Ct \+ ir \* BN \+ jr, ldc=BN\) .* micro=6x16", p.stdout)
   and "tile.convert(Ct + i * BN -> C + (ic + i) * N + jc, n=nc)" in p.stdout,
   "gemm.tsk on the CPU: its tiles, a tile a program by default (walk(\"tiles\")), the "
   "template's micro-kernel knobs searched, packed panels and micro-tiles into a tile of the "
   "worker's own (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", GEMM, "--shape", "M=256,N=256,K=256", "--backend", "cuda",
       "--stage", "all")
ok(p.returncode == 0 and re.search(r"^space: block\(m=\[64,128\], n=\[64,128\], k=\[32,64\]\)"
                                   r"\.warps\(\[4,8\]\)\.stages\(\[2,3\]\)\..*mma\(\[\"sync\",\"wgmma\"\]\)",
                                   p.stdout, re.M)
   and "ts_mma_tile<ts_bf16, BM, BN, BK" in p.stdout,
   "gemm.tsk on CUDA: its tiles, warps and stages, the template's mma and loads searched "
   "(%s)" % p.stderr.strip())
# A kernel's space may narrow the template's own knobs too (schedule, persistent, epilogue,
# the cluster's CM and CN; dot and walk on the CPU): they are the lowering's, not unused.
gemm_ws = os.path.join(TMP, "gemm_ws.tsk")
with open(GEMM) as f:
    text = f.read()
narrow = ('space=block(m=[128], n=[128], k=[64]).warps([8]).stages([3,4]).mma(["wgmma"])'
          '.load(["tma"]).schedule(["plain","coop"]).persistent([0,132])'
          '.epilogue(["direct","tma"]).cluster(m=[1], n=[1]).dot(["fma"]).walk(["tiles"])')
with open(gemm_ws, "w") as f:
    f.write(re.sub(r"space=dict\([^)]*\)", lambda m: narrow, text, count=1))
p = tt("lower", "--kernel", gemm_ws, "--shape", "M=4096,N=4096,K=4096", "--backend", "cuda",
       "--stage", "schedule")
ok(p.returncode == 0 and '.schedule(["plain","coop"]).persistent([0,132]).epilogue(["direct","tma"])'
   '.cluster(m=1, n=1)' in p.stdout and "12 valid at M=4096,N=4096,K=4096" in p.stdout,
   "a gemm kernel's space narrows the template's schedule, persistent, epilogue and cluster "
   "(%s)" % (p.stdout.splitlines()[1:3] if p.returncode == 0 else p.stderr.strip()))
p = tt("lower", "--kernel", gemm_ws, "--shape", "M=256,N=256,K=256", "--stage", "schedule")
ok(p.returncode == 0 and re.search(r'^space: block\(m=128, n=128, k=64\)\..*\.dot\("fma"\)'
                                   r'\.walk\("tiles"\)', p.stdout, re.M),
   "... and on the CPU the template's dot and walk (%s)"
   % (p.stdout.splitlines()[1:2] if p.returncode == 0 else p.stderr.strip()))
p = tt("run", "--kernel", GEMM, "--shape", "M=100,N=72,K=40", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["verification"].startswith("full f64 reference")
   and r["tolerance"] == 1e-2 and r["schedule"].startswith("block(m=128, n=128, k=64)"),
   "gemm.tsk runs at a ragged shape, checked against gemm's reference in bf16's bound (%s)"
   % (r or p.stderr))
p = tt("run", "--kernel", GEMM16, "--shape", "M=131,N=70,K=33", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["verification"].startswith("full f64 reference")
   and "micro(m=8, n=16)" in r["schedule"],
   "a GEMM implementing no op, loads inside tile.dot, is checked as the product it is (%s)"
   % (r or p.stderr))
db = os.path.join(TMP, "g.db")
p = tt("tune", "--kernel", GEMM16, "--shape", "M=200,N=256,K=64", "--db", db, "--budget", "2",
       "--json")
res = json.loads(p.stdout) if p.returncode == 0 else {}
ok(res.get("measured") == 2 and res["valid_points"] > 2 and res["best"]["schedule"].startswith("block(m="),
   "tune --kernel measures 2 points of the GEMM's CPU space, the template's knobs searched (%s)"
   % (res or p.stderr))

# A fused epilogue: on the CPU a map of each accumulator row into C, on CUDA a lambda over the
# accumulators before the store; checked against the product with the epilogue in f64.
EPI = os.path.join(SRC, "examples", "gemm_bias_relu.tsk")
p = tt("lower", "--kernel", EPI, "--shape", "M=100,N=72,K=40", "--stage", "all")
ok(p.returncode == 0 and re.search(r'%BIAS : Tensor\["N", bf16\]', p.stdout)
   and "{alpha=0.5}" in p.stdout
   and "c_out = tile.map(max(((acc * alpha) + bias), splat(0.0f)), j < nc)  with acc = Ct[i * BN:], "
       "bias = BIAS[jc:], c_out = C[(ic + i) * N + jc:]" in p.stdout,
   "the epilogue's [N] tensor is an input, alpha a float, the CPU maps each row of a finished tile "
   "(%s)" % p.stderr.strip())
p = tt("lower", "--kernel", EPI, "--shape", "M=100,N=72,K=40", "--backend", "cuda",
       "--stage", "target")
ok(p.returncode == 0 and "ts_acc_epilogue<BM, BN, WARPS_M, WARPS_N>(acc, m0, n0, [=](float acc, "
   "long long r, long long c) -> float {" in p.stdout
   and "const float bias = ts_to_f32(BIAS[c < N ? c : N - 1]);" in p.stdout
   and "return fmaxf(((acc * alpha) + bias), 0.0f); });" in p.stdout,
   "on CUDA the accumulators go through the epilogue's lambda before the store (%s)"
   % p.stderr.strip())
p = tt("run", "--kernel", EPI, "--shape", "M=100,N=72,K=40", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["verification"].startswith("full f64 reference"),
   "gemm_bias_relu.tsk runs, checked against max(alpha * A B + bias, 0) in f64 (%s)"
   % (r or p.stderr))
p = tt("run", "--kernel", os.path.join(SRC, "tests", "kernels", "gemm_scaled.tsk"), "--shape",
       "M=75,N=2100,K=300", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["rel_error"] < 1e-5,
   "an f32 GEMM with a scalar epilogue (alpha * acc - 1) runs within f32's bound (%s)"
   % (r or p.stderr))

# @verify.numerics(bounded=[lo, hi]): every output element is checked within the bounds.
SOFTMAX = os.path.join(SRC, "examples", "softmax.tsk")
with open(SOFTMAX) as f:
    sm_text = f.read()
tight = os.path.join(TMP, "softmax_tight.tsk")
with open(tight, "w") as f:
    f.write(sm_text.replace("bounded=[0, 1]", "bounded=[0, 0.05]"))
p = tt("run", "--kernel", SOFTMAX, "--shape", "M=8,N=16", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok", "softmax.tsk's outputs lie within its bounds [0, 1] (%s)" % (r or p.stderr))
p = tt("run", "--kernel", tight, "--shape", "M=8,N=16", "--json")
r = json.loads(p.stdout) if p.stdout.startswith("{") else {}
ok(p.returncode == 1 and r.get("status") == "wrong_result"
   and re.search(r"output element \d+ is [0-9.e-]+, outside @verify\.numerics\(bounded=\[0, 0\.05\]\) "
                 r"\(\d+ of 128 elements are\)", r.get("message", "")),
   "outputs beyond the kernel's bounds are a wrong result naming the first (%s)" % (r or p.stderr))

# Compile-time flags in any kernel: each if on bool parameters decided before the body is read.
FLAG = os.path.join(SRC, "tests", "kernels", "affine_flag.tsk")
for name, want in (("affine", "max(((a * x) + (b * y)), splat(0.0f))"),
                   ("affine+relu=false", "tile.map(((a * x) + (b * y)),")):
    p = tt("lower", "--kernel", FLAG, name, "--shape", "N=1000", "--stage", "tile")
    ok(p.returncode == 0 and want in p.stdout and
       re.search(r"kernel:affine%s@[0-9a-f]{8}" % re.escape(name[len("affine"):]), p.stdout),
       "%s: the flag picks the branch (%s)" % (name, p.stderr.strip()))
    p = tt("run", "--kernel", FLAG, name, "--shape", "N=5001", "--json")
    r = json.loads(p.stdout) if p.returncode == 0 else {}
    ok(r.get("status") == "ok", "%s runs, checked against its own branch in f64 (%s)"
       % (name, r or p.stderr))

# Flash attention lowers through the flash_attention templates; its causal flag is a
# compile-time flag (NAME+causal), another op lowered through flash_attention_causal.
ATTN = os.path.join(SRC, "examples", "flash_attention.tsk")
p = tt("lower", "--kernel", ATTN, "--shape", "B=1,H=2,S=100,D_h=64", "--stage", "all")
ok(p.returncode == 0 and re.search(r"^graph kernel:flash_attention@[0-9a-f]{8}\(B=1, H=2, S=100, D=64\)",
                                   p.stdout, re.M)
   and re.search(r"^space: block\(m=\[64,128\], n=\[64,128\]\)\.micro\(", p.stdout, re.M)
   and 'let nk: index = S' in p.stdout,
   "flash_attention.tsk on the CPU: D_h binds the template's D, its BM and BN, every key (%s)"
   % p.stderr.strip())
p = tt("lower", "--kernel", ATTN, "flash_attention+causal", "--shape", "B=1,H=2,S=100,D_h=64",
       "--stage", "all")
ok(p.returncode == 0 and re.search(r"^graph kernel:flash_attention\+causal@[0-9a-f]{8}", p.stdout, re.M)
   and re.search(r"let nk: index = q0 \+ mc", p.stdout),
   "with +causal the kernel is another op whose key loop stops at the diagonal (%s)" % p.stderr.strip())
p = tt("lower", "--kernel", ATTN, "flash_attention+causal", "--shape", "B=4,H=16,S=4096,D_h=128",
       "--backend", "cuda", "--stage", "all")
ok(p.returncode == 0 and re.search(r"^space: block\(m=\[64,128\], n=\[64,128\]\)\.warps\(\[4,8\]\)"
                                   r"\.stages\(\[2,3\]\)\.mma\(\[\"sync\",\"wgmma\"\]\)", p.stdout, re.M)
   and "46 valid at B=4,H=16,S=4096,D_h=128" in p.stdout
   and "static constexpr long long CAUSAL = 1;" in p.stdout and "ts_attn_softmax_online<BN, HD>" in p.stdout,
   "on CUDA: the kernel's tiles, warps and stages, the template's mma searched, causal "
   "(%s)" % p.stderr.strip())
for name in ("flash_attention", "flash_attention+causal"):
    p = tt("run", "--kernel", ATTN, name, "--shape", "B=2,H=1,S=77,D_h=24", "--json")
    r = json.loads(p.stdout) if p.returncode == 0 else {}
    ok(r.get("status") == "ok" and r["verification"].startswith("full f64 reference")
       and r["tolerance"] == 1e-2,
       "%s runs at a ragged shape, checked against %s's reference (%s)"
       % (name, "flash_attention_causal" if "causal" in name else "flash_attention", r or p.stderr))
# Without @kernel.implements the form is still attention: checked by the same reference.
with open(ATTN) as f:
    attn_text = f.read()
plain = os.path.join(TMP, "attn_plain.tsk")
with open(plain, "w") as f:
    f.write(attn_text.replace('@kernel.implements("flash_attention")\n', "").replace(
        "causal: bool = False", "causal: bool = True"))
p = tt("run", "--kernel", plain, "--shape", "B=1,H=2,S=50,D_h=16", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and r["workload"].startswith("kernel:flash_attention@")
   and r["verification"].startswith("full f64 reference"),
   "a flag true by default masks without +causal, and the op's name needs no flag (%s)"
   % (r or p.stderr))
p = tt("lower", "--kernel", plain, "--shape", "B=1,H=2,S=50,D_h=16", "--stage", "tile")
ok(p.returncode == 0 and re.search(r"let nk: index = q0 \+ mc", p.stdout),
   "... and lowers through the causal template (%s)" % p.stderr.strip())
# Any four dim names: the product's factors, the sequence and the head dim, bound by position.
named = os.path.join(TMP, "attn_named.tsk")
with open(named, "w") as f:
    f.write(attn_text.replace('"B*H", "S", "D_h"', '"N*G", "L", "E"'))
p = tt("run", "--kernel", named, "flash_attention+causal", "--shape", "G=3,N=1,L=40,E=8", "--json")
r = json.loads(p.stdout) if p.returncode == 0 else {}
ok(r.get("status") == "ok" and " B=1,H=3,S=40,D=8 " in r["workload"],
   "a kernel's own dim names (N*G, L, E) bind the template's by position (%s)" % (r or p.stderr))
db = os.path.join(TMP, "a.db")
p = tt("tune", "--kernel", ATTN, "flash_attention+causal", "--shape", "B=1,H=2,S=128,D_h=32",
       "--db", db, "--budget", "2", "--json")
res = json.loads(p.stdout) if p.returncode == 0 else {}
ok(res.get("measured") == 2 and res["best"]["schedule"].startswith("block(m="),
   "tune --kernel measures the causal kernel's CPU space (%s)" % (res or p.stderr))
p = tt("lookup", res.get("workload", "kernel:none").split()[0], "--shape", "B=1,H=2,S=128,D_h=32", "--db", db)
ok(p.returncode == 0 and res.get("best", {}).get("schedule", "?") in p.stdout,
   "the cache that tuned it answers for the op by name, D_h and all (%s)" % p.stderr.strip())

# The scalar tails of the CPU kernels' vector loops stay scalar (TS_SCALAR_TAIL_): GCC reports
# no loop of the kernel's own source vectorized, while it does report on that source (its
# missed loops), so the compile did happen. A fresh artifact cache, so each kernel compiles.
def cc_is_gcc():
    p = run(["cc", "--version"], ENV)
    return p.returncode == 0 and "Free Software Foundation" in p.stdout


if cc_is_gcc():
    for what in (("softmax_safe", "--shape", "M=3,N=45", "--dtype", "bf16"),
                 ("layernorm_safe", "--shape", "M=3,N=45", "--dtype", "f32"),
                 ("--kernel", os.path.join(SRC, "examples", "softmax.tsk"), "--shape", "M=3,N=45")):
        report = os.path.join(TMP, "vec-report.txt")
        if os.path.exists(report):
            os.remove(report)
        env = dict(ENV, XDG_CACHE_HOME=os.path.join(TMP, "cache-vec"),
                   TS_CC="cc -fopt-info-vec-all=" + report)
        env.pop("TESSERA_ARTIFACT_DIR", None)
        p = run([TT, "run", *what], env, check=0, timeout=600)
        lines = open(report).read().splitlines() if os.path.exists(report) else []
        own = [l for l in lines if l.startswith("src.c:")]
        vectorized = [l for l in own if "optimized: loop vectorized" in l]
        ok(p.returncode == 0 and own and not vectorized,
           "%s: %d reports on the kernel's source, none a vectorized loop (%s)"
           % (" ".join(what[:2]), len(own), vectorized[:2] or p.stderr.strip()[-200:]))
else:
    ok(True, "# SKIP the system compiler is not GCC: no vectorizer report to read")

# Bad inputs: each a usage error naming what is wrong.
bad = os.path.join(TMP, "bad.tsk")
with open(bad, "w") as f:
    f.write("def k(x: Tensor[\"N\", f32], y: mut Tensor[\"N\", f32]):\n"
            "    i = tile.linear_id()\n    y[i] = tile.exp(x[i]) +\n")
renamed = os.path.join(TMP, "renamed.tsk")
with open(GEMM) as f:
    text = f.read()
with open(renamed, "w") as f:
    f.write(text.replace('A: Tensor["M", "K"', 'A: Tensor["R", "K"').replace(
        'C: mut Tensor["M", "N"', 'C: mut Tensor["R", "N"'))
with open(EPI) as f:
    text = f.read()
rowred = os.path.join(TMP, "rowred.tsk")
with open(rowred, "w") as f:
    f.write(text.replace("tile.maximum(y, 0.0)", "y - tile.row_max(y)[:, None]"))
attn_scale = os.path.join(TMP, "attn_scale.tsk")
with open(attn_scale, "w") as f:
    f.write(attn_text.replace("tile.rsqrt(float(T.d))", "0.5"))
attn_nonorm = os.path.join(TMP, "attn_nonorm.tsk")
with open(attn_nonorm, "w") as f:
    f.write(attn_text.replace("acc / l[:, None]", "acc"))
attn_sdim = os.path.join(TMP, "attn_sdim.tsk")
with open(attn_sdim, "w") as f:
    f.write(attn_text.replace('"B*H", "S", "D_h"', '"S*H", "S", "D_h"'))
attn_flag = os.path.join(TMP, "attn_flag.tsk")
with open(attn_flag, "w") as f:
    f.write(attn_text.replace("        if causal: tile.mask_causal(S, tile.row_index(), tile.col_index(nblk))\n", ""))
knob_if = os.path.join(TMP, "knob_if.tsk")
with open(os.path.join(SRC, "tests", "kernels", "affine_flag.tsk")) as f:
    flag_text = f.read()
with open(knob_if, "w") as f:
    f.write(flag_text.replace("if relu:", "if x.shape[0] > 1024:"))
attn_alias = os.path.join(TMP, "attn_alias.tsk")
with open(attn_alias, "w") as f:
    f.write(attn_text.replace("l_c", "m_c"))
attn_gemm = os.path.join(TMP, "attn_gemm.tsk")
with open(attn_gemm, "w") as f:
    f.write(attn_text.replace('implements("flash_attention")', 'implements("gemm")'))
implemented = os.path.join(TMP, "implemented.tsk")
with open(implemented, "w") as f:
    f.write(text.replace("def gemm_bias_relu", '@kernel.implements("gemm")\ndef gemm_bias_relu'))
cases = [
    (("lower", "--kernel", bad, "--shape", "N=8"), r"bad\.tsk:3:28: .*expected an expression"),
    (("lower", "--kernel", os.path.join(TMP, "none.tsk"), "--shape", "N=8"), r"--kernel: .*none\.tsk"),
    (("lower", "--kernel", SAXPY, "nosuch", "--shape", "N=8"), r"has no kernel named 'nosuch'"),
    (("lower", "--kernel", SAXPY, "--shape", "N=8", "--dtype", "bf16"),
     r"declares f32 tensors, so --dtype bf16 does not fit"),
    (("lower", "--kernel", SAXPY, "--shape", "M=8"), r"--shape lacks dim 'N'"),
    (("lower", "--kernel", ATTN, "flash_attention+causl", "--shape", "B=1,H=1,S=8,D_h=8"),
     r"kernel flash_attention has no flag 'causl' \(its flags, bool parameters: causal\)"),
    (("lower", "--kernel", ATTN, "flash_attention+causal=maybe", "--shape", "B=1,H=1,S=8,D_h=8"),
     r"flag causal=maybe: a flag is true or false"),
    (("lower", "--kernel", ATTN, "--shape", "B=1,H=1,S=8,D=8,D_h=8"),
     r"--shape gives dim D twice, as D_h and as D"),
    (("lower", "--kernel", ATTN, "--shape", "B=1,H=1,S=8,D=8,E=2"),
     r"--shape has dim 'E' the op does not use \(its dims are B,H,S,D_h\)"),
    (("lower", "--kernel", attn_scale, "--shape", "B=1,H=1,S=8,D_h=8"),
     r"attn_scale\.tsk:15:13: \(tile\.dot\(Qb, tile\.transpose\(Kb\)\) \* 0\.5\) is not lowered: "
     r"the loop loads K's and V's tiles"),
    (("lower", "--kernel", attn_nonorm, "--shape", "B=1,H=1,S=8,D_h=8"),
     r"attn_nonorm\.tsk:19:12: tile\.cast\(acc, bf16\) is not lowered: the kernel returns acc / "
     r"l\[:, None\]"),
    (("lower", "--kernel", attn_sdim, "--shape", "B=1,S=8,D_h=8"),
     r"q is Tensor\[\"S\*H\",\"S\",\"D_h\".*four names in all"),
    (("lower", "--kernel", attn_flag, "--shape", "B=1,H=1,S=8,D_h=8"),
     r"the flag causal of kernel flash_attention decides nothing"),
    (("lower", "--kernel", knob_if, "--shape", "N=8"),
     r"knob_if\.tsk:8:8: if \(x\.shape\[0\] > 1024\) is not lowered: the lowering decides an if on "
     r"the kernel's bool parameters"),
    (("lower", "--kernel", attn_alias, "--shape", "B=1,H=1,S=8,D_h=8"),
     r"kernel flash_attention names two values of the attention form m_c \(m_c and l_c\)"),
    (("lower", "--kernel", attn_gemm, "--shape", "B=1,H=1,S=8,D_h=8"),
     r"@kernel\.implements\(\"gemm\"\): kernel flash_attention is an attention kernel"),
    (("lower", "--kernel", rowred, "--shape", "M=8,N=8,K=8"),
     r"row reductions are not lowered in a GEMM's epilogue"),
    (("lower", "--kernel", implemented, "--shape", "M=8,N=8,K=8"),
     r"@kernel\.implements\(\"gemm\"\): kernel gemm_bias_relu's epilogue makes it another op"),
    (("lower", "--kernel", renamed, "--shape", "M=8,N=8,K=8"),
     r"A is Tensor\[\"R\",\"K\", bf16 @accum\(f32\)\]: the GEMM lowering takes A as "
     r"Tensor\[\"M\", \"K\", \.\.\.\]"),
    (("lower", "--kernel", os.path.join(SRC, "tests", "kernels", "sized.tsk"), "--shape", "N=8"),
     r"sized\.tsk:2:1: x is Tensor\[64, f32\]: the lowering takes named dims"),
    (("run", "--kernel", SAXPY, "--shape", "N=8", "--schedule", "block(m=4)"),
     r"knob 'BM' is not used"),
]
for args, want in cases:
    p = tt(*args)
    ok(p.returncode == 2 and re.search(want, p.stderr) is not None,
       "%s: exit %d, %s" % (" ".join(args[:3]), p.returncode, p.stderr.strip().splitlines()[0]
                            if p.stderr.strip() else "no message"))

done()
