/* ts-tune-replay-formats.c — the two recorded-file readers: Kernel Tuner's cache file and the T4
 * results file (layouts at the top of ts-tune-replay.h). Both build the space, then one
 * TsReplayEntry per recorded configuration; everything they reject names the file, the entry and
 * the field. */
#include "ts-tune-replay-private.h"

#include <math.h>
#include <string.h>

/* ---- values ---- */

static gboolean
node_is_int(JsonNode *n)
{
  return JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_INT64;
}

static gboolean
node_number(JsonNode *n, double *out)
{
  if (!n || !JSON_NODE_HOLDS_VALUE(n))
    return FALSE;
  GType t = json_node_get_value_type(n);
  if (t == G_TYPE_INT64)
    *out = (double)json_node_get_int(n);
  else if (t == G_TYPE_DOUBLE)
    *out = json_node_get_double(n);
  else
    return FALSE;
  return TRUE;
}

/* Python's repr of a float: the shortest digits that read back to the same double, with ".0" on
 * integral values and positional notation for exponents in [-4, 16) — the text Kernel Tuner's
 * cache keys use, so string knobs and keys agree. */
static char *
py_float(double d)
{
  if (isnan(d))
    return g_strdup("nan");
  if (isinf(d))
    return g_strdup(d > 0 ? "inf" : "-inf");
  char buf[G_ASCII_DTOSTR_BUF_SIZE], fmt[16];
  int p;
  for (p = 1; p <= 17; p++) {
    g_snprintf(fmt, sizeof fmt, "%%.%dg", p);
    g_ascii_formatd(buf, sizeof buf, fmt, d);
    if (g_ascii_strtod(buf, NULL) == d)
      break;
  }
  const char *e = strchr(buf, 'e');
  if (e) {
    int exp = atoi(e + 1);
    if (exp >= -4 && exp < 16) {
      g_snprintf(fmt, sizeof fmt, "%%.%df", MAX(0, p - 1 - exp));
      g_ascii_formatd(buf, sizeof buf, fmt, d);
    }
  }
  if (!strpbrk(buf, ".e"))
    return g_strconcat(buf, ".0", NULL);
  return g_strdup(buf);
}

/* Python's str() of a scalar JSON value; NULL for arrays and objects. */
static char *
py_str(JsonNode *n)
{
  if (JSON_NODE_HOLDS_NULL(n))
    return g_strdup("None");
  if (!JSON_NODE_HOLDS_VALUE(n))
    return NULL;
  GType t = json_node_get_value_type(n);
  if (t == G_TYPE_INT64)
    return g_strdup_printf("%" G_GINT64_FORMAT, json_node_get_int(n));
  if (t == G_TYPE_BOOLEAN)
    return g_strdup(json_node_get_boolean(n) ? "True" : "False");
  if (t == G_TYPE_DOUBLE)
    return py_float(json_node_get_double(n));
  if (t == G_TYPE_STRING)
    return g_strdup(json_node_get_string(n));
  return NULL;
}

static char *
value_text(TsSchedValue v)
{
  return v.kind == TS_SCHED_INT ? g_strdup_printf("%" G_GINT64_FORMAT, v.i) : g_strdup(v.s);
}

/* "(128, 192, 256, ...)" — enough of a knob's values to see the mismatch. */
static char *
values_text(const TsSchedSpace *space, guint k)
{
  GString *s = g_string_new("(");
  guint n = ts_sched_space_n_values(space, k);
  for (guint j = 0; j < n && j < 8; j++) {
    g_autofree char *t = value_text(ts_sched_space_value(space, k, j));
    g_string_append_printf(s, "%s%s", j ? ", " : "", t);
  }
  g_string_append(s, n > 8 ? ", ...)" : ")");
  return g_string_free(s, FALSE);
}

/* Builds a knob from the distinct values in nodes: an integer knob when all are JSON integers,
 * else a string knob of their Python str(). */
