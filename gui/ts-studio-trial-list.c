/* ts-studio-trial-list.c — the trials table. The models are chained store → filter → sort →
 * selection so that the column view's own sorter (clicks on headers) sorts what the filters
 * let through, and the selection survives re-sorting. */
#include "ts-studio-trial-list.h"
#include "ts-output.h"

#include <math.h>

#include "ts-studio-trial-item.h"

typedef enum {
  COL_INDEX,
  COL_STATUS,
  COL_TIME,
  COL_SPREAD,
  COL_PREDICTED,
  COL_GFLOPS,
  COL_PERCENT,
  COL_REGISTERS,
  COL_SPILLS,
  COL_CPU,
  COL_COMPILE,
  COL_STRATEGY,
  COL_SCHEDULE,
  N_COLS
} Column;

static const struct {
  const char *id, *title;
  gboolean numeric, expand;
} columns[N_COLS] = {
    /* The trial's id, as tooltips, exports, the CLI and profiles name it. */
    [COL_INDEX] = {"id", "Trial", TRUE, FALSE},
    [COL_STATUS] = {"status", "Status", FALSE, FALSE},
    [COL_TIME] = {"time", "Median (ms)", TRUE, FALSE},
    [COL_SPREAD] = {"spread", "Spread", TRUE, FALSE},
    [COL_PREDICTED] = {"predicted", "Predicted (ms)", TRUE, FALSE},
    [COL_GFLOPS] = {"gflops", "GFLOP/s", TRUE, FALSE},
    [COL_PERCENT] = {"percent", "% of bound", TRUE, FALSE},
    [COL_REGISTERS] = {"registers", "Regs", TRUE, FALSE},
    [COL_SPILLS] = {"spills", "Spills (B)", TRUE, FALSE},
    [COL_CPU] = {"cpu", "CPU/wall", TRUE, FALSE},
    [COL_COMPILE] = {"compile", "Compile (ms)", TRUE, FALSE},
    [COL_STRATEGY] = {"strategy", "Strategy", FALSE, FALSE},
    [COL_SCHEDULE] = {"schedule", "Schedule", FALSE, TRUE},
};

/* The status drop-down's entries; "failed" is every status but ok. */
static const char *const status_choices[] = {
    "all", "ok", "failed", "compile_error", "runtime_error", "timeout", "wrong_result", NULL,
};

struct _TsStudioTrialList {
  GtkWidget parent_instance;
  GtkWidget *box, *search, *status, *count, *view;
  GtkColumnViewColumn *cols[N_COLS];
  GListStore *store;
  GtkFilterListModel *filtered;
  GtkSortListModel *sorted;
  GtkMultiSelection *selection;
  GtkStringFilter *schedule_filter, *strategy_filter;
  GtkFilter *status_filter;
};

G_DEFINE_FINAL_TYPE(TsStudioTrialList, ts_studio_trial_list, GTK_TYPE_WIDGET)

enum { SIGNAL_SELECTION_CHANGED, SIGNAL_FILTER_CHANGED, N_SIGNALS };
static guint signals[N_SIGNALS];

static char *
format_number(double value, int decimals, const char *suffix)
{
  return isnan(value) ? g_strdup("—") : g_strdup_printf("%.*f%s", decimals, value, suffix);
}

/* Bytes spilled per thread (stores and loads), NAN when the compiler did not say. */
static double
spill_bytes(const TsStudioTrial *t)
{
  return t->spill_stores < 0 || t->spill_loads < 0 ? NAN : t->spill_stores + t->spill_loads;
}

/* (max - min) / median in percent, NAN when a bound is unknown. */
static double
spread_percent(const TsStudioTrial *t)
{
  if (t->status != TS_DB_TRIAL_OK || !(t->median_ns > 0) || isnan(t->min_ns) || isnan(t->max_ns))
    return NAN;
  return 100 * (t->max_ns - t->min_ns) / t->median_ns;
}

