/* ts-db-json.c — export of trials and best schedules as a "tessera-schedules" JSON document,
 * and the merging import. The document is self-contained: its devices, toolchains and
 * workloads carry local ids that its trials and best entries refer to; the import matches them
 * to rows by natural key, so ids never leak between databases.
 *
 * Import validates the whole document before touching the database (every error names the JSON
 * path of the bad field), then writes in one transaction: a failure leaves the file as it was. */
#include "ts-db-private.h"
#include "ts-output.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define FORMAT_NAME "tessera-schedules"
#define FORMAT_VERSION 1

/* ---- export ---- */

static void
add_json_member(JsonBuilder *b, const char *name, const char *json_text)
{
  json_builder_set_member_name(b, name);
  JsonNode *node = json_text ? json_from_string(json_text, NULL) : NULL;
  json_builder_add_value(b, node ? node : json_node_new(JSON_NODE_NULL));
}

static void
add_double(JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name(b, name);
  if (isfinite(v))
    json_builder_add_double_value(b, v);
  else
    json_builder_add_null_value(b);
}

static void
add_string(JsonBuilder *b, const char *name, const char *v)
{
  json_builder_set_member_name(b, name);
  if (v)
    json_builder_add_string_value(b, v);
  else
    json_builder_add_null_value(b);
}

static void
add_int(JsonBuilder *b, const char *name, gint64 v)
{
  json_builder_set_member_name(b, name);
  json_builder_add_int_value(b, v);
}

/* ?1 = workload id, or 0 for all. */
static const char SQL_EXPORT_DEVICES[] =
    "SELECT id, backend, name, arch, compute_units, memory_bytes, l1_bytes, l2_bytes, l3_bytes,"
    " smem_per_block, vector_bits, peaks FROM device WHERE id IN"
    " (SELECT device_id FROM trial WHERE ?1 = 0 OR workload_id = ?1) ORDER BY id";
static const char SQL_EXPORT_TOOLCHAINS[] =
    "SELECT id, compiler, kgen_version FROM toolchain WHERE id IN"
    " (SELECT toolchain_id FROM trial WHERE ?1 = 0 OR workload_id = ?1) ORDER BY id";
static const char SQL_EXPORT_WORKLOADS[] =
    "SELECT id, op, shape, dtype FROM workload WHERE ?1 = 0 OR id = ?1 ORDER BY id";
static const char SQL_EXPORT_TRIALS[] =
    "SELECT " TS__DB_TRIAL_COLUMNS " FROM trial t WHERE ?1 = 0 OR t.workload_id = ?1"
    " ORDER BY t.id";
static const char SQL_EXPORT_BEST[] =
    "SELECT b.workload_id, b.device_id, b.toolchain_id, t.schedule_hash FROM best b"
    " JOIN trial t ON t.id = b.trial_id WHERE ?1 = 0 OR b.workload_id = ?1"
    " ORDER BY b.workload_id, b.device_id, b.toolchain_id";

static const char SQL_EXPORT_KERNELS[] =
    "SELECT op, path, source FROM kernel_source WHERE op IN"
    " (SELECT op FROM workload WHERE ?1 = 0 OR id = ?1) ORDER BY op";

static const char *const device_int_fields[] = {
    "compute_units", "memory_bytes", "l1_bytes",   "l2_bytes",
    "l3_bytes",      "smem_per_block", "vector_bits",
};

static gboolean
export_rows(TsDb *db, JsonBuilder *b, const char *sql, gint64 workload_id, const char *member,
            void (*row)(JsonBuilder *, sqlite3_stmt *), GError **error)
{
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, sql, error);
  if (!stmt)
    return FALSE;
  sqlite3_bind_int64(stmt, 1, workload_id);
  json_builder_set_member_name(b, member);
  json_builder_begin_array(b);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW) {
    json_builder_begin_object(b);
    row(b, stmt);
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "exporting", error);
  return TRUE;
}

static void
device_row(JsonBuilder *b, sqlite3_stmt *s)
{
  add_int(b, "id", sqlite3_column_int64(s, 0));
  add_string(b, "backend", (const char *)sqlite3_column_text(s, 1));
  add_string(b, "name", (const char *)sqlite3_column_text(s, 2));
  add_string(b, "arch", (const char *)sqlite3_column_text(s, 3));
  for (guint i = 0; i < G_N_ELEMENTS(device_int_fields); i++)
    add_int(b, device_int_fields[i], sqlite3_column_int64(s, 4 + (int)i));
  add_json_member(b, "peaks", (const char *)sqlite3_column_text(s, 11));
}

