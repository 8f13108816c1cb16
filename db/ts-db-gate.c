/* ts-db-gate.c — the perf gate's runs (a baseline or a check of a suite on one device), their
 * per-workload results, and the kernel binaries those measured, stored once per hash. A run is
 * written while "running" and frozen once ended, so a stored baseline never changes under the
 * checks that compare against it. */
#include "ts-db-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

static const char *const run_kinds[] = {"baseline", "check", NULL};
static const char *const end_statuses[] = {"done", "failed", "interrupted", NULL};
static const char *const run_verdicts[] = {"pass", "regression", "failed", NULL};
static const char *const result_verdicts[] = {"pass",   "improved", "regression",
                                              "failed", "new",      NULL};

static gboolean fail_with(TsDb *db, TsDbError code, GError **error, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

/* Errors of our own, prefixed like ts__db_fail's so every message names the file. */
static gboolean
fail_with(TsDb *db, TsDbError code, GError **error, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *what = g_strdup_vprintf(format, args);
  va_end(args);
  g_set_error(error, TS_DB_ERROR, code, "schedule cache %s: %s", db->path, what);
  return FALSE;
}

/* value NULL is accepted only when optional. */
static gboolean
check_one_of(TsDb *db, const char *value, gboolean optional, const char *const *names,
             const char *what, GError **error)
{
  if (!value && optional)
    return TRUE;
  for (const char *const *n = names; value && *n; n++)
    if (strcmp(value, *n) == 0)
      return TRUE;
  g_autofree char *list = g_strjoinv(", ", (char **)names);
  return fail_with(db, TS_DB_ERROR_INVALID, error, "%s '%s' is not one of %s", what,
                   value ? value : "(none)", list);
}

/* Lowercase hex, as git commits and the backends' artifact hashes are written. */
static gboolean
hex_valid(const char *s)
{
  if (!s || !*s)
    return FALSE;
  for (; *s; s++)
    if (!g_ascii_isdigit(*s) && !(*s >= 'a' && *s <= 'f'))
      return FALSE;
  return TRUE;
}

void
ts_db_gate_run_free(TsDbGateRun *run)
{
  if (!run)
    return;
  g_free(run->kind);
  g_free(run->suite);
  g_free(run->git_commit);
  g_free(run->label);
  g_free(run->status);
  g_free(run->verdict);
  g_free(run->created_at);
  g_free(run->finished_at);
  g_free(run->device_name);
  g_free(run->device_arch);
  g_free(run->toolchain);
  g_free(run);
}

TsDbGateResult *
ts_db_gate_result_new(void)
{
  TsDbGateResult *r = g_new0(TsDbGateResult, 1);
  r->median_ns = r->base_median_ns = NAN;
  r->change = r->p_value = r->threshold = NAN;
  return r;
}

void
ts_db_gate_result_free(TsDbGateResult *result)
{
  if (!result)
    return;
  g_free(result->name);
  g_free(result->schedule);
  g_free(result->error_text);
  g_clear_pointer(&result->samples_ns, g_array_unref);
  g_free(result->artifact_hash);
  g_clear_pointer(&result->artifact, g_bytes_unref);
  g_free(result->entry);
  g_free(result->launch_ints);
  g_free(result->backend);
  g_clear_pointer(&result->base_samples_ns, g_array_unref);
  g_free(result->verdict);
  g_free(result->note);
  g_free(result);
}

/* ---- runs: begin and end ---- */

static const char SQL_GATE_BEGIN[] =
    "INSERT INTO gate_run (kind, suite, device_id, toolchain_id, git_commit, git_dirty, label,"
    " base_run_id, pid, host) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
static const char SQL_GATE_RUN_STATE[] = "SELECT kind, status FROM gate_run WHERE id = ?1";
static const char SQL_GATE_END[] =
    "UPDATE gate_run SET status = ?2, verdict = ?3,"
    " finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ?1";

gint64
ts_db_gate_begin(TsDb *db, const char *kind, const char *suite, gint64 device_id,
                 gint64 toolchain_id, const char *git_commit, gboolean git_dirty, const char *label,
                 gint64 base_run_id, GError **error)
{
  g_return_val_if_fail(db != NULL, 0);
  if (!check_one_of(db, kind, FALSE, run_kinds, "gate run kind", error))
    return 0;
  if (!suite || !*suite)
    return fail_with(db, TS_DB_ERROR_INVALID, error, "a gate run needs its suite's name"), 0;
  if (!ts__db_begin(db, error))
    return 0;
  if (!ts__db_reap_runs(db, TRUE, error)) {
    ts__db_rollback(db);
    return 0;
  }
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_BEGIN, error);
  if (!stmt) {
    ts__db_rollback(db);
    return 0;
  }
  sqlite3_bind_text(stmt, 1, kind, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 2, suite, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 3, device_id);
  sqlite3_bind_int64(stmt, 4, toolchain_id);
  sqlite3_bind_text(stmt, 5, git_commit, -1, SQLITE_STATIC);
  sqlite3_bind_int(stmt, 6, git_dirty ? 1 : 0);
  sqlite3_bind_text(stmt, 7, label, -1, SQLITE_STATIC);
  if (base_run_id != 0)
    sqlite3_bind_int64(stmt, 8, base_run_id);
  ts__db_bind_owner(stmt, 9);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "starting a gate run (unknown device, toolchain or base run?)", error);
    ts__db_rollback(db);
    return 0;
  }
  gint64 id = sqlite3_last_insert_rowid(db->sql);
  return ts__db_commit(db, error) ? id : 0;
}

