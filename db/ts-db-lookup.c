/* ts-db-lookup.c — the read path a program takes at run time: key → best schedule, through an
 * LRU in front of SQLite (a repeated key costs a hash lookup and two string copies, no SQL),
 * and the nearest-shape fallback for shapes never tuned. */
#include "ts-db-private.h"

#include <math.h>
#include <string.h>

/* 4096 keys: far more distinct kernels than one program launches, a few hundred KiB at most. */
#define DEFAULT_CAPACITY 4096

typedef struct {
  GList link; /* in db->lru_order; data points back at the entry */
  char *key;
  char *schedule, *shape;
  double median_ns, distance;
  gint64 trial_id;
  gboolean exact;
} Entry;

static void
entry_free(Entry *e)
{
  g_free(e->key);
  g_free(e->schedule);
  g_free(e->shape);
  g_free(e);
}

void
ts__db_lru_init(TsDb *db)
{
  db->lru = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)entry_free);
  g_queue_init(&db->lru_order);
  db->lru_capacity = DEFAULT_CAPACITY;
}

void
ts__db_lru_clear(TsDb *db)
{
  if (g_hash_table_size(db->lru) == 0)
    return;
  g_queue_init(&db->lru_order); /* the links live in the entries, freed just below */
  g_hash_table_remove_all(db->lru);
}

void
ts__db_lru_destroy(TsDb *db)
{
  ts__db_lru_clear(db);
  g_hash_table_unref(db->lru);
}

void
ts_db_set_lookup_cache_size(TsDb *db, guint entries)
{
  g_return_if_fail(db != NULL);
  db->lru_capacity = entries;
  ts__db_lru_clear(db);
}

void
ts_db_lookup_result_clear(TsDbLookupResult *result)
{
  if (!result)
    return;
  g_free(result->schedule);
  g_free(result->shape);
  memset(result, 0, sizeof *result);
}

static void
fill(TsDbLookupResult *r, const Entry *e)
{
  r->schedule = g_strdup(e->schedule);
  r->shape = g_strdup(e->shape);
  r->median_ns = e->median_ns;
  r->trial_id = e->trial_id;
  r->exact = e->exact;
  r->distance = e->distance;
}

/* Key text: the fields separated by 0x1f (ASCII unit separator, which no field contains),
 * prefixed by the lookup kind so exact and nearest answers never collide. Fits `buf` for every
 * realistic key; longer ones go to the heap. */
static char *
key_text(char kind, const TsDbKey *k, char *buf, gsize size, char **heap)
{
  const char *parts[] = {k->op, k->shape, k->dtype, k->device_arch, k->device_name,
                         k->toolchain, k->kgen_version};
  gsize len = 2;
  for (guint i = 0; i < G_N_ELEMENTS(parts); i++)
    len += strlen(parts[i]) + 1;
  char *out = buf;
  if (len > size)
    out = *heap = g_malloc(len);
  char *p = out;
  *p++ = kind;
  for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
    *p++ = '\x1f';
    gsize n = strlen(parts[i]);
    memcpy(p, parts[i], n);
    p += n;
  }
  *p = '\0';
  return out;
}

static gboolean
lru_get(TsDb *db, const char *key, TsDbLookupResult *result)
{
  Entry *e = g_hash_table_lookup(db->lru, key);
  if (!e)
    return FALSE;
  if (db->lru_order.head != &e->link) {
    g_queue_unlink(&db->lru_order, &e->link);
    g_queue_push_head_link(&db->lru_order, &e->link);
  }
  fill(result, e);
  return TRUE;
}

static void
lru_put(TsDb *db, const char *key, const TsDbLookupResult *r)
{
  if (db->lru_capacity == 0)
    return;
  while (g_hash_table_size(db->lru) >= db->lru_capacity) {
    GList *last = g_queue_pop_tail_link(&db->lru_order);
    g_hash_table_remove(db->lru, ((Entry *)last->data)->key);
  }
  Entry *e = g_new0(Entry, 1);
  e->key = g_strdup(key);
  e->schedule = g_strdup(r->schedule);
  e->shape = g_strdup(r->shape);
  e->median_ns = r->median_ns;
  e->distance = r->distance;
  e->trial_id = r->trial_id;
  e->exact = r->exact;
  e->link.data = e;
  g_queue_push_head_link(&db->lru_order, &e->link);
  g_hash_table_insert(db->lru, e->key, e);
}

