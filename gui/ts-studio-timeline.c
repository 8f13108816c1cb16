/* ts-studio-timeline.c — the timeline view: its visible window (zoom, pan), the layout of a
 * frame, and the rows: each row walks only its visible events (found by binary search) and
 * folds runs of events narrower than TS_TL_FOLD_PX into one mark, as Tracy does, so a frame
 * draws O(width) marks per row whatever the number of events; a fold shows how busy the row is
 * under it from the row's levels of detail. */
#include "ts-studio-timeline-private.h"

#include <math.h>

/* ---- layout ---- */

#define AXIS_H 26.0
#define NOTE_H 15.0
#define GUTTER_W 118.0
#define RIGHT_PAD 10.0
#define ROW_H_MAX 20.0
#define ROW_H_MIN 3.0
#define DETAILS_LINE_H 14.0
#define LEGEND_H 18.0
#define DETAILS_MAX_LINES 14

static char *timeline_describe(TsStudioView *view, gint64 id);

/* What the details strip shows: the selected range's table, else the selected event's
 * details; NULL for nothing. Kept until the selection changes: the layout and the strip of
 * every frame both need it, and a range's table walks every slice in the range. */
static const char *
details_text(TsTlView *tl)
{
  gint64 key[3] = {tl->parent.selected, tl->sel0, tl->sel1};
  if (tl->details_valid && memcmp(key, tl->details_key, sizeof key) == 0)
    return tl->details;
  g_free(tl->details);
  tl->details = ts__tl_selection_text(tl);
  if (tl->details == NULL)
    tl->details = timeline_describe(&tl->parent, tl->parent.selected);
  memcpy(tl->details_key, key, sizeof key);
  tl->details_valid = TRUE;
  return tl->details;
}

void
ts__tl_layout(const TsTlView *tl, double width, double height, TsTlLayout *lay)
{
  *lay = (TsTlLayout){.width = width, .height = height, .t0 = tl->view0, .t1 = tl->view1};
  lay->x0 = floor(MIN(GUTTER_W, width * 0.3));
  lay->x1 = MAX(floor(width - RIGHT_PAD), lay->x0 + 1);
  lay->ns_per_px = (double)(tl->view1 - tl->view0) / (lay->x1 - lay->x0);
  lay->rows_y = AXIS_H + 4;
  double avail = height - lay->rows_y - 4;
  double notes_h = tl->notes ? tl->notes->len * NOTE_H : 0;
  avail -= notes_h;
  lay->notes_y = height - notes_h;
  /* The selected event's details, as Perfetto's and Nsight's bottom panels give them: a strip
   * above the notes, as tall as its lines (at most DETAILS_MAX_LINES). */
  const char *details = details_text((TsTlView *)tl);
  if (details) {
    guint lines = 1;
    for (const char *p = details; *p; p++)
      lines += *p == '\n';
    lay->details_h = MIN(lines, DETAILS_MAX_LINES) * DETAILS_LINE_H + 12;
    avail -= lay->details_h;
    lay->details_y = lay->notes_y - lay->details_h;
  }
  lay->legend_y = (details ? lay->details_y : lay->notes_y) - (tl->n_legend ? LEGEND_H : 0);
  avail -= tl->n_legend ? LEGEND_H : 0;
  if (tl->mem.n > 0) {
    lay->mem_h = round(CLAMP(avail * 0.22, 40, 160));
    avail -= lay->mem_h + 10;
  }
  if (tl->n_counters > 0) {
    lay->counter_h = floor(CLAMP(avail * 0.3 / tl->n_counters, 16, 40));
    avail -= lay->counter_h * tl->n_counters + 10;
  }
  lay->row_h = tl->n_rows ? CLAMP(floor(avail / tl->n_rows), ROW_H_MIN, ROW_H_MAX) : 0;
  lay->mem_y = lay->rows_y + lay->row_h * tl->n_rows + 10;
  lay->counters_y = lay->mem_y + (lay->mem_h > 0 ? lay->mem_h + 10 : 0);
}

/* ---- walking a row ---- */

typedef struct {
  gboolean fold;
  guint first, count; /* events first .. first + count - 1 of the row */
  gint64 t0, t1;
} Mark;

/* Returns FALSE to stop the walk. */
typedef gboolean (*MarkFunc)(TsTlView *tl, guint row, const Mark *mark, gpointer data);

