/* test-studio-window.c — the studio's window on small caches made through the db API: the
 * sidebar's rows, the trials list sorted and filtered, selection kept in step with the plots
 * and the lowering pane, empty, corrupt and trace files, Ctrl+E's exports, the window actions,
 * and the application following the settings portal's colour scheme (a fake portal on a
 * private bus). Needs a display (meson runs it under xvfb-run); exits 77 without one. */
#include <dlfcn.h>
#include <gdk/x11/gdkx.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test-util.h"
#include "ts-studio-app.h"
#include "ts-studio-sidebar-node.h"
#include "ts-studio-timeline.h"
#include "ts-studio-trial-item.h"
#include "ts-studio-window.h"

static char *dir, *cache, *small_cache, *empty_cache, *garbage, *trace;
static gint64 trial_ids[5]; /* of the big workload, in insertion order */

/* Valid points of gemm f32 at 64x64x64 on the CPU, so the lowering pane really lowers them. */
static const char *const points[] = {
    "block(m=96, n=4080, k=384).micro(m=4, n=24).vector(8).threads(2).unroll(4)",
    "block(m=7)",
    "block(m=144, n=2016, k=256).micro(m=4, n=8).vector(4).threads(2).unroll(4)",
    "block(m=72, n=2016, k=128).micro(m=6, n=16).vector(8).threads(1).unroll(8)",
    "block(m=72, n=4080, k=128).micro(m=8, n=16).vector(8).threads(1).unroll(8)",
};
static const TsDbTrialStatus statuses[] = {TS_DB_TRIAL_OK, TS_DB_TRIAL_COMPILE_ERROR,
                                           TS_DB_TRIAL_OK, TS_DB_TRIAL_TIMEOUT, TS_DB_TRIAL_OK};
static const double medians[] = {3e4, NAN, 1e4, 5e5, 2e4};
static const char *const strategies[] = {"random", "random", "annealing", "annealing", "random"};

static gint64
add_trial(TsDb *db, gint64 w, gint64 d, gint64 t, const char *point, TsDbTrialStatus status,
          double median, const char *strategy)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDbTrial) trial = ts_db_trial_new();
  gint64 id = 0;

  trial->workload_id = w, trial->device_id = d, trial->toolchain_id = t;
  trial->schedule = g_strdup(point);
  trial->status = status;
  trial->median_ns = median;
  if (status == TS_DB_TRIAL_OK) { /* a sample range around the median, as measured ones have */
    trial->min_ns = median * 0.9;
    trial->max_ns = median * 1.3;
    /* What a GPU kernel's compiler reports; the fastest came from the artifact cache. And a
     * CPU time of 1.5x the wall time (a host kernel's two threads, one often off its core). */
    trial->metrics_json = g_strdup_printf(
        "{\"gflops\": 1, \"registers\": %d, \"spill_stores\": 8, \"spill_loads\": 4, "
        "\"process_cpu_ns\": %.17g}",
        64 + (int)(median / 1e4), 1.5 * median);
    trial->compile_ms = median <= 1e4 ? 0 : median / 1e3;
  }
  trial->error_text = status == TS_DB_TRIAL_OK ? NULL : g_strdup("it failed");
  trial->strategy = g_strdup(strategy);
  g_assert_true(ts_db_add_trial(db, trial, &id, NULL, &error));
  g_assert_no_error(error);
  return id;
}

/* cache: a CPU with two workloads (5 trials incl. 2 failures, and 1) and a profile, plus a
 * GPU row with no trials; small_cache: one trial, no profile; empty_cache: no trials. */
typedef enum { CACHE_EMPTY, CACHE_SMALL, CACHE_FULL } CacheKind;

static void
make_cache(const char *path, CacheKind kind)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsDb) db = ts_db_open(path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  if (kind == CACHE_EMPTY)
    return;
  TsDbDevice cpu = {.backend = "cpu", .name = "test cpu", .arch = "x86_64+avx2"};
  TsDbDevice gpu = {.backend = "cuda", .name = "idle gpu", .arch = "sm_90a"};
  gint64 d = ts_db_ensure_device(db, &cpu, &error);
  ts_db_ensure_device(db, &gpu, &error);
  gint64 t = ts_db_ensure_toolchain(db, "gcc 12.2.0", "tessera-kgen-1", &error);
  gint64 big = ts_db_ensure_workload(db, "gemm", "M=64,N=64,K=64", "f32", &error);
  gint64 small = ts_db_ensure_workload(db, "gemm", "M=32,N=32,K=32", "f32", &error);
  g_assert_no_error(error);
  add_trial(db, small, d, t, points[0], TS_DB_TRIAL_OK, 5e3, "random");
  if (kind == CACHE_SMALL)
    return;
  for (guint i = 0; i < G_N_ELEMENTS(trial_ids); i++)
    trial_ids[i] = add_trial(db, big, d, t, points[i], statuses[i], medians[i], strategies[i]);
  g_assert_true(ts_db_refresh_best(db, big, d, t, NULL, &error));
  TsDbProfile profile = {.workload_id = big, .device_id = d, .toolchain_id = t, .kind = "run"};
  /* As a profiled tune names each trial's range. */
  g_autofree char *trial_range = g_strdup_printf("trial %" G_GINT64_FORMAT ": %s", trial_ids[3],
                                                 points[3]);
  TsDbEvent events[] = {
      {.kind = "range", .name = "tessera: measure", .dur_ns = 1000, .lane = 1},
      {.kind = "kernel",
       .name = "ts_gemm",
       .start_ns = 100,
       .dur_ns = 800,
       .lane = 1,
       .depth = 1,
       .detail = "timed"},
      {.kind = "range", .name = trial_range, .start_ns = 1200, .dur_ns = 500, .lane = 1},
  };
  g_assert_true(ts_db_add_profile(db, &profile, events, G_N_ELEMENTS(events), NULL, &error));
  g_assert_no_error(error);
}