static void
setup_cell(GtkSignalListItemFactory *factory, GtkListItem *list_item, gpointer data)
{
  Column col = GPOINTER_TO_INT(data);
  GtkWidget *label = gtk_label_new(NULL);

  gtk_label_set_xalign(GTK_LABEL(label), columns[col].numeric ? 1.0f : 0.0f);
  if (columns[col].numeric)
    gtk_widget_add_css_class(label, "numeric");
  if (col == COL_SCHEDULE) {
    gtk_widget_add_css_class(label, "monospace");
    gtk_label_set_ellipsize(GTK_LABEL(label), PANGO_ELLIPSIZE_END);
  }
  gtk_list_item_set_child(list_item, label);
  /* GTK 4.8 gives each cell of a column view a click gesture of its own besides the row's, and
   * both act on a click: a plain or Shift click selects twice, harmlessly, but Ctrl+click
   * toggles the row twice and leaves the selection as it was. Cells that cannot select leave
   * the click to the row (GTK 4.10 made cells plain widgets). */
  gtk_list_item_set_selectable(list_item, FALSE);
}

static void
bind_cell(GtkSignalListItemFactory *factory, GtkListItem *list_item, gpointer data)
{
  Column col = GPOINTER_TO_INT(data);
  GtkLabel *label = GTK_LABEL(gtk_list_item_get_child(list_item));
  TsStudioTrialItem *item = gtk_list_item_get_item(list_item);
  const TsStudioTrial *t = ts_studio_trial_item_get_trial(item);
  g_autofree char *text = NULL;

  switch (col) {
  case COL_INDEX:
    text = g_strdup_printf(t->best ? "★ %" G_GINT64_FORMAT : "%" G_GINT64_FORMAT, t->id);
    break;
  case COL_STATUS:
    text = g_strdup(ts_db_trial_status_name(t->status));
    gtk_widget_remove_css_class(GTK_WIDGET(label), "success");
    gtk_widget_remove_css_class(GTK_WIDGET(label), "error");
    gtk_widget_add_css_class(GTK_WIDGET(label), t->status == TS_DB_TRIAL_OK ? "success" : "error");
    gtk_widget_set_tooltip_text(GTK_WIDGET(label), t->error_text);
    break;
  case COL_TIME:
    text = format_number(ts_studio_trial_item_get_median_ms(item), 4, "");
    break;
  case COL_SPREAD: {
    /* Fastest to slowest sample over the median: a noisy measurement shows as a wide one. */
    text = format_number(spread_percent(t), 0, "%");
    g_autofree char *lo = format_number(t->min_ns / 1e6, 4, " ms");
    g_autofree char *hi = format_number(t->max_ns / 1e6, 4, " ms");
    g_autofree char *tip = isnan(t->min_ns) ? NULL
                                            : g_strdup_printf("samples from %s to %s", lo, hi);
    gtk_widget_set_tooltip_text(GTK_WIDGET(label), tip);
    break;
  }
  case COL_PREDICTED:
    text = format_number(t->predicted_ns / 1e6, 4, "");
    break;
  case COL_GFLOPS:
    text = format_number(ts_studio_trial_item_get_gflops(item), 2, "");
    break;
  case COL_PERCENT:
    text = format_number(ts_studio_trial_item_get_percent(item), 1, "%");
    break;
  case COL_REGISTERS:
    text = format_number(t->registers < 0 ? NAN : t->registers, 0, "");
    break;
  case COL_SPILLS: {
    text = format_number(spill_bytes(t), 0, "");
    g_autofree char *tip = t->spill_stores < 0 ? NULL
                                               : g_strdup_printf("%d B stored, %d B loaded per "
                                                                 "thread",
                                                                 t->spill_stores, t->spill_loads);
    gtk_widget_set_tooltip_text(GTK_WIDGET(label), tip);
    break;
  }
  case COL_CPU:
    text = format_number(t->cpu_per_wall, 2, "");
    gtk_widget_set_tooltip_text(GTK_WIDGET(label),
                                "CPU time of the kernel's threads over its wall time: about its "
                                "thread count on a quiet machine, less where cores were taken "
                                "away while it ran");
    break;
  case COL_COMPILE:
    /* 0: the artifact cache had the kernel. */
    text = t->compile_ms == 0 ? g_strdup("cached") : format_number(t->compile_ms, 0, "");
    break;
  case COL_STRATEGY:
    text = g_strdup(t->strategy ? t->strategy : "");
    break;
  case COL_SCHEDULE:
    text = g_strdup(t->schedule);
    gtk_widget_set_tooltip_text(GTK_WIDGET(label), t->schedule);
    break;
  case N_COLS:
    g_assert_not_reached();
  }
  gtk_label_set_text(label, text);
}

