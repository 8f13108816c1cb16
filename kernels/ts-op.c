/* ts-op.c — the op catalog and workloads: validation of op/shape/dtype, the Graph IR of a
 * workload, its schedule spaces and points, and lowering to target source. */
#include "ts-op-private.h"

#include "ts-cuda.h"
#include "ts-emit.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK(ts-op-error-quark, ts_op_error)

static const TsOpDef *const catalog[] = {
  &ts__op_gemm,
  &ts__op_saxpy,
  &ts__op_reduce_sum,
  &ts__op_softmax_safe,
  &ts__op_layernorm_safe,
  &ts__op_rmsnorm_safe,
  &ts__op_flash_attention,
  &ts__op_flash_attention_causal,
  &ts__op_test_fault,
};

static gboolean
visible(const TsOpDef *op)
{
  return !op->hidden || g_strcmp0(g_getenv("TESSERA_TEST_OPS"), "1") == 0;
}

/* Hidden (test) ops come last in the catalog, so counting visible ones is enough. */
guint
ts_op_count(void)
{
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS(catalog); i++)
    n += visible(catalog[i]);
  return n;
}

const TsOpDef *
ts_op_nth(guint i)
{
  return i < ts_op_count() ? catalog[i] : NULL;
}

/* Ops registered at run time (kernel files); never freed: instances point at them. */
static GPtrArray *registered;
G_LOCK_DEFINE_STATIC(registered);

const TsOpDef *
ts_op_lookup(const char *name)
{
  for (guint i = 0; i < G_N_ELEMENTS(catalog); i++)
    if (g_strcmp0(catalog[i]->name, name) == 0 && visible(catalog[i]))
      return catalog[i];
  const TsOpDef *found = NULL;
  G_LOCK(registered);
  for (guint i = 0; registered && i < registered->len && !found; i++)
    if (g_strcmp0(((const TsOpDef *)g_ptr_array_index(registered, i))->name, name) == 0)
      found = g_ptr_array_index(registered, i);
  G_UNLOCK(registered);
  return found;
}

gboolean
ts__op_register(const TsOpDef *op)
{
  if (ts_op_lookup(op->name) != NULL)
    return FALSE;
  G_LOCK(registered);
  if (registered == NULL)
    registered = g_ptr_array_new();
  g_ptr_array_add(registered, (gpointer)op);
  G_UNLOCK(registered);
  return TRUE;
}

const char *
ts_op_name(const TsOpDef *op)
{
  return op->name;
}

const char *
ts_op_summary(const TsOpDef *op)
{
  return op->summary;
}

gboolean
ts_op_tensor_math(const TsOpDef *op)
{
  return op->tensor_math;
}

const char *
ts_op_default_space(const TsOpDef *op, const char *backend)
{
  if (g_strcmp0(backend, "cpu") == 0)
    return op->cpu_space;
  if (g_strcmp0(backend, "cuda") == 0)
    return op->cuda_space;
  return NULL;
}

const char *
ts_op_default_point(const TsOpDef *op, const char *backend)
{
  if (g_strcmp0(backend, "cpu") == 0)
    return op->cpu_default;
  if (g_strcmp0(backend, "cuda") == 0)
    return op->cuda_default;
  return NULL;
}

const char *
ts_op_fp8_default_point(const TsOpDef *op, const char *backend)
{
  return g_strcmp0(backend, "cuda") == 0 ? op->fp8_cuda_default : NULL;
}


char *
ts_op_dims(const TsOpDef *op)
{
  return g_strdup(op->dim_names ? op->dim_names : op->dims);
}

/* A kernel file's spellings of the dims (D_h for the template's D) bound to the op's names;
 * the op's own names are taken too (a cache's stored shape has them). */
