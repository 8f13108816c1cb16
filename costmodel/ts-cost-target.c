/* ts-cost-target.c — a workload on a device as the cost model sees it, and the roofs it is held
 * to: measured ceilings when the device row has them, nominal figures otherwise. */
#include "ts-cost-private.h"

#include <math.h>
#include <string.h>

/* Nominal GPU figures per arch family, used only when no ceilings were measured: the clock and
 * per-SM throughput of the usual part of each family (datasheet dense rates divided by SMs and
 * boost clock: H100 SXM 989 TFLOP/s bf16 = 132 SMs x 1.83 GHz x 4096). */
typedef struct {
  const char *arch;      /* prefix of the device's arch ("sm_90") */
  double ghz;
  double tensor16;       /* dense bf16/f16 tensor FLOP per clock per SM */
  double fma32;          /* f32 FLOP per clock per SM (FMA = 2) */
  double dram_gbs;
  double l2_over_dram;   /* L2 bandwidth as a multiple of DRAM's */
} GpuNominal;

static const GpuNominal gpu_nominal[] = {
  {"sm_100", 1.86, 8192, 256, 8000, 3.0}, {"sm_120", 2.4, 1024, 256, 1790, 3.0},
  {"sm_90", 1.83, 4096, 256, 3350, 3.5},  {"sm_89", 2.5, 1024, 256, 864, 4.0},
  {"sm_86", 1.7, 512, 256, 760, 4.0},     {"sm_80", 1.41, 2048, 128, 1935, 2.5},
};

static const GpuNominal *
gpu_family(const char *arch)
{
  for (guint i = 0; i < G_N_ELEMENTS(gpu_nominal); i++)
    if (arch && g_str_has_prefix(arch, gpu_nominal[i].arch))
      return &gpu_nominal[i];
  return &gpu_nominal[G_N_ELEMENTS(gpu_nominal) - 1]; /* the oldest arch we emit for */
}

/* A core of a current x86 server at 3 GHz: two FMA ports of vector_bits, two loads a clock
 * from L1, one 32-byte line a clock from L2; one socket's DRAM at 20 GB/s. */
static double
cpu_nominal(const TsDeviceInfo *d, const char *name, gboolean per_core)
{
  const double ghz = 3.0, lanes32 = MAX(d->vector_bits, 128) / 32.0;
  const double cores = MAX(d->compute_units, 1);
  double core, whole;
  if (strcmp(name, "f64") == 0)
    core = lanes32 / 2 * 2 * 2 * ghz * 1e9;
  else if (strcmp(name, "l1") == 0)
    core = 2 * lanes32 * 4 * ghz * 1e9;
  else if (strcmp(name, "l2") == 0)
    core = 32 * ghz * 1e9;
  else if (strcmp(name, "l3") == 0)
    core = 16 * ghz * 1e9;
  else if (strcmp(name, "dram") == 0)
    return per_core ? 10e9 : 20e9;
  /* ts_cpu_prims.h's vector exp, in exps a second: the time of 72 FLOPs of f32 FMAs (on the
   * Zen 1 VM, 0.56 G exps/s a core against 40.2 GFLOP/s). exp_fast is given no gain: it
   * measured slower there (0.49 G/s) and 0.65 of exp's time on Zen 4. */
  else if (strcmp(name, "exp") == 0 || strcmp(name, "exp_fast") == 0)
    core = lanes32 * 2 * 2 * ghz * 1e9 / 72;
  else /* f32 and every other compute roof: the CPU converts narrow dtypes to f32 */
    core = lanes32 * 2 * 2 * ghz * 1e9;
  whole = core * cores;
  if (strcmp(name, "l3") == 0)
    whole = MIN(whole, 100e9);
  return per_core ? core : whole;
}

static double
gpu_nominal_roof(const TsDeviceInfo *d, const char *name)
{
  const GpuNominal *f = gpu_family(d->arch);
  const double sms = MAX(d->compute_units, 1), clk = f->ghz * 1e9;
  if (strcmp(name, "dram") == 0)
    return f->dram_gbs * 1e9;
  if (strcmp(name, "l2") == 0 || strcmp(name, "l3") == 0 || strcmp(name, "l1") == 0)
    return f->dram_gbs * 1e9 * f->l2_over_dram * (strcmp(name, "l1") == 0 ? 4 : 1);
  if (strcmp(name, "bf16_tensor") == 0 || strcmp(name, "f16_tensor") == 0)
    return sms * clk * f->tensor16;
  if (strcmp(name, "tf32_tensor") == 0)
    return sms * clk * f->tensor16 / 2;
  if (strcmp(name, "fp8_tensor") == 0)
    return sms * clk * f->tensor16 * 2;
  if (strcmp(name, "f64") == 0)
    return sms * clk * f->fma32 / 32; /* consumer parts; data-centre f64 is not tuned here */
  return sms * clk * f->fma32;
}