static gboolean
add_knob(TsTuneReplay *replay, const char *name, JsonNode *const *nodes, guint n, GError **error)
{
  if (n == 0) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: tune_params: '%s' has no values", replay->name, name);
    return FALSE;
  }
  gboolean all_int = TRUE;
  for (guint j = 0; j < n; j++)
    all_int = all_int && node_is_int(nodes[j]);
  g_autofree TsSchedValue *v = g_new0(TsSchedValue, n);
  g_autoptr(GStringChunk) texts = g_string_chunk_new(64);
  for (guint j = 0; j < n; j++) {
    if (all_int) {
      v[j] = (TsSchedValue){.kind = TS_SCHED_INT, .i = json_node_get_int(nodes[j])};
    } else {
      g_autofree char *s = py_str(nodes[j]);
      if (!s) {
        g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                    "%s: tune_params: '%s' has a value that is not a number, string or boolean",
                    replay->name, name);
        return FALSE;
      }
      /* The space keeps copies of its own (ts_sched_space_set_knob). */
      v[j] = (TsSchedValue){.kind = TS_SCHED_STR, .s = g_string_chunk_insert(texts, s)};
    }
    for (guint i = 0; i < j; i++) {
      if (v[i].kind == v[j].kind &&
          (v[j].kind == TS_SCHED_INT ? v[i].i == v[j].i : strcmp(v[i].s, v[j].s) == 0)) {
        g_autofree char *t = value_text(v[j]);
        g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                    "%s: tune_params: '%s' lists %s twice", replay->name, name, t);
        return FALSE;
      }
    }
  }
  ts_sched_space_set_knob(replay->space, name, v, n);
  return TRUE;
}

/* Index of the value of knob k that node (or, when node is NULL, the key field text) names;
 * -1 when it is not among the knob's values. */
static int
match_value(const TsSchedSpace *space, guint k, JsonNode *node, const char *text)
{
  guint n = ts_sched_space_n_values(space, k);
  TsSchedKind kind = ts_sched_space_value(space, k, 0).kind;
  TsSchedValue want = {.kind = kind};
  g_autofree char *s = NULL;
  if (kind == TS_SCHED_INT) {
    if (node) {
      if (!node_is_int(node))
        return -1;
      want.i = json_node_get_int(node);
    } else if (!g_ascii_string_to_signed(text, 10, G_MININT64, G_MAXINT64, &want.i, NULL)) {
      return -1;
    }
  } else {
    s = node ? py_str(node) : g_strdup(text);
    if (!s)
      return -1;
    want.s = s;
  }
  for (guint j = 0; j < n; j++) {
    TsSchedValue v = ts_sched_space_value(space, k, j);
    if (kind == TS_SCHED_INT ? v.i == want.i : strcmp(v.s, want.s) == 0)
      return (int)j;
  }
  return -1;
}

/* Sets entry->point and entry->index from a configuration object (Kernel Tuner entries carry
 * their parameters; when one lacks a parameter, the key's comma-separated fields stand in). */
static gboolean
entry_point(TsTuneReplay *replay, TsReplayEntry *entry, JsonObject *config, const char *key,
            GError **error)
{
  const TsSchedSpace *space = replay->space;
  guint nk = ts_sched_space_n_knobs(space);
  g_auto(GStrv) fields = key ? g_strsplit(key, ",", -1) : NULL;
  entry->point = ts_sched_point_new();
  entry->index = 0;
  for (guint k = 0; k < nk; k++) {
    const char *name = ts_sched_space_knob_name(space, k);
    JsonNode *node = json_object_get_member(config, name);
    const char *text = NULL;
    if (!node) {
      if (!fields || g_strv_length(fields) != nk) {
        g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                    "%s: %s has no value for '%s'", replay->name, entry->label, name);
        return FALSE;
      }
      text = fields[k];
    }
    int j = match_value(space, k, node, text);
    if (j < 0) {
      g_autofree char *got = node ? (py_str(node) ?: g_strdup("(not a scalar)")) : g_strdup(text);
      g_autofree char *vals = values_text(space, k);
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                  "%s: %s: %s = %s is not in tune_params %s", replay->name, entry->label, name, got,
                  vals);
      return FALSE;
    }
    TsSchedValue v = ts_sched_space_value(space, k, (guint)j);
    if (v.kind == TS_SCHED_INT)
      ts_sched_point_set_int(entry->point, name, v.i);
    else
      ts_sched_point_set_str(entry->point, name, v.s);
    entry->index = entry->index * ts_sched_space_n_values(space, k) + (guint64)j;
  }
  return TRUE;
}

