/* ts-studio-trial-list.h — the trials of one workload as a sortable, filterable table: a
 * GtkColumnView over GListStore → GtkFilterListModel → GtkSortListModel → GtkMultiSelection,
 * with a search entry (schedule or strategy text) and a status drop-down above it. Two selected
 * trials are what the lowering view diffs. */
#pragma once

#include <gtk/gtk.h>

#include "ts-studio-data.h"

G_BEGIN_DECLS

#define TS_STUDIO_TYPE_TRIAL_LIST (ts_studio_trial_list_get_type())
G_DECLARE_FINAL_TYPE(TsStudioTrialList, ts_studio_trial_list, TS_STUDIO, TRIAL_LIST, GtkWidget)

GtkWidget *ts_studio_trial_list_new(void);
/* trials: GPtrArray of TsStudioTrial* as ts_studio_db_trials returns (a reference is taken);
 * NULL empties the list. Filters are kept; the selection is cleared. */
void ts_studio_trial_list_set_trials(TsStudioTrialList *list, GPtrArray *trials);

/* The rows as shown, filtered and sorted (TsStudioTrialItem); owned by the list. */
GListModel *ts_studio_trial_list_get_rows(TsStudioTrialList *list);
guint ts_studio_trial_list_get_n_rows(TsStudioTrialList *list);
/* The trials the filters let through, in the workload's order (TsStudioTrial*, borrowed from
 * the array given to set_trials); "filter-changed" says when they change. */
GPtrArray *ts_studio_trial_list_get_shown(TsStudioTrialList *list);
gboolean ts_studio_trial_list_is_filtered(TsStudioTrialList *list);

/* text: substring of the schedule or the strategy (case-insensitive; NULL or "": any).
 * status: NULL or "all", "ok", "failed" (every status but ok) or a status name. Sets the
 * search entry and the drop-down as a user would. */
void ts_studio_trial_list_set_filter(TsStudioTrialList *list, const char *text, const char *status);
/* Column ids: "index", "status", "time", "gflops", "percent", "strategy", "schedule".
 * Unknown (or known failure) numbers sort as the worst value: last by time ascending, last by
 * GFLOP/s descending. */
gboolean ts_studio_trial_list_sort(TsStudioTrialList *list, const char *column, GtkSortType order);

/* The selected trials in trial-index order (GPtrArray of const TsStudioTrial*, borrowed). */
GPtrArray *ts_studio_trial_list_get_selected(TsStudioTrialList *list);
/* Selects trial id (clearing the filters when they hide it) and scrolls to it; add keeps the
 * rest of the selection. id 0 with add FALSE clears the selection. FALSE: no such trial. */
gboolean ts_studio_trial_list_select(TsStudioTrialList *list, gint64 id, gboolean add);
/* Makes the rows of those trial ids the selection (ids the filters hide are left out: a brush
 * in a plot only sees the trials the list shows), in one change; the number selected. */
guint ts_studio_trial_list_select_ids(TsStudioTrialList *list, const gint64 *ids, guint n);
void ts_studio_trial_list_focus_filter(TsStudioTrialList *list);

/* The rows as shown, as CSV with a header line. */
gboolean ts_studio_trial_list_write_csv(TsStudioTrialList *list, const char *path, GError **error);

G_END_DECLS
