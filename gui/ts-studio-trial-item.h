/* ts-studio-trial-item.h — one stored trial as a GObject, so the trials list (a GListStore
 * behind a GtkColumnView) can sort and filter it through property expressions. */
#pragma once

#include <glib-object.h>

#include "ts-studio-data.h"

G_BEGIN_DECLS

#define TS_STUDIO_TYPE_TRIAL_ITEM (ts_studio_trial_item_get_type())
G_DECLARE_FINAL_TYPE(TsStudioTrialItem, ts_studio_trial_item, TS_STUDIO, TRIAL_ITEM, GObject)

/* trials: the GPtrArray of TsStudioTrial* that owns trial (a reference is taken, so the item
 * stays valid however long a list model keeps it). */
TsStudioTrialItem *ts_studio_trial_item_new(GPtrArray *trials, const TsStudioTrial *trial);
const TsStudioTrial *ts_studio_trial_item_get_trial(TsStudioTrialItem *item);
gint64 ts_studio_trial_item_get_id(TsStudioTrialItem *item);

/* The trial's numbers in the units the list shows: milliseconds, GFLOP/s, percent of the
 * roofline bound; NAN when unknown (failed trials, no ceilings). */
double ts_studio_trial_item_get_median_ms(TsStudioTrialItem *item);
double ts_studio_trial_item_get_gflops(TsStudioTrialItem *item);
double ts_studio_trial_item_get_percent(TsStudioTrialItem *item);

G_END_DECLS
