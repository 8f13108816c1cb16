/* ts-studio-timeline-tracks.c — what a foreign trace adds to the rows: counter tracks (a
 * step chart per series under the memory area, drawn from per-column maxima as memory is, so
 * a frame costs O(width x log n) per track) and flows (arrows from the slice a flow leaves to
 * the one it reaches, bound once when the timeline is prepared). */
#include "ts-studio-timeline-private.h"

#include <math.h>

/* More flows than this in view are a tangle, not a picture: then only the selected or hovered
 * slice's own are drawn, as Perfetto does for every slice. */
#define FLOWS_ALL_MAX 400

/* ---- counters ---- */

static int
cmp_counter(const void *pa, const void *pb)
{
  const TsTlCounter *a = pa, *b = pb;
  if (a->lane != b->lane)
    return a->lane < b->lane ? -1 : 1;
  return a->name < b->name ? -1 : a->name > b->name;
}

void
ts__tl_build_counters(TsTlView *tl, const guint32 *names_of)
{
  const TsDbEvent *ev = (const TsDbEvent *)tl->events->data;
  guint n = tl->events->len;
  /* (lane, name) -> track + 1, and how many samples each track has. */
  g_autoptr(GHashTable) tracks =
      g_hash_table_new_full(ts__tl_key64_hash, g_int64_equal, g_free, NULL);
  GArray *list = g_array_new(FALSE, TRUE, sizeof(TsTlCounter));
  guint32 *track_of = NULL;
  for (guint i = 0; i < n; i++) {
    if (tl->names[names_of[i]].shape != TS_TL_COUNTER)
      continue;
    if (track_of == NULL)
      track_of = g_new(guint32, n);
    gint64 key = (gint64)((guint64)ev[i].lane << 32 | names_of[i]);
    guint k = GPOINTER_TO_UINT(g_hash_table_lookup(tracks, &key));
    if (k == 0) {
      TsTlCounter c = {.lane = ev[i].lane, .name = names_of[i], .min = ev[i].value,
                       .max = ev[i].value};
      g_array_append_val(list, c);
      k = list->len;
      g_hash_table_insert(tracks, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(k));
    }
    TsTlCounter *c = &g_array_index(list, TsTlCounter, k - 1);
    c->s.n++;
    c->min = MIN(c->min, ev[i].value);
    c->max = MAX(c->max, ev[i].value);
    track_of[i] = k - 1;
  }
  /* Tracks by lane, then name, whatever order samples came in. Each keeps its position of
   * first sight in s.peak until its samples are in, so they can find it. */
  guint n_tracks = list->len;
  TsTlCounter *c = (TsTlCounter *)g_array_free(list, FALSE);
  for (guint k = 0; k < n_tracks; k++)
    c[k].s.peak = k;
  if (n_tracks > 1)
    qsort(c, n_tracks, sizeof *c, cmp_counter);
  guint32 *order = g_new(guint32, MAX(n_tracks, 1));
  for (guint k = 0; k < n_tracks; k++)
    order[c[k].s.peak] = k;
  TsTlStamp **samples = g_new0(TsTlStamp *, MAX(n_tracks, 1));
  guint *fill = g_new0(guint, MAX(n_tracks, 1));
  for (guint k = 0; k < n_tracks; k++)
    samples[k] = g_new(TsTlStamp, c[k].s.n);
  for (guint i = 0; track_of && i < n; i++) {
    if (tl->names[names_of[i]].shape != TS_TL_COUNTER)
      continue;
    guint k = order[track_of[i]];
    samples[k][fill[k]++] = (TsTlStamp){ev[i].start_ns, i};
  }
  for (guint k = 0; k < n_tracks; k++) {
    TsTlMemory *s = &c[k].s;
    qsort(samples[k], s->n, sizeof(TsTlStamp), ts__tl_cmp_stamp);
    s->t = g_new(gint64, s->n);
    s->v = g_new(gint64, s->n);
    s->index = g_new(guint32, s->n);
    s->peak = G_MININT64;
    for (guint j = 0; j < s->n; j++) {
      s->t[j] = samples[k][j].t;
      s->index[j] = samples[k][j].index;
      s->v[j] = ts__tl_key_of(ev[samples[k][j].index].value);
      if (s->v[j] > s->peak) {
        s->peak = s->v[j];
        s->peak_t = s->t[j];
      }
    }
    ts__tl_max_build(&s->tree, s->v, s->n);
    g_free(samples[k]);
  }
  g_free(samples);
  g_free(fill);
  g_free(order);
  g_free(track_of);
  tl->counters = c;
  tl->n_counters = n_tracks;
}

