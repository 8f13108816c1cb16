/* test-db.c — schedule cache tests: schema and migrations, keys, trials (no duplicates, both
 * orders), best, LRU lookups and their invalidation, nearest shape, runs, models, export and
 * idempotent import, every bad-input and fault case (directory, read-only, not a database,
 * truncated, newer schema, malformed imports), and processes: a writer killed with SIGKILL
 * mid-run, four writers on one file; the perf gate's runs, results and artifacts, and the
 * migration of a version-2 file that predates them. */
#include "ts-db.h"
#include "ts-output.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  char *dir;
  char *path;
  TsDb *db;
  gint64 d, t, w;
} Fx;

static const TsDbDevice test_device = {
    .backend = "cpu", .name = "test cpu", .arch = "x86_64+avx2", .compute_units = 8,
    .memory_bytes = 1ull << 34, .l1_bytes = 32768, .l2_bytes = 1 << 20, .vector_bits = 256,
};

static void
fx_setup(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  fx->dir = g_dir_make_tmp("test-db-XXXXXX", &error);
  g_assert_no_error(error);
  fx->path = g_build_filename(fx->dir, "sub", "dir", "schedules.db", NULL);
  fx->db = ts_db_open(fx->path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  fx->d = ts_db_ensure_device(fx->db, &test_device, &error);
  g_assert_no_error(error);
  fx->t = ts_db_ensure_toolchain(fx->db, "gcc 12.2.0", "tessera-kgen-1", &error);
  g_assert_no_error(error);
  fx->w = ts_db_ensure_workload(fx->db, "gemm", "M=1024,N=1024,K=1024", "f32", &error);
  g_assert_no_error(error);
}

static void
rm_rf(const char *path)
{
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_chmod(path, 0755);
    GDir *dir = g_dir_open(path, 0, NULL);
    const char *name;
    while (dir && (name = g_dir_read_name(dir))) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      rm_rf(child);
    }
    if (dir)
      g_dir_close(dir);
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static void
fx_teardown(Fx *fx, gconstpointer data)
{
  ts_db_close(fx->db);
  rm_rf(fx->dir);
  g_free(fx->dir);
  g_free(fx->path);
}

static gint64
add(TsDb *db, gint64 w, gint64 d, gint64 t, const char *schedule, TsDbTrialStatus status,
    double median, gboolean *existed)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDbTrial) trial = ts_db_trial_new();
  trial->workload_id = w;
  trial->device_id = d;
  trial->toolchain_id = t;
  trial->schedule = g_strdup(schedule);
  trial->status = status;
  trial->median_ns = median;
  trial->min_ns = median * 0.9;
  trial->max_ns = median * 1.2;
  trial->rel_error = status == TS_DB_TRIAL_OK ? 1e-7 : NAN;
  trial->samples_ns = g_array_new(FALSE, FALSE, sizeof(double));
  double s[] = {median * 0.9, median, median * 1.2};
  g_array_append_vals(trial->samples_ns, s, 3);
  trial->metrics_json = g_strdup("{\"gflops\": 12.5}");
  trial->error_text = status == TS_DB_TRIAL_OK ? NULL : g_strdup("boom");
  trial->strategy = g_strdup("random");
  trial->compile_ms = 12.0;
  /* Measured by rank 3 on node-a (verified ones; the failures outside MPI). */
  trial->host = g_strdup("node-a");
  trial->rank = status == TS_DB_TRIAL_OK ? 3 : -1;
  gint64 id = 0;
  g_assert_true(ts_db_add_trial(db, trial, &id, existed, &error));
  g_assert_no_error(error);
  g_assert_cmpint(id, >, 0);
  return id;
}

static TsDbKey
key_for(const char *shape)
{
  return (TsDbKey){.op = "gemm", .shape = shape, .dtype = "f32", .device_arch = "x86_64+avx2",
                   .device_name = "test cpu", .toolchain = "gcc 12.2.0",
                   .kgen_version = "tessera-kgen-1"};
}

static char *
read_bytes(const char *path, gsize *len)
{
  char *data = NULL;
  g_assert_true(g_file_get_contents(path, &data, len, NULL));
  return data;
}

/* ---- schema, keys ---- */

static void
test_schema(Fx *fx, gconstpointer data)
{
  g_assert_cmpint(ts_db_schema_version(), >=, 3);
  g_autofree char *msg = NULL;
  g_assert_true(ts_db_check_integrity(fx->db, &msg));
  g_assert_cmpstr(msg, ==, "ok");
  g_assert_true(g_str_has_suffix(ts_db_path(fx->db), "schedules.db"));
  g_assert_false(ts_db_is_read_only(fx->db));

  /* The version, journal mode and tables, read with plain SQLite. */
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(fx->path, &sql), ==, SQLITE_OK);
  sqlite3_stmt *st = NULL;
  sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &st, NULL);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  g_assert_cmpint(sqlite3_column_int(st, 0), ==, ts_db_schema_version());
  sqlite3_finalize(st);
  sqlite3_prepare_v2(sql, "PRAGMA journal_mode", -1, &st, NULL);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  g_assert_cmpstr((const char *)sqlite3_column_text(st, 0), ==, "wal");
  sqlite3_finalize(st);
  const char *tables[] = {"device", "toolchain", "workload", "tune_run", "trial", "best",
                          "model", "gate_run", "gate_artifact", "gate_result"};
  for (guint i = 0; i < G_N_ELEMENTS(tables); i++) {
    sqlite3_prepare_v2(sql, "SELECT count(*) FROM sqlite_schema WHERE type='table' AND name=?1",
                       -1, &st, NULL);
    sqlite3_bind_text(st, 1, tables[i], -1, SQLITE_STATIC);
    g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
    g_assert_cmpint(sqlite3_column_int(st, 0), ==, 1);
    sqlite3_finalize(st);
  }
  sqlite3_close(sql);

  /* Reopening keeps everything and migrates nothing. */
  ts_db_close(fx->db);
  g_autoptr(GError) error = NULL;
  fx->db = ts_db_open(fx->path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_db_ensure_workload(fx->db, "gemm", "M=1024,N=1024,K=1024", "f32", NULL),
                  ==, fx->w);
}