static TsShape *
canonical_shape(const TsOpDef *op, TsShape *shape, GError **error)
{
  if (op->dim_names == NULL)
    return shape;
  g_auto(GStrv) user = g_strsplit(op->dim_names, ",", -1);
  g_auto(GStrv) dims = g_strsplit(op->dims, ",", -1);
  g_autoptr(TsShape) out = ts_shape_new();
  g_autoptr(TsShape) in = shape;
  /* In the op's order, as a built-in op's shapes are written, so one workload is one key. */
  for (guint d = 0; user[d] && dims[d]; d++) {
    gint64 a = -1, b = -1;
    gboolean has_user = ts_shape_lookup(in, user[d], &a);
    /* The op's own name, unless the kernel spells another dim so. */
    gboolean has_own = !g_strv_contains((const char *const *)user, dims[d]) &&
                       ts_shape_lookup(in, dims[d], &b);
    if (has_user && has_own) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                  "%s: --shape gives dim %s twice, as %s and as %s", op->name, dims[d], user[d],
                  dims[d]);
      return NULL;
    }
    if ((has_user || has_own) && !ts_shape_bind(out, dims[d], has_user ? a : b, "--shape", error))
      return NULL;
  }
  /* Any other dim stays, for check_dims to name. */
  for (guint i = 0; i < ts_shape_n_dims(in); i++) {
    const char *name = ts_shape_dim_name(in, i);
    if (!g_strv_contains((const char *const *)user, name) &&
        !g_strv_contains((const char *const *)dims, name) &&
        !ts_shape_bind(out, name, ts_shape_dim_size(in, i), "--shape", error))
      return NULL;
  }
  return g_steal_pointer(&out);
}

static char *
known_ops(void)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < ts_op_count(); i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", catalog[i]->name);
  return g_string_free(s, FALSE);
}

static TsTensorType *
arg_type(const TsOpArg *arg, const char *sig, const TsDtypePolicy *dtype, GError **error)
{
  g_autofree char *dt = ts_dtype_policy_to_string(dtype);
  g_autofree char *text = g_strdup_printf("Tensor[%s, %s]", sig ? sig : arg->sig, dt);
  return ts_tensor_type_parse(text, error);
}

static gboolean
check_dtype(const TsOpDef *op, const TsDtypePolicy *dt, GError **error)
{
  if (ts_dtype_is_fp8(dt->storage) && !op->fp8) {
    g_autoptr(GString) fp8_ops = g_string_new(NULL);
    for (guint i = 0; i < ts_op_count(); i++)
      if (catalog[i]->fp8 && !catalog[i]->hidden)
        g_string_append_printf(fp8_ops, "%s%s", fp8_ops->len ? ", " : "", catalog[i]->name);
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "%s: dtype %s is not supported (supported: f32, bf16, f16; fp8 inputs are taken "
                "by %s)", op->name, ts_dtype_name(dt->storage), fp8_ops->str);
    return FALSE;
  }
  if (dt->storage != TS_DTYPE_F32 && dt->storage != TS_DTYPE_BF16 &&
      dt->storage != TS_DTYPE_F16 && !ts_dtype_is_fp8(dt->storage)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "%s: dtype %s is not supported (supported: f32, bf16, f16%s)", op->name,
                ts_dtype_name(dt->storage), op->fp8 ? ", fp8_e4m3, fp8_e5m2" : "");
    return FALSE;
  }
  if (dt->accum != TS_DTYPE_INVALID && dt->accum != TS_DTYPE_F32) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "%s: @accum(%s) is not supported; kernels accumulate in f32 (@accum(f32))",
                op->name, ts_dtype_name(dt->accum));
    return FALSE;
  }
  const char *unsupported = dt->loss_scale != 0.0 ? "@loss_scale"
                            : dt->stochastic_round ? "@stochastic_round"
                            : dt->saturate         ? "@saturate"
                                                   : NULL;
  if (unsupported) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "%s: policy %s is not supported by its kernels yet (supported: @accum(f32))",
                op->name, unsupported);
    return FALSE;
  }
  return TRUE;
}

