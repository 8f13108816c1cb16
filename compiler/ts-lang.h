/* ts-lang.h — the front end of Tessera's kernel language: the Python-like surface the seeds
 * write kernels in (decorators, `def` with annotated parameters, assignments and tuple
 * unpacking, `for ... in tile.range_*`, `if`, arithmetic, calls of the tile intrinsics,
 * `return`), read into a syntax tree. Every error names FILE:LINE:COL and shows the line with a
 * caret under the column.
 *
 *   @kernel.autotune(space=dict(BM=[64,128]), metric="latency_ms")
 *   def saxpy(x: Tensor["N", f32], y: mut Tensor["N", f32], alpha: f32):
 *       ...
 *
 * A dtype policy inside an annotation, `bf16 @accum(f32)`, is the `@` operator applied to
 * `bf16` and the call `accum(f32)`, as Python reads it; the checker gives it its meaning.
 */
#pragma once

#include <glib.h>

#include "ts-ir.h"

G_BEGIN_DECLS

#define TS_LANG_ERROR (ts_lang_error_quark())
GQuark ts_lang_error_quark(void);

typedef enum {
  TS_LANG_ERROR_SYNTAX, /* a token or construct the grammar does not allow here */
  TS_LANG_ERROR_INDENT, /* inconsistent indentation */
  TS_LANG_ERROR_LIMIT,  /* nesting or size beyond what the front end takes */
  TS_LANG_ERROR_TYPE,   /* a body whose tile shapes or dtypes do not fit together */
} TsLangError;

typedef enum {
  TS_LANG_MODULE,    /* kids: DEF ... */
  TS_LANG_DEF,       /* str: name; kids: DECORATORS, PARAMS, return annotation or NULL, BLOCK */
  TS_LANG_DECORATORS, /* kids: expressions (NAME, ATTR or CALL), in source order */
  TS_LANG_PARAMS,    /* kids: PARAM or STAR */
  TS_LANG_PARAM,     /* str: name; flags: TS_LANG_MUT; kids: annotation or NULL, default or NULL */
  TS_LANG_STAR,      /* a bare `*`: the parameters after it are keyword-only */
  TS_LANG_BLOCK,     /* kids: statements */
  TS_LANG_ASSIGN,    /* kids: target (NAME, TUPLE, ATTR, SUBSCRIPT), value */
  TS_LANG_AUGASSIGN, /* str: operator ("+"); kids: target, value */
  TS_LANG_EXPR_STMT, /* kids: expression */
  TS_LANG_FOR,       /* kids: target, iterable, BLOCK */
  TS_LANG_IF,        /* kids: condition, BLOCK, else BLOCK or NULL (elif: an IF inside it) */
  TS_LANG_RETURN,    /* kids: value or NULL */
  TS_LANG_PASS,
  TS_LANG_NAME,      /* str */
  TS_LANG_INT,       /* num (exact below 2^53) */
  TS_LANG_FLOAT,     /* num */
  TS_LANG_STRING,    /* str: the value, escapes resolved */
  TS_LANG_BINOP,     /* str: + - * / // % ** @ & | ^ << >>; kids: left, right */
  TS_LANG_COMPARE,   /* str: == != < <= > >= in; kids: left, right */
  TS_LANG_BOOLOP,    /* str: and, or; kids: left, right */
  TS_LANG_UNARY,     /* str: - + ~ not; kids: operand */
  TS_LANG_CALL,      /* kids: callee, then arguments (KEYWORD for name=value) */
  TS_LANG_KEYWORD,   /* str: name; kids: value */
  TS_LANG_ATTR,      /* str: attribute; kids: object */
  TS_LANG_SUBSCRIPT, /* kids: object, index (a TUPLE when it has commas) */
  TS_LANG_SLICE,     /* kids: lower, upper, step, each NULL when left out */
  TS_LANG_TUPLE,     /* kids */
  TS_LANG_LIST,      /* kids */
  TS_LANG_IFEXP,     /* kids: value if true, condition, value if false */
} TsLangKind;

#define TS_LANG_MUT 1u /* PARAM: the kernel writes it (`y: mut f32[n]`) */

typedef struct _TsLangNode TsLangNode;
struct _TsLangNode {
  TsLangKind kind;
  char *str;
  double num;
  guint flags;
  int line, col; /* 1-based, where the construct starts */
  GPtrArray *kids; /* TsLangNode* (owned; NULL entries for absent parts) */
};

