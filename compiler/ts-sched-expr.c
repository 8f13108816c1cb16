/* ts-sched-expr.c — constraint expressions of .where(): parsing (C precedence, with `and`,
 * `or`, `not` as spellings of && || !), printing with minimal parentheses so that
 * print(parse(print(e))) == print(e), and the parse-time checks (types, constant division by
 * zero and overflow) that can be decided before any point exists. */
#include "ts-sched-private.h"

#include <string.h>

const char *
ts__sched_op_text(TsExOp op)
{
  static const char *const text[] = {
      [TS_OP_MUL] = "*", [TS_OP_DIV] = "/", [TS_OP_MOD] = "%", [TS_OP_ADD] = "+",
      [TS_OP_SUB] = "-", [TS_OP_LT] = "<",  [TS_OP_LE] = "<=", [TS_OP_GT] = ">",
      [TS_OP_GE] = ">=", [TS_OP_EQ] = "==", [TS_OP_NE] = "!=", [TS_OP_AND] = "&&",
      [TS_OP_OR] = "||",
  };
  return text[op];
}

/* Binding strength; unary operators 7, atoms 8. */
static int
op_prec(TsExOp op)
{
  switch (op) {
  case TS_OP_MUL:
  case TS_OP_DIV:
  case TS_OP_MOD:
    return 6;
  case TS_OP_ADD:
  case TS_OP_SUB:
    return 5;
  case TS_OP_LT:
  case TS_OP_LE:
  case TS_OP_GT:
  case TS_OP_GE:
    return 4;
  case TS_OP_EQ:
  case TS_OP_NE:
    return 3;
  case TS_OP_AND:
    return 2;
  case TS_OP_OR:
    return 1;
  }
  return 0;
}

static int
expr_prec(const TsExpr *e)
{
  switch (e->kind) {
  case TS_EX_BIN:
    return op_prec(e->op);
  case TS_EX_NEG:
  case TS_EX_NOT:
    return 7;
  default:
    return 8;
  }
}

static TsExpr *
node(TsExKind kind, const TsTok *at)
{
  TsExpr *e = g_new0(TsExpr, 1);
  e->kind = kind;
  e->line = at->line;
  e->col = at->col;
  e->depth = 1;
  return e;
}

static gboolean
too_deep(TsParser *p, int line, int col, GError **error)
{
  ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, p->src, line, col,
                     "expression nested more than %d deep: split it into several constraints",
                     TS_SCHED_MAX_EXPR_DEPTH);
  return FALSE;
}

/* Sets e's depth from its operands; FALSE (error set) past the limit. */
static gboolean
measure(TsParser *p, TsExpr *e, GError **error)
{
  e->depth = 1 + MAX(e->a ? e->a->depth : 0, e->b ? e->b->depth : 0);
  return e->depth <= TS_SCHED_MAX_EXPR_DEPTH || too_deep(p, e->line, e->col, error);
}

/* Entering a nested construct at token t; FALSE (error set) past the limit. Paired with
 * p->nesting-- on the way out. */
static gboolean
enter(TsParser *p, const TsTok *t, GError **error)
{
  if (++p->nesting > TS_SCHED_MAX_EXPR_DEPTH) {
    p->nesting--;
    return too_deep(p, t->line, t->col, error);
  }
  return TRUE;
}

void
ts__sched_expr_free(TsExpr *e)
{
  if (!e)
    return;
  ts__sched_expr_free(e->a);
  ts__sched_expr_free(e->b);
  if (e->s)
    g_ref_string_release((char *)e->s);
  g_free(e);
}

TsExpr *
ts__sched_expr_copy(const TsExpr *e)
{
  if (!e)
    return NULL;
  TsExpr *c = g_memdup2(e, sizeof *e);
  if (c->s)
    g_ref_string_acquire((char *)c->s);
  c->a = ts__sched_expr_copy(e->a);
  c->b = ts__sched_expr_copy(e->b);
  return c;
}

static gboolean
is_word(const TsTok *t, const char *w)
{
  return t->kind == TS_TOK_IDENT && strcmp(t->text, w) == 0;
}

static void
unexpected(TsParser *p, const TsTok *t, const char *wanted, GError **error)
{
  char buf[64];
  ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, p->src, t->line, t->col, "expected %s, found %s",
                     wanted, ts__sched_tok_describe(t, buf, sizeof buf));
}