static void
spin(guint ms)
{
  gint64 end = g_get_monotonic_time() + ms * 1000;
  while (g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, FALSE);
}

static TsStudioWindow *
open_window(const char *path)
{
  TsStudioWindow *win = ts_studio_window_new(NULL);
  g_autoptr(GFile) file = g_file_new_for_path(path);
  g_autoptr(GError) error = NULL;

  g_assert_true(ts_studio_window_open(win, file, &error));
  g_assert_no_error(error);
  gtk_window_present(GTK_WINDOW(win));
  spin(200);
  return win;
}

static guint
index_of_row(GListModel *rows, guint i)
{
  g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(rows, i);
  return ts_studio_trial_item_get_trial(item)->index;
}

static void
test_sidebar(void)
{
  TsStudioWindow *win = open_window(cache);
  GListModel *rows = ts_studio_sidebar_get_rows(ts_studio_window_get_sidebar(win));

  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "workbench");
  /* The GPU that has no trials is left out; the CPU's tree is expanded. */
  g_assert_cmpuint(g_list_model_get_n_items(rows), ==, 3);
  g_autoptr(GtkTreeListRow) row0 = g_list_model_get_item(rows, 0);
  g_autoptr(TsStudioSidebarNode) device = gtk_tree_list_row_get_item(row0);
  g_assert_cmpstr(ts_studio_sidebar_node_get_title(device), ==, "test cpu");
  g_assert_nonnull(strstr(ts_studio_sidebar_node_get_subtitle(device), "2 workloads"));
  g_assert_null(ts_studio_sidebar_node_get_workload(device));
  guint seen = 0;
  for (guint i = 1; i < 3; i++) {
    g_autoptr(GtkTreeListRow) row = g_list_model_get_item(rows, i);
    g_autoptr(TsStudioSidebarNode) node = gtk_tree_list_row_get_item(row);
    const char *subtitle = ts_studio_sidebar_node_get_subtitle(node);
    g_assert_nonnull(ts_studio_sidebar_node_get_workload(node));
    seen |= g_str_has_prefix(subtitle, "5 trials, 3 ok")  ? 1
            : g_str_has_prefix(subtitle, "1 trial, 1 ok") ? 2
                                                          : 0;
  }
  g_assert_cmpuint(seen, ==, 3);

  /* It opens on the workload with the most trials, its best trial selected. */
  const TsStudioWorkload *workload = ts_studio_window_get_workload(win);
  g_assert_cmpuint(workload->n_trials, ==, 5);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(win);
  g_autoptr(GPtrArray) selected = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(selected->len, ==, 1);
  g_assert_cmpint(((TsStudioTrial *)selected->pdata[0])->id, ==, trial_ids[2]);
  g_assert_cmpint(ts_studio_window_get_profile_id(win), !=, 0);
  g_assert_null(ts_studio_window_get_placeholder(win, "timeline"));

  /* The other workload: its one trial; its timeline falls back to the cache's profile. */
  GPtrArray *workloads = ts_studio_db_workloads(ts_studio_window_get_db(win));
  for (guint i = 0; i < workloads->len; i++)
    if (g_ptr_array_index(workloads, i) != workload)
      ts_studio_window_select_workload(win, g_ptr_array_index(workloads, i));
  g_assert_true(ts_studio_window_get_workload(win) != workload);
  g_assert_cmpuint(ts_studio_trial_list_get_n_rows(list), ==, 1);
  g_assert_cmpint(ts_studio_window_get_profile_id(win), !=, 0);
  gtk_window_destroy(GTK_WINDOW(win));
}

static void
check_order(TsStudioTrialList *list, const guint *expect)
{
  GListModel *rows = ts_studio_trial_list_get_rows(list);
  g_assert_cmpuint(g_list_model_get_n_items(rows), ==, 5);
  for (guint i = 0; i < 5; i++)
    g_assert_cmpuint(index_of_row(rows, i), ==, expect[i]);
}

static void
test_sort(void)
{
  TsStudioWindow *win = open_window(cache);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(win);

  /* By time: fastest first, failures last (in trial order); reversed as a whole. */
  g_assert_true(ts_studio_trial_list_sort(list, "time", GTK_SORT_ASCENDING));
  check_order(list, (const guint[]){2, 4, 0, 1, 3});
  g_assert_true(ts_studio_trial_list_sort(list, "time", GTK_SORT_DESCENDING));
  check_order(list, (const guint[]){3, 1, 0, 4, 2});
  /* Highest throughput first, and failures still last. */
  g_assert_true(ts_studio_trial_list_sort(list, "gflops", GTK_SORT_DESCENDING));
  check_order(list, (const guint[]){2, 4, 0, 3, 1});
  g_assert_true(ts_studio_trial_list_sort(list, "id", GTK_SORT_ASCENDING));
  check_order(list, (const guint[]){0, 1, 2, 3, 4});
  g_assert_true(ts_studio_trial_list_sort(list, "strategy", GTK_SORT_ASCENDING));
  g_assert_cmpuint(index_of_row(ts_studio_trial_list_get_rows(list), 0), ==, 2);
  g_assert_false(ts_studio_trial_list_sort(list, "colour", GTK_SORT_ASCENDING));
  gtk_window_destroy(GTK_WINDOW(win));
}

