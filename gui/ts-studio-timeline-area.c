/* ts-studio-timeline-area.c — the widget that shows a timeline in the window. Events are
 * prepared off the frame path (a GTask in a worker thread, a spinner meanwhile; a newer set of
 * events supersedes an older one still being prepared), each frame is the view drawn into a
 * cairo render node, and the mouse and keys move the visible window: wheel (and Ctrl+wheel) zooms
 * about the pointer, drag and Shift+wheel pan, + - Left Right, 0 or Home shows everything.
 * Shift+drag selects a time range, whose per-name table the details strip shows; Escape
 * clears it (and the selected event).
 *
 * Dark or light: the widget's own foreground colour decides (light text: a dark theme). Unlike
 * GtkSettings:gtk-application-prefer-dark-theme, that follows whatever actually styles the
 * window (libadwaita's style manager, GTK_THEME=Adwaita:dark, a high-contrast theme), and it is
 * read at each frame, so a change of theme shows on the next one. */
#include "ts-studio-widgets.h"

#include <math.h>

#include "ts-studio-timeline-private.h"

#define ZOOM_STEP 1.5   /* a key press */
#define WHEEL_BASE 1.25 /* a wheel notch */
#define PAN_STEP 0.1    /* an arrow key: a tenth of the window */

struct _TsStudioTimelineArea {
  GtkWidget parent_instance;
  TsStudioView *view; /* prepared, or NULL */
  char *placeholder;
  GtkWidget *spinner;
  guint n_preparing; /* events being prepared; 0 when nothing is */
  guint generation;  /* bumped by each set_events: older preparations are dropped */
  GCancellable *cancellable;
  double pointer_x;
  gboolean pointer_in;
  gint64 drag_t0, drag_t1; /* the window when the drag began */
  double drag_ns_per_px;
  gboolean selecting;      /* a Shift+drag: selecting a range, not panning */
  char *search;            /* kept for the next set of events, or NULL */
  gint64 drag_at;          /* the time under the pointer when it began */
};

G_DEFINE_FINAL_TYPE(TsStudioTimelineArea, ts_studio_timeline_area, GTK_TYPE_WIDGET)

/* ---- preparation ---- */

static void
prepare_in_thread(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  GArray *events = data;
  TsStudioView *view = ts_studio_timeline_new(events);
  g_task_return_pointer(task, view, (GDestroyNotify)ts_studio_view_free);
}

