/* ts-op-lang.c — a kernel written in the kernel language as an op of the workbench: its
 * signature becomes the op's buffers, dims and float parameters (Graph IR), its autotune space
 * the op's space (Schedule IR), and its body is lowered to Tile IR, so the emitters, the tuner,
 * the cache and the lowering view treat it as they treat a built-in op.
 *
 * Lowered so far: elementwise kernels (one program per BN elements of one-dimensional tensors,
 * `i = tile.linear_id()`, element reads x[i], float parameters, numbers, + - * /, integer
 * powers, tile.exp, tile.rsqrt, sqrt, max, min): on the CPU a vectorised map over each
 * program's block, on CUDA a map over each thread's register tiles between the row tile's loads
 * and store. Verified against the op it implements, else against its own expression evaluated
 * in f64. */
#include "ts-op-private.h"

#include <math.h>
#include <string.h>

#include "ts-lang.h"
#include "ts-numerics.h"

/* An element of a value, as an expression: of the inputs' elements (a row kernel: of row i's
 * elements, and of [N] tensors broadcast over the rows), the kernel's floats, numbers, per-row
 * reductions computed before (EX_ROW), rows stored in a scratch row (EX_SCRATCH) and dims. */
typedef enum {
  EX_NUM, EX_VIEW, EX_FLOAT, EX_BIN, EX_NEG, EX_EXP, EX_SQRT, EX_MAX, EX_ROW, EX_SCRATCH, EX_DIM
} ExKind;

typedef struct Ex Ex;
struct Ex {
  ExKind kind;
  char op;      /* EX_BIN: + - * / */
  double num;   /* EX_NUM */
  guint index;  /* EX_VIEW: the input; EX_FLOAT: the float parameter; EX_ROW, EX_SCRATCH */
  const char *dim; /* EX_DIM: its name (interned) */
  const Ex *a, *b;
};

/* A row kernel's steps before its output, in order: a row reduction into r<index>, or a value
 * kept in scratch row W<index> (computed once, read by the steps after it). */
typedef struct {
  gboolean scratch;
  gboolean max; /* reduction: max, else sum */
  guint index;
  const Ex *expr;
} Step;

typedef struct {
  TsOpDef def; /* first: an instance's op points here */
  char *name, *symbol, *summary, *dims, *space, *default_point, *dtype, *src, *path, *cache;
  char *cuda_space, *cuda_default;
  char *arg_names[TS_OP_MAX_ARGS + 1], *arg_sigs[TS_OP_MAX_ARGS + 1];
  char *views[TS_OP_MAX_ARGS + 1];  /* inputs' views, then the output's */
  char *float_names[2];
  const TsOpDef *implements;
  GPtrArray *arena; /* Ex* */
  const Ex *value;  /* the output element */
  char *expr;       /* value as a Tile IR map expression */
  double flops_per_element;
  /* Row kernels: [M, N] tensors walked row by row (BM rows a program), [N] tensors broadcast. */
  gboolean rows;
  char *row_dim, *col_dim;
  gboolean broadcast[TS_OP_MAX_ARGS]; /* input: an [N] tensor */
  GArray *steps;                      /* Step */
  guint n_rowvars, n_scratch;
} LangOp;

/* ---- reading the body ---- */

typedef struct {
  LangOp *o;
  const TsLangKernel *k;
  const char *src, *file;
  GError **error;
  GHashTable *index_vars; /* names bound to tile.linear_id() */
  GHashTable *locals;     /* name -> const Ex* */
  GPtrArray *tensors;     /* TsLangParam* of the tensor parameters, in order */
  GPtrArray *floats;      /* TsLangParam* of the float parameters */
  gboolean read[TS_OP_MAX_ARGS + 1];
  const TsLangParam *out;
  const Ex *written;      /* out's element once assigned */
  gboolean rows;          /* a row kernel (its tensors have two dims) */
} Reader;

