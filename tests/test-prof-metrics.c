/* test-prof-metrics.c — GPU hardware metrics: the metric catalog and the mapping of collected
 * counters onto figures (hand-made tables, no device), their JSON, the refused-counters message,
 * the CPU backend's clear refusal, the timeline's choice of the device's memory account; the
 * catalog against CUPTI's own per-chip metric lists (host API, no device: skipped without
 * libcupti); and, only on a machine with a GPU (skipped with the reason elsewhere), a real
 * metrics pass and the CUPTI records on a profiled run's timeline.
 */
#include "config.h"

#include "test-util.h"
#include "ts-backend.h"
#include "ts-cuda.h"
#include "ts-prof-metrics.h"
#include "ts-prof-trace.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define SASS(op) "smsp__sass_thread_inst_executed_op_" op "_pred_on.sum"
#define TENSOR(src) "sm__ops_path_tensor_src_" src ".sum"

static GHashTable *
table(const char *first, ...)
{
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  va_list ap;
  va_start(ap, first);
  for (const char *name = first; name != NULL; name = va_arg(ap, const char *)) {
    double v = va_arg(ap, double);
    g_hash_table_replace(t, g_strdup(name), g_memdup2(&v, sizeof v));
  }
  va_end(ap);
  return t;
}

/* What a GH100 would report for a bf16 GEMM: every figure's counters present. */
static GHashTable *
gh100_values(void)
{
  return table(
      "dram__bytes_read.sum", 4.0e6, "dram__bytes_write.sum", 2.0e6, "lts__t_bytes.sum", 9.0e6,
      "l1tex__t_bytes.sum", 3.2e7, SASS("fadd"), 10.0,
      SASS("fmul"), 20.0, SASS("ffma"), 300.0, SASS("hadd"), 0.0, SASS("hmul"), 0.0, SASS("hfma"),
      7.0, SASS("dadd"), 0.0, SASS("dmul"), 0.0, SASS("dfma"), 0.0, TENSOR("bf16_dst_fp32"),
      2.0 * 512 * 512 * 512, TENSOR("fp16"), 0.0, TENSOR("fp8"), 0.0, TENSOR("tf32_dst_fp32"), 0.0,
      "sm__warps_active.avg.pct_of_peak_sustained_active", 37.5, "lts__t_sector_hit_rate.pct",
      81.25, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 12.0,
      "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum", 3.0, "gpu__time_duration.sum",
      15000.0, NULL);
}

static void
test_catalog(void)
{
  const char *const *names = ts_prof_metric_names();
  guint n = g_strv_length((char **)names);
  g_assert_cmpuint(n, >=, 20);
  for (guint i = 0; i < n; i++)
    for (guint j = i + 1; j < n; j++)
      g_assert_cmpstr(names[i], !=, names[j]);
  static const char *const wanted[] = {"dram__bytes_read.sum",
                                       "dram__bytes_write.sum",
                                       SASS("ffma"),
                                       SASS("hfma"),
                                       SASS("dfma"),
                                       "sm__warps_active.avg.pct_of_peak_sustained_active",
                                       "lts__t_sector_hit_rate.pct",
                                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                                       "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
                                       "gpu__time_duration.sum",
                                       "lts__t_bytes.sum",
                                       "l1tex__t_bytes.sum"};
  for (guint i = 0; i < G_N_ELEMENTS(wanted); i++)
    g_assert_true(g_strv_contains(names, wanted[i]));
  g_assert_cmpuint(ts_prof_figure_count(), ==, 16);
  g_assert_cmpstr(ts_prof_figure_info(0)->key, ==, "dram_read_bytes");
}