static void
toolchain_row(JsonBuilder *b, sqlite3_stmt *s)
{
  add_int(b, "id", sqlite3_column_int64(s, 0));
  add_string(b, "compiler", (const char *)sqlite3_column_text(s, 1));
  add_string(b, "kgen_version", (const char *)sqlite3_column_text(s, 2));
}

static void
workload_row(JsonBuilder *b, sqlite3_stmt *s)
{
  add_int(b, "id", sqlite3_column_int64(s, 0));
  add_string(b, "op", (const char *)sqlite3_column_text(s, 1));
  add_string(b, "shape", (const char *)sqlite3_column_text(s, 2));
  add_string(b, "dtype", (const char *)sqlite3_column_text(s, 3));
}

static void
trial_row(JsonBuilder *b, sqlite3_stmt *s)
{
  g_autoptr(TsDbTrial) t = ts__db_trial_from_row(s);
  add_int(b, "workload", t->workload_id);
  add_int(b, "device", t->device_id);
  add_int(b, "toolchain", t->toolchain_id);
  add_string(b, "schedule", t->schedule);
  add_string(b, "hash", t->hash);
  add_string(b, "status", ts_db_trial_status_name(t->status));
  add_double(b, "rel_error", t->rel_error);
  add_double(b, "median_ns", t->median_ns);
  add_double(b, "min_ns", t->min_ns);
  add_double(b, "max_ns", t->max_ns);
  add_json_member(b, "samples_ns", (const char *)sqlite3_column_text(s, 12));
  add_json_member(b, "metrics", t->metrics_json);
  add_string(b, "error", t->error_text);
  add_double(b, "predicted_cost", t->predicted_cost);
  add_string(b, "strategy", t->strategy);
  add_double(b, "compile_ms", t->compile_ms);
  add_string(b, "created_at", t->created_at);
  add_string(b, "host", t->host);
  if (t->rank >= 0)
    add_int(b, "rank", t->rank);
}

static void
best_row(JsonBuilder *b, sqlite3_stmt *s)
{
  add_int(b, "workload", sqlite3_column_int64(s, 0));
  add_int(b, "device", sqlite3_column_int64(s, 1));
  add_int(b, "toolchain", sqlite3_column_int64(s, 2));
  add_string(b, "hash", (const char *)sqlite3_column_text(s, 3));
}

/* A kernel-language op's source, so the importing cache can lower the op too. */
static void
kernel_row(JsonBuilder *b, sqlite3_stmt *s)
{
  add_string(b, "op", (const char *)sqlite3_column_text(s, 0));
  add_string(b, "path", (const char *)sqlite3_column_text(s, 1));
  add_string(b, "source", (const char *)sqlite3_column_text(s, 2));
}

char *
ts_db_export_json(TsDb *db, gint64 workload_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  /* One read transaction, so the document is a consistent snapshot even while tuners write. */
  int rc = sqlite3_exec(db->sql, "BEGIN", NULL, NULL, NULL);
  if (rc != SQLITE_OK)
    return ts__db_fail(db, rc, "exporting", error), NULL;
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  add_string(b, "format", FORMAT_NAME);
  add_int(b, "version", FORMAT_VERSION);
  gboolean ok =
      export_rows(db, b, SQL_EXPORT_DEVICES, workload_id, "devices", device_row, error) &&
      export_rows(db, b, SQL_EXPORT_TOOLCHAINS, workload_id, "toolchains", toolchain_row,
                  error) &&
      export_rows(db, b, SQL_EXPORT_WORKLOADS, workload_id, "workloads", workload_row, error) &&
      export_rows(db, b, SQL_EXPORT_TRIALS, workload_id, "trials", trial_row, error) &&
      export_rows(db, b, SQL_EXPORT_BEST, workload_id, "best", best_row, error) &&
      export_rows(db, b, SQL_EXPORT_KERNELS, workload_id, "kernel_sources", kernel_row, error);
  sqlite3_exec(db->sql, "COMMIT", NULL, NULL, NULL);
  if (!ok)
    return NULL;
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autoptr(JsonGenerator) gen = json_generator_new();
  json_generator_set_pretty(gen, TRUE);
  json_generator_set_root(gen, root);
  return json_generator_to_data(gen, NULL);
}

