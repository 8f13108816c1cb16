/* ts-db-keys.c — the rows trials hang off: devices (and their measured peaks), toolchains,
 * workloads, tuning runs, plus learned models. ensure_* is insert-or-get on the natural key:
 * a plain SELECT first, so the usual case (the row exists) takes no write lock. */
#include "ts-db-private.h"
#include <unistd.h>
#include <signal.h>
#include <errno.h>

#include <string.h>

char *
ts__db_canonical_shape(const char *shape, GError **error)
{
  GString *out = g_string_new(NULL);
  for (const char *p = shape; *p; p++)
    if (!g_ascii_isspace(*p))
      g_string_append_c(out, *p);
  /* NAME=INT(,NAME=INT)*, names C identifiers, values positive decimal integers. */
  const char *p = out->str;
  gboolean ok = *p != '\0';
  while (ok && *p) {
    if (!(g_ascii_isalpha(*p) || *p == '_')) {
      ok = FALSE;
      break;
    }
    while (g_ascii_isalnum(*p) || *p == '_')
      p++;
    if (*p++ != '=' || !g_ascii_isdigit(*p)) {
      ok = FALSE;
      break;
    }
    while (g_ascii_isdigit(*p))
      p++;
    if (*p == ',' && p[1])
      p++;
    else if (*p)
      ok = FALSE;
  }
  if (!ok) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "shape '%s' is not of the form NAME=INT,NAME=INT,... (e.g. M=1024,N=1024)",
                shape);
    g_string_free(out, TRUE);
    return NULL;
  }
  return g_string_free(out, FALSE);
}

static const char SQL_DEVICE_GET[] =
    "SELECT id FROM device WHERE backend = ?1 AND name = ?2 AND arch = ?3";
static const char SQL_DEVICE_ADD[] =
    "INSERT INTO device (backend, name, arch, compute_units, memory_bytes, l1_bytes, l2_bytes,"
    " l3_bytes, smem_per_block, vector_bits) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"
    " ON CONFLICT DO NOTHING";

/* SELECT id by key: >0 found, 0 absent, -1 error. */
static gint64
select_id(TsDb *db, sqlite3_stmt *stmt, GError **error)
{
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW)
    return sqlite3_column_int64(stmt, 0);
  if (rc == SQLITE_DONE)
    return 0;
  ts__db_fail(db, rc, "reading", error);
  return -1;
}

static gint64
device_get(TsDb *db, const TsDbDevice *d, GError **error)
{
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_DEVICE_GET, error);
  if (!stmt)
    return -1;
  sqlite3_bind_text(stmt, 1, d->backend, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 2, d->name, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, d->arch, -1, SQLITE_STATIC);
  return select_id(db, stmt, error);
}

gint64
ts__db_ensure_device_tx(TsDb *db, const TsDbDevice *d, gboolean *added, GError **error)
{
  {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_DEVICE_ADD, error);
    if (!stmt)
      return 0;
    sqlite3_bind_text(stmt, 1, d->backend, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 2, d->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 3, d->arch, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 4, d->compute_units);
    sqlite3_bind_int64(stmt, 5, (sqlite3_int64)d->memory_bytes);
    sqlite3_bind_int64(stmt, 6, (sqlite3_int64)d->l1_bytes);
    sqlite3_bind_int64(stmt, 7, (sqlite3_int64)d->l2_bytes);
    sqlite3_bind_int64(stmt, 8, (sqlite3_int64)d->l3_bytes);
    sqlite3_bind_int64(stmt, 9, (sqlite3_int64)d->smem_per_block);
    sqlite3_bind_int64(stmt, 10, d->vector_bits);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "storing a device", error), 0;
    if (added)
      *added = sqlite3_changes(db->sql) > 0;
  }
  gint64 id = device_get(db, d, error);
  return id > 0 ? id : 0;
}

static gboolean
device_valid(const TsDbDevice *d, GError **error)
{
  if (!d->backend || !*d->backend || !d->name || !*d->name || !d->arch || !*d->arch) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "a device needs a backend, a name and an arch");
    return FALSE;
  }
  return TRUE;
}

gint64
ts_db_ensure_device(TsDb *db, const TsDbDevice *device, GError **error)
{
  g_return_val_if_fail(db != NULL && device != NULL, 0);
  if (!device_valid(device, error))
    return 0;
  gint64 id = device_get(db, device, error);
  if (id != 0)
    return id > 0 ? id : 0;
  if (!ts__db_begin(db, error))
    return 0;
  id = ts__db_ensure_device_tx(db, device, NULL, error);
  if (!id || !ts__db_commit(db, error)) {
    ts__db_rollback(db);
    return 0;
  }
  return id;
}

