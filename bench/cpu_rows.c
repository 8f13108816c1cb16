/* cpu_rows — benchmark (not a test): the row ops (softmax, layernorm, rmsnorm) at their best
 * point of a sweep over the op's CPU space, through the whole spine (lower → emit C → cc →
 * verify → time), against two anchors measured side by side in one run:
 * - a copy of the same bytes (the STREAM-copy class: what any pass reading X and writing Y must
 *   at least cost), at its best: each round takes the faster of glibc's memcpy and a loop of
 *   non-temporal 16-byte stores, since our kernels may stream their output too; on as many
 *   threads as our kernel (--threads), since one core alone cannot draw all of the memory's
 *   bandwidth;
 * - PyTorch CPU's op (bench/torch_ops.py, run by --python, default $TS_BENCH_PYTHON or
 *   python3), skipped with the reason where PyTorch cannot be imported.
 *
 *   build/bench/cpu_rows [--shape M=4096,N=4096] [--ops softmax_safe,..] [--dtypes f32,bf16,f16]
 *                        [--threads 1] [--rounds 9] [--python PATH] [--no-torch]
 *                        [--versus 'KNOB("VALUE")..']
 *
 * --versus also times the best point that has those knob values (e.g. apply("row"): the
 * space without a newer knob value) in the same rounds, and prints ours against it: what a
 * knob value gains at the tuner's best, side by side, rather than from two runs.
 *
 * The sweep times every point once; its fastest few are timed again in interleaved rounds on
 * shared buffers, the best of those being our point (one short run each left the pick to luck
 * on a busy machine). Then it and the anchors alternate in rounds (a few calls of each in
 * turn), so all see the same machine from moment to moment. Prints one row per
 * (op, dtype): GB/s of the median round of each (the op's bytes: X read and Y written, as the
 * copy's), the median of the rounds' ratios with their range, and the winning point. */
#include <gio/gio.h>
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "bench-pick.h"
#include "bench-torch.h"
#include "ts-numerics.h"
#include "ts-op.h"
#include "ts-tune-stats.h"

static double
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* A copy whose stores bypass the cache (no read of each destination line before it is
 * written): glibc's memcpy does this only above a threshold of its own. */
static void
stream_copy(void *dst, const void *src, gsize bytes)
{
#if defined(__SSE2__)
  if (((guintptr)dst | (guintptr)src) % 16 == 0) {
    gsize i = 0;
    for (; i + 64 <= bytes; i += 64) {
      const char *s = (const char *)src + i;
      char *d = (char *)dst + i;
      __m128i a = _mm_load_si128((const __m128i *)s), b = _mm_load_si128((const __m128i *)(s + 16));
      __m128i c = _mm_load_si128((const __m128i *)(s + 32)), e = _mm_load_si128((const __m128i *)(s + 48));
      _mm_stream_si128((__m128i *)d, a);
      _mm_stream_si128((__m128i *)(d + 16), b);
      _mm_stream_si128((__m128i *)(d + 32), c);
      _mm_stream_si128((__m128i *)(d + 48), e);
    }
    memcpy((char *)dst + i, (const char *)src + i, bytes - i);
    _mm_sfence();
    return;
  }
#endif
  memcpy(dst, src, bytes);
}

/* One copy of `bytes` from src to dst, by memcpy or by stream_copy, on `threads` threads:
 * 1 MiB pieces handed out as threads free up, as our kernels hand out rows, so that a core
 * taken by another process slows both sides alike. One thread copies in one call: glibc's
 * memcpy picks its strategy by the whole size. */
static void
copy_once(void *dst, const void *src, gsize bytes, gboolean stream, gint threads)
{
  const gsize piece = threads > 1 ? 1 << 20 : MAX(bytes, 1);
  const gint64 n = (gint64)((bytes + piece - 1) / piece);
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(dynamic) if (threads > 1)
#endif
  for (gint64 i = 0; i < n; i++) {
    const gsize off = (gsize)i * piece, len = MIN(piece, bytes - off);
    if (stream)
      stream_copy((char *)dst + off, (const char *)src + off, len);
    else
      memcpy((char *)dst + off, (const char *)src + off, len);
  }
}

/* Median of n timed copies (see copy_once). */
static double
copy_sample(const void *src, void *dst, gsize bytes, guint n, gboolean stream, gint threads)
{
  double s[64];
  n = MIN(n, G_N_ELEMENTS(s));
  for (guint i = 0; i < n; i++) {
    double t0 = now_ns();
    copy_once(dst, src, bytes, stream, threads);
    s[i] = now_ns() - t0;
  }
  return ts_stats_median(s, n);
}

