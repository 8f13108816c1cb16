/* ts-db.c — the TsDb handle: opening (path checks, read-only fallbacks, version check before any
 * write, WAL, foreign keys, busy timeout, migration), closing, the error convention, cached
 * prepared statements, transactions with BUSY retry, and the integrity check. */
#include "ts-db-private.h"

#include <errno.h>
#include <stdio.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

G_DEFINE_QUARK(ts-db-error-quark, ts_db_error)

/* 10 s: a tuner commits a trial in well under a millisecond, so a writer that waits this long
 * is stuck behind something else (a long import, a debugger), and saying so beats hanging. */
#define BUSY_TIMEOUT_MS 10000
/* Our own retries on top of the busy handler, for the places SQLite returns SQLITE_BUSY without
 * calling it (journal-mode switch, WAL recovery, a read lock upgraded to write): sleeps of 1, 2,
 * 4 ... 128 ms, then 128 ms each, about 10 s in all. */
#define RETRY_LIMIT 85

static void
backoff(guint attempt)
{
  guint ms = attempt < 7 ? 1u << attempt : 128u;
  g_usleep((gulong)ms * 1000);
}

static TsDbError
code_for(int rc)
{
  switch (rc & 0xff) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return TS_DB_ERROR_BUSY;
  case SQLITE_READONLY:
    return TS_DB_ERROR_READ_ONLY;
  case SQLITE_CORRUPT:
    return TS_DB_ERROR_CORRUPT;
  case SQLITE_NOTADB:
    return TS_DB_ERROR_NOT_A_DB;
  case SQLITE_CANTOPEN:
  case SQLITE_PERM:
  case SQLITE_AUTH:
    return TS_DB_ERROR_OPEN;
  case SQLITE_CONSTRAINT:
  case SQLITE_MISMATCH:
    return TS_DB_ERROR_INVALID;
  default:
    return TS_DB_ERROR_FAILED;
  }
}

gboolean
ts__db_fail_sql(sqlite3 *sql, const char *path, int rc, const char *what, GError **error)
{
  const char *msg = sql ? sqlite3_errmsg(sql) : sqlite3_errstr(rc);
  /* sqlite3_errmsg reports the last call; when that succeeded, the code is all we have. */
  if (!msg || !*msg || strcmp(msg, "not an error") == 0)
    msg = sqlite3_errstr(rc);
  const char *hint = "";
  switch (code_for(rc)) {
  case TS_DB_ERROR_CORRUPT:
    hint = " (restore a backup, or import an export into a new file)";
    break;
  case TS_DB_ERROR_READ_ONLY:
    hint = " (the file or its directory is not writable; open it read-only for lookups)";
    break;
  default:
    break;
  }
  g_set_error(error, TS_DB_ERROR, code_for(rc), "schedule cache %s: %s: %s%s", path, what, msg,
              hint);
  return FALSE;
}

gboolean
ts__db_fail(TsDb *db, int rc, const char *what, GError **error)
{
  return ts__db_fail_sql(db->sql, db->path, rc, what, error);
}

int
ts__db_exec_retry(sqlite3 *sql, const char *text)
{
  int rc;
  for (guint attempt = 0;; attempt++) {
    rc = sqlite3_exec(sql, text, NULL, NULL, NULL);
    if ((rc & 0xff) != SQLITE_BUSY || attempt >= RETRY_LIMIT)
      return rc;
    backoff(attempt);
  }
}

int
ts__db_step(sqlite3_stmt *stmt)
{
  int rc;
  for (guint attempt = 0;; attempt++) {
    rc = sqlite3_step(stmt);
    if ((rc & 0xff) != SQLITE_BUSY || attempt >= RETRY_LIMIT)
      return rc;
    sqlite3_reset(stmt);
    backoff(attempt);
  }
}

sqlite3_stmt *
ts__db_prepare(TsDb *db, const char *sql, GError **error)
{
  sqlite3_stmt *stmt = g_hash_table_lookup(db->stmts, sql);
  if (stmt) {
    sqlite3_reset(stmt);
    sqlite3_clear_bindings(stmt);
    return stmt;
  }
  int rc = sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
  if (rc != SQLITE_OK) {
    ts__db_fail(db, rc, "preparing a query", error);
    return NULL;
  }
  g_hash_table_insert(db->stmts, (gpointer)sql, stmt);
  return stmt;
}

void
ts__db_stmt_release(sqlite3_stmt *stmt)
{
  if (!stmt)
    return;
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
}

static gboolean
refuse_read_only(TsDb *db, GError **error)
{
  g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_READ_ONLY,
              "schedule cache %s: opened read-only; writing needs a read-write open", db->path);
  return FALSE;
}

