/* ts-op-lang-gemm.c — kernel files whose body is a tiled matrix product:
 *
 *   acc = tile.zeros((T.m, T.n), f32)
 *   for kb in tile.range_k(K, T.k):
 *       a = tile.load(A, rows=T.m, cols=kb)
 *       b = tile.load(B, rows=kb, cols=T.n)
 *       acc += tile.dot(a, b)
 *   tile.store(C, tile.cast(acc, bf16))
 *
 * The body is the contraction the gemm templates of op-gemm.c implement on each target (the
 * CPU's packed panels and micro-kernels, CUDA's mma.sync / wgmma pipelines), so it lowers
 * through them: the knobs the kernel's space names (BM, BN, BK, warps, stages ...) are the
 * kernel's, and every other knob of a template is searched over the template's own values.
 * The value stored may be an elementwise epilogue of the accumulator (a scale, a bias read per
 * column, an activation): the templates apply it in registers (CUDA) or in a pass over each
 * accumulator row (CPU). Anything else in such a body is refused at its position, saying what
 * the form takes. */
#include "ts-op-lang-private.h"

#include <string.h>


static const char *const gemm_form =
  "a GEMM kernel is acc = tile.zeros((T.m, T.n), f32); for kb in tile.range_k(...): its loads "
  "a = tile.load(A, rows=T.m, cols=kb) and b = tile.load(B, rows=kb, cols=T.n) and acc += "
  "tile.dot(a, b); then tile.store(C, E), E the accumulator or an elementwise epilogue of it "
  "(tile.cast(E, dtype) converts), which may read [N] tensors loaded as tile.load(bias, "
  "cols=T.n) and float parameters";

typedef struct {
  Reader *r;
  const char *ctx;    /* the name bound to tile.context() */
  const char *acc;    /* the accumulator's name */
  const char *kvar;   /* the range_k loop's variable */
  GHashTable *tiles;  /* loaded tile name -> "A" / "B" (its role) */
  int a, b, c;        /* tensor positions, -1 until seen */
  gboolean dot_seen, loop_seen;
} Gemm;

gboolean
ts__lang_is_contraction(const TsLangNode *n)
{
  if (n == NULL)
    return FALSE;
  if (ts__lang_is_tile_call(n, "dot"))
    return TRUE;
  for (guint i = 0; n->kids && i < n->kids->len; i++)
    if (ts__lang_is_contraction(g_ptr_array_index(n->kids, i)))
      return TRUE;
  return FALSE;
}

static gboolean
refuse(Gemm *g, const TsLangNode *at, const char *what)
{
  g_autofree char *src = ts_lang_expr_to_source(at);
  return ts__lang_fail(g->r, at, "%s is not lowered%s%s (%s)", src, what ? ": " : "",
                       what ? what : "", gemm_form);
}

/* A keyword argument's value, or NULL. */
static const TsLangNode *
keyword(const TsLangNode *call, const char *name)
{
  for (guint i = 1; i < call->kids->len; i++) {
    const TsLangNode *a = ts__lang_kid(call, i);
    if (a->kind == TS_LANG_KEYWORD && strcmp(a->str, name) == 0)
      return ts__lang_kid(a, 0);
  }
  return NULL;
}

static gboolean
is_ctx_attr(Gemm *g, const TsLangNode *n, const char *attr)
{
  return g->ctx && n && n->kind == TS_LANG_ATTR && strcmp(n->str, attr) == 0 &&
         ts__lang_kid(n, 0)->kind == TS_LANG_NAME && strcmp(ts__lang_kid(n, 0)->str, g->ctx) == 0;
}

static gboolean
is_name(const TsLangNode *n, const char *name)
{
  return n && name && n->kind == TS_LANG_NAME && strcmp(n->str, name) == 0;
}

/* tile.load(X, rows=T.m, cols=kb) is A's tile, tile.load(X, rows=kb, cols=T.n) B's: "A", "B",
 * or NULL with the error set. */
