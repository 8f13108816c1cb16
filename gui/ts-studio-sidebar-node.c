/* ts-studio-sidebar-node.c — the sidebar's rows: their text is made once here, so binding a
 * row while scrolling only sets labels. */
#include "ts-studio-sidebar-node.h"

struct _TsStudioSidebarNode {
  GObject parent_instance;
  char *title, *subtitle;
  char *prefix; /* a device row's "backend arch", before its workload count */
  const TsStudioWorkload *workload;
  GListStore *children; /* device rows only */
};

G_DEFINE_FINAL_TYPE(TsStudioSidebarNode, ts_studio_sidebar_node, G_TYPE_OBJECT)

enum { PROP_0, PROP_TITLE, PROP_SUBTITLE, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void
ts_studio_sidebar_node_finalize(GObject *object)
{
  TsStudioSidebarNode *self = TS_STUDIO_SIDEBAR_NODE(object);

  g_free(self->title);
  g_free(self->subtitle);
  g_free(self->prefix);
  g_clear_object(&self->children);
  G_OBJECT_CLASS(ts_studio_sidebar_node_parent_class)->finalize(object);
}

static void
ts_studio_sidebar_node_get_property(GObject *object, guint prop_id, GValue *value,
                                    GParamSpec *pspec)
{
  TsStudioSidebarNode *self = TS_STUDIO_SIDEBAR_NODE(object);

  switch (prop_id) {
  case PROP_TITLE:
    g_value_set_string(value, self->title);
    break;
  case PROP_SUBTITLE:
    g_value_set_string(value, self->subtitle);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void
ts_studio_sidebar_node_class_init(TsStudioSidebarNodeClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);

  object_class->finalize = ts_studio_sidebar_node_finalize;
  object_class->get_property = ts_studio_sidebar_node_get_property;
  properties[PROP_TITLE] =
      g_param_spec_string("title", NULL, NULL, NULL, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  properties[PROP_SUBTITLE] =
      g_param_spec_string("subtitle", NULL, NULL, NULL, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(object_class, N_PROPS, properties);
}

static void
ts_studio_sidebar_node_init(TsStudioSidebarNode *self)
{
}

static void
update_device_subtitle(TsStudioSidebarNode *self)
{
  const char *prefix = self->prefix;
  guint n = g_list_model_get_n_items(G_LIST_MODEL(self->children));

  g_free(self->subtitle);
  self->subtitle =
      g_strdup_printf("%s%s%u workload%s", prefix, *prefix ? " · " : "", n, n == 1 ? "" : "s");
}

TsStudioSidebarNode *
ts_studio_sidebar_node_new_device(const TsStudioDevice *device)
{
  TsStudioSidebarNode *self = g_object_new(TS_STUDIO_TYPE_SIDEBAR_NODE, NULL);

  self->children = g_list_store_new(TS_STUDIO_TYPE_SIDEBAR_NODE);
  if (device != NULL) {
    self->title = g_strdup(device->name);
    /* The backend and arch tell apart two devices of one name (the CPU with and without
     * AVX-512 in two caches merged into one). */
    self->prefix = g_strdup_printf("%s %s", device->backend, device->arch);
  } else {
    self->title = g_strdup("Unknown device");
    self->prefix = g_strdup("");
  }
  update_device_subtitle(self);
  return self;
}

TsStudioSidebarNode *
ts_studio_sidebar_node_new_workload(const TsStudioWorkload *workload)
{
  g_return_val_if_fail(workload != NULL, NULL);

  TsStudioSidebarNode *self = g_object_new(TS_STUDIO_TYPE_SIDEBAR_NODE, NULL);
  self->workload = workload;
  self->title = g_strdup(workload->label);
  self->subtitle = g_strdup_printf("%u trial%s, %u ok · %s", workload->n_trials,
                                   workload->n_trials == 1 ? "" : "s", workload->n_ok,
                                   workload->toolchain ? workload->toolchain : "");
  return self;
}

void
ts_studio_sidebar_node_add_workload(TsStudioSidebarNode *device_node,
                                    const TsStudioWorkload *workload)
{
  g_return_if_fail(TS_STUDIO_IS_SIDEBAR_NODE(device_node) && device_node->children != NULL);

  g_autoptr(TsStudioSidebarNode) child = ts_studio_sidebar_node_new_workload(workload);
  g_list_store_append(device_node->children, child);
  update_device_subtitle(device_node);
}

const char *
ts_studio_sidebar_node_get_title(TsStudioSidebarNode *node)
{
  g_return_val_if_fail(TS_STUDIO_IS_SIDEBAR_NODE(node), NULL);
  return node->title;
}

const char *
ts_studio_sidebar_node_get_subtitle(TsStudioSidebarNode *node)
{
  g_return_val_if_fail(TS_STUDIO_IS_SIDEBAR_NODE(node), NULL);
  return node->subtitle;
}

const TsStudioWorkload *
ts_studio_sidebar_node_get_workload(TsStudioSidebarNode *node)
{
  g_return_val_if_fail(TS_STUDIO_IS_SIDEBAR_NODE(node), NULL);
  return node->workload;
}

GListModel *
ts_studio_sidebar_node_get_children(TsStudioSidebarNode *node)
{
  g_return_val_if_fail(TS_STUDIO_IS_SIDEBAR_NODE(node), NULL);
  return node->children ? G_LIST_MODEL(node->children) : NULL;
}
