/* ts-lang-parse.c — recursive descent over the kernel language's tokens into TsLangNode trees.
 * The grammar is Python's, cut to what kernels use:
 *
 *   file      := (decorator* def)*
 *   decorator := '@' expr NEWLINE
 *   def       := 'def' NAME '(' [param (',' param)* [',']] ')' ['->' expr] ':' suite
 *   param     := '*' | NAME [':' ['mut'] expr] ['=' expr]
 *   suite     := simple NEWLINE | NEWLINE INDENT stmt+ DEDENT
 *   stmt      := 'for' targets 'in' expr ':' suite | 'if' expr ':' suite ('elif' ...)* ['else'
 *                ':' suite] | simple (';' simple)* [';'] NEWLINE
 *   simple    := 'return' [exprs] | 'pass' | exprs ['=' exprs | AUGOP expr]
 *   expr      := or ['if' or 'else' expr];  or := and ('or' and)*;  and := not ('and' not)*
 *   not       := 'not' not | cmp;  cmp := bitor [CMPOP bitor];  then | ^ & << >> + - and
 *   term      := factor (('*' | '/' | '//' | '%' | '@') factor)*;  factor := ('-'|'+'|'~') factor
 *                | power;  power := postfix ['**' factor]
 *   postfix   := atom ('(' args ')' | '[' subscripts ']' | '.' NAME)*
 *   atom      := NAME | number | string | '(' [exprs] ')' | '[' [exprs] ']'
 */
#include "ts-lang-private.h"

#include <stdarg.h>
#include <string.h>

#define MAX_DEPTH 200 /* nesting of expressions and blocks: far beyond a kernel, short of the stack */

typedef struct {
  const char *src, *file;
  GArray *toks;
  guint pos;
  int depth;
  GError **error;
} Parser;

static const TsLangTok *
peek(const Parser *p)
{
  return &g_array_index(p->toks, TsLangTok, p->pos);
}

static const TsLangTok *
next(Parser *p)
{
  const TsLangTok *t = peek(p);
  if (t->kind != TS_LT_EOF)
    p->pos++;
  return t;
}

static gboolean
is_op(const Parser *p, const char *op)
{
  const TsLangTok *t = peek(p);
  return t->kind == TS_LT_OP && strcmp(t->text, op) == 0;
}

static gboolean
is_kw(const Parser *p, const char *kw)
{
  const TsLangTok *t = peek(p);
  return t->kind == TS_LT_NAME && strcmp(t->text, kw) == 0;
}

static const char *
describe(const TsLangTok *t)
{
  switch (t->kind) {
  case TS_LT_NEWLINE: return "the end of the line";
  case TS_LT_INDENT: return "an indented block";
  case TS_LT_DEDENT: return "the end of the block";
  case TS_LT_EOF: return "the end of the file";
  case TS_LT_STRING: return "a string";
  case TS_LT_INT:
  case TS_LT_FLOAT: return "a number";
  default: return NULL;
  }
}

static gpointer fail_at(Parser *p, const TsLangTok *t, gint code, const char *fmt, ...)
  G_GNUC_PRINTF(4, 5);

/* The first error wins: the ones after it follow from it. Returns NULL for the caller's return. */
static gpointer
fail_at(Parser *p, const TsLangTok *t, gint code, const char *fmt, ...)
{
  if (p->error && *p->error == NULL) {
    va_list ap;
    va_start(ap, fmt);
    ts_lang_set_error_valist(p->error, code, p->src, p->file, t->line, t->col, fmt, ap);
    va_end(ap);
  }
  return NULL;
}

/* "expected X, found Y" at the current token. */
static gpointer
expected(Parser *p, const char *what)
{
  const TsLangTok *t = peek(p);
  const char *d = describe(t);
  g_autofree char *found = d ? g_strdup(d) : g_strdup_printf("'%s'", t->text);
  g_autofree char *msg = g_strdup_printf("expected %s, found %s", what, found);
  return fail_at(p, t, TS_LANG_ERROR_SYNTAX, "%s", msg);
}

static gboolean
expect_op(Parser *p, const char *op)
{
  if (is_op(p, op)) {
    next(p);
    return TRUE;
  }
  g_autofree char *what = g_strdup_printf("'%s'", op);
  expected(p, what);
  return FALSE;
}

