/* ts-db-schema.c — the schema as a table of migrations: step N takes PRAGMA user_version from
 * N-1 to N. Steps are append-only; a shipped step is never edited, a change is a new step.
 * Migrations run inside BEGIN IMMEDIATE and re-read the version there, so several processes
 * opening a fresh file at once migrate it exactly once. */
#include "ts-db-private.h"

/* Timestamps are ISO 8601 UTC with milliseconds: readable in the sqlite3 shell and sortable as
 * text. */
#define NOW "(strftime('%Y-%m-%dT%H:%M:%fZ','now'))"

static const char *const migrations[] = {
    /* 1: the schedule cache. */
    "CREATE TABLE device ("
    "  id INTEGER PRIMARY KEY,"
    "  backend TEXT NOT NULL,"
    "  name TEXT NOT NULL,"
    "  arch TEXT NOT NULL,"
    "  compute_units INTEGER NOT NULL DEFAULT 0,"
    "  memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  l1_bytes INTEGER NOT NULL DEFAULT 0,"
    "  l2_bytes INTEGER NOT NULL DEFAULT 0,"
    "  l3_bytes INTEGER NOT NULL DEFAULT 0,"
    "  smem_per_block INTEGER NOT NULL DEFAULT 0,"
    "  vector_bits INTEGER NOT NULL DEFAULT 0,"
    /* measured ceilings, toolchain-independent; filled by the profiler */
    "  peaks TEXT CHECK (peaks IS NULL OR json_valid(peaks)),"
    "  UNIQUE (backend, name, arch));"
    "CREATE TABLE toolchain ("
    "  id INTEGER PRIMARY KEY,"
    "  compiler TEXT NOT NULL,"
    "  kgen_version TEXT NOT NULL,"
    "  UNIQUE (compiler, kgen_version));"
    "CREATE TABLE workload ("
    "  id INTEGER PRIMARY KEY,"
    "  op TEXT NOT NULL,"
    "  shape TEXT NOT NULL,"
    "  dtype TEXT NOT NULL,"
    "  UNIQUE (op, shape, dtype));"
    "CREATE TABLE tune_run ("
    "  id INTEGER PRIMARY KEY,"
    "  workload_id INTEGER NOT NULL REFERENCES workload(id),"
    "  device_id INTEGER NOT NULL REFERENCES device(id),"
    "  toolchain_id INTEGER NOT NULL REFERENCES toolchain(id),"
    "  strategy TEXT NOT NULL,"
    "  seed INTEGER NOT NULL,"
    "  budget TEXT NOT NULL,"
    "  started_at TEXT NOT NULL DEFAULT " NOW ","
    "  finished_at TEXT,"
    "  status TEXT NOT NULL DEFAULT 'running'"
    "    CHECK (status IN ('running','done','interrupted','failed')));"
    "CREATE TABLE trial ("
    "  id INTEGER PRIMARY KEY,"
    "  workload_id INTEGER NOT NULL REFERENCES workload(id),"
    "  device_id INTEGER NOT NULL REFERENCES device(id),"
    "  toolchain_id INTEGER NOT NULL REFERENCES toolchain(id),"
    "  run_id INTEGER REFERENCES tune_run(id),"
    "  schedule TEXT NOT NULL,"
    "  schedule_hash TEXT NOT NULL CHECK (length(schedule_hash) = 16),"
    "  status TEXT NOT NULL"
    "    CHECK (status IN ('ok','compile_error','runtime_error','timeout','wrong_result')),"
    "  rel_error REAL,"
    "  median_ns REAL,"
    "  min_ns REAL,"
    "  max_ns REAL,"
    "  samples TEXT CHECK (samples IS NULL OR json_valid(samples)),"
    "  metrics TEXT CHECK (metrics IS NULL OR json_valid(metrics)),"
    "  error TEXT,"
    "  predicted_cost REAL,"
    "  strategy TEXT,"
    "  compile_ms REAL,"
    "  created_at TEXT NOT NULL DEFAULT " NOW ","
    "  UNIQUE (workload_id, device_id, toolchain_id, schedule_hash));"
    "CREATE TABLE best ("
    "  workload_id INTEGER NOT NULL REFERENCES workload(id),"
    "  device_id INTEGER NOT NULL REFERENCES device(id),"
    "  toolchain_id INTEGER NOT NULL REFERENCES toolchain(id),"
    "  trial_id INTEGER NOT NULL REFERENCES trial(id),"
    "  updated_at TEXT NOT NULL DEFAULT " NOW ","
    "  PRIMARY KEY (workload_id, device_id, toolchain_id)) WITHOUT ROWID;"
    "CREATE TABLE model ("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL,"
    "  blob BLOB NOT NULL,"
    "  trained_on TEXT CHECK (trained_on IS NULL OR json_valid(trained_on)),"
    "  quality TEXT CHECK (quality IS NULL OR json_valid(quality)),"
    "  created_at TEXT NOT NULL DEFAULT " NOW ");"
    "PRAGMA user_version = 1;",

    /* 2: indexes for the ranked trial listing and the nearest-shape search (all shapes of an
     * op and dtype). */
    "CREATE INDEX trial_rank ON trial (workload_id, device_id, toolchain_id, status, median_ns);"
    "CREATE INDEX model_kind ON model (kind, id);"
    "CREATE INDEX tune_run_key ON tune_run (workload_id, device_id, toolchain_id);"
    "PRAGMA user_version = 2;",

    /* 3: the perf gate. A run is a baseline or a check of a suite on a device; each result
     * keeps its samples and, by hash, the kernel binary it measured, stored once however many
     * runs share it, so a later check can run the very same binary again. */
    "CREATE TABLE gate_run ("
    "  id INTEGER PRIMARY KEY,"
    "  kind TEXT NOT NULL CHECK (kind IN ('baseline','check')),"
    "  suite TEXT NOT NULL,"
    "  device_id INTEGER NOT NULL REFERENCES device(id),"
    "  toolchain_id INTEGER NOT NULL REFERENCES toolchain(id),"
    "  git_commit TEXT,"
    "  git_dirty INTEGER NOT NULL DEFAULT 0,"
    "  label TEXT,"
    "  base_run_id INTEGER REFERENCES gate_run(id),"
    "  status TEXT NOT NULL DEFAULT 'running'"
    "    CHECK (status IN ('running','done','failed','interrupted')),"
    "  verdict TEXT CHECK (verdict IS NULL OR verdict IN ('pass','regression','failed')),"
    "  created_at TEXT NOT NULL DEFAULT " NOW ","
    "  finished_at TEXT);"
    "CREATE TABLE gate_artifact ("
    "  hash TEXT PRIMARY KEY,"
    "  backend TEXT NOT NULL,"
    "  entry TEXT NOT NULL,"
    "  bytes BLOB NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE gate_result ("
    "  id INTEGER PRIMARY KEY,"
    "  run_id INTEGER NOT NULL REFERENCES gate_run(id),"
    "  name TEXT NOT NULL,"
    "  workload_id INTEGER NOT NULL REFERENCES workload(id),"
    "  schedule TEXT,"
    "  status TEXT NOT NULL"
    "    CHECK (status IN ('ok','compile_error','runtime_error','timeout','wrong_result')),"
    "  error TEXT,"
    "  samples TEXT CHECK (samples IS NULL OR json_valid(samples)),"
    "  median_ns REAL,"
    "  artifact_hash TEXT REFERENCES gate_artifact(hash),"
    "  base_samples TEXT CHECK (base_samples IS NULL OR json_valid(base_samples)),"
    "  base_median_ns REAL,"
    "  change REAL,"
    "  p_value REAL,"
    "  threshold REAL,"
    "  verdict TEXT CHECK (verdict IS NULL"
    "    OR verdict IN ('pass','improved','regression','failed','new')),"
    "  remeasured INTEGER NOT NULL DEFAULT 0,"
    "  note TEXT,"
    "  UNIQUE (run_id, name));"
    /* The newest baseline of a suite on a device; runs by commit; a run's results in
     * insertion order (the UNIQUE index's (run_id, name) order would need a sort). */
    "CREATE INDEX gate_run_key ON gate_run (suite, device_id, kind, id);"
    "CREATE INDEX gate_run_commit ON gate_run (git_commit);"
    "CREATE INDEX gate_result_run ON gate_result (run_id);"
    "PRAGMA user_version = 3;",

    /* 4: profiled runs and their timelines (events relative to the profile's t0, on the
     * host clock), for the Chrome-trace export and the GUI's timeline. */
    "CREATE TABLE profile ("
    "  id INTEGER PRIMARY KEY,"
    "  workload_id INTEGER REFERENCES workload(id),"
    "  device_id INTEGER NOT NULL REFERENCES device(id),"
    "  toolchain_id INTEGER NOT NULL REFERENCES toolchain(id),"
    "  trial_id INTEGER REFERENCES trial(id),"
    "  kind TEXT NOT NULL CHECK (kind IN ('run','tune')),"
    "  schedule TEXT,"
    "  summary TEXT CHECK (summary IS NULL OR json_valid(summary)),"
    "  t0_ns INTEGER NOT NULL,"
    "  created_at TEXT NOT NULL DEFAULT " NOW ");"
    "CREATE TABLE profile_event ("
    "  profile_id INTEGER NOT NULL REFERENCES profile(id),"
    "  seq INTEGER NOT NULL,"
    "  kind TEXT NOT NULL"
    "    CHECK (kind IN ('kernel','compile','memcpy','memset','alloc','free','range')),"
    "  name TEXT NOT NULL,"
    "  lane INTEGER NOT NULL,"
    "  depth INTEGER NOT NULL DEFAULT 0,"
    "  start_ns INTEGER NOT NULL,"
    "  dur_ns INTEGER NOT NULL DEFAULT 0,"
    "  bytes INTEGER NOT NULL DEFAULT 0,"
    "  address INTEGER NOT NULL DEFAULT 0,"
    "  detail TEXT,"
    "  PRIMARY KEY (profile_id, seq)) WITHOUT ROWID;"
    "CREATE INDEX profile_workload ON profile (workload_id, id);"
    "PRAGMA user_version = 4;",

    /* 5: who runs a tuning or gate run (process id and host), so that a run whose process was
     * killed (kill -9, the OOM killer) is found and closed as 'interrupted' instead of being
     * 'running' forever. */
    "ALTER TABLE tune_run ADD COLUMN pid INTEGER;"
    "ALTER TABLE tune_run ADD COLUMN host TEXT;"
    "ALTER TABLE gate_run ADD COLUMN pid INTEGER;"
    "ALTER TABLE gate_run ADD COLUMN host TEXT;"
    "PRAGMA user_version = 5;",

    /* 6: points claimed by running tuners (ts-db-claim.c), so that tuners working on one key
     * at once measure different points instead of the same ones. A claim lives as long as its
     * run is 'running' and the point has no trial. */
    "CREATE TABLE trial_claim ("
    "  workload_id INTEGER NOT NULL REFERENCES workload(id),"
    "  device_id INTEGER NOT NULL REFERENCES device(id),"
    "  toolchain_id INTEGER NOT NULL REFERENCES toolchain(id),"
    "  schedule_hash TEXT NOT NULL,"
    "  run_id INTEGER NOT NULL REFERENCES tune_run(id),"
    "  PRIMARY KEY (workload_id, device_id, toolchain_id, schedule_hash)) WITHOUT ROWID;"
    "CREATE INDEX trial_claim_run ON trial_claim (run_id);"
    "PRAGMA user_version = 6;",

    /* 7: which machine and, in a distributed tune, which MPI rank measured each trial (NULL for
     * trials stored before, and rank NULL outside MPI), so a fleet's cache says where every
     * figure came from. */
    "ALTER TABLE trial ADD COLUMN host TEXT;"
    "ALTER TABLE trial ADD COLUMN rank INTEGER CHECK (rank IS NULL OR rank >= 0);"
    "PRAGMA user_version = 7;",

    /* 8: the source of each kernel-language kernel tuned into the cache (op "kernel:NAME@HASH",
     * HASH the source's), so that a reader of the cache — the studio's lowering view, `show`
     * by op name — lowers the op again without the file. */
    "CREATE TABLE kernel_source ("
    "  op TEXT PRIMARY KEY,"
    "  path TEXT,"
    "  source TEXT NOT NULL,"
    "  stored_at TEXT NOT NULL DEFAULT " NOW ");"
    "PRAGMA user_version = 8;",

    /* 9: the integers a gate result's kernel binary is launched with after the op's dims (a
     * CPU GEMM's block sizes, read at run time: one binary serves several schedules). */
    "ALTER TABLE gate_result ADD COLUMN launch_ints TEXT; PRAGMA user_version = 9;",
};

