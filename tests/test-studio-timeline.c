/* test-studio-timeline.c — the timeline view without a display: events land in the rows of
 * their (lane, depth); the binary search of the visible range and the block maxima agree with
 * brute force on random data; folding bounds a zoomed-out frame and leaves a zoomed-in one
 * alone; memory in use follows allocations by address; the SVG names every kernel; zoom and
 * pan stay inside the span; hit and describe; no events. */
#include <math.h>
#include <string.h>

#include "ts-studio-timeline-private.h"

#define DEV TS_TRACE_DEVICE_LANE

static guint
count(const char *haystack, const char *needle)
{
  guint n = 0;
  for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static void
add(GArray *a, const char *kind, const char *name, gint64 start, gint64 dur, guint64 bytes,
    guint64 address, guint32 lane, guint32 depth)
{
  TsDbEvent e = {.kind = kind,
                 .name = name,
                 .start_ns = start,
                 .dur_ns = dur,
                 .bytes = bytes,
                 .address = address,
                 .lane = lane,
                 .depth = depth};
  g_array_append_val(a, e);
}

static char *
svg_of(TsStudioView *view, double w, double h)
{
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(w, h);
  ts_studio_view_draw(view, c, w, h);
  return ts_canvas_svg_finish(c);
}

/* The cairo sink as the window uses it; returns marks drawn. */
static guint
draw_cairo(TsStudioView *view, int w, int h)
{
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
  cairo_t *cr = cairo_create(s);
  TsCanvas *c = ts_canvas_new_cairo(cr);
  ts_studio_view_draw(view, c, w, h);
  ts_canvas_free(c);
  g_assert_cmpint(cairo_status(cr), ==, CAIRO_STATUS_SUCCESS);
  cairo_destroy(cr);
  cairo_surface_destroy(s);
  return view->n_drawn;
}

static void
test_rows(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(ev, "kernel", "k1", 500, 100, 0, 0, DEV + 2, 0);  /* 1 */
  add(ev, "range", "trial 0", 0, 2000, 0, 0, 7, 0);     /* 2 */
  add(ev, "compile", "mod", 10, 300, 0, 0, 7, 1);       /* 3 */
  add(ev, "kernel", "k0", 400, 50, 0, 0, DEV + 0, 0);   /* 4 */
  add(ev, "kernel", "k0", 100, 50, 0, 0, DEV + 0, 0);   /* 5: before 4 in the row */
  add(ev, "alloc", "buf", 50, 0, 64, 0x100, DEV, 0);    /* 6: memory, no row */
  add(ev, "memcpy", "HtoD", 60, 30, 64, 0, DEV + 2, 0); /* 7 */
  add(ev, "range", "measure", 400, 600, 0, 0, 7, 1);    /* 8 */
  add(ev, "free", "buf", 1900, 0, 64, 0x100, DEV, 0);   /* 9 */
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  TsTlView *tl = (TsTlView *)view;
  g_assert_cmpstr(ts_studio_view_name(view), ==, "timeline");
  g_assert_cmpuint(view->n_marks, ==, 9);

  /* Host thread 7 (depths 0, 1) first, then device streams 0 and 2. */
  g_assert_cmpuint(tl->n_rows, ==, 4);
  const guint32 lanes[] = {7, 7, DEV, DEV + 2}, depths[] = {0, 1, 0, 0};
  for (guint r = 0; r < 4; r++) {
    g_assert_cmpuint(tl->rows[r].lane, ==, lanes[r]);
    g_assert_cmpuint(tl->rows[r].depth, ==, depths[r]);
  }
  const guint32 row_of[] = {3, 0, 1, 2, 2, G_MAXUINT32, 3, 1, G_MAXUINT32};
  for (guint i = 0; i < 9; i++)
    g_assert_cmpuint(tl->row_of[i], ==, row_of[i]);
  /* Each row by start, whatever the input order. */
  g_assert_cmpuint(tl->rows[2].n, ==, 2);
  g_assert_cmpuint(tl->rows[2].ev[0].index, ==, 4);
  g_assert_cmpuint(tl->rows[2].ev[1].index, ==, 3);
  g_assert_cmpuint(tl->rows[3].ev[0].index, ==, 6);
  g_assert_cmpuint(tl->rows[3].ev[1].index, ==, 0);
  gint64 s0, s1;
  ts_studio_timeline_get_span(view, &s0, &s1);
  g_assert_cmpint(s0, ==, 0);
  g_assert_cmpint(s1, ==, 2000);

  g_autofree char *svg = svg_of(view, 800, 300);
  g_assert_cmpuint(count(svg, "class=\"lane\""), ==, 4);
  g_assert_nonnull(strstr(svg, ">host thread 7<"));
  g_assert_nonnull(strstr(svg, ">device stream 2<"));
  g_assert_nonnull(strstr(svg, "id=\"lane-7-1\""));
  g_assert_cmpuint(count(svg, "class=\"event kernel\""), ==, 3);
  g_assert_cmpuint(count(svg, "class=\"event range\""), ==, 2);
  g_assert_cmpuint(count(svg, "class=\"event compile\""), ==, 1);
  g_assert_cmpuint(count(svg, "class=\"event memcpy\""), ==, 1);
  g_assert_null(strstr(svg, "class=\"event alloc"));
  g_assert_cmpuint(view->n_drawn, ==, 7);
  g_assert_cmpuint(draw_cairo(view, 800, 300), ==, 7);
}

/* The recorder gives a compile depth 0 even inside a range: it goes below the innermost range
 * open when it starts, not on top of the range. Out of order input nests the same. */
/* Tens of thousands of threads (a trace from a big host program): every lane its own row, in
 * lane order, whatever order they came in, each holding its events. (Rows were found through
 * a hash that saw only the depth and placed by insertion sort: 64,000 lanes took 20 s.) */
static void
test_many_lanes(void)
{
  const guint n = 40000;
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  for (guint i = 0; i < n; i++) {
    guint32 lane = (i * 7919u) % n; /* every lane once, out of order */
    add(ev, "kernel", "k", 10 * (gint64)i, 5, 0, 0, lane, 0);
  }
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  TsTlView *tl = (TsTlView *)view;
  g_assert_cmpuint(tl->n_rows, ==, n);
  for (guint r = 0; r < tl->n_rows; r++) {
    g_assert_cmpuint(tl->rows[r].lane, ==, r);
    g_assert_cmpuint(tl->rows[r].n, ==, 1);
  }
  for (guint i = 0; i < n; i++) {
    const TsDbEvent *e = &g_array_index(ev, TsDbEvent, i);
    g_assert_cmpuint(tl->rows[tl->row_of[i]].lane, ==, e->lane);
    g_assert_cmpuint(tl->rows[tl->row_of[i]].ev[0].index, ==, i);
  }
}

static void
test_nesting(void)
{
  for (int shuffled = 0; shuffled < 2; shuffled++) {
    g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
    add(ev, "range", "trial 0", 0, 1000, 0, 0, 3, 0);  /* 1 */
    add(ev, "compile", "mod", 10, 100, 0, 0, 3, 0);    /* 2: inside trial 0 */
    add(ev, "range", "measure", 200, 500, 0, 0, 3, 1); /* 3 */
    add(ev, "compile", "mod2", 300, 50, 0, 0, 3, 0);   /* 4: inside measure */
    add(ev, "compile", "late", 1500, 50, 0, 0, 3, 0);  /* 5: after every range */
    add(ev, "kernel", "k", 300, 50, 0, 0, DEV, 0);     /* 6: a lane without ranges */
    if (shuffled) {
      TsDbEvent t = g_array_index(ev, TsDbEvent, 0);
      g_array_index(ev, TsDbEvent, 0) = g_array_index(ev, TsDbEvent, 3);
      g_array_index(ev, TsDbEvent, 3) = t;
    }
    g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
    TsTlView *tl = (TsTlView *)view;
    g_assert_cmpuint(tl->n_rows, ==, 4);
    const guint32 depths[] = {0, 1, 2, 0};
    for (guint r = 0; r < 4; r++)
      g_assert_cmpuint(tl->rows[r].depth, ==, depths[r]);
    /* Row of each input event, by name. */
    for (guint i = 0; i < ev->len; i++) {
      const TsDbEvent *e = &g_array_index(ev, TsDbEvent, i);
      guint expect = g_str_equal(e->name, "mod")       ? 1
                     : g_str_equal(e->name, "mod2")    ? 2
                     : g_str_equal(e->name, "measure") ? 1
                     : g_str_equal(e->name, "k")       ? 3
                                                       : 0;
      g_assert_cmpuint(tl->row_of[i], ==, expect);
    }
  }
}

/* Random rows, some of whose events overlap, against brute force. */
static void
test_visible_range(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(7);
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  for (guint lane = 0; lane < 3; lane++) {
    gint64 t = g_rand_int_range(rng, 0, 100);
    for (guint i = 0; i < 3000; i++) {
      gint64 dur = g_rand_int_range(rng, 0, 10) == 0 ? g_rand_int_range(rng, 100, 5000)
                                                     : g_rand_int_range(rng, 0, 40);
      add(ev, "kernel", "k", t, dur, 0, 0, DEV + lane, 0);
      /* Lane 2 overlaps itself: starts closer together than durations. */
      t += lane == 2 ? g_rand_int_range(rng, 0, 30) : dur + g_rand_int_range(rng, 0, 50);
    }
  }
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  TsTlView *tl = (TsTlView *)view;
  const TsDbEvent *e = (const TsDbEvent *)ev->data;
  for (guint trial = 0; trial < 300; trial++) {
    gint64 t0 = g_rand_int_range(rng, -1000, 120000);
    gint64 t1 = t0 + g_rand_int_range(rng, 0, trial % 2 ? 200 : 20000);
    for (guint r = 0; r < tl->n_rows; r++) {
      const TsTlRow *row = &tl->rows[r];
      guint first, end;
      ts__tl_visible(row, t0, t1, &first, &end);
      g_autoptr(GHashTable) found = g_hash_table_new(NULL, NULL);
      for (guint i = first; i < end; i++)
        if (row->ev[i].end >= t0)
          g_hash_table_add(found, GUINT_TO_POINTER(row->ev[i].index + 1));
      guint expected = 0;
      for (guint i = 0; i < ev->len; i++) {
        if (tl->row_of[i] != r || e[i].start_ns + e[i].dur_ns < t0 || e[i].start_ns > t1)
          continue;
        expected++;
        g_assert_true(g_hash_table_contains(found, GUINT_TO_POINTER(i + 1)));
      }
      g_assert_cmpuint(g_hash_table_size(found), ==, expected);
      /* Outside [first, end) nothing overlaps. */
      for (guint i = 0; i < first; i++)
        g_assert_cmpint(row->ev[i].end, <, t0);
      for (guint i = end; i < row->n; i++)
        g_assert_cmpint(row->ev[i].start, >, t1);
    }
  }
}

static void
test_block_maxima(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(11);
  for (guint n = 1; n < 300; n += 37) {
    gint64 *v = g_new(gint64, n);
    for (guint i = 0; i < n; i++)
      v[i] = g_rand_int_range(rng, -50, 1000);
    TsTlMaxTree tree;
    ts__tl_max_build(&tree, v, n);
    for (guint q = 0; q < 400; q++) {
      guint a = g_rand_int_range(rng, 0, n + 1), b = g_rand_int_range(rng, 0, n + 1);
      gint64 m = G_MININT64;
      for (guint i = a; i < b; i++)
        m = MAX(m, v[i]);
      g_assert_cmpint(ts__tl_max_range(&tree, v, a, b), ==, m);
      gint64 th = g_rand_int_range(rng, 0, 1100);
      guint f = a;
      while (f < n && v[f] < th)
        f++;
      g_assert_cmpuint(ts__tl_max_find(&tree, v, a, th), ==, f);
    }
    ts__tl_max_clear(&tree);
    g_free(v);
  }
}

/* Every level of detail accounts for all of a row: busy time and counts add up level by level,
 * and a bucket names what covers most of it. */
static void
test_levels_of_detail(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(5);
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  gint64 t = 0, busy = 0;
  for (guint i = 0; i < 5000; i++) {
    gint64 dur = g_rand_int_range(rng, 0, 2000);
    add(ev, "kernel", i % 5 ? "small" : "big", t, dur, 0, 0, DEV, 0);
    busy += dur;
    t += dur + g_rand_int_range(rng, 0, 500);
  }
  add(ev, "kernel", "long", t, 100000, 0, 0, DEV, 0); /* covers many buckets alone */
  busy += 100000;
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  const TsTlRow *row = &((TsTlView *)view)->rows[0];
  g_assert_cmpuint(row->n_levels, >, 5);
  g_assert_cmpuint(row->n_buckets[row->n_levels - 1], ==, 1);
  for (guint l = 0; l < row->n_levels; l++) {
    double sum = 0;
    guint64 count = 0;
    for (guint k = 0; k < row->n_buckets[l]; k++) {
      sum += row->lod[l][k].busy_ns;
      count += row->lod[l][k].count;
      g_assert_cmpfloat(row->lod[l][k].busy_ns, <=, (double)(row->bucket_ns << l) * 1.0001);
    }
    g_assert_cmpfloat_with_epsilon(sum, (double)busy, busy * 1e-5);
    g_assert_cmpuint(count, ==, ev->len);
  }
  /* The last level-0 bucket lies wholly under the long kernel. */
  const TsTlBucket *last = &row->lod[0][row->n_buckets[0] - 1];
  g_assert_cmpstr(((TsTlView *)view)->names[last->name].name, ==, "long");
  g_assert_cmpuint(last->count, ==, 0);
}

/* 100 bursts of 1000 tiny kernels (10 ns, 2 ns apart), bursts 1 ms apart. */
static GArray *
bursts(void)
{
  GArray *ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  for (guint b = 0; b < 100; b++)
    for (guint i = 0; i < 1000; i++)
      add(ev, "kernel", "tiny", b * 1000000 + i * 12, 10, 0, 0, DEV, 0);
  return ev;
}

static void
test_folding(void)
{
  g_autoptr(GArray) ev = bursts();
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  /* Whole span (~100 ms over ~1500 px): each burst (12 µs) is far under a pixel, the gaps
   * between bursts are ~15 px. One fold per burst. */
  g_autofree char *svg = svg_of(view, 1600, 400);
  g_assert_cmpuint(view->n_drawn, ==, 100);
  g_assert_cmpuint(count(svg, "class=\"fold\""), ==, 100);
  g_assert_cmpuint(count(svg, "<title>1000 events</title>"), ==, 100);
  g_assert_null(strstr(svg, "class=\"event kernel\""));
  g_assert_cmpuint(draw_cairo(view, 1600, 400), ==, 100);

  /* A narrow plot: the bursts merge, but never more than a mark per 3 px. */
  guint drawn = draw_cairo(view, 300, 200);
  g_assert_cmpuint(drawn, >=, 1);
  g_assert_cmpuint(drawn, <=, 300 / 3);

  /* Zoomed in on ~100 events of burst 3 over ~1500 px: 12 ns a 15 px, nothing folds, and
   * exactly the events that overlap the window are drawn. */
  gint64 t0 = 3000000 + 200 * 12 + 5, t1 = t0 + 1200;
  ts_studio_timeline_set_range(view, t0, t1);
  guint expected = 0;
  for (guint i = 0; i < ev->len; i++) {
    const TsDbEvent *e = &g_array_index(ev, TsDbEvent, i);
    expected += e->start_ns <= t1 && e->start_ns + e->dur_ns >= t0;
  }
  g_assert_cmpuint(expected, ==, 101);
  g_free(svg);
  svg = svg_of(view, 1600, 400);
  g_assert_cmpuint(view->n_drawn, ==, expected);
  g_assert_cmpuint(count(svg, "class=\"event kernel\""), ==, expected);
  g_assert_null(strstr(svg, "class=\"fold\""));
  g_assert_nonnull(strstr(svg, "id=\"event-3201\""));
}

/* 10^5 adjacent tiny events on 4 rows, zoomed out: marks bounded by rows x width. */
static void
test_folding_dense(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  gint64 t[4] = {0};
  for (guint i = 0; i < 100000; i++) {
    guint s = i % 4;
    gint64 dur = g_rand_int_range(rng, 1, 30);
    add(ev, "kernel", s % 2 ? "a" : "b", t[s], dur, 0, 0, DEV + s, 0);
    t[s] += dur + g_rand_int_range(rng, 0, 3);
  }
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  for (double w = 200; w <= 3200; w *= 4) {
    guint drawn = draw_cairo(view, (int)w, 300);
    g_assert_cmpuint(drawn, >=, 4);
    g_assert_cmpuint(drawn, <=, 4 * w / 3);
  }
}

/* In use at moment t: the value of the last change at or before t. */
static gint64
in_use_at(const TsTlMemory *mem, gint64 t)
{
  gint64 v = 0;
  for (guint i = 0; i < mem->n && mem->t[i] <= t; i++)
    v = mem->v[i];
  return v;
}

/* The memory area's columns against brute force (the most in use at any moment of each
 * column) on random allocations, at three zoom levels: hundreds of changes a column (the block
 * maxima), a few, and columns shorter than a nanosecond; and the whole view reaches the peak. */
static void
test_memory_columns(void)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(11);
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(ev, "kernel", "k", 0, 200000, 0, 0, DEV, 0);
  gint64 t = 0;
  for (guint i = 0; i < 3000; i++) {
    t += g_rand_int_range(rng, 1, 60);
    guint64 bytes = (guint64)g_rand_int_range(rng, 1, 1 << 20);
    gint64 life = g_rand_int_range(rng, 1, 2000);
    add(ev, "alloc", "a", t, 0, bytes, 0x1000 + i, DEV, 0);
    add(ev, "free", "a", t + life, 0, bytes, 0x1000 + i, DEV, 0);
  }
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  const TsTlMemory *mem = &((TsTlView *)view)->mem;
  g_assert_cmpuint(mem->n, ==, 6000);
  gint64 span = mem->t[mem->n - 1] + 1;
  const struct {
    gint64 t0;
    double ns_per_col;
    guint cols;
  } zoom[] = {{0, span / 10.0, 10}, {0, span / 500.0, 500}, {span / 3, 0.7, 400}};
  for (guint z = 0; z < G_N_ELEMENTS(zoom); z++) {
    g_autofree gint64 *got = g_new(gint64, zoom[z].cols);
    ts__tl_memory_columns(mem, zoom[z].t0, zoom[z].ns_per_col, zoom[z].cols, got);
    gint64 top = 0, start = zoom[z].t0;
    for (guint c = 0; c < zoom[z].cols; c++) {
      gint64 end = zoom[z].t0 + (gint64)floor((c + 1) * zoom[z].ns_per_col);
      gint64 want = in_use_at(mem, start);
      for (guint i = 0; i < mem->n; i++)
        if (mem->t[i] > start && mem->t[i] < end)
          want = MAX(want, mem->v[i]);
      if (got[c] != want)
        g_error("zoom %u, column %u [%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "): drawn %"
                G_GINT64_FORMAT ", in use at most %" G_GINT64_FORMAT, z, c, start, end, got[c],
                want);
      top = MAX(top, got[c]);
      start = MAX(start, end);
    }
    if (z < 2)
      g_assert_cmpint(top, ==, mem->peak);
  }
}

