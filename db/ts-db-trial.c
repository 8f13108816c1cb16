/* ts-db-trial.c — trials (one BEGIN IMMEDIATE transaction each, never stored twice for a key)
 * and the best trial per (workload, device, toolchain). */
#include "ts-db-private.h"

#include <math.h>
#include <string.h>

static const char *const status_names[] = {
    [TS_DB_TRIAL_OK] = "ok",
    [TS_DB_TRIAL_COMPILE_ERROR] = "compile_error",
    [TS_DB_TRIAL_RUNTIME_ERROR] = "runtime_error",
    [TS_DB_TRIAL_TIMEOUT] = "timeout",
    [TS_DB_TRIAL_WRONG_RESULT] = "wrong_result",
};

const char *
ts_db_trial_status_name(TsDbTrialStatus status)
{
  if ((guint)status >= G_N_ELEMENTS(status_names))
    return NULL;
  return status_names[status];
}

gboolean
ts_db_trial_status_parse(const char *name, TsDbTrialStatus *status)
{
  for (guint i = 0; name && i < G_N_ELEMENTS(status_names); i++)
    if (strcmp(name, status_names[i]) == 0) {
      if (status)
        *status = (TsDbTrialStatus)i;
      return TRUE;
    }
  return FALSE;
}

TsDbTrial *
ts_db_trial_new(void)
{
  TsDbTrial *t = g_new0(TsDbTrial, 1);
  t->rel_error = t->median_ns = t->min_ns = t->max_ns = NAN;
  t->predicted_cost = t->compile_ms = NAN;
  t->rank = -1;
  return t;
}

void
ts_db_trial_free(TsDbTrial *trial)
{
  if (!trial)
    return;
  g_free(trial->schedule);
  g_free(trial->hash);
  if (trial->samples_ns)
    g_array_unref(trial->samples_ns);
  g_free(trial->metrics_json);
  g_free(trial->error_text);
  g_free(trial->strategy);
  g_free(trial->created_at);
  g_free(trial->host);
  g_free(trial);
}

char *
ts__db_schedule_hash(const char *schedule)
{
  char *sha = g_compute_checksum_for_string(G_CHECKSUM_SHA256, schedule, -1);
  sha[16] = '\0';
  return sha;
}

gboolean
ts__db_hash_valid(const char *hash)
{
  if (!hash || strlen(hash) != 16)
    return FALSE;
  for (const char *p = hash; *p; p++)
    if (!g_ascii_isdigit(*p) && !(*p >= 'a' && *p <= 'f'))
      return FALSE;
  return TRUE;
}

