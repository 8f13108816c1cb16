/* ts-studio-plot-area.c — the widget that shows one trial plot (roofline, history, predicted)
 * in the window: it draws the view with cairo at the widget's size (the same drawing code as the
 * export), highlights the mark under the pointer and shows its description as a tooltip, and
 * selects a mark on click.
 *
 * Dark or light: the widget reads its own CSS foreground colour and draws with the dark theme
 * when that colour is light. So it follows whatever made the window dark — the application
 * setting gtk-application-prefer-dark-theme from the desktop's colour scheme, GTK_THEME=...:dark,
 * a dark theme name — and css_changed redraws it when that changes, with no signal to wire.
 *
 * Hover: a full redraw of a plot with thousands of trials takes tens of ms, too slow to follow
 * the pointer from mark to mark. The widget keeps the view drawn without hover as a texture and,
 * while only the hover moves, paints that texture plus the hovered mark alone
 * (ts__plot_draw_hover). Anything else that queues a draw (a new size, theme, selection, or the
 * window changing the view and calling gtk_widget_queue_draw) redraws the view whole.
 *
 * Zoom: the wheel zooms about the pointer, a drag pans the zoomed plot, + and - zoom about the
 * middle, 0 or Home shows the whole plot again (ts_studio_view_zoom).
 *
 * Brush: Shift+drag draws a rectangle; on release the trials inside it become the selection
 * ("marks-brushed"), as a rubber band does in a file manager, and the window selects them in
 * the trials list. The rectangle is painted over the kept texture, like the hover. */
#include "ts-studio-widgets.h"

#include "ts-studio-plot-private.h"

#include <math.h>

struct _TsStudioPlotArea {
  GtkWidget parent_instance;
  TsStudioView *view; /* owned; NULL shows placeholder */
  char *placeholder;
  GdkTexture *base; /* the view drawn with hover = 0, at base_w x base_h, scale, dark */
  int base_w, base_h, base_scale;
  gboolean base_dark;
  gboolean hover_only; /* the draw queued is for a change of hover alone */
  double pointer_x, pointer_y;
  gboolean pointer_in;
  double drag_last_x, drag_last_y; /* the drag's offset already applied */
  gboolean brushing;               /* a Shift+drag in progress: the rectangle below */
  double brush_x0, brush_y0, brush_x1, brush_y1;
};

G_DEFINE_FINAL_TYPE(TsStudioPlotArea, ts_studio_plot_area, GTK_TYPE_WIDGET)

enum { MARK_ACTIVATED, MARKS_BRUSHED, N_SIGNALS };
static guint signals[N_SIGNALS];

const TsStudioTheme *
ts_studio_widget_theme(GtkWidget *widget)
{
  GdkRGBA fg;
#if GTK_CHECK_VERSION(4, 10, 0)
  gtk_widget_get_color(widget, &fg);
#else
  gtk_style_context_get_color(gtk_widget_get_style_context(widget), &fg);
#endif
  /* Relative luminance (Rec. 709 weights): light text means a dark background. */
  return ts_studio_theme(0.2126 * fg.red + 0.7152 * fg.green + 0.0722 * fg.blue > 0.5);
}

static void
draw_placeholder(TsCanvas *canvas, const TsStudioTheme *theme, const char *text, double w, double h)
{
  ts_canvas_fill_background(canvas, theme->background);
  if (text == NULL || *text == '\0')
    return;
  ts_canvas_set_color(canvas, theme->muted);
  ts_canvas_set_font_size(canvas, 14);
  ts_canvas_text(canvas, w / 2, h / 2, text, TS_CANVAS_ALIGN_CENTER, TS_CANVAS_ALIGN_CENTER, 0);
}

static void
draw_brush(TsStudioPlotArea *self, TsCanvas *canvas, const TsStudioTheme *theme)
{
  double x = MIN(self->brush_x0, self->brush_x1), y = MIN(self->brush_y0, self->brush_y1);
  double w = fabs(self->brush_x1 - self->brush_x0), h = fabs(self->brush_y1 - self->brush_y0);
  ts_canvas_set_color(canvas, ts_studio_rgba_alpha(theme->highlight, 0.15));
  ts_canvas_rect(canvas, x, y, w, h, TRUE);
  ts_canvas_set_color(canvas, theme->highlight);
  ts_canvas_set_line_width(canvas, 1);
  ts_canvas_rect(canvas, x, y, w, h, FALSE);
}