static const char SQL_PEAKS_SET[] = "UPDATE device SET peaks = ?2 WHERE id = ?1";
static const char SQL_PEAKS_GET[] = "SELECT peaks FROM device WHERE id = ?1";

gboolean
ts_db_set_device_peaks(TsDb *db, gint64 device_id, const char *peaks_json, GError **error)
{
  g_return_val_if_fail(db != NULL, FALSE);
  if (!ts__db_begin(db, error))
    return FALSE;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_PEAKS_SET, error);
  if (!stmt) {
    ts__db_rollback(db);
    return FALSE;
  }
  sqlite3_bind_int64(stmt, 1, device_id);
  sqlite3_bind_text(stmt, 2, peaks_json, -1, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "storing device peaks (must be valid JSON)", error);
    ts__db_rollback(db);
    return FALSE;
  }
  if (sqlite3_changes(db->sql) == 0) {
    ts__db_rollback(db);
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND, "schedule cache %s: no device %" G_GINT64_FORMAT,
                db->path, device_id);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

char *
ts_db_get_device_peaks(TsDb *db, gint64 device_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_PEAKS_GET, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, device_id);
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW)
    return g_strdup((const char *)sqlite3_column_text(stmt, 0));
  if (rc == SQLITE_DONE)
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "schedule cache %s: no device %" G_GINT64_FORMAT, db->path, device_id);
  else
    ts__db_fail(db, rc, "reading device peaks", error);
  return NULL;
}

/* ---- toolchains and workloads ---- */

static const char SQL_TOOLCHAIN_GET[] =
    "SELECT id FROM toolchain WHERE compiler = ?1 AND kgen_version = ?2";
static const char SQL_TOOLCHAIN_ADD[] =
    "INSERT INTO toolchain (compiler, kgen_version) VALUES (?1, ?2) ON CONFLICT DO NOTHING";
static const char SQL_WORKLOAD_GET[] =
    "SELECT id FROM workload WHERE op = ?1 AND shape = ?2 AND dtype = ?3";
static const char SQL_WORKLOAD_ADD[] =
    "INSERT INTO workload (op, shape, dtype) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING";

/* Get (and, when `insert`, insert first) a row keyed by up to three texts. */
static gint64
key_row(TsDb *db, const char *get_sql, const char *add_sql, const char *const *texts, guint n,
        gboolean insert, gboolean *added, GError **error)
{
  if (insert) {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, add_sql, error);
    if (!stmt)
      return -1;
    for (guint i = 0; i < n; i++)
      sqlite3_bind_text(stmt, (int)i + 1, texts[i], -1, SQLITE_STATIC);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "storing a key row", error), -1;
    if (added)
      *added = sqlite3_changes(db->sql) > 0;
  }
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, get_sql, error);
  if (!stmt)
    return -1;
  for (guint i = 0; i < n; i++)
    sqlite3_bind_text(stmt, (int)i + 1, texts[i], -1, SQLITE_STATIC);
  return select_id(db, stmt, error);
}

gint64
ts__db_ensure_toolchain_tx(TsDb *db, const char *compiler, const char *kgen, gboolean *added,
                           GError **error)
{
  const char *texts[] = {compiler, kgen};
  gint64 id = key_row(db, SQL_TOOLCHAIN_GET, SQL_TOOLCHAIN_ADD, texts, 2, TRUE, added, error);
  return id > 0 ? id : 0;
}

gint64
ts__db_ensure_workload_tx(TsDb *db, const char *op, const char *shape, const char *dtype,
                          gboolean *added, GError **error)
{
  g_autofree char *canon = ts__db_canonical_shape(shape, error);
  if (!canon)
    return 0;
  const char *texts[] = {op, canon, dtype};
  gint64 id = key_row(db, SQL_WORKLOAD_GET, SQL_WORKLOAD_ADD, texts, 3, TRUE, added, error);
  return id > 0 ? id : 0;
}

static gint64
ensure_key(TsDb *db, const char *get_sql, const char *add_sql, const char *const *texts,
           guint n, GError **error)
{
  gint64 id = key_row(db, get_sql, add_sql, texts, n, FALSE, NULL, error);
  if (id != 0)
    return id > 0 ? id : 0;
  if (!ts__db_begin(db, error))
    return 0;
  id = key_row(db, get_sql, add_sql, texts, n, TRUE, NULL, error);
  if (id <= 0 || !ts__db_commit(db, error)) {
    ts__db_rollback(db);
    return 0;
  }
  return id;
}