char *
ts__db_samples_to_json(const GArray *samples)
{
  if (!samples)
    return NULL;
  GString *s = g_string_new("[");
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (guint i = 0; i < samples->len; i++) {
    double v = g_array_index(samples, double, i);
    if (i)
      g_string_append_c(s, ',');
    /* JSON has no NaN or infinity; a sample is a duration, so those never occur legitimately. */
    g_string_append(s, isfinite(v) ? g_ascii_dtostr(buf, sizeof buf, v) : "null");
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

GArray *
ts__db_samples_from_json(const char *text)
{
  if (!text)
    return NULL;
  GArray *a = g_array_new(FALSE, FALSE, sizeof(double));
  const char *p = text;
  while (*p && *p != '[')
    p++;
  if (*p)
    p++;
  while (*p) {
    while (*p == ' ' || *p == ',' || *p == '\n')
      p++;
    if (*p == ']' || !*p)
      break;
    char *end = NULL;
    double v = g_ascii_strtod(p, &end);
    if (end == p) { /* "null" */
      v = NAN;
      while (*p && *p != ',' && *p != ']')
        p++;
    } else {
      p = end;
    }
    g_array_append_val(a, v);
  }
  return a;
}

void
ts__db_bind_double(sqlite3_stmt *stmt, int i, double v)
{
  if (isnan(v))
    sqlite3_bind_null(stmt, i);
  else
    sqlite3_bind_double(stmt, i, v);
}

double
ts__db_column_double(sqlite3_stmt *stmt, int i)
{
  return sqlite3_column_type(stmt, i) == SQLITE_NULL ? NAN : sqlite3_column_double(stmt, i);
}

char *
ts__db_column_text(sqlite3_stmt *stmt, int i)
{
  return g_strdup((const char *)sqlite3_column_text(stmt, i));
}

TsDbTrial *
ts__db_trial_from_row(sqlite3_stmt *stmt)
{
  TsDbTrial *t = ts_db_trial_new();
  t->id = sqlite3_column_int64(stmt, 0);
  t->workload_id = sqlite3_column_int64(stmt, 1);
  t->device_id = sqlite3_column_int64(stmt, 2);
  t->toolchain_id = sqlite3_column_int64(stmt, 3);
  t->run_id = sqlite3_column_int64(stmt, 4); /* NULL reads as 0 */
  t->schedule = ts__db_column_text(stmt, 5);
  t->hash = ts__db_column_text(stmt, 6);
  ts_db_trial_status_parse((const char *)sqlite3_column_text(stmt, 7), &t->status);
  t->rel_error = ts__db_column_double(stmt, 8);
  t->median_ns = ts__db_column_double(stmt, 9);
  t->min_ns = ts__db_column_double(stmt, 10);
  t->max_ns = ts__db_column_double(stmt, 11);
  t->samples_ns = ts__db_samples_from_json((const char *)sqlite3_column_text(stmt, 12));
  t->metrics_json = ts__db_column_text(stmt, 13);
  t->error_text = ts__db_column_text(stmt, 14);
  t->predicted_cost = ts__db_column_double(stmt, 15);
  t->strategy = ts__db_column_text(stmt, 16);
  t->compile_ms = ts__db_column_double(stmt, 17);
  t->created_at = ts__db_column_text(stmt, 18);
  t->host = ts__db_column_text(stmt, 19);
  t->rank = sqlite3_column_type(stmt, 20) == SQLITE_NULL ? -1 : sqlite3_column_int(stmt, 20);
  return t;
}

/* created_at is bound only by import (?18), so exported trials keep their time. */
static const char SQL_TRIAL_ADD[] =
    "INSERT INTO trial (workload_id, device_id, toolchain_id, run_id, schedule, schedule_hash,"
    " status, rel_error, median_ns, min_ns, max_ns, samples, metrics, error, predicted_cost,"
    " strategy, compile_ms, created_at, host, rank)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
    " coalesce(?18, strftime('%Y-%m-%dT%H:%M:%fZ','now')), ?19, ?20)"
    " ON CONFLICT (workload_id, device_id, toolchain_id, schedule_hash) DO NOTHING";
static const char SQL_TRIAL_FIND[] =
    "SELECT id FROM trial WHERE workload_id = ?1 AND device_id = ?2 AND toolchain_id = ?3"
    " AND schedule_hash = ?4";

static const char SQL_CLAIM_RELEASE[] =
    "DELETE FROM trial_claim WHERE workload_id = ?1 AND device_id = ?2 AND toolchain_id = ?3"
    " AND schedule_hash = ?4";

gboolean
ts__db_add_trial_tx(TsDb *db, const TsDbTrial *t, gint64 *trial_id, gboolean *existed,
                    GError **error)
{
  g_autofree char *computed = NULL;
  const char *hash = t->hash;
  if (!hash)
    hash = computed = ts__db_schedule_hash(t->schedule);
  g_autofree char *samples = ts__db_samples_to_json(t->samples_ns);
  {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_TRIAL_ADD, error);
    if (!stmt)
      return FALSE;
    sqlite3_bind_int64(stmt, 1, t->workload_id);
    sqlite3_bind_int64(stmt, 2, t->device_id);
    sqlite3_bind_int64(stmt, 3, t->toolchain_id);
    if (t->run_id > 0)
      sqlite3_bind_int64(stmt, 4, t->run_id);
    sqlite3_bind_text(stmt, 5, t->schedule, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 6, hash, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 7, ts_db_trial_status_name(t->status), -1, SQLITE_STATIC);
    ts__db_bind_double(stmt, 8, t->rel_error);
    ts__db_bind_double(stmt, 9, t->median_ns);
    ts__db_bind_double(stmt, 10, t->min_ns);
    ts__db_bind_double(stmt, 11, t->max_ns);
    sqlite3_bind_text(stmt, 12, samples, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 13, t->metrics_json, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 14, t->error_text, -1, SQLITE_STATIC);
    ts__db_bind_double(stmt, 15, t->predicted_cost);
    sqlite3_bind_text(stmt, 16, t->strategy, -1, SQLITE_STATIC);
    ts__db_bind_double(stmt, 17, t->compile_ms);
    sqlite3_bind_text(stmt, 18, t->created_at, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 19, t->host, -1, SQLITE_STATIC);
    if (t->rank >= 0)
      sqlite3_bind_int(stmt, 20, t->rank);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc,
                         "storing a trial (unknown workload, device, toolchain or run, or "
                         "metrics that are not JSON?)",
                         error);
    if (sqlite3_changes(db->sql) > 0) {
      if (trial_id)
        *trial_id = sqlite3_last_insert_rowid(db->sql);
      if (existed)
        *existed = FALSE;
      /* Measured: whoever claimed the point has nothing left to hold. */
      g_autoptr(sqlite3_stmt) release = ts__db_prepare(db, SQL_CLAIM_RELEASE, error);
      if (!release)
        return FALSE;
      sqlite3_bind_int64(release, 1, t->workload_id);
      sqlite3_bind_int64(release, 2, t->device_id);
      sqlite3_bind_int64(release, 3, t->toolchain_id);
      sqlite3_bind_text(release, 4, hash, -1, SQLITE_STATIC);
      rc = sqlite3_step(release);
      return rc == SQLITE_DONE || ts__db_fail(db, rc, "releasing a point's claim", error);
    }
  }
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_TRIAL_FIND, error);
  if (!stmt)
    return FALSE;
  sqlite3_bind_int64(stmt, 1, t->workload_id);
  sqlite3_bind_int64(stmt, 2, t->device_id);
  sqlite3_bind_int64(stmt, 3, t->toolchain_id);
  sqlite3_bind_text(stmt, 4, hash, -1, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW)
    return ts__db_fail(db, rc, "finding the stored trial", error);
  if (trial_id)
    *trial_id = sqlite3_column_int64(stmt, 0);
  if (existed)
    *existed = TRUE;
  return TRUE;
}

