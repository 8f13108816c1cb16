/* ts-op-lang-lower.c — a kernel file's op at a schedule point: its expression trees printed
 * as the Tile IR's C (CPU: vectorised maps and reductions over each program's rows; CUDA: maps
 * over each thread's register tiles between the row tile's loads and stores, per-row parts
 * hoisted into lets), evaluated in f64 for the reference, and counted for the roofline. */
#include "ts-op-lang-private.h"

#include <math.h>
#include <string.h>

#include "ts-numerics.h"

static gboolean
has_row_value(const Ex *e)
{
  return e && (e->kind == EX_ROW || e->kind == EX_DIM || has_row_value(e->a) ||
               has_row_value(e->b));
}

/* Prints an element as C for a Tile IR node. hoist (optional): where a part that is the same
 * for the whole row (a reduction's result divided by N, an rsqrt of a variance) is computed
 * once, as a `let h<k>`, instead of for every element. */
typedef struct {
  const LangOp *o;
  gboolean cuda;
  TsTileNode *hoist;
  GHashTable *hoisted; /* Ex* -> its let's name: a part shared by several passes, once */
  const char *sfx;     /* appended to the views of [M, N] inputs: "_nx" the next row's */
  /* pipeline("skew")'s drain, which writes the row before: its scratch rows (w<k>_pv) and its
   * hoisted parts, named p<k> where the row's own are h<k> */
  gboolean prev;
  guint base;     /* the number of the first hoisted part (after those of an earlier print) */
  gboolean fast;  /* math("fast"): a vector exp by the short polynomial (exp_fast) */
  /* jam(2)'s second row of a pair: appended to its row values and hoisted parts (r0_b) */
  const char *row_sfx;
  /* apply("tile"): where not NULL, rows_read[k] is set when row value r<k> is printed as
   * itself (not inside a hoisted part), so the tiles load just the values they read */
  gboolean *rows_read;
} Printer;

static void print_ex(const Printer *p, const Ex *e, GString *out);

/* The name of the let holding `lead` + e (printed without hoisting) once a row, made on first
 * use and remembered under key. */
static const char *
hoisted_let(const Printer *p, const Ex *key, const char *lead, const Ex *e)
{
  const char *known = g_hash_table_lookup(p->hoisted, key);
  if (known)
    return known;
  Printer inner = {p->o, p->cuda, NULL, NULL, NULL, FALSE, 0, FALSE, p->row_sfx, NULL};
  GString *text = g_string_new(lead);
  print_ex(&inner, e, text);
  char *name = g_strdup_printf("%c%u%s", p->prev ? 'p' : 'h',
                               p->base + g_hash_table_size(p->hoisted),
                               p->row_sfx ? p->row_sfx : "");
  ts_tile_let(p->hoist, name, TS_DTYPE_F32, text->str);
  g_string_free(text, TRUE);
  g_hash_table_insert(p->hoisted, (gpointer)key, name);
  return name;
}

static char *
print_text(const Printer *p, const Ex *e)
{
  GString *out = g_string_new(NULL);
  print_ex(p, e, out);
  return g_string_free(out, FALSE);
}

/* C text over the map's views and the kernel's float parameters. For the CPU, a call with no
 * view in it stays scalar (__builtin_*): the map's vector path rewrites the names exp, sqrt and
 * max to vector functions. For CUDA the map is scalar code per register element. */
static void
print_ex(const Printer *p, const Ex *e, GString *out)
{
  const LangOp *o = p->o;
  const gboolean scalar = !ts__lang_has_view(e);
  if (p->hoist && scalar && has_row_value(e) && e->kind != EX_ROW && e->kind != EX_DIM) {
    g_string_append(out, hoisted_let(p, e, "", e));
    return;
  }
  switch (e->kind) {
  case EX_NUM:
    if (isinf(e->num) && p->cuda)
      g_string_append(out, e->num > 0 ? "__int_as_float(0x7f800000)"
                                      : "__int_as_float((int)0xff800000)");
    else if (isinf(e->num))
      g_string_append(out, e->num > 0 ? "__builtin_inff()" : "(-__builtin_inff())");
    else {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_formatd(buf, sizeof buf, "%.9g", e->num);
      g_string_append_printf(out, "%s%sf", buf, strpbrk(buf, ".en") ? "" : ".0");
    }
    break;
  case EX_VIEW:
    g_string_append(out, o->views[e->index]);
    if (p->sfx && !o->broadcast[e->index])
      g_string_append(out, p->sfx);
    break;
  case EX_FLOAT:
    g_string_append(out, o->float_names[e->index]);
    break;
  case EX_ROW:
    if (p->rows_read)
      p->rows_read[e->index] = TRUE;
    g_string_append_printf(out, "r%u%s", e->index, p->row_sfx ? p->row_sfx : "");
    break;
  case EX_SCRATCH:
    g_string_append_printf(out, p->prev ? "w%u_pv" : "w%u", e->index);
    break;
  case EX_DIM:
    g_string_append_printf(out, "(float)%s", e->dim);
    break;
  case EX_BIN:
    if (p->hoist && e->op == '/' && !scalar && !ts__lang_has_view(e->b) &&
        has_row_value(e->b)) {
      /* an element divided by a value of the row (softmax's e / s): a multiply by the row's
       * reciprocal, taken once in a let, as the built-in ops do; a vector division costs
       * several multiplies' throughput. Within 1.5 ulp of the quotient. Keyed by the
       * division, which has a view, so never hoisted as a value itself. */
      const char *rcp = hoisted_let(p, e, "1.0f / ", e->b);
      g_string_append_c(out, '(');
      print_ex(p, e->a, out);
      g_string_append_printf(out, " * %s)", rcp);
      break;
    }
    g_string_append_c(out, '(');
    print_ex(p, e->a, out);
    g_string_append_printf(out, " %c ", e->op);
    print_ex(p, e->b, out);
    g_string_append_c(out, ')');
    break;
  case EX_NEG:
    g_string_append(out, "(-");
    print_ex(p, e->a, out);
    g_string_append_c(out, ')');
    break;
  case EX_EXP:
    if (p->fast && !p->cuda && !scalar) {
      /* exp(a - m) with m the same for the whole row: the emitter folds m into the
       * polynomial's constants once a row (exp_fast_sub) */
      const Ex *a = e->a;
      const gboolean sub = a->kind == EX_BIN && a->op == '-' && ts__lang_has_view(a->a) &&
                           !ts__lang_has_view(a->b);
      g_string_append(out, sub ? "exp_fast_sub(" : "exp_fast(");
      print_ex(p, sub ? a->a : a, out);
      if (sub) {
        g_string_append(out, ", ");
        print_ex(p, a->b, out);
      }
      g_string_append_c(out, ')');
      break;
    }
    G_GNUC_FALLTHROUGH;
  case EX_SQRT:
  case EX_MAX: {
    static const char *const vec[] = {[EX_EXP] = "exp", [EX_SQRT] = "sqrt", [EX_MAX] = "max"};
    static const char *const sca[] = {[EX_EXP] = "__builtin_expf", [EX_SQRT] = "__builtin_sqrtf",
                                      [EX_MAX] = "__builtin_fmaxf"};
    static const char *const gpu[] = {[EX_EXP] = "expf", [EX_SQRT] = "sqrtf", [EX_MAX] = "fmaxf"};
    g_string_append_printf(out, "%s(", p->cuda ? gpu[e->kind] : scalar ? sca[e->kind]
                                                                         : vec[e->kind]);
    for (const Ex *arg = e->a; arg; arg = arg == e->a ? e->b : NULL) {
      if (arg == e->b)
        g_string_append(out, ", ");
      /* max of a vector and a value with no view: the value is splat to a vector */
      const gboolean splat = !p->cuda && !scalar && !ts__lang_has_view(arg);
      g_string_append(out, splat ? "splat(" : "");
      print_ex(p, arg, out);
      g_string_append(out, splat ? ")" : "");
    }
    g_string_append_c(out, ')');
    break;
  }
  }
}

char *
ts__lang_print(const LangOp *o, const Ex *e, gboolean cuda, TsTileNode *hoist, GHashTable *hoisted)
{
  Printer p = {o, cuda, hoist, hoisted, NULL, FALSE, 0, FALSE, NULL, NULL};
  return print_text(&p, e);
}

/* A CPU lowering's print: ts__lang_print with math("fast")'s exp. */
static char *
print_cpu(const LangOp *o, const Ex *e, TsTileNode *hoist, GHashTable *hoisted, gboolean fast)
{
  Printer p = {o, FALSE, hoist, hoisted, NULL, FALSE, 0, fast, NULL, NULL};
  return print_text(&p, e);
}

