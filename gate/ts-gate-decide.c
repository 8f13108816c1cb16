/* ts-gate-decide.c — the verdict of one workload: an effect size and a rank test must agree.
 *
 * Either alone cries wolf: a fixed ratio on two medians flags every noisy minute, and a
 * significance test on hundreds of samples flags a 0.3% difference nobody cares about (or one
 * that a different memory placement produces). A regression is a slowdown that is both larger
 * than the threshold and beyond what the two sample sets' noise explains.
 */
#include <math.h>

#include "ts-gate.h"
#include "ts-tune-stats.h"

static double
median_of(const GArray *a)
{
  return ts_stats_median((const double *)a->data, a->len);
}

void
ts_gate_decide(TsGateResult *r, double threshold, double alpha)
{
  if (r->verdict == TS_GATE_FAILED || r->verdict == TS_GATE_NEW)
    return;
  g_return_if_fail(r->base_ns && r->base_ns->len > 0 && r->cur_ns && r->cur_ns->len > 0);

  r->threshold = threshold;
  r->base_median_ns = median_of(r->base_ns);
  r->cur_median_ns = median_of(r->cur_ns);
  /* Paired rounds measure both kernels under the same machine state, so their ratios carry
   * far less drift than the ratio of two pooled medians. */
  if (r->round_ratios && r->round_ratios->len > 0)
    r->change = median_of(r->round_ratios) - 1.0;
  else
    r->change = r->cur_median_ns / r->base_median_ns - 1.0;

  const double *b = (const double *)r->base_ns->data, *c = (const double *)r->cur_ns->data;
  double p_slower = ts_stats_mann_whitney_less(b, r->base_ns->len, c, r->cur_ns->len);
  double p_faster = ts_stats_mann_whitney_less(c, r->cur_ns->len, b, r->base_ns->len);

  if (r->change >= threshold && p_slower < alpha) {
    r->verdict = TS_GATE_REGRESSION;
    r->p_value = p_slower;
  } else if (r->change <= -threshold && p_faster < alpha) {
    r->verdict = TS_GATE_IMPROVED;
    r->p_value = p_faster;
  } else {
    r->verdict = TS_GATE_PASS;
    r->p_value = p_slower;
  }
}

gboolean
ts_gate_borderline(const TsGateResult *r, double alpha)
{
  if (r->verdict != TS_GATE_REGRESSION)
    return FALSE;
  return r->change < 2.0 * r->threshold || r->p_value > alpha / 100.0;
}