/* The points of the memory area's polygon in an SVG frame; returns how many. */
static guint
memory_polygon(const char *svg, double *xy, guint max)
{
  const char *g = strstr(svg, "id=\"memory\"");
  g_assert_nonnull(g);
  const char *p = strstr(g, "<polygon points=\"");
  g_assert_nonnull(p);
  p += strlen("<polygon points=\"");
  guint n = 0;
  while (*p != '"' && n < max) {
    char *e;
    xy[2 * n] = g_ascii_strtod(p, &e);
    g_assert_true(*e == ',');
    xy[2 * n + 1] = g_ascii_strtod(e + 1, &e);
    n++;
    p = e;
    while (*p == ' ')
      p++;
  }
  return n;
}

/* The labelled peak is drawn: 1, 2 and 4 MiB live at once reach the top of the area (a
 * double-evaluating MAX once skipped changes and drew a 3 MiB plateau under "peak 7.0 MiB"),
 * and a lone 1 MiB allocation fills it. */
static void
test_memory_peak_drawn(void)
{
  for (guint lone = 0; lone < 2; lone++) {
    g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
    add(ev, "kernel", "k", 0, 1000, 0, 0, DEV, 0);
    const guint64 mib = 1 << 20;
    add(ev, "alloc", "a", 100, 0, mib, 0x10, DEV, 0);
    if (!lone) {
      add(ev, "alloc", "b", 200, 0, 2 * mib, 0x20, DEV, 0);
      add(ev, "alloc", "c", 300, 0, 4 * mib, 0x30, DEV, 0);
      add(ev, "free", "b", 400, 0, 2 * mib, 0x20, DEV, 0);
      add(ev, "free", "c", 500, 0, 4 * mib, 0x30, DEV, 0);
    }
    add(ev, "free", "a", 600, 0, mib, 0x10, DEV, 0);
    g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
    TsTlView *tl = (TsTlView *)view;
    g_assert_cmpint(tl->mem.peak, ==, lone ? (gint64)mib : 7 * (gint64)mib);
    for (double w = 300; w <= 2400; w *= 2) {
      g_autofree char *svg = svg_of(view, w, 300);
      TsTlLayout lay;
      ts__tl_layout(tl, w, 300, &lay);
      double xy[8192];
      guint n = memory_polygon(svg, xy, 4096);
      g_assert_cmpuint(n, >=, 4);
      double top = INFINITY;
      for (guint i = 0; i < n; i++)
        top = MIN(top, xy[2 * i + 1]);
      g_assert_cmpfloat(fabs(top - round(lay.mem_y)), <, 0.01);
      /* GLib puts a no-break space before the unit. */
      g_assert_nonnull(strstr(svg, lone ? ">peak 1.0\xc2\xa0MiB<" : ">peak 7.0\xc2\xa0MiB<"));
    }
  }
}