static void
test_all_counters(void)
{
  g_autoptr(GHashTable) v = gh100_values();
  double flops = 2.0 * 512 * 512 * 512;
  g_autoptr(TsProfKernelMetrics) m = ts_prof_kernel_metrics_from_values(v, flops, "bf16");
  g_assert_cmpfloat(m->dram_read_bytes.value, ==, 4.0e6);
  g_assert_cmpint(m->dram_read_bytes.source, ==, TS_PROF_SOURCE_COUNTER);
  g_assert_cmpstr(m->dram_read_bytes.detail, ==, "dram__bytes_read.sum");
  g_assert_cmpfloat(m->dram_write_bytes.value, ==, 2.0e6);
  g_assert_cmpfloat(m->l2_bytes.value, ==, 9.0e6);
  g_assert_cmpfloat(m->l1_bytes.value, ==, 3.2e7);
  /* add + mul + 2 fma */
  g_assert_cmpfloat(m->flops_f32.value, ==, 10 + 20 + 2 * 300);
  g_assert_cmpfloat(m->flops_f16.value, ==, 14);
  g_assert_cmpfloat(m->flops_f64.value, ==, 0);
  g_assert_cmpint(m->flops_f64.source, ==, TS_PROF_SOURCE_COUNTER);
  g_assert_nonnull(strstr(m->flops_f32.detail, "2*" SASS("ffma")));
  g_assert_cmpfloat(m->tensor_flops_bf16.value, ==, flops);
  g_assert_cmpint(m->tensor_flops_bf16.source, ==, TS_PROF_SOURCE_COUNTER);
  /* GH100's undivided fp16 counter is the first alternative. */
  g_assert_cmpint(m->tensor_flops_f16.source, ==, TS_PROF_SOURCE_COUNTER);
  g_assert_cmpstr(m->tensor_flops_f16.detail, ==, TENSOR("fp16"));
  g_assert_cmpfloat(m->occupancy_pct.value, ==, 37.5);
  g_assert_cmpfloat(m->l2_hit_pct.value, ==, 81.25);
  g_assert_cmpfloat(m->smem_conflicts_ld.value, ==, 12);
  g_assert_cmpfloat(m->smem_conflicts_st.value, ==, 3);
  g_assert_cmpfloat(m->duration_ns.value, ==, 15000);
  for (guint i = 0; i < ts_prof_figure_count(); i++)
    g_assert_cmpint(ts_prof_kernel_metrics_figure(m, i)->source, ==, TS_PROF_SOURCE_COUNTER);
}

/* Ampere and Ada split fp16 tensor math by destination precision: the sum is the figure. */
static void
test_split_destinations(void)
{
  g_autoptr(GHashTable) v =
      table(TENSOR("fp16_dst_fp16"), 100.0, TENSOR("fp16_dst_fp32"), 2000.0, NULL);
  g_autoptr(TsProfKernelMetrics) m = ts_prof_kernel_metrics_from_values(v, 5000, "f16");
  g_assert_cmpfloat(m->tensor_flops_f16.value, ==, 2100);
  g_assert_cmpint(m->tensor_flops_f16.source, ==, TS_PROF_SOURCE_COUNTER);
  g_assert_cmpstr(m->tensor_flops_f16.detail, ==,
                  TENSOR("fp16_dst_fp16") " + " TENSOR("fp16_dst_fp32"));
  /* Half an alternative is no alternative. */
  g_autoptr(GHashTable) half = table(TENSOR("fp16_dst_fp32"), 2000.0, NULL);
  g_autoptr(TsProfKernelMetrics) h = ts_prof_kernel_metrics_from_values(half, 5000, NULL);
  g_assert_true(isnan(h->tensor_flops_f16.value));
  g_assert_cmpint(h->tensor_flops_f16.source, ==, TS_PROF_SOURCE_UNAVAILABLE);
}

/* A chip without the tensor counter of the op's dtype: the op's exact FLOPs, labelled; other
 * dtypes' figures stay unavailable, never zero. */