static gboolean rfail(Reader *r, const TsLangNode *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
rfail(Reader *r, const TsLangNode *at, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  ts_lang_set_error(r->error, TS_LANG_ERROR_TYPE, r->src, r->file, at->line, at->col, "%s", msg);
  return FALSE;
}

static const TsLangNode *
kid(const TsLangNode *n, guint i)
{
  return i < n->kids->len ? g_ptr_array_index(n->kids, i) : NULL;
}

static Ex *
ex_new(LangOp *o, ExKind kind, const Ex *a, const Ex *b)
{
  Ex *e = g_new0(Ex, 1);
  e->kind = kind;
  e->a = a;
  e->b = b;
  g_ptr_array_add(o->arena, e);
  return e;
}

static const char *const unsupported_hint =
  "the lowering takes, for now, elementwise kernels (x[i] with i = tile.linear_id()) and row "
  "kernels (whole rows, tile.load(x, rows=T.m), tile.row_sum, tile.row_max, tile.store), over "
  "float parameters, numbers, + - * /, integer powers, tile.exp, tile.rsqrt, sqrt, max and min";

static int
tensor_index(Reader *r, const char *name)
{
  for (guint i = 0; i < r->tensors->len; i++)
    if (strcmp(((TsLangParam *)g_ptr_array_index(r->tensors, i))->name, name) == 0)
      return (int)i;
  return -1;
}

static gboolean
is_tile_call(const TsLangNode *n, const char *fn)
{
  if (n->kind != TS_LANG_CALL || kid(n, 0)->kind != TS_LANG_ATTR)
    return FALSE;
  const TsLangNode *callee = kid(n, 0), *obj = kid(callee, 0);
  return strcmp(callee->str, fn) == 0 && obj->kind == TS_LANG_NAME && strcmp(obj->str, "tile") == 0;
}

/* x[i]: the tensor's position among the tensor parameters, or -1 with the error set. */
static int
element(Reader *r, const TsLangNode *n)
{
  const TsLangNode *obj = kid(n, 0), *idx = kid(n, 1);
  if (obj->kind != TS_LANG_NAME || tensor_index(r, obj->str) < 0 || idx->kind != TS_LANG_NAME ||
      !g_hash_table_contains(r->index_vars, idx->str)) {
    g_autofree char *src = ts_lang_expr_to_source(n);
    rfail(r, n, "%s is not lowered: an element is read or written as x[i], i = "
                "tile.linear_id() (%s)", src, unsupported_hint);
    return -1;
  }
  return tensor_index(r, obj->str);
}

static const Ex *expr(Reader *r, const TsLangNode *n);

static gboolean
has_exp(const Ex *e)
{
  return e && (e->kind == EX_EXP || has_exp(e->a) || has_exp(e->b));
}

static gboolean has_view(const Ex *e);

/* Row kernels: tile.load of a whole row (or of an [N] tensor), row reductions, casts. A value
 * bound to a name, holding an exp, and reduced is kept in a scratch row: its later uses read it
 * instead of computing the exps again (softmax's exp(x - max) is summed, then divided). */
static const Ex *
row_call(Reader *r, const TsLangNode *n, const char *fn, gboolean *handled)
{
  *handled = TRUE;
  const guint nargs = n->kids->len - 1;
  const TsLangNode *arg = nargs ? kid(n, 1) : NULL;
  if (strcmp(fn, "load") == 0) {
    int t = arg && arg->kind == TS_LANG_NAME ? tensor_index(r, arg->str) : -1;
    for (guint i = 2; t >= 0 && i <= nargs; i++)
      if (kid(n, i)->kind != TS_LANG_KEYWORD || strcmp(kid(n, i)->str, "rows") != 0)
        t = -2;
    if (t < 0)
      return rfail(r, n, "a row kernel loads whole rows, tile.load(x, rows=T.m), or a whole "
                         "[N] tensor, tile.load(gamma)"), NULL;
    r->read[t] = TRUE;
    Ex *e = ex_new(r->o, EX_VIEW, NULL, NULL);
    e->index = (guint)t;
    return e;
  }
  if (strcmp(fn, "row_sum") == 0 || strcmp(fn, "row_max") == 0) {
    const Ex *v = expr(r, arg);
    if (v == NULL)
      return NULL;
    if (arg->kind == TS_LANG_NAME && has_exp(v) && has_view(v) &&
        g_hash_table_lookup(r->locals, arg->str) == v) {
      Step keep = {TRUE, FALSE, r->o->n_scratch++, v};
      g_array_append_val(r->o->steps, keep);
      Ex *w = ex_new(r->o, EX_SCRATCH, NULL, NULL);
      w->index = keep.index;
      g_hash_table_insert(r->locals, arg->str, w);
      v = w;
    }
    Step red = {FALSE, fn[4] == 'm', r->o->n_rowvars++, v};
    g_array_append_val(r->o->steps, red);
    Ex *e = ex_new(r->o, EX_ROW, NULL, NULL);
    e->index = red.index;
    return e;
  }
  if (strcmp(fn, "cast") == 0)
    return expr(r, arg); /* arithmetic is f32; the store converts */
  *handled = FALSE;
  return NULL;
}

static const Ex *
call(Reader *r, const TsLangNode *n)
{
  const TsLangNode *callee = kid(n, 0);
  const char *fn = callee->kind == TS_LANG_ATTR ? callee->str
                   : callee->kind == TS_LANG_NAME ? callee->str
                                                  : "";
  const guint nargs = n->kids->len - 1;
  static const char *const later[] = {"zeros", "full", "dot", "mma", "transpose",
                                      "softmax_online", "softmax_accumulate", "mask_causal",
                                      "alloc_shared", "cp_async", "barrier", NULL};
  if (is_tile_call(n, fn) && g_strv_contains(later, fn))
    return rfail(r, n, "tile.%s is not lowered yet: tiles built up in registers and matrix "
                       "products (the tiled GEMM and attention kernels) come next; %s", fn,
                 unsupported_hint),
           NULL;
  if (r->rows) {
    gboolean handled = FALSE;
    const Ex *e = row_call(r, n, fn, &handled);
    if (handled)
      return e;
  }
  const Ex *a = nargs >= 1 ? expr(r, kid(n, 1)) : NULL;
  const Ex *b = a && nargs >= 2 ? expr(r, kid(n, 2)) : NULL;
  if (nargs >= 1 && a == NULL)
    return NULL;
  if (nargs == 1 && (strcmp(fn, "exp") == 0 || strcmp(fn, "sqrt") == 0))
    return ex_new(r->o, fn[0] == 'e' ? EX_EXP : EX_SQRT, a, NULL);
  if (nargs == 1 && strcmp(fn, "rsqrt") == 0) {
    Ex *one = ex_new(r->o, EX_NUM, NULL, NULL);
    one->num = 1.0;
    Ex *q = ex_new(r->o, EX_BIN, one, ex_new(r->o, EX_SQRT, a, NULL));
    q->op = '/';
    return q;
  }
  if (nargs == 2 && b && (strcmp(fn, "max") == 0 || strcmp(fn, "maximum") == 0))
    return ex_new(r->o, EX_MAX, a, b);
  if (nargs == 2 && b && strcmp(fn, "min") == 0) /* min(a, b) = -max(-a, -b) */
    return ex_new(r->o, EX_NEG,
                  ex_new(r->o, EX_MAX, ex_new(r->o, EX_NEG, a, NULL), ex_new(r->o, EX_NEG, b, NULL)),
                  NULL);
  if (nargs == 1 && strcmp(fn, "float") == 0)
    return a;
  if (nargs >= 2 && b == NULL)
    return NULL;
  g_autofree char *src = ts_lang_expr_to_source(n);
  return rfail(r, n, "%s is not lowered (%s)", src, unsupported_hint), NULL;
}

static const Ex *
expr(Reader *r, const TsLangNode *n)
{
  switch (n->kind) {
  case TS_LANG_INT:
  case TS_LANG_FLOAT: {
    Ex *e = ex_new(r->o, EX_NUM, NULL, NULL);
    e->num = n->num;
    return e;
  }
  case TS_LANG_NAME: {
    const Ex *local = g_hash_table_lookup(r->locals, n->str);
    if (local)
      return local;
    for (guint i = 0; i < r->floats->len; i++)
      if (strcmp(((TsLangParam *)g_ptr_array_index(r->floats, i))->name, n->str) == 0) {
        Ex *e = ex_new(r->o, EX_FLOAT, NULL, NULL);
        e->index = i;
        return e;
      }
    if (strcmp(n->str, "INF") == 0) {
      Ex *e = ex_new(r->o, EX_NUM, NULL, NULL);
      e->num = INFINITY;
      return e;
    }
    return rfail(r, n, "'%s' is not lowered here (%s)", n->str, unsupported_hint), NULL;
  }
  case TS_LANG_SUBSCRIPT: {
    const TsLangNode *obj = kid(n, 0), *idx = kid(n, 1);
    if (r->rows && obj->kind == TS_LANG_ATTR && strcmp(obj->str, "shape") == 0 &&
        kid(obj, 0)->kind == TS_LANG_NAME && tensor_index(r, kid(obj, 0)->str) >= 0 &&
        idx->kind == TS_LANG_INT) {
      const TsLangParam *p = g_ptr_array_index(r->tensors, tensor_index(r, kid(obj, 0)->str));
      const guint d = (guint)idx->num;
      if (d >= p->tensor->rank || p->tensor->dims[d].name == NULL)
        return rfail(r, n, "only named dims are lowered as numbers here"), NULL;
      Ex *e = ex_new(r->o, EX_DIM, NULL, NULL);
      e->dim = g_intern_string(p->tensor->dims[d].name);
      return e;
    }
    if (r->rows) /* l[:, None]: a row's value broadcast over its columns is the same value */
      return expr(r, obj);
    int t = element(r, n);
    if (t < 0)
      return NULL;
    if (r->out && strcmp(((TsLangParam *)g_ptr_array_index(r->tensors, t))->name,
                         r->out->name) == 0 && r->written)
      return r->written; /* read after the body wrote it */
    r->read[t] = TRUE;
    Ex *e = ex_new(r->o, EX_VIEW, NULL, NULL);
    e->index = (guint)t;
    return e;
  }
  case TS_LANG_BINOP: {
    const Ex *a = expr(r, kid(n, 0));
    if (a == NULL)
      return NULL;
    if (strcmp(n->str, "**") == 0) {
      const TsLangNode *p = kid(n, 1);
      if (p->kind != TS_LANG_INT || p->num < 1 || p->num > 4)
        return rfail(r, p, "only the powers 1 to 4 (x ** 2) are lowered"), NULL;
      const Ex *acc = a;
      for (int i = 1; i < (int)p->num; i++) {
        Ex *m = ex_new(r->o, EX_BIN, acc, a);
        m->op = '*';
        acc = m;
      }
      return acc;
    }
    const Ex *b = expr(r, kid(n, 1));
    if (b == NULL)
      return NULL;
    if (strlen(n->str) != 1 || !strchr("+-*/", n->str[0])) {
      g_autofree char *src = ts_lang_expr_to_source(n);
      return rfail(r, n, "the operator '%s' of %s is not lowered (%s)", n->str, src,
                   unsupported_hint),
             NULL;
    }
    Ex *e = ex_new(r->o, EX_BIN, a, b);
    e->op = n->str[0];
    return e;
  }
  case TS_LANG_UNARY: {
    const Ex *a = expr(r, kid(n, 0));
    if (a == NULL)
      return NULL;
    if (strcmp(n->str, "+") == 0)
      return a;
    if (strcmp(n->str, "-") == 0)
      return ex_new(r->o, EX_NEG, a, NULL);
    return rfail(r, n, "the operator '%s' is not lowered (%s)", n->str, unsupported_hint), NULL;
  }
  case TS_LANG_CALL:
    return call(r, n);
  default: {
    g_autofree char *src = ts_lang_expr_to_source(n);
    return rfail(r, n, "%s is not lowered (%s)", src, unsupported_hint), NULL;
  }
  }
}

static gboolean
write_element(Reader *r, const TsLangNode *target, const Ex *value)
{
  int t = element(r, target);
  if (t < 0)
    return FALSE;
  const TsLangParam *p = g_ptr_array_index(r->tensors, t);
  if (r->out && r->out != p)
    return rfail(r, target, "the kernel writes %s and %s: the lowering takes one output tensor",
                 r->out->name, p->name);
  r->out = p;
  r->written = value;
  return TRUE;
}

static gboolean
read_body(Reader *r, const TsLangNode *block)
{
  for (guint i = 0; i < block->kids->len; i++) {
    const TsLangNode *st = kid(block, i);
    switch (st->kind) {
    case TS_LANG_PASS:
      break;
    case TS_LANG_RETURN:
      if (kid(st, 0) != NULL)
        return rfail(r, st, "an elementwise kernel writes its output (y[i] = ...) and returns "
                            "nothing");
      break;
    case TS_LANG_EXPR_STMT: {
      const TsLangNode *c = kid(st, 0);
      if (!r->rows || !is_tile_call(c, "store") || c->kids->len != 3 ||
          kid(c, 1)->kind != TS_LANG_NAME || tensor_index(r, kid(c, 1)->str) < 0)
        return rfail(r, st, "this statement is not lowered (%s)", unsupported_hint);
      const Ex *v = expr(r, kid(c, 2));
      if (v == NULL)
        return FALSE;
      const TsLangParam *p = g_ptr_array_index(r->tensors, tensor_index(r, kid(c, 1)->str));
      if (r->out && r->out != p)
        return rfail(r, c, "the kernel writes %s and %s: the lowering takes one output tensor",
                     r->out->name, p->name);
      r->out = p;
      r->written = v;
      break;
    }
    case TS_LANG_ASSIGN: {
      const TsLangNode *target = kid(st, 0), *value = kid(st, 1);
      if (r->rows && target->kind == TS_LANG_NAME && is_tile_call(value, "context"))
        break;
      if (target->kind == TS_LANG_NAME && is_tile_call(value, "linear_id")) {
        g_hash_table_add(r->index_vars, target->str);
        break;
      }
      const Ex *v = expr(r, value);
      if (v == NULL)
        return FALSE;
      if (target->kind == TS_LANG_NAME)
        g_hash_table_insert(r->locals, target->str, (gpointer)v);
      else if (!write_element(r, target, v))
        return FALSE;
      break;
    }
    case TS_LANG_AUGASSIGN: {
      const TsLangNode *target = kid(st, 0);
      const Ex *old = expr(r, target), *v = old ? expr(r, kid(st, 1)) : NULL;
      if (v == NULL)
        return FALSE;
      if (strlen(st->str) != 1 || !strchr("+-*/", st->str[0]))
        return rfail(r, st, "'%s=' is not lowered (%s)", st->str, unsupported_hint);
      Ex *e = ex_new(r->o, EX_BIN, old, v);
      e->op = st->str[0];
      if (target->kind == TS_LANG_NAME)
        g_hash_table_insert(r->locals, target->str, e);
      else if (!write_element(r, target, e))
        return FALSE;
      break;
    }
    default:
      return rfail(r, st, "this statement is not lowered (%s)", unsupported_hint);
    }
  }
  if (r->out == NULL)
    return rfail(r, r->k->def, "kernel %s writes no tensor: assign an element of a mut tensor "
                               "(y[i] = ...)", r->k->name);
  return TRUE;
}

/* ---- the expression as Tile IR text, in f64, and its cost ---- */

static gboolean
has_view(const Ex *e)
{
  return e && (e->kind == EX_VIEW || e->kind == EX_SCRATCH || has_view(e->a) || has_view(e->b));
}

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
} Printer;