/* Rounds of `calls` launches each, ours, the --versus point's (alt, if any), the copy's and
 * PyTorch's, after one warm-up round. */
static gboolean
interleave(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
           const TsSchedPoint *alt, gsize bytes, gint threads, guint rounds, guint calls,
           double *ours_ns, double *alt_ns, double *copy_ns, BenchTorch *torch,
           double *torch_ns, GError **error)
{
  g_autoptr(TsModule) module = NULL, alt_module = NULL;
  g_autoptr(TsOpTimer) timer = bench_point_timer(inst, backend, point, NULL, &module, error);
  if (timer == NULL)
    return FALSE;
  g_autoptr(TsOpTimer) alt_timer = NULL;
  if (alt &&
      (alt_timer = bench_point_timer(inst, backend, alt, timer, &alt_module, error)) == NULL)
    return FALSE;
  /* The copy's buffers: as large as X and Y, written first so no page is touched for the
   * first time while timed. */
  g_autofree char *x = g_malloc(bytes);
  g_autofree char *y = g_malloc(bytes);
  memset(x, 1, bytes);
  memset(y, 2, bytes);
  double s[64];
  calls = MIN(calls, G_N_ELEMENTS(s));
  gboolean ok = ts_op_timer_sample(timer, 1, calls, s, error) &&
                (alt_timer == NULL || ts_op_timer_sample(alt_timer, 1, calls, s, error));
  copy_sample(x, y, bytes, calls, FALSE, threads);
  copy_sample(x, y, bytes, calls, TRUE, threads);
  for (guint r = 0; ok && r < rounds; r++) {
    ok = ts_op_timer_sample(timer, 0, calls, s, error);
    ours_ns[r] = ts_stats_median(s, calls);
    if (ok && alt_timer) {
      ok = ts_op_timer_sample(alt_timer, 0, calls, s, error);
      alt_ns[r] = ts_stats_median(s, calls);
    }
    copy_ns[r] = MIN(copy_sample(x, y, bytes, calls, FALSE, threads),
                     copy_sample(x, y, bytes, calls, TRUE, threads));
    torch_ns[r] = torch->proc ? bench_torch_sample(torch, calls) : NAN;
  }
  return ok;
}