/* A run's kind and status: 1 found, 0 no such run, -1 error. */
static int
run_state(TsDb *db, gint64 run_id, char **kind, char **status, GError **error)
{
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_RUN_STATE, error);
  if (!stmt)
    return -1;
  sqlite3_bind_int64(stmt, 1, run_id);
  int rc = sqlite3_step(stmt);
  if (rc == SQLITE_DONE)
    return 0;
  if (rc != SQLITE_ROW)
    return ts__db_fail(db, rc, "reading a gate run", error), -1;
  *kind = ts__db_column_text(stmt, 0);
  *status = ts__db_column_text(stmt, 1);
  return 1;
}

static gboolean
gate_end_tx(TsDb *db, gint64 run_id, const char *status, const char *verdict, GError **error)
{
  g_autofree char *kind = NULL, *current = NULL;
  int found = run_state(db, run_id, &kind, &current, error);
  if (found < 0)
    return FALSE;
  if (found == 0)
    return fail_with(db, TS_DB_ERROR_NOT_FOUND, error, "no gate run %" G_GINT64_FORMAT, run_id);
  if (strcmp(current, "running") != 0)
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "gate run %" G_GINT64_FORMAT " already ended (%s)", run_id, current);
  if (verdict && strcmp(kind, "baseline") == 0)
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "gate run %" G_GINT64_FORMAT " is a baseline: it has no verdict", run_id);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_END, error);
  if (!stmt)
    return FALSE;
  sqlite3_bind_int64(stmt, 1, run_id);
  sqlite3_bind_text(stmt, 2, status, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, verdict, -1, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "ending a gate run", error);
  return TRUE;
}

