/* ts-prof-metrics.c — the metric catalog (which CUPTI counters make which figure, per chip
 * generation), the mapping of collected values onto figures, and their JSON.
 *
 * A figure lists alternatives, tried in order; the first whose counters were all collected
 * gives the value, as a weighted sum. Alternatives exist because chips name the same work
 * differently: GH100 counts fp16 tensor math as sm__ops_path_tensor_src_fp16, GA100 and AD102
 * split it by destination precision (…_dst_fp16 + …_dst_fp32); GB202 has no dram__bytes_read
 * but dram__bytes_op_read. The names were checked against
 * CUPTI 13.0's host API for GA100, GA102, AD102, GH100, GB100 and GB202 (test-prof-metrics
 * repeats that check wherever libcupti loads).
 */
#include "ts-prof-metrics.h"

#include "ts-prof.h"

#include <math.h>
#include <string.h>

typedef struct {
  const char *counter; /* NULL ends a term list */
  double weight;
} Term;

/* At most this many terms per alternative and alternatives per figure. */
#define MAX_TERMS 3
#define MAX_ALTS 2

typedef struct {
  TsProfFigureInfo info;
  gsize offset;             /* of the TsProfFigure in TsProfKernelMetrics */
  const char *tensor_dtype; /* the figure derived from the op's FLOPs when its dtype is this */
  Term alts[MAX_ALTS][MAX_TERMS + 1];
} Spec;

#define AT(field) G_STRUCT_OFFSET(TsProfKernelMetrics, field)
#define SASS(op) "smsp__sass_thread_inst_executed_op_" op "_pred_on.sum"
#define TENSOR(src) "sm__ops_path_tensor_src_" src ".sum"