static void
test_memory(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(ev, "kernel", "k", 0, 1000, 0, 0, DEV, 0);
  add(ev, "alloc", "a", 100, 0, 100, 0x10, DEV, 0);
  add(ev, "alloc", "b", 200, 0, 50, 0x20, DEV, 0);
  add(ev, "free", "a", 300, 0, 999, 0x10, DEV, 0); /* frees a's 100, whatever it claims */
  add(ev, "alloc", "c", 400, 0, 200, 0x10, DEV, 0);
  add(ev, "free", "x", 500, 0, 77, 0x99, DEV, 0); /* never allocated here: no change */
  add(ev, "free", "b", 600, 0, 50, 0x20, DEV, 0);
  add(ev, "free", "c", 700, 0, 200, 0x10, DEV, 0);
  /* The host's own record of a buffer: left out, since the device reported its own. */
  add(ev, "alloc", "host copy", 150, 0, 1 << 20, 0x10, 1, 0);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  TsTlView *tl = (TsTlView *)view;
  const gint64 v[] = {100, 150, 50, 250, 250, 200, 0};
  g_assert_cmpuint(tl->mem.n, ==, G_N_ELEMENTS(v));
  for (guint i = 0; i < G_N_ELEMENTS(v); i++)
    g_assert_cmpint(tl->mem.v[i], ==, v[i]);
  g_assert_cmpint(tl->mem.peak, ==, 250);
  g_assert_cmpint(tl->mem.peak_t, ==, 400);
  g_assert_cmpuint(tl->mem.index[3], ==, 4);
  g_autofree char *svg = svg_of(view, 800, 300);
  g_assert_nonnull(strstr(svg, "<title>memory in use, peak 250 bytes</title>"));
  g_assert_nonnull(strstr(svg, ">peak 250 bytes<"));

  /* Without addresses (a Chrome trace's allocations): each event's own bytes. */
  g_autoptr(GArray) bare = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(bare, "alloc", "a", 0, 0, 10, 0, DEV, 0);
  add(bare, "alloc", "b", 1, 0, 20, 0, DEV, 0);
  add(bare, "free", "a", 2, 0, 10, 0, DEV, 0);
  add(bare, "alloc", "c", 3, 0, 5, 0, DEV, 0);
  add(bare, "free", "?", 4, 0, 100, 0, DEV, 0); /* more than is in use: down to 0 */
  g_autoptr(TsStudioView) bv = ts_studio_timeline_new(bare);
  const gint64 bare_v[] = {10, 30, 20, 25, 0};
  for (guint i = 0; i < G_N_ELEMENTS(bare_v); i++)
    g_assert_cmpint(((TsTlView *)bv)->mem.v[i], ==, bare_v[i]);
  g_assert_cmpint(((TsTlView *)bv)->mem.peak, ==, 30);

  /* Host allocations alone count. */
  g_autoptr(GArray) host = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(host, "alloc", "a", 0, 0, 10, 1, 1, 0);
  add(host, "alloc", "b", 5, 0, 20, 2, 1, 0);
  add(host, "free", "a", 9, 0, 10, 1, 1, 0);
  g_autoptr(TsStudioView) hv = ts_studio_timeline_new(host);
  g_assert_cmpint(((TsTlView *)hv)->mem.peak, ==, 30);
  g_assert_cmpuint(((TsTlView *)hv)->n_rows, ==, 0);
  g_assert_cmpuint(draw_cairo(hv, 400, 200), ==, 0);

  /* Hovering the area over the change at 400 ns names that allocation. */
  TsTlLayout lay;
  ts__tl_layout(tl, 800, 300, &lay);
  double x = ts__tl_x(&lay, 400);
  gint64 id = ts_studio_view_hit(view, x + 1, lay.mem_y + lay.mem_h / 2, 800, 300);
  g_assert_cmpint(id, ==, 5);
  g_autofree char *text = ts_studio_view_describe(view, id);
  g_assert_nonnull(strstr(text, "alloc c"));
  g_assert_nonnull(strstr(text, "200 bytes"));
  g_assert_nonnull(strstr(text, "address 0x10"));
  g_assert_nonnull(strstr(text, "in use after it: 250 bytes"));
  /* A free named after its kind reads "free", not "free free". */
  g_autoptr(GArray) fe = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(fe, "alloc", "buffer", 10, 0, 64, 0x40, DEV, 0);
  add(fe, "free", "free", 20, 0, 64, 0x40, DEV, 0);
  g_autoptr(TsStudioView) fv = ts_studio_timeline_new(fe);
  g_autofree char *ftext = ts_studio_view_describe(fv, 2);
  g_assert_true(g_str_has_prefix(ftext, "free\n"));
  g_assert_nonnull(strstr(ftext, "in use after it: 0 bytes"));
}