static TsLangNode *
node(TsLangKind kind, const TsLangTok *at, const char *str)
{
  TsLangNode *n = g_new0(TsLangNode, 1);
  n->kind = kind;
  n->str = g_strdup(str);
  n->line = at->line;
  n->col = at->col;
  n->kids = g_ptr_array_new();
  return n;
}

static TsLangNode *
with(TsLangNode *n, TsLangNode *kid)
{
  g_ptr_array_add(n->kids, kid);
  return n;
}

static TsLangNode *binary(TsLangKind kind, const TsLangTok *at, const char *op, TsLangNode *l,
                          TsLangNode *r);

static TsLangNode *expr(Parser *p);
static TsLangNode *exprs(Parser *p, gboolean for_target);
static TsLangNode *suite(Parser *p);

static gboolean
enter(Parser *p)
{
  if (++p->depth > MAX_DEPTH) {
    fail_at(p, peek(p), TS_LANG_ERROR_LIMIT, "nested more than %d levels deep", MAX_DEPTH);
    return FALSE;
  }
  return TRUE;
}

/* ---- expressions ---- */

/* The arguments of a call after its '(' up to its ')': positional, then name=value. */
static TsLangNode *
call_args(Parser *p, TsLangNode *call)
{
  gboolean keywords = FALSE;
  while (!is_op(p, ")")) {
    const TsLangTok *t = peek(p);
    TsLangNode *arg;
    if (t->kind == TS_LT_NAME && g_array_index(p->toks, TsLangTok, p->pos + 1).kind == TS_LT_OP &&
        strcmp(g_array_index(p->toks, TsLangTok, p->pos + 1).text, "=") == 0) {
      next(p);
      next(p);
      TsLangNode *v = expr(p);
      if (v == NULL)
        return NULL;
      arg = with(node(TS_LANG_KEYWORD, t, t->text), v);
      keywords = TRUE;
    } else {
      if (keywords)
        return fail_at(p, t, TS_LANG_ERROR_SYNTAX,
                       "a positional argument cannot follow keyword arguments");
      arg = expr(p);
      if (arg == NULL)
        return NULL;
    }
    with(call, arg);
    if (!is_op(p, ","))
      break;
    next(p);
  }
  return expect_op(p, ")") ? call : NULL;
}

/* One subscript: an expression or a slice lo:hi:step with any part left out. */
static TsLangNode *
subscript(Parser *p)
{
  const TsLangTok *at = peek(p);
  TsLangNode *lo = NULL;
  if (!is_op(p, ":")) {
    lo = expr(p);
    if (lo == NULL || !is_op(p, ":"))
      return lo;
  }
  g_autoptr(TsLangNode) s = with(node(TS_LANG_SLICE, at, NULL), lo);
  next(p); /* ':' */
  for (int part = 0; part < 2; part++) {
    TsLangNode *v = NULL;
    if (!is_op(p, ":") && !is_op(p, ",") && !is_op(p, "]")) {
      v = expr(p);
      if (v == NULL)
        return NULL;
    }
    with(s, v);
    if (part == 0) {
      if (!is_op(p, ":")) {
        with(s, NULL);
        break;
      }
      next(p);
    }
  }
  return g_steal_pointer(&s);
}

static TsLangNode *
atom(Parser *p)
{
  const TsLangTok *t = peek(p);
  switch (t->kind) {
  case TS_LT_NAME: {
    static const char *const reserved[] = {"def", "for", "in", "if", "elif", "else", "return",
                                           "pass", "and", "or", "not", NULL};
    if (g_strv_contains(reserved, t->text))
      return expected(p, "an expression");
    next(p);
    return node(TS_LANG_NAME, t, t->text);
  }
  case TS_LT_INT:
  case TS_LT_FLOAT: {
    next(p);
    TsLangNode *n = node(t->kind == TS_LT_INT ? TS_LANG_INT : TS_LANG_FLOAT, t, NULL);
    n->num = t->num;
    return n;
  }
  case TS_LT_STRING:
    next(p);
    return node(TS_LANG_STRING, t, t->text);
  case TS_LT_OP:
    if (strcmp(t->text, "(") == 0 || strcmp(t->text, "[") == 0) {
      const gboolean list = t->text[0] == '[';
      next(p);
      const char *close = list ? "]" : ")";
      if (is_op(p, close)) {
        next(p);
        return node(list ? TS_LANG_LIST : TS_LANG_TUPLE, t, NULL);
      }
      TsLangNode *inner = exprs(p, FALSE);
      if (inner == NULL)
        return NULL;
      if (!expect_op(p, close)) {
        ts_lang_node_free(inner);
        return NULL;
      }
      if (list && inner->kind != TS_LANG_TUPLE)
        return with(node(TS_LANG_LIST, t, NULL), inner);
      if (list)
        inner->kind = TS_LANG_LIST;
      if (inner->kind == TS_LANG_TUPLE || inner->kind == TS_LANG_LIST) {
        inner->line = t->line; /* a display starts at its bracket */
        inner->col = t->col;
      }
      return inner; /* (x) is x; (x, y) a tuple */
    }
    break;
  default:
    break;
  }
  return expected(p, "an expression");
}