gboolean
ts_db_export_file(TsDb *db, gint64 workload_id, const char *path, GError **error)
{
  g_return_val_if_fail(db != NULL && path != NULL, FALSE);
  g_autofree char *text = ts_db_export_json(db, workload_id, error);
  if (!text)
    return FALSE;
  g_autoptr(GError) local = NULL;
  if (!ts_output_write(path, text, -1, &local)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_OPEN, "export to %s: %s", path, local->message);
    return FALSE;
  }
  return TRUE;
}

/* ---- import: validation ---- */

typedef struct {
  gint64 local;
  TsDbDevice d;
  char *peaks;
} ImDevice;

typedef struct {
  gint64 local;
  const char *compiler, *kgen;
} ImToolchain;

typedef struct {
  gint64 local;
  const char *op, *shape, *dtype;
} ImWorkload;

typedef struct {
  GError **error;
  gboolean failed;
  TsDbScheduleCheck check; /* the handle's (ts_db_set_schedule_check), or NULL */
  gpointer check_data;
} Check;

static gboolean
bad(Check *c, const char *path, const char *what)
{
  if (!c->failed)
    g_set_error(c->error, TS_DB_ERROR, TS_DB_ERROR_IMPORT, "import: %s: %s", path, what);
  c->failed = TRUE;
  return FALSE;
}

static const char *
node_kind(JsonNode *n)
{
  if (!n || JSON_NODE_HOLDS_NULL(n))
    return "null";
  if (JSON_NODE_HOLDS_OBJECT(n))
    return "an object";
  if (JSON_NODE_HOLDS_ARRAY(n))
    return "an array";
  GType t = json_node_get_value_type(n);
  if (t == G_TYPE_STRING)
    return "a string";
  if (t == G_TYPE_BOOLEAN)
    return "a boolean";
  return "a number";
}

typedef enum { F_STRING, F_INT, F_NUMBER, F_JSON_OBJECT, F_JSON_ARRAY } FieldKind;

/* The member `name` of obj, checked against kind. Missing or null is allowed when `optional`
 * (returns NULL). */
static JsonNode *
field(Check *c, JsonObject *obj, const char *path, const char *name, FieldKind kind,
      gboolean optional)
{
  g_autofree char *p = g_strdup_printf("%s.%s", path, name);
  JsonNode *n = json_object_get_member(obj, name);
  if (!n || JSON_NODE_HOLDS_NULL(n)) {
    if (!optional)
      bad(c, p, n ? "must not be null" : "missing");
    return NULL;
  }
  gboolean ok = FALSE;
  const char *want = "";
  GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
  switch (kind) {
  case F_STRING:
    ok = t == G_TYPE_STRING;
    want = "expected a string";
    break;
  case F_INT:
    ok = t == G_TYPE_INT64;
    want = "expected an integer";
    break;
  case F_NUMBER:
    ok = t == G_TYPE_INT64 || t == G_TYPE_DOUBLE;
    want = "expected a number";
    break;
  case F_JSON_OBJECT:
    ok = JSON_NODE_HOLDS_OBJECT(n);
    want = "expected an object";
    break;
  case F_JSON_ARRAY:
    ok = JSON_NODE_HOLDS_ARRAY(n);
    want = "expected an array";
    break;
  }
  if (!ok) {
    g_autofree char *msg = g_strdup_printf("%s, got %s", want, node_kind(n));
    bad(c, p, msg);
    return NULL;
  }
  return n;
}

static const char *
str_field(Check *c, JsonObject *o, const char *path, const char *name, gboolean optional)
{
  JsonNode *n = field(c, o, path, name, F_STRING, optional);
  return n ? json_node_get_string(n) : NULL;
}

static gint64
int_field(Check *c, JsonObject *o, const char *path, const char *name)
{
  JsonNode *n = field(c, o, path, name, F_INT, FALSE);
  return n ? json_node_get_int(n) : 0;
}

static double
num_field(Check *c, JsonObject *o, const char *path, const char *name)
{
  JsonNode *n = field(c, o, path, name, F_NUMBER, TRUE);
  return n ? json_node_get_double(n) : NAN;
}

static char *
json_field(Check *c, JsonObject *o, const char *path, const char *name, FieldKind kind)
{
  JsonNode *n = field(c, o, path, name, kind, TRUE);
  return n ? json_to_string(n, FALSE) : NULL;
}

static JsonArray *
array_member(Check *c, JsonObject *root, const char *name)
{
  g_autofree char *p = g_strdup_printf("$.%s", name);
  JsonNode *n = field(c, root, "$", name, F_JSON_ARRAY, FALSE);
  (void)p;
  return n ? json_node_get_array(n) : NULL;
}