/* Where an element's inputs come from in the f64 evaluation: the values at j (elementwise), or
 * row i of the stored inputs with the row's reductions and scratch rows (row kernels). */
typedef struct {
  const double *views, *floats, *rowvals, *scratch;
  void *const *in;
  const gboolean *broadcast;
  TsDtype dtype;
  gint64 i, j, n;
  const TsShape *shape;
} Eval;

static double
eval_ex(const Ex *e, const Eval *c)
{
  switch (e->kind) {
  case EX_NUM:
    return e->num;
  case EX_VIEW:
    if (c->in == NULL)
      return c->views[e->index];
    return ts_numerics_get(c->dtype, c->in[e->index],
                           (gsize)(c->broadcast[e->index] ? c->j : c->i * c->n + c->j));
  case EX_FLOAT:
    return c->floats[e->index];
  case EX_ROW:
    return c->rowvals[e->index];
  case EX_SCRATCH:
    return c->scratch[(gint64)e->index * c->n + c->j];
  case EX_DIM:
    return (double)ts_shape_get(c->shape, e->dim);
  case EX_NEG:
    return -eval_ex(e->a, c);
  case EX_EXP:
    return exp(eval_ex(e->a, c));
  case EX_SQRT:
    return sqrt(eval_ex(e->a, c));
  case EX_MAX:
    return fmax(eval_ex(e->a, c), eval_ex(e->b, c));
  case EX_BIN: {
    const double a = eval_ex(e->a, c), b = eval_ex(e->b, c);
    return e->op == '+' ? a + b : e->op == '-' ? a - b : e->op == '*' ? a * b : a / b;
  }
  }
  return NAN;
}

double
ts__lang_count_flops(const Ex *e)
{
  if (e == NULL || e->kind == EX_NUM || e->kind == EX_VIEW || e->kind == EX_FLOAT ||
      e->kind == EX_ROW || e->kind == EX_SCRATCH || e->kind == EX_DIM)
    return 0;
  return 1 + ts__lang_count_flops(e->a) + ts__lang_count_flops(e->b);
}

/* ---- the op's functions ---- */

static const LangOp *
lang_op(const TsOpInstance *inst)
{
  return (const LangOp *)ts_op_instance_op(inst);
}

char *
ts__lang_gemm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const LangOp *o = lang_op(inst);
  char *how = ts__op_gemm.reference(inst, in, out);
  if (o->value == NULL)
    return how;
  const TsShape *s = ts_op_instance_shape(inst);
  const gint64 m = ts_shape_get(s, "M"), n = ts_shape_get(s, "N");
  const TsDtype dt = ts_op_instance_dtype(inst)->storage;
  double floats[G_N_ELEMENTS(o->float_names)] = {0};
  for (guint f = 0; f < o->def.n_floats; f++)
    floats[f] = ts__op_instance_float(inst, f);
  double views[TS_OP_MAX_ARGS + 1] = {0};
  Eval c = {.views = views, .floats = floats, .shape = s, .dtype = dt, .n = n};
  for (gint64 i = 0; i < m; i++)
    for (gint64 j = 0; j < n; j++) {
      double *x = &out[i * n + j];
      if (isnan(*x))
        continue; /* not sampled: stays unchecked (max(NaN, 0) would be 0) */
      views[o->gemm_c] = *x;
      for (guint t = 0; t <= TS_OP_MAX_ARGS; t++)
        if (t != o->gemm_c && o->input_of[t] >= 2 && o->input_of[t] < o->def.n_inputs)
          views[t] = ts_numerics_get(dt, in[o->input_of[t]], (gsize)j);
      *x = eval_ex(o->value, &c);
    }
  return how;
}

double
ts__lang_flops(const TsOpInstance *inst)
{
  const LangOp *o = lang_op(inst);
  return o->flops_per_element * (double)ts__op_instance_numel(inst, o->def.n_inputs);
}

/* The kernel's own expression in f64 over the stored inputs. */
char *
ts__lang_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const LangOp *o = lang_op(inst);
  const TsDtype dt = ts_op_instance_dtype(inst)->storage;
  const gint64 n = ts__op_instance_numel(inst, o->def.n_inputs);
  double floats[2] = {0, 0};
  for (guint f = 0; f < o->def.n_floats; f++)
    floats[f] = ts__op_instance_float(inst, f);
#pragma omp parallel for schedule(static)
  for (gint64 i = 0; i < n; i++) {
    double v[TS_OP_MAX_ARGS];
    for (guint a = 0; a < o->def.n_inputs; a++)
      v[a] = ts_numerics_get(dt, in[a], (gsize)i);
    const Eval c = {.views = v, .floats = floats};
    out[i] = eval_ex(o->value, &c);
  }
  return NULL;
}

char *
ts__lang_implemented_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  return lang_op(inst)->implements->reference(inst, in, out);
}

#define KNOB(name, def) ts_sched_point_get_int(point, name, def)

/* math("exact" | "fast"): "fast" takes a vector exp by the degree-4 polynomial of the built-in
 * softmax's math("fast") (7.6e-6 relative), which only a 16-bit output's rounding (2^-9 or
 * 2^-12) hides; an f32 kernel is refused it. */
static gboolean
lang_math_knob(const LangOp *o, const TsSchedPoint *point, gboolean *fast, GError **error)
{
  const char *how = ts_sched_point_get_str(point, "math", "exact");
  *fast = g_strcmp0(how, "fast") == 0;
  if (!*fast && g_strcmp0(how, "exact") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: math(\"%s\") is not one of \"exact\", \"fast\"", o->name, how);
    return FALSE;
  }
  const char *why = *fast ? ts__lang_fast_math_refusal(o) : NULL;
  if (why) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE, "%s: math(\"fast\") %s, and this "
                "kernel %s", o->name, TS_LANG_FAST_MATH_WHAT, why);
    return FALSE;
  }
  return TRUE;
}

const char *
ts__lang_fast_math_refusal(const LangOp *o)
{
  gboolean exp = ts__lang_has_exp(o->value);
  for (guint s = 0; o->steps && s < o->steps->len; s++)
    exp |= ts__lang_has_exp(g_array_index(o->steps, Step, s).expr);
  if (!exp)
    return "has no tile.exp";
  if (g_strcmp0(o->dtype, "bf16") != 0 && g_strcmp0(o->dtype, "f16") != 0)
    return "writes f32, whose rounding would show it";
  return NULL;
}

/* One program per BN elements, shared among the threads; a vectorised map within it. */
gboolean
ts__lang_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
               GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 bn = KNOB("BN", -1), vec = KNOB("vector", 8), threads = KNOB("threads", 1);
  if (bn <= 0 || vec <= 0 || threads <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs positive BN, vector and threads knobs", o->name);
    return FALSE;
  }
  gboolean fast;
  if (!lang_math_knob(o, point, &fast, error))
    return FALSE;
  const char *n = o->def.dims;
  ts_tile_kernel_define(k, "BN", bn);
  ts_tile_kernel_define(k, "VEC", vec);
  TsTileNode *par = ts_tile_parallel(k->body, threads);
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", n, "BN", TS_FOR_PARALLEL);
  g_autofree char *count = g_strdup_printf("min(BN, %s - i0)", n);
  g_autofree char *expr = fast ? print_cpu(o, o->value, NULL, NULL, TRUE) : g_strdup(o->expr);
  TsTileNode *map = ts_tile_map(i0, o->views[o->def.n_inputs], expr, count);
  for (guint a = 0; a <= o->def.n_inputs; a++)
    ts_tile_node_add_view(map, o->views[a], a < o->def.n_inputs ? o->def.inputs[a].name
                                                                : o->def.output.name, "i0");
  return ts__op_store_knob(o->name, point, map, error);
}