static gboolean
check_dims(const TsOpDef *op, const TsShape *shape, GError **error)
{
  g_auto(GStrv) dims = g_strsplit(op->dims, ",", -1);
  g_auto(GStrv) user = op->dim_names ? g_strsplit(op->dim_names, ",", -1) : NULL;
  const char *user_dims = op->dim_names ? op->dim_names : op->dims;
  for (guint i = 0; dims[i]; i++)
    if (ts_shape_get(shape, dims[i]) < 0) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                  "%s: --shape lacks dim '%s' (the op needs %s, e.g. %s=1024)", op->name,
                  user ? user[i] : dims[i], user_dims, user ? user[i] : dims[i]);
      return FALSE;
    }
  for (guint i = 0; i < ts_shape_n_dims(shape); i++) {
    const char *name = ts_shape_dim_name(shape, i);
    if (!g_strv_contains((const char *const *)dims, name)) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                  "%s: --shape has dim '%s' the op does not use (its dims are %s)", op->name,
                  name, user_dims);
      return FALSE;
    }
    /* Buffers are indexed with int64 products; 2^31 per dim keeps M*K far from overflow. */
    if (ts_shape_dim_size(shape, i) > G_MAXINT32) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                  "%s: dim %s=%" G_GINT64_FORMAT " is too large (at most %d)", op->name, name,
                  ts_shape_dim_size(shape, i), G_MAXINT32);
      return FALSE;
    }
  }
  return TRUE;
}

static gint64
type_numel(const TsTensorType *type, const TsShape *shape)
{
  gint64 n = 1;
  for (guint d = 0; d < type->rank; d++) {
    gint64 s = ts_dim_resolve(&type->dims[d], shape);
    if (s < 0 || __builtin_mul_overflow(n, s, &n))
      return -1;
  }
  return n;
}

TsOpInstance *
ts_op_instance_new(const char *op_name, const char *shape_text, const char *dtype_text,
                   GError **error)
{
  const TsOpDef *op = ts_op_lookup(op_name);
  if (op == NULL) {
    g_autofree char *known = known_ops();
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP, "unknown op '%s' (known ops: %s)",
                op_name, known);
    return NULL;
  }
  g_autoptr(TsShape) shape = ts_shape_parse(shape_text, error);
  if (shape == NULL) {
    g_prefix_error(error, "%s: --shape: ", op->name);
    return NULL;
  }
  if ((shape = canonical_shape(op, g_steal_pointer(&shape), error)) == NULL)
    return NULL;
  TsDtypePolicy dt;
  if (!ts_dtype_policy_parse(dtype_text, &dt, error)) {
    g_prefix_error(error, "%s: --dtype: ", op->name);
    return NULL;
  }
  if (!check_dtype(op, &dt, error) || !check_dims(op, shape, error))
    return NULL;
  if (op->only_dtype && g_strcmp0(op->only_dtype, ts_dtype_name(dt.storage)) != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "%s: the kernel declares %s tensors, so --dtype %s does not fit it", op->name,
                op->only_dtype, ts_dtype_name(dt.storage));
    return NULL;
  }

  /* Shape inference through the op's signature: binds every dim and types the output. */
  g_autoptr(GPtrArray) sigs = g_ptr_array_new_with_free_func((GDestroyNotify)ts_tensor_type_free);
  const char *names[TS_OP_MAX_ARGS];
  for (guint i = 0; i < op->n_inputs; i++) {
    TsTensorType *t =
      arg_type(&op->inputs[i], ts_dtype_is_fp8(dt.storage) ? op->fp8_sigs[i] : NULL, &dt, error);
    if (t == NULL)
      return NULL;
    g_ptr_array_add(sigs, t);
    names[i] = op->inputs[i].name;
  }
  /* fp8 inputs write bf16, as cuBLASLt's and Transformer Engine's fp8 GEMMs do: a product of
   * two fp8 operands needs more range and precision than fp8 has. */
  TsDtypePolicy out_dt = dt;
  if (ts_dtype_is_fp8(dt.storage))
    out_dt = (TsDtypePolicy){.storage = TS_DTYPE_BF16, .accum = TS_DTYPE_F32};
  g_autoptr(TsTensorType) out_sig = arg_type(&op->output, NULL, &out_dt, error);
  if (out_sig == NULL)
    return NULL;
  g_autoptr(TsTensorType) out_type =
    ts_ir_infer((const TsTensorType *const *)sigs->pdata, (const TsTensorType *const *)sigs->pdata,
                names, op->n_inputs, out_sig, shape, error);
  if (out_type == NULL)
    return NULL;
  out_type->dtype = out_dt; /* inference takes the inputs' dtype; fp8 inputs write bf16 */

  TsOpInstance *inst = g_new0(TsOpInstance, 1);
  inst->op = op;
  inst->reference_limit = TS_OP_FULL_REFERENCE_WORK;
  inst->shape = g_steal_pointer(&shape);
  inst->dtype = dt;
  inst->graph = ts_graph_new(op->name);
  for (guint i = 0; i < op->n_inputs; i++) {
    ts_graph_add_input(inst->graph, names[i], g_ptr_array_index(sigs, i));
    inst->numel[i] = type_numel(g_ptr_array_index(sigs, i), inst->shape);
  }
  inst->numel[op->n_inputs] = type_numel(out_type, inst->shape);
  inst->out_dtype = out_dt.storage;
  for (guint i = 0; i < op->n_floats; i++) {
    inst->float_names[inst->n_floats] = g_strdup(op->float_names[i]);
    inst->float_values[inst->n_floats++] = op->float_values[i];
  }
  /* Per-tensor scales as a quantizing cast picks them: the input's largest magnitude maps to
   * the format's largest finite value (448 for e4m3, 57344 for e5m2), so the stored values
   * span the format and the scale is no power of two a kernel could get right by accident. */
  if (ts_dtype_is_fp8(dt.storage)) {
    const double fp8_max = dt.storage == TS_DTYPE_FP8_E4M3 ? 448.0 : 57344.0;
    for (guint i = 0; i < op->n_inputs; i++) {
      g_autofree char *lower = g_ascii_strdown(op->inputs[i].name, -1);
      inst->float_names[inst->n_floats] = g_strconcat("scale_", lower, NULL);
      inst->float_values[inst->n_floats++] =
        MAX(fabs(op->inputs[i].lo), fabs(op->inputs[i].hi)) / fp8_max;
    }
  }
  g_autoptr(GString) attrs = g_string_new(NULL);
  for (guint i = 0; i < inst->n_floats; i++)
    g_string_append_printf(attrs, "%s%s=%g", i ? ", " : "", inst->float_names[i],
                           inst->float_values[i]);
  ts_graph_add_node(inst->graph, op->name, names, op->n_inputs, op->output.name, out_type,
                    attrs->len ? attrs->str : NULL);
  return inst;
}

