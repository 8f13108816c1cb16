/* cpu_gemm — benchmark (not a test): our best GEMM, found by a small sweep over its schedule
 * space through the whole spine (lower → emit C → cc → verify → time), against the libraries
 * users compare with, on the same inputs, measured side by side in one run: OpenBLAS sgemm (f32)
 * and oneDNN's matmul (f32 and bf16), each on the kernel it picks for this machine, and PyTorch
 * CPU's matmul (bench/torch_ops.py, run by --python, default $TS_BENCH_PYTHON or python3;
 * skipped with the reason where PyTorch cannot be imported): the bf16 anchor where the system's
 * oneDNN has no bf16 matmul for the CPU (oneDNN 2.6 wants AVX-512 for it).
 *
 *   build/bench/cpu_gemm [--dtype f32|bf16] [--sizes 512,1024,2048] [--threads 1,2]
 *                        [--space '...'] [--rounds 9] [--keep-coretype]
 *                        [--python PATH] [--no-torch]
 *
 * The sweep times every point once and its fastest few again side by side, the best of those
 * being our point (bench-pick.h); then it and each anchor alternate in rounds (a few calls of
 * one, then of the next), so all see the same machine from moment to moment — a shared VM's
 * neighbours come and go. Prints one row per (size, threads, anchor): the GFLOP/s of the median
 * round of each, the median of the rounds' ratios with their range, and the winning schedule.
 *
 * OpenBLAS reads OPENBLAS_CORETYPE when it loads, and an environment may force an older kernel
 * than the machine's (Haswell on AVX-512) with it: the bench then starts itself again without
 * it, so the anchor is OpenBLAS at its best; --keep-coretype measures the forced kernel. Where
 * OpenBLAS itself detects a kernel narrower than the machine's vectors (a release that does not
 * know the CPU model falls back to SSE3), the bench starts again with the newest kernel the
 * machine runs forced, and says so in its header. */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <errno.h>
#include <unistd.h>

#include "bench-pick.h"
#include "bench-torch.h"
#include "gemm-anchors.h"
#include "ts-numerics.h"
#include "ts-op.h"
#include "ts-tune-stats.h"


/* The sweeps. f32: the register tiles that fit AVX2's 16 registers, cache blocks around the
 * L2 (KC*MC*4 bytes of packed A) and the L3; with AVX-512, 14x32 on 16-float vectors (28 of
 * the 32 zmm registers). bf16: the f32-FMA tiles on widened panels (AVX2's 6x16, AVX-512's
 * 14x32), vdpbf16ps on K-pair panels (AVX512_BF16) and 32x32 AMX tiles (AMX-BF16); K blocks
 * up to the whole K of 2048, for the reason and measurements given at the gemm op's cpu_space
 * (op-gemm.c). Points the machine cannot run are left out by the op's space, so each sweep
 * keeps an AVX2 tile: without one a machine lacking AVX-512 had no bf16 point to time. */
static const char *F32_SPACE =
  "block(m=[72,84,144,168], n=[2016,4032], k=[256,384,512,1024,2048]).micro(m=[6,14], n=[16,32])"
  ".vector([8,16]).unroll([4,8]).where(vector == 8 && MR == 6 && NR == 16 && BM % 72 == 0"
  " || vector == 16 && MR == 14 && NR == 32 && BM % 84 == 0 && unroll == 4)";
static const char *BF16_SPACE =
  "block(m=[72,84,96,112,144,168,192], n=[2016,4032], k=[256,512,1024,2048])"
  ".micro(m=[6,8,14,32], n=[16,32]).vector([8,16]).unroll([4,8]).dot([\"fma\",\"bf16\",\"amx\"])"
  ".where(vector == 8 && MR == 6 && NR == 16 && BM % 72 == 0 && dot == \"fma\""
  " || vector == 16 && NR == 32 && unroll == 4 && (dot == \"amx\" && MR == 32 && BM % 96 == 0"
  " || dot != \"amx\" && (MR == 14 && BM % 14 == 0 || MR == 8 && dot == \"bf16\" && BM == 112)))";