gboolean
ts_db_add_trial(TsDb *db, const TsDbTrial *trial, gint64 *trial_id, gboolean *existed,
                GError **error)
{
  g_return_val_if_fail(db != NULL && trial != NULL, FALSE);
  if (!trial->schedule || !*trial->schedule) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID, "a trial needs its schedule text");
    return FALSE;
  }
  if (trial->hash && !ts__db_hash_valid(trial->hash)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "schedule hash '%s' is not 16 lowercase hex digits", trial->hash);
    return FALSE;
  }
  if (!ts_db_trial_status_name(trial->status)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID, "unknown trial status %d",
                (int)trial->status);
    return FALSE;
  }
  if (!ts__db_begin(db, error))
    return FALSE;
  if (!ts__db_add_trial_tx(db, trial, trial_id, existed, error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

static const char SQL_TRIAL_GET[] = "SELECT " TS__DB_TRIAL_COLUMNS " FROM trial t WHERE t.id = ?1";

TsDbTrial *
ts_db_get_trial(TsDb *db, gint64 trial_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_TRIAL_GET, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, trial_id);
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW)
    return ts__db_trial_from_row(stmt);
  if (rc == SQLITE_DONE)
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "schedule cache %s: no trial %" G_GINT64_FORMAT, db->path, trial_id);
  else
    ts__db_fail(db, rc, "reading a trial", error);
  return NULL;
}

