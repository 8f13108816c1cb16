/* cuda_copy.c — the bandwidth ceiling bench/gpu.sh holds the row ops to, from C: a
 * device-to-device copy (cuMemcpyDtoDAsync) of the same bytes a row op reads, timed by the
 * workbench's rules (ts-bench-cuda.h) and counted as bytes read plus bytes written. The copy is
 * checked byte for byte, so a copy that did not happen cannot set the bar.
 *
 *   cuda_copy [--repeats N] BYTES [BYTES ...]
 *
 * One JSON object per size on stdout, in gpu_ref.py's format: {"kind": "copy", "ref":
 * "cuMemcpyDtoD (C)", "bytes": .., "ms": .., "gbps": ..}. Exit 77 without a CUDA device, 1 when a
 * call or the check fails. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ts-bench-cuda.h"

typedef struct {
  CUdeviceptr src, dst;
  gsize bytes;
} Copy;

static void
copy_once(TsBenchCuda *b, gpointer data)
{
  const Copy *c = data;
  ts_bench_cuda_check(b, b->cu->cuMemcpyDtoDAsync(c->dst, c->src, c->bytes, b->stream),
                      "cuMemcpyDtoDAsync");
}

static void
run_size(TsBenchCuda *b, gsize bytes, int repeats)
{
  const TsCudaDriver *cu = b->cu;
  Copy c = {.bytes = bytes};
  g_autofree guint8 *host = g_malloc(bytes);
  g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)bytes);
  for (gsize i = 0; i < bytes; i += 4) {
    guint32 v = g_rand_int(rng);
    memcpy(host + i, &v, MIN(4, bytes - i));
  }
  ts_bench_cuda_check(b, cu->cuMemAlloc(&c.src, bytes), "cuMemAlloc");
  ts_bench_cuda_check(b, cu->cuMemAlloc(&c.dst, bytes), "cuMemAlloc");
  ts_bench_cuda_check(b, cu->cuMemcpyHtoDAsync(c.src, host, bytes, b->stream), "cuMemcpyHtoDAsync");
  ts_bench_cuda_check(b, cu->cuMemsetD32Async(c.dst, 0, bytes / 4, b->stream), "cuMemsetD32Async");
  const double ms = ts_bench_cuda_time(b, copy_once, &c, repeats);
  g_autofree guint8 *back = g_malloc(bytes);
  ts_bench_cuda_check(b, cu->cuMemcpyDtoHAsync(back, c.dst, bytes, b->stream), "cuMemcpyDtoHAsync");
  ts_bench_cuda_check(b, cu->cuStreamSynchronize(b->stream), "cuStreamSynchronize");
  cu->cuMemFree(c.src);
  cu->cuMemFree(c.dst);
  if (memcmp(host, back, bytes) != 0) {
    fprintf(stderr, "cuda_copy: %" G_GSIZE_FORMAT " bytes: the copy differs from its source\n",
            bytes);
    exit(1);
  }
  printf("{\"kind\": \"copy\", \"ref\": \"cuMemcpyDtoD (C)\", \"bytes\": %" G_GSIZE_FORMAT
         ", \"ms\": %.6f, \"gbps\": %.1f}\n", bytes, ms, 2.0 * (double)bytes / ms / 1e6);
  fflush(stdout);
}

int
main(int argc, char **argv)
{
  int repeats = 30, first = 1;
  if (argc > 2 && strcmp(argv[1], "--repeats") == 0) {
    repeats = atoi(argv[2]);
    first = 3;
  }
  if (repeats <= 0 || argc - first < 1) {
    fprintf(stderr, "usage: cuda_copy [--repeats N] BYTES [BYTES ...]\n");
    return 2;
  }
  for (int i = first; i < argc; i++)
    if (g_ascii_strtoll(argv[i], NULL, 10) <= 0) {
      fprintf(stderr, "cuda_copy: '%s' is not a positive byte count\n", argv[i]);
      return 2;
    }
  TsBenchCuda b;
  if (!ts_bench_cuda_open(&b, "cuda_copy"))
    return 77;
  for (int i = first; i < argc; i++)
    run_size(&b, (gsize)g_ascii_strtoll(argv[i], NULL, 10), repeats);
  ts_bench_cuda_close(&b);
  return 0;
}