gint64
ts_db_ensure_toolchain(TsDb *db, const char *compiler, const char *kgen_version, GError **error)
{
  g_return_val_if_fail(db != NULL, 0);
  if (!compiler || !*compiler || !kgen_version || !*kgen_version) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "a toolchain needs a compiler identity and a kernel-generator version");
    return 0;
  }
  const char *texts[] = {compiler, kgen_version};
  return ensure_key(db, SQL_TOOLCHAIN_GET, SQL_TOOLCHAIN_ADD, texts, 2, error);
}

gint64
ts_db_ensure_workload(TsDb *db, const char *op, const char *shape, const char *dtype,
                      GError **error)
{
  g_return_val_if_fail(db != NULL, 0);
  if (!op || !*op || !shape || !dtype || !*dtype) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "a workload needs an op, a shape and a dtype");
    return 0;
  }
  g_autofree char *canon = ts__db_canonical_shape(shape, error);
  if (!canon)
    return 0;
  const char *texts[] = {op, canon, dtype};
  return ensure_key(db, SQL_WORKLOAD_GET, SQL_WORKLOAD_ADD, texts, 3, error);
}

/* ---- tuning runs ---- */

static const char SQL_RUN_BEGIN[] =
    "INSERT INTO tune_run (workload_id, device_id, toolchain_id, strategy, seed, budget, pid,"
    " host) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/* Runs left 'running' by a process of this host that no longer exists. */
static const char SQL_TUNE_STALE[] =
    "SELECT id, pid FROM tune_run WHERE status = 'running' AND host = ?1 AND pid IS NOT NULL"
    " AND pid != ?2";
static const char SQL_TUNE_REAP[] =
    "UPDATE tune_run SET status = 'interrupted',"
    " finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1 AND status = 'running'";
static const char SQL_GATE_STALE[] =
    "SELECT id, pid FROM gate_run WHERE status = 'running' AND host = ?1 AND pid IS NOT NULL"
    " AND pid != ?2";
static const char SQL_GATE_REAP[] =
    "UPDATE gate_run SET status = 'interrupted',"
    " finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1 AND status = 'running'";

gboolean
ts__db_reap_runs(TsDb *db, gboolean gate, GError **error)
{
  g_autoptr(sqlite3_stmt) stale = ts__db_prepare(db, gate ? SQL_GATE_STALE : SQL_TUNE_STALE, error);
  if (!stale)
    return FALSE;
  sqlite3_bind_text(stale, 1, g_get_host_name(), -1, SQLITE_STATIC);
  sqlite3_bind_int64(stale, 2, (sqlite3_int64)getpid());
  g_autoptr(GArray) dead = g_array_new(FALSE, FALSE, sizeof(gint64));
  int rc;
  while ((rc = sqlite3_step(stale)) == SQLITE_ROW) {
    gint64 id = sqlite3_column_int64(stale, 0), pid = sqlite3_column_int64(stale, 1);
    /* ESRCH only: a process we may not signal (EPERM) still lives. */
    if (pid > 0 && pid <= G_MAXINT && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      g_array_append_val(dead, id);
  }
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "looking for runs whose process is gone", error);
  for (guint i = 0; i < dead->len; i++) {
    g_autoptr(sqlite3_stmt) reap = ts__db_prepare(db, gate ? SQL_GATE_REAP : SQL_TUNE_REAP, error);
    if (!reap)
      return FALSE;
    sqlite3_bind_int64(reap, 1, g_array_index(dead, gint64, i));
    rc = sqlite3_step(reap);
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "closing a run whose process is gone", error);
  }
  return TRUE;
}

void
ts__db_bind_owner(sqlite3_stmt *stmt, int pid_index)
{
  sqlite3_bind_int64(stmt, pid_index, (sqlite3_int64)getpid());
  sqlite3_bind_text(stmt, pid_index + 1, g_get_host_name(), -1, SQLITE_STATIC);
}
static const char SQL_RUN_RELEASE[] = "DELETE FROM trial_claim WHERE run_id = ?1";
static const char SQL_RUN_END[] =
    "UPDATE tune_run SET status = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now')"
    " WHERE id = ?1";

