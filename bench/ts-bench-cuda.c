/* ts-bench-cuda.c — see ts-bench-cuda.h. */
#include "config.h"

#include "ts-bench-cuda.h"

#include <stdio.h>
#include <stdlib.h>

#include "ts-tune-stats.h"

void
ts_bench_cuda_check(const TsBenchCuda *b, CUresult r, const char *call)
{
  if (r == CUDA_SUCCESS)
    return;
  g_autofree char *text = ts__cuda_result_text(b->cu, r);
  fprintf(stderr, "%s: %s: %s\n", b->prog, call, text);
  exit(1);
}

gboolean
ts_bench_cuda_open(TsBenchCuda *b, const char *prog)
{
  *b = (TsBenchCuda){.prog = prog};
  g_autoptr(GError) error = NULL;
  b->cu = ts__cuda_driver(&error);
  if (b->cu == NULL) {
    fprintf(stderr, "%s: %s\n", prog, error->message);
    return FALSE;
  }
  int n_dev = 0;
  if (b->cu->cuInit(0) != CUDA_SUCCESS || b->cu->cuDeviceGetCount(&n_dev) != CUDA_SUCCESS ||
      n_dev == 0) {
    fprintf(stderr, "%s: no CUDA device\n", prog);
    return FALSE;
  }
  const TsCudaDriver *cu = b->cu;
  ts_bench_cuda_check(b, cu->cuDeviceGet(&b->dev, 0), "cuDeviceGet");
  ts_bench_cuda_check(b, cu->cuDevicePrimaryCtxRetain(&b->ctx, b->dev), "cuDevicePrimaryCtxRetain");
  ts_bench_cuda_check(b, cu->cuCtxSetCurrent(b->ctx), "cuCtxSetCurrent");
  ts_bench_cuda_check(b, cu->cuStreamCreate(&b->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  int l2 = 0;
  ts_bench_cuda_check(b, cu->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, b->dev),
                      "cuDeviceGetAttribute");
  b->flush_bytes = (gsize)MAX(l2, 1 << 20) * 2;
  ts_bench_cuda_check(b, cu->cuMemAlloc(&b->flush, b->flush_bytes), "cuMemAlloc");
  return TRUE;
}

void
ts_bench_cuda_close(TsBenchCuda *b)
{
  if (b->cu == NULL || b->ctx == NULL)
    return;
  b->cu->cuMemFree(b->flush);
  b->cu->cuStreamDestroy(b->stream);
  b->cu->cuDevicePrimaryCtxRelease(b->dev);
  b->ctx = NULL;
}

double
ts_bench_cuda_time(TsBenchCuda *b, void (*call)(TsBenchCuda *b, gpointer data), gpointer data,
                   int repeats)
{
  const TsCudaDriver *cu = b->cu;
  CUevent start, stop;
  ts_bench_cuda_check(b, cu->cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  ts_bench_cuda_check(b, cu->cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");
  g_autofree double *ms = g_new(double, repeats);
  for (int i = -3; i < repeats; i++) { /* 3 warm-up calls */
    ts_bench_cuda_check(b, cu->cuMemsetD32Async(b->flush, (unsigned)i, b->flush_bytes / 4,
                                                b->stream), "cuMemsetD32Async");
    ts_bench_cuda_check(b, cu->cuEventRecord(start, b->stream), "cuEventRecord");
    call(b, data);
    ts_bench_cuda_check(b, cu->cuEventRecord(stop, b->stream), "cuEventRecord");
    ts_bench_cuda_check(b, cu->cuEventSynchronize(stop), "cuEventSynchronize");
    float t = 0;
    ts_bench_cuda_check(b, cu->cuEventElapsedTime(&t, start, stop), "cuEventElapsedTime");
    if (i >= 0)
      ms[i] = t;
  }
  cu->cuEventDestroy(start);
  cu->cuEventDestroy(stop);
  return ts_stats_median(ms, (guint)repeats);
}