/* The marks of a row in the visible window, left to right. An event at least TS_TL_FOLD_PX
 * wide is its own mark; a narrower one starts a fold that takes in every following event while
 * the gap before it and its own length are both under TS_TL_FOLD_PX (one search of the row's
 * fold keys, O(log n) whatever the fold holds). A fold of one event is drawn as that event. */
static void
walk_row(TsTlView *tl, guint r, const TsTlLayout *lay, MarkFunc fn, gpointer data)
{
  const TsTlRow *row = &tl->rows[r];
  /* Durations and gaps are whole ns: at least the fold width means at least its ceiling. */
  gint64 fold_ns = (gint64)ceil(TS_TL_FOLD_PX * lay->ns_per_px);
  guint i, end;
  ts__tl_visible(row, lay->t0, lay->t1, &i, &end);
  while (i < end) {
    const TsTlEvent *e = &row->ev[i];
    if (e->end - e->start >= fold_ns) {
      Mark m = {FALSE, i, 1, e->start, e->end};
      if (!fn(tl, r, &m, data))
        return;
      i++;
      continue;
    }
    /* Only what is in view is counted in (and drawn as) the fold. */
    guint last = MIN(ts__tl_max_find(&row->fold_tree, row->fold_key, i, fold_ns), end - 1);
    Mark m = {last > i, i, last - i + 1, e->start, MAX(e->end, row->max_end[last])};
    if (!fn(tl, r, &m, data))
      return;
    i = last + 1;
  }
}

/* ---- the range ---- */

static TsTlView *
timeline(TsStudioView *view)
{
  g_return_val_if_fail(view != NULL && g_strcmp0(view->klass->name, "timeline") == 0, NULL);
  return (TsTlView *)view;
}

void
ts_studio_timeline_set_range(TsStudioView *view, gint64 start_ns, gint64 end_ns)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL);
  gint64 span = tl->span1 - tl->span0;
  gint64 w = CLAMP(end_ns - start_ns, MIN(TS_TL_MIN_WINDOW_NS, span), span);
  if (end_ns - start_ns < w) { /* widened about its middle */
    gint64 mid = start_ns + (end_ns - start_ns) / 2;
    start_ns = mid - w / 2;
  }
  start_ns = CLAMP(start_ns, tl->span0, tl->span1 - w);
  tl->view0 = start_ns;
  tl->view1 = start_ns + w;
}

void
ts_studio_timeline_get_range(TsStudioView *view, gint64 *start_ns, gint64 *end_ns)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL);
  if (start_ns)
    *start_ns = tl->view0;
  if (end_ns)
    *end_ns = tl->view1;
}

void
ts_studio_timeline_get_span(TsStudioView *view, gint64 *start_ns, gint64 *end_ns)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL);
  if (start_ns)
    *start_ns = tl->span0;
  if (end_ns)
    *end_ns = tl->span1;
}

void
ts_studio_timeline_zoom(TsStudioView *view, double factor, double anchor)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL && factor > 0);
  anchor = CLAMP(anchor, 0, 1);
  double w = (double)(tl->view1 - tl->view0);
  double at = tl->view0 + anchor * w;
  double nw = CLAMP(w / factor, TS_TL_MIN_WINDOW_NS, (double)(tl->span1 - tl->span0));
  gint64 start = (gint64)llround(at - anchor * nw);
  ts_studio_timeline_set_range(view, start, start + (gint64)llround(nw));
}

void
ts_studio_timeline_pan(TsStudioView *view, double fraction)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL);
  gint64 w = tl->view1 - tl->view0;
  gint64 d = (gint64)llround(fraction * (double)w);
  ts_studio_timeline_set_range(view, tl->view0 + d, tl->view1 + d);
}

double
ts_studio_timeline_anchor(TsStudioView *view, double x, double width)
{
  TsTlView *tl = timeline(view);
  g_return_val_if_fail(tl != NULL, 0.5);
  TsTlLayout lay;
  ts__tl_layout(tl, width, 100, &lay);
  return CLAMP((x - lay.x0) / (lay.x1 - lay.x0), 0, 1);
}

/* ---- drawing the rows ---- */

typedef struct {
  TsCanvas *c;
  const TsTlLayout *lay;
  gboolean svg;
} DrawCtx;

/* text, or as much of it as fits in max_w px followed by "…", or NULL when not even one
 * character does: a label is never cut mid-glyph by the clip. The first guess is proportional
 * to the measured width, so a frame measures each label two or three times at most. */
