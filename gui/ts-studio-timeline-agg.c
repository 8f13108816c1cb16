/* ts-studio-timeline-agg.c — what a selected time range holds, per name: count, total, mean,
 * minimum and maximum of the slices that overlap it (Perfetto's area aggregation, Tracy's find
 * zone). Each row finds its overlapping slices with two binary searches, so a range costs what
 * it holds. */
#include "ts-studio-timeline-private.h"

#include <string.h>

static TsTlView *
timeline(TsStudioView *view)
{
  g_return_val_if_fail(view != NULL && g_strcmp0(view->klass->name, "timeline") == 0, NULL);
  return (TsTlView *)view;
}

static gint
by_total(gconstpointer pa, gconstpointer pb)
{
  const TsStudioTimelineAgg *a = pa, *b = pb;
  if (a->total_ns != b->total_ns)
    return a->total_ns > b->total_ns ? -1 : 1;
  return g_strcmp0(a->name, b->name);
}

GArray *
ts_studio_timeline_aggregate(TsStudioView *view, gint64 start_ns, gint64 end_ns)
{
  TsTlView *tl = timeline(view);
  g_return_val_if_fail(tl != NULL, NULL);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(TsStudioTimelineAgg));
  if (end_ns < start_ns)
    return out;
  /* Slots by name index; G_MAXUINT: no slot yet. */
  g_autofree guint *slot = g_new(guint, MAX(tl->n_names, 1));
  for (guint k = 0; k < tl->n_names; k++)
    slot[k] = G_MAXUINT;
  for (guint r = 0; r < tl->n_rows; r++) {
    const TsTlRow *row = &tl->rows[r];
    guint a, b;
    ts__tl_visible(row, start_ns, end_ns, &a, &b);
    for (guint i = a; i < b; i++) {
      const TsTlEvent *e = &row->ev[i];
      const TsTlName *n = &tl->names[e->name];
      if (e->end < start_ns || n->shape != TS_TL_SLICE)
        continue;
      if (slot[e->name] == G_MAXUINT) {
        TsStudioTimelineAgg agg = {n->kind, n->name, 0, 0, G_MAXINT64, 0};
        g_array_append_val(out, agg);
        slot[e->name] = out->len - 1;
      }
      TsStudioTimelineAgg *agg = &g_array_index(out, TsStudioTimelineAgg, slot[e->name]);
      gint64 d = e->end - e->start;
      agg->count++;
      agg->total_ns += d;
      agg->min_ns = MIN(agg->min_ns, d);
      agg->max_ns = MAX(agg->max_ns, d);
    }
  }
  g_array_sort(out, by_total);
  return out;
}

void
ts_studio_timeline_set_selection(TsStudioView *view, gint64 start_ns, gint64 end_ns)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL);
  tl->sel0 = start_ns;
  tl->sel1 = end_ns;
}

gboolean
ts_studio_timeline_get_selection(TsStudioView *view, gint64 *start_ns, gint64 *end_ns)
{
  TsTlView *tl = timeline(view);
  g_return_val_if_fail(tl != NULL, FALSE);
  if (start_ns)
    *start_ns = tl->sel0;
  if (end_ns)
    *end_ns = tl->sel1;
  return tl->sel1 > tl->sel0;
}

#define AGG_ROWS 10

/* name, cut to width characters with "…" */
static char *
cut(const char *text, glong width)
{
  if (g_utf8_strlen(text, -1) <= width)
    return g_strdup(text);
  g_autofree char *head = g_utf8_substring(text, 0, width - 1);
  return g_strconcat(head, "…", NULL);
}

/* text padded with spaces to width characters (UTF-8 aware, unlike printf's %-Ns) */
static void
append_padded(GString *s, const char *text, glong width, gboolean right)
{
  glong pad = MAX(width - g_utf8_strlen(text, -1), 0);
  if (right)
    for (glong i = 0; i < pad; i++)
      g_string_append_c(s, ' ');
  g_string_append(s, text);
  if (!right)
    for (glong i = 0; i < pad; i++)
      g_string_append_c(s, ' ');
}

char *
ts__tl_selection_text(TsTlView *tl)
{
  if (tl->sel1 <= tl->sel0)
    return NULL;
  g_autoptr(GArray) agg = ts_studio_timeline_aggregate(&tl->parent, tl->sel0, tl->sel1);
  guint total = 0;
  for (guint i = 0; i < agg->len; i++)
    total += g_array_index(agg, TsStudioTimelineAgg, i).count;
  g_autofree char *a = ts__tl_format_ns((double)tl->sel0, -1);
  g_autofree char *b = ts__tl_format_ns((double)tl->sel1, -1);
  g_autofree char *w = ts__tl_format_ns((double)(tl->sel1 - tl->sel0), 0);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "range %s to %s (%s): %u slice%s of %u name%s overlap it", a, b, w,
                         total, total == 1 ? "" : "s", agg->len, agg->len == 1 ? "" : "s");
  if (agg->len == 0)
    return g_string_free(s, FALSE);
  static const char *const head[] = {"count", "total", "mean", "min", "max"};
  g_string_append_c(s, '\n');
  append_padded(s, "name", 40, FALSE);
  for (guint k = 0; k < G_N_ELEMENTS(head); k++)
    append_padded(s, head[k], k == 0 ? 8 : 11, TRUE);
  for (guint i = 0; i < MIN(agg->len, AGG_ROWS); i++) {
    const TsStudioTimelineAgg *g = &g_array_index(agg, TsStudioTimelineAgg, i);
    g_autofree char *name = cut(g->name && *g->name ? g->name : g->kind, 39);
    g_autofree char *count = g_strdup_printf("%u", g->count);
    g_autofree char *sum = ts__tl_format_ns((double)g->total_ns, 0);
    g_autofree char *mean = ts__tl_format_ns((double)g->total_ns / g->count, 0);
    g_autofree char *lo = ts__tl_format_ns((double)g->min_ns, 0);
    g_autofree char *hi = ts__tl_format_ns((double)g->max_ns, 0);
    g_string_append_c(s, '\n');
    append_padded(s, name, 40, FALSE);
    append_padded(s, count, 8, TRUE);
    const char *cols[] = {sum, mean, lo, hi};
    for (guint k = 0; k < G_N_ELEMENTS(cols); k++)
      append_padded(s, cols[k], 11, TRUE);
  }
  if (agg->len > AGG_ROWS)
    g_string_append_printf(s, "\n… %u more names", agg->len - AGG_ROWS);
  return g_string_free(s, FALSE);
}