static void
test_derived_tensor(void)
{
  g_autoptr(GHashTable) v = table("dram__bytes_read.sum", 1.0, NULL);
  double flops = 2.0 * 1024 * 1024 * 1024;
  g_autoptr(TsProfKernelMetrics) m = ts_prof_kernel_metrics_from_values(v, flops, "fp8");
  g_assert_cmpfloat(m->tensor_flops_fp8.value, ==, flops);
  g_assert_cmpint(m->tensor_flops_fp8.source, ==, TS_PROF_SOURCE_DERIVED);
  g_assert_cmpstr(ts_prof_source_name(m->tensor_flops_fp8.source), ==,
                  "derived from the op's FLOP count");
  g_assert_nonnull(strstr(m->tensor_flops_fp8.detail, TENSOR("fp8")));
  g_assert_nonnull(strstr(m->tensor_flops_fp8.detail, "on this GPU"));
  g_assert_cmpint(m->tensor_flops_bf16.source, ==, TS_PROF_SOURCE_UNAVAILABLE);
  g_assert_true(isnan(m->tensor_flops_bf16.value));
  g_assert_cmpint(m->occupancy_pct.source, ==, TS_PROF_SOURCE_UNAVAILABLE);
  g_assert_cmpint(m->dram_read_bytes.source, ==, TS_PROF_SOURCE_COUNTER);
  /* Not a tensor op: nothing is derived. */
  g_autoptr(TsProfKernelMetrics) plain = ts_prof_kernel_metrics_from_values(v, flops, NULL);
  for (guint i = 0; i < ts_prof_figure_count(); i++)
    g_assert_cmpint(ts_prof_kernel_metrics_figure(plain, i)->source, !=, TS_PROF_SOURCE_DERIVED);
  /* An empty table (no values at all) still yields the derived figure. */
  g_autoptr(TsProfKernelMetrics) none = ts_prof_kernel_metrics_from_values(NULL, 8, "bf16");
  g_assert_cmpint(none->tensor_flops_bf16.source, ==, TS_PROF_SOURCE_DERIVED);
  g_assert_cmpfloat(none->tensor_flops_bf16.value, ==, 8);
}

static void
test_op_tensor_dtype(void)
{
  static const struct {
    const char *op, *shape, *dtype, *want;
  } cases[] = {
      {"gemm", "M=64,N=64,K=64", "bf16", "bf16"},
      {"gemm", "M=64,N=64,K=64", "f16", "f16"},
      {"gemm", "M=64,N=64,K=64", "f32", "tf32"},
      {"softmax_safe", "M=64,N=64", "bf16", NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsOpInstance) inst =
        ts_op_instance_new(cases[i].op, cases[i].shape, cases[i].dtype, &error);
    g_assert_no_error(error);
    g_assert_cmpstr(ts_prof_op_tensor_dtype(inst), ==, cases[i].want);
  }
}

static void
test_json(void)
{
  g_autoptr(GHashTable) v = gh100_values();
  g_hash_table_remove(v, TENSOR("tf32_dst_fp32"));
  g_autoptr(TsProfKernelMetrics) m = ts_prof_kernel_metrics_from_values(v, 1e9, "bf16");
  g_autofree char *text = ts_prof_kernel_metrics_to_json(m);
  g_autoptr(JsonParser) p = json_parser_new();
  g_autoptr(GError) error = NULL;
  g_assert_true(json_parser_load_from_data(p, text, -1, &error));
  g_assert_no_error(error);
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
  for (guint i = 0; i < ts_prof_figure_count(); i++)
    g_assert_true(json_object_has_member(o, ts_prof_figure_info(i)->key));
  JsonObject *dram = json_object_get_object_member(o, "dram_read_bytes");
  g_assert_cmpfloat(json_object_get_double_member(dram, "value"), ==, 4.0e6);
  g_assert_cmpstr(json_object_get_string_member(dram, "source"), ==, "counter");
  JsonObject *tf32 = json_object_get_object_member(o, "tensor_flops_tf32");
  g_assert_true(json_object_get_null_member(tf32, "value"));
  g_assert_cmpstr(json_object_get_string_member(tf32, "source"), ==, "unavailable");
  g_assert_cmpstr(json_object_get_string_member(tf32, "detail"), ==,
                  "no " TENSOR("tf32_dst_fp32") " on this GPU");
}

/* What the worker sends back reads as what it measured: every figure's value, source and
 * detail (the derived tensor figure and a missing counter included). */