/* Samples (ms in the file) into entry->samples_s. */
static gboolean
read_samples(TsTuneReplay *replay, TsReplayEntry *entry, JsonNode *node, const char *field,
             GError **error)
{
  if (!node || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (!JSON_NODE_HOLDS_ARRAY(node)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s: \"%s\" is not a list of numbers", replay->name, entry->label, field);
    return FALSE;
  }
  JsonArray *a = json_node_get_array(node);
  guint n = json_array_get_length(a);
  if (n == 0)
    return TRUE;
  entry->samples_s = g_new(double, n);
  entry->n_samples = n;
  for (guint i = 0; i < n; i++) {
    double ms;
    if (!node_number(json_array_get_element(a, i), &ms) || !isfinite(ms) || ms < 0) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                  "%s: %s: \"%s\"[%u] is not a non-negative number", replay->name, entry->label,
                  field, i);
      return FALSE;
    }
    entry->samples_s[i] = ms * 1e-3;
  }
  return TRUE;
}

/* The replayed time: the median of the samples, else the single recorded time. */
static gboolean
set_time(TsTuneReplay *replay, TsReplayEntry *entry, gboolean have_ms, double ms, GError **error)
{
  if (entry->n_samples)
    entry->time_s = ts__replay_median(entry->samples_s, entry->n_samples);
  else if (have_ms && isfinite(ms) && ms >= 0)
    entry->time_s = ms * 1e-3;
  else {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s is recorded as valid but has no usable time", replay->name, entry->label);
    return FALSE;
  }
  return TRUE;
}

static double
sum_fields(JsonObject *o, const char *const *names)
{
  double sum = 0, v;
  for (guint i = 0; o && names[i]; i++)
    if (node_number(json_object_get_member(o, names[i]), &v) && isfinite(v) && v > 0)
      sum += v;
  return sum;
}

static char *
string_member(JsonObject *o, const char *name)
{
  JsonNode *n = json_object_get_member(o, name);
  if (n && JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING)
    return g_strdup(json_node_get_string(n));
  return NULL;
}

/* ---- Kernel Tuner cache file ---- */

static const struct {
  const char *marker;
  TsTuneReplayStatus status;
} kt_markers[] = {
    {"InvalidConfig", TS_TUNE_REPLAY_INVALID},
    {"CompilationFailedConfig", TS_TUNE_REPLAY_COMPILE_ERROR},
    {"RuntimeFailedConfig", TS_TUNE_REPLAY_RUNTIME_ERROR},
};

/* Older Kernel Tuner versions recorded an invalid configuration as this time (ms). */
#define KT_LEGACY_INVALID_MS 1e20

static gboolean
kt_space(TsTuneReplay *replay, JsonObject *root, GError **error)
{
  JsonNode *tp = json_object_get_member(root, "tune_params");
  if (!tp || !JSON_NODE_HOLDS_OBJECT(tp)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: missing \"tune_params\" (an object of parameter -> list of values)",
                replay->name);
    return FALSE;
  }
  JsonObject *params = json_node_get_object(tp);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  JsonNode *keys = json_object_get_member(root, "tune_params_keys");
  if (keys && JSON_NODE_HOLDS_ARRAY(keys)) {
    JsonArray *a = json_node_get_array(keys);
    for (guint i = 0; i < json_array_get_length(a); i++) {
      JsonNode *k = json_array_get_element(a, i);
      if (!JSON_NODE_HOLDS_VALUE(k) || json_node_get_value_type(k) != G_TYPE_STRING) {
        g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                    "%s: tune_params_keys[%u] is not a string", replay->name, i);
        return FALSE;
      }
      g_ptr_array_add(names, g_strdup(json_node_get_string(k)));
    }
  } else {
    g_autoptr(GList) members = json_object_get_members(params);
    for (GList *l = members; l; l = l->next)
      g_ptr_array_add(names, g_strdup(l->data));
  }
  replay->space = ts_sched_space_parse("dict()", error);
  g_assert(replay->space);
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    JsonNode *vals = json_object_get_member(params, name);
    if (!vals || !JSON_NODE_HOLDS_ARRAY(vals)) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                  "%s: tune_params has no list of values for '%s'", replay->name, name);
      return FALSE;
    }
    if (ts_sched_space_knob_index(replay->space, name) >= 0) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                  "%s: tune_params_keys names '%s' twice", replay->name, name);
      return FALSE;
    }
    JsonArray *a = json_node_get_array(vals);
    g_autoptr(GList) elems = json_array_get_elements(a);
    g_autoptr(GPtrArray) nodes = g_ptr_array_new();
    for (GList *l = elems; l; l = l->next)
      g_ptr_array_add(nodes, l->data);
    if (!add_knob(replay, name, (JsonNode *const *)nodes->pdata, nodes->len, error))
      return FALSE;
  }
  if (names->len == 0) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: tune_params is empty", replay->name);
    return FALSE;
  }
  return TRUE;
}

