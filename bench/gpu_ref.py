#!/usr/bin/env python3
"""gpu_ref.py — the references bench/gpu.sh compares Tessera's kernels with, measured on the
same GPU in the same run: cuBLAS (through torch.matmul, which calls cublasLt for bf16), PyTorch's
scaled_dot_product_attention, PyTorch layernorm/softmax, and a device-to-device copy of the
same bytes (the bandwidth ceiling of a memory-bound op).

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
except ImportError:
    print("gpu_ref.py: PyTorch is not installed; the references need it", file=sys.stderr)
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
        emit(kind="gemm", ref="cublas (torch.matmul)", M=n, N=n, K=n, dtype="bf16", ms=ms,
             tflops=2.0 * n ** 3 / ms / 1e9)
        del a, b

    B, H, S, D = 4, 16, 4096, 128
    q = torch.randn(B, H, S, D, dtype=torch.bfloat16, device=dev)
    k = torch.randn_like(q)
    v = torch.randn_like(q)
    for causal in (False, True):
        ms, _ = timed(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                      args.repeats, flush)
        flops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        emit(kind="attention", ref="torch sdpa", B=B, H=H, S=S, D=D, causal=int(causal),
             dtype="bf16", ms=ms, tflops=flops / ms / 1e9)
    del q, k, v

    M, N = 16384, 8192
    x = torch.randn(M, N, dtype=torch.bfloat16, device=dev)
    y = torch.empty_like(x)
    nbytes = 2 * x.numel() * x.element_size()  # read + write
    ms, _ = timed(lambda: y.copy_(x), args.repeats, flush)
    emit(kind="copy", M=M, N=N, dtype="bf16", ms=ms, gbps=nbytes / ms / 1e6)
    g = torch.randn(N, dtype=torch.bfloat16, device=dev)
    bt = torch.randn(N, dtype=torch.bfloat16, device=dev)
    ms, _ = timed(lambda: F.layer_norm(x, (N,), g, bt, 1e-5), args.repeats, flush)
    emit(kind="layernorm", ref="torch", M=M, N=N, dtype="bf16", ms=ms, gbps=nbytes / ms / 1e6)
    ms, _ = timed(lambda: torch.softmax(x, dim=-1), args.repeats, flush)
    emit(kind="softmax", ref="torch", M=M, N=N, dtype="bf16", ms=ms, gbps=nbytes / ms / 1e6)


if __name__ == "__main__":
    main()
