/* ts-studio-sidebar.c — devices → workloads. Device rows are headings and cannot be selected;
 * the tree starts expanded, since a cache rarely holds more than a few devices. */
#include "ts-studio-sidebar.h"

#include "ts-studio-sidebar-node.h"

struct _TsStudioSidebar {
  GtkWidget parent_instance;
  GtkWidget *scroller, *list_view;
  GListStore *devices; /* TsStudioSidebarNode */
  GtkTreeListModel *tree;
  GtkSingleSelection *selection;
};

G_DEFINE_FINAL_TYPE(TsStudioSidebar, ts_studio_sidebar, GTK_TYPE_WIDGET)

enum { SIGNAL_WORKLOAD_SELECTED, N_SIGNALS };
static guint signals[N_SIGNALS];

static GListModel *
create_children(gpointer item, gpointer data)
{
  GListModel *children = ts_studio_sidebar_node_get_children(item);
  return children ? g_object_ref(children) : NULL;
}

static void
setup_row(GtkSignalListItemFactory *factory, GtkListItem *list_item, gpointer data)
{
  GtkWidget *expander = gtk_tree_expander_new();
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *title = gtk_label_new(NULL), *subtitle = gtk_label_new(NULL);

  gtk_label_set_xalign(GTK_LABEL(title), 0);
  gtk_label_set_ellipsize(GTK_LABEL(title), PANGO_ELLIPSIZE_END);
  gtk_label_set_xalign(GTK_LABEL(subtitle), 0);
  gtk_label_set_ellipsize(GTK_LABEL(subtitle), PANGO_ELLIPSIZE_END);
  gtk_widget_add_css_class(subtitle, "dim-label");
  gtk_widget_add_css_class(subtitle, "caption");
  gtk_widget_set_margin_top(box, 4);
  gtk_widget_set_margin_bottom(box, 4);
  gtk_box_append(GTK_BOX(box), title);
  gtk_box_append(GTK_BOX(box), subtitle);
  gtk_tree_expander_set_child(GTK_TREE_EXPANDER(expander), box);
  gtk_list_item_set_child(list_item, expander);
}

static void
bind_row(GtkSignalListItemFactory *factory, GtkListItem *list_item, gpointer data)
{
  GtkTreeListRow *row = gtk_list_item_get_item(list_item);
  GtkWidget *expander = gtk_list_item_get_child(list_item);
  GtkWidget *box = gtk_tree_expander_get_child(GTK_TREE_EXPANDER(expander));
  GtkWidget *title = gtk_widget_get_first_child(box);
  GtkWidget *subtitle = gtk_widget_get_next_sibling(title);
  g_autoptr(TsStudioSidebarNode) node = gtk_tree_list_row_get_item(row);
  const TsStudioWorkload *workload = ts_studio_sidebar_node_get_workload(node);

  gtk_tree_expander_set_list_row(GTK_TREE_EXPANDER(expander), row);
  gtk_label_set_text(GTK_LABEL(title), ts_studio_sidebar_node_get_title(node));
  gtk_label_set_text(GTK_LABEL(subtitle), ts_studio_sidebar_node_get_subtitle(node));
  gtk_list_item_set_selectable(list_item, workload != NULL);
  if (workload == NULL)
    gtk_widget_add_css_class(title, "heading");
  else
    gtk_widget_remove_css_class(title, "heading");
  g_autofree char *tooltip =
      workload ? g_strdup_printf("%s\nkey %s", workload->label, workload->key) : NULL;
  gtk_widget_set_tooltip_text(expander, tooltip);
}

static void
on_selected(GtkSingleSelection *selection, GParamSpec *pspec, TsStudioSidebar *self)
{
  const TsStudioWorkload *workload = ts_studio_sidebar_get_selected(self);

  if (workload != NULL)
    g_signal_emit(self, signals[SIGNAL_WORKLOAD_SELECTED], 0, workload);
}

static void
ts_studio_sidebar_dispose(GObject *object)
{
  TsStudioSidebar *self = TS_STUDIO_SIDEBAR(object);

  g_clear_pointer(&self->scroller, gtk_widget_unparent);
  g_clear_object(&self->selection);
  G_OBJECT_CLASS(ts_studio_sidebar_parent_class)->dispose(object);
}

static void
ts_studio_sidebar_class_init(TsStudioSidebarClass *klass)
{
  G_OBJECT_CLASS(klass)->dispose = ts_studio_sidebar_dispose;
  gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "studio-sidebar");

  /* (const TsStudioWorkload *workload): a workload row was selected. */
  signals[SIGNAL_WORKLOAD_SELECTED] =
      g_signal_new("workload-selected", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                   NULL, G_TYPE_NONE, 1, G_TYPE_POINTER);
}

