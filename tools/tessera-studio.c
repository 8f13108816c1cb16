/* tessera-studio — the workbench's GUI: `tessera-studio [PATH]` opens a schedule cache (.db)
 * or a Chrome trace (.json), by default the user's schedule cache when there is one.
 * `--screenshots DIR` saves every view of PATH as PNG with a manifest and quits (tests and
 * documentation). Options are parsed here rather than by GApplication so that --version and
 * usage errors work without a display. */
#include <stdio.h>

#include "config.h"
#include "ts-db.h"
#include "ts-studio-app.h"

int
main(int argc, char **argv)
{
  g_autofree char *screenshots = NULL;
  gboolean version = FALSE;
  g_autoptr(GError) error = NULL;
  const GOptionEntry entries[] = {
      {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL},
      {"screenshots", 0, 0, G_OPTION_ARG_FILENAME, &screenshots,
       "Open PATH, save each view as DIR/VIEW.png and what it shows in DIR/manifest.json, "
       "then quit (0 on success)",
       "DIR"},
      /* ---- headless export: --export VIEW --workload KEY --output FILE ----
       * (gui/ts-studio-export.h, wired in with its options here by its author) */
      {NULL},
  };
  g_autoptr(GOptionContext) context = g_option_context_new("[PATH]");

  g_option_context_set_summary(context,
                               "Browse a schedule cache (.db) or a Chrome trace (.json): trials, "
                               "roofline, tuning history,\npredicted vs measured time, timeline "
                               "and lowering. Without PATH, the schedule cache\n"
                               "($XDG_CACHE_HOME/tessera/schedules.db) when there is one.");
  g_option_context_set_description(context, "Exit status: 0 success; 1 the screenshots failed "
                                            "(the reason on stderr); 2 bad usage.");
  g_option_context_add_main_entries(context, entries, NULL);
  if (!g_option_context_parse(context, &argc, &argv, &error)) {
    g_printerr("tessera-studio: %s (try --help)\n", error->message);
    return 2;
  }
  if (version) {
    printf("tessera-studio %s\n", TS_VERSION);
    return 0;
  }
  if (argc > 2) {
    g_printerr("tessera-studio: one PATH at most, got %d (try --help)\n", argc - 1);
    return 2;
  }

  g_autofree char *path = argc == 2 ? g_strdup(argv[1]) : NULL;
  if (path == NULL) {
    g_autofree char *cache = ts_db_default_path();
    if (g_file_test(cache, G_FILE_TEST_EXISTS))
      path = g_steal_pointer(&cache);
  }
  if (screenshots != NULL && path == NULL) {
    g_printerr("tessera-studio: --screenshots needs a PATH to open (no schedule cache at the "
               "default location)\n");
    return 2;
  }

  /* ---- headless export goes here (before any display is needed) ---- */

  g_set_application_name("Tessera Studio");
  g_autoptr(TsStudioApp) app = ts_studio_app_new(screenshots != NULL);
  if (screenshots != NULL)
    ts_studio_app_set_screenshots(app, screenshots);
  char *run_argv[] = {argv[0], path, NULL};
  int status = g_application_run(G_APPLICATION(app), path ? 2 : 1, run_argv);
  return status != 0 ? status : ts_studio_app_get_exit_status(app);
}