static void print_ex(const Printer *p, const Ex *e, GString *out);

/* C text over the map's views and the kernel's float parameters. For the CPU, a call with no
 * view in it stays scalar (__builtin_*): the map's vector path rewrites the names exp, sqrt and
 * max to vector functions. For CUDA the map is scalar code per register element. */
static void
print_ex(const Printer *p, const Ex *e, GString *out)
{
  const LangOp *o = p->o;
  const gboolean scalar = !has_view(e);
  if (p->hoist && scalar && has_row_value(e) && e->kind != EX_ROW && e->kind != EX_DIM) {
    const char *known = g_hash_table_lookup(p->hoisted, e);
    if (known == NULL) {
      Printer inner = {o, p->cuda, NULL, NULL};
      GString *text = g_string_new(NULL);
      print_ex(&inner, e, text);
      char *name = g_strdup_printf("h%u", g_hash_table_size(p->hoisted));
      ts_tile_let(p->hoist, name, TS_DTYPE_F32, text->str);
      g_string_free(text, TRUE);
      g_hash_table_insert(p->hoisted, (gpointer)e, name);
      known = name;
    }
    g_string_append(out, known);
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
    break;
  case EX_FLOAT:
    g_string_append(out, o->float_names[e->index]);
    break;
  case EX_ROW:
    g_string_append_printf(out, "r%u", e->index);
    break;
  case EX_SCRATCH:
    g_string_append_printf(out, "w%u", e->index);
    break;
  case EX_DIM:
    g_string_append_printf(out, "(float)%s", e->dim);
    break;
  case EX_BIN:
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
      const gboolean splat = !p->cuda && !scalar && !has_view(arg);
      g_string_append(out, splat ? "splat(" : "");
      print_ex(p, arg, out);
      g_string_append(out, splat ? ")" : "");
    }
    g_string_append_c(out, ')');
    break;
  }
  }
}

