/* ts-db-profile.c — profiled runs and their timelines. A profile and all its events go in one
 * transaction: a timeline is useful whole or not at all. */
#include "ts-db-private.h"

#include <string.h>

static const char *const EVENT_KINDS[] = {"kernel", "compile", "memcpy", "memset",
                                          "alloc",  "free",    "range"};

static gboolean
kind_known(const char *kind)
{
  for (guint i = 0; i < G_N_ELEMENTS(EVENT_KINDS); i++)
    if (g_strcmp0(kind, EVENT_KINDS[i]) == 0)
      return TRUE;
  return FALSE;
}

void
ts_db_profile_free(TsDbProfile *p)
{
  if (p == NULL)
    return;
  g_free(p->kind);
  g_free(p->schedule);
  g_free(p->summary_json);
  g_free(p->created_at);
  g_free(p);
}

static const char SQL_PROFILE_ADD[] =
  "INSERT INTO profile (workload_id, device_id, toolchain_id, trial_id, kind, schedule, summary,"
  " t0_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
static const char SQL_EVENT_ADD[] =
  "INSERT INTO profile_event (profile_id, seq, kind, name, lane, depth, start_ns, dur_ns, bytes,"
  " address, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

static void
bind_id_or_null(sqlite3_stmt *stmt, int col, gint64 id)
{
  if (id > 0)
    sqlite3_bind_int64(stmt, col, id);
  else
    sqlite3_bind_null(stmt, col);
}

static gboolean
add_profile_tx(TsDb *db, const TsDbProfile *p, const TsDbEvent *events, guint n,
               gint64 *profile_id, GError **error)
{
  gint64 id;
  {
    g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(db, SQL_PROFILE_ADD, error);
    if (!stmt)
      return FALSE;
    bind_id_or_null(stmt, 1, p->workload_id);
    sqlite3_bind_int64(stmt, 2, p->device_id);
    sqlite3_bind_int64(stmt, 3, p->toolchain_id);
    bind_id_or_null(stmt, 4, p->trial_id);
    sqlite3_bind_text(stmt, 5, p->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 6, p->schedule, -1, SQLITE_STATIC);
    sqlite3_bind_text(stmt, 7, p->summary_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(stmt, 8, p->t0_ns);
    int rc = sqlite3_step(stmt);
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "storing a profile (kind 'run' or 'tune', summary JSON)", error);
    id = sqlite3_last_insert_rowid(db->sql);
  }
  g_autoptr(sqlite3_stmt) ev = ts__db_prepare(db, SQL_EVENT_ADD, error);
  if (!ev)
    return FALSE;
  for (guint i = 0; i < n; i++) {
    const TsDbEvent *e = &events[i];
    sqlite3_reset(ev);
    sqlite3_bind_int64(ev, 1, id);
    sqlite3_bind_int64(ev, 2, i);
    sqlite3_bind_text(ev, 3, e->kind, -1, SQLITE_STATIC);
    sqlite3_bind_text(ev, 4, e->name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(ev, 5, e->lane);
    sqlite3_bind_int64(ev, 6, e->depth);
    sqlite3_bind_int64(ev, 7, e->start_ns);
    sqlite3_bind_int64(ev, 8, e->dur_ns);
    sqlite3_bind_int64(ev, 9, (sqlite3_int64)e->bytes);
    sqlite3_bind_int64(ev, 10, (sqlite3_int64)e->address);
    sqlite3_bind_text(ev, 11, e->detail, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ev);
    if (rc != SQLITE_DONE)
      return ts__db_fail(db, rc, "storing a profile event", error);
  }
  if (profile_id)
    *profile_id = id;
  return TRUE;
}

gboolean
ts_db_add_profile(TsDb *db, const TsDbProfile *p, const TsDbEvent *events, guint n_events,
                  gint64 *profile_id, GError **error)
{
  g_return_val_if_fail(db != NULL && p != NULL && (events != NULL || n_events == 0), FALSE);
  for (guint i = 0; i < n_events; i++)
    if (!kind_known(events[i].kind) || events[i].name == NULL) {
      g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID,
                  "profile event %u: unknown kind '%s' or no name (kinds: kernel, compile, "
                  "memcpy, memset, alloc, free, range)",
                  i, events[i].kind ? events[i].kind : "(null)");
      return FALSE;
    }
  if (!ts__db_begin(db, error))
    return FALSE;
  if (!add_profile_tx(db, p, events, n_events, profile_id, error)) {
    ts__db_rollback(db);
    return FALSE;
  }
  return ts__db_commit(db, error);
}

#define PROFILE_COLUMNS                                                                           \
  "p.id, coalesce(p.workload_id, 0), p.device_id, p.toolchain_id, coalesce(p.trial_id, 0),"       \
  " p.kind, p.schedule, p.summary, p.t0_ns, p.created_at,"                                        \
  " (SELECT count(*) FROM profile_event e WHERE e.profile_id = p.id)"