/* Unknown numbers are the worst value of their column: an infinitely slow time, zero
 * throughput. So sorting by time puts failures last, and by GFLOP/s descending too. */
static double
sort_value(TsStudioTrialItem *item, Column col)
{
  double v;

  switch (col) {
  case COL_TIME:
    v = ts_studio_trial_item_get_median_ms(item);
    return isnan(v) ? INFINITY : v;
  case COL_SPREAD:
    v = spread_percent(ts_studio_trial_item_get_trial(item));
    return isnan(v) ? INFINITY : v;
  case COL_PREDICTED:
    v = ts_studio_trial_item_get_trial(item)->predicted_ns;
    return isnan(v) ? INFINITY : v;
  case COL_GFLOPS:
    v = ts_studio_trial_item_get_gflops(item);
    return isnan(v) ? -INFINITY : v;
  case COL_PERCENT:
    v = ts_studio_trial_item_get_percent(item);
    return isnan(v) ? -INFINITY : v;
  case COL_REGISTERS:
    v = ts_studio_trial_item_get_trial(item)->registers;
    return v < 0 ? INFINITY : v;
  case COL_SPILLS:
    v = spill_bytes(ts_studio_trial_item_get_trial(item));
    return isnan(v) ? INFINITY : v;
  case COL_CPU:
    v = ts_studio_trial_item_get_trial(item)->cpu_per_wall;
    return isnan(v) ? -INFINITY : v;
  case COL_COMPILE:
    v = ts_studio_trial_item_get_trial(item)->compile_ms;
    return isnan(v) ? INFINITY : v;
  default:
    g_assert_not_reached();
  }
}

static int
compare_numbers(gconstpointer a, gconstpointer b, gpointer data)
{
  Column col = GPOINTER_TO_INT(data);
  TsStudioTrialItem *ia = (TsStudioTrialItem *)a, *ib = (TsStudioTrialItem *)b;
  double va = sort_value(ia, col), vb = sort_value(ib, col);

  if (va != vb)
    return va < vb ? GTK_ORDERING_SMALLER : GTK_ORDERING_LARGER;
  /* Ties (two failures) in trial order, so the order is total and stable. */
  guint xa = ts_studio_trial_item_get_trial(ia)->index,
        xb = ts_studio_trial_item_get_trial(ib)->index;
  return xa < xb ? GTK_ORDERING_SMALLER : xa > xb ? GTK_ORDERING_LARGER : GTK_ORDERING_EQUAL;
}

static GtkSorter *
make_sorter(Column col)
{
  switch (col) {
  case COL_INDEX:
    return GTK_SORTER(gtk_numeric_sorter_new(
        gtk_property_expression_new(TS_STUDIO_TYPE_TRIAL_ITEM, NULL, "id")));
  case COL_TIME:
  case COL_SPREAD:
  case COL_PREDICTED:
  case COL_REGISTERS:
  case COL_SPILLS:
  case COL_CPU:
  case COL_COMPILE:
  case COL_GFLOPS:
  case COL_PERCENT:
    return GTK_SORTER(gtk_custom_sorter_new(compare_numbers, GINT_TO_POINTER(col), NULL));
  default:
    return GTK_SORTER(gtk_string_sorter_new(
        gtk_property_expression_new(TS_STUDIO_TYPE_TRIAL_ITEM, NULL, columns[col].id)));
  }
}

