/* test-studio-lowering.c — the lowering and diff views as drawn for exports: the four stages
 * in order with every line that fits, a count of the lines cut when the view is short, the
 * changed lines of a diff with context, and a plain message when nothing changed. */
#include <string.h>

#include "ts-studio-view.h"

static guint
count(const char *haystack, const char *needle)
{
  guint n = 0;
  for (const char *p = strstr(haystack, needle); p; p = strstr(p + 1, needle))
    n++;
  return n;
}

static char *
render(TsStudioView *view, double w, double h)
{
  g_autoptr(TsCanvas) c = ts_canvas_new_svg(w, h);
  ts_studio_view_draw(view, c, w, h);
  return ts_canvas_svg_finish(c);
}

static TsStudioLowering *
lowering(guint target_lines)
{
  TsStudioLowering *l = g_new0(TsStudioLowering, 1);
  l->graph = g_strdup("graph gemm(A: f32[M,K], B: f32[K,N]) -> C\n");
  l->schedule = g_strdup("space: block(m=[64])\npoint: block(m=64)\n");
  l->tile = g_strdup("tile.load A\ntile.mma\ntile.store C\n");
  GString *t = g_string_new(NULL);
  for (guint i = 0; i < target_lines; i++)
    g_string_append_printf(t, "line_%u();\n", i);
  l->target = g_string_free(t, FALSE);
  l->target_language = g_strdup("C");
  return l;
}

static void
test_stages(void)
{
  g_autoptr(TsStudioView) v = ts_studio_lowering_view_new(lowering(5), "gemm — trial 3");
  g_assert_cmpstr(ts_studio_view_name(v), ==, "lowering");
  g_assert_cmpuint(v->n_marks, ==, 1 + 2 + 3 + 5);
  g_assert_cmpstr(ts_studio_view_unit(v), ==, "lines");
  g_autofree char *svg = render(v, 1200, 800);
  const char *g = strstr(svg, "id=\"stage-graph\""), *s = strstr(svg, "id=\"stage-schedule\"");
  const char *t = strstr(svg, "id=\"stage-tile\""), *x = strstr(svg, "id=\"stage-target\"");
  g_assert_true(g && s && t && x && g < s && s < t && t < x);
  g_assert_nonnull(strstr(svg, ">tile.mma</text>"));
  g_assert_nonnull(strstr(svg, "Target IR (C)"));
  g_assert_cmpuint(count(svg, ">line_"), ==, 5);
  g_assert_cmpuint(v->n_drawn, ==, 1 + 2 + 3 + 5);
  g_assert_null(strstr(svg, "more lines"));
}

static void
test_cut(void)
{
  g_autoptr(TsStudioView) v = ts_studio_lowering_view_new(lowering(500), NULL);
  g_autofree char *svg = render(v, 1200, 400);
  guint shown = count(svg, ">line_");
  g_assert_cmpuint(v->n_marks, ==, 1 + 2 + 3 + 500);
  g_assert_cmpuint(v->n_drawn, <, v->n_marks);
  g_assert_cmpuint(shown, >, 5);
  g_assert_cmpuint(shown, <, 500);
  g_autofree char *more = g_strdup_printf("… %u more lines", 500 - shown);
  g_assert_nonnull(strstr(svg, more));
}

static void
test_diff(void)
{
  GString *a = g_string_new(NULL), *b = g_string_new(NULL);
  for (guint i = 0; i < 40; i++) {
    g_string_append_printf(a, "same_%u\n", i);
    g_string_append_printf(b, "same_%u\n", i);
    if (i == 20) {
      g_string_append(a, "old_unroll(4);\n");
      g_string_append(b, "new_unroll(8);\nextra();\n");
    }
  }
  g_autoptr(TsStudioView) v = ts_studio_diff_view_new(ts_studio_diff(a->str, b->str), "trial 1",
                                                      "trial 2");
  g_autofree char *svg = render(v, 1000, 700);
  g_assert_cmpuint(v->n_marks, ==, 3);
  g_assert_cmpuint(v->n_drawn, ==, 3); /* the changed lines, not their context */
  g_assert_cmpuint(count(svg, "class=\"diff del\""), ==, 1);
  g_assert_cmpuint(count(svg, "class=\"diff add\""), ==, 2);
  /* Three lines of context on each side of the change, no more. */
  g_assert_cmpuint(count(svg, "class=\"diff same\""), ==, 6);
  g_assert_nonnull(strstr(svg, "3 lines changed"));
  g_assert_nonnull(strstr(svg, "new_unroll(8);"));

  g_autoptr(TsStudioView) same = ts_studio_diff_view_new(ts_studio_diff(a->str, a->str), "x", "y");
  g_autofree char *svg2 = render(same, 1000, 700);
  g_assert_nonnull(strstr(svg2, "the same target source"));
  g_string_free(a, TRUE);
  g_string_free(b, TRUE);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/studio/lowering/stages", test_stages);
  g_test_add_func("/studio/lowering/cut", test_cut);
  g_test_add_func("/studio/lowering/diff", test_diff);
  return g_test_run();
}