static void
test_svg_kernels(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  for (guint i = 0; i < 40; i++)
    add(ev, "kernel", i % 3 ? "gemm_128x128" : "softmax <rows>", i * 2000, 1000 + i, 0, 0,
        DEV + i % 2, 0);
  add(ev, "memcpy", "HtoD", 81000, 500, 4096, 0, DEV, 0);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  g_autofree char *svg = svg_of(view, 1600, 300);
  g_assert_cmpuint(count(svg, "class=\"event kernel\""), ==, 40);
  g_assert_cmpuint(count(svg, "class=\"event memcpy\""), ==, 1);
  g_assert_null(strstr(svg, "class=\"fold\""));
  g_assert_cmpuint(count(svg, "class=\"lane\""), ==, 2);
  g_assert_cmpuint(view->n_drawn, ==, 41);
  g_assert_nonnull(strstr(svg, "id=\"event-1\"><title>softmax &lt;rows&gt; — 1.00 µs</title>"));
  g_assert_nonnull(strstr(svg, "id=\"event-2\"><title>gemm_128x128 — 1.00 µs</title>"));
  g_assert_nonnull(strstr(svg, "id=\"event-39\"><title>gemm_128x128 — 1.04 µs</title>"));
  g_assert_cmpuint(count(svg, "<title>gemm_128x128 — "), ==, 26);
  /* The axis labels the span in µs. */
  g_assert_nonnull(strstr(svg, ">40 µs<"));

  /* Zoomed on 10 µs: only the kernels that overlap it. */
  ts_studio_timeline_set_range(view, 20000, 30000);
  g_free(svg);
  svg = svg_of(view, 1600, 300);
  /* Kernels 10..15 start in it; kernel 9 (18000 + 1009) ends before. */
  g_assert_cmpuint(count(svg, "class=\"event kernel\""), ==, 6);
  g_assert_nonnull(strstr(svg, "id=\"event-11\""));
  g_assert_null(strstr(svg, "id=\"event-10\""));
}