/* A postfix node starts where its base does (a call's position is its callee's start). */
static TsLangNode *
from(TsLangNode *n, const TsLangNode *base)
{
  n->line = base->line;
  n->col = base->col;
  return n;
}

static TsLangNode *
postfix(Parser *p)
{
  g_autoptr(TsLangNode) n = atom(p);
  while (n) {
    const TsLangTok *t = peek(p);
    if (is_op(p, "(")) {
      next(p);
      TsLangNode *call = from(node(TS_LANG_CALL, t, NULL), n);
      with(call, g_steal_pointer(&n));
      n = call_args(p, call);
      if (n == NULL)
        ts_lang_node_free(call);
    } else if (is_op(p, "[")) {
      next(p);
      const TsLangTok *at = peek(p);
      g_autoptr(TsLangNode) index = subscript(p);
      if (index == NULL)
        return NULL;
      if (is_op(p, ",")) {
        TsLangNode *tuple = with(node(TS_LANG_TUPLE, at, NULL), g_steal_pointer(&index));
        index = tuple;
        while (is_op(p, ",")) {
          next(p);
          if (is_op(p, "]"))
            break;
          TsLangNode *s = subscript(p);
          if (s == NULL)
            return NULL;
          with(index, s);
        }
      }
      if (!expect_op(p, "]"))
        return NULL;
      TsLangNode *sub = from(node(TS_LANG_SUBSCRIPT, t, NULL), n);
      with(sub, g_steal_pointer(&n));
      n = with(sub, g_steal_pointer(&index));
    } else if (is_op(p, ".")) {
      next(p);
      const TsLangTok *name = peek(p);
      if (name->kind != TS_LT_NAME)
        return expected(p, "an attribute name after '.'");
      next(p);
      TsLangNode *attr = from(node(TS_LANG_ATTR, name, name->text), n);
      n = with(attr, g_steal_pointer(&n));
    } else {
      break;
    }
  }
  return g_steal_pointer(&n);
}

static TsLangNode *factor(Parser *p);

static TsLangNode *
power(Parser *p)
{
  TsLangNode *base = postfix(p);
  if (base == NULL || !is_op(p, "**"))
    return base;
  const TsLangTok *t = next(p);
  TsLangNode *exp = factor(p); /* right-associative, and binds -x on its right: 2 ** -1 */
  if (exp == NULL) {
    ts_lang_node_free(base);
    return NULL;
  }
  return binary(TS_LANG_BINOP, t, "**", base, exp);
}

static TsLangNode *
factor(Parser *p)
{
  if (is_op(p, "-") || is_op(p, "+") || is_op(p, "~")) {
    const TsLangTok *t = next(p);
    if (!enter(p))
      return NULL;
    TsLangNode *operand = factor(p);
    p->depth--;
    return operand ? with(node(TS_LANG_UNARY, t, t->text), operand) : NULL;
  }
  return power(p);
}

static TsLangNode *
binary(TsLangKind kind, const TsLangTok *at, const char *op, TsLangNode *l, TsLangNode *r)
{
  TsLangNode *n = node(kind, at, op);
  n->line = l->line;
  n->col = l->col;
  return with(with(n, l), r);
}