/* The row program in f64: each row's reductions and scratch rows in order, then its output. */
char *
ts__lang_reference_rows(const TsOpInstance *inst, void *const *in, double *out)
{
  const LangOp *o = lang_op(inst);
  const TsShape *shape = ts_op_instance_shape(inst);
  const gint64 m = ts_shape_get(shape, o->row_dim), n = ts_shape_get(shape, o->col_dim);
  double floats[2] = {0, 0};
  for (guint f = 0; f < o->def.n_floats; f++)
    floats[f] = ts__op_instance_float(inst, f);
#pragma omp parallel
  {
    double *rowvals = g_new0(double, MAX(1u, o->n_rowvars));
    double *scratch = g_new0(double, MAX(1, (gint64)o->n_scratch * n));
#pragma omp for schedule(static)
    for (gint64 i = 0; i < m; i++) {
      Eval c = {.floats = floats, .rowvals = rowvals, .scratch = scratch, .in = in,
                .broadcast = o->broadcast, .dtype = ts_op_instance_dtype(inst)->storage,
                .i = i, .n = n, .shape = shape};
      for (guint s = 0; s < o->steps->len; s++) {
        const Step *st = &g_array_index(o->steps, Step, s);
        double acc = st->max ? -INFINITY : 0.0;
        for (c.j = 0; c.j < n; c.j++) {
          const double v = eval_ex(st->expr, &c);
          if (st->scratch)
            scratch[(gint64)st->index * n + c.j] = v;
          else
            acc = st->max ? fmax(acc, v) : acc + v;
        }
        if (!st->scratch)
          rowvals[st->index] = acc;
      }
      for (c.j = 0; c.j < n; c.j++)
        out[i * n + c.j] = eval_ex(o->value, &c);
    }
    g_free(rowvals);
    g_free(scratch);
  }
  return NULL;
}

/* The views of row `row` of the inputs on node: NAME, or NAME<suffix> for the [M, N] inputs
 * (the next row's "_nx", the last one's "_pv"), the [N] ones under their own names once; and
 * with scratch_at, the scratch rows (w<k> from that offset of W<k>). */
static void
add_row_views_of(const LangOp *o, TsTileNode *node, const char *row, const char *suffix,
                 const char *scratch_at)
{
  g_autofree char *offset = g_strdup_printf(strchr(row, ' ') ? "(%s) * %s" : "%s * %s", row,
                                            o->col_dim);
  for (guint a = 0; a < o->def.n_inputs; a++) {
    g_autofree char *name = g_strconcat(o->views[a], suffix, NULL);
    if (!o->broadcast[a] || *suffix == '\0')
      ts_tile_node_add_view(node, name, o->def.inputs[a].name, o->broadcast[a] ? "0" : offset);
  }
  for (guint k = 0; scratch_at && k < o->n_scratch; k++) {
    g_autofree char *v = g_strdup_printf("w%u", k), *b = g_strdup_printf("W%u", k);
    ts_tile_node_add_view(node, v, b, scratch_at);
  }
}

static void
add_row_views(const LangOp *o, TsTileNode *node)
{
  add_row_views_of(o, node, "i", "", "0");
}

/* pipeline("none" | "next" | "skew"): with "next" a row's first step, a reduction, is taken
 * in the pass that writes the row before it (the output's map carries it over the next row's
 * inputs), so that pass reads memory while it writes, as a copy does, and the row's own passes
 * run from cache; a work item's first row is reduced before its loop. The built-in row ops do
 * the same (op-rowwise.c). "skew": lower_rows_skewed. */
static gboolean
lang_pipeline_knob(const LangOp *o, const TsSchedPoint *point, gboolean *next, gboolean *skew,
                   GError **error)
{
  if (!ts__op_pipeline_knob(o->name, point, next, skew, error))
    return FALSE;
  if ((*next || *skew) && !ts__lang_pipeline_applies(o)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: pipeline(\"%s\") carries a row's first reduction into the pass before "
                "it, and this kernel's first step is %s", o->name, *next ? "next" : "skew",
                o->steps->len == 0 ? "its output" : "a scratch row");
    return FALSE;
  }
  const char *why = *skew ? ts__lang_skew_refusal(o) : NULL;
  if (why) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: pipeline(\"skew\") %s, and this kernel %s", o->name, TS_LANG_SKEW_WHAT,
                why);
    return FALSE;
  }
  return TRUE;
}

/* Step `sum` is the plain row sum of step `w`, a scratch row (softmax's s = row_sum(e)). */
static gboolean
sums_scratch_row(const Step *sum, const Step *w)
{
  return w->scratch && !sum->scratch && !sum->max && sum->expr->kind == EX_SCRATCH &&
         sum->expr->index == w->index;
}

static gboolean
reads_row_value(const Ex *e, guint index)
{
  return e && ((e->kind == EX_ROW && e->index == index) || reads_row_value(e->a, index) ||
               reads_row_value(e->b, index));
}

const char *
ts__lang_skew_refusal(const LangOp *o)
{
  if (!ts__lang_pipeline_applies(o))
    return "does not start its rows with a reduction";
  const guint n = o->steps->len;
  const Step *first = &g_array_index(o->steps, Step, 0);
  const Step *w = n >= 2 ? &g_array_index(o->steps, Step, 1) : NULL;
  const Step *sum = n >= 3 ? &g_array_index(o->steps, Step, 2) : NULL;
  if (w == NULL || !w->scratch || n > 3 || (sum && !sums_scratch_row(sum, w)))
    return "is not a reduction, one scratch row (its row_sum, if any, right after it) and "
           "the output";
  if (reads_row_value(o->value, first->index))
    return "writes its output from the first reduction, which the pass has moved on to the "
           "next row";
  return NULL;
}

gboolean
ts__lang_pipeline_applies(const LangOp *o)
{
  return o->steps && o->steps->len > 0 && !g_array_index(o->steps, Step, 0).scratch;
}

/* The output's per-row parts as a pass would print them (into a detached block, as lets), and
 * its text: prev for the drain of pipeline("skew"), which writes the row before. */
static char *
print_output(const LangOp *o, gboolean prev, guint base, gboolean fast, TsTileNode **lets)
{
  *lets = ts_tile_block_new();
  g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                        g_free);
  Printer p = {o, FALSE, *lets, hoisted, prev ? "_pv" : NULL, prev, base, fast, NULL, NULL};
  return print_text(&p, o->value);
}

/* The buffer of the first [M, N] input: the rows a pass prefetches are its. */
static const char *
first_row_input(const LangOp *o)
{
  for (guint a = 0; a < o->def.n_inputs; a++)
    if (!o->broadcast[a])
      return o->def.inputs[a].name;
  return NULL;
}

/* at: let p<k> = P0[k] for each of the last row's parts (prevs' lets, in order). */
static void
load_last_parts(TsTileNode *at, const TsTileNode *prevs)
{
  for (guint p = 0; p < prevs->children->len; p++) {
    const TsTileNode *let = g_ptr_array_index(prevs->children, p);
    g_autofree char *slot = g_strdup_printf("P0[%u]", p);
    ts_tile_let(at, let->var, TS_DTYPE_F32, slot);
  }
}

/* pipeline("skew"), as the built-in softmax's: row i's scratch pass (from cache) also takes
 * row i + 1's first reduction (from memory) and writes row i - 1's output from its scratch
 * row (to memory), so the one pass bound by arithmetic carries all of the memory traffic. A
 * thread keeps two scratch rows, this row's and the last one's, and the last row's per-row
 * parts of the output in P0.
 *   for i0 in range(0, M, BM) parallel:
 *     r0 = reduce row i0
 *     w[0] = step of row i0, carry r0 = reduce row i0 + 1; h... ; P0[k] = h<k>
 *     for i in range(i0 + 1, iend):
 *       p<k> = P0[k]
 *       w[this] = step of row i, carry r0 = reduce row i + 1, drain Y[i - 1] = out(w[last], p)
 *       h... ; P0[k] = h<k>
 *     p<k> = P0[k]; Y[iend - 1] = out(w[last], p) */