/* Parses a whole kernel file. `filename` names it in errors. NULL with error set on the first
 * error. */
TsLangNode *ts_lang_parse(const char *src, const char *filename, GError **error);
void ts_lang_node_free(TsLangNode *node);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsLangNode, ts_lang_node_free)

/* The tree as one S-expression a line per statement, e.g. (assign (name i) (call (attr
 * (name tile) linear_id))): what tests compare and `--stage ast` prints. */
char *ts_lang_node_to_string(const TsLangNode *node);
const char *ts_lang_kind_name(TsLangKind kind);
/* An expression as Python-like source: `dict(BM=[64, 128])`, `(a + (b * c))`. */
char *ts_lang_expr_to_source(const TsLangNode *expr);

/* ---- a kernel's interface, checked ---- */

/* A parameter: a tensor (its Graph IR type: dims and dtype policy) or a scalar. */
typedef struct {
  char *name;
  gboolean mut;          /* the kernel writes it */
  gboolean keyword_only; /* after a bare `*`: a flag such as `causal` */
  TsTensorType *tensor;  /* a tensor's type, NULL for a scalar */
  char *scalar;          /* a scalar's type: f32, f64, f16, bf16, int, bool, float */
  char *default_source;  /* its default value as source, or NULL */
  int line, col;
} TsLangParam;

/* What the decorators say and the signature declares; the body is the tree's (borrowed). */
typedef struct {
  char *name;
  GPtrArray *params;    /* TsLangParam*, in order */
  char *space;          /* @kernel.autotune(space=...): Schedule IR text (parsed once), or NULL */
  char *metric;         /* "latency_ms" unless the decorator says otherwise */
  double budget_ms;     /* 0: not given */
  char *cache;          /* NULL: the default cache */
  char *implements;     /* @kernel.implements("op"): the built-in op it computes, or NULL */
  char *schedule;       /* @kernel.schedule(point): Schedule IR point text, or NULL */
  gboolean verify_stable;             /* @verify.numerics(stable=True) */
  gboolean bounded;                   /* @verify.numerics(bounded=[lo, hi]) given */
  double bound_lo, bound_hi;
  const TsLangNode *def;              /* the DEF node (borrowed from the tree) */
  const TsLangNode *space_node;       /* the space= value, where errors about knobs point */
  const TsLangNode *schedule_node;    /* @kernel.schedule's argument */
  /* The body's types: "name: type" for each name it binds, in the order first bound, then
   * "return: type" when it returns a tile; extents are the knobs (BM for T.m) or dims. */
  GPtrArray *bindings;
} TsLangKernel;

/* Checks a DEF's decorators and signature (src and filename for the caret errors). Errors:
 * an unknown decorator or keyword (with a suggestion), a malformed autotune space or schedule
 * point (the Schedule IR's message), a parameter without a type, an unknown dtype or type, a
 * policy that does not parse, `mut` on a scalar, a default on a tensor. Then the body: names
 * defined before use, known intrinsics with their arity, and types (TS_LANG_ERROR_TYPE): tile
 * shapes derived through every intrinsic (a mismatch names both shapes), dtypes and policies
 * (a store of an f32 tile into a bf16 tensor), writes only to `mut` tensors, compile-time
 * conditions, and every knob of the space used (T.m is BM) or consumed by the lowering. */
TsLangKernel *ts_lang_kernel_check(const TsLangNode *def, const char *src, const char *filename,
                                   GError **error);
void ts_lang_kernel_free(TsLangKernel *kernel);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsLangKernel, ts_lang_kernel_free)
/* "x: mut Tensor[\"N\", f32]" — a parameter as the checker understood it. */
char *ts_lang_param_to_string(const TsLangParam *param);

/* "FILE:LINE:COL: message", the source line and a caret under COL, as every stage of the
 * front end reports errors. */
void ts_lang_set_error(GError **error, gint code, const char *src, const char *filename, int line,
                       int col, const char *fmt, ...) G_GNUC_PRINTF(7, 8);
/* The same for the front end's and lowerings' own printf-like error helpers. */
void ts_lang_set_error_valist(GError **error, gint code, const char *src, const char *filename,
                              int line, int col, const char *fmt, va_list ap) G_GNUC_PRINTF(7, 0);

G_END_DECLS