/* The view without hover, rendered at the display's scale into a texture. */
static GdkTexture *
render_base(TsStudioView *view, int w, int h, int scale)
{
  gint64 hover = view->hover;
  view->hover = 0;
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, w * scale, h * scale);
  cairo_t *cr = cairo_create(surface);
  cairo_scale(cr, scale, scale);
  TsCanvas *canvas = ts_canvas_new_cairo(cr);
  ts_studio_view_draw(view, canvas, w, h);
  ts_canvas_free(canvas);
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  view->hover = hover;
  int stride = cairo_image_surface_get_stride(surface);
  /* cairo's ARGB32 is premultiplied BGRA in memory on little-endian machines, ARGB on big:
   * GDK_MEMORY_DEFAULT is that same layout. The bytes keep the surface alive. */
  g_autoptr(GBytes) bytes =
      g_bytes_new_with_free_func(cairo_image_surface_get_data(surface), (gsize)stride * h * scale,
                                 (GDestroyNotify)cairo_surface_destroy, surface);
  return gdk_memory_texture_new(w * scale, h * scale, GDK_MEMORY_DEFAULT, bytes, stride);
}

static void
plot_area_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
  TsStudioPlotArea *self = TS_STUDIO_PLOT_AREA(widget);
  int w = gtk_widget_get_width(widget), h = gtk_widget_get_height(widget);
  gboolean hover_only = self->hover_only;
  self->hover_only = FALSE;
  if (w <= 0 || h <= 0)
    return;
  const TsStudioTheme *theme = ts_studio_widget_theme(widget);
  gboolean dark = theme->dark;
  graphene_rect_t bounds = GRAPHENE_RECT_INIT(0, 0, w, h);
  if (self->view && ts__plot_has_hover_overlay(self->view)) {
    int scale = gtk_widget_get_scale_factor(widget);
    ts_studio_view_set_theme(self->view, theme);
    if (!(hover_only && self->base && self->base_w == w && self->base_h == h &&
          self->base_scale == scale && self->base_dark == dark)) {
      g_clear_object(&self->base);
      self->base = render_base(self->view, w, h, scale);
      self->base_w = w;
      self->base_h = h;
      self->base_scale = scale;
      self->base_dark = dark;
    }
    gtk_snapshot_append_texture(snapshot, self->base, &bounds);
    if (self->view->hover == 0 && !self->brushing)
      return;
    cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &bounds);
    TsCanvas *canvas = ts_canvas_new_cairo(cr);
    if (self->view->hover)
      ts__plot_draw_hover(self->view, canvas, w, h);
    if (self->brushing)
      draw_brush(self, canvas, theme);
    ts_canvas_free(canvas);
    cairo_destroy(cr);
    return;
  }
  /* Another kind of view (or none): drawn whole each time. */
  cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &bounds);
  TsCanvas *canvas = ts_canvas_new_cairo(cr);
  if (self->view) {
    ts_studio_view_set_theme(self->view, theme);
    ts_studio_view_draw(self->view, canvas, w, h);
  } else {
    draw_placeholder(canvas, theme, self->placeholder, w, h);
  }
  ts_canvas_free(canvas);
  cairo_destroy(cr);
}

static void
plot_area_css_changed(GtkWidget *widget, GtkCssStyleChange *change)
{
  GTK_WIDGET_CLASS(ts_studio_plot_area_parent_class)->css_changed(widget, change);
  gtk_widget_queue_draw(widget); /* the theme may have turned dark or light */
}

static void
plot_area_measure(GtkWidget *widget, GtkOrientation orientation, int for_size, int *minimum,
                  int *natural, int *minimum_baseline, int *natural_baseline)
{
  gboolean horizontal = orientation == GTK_ORIENTATION_HORIZONTAL;
  *minimum = horizontal ? 240 : 160; /* room for the margins, tick labels and a little plot */
  *natural = horizontal ? 720 : 440;
}

static gint64
hit(TsStudioPlotArea *self, double x, double y)
{
  if (self->view == NULL)
    return 0;
  GtkWidget *w = GTK_WIDGET(self);
  return ts_studio_view_hit(self->view, x, y, gtk_widget_get_width(w), gtk_widget_get_height(w));
}

