/* ts-op-lang.c — a kernel written in the kernel language as an op of the workbench: its
 * signature becomes the op's buffers, dims and float parameters (Graph IR), its autotune space
 * the op's space (Schedule IR), and its body is lowered to Tile IR, so the emitters, the tuner,
 * the cache and the lowering view treat it as they treat a built-in op.
 *
 * This file builds the op: the signature's tensors and floats, the spaces of both targets, the
 * op it implements, the registration under kernel:NAME@HASH. The body is read by
 * ts-op-lang-read.c and lowered by ts-op-lang-lower.c. Lowered so far: elementwise kernels
 * (x[i], i = tile.linear_id()) and row kernels (whole rows, row reductions), CPU and CUDA;
 * verified against the op a kernel implements, else its own program evaluated in f64. */
#include "ts-op-lang-private.h"

#include <string.h>

/* ---- building the op ---- */

static char *
upper(const char *s)
{
  return g_ascii_strup(s, -1);
}

gboolean
ts__lang_bind_floats(Reader *r, TsLangNameCheck clear, gpointer data)
{
  LangOp *o = r->o;
  if (r->floats->len > G_N_ELEMENTS(o->float_names))
    return ts__lang_fail(r, r->k->def, "kernel %s has %u float parameters; the lowering takes at "
                                       "most 2", r->k->name, r->floats->len);
  for (guint f = 0; f < r->floats->len; f++) {
    const TsLangParam *p = g_ptr_array_index(r->floats, f);
    if (!clear(r, p->name, data))
      return FALSE;
    o->float_names[f] = g_strdup(p->name);
    o->def.float_names[f] = o->float_names[f];
    /* Runs use the parameter's default, else 1.5 (a value no kernel gets right by dropping
     * or doubling the parameter). */
    o->def.float_values[f] = p->default_source ? g_ascii_strtod(p->default_source, NULL) : 1.5;
  }
  o->def.n_floats = r->floats->len;
  return TRUE;
}

/* A float parameter's name, clear of the tensors' (seen: their names, case folded both ways)
 * and of the generated code's values (r0, w0, h0 ...). */
static gboolean
clear_of_names(Reader *r, const char *v, gpointer seen)
{
  if (g_hash_table_contains(seen, v) ||
      (strlen(v) > 1 && strchr("rwhRWH", v[0]) && strspn(v + 1, "0123456789") == strlen(v + 1)))
    return ts__lang_fail(r, r->k->def, "the float parameter %s of kernel %s has a tensor's name "
                                       "once case is folded, or one the generated code uses: "
                                       "rename it", v, r->k->name);
  return TRUE;
}