static void
test_filter(void)
{
  TsStudioWindow *win = open_window(cache);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(win);
  const struct {
    const char *text, *status;
    guint rows;
  } cases[] = {
      {NULL, "ok", 3},        {NULL, "failed", 2},  {NULL, "timeout", 1},
      {"annealing", NULL, 2}, {"ANNEAL", "ok", 1},  {"n=4080", NULL, 2},
      {"m=72", "failed", 1},  {"nothing", NULL, 0}, {NULL, NULL, 5},
  };

  GtkWidget *plots[] = {ts_studio_window_get_page_widget(win, "roofline"),
                        ts_studio_window_get_page_widget(win, "history"),
                        ts_studio_window_get_page_widget(win, "predicted")};
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    ts_studio_trial_list_set_filter(list, cases[i].text, cases[i].status);
    g_assert_cmpuint(ts_studio_trial_list_get_n_rows(list), ==, cases[i].rows);
    /* The plots show what the list shows. */
    g_assert_cmpuint(ts_studio_plot_area_get_view(TS_STUDIO_PLOT_AREA(plots[0]))->n_marks, ==,
                     cases[i].rows);
    for (guint k = 1; k < G_N_ELEMENTS(plots); k++)
      g_assert_cmpuint(ts_studio_plot_area_get_view(TS_STUDIO_PLOT_AREA(plots[k]))->n_marks, <=,
                       cases[i].rows);
  }
  /* A trial hidden by the filter, selected from a plot: the filter gives way. */
  ts_studio_trial_list_set_filter(list, NULL, "failed");
  g_assert_true(ts_studio_trial_list_select(list, trial_ids[0], FALSE));
  g_assert_cmpuint(ts_studio_trial_list_get_n_rows(list), ==, 5);
  g_assert_false(ts_studio_trial_list_select(list, 999999, FALSE));
  gtk_window_destroy(GTK_WINDOW(win));
}

static void
test_selection(void)
{
  TsStudioWindow *win = open_window(cache);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(win);
  TsStudioLoweringPane *pane = ts_studio_window_get_lowering_pane(win);
  GtkWidget *roofline = ts_studio_window_get_page_widget(win, "roofline");

  /* A click in a plot selects the trial in the list, and every plot shows it. */
  g_signal_emit_by_name(roofline, "mark-activated", trial_ids[4], FALSE);
  g_autoptr(GPtrArray) one = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(one->len, ==, 1);
  g_assert_cmpint(((TsStudioTrial *)one->pdata[0])->id, ==, trial_ids[4]);
  g_assert_cmpint(ts_studio_plot_area_get_view(TS_STUDIO_PLOT_AREA(roofline))->selected, ==,
                  trial_ids[4]);

  g_assert_true(ts_studio_window_set_page(win, "lowering"));
  spin(100);
  g_assert_true(g_str_has_prefix(ts_studio_lowering_pane_get_stage(pane, TS_STUDIO_STAGE_GRAPH),
                                 "graph gemm"));
  g_assert_nonnull(
      strstr(ts_studio_lowering_pane_get_stage(pane, TS_STUDIO_STAGE_TARGET),
             "/* launched with BM=72, "));
  /* Named by its id, as the plots' tooltips, exports and the CLI name it. */
  g_autofree char *head = g_strdup_printf("Trial %" G_GINT64_FORMAT " · ", trial_ids[4]);
  g_assert_true(g_str_has_prefix(ts_studio_lowering_pane_get_title(pane), head));
  ts_studio_lowering_pane_set_diff(pane, TRUE);
  g_assert_false(ts_studio_lowering_pane_get_diff(pane)); /* one trial: nothing to diff */

  /* Two trials: the older is the diff's left side; their Target IRs differ. */
  g_assert_true(ts_studio_trial_list_select(list, trial_ids[0], TRUE));
  g_autoptr(GPtrArray) two = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(two->len, ==, 2);
  g_assert_cmpint(((TsStudioTrial *)two->pdata[0])->id, ==, trial_ids[0]);
  ts_studio_lowering_pane_set_diff(pane, TRUE);
  g_assert_true(ts_studio_lowering_pane_get_diff(pane));
  g_assert_cmpuint(ts_studio_lowering_pane_get_n_changed(pane), >, 2);
  g_autofree char *both = g_strdup_printf("Trial %" G_GINT64_FORMAT " → trial %" G_GINT64_FORMAT,
                                          trial_ids[0], trial_ids[4]);
  g_assert_cmpstr(ts_studio_lowering_pane_get_title(pane), ==, both);
  /* Each diff line carries its numbers in both trials' sources. */
  g_autofree char *diff = ts_studio_lowering_pane_get_diff_text(pane);
  g_assert_true(g_regex_match_simple("^    1     1   ", diff, G_REGEX_MULTILINE, 0));
  g_assert_true(g_regex_match_simple("^ +[0-9]+       - ", diff, G_REGEX_MULTILINE, 0));
  g_assert_true(g_regex_match_simple("^       +[0-9]+ \\+ ", diff, G_REGEX_MULTILINE, 0));
  /* A third, Ctrl+clicked in a plot: the heading says which two the diff compares. */
  g_signal_emit_by_name(roofline, "mark-activated", trial_ids[2], TRUE);
  g_autoptr(GPtrArray) three = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(three->len, ==, 3);
  g_autofree char *of3 = g_strdup_printf("Trial %" G_GINT64_FORMAT " → trial %" G_GINT64_FORMAT
                                         " (the two oldest of 3 selected)",
                                         trial_ids[0], trial_ids[2]);
  g_assert_cmpstr(ts_studio_lowering_pane_get_title(pane), ==, of3);
  g_assert_nonnull(
      strstr(ts_studio_lowering_pane_get_stage(pane, TS_STUDIO_STAGE_TARGET),
             "/* launched with BM=96, "));

  /* A brush over the whole roofline: every plotted trial is selected in the list, and drawn
   * selected in the other plots. */
  g_assert_true(ts_studio_window_set_page(win, "roofline"));
  spin(100);
  int w = gtk_widget_get_width(roofline), h = gtk_widget_get_height(roofline);
  g_assert_cmpint(w, >, 100);
  g_autoptr(GArray) brushed =
      ts_studio_plot_area_brush(TS_STUDIO_PLOT_AREA(roofline), 0, 0, w, h);
  g_assert_cmpuint(brushed->len, >=, 2);
  g_autoptr(GPtrArray) all = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(all->len, ==, brushed->len);
  TsStudioView *history =
      ts_studio_plot_area_get_view(TS_STUDIO_PLOT_AREA(ts_studio_window_get_page_widget(win, "history")));
  for (guint i = 0; i < brushed->len; i++) {
    gint64 id = g_array_index(brushed, gint64, i);
    gboolean listed = FALSE;
    for (guint j = 0; j < all->len; j++)
      listed |= ((TsStudioTrial *)all->pdata[j])->id == id;
    g_assert_true(listed);
    g_assert_true(ts_studio_view_is_selected(history, id));
  }
  spin(100);
  gtk_window_destroy(GTK_WINDOW(win));
}

