/* ts-op-lang-read.c — a kernel's body read into expression trees: an elementwise kernel's
 * output element (x[i] with i = tile.linear_id()), or a row kernel's program (whole rows
 * loaded, row reductions and the values they need kept in scratch rows, the output row). Every
 * construct outside what the lowerings take is refused at its position, saying what they
 * take. */
#include "ts-op-lang-private.h"

#include <math.h>
#include <string.h>

gboolean
ts__lang_fail(Reader *r, const TsLangNode *at, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  ts_lang_set_error_valist(r->error, TS_LANG_ERROR_TYPE, r->src, r->file, at->line, at->col, fmt,
                           ap);
  va_end(ap);
  return FALSE;
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

int
ts__lang_tensor_index(Reader *r, const char *name)
{
  for (guint i = 0; i < r->tensors->len; i++)
    if (strcmp(((TsLangParam *)g_ptr_array_index(r->tensors, i))->name, name) == 0)
      return (int)i;
  return -1;
}

/* x[i]: the tensor's position among the tensor parameters, or -1 with the error set. */
static int
element(Reader *r, const TsLangNode *n)
{
  const TsLangNode *obj = ts__lang_kid(n, 0), *idx = ts__lang_kid(n, 1);
  if (obj->kind != TS_LANG_NAME || ts__lang_tensor_index(r, obj->str) < 0 || idx->kind != TS_LANG_NAME ||
      !g_hash_table_contains(r->index_vars, idx->str)) {
    g_autofree char *src = ts_lang_expr_to_source(n);
    ts__lang_fail(r, n, "%s is not lowered: an element is read or written as x[i], i = "
                "tile.linear_id() (%s)", src, unsupported_hint);
    return -1;
  }
  return ts__lang_tensor_index(r, obj->str);
}

static const Ex *expr(Reader *r, const TsLangNode *n);


/* Row kernels: tile.load of a whole row (or of an [N] tensor), row reductions, casts. A value
 * bound to a name, holding an exp, and reduced is kept in a scratch row: its later uses read it
 * instead of computing the exps again (softmax's exp(x - max) is summed, then divided). */
static const Ex *
row_call(Reader *r, const TsLangNode *n, const char *fn, gboolean *handled)
{
  *handled = TRUE;
  const guint nargs = n->kids->len - 1;
  const TsLangNode *arg = nargs ? ts__lang_kid(n, 1) : NULL;
  if (strcmp(fn, "load") == 0) {
    int t = arg && arg->kind == TS_LANG_NAME ? ts__lang_tensor_index(r, arg->str) : -1;
    for (guint i = 2; t >= 0 && i <= nargs; i++)
      if (ts__lang_kid(n, i)->kind != TS_LANG_KEYWORD || strcmp(ts__lang_kid(n, i)->str, "rows") != 0)
        t = -2;
    if (t < 0)
      return ts__lang_fail(r, n, "a row kernel loads whole rows, tile.load(x, rows=T.m), or a whole "
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
    if (arg->kind == TS_LANG_NAME && ts__lang_has_exp(v) && ts__lang_has_view(v) &&
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
  const TsLangNode *callee = ts__lang_kid(n, 0);
  const char *fn = callee->kind == TS_LANG_ATTR ? callee->str
                   : callee->kind == TS_LANG_NAME ? callee->str
                                                  : "";
  const guint nargs = n->kids->len - 1;
  static const char *const later[] = {"zeros", "full", "dot", "mma", "transpose",
                                      "softmax_online", "softmax_accumulate", "mask_causal",
                                      "alloc_shared", "cp_async", "barrier", NULL};
  if (ts__lang_is_tile_call(n, fn) && g_strv_contains(later, fn))
    return ts__lang_fail(r, n, "tile.%s is not lowered outside a GEMM (tile.zeros, a tile.range_k "
                       "loop of tile.dot, tile.store); attention kernels come next; %s", fn,
                 unsupported_hint),
           NULL;
  if (r->rows) {
    gboolean handled = FALSE;
    const Ex *e = row_call(r, n, fn, &handled);
    if (handled)
      return e;
  }
  const Ex *a = nargs >= 1 ? expr(r, ts__lang_kid(n, 1)) : NULL;
  const Ex *b = a && nargs >= 2 ? expr(r, ts__lang_kid(n, 2)) : NULL;
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
  return ts__lang_fail(r, n, "%s is not lowered (%s)", src, unsupported_hint), NULL;
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
    return ts__lang_fail(r, n, "'%s' is not lowered here (%s)", n->str, unsupported_hint), NULL;
  }
  case TS_LANG_SUBSCRIPT: {
    const TsLangNode *obj = ts__lang_kid(n, 0), *idx = ts__lang_kid(n, 1);
    if (r->rows && obj->kind == TS_LANG_ATTR && strcmp(obj->str, "shape") == 0 &&
        ts__lang_kid(obj, 0)->kind == TS_LANG_NAME && ts__lang_tensor_index(r, ts__lang_kid(obj, 0)->str) >= 0 &&
        idx->kind == TS_LANG_INT) {
      const TsLangParam *p = g_ptr_array_index(r->tensors, ts__lang_tensor_index(r, ts__lang_kid(obj, 0)->str));
      const guint d = (guint)idx->num;
      if (d >= p->tensor->rank || p->tensor->dims[d].name == NULL)
        return ts__lang_fail(r, n, "only named dims are lowered as numbers here"), NULL;
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
    const Ex *a = expr(r, ts__lang_kid(n, 0));
    if (a == NULL)
      return NULL;
    if (strcmp(n->str, "**") == 0) {
      const TsLangNode *p = ts__lang_kid(n, 1);
      if (p->kind != TS_LANG_INT || p->num < 1 || p->num > 4)
        return ts__lang_fail(r, p, "only the powers 1 to 4 (x ** 2) are lowered"), NULL;
      const Ex *acc = a;
      for (int i = 1; i < (int)p->num; i++) {
        Ex *m = ex_new(r->o, EX_BIN, acc, a);
        m->op = '*';
        acc = m;
      }
      return acc;
    }
    const Ex *b = expr(r, ts__lang_kid(n, 1));
    if (b == NULL)
      return NULL;
    if (strlen(n->str) != 1 || !strchr("+-*/", n->str[0])) {
      g_autofree char *src = ts_lang_expr_to_source(n);
      return ts__lang_fail(r, n, "the operator '%s' of %s is not lowered (%s)", n->str, src,
                   unsupported_hint),
             NULL;
    }
    Ex *e = ex_new(r->o, EX_BIN, a, b);
    e->op = n->str[0];
    return e;
  }
  case TS_LANG_UNARY: {
    const Ex *a = expr(r, ts__lang_kid(n, 0));
    if (a == NULL)
      return NULL;
    if (strcmp(n->str, "+") == 0)
      return a;
    if (strcmp(n->str, "-") == 0)
      return ex_new(r->o, EX_NEG, a, NULL);
    return ts__lang_fail(r, n, "the operator '%s' is not lowered (%s)", n->str, unsupported_hint), NULL;
  }
  case TS_LANG_CALL:
    return call(r, n);
  default: {
    g_autofree char *src = ts_lang_expr_to_source(n);
    return ts__lang_fail(r, n, "%s is not lowered (%s)", src, unsupported_hint), NULL;
  }
  }
}

const Ex *
ts__lang_expr(Reader *r, const TsLangNode *n)
{
  return expr(r, n);
}

static gboolean
write_element(Reader *r, const TsLangNode *target, const Ex *value)
{
  int t = element(r, target);
  if (t < 0)
    return FALSE;
  const TsLangParam *p = g_ptr_array_index(r->tensors, t);
  if (r->out && r->out != p)
    return ts__lang_fail(r, target, "the kernel writes %s and %s: the lowering takes one output tensor",
                 r->out->name, p->name);
  r->out = p;
  r->written = value;
  return TRUE;
}

gboolean
ts__lang_read_body(Reader *r, const TsLangNode *block)
{
  for (guint i = 0; i < block->kids->len; i++) {
    const TsLangNode *st = ts__lang_kid(block, i);
    switch (st->kind) {
    case TS_LANG_PASS:
      break;
    case TS_LANG_RETURN:
      if (ts__lang_kid(st, 0) != NULL)
        return ts__lang_fail(r, st, "an elementwise kernel writes its output (y[i] = ...) and returns "
                            "nothing");
      break;
    case TS_LANG_EXPR_STMT: {
      const TsLangNode *c = ts__lang_kid(st, 0);
      if (!r->rows || !ts__lang_is_tile_call(c, "store") || c->kids->len != 3 ||
          ts__lang_kid(c, 1)->kind != TS_LANG_NAME || ts__lang_tensor_index(r, ts__lang_kid(c, 1)->str) < 0)
        return ts__lang_fail(r, st, "this statement is not lowered (%s)", unsupported_hint);
      const Ex *v = expr(r, ts__lang_kid(c, 2));
      if (v == NULL)
        return FALSE;
      const TsLangParam *p = g_ptr_array_index(r->tensors, ts__lang_tensor_index(r, ts__lang_kid(c, 1)->str));
      if (r->out && r->out != p)
        return ts__lang_fail(r, c, "the kernel writes %s and %s: the lowering takes one output tensor",
                     r->out->name, p->name);
      r->out = p;
      r->written = v;
      break;
    }
    case TS_LANG_ASSIGN: {
      const TsLangNode *target = ts__lang_kid(st, 0), *value = ts__lang_kid(st, 1);
      if (r->rows && target->kind == TS_LANG_NAME && ts__lang_is_tile_call(value, "context"))
        break;
      if (target->kind == TS_LANG_NAME && ts__lang_is_tile_call(value, "linear_id")) {
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
      const TsLangNode *target = ts__lang_kid(st, 0);
      const Ex *old = expr(r, target), *v = old ? expr(r, ts__lang_kid(st, 1)) : NULL;
      if (v == NULL)
        return FALSE;
      if (strlen(st->str) != 1 || !strchr("+-*/", st->str[0]))
        return ts__lang_fail(r, st, "'%s=' is not lowered (%s)", st->str, unsupported_hint);
      Ex *e = ex_new(r->o, EX_BIN, old, v);
      e->op = st->str[0];
      if (target->kind == TS_LANG_NAME)
        g_hash_table_insert(r->locals, target->str, e);
      else if (!write_element(r, target, e))
        return FALSE;
      break;
    }
    default:
      return ts__lang_fail(r, st, "this statement is not lowered (%s)", unsupported_hint);
    }
  }
  if (r->out == NULL)
    return ts__lang_fail(r, r->k->def, "kernel %s writes no tensor: assign an element of a mut tensor "
                               "(y[i] = ...)", r->k->name);
  return TRUE;
}