static gboolean
status_matches(gpointer object, gpointer data)
{
  TsStudioTrialList *self = data;
  const TsStudioTrial *t = ts_studio_trial_item_get_trial(object);
  guint choice = gtk_drop_down_get_selected(GTK_DROP_DOWN(self->status));

  if (choice == 0 || choice == GTK_INVALID_LIST_POSITION)
    return TRUE;
  if (choice == 2)
    return t->status != TS_DB_TRIAL_OK;
  return g_str_equal(ts_db_trial_status_name(t->status), status_choices[choice]);
}

static void
update_count(TsStudioTrialList *self)
{
  guint shown = g_list_model_get_n_items(G_LIST_MODEL(self->filtered));
  guint total = g_list_model_get_n_items(G_LIST_MODEL(self->store));
  g_autofree char *text = g_strdup_printf("%u of %u trials", shown, total);

  gtk_label_set_text(GTK_LABEL(self->count), text);
  g_signal_emit(self, signals[SIGNAL_FILTER_CHANGED], 0);
}

static void
on_search_changed(GtkSearchEntry *entry, TsStudioTrialList *self)
{
  const char *text = gtk_editable_get_text(GTK_EDITABLE(entry));

  gtk_string_filter_set_search(self->schedule_filter, text);
  gtk_string_filter_set_search(self->strategy_filter, text);
}

static void
on_status_changed(GObject *drop_down, GParamSpec *pspec, TsStudioTrialList *self)
{
  gtk_filter_changed(self->status_filter, GTK_FILTER_CHANGE_DIFFERENT);
}

static void
on_selection_changed(GtkSelectionModel *model, guint position, guint n_items,
                     TsStudioTrialList *self)
{
  g_signal_emit(self, signals[SIGNAL_SELECTION_CHANGED], 0);
}

static GtkFilter *
make_text_filter(TsStudioTrialList *self)
{
  GtkMultiFilter *any = GTK_MULTI_FILTER(gtk_any_filter_new());

  self->schedule_filter = gtk_string_filter_new(
      gtk_property_expression_new(TS_STUDIO_TYPE_TRIAL_ITEM, NULL, "schedule"));
  self->strategy_filter = gtk_string_filter_new(
      gtk_property_expression_new(TS_STUDIO_TYPE_TRIAL_ITEM, NULL, "strategy"));
  gtk_multi_filter_append(any, g_object_ref(GTK_FILTER(self->schedule_filter)));
  gtk_multi_filter_append(any, g_object_ref(GTK_FILTER(self->strategy_filter)));
  return GTK_FILTER(any);
}

static GtkWidget *
make_filter_bar(TsStudioTrialList *self)
{
  GtkWidget *bar = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);

  gtk_widget_set_margin_start(bar, 6);
  gtk_widget_set_margin_end(bar, 6);
  gtk_widget_set_margin_top(bar, 6);
  gtk_widget_set_margin_bottom(bar, 6);
  self->search = gtk_search_entry_new();
  g_object_set(self->search, "placeholder-text", "Filter by schedule or strategy", NULL);
  gtk_widget_set_hexpand(self->search, TRUE);
  g_signal_connect(self->search, "search-changed", G_CALLBACK(on_search_changed), self);
  self->status = gtk_drop_down_new_from_strings((const char *const *)status_choices);
  gtk_widget_set_tooltip_text(self->status, "Show trials of this status");
  g_signal_connect(self->status, "notify::selected", G_CALLBACK(on_status_changed), self);
  self->count = gtk_label_new(NULL);
  gtk_widget_add_css_class(self->count, "dim-label");
  gtk_box_append(GTK_BOX(bar), self->search);
  gtk_box_append(GTK_BOX(bar), self->status);
  gtk_box_append(GTK_BOX(bar), self->count);
  return bar;
}