static char *
elide(TsCanvas *c, const char *text, double max_w)
{
  double w;
  ts_canvas_text_size(c, text, &w, NULL);
  if (w <= max_w)
    return g_strdup(text);
  glong n = g_utf8_strlen(text, -1);
  glong keep = (glong)((double)n * max_w / MAX(w, 1)) - 1;
  for (guint tries = 0; keep > 0 && tries < 4; tries++) {
    g_autofree char *head = g_utf8_substring(text, 0, keep);
    char *cut = g_strconcat(head, "…", NULL);
    ts_canvas_text_size(c, cut, &w, NULL);
    if (w <= max_w)
      return cut;
    g_free(cut);
    keep = MIN(keep - 1, (glong)((double)keep * max_w / MAX(w, 1)));
  }
  return NULL;
}

static TsRgba name_color_of(const TsTlView *tl, const TsTlName *n);

/* A search fades what does not match. */
static TsRgba
name_color(const TsTlView *tl, guint32 name)
{
  const TsTlName *n = &tl->names[name];
  TsRgba c = name_color_of(tl, n);
  return tl->search && !n->match ? ts_studio_rgba_alpha(c, c.a * 0.2) : c;
}

static TsRgba
name_color_of(const TsTlView *tl, const TsTlName *n)
{
  const TsStudioTheme *theme = tl->parent.theme;
  switch (n->k) {
  case TS_TRACE_KERNEL:
    return ts_studio_theme_series(theme, n->name); /* each kernel its colour */
  case TS_TRACE_RANGE:
    return ts_studio_rgba_alpha(ts_studio_theme_series(theme, n->name), 0.55);
  default:
    return ts_studio_theme_series(theme, n->kind); /* copies, sets, compiles by kind */
  }
}

/* x extent of [t0, t1] clamped to a little beyond the plot, with a minimum width: cairo slows
 * down on coordinates far outside the surface, and a 0-px mark would be invisible. */
static void
mark_extent(const TsTlLayout *lay, gint64 t0, gint64 t1, double min_w, double *x, double *w)
{
  double a = MAX(ts__tl_x(lay, t0), lay->x0 - 2);
  double b = MIN(ts__tl_x(lay, t1), lay->x1 + 2);
  a = floor(a);
  b = MAX(round(b), a + min_w);
  *x = a;
  *w = b - a;
}

static void
draw_event(TsTlView *tl, DrawCtx *d, guint r, const Mark *m)
{
  const TsTlEvent *e = &tl->rows[r].ev[m->first];
  const TsTlName *n = &tl->names[e->name];
  double y = d->lay->rows_y + r * d->lay->row_h, h = MAX(d->lay->row_h - 1, 1);
  double x, w;
  mark_extent(d->lay, e->start, e->end, 2, &x, &w);
  /* Titles are for the SVG only: on screen the tooltip describes the event, and 10^4 strings
   * a frame would cost more than drawing. */
  if (d->svg) {
    g_autofree char *cls = g_strconcat("event ", n->kind, tl->search && n->match ? " match" : "",
                                       NULL);
    g_autofree char *id = g_strdup_printf("event-%u", e->index + 1);
    g_autofree char *dur = ts__tl_format_ns((double)(e->end - e->start), 0);
    g_autofree char *title = g_strdup_printf("%s — %s", n->name, dur);
    ts_canvas_begin(d->c, cls, id, title);
  } else {
    ts_canvas_begin(d->c, NULL, NULL, NULL);
  }
  ts_canvas_set_color(d->c, name_color(tl, e->name));
  if (n->shape == TS_TL_INSTANT) {
    /* A point in time: a diamond where it happened, as wide as the row allows. */
    double radius = CLAMP(h / 2, 1.5, 5);
    ts_canvas_marker(d->c, TS_CANVAS_MARKER_DIAMOND, ts__tl_x(d->lay, e->start), y + h / 2, radius);
    ts_canvas_end(d->c);
    return;
  }
  ts_canvas_rect(d->c, x, y, w, h, TRUE);
  /* The name inside when it can be read: 48 px is about six characters. */
  if (w >= 48 && h >= 10) {
    ts_canvas_set_font_size(d->c, MIN(h - 3, 11));
    double left = MAX(x, d->lay->x0) + 3, right = MIN(x + w, d->lay->x1) - 3;
    g_autofree char *label = elide(d->c, n->name, right - left);
    if (label) {
      ts_canvas_clip(d->c, x, y, w, h);
      ts_canvas_set_color(d->c, tl->parent.theme->foreground);
      ts_canvas_text(d->c, left, y + h / 2, label, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_CENTER,
                     0);
    }
  }
  ts_canvas_end(d->c);
}