static gboolean
build(Reader *r, const TsLangKernel *k)
{
  LangOp *o = r->o;
  /* Tensors: elementwise, one named dim shared by all; a row kernel, [M, N] ones and [N] ones
   * (broadcast over the rows), its output [M, N]; one dtype. */
  const TsLangParam *first = NULL, *wide = NULL;
  for (guint i = 0; i < r->tensors->len; i++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, i);
    for (guint d = 0; d < p->tensor->rank; d++)
      if (p->tensor->dims[d].name == NULL) {
        g_autofree char *type = ts_tensor_type_to_string(p->tensor);
        return ts__lang_fail(r, k->def, "%s is %s: the lowering takes named dims "
                                        "(Tensor[\"N\", f32]), whose sizes --shape gives",
                             p->name, type);
      }
    if (p->tensor->rank == 2 && wide == NULL)
      wide = p;
    first = first ? first : p;
  }
  if (first == NULL)
    return ts__lang_fail(r, k->def, "kernel %s has no tensor parameter", k->name);
  const char *row = wide ? wide->tensor->dims[0].name : NULL;
  const char *col = wide ? wide->tensor->dims[1].name : first->tensor->dims[0].name;
  for (guint i = 0; i < r->tensors->len; i++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, i);
    const TsTensorType *t = p->tensor;
    g_autofree char *type = ts_tensor_type_to_string(t);
    gboolean fits = t->dtype.storage == first->tensor->dtype.storage;
    for (guint d = 0; d < t->rank; d++)
      fits = fits && t->dims[d].name != NULL;
    if (fits && t->rank == 1)
      fits = col && strcmp(t->dims[0].name, col) == 0 && p != r->out;
    else if (fits && t->rank == 2)
      fits = row && strcmp(t->dims[0].name, row) == 0 && strcmp(t->dims[1].name, col) == 0;
    else
      fits = FALSE;
    if (wide == NULL && t->rank == 1 && fits == FALSE && p == r->out)
      fits = t->dtype.storage == first->tensor->dtype.storage && t->dims[0].name &&
             strcmp(t->dims[0].name, col) == 0;
    if (!fits) {
      g_autofree char *ft = ts_tensor_type_to_string((wide ? wide : first)->tensor);
      return ts__lang_fail(r, k->def, "%s is %s, which does not fit %s (%s): the lowering takes "
                              "elementwise kernels over one named dim, and row kernels over "
                              "[M, N] tensors with [N] ones broadcast and an [M, N] output, "
                              "all of one dtype", p->name, type, (wide ? wide : first)->name, ft);
    }
  }
  o->rows = wide != NULL;
  o->row_dim = g_strdup(row);
  o->col_dim = g_strdup(col);
  o->dims = row ? g_strdup_printf("%s,%s", row, col) : g_strdup(col);
  o->def.dims = o->dims;
  o->dtype = g_strdup(ts_dtype_name(first->tensor->dtype.storage));

  /* Inputs: every tensor but the output, and the output too when the body reads it. */
  guint n_in = 0;
  for (guint i = 0; i < r->tensors->len; i++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, i);
    if (p == r->out && !r->read[i])
      continue;
    if (n_in == TS_OP_MAX_ARGS)
      return ts__lang_fail(r, k->def, "kernel %s reads more than %d tensors", k->name, TS_OP_MAX_ARGS);
    o->arg_names[n_in] = upper(p->name);
    o->views[n_in] = g_ascii_strdown(p->name, -1);
    o->broadcast[n_in] = o->rows && p->tensor->rank == 1;
    o->arg_sigs[n_in] = o->rows && !o->broadcast[n_in] ? g_strdup_printf("\"%s\",\"%s\"", row, col)
                                                       : g_strdup_printf("\"%s\"", col);
    o->def.inputs[n_in] = (TsOpArg){o->arg_names[n_in], o->arg_sigs[n_in], -1.0, 1.0};
    n_in++;
  }
  o->def.n_inputs = n_in;
  /* The views the expression names are the inputs' positions, not the tensors': remap. */
  guint map[TS_OP_MAX_ARGS + 8];
  for (guint i = 0, a = 0; i < r->tensors->len && i < G_N_ELEMENTS(map); i++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, i);
    map[i] = (p == r->out && !r->read[i]) ? G_MAXUINT : a++;
  }
  for (guint i = 0; i < o->arena->len; i++) {
    Ex *e = g_ptr_array_index(o->arena, i);
    if (e->kind == EX_VIEW)
      e->index = map[e->index];
  }
  const gboolean in_place = r->read[ts__lang_tensor_index(r, r->out->name)];
  o->arg_names[n_in] = in_place ? g_strdup_printf("%s_OUT", r->out->name) : upper(r->out->name);
  for (char *c = o->arg_names[n_in]; *c; c++)
    *c = g_ascii_toupper(*c);
  o->views[n_in] = g_ascii_strdown(o->arg_names[n_in], -1);
  o->arg_sigs[n_in] = o->rows ? g_strdup_printf("\"%s\",\"%s\"", row, col)
                              : g_strdup_printf("\"%s\"", col);
  o->def.output = (TsOpArg){o->arg_names[n_in], o->arg_sigs[n_in], 0, 0};

  /* Names must stay apart once case is folded: buffers, views and float parameters share
   * the generated code's scope. */
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  /* ... and the generated code's own names: loop variables, schedule constants, the dims,
   * reductions (r0), scratch rows (w0, W0), hoisted values (h0), C's words. */
  static const char *const reserved[] = {"i", "j", "i0", "bx", "acc", "BM", "BN", "VEC",
                                         "THREADS", "PER", "NCOLS", "float", "int", "double",
                                         "const", "restrict", "min", "max", "exp", "sqrt",
                                         "splat", "bufs", "ints", "floats", NULL};
  for (guint i = 0; reserved[i]; i++)
    g_hash_table_add(seen, (gpointer)reserved[i]);
  if (row)
    g_hash_table_add(seen, (gpointer)row);
  g_hash_table_add(seen, (gpointer)col);
  for (guint i = 0; i <= n_in; i++) {
    const char *v = o->views[i];
    if (strlen(v) > 1 && strchr("rwhRWH", v[0]) && strspn(v + 1, "0123456789") == strlen(v + 1))
      return ts__lang_fail(r, k->def, "the tensor name %s is one the generated code uses for its own "
                              "values (r0, w0, h0 ...): rename it", v);
    if (strcmp(o->arg_names[i], o->views[i]) == 0 || g_hash_table_contains(seen, o->views[i]) ||
        g_hash_table_contains(seen, o->arg_names[i]))
      return ts__lang_fail(r, k->def, "the tensor names of kernel %s collide, once upper- and lower-case "
                              "are folded, with each other or with a name the generated code "
                              "uses (%s): rename one", k->name, o->views[i]);
    g_hash_table_add(seen, o->views[i]);
    g_hash_table_add(seen, o->arg_names[i]);
  }
  if (!ts__lang_bind_floats(r, clear_of_names, seen))
    return FALSE;

  o->expr = ts__lang_print(o, o->value, FALSE, NULL, NULL);
  o->flops_per_element = ts__lang_count_flops(o->value);
  for (guint i = 0; o->steps && i < o->steps->len; i++) /* a reduction adds one per element */
    o->flops_per_element += ts__lang_count_flops(g_array_index(o->steps, Step, i).expr) +
                            !g_array_index(o->steps, Step, i).scratch;
  o->flops_per_element = MAX(1.0, o->flops_per_element);
  return TRUE;
}

