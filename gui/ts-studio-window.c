/* ts-studio-window.c — the window: opens a file through the data layer, keeps the selected
 * workload's trials, runs and profiles, hands them to the views, and keeps the selection in
 * the trials list, the plots and the lowering view in step.
 *
 * Lifetimes: the views and the lowering pane borrow the workload from the TsStudioDb, so every
 * view is dropped before the db that backs it is closed (close_file) and the db outlives the
 * template's widgets (finalize). */
#include "ts-studio-window.h"
#include "ts-studio-timeline.h"

#include <errno.h>
#include <glib/gstdio.h>

const char *const ts_studio_window_pages[] = {
    "trials", "roofline", "history", "predicted", "timeline", "lowering", "bandwidth", NULL,
};

struct _TsStudioWindow {
  GtkApplicationWindow parent_instance;

  /* template */
  GtkWidget *switcher, *states, *views, *timeline_states;
  GtkWidget *empty_label, *empty_path, *no_profile_label;
  GtkWidget *loading_label, *loading_progress, *loading_cancel;
  GtkWidget *color_by, *history_axis, *profile_choice, *predicted_model;
  GtkWidget *timeline_search, *timeline_matches, *trace_search, *trace_matches;
  GtkStringList *profile_labels;
  GMenu *recent_section;
  TsStudioSidebar *sidebar;
  TsStudioTrialList *trial_list;
  TsStudioPlotArea *roofline_area, *history_area, *predicted_area, *bandwidth_area;
  TsStudioTimelineArea *timeline_area, *trace_area;
  TsStudioLoweringPane *lowering_pane;

  /* what is open */
  char *path;
  TsStudioDb *db;
  const TsStudioWorkload *workload;
  GPtrArray *trials, *runs, *profiles;
  gint64 profile_id;

  /* a trace being read in a worker thread */
  GCancellable *loading;
  gint loading_permille; /* atomic: the share of the file read */
  guint loading_tick;
  char *loading_back;    /* the state to return to if it fails or is cancelled */
  guint64 loading_bytes;
};

G_DEFINE_FINAL_TYPE(TsStudioWindow, ts_studio_window, GTK_TYPE_APPLICATION_WINDOW)

static void
set_state(TsStudioWindow *self, const char *state)
{
  gtk_stack_set_visible_child_name(GTK_STACK(self->states), state);
  gtk_widget_set_visible(self->switcher, g_str_equal(state, "workbench"));
}

/* Drops everything that shows the current workload, before its data goes. */
static void
clear_workload(TsStudioWindow *self)
{
  self->workload = NULL; /* first: emptying the list must not build plots of it again */
  ts_studio_plot_area_set_view(self->roofline_area, NULL, NULL);
  ts_studio_plot_area_set_view(self->history_area, NULL, NULL);
  ts_studio_plot_area_set_view(self->predicted_area, NULL, NULL);
  ts_studio_plot_area_set_view(self->bandwidth_area, NULL, NULL);
  ts_studio_timeline_area_set_events(self->timeline_area, NULL, NULL);
  ts_studio_lowering_pane_set_trials(self->lowering_pane, NULL, NULL, NULL);
  ts_studio_trial_list_set_trials(self->trial_list, NULL);
  gtk_string_list_splice(self->profile_labels, 0,
                         g_list_model_get_n_items(G_LIST_MODEL(self->profile_labels)), NULL);
  g_clear_pointer(&self->trials, g_ptr_array_unref);
  g_clear_pointer(&self->runs, g_ptr_array_unref);
  g_clear_pointer(&self->profiles, g_ptr_array_unref);
  self->profile_id = 0;
}

static void
close_file(TsStudioWindow *self)
{
  clear_workload(self);
  ts_studio_sidebar_set_db(self->sidebar, NULL);
  ts_studio_timeline_area_set_events(self->trace_area, NULL, NULL);
  g_clear_pointer(&self->db, ts_studio_db_free);
  g_clear_pointer(&self->path, g_free);
}

static GPtrArray *
or_empty(GPtrArray *array, GDestroyNotify free_func)
{
  return array ? array : g_ptr_array_new_with_free_func(free_func);
}

static void
show_profile(TsStudioWindow *self, guint position)
{
  if (self->profiles == NULL || position >= self->profiles->len)
    return;
  const TsDbProfile *profile = g_ptr_array_index(self->profiles, position);
  if (profile->id == self->profile_id)
    return;

  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) events = ts_studio_db_events(self->db, profile->id, &error);
  self->profile_id = profile->id;
  if (events == NULL) {
    ts_studio_timeline_area_set_events(self->timeline_area, NULL, error->message);
    return;
  }
  ts_studio_timeline_area_set_events(self->timeline_area, events, NULL);
}