static gboolean
lower_rows_skewed(const LangOp *o, const TsSchedPoint *point, gboolean fast, TsTileKernel *k,
                  TsTileNode *par, GError **error)
{
  const char *m = o->row_dim, *n = o->col_dim, *y = o->views[o->def.n_inputs];
  const Step *first = &g_array_index(o->steps, Step, 0), *ws = &g_array_index(o->steps, Step, 1);
  const Step *sum = o->steps->len == 3 ? &g_array_index(o->steps, Step, 2) : NULL;
  gboolean stream;
  if (!ts__op_store_stream(o->name, point, &stream, error))
    return FALSE;
  /* The output's parts are numbered after the scratch step's (both are lets of one row's
   * scope): the step printed once aside tells how many it has. */
  g_autoptr(GHashTable) aside = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  TsTileNode *step_lets = ts_tile_block_new();
  g_free(print_cpu(o, ws->expr, step_lets, aside, fast));
  ts_tile_node_free(step_lets);
  const guint base = g_hash_table_size(aside);
  TsTileNode *lets, *prevs;
  g_free(print_output(o, FALSE, base, fast, &lets));
  g_autofree char *drain = print_output(o, TRUE, base, fast, &prevs);
  g_autofree char *wb = g_strdup_printf("W%u", ws->index), *wv = g_strdup_printf("w%u", ws->index);
  g_autofree char *wpv = g_strdup_printf("w%u_pv", ws->index);
  g_autofree char *rows2 = g_strdup_printf("2 * %s", n);
  ts_tile_alloc_row(par, k, wb, rows2, "two f32 rows: this row's and the last one's");
  g_autofree char *n_parts = g_strdup_printf("%u", MAX(1u, lets->children->len));
  ts_tile_alloc(par, k, "P0", TS_MEM_REGISTER, TS_DTYPE_F32, n_parts, TRUE,
                "the last row's per-row parts of the output");
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", m, "BM", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *last = g_strdup_printf("min(i0 + BM, %s)", m);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, last);
  g_autofree char *first_var = g_strdup_printf("r%u", first->index);
  g_autofree char *first_text = print_cpu(o, first->expr, NULL, NULL, fast);
  TsTileNode *r = ts_tile_reduce(i0, first_var, first->max ? "max" : "sum", first_text, n);
  add_row_views_of(o, r, "i0", "", NULL);
  const Printer carry = {o, FALSE, NULL, NULL, "_nx", FALSE, 0, fast, NULL, NULL};
  g_autofree char *carried = print_text(&carry, first->expr);
  const char *ahead_of = first_row_input(o);
  for (int peeled = 1; peeled >= 0; peeled--) {
    TsTileNode *at = peeled ? i0 : ts_tile_for(i0, "i", "i0 + 1", "iend", "1", TS_FOR_SERIAL);
    const char *i = peeled ? "i0" : "i";
    g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                          g_free);
    g_autofree char *text = print_cpu(o, ws->expr, at, hoisted, fast);
    if (!peeled)
      load_last_parts(at, prevs);
    TsTileNode *e = ts_tile_map(at, wv, text, n);
    if (sum) {
      g_autofree char *sv = g_strdup_printf("r%u", sum->index);
      ts_tile_map_set_sum(e, sv);
    }
    g_autofree char *w_at = peeled ? g_strdup("0") : g_strdup_printf("(i - i0) %% 2 * %s", n);
    add_row_views_of(o, e, i, "", w_at);
    ts_tile_map_add_carry(e, first_var, first->max ? "max" : "sum", carried);
    g_autofree char *nx = g_strdup_printf("min(%s + 1, iend - 1)", i);
    add_row_views_of(o, e, nx, "_nx", NULL);
    if (ahead_of) {
      g_autofree char *ahead = g_strdup_printf("%s + min(%s + 2, %s - 1) * %s", ahead_of, i, m, n);
      ts_tile_map_set_prefetch_l2(e, ahead);
    }
    if (!peeled) {
      ts_tile_map_set_drain(e, y, drain, stream);
      g_autofree char *y_at = g_strdup_printf("(i - 1) * %s", n);
      ts_tile_node_add_view(e, y, o->def.output.name, y_at);
      g_autofree char *wp_at = g_strdup_printf("(i - i0 + 1) %% 2 * %s", n);
      ts_tile_node_add_view(e, wpv, wb, wp_at);
      add_row_views_of(o, e, "i - 1", "_pv", NULL);
    }
    for (guint p = 0; p < lets->children->len; p++) {
      const TsTileNode *let = g_ptr_array_index(lets->children, p);
      g_autofree char *slot = g_strdup_printf("%u", p);
      ts_tile_let(at, let->var, TS_DTYPE_F32, let->expr);
      ts_tile_set(at, "P0", slot, let->var);
    }
  }
  load_last_parts(i0, prevs); /* the item's last row, after the loop */
  ts_tile_node_free(lets);
  ts_tile_node_free(prevs);
  TsTileNode *map = ts_tile_map(i0, y, drain, n);
  g_autofree char *y_at = g_strdup_printf("(iend - 1) * %s", n);
  ts_tile_node_add_view(map, y, o->def.output.name, y_at);
  g_autofree char *wp_at = g_strdup_printf("(iend - 1 - i0) %% 2 * %s", n);
  ts_tile_node_add_view(map, wpv, wb, wp_at);
  add_row_views_of(o, map, "iend - 1", "", NULL);
  add_row_views_of(o, map, "iend - 1", "_pv", NULL);
  if (stream)
    ts_tile_map_set_stream(map);
  return TRUE;
}

const char *
ts__lang_jam_refusal(const LangOp *o)
{
  if (!ts__lang_pipeline_applies(o))
    return "does not start its rows with a reduction";
  if (o->n_scratch > 0)
    return "keeps a scratch row (a kernel of softmax's shape takes pipeline(\"skew\") instead)";
  return NULL;
}

static gboolean
lang_jam_knob(const LangOp *o, gint64 jam, gboolean next, GError **error)
{
  const char *why = jam == 2 ? ts__lang_jam_refusal(o) : NULL;
  if (jam != 1 && jam != 2)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: jam(%" G_GINT64_FORMAT ") is not 1 or 2 rows a pass", o->name, jam);
  else if (why)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE, "%s: jam(2) %s, and this kernel %s",
                o->name, TS_LANG_JAM_WHAT, why);
  else if (jam == 2 && !next)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: jam(2) carries the next pair's first reductions in the pair's output pass: "
                "it runs with pipeline(\"next\")", o->name);
  else
    return TRUE;
  return FALSE;
}

/* jam(2), as the built-in layernorm's: a work item's rows in pairs, row i and i1 = i + 1 (the
 * item's last row paired with itself where its count is odd: computed twice, the same bytes),
 * each row's reductions as with jam(1), then one output pass for both, which reads the [N]
 * inputs (layernorm's G and Bt) once for the two rows and carries the next pair's first
 * reductions. The second row's values and parts are named r<k>_b, h<k>_b, its views NAME_b.
 *   for i0 in range(0, M, BM) parallel:
 *     r0, r0_b = first reductions of rows i0, min(i0 + 1, iend - 1)
 *     for i in range(i0, iend, 2):
 *       i1 = min(i + 1, iend - 1); the other reductions of row i, then of row i1
 *       y = out(row i) and y_b = out(row i1), carry r0 = over row i + 2, r0_b = over i + 3 */
static gboolean
lower_rows_jammed(const LangOp *o, const TsSchedPoint *point, gboolean fast, TsTileKernel *k,
                  TsTileNode *par, GError **error)
{
  const char *m = o->row_dim, *n = o->col_dim, *y = o->views[o->def.n_inputs];
  const Step *first = &g_array_index(o->steps, Step, 0);
  const char *op = first->max ? "max" : "sum";
  gboolean stream;
  if (!ts__op_store_stream(o->name, point, &stream, error))
    return FALSE;
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", m, "BM", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *last = g_strdup_printf("min(i0 + BM, %s)", m);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, last);
  static const char *const sfx[2] = {NULL, "_b"};
  static const char *const item_rows[2] = {"i0", "min(i0 + 1, iend - 1)"};
  g_autofree char *first_text = print_cpu(o, first->expr, NULL, NULL, fast);
  char *first_var[2];
  for (int h = 0; h < 2; h++) {
    first_var[h] = g_strdup_printf("r%u%s", first->index, h ? "_b" : "");
    TsTileNode *r = ts_tile_reduce(i0, first_var[h], op, first_text, n);
    add_row_views_of(o, r, item_rows[h], "", NULL);
  }
  TsTileNode *row = ts_tile_for(i0, "i", "i0", "iend", "2", TS_FOR_SERIAL);
  ts_tile_let(row, "i1", TS_DTYPE_INT32, "min(i + 1, iend - 1)");
  GHashTable *hoisted[2];
  for (int h = 0; h < 2; h++) {
    hoisted[h] = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    const Printer p = {o, FALSE, row, hoisted[h], NULL, FALSE, 0, fast, sfx[h], NULL};
    for (guint s = 1; s < o->steps->len; s++) {
      const Step *st = &g_array_index(o->steps, Step, s);
      g_autofree char *text = print_text(&p, st->expr);
      g_autofree char *var = g_strdup_printf("r%u%s", st->index, h ? "_b" : "");
      TsTileNode *r = ts_tile_reduce(row, var, st->max ? "max" : "sum", text, n);
      add_row_views_of(o, r, h ? "i1" : "i", "", NULL);
    }
  }
  char *out[2];
  for (int h = 0; h < 2; h++) {
    const Printer p = {o, FALSE, row, hoisted[h], sfx[h], FALSE, 0, fast, sfx[h], NULL};
    out[h] = print_text(&p, o->value);
  }
  TsTileNode *map = ts_tile_map(row, y, out[0], n);
  g_autofree char *y_b = g_strconcat(y, "_b", NULL);
  ts_tile_map_set_drain(map, y_b, out[1], stream);
  add_row_views_of(o, map, "i", "", NULL);
  add_row_views_of(o, map, "i1", "_b", NULL);
  g_autofree char *y_at = g_strdup_printf("i * %s", n), *y_b_at = g_strdup_printf("i1 * %s", n);
  ts_tile_node_add_view(map, y, o->def.output.name, y_at);
  ts_tile_node_add_view(map, y_b, o->def.output.name, y_b_at);
  static const char *const carry_sfx[2] = {"_nx", "_nx2"};
  static const char *const carry_rows[2] = {"min(i + 2, iend - 1)", "min(i + 3, iend - 1)"};
  const char *ahead_of = first_row_input(o);
  for (int h = 0; h < 2; h++) {
    const Printer p = {o, FALSE, NULL, NULL, carry_sfx[h], FALSE, 0, fast, NULL, NULL};
    g_autofree char *carried = print_text(&p, first->expr);
    ts_tile_map_add_carry(map, first_var[h], op, carried);
    add_row_views_of(o, map, carry_rows[h], carry_sfx[h], NULL);
    if (ahead_of) { /* the pair after the next, into L2 */
      g_autofree char *ahead = g_strdup_printf("%s + min(i + %d, %s - 1) * %s", ahead_of, 4 + h,
                                               m, n);
      if (h == 0)
        ts_tile_map_set_prefetch_l2(map, ahead);
      else
        ts_tile_map_add_prefetch(map, ahead);
    }
  }
  if (stream)
    ts_tile_map_set_stream(map);
  for (int h = 0; h < 2; h++) {
    g_free(first_var[h]);
    g_hash_table_unref(hoisted[h]);
    g_free(out[h]);
  }
  return TRUE;
}

