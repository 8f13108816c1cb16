/* db_bench.c — schedule cache throughput: ts_db_lookup for a repeated key (LRU hits) and for
 * distinct keys (each one a SQLite query), and trials stored per second (one BEGIN IMMEDIATE
 * transaction each). Writes to a fresh file in a temporary directory.
 *
 *   db_bench [N_WORKLOADS] [N_LOOKUPS] [N_TRIALS]     defaults 2000 2000000 5000
 */
#include "ts-db.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>

static double
seconds(gint64 t0)
{
  return (double)(g_get_monotonic_time() - t0) / 1e6;
}

int
main(int argc, char **argv)
{
  guint n_workloads = argc > 1 ? (guint)strtoul(argv[1], NULL, 10) : 2000;
  guint n_lookups = argc > 2 ? (guint)strtoul(argv[2], NULL, 10) : 2000000;
  guint n_trials = argc > 3 ? (guint)strtoul(argv[3], NULL, 10) : 5000;
  printf("command:");
  for (int i = 0; i < argc; i++)
    printf(" %s", argv[i]);
  printf("\nSQLite %s, %u workloads, %u lookups, %u trials\n", sqlite3_libversion(),
         n_workloads, n_lookups, n_trials);

  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("db-bench-XXXXXX", &error);
  g_autofree char *path = g_build_filename(dir, "schedules.db", NULL);
  TsDb *db = ts_db_open(path, TS_DB_OPEN_DEFAULT, &error);
  if (!db) {
    fprintf(stderr, "db_bench: %s\n", error->message);
    return 1;
  }
  TsDbDevice dev = {.backend = "cpu", .name = "bench cpu", .arch = "x86_64"};
  gint64 d = ts_db_ensure_device(db, &dev, &error);
  gint64 t = ts_db_ensure_toolchain(db, "gcc bench", "tessera-kgen-1", &error);

  /* Trials stored per second: one transaction each, as the tuner commits them. */
  gint64 w0 = ts_db_ensure_workload(db, "gemm", "M=1,N=1,K=1", "f32", &error);
  g_autoptr(TsDbTrial) trial = ts_db_trial_new();
  trial->workload_id = w0, trial->device_id = d, trial->toolchain_id = t;
  trial->status = TS_DB_TRIAL_OK;
  trial->samples_ns = g_array_new(FALSE, FALSE, sizeof(double));
  for (int s = 0; s < 20; s++) {
    double v = 1000 + s;
    g_array_append_val(trial->samples_ns, v);
  }
  trial->metrics_json = g_strdup("{\"gflops\": 100.0, \"gbps\": 20.0}");
  trial->strategy = g_strdup("random");
  gint64 t0 = g_get_monotonic_time();
  for (guint i = 0; i < n_trials; i++) {
    g_free(trial->schedule);
    trial->schedule = g_strdup_printf("block(m=%u,n=64,k=32).warps(4).stages(3)", i);
    trial->median_ns = 1000 + i % 101;
    if (!ts_db_add_trial(db, trial, NULL, NULL, &error)) {
      fprintf(stderr, "db_bench: %s\n", error->message);
      return 1;
    }
  }
  double trial_s = seconds(t0);

  /* Workloads with a best trial each, for the lookups. */
  g_autoptr(GPtrArray) shapes = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n_workloads; i++) {
    char *shape = g_strdup_printf("M=%u,N=1024,K=1024", 16 * (i + 1));
    g_ptr_array_add(shapes, shape);
    gint64 w = ts_db_ensure_workload(db, "gemm", shape, "f32", &error);
    trial->workload_id = w;
    g_free(trial->schedule);
    trial->schedule = g_strdup("block(m=128,n=128,k=64).warps(8)");
    gint64 id = 0;
    if (!w || !ts_db_add_trial(db, trial, &id, NULL, &error) ||
        !ts_db_set_best(db, w, d, t, id, &error)) {
      fprintf(stderr, "db_bench: %s\n", error->message);
      return 1;
    }
  }

  TsDbKey key = {.op = "gemm", .dtype = "f32", .device_arch = "x86_64",
                 .device_name = "bench cpu", .toolchain = "gcc bench",
                 .kgen_version = "tessera-kgen-1"};
  /* Repeated key: LRU hits after the first. */
  key.shape = shapes->pdata[0];
  TsDbLookupResult r = {0};
  t0 = g_get_monotonic_time();
  for (guint i = 0; i < n_lookups; i++) {
    ts_db_lookup_result_clear(&r);
    if (!ts_db_lookup(db, &key, &r, &error)) {
      fprintf(stderr, "db_bench: %s\n", error->message);
      return 1;
    }
  }
  double hit_s = seconds(t0);

  /* Distinct keys with the LRU off: every lookup is a query. */
  ts_db_set_lookup_cache_size(db, 0);
  guint n_miss = n_lookups / 20 > 0 ? n_lookups / 20 : 1;
  t0 = g_get_monotonic_time();
  for (guint i = 0; i < n_miss; i++) {
    key.shape = shapes->pdata[i % shapes->len];
    ts_db_lookup_result_clear(&r);
    if (!ts_db_lookup(db, &key, &r, &error)) {
      fprintf(stderr, "db_bench: %s\n", error->message);
      return 1;
    }
  }
  double miss_s = seconds(t0);
  ts_db_lookup_result_clear(&r);

  printf("trials stored:           %10.0f /s  (%u in %.3f s, one transaction each)\n",
         n_trials / trial_s, n_trials, trial_s);
  printf("lookups, repeated key:   %10.0f /s  (%u in %.3f s, LRU hits)\n", n_lookups / hit_s,
         n_lookups, hit_s);
  printf("lookups, distinct keys:  %10.0f /s  (%u in %.3f s over %u keys, SQLite, LRU off)\n",
         n_miss / miss_s, n_miss, miss_s, shapes->len);
  ts_db_close(db);
  g_autofree char *wal = g_strconcat(path, "-wal", NULL);
  g_autofree char *shm = g_strconcat(path, "-shm", NULL);
  g_unlink(wal);
  g_unlink(shm);
  g_unlink(path);
  g_rmdir(dir);
  return 0;
}