/* A profiled tune's "trial ID: POINT" range and the trial in the list select each other. */
static void
test_timeline_link(void)
{
  TsStudioWindow *win = open_window(cache);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(win);
  g_assert_true(ts_studio_window_set_page(win, "timeline"));
  GtkWidget *area = ts_studio_window_get_page_widget(win, "timeline");
  g_assert_true(TS_STUDIO_IS_TIMELINE_AREA(area));
  TsStudioView *view = NULL;
  gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  while ((view = ts_studio_timeline_area_get_view(TS_STUDIO_TIMELINE_AREA(area))) == NULL &&
         g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, TRUE);
  g_assert_nonnull(view);
  gint64 mark = ts_studio_timeline_find_trial(view, trial_ids[3]);
  g_assert_cmpint(mark, >, 0);
  g_assert_cmpint(ts_studio_timeline_trial_of(view, mark), ==, trial_ids[3]);
  g_assert_cmpint(ts_studio_timeline_find_trial(view, trial_ids[1]), ==, 0);

  g_signal_emit_by_name(area, "event-activated", mark);
  g_autoptr(GPtrArray) selected = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(selected->len, ==, 1);
  g_assert_cmpint(((TsStudioTrial *)selected->pdata[0])->id, ==, trial_ids[3]);

  g_assert_true(ts_studio_trial_list_select(list, trial_ids[0], FALSE));
  g_assert_cmpint(view->selected, ==, 0); /* no range of its own */
  g_assert_true(ts_studio_trial_list_select(list, trial_ids[3], FALSE));
  g_assert_cmpint(view->selected, ==, mark);
  gtk_window_destroy(GTK_WINDOW(win));
}

static void
test_states(void)
{
  TsStudioWindow *win = open_window(empty_cache);
  g_autoptr(GError) error = NULL;

  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "empty");
  g_assert_nonnull(strstr(ts_studio_window_get_placeholder(win, NULL), "no trials yet"));

  /* A corrupt file: an error naming it, and the window keeps what it showed. */
  g_autoptr(GFile) bad = g_file_new_for_path(garbage);
  g_assert_false(ts_studio_window_open(win, bad, &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, garbage));
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "empty");
  g_clear_error(&error);

  g_autoptr(GFile) small = g_file_new_for_path(small_cache);
  g_assert_true(ts_studio_window_open(win, small, &error));
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "workbench");
  g_assert_nonnull(strstr(ts_studio_window_get_placeholder(win, "timeline"), "No profile"));

  g_autoptr(GFile) json = g_file_new_for_path(trace);
  g_assert_true(ts_studio_window_open(win, json, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "trace");
  g_assert_cmpstr(ts_studio_window_get_page(win), ==, "trace");
  spin(100);

  /* The bar above the trace finds events by name: the count, then Enter selects the match. */
  GtkWidget *area = ts_studio_window_get_page_widget(win, "trace");
  g_assert_true(TS_STUDIO_IS_TIMELINE_AREA(area));
  GtkWidget *bar = gtk_widget_get_first_child(gtk_widget_get_parent(area));
  GtkWidget *entry = gtk_widget_get_first_child(bar);
  GtkWidget *matches = gtk_widget_get_next_sibling(entry);
  g_assert_true(GTK_IS_SEARCH_ENTRY(entry));
  TsStudioView *view = ts_studio_timeline_area_get_view(TS_STUDIO_TIMELINE_AREA(area));
  for (guint i = 0; i < 100 && view == NULL; i++) {
    spin(20);
    view = ts_studio_timeline_area_get_view(TS_STUDIO_TIMELINE_AREA(area));
  }
  g_assert_nonnull(view);
  gtk_editable_set_text(GTK_EDITABLE(entry), "K");
  spin(400); /* the entry's search delay */
  g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(matches)), ==, "1 match — Enter for the next");
  g_signal_emit_by_name(entry, "activate");
  g_assert_cmpint(view->selected, ==, 1);
  gtk_editable_set_text(GTK_EDITABLE(entry), "nothing like it");
  spin(400);
  g_assert_cmpstr(gtk_label_get_text(GTK_LABEL(matches)), ==, "no match");
  gtk_window_destroy(GTK_WINDOW(win));
}