const char *
ts__lang_tile_refusal(const LangOp *o)
{
  if (!ts__lang_pipeline_applies(o))
    return "does not start its rows with a reduction";
  if (o->n_scratch > 0)
    return "keeps a scratch row, which a tile of BM rows would need BM of";
  for (guint a = 0; a < o->def.n_inputs; a++)
    if (o->broadcast[a])
      return NULL;
  return "has no [N] input to widen";
}

/* apply("row" | "tile"): TRUE for "tile". */
static gboolean
lang_apply_knob(const LangOp *o, const TsSchedPoint *point, gboolean carried, gboolean *tiled,
                GError **error)
{
  const char *how = ts_sched_point_get_str(point, "apply", "row");
  const char *why;
  *tiled = g_strcmp0(how, "tile") == 0;
  if (!*tiled && g_strcmp0(how, "row") != 0)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: apply(\"%s\") is not one of \"row\", \"tile\"", o->name, how);
  else if (*tiled && (why = ts__lang_tile_refusal(o)))
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE, "%s: apply(\"tile\") %s, and this "
                "kernel %s", o->name, TS_LANG_TILE_WHAT, why);
  else if (*tiled && carried)
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: apply(\"tile\") takes the reductions of all of a work item's rows before "
                "its tiles, so no pass carries the next row's: use pipeline(\"none\")", o->name);
  else
    return TRUE;
  return FALSE;
}

/* apply("tile"), as the built-in layernorm's: a work item first takes its rows' reductions
 * (each row's passes from memory), keeping per row the output's per-row parts (ST); then
 * writes its rows in tiles of TN columns, each [N] input's tile widened to f32 once (into the
 * thread's T<a>) for all BM rows, where a row's pass converts it again for every row: in a
 * 16-bit layernorm those conversions bound the last pass. The tiles read the rows again, from
 * L2.
 *   for i0 in range(0, M, BM) parallel:
 *     for i in range(i0, iend): r... = the row's reductions; h... = its parts; ST[..] = h...
 *     for jc in range(0, N, TN):
 *       t<a>[0:nc] = P<a>[jc:jc + nc] for each [N] input
 *       for i in range(i0, iend): h... = ST[..]; Y[i, jc:jc + nc] = out(row i, t<a>) */
static gboolean
lower_rows_tiled(const LangOp *o, const TsSchedPoint *point, gboolean fast, TsTileKernel *k,
                 TsTileNode *par, GError **error)
{
  const char *m = o->row_dim, *n = o->col_dim, *y = o->views[o->def.n_inputs];
  /* the output's parts first, into a detached block, numbered after the steps' (printed once
   * aside for their count), and which row values it reads as themselves */
  g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                        g_free);
  TsTileNode *aside = ts_tile_block_new();
  for (guint s = 0; s < o->steps->len; s++)
    g_free(print_cpu(o, g_array_index(o->steps, Step, s).expr, aside, hoisted, fast));
  ts_tile_node_free(aside);
  const guint base = g_hash_table_size(hoisted);
  g_autofree gboolean *rows_read = g_new0(gboolean, MAX(1u, o->n_rowvars));
  g_autoptr(GHashTable) out_hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                                            g_free);
  TsTileNode *lets = ts_tile_block_new();
  const Printer pr = {o, FALSE, lets, out_hoisted, NULL, FALSE, base, fast, NULL, rows_read};
  g_autofree char *text = print_text(&pr, o->value);
  /* the values a row keeps: its parts, then the row values read as themselves */
  g_autoptr(GPtrArray) kept = g_ptr_array_new_with_free_func(g_free);
  for (guint p = 0; p < lets->children->len; p++)
    g_ptr_array_add(kept, g_strdup(((const TsTileNode *)g_ptr_array_index(lets->children, p))->var));
  for (guint v = 0; v < o->n_rowvars; v++)
    if (rows_read[v])
      g_ptr_array_add(kept, g_strdup_printf("r%u", v));

  ts_tile_kernel_define(k, "TN", TS_OP_ROW_TILE_N);
  for (guint a = 0; a < o->def.n_inputs; a++)
    if (o->broadcast[a]) {
      g_autofree char *tb = g_strdup_printf("T%u", a);
      ts_tile_alloc_row(par, k, tb, "TN", "one f32 column tile");
    }
  g_autofree char *st_size = g_strdup_printf("%u * BM", MAX(1u, kept->len));
  ts_tile_alloc(par, k, "ST", TS_MEM_REGISTER, TS_DTYPE_F32, st_size, TRUE,
                "the output's per-row parts, per row");
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", m, "BM", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *last = g_strdup_printf("min(i0 + BM, %s)", m);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, last);
  TsTileNode *rows = ts_tile_for(i0, "i", "i0", "iend", "1", TS_FOR_SERIAL);
  g_hash_table_remove_all(hoisted);
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    g_autofree char *step = print_cpu(o, st->expr, rows, hoisted, fast);
    g_autofree char *var = g_strdup_printf("r%u", st->index);
    add_row_views(o, ts_tile_reduce(rows, var, st->max ? "max" : "sum", step, n));
  }
  for (guint p = 0; p < lets->children->len; p++) {
    const TsTileNode *let = g_ptr_array_index(lets->children, p);
    ts_tile_let(rows, let->var, TS_DTYPE_F32, let->expr);
  }
  ts_tile_node_free(lets);
  TsTileNode *jc = ts_tile_for(i0, "jc", "0", n, "TN", TS_FOR_SERIAL);
  g_autofree char *nc = g_strdup_printf("min(TN, %s - jc)", n);
  ts_tile_let(jc, "nc", TS_DTYPE_INT32, nc);
  for (guint a = 0; a < o->def.n_inputs; a++)
    if (o->broadcast[a]) {
      g_autofree char *tb = g_strdup_printf("T%u", a), *tv = g_strdup_printf("t%u", a);
      TsTileNode *widen = ts_tile_map(jc, tv, o->views[a], "nc");
      ts_tile_node_add_view(widen, o->views[a], o->def.inputs[a].name, "jc");
      ts_tile_node_add_view(widen, tv, tb, "0");
    }
  TsTileNode *tile = ts_tile_for(jc, "i", "i0", "iend", "1", TS_FOR_SERIAL);
  for (guint p = 0; p < kept->len; p++) {
    g_autofree char *slot = g_strdup_printf("%u * (i - i0) + %u", kept->len, p);
    g_autofree char *load = g_strdup_printf("ST[%s]", slot);
    ts_tile_set(rows, "ST", slot, g_ptr_array_index(kept, p));
    ts_tile_let(tile, g_ptr_array_index(kept, p), TS_DTYPE_F32, load);
  }
  TsTileNode *map = ts_tile_map(tile, y, text, "nc");
  g_autofree char *at = g_strdup_printf("i * %s + jc", n);
  for (guint a = 0; a < o->def.n_inputs; a++) {
    g_autofree char *tb = g_strdup_printf("T%u", a);
    ts_tile_node_add_view(map, o->views[a], o->broadcast[a] ? tb : o->def.inputs[a].name,
                          o->broadcast[a] ? "0" : at);
  }
  ts_tile_node_add_view(map, y, o->def.output.name, at);
  return ts__op_store_knob(o->name, point, map, error);
}