static void
set_view(TsStudioTimelineArea *self, TsStudioView *view)
{
  g_clear_pointer(&self->view, ts_studio_view_free);
  self->view = view;
  if (view && self->search)
    ts_studio_timeline_set_search(view, self->search);
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

static void
stop_spinner(TsStudioTimelineArea *self)
{
  self->n_preparing = 0;
  gtk_spinner_stop(GTK_SPINNER(self->spinner));
  gtk_widget_set_visible(self->spinner, FALSE);
}

static void
prepared(GObject *source, GAsyncResult *result, gpointer data)
{
  TsStudioTimelineArea *self = TS_STUDIO_TIMELINE_AREA(source);
  guint generation = GPOINTER_TO_UINT(data);
  g_autoptr(GError) error = NULL;
  TsStudioView *view = g_task_propagate_pointer(G_TASK(result), &error);
  /* Superseded by newer events (or the widget went away): this one is not wanted. */
  if (generation != self->generation) {
    g_clear_pointer(&view, ts_studio_view_free);
    return;
  }
  stop_spinner(self);
  if (view == NULL) {
    g_free(self->placeholder);
    self->placeholder = g_strdup_printf("Could not prepare the timeline: %s",
                                        error ? error->message : "unknown error");
  }
  set_view(self, view);
}

static void
cancel_preparation(TsStudioTimelineArea *self)
{
  self->generation++;
  if (self->cancellable) {
    g_cancellable_cancel(self->cancellable);
    g_clear_object(&self->cancellable);
  }
}

GtkWidget *
ts_studio_timeline_area_new(void)
{
  return g_object_new(TS_STUDIO_TYPE_TIMELINE_AREA, NULL);
}

void
ts_studio_timeline_area_set_events(TsStudioTimelineArea *self, GArray *events,
                                   const char *placeholder)
{
  g_return_if_fail(TS_STUDIO_IS_TIMELINE_AREA(self));
  cancel_preparation(self);
  g_free(self->placeholder);
  self->placeholder = g_strdup(placeholder);
  set_view(self, NULL);
  if (events == NULL) {
    stop_spinner(self);
    return;
  }
  self->n_preparing = events->len;
  gtk_widget_set_visible(self->spinner, TRUE);
  gtk_spinner_start(GTK_SPINNER(self->spinner));
  self->cancellable = g_cancellable_new();
  g_autoptr(GTask) task =
      g_task_new(self, self->cancellable, prepared, GUINT_TO_POINTER(self->generation));
  g_task_set_source_tag(task, ts_studio_timeline_area_set_events);
  g_task_set_task_data(task, g_array_ref(events), (GDestroyNotify)g_array_unref);
  g_task_run_in_thread(task, prepare_in_thread);
}

TsStudioView *
ts_studio_timeline_area_get_view(TsStudioTimelineArea *self)
{
  g_return_val_if_fail(TS_STUDIO_IS_TIMELINE_AREA(self), NULL);
  return self->view;
}

/* ---- drawing ---- */

/* Centred, or under the spinner while it turns. */
static void
draw_message(TsCanvas *c, const TsStudioTheme *theme, double w, double h, const char *text,
             gboolean spinner)
{
  ts_canvas_fill_background(c, theme->background);
  if (text == NULL)
    return;
  ts_canvas_set_color(c, theme->muted);
  ts_canvas_set_font_size(c, 14);
  ts_canvas_text(c, w / 2, spinner ? h / 2 + 28 : h / 2, text, TS_CANVAS_ALIGN_CENTER,
                 spinner ? TS_CANVAS_ALIGN_START : TS_CANVAS_ALIGN_CENTER, 0);
}

static void
ts_studio_timeline_area_snapshot(GtkWidget *widget, GtkSnapshot *snapshot)
{
  TsStudioTimelineArea *self = TS_STUDIO_TIMELINE_AREA(widget);
  int w = gtk_widget_get_width(widget), h = gtk_widget_get_height(widget);
  if (w <= 0 || h <= 0)
    return;
  const TsStudioTheme *theme = ts_studio_widget_theme(widget);
  cairo_t *cr = gtk_snapshot_append_cairo(snapshot, &GRAPHENE_RECT_INIT(0, 0, w, h));
  TsCanvas *c = ts_canvas_new_cairo(cr);
  if (self->view) {
    ts_studio_view_set_theme(self->view, theme);
    ts_studio_view_draw(self->view, c, w, h);
  } else if (self->n_preparing > 0) {
    g_autofree char *text = g_strdup_printf("Preparing %u events…", self->n_preparing);
    draw_message(c, theme, w, h, text, TRUE);
  } else {
    draw_message(c, theme, w, h, self->placeholder, FALSE);
  }
  ts_canvas_free(c);
  cairo_destroy(cr);
  gtk_widget_snapshot_child(widget, self->spinner, snapshot);
}

/* ---- input ---- */

static double
anchor_at(TsStudioTimelineArea *self, double x)
{
  return ts_studio_timeline_anchor(self->view, x, gtk_widget_get_width(GTK_WIDGET(self)));
}

static void
moved(TsStudioTimelineArea *self)
{
  gtk_widget_queue_draw(GTK_WIDGET(self));
  /* What is under the pointer changed with the window. */
  gtk_widget_trigger_tooltip_query(GTK_WIDGET(self));
}

static gboolean
on_scroll(GtkEventControllerScroll *ctl, double dx, double dy, gpointer data)
{
  TsStudioTimelineArea *self = data;
  if (self->view == NULL)
    return FALSE;
  GdkModifierType state = gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(ctl));
  if (state & GDK_SHIFT_MASK) {
    /* Shift turns the vertical wheel horizontal (some systems already did: dx). */
    ts_studio_timeline_pan(self->view, PAN_STEP * (dy != 0 ? dy : dx));
  } else if (dx != 0 && fabs(dx) > fabs(dy)) {
    ts_studio_timeline_pan(self->view, PAN_STEP * dx); /* a touchpad's sideways swipe */
  } else {
    /* Ctrl+wheel zooms too: the shortcut other timelines taught people. */
    double anchor = self->pointer_in ? anchor_at(self, self->pointer_x) : 0.5;
    ts_studio_timeline_zoom(self->view, pow(WHEEL_BASE, -dy), anchor);
  }
  moved(self);
  return TRUE;
}

static void
on_motion(GtkEventControllerMotion *ctl, double x, double y, gpointer data)
{
  TsStudioTimelineArea *self = data;
  self->pointer_x = x;
  self->pointer_in = TRUE;
  if (self->view == NULL)
    return;
  GtkWidget *w = GTK_WIDGET(self);
  gint64 hover =
      ts_studio_view_hit(self->view, x, y, gtk_widget_get_width(w), gtk_widget_get_height(w));
  if (hover != self->view->hover) {
    self->view->hover = hover;
    gtk_widget_queue_draw(w);
  }
}

static void
on_leave(GtkEventControllerMotion *ctl, gpointer data)
{
  TsStudioTimelineArea *self = data;
  self->pointer_in = FALSE;
  if (self->view && self->view->hover) {
    self->view->hover = 0;
    gtk_widget_queue_draw(GTK_WIDGET(self));
  }
}