/* Until the state leaves "loading", or 20 s pass. */
static void
wait_loaded(TsStudioWindow *win)
{
  gint64 end = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
  while (g_str_equal(ts_studio_window_get_state(win), "loading") &&
         g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, TRUE);
}

/* A trace read in the background: "loading" at once, then the trace; cancelled, the window
 * returns to what it showed; a bad trace returns too (the dialog says why); a missing file
 * fails before anything starts. */
static void
test_open_async(void)
{
  TsStudioWindow *win = open_window(small_cache);
  g_autoptr(GError) error = NULL;
  g_autoptr(GFile) json = g_file_new_for_path(trace);
  g_assert_true(ts_studio_window_open_async(win, json, &error));
  g_assert_no_error(error);
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "loading");
  wait_loaded(win);
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "trace");

  g_autoptr(GFile) small = g_file_new_for_path(small_cache);
  g_assert_true(ts_studio_window_open_async(win, small, &error)); /* a cache: at once */
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "workbench");
  g_assert_true(ts_studio_window_open_async(win, json, &error));
  ts_studio_window_cancel_open(win);
  wait_loaded(win);
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "workbench");

  g_autofree char *bad_path = g_build_filename(dir, "bad-trace.json", NULL);
  g_assert_true(g_file_set_contents(bad_path, "{\"traceEvents\": [", -1, NULL));
  g_autoptr(GFile) bad = g_file_new_for_path(bad_path);
  g_assert_true(ts_studio_window_open_async(win, bad, &error));
  wait_loaded(win);
  g_assert_cmpstr(ts_studio_window_get_state(win), ==, "workbench");

  g_autofree char *none_path = g_build_filename(dir, "none.json", NULL);
  g_autoptr(GFile) none = g_file_new_for_path(none_path);
  g_assert_false(ts_studio_window_open_async(win, none, &error));
  g_assert_nonnull(strstr(error->message, none_path));
  spin(100);
  gtk_window_destroy(GTK_WINDOW(win));
}