static JsonObject *
element_object(Check *c, JsonArray *a, guint i, const char *name, char **path)
{
  *path = g_strdup_printf("$.%s[%u]", name, i);
  JsonNode *n = json_array_get_element(a, i);
  if (!JSON_NODE_HOLDS_OBJECT(n)) {
    g_autofree char *msg = g_strdup_printf("expected an object, got %s", node_kind(n));
    bad(c, *path, msg);
    return NULL;
  }
  return json_node_get_object(n);
}

/* local id → index into the parsed array */
static gboolean
register_local(Check *c, GHashTable *map, gint64 local, guint index, const char *path)
{
  if (g_hash_table_contains(map, &local)) {
    g_autofree char *p = g_strdup_printf("%s.id", path);
    return bad(c, p, "duplicate id");
  }
  gint64 *k = g_new(gint64, 1);
  *k = local;
  g_hash_table_insert(map, k, GUINT_TO_POINTER(index + 1));
  return TRUE;
}

static guint
resolve(Check *c, GHashTable *map, JsonObject *o, const char *path, const char *name,
        const char *table)
{
  gint64 local = int_field(c, o, path, name);
  if (c->failed)
    return 0;
  guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(map, &local));
  if (!idx) {
    g_autofree char *p = g_strdup_printf("%s.%s", path, name);
    g_autofree char *msg =
        g_strdup_printf("no entry with id %" G_GINT64_FORMAT " in $.%s", local, table);
    bad(c, p, msg);
  }
  return idx;
}

typedef struct {
  guint workload, device, toolchain; /* 1-based indexes into the parsed arrays */
  TsDbTrial *trial;
} ImTrial;

typedef struct {
  const char *op, *path, *source; /* borrowed from the parsed document */
} ImKernel;

typedef struct {
  GArray *devices;    /* ImDevice */
  GArray *toolchains; /* ImToolchain */
  GArray *workloads;  /* ImWorkload */
  GArray *trials;     /* ImTrial */
  GArray *kernels;    /* ImKernel: $.kernel_sources, optional (documents before schema 8) */
} Doc;

static void
doc_clear(Doc *d)
{
  for (guint i = 0; d->devices && i < d->devices->len; i++)
    g_free(g_array_index(d->devices, ImDevice, i).peaks);
  for (guint i = 0; d->trials && i < d->trials->len; i++)
    ts_db_trial_free(g_array_index(d->trials, ImTrial, i).trial);
  g_clear_pointer(&d->devices, g_array_unref);
  g_clear_pointer(&d->toolchains, g_array_unref);
  g_clear_pointer(&d->workloads, g_array_unref);
  g_clear_pointer(&d->trials, g_array_unref);
  g_clear_pointer(&d->kernels, g_array_unref);
}

static GHashTable *
id_map(void)
{
  return g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
}