static const char *
load_role(Gemm *g, const TsLangNode *n)
{
  const TsLangNode *x = ts__lang_kid(n, 1), *rows = keyword(n, "rows"), *cols = keyword(n, "cols");
  int t = x && x->kind == TS_LANG_NAME ? ts__lang_tensor_index(g->r, x->str) : -1;
  const char *role = NULL;
  if (t >= 0 && n->kids->len == 4 && is_ctx_attr(g, rows, "m") && is_name(cols, g->kvar))
    role = "A";
  else if (t >= 0 && n->kids->len == 4 && is_name(rows, g->kvar) && is_ctx_attr(g, cols, "n"))
    role = "B";
  if (role == NULL)
    return refuse(g, n, "the loop loads A's tile as tile.load(A, rows=T.m, cols=kb) and B's as "
                        "tile.load(B, rows=kb, cols=T.n)"),
           NULL;
  int *slot = role[0] == 'A' ? &g->a : &g->b;
  if (*slot >= 0 && *slot != t)
    return refuse(g, n, "the other load of this side reads another tensor"), NULL;
  *slot = t;
  return role;
}

/* An operand of tile.dot: a loaded tile's name or the load itself. */
static const char *
operand_role(Gemm *g, const TsLangNode *n)
{
  if (n->kind == TS_LANG_NAME && g_hash_table_contains(g->tiles, n->str))
    return g_hash_table_lookup(g->tiles, n->str);
  if (ts__lang_is_tile_call(n, "load"))
    return load_role(g, n);
  return refuse(g, n, "tile.dot's operands are the loop's loads"), NULL;
}

static gboolean
read_dot(Gemm *g, const TsLangNode *st, const TsLangNode *dot)
{
  if (!ts__lang_is_tile_call(dot, "dot") || dot->kids->len != 3)
    return refuse(g, st, "the loop accumulates acc += tile.dot(a, b)");
  const char *x = operand_role(g, ts__lang_kid(dot, 1));
  const char *y = x ? operand_role(g, ts__lang_kid(dot, 2)) : NULL;
  if (y == NULL)
    return FALSE;
  if (x[0] != 'A' || y[0] != 'B')
    return refuse(g, dot, "tile.dot takes A's tile (rows=T.m) first and B's (cols=T.n) second");
  if (g->dot_seen)
    return refuse(g, st, "the loop accumulates one product");
  g->dot_seen = TRUE;
  return TRUE;
}

static gboolean
read_loop_body(Gemm *g, const TsLangNode *block)
{
  for (guint i = 0; i < block->kids->len; i++) {
    const TsLangNode *st = ts__lang_kid(block, i);
    const TsLangNode *target = ts__lang_kid(st, 0), *value = ts__lang_kid(st, 1);
    if (st->kind == TS_LANG_PASS)
      continue;
    if (st->kind == TS_LANG_ASSIGN && target->kind == TS_LANG_NAME && ts__lang_is_tile_call(value, "load")) {
      const char *role = load_role(g, value);
      if (role == NULL)
        return FALSE;
      g_hash_table_insert(g->tiles, target->str, (gpointer)role);
      continue;
    }
    if (st->kind == TS_LANG_AUGASSIGN && strcmp(st->str, "+") == 0 && is_name(target, g->acc)) {
      if (!read_dot(g, st, value))
        return FALSE;
      continue;
    }
    /* acc = acc + tile.dot(a, b) */
    if (st->kind == TS_LANG_ASSIGN && is_name(target, g->acc) && value->kind == TS_LANG_BINOP &&
        strcmp(value->str, "+") == 0 && is_name(ts__lang_kid(value, 0), g->acc)) {
      if (!read_dot(g, st, ts__lang_kid(value, 1)))
        return FALSE;
      continue;
    }
    return refuse(g, st, NULL);
  }
  if (!g->dot_seen)
    return ts__lang_fail(g->r, block, "the loop has no acc += tile.dot(a, b) (%s)", gemm_form);
  return TRUE;
}

