/* ts-studio-lowering-pane.h — the lowering view: Graph, Schedule, Tile and Target IR of the
 * selected trial side by side (monospace, read-only), or the Target IR diff of two selected
 * trials, added lines green and removed lines red. Lowering runs when the pane is shown, not
 * on every selection change in the trials list. */
#pragma once

#include <gtk/gtk.h>

#include "ts-studio-view.h"

G_BEGIN_DECLS

#define TS_STUDIO_TYPE_LOWERING_PANE (ts_studio_lowering_pane_get_type())
G_DECLARE_FINAL_TYPE(TsStudioLoweringPane, ts_studio_lowering_pane, TS_STUDIO, LOWERING_PANE,
                     GtkWidget)

typedef enum {
  TS_STUDIO_STAGE_GRAPH,
  TS_STUDIO_STAGE_SCHEDULE,
  TS_STUDIO_STAGE_TILE,
  TS_STUDIO_STAGE_TARGET,
  TS_STUDIO_N_STAGES
} TsStudioStage;

/* "Graph", "Schedule", "Tile", "Target IR". */
const char *ts_studio_stage_name(TsStudioStage stage);

GtkWidget *ts_studio_lowering_pane_new(void);
/* The trials to show: a alone (b NULL), or a and b for the diff (a the older); a NULL shows a
 * hint to select a trial. workload (from the window's TsStudioDb) is borrowed until the next
 * call; a and b only for this one. */
void ts_studio_lowering_pane_set_trials(TsStudioLoweringPane *pane,
                                        const TsStudioWorkload *workload, const TsStudioTrial *a,
                                        const TsStudioTrial *b);
/* How many trials the list has selected (the diff takes the two oldest of them): with more than
 * two, the heading says which two are compared. */
void ts_studio_lowering_pane_set_n_selected(TsStudioLoweringPane *pane, guint n);
/* Diff mode: only with two trials; otherwise the stages are shown. */
void ts_studio_lowering_pane_set_diff(TsStudioLoweringPane *pane, gboolean diff);
gboolean ts_studio_lowering_pane_get_diff(TsStudioLoweringPane *pane);

/* What is shown (lowering now if it is pending): a stage's text of trial a, or NULL with no
 * trial; and the number of changed (added + removed) Target IR lines between a and b. */
const char *ts_studio_lowering_pane_get_stage(TsStudioLoweringPane *pane, TsStudioStage stage);
guint ts_studio_lowering_pane_get_n_changed(TsStudioLoweringPane *pane);
/* The heading: "Trial ID · SCHEDULE", or "Trial A → trial B" for a diff (database ids). */
const char *ts_studio_lowering_pane_get_title(TsStudioLoweringPane *pane);
/* The diff as shown: each line with its number in a and in b, then +, - or space (g_free). */
char *ts_studio_lowering_pane_get_diff_text(TsStudioLoweringPane *pane);

/* What is shown as a drawn view for an SVG or PNG export (ts_studio_lowering_view_new or
 * ts_studio_diff_view_new), or NULL with no trial. */
TsStudioView *ts_studio_lowering_pane_make_view(TsStudioLoweringPane *pane);
/* Writes what is shown: the four stages under "== NAME ==" headings, or in diff mode a
 * unified diff of the Target IR. */
gboolean ts_studio_lowering_pane_write(TsStudioLoweringPane *pane, const char *path,
                                       GError **error);

G_END_DECLS
