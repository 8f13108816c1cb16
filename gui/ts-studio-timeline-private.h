/* ts-studio-timeline-private.h — the timeline's prepared data, shared by its preparation
 * (ts-studio-timeline-prep.c, ts-studio-timeline-lod.c), its frame (ts-studio-timeline.c) and
 * its axis and memory area (ts-studio-timeline-draw.c). Not API. */
#pragma once

#include "ts-studio-timeline.h"
#include "ts-trace.h"

#include <string.h>

G_BEGIN_DECLS

/* Events narrower than this fold into their neighbours, and a fold swallows the next event when
 * the gap to it is narrower too: 3 px is Tracy's MinVisSize, the narrowest bar a pointer can
 * still aim at. */
#define TS_TL_FOLD_PX 3.0
/* The colour legend names this many of the names taking the most time. */
#define TS_TL_LEGEND_MAX 8
/* The narrowest window zoom goes to: a few ns, below which the trace clock has no meaning. */
#define TS_TL_MIN_WINDOW_NS 16

/* How an event is drawn: in a row (a slice, or an instant's mark), on a counter track, or as
 * an arrow between rows. */
typedef enum {
  TS_TL_SLICE,
  TS_TL_INSTANT,
  TS_TL_COUNTER,
  TS_TL_FLOW,
} TsTlShape;

/* A (kind, name) pair: events refer to it by index, so buckets can name what dominates them in
 * 4 bytes. */
typedef struct {
  const char *kind, *name;
  TsTraceKind k;
  TsTlShape shape;
  gboolean known; /* FALSE: a kind this build does not know, drawn like a range */
  gboolean meta;  /* "lane" (a lane's label) or "note" (what a trace reader had to say) */
  gboolean match; /* its name holds the search text */
} TsTlName;

/* One event of a row, in the row's order (by start, longer first on ties). */
typedef struct {
  gint64 start, end;
  guint32 index; /* in the input array */
  guint32 name;  /* in the view's name table */
} TsTlEvent;

/* One time bucket of a row's level of detail. busy_ns is a float: only ratios of it are drawn,
 * and 12 bytes a bucket keep the finest level of a 250k-event row at 3 MiB. */
typedef struct {
  float busy_ns; /* time the row's events cover within the bucket */
  guint32 count; /* events starting in it */
  guint32 name;  /* the name covering most of it; G_MAXUINT32 when empty */
} TsTlBucket;

/* Maxima of an array over aligned blocks of 2, 4, 8 ... elements: the maximum of any range, and
 * the first element from a position on that reaches a threshold, each in O(log n). */
typedef struct {
  guint n, n_levels;
  gint64 **max; /* max[L][k]: the maximum of v[k << (L+1) .. (k+1) << (L+1)) */
} TsTlMaxTree;

/* One row: a lane at one nesting depth. */
typedef struct {
  guint32 lane, depth;
  TsTlEvent *ev;
  guint n;
  gint64 *max_end; /* max_end[i]: the latest end among ev[0..i], for the first visible event */
  /* What keeps event i+1 out of a fold that holds event i: the gap before it or its own
   * length, whichever is larger (G_MAXINT64 for the last). A fold from i runs to the first
   * key at least the fold width: one search of fold_tree, whatever the events it holds. */
  gint64 *fold_key;
  TsTlMaxTree fold_tree;
  /* Levels of detail: level L has n_buckets[L] buckets of bucket_ns << L ns, from the span's
   * start (Perfetto's mipmaps). */
  gint64 bucket_ns;
  guint n_levels;
  guint *n_buckets;
  TsTlBucket **lod;
} TsTlRow;

/* Memory in use over time: the value after each allocation change. */
typedef struct {
  guint n;
  gint64 *t;
  gint64 *v;
  guint32 *index; /* the alloc or free event that made the change */
  TsTlMaxTree tree;
  gint64 peak;
  gint64 peak_t;
} TsTlMemory;

/* A counter's samples as a step function (the memory area's machinery): v holds each value
 * through ts__tl_order_key, so the block maxima order doubles correctly. */
typedef struct {
  guint32 lane, name; /* name: in the view's name table */
  TsTlMemory s;
  double min, max;
} TsTlCounter;

/* A flow's arrow, bound to the slices it leaves and reaches. */
typedef struct {
  guint32 index;      /* the flow event */
  guint32 row0, row1; /* G_MAXUINT32: its lane has no row, so it is not drawn */
  gint64 t0, t1;
  guint32 from, to;   /* the slices it binds, as mark ids (event index + 1); 0: none */
} TsTlFlow;

/* Doubles as integers in the same order (negative ones have their magnitude bits flipped); the
 * same call maps back. */
static inline gint64
ts__tl_order_key(gint64 bits)
{
  return bits < 0 ? bits ^ G_MAXINT64 : bits;
}

static inline gint64
ts__tl_key_of(double v)
{
  gint64 bits;
  memcpy(&bits, &v, sizeof bits);
  return ts__tl_order_key(bits);
}

