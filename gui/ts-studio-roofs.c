/* ts-studio-roofs.c — the roofline's roofs: a copy of the device's measured ceilings, which
 * compute roof the workload is held to, the axis ranges they need, and their drawing.
 *
 * Each compute roof is a horizontal line from its ridge with DRAM to the right edge; each
 * memory roof a line of slope one (y = bandwidth x intensity) from the left edge to its ridge
 * with the highest compute roof. DRAM is solid, the caches dashed (a kernel that streams from
 * DRAM cannot beat the DRAM line; the cache lines say how far blocking could take it). The
 * compute roof the op is held to (ts_prof_compute_roof: tensor-core roofs for a 16-bit gemm on a
 * GPU) is drawn heavier with its ridge labelled, the others faint. */
#include "ts-studio-plot-private.h"

#include <math.h>

#include "ts-op.h"

static void
roof_clear(gpointer data)
{
  g_free(((TsPlotRoof *)data)->name);
}

static int
roof_order(gconstpointer pa, gconstpointer pb)
{
  const TsPlotRoof *a = pa, *b = pb;
  if (a->kind != b->kind)
    return a->kind == TS_PROF_COMPUTE ? -1 : 1;
  return a->value > b->value ? -1 : a->value < b->value;
}

/* The compute roof the workload is held to, as the tuner's roofline figures use it. */
static const char *
held_roof_name(const TsStudioWorkload *w)
{
  const char *backend = w->device ? w->device->backend : NULL;
  g_autoptr(TsOpInstance) inst =
      w->op && w->shape && w->dtype ? ts_op_instance_new(w->op, w->shape, w->dtype, NULL) : NULL;
  if (inst)
    return ts_prof_compute_roof(backend, ts_dtype_name(ts_op_instance_dtype(inst)->storage),
                                ts_op_tensor_math(ts_op_instance_op(inst)));
  const TsOpDef *op = w->op ? ts_op_lookup(w->op) : NULL;
  return ts_prof_compute_roof(backend, w->dtype, op && ts_op_tensor_math(op));
}

const TsPlotRoof *
ts__plot_roofs_find(const TsPlotRoofs *r, const char *name)
{
  for (guint i = 0; i < r->roofs->len; i++) {
    const TsPlotRoof *roof = &g_array_index(r->roofs, TsPlotRoof, i);
    if (g_strcmp0(roof->name, name) == 0)
      return roof;
  }
  return NULL;
}

void
ts__plot_roofs_init(TsPlotRoofs *r, const TsStudioWorkload *w)
{
  *r = (TsPlotRoofs){0};
  r->roofs = g_array_new(FALSE, TRUE, sizeof(TsPlotRoof));
  g_array_set_clear_func(r->roofs, roof_clear);
  const TsProfCeilings *c = w->device ? w->device->ceilings : NULL;
  guint n = c ? ts_prof_ceilings_count(c) : 0;
  for (guint i = 0; i < n; i++) {
    const TsProfCeiling *ceil = ts_prof_ceilings_nth(c, i);
    /* a rate (exps a second) is no roof of FLOPs or bytes */
    if (!(ceil->value > 0) || !isfinite(ceil->value) || ceil->kind == TS_PROF_RATE)
      continue;
    TsPlotRoof roof = {g_strdup(ceil->name), ceil->kind, ceil->value};
    g_array_append_val(r->roofs, roof);
  }
  g_array_sort(r->roofs, roof_order);
  const TsPlotRoof *held = ts__plot_roofs_find(r, held_roof_name(w));
  if (held == NULL) /* as ts_prof_roofline: f32 stands in for a roof that was not measured */
    held = ts__plot_roofs_find(r, "f32");
  r->held = held && held->kind == TS_PROF_COMPUTE ? held->name : NULL;
  const TsPlotRoof *dram = ts__plot_roofs_find(r, "dram");
  for (guint i = 0; i < r->roofs->len; i++) {
    const TsPlotRoof *roof = &g_array_index(r->roofs, TsPlotRoof, i);
    if (roof->kind == TS_PROF_COMPUTE)
      r->peak = MAX(r->peak, roof->value);
    else if (dram == NULL)
      r->dram = roof->value; /* sorted highest first: the last is the slowest */
  }
  if (dram && dram->kind == TS_PROF_MEMORY)
    r->dram = dram->value;
}