/* Whether the space's knob has the value str (or, str NULL, the integer i) among its own. */
static gboolean
space_offers(const TsSchedSpace *space, const char *knob, const char *str, gint64 i)
{
  const int k = ts_sched_space_knob_index(space, knob);
  for (guint v = 0; k >= 0 && v < ts_sched_space_n_values(space, (guint)k); v++) {
    const TsSchedValue val = ts_sched_space_value(space, (guint)k, v);
    if (str ? val.kind == TS_SCHED_STR && g_strcmp0(val.s, str) == 0
            : val.kind == TS_SCHED_INT && val.i == i)
      return TRUE;
  }
  return FALSE;
}

/* A target's space: the kernel's, plus the knobs the target's lowering reads that the kernel
 * leaves out (with the values of values[i], a list ending in 0) and the target's constraints;
 * its default point is the space's first valid point (the first point outright when a
 * constraint needs the shape). */
static gboolean
target_space(Reader *r, const char *text, const char *const *knobs, const gint64 *const *values,
             const char *where, gboolean cuda, char **space_out, char **point_out)
{
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text, r->error);
  if (space == NULL)
    return FALSE;
  /* the CPU knobs (a row's passes from cache, non-temporal stores, the polynomial exp, two
   * rows a pass): on CUDA one value of each, not the space's several, says so */
  for (guint i = 0; cuda && i < TS_LANG_N_CPU_KNOBS; i++) {
    const TsLangCpuKnob *kn = &ts__lang_cpu_knobs[i];
    if (ts_sched_space_knob_index(space, kn->knob) < 0)
      continue;
    const TsSchedValue one = kn->str ? (TsSchedValue){.kind = TS_SCHED_STR,
                                                      .s = g_intern_static_string(kn->str)}
                                     : (TsSchedValue){.kind = TS_SCHED_INT, .i = kn->i};
    ts_sched_space_set_knob(space, kn->knob, &one, 1);
  }
  if (!cuda && ts_sched_space_knob_index(space, "pipeline") >= 0 &&
      !(r->o->rows && ts__lang_pipeline_applies(r->o))) {
    const TsLangKernel *k = r->k;
    return ts__lang_fail(r, k->space_node ? k->space_node : k->def,
                         "the space's knob pipeline takes a row's first reduction into the pass "
                         "before it, and kernel %s %s: take pipeline out of the space",
                         k->name, r->o->rows ? "starts its rows with a scratch row, not a reduction"
                                             : "is elementwise, with no rows");
  }
  const char *why;
  if (!cuda && space_offers(space, "pipeline", "skew", 0) && (why = ts__lang_skew_refusal(r->o)))
    return ts__lang_fail(r, r->k->space_node ? r->k->space_node : r->k->def,
                         "the space's pipeline(\"skew\") %s, and kernel %s %s: take \"skew\" "
                         "out of the space", TS_LANG_SKEW_WHAT, r->k->name, why);
  if (!cuda && space_offers(space, "math", "fast", 0) && (why = ts__lang_fast_math_refusal(r->o)))
    return ts__lang_fail(r, r->k->space_node ? r->k->space_node : r->k->def,
                         "the space's math(\"fast\") %s, and kernel %s %s: take \"fast\" out "
                         "of the space", TS_LANG_FAST_MATH_WHAT, r->k->name, why);
  /* jam(2) pairs rows and carries the next pair's first reductions */
  const gboolean jam2 = !cuda && space_offers(space, "jam", NULL, 2);
  if (jam2 && (why = ts__lang_jam_refusal(r->o))) {
    return ts__lang_fail(r, r->k->space_node ? r->k->space_node : r->k->def,
                         "the space's jam(2) %s, and kernel %s %s: take 2 out of the space's jam",
                         TS_LANG_JAM_WHAT, r->k->name, why);
  } else if (jam2 && !space_offers(space, "pipeline", "next", 0)) {
    return ts__lang_fail(r, r->k->space_node ? r->k->space_node : r->k->def,
                         "the space's jam(2) carries the next pair's first reductions in the "
                         "pair's output pass, and kernel %s's space has no pipeline(\"next\"): "
                         "add pipeline=[\"none\", \"next\"]", r->k->name);
  } else if (jam2 &&
             (!ts_sched_space_add_constraint(space, "jam == 1 || pipeline == \"next\"", r->error) ||
              (ts_sched_space_knob_index(space, "BM") >= 0 &&
               !ts_sched_space_add_constraint(space, "jam == 1 || BM > 1", r->error)))) {
    return FALSE;
  }
  /* apply("tile") takes all of an item's reductions before its tiles: no pass to carry the
   * next row's in, and tiles of more than one row */
  const gboolean tile = !cuda && space_offers(space, "apply", "tile", 0);
  if (tile && (why = ts__lang_tile_refusal(r->o)))
    return ts__lang_fail(r, r->k->space_node ? r->k->space_node : r->k->def,
                         "the space's apply(\"tile\") %s, and kernel %s %s: take \"tile\" out "
                         "of the space", TS_LANG_TILE_WHAT, r->k->name, why);
  if (tile && ((ts_sched_space_knob_index(space, "pipeline") >= 0 &&
                !ts_sched_space_add_constraint(space, "apply == \"row\" || pipeline == \"none\"",
                                               r->error)) ||
               (ts_sched_space_knob_index(space, "BM") >= 0 &&
                !ts_sched_space_add_constraint(space, "apply == \"row\" || BM > 1", r->error))))
    return FALSE;
  for (guint i = 0; knobs[i]; i++)
    if (ts_sched_space_knob_index(space, knobs[i]) < 0) {
      TsSchedValue v[4];
      guint n = 0;
      for (; values[i][n] && n < G_N_ELEMENTS(v); n++)
        v[n] = (TsSchedValue){.kind = TS_SCHED_INT, .i = values[i][n]};
      ts_sched_space_set_knob(space, knobs[i], v, n);
    }
  if (where && !ts_sched_space_add_constraint(space, where, r->error))
    return FALSE;
  *space_out = ts_sched_space_to_string(space);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, NULL);
  g_autoptr(TsSchedPoint) first = NULL;
  if (!ts_sched_iter_next(it, &first, NULL) || first == NULL) {
    g_clear_pointer(&first, ts_sched_point_free);
    first = ts_sched_space_point_at(space, 0);
  }
  *point_out = ts_sched_point_to_string(first);
  return TRUE;
}