static void
ts_studio_trial_list_dispose(GObject *object)
{
  TsStudioTrialList *self = TS_STUDIO_TRIAL_LIST(object);

  g_clear_pointer(&self->box, gtk_widget_unparent);
  g_clear_object(&self->selection);
  g_clear_object(&self->schedule_filter);
  g_clear_object(&self->strategy_filter);
  G_OBJECT_CLASS(ts_studio_trial_list_parent_class)->dispose(object);
}

static void
ts_studio_trial_list_class_init(TsStudioTrialListClass *klass)
{
  G_OBJECT_CLASS(klass)->dispose = ts_studio_trial_list_dispose;
  gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "trial-list");

  /* The selection changed (by a click, a key or ts_studio_trial_list_select). */
  signals[SIGNAL_SELECTION_CHANGED] =
      g_signal_new("selection-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                   NULL, G_TYPE_NONE, 0);
  /* What the filters let through changed (ts_studio_trial_list_get_shown). */
  signals[SIGNAL_FILTER_CHANGED] =
      g_signal_new("filter-changed", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                   NULL, G_TYPE_NONE, 0);
}

static void
ts_studio_trial_list_init(TsStudioTrialList *self)
{
  GtkFilter *every = GTK_FILTER(gtk_every_filter_new());

  self->box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0);
  gtk_widget_set_parent(self->box, GTK_WIDGET(self));
  gtk_box_append(GTK_BOX(self->box), make_filter_bar(self));

  self->store = g_list_store_new(TS_STUDIO_TYPE_TRIAL_ITEM);
  self->status_filter = GTK_FILTER(gtk_custom_filter_new(status_matches, self, NULL));
  gtk_multi_filter_append(GTK_MULTI_FILTER(every), make_text_filter(self));
  gtk_multi_filter_append(GTK_MULTI_FILTER(every), self->status_filter);
  self->filtered = gtk_filter_list_model_new(G_LIST_MODEL(self->store), every);
  g_signal_connect_swapped(self->filtered, "items-changed", G_CALLBACK(update_count), self);

  self->view = gtk_column_view_new(NULL);
  gtk_column_view_set_show_column_separators(GTK_COLUMN_VIEW(self->view), TRUE);
  self->sorted = gtk_sort_list_model_new(
      G_LIST_MODEL(self->filtered),
      g_object_ref(gtk_column_view_get_sorter(GTK_COLUMN_VIEW(self->view))));
  self->selection = gtk_multi_selection_new(G_LIST_MODEL(self->sorted));
  g_signal_connect(self->selection, "selection-changed", G_CALLBACK(on_selection_changed), self);
  gtk_column_view_set_model(GTK_COLUMN_VIEW(self->view), GTK_SELECTION_MODEL(self->selection));

  for (Column c = 0; c < N_COLS; c++) {
    GtkListItemFactory *factory = gtk_signal_list_item_factory_new();
    g_signal_connect(factory, "setup", G_CALLBACK(setup_cell), GINT_TO_POINTER(c));
    g_signal_connect(factory, "bind", G_CALLBACK(bind_cell), GINT_TO_POINTER(c));
    self->cols[c] = gtk_column_view_column_new(columns[c].title, factory);
    g_autoptr(GtkSorter) sorter = make_sorter(c);
    gtk_column_view_column_set_sorter(self->cols[c], sorter);
    gtk_column_view_column_set_resizable(self->cols[c], TRUE);
    gtk_column_view_column_set_expand(self->cols[c], columns[c].expand);
    gtk_column_view_append_column(GTK_COLUMN_VIEW(self->view), self->cols[c]);
    g_object_unref(self->cols[c]); /* the view holds it */
  }
  /* Best first, as `tessera-tune show` lists them. */
  gtk_column_view_sort_by_column(GTK_COLUMN_VIEW(self->view), self->cols[COL_TIME],
                                 GTK_SORT_ASCENDING);

  GtkWidget *scroller = gtk_scrolled_window_new();
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(scroller), self->view);
  gtk_widget_set_vexpand(scroller, TRUE);
  gtk_box_append(GTK_BOX(self->box), scroller);
  update_count(self);
}

