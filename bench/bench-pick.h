/* bench-pick.h — how the CPU benchmarks choose "our best point" of a space, so that a ratio
 * against an anchor is ours at its best and not at a lucky or unlucky moment: a sweep times
 * every point once (ts_op_run), then the few fastest are timed again in interleaved rounds on
 * shared buffers and the best of those wins; and the median and range of the ratios to an anchor.
 * cpu_gemm, cpu_rows and cpu_attention share it. */
#pragma once

#include <glib.h>

#include "ts-op.h"

typedef struct {
  char *point;      /* the schedule, as ts_sched_point_to_string writes it */
  double median_ns; /* of its sweep run */
  guint samples;    /* how many samples that run took */
} BenchCandidate;

/* Every point of space that verifies, with threads(`threads`) unless threads < 0, timed once
 * with `options`: BenchCandidate, fastest first (freed with the array). A candidate that fails
 * is skipped with a line on stderr starting with `who`; NULL with error when the machinery
 * fails. */
GArray *bench_sweep(TsOpInstance *inst, TsBackend *backend, TsSchedSpace *space, gint64 threads,
                    const TsRunOptions *options, const char *who, GError **error);

/* Whether every knob `only` sets (NULL: none) has the same value in point. */
gboolean bench_point_matches(const TsSchedPoint *point, const TsSchedPoint *only);

/* A verified timer of the point's kernel (*module, which the caller frees after the timer,
 * keeps it loaded), or NULL with error set (the verification's message when the point fails).
 * With a peer it times on the peer's buffers: kernels compared side by side must share their
 * data's addresses (on separate buffers one binary timed twice ran 13% apart on the Zen 4). */
TsOpTimer *bench_point_timer(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
                             TsOpTimer *peer, TsModule **module, GError **error);

/* The finals: the BENCH_FINALISTS fastest candidates that match `only` (all: NULL) are timed
 * again, `calls` launches a round, in BENCH_FINAL_ROUNDS interleaved rounds on shared buffers;
 * the lowest median of their rounds' medians wins. A finalist that fails now is left out.
 * Returns the winner's schedule, or NULL (error unset) when no candidate matches. */
#define BENCH_FINALISTS 4
#define BENCH_FINAL_ROUNDS 3
char *bench_final_pick(TsOpInstance *inst, TsBackend *backend, GArray *candidates,
                       const TsSchedPoint *only, guint calls, GError **error);

/* Both in one: the sweep of space (bench_sweep, each point timed to about target_ms) and the
 * finals over all of it. *calls: the launches a round the finals took, about as many as the
 * fastest candidate's sweep run, 3 to 15; the benchmark's own rounds use it too. *candidates
 * (if not NULL): the sweep's, for more finals. NULL with error unset when no point verified. */
char *bench_best_point(TsOpInstance *inst, TsBackend *backend, TsSchedSpace *space,
                       gint64 threads, double target_ms, const char *who, guint *calls,
                       GArray **candidates, GError **error);

/* The ratios num[r] / den[r] of n rounds (an anchor's time over ours: our speed over the
 * anchor's), over the rounds where both are numbers (a PyTorch helper that went away leaves
 * NaN): their median and range. Returns how many rounds counted; 0 leaves the outputs alone. */
guint bench_ratio(const double *num, const double *den, guint n, double *median, double *lo,
                  double *hi);

/* The same as the benchmarks print it, "median [lowest, highest]", or NULL where no round
 * counted. */
char *bench_ratio_text(const double *num, const double *den, guint n);
/* The median of v's values that are not NaN (rounds a helper process gave no time for); NaN
 * when there is none. */
double bench_median_finite(const double *v, guint n);