static gboolean
kt_entry(TsTuneReplay *replay, const char *key, JsonNode *node, GError **error)
{
  TsReplayEntry *e = g_new0(TsReplayEntry, 1);
  e->label = g_strdup_printf("cache entry '%s'", key);
  e->time_s = NAN;
  if (!JSON_NODE_HOLDS_OBJECT(node)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT, "%s: %s is not an object",
                replay->name, e->label);
    goto fail;
  }
  JsonObject *o = json_node_get_object(node);
  if (!entry_point(replay, e, o, key, error))
    goto fail;
  static const char *const cost_fields[] = {"compile_time", "verification_time", "benchmark_time",
                                            NULL};
  e->cost_ms = sum_fields(o, cost_fields);

  JsonNode *t = json_object_get_member(o, "time");
  double ms = 0;
  if (t && JSON_NODE_HOLDS_VALUE(t) && json_node_get_value_type(t) == G_TYPE_STRING) {
    const char *m = json_node_get_string(t);
    guint i;
    for (i = 0; i < G_N_ELEMENTS(kt_markers); i++)
      if (strcmp(m, kt_markers[i].marker) == 0)
        break;
    if (i == G_N_ELEMENTS(kt_markers)) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                  "%s: %s: unknown error marker \"%s\" in \"time\" (expected a number, "
                  "InvalidConfig, CompilationFailedConfig or RuntimeFailedConfig)",
                  replay->name, e->label, m);
      goto fail;
    }
    e->status = kt_markers[i].status;
  } else if (node_number(t, &ms)) {
    if (ms >= KT_LEGACY_INVALID_MS) {
      e->status = TS_TUNE_REPLAY_INVALID;
    } else {
      e->status = TS_TUNE_REPLAY_OK;
      if (!read_samples(replay, e, json_object_get_member(o, "times"), "times", error) ||
          !set_time(replay, e, TRUE, ms, error))
        goto fail;
    }
  } else {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s has no \"time\" (a number of ms or an error marker)", replay->name,
                e->label);
    goto fail;
  }
  return ts__replay_add_entry(replay, e, error);
fail:
  ts__replay_entry_free(e);
  return FALSE;
}

gboolean
ts__replay_read_kernel_tuner(TsTuneReplay *replay, JsonObject *root, GError **error)
{
  if (!kt_space(replay, root, error))
    return FALSE;
  replay->device = string_member(root, "device_name");
  replay->kernel = string_member(root, "kernel_name");
  replay->objective = string_member(root, "objective");
  JsonNode *cache = json_object_get_member(root, "cache");
  if (!cache || !JSON_NODE_HOLDS_OBJECT(cache)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: missing \"cache\" (an object of recorded configurations)", replay->name);
    return FALSE;
  }
  JsonObject *c = json_node_get_object(cache);
  g_autoptr(GList) members = json_object_get_members(c);
  for (GList *l = members; l; l = l->next)
    if (!kt_entry(replay, l->data, json_object_get_member(c, l->data), error))
      return FALSE;
  return TRUE;
}

/* ---- T4 results file ---- */

