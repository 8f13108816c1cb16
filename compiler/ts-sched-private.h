/* ts-sched-private.h — what the Schedule IR files share among themselves: the lexer, the
 * expression tree, the method catalog, the space layout and the evaluation plan. Not API;
 * never installed. */
#pragma once

#include "ts-sched.h"

G_BEGIN_DECLS

/* ---- method catalog: one table drives parsing, printing and canonical point order ---- */
typedef struct {
  const char *method;  /* chained method name */
  guint n;             /* number of knobs it sets */
  const char *knob[3]; /* canonical knob names */
  const char *arg[3];  /* keyword argument names (NULL for single-value methods) */
} TsSchedMethod;

extern const TsSchedMethod ts__sched_methods[];
extern const guint ts__sched_n_methods;

/* Method index owning knob (and the argument position in *arg), or -1. */
int ts__sched_knob_method(const char *knob, guint *arg);
int ts__sched_method_find(const char *name);

/* ---- lexer ---- */
typedef enum {
  TS_TOK_EOF,
  TS_TOK_IDENT,
  TS_TOK_INT,
  TS_TOK_STR,
  TS_TOK_LPAREN,
  TS_TOK_RPAREN,
  TS_TOK_LBRACK,
  TS_TOK_RBRACK,
  TS_TOK_COMMA,
  TS_TOK_DOT,
  TS_TOK_ASSIGN,
  TS_TOK_SEMI,
  TS_TOK_PLUS,
  TS_TOK_MINUS,
  TS_TOK_STAR,
  TS_TOK_SLASH,
  TS_TOK_PERCENT,
  TS_TOK_LT,
  TS_TOK_LE,
  TS_TOK_GT,
  TS_TOK_GE,
  TS_TOK_EQ,
  TS_TOK_NE,
  TS_TOK_ANDAND,
  TS_TOK_OROR,
  TS_TOK_BANG,
} TsTokKind;

typedef struct {
  TsTokKind kind;
  int line, col;      /* 1-based; col counts bytes */
  gboolean nl_before; /* a newline lies between this token and the previous one */
  guint64 mag;        /* TS_TOK_INT: magnitude, at most 2^63 (only valid after a unary minus) */
  const char *text;   /* TS_TOK_IDENT / TS_TOK_STR: unescaped, an interned reference-counted
                         string (g_ref_string_new_intern) the parser holds a reference to */
} TsTok;

typedef struct {
  const char *src;
  GArray *toks; /* TsTok, ending with TS_TOK_EOF */
  guint pos;
  guint nesting; /* parentheses, min/max calls and unary operators open at pos */
} TsParser;

/* How deep an expression may nest, as parsed ('(', min/max, unary operators) and as built (a
 * chain of 300 '+' is 300 deep): everything that walks an expression recurses, and a hostile
 * constraint must not turn that into a stack overflow. No real constraint comes near. */
#define TS_SCHED_MAX_EXPR_DEPTH 256

gboolean ts__sched_lex(TsParser *p, const char *src, GError **error);
void ts__sched_parser_clear(TsParser *p);
const TsTok *ts__sched_peek(const TsParser *p, guint ahead);
const TsTok *ts__sched_next(TsParser *p);
const char *ts__sched_tok_describe(const TsTok *t, char *buf, gsize size);

void ts__sched_error_at(GError **error, TsSchedError code, const char *src, int line, int col,
                        const char *fmt, ...) G_GNUC_PRINTF(6, 7);

/* ---- expressions ---- */
typedef enum {
  TS_EX_INT,
  TS_EX_STR,
  TS_EX_NAME,
  TS_EX_NEG,
  TS_EX_NOT,
  TS_EX_BIN,
  TS_EX_MIN,
  TS_EX_MAX,
} TsExKind;

/* Ordered by binding strength, loosest last; see ts__sched_op_prec. */
typedef enum {
  TS_OP_MUL,
  TS_OP_DIV,
  TS_OP_MOD,
  TS_OP_ADD,
  TS_OP_SUB,
  TS_OP_LT,
  TS_OP_LE,
  TS_OP_GT,
  TS_OP_GE,
  TS_OP_EQ,
  TS_OP_NE,
  TS_OP_AND,
  TS_OP_OR,
} TsExOp;

/* C semantics on int64 with every overflow caught: 0 ok, 1 division by zero, 2 overflow.
 * Comparisons yield 0 or 1; && and || are handled by callers so they can short-circuit. */
static inline int
ts__sched_binop(TsExOp op, gint64 a, gint64 b, gint64 *out)
{
  switch (op) {
  case TS_OP_MUL:
    return __builtin_mul_overflow(a, b, out) ? 2 : 0;
  case TS_OP_ADD:
    return __builtin_add_overflow(a, b, out) ? 2 : 0;
  case TS_OP_SUB:
    return __builtin_sub_overflow(a, b, out) ? 2 : 0;
  case TS_OP_DIV:
    if (b == 0)
      return 1;
    if (a == G_MININT64 && b == -1)
      return 2;
    *out = a / b;
    return 0;
  case TS_OP_MOD:
    if (b == 0)
      return 1;
    *out = b == -1 ? 0 : a % b; /* INT64_MIN % -1 traps on x86 although the answer is 0 */
    return 0;
  case TS_OP_LT:
    *out = a < b;
    return 0;
  case TS_OP_LE:
    *out = a <= b;
    return 0;
  case TS_OP_GT:
    *out = a > b;
    return 0;
  case TS_OP_GE:
    *out = a >= b;
    return 0;
  case TS_OP_EQ:
    *out = a == b;
    return 0;
  case TS_OP_NE:
    *out = a != b;
    return 0;
  case TS_OP_AND:
    *out = a && b;
    return 0;
  case TS_OP_OR:
    *out = a || b;
    return 0;
  }
  return 0;
}