static void
test_zoom_pan(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(ev, "kernel", "k", 1000, 99000, 0, 0, DEV, 0);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  gint64 a, b;
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 1000);
  g_assert_cmpint(b, ==, 100000);

  ts_studio_timeline_zoom(view, 10, 0); /* keeps the left edge */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 1000);
  g_assert_cmpint(b, ==, 1000 + 9900);
  ts_studio_timeline_zoom(view, 2, 0.5); /* about the middle */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 1000 + 2475);
  g_assert_cmpint(b, ==, 1000 + 2475 + 4950);
  ts_studio_timeline_pan(view, -10); /* far left: stops at the start */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 1000);
  g_assert_cmpint(b - a, ==, 4950);
  ts_studio_timeline_pan(view, 0.5);
  ts_studio_timeline_get_range(view, &a, NULL);
  g_assert_cmpint(a, ==, 1000 + 2475);
  ts_studio_timeline_pan(view, 1000); /* far right: stops at the end */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(b, ==, 100000);
  g_assert_cmpint(b - a, ==, 4950);

  ts_studio_timeline_zoom(view, 1e9, 1); /* no narrower than the minimum window */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(b - a, ==, TS_TL_MIN_WINDOW_NS);
  g_assert_cmpint(b, ==, 100000);
  ts_studio_timeline_zoom(view, 1e-9, 0.3); /* no wider than the span */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 1000);
  g_assert_cmpint(b, ==, 100000);

  ts_studio_timeline_set_range(view, -5000, 3000);
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 1000);
  g_assert_cmpint(b, ==, 9000);
  ts_studio_timeline_set_range(view, 90000, 10); /* reversed: the minimum window */
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(b - a, ==, TS_TL_MIN_WINDOW_NS);

  /* The anchor: 0 at the plot's left edge, 1 at its right, clamped. */
  TsTlLayout lay;
  ts__tl_layout((TsTlView *)view, 1000, 400, &lay);
  g_assert_cmpfloat(ts_studio_timeline_anchor(view, lay.x0, 1000), ==, 0);
  g_assert_cmpfloat(ts_studio_timeline_anchor(view, lay.x1, 1000), ==, 1);
  g_assert_cmpfloat_with_epsilon(ts_studio_timeline_anchor(view, (lay.x0 + lay.x1) / 2, 1000), 0.5,
                                 1e-9);
  g_assert_cmpfloat(ts_studio_timeline_anchor(view, 0, 1000), ==, 0);
  g_assert_cmpfloat(ts_studio_timeline_anchor(view, 5000, 1000), ==, 1);
}

static void
test_hit_describe(void)
{
  g_autoptr(GArray) ev = bursts();
  TsDbEvent big = {.kind = "kernel",
                   .name = "gemm",
                   .start_ns = 50500000,
                   .dur_ns = 300000,
                   .lane = DEV,
                   .detail = "schedule tile=64"};
  g_array_append_val(ev, big); /* id 100001, between bursts 50 and 51 */
  TsDbEvent copy = {.kind = "memcpy",
                    .name = "HtoD",
                    .start_ns = 70500000,
                    .dur_ns = 100000,
                    .bytes = 1 << 20,
                    .lane = DEV + 1};
  g_array_append_val(ev, copy); /* id 100002 */
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  TsTlView *tl = (TsTlView *)view;
  const double W = 1600, H = 400;
  TsTlLayout lay;
  ts__tl_layout(tl, W, H, &lay);
  double row0 = lay.rows_y + lay.row_h / 2, row1 = lay.rows_y + 1.5 * lay.row_h;
  double gemm = ts__tl_x(&lay, 50500000 + 150000);
  g_assert_cmpint(ts_studio_view_hit(view, gemm, row0, W, H), ==, 100001);
  g_assert_cmpint(ts_studio_view_hit(view, gemm, row1, W, H), ==, 0); /* other row */
  g_assert_cmpint(ts_studio_view_hit(view, ts__tl_x(&lay, 70550000), row1, W, H), ==, 100002);
  /* A fold has no single event to describe; empty space and the axis neither. */
  g_assert_cmpint(ts_studio_view_hit(view, ts__tl_x(&lay, 3000000), row0, W, H), ==, 0);
  g_assert_cmpint(ts_studio_view_hit(view, ts__tl_x(&lay, 3500000), row0, W, H), ==, 0);
  g_assert_cmpint(ts_studio_view_hit(view, gemm, 5, W, H), ==, 0);

  g_autofree char *text = ts_studio_view_describe(view, 100001);
  g_assert_nonnull(strstr(text, "kernel gemm"));
  g_assert_nonnull(strstr(text, "start 50.500 ms"));
  g_assert_nonnull(strstr(text, "duration 300 µs"));
  g_assert_nonnull(strstr(text, "schedule tile=64"));
  g_assert_nonnull(strstr(text, "device stream 0"));
  g_autofree char *ctext = ts_studio_view_describe(view, 100002);
  g_assert_nonnull(strstr(ctext, "memcpy HtoD"));
  /* GLib puts a no-break space between number and unit. */
  g_assert_nonnull(strstr(ctext, "bytes 1.0\u00a0MiB"));
  g_assert_nonnull(strstr(ctext, "GB/s"));
  g_assert_null(ts_studio_view_describe(view, 0));
  g_assert_null(ts_studio_view_describe(view, 100003));

  /* Zoomed in, a tiny kernel is hit as itself. */
  ts_studio_timeline_set_range(view, 3000000, 3000000 + 240);
  ts__tl_layout(tl, W, H, &lay);
  g_assert_cmpint(ts_studio_view_hit(view, ts__tl_x(&lay, 3000000 + 5 * 12 + 5), row0, W, H), ==,
                  3000 + 5 + 1);
  /* Selection and hover draw an outline where the event is. */
  view->selected = 3006;
  view->hover = 3007;
  g_autofree char *svg = svg_of(view, W, H);
  g_assert_cmpuint(count(svg, "class=\"outline\""), ==, 2);
}

static void
test_empty(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  g_assert_cmpuint(view->n_marks, ==, 0);
  g_autofree char *svg = svg_of(view, 400, 200);
  g_assert_nonnull(strstr(svg, "No events"));
  g_assert_cmpuint(view->n_drawn, ==, 0);
  g_assert_cmpint(ts_studio_view_hit(view, 200, 100, 400, 200), ==, 0);
  g_assert_null(ts_studio_view_describe(view, 1));
  ts_studio_timeline_zoom(view, 4, 0.5);
  ts_studio_timeline_pan(view, 1);
  gint64 a, b;
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, ==, 0);
  g_assert_cmpint(b, ==, 1);
  g_assert_cmpuint(draw_cairo(view, 400, 200), ==, 0);
}