static const Spec catalog[] = {
    /* GB20x (GDDR7) counts DRAM traffic per operation instead. */
    {{"dram_read_bytes", "DRAM bytes read", "B"},
     AT(dram_read_bytes),
     NULL,
     {{{"dram__bytes_read.sum", 1}}, {{"dram__bytes_op_read.sum", 1}}}},
    {{"dram_write_bytes", "DRAM bytes written", "B"},
     AT(dram_write_bytes),
     NULL,
     {{{"dram__bytes_write.sum", 1}}, {{"dram__bytes_op_write.sum", 1}}}},
    /* Every byte the L2 slices and the L1/texture units moved, for the hierarchical
     * roofline's per-level intensities (Nsight Compute's lts__t_bytes and l1tex__t_bytes). */
    {{"l2_bytes", "L2 bytes (all traffic)", "B"}, AT(l2_bytes), NULL, {{{"lts__t_bytes.sum", 1}}}},
    {{"l1_bytes", "L1/tex bytes (all traffic)", "B"},
     AT(l1_bytes),
     NULL,
     {{{"l1tex__t_bytes.sum", 1}}}},
    /* An FMA is two FLOPs; add and mul one each. */
    {{"flops_f32", "FP32 FLOPs (FMA pipe)", "FLOP"},
     AT(flops_f32),
     NULL,
     {{{SASS("fadd"), 1}, {SASS("fmul"), 1}, {SASS("ffma"), 2}}}},
    {{"flops_f16", "FP16 FLOPs (FMA pipe)", "FLOP"},
     AT(flops_f16),
     NULL,
     {{{SASS("hadd"), 1}, {SASS("hmul"), 1}, {SASS("hfma"), 2}}}},
    {{"flops_f64", "FP64 FLOPs (FMA pipe)", "FLOP"},
     AT(flops_f64),
     NULL,
     {{{SASS("dadd"), 1}, {SASS("dmul"), 1}, {SASS("dfma"), 2}}}},
    /* Tensor "math ops" already count a multiply-add as two. */
    {{"tensor_flops_bf16", "tensor FLOPs bf16", "FLOP"},
     AT(tensor_flops_bf16),
     "bf16",
     {{{TENSOR("bf16_dst_fp32"), 1}}}},
    {{"tensor_flops_f16", "tensor FLOPs f16", "FLOP"},
     AT(tensor_flops_f16),
     "f16",
     {{{TENSOR("fp16"), 1}}, {{TENSOR("fp16_dst_fp16"), 1}, {TENSOR("fp16_dst_fp32"), 1}}}},
    {{"tensor_flops_fp8", "tensor FLOPs fp8", "FLOP"},
     AT(tensor_flops_fp8),
     "fp8",
     {{{TENSOR("fp8"), 1}}, {{TENSOR("fp8_dst_fp16"), 1}, {TENSOR("fp8_dst_fp32"), 1}}}},
    {{"tensor_flops_tf32", "tensor FLOPs tf32", "FLOP"},
     AT(tensor_flops_tf32),
     "tf32",
     {{{TENSOR("tf32_dst_fp32"), 1}}}},
    {{"occupancy_pct", "achieved occupancy", "%"},
     AT(occupancy_pct),
     NULL,
     {{{"sm__warps_active.avg.pct_of_peak_sustained_active", 1}}}},
    {{"l2_hit_pct", "L2 hit rate", "%"},
     AT(l2_hit_pct),
     NULL,
     {{{"lts__t_sector_hit_rate.pct", 1}}}},
    {{"smem_conflicts_ld", "shared bank conflicts (loads)", ""},
     AT(smem_conflicts_ld),
     NULL,
     {{{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 1}}}},
    {{"smem_conflicts_st", "shared bank conflicts (stores)", ""},
     AT(smem_conflicts_st),
     NULL,
     {{{"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 1}}}},
    {{"duration_ns", "duration (profiled pass)", "ns"},
     AT(duration_ns),
     NULL,
     {{{"gpu__time_duration.sum", 1}}}},
};

const char *
ts_prof_source_name(TsProfSource source)
{
  switch (source) {
  case TS_PROF_SOURCE_COUNTER:
    return "counter";
  case TS_PROF_SOURCE_DERIVED:
    return "derived from the op's FLOP count";
  case TS_PROF_SOURCE_UNAVAILABLE:
  default:
    return "unavailable";
  }
}

guint
ts_prof_figure_count(void)
{
  return G_N_ELEMENTS(catalog);
}

const TsProfFigureInfo *
ts_prof_figure_info(guint i)
{
  g_return_val_if_fail(i < G_N_ELEMENTS(catalog), NULL);
  return &catalog[i].info;
}

static TsProfFigure *
figure_at(TsProfKernelMetrics *m, guint i)
{
  return G_STRUCT_MEMBER_P(m, catalog[i].offset);
}

const TsProfFigure *
ts_prof_kernel_metrics_figure(const TsProfKernelMetrics *m, guint i)
{
  g_return_val_if_fail(m != NULL && i < G_N_ELEMENTS(catalog), NULL);
  return figure_at((TsProfKernelMetrics *)m, i);
}

const char *const *
ts_prof_metric_names(void)
{
  static const char **names;
  static gsize once = 0;
  if (g_once_init_enter(&once)) {
    GPtrArray *a = g_ptr_array_new();
    for (guint i = 0; i < G_N_ELEMENTS(catalog); i++)
      for (guint alt = 0; alt < MAX_ALTS; alt++)
        for (const Term *t = catalog[i].alts[alt]; t->counter != NULL; t++) {
          gboolean seen = FALSE;
          for (guint j = 0; j < a->len && !seen; j++)
            seen = strcmp(a->pdata[j], t->counter) == 0;
          if (!seen)
            g_ptr_array_add(a, (gpointer)t->counter);
        }
    g_ptr_array_add(a, NULL);
    names = (const char **)g_ptr_array_free(a, FALSE);
    g_once_init_leave(&once, 1);
  }
  return names;
}

const char *
ts_prof_op_tensor_dtype(const TsOpInstance *inst)
{
  g_return_val_if_fail(inst != NULL, NULL);
  const char *roof =
      ts_prof_compute_roof("cuda", ts_dtype_name(ts_op_instance_dtype(inst)->storage),
                           ts_op_tensor_math(ts_op_instance_op(inst)));
  static const char *const dtypes[][2] = {{"bf16_tensor", "bf16"},
                                          {"f16_tensor", "f16"},
                                          {"fp8_tensor", "fp8"},
                                          {"tf32_tensor", "tf32"}};
  for (guint i = 0; i < G_N_ELEMENTS(dtypes); i++)
    if (strcmp(roof, dtypes[i][0]) == 0)
      return dtypes[i][1];
  return NULL;
}

void
ts_prof_kernel_metrics_free(TsProfKernelMetrics *m)
{
  if (m == NULL)
    return;
  for (guint i = 0; i < G_N_ELEMENTS(catalog); i++)
    g_free(figure_at(m, i)->detail);
  g_free(m);
}

static gboolean
lookup(GHashTable *values, const char *counter, double *value)
{
  const double *v = values ? g_hash_table_lookup(values, counter) : NULL;
  if (v == NULL || !isfinite(*v))
    return FALSE;
  *value = *v;
  return TRUE;
}

static char *
describe_terms(const Term *terms)
{
  g_autoptr(GString) s = g_string_new(NULL);
  for (const Term *t = terms; t->counter != NULL; t++) {
    if (s->len)
      g_string_append(s, " + ");
    if (t->weight != 1)
      g_string_append_printf(s, "%g*", t->weight);
    g_string_append(s, t->counter);
  }
  return g_string_free(g_steal_pointer(&s), FALSE);
}

/* The counters of every alternative that were not collected, for the "why not" detail. */
static char *
describe_missing(GHashTable *values, const Spec *spec)
{
  g_autoptr(GString) s = g_string_new("no ");
  gsize empty = s->len;
  for (guint alt = 0; alt < MAX_ALTS; alt++)
    for (const Term *t = spec->alts[alt]; t->counter != NULL; t++) {
      double v;
      if (!lookup(values, t->counter, &v))
        g_string_append_printf(s, "%s%s", s->len > empty ? ", " : "", t->counter);
    }
  g_string_append(s, " on this GPU");
  return g_string_free(g_steal_pointer(&s), FALSE);
}

static void
fill(TsProfFigure *f, GHashTable *values, const Spec *spec, double op_flops,
     const char *tensor_dtype)
{
  for (guint alt = 0; alt < MAX_ALTS && spec->alts[alt][0].counter != NULL; alt++) {
    double sum = 0;
    gboolean all = TRUE;
    for (const Term *t = spec->alts[alt]; t->counter != NULL && all; t++) {
      double v = 0;
      all = lookup(values, t->counter, &v);
      sum += t->weight * v;
    }
    if (all) {
      *f = (TsProfFigure){sum, TS_PROF_SOURCE_COUNTER, describe_terms(spec->alts[alt])};
      return;
    }
  }
  g_autofree char *missing = describe_missing(values, spec);
  if (spec->tensor_dtype != NULL && g_strcmp0(spec->tensor_dtype, tensor_dtype) == 0 &&
      isfinite(op_flops)) {
    *f = (TsProfFigure){op_flops, TS_PROF_SOURCE_DERIVED, g_steal_pointer(&missing)};
    return;
  }
  *f = (TsProfFigure){NAN, TS_PROF_SOURCE_UNAVAILABLE, g_steal_pointer(&missing)};
}

TsProfKernelMetrics *
ts_prof_kernel_metrics_from_values(GHashTable *values, double op_flops, const char *tensor_dtype)
{
  TsProfKernelMetrics *m = g_new0(TsProfKernelMetrics, 1);
  for (guint i = 0; i < G_N_ELEMENTS(catalog); i++)
    fill(figure_at(m, i), values, &catalog[i], op_flops, tensor_dtype);
  return m;
}

JsonNode *
ts_prof_kernel_metrics_to_json_node(const TsProfKernelMetrics *m)
{
  g_return_val_if_fail(m != NULL, NULL);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  for (guint i = 0; i < G_N_ELEMENTS(catalog); i++) {
    const TsProfFigure *f = ts_prof_kernel_metrics_figure(m, i);
    json_builder_set_member_name(b, catalog[i].info.key);
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "value");
    if (isfinite(f->value))
      json_builder_add_double_value(b, f->value);
    else
      json_builder_add_null_value(b);
    json_builder_set_member_name(b, "source");
    json_builder_add_string_value(b, ts_prof_source_name(f->source));
    if (f->detail) {
      json_builder_set_member_name(b, "detail");
      json_builder_add_string_value(b, f->detail);
    }
    json_builder_end_object(b);
  }
  json_builder_end_object(b);
  return json_builder_get_root(b);
}

TsProfKernelMetrics *
ts_prof_kernel_metrics_from_json_node(JsonNode *node)
{
  if (node == NULL || !JSON_NODE_HOLDS_OBJECT(node))
    return NULL;
  JsonObject *o = json_node_get_object(node);
  TsProfKernelMetrics *m = g_new0(TsProfKernelMetrics, 1);
  for (guint i = 0; i < G_N_ELEMENTS(catalog); i++) {
    TsProfFigure *f = figure_at(m, i);
    f->value = NAN;
    f->source = TS_PROF_SOURCE_UNAVAILABLE;
    JsonNode *fn = json_object_get_member(o, catalog[i].info.key);
    if (fn == NULL || !JSON_NODE_HOLDS_OBJECT(fn))
      continue;
    JsonObject *fo = json_node_get_object(fn);
    JsonNode *v = json_object_get_member(fo, "value");
    if (v && JSON_NODE_HOLDS_VALUE(v))
      f->value = json_node_get_double(v);
    const char *source = json_object_get_string_member_with_default(fo, "source", "");
    for (TsProfSource k = TS_PROF_SOURCE_UNAVAILABLE; k <= TS_PROF_SOURCE_DERIVED; k++)
      if (g_str_equal(source, ts_prof_source_name(k)))
        f->source = k;
    const char *detail = json_object_get_string_member_with_default(fo, "detail", NULL);
    f->detail = g_strdup(detail);
  }
  return m;
}

/* The metrics pass launches the point's kernel once per replay; it gets buffers of its own and
 * is verified again before it is counted. */
typedef struct {
  TsOpTimer *timer;
} PointRun;

static gboolean
point_launch(gpointer data, GError **error)
{
  PointRun *run = data;
  double sample = 0; /* meaningless inside a metrics pass: the profiler replays */
  return ts_op_timer_sample(run->timer, 0, 1, &sample, error);
}

TsProfKernelMetrics *
ts_prof_point_metrics(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
                      const TsRunOptions *options, char **why)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsModule) module = ts_op_compile(inst, backend, point, &error);
  g_autoptr(TsTrialResult) check = NULL;
  TsRunOptions opt = *options;
  opt.hooks = NULL;
  g_autoptr(TsOpTimer) timer =
    module ? ts_op_timer_new(inst, backend, module, &opt, &check, &error) : NULL;
  if (timer == NULL) {
    *why = g_strdup(error ? error->message : check ? check->message : "the kernel did not run");
    return NULL;
  }
  PointRun run = {timer};
  TsProfKernelMetrics *m =
    ts_prof_collect_kernel_metrics(backend, point_launch, &run, ts_op_instance_flops(inst),
                                   ts_prof_op_tensor_dtype(inst), &error);
  if (m == NULL)
    *why = g_strdup(error->message);
  return m;
}

char *
ts_prof_kernel_metrics_to_json(const TsProfKernelMetrics *m)
{
  g_autoptr(JsonNode) root = ts_prof_kernel_metrics_to_json_node(m);
  return root ? json_to_string(root, FALSE) : NULL;
}

TsProfKernelMetrics *
ts_prof_collect_kernel_metrics(TsBackend *backend, TsBackendLaunchFunc launch, gpointer data,
                               double op_flops, const char *tensor_dtype, GError **error)
{
  g_return_val_if_fail(backend != NULL && launch != NULL, NULL);
  g_autoptr(GHashTable) values = NULL;
  g_auto(GStrv) unsupported = NULL; /* each figure's detail names what its chip lacks */
  if (!ts_backend_collect_metrics_with(backend, ts_prof_metric_names(), launch, data, &values,
                                       &unsupported, error))
    return NULL;
  return ts_prof_kernel_metrics_from_values(values, op_flops, tensor_dtype);
}