/* The level whose buckets are the first at least 2 px wide: a fold's outline has at most one
 * step per 2 px, since cairo's cost to fill it grows with its corners. */
static guint
lod_level(const TsTlRow *row, double ns_per_px)
{
  guint l = 0;
  while (l + 1 < row->n_levels && (double)(row->bucket_ns << l) < 2 * ns_per_px)
    l++;
  return l;
}

typedef struct {
  guint32 name;
  double busy;
} Tally;

/* A fold: how busy the row is under it, bucket by bucket, as a filled outline in the colour of
 * the name that covers most of it. */
static void
draw_fold(TsTlView *tl, DrawCtx *d, guint r, const Mark *m)
{
  const TsTlRow *row = &tl->rows[r];
  const TsTlLayout *lay = d->lay;
  double y = lay->rows_y + r * lay->row_h, h = MAX(lay->row_h - 1, 1), bottom = round(y + h);
  double fx, fw;
  mark_extent(lay, m->t0, m->t1, 2, &fx, &fw);

  guint l = lod_level(row, lay->ns_per_px);
  const TsTlBucket *b = row->lod[l];
  gint64 b_ns = row->bucket_ns << l;
  guint nb = row->n_buckets[l];
  guint b0 = (guint)MIN((MAX(m->t0, lay->t0) - tl->span0) / b_ns, nb - 1);
  guint b1 = (guint)MIN((MIN(m->t1, lay->t1) - tl->span0) / b_ns, nb - 1);

  /* The dominant name, weighted by busy time, among the first few distinct ones. */
  Tally tally[8];
  guint n_tally = 0;
  double *xy = g_new(double, 2 * (2 * (b1 - b0 + 1) + 2));
  guint n = 0;
  xy[n++] = fx;
  xy[n++] = bottom;
  double last_h = -1;
  for (guint k = b0; k <= b1; k++) {
    if (b[k].name != G_MAXUINT32) {
      guint t = 0;
      while (t < n_tally && tally[t].name != b[k].name)
        t++;
      if (t == n_tally && n_tally < G_N_ELEMENTS(tally))
        tally[n_tally++] = (Tally){b[k].name, 0};
      if (t < n_tally)
        tally[t].busy += b[k].busy_ns;
    }
    /* In quarters of the row, at least 2 px so a fold of instants still shows: runs of
     * similar coverage merge into one step; and on whole pixels, without anti-aliased edges. */
    double bh = b[k].count == 0 && b[k].busy_ns <= 0
                    ? 0 /* a gap the fold spans */
                    : round(MAX(2, h * ceil(4 * MIN(1, b[k].busy_ns / (double)b_ns)) / 4));
    double xa = round(CLAMP(ts__tl_x(lay, tl->span0 + (gint64)k * b_ns), fx, fx + fw));
    double xb = round(CLAMP(ts__tl_x(lay, tl->span0 + (gint64)(k + 1) * b_ns), fx, fx + fw));
    if (bh != last_h) {
      xy[n++] = xa;
      xy[n++] = bottom - bh;
      last_h = bh;
    }
    xy[n++] = xb;
    xy[n++] = bottom - bh;
  }
  xy[n++] = fx + fw;
  xy[n++] = bottom;
  guint32 dominant = tl->rows[r].ev[m->first].name;
  double best = -1;
  for (guint t = 0; t < n_tally; t++)
    if (tally[t].busy > best) {
      best = tally[t].busy;
      dominant = tally[t].name;
    }

  if (d->svg) {
    g_autofree char *title = g_strdup_printf("%u events", m->count);
    ts_canvas_begin(d->c, "fold", NULL, title);
  } else {
    ts_canvas_begin(d->c, NULL, NULL, NULL);
  }
  ts_canvas_set_color(d->c, ts_studio_rgba_alpha(name_color(tl, dominant), 0.85));
  ts_canvas_polygon(d->c, xy, n / 2);
  ts_canvas_end(d->c);
  g_free(xy);
}