static void
test_keys(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_assert_cmpint(ts_db_ensure_device(fx->db, &test_device, NULL), ==, fx->d);
  TsDbDevice other = test_device;
  other.name = "other cpu";
  gint64 d2 = ts_db_ensure_device(fx->db, &other, NULL);
  g_assert_cmpint(d2, >, fx->d);
  g_assert_cmpint(ts_db_ensure_toolchain(fx->db, "gcc 12.2.0", "tessera-kgen-1", NULL), ==,
                  fx->t);
  g_assert_cmpint(ts_db_ensure_toolchain(fx->db, "gcc 12.2.0", "tessera-kgen-2", NULL), !=,
                  fx->t);
  /* Whitespace is not part of a shape. */
  g_assert_cmpint(ts_db_ensure_workload(fx->db, "gemm", " M=1024, N=1024, K=1024", "f32", NULL),
                  ==, fx->w);
  g_assert_cmpint(ts_db_ensure_workload(fx->db, "gemm", "M=1024,N=1024,K=1024", "bf16 @accum(f32)",
                                        NULL),
                  !=, fx->w);
  const char *bad_shapes[] = {"", "M", "M=", "M=1,", "=4", "M=1;N=2", "M=x"};
  for (guint i = 0; i < G_N_ELEMENTS(bad_shapes); i++) {
    g_clear_error(&error);
    g_assert_cmpint(ts_db_ensure_workload(fx->db, "gemm", bad_shapes[i], "f32", &error), ==, 0);
    g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "NAME=INT"));
  }
  g_clear_error(&error);
  TsDbDevice nameless = {.backend = "cpu"};
  g_assert_cmpint(ts_db_ensure_device(fx->db, &nameless, &error), ==, 0);
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);

  /* Peaks: JSON object, NULL until measured. */
  g_clear_error(&error);
  g_autofree char *none = ts_db_get_device_peaks(fx->db, fx->d, &error);
  g_assert_no_error(error);
  g_assert_null(none);
  g_assert_true(ts_db_set_device_peaks(fx->db, fx->d, "{\"f32_flops\": 1.2e12}", &error));
  g_autofree char *peaks = ts_db_get_device_peaks(fx->db, fx->d, &error);
  g_assert_cmpstr(peaks, ==, "{\"f32_flops\": 1.2e12}");
  g_assert_false(ts_db_set_device_peaks(fx->db, fx->d, "{not json", &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_clear_error(&error);
  g_assert_false(ts_db_set_device_peaks(fx->db, 999, "{}", &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
}

/* ---- trials and best ---- */

static void
test_trials(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  gboolean existed = TRUE;
  gint64 a = add(fx->db, fx->w, fx->d, fx->t, "block(m=64).warps(4)", TS_DB_TRIAL_OK, 300, &existed);
  g_assert_false(existed);
  gint64 b = add(fx->db, fx->w, fx->d, fx->t, "block(m=128).warps(4)", TS_DB_TRIAL_COMPILE_ERROR,
                 NAN, NULL);
  gint64 c = add(fx->db, fx->w, fx->d, fx->t, "block(m=32).warps(4)", TS_DB_TRIAL_OK, 100, NULL);
  gint64 e = add(fx->db, fx->w, fx->d, fx->t, "block(m=16).warps(4)", TS_DB_TRIAL_WRONG_RESULT, 50,
                 NULL);
  /* The same point again: not stored, the existing id comes back. */
  gint64 again = add(fx->db, fx->w, fx->d, fx->t, "block(m=64).warps(4)", TS_DB_TRIAL_OK, 999,
                     &existed);
  g_assert_true(existed);
  g_assert_cmpint(again, ==, a);

  g_autoptr(GPtrArray) best_first =
      ts_db_list_trials(fx->db, fx->w, fx->d, fx->t, TS_DB_ORDER_BEST_FIRST, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(best_first->len, ==, 4);
  gint64 want_best[] = {c, a, b, e};
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint(((TsDbTrial *)best_first->pdata[i])->id, ==, want_best[i]);
  g_autoptr(GPtrArray) inserted =
      ts_db_list_trials(fx->db, fx->w, fx->d, fx->t, TS_DB_ORDER_INSERTION, &error);
  gint64 want_ins[] = {a, b, c, e};
  for (guint i = 0; i < 4; i++)
    g_assert_cmpint(((TsDbTrial *)inserted->pdata[i])->id, ==, want_ins[i]);

  /* Round trip of every field. */
  g_autoptr(TsDbTrial) t = ts_db_get_trial(fx->db, a, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(t->schedule, ==, "block(m=64).warps(4)");
  g_autofree char *sha = g_compute_checksum_for_string(G_CHECKSUM_SHA256, t->schedule, -1);
  g_assert_cmpint(strncmp(t->hash, sha, 16), ==, 0);
  g_assert_cmpint(t->status, ==, TS_DB_TRIAL_OK);
  g_assert_cmpfloat(t->median_ns, ==, 300);
  g_assert_cmpfloat(t->min_ns, ==, 270);
  g_assert_cmpuint(t->samples_ns->len, ==, 3);
  g_assert_cmpfloat(g_array_index(t->samples_ns, double, 2), ==, 360);
  g_assert_cmpstr(t->metrics_json, ==, "{\"gflops\": 12.5}");
  g_assert_true(isnan(t->predicted_cost));
  g_assert_cmpstr(t->strategy, ==, "random");
  g_assert_cmpstr(t->host, ==, "node-a");
  g_assert_cmpint(t->rank, ==, 3);
  g_autoptr(TsDbTrial) failed = ts_db_get_trial(fx->db, b, &error);
  g_assert_cmpint(failed->rank, ==, -1); /* stored as NULL */
  g_assert_nonnull(t->created_at);
  g_assert_cmpint(t->run_id, ==, 0);
  g_autoptr(TsDbTrial) tb = ts_db_get_trial(fx->db, b, &error);
  g_assert_true(isnan(tb->median_ns));
  g_assert_cmpstr(tb->error_text, ==, "boom");
  g_assert_null(ts_db_get_trial(fx->db, 12345, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
  g_clear_error(&error);

  /* Bad trials. */
  g_autoptr(TsDbTrial) bad = ts_db_trial_new();
  bad->workload_id = fx->w, bad->device_id = fx->d, bad->toolchain_id = fx->t;
  bad->schedule = g_strdup("x");
  bad->hash = g_strdup("XYZ");
  g_assert_false(ts_db_add_trial(fx->db, bad, NULL, NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_clear_error(&error);
  g_clear_pointer(&bad->hash, g_free);
  bad->workload_id = 777; /* foreign key */
  g_assert_false(ts_db_add_trial(fx->db, bad, NULL, NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_clear_error(&error);

  /* Best. */
  g_assert_null(ts_db_get_best(fx->db, fx->w, fx->d, fx->t, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
  g_clear_error(&error);
  g_assert_false(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, b, &error)); /* failed trial */
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_clear_error(&error);
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, a, &error));
  g_autoptr(TsDbTrial) best = ts_db_get_best(fx->db, fx->w, fx->d, fx->t, &error);
  g_assert_cmpint(best->id, ==, a);
  gint64 best_id = 0;
  g_assert_true(ts_db_refresh_best(fx->db, fx->w, fx->d, fx->t, &best_id, &error));
  g_assert_cmpint(best_id, ==, c);

  /* The key listing: one key with its names, counts and the device row's fields; a workload
   * with no trials is not listed, a second key with one is. */
  gint64 w2 = ts_db_ensure_workload(fx->db, "softmax_safe", "M=8,N=64", "f32", &error);
  ts_db_ensure_workload(fx->db, "saxpy", "N=64", "f32", &error);
  add(fx->db, w2, fx->d, fx->t, "block(m=1).warps(4)", TS_DB_TRIAL_OK, 10, NULL);
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(fx->db, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(keys->len, ==, 2);
  const TsDbTrialKey *k = keys->pdata[0];
  g_assert_cmpint(k->workload_id, ==, fx->w);
  g_assert_cmpint(k->device_id, ==, fx->d);
  g_assert_cmpint(k->toolchain_id, ==, fx->t);
  g_assert_cmpstr(k->op, ==, "gemm");
  g_assert_cmpstr(k->shape, ==, "M=1024,N=1024,K=1024");
  g_assert_cmpstr(k->dtype, ==, "f32");
  g_assert_cmpstr(k->device.name, ==, test_device.name);
  g_assert_cmpstr(k->device.backend, ==, test_device.backend);
  g_assert_cmpuint(k->device.compute_units, ==, test_device.compute_units);
  g_assert_cmpuint(k->device.l2_bytes, ==, test_device.l2_bytes);
  g_assert_cmpstr(k->compiler, ==, "gcc 12.2.0");
  g_assert_cmpstr(k->kgen_version, ==, "tessera-kgen-1");
  g_assert_cmpuint(k->n_trials, ==, 4);
  g_assert_cmpuint(k->n_ok, ==, 2);
  k = keys->pdata[1];
  g_assert_cmpint(k->workload_id, ==, w2);
  g_assert_cmpuint(k->n_trials, ==, 1);
}

static void
test_runs_models(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  gint64 run = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "annealing", G_MAXUINT64, "100 evals",
                               &error);
  g_assert_no_error(error);
  g_assert_cmpint(run, >, 0);
  g_autoptr(TsDbTrial) trial = ts_db_trial_new();
  trial->workload_id = fx->w, trial->device_id = fx->d, trial->toolchain_id = fx->t;
  trial->run_id = run;
  trial->schedule = g_strdup("warps(8)");
  trial->status = TS_DB_TRIAL_TIMEOUT;
  gint64 id = 0;
  g_assert_true(ts_db_add_trial(fx->db, trial, &id, NULL, &error));
  g_autoptr(TsDbTrial) back = ts_db_get_trial(fx->db, id, &error);
  g_assert_cmpint(back->run_id, ==, run);
  g_assert_true(ts_db_end_run(fx->db, run, "done", &error));
  g_assert_false(ts_db_end_run(fx->db, run, "finished", &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_clear_error(&error);
  g_assert_false(ts_db_end_run(fx->db, 999, "done", &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
  g_clear_error(&error);
  g_assert_cmpint(ts_db_begin_run(fx->db, 999, fx->d, fx->t, "random", 1, "", &error), ==, 0);
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_clear_error(&error);

  /* The key's runs, oldest first, with what began and ended them; other keys' runs are not
   * listed. */
  gint64 run2 = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 7, "", &error);
  g_assert_no_error(error);
  gint64 w2 = ts_db_ensure_workload(fx->db, "gemm", "M=64,N=64,K=64", "f32", &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_db_begin_run(fx->db, w2, fx->d, fx->t, "random", 1, "", &error), >, 0);
  g_autoptr(GPtrArray) runs = ts_db_list_runs(fx->db, fx->w, fx->d, fx->t, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(runs->len, ==, 2);
  const TsDbRun *r0 = runs->pdata[0], *r1 = runs->pdata[1];
  g_assert_cmpint(r0->id, ==, run);
  g_assert_cmpint(r0->workload_id, ==, fx->w);
  g_assert_cmpint(r0->device_id, ==, fx->d);
  g_assert_cmpint(r0->toolchain_id, ==, fx->t);
  g_assert_cmpstr(r0->strategy, ==, "annealing");
  g_assert_cmpuint(r0->seed, ==, G_MAXUINT64);
  g_assert_cmpstr(r0->budget, ==, "100 evals");
  g_assert_cmpstr(r0->status, ==, "done");
  g_assert_nonnull(r0->started_at);
  g_assert_nonnull(r0->finished_at);
  g_assert_cmpstr(r0->started_at, <=, r0->finished_at);
  g_assert_cmpint(r1->id, ==, run2);
  g_assert_cmpstr(r1->strategy, ==, "random");
  g_assert_cmpuint(r1->seed, ==, 7);
  g_assert_cmpstr(r1->budget, ==, "");
  g_assert_cmpstr(r1->status, ==, "running");
  g_assert_null(r1->finished_at);
  g_autoptr(GPtrArray) none = ts_db_list_runs(fx->db, fx->w, fx->d + 1, fx->t, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(none->len, ==, 0);

  g_autoptr(GBytes) blob = g_bytes_new_static("\0\1\2model", 8);
  gint64 m1 = ts_db_add_model(fx->db, "xgboost-rank", blob, "{\"trials\": 10}", NULL, &error);
  gint64 m2 = ts_db_add_model(fx->db, "xgboost-rank", blob, "{\"trials\": 20}",
                              "{\"kendall_tau\": 0.8}", &error);
  g_assert_no_error(error);
  g_assert_cmpint(m2, >, m1);
  gint64 got = 0;
  g_autofree char *on = NULL, *quality = NULL;
  g_autoptr(GBytes) back_blob = ts_db_get_model(fx->db, "xgboost-rank", &got, &on, &quality, &error);
  g_assert_no_error(error);
  g_assert_cmpint(got, ==, m2);
  g_assert_true(g_bytes_equal(blob, back_blob));
  g_assert_cmpstr(on, ==, "{\"trials\": 20}");
  g_assert_cmpstr(quality, ==, "{\"kendall_tau\": 0.8}");
  g_assert_null(ts_db_get_model(fx->db, "none", NULL, NULL, NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
}

/* ---- lookups ---- */

static void
test_lookup(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  TsDbKey key = key_for("M=1024,N=1024,K=1024");
  g_auto(TsDbLookupResult) r = {0};
  g_assert_false(ts_db_lookup(fx->db, &key, &r, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
  g_assert_nonnull(strstr(error->message, "gemm M=1024,N=1024,K=1024 f32"));
  g_clear_error(&error);

  gint64 a = add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  gint64 b = add(fx->db, fx->w, fx->d, fx->t, "block(m=32)", TS_DB_TRIAL_OK, 200, NULL);
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, a, &error));
  for (int i = 0; i < 3; i++) { /* first from SQLite, then from the LRU */
    ts_db_lookup_result_clear(&r);
    g_assert_true(ts_db_lookup(fx->db, &key, &r, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(r.schedule, ==, "block(m=64)");
    g_assert_cmpint(r.trial_id, ==, a);
    g_assert_cmpfloat(r.median_ns, ==, 300);
    g_assert_true(r.exact);
    g_assert_cmpstr(r.shape, ==, "M=1024,N=1024,K=1024");
  }
  /* A write to best by this process empties the LRU. */
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, b, &error));
  ts_db_lookup_result_clear(&r);
  g_assert_true(ts_db_lookup(fx->db, &key, &r, &error));
  g_assert_cmpint(r.trial_id, ==, b);
  g_assert_true(ts_db_refresh_best(fx->db, fx->w, fx->d, fx->t, NULL, &error));
  ts_db_lookup_result_clear(&r);
  TsDbKey spaced = key_for("M=1024, N=1024, K=1024");
  g_assert_true(ts_db_lookup(fx->db, &spaced, &r, &error));
  g_assert_cmpint(r.trial_id, ==, b);

  /* Each key part matters. */
  TsDbKey other = key;
  other.toolchain = "gcc 13";
  ts_db_lookup_result_clear(&r);
  g_assert_false(ts_db_lookup(fx->db, &other, &r, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
  g_clear_error(&error);
  other = key;
  other.device_name = "another";
  g_assert_false(ts_db_lookup(fx->db, &other, &r, &error));
  g_clear_error(&error);

  /* A tiny LRU still answers correctly while evicting. */
  ts_db_set_lookup_cache_size(fx->db, 1);
  for (int i = 0; i < 3; i++) {
    ts_db_lookup_result_clear(&r);
    g_assert_true(ts_db_lookup(fx->db, &key, &r, &error));
    g_assert_false(ts_db_lookup(fx->db, &other, &r, NULL));
  }
}

static void
test_nearest(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  const char *shapes[] = {"M=512,N=512,K=512", "M=2048,N=2048,K=2048", "M=4096,N=64,K=4096"};
  gint64 ids[3];
  for (guint i = 0; i < 3; i++) {
    gint64 w = ts_db_ensure_workload(fx->db, "gemm", shapes[i], "f32", &error);
    g_autofree char *sched = g_strdup_printf("block(m=%u)", 16 << i);
    ids[i] = add(fx->db, w, fx->d, fx->t, sched, TS_DB_TRIAL_OK, 100.0 * (i + 1), NULL);
    g_assert_true(ts_db_refresh_best(fx->db, w, fx->d, fx->t, NULL, &error));
  }
  /* Another op, dtype or a shape with other dims never answers. */
  gint64 w_other = ts_db_ensure_workload(fx->db, "gemm", "M=1800,N=1800,K=1800", "bf16", &error);
  add(fx->db, w_other, fx->d, fx->t, "x", TS_DB_TRIAL_OK, 1, NULL);
  ts_db_refresh_best(fx->db, w_other, fx->d, fx->t, NULL, &error);
  gint64 w_dims = ts_db_ensure_workload(fx->db, "gemm", "M=1800,N=1800", "f32", &error);
  add(fx->db, w_dims, fx->d, fx->t, "y", TS_DB_TRIAL_OK, 1, NULL);
  ts_db_refresh_best(fx->db, w_dims, fx->d, fx->t, NULL, &error);
  g_assert_no_error(error);

  g_auto(TsDbLookupResult) r = {0};
  TsDbKey key = key_for("M=1800,N=1800,K=1800");
  g_assert_false(ts_db_lookup(fx->db, &key, &r, &error)); /* exact only */
  g_clear_error(&error);
  /* |log2(1800/2048)|*3 = 0.56 < |log2(1800/512)|*3 = 5.44; dims by name, order-free. */
  TsDbKey shuffled = key_for("K=1800,M=1800,N=1800");
  for (int i = 0; i < 2; i++) {
    ts_db_lookup_result_clear(&r);
    g_assert_true(ts_db_lookup_nearest(fx->db, i ? &shuffled : &key, &r, &error));
    g_assert_no_error(error);
    g_assert_false(r.exact);
    g_assert_cmpint(r.trial_id, ==, ids[1]);
    g_assert_cmpstr(r.shape, ==, "M=2048,N=2048,K=2048");
    g_assert_cmpfloat_with_epsilon(r.distance, 3 * fabs(log2(1800.0 / 2048.0)), 1e-9);
  }
  /* Skewed shapes go to the skewed neighbour. */
  TsDbKey skew = key_for("M=4096,N=128,K=2048");
  ts_db_lookup_result_clear(&r);
  g_assert_true(ts_db_lookup_nearest(fx->db, &skew, &r, &error));
  g_assert_cmpint(r.trial_id, ==, ids[2]);
  /* An exact hit is exact. */
  TsDbKey exact = key_for("M=512,N=512,K=512");
  ts_db_lookup_result_clear(&r);
  g_assert_true(ts_db_lookup_nearest(fx->db, &exact, &r, &error));
  g_assert_true(r.exact);
  g_assert_cmpfloat(r.distance, ==, 0);
  /* Nothing of the op at all. */
  TsDbKey none = key_for("M=1,N=1,K=1");
  none.op = "softmax_safe";
  ts_db_lookup_result_clear(&r);
  g_assert_false(ts_db_lookup_nearest(fx->db, &none, &r, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
}

/* ---- export / import ---- */

static char *
snapshot(TsDb *db)
{
  g_autoptr(GError) error = NULL;
  char *json = ts_db_export_json(db, 0, &error);
  g_assert_no_error(error);
  return json;
}

static void
test_export_import(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_db_set_device_peaks(fx->db, fx->d, "{\"bw\":1e11}", &error));
  add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  gint64 fast = add(fx->db, fx->w, fx->d, fx->t, "block(m=32)", TS_DB_TRIAL_OK, 200, NULL);
  add(fx->db, fx->w, fx->d, fx->t, "block(m=16)", TS_DB_TRIAL_RUNTIME_ERROR, NAN, NULL);
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, fast, &error));
  gint64 w2 = ts_db_ensure_workload(fx->db, "saxpy", "N=1000000", "f32", &error);
  add(fx->db, w2, fx->d, fx->t, "vector(8)", TS_DB_TRIAL_OK, 50, NULL);

  g_autofree char *one = ts_db_export_json(fx->db, fx->w, &error);
  g_assert_no_error(error);
  g_assert_null(strstr(one, "saxpy"));
  g_autofree char *all = snapshot(fx->db);
  g_assert_nonnull(strstr(all, "saxpy"));

  /* Into a fresh file: everything arrives, best re-evaluated by median. */
  g_autofree char *path2 = g_build_filename(fx->dir, "copy.db", NULL);
  g_autofree char *file = g_build_filename(fx->dir, "export.json", NULL);
  g_assert_true(ts_db_export_file(fx->db, 0, file, &error));
  g_autoptr(TsDb) db2 = ts_db_open(path2, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  /* Different ids in the target: a pre-existing device shifts them. */
  TsDbDevice other = test_device;
  other.name = "pre-existing";
  ts_db_ensure_device(db2, &other, &error);
  TsDbImportStats st;
  ts_db_import_file(db2, file, &st, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(st.devices_added, ==, 1);
  g_assert_cmpuint(st.toolchains_added, ==, 1);
  g_assert_cmpuint(st.workloads_added, ==, 2);
  g_assert_cmpuint(st.trials_added, ==, 4);
  g_assert_cmpuint(st.trials_existing, ==, 0);
  g_assert_cmpuint(st.best_changed, ==, 2);
  g_auto(TsDbLookupResult) r = {0};
  TsDbKey key = key_for("M=1024,N=1024,K=1024");
  g_assert_true(ts_db_lookup(db2, &key, &r, &error));
  g_assert_cmpstr(r.schedule, ==, "block(m=32)");
  gint64 d2 = ts_db_ensure_device(db2, &test_device, &error);
  g_autofree char *peaks = ts_db_get_device_peaks(db2, d2, &error);
  g_assert_nonnull(strstr(peaks, "bw"));
  g_autoptr(TsDbTrial) moved = ts_db_get_trial(db2, r.trial_id, &error);
  g_assert_cmpstr(moved->host, ==, "node-a"); /* who measured it travels with it */
  g_assert_cmpint(moved->rank, ==, 3);

  /* Twice: nothing added, nothing changed, byte-identical export. */
  g_autofree char *before = snapshot(db2);
  g_assert_true(ts_db_import_json(db2, all, -1, &st, &error));
  g_assert_cmpuint(st.trials_added + st.devices_added + st.workloads_added + st.best_changed, ==, 0);
  g_assert_cmpuint(st.trials_existing, ==, 4);
  g_autofree char *after = snapshot(db2);
  g_assert_cmpstr(before, ==, after);

  /* Back into the original: a merge with no news. */
  g_assert_true(ts_db_import_json(fx->db, after, -1, &st, &error));
  g_assert_cmpuint(st.trials_added, ==, 0);
  /* ... except that best is re-evaluated: saxpy, never given one here, gains it. */
  g_assert_cmpuint(st.best_changed, ==, 1);
  TsDbKey saxpy = key_for("N=1000000");
  saxpy.op = "saxpy";
  ts_db_lookup_result_clear(&r);
  g_assert_true(ts_db_lookup(fx->db, &saxpy, &r, &error));
  g_assert_cmpstr(r.schedule, ==, "vector(8)");
}

static const struct {
  const char *json;
  const char *path; /* expected in the message */
} bad_imports[] = {
    {"this is not json", "not JSON"},
    {"[1,2]", "$: expected an object, got an array"},
    {"{\"format\":\"other\",\"version\":1}", "$.format"},
    {"{\"format\":\"tessera-schedules\"}", "$.version: missing"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,\"devices\":{}}", "$.devices: expected an array"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,\"devices\":[],\"toolchains\":[],"
     "\"workloads\":[]}",
     "$.trials: missing"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,\"devices\":[{\"id\":1,\"backend\":\"cpu\","
     "\"name\":7,\"arch\":\"x\"}],\"toolchains\":[],\"workloads\":[],\"trials\":[]}",
     "$.devices[0].name: expected a string, got a number"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,\"devices\":[],\"toolchains\":[],"
     "\"workloads\":[{\"id\":1,\"op\":\"gemm\",\"shape\":\"M=?\",\"dtype\":\"f32\"}],\"trials\":[]}",
     "$.workloads[0].shape"},
    /* A valid prefix (a new workload) followed by a bad trial: nothing may be written. */
    {"{\"format\":\"tessera-schedules\",\"version\":1,"
     "\"devices\":[{\"id\":1,\"backend\":\"cpu\",\"name\":\"n\",\"arch\":\"a\"}],"
     "\"toolchains\":[{\"id\":1,\"compiler\":\"c\",\"kgen_version\":\"k\"}],"
     "\"workloads\":[{\"id\":1,\"op\":\"gemm\",\"shape\":\"M=8\",\"dtype\":\"f32\"}],"
     "\"trials\":[{\"workload\":1,\"device\":1,\"toolchain\":1,\"schedule\":\"s\","
     "\"hash\":\"0123456789abcdef\",\"status\":\"ok\",\"median_ns\":5},"
     "{\"workload\":1,\"device\":1,\"toolchain\":1,\"schedule\":\"t\","
     "\"hash\":\"0123456789abcdee\",\"status\":\"ok\",\"median_ns\":\"fast\"}]}",
     "$.trials[1].median_ns: expected a number, got a string"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,\"devices\":[],\"toolchains\":[],"
     "\"workloads\":[],\"trials\":[{\"workload\":3}]}",
     "$.trials[0].workload: no entry with id 3 in $.workloads"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,"
     "\"devices\":[{\"id\":1,\"backend\":\"cpu\",\"name\":\"n\",\"arch\":\"a\"}],"
     "\"toolchains\":[{\"id\":1,\"compiler\":\"c\",\"kgen_version\":\"k\"}],"
     "\"workloads\":[{\"id\":1,\"op\":\"gemm\",\"shape\":\"M=8\",\"dtype\":\"f32\"}],"
     "\"trials\":[{\"workload\":1,\"device\":1,\"toolchain\":1,\"schedule\":\"s\","
     "\"hash\":\"0123456789abcdef\",\"status\":\"great\"}]}",
     "$.trials[0].status"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,"
     "\"devices\":[{\"id\":1,\"backend\":\"cpu\",\"name\":\"n\",\"arch\":\"a\"}],"
     "\"toolchains\":[{\"id\":1,\"compiler\":\"c\",\"kgen_version\":\"k\"}],"
     "\"workloads\":[{\"id\":1,\"op\":\"gemm\",\"shape\":\"M=8\",\"dtype\":\"f32\"}],"
     "\"trials\":[{\"workload\":1,\"device\":1,\"toolchain\":1,\"schedule\":\"s\","
     "\"hash\":\"0123456789abcdef\",\"status\":\"ok\",\"median_ns\":1,\"samples_ns\":[1,\"x\"]}]}",
     "$.trials[0].samples_ns[1]: expected a number"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,"
     "\"devices\":[{\"id\":1,\"backend\":\"cpu\",\"name\":\"n\",\"arch\":\"a\"}],"
     "\"toolchains\":[{\"id\":1,\"compiler\":\"c\",\"kgen_version\":\"k\"}],"
     "\"workloads\":[{\"id\":1,\"op\":\"gemm\",\"shape\":\"M=8\",\"dtype\":\"f32\"}],"
     "\"trials\":[{\"workload\":1,\"device\":1,\"toolchain\":1,\"schedule\":\"s\","
     "\"hash\":\"0123456789abcdef\",\"status\":\"ok\",\"median_ns\":1,\"rank\":-2}]}",
     "$.trials[0].rank: an MPI rank is a non-negative integer"},
    {"{\"format\":\"tessera-schedules\",\"version\":1,\"devices\":[{\"id\":1,\"backend\":\"cpu\","
     "\"name\":\"n\",\"arch\":\"a\"},{\"id\":1,\"backend\":\"cpu\",\"name\":\"m\",\"arch\":\"a\"}],"
     "\"toolchains\":[],\"workloads\":[],\"trials\":[]}",
     "$.devices[1].id: duplicate id"},
};

static void
test_import_malformed(Fx *fx, gconstpointer data)
{
  add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  g_autofree char *before = snapshot(fx->db);
  for (guint i = 0; i < G_N_ELEMENTS(bad_imports); i++) {
    g_autoptr(GError) error = NULL;
    TsDbImportStats st;
    g_assert_false(ts_db_import_json(fx->db, bad_imports[i].json, -1, &st, &error));
    g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT);
    if (!strstr(error->message, bad_imports[i].path))
      g_error("import %u: '%s' does not name '%s'", i, error->message, bad_imports[i].path);
    g_assert_null(strchr(error->message, '\n'));
    g_autofree char *after = snapshot(fx->db);
    g_assert_cmpstr(before, ==, after);
  }
  g_autoptr(GError) error = NULL;
  g_assert_false(ts_db_import_file(fx->db, "/nonexistent/x.json", NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT);
}

/* ---- faults ---- */

static void
test_bad_paths(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  /* A directory. */
  g_assert_null(ts_db_open(fx->dir, TS_DB_OPEN_DEFAULT, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_OPEN);
  g_assert_nonnull(strstr(error->message, "is a directory"));
  g_clear_error(&error);
  /* Read-only open of a missing file. */
  g_autofree char *missing = g_build_filename(fx->dir, "missing.db", NULL);
  g_assert_null(ts_db_open(missing, TS_DB_OPEN_READ_ONLY, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_OPEN);
  g_assert_false(g_file_test(missing, G_FILE_TEST_EXISTS));
  g_clear_error(&error);
  /* Not a database: refused, and the file left as it was. */
  g_autofree char *text = g_build_filename(fx->dir, "notes.txt", NULL);
  const char *content = "these are my notes, not a database; please do not overwrite them\n"
                        "...............................................................\n";
  g_assert_true(g_file_set_contents(text, content, -1, NULL));
  g_assert_null(ts_db_open(text, TS_DB_OPEN_DEFAULT, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_A_DB);
  g_assert_nonnull(strstr(error->message, "file is not a database"));
  g_clear_error(&error);
  g_autofree char *still = NULL;
  g_file_get_contents(text, &still, NULL, NULL);
  g_assert_cmpstr(still, ==, content);
  g_assert_null(ts_db_open(text, TS_DB_OPEN_READ_ONLY, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_A_DB);
}

static void
test_truncated(Fx *fx, gconstpointer data)
{
  for (int i = 0; i < 2000; i++) {
    g_autofree char *s = g_strdup_printf("block(m=%d).warps(4).stages(3).vector(8)", i);
    add(fx->db, fx->w, fx->d, fx->t, s, TS_DB_TRIAL_OK, 100 + i, NULL);
  }
  g_clear_pointer(&fx->db, ts_db_close); /* checkpoints the WAL into the file */
  GStatBuf st;
  g_assert_cmpint(g_stat(fx->path, &st), ==, 0);
  g_assert_cmpint(st.st_size, >, 100000);
  g_assert_cmpint(truncate(fx->path, st.st_size / 2), ==, 0);
  for (int ro = 0; ro < 2; ro++) {
    g_autoptr(GError) error = NULL;
    g_assert_null(ts_db_open(fx->path, ro ? TS_DB_OPEN_READ_ONLY : TS_DB_OPEN_DEFAULT, &error));
    g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_CORRUPT);
    g_assert_nonnull(strstr(error->message, "malformed"));
    g_assert_null(strchr(error->message, '\n'));
  }
}

static void
set_user_version(const char *path, int version)
{
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  /* A pragma takes no parameter; the test builds this one text itself. */
  g_autofree char *q = g_strdup_printf("PRAGMA user_version = %d", version);
  g_assert_cmpint(sqlite3_exec(sql, q, NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_close(sql), ==, SQLITE_OK);
}

static void
test_too_new(Fx *fx, gconstpointer data)
{
  add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  g_clear_pointer(&fx->db, ts_db_close);
  set_user_version(fx->path, ts_db_schema_version() + 1);
  gsize len0 = 0, len1 = 0;
  g_autofree char *bytes0 = read_bytes(fx->path, &len0);
  g_autofree char *wal = g_strconcat(fx->path, "-wal", NULL);
  g_assert_false(g_file_test(wal, G_FILE_TEST_EXISTS));
  for (int ro = 0; ro < 2; ro++) {
    g_autoptr(GError) error = NULL;
    g_assert_null(ts_db_open(fx->path, ro ? TS_DB_OPEN_READ_ONLY : TS_DB_OPEN_DEFAULT, &error));
    g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_TOO_NEW);
    g_assert_nonnull(strstr(error->message, "newer than this build"));
  }
  g_autofree char *bytes1 = read_bytes(fx->path, &len1);
  g_assert_cmpuint(len0, ==, len1);
  g_assert_true(memcmp(bytes0, bytes1, len0) == 0);
  g_assert_false(g_file_test(wal, G_FILE_TEST_EXISTS));

  /* An older schema opened read-only asks for an upgrade; read-write migrates it. */
  set_user_version(fx->path, 1);
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NEEDS_UPGRADE);
}

static void
test_read_only_handle(Fx *fx, gconstpointer data)
{
  gint64 a = add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, a, NULL));
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) ro = ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, &error);
  g_assert_no_error(error);
  g_assert_true(ts_db_is_read_only(ro));
  g_auto(TsDbLookupResult) r = {0};
  TsDbKey key = key_for("M=1024,N=1024,K=1024");
  g_assert_true(ts_db_lookup(ro, &key, &r, &error));
  g_assert_cmpint(r.trial_id, ==, a);
  g_autoptr(TsDbTrial) t = ts_db_trial_new();
  t->workload_id = fx->w, t->device_id = fx->d, t->toolchain_id = fx->t;
  t->schedule = g_strdup("block(m=8)");
  g_assert_false(ts_db_add_trial(ro, t, NULL, NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_READ_ONLY);
  g_assert_nonnull(strstr(error->message, "read-only"));
  g_clear_error(&error);
  g_assert_cmpint(ts_db_ensure_workload(ro, "gemm", "M=3", "f32", &error), ==, 0);
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_READ_ONLY);
  /* The existing key rows are found without writing. */
  g_assert_cmpint(ts_db_ensure_workload(ro, "gemm", "M=1024,N=1024,K=1024", "f32", NULL), ==,
                  fx->w);
}

/* Permissions do not bind root, so the checks run in a child that drops to nobody when the
 * tests run as root. */
static void
run_as_unprivileged(void (*check)(const char *path), const char *path)
{
  pid_t pid = fork();
  g_assert_cmpint(pid, >=, 0);
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
      _exit(3);
    check(path);
    _exit(0);
  }
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFEXITED(status));
  g_assert_cmpint(WEXITSTATUS(status), ==, 0);
}

static void
check_read_only(const char *path)
{
  g_autoptr(GError) error = NULL;
  /* Writing is refused at open, with a way forward. */
  g_assert_null(ts_db_open(path, TS_DB_OPEN_DEFAULT, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_READ_ONLY);
  g_assert_nonnull(strstr(error->message, "read-only"));
  g_clear_error(&error);
  /* Lookups work. */
  g_autoptr(TsDb) ro = ts_db_open(path, TS_DB_OPEN_READ_ONLY, &error);
  g_assert_no_error(error);
  g_auto(TsDbLookupResult) r = {0};
  TsDbKey key = key_for("M=1024,N=1024,K=1024");
  g_assert_true(ts_db_lookup(ro, &key, &r, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(r.schedule, ==, "block(m=64)");
}

static void
test_read_only_files(Fx *fx, gconstpointer data)
{
  gint64 a = add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, a, NULL));
  g_clear_pointer(&fx->db, ts_db_close);
  gsize len0 = 0, len1 = 0;
  g_autofree char *bytes0 = read_bytes(fx->path, &len0);

  /* 1: a read-only file in a writable directory. */
  g_autofree char *sub = g_path_get_dirname(fx->path);
  g_autofree char *mid = g_path_get_dirname(sub);
  g_chmod(mid, 0755);
  g_chmod(sub, 0777);
  g_chmod(fx->dir, 0755);
  g_chmod(fx->path, 0444);
  run_as_unprivileged(check_read_only, fx->path);
  /* 2: and in a read-only directory too (no -shm can be created there). */
  g_chmod(sub, 0755);
  run_as_unprivileged(check_read_only, fx->path);
  g_autofree char *bytes1 = read_bytes(fx->path, &len1);
  g_assert_cmpuint(len0, ==, len1);
  g_assert_true(memcmp(bytes0, bytes1, len0) == 0);
}

/* ---- processes ---- */

static char *
writer_path(void)
{
  return g_test_build_filename(G_TEST_BUILT, "db-writer", NULL);
}

static GPid
spawn_writer(const char *db, const char *shape, int first, int count, int *out_fd, int *err_fd)
{
  g_autofree char *exe = writer_path();
  g_autofree char *f = g_strdup_printf("%d", first), *n = g_strdup_printf("%d", count);
  char *argv[] = {exe, (char *)db, (char *)shape, f, n, NULL};
  GPid pid = 0;
  g_autoptr(GError) error = NULL;
  g_spawn_async_with_pipes(NULL, argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL,
                           out_fd, err_fd, &error);
  g_assert_no_error(error);
  return pid;
}

typedef struct {
  gint64 id;
  char hash[17];
  gboolean is_new;
} Committed;

static gboolean
parse_line(const char *line, Committed *c)
{
  char kind[8] = "";
  if (sscanf(line, "%" G_GINT64_FORMAT " %16s %7s", &c->id, c->hash, kind) != 3)
    return FALSE;
  c->is_new = strcmp(kind, "new") == 0;
  return TRUE;
}

static void
assert_trial_present(TsDb *db, const Committed *c)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDbTrial) t = ts_db_get_trial(db, c->id, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(t->hash, ==, c->hash);
}

static void
test_kill_writer(Fx *fx, gconstpointer data)
{
  g_clear_pointer(&fx->db, ts_db_close);
  int out = -1, err = -1;
  GPid pid = spawn_writer(fx->path, "M=64,N=64,K=64", 0, 1000000, &out, &err);
  FILE *f = fdopen(out, "r");
  GArray *committed = g_array_new(FALSE, FALSE, sizeof(Committed));
  char line[256];
  while (committed->len < 300 && fgets(line, sizeof line, f)) {
    Committed c;
    g_assert_true(parse_line(line, &c));
    g_array_append_val(committed, c);
  }
  g_assert_cmpuint(committed->len, ==, 300);
  g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
  /* Lines already in the pipe were printed after their COMMIT: they count too. */
  while (fgets(line, sizeof line, f)) {
    Committed c;
    if (parse_line(line, &c))
      g_array_append_val(committed, c);
  }
  fclose(f);
  close(err);
  int status = 0;
  g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
  g_assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  g_spawn_close_pid(pid);

  g_autoptr(GError) error = NULL;
  fx->db = ts_db_open(fx->path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  g_autofree char *msg = NULL;
  g_assert_true(ts_db_check_integrity(fx->db, &msg));
  g_assert_cmpstr(msg, ==, "ok");
  for (guint i = 0; i < committed->len; i++)
    assert_trial_present(fx->db, &g_array_index(committed, Committed, i));
  g_test_message("%u trials committed before SIGKILL, all present", committed->len);
  g_array_unref(committed);
}

static void
test_four_writers(Fx *fx, gconstpointer data)
{
  g_clear_pointer(&fx->db, ts_db_close);
  g_autofree char *path = g_build_filename(fx->dir, "shared.db", NULL); /* created by the race */
  const struct {
    const char *shape;
    int first, count;
  } jobs[] = {
      {"M=1,N=1,K=1", 0, 150},
      {"M=2,N=2,K=2", 0, 150},
      {"M=3,N=3,K=3", 0, 150},
      {"M=3,N=3,K=3", 75, 150}, /* overlaps the previous job on points 75..149 */
  };
  GPid pids[4];
  int outs[4], errs[4];
  for (guint i = 0; i < 4; i++)
    pids[i] = spawn_writer(path, jobs[i].shape, jobs[i].first, jobs[i].count, &outs[i], &errs[i]);
  GArray *all = g_array_new(FALSE, FALSE, sizeof(Committed));
  guint n_new = 0;
  for (guint i = 0; i < 4; i++) {
    FILE *f = fdopen(outs[i], "r");
    char line[256];
    guint lines = 0;
    while (fgets(line, sizeof line, f)) {
      Committed c;
      g_assert_true(parse_line(line, &c));
      g_array_append_val(all, c);
      n_new += c.is_new;
      lines++;
    }
    fclose(f);
    g_autofree char *err_text = NULL;
    FILE *e = fdopen(errs[i], "r");
    GString *es = g_string_new(NULL);
    while (fgets(line, sizeof line, e))
      g_string_append(es, line);
    fclose(e);
    err_text = g_string_free(es, FALSE);
    int status = 0;
    g_assert_cmpint(waitpid(pids[i], &status, 0), ==, pids[i]);
    g_spawn_close_pid(pids[i]);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || *err_text)
      g_error("writer %u failed: %s", i, err_text);
    g_assert_null(strstr(err_text, "locked"));
    g_assert_cmpuint(lines, ==, (guint)jobs[i].count);
  }
  /* 150 + 150 + 225 distinct points, each stored once. */
  g_assert_cmpuint(n_new, ==, 525);
  g_autoptr(GError) error = NULL;
  fx->db = ts_db_open(path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  g_assert_true(ts_db_check_integrity(fx->db, NULL));
  TsDbDevice dev = {.backend = "cpu", .name = "test cpu", .arch = "x86_64"};
  gint64 d = ts_db_ensure_device(fx->db, &dev, &error);
  gint64 t = ts_db_ensure_toolchain(fx->db, "gcc test", "tessera-kgen-1", &error);
  const char *shapes[] = {"M=1,N=1,K=1", "M=2,N=2,K=2", "M=3,N=3,K=3"};
  guint want[] = {150, 150, 225}, total = 0;
  for (guint s = 0; s < 3; s++) {
    gint64 w = ts_db_ensure_workload(fx->db, "gemm", shapes[s], "f32", &error);
    g_autoptr(GPtrArray) trials =
        ts_db_list_trials(fx->db, w, d, t, TS_DB_ORDER_INSERTION, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(trials->len, ==, want[s]);
    total += trials->len;
  }
  g_assert_cmpuint(total, ==, 525);
  for (guint i = 0; i < all->len; i++)
    assert_trial_present(fx->db, &g_array_index(all, Committed, i));
  g_array_unref(all);
}

/* ---- the perf gate ---- */

static GArray *
samples_of(const double *values, guint n)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(double));
  g_array_append_vals(a, values, n);
  return a;
}

static void
assert_samples_equal(const GArray *a, const GArray *b)
{
  g_assert_nonnull(a);
  g_assert_nonnull(b);
  g_assert_cmpuint(a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++)
    g_assert_cmpfloat(g_array_index(a, double, i), ==, g_array_index(b, double, i));
}

/* A result with samples; hash non-NULL names an artifact, bytes non-NULL stores it too. */
static TsDbGateResult *
gate_result(gint64 run, const char *name, gint64 w, double median, const char *hash,
            GBytes *bytes)
{
  TsDbGateResult *r = ts_db_gate_result_new();
  r->run_id = run;
  r->name = g_strdup(name);
  r->workload_id = w;
  r->schedule = g_strdup("block(m=64).warps(4)");
  r->status = TS_DB_TRIAL_OK;
  double s[] = {median * 0.95, median, median * 1.1};
  r->samples_ns = samples_of(s, 3);
  r->median_ns = median;
  /* Stored bytes go under their own SHA-256, which the cache checks: `hash` names only a
   * binary stored before. */
  r->artifact_hash = bytes ? g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, bytes) : g_strdup(hash);
  if (bytes) {
    r->artifact = g_bytes_ref(bytes);
    r->entry = g_strdup("ts_gemm_entry");
    r->launch_ints = g_strdup("72,4032,256");
    r->backend = g_strdup("cpu");
  }
  return r;
}

static gint64
gate_add(TsDb *db, const TsDbGateResult *r)
{
  g_autoptr(GError) error = NULL;
  gint64 id = 0;
  g_assert_true(ts_db_gate_add_result(db, r, &id, &error));
  g_assert_no_error(error);
  g_assert_cmpint(id, >, 0);
  return id;
}

static gint64
gate_begin(TsDb *db, const char *kind, const char *suite, gint64 d, gint64 t,
           const char *commit, gint64 base)
{
  g_autoptr(GError) error = NULL;
  gint64 id = ts_db_gate_begin(db, kind, suite, d, t, commit, FALSE, NULL, base, &error);
  g_assert_no_error(error);
  g_assert_cmpint(id, >, 0);
  return id;
}

static void
gate_end(TsDb *db, gint64 run, const char *status, const char *verdict)
{
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_db_gate_end(db, run, status, verdict, &error));
  g_assert_no_error(error);
}

static int
count_rows(const char *path, const char *table)
{
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  g_autofree char *q = g_strdup_printf("SELECT count(*) FROM %s", table);
  sqlite3_stmt *st = NULL;
  g_assert_cmpint(sqlite3_prepare_v2(sql, q, -1, &st, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
  int n = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(sql);
  return n;
}

/* An error of the gate API: the code, one line, naming the file. */
static void
assert_gate_error(GError **error, TsDbError code, const char *fragment, const char *path)
{
  g_assert_error(*error, TS_DB_ERROR, (int)code);
  g_assert_null(strchr((*error)->message, '\n'));
  g_assert_nonnull(strstr((*error)->message, path));
  if (fragment && !strstr((*error)->message, fragment))
    g_error("'%s' does not say '%s'", (*error)->message, fragment);
  g_clear_error(error);
}

static void
test_gate_roundtrip(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) so = g_bytes_new_static("\177ELF\0\1\2kernel", 14);
  g_autofree char *hash = g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, so);
  gint64 base = ts_db_gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t,
                                 "89abcdef0123456789abcdef0123456789abcdef", TRUE, "ci main", 0,
                                 &error);
  g_assert_no_error(error);

  g_autoptr(TsDbGateResult) a = gate_result(base, "gemm-1024", fx->w, 1000, hash, so);
  gint64 ida = gate_add(fx->db, a);
  /* The same binary again: stored once, shared by hash. */
  g_autoptr(TsDbGateResult) b = gate_result(base, "gemm-1024-again", fx->w, 1010, hash, so);
  gint64 idb = gate_add(fx->db, b);
  /* A hash alone refers to a binary stored before. */
  g_autoptr(TsDbGateResult) c = gate_result(base, "gemm-ref", fx->w, 990, hash, NULL);
  gate_add(fx->db, c);
  /* A failure: no samples, no median, no artifact. */
  g_autoptr(TsDbGateResult) f = ts_db_gate_result_new();
  f->run_id = base;
  f->name = g_strdup("gemm-broken");
  f->workload_id = fx->w;
  f->status = TS_DB_TRIAL_COMPILE_ERROR;
  f->error_text = g_strdup("cc: error");
  gint64 idf = gate_add(fx->db, f);
  g_assert_cmpint(ida, <, idb);
  g_assert_cmpint(count_rows(fx->path, "gate_artifact"), ==, 1);

  g_autoptr(TsDbGateRun) running = ts_db_gate_get_run(fx->db, base, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(running->kind, ==, "baseline");
  g_assert_cmpstr(running->suite, ==, "smoke");
  g_assert_cmpstr(running->status, ==, "running");
  g_assert_null(running->finished_at);
  g_assert_nonnull(running->created_at);
  g_assert_null(running->verdict);
  g_assert_cmpuint(running->n_results, ==, 4);
  g_assert_cmpint(running->device_id, ==, fx->d);
  g_assert_cmpint(running->toolchain_id, ==, fx->t);
  g_assert_cmpstr(running->git_commit, ==, "89abcdef0123456789abcdef0123456789abcdef");
  g_assert_true(running->git_dirty);
  g_assert_cmpstr(running->label, ==, "ci main");
  g_assert_cmpint(running->base_run_id, ==, 0);
  g_assert_cmpstr(running->device_name, ==, "test cpu");
  g_assert_cmpstr(running->device_arch, ==, "x86_64+avx2");
  g_assert_cmpstr(running->toolchain, ==, "gcc 12.2.0 tessera-kgen-1");
  gate_end(fx->db, base, "done", NULL);
  g_autoptr(TsDbGateRun) done = ts_db_gate_get_run(fx->db, base, &error);
  g_assert_cmpstr(done->status, ==, "done");
  g_assert_nonnull(done->finished_at);
  g_assert_cmpstr(done->finished_at, >=, done->created_at);

  /* Insertion order; entry and backend always, bytes only when asked. */
  for (int with = 0; with < 2; with++) {
    g_autoptr(GPtrArray) rs = ts_db_gate_list_results(fx->db, base, with, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(rs->len, ==, 4);
    const TsDbGateResult *ra = rs->pdata[0], *rc = rs->pdata[2], *rf = rs->pdata[3];
    g_assert_cmpint(ra->id, ==, ida);
    g_assert_cmpint(ra->run_id, ==, base);
    g_assert_cmpstr(ra->name, ==, "gemm-1024");
    g_assert_cmpstr(((TsDbGateResult *)rs->pdata[1])->name, ==, "gemm-1024-again");
    g_assert_cmpint(ra->workload_id, ==, fx->w);
    g_assert_cmpstr(ra->schedule, ==, "block(m=64).warps(4)");
    g_assert_cmpint(ra->status, ==, TS_DB_TRIAL_OK);
    assert_samples_equal(ra->samples_ns, a->samples_ns);
    g_assert_cmpfloat(ra->median_ns, ==, 1000);
    g_assert_cmpstr(ra->artifact_hash, ==, hash);
    g_assert_cmpstr(rc->entry, ==, "ts_gemm_entry");
    g_assert_cmpstr(ra->launch_ints, ==, "72,4032,256");
    g_assert_cmpstr(rc->backend, ==, "cpu");
    if (with) {
      g_assert_true(g_bytes_equal(ra->artifact, so));
      g_assert_true(g_bytes_equal(rc->artifact, so));
    } else {
      g_assert_null(ra->artifact);
    }
    /* Unknown numbers come back NAN, absent texts and arrays NULL. */
    g_assert_true(isnan(ra->base_median_ns) && isnan(ra->change) && isnan(ra->p_value) &&
                  isnan(ra->threshold));
    g_assert_null(ra->base_samples_ns);
    g_assert_null(ra->verdict);
    g_assert_null(ra->note);
    g_assert_cmpuint(ra->remeasured, ==, 0);
    g_assert_cmpint(rf->id, ==, idf);
    g_assert_cmpint(rf->status, ==, TS_DB_TRIAL_COMPILE_ERROR);
    g_assert_cmpstr(rf->error_text, ==, "cc: error");
    g_assert_true(isnan(rf->median_ns));
    g_assert_null(rf->samples_ns);
    g_assert_null(rf->artifact_hash);
    g_assert_null(rf->artifact);
    g_assert_null(rf->entry);
    g_assert_null(rf->schedule);
  }

  g_autofree char *entry = NULL, *backend = NULL;
  g_autoptr(GBytes) bytes = ts_db_gate_get_artifact(fx->db, hash, &entry, &backend, &error);
  g_assert_no_error(error);
  g_assert_true(g_bytes_equal(bytes, so));
  g_assert_cmpstr(entry, ==, "ts_gemm_entry");
  g_assert_cmpstr(backend, ==, "cpu");
  g_assert_null(ts_db_gate_get_artifact(fx->db, "abcd", NULL, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_NOT_FOUND, "abcd", fx->path);

  /* A check against it, with every comparison field. */
  gint64 check = gate_begin(fx->db, "check", "smoke", fx->d, fx->t, NULL, base);
  g_autoptr(TsDbGateResult) k = gate_result(check, "gemm-1024", fx->w, 1200, NULL, NULL);
  double bs[] = {1001, 999, NAN, 1003};
  k->base_samples_ns = samples_of(bs, 4);
  k->base_median_ns = 1001;
  k->change = 0.2;
  k->p_value = 1e-6;
  k->threshold = 0.05;
  k->verdict = g_strdup("regression");
  k->remeasured = 2;
  k->note = g_strdup("slower in every round");
  gate_add(fx->db, k);
  gate_end(fx->db, check, "done", "regression");
  g_autoptr(TsDbGateRun) cr = ts_db_gate_get_run(fx->db, check, &error);
  g_assert_cmpstr(cr->kind, ==, "check");
  g_assert_cmpstr(cr->verdict, ==, "regression");
  g_assert_cmpint(cr->base_run_id, ==, base);
  g_assert_null(cr->git_commit);
  g_assert_false(cr->git_dirty);
  g_assert_null(cr->label);
  g_assert_cmpuint(cr->n_results, ==, 1);
  g_autoptr(GPtrArray) ks = ts_db_gate_list_results(fx->db, check, TRUE, &error);
  g_assert_cmpuint(ks->len, ==, 1);
  const TsDbGateResult *kb = ks->pdata[0];
  g_assert_cmpuint(kb->base_samples_ns->len, ==, 4);
  g_assert_cmpfloat(g_array_index(kb->base_samples_ns, double, 1), ==, 999);
  g_assert_true(isnan(g_array_index(kb->base_samples_ns, double, 2)));
  g_assert_cmpfloat(kb->base_median_ns, ==, 1001);
  g_assert_cmpfloat(kb->change, ==, 0.2);
  g_assert_cmpfloat(kb->p_value, ==, 1e-6);
  g_assert_cmpfloat(kb->threshold, ==, 0.05);
  g_assert_cmpstr(kb->verdict, ==, "regression");
  g_assert_cmpuint(kb->remeasured, ==, 2);
  g_assert_cmpstr(kb->note, ==, "slower in every round");
  g_assert_null(kb->artifact);
  g_autoptr(GPtrArray) none = ts_db_gate_list_results(fx->db, 999, FALSE, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(none->len, ==, 0);

  /* Listing: newest first, filtered, limited. */
  gint64 other = gate_begin(fx->db, "baseline", "large", fx->d, fx->t, NULL, 0);
  g_autoptr(GPtrArray) all = ts_db_gate_list_runs(fx->db, NULL, 0, NULL, 0, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(all->len, ==, 3);
  g_assert_cmpint(((TsDbGateRun *)all->pdata[0])->id, ==, other);
  g_assert_cmpint(((TsDbGateRun *)all->pdata[1])->id, ==, check);
  g_assert_cmpint(((TsDbGateRun *)all->pdata[2])->id, ==, base);
  g_assert_cmpuint(((TsDbGateRun *)all->pdata[2])->n_results, ==, 4);
  g_autoptr(GPtrArray) smoke = ts_db_gate_list_runs(fx->db, "smoke", fx->d, NULL, 0, &error);
  g_assert_cmpuint(smoke->len, ==, 2);
  g_autoptr(GPtrArray) bases = ts_db_gate_list_runs(fx->db, NULL, 0, "baseline", 0, &error);
  g_assert_cmpuint(bases->len, ==, 2);
  g_autoptr(GPtrArray) one = ts_db_gate_list_runs(fx->db, NULL, 0, NULL, 1, &error);
  g_assert_cmpuint(one->len, ==, 1);
  g_assert_cmpint(((TsDbGateRun *)one->pdata[0])->id, ==, other);
  g_autoptr(GPtrArray) elsewhere = ts_db_gate_list_runs(fx->db, NULL, 999, NULL, 0, &error);
  g_assert_cmpuint(elsewhere->len, ==, 0);
  g_assert_null(ts_db_gate_list_runs(fx->db, NULL, 0, "nightly", 0, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "nightly", fx->path);
  g_assert_null(ts_db_gate_get_run(fx->db, 999, &error));
  assert_gate_error(&error, TS_DB_ERROR_NOT_FOUND, "no gate run 999", fx->path);
}

static void
test_gate_find(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_db_gate_find_baseline(fx->db, "smoke", fx->d, &error));
  assert_gate_error(&error, TS_DB_ERROR_NOT_FOUND, "no baseline of suite smoke on this device",
                    fx->path);

  TsDbDevice dev2 = test_device;
  dev2.name = "other cpu";
  gint64 d2 = ts_db_ensure_device(fx->db, &dev2, &error);
  const char *c1 = "abcd000000000000000000000000000000000000";
  const char *c2 = "abce000000000000000000000000000000000000";
  gint64 old = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, c1, 0);
  gate_end(fx->db, old, "done", NULL);
  gint64 want = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, c2, 0);
  gate_end(fx->db, want, "done", NULL);
  /* Newer, but none of them a finished baseline of smoke on this device. */
  gint64 failed = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, c1, 0);
  gate_end(fx->db, failed, "failed", NULL);
  gint64 interrupted = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, c1, 0);
  gate_end(fx->db, interrupted, "interrupted", NULL);
  gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, c1, 0); /* still running */
  gint64 check = gate_begin(fx->db, "check", "smoke", fx->d, fx->t, c1, want);
  gate_end(fx->db, check, "done", "pass");
  gint64 there = gate_begin(fx->db, "baseline", "smoke", d2, fx->t, c1, 0);
  gate_end(fx->db, there, "done", NULL);
  gint64 large = gate_begin(fx->db, "baseline", "large", fx->d, fx->t, c1, 0);
  gate_end(fx->db, large, "done", NULL);

  g_autoptr(TsDbGateRun) found = ts_db_gate_find_baseline(fx->db, "smoke", fx->d, &error);
  g_assert_no_error(error);
  g_assert_cmpint(found->id, ==, want);
  g_assert_cmpstr(found->git_commit, ==, c2);
  g_autoptr(TsDbGateRun) found2 = ts_db_gate_find_baseline(fx->db, "smoke", d2, &error);
  g_assert_cmpint(found2->id, ==, there);
  g_assert_null(ts_db_gate_find_baseline(fx->db, "tiny", fx->d, &error));
  assert_gate_error(&error, TS_DB_ERROR_NOT_FOUND, "no baseline of suite tiny", fx->path);

  /* By commit: done runs of either kind, newest first; case-insensitive prefix. */
  g_autoptr(GPtrArray) by1 = ts_db_gate_find_by_commit(fx->db, "smoke", fx->d, "ABCD", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(by1->len, ==, 2);
  gint64 want1[] = {check, old};
  for (guint i = 0; i < 2; i++)
    g_assert_cmpint(((TsDbGateRun *)by1->pdata[i])->id, ==, want1[i]);
  g_autoptr(GPtrArray) by2 = ts_db_gate_find_by_commit(fx->db, "smoke", fx->d, c2, &error);
  g_assert_cmpuint(by2->len, ==, 1);
  g_assert_cmpint(((TsDbGateRun *)by2->pdata[0])->id, ==, want);
  g_autoptr(GPtrArray) on_d2 = ts_db_gate_find_by_commit(fx->db, "smoke", d2, "abcd00", &error);
  g_assert_cmpuint(on_d2->len, ==, 1);
  g_assert_cmpint(((TsDbGateRun *)on_d2->pdata[0])->id, ==, there);
  g_autoptr(GPtrArray) none = ts_db_gate_find_by_commit(fx->db, "smoke", fx->d, "ffff", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(none->len, ==, 0);
  const char *bad[] = {"abc", "", "abcg", "ab*d", "abc%", "abcd efg"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_null(ts_db_gate_find_by_commit(fx->db, "smoke", fx->d, bad[i], &error));
    assert_gate_error(&error, TS_DB_ERROR_INVALID, "hex", fx->path);
  }
}

static void
test_gate_invalid(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) so = g_bytes_new_static("binary", 6);
  g_assert_cmpint(ts_db_gate_begin(fx->db, "nightly", "smoke", fx->d, fx->t, NULL, FALSE, NULL,
                                   0, &error),
                  ==, 0);
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "nightly", fx->path);
  g_assert_cmpint(ts_db_gate_begin(fx->db, "check", "", fx->d, fx->t, NULL, FALSE, NULL, 0,
                                   &error),
                  ==, 0);
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "suite", fx->path);
  g_assert_cmpint(ts_db_gate_begin(fx->db, "check", "smoke", 999, fx->t, NULL, FALSE, NULL, 0,
                                   &error),
                  ==, 0);
  assert_gate_error(&error, TS_DB_ERROR_INVALID, NULL, fx->path);
  g_assert_cmpint(ts_db_gate_begin(fx->db, "check", "smoke", fx->d, fx->t, NULL, FALSE, NULL,
                                   999, &error),
                  ==, 0);
  assert_gate_error(&error, TS_DB_ERROR_INVALID, NULL, fx->path);
  g_assert_cmpint(count_rows(fx->path, "gate_run"), ==, 0);

  gint64 run = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, NULL, 0);
  g_autoptr(TsDbGateResult) r = gate_result(run, "gemm", fx->w, 100, "aaaa", so);
  gate_add(fx->db, r);

  /* A second result of the same name loses nothing, and its new artifact is not kept. */
  g_autoptr(TsDbGateResult) dup = gate_result(run, "gemm", fx->w, 50, "bbbb", so);
  g_assert_false(ts_db_gate_add_result(fx->db, dup, NULL, &error));
  g_autofree char *dup_msg =
      g_strdup_printf("run %" G_GINT64_FORMAT " already has a result named gemm", run);
  assert_gate_error(&error, TS_DB_ERROR_INVALID, dup_msg, fx->path);
  g_assert_null(ts_db_gate_get_artifact(fx->db, "bbbb", NULL, NULL, &error));
  g_clear_error(&error);
  g_autoptr(GPtrArray) kept = ts_db_gate_list_results(fx->db, run, TRUE, &error);
  g_assert_cmpuint(kept->len, ==, 1);
  g_assert_cmpfloat(((TsDbGateResult *)kept->pdata[0])->median_ns, ==, 100);

  /* Bad results. */
  g_autoptr(TsDbGateResult) bad = gate_result(run, "other", fx->w, 100, NULL, NULL);
  bad->verdict = g_strdup("faster");
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "faster", fx->path);
  g_clear_pointer(&bad->verdict, g_free);
  bad->status = (TsDbTrialStatus)42;
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "status", fx->path);
  bad->status = TS_DB_TRIAL_OK;
  bad->artifact_hash = g_strdup("cccc");
  bad->artifact = g_bytes_ref(so);
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error)); /* no entry, no backend */
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "entry", fx->path);
  g_clear_pointer(&bad->artifact_hash, g_free);
  bad->entry = g_strdup("e");
  bad->backend = g_strdup("cpu");
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "hash", fx->path);
  bad->artifact_hash = g_strdup("NOT-HEX");
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "NOT-HEX", fx->path);
  g_clear_pointer(&bad->artifact_hash, g_free);
  g_clear_pointer(&bad->artifact, g_bytes_unref);
  bad->launch_ints = g_strdup("72,40x");
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "72,40x", fx->path);
  g_clear_pointer(&bad->launch_ints, g_free);
  bad->artifact = g_bytes_ref(so);
  /* Bytes stored under a hash that is not theirs could never be trusted later. */
  g_free(bad->artifact_hash);
  bad->artifact_hash = g_strdup("cccc");
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "is not the SHA-256 of its bytes", fx->path);
  g_clear_pointer(&bad->artifact, g_bytes_unref);
  g_free(bad->artifact_hash);
  bad->artifact_hash = g_strdup("dddd"); /* never stored */
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, NULL, fx->path);
  g_clear_pointer(&bad->artifact_hash, g_free);
  bad->workload_id = 999;
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, NULL, fx->path);
  bad->workload_id = fx->w;
  bad->run_id = 999;
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "no gate run 999", fx->path);
  bad->run_id = run;
  g_assert_cmpint(count_rows(fx->path, "gate_result"), ==, 1);
  g_assert_cmpint(count_rows(fx->path, "gate_artifact"), ==, 1);

  /* Bad ends. */
  g_assert_false(ts_db_gate_end(fx->db, run, "finished", NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "finished", fx->path);
  g_assert_false(ts_db_gate_end(fx->db, run, "running", NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "running", fx->path);
  g_assert_false(ts_db_gate_end(fx->db, run, "done", "improved", &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "improved", fx->path);
  g_assert_false(ts_db_gate_end(fx->db, run, "done", "pass", &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "baseline", fx->path);
  g_assert_false(ts_db_gate_end(fx->db, 999, "done", NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_NOT_FOUND, "999", fx->path);

  /* An ended run takes no more results and does not end again. */
  gate_end(fx->db, run, "done", NULL);
  g_assert_false(ts_db_gate_add_result(fx->db, bad, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "already ended", fx->path);
  g_assert_false(ts_db_gate_end(fx->db, run, "failed", NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_INVALID, "already ended", fx->path);
  g_autoptr(TsDbGateRun) still = ts_db_gate_get_run(fx->db, run, &error);
  g_assert_cmpstr(still->status, ==, "done");
  g_assert_cmpuint(still->n_results, ==, 1);
}

static void
test_gate_read_only(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) so = g_bytes_new_static("binary", 6);
  gint64 run = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, "abcdef12", 0);
  g_autoptr(TsDbGateResult) r = gate_result(run, "gemm", fx->w, 100, "aaaa", so);
  gate_add(fx->db, r);

  g_autoptr(TsDb) ro = ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_db_gate_begin(ro, "check", "smoke", fx->d, fx->t, NULL, FALSE, NULL, 0,
                                   &error),
                  ==, 0);
  assert_gate_error(&error, TS_DB_ERROR_READ_ONLY, "read-only", fx->path);
  g_autoptr(TsDbGateResult) r2 = gate_result(run, "gemm2", fx->w, 100, "bbbb", so);
  g_assert_false(ts_db_gate_add_result(ro, r2, NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_READ_ONLY, "read-only", fx->path);
  g_assert_false(ts_db_gate_end(ro, run, "done", NULL, &error));
  assert_gate_error(&error, TS_DB_ERROR_READ_ONLY, "read-only", fx->path);

  /* Reads work. */
  g_autoptr(TsDbGateRun) got = ts_db_gate_get_run(ro, run, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(got->status, ==, "running");
  g_autoptr(GPtrArray) rs = ts_db_gate_list_results(ro, run, TRUE, &error);
  g_assert_cmpuint(rs->len, ==, 1);
  g_assert_true(g_bytes_equal(((TsDbGateResult *)rs->pdata[0])->artifact, so));
  g_autoptr(GPtrArray) runs = ts_db_gate_list_runs(ro, "smoke", fx->d, "baseline", 0, &error);
  g_assert_cmpuint(runs->len, ==, 1);
  g_autoptr(GBytes) bytes = ts_db_gate_get_artifact(ro, r->artifact_hash, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_true(g_bytes_equal(bytes, so));
}

/* A version-2 file as an older build left it: no gate tables. */
static void
make_v2(const char *path)
{
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_exec(sql,
                               "DROP TABLE kernel_source;"
                               " DROP TABLE trial_claim; DROP TABLE profile_event;"
                               " DROP TABLE profile; DROP TABLE gate_result; DROP TABLE gate_artifact;"
                               " DROP TABLE gate_run; ALTER TABLE tune_run DROP COLUMN pid;"
                               " ALTER TABLE tune_run DROP COLUMN host;"
                               " ALTER TABLE trial DROP COLUMN host; ALTER TABLE trial DROP COLUMN rank;"
                               " PRAGMA user_version = 2;",
                               NULL, NULL, NULL),
                  ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_close(sql), ==, SQLITE_OK);
}

static void
test_gate_migrate_v2(Fx *fx, gconstpointer data)
{
  g_assert_cmpint(ts_db_schema_version(), ==, 9);
  gint64 a = add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  g_assert_true(ts_db_set_best(fx->db, fx->w, fx->d, fx->t, a, NULL));
  g_clear_pointer(&fx->db, ts_db_close);
  make_v2(fx->path);

  g_autoptr(GError) error = NULL;
  g_assert_null(ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NEEDS_UPGRADE);
  g_clear_error(&error);
  fx->db = ts_db_open(fx->path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  g_autofree char *msg = NULL;
  g_assert_true(ts_db_check_integrity(fx->db, &msg));

  g_autoptr(TsDbTrial) t = ts_db_get_trial(fx->db, a, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(t->schedule, ==, "block(m=64)");
  g_autoptr(TsDbTrial) best = ts_db_get_best(fx->db, fx->w, fx->d, fx->t, &error);
  g_assert_cmpint(best->id, ==, a);

  gint64 run = gate_begin(fx->db, "baseline", "smoke", fx->d, fx->t, NULL, 0);
  g_autoptr(TsDbGateResult) r = gate_result(run, "gemm", fx->w, 100, NULL, NULL);
  gate_add(fx->db, r);
  gate_end(fx->db, run, "done", NULL);
  g_autoptr(TsDbGateRun) found = ts_db_gate_find_baseline(fx->db, "smoke", fx->d, &error);
  g_assert_no_error(error);
  g_assert_cmpint(found->id, ==, run);

  /* Now at version 3: a read-only open is fine. */
  g_autoptr(TsDb) ro = ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, &error);
  g_assert_no_error(error);
  g_assert_true(ts_db_is_read_only(ro));
}

/* A profile and its timeline in one transaction; read back in order; a bad event stores
 * nothing. */
static void
test_profile(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  gint64 trial = add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  TsDbEvent ev[] = {
      {.kind = "range", .name = "tessera: measure", .dur_ns = 1000, .lane = 7},
      {.kind = "alloc",
       .name = "alloc",
       .start_ns = 10,
       .bytes = 4096,
       .address = 0xabc,
       .lane = 7},
      {.kind = "kernel",
       .name = "ts_gemm_1",
       .start_ns = 100,
       .dur_ns = 800,
       .lane = 7,
       .depth = 1,
       .detail = "timed"},
      {.kind = "free", .name = "free", .start_ns = 950, .bytes = 4096, .address = 0xabc, .lane = 7},
  };
  TsDbProfile p = {.workload_id = fx->w, .device_id = fx->d, .toolchain_id = fx->t,
                   .trial_id = trial, .kind = "run", .schedule = "block(m=64)",
                   .summary_json = "{\"median_ns\": 800}", .t0_ns = 123456789};
  gint64 id = 0;
  g_assert_true(ts_db_add_profile(fx->db, &p, ev, G_N_ELEMENTS(ev), &id, &error));
  g_assert_no_error(error);
  g_assert_cmpint(id, >, 0);
  g_autoptr(TsDbProfile) back = ts_db_get_profile(fx->db, id, &error);
  g_assert_no_error(error);
  g_assert_cmpint(back->trial_id, ==, trial);
  g_assert_cmpint(back->t0_ns, ==, 123456789);
  g_assert_cmpuint(back->n_events, ==, 4);
  g_assert_cmpstr(back->kind, ==, "run");
  g_autoptr(GArray) got = ts_db_profile_events(fx->db, id, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(got->len, ==, 4);
  for (guint i = 0; i < got->len; i++) {
    const TsDbEvent *e = &g_array_index(got, TsDbEvent, i);
    g_assert_cmpstr(e->kind, ==, ev[i].kind);
    g_assert_cmpstr(e->name, ==, ev[i].name);
    g_assert_cmpint(e->start_ns, ==, ev[i].start_ns);
    g_assert_cmpint(e->dur_ns, ==, ev[i].dur_ns);
    g_assert_cmpuint(e->bytes, ==, ev[i].bytes);
    g_assert_cmpuint(e->address, ==, ev[i].address);
    g_assert_cmpuint(e->depth, ==, ev[i].depth);
    g_assert_cmpstr(e->detail, ==, ev[i].detail);
  }
  /* A whole-session profile: no workload, no trial. */
  TsDbProfile q = {.device_id = fx->d, .toolchain_id = fx->t, .kind = "tune", .t0_ns = 1};
  gint64 id2 = 0;
  g_assert_true(ts_db_add_profile(fx->db, &q, NULL, 0, &id2, &error));
  g_autoptr(GPtrArray) all = ts_db_list_profiles(fx->db, 0, &error);
  g_assert_cmpuint(all->len, ==, 2);
  g_assert_cmpint(((TsDbProfile *)all->pdata[0])->id, ==, id2); /* newest first */
  g_autoptr(GPtrArray) mine = ts_db_list_profiles(fx->db, fx->w, &error);
  g_assert_cmpuint(mine->len, ==, 1);

  TsDbEvent bad[] = {ev[0], {.kind = "teleport", .name = "x", .address = 0}};
  g_assert_false(ts_db_add_profile(fx->db, &p, bad, 2, NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_INVALID);
  g_assert_nonnull(strstr(error->message, "teleport"));
  g_clear_error(&error);
  g_autoptr(GPtrArray) still = ts_db_list_profiles(fx->db, 0, &error);
  g_assert_cmpuint(still->len, ==, 2);
  g_assert_null(ts_db_get_profile(fx->db, 999, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
}

/* ---- files that are not ours (issue: a foreign SQLite file was switched to WAL and given our
 * tables; a negative user_version indexed the migrations out of bounds) ---- */

static GBytes *
file_bytes(const char *path)
{
  char *data = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &data, &len, NULL));
  return g_bytes_new_take(data, len);
}

static void
make_sqlite(const char *path, const char *sql_text)
{
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_exec(sql, sql_text, NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_close(sql), ==, SQLITE_OK);
}

/* Refused read-write and read-only, TS_DB_ERROR_FOREIGN saying `needle`, and left exactly as
 * it was: same bytes, no -wal or -shm beside it. */
static void
assert_refused_untouched(const char *path, const char *needle)
{
  g_autoptr(GBytes) before = file_bytes(path);
  for (int ro = 0; ro <= 1; ro++) {
    g_autoptr(GError) error = NULL;
    g_assert_null(ts_db_open(path, ro ? TS_DB_OPEN_READ_ONLY : TS_DB_OPEN_DEFAULT, &error));
    g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_FOREIGN);
    if (strstr(error->message, needle) == NULL || strstr(error->message, "left untouched") == NULL)
      g_error("'%s' does not say '%s' and that the file was left untouched", error->message,
              needle);
  }
  g_autoptr(GBytes) after = file_bytes(path);
  g_assert_true(g_bytes_equal(before, after));
  g_autofree char *wal = g_strconcat(path, "-wal", NULL);
  g_autofree char *shm = g_strconcat(path, "-shm", NULL);
  g_assert_false(g_file_test(wal, G_FILE_TEST_EXISTS));
  g_assert_false(g_file_test(shm, G_FILE_TEST_EXISTS));
}

static void
test_foreign_files(Fx *fx, gconstpointer data)
{
  /* Another application's database, with no id: tables of its own. */
  g_autofree char *other = g_build_filename(fx->dir, "other.db", NULL);
  make_sqlite(other, "CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT);"
                     "INSERT INTO notes (text) VALUES ('mine');");
  assert_refused_untouched(other, "holds 1 table of its own");
  /* ... with a user_version that happens to be one of ours. */
  g_autofree char *versioned = g_build_filename(fx->dir, "versioned.db", NULL);
  make_sqlite(versioned, "CREATE TABLE trial (x); PRAGMA user_version = 3;");
  assert_refused_untouched(versioned, "schema version 3");
  /* ... with an application id of its own. */
  g_autofree char *app = g_build_filename(fx->dir, "app.db", NULL);
  make_sqlite(app, "PRAGMA application_id = 1234567; CREATE TABLE t (x);");
  assert_refused_untouched(app, "another application (application_id 0x0012d687)");
  /* Negative schema versions: no build writes them; they indexed the migrations table. */
  for (int i = 0; i < 3; i++) {
    static const char *const pragmas[] = {"PRAGMA user_version = -1;",
                                          "PRAGMA user_version = -5;",
                                          "PRAGMA user_version = -2147483648;"};
    g_autofree char *neg = g_strdup_printf("%s/neg%d.db", fx->dir, i);
    make_sqlite(neg, pragmas[i]);
    assert_refused_untouched(neg, "is not one any build writes");
  }
}

/* A new cache carries our application id; one made before the id existed (id 0, our tables)
 * is still ours: read-only opens read it as it is, the first read-write open claims it. */
static void
test_application_id(Fx *fx, gconstpointer data)
{
  sqlite3 *sql = NULL;
  int id = 0;
  g_assert_cmpint(sqlite3_open(fx->path, &sql), ==, SQLITE_OK);
  sqlite3_stmt *stmt = NULL;
  g_assert_cmpint(sqlite3_prepare_v2(sql, "PRAGMA application_id", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
  id = sqlite3_column_int(stmt, 0);
  sqlite3_finalize(stmt);
  g_assert_cmpint(id, ==, TS_DB_APPLICATION_ID);
  g_clear_pointer(&fx->db, ts_db_close);
  g_assert_cmpint(sqlite3_exec(sql, "PRAGMA application_id = 0", NULL, NULL, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_close(sql), ==, SQLITE_OK);

  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) ro = ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, &error);
  g_assert_no_error(error);
  g_clear_pointer(&ro, ts_db_close);
  fx->db = ts_db_open(fx->path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  g_assert_cmpint(sqlite3_open(fx->path, &sql), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_prepare_v2(sql, "PRAGMA application_id", -1, &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
  g_assert_cmpint(sqlite3_column_int(stmt, 0), ==, TS_DB_APPLICATION_ID);
  sqlite3_finalize(stmt);
  sqlite3_close(sql);
}

/* JSON nested past TS_DB_JSON_MAX_DEPTH is refused before json-glib's recursive parser sees
 * it (100,000 deep crashed import); brackets inside strings do not count. */
static void
test_json_depth(Fx *fx, gconstpointer data)
{
  g_assert_true(ts_db_json_depth_ok("{\"a\": [1, {\"b\": \"[[[[\\\"{{\"}]}", -1, NULL));
  g_autoptr(GString) ok = g_string_new(NULL);
  for (int i = 0; i < TS_DB_JSON_MAX_DEPTH; i++)
    g_string_append_c(ok, '[');
  g_assert_true(ts_db_json_depth_ok(ok->str, (gssize)ok->len, NULL));
  g_string_append_c(ok, '{');
  gsize at = 0;
  g_assert_false(ts_db_json_depth_ok(ok->str, (gssize)ok->len, &at));
  g_assert_cmpuint(at, ==, TS_DB_JSON_MAX_DEPTH);

  g_autoptr(GString) deep = g_string_new(NULL);
  for (int i = 0; i < 100000; i++)
    g_string_append_c(deep, '[');
  for (int i = 0; i < 100000; i++)
    g_string_append_c(deep, ']');
  g_autoptr(GError) error = NULL;
  g_assert_false(ts_db_import_json(fx->db, deep->str, (gssize)deep->len, NULL, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT);
  g_assert_nonnull(strstr(error->message, "nested more than 512 deep (at byte 512)"));
}

/* Outputs the user names are written through when they are not regular files (a rename used to
 * replace a symlink, a FIFO or a device node — /dev/full, as root — with a plain file). */
static gpointer
read_fifo(gpointer path)
{
  char *text = NULL;
  g_file_get_contents(path, &text, NULL, NULL);
  return text;
}

static void
test_output_write_through(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  /* A regular file, or none yet: replaced whole. */
  g_autofree char *plain = g_build_filename(fx->dir, "plain.txt", NULL);
  g_assert_true(ts_output_write(plain, "one", -1, &error));
  g_assert_true(ts_output_write(plain, "two", -1, &error));
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(plain, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "two");
  /* A symlink: its target gets the output, the link stays a link. */
  g_autofree char *link = g_build_filename(fx->dir, "link.txt", NULL);
  g_assert_cmpint(symlink("plain.txt", link), ==, 0);
  g_assert_true(ts_output_write(link, "three", -1, &error));
  g_assert_no_error(error);
  g_assert_true(g_file_test(link, G_FILE_TEST_IS_SYMLINK));
  g_clear_pointer(&text, g_free);
  g_assert_true(g_file_get_contents(plain, &text, NULL, NULL));
  g_assert_cmpstr(text, ==, "three");
  /* A FIFO: its reader gets the output. */
  g_autofree char *fifo = g_build_filename(fx->dir, "fifo", NULL);
  g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
  GThread *reader = g_thread_new("reader", read_fifo, fifo);
  g_assert_true(ts_output_write(fifo, "through the pipe", -1, &error));
  g_assert_no_error(error);
  g_autofree char *got = g_thread_join(reader);
  g_assert_cmpstr(got, ==, "through the pipe");
  GStatBuf st;
  g_assert_cmpint(g_lstat(fifo, &st), ==, 0);
  g_assert_true(S_ISFIFO(st.st_mode));
  /* Devices stay devices: /dev/null takes it, /dev/full says it is full. */
  g_assert_true(ts_output_write("/dev/null", "nothing", -1, &error));
  g_assert_no_error(error);
  g_assert_false(ts_output_write("/dev/full", "too much", -1, &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_NOSPC);
  g_assert_nonnull(strstr(error->message, "/dev/full"));
  g_clear_error(&error);
  g_assert_cmpint(g_lstat("/dev/full", &st), ==, 0);
  g_assert_true(S_ISCHR(st.st_mode));
  /* A link to itself is refused, not followed forever. */
  g_autofree char *loop = g_build_filename(fx->dir, "loop", NULL);
  g_assert_cmpint(symlink("loop", loop), ==, 0);
  g_assert_false(ts_output_write(loop, "x", -1, &error));
  g_assert_nonnull(strstr(error->message, "Too many levels of symbolic links"));
  g_clear_error(&error);
  /* A directory is refused by name. */
  g_assert_false(ts_output_write(fx->dir, "x", -1, &error));
  g_assert_error(error, G_FILE_ERROR, G_FILE_ERROR_ISDIR);
}

/* The id of a process that has just exited (what a killed tuner leaves behind). */
static GPid
dead_pid(void)
{
  GPid child = fork();
  if (child == 0)
    _exit(0);
  g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
  return child;
}

/* SQL run on the file directly, as another program (or a hand) would. */
G_GNUC_PRINTF(2, 3)
static void
exec_sql(const char *path, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *q = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  sqlite3 *sql = NULL;
  g_assert_cmpint(sqlite3_open(path, &sql), ==, SQLITE_OK);
  g_assert_cmpint(sqlite3_exec(sql, q, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close(sql);
}

/* A run whose process is gone (kill -9) is closed as 'interrupted' when the next run on this
 * host begins; one of a live process, or of another host, is left alone. */
static void
test_reap_runs(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  gint64 killed = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 1, "evals=10", &error);
  gint64 elsewhere = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 2, "evals=10", &error);
  gint64 alive = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 3, "evals=10", &error);
  g_assert_no_error(error);
  GPid child = dead_pid();
  exec_sql(fx->path, "UPDATE tune_run SET pid = %d WHERE id = %" G_GINT64_FORMAT ";"
                     "UPDATE tune_run SET pid = %d, host = 'another-host' WHERE id = %"
                     G_GINT64_FORMAT ";"
                     "UPDATE tune_run SET pid = 1 WHERE id = %" G_GINT64_FORMAT ";",
           (int)child, killed, (int)child, elsewhere, alive);

  gint64 next = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 4, "evals=10", &error);
  g_assert_no_error(error);
  g_assert_cmpint(next, >, 0);
  g_autoptr(GPtrArray) runs = ts_db_list_runs(fx->db, fx->w, fx->d, fx->t, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < runs->len; i++) {
    const TsDbRun *r = g_ptr_array_index(runs, i);
    const char *want = r->id == killed ? "interrupted" : "running";
    if (g_strcmp0(r->status, want) != 0)
      g_error("run %" G_GINT64_FORMAT ": %s, wanted %s", r->id, r->status, want);
  }
}

static TsDbClaim
claim(Fx *fx, gint64 run, const char *hash, gint64 *other)
{
  g_autoptr(GError) error = NULL;
  TsDbClaim c = TS_DB_CLAIM_OURS;
  g_assert_true(ts_db_claim_point(fx->db, run, fx->w, fx->d, fx->t, hash, &c, other, &error));
  g_assert_no_error(error);
  return c;
}

/* Tuners on one key at once: the first to claim a point measures it, the others see it taken
 * until its trial is stored, then stored. A claim dies with its run: ended, or killed. */
static void
test_claims(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  gint64 a = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 1, "evals=10", &error);
  gint64 b = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 1, "evals=10", &error);
  g_assert_no_error(error);
  const char *p1 = "00000000000000a1", *p2 = "00000000000000a2", *p3 = "00000000000000a3";
  gint64 other = -1;
  g_assert_cmpint(claim(fx, a, p1, &other), ==, TS_DB_CLAIM_OURS);
  g_assert_cmpint(other, ==, 0);
  g_assert_cmpint(claim(fx, a, p1, &other), ==, TS_DB_CLAIM_OURS); /* its own, again */
  g_assert_cmpint(claim(fx, b, p1, &other), ==, TS_DB_CLAIM_TAKEN);
  g_assert_cmpint(other, ==, a);

  /* a stores p1: b now reads a's trial instead of measuring. */
  g_autoptr(TsDbTrial) t = ts_db_trial_new();
  t->workload_id = fx->w;
  t->device_id = fx->d;
  t->toolchain_id = fx->t;
  t->run_id = a;
  t->schedule = g_strdup("block(m=1)");
  t->hash = g_strdup(p1);
  t->status = TS_DB_TRIAL_OK;
  t->median_ns = 1000;
  gint64 trial_id = 0;
  g_assert_true(ts_db_add_trial(fx->db, t, &trial_id, NULL, &error));
  g_assert_no_error(error);
  g_assert_cmpint(claim(fx, b, p1, &other), ==, TS_DB_CLAIM_STORED);
  g_assert_cmpint(other, ==, trial_id);

  /* Ending a run releases its claims. */
  g_assert_cmpint(claim(fx, a, p2, &other), ==, TS_DB_CLAIM_OURS);
  g_assert_true(ts_db_end_run(fx->db, a, "done", &error));
  g_assert_cmpint(claim(fx, b, p2, &other), ==, TS_DB_CLAIM_OURS);

  /* A run killed without ending (its process gone) loses its claims to the next claimant. */
  g_assert_cmpint(claim(fx, b, p3, &other), ==, TS_DB_CLAIM_OURS);
  gint64 c = ts_db_begin_run(fx->db, fx->w, fx->d, fx->t, "random", 1, "evals=10", &error);
  g_assert_no_error(error);
  g_assert_cmpint(claim(fx, c, p3, &other), ==, TS_DB_CLAIM_TAKEN);
  exec_sql(fx->path, "UPDATE tune_run SET pid = %d WHERE id = %" G_GINT64_FORMAT,
           (int)dead_pid(), b);
  g_assert_cmpint(claim(fx, c, p3, &other), ==, TS_DB_CLAIM_OURS);
}

/* A re-measured incumbent: new samples, and the median, min and max they give. */
static void
test_update_samples(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  gint64 id = add(fx->db, fx->w, fx->d, fx->t, "block(m=64)", TS_DB_TRIAL_OK, 300, NULL);
  g_autoptr(GArray) s = g_array_new(FALSE, FALSE, sizeof(double));
  const double v[] = {12, 10, 11, 30};
  g_array_append_vals(s, v, G_N_ELEMENTS(v));
  g_assert_true(ts_db_update_trial_samples(fx->db, id, s, &error));
  g_assert_no_error(error);
  g_autoptr(TsDbTrial) t = ts_db_get_trial(fx->db, id, &error);
  g_assert_cmpfloat(t->median_ns, ==, 11.5);
  g_assert_cmpfloat(t->min_ns, ==, 10);
  g_assert_cmpfloat(t->max_ns, ==, 30);
  g_assert_cmpuint(t->samples_ns->len, ==, 4);
  g_assert_cmpfloat(g_array_index(t->samples_ns, double, 3), ==, 30);
  gint64 bad = add(fx->db, fx->w, fx->d, fx->t, "block(m=32)", TS_DB_TRIAL_WRONG_RESULT, 0, NULL);
  g_assert_false(ts_db_update_trial_samples(fx->db, bad, s, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
}

/* A kernel file's source kept beside its trials: stored once (a second store keeps the first,
 * as two processes tuning one kernel would), read back with its path, absent otherwise. */
static void
test_kernel_source(Fx *fx, gconstpointer data)
{
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_db_put_kernel_source(fx->db, "kernel:k@00000000", "k.tsk", "def k(): pass\n",
                                        &error));
  g_assert_true(ts_db_put_kernel_source(fx->db, "kernel:k@00000000", "other.tsk", "changed",
                                        &error));
  g_assert_true(ts_db_put_kernel_source(fx->db, "kernel:n@11111111", NULL, "def n(): pass\n",
                                        &error));
  g_assert_no_error(error);
  g_autofree char *path = NULL, *src = NULL, *path2 = NULL, *src2 = NULL;
  g_assert_true(ts_db_get_kernel_source(fx->db, "kernel:k@00000000", &path, &src, &error));
  g_assert_cmpstr(path, ==, "k.tsk");
  g_assert_cmpstr(src, ==, "def k(): pass\n");
  g_assert_true(ts_db_get_kernel_source(fx->db, "kernel:n@11111111", &path2, &src2, &error));
  g_assert_null(path2);
  g_autofree char *none = NULL;
  g_assert_false(ts_db_get_kernel_source(fx->db, "kernel:x@22222222", NULL, &none, &error));
  g_assert_error(error, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND);
  g_assert_nonnull(strstr(error->message, "kernel:x@22222222"));
  g_assert_null(none);
  /* Export carries the sources of the exported workloads' ops; import stores them. */
  g_clear_error(&error);
  g_assert_cmpint(ts_db_ensure_workload(fx->db, "kernel:k@00000000", "N=8", "f32", &error), >, 0);
  g_autofree char *doc = ts_db_export_json(fx->db, 0, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(doc, "\"kernel_sources\""));
  g_assert_null(strstr(doc, "kernel:n@11111111")); /* no workload of it */
  g_autofree char *other = g_build_filename(fx->dir, "other.db", NULL);
  {
    g_autoptr(TsDb) db2 = ts_db_open(other, TS_DB_OPEN_DEFAULT, &error);
    g_assert_no_error(error);
    TsDbImportStats st = {0};
    g_assert_true(ts_db_import_json(db2, doc, -1, &st, &error));
    g_assert_no_error(error);
    g_autofree char *src3 = NULL;
    g_assert_true(ts_db_get_kernel_source(db2, "kernel:k@00000000", NULL, &src3, &error));
    g_assert_cmpstr(src3, ==, "def k(): pass\n");
    /* A document whose kernel source names no kernel op is refused, whole. */
    g_autoptr(GString) bad = g_string_new(doc);
    g_string_replace(bad, "\"kernel:k@00000000\"", "\"gemm\"", 0);
    g_assert_false(ts_db_import_json(db2, bad->str, -1, &st, &error));
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "$.kernel_sources[0].op"));
    g_clear_error(&error);
  }
  /* Read-only: a stored source is found without a write. */
  g_autoptr(TsDb) ro = ts_db_open(fx->path, TS_DB_OPEN_READ_ONLY, NULL);
  g_assert_nonnull(ro);
  g_clear_error(&error);
  g_assert_true(ts_db_put_kernel_source(ro, "kernel:k@00000000", "k.tsk", "def k(): pass\n",
                                        &error));
  g_assert_no_error(error);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add("/db/" name, Fx, NULL, fx_setup, fn, fx_teardown)
  ADD("schema", test_schema);
  ADD("kernel-source", test_kernel_source);
  ADD("keys", test_keys);
  ADD("trials", test_trials);
  ADD("runs-models", test_runs_models);
  ADD("lookup", test_lookup);
  ADD("nearest", test_nearest);
  ADD("export-import", test_export_import);
  ADD("import-malformed", test_import_malformed);
  ADD("fault/bad-paths", test_bad_paths);
  ADD("fault/truncated", test_truncated);
  ADD("fault/too-new", test_too_new);
  ADD("fault/foreign-files", test_foreign_files);
  ADD("application-id", test_application_id);
  ADD("json-depth", test_json_depth);
  ADD("runs/reap", test_reap_runs);
  ADD("runs/claims", test_claims);
  ADD("trials/update-samples", test_update_samples);
  ADD("output/write-through", test_output_write_through);
  ADD("fault/read-only-handle", test_read_only_handle);
  ADD("fault/read-only-files", test_read_only_files);
  ADD("process/kill-writer", test_kill_writer);
  ADD("process/four-writers", test_four_writers);
  ADD("gate/roundtrip", test_gate_roundtrip);
  ADD("gate/find", test_gate_find);
  ADD("gate/invalid", test_gate_invalid);
  ADD("gate/read-only-handle", test_gate_read_only);
  ADD("gate/migrate-v2", test_gate_migrate_v2);
  ADD("profile", test_profile);
  return g_test_run();
}
