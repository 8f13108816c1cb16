/* db-writer.c — a helper for test-db's process tests: writes trials to a schedule cache in a
 * loop, one transaction each, and prints "ID HASH new|dup" on stdout (flushed) after each
 * commit, so the test knows exactly what was committed when it kills or joins the process.
 *
 *   db-writer DB SHAPE FIRST COUNT     points FIRST .. FIRST+COUNT-1 of workload gemm SHAPE
 */
#include "ts-db.h"

#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
  if (argc != 5) {
    fprintf(stderr, "usage: %s DB SHAPE FIRST COUNT\n", argv[0]);
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) db = ts_db_open(argv[1], TS_DB_OPEN_DEFAULT, &error);
  if (!db) {
    fprintf(stderr, "db-writer: %s\n", error->message);
    return 1;
  }
  TsDbDevice dev = {.backend = "cpu", .name = "test cpu", .arch = "x86_64", .compute_units = 2};
  gint64 d = ts_db_ensure_device(db, &dev, &error);
  gint64 t = d ? ts_db_ensure_toolchain(db, "gcc test", "tessera-kgen-1", &error) : 0;
  gint64 w = t ? ts_db_ensure_workload(db, "gemm", argv[2], "f32", &error) : 0;
  if (!w) {
    fprintf(stderr, "db-writer: %s\n", error->message);
    return 1;
  }
  long first = strtol(argv[3], NULL, 10), count = strtol(argv[4], NULL, 10);
  for (long i = first; i < first + count; i++) {
    g_autoptr(TsDbTrial) trial = ts_db_trial_new();
    trial->workload_id = w;
    trial->device_id = d;
    trial->toolchain_id = t;
    trial->schedule = g_strdup_printf("block(m=%ld,n=64,k=32).warps(4)", i);
    trial->status = TS_DB_TRIAL_OK;
    trial->median_ns = 1000.0 + (double)(i % 97);
    trial->samples_ns = g_array_new(FALSE, FALSE, sizeof(double));
    for (int s = 0; s < 5; s++) {
      double v = trial->median_ns + s;
      g_array_append_val(trial->samples_ns, v);
    }
    trial->strategy = g_strdup("random");
    gint64 id = 0;
    gboolean existed = FALSE;
    if (!ts_db_add_trial(db, trial, &id, &existed, &error)) {
      fprintf(stderr, "db-writer: trial %ld: %s\n", i, error->message);
      return 1;
    }
    g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, trial->schedule, -1);
    hash[16] = '\0';
    printf("%" G_GINT64_FORMAT " %s %s\n", id, hash, existed ? "dup" : "new");
    fflush(stdout);
  }
  return 0;
}
