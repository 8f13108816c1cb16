/* ts-db-claim.c — points claimed by running tuners.
 *
 * Tuners started on one key at once (a job array, two terminals, the same seed by accident)
 * would otherwise measure the same points: each resumes from the trials stored when it began
 * and then proposes on its own. Before it measures a point, a tuner claims it; a point stored
 * already or claimed by another live run is not measured again, and the tuner reads the other's
 * result when it is stored. A claim dies with its run: when the run ends, when the point's
 * trial is stored, or when the run is found to have been killed (its process gone). */
#include "ts-db-private.h"

static const char SQL_TRIAL_ID[] =
  "SELECT id FROM trial WHERE workload_id = ?1 AND device_id = ?2 AND toolchain_id = ?3"
  " AND schedule_hash = ?4";
static const char SQL_HOLDER[] =
  "SELECT c.run_id, r.status FROM trial_claim c LEFT JOIN tune_run r ON r.id = c.run_id"
  " WHERE c.workload_id = ?1 AND c.device_id = ?2 AND c.toolchain_id = ?3"
  " AND c.schedule_hash = ?4";
static const char SQL_CLAIM[] =
  "INSERT OR REPLACE INTO trial_claim (workload_id, device_id, toolchain_id, schedule_hash,"
  " run_id) VALUES (?1, ?2, ?3, ?4, ?5)";

static void
bind_key(sqlite3_stmt *stmt, gint64 w, gint64 d, gint64 t, const char *hash)
{
  sqlite3_bind_int64(stmt, 1, w);
  sqlite3_bind_int64(stmt, 2, d);
  sqlite3_bind_int64(stmt, 3, t);
  sqlite3_bind_text(stmt, 4, hash, -1, SQLITE_STATIC);
}

/* The run holding a live claim on the point, or 0. */
static gboolean
live_holder(TsDb *db, gint64 w, gint64 d, gint64 t, const char *hash, gint64 *run_id,
            GError **error)
{
  *run_id = 0;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_HOLDER, error);
  if (!stmt)
    return FALSE;
  bind_key(stmt, w, d, t, hash);
  int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) {
    const char *status = (const char *)sqlite3_column_text(stmt, 1);
    if (g_strcmp0(status, "running") == 0)
      *run_id = sqlite3_column_int64(stmt, 0);
    return TRUE;
  }
  return rc == SQLITE_DONE || ts__db_fail(db, rc, "reading a point's claim", error);
}

static gboolean
claim_tx(TsDb *db, gint64 run_id, gint64 w, gint64 d, gint64 t, const char *hash,
         TsDbClaim *claim, gint64 *other, GError **error)
{
  {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_TRIAL_ID, error);
    if (!stmt)
      return FALSE;
    bind_key(stmt, w, d, t, hash);
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      *claim = TS_DB_CLAIM_STORED;
      *other = sqlite3_column_int64(stmt, 0);
      return TRUE;
    }
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "looking for a point's trial", error);
  }
  gint64 holder = 0;
  if (!live_holder(db, w, d, t, hash, &holder, error))
    return FALSE;
  if (holder != 0 && holder != run_id) {
    /* A holder killed without ending its run still reads 'running': close such runs (on this
     * host) and look again. */
    if (!ts__db_reap_runs(db, FALSE, error) || !live_holder(db, w, d, t, hash, &holder, error))
      return FALSE;
  }
  if (holder != 0 && holder != run_id) {
    *claim = TS_DB_CLAIM_TAKEN;
    *other = holder;
    return TRUE;
  }
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_CLAIM, error);
  if (!stmt)
    return FALSE;
  bind_key(stmt, w, d, t, hash);
  sqlite3_bind_int64(stmt, 5, run_id);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "claiming a point (unknown run?)", error);
  *claim = TS_DB_CLAIM_OURS;
  *other = 0;
  return TRUE;
}

gboolean
ts_db_claim_point(TsDb *db, gint64 run_id, gint64 workload_id, gint64 device_id,
                  gint64 toolchain_id, const char *schedule_hash, TsDbClaim *claim,
                  gint64 *other_id, GError **error)
{
  g_return_val_if_fail(db != NULL && schedule_hash != NULL && claim != NULL, FALSE);
  gint64 other = 0;
  if (!ts__db_begin(db, error))
    return FALSE;
  if (!claim_tx(db, run_id, workload_id, device_id, toolchain_id, schedule_hash, claim, &other,
                error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  if (other_id)
    *other_id = other;
  return ts__db_commit(db, error);
}