char *
ts__plot_roofs_implausible(const TsPlotRoofs *r)
{
  /* Nearest the cores first: each level is at least as fast as the next one out. */
  static const char *const levels[] = {"l1", "l2", "l3", "dram"};
  g_autoptr(GString) what = g_string_new(NULL);
  const TsPlotRoof *inner = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(levels); i++) {
    const TsPlotRoof *roof = ts__plot_roofs_find(r, levels[i]);
    if (roof == NULL || roof->kind != TS_PROF_MEMORY)
      continue;
    /* 5% of slack: two measurements of one bandwidth differ by a few percent. */
    if (inner && inner->value < roof->value * 0.95)
      g_string_append_printf(what, "%s%s (%.1f GB/s) is slower than %s (%.1f GB/s)",
                             what->len ? "; " : "", inner->name, inner->value, roof->name,
                             roof->value);
    inner = roof;
  }
  const TsPlotRoof *f32 = ts__plot_roofs_find(r, "f32"), *f64 = ts__plot_roofs_find(r, "f64");
  if (f32 && f64 && f64->value > f32->value * 1.05)
    g_string_append_printf(what, "%sf64 (%.0f GFLOP/s) is faster than f32 (%.0f GFLOP/s)",
                           what->len ? "; " : "", f64->value, f32->value);
  if (what->len == 0)
    return NULL;
  return g_strdup_printf("implausible ceilings: %s. Measured on a busy machine? Measure again "
                         "on a quiet one: tessera-tune devices --measure",
                         what->str);
}

void
ts__plot_roofs_clear(TsPlotRoofs *r)
{
  g_clear_pointer(&r->roofs, g_array_unref);
}

void
ts__plot_roofs_extend(const TsPlotRoofs *r, double *xl, double *xh, double *yl, double *yh)
{
  if (!(r->peak > 0 && r->dram > 0))
    return;
  double rl = INFINITY, rh = -INFINITY;
  for (guint i = 0; i < r->roofs->len; i++) {
    const TsPlotRoof *roof = &g_array_index(r->roofs, TsPlotRoof, i);
    double ridge = roof->kind == TS_PROF_COMPUTE ? roof->value / r->dram : r->peak / roof->value;
    rl = MIN(rl, ridge);
    rh = MAX(rh, ridge);
  }
  /* Room left of the fastest ridge and right of the slowest, so both slopes and flats show. */
  *xl = MIN(*xl, rl / 4);
  *xh = MAX(*xh, rh * 4);
  *yh = MAX(*yh, r->peak);
  /* Down to where the DRAM line enters at the left edge, two decades under the peak at least,
   * so the slope reads as a slope. */
  *yl = MIN(*yl, MAX(r->dram * *xl, r->peak / 1e4));
  *yl = MIN(*yl, r->peak / 100);
}

/* Label placement: roofs of equal or close value (bf16 and f16 tensor cores on Hopper, f32 and
 * f64 FMA on many CPUs) would print their labels on top of each other. Each label takes the
 * first of its candidate places that no earlier label covers. */
typedef struct {
  double x0, y0, x1, y1;
} Box;

static gboolean
box_free(const GArray *placed, Box b)
{
  for (guint i = 0; i < placed->len; i++) {
    const Box *o = &g_array_index(placed, Box, i);
    if (b.x0 < o->x1 && o->x0 < b.x1 && b.y0 < o->y1 && o->y0 < b.y1)
      return FALSE;
  }
  return TRUE;
}

/* The axis-aligned box around a label of w x h laid along direction angle from (x, y), above
 * the line: conservative for slanted text, which is all that placement needs. */