static void
set_hover(TsStudioPlotArea *self, gint64 id)
{
  if (self->view == NULL || self->view->hover == id)
    return;
  self->view->hover = id;
  gtk_widget_set_cursor_from_name(GTK_WIDGET(self), id ? "pointer" : NULL);
  self->hover_only = TRUE;
  gtk_widget_queue_draw(GTK_WIDGET(self));
  /* The tooltip of the previous mark must not linger over the next one. */
  gtk_widget_trigger_tooltip_query(GTK_WIDGET(self));
}

static void
on_motion(GtkEventControllerMotion *motion, double x, double y, TsStudioPlotArea *self)
{
  self->pointer_x = x;
  self->pointer_y = y;
  self->pointer_in = TRUE;
  set_hover(self, hit(self, x, y));
}

static void
on_leave(GtkEventControllerMotion *motion, TsStudioPlotArea *self)
{
  self->pointer_in = FALSE;
  set_hover(self, 0);
}

/* The view changed as a whole (zoom, pan): drawn again from scratch. */
static void
redraw(TsStudioPlotArea *self)
{
  g_clear_object(&self->base);
  self->hover_only = FALSE;
  gtk_widget_queue_draw(GTK_WIDGET(self));
  gtk_widget_trigger_tooltip_query(GTK_WIDGET(self));
}

static void
zoom_at(TsStudioPlotArea *self, double factor, double x, double y)
{
  GtkWidget *w = GTK_WIDGET(self);
  double fx, fy;
  ts_studio_view_plot_fraction(self->view, x, y, gtk_widget_get_width(w),
                               gtk_widget_get_height(w), &fx, &fy);
  ts_studio_view_zoom(self->view, factor, fx, fy);
  redraw(self);
}

static gboolean
on_scroll(GtkEventControllerScroll *scroll, double dx, double dy, TsStudioPlotArea *self)
{
  if (self->view == NULL || dy == 0)
    return FALSE;
  GtkWidget *w = GTK_WIDGET(self);
  double x = self->pointer_in ? self->pointer_x : gtk_widget_get_width(w) / 2.0;
  double y = self->pointer_in ? self->pointer_y : gtk_widget_get_height(w) / 2.0;
  zoom_at(self, pow(1.25, -dy), x, y);
  return TRUE;
}

static void
on_drag_begin(GtkGestureDrag *drag, double x, double y, TsStudioPlotArea *self)
{
  self->drag_last_x = self->drag_last_y = 0;
  GdkModifierType state =
      gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(drag));
  self->brushing = self->view != NULL && (state & GDK_SHIFT_MASK) != 0;
  self->brush_x0 = self->brush_x1 = x;
  self->brush_y0 = self->brush_y1 = y;
}

static void
on_drag_update(GtkGestureDrag *drag, double dx, double dy, TsStudioPlotArea *self)
{
  if (self->brushing) {
    self->brush_x1 = self->brush_x0 + dx;
    self->brush_y1 = self->brush_y0 + dy;
    self->hover_only = TRUE; /* the plot is unchanged: only the rectangle moves */
    gtk_widget_queue_draw(GTK_WIDGET(self));
    return;
  }
  if (self->view == NULL || !self->view->zoomed)
    return;
  GtkWidget *w = GTK_WIDGET(self);
  double f0x, f0y, f1x, f1y;
  int width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
  ts_studio_view_plot_fraction(self->view, 0, 0, width, height, &f0x, &f0y);
  ts_studio_view_plot_fraction(self->view, dx - self->drag_last_x, dy - self->drag_last_y, width,
                               height, &f1x, &f1y);
  self->drag_last_x = dx;
  self->drag_last_y = dy;
  /* The data under the pointer follows it: the window moves the other way. */
  ts_studio_view_pan(self->view, -(f1x - f0x), -(f1y - f0y));
  redraw(self);
}

static void
on_drag_end(GtkGestureDrag *drag, double dx, double dy, TsStudioPlotArea *self)
{
  if (!self->brushing)
    return;
  self->brushing = FALSE;
  /* A Shift+click that barely moved is the click's (extend the selection), not a brush. */
  if (fabs(dx) < 4 && fabs(dy) < 4) {
    gtk_widget_queue_draw(GTK_WIDGET(self));
    return;
  }
  g_array_unref(ts_studio_plot_area_brush(self, self->brush_x0, self->brush_y0,
                                          self->brush_x0 + dx, self->brush_y0 + dy));
}