/* The kernel's space on the CPU (with the machine's cores as threads) and on CUDA (at most 32
 * elements of a tile per thread, so every tile stays in registers). */
static gboolean
spaces(Reader *r, const TsLangKernel *k)
{
  LangOp *o = r->o;
  /* every kernel writes its output once, so it may write it past the caches (store); a row
   * kernel whose first step is a reduction may take it in the pass before (pipeline), and
   * one of a scratch row may take that pass with the scratch row's (skew) */
  const char *pipeline = !(o->rows && ts__lang_pipeline_applies(o)) ? ""
                         : ts__lang_skew_refusal(o) ? ".pipeline([\"none\", \"next\"])"
                                                    : ".pipeline([\"none\", \"next\", \"skew\"])";
  /* one with an exp and a 16-bit output may take it by the short polynomial (math), one of
   * reductions alone may run the output passes of two rows as one (jam), and one that also
   * reads an [N] input may write a work item's rows in tiles (apply) */
  g_autofree char *fallback =
    g_strdup_printf("%s.store([\"cached\", \"stream\"])%s%s%s%s",
                    o->rows ? "block(m=[1,4,16]).vector([4,8,16])"
                            : "block(n=[4096,16384,65536]).vector([4,8,16])",
                    pipeline, ts__lang_fast_math_refusal(o) ? "" : ".math([\"exact\", \"fast\"])",
                    o->rows && !ts__lang_jam_refusal(o) ? ".jam([1, 2])" : "",
                    o->rows && !ts__lang_tile_refusal(o) ? ".apply([\"row\", \"tile\"])" : "");
  const char *text = k->space ? k->space : k->schedule ? k->schedule : fallback;
  static const char *const cpu_knobs[] = {"threads", "vector", NULL};
  const gint64 cpu_threads[] = {MAX(1, (gint64)g_get_num_processors()), 0};
  static const gint64 eight[] = {8, 0}, four[] = {4, 0};
  const gint64 *const cpu_values[] = {cpu_threads, eight};
  /* warps, where the kernel leaves them out, searched: a row group of more warps holds a
   * longer row in registers. Not 16, as the built-in row ops have: a kernel file's row keeps a
   * register tile for each input, its operand and its output, and at 512 threads (128
   * registers a thread) layernorm_bf16.tsk's 4 rows of 8192 spilled 104-212 bytes. */
  static const char *const cuda_knobs[] = {"warps", "vector", NULL};
  static const gint64 row_warps[] = {4, 8, 0}, map_warps[] = {4, 8, 0};
  const gint64 *const cuda_values[] = {o->rows ? row_warps : map_warps, four};
  /* A vector wider than the machine's registers is pruned before anything compiles; as a
   * constraint (the built-in ops' too) the search spends no evaluation of its budget on it. */
  if (!target_space(r, text, cpu_knobs, cpu_values, "vector <= simd_floats", FALSE, &o->space,
                    &o->default_point))
    return FALSE;
  o->def.cpu_space = o->space;
  o->def.cpu_default = o->default_point;
  /* CUDA: elementwise, at most 32 elements of a tile a thread; rows, a row group of a power of
   * two or a multiple of 32 threads holding the whole row in registers, or one row a CTA
   * streamed in column tiles (as the built-in row ops). */
  g_autofree char *rows_where =
    o->rows ? g_strdup_printf("warps * 32 %% BM == 0 && (BM == 1 || %s * BM <= %d * 32 * warps)",
                              o->col_dim, TS_CUDA_ROW_REGS)
            : NULL;
  if (!target_space(r, text, cuda_knobs, cuda_values,
                    o->rows ? rows_where
                            : "BN % (warps * 32 * vector) == 0 && BN <= 32 * warps * 32",
                    TRUE, &o->cuda_space, &o->cuda_default))
    return FALSE;
  o->def.cuda_space = o->cuda_space;
  o->def.cuda_default = o->cuda_default;
  return TRUE;
}

