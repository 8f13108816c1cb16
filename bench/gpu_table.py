#!/usr/bin/env python3
"""gpu_table.py — bench/gpu.sh's table: each of Tessera's tuned kernels against its anchors,
all measured in the same run on the same GPU, as ours / anchor. The first anchor of a row holds
the target the project set (gemm >= 0.8x cuBLAS, attention >= 0.7x PyTorch SDPA, row ops >= 0.8x
a device-to-device copy of their bytes); the others are cross-checks or context.

Usage: gpu_table.py REFS.jsonl OURS.jsonl
  REFS: lines of bench/cublas_gemm, bench/cuda_copy and bench/gpu_ref.py ({"kind": ..., "ref":
        ..., "tflops" or "gbps": ...}; {"kind": "error"} lines are listed under the table)
  OURS: lines {"kind": K, "label": L, "run": <tessera-tune run --json>}
Exit 0 when the table could be made (a missed target is reported, not an error), 1 when an
input is unreadable.
"""
import json
import re
import sys

# kind -> (unit, the run's field, its scale to the unit, [(anchor ref, what it is, target, group)])
# A target is judged against the fastest measured anchor of its group: the same library reached
# two ways (cublasLt from C and torch.matmul; SDPA's default and cuDNN backends; a copy from C
# and from torch), so the bar is the library at its best, not its slower measurement.
ANCHORS = {
    "gemm": ("TFLOP/s", "gflops", 1e-3, [
        ("cublasLt (C)", "cuBLAS", 0.8, "cublas"),
        ("torch.matmul (cuBLAS)", "cross-check", None, "cublas")]),
    "attention": ("TFLOP/s", "gflops", 1e-3, [
        ("torch sdpa (default)", "PyTorch SDPA", 0.7, "sdpa"),
        ("torch sdpa (cudnn)", "FA3-class", None, "sdpa")]),
    "layernorm": ("GB/s", "gbps", 1.0, [
        ("cuMemcpyDtoD (C)", "copy of its bytes", 0.8, "copy"),
        ("torch copy_", "cross-check", None, "copy"),
        ("torch layer_norm", "PyTorch", None, None)]),
    # fp8 (e4m3 inputs, bf16 output): against our own bf16 gemm at the same shape, tuned in the
    # same run (the bar: fp8 >= 1.5x bf16), with cuBLAS's bf16 as context.
    "gemm-fp8": ("TFLOP/s", "gflops", 1e-3, [
        ("ours bf16 (this run)", "our bf16", 1.5, "ours"),
        ("cublasLt (C)", "cuBLAS bf16", None, None)]),
    "softmax": ("GB/s", "gbps", 1.0, [
        ("cuMemcpyDtoD (C)", "copy of its bytes", 0.8, "copy"),
        ("torch copy_", "cross-check", None, "copy"),
        ("torch softmax", "PyTorch", None, None)]),
}
COPY_KINDS = ("layernorm", "softmax")


def load(path):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line.startswith("{"):
                continue  # a tool's own message between the JSON lines
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit("gpu_table.py: %s:%d: not JSON (%s)" % (path, n, e))
    return rows


def dims(workload):
    """{"M": 4096, ...} from "gemm M=4096,N=4096,K=4096 bf16"."""
    return {k: int(v) for k, v in re.findall(r"([A-Z])=(\d+)", workload)}


def find_ref(refs, kind, ref, ours):
    want_kind = "copy" if ref in ("cuMemcpyDtoD (C)", "torch copy_") else kind
    if kind == "gemm-fp8" and ref == "cublasLt (C)":
        want_kind = "gemm"
    d = dims(ours["run"].get("workload", ""))
    for r in refs:
        if r.get("kind") != want_kind or r.get("ref") != ref:
            continue
        if kind in ("gemm", "gemm-fp8") and r.get("M") != d.get("M"):
            continue
        if kind == "attention" and str(r.get("causal")) != ours["label"][-1]:
            continue
        if want_kind == "copy" and r.get("bytes") not in (None, 2 * d.get("M", 0) * d.get("N", 0)):
            continue
        return r
    return None


def table(refs, ours):
    # Our bf16 gemms are the fp8 rows' anchors.
    refs = refs + [{"kind": "gemm-fp8", "ref": "ours bf16 (this run)",
                    "M": dims(o["run"].get("workload", "")).get("M"),
                    "tflops": o["run"]["gflops"] * 1e-3}
                   for o in ours if o["kind"] == "gemm" and o["run"].get("status") == "ok"]
    out = ["ours / anchor, measured side by side in this run (bf16 inputs but in fp8 rows, "
           "f32 accumulation)",
           "%-22s %14s  %-24s %14s  %7s  %s" % ("workload", "ours", "anchor", "anchor value",
                                                 "ratio", "target")]
    missed = 0
    for o in ours:
        kind = o["kind"]
        if kind not in ANCHORS:
            continue
        unit, field, scale, anchors = ANCHORS[kind]
        run = o["run"]
        ok = run.get("status") == "ok"
        mine = run[field] * scale if ok else None
        first = True
        values = {}
        for ref, _, _, _ in anchors:
            r = find_ref(refs, kind, ref, o)
            values[ref] = r.get("tflops" if unit == "TFLOP/s" else "gbps") if r else None
        for ref, what, target, group in anchors:
            theirs = values[ref]
            ratio = mine / theirs if mine and theirs else None
            group_refs = [a[0] for a in anchors if a[3] == group and values[a[0]]]
            if target is None:
                verdict = what
            elif not mine or not group_refs:
                verdict = ">= %.2f: not measured" % target
                missed += 1
            else:
                best_ref = max(group_refs, key=lambda a: values[a])
                best = mine / values[best_ref]
                verdict = ">= %.2f %s" % (target, "met" if best >= target else "MISSED")
                if best_ref == ref:
                    verdict += " (%s)" % what
                else:
                    verdict += " at %.2fx (%s at its faster: %s)" % (best, what, best_ref)
                missed += best < target
            out.append("%-22s %14s  %-24s %14s  %7s  %s" % (
                o["label"] if first else "",
                ("%.1f %s" % (mine, unit) if mine else run.get("status", "failed")) if first else "",
                ref, "%.1f %s" % (theirs, unit) if theirs else "-",
                "%.2fx" % ratio if ratio else "-", verdict))
            first = False
    out.append("")
    for o in ours:
        out.append("best %-17s %s" % (o["label"], o["run"].get("schedule", "?")))
    for r in refs:
        if r.get("kind") == "error":
            out.append("reference not measured: %s: %s" % (r.get("what"), r.get("message")))
    out.append("targets missed or not measured: %d" % missed)
    return "\n".join(out)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: gpu_table.py REFS.jsonl OURS.jsonl")
    refs = load(sys.argv[1]) if _exists(sys.argv[1]) else []
    ours = load(sys.argv[2]) if _exists(sys.argv[2]) else []
    print(table(refs, ours))


def _exists(path):
    try:
        open(path).close()
        return True
    except OSError:
        return False


if __name__ == "__main__":
    main()
