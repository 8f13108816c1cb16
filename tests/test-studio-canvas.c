/* test-studio-canvas.c — the canvas's SVG sink keeps groups, ids and titles, writes valid
 * numbers whatever the locale, closes what it opened; both sinks export files; a wrong
 * extension is an error naming the path. */
#include <glib/gstdio.h>
#include <locale.h>
#include <math.h>
#include <string.h>

#include "ts-studio-canvas.h"
#include "ts-studio-data.h"
#include "ts-studio-theme.h"

static guint
count(const char *haystack, const char *needle)
{
  guint n = 0;
  for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static void
draw_sample(TsCanvas *c, double w, double h, gpointer data)
{
  const TsStudioTheme *theme = ts_studio_theme(FALSE);
  ts_canvas_fill_background(c, theme->background);
  ts_canvas_begin(c, "plot", NULL, NULL);
  ts_canvas_clip(c, 10, 10, w - 20, h - 20);
  for (int i = 0; i < 3; i++) {
    g_autofree char *id = g_strdup_printf("trial-%d", i + 1);
    g_autofree char *title = g_strdup_printf("trial %d <a&b>", i + 1);
    ts_canvas_begin(c, "trial ok", id, title);
    ts_canvas_set_color(c, theme->status[0]);
    ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, 20 + 10 * i, 30.5, 3);
    ts_canvas_end(c);
  }
  ts_canvas_set_dash(c, 4, 2);
  ts_canvas_line(c, 0, 0, w, h);
  ts_canvas_marker(c, TS_CANVAS_MARKER_CROSS, 50, 50, 3);
  ts_canvas_marker(c, TS_CANVAS_MARKER_DIAMOND, 60, 50, 3);
  ts_canvas_rect(c, 1, 2, 3, 4, FALSE);
  ts_canvas_end(c);
  ts_canvas_text(c, w / 2, h - 2, "GFLOP/s", TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_END, 0);
  ts_canvas_text(c, 5, h / 2, "time", TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_START, -G_PI / 2);
  /* Left open on purpose: finishing closes it. */
  ts_canvas_begin(c, "open", NULL, NULL);
}

static void
test_svg_semantics(void)
{
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(200, 100);
  g_assert_true(ts_canvas_is_svg(c));
  draw_sample(c, 200, 100, NULL);
  g_autofree char *svg = ts_canvas_svg_finish(c);
  g_assert_cmpuint(count(svg, "class=\"trial ok\""), ==, 3);
  g_assert_nonnull(strstr(svg, "id=\"trial-2\""));
  g_assert_nonnull(strstr(svg, "<title>trial 3 &lt;a&amp;b&gt;</title>"));
  g_assert_cmpuint(count(svg, "<circle"), ==, 3);
  g_assert_nonnull(strstr(svg, "cy=\"30.50\""));
  g_assert_nonnull(strstr(svg, "stroke-dasharray=\"4.00,2.00\""));
  g_assert_nonnull(strstr(svg, ">GFLOP/s</text>"));
  g_assert_nonnull(strstr(svg, "transform=\"rotate(-90.00"));
  g_assert_cmpuint(count(svg, "<g"), ==, count(svg, "</g>"));
  g_assert_true(g_str_has_suffix(svg, "</svg>\n"));

  /* It parses as XML. */
  GMarkupParser parser = {0};
  g_autoptr(GMarkupParseContext) ctx = g_markup_parse_context_new(&parser, 0, NULL, NULL);
  g_autoptr(GError) error = NULL;
  const char *body = strstr(svg, "<svg");
  g_assert_true(g_markup_parse_context_parse(ctx, body, -1, &error));
  g_assert_true(g_markup_parse_context_end_parse(ctx, &error));
  g_assert_no_error(error);
}

static void
test_locale(void)
{
  /* A decimal comma would break every coordinate. */
  if (setlocale(LC_NUMERIC, "de_DE.UTF-8") == NULL && setlocale(LC_NUMERIC, "fr_FR.UTF-8") == NULL) {
    g_test_skip("no locale with a decimal comma installed");
    return;
  }
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(10, 10);
  ts_canvas_marker(c, TS_CANVAS_MARKER_CIRCLE, 1.25, 2.5, 0.5);
  g_autofree char *svg = ts_canvas_svg_finish(c);
  setlocale(LC_NUMERIC, "C");
  g_assert_nonnull(strstr(svg, "cx=\"1.25\" cy=\"2.50\" r=\"0.50\""));
}