GtkWidget *
ts_studio_trial_list_new(void)
{
  return g_object_new(TS_STUDIO_TYPE_TRIAL_LIST, NULL);
}

void
ts_studio_trial_list_set_trials(TsStudioTrialList *list, GPtrArray *trials)
{
  g_return_if_fail(TS_STUDIO_IS_TRIAL_LIST(list));

  g_autoptr(GPtrArray) items = g_ptr_array_new_with_free_func(g_object_unref);
  for (guint i = 0; trials != NULL && i < trials->len; i++)
    g_ptr_array_add(items, ts_studio_trial_item_new(trials, g_ptr_array_index(trials, i)));
  /* One "filter-changed" for the new trials (the splice would add another). */
  g_signal_handlers_block_by_func(list->filtered, update_count, list);
  g_list_store_splice(list->store, 0, g_list_model_get_n_items(G_LIST_MODEL(list->store)),
                      items->pdata, items->len);
  g_signal_handlers_unblock_by_func(list->filtered, update_count, list);
  gtk_selection_model_unselect_all(GTK_SELECTION_MODEL(list->selection));
  update_count(list);
  /* The compiler's report exists for GPU kernels only: on a CPU workload the columns would be
   * dashes taking the schedule's room. */
  gboolean resources = FALSE;
  for (guint i = 0; trials != NULL && i < trials->len && !resources; i++) {
    const TsStudioTrial *t = g_ptr_array_index(trials, i);
    resources = t->registers >= 0 || t->spill_stores >= 0;
  }
  gtk_column_view_column_set_visible(list->cols[COL_REGISTERS], resources);
  gtk_column_view_column_set_visible(list->cols[COL_SPILLS], resources);
  /* CPU time exists for host kernels measured since it was recorded. */
  gboolean cpu = FALSE;
  for (guint i = 0; trials != NULL && i < trials->len && !cpu; i++)
    cpu = !isnan(((const TsStudioTrial *)g_ptr_array_index(trials, i))->cpu_per_wall);
  gtk_column_view_column_set_visible(list->cols[COL_CPU], cpu);
}

GListModel *
ts_studio_trial_list_get_rows(TsStudioTrialList *list)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), NULL);
  return G_LIST_MODEL(list->sorted);
}

guint
ts_studio_trial_list_get_n_rows(TsStudioTrialList *list)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), 0);
  return g_list_model_get_n_items(G_LIST_MODEL(list->sorted));
}

void
ts_studio_trial_list_set_filter(TsStudioTrialList *list, const char *text, const char *status)
{
  g_return_if_fail(TS_STUDIO_IS_TRIAL_LIST(list));

  guint choice = 0;
  for (guint i = 0; status != NULL && status_choices[i] != NULL; i++)
    if (g_str_equal(status, status_choices[i]))
      choice = i;
  gtk_editable_set_text(GTK_EDITABLE(list->search), text ? text : "");
  /* The entry delays search-changed by a fraction of a second for typing; a caller setting
   * the filter wants it applied now. */
  on_search_changed(GTK_SEARCH_ENTRY(list->search), list);
  gtk_drop_down_set_selected(GTK_DROP_DOWN(list->status), choice);
}

gboolean
ts_studio_trial_list_sort(TsStudioTrialList *list, const char *column, GtkSortType order)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list) && column != NULL, FALSE);

  for (Column c = 0; c < N_COLS; c++) {
    if (g_str_equal(column, columns[c].id)) {
      gtk_column_view_sort_by_column(GTK_COLUMN_VIEW(list->view), list->cols[c], order);
      return TRUE;
    }
  }
  return FALSE;
}

