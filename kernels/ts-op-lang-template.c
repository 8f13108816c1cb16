/* ts-op-lang-template.c — a kernel file lowered through a built-in op's templates (GEMM and
 * attention bodies): the template's spaces with the kernel's values for the knobs it names, its
 * default points, lowerings, FLOPs and bytes. */
#include "ts-op-lang-private.h"

#include "ts-cuda.h"

/* How many of the point's knobs have the template's default value: the default point of the
 * kernel's space is the valid point most like the template's own. */
static guint
likeness(const TsSchedPoint *p, const TsSchedPoint *base)
{
  guint n = 0;
  for (guint i = 0; i < ts_sched_point_n_knobs(base); i++) {
    const char *name = ts_sched_point_knob_name(base, i);
    TsSchedValue v = ts_sched_point_knob_value(base, i);
    if (!ts_sched_point_has(p, name))
      continue;
    n += v.kind == TS_SCHED_STR ? g_strcmp0(ts_sched_point_get_str(p, name, NULL), v.s) == 0
                                : ts_sched_point_get_int(p, name, G_MININT64) == v.i;
  }
  return n;
}

/* The template's space with the kernel's values for the knobs the kernel names (knobs the
 * template lacks are another target's: left out), the template's values for the rest, the
 * kernel's and the template's constraints; and its default point in env. */
static gboolean
template_space(Reader *r, const char *target, const char *problem, const char *text,
               const char *base_text, const char *base_default, const TsSchedEnv *env,
               char **space_out, char **point_out)
{
  g_autoptr(TsSchedSpace) mine = NULL;
  if (text != NULL && (mine = ts_sched_space_parse(text, r->error)) == NULL)
    return FALSE;
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(base_text, NULL);
  g_autoptr(TsSchedPoint) base = ts_sched_point_parse(base_default, NULL);
  g_assert(space != NULL && base != NULL); /* the catalog's, tested */
  for (guint i = 0; mine && i < ts_sched_space_n_knobs(mine); i++) {
    const char *name = ts_sched_space_knob_name(mine, i);
    if (ts_sched_space_knob_index(space, name) < 0)
      continue;
    guint n = ts_sched_space_n_values(mine, i);
    g_autofree TsSchedValue *v = g_new(TsSchedValue, n);
    for (guint j = 0; j < n; j++)
      v[j] = ts_sched_space_value(mine, i, j);
    ts_sched_space_set_knob(space, name, v, n);
  }
  for (guint i = 0; mine && i < ts_sched_space_n_constraints(mine); i++) {
    g_autofree char *c = ts_sched_space_constraint_to_string(mine, i);
    if (!ts_sched_space_add_constraint(space, c, r->error))
      return FALSE;
  }
  /* The valid point most like the template's default, on the nominal problem. */
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  g_autoptr(TsSchedPoint) best = NULL;
  guint best_score = 0;
  g_autoptr(GError) local = NULL;
  for (;;) {
    TsSchedPoint *p = NULL;
    if (!ts_sched_iter_next(it, &p, &local) || p == NULL)
      break;
    guint s = likeness(p, base);
    /* Among equals, the larger micro-tile: more reuse of each loaded vector. */
    if (best == NULL || s > best_score ||
        (s == best_score && ts_sched_point_get_int(p, "MR", 0) * ts_sched_point_get_int(p, "NR", 0) >
                              ts_sched_point_get_int(best, "MR", 0) *
                                ts_sched_point_get_int(best, "NR", 0))) {
      g_clear_pointer(&best, ts_sched_point_free);
      best = p;
      best_score = s;
    } else {
      ts_sched_point_free(p);
    }
  }
  if (local != NULL || best == NULL) {
    g_autofree char *s = ts_sched_space_to_string(space);
    return ts__lang_fail(r, r->k->space_node ? r->k->space_node : r->k->def,
                         "the space leaves the %s lowering no valid point for %s%s%s (its "
                         "space there: %s)",
                         target, problem, local ? ": " : "", local ? local->message : "", s);
  }
  *space_out = ts_sched_space_to_string(space);
  *point_out = ts_sched_point_to_string(best);
  return TRUE;
}

TsSchedEnv *
ts__lang_nominal_env(TsDtype dt, gboolean cuda)
{
  TsSchedEnv *env = ts_sched_env_new();
  ts_sched_env_set(env, "elem_bytes", ts_dtype_bits(dt) / 8);
  if (cuda) {
    const TsCudaArch *arch = ts_cuda_arch_lookup("sm_90a");
    ts_sched_env_set(env, "smem_bytes", arch->smem_per_block);
    ts_sched_env_set(env, "has_wgmma", arch->wgmma);
    ts_sched_env_set(env, "gpu_sms", 132);
  } else {
    /* The default point runs on any x86-64 with AVX2; the tuner finds what the machine has. */
    ts_sched_env_set(env, "simd_floats", 8);
    ts_sched_env_set(env, "vector_registers", 16);
  }
  return env;
}

gboolean
ts__lang_use_templates(Reader *r, const TsLangKernel *k, const TsOpDef *t, const char *what,
                       const char *problem, const TsSchedEnv *cpu_env, const TsSchedEnv *cuda_env)
{
  LangOp *o = r->o;
  o->def.dims = t->dims;
  o->def.tensor_math = t->tensor_math;
  o->def.flops = t->flops;
  o->def.bytes = t->bytes;
  o->def.lower_cpu = t->lower_cpu;
  o->def.lower_cuda = t->lower_cuda;
  o->def.tolerance_as = t->name;
  o->def.kernel_template = t->name;
  /* Without a space of its own the kernel tunes over the templates' whole spaces. A space that
   * leaves one target no point (a CPU's blocks on the GPU) makes a kernel for the other alone;
   * that target then says why. */
  const char *text = k->space ? k->space : k->schedule;
  GError **error = r->error;
  g_autoptr(GError) cpu_err = NULL, cuda_err = NULL;
  g_autofree char *cpu = g_strdup_printf("CPU %s", what), *cuda = g_strdup_printf("CUDA %s", what);
  r->error = &cpu_err;
  template_space(r, cpu, problem, text, t->cpu_space,
                 t->cpu_kernel_default ? t->cpu_kernel_default : t->cpu_default, cpu_env,
                 &o->space, &o->default_point);
  r->error = &cuda_err;
  template_space(r, cuda, problem, text, t->cuda_space, t->cuda_default, cuda_env,
                 &o->cuda_space, &o->cuda_default);
  r->error = error;
  if (cpu_err && cuda_err) {
    g_propagate_error(error, g_steal_pointer(&cpu_err));
    return FALSE;
  }
  if (cpu_err)
    o->def.cpu_why = o->cpu_why = g_strdup(cpu_err->message);
  if (cuda_err)
    o->def.cuda_why = o->cuda_why = g_strdup(cuda_err->message);
  o->def.cpu_space = o->space;
  o->def.cpu_default = o->default_point;
  o->def.cuda_space = o->cuda_space;
  o->def.cuda_default = o->cuda_default;
  return TRUE;
}
