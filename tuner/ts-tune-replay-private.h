/* ts-tune-replay-private.h — the replay's internals, shared by its loader (ts-tune-replay.c), the
 * two format readers (ts-tune-replay-formats.c) and the comparison (ts-tune-replay-compare.c).
 * Never installed. */
#pragma once

#include <json-glib/json-glib.h>

#include "ts-tune-replay.h"

/* One recorded configuration. */
typedef struct {
  guint64 index; /* mixed-radix index in the space: the lookup key */
  TsSchedPoint *point;
  char *label; /* how the file names it: the cache key, or "result N" for T4 */
  TsTuneReplayStatus status;
  double time_s;     /* NAN unless OK */
  double *samples_s; /* NULL when the file has no samples */
  guint n_samples;
  double cost_ms;
} TsReplayEntry;

struct _TsTuneReplay {
  TsTuneReplayFormat format;
  char *name; /* the path or the name given to load_data: prefixes errors */
  char *device, *kernel, *objective;
  TsSchedSpace *space;
  GPtrArray *entries;   /* TsReplayEntry*, file order */
  GHashTable *by_index; /* &entry->index -> entry */
  guint n_valid, n_failed;
  const TsReplayEntry *best;
  /* ts_tune_replay_set_context, borrowed */
  const TsSchedEnv *env;
  const TsCostTarget *target;
  const TsCostModel *prior;
  GPtrArray *seeds; /* ts_tune_replay_set_seeds, borrowed */
};

/* Fill replay (space, entries, metadata) from a parsed root object. */
gboolean ts__replay_read_kernel_tuner(TsTuneReplay *replay, JsonObject *root, GError **error);
gboolean ts__replay_read_t4(TsTuneReplay *replay, JsonObject *root, GError **error);

/* Adds an entry whose point and index are set; fails on a second entry for the same point. */
gboolean ts__replay_add_entry(TsTuneReplay *replay, TsReplayEntry *entry, GError **error);
void ts__replay_entry_free(TsReplayEntry *entry);
/* Median of n values (n > 0); the array is left unchanged. */
double ts__replay_median(const double *v, guint n);