void
ts_op_instance_free(TsOpInstance *inst)
{
  if (inst == NULL)
    return;
  ts_shape_free(inst->shape);
  ts_graph_free(inst->graph);
  for (guint i = 0; i < TS_OP_MAX_ARGS; i++)
    g_free(inst->inputs[i]);
  g_free(inst->ref);
  g_free(inst->verification);
  for (guint i = 0; i < inst->n_floats; i++)
    g_free(inst->float_names[i]);
  g_free(inst);
}

void
ts_op_instance_set_reference_limit(TsOpInstance *inst, double work)
{
  g_return_if_fail(inst != NULL);
  g_return_if_fail(work >= 0);
  if (work != inst->reference_limit)
    inst->have_data = FALSE; /* the reference is computed again, to the new limit */
  inst->reference_limit = work;
}

guint32
ts__op_data_hash(const void *data, gsize bytes)
{
  const guint8 *b = data;
  guint32 h = 2166136261u;
  for (gsize i = 0; i < MIN(bytes, 4096); i++)
    h = (h ^ b[i]) * 16777619u;
  return h;
}

const TsOpDef *
ts_op_instance_op(const TsOpInstance *inst)
{
  return inst->op;
}

const TsShape *
ts_op_instance_shape(const TsOpInstance *inst)
{
  return inst->shape;
}

const TsDtypePolicy *
ts_op_instance_dtype(const TsOpInstance *inst)
{
  return &inst->dtype;
}

gint64
ts__op_instance_numel(const TsOpInstance *inst, guint arg)
{
  g_assert(arg <= inst->op->n_inputs);
  return inst->numel[arg];
}

double
ts__op_instance_float(const TsOpInstance *inst, guint i)
{
  g_assert(i < inst->n_floats);
  return inst->float_values[i];
}

double
ts__op_instance_input_scale(const TsOpInstance *inst, guint input)
{
  g_assert(input < inst->op->n_inputs);
  return ts_dtype_is_fp8(inst->dtype.storage) ? inst->float_values[inst->op->n_floats + input] : 1.0;
}

TsDtype
ts_op_instance_out_dtype(const TsOpInstance *inst)
{
  return inst->out_dtype;
}

