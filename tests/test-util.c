/* test-util.c — helpers shared by the test programs (see test-util.h). */
#include "test-util.h"

#include <glib.h>
#include <glib/gstdio.h>

void
ts_test_remove_tree(const char *path)
{
  if (g_file_test(path, G_FILE_TEST_IS_DIR) && !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    const char *name;
    while (dir != NULL && (name = g_dir_read_name(dir)) != NULL) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      ts_test_remove_tree(child);
    }
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}
