/* ts-studio-screenshots.h — `tessera-studio PATH --screenshots DIR`: shows every page of a
 * window in turn (trials, roofline, history, predicted, timeline, lowering, and the lowering
 * diff when the workload has two trials or more), waits until each is drawn, saves it as
 * DIR/PAGE.png and describes what each showed in DIR/manifest.json, for tests and for the
 * documentation's pictures. */
#pragma once

#include "ts-studio-window.h"

G_BEGIN_DECLS

/* Called once, from the main loop; error is set when ok is FALSE. */
typedef void (*TsStudioScreenshotsDone)(gboolean ok, const GError *error, gpointer data);

/* win must have a file open. It selects the workload with the most trials. */
void ts_studio_screenshots_run(TsStudioWindow *win, const char *dir, TsStudioScreenshotsDone done,
                               gpointer data);

G_END_DECLS