gboolean
ts__db_begin(TsDb *db, GError **error)
{
  if (db->read_only)
    return refuse_read_only(db, error);
  int rc = ts__db_exec_retry(db->sql, "BEGIN IMMEDIATE");
  if (rc != SQLITE_OK)
    return ts__db_fail(db, rc, "starting a write transaction", error);
  return TRUE;
}

gboolean
ts__db_commit(TsDb *db, GError **error)
{
  int rc = ts__db_exec_retry(db->sql, "COMMIT");
  if (rc != SQLITE_OK) {
    ts__db_fail(db, rc, "committing", error);
    ts__db_rollback(db);
    return FALSE;
  }
  return TRUE;
}

void
ts__db_rollback(TsDb *db)
{
  if (!sqlite3_get_autocommit(db->sql))
    sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
}

void
ts_db_set_schedule_check(TsDb *db, TsDbScheduleCheck check, gpointer data)
{
  g_return_if_fail(db != NULL);
  db->check = check;
  db->check_data = data;
  ts__db_lru_clear(db);
}

char *
ts_db_default_path(void)
{
  return g_build_filename(g_get_user_cache_dir(), "tessera", "schedules.db", NULL);
}

/* "file:" URI for a path, so that ?immutable=1 can be appended; every byte outside the
 * unreserved set is percent-encoded. */
static char *
path_uri(const char *path, const char *query)
{
  g_autofree char *abs = g_canonicalize_filename(path, NULL);
  g_autofree char *escaped = g_uri_escape_string(abs, "/", FALSE);
  return g_strconcat("file:", escaped, query, NULL);
}

/* Runs query and reads the first n integer columns of its one row into values, retrying while
 * another process holds the database busy. */
static int
read_ints(sqlite3 *sql, const char *query, int *values, int n)
{
  sqlite3_stmt *stmt = NULL;
  int rc = sqlite3_prepare_v2(sql, query, -1, &stmt, NULL);
  if (rc == SQLITE_OK) {
    for (guint attempt = 0;; attempt++) {
      rc = sqlite3_step(stmt);
      if ((rc & 0xff) != SQLITE_BUSY || attempt >= RETRY_LIMIT)
        break;
      sqlite3_reset(stmt);
      backoff(attempt);
    }
    if (rc == SQLITE_ROW) {
      for (int i = 0; i < n; i++)
        values[i] = sqlite3_column_int(stmt, i);
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(stmt);
  return rc;
}

static int
read_int_pragma(sqlite3 *sql, const char *query, int *value)
{
  return read_ints(sql, query, value, 1);
}

static sqlite3 *
open_connection(const char *path, gboolean read_only, GError **error)
{
  sqlite3 *sql = NULL;
  int flags = SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
              (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  /* Read-only in a directory we cannot write: a WAL database's reader must create the -shm
   * file beside it, and fails at its first read. No writer can be at work there either (it
   * would need the same files), so the file is read as immutable. */
  g_autofree char *dir = g_path_get_dirname(path);
  gboolean immutable = read_only && access(dir, W_OK) != 0;
  g_autofree char *uri = path_uri(path, immutable ? "?immutable=1" : "");
  int rc = sqlite3_open_v2(uri, &sql, flags, NULL);
  if (rc != SQLITE_OK && read_only && g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    /* A WAL database in a directory we cannot write: SQLite cannot create the -shm file. No
     * writer can be active there either (it would need the same files), so reading it as an
     * immutable file is safe. */
    sqlite3_close(sql);
    sql = NULL;
    g_autofree char *imm = path_uri(path, "?immutable=1");
    rc = sqlite3_open_v2(imm, &sql, flags, NULL);
  }
  if (rc != SQLITE_OK) {
    ts__db_fail_sql(sql, path, rc, "cannot open", error);
    sqlite3_close(sql);
    return NULL;
  }
  sqlite3_extended_result_codes(sql, 1);
  sqlite3_busy_timeout(sql, BUSY_TIMEOUT_MS);
  return sql;
}

/* Version check before anything can write: also the first read, which is where SQLite notices
 * a file that is not a database or a truncated one (page count past the end of the file). */
static gboolean
check_version(sqlite3 *sql, const char *path, gboolean read_only, GError **error)
{
  int version = 0, pages = 0;
  int rc = read_int_pragma(sql, "PRAGMA user_version", &version);
  if (rc == SQLITE_OK)
    rc = read_int_pragma(sql, "PRAGMA page_count", &pages);
  if (rc == SQLITE_OK) {
    /* Reads the schema, which touches every table's root page. */
    int n = 0;
    rc = read_int_pragma(sql, "SELECT count(*) FROM sqlite_schema", &n);
  }
  if (rc != SQLITE_OK)
    return ts__db_fail_sql(sql, path, rc, "cannot read", error);
  /* Newer versions were refused by check_owner (check_header), which runs first. */
  if (read_only && version < ts_db_schema_version()) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NEEDS_UPGRADE,
                "schedule cache %s: schema version %d is older than this build's %d; open it "
                "once for writing to upgrade it",
                path, version, ts_db_schema_version());
    return FALSE;
  }
  return TRUE;
}

static void
finalize_stmt(gpointer stmt)
{
  sqlite3_finalize(stmt);
}

/* The schema version and application id straight from the file header (offsets 60 and 68,
 * big-endian), before SQLite opens the file: even a read of a WAL-mode database creates its
 * -wal and -shm files, and a file from a newer build or another application must be left
 * exactly as it was. FALSE when there is no header to read (a new or empty file, or not
 * SQLite: SQLite then says what is wrong). */
static gboolean
header_identity(const char *path, gint32 *version, guint32 *app_id)
{
  FILE *f = fopen(path, "rb");
  if (!f)
    return FALSE;
  guint8 h[100];
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n != sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
    return FALSE;
  *version = (gint32)((guint32)h[60] << 24 | (guint32)h[61] << 16 | (guint32)h[62] << 8 | h[63]);
  *app_id = (guint32)h[68] << 24 | (guint32)h[69] << 16 | (guint32)h[70] << 8 | h[71];
  return TRUE;
}

static gboolean
refuse_foreign(const char *path, GError **error, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
refuse_foreign(const char *path, GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_FOREIGN,
              "%s is not a Tessera schedule cache: %s; the file was left untouched", path, why);
  return FALSE;
}

/* Decided from the header alone: another application's id, or a version no build writes. */
static gboolean
check_header(const char *path, gint32 version, guint32 app_id, GError **error)
{
  if (app_id != 0 && app_id != TS_DB_APPLICATION_ID)
    return refuse_foreign(path, error, "it is the SQLite database of another application "
                          "(application_id 0x%08x)", app_id);
  if (version < 0)
    return refuse_foreign(path, error, "its schema version %d is not one any build writes "
                          "(they write 1 to %d)", version, ts_db_schema_version());
  if (version > ts_db_schema_version()) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_TOO_NEW,
                "schedule cache %s: schema version %d is newer than this build knows (%d); "
                "upgrade tessera (the file was left untouched)",
                path, version, ts_db_schema_version());
    return FALSE;
  }
  return TRUE;
}

