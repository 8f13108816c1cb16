/* ts-sched-parse.c — the schedule language above expressions: statements and inheritance
 * (`base = ...; base.with_warps(4)`), the chained methods of the catalog, dict(...), value
 * lists and .where(...). Produces a TsSchedSpace; every error carries a caret. */
#include "ts-sched-private.h"
#include "ts-suggest.h"

#include <string.h>

typedef struct {
  TsParser p;
  GHashTable *vars; /* interned name -> TsSchedSpace* (owned) */
} Ctx;

typedef struct {
  const TsTok *kw; /* keyword, or NULL when positional */
  const TsTok *at; /* first token of the value */
  GArray *values;  /* TsSchedValue */
} Arg;

static void
arg_free(gpointer data)
{
  Arg *a = data;
  if (a->values)
    g_array_unref(a->values);
  g_free(a);
}

static void fail(Ctx *c, const TsTok *t, TsSchedError code, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);

static void
fail(Ctx *c, const TsTok *t, TsSchedError code, GError **error, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  ts__sched_error_at(error, code, c->p.src, t->line, t->col, "%s", msg);
}

static gboolean
expect(Ctx *c, TsTokKind kind, const char *what, GError **error)
{
  const TsTok *t = ts__sched_peek(&c->p, 0);
  if (t->kind == kind) {
    ts__sched_next(&c->p);
    return TRUE;
  }
  char buf[64];
  fail(c, t, TS_SCHED_ERROR_PARSE, error, "expected %s, found %s", what,
       ts__sched_tok_describe(t, buf, sizeof buf));
  return FALSE;
}

/* A closer was wanted after an element: name the opener so unbalanced input is obvious. */
static void
fail_unbalanced(Ctx *c, const TsTok *open, GError **error)
{
  const TsTok *t = ts__sched_peek(&c->p, 0);
  char buf[64];
  gboolean brack = open->kind == TS_TOK_LBRACK;
  fail(c, t, TS_SCHED_ERROR_PARSE, error,
       "unbalanced %s: expected ',' or '%c' to close the '%c' at %d:%d, found %s",
       brack ? "brackets" : "parentheses", brack ? ']' : ')', brack ? '[' : '(', open->line,
       open->col, ts__sched_tok_describe(t, buf, sizeof buf));
}

static gboolean
parse_value(Ctx *c, TsSchedValue *v, GError **error)
{
  const TsTok *t = ts__sched_peek(&c->p, 0);
  if (t->kind == TS_TOK_STR) {
    ts__sched_next(&c->p);
    *v = (TsSchedValue){.kind = TS_SCHED_STR, .s = t->text};
    return TRUE;
  }
  gboolean neg = t->kind == TS_TOK_MINUS;
  const TsTok *num = ts__sched_peek(&c->p, neg ? 1 : 0);
  if (num->kind != TS_TOK_INT) {
    char buf[64];
    fail(c, num, TS_SCHED_ERROR_PARSE, error, "expected an integer or a string, found %s",
         ts__sched_tok_describe(num, buf, sizeof buf));
    return FALSE;
  }
  if (num->mag > (guint64)G_MAXINT64 + (neg ? 1 : 0)) {
    fail(c, num, TS_SCHED_ERROR_PARSE, error, "number too large");
    return FALSE;
  }
  c->p.pos += neg ? 2 : 1;
  *v = (TsSchedValue){.kind = TS_SCHED_INT};
  v->i = neg ? (num->mag == (guint64)G_MAXINT64 + 1 ? G_MININT64 : -(gint64)num->mag)
             : (gint64)num->mag;
  return TRUE;
}

static gboolean
push_value(Ctx *c, GArray *values, const TsTok *at, GError **error)
{
  TsSchedValue v;
  if (!parse_value(c, &v, error))
    return FALSE;
  for (guint i = 0; i < values->len; i++) {
    TsSchedValue *w = &g_array_index(values, TsSchedValue, i);
    if (w->kind != v.kind) {
      fail(c, at, TS_SCHED_ERROR_TYPE, error, "list mixes integers and strings");
      return FALSE;
    }
    if (ts__sched_value_equal(*w, v)) {
      g_autofree char *text = ts__sched_value_to_string(v);
      fail(c, at, TS_SCHED_ERROR_PARSE, error, "duplicate value %s in list", text);
      return FALSE;
    }
  }
  g_array_append_val(values, v);
  return TRUE;
}