/* The op the kernel says it implements must take the same inputs and floats: its reference
 * then checks the kernel. */
static gboolean
match_implements(Reader *r, const TsLangKernel *k)
{
  LangOp *o = r->o;
  if (k->implements == NULL) {
    o->def.reference = o->attn   ? o->def.reference /* the template's */
                       : o->gemm ? ts__lang_gemm_reference
                       : o->rows ? ts__lang_reference_rows
                                 : ts__lang_reference;
    return TRUE;
  }
  const TsOpDef *op = ts_op_lookup(k->implements);
  const TsLangNode *at = k->def;
  if (op == NULL || op->symbol != NULL)
    return ts__lang_fail(r, at, "@kernel.implements(\"%s\"): no built-in op of that name",
                 k->implements);
  /* An attention kernel implements flash_attention with its flag's mask: the causal op when
   * the flag is set. */
  if (o->attn && (op == &ts__op_flash_attention || op == &ts__op_flash_attention_causal))
    op = o->attn_causal ? &ts__op_flash_attention_causal : &ts__op_flash_attention;
  else if (o->attn)
    return ts__lang_fail(r, at, "@kernel.implements(\"%s\"): kernel %s is an attention kernel, "
                                "which implements flash_attention", k->implements, k->name);
  if (op->n_inputs != o->def.n_inputs || op->n_floats != o->def.n_floats ||
      strcmp(op->dims, o->def.dims) != 0)
    return ts__lang_fail(r, at, "kernel %s reads %u tensors and %u floats over dims %s, but %s takes "
                        "%u inputs and %u floats over dims %s: it cannot be checked against "
                        "%s's reference", k->name, o->def.n_inputs, o->def.n_floats,
                 o->def.dims, op->name, op->n_inputs, op->n_floats, op->dims, op->name);
  o->implements = op;
  o->def.reference = ts__lang_implemented_reference;
  o->def.tolerance_as = op->name;
  for (guint f = 0; f < op->n_floats; f++)
    o->def.float_values[f] = op->float_values[f];
  return TRUE;
}