static int
by_index(gconstpointer a, gconstpointer b)
{
  const TsStudioTrial *ta = *(const TsStudioTrial *const *)a;
  const TsStudioTrial *tb = *(const TsStudioTrial *const *)b;
  return ta->index < tb->index ? -1 : ta->index > tb->index;
}

GPtrArray *
ts_studio_trial_list_get_selected(TsStudioTrialList *list)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), NULL);

  GPtrArray *out = g_ptr_array_new();
  g_autoptr(GtkBitset) set =
      gtk_selection_model_get_selection(GTK_SELECTION_MODEL(list->selection));
  GtkBitsetIter iter;
  guint pos;
  for (gboolean more = gtk_bitset_iter_init_first(&iter, set, &pos); more;
       more = gtk_bitset_iter_next(&iter, &pos)) {
    g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(G_LIST_MODEL(list->sorted), pos);
    g_ptr_array_add(out, (gpointer)ts_studio_trial_item_get_trial(item));
  }
  g_ptr_array_sort(out, by_index);
  return out;
}

GPtrArray *
ts_studio_trial_list_get_shown(TsStudioTrialList *list)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), NULL);
  GListModel *rows = G_LIST_MODEL(list->filtered);
  GPtrArray *out = g_ptr_array_sized_new(g_list_model_get_n_items(rows));
  for (guint i = 0; i < g_list_model_get_n_items(rows); i++) {
    g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(rows, i);
    g_ptr_array_add(out, (gpointer)ts_studio_trial_item_get_trial(item));
  }
  return out; /* the store's order: the workload's */
}

gboolean
ts_studio_trial_list_is_filtered(TsStudioTrialList *list)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), FALSE);
  return g_list_model_get_n_items(G_LIST_MODEL(list->filtered)) <
         g_list_model_get_n_items(G_LIST_MODEL(list->store));
}

static guint
find_row(TsStudioTrialList *list, gint64 id)
{
  GListModel *rows = G_LIST_MODEL(list->sorted);

  for (guint i = 0; i < g_list_model_get_n_items(rows); i++) {
    g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(rows, i);
    if (ts_studio_trial_item_get_id(item) == id)
      return i;
  }
  return GTK_INVALID_LIST_POSITION;
}

/* GTK 4.8 has no gtk_column_view_scroll_to (4.12); the inner list view's action does it. */
static void
scroll_to_row(TsStudioTrialList *list, guint pos)
{
  for (GtkWidget *child = gtk_widget_get_first_child(list->view); child != NULL;
       child = gtk_widget_get_next_sibling(child)) {
    if (GTK_IS_LIST_VIEW(child)) {
      gtk_widget_activate_action(child, "list.scroll-to-item", "u", pos);
      return;
    }
  }
}

gboolean
ts_studio_trial_list_select(TsStudioTrialList *list, gint64 id, gboolean add)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), FALSE);

  if (id == 0) {
    if (!add)
      gtk_selection_model_unselect_all(GTK_SELECTION_MODEL(list->selection));
    return TRUE;
  }
  guint pos = find_row(list, id);
  if (pos == GTK_INVALID_LIST_POSITION) {
    /* A trial clicked in a plot but hidden by the filters: show it rather than do nothing. */
    ts_studio_trial_list_set_filter(list, NULL, NULL);
    pos = find_row(list, id);
    if (pos == GTK_INVALID_LIST_POSITION)
      return FALSE;
  }
  gtk_selection_model_select_item(GTK_SELECTION_MODEL(list->selection), pos, !add);
  scroll_to_row(list, pos);
  return TRUE;
}