static gboolean
draw_mark(TsTlView *tl, guint r, const Mark *m, gpointer data)
{
  if (m->fold)
    draw_fold(tl, data, r, m);
  else
    draw_event(tl, data, r, m);
  tl->parent.n_drawn++;
  return TRUE;
}

static void
draw_rows(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  const TsStudioTheme *theme = tl->parent.theme;
  DrawCtx d = {c, lay, ts_canvas_is_svg(c)};
  for (guint r = 0; r < tl->n_rows; r++) {
    const TsTlRow *row = &tl->rows[r];
    double y = lay->rows_y + r * lay->row_h;
    g_autofree char *label = ts__tl_lane_label(tl, row->lane);
    g_autofree char *id = g_strdup_printf("lane-%u-%u", row->lane, row->depth);
    g_autofree char *title =
        row->depth ? g_strdup_printf("%s, depth %u", label, row->depth) : g_strdup(label);
    ts_canvas_begin(c, "lane", id, title);
    /* A line between lanes, none between the depths of one lane. */
    if (r > 0 && tl->rows[r - 1].lane != row->lane) {
      ts_canvas_set_color(c, theme->grid);
      ts_canvas_line(c, 0, y - 0.5, lay->width, y - 0.5);
    }
    if (row->depth == 0 && lay->row_h >= 8) {
      ts_canvas_set_color(c, theme->muted);
      ts_canvas_set_font_size(c, MIN(11, lay->row_h - 2));
      g_autofree char *fits = elide(c, label, lay->x0 - 10);
      if (fits)
        ts_canvas_text(c, 6, y + lay->row_h / 2, fits, TS_CANVAS_ALIGN_START,
                       TS_CANVAS_ALIGN_CENTER, 0);
    }
    ts_canvas_clip(c, lay->x0, y, lay->x1 - lay->x0, lay->row_h);
    walk_row(tl, r, lay, draw_mark, &d);
    ts_canvas_end(c);
  }
}

/* Hover and selection outlined where the event is, folded or not. */
static void
draw_outline(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay, gint64 id, TsRgba color)
{
  if (id <= 0 || (guint64)id > tl->events->len || tl->row_of[id - 1] == G_MAXUINT32)
    return;
  const TsDbEvent *e = &g_array_index(tl->events, TsDbEvent, id - 1);
  guint r = tl->row_of[id - 1];
  if (e->start_ns > lay->t1 || e->start_ns + e->dur_ns < lay->t0)
    return;
  double x, w;
  mark_extent(lay, e->start_ns, e->start_ns + MAX(e->dur_ns, 0), 2, &x, &w);
  ts_canvas_begin(c, "outline", NULL, NULL);
  ts_canvas_clip(c, lay->x0 - 2, lay->rows_y, lay->x1 - lay->x0 + 4, lay->height);
  ts_canvas_set_color(c, color);
  ts_canvas_set_line_width(c, 2);
  ts_canvas_rect(c, x - 1, lay->rows_y + r * lay->row_h - 1, w + 2, lay->row_h + 1, FALSE);
  ts_canvas_end(c);
}

/* The range selected for aggregation, shaded over the lanes with its edges. */
static void
draw_selection(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  if (tl->sel1 <= tl->sel0 || tl->sel1 < lay->t0 || tl->sel0 > lay->t1)
    return;
  double a = MAX(ts__tl_x(lay, tl->sel0), lay->x0), b = MIN(ts__tl_x(lay, tl->sel1), lay->x1);
  double top = lay->rows_y, h = lay->row_h * tl->n_rows;
  ts_canvas_begin(c, "selection", "selection", NULL);
  ts_canvas_set_color(c, ts_studio_rgba_alpha(tl->parent.theme->accent, 0.15));
  ts_canvas_rect(c, a, top, MAX(b - a, 1), h, TRUE);
  ts_canvas_set_color(c, tl->parent.theme->accent);
  ts_canvas_line(c, a, top, a, top + h);
  ts_canvas_line(c, b, top, b, top + h);
  ts_canvas_end(c);
}

/* What the colours stand for: the names taking the most time, each with its swatch, as many
 * as the width holds. */