char *
ts_op_instance_describe(const TsOpInstance *inst)
{
  g_autofree char *shape = ts_shape_to_string(inst->shape);
  g_autofree char *dt = ts_dtype_policy_to_string(&inst->dtype);
  return g_strdup_printf("%s %s %s", inst->op->name, shape, dt);
}

double
ts_op_instance_flops(const TsOpInstance *inst)
{
  return inst->op->inst_flops ? inst->op->inst_flops(inst) : inst->op->flops(inst->shape);
}

double
ts_op_instance_bytes(const TsOpInstance *inst)
{
  /* The op counts every buffer at the inputs' width; an output of another width (bf16 from
   * fp8) is corrected by its own size. */
  const double in = ts_dtype_bits(inst->dtype.storage) / 8.0;
  const double out = ts_dtype_bits(inst->out_dtype) / 8.0;
  if (inst->op->bytes == NULL) { /* every buffer read or written once */
    double sum = 0;
    for (guint i = 0; i < inst->op->n_inputs; i++)
      sum += in * (double)inst->numel[i];
    return sum + out * (double)inst->numel[inst->op->n_inputs];
  }
  return inst->op->bytes(inst->shape, in) + (out - in) * (double)inst->numel[inst->op->n_inputs];
}

gboolean
ts_op_instance_row_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda,
                        TsOpRowWork *work)
{
  *work = (TsOpRowWork){0};
  return inst->op->row_work && inst->op->row_work(inst, point, cuda, work);
}

TsSchedEnv *
ts_op_instance_env(const TsOpInstance *inst, const TsDeviceInfo *device)
{
  TsSchedEnv *env = ts_sched_env_new();
  for (guint i = 0; i < ts_shape_n_dims(inst->shape); i++)
    ts_sched_env_set(env, ts_shape_dim_name(inst->shape, i), ts_shape_dim_size(inst->shape, i));
  ts_sched_env_set(env, "elem_bytes", ts_dtype_bits(inst->dtype.storage) / 8);
  if (device) {
    ts_sched_env_set(env, "cores", device->compute_units);
    ts_sched_env_set(env, "l1_bytes", (gint64)device->l1_bytes);
    ts_sched_env_set(env, "l2_bytes", (gint64)device->l2_bytes);
    ts_sched_env_set(env, "smem_bytes", (gint64)device->smem_per_block);
    /* Warpgroup mma exists only in the arch-specific sm_90a target: the space prunes wgmma
     * points elsewhere by constraint instead of leaving them to fail in the compiler. */
    const TsCudaArch *arch = g_strcmp0(device->backend, "cuda") == 0 && device->arch
                               ? ts_cuda_arch_lookup(device->arch)
                               : NULL;
    ts_sched_env_set(env, "has_wgmma", arch && arch->wgmma);
    /* A persistent kernel's CTAs: at most one per SM (0 off the GPU). An arch without a
     * device (`tessera-tune check` compiling for sm_90a) counts an H100 SXM's 132, as below. */
    ts_sched_env_set(env, "gpu_sms", !arch                        ? 0
                                     : device->compute_units > 0 ? (gint64)device->compute_units
                                                                 : 132);
    /* The CPU's SIMD: floats per register and how many registers a micro-kernel may fill
     * (AVX-512 and AArch64 have 32; SSE and AVX2 16). */
    ts_sched_env_set(env, "simd_floats", MAX(device->vector_bits / 32, 4));
    gboolean wide_file = device->vector_bits >= 512 ||
                         (device->arch && g_str_has_prefix(device->arch, "aarch64"));
    ts_sched_env_set(env, "vector_registers", wide_file ? 32 : 16);
    /* bf16 operands multiplied in pairs by vdpbf16ps (gemm's dot("bf16")). */
    ts_sched_env_set(env, "bf16_dot", inst->dtype.storage == TS_DTYPE_BF16 && device->arch &&
                                          strstr(device->arch, "+avx512bf16") != NULL);
    /* ... and by AMX tiles, where the CPU has them and the kernel hands out their state. */
    ts_sched_env_set(env, "amx_bf16", inst->dtype.storage == TS_DTYPE_BF16 && device->arch &&
                                          strstr(device->arch, "+amxbf16") != NULL);
  } else {
    /* No device to ask (lowering for inspection, completing a user's point): the GPU we
     * target first, sm_90a — its 227 KiB of opt-in shared memory and its wgmma. The device's
     * own limits apply when the point runs. */
    const TsCudaArch *arch = ts_cuda_arch_lookup("sm_90a");
    ts_sched_env_set(env, "smem_bytes", arch->smem_per_block);
    ts_sched_env_set(env, "has_wgmma", arch->wgmma);
    /* ... with the SMs of the first such GPU, an H100 SXM (the device's count applies when the
     * point runs; a persistent kernel strides by its grid, so any count is correct). */
    ts_sched_env_set(env, "gpu_sms", 132);
    /* And the widest CPU SIMD we generate for, AVX-512's. */
    ts_sched_env_set(env, "simd_floats", 16);
    ts_sched_env_set(env, "vector_registers", 32);
    ts_sched_env_set(env, "bf16_dot", inst->dtype.storage == TS_DTYPE_BF16);
    ts_sched_env_set(env, "amx_bf16", inst->dtype.storage == TS_DTYPE_BF16);
  }
  return env;
}