guint
ts_studio_trial_list_select_ids(TsStudioTrialList *list, const gint64 *ids, guint n)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list), 0);
  g_autoptr(GHashTable) wanted = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (guint i = 0; i < n; i++)
    g_hash_table_add(wanted, (gpointer)&ids[i]);
  GListModel *rows = G_LIST_MODEL(list->sorted);
  g_autoptr(GtkBitset) set = gtk_bitset_new_empty();
  guint first = GTK_INVALID_LIST_POSITION;
  for (guint i = 0; i < g_list_model_get_n_items(rows); i++) {
    g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(rows, i);
    gint64 id = ts_studio_trial_item_get_id(item);
    if (g_hash_table_contains(wanted, &id)) {
      gtk_bitset_add(set, i);
      first = MIN(first, i);
    }
  }
  /* One change, one "selection-changed", however many rows. */
  g_autoptr(GtkBitset) mask = gtk_bitset_new_range(0, g_list_model_get_n_items(rows));
  gtk_selection_model_set_selection(GTK_SELECTION_MODEL(list->selection), set, mask);
  if (first != GTK_INVALID_LIST_POSITION)
    scroll_to_row(list, first);
  return (guint)gtk_bitset_get_size(set);
}

void
ts_studio_trial_list_focus_filter(TsStudioTrialList *list)
{
  g_return_if_fail(TS_STUDIO_IS_TRIAL_LIST(list));
  gtk_widget_grab_focus(list->search);
}

static void
csv_field(GString *out, const char *text)
{
  g_string_append_c(out, '"');
  for (const char *p = text ? text : ""; *p; p++) {
    if (*p == '"')
      g_string_append_c(out, '"');
    g_string_append_c(out, *p);
  }
  g_string_append_c(out, '"');
}

gboolean
ts_studio_trial_list_write_csv(TsStudioTrialList *list, const char *path, GError **error)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_LIST(list) && path != NULL, FALSE);

  g_autoptr(GString) out = g_string_new("index,id,status,median_ms,gflops,percent_of_bound,"
                                        "strategy,schedule,min_ms,max_ms,predicted_ms,registers,"
                                        "spill_bytes,compile_ms,cpu_per_wall\n");
  GListModel *rows = G_LIST_MODEL(list->sorted);
  for (guint i = 0; i < g_list_model_get_n_items(rows); i++) {
    g_autoptr(TsStudioTrialItem) item = g_list_model_get_item(rows, i);
    const TsStudioTrial *t = ts_studio_trial_item_get_trial(item);
    char ms[G_ASCII_DTOSTR_BUF_SIZE], gf[G_ASCII_DTOSTR_BUF_SIZE], pc[G_ASCII_DTOSTR_BUF_SIZE];
    double v[3] = {ts_studio_trial_item_get_median_ms(item), ts_studio_trial_item_get_gflops(item),
                   ts_studio_trial_item_get_percent(item)};
    char *bufs[3] = {ms, gf, pc};
    for (int k = 0; k < 3; k++) {
      if (isnan(v[k]))
        bufs[k][0] = '\0';
      else
        g_ascii_dtostr(bufs[k], G_ASCII_DTOSTR_BUF_SIZE, v[k]);
    }
    g_string_append_printf(out, "%u,%" G_GINT64_FORMAT ",%s,%s,%s,%s,", t->index, t->id,
                           ts_db_trial_status_name(t->status), ms, gf, pc);
    csv_field(out, t->strategy);
    g_string_append_c(out, ',');
    csv_field(out, t->schedule);
    double more[7] = {t->min_ns / 1e6, t->max_ns / 1e6, t->predicted_ns / 1e6,
                      t->registers < 0 ? NAN : t->registers, spill_bytes(t), t->compile_ms,
                      t->cpu_per_wall};
    for (int k = 0; k < 7; k++) {
      char buf[G_ASCII_DTOSTR_BUF_SIZE] = "";
      if (!isnan(more[k]))
        g_ascii_dtostr(buf, sizeof buf, more[k]);
      g_string_append_printf(out, ",%s", buf);
    }
    g_string_append_c(out, '\n');
  }
  if (!ts_output_write(path, out->str, (gssize)out->len, error)) {
    g_prefix_error(error, "export of the trials: ");
    return FALSE;
  }
  return TRUE;
}