static void
lang_op_free(LangOp *o)
{
  g_free(o->name);
  g_free(o->symbol);
  g_free(o->summary);
  g_free(o->dims);
  g_free(o->space);
  g_free(o->default_point);
  g_free(o->cuda_space);
  g_free(o->cuda_default);
  g_free(o->dtype);
  g_free(o->src);
  g_free(o->path);
  g_free(o->cache);
  g_free(o->expr);
  g_free(o->row_dim);
  g_free(o->epi_cpu);
  g_free(o->cpu_why);
  g_free(o->cuda_why);
  g_free(o->epi_cuda);
  g_free(o->col_dim);
  g_free(o->user_dims);
  if (o->steps)
    g_array_unref(o->steps);
  for (guint i = 0; i <= TS_OP_MAX_ARGS; i++) {
    g_free(o->arg_names[i]);
    g_free(o->arg_sigs[i]);
    g_free(o->views[i]);
  }
  for (guint i = 0; i < G_N_ELEMENTS(o->float_names); i++)
    g_free(o->float_names[i]);
  if (o->arena)
    g_ptr_array_free(o->arena, TRUE);
  g_free(o);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LangOp, lang_op_free)

/* A bool parameter's default: True when its source says so. */
static gboolean
flag_default(const TsLangParam *p)
{
  return g_strcmp0(p->default_source, "True") == 0;
}

/* The kernel's bool parameters (compile-time flags) into flags (name -> "1" / "0"): each its
 * default unless `settings` ("causal", "causal=false", from NAME+causal+...) says otherwise;
 * suffix: the settings that differ from the defaults, as the op's name carries them. */
static gboolean
bind_flags(const TsLangKernel *k, char **settings, GHashTable *flags, GString *suffix,
           GError **error)
{
  g_autoptr(GString) known = g_string_new(NULL);
  for (guint i = 0; i < k->params->len; i++) {
    const TsLangParam *p = g_ptr_array_index(k->params, i);
    if (p->tensor == NULL && strcmp(p->scalar, "bool") == 0) {
      g_hash_table_insert(flags, p->name, flag_default(p) ? "1" : "0");
      g_string_append_printf(known, "%s%s", known->len ? ", " : "", p->name);
    }
  }
  for (guint i = 0; settings && settings[i]; i++) {
    g_auto(GStrv) kv = g_strsplit(settings[i], "=", 2);
    const char *value = kv[1] ? kv[1] : "true";
    gpointer key = NULL;
    if (!g_hash_table_lookup_extended(flags, kv[0], &key, NULL)) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP,
                  "kernel %s has no flag '%s' (its flags, bool parameters: %s)", k->name, kv[0],
                  known->len ? known->str : "none");
      return FALSE;
    }
    gboolean on = g_ascii_strcasecmp(value, "true") == 0 || strcmp(value, "1") == 0;
    if (!on && g_ascii_strcasecmp(value, "false") != 0 && strcmp(value, "0") != 0) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP,
                  "kernel %s: flag %s=%s: a flag is true or false", k->name, kv[0], value);
      return FALSE;
    }
    g_hash_table_insert(flags, key, on ? "1" : "0");
  }
  for (guint i = 0; i < k->params->len; i++) {
    const TsLangParam *p = g_ptr_array_index(k->params, i);
    const char *v = g_hash_table_lookup(flags, p->name);
    if (p->tensor == NULL && v && (strcmp(v, "1") == 0) != flag_default(p))
      g_string_append_printf(suffix, "+%s%s", p->name, strcmp(v, "1") == 0 ? "" : "=false");
  }
  return TRUE;
}

