/* ts-ir-parse.c — parsers for the Graph IR's text forms: dtype policies ("bf16 @accum(f32)"),
 * tensor types (Tensor["M","K", bf16 @accum(f32)]) and shapes ("M=1024,N=1024,K=1024").
 *
 * The input is tokenized up front so every error can name the token it is about and its
 * 1-based byte column; messages are one line a user can act on.
 */
#include "ts-ir.h"
#include "ts-ir-private.h"
#include "ts-suggest.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

typedef enum { TOK_END, TOK_IDENT, TOK_STRING, TOK_NUMBER, TOK_PUNCT } TokKind;

typedef struct {
  TokKind kind;
  gsize start; /* byte offset of the token's first character */
  gsize len;
} Token;

typedef struct {
  const char *text;
  const char *what; /* message prefix: "tensor type", "dtype policy", "shape" */
  GArray *toks;     /* of Token, ending with TOK_END */
  guint pos;
  GError **error;
} Parser;

static void G_GNUC_PRINTF(3, 4) fail(Parser *p, TsIrError code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(p->error, TS_IR_ERROR, code, "%s: %s", p->what, msg);
}

static const Token *
peek(Parser *p)
{
  return &g_array_index(p->toks, Token, p->pos);
}

static const Token *
peek2(Parser *p)
{
  guint i = MIN(p->pos + 1, p->toks->len - 1);
  return &g_array_index(p->toks, Token, i);
}

static const Token *
advance(Parser *p)
{
  const Token *t = peek(p);
  if (t->kind != TOK_END)
    p->pos++;
  return t;
}

static guint
column(const Token *t)
{
  return (guint)t->start + 1;
}

static char *
tok_text(Parser *p, const Token *t)
{
  return g_strndup(p->text + t->start, t->len);
}

/* "'xyz' at column 7" or "end of input at column 12", for "found ..." messages. */
static char *
describe(Parser *p, const Token *t)
{
  if (t->kind == TOK_END)
    return g_strdup_printf("end of input at column %u", column(t));
  g_autofree char *s = tok_text(p, t);
  return g_strdup_printf("'%s' at column %u", s, column(t));
}

static gboolean
is_punct(const Token *t, const char *text, char c)
{
  return t->kind == TOK_PUNCT && text[t->start] == c;
}

static gboolean
tokenize(Parser *p)
{
  const char *s = p->text;
  gsize i = 0;
  p->toks = g_array_new(FALSE, TRUE, sizeof(Token));
  for (;;) {
    while (g_ascii_isspace(s[i]))
      i++;
    Token t = {TOK_END, i, 0};
    if (s[i] == '\0') {
      g_array_append_val(p->toks, t);
      return TRUE;
    }
    gsize j = i;
    if (g_ascii_isalpha(s[i]) || s[i] == '_') {
      /* '.' is part of an identifier so that the seeds' ts.Tensor and ts.bf16 are one token. */
      while (g_ascii_isalnum(s[j]) || s[j] == '_' || s[j] == '.')
        j++;
      t.kind = TOK_IDENT;
    } else if (g_ascii_isdigit(s[i]) ||
               ((s[i] == '-' || s[i] == '+') && g_ascii_isdigit(s[i + 1]))) {
      j++;
      while (g_ascii_isdigit(s[j]) || s[j] == '.')
        j++;
      if ((s[j] == 'e' || s[j] == 'E') &&
          (g_ascii_isdigit(s[j + 1]) ||
           ((s[j + 1] == '-' || s[j + 1] == '+') && g_ascii_isdigit(s[j + 2]))))
        for (j += 2; g_ascii_isdigit(s[j]); j++)
          ;
      t.kind = TOK_NUMBER;
    } else if (s[i] == '"') {
      for (j = i + 1; s[j] != '"'; j++) {
        if (s[j] == '\0') {
          t.len = j - i;
          g_autofree char *d = tok_text(p, &t);
          fail(p, TS_IR_ERROR_PARSE, "unterminated string '%s' at column %u; add the closing '\"'",
               d, column(&t));
          return FALSE;
        }
      }
      j++;
      t.kind = TOK_STRING;
    } else {
      j++;
      t.kind = TOK_PUNCT;
    }
    t.len = j - i;
    g_array_append_val(p->toks, t);
    i = j;
  }
}