/* Left-associative levels, tightest last. */
static const char *const *const levels[] = {
  (const char *const[]){"|", NULL},
  (const char *const[]){"^", NULL},
  (const char *const[]){"&", NULL},
  (const char *const[]){"<<", ">>", NULL},
  (const char *const[]){"+", "-", NULL},
  (const char *const[]){"*", "/", "//", "%", "@", NULL},
};

static TsLangNode *
level(Parser *p, guint l)
{
  if (l == G_N_ELEMENTS(levels))
    return factor(p);
  TsLangNode *left = level(p, l + 1);
  while (left) {
    const TsLangTok *t = peek(p);
    gboolean match = FALSE;
    for (const char *const *o = levels[l]; *o && !match; o++)
      match = t->kind == TS_LT_OP && strcmp(t->text, *o) == 0;
    if (!match)
      break;
    next(p);
    TsLangNode *right = level(p, l + 1);
    if (right == NULL) {
      ts_lang_node_free(left);
      return NULL;
    }
    left = binary(TS_LANG_BINOP, t, t->text, left, right);
  }
  return left;
}

static TsLangNode *
comparison(Parser *p)
{
  TsLangNode *left = level(p, 0);
  static const char *const cmps[] = {"==", "!=", "<", "<=", ">", ">=", NULL};
  const TsLangTok *t = peek(p);
  if (left == NULL || !((t->kind == TS_LT_OP && g_strv_contains(cmps, t->text)) || is_kw(p, "in")))
    return left;
  next(p);
  TsLangNode *right = level(p, 0);
  if (right == NULL) {
    ts_lang_node_free(left);
    return NULL;
  }
  TsLangNode *n = binary(TS_LANG_COMPARE, t, t->text, left, right);
  const TsLangTok *again = peek(p);
  if (again->kind == TS_LT_OP && g_strv_contains(cmps, again->text)) {
    ts_lang_node_free(n);
    return fail_at(p, again, TS_LANG_ERROR_SYNTAX,
                   "chained comparisons are not supported; join them with 'and'");
  }
  return n;
}

static TsLangNode *
not_test(Parser *p)
{
  if (is_kw(p, "not")) {
    const TsLangTok *t = next(p);
    if (!enter(p))
      return NULL;
    TsLangNode *operand = not_test(p);
    p->depth--;
    return operand ? with(node(TS_LANG_UNARY, t, "not"), operand) : NULL;
  }
  return comparison(p);
}

static TsLangNode *
bool_op(Parser *p, const char *kw)
{
  TsLangNode *left = strcmp(kw, "or") == 0 ? bool_op(p, "and") : not_test(p);
  while (left && is_kw(p, kw)) {
    const TsLangTok *t = next(p);
    TsLangNode *right = strcmp(kw, "or") == 0 ? bool_op(p, "and") : not_test(p);
    if (right == NULL) {
      ts_lang_node_free(left);
      return NULL;
    }
    left = binary(TS_LANG_BOOLOP, t, kw, left, right);
  }
  return left;
}

static TsLangNode *
expr(Parser *p)
{
  if (!enter(p))
    return NULL;
  TsLangNode *v = bool_op(p, "or");
  if (v && is_kw(p, "if")) {
    const TsLangTok *t = next(p);
    TsLangNode *cond = bool_op(p, "or");
    TsLangNode *other = NULL;
    if (cond && is_kw(p, "else")) {
      next(p);
      other = expr(p);
    } else if (cond) {
      expected(p, "'else' of the conditional expression");
    }
    if (other == NULL) {
      ts_lang_node_free(v);
      ts_lang_node_free(cond);
      v = NULL;
    } else {
      TsLangNode *n = with(with(with(node(TS_LANG_IFEXP, t, NULL), v), cond), other);
      n->line = v->line;
      n->col = v->col;
      v = n;
    }
  }
  p->depth--;
  return v;
}

/* One expression, or several separated by commas (a tuple). for_target: stop before 'in'. */
static TsLangNode *
exprs(Parser *p, gboolean for_target)
{
  const TsLangTok *at = peek(p);
  TsLangNode *first = for_target ? postfix(p) : expr(p);
  if (first == NULL || !is_op(p, ","))
    return first;
  g_autoptr(TsLangNode) tuple = with(node(TS_LANG_TUPLE, at, NULL), first);
  while (is_op(p, ",")) {
    next(p);
    const TsLangTok *t = peek(p);
    if (t->kind == TS_LT_NEWLINE || is_op(p, ")") || is_op(p, "]") || is_op(p, "=") ||
        is_kw(p, "in"))
      break; /* a trailing comma */
    TsLangNode *e = for_target ? postfix(p) : expr(p);
    if (e == NULL)
      return NULL;
    with(tuple, e);
  }
  return g_steal_pointer(&tuple);
}