const TsOpDef *
ts_op_register_kernel(const char *src, const char *path, const char *name_flags, GError **error)
{
  g_return_val_if_fail(src != NULL, NULL);
  const char *file = path ? path : "<kernel>";
  g_auto(GStrv) settings = name_flags ? g_strsplit(name_flags, "+", -1) : NULL;
  const char *name = settings && settings[0][0] ? settings[0] : NULL;
  g_autoptr(TsLangNode) tree = ts_lang_parse(src, file, error);
  if (tree == NULL)
    return NULL;
  const TsLangNode *def = NULL;
  for (guint i = 0; i < tree->kids->len && def == NULL; i++)
    if (name == NULL || strcmp(((TsLangNode *)g_ptr_array_index(tree->kids, i))->str, name) == 0)
      def = g_ptr_array_index(tree->kids, i);
  if (def == NULL) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP,
                name ? "%s has no kernel named '%s'" : "%s has no kernel", file, name);
    return NULL;
  }
  g_autoptr(TsLangKernel) k = ts_lang_kernel_check(def, src, file, error);
  if (k == NULL)
    return NULL;
  g_autoptr(GHashTable) flags = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GString) suffix = g_string_new(NULL);
  if (!bind_flags(k, settings ? settings + 1 : NULL, flags, suffix, error))
    return NULL;

  /* The name carries a hash of the source: a kernel edited is another workload in the cache,
   * and a worker that registers the same source finds the same op. The flags set otherwise than
   * their defaults follow the kernel's name: another specialisation, another op. */
  g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, src, -1);
  g_autofree char *opname = g_strdup_printf("kernel:%s%s@%.8s", k->name, suffix->str, sum);
  const TsOpDef *known = ts_op_lookup(opname);
  if (known != NULL)
    return known;

  g_autoptr(LangOp) o = g_new0(LangOp, 1);
  o->arena = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) index_vars = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GHashTable) locals = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) tensors = g_ptr_array_new();
  g_autoptr(GPtrArray) floats = g_ptr_array_new();
  o->steps = g_array_new(FALSE, FALSE, sizeof(Step));
  Reader r = {o, k, src, file, error, index_vars, locals, tensors, floats, {FALSE}, NULL, NULL,
              FALSE};
  /* What is not lowered at all is said before what the lowering would refuse in it. */
  g_autoptr(GPtrArray) views = ts__lang_views_new();
  const TsLangNode *body = ts__lang_specialise(&r, ts__lang_kid(def, 3), flags, views);
  if (body == NULL)
    return NULL;
  const gboolean attention = ts__lang_attention_call(body) != NULL;
  for (guint i = 0; i < k->params->len; i++) {
    TsLangParam *p = g_ptr_array_index(k->params, i);
    if (p->tensor)
      g_ptr_array_add(tensors, p);
    else if (strcmp(p->scalar, "int") != 0 && strcmp(p->scalar, "bool") != 0)
      g_ptr_array_add(floats, p);
    else if (strcmp(p->scalar, "bool") != 0)
      return ts__lang_fail(&r, def, "the %s parameter %s is not lowered yet (tensors, float "
                            "parameters and bool flags are)", p->scalar, p->name), NULL;
  }
  if (tensors->len > G_N_ELEMENTS(r.read))
    return ts__lang_fail(&r, def, "kernel %s has more than %d tensor parameters", k->name,
                 TS_OP_MAX_ARGS),
           NULL;
  for (guint i = 0; i < tensors->len; i++)
    r.rows |= ((TsLangParam *)g_ptr_array_index(tensors, i))->tensor->rank == 2;
  if (attention) {
    if (!ts__lang_read_attention(&r, body) || !ts__lang_build_attention(&r, k))
      return NULL;
  } else if (ts__lang_is_contraction(body)) {
    if (!ts__lang_read_gemm(&r, body) || !ts__lang_build_gemm(&r, k))
      return NULL;
  } else {
    if (!ts__lang_read_body(&r, body))
      return NULL;
    o->value = r.written;
    if (!build(&r, k) || !spaces(&r, k))
      return NULL;
    o->def.inst_flops = ts__lang_flops;
    o->def.lower_cpu = o->rows ? ts__lang_lower_cpu_rows : ts__lang_lower_cpu;
    o->def.lower_cuda = o->rows ? ts__lang_lower_cuda_rows : ts__lang_lower_cuda;
    o->def.row_work = ts__lang_row_work;
  }
  if (!match_implements(&r, k))
    return NULL;

  o->name = g_steal_pointer(&opname);
  o->symbol = g_strdup_printf("kernel_%s_%.8s", k->name, sum);
  o->summary = g_strdup_printf("kernel %s from %s", k->name, file);
  o->src = g_strdup(src);
  o->path = g_strdup(path);
  o->def.name = o->name;
  o->def.symbol = o->symbol;
  o->def.summary = o->summary;
  o->def.only_dtype = o->dtype;
  o->def.kernel_src = o->src;
  o->def.kernel_path = o->path;
  o->def.kernel_budget_ms = k->budget_ms;
  o->def.verify_bounded = k->bounded;
  o->def.verify_lo = k->bound_lo;
  o->def.verify_hi = k->bound_hi;
  o->cache = g_strdup(k->cache);
  o->def.kernel_cache = o->cache;
  if (!ts__op_register(&o->def)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP, "an op named %s exists already",
                o->name);
    return NULL;
  }
  return &g_steal_pointer(&o)->def; /* the registry keeps it */
}

