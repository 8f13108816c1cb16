/* ts-tune-strategy-private.h — what the strategies share and the public header does not show:
 * points as per-knob value indices ("digits"), validity checks, the uniform sampler of unseen
 * valid points, and the built-in classes. Never installed. */
#pragma once

#include "ts-tune-strategy.h"

G_BEGIN_DECLS

typedef gboolean (*TsTuneSeenFunc)(gpointer data, const TsSchedPoint *point);

/* ---- points as digits (value index per knob, knobs in space order) ---- */

/* FALSE when the point lacks a knob of the space or has a value not in its list. */
gboolean ts__tune_point_digits(const TsSchedSpace *space, const TsSchedPoint *point, guint *digits);
TsSchedPoint *ts__tune_point_from_digits(const TsSchedSpace *space, const guint *digits);
/* 1 valid, 0 invalid, -1 error (set). */
int ts__tune_point_valid(TsSchedChecker **checker, const TsSchedSpace *space,
                         const TsSchedEnv *env, const TsSchedPoint *point, GError **error);
/* A uniform integer in [0, n), n >= 1. */
guint ts__tune_rand_below(GRand *rng, guint n);

/* ---- uniform sampling of valid points not yet seen ---- */

typedef struct _TsTuneSampler TsTuneSampler;
/* space, env and rng are borrowed and must outlive the sampler. */
TsTuneSampler *ts__tune_sampler_new(const TsSchedSpace *space, const TsSchedEnv *env, GRand *rng);
void ts__tune_sampler_free(TsTuneSampler *sampler);
/* A valid point for which seen() is FALSE, uniform among those; NULL with error unset when none
 * is left, NULL with error set on an evaluation error. */
TsSchedPoint *ts__tune_sampler_next(TsTuneSampler *sampler, TsTuneSeenFunc seen, gpointer seen_data,
                                    GError **error);

/* ---- built-in classes ---- */

extern const TsTuneStrategyClass ts__tune_exhaustive_class;
extern const TsTuneStrategyClass ts__tune_random_class;
extern const TsTuneStrategyClass ts__tune_annealing_class;
extern const TsTuneStrategyClass ts__tune_evolutionary_class;
extern const TsTuneStrategyClass ts__tune_model_class;

G_END_DECLS