static char *
print_text(const LangOp *o, const Ex *e, gboolean cuda, TsTileNode *hoist, GHashTable *hoisted)
{
  Printer p = {o, cuda, hoist, hoisted};
  GString *out = g_string_new(NULL);
  print_ex(&p, e, out);
  return g_string_free(out, FALSE);
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

static double
count_flops(const Ex *e)
{
  if (e == NULL || e->kind == EX_NUM || e->kind == EX_VIEW || e->kind == EX_FLOAT ||
      e->kind == EX_ROW || e->kind == EX_SCRATCH || e->kind == EX_DIM)
    return 0;
  return 1 + count_flops(e->a) + count_flops(e->b);
}

/* ---- the op's functions ---- */

static const LangOp *
lang_op(const TsOpInstance *inst)
{
  return (const LangOp *)ts_op_instance_op(inst);
}

static double
lang_flops(const TsOpInstance *inst)
{
  const LangOp *o = lang_op(inst);
  return o->flops_per_element * (double)ts__op_instance_numel(inst, o->def.n_inputs);
}

/* The kernel's own expression in f64 over the stored inputs. */
static char *
lang_reference(const TsOpInstance *inst, void *const *in, double *out)
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

static char *
implemented_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  return lang_op(inst)->implements->reference(inst, in, out);
}