static void
draw_legend(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  if (tl->n_legend == 0)
    return;
  const TsStudioTheme *theme = tl->parent.theme;
  ts_canvas_begin(c, "legend", "legend", NULL);
  ts_canvas_set_font_size(c, 11);
  double x = 6, y = lay->legend_y + LEGEND_H / 2;
  for (guint i = 0; i < tl->n_legend; i++) {
    const TsTlName *n = &tl->names[tl->legend[i]];
    g_autofree char *total = ts__tl_format_ns((double)tl->legend_ns[i], 0);
    g_autofree char *title = g_strdup_printf("%s %s — %s in all", n->kind, n->name, total);
    g_autofree char *label = elide(c, n->name, 180);
    if (label == NULL)
      break;
    double w;
    ts_canvas_text_size(c, label, &w, NULL);
    if (x + 14 + w > lay->width - 6)
      break;
    ts_canvas_begin(c, "legend-entry", NULL, title);
    ts_canvas_set_color(c, name_color_of(tl, n));
    ts_canvas_rect(c, x, y - 5, 10, 10, TRUE);
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_text(c, x + 14, y, label, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_CENTER, 0);
    ts_canvas_end(c);
    x += 14 + w + 16;
  }
  ts_canvas_end(c);
}

static void
draw_details(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  if (lay->details_h <= 0)
    return;
  const char *text = details_text(tl);
  if (text == NULL)
    return;
  gboolean table = tl->sel1 > tl->sel0;
  const TsStudioTheme *theme = tl->parent.theme;
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  guint n = g_strv_length(lines);
  ts_canvas_begin(c, "details", "details", NULL);
  ts_canvas_set_color(c, theme->grid);
  ts_canvas_line(c, 0, lay->details_y + 0.5, lay->width, lay->details_y + 0.5);
  ts_canvas_set_font_size(c, 11);
  ts_canvas_set_monospace(c, table); /* the columns line up */
  for (guint i = 0; i < MIN(n, (guint)DETAILS_MAX_LINES); i++) {
    gboolean more = i + 1 == DETAILS_MAX_LINES && n > DETAILS_MAX_LINES;
    g_autofree char *line =
        more ? g_strdup_printf("… %u more lines (the tooltip has them all)", n - i) : NULL;
    ts_canvas_set_color(c, i == 0 ? theme->foreground : theme->muted);
    g_autofree char *fits = elide(c, line ? line : lines[i], lay->width - 12);
    if (fits)
      ts_canvas_text(c, 6, lay->details_y + 6 + i * DETAILS_LINE_H, fits, TS_CANVAS_ALIGN_START,
                     TS_CANVAS_ALIGN_START, 0);
  }
  ts_canvas_set_monospace(c, FALSE);
  ts_canvas_end(c);
}

/* What the trace reader had to say (ranges never closed, ends without a begin): under the
 * timeline, never only in a log. */