/* Rounds of `calls` launches each, ours then each anchor's, after one warm-up round of all:
 * each side's median time per round in ours_ns[r] and anchor_ns[a * rounds + r], PyTorch's
 * (where torch has a helper running; it warmed itself up) in anchor_ns[anchors->len * rounds
 * + r]. */
static gboolean
interleave(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point, GPtrArray *anchors,
           BenchTorch *torch, guint rounds, guint calls, double *ours_ns, double *anchor_ns,
           GError **error)
{
  g_autoptr(TsModule) module = ts_op_compile(inst, backend, point, error);
  if (module == NULL)
    return FALSE;
  g_autoptr(TsTrialResult) verified = NULL;
  g_autoptr(TsOpTimer) timer = ts_op_timer_new(inst, backend, module, NULL, &verified, error);
  if (timer == NULL) {
    if (error && *error == NULL)
      g_set_error(error, g_quark_from_static_string("cpu-gemm"), 1, "the best point failed: %s",
                  verified ? verified->message : "?");
    return FALSE;
  }
  double s[64];
  calls = MIN(calls, G_N_ELEMENTS(s));
  gboolean ok = ts_op_timer_sample(timer, 1, calls, s, error);
  for (guint a = 0; a < anchors->len; a++)
    gemm_anchor_call(g_ptr_array_index(anchors, a));
  for (guint r = 0; ok && r < rounds; r++) {
    ok = ts_op_timer_sample(timer, 0, calls, s, error);
    ours_ns[r] = ts_stats_median(s, calls);
    for (guint a = 0; a < anchors->len; a++) {
      for (guint c = 0; c < calls; c++)
        s[c] = gemm_anchor_call(g_ptr_array_index(anchors, a));
      anchor_ns[a * rounds + r] = ts_stats_median(s, calls);
    }
    if (torch->proc)
      anchor_ns[anchors->len * rounds + r] = bench_torch_sample(torch, calls);
  }
  return ok;
}

/* Set, to the kernel OpenBLAS detected, when the bench forced a better one itself. */
#define DETECTED_ENV "TS_CPU_GEMM_OPENBLAS_DETECTED"

/* Start this bench again with the environment as now set; `kernel` names OpenBLAS's kernel
 * that stays where that fails ("forced", "detected"). */
static void
restart(char **argv, const char *kernel)
{
  execv("/proc/self/exe", argv);
  g_printerr("cpu_gemm: could not start again (%s); the %s kernel stays\n", g_strerror(errno),
             kernel);
}

/* OPENBLAS_CORETYPE is read when OpenBLAS loads: drop it and start again. */
static void
reexec_without_coretype(char **argv)
{
  const char *forced = g_getenv("OPENBLAS_CORETYPE");
  if (forced == NULL || g_getenv(DETECTED_ENV) != NULL)
    return;
  g_printerr("cpu_gemm: OPENBLAS_CORETYPE=%s forces OpenBLAS's kernel; running again without it "
             "(--keep-coretype measures the forced one)\n", forced);
  g_unsetenv("OPENBLAS_CORETYPE");
  g_unsetenv("OPENBLAS_L2_SIZE");
  restart(argv, "forced");
}

/* OpenBLAS detected a kernel narrower than this machine's vectors: start again with `better`. */
static void
reexec_with_better_core(char **argv, const char *better)
{
  g_printerr("cpu_gemm: OpenBLAS detected its %s kernel, narrower than this CPU's vectors; "
             "running again with OPENBLAS_CORETYPE=%s\n", gemm_anchors_openblas_core(), better);
  g_setenv(DETECTED_ENV, gemm_anchors_openblas_core(), TRUE);
  g_setenv("OPENBLAS_CORETYPE", better, TRUE);
  restart(argv, "detected");
}

