/* test-studio-plot-area.c — the plot widget in a real window: it draws its view at its own size,
 * a placeholder without one, turns dark with the theme, keeps the selection it is given and
 * owns its view. Needs a display (run under xvfb-run); skipped without one. */
#include <gtk/gtk.h>
#include <math.h>
#include <stdlib.h>

#include "ts-studio-widgets.h"

static void
trial_free(gpointer data)
{
  ts_studio_trial_free(data);
}

static GPtrArray *
make_trials(void)
{
  GPtrArray *trials = g_ptr_array_new_with_free_func(trial_free);
  for (int i = 1; i <= 3; i++) {
    TsStudioTrial *t = g_new0(TsStudioTrial, 1);
    t->id = i;
    t->index = i - 1;
    t->status = TS_DB_TRIAL_OK;
    t->schedule = g_strdup_printf("tile=%d", 16 * i);
    t->strategy = g_strdup("random");
    t->median_ns = 1e6 / i;
    t->min_ns = t->max_ns = t->predicted_ns = t->wall_s = t->bound_gflops = t->fraction = NAN;
    t->intensity = 4 * i;
    t->gflops = 100 * i;
    g_ptr_array_add(trials, t);
  }
  return trials;
}

static void
iterate(guint ms)
{
  gint64 until = g_get_monotonic_time() + ms * 1000;
  while (g_get_monotonic_time() < until)
    g_main_context_iteration(NULL, FALSE);
}

/* What the widget draws at its allocated size, rendered with cairo. */
static cairo_surface_t *
render(GtkWidget *area)
{
  int w = gtk_widget_get_width(area), h = gtk_widget_get_height(area);
  g_assert_cmpint(w, >, 100);
  g_assert_cmpint(h, >, 100);
  GtkSnapshot *snapshot = gtk_snapshot_new();
  GTK_WIDGET_GET_CLASS(area)->snapshot(area, snapshot);
  GskRenderNode *node = gtk_snapshot_free_to_node(snapshot);
  g_assert_nonnull(node);
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w, h);
  cairo_t *cr = cairo_create(surface);
  gsk_render_node_draw(node, cr);
  cairo_destroy(cr);
  gsk_render_node_unref(node);
  cairo_surface_flush(surface);
  return surface;
}

/* Mean brightness (0..255) of a 4x4 patch at (x, y). */
static double
brightness(cairo_surface_t *s, int x, int y)
{
  const guint8 *px = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  double sum = 0;
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 4; i++) {
      const guint8 *p = px + (y + j) * stride + 4 * (x + i);
      sum += (p[0] + p[1] + p[2]) / 3.0;
    }
  return sum / 16;
}

static guint
ink(cairo_surface_t *s, double background)
{
  const guint8 *px = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  guint n = 0;
  for (int y = 0; y < cairo_image_surface_get_height(s); y++)
    for (int x = 0; x < cairo_image_surface_get_width(s); x++) {
      const guint8 *p = px + y * stride + 4 * x;
      n += fabs((p[0] + p[1] + p[2]) / 3.0 - background) > 60;
    }
  return n;
}

/* The widget's controller of that type, to feed it events as GTK would. */
static GObject *
controller(GtkWidget *widget, GType type)
{
  g_autoptr(GListModel) list = gtk_widget_observe_controllers(widget);
  for (guint i = 0; i < g_list_model_get_n_items(list); i++) {
    g_autoptr(GObject) c = g_list_model_get_item(list, i);
    if (G_TYPE_CHECK_INSTANCE_TYPE(c, type))
      return c; /* the widget keeps it alive */
  }
  g_assert_not_reached();
}