static void
parser_init(Parser *p, const char *text, const char *what, GError **error)
{
  *p = (Parser){text, what, NULL, 0, error};
}

static void
parser_clear(Parser *p)
{
  if (p->toks != NULL)
    g_array_unref(p->toks);
}

/* Identifier text without the seeds' "ts." module prefix. */
static char *
strip_module(Parser *p, const Token *t)
{
  g_autofree char *s = tok_text(p, t);
  return g_strdup(g_str_has_prefix(s, "ts.") ? s + 3 : s);
}

static gboolean
parse_dtype(Parser *p, TsDtype *out)
{
  const Token *t = peek(p);
  if (t->kind != TOK_IDENT) {
    g_autofree char *d = describe(p, t);
    fail(p, TS_IR_ERROR_PARSE, "expected a dtype, found %s (known: %s)", d, ts__ir_known_dtypes());
    return FALSE;
  }
  g_autofree char *name = strip_module(p, t);
  TsDtype dt = ts_dtype_from_name(name);
  if (dt == TS_DTYPE_INVALID) {
    static const char *const names[] = {"f64",      "f32",      "tf32",  "bf16", "f16",
                                        "fp8_e4m3", "fp8_e5m2", "int32", "int8", "int4",
                                        "fp64",     "fp32",     "fp16"};
    const char *hint = ts__suggest(name, names, G_N_ELEMENTS(names));
    g_autofree char *raw = tok_text(p, t);
    g_autofree char *dym = hint ? g_strdup_printf("; did you mean '%s'?", hint) : g_strdup("");
    fail(p, TS_IR_ERROR_UNKNOWN_DTYPE, "unknown dtype '%s' at column %u (known: %s)%s", raw,
         column(t), ts__ir_known_dtypes(), dym);
    return FALSE;
  }
  advance(p);
  *out = dt;
  return TRUE;
}

static gboolean
expect_punct(Parser *p, char c, const char *why)
{
  const Token *t = peek(p);
  if (is_punct(t, p->text, c)) {
    advance(p);
    return TRUE;
  }
  g_autofree char *d = describe(p, t);
  fail(p, TS_IR_ERROR_PARSE, "expected '%c' %s, found %s", c, why, d);
  return FALSE;
}

enum { POL_ACCUM, POL_LOSS_SCALE, POL_STOCHASTIC_ROUND, POL_SATURATE, N_POLICIES };
static const char *const policy_names[N_POLICIES] = {"accum", "loss_scale", "stochastic_round",
                                                     "saturate"};

static gboolean
parse_policy_arg(Parser *p, guint which, const Token *name_tok, TsDtypePolicy *out)
{
  gboolean has_paren = is_punct(peek(p), p->text, '(');
  gboolean wants_arg = which == POL_ACCUM || which == POL_LOSS_SCALE;
  if (has_paren != wants_arg) {
    if (wants_arg)
      fail(p, TS_IR_ERROR_PARSE, "policy '@%s' at column %u needs an argument, e.g. %s",
           policy_names[which], column(name_tok) - 1,
           which == POL_ACCUM ? "@accum(f32)" : "@loss_scale(128.0)");
    else
      fail(p, TS_IR_ERROR_PARSE, "policy '@%s' at column %u takes no argument", policy_names[which],
           column(name_tok) - 1);
    return FALSE;
  }
  if (!wants_arg)
    return TRUE;
  advance(p);
  if (which == POL_ACCUM) {
    if (!parse_dtype(p, &out->accum))
      return FALSE;
  } else {
    const Token *t = peek(p);
    g_autofree char *d = describe(p, t);
    if (t->kind != TOK_NUMBER) {
      fail(p, TS_IR_ERROR_PARSE, "@loss_scale needs a number, found %s", d);
      return FALSE;
    }
    g_autofree char *s = tok_text(p, t);
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (end == NULL || *end != '\0' || !isfinite(v) || v <= 0.0) {
      fail(p, TS_IR_ERROR_PARSE, "loss scale %s must be a finite number > 0", d);
      return FALSE;
    }
    out->loss_scale = v;
    advance(p);
  }
  g_autofree char *why = g_strdup_printf("to close '@%s('", policy_names[which]);
  return expect_punct(p, ')', why);
}

