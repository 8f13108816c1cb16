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

/* Names: "exhaustive", "random", "annealing", "evolutionary", "model" (cost-model guided; see
 * ts-tune-model.c), and any registered through ts_tune_strategy_register(). Unknown names list the known ones
 * (TS_TUNE_ERROR_UNKNOWN_STRATEGY); a space with no valid point under env fails with
 * TS_TUNE_ERROR_EMPTY_SPACE. The space is copied; env (may be NULL) is borrowed and must outlive
 * the strategy (TsSchedEnv has no copy). */
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
/* Points outside the space (a knob missing or a value not in its list) and second observations
 * of a point are ignored; an ok cost that is NaN counts as a failure. */
void ts_tune_strategy_observe(TsTuneStrategy *strategy, const TsSchedPoint *point, gboolean ok,
                              double cost);
/* Distinct points of the space observed so far. */
guint ts_tune_strategy_n_observed(const TsTuneStrategy *strategy);
/* The number of evaluations the driver expects to spend (annealing cools over it). Default:
 * the number of valid points, at most 1000. */
void ts_tune_strategy_set_budget(TsTuneStrategy *strategy, guint64 budget);

/* What a cost model knows about the workload (costmodel/ts-cost.h): for the strategies that rank
 * candidates before measuring them ("model"); the others ignore it. target describes the
 * workload on its device (NULL: the model strategy makes a generic one from the space, with the
 * raw knob values as its only features); prior is a learned model trained on other workloads
 * (NULL: none; the analytic estimate ranks the first batch). Both borrowed: they must outlive
 * the strategy. Call before the first propose. */
typedef struct _TsCostTarget TsCostTarget;
typedef struct _TsCostModel TsCostModel;
void ts_tune_strategy_set_cost(TsTuneStrategy *strategy, const TsCostTarget *target,
                               const TsCostModel *prior);
/* Configurations that were fast elsewhere, best first: other devices' recordings of the same
 * kernel, or the cache's best for the op on other devices (TsSchedPoint*; copied, so the array
 * may go once this returns). The strategies that warm-start (model, evolutionary) measure them
 * early; the others ignore them. Points outside the space are dropped, invalid ones skipped
 * when their turn comes. Returns how many the strategy kept (0: it takes no seeds). Call
 * before the first propose. */
guint ts_tune_strategy_set_seeds(TsTuneStrategy *strategy, GPtrArray *points);
/* Seeds from several rankings (GPtrArray of GPtrArray of TsSchedPoint*, each best first): each
 * ranking's best, then each one's second, ..., each point once, at most n. So one ranking that
 * puts the target's optimum high is enough, whatever the others say. Returns an array owning
 * copies of the points. */
GPtrArray *ts_tune_seeds_interleave(GPtrArray *rankings, guint n);

/* Extension point for strategies defined elsewhere (the model-guided one). The built-ins register
 * through it too. create() may keep space, env and rng for the life of its state (the strategy
 * owns them and frees them after destroy()). The strategy checks what propose() returns: points
 * outside the space, invalid, seen or repeated are dropped, and if nothing is left while valid
 * points remain unseen it proposes uniformly random ones itself, so a class cannot stall the
 * search. observe() sees only valid points of the space, each once. */
typedef struct {
  const char *name;
  gpointer (*create)(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng,
                     GError **error);
  void (*destroy)(gpointer state);
  /* Propose up to n points; `seen(point)` tells whether a point was already proposed or
   * observed, or already appended to out in this call. Append new points to out. */
  gboolean (*propose)(gpointer state, guint n, gboolean (*seen)(gpointer, const TsSchedPoint *),
                      gpointer seen_data, GPtrArray *out, GError **error);
  void (*observe)(gpointer state, const TsSchedPoint *point, gboolean ok, double cost);
  /* Optional (may be NULL): the expected number of evaluations; called once after create()
   * with the default and again on ts_tune_strategy_set_budget(). */
  void (*set_budget)(gpointer state, guint64 budget);
  /* Optional: the cost context of ts_tune_strategy_set_cost(). */
  void (*set_cost)(gpointer state, const TsCostTarget *target, const TsCostModel *prior);
  /* Optional: the points of ts_tune_strategy_set_seeds() that are in the space, as the space's
   * own (canonical) points, borrowed for the call only; returns how many it kept. */
  guint (*set_seeds)(gpointer state, GPtrArray *points);
} TsTuneStrategyClass;

/* Copies the class; a class with the name of one already registered replaces it. At most 32. */
void ts_tune_strategy_register(const TsTuneStrategyClass *klass);

G_END_DECLS