static gboolean
validate(Check *c, JsonNode *root_node, Doc *doc)
{
  if (!JSON_NODE_HOLDS_OBJECT(root_node)) {
    g_autofree char *msg = g_strdup_printf("expected an object, got %s", node_kind(root_node));
    return bad(c, "$", msg);
  }
  JsonObject *root = json_node_get_object(root_node);
  const char *format = str_field(c, root, "$", "format", FALSE);
  if (format && strcmp(format, FORMAT_NAME) != 0)
    return bad(c, "$.format", "expected \"" FORMAT_NAME "\"");
  gint64 version = int_field(c, root, "$", "version");
  if (!c->failed && version != FORMAT_VERSION)
    return bad(c, "$.version", "unsupported version (this build reads 1)");
  JsonArray *devices = array_member(c, root, "devices");
  JsonArray *toolchains = array_member(c, root, "toolchains");
  JsonArray *workloads = array_member(c, root, "workloads");
  JsonArray *trials = array_member(c, root, "trials");
  if (c->failed)
    return FALSE;

  g_autoptr(GHashTable) dmap = id_map(), tmap = id_map(), wmap = id_map();
  doc->devices = g_array_new(FALSE, TRUE, sizeof(ImDevice));
  for (guint i = 0; !c->failed && i < json_array_get_length(devices); i++) {
    g_autofree char *path = NULL;
    JsonObject *o = element_object(c, devices, i, "devices", &path);
    if (!o)
      break;
    ImDevice d = {0};
    d.local = int_field(c, o, path, "id");
    d.d.backend = str_field(c, o, path, "backend", FALSE);
    d.d.name = str_field(c, o, path, "name", FALSE);
    d.d.arch = str_field(c, o, path, "arch", FALSE);
    guint64 values[G_N_ELEMENTS(device_int_fields)] = {0};
    for (guint f = 0; f < G_N_ELEMENTS(device_int_fields); f++) {
      JsonNode *n = field(c, o, path, device_int_fields[f], F_INT, TRUE);
      gint64 v = n ? json_node_get_int(n) : 0;
      /* Bounds no device comes near (2^24 cores or SMs, 2^50 bytes): a figure past them is a
       * made-up one that would overflow the arithmetic downstream. */
      gint64 limit = f == 0 ? G_GINT64_CONSTANT(1) << 24 : f == 6 ? 8192 : G_GINT64_CONSTANT(1) << 50;
      if (v < 0 || v > limit) {
        g_autofree char *p = g_strdup_printf("%s.%s", path, device_int_fields[f]);
        g_autofree char *msg = g_strdup_printf("%" G_GINT64_FORMAT " is not a device's figure "
                                               "(0 to %" G_GINT64_FORMAT ")", v, limit);
        bad(c, p, msg);
        break;
      }
      values[f] = (guint64)v;
    }
    d.d.compute_units = (guint)values[0];
    d.d.memory_bytes = values[1];
    d.d.l1_bytes = values[2];
    d.d.l2_bytes = values[3];
    d.d.l3_bytes = values[4];
    d.d.smem_per_block = values[5];
    d.d.vector_bits = (guint)values[6];
    d.peaks = json_field(c, o, path, "peaks", F_JSON_OBJECT);
    g_array_append_val(doc->devices, d);
    if (!c->failed)
      register_local(c, dmap, d.local, i, path);
  }
  doc->toolchains = g_array_new(FALSE, TRUE, sizeof(ImToolchain));
  for (guint i = 0; !c->failed && i < json_array_get_length(toolchains); i++) {
    g_autofree char *path = NULL;
    JsonObject *o = element_object(c, toolchains, i, "toolchains", &path);
    if (!o)
      break;
    ImToolchain t = {0};
    t.local = int_field(c, o, path, "id");
    t.compiler = str_field(c, o, path, "compiler", FALSE);
    t.kgen = str_field(c, o, path, "kgen_version", FALSE);
    g_array_append_val(doc->toolchains, t);
    if (!c->failed)
      register_local(c, tmap, t.local, i, path);
  }
  doc->workloads = g_array_new(FALSE, TRUE, sizeof(ImWorkload));
  for (guint i = 0; !c->failed && i < json_array_get_length(workloads); i++) {
    g_autofree char *path = NULL;
    JsonObject *o = element_object(c, workloads, i, "workloads", &path);
    if (!o)
      break;
    ImWorkload w = {0};
    w.local = int_field(c, o, path, "id");
    w.op = str_field(c, o, path, "op", FALSE);
    w.shape = str_field(c, o, path, "shape", FALSE);
    w.dtype = str_field(c, o, path, "dtype", FALSE);
    if (w.shape) {
      g_autofree char *canon = ts__db_canonical_shape(w.shape, NULL);
      if (!canon) {
        g_autofree char *p = g_strdup_printf("%s.shape", path);
        bad(c, p, "expected NAME=INT,NAME=INT,...");
      }
    }
    if (!c->failed && c->check) {
      g_autofree char *why = NULL;
      if (!c->check(w.op, w.shape, w.dtype, NULL, NULL, NAN, &why, c->check_data))
        bad(c, path, why ? why : "not a workload this build knows");
    }
    g_array_append_val(doc->workloads, w);
    if (!c->failed)
      register_local(c, wmap, w.local, i, path);
  }
  doc->trials = g_array_new(FALSE, TRUE, sizeof(ImTrial));
  for (guint i = 0; !c->failed && i < json_array_get_length(trials); i++) {
    g_autofree char *path = NULL;
    JsonObject *o = element_object(c, trials, i, "trials", &path);
    if (!o)
      break;
    ImTrial it = {0};
    it.workload = resolve(c, wmap, o, path, "workload", "workloads");
    it.device = resolve(c, dmap, o, path, "device", "devices");
    it.toolchain = resolve(c, tmap, o, path, "toolchain", "toolchains");
    TsDbTrial *t = it.trial = ts_db_trial_new();
    g_array_append_val(doc->trials, it);
    t->schedule = g_strdup(str_field(c, o, path, "schedule", FALSE));
    t->hash = g_strdup(str_field(c, o, path, "hash", FALSE));
    if (t->hash && !ts__db_hash_valid(t->hash)) {
      g_autofree char *p = g_strdup_printf("%s.hash", path);
      bad(c, p, "expected 16 lowercase hex digits");
    }
    const char *status = str_field(c, o, path, "status", FALSE);
    if (status && !ts_db_trial_status_parse(status, &t->status)) {
      g_autofree char *p = g_strdup_printf("%s.status", path);
      bad(c, p, "expected ok, compile_error, runtime_error, timeout or wrong_result");
    }
    t->rel_error = num_field(c, o, path, "rel_error");
    t->median_ns = num_field(c, o, path, "median_ns");
    t->min_ns = num_field(c, o, path, "min_ns");
    t->max_ns = num_field(c, o, path, "max_ns");
    JsonNode *samples = field(c, o, path, "samples_ns", F_JSON_ARRAY, TRUE);
    if (samples) {
      JsonArray *a = json_node_get_array(samples);
      t->samples_ns = g_array_new(FALSE, FALSE, sizeof(double));
      for (guint s = 0; s < json_array_get_length(a); s++) {
        JsonNode *n = json_array_get_element(a, s);
        if (JSON_NODE_HOLDS_NULL(n)) { /* a sample that was not finite, exported as null */
          double nan = NAN;
          g_array_append_val(t->samples_ns, nan);
          continue;
        }
        GType ty = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : G_TYPE_INVALID;
        if (ty != G_TYPE_INT64 && ty != G_TYPE_DOUBLE) {
          g_autofree char *p = g_strdup_printf("%s.samples_ns[%u]", path, s);
          g_autofree char *msg = g_strdup_printf("expected a number, got %s", node_kind(n));
          bad(c, p, msg);
          break;
        }
        double v = json_node_get_double(n);
        g_array_append_val(t->samples_ns, v);
      }
    }
    t->metrics_json = json_field(c, o, path, "metrics", F_JSON_OBJECT);
    t->error_text = g_strdup(str_field(c, o, path, "error", TRUE));
    t->predicted_cost = num_field(c, o, path, "predicted_cost");
    t->strategy = g_strdup(str_field(c, o, path, "strategy", TRUE));
    t->compile_ms = num_field(c, o, path, "compile_ms");
    t->created_at = g_strdup(str_field(c, o, path, "created_at", TRUE));
    t->host = g_strdup(str_field(c, o, path, "host", TRUE));
    double rank = num_field(c, o, path, "rank");
    if (!isnan(rank) && !(rank >= 0 && rank <= G_MAXINT && rank == floor(rank))) {
      g_autofree char *p = g_strdup_printf("%s.rank", path);
      bad(c, p, "an MPI rank is a non-negative integer");
    }
    t->rank = isnan(rank) ? -1 : (gint)rank;
    if (!c->failed && t->status == TS_DB_TRIAL_OK && !isfinite(t->median_ns)) {
      g_autofree char *p = g_strdup_printf("%s.median_ns", path);
      bad(c, p, "a trial with status ok needs a median");
    }
    /* Times are positive: a zero or negative median would be a best no tune can ever beat. */
    const struct {
      const char *name;
      double v;
    } times[] = {{"median_ns", t->median_ns}, {"min_ns", t->min_ns}, {"max_ns", t->max_ns},
                 {"compile_ms", t->compile_ms}, {"rel_error", t->rel_error},
                 {"predicted_cost", t->predicted_cost}};
    for (guint k = 0; !c->failed && k < G_N_ELEMENTS(times); k++) {
      gboolean zero_ok = k >= 3; /* compile_ms, rel_error and predicted_cost may be 0 */
      if (!isnan(times[k].v) && (!isfinite(times[k].v) || times[k].v < 0 ||
                                 (!zero_ok && times[k].v == 0))) {
        g_autofree char *p = g_strdup_printf("%s.%s", path, times[k].name);
        g_autofree char *msg = g_strdup_printf("%g is not a %s value", times[k].v,
                                               zero_ok ? "non-negative" : "positive");
        bad(c, p, msg);
      }
    }
    for (guint s = 0; !c->failed && t->samples_ns && s < t->samples_ns->len; s++) {
      double v = g_array_index(t->samples_ns, double, s);
      if (!isnan(v) && !(v > 0 && isfinite(v))) {
        g_autofree char *p = g_strdup_printf("%s.samples_ns[%u]", path, s);
        g_autofree char *msg = g_strdup_printf("%g is not a positive time", v);
        bad(c, p, msg);
      }
    }
    if (!c->failed && c->check && it.workload) {
      const ImWorkload *w = &g_array_index(doc->workloads, ImWorkload, it.workload - 1);
      g_autofree char *why = NULL;
      if (!c->check(w->op, w->shape, w->dtype, t->schedule, t->hash, t->median_ns, &why,
                    c->check_data)) {
        g_autofree char *p = g_strdup_printf("%s.%s", path,
                                             why && strstr(why, "faster than") ? "median_ns"
                                                                               : "schedule");
        bad(c, p, why ? why : "not a schedule of its workload");
      }
    }
  }
  /* $.best is informative (best is re-evaluated by median on import) but still checked. */
  JsonNode *best = field(c, root, "$", "best", F_JSON_ARRAY, TRUE);
  for (guint i = 0; best && !c->failed && i < json_array_get_length(json_node_get_array(best));
       i++) {
    g_autofree char *path = NULL;
    JsonObject *o = element_object(c, json_node_get_array(best), i, "best", &path);
    if (!o)
      break;
    resolve(c, wmap, o, path, "workload", "workloads");
    resolve(c, dmap, o, path, "device", "devices");
    resolve(c, tmap, o, path, "toolchain", "toolchains");
    str_field(c, o, path, "hash", FALSE);
  }
  doc->kernels = g_array_new(FALSE, TRUE, sizeof(ImKernel));
  JsonNode *kernels = field(c, root, "$", "kernel_sources", F_JSON_ARRAY, TRUE);
  for (guint i = 0;
       kernels && !c->failed && i < json_array_get_length(json_node_get_array(kernels)); i++) {
    g_autofree char *path = NULL;
    JsonObject *o = element_object(c, json_node_get_array(kernels), i, "kernel_sources", &path);
    if (!o)
      break;
    ImKernel k = {str_field(c, o, path, "op", FALSE), str_field(c, o, path, "path", TRUE),
                  str_field(c, o, path, "source", FALSE)};
    if (k.op && !(g_str_has_prefix(k.op, "kernel:") && strchr(k.op, '@'))) {
      g_autofree char *p = g_strdup_printf("%s.op", path);
      bad(c, p, "expected a kernel file's op, kernel:NAME@HASH");
    }
    g_array_append_val(doc->kernels, k);
  }
  return !c->failed;
}