static void
load_profiles(TsStudioWindow *self)
{
  g_autoptr(GError) error = NULL;

  self->profiles = ts_studio_db_profiles(self->db, self->workload, &error);
  /* A workload never profiled still has a timeline worth seeing: the cache's other profiles
   * (a whole tuning session is stored without a workload). */
  gboolean other = self->profiles != NULL && self->profiles->len == 0 && self->workload;
  if (self->profiles != NULL && self->profiles->len == 0) {
    g_ptr_array_unref(self->profiles);
    self->profiles = ts_studio_db_profiles(self->db, NULL, &error);
  }
  if (self->profiles == NULL) {
    ts_studio_window_show_error(self, "Could not read the profiles", error);
    self->profiles = g_ptr_array_new_with_free_func((GDestroyNotify)ts_db_profile_free);
  }
  if (self->profiles->len == 0) {
    gtk_stack_set_visible_child_name(GTK_STACK(self->timeline_states), "none");
    return;
  }
  g_autoptr(GStrvBuilder) labels = g_strv_builder_new();
  for (guint i = 0; i < self->profiles->len; i++) {
    const TsDbProfile *p = g_ptr_array_index(self->profiles, i);
    /* Another workload's profile says whose it is: the selected one has none. */
    g_autofree char *subject = other ? ts_studio_db_profile_subject(self->db, p) : NULL;
    g_autofree char *label =
        g_strdup_printf("%" G_GINT64_FORMAT " · %s%s%s · %u events · %s%s%s", p->id,
                        p->kind ? p->kind : "run", subject ? " of " : "", subject ? subject : "",
                        p->n_events, p->created_at ? p->created_at : "",
                        p->schedule ? " · " : "", p->schedule ? p->schedule : "");
    g_strv_builder_add(labels, label);
  }
  g_auto(GStrv) strv = g_strv_builder_end(labels);
  gtk_string_list_splice(self->profile_labels, 0,
                         g_list_model_get_n_items(G_LIST_MODEL(self->profile_labels)),
                         (const char *const *)strv);
  gtk_stack_set_visible_child_name(GTK_STACK(self->timeline_states), "profile");
  gtk_drop_down_set_selected(GTK_DROP_DOWN(self->profile_choice), 0);
  show_profile(self, 0);
}

static TsStudioView *
make_history(TsStudioWindow *self)
{
  TsStudioHistoryAxis axis = gtk_drop_down_get_selected(GTK_DROP_DOWN(self->history_axis)) == 1
                                 ? TS_STUDIO_HISTORY_BY_WALL
                                 : TS_STUDIO_HISTORY_BY_INDEX;
  g_autoptr(GPtrArray) shown = ts_studio_trial_list_get_shown(self->trial_list);
  return ts_studio_history_new(self->workload, shown, self->runs, axis);
}

/* The analytic estimate against the measurements, or the learned model's ranking. */
static TsStudioView *
make_predicted(TsStudioWindow *self, GPtrArray *shown)
{
  if (gtk_drop_down_get_selected(GTK_DROP_DOWN(self->predicted_model)) != 1)
    return ts_studio_predicted_new(self->workload, shown);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsStudioLearned) learned = ts_studio_db_learned(self->db, self->workload, shown,
                                                            &error);
  return ts_studio_learned_new(self->workload, shown, learned, error ? error->message : NULL);
}

/* The list's selection, drawn selected in the three trial plots. */
static void
select_in_plots(TsStudioWindow *self, GPtrArray *selected)
{
  g_autoptr(GArray) ids = g_array_sized_new(FALSE, FALSE, sizeof(gint64), selected->len);
  for (guint i = 0; i < selected->len; i++)
    g_array_append_val(ids, ((const TsStudioTrial *)selected->pdata[i])->id);
  TsStudioPlotArea *areas[] = {self->roofline_area, self->history_area, self->predicted_area};
  for (guint i = 0; i < G_N_ELEMENTS(areas); i++)
    ts_studio_plot_area_set_selection(areas[i], (const gint64 *)ids->data, ids->len);
}

