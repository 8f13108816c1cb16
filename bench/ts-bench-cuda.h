/* ts-bench-cuda.h — what the C references of bench/gpu.sh share (cublas_gemm, cuda_copy): the
 * driver loaded at run time, device 0's primary context and a stream of its own, a buffer of
 * twice the L2 to flush it, and the workbench's timing rule (warm-up, L2 flushed before each
 * call, CUDA events around it, the median). A failing call ends the program with its name. */
#pragma once

#include <glib.h>

#include "ts-cuda-private.h"

typedef struct {
  const char *prog; /* names the program in messages */
  const TsCudaDriver *cu;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUdeviceptr flush;
  gsize flush_bytes;
} TsBenchCuda;

/* FALSE (message printed) when there is no driver or device: the caller exits 77. */
gboolean ts_bench_cuda_open(TsBenchCuda *b, const char *prog);
void ts_bench_cuda_close(TsBenchCuda *b);
/* Exits 1 with "prog: call: error text" unless r is CUDA_SUCCESS. */
void ts_bench_cuda_check(const TsBenchCuda *b, CUresult r, const char *call);
/* Runs call(data) on b->stream 3 times untimed, then `repeats` times timed, the L2 flushed
 * before each; returns the median in ms. */
double ts_bench_cuda_time(TsBenchCuda *b, void (*call)(TsBenchCuda *b, gpointer data),
                          gpointer data, int repeats);