static void
test_format(void)
{
  const struct {
    double ns, step;
    const char *text;
  } cases[] = {
      {850, 0, "850 ns"},
      {12345, 0, "12.3 µs"},
      {1234567, 0, "1.23 ms"},
      {2.5e9, 0, "2.50 s"},
      {0, 0, "0 ns"},
      {2e6, 5e5, "2.0 ms"},
      {1.5e9, 1e8, "1.5 s"},
      {30000, 10000, "30 µs"},
      {1000000020, 10, "1000000020 ns"},
      {25e6, 2e5, "25.0 ms"},
      {50500000, -1, "50.500 ms"},
      {850, -1, "850 ns"},
      {12345, -1, "12.345 µs"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *s = ts__tl_format_ns(cases[i].ns, cases[i].step);
    g_assert_cmpstr(s, ==, cases[i].text);
  }
  TsTlView none = {0}; /* no lane names: the recorder's labels */
  g_autofree char *host = ts__tl_lane_label(&none, 4242);
  g_autofree char *dev = ts__tl_lane_label(&none, DEV + 3);
  g_assert_cmpstr(host, ==, "host thread 4242");
  g_assert_cmpstr(dev, ==, "device stream 3");
}

/* Another tool's trace (a PyTorch-profiler-like export): lanes carry the process and thread
 * names of its metadata; an "E" whose "B" was before the capture and a "B" never closed are
 * said under the timeline, not fatal; a memory counter draws the memory area; flows do not
 * break the read. */
static void
test_foreign_trace(void)
{
  static const char text[] =
    "{\"traceEvents\": ["
    " {\"ph\": \"E\", \"ts\": 1, \"pid\": 1, \"tid\": 11},"
    " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"ts\": 2, \"dur\": 5,"
    "  \"pid\": 1, \"tid\": 11},"
    " {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sgemm\", \"ts\": 4, \"dur\": 3,"
    "  \"pid\": 2, \"tid\": 7},"
    " {\"ph\": \"s\", \"id\": 1, \"name\": \"launch\", \"ts\": 3, \"pid\": 1, \"tid\": 11},"
    " {\"ph\": \"f\", \"id\": 1, \"bp\": \"e\", \"name\": \"launch\", \"ts\": 4, \"pid\": 2, \"tid\": 7},"
    " {\"ph\": \"C\", \"name\": \"GPU memory\", \"ts\": 5, \"pid\": 2, \"args\": {\"bytes\": 64}},"
    " {\"ph\": \"B\", \"name\": \"optimizer step\", \"ts\": 8, \"pid\": 1, \"tid\": 11},"
    " {\"ph\": \"C\", \"name\": \"GPU memory\", \"ts\": 12, \"pid\": 2, \"args\": {\"bytes\": 0}},"
    " {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"tid\": 0, \"args\": {\"name\": \"python\"}},"
    " {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 11, \"args\": {\"name\": \"MainThread\"}},"
    " {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 2, \"tid\": 0, \"args\": {\"name\": \"GPU 0\"}},"
    " {\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 2, \"tid\": 7, \"args\": {\"name\": \"stream 7\"}}"
    "]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) ev = ts_studio_trace_load_data(text, sizeof text - 1, "torch.json", &error);
  g_assert_no_error(error);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  /* aten::mm, sgemm, optimizer step, the launch flow; the GPU memory counter's rise and fall */
  g_assert_cmpuint(view->n_marks, ==, 6);
  g_autofree char *svg = svg_of(view, 900, 300);
  g_assert_nonnull(strstr(svg, "<title>python: MainThread</title>"));
  g_assert_nonnull(strstr(svg, "<title>GPU 0: stream 7</title>"));
  g_assert_nonnull(strstr(svg, "class=\"notes\""));
  g_assert_nonnull(strstr(svg, "1 &quot;E&quot; event without a &quot;B&quot; on its thread left out"));
  g_assert_nonnull(strstr(svg, "1 range never closed: drawn to the end of the trace"));
  /* The memory counter is the memory area. */
  g_assert_nonnull(strstr(svg, "<title>memory in use, peak 64 bytes</title>"));
  /* The open range runs to the last time the trace names (the counter at 12 µs). */
  TsTlView *tl = (TsTlView *)view;
  for (guint i = 0; i < ev->len; i++) {
    const TsDbEvent *e = &g_array_index(ev, TsDbEvent, i);
    if (g_strcmp0(e->name, "optimizer step") == 0)
      g_assert_cmpint(e->start_ns + e->dur_ns, ==, tl->span1);
  }
  g_assert_cmpint(tl->span1, ==, 10000); /* 12 µs after the first event, at 2 µs */
}

/* The event id (1-based) of the first event of kind named name. */
static gint64
find_event(GArray *ev, const char *kind, const char *name)
{
  for (guint i = 0; i < ev->len; i++) {
    const TsDbEvent *e = &g_array_index(ev, TsDbEvent, i);
    if (g_strcmp0(e->kind, kind) == 0 && g_strcmp0(e->name, name) == 0)
      return i + 1;
  }
  return 0;
}

/* A hand-written trace with everything another tool's export holds: process and thread
 * names, counters (a plain value, two series of one counter, one quoted), flows of both
 * versions, async slices (two overlapping, one end without a begin), global, process and
 * thread instants, args, an orphan "E" and an unclosed "B". */
static void
test_foreign_full(void)
{
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "data", "foreign-trace.json", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) ev = ts_studio_trace_load(path, &error);
  g_assert_no_error(error);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  TsTlView *tl = (TsTlView *)view;
  g_autofree char *svg = svg_of(view, 1200, 600);

  /* Lanes by their metadata names; async slices on a lane per process and name, overlapping
   * ones one row apart; instants that belong to no thread on lanes of their own. */
  g_assert_nonnull(strstr(svg, "<title>python: MainThread</title>"));
  g_assert_nonnull(strstr(svg, "<title>GPU 0: stream 7</title>"));
  g_assert_nonnull(strstr(svg, "<title>python: allreduce</title>"));
  g_assert_nonnull(strstr(svg, "<title>python: allreduce, depth 1</title>"));
  g_assert_nonnull(strstr(svg, "<title>global instants</title>"));
  g_assert_nonnull(strstr(svg, "<title>python: process instants</title>"));
  g_assert_cmpuint(count(svg, "<title>allreduce — "), ==, 2);
  g_assert_nonnull(strstr(svg, "<title>allreduce — 40.0 µs</title>"));
  g_assert_nonnull(strstr(svg, "<title>allreduce — 50.0 µs</title>"));
  g_assert_cmpuint(count(svg, "class=\"event instant\""), ==, 3);

  /* Counter tracks, one per series, the memory counter as the memory area instead. */
  g_assert_cmpuint(count(svg, "class=\"counter\""), ==, 3);
  g_assert_nonnull(strstr(svg, "<title>GPU utilization (GPU 0: counters): 5 to 95</title>"));
  g_assert_nonnull(strstr(svg, "<title>queue pending (python: counters): 0 to 3</title>"));
  g_assert_nonnull(strstr(svg, "<title>queue done (python: counters): 1 to 4</title>"));
  g_assert_nonnull(strstr(svg, "<title>memory in use, peak 64.0\u00a0MiB</title>"));
  g_assert_cmpuint(tl->n_counters, ==, 3);
  const TsTlMemory *util = &tl->counters[0].s;
  g_assert_cmpuint(util->n, ==, 3);
  g_assert_cmpfloat(ts__tl_value_of(util->v[1]), ==, 95);
  /* The step drawn: 20 until the kernel starts, 95 after, at full view. */
  gint64 cols[4];
  ts__tl_memory_columns(util, 0, 10000, 4, cols);
  g_assert_cmpfloat(ts__tl_value_of(cols[1]), ==, 20);
  g_assert_cmpfloat(ts__tl_value_of(cols[3]), ==, 95);

  /* Flows drawn as arrows, bound to the slices they join. */
  g_assert_cmpuint(count(svg, "class=\"flow\""), ==, 2);
  g_assert_nonnull(strstr(svg, "<title>launch</title>"));
  g_assert_cmpuint(tl->n_flows, ==, 2);
  gint64 launch = find_event(ev, "range", "cudaLaunchKernel");
  gint64 gemm = find_event(ev, "kernel", "sm90_gemm_128x128");
  gint64 add = find_event(ev, "range", "aten::add_");
  gint64 add_kernel = find_event(ev, "kernel", "elementwise_add");
  gboolean v1 = FALSE, v2 = FALSE;
  for (guint i = 0; i < tl->n_flows; i++) {
    v1 |= tl->flows[i].from == launch && tl->flows[i].to == gemm;
    v2 |= tl->flows[i].from == add && tl->flows[i].to == add_kernel;
  }
  g_assert_true(v1 && v2);

  /* The legend: the names taking the most time, most first. */
  g_assert_nonnull(strstr(svg, "class=\"legend\""));
  const char *first = strstr(svg, "class=\"legend-entry\"");
  g_assert_nonnull(first);
  g_assert_true(g_str_has_prefix(strstr(first, "<title>"),
                                 "<title>range allreduce — 90.0 µs in all</title>"));
  g_assert_cmpuint(count(svg, "class=\"legend-entry\""), ==, 7);

  /* What the reader left out or closed itself is said under the timeline. */
  g_assert_nonnull(strstr(svg, "1 &quot;E&quot; event without a &quot;B&quot;"));
  g_assert_nonnull(strstr(svg, "1 range never closed"));
  g_assert_nonnull(strstr(svg, "1 async &quot;e&quot; event without a &quot;b&quot; left out"));

  /* The details: args, self time, a counter's value. */
  g_autofree char *mm = ts_studio_view_describe(view, find_event(ev, "range", "aten::mm"));
  g_assert_nonnull(strstr(mm, "duration 30.0 µs, self 24.0 µs"));
  g_assert_nonnull(strstr(mm, "External id: 42"));
  g_assert_nonnull(strstr(mm, "Input Dims: [[256,256],[256,256]]"));
  g_assert_nonnull(strstr(mm, "python: MainThread"));
  g_autofree char *k = ts_studio_view_describe(view, gemm);
  g_assert_nonnull(strstr(k, "registers per thread: 168"));
  g_assert_null(strstr(k, "self"));
  g_autofree char *ar = ts_studio_view_describe(view, find_event(ev, "range", "allreduce"));
  g_assert_nonnull(strstr(ar, "bytes 1.0\u00a0MiB"));
  g_autofree char *gc = ts_studio_view_describe(view, find_event(ev, "instant", "gc"));
  g_assert_nonnull(strstr(gc, "collected: 1200"));
  /* Selected, an event's details show in a strip under the rows, in the SVG too. */
  g_assert_null(strstr(svg, "class=\"details\""));
  view->selected = find_event(ev, "range", "aten::mm");
  g_autofree char *selected = svg_of(view, 1200, 600);
  g_assert_nonnull(strstr(selected, "class=\"details\""));
  g_assert_nonnull(strstr(selected, ">External id: 42<"));
  g_assert_nonnull(strstr(selected, ", duration 30.0 µs, self 24.0 µs<"));
  view->selected = 0;

  gint64 sample = ts__tl_hit_counter_at(tl, 0, 50000);
  g_assert_cmpint(sample, >, 0);
  g_autofree char *cv = ts_studio_view_describe(view, sample);
  g_assert_true(g_str_has_prefix(cv, "counter GPU utilization\n"));
  g_assert_nonnull(strstr(cv, "value 95"));
}