/* The three trial plots, of the trials the list shows, keeping the selection's highlight. */
static void
make_plots(TsStudioWindow *self)
{
  if (self->workload == NULL)
    return;
  g_autoptr(GPtrArray) shown = ts_studio_trial_list_get_shown(self->trial_list);
  TsStudioView *roofline = ts_studio_roofline_new(self->workload, shown);
  ts_studio_roofline_set_color_by(roofline,
                                  gtk_drop_down_get_selected(GTK_DROP_DOWN(self->color_by)) == 1
                                      ? TS_STUDIO_COLOR_BY_STRATEGY
                                      : TS_STUDIO_COLOR_BY_STATUS);
  ts_studio_plot_area_set_view(self->roofline_area, roofline, NULL);
  ts_studio_plot_area_set_view(self->history_area, make_history(self), NULL);
  ts_studio_plot_area_set_view(self->predicted_area, make_predicted(self, shown), NULL);
  /* A collective's sizes are workloads of their own: the plot reads them from the cache,
   * whatever the list shows. */
  g_autoptr(GError) why = NULL;
  g_autoptr(GPtrArray) series = ts_studio_db_bandwidth(self->db, self->workload, &why);
  ts_studio_plot_area_set_view(self->bandwidth_area,
                               ts_studio_bandwidth_new(self->workload, series,
                                                       why ? why->message : NULL),
                               NULL);
  g_autoptr(GPtrArray) selected = ts_studio_trial_list_get_selected(self->trial_list);
  select_in_plots(self, selected);
}

/* A profiled tune's "trial ID: POINT" range clicked: that trial is selected in the list (and so
 * in the plots and the lowering), when it is a trial of the workload shown. */
static void
profile_label_setup(GtkSignalListItemFactory *factory, GtkListItem *item, gpointer data)
{
  GtkWidget *label = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(label), 0);
  gtk_label_set_ellipsize(GTK_LABEL(label), PANGO_ELLIPSIZE_END);
  gtk_label_set_max_width_chars(GTK_LABEL(label), 60);
  gtk_list_item_set_child(item, label);
}

static void
profile_label_bind(GtkSignalListItemFactory *factory, GtkListItem *item, gpointer data)
{
  GtkStringObject *s = gtk_list_item_get_item(item);
  GtkWidget *label = gtk_list_item_get_child(item);
  gtk_label_set_text(GTK_LABEL(label), gtk_string_object_get_string(s));
  gtk_widget_set_tooltip_text(label, gtk_string_object_get_string(s));
}

/* ---- searching a timeline: the workbench's and a trace's have an entry each ---- */

static TsStudioTimelineArea *
search_area(TsStudioWindow *self, GtkWidget *entry, GtkLabel **matches)
{
  gboolean trace = entry == self->trace_search;
  *matches = GTK_LABEL(trace ? self->trace_matches : self->timeline_matches);
  return trace ? self->trace_area : self->timeline_area;
}

static void
on_search_changed(GtkSearchEntry *entry, TsStudioWindow *self)
{
  GtkLabel *matches;
  TsStudioTimelineArea *area = search_area(self, GTK_WIDGET(entry), &matches);
  const char *text = gtk_editable_get_text(GTK_EDITABLE(entry));
  guint n = ts_studio_timeline_area_search(area, text);
  g_autofree char *label = !*text ? g_strdup("")
                           : n == 0 ? g_strdup("no match")
                           : g_strdup_printf("%u match%s — Enter for the next", n,
                                             n == 1 ? "" : "es");
  gtk_label_set_text(matches, label);
}

static void
find(TsStudioWindow *self, GtkWidget *entry, gboolean forward)
{
  GtkLabel *matches;
  TsStudioTimelineArea *area = search_area(self, entry, &matches);
  if (!ts_studio_timeline_area_find(area, forward))
    gtk_widget_error_bell(entry);
}

static void
on_search_next(GtkSearchEntry *entry, TsStudioWindow *self)
{
  find(self, GTK_WIDGET(entry), TRUE);
}

static void
on_search_previous(GtkSearchEntry *entry, TsStudioWindow *self)
{
  find(self, GTK_WIDGET(entry), FALSE);
}

static void
on_timeline_event(TsStudioTimelineArea *area, gint64 mark, TsStudioWindow *self)
{
  TsStudioView *view = ts_studio_timeline_area_get_view(area);
  gint64 trial = view ? ts_studio_timeline_trial_of(view, mark) : 0;
  for (guint i = 0; trial && self->trials && i < self->trials->len; i++) {
    if (((const TsStudioTrial *)self->trials->pdata[i])->id == trial) {
      ts_studio_trial_list_select(self->trial_list, trial, FALSE);
      return;
    }
  }
}

static void
on_filter_changed(TsStudioTrialList *list, TsStudioWindow *self)
{
  make_plots(self);
}

/* The trial a workload opens on: its stored best, else its first verified one, else its
 * first. */