static void
draw_notes(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  if (tl->notes == NULL || tl->notes->len == 0)
    return;
  ts_canvas_begin(c, "notes", NULL, NULL);
  ts_canvas_set_font_size(c, 11);
  ts_canvas_set_color(c, tl->parent.theme->muted);
  for (guint i = 0; i < tl->notes->len; i++)
    ts_canvas_text(c, 6, lay->notes_y + i * NOTE_H + 1, tl->notes->pdata[i],
                   TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
  ts_canvas_end(c);
}

static void
timeline_draw(TsStudioView *view, TsCanvas *c, double width, double height)
{
  TsTlView *tl = (TsTlView *)view;
  const TsStudioTheme *theme = view->theme;
  ts_canvas_fill_background(c, theme->background);
  ts_canvas_begin(c, "timeline", NULL, NULL);
  if (view->n_marks == 0) {
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_set_font_size(c, 15);
    ts_canvas_text(c, width / 2, height / 2, "No events: this profile recorded nothing to show.",
                   TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_CENTER, 0);
    ts_canvas_end(c);
    return;
  }
  TsTlLayout lay;
  ts__tl_layout(tl, width, height, &lay);
  ts__tl_draw_axis(tl, c, &lay);
  draw_rows(tl, c, &lay);
  ts__tl_draw_flows(tl, c, &lay);
  ts__tl_draw_memory(tl, c, &lay);
  ts__tl_draw_counters(tl, c, &lay);
  draw_notes(tl, c, &lay);
  draw_details(tl, c, &lay);
  draw_legend(tl, c, &lay);
  draw_selection(tl, c, &lay);
  draw_outline(tl, c, &lay, view->selected, theme->accent);
  if (view->hover != view->selected)
    draw_outline(tl, c, &lay, view->hover, theme->highlight);
  ts_canvas_end(c);
}

/* ---- hit and describe ---- */

typedef struct {
  double x, slop;
  gint64 hit;
  double best;
  const TsTlLayout *lay;
} HitCtx;

static gboolean
hit_mark(TsTlView *tl, guint r, const Mark *m, gpointer data)
{
  HitCtx *h = data;
  double x, w;
  mark_extent(h->lay, m->t0, m->t1, 2, &x, &w);
  if (x - h->slop > h->x)
    return FALSE; /* marks come left to right: nothing further can be nearer */
  double dist = h->x < x ? x - h->x : h->x > x + w ? h->x - (x + w) : 0;
  if (dist <= h->slop && dist < h->best) {
    h->best = dist;
    /* A fold is many events: it has no single description. */
    h->hit = m->fold ? 0 : (gint64)tl->rows[r].ev[m->first].index + 1;
  }
  return TRUE;
}

static gint64
timeline_hit(TsStudioView *view, double x, double y, double width, double height)
{
  TsTlView *tl = (TsTlView *)view;
  if (tl->events->len == 0)
    return 0;
  TsTlLayout lay;
  ts__tl_layout(tl, width, height, &lay);
  if (x < lay.x0 - 2 || x > lay.x1 + 2)
    return 0;
  if (lay.mem_h > 0 && y >= lay.mem_y && y <= lay.mem_y + lay.mem_h)
    return ts__tl_hit_memory(tl, &lay, x);
  if (lay.counter_h > 0 && y >= lay.counters_y)
    return ts__tl_hit_counter(tl, &lay, x, y);
  if (y < lay.rows_y || lay.row_h <= 0)
    return 0;
  guint r = (guint)((y - lay.rows_y) / lay.row_h);
  if (r >= tl->n_rows)
    return 0;
  HitCtx h = {.x = x, .slop = 2, .best = G_MAXDOUBLE, .lay = &lay};
  walk_row(tl, r, &lay, hit_mark, &h);
  return h.hit;
}

/* The time a slice spends in itself: its duration less what its children (the slices one row
 * deeper on its lane, within it) cover. -1 when it has no children. */
static gint64
self_time(const TsTlView *tl, guint32 index)
{
  guint r = tl->row_of[index];
  if (r == G_MAXUINT32 || r + 1 >= tl->n_rows || tl->rows[r + 1].lane != tl->rows[r].lane)
    return -1;
  const TsDbEvent *e = &g_array_index(tl->events, TsDbEvent, index);
  gint64 start = e->start_ns, end = e->start_ns + MAX(e->dur_ns, 0), covered = 0, last = start;
  const TsTlRow *child = &tl->rows[r + 1];
  guint a, b;
  gboolean any = FALSE;
  ts__tl_visible(child, start, end, &a, &b);
  for (guint i = a; i < b; i++) {
    if (tl->names[child->ev[i].name].shape != TS_TL_SLICE)
      continue;
    /* Children of one slice do not overlap; clipping and the running end keep a malformed
     * trace from counting time twice. */
    gint64 s0 = MAX(child->ev[i].start, last), s1 = MIN(child->ev[i].end, end);
    if (s1 > s0) {
      covered += s1 - s0;
      last = s1;
      any = TRUE;
    }
  }
  return any ? end - start - covered : -1;
}

static char *
timeline_describe(TsStudioView *view, gint64 id)
{
  TsTlView *tl = (TsTlView *)view;
  if (id <= 0 || (guint64)id > tl->events->len)
    return NULL;
  const TsDbEvent *e = &g_array_index(tl->events, TsDbEvent, id - 1);
  GString *s = g_string_new(NULL);
  const char *kind = e->kind ? e->kind : "event";
  /* A name that only repeats the kind ("free free") says nothing. */
  if (e->name && *e->name && g_strcmp0(e->name, kind) != 0)
    g_string_append_printf(s, "%s %s\n", kind, e->name);
  else
    g_string_append_printf(s, "%s\n", kind);
  g_autofree char *start = ts__tl_format_ns((double)e->start_ns, -1);
  g_string_append_printf(s, "start %s", start);
  if (e->dur_ns > 0) {
    g_autofree char *dur = ts__tl_format_ns((double)e->dur_ns, 0);
    g_string_append_printf(s, ", duration %s", dur);
    gint64 self = self_time(tl, (guint32)(id - 1));
    if (self >= 0) {
      g_autofree char *self_text = ts__tl_format_ns((double)self, 0);
      g_string_append_printf(s, ", self %s", self_text);
    }
  }
  if (g_strcmp0(e->kind, "counter") == 0) {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append_printf(s, "\nvalue %s", g_ascii_formatd(buf, sizeof buf, "%.10g", e->value));
  }
  if (e->bytes > 0) {
    g_autofree char *size = g_format_size_full(e->bytes, G_FORMAT_SIZE_IEC_UNITS);
    g_string_append_printf(s, "\nbytes %s", size);
    if (e->dur_ns > 0 && (g_strcmp0(e->kind, "memcpy") == 0 || g_strcmp0(e->kind, "memset") == 0))
      g_string_append_printf(s, " (%.1f GB/s)", (double)e->bytes / (double)e->dur_ns);
  }
  if (e->address)
    g_string_append_printf(s, "\naddress 0x%" G_GINT64_MODIFIER "x", e->address);
  /* What was in use once an allocation or free took effect. */
  const TsTlMemory *mem = &tl->mem;
  guint at = ts__tl_memory_at(mem, 0, e->start_ns);
  for (; at != G_MAXUINT && mem->t[at] == e->start_ns; at = at ? at - 1 : G_MAXUINT) {
    if (mem->index[at] == (guint32)(id - 1)) {
      g_autofree char *used = g_format_size_full(mem->v[at], G_FORMAT_SIZE_IEC_UNITS);
      g_string_append_printf(s, "\nin use after it: %s", used);
      break;
    }
  }
  if (e->detail && *e->detail)
    g_string_append_printf(s, "\n%s", e->detail);
  g_autofree char *lane = ts__tl_lane_label(tl, e->lane);
  g_string_append_printf(s, "\n%s", lane);
  if (e->depth)
    g_string_append_printf(s, ", depth %u", e->depth);
  return g_string_free(s, FALSE);
}

static void
timeline_finalize(TsStudioView *view)
{
  TsTlView *tl = (TsTlView *)view;
  ts__tl_release(tl);
  g_free(tl->search);
  g_free(tl->details);
  g_array_unref(tl->events);
  g_free(tl);
}

static const TsStudioViewClass timeline_class = {
    .name = "timeline",
    .unit = "events",
    .draw = timeline_draw,
    .hit = timeline_hit,
    .describe = timeline_describe,
    .finalize = timeline_finalize,
};

TsStudioView *
ts_studio_timeline_new(GArray *events)
{
  g_return_val_if_fail(events != NULL, NULL);
  g_return_val_if_fail(g_array_get_element_size(events) == sizeof(TsDbEvent), NULL);
  TsTlView *tl = g_new0(TsTlView, 1);
  tl->parent.klass = &timeline_class;
  tl->parent.theme = ts_studio_theme(FALSE);
  tl->events = g_array_ref(events);
  ts__tl_prepare(tl); /* sets n_marks: the events, not the lane names and notes among them */
  tl->view0 = tl->span0;
  tl->view1 = tl->span1;
  return &tl->parent;
}

/* "trial ID: " at the start of a range's name: ID, else 0. */
static gint64
trial_in_name(const TsDbEvent *e)
{
  if (g_strcmp0(e->kind, "range") != 0 || e->name == NULL || !g_str_has_prefix(e->name, "trial "))
    return 0;
  char *end = NULL;
  gint64 id = g_ascii_strtoll(e->name + strlen("trial "), &end, 10);
  return end && end[0] == ':' && id > 0 ? id : 0;
}

gint64
ts_studio_timeline_trial_of(TsStudioView *view, gint64 mark)
{
  g_return_val_if_fail(view != NULL, 0);
  TsTlView *tl = (TsTlView *)view;
  if (mark <= 0 || (guint64)mark > tl->events->len)
    return 0;
  return trial_in_name(&g_array_index(tl->events, TsDbEvent, mark - 1));
}

gint64
ts_studio_timeline_find_trial(TsStudioView *view, gint64 trial_id)
{
  g_return_val_if_fail(view != NULL, 0);
  TsTlView *tl = (TsTlView *)view;
  for (guint i = 0; trial_id > 0 && i < tl->events->len; i++)
    if (trial_in_name(&g_array_index(tl->events, TsDbEvent, i)) == trial_id)
      return i + 1;
  return 0;
}