/* ---- flows ---- */

/* The rows of lane: [*first, *end). */
static void
lane_rows(const TsTlView *tl, guint32 lane, guint *first, guint *end)
{
  guint lo = 0, hi = tl->n_rows;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (tl->rows[mid].lane < lane)
      lo = mid + 1;
    else
      hi = mid;
  }
  *first = lo;
  while (hi < tl->n_rows && tl->rows[hi].lane == lane)
    hi++;
  *end = MAX(hi, lo);
}

/* Where a flow meets lane at t: the deepest slice enclosing t, or with next, the first slice
 * to begin at or after t (then *t moves to its start). The row is the lane's first when no
 * slice qualifies; G_MAXUINT32 when the lane has no rows. */
static guint32
bind(const TsTlView *tl, guint32 lane, gint64 *t, gboolean next, guint32 *slice)
{
  guint first, end;
  lane_rows(tl, lane, &first, &end);
  *slice = 0;
  if (first == end)
    return G_MAXUINT32;
  guint32 row = first;
  if (next) {
    gint64 best = G_MAXINT64;
    for (guint r = first; r < end; r++) {
      const TsTlRow *rw = &tl->rows[r];
      guint i = ts__tl_lower_bound(rw, 0, rw->n, *t);
      if (i < rw->n && rw->ev[i].start < best) {
        best = rw->ev[i].start;
        row = r;
        *slice = rw->ev[i].index + 1;
      }
    }
    if (*slice)
      *t = best;
    return row;
  }
  for (guint r = end; r-- > first;) {
    const TsTlRow *rw = &tl->rows[r];
    guint a, b;
    ts__tl_visible(rw, *t, *t, &a, &b);
    for (guint i = b; i-- > a;) {
      if (rw->ev[i].start <= *t && rw->ev[i].end >= *t &&
          tl->names[rw->ev[i].name].shape == TS_TL_SLICE) {
        *slice = rw->ev[i].index + 1;
        return r;
      }
    }
  }
  return row;
}

void
ts__tl_build_flows(TsTlView *tl, const guint32 *names_of)
{
  const TsDbEvent *ev = (const TsDbEvent *)tl->events->data;
  GArray *flows = g_array_new(FALSE, FALSE, sizeof(TsTlFlow));
  for (guint i = 0; i < tl->events->len; i++) {
    if (tl->names[names_of[i]].shape != TS_TL_FLOW)
      continue;
    TsTlFlow f = {.index = i, .t0 = ev[i].start_ns, .t1 = ev[i].to_ns};
    f.row0 = bind(tl, ev[i].lane, &f.t0, FALSE, &f.from);
    f.row1 = bind(tl, ev[i].to_lane, &f.t1, ev[i].to_next, &f.to);
    g_array_append_val(flows, f);
  }
  tl->n_flows = flows->len;
  tl->flows = (TsTlFlow *)g_array_free(flows, FALSE);
}

void
ts__tl_release_tracks(TsTlView *tl)
{
  for (guint k = 0; k < tl->n_counters; k++) {
    TsTlMemory *s = &tl->counters[k].s;
    g_free(s->t);
    g_free(s->v);
    g_free(s->index);
    ts__tl_max_clear(&s->tree);
  }
  g_clear_pointer(&tl->counters, g_free);
  tl->n_counters = 0;
  g_clear_pointer(&tl->flows, g_free);
  tl->n_flows = 0;
}

/* ---- drawing ---- */

/* A counter's value in a few significant digits, with a k/M/G suffix past a thousand. */
static char *
format_value(double v)
{
  static const char *const suffix[] = {"", "k", "M", "G", "T", "P"};
  guint s = 0;
  double a = fabs(v);
  while (a >= 1000 && s + 1 < G_N_ELEMENTS(suffix)) {
    a /= 1000;
    v /= 1000;
    s++;
  }
  return g_strdup_printf("%.4g%s", v, suffix[s]);
}

#define COUNTER_COL_PX 2