/* `[v, ...]` or a scalar v, which means [v]. */
static GArray *
parse_values(Ctx *c, GError **error)
{
  g_autoptr(GArray) values = g_array_new(FALSE, FALSE, sizeof(TsSchedValue));
  const TsTok *t = ts__sched_peek(&c->p, 0);
  if (t->kind != TS_TOK_LBRACK)
    return push_value(c, values, t, error) ? g_steal_pointer(&values) : NULL;
  const TsTok *open = ts__sched_next(&c->p);
  if (ts__sched_peek(&c->p, 0)->kind == TS_TOK_RBRACK) {
    fail(c, open, TS_SCHED_ERROR_PARSE, error, "empty list: a knob needs at least one value");
    return NULL;
  }
  for (;;) {
    if (!push_value(c, values, ts__sched_peek(&c->p, 0), error))
      return NULL;
    t = ts__sched_peek(&c->p, 0);
    if (t->kind == TS_TOK_COMMA) {
      ts__sched_next(&c->p);
      t = ts__sched_peek(&c->p, 0);
    } else if (t->kind != TS_TOK_RBRACK) {
      fail_unbalanced(c, open, error);
      return NULL;
    }
    if (t->kind == TS_TOK_RBRACK) {
      ts__sched_next(&c->p);
      return g_steal_pointer(&values);
    }
  }
}

/* Arguments after '(' up to and including ')'. */
static GPtrArray *
parse_args(Ctx *c, const TsTok *open, GError **error)
{
  g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(arg_free);
  if (ts__sched_peek(&c->p, 0)->kind == TS_TOK_RPAREN) {
    ts__sched_next(&c->p);
    return g_steal_pointer(&args);
  }
  for (;;) {
    Arg *a = g_new0(Arg, 1);
    g_ptr_array_add(args, a);
    const TsTok *t = ts__sched_peek(&c->p, 0);
    if (t->kind == TS_TOK_IDENT && ts__sched_peek(&c->p, 1)->kind == TS_TOK_ASSIGN) {
      a->kw = t;
      c->p.pos += 2;
    }
    a->at = ts__sched_peek(&c->p, 0);
    if (!(a->values = parse_values(c, error)))
      return NULL;
    t = ts__sched_peek(&c->p, 0);
    if (t->kind != TS_TOK_COMMA && t->kind != TS_TOK_RPAREN) {
      fail_unbalanced(c, open, error);
      return NULL;
    }
    ts__sched_next(&c->p);
    if (t->kind == TS_TOK_RPAREN)
      return g_steal_pointer(&args);
    if (ts__sched_peek(&c->p, 0)->kind == TS_TOK_RPAREN) { /* trailing comma */
      ts__sched_next(&c->p);
      return g_steal_pointer(&args);
    }
  }
}

static gboolean
apply_method(Ctx *c, TsSchedSpace *space, const TsSchedMethod *m, const TsTok *name,
             GPtrArray *args, GError **error)
{
  if (args->len == 0) {
    fail(c, name, TS_SCHED_ERROR_PARSE, error, "%s() needs a value", name->text);
    return FALSE;
  }
  if (args->len > m->n) {
    Arg *a = g_ptr_array_index(args, m->n);
    fail(c, a->kw ? a->kw : a->at, TS_SCHED_ERROR_PARSE, error, "%s() takes at most %u argument%s",
         name->text, m->n, m->n == 1 ? "" : "s");
    return FALSE;
  }
  GArray *slot[3] = {NULL, NULL, NULL};
  guint order[3];
  guint positional = 0;
  gboolean seen_kw = FALSE;
  for (guint i = 0; i < args->len; i++) {
    Arg *a = g_ptr_array_index(args, i);
    guint k;
    if (!a->kw) {
      if (seen_kw) {
        fail(c, a->at, TS_SCHED_ERROR_PARSE, error, "positional argument after a keyword argument");
        return FALSE;
      }
      k = positional++; /* < m->n: longer lists were refused above */
    } else {
      seen_kw = TRUE;
      for (k = 0; k < m->n; k++)
        if (m->arg[k] && strcmp(m->arg[k], a->kw->text) == 0)
          break;
      if (k == m->n) {
        GString *known = g_string_new(NULL);
        for (guint j = 0; j < m->n && m->arg[j]; j++)
          g_string_append_printf(known, "%s%s", j ? (j + 1 == m->n ? " or " : ", ") : "",
                                 m->arg[j]);
        fail(c, a->kw, TS_SCHED_ERROR_UNKNOWN_KNOB, error, "unknown argument '%s' of %s()%s%s",
             a->kw->text, m->method, known->len ? "; expected " : " (it takes one value list)",
             known->str);
        g_string_free(known, TRUE);
        return FALSE;
      }
      if (slot[k]) {
        fail(c, a->kw, TS_SCHED_ERROR_PARSE, error, "argument '%s' given twice", a->kw->text);
        return FALSE;
      }
    }
    slot[k] = a->values;
    order[i] = k;
  }
  /* Knobs are added in the order written: that order is the index order. */
  for (guint i = 0; i < args->len; i++)
    ts__sched_space_set_knob_array(space, m->knob[order[i]], g_array_ref(slot[order[i]]));
  return TRUE;
}