#define KNOB(name, def) ts_sched_point_get_int(point, name, def)

/* One program per BN elements, shared among the threads; a vectorised map within it. */
static gboolean
lang_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
               GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 bn = KNOB("BN", -1), vec = KNOB("vector", 8), threads = KNOB("threads", 1);
  if (bn <= 0 || vec <= 0 || threads <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs positive BN, vector and threads knobs", o->name);
    return FALSE;
  }
  const char *n = o->def.dims;
  ts_tile_kernel_define(k, "BN", bn);
  ts_tile_kernel_define(k, "VEC", vec);
  TsTileNode *par = ts_tile_parallel(k->body, threads);
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", n, "BN", TS_FOR_PARALLEL);
  g_autofree char *count = g_strdup_printf("min(BN, %s - i0)", n);
  TsTileNode *map = ts_tile_map(i0, o->views[o->def.n_inputs], o->expr, count);
  for (guint a = 0; a <= o->def.n_inputs; a++)
    ts_tile_node_add_view(map, o->views[a], a < o->def.n_inputs ? o->def.inputs[a].name
                                                                : o->def.output.name, "i0");
  return TRUE;
}

/* The row program in f64: each row's reductions and scratch rows in order, then its output. */
static char *
lang_reference_rows(const TsOpInstance *inst, void *const *in, double *out)
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

static void
add_row_views(const LangOp *o, TsTileNode *node)
{
  g_autofree char *offset = g_strdup_printf("i * %s", o->col_dim);
  for (guint a = 0; a < o->def.n_inputs; a++)
    ts_tile_node_add_view(node, o->views[a], o->def.inputs[a].name,
                          o->broadcast[a] ? "0" : offset);
  for (guint k = 0; k < o->n_scratch; k++) {
    g_autofree char *v = g_strdup_printf("w%u", k), *b = g_strdup_printf("W%u", k);
    ts_tile_node_add_view(node, v, b, "0");
  }
}

/* BM rows a program, shared among the threads as they free up; in each row, the steps in
 * order (a reduction, or a scratch row of the thread's own) and the output's map, with every
 * per-row part of an element computed once before the pass that uses it. */
static gboolean
lang_lower_cpu_rows(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                    GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 bm = KNOB("BM", -1), vec = KNOB("vector", 8), threads = KNOB("threads", 1);
  if (bm <= 0 || vec <= 0 || threads <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs positive BM, vector and threads knobs", o->name);
    return FALSE;
  }
  const char *m = o->row_dim, *n = o->col_dim;
  ts_tile_kernel_define(k, "BM", bm);
  ts_tile_kernel_define(k, "VEC", vec);
  TsTileNode *par = ts_tile_parallel(k->body, threads);
  for (guint s = 0; s < o->n_scratch; s++) {
    g_autofree char *name = g_strdup_printf("W%u", s);
    ts_tile_alloc(par, k, name, TS_MEM_SHARED, TS_DTYPE_F32, n, TRUE, "one f32 row");
  }
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", m, "BM", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *last = g_strdup_printf("min(i0 + BM, %s)", m);
  TsTileNode *row = ts_tile_for(i0, "i", "i0", last, "1", TS_FOR_SERIAL);
  g_autoptr(GHashTable) hoisted = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  for (guint s = 0; s < o->steps->len; s++) {
    const Step *st = &g_array_index(o->steps, Step, s);
    g_autofree char *text = print_text(o, st->expr, FALSE, row, hoisted);
    TsTileNode *node;
    if (st->scratch) {
      g_autofree char *dst = g_strdup_printf("w%u", st->index);
      node = ts_tile_map(row, dst, text, n);
    } else {
      g_autofree char *var = g_strdup_printf("r%u", st->index);
      node = ts_tile_reduce(row, var, st->max ? "max" : "sum", text, n);
    }
    add_row_views(o, node);
  }
  g_autofree char *text = print_text(o, o->value, FALSE, row, hoisted);
  TsTileNode *map = ts_tile_map(row, o->views[o->def.n_inputs], text, n);
  add_row_views(o, map);
  g_autofree char *offset = g_strdup_printf("i * %s", n);
  ts_tile_node_add_view(map, o->views[o->def.n_inputs], o->def.output.name, offset);
  /* The last pass over row i asks for row i + 1 of the first [M, N] input, whose first pass
   * would otherwise wait on memory (as the built-in row ops do: 1.08-1.20x). */
  for (guint a = 0; a < o->def.n_inputs; a++)
    if (!o->broadcast[a]) {
      g_autofree char *next = g_strdup_printf("%s + min(i + 1, %s - 1) * %s",
                                              o->def.inputs[a].name, m, n);
      ts_tile_map_set_prefetch(map, next);
      break;
    }
  return TRUE;
}

