#!/usr/bin/env python3
"""torch_ops.py — PyTorch CPU's counterparts of our ops, timed on request: the anchor
bench/cpu_rows, bench/cpu_attention and bench/cpu_gemm run beside our kernels (benchmark only;
the product never uses PyTorch).

    python3 bench/torch_ops.py --op softmax_safe --dtype bf16 --shape M=4096,N=4096 --threads 1
    python3 bench/torch_ops.py --op flash_attention_causal --dtype bf16 \
        --shape B=1,H=8,S=1024,D=64

Prints one line, "ready <what was chosen>", or "skip <why>" and exits. Then, for each line K
read from stdin, runs the op K times and prints the median wall time of one call in
nanoseconds. The benchmark alternates these requests with its own rounds, so both see the
machine at the same moments.

PyTorch at its best: where an op has an out= form (softmax, layernorm), both it and the
allocating call are timed during warm-up and the faster is kept (a fresh 32-64 MiB output a
call costs page faults that a framework's caller may avoid). Inputs are those our ops use: X
uniform in the op's range, gamma and beta near 1 and 0; attention's Q and K uniform in [-2, 2],
V in [-1, 1], [B*H, S, D] as [B, H, S, D], through F.scaled_dot_product_attention (its fused
CPU flash-attention kernel); gemm's A and B uniform in [-1, 1], C in their dtype (a bf16 matmul
accumulates in f32 and rounds C to bf16, as ours), through torch.matmul or torch.mm's out=
form, whichever is faster (oneDNN, MKL or PyTorch's own kernels, as PyTorch dispatches), or,
in 16 bits, the f32 matmul of the inputs widened, C rounded from it: the same product."""
import argparse
import statistics
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--op", required=True)
    ap.add_argument("--dtype", required=True)
    ap.add_argument("--shape", required=True, help="our dims, e.g. M=4096,N=4096")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001 - any import failure means no anchor
        print(f"skip PyTorch is not importable here ({type(e).__name__}: {e})", flush=True)
        return 0
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    dt = dtypes.get(a.dtype.split()[0])
    if dt is None:
        print(f"skip no PyTorch dtype for {a.dtype}", flush=True)
        return 0
    torch.set_num_threads(a.threads)
    dims = {k: int(v) for k, v in (kv.split("=") for kv in a.shape.split(","))}
    aten = torch.ops.aten
    F = torch.nn.functional
    if a.op.startswith("flash_attention"):
        B, H, S, D = dims["B"], dims["H"], dims["S"], dims["D"]
        q = torch.empty(B, H, S, D, dtype=dt).uniform_(-2.0, 2.0)
        k = torch.empty(B, H, S, D, dtype=dt).uniform_(-2.0, 2.0)
        v = torch.empty(B, H, S, D, dtype=dt).uniform_(-1.0, 1.0)
        causal = a.op == "flash_attention_causal"
        forms = {"F.scaled_dot_product_attention":
                     lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)}
        return run(torch, a, forms)
    if a.op == "gemm":
        M, N, K = dims["M"], dims["N"], dims["K"]
        x = torch.empty(M, K, dtype=dt).uniform_(-1.0, 1.0)
        w = torch.empty(K, N, dtype=dt).uniform_(-1.0, 1.0)
        c = torch.empty(M, N, dtype=dt)
        forms = {"torch.matmul": lambda: torch.matmul(x, w),
                 "torch.mm out=": lambda: torch.mm(x, w, out=c)}
        if dt != torch.float32:
            # The same product (f32 accumulation, C rounded once) through the f32 GEMM, the
            # widening included: where the CPU has no 16-bit dot product PyTorch's own 16-bit
            # matmul may be far slower than this.
            forms["widened f32 matmul"] = \
                lambda: torch.matmul(x.float(), w.float()).to(dt)
        return run(torch, a, forms)
    M, N = dims["M"], dims["N"]
    lo, hi = (-4.0, 4.0) if a.op == "softmax_safe" else (-1.0, 3.0) if a.op == "layernorm_safe" else (-1.0, 1.0)
    x = torch.empty(M, N, dtype=dt).uniform_(lo, hi)
    y = torch.empty_like(x)
    g = torch.empty(N, dtype=dt).uniform_(0.5, 1.5)
    b = torch.empty(N, dtype=dt).uniform_(-0.5, 0.5)
    if a.op == "softmax_safe":
        forms = {"torch.softmax": lambda: torch.softmax(x, -1),
                 "aten._softmax.out": lambda: aten._softmax.out(x, -1, False, out=y)}
    elif a.op == "layernorm_safe":
        mean = torch.empty(M, 1, dtype=dt)
        rstd = torch.empty(M, 1, dtype=dt)
        forms = {"F.layer_norm": lambda: F.layer_norm(x, (N,), g, b, 1e-5),
                 "aten.native_layer_norm.out":
                     lambda: aten.native_layer_norm.out(x, [N], g, b, 1e-5, out0=y, out1=mean, out2=rstd)}
    elif a.op == "rmsnorm_safe":
        forms = {"F.rms_norm": lambda: F.rms_norm(x, (N,), g, 1e-5)}
    else:
        print(f"skip no PyTorch counterpart of {a.op}", flush=True)
        return 0
    return run(torch, a, forms)


def run(torch, a, forms):
    """Warms up every form, keeps the fastest, says "ready" and serves the timing requests."""
    def sample(f, k):
        s = []
        for _ in range(k):
            t0 = time.perf_counter_ns()
            f()
            s.append(time.perf_counter_ns() - t0)
        return statistics.median(s)

    best, best_ns = None, None
    for name, f in forms.items():
        try:
            f()
        except Exception:  # noqa: BLE001 - a form this PyTorch lacks is left out
            continue
        ns = sample(f, 3)
        if best_ns is None or ns < best_ns:
            best, best_ns = name, ns
    if best is None:
        print(f"skip no form of {a.op} ran in PyTorch {torch.__version__}", flush=True)
        return 0
    f = forms[best]
    cap = torch.backends.cpu.get_cpu_capability()
    print(f"ready {best}, PyTorch {torch.__version__} ({cap}), {a.threads} thread(s)", flush=True)
    for line in sys.stdin:
        k = max(1, int(line.strip() or "1"))
        print(f"{sample(f, k):.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