/* ---- statements ---- */

static gboolean
assignable(const TsLangNode *n)
{
  if (n->kind == TS_LANG_TUPLE) {
    for (guint i = 0; i < n->kids->len; i++)
      if (!assignable(g_ptr_array_index(n->kids, i)))
        return FALSE;
    return n->kids->len > 0;
  }
  return n->kind == TS_LANG_NAME || n->kind == TS_LANG_ATTR || n->kind == TS_LANG_SUBSCRIPT;
}

static TsLangNode *
simple(Parser *p)
{
  const TsLangTok *t = peek(p);
  if (is_kw(p, "pass")) {
    next(p);
    return node(TS_LANG_PASS, t, NULL);
  }
  if (is_kw(p, "return")) {
    next(p);
    TsLangNode *r = node(TS_LANG_RETURN, t, NULL);
    const TsLangTok *n = peek(p);
    if (n->kind == TS_LT_NEWLINE || is_op(p, ";"))
      return with(r, NULL);
    TsLangNode *v = exprs(p, FALSE);
    if (v == NULL) {
      ts_lang_node_free(r);
      return NULL;
    }
    return with(r, v);
  }
  static const char *const reserved[] = {"def", "for", "if", "elif", "else", NULL};
  if (t->kind == TS_LT_NAME && g_strv_contains(reserved, t->text))
    return fail_at(p, t, TS_LANG_ERROR_SYNTAX, "'%s' cannot start a statement here", t->text);
  g_autoptr(TsLangNode) lhs = exprs(p, FALSE);
  if (lhs == NULL)
    return NULL;
  const TsLangTok *op = peek(p);
  if (is_op(p, "=")) {
    if (!assignable(lhs))
      return fail_at(p, op, TS_LANG_ERROR_SYNTAX,
                     "cannot assign to this: the left of '=' must be names, attributes or "
                     "subscripts");
    next(p);
    g_autoptr(TsLangNode) rhs = exprs(p, FALSE);
    if (rhs == NULL)
      return NULL;
    if (is_op(p, "="))
      return fail_at(p, peek(p), TS_LANG_ERROR_SYNTAX,
                     "chained assignment (a = b = c) is not supported");
    TsLangNode *a = node(TS_LANG_ASSIGN, t, NULL);
    return with(with(a, g_steal_pointer(&lhs)), g_steal_pointer(&rhs));
  }
  if (op->kind == TS_LT_OP && strlen(op->text) >= 2 && op->text[strlen(op->text) - 1] == '=' &&
      strcmp(op->text, "==") != 0 && strcmp(op->text, "!=") != 0 &&
      strcmp(op->text, "<=") != 0 && strcmp(op->text, ">=") != 0) {
    if (lhs->kind == TS_LANG_TUPLE || !assignable(lhs))
      return fail_at(p, op, TS_LANG_ERROR_SYNTAX, "cannot update this in place with '%s'",
                     op->text);
    next(p);
    TsLangNode *rhs = expr(p);
    if (rhs == NULL)
      return NULL;
    g_autofree char *bin = g_strndup(op->text, strlen(op->text) - 1);
    TsLangNode *a = node(TS_LANG_AUGASSIGN, t, bin);
    return with(with(a, g_steal_pointer(&lhs)), rhs);
  }
  return with(node(TS_LANG_EXPR_STMT, t, NULL), g_steal_pointer(&lhs));
}

/* Simple statements separated by ';' up to the end of the line, into block. */
static gboolean
simple_line(Parser *p, TsLangNode *block)
{
  for (;;) {
    TsLangNode *s = simple(p);
    if (s == NULL)
      return FALSE;
    with(block, s);
    if (!is_op(p, ";"))
      break;
    next(p);
    if (peek(p)->kind == TS_LT_NEWLINE)
      break;
  }
  if (peek(p)->kind != TS_LT_NEWLINE) {
    expected(p, "the end of the line");
    return FALSE;
  }
  next(p);
  return TRUE;
}