gboolean
ts_db_gate_end(TsDb *db, gint64 run_id, const char *status, const char *verdict, GError **error)
{
  g_return_val_if_fail(db != NULL, FALSE);
  if (!check_one_of(db, status, FALSE, end_statuses, "gate run status", error) ||
      !check_one_of(db, verdict, TRUE, run_verdicts, "gate run verdict", error))
    return FALSE;
  if (!ts__db_begin(db, error))
    return FALSE;
  if (!gate_end_tx(db, run_id, status, verdict, error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

/* ---- results ---- */

/* Conflicts on the hash only: a binary already stored by any run is kept as it is. */
static const char SQL_GATE_ARTIFACT_ADD[] =
    "INSERT INTO gate_artifact (hash, backend, entry, bytes) VALUES (?1, ?2, ?3, ?4)"
    " ON CONFLICT (hash) DO NOTHING";
static const char SQL_GATE_RESULT_ADD[] =
    "INSERT INTO gate_result (run_id, name, workload_id, schedule, status, error, samples,"
    " median_ns, artifact_hash, base_samples, base_median_ns, change, p_value, threshold,"
    " verdict, remeasured, note, launch_ints)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)";

static gboolean
result_valid(TsDb *db, const TsDbGateResult *r, GError **error)
{
  if (!r->name || !*r->name)
    return fail_with(db, TS_DB_ERROR_INVALID, error, "a gate result needs its workload's name");
  if (!ts_db_trial_status_name(r->status))
    return fail_with(db, TS_DB_ERROR_INVALID, error, "gate result %s: unknown status %d", r->name,
                     (int)r->status);
  if (!check_one_of(db, r->verdict, TRUE, result_verdicts, "gate result verdict", error))
    return FALSE;
  if (r->artifact_hash && !hex_valid(r->artifact_hash))
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "gate result %s: artifact hash '%s' is not lowercase hex", r->name,
                     r->artifact_hash);
  /* Bytes without a hash could never be found again. */
  if (r->artifact && !r->artifact_hash)
    return fail_with(db, TS_DB_ERROR_INVALID, error, "gate result %s: an artifact needs its hash",
                     r->name);
  if (r->artifact && (!r->entry || !*r->entry || !r->backend || !*r->backend))
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "gate result %s: artifact %s needs its entry symbol and backend", r->name,
                     r->artifact_hash);
  if (r->launch_ints &&
      (!*r->launch_ints || r->launch_ints[strspn(r->launch_ints, "0123456789,-")] != '\0'))
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "gate result %s: launch ints '%s' are not comma-separated integers",
                     r->name, r->launch_ints);
  if (r->artifact) {
    /* The hash is how a later check finds the binary and proves it is the one measured. */
    g_autofree char *actual = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, r->artifact);
    if (g_strcmp0(actual, r->artifact_hash) != 0)
      return fail_with(db, TS_DB_ERROR_INVALID, error,
                       "gate result %s: artifact hash %s is not the SHA-256 of its bytes (%s)",
                       r->name, r->artifact_hash, actual);
  }
  return TRUE;
}

static gboolean
run_accepts_results(TsDb *db, gint64 run_id, GError **error)
{
  g_autofree char *kind = NULL, *status = NULL;
  int found = run_state(db, run_id, &kind, &status, error);
  if (found < 0)
    return FALSE;
  if (found == 0)
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "no gate run %" G_GINT64_FORMAT " to add a result to", run_id);
  if (strcmp(status, "running") != 0)
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "gate run %" G_GINT64_FORMAT " already ended (%s): no more results", run_id,
                     status);
  return TRUE;
}

static gboolean
artifact_add_tx(TsDb *db, const TsDbGateResult *r, GError **error)
{
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_ARTIFACT_ADD, error);
  if (!stmt)
    return FALSE;
  gsize len = 0;
  const void *data = g_bytes_get_data(r->artifact, &len);
  sqlite3_bind_text(stmt, 1, r->artifact_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 2, r->backend, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, r->entry, -1, SQLITE_STATIC);
  /* An empty GBytes may have no data pointer; a NULL blob would read as no artifact. */
  sqlite3_bind_blob64(stmt, 4, data ? data : "", len, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "storing a kernel artifact", error);
  return TRUE;
}

static gboolean
result_insert_tx(TsDb *db, const TsDbGateResult *r, gint64 *result_id, GError **error)
{
  g_autofree char *samples = ts__db_samples_to_json(r->samples_ns);
  g_autofree char *base_samples = ts__db_samples_to_json(r->base_samples_ns);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_RESULT_ADD, error);
  if (!stmt)
    return FALSE;
  sqlite3_bind_int64(stmt, 1, r->run_id);
  sqlite3_bind_text(stmt, 2, r->name, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 3, r->workload_id);
  sqlite3_bind_text(stmt, 4, r->schedule, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 5, ts_db_trial_status_name(r->status), -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 6, r->error_text, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 7, samples, -1, SQLITE_STATIC);
  ts__db_bind_double(stmt, 8, r->median_ns);
  sqlite3_bind_text(stmt, 9, r->artifact_hash, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 10, base_samples, -1, SQLITE_STATIC);
  ts__db_bind_double(stmt, 11, r->base_median_ns);
  ts__db_bind_double(stmt, 12, r->change);
  ts__db_bind_double(stmt, 13, r->p_value);
  ts__db_bind_double(stmt, 14, r->threshold);
  sqlite3_bind_text(stmt, 15, r->verdict, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 16, r->remeasured);
  sqlite3_bind_text(stmt, 17, r->note, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 18, r->launch_ints, -1, SQLITE_STATIC);
  int rc = sqlite3_step(stmt);
  if (rc == SQLITE_CONSTRAINT_UNIQUE)
    return fail_with(db, TS_DB_ERROR_INVALID, error,
                     "run %" G_GINT64_FORMAT " already has a result named %s", r->run_id, r->name);
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc,
                       "storing a gate result (unknown workload, or an artifact hash never "
                       "stored?)",
                       error);
  *result_id = sqlite3_last_insert_rowid(db->sql);
  return TRUE;
}