/* The op's default point, or on CUDA for fp8 inputs its fp8 one (the default mma.sync point
 * has no fp8 form). */
static const char *
instance_default_point(const TsOpInstance *inst, const char *backend)
{
  if (ts_dtype_is_fp8(inst->dtype.storage) && g_strcmp0(backend, "cuda") == 0 &&
      inst->op->fp8_cuda_default)
    return inst->op->fp8_cuda_default;
  return ts_op_default_point(inst->op, backend);
}

static const char *
space_for(const TsOpDef *op, const char *backend, GError **error)
{
  const char *text = ts_op_default_space(op, backend);
  const char *why = g_strcmp0(backend, "cpu") == 0    ? op->cpu_why
                    : g_strcmp0(backend, "cuda") == 0 ? op->cuda_why
                                                      : NULL;
  if (text == NULL && why != NULL)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_TARGET, "%s: no kernels for the %s backend: %s",
                op->name, backend, why);
  else if (text == NULL)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_TARGET, "%s: no kernels for the %s backend yet",
                op->name, backend);
  return text;
}

TsSchedSpace *
ts_op_instance_space(const TsOpInstance *inst, const char *backend, const char *space_text,
                     GError **error)
{
  const char *def = space_for(inst->op, backend, error);
  if (def == NULL)
    return NULL;
  g_autoptr(TsSchedSpace) base = ts_sched_space_parse(def, error);
  g_assert(base != NULL); /* the catalog's own spaces are tested */
  if (space_text == NULL)
    return g_steal_pointer(&base);
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(space_text, error);
  if (space == NULL)
    return NULL;
  /* A user's space may leave knobs out: they keep the default point's value. */
  g_autoptr(TsSchedPoint) defaults = ts_sched_point_parse(instance_default_point(inst, backend), NULL);
  for (guint i = 0; i < ts_sched_space_n_knobs(space); i++) {
    const char *name = ts_sched_space_knob_name(space, i);
    if (ts_sched_space_knob_index(base, name) < 0) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                  "%s: the space has knob '%s', which %s kernels do not use", inst->op->name,
                  name, backend);
      return NULL;
    }
  }
  for (guint i = 0; i < ts_sched_point_n_knobs(defaults); i++) {
    const char *name = ts_sched_point_knob_name(defaults, i);
    if (ts_sched_space_knob_index(space, name) < 0) {
      TsSchedValue v = ts_sched_point_knob_value(defaults, i);
      ts_sched_space_set_knob(space, name, &v, 1);
    }
  }
  for (guint i = 0; i < ts_sched_space_n_constraints(base); i++) {
    g_autofree char *c = ts_sched_space_constraint_to_string(base, i);
    if (!ts_sched_space_add_constraint(space, c, error))
      return NULL;
  }
  return g_steal_pointer(&space);
}

