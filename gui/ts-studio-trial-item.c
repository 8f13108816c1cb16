/* ts-studio-trial-item.c — a TsStudioTrial as a GObject with read-only properties (id, index,
 * status, median-ms, gflops, percent, strategy, schedule, best) for GtkExpression-based
 * sorters and filters. */
#include "ts-studio-trial-item.h"

#include <math.h>

struct _TsStudioTrialItem {
  GObject parent_instance;
  GPtrArray *trials; /* keeps trial alive */
  const TsStudioTrial *trial;
};

G_DEFINE_FINAL_TYPE(TsStudioTrialItem, ts_studio_trial_item, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_ID,
  PROP_INDEX,
  PROP_STATUS,
  PROP_MEDIAN_MS,
  PROP_GFLOPS,
  PROP_PERCENT,
  PROP_STRATEGY,
  PROP_SCHEDULE,
  PROP_BEST,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
ts_studio_trial_item_finalize(GObject *object)
{
  TsStudioTrialItem *self = TS_STUDIO_TRIAL_ITEM(object);

  g_clear_pointer(&self->trials, g_ptr_array_unref);
  G_OBJECT_CLASS(ts_studio_trial_item_parent_class)->finalize(object);
}

static void
ts_studio_trial_item_get_property(GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsStudioTrialItem *self = TS_STUDIO_TRIAL_ITEM(object);
  const TsStudioTrial *t = self->trial;

  switch (prop_id) {
  case PROP_ID:
    g_value_set_int64(value, t->id);
    break;
  case PROP_INDEX:
    g_value_set_uint(value, t->index);
    break;
  case PROP_STATUS:
    g_value_set_string(value, ts_db_trial_status_name(t->status));
    break;
  case PROP_MEDIAN_MS:
    g_value_set_double(value, ts_studio_trial_item_get_median_ms(self));
    break;
  case PROP_GFLOPS:
    g_value_set_double(value, ts_studio_trial_item_get_gflops(self));
    break;
  case PROP_PERCENT:
    g_value_set_double(value, ts_studio_trial_item_get_percent(self));
    break;
  case PROP_STRATEGY:
    g_value_set_string(value, t->strategy);
    break;
  case PROP_SCHEDULE:
    g_value_set_string(value, t->schedule);
    break;
  case PROP_BEST:
    g_value_set_boolean(value, t->best);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
  }
}

static void
ts_studio_trial_item_class_init(TsStudioTrialItemClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS(klass);
  GParamFlags flags = G_PARAM_READABLE | G_PARAM_STATIC_STRINGS;

  object_class->finalize = ts_studio_trial_item_finalize;
  object_class->get_property = ts_studio_trial_item_get_property;

  properties[PROP_ID] = g_param_spec_int64("id", NULL, NULL, 0, G_MAXINT64, 0, flags);
  properties[PROP_INDEX] = g_param_spec_uint("index", NULL, NULL, 0, G_MAXUINT, 0, flags);
  properties[PROP_STATUS] = g_param_spec_string("status", NULL, NULL, NULL, flags);
  properties[PROP_MEDIAN_MS] =
      g_param_spec_double("median-ms", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0, flags);
  properties[PROP_GFLOPS] =
      g_param_spec_double("gflops", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0, flags);
  properties[PROP_PERCENT] =
      g_param_spec_double("percent", NULL, NULL, -G_MAXDOUBLE, G_MAXDOUBLE, 0, flags);
  properties[PROP_STRATEGY] = g_param_spec_string("strategy", NULL, NULL, NULL, flags);
  properties[PROP_SCHEDULE] = g_param_spec_string("schedule", NULL, NULL, NULL, flags);
  properties[PROP_BEST] = g_param_spec_boolean("best", NULL, NULL, FALSE, flags);
  g_object_class_install_properties(object_class, N_PROPS, properties);
}

static void
ts_studio_trial_item_init(TsStudioTrialItem *self)
{
}

TsStudioTrialItem *
ts_studio_trial_item_new(GPtrArray *trials, const TsStudioTrial *trial)
{
  g_return_val_if_fail(trials != NULL && trial != NULL, NULL);

  TsStudioTrialItem *self = g_object_new(TS_STUDIO_TYPE_TRIAL_ITEM, NULL);
  self->trials = g_ptr_array_ref(trials);
  self->trial = trial;
  return self;
}

const TsStudioTrial *
ts_studio_trial_item_get_trial(TsStudioTrialItem *item)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_ITEM(item), NULL);
  return item->trial;
}

gint64
ts_studio_trial_item_get_id(TsStudioTrialItem *item)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_ITEM(item), 0);
  return item->trial->id;
}

double
ts_studio_trial_item_get_median_ms(TsStudioTrialItem *item)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_ITEM(item), NAN);
  /* A failed trial may still carry a time (a timeout's limit): it is not a result. */
  if (item->trial->status != TS_DB_TRIAL_OK)
    return NAN;
  return item->trial->median_ns / 1e6;
}

double
ts_studio_trial_item_get_gflops(TsStudioTrialItem *item)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_ITEM(item), NAN);
  return item->trial->status == TS_DB_TRIAL_OK ? item->trial->gflops : NAN;
}

double
ts_studio_trial_item_get_percent(TsStudioTrialItem *item)
{
  g_return_val_if_fail(TS_STUDIO_IS_TRIAL_ITEM(item), NAN);
  return item->trial->status == TS_DB_TRIAL_OK ? 100.0 * item->trial->fraction : NAN;
}