static gboolean
add_result_tx(TsDb *db, const TsDbGateResult *r, gint64 *result_id, GError **error)
{
  if (!run_accepts_results(db, r->run_id, error))
    return FALSE;
  if (r->artifact && !artifact_add_tx(db, r, error))
    return FALSE;
  return result_insert_tx(db, r, result_id, error);
}

gboolean
ts_db_gate_add_result(TsDb *db, const TsDbGateResult *result, gint64 *result_id, GError **error)
{
  g_return_val_if_fail(db != NULL && result != NULL, FALSE);
  if (!result_valid(db, result, error))
    return FALSE;
  if (!ts__db_begin(db, error))
    return FALSE;
  gint64 id = 0;
  if (!add_result_tx(db, result, &id, error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  if (!ts__db_commit(db, error))
    return FALSE;
  if (result_id)
    *result_id = id;
  return TRUE;
}

/* ---- reading runs ---- */

#define GATE_RUN_SELECT                                                                            \
  "SELECT r.id, r.kind, r.suite, r.device_id, r.toolchain_id, r.git_commit, r.git_dirty,"          \
  " r.label, r.base_run_id, r.status, r.verdict, r.created_at, r.finished_at, d.name, d.arch,"     \
  " t.compiler || ' ' || t.kgen_version,"                                                          \
  " (SELECT count(*) FROM gate_result x WHERE x.run_id = r.id)"                                    \
  " FROM gate_run r JOIN device d ON d.id = r.device_id"                                           \
  " JOIN toolchain t ON t.id = r.toolchain_id"

static const char SQL_GATE_RUN_GET[] = GATE_RUN_SELECT " WHERE r.id = ?1";
static const char SQL_GATE_RUNS[] =
    GATE_RUN_SELECT " WHERE (?1 IS NULL OR r.suite = ?1) AND (?2 = 0 OR r.device_id = ?2)"
                    " AND (?3 IS NULL OR r.kind = ?3) ORDER BY r.id DESC LIMIT ?4";
static const char SQL_GATE_BASELINE[] =
    GATE_RUN_SELECT " WHERE r.suite = ?1 AND r.device_id = ?2 AND r.kind = 'baseline'"
                    " AND r.status = 'done' ORDER BY r.id DESC LIMIT 1";
/* GLOB rather than LIKE: case-sensitive, so the commit index can serve the prefix; the pattern
 * is validated hex followed by '*', so it holds no other wildcard. */
static const char SQL_GATE_BY_COMMIT[] =
    GATE_RUN_SELECT " WHERE r.suite = ?1 AND r.device_id = ?2 AND r.status = 'done'"
                    " AND r.git_commit GLOB ?3 ORDER BY r.id DESC";

static TsDbGateRun *
run_from_row(sqlite3_stmt *stmt)
{
  TsDbGateRun *run = g_new0(TsDbGateRun, 1);
  run->id = sqlite3_column_int64(stmt, 0);
  run->kind = ts__db_column_text(stmt, 1);
  run->suite = ts__db_column_text(stmt, 2);
  run->device_id = sqlite3_column_int64(stmt, 3);
  run->toolchain_id = sqlite3_column_int64(stmt, 4);
  run->git_commit = ts__db_column_text(stmt, 5);
  run->git_dirty = sqlite3_column_int(stmt, 6) != 0;
  run->label = ts__db_column_text(stmt, 7);
  run->base_run_id = sqlite3_column_int64(stmt, 8); /* NULL reads as 0 */
  run->status = ts__db_column_text(stmt, 9);
  run->verdict = ts__db_column_text(stmt, 10);
  run->created_at = ts__db_column_text(stmt, 11);
  run->finished_at = ts__db_column_text(stmt, 12);
  run->device_name = ts__db_column_text(stmt, 13);
  run->device_arch = ts__db_column_text(stmt, 14);
  run->toolchain = ts__db_column_text(stmt, 15);
  run->n_results = (guint)sqlite3_column_int64(stmt, 16);
  return run;
}

/* Steps a bound run query: its first row, or NULL with NOT_FOUND (`missing` says what). */
static TsDbGateRun *
run_one(TsDb *db, sqlite3_stmt *stmt, const char *missing, GError **error)
{
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW)
    return run_from_row(stmt);
  if (rc == SQLITE_DONE)
    fail_with(db, TS_DB_ERROR_NOT_FOUND, error, "%s", missing);
  else
    ts__db_fail(db, rc, "reading a gate run", error);
  return NULL;
}

/* Steps a bound run query to the end: every row, or NULL on error. */
static GPtrArray *
run_all(TsDb *db, sqlite3_stmt *stmt, GError **error)
{
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_gate_run_free);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW)
    g_ptr_array_add(out, run_from_row(stmt));
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "listing gate runs", error);
    return NULL;
  }
  return g_steal_pointer(&out);
}