TsSchedPoint *
ts_op_instance_complete_point(const TsOpInstance *inst, const char *backend,
                              const TsSchedPoint *point, GError **error)
{
  const char *def = space_for(inst->op, backend, error);
  if (def == NULL)
    return NULL;
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(def, error);
  g_autoptr(TsSchedPoint) full = ts_sched_point_parse(instance_default_point(inst, backend), error);
  g_assert(space != NULL && full != NULL);
  for (guint i = 0; point && i < ts_sched_point_n_knobs(point); i++) {
    const char *name = ts_sched_point_knob_name(point, i);
    TsSchedValue v = ts_sched_point_knob_value(point, i);
    if (ts_sched_space_knob_index(space, name) < 0) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                  "%s: schedule knob '%s' is not used by %s kernels", inst->op->name, name,
                  backend);
      return NULL;
    }
    if (v.kind == TS_SCHED_STR)
      ts_sched_point_set_str(full, name, v.s);
    else
      ts_sched_point_set_int(full, name, v.i);
  }
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, NULL);
  g_autofree char *pt = ts_sched_point_to_string(full);
  for (guint c = 0; c < ts_sched_space_n_constraints(space); c++) {
    /* Each constraint alone, as a one-point space, so the message names the one that fails. */
    g_autofree char *text = ts_sched_space_constraint_to_string(space, c);
    g_autofree char *probe_text = g_strdup_printf("%s.where(%s)", pt, text);
    g_autoptr(TsSchedSpace) probe = ts_sched_space_parse(probe_text, error);
    gboolean valid = FALSE;
    if (probe == NULL || !ts_sched_space_check(probe, env, full, &valid, error))
      return NULL;
    if (!valid) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                  "%s: schedule %s violates the constraint '%s'", inst->op->name, pt, text);
      return NULL;
    }
  }
  return g_steal_pointer(&full);
}

char *
ts_op_instance_prune_reason(const TsOpInstance *inst, const TsSchedPoint *point,
                            const TsDeviceInfo *device)
{
  /* GPU points are judged by the space's constraints (shared memory, threads) and the
   * compiler's resource report, not by these CPU rules. */
  if (device == NULL || g_strcmp0(device->backend, "cpu") != 0)
    return NULL;
  gint64 v = ts_sched_point_get_int(point, "vector", 0);
  if (v > 0 && device->vector_bits > 0 && (guint64)v * 32 > device->vector_bits)
    return g_strdup_printf("vector(%" G_GINT64_FORMAT ") needs %" G_GINT64_FORMAT
                           "-bit SIMD registers; %s has %u-bit", v, v * 32, device->name,
                           device->vector_bits);
  gint64 t = ts_sched_point_get_int(point, "threads", 0);
  if (t > 0 && device->compute_units > 0 && (guint64)t > device->compute_units)
    return g_strdup_printf("threads(%" G_GINT64_FORMAT ") exceeds the %u cores of %s", t,
                           device->compute_units, device->name);
  return NULL;
}

TsGraph *
ts_op_instance_graph(const TsOpInstance *inst)
{
  return inst->graph;
}

void
ts__op_declare_params(const TsOpInstance *inst, TsTileKernel *kernel)
{
  const TsOpDef *op = inst->op;
  for (guint i = 0; i <= op->n_inputs; i++) {
    const TsOpArg *a = i < op->n_inputs ? &op->inputs[i] : &op->output;
    g_autofree char *size = g_strdup_printf("%" G_GINT64_FORMAT, inst->numel[i]);
    ts_tile_kernel_add_param(kernel, a->name, i < op->n_inputs ? inst->dtype.storage
                                                                : inst->out_dtype, size);
  }
  g_auto(GStrv) dims = g_strsplit(op->dims, ",", -1);
  for (guint i = 0; dims[i]; i++)
    ts_tile_kernel_add_int_param(kernel, dims[i]);
  for (guint i = 0; i < inst->n_floats; i++)
    ts_tile_kernel_add_float_param(kernel, inst->float_names[i]);
}

/* "gemm_f32_<point hash>": names the kernel in Tile IR and, prefixed with ts_, its entry. */
static char *
kernel_name(const TsOpInstance *inst, const TsSchedPoint *point)
{
  return g_strdup_printf("%s_%s_%s", inst->op->symbol ? inst->op->symbol : inst->op->name,
                         ts_dtype_name(inst->dtype.storage), ts_sched_point_hash(point));
}