static gboolean
is_pow2(gint64 v)
{
  return v > 0 && (v & (v - 1)) == 0;
}

/* One CTA per BN elements, each thread holding PER * VEC elements of every tile in registers
 * (the row tile of ts_cuda_rows.cuh, one row of N columns): the inputs loaded, the map applied
 * element by element, the output stored. */
static gboolean
lang_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 bn = KNOB("BN", -1), w = KNOB("warps", 4), v = KNOB("vector", 4);
  const gint64 threads = w * 32;
  if (bn <= 0 || w <= 0 || w > 32 || !is_pow2(v) || v > 16 || bn % (threads * v) != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CUDA lowering needs warps in 1..32, a vector of 1, 2, 4, 8 or 16 "
                "elements and a BN that is a multiple of warps * 32 * vector", o->name);
    return FALSE;
  }
  const gint64 n = ts_shape_get(ts_op_instance_shape(inst), o->def.dims);
  const gint64 gx = MAX(1, (n + bn - 1) / bn);
  if (gx > G_MAXINT32) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: %" G_GINT64_FORMAT " tiles exceed the grid's 2^31 - 1 CTAs", o->name, gx);
    return FALSE;
  }
  ts_tile_kernel_define(k, "BN", bn);
  ts_tile_kernel_define(k, "THREADS", threads);
  ts_tile_kernel_define(k, "VEC", v);
  ts_tile_kernel_define(k, "PER", bn / (threads * v));
  ts_tile_kernel_define(k, "NCOLS", n);
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
  g_autofree char *expr = print_text(o, o->value, TRUE, NULL, NULL);
  TsTileNode *map = ts_tile_map(g, o->views[n_in], expr, "PER * VEC");
  for (guint a = 0; a <= n_in; a++)
    ts_tile_node_add_view(map, o->views[a], g_ptr_array_index(regs, a), "0");
  ts_tile_intrinsic(g, "rows_store", tile, o->def.output.name, "0", "i0", "1",
                    (char *)g_ptr_array_index(regs, n_in), "1.0f", "nullptr", "nullptr", NULL);
  return TRUE;
}

/* Floats of a row a thread may hold in registers: the CUDA row kernels keep whole rows (the
 * built-in row ops' ROW_REGS). */
#define ROW_REGS 64

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

/* A CTA per BM rows, each row held whole in the registers of its row group (the row tile of
 * ts_cuda_rows.cuh): the inputs loaded once ([N] ones broadcast to every row group), each step
 * a map over the registers (a reduction's operand into a temporary, then the row group's
 * reduction; a scratch row into its own tile), the output mapped and stored. */