/* ---- import: writing ---- */

typedef struct {
  gint64 w, d, t;
} KeyIds;

static guint
key_hash(gconstpointer p)
{
  const KeyIds *k = p;
  return (guint)(k->w * 1000003 ^ k->d * 10007 ^ k->t);
}

static gboolean
key_equal(gconstpointer a, gconstpointer b)
{
  return memcmp(a, b, sizeof(KeyIds)) == 0;
}

static const char SQL_PEAKS_FILL[] = "UPDATE device SET peaks = ?2 WHERE id = ?1 AND peaks IS NULL";

static gboolean
write_doc(TsDb *db, Doc *doc, TsDbImportStats *st, GError **error)
{
  g_autofree gint64 *dev_ids = g_new0(gint64, doc->devices->len + 1);
  g_autofree gint64 *tc_ids = g_new0(gint64, doc->toolchains->len + 1);
  g_autofree gint64 *wl_ids = g_new0(gint64, doc->workloads->len + 1);
  for (guint i = 0; i < doc->devices->len; i++) {
    ImDevice *d = &g_array_index(doc->devices, ImDevice, i);
    gboolean added = FALSE;
    if (!(dev_ids[i + 1] = ts__db_ensure_device_tx(db, &d->d, &added, error)))
      return FALSE;
    st->devices_added += added;
    if (d->peaks) {
      /* Peaks measured here win over imported ones; import only fills a gap. */
      g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_PEAKS_FILL, error);
      if (!stmt)
        return FALSE;
      sqlite3_bind_int64(stmt, 1, dev_ids[i + 1]);
      sqlite3_bind_text(stmt, 2, d->peaks, -1, SQLITE_STATIC);
      int rc = sqlite3_step(stmt);
      if (rc != SQLITE_DONE)
        return ts__db_fail(db, rc, "importing device peaks", error);
    }
  }
  for (guint i = 0; i < doc->toolchains->len; i++) {
    ImToolchain *t = &g_array_index(doc->toolchains, ImToolchain, i);
    gboolean added = FALSE;
    if (!(tc_ids[i + 1] = ts__db_ensure_toolchain_tx(db, t->compiler, t->kgen, &added, error)))
      return FALSE;
    st->toolchains_added += added;
  }
  for (guint i = 0; i < doc->workloads->len; i++) {
    ImWorkload *w = &g_array_index(doc->workloads, ImWorkload, i);
    gboolean added = FALSE;
    if (!(wl_ids[i + 1] = ts__db_ensure_workload_tx(db, w->op, w->shape, w->dtype, &added,
                                                    error)))
      return FALSE;
    st->workloads_added += added;
  }
  g_autoptr(GHashTable) keys = g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
  for (guint i = 0; i < doc->trials->len; i++) {
    ImTrial *it = &g_array_index(doc->trials, ImTrial, i);
    it->trial->workload_id = wl_ids[it->workload];
    it->trial->device_id = dev_ids[it->device];
    it->trial->toolchain_id = tc_ids[it->toolchain];
    gboolean existed = FALSE;
    if (!ts__db_add_trial_tx(db, it->trial, NULL, &existed, error))
      return FALSE;
    if (existed)
      st->trials_existing++;
    else
      st->trials_added++;
    KeyIds k = {it->trial->workload_id, it->trial->device_id, it->trial->toolchain_id};
    if (!g_hash_table_contains(keys, &k))
      g_hash_table_add(keys, g_memdup2(&k, sizeof k));
  }
  GHashTableIter iter;
  gpointer kp;
  g_hash_table_iter_init(&iter, keys);
  while (g_hash_table_iter_next(&iter, &kp, NULL)) {
    const KeyIds *k = kp;
    gboolean changed = FALSE;
    if (!ts__db_refresh_best_tx(db, k->w, k->d, k->t, NULL, &changed, error))
      return FALSE;
    st->best_changed += changed;
  }
  for (guint i = 0; i < doc->kernels->len; i++) {
    const ImKernel *k = &g_array_index(doc->kernels, ImKernel, i);
    if (!ts_db_put_kernel_source(db, k->op, k->path, k->source, error))
      return FALSE;
  }
  return TRUE;
}