const char *ts__sched_op_text(TsExOp op);

typedef struct _TsExpr TsExpr;
struct _TsExpr {
  TsExKind kind;
  TsExOp op;     /* TS_EX_BIN */
  gint64 i;      /* TS_EX_INT */
  const char *s; /* TS_EX_STR / TS_EX_NAME: interned g_ref_string, one reference */
  TsExpr *a, *b;
  int line, col; /* where it was written (operator position for operators), for errors */
  guint depth;   /* 1 for a leaf, else 1 + the deeper operand's */
};

TsExpr *ts__sched_expr_parse(TsParser *p, GError **error);
TsExpr *ts__sched_expr_copy(const TsExpr *e);
void ts__sched_expr_free(TsExpr *e);
char *ts__sched_expr_to_string(const TsExpr *e);
/* Types and constant sub-expressions: string misuse is TS_SCHED_ERROR_TYPE, constant division
 * by zero or overflow TS_SCHED_ERROR_EVAL, each with a caret into src. Names that are not knobs
 * of space are taken as integer environment values. */
gboolean ts__sched_expr_check(const TsExpr *e, const TsSchedSpace *space, const char *src,
                              GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsExpr, ts__sched_expr_free)

/* ---- spaces ---- */
typedef struct {
  const char *name; /* interned g_ref_string, one reference (string values likewise) */
  TsSchedKind kind;
  GArray *values; /* TsSchedValue */
} TsKnob;

struct _TsSchedSpace {
  GPtrArray *knobs;       /* TsKnob*, declaration order = index order (first most significant) */
  GPtrArray *constraints; /* TsExpr* */
};

TsSchedSpace *ts__sched_space_new(void);
void ts__sched_space_set_knob_array(TsSchedSpace *space, const char *name, GArray *values);
void ts__sched_space_add_expr(TsSchedSpace *space, TsExpr *e);
TsSchedSpace *ts__sched_parse_program(const char *text, GError **error);
char *ts__sched_value_to_string(TsSchedValue v);
void ts__sched_append_value(GString *s, TsSchedValue v);
gboolean ts__sched_value_equal(TsSchedValue a, TsSchedValue b);

/* One knob as the printers see it, whether from a space (n values) or a point (one). */
typedef struct {
  const char *name;
  const TsSchedValue *vals;
  guint n;
} TsKnobView;
/* Chained form when every knob belongs to a chained method and each method's knobs are
 * adjacent (so reading it back gives the same knob order), else dict form. */
void ts__sched_print_knobs(GString *s, const TsKnobView *knobs, guint n);

/* ---- points ---- */
TsSchedPoint *ts__sched_point_new_sized(guint n);
void ts__sched_point_append(TsSchedPoint *point, const char *name, TsSchedValue v);
/* Appends a knob the point does not have yet; name and string value are interned g_ref_strings
 * held by a space or plan, of which the point takes references of its own (the enumeration
 * hot path: no lookup, no interning lock). */
void ts__sched_point_push_interned(TsSchedPoint *point, const char *name, TsSchedValue v);
/* NULL when the point lacks the knob. */
const TsSchedValue *ts__sched_point_lookup(const TsSchedPoint *point, const char *name);

/* ---- evaluation plan: a space compiled against an environment ---- */
typedef struct _TsSchedPlan TsSchedPlan;
struct _TsSchedPlan {
  const TsSchedSpace *space;
  guint n;         /* knobs */
  guint *radix;    /* values per knob */
  gint64 **vals;   /* per knob: ints, or interned string pointers cast to gint64 */
  GPtrArray **at;  /* at[d + 1]: programs checked once knob d is bound (at[0]: env only) */
  gint64 *slots;   /* current knob values */
  guint *idx;      /* current value indices */
  /* group[d]: the smallest knob that shares a constraint with knob d, directly or through other
   * knobs (d itself where none does): the valid points are the product of each group's own */
  guint *group;
};

TsSchedPlan *ts__sched_plan_new(const TsSchedSpace *space, const TsSchedEnv *env, GError **error);
void ts__sched_plan_free(TsSchedPlan *plan);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsSchedPlan, ts__sched_plan_free)
/* Binds knob d to value index i. */
static inline void
ts__sched_plan_bind(TsSchedPlan *plan, guint d, guint i)
{
  plan->idx[d] = i;
  plan->slots[d] = plan->vals[d][i];
}
/* Checks the constraints that become decidable at depth d (-1: env only) with knobs 0..d bound:
 * 1 satisfied, 0 violated, -1 error (set). */
int ts__sched_plan_check_depth(TsSchedPlan *plan, int d, GError **error);
/* Point of the first n_bound knobs' current slot values. */
TsSchedPoint *ts__sched_plan_point(const TsSchedPlan *plan, guint n_bound);

G_END_DECLS