static gboolean
on_key(GtkEventControllerKey *key, guint keyval, guint keycode, GdkModifierType state,
       TsStudioPlotArea *self)
{
  if (self->view == NULL)
    return FALSE;
  GtkWidget *w = GTK_WIDGET(self);
  double cx = gtk_widget_get_width(w) / 2.0, cy = gtk_widget_get_height(w) / 2.0;
  switch (keyval) {
  case GDK_KEY_plus:
  case GDK_KEY_equal:
  case GDK_KEY_KP_Add:
    zoom_at(self, 1.5, cx, cy);
    return TRUE;
  case GDK_KEY_minus:
  case GDK_KEY_KP_Subtract:
    zoom_at(self, 1 / 1.5, cx, cy);
    return TRUE;
  case GDK_KEY_0:
  case GDK_KEY_KP_0:
  case GDK_KEY_Home:
    ts_studio_view_zoom_reset(self->view);
    redraw(self);
    return TRUE;
  default:
    return FALSE;
  }
}

/* A click on a mark selects it and tells the window; a click beside every mark keeps the
 * selection (the trials list and the lowering view stay on it). */
gint64
ts_studio_plot_area_click(TsStudioPlotArea *self, double x, double y, GdkModifierType state)
{
  g_return_val_if_fail(TS_STUDIO_IS_PLOT_AREA(self), 0);
  gint64 id = hit(self, x, y);
  if (id == 0)
    return 0;
  gboolean extend = (state & (GDK_CONTROL_MASK | GDK_SHIFT_MASK)) != 0;
  ts_studio_plot_area_set_selected(self, id);
  g_signal_emit(self, signals[MARK_ACTIVATED], 0, id, extend);
  return id;
}

static void
on_pressed(GtkGestureClick *gesture, int n_press, double x, double y, TsStudioPlotArea *self)
{
  gtk_widget_grab_focus(GTK_WIDGET(self));
  GdkModifierType state =
    gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(gesture));
  ts_studio_plot_area_click(self, x, y, state);
}

static gboolean
plot_area_query_tooltip(GtkWidget *widget, int x, int y, gboolean keyboard, GtkTooltip *tooltip)
{
  TsStudioPlotArea *self = TS_STUDIO_PLOT_AREA(widget);
  gint64 id = keyboard && self->view ? self->view->selected : hit(self, x, y);
  g_autofree char *text = self->view ? ts_studio_view_describe(self->view, id) : NULL;
  if (text == NULL)
    return FALSE;
  gtk_tooltip_set_text(tooltip, text);
  return TRUE;
}

static void
plot_area_dispose(GObject *object)
{
  TsStudioPlotArea *self = TS_STUDIO_PLOT_AREA(object);
  g_clear_pointer(&self->view, ts_studio_view_free);
  g_clear_pointer(&self->placeholder, g_free);
  g_clear_object(&self->base);
  G_OBJECT_CLASS(ts_studio_plot_area_parent_class)->dispose(object);
}