static gboolean
key_valid(const TsDbKey *k, GError **error)
{
  if (k->op && k->shape && k->dtype && k->device_arch && k->device_name && k->toolchain &&
      k->kgen_version)
    return TRUE;
  g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
              "a lookup key needs op, shape, dtype, device arch and name, toolchain and "
              "kernel-generator version");
  return FALSE;
}

static gboolean
not_found(TsDb *db, const TsDbKey *k, GError **error)
{
  g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
              "schedule cache %s: no tuned schedule for %s %s %s on %s (%s) with %s / %s",
              db->path, k->op, k->shape, k->dtype, k->device_name, k->device_arch, k->toolchain,
              k->kgen_version);
  return FALSE;
}

static const char SQL_LOOKUP[] =
    "SELECT t.schedule, t.median_ns, t.id, w.shape FROM workload w"
    " JOIN best b ON b.workload_id = w.id"
    " JOIN device d ON d.id = b.device_id"
    " JOIN toolchain c ON c.id = b.toolchain_id"
    " JOIN trial t ON t.id = b.trial_id"
    " WHERE w.op = ?1 AND w.shape = ?2 AND w.dtype = ?3 AND d.arch = ?4 AND d.name = ?5"
    " AND c.compiler = ?6 AND c.kgen_version = ?7"
    " ORDER BY d.id LIMIT 1";
/* Every tuned shape of the op and dtype on the device and toolchain, oldest workload first so
 * that ties resolve the same way every time. */
static const char SQL_NEAREST[] =
    "SELECT t.schedule, t.median_ns, t.id, w.shape FROM workload w"
    " JOIN best b ON b.workload_id = w.id"
    " JOIN device d ON d.id = b.device_id"
    " JOIN toolchain c ON c.id = b.toolchain_id"
    " JOIN trial t ON t.id = b.trial_id"
    " WHERE w.op = ?1 AND w.dtype = ?3 AND d.arch = ?4 AND d.name = ?5"
    " AND c.compiler = ?6 AND c.kgen_version = ?7 AND ?2 IS NOT NULL"
    " ORDER BY w.id, d.id";

static void
bind_key(sqlite3_stmt *stmt, const TsDbKey *k, const char *shape)
{
  sqlite3_bind_text(stmt, 1, k->op, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 2, shape, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, k->dtype, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 4, k->device_arch, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 5, k->device_name, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 6, k->toolchain, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 7, k->kgen_version, -1, SQLITE_STATIC);
}

static void
result_from_row(TsDbLookupResult *r, sqlite3_stmt *stmt)
{
  r->schedule = g_strdup((const char *)sqlite3_column_text(stmt, 0));
  r->median_ns = sqlite3_column_type(stmt, 1) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, 1);
  r->trial_id = sqlite3_column_int64(stmt, 2);
  r->shape = g_strdup((const char *)sqlite3_column_text(stmt, 3));
}

/* 1: found, 0: not found, -1: error. */
static int
lookup_exact(TsDb *db, const TsDbKey *k, const char *shape, TsDbLookupResult *r, GError **error)
{
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_LOOKUP, error);
  if (!stmt)
    return -1;
  bind_key(stmt, k, shape);
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW) {
    result_from_row(r, stmt);
    r->exact = TRUE;
    r->distance = 0;
    return 1;
  }
  if (rc == SQLITE_DONE)
    return 0;
  ts__db_fail(db, rc, "looking up a schedule", error);
  return -1;
}

/* Dims of a canonical shape as name → value; FALSE if any value is not positive. */
typedef struct {
  char name[32];
  double value;
} Dim;

static guint
parse_dims(const char *shape, Dim *dims, guint max)
{
  guint n = 0;
  g_auto(GStrv) parts = g_strsplit(shape, ",", -1);
  for (guint i = 0; parts[i]; i++) {
    const char *eq = strchr(parts[i], '=');
    if (!eq || n == max || (gsize)(eq - parts[i]) >= sizeof dims[n].name)
      return 0;
    memcpy(dims[n].name, parts[i], (gsize)(eq - parts[i]));
    dims[n].name[eq - parts[i]] = '\0';
    dims[n].value = g_ascii_strtod(eq + 1, NULL);
    if (!(dims[n].value > 0))
      return 0;
    n++;
  }
  return n;
}