static void
test_text_size(void)
{
  g_autoptr(TsCanvas) svg = ts_canvas_new_svg(10, 10);
  cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 10, 10);
  cairo_t *cr = cairo_create(s);
  g_autoptr(TsCanvas) img = ts_canvas_new_cairo(cr);
  double w1, h1, w2, h2, w3;
  ts_canvas_set_font_size(svg, 12);
  ts_canvas_set_font_size(img, 12);
  ts_canvas_text_size(svg, "roofline", &w1, &h1);
  ts_canvas_text_size(img, "roofline", &w2, &h2);
  g_assert_cmpfloat(w1, >, 10);
  g_assert_cmpfloat(w1, ==, w2);
  g_assert_cmpfloat(h1, ==, h2);
  ts_canvas_set_font_size(svg, 24);
  ts_canvas_text_size(svg, "roofline", &w3, NULL);
  g_assert_cmpfloat(w3, >, 1.5 * w1);
  g_clear_pointer(&img, ts_canvas_free);
  cairo_destroy(cr);
  cairo_surface_destroy(s);
}

static void
test_export(void)
{
  g_autofree char *dir = g_dir_make_tmp("ts-canvas-XXXXXX", NULL);
  g_autofree char *svg = g_build_filename(dir, "a.svg", NULL);
  g_autofree char *png = g_build_filename(dir, "a.png", NULL);
  g_autofree char *bad = g_build_filename(dir, "a.jpg", NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_canvas_export(svg, 200, 100, 1, draw_sample, NULL, &error));
  g_assert_no_error(error);
  g_assert_true(ts_canvas_export(png, 200, 100, 2, draw_sample, NULL, &error));
  g_assert_no_error(error);

  /* The PNG is 2x and not blank: the green markers are in it. */
  cairo_surface_t *s = cairo_image_surface_create_from_png(png);
  g_assert_cmpint(cairo_surface_status(s), ==, CAIRO_STATUS_SUCCESS);
  g_assert_cmpint(cairo_image_surface_get_width(s), ==, 400);
  g_assert_cmpint(cairo_image_surface_get_height(s), ==, 200);
  const guint8 *px = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  guint greenish = 0;
  for (int y = 0; y < 200; y++)
    for (int x = 0; x < 400; x++) {
      const guint8 *p = px + y * stride + 4 * x; /* BGRA */
      if (p[1] > 120 && p[2] < 80 && p[0] < 140)
        greenish++;
    }
  g_assert_cmpuint(greenish, >, 50);
  cairo_surface_destroy(s);

  g_assert_false(ts_canvas_export(bad, 10, 10, 1, draw_sample, NULL, &error));
  g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT);
  g_assert_nonnull(strstr(error->message, "a.jpg"));
  g_clear_error(&error);
  g_autofree char *nodir = g_build_filename(dir, "no", "such", "x.svg", NULL);
  g_assert_false(ts_canvas_export(nodir, 10, 10, 1, draw_sample, NULL, &error));
  g_assert_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT);
  g_remove(svg);
  g_remove(png);
  g_rmdir(dir);
}

static void
test_theme(void)
{
  const TsStudioTheme *l = ts_studio_theme(FALSE), *d = ts_studio_theme(TRUE);
  g_assert_false(l->dark);
  g_assert_true(d->dark);
  /* Background and foreground contrast in both. */
  g_assert_cmpfloat(fabs(l->background.r - l->foreground.r), >, 0.7);
  g_assert_cmpfloat(fabs(d->background.r - d->foreground.r), >, 0.7);
  TsRgba a = ts_studio_theme_series(l, "annealing"), b = ts_studio_theme_series(l, "random");
  g_assert_false(a.r == b.r && a.g == b.g && a.b == b.b);
  TsRgba x = ts_studio_theme_series(l, "some kernel"), y = ts_studio_theme_series(l, "some kernel");
  g_assert_true(x.r == y.r && x.g == y.g && x.b == y.b);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/studio/canvas/svg", test_svg_semantics);
  g_test_add_func("/studio/canvas/locale", test_locale);
  g_test_add_func("/studio/canvas/text-size", test_text_size);
  g_test_add_func("/studio/canvas/export", test_export);
  g_test_add_func("/studio/canvas/theme", test_theme);
  return g_test_run();
}
