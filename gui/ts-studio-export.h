/* ts-studio-export.h — any view of tessera-studio rendered to an SVG or PNG file without a
 * window (`tessera-studio --export VIEW ...`), for reports and CI artefacts. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  const char *db_path;    /* the schedule cache; NULL: ts_db_default_path() */
  const char *view;       /* ts_studio_export_views() */
  const char *workload;   /* "W", "W/D" or "W/D/T"; NULL: the workload with the most trials */
  const char *trace_path; /* timeline: a Chrome-trace file instead of a stored profile */
  gint64 profile_id;      /* timeline: 0 = the workload's newest profile, else the newest */
  gint64 trial_id;        /* lowering: 0 = the best trial; diff: the first trial */
  gint64 trial_b_id;      /* diff: the second trial (0 = the fastest other verified trial) */
  const char *color_by;   /* roofline: "status" (default) or "strategy" */
  const char *output;     /* FILE.svg or FILE.png */
  double width, height;   /* px; 0: 1200 x 800 */
  double scale;           /* PNG pixels per px; 0: 1 */
  gboolean dark;
} TsStudioExportOptions;

/* The view names --export accepts, NULL-terminated: roofline, history, history-wall,
 * predicted, timeline, lowering, diff. */
const char *const *ts_studio_export_views(void);

/* Renders the view; errors name what was missing (no such view, workload, trial or profile,
 * a workload with too few trials for a diff) or the file that could not be written.
 * *summary (optional) gets one line saying what was drawn ("roofline: 24 of 24 marks"). */
gboolean ts_studio_export(const TsStudioExportOptions *options, char **summary, GError **error);

G_END_DECLS