const TsOpDef *
ts_op_register_kernel_op(const char *op, const char *src, const char *path, GError **error)
{
  g_return_val_if_fail(op != NULL && src != NULL, NULL);
  const TsOpDef *known = ts_op_lookup(op);
  if (known != NULL)
    return known;
  const char *at = strchr(op, '@');
  if (!g_str_has_prefix(op, "kernel:") || at == NULL) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP,
                "'%s' does not name a kernel file's op (kernel:NAME@HASH)", op);
    return NULL;
  }
  g_autofree char *name = g_strndup(op + strlen("kernel:"), (gsize)(at - op) - strlen("kernel:"));
  const TsOpDef *def = ts_op_register_kernel(src, path, name, error);
  if (def != NULL && strcmp(ts_op_name(def), op) != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP,
                "the source given for %s registers as %s: it is another text of the kernel",
                op, ts_op_name(def));
    return NULL;
  }
  return def;
}

const TsOpDef *
ts_op_load_kernel(const char *path, const char *name, GError **error)
{
  g_autofree char *src = NULL;
  if (!g_file_get_contents(path, &src, NULL, error)) {
    g_prefix_error(error, "--kernel: ");
    return NULL;
  }
  return ts_op_register_kernel(src, path, name, error);
}

const char *
ts_op_kernel_source(const TsOpDef *op)
{
  return op ? op->kernel_src : NULL;
}

const char *
ts_op_kernel_path(const TsOpDef *op)
{
  return op ? op->kernel_path : NULL;
}

const char *
ts_op_kernel_dtype(const TsOpDef *op)
{
  return op ? op->only_dtype : NULL;
}

double
ts_op_kernel_budget_ms(const TsOpDef *op)
{
  return op ? op->kernel_budget_ms : 0;
}

const char *
ts_op_kernel_template(const TsOpDef *op)
{
  return op ? op->kernel_template : NULL;
}

const char *
ts_op_kernel_cache(const TsOpDef *op)
{
  return op ? op->kernel_cache : NULL;
}