static inline double
ts__tl_value_of(gint64 key)
{
  gint64 bits = ts__tl_order_key(key);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

typedef struct {
  TsStudioView parent;
  GArray *events;
  TsTlName *names;
  guint n_names;
  TsTlRow *rows;
  guint n_rows;
  guint32 *row_of; /* the row of each input event; G_MAXUINT32: none (alloc, free) */
  TsTlMemory mem;
  TsTlCounter *counters;
  guint n_counters;
  TsTlFlow *flows;
  guint n_flows;
  GHashTable *lane_names; /* lane + 1 -> label, from "lane" events (borrowed from events) */
  GPtrArray *notes;       /* const char*, from "note" events (borrowed) */
  gint64 span0, span1; /* every event's extent */
  gint64 view0, view1; /* the visible window */
  gint64 sel0, sel1;   /* the range selected for aggregation; sel1 <= sel0: none */
  char *search;        /* casefolded search text, or NULL */
  char *details;       /* the details strip's text (details_text), for details_key */
  gint64 details_key[3]; /* selected, sel0, sel1 */
  gboolean details_valid;
  guint32 legend[TS_TL_LEGEND_MAX]; /* names with the most time, most first */
  gint64 legend_ns[TS_TL_LEGEND_MAX];
  guint n_legend;
  guint n_matches;     /* slices and instants whose name holds it */
} TsTlView;

/* Where things are in a frame of width x height px. */
typedef struct {
  double width, height;
  double x0, x1;        /* the plot's horizontal extent (after the lane labels) */
  double rows_y, row_h; /* top of the first row, height of each */
  double mem_y, mem_h;  /* the memory area; mem_h 0 when there is none */
  double counters_y, counter_h; /* the counter tracks, one under another */
  double notes_y;       /* the first of the reader's notes, one line each, at the bottom */
  double details_y, details_h; /* the selected event's details above them; 0 high: none */
  double legend_y;      /* the colour legend's line, above the details */
  gint64 t0, t1;        /* the visible window */
  double ns_per_px;
} TsTlLayout;

/* ts-studio-timeline-prep.c */
/* A time and the event at it, ordered by time, then event (ts__tl_cmp_stamp, for qsort). */
typedef struct {
  gint64 t;
  guint32 index;
} TsTlStamp;
int ts__tl_cmp_stamp(const void *a, const void *b);
/* g_int64_hash keeps the low 32 bits only: this hashes both halves of a 64-bit key. */
guint ts__tl_key64_hash(gconstpointer v);
void ts__tl_prepare(TsTlView *tl);
void ts__tl_release(TsTlView *tl);
/* The events of row that may overlap [t0, t1]: [*first, *end) holds every event with end >= t0
 * and start <= t1 (and, where events of the row overlap one another, maybe some that end
 * before t0). Two binary searches. */
void ts__tl_visible(const TsTlRow *row, gint64 t0, gint64 t1, guint *first, guint *end);
/* The first index in [lo, hi) whose event starts at or after t (hi if none). */
guint ts__tl_lower_bound(const TsTlRow *row, guint lo, guint hi, gint64 t);
/* The last change at or before t (G_MAXUINT when none), searching forward from hint (a
 * change at or before t, or 0): a frame walks columns left to right. */
guint ts__tl_memory_at(const TsTlMemory *mem, guint hint, gint64 t);
/* The most in use at any moment of each of cols columns, column c covering
 * [t0 + floor(c x ns_per_col), t0 + floor((c + 1) x ns_per_col)), so a short-lived allocation
 * stays visible however far out the view is. */
void ts__tl_memory_columns(const TsTlMemory *mem, gint64 t0, double ns_per_col, guint cols,
                           gint64 *out);

/* ts-studio-timeline-lod.c */
void ts__tl_build_lod(TsTlRow *row, gint64 span0, gint64 span1);
void ts__tl_max_build(TsTlMaxTree *tree, const gint64 *v, guint n);
void ts__tl_max_clear(TsTlMaxTree *tree);
/* The maximum of v[a, b) (G_MININT64 when empty). */
gint64 ts__tl_max_range(const TsTlMaxTree *tree, const gint64 *v, guint a, guint b);
/* The first index at or after i with v at least threshold (n if none). */
guint ts__tl_max_find(const TsTlMaxTree *tree, const gint64 *v, guint i, gint64 threshold);

/* ts-studio-timeline.c */
void ts__tl_layout(const TsTlView *tl, double width, double height, TsTlLayout *lay);
static inline double
ts__tl_x(const TsTlLayout *lay, gint64 t)
{
  return lay->x0 + (double)(t - lay->t0) / lay->ns_per_px;
}

/* ts-studio-timeline-draw.c: the parts of a frame around the rows. */
/* ns in a readable unit: step_ns > 0, a tick label for ticks step_ns apart; 0, three
 * significant digits ("12.3 µs"); < 0, to a thousandth of the unit ("50.500 ms"). */
char *ts__tl_format_ns(double ns, double step_ns);
/* ns in its own unit with as many decimals as a step of step_ns needs ("25.00000002 s"). */
char *ts__tl_format_ns_exact(double ns, double step_ns);
char *ts__tl_lane_label(const TsTlView *tl, guint32 lane);
void ts__tl_draw_axis(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay);
void ts__tl_draw_memory(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay);
/* The alloc or free nearest x in the memory area, within a few px, as a mark id; 0 if none. */
gint64 ts__tl_hit_memory(TsTlView *tl, const TsTlLayout *lay, double x);

/* ts-studio-timeline-agg.c: the selected range's table for the details strip, or NULL. */
char *ts__tl_selection_text(TsTlView *tl);

/* ts-studio-timeline-tracks.c: counters and flows. */
void ts__tl_build_counters(TsTlView *tl, const guint32 *names_of);
void ts__tl_build_flows(TsTlView *tl, const guint32 *names_of);
void ts__tl_release_tracks(TsTlView *tl);
void ts__tl_draw_counters(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay);
void ts__tl_draw_flows(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay);
/* The sample in effect at x on the counter track under y, as a mark id; 0 if none. */
gint64 ts__tl_hit_counter(TsTlView *tl, const TsTlLayout *lay, double x, double y);
/* The sample of counter track k in effect at t, as a mark id; 0 before its first. */
gint64 ts__tl_hit_counter_at(TsTlView *tl, guint k, gint64 t);

G_END_DECLS
