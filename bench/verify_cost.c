/* verify_cost — what checking one large gemm trial costs on this machine: drawing the inputs,
 * the sampled f64 reference, and the scan of every output element (NaN/Inf everywhere, the
 * error on the sampled ones), against the full f64 reference measured at a size it can finish
 * in the same run and scaled by the multiply-adds (M N K).
 *
 * Usage: verify_cost [N [FULL_N]]   gemm N^3 bf16 (default 8192), full reference at FULL_N^3
 *                                   (default 1024). OMP_NUM_THREADS as for the tuner. */
#include <glib.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "ts-numerics.h"
#include "ts-op.h"

static double
seconds_since(gint64 t0)
{
  return (double)(g_get_monotonic_time() - t0) / 1e6;
}

static TsOpInstance *
instance(gint64 n, GError **error)
{
  g_autofree char *shape = g_strdup_printf("M=%" G_GINT64_FORMAT ",N=%" G_GINT64_FORMAT
                                           ",K=%" G_GINT64_FORMAT, n, n, n);
  return ts_op_instance_new("gemm", shape, "bf16", error);
}

int
main(int argc, char **argv)
{
  const gint64 n = argc > 1 ? g_ascii_strtoll(argv[1], NULL, 10) : 8192;
  const gint64 full_n = argc > 2 ? g_ascii_strtoll(argv[2], NULL, 10) : 1024;
  if (n <= 0 || full_n <= 0) {
    fprintf(stderr, "usage: verify_cost [N [FULL_N]]\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) big = instance(n, &error);
  g_autoptr(TsOpInstance) small = big ? instance(full_n, &error) : NULL;
  if (small == NULL) {
    fprintf(stderr, "verify_cost: %s\n", error->message);
    return 2;
  }
  printf("verify_cost: gemm %" G_GINT64_FORMAT "^3 bf16, %d OpenMP threads\n", n,
         omp_get_max_threads());

  gint64 t0 = g_get_monotonic_time();
  gsize count = 0;
  const char *how = NULL;
  const double *ref = ts_op_instance_reference(big, 1, &count, &how);
  const double prepare_s = seconds_since(t0);

  /* An output as a correct kernel leaves it: the reference rounded to bf16 where it checks,
   * finite values elsewhere. */
  guint16 *out = g_new(guint16, count);
  for (gsize i = 0; i < count; i++)
    out[i] = ts_f32_to_bf16(isnan(ref[i]) ? 0.5f : (float)ref[i]);
  t0 = g_get_monotonic_time();
  gsize nonfinite = 0;
  const double err = ts_numerics_rel_error(TS_DTYPE_BF16, out, ref, count, &nonfinite);
  const double scan_s = seconds_since(t0);
  g_free(out);

  t0 = g_get_monotonic_time();
  const char *full_how = NULL;
  ts_op_instance_reference(small, 1, NULL, &full_how);
  const double full_s = seconds_since(t0);
  const double scale = pow((double)n / (double)full_n, 3.0);

  printf("  check:                        %s\n", how);
  printf("  inputs + reference:           %7.2f s\n", prepare_s);
  printf("  scan of %" G_GSIZE_FORMAT " elements:     %7.2f s   (rel error %.2g, %" G_GSIZE_FORMAT
         " non-finite)\n", count, scan_s, err, nonfinite);
  printf("  verification of one trial:    %7.2f s   (target <= 5 s)\n", prepare_s + scan_s);
  printf("  full reference at %" G_GINT64_FORMAT "^3:      %7.2f s   (%s)\n", full_n, full_s,
         full_how);
  printf("  full reference at %" G_GINT64_FORMAT "^3 (x%.0f): ~%.0f s   -> sampled costs 1/%.0f of it\n",
         n, scale, full_s * scale, full_s * scale / (prepare_s + scan_s));
  return prepare_s + scan_s <= 5.0 ? 0 : 1;
}