static int
cmp_ns(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

gboolean
ts_db_update_trial_samples(TsDb *db, gint64 trial_id, const GArray *samples_ns, GError **error)
{
  g_return_val_if_fail(db != NULL && samples_ns != NULL, FALSE);
  guint n = samples_ns->len;
  if (n == 0) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID, "a measurement needs samples");
    return FALSE;
  }
  g_autofree double *s = g_memdup2(samples_ns->data, sizeof(double) * n);
  qsort(s, n, sizeof(double), cmp_ns);
  double median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  g_autofree char *json = ts__db_samples_to_json(samples_ns);
  if (!ts__db_begin(db, error))
    return FALSE;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(
    db,
    "UPDATE trial SET samples = ?2, median_ns = ?3, min_ns = ?4, max_ns = ?5"
    " WHERE id = ?1 AND status = 'ok'",
    error);
  if (!stmt) {
    ts__db_rollback(db);
    return FALSE;
  }
  sqlite3_bind_int64(stmt, 1, trial_id);
  sqlite3_bind_text(stmt, 2, json, -1, SQLITE_STATIC);
  sqlite3_bind_double(stmt, 3, median);
  sqlite3_bind_double(stmt, 4, s[0]);
  sqlite3_bind_double(stmt, 5, s[n - 1]);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "storing a trial's new measurement", error);
    ts__db_rollback(db);
    return FALSE;
  }
  if (sqlite3_changes(db->sql) == 0) {
    ts__db_rollback(db);
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "schedule cache %s: no ok trial %" G_GINT64_FORMAT, db->path, trial_id);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

static const char SQL_TRIALS_BEST_FIRST[] =
    "SELECT " TS__DB_TRIAL_COLUMNS " FROM trial t"
    " WHERE t.workload_id = ?1 AND t.device_id = ?2 AND t.toolchain_id = ?3"
    " ORDER BY (t.status != 'ok'), CASE WHEN t.status = 'ok' THEN t.median_ns END, t.id";
static const char SQL_TRIALS_INSERTION[] =
    "SELECT " TS__DB_TRIAL_COLUMNS " FROM trial t"
    " WHERE t.workload_id = ?1 AND t.device_id = ?2 AND t.toolchain_id = ?3 ORDER BY t.id";

GPtrArray *
ts_db_list_trials(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                  TsDbTrialOrder order, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  const char *sql =
      order == TS_DB_ORDER_BEST_FIRST ? SQL_TRIALS_BEST_FIRST : SQL_TRIALS_INSERTION;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, sql, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, workload_id);
  sqlite3_bind_int64(stmt, 2, device_id);
  sqlite3_bind_int64(stmt, 3, toolchain_id);
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_trial_free);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW)
    g_ptr_array_add(out, ts__db_trial_from_row(stmt));
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "listing trials", error);
    return NULL;
  }
  return g_steal_pointer(&out);
}

/* ---- best ---- */

static const char SQL_BEST_CHECK[] =
    "SELECT status FROM trial WHERE id = ?4 AND workload_id = ?1 AND device_id = ?2"
    " AND toolchain_id = ?3";
/* Only a real change rewrites the row, so re-evaluating an unchanged key (a second import)
 * writes nothing. */
static const char SQL_BEST_SET[] =
    "INSERT INTO best (workload_id, device_id, toolchain_id, trial_id) VALUES (?1, ?2, ?3, ?4)"
    " ON CONFLICT (workload_id, device_id, toolchain_id) DO UPDATE"
    " SET trial_id = excluded.trial_id, updated_at = excluded.updated_at"
    " WHERE best.trial_id != excluded.trial_id";
static const char SQL_BEST_GET[] =
    "SELECT " TS__DB_TRIAL_COLUMNS " FROM best b JOIN trial t ON t.id = b.trial_id"
    " WHERE b.workload_id = ?1 AND b.device_id = ?2 AND b.toolchain_id = ?3";