static void
test_json_round_trip(void)
{
  g_autoptr(GHashTable) v = gh100_values();
  g_hash_table_remove(v, TENSOR("tf32_dst_fp32"));
  g_hash_table_remove(v, TENSOR("bf16_dst_fp32"));
  g_autoptr(TsProfKernelMetrics) m = ts_prof_kernel_metrics_from_values(v, 1e9, "bf16");
  g_autofree char *text = ts_prof_kernel_metrics_to_json(m);
  g_autoptr(JsonNode) node = json_from_string(text, NULL);
  g_autoptr(TsProfKernelMetrics) back = ts_prof_kernel_metrics_from_json_node(node);
  g_assert_nonnull(back);
  gboolean saw[3] = {FALSE, FALSE, FALSE};
  for (guint i = 0; i < ts_prof_figure_count(); i++) {
    const TsProfFigure *a = ts_prof_kernel_metrics_figure(m, i);
    const TsProfFigure *b = ts_prof_kernel_metrics_figure(back, i);
    g_assert_cmpint(a->source, ==, b->source);
    saw[a->source] = TRUE;
    g_assert_cmpstr(a->detail, ==, b->detail);
    if (isfinite(a->value))
      g_assert_cmpfloat(a->value, ==, b->value);
    else
      g_assert_false(isfinite(b->value));
  }
  g_assert_true(saw[TS_PROF_SOURCE_COUNTER] && saw[TS_PROF_SOURCE_DERIVED] &&
                saw[TS_PROF_SOURCE_UNAVAILABLE]);
  g_autoptr(JsonNode) not_object = json_from_string("[1]", NULL);
  g_assert_null(ts_prof_kernel_metrics_from_json_node(not_object));
}

static void
test_permission_text(void)
{
  const char *help = ts_backend_counter_permission_help();
  g_assert_nonnull(strstr(help, "NVreg_RestrictProfilingToAdminUsers=0"));
  g_assert_nonnull(strstr(help, "/etc/modprobe.d"));
  g_assert_nonnull(strstr(help, "root"));
  g_assert_nonnull(strstr(help, "ERR_NVGPUCTRPERM"));
  g_assert_null(strchr(help, '\n')); /* one line in a report */
}

static gboolean
never_called(gpointer data, GError **error)
{
  *(gboolean *)data = TRUE;
  return TRUE;
}

static void
test_cpu_backend(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) cpu = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_assert_false(ts_backend_has_metrics(cpu));
  gboolean called = FALSE;
  g_autoptr(GHashTable) values = NULL;
  g_auto(GStrv) unsupported = NULL;
  g_assert_false(ts_backend_collect_metrics_with(cpu, ts_prof_metric_names(), never_called, &called,
                                                 &values, &unsupported, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "need a CUDA device"));
  g_assert_nonnull(strstr(error->message, "perf counters"));
  g_assert_false(called);
  g_assert_null(values);
  g_clear_error(&error);
  g_autoptr(TsProfKernelMetrics) m =
      ts_prof_collect_kernel_metrics(cpu, never_called, &called, 1, "bf16", &error);
  g_assert_null(m);
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED);
  g_clear_error(&error);

  /* The module form too, with a real module and launch. */
  g_autofree char *cache = g_dir_make_tmp("ts-test-prof-metrics-XXXXXX", &error);
  g_assert_no_error(error);
  ts_backend_set_cache_dir(cpu, cache);
  TsSource src = {TS_LANG_C,
                  "#include <stdint.h>\n"
                  "void nop(void *const *bufs, const int64_t *ints, const double *floats) {}\n",
                  "nop"};
  g_autoptr(TsModule) module = ts_backend_compile(cpu, &src, &error);
  g_assert_no_error(error);
  TsLaunch launch = {0};
  static const char *const names[] = {"dram__bytes_read.sum", NULL};
  g_assert_false(ts_backend_collect_metrics(cpu, module, &launch, names, &values, NULL, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED);
  g_assert_cmpstr(error->message, ==,
                  "hardware metrics need a CUDA device; the cpu backend has perf counters "
                  "instead");
  g_clear_pointer(&module, ts_module_free);
  ts_test_remove_tree(cache);
}

/* Host lane and device lane see the same buffers on a GPU; the peak must not add them up. */
static void
test_device_memory_account(void)
{
  const guint32 host = 1234, dev = TS_TRACE_DEVICE_LANE;
  const TsDbEvent both[] = {
      {.kind = "alloc", .name = "alloc", .start_ns = 0, .bytes = 100, .address = 1, .lane = host},
      {.kind = "alloc", .name = "alloc", .start_ns = 1, .bytes = 100, .address = 9, .lane = dev},
      {.kind = "alloc", .name = "alloc", .start_ns = 2, .bytes = 50, .address = 8, .lane = dev},
      {.kind = "free", .name = "free", .start_ns = 3, .bytes = 100, .address = 1, .lane = host},
      {.kind = "free", .name = "free", .start_ns = 4, .bytes = 100, .address = 9, .lane = dev},
  };
  TsProfTraceSummary s;
  ts_prof_trace_summarise(both, G_N_ELEMENTS(both), &s);
  g_assert_cmpuint(s.peak_bytes, ==, 150);
  ts_prof_trace_summarise(both, 1, &s); /* host only: as before */
  g_assert_cmpuint(s.peak_bytes, ==, 100);
}