/* Sum over dims of |log2(a/b)|, dims matched by name; -1 when the dim sets differ. */
static double
shape_distance(const Dim *a, guint na, const Dim *b, guint nb)
{
  if (na != nb || na == 0)
    return -1;
  double sum = 0;
  for (guint i = 0; i < na; i++) {
    guint j = 0;
    while (j < nb && strcmp(a[i].name, b[j].name) != 0)
      j++;
    if (j == nb)
      return -1;
    sum += fabs(log2(a[i].value / b[j].value));
  }
  return sum;
}

#define MAX_DIMS 16

static int
lookup_nearest(TsDb *db, const TsDbKey *k, const char *shape, TsDbLookupResult *r,
               GError **error)
{
  Dim want[MAX_DIMS], have[MAX_DIMS];
  guint n_want = parse_dims(shape, want, MAX_DIMS);
  if (n_want == 0)
    return 0;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_NEAREST, error);
  if (!stmt)
    return -1;
  bind_key(stmt, k, shape);
  double best = INFINITY;
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW) {
    guint n_have = parse_dims((const char *)sqlite3_column_text(stmt, 3), have, MAX_DIMS);
    double d = shape_distance(want, n_want, have, n_have);
    if (d >= 0 && d < best) {
      best = d;
      ts_db_lookup_result_clear(r);
      result_from_row(r, stmt);
      r->distance = d;
      r->exact = d == 0;
    }
  }
  if (rc != SQLITE_DONE) {
    ts_db_lookup_result_clear(r);
    ts__db_fail(db, rc, "searching the nearest tuned shape", error);
    return -1;
  }
  return isfinite(best) ? 1 : 0;
}

static gboolean
lookup(TsDb *db, const TsDbKey *key, gboolean nearest, TsDbLookupResult *result,
       GError **error)
{
  ts_db_lookup_result_clear(result);
  if (!key_valid(key, error))
    return FALSE;
  /* Shapes are stored without whitespace; only a caller who typed spaces pays for a copy. */
  g_autofree char *squeezed = NULL;
  const char *shape = key->shape;
  if (strpbrk(shape, " \t\n")) {
    squeezed = g_strdup(shape);
    char *w = squeezed;
    for (const char *p = shape; *p; p++)
      if (!g_ascii_isspace(*p))
        *w++ = *p;
    *w = '\0';
    shape = squeezed;
  }
  TsDbKey k = *key;
  k.shape = shape;

  char buf[512];
  g_autofree char *heap = NULL;
  const char *text = key_text(nearest ? 'n' : 'e', &k, buf, sizeof buf, &heap);
  if (lru_get(db, text, result))
    return TRUE;

  int found = lookup_exact(db, &k, shape, result, error);
  if (found == 0 && nearest)
    found = lookup_nearest(db, &k, shape, result, error);
  if (found < 0)
    return FALSE;
  if (found == 0)
    return not_found(db, &k, error);
  g_autofree char *why = NULL;
  if (db->check &&
      !db->check(k.op, result->shape, k.dtype, result->schedule, NULL, result->median_ns, &why,
                 db->check_data)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "schedule cache %s: the cached best of %s %s %s (trial %" G_GINT64_FORMAT
                ") is not a usable schedule: %s; tune the workload again",
                db->path, k.op, result->shape, k.dtype, result->trial_id, why ? why : "?");
    ts_db_lookup_result_clear(result);
    return FALSE;
  }
  /* Misses are not cached: another process may tune the key any moment. */
  lru_put(db, text, result);
  return TRUE;
}

gboolean
ts_db_lookup(TsDb *db, const TsDbKey *key, TsDbLookupResult *result, GError **error)
{
  g_return_val_if_fail(db != NULL && key != NULL && result != NULL, FALSE);
  return lookup(db, key, FALSE, result, error);
}

gboolean
ts_db_lookup_nearest(TsDb *db, const TsDbKey *key, TsDbLookupResult *result, GError **error)
{
  g_return_val_if_fail(db != NULL && key != NULL && result != NULL, FALSE);
  return lookup(db, key, TRUE, result, error);
}