static void
test_actions_and_export(void)
{
  TsStudioWindow *win = open_window(cache);
  g_autoptr(GError) error = NULL;
  g_autofree char *csv = g_build_filename(dir, "trials.csv", NULL);
  g_autofree char *txt = g_build_filename(dir, "lowering.txt", NULL);
  g_autofree char *text = NULL;

  g_action_group_activate_action(G_ACTION_GROUP(win), "view", g_variant_new_string("roofline"));
  g_assert_cmpstr(ts_studio_window_get_page(win), ==, "roofline");
  g_action_group_activate_action(G_ACTION_GROUP(win), "find", NULL);
  g_assert_cmpstr(ts_studio_window_get_page(win), ==, "trials");

  ts_studio_trial_list_set_filter(ts_studio_window_get_trial_list(win), NULL, "ok");
  g_assert_true(ts_studio_window_export_to(win, csv, &error));
  g_assert_no_error(error);
  g_assert_true(g_file_get_contents(csv, &text, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(g_strchomp(text), "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 1 + 3); /* the header, the rows shown */
  g_assert_true(g_str_has_prefix(lines[0], "index,id,status"));
  g_assert_true(
      g_str_has_suffix(lines[0], ",min_ms,max_ms,predicted_ms,registers,spill_bytes,compile_ms,"
                                 "cpu_per_wall"));
  /* Every verified row has its sample range around its median. */
  guint ranged = 0;
  for (guint i = 1; lines[i]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    guint n = g_strv_length(f);
    /* What the compiler reported, with the verified rows, and the CPU time's share. */
    g_assert_cmpfloat_with_epsilon(g_ascii_strtod(f[n - 1], NULL), 1.5, 1e-9);
    g_assert_cmpstr(f[n - 3], ==, "12");
    double med_ns = g_ascii_strtod(f[3], NULL) * 1e6;
    g_assert_cmpint(atoi(f[n - 4]), ==, 64 + (int)(med_ns / 1e4 + 1e-9));
    g_assert_cmpfloat(g_ascii_strtod(f[n - 2], NULL), ==, med_ns <= 1e4 ? 0 : med_ns / 1e3);
    if (!*f[n - 7] || !*f[n - 6])
      continue; /* a trial stored without its range */
    double med = g_ascii_strtod(f[3], NULL), lo = g_ascii_strtod(f[n - 7], NULL),
           hi = g_ascii_strtod(f[n - 6], NULL);
    g_assert_cmpfloat(lo, <=, med);
    g_assert_cmpfloat(med, <=, hi);
    ranged++;
  }
  g_assert_cmpuint(ranged, ==, 3);
  g_assert_true(ts_studio_trial_list_sort(ts_studio_window_get_trial_list(win), "spread",
                                          GTK_SORT_DESCENDING));
  g_assert_true(ts_studio_trial_list_sort(ts_studio_window_get_trial_list(win), "predicted",
                                          GTK_SORT_ASCENDING));
  g_assert_true(ts_studio_trial_list_sort(ts_studio_window_get_trial_list(win), "registers",
                                          GTK_SORT_ASCENDING));
  g_assert_true(ts_studio_trial_list_sort(ts_studio_window_get_trial_list(win), "compile",
                                          GTK_SORT_ASCENDING));
  g_assert_true(ts_studio_trial_list_sort(ts_studio_window_get_trial_list(win), "cpu",
                                          GTK_SORT_DESCENDING));

  ts_studio_window_set_page(win, "lowering");
  spin(100);
  g_assert_true(ts_studio_window_export_to(win, txt, &error));
  g_assert_no_error(error);
  g_clear_pointer(&text, g_free);
  g_assert_true(g_file_get_contents(txt, &text, NULL, NULL));
  g_assert_true(g_str_has_prefix(text, "== Graph ==\ngraph gemm"));
  g_assert_nonnull(strstr(text, "== Target IR ==\n"));
  /* The same, drawn: an SVG with one group per stage. */
  g_autofree char *svg = g_build_filename(dir, "lowering.svg", NULL);
  g_assert_true(ts_studio_window_export_to(win, svg, &error));
  g_assert_no_error(error);
  g_clear_pointer(&text, g_free);
  g_assert_true(g_file_get_contents(svg, &text, NULL, NULL));
  g_assert_nonnull(strstr(text, "id=\"stage-target\""));
  gtk_window_destroy(GTK_WINDOW(win));
}

/* ---- the settings portal, faked on the private bus ---- */

static void
portal_call(GDBusConnection *bus, const char *sender, const char *path, const char *interface,
            const char *method, GVariant *parameters, GDBusMethodInvocation *invocation,
            gpointer data)
{
  const char *ns, *key;
  g_variant_get(parameters, "(&s&s)", &ns, &key);
  if (g_str_equal(ns, "org.freedesktop.appearance") && g_str_equal(key, "color-scheme"))
    g_dbus_method_invocation_return_value(
        invocation, g_variant_new("(v)", g_variant_new_variant(g_variant_new_uint32(1))));
  else
    g_dbus_method_invocation_return_dbus_error(invocation, "org.freedesktop.portal.Error.NotFound",
                                               "no such setting");
}

static gboolean
prefers_dark(void)
{
  gboolean dark = FALSE;
  g_object_get(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", &dark, NULL);
  return dark;
}

static gboolean
wait_dark(gboolean want)
{
  gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  while (prefers_dark() != want && g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, FALSE);
  return prefers_dark() == want;
}

static gboolean followed[2], opened, remembered, error_shown, shortcuts_shown, about_shown;

static gboolean
wait_for(gboolean (*done)(gpointer), gpointer data)
{
  gint64 end = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
  while (!done(data) && g_get_monotonic_time() < end)
    g_main_context_iteration(NULL, FALSE);
  return done(data);
}

static gboolean
has_toplevel(gpointer type)
{
  GListModel *toplevels = gtk_window_get_toplevels(); /* owned by GTK */
  for (guint i = 0; i < g_list_model_get_n_items(toplevels); i++) {
    g_autoptr(GObject) window = g_list_model_get_item(toplevels, i);
    if (G_TYPE_CHECK_INSTANCE_TYPE(window, GPOINTER_TO_SIZE(type)))
      return TRUE;
  }
  return FALSE;
}

static gboolean
recent_names_cache(gpointer app)
{
  GMenuModel *recent = ts_studio_app_get_recent_menu(app);
  for (int i = 0; i < g_menu_model_get_n_items(recent); i++) {
    g_autofree char *label = NULL;
    g_menu_model_get_item_attribute(recent, i, G_MENU_ATTRIBUTE_LABEL, "s", &label);
    if (g_strcmp0(label, "full.db") == 0)
      return TRUE;
  }
  return FALSE;
}

/* Runs inside the application: the portal's scheme, opening a file, the recent files, the
 * shortcuts and about windows, then app.quit. */
static gboolean
drive_app(gpointer data)
{
  GApplication *app = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);

  followed[0] = wait_dark(TRUE);
  g_dbus_connection_emit_signal(
      bus, NULL, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.Settings",
      "SettingChanged",
      g_variant_new("(ssv)", "org.freedesktop.appearance", "color-scheme", g_variant_new_uint32(2)),
      &error);
  g_assert_no_error(error);
  followed[1] = wait_dark(FALSE);

  g_autoptr(GFile) file = g_file_new_for_path(cache);
  g_application_open(app, &file, 1, "");
  GtkWindow *win = gtk_application_get_active_window(GTK_APPLICATION(app));
  opened = TS_STUDIO_IS_WINDOW(win) &&
           g_str_equal(ts_studio_window_get_state(TS_STUDIO_WINDOW(win)), "workbench");
  remembered = wait_for(recent_names_cache, app);
  /* A file that cannot be opened: a dialog over the window, which stays; no new window. */
  guint n_windows = g_list_length(gtk_application_get_windows(GTK_APPLICATION(app)));
  g_autoptr(GFile) bad = g_file_new_for_path(garbage);
  g_application_open(app, &bad, 1, "");
  error_shown = wait_for(has_toplevel, GSIZE_TO_POINTER(GTK_TYPE_MESSAGE_DIALOG)) &&
                g_list_length(gtk_application_get_windows(GTK_APPLICATION(app))) == n_windows &&
                g_str_equal(ts_studio_window_get_state(TS_STUDIO_WINDOW(win)), "workbench");
  g_action_group_activate_action(G_ACTION_GROUP(app), "shortcuts", NULL);
  shortcuts_shown = wait_for(has_toplevel, GSIZE_TO_POINTER(GTK_TYPE_SHORTCUTS_WINDOW));
  g_action_group_activate_action(G_ACTION_GROUP(app), "about", NULL);
  about_shown = wait_for(has_toplevel, GSIZE_TO_POINTER(GTK_TYPE_ABOUT_DIALOG));
  /* As app.quit does: with its windows gone, the application returns from run. */
  g_action_group_activate_action(G_ACTION_GROUP(app), "quit", NULL);
  return G_SOURCE_REMOVE;
}

static void
test_app(void)
{
  static const char xml[] =
      "<node><interface name='org.freedesktop.portal.Settings'><method name='Read'>"
      "<arg type='s' direction='in'/><arg type='s' direction='in'/>"
      "<arg type='v' direction='out'/></method></interface></node>";
  static const GDBusInterfaceVTable vtable = {.method_call = portal_call};
  g_autoptr(GError) error = NULL;
  g_autoptr(GDBusConnection) bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GDBusNodeInfo) node = g_dbus_node_info_new_for_xml(xml, &error);
  guint object = g_dbus_connection_register_object(
      bus, "/org/freedesktop/portal/desktop", node->interfaces[0], &vtable, NULL, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(GVariant) owned = g_dbus_connection_call_sync(
      bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName",
      g_variant_new("(su)", "org.freedesktop.portal.Desktop", 4), G_VARIANT_TYPE("(u)"),
      G_DBUS_CALL_FLAGS_NONE, -1, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(owned);

  g_object_set(gtk_settings_get_default(), "gtk-application-prefer-dark-theme", FALSE, NULL);
  g_autoptr(TsStudioApp) app = ts_studio_app_new(TRUE);
  /* Run for real (startup, activate, shutdown), so the app lets go of the bus at the end. */
  g_idle_add(drive_app, app);
  g_assert_cmpint(g_application_run(G_APPLICATION(app), 0, NULL), ==, 0);
  g_assert_true(followed[0]); /* read at startup: 1, dark */
  g_assert_true(followed[1]); /* SettingChanged: 2, light */
  g_assert_true(opened);
  g_assert_true(remembered); /* in "Open Recent" */
  g_assert_true(error_shown);
  g_assert_true(shortcuts_shown);
  g_assert_true(about_shown);
  g_dbus_connection_unregister_object(bus, object);
}

/* ---- a real Ctrl+click, through the X server ----
 * The clicks above are the list's API or a plot's signal; this one is what a user does: the
 * XTEST extension (Xvfb has it) moves the pointer onto a row of the trials list and clicks,
 * Ctrl held, so GTK's own gesture on the row decides. libXtst and libX11 are looked up at run
 * time (GTK's X11 backend loads libX11; libXtst comes with the accessibility stack), and the
 * test skips where either is missing or the display is not X11. */
typedef int (*FakeButton)(Display *, unsigned int, Bool, unsigned long);
typedef int (*FakeKey)(Display *, unsigned int, Bool, unsigned long);
typedef int (*FakeMotion)(Display *, int, int, int, unsigned long);
typedef Bool (*TranslateCoordinates)(Display *, Window, Window, int, int, int *, int *, Window *);
typedef KeyCode (*KeysymToKeycode)(Display *, KeySym);
typedef int (*Flush)(Display *);

typedef struct {
  FakeButton button;
  FakeKey key;
  FakeMotion motion;
  TranslateCoordinates translate;
  KeysymToKeycode keycode;
  Flush flush;
} XTest;

static gboolean
xtest_load(XTest *x)
{
  void *xtst = dlopen("libXtst.so.6", RTLD_NOW | RTLD_GLOBAL);
  if (xtst == NULL)
    return FALSE;
  x->button = (FakeButton)dlsym(xtst, "XTestFakeButtonEvent");
  x->key = (FakeKey)dlsym(xtst, "XTestFakeKeyEvent");
  x->motion = (FakeMotion)dlsym(xtst, "XTestFakeMotionEvent");
  x->translate = (TranslateCoordinates)dlsym(RTLD_DEFAULT, "XTranslateCoordinates");
  x->keycode = (KeysymToKeycode)dlsym(RTLD_DEFAULT, "XKeysymToKeycode");
  x->flush = (Flush)dlsym(RTLD_DEFAULT, "XFlush");
  return x->button && x->key && x->motion && x->translate && x->keycode && x->flush;
}

/* The trials list's row widgets (CSS name "row" in the column view's list), top to bottom. */
static void
collect_rows(GtkWidget *w, GPtrArray *rows)
{
  for (GtkWidget *c = gtk_widget_get_first_child(w); c; c = gtk_widget_get_next_sibling(c)) {
    if (GTK_IS_LIST_VIEW(w) && g_strcmp0(gtk_widget_get_css_name(c), "row") == 0 &&
        gtk_widget_get_mapped(c) && gtk_widget_get_height(c) > 0)
      g_ptr_array_add(rows, c);
    collect_rows(c, rows);
  }
}

static void
click_row(XTest *x, TsStudioWindow *win, GtkWidget *row, gboolean ctrl)
{
  GdkSurface *surface = gtk_native_get_surface(GTK_NATIVE(win));
  Display *dpy = gdk_x11_display_get_xdisplay(gdk_surface_get_display(surface));
  double sx, sy;
  gtk_native_get_surface_transform(GTK_NATIVE(win), &sx, &sy);
  graphene_point_t in_row = GRAPHENE_POINT_INIT(24, gtk_widget_get_height(row) / 2.0), at;
  g_assert_true(gtk_widget_compute_point(row, GTK_WIDGET(win), &in_row, &at));
  int rx, ry;
  Window child;
  Window xid = gdk_x11_surface_get_xid(surface);
  x->translate(dpy, xid, DefaultRootWindow(dpy), (int)(at.x + sx), (int)(at.y + sy), &rx, &ry,
               &child);
  KeyCode control = x->keycode(dpy, XK_Control_L);
  x->motion(dpy, -1, rx, ry, 0);
  if (ctrl)
    x->key(dpy, control, True, 0);
  x->button(dpy, 1, True, 0);
  x->button(dpy, 1, False, 0);
  if (ctrl)
    x->key(dpy, control, False, 0);
  x->flush(dpy);
  /* Past the double-click time, so the next click on this row is a click of its own. */
  spin(600);
}

static void
test_native_ctrl_click(void)
{
  XTest x;
  if (!GDK_IS_X11_DISPLAY(gdk_display_get_default()) || !xtest_load(&x)) {
    g_test_skip("needs an X11 display and libXtst");
    return;
  }
  /* Windows earlier tests left (the about and shortcuts windows outlive their application)
   * would be where the pointer goes: without a window manager nothing moves them. */
  GListModel *toplevels = gtk_window_get_toplevels();
  while (g_list_model_get_n_items(toplevels) > 0) {
    g_autoptr(GtkWindow) w = g_list_model_get_item(toplevels, 0);
    gtk_window_destroy(w);
  }
  spin(100);
  TsStudioWindow *win = open_window(cache);
  g_assert_true(ts_studio_window_set_page(win, "trials"));
  spin(300);
  TsStudioTrialList *list = ts_studio_window_get_trial_list(win);
  g_autoptr(GPtrArray) rows = g_ptr_array_new();
  collect_rows(GTK_WIDGET(list), rows);
  g_assert_cmpuint(rows->len, >=, 3);

  click_row(&x, win, rows->pdata[0], FALSE);
  g_autoptr(GPtrArray) one = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(one->len, ==, 1);
  /* Ctrl+click adds a row, and the lowering pane diffs the two. */
  click_row(&x, win, rows->pdata[2], TRUE);
  g_autoptr(GPtrArray) two = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(two->len, ==, 2);
  g_assert_true(two->pdata[0] == one->pdata[0] || two->pdata[1] == one->pdata[0]);
  /* Again: the row leaves the selection. */
  click_row(&x, win, rows->pdata[2], TRUE);
  g_autoptr(GPtrArray) back = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(back->len, ==, 1);
  g_assert_true(back->pdata[0] == one->pdata[0]);
  /* A plain click replaces the selection. */
  click_row(&x, win, rows->pdata[1], FALSE);
  g_autoptr(GPtrArray) other = ts_studio_trial_list_get_selected(list);
  g_assert_cmpuint(other->len, ==, 1);
  g_assert_true(other->pdata[0] != one->pdata[0]);
  gtk_window_destroy(GTK_WINDOW(win));
}

int
main(int argc, char **argv)
{
  if (g_getenv("DISPLAY") == NULL && g_getenv("WAYLAND_DISPLAY") == NULL) {
    g_printerr("no display: run under xvfb-run (meson test does when it is installed)\n");
    return 77;
  }
  /* No accessibility bus under Xvfb, no user settings; no GL either: Xvfb has no GPU, and
   * Mesa's software driver, unloaded at exit, leaves 128 bytes that LeakSanitizer reports in an
   * unknown module (as in test-studio-plot-area). */
  g_setenv("GTK_A11Y", "none", TRUE);
  g_setenv("GSETTINGS_BACKEND", "memory", TRUE);
  g_setenv("GDK_DEBUG", "gl-disable", FALSE);
  /* Before anything connects: the session bus is a private one with the fake portal. */
  g_autoptr(GTestDBus) session = NULL;
  g_autofree char *dbus_daemon = g_find_program_in_path("dbus-daemon");
  if (dbus_daemon != NULL) {
    /* g_test_dbus_up unsets DISPLAY (so nothing autolaunches a bus on it); GTK needs it. */
    g_autofree char *display = g_strdup(g_getenv("DISPLAY"));
    session = g_test_dbus_new(G_TEST_DBUS_NONE);
    g_test_dbus_up(session);
    if (display != NULL)
      g_setenv("DISPLAY", display, TRUE);
  }
  gtk_test_init(&argc, &argv, NULL);

  g_autoptr(GError) error = NULL;
  dir = g_dir_make_tmp("test-studio-window-XXXXXX", &error);
  g_assert_no_error(error);
  g_setenv("XDG_DATA_HOME", dir, TRUE); /* recent files land here, not in the user's list */
  cache = g_build_filename(dir, "full.db", NULL);
  small_cache = g_build_filename(dir, "small.db", NULL);
  empty_cache = g_build_filename(dir, "empty.db", NULL);
  garbage = g_build_filename(dir, "garbage.db", NULL);
  trace = g_build_filename(dir, "trace.json", NULL);
  make_cache(cache, CACHE_FULL);
  make_cache(small_cache, CACHE_SMALL);
  make_cache(empty_cache, CACHE_EMPTY);
  g_assert_true(
      g_file_set_contents(garbage, "this is not an SQLite database, not at all", -1, NULL));
  g_assert_true(g_file_set_contents(
      trace,
      "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"ts\": 0,"
      " \"dur\": 5, \"pid\": 1, \"tid\": 1}]}",
      -1, NULL));

  g_test_add_func("/studio/window/sidebar", test_sidebar);
  g_test_add_func("/studio/window/sort", test_sort);
  g_test_add_func("/studio/window/filter", test_filter);
  g_test_add_func("/studio/window/selection", test_selection);
  g_test_add_func("/studio/window/native-ctrl-click", test_native_ctrl_click);
  g_test_add_func("/studio/window/states", test_states);
  g_test_add_func("/studio/window/timeline-link", test_timeline_link);
  g_test_add_func("/studio/window/open-async", test_open_async);
  g_test_add_func("/studio/window/actions-export", test_actions_and_export);
  if (session != NULL)
    g_test_add_func("/studio/app", test_app);
  int status = g_test_run();

  ts_test_remove_tree(dir);
  g_free(dir), g_free(cache), g_free(small_cache), g_free(empty_cache), g_free(garbage);
  g_free(trace);
  if (session != NULL)
    g_test_dbus_down(session);
  return status;
}