/* BM rows a program, shared among the threads as they free up; in each row, the steps in
 * order (a reduction, or a scratch row of the thread's own) and the output's map, with every
 * per-row part of an element computed once before the pass that uses it. */
gboolean
ts__lang_lower_cpu_rows(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                    GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 bm = KNOB("BM", -1), vec = KNOB("vector", 8), threads = KNOB("threads", 1);
  if (bm <= 0 || vec <= 0 || threads <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs positive BM, vector and threads knobs", o->name);
    return FALSE;
  }
  gboolean next, skew, fast, tiled;
  if (!lang_pipeline_knob(o, point, &next, &skew, error) ||
      !lang_math_knob(o, point, &fast, error) ||
      !lang_apply_knob(o, point, next || skew, &tiled, error))
    return FALSE;
  const char *m = o->row_dim, *n = o->col_dim;
  ts_tile_kernel_define(k, "BM", bm);
  ts_tile_kernel_define(k, "VEC", vec);
  TsTileNode *par = ts_tile_parallel(k->body, threads);
  const gint64 jam = KNOB("jam", 1);
  if (!lang_jam_knob(o, jam, next, error))
    return FALSE;
  if (skew)
    return lower_rows_skewed(o, point, fast, k, par, error);
  if (jam == 2)
    return lower_rows_jammed(o, point, fast, k, par, error);
  if (tiled)
    return lower_rows_tiled(o, point, fast, k, par, error);
  for (guint s = 0; s < o->n_scratch; s++) {
    g_autofree char *name = g_strdup_printf("W%u", s);
    ts_tile_alloc_row(par, k, name, n, "one f32 row");
  }
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", m, "BM", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *last = g_strdup_printf("min(i0 + BM, %s)", m);
  g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  const Step *first = next ? &g_array_index(o->steps, Step, 0) : NULL;
  g_autofree char *first_var = first ? g_strdup_printf("r%u", first->index) : NULL;
  if (next) { /* the work item's first row, before its loop */
    ts_tile_let(i0, "iend", TS_DTYPE_INT32, last);
    g_autofree char *text = print_cpu(o, first->expr, i0, hoisted, fast);
    TsTileNode *r = ts_tile_reduce(i0, first_var, first->max ? "max" : "sum", text, n);
    add_row_views_of(o, r, "i0", "", "0");
  }
  TsTileNode *row = ts_tile_for(i0, "i", "i0", next ? "iend" : last, "1", TS_FOR_SERIAL);
  TsTileNode *prev = NULL;
  for (guint s = next ? 1 : 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    g_autofree char *text = print_cpu(o, st->expr, row, hoisted, fast);
    TsTileNode *node;
    if (st->scratch) {
      g_autofree char *dst = g_strdup_printf("w%u", st->index);
      node = ts_tile_map(row, dst, text, n);
    } else {
      g_autofree char *var = g_strdup_printf("r%u", st->index);
      /* The sum of the scratch row just written (softmax's s = row_sum(e)) is taken in the
       * pass that writes it: one pass over the row fewer. */
      if (!st->max && prev && prev->op == TS_TILE_MAP && prev->var == NULL &&
          g_strcmp0(prev->dst, text) == 0 &&
          g_ptr_array_index(row->children, row->children->len - 1) == prev) {
        ts_tile_map_set_sum(prev, var);
        prev = NULL;
        continue;
      }
      node = ts_tile_reduce(row, var, st->max ? "max" : "sum", text, n);
    }
    add_row_views(o, node);
    prev = node;
  }
  g_autofree char *text = print_cpu(o, o->value, row, hoisted, fast);
  TsTileNode *map = ts_tile_map(row, o->views[o->def.n_inputs], text, n);
  add_row_views(o, map);
  g_autofree char *offset = g_strdup_printf("i * %s", n);
  ts_tile_node_add_view(map, o->views[o->def.n_inputs], o->def.output.name, offset);
  if (next) {
    /* the next row of the item (its last row re-reads itself, from cache), and the rows three
     * ahead into L2, so the next map's reads find them there */
    const Printer p = {o, FALSE, i0, hoisted, "_nx", FALSE, 0, fast, NULL, NULL};
    g_autofree char *carried = print_text(&p, first->expr);
    ts_tile_map_add_carry(map, first_var, first->max ? "max" : "sum", carried);
    add_row_views_of(o, map, "min(i + 1, iend - 1)", "_nx", NULL);
  }
  /* The last pass over row i asks for row i + 1 of the first [M, N] input, whose first pass
   * would otherwise wait on memory (as the built-in row ops do: 1.08-1.20x); a carrying pass
   * reads that row itself and asks for the one three ahead, into L2. */
  const char *ahead_of = first_row_input(o);
  if (ahead_of) {
    g_autofree char *ahead = g_strdup_printf("%s + min(i + %d, %s - 1) * %s", ahead_of,
                                             next ? 3 : 1, m, n);
    if (next)
      ts_tile_map_set_prefetch_l2(map, ahead);
    else
      ts_tile_map_set_prefetch(map, ahead);
  }
  return ts__op_store_knob(o->name, point, map, error);
}

const TsLangCpuKnob ts__lang_cpu_knobs[TS_LANG_N_CPU_KNOBS] = {
  {"pipeline", "none", 0, "a row's passes from cache; CUDA holds a row in registers"},
  {"store", "cached", 0, "non-temporal stores; CUDA's stores are coalesced as they are"},
  {"math", "exact", 0, "the AVX polynomial exp"},
  {"jam", NULL, 1, "two rows' output passes as one"},
  {"apply", "row", 0, "a tile of rows' [N] inputs widened once"},
};

/* A CUDA space holds each CPU knob at one value; a point asking for another is refused rather
 * than run as the same kernel. */
static gboolean
cuda_leaves_cpu_knobs(const LangOp *o, const TsSchedPoint *point, GError **error)
{
  for (guint c = 0; c < TS_LANG_N_CPU_KNOBS; c++) {
    const TsLangCpuKnob *kn = &ts__lang_cpu_knobs[c];
    g_autofree char *asked = NULL, *held = NULL;
    if (kn->str) {
      const char *how = ts_sched_point_get_str(point, kn->knob, kn->str);
      if (g_strcmp0(how, kn->str) == 0)
        continue;
      asked = g_strdup_printf("\"%s\"", how);
      held = g_strdup_printf("\"%s\"", kn->str);
    } else {
      const gint64 how = ts_sched_point_get_int(point, kn->knob, kn->i);
      if (how == kn->i)
        continue;
      asked = g_strdup_printf("%" G_GINT64_FORMAT, how);
      held = g_strdup_printf("%" G_GINT64_FORMAT, kn->i);
    }
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: %s(%s) is a CPU knob (%s); on CUDA the space has %s(%s)", o->name, kn->knob,
                asked, kn->what, kn->knob, held);
    return FALSE;
  }
  return TRUE;
}

/* One CTA per BN elements, each thread holding PER * VEC elements of every tile in registers
 * (the row tile of ts_cuda_rows.cuh, one row of N columns): the inputs loaded, the map applied
 * element by element, the output stored. */
gboolean
ts__lang_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                GError **error)
{
  const LangOp *o = lang_op(inst);
  if (!cuda_leaves_cpu_knobs(o, point, error))
    return FALSE;
  TsCudaRowTile t;
  if (!ts__cuda_map_tile(o->name, ts_shape_get(ts_op_instance_shape(inst), o->def.dims),
                         KNOB("BN", -1), KNOB("warps", 4), KNOB("vector", 4), k, &t, error))
    return FALSE;
  const gint64 threads = t.threads, gx = t.gx;
  g_autofree char *tile = g_strdup_printf("T=%s,BM=1,THREADS=THREADS,VEC=VEC,COLS=BN,NCOLS=NCOLS",
                                          ts_dtype_name(ts_op_instance_dtype(inst)->storage));
  TsTileNode *g = ts_tile_grid(k->body, gx, 1, 1, threads, 0);
  const guint n_in = o->def.n_inputs;
  g_autoptr(GPtrArray) regs = g_ptr_array_new_with_free_func(g_free);
  for (guint a = 0; a <= n_in; a++) {
    g_ptr_array_add(regs, g_strdup_printf("r_%s", o->views[a]));
    ts_tile_alloc(g, k, g_ptr_array_index(regs, a), TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC",
                  FALSE, a < n_in ? "vector p at element (p * THREADS + thread) * VEC of the tile"
                                  : "the output's elements, as the inputs'");
  }
  ts_tile_let(g, "i0", TS_DTYPE_INT32, "bx * BN");
  for (guint a = 0; a < n_in; a++)
    ts_tile_intrinsic(g, "rows_load", tile, (char *)g_ptr_array_index(regs, a),
                      o->def.inputs[a].name, "0", "i0", "1", o->def.dims, NULL);
  g_autofree char *expr = ts__lang_print(o, o->value, TRUE, NULL, NULL);
  TsTileNode *map = ts_tile_map(g, o->views[n_in], expr, "PER * VEC");
  for (guint a = 0; a <= n_in; a++)
    ts_tile_node_add_view(map, o->views[a], g_ptr_array_index(regs, a), "0");
  ts_tile_intrinsic(g, "rows_store", tile, o->def.output.name, "0", "i0", "1",
                    (char *)g_ptr_array_index(regs, n_in), "1.0f", "nullptr", "nullptr", NULL);
  return TRUE;
}