/* A pixel of the mark with that id, found through the view's own hit test. */
static void
find_mark(GtkWidget *widget, TsStudioView *view, gint64 id, double *mx, double *my)
{
  int w = gtk_widget_get_width(widget), h = gtk_widget_get_height(widget);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      if (ts_studio_view_hit(view, x, y, w, h) == id) {
        /* Walk to the centre: the middle of the run of hits along this row and column. */
        int x1 = x, y1 = y;
        while (ts_studio_view_hit(view, x1 + 1, y, w, h) == id)
          x1++;
        *mx = (x + x1) / 2.0;
        while (ts_studio_view_hit(view, *mx, y1 + 1, w, h) == id)
          y1++;
        *my = y + 6; /* the first hit row is 6 px (the hit radius) above the centre */
        return;
      }
  g_assert_not_reached();
}

static void
on_activated(TsStudioPlotArea *area, gint64 id, gboolean extend, gint64 *out)
{
  *out = extend ? -id : id;
}

static void
on_brushed(TsStudioPlotArea *area, GArray *ids, GArray **out)
{
  *out = ids;
}

static void
set_dark(gboolean dark)
{
  g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", dark, NULL);
  iterate(200);
}

static void
test_plot_area(void)
{
  GtkWidget *window = gtk_window_new();
  gtk_window_set_default_size(GTK_WINDOW(window), 640, 400);
  GtkWidget *widget = ts_studio_plot_area_new();
  TsStudioPlotArea *area = TS_STUDIO_PLOT_AREA(widget);
  gtk_window_set_child(GTK_WINDOW(window), widget);
  set_dark(FALSE);
  gtk_window_present(GTK_WINDOW(window));
  for (int i = 0; i < 500 && !(gtk_widget_get_mapped(widget) && gtk_widget_get_width(widget) > 100);
       i++)
    iterate(10);

  /* No view: the placeholder on a light background. */
  ts_studio_plot_area_set_view(area, NULL, "Pick a workload in the sidebar");
  g_assert_null(ts_studio_plot_area_get_view(area));
  cairo_surface_t *s = render(widget);
  g_assert_cmpfloat(brightness(s, 2, 2), >, 240);
  g_assert_cmpuint(ink(s, 255), >, 50); /* the text */
  cairo_surface_destroy(s);

  /* A view: drawn at the widget's size, much more ink than the placeholder. */
  TsStudioDevice device = {.id = 1, .backend = "cpu", .name = "Test CPU"};
  TsStudioWorkload workload = {.op = "gemm",
                               .shape = "M=64,N=64,K=64",
                               .dtype = "f32",
                               .device = &device,
                               .label = "gemm 64"};
  g_autoptr(GPtrArray) trials = make_trials();
  TsStudioView *view = ts_studio_roofline_new(&workload, trials);
  ts_studio_plot_area_set_view(area, view, NULL);
  g_assert_true(ts_studio_plot_area_get_view(area) == view);
  ts_studio_plot_area_set_selected(area, 2);
  g_assert_cmpint(view->selected, ==, 2);
  s = render(widget);
  g_assert_cmpfloat(brightness(s, 2, 2), >, 240);
  g_assert_cmpuint(ink(s, 255), >, 1000);
  g_assert_cmpuint(view->n_drawn, ==, 3);
  cairo_surface_destroy(s);

  /* The pointer over trial 2: it is hovered, drawn ringed in the highlight colour (over the
   * kept drawing), and a click on it selects it and says so. */
  double mx, my;
  find_mark(widget, view, 2, &mx, &my);
  GObject *motion = controller(widget, GTK_TYPE_EVENT_CONTROLLER_MOTION);
  g_signal_emit_by_name(motion, "motion", mx, my);
  g_assert_cmpint(view->hover, ==, 2);
  s = render(widget);
  const TsStudioTheme *light = ts_studio_theme(FALSE);
  const guint8 *px = cairo_image_surface_get_data(s);
  int stride = cairo_image_surface_get_stride(s);
  /* The outer ring of a hovered mark spans 8.5 to 10.5 px from its centre. */
  const guint8 *ring = px + (int)my * stride + 4 * (int)(mx + 9.5);
  g_assert_cmpint(abs(ring[2] - (int)(light->highlight.r * 255)), <, 40);
  g_assert_cmpint(abs(ring[1] - (int)(light->highlight.g * 255)), <, 40);
  g_assert_cmpint(abs(ring[0] - (int)(light->highlight.b * 255)), <, 40);
  cairo_surface_destroy(s);
  g_signal_emit_by_name(motion, "leave");
  g_assert_cmpint(view->hover, ==, 0);

  /* The wheel zooms about the pointer (the mark under it stays there), a drag pans, 0 shows the
   * whole plot again. */
  g_signal_emit_by_name(motion, "motion", mx, my);
  GObject *scroll = controller(widget, GTK_TYPE_EVENT_CONTROLLER_SCROLL);
  gboolean handled = FALSE;
  g_signal_emit_by_name(scroll, "scroll", 0.0, -4.0, &handled);
  g_assert_true(handled);
  g_assert_true(view->zoomed);
  double zx, zy;
  find_mark(widget, view, 2, &zx, &zy);
  g_assert_cmpfloat(fabs(zx - mx), <, 2);
  g_assert_cmpfloat(fabs(zy - my), <, 2);
  double x0 = view->zx0;
  GObject *drag = controller(widget, GTK_TYPE_GESTURE_DRAG);
  g_signal_emit_by_name(drag, "drag-begin", mx, my);
  g_signal_emit_by_name(drag, "drag-update", 40.0, 0.0);
  g_assert_cmpfloat(view->zx0, <, x0);
  GObject *key = controller(widget, GTK_TYPE_EVENT_CONTROLLER_KEY);
  g_signal_emit_by_name(key, "key-pressed", GDK_KEY_0, 0, 0, &handled);
  g_assert_true(handled);
  g_assert_false(view->zoomed);
  g_signal_emit_by_name(motion, "leave");
  s = render(widget);
  ring = cairo_image_surface_get_data(s) + (int)my * stride + 4 * (int)(mx + 9.5);
  /* The hover ring is gone; the selection's (trial 2 is selected) is the foreground's. */
  g_assert_cmpint(abs(ring[2] - (int)(light->highlight.r * 255)), >, 100);
  g_assert_cmpint(abs(ring[2] - (int)(light->foreground.r * 255)), <, 40);
  cairo_surface_destroy(s);

  gint64 activated = 0;
  g_signal_connect(area, "mark-activated", G_CALLBACK(on_activated), &activated);
  GObject *click = controller(widget, GTK_TYPE_GESTURE_CLICK);
  g_signal_emit_by_name(click, "pressed", 1, mx, my);
  g_assert_cmpint(activated, ==, 2);
  g_assert_cmpint(view->selected, ==, 2);
  activated = 0;
  g_signal_emit_by_name(click, "pressed", 1, 3.0, 3.0); /* beside every mark */
  g_assert_cmpint(activated, ==, 0);
  g_assert_cmpint(view->selected, ==, 2);
  /* Ctrl+click and Shift+click extend the selection; a plain click replaces it. */
  g_assert_cmpint(ts_studio_plot_area_click(area, mx, my, GDK_CONTROL_MASK), ==, 2);
  g_assert_cmpint(activated, ==, -2);
  g_assert_cmpint(ts_studio_plot_area_click(area, mx, my, GDK_SHIFT_MASK), ==, 2);
  g_assert_cmpint(activated, ==, -2);
  g_assert_cmpint(ts_studio_plot_area_click(area, mx, my, 0), ==, 2);
  g_assert_cmpint(activated, ==, 2);

  /* A brush (Shift+drag) around marks 1 and 2 selects both, and says so; the rectangle is
   * given corner to corner in any order. */
  GArray *brushed = NULL;
  g_signal_connect(area, "marks-brushed", G_CALLBACK(on_brushed), &brushed);
  double m1x, m1y, m3x, m3y;
  find_mark(widget, view, 1, &m1x, &m1y);
  find_mark(widget, view, 3, &m3x, &m3y);
  g_autoptr(GArray) two =
      ts_studio_plot_area_brush(area, MAX(m1x, mx) + 8, MAX(m1y, my) + 8, MIN(m1x, mx) - 8,
                                MIN(m1y, my) - 8);
  g_assert_cmpuint(two->len, ==, 2);
  g_assert_cmpint(g_array_index(two, gint64, 0), ==, 1);
  g_assert_cmpint(g_array_index(two, gint64, 1), ==, 2);
  g_assert_true(brushed == two);
  g_assert_cmpint(view->selected, ==, 1);
  g_assert_true(ts_studio_view_is_selected(view, 2));
  g_assert_false(ts_studio_view_is_selected(view, 3));
  /* Both drawn selected: a foreground ring beside each, none beside mark 3. */
  s = render(widget);
  const double *marks[][2] = {{&m1x, &m1y}, {&mx, &my}, {&m3x, &m3y}};
  for (guint i = 0; i < 3; i++) {
    /* The ring's darkest pixel along the row right of the centre (anti-aliased edges). */
    int d = 255;
    for (int dx = 7; dx <= 11; dx++) {
      guint8 *pix = cairo_image_surface_get_data(s) + (int)*marks[i][1] * stride +
                    4 * (int)(*marks[i][0] + dx);
      d = MIN(d, abs(pix[2] - (int)(light->foreground.r * 255)));
    }
    if (i < 2)
      g_assert_cmpint(d, <, 40);
    else
      g_assert_cmpint(d, >, 100);
  }
  cairo_surface_destroy(s);
  /* An empty rectangle selects nothing; a click makes one selected again. */
  g_autoptr(GArray) none = ts_studio_plot_area_brush(area, 2, 2, 6, 6);
  g_assert_cmpuint(none->len, ==, 0);
  g_assert_cmpint(view->selected, ==, 0);
  g_assert_null(view->selection);
  ts_studio_plot_area_set_selection(area, (const gint64[]){3, 1}, 2);
  g_assert_true(ts_studio_view_is_selected(view, 1) && ts_studio_view_is_selected(view, 3));
  ts_studio_plot_area_set_selected(area, 2);
  g_assert_null(view->selection);
  g_assert_false(ts_studio_view_is_selected(view, 3));

  /* The desktop turns dark: so does the plot, with no call from the window. */
  set_dark(TRUE);
  s = render(widget);
  g_assert_cmpfloat(brightness(s, 2, 2), <, 60);
  g_assert_true(view->theme->dark);
  cairo_surface_destroy(s);
  set_dark(FALSE);
  s = render(widget);
  g_assert_cmpfloat(brightness(s, 2, 2), >, 240);
  cairo_surface_destroy(s);

  /* A new view replaces (and frees) the old one. */
  ts_studio_plot_area_set_view(area, ts_studio_history_new(&workload, trials, NULL, 0), NULL);
  g_assert_cmpstr(ts_studio_view_name(ts_studio_plot_area_get_view(area)), ==, "history");
  gtk_window_destroy(GTK_WINDOW(window));
  iterate(50);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  /* No accessibility bus under Xvfb: GTK would warn, and warnings are fatal in tests. No GL
   * either: Xvfb has no GPU, and Mesa's software driver, unloaded at exit, leaves 128 bytes that
   * LeakSanitizer reports in an unknown module (a bare GTK window does the same). The widget
   * draws with cairo whatever the renderer. */
  g_setenv("GTK_A11Y", "none", TRUE);
  g_setenv("GDK_DEBUG", "gl-disable", FALSE);
  if (!gtk_init_check()) {
    g_print("1..0 # SKIP no display (run under xvfb-run)\n");
    return 0;
  }
  g_test_add_func("/studio/plot-area/widget", test_plot_area);
  return g_test_run();
}