/* Whose file this is, as SQLite sees it (the header on disk can lag behind a WAL file's
 * committed pages): ours by its application id; without one, ours only when it is empty (about
 * to be created) or holds the tables of a cache made before the id was set. Tables of any
 * other kind, or another id, mean it belongs to someone else. Runs before anything writes;
 * *ours_by_id tells whether the id still has to be set. */
static gboolean
check_owner(sqlite3 *sql, const char *path, gboolean *ours_by_id, GError **error)
{
  /* One statement, so one snapshot: another process may be creating the cache right now, and
   * separate reads could see its tables but not yet its version. */
  static const char query[] =
    "SELECT (SELECT application_id FROM pragma_application_id),"
    " (SELECT user_version FROM pragma_user_version),"
    " (SELECT count(*) FROM sqlite_schema WHERE type = 'table'),"
    " (SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND"
    "  name IN ('device', 'toolchain', 'workload', 'trial', 'best'))";
  int v[4] = {0}; /* application_id, user_version, tables, tables of a cache */
  int rc = read_ints(sql, query, v, 4);
  if (rc != SQLITE_OK)
    return ts__db_fail_sql(sql, path, rc, "cannot read", error);
  const int app_id = v[0], version = v[1], n_tables = v[2], n_ours = v[3];
  *ours_by_id = (guint32)app_id == TS_DB_APPLICATION_ID;
  if (!check_header(path, version, (guint32)app_id, error))
    return FALSE;
  if (*ours_by_id || (n_tables == 0 && version == 0) || (version >= 1 && n_ours == 5))
    return TRUE;
  return refuse_foreign(path, error, "it holds %d table%s of its own and schema version %d",
                        n_tables, n_tables == 1 ? "" : "s", version);
}

