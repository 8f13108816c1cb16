/* ts-studio-theme.h — the colours every view draws with, in a light and a dark variant. The
 * window picks the variant the desktop prefers; exports take light unless asked (--dark). */
#pragma once

#include "ts-studio-canvas.h"
#include "ts-db.h"

G_BEGIN_DECLS

#define TS_STUDIO_N_SERIES 8

typedef struct {
  gboolean dark;
  TsRgba background, foreground, muted, grid, frame;
  TsRgba accent;    /* the best trial, the selection */
  TsRgba highlight; /* hover */
  TsRgba status[TS_DB_TRIAL_WRONG_RESULT + 1]; /* by TsDbTrialStatus */
  TsRgba series[TS_STUDIO_N_SERIES];           /* strategies, runs, lanes, roofs: cycled */
  TsRgba compute_roof, memory_roof;
} TsStudioTheme;

const TsStudioTheme *ts_studio_theme(gboolean dark);
/* A stable colour for a name (a strategy, a kernel): the same name, the same colour, in every
 * view and every run. */
TsRgba ts_studio_theme_series(const TsStudioTheme *theme, const char *name);
TsRgba ts_studio_rgba_alpha(TsRgba color, double alpha);

G_END_DECLS
