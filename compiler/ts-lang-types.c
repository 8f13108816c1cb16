/* ts-lang-types.c — the body's types: what each value of a kernel is (a tensor parameter, a
 * tile with symbolic extents and a dtype, a scalar, an index, a compile-time flag, a block of a
 * dim walked by a loop), derived through every intrinsic so that a tile whose shape cannot be
 * derived, operands whose shapes do not fit, dtypes that do not meet and writes to read-only
 * tensors are errors at the construct at fault, each naming both sides. Extents are symbols:
 * the schedule's knobs (T.m is BM, T.n BN, T.k BK), the tensor dim T.d spans (bound by the
 * first load that uses it) or integers; the lowering gives them values per schedule point. */
#include "ts-lang-private.h"

#include <string.h>

#include "ts-sched.h"

typedef enum {
  TY_NONE,    /* a statement's call: store, mask_causal, barrier */
  TY_MODULE,  /* tile, ts */
  TY_FUNC,    /* float, int, min, max, sqrt, abs */
  TY_TENSOR,  /* a tensor parameter */
  TY_TILE,    /* a tile: rank extents and a dtype */
  TY_SCALAR,  /* one value of a dtype: x[i], alpha, float(T.d) */
  TY_INDEX,   /* an integer: a dim, a knob, a loop counter; ext its symbol when it has one */
  TY_BOOL,    /* a flag; runtime when it depends on data */
  TY_CONTEXT, /* T = tile.context() */
  TY_BLOCK,   /* a loop variable of tile.range_k/range_n: dim walked in steps of ext */
  TY_RANGE,   /* an iterable: elem is what the loop variable is */
  TY_DTYPE,   /* f32, bf16 ... */
  TY_SHAPE,   /* X.shape */
  TY_TUPLE,
} TyKind;

#define MAX_TILE_RANK 4

typedef struct Ty Ty;
struct Ty {
  TyKind kind;
  TsDtype dtype;  /* TILE, SCALAR, DTYPE */
  TsDtype accum;  /* TILE: the accumulation its tensor's policy asks for, or INVALID */
  guint rank;     /* TILE */
  const char *ext[MAX_TILE_RANK]; /* TILE extents; INDEX, BLOCK: ext[0] its symbol or NULL */
  const char *dim;                /* INDEX: the dim it measures; BLOCK: the dim walked */
  gboolean runtime;               /* BOOL: depends on data */
  const TsLangParam *param;       /* TENSOR, and SHAPE's tensor */
  const Ty *elem;                 /* RANGE */
  GPtrArray *items;               /* TUPLE: Ty* (borrowed from the arena) */
  const char *text;               /* FUNC: its name */
};

/* Knobs the lowering consumes itself (a body has no use for them). */
/* Knobs a lowering reads rather than the body: the row and elementwise lowerings' and the
 * gemm and attention templates' (schedule, persistent, epilogue and the cluster's CM, CN on
 * CUDA; dot and walk on the CPU), so a kernel through a template may narrow them too. */
static const char *const lowering_knobs[] = {"warps",    "stages",     "vector",   "swizzle",
                                             "threads",  "unroll",     "raster",   "mma",
                                             "load",     "MR",         "NR",       "store",
                                             "pipeline", "math",       "jam",      "apply",
                                             "schedule", "persistent", "epilogue", "CM",
                                             "CN",       "dot",        "walk",     NULL};

typedef struct {
  const char *src, *file;
  GError **error;
  TsLangKernel *k;
  GPtrArray *arena;      /* Ty* owned */
  GStringChunk *strs;    /* every extent and dim text */
  GHashTable *env;       /* name -> Ty* */
  GPtrArray *order;      /* names in the order first bound */
  GHashTable *knobs;     /* knob name -> "" (of the space or schedule point); NULL: none given */
  GHashTable *used;      /* knobs the body refers to */
  const char *d_dim;     /* the dim T.d spans, once a load has bound it */
  const TsLangNode *d_at;
  const Ty *ret;         /* the returned tile */
} TCtx;