static gboolean
apply_dict(Ctx *c, TsSchedSpace *space, GPtrArray *args, GError **error)
{
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  for (guint i = 0; i < args->len; i++) {
    Arg *a = g_ptr_array_index(args, i);
    if (!a->kw) {
      fail(c, a->at, TS_SCHED_ERROR_PARSE, error, "dict() takes name=values arguments");
      return FALSE;
    }
    if (!g_hash_table_add(seen, (gpointer)a->kw->text)) {
      fail(c, a->kw, TS_SCHED_ERROR_PARSE, error, "duplicate key '%s' in dict", a->kw->text);
      return FALSE;
    }
  }
  for (guint i = 0; i < args->len; i++) {
    Arg *a = g_ptr_array_index(args, i);
    ts__sched_space_set_knob_array(space, a->kw->text, g_array_ref(a->values));
  }
  return TRUE;
}

static gboolean
apply_where(Ctx *c, TsSchedSpace *space, const TsTok *open, GError **error)
{
  for (;;) {
    TsExpr *e = ts__sched_expr_parse(&c->p, error);
    if (!e)
      return FALSE;
    ts__sched_space_add_expr(space, e);
    const TsTok *t = ts__sched_peek(&c->p, 0);
    if (t->kind == TS_TOK_COMMA) {
      ts__sched_next(&c->p);
      if (ts__sched_peek(&c->p, 0)->kind != TS_TOK_RPAREN)
        continue;
      t = ts__sched_peek(&c->p, 0);
    }
    if (t->kind != TS_TOK_RPAREN) {
      fail_unbalanced(c, open, error);
      return FALSE;
    }
    ts__sched_next(&c->p);
    return TRUE;
  }
}

static void
fail_unknown_knob(Ctx *c, const TsTok *name, GError **error)
{
  enum { MAX_METHODS = 32 };
  const char *cand[2 * MAX_METHODS + 1];
  char with[MAX_METHODS][32];
  guint n = 0;
  g_assert(ts__sched_n_methods <= MAX_METHODS);
  for (guint m = 0; m < ts__sched_n_methods; m++) {
    cand[n++] = ts__sched_methods[m].method;
    g_snprintf(with[m], sizeof with[m], "with_%s", ts__sched_methods[m].method);
    cand[n++] = with[m];
  }
  cand[n++] = "where";
  const char *best = ts__suggest(name->text, cand, n);
  if (best)
    fail(c, name, TS_SCHED_ERROR_UNKNOWN_KNOB, error, "unknown knob '%s'; did you mean '%s'?",
         name->text, best);
  else {
    g_autoptr(GString) known = g_string_new(NULL);
    for (guint m = 0; m < ts__sched_n_methods; m++)
      g_string_append_printf(known, "%s, ", ts__sched_methods[m].method);
    fail(c, name, TS_SCHED_ERROR_UNKNOWN_KNOB, error,
         "unknown knob '%s' (known: %swhere and their with_ forms)", name->text, known->str);
  }
}

/* name '(' args ')' applied to space; the current token is the name. */
static gboolean
apply_call(Ctx *c, TsSchedSpace *space, GError **error)
{
  const TsTok *name = ts__sched_peek(&c->p, 0);
  if (name->kind != TS_TOK_IDENT)
    return expect(c, TS_TOK_IDENT, "a method name", error);
  const char *base = g_str_has_prefix(name->text, "with_") ? name->text + 5 : name->text;
  int m = ts__sched_method_find(base);
  gboolean where = strcmp(name->text, "where") == 0;
  if (m < 0 && !where) {
    fail_unknown_knob(c, name, error);
    return FALSE;
  }
  ts__sched_next(&c->p);
  const TsTok *open = ts__sched_peek(&c->p, 0);
  if (!expect(c, TS_TOK_LPAREN, "'('", error))
    return FALSE;
  if (where)
    return apply_where(c, space, open, error);
  g_autoptr(GPtrArray) args = parse_args(c, open, error);
  return args && apply_method(c, space, &ts__sched_methods[m], name, args, error);
}