static void
ts_studio_sidebar_init(TsStudioSidebar *self)
{
  GtkListItemFactory *factory = gtk_signal_list_item_factory_new();

  self->devices = g_list_store_new(TS_STUDIO_TYPE_SIDEBAR_NODE);
  /* The tree takes the store; self->devices stays a borrowed pointer to it. */
  self->tree = gtk_tree_list_model_new(G_LIST_MODEL(self->devices), FALSE, TRUE, create_children,
                                       NULL, NULL);
  self->selection = gtk_single_selection_new(G_LIST_MODEL(self->tree));
  gtk_single_selection_set_autoselect(self->selection, FALSE);
  gtk_single_selection_set_can_unselect(self->selection, TRUE);
  g_signal_connect(self->selection, "notify::selected", G_CALLBACK(on_selected), self);

  g_signal_connect(factory, "setup", G_CALLBACK(setup_row), NULL);
  g_signal_connect(factory, "bind", G_CALLBACK(bind_row), NULL);
  self->list_view = gtk_list_view_new(GTK_SELECTION_MODEL(g_object_ref(self->selection)), factory);
  gtk_widget_add_css_class(self->list_view, "navigation-sidebar");
  self->scroller = gtk_scrolled_window_new();
  gtk_scrolled_window_set_policy(GTK_SCROLLED_WINDOW(self->scroller), GTK_POLICY_NEVER,
                                 GTK_POLICY_AUTOMATIC);
  gtk_scrolled_window_set_child(GTK_SCROLLED_WINDOW(self->scroller), self->list_view);
  gtk_widget_set_parent(self->scroller, GTK_WIDGET(self));
}

GtkWidget *
ts_studio_sidebar_new(void)
{
  return g_object_new(TS_STUDIO_TYPE_SIDEBAR, NULL);
}

void
ts_studio_sidebar_set_db(TsStudioSidebar *sidebar, TsStudioDb *db)
{
  g_return_if_fail(TS_STUDIO_IS_SIDEBAR(sidebar));

  g_autoptr(GPtrArray) nodes = g_ptr_array_new_with_free_func(g_object_unref);
  if (db != NULL) {
    GPtrArray *devices = ts_studio_db_devices(db);
    GPtrArray *workloads = ts_studio_db_workloads(db);
    TsStudioSidebarNode *orphans = NULL;

    for (guint d = 0; d < devices->len; d++) {
      const TsStudioDevice *device = g_ptr_array_index(devices, d);
      g_autoptr(TsStudioSidebarNode) node = ts_studio_sidebar_node_new_device(device);
      for (guint w = 0; w < workloads->len; w++) {
        const TsStudioWorkload *workload = g_ptr_array_index(workloads, w);
        if (workload->device == device)
          ts_studio_sidebar_node_add_workload(node, workload);
      }
      /* A device measured (ceilings) but never tuned on has nothing to show. */
      if (g_list_model_get_n_items(ts_studio_sidebar_node_get_children(node)) > 0)
        g_ptr_array_add(nodes, g_steal_pointer(&node));
    }
    for (guint w = 0; w < workloads->len; w++) {
      const TsStudioWorkload *workload = g_ptr_array_index(workloads, w);
      if (workload->device != NULL)
        continue;
      if (orphans == NULL) {
        orphans = ts_studio_sidebar_node_new_device(NULL);
        g_ptr_array_add(nodes, orphans);
      }
      ts_studio_sidebar_node_add_workload(orphans, workload);
    }
  }
  gtk_single_selection_set_selected(sidebar->selection, GTK_INVALID_LIST_POSITION);
  g_list_store_splice(sidebar->devices, 0, g_list_model_get_n_items(G_LIST_MODEL(sidebar->devices)),
                      nodes->pdata, nodes->len);
}

void
ts_studio_sidebar_select(TsStudioSidebar *sidebar, const TsStudioWorkload *workload)
{
  g_return_if_fail(TS_STUDIO_IS_SIDEBAR(sidebar));

  GListModel *rows = G_LIST_MODEL(sidebar->tree);
  for (guint i = 0; i < g_list_model_get_n_items(rows); i++) {
    g_autoptr(GtkTreeListRow) row = g_list_model_get_item(rows, i);
    g_autoptr(TsStudioSidebarNode) node = gtk_tree_list_row_get_item(row);
    if (workload != NULL && ts_studio_sidebar_node_get_workload(node) == workload) {
      gtk_single_selection_set_selected(sidebar->selection, i);
      return;
    }
  }
  gtk_single_selection_set_selected(sidebar->selection, GTK_INVALID_LIST_POSITION);
}

const TsStudioWorkload *
ts_studio_sidebar_get_selected(TsStudioSidebar *sidebar)
{
  g_return_val_if_fail(TS_STUDIO_IS_SIDEBAR(sidebar), NULL);

  GtkTreeListRow *row = gtk_single_selection_get_selected_item(sidebar->selection);
  if (row == NULL)
    return NULL;
  g_autoptr(TsStudioSidebarNode) node = gtk_tree_list_row_get_item(row);
  return ts_studio_sidebar_node_get_workload(node);
}

GListModel *
ts_studio_sidebar_get_rows(TsStudioSidebar *sidebar)
{
  g_return_val_if_fail(TS_STUDIO_IS_SIDEBAR(sidebar), NULL);
  return G_LIST_MODEL(sidebar->tree);
}