int
main(int argc, char **argv)
{
  g_autofree char *sizes = g_strdup("512,1024,2048");
  g_autofree char *threads = g_strdup("1,2");
  g_autofree char *dtype = g_strdup("f32");
  g_autofree char *space_text = NULL;
  gint rounds = 9;
  gboolean keep_coretype = FALSE, no_torch = FALSE;
  g_autofree char *python = NULL;
  GOptionEntry entries[] = {
    {"dtype", 0, 0, G_OPTION_ARG_STRING, &dtype, "f32 or bf16 (f32 accumulation; default f32)",
     "DTYPE"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Interleaved rounds (default 9)", "R"},
    {"sizes", 0, 0, G_OPTION_ARG_STRING, &sizes, "Square sizes (default 512,1024,2048)", "N,.."},
    {"threads", 0, 0, G_OPTION_ARG_STRING, &threads, "Thread counts (default 1,2)", "T,.."},
    {"space", 0, 0, G_OPTION_ARG_STRING, &space_text, "Sweep space (threads added)", "SPACE"},
    {"keep-coretype", 0, 0, G_OPTION_ARG_NONE, &keep_coretype,
     "Keep OPENBLAS_CORETYPE from the environment (measure the kernel it forces)", NULL},
    {"python", 0, 0, G_OPTION_ARG_FILENAME, &python,
     "Python with PyTorch for the PyTorch anchor (default $TS_BENCH_PYTHON, else python3)", "PATH"},
    {"no-torch", 0, 0, G_OPTION_ARG_NONE, &no_torch, "Leave out the PyTorch anchor", NULL},
    G_OPTION_ENTRY_NULL,
  };
  g_autofree char **args = g_memdup2(argv, sizeof(char *) * (gsize)(argc + 1));
  g_autoptr(GOptionContext) ctx = g_option_context_new("- our GEMM vs OpenBLAS and oneDNN");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    g_printerr("cpu_gemm: %s\n", error->message);
    return 2;
  }
  if (g_strcmp0(dtype, "f32") != 0 && g_strcmp0(dtype, "bf16") != 0) {
    g_printerr("cpu_gemm: --dtype must be f32 or bf16, not '%s'\n", dtype);
    return 2;
  }
  const gboolean bf16 = g_strcmp0(dtype, "bf16") == 0;
  if (python == NULL)
    python = g_strdup(bench_torch_default_python());
  if (!keep_coretype)
    reexec_without_coretype(args);
  if (space_text == NULL)
    space_text = g_strdup(bf16 ? BF16_SPACE : F32_SPACE);
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  if (backend == NULL) {
    g_printerr("cpu_gemm: %s\n", error->message);
    return 3;
  }
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  if (!keep_coretype && !bf16 && g_getenv(DETECTED_ENV) == NULL) {
    const char *better = gemm_anchors_openblas_better_core(dev->arch, dev->vector_bits);
    if (better)
      reexec_with_better_core(args, better);
  }
  g_print("# cpu_gemm: Tessera %s GEMM (best of a sweep) vs the anchors below%s%s\n",
          bf16 ? "bf16 (f32 accumulation, bf16 C)" : "f32",
          g_getenv("OPENBLAS_CORETYPE") ? "; OpenBLAS forced by OPENBLAS_CORETYPE=" : "",
          g_getenv("OPENBLAS_CORETYPE") ? g_getenv("OPENBLAS_CORETYPE") : "");
  if (g_getenv(DETECTED_ENV))
    g_print("# OpenBLAS detected its %s kernel on this CPU (a release that does not know the "
            "model falls back to it); the anchor is its %s kernel, the newest this CPU runs\n",
            g_getenv(DETECTED_ENV), gemm_anchors_openblas_core());
  if (gemm_anchors_missing())
    g_print("# not built in (install to compare): %s\n", gemm_anchors_missing());
  g_print("# device: %s (%s), %u cores; toolchain %s\n", dev->name, dev->arch, dev->compute_units,
          dev->toolchain);
  g_print("# sweep space: %s\n", space_text);
  rounds = CLAMP(rounds, 1, 64);
  g_print("# %d interleaved rounds per row; ratio = our speed / the anchor's, median of the rounds "
          "[lowest, highest]\n", rounds);
  g_print("%6s %3s %10s %10s %6s %13s  %-44s %s\n", "size", "thr", "ours GF/s", "anch GF/s",
          "ratio", "range", "anchor", "our best schedule");

  g_auto(GStrv) sv = g_strsplit(sizes, ",", -1);
  g_auto(GStrv) tv = g_strsplit(threads, ",", -1);
  for (guint si = 0; sv[si]; si++) {
    gint64 n = g_ascii_strtoll(sv[si], NULL, 10);
    g_autofree char *shape = g_strdup_printf("M=%" G_GINT64_FORMAT ",N=%" G_GINT64_FORMAT
                                             ",K=%" G_GINT64_FORMAT, n, n, n);
    g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", shape, dtype, &error);
    if (inst == NULL) {
      g_printerr("cpu_gemm: %s\n", error->message);
      return 2;
    }
    /* The anchors' inputs: the same distribution as ours, in the same dtype. */
    const TsDtype dt = bf16 ? TS_DTYPE_BF16 : TS_DTYPE_F32;
    gsize elems = (gsize)n * (gsize)n;
    g_autofree void *a = g_malloc(elems * ts_numerics_elem_size(dt));
    g_autofree void *b = g_malloc(elems * ts_numerics_elem_size(dt));
    g_autoptr(GRand) rng = g_rand_new_with_seed(7);
    ts_numerics_fill_random(dt, a, elems, rng, -1, 1);
    ts_numerics_fill_random(dt, b, elems, rng, -1, 1);
    for (guint ti = 0; tv[ti]; ti++) {
      int t = (int)g_ascii_strtoll(tv[ti], NULL, 10);
      g_autofree char *st = g_strdup_printf("%s.threads([%d])", space_text, t);
      g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", st, &error);
      if (space == NULL) {
        g_printerr("cpu_gemm: %s\n", error->message);
        return 2;
      }
      guint calls;
      g_autofree char *best_pt =
        bench_best_point(inst, backend, space, -1, 400, "cpu_gemm", &calls, NULL, &error);
      if (error) {
        g_printerr("cpu_gemm: %s\n", error->message);
        return 3;
      }
      if (best_pt == NULL) {
        g_print("%6" G_GINT64_FORMAT " %3d  (no point verified)\n", n, t);
        continue;
      }
      g_autoptr(TsSchedPoint) winner = ts_sched_point_parse(best_pt, &error);
      g_autoptr(GPtrArray) anchors = gemm_anchors_new(dtype, n, t, a, b);
      g_auto(BenchTorch) torch = {0};
      bench_torch_start(&torch, no_torch ? NULL : python, "gemm", dtype, shape, t);
      const guint n_anchors = anchors->len + (torch.proc ? 1 : 0);
      g_autofree double *ours = g_new(double, rounds);
      g_autofree double *theirs = g_new(double, (gsize)rounds * MAX(n_anchors, 1));
      if (winner == NULL || !interleave(inst, backend, winner, anchors, &torch, (guint)rounds,
                                        calls, ours, theirs, &error)) {
        g_printerr("cpu_gemm: %s\n", error->message);
        return 3;
      }
      double flops = 2.0 * n * n * n, mo = ts_stats_median(ours, rounds);
      if (n_anchors == 0)
        g_print("%6" G_GINT64_FORMAT " %3d %10.1f %10s %6s %13s  %-44s %s\n", n, t, flops / mo,
                "-", "-", "-", "(no anchor for this dtype)", best_pt);
      for (guint ai = 0; ai < n_anchors; ai++) {
        double *an = theirs + ai * rounds, median = NAN, lo = NAN, hi = NAN;
        if (bench_ratio(an, ours, (guint)rounds, &median, &lo, &hi) == 0)
          continue; /* the PyTorch helper gave no time: its header line says why it went */
        g_autofree char *range = g_strdup_printf("[%.2f, %.2f]", lo, hi);
        g_autofree char *name = ai < anchors->len
                                  ? g_strdup(gemm_anchor_name(g_ptr_array_index(anchors, ai)))
                                  : bench_torch_anchor_name(&torch);
        g_print("%6" G_GINT64_FORMAT " %3d %10.1f %10.1f %6.2f %13s  %-44s %s\n", n, t,
                flops / mo, flops / bench_median_finite(an, (guint)rounds), median, range, name, best_pt);
      }
    }
  }
  return 0;
}