/* The map's views on CUDA: each input's register tile, each scratch row's. */
static void
add_reg_views(const LangOp *o, TsTileNode *node)
{
  for (guint a = 0; a < o->def.n_inputs; a++) {
    g_autofree char *reg = g_strdup_printf("r_%s", o->views[a]);
    ts_tile_node_add_view(node, o->views[a], reg, "0");
  }
  for (guint k = 0; k < o->n_scratch; k++) {
    g_autofree char *v = g_strdup_printf("w%u", k), *reg = g_strdup_printf("r_w%u", k);
    ts_tile_node_add_view(node, v, reg, "0");
  }
}

static const Ex *
scratch_expr(const LangOp *o, guint index)
{
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    if (st->scratch && st->index == index)
      return st->expr;
  }
  g_assert_not_reached();
}

/* What a streamed pass over e reads: the inputs, and the scratch rows with their own reads
 * (a streamed pass recomputes each scratch row it reads, tile by tile). */
static void
pass_reads(const LangOp *o, const Ex *e, gboolean *views, gboolean *scratch)
{
  if (e == NULL)
    return;
  if (e->kind == EX_VIEW)
    views[e->index] = TRUE;
  if (e->kind == EX_SCRATCH && !scratch[e->index]) {
    scratch[e->index] = TRUE;
    pass_reads(o, scratch_expr(o, e->index), views, scratch);
  }
  pass_reads(o, e->a, views, scratch);
  pass_reads(o, e->b, views, scratch);
}

/* A row too long for the registers (and one row a CTA): a pass over its column tiles of COLS
 * for e, loading at c0 the inputs e reads, recomputing the scratch rows it reads (in step
 * order) and mapping e into `dst` (register tile r_<dst>). The texts are printed before the
 * loop is made, so the per-row parts they hoist are computed once, ahead of it. */
static TsTileNode *
stream_pass(const LangOp *o, TsTileNode *g, GHashTable *hoisted, const char *ttile, const Ex *e,
            const char *dst)
{
  gboolean views[TS_OP_MAX_ARGS + 1] = {FALSE};
  g_autofree gboolean *scratch = g_new0(gboolean, o->n_scratch + 1);
  pass_reads(o, e, views, scratch);
  g_autoptr(GPtrArray) maps = g_ptr_array_new_with_free_func(g_free);
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    if (st->scratch && scratch[st->index])
      g_ptr_array_add(maps, ts__lang_print(o, st->expr, TRUE, g, hoisted));
  }
  g_autofree char *text = ts__lang_print(o, e, TRUE, g, hoisted);
  TsTileNode *c = ts_tile_for(g, "c0", "0", o->col_dim, "COLS", TS_FOR_SERIAL);
  for (guint a = 0; a < o->def.n_inputs; a++) {
    if (!views[a])
      continue;
    g_autofree char *reg = g_strdup_printf("r_%s", o->views[a]);
    if (o->broadcast[a])
      ts_tile_intrinsic(c, "rows_load_bcast", ttile, reg, o->def.inputs[a].name, "c0", NULL);
    else
      ts_tile_intrinsic(c, "rows_load", ttile, reg, o->def.inputs[a].name, "r0_", "c0",
                        o->row_dim, o->col_dim, NULL);
  }
  guint m = 0;
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    if (!st->scratch || !scratch[st->index])
      continue;
    g_autofree char *w = g_strdup_printf("w%u", st->index);
    add_reg_views(o, ts_tile_map(c, w, g_ptr_array_index(maps, m++), "PER * VEC"));
  }
  g_autofree char *reg = g_strdup_printf("r_%s", dst);
  TsTileNode *map = ts_tile_map(c, dst, text, "PER * VEC");
  add_reg_views(o, map);
  ts_tile_node_add_view(map, dst, reg, "0");
  return c;
}

/* The row tile's template constants (ts_cuda_rows.cuh). */
#define ROW_TILE "BM=BM,THREADS=THREADS,VEC=VEC,COLS=COLS,NCOLS=NCOLS"

/* Row value r<k> of a reduction step, at its identity. */
static void
reduction_let(TsTileNode *g, const Step *st)
{
  g_autofree char *var = g_strdup_printf("r%u", st->index);
  ts_tile_let(g, var, TS_DTYPE_F32, st->max ? "__int_as_float(0xff800000)" : "0.0f");
}

/* Folds the step's operand tile r_t at column c0 into r<k> (under `at`, a pass's body), then
 * reduces r<k> across the row's threads (under g, after the pass); consecutive reductions of a
 * row that spans warps alternate the two shared slots (*n counts them). */
static void
reduce_row(TsTileNode *g, TsTileNode *at, const Step *st, const char *c0, gboolean shared,
           guint *n)
{
  const char *op = st->max ? "ts_max" : "ts_sum";
  g_autofree char *var = g_strdup_printf("r%u", st->index);
  g_autofree char *acc = g_strdup_printf("OP=%s," ROW_TILE, op);
  ts_tile_intrinsic(at, "rows_accum", acc, var, "r_t", c0, NULL);
  g_autofree char *all = g_strdup_printf("OP=%s,BM=BM,THREADS=THREADS", op);
  ts_tile_intrinsic(g, "rows_allreduce", all, var,
                    shared ? ((*n)++ % 2 ? "red + WARPS" : "red") : "nullptr", NULL);
}

static gboolean
ex_equal(const Ex *a, const Ex *b)
{
  if (a == b)
    return TRUE;
  if (a == NULL || b == NULL || a->kind != b->kind || a->op != b->op || a->index != b->index ||
      a->dim != b->dim || !(a->num == b->num || (isnan(a->num) && isnan(b->num))))
    return FALSE;
  return ex_equal(a->a, b->a) && ex_equal(a->b, b->b);
}

/* Softmax's row statistics: step s a max of e, step s + 1 the scratch row exp(e - that max),
 * step s + 2 the sum of that row. A streamed row takes the two reductions in one online pass
 * (a running max and a sum rescaled whenever the max grows, ts_rows_accum_softmax), as the
 * built-in softmax streams, instead of a pass for each. */
static gboolean
online_softmax_at(const LangOp *o, guint s)
{
  if (s + 2 >= o->steps->len)
    return FALSE;
  const Step *m = &g_array_index(o->steps, Step, s), *w = &g_array_index(o->steps, Step, s + 1),
             *sum = &g_array_index(o->steps, Step, s + 2);
  if (m->scratch || !m->max || !w->scratch || !sums_scratch_row(sum, w))
    return FALSE;
  const Ex *x = w->expr;
  return x->kind == EX_EXP && x->a->kind == EX_BIN && x->a->op == '-' &&
         x->a->b->kind == EX_ROW && x->a->b->index == m->index && ex_equal(x->a->a, m->expr);
}

/* The streamed form of ts__lang_lower_cuda_rows, after the grid, the input tiles, r_t and the
 * reduction slots: a pass for each reduction (accumulated tile by tile at c0, then reduced
 * across the row's threads), a pass for the output (stored tile by tile). */