TsDb *
ts_db_open(const char *path, TsDbOpenFlags flags, GError **error)
{
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  gboolean read_only = (flags & TS_DB_OPEN_READ_ONLY) != 0;
  g_autofree char *owned = path ? g_strdup(path) : ts_db_default_path();

  if (g_file_test(owned, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_OPEN,
                "schedule cache %s: is a directory, not a database file", owned);
    return NULL;
  }
  if (read_only && !g_file_test(owned, G_FILE_TEST_EXISTS)) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_OPEN,
                "schedule cache %s: no such file (nothing tuned yet?)", owned);
    return NULL;
  }
  if (!read_only) {
    g_autofree char *dir = g_path_get_dirname(owned);
    if (g_mkdir_with_parents(dir, 0755) != 0) {
      int saved = errno;
      g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_OPEN,
                  "schedule cache %s: cannot create directory %s: %s", owned, dir,
                  g_strerror(saved));
      return NULL;
    }
  }

  /* What the header on disk already shows is refused before SQLite opens the file at all. */
  gint32 on_disk = 0;
  guint32 app_id = 0;
  if (header_identity(owned, &on_disk, &app_id) && !check_header(owned, on_disk, app_id, error))
    return NULL;

  sqlite3 *sql = open_connection(owned, read_only, error);
  if (!sql)
    return NULL;
  /* Whose file it is first: another application's is refused as such, whatever its version. */
  gboolean ours_by_id = FALSE;
  if (!check_owner(sql, owned, &ours_by_id, error) ||
      !check_version(sql, owned, read_only, error)) {
    sqlite3_close(sql);
    return NULL;
  }
  if (!read_only && sqlite3_db_readonly(sql, "main") == 1) {
    /* SQLite silently falls back to read-only for a file it cannot write; say so now rather
     * than at the first trial. */
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_READ_ONLY,
                "schedule cache %s: the file is not writable; open it read-only for lookups",
                owned);
    sqlite3_close(sql);
    return NULL;
  }
  if (!read_only) {
    /* WAL: readers never block the writer and a killed writer loses only its open
     * transaction. synchronous=NORMAL is durable against process crashes in WAL mode, which is
     * the failure a tuner sees (a killed worker or tuner), at a fraction of FULL's fsyncs. */
    int rc = ts__db_exec_retry(sql, "PRAGMA journal_mode=WAL");
    if (rc == SQLITE_OK)
      rc = ts__db_exec_retry(sql, "PRAGMA synchronous=NORMAL");
    if (rc != SQLITE_OK) {
      ts__db_fail_sql(sql, owned, rc, "cannot switch to WAL mode", error);
      sqlite3_close(sql);
      return NULL;
    }
    if (!ts__db_migrate(sql, owned, error)) {
      sqlite3_close(sql);
      return NULL;
    }
    if (!ours_by_id) {
      /* A new cache, or one made before the id: claim it (a header field; no schema change). */
      rc = ts__db_exec_retry(sql, "PRAGMA application_id = " G_STRINGIFY(TS_DB_APPLICATION_ID));
      if (rc != SQLITE_OK) {
        ts__db_fail_sql(sql, owned, rc, "cannot set the application id", error);
        sqlite3_close(sql);
        return NULL;
      }
    }
  }
  int rc = ts__db_exec_retry(sql, "PRAGMA foreign_keys=ON");
  if (rc != SQLITE_OK) {
    ts__db_fail_sql(sql, owned, rc, "cannot enable foreign keys", error);
    sqlite3_close(sql);
    return NULL;
  }

  TsDb *db = g_new0(TsDb, 1);
  db->sql = sql;
  db->path = g_steal_pointer(&owned);
  db->read_only = read_only;
  db->stmts = g_hash_table_new_full(NULL, NULL, NULL, finalize_stmt);
  ts__db_lru_init(db);
  return db;
}

void
ts_db_close(TsDb *db)
{
  if (!db)
    return;
  ts__db_lru_destroy(db);
  g_hash_table_unref(db->stmts);
  sqlite3_close(db->sql);
  g_free(db->path);
  g_free(db);
}

const char *
ts_db_path(const TsDb *db)
{
  g_return_val_if_fail(db != NULL, NULL);
  return db->path;
}

gboolean
ts_db_is_read_only(const TsDb *db)
{
  g_return_val_if_fail(db != NULL, TRUE);
  return db->read_only;
}

gboolean
ts_db_check_integrity(TsDb *db, char **message)
{
  g_return_val_if_fail(db != NULL, FALSE);
  sqlite3_stmt *stmt = NULL;
  int rc = sqlite3_prepare_v2(db->sql, "PRAGMA integrity_check", -1, &stmt, NULL);
  g_autoptr(GString) report = g_string_new(NULL);
  if (rc == SQLITE_OK) {
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      if (report->len)
        g_string_append_c(report, '\n');
      g_string_append(report, (const char *)sqlite3_column_text(stmt, 0));
    }
  }
  if (rc != SQLITE_DONE && rc != SQLITE_OK) {
    g_string_printf(report, "%s: integrity check failed: %s", db->path, sqlite3_errmsg(db->sql));
    sqlite3_finalize(stmt);
    if (message)
      *message = g_strdup(report->str);
    return FALSE;
  }
  sqlite3_finalize(stmt);
  gboolean ok = strcmp(report->str, "ok") == 0;
  if (message)
    *message = g_strdup(report->str);
  return ok;
}