/* dtype then policies; stops at the first token that is not '@' (the caller checks it). */
static gboolean
parse_policy(Parser *p, TsDtypePolicy *out)
{
  *out = (TsDtypePolicy){0};
  guint seen_at[N_POLICIES] = {0};
  if (!parse_dtype(p, &out->storage))
    return FALSE;
  while (is_punct(peek(p), p->text, '@')) {
    const Token *at = advance(p);
    const Token *name = peek(p);
    if (name->kind != TOK_IDENT || name->start != at->start + 1) {
      g_autofree char *d = describe(p, name);
      fail(p, TS_IR_ERROR_PARSE, "expected a policy name right after '@' at column %u, found %s",
           column(at), d);
      return FALSE;
    }
    g_autofree char *s = tok_text(p, name);
    guint which = N_POLICIES;
    for (guint i = 0; i < N_POLICIES; i++)
      if (g_str_equal(s, policy_names[i]))
        which = i;
    if (which == N_POLICIES) {
      const char *hint = ts__suggest(s, policy_names, N_POLICIES);
      if (hint != NULL)
        fail(p, TS_IR_ERROR_UNKNOWN_POLICY,
             "unknown policy '@%s' at column %u; did you mean '@%s'?", s, column(at), hint);
      else
        fail(p, TS_IR_ERROR_UNKNOWN_POLICY,
             "unknown policy '@%s' at column %u (known: @accum, @loss_scale, @stochastic_round, "
             "@saturate)",
             s, column(at));
      return FALSE;
    }
    if (seen_at[which] != 0) {
      fail(p, TS_IR_ERROR_PARSE, "repeated policy '@%s' at column %u (first given at column %u)", s,
           column(at), seen_at[which]);
      return FALSE;
    }
    seen_at[which] = column(at);
    advance(p);
    if (!parse_policy_arg(p, which, name, out))
      return FALSE;
    if (which == POL_STOCHASTIC_ROUND)
      out->stochastic_round = TRUE;
    if (which == POL_SATURATE)
      out->saturate = TRUE;
  }
  return TRUE;
}

static gboolean
expect_end(Parser *p, const char *after)
{
  const Token *t = peek(p);
  if (t->kind == TOK_END)
    return TRUE;
  g_autofree char *d = describe(p, t);
  if (is_punct(t, p->text, ']'))
    fail(p, TS_IR_ERROR_PARSE, "unbalanced brackets: unexpected ']' at column %u %s", column(t),
         after);
  else
    fail(p, TS_IR_ERROR_PARSE, "unexpected %s %s", d, after);
  return FALSE;
}