static TsLangNode *statement(Parser *p, TsLangNode *block);

static TsLangNode *
if_stmt(Parser *p)
{
  const TsLangTok *t = next(p); /* 'if' or 'elif' */
  g_autoptr(TsLangNode) n = node(TS_LANG_IF, t, NULL);
  TsLangNode *cond = expr(p);
  if (cond == NULL)
    return NULL;
  with(n, cond);
  if (!expect_op(p, ":"))
    return NULL;
  TsLangNode *then = suite(p);
  if (then == NULL)
    return NULL;
  with(n, then);
  if (is_kw(p, "elif")) {
    const TsLangTok *at = peek(p);
    TsLangNode *other = if_stmt(p);
    if (other == NULL)
      return NULL;
    with(n, with(node(TS_LANG_BLOCK, at, NULL), other));
  } else if (is_kw(p, "else")) {
    next(p);
    if (!expect_op(p, ":"))
      return NULL;
    TsLangNode *other = suite(p);
    if (other == NULL)
      return NULL;
    with(n, other);
  } else {
    with(n, NULL);
  }
  return g_steal_pointer(&n);
}

static TsLangNode *
for_stmt(Parser *p)
{
  const TsLangTok *t = next(p);
  g_autoptr(TsLangNode) n = node(TS_LANG_FOR, t, NULL);
  TsLangNode *target = exprs(p, TRUE);
  if (target == NULL)
    return NULL;
  with(n, target);
  if (!assignable(target))
    return fail_at(p, t, TS_LANG_ERROR_SYNTAX, "a for loop's variable must be a name");
  if (!is_kw(p, "in"))
    return expected(p, "'in'");
  next(p);
  TsLangNode *iter = expr(p);
  if (iter == NULL)
    return NULL;
  with(n, iter);
  if (!expect_op(p, ":"))
    return NULL;
  TsLangNode *body = suite(p);
  if (body == NULL)
    return NULL;
  return with(g_steal_pointer(&n), body);
}

/* A compound statement's body: simple statements on its own line, or an indented block. */
static TsLangNode *
suite(Parser *p)
{
  const TsLangTok *at = peek(p);
  g_autoptr(TsLangNode) block = node(TS_LANG_BLOCK, at, NULL);
  if (at->kind != TS_LT_NEWLINE)
    return simple_line(p, block) ? g_steal_pointer(&block) : NULL;
  next(p);
  if (peek(p)->kind != TS_LT_INDENT)
    return expected(p, "an indented block");
  next(p);
  if (!enter(p))
    return NULL;
  while (peek(p)->kind != TS_LT_DEDENT && peek(p)->kind != TS_LT_EOF)
    if (!statement(p, block))
      return NULL;
  p->depth--;
  next(p); /* DEDENT */
  return g_steal_pointer(&block);
}

/* One statement into block; returns block, or NULL on error. */
static TsLangNode *
statement(Parser *p, TsLangNode *block)
{
  const TsLangTok *t = peek(p);
  if (t->kind == TS_LT_INDENT)
    return fail_at(p, t, TS_LANG_ERROR_INDENT, "unexpected indentation");
  TsLangNode *s = NULL;
  if (is_kw(p, "if"))
    s = if_stmt(p);
  else if (is_kw(p, "for"))
    s = for_stmt(p);
  else if (is_kw(p, "elif") || is_kw(p, "else"))
    return fail_at(p, t, TS_LANG_ERROR_SYNTAX, "'%s' without an 'if' before it", t->text);
  else if (is_op(p, "@") || is_kw(p, "def"))
    return fail_at(p, t, TS_LANG_ERROR_SYNTAX,
                   "kernels are defined at the top level of the file, not inside another "
                   "kernel");
  else
    return simple_line(p, block) ? block : NULL;
  return s ? with(block, s) : NULL;
}

/* ---- kernels ---- */

