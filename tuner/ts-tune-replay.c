/* ts-tune-replay.c — the replay object: reading a recorded file (gzip or plain, JSON, format
 * detection), the lookup of a point, and the summary (counts, optimum). The two formats are read
 * in ts-tune-replay-formats.c; strategy comparison is in ts-tune-replay-compare.c. */
#include "ts-tune-replay-private.h"

#include "ts-db.h"

#include <math.h>
#include <string.h>

#include <gio/gio.h>

/* clang-format off */
G_DEFINE_QUARK(ts-tune-replay-error-quark, ts_tune_replay_error)
/* clang-format on */

const char *
ts_tune_replay_status_name(TsTuneReplayStatus status)
{
  static const char *const names[] = {
      [TS_TUNE_REPLAY_OK] = "ok",
      [TS_TUNE_REPLAY_INVALID] = "invalid",
      [TS_TUNE_REPLAY_COMPILE_ERROR] = "compile_error",
      [TS_TUNE_REPLAY_RUNTIME_ERROR] = "runtime_error",
      [TS_TUNE_REPLAY_WRONG_RESULT] = "wrong_result",
      [TS_TUNE_REPLAY_TIMEOUT] = "timeout",
      [TS_TUNE_REPLAY_NOT_RECORDED] = "not_recorded",
  };
  if ((guint)status >= G_N_ELEMENTS(names))
    return "unknown";
  return names[status];
}

void
ts__replay_entry_free(TsReplayEntry *entry)
{
  if (!entry)
    return;
  ts_sched_point_free(entry->point);
  g_free(entry->label);
  g_free(entry->samples_s);
  g_free(entry);
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double
ts__replay_median(const double *v, guint n)
{
  g_assert(n > 0);
  g_autofree double *s = g_memdup2(v, n * sizeof(double));
  qsort(s, n, sizeof(double), cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

gboolean
ts__replay_add_entry(TsTuneReplay *replay, TsReplayEntry *entry, GError **error)
{
  const TsReplayEntry *old = g_hash_table_lookup(replay->by_index, &entry->index);
  if (old) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s records the same configuration as %s", replay->name, entry->label,
                old->label);
    ts__replay_entry_free(entry);
    return FALSE;
  }
  g_ptr_array_add(replay->entries, entry);
  g_hash_table_insert(replay->by_index, &entry->index, entry);
  return TRUE;
}

void
ts_tune_replay_free(TsTuneReplay *replay)
{
  if (!replay)
    return;
  g_free(replay->name);
  g_free(replay->device);
  g_free(replay->kernel);
  g_free(replay->objective);
  ts_sched_space_free(replay->space);
  if (replay->by_index)
    g_hash_table_unref(replay->by_index);
  if (replay->entries)
    g_ptr_array_unref(replay->entries);
  g_free(replay);
}

/* Whole-buffer gunzip. A stream that ends early is an error, not a short file: the point of
 * reading a recorded space is that what we replay is what was recorded. */
static GBytes *
gunzip(const void *data, gsize len, const char *name, GError **error)
{
  g_autoptr(GInputStream) raw = g_memory_input_stream_new_from_data(data, len, NULL);
  g_autoptr(GZlibDecompressor) z = g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
  g_autoptr(GInputStream) in = g_converter_input_stream_new(raw, G_CONVERTER(z));
  g_autoptr(GByteArray) out = g_byte_array_new();
  guint8 chunk[65536];
  for (;;) {
    g_autoptr(GError) local = NULL;
    gssize n = g_input_stream_read(in, chunk, sizeof chunk, NULL, &local);
    if (n < 0) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_IO,
                  "%s: truncated or corrupt gzip data: %s", name, local->message);
      return NULL;
    }
    if (n == 0)
      break;
    /* Stop a gzip bomb while it inflates, not after: a 2 MB file can unpack to gigabytes. */
    if (out->len + (gsize)n > TS_TUNE_REPLAY_MAX_INFLATED) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_IO,
                  "%s: unpacks to more than %u MiB: not a recorded tuning file (the largest "
                  "real ones are a few MiB)", name, TS_TUNE_REPLAY_MAX_INFLATED >> 20);
      return NULL;
    }
    g_byte_array_append(out, chunk, (guint)n);
  }
  return g_byte_array_free_to_bytes(g_steal_pointer(&out));
}

/* Kernel Tuner appends each cache entry as it is measured and writes the closing "}}" only when
 * tuning ends, so an interrupted run leaves '..."cache": {"a": {...},\n'. Close it the way
 * Kernel Tuner's own reader does. Returns NULL when the text does not look like that. */