static gboolean tfail(TCtx *t, const TsLangNode *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
tfail(TCtx *t, const TsLangNode *at, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  ts_lang_set_error_valist(t->error, TS_LANG_ERROR_TYPE, t->src, t->file, at->line, at->col, fmt,
                           ap);
  va_end(ap);
  return FALSE;
}

static const TsLangNode *
kid(const TsLangNode *n, guint i)
{
  return i < n->kids->len ? g_ptr_array_index(n->kids, i) : NULL;
}

static Ty *
ty_new(TCtx *t, TyKind kind)
{
  Ty *y = g_new0(Ty, 1);
  y->kind = kind;
  g_ptr_array_add(t->arena, y);
  return y;
}

static const char *
str(TCtx *t, const char *s)
{
  return s ? g_string_chunk_insert_const(t->strs, s) : NULL;
}

/* T.d's placeholder resolves to the dim a load bound it to. */
static const char *
ext_of(const TCtx *t, const char *e)
{
  return e && t->d_dim && strcmp(e, "T.d") == 0 ? t->d_dim : e;
}

static gboolean
ext_eq(const TCtx *t, const char *a, const char *b)
{
  return g_strcmp0(ext_of(t, a), ext_of(t, b)) == 0;
}

static Ty *
tile_ty(TCtx *t, guint rank, const char *const *ext, TsDtype dtype, TsDtype accum)
{
  Ty *y = ty_new(t, TY_TILE);
  y->rank = rank;
  for (guint i = 0; i < rank; i++)
    y->ext[i] = ext[i];
  y->dtype = dtype;
  y->accum = accum;
  return y;
}

static char *
shape_str(const TCtx *t, const Ty *y)
{
  GString *s = g_string_new("[");
  for (guint i = 0; i < y->rank; i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", ext_of(t, y->ext[i]));
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static char *
ty_str(const TCtx *t, const Ty *y)
{
  switch (y->kind) {
  case TY_TILE: {
    g_autofree char *shape = shape_str(t, y);
    return g_strdup_printf("tile%s %s", shape, ts_dtype_name(y->dtype));
  }
  case TY_TENSOR:
    return ts_tensor_type_to_string(y->param->tensor);
  case TY_SCALAR:
    return g_strdup(ts_dtype_name(y->dtype));
  case TY_INDEX:
    return y->dim ? g_strdup_printf("index (%s)", y->dim)
                  : y->ext[0] ? g_strdup_printf("index (%s)", ext_of(t, y->ext[0]))
                              : g_strdup("index");
  case TY_BOOL:
    return g_strdup(y->runtime ? "bool (from data)" : "bool");
  case TY_CONTEXT:
    return g_strdup("tile context");
  case TY_BLOCK:
    return g_strdup_printf("block of %s by %s", y->dim, ext_of(t, y->ext[0]));
  case TY_RANGE: {
    g_autofree char *e = ty_str(t, y->elem);
    return g_strdup_printf("range of %s", e);
  }
  case TY_DTYPE:
    return g_strdup_printf("dtype %s", ts_dtype_name(y->dtype));
  case TY_SHAPE:
    return g_strdup_printf("%s.shape", y->param->name);
  case TY_TUPLE: {
    GString *s = g_string_new("(");
    for (guint i = 0; i < y->items->len; i++) {
      g_autofree char *e = ty_str(t, g_ptr_array_index(y->items, i));
      g_string_append_printf(s, "%s%s", i ? ", " : "", e);
    }
    g_string_append_c(s, ')');
    return g_string_free(s, FALSE);
  }
  case TY_MODULE:
    return g_strdup("module");
  case TY_FUNC:
    return g_strdup_printf("function %s", y->text);
  case TY_NONE:
  default:
    return g_strdup("nothing");
  }
}

static Ty *type_of(TCtx *t, const TsLangNode *n);

/* ---- extents ---- */

/* A knob the body refers to: noted as used; an error when the space does not set it. */
static gboolean
use_knob(TCtx *t, const TsLangNode *at, const char *knob, const char *how)
{
  g_hash_table_add(t->used, (gpointer)str(t, knob));
  if (t->knobs == NULL || g_hash_table_contains(t->knobs, knob))
    return TRUE;
  return tfail(t, at, "%s is the knob %s, which the %s does not set: add %s=[...] to it", how,
               knob, t->k->space ? "autotune space" : "schedule", knob);
}

/* The extent an index stands for along a tile dim, or an error: tile shapes come from T.m,
 * T.n, T.k, T.d, knobs, dims and integers, never from data. */
static const char *
extent(TCtx *t, const TsLangNode *at, const Ty *y)
{
  if (y->kind == TY_INDEX && (y->ext[0] || y->dim))
    return y->ext[0] ? y->ext[0] : y->dim;
  g_autofree char *what = ty_str(t, y);
  g_autofree char *src = ts_lang_expr_to_source(at);
  tfail(t, at,
        "a tile shape cannot be derived from %s, which is %s: tile extents are T.m, T.n, T.k, "
        "T.d, the space's knobs, the tensors' dims (X.shape[i]) or integers",
        src, what);
  return NULL;
}

/* (T.m, T.n), or one extent: the shape argument of zeros/full/alloc_shared. */
static gboolean
shape_arg(TCtx *t, const TsLangNode *n, guint *rank, const char **ext)
{
  const gboolean many = n->kind == TS_LANG_TUPLE || n->kind == TS_LANG_LIST;
  const guint count = many ? n->kids->len : 1;
  if (count == 0 || count > MAX_TILE_RANK)
    return tfail(t, n, "a tile has 1 to %d extents, not %u", MAX_TILE_RANK, count);
  for (guint i = 0; i < count; i++) {
    const TsLangNode *e = many ? kid(n, i) : n;
    Ty *y = type_of(t, e);
    if (y == NULL || (ext[i] = extent(t, e, y)) == NULL)
      return FALSE;
  }
  *rank = count;
  return TRUE;
}

/* ---- calls ---- */

typedef struct {
  const TsLangNode *pos[8];
  guint n_pos;
  const TsLangNode *call;
} Args;

static const TsLangNode *
keyword(const Args *a, const char *name)
{
  for (guint i = 1; i < a->call->kids->len; i++) {
    const TsLangNode *k = kid(a->call, i);
    if (k->kind == TS_LANG_KEYWORD && strcmp(k->str, name) == 0)
      return kid(k, 0);
  }
  return NULL;
}

/* A tile argument of intrinsic `fn` of the given rank (0: any). */
static Ty *
tile_arg(TCtx *t, const char *fn, const TsLangNode *n, guint rank)
{
  Ty *y = type_of(t, n);
  if (y == NULL)
    return NULL;
  if (y->kind == TY_TILE && (rank == 0 || y->rank == rank))
    return y;
  g_autofree char *what = ty_str(t, y);
  g_autofree char *src = ts_lang_expr_to_source(n);
  if (y->kind == TY_TENSOR)
    tfail(t, n, "tile.%s takes a tile, and %s is a tensor (%s): load a tile of it with "
                "tile.load", fn, src, what);
  else if (y->kind == TY_TILE)
    tfail(t, n, "tile.%s takes a %u-D tile, and %s is %s", fn, rank, src, what);
  else
    tfail(t, n, "tile.%s takes a tile, and %s is %s", fn, src, what);
  return NULL;
}

static TsDtype
dtype_arg(TCtx *t, const char *fn, const TsLangNode *n)
{
  Ty *y = type_of(t, n);
  if (y == NULL)
    return TS_DTYPE_INVALID;
  if (y->kind != TY_DTYPE) {
    g_autofree char *src = ts_lang_expr_to_source(n);
    tfail(t, n, "tile.%s takes a dtype here (f32, bf16, f16 ...), not %s", fn, src);
    return TS_DTYPE_INVALID;
  }
  return y->dtype;
}

/* Two extents that must be one: the error names both shapes. */
static gboolean
same_extent(TCtx *t, const TsLangNode *at, const char *what, const Ty *a, guint ia,
            const char *a_name, const Ty *b, guint ib, const char *b_name)
{
  if (ext_eq(t, a->ext[ia], b->ext[ib]))
    return TRUE;
  g_autofree char *sa = shape_str(t, a);
  g_autofree char *sb = shape_str(t, b);
  return tfail(t, at, "%s: %s is %s and %s is %s, so %s and %s differ", what, a_name, sa, b_name,
               sb, ext_of(t, a->ext[ia]), ext_of(t, b->ext[ib]));
}

static gboolean
same_shape(TCtx *t, const TsLangNode *at, const char *what, const Ty *a, const char *a_name,
           const Ty *b, const char *b_name)
{
  gboolean eq = a->rank == b->rank;
  for (guint i = 0; eq && i < a->rank; i++)
    eq = ext_eq(t, a->ext[i], b->ext[i]);
  if (eq)
    return TRUE;
  g_autofree char *sa = shape_str(t, a);
  g_autofree char *sb = shape_str(t, b);
  return tfail(t, at, "%s: %s is %s but %s is %s", what, a_name, sa, b_name, sb);
}

/* The dtype a product of low-precision tiles accumulates in. */
static TsDtype
dot_accum(const Ty *a)
{
  if (a->accum != TS_DTYPE_INVALID)
    return a->accum;
  return ts_dtype_bits(a->dtype) < 32 && ts_dtype_is_float(a->dtype) ? TS_DTYPE_F32 : a->dtype;
}

static Ty *
dot(TCtx *t, const char *fn, const Args *a)
{
  Ty *x = tile_arg(t, fn, a->pos[0], 2), *y = x ? tile_arg(t, fn, a->pos[1], 2) : NULL;
  if (y == NULL)
    return NULL;
  g_autofree char *xs = ts_lang_expr_to_source(a->pos[0]);
  g_autofree char *ys = ts_lang_expr_to_source(a->pos[1]);
  g_autofree char *what = g_strdup_printf("tile.%s needs the columns of its first operand to "
                                          "match the rows of its second", fn);
  if (!same_extent(t, a->call, what, x, 1, xs, y, 0, ys))
    return NULL;
  if (x->dtype != y->dtype) {
    tfail(t, a->call, "tile.%s's operands differ in dtype: %s is %s and %s is %s (cast one "
                      "with tile.cast)", fn, xs, ts_dtype_name(x->dtype), ys,
          ts_dtype_name(y->dtype));
    return NULL;
  }
  TsDtype acc = dot_accum(x);
  const TsLangNode *kw = keyword(a, "accum");
  if (kw && (acc = dtype_arg(t, fn, kw)) == TS_DTYPE_INVALID)
    return NULL;
  const char *ext[2] = {x->ext[0], y->ext[1]};
  return tile_ty(t, 2, ext, acc, TS_DTYPE_INVALID);
}

/* A load's rows or columns: a block of the dim (a loop variable), an extent, or (absent) the
 * whole dim. */
static const char *
load_extent(TCtx *t, const TsLangNode *spec, const TsLangParam *p, guint d, const char *side)
{
  const char *dim = p->tensor->dims[d].name;
  g_autofree char *lit = dim ? NULL : g_strdup_printf("%" G_GINT64_FORMAT, p->tensor->dims[d].size);
  const char *dim_text = str(t, dim ? dim : lit);
  if (spec == NULL)
    return dim_text;
  Ty *y = type_of(t, spec);
  if (y == NULL)
    return NULL;
  if (y->kind == TY_BLOCK) {
    if (strcmp(y->dim, dim_text) == 0)
      return y->ext[0];
    g_autofree char *src = ts_lang_expr_to_source(spec);
    g_autofree char *type = ts_tensor_type_to_string(p->tensor);
    tfail(t, spec, "%s walks %s, but the %s of %s (%s) are %s", src, y->dim, side, p->name,
          type, dim_text);
    return NULL;
  }
  const char *e = extent(t, spec, y);
  if (e && strcmp(e, "T.d") == 0) {
    if (t->d_dim == NULL) {
      t->d_dim = dim_text;
      t->d_at = spec;
    } else if (strcmp(t->d_dim, dim_text) != 0) {
      tfail(t, spec, "T.d spans %s (line %d), but here the %s of %s are %s", t->d_dim,
            t->d_at->line, side, p->name, dim_text);
      return NULL;
    }
  }
  return e;
}

static Ty *
load(TCtx *t, const Args *a)
{
  Ty *x = type_of(t, a->pos[0]);
  if (x == NULL)
    return NULL;
  if (x->kind != TY_TENSOR) {
    g_autofree char *src = ts_lang_expr_to_source(a->pos[0]);
    g_autofree char *what = ty_str(t, x);
    tfail(t, a->pos[0], "tile.load reads a tensor parameter, and %s is %s", src, what);
    return NULL;
  }
  const TsLangParam *p = x->param;
  const TsLangNode *rows = a->n_pos > 1 ? a->pos[1] : keyword(a, "rows");
  if (a->n_pos > 1 && keyword(a, "rows")) {
    tfail(t, keyword(a, "rows"), "tile.load's rows are given twice (positionally and rows=)");
    return NULL;
  }
  const TsLangNode *cols = keyword(a, "cols");
  const guint r = p->tensor->rank;
  if (r == 1) {
    const char *e = load_extent(t, rows ? rows : cols, p, 0, "elements");
    return e ? tile_ty(t, 1, &e, p->tensor->dtype.storage, p->tensor->dtype.accum) : NULL;
  }
  const char *ext[2];
  if ((ext[0] = load_extent(t, rows, p, r - 2, "rows")) == NULL ||
      (ext[1] = load_extent(t, cols, p, r - 1, "columns")) == NULL)
    return NULL;
  return tile_ty(t, 2, ext, p->tensor->dtype.storage, p->tensor->dtype.accum);
}

static Ty *
store(TCtx *t, const Args *a)
{
  Ty *x = type_of(t, a->pos[0]);
  if (x == NULL)
    return NULL;
  g_autofree char *dst = ts_lang_expr_to_source(a->pos[0]);
  if (x->kind != TY_TENSOR) {
    tfail(t, a->pos[0], "tile.store writes a tensor parameter, and %s is not one", dst);
    return NULL;
  }
  if (!x->param->mut) {
    tfail(t, a->pos[0], "tile.store writes %s, which is not mut: declare it `%s: mut ...`", dst,
          dst);
    return NULL;
  }
  const TsLangNode *vn = a->n_pos > 1 ? a->pos[1] : keyword(a, "value");
  if (vn == NULL) {
    tfail(t, a->call, "tile.store needs the tile to write (tile.store(%s, tile))", dst);
    return NULL;
  }
  Ty *v = tile_arg(t, "store", vn, 0);
  if (v == NULL)
    return NULL;
  const TsDtype want = x->param->tensor->dtype.storage;
  if (v->dtype != want) {
    g_autofree char *vs = ts_lang_expr_to_source(vn);
    g_autofree char *type = ts_tensor_type_to_string(x->param->tensor);
    tfail(t, vn, "tile.store writes %s tiles into %s (%s), and %s is %s: convert it with "
                 "tile.cast(%s, %s)", ts_dtype_name(want), dst, type, vs,
          ts_dtype_name(v->dtype), vs, ts_dtype_name(want));
    return NULL;
  }
  if (v->rank > x->param->tensor->rank) {
    g_autofree char *type = ts_tensor_type_to_string(x->param->tensor);
    g_autofree char *shape = shape_str(t, v);
    tfail(t, vn, "a %u-D tile %s does not fit in %s (%s)", v->rank, shape, dst, type);
    return NULL;
  }
  return ty_new(t, TY_NONE);
}

static Ty *
tuple_of(TCtx *t, guint n, Ty *const *items)
{
  Ty *y = ty_new(t, TY_TUPLE);
  y->items = g_ptr_array_new();
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(y->items, items[i]);
  return y;
}

static Ty *broadcast(TCtx *t, const TsLangNode *at, const char *op, Ty *a, Ty *b);

/* Elementwise on one operand: a tile keeps its shape, a number becomes a float. */
static Ty *
unary_math(TCtx *t, const char *fn, const TsLangNode *n)
{
  Ty *x = type_of(t, n);
  if (x == NULL)
    return NULL;
  if (x->kind == TY_TILE || x->kind == TY_SCALAR)
    return x;
  if (x->kind == TY_INDEX) {
    Ty *y = ty_new(t, TY_SCALAR);
    y->dtype = TS_DTYPE_F32;
    return y;
  }
  g_autofree char *src = ts_lang_expr_to_source(n);
  g_autofree char *what = ty_str(t, x);
  tfail(t, n, "tile.%s takes a tile or a number, and %s is %s", fn, src, what);
  return NULL;
}

static Ty *
softmax_accumulate(TCtx *t, const Args *a)
{
  static const char *const names[] = {"acc", "m", "l", "P", "V", "m_c", "l_c"};
  static const guint ranks[] = {2, 1, 1, 2, 2, 1, 1};
  Ty *x[7];
  for (guint i = 0; i < 7; i++)
    if ((x[i] = tile_arg(t, "softmax_accumulate", a->pos[i], ranks[i])) == NULL)
      return NULL;
  const char *what = "tile.softmax_accumulate(acc, m, l, P, V, m_c, l_c) needs acc [R, D], "
                     "m, l, m_c, l_c [R], P [R, C] and V [C, D]";
  /* Rows of acc against m, l, P, m_c, l_c; P's columns against V's rows; D of acc and V. */
  static const guint row_of[] = {1, 2, 3, 5, 6};
  for (guint i = 0; i < G_N_ELEMENTS(row_of); i++)
    if (!same_extent(t, a->pos[row_of[i]], what, x[0], 0, names[0], x[row_of[i]], 0,
                     names[row_of[i]]))
      return NULL;
  if (!same_extent(t, a->pos[4], what, x[3], 1, names[3], x[4], 0, names[4]) ||
      !same_extent(t, a->pos[4], what, x[0], 1, names[0], x[4], 1, names[4]))
    return NULL;
  return tuple_of(t, 3, x);
}

static Ty *
range_call(TCtx *t, const char *fn, const Args *a)
{
  Ty *r = ty_new(t, TY_RANGE);
  if (strcmp(fn, "range") == 0) {
    for (guint i = 0; i < a->n_pos; i++) {
      Ty *y = type_of(t, a->pos[i]);
      if (y == NULL)
        return NULL;
      if (y->kind != TY_INDEX) {
        g_autofree char *src = ts_lang_expr_to_source(a->pos[i]);
        tfail(t, a->pos[i], "tile.range counts with integers, and %s is not one", src);
        return NULL;
      }
    }
    r->elem = ty_new(t, TY_INDEX);
    return r;
  }
  Ty *n = type_of(t, a->pos[0]);
  Ty *step = n ? type_of(t, a->pos[1]) : NULL;
  if (step == NULL)
    return NULL;
  const char *dim = n->kind == TY_INDEX ? (n->dim ? n->dim : n->ext[0]) : NULL;
  if (dim == NULL) {
    g_autofree char *src = ts_lang_expr_to_source(a->pos[0]);
    tfail(t, a->pos[0], "tile.%s walks a dim: give its length as X.shape[i] (or a knob or "
                        "integer), not %s", fn, src);
    return NULL;
  }
  const char *e = extent(t, a->pos[1], step);
  if (e == NULL)
    return NULL;
  Ty *b = ty_new(t, TY_BLOCK);
  b->dim = dim;
  b->ext[0] = e;
  r->elem = b;
  return r;
}

static Ty *
intrinsic(TCtx *t, const char *fn, const TsLangNode *call)
{
  Args a = {.call = call};
  for (guint i = 1; i < call->kids->len; i++)
    if (kid(call, i)->kind != TS_LANG_KEYWORD && a.n_pos < G_N_ELEMENTS(a.pos))
      a.pos[a.n_pos++] = kid(call, i);
  if (strcmp(fn, "context") == 0)
    return ty_new(t, TY_CONTEXT);
  if (strcmp(fn, "linear_id") == 0) {
    /* One program covers BN consecutive elements. */
    if (!use_knob(t, call, "BN", "tile.linear_id()'s block of elements"))
      return NULL;
    return ty_new(t, TY_INDEX);
  }
  if (strcmp(fn, "row_index") == 0 || strcmp(fn, "col_index") == 0) {
    if (a.n_pos && type_of(t, a.pos[0]) == NULL)
      return NULL;
    return ty_new(t, TY_INDEX);
  }
  if (strcmp(fn, "zeros") == 0 || strcmp(fn, "full") == 0 || strcmp(fn, "alloc_shared") == 0) {
    const char *ext[MAX_TILE_RANK];
    guint rank = 0;
    if (!shape_arg(t, a.pos[0], &rank, ext))
      return NULL;
    const gboolean full = strcmp(fn, "full") == 0;
    if (full) {
      Ty *v = type_of(t, a.pos[1]);
      if (v == NULL)
        return NULL;
      if (v->kind != TY_SCALAR && v->kind != TY_INDEX) {
        g_autofree char *src = ts_lang_expr_to_source(a.pos[1]);
        tfail(t, a.pos[1], "tile.full fills with a number, and %s is not one", src);
        return NULL;
      }
    }
    const TsLangNode *dn = a.n_pos > (full ? 2u : 1u) ? a.pos[full ? 2 : 1] : NULL;
    TsDtype d = dn ? dtype_arg(t, fn, dn) : TS_DTYPE_F32;
    return d == TS_DTYPE_INVALID ? NULL : tile_ty(t, rank, ext, d, TS_DTYPE_INVALID);
  }
  if (strcmp(fn, "load") == 0)
    return load(t, &a);
  if (strcmp(fn, "store") == 0)
    return store(t, &a);
  if (strcmp(fn, "dot") == 0 || strcmp(fn, "mma") == 0)
    return dot(t, fn, &a);
  if (strcmp(fn, "transpose") == 0) {
    Ty *x = tile_arg(t, fn, a.pos[0], 2);
    const char *ext[2] = {x ? x->ext[1] : NULL, x ? x->ext[0] : NULL};
    return x ? tile_ty(t, 2, ext, x->dtype, x->accum) : NULL;
  }
  if (strcmp(fn, "cast") == 0) {
    Ty *x = type_of(t, a.pos[0]);
    if (x == NULL)
      return NULL;
    TsDtype d = dtype_arg(t, fn, a.pos[1]);
    if (d == TS_DTYPE_INVALID)
      return NULL;
    if (x->kind != TY_TILE && x->kind != TY_SCALAR && x->kind != TY_INDEX) {
      g_autofree char *src = ts_lang_expr_to_source(a.pos[0]);
      tfail(t, a.pos[0], "tile.cast converts a tile or a number, and %s is not one", src);
      return NULL;
    }
    Ty *y = ty_new(t, x->kind == TY_TILE ? TY_TILE : TY_SCALAR);
    *y = *x;
    y->kind = x->kind == TY_TILE ? TY_TILE : TY_SCALAR;
    y->dtype = d;
    y->accum = TS_DTYPE_INVALID;
    return y;
  }
  if (strcmp(fn, "exp") == 0 || strcmp(fn, "rsqrt") == 0)
    return unary_math(t, fn, a.pos[0]);
  if (strcmp(fn, "maximum") == 0) {
    Ty *x = type_of(t, a.pos[0]), *y = x ? type_of(t, a.pos[1]) : NULL;
    return y ? broadcast(t, call, "tile.maximum", x, y) : NULL;
  }
  if (strcmp(fn, "row_max") == 0 || strcmp(fn, "row_sum") == 0) {
    Ty *x = tile_arg(t, fn, a.pos[0], 2);
    return x ? tile_ty(t, 1, x->ext, x->dtype, x->accum) : NULL;
  }
  if (strcmp(fn, "softmax_online") == 0) {
    Ty *s = tile_arg(t, fn, a.pos[0], 2);
    if (s == NULL)
      return NULL;
    Ty *items[3] = {tile_ty(t, 2, s->ext, TS_DTYPE_F32, TS_DTYPE_INVALID),
                    tile_ty(t, 1, s->ext, TS_DTYPE_F32, TS_DTYPE_INVALID),
                    tile_ty(t, 1, s->ext, TS_DTYPE_F32, TS_DTYPE_INVALID)};
    return tuple_of(t, 3, items);
  }
  if (strcmp(fn, "softmax_accumulate") == 0)
    return softmax_accumulate(t, &a);
  if (strcmp(fn, "mask_causal") == 0) {
    if (tile_arg(t, fn, a.pos[0], 2) == NULL)
      return NULL;
    for (guint i = 1; i < a.n_pos; i++)
      if (type_of(t, a.pos[i]) == NULL)
        return NULL;
    return ty_new(t, TY_NONE);
  }
  if (strcmp(fn, "range") == 0 || strcmp(fn, "range_k") == 0 || strcmp(fn, "range_n") == 0)
    return range_call(t, fn, &a);
  /* barrier, cp_async: statements on buffers. */
  for (guint i = 0; i < a.n_pos; i++)
    if (type_of(t, a.pos[i]) == NULL)
      return NULL;
  return ty_new(t, TY_NONE);
}

static Ty *
builtin_call(TCtx *t, const char *fn, const TsLangNode *call)
{
  Ty *args[2] = {NULL, NULL};
  guint n = 0;
  for (guint i = 1; i < call->kids->len; i++) {
    const TsLangNode *an = kid(call, i);
    if (an->kind == TS_LANG_KEYWORD || n == 2)
      return tfail(t, an, "%s takes one or two positional numbers", fn), NULL;
    if ((args[n] = type_of(t, an)) == NULL)
      return NULL;
    if (args[n]->kind != TY_INDEX && args[n]->kind != TY_SCALAR) {
      g_autofree char *src = ts_lang_expr_to_source(an);
      g_autofree char *what = ty_str(t, args[n]);
      return tfail(t, an, "%s takes numbers, and %s is %s", fn, src, what), NULL;
    }
    n++;
  }
  if (n == 0)
    return tfail(t, call, "%s needs an argument", fn), NULL;
  const gboolean index = strcmp(fn, "int") == 0 ||
                         ((strcmp(fn, "min") == 0 || strcmp(fn, "max") == 0 ||
                           strcmp(fn, "abs") == 0) &&
                          args[0]->kind == TY_INDEX && (n < 2 || args[1]->kind == TY_INDEX));
  Ty *y = ty_new(t, index ? TY_INDEX : TY_SCALAR);
  y->dtype = TS_DTYPE_F32;
  return y;
}

static Ty *
call_type(TCtx *t, const TsLangNode *n)
{
  const TsLangNode *callee = kid(n, 0);
  if (callee->kind == TS_LANG_ATTR) {
    const TsLangNode *obj = kid(callee, 0);
    gboolean tile = obj->kind == TS_LANG_NAME && strcmp(obj->str, "tile") == 0;
    tile = tile || (obj->kind == TS_LANG_ATTR && strcmp(obj->str, "tile") == 0);
    if (tile)
      return intrinsic(t, callee->str, n);
  }
  Ty *f = type_of(t, callee);
  if (f == NULL)
    return NULL;
  if (f->kind == TY_FUNC)
    return builtin_call(t, f->text, n);
  g_autofree char *src = ts_lang_expr_to_source(callee);
  g_autofree char *what = ty_str(t, f);
  tfail(t, callee, "%s is %s, not something a kernel can call", src, what);
  return NULL;
}

/* ---- operators ---- */

static Ty *
broadcast(TCtx *t, const TsLangNode *at, const char *op, Ty *a, Ty *b)
{
  if (a->kind != TY_TILE || b->kind != TY_TILE)
    return a->kind == TY_TILE ? a : b;
  if (a->dtype != b->dtype) {
    g_autofree char *sa = ty_str(t, a);
    g_autofree char *sb = ty_str(t, b);
    tfail(t, at, "%s of %s and %s: the dtypes differ (convert one with tile.cast)", op, sa, sb);
    return NULL;
  }
  const guint rank = MAX(a->rank, b->rank);
  const char *ext[MAX_TILE_RANK];
  for (guint i = 0; i < rank; i++) {
    const char *ea = i + a->rank >= rank ? a->ext[i + a->rank - rank] : "1";
    const char *eb = i + b->rank >= rank ? b->ext[i + b->rank - rank] : "1";
    if (ext_eq(t, ea, eb) || strcmp(ext_of(t, eb), "1") == 0) {
      ext[i] = ea;
    } else if (strcmp(ext_of(t, ea), "1") == 0) {
      ext[i] = eb;
    } else {
      g_autofree char *sa = shape_str(t, a);
      g_autofree char *sb = shape_str(t, b);
      tfail(t, at, "%s of tiles %s and %s: the shapes do not broadcast (%s against %s; a "
                   "[R] tile meets an [R, C] one as x[:, None])", op, sa, sb, ext_of(t, ea),
            ext_of(t, eb));
      return NULL;
    }
  }
  return tile_ty(t, rank, ext, a->dtype, a->accum);
}

static gboolean
is_number(const Ty *y)
{
  return y->kind == TY_INDEX || y->kind == TY_SCALAR;
}

static Ty *
binop(TCtx *t, const TsLangNode *at, const char *op, Ty *a, Ty *b)
{
  const TsLangNode *operand[2] = {kid(at, 0), kid(at, 1)};
  Ty *y[2] = {a, b};
  for (guint i = 0; i < 2; i++)
    if (!is_number(y[i]) && y[i]->kind != TY_TILE) {
      g_autofree char *src = ts_lang_expr_to_source(operand[i]);
      g_autofree char *what = ty_str(t, y[i]);
      const char *hint = y[i]->kind == TY_TENSOR
                           ? ": load a tile of it with tile.load, or index an element"
                           : "";
      tfail(t, operand[i] ? operand[i] : at, "'%s' takes tiles and numbers, and %s is %s%s",
            op, src, what, hint);
      return NULL;
    }
  if (strcmp(op, "@") == 0) {
    Args args = {.pos = {operand[0], operand[1]}, .n_pos = 2, .call = at};
    return dot(t, "dot", &args);
  }
  if (a->kind == TY_TILE || b->kind == TY_TILE)
    return broadcast(t, at, op, a, b);
  if (a->kind == TY_INDEX && b->kind == TY_INDEX && strcmp(op, "/") != 0) {
    Ty *r = ty_new(t, TY_INDEX);
    const char *ea = a->ext[0] ? a->ext[0] : a->dim, *eb = b->ext[0] ? b->ext[0] : b->dim;
    if (ea && eb && strlen(ea) + strlen(eb) < 200) {
      g_autofree char *e = g_strdup_printf("%s%s%s", ea, op, eb);
      r->ext[0] = str(t, e);
    }
    return r;
  }
  Ty *r = ty_new(t, TY_SCALAR);
  const TsDtype da = a->kind == TY_SCALAR ? a->dtype : TS_DTYPE_F32;
  const TsDtype db = b->kind == TY_SCALAR ? b->dtype : TS_DTYPE_F32;
  r->dtype = ts_dtype_bits(da) >= ts_dtype_bits(db) ? da : db;
  return r;
}

/* l[:, None]: a tile indexed with `:` (keep the extent) and None (a new extent of 1); a
 * tensor indexed by one index per dim (an element); X.shape[i] (a dim). */
static Ty *
subscript(TCtx *t, const TsLangNode *n)
{
  Ty *obj = type_of(t, kid(n, 0));
  if (obj == NULL)
    return NULL;
  const TsLangNode *idx = kid(n, 1);
  const guint count = idx->kind == TS_LANG_TUPLE ? idx->kids->len : 1;
  g_autofree char *src = ts_lang_expr_to_source(kid(n, 0));
  if (obj->kind == TY_SHAPE) {
    const TsTensorType *tt = obj->param->tensor;
    const gboolean neg = idx->kind == TS_LANG_UNARY && strcmp(idx->str, "-") == 0 &&
                         kid(idx, 0)->kind == TS_LANG_INT;
    if (idx->kind != TS_LANG_INT && !neg)
      return tfail(t, idx, "%s takes a constant index", src), NULL;
    gint64 i = idx->kind == TS_LANG_INT ? (gint64)idx->num : -(gint64)kid(idx, 0)->num;
    if (i < 0)
      i += tt->rank;
    if (i < 0 || i >= (gint64)tt->rank) {
      g_autofree char *is = ts_lang_expr_to_source(idx);
      return tfail(t, idx, "%s has %u dims, so %s[%s] does not exist", obj->param->name,
                   tt->rank, src, is),
             NULL;
    }
    Ty *y = ty_new(t, TY_INDEX);
    g_autofree char *lit = g_strdup_printf("%" G_GINT64_FORMAT, tt->dims[i].size);
    y->dim = str(t, tt->dims[i].name ? tt->dims[i].name : lit);
    return y;
  }
  if (obj->kind == TY_TENSOR) {
    const TsTensorType *tt = obj->param->tensor;
    if (count != tt->rank)
      return tfail(t, idx, "%s has %u dim%s but is indexed with %u", src, tt->rank,
                   tt->rank == 1 ? "" : "s", count),
             NULL;
    for (guint i = 0; i < count; i++) {
      const TsLangNode *e = idx->kind == TS_LANG_TUPLE ? kid(idx, i) : idx;
      Ty *y = type_of(t, e);
      if (y == NULL)
        return NULL;
      if (y->kind != TY_INDEX) {
        g_autofree char *es = ts_lang_expr_to_source(e);
        g_autofree char *what = ty_str(t, y);
        return tfail(t, e, "an element of %s is indexed by integers, and %s is %s", src, es,
                     what),
               NULL;
      }
    }
    Ty *y = ty_new(t, TY_SCALAR);
    y->dtype = tt->dtype.storage;
    return y;
  }
  if (obj->kind == TY_TILE) {
    const char *ext[MAX_TILE_RANK];
    guint rank = 0, kept = 0;
    for (guint i = 0; i < count; i++) {
      const TsLangNode *e = idx->kind == TS_LANG_TUPLE ? kid(idx, i) : idx;
      const gboolean all = e->kind == TS_LANG_SLICE && !kid(e, 0) && !kid(e, 1) && !kid(e, 2);
      const gboolean none = e->kind == TS_LANG_NAME && strcmp(e->str, "None") == 0;
      if (!all && !none)
        return tfail(t, e, "a tile is indexed with ':' and None (as in %s[:, None]); its "
                           "elements are not addressed one by one", src),
               NULL;
      if (rank == MAX_TILE_RANK || (all && kept == obj->rank))
        return tfail(t, e, "%s has %u extents; this index has too many", src, obj->rank), NULL;
      ext[rank++] = all ? obj->ext[kept++] : "1";
    }
    while (kept < obj->rank && rank < MAX_TILE_RANK)
      ext[rank++] = obj->ext[kept++];
    return tile_ty(t, rank, ext, obj->dtype, obj->accum);
  }
  g_autofree char *what = ty_str(t, obj);
  return tfail(t, kid(n, 0), "%s is %s and cannot be indexed", src, what), NULL;
}

static Ty *
attr(TCtx *t, const TsLangNode *n)
{
  const TsLangNode *on = kid(n, 0);
  if (on->kind == TS_LANG_NAME && strcmp(on->str, "ts") == 0) {
    TsDtype d = ts_dtype_from_name(n->str);
    Ty *y = ty_new(t, d ? TY_DTYPE : TY_MODULE);
    y->dtype = d;
    return y;
  }
  Ty *obj = type_of(t, on);
  if (obj == NULL)
    return NULL;
  if (obj->kind == TY_CONTEXT) {
    static const char *const knob[] = {"BM", "BN", "BK"};
    static const char *const field = "mnk";
    const char *p = strlen(n->str) == 1 ? strchr(field, n->str[0]) : NULL;
    Ty *y = ty_new(t, TY_INDEX);
    if (p && *p) {
      g_autofree char *how = g_strdup_printf("T.%s", n->str);
      if (!use_knob(t, n, knob[p - field], how))
        return NULL;
      y->ext[0] = knob[p - field];
      return y;
    }
    if (strcmp(n->str, "d") == 0) {
      y->ext[0] = t->d_dim ? t->d_dim : "T.d";
      return y;
    }
    return tfail(t, n, "the tile context has m, n, k (the block's extents: BM, BN, BK) and d "
                       "(a whole dim), not '%s'", n->str),
           NULL;
  }
  if (obj->kind == TY_TENSOR && strcmp(n->str, "shape") == 0) {
    Ty *y = ty_new(t, TY_SHAPE);
    y->param = obj->param;
    return y;
  }
  if ((obj->kind == TY_TENSOR || obj->kind == TY_TILE) && strcmp(n->str, "dtype") == 0) {
    Ty *y = ty_new(t, TY_DTYPE);
    y->dtype = obj->kind == TY_TILE ? obj->dtype : obj->param->tensor->dtype.storage;
    return y;
  }
  g_autofree char *src = ts_lang_expr_to_source(on);
  g_autofree char *what = ty_str(t, obj);
  return tfail(t, n, "%s is %s and has no '%s'%s", src, what, n->str,
               obj->kind == TY_TENSOR ? " (a tensor has .shape and .dtype)" : ""),
         NULL;
}

static Ty *
name_type(TCtx *t, const TsLangNode *n)
{
  Ty *y = g_hash_table_lookup(t->env, n->str);
  if (y)
    return y;
  static const char *const funcs[] = {"float", "int", "min", "max", "sqrt", "abs", "len"};
  for (guint i = 0; i < G_N_ELEMENTS(funcs); i++)
    if (strcmp(n->str, funcs[i]) == 0) {
      y = ty_new(t, TY_FUNC);
      y->text = funcs[i];
      return y;
    }
  if (strcmp(n->str, "tile") == 0 || strcmp(n->str, "ts") == 0)
    return ty_new(t, TY_MODULE);
  if (strcmp(n->str, "True") == 0 || strcmp(n->str, "False") == 0)
    return ty_new(t, TY_BOOL);
  if (strcmp(n->str, "None") == 0)
    return ty_new(t, TY_NONE);
  if (strcmp(n->str, "INF") == 0) {
    y = ty_new(t, TY_SCALAR);
    y->dtype = TS_DTYPE_F32;
    return y;
  }
  TsDtype d = ts_dtype_from_name(n->str);
  if (d != TS_DTYPE_INVALID) {
    y = ty_new(t, TY_DTYPE);
    y->dtype = d;
    return y;
  }
  if (t->knobs && g_hash_table_contains(t->knobs, n->str)) {
    if (!use_knob(t, n, n->str, n->str))
      return NULL;
    y = ty_new(t, TY_INDEX);
    y->ext[0] = str(t, n->str);
    return y;
  }
  /* The names check ran first: anything else is defined. */
  return tfail(t, n, "name '%s' has no type here", n->str), NULL;
}

static Ty *
type_of(TCtx *t, const TsLangNode *n)
{
  switch (n->kind) {
  case TS_LANG_NAME:
    return name_type(t, n);
  case TS_LANG_INT: {
    Ty *y = ty_new(t, TY_INDEX);
    g_autofree char *text = g_strdup_printf("%.0f", n->num);
    y->ext[0] = str(t, text);
    return y;
  }
  case TS_LANG_FLOAT: {
    Ty *y = ty_new(t, TY_SCALAR);
    y->dtype = TS_DTYPE_F32;
    return y;
  }
  case TS_LANG_STRING:
    return tfail(t, n, "a string is not a value a kernel computes with"), NULL;
  case TS_LANG_CALL:
    return call_type(t, n);
  case TS_LANG_ATTR:
    return attr(t, n);
  case TS_LANG_SUBSCRIPT:
    return subscript(t, n);
  case TS_LANG_BINOP: {
    Ty *a = type_of(t, kid(n, 0)), *b = a ? type_of(t, kid(n, 1)) : NULL;
    return b ? binop(t, n, n->str, a, b) : NULL;
  }
  case TS_LANG_UNARY: {
    Ty *a = type_of(t, kid(n, 0));
    if (a == NULL)
      return NULL;
    if (strcmp(n->str, "not") == 0 || a->kind == TY_BOOL) {
      Ty *y = ty_new(t, TY_BOOL);
      y->runtime = a->kind == TY_BOOL ? a->runtime : a->kind != TY_INDEX;
      return y;
    }
    if (!is_number(a) && a->kind != TY_TILE) {
      g_autofree char *src = ts_lang_expr_to_source(kid(n, 0));
      return tfail(t, n, "'%s' takes a tile or a number, and %s is not one", n->str, src), NULL;
    }
    if (a->kind == TY_INDEX && a->ext[0]) {
      Ty *y = ty_new(t, TY_INDEX);
      g_autofree char *e = g_strdup_printf("%s%s", n->str, a->ext[0]);
      y->ext[0] = str(t, e);
      return y;
    }
    return a;
  }
  case TS_LANG_COMPARE:
  case TS_LANG_BOOLOP: {
    Ty *a = type_of(t, kid(n, 0)), *b = a ? type_of(t, kid(n, 1)) : NULL;
    if (b == NULL)
      return NULL;
    Ty *y = ty_new(t, TY_BOOL);
    /* Compile-time: flags, dims, knobs and integers; anything read from data is runtime. */
    y->runtime = !((a->kind == TY_BOOL && !a->runtime) || a->kind == TY_INDEX) ||
                 !((b->kind == TY_BOOL && !b->runtime) || b->kind == TY_INDEX);
    return y;
  }
  case TS_LANG_IFEXP: {
    Ty *c = type_of(t, kid(n, 1));
    Ty *a = c ? type_of(t, kid(n, 0)) : NULL, *b = a ? type_of(t, kid(n, 2)) : NULL;
    if (b == NULL)
      return NULL;
    if (a->kind == TY_TILE && b->kind == TY_TILE &&
        !same_shape(t, n, "both values of 'x if c else y' need one shape", a, "x", b, "y"))
      return NULL;
    return a;
  }
  case TS_LANG_TUPLE:
  case TS_LANG_LIST: {
    Ty *y = ty_new(t, TY_TUPLE);
    y->items = g_ptr_array_new();
    for (guint i = 0; i < n->kids->len; i++) {
      Ty *e = type_of(t, kid(n, i));
      if (e == NULL)
        return NULL;
      g_ptr_array_add(y->items, e);
    }
    return y;
  }
  case TS_LANG_SLICE:
    return tfail(t, n, "a slice only indexes a tile (x[:, None])"), NULL;
  default:
    return tfail(t, n, "this is not an expression"), NULL;
  }
}

/* ---- statements ---- */

/* A name bound again keeps its type: a tile carried round a loop cannot change shape or
 * dtype under the lowering. */
static gboolean
bind(TCtx *t, const TsLangNode *target, Ty *y)
{
  Ty *old = g_hash_table_lookup(t->env, target->str);
  if (old && old->kind == TY_TILE && y->kind == TY_TILE) {
    g_autofree char *so = ty_str(t, old);
    g_autofree char *sn = ty_str(t, y);
    gboolean eq = old->rank == y->rank && old->dtype == y->dtype;
    for (guint i = 0; eq && i < y->rank; i++)
      eq = ext_eq(t, old->ext[i], y->ext[i]);
    if (!eq)
      return tfail(t, target, "%s is %s and is assigned %s: a tile keeps its shape and dtype "
                              "(give the new value another name)", target->str, so, sn);
  } else if (old && old->kind != y->kind && !(is_number(old) && is_number(y))) {
    g_autofree char *so = ty_str(t, old);
    g_autofree char *sn = ty_str(t, y);
    return tfail(t, target, "%s is %s and is assigned %s (give the new value another name)",
                 target->str, so, sn);
  }
  if (old == NULL)
    g_ptr_array_add(t->order, (gpointer)str(t, target->str));
  g_hash_table_insert(t->env, (gpointer)str(t, target->str), y);
  return TRUE;
}

static gboolean
assign(TCtx *t, const TsLangNode *target, Ty *y, const TsLangNode *value)
{
  switch (target->kind) {
  case TS_LANG_NAME:
    if (y->kind == TY_NONE) {
      g_autofree char *src = ts_lang_expr_to_source(value);
      return tfail(t, value, "%s returns nothing to assign", src);
    }
    return bind(t, target, y);
  case TS_LANG_TUPLE:
    if (y->kind != TY_TUPLE || y->items->len != target->kids->len) {
      g_autofree char *src = ts_lang_expr_to_source(value);
      g_autofree char *what = ty_str(t, y);
      if (y->kind == TY_TUPLE)
        return tfail(t, target, "%u names are assigned %s, which gives %u values: %s",
                     target->kids->len, src, y->items->len, what);
      return tfail(t, target, "%u names are assigned %s, which is one value: %s",
                   target->kids->len, src, what);
    }
    for (guint i = 0; i < target->kids->len; i++)
      if (!assign(t, kid(target, i), g_ptr_array_index(y->items, i), value))
        return FALSE;
    return TRUE;
  case TS_LANG_SUBSCRIPT: {
    const TsLangNode *on = kid(target, 0);
    Ty *obj = type_of(t, on);
    if (obj == NULL)
      return FALSE;
    g_autofree char *src = ts_lang_expr_to_source(on);
    if (obj->kind == TY_TENSOR && !obj->param->mut)
      return tfail(t, on, "%s is written here but is not mut: declare it `%s: mut ...`", src,
                   src);
    if (obj->kind != TY_TENSOR)
      return tfail(t, on, "only a tensor parameter's elements are assigned (%s is not one)", src);
    Ty *slot = subscript(t, target);
    if (slot == NULL)
      return FALSE;
    if (!is_number(y)) {
      g_autofree char *vs = ts_lang_expr_to_source(value);
      g_autofree char *what = ty_str(t, y);
      return tfail(t, value, "an element of %s is assigned a number, and %s is %s", src, vs,
                   what);
    }
    return TRUE;
  }
  default:
    return tfail(t, target, "only names, tuples of names and tensor elements are assigned");
  }
}

static gboolean type_block(TCtx *t, const TsLangNode *block);

static gboolean
type_stmt(TCtx *t, const TsLangNode *st)
{
  switch (st->kind) {
  case TS_LANG_ASSIGN: {
    Ty *y = type_of(t, kid(st, 1));
    return y && assign(t, kid(st, 0), y, kid(st, 1));
  }
  case TS_LANG_AUGASSIGN: {
    const TsLangNode *target = kid(st, 0);
    Ty *old = type_of(t, target), *v = old ? type_of(t, kid(st, 1)) : NULL;
    if (v == NULL)
      return FALSE;
    TsLangNode fake = {.kind = TS_LANG_BINOP, .line = st->line, .col = st->col, .kids = st->kids};
    Ty *y = binop(t, &fake, st->str, old, v);
    if (y == NULL)
      return FALSE;
    if (target->kind == TS_LANG_NAME && old->kind == TY_TILE && y->kind == TY_TILE) {
      g_autofree char *what = g_strdup_printf("'%s=' keeps its target's shape", st->str);
      g_autofree char *vs = ts_lang_expr_to_source(kid(st, 1));
      if (!same_shape(t, kid(st, 1), what, old, target->str, y, vs))
        return FALSE;
      if (old->dtype != y->dtype)
        return tfail(t, kid(st, 1), "'%s=' keeps %s's dtype %s", st->str, target->str,
                     ts_dtype_name(old->dtype));
      return TRUE;
    }
    return assign(t, target, y, kid(st, 1));
  }
  case TS_LANG_EXPR_STMT:
    return type_of(t, kid(st, 0)) != NULL;
  case TS_LANG_FOR: {
    Ty *r = type_of(t, kid(st, 1));
    if (r == NULL)
      return FALSE;
    if (r->kind != TY_RANGE) {
      g_autofree char *src = ts_lang_expr_to_source(kid(st, 1));
      return tfail(t, kid(st, 1), "a kernel loops over tile.range, tile.range_k or "
                                  "tile.range_n, not %s", src);
    }
    return assign(t, kid(st, 0), (Ty *)r->elem, kid(st, 1)) && type_block(t, kid(st, 2));
  }
  case TS_LANG_IF: {
    Ty *c = type_of(t, kid(st, 0));
    if (c == NULL)
      return FALSE;
    if ((c->kind != TY_BOOL && c->kind != TY_INDEX) || c->runtime) {
      g_autofree char *src = ts_lang_expr_to_source(kid(st, 0));
      g_autofree char *type = ty_str(t, c);
      g_autofree char *what = c->runtime ? g_strdup("depends on the data")
                                         : g_strdup_printf("is %s", type);
      return tfail(t, kid(st, 0), "an if is decided when the kernel compiles, on bool "
                                  "parameters, dims, knobs and integers, and %s %s (mask the "
                                  "tile instead)", src, what);
    }
    return type_block(t, kid(st, 1)) && type_block(t, kid(st, 2));
  }
  case TS_LANG_RETURN: {
    if (kid(st, 0) == NULL)
      return TRUE;
    Ty *y = type_of(t, kid(st, 0));
    if (y == NULL)
      return FALSE;
    if (y->kind != TY_TILE) {
      g_autofree char *src = ts_lang_expr_to_source(kid(st, 0));
      g_autofree char *what = ty_str(t, y);
      return tfail(t, kid(st, 0), "a kernel returns its output tile, and %s is %s", src, what);
    }
    if (t->ret && !same_shape(t, kid(st, 0), "every return gives one shape", t->ret,
                              "the first", y, "this one"))
      return FALSE;
    t->ret = y;
    return TRUE;
  }
  default:
    return TRUE;
  }
}

static gboolean
type_block(TCtx *t, const TsLangNode *block)
{
  for (guint i = 0; block && i < block->kids->len; i++)
    if (!type_stmt(t, kid(block, i)))
      return FALSE;
  return TRUE;
}

static Ty *
param_ty(TCtx *t, const TsLangParam *p)
{
  if (p->tensor) {
    Ty *y = ty_new(t, TY_TENSOR);
    y->param = p;
    return y;
  }
  if (strcmp(p->scalar, "bool") == 0)
    return ty_new(t, TY_BOOL);
  if (strcmp(p->scalar, "int") == 0) {
    Ty *y = ty_new(t, TY_INDEX);
    y->ext[0] = str(t, p->name);
    return y;
  }
  Ty *y = ty_new(t, TY_SCALAR);
  y->dtype = strcmp(p->scalar, "float") == 0 ? TS_DTYPE_F32 : ts_dtype_from_name(p->scalar);
  return y;
}

/* The knobs of the space (or the fixed schedule); NULL when the kernel gives neither. */
static GHashTable *
knob_set(const TsLangKernel *k)
{
  GHashTable *set = NULL;
  if (k->space) {
    g_autoptr(TsSchedSpace) s = ts_sched_space_parse(k->space, NULL);
    set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; s && i < ts_sched_space_n_knobs(s); i++)
      g_hash_table_add(set, g_strdup(ts_sched_space_knob_name(s, i)));
  } else if (k->schedule) {
    g_autoptr(TsSchedPoint) p = ts_sched_point_parse(k->schedule, NULL);
    set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; p && i < ts_sched_point_n_knobs(p); i++)
      g_hash_table_add(set, g_strdup(ts_sched_point_knob_name(p, i)));
  }
  return set;
}

gboolean
ts__lang_type_body(TsLangKernel *k, const char *src, const char *filename, GError **error)
{
  TCtx t = {
    .src = src,
    .file = filename,
    .error = error,
    .k = k,
    .arena = g_ptr_array_new(),
    .strs = g_string_chunk_new(256),
    .env = g_hash_table_new(g_str_hash, g_str_equal),
    .order = g_ptr_array_new(),
    .knobs = knob_set(k),
    .used = g_hash_table_new(g_str_hash, g_str_equal),
  };
  for (guint i = 0; i < k->params->len; i++) {
    const TsLangParam *p = g_ptr_array_index(k->params, i);
    g_hash_table_insert(t.env, p->name, param_ty(&t, p));
  }
  gboolean ok = type_block(&t, kid(k->def, 3));
  /* Every knob of the space is read by the body or by the lowering: a knob nothing reads
   * multiplies the space by points that are all one kernel. */
  if (ok && t.knobs && k->space_node) {
    g_autoptr(TsSchedSpace) s = ts_sched_space_parse(k->space, NULL);
    for (guint i = 0; ok && s && i < ts_sched_space_n_knobs(s); i++) {
      const char *knob = ts_sched_space_knob_name(s, i);
      if (g_strv_contains(lowering_knobs, knob) || g_hash_table_contains(t.used, knob))
        continue;
      const char *how = strcmp(knob, "BM") == 0   ? " (T.m is the block's m extent)"
                        : strcmp(knob, "BN") == 0 ? " (T.n is the block's n extent)"
                        : strcmp(knob, "BK") == 0 ? " (T.k is the block's k extent)"
                                                  : "";
      ok = tfail(&t, k->space_node,
                 "the space's knob %s is never used by the body%s: every point differing only "
                 "in it would be the same kernel; use it or take it out of the space",
                 knob, how);
    }
  }
  if (ok) {
    k->bindings = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < t.order->len; i++) {
      const char *name = g_ptr_array_index(t.order, i);
      g_autofree char *type = ty_str(&t, g_hash_table_lookup(t.env, name));
      g_ptr_array_add(k->bindings, g_strdup_printf("%s: %s", name, type));
    }
    if (t.ret) {
      g_autofree char *type = ty_str(&t, t.ret);
      g_ptr_array_add(k->bindings, g_strdup_printf("return: %s", type));
    }
  }
  for (guint i = 0; i < t.arena->len; i++) {
    Ty *y = g_ptr_array_index(t.arena, i);
    if (y->items)
      g_ptr_array_free(y->items, TRUE);
    g_free(y);
  }
  g_ptr_array_free(t.arena, TRUE);
  g_string_chunk_free(t.strs);
  g_hash_table_unref(t.env);
  g_ptr_array_free(t.order, TRUE);
  if (t.knobs)
    g_hash_table_unref(t.knobs);
  g_hash_table_unref(t.used);
  return ok;
}