int
ts_db_schema_version(void)
{
  return (int)G_N_ELEMENTS(migrations);
}

static int
user_version(sqlite3 *sql, int *version)
{
  sqlite3_stmt *stmt = NULL;
  int rc = sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &stmt, NULL);
  if (rc == SQLITE_OK && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    *version = sqlite3_column_int(stmt, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(stmt);
  return rc;
}

gboolean
ts__db_migrate(sqlite3 *sql, const char *path, GError **error)
{
  int version = 0;
  int rc = user_version(sql, &version);
  if (rc != SQLITE_OK)
    return ts__db_fail_sql(sql, path, rc, "reading the schema version", error);
  if (version == ts_db_schema_version())
    return TRUE; /* the common case: no write lock taken */

  rc = ts__db_exec_retry(sql, "BEGIN IMMEDIATE");
  if (rc != SQLITE_OK)
    return ts__db_fail_sql(sql, path, rc, "locking for the schema migration", error);
  /* Another process may have migrated between our read and our lock. */
  rc = user_version(sql, &version);
  if (rc != SQLITE_OK) {
    sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    return ts__db_fail_sql(sql, path, rc, "reading the schema version", error);
  }
  if (version > ts_db_schema_version()) {
    sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    g_set_error(error, TS_DB_ERROR, TS_DB_ERROR_TOO_NEW,
                "schedule cache %s: schema version %d is newer than this build knows (%d); "
                "upgrade tessera",
                path, version, ts_db_schema_version());
    return FALSE;
  }
  for (int v = version; v < ts_db_schema_version(); v++) {
    rc = sqlite3_exec(sql, migrations[v], NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      g_autofree char *what = g_strdup_printf("migrating the schema to version %d", v + 1);
      ts__db_fail_sql(sql, path, rc, what, error);
      sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
      return FALSE;
    }
  }
  rc = sqlite3_exec(sql, "COMMIT", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    ts__db_fail_sql(sql, path, rc, "committing the schema migration", error);
    sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
    return FALSE;
  }
  return TRUE;
}