static TsSchedSpace *
parse_chain(Ctx *c, GError **error)
{
  const TsTok *t = ts__sched_peek(&c->p, 0);
  g_autoptr(TsSchedSpace) space = NULL;
  if (t->kind == TS_TOK_IDENT && ts__sched_peek(&c->p, 1)->kind == TS_TOK_LPAREN) {
    space = ts__sched_space_new();
    if (strcmp(t->text, "dict") == 0) {
      ts__sched_next(&c->p);
      const TsTok *open = ts__sched_next(&c->p);
      g_autoptr(GPtrArray) args = parse_args(c, open, error);
      if (!args || !apply_dict(c, space, args, error))
        return NULL;
    } else if (!apply_call(c, space, error)) {
      return NULL;
    }
  } else if (t->kind == TS_TOK_IDENT) {
    TsSchedSpace *var = g_hash_table_lookup(c->vars, t->text);
    if (!var) {
      g_autofree const char **names = (const char **)g_hash_table_get_keys_as_array(c->vars, NULL);
      const char *best = ts__suggest(t->text, names, g_hash_table_size(c->vars));
      fail(c, t, TS_SCHED_ERROR_PARSE, error, "unknown schedule '%s'%s%s%s", t->text,
           best ? "; did you mean '" : "", best ? best : "", best ? "'?" : "");
      return NULL;
    }
    ts__sched_next(&c->p);
    space = ts_sched_space_copy(var);
  } else {
    char buf[64];
    fail(c, t, TS_SCHED_ERROR_PARSE, error,
         "expected a schedule (block(...), dict(...) or a name), found %s",
         ts__sched_tok_describe(t, buf, sizeof buf));
    return NULL;
  }
  while (ts__sched_peek(&c->p, 0)->kind == TS_TOK_DOT) {
    ts__sched_next(&c->p);
    if (!apply_call(c, space, error))
      return NULL;
  }
  return g_steal_pointer(&space);
}

static TsSchedSpace *
parse_program(Ctx *c, GError **error)
{
  g_autoptr(TsSchedSpace) result = NULL;
  for (;;) {
    while (ts__sched_peek(&c->p, 0)->kind == TS_TOK_SEMI)
      ts__sched_next(&c->p);
    const TsTok *t = ts__sched_peek(&c->p, 0);
    if (t->kind == TS_TOK_EOF)
      break;
    const char *name = NULL;
    if (t->kind == TS_TOK_IDENT && ts__sched_peek(&c->p, 1)->kind == TS_TOK_ASSIGN) {
      name = t->text;
      c->p.pos += 2;
    }
    g_autoptr(TsSchedSpace) space = parse_chain(c, error);
    if (!space)
      return NULL;
    t = ts__sched_peek(&c->p, 0);
    if (t->kind != TS_TOK_EOF && t->kind != TS_TOK_SEMI && !t->nl_before) {
      char buf[64];
      if (t->kind == TS_TOK_RPAREN || t->kind == TS_TOK_RBRACK)
        fail(c, t, TS_SCHED_ERROR_PARSE, error, "unbalanced %s: %s has no opening match",
             t->kind == TS_TOK_RPAREN ? "parentheses" : "brackets",
             ts__sched_tok_describe(t, buf, sizeof buf));
      else
        fail(c, t, TS_SCHED_ERROR_PARSE, error,
             "trailing garbage: unexpected %s after the schedule (statements are separated by "
             "newlines or ';')",
             ts__sched_tok_describe(t, buf, sizeof buf));
      return NULL;
    }
    if (name)
      g_hash_table_replace(c->vars, (gpointer)name, ts_sched_space_copy(space));
    g_clear_pointer(&result, ts_sched_space_free);
    result = g_steal_pointer(&space);
  }
  if (!result) {
    const TsTok *t = ts__sched_peek(&c->p, 0);
    fail(c, t, TS_SCHED_ERROR_PARSE, error, "empty schedule");
    return NULL;
  }
  /* Types are checked against the final knobs: a .where() may precede the knob it reads. */
  for (guint i = 0; i < result->constraints->len; i++)
    if (!ts__sched_expr_check(g_ptr_array_index(result->constraints, i), result, c->p.src, error))
      return NULL;
  return g_steal_pointer(&result);
}

TsSchedSpace *
ts__sched_parse_program(const char *text, GError **error)
{
  Ctx c = {0};
  if (!ts__sched_lex(&c.p, text, error)) {
    ts__sched_parser_clear(&c.p);
    return NULL;
  }
  c.vars = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)ts_sched_space_free);
  TsSchedSpace *space = parse_program(&c, error);
  g_hash_table_unref(c.vars);
  ts__sched_parser_clear(&c.p);
  return space;
}
