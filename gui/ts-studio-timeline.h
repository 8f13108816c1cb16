/* ts-studio-timeline.h — the timeline view: one lane per device stream / host thread (kernels,
 * copies, sets, compiles; NVTX ranges nested by depth), and device memory in use as a stacked
 * area over time, from a profiled run's events.
 *
 * It stays smooth at 10^6 events: events are prepared once (sorted per lane, with a running
 * maximum of end times so the first visible event is found by binary search) into levels of
 * detail (pre-aggregated coverage per power-of-two time bucket, as Perfetto's mipmaps); a
 * frame draws only the visible range and folds runs of events narrower than a few pixels into
 * one mark, as Tracy does. Exported SVG: each drawn mark is a group of class "event KIND"
 * (or "fold" for a folded run, with the count in its title), each lane a group of class
 * "lane". */
#pragma once

#include "ts-studio-view.h"

G_BEGIN_DECLS

/* events: GArray of TsDbEvent (times relative to the profile's t0), as ts_studio_db_events or
 * ts_studio_trace_load return; a reference is taken. Preparing 10^6 events takes a moment:
 * the widget does it off the frame path (ts_studio_timeline_new in a worker thread). */
TsStudioView *ts_studio_timeline_new(GArray *events);
/* The visible time window in ns relative to t0 (initially the whole span). */
void ts_studio_timeline_set_range(TsStudioView *view, gint64 start_ns, gint64 end_ns);
void ts_studio_timeline_get_range(TsStudioView *view, gint64 *start_ns, gint64 *end_ns);
void ts_studio_timeline_get_span(TsStudioView *view, gint64 *start_ns, gint64 *end_ns);
/* Zoom by factor (> 1: in) keeping the time under anchor (0..1 across the plot) in place;
 * pan by a fraction of the visible window (negative: earlier). Both clamp to the span. */
void ts_studio_timeline_zoom(TsStudioView *view, double factor, double anchor);
void ts_studio_timeline_pan(TsStudioView *view, double fraction);
/* x in px (within a view drawn width px wide) to the anchor fraction zoom expects. */
double ts_studio_timeline_anchor(TsStudioView *view, double x, double width);
/* The trial a mark belongs to: the database id in a "trial ID: POINT" range (a profiled tune's
 * trace names each trial so), else 0. */
gint64 ts_studio_timeline_trial_of(TsStudioView *view, gint64 mark);
/* The mark of trial_id's range, or 0 when the timeline has none. */
gint64 ts_studio_timeline_find_trial(TsStudioView *view, gint64 trial_id);

/* Per name, the slices that overlap [start_ns, end_ns] (Perfetto's area aggregation, Tracy's
 * find zone): how many, and their whole durations' total, minimum and maximum. */
typedef struct {
  const char *kind, *name; /* the view's */
  guint count;
  gint64 total_ns, min_ns, max_ns;
} TsStudioTimelineAgg;

/* GArray of TsStudioTimelineAgg, the largest total first (ties: by name). */
GArray *ts_studio_timeline_aggregate(TsStudioView *view, gint64 start_ns, gint64 end_ns);
/* A time range selected for aggregation: shaded over the lanes, its table in the details
 * strip (instead of the selected event's details). end_ns <= start_ns clears it. */
void ts_studio_timeline_set_selection(TsStudioView *view, gint64 start_ns, gint64 end_ns);
gboolean ts_studio_timeline_get_selection(TsStudioView *view, gint64 *start_ns,
                                          gint64 *end_ns);

/* Search: the slices and instants whose name holds text (case-insensitive; NULL or "" ends the
 * search) are drawn as they are, the others faded. Returns how many match. */
guint ts_studio_timeline_set_search(TsStudioView *view, const char *text);
/* The match after (forward) or before mark in time order (from the window's start when mark
 * is 0), wrapping round; 0 when nothing matches. */
gint64 ts_studio_timeline_search_next(TsStudioView *view, gint64 mark, gboolean forward);
/* Shows mark: centred in the window when it is out of it, the window widened when it is
 * longer than the window. */
void ts_studio_timeline_reveal(TsStudioView *view, gint64 mark);

G_END_DECLS
