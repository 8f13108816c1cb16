/* ts-db-list.c — what the cache holds, key by key: the training set of the learned cost model
 * and the per-workload listings are built from this; and the tuning runs of a key. */
#include "ts-db-private.h"

static const char SQL_KEYS[] =
  "SELECT t.workload_id, t.device_id, t.toolchain_id, w.op, w.shape, w.dtype,"
  "  d.backend, d.name, d.arch, d.compute_units, d.memory_bytes, d.l1_bytes, d.l2_bytes,"
  "  d.l3_bytes, d.smem_per_block, d.vector_bits, c.compiler, c.kgen_version,"
  "  count(*), sum(t.status = 'ok')"
  " FROM trial t JOIN workload w ON w.id = t.workload_id JOIN device d ON d.id = t.device_id"
  " JOIN toolchain c ON c.id = t.toolchain_id"
  " GROUP BY t.workload_id, t.device_id, t.toolchain_id"
  " ORDER BY t.workload_id, t.device_id, t.toolchain_id";

void
ts_db_trial_key_free(TsDbTrialKey *k)
{
  if (k == NULL)
    return;
  g_free(k->op);
  g_free(k->shape);
  g_free(k->dtype);
  g_free((char *)k->device.backend);
  g_free((char *)k->device.name);
  g_free((char *)k->device.arch);
  g_free(k->compiler);
  g_free(k->kgen_version);
  g_free(k);
}

GPtrArray *
ts_db_list_trial_keys(TsDb *db, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_KEYS, error);
  if (!stmt)
    return NULL;
  g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_trial_key_free);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW) {
    TsDbTrialKey *k = g_new0(TsDbTrialKey, 1);
    k->workload_id = sqlite3_column_int64(stmt, 0);
    k->device_id = sqlite3_column_int64(stmt, 1);
    k->toolchain_id = sqlite3_column_int64(stmt, 2);
    k->op = ts__db_column_text(stmt, 3);
    k->shape = ts__db_column_text(stmt, 4);
    k->dtype = ts__db_column_text(stmt, 5);
    k->device.backend = ts__db_column_text(stmt, 6);
    k->device.name = ts__db_column_text(stmt, 7);
    k->device.arch = ts__db_column_text(stmt, 8);
    k->device.compute_units = (guint)sqlite3_column_int64(stmt, 9);
    k->device.memory_bytes = (guint64)sqlite3_column_int64(stmt, 10);
    k->device.l1_bytes = (guint64)sqlite3_column_int64(stmt, 11);
    k->device.l2_bytes = (guint64)sqlite3_column_int64(stmt, 12);
    k->device.l3_bytes = (guint64)sqlite3_column_int64(stmt, 13);
    k->device.smem_per_block = (guint64)sqlite3_column_int64(stmt, 14);
    k->device.vector_bits = (guint)sqlite3_column_int64(stmt, 15);
    k->compiler = ts__db_column_text(stmt, 16);
    k->kgen_version = ts__db_column_text(stmt, 17);
    k->n_trials = (guint)sqlite3_column_int64(stmt, 18);
    k->n_ok = (guint)sqlite3_column_int64(stmt, 19);
    g_ptr_array_add(keys, k);
  }
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "listing the stored workloads", error);
    return NULL;
  }
  return g_steal_pointer(&keys);
}

static const char SQL_RUNS[] =
  "SELECT id, workload_id, device_id, toolchain_id, strategy, seed, budget, status, started_at,"
  "  finished_at"
  " FROM tune_run WHERE workload_id = ?1 AND device_id = ?2 AND toolchain_id = ?3"
  " ORDER BY id";

void
ts_db_run_free(TsDbRun *run)
{
  if (run == NULL)
    return;
  g_free(run->strategy);
  g_free(run->budget);
  g_free(run->status);
  g_free(run->started_at);
  g_free(run->finished_at);
  g_free(run);
}

GPtrArray *
ts_db_list_runs(TsDb *db, gint64 workload_id, gint64 device_id, gint64 toolchain_id,
                GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_RUNS, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, workload_id);
  sqlite3_bind_int64(stmt, 2, device_id);
  sqlite3_bind_int64(stmt, 3, toolchain_id);
  g_autoptr(GPtrArray) runs = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_run_free);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW) {
    TsDbRun *r = g_new0(TsDbRun, 1);
    r->id = sqlite3_column_int64(stmt, 0);
    r->workload_id = sqlite3_column_int64(stmt, 1);
    r->device_id = sqlite3_column_int64(stmt, 2);
    r->toolchain_id = sqlite3_column_int64(stmt, 3);
    r->strategy = ts__db_column_text(stmt, 4);
    /* Stored as the signed integer with the seed's bits (ts_db_begin_run). */
    r->seed = (guint64)sqlite3_column_int64(stmt, 5);
    r->budget = ts__db_column_text(stmt, 6);
    r->status = ts__db_column_text(stmt, 7);
    r->started_at = ts__db_column_text(stmt, 8);
    r->finished_at = ts__db_column_text(stmt, 9);
    g_ptr_array_add(runs, r);
  }
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "listing the tuning runs", error);
    return NULL;
  }
  return g_steal_pointer(&runs);
}