TsTileKernel *
ts_op_lower(const TsOpInstance *inst, const char *backend, const TsSchedPoint *point,
            GError **error)
{
  if (space_for(inst->op, backend, error) == NULL)
    return NULL;
  g_autofree char *name = kernel_name(inst, point);
  g_autoptr(TsTileKernel) kernel = ts_tile_kernel_new(name, inst->op->name, &inst->dtype);
  ts__op_declare_params(inst, kernel);
  gboolean cuda = g_strcmp0(backend, "cuda") == 0;
  gboolean (*lower)(const TsOpInstance *, const TsSchedPoint *, TsTileKernel *, GError **) =
    cuda ? inst->op->lower_cuda : inst->op->lower_cpu;
  if (lower == NULL) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_TARGET, "%s: written directly in C, no Tile IR",
                inst->op->name);
    return NULL;
  }
  if (!lower(inst, point, kernel, error))
    return NULL;
  return g_steal_pointer(&kernel);
}

/* The point less the knobs its C kernel reads at run time: all that its source depends on
 * besides the op and dtype (not the shape either: dims are run-time ints). */
static TsSchedPoint *
compiled_knobs(const TsSchedPoint *point, const TsTileKernel *kernel, GString *runtime)
{
  TsSchedPoint *c = ts_sched_point_new();
  for (guint i = 0; i < ts_sched_point_n_knobs(point); i++) {
    const char *knob = ts_sched_point_knob_name(point, i);
    if (g_ptr_array_find_with_equal_func(kernel->launch_names, knob, g_str_equal, NULL)) {
      g_string_append_printf(runtime, "%s%s", runtime->len ? ", " : "", knob);
      continue;
    }
    TsSchedValue v = ts_sched_point_knob_value(point, i);
    if (v.kind == TS_SCHED_STR)
      ts_sched_point_set_str(c, knob, v.s);
    else
      ts_sched_point_set_int(c, knob, v.i);
  }
  return c;
}

char *
ts_op_emit(const TsOpInstance *inst, const char *be, const TsSchedPoint *point, char **entry,
           GArray **launch_ints, GError **error)
{
  g_autofree char *name = kernel_name(inst, point);
  g_autofree char *sym = g_strconcat("ts_", name, NULL);
  char *src = NULL;
  g_autoptr(GArray) ints = NULL;
  if (inst->op->emit_cpu_source != NULL) {
    if (space_for(inst->op, be, error) == NULL)
      return NULL;
    src = inst->op->emit_cpu_source(inst, point, sym, error);
  } else {
    g_autoptr(TsTileKernel) kernel = ts_op_lower(inst, be, point, error);
    if (kernel == NULL)
      return NULL;
    g_autofree char *pt = ts_sched_point_to_string(point);
    g_autofree char *what = ts_op_instance_describe(inst);
    g_autofree char *banner = g_strdup_printf("Tessera %s: %s\n * schedule %s",
                                              TS_OP_EMIT_VERSION, what, pt);
    const gboolean cuda = g_strcmp0(be, "cuda") == 0;
    if (!cuda && kernel->launch_names->len > 0) {
      /* One source for all the points it serves: named and described by the knobs it
       * compiles in, whatever the shape. */
      g_autoptr(GString) runtime = g_string_new(NULL);
      g_autoptr(TsSchedPoint) fixed = compiled_knobs(point, kernel, runtime);
      g_free(name);
      name = kernel_name(inst, fixed);
      g_free(sym);
      sym = g_strconcat("ts_", name, NULL);
      g_autofree char *fixed_text = ts_sched_point_to_string(fixed);
      g_autofree char *dt = ts_dtype_policy_to_string(&inst->dtype);
      g_free(banner);
      banner = g_strdup_printf("Tessera %s: %s %s\n * schedule %s; %s at run time",
                               TS_OP_EMIT_VERSION, ts_op_name(inst->op), dt, fixed_text,
                               runtime->str);
      ints = g_array_copy(kernel->launch_values);
    }
    src = cuda ? ts_emit_cuda(kernel, sym, banner, error) : ts_emit_c(kernel, sym, banner, error);
  }
  if (src && entry)
    *entry = g_steal_pointer(&sym);
  if (src && launch_ints)
    *launch_ints = ints ? g_steal_pointer(&ints) : g_array_new(FALSE, FALSE, sizeof(gint64));
  return src;
}