static const TsStudioTrial *
initial_trial(GPtrArray *trials)
{
  const TsStudioTrial *first_ok = NULL;

  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = g_ptr_array_index(trials, i);
    if (t->best)
      return t;
    if (first_ok == NULL && t->status == TS_DB_TRIAL_OK)
      first_ok = t;
  }
  return first_ok ? first_ok : trials->len ? g_ptr_array_index(trials, 0) : NULL;
}

static void
load_workload(TsStudioWindow *self, const TsStudioWorkload *workload)
{
  g_autoptr(GError) error = NULL;

  if (workload == self->workload)
    return;
  clear_workload(self);
  self->workload = workload;
  if (workload == NULL)
    return;

  self->trials = ts_studio_db_trials(self->db, workload, &error);
  if (self->trials == NULL) {
    ts_studio_window_show_error(self, "Could not read the trials", error);
    g_clear_error(&error);
  }
  self->trials = or_empty(self->trials, (GDestroyNotify)ts_studio_trial_free);
  self->runs = ts_studio_db_runs(self->db, workload, &error);
  if (self->runs == NULL) {
    ts_studio_window_show_error(self, "Could not read the tuning runs", error);
    g_clear_error(&error);
  }
  self->runs = or_empty(self->runs, (GDestroyNotify)ts_studio_run_free);

  /* The plots show what the list lets through: its filter-changed builds them. */
  ts_studio_trial_list_set_trials(self->trial_list, self->trials);
  load_profiles(self);

  g_autofree char *title = g_strdup_printf("%s — %s", workload->label, self->path);
  gtk_window_set_title(GTK_WINDOW(self), title);
  const TsStudioTrial *first = initial_trial(self->trials);
  if (first != NULL)
    ts_studio_trial_list_select(self->trial_list, first->id, FALSE);
}

static void
on_workload_selected(TsStudioSidebar *sidebar, const TsStudioWorkload *workload,
                     TsStudioWindow *self)
{
  load_workload(self, workload);
}

static void
on_trials_selected(TsStudioTrialList *list, TsStudioWindow *self)
{
  g_autoptr(GPtrArray) selected = ts_studio_trial_list_get_selected(list);
  const TsStudioTrial *a = selected->len > 0 ? g_ptr_array_index(selected, 0) : NULL;
  const TsStudioTrial *b = selected->len > 1 ? g_ptr_array_index(selected, 1) : NULL;
  gint64 id = a ? a->id : 0;

  select_in_plots(self, selected);
  ts_studio_lowering_pane_set_trials(self->lowering_pane, self->workload, a, b);
  ts_studio_lowering_pane_set_n_selected(self->lowering_pane, selected->len);
  /* And the other way: the trial's range on the timeline, when it has one. */
  TsStudioView *tl = ts_studio_timeline_area_get_view(self->timeline_area);
  if (tl && id)
    ts_studio_timeline_area_select(self->timeline_area, ts_studio_timeline_find_trial(tl, id));
}

static void
on_mark_activated(TsStudioPlotArea *area, gint64 id, gboolean extend, TsStudioWindow *self)
{
  if (id != 0)
    ts_studio_trial_list_select(self->trial_list, id, extend);
}

static void
on_marks_brushed(TsStudioPlotArea *area, GArray *ids, TsStudioWindow *self)
{
  ts_studio_trial_list_select_ids(self->trial_list, (const gint64 *)ids->data, ids->len);
}

static void
on_color_by(GObject *drop_down, GParamSpec *pspec, TsStudioWindow *self)
{
  TsStudioView *view = ts_studio_plot_area_get_view(self->roofline_area);

  if (view == NULL)
    return;
  ts_studio_roofline_set_color_by(view, gtk_drop_down_get_selected(GTK_DROP_DOWN(drop_down)) == 1
                                            ? TS_STUDIO_COLOR_BY_STRATEGY
                                            : TS_STUDIO_COLOR_BY_STATUS);
  gtk_widget_queue_draw(GTK_WIDGET(self->roofline_area));
}

static void
on_predicted_model(GObject *drop_down, GParamSpec *pspec, TsStudioWindow *self)
{
  if (self->workload == NULL)
    return;
  g_autoptr(GPtrArray) shown = ts_studio_trial_list_get_shown(self->trial_list);
  ts_studio_plot_area_set_view(self->predicted_area, make_predicted(self, shown), NULL);
  on_trials_selected(self->trial_list, self);
}

static void
on_history_axis(GObject *drop_down, GParamSpec *pspec, TsStudioWindow *self)
{
  if (self->workload == NULL)
    return;
  ts_studio_plot_area_set_view(self->history_area, make_history(self), NULL);
  on_trials_selected(self->trial_list, self);
}