static TsExpr *parse_or(TsParser *p, GError **error);

static gboolean
expect_close(TsParser *p, TsTokKind kind, const TsTok *open, GError **error)
{
  const TsTok *t = ts__sched_peek(p, 0);
  if (t->kind == kind) {
    ts__sched_next(p);
    return TRUE;
  }
  char buf[64];
  ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, p->src, t->line, t->col,
                     "unbalanced parentheses: expected ')' to close the '(' at %d:%d, found %s",
                     open->line, open->col, ts__sched_tok_describe(t, buf, sizeof buf));
  return FALSE;
}

static TsExpr *
parse_primary(TsParser *p, GError **error)
{
  const TsTok *t = ts__sched_peek(p, 0);
  switch (t->kind) {
  case TS_TOK_INT: {
    if (t->mag > (guint64)G_MAXINT64) {
      ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, p->src, t->line, t->col, "number too large");
      return NULL;
    }
    TsExpr *e = node(TS_EX_INT, ts__sched_next(p));
    e->i = (gint64)t->mag;
    return e;
  }
  case TS_TOK_STR: {
    TsExpr *e = node(TS_EX_STR, ts__sched_next(p));
    e->s = g_ref_string_acquire((char *)t->text);
    return e;
  }
  case TS_TOK_LPAREN: {
    if (!enter(p, t, error))
      return NULL;
    const TsTok *open = ts__sched_next(p);
    g_autoptr(TsExpr) e = parse_or(p, error);
    p->nesting--;
    if (!e || !expect_close(p, TS_TOK_RPAREN, open, error))
      return NULL;
    return g_steal_pointer(&e);
  }
  case TS_TOK_IDENT:
    if (is_word(t, "and") || is_word(t, "or") || is_word(t, "not"))
      break;
    if ((is_word(t, "min") || is_word(t, "max")) && ts__sched_peek(p, 1)->kind == TS_TOK_LPAREN) {
      if (!enter(p, t, error))
        return NULL;
      g_autoptr(TsExpr) e = node(is_word(t, "min") ? TS_EX_MIN : TS_EX_MAX, ts__sched_next(p));
      const TsTok *open = ts__sched_next(p);
      gboolean ok = (e->a = parse_or(p, error)) != NULL;
      if (ok && ts__sched_peek(p, 0)->kind != TS_TOK_COMMA) {
        unexpected(p, ts__sched_peek(p, 0), "',' (min and max take two arguments)", error);
        ok = FALSE;
      }
      if (ok) {
        ts__sched_next(p);
        ok = (e->b = parse_or(p, error)) != NULL;
      }
      p->nesting--;
      if (!ok || !expect_close(p, TS_TOK_RPAREN, open, error) || !measure(p, e, error))
        return NULL;
      return g_steal_pointer(&e);
    }
    if (ts__sched_peek(p, 1)->kind == TS_TOK_LPAREN) {
      ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, p->src, t->line, t->col,
                         "unknown function '%s' (constraints know min and max)", t->text);
      return NULL;
    }
    {
      TsExpr *e = node(TS_EX_NAME, ts__sched_next(p));
      e->s = g_ref_string_acquire((char *)t->text);
      return e;
    }
  default:
    break;
  }
  unexpected(p, t, "a number, a string, a name or '('", error);
  return NULL;
}

static TsExpr *
parse_unary(TsParser *p, GError **error)
{
  const TsTok *t = ts__sched_peek(p, 0);
  if (t->kind == TS_TOK_MINUS && ts__sched_peek(p, 1)->kind == TS_TOK_INT) {
    /* Fold the sign into the literal: -9223372036854775808 is only writable this way. */
    ts__sched_next(p);
    const TsTok *num = ts__sched_next(p);
    TsExpr *e = node(TS_EX_INT, t);
    e->i = num->mag == (guint64)G_MAXINT64 + 1 ? G_MININT64 : -(gint64)num->mag;
    return e;
  }
  if (t->kind == TS_TOK_MINUS || t->kind == TS_TOK_BANG || is_word(t, "not")) {
    if (!enter(p, t, error))
      return NULL;
    g_autoptr(TsExpr) e = node(t->kind == TS_TOK_MINUS ? TS_EX_NEG : TS_EX_NOT, ts__sched_next(p));
    e->a = parse_unary(p, error);
    p->nesting--;
    if (!e->a || !measure(p, e, error))
      return NULL;
    return g_steal_pointer(&e);
  }
  return parse_primary(p, error);
}