static gboolean
lang_lower_cuda_rows(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                     GError **error)
{
  const LangOp *o = lang_op(inst);
  const gint64 bm = KNOB("BM", -1), w = KNOB("warps", 4), v = KNOB("vector", 4);
  const gint64 threads = w * 32;
  const gint64 tpr = bm > 0 ? threads / bm : 0;
  if (bm <= 0 || w <= 0 || w > 32 || !is_pow2(v) || v > 16 || threads % bm != 0 ||
      (tpr % 32 != 0 && !is_pow2(tpr))) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CUDA lowering needs warps in 1..32, a vector of 1, 2, 4, 8 or 16 "
                "elements and a BM dividing warps * 32 into a power of two or a multiple of 32 "
                "threads a row", o->name);
    return FALSE;
  }
  const TsShape *shape = ts_op_instance_shape(inst);
  const gint64 m = ts_shape_get(shape, o->row_dim), n = ts_shape_get(shape, o->col_dim);
  gint64 vec = v;
  while (n % vec != 0)
    vec /= 2;
  const gint64 per = (n + tpr * vec - 1) / (tpr * vec);
  if (per * vec > ROW_REGS) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: a row of %" G_GINT64_FORMAT " elements over %" G_GINT64_FORMAT " threads "
                "does not fit in registers (%d floats a thread at most): more warps or a "
                "smaller BM", o->name, n, tpr, ROW_REGS);
    return FALSE;
  }
  const gint64 gx = MAX(1, (m + bm - 1) / bm);
  if (gx > G_MAXINT32) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: %" G_GINT64_FORMAT " row tiles exceed the grid's 2^31 - 1 CTAs", o->name, gx);
    return FALSE;
  }
  ts_tile_kernel_define(k, "BM", bm);
  ts_tile_kernel_define(k, "WARPS", w);
  ts_tile_kernel_define(k, "THREADS", threads);
  ts_tile_kernel_define(k, "VEC", vec);
  ts_tile_kernel_define(k, "PER", per);
  ts_tile_kernel_define(k, "COLS", per * tpr * vec);
  ts_tile_kernel_define(k, "NCOLS", n);
  const char *tile = "BM=BM,THREADS=THREADS,VEC=VEC,COLS=COLS,NCOLS=NCOLS";
  g_autofree char *ttile = g_strdup_printf("T=%s,%s",
                                           ts_dtype_name(ts_op_instance_dtype(inst)->storage), tile);
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
    g_autofree char *text = print_text(o, st->expr, TRUE, g, hoisted);
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
    g_autofree char *var = g_strdup_printf("r%u", st->index);
    ts_tile_let(g, var, TS_DTYPE_F32, st->max ? "__int_as_float(0xff800000)" : "0.0f");
    g_autofree char *acc = g_strdup_printf("OP=%s,%s", st->max ? "ts_max" : "ts_sum", tile);
    ts_tile_intrinsic(g, "rows_accum", acc, var, "r_t", "0", NULL);
    g_autofree char *all = g_strdup_printf("OP=%s,BM=BM,THREADS=THREADS",
                                           st->max ? "ts_max" : "ts_sum");
    ts_tile_intrinsic(g, "rows_allreduce", all, var,
                      shared ? (n_reductions++ % 2 ? "red + WARPS" : "red") : "nullptr", NULL);
  }
  g_autofree char *text = print_text(o, o->value, TRUE, g, hoisted);
  g_autofree char *out = g_strdup_printf("r_%s", o->views[o->def.n_inputs]);
  ts_tile_alloc(g, k, out, TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE, "the output row");
  TsTileNode *map = ts_tile_map(g, o->views[o->def.n_inputs], text, "PER * VEC");
  add_reg_views(o, map);
  ts_tile_node_add_view(map, o->views[o->def.n_inputs], out, "0");
  ts_tile_intrinsic(g, "rows_store", ttile, o->def.output.name, "r0_", "0", o->row_dim, out,
                    "1.0f", "nullptr", "nullptr", NULL);
  return TRUE;
}

/* ---- building the op ---- */

static char *
upper(const char *s)
{
  return g_ascii_strup(s, -1);
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
    if (p->tensor->rank == 2 && wide == NULL)
      wide = p;
    first = first ? first : p;
  }
  if (first == NULL)
    return rfail(r, k->def, "kernel %s has no tensor parameter", k->name);
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
      return rfail(r, k->def, "%s is %s, which does not fit %s (%s): the lowering takes "
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
      return rfail(r, k->def, "kernel %s reads more than %d tensors", k->name, TS_OP_MAX_ARGS);
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
  const gboolean in_place = r->read[tensor_index(r, r->out->name)];
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
      return rfail(r, k->def, "the tensor name %s is one the generated code uses for its own "
                              "values (r0, w0, h0 ...): rename it", v);
    if (strcmp(o->arg_names[i], o->views[i]) == 0 || g_hash_table_contains(seen, o->views[i]) ||
        g_hash_table_contains(seen, o->arg_names[i]))
      return rfail(r, k->def, "the tensor names of kernel %s collide, once upper- and lower-case "
                              "are folded, with each other or with a name the generated code "
                              "uses (%s): rename one", k->name, o->views[i]);
    g_hash_table_add(seen, o->views[i]);
    g_hash_table_add(seen, o->arg_names[i]);
  }
  if (r->floats->len > G_N_ELEMENTS(o->float_names))
    return rfail(r, k->def, "kernel %s has %u float parameters; the lowering takes at most 2",
                 k->name, r->floats->len);
  for (guint f = 0; f < r->floats->len; f++) {
    const TsLangParam *p = g_ptr_array_index(r->floats, f);
    const char *v = p->name;
    if (g_hash_table_contains(seen, v) ||
        (strlen(v) > 1 && strchr("rwhRWH", v[0]) && strspn(v + 1, "0123456789") == strlen(v + 1)))
      return rfail(r, k->def, "the float parameter %s of kernel %s has a tensor's name once "
                              "case is folded, or one the generated code uses: rename it",
                   p->name, k->name);
    o->float_names[f] = g_strdup(p->name);
    o->def.float_names[f] = o->float_names[f];
    /* Runs use the parameter's default, else 1.5 (a value no kernel gets right by dropping
     * or doubling the parameter). */
    o->def.float_values[f] = p->default_source ? g_ascii_strtod(p->default_source, NULL) : 1.5;
  }
  o->def.n_floats = r->floats->len;

  o->expr = print_text(o, o->value, FALSE, NULL, NULL);
  o->flops_per_element = count_flops(o->value);
  for (guint i = 0; o->steps && i < o->steps->len; i++) /* a reduction adds one per element */
    o->flops_per_element += count_flops(g_array_index(o->steps, Step, i).expr) +
                            !g_array_index(o->steps, Step, i).scratch;
  o->flops_per_element = MAX(1.0, o->flops_per_element);
  return TRUE;
}