static void
on_profile_chosen(GObject *drop_down, GParamSpec *pspec, TsStudioWindow *self)
{
  show_profile(self, gtk_drop_down_get_selected(GTK_DROP_DOWN(drop_down)));
}

static void
on_page_changed(GObject *stack, GParamSpec *pspec, TsStudioWindow *self)
{
  const char *page = gtk_stack_get_visible_child_name(GTK_STACK(stack));
  GAction *action = g_action_map_lookup_action(G_ACTION_MAP(self), "view");

  if (page != NULL && action != NULL)
    g_simple_action_set_state(G_SIMPLE_ACTION(action), g_variant_new_string(page));
}

static void
change_view(GSimpleAction *action, GVariant *value, gpointer data)
{
  ts_studio_window_set_page(data, g_variant_get_string(value, NULL));
}

static void
find_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  TsStudioWindow *self = data;

  if (!g_str_equal(ts_studio_window_get_state(self), "workbench"))
    return;
  ts_studio_window_set_page(self, "trials");
  ts_studio_trial_list_focus_filter(self->trial_list);
}

static void
export_action(GSimpleAction *action, GVariant *parameter, gpointer data)
{
  ts_studio_window_export(data);
}

static const GActionEntry win_actions[] = {
    {.name = "view", .parameter_type = "s", .state = "'trials'", .change_state = change_view},
    {.name = "find", .activate = find_action},
    {.name = "export", .activate = export_action},
};

static void loading_stop(TsStudioWindow *win);
static void on_loading_cancel(GtkButton *button, TsStudioWindow *win);

static void
ts_studio_window_dispose(GObject *object)
{
  TsStudioWindow *self = TS_STUDIO_WINDOW(object);
  /* A read still running is abandoned: its result finds no window waiting for it. */
  if (self->loading)
    g_cancellable_cancel(self->loading);
  loading_stop(self);
  G_OBJECT_CLASS(ts_studio_window_parent_class)->dispose(object);
}

static void
ts_studio_window_finalize(GObject *object)
{
  TsStudioWindow *self = TS_STUDIO_WINDOW(object);

  /* The widgets that borrowed from the db are gone (GtkWindow's dispose). */
  g_clear_pointer(&self->trials, g_ptr_array_unref);
  g_clear_pointer(&self->runs, g_ptr_array_unref);
  g_clear_pointer(&self->profiles, g_ptr_array_unref);
  g_clear_pointer(&self->db, ts_studio_db_free);
  g_free(self->path);
  g_free(self->loading_back);
  G_OBJECT_CLASS(ts_studio_window_parent_class)->finalize(object);
}

static void
ts_studio_window_class_init(TsStudioWindowClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS(klass);

  /* No gtk_widget_dispose_template in dispose: GtkWindow destroys its titlebar and child
   * itself, and in GTK 4.8 unparenting them first makes it warn. */
  G_OBJECT_CLASS(klass)->finalize = ts_studio_window_finalize;
  G_OBJECT_CLASS(klass)->dispose = ts_studio_window_dispose;

  g_type_ensure(TS_STUDIO_TYPE_SIDEBAR);
  g_type_ensure(TS_STUDIO_TYPE_TRIAL_LIST);
  g_type_ensure(TS_STUDIO_TYPE_PLOT_AREA);
  g_type_ensure(TS_STUDIO_TYPE_TIMELINE_AREA);
  g_type_ensure(TS_STUDIO_TYPE_LOWERING_PANE);

  gtk_widget_class_set_template_from_resource(widget_class,
                                              "/org/tessera/Studio/ts-studio-window.ui");
#define BIND(name) gtk_widget_class_bind_template_child(widget_class, TsStudioWindow, name)
  BIND(switcher);
  BIND(states);
  BIND(views);
  BIND(timeline_states);
  BIND(empty_label);
  BIND(empty_path);
  BIND(no_profile_label);
  BIND(loading_label);
  BIND(loading_progress);
  BIND(loading_cancel);
  BIND(color_by);
  BIND(history_axis);
  BIND(predicted_model);
  BIND(profile_choice);
  BIND(timeline_search);
  BIND(timeline_matches);
  BIND(trace_search);
  BIND(trace_matches);
  BIND(profile_labels);
  BIND(recent_section);
  BIND(sidebar);
  BIND(trial_list);
  BIND(roofline_area);
  BIND(history_area);
  BIND(predicted_area);
  BIND(bandwidth_area);
  BIND(timeline_area);
  BIND(trace_area);
  BIND(lowering_pane);
#undef BIND
}