/* Operator at the current token for precedence level prec, or -1. */
static int
binop_here(const TsParser *p, int prec)
{
  const TsTok *t = ts__sched_peek(p, 0);
  switch (prec) {
  case 6:
    return t->kind == TS_TOK_STAR      ? TS_OP_MUL
           : t->kind == TS_TOK_SLASH   ? TS_OP_DIV
           : t->kind == TS_TOK_PERCENT ? TS_OP_MOD
                                       : -1;
  case 5:
    return t->kind == TS_TOK_PLUS ? TS_OP_ADD : t->kind == TS_TOK_MINUS ? TS_OP_SUB : -1;
  case 4:
    return t->kind == TS_TOK_LT   ? TS_OP_LT
           : t->kind == TS_TOK_LE ? TS_OP_LE
           : t->kind == TS_TOK_GT ? TS_OP_GT
           : t->kind == TS_TOK_GE ? TS_OP_GE
                                  : -1;
  case 3:
    return t->kind == TS_TOK_EQ ? TS_OP_EQ : t->kind == TS_TOK_NE ? TS_OP_NE : -1;
  case 2:
    return t->kind == TS_TOK_ANDAND || is_word(t, "and") ? TS_OP_AND : -1;
  case 1:
    return t->kind == TS_TOK_OROR || is_word(t, "or") ? TS_OP_OR : -1;
  }
  return -1;
}

/* All binary levels are left-associative, as in C. */
static TsExpr *
parse_level(TsParser *p, int prec, GError **error)
{
  g_autoptr(TsExpr) left = prec == 6 ? parse_unary(p, error) : parse_level(p, prec + 1, error);
  if (!left)
    return NULL;
  int op;
  while ((op = binop_here(p, prec)) >= 0) {
    TsExpr *e = node(TS_EX_BIN, ts__sched_next(p));
    e->op = (TsExOp)op;
    e->a = g_steal_pointer(&left);
    left = e;
    if (!(e->b = prec == 6 ? parse_unary(p, error) : parse_level(p, prec + 1, error)) ||
        !measure(p, e, error))
      return NULL;
  }
  return g_steal_pointer(&left);
}

static TsExpr *
parse_or(TsParser *p, GError **error)
{
  return parse_level(p, 1, error);
}

TsExpr *
ts__sched_expr_parse(TsParser *p, GError **error)
{
  return parse_or(p, error);
}

static void
print_expr(GString *s, const TsExpr *e)
{
  switch (e->kind) {
  case TS_EX_INT:
    g_string_append_printf(s, "%" G_GINT64_FORMAT, e->i);
    break;
  case TS_EX_STR:
    ts__sched_append_value(s, (TsSchedValue){.kind = TS_SCHED_STR, .s = e->s});
    break;
  case TS_EX_NAME:
    g_string_append(s, e->s);
    break;
  case TS_EX_NEG:
  case TS_EX_NOT: {
    gboolean paren = expr_prec(e->a) < 7;
    g_string_append(s, e->kind == TS_EX_NEG ? "-" : "!");
    g_string_append(s, paren ? "(" : "");
    print_expr(s, e->a);
    g_string_append(s, paren ? ")" : "");
    break;
  }
  case TS_EX_MIN:
  case TS_EX_MAX:
    g_string_append(s, e->kind == TS_EX_MIN ? "min(" : "max(");
    print_expr(s, e->a);
    g_string_append(s, ", ");
    print_expr(s, e->b);
    g_string_append_c(s, ')');
    break;
  case TS_EX_BIN: {
    int p = op_prec(e->op);
    /* Left-associative: a left operand of equal strength needs no parentheses, a right one does. */
    gboolean pa = expr_prec(e->a) < p, pb = expr_prec(e->b) <= p;
    g_string_append(s, pa ? "(" : "");
    print_expr(s, e->a);
    g_string_append_printf(s, "%s %s %s", pa ? ")" : "", ts__sched_op_text(e->op), pb ? "(" : "");
    print_expr(s, e->b);
    g_string_append(s, pb ? ")" : "");
    break;
  }
  }
}