static TsLangNode *
param(Parser *p)
{
  const TsLangTok *t = peek(p);
  if (is_op(p, "*")) {
    next(p);
    return node(TS_LANG_STAR, t, NULL);
  }
  if (t->kind != TS_LT_NAME)
    return expected(p, "a parameter name");
  next(p);
  g_autoptr(TsLangNode) n = node(TS_LANG_PARAM, t, t->text);
  TsLangNode *ann = NULL, *def = NULL;
  if (is_op(p, ":")) {
    next(p);
    /* `mut T`: a parameter the kernel writes (only when a type follows the word). */
    const TsLangTok *m = peek(p), *after = &g_array_index(p->toks, TsLangTok, p->pos + 1);
    if (m->kind == TS_LT_NAME && strcmp(m->text, "mut") == 0 && after->kind == TS_LT_NAME) {
      next(p);
      n->flags |= TS_LANG_MUT;
    }
    ann = expr(p);
    if (ann == NULL)
      return NULL;
  }
  with(n, ann);
  if (is_op(p, "=")) {
    next(p);
    def = expr(p);
    if (def == NULL)
      return NULL;
  }
  return with(g_steal_pointer(&n), def);
}

static TsLangNode *
kernel_def(Parser *p)
{
  const TsLangTok *first = peek(p);
  g_autoptr(TsLangNode) decorators = node(TS_LANG_DECORATORS, first, NULL);
  while (is_op(p, "@")) {
    next(p);
    TsLangNode *d = expr(p);
    if (d == NULL)
      return NULL;
    with(decorators, d);
    if (peek(p)->kind != TS_LT_NEWLINE)
      return expected(p, "the end of the decorator's line");
    next(p);
  }
  if (!is_kw(p, "def"))
    return expected(p, decorators->kids->len ? "'def' after the decorators"
                                              : "a kernel: '@' decorators or 'def'");
  next(p);
  const TsLangTok *name = peek(p);
  if (name->kind != TS_LT_NAME)
    return expected(p, "the kernel's name");
  next(p);
  g_autoptr(TsLangNode) def = node(TS_LANG_DEF, first, name->text);
  if (!expect_op(p, "("))
    return NULL;
  g_autoptr(TsLangNode) params = node(TS_LANG_PARAMS, name, NULL);
  while (!is_op(p, ")")) {
    TsLangNode *prm = param(p);
    if (prm == NULL)
      return NULL;
    for (guint i = 0; prm->str && i < params->kids->len; i++) {
      const TsLangNode *other = g_ptr_array_index(params->kids, i);
      if (g_strcmp0(other->str, prm->str) == 0) {
        fail_at(p, &(TsLangTok){.line = prm->line, .col = prm->col}, TS_LANG_ERROR_SYNTAX,
                "parameter '%s' is named twice", prm->str);
        ts_lang_node_free(prm);
        return NULL;
      }
    }
    with(params, prm);
    if (!is_op(p, ","))
      break;
    next(p);
  }
  if (!expect_op(p, ")"))
    return NULL;
  TsLangNode *returns = NULL;
  if (is_op(p, "->")) {
    next(p);
    returns = expr(p);
    if (returns == NULL)
      return NULL;
  }
  with(with(with(def, g_steal_pointer(&decorators)), g_steal_pointer(&params)), returns);
  if (!expect_op(p, ":"))
    return NULL;
  TsLangNode *body = suite(p);
  if (body == NULL)
    return NULL;
  return with(g_steal_pointer(&def), body);
}

TsLangNode *
ts_lang_parse(const char *src, const char *filename, GError **error)
{
  g_return_val_if_fail(src != NULL, NULL);
  GArray *toks = ts__lang_lex(src, filename, error);
  if (toks == NULL)
    return NULL;
  Parser p = {.src = src, .file = filename, .toks = toks, .error = error};
  g_autoptr(TsLangNode) module = node(TS_LANG_MODULE, peek(&p), NULL);
  module->line = module->col = 1;
  gboolean ok = TRUE;
  while (ok && peek(&p)->kind != TS_LT_EOF) {
    if (peek(&p)->kind == TS_LT_INDENT) {
      fail_at(&p, peek(&p), TS_LANG_ERROR_INDENT, "unexpected indentation");
      ok = FALSE;
      break;
    }
    TsLangNode *k = kernel_def(&p);
    ok = k != NULL;
    if (ok)
      with(module, k);
  }
  ts__lang_tokens_free(toks);
  return ok ? g_steal_pointer(&module) : NULL;
}