static const char SQL_BEST_PICK[] =
    "SELECT id FROM trial WHERE workload_id = ?1 AND device_id = ?2 AND toolchain_id = ?3"
    " AND status = 'ok' AND median_ns IS NOT NULL ORDER BY median_ns, id LIMIT 1";
static const char SQL_BEST_DELETE[] =
    "DELETE FROM best WHERE workload_id = ?1 AND device_id = ?2 AND toolchain_id = ?3";

static void
bind_key(sqlite3_stmt *stmt, gint64 w, gint64 d, gint64 c)
{
  sqlite3_bind_int64(stmt, 1, w);
  sqlite3_bind_int64(stmt, 2, d);
  sqlite3_bind_int64(stmt, 3, c);
}

static gboolean
best_write(TsDb *db, const char *sql, gint64 w, gint64 d, gint64 c, gint64 trial_id,
           gboolean *changed, GError **error)
{
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, sql, error);
  if (!stmt)
    return FALSE;
  bind_key(stmt, w, d, c);
  if (trial_id)
    sqlite3_bind_int64(stmt, 4, trial_id);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "storing the best trial", error);
  if (changed)
    *changed = sqlite3_changes(db->sql) > 0;
  ts__db_lru_clear(db);
  return TRUE;
}

gboolean
ts_db_set_best(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
               gint64 trial_id, GError **error)
{
  g_return_val_if_fail(db != NULL, FALSE);
  if (!ts__db_begin(db, error))
    return FALSE;
  {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_BEST_CHECK, error);
    if (!stmt) {
      ts__db_rollback(db);
      return FALSE;
    }
    bind_key(stmt, workload_id, device_id, toolchain_id);
    sqlite3_bind_int64(stmt, 4, trial_id);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(stmt, 0), "ok") != 0) {
      if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                    "schedule cache %s: trial %" G_GINT64_FORMAT
                    " is not a verified trial of this workload, device and toolchain",
                    db->path, trial_id);
      else
        ts__db_fail(db, rc, "checking the trial", error);
      sqlite3_reset(stmt);
      ts__db_rollback(db);
      return FALSE;
    }
  }
  if (!best_write(db, SQL_BEST_SET, workload_id, device_id, toolchain_id, trial_id, NULL,
                  error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

TsDbTrial *
ts_db_get_best(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
               GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_BEST_GET, error);
  if (!stmt)
    return NULL;
  bind_key(stmt, workload_id, device_id, toolchain_id);
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW)
    return ts__db_trial_from_row(stmt);
  if (rc == SQLITE_DONE)
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "schedule cache %s: no best trial for workload %" G_GINT64_FORMAT
                ", device %" G_GINT64_FORMAT ", toolchain %" G_GINT64_FORMAT,
                db->path, workload_id, device_id, toolchain_id);
  else
    ts__db_fail(db, rc, "reading the best trial", error);
  return NULL;
}

gboolean
ts__db_refresh_best_tx(TsDb *db, gint64 w, gint64 d, gint64 c, gint64 *best_id,
                       gboolean *changed, GError **error)
{
  gint64 pick = 0;
  {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_BEST_PICK, error);
    if (!stmt)
      return FALSE;
    bind_key(stmt, w, d, c);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW)
      pick = sqlite3_column_int64(stmt, 0);
    else if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "choosing the best trial", error);
  }
  if (best_id)
    *best_id = pick;
  return best_write(db, pick ? SQL_BEST_SET : SQL_BEST_DELETE, w, d, c, pick, changed, error);
}

gboolean
ts_db_refresh_best(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                   gint64 *best_id, GError **error)
{
  g_return_val_if_fail(db != NULL, FALSE);
  if (!ts__db_begin(db, error))
    return FALSE;
  if (!ts__db_refresh_best_tx(db, workload_id, device_id, toolchain_id, best_id, NULL, error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  return ts__db_commit(db, error);
}