/* Every arch Tessera compiles for has a chip to check the catalog against. */
static void
test_chip_per_arch(void)
{
  static const char *const arches[] = {"sm_80",  "sm_86",   "sm_89", "sm_90",
                                       "sm_90a", "sm_100a", "sm_120"};
  for (guint i = 0; i < G_N_ELEMENTS(arches); i++) {
    g_assert_nonnull(ts_cuda_arch_lookup(arches[i]));
    g_assert_nonnull(ts_cuda_metrics_chip(arches[i]));
  }
  g_assert_cmpstr(ts_cuda_metrics_chip("sm_90a"), ==, "GH100");
  g_assert_null(ts_cuda_metrics_chip("sm_1"));
}

/* ---- CUPTI's host API: the catalog against each chip's metric list (no device) ---- */

static gboolean
cupti_host(void)
{
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) unsupported = NULL;
  static const char *const one[] = {"gpu__time_duration.sum", NULL};
  if (ts_cuda_metrics_plan("GH100", one, &unsupported, NULL, &error))
    return TRUE;
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE);
  g_test_skip(error->message);
  return FALSE;
}

/* Every figure of the catalog on a chip, as if each supported counter had counted 1. */
static TsProfKernelMetrics *
as_if_counted(const char *chip, const char *tensor_dtype, guint *n_passes, GStrv *unsupported)
{
  g_autoptr(GError) error = NULL;
  const char *const *names = ts_prof_metric_names();
  g_assert_true(ts_cuda_metrics_plan(chip, names, unsupported, n_passes, &error));
  g_assert_no_error(error);
  g_autoptr(GHashTable) v = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (const char *const *n = names; *n; n++)
    if (!g_strv_contains((const char *const *)*unsupported, *n)) {
      double one = 1;
      g_hash_table_replace(v, g_strdup(*n), g_memdup2(&one, sizeof one));
    }
  return ts_prof_kernel_metrics_from_values(v, 1e6, tensor_dtype);
}

static void
test_plan_chips(void)
{
  if (!cupti_host())
    return;
  /* Checked against CUPTI 13.0, for the chip of every arch Tessera compiles for: every figure
   * but tensor ones comes from counters everywhere; the op's tensor figure is derived where the
   * chip has no counter for its dtype (no fp8 tensor cores on Ampere; GB100 names fp8 tensor
   * counters otherwise). */
  static const struct {
    const char *arch, *tensor, *derived;
  } chips[] = {
      {"sm_80", "fp8", "tensor_flops_fp8"},
      {"sm_86", "bf16", ""},
      {"sm_89", "fp8", ""},
      {"sm_90a", "bf16", ""},
      {"sm_90a", "f16", ""},
      {"sm_90a", "fp8", ""},
      {"sm_100a", "fp8", "tensor_flops_fp8"},
      {"sm_100a", "f16", ""},
      {"sm_120", "bf16", ""},
  };
  for (guint c = 0; c < G_N_ELEMENTS(chips); c++) {
    const char *chip = ts_cuda_metrics_chip(chips[c].arch);
    guint passes = 0;
    g_auto(GStrv) unsupported = NULL;
    g_autoptr(TsProfKernelMetrics) m = as_if_counted(chip, chips[c].tensor, &passes, &unsupported);
    g_autofree char *missing = g_strjoinv(" ", unsupported);
    g_test_message("%s (%s): %u passes; not on this chip: %s", chip, chips[c].arch, passes,
                   missing);
    g_assert_cmpuint(passes, >=, 1);
    for (guint i = 0; i < ts_prof_figure_count(); i++) {
      const TsProfFigure *f = ts_prof_kernel_metrics_figure(m, i);
      const char *key = ts_prof_figure_info(i)->key;
      if (strcmp(key, chips[c].derived) == 0)
        g_assert_cmpint(f->source, ==, TS_PROF_SOURCE_DERIVED);
      else if (g_str_has_prefix(key, "tensor_flops_") && !g_str_has_suffix(key, chips[c].tensor))
        g_assert_cmpint(f->source, !=, TS_PROF_SOURCE_DERIVED);
      else if (f->source != TS_PROF_SOURCE_COUNTER)
        g_error("%s on %s: %s (%s)", key, chip, ts_prof_source_name(f->source), f->detail);
    }
  }
}

