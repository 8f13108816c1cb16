/* fuzz-import.c — libFuzzer harness of the schedule cache's JSON import: whatever the file,
 * it is either imported whole or refused with TS_DB_ERROR_IMPORT naming the JSON path, and the
 * cache stays intact. One cache for the run, in a temporary directory. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>

#include "ts-db.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static TsDb *db;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  g_autofree char *dir = g_dir_make_tmp("ts-fuzz-import-XXXXXX", NULL);
  g_autofree char *path = g_build_filename(dir, "fuzz.db", NULL);
  g_autoptr(GError) error = NULL;
  db = ts_db_open(path, TS_DB_OPEN_DEFAULT, &error);
  if (db == NULL) {
    g_printerr("fuzz-import: %s\n", error->message);
    abort();
  }
  return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  TsDbImportStats stats;
  if (!ts_db_import_json(db, (const char *)data, (gssize)size, &stats, &error) &&
      !g_error_matches(error, TS_DB_ERROR, TS_DB_ERROR_IMPORT) &&
      !g_error_matches(error, TS_DB_ERROR, TS_DB_ERROR_INVALID)) {
    g_printerr("fuzz-import: unexpected error: %s\n", error->message);
    abort();
  }
  return 0;
}