/* The tensor's dims, checked against the names the gemm templates read the shape by. */
static gboolean
dims_are(Gemm *g, int t, const char *d0, const char *d1, const char *role)
{
  const TsLangParam *p = g_ptr_array_index(g->r->tensors, t);
  const TsTensorType *ty = p->tensor;
  if (ty->rank == 2 && g_strcmp0(ty->dims[0].name, d0) == 0 &&
      g_strcmp0(ty->dims[1].name, d1) == 0)
    return TRUE;
  g_autofree char *type = ts_tensor_type_to_string(ty);
  return ts__lang_fail(g->r, g->r->k->def,
                       "%s is %s: the GEMM lowering takes %s as Tensor[\"%s\", \"%s\", ...] (it "
                       "reads the shape as M, N and K)",
                       p->name, type, role, d0, d1);
}

/* t is an [N] tensor, which an epilogue may read at each column (its dtype is checked with the
 * others'). */
static gboolean
is_vector(Reader *r, int t)
{
  const TsLangParam *p = t >= 0 ? g_ptr_array_index(r->tensors, t) : NULL;
  return p && p->tensor->rank == 1 && g_strcmp0(p->tensor->dims[0].name, "N") == 0;
}

/* name = tile.load(V) or tile.load(V, cols=T.n), V an [N] tensor: its value at the column. */
static gboolean
read_vector_load(Gemm *g, const TsLangNode *target, const TsLangNode *value)
{
  const TsLangNode *x = ts__lang_kid(value, 1), *cols = keyword(value, "cols");
  int t = x && x->kind == TS_LANG_NAME ? ts__lang_tensor_index(g->r, x->str) : -1;
  if (!is_vector(g->r, t) || value->kids->len > 3 || (value->kids->len == 3 && !is_ctx_attr(g, cols, "n")))
    return refuse(g, value, "an epilogue reads an [N] tensor a column at a time: "
                            "tile.load(bias, cols=T.n), bias a Tensor[\"N\", ...]");
  Ex *e = g_new0(Ex, 1);
  e->kind = EX_VIEW;
  e->index = (guint)t;
  g_ptr_array_add(g->r->o->arena, e);
  g->r->read[t] = TRUE;
  g_hash_table_insert(g->r->locals, target->str, e);
  return TRUE;
}

static gboolean
has_acc(const Ex *e, const Ex *acc)
{
  return e && (e == acc || has_acc(e->a, acc) || has_acc(e->b, acc));
}

/* What the epilogue's value may hold: the accumulator, [N] inputs, floats, numbers, dims and
 * arithmetic, nothing of a row (reductions) and no other tensor. */
static gboolean
epilogue_ok(Gemm *g, const Ex *e, const Ex *acc, const TsLangNode *at)
{
  if (e == NULL || e == acc)
    return TRUE;
  if (e->kind == EX_ROW || e->kind == EX_SCRATCH)
    return ts__lang_fail(g->r, at, "row reductions are not lowered in a GEMM's epilogue (%s)",
                         gemm_form);
  if (e->kind == EX_VIEW && !is_vector(g->r, (int)e->index)) {
    const TsLangParam *p = g_ptr_array_index(g->r->tensors, e->index);
    return ts__lang_fail(g->r, at, "a GEMM's epilogue reads the accumulator and [N] tensors at "
                                   "its column, not %s", p->name);
  }
  return epilogue_ok(g, e->a, acc, at) && epilogue_ok(g, e->b, acc, at);
}

