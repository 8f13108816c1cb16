#!/usr/bin/env python3
"""gpu_ref.py — the PyTorch references bench/gpu.sh compares Tessera's kernels with, measured on
the same GPU in the same run: scaled_dot_product_attention with the backend PyTorch picks and
with cuDNN's forced (the FlashAttention-3-class anchor on Hopper), torch.matmul (cuBLAS; a
cross-check of bench/cublas_gemm), layernorm/softmax, and a device-to-device copy of the same
bytes (a cross-check of bench/cuda_copy). A reference that cannot run prints a {"kind":
"error"} line saying why and the others go on.

Timing follows the workbench's rules: fresh random inputs (never zeros), warm-up, L2 flushed
before every timed call (a 2x-L2 buffer is overwritten), CUDA events around each call, median
of the samples. Prints one JSON object per line.

Usage: gpu_ref.py [--repeats N]
"""
import argparse
import json
import statistics
import sys

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # not only ImportError: a broken install raises OSError and others
    print("gpu_ref.py: cannot import torch (%s: %s)" % (type(e).__name__, e), file=sys.stderr)
    sys.exit(77)


def timed(fn, repeats, flush):
    """Median and all samples (ms) of fn(), L2 flushed before each call."""
    for _ in range(3):
        fn()
    samples = []
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(repeats):
        flush.zero_()
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples), samples


def emit(**kw):
    print(json.dumps(kw), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_ref.py: no CUDA device", file=sys.stderr)
        sys.exit(77)
    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    l2 = getattr(props, "L2_cache_size", 50 << 20)
    flush = torch.empty(2 * l2 // 4 + 1, dtype=torch.float32, device=dev)
    torch.manual_seed(1)
    emit(kind="device", name=props.name, sms=props.multi_processor_count,
         torch=torch.__version__, l2_bytes=l2)
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False

    for n in (4096, 8192):
        a = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
        b = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
        ms, _ = timed(lambda: torch.matmul(a, b), args.repeats, flush)
        emit(kind="gemm", ref="torch.matmul (cuBLAS)", M=n, N=n, K=n, dtype="bf16", ms=ms,
             tflops=2.0 * n ** 3 / ms / 1e9)
        del a, b

    B, H, S, D = 4, 16, 4096, 128
    q = torch.randn(B, H, S, D, dtype=torch.bfloat16, device=dev)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except Exception as e:
        sdpa_kernel = None
        emit(kind="error", what="torch sdpa (cudnn)", message="%s: %s" % (type(e).__name__, e))
    for causal in (False, True):
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        ms, _ = timed(run, args.repeats, flush)
        emit(kind="attention", ref="torch sdpa (default)", B=B, H=H, S=S, D=D,
             causal=int(causal), dtype="bf16", ms=ms, tflops=flops / ms / 1e9)
        if sdpa_kernel is None:
            continue
        try:
            with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                ms, _ = timed(run, args.repeats, flush)
            emit(kind="attention", ref="torch sdpa (cudnn)", B=B, H=H, S=S, D=D,
                 causal=int(causal), dtype="bf16", ms=ms, tflops=flops / ms / 1e9)
        except Exception as e:
            emit(kind="error", what="torch sdpa (cudnn) causal=%d" % causal,
                 message="%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200]))
    del q, k, v

    M, N = 16384, 8192
    x = torch.randn(M, N, dtype=torch.bfloat16, device=dev)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()  # read + write
    ms, _ = timed(lambda: y.copy_(x), args.repeats, flush)
    emit(kind="copy", ref="torch copy_", M=M, N=N, dtype="bf16", ms=ms, gbps=nbytes / ms / 1e6)
    g = torch.randn(N, dtype=torch.bfloat16, device=dev)
    bt = torch.randn(N, dtype=torch.bfloat16, device=dev)
    ms, _ = timed(lambda: F.layer_norm(x, (N,), g, bt, 1e-5), args.repeats, flush)
    emit(kind="layernorm", ref="torch layer_norm", M=M, N=N, dtype="bf16", ms=ms, gbps=nbytes / ms / 1e6)
    ms, _ = timed(lambda: torch.softmax(x, dim=-1), args.repeats, flush)
    emit(kind="softmax", ref="torch softmax", M=M, N=N, dtype="bf16", ms=ms, gbps=nbytes / ms / 1e6)


if __name__ == "__main__":
    main()
