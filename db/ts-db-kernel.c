/* ts-db-kernel.c — the sources of kernel-language kernels tuned into the cache: an op named
 * "kernel:NAME@HASH" exists only in a process that registered its source, so the cache keeps
 * the source beside the trials, and whoever reads the trials can lower the op again. */
#include "ts-db-private.h"

static const char SQL_PUT[] =
    "INSERT INTO kernel_source (op, path, source) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING";
static const char SQL_GET[] = "SELECT path, source FROM kernel_source WHERE op = ?1";

gboolean
ts_db_put_kernel_source(TsDb *db, const char *op, const char *path, const char *source,
                        GError **error)
{
  g_return_val_if_fail(db != NULL && op != NULL && source != NULL, FALSE);
  /* Read first: the usual case (stored by an earlier run) takes no write lock, and works on a
   * read-only cache. */
  g_autoptr(sqlite3_stmt) get = ts__db_prepare(db, SQL_GET, error);
  if (get == NULL)
    return FALSE;
  sqlite3_bind_text(get, 1, op, -1, SQLITE_STATIC);
  int rc = ts__db_step(get);
  if (rc == SQLITE_ROW)
    return TRUE;
  if (rc != SQLITE_DONE)
    return ts__db_fail(db, rc, "reading a kernel's source", error);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_PUT, error);
  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_text(stmt, 1, op, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 2, path, -1, SQLITE_STATIC);
  sqlite3_bind_text(stmt, 3, source, -1, SQLITE_STATIC);
  rc = ts__db_step(stmt);
  return rc == SQLITE_DONE || ts__db_fail(db, rc, "storing a kernel's source", error);
}

gboolean
ts_db_get_kernel_source(TsDb *db, const char *op, char **path, char **source, GError **error)
{
  g_return_val_if_fail(db != NULL && op != NULL && source != NULL, FALSE);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_GET, error);
  if (stmt == NULL)
    return FALSE;
  sqlite3_bind_text(stmt, 1, op, -1, SQLITE_STATIC);
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_DONE) {
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "the cache holds no source for %s (it was tuned before caches kept kernel "
                "sources, or in another cache): give its file with --kernel", op);
    return FALSE;
  }
  if (rc != SQLITE_ROW)
    return ts__db_fail(db, rc, "reading a kernel's source", error);
  if (path)
    *path = ts__db_column_text(stmt, 0);
  *source = ts__db_column_text(stmt, 1);
  return TRUE;
}