gboolean
ts__lang_read_gemm(Reader *r, const TsLangNode *block)
{
  g_autoptr(GHashTable) tiles = g_hash_table_new(g_str_hash, g_str_equal);
  Gemm g = {.r = r, .tiles = tiles, .a = -1, .b = -1, .c = -1};
  /* The accumulator's element in the epilogue; its index becomes C's once C is known. */
  Ex *acc = g_new0(Ex, 1);
  acc->kind = EX_VIEW;
  g_ptr_array_add(r->o->arena, acc);
  const Ex *value = NULL;
  const TsLangNode *store = NULL;
  for (guint i = 0; i < block->kids->len; i++) {
    const TsLangNode *st = ts__lang_kid(block, i);
    const TsLangNode *target = ts__lang_kid(st, 0), *rhs = ts__lang_kid(st, 1);
    switch (st->kind) {
    case TS_LANG_PASS:
      continue;
    case TS_LANG_ASSIGN:
      if (target->kind == TS_LANG_NAME && ts__lang_is_tile_call(rhs, "context") && g.ctx == NULL) {
        g.ctx = target->str;
        continue;
      }
      if (target->kind == TS_LANG_NAME && ts__lang_is_tile_call(rhs, "zeros") && g.acc == NULL &&
          !g.loop_seen) {
        const TsLangNode *shape = ts__lang_kid(rhs, 1), *dt = ts__lang_kid(rhs, 2);
        if (shape == NULL || shape->kind != TS_LANG_TUPLE || shape->kids->len != 2 ||
            !is_ctx_attr(&g, ts__lang_kid(shape, 0), "m") ||
            !is_ctx_attr(&g, ts__lang_kid(shape, 1), "n") || !is_name(dt, "f32"))
          return refuse(&g, rhs, "the accumulator is tile.zeros((T.m, T.n), f32)");
        g.acc = target->str;
        g_hash_table_insert(r->locals, target->str, acc);
        continue;
      }
      /* b = tile.load(bias, cols=T.n), or converted: tile.cast(tile.load(...), f32). */
      const TsLangNode *load = rhs;
      while (ts__lang_is_tile_call(load, "cast") && load->kids->len == 3)
        load = ts__lang_kid(load, 1);
      if (target->kind == TS_LANG_NAME && ts__lang_is_tile_call(load, "load") && store == NULL) {
        if (!read_vector_load(&g, target, load))
          return FALSE;
        continue;
      }
      /* After the loop: names of the epilogue's values (y = acc * alpha). */
      if (target->kind == TS_LANG_NAME && g.loop_seen && store == NULL && !is_name(target, g.acc)) {
        const Ex *v = ts__lang_expr(r, rhs);
        if (v == NULL || !epilogue_ok(&g, v, acc, rhs))
          return FALSE;
        g_hash_table_insert(r->locals, target->str, (gpointer)v);
        continue;
      }
      break;
    case TS_LANG_FOR: {
      const TsLangNode *it = ts__lang_kid(st, 1);
      if (g.acc == NULL || g.loop_seen || target->kind != TS_LANG_NAME ||
          !ts__lang_is_tile_call(it, "range_k"))
        return refuse(&g, it ? it : st, "after tile.zeros, one loop walks K: for kb in "
                                        "tile.range_k(K, T.k)");
      /* prefetch= is the template's to decide: its stages knob sets how deep the ring is. */
      g.kvar = target->str;
      g.loop_seen = TRUE;
      if (!read_loop_body(&g, ts__lang_kid(st, 2)))
        return FALSE;
      continue;
    }
    case TS_LANG_EXPR_STMT: {
      const TsLangNode *c = target;
      if (!g.loop_seen || !ts__lang_is_tile_call(c, "store") || c->kids->len != 3 || store)
        break;
      const TsLangNode *out = ts__lang_kid(c, 1);
      int t = out->kind == TS_LANG_NAME ? ts__lang_tensor_index(r, out->str) : -1;
      if (t < 0 || is_vector(r, t))
        return refuse(&g, c, "the epilogue stores into C, a Tensor[\"M\", \"N\", ...]");
      /* tile.cast(v, dtype) converts at the store: the value is computed in f32. */
      value = ts__lang_expr(r, ts__lang_kid(c, 2));
      if (value == NULL || !epilogue_ok(&g, value, acc, ts__lang_kid(c, 2)))
        return FALSE;
      if (!has_acc(value, acc))
        return refuse(&g, c, "the value stored is computed from the accumulator");
      g.c = t;
      store = c;
      continue;
    }
    default:
      break;
    }
    return refuse(&g, st, NULL);
  }
  if (store == NULL)
    return ts__lang_fail(r, r->k->def, "kernel %s never stores its accumulator (%s)", r->k->name,
                         gemm_form);
  if (r->o->steps && r->o->steps->len > 0)
    return ts__lang_fail(r, store, "row reductions are not lowered in a GEMM's epilogue (%s)",
                         gemm_form);
  if (g.a == g.b || g.c == g.a || g.c == g.b)
    return ts__lang_fail(r, r->k->def, "kernel %s reads A and B and writes C as three different "
                                       "tensors (%s)", r->k->name, gemm_form);
  for (guint t = 0; t < r->tensors->len; t++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, t);
    if ((int)t != g.a && (int)t != g.b && (int)t != g.c && !(is_vector(r, (int)t) && r->read[t]))
      return ts__lang_fail(r, r->k->def, "kernel %s's tensor %s is none of the GEMM's A, B and "
                                         "C nor an [N] tensor its epilogue reads (%s)",
                           r->k->name, p->name, gemm_form);
  }
  if (!dims_are(&g, g.a, "M", "K", "A") || !dims_are(&g, g.b, "K", "N", "B") ||
      !dims_are(&g, g.c, "M", "N", "C"))
    return FALSE;
  const TsLangParam *pa = g_ptr_array_index(r->tensors, g.a),
                    *pb = g_ptr_array_index(r->tensors, g.b),
                    *pc = g_ptr_array_index(r->tensors, g.c);
  const TsDtype dt = pa->tensor->dtype.storage;
  gboolean one_dtype = pb->tensor->dtype.storage == dt && pc->tensor->dtype.storage == dt;
  for (guint t = 0; t < r->tensors->len; t++)
    if (is_vector(r, (int)t) && r->read[t])
      one_dtype = one_dtype && ((TsLangParam *)g_ptr_array_index(r->tensors, t))->tensor->dtype.storage == dt;
  if (!one_dtype || (dt != TS_DTYPE_F32 && dt != TS_DTYPE_BF16 && dt != TS_DTYPE_F16)) {
    g_autofree char *ta = ts_tensor_type_to_string(pa->tensor);
    g_autofree char *tb = ts_tensor_type_to_string(pb->tensor);
    g_autofree char *tc = ts_tensor_type_to_string(pc->tensor);
    return ts__lang_fail(r, r->k->def, "A is %s, B %s and C %s: the GEMM lowering takes one "
                                       "storage dtype for all its tensors, f32, bf16 or f16",
                         ta, tb, tc);
  }
  acc->index = (guint)g.c;
  r->out = pc;
  r->o->gemm = TRUE;
  r->o->gemm_a = (guint)g.a;
  r->o->gemm_b = (guint)g.b;
  r->o->gemm_c = (guint)g.c;
  r->o->value = value == acc ? NULL : value; /* NULL: C is the accumulator */
  r->o->dtype = g_strdup(ts_dtype_name(dt));
  return TRUE;
}