static char *
close_interrupted_cache(const char *text, gsize len)
{
  if (!g_strstr_len(text, (gssize)len, "\"cache\""))
    return NULL;
  gsize n = len;
  while (n > 0 && g_ascii_isspace(text[n - 1]))
    n--;
  if (n > 0 && text[n - 1] == ',')
    n--;
  else if (n < 2 || text[n - 1] != '}')
    return NULL;
  GString *s = g_string_new_len(text, (gssize)n);
  g_string_append(s, "}}");
  return g_string_free(s, FALSE);
}

static void
summarize(TsTuneReplay *replay)
{
  for (guint i = 0; i < replay->entries->len; i++) {
    const TsReplayEntry *e = g_ptr_array_index(replay->entries, i);
    if (e->status == TS_TUNE_REPLAY_OK) {
      replay->n_valid++;
      /* strict <: ties go to the first in file order, so the optimum does not depend on hashing */
      if (!replay->best || e->time_s < replay->best->time_s)
        replay->best = e;
    } else {
      replay->n_failed++;
    }
  }
}

TsTuneReplay *
ts_tune_replay_load_data(const void *data, gsize len, const char *name, GError **error)
{
  g_return_val_if_fail(data != NULL || len == 0, NULL);
  if (!name)
    name = "(data)";
  g_autoptr(GBytes) plain = NULL;
  const guint8 *bytes = data;
  if (len >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) {
    plain = gunzip(data, len, name, error);
    if (!plain)
      return NULL;
    data = g_bytes_get_data(plain, &len);
  }

  gsize deep_at = 0;
  if (data && !ts_db_json_depth_ok(data, (gssize)len, &deep_at)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_PARSE,
                "%s: JSON nested more than %d deep (at byte %" G_GSIZE_FORMAT "): not a "
                "recorded tuning file", name, TS_DB_JSON_MAX_DEPTH, deep_at);
    return NULL;
  }
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) local = NULL;
  if (!json_parser_load_from_data(parser, data ? data : "", (gssize)len, &local)) {
    g_autofree char *closed = close_interrupted_cache(data, len);
    if (!closed || !json_parser_load_from_data(parser, closed, -1, NULL)) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_PARSE, "%s: not JSON: %s", name,
                  local->message);
      return NULL;
    }
  }
  JsonNode *root = json_parser_get_root(parser);
  if (!root) { /* json-glib accepts an empty or all-blank document */
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_PARSE,
                "%s: not JSON: the file is empty", name);
    return NULL;
  }
  if (!JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: the top level is not a JSON object", name);
    return NULL;
  }
  JsonObject *obj = json_node_get_object(root);

  g_autoptr(TsTuneReplay) replay = g_new0(TsTuneReplay, 1);
  replay->name = g_strdup(name);
  replay->entries = g_ptr_array_new_with_free_func((GDestroyNotify)ts__replay_entry_free);
  replay->by_index = g_hash_table_new(g_int64_hash, g_int64_equal);
  gboolean ok;
  if (json_object_has_member(obj, "cache") || json_object_has_member(obj, "tune_params")) {
    replay->format = TS_TUNE_REPLAY_FORMAT_KERNEL_TUNER;
    ok = ts__replay_read_kernel_tuner(replay, obj, error);
  } else if (json_object_has_member(obj, "results")) {
    replay->format = TS_TUNE_REPLAY_FORMAT_T4;
    ok = ts__replay_read_t4(replay, obj, error);
  } else {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: neither a Kernel Tuner cache file (no \"tune_params\" or \"cache\") nor a "
                "T4 results file (no \"results\")",
                name);
    ok = FALSE;
  }
  if (!ok)
    return NULL;
  if (!replay->objective)
    replay->objective = g_strdup("time");
  summarize(replay);
  return g_steal_pointer(&replay);
}

TsTuneReplay *
ts_tune_replay_new(const TsSchedSpace *space, const char *name, const char *device,
                   const char *kernel)
{
  g_return_val_if_fail(space != NULL, NULL);
  TsTuneReplay *replay = g_new0(TsTuneReplay, 1);
  replay->format = TS_TUNE_REPLAY_FORMAT_RECORDS;
  replay->name = g_strdup(name ? name : "(records)");
  replay->device = g_strdup(device);
  replay->kernel = g_strdup(kernel);
  replay->objective = g_strdup("time");
  replay->space = ts_sched_space_copy(space);
  replay->entries = g_ptr_array_new_with_free_func((GDestroyNotify)ts__replay_entry_free);
  replay->by_index = g_hash_table_new(g_int64_hash, g_int64_equal);
  return replay;
}