static void
ts_studio_window_init(TsStudioWindow *self)
{
  gtk_widget_init_template(GTK_WIDGET(self));
  g_action_map_add_action_entries(G_ACTION_MAP(self), win_actions, G_N_ELEMENTS(win_actions), self);

  g_signal_connect(self->sidebar, "workload-selected", G_CALLBACK(on_workload_selected), self);
  g_signal_connect(self->trial_list, "selection-changed", G_CALLBACK(on_trials_selected), self);
  g_signal_connect(self->trial_list, "filter-changed", G_CALLBACK(on_filter_changed), self);
  g_signal_connect(self->timeline_area, "event-activated", G_CALLBACK(on_timeline_event), self);
  g_signal_connect(self->roofline_area, "mark-activated", G_CALLBACK(on_mark_activated), self);
  g_signal_connect(self->history_area, "mark-activated", G_CALLBACK(on_mark_activated), self);
  g_signal_connect(self->predicted_area, "mark-activated", G_CALLBACK(on_mark_activated), self);
  g_signal_connect(self->roofline_area, "marks-brushed", G_CALLBACK(on_marks_brushed), self);
  g_signal_connect(self->history_area, "marks-brushed", G_CALLBACK(on_marks_brushed), self);
  g_signal_connect(self->predicted_area, "marks-brushed", G_CALLBACK(on_marks_brushed), self);
  g_signal_connect(self->color_by, "notify::selected", G_CALLBACK(on_color_by), self);
  g_signal_connect(self->history_axis, "notify::selected", G_CALLBACK(on_history_axis), self);
  g_signal_connect(self->predicted_model, "notify::selected", G_CALLBACK(on_predicted_model),
                   self);
  g_signal_connect(self->profile_choice, "notify::selected", G_CALLBACK(on_profile_chosen), self);
  /* Profile labels carry a schedule: ellipsized, so the search entry beside keeps its room. */
  g_autoptr(GtkListItemFactory) labels = gtk_signal_list_item_factory_new();
  g_signal_connect(labels, "setup", G_CALLBACK(profile_label_setup), NULL);
  g_signal_connect(labels, "bind", G_CALLBACK(profile_label_bind), NULL);
  gtk_drop_down_set_factory(GTK_DROP_DOWN(self->profile_choice), labels);
  GtkWidget *searches[] = {self->timeline_search, self->trace_search};
  for (guint i = 0; i < G_N_ELEMENTS(searches); i++) {
    g_signal_connect(searches[i], "search-changed", G_CALLBACK(on_search_changed), self);
    g_signal_connect(searches[i], "activate", G_CALLBACK(on_search_next), self);
    g_signal_connect(searches[i], "next-match", G_CALLBACK(on_search_next), self);
    g_signal_connect(searches[i], "previous-match", G_CALLBACK(on_search_previous), self);
  }
  g_signal_connect(self->views, "notify::visible-child-name", G_CALLBACK(on_page_changed), self);
  g_signal_connect(self->loading_cancel, "clicked", G_CALLBACK(on_loading_cancel), self);
  set_state(self, "welcome");
}

TsStudioWindow *
ts_studio_window_new(GtkApplication *app)
{
  return g_object_new(TS_STUDIO_TYPE_WINDOW, "application", app, NULL);
}

void
ts_studio_window_set_recent_menu(TsStudioWindow *win, GMenuModel *recent)
{
  g_return_if_fail(TS_STUDIO_IS_WINDOW(win) && G_IS_MENU_MODEL(recent));
  g_menu_remove_all(win->recent_section);
  g_menu_append_section(win->recent_section, NULL, recent);
}

/* The workload shown first: the one with the most trials, the likeliest to be the one tuned
 * for real. */
static const TsStudioWorkload *
largest_workload(TsStudioDb *db)
{
  GPtrArray *workloads = ts_studio_db_workloads(db);
  const TsStudioWorkload *best = NULL;

  for (guint i = 0; i < workloads->len; i++) {
    const TsStudioWorkload *w = g_ptr_array_index(workloads, i);
    if (best == NULL || w->n_trials > best->n_trials)
      best = w;
  }
  return best;
}

static gboolean
is_trace(const char *path)
{
  g_autofree char *lower = g_ascii_strdown(path, -1);
  return g_str_has_suffix(lower, ".json");
}

static void
show_trace(TsStudioWindow *win, char *path, GArray *events)
{
  close_file(win);
  win->path = path;
  ts_studio_timeline_area_set_events(win->trace_area, events, NULL);
  set_state(win, "trace");
  g_autofree char *title = g_strdup_printf("%s — Tessera Studio", win->path);
  gtk_window_set_title(GTK_WINDOW(win), title);
}

/* ---- a trace read off the UI thread ---- */