int
main(int argc, char **argv)
{
  g_autofree char *shape = g_strdup("M=4096,N=4096");
  g_autofree char *ops = g_strdup("softmax_safe,layernorm_safe,rmsnorm_safe");
  g_autofree char *dtypes = g_strdup("f32,bf16,f16");
  gint threads = 1, rounds = 9;
  gboolean no_torch = FALSE;
  g_autofree char *python = NULL, *versus = NULL;
  GOptionEntry entries[] = {
    {"shape", 0, 0, G_OPTION_ARG_STRING, &shape, "Shape (default M=4096,N=4096)", "DIMS"},
    {"ops", 0, 0, G_OPTION_ARG_STRING, &ops, "Row ops (default softmax, layernorm, rmsnorm)",
     "OP,.."},
    {"dtypes", 0, 0, G_OPTION_ARG_STRING, &dtypes, "Storage dtypes (default f32,bf16,f16)",
     "D,.."},
    {"threads", 0, 0, G_OPTION_ARG_INT, &threads, "Threads of our kernel (default 1)", "T"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Interleaved rounds (default 9)", "R"},
    {"python", 0, 0, G_OPTION_ARG_FILENAME, &python,
     "Python with PyTorch for the PyTorch anchor (default $TS_BENCH_PYTHON, else python3)", "PATH"},
    {"no-torch", 0, 0, G_OPTION_ARG_NONE, &no_torch, "Leave out the PyTorch anchor", NULL},
    {"versus", 0, 0, G_OPTION_ARG_STRING, &versus,
     "Also time the best point with these knob values, e.g. 'apply(\"row\")'", "KNOBS"},
    G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new("- our row ops vs a copy of their bytes");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    g_printerr("cpu_rows: %s\n", error->message);
    return 2;
  }
  g_autoptr(TsSchedPoint) only = NULL;
  if (versus && (only = ts_sched_point_parse(versus, &error)) == NULL) {
    g_printerr("cpu_rows: --versus: %s\n", error->message);
    return 2;
  }
  if (python == NULL)
    python = g_strdup(bench_torch_default_python());
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  if (backend == NULL) {
    g_printerr("cpu_rows: %s\n", error->message);
    return 3;
  }
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  rounds = CLAMP(rounds, 1, 64);
  gint copy_threads = threads;
#ifndef _OPENMP
  copy_threads = 1; /* built without OpenMP: the copy runs on one thread whatever --threads */
#endif
  g_print("# cpu_rows: Tessera row ops (best of a sweep of each op's CPU space, %d thread%s) vs a "
          "copy of the same bytes (%d thread%s, the faster of memcpy and non-temporal stores each "
          "round) and vs PyTorch CPU (%d thread%s)\n", threads, threads == 1 ? "" : "s",
          copy_threads, copy_threads == 1 ? "" : "s", threads, threads == 1 ? "" : "s");
  g_print("# device: %s (%s), %u cores; toolchain %s\n", dev->name, dev->arch, dev->compute_units,
          dev->toolchain);
  g_print("# shape %s; %d interleaved rounds per row; ratios = our GB/s / the anchor's, median of "
          "the rounds [lowest, highest]\n", shape, rounds);
  if (versus)
    g_print("# vs alt: our best against the best point with %s (alt, its point on the line "
            "above), timed in the same rounds\n", versus);
  g_print("%-15s %-5s %9s %9s %18s %9s %18s%s  %s\n", "op", "dtype", "ours GB/s", "copy GB/s",
          "vs copy", "torch", "vs torch", versus ? "             vs alt" : "", "best schedule");
  g_auto(GStrv) ov = g_strsplit(ops, ",", -1);
  g_auto(GStrv) dv = g_strsplit(dtypes, ",", -1);
  for (guint oi = 0; ov[oi]; oi++)
    for (guint di = 0; dv[di]; di++) {
      g_autoptr(TsOpInstance) inst = ts_op_instance_new(ov[oi], shape, dv[di], &error);
      if (inst == NULL) {
        g_printerr("cpu_rows: %s\n", error->message);
        return 2;
      }
      g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, &error);
      guint calls = 3;
      g_autoptr(GArray) cands = NULL;
      g_autofree char *best_pt =
        space ? bench_best_point(inst, backend, space, threads, 200, "cpu_rows", &calls, &cands,
                                 &error)
              : NULL;
      g_autofree char *alt_pt =
        best_pt && only ? bench_final_pick(inst, backend, cands, only, calls, &error) : NULL;
      if (error) {
        g_printerr("cpu_rows: %s\n", error->message);
        return 3;
      }
      if (best_pt == NULL) {
        g_print("%-15s %-5s  (no point verified)\n", ov[oi], dv[di]);
        continue;
      }
      g_autoptr(TsSchedPoint) winner = ts_sched_point_parse(best_pt, &error);
      g_autoptr(TsSchedPoint) alt = alt_pt ? ts_sched_point_parse(alt_pt, &error) : NULL;
      if (versus)
        g_print("# %s %s: alt %s\n", ov[oi], dv[di],
                alt_pt ? alt_pt : "none (no verified point of the space has those values)");
      /* X read and Y written, as the copy's (layernorm's gamma and beta, 2 N, left out). */
      const TsShape *sh = ts_op_instance_shape(inst);
      const gint64 M = ts_shape_get(sh, "M"), N = ts_shape_get(sh, "N");
      const double bytes = 2.0 * M * N * (ts_dtype_bits(ts_op_instance_dtype(inst)->storage) / 8);
      BenchTorch torch = {0};
      bench_torch_start(&torch, no_torch ? NULL : python, ov[oi], dv[di], shape, threads);
      double ours[64], altv[64], copy[64], tor[64];
      gboolean ok = winner != NULL && interleave(inst, backend, winner, alt, (gsize)(bytes / 2),
                                                 copy_threads, (guint)rounds, calls, ours, altv,
                                                 copy, &torch, tor, &error);
      bench_torch_clear(&torch);
      if (!ok) {
        g_printerr("cpu_rows: %s\n", error->message);
        return 3;
      }
      double mo = ts_stats_median(ours, rounds), mc = ts_stats_median(copy, rounds);
      g_autofree char *vs_copy = bench_ratio_text(copy, ours, (guint)rounds);
      g_autofree char *vs_torch = bench_ratio_text(tor, ours, (guint)rounds);
      g_autofree char *torch_gbs = NULL;
      if (vs_torch)
        torch_gbs = g_strdup_printf("%.2f", bytes / bench_median_finite(tor, (guint)rounds));
      g_autofree char *vs_alt = NULL;
      if (versus) {
        g_autofree char *a = alt ? bench_ratio_text(altv, ours, (guint)rounds) : NULL;
        vs_alt = g_strdup_printf(" %18s", a ? a : "-");
      }
      g_print("%-15s %-5s %9.2f %9.2f %18s %9s %18s%s  %s\n", ov[oi], dv[di], bytes / mo,
              bytes / mc, vs_copy, torch_gbs ? torch_gbs : "-", vs_torch ? vs_torch : "-",
              vs_alt ? vs_alt : "", best_pt);
    }
  return 0;
}