static const struct {
  const char *name;
  TsTuneReplayStatus status;
} t4_invalidity[] = {
    {"correct", TS_TUNE_REPLAY_OK},
    {"compile", TS_TUNE_REPLAY_COMPILE_ERROR},
    {"runtime", TS_TUNE_REPLAY_RUNTIME_ERROR},
    {"correctness", TS_TUNE_REPLAY_WRONG_RESULT},
    {"constraints", TS_TUNE_REPLAY_INVALID},
    {"timeout", TS_TUNE_REPLAY_TIMEOUT},
};

/* Seconds per unit of a T4 time measurement; 0 when unit is not a time unit. Kernel Tuner writes
 * "ms"; an empty unit is taken as ms too, Kernel Tuner's default. */
static double
t4_unit_scale(const char *unit)
{
  if (!unit || !*unit || strcmp(unit, "ms") == 0)
    return 1e-3;
  if (strcmp(unit, "s") == 0)
    return 1.0;
  if (strcmp(unit, "us") == 0 || strcmp(unit, "\xc2\xb5s") == 0)
    return 1e-6;
  if (strcmp(unit, "ns") == 0)
    return 1e-9;
  return 0;
}

static int
cmp_int_node(gconstpointer a, gconstpointer b)
{
  gint64 x = json_node_get_int(*(JsonNode *const *)a), y = json_node_get_int(*(JsonNode *const *)b);
  return (x > y) - (x < y);
}

/* The space of a T4 file: the configurations' parameters and the values seen for each. */
static gboolean
t4_space(TsTuneReplay *replay, JsonArray *results, GError **error)
{
  g_autoptr(GPtrArray) names = g_ptr_array_new(); /* borrowed */
  g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint r = 0; r < json_array_get_length(results); r++) {
    JsonNode *res = json_array_get_element(results, r);
    JsonNode *cfg = JSON_NODE_HOLDS_OBJECT(res)
                        ? json_object_get_member(json_node_get_object(res), "configuration")
                        : NULL;
    if (!cfg || !JSON_NODE_HOLDS_OBJECT(cfg)) {
      g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                  "%s: result %u has no \"configuration\" object", replay->name, r);
      return FALSE;
    }
    JsonObject *c = json_node_get_object(cfg);
    g_autoptr(GList) members = json_object_get_members(c);
    for (GList *l = members; l; l = l->next) {
      guint k;
      for (k = 0; k < names->len; k++)
        if (strcmp(names->pdata[k], l->data) == 0)
          break;
      if (k == names->len) {
        g_ptr_array_add(names, l->data);
        g_ptr_array_add(values, g_ptr_array_new());
      }
      JsonNode *v = json_object_get_member(c, l->data);
      g_autofree char *text = py_str(v);
      if (!text) {
        g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                    "%s: result %u: '%s' is not a number, string or boolean", replay->name, r,
                    (const char *)l->data);
        return FALSE;
      }
      /* distinct by knob and Python text; an int 1 and a bool true stay distinct ("1", "True") */
      char *id = g_strdup_printf("%u:%c:%s", k, node_is_int(v) ? 'i' : 's', text);
      if (g_hash_table_add(seen, id))
        g_ptr_array_add(values->pdata[k], v);
    }
  }
  if (names->len == 0) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: no result has a configuration with parameters", replay->name);
    return FALSE;
  }
  replay->space = ts_sched_space_parse("dict()", error);
  g_assert(replay->space);
  for (guint k = 0; k < names->len; k++) {
    GPtrArray *v = values->pdata[k];
    gboolean all_int = TRUE;
    for (guint j = 0; j < v->len; j++)
      all_int = all_int && node_is_int(v->pdata[j]);
    /* ascending integers: neighbourhood-based strategies step along the list order */
    if (all_int)
      g_ptr_array_sort(v, cmp_int_node);
    if (!add_knob(replay, names->pdata[k], (JsonNode *const *)v->pdata, v->len, error))
      return FALSE;
  }
  return TRUE;
}

/* The time measurement of a T4 result, in seconds: "time", else the objective when it is in a
 * time unit. */