static gboolean
lower_cuda_rows_streamed(const LangOp *o, TsTileKernel *k, TsTileNode *g, const char *ttile,
                         gboolean shared)
{
  for (guint j = 0; j < o->n_scratch; j++) {
    g_autofree char *reg = g_strdup_printf("r_w%u", j);
    ts_tile_alloc(g, k, reg, TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                  "a scratch row's tile, recomputed in each pass that reads it");
  }
  g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  guint n_reductions = 0;
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    if (st->scratch)
      continue;
    reduction_let(g, st);
    if (!online_softmax_at(o, s)) {
      TsTileNode *c = stream_pass(o, g, hoisted, ttile, st->expr, "t");
      reduce_row(g, c, st, "c0", shared, &n_reductions);
      continue;
    }
    const Step *sum = &g_array_index(o->steps, Step, s + 2);
    reduction_let(g, sum);
    g_autofree char *m = g_strdup_printf("r%u", st->index), *l = g_strdup_printf("r%u", sum->index);
    TsTileNode *c = stream_pass(o, g, hoisted, ttile, st->expr, "t");
    ts_tile_intrinsic(c, "rows_accum_softmax", ROW_TILE, m, l, "r_t", "c0", NULL);
    /* The pair's reduction fills both shared slots: a barrier keeps it from the readers of an
     * earlier reduction's slot, and a later reduction from its readers. */
    if (shared && n_reductions > 0)
      ts_tile_barrier(g);
    ts_tile_intrinsic(g, "rows_allreduce_softmax", "BM=BM,THREADS=THREADS", m, l,
                      shared ? "red" : "nullptr", NULL);
    s += 2;
    n_reductions = 0;
    for (guint later = s + 1; shared && later < o->steps->len; later++)
      if (!g_array_index(o->steps, Step, later).scratch) {
        ts_tile_barrier(g);
        break;
      }
  }
  const char *y = o->views[o->def.n_inputs];
  g_autofree char *out = g_strdup_printf("r_%s", y);
  ts_tile_alloc(g, k, out, TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                "the output's tile");
  TsTileNode *c = stream_pass(o, g, hoisted, ttile, o->value, y);
  ts_tile_intrinsic(c, "rows_store", ttile, o->def.output.name, "r0_", "c0", o->row_dim, out,
                    "1.0f", "nullptr", "nullptr", NULL);
  return TRUE;
}

/* A CTA per BM rows, each row held whole in the registers of its row group (the row tile of
 * ts_cuda_rows.cuh): the inputs loaded once ([N] ones broadcast to every row group), each step
 * a map over the registers (a reduction's operand into a temporary, then the row group's
 * reduction; a scratch row into its own tile), the output mapped and stored. A row too long
 * for the registers (BM = 1, as the built-in row ops) is streamed instead: each reduction and
 * the output a pass over its column tiles (stream_pass), a scratch row recomputed in each pass
 * that reads it rather than kept. */
gboolean
ts__lang_lower_cuda_rows(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                     GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 w = KNOB("warps", 4);
  const TsShape *shape = ts_op_instance_shape(inst);
  if (!cuda_leaves_cpu_knobs(o, point, error))
    return FALSE;
  TsCudaRowTile t;
  if (!ts__cuda_row_tile(o->name, ts_shape_get(shape, o->row_dim),
                         ts_shape_get(shape, o->col_dim), KNOB("BM", -1), w, KNOB("vector", 4),
                         TRUE, k, &t, error))
    return FALSE;
  const gint64 threads = t.threads, tpr = t.tpr, gx = t.gx;
  g_autofree char *ttile = g_strdup_printf("T=%s," ROW_TILE,
                                           ts_dtype_name(ts_op_instance_dtype(inst)->storage));
  const gboolean shared = tpr > 32; /* a row spans warps: partials meet in shared memory */
  TsTileNode *g = ts_tile_grid(k->body, gx, 1, 1, threads, shared ? 2 * w * 4 : 0);
  for (guint a = 0; a < o->def.n_inputs; a++) {
    g_autofree char *reg = g_strdup_printf("r_%s", o->views[a]);
    ts_tile_alloc(g, k, reg, TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                  o->broadcast[a] ? "the thread's columns of the [N] operand"
                                  : "the thread's part of its row");
  }
  ts_tile_alloc(g, k, "r_t", TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                "a reduction's operand");
  if (shared)
    ts_tile_alloc(g, k, "red", TS_MEM_SHARED, TS_DTYPE_F32, "2 * WARPS", FALSE,
                  "two slots of one partial per warp, used alternately by consecutive reductions");
  ts_tile_let(g, "r0_", TS_DTYPE_INT32, "bx * BM");
  if (!t.resident)
    return lower_cuda_rows_streamed(o, k, g, ttile, shared);
  for (guint a = 0; a < o->def.n_inputs; a++) {
    g_autofree char *reg = g_strdup_printf("r_%s", o->views[a]);
    if (o->broadcast[a])
      ts_tile_intrinsic(g, "rows_load_bcast", ttile, reg, o->def.inputs[a].name, "0", NULL);
    else
      ts_tile_intrinsic(g, "rows_load", ttile, reg, o->def.inputs[a].name, "r0_", "0",
                        o->row_dim, o->col_dim, NULL);
  }
  g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  guint n_reductions = 0;
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    g_autofree char *text = ts__lang_print(o, st->expr, TRUE, g, hoisted);
    if (st->scratch) {
      g_autofree char *reg = g_strdup_printf("r_w%u", st->index), *dst = g_strdup_printf("w%u", st->index);
      ts_tile_alloc(g, k, reg, TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                    "a value kept for the steps after it");
      TsTileNode *map = ts_tile_map(g, dst, text, "PER * VEC");
      add_reg_views(o, map);
      continue;
    }
    TsTileNode *map = ts_tile_map(g, "t", text, "PER * VEC");
    add_reg_views(o, map);
    ts_tile_node_add_view(map, "t", "r_t", "0");
    reduction_let(g, st);
    reduce_row(g, g, st, "0", shared, &n_reductions);
  }
  g_autofree char *text = ts__lang_print(o, o->value, TRUE, g, hoisted);
  g_autofree char *out = g_strdup_printf("r_%s", o->views[o->def.n_inputs]);
  ts_tile_alloc(g, k, out, TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE, "the output row");
  TsTileNode *map = ts_tile_map(g, o->views[o->def.n_inputs], text, "PER * VEC");
  add_reg_views(o, map);
  ts_tile_node_add_view(map, o->views[o->def.n_inputs], out, "0");
  ts_tile_intrinsic(g, "rows_store", ttile, o->def.output.name, "r0_", "0", o->row_dim, out,
                    "1.0f", "nullptr", "nullptr", NULL);
  return TRUE;
}

static double
count_exps(const Ex *e)
{
  return e == NULL ? 0 : (e->kind == EX_EXP) + count_exps(e->a) + count_exps(e->b);
}

/* A map reads each element once. A row kernel reads a row once per step and once for the
 * output, on the CPU (a scratch row's plain sum rides in the pass that writes it) and streamed
 * on CUDA (a scratch row recomputed in each pass that reads it rather than read; softmax's max,
 * exps and their sum one online pass); held in registers, once. */
gboolean
ts__lang_row_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda,
                  TsOpRowWork *w)
{
  const LangOp *o = lang_op(inst);
  const TsShape *shape = ts_op_instance_shape(inst);
  /* Each step's and the output's exps once an element (a scratch row is computed once on the
   * CPU: the recomputing CUDA passes' exps go uncounted, where memory is what bounds them). */
  w->exps = count_exps(o->value);
  for (guint s = 0; o->rows && s < o->steps->len; s++)
    w->exps += count_exps(g_array_index(o->steps, Step, s).expr);
  gboolean fast = FALSE;
  if (!cuda && !lang_math_knob(o, point, &fast, NULL))
    return FALSE;
  w->fast_exp = fast;
  /* pipeline("skew") runs the passes that only move data inside the exps' pass (on the CPU;
   * a refused point has no lowering to estimate). */
  gboolean next = FALSE, skew = FALSE;
  if (!cuda && o->rows && !lang_pipeline_knob(o, point, &next, &skew, NULL))
    return FALSE;
  w->skewed = skew;
  if (!o->rows) {
    w->rows = 1;
    w->cols = (double)ts_shape_get(shape, o->def.dims);
    w->passes = 1;
    return TRUE;
  }
  const gint64 n = ts_shape_get(shape, o->col_dim);
  w->rows = (double)ts_shape_get(shape, o->row_dim);
  w->cols = (double)n;
  w->passes = 1;
  if (cuda && ts__cuda_row_resident(n, KNOB("BM", -1), KNOB("warps", 4), KNOB("vector", 4)))
    return TRUE;
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    const Step *prev = s > 0 ? &g_array_index(o->steps, Step, s - 1) : NULL;
    if (cuda && online_softmax_at(o, s))
      s += 2; /* the three steps' one online pass */
    else if (cuda && st->scratch)
      continue; /* recomputed in the passes that read it */
    else if (!cuda && prev && sums_scratch_row(st, prev))
      continue; /* taken in the pass that writes the scratch row */
    w->passes++;
  }
  return TRUE;
}