static char *
column_dup(sqlite3_stmt *stmt, int col)
{
  const unsigned char *t = sqlite3_column_text(stmt, col);
  return t ? g_strdup((const char *)t) : NULL;
}

static TsDbProfile *
profile_from_row(sqlite3_stmt *stmt)
{
  TsDbProfile *p = g_new0(TsDbProfile, 1);
  p->id = sqlite3_column_int64(stmt, 0);
  p->workload_id = sqlite3_column_int64(stmt, 1);
  p->device_id = sqlite3_column_int64(stmt, 2);
  p->toolchain_id = sqlite3_column_int64(stmt, 3);
  p->trial_id = sqlite3_column_int64(stmt, 4);
  p->kind = column_dup(stmt, 5);
  p->schedule = column_dup(stmt, 6);
  p->summary_json = column_dup(stmt, 7);
  p->t0_ns = sqlite3_column_int64(stmt, 8);
  p->created_at = column_dup(stmt, 9);
  p->n_events = (guint)sqlite3_column_int64(stmt, 10);
  return p;
}

TsDbProfile *
ts_db_get_profile(TsDb *db, gint64 profile_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt =
    ts__db_prepare(db, "SELECT " PROFILE_COLUMNS " FROM profile p WHERE p.id = ?1", error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, profile_id);
  int rc = ts__db_step(stmt);
  if (rc == SQLITE_ROW)
    return profile_from_row(stmt);
  if (rc == SQLITE_DONE)
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND,
                "schedule cache %s: no profile %" G_GINT64_FORMAT " (see 'tessera-tune profile "
                "--list')",
                db->path, profile_id);
  else
    ts__db_fail(db, rc, "reading a profile", error);
  return NULL;
}

GPtrArray *
ts_db_list_profiles(TsDb *db, gint64 workload_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(
    db,
    "SELECT " PROFILE_COLUMNS " FROM profile p WHERE ?1 = 0 OR p.workload_id = ?1"
    " ORDER BY p.id DESC",
    error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, workload_id);
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_profile_free);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW)
    g_ptr_array_add(out, profile_from_row(stmt));
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "listing profiles", error);
    return NULL;
  }
  return g_steal_pointer(&out);
}

static const char *
column_ref(sqlite3_stmt *stmt, int col)
{
  const unsigned char *t = sqlite3_column_text(stmt, col);
  return t ? g_ref_string_new_intern((const char *)t) : NULL;
}

static const char *
ref_or_null(const char *s)
{
  return s ? g_ref_string_new_intern(s) : NULL;
}

static void
unref_or_null(const char **s)
{
  if (*s)
    g_ref_string_release((char *)*s);
  *s = NULL;
}

void
ts_db_event_own_strings(TsDbEvent *e)
{
  e->kind = ref_or_null(e->kind);
  e->name = ref_or_null(e->name);
  e->detail = ref_or_null(e->detail);
}

void
ts_db_event_release_strings(TsDbEvent *e)
{
  unref_or_null(&e->kind);
  unref_or_null(&e->name);
  unref_or_null(&e->detail);
}

static void
event_clear(gpointer data)
{
  ts_db_event_release_strings(data);
}

GArray *
ts_db_events_new(guint reserve)
{
  GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(TsDbEvent), reserve);
  g_array_set_clear_func(a, event_clear);
  return a;
}

GArray *
ts_db_profile_events(TsDb *db, gint64 profile_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) stmt = ts__db_prepare(
    db,
    "SELECT kind, name, start_ns, dur_ns, bytes, address, lane, depth, detail FROM profile_event"
    " WHERE profile_id = ?1 ORDER BY seq",
    error);
  if (!stmt)
    return NULL;
  sqlite3_bind_int64(stmt, 1, profile_id);
  g_autoptr(GArray) out = ts_db_events_new(0);
  int rc;
  while ((rc = ts__db_step(stmt)) == SQLITE_ROW) {
    TsDbEvent e = {
      .kind = column_ref(stmt, 0),
      .name = column_ref(stmt, 1),
      .start_ns = sqlite3_column_int64(stmt, 2),
      .dur_ns = sqlite3_column_int64(stmt, 3),
      .bytes = (guint64)sqlite3_column_int64(stmt, 4),
      .address = (guint64)sqlite3_column_int64(stmt, 5),
      .lane = (guint32)sqlite3_column_int64(stmt, 6),
      .depth = (guint32)sqlite3_column_int64(stmt, 7),
      .detail = column_ref(stmt, 8),
    };
    g_array_append_val(out, e);
  }
  if (rc != SQLITE_DONE) {
    ts__db_fail(db, rc, "reading profile events", error);
    return NULL;
  }
  return g_steal_pointer(&out);
}