static void
test_plan_errors(void)
{
  if (!cupti_host())
    return;
  g_autoptr(GError) error = NULL;
  g_auto(GStrv) unsupported = NULL;
  static const char *const names[] = {"dram__bytes_read.sum", "no_such__metric.sum", NULL};
  guint passes = 0;
  g_assert_true(ts_cuda_metrics_plan("GH100", names, &unsupported, &passes, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(g_strv_length(unsupported), ==, 1);
  g_assert_cmpstr(unsupported[0], ==, "no_such__metric.sum");
  g_assert_cmpuint(passes, >=, 1);
  g_clear_pointer(&unsupported, g_strfreev);
  g_assert_false(ts_cuda_metrics_plan("XX999", names, &unsupported, NULL, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "XX999"));
  g_assert_nonnull(strstr(error->message, "GH100")); /* the chips it knows */
}

/* ---- on a GPU (skipped elsewhere) ---- */

static TsBackend *
gpu_or_skip(void)
{
  g_autoptr(GError) error = NULL;
  TsBackend *b = ts_backend_open("cuda", &error);
  if (b == NULL)
    g_test_skip(error->message); /* "no CUDA device: ..." */
  return b;
}

typedef struct {
  TsOpTimer *timer;
  guint launches;
} Run;

static gboolean
run_once(gpointer data, GError **error)
{
  Run *run = data;
  double sample = 0;
  run->launches++;
  if (!ts_op_timer_sample(run->timer, 0, 1, &sample, error))
    return FALSE;
  g_assert_true(isnan(sample)); /* no times inside a metrics pass */
  return TRUE;
}

static void
test_gpu_metrics(void)
{
  g_autoptr(TsBackend) b = gpu_or_skip();
  if (b == NULL)
    return;
  g_autofree char *cache = g_dir_make_tmp("ts-test-prof-metrics-XXXXXX", NULL);
  ts_backend_set_cache_dir(b, cache);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=512,N=512,K=512", "bf16", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_autofree char *entry = NULL;
  g_autofree char *text = ts_op_emit(inst, "cuda", point, &entry, NULL, &error);
  g_assert_no_error(error);
  TsSource src = {TS_LANG_CUDA, text, entry};
  g_autoptr(TsModule) module = ts_backend_compile(b, &src, &error);
  g_assert_no_error(error);
  TsRunOptions opt;
  ts_run_options_init(&opt);
  g_autoptr(TsTrialResult) check = NULL;
  g_autoptr(TsOpTimer) timer = ts_op_timer_new(inst, b, module, &opt, &check, &error);
  g_assert_no_error(error);
  g_assert_nonnull(timer);

  Run run = {timer, 0};
  double flops = ts_op_instance_flops(inst);
  g_autoptr(TsProfKernelMetrics) m =
      ts_prof_collect_kernel_metrics(b, run_once, &run, flops, "bf16", &error);
  if (m == NULL && g_error_matches(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_PERMISSION)) {
    g_assert_nonnull(strstr(error->message, "NVreg_RestrictProfilingToAdminUsers"));
    g_test_skip(error->message);
    ts_test_remove_tree(cache);
    return;
  }
  g_assert_no_error(error);
  g_autofree char *json = ts_prof_kernel_metrics_to_json(m);
  g_test_message("%u passes: %s", run.launches, json);
  g_assert_cmpuint(run.launches, >=, 1);
  /* The L2 is flushed before each pass, so the inputs come from DRAM at least once. */
  double compulsory = 2.0 * 512 * 512 * 2;
  g_assert_cmpint(m->dram_read_bytes.source, ==, TS_PROF_SOURCE_COUNTER);
  g_assert_cmpfloat(m->dram_read_bytes.value, >=, 0.5 * compulsory);
  if (m->tensor_flops_bf16.source == TS_PROF_SOURCE_COUNTER)
    g_assert_cmpfloat(fabs(m->tensor_flops_bf16.value / flops - 1), <, 0.05);
  g_assert_cmpfloat(m->occupancy_pct.value, >, 0);
  g_assert_cmpfloat(m->occupancy_pct.value, <=, 100);
  g_assert_cmpfloat(m->l2_hit_pct.value, >=, 0);
  g_assert_cmpfloat(m->l2_hit_pct.value, <=, 100);
  g_assert_cmpfloat(m->duration_ns.value, >, 0);

  /* Asked strictly, a name the chip lacks is an error that names it. */
  static const char *const bogus[] = {"gpu__time_duration.sum", "no_such__metric.sum", NULL};
  g_autoptr(GHashTable) values = NULL;
  g_clear_error(&error);
  g_assert_false(ts_backend_collect_metrics_with(b, bogus, run_once, &run, &values, NULL, &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "no_such__metric.sum"));
  ts_test_remove_tree(cache);
}

/* A profiled run's timeline holds the device's own copies and memsets (CUPTI records). */
static void
test_gpu_timeline(void)
{
  g_autoptr(TsBackend) b = gpu_or_skip();
  if (b == NULL)
    return;
  g_autofree char *cache = g_dir_make_tmp("ts-test-prof-metrics-XXXXXX", NULL);
  ts_backend_set_cache_dir(b, cache);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", "M=256,N=1024", "f32", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsTrace) trace = ts_trace_new();
  ts_backend_set_trace(b, trace);
  TsRunOptions opt;
  ts_run_options_init(&opt);
  g_autoptr(TsTrialResult) r = ts_op_run(inst, b, point, &opt, &error);
  ts_backend_set_trace(b, NULL);
  g_assert_no_error(error);
  g_assert_cmpint(r->status, ==, TS_TRIAL_OK);
  guint n = 0, copies = 0, sets = 0, allocs = 0;
  const TsTraceEvent *ev = ts_trace_events(trace, &n);
  for (guint i = 0; i < n; i++) {
    if (ev[i].lane < TS_TRACE_DEVICE_LANE || g_strcmp0(ev[i].detail, "CUPTI") != 0)
      continue;
    copies += ev[i].kind == TS_TRACE_MEMCPY;
    sets += ev[i].kind == TS_TRACE_MEMSET;
    allocs += ev[i].kind == TS_TRACE_ALLOC;
  }
  g_test_message("device records: %u copies, %u memsets, %u allocations", copies, sets, allocs);
  if (copies + sets + allocs == 0) {
    /* CUPTI itself may be unusable here (another profiler holds it); the kernel times then
     * come from events, and the test says so rather than failing on the machine. */
    g_test_skip("no CUPTI device records (is another profiler attached?)");
  } else {
    g_assert_cmpuint(copies, >=, 3); /* the inputs' uploads */
    g_assert_cmpuint(sets, >=, 1);   /* the L2 flush before each timed launch */
    g_assert_cmpuint(allocs, >=, 3);
  }
  ts_test_remove_tree(cache);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/prof-metrics/catalog", test_catalog);
  g_test_add_func("/prof-metrics/values/all-counters", test_all_counters);
  g_test_add_func("/prof-metrics/values/split-destinations", test_split_destinations);
  g_test_add_func("/prof-metrics/values/derived-tensor", test_derived_tensor);
  g_test_add_func("/prof-metrics/op-tensor-dtype", test_op_tensor_dtype);
  g_test_add_func("/prof-metrics/json", test_json);
  g_test_add_func("/prof-metrics/json-round-trip", test_json_round_trip);
  g_test_add_func("/prof-metrics/permission-text", test_permission_text);
  g_test_add_func("/prof-metrics/cpu-backend", test_cpu_backend);
  g_test_add_func("/prof-metrics/device-memory-account", test_device_memory_account);
  g_test_add_func("/prof-metrics/chip-per-arch", test_chip_per_arch);
  g_test_add_func("/prof-metrics/cupti-host/chips", test_plan_chips);
  g_test_add_func("/prof-metrics/cupti-host/errors", test_plan_errors);
  g_test_add_func("/prof-metrics/gpu/metrics", test_gpu_metrics);
  g_test_add_func("/prof-metrics/gpu/timeline", test_gpu_timeline);
  return g_test_run();
}