TsDbGateRun *
ts_db_gate_get_run(TsDb *db, gint64 run_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_RUN_GET, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, run_id);
  g_autofree char *missing = g_strdup_printf("no gate run %" G_GINT64_FORMAT, run_id);
  return run_one(db, stmt, missing, error);
}

GPtrArray *
ts_db_gate_list_runs(TsDb *db, const char *suite, gint64 device_id, const char *kind, guint limit,
                     GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  if (!check_one_of(db, kind, TRUE, run_kinds, "gate run kind", error))
    return NULL;
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_RUNS, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_text(stmt, 1, suite, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 2, device_id);
  sqlite3_bind_text(stmt, 3, kind, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 4, limit ? (sqlite3_int64)limit : -1); /* LIMIT -1: none */
  return run_all(db, stmt, error);
}

TsDbGateRun *
ts_db_gate_find_baseline(TsDb *db, const char *suite, gint64 device_id, GError **error)
{
  g_return_val_if_fail(db != NULL && suite != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_BASELINE, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_text(stmt, 1, suite, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 2, device_id);
  g_autofree char *missing = g_strdup_printf("no baseline of suite %s on this device", suite);
  return run_one(db, stmt, missing, error);
}

GPtrArray *
ts_db_gate_find_by_commit(TsDb *db, const char *suite, gint64 device_id, const char *commit_prefix,
                          GError **error)
{
  g_return_val_if_fail(db != NULL && suite != NULL && commit_prefix != NULL, NULL);
  g_autofree char *prefix = g_ascii_strdown(commit_prefix, -1);
  if (strlen(prefix) < 4 || !hex_valid(prefix)) {
    fail_with(db, TS_DB_ERROR_INVALID, error, "commit prefix '%s' is not at least 4 hex digits",
              commit_prefix);
    return NULL;
  }
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_BY_COMMIT, error);
  if (!stmt)
    return NULL;
  g_autofree char *pattern = g_strconcat(prefix, "*", NULL);
  sqlite3_bind_text(stmt, 1, suite, -1, SQLITE_STATIC);
  sqlite3_bind_int64(stmt, 2, device_id);
  sqlite3_bind_text(stmt, 3, pattern, -1, SQLITE_STATIC);
  return run_all(db, stmt, error);
}

/* ---- reading results and artifacts ---- */

/* The artifact's entry and backend come with every result; its bytes only when asked (?2),
 * since a listing for a report has no use for megabytes of binaries. */
static const char SQL_GATE_RESULTS[] =
    "SELECT r.id, r.run_id, r.name, r.workload_id, r.schedule, r.status, r.error, r.samples,"
    " r.median_ns, r.artifact_hash, a.entry, a.backend, r.base_samples, r.base_median_ns,"
    " r.change, r.p_value, r.threshold, r.verdict, r.remeasured, r.note,"
    " CASE WHEN ?2 THEN a.bytes END, r.launch_ints"
    " FROM gate_result r LEFT JOIN gate_artifact a ON a.hash = r.artifact_hash"
    " WHERE r.run_id = ?1 ORDER BY r.id";