static Box
slanted_box(double x, double y, double w, double h, double angle)
{
  double ux = cos(angle), uy = sin(angle), nx = uy, ny = -ux; /* along, and up off the line */
  double cx[4] = {x, x + w * ux, x + w * ux + h * nx, x + h * nx};
  double cy[4] = {y, y + w * uy, y + w * uy + h * ny, y + h * ny};
  Box b = {cx[0], cy[0], cx[0], cy[0]};
  for (guint i = 1; i < 4; i++) {
    b.x0 = MIN(b.x0, cx[i]);
    b.x1 = MAX(b.x1, cx[i]);
    b.y0 = MIN(b.y0, cy[i]);
    b.y1 = MAX(b.y1, cy[i]);
  }
  return b;
}

static void
draw_memory_roof(const TsPlotRoofs *r, TsCanvas *c, const TsStudioTheme *th, const TsPlot *p,
                 const TsPlotRoof *roof, GArray *placed)
{
  gboolean dram = g_strcmp0(roof->name, "dram") == 0;
  double x0 = p->ax.lo, x1 = r->peak > 0 ? r->peak / roof->value : p->ax.hi;
  double px0 = ts__plot_x(p, x0), py0 = ts__plot_y(p, roof->value * x0);
  double px1 = ts__plot_x(p, x1), py1 = ts__plot_y(p, roof->value * x1);
  g_autofree char *id = g_strdup_printf("ceiling-%s", roof->name);
  g_autofree char *bw = ts__plot_format_si(roof->value * 1e9, "B/s");
  g_autofree char *title =
      g_strdup_printf("%s: %s (memory roof%s)", roof->name, bw, dram ? "" : ", a cache level");
  ts_canvas_begin(c, "ceiling memory", id, title);
  ts_canvas_set_color(c, dram ? th->memory_roof : ts_studio_rgba_alpha(th->memory_roof, 0.7));
  ts_canvas_set_line_width(c, dram ? 2 : 1.25);
  if (!dram)
    ts_canvas_set_dash(c, 6, 4);
  ts_canvas_line(c, px0, py0, px1, py1);
  ts_canvas_set_dash(c, 0, 0);
  /* The label rides the line a little after it enters the plot (from the left or the bottom),
   * or further along where a label of a close roof (DRAM and L3 on a small machine) sits. */
  double len = hypot(px1 - px0, py1 - py0);
  if (len > 1) {
    double bottom = p->y + p->h, angle = atan2(py1 - py0, px1 - px0);
    double t0 = py0 > bottom && py1 < py0 ? (py0 - bottom) / (py0 - py1) : 0;
    t0 += 12 / len;
    g_autofree char *label = g_strdup_printf("%s %s", roof->name, bw);
    ts_canvas_set_font_size(c, 11);
    double w, h;
    ts_canvas_text_size(c, label, &w, &h);
    double t = t0;
    Box b = slanted_box(px0 + t0 * (px1 - px0), py0 + t0 * (py1 - py0) - 3, w, h, angle);
    for (guint k = 0; k < 4; k++) {
      double tk = t0 + k * (w + 16) / len;
      Box cand = slanted_box(px0 + tk * (px1 - px0), py0 + tk * (py1 - py0) - 3, w, h, angle);
      if (box_free(placed, cand)) {
        t = tk;
        b = cand;
        break;
      }
    }
    g_array_append_val(placed, b);
    double lx = px0 + MIN(t, 1) * (px1 - px0), ly = py0 + MIN(t, 1) * (py1 - py0);
    ts_canvas_text(c, lx, ly - 3, label, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_END, angle);
  }
  ts_canvas_end(c);
}

/* xy: n candidate top-left corners, best first; the first is taken when none is free. */
static void
place_label(TsCanvas *c, GArray *placed, const char *label, const double *xy, guint n)
{
  double w, h;
  ts_canvas_text_size(c, label, &w, &h);
  Box b = {xy[0], xy[1], xy[0] + w, xy[1] + h};
  for (guint i = 0; i < n; i++) {
    Box cand = {xy[2 * i], xy[2 * i + 1], xy[2 * i] + w, xy[2 * i + 1] + h};
    if (box_free(placed, cand)) {
      b = cand;
      break;
    }
  }
  g_array_append_val(placed, b);
  ts_canvas_text(c, b.x0, b.y0, label, TS_CANVAS_ALIGN_START, TS_CANVAS_ALIGN_START, 0);
}