static gboolean
t4_time(JsonObject *res, const char *objective, double *seconds)
{
  JsonNode *m = json_object_get_member(res, "measurements");
  if (!m || !JSON_NODE_HOLDS_ARRAY(m))
    return FALSE;
  JsonArray *a = json_node_get_array(m);
  const char *want[] = {"time", objective};
  for (guint w = 0; w < G_N_ELEMENTS(want); w++) {
    for (guint i = 0; want[w] && i < json_array_get_length(a); i++) {
      JsonNode *n = json_array_get_element(a, i);
      if (!JSON_NODE_HOLDS_OBJECT(n))
        continue;
      JsonObject *o = json_node_get_object(n);
      g_autofree char *name = string_member(o, "name");
      g_autofree char *unit = string_member(o, "unit");
      double v, scale = t4_unit_scale(unit);
      if (name && strcmp(name, want[w]) == 0 && scale > 0 &&
          node_number(json_object_get_member(o, "value"), &v)) {
        *seconds = v * scale;
        return TRUE;
      }
    }
  }
  return FALSE;
}

static gboolean
t4_entry(TsTuneReplay *replay, guint r, JsonObject *res, GError **error)
{
  g_autofree char *inv = NULL; /* before the first goto: cleanup must see it initialised */
  TsReplayEntry *e = g_new0(TsReplayEntry, 1);
  e->label = g_strdup_printf("result %u", r);
  e->time_s = NAN;
  JsonObject *cfg = json_object_get_object_member(res, "configuration");
  if (!entry_point(replay, e, cfg, NULL, error))
    goto fail;

  inv = string_member(res, "invalidity");
  if (!inv) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s has no \"invalidity\" string", replay->name, e->label);
    goto fail;
  }
  guint i;
  for (i = 0; i < G_N_ELEMENTS(t4_invalidity); i++)
    if (strcmp(inv, t4_invalidity[i].name) == 0)
      break;
  if (i == G_N_ELEMENTS(t4_invalidity)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: %s: unknown invalidity \"%s\" (expected correct, compile, runtime, "
                "correctness, constraints or timeout)",
                replay->name, e->label, inv);
    goto fail;
  }
  e->status = t4_invalidity[i].status;

  JsonNode *tn = json_object_get_member(res, "times");
  JsonObject *times = tn && JSON_NODE_HOLDS_OBJECT(tn) ? json_node_get_object(tn) : NULL;
  /* Kernel Tuner writes "compilation", the schema documents "compilation_time": take both. */
  static const char *const cost_fields[] = {
      "compilation", "compilation_time", "benchmark", "benchmark_time",
      "validation",  "validation_time",  NULL};
  e->cost_ms = sum_fields(times, cost_fields);
  if (e->status == TS_TUNE_REPLAY_OK) {
    double s = 0;
    gboolean have = t4_time(res, replay->objective, &s);
    if (!read_samples(replay, e, times ? json_object_get_member(times, "runtimes") : NULL,
                      "times.runtimes", error) ||
        !set_time(replay, e, have, s * 1e3, error))
      goto fail;
  }
  return ts__replay_add_entry(replay, e, error);
fail:
  ts__replay_entry_free(e);
  return FALSE;
}

gboolean
ts__replay_read_t4(TsTuneReplay *replay, JsonObject *root, GError **error)
{
  JsonNode *rn = json_object_get_member(root, "results");
  if (!rn || !JSON_NODE_HOLDS_ARRAY(rn)) {
    g_set_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT,
                "%s: \"results\" is not a list", replay->name);
    return FALSE;
  }
  JsonArray *results = json_node_get_array(rn);
  if (!t4_space(replay, results, error))
    return FALSE;
  /* Kernel Tuner tunes one objective at a time and repeats it in every result. */
  JsonObject *first = json_array_get_object_element(results, 0);
  JsonNode *objs = json_object_get_member(first, "objectives");
  if (objs && JSON_NODE_HOLDS_ARRAY(objs) && json_array_get_length(json_node_get_array(objs)) > 0) {
    JsonNode *o = json_array_get_element(json_node_get_array(objs), 0);
    if (JSON_NODE_HOLDS_VALUE(o) && json_node_get_value_type(o) == G_TYPE_STRING)
      replay->objective = g_strdup(json_node_get_string(o));
  }
  for (guint r = 0; r < json_array_get_length(results); r++)
    if (!t4_entry(replay, r, json_array_get_object_element(results, r), error))
      return FALSE;
  return TRUE;
}