/* ---- the op ---- */

/* A 4096^3 product, where the default point is chosen. */
static TsSchedEnv *
nominal_env(TsDtype dt, gboolean cuda)
{
  TsSchedEnv *env = ts__lang_nominal_env(dt, cuda);
  ts_sched_env_set(env, "M", 4096);
  ts_sched_env_set(env, "N", 4096);
  ts_sched_env_set(env, "K", 4096);
  if (!cuda) {
    ts_sched_env_set(env, "bf16_dot", 0);
    ts_sched_env_set(env, "amx_bf16", 0);
  }
  return env;
}

/* Names the templates' generated code uses for its own values, which an epilogue's tensors and
 * floats must keep clear of (compared with case folded). */
static const char *const template_names[] = {
  "a", "b", "c", "m", "n", "k", "acc", "c_out", "cw", "ap", "bp", "as", "bs", "cs", "i", "j",
  "i0", "jc", "pc", "kc", "nc", "ic", "ir", "jr", "jp", "q", "mc", "rows", "bpr", "n_blk",
  "rows_b", "n_jr", "m0", "n0", "kt", "kb", "ring", "ring_next", "next", "s", "t", "v", "r",
  "bx", "width", "bars", "tma_a", "tma_b", "tma_c", "scale_a", "scale_b", "min", "max", "exp",
  "sqrt", "splat", "float", "int", "double", "const", NULL};