double
ts__cost_roof(const TsCostTarget *t, const char *name, gboolean per_core, gboolean *measured)
{
  const TsProfCeiling *c = t->ceilings ? ts_prof_ceilings_get(t->ceilings, name) : NULL;
  if (c != NULL && c->value > 0 && (!per_core || c->per_core > 0)) {
    if (measured)
      *measured = TRUE;
    return (per_core ? c->per_core : c->value) * 1e9;
  }
  if (measured)
    *measured = FALSE;
  if (t->gpu)
    return gpu_nominal_roof(&t->device, name) / (per_core ? MAX(t->device.compute_units, 1) : 1);
  return cpu_nominal(&t->device, name, per_core);
}

static void
copy_device(TsDeviceInfo *to, const TsDeviceInfo *from)
{
  *to = *from;
  to->backend = g_strdup(from->backend);
  to->name = g_strdup(from->name);
  to->arch = g_strdup(from->arch);
  to->toolchain = g_strdup(from->toolchain);
}

static void
init_names(TsCostTarget *t)
{
  t->n_derived = ts__cost_n_derived();
  t->names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < t->n_derived; i++)
    g_ptr_array_add(t->names, g_strdup(ts__cost_derived_names[i]));
  for (guint i = 0; i < t->knobs->len; i++)
    g_ptr_array_add(t->names, g_strconcat("knob.", (char *)t->knobs->pdata[i], NULL));
  g_ptr_array_add(t->names, NULL);
}

static void
add_knobs(TsCostTarget *t, const TsSchedSpace *space)
{
  t->space = space ? ts_sched_space_copy(space) : NULL;
  for (guint i = 0; space && i < ts_sched_space_n_knobs(space); i++)
    g_ptr_array_add(t->knobs, g_strdup(ts_sched_space_knob_name(space, i)));
}

TsCostTarget *
ts_cost_target_new(const TsOpInstance *inst, const char *backend, const TsDeviceInfo *device,
                   const TsProfCeilings *ceilings)
{
  g_return_val_if_fail(inst != NULL && device != NULL, NULL);
  TsCostTarget *t = g_new0(TsCostTarget, 1);
  t->inst = inst;
  const TsOpDef *op = ts_op_instance_op(inst);
  /* A kernel file run by a built-in's templates does the built-in's work. */
  t->op = g_strdup(ts_op_kernel_template(op) ? ts_op_kernel_template(op) : ts_op_name(op));
  t->gpu = g_strcmp0(backend, "cuda") == 0;
  copy_device(&t->device, device);
  if (ceilings) {
    t->ceilings = ts_prof_ceilings_new(ts_prof_ceilings_backend(ceilings),
                                       ts_prof_ceilings_toolchain(ceilings));
    for (guint i = 0; i < ts_prof_ceilings_count(ceilings); i++) {
      const TsProfCeiling *c = ts_prof_ceilings_nth(ceilings, i);
      ts_prof_ceilings_set(t->ceilings, c->name, c->kind, c->value, c->per_core);
    }
  }
  const TsDtypePolicy *dt = ts_op_instance_dtype(inst);
  t->elem_bytes = MAX(ts_dtype_bits(dt->storage) / 8, 1);
  /* On a CPU the model scales the FMA roof by each point's engine (gemm_cpu's dot), so it
   * keeps the FMA roof even where the roofline holds a bf16 GEMM to the AMX one. */
  t->compute_roof = t->gpu ? ts_prof_compute_roof("cuda", ts_dtype_name(dt->storage),
                                                  ts_op_tensor_math(op))
                           : ts_prof_compute_roof("cpu", ts_dtype_name(dt->storage), FALSE);
  g_autofree char *what = ts_op_instance_describe(inst);
  t->label = g_strdup_printf("%s @ %s:%s", what, t->gpu ? "cuda" : "cpu",
                             device->name ? device->name : "?");
  t->knobs = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, t->gpu ? "cuda" : "cpu", NULL, NULL);
  add_knobs(t, space);
  init_names(t);
  return t;
}

TsCostTarget *
ts_cost_target_new_generic(const TsSchedSpace *space, const char *device_name)
{
  TsCostTarget *t = g_new0(TsCostTarget, 1);
  t->device.name = g_strdup(device_name);
  t->label = g_strdup_printf("recorded space @ %s", device_name ? device_name : "?");
  t->elem_bytes = 4;
  t->compute_roof = "f32";
  t->knobs = g_ptr_array_new_with_free_func(g_free);
  add_knobs(t, space);
  init_names(t);
  return t;
}

void
ts_cost_target_free(TsCostTarget *t)
{
  if (t == NULL)
    return;
  g_free(t->op);
  g_free(t->device.backend);
  g_free(t->device.name);
  g_free(t->device.arch);
  g_free(t->device.toolchain);
  ts_prof_ceilings_free(t->ceilings);
  g_free(t->label);
  g_ptr_array_unref(t->knobs);
  ts_sched_space_free(t->space);
  g_ptr_array_unref(t->names);
  g_free(t);
}

const TsOpInstance *
ts_cost_target_op(const TsCostTarget *t)
{
  return t->inst;
}

const char *
ts_cost_target_label(const TsCostTarget *t)
{
  return t->label;
}

guint
ts_cost_n_features(const TsCostTarget *t)
{
  return t->names->len - 1;
}

const char *const *
ts_cost_feature_names(const TsCostTarget *t)
{
  return (const char *const *)t->names->pdata;
}