static void
read_trace(GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  TsStudioWindow *win = source; /* only its atomic progress is touched here */
  GError *error = NULL;
  GArray *events = ts_studio_trace_load_full(data, cancellable, &win->loading_permille, &error);
  if (events)
    g_task_return_pointer(task, events, (GDestroyNotify)g_array_unref);
  else
    g_task_return_error(task, error);
}

static gboolean
loading_tick(gpointer data)
{
  TsStudioWindow *win = data;
  double done = g_atomic_int_get(&win->loading_permille) / 1000.0;
  gtk_progress_bar_set_fraction(GTK_PROGRESS_BAR(win->loading_progress), done);
  g_autofree char *size = g_format_size(win->loading_bytes);
  g_autofree char *text = g_strdup_printf("%.0f%% of %s", 100 * done, size);
  gtk_progress_bar_set_text(GTK_PROGRESS_BAR(win->loading_progress), text);
  return G_SOURCE_CONTINUE;
}

static void
loading_stop(TsStudioWindow *win)
{
  g_clear_handle_id(&win->loading_tick, g_source_remove);
  g_clear_object(&win->loading);
}

static void
trace_read(GObject *source, GAsyncResult *result, gpointer data)
{
  TsStudioWindow *win = TS_STUDIO_WINDOW(source);
  g_autofree char *path = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GArray) events = g_task_propagate_pointer(G_TASK(result), &error);
  /* A newer open replaced this one: its outcome is not shown. */
  if (g_task_get_cancellable(G_TASK(result)) != win->loading)
    return;
  loading_stop(win);
  g_autofree char *back = g_steal_pointer(&win->loading_back);
  if (events) {
    show_trace(win, g_steal_pointer(&path), events);
    return;
  }
  set_state(win, back ? back : "welcome");
  if (!g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
    g_autofree char *base = g_path_get_basename(path);
    g_autofree char *primary = g_strdup_printf("Could not open “%s”", base);
    ts_studio_window_show_error(win, primary, error);
  }
}

static void
on_loading_cancel(GtkButton *button, TsStudioWindow *win)
{
  if (win->loading)
    g_cancellable_cancel(win->loading);
}

gboolean
ts_studio_window_open_async(TsStudioWindow *win, GFile *file, GError **error)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win) && G_IS_FILE(file), FALSE);
  g_autofree char *path = g_file_get_path(file);
  if (path == NULL || !is_trace(path))
    return ts_studio_window_open(win, file, error); /* a cache opens at once */
  GStatBuf st;
  if (g_stat(path, &st) != 0) {
    int saved = errno;
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE, "%s: %s", path,
                g_strerror(saved));
    return FALSE;
  }
  if (win->loading) {
    g_cancellable_cancel(win->loading);
    loading_stop(win);
  } else {
    g_free(win->loading_back);
    win->loading_back = g_strdup(ts_studio_window_get_state(win));
  }
  win->loading = g_cancellable_new();
  win->loading_bytes = (guint64)st.st_size;
  g_atomic_int_set(&win->loading_permille, 0);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *label = g_strdup_printf("Reading %s…", base);
  gtk_label_set_text(GTK_LABEL(win->loading_label), label);
  loading_tick(win);
  win->loading_tick = g_timeout_add(100, loading_tick, win);
  set_state(win, "loading");
  g_autoptr(GTask) task = g_task_new(win, win->loading, trace_read, g_strdup(path));
  g_task_set_source_tag(task, ts_studio_window_open_async);
  g_task_set_task_data(task, g_steal_pointer(&path), g_free);
  g_task_run_in_thread(task, read_trace);
  return TRUE;
}

gboolean
ts_studio_window_open(TsStudioWindow *win, GFile *file, GError **error)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win) && G_IS_FILE(file), FALSE);

  g_autofree char *path = g_file_get_path(file);
  if (path == NULL) {
    g_autofree char *uri = g_file_get_uri(file);
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN,
                "%s: not a local file; copy it to this machine and open the copy", uri);
    return FALSE;
  }
  if (is_trace(path)) {
    g_autoptr(GArray) events = ts_studio_trace_load(path, error);
    if (events == NULL)
      return FALSE;
    show_trace(win, g_steal_pointer(&path), events);
    return TRUE;
  } else {
    TsStudioDb *db = ts_studio_db_open(path, error);
    if (db == NULL)
      return FALSE;
    close_file(win);
    win->path = g_steal_pointer(&path);
    win->db = db;
    ts_studio_sidebar_set_db(win->sidebar, db);
    if (ts_studio_db_workloads(db)->len == 0) {
      gtk_label_set_text(GTK_LABEL(win->empty_path), win->path);
      set_state(win, "empty");
    } else {
      set_state(win, "workbench");
      ts_studio_sidebar_select(win->sidebar, largest_workload(db));
    }
  }
  if (win->workload == NULL) {
    g_autofree char *title = g_strdup_printf("%s — Tessera Studio", win->path);
    gtk_window_set_title(GTK_WINDOW(win), title);
  }
  return TRUE;
}