static void
draw_compute_roof(const TsPlotRoofs *r, TsCanvas *c, const TsStudioTheme *th, const TsPlot *p,
                  const TsPlotRoof *roof, GArray *placed)
{
  gboolean held = r->held && g_strcmp0(roof->name, r->held) == 0;
  double ridge = r->dram > 0 ? roof->value / r->dram : NAN;
  double x0 = isfinite(ridge) ? ts__plot_x(p, ridge) : p->x, y = ts__plot_y(p, roof->value);
  g_autofree char *id = g_strdup_printf("ceiling-%s", roof->name);
  g_autofree char *perf = ts__plot_format_si(roof->value * 1e9, "FLOP/s");
  g_autofree char *ai =
      isfinite(ridge) ? ts__plot_format(ridge, TS_PLOT_FMT_PLAIN, "FLOP/B") : NULL;
  g_autofree char *title = g_strdup_printf("%s: %s (compute roof%s)%s%s", roof->name, perf,
                                           held ? ", the one this op is held to" : "",
                                           ai ? "; ridge at " : "", ai ? ai : "");
  ts_canvas_begin(c, "ceiling compute", id, title);
  TsRgba color = held ? th->compute_roof : ts_studio_rgba_alpha(th->compute_roof, 0.4);
  ts_canvas_set_color(c, color);
  ts_canvas_set_line_width(c, held ? 2.5 : 1.25);
  ts_canvas_line(c, x0, y, p->x + p->w, y);
  if (isfinite(ridge)) /* the ridge point: left of it memory bounds, right of it compute */
    ts_canvas_marker(c, TS_CANVAS_MARKER_DIAMOND, x0, y, held ? 4 : 3);
  g_autofree char *label = g_strdup_printf("%s %s", roof->name, perf);
  ts_canvas_set_font_size(c, 11);
  double tw, th_px;
  ts_canvas_text_size(c, label, &tw, &th_px);
  /* Right end above the line, then below it, then further left, above and below. */
  double xy[16];
  guint n = 0;
  for (guint k = 0; k < 4; k++) {
    double x = p->x + p->w - 4 - tw - k * (tw + 16);
    if (x < p->x && k > 0)
      break;
    xy[2 * n] = x;
    xy[2 * n + 1] = y - 3 - th_px;
    xy[2 * n + 2] = x;
    xy[2 * n + 3] = y + 3;
    n += 2;
  }
  place_label(c, placed, label, xy, n);
  if (held && ai) {
    g_autofree char *ridge_label = g_strdup_printf("ridge %s", ai);
    double rw;
    ts_canvas_text_size(c, ridge_label, &rw, NULL);
    double ridge_xy[4] = {x0 + 6, y + 4, x0 - 6 - rw, y + 4};
    ts_canvas_set_color(c, th->muted);
    place_label(c, placed, ridge_label, ridge_xy, 2);
  }
  ts_canvas_end(c);
}

void
ts__plot_roofs_draw(const TsPlotRoofs *r, TsCanvas *c, const TsStudioTheme *theme, const TsPlot *p)
{
  /* Memory roofs first, under the compute roofs; DRAM before the caches, so that its label gets
   * the first place. */
  g_autoptr(GArray) placed = g_array_new(FALSE, FALSE, sizeof(Box));
  const TsPlotRoof *dram = ts__plot_roofs_find(r, "dram");
  if (dram && dram->kind == TS_PROF_MEMORY)
    draw_memory_roof(r, c, theme, p, dram, placed);
  for (guint i = 0; i < r->roofs->len; i++) {
    const TsPlotRoof *roof = &g_array_index(r->roofs, TsPlotRoof, i);
    if (roof->kind == TS_PROF_MEMORY && roof != dram)
      draw_memory_roof(r, c, theme, p, roof, placed);
  }
  for (guint i = 0; i < r->roofs->len; i++) {
    const TsPlotRoof *roof = &g_array_index(r->roofs, TsPlotRoof, i);
    if (roof->kind == TS_PROF_COMPUTE)
      draw_compute_roof(r, c, theme, p, roof, placed);
  }
}
