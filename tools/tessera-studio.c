/* tessera-studio — the workbench's GUI: `tessera-studio [PATH]` opens a schedule cache (.db)
 * or a Chrome trace (.json), by default the user's schedule cache when there is one.
 * `--screenshots DIR` saves every view of PATH as PNG with a manifest and quits (tests and
 * documentation). Options are parsed here rather than by GApplication so that --version and
 * usage errors work without a display. */
#include <math.h>
#include <stdio.h>

#include "config.h"
#include "ts-db.h"
#include "ts-studio-app.h"
#include "ts-studio-data.h"
#include "ts-studio-export.h"

int
main(int argc, char **argv)
{
  g_autofree char *screenshots = NULL;
  gboolean version = FALSE;
  g_autoptr(GError) error = NULL;
  g_autofree char *export_view = NULL, *workload = NULL, *trace = NULL, *output = NULL;
  g_autofree char *color_by = NULL;
  gint64 profile = 0, trial = 0, trial_b = 0;
  /* NAN: not given (the exporter's defaults). */
  double width = NAN, height = NAN, scale = NAN;
  gboolean dark = FALSE, timing = FALSE;
  const GOptionEntry entries[] = {
      {"version", 0, 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL},
      {"screenshots", 0, 0, G_OPTION_ARG_FILENAME, &screenshots,
       "Open PATH, save each view as DIR/VIEW.png and what it shows in DIR/manifest.json, "
       "then quit (0 on success)",
       "DIR"},
      /* Headless export: no display needed. */
      {"export", 0, 0, G_OPTION_ARG_STRING, &export_view,
       "Render VIEW of PATH to --output without a window, then quit: roofline, history, "
       "history-wall, predicted, learned, timeline, lowering, diff",
       "VIEW"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
       "The exported file; its extension (.svg or .png) picks the format", "FILE"},
      {"workload", 'w', 0, G_OPTION_ARG_STRING, &workload,
       "The workload to export: W, W/D or W/D/T ids (default: the one with most trials)", "KEY"},
      {"profile", 0, 0, G_OPTION_ARG_INT64, &profile,
       "timeline: the stored profile (default: the workload's newest, else the newest)", "ID"},
      {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace,
       "timeline: a Chrome trace file instead of a stored profile (no cache needed)", "FILE"},
      {"trial", 0, 0, G_OPTION_ARG_INT64, &trial,
       "lowering, diff: the trial (default: the best)", "ID"},
      {"trial-b", 0, 0, G_OPTION_ARG_INT64, &trial_b,
       "diff: the other trial (default: the fastest other verified schedule)", "ID"},
      {"color-by", 0, 0, G_OPTION_ARG_STRING, &color_by,
       "roofline: colour points by status (default) or strategy", "WHAT"},
      {"width", 0, 0, G_OPTION_ARG_DOUBLE, &width, "Export width in px (default 1200)", "PX"},
      {"height", 0, 0, G_OPTION_ARG_DOUBLE, &height, "Export height in px (default 800)", "PX"},
      {"scale", 0, 0, G_OPTION_ARG_DOUBLE, &scale, "PNG pixels per px (default 1)", "N"},
      {"dark", 0, 0, G_OPTION_ARG_NONE, &dark, "Export with the dark theme", NULL},
      {"timing", 0, 0, G_OPTION_ARG_NONE, &timing,
       "Open PATH in a window, print \"window T\" when the window and \"content T\" when PATH's "
       "content is first painted (T: CLOCK_MONOTONIC in us), then quit (benchmarks)",
       NULL},
      G_OPTION_ENTRY_NULL,
  };
  g_autoptr(GOptionContext) context = g_option_context_new("[PATH]");

  g_option_context_set_summary(context,
                               "Browse a schedule cache (.db) or a Chrome trace (.json): trials, "
                               "roofline, tuning history,\npredicted vs measured time, timeline "
                               "and lowering. Without PATH, the schedule cache\n"
                               "($XDG_CACHE_HOME/tessera/schedules.db) when there is one.");
  g_option_context_set_description(context, "Export:\n"
                                            "  tessera-studio CACHE.db --export roofline --workload 1 --output roof.svg\n"
                                            "  tessera-studio --export timeline --trace trace.json --output tl.png\n\n"
                                            "Exit status: 0 success; 1 the screenshots failed "
                                            "(the reason on stderr); 2 bad usage (unknown view,\n"
                                            "workload, trial or profile; bad output name); 3 a "
                                            "cache or file that cannot be read or written.");
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
  if (export_view != NULL) {
    if (output == NULL) {
      g_printerr("tessera-studio: --export needs --output FILE.svg or FILE.png\n");
      return 2;
    }
    /* cairo's surfaces stop at 32767 px a side. */
    const struct {
      const char *name;
      double v, lo, hi;
    } sizes[] = {{"--width", width, 1, 32767},
                 {"--height", height, 1, 32767},
                 {"--scale", scale, 0.1, 16}};
    for (guint i = 0; i < G_N_ELEMENTS(sizes); i++)
      if (!isnan(sizes[i].v) && !(sizes[i].v >= sizes[i].lo && sizes[i].v <= sizes[i].hi)) {
        g_printerr("tessera-studio: %s must be between %g and %g, got %g\n", sizes[i].name,
                   sizes[i].lo, sizes[i].hi, sizes[i].v);
        return 2;
      }
    double w = isnan(width) ? 1200 : width, h = isnan(height) ? 800 : height;
    double sc = isnan(scale) ? 1 : scale;
    if (MAX(w, h) * sc > 32767) {
      g_printerr("tessera-studio: %g x %g px at scale %g is more than 32767 pixels a side\n", w,
                 h, sc);
      return 2;
    }
    TsStudioExportOptions o = {
      .db_path = path, .view = export_view, .workload = workload, .trace_path = trace,
      .profile_id = profile, .trial_id = trial, .trial_b_id = trial_b, .color_by = color_by,
      .output = output, .width = w, .height = h, .scale = sc, .dark = dark,
    };
    g_autofree char *summary = NULL;
    if (!ts_studio_export(&o, &summary, &error)) {
      g_printerr("tessera-studio: %s\n", error->message);
      /* What the user named wrong is usage; a file that cannot be read or written is I/O. */
      gboolean io = error->domain == TS_STUDIO_ERROR &&
                    (error->code == TS_STUDIO_ERROR_OPEN || error->code == TS_STUDIO_ERROR_TRACE ||
                     (error->code == TS_STUDIO_ERROR_EXPORT &&
                      g_str_has_prefix(error->message, "cannot write")));
      return io ? 3 : 2;
    }
    printf("%s\n", summary);
    return 0;
  }
  if (screenshots != NULL && path == NULL) {
    g_printerr("tessera-studio: --screenshots needs a PATH to open (no schedule cache at the "
               "default location)\n");
    return 2;
  }

  g_set_application_name("Tessera Studio");
  g_autoptr(TsStudioApp) app = ts_studio_app_new(screenshots != NULL || timing);
  if (screenshots != NULL)
    ts_studio_app_set_screenshots(app, screenshots);
  if (timing && path == NULL) {
    g_printerr("tessera-studio: --timing needs a PATH to open\n");
    return 2;
  }
  ts_studio_app_set_timing(app, timing);
  char *run_argv[] = {argv[0], path, NULL};
  int status = g_application_run(G_APPLICATION(app), path ? 2 : 1, run_argv);
  return status != 0 ? status : ts_studio_app_get_exit_status(app);
}