static void
on_drag_begin(GtkGestureDrag *gesture, double x, double y, gpointer data)
{
  TsStudioTimelineArea *self = data;
  gtk_widget_grab_focus(GTK_WIDGET(self));
  if (self->view == NULL)
    return;
  ts_studio_timeline_get_range(self->view, &self->drag_t0, &self->drag_t1);
  TsTlLayout lay;
  ts__tl_layout((TsTlView *)self->view, gtk_widget_get_width(GTK_WIDGET(self)), 1, &lay);
  self->drag_ns_per_px = lay.ns_per_px;
  GdkModifierType state =
      gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(gesture));
  self->selecting = (state & GDK_SHIFT_MASK) != 0;
  self->drag_at = lay.t0 + (gint64)llround((CLAMP(x, lay.x0, lay.x1) - lay.x0) * lay.ns_per_px);
}

static void
on_drag_update(GtkGestureDrag *gesture, double dx, double dy, gpointer data)
{
  TsStudioTimelineArea *self = data;
  if (self->view == NULL)
    return;
  if (self->selecting) {
    gint64 t = self->drag_at + (gint64)llround(dx * self->drag_ns_per_px);
    ts_studio_timeline_set_selection(self->view, MIN(t, self->drag_at), MAX(t, self->drag_at));
    gtk_widget_queue_draw(GTK_WIDGET(self));
    return;
  }
  /* From where the drag began, so the time under the pointer stays under it. */
  gint64 shift = (gint64)llround(-dx * self->drag_ns_per_px);
  ts_studio_timeline_set_range(self->view, self->drag_t0 + shift, self->drag_t1 + shift);
  moved(self);
}

/* A click without a drag selects the event under the pointer (or clears the selection). */
enum { EVENT_ACTIVATED, N_AREA_SIGNALS };
static guint area_signals[N_AREA_SIGNALS];

static void
on_click_released(GtkGestureClick *gesture, int n_press, double x, double y, gpointer data)
{
  TsStudioTimelineArea *self = data;
  if (self->view == NULL)
    return;
  GtkWidget *w = GTK_WIDGET(self);
  self->view->selected =
      ts_studio_view_hit(self->view, x, y, gtk_widget_get_width(w), gtk_widget_get_height(w));
  gtk_widget_queue_draw(w);
  if (self->view->selected)
    g_signal_emit(self, area_signals[EVENT_ACTIVATED], 0, self->view->selected);
}

static gboolean
on_key(GtkEventControllerKey *ctl, guint keyval, guint keycode, GdkModifierType state,
       gpointer data)
{
  TsStudioTimelineArea *self = data;
  if (self->view == NULL)
    return FALSE;
  double anchor = self->pointer_in ? anchor_at(self, self->pointer_x) : 0.5;
  switch (keyval) {
  case GDK_KEY_plus:
  case GDK_KEY_equal:
  case GDK_KEY_KP_Add:
    ts_studio_timeline_zoom(self->view, ZOOM_STEP, anchor);
    break;
  case GDK_KEY_minus:
  case GDK_KEY_underscore:
  case GDK_KEY_KP_Subtract:
    ts_studio_timeline_zoom(self->view, 1 / ZOOM_STEP, anchor);
    break;
  case GDK_KEY_Left:
  case GDK_KEY_KP_Left:
    ts_studio_timeline_pan(self->view, -PAN_STEP);
    break;
  case GDK_KEY_Right:
  case GDK_KEY_KP_Right:
    ts_studio_timeline_pan(self->view, PAN_STEP);
    break;
  case GDK_KEY_Escape:
    ts_studio_timeline_set_selection(self->view, 0, 0);
    self->view->selected = 0;
    break;
  case GDK_KEY_0:
  case GDK_KEY_KP_0:
  case GDK_KEY_Home:
  case GDK_KEY_KP_Home: {
    gint64 s0, s1;
    ts_studio_timeline_get_span(self->view, &s0, &s1);
    ts_studio_timeline_set_range(self->view, s0, s1);
    break;
  }
  default:
    return FALSE;
  }
  moved(self);
  return TRUE;
}

static gboolean
on_query_tooltip(GtkWidget *widget, int x, int y, gboolean keyboard, GtkTooltip *tooltip,
                 gpointer data)
{
  TsStudioTimelineArea *self = TS_STUDIO_TIMELINE_AREA(widget);
  if (self->view == NULL || keyboard)
    return FALSE;
  gint64 id = ts_studio_view_hit(self->view, x, y, gtk_widget_get_width(widget),
                                 gtk_widget_get_height(widget));
  g_autofree char *text = ts_studio_view_describe(self->view, id);
  if (text == NULL)
    return FALSE;
  gtk_tooltip_set_text(tooltip, text);
  return TRUE;
}