static gboolean
clear_of_templates(Reader *r, const char *kind, const char *name)
{
  for (guint i = 0; template_names[i]; i++)
    if (g_ascii_strcasecmp(name, template_names[i]) == 0)
      return ts__lang_fail(r, r->k->def, "the %s %s of kernel %s has a name the GEMM templates "
                                         "use for their own values: rename it",
                           kind, name, r->k->name);
  return TRUE;
}

/* A float parameter's name, clear of the templates' and of the tensors'. */
static gboolean
float_clear(Reader *r, const char *name, gpointer data)
{
  (void)data;
  if (!clear_of_templates(r, "float parameter", name))
    return FALSE;
  for (guint t = 0; t < r->tensors->len; t++)
    if (g_ascii_strcasecmp(name, ((TsLangParam *)g_ptr_array_index(r->tensors, t))->name) == 0)
      return ts__lang_fail(r, r->k->def, "the float parameter %s of kernel %s has a tensor's "
                                         "name once case is folded: rename it", name, r->k->name);
  return TRUE;
}

/* The epilogue's inputs ([N] tensors, after A and B), floats and expressions for both targets. */
static gboolean
build_epilogue(Reader *r, const TsLangKernel *k)
{
  LangOp *o = r->o;
  if (k->implements != NULL)
    return ts__lang_fail(r, k->def, "@kernel.implements(\"%s\"): kernel %s's epilogue makes it "
                                    "another op than %s; without the decorator it is checked as "
                                    "the product with its epilogue", k->implements, k->name,
                         k->implements);
  TsGemmEpilogue *epi = &o->epilogue;
  for (guint t = 0; t < r->tensors->len; t++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, t);
    if (t == o->gemm_a || t == o->gemm_b || t == o->gemm_c || !r->read[t])
      continue;
    if (!clear_of_templates(r, "tensor", p->name))
      return FALSE;
    if (o->def.n_inputs == TS_OP_MAX_ARGS)
      return ts__lang_fail(r, k->def, "kernel %s reads more than %d tensors", k->name,
                           TS_OP_MAX_ARGS);
    guint in = o->def.n_inputs++;
    o->arg_names[in] = g_ascii_strup(p->name, -1);
    o->views[t] = g_ascii_strdown(p->name, -1);
    o->arg_sigs[in] = g_strdup("\"N\"");
    o->def.inputs[in] = (TsOpArg){o->arg_names[in], o->arg_sigs[in], -1.0, 1.0};
    o->input_of[t] = in;
    epi->views[epi->n_vectors] = o->views[t];
    epi->buffers[epi->n_vectors] = o->arg_names[in];
    epi->n_vectors++;
  }
  if (!ts__lang_bind_floats(r, float_clear, NULL))
    return FALSE;
  o->views[o->gemm_c] = g_strdup("acc");
  o->epi_cpu = ts__lang_print(o, o->value, FALSE, NULL, NULL);
  o->epi_cuda = ts__lang_print(o, o->value, TRUE, NULL, NULL);
  epi->cpu_expr = o->epi_cpu;
  epi->cuda_expr = o->epi_cuda;
  o->def.gemm_epilogue = epi;
  return TRUE;
}

gboolean
ts__lang_build_gemm(Reader *r, const TsLangKernel *k)
{
  LangOp *o = r->o;
  const TsOpDef *t = &ts__op_gemm;
  /* The templates' own names for A, B and C: the generated code's, not the kernel's. */
  o->def.n_inputs = 2;
  o->def.inputs[0] = t->inputs[0];
  o->def.inputs[1] = t->inputs[1];
  o->def.output = t->output;
  o->input_of[o->gemm_a] = 0;
  o->input_of[o->gemm_b] = 1;
  if (o->value != NULL && !build_epilogue(r, k))
    return FALSE;
  g_autoptr(TsSchedEnv) cpu_env = nominal_env(ts_dtype_from_name(o->dtype), FALSE);
  g_autoptr(TsSchedEnv) cuda_env = nominal_env(ts_dtype_from_name(o->dtype), TRUE);
  if (!ts__lang_use_templates(r, k, t, "GEMM", "a 4096^3 product", cpu_env, cuda_env))
    return FALSE;
  o->flops_per_element = 2;
  return TRUE;
}