/* ---- search ---- */

guint
ts_studio_timeline_set_search(TsStudioView *view, const char *text)
{
  TsTlView *tl = timeline(view);
  g_return_val_if_fail(tl != NULL, 0);
  g_clear_pointer(&tl->search, g_free);
  tl->n_matches = 0;
  if (text && *text)
    tl->search = g_utf8_casefold(text, -1);
  for (guint k = 0; k < tl->n_names; k++) {
    TsTlName *n = &tl->names[k];
    g_autofree char *folded = tl->search && n->name ? g_utf8_casefold(n->name, -1) : NULL;
    n->match = folded && strstr(folded, tl->search) != NULL;
  }
  for (guint r = 0; tl->search && r < tl->n_rows; r++)
    for (guint i = 0; i < tl->rows[r].n; i++)
      tl->n_matches += tl->names[tl->rows[r].ev[i].name].match;
  return tl->n_matches;
}

/* Whether (start, index) comes after (t, at) in time order (ties by event index). */
static gboolean
later(gint64 start, guint32 index, gint64 t, guint32 at)
{
  return start > t || (start == t && index > at);
}

gint64
ts_studio_timeline_search_next(TsStudioView *view, gint64 mark, gboolean forward)
{
  TsTlView *tl = timeline(view);
  g_return_val_if_fail(tl != NULL, 0);
  if (tl->search == NULL || tl->n_matches == 0)
    return 0;
  gint64 t;
  guint32 at;
  if (mark > 0 && (guint64)mark <= tl->events->len) {
    t = g_array_index(tl->events, TsDbEvent, mark - 1).start_ns;
    at = (guint32)(mark - 1);
  } else {
    t = forward ? tl->view0 : tl->view1;
    at = forward ? 0 : G_MAXUINT32;
    if (forward)
      t--; /* an event at the window's very start is the first */
  }
  /* Per row, the nearest match past (t, at); the nearest of those. Then, wrapping, the first
   * (or last) match of all. */
  for (guint pass = 0; pass < 2; pass++) {
    gboolean found = FALSE;
    gint64 best_t = 0;
    guint32 best_i = 0;
    for (guint r = 0; r < tl->n_rows; r++) {
      const TsTlRow *row = &tl->rows[r];
      /* A row is in start order; events starting together are in no index order, so the
       * scan goes on through those that start with its first candidate. */
      gboolean row_found = FALSE;
      gint64 row_start = 0;
      if (forward) {
        for (guint i = pass ? 0 : ts__tl_lower_bound(row, 0, row->n, t); i < row->n; i++) {
          const TsTlEvent *e = &row->ev[i];
          if (row_found && e->start > row_start)
            break;
          if (!tl->names[e->name].match || (!pass && !later(e->start, e->index, t, at)))
            continue;
          if (!found || later(best_t, best_i, e->start, e->index)) {
            best_t = e->start;
            best_i = e->index;
            found = TRUE;
          }
          row_found = TRUE;
          row_start = e->start;
        }
      } else {
        for (guint i = pass ? row->n : ts__tl_lower_bound(row, 0, row->n, t + 1); i-- > 0;) {
          const TsTlEvent *e = &row->ev[i];
          if (row_found && e->start < row_start)
            break;
          if (!tl->names[e->name].match || (!pass && !later(t, at, e->start, e->index)))
            continue;
          if (!found || later(e->start, e->index, best_t, best_i)) {
            best_t = e->start;
            best_i = e->index;
            found = TRUE;
          }
          row_found = TRUE;
          row_start = e->start;
        }
      }
    }
    if (found)
      return (gint64)best_i + 1;
  }
  return 0;
}

void
ts_studio_timeline_reveal(TsStudioView *view, gint64 mark)
{
  TsTlView *tl = timeline(view);
  g_return_if_fail(tl != NULL);
  if (mark <= 0 || (guint64)mark > tl->events->len)
    return;
  const TsDbEvent *e = &g_array_index(tl->events, TsDbEvent, mark - 1);
  gint64 a = e->start_ns, b = e->start_ns + MAX(e->dur_ns, 0), w = tl->view1 - tl->view0;
  if (a >= tl->view0 && b <= tl->view1)
    return;
  if (b - a > w * 9 / 10) {
    gint64 pad = (b - a) / 10;
    ts_studio_timeline_set_range(view, a - pad, b + pad);
  } else {
    gint64 mid = a + (b - a) / 2;
    ts_studio_timeline_set_range(view, mid - w / 2, mid - w / 2 + w);
  }
}
