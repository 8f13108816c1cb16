/* ts-db-private.h — what the files of db/ share: the handle, cached prepared statements,
 * transactions with BUSY retry, error mapping, the lookup LRU. Never installed. */
#pragma once

#include <sqlite3.h>

#include "ts-db.h"

struct _TsDb {
  sqlite3 *sql;
  char *path;
  gboolean read_only;
  /* Prepared statements keyed by their static SQL text's address: every query in db/ is a
   * static string, so the address names it. */
  GHashTable *stmts;
  /* Lookup LRU: key text -> Entry, most recent at the head of `order`. */
  GHashTable *lru;
  GQueue lru_order;
  guint lru_capacity;
  TsDbScheduleCheck check; /* ts_db_set_schedule_check, or NULL */
  gpointer check_data;
};

/* A cached statement, reset and unbound; g_autoptr(sqlite3_stmt) resets it again when the
 * caller is done, so no read transaction outlives its query. NULL (error set) on failure. */
sqlite3_stmt *ts__db_prepare(TsDb *db, const char *sql, GError **error);
void ts__db_stmt_release(sqlite3_stmt *stmt);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, ts__db_stmt_release)

/* Sets *error from an SQLite result code and the connection's message: "PATH: WHAT: message".
 * Always returns FALSE. */
gboolean ts__db_fail(TsDb *db, int rc, const char *what, GError **error);
/* Same, for a connection that may not belong to a TsDb yet (open, migrations). */
gboolean ts__db_fail_sql(sqlite3 *sql, const char *path, int rc, const char *what,
                         GError **error);

/* BEGIN IMMEDIATE / COMMIT, retried with backoff on SQLITE_BUSY; a read-only handle is
 * TS_DB_ERROR_READ_ONLY before SQLite is asked. Rollback never fails the caller. */
gboolean ts__db_begin(TsDb *db, GError **error);
gboolean ts__db_commit(TsDb *db, GError **error);
void ts__db_rollback(TsDb *db);
/* sqlite3_exec with the same BUSY retry (pragmas, migrations). */
int ts__db_exec_retry(sqlite3 *sql, const char *text);
/* sqlite3_step with the same retry, for statements outside an explicit transaction. */
int ts__db_step(sqlite3_stmt *stmt);

/* Schema: migrates a read-write connection to the current version inside BEGIN IMMEDIATE. */
gboolean ts__db_migrate(sqlite3 *sql, const char *path, GError **error);

/* Inside a transaction (no BEGIN of their own); used by the public wrappers and by import. */
gint64 ts__db_ensure_device_tx(TsDb *db, const TsDbDevice *device, gboolean *added,
                               GError **error);
gint64 ts__db_ensure_toolchain_tx(TsDb *db, const char *compiler, const char *kgen,
                                  gboolean *added, GError **error);
gint64 ts__db_ensure_workload_tx(TsDb *db, const char *op, const char *shape, const char *dtype,
                                 gboolean *added, GError **error);
gboolean ts__db_add_trial_tx(TsDb *db, const TsDbTrial *trial, gint64 *trial_id,
                             gboolean *existed, GError **error);
gboolean ts__db_refresh_best_tx(TsDb *db, gint64 workload_id, gint64 device_id,
                                gint64 toolchain_id, gint64 *best_id, gboolean *changed,
                                GError **error);

/* Shape text without whitespace, checked to be NAME=INT(,NAME=INT)*. NULL when malformed. */
char *ts__db_canonical_shape(const char *shape, GError **error);
/* First 16 hex digits of SHA-256(schedule), as ts_sched_point_hash. */
char *ts__db_schedule_hash(const char *schedule);
gboolean ts__db_hash_valid(const char *hash);
/* Samples as JSON array text and back (NULL <-> NULL). */
char *ts__db_samples_to_json(const GArray *samples);
GArray *ts__db_samples_from_json(const char *text);
/* NAN <-> NULL for numbers; NULL <-> NULL for text (the copy is g_free'd by the caller). */
void ts__db_bind_double(sqlite3_stmt *stmt, int i, double v);
double ts__db_column_double(sqlite3_stmt *stmt, int i);
char *ts__db_column_text(sqlite3_stmt *stmt, int i);
/* A trial from a row whose columns are TS__DB_TRIAL_COLUMNS, in that order. */
#define TS__DB_TRIAL_COLUMNS                                                                      \
  "t.id, t.workload_id, t.device_id, t.toolchain_id, t.run_id, t.schedule, t.schedule_hash, "     \
  "t.status, t.rel_error, t.median_ns, t.min_ns, t.max_ns, t.samples, t.metrics, t.error, "      \
  "t.predicted_cost, t.strategy, t.compile_ms, t.created_at, t.host, t.rank"
TsDbTrial *ts__db_trial_from_row(sqlite3_stmt *stmt);

/* LRU. */
void ts__db_lru_init(TsDb *db);
void ts__db_lru_destroy(TsDb *db);
void ts__db_lru_clear(TsDb *db);

/* Closes as 'interrupted' the tuning runs (gate FALSE) or gate runs (TRUE) left 'running' by a
 * process of this host that no longer exists (killed: kill -9, the OOM killer). Inside a write
 * transaction. */
gboolean ts__db_reap_runs(TsDb *db, gboolean gate, GError **error);
/* Binds this process's id and host name to parameters pid_index and pid_index + 1. */
void ts__db_bind_owner(sqlite3_stmt *stmt, int pid_index);