gboolean
ts_dtype_policy_parse(const char *text, TsDtypePolicy *out, GError **error)
{
  g_return_val_if_fail(text != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  Parser p;
  TsDtypePolicy pol;
  parser_init(&p, text, "dtype policy", error);
  gboolean ok = tokenize(&p);
  if (ok && peek(&p)->kind == TOK_END) {
    fail(&p, TS_IR_ERROR_PARSE, "empty input; expected a dtype such as 'bf16 @accum(f32)'");
    ok = FALSE;
  }
  ok = ok && parse_policy(&p, &pol) && expect_end(&p, "after the dtype policy");
  parser_clear(&p);
  if (ok && out != NULL)
    *out = pol;
  return ok;
}

/* One dim entry of Tensor[...]: a quoted name, an integer literal or a bare identifier. */
static gboolean
parse_dim(Parser *p, TsDim *dim)
{
  const Token *t = peek(p);
  g_autofree char *d = describe(p, t);
  if (t->kind == TOK_NUMBER) {
    gint64 size;
    const char *s = p->text + t->start;
    gboolean digits = strspn(s, "0123456789") >= t->len;
    if (digits && !ts__ir_parse_size(s, t->len, &size)) {
      gboolean zero = strspn(s, "0") >= t->len;
      fail(p, TS_IR_ERROR_SHAPE, "dim size %s %s", d,
           zero ? "must be > 0" : "does not fit in int64");
      return FALSE;
    }
    if (!digits) {
      fail(p, s[0] == '-' ? TS_IR_ERROR_SHAPE : TS_IR_ERROR_PARSE, "dim size %s must be %s", d,
           s[0] == '-' ? "> 0" : "an integer");
      return FALSE;
    }
    dim->name = NULL;
    dim->size = size;
  } else {
    g_autofree char *raw =
        t->kind == TOK_STRING ? g_strndup(p->text + t->start + 1, t->len - 2) : tok_text(p, t);
    dim->name = ts__ir_dim_canonical(raw);
    dim->size = -1;
    if (dim->name == NULL) {
      fail(p, TS_IR_ERROR_PARSE, "bad dim name %s; use names like \"M\" or products like \"B*H\"",
           d);
      return FALSE;
    }
  }
  advance(p);
  return TRUE;
}

TsTensorType *
ts_tensor_type_parse(const char *text, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  Parser p;
  parser_init(&p, text, "tensor type", error);
  g_autoptr(TsTensorType) type = g_new0(TsTensorType, 1);
  gboolean ok = tokenize(&p);
  const Token *t = ok ? peek(&p) : NULL;
  g_autofree char *head = t != NULL && t->kind == TOK_IDENT ? strip_module(&p, t) : NULL;

  if (!ok) {
  } else if (t->kind == TOK_END) {
    fail(&p, TS_IR_ERROR_PARSE, "empty input; expected Tensor[dims..., dtype]");
    ok = FALSE;
  } else if (head == NULL || !g_str_equal(head, "Tensor")) {
    static const char *const kw[] = {"Tensor"};
    g_autofree char *d = describe(&p, t);
    fail(&p, TS_IR_ERROR_PARSE, "expected 'Tensor[', found %s%s", d,
         head != NULL && ts__suggest(head, kw, 1) ? "; did you mean 'Tensor'?" : "");
    ok = FALSE;
  } else {
    advance(&p);
    ok = expect_punct(&p, '[', "after 'Tensor'");
  }
  const Token *open = ok ? &g_array_index(p.toks, Token, p.pos - 1) : NULL;

  /* Entries up to the dtype, which is the one not followed by ','. */
  while (ok) {
    t = peek(&p);
    const Token *next = peek2(&p);
    gboolean is_last_ident = t->kind == TOK_IDENT && !is_punct(next, p.text, ',');
    if (t->kind == TOK_END || is_punct(t, p.text, ']')) {
      if (t->kind == TOK_END)
        fail(&p, TS_IR_ERROR_PARSE,
             "unbalanced brackets: '[' at column %u is never closed (end of input at column %u)",
             column(open), column(t));
      else
        fail(&p, TS_IR_ERROR_PARSE,
             "missing dtype before ']' at column %u, e.g. Tensor[\"M\", f32]", column(t));
      ok = FALSE;
      break;
    }
    if (is_last_ident) {
      ok = parse_policy(&p, &type->dtype);
      break;
    }
    if (t->kind == TOK_IDENT) {
      g_autofree char *s = strip_module(&p, t);
      if (ts_dtype_from_name(s) != TS_DTYPE_INVALID) {
        fail(&p, TS_IR_ERROR_PARSE, "dtype '%s' at column %u must be the last entry of Tensor[...]",
             s, column(t));
        ok = FALSE;
        break;
      }
    }
    if (type->rank == TS_MAX_RANK) {
      g_autofree char *d = describe(&p, t);
      fail(&p, TS_IR_ERROR_RANK, "too many dims: %s would be dim %d; rank is at most %d", d,
           TS_MAX_RANK + 1, TS_MAX_RANK);
      ok = FALSE;
      break;
    }
    if (t->kind != TOK_STRING && t->kind != TOK_NUMBER && t->kind != TOK_IDENT) {
      g_autofree char *d = describe(&p, t);
      fail(&p, TS_IR_ERROR_PARSE, "expected a dim (\"M\" or 1024) or a dtype, found %s", d);
      ok = FALSE;
      break;
    }
    ok = parse_dim(&p, &type->dims[type->rank]);
    if (ok)
      type->rank++;
    if (ok && is_punct(peek(&p), p.text, ']')) {
      fail(&p, TS_IR_ERROR_PARSE, "missing dtype before ']' at column %u, e.g. Tensor[\"M\", f32]",
           column(peek(&p)));
      ok = FALSE;
    }
    ok = ok && expect_punct(&p, ',', "after a dim; the dtype comes last");
  }

  if (ok) {
    t = peek(&p);
    if (t->kind == TOK_END) {
      fail(&p, TS_IR_ERROR_PARSE,
           "unbalanced brackets: '[' at column %u is never closed (end of input at column %u)",
           column(open), column(t));
      ok = FALSE;
    } else {
      ok = expect_punct(&p, ']', "to close the tensor type") &&
           expect_end(&p, "after the closing ']'");
    }
  }
  parser_clear(&p);
  return ok ? g_steal_pointer(&type) : NULL;
}

TsShape *
ts_shape_parse(const char *text, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  Parser p;
  parser_init(&p, text, "shape", error);
  g_autoptr(TsShape) shape = ts_shape_new();
  g_autoptr(GHashTable) columns = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  gboolean ok = tokenize(&p);

  /* The empty shape is valid: it is what a graph with only literal dims prints. */
  while (ok && peek(&p)->kind != TOK_END) {
    if (ts_shape_n_dims(shape) > 0 && !expect_punct(&p, ',', "between bindings")) {
      ok = FALSE;
      break;
    }
    const Token *name = peek(&p);
    g_autofree char *n = tok_text(&p, name);
    if (name->kind != TOK_IDENT || strchr(n, '.') != NULL) {
      g_autofree char *d = describe(&p, name);
      fail(&p, TS_IR_ERROR_PARSE, "expected a dim name (e.g. M=1024), found %s", d);
      ok = FALSE;
      break;
    }
    advance(&p);
    g_autofree char *why = g_strdup_printf("after '%s'", n);
    if (!expect_punct(&p, '=', why)) {
      ok = FALSE;
      break;
    }
    const Token *num = peek(&p);
    g_autofree char *d = describe(&p, num);
    gint64 size;
    if (num->kind != TOK_NUMBER) {
      fail(&p, TS_IR_ERROR_PARSE, "expected a size for '%s', found %s", n, d);
      ok = FALSE;
      break;
    }
    /* A literal that runs on into letters (0x40, 64k, 1e3) is one word to the user, not a
     * number followed by a name: report it whole. */
    gsize word = num->len;
    while (g_ascii_isalnum(p.text[num->start + word]) || p.text[num->start + word] == '_' ||
           p.text[num->start + word] == '.')
      word++;
    if (word > num->len) {
      fail(&p, TS_IR_ERROR_SHAPE, "size of '%s' '%.*s' at column %u must be a decimal integer > 0",
           n, (int)word, p.text + num->start, column(num));
      ok = FALSE;
      break;
    }
    if (!ts__ir_parse_size(p.text + num->start, num->len, &size)) {
      gboolean digits = strspn(p.text + num->start, "0123456789") >= num->len;
      gboolean zero = strspn(p.text + num->start, "0") >= num->len;
      fail(&p, TS_IR_ERROR_SHAPE, "size of '%s' %s %s", n, d,
           digits && !zero ? "does not fit in int64" : "must be an integer > 0");
      ok = FALSE;
      break;
    }
    gint64 old = ts_shape_get(shape, n);
    if (old >= 0 && old != size) {
      fail(&p, TS_IR_ERROR_SHAPE,
           "dim '%s' is bound to %" G_GINT64_FORMAT " at column %u but %" G_GINT64_FORMAT
           " at column %u",
           n, old, GPOINTER_TO_UINT(g_hash_table_lookup(columns, n)), size, column(name));
      ok = FALSE;
      break;
    }
    if (old < 0)
      g_hash_table_insert(columns, g_strdup(n), GUINT_TO_POINTER(column(name)));
    ok = ts_shape_bind(shape, n, size, NULL, error);
    advance(&p);
  }
  parser_clear(&p);
  return ok ? g_steal_pointer(&shape) : NULL;
}
