/* test-studio-plots.c — the trial plots (roofline, history, predicted vs measured) drawn into
 * the SVG sink and read back: which groups exist, where marks are, that hit() finds a mark at
 * its own pixels, that best-so-far lines never get worse, that tau is right; plus the shared
 * axis machinery (ticks, labels, Kendall's tau-b against the O(n^2) definition) and a PNG export
 * of each view. Trials, devices and ceilings are built here, no cache is read. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "ts-studio-plot-private.h"
#include "ts-studio-view.h"

#define W 800.0
#define H 500.0

/* ---- test values, freed by the data layer's own destructors ---- */

static void
trial_free(gpointer data)
{
  ts_studio_trial_free(data);
}

static void
run_free(gpointer data)
{
  ts_studio_run_free(data);
}

static TsStudioTrial *
add_trial(GPtrArray *trials, gint64 id, gint64 run_id, TsDbTrialStatus status, double median_ns,
          double intensity, double gflops, const char *strategy)
{
  TsStudioTrial *t = g_new0(TsStudioTrial, 1);
  t->id = id;
  t->run_id = run_id;
  t->index = trials->len;
  t->status = status;
  t->schedule = g_strdup_printf("tile_m=%d tile_n=64 unroll=4", (int)(16 * id));
  t->strategy = g_strdup(strategy);
  t->error_text = status == TS_DB_TRIAL_OK ? NULL : g_strdup("it broke\nsecond line");
  t->median_ns = median_ns;
  t->min_ns = median_ns * 0.98;
  t->max_ns = median_ns * 1.05;
  t->predicted_ns = NAN;
  t->wall_s = trials->len * 1.5;
  t->intensity = intensity;
  t->gflops = gflops;
  t->bound_gflops = isfinite(gflops) ? 1000 : NAN;
  t->fraction = isfinite(gflops) ? gflops / 1000 : NAN;
  t->bound = isfinite(gflops) ? g_strdup("f32") : NULL;
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
    t->level_bytes[l] = t->level_intensity[l] = NAN;
  g_ptr_array_add(trials, t);
  return t;
}

typedef struct {
  TsStudioDevice device;
  TsStudioWorkload workload;
} Fixture;

static void
fixture_init(Fixture *f, gboolean with_ceilings)
{
  memset(f, 0, sizeof *f);
  f->device = (TsStudioDevice){.id = 1, .backend = "cpu", .name = "Test CPU", .arch = "x86_64"};
  if (with_ceilings) {
    TsProfCeilings *c = ts_prof_ceilings_new("cpu", "gcc 12.2.0");
    ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 1000, 100);
    ts_prof_ceilings_set(c, "f64", TS_PROF_COMPUTE, 500, 50);
    ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 50, 20);
    ts_prof_ceilings_set(c, "l2", TS_PROF_MEMORY, 200, 60);
    ts_prof_ceilings_set(c, "l1", TS_PROF_MEMORY, 800, 200);
    f->device.ceilings = c;
  }
  f->workload = (TsStudioWorkload){.workload_id = 3,
                                   .device_id = 1,
                                   .op = "gemm",
                                   .shape = "M=256,N=256,K=256",
                                   .dtype = "f32",
                                   .device = &f->device,
                                   .label = "gemm M=256,N=256,K=256 f32",
                                   .key = "3/1/1"};
}

static void
fixture_clear(Fixture *f)
{
  g_clear_pointer(&f->device.ceilings, ts_prof_ceilings_free);
}

/* The roofline's trials: three verified with coordinates (2 the stored best, above 1 at the
 * same intensity), one wrong result with coordinates, two failures, one verified without. */
static GPtrArray *
roofline_trials(void)
{
  GPtrArray *trials = g_ptr_array_new_with_free_func(trial_free);
  add_trial(trials, 1, 1, TS_DB_TRIAL_OK, 1e6, 10, 200, "annealing");
  add_trial(trials, 2, 1, TS_DB_TRIAL_OK, 5e5, 10, 400, "annealing")->best = TRUE;
  add_trial(trials, 3, 2, TS_DB_TRIAL_OK, 4e6, 2, 50, "random");
  add_trial(trials, 4, 1, TS_DB_TRIAL_COMPILE_ERROR, NAN, NAN, NAN, "annealing");
  add_trial(trials, 5, 1, TS_DB_TRIAL_WRONG_RESULT, 2e6, 5, 100, "annealing");
  add_trial(trials, 6, 2, TS_DB_TRIAL_OK, 3e6, NAN, NAN, "random");
  add_trial(trials, 7, 99, TS_DB_TRIAL_RUNTIME_ERROR, NAN, NAN, NAN, "random");
  return trials;
}

/* ---- reading the SVG back ---- */