/* Doubles keep their order as block-maxima keys, negative ones included. */
static void
test_counter_keys(void)
{
  const double v[] = {-1e300, -5, -0.5, -0.0, 0.0, 1e-300, 2.5, 1e9, G_MAXDOUBLE};
  for (guint i = 0; i < G_N_ELEMENTS(v); i++) {
    g_assert_cmpfloat(ts__tl_value_of(ts__tl_key_of(v[i])), ==, v[i]);
    if (i > 0)
      g_assert_cmpint(ts__tl_key_of(v[i - 1]), <, ts__tl_key_of(v[i]));
  }
}

/* A selected range: per name, the slices overlapping it, whole durations. */
static void
test_aggregate(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  /* gemm 10 µs long every 100 µs, 0..900 µs; softmax 2 µs after each; a range around all. */
  for (guint i = 0; i < 10; i++) {
    add(ev, "kernel", "gemm", i * 100000, 10000 + i * 1000, 0, 0, DEV, 0);
    add(ev, "kernel", "softmax", i * 100000 + 20000, 2000, 0, 0, DEV, 0);
  }
  add(ev, "range", "step", 0, 1000000, 0, 0, 1, 0);
  add(ev, "alloc", "alloc", 5, 0, 64, 1, 1, 0);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  g_autoptr(GArray) all = ts_studio_timeline_aggregate(view, 0, 1000000);
  g_assert_cmpuint(all->len, ==, 3);
  const TsStudioTimelineAgg *a = &g_array_index(all, TsStudioTimelineAgg, 0);
  g_assert_cmpstr(a->name, ==, "step");
  const TsStudioTimelineAgg *g = &g_array_index(all, TsStudioTimelineAgg, 1);
  g_assert_cmpstr(g->name, ==, "gemm");
  g_assert_cmpuint(g->count, ==, 10);
  g_assert_cmpint(g->total_ns, ==, 10 * 10000 + 45 * 1000);
  g_assert_cmpint(g->min_ns, ==, 10000);
  g_assert_cmpint(g->max_ns, ==, 19000);
  /* 250..415 µs: gemms 3 and 4 (300, 400), softmax 3 (320); a gemm that only ends inside
   * counts too (200 + 12 µs ends before 250: it does not). */
  g_autoptr(GArray) part = ts_studio_timeline_aggregate(view, 250000, 415000);
  g_assert_cmpuint(part->len, ==, 3);
  for (guint i = 0; i < part->len; i++) {
    const TsStudioTimelineAgg *p = &g_array_index(part, TsStudioTimelineAgg, i);
    if (g_strcmp0(p->name, "gemm") == 0) {
      g_assert_cmpuint(p->count, ==, 2);
      g_assert_cmpint(p->total_ns, ==, 13000 + 14000);
    } else if (g_strcmp0(p->name, "softmax") == 0) {
      g_assert_cmpuint(p->count, ==, 1);
    } else {
      g_assert_cmpstr(p->name, ==, "step");
    }
  }
  /* Drawn: the range shaded, its table in the details strip. */
  g_assert_false(ts_studio_timeline_get_selection(view, NULL, NULL));
  ts_studio_timeline_set_selection(view, 250000, 415000);
  g_assert_true(ts_studio_timeline_get_selection(view, NULL, NULL));
  g_autofree char *svg = svg_of(view, 1200, 500);
  g_assert_nonnull(strstr(svg, "class=\"selection\""));
  g_assert_nonnull(strstr(svg, "class=\"details\""));
  g_assert_nonnull(strstr(svg, "4 slices of 3 names overlap it"));
  g_assert_nonnull(strstr(svg, ">gemm                                           2    27.0 µs    13.5 µs    13.0 µs    14.0 µs<"));
  ts_studio_timeline_set_selection(view, 0, 0);
  g_free(svg);
  svg = svg_of(view, 1200, 500);
  g_assert_null(strstr(svg, "class=\"selection\""));
}