static void
draw_counter(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay, guint k)
{
  const TsTlCounter *ct = &tl->counters[k];
  const TsTlMemory *s = &ct->s;
  const TsStudioTheme *theme = tl->parent.theme;
  const char *name = tl->names[ct->name].name;
  double top = lay->counters_y + k * lay->counter_h, h = lay->counter_h - 6, bottom = top + h;
  g_autofree char *lane = ts__tl_lane_label(tl, ct->lane);
  g_autofree char *lo_text = format_value(ct->min), *hi_text = format_value(ct->max);
  g_autofree char *id = g_strdup_printf("counter-%u", k + 1);
  g_autofree char *title = g_strdup_printf("%s (%s): %s to %s", name, lane, lo_text, hi_text);
  ts_canvas_begin(c, "counter", id, title);
  ts_canvas_set_font_size(c, MIN(11, h));
  ts_canvas_set_color(c, theme->muted);
  double w;
  ts_canvas_text_size(c, hi_text, &w, NULL);
  /* The name, then the track's maximum, in the gutter. */
  ts_canvas_text(c, lay->x0 - 6, top, hi_text, TS_CANVAS_ALIGN_END, TS_CANVAS_ALIGN_START, 0);
  if (lay->x0 - 18 - w > 12) {
    ts_canvas_begin(c, NULL, NULL, NULL);
    ts_canvas_clip(c, 0, top, lay->x0 - 12 - w, h + 6);
    ts_canvas_text(c, 6, top, name, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
    ts_canvas_end(c);
  }
  ts_canvas_set_color(c, theme->frame);
  ts_canvas_line(c, lay->x0, bottom + 0.5, lay->x1, bottom + 0.5);
  ts_canvas_clip(c, lay->x0, top - 1, lay->x1 - lay->x0, h + 2);

  /* The baseline is 0 when the values stay on one side of it, else the minimum. */
  double lo = MIN(ct->min, 0), hi = MAX(ct->max, 0);
  double scale = hi > lo ? h / (hi - lo) : 0;
  guint cols = (guint)ceil((lay->x1 - lay->x0) / COUNTER_COL_PX);
  g_autofree gint64 *level = g_new(gint64, MAX(cols, 1));
  ts__tl_memory_columns(s, lay->t0, COUNTER_COL_PX * lay->ns_per_px, cols, level);
  double *xy = g_new(double, 4 * cols + 8);
  guint n = 0;
  /* Nothing before the first sample: the counter had no value then. */
  double x_first = MAX(ts__tl_x(lay, s->t[0]), lay->x0);
  guint col0 = (guint)CLAMP(floor((x_first - lay->x0) / COUNTER_COL_PX), 0, cols);
  double base = round(bottom - (0 - lo) * scale), last_y = -1;
  xy[n++] = lay->x0 + col0 * COUNTER_COL_PX;
  xy[n++] = base;
  for (guint col = col0; col < cols; col++) {
    double v = ts__tl_value_of(level[col]);
    double y = round(bottom - (v - lo) * scale), x = lay->x0 + col * COUNTER_COL_PX;
    if (y != last_y) {
      xy[n++] = x;
      xy[n++] = y;
      last_y = y;
    }
    xy[n++] = MIN(x + COUNTER_COL_PX, lay->x1);
    xy[n++] = y;
  }
  xy[n++] = lay->x1;
  xy[n++] = base;
  if (col0 < cols) {
    ts_canvas_set_color(c, ts_studio_rgba_alpha(ts_studio_theme_series(theme, name), 0.7));
    ts_canvas_polygon(c, xy, n / 2);
  }
  g_free(xy);
  ts_canvas_end(c);
}

void
ts__tl_draw_counters(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  for (guint k = 0; k < tl->n_counters && lay->counter_h > 0; k++)
    draw_counter(tl, c, lay, k);
}

gint64
ts__tl_hit_counter(TsTlView *tl, const TsTlLayout *lay, double x, double y)
{
  if (lay->counter_h <= 0 || y < lay->counters_y)
    return 0;
  guint k = (guint)((y - lay->counters_y) / lay->counter_h);
  if (k >= tl->n_counters)
    return 0;
  return ts__tl_hit_counter_at(tl, k, lay->t0 + (gint64)llround((x - lay->x0) * lay->ns_per_px));
}

gint64
ts__tl_hit_counter_at(TsTlView *tl, guint k, gint64 t)
{
  const TsTlMemory *s = &tl->counters[k].s;
  guint at = ts__tl_memory_at(s, 0, t);
  return at == G_MAXUINT ? 0 : (gint64)s->index[at] + 1;
}

/* An arrow as Perfetto draws one: a curve leaving its start and reaching its end
 * horizontally, a head at the end. */
static void
draw_arrow(TsCanvas *c, double x0, double y0, double x1, double y1)
{
  double dx = MAX(fabs(x1 - x0) / 2, 12);
  double xy[2 * 17];
  guint n = 0;
  for (guint i = 0; i <= 16; i++) {
    double t = i / 16.0, u = 1 - t;
    /* Cubic Bézier with control points (x0 + dx, y0) and (x1 - dx, y1). */
    xy[n++] = u * u * u * x0 + 3 * u * u * t * (x0 + dx) + 3 * u * t * t * (x1 - dx) +
              t * t * t * x1;
    xy[n++] = u * u * u * y0 + 3 * u * u * t * y0 + 3 * u * t * t * y1 + t * t * t * y1;
  }
  ts_canvas_polyline(c, xy, n / 2);
  double head[] = {x1, y1, x1 - 7, y1 - 3.5, x1 - 7, y1 + 3.5};
  ts_canvas_polygon(c, head, 3);
}

void
ts__tl_draw_flows(TsTlView *tl, TsCanvas *c, const TsTlLayout *lay)
{
  if (tl->n_flows == 0 || lay->row_h <= 0)
    return;
  gint64 sel = tl->parent.selected, hover = tl->parent.hover;
  guint in_view = 0;
  for (guint i = 0; i < tl->n_flows; i++) {
    const TsTlFlow *f = &tl->flows[i];
    in_view += f->row0 != G_MAXUINT32 && f->row1 != G_MAXUINT32 && MAX(f->t0, f->t1) >= lay->t0 &&
               MIN(f->t0, f->t1) <= lay->t1;
  }
  gboolean all = in_view <= FLOWS_ALL_MAX;
  const TsStudioTheme *theme = tl->parent.theme;
  gboolean svg = ts_canvas_is_svg(c);
  ts_canvas_begin(c, "flows", NULL, NULL);
  ts_canvas_clip(c, lay->x0, lay->rows_y, lay->x1 - lay->x0, lay->row_h * tl->n_rows);
  for (guint i = 0; i < tl->n_flows; i++) {
    const TsTlFlow *f = &tl->flows[i];
    if (f->row0 == G_MAXUINT32 || f->row1 == G_MAXUINT32 || MAX(f->t0, f->t1) < lay->t0 ||
        MIN(f->t0, f->t1) > lay->t1)
      continue;
    gboolean own = (sel > 0 && ((gint64)f->from == sel || (gint64)f->to == sel)) ||
                   (hover > 0 && ((gint64)f->from == hover || (gint64)f->to == hover));
    if (!all && !own)
      continue;
    const TsDbEvent *e = &g_array_index(tl->events, TsDbEvent, f->index);
    if (svg) {
      g_autofree char *id = g_strdup_printf("flow-%u", f->index + 1);
      g_autofree char *title = g_strdup_printf("%s", e->name ? e->name : "flow");
      ts_canvas_begin(c, "flow", id, title);
    } else {
      ts_canvas_begin(c, NULL, NULL, NULL);
    }
    ts_canvas_set_color(c, own ? theme->accent : ts_studio_rgba_alpha(theme->foreground, 0.55));
    ts_canvas_set_line_width(c, own ? 2 : 1.2);
    draw_arrow(c, ts__tl_x(lay, f->t0), lay->rows_y + (f->row0 + 0.5) * lay->row_h,
               ts__tl_x(lay, f->t1), lay->rows_y + (f->row1 + 0.5) * lay->row_h);
    ts_canvas_end(c);
  }
  ts_canvas_end(c);
  if (!all) {
    g_autofree char *note =
        g_strdup_printf("%u flows in view: only the selected slice's are drawn", in_view);
    ts_canvas_begin(c, "flows-note", NULL, NULL);
    ts_canvas_set_font_size(c, 11);
    ts_canvas_set_color(c, theme->muted);
    ts_canvas_text(c, lay->x1, lay->rows_y - 2, note, TS_CANVAS_ALIGN_END, TS_CANVAS_ALIGN_END, 0);
    ts_canvas_end(c);
  }
}