static void
ts_studio_plot_area_class_init(TsStudioPlotAreaClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
  object_class->dispose = plot_area_dispose;
  widget_class->snapshot = plot_area_snapshot;
  widget_class->measure = plot_area_measure;
  widget_class->css_changed = plot_area_css_changed;
  widget_class->query_tooltip = plot_area_query_tooltip;
  gtk_widget_class_set_css_name(widget_class, "tsplotarea");
  gtk_widget_class_set_accessible_role(widget_class, GTK_ACCESSIBLE_ROLE_IMG);

  /* TsStudioPlotArea::mark-activated: a mark (a trial id) was clicked. */
  signals[MARK_ACTIVATED] =
      g_signal_new("mark-activated", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                   NULL, G_TYPE_NONE, 2, G_TYPE_INT64, G_TYPE_BOOLEAN);
  /* TsStudioPlotArea::marks-brushed: a rectangle was drawn; the GArray of gint64 holds the
   * marks inside it (maybe none), now the selection. */
  signals[MARKS_BRUSHED] =
      g_signal_new("marks-brushed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                   NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
}

static void
ts_studio_plot_area_init(TsStudioPlotArea *self)
{
  GtkWidget *widget = GTK_WIDGET(self);
  gtk_widget_set_has_tooltip(widget, TRUE);
  gtk_widget_set_hexpand(widget, TRUE);
  gtk_widget_set_vexpand(widget, TRUE);

  GtkEventController *motion = gtk_event_controller_motion_new();
  g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
  g_signal_connect(motion, "leave", G_CALLBACK(on_leave), self);
  gtk_widget_add_controller(widget, motion);

  GtkGesture *click = gtk_gesture_click_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(click), GDK_BUTTON_PRIMARY);
  g_signal_connect(click, "pressed", G_CALLBACK(on_pressed), self);
  gtk_widget_add_controller(widget, GTK_EVENT_CONTROLLER(click));

  gtk_widget_set_focusable(widget, TRUE);
  GtkEventController *scroll =
      gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_VERTICAL);
  g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), self);
  gtk_widget_add_controller(widget, scroll);
  GtkGesture *drag = gtk_gesture_drag_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(drag), GDK_BUTTON_PRIMARY);
  g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), self);
  g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), self);
  g_signal_connect(drag, "drag-end", G_CALLBACK(on_drag_end), self);
  gtk_widget_add_controller(widget, GTK_EVENT_CONTROLLER(drag));
  GtkEventController *key = gtk_event_controller_key_new();
  g_signal_connect(key, "key-pressed", G_CALLBACK(on_key), self);
  gtk_widget_add_controller(widget, key);
}

GtkWidget *
ts_studio_plot_area_new(void)
{
  return g_object_new(TS_STUDIO_TYPE_PLOT_AREA, NULL);
}

void
ts_studio_plot_area_set_view(TsStudioPlotArea *area, TsStudioView *view, const char *placeholder)
{
  g_return_if_fail(TS_STUDIO_IS_PLOT_AREA(area));
  if (area->view != view) {
    g_clear_pointer(&area->view, ts_studio_view_free);
    area->view = view;
  }
  g_clear_object(&area->base);
  area->hover_only = FALSE;
  g_free(area->placeholder);
  area->placeholder = g_strdup(placeholder);
  if (view)
    view->hover = 0;
  gtk_widget_set_cursor_from_name(GTK_WIDGET(area), NULL);
  gtk_widget_queue_draw(GTK_WIDGET(area));
}

TsStudioView *
ts_studio_plot_area_get_view(TsStudioPlotArea *area)
{
  g_return_val_if_fail(TS_STUDIO_IS_PLOT_AREA(area), NULL);
  return area->view;
}

void
ts_studio_plot_area_set_selected(TsStudioPlotArea *area, gint64 id)
{
  g_return_if_fail(TS_STUDIO_IS_PLOT_AREA(area));
  if (area->view == NULL || (area->view->selected == id && area->view->selection == NULL))
    return;
  ts_studio_view_set_selection(area->view, &id, id != 0);
  area->hover_only = FALSE; /* the selection ring is in the base drawing */
  gtk_widget_queue_draw(GTK_WIDGET(area));
}

void
ts_studio_plot_area_set_selection(TsStudioPlotArea *area, const gint64 *ids, guint n)
{
  g_return_if_fail(TS_STUDIO_IS_PLOT_AREA(area));
  if (area->view == NULL)
    return;
  ts_studio_view_set_selection(area->view, ids, n);
  area->hover_only = FALSE;
  gtk_widget_queue_draw(GTK_WIDGET(area));
}

GArray *
ts_studio_plot_area_brush(TsStudioPlotArea *area, double x0, double y0, double x1, double y1)
{
  g_return_val_if_fail(TS_STUDIO_IS_PLOT_AREA(area), NULL);
  if (area->view == NULL)
    return g_array_new(FALSE, FALSE, sizeof(gint64));
  GtkWidget *w = GTK_WIDGET(area);
  GArray *ids = ts_studio_view_brush(area->view, x0, y0, x1, y1, gtk_widget_get_width(w),
                                     gtk_widget_get_height(w));
  ts_studio_plot_area_set_selection(area, (const gint64 *)ids->data, ids->len);
  g_signal_emit(area, signals[MARKS_BRUSHED], 0, ids);
  return ids;
}