gboolean
ts_tune_replay_add(TsTuneReplay *replay, const TsSchedPoint *point, TsTuneReplayStatus status,
                   double time_s, double cost_ms, GError **error)
{
  g_return_val_if_fail(replay != NULL && point != NULL, FALSE);
  TsReplayEntry *e = g_new0(TsReplayEntry, 1);
  e->point = ts_sched_point_copy(point);
  e->label = ts_sched_point_to_string(point);
  if (!ts_sched_space_index_of(replay->space, point, &e->index)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s is not a point of the space", replay->name, e->label);
    ts__replay_entry_free(e);
    return FALSE;
  }
  e->status = status;
  e->time_s = status == TS_TUNE_REPLAY_OK ? time_s : NAN;
  e->cost_ms = isfinite(cost_ms) ? cost_ms : 0;
  if (!ts__replay_add_entry(replay, e, error))
    return FALSE;
  if (status == TS_TUNE_REPLAY_OK) {
    replay->n_valid++;
    if (!replay->best || e->time_s < replay->best->time_s)
      replay->best = e;
  } else {
    replay->n_failed++;
  }
  return TRUE;
}

void
ts_tune_replay_set_context(TsTuneReplay *replay, const TsSchedEnv *env,
                           const TsCostTarget *target, const TsCostModel *prior)
{
  g_return_if_fail(replay != NULL);
  replay->env = env;
  replay->target = target;
  replay->prior = prior;
}

void
ts_tune_replay_set_seeds(TsTuneReplay *replay, GPtrArray *seeds)
{
  g_return_if_fail(replay != NULL);
  replay->seeds = seeds;
}

TsTuneReplay *
ts_tune_replay_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &data, &len, &local)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_IO, "%s", local->message);
    return NULL;
  }
  return ts_tune_replay_load_data(data, len, path, error);
}

TsTuneReplayFormat
ts_tune_replay_format(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, TS_TUNE_REPLAY_FORMAT_KERNEL_TUNER);
  return replay->format;
}

const TsSchedSpace *
ts_tune_replay_space(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, NULL);
  return replay->space;
}

const char *
ts_tune_replay_device(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, NULL);
  return replay->device;
}

const char *
ts_tune_replay_kernel(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, NULL);
  return replay->kernel;
}

const char *
ts_tune_replay_objective(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, NULL);
  return replay->objective;
}

guint
ts_tune_replay_n_recorded(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, 0);
  return replay->entries->len;
}

guint
ts_tune_replay_n_valid(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, 0);
  return replay->n_valid;
}

guint
ts_tune_replay_n_failed(const TsTuneReplay *replay)
{
  g_return_val_if_fail(replay != NULL, 0);
  return replay->n_failed;
}

double
ts_tune_replay_optimum(const TsTuneReplay *replay, const TsSchedPoint **point)
{
  if (point)
    *point = NULL;
  g_return_val_if_fail(replay != NULL, NAN);
  if (!replay->best)
    return NAN;
  if (point)
    *point = replay->best->point;
  return replay->best->time_s;
}

const TsSchedPoint *
ts_tune_replay_recorded_point(const TsTuneReplay *replay, guint i)
{
  g_return_val_if_fail(replay != NULL && i < replay->entries->len, NULL);
  const TsReplayEntry *e = g_ptr_array_index(replay->entries, i);
  return e->point;
}

gboolean
ts_tune_replay_lookup(const TsTuneReplay *replay, const TsSchedPoint *point,
                      TsTuneReplayResult *result)
{
  TsTuneReplayResult r = {TS_TUNE_REPLAY_NOT_RECORDED, NAN, NULL, 0, 0.0};
  if (result)
    *result = r;
  g_return_val_if_fail(replay != NULL && point != NULL, FALSE);
  guint64 index;
  const TsReplayEntry *e = NULL;
  if (ts_sched_space_index_of(replay->space, point, &index))
    e = g_hash_table_lookup(replay->by_index, &index);
  if (e)
    r = (TsTuneReplayResult){e->status, e->time_s, e->samples_s, e->n_samples, e->cost_ms};
  if (result)
    *result = r;
  return r.status == TS_TUNE_REPLAY_OK;
}