void
ts_studio_window_show_error(TsStudioWindow *win, const char *primary, const GError *error)
{
  g_return_if_fail(TS_STUDIO_IS_WINDOW(win) && primary != NULL);

  GtkWidget *dialog =
      gtk_message_dialog_new(GTK_WINDOW(win), GTK_DIALOG_MODAL | GTK_DIALOG_DESTROY_WITH_PARENT,
                             GTK_MESSAGE_ERROR, GTK_BUTTONS_CLOSE, "%s", primary);
  if (error != NULL)
    gtk_message_dialog_format_secondary_text(GTK_MESSAGE_DIALOG(dialog), "%s", error->message);
  g_signal_connect(dialog, "response", G_CALLBACK(gtk_window_destroy), NULL);
  gtk_window_present(GTK_WINDOW(dialog));
}

const char *
ts_studio_window_get_state(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return gtk_stack_get_visible_child_name(GTK_STACK(win->states));
}

gboolean
ts_studio_window_content_ready(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), FALSE);
  const char *state = ts_studio_window_get_state(win);
  if (g_str_equal(state, "trace"))
    return ts_studio_timeline_area_get_view(win->trace_area) != NULL;
  return g_str_equal(state, "workbench") || g_str_equal(state, "empty");
}

const char *
ts_studio_window_get_placeholder(TsStudioWindow *win, const char *page)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);

  const char *state = ts_studio_window_get_state(win);
  if (g_str_equal(state, "empty"))
    return gtk_label_get_text(GTK_LABEL(win->empty_label));
  if (g_str_equal(state, "workbench") && page != NULL && g_str_equal(page, "timeline") &&
      g_str_equal(gtk_stack_get_visible_child_name(GTK_STACK(win->timeline_states)), "none"))
    return gtk_label_get_text(GTK_LABEL(win->no_profile_label));
  return NULL;
}

const char *
ts_studio_window_get_path(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return win->path;
}

TsStudioDb *
ts_studio_window_get_db(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return win->db;
}

const TsStudioWorkload *
ts_studio_window_get_workload(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return win->workload;
}

void
ts_studio_window_select_workload(TsStudioWindow *win, const TsStudioWorkload *workload)
{
  g_return_if_fail(TS_STUDIO_IS_WINDOW(win));
  ts_studio_sidebar_select(win->sidebar, workload);
}

gint64
ts_studio_window_get_profile_id(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), 0);
  return win->profile_id;
}

const char *
ts_studio_window_get_page(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  if (g_str_equal(ts_studio_window_get_state(win), "trace"))
    return "trace";
  return gtk_stack_get_visible_child_name(GTK_STACK(win->views));
}

gboolean
ts_studio_window_set_page(TsStudioWindow *win, const char *page)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win) && page != NULL, FALSE);
  if (!g_strv_contains(ts_studio_window_pages, page))
    return FALSE;
  gtk_stack_set_visible_child_name(GTK_STACK(win->views), page);
  return TRUE;
}

GtkWidget *
ts_studio_window_get_page_widget(TsStudioWindow *win, const char *page)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win) && page != NULL, NULL);

  const struct {
    const char *page;
    gpointer widget;
  } pages[] = {
      {"trials", win->trial_list},      {"roofline", win->roofline_area},
      {"history", win->history_area},   {"predicted", win->predicted_area},
      {"timeline", win->timeline_area}, {"lowering", win->lowering_pane},
      {"bandwidth", win->bandwidth_area}, {"trace", win->trace_area},
  };
  for (guint i = 0; i < G_N_ELEMENTS(pages); i++)
    if (g_str_equal(page, pages[i].page))
      return pages[i].widget;
  return NULL;
}

TsStudioSidebar *
ts_studio_window_get_sidebar(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return win->sidebar;
}

TsStudioTrialList *
ts_studio_window_get_trial_list(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return win->trial_list;
}

TsStudioLoweringPane *
ts_studio_window_get_lowering_pane(TsStudioWindow *win)
{
  g_return_val_if_fail(TS_STUDIO_IS_WINDOW(win), NULL);
  return win->lowering_pane;
}

void
ts_studio_window_cancel_open(TsStudioWindow *win)
{
  g_return_if_fail(TS_STUDIO_IS_WINDOW(win));
  on_loading_cancel(NULL, win);
}