gint64
ts_db_begin_run(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                const char *strategy, guint64 seed, const char *budget, GError **error)
{
  g_return_val_if_fail(db != NULL && strategy != NULL, 0);
  if (!ts__db_begin(db, error))
    return 0;
  if (!ts__db_reap_runs(db, FALSE, error)) {
    ts__db_rollback(db);
    return 0;
  }
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_RUN_BEGIN, error);
  if (!stmt) {
    ts__db_rollback(db);
    return 0;
  }
  sqlite3_bind_int64(stmt, 1, workload_id);
  sqlite3_bind_int64(stmt, 2, device_id);
  sqlite3_bind_int64(stmt, 3, toolchain_id);
  sqlite3_bind_text(stmt, 4, strategy, -1, SQLITE_STATIC);
  /* SQLite integers are signed; the seed's bits are kept as they are. */
  sqlite3_bind_int64(stmt, 5, (sqlite3_int64)seed);
  sqlite3_bind_text(stmt, 6, budget ? budget : "", -1, SQLITE_STATIC);
  ts__db_bind_owner(stmt, 7);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "starting a tuning run (unknown workload, device or toolchain?)", error);
    ts__db_rollback(db);
    return 0;
  }
  gint64 id = sqlite3_last_insert_rowid(db->sql);
  return ts__db_commit(db, error) ? id : 0;
}

gboolean
ts_db_end_run(TsDb *db, gint64 run_id, const char *status, GError **error)
{
  g_return_val_if_fail(db != NULL && status != NULL, FALSE);
  if (strcmp(status, "done") != 0 && strcmp(status, "interrupted") != 0 &&
      strcmp(status, "failed") != 0) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                "run status '%s' is not one of done, interrupted, failed", status);
    return FALSE;
  }
  if (!ts__db_begin(db, error))
    return FALSE;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_RUN_END, error);
  if (!stmt) {
    ts__db_rollback(db);
    return FALSE;
  }
  sqlite3_bind_int64(stmt, 1, run_id);
  sqlite3_bind_text(stmt, 2, status, -1, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "ending a tuning run", error);
    ts__db_rollback(db);
    return FALSE;
  }
  if (sqlite3_changes(db->sql) == 0) {
    ts__db_rollback(db);
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "schedule cache %s: no tuning run %" G_GINT64_FORMAT, db->path, run_id);
    return FALSE;
  }
  g_autoptr(sqlite3_stmt) release = ts__db_prepare(db, SQL_RUN_RELEASE, error);
  if (!release) {
    ts__db_rollback(db);
    return FALSE;
  }
  sqlite3_bind_int64(release, 1, run_id);
  rc = sqlite3_step(release);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "releasing a run's claims", error);
    ts__db_rollback(db);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

/* ---- models ---- */

static const char SQL_MODEL_ADD[] =
    "INSERT INTO model (kind, blob, trained_on, quality) VALUES (?1, ?2, ?3, ?4)";
static const char SQL_MODEL_GET[] =
    "SELECT id, blob, trained_on, quality FROM model WHERE kind = ?1 ORDER BY id DESC LIMIT 1";

gint64
ts_db_add_model(TsDb *db, const char *kind, GBytes *blob, const char *trained_on_json,
                const char *quality_json, GError **error)
{
  g_return_val_if_fail(db != NULL && kind != NULL && blob != NULL, 0);
  if (!ts__db_begin(db, error))
    return 0;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_MODEL_ADD, error);
  if (!stmt) {
    ts__db_rollback(db);
    return 0;
  }
  gsize len = 0;
  const void *data = g_bytes_get_data(blob, &len);
  sqlite3_bind_text(stmt, 1, kind, -1, SQLITE_STATIC);
  sqlite3_bind_blob64(stmt, 2, data ? data : "", len, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, trained_on_json, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 4, quality_json, -1, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "storing a model (trained_on and quality must be JSON)", error);
    ts__db_rollback(db);
    return 0;
  }
  gint64 id = sqlite3_last_insert_rowid(db->sql);
  return ts__db_commit(db, error) ? id : 0;
}

GBytes *
ts_db_get_model(TsDb *db, const char *kind, gint64 *model_id, char **trained_on_json,
                char **quality_json, GError **error)
{
  g_return_val_if_fail(db != NULL && kind != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_MODEL_GET, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_text(stmt, 1, kind, -1, SQLITE_STATIC);
  int rc = ts__db_step(stmt);
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE)
      g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                  "schedule cache %s: no model of kind '%s'", db->path, kind);
    else
      ts__db_fail(db, rc, "reading a model", error);
    return NULL;
  }
  if (model_id)
    *model_id = sqlite3_column_int64(stmt, 0);
  if (trained_on_json)
    *trained_on_json = g_strdup((const char *)sqlite3_column_text(stmt, 2));
  if (quality_json)
    *quality_json = g_strdup((const char *)sqlite3_column_text(stmt, 3));
  const void *data = sqlite3_column_blob(stmt, 1);
  return g_bytes_new(data, (gsize)sqlite3_column_bytes(stmt, 1));
}