char *
ts__sched_expr_to_string(const TsExpr *e)
{
  GString *s = g_string_new(NULL);
  if (e)
    print_expr(s, e);
  return g_string_free(s, FALSE);
}

typedef struct {
  const TsSchedSpace *space;
  const char *src;
} CheckCtx;

/* Type of e in *kind; *is_const and *val when e is an integer constant. */
static gboolean
check(const CheckCtx *c, const TsExpr *e, TsSchedKind *kind, gboolean *is_const, gint64 *val,
      GError **error)
{
  TsSchedKind ka = TS_SCHED_INT, kb = TS_SCHED_INT;
  gboolean ca = FALSE, cb = FALSE;
  gint64 va = 0, vb = 0;
  *kind = TS_SCHED_INT;
  *is_const = FALSE;
  switch (e->kind) {
  case TS_EX_INT:
    *is_const = TRUE;
    *val = e->i;
    return TRUE;
  case TS_EX_STR:
    *kind = TS_SCHED_STR;
    return TRUE;
  case TS_EX_NAME: {
    int k = ts_sched_space_knob_index(c->space, e->s);
    if (k >= 0)
      *kind = ((TsKnob *)g_ptr_array_index(c->space->knobs, k))->kind;
    return TRUE;
  }
  default:
    break;
  }
  if (!check(c, e->a, &ka, &ca, &va, error))
    return FALSE;
  if (e->b && !check(c, e->b, &kb, &cb, &vb, error))
    return FALSE;
  if (e->kind == TS_EX_BIN && (e->op == TS_OP_EQ || e->op == TS_OP_NE)) {
    if (ka != kb) {
      ts__sched_error_at(error, TS_SCHED_ERROR_TYPE, c->src, e->line, e->col,
                         "cannot compare a string with an integer");
      return FALSE;
    }
    if (ka == TS_SCHED_STR)
      return TRUE;
  } else if (ka == TS_SCHED_STR || kb == TS_SCHED_STR) {
    const char *what = e->kind == TS_EX_NEG   ? "-"
                       : e->kind == TS_EX_NOT ? "!"
                       : e->kind == TS_EX_MIN ? "min"
                       : e->kind == TS_EX_MAX ? "max"
                                              : ts__sched_op_text(e->op);
    ts__sched_error_at(error, TS_SCHED_ERROR_TYPE, c->src, e->line, e->col,
                       "string operand of '%s' (strings only compare with == and !=)", what);
    return FALSE;
  }
  if (e->kind == TS_EX_BIN && (e->op == TS_OP_DIV || e->op == TS_OP_MOD) && cb && vb == 0) {
    /* `BM / 0` fails at every point; say so now rather than at the first evaluation. */
    ts__sched_error_at(error, TS_SCHED_ERROR_EVAL, c->src, e->line, e->col, "division by zero");
    return FALSE;
  }
  if (!ca || (e->b && !cb))
    return TRUE;
  *is_const = TRUE;
  int r = 0;
  switch (e->kind) {
  case TS_EX_NEG:
    r = __builtin_sub_overflow((gint64)0, va, val) ? 2 : 0;
    break;
  case TS_EX_NOT:
    *val = !va;
    break;
  case TS_EX_MIN:
    *val = MIN(va, vb);
    break;
  case TS_EX_MAX:
    *val = MAX(va, vb);
    break;
  default:
    r = ts__sched_binop(e->op, va, vb, val);
    break;
  }
  if (r == 1)
    ts__sched_error_at(error, TS_SCHED_ERROR_EVAL, c->src, e->line, e->col, "division by zero");
  else if (r == 2)
    ts__sched_error_at(error, TS_SCHED_ERROR_EVAL, c->src, e->line, e->col,
                       "integer overflow in constant expression");
  return r == 0;
}

gboolean
ts__sched_expr_check(const TsExpr *e, const TsSchedSpace *space, const char *src, GError **error)
{
  CheckCtx c = {space, src};
  TsSchedKind kind;
  gboolean is_const;
  gint64 val;
  if (!check(&c, e, &kind, &is_const, &val, error))
    return FALSE;
  if (kind == TS_SCHED_STR) {
    ts__sched_error_at(error, TS_SCHED_ERROR_TYPE, src, e->line, e->col,
                       "a constraint must be a condition, not a string");
    return FALSE;
  }
  return TRUE;
}