static const char SQL_GATE_ARTIFACT_GET[] =
    "SELECT bytes, entry, backend FROM gate_artifact WHERE hash = ?1";

static GBytes *
column_bytes(sqlite3_stmt *stmt, int i)
{
  const void *data = sqlite3_column_blob(stmt, i);
  return g_bytes_new(data, (gsize)sqlite3_column_bytes(stmt, i));
}

static TsDbGateResult *
result_from_row(sqlite3_stmt *stmt)
{
  TsDbGateResult *r = ts_db_gate_result_new();
  r->id = sqlite3_column_int64(stmt, 0);
  r->run_id = sqlite3_column_int64(stmt, 1);
  r->name = ts__db_column_text(stmt, 2);
  r->workload_id = sqlite3_column_int64(stmt, 3);
  r->schedule = ts__db_column_text(stmt, 4);
  ts_db_trial_status_parse((const char *)sqlite3_column_text(stmt, 5), &r->status);
  r->error_text = ts__db_column_text(stmt, 6);
  r->samples_ns = ts__db_samples_from_json((const char *)sqlite3_column_text(stmt, 7));
  r->median_ns = ts__db_column_double(stmt, 8);
  r->artifact_hash = ts__db_column_text(stmt, 9);
  r->entry = ts__db_column_text(stmt, 10);
  r->backend = ts__db_column_text(stmt, 11);
  r->base_samples_ns = ts__db_samples_from_json((const char *)sqlite3_column_text(stmt, 12));
  r->base_median_ns = ts__db_column_double(stmt, 13);
  r->change = ts__db_column_double(stmt, 14);
  r->p_value = ts__db_column_double(stmt, 15);
  r->threshold = ts__db_column_double(stmt, 16);
  r->verdict = ts__db_column_text(stmt, 17);
  r->remeasured = (guint)sqlite3_column_int64(stmt, 18);
  r->note = ts__db_column_text(stmt, 19);
  if (sqlite3_column_type(stmt, 20) != SQLITE_NULL)
    r->artifact = column_bytes(stmt, 20);
  r->launch_ints = ts__db_column_text(stmt, 21);
  return r;
}

GPtrArray *
ts_db_gate_list_results(TsDb *db, gint64 run_id, gboolean with_artifacts, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_RESULTS, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, run_id);
  sqlite3_bind_int(stmt, 2, with_artifacts ? 1 : 0);
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_gate_result_free);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW)
    g_ptr_array_add(out, result_from_row(stmt));
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "listing gate results", error);
    return NULL;
  }
  return g_steal_pointer(&out);
}

GBytes *
ts_db_gate_get_artifact(TsDb *db, const char *hash, char **entry, char **backend, GError **error)
{
  g_return_val_if_fail(db != NULL && hash != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GATE_ARTIFACT_GET, error);
  if (!stmt)
    return NULL;
  sqlite3_bind_text(stmt, 1, hash, -1, SQLITE_STATIC);
  int rc = ts__db_step(stmt);
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE)
      fail_with(db, TS_DB_ERROR_NOT_FOUND, error, "no kernel artifact %s", hash);
    else
      ts__db_fail(db, rc, "reading a kernel artifact", error);
    return NULL;
  }
  g_autoptr(GBytes) bytes = column_bytes(stmt, 0);
  /* Bytes that are not what was stored under this hash are someone else's code: never hand
   * them to a loader. */
  g_autofree char *actual = bytes ? g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, bytes) : NULL;
  if (g_strcmp0(actual, hash) != 0) {
    fail_with(db, TS_DB_ERROR_CORRUPT, error,
              "kernel artifact %s in %s: its bytes hash to %s; the stored binary was altered "
              "and is not loaded", hash, db->path, actual ? actual : "nothing");
    return NULL;
  }
  if (entry)
    *entry = ts__db_column_text(stmt, 1);
  if (backend)
    *backend = ts__db_column_text(stmt, 2);
  return g_steal_pointer(&bytes);
}