/* ---- the type ---- */

static void
ts_studio_timeline_area_dispose(GObject *object)
{
  TsStudioTimelineArea *self = TS_STUDIO_TIMELINE_AREA(object);
  cancel_preparation(self);
  g_clear_pointer(&self->spinner, gtk_widget_unparent);
  G_OBJECT_CLASS(ts_studio_timeline_area_parent_class)->dispose(object);
}

static void
ts_studio_timeline_area_finalize(GObject *object)
{
  TsStudioTimelineArea *self = TS_STUDIO_TIMELINE_AREA(object);
  g_clear_pointer(&self->view, ts_studio_view_free);
  g_free(self->placeholder);
  g_free(self->search);
  G_OBJECT_CLASS(ts_studio_timeline_area_parent_class)->finalize(object);
}

static void
ts_studio_timeline_area_class_init(TsStudioTimelineAreaClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);
  object_class->dispose = ts_studio_timeline_area_dispose;
  object_class->finalize = ts_studio_timeline_area_finalize;
  widget_class->snapshot = ts_studio_timeline_area_snapshot;
  gtk_widget_class_set_layout_manager_type(widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name(widget_class, "timeline");
  /* TsStudioTimelineArea::event-activated: a mark (gint64, as the view numbers them) was
   * clicked. */
  area_signals[EVENT_ACTIVATED] =
      g_signal_new("event-activated", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                   NULL, G_TYPE_NONE, 1, G_TYPE_INT64);
}

static void
ts_studio_timeline_area_init(TsStudioTimelineArea *self)
{
  GtkWidget *w = GTK_WIDGET(self);
  gtk_widget_set_focusable(w, TRUE);
  gtk_widget_set_focus_on_click(w, TRUE);
  gtk_widget_set_hexpand(w, TRUE);
  gtk_widget_set_vexpand(w, TRUE);
  gtk_widget_set_has_tooltip(w, TRUE);
  g_signal_connect(w, "query-tooltip", G_CALLBACK(on_query_tooltip), NULL);

  self->spinner = gtk_spinner_new();
  gtk_widget_set_halign(self->spinner, GTK_ALIGN_CENTER);
  gtk_widget_set_valign(self->spinner, GTK_ALIGN_CENTER);
  gtk_widget_set_size_request(self->spinner, 32, 32);
  gtk_widget_set_visible(self->spinner, FALSE);
  gtk_widget_set_parent(self->spinner, w);

  GtkEventController *scroll =
      gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), self);
  gtk_widget_add_controller(w, scroll);

  GtkEventController *motion = gtk_event_controller_motion_new();
  g_signal_connect(motion, "motion", G_CALLBACK(on_motion), self);
  g_signal_connect(motion, "leave", G_CALLBACK(on_leave), self);
  gtk_widget_add_controller(w, motion);

  GtkGesture *drag = gtk_gesture_drag_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(drag), GDK_BUTTON_PRIMARY);
  g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), self);
  g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(drag));

  GtkGesture *click = gtk_gesture_click_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(click), GDK_BUTTON_PRIMARY);
  g_signal_connect(click, "released", G_CALLBACK(on_click_released), self);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(click));

  GtkEventController *key = gtk_event_controller_key_new();
  g_signal_connect(key, "key-pressed", G_CALLBACK(on_key), self);
  gtk_widget_add_controller(w, key);
}

void
ts_studio_timeline_area_select(TsStudioTimelineArea *self, gint64 mark)
{
  g_return_if_fail(TS_STUDIO_IS_TIMELINE_AREA(self));
  if (self->view == NULL)
    return;
  self->view->selected = mark;
  gtk_widget_queue_draw(GTK_WIDGET(self));
}

guint
ts_studio_timeline_area_search(TsStudioTimelineArea *self, const char *text)
{
  g_return_val_if_fail(TS_STUDIO_IS_TIMELINE_AREA(self), 0);
  g_free(self->search);
  self->search = text && *text ? g_strdup(text) : NULL;
  gtk_widget_queue_draw(GTK_WIDGET(self));
  return self->view ? ts_studio_timeline_set_search(self->view, self->search) : 0;
}

gboolean
ts_studio_timeline_area_find(TsStudioTimelineArea *self, gboolean forward)
{
  g_return_val_if_fail(TS_STUDIO_IS_TIMELINE_AREA(self), FALSE);
  if (self->view == NULL)
    return FALSE;
  gint64 mark = ts_studio_timeline_search_next(self->view, self->view->selected, forward);
  if (mark == 0)
    return FALSE;
  self->view->selected = mark;
  ts_studio_timeline_reveal(self->view, mark);
  moved(self);
  g_signal_emit(self, area_signals[EVENT_ACTIVATED], 0, mark);
  return TRUE;
}