/* A target's space: the kernel's, plus the knobs the target's lowering reads that the kernel
 * leaves out (with one value each) and the target's constraints; its default point is the
 * space's first valid point (the first point outright when a constraint needs the shape). */
static gboolean
target_space(Reader *r, const char *text, const char *const *knobs, const gint64 *values,
             const char *where, char **space_out, char **point_out)
{
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text, r->error);
  if (space == NULL)
    return FALSE;
  for (guint i = 0; knobs[i]; i++)
    if (ts_sched_space_knob_index(space, knobs[i]) < 0) {
      TsSchedValue v = {.kind = TS_SCHED_INT, .i = values[i]};
      ts_sched_space_set_knob(space, knobs[i], &v, 1);
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
  const char *text = k->space ? k->space
                     : k->schedule ? k->schedule
                     : o->rows     ? "block(m=[1,4,16]).vector([4,8,16])"
                                   : "block(n=[4096,16384,65536]).vector([4,8,16])";
  static const char *const cpu_knobs[] = {"threads", "vector", NULL};
  const gint64 cpu_values[] = {MAX(1, (gint64)g_get_num_processors()), 8};
  static const char *const cuda_knobs[] = {"warps", "vector", NULL};
  static const gint64 cuda_values[] = {4, 4};
  if (!target_space(r, text, cpu_knobs, cpu_values, NULL, &o->space, &o->default_point))
    return FALSE;
  o->def.cpu_space = o->space;
  o->def.cpu_default = o->default_point;
  /* CUDA: elementwise, at most 32 elements of a tile a thread; rows, a row group of a power of
   * two or a multiple of 32 threads holding the whole row in registers. */
  g_autofree char *rows_where =
    o->rows ? g_strdup_printf("warps * 32 %% BM == 0 && %s * BM <= %d * 32 * warps", o->col_dim,
                              ROW_REGS)
            : NULL;
  if (!target_space(r, text, cuda_knobs, cuda_values,
                    o->rows ? rows_where
                            : "BN % (warps * 32 * vector) == 0 && BN <= 32 * warps * 32",
                    &o->cuda_space, &o->cuda_default))
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
    o->def.reference = o->rows ? lang_reference_rows : lang_reference;
    return TRUE;
  }
  const TsOpDef *op = ts_op_lookup(k->implements);
  const TsLangNode *at = k->def;
  if (op == NULL || op->symbol != NULL)
    return rfail(r, at, "@kernel.implements(\"%s\"): no built-in op of that name",
                 k->implements);
  if (op->n_inputs != o->def.n_inputs || op->n_floats != o->def.n_floats ||
      strcmp(op->dims, o->def.dims) != 0)
    return rfail(r, at, "kernel %s reads %u tensors and %u floats over dims %s, but %s takes "
                        "%u inputs and %u floats over dims %s: it cannot be checked against "
                        "%s's reference", k->name, o->def.n_inputs, o->def.n_floats,
                 o->def.dims, op->name, op->n_inputs, op->n_floats, op->dims, op->name);
  o->implements = op;
  o->def.reference = implemented_reference;
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
  g_free(o->col_dim);
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

const TsOpDef *
ts_op_register_kernel(const char *src, const char *path, const char *name, GError **error)
{
  g_return_val_if_fail(src != NULL, NULL);
  const char *file = path ? path : "<kernel>";
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

  /* The name carries a hash of the source: a kernel edited is another workload in the cache,
   * and a worker that registers the same source finds the same op. */
  g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, src, -1);
  g_autofree char *opname = g_strdup_printf("kernel:%s@%.8s", k->name, sum);
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
  for (guint i = 0; i < k->params->len; i++) {
    TsLangParam *p = g_ptr_array_index(k->params, i);
    if (p->tensor)
      g_ptr_array_add(tensors, p);
    else if (strcmp(p->scalar, "int") != 0 && strcmp(p->scalar, "bool") != 0)
      g_ptr_array_add(floats, p);
    else
      return rfail(&r, def, "the %s parameter %s is not lowered yet (tensors and float "
                            "parameters are)", p->scalar, p->name), NULL;
  }
  if (tensors->len > G_N_ELEMENTS(r.read))
    return rfail(&r, def, "kernel %s has more than %d tensor parameters", k->name,
                 TS_OP_MAX_ARGS),
           NULL;
  for (guint i = 0; i < tensors->len; i++)
    r.rows |= ((TsLangParam *)g_ptr_array_index(tensors, i))->tensor->rank == 2;
  if (!read_body(&r, kid(def, 3)))
    return NULL;
  o->value = r.written;
  if (!build(&r, k) || !spaces(&r, k) || !match_implements(&r, k))
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
  o->def.inst_flops = lang_flops;
  o->def.lower_cpu = o->rows ? lang_lower_cpu_rows : lang_lower_cpu;
  o->def.lower_cuda = o->rows ? lang_lower_cuda_rows : lang_lower_cuda;
  o->def.kernel_src = o->src;
  o->def.kernel_path = o->path;
  o->def.kernel_budget_ms = k->budget_ms;
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
ts_op_kernel_cache(const TsOpDef *op)
{
  return op ? op->kernel_cache : NULL;
}