gboolean
ts_db_json_depth_ok(const char *text, gssize length, gsize *depth_offset)
{
  g_return_val_if_fail(text != NULL || length == 0, FALSE);
  const gsize n = length < 0 ? strlen(text) : (gsize)length;
  guint depth = 0;
  gboolean in_string = FALSE;
  for (gsize i = 0; i < n; i++) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        i++;
      else if (c == '"')
        in_string = FALSE;
    } else if (c == '"') {
      in_string = TRUE;
    } else if (c == '[' || c == '{') {
      if (++depth > TS_DB_JSON_MAX_DEPTH) {
        if (depth_offset)
          *depth_offset = i;
        return FALSE;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      depth--;
    }
  }
  return TRUE;
}

gboolean
ts_db_import_json(TsDb *db, const char *json, gssize length, TsDbImportStats *stats,
                  GError **error)
{
  g_return_val_if_fail(db != NULL && json != NULL, FALSE);
  TsDbImportStats local_stats = {0};
  TsDbImportStats *st = stats ? stats : &local_stats;
  memset(st, 0, sizeof *st);

  gsize deep_at = 0;
  if (!ts_db_json_depth_ok(json, length, &deep_at)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT,
                "import: $: nested more than %d deep (at byte %" G_GSIZE_FORMAT "): not an "
                "export of this workbench", TS_DB_JSON_MAX_DEPTH, deep_at);
    return FALSE;
  }
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) parse_error = NULL;
  if (!json_parser_load_from_data(parser, json, length, &parse_error)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT, "import: $: not JSON: %s",
                parse_error->message);
    return FALSE;
  }
  JsonNode *root = json_parser_get_root(parser);
  if (!root) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT, "import: $: empty document");
    return FALSE;
  }
  Doc doc = {0};
  Check c = {error, FALSE, db->check, db->check_data};
  if (!validate(&c, root, &doc)) {
    doc_clear(&doc);
    return FALSE;
  }
  gboolean ok = ts__db_begin(db, error);
  if (ok && !write_doc(db, &doc, st, error)) {
    ts__db_rollback(db);
    memset(st, 0, sizeof *st);
    ok = FALSE;
  } else if (ok) {
    ok = ts__db_commit(db, error);
  }
  ts__db_lru_clear(db);
  doc_clear(&doc);
  return ok;
}

gboolean
ts_db_import_file(TsDb *db, const char *path, TsDbImportStats *stats, GError **error)
{
  g_return_val_if_fail(db != NULL && path != NULL, FALSE);
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, &len, &local)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT, "import %s: %s", path, local->message);
    return FALSE;
  }
  return ts_db_import_json(db, text, (gssize)len, stats, error);
}