static guint
count(const char *haystack, const char *needle)
{
  guint n = 0;
  for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static char *
render_svg(TsStudioView *view)
{
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(W, H);
  ts_studio_view_draw(view, c, W, H);
  char *svg = ts_canvas_svg_finish(c);
  /* Every drawing is well-formed XML. */
  GMarkupParser parser = {0};
  g_autoptr(GMarkupParseContext) ctx = g_markup_parse_context_new(&parser, 0, NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(g_markup_parse_context_parse(ctx, strstr(svg, "<svg"), -1, &error));
  g_assert_true(g_markup_parse_context_end_parse(ctx, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(count(svg, "<g"), ==, count(svg, "</g>"));
  return svg;
}

static double
attr(const char *p, const char *name)
{
  g_autofree char *needle = g_strdup_printf(" %s=\"", name);
  const char *a = strstr(p, needle);
  g_assert_nonnull(a);
  return g_ascii_strtod(a + strlen(needle), NULL);
}

/* The centre of the first circle in the group with that id (the ring of a ringed marker has
 * the marker's centre). */
static void
circle_of(const char *svg, const char *dom_id, double *cx, double *cy)
{
  g_autofree char *needle = g_strdup_printf("id=\"%s\"", dom_id);
  const char *g = strstr(svg, needle);
  g_assert_nonnull(g);
  const char *c = strstr(g, "<circle");
  g_assert_nonnull(c);
  *cx = attr(c, "cx");
  *cy = attr(c, "cy");
}

/* The text of the group with that id up to the next trial group. */
static char *
group_text(const char *svg, const char *dom_id)
{
  g_autofree char *needle = g_strdup_printf("id=\"%s\"", dom_id);
  const char *g = strstr(svg, needle);
  g_assert_nonnull(g);
  const char *next = strstr(g + strlen(needle), "id=\"trial-");
  return next ? g_strndup(g, next - g) : g_strdup(g);
}

/* ---- the shared machinery ---- */

static void
check_format(double v, TsPlotFormat format, const char *unit, const char *want)
{
  g_autofree char *got = ts__plot_format(v, format, unit);
  g_assert_cmpstr(got, ==, want);
}

static void
test_labels(void)
{
  check_format(1e9, TS_PLOT_FMT_SI, NULL, "1 G");
  check_format(1e-4, TS_PLOT_FMT_SI, "s", "100 µs");
  check_format(2500, TS_PLOT_FMT_SI, NULL, "2.5 k");
  check_format(999.96, TS_PLOT_FMT_SI, NULL, "1 k");
  check_format(1.5e12, TS_PLOT_FMT_SI, "FLOP/s", "1.5 TFLOP/s");
  check_format(0, TS_PLOT_FMT_SI, "s", "0 s");
  check_format(0.01, TS_PLOT_FMT_PLAIN, NULL, "0.01");
  check_format(0.1 * 3, TS_PLOT_FMT_PLAIN, NULL, "0.3");
  check_format(1000, TS_PLOT_FMT_PLAIN, NULL, "1000");
  check_format(1e5, TS_PLOT_FMT_PLAIN, NULL, "100 k");
  check_format(-20, TS_PLOT_FMT_PLAIN, "s", "-20 s");
  g_autofree char *ns = ts__plot_format_ns(1.234e6);
  g_assert_cmpstr(ns, ==, "1.23 ms");
}

static void
test_axes(void)
{
  TsPlotAxis a = {.p0 = 100, .p1 = 500};
  ts__plot_axis_fit(&a, TS_PLOT_LOG, 3, 700, 1);
  g_assert_cmpfloat(a.lo, ==, 2);
  g_assert_cmpfloat(a.hi, ==, 1000);
  g_assert_cmpfloat_with_epsilon(ts__plot_axis_map(&a, 2), 100, 1e-9);
  g_assert_cmpfloat_with_epsilon(ts__plot_axis_map(&a, 1000), 500, 1e-9);
  /* Equal ratios, equal distances. */
  double d1 = ts__plot_axis_map(&a, 20) - ts__plot_axis_map(&a, 2);
  double d2 = ts__plot_axis_map(&a, 200) - ts__plot_axis_map(&a, 20);
  g_assert_cmpfloat_with_epsilon(d1, d2, 1e-9);

  /* Decades, labelled, over four decades in 400 px; minor ticks unlabelled. */
  TsPlotAxis d = {.p0 = 0, .p1 = 400};
  ts__plot_axis_fit(&d, TS_PLOT_LOG, 1, 1e4, 1);
  TsPlotTick ticks[64];
  guint n = ts__plot_ticks(&d, 400, ticks, 64);
  GString *majors = g_string_new(NULL);
  guint minors = 0;
  for (guint i = 0; i < n; i++) {
    if (ticks[i].major)
      g_string_append_printf(majors, "%g ", ticks[i].value);
    else
      minors++;
  }
  g_assert_cmpstr(majors->str, ==, "1 10 100 1000 10000 ");
  g_assert_cmpuint(minors, ==, 4 * 8);
  g_string_free(majors, TRUE);
  /* Crowded: twelve decades in 200 px label every other decade or fewer. */
  ts__plot_axis_fit(&d, TS_PLOT_LOG, 1e-3, 1e9, 1);
  n = ts__plot_ticks(&d, 200, ticks, 64);
  g_assert_cmpuint(n, <=, 7);
  g_assert_cmpuint(n, >=, 2);

  /* Linear: 1-2-5 steps, zero exact. */
  TsPlotAxis l = {.p0 = 0, .p1 = 400};
  ts__plot_axis_fit(&l, TS_PLOT_LINEAR, -0.3, 9.7, 0);
  n = ts__plot_ticks(&l, 400, ticks, 64);
  g_assert_cmpuint(n, ==, 5);
  g_assert_cmpfloat(ticks[0].value, ==, 0);
  g_assert_cmpfloat(ticks[1].value, ==, 2);
  /* One value: widened, not empty. */
  ts__plot_axis_fit(&l, TS_PLOT_LINEAR, 5, 5, 0);
  g_assert_cmpfloat(l.lo, <, 5);
  g_assert_cmpfloat(l.hi, >, 5);
  ts__plot_axis_fit(&d, TS_PLOT_LOG, NAN, -1, 1);
  g_assert_cmpfloat(d.lo, ==, 1);
  g_assert_cmpfloat(d.hi, ==, 10);
}

static double
tau_brute(const double *x, const double *y, guint n)
{
  double c = 0, d = 0, tx = 0, ty = 0;
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++) {
      double s = (x[i] - x[j]) * (y[i] - y[j]);
      if (x[i] == x[j] && y[i] == y[j])
        continue;
      if (x[i] == x[j])
        tx++;
      else if (y[i] == y[j])
        ty++;
      else if (s > 0)
        c++;
      else
        d++;
    }
  return (c - d) / sqrt((c + d + tx) * (c + d + ty));
}

static void
test_kendall(void)
{
  double x[] = {1, 2, 3, 4, 5}, up[] = {10, 20, 30, 40, 50}, down[] = {5, 4, 3, 2, 1};
  g_assert_cmpfloat_with_epsilon(ts__plot_kendall_tau_b(x, up, 5), 1, 1e-12);
  g_assert_cmpfloat_with_epsilon(ts__plot_kendall_tau_b(x, down, 5), -1, 1e-12);
  g_assert_true(isnan(ts__plot_kendall_tau_b(x, up, 1)));
  double flat[] = {7, 7, 7, 7, 7};
  g_assert_true(isnan(ts__plot_kendall_tau_b(x, flat, 5)));
  /* Against the definition, with plenty of ties in both variables. */
  GRand *rand = g_rand_new_with_seed(42);
  for (guint round = 0; round < 20; round++) {
    guint n = 2 + g_rand_int_range(rand, 0, 300);
    g_autofree double *a = g_new(double, n);
    g_autofree double *b = g_new(double, n);
    for (guint i = 0; i < n; i++) {
      a[i] = g_rand_int_range(rand, 0, 12);
      b[i] = a[i] * (round % 3 == 0 ? -1 : 1) + g_rand_int_range(rand, 0, 8);
    }
    double want = tau_brute(a, b, n), got = ts__plot_kendall_tau_b(a, b, n);
    if (isnan(want))
      g_assert_true(isnan(got));
    else
      g_assert_cmpfloat_with_epsilon(got, want, 1e-9);
  }
  g_rand_free(rand);
}

/* ---- roofline ---- */

static void
test_roofline(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = roofline_trials();
  g_autoptr(TsStudioView) view = ts_studio_roofline_new(&f.workload, trials);
  g_assert_cmpstr(ts_studio_view_name(view), ==, "roofline");
  g_autofree char *svg = render_svg(view);

  /* One group per plotted trial, by status; none for the failures or the unplaced. */
  g_assert_cmpuint(count(svg, "class=\"trial ok\""), ==, 3);
  g_assert_cmpuint(count(svg, "class=\"trial wrong_result\""), ==, 1);
  g_assert_null(strstr(svg, "id=\"trial-4\""));
  g_assert_null(strstr(svg, "id=\"trial-6\""));
  g_assert_null(strstr(svg, "id=\"trial-7\""));
  g_assert_cmpuint(view->n_drawn, ==, 4);
  g_assert_cmpuint(view->n_marks, ==, 7);
  g_assert_nonnull(strstr(svg, "2 failed, not plotted"));
  g_assert_nonnull(strstr(svg, "1 verified without coordinates"));

  /* A group per roof; f32 is the one a gemm in f32 on a CPU is held to. */
  g_assert_cmpuint(count(svg, "class=\"ceiling compute\""), ==, 2);
  g_assert_cmpuint(count(svg, "class=\"ceiling memory\""), ==, 3);
  const char *ids[] = {"ceiling-f32", "ceiling-f64", "ceiling-dram", "ceiling-l2", "ceiling-l1"};
  for (guint i = 0; i < G_N_ELEMENTS(ids); i++) {
    g_autofree char *id = g_strdup_printf("id=\"%s\"", ids[i]);
    g_assert_nonnull(strstr(svg, id));
  }
  g_assert_nonnull(strstr(svg, "f32: 1 TFLOP/s (compute roof, the one this op is held to)"));
  g_assert_nonnull(strstr(svg, "ridge 20 FLOP/B")); /* 1000 GFLOP/s over 50 GB/s */
  /* A rate (exps a second) is no roof: the plot is drawn as without it, axes and all. */
  ts_prof_ceilings_set(f.device.ceilings, "exp", TS_PROF_RATE, 1.2, 0.6);
  g_autoptr(TsStudioView) with_rate = ts_studio_roofline_new(&f.workload, trials);
  g_autofree char *svg_rate = render_svg(with_rate);
  g_assert_cmpstr(svg_rate, ==, svg);
  g_assert_nonnull(strstr(svg, ">dram 50 GB/s</text>"));
  g_assert_nonnull(strstr(svg, "Roofline: gemm M=256,N=256,K=256 f32"));
  g_assert_nonnull(strstr(svg, "Test CPU"));

  /* The best is ringed: its group, and only its group, holds a group of class "best". */
  g_assert_cmpuint(count(svg, "class=\"best\""), ==, 1);
  g_autofree char *best = group_text(svg, "trial-2");
  g_assert_nonnull(strstr(best, "class=\"best\""));

  /* Placement: more GFLOP/s is higher (smaller y), more intensity further right. */
  double x1, y1, x2, y2, x3, y3;
  circle_of(svg, "trial-1", &x1, &y1);
  circle_of(svg, "trial-2", &x2, &y2);
  circle_of(svg, "trial-3", &x3, &y3);
  g_assert_cmpfloat(y2, <, y1 - 10);
  g_assert_cmpfloat_with_epsilon(x1, x2, 0.01);
  g_assert_cmpfloat(x3, <, x1 - 10);
  g_assert_cmpfloat(y3, >, y1);

  /* hit() at a marker's pixels (and a few px off) gives its id; far from all, nothing. */
  g_assert_cmpint(ts_studio_view_hit(view, x1, y1, W, H), ==, 1);
  g_assert_cmpint(ts_studio_view_hit(view, x1 + 3, y1 - 2, W, H), ==, 1);
  g_assert_cmpint(ts_studio_view_hit(view, x2, y2, W, H), ==, 2);
  g_assert_cmpint(ts_studio_view_hit(view, x3, y3, W, H), ==, 3);
  g_assert_cmpint(ts_studio_view_hit(view, x3 + 12, y3, W, H), ==, 0);
  g_assert_cmpint(ts_studio_view_hit(view, 5, 5, W, H), ==, 0);

  /* A brush: the plotted trials inside a rectangle, in the trials' order. */
  g_autoptr(GArray) all = ts_studio_view_brush(view, W, H, 0, 0, W, H);
  g_assert_cmpuint(all->len, ==, 4);
  const gint64 plotted[] = {1, 2, 3, 5};
  for (guint i = 0; i < all->len; i++)
    g_assert_cmpint(g_array_index(all, gint64, i), ==, plotted[i]);
  g_autoptr(GArray) just3 = ts_studio_view_brush(view, x3 - 5, y3 - 5, x3 + 5, y3 + 5, W, H);
  g_assert_cmpuint(just3->len, ==, 1);
  g_assert_cmpint(g_array_index(just3, gint64, 0), ==, 3);
  g_autoptr(GArray) empty = ts_studio_view_brush(view, 0, 0, 40, 40, W, H); /* the margin */
  g_assert_cmpuint(empty->len, ==, 0);
  /* Several selected: each drawn on top and ringed as the one selected is. */
  ts_studio_view_set_selection(view, (const gint64[]){1, 3}, 2);
  g_autofree char *svg_sel = render_svg(view);
  const char *s1 = strstr(svg_sel, "id=\"trial-1\""), *s2 = strstr(svg_sel, "id=\"trial-2\"");
  const char *s3 = strstr(svg_sel, "id=\"trial-3\"");
  g_assert_true(s2 < s1 && s2 < s3);
  g_autofree char *g1 = group_text(svg_sel, "trial-1"), *g3 = group_text(svg_sel, "trial-3");
  g_autofree char *plain1 = group_text(svg, "trial-1");
  g_assert_cmpuint(count(g1, "<circle"), >, count(plain1, "<circle"));
  g_assert_cmpuint(count(g3, "<circle"), >, count(plain1, "<circle"));
  ts_studio_view_set_selection(view, NULL, 0);

  g_autofree char *text = ts_studio_view_describe(view, 1);
  g_assert_nonnull(strstr(text, "tile_m=16 tile_n=64"));
  g_assert_nonnull(strstr(text, "status: ok"));
  g_assert_nonnull(strstr(text, "median 1 ms"));
  g_assert_nonnull(strstr(text, "200 GFLOP/s, 20% of the f32 bound"));
  g_assert_nonnull(strstr(text, "strategy: annealing"));
  g_assert_nonnull(strstr(text, "trial 1"));
  g_assert_null(ts_studio_view_describe(view, 12345));
  g_assert_null(ts_studio_view_describe(view, 0));
  fixture_clear(&f);
}

static void
test_roofline_highlight(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = roofline_trials();
  g_autoptr(TsStudioView) view = ts_studio_roofline_new(&f.workload, trials);
  ts_studio_roofline_set_color_by(view, TS_STUDIO_COLOR_BY_STRATEGY);
  view->selected = 1;
  view->hover = 3;
  ts_studio_view_set_theme(view, ts_studio_theme(TRUE));
  g_autofree char *svg = render_svg(view);
  /* Selected and hovered come last, on top of the others; the hovered last of all. */
  const char *t1 = strstr(svg, "id=\"trial-1\""), *t2 = strstr(svg, "id=\"trial-2\"");
  const char *t3 = strstr(svg, "id=\"trial-3\""), *t5 = strstr(svg, "id=\"trial-5\"");
  g_assert_true(t5 < t2 && t2 < t1 && t1 < t3);
  /* Coloured by strategy: legend by strategy, marker fill the strategy's colour. */
  g_assert_nonnull(strstr(svg, ">annealing (3)</text>"));
  g_assert_nonnull(strstr(svg, ">random (1)</text>"));
  TsRgba k = ts_studio_theme_series(ts_studio_theme(TRUE), "random");
  g_autofree char *fill = g_strdup_printf("fill=\"#%02x%02x%02x\"", (guint)lround(k.r * 255),
                                          (guint)lround(k.g * 255), (guint)lround(k.b * 255));
  g_autofree char *g3 = group_text(svg, "trial-3");
  g_assert_nonnull(strstr(g3, fill));
  /* Background is the dark theme's. */
  g_assert_nonnull(strstr(svg, "class=\"background\" x=\"0\" y=\"0\" width=\"100%\" "
                               "height=\"100%\" fill=\"#1e1e1e\""));
  fixture_clear(&f);
}

/* Ceilings that cannot be right (L3 slower than DRAM, f64 faster than f32: a busy machine
 * when they were measured) are drawn as measured, under a warning naming them; sound ones
 * get none. */
static void
test_roofline_implausible(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = roofline_trials();
  g_autoptr(TsStudioView) sound = ts_studio_roofline_new(&f.workload, trials);
  g_autofree char *svg = render_svg(sound);
  g_assert_null(strstr(svg, "note warning"));
  ts_prof_ceilings_set(f.device.ceilings, "l3", TS_PROF_MEMORY, 40, 15);
  ts_prof_ceilings_set(f.device.ceilings, "f64", TS_PROF_COMPUTE, 1200, 100);
  g_autoptr(TsStudioView) busy = ts_studio_roofline_new(&f.workload, trials);
  g_autofree char *svg2 = render_svg(busy);
  g_assert_nonnull(strstr(svg2, "class=\"note warning\""));
  g_assert_nonnull(strstr(svg2, "l3 (40.0 GB/s) is slower than dram (50.0 GB/s)"));
  g_assert_nonnull(strstr(svg2, "f64 (1200 GFLOP/s) is faster than f32 (1000 GFLOP/s)"));
  g_assert_nonnull(strstr(svg2, "tessera-tune devices --measure"));
  g_assert_nonnull(strstr(svg2, "id=\"ceiling-l3\"")); /* still drawn */
  fixture_clear(&f);
}

/* The hierarchical roofline: the trial whose traffic per level was counted gets a point per
 * level at its FLOP/s, each judged against that level's roof; the selected trial's when it has
 * them, else the best's. */
static void
set_levels(TsStudioTrial *t, double dram, double l2, double l1)
{
  const double ai[] = {dram, l2, l1};
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++) {
    t->level_intensity[l] = ai[l];
    t->level_bytes[l] = isfinite(ai[l]) ? 1e9 / ai[l] : NAN;
  }
}

static void
test_roofline_levels(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = roofline_trials();
  {
    g_autoptr(TsStudioView) none = ts_studio_roofline_new(&f.workload, trials);
    g_autofree char *svg = render_svg(none);
    g_assert_null(strstr(svg, "class=\"levels\""));
    g_assert_null(strstr(svg, "per level"));
  }
  /* The best (2: 400 GFLOP/s at 10 FLOP/B compulsory) measured at all three levels; 3 at DRAM
   * only; 1 not at all. */
  set_levels(trials->pdata[1], 40, 8, 0.5);
  set_levels(trials->pdata[2], 4, NAN, NAN);
  g_autoptr(TsStudioView) view = ts_studio_roofline_new(&f.workload, trials);
  g_autofree char *svg = render_svg(view);
  g_assert_cmpuint(count(svg, "class=\"levels\""), ==, 1);
  g_assert_nonnull(strstr(svg, "id=\"levels-2\""));
  const char *names[] = {"dram", "l2", "l1"};
  double x[3], y[3];
  for (guint l = 0; l < 3; l++) {
    g_autofree char *cls = g_strdup_printf("class=\"level %s\"", names[l]);
    g_assert_cmpuint(count(svg, cls), ==, 1);
    g_autofree char *id = g_strdup_printf("level-2-%s", names[l]);
    circle_of(svg, id, &x[l], &y[l]);
  }
  /* One FLOP/s, three intensities: L1 left of L2 left of DRAM, the compulsory point between. */
  double tx, ty;
  circle_of(svg, "trial-2", &tx, &ty);
  g_assert_cmpfloat_with_epsilon(y[0], ty, 0.01);
  g_assert_cmpfloat_with_epsilon(y[1], ty, 0.01);
  g_assert_cmpfloat_with_epsilon(y[2], ty, 0.01);
  g_assert_cmpfloat(x[2], <, x[1] - 10);
  g_assert_cmpfloat(x[1], <, tx);
  g_assert_cmpfloat(tx, <, x[0] - 10);
  /* Judged per level: L1 at 0.5 FLOP/B under an 800 GB/s roof bounds it at 400 GFLOP/s, which
   * it reaches; DRAM at 40 FLOP/B is under the f32 roof (1 TFLOP/s) instead. */
  g_assert_nonnull(strstr(svg, "trial 2 at L1: 2 GB moved, 0.5 FLOP/B, 400 GFLOP/s, 100% of the "
                               "l1 bound there (400 GFLOP/s)"));
  g_assert_nonnull(strstr(svg, "trial 2 at DRAM: 25 MB moved, 40 FLOP/B, 400 GFLOP/s, 40% of the "
                               "dram bound there (1 TFLOP/s)"));
  g_assert_nonnull(strstr(svg, "trial 2 per level, measured bytes (DRAM, L2, L1)"));
  /* A level point is the trial's for the pointer too. */
  g_assert_cmpint(ts_studio_view_hit(view, x[2], y[2], W, H), ==, 2);
  g_assert_cmpint(ts_studio_view_hit(view, x[0] + 2, y[0], W, H), ==, 2);
  g_autofree char *text = ts_studio_view_describe(view, 2);
  g_assert_nonnull(strstr(text, "measured traffic: DRAM 25 MB (40 FLOP/B), L2 125 MB (8 FLOP/B), "
                                "L1 2 GB (0.5 FLOP/B)"));
  g_autofree char *text1 = ts_studio_view_describe(view, 1);
  g_assert_null(strstr(text1, "measured traffic"));

  /* Selecting a trial without counters leaves the best's; one with them shows its own. */
  view->selected = 1;
  g_autofree char *svg1 = render_svg(view);
  g_assert_nonnull(strstr(svg1, "id=\"levels-2\""));
  view->selected = 3;
  g_autofree char *svg3 = render_svg(view);
  g_assert_null(strstr(svg3, "id=\"levels-2\""));
  g_assert_nonnull(strstr(svg3, "id=\"level-3-dram\""));
  g_assert_null(strstr(svg3, "id=\"level-3-l2\""));
  g_assert_nonnull(strstr(svg3, "trial 3 per level, measured bytes (DRAM)"));
  /* The level points widen the fitted axes: with the zoom reset each is inside the plot. */
  for (guint l = 0; l < 3; l++) {
    g_assert_cmpfloat(x[l], >, 66);
    g_assert_cmpfloat(x[l], <, W - 18);
  }
  fixture_clear(&f);
}

static void
test_roofline_no_ceilings(void)
{
  Fixture f;
  fixture_init(&f, FALSE);
  g_autoptr(GPtrArray) trials = roofline_trials();
  g_autoptr(TsStudioView) view = ts_studio_roofline_new(&f.workload, trials);
  g_autofree char *svg = render_svg(view);
  g_assert_nonnull(
      strstr(svg, "no measured ceilings for Test CPU: run `tessera-tune devices --measure`"));
  g_assert_null(strstr(svg, "class=\"ceiling"));
  g_assert_cmpuint(count(svg, "class=\"trial ok\""), ==, 3);
  /* The axes fit the data: every marker inside the plot area. */
  for (gint64 id = 1; id <= 3; id++) {
    g_autofree char *dom = g_strdup_printf("trial-%" G_GINT64_FORMAT, id);
    double x, y;
    circle_of(svg, dom, &x, &y);
    g_assert_cmpfloat(x, >, 66);
    g_assert_cmpfloat(x, <, W - 18);
    g_assert_cmpfloat(y, >, 46);
    g_assert_cmpfloat(y, <, H - 44);
    g_assert_cmpint(ts_studio_view_hit(view, x, y, W, H), ==, id);
  }

  /* Nothing at all: a message, no marks. */
  g_autoptr(GPtrArray) none = g_ptr_array_new_with_free_func(trial_free);
  g_autoptr(TsStudioView) empty = ts_studio_roofline_new(&f.workload, none);
  g_autofree char *svg2 = render_svg(empty);
  g_assert_nonnull(strstr(svg2, "No trials stored for this workload."));
  g_assert_nonnull(strstr(svg2, "no measured ceilings for Test CPU"));
  g_assert_null(strstr(svg2, "class=\"axes\"")); /* no scales with nothing on them */
  g_assert_cmpuint(empty->n_drawn, ==, 0);
  g_autoptr(TsStudioView) hist = ts_studio_history_new(&f.workload, none, NULL, 0);
  g_autofree char *svg3 = render_svg(hist);
  g_assert_nonnull(strstr(svg3, "No trials stored for this workload."));
  g_assert_null(strstr(svg3, "class=\"axes\""));
  fixture_clear(&f);
}

/* ---- history ---- */

static GPtrArray *
history_runs(void)
{
  GPtrArray *runs = g_ptr_array_new_with_free_func(run_free);
  const char *strategies[] = {"annealing", "random", "annealing", "model"};
  for (guint i = 0; i < G_N_ELEMENTS(strategies); i++) {
    TsStudioRun *r = g_new0(TsStudioRun, 1);
    r->id = i + 1;
    r->strategy = g_strdup(strategies[i]);
    r->status = g_strdup("done");
    g_ptr_array_add(runs, r);
  }
  return runs;
}

/* Runs 1 and 2 interleaved with improvements and regressions, run 3 later, run 4 empty, and two
 * trials of no known run. */
static GPtrArray *
history_trials(void)
{
  GPtrArray *t = g_ptr_array_new_with_free_func(trial_free);
  const double run1[] = {5e6, 3e6, 4e6, 1e6, 2e6, 8e5, 9e5};
  const double run2[] = {6e6, 7e6, 2.5e6, 3e6, 2e6};
  gint64 id = 1;
  for (guint i = 0; i < G_N_ELEMENTS(run1); i++) {
    add_trial(t, id++, 1, TS_DB_TRIAL_OK, run1[i], NAN, NAN, "annealing");
    if (i < G_N_ELEMENTS(run2))
      add_trial(t, id++, 2, TS_DB_TRIAL_OK, run2[i], NAN, NAN, "random");
  }
  add_trial(t, id++, 1, TS_DB_TRIAL_COMPILE_ERROR, NAN, NAN, NAN, "annealing");
  add_trial(t, id++, 3, TS_DB_TRIAL_OK, 7e5, NAN, NAN, "annealing"); /* the overall best: 14 */
  add_trial(t, id++, 3, TS_DB_TRIAL_TIMEOUT, NAN, NAN, NAN, "annealing");
  add_trial(t, id++, 0, TS_DB_TRIAL_OK, 4e6, NAN, NAN, NULL);
  add_trial(t, id++, 42, TS_DB_TRIAL_OK, 3.5e6, NAN, NAN, "replay");
  return t;
}

/* The points of the best-so-far polyline of the run group with that id. */
static GArray *
step_points(const char *svg, const char *run_id)
{
  g_autofree char *needle = g_strdup_printf("id=\"%s\"", run_id);
  const char *g = strstr(svg, needle);
  g_assert_nonnull(g);
  const char *line = strstr(g, "class=\"best-so-far\"");
  g_assert_nonnull(line);
  const char *pts = strstr(line, "points=\"");
  g_assert_nonnull(pts);
  pts += strlen("points=\"");
  GArray *xy = g_array_new(FALSE, FALSE, sizeof(double));
  while (*pts != '"') {
    char *end;
    double v = g_ascii_strtod(pts, &end);
    g_assert_true(end != pts);
    g_array_append_val(xy, v);
    pts = end;
    while (*pts == ',' || *pts == ' ')
      pts++;
  }
  g_assert_cmpuint(xy->len % 2, ==, 0);
  return xy;
}

static void
test_history(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = history_trials();
  g_autoptr(GPtrArray) runs = history_runs();
  g_autoptr(TsStudioView) view =
      ts_studio_history_new(&f.workload, trials, runs, TS_STUDIO_HISTORY_BY_INDEX);
  g_assert_cmpstr(ts_studio_view_name(view), ==, "history");
  g_autofree char *svg = render_svg(view);

  /* Runs 1, 2, 3 and "no run" (run 0 and the unknown run 42); run 4 has no trials. */
  g_assert_cmpuint(count(svg, "class=\"run\""), ==, 4);
  g_assert_nonnull(strstr(svg, "id=\"run-1\""));
  g_assert_nonnull(strstr(svg, "id=\"run-3\""));
  g_assert_nonnull(strstr(svg, "id=\"run-none\""));
  g_assert_null(strstr(svg, "id=\"run-4\""));
  g_assert_nonnull(strstr(svg, ">run 1: annealing (8 trials)</text>"));
  g_assert_nonnull(strstr(svg, ">run 2: random (5 trials)</text>"));
  g_assert_nonnull(strstr(svg, ">no run (2 trials)</text>"));
  g_assert_nonnull(strstr(svg, ">2 failed</text>"));
  /* Run 3 repeats annealing: dashed, run 1 solid. */
  const char *r1 = strstr(svg, "id=\"run-1\""), *r2 = strstr(svg, "id=\"run-2\"");
  const char *r3 = strstr(svg, "id=\"run-3\""), *rn = strstr(svg, "id=\"run-none\"");
  g_assert_true(r1 < r2 && r2 < r3 && r3 < rn);
  g_autofree char *run1 = g_strndup(r1, r2 - r1), *run3 = g_strndup(r3, rn - r3);
  g_assert_null(strstr(run1, "stroke-dasharray"));
  g_assert_nonnull(strstr(run3, "stroke-dasharray"));
  g_assert_cmpuint(count(svg, "<polyline"), >=, 4);

  /* Best so far never gets worse: y in pixels (down) never decreases, x never goes back;
   * run 1 improves three times after its first trial (3e6, 1e6, 8e5). */
  const char *run_ids[] = {"run-1", "run-2", "run-3", "run-none"};
  for (guint r = 0; r < G_N_ELEMENTS(run_ids); r++) {
    g_autoptr(GArray) xy = step_points(svg, run_ids[r]);
    g_assert_cmpuint(xy->len, >=, 4);
    guint drops = 0;
    for (guint k = 2; k < xy->len; k += 2) {
      double px = g_array_index(xy, double, k - 2), py = g_array_index(xy, double, k - 1);
      double x = g_array_index(xy, double, k), y = g_array_index(xy, double, k + 1);
      g_assert_cmpfloat(x, >=, px);
      g_assert_cmpfloat(y, >=, py);
      drops += y > py + 0.5;
    }
    if (r == 0)
      g_assert_cmpuint(drops, ==, 3);
  }

  /* The overall best (trial 14, 700 us) is marked; its point and the hit test agree. */
  g_assert_nonnull(strstr(svg, "id=\"best-14\""));
  g_assert_nonnull(strstr(svg, ">best: 700 µs (trial 14)</text>"));
  g_assert_null(strstr(svg, "fastest median"));
  double bx, by;
  circle_of(svg, "trial-14", &bx, &by);
  g_assert_cmpint(ts_studio_view_hit(view, bx, by, W, H), ==, 14);
  double fx, fy;
  circle_of(svg, "trial-1", &fx, &fy);
  g_assert_cmpint(ts_studio_view_hit(view, fx + 2, fy + 2, W, H), ==, 1);
  g_assert_cmpint(ts_studio_view_hit(view, 2, 2, W, H), ==, 0);
  /* Failures are crosses on the bottom edge, and can be hovered too. */
  g_autofree char *failed = group_text(svg, "trial-13");
  g_assert_nonnull(strstr(svg, "class=\"trial compile_error\" id=\"trial-13\""));
  g_assert_nonnull(strstr(failed, "<path"));
  g_assert_cmpuint(view->n_drawn, ==, trials->len);
  /* Every mark, failures on the bottom edge too, is in a brush over the whole plot; a small
   * one around trial 14 holds just it. */
  g_autoptr(GArray) every = ts_studio_view_brush(view, 0, 0, W, H, W, H);
  g_assert_cmpuint(every->len, ==, trials->len);
  g_autoptr(GArray) best14 = ts_studio_view_brush(view, bx - 2, by - 2, bx + 2, by + 2, W, H);
  g_assert_cmpuint(best14->len, ==, 1);
  g_assert_cmpint(g_array_index(best14, gint64, 0), ==, 14);
  g_autofree char *text = ts_studio_view_describe(view, 13);
  g_assert_nonnull(strstr(text, "status: compile_error (it broke ...)"));
  g_assert_nonnull(strstr(text, "run 1"));

  /* The tuner kept trial 7 (1 ms) as best: the history rings it as the list and the roofline
   * do, and says that trial 14 has the faster median and why it is not the best. */
  ((TsStudioTrial *)trials->pdata[6])->best = TRUE;
  g_assert_cmpint(((TsStudioTrial *)trials->pdata[6])->id, ==, 7);
  g_autoptr(TsStudioView) kept =
      ts_studio_history_new(&f.workload, trials, runs, TS_STUDIO_HISTORY_BY_INDEX);
  g_autofree char *svg3 = render_svg(kept);
  g_assert_nonnull(strstr(svg3, "id=\"best-7\""));
  g_assert_nonnull(strstr(svg3, ">best: 1 ms (trial 7)</text>"));
  g_assert_nonnull(strstr(svg3, ">fastest median: 700 µs (trial 14), 30.0% below the best&apos;s</text>"));
  g_assert_nonnull(strstr(svg3, "not faster beyond the noise of both"));
  fixture_clear(&f);
}

static void
test_history_wall(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = history_trials();
  ((TsStudioTrial *)trials->pdata[3])->wall_s = NAN;
  g_autoptr(GPtrArray) runs = history_runs();
  g_autoptr(TsStudioView) view =
      ts_studio_history_new(&f.workload, trials, runs, TS_STUDIO_HISTORY_BY_WALL);
  g_autofree char *svg = render_svg(view);
  g_assert_nonnull(strstr(svg, ">1 without a time stamp</text>"));
  g_assert_nonnull(strstr(svg, "wall time since the first trial (s)"));
  g_assert_null(strstr(svg, "id=\"trial-4\""));
  g_assert_cmpuint(view->n_drawn, ==, trials->len - 1);
  /* Later trials further right. */
  double x1, y1, x9, y9;
  circle_of(svg, "trial-1", &x1, &y1);
  circle_of(svg, "trial-9", &x9, &y9);
  g_assert_cmpfloat(x9, >, x1 + 50);

  /* No runs given at all: everything is "no run". */
  g_autoptr(TsStudioView) norun =
      ts_studio_history_new(&f.workload, trials, NULL, TS_STUDIO_HISTORY_BY_INDEX);
  g_autofree char *svg2 = render_svg(norun);
  g_assert_cmpuint(count(svg2, "class=\"run\""), ==, 1);
  fixture_clear(&f);
}

/* ---- predicted vs measured ---- */

static void
test_predicted(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = history_trials();
  /* Without predictions: the message, no points. */
  g_autoptr(TsStudioView) none = ts_studio_predicted_new(&f.workload, trials);
  g_assert_cmpstr(ts_studio_view_name(none), ==, "predicted");
  g_autofree char *svg0 = render_svg(none);
  g_assert_nonnull(strstr(svg0, "class=\"message\""));
  g_assert_nonnull(strstr(svg0, ">No verified trial has a predicted time.</text>"));
  g_assert_nonnull(strstr(svg0, "Predictions come from the cost model"));
  g_assert_null(strstr(svg0, "class=\"trial ok\""));
  g_assert_cmpuint(none->n_drawn, ==, 0);

  /* Perfectly concordant predictions (twice the measured time): tau 1. */
  guint n = 0;
  for (guint i = 0; i < trials->len; i++) {
    TsStudioTrial *t = trials->pdata[i];
    if (t->status == TS_DB_TRIAL_OK && i % 3 != 0) {
      t->predicted_ns = 2 * t->median_ns;
      n++;
    }
  }
  ((TsStudioTrial *)trials->pdata[12])->predicted_ns = 1e6; /* a failure's: never plotted */
  g_autoptr(TsStudioView) view = ts_studio_predicted_new(&f.workload, trials);
  g_autofree char *svg = render_svg(view);
  g_autofree char *want = g_strdup_printf("Kendall τ-b 1.000 (N = %u)", n);
  g_assert_nonnull(strstr(svg, want));
  g_assert_cmpuint(count(svg, "class=\"trial ok\""), ==, n);
  g_assert_cmpuint(view->n_drawn, ==, n);
  g_assert_nonnull(strstr(svg, "class=\"diagonal\""));
  /* Its marks: x is the prediction, y the measurement; hit finds them. */
  double x2, y2, x3, y3;
  circle_of(svg, "trial-2", &x2, &y2); /* 6 ms measured */
  circle_of(svg, "trial-3", &x3, &y3); /* 3 ms measured */
  g_assert_cmpfloat(x3, <, x2 - 10);
  g_assert_cmpfloat(y3, >, y2 + 10);
  g_assert_cmpint(ts_studio_view_hit(view, x2, y2, W, H), ==, 2);
  g_assert_cmpint(ts_studio_view_hit(view, 3, 3, W, H), ==, 0);
  g_autofree char *text = ts_studio_view_describe(view, 2);
  g_assert_nonnull(strstr(text, "predicted 12 ms"));
  g_assert_nonnull(strstr(text, "measured 2.00x faster than predicted"));

  /* Zoomed 4x about trial 2's mark: it stays where it was, the others spread out 4x (log-log),
   * hit follows; a pan moves the marks; reset and zooming out from the whole plot show it all. */
  double fx, fy;
  ts_studio_view_plot_fraction(view, x2, y2, W, H, &fx, &fy);
  ts_studio_view_zoom(view, 4, fx, fy);
  g_assert_true(view->zoomed);
  g_autofree char *zsvg = render_svg(view);
  double zx2, zy2, zx3, zy3;
  circle_of(zsvg, "trial-2", &zx2, &zy2);
  circle_of(zsvg, "trial-3", &zx3, &zy3);
  g_assert_cmpfloat(fabs(zx2 - x2), <, 1.5);
  g_assert_cmpfloat(fabs(zy2 - y2), <, 1.5);
  g_assert_cmpfloat(fabs((zx2 - zx3) / (x2 - x3) - 4), <, 0.05);
  g_assert_cmpint(ts_studio_view_hit(view, zx2, zy2, W, H), ==, 2);
  ts_studio_view_pan(view, 0.1, 0);
  g_autofree char *psvg = render_svg(view);
  double px2, py2;
  circle_of(psvg, "trial-2", &px2, &py2);
  g_assert_cmpfloat(px2, <, zx2 - 20);
  g_assert_cmpfloat(fabs(py2 - zy2), <, 1.5);
  ts_studio_view_zoom_reset(view);
  g_autofree char *rsvg = render_svg(view);
  double rx2, ry2;
  circle_of(rsvg, "trial-2", &rx2, &ry2);
  g_assert_cmpfloat(fabs(rx2 - x2), <, 0.01);
  ts_studio_view_zoom(view, 0.5, 0.5, 0.5);
  g_assert_false(view->zoomed);

  /* Reversed order: tau -1. */
  for (guint i = 0; i < trials->len; i++) {
    TsStudioTrial *t = trials->pdata[i];
    if (isfinite(t->predicted_ns))
      t->predicted_ns = 1e13 / t->median_ns;
  }
  g_autoptr(TsStudioView) rev = ts_studio_predicted_new(&f.workload, trials);
  g_autofree char *svg2 = render_svg(rev);
  g_autofree char *want2 = g_strdup_printf("Kendall τ-b -1.000 (N = %u)", n);
  g_assert_nonnull(strstr(svg2, want2));
  fixture_clear(&f);
}

/* ---- the hover overlay the plot widget paints over its kept drawing ---- */

static void
check_overlay(TsStudioView *view, gint64 hover, const char *dom_id)
{
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(W, H);
  view->hover = hover;
  guint n_drawn = view->n_drawn;
  g_assert_true(ts__plot_draw_hover(view, c, W, H));
  g_autofree char *svg = ts_canvas_svg_finish(c);
  /* The hovered mark, where the full drawing has it, and nothing else. */
  g_assert_cmpuint(count(svg, "id=\"trial-"), ==, 1);
  g_assert_null(strstr(svg, "class=\"axes\""));
  g_assert_null(strstr(svg, "class=\"background\""));
  g_assert_cmpuint(view->n_drawn, ==, n_drawn);
  g_autofree char *full = render_svg(view);
  double x0, y0, x1, y1;
  circle_of(svg, dom_id, &x0, &y0);
  circle_of(full, dom_id, &x1, &y1);
  g_assert_cmpfloat(x0, ==, x1);
  g_assert_cmpfloat(y0, ==, y1);
  view->hover = 0;
}

static void
test_hover_overlay(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = history_trials();
  for (guint i = 0; i < trials->len; i++) {
    TsStudioTrial *t = trials->pdata[i];
    t->predicted_ns = t->median_ns * 1.5;
    t->intensity = 1 + i;
    t->gflops = 10 * (1 + i);
  }
  g_autoptr(TsStudioView) roof = ts_studio_roofline_new(&f.workload, trials);
  g_autoptr(TsStudioView) hist = ts_studio_history_new(&f.workload, trials, NULL, 0);
  g_autoptr(TsStudioView) pred = ts_studio_predicted_new(&f.workload, trials);
  check_overlay(roof, 5, "trial-5");
  check_overlay(hist, 6, "trial-6");
  check_overlay(pred, 7, "trial-7");
  g_assert_true(ts__plot_has_hover_overlay(roof));
  /* Nothing hovered: an empty overlay. */
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(W, H);
  g_assert_true(ts__plot_draw_hover(roof, c, W, H));
  g_autofree char *svg = ts_canvas_svg_finish(c);
  g_assert_null(strstr(svg, "id=\"trial-"));
  fixture_clear(&f);
}

/* ---- PNG export of every view ---- */

static void
draw_view(TsCanvas *c, double w, double h, gpointer view)
{
  ts_studio_view_draw(view, c, w, h);
}

static void
check_png(TsStudioView *view, const char *dir)
{
  g_autofree char *name = g_strdup_printf("%s.png", ts_studio_view_name(view));
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_canvas_export(path, W, H, 2, draw_view, view, &error));
  g_assert_no_error(error);
  cairo_surface_t *s = cairo_image_surface_create_from_png(path);
  g_assert_cmpint(cairo_surface_status(s), ==, CAIRO_STATUS_SUCCESS);
  g_assert_cmpint(cairo_image_surface_get_width(s), ==, 2 * W);
  g_assert_cmpint(cairo_image_surface_get_height(s), ==, 2 * H);
  /* Opaque white background, and something drawn on it: not blank. */
  const guint8 *px = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  guint inked = 0, opaque = 0;
  for (int y = 0; y < 2 * H; y++)
    for (int x = 0; x < 2 * W; x++) {
      const guint8 *p = px + y * stride + 4 * x; /* BGRA */
      opaque += p[3] == 255;
      inked += p[0] < 200 || p[1] < 200 || p[2] < 200;
    }
  g_assert_cmpuint(opaque, ==, (guint)(4 * W * H));
  g_assert_cmpuint(inked, >, 2000);
  cairo_surface_destroy(s);
  g_remove(path);
}

static void
test_png(void)
{
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = roofline_trials();
  g_autoptr(GPtrArray) htrials = history_trials();
  g_autoptr(GPtrArray) runs = history_runs();
  for (guint i = 0; i < htrials->len; i++) {
    TsStudioTrial *t = htrials->pdata[i];
    t->predicted_ns = t->median_ns * (1 + 0.1 * (i % 4));
  }
  g_autofree char *dir = g_dir_make_tmp("ts-plots-XXXXXX", NULL);
  g_autoptr(TsStudioView) roof = ts_studio_roofline_new(&f.workload, trials);
  g_autoptr(TsStudioView) hist =
      ts_studio_history_new(&f.workload, htrials, runs, TS_STUDIO_HISTORY_BY_INDEX);
  g_autoptr(TsStudioView) pred = ts_studio_predicted_new(&f.workload, htrials);
  check_png(roof, dir);
  check_png(hist, dir);
  check_png(pred, dir);
  g_rmdir(dir);
  fixture_clear(&f);
}

/* For people, not assertions: TS_PLOTS_GALLERY=DIR writes every view, light and dark, SVG and
 * PNG, over a few hundred synthetic trials, to look at after a change to the drawing. */
static void
test_gallery(void)
{
  const char *dir = g_getenv("TS_PLOTS_GALLERY");
  if (dir == NULL) {
    g_test_skip("set TS_PLOTS_GALLERY=DIR to write the views there");
    return;
  }
  Fixture f;
  fixture_init(&f, TRUE);
  g_autoptr(GPtrArray) trials = g_ptr_array_new_with_free_func(trial_free);
  g_autoptr(GPtrArray) runs = history_runs();
  GRand *rand = g_rand_new_with_seed(7);
  const double flops = 2.0 * 256 * 256 * 256;
  const char *env_n = g_getenv("TS_PLOTS_GALLERY_TRIALS");
  gint64 n = env_n ? MAX(4, g_ascii_strtoll(env_n, NULL, 10)) : 400, per_run = n / 4;
  for (gint64 id = 1; id <= n; id++) {
    gint64 run = MIN(4, 1 + (id - 1) / per_run);
    const char *strategy = ((TsStudioRun *)runs->pdata[run - 1])->strategy;
    double u = g_rand_double(rand);
    if (u < 0.08) {
      add_trial(trials, id, run, 1 + g_rand_int_range(rand, 0, 4), NAN, NAN, NAN, strategy);
      continue;
    }
    /* Later trials of a run are better on average: a search that learns. */
    double skill = 0.3 + 0.7 * ((id - 1) % per_run) / (double)per_run * g_rand_double(rand);
    double ai = 4 + 60 * g_rand_double(rand);
    double bound = MIN(1000, 50 * ai);
    double gf = bound * skill * (0.2 + 0.75 * g_rand_double(rand));
    TsStudioTrial *t = add_trial(trials, id, run, TS_DB_TRIAL_OK, flops / gf, ai, gf, strategy);
    t->predicted_ns = t->median_ns * exp(0.5 * (g_rand_double(rand) - 0.5));
    t->wall_s = id * 0.7 + (run - 1) * 40;
  }
  g_autoptr(TsStudioView) roof = ts_studio_roofline_new(&f.workload, trials);
  g_autoptr(TsStudioView) hist =
      ts_studio_history_new(&f.workload, trials, runs, TS_STUDIO_HISTORY_BY_INDEX);
  g_autoptr(TsStudioView) pred = ts_studio_predicted_new(&f.workload, trials);
  roof->hover = 17;
  TsStudioView *views[] = {roof, hist, pred};
  for (guint dark = 0; dark < 2; dark++)
    for (guint i = 0; i < G_N_ELEMENTS(views); i++) {
      ts_studio_view_set_theme(views[i], ts_studio_theme(dark));
      for (guint fmt = 0; fmt < 2; fmt++) {
        g_autofree char *name = g_strdup_printf("%s-%s.%s", ts_studio_view_name(views[i]),
                                                dark ? "dark" : "light", fmt ? "png" : "svg");
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autoptr(GError) error = NULL;
        g_assert_true(ts_canvas_export(path, W, H, 1, draw_view, views[i], &error));
      }
    }
  /* How long a window redraw takes: cairo at 800 x 500, the median of 9. */
  for (guint i = 0; i < G_N_ELEMENTS(views); i++) {
    cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, W, H);
    cairo_t *cr = cairo_create(surface);
    double ms[9];
    for (guint k = 0; k < G_N_ELEMENTS(ms); k++) {
      gint64 t0 = g_get_monotonic_time();
      g_autoptr(TsCanvas) canvas = ts_canvas_new_cairo(cr);
      ts_studio_view_draw(views[i], canvas, W, H);
      cairo_surface_flush(surface);
      ms[k] = (g_get_monotonic_time() - t0) / 1e3;
    }
    for (guint a = 0; a < G_N_ELEMENTS(ms); a++) /* 9 values: insertion sort */
      for (guint b = a; b > 0 && ms[b] < ms[b - 1]; b--) {
        double tmp = ms[b];
        ms[b] = ms[b - 1];
        ms[b - 1] = tmp;
      }
    /* What the widget paints while only the hover moves: the overlay. */
    views[i]->hover = 17;
    gint64 t0 = g_get_monotonic_time();
    for (guint k = 0; k < 100; k++) {
      g_autoptr(TsCanvas) canvas = ts_canvas_new_cairo(cr);
      ts__plot_draw_hover(views[i], canvas, W, H);
    }
    double hover_ms = (g_get_monotonic_time() - t0) / 1e3 / 100;
    g_test_message("%s, %" G_GINT64_FORMAT " trials: %.2f ms per cairo redraw, %.3f ms per hover "
                   "overlay",
                   ts_studio_view_name(views[i]), n, ms[4], hover_ms);
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
  }

  /* A GPU: tensor-core roofs far above the CUDA-core ones, two of them equal (bf16 and f16 on
   * Hopper), a gemm in bf16 held to its tensor roof. */
  TsProfCeilings *gpu = ts_prof_ceilings_new("cuda", "nvrtc 12.4");
  const struct {
    const char *name;
    TsProfCeilingKind kind;
    double value;
  } roofs[] = {{"fp8_tensor", TS_PROF_COMPUTE, 1450e3}, {"bf16_tensor", TS_PROF_COMPUTE, 740e3},
               {"f16_tensor", TS_PROF_COMPUTE, 740e3},  {"tf32_tensor", TS_PROF_COMPUTE, 370e3},
               {"f32", TS_PROF_COMPUTE, 51e3},          {"f64", TS_PROF_COMPUTE, 48e3},
               {"dram", TS_PROF_MEMORY, 3000},          {"l2", TS_PROF_MEMORY, 9000}};
  for (guint i = 0; i < G_N_ELEMENTS(roofs); i++)
    ts_prof_ceilings_set(gpu, roofs[i].name, roofs[i].kind, roofs[i].value, 0);
  TsStudioDevice h100 = {.id = 2,
                         .backend = "cuda",
                         .name = "NVIDIA H100 80GB HBM3",
                         .arch = "sm_90",
                         .ceilings = gpu};
  TsStudioWorkload gemm = {.op = "gemm",
                           .shape = "M=4096,N=4096,K=4096",
                           .dtype = "bf16",
                           .device = &h100,
                           .label = "gemm M=4096,N=4096,K=4096 bf16"};
  g_autoptr(GPtrArray) gpu_trials = g_ptr_array_new_with_free_func(trial_free);
  for (gint64 id = 1; id <= 200; id++) {
    double gf = 740e3 * (0.05 + 0.8 * g_random_double());
    add_trial(gpu_trials, id, 1, TS_DB_TRIAL_OK, 2.0 * 4096 * 4096 * 4096 / gf, 1365, gf, "model");
  }
  /* The fastest profiled: L1 and L2 traffic far above DRAM's (tiles reused on chip). */
  TsStudioTrial *fast = gpu_trials->pdata[0];
  for (guint i = 1; i < gpu_trials->len; i++)
    if (((TsStudioTrial *)gpu_trials->pdata[i])->gflops > fast->gflops)
      fast = gpu_trials->pdata[i];
  fast->best = TRUE;
  set_levels(fast, 480, 60, 9);
  g_autoptr(TsStudioView) gpu_view = ts_studio_roofline_new(&gemm, gpu_trials);
  g_autofree char *gpu_path = g_build_filename(dir, "roofline-gpu.png", NULL);
  g_assert_true(ts_canvas_export(gpu_path, W, H, 1, draw_view, gpu_view, NULL));
  ts_prof_ceilings_free(gpu);
  g_rand_free(rand);

  /* The empty states. */
  Fixture bare;
  fixture_init(&bare, FALSE);
  g_autoptr(GPtrArray) few = roofline_trials();
  g_autoptr(TsStudioView) roof0 = ts_studio_roofline_new(&bare.workload, few);
  g_autoptr(TsStudioView) pred0 = ts_studio_predicted_new(&bare.workload, few);
  TsStudioView *empties[] = {roof0, pred0};
  for (guint i = 0; i < G_N_ELEMENTS(empties); i++) {
    g_autofree char *name = g_strdup_printf("%s-empty.png", ts_studio_view_name(empties[i]));
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_assert_true(ts_canvas_export(path, W, H, 1, draw_view, empties[i], NULL));
  }
  fixture_clear(&bare);
  fixture_clear(&f);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/studio/plots/labels", test_labels);
  g_test_add_func("/studio/plots/axes", test_axes);
  g_test_add_func("/studio/plots/kendall", test_kendall);
  g_test_add_func("/studio/plots/roofline", test_roofline);
  g_test_add_func("/studio/plots/roofline-highlight", test_roofline_highlight);
  g_test_add_func("/studio/plots/roofline-no-ceilings", test_roofline_no_ceilings);
  g_test_add_func("/studio/plots/roofline-implausible", test_roofline_implausible);
  g_test_add_func("/studio/plots/roofline-levels", test_roofline_levels);
  g_test_add_func("/studio/plots/history", test_history);
  g_test_add_func("/studio/plots/history-wall", test_history_wall);
  g_test_add_func("/studio/plots/predicted", test_predicted);
  g_test_add_func("/studio/plots/hover-overlay", test_hover_overlay);
  g_test_add_func("/studio/plots/png", test_png);
  g_test_add_func("/studio/plots/gallery", test_gallery);
  return g_test_run();
}