/* Search: matches counted, stepped through in time order both ways (wrapping), drawn as
 * matches, the rest faded; the window follows. */
static void
test_search(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  for (guint i = 0; i < 10; i++) {
    add(ev, "kernel", "sm90_GEMM_128x128", i * 100000, 10000, 0, 0, DEV, 0); /* id 2i+1 */
    add(ev, "kernel", "softmax", i * 100000 + 20000, 2000, 0, 0, DEV + 1, 0); /* id 2i+2 */
  }
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  g_assert_cmpuint(ts_studio_timeline_set_search(view, "gemm"), ==, 10);
  g_assert_cmpint(ts_studio_timeline_search_next(view, 0, TRUE), ==, 1);
  g_assert_cmpint(ts_studio_timeline_search_next(view, 1, TRUE), ==, 3);
  g_assert_cmpint(ts_studio_timeline_search_next(view, 19, TRUE), ==, 1); /* wraps */
  g_assert_cmpint(ts_studio_timeline_search_next(view, 3, FALSE), ==, 1);
  g_assert_cmpint(ts_studio_timeline_search_next(view, 1, FALSE), ==, 19);
  g_autofree char *svg = svg_of(view, 1600, 300);
  g_assert_cmpuint(count(svg, "class=\"event kernel match\""), ==, 10);
  g_assert_cmpuint(count(svg, "class=\"event kernel\""), ==, 10);
  /* Zoomed on the start, revealing the last match moves the window to it. */
  ts_studio_timeline_set_range(view, 0, 50000);
  ts_studio_timeline_reveal(view, 19);
  gint64 a, b;
  ts_studio_timeline_get_range(view, &a, &b);
  g_assert_cmpint(a, <=, 900000);
  g_assert_cmpint(b, >=, 910000);
  g_assert_cmpint(b - a, ==, 50000);
  g_assert_cmpuint(ts_studio_timeline_set_search(view, "SOFT"), ==, 10);
  /* From the window (880..930 µs): the softmax at 920 µs. */
  g_assert_cmpint(ts_studio_timeline_search_next(view, 0, TRUE), ==, 20);
  g_assert_cmpuint(ts_studio_timeline_set_search(view, "nothing"), ==, 0);
  g_assert_cmpint(ts_studio_timeline_search_next(view, 0, TRUE), ==, 0);
  g_assert_cmpuint(ts_studio_timeline_set_search(view, NULL), ==, 0);
  g_free(svg);
  svg = svg_of(view, 1600, 300);
  g_assert_null(strstr(svg, " match\""));
}

/* Deep in a long trace the ticks count from the first one ("+20 ns"), and the window label
 * gives that tick's time in full; zoomed out they are absolute. */
static void
test_deep_zoom_axis(void)
{
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(ev, "kernel", "early", 0, 1000, 0, 0, DEV, 0);
  add(ev, "kernel", "late", 25000000000, 5000, 0, 0, DEV, 0);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  g_autofree char *whole = svg_of(view, 800, 300);
  g_assert_null(strstr(whole, ">+0<"));
  g_assert_nonnull(strstr(whole, ">10 s<"));
  TsTlView *tl = (TsTlView *)view;
  tl->view0 = 25000001000;
  tl->view1 = 25000001100;
  g_autofree char *deep = svg_of(view, 800, 300);
  g_assert_nonnull(strstr(deep, ">+0<"));
  g_assert_nonnull(strstr(deep, ">+20 ns<"));
  g_assert_nonnull(strstr(deep, ">window 100 ns · +0 = 25.00000100 s<"));
  g_assert_null(strstr(deep, "25000001020"));
}

/* A name longer than its box is shortened with "…" to fit, never cut mid-glyph by the clip;
 * the full name stays in the title. Lane labels longer than the gutter too. */
static void
test_label_elided(void)
{
  static const char name[] = "void at::native::vectorized_elementwise_kernel<4, "
                             "at::native::FillFunctor<float>>(int, float*)";
  g_autoptr(GArray) ev = g_array_new(FALSE, FALSE, sizeof(TsDbEvent));
  add(ev, "kernel", name, 0, 1000, 0, 0, DEV, 0);
  add(ev, "kernel", "k", 5000, 1000, 0, 0, DEV, 0);
  g_autoptr(TsStudioView) view = ts_studio_timeline_new(ev);
  g_autofree char *svg = svg_of(view, 800, 300);
  g_autofree char *full_text = g_strdup_printf(">%s<", name);
  g_assert_null(strstr(svg, full_text));
  g_assert_nonnull(strstr(svg, ">void at::"));
  g_assert_nonnull(strstr(svg, "…<"));
  /* The title keeps the whole name (escaped for XML). */
  g_assert_nonnull(strstr(svg, "<title>void at::native::vectorized_elementwise_kernel&lt;4, "));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/studio-timeline/rows", test_rows);
  g_test_add_func("/studio-timeline/many-lanes", test_many_lanes);
  g_test_add_func("/studio-timeline/nesting", test_nesting);
  g_test_add_func("/studio-timeline/visible-range", test_visible_range);
  g_test_add_func("/studio-timeline/block-maxima", test_block_maxima);
  g_test_add_func("/studio-timeline/levels-of-detail", test_levels_of_detail);
  g_test_add_func("/studio-timeline/folding", test_folding);
  g_test_add_func("/studio-timeline/folding-dense", test_folding_dense);
  g_test_add_func("/studio-timeline/memory", test_memory);
  g_test_add_func("/studio-timeline/foreign-trace", test_foreign_trace);
  g_test_add_func("/studio-timeline/foreign-full", test_foreign_full);
  g_test_add_func("/studio-timeline/counter-keys", test_counter_keys);
  g_test_add_func("/studio-timeline/aggregate", test_aggregate);
  g_test_add_func("/studio-timeline/search", test_search);
  g_test_add_func("/studio-timeline/memory-columns", test_memory_columns);
  g_test_add_func("/studio-timeline/memory-peak-drawn", test_memory_peak_drawn);
  g_test_add_func("/studio-timeline/svg-kernels", test_svg_kernels);
  g_test_add_func("/studio-timeline/zoom-pan", test_zoom_pan);
  g_test_add_func("/studio-timeline/hit-describe", test_hit_describe);
  g_test_add_func("/studio-timeline/empty", test_empty);
  g_test_add_func("/studio-timeline/format", test_format);
  g_test_add_func("/studio-timeline/label-elided", test_label_elided);
  g_test_add_func("/studio-timeline/deep-zoom-axis", test_deep_zoom_axis);
  return g_test_run();
}
