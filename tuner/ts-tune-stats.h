/* ts-tune-stats.h — the statistics that keep tuning decisions honest on noisy machines. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* One-sided Mann–Whitney U test: the p-value of "samples a are stochastically smaller than
 * samples b" (a faster). Normal approximation with tie and continuity corrections; returns 1.0
 * when either side has fewer than 3 samples (too few to call anything a difference). */
double ts_stats_mann_whitney_less(const double *a, guint na, const double *b, guint nb);

/* Median of n values (copied, not reordered). */
double ts_stats_median(const double *v, guint n);

/* Spread relative to the middle: (third quartile - first quartile) / median, linear
 * interpolation between order statistics; NAN for fewer than 2 values. */
double ts_stats_rel_iqr(const double *v, guint n);
/* Whether a candidate with samples `cand` should replace the incumbent `best`: its median is
 * lower and the difference is beyond the noise of both (p < alpha). */
gboolean ts_stats_faster(const double *cand, guint n_cand, const double *best, guint n_best,
                         double alpha);

G_END_DECLS
