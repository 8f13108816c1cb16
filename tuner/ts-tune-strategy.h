/* ts-tune-strategy.h — search strategies behind one propose/observe interface.
 *
 * A strategy explores the valid points of a Schedule IR space. The driver asks for a batch of
 * proposals, measures them (or replays recorded measurements), and reports each outcome back.
 * Costs are "lower is better" (the median time in seconds); a failed candidate (compile error,
 * crash, timeout, wrong result) is observed with ok = FALSE and is never proposed again.
 *
 * Determinism: for a given space, env, seed and sequence of observations, a strategy proposes
 * the same points. Resume: the driver first observes every trial already stored for the
 * workload; a strategy never proposes a point it has observed.
 */
#pragma once

#include <glib.h>

#include "ts-sched.h"

G_BEGIN_DECLS

#define TS_TUNE_ERROR (ts_tune_error_quark())
GQuark ts_tune_error_quark(void);

typedef enum {
  TS_TUNE_ERROR_UNKNOWN_STRATEGY,
  TS_TUNE_ERROR_EMPTY_SPACE, /* no valid point */
  TS_TUNE_ERROR_FAILED,      /* anything else, with a message */
} TsTuneError;

typedef struct _TsTuneStrategy TsTuneStrategy;

/* Names: "exhaustive", "random", "annealing", "evolutionary"; later "model" (cost-model issue),
 * registered through ts_tune_strategy_register(). Unknown names list the known ones. */
TsTuneStrategy *ts_tune_strategy_new(const char *name, const TsSchedSpace *space,
                                     const TsSchedEnv *env, guint64 seed, GError **error);
void ts_tune_strategy_free(TsTuneStrategy *strategy);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTuneStrategy, ts_tune_strategy_free)
const char *ts_tune_strategy_name(const TsTuneStrategy *strategy);
const char *const *ts_tune_strategy_names(void); /* NULL-terminated */

/* Up to n new valid points (owned by the returned array), never one already proposed or
 * observed. An empty array means the strategy has nothing left to try (exhaustive done, or
 * the whole valid space observed). */
GPtrArray *ts_tune_strategy_propose(TsTuneStrategy *strategy, guint n, GError **error);
/* Reports the outcome of a point (proposed by this strategy or loaded from storage). */
void ts_tune_strategy_observe(TsTuneStrategy *strategy, const TsSchedPoint *point, gboolean ok,
                              double cost);
guint ts_tune_strategy_n_observed(const TsTuneStrategy *strategy);

/* Extension point for strategies defined elsewhere (the model-guided one). */
typedef struct {
  const char *name;
  gpointer (*create)(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng,
                     GError **error);
  void (*destroy)(gpointer state);
  /* Propose up to n points; `seen(point)` tells whether a point was already proposed or
   * observed. Append new points to out. */
  gboolean (*propose)(gpointer state, guint n, gboolean (*seen)(gpointer, const TsSchedPoint *),
                      gpointer seen_data, GPtrArray *out, GError **error);
  void (*observe)(gpointer state, const TsSchedPoint *point, gboolean ok, double cost);
} TsTuneStrategyClass;

void ts_tune_strategy_register(const TsTuneStrategyClass *klass);

G_END_DECLS
