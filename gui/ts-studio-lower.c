/* ts-studio-lower.c — the lowering inspector's four stages for a stored schedule, the same texts
 * `tessera-tune lower` prints (tools/tessera-tune.c, cmd_lower), so what the studio shows can
 * be checked against the command line. */
#include "ts-studio-data.h"

#include <string.h>

#include "ts-op.h"

void
ts_studio_lowering_free(TsStudioLowering *l)
{
  if (l == NULL)
    return;
  g_free(l->graph);
  g_free(l->schedule);
  g_free(l->tile);
  g_free(l->target);
  g_free(l->target_language);
  g_free(l);
}

static char *
schedule_stage(TsOpInstance *inst, const char *backend, const char *shape,
               const TsSchedPoint *point)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, backend, NULL, &error);
  if (space == NULL)
    return g_strdup(error->message);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, NULL);
  guint64 total = 0, valid = 0;
  gboolean fits = ts_sched_space_size(space, &total);
  if (!ts_sched_space_count_valid(space, env, &valid, &error))
    return g_strdup(error->message);
  g_autofree char *sp = ts_sched_space_to_string(space);
  g_autofree char *pt = ts_sched_point_to_string(point);
  return g_strdup_printf("space: %s\n       %s%" G_GUINT64_FORMAT " points, %" G_GUINT64_FORMAT
                         " valid at %s\npoint: %s\nhash:  %s\n",
                         sp, fits ? "" : "more than ", total, valid, shape, pt,
                         ts_sched_point_hash(point));
}

TsStudioLowering *
ts_studio_lower(const TsStudioWorkload *workload, const char *schedule, GError **error)
{
  g_return_val_if_fail(workload != NULL && schedule != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(TsOpInstance) inst =
    ts_op_instance_new(workload->op, workload->shape, workload->dtype, error);
  if (inst == NULL)
    return NULL;
  /* Lowering needs no device, only its backend's target: a cache from a GPU machine can be
   * inspected on a laptop. */
  const char *backend =
    workload->device && g_strcmp0(workload->device->backend, "cuda") == 0 ? "cuda" : "cpu";
  g_autoptr(TsSchedPoint) user = ts_sched_point_parse(schedule, error);
  if (user == NULL)
    return NULL;
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, backend, user, error);
  if (point == NULL)
    return NULL;

  g_autoptr(TsStudioLowering) l = g_new0(TsStudioLowering, 1);
  l->target_language = g_strdup(strcmp(backend, "cuda") == 0 ? "CUDA C" : "C");
  l->graph = ts_graph_to_string(ts_op_instance_graph(inst), ts_op_instance_shape(inst));
  l->schedule = schedule_stage(inst, backend, workload->shape, point);
  g_autoptr(GError) local = NULL;
  g_autoptr(TsTileKernel) kernel = ts_op_lower(inst, backend, point, &local);
  if (kernel == NULL) {
    l->tile = g_strdup(local->message);
    l->target = g_strdup(local->message);
    return g_steal_pointer(&l);
  }
  l->tile = ts_tile_kernel_to_string(kernel);
  /* Exactly the source the tuner compiles for this point, banner included, and the values
   * the C source reads at run time (CUDA compiles them in): two points that differ only in
   * them have one source. */
  g_autofree char *src = ts_op_emit(inst, backend, point, NULL, NULL, &local);
  g_autofree char *consts = strcmp(backend, "cuda") != 0 ? ts_tile_kernel_launch_text(kernel) : NULL;
  if (src == NULL)
    l->target = g_strdup(local->message);
  else if (consts != NULL)
    l->target = g_strdup_printf("%s\n/* launched with %s (the ints after the dims) */\n", src,
                                consts);
  else
    l->target = g_steal_pointer(&src);
  return g_steal_pointer(&l);
}
