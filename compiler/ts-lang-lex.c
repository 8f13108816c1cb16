/* ts-lang-lex.c — tokens of the kernel language, with Python's layout rules: a logical line
 * ends at a newline outside brackets (or a backslash joins it to the next), indentation opens
 * and closes blocks (INDENT/DEDENT), comments run from `#` to the end of the line. */
#include "ts-lang-private.h"
#include "ts-suggest.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

G_DEFINE_QUARK(ts-lang-error-quark, ts_lang_error)

void
ts_lang_set_error(GError **error, gint code, const char *src, const char *filename, int line,
                  int col, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  ts_lang_set_error_valist(error, code, src, filename, line, col, fmt, ap);
  va_end(ap);
}

void
ts_lang_set_error_valist(GError **error, gint code, const char *src, const char *filename,
                         int line, int col, const char *fmt, va_list ap)
{
  if (error == NULL)
    return;
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  g_autoptr(GString) s = g_string_new(NULL);
  g_string_append_printf(s, "%s:%d:%d: %s", filename ? filename : "<kernel>", line, col, msg);
  ts__append_caret(s, src, line, col);
  g_set_error_literal(error, TS_LANG_ERROR, code, s->str);
}

void
ts__lang_tokens_free(GArray *toks)
{
  if (toks == NULL)
    return;
  for (guint i = 0; i < toks->len; i++)
    g_free(g_array_index(toks, TsLangTok, i).text);
  g_array_free(toks, TRUE);
}

typedef struct {
  const char *src, *file;
  const char *p, *line_start;
  int line;
  int depth; /* open brackets: newlines inside them do not end the line */
  GArray *open; /* TsLangTok (OP) of each open bracket, innermost last */
  GArray *toks;
  GArray *indents; /* int: the open blocks' columns, 0 at the bottom */
  GError **error;
} Lexer;

static int
col_of(const Lexer *lx, const char *at)
{
  return (int)(at - lx->line_start) + 1;
}

static void
push(Lexer *lx, TsLangTokKind kind, char *text, double num, const char *at)
{
  TsLangTok t = {kind, text, num, lx->line, col_of(lx, at)};
  g_array_append_val(lx->toks, t);
}

static gboolean
fail(Lexer *lx, const char *at, gint code, const char *msg)
{
  ts_lang_set_error(lx->error, code, lx->src, lx->file, lx->line, col_of(lx, at), "%s", msg);
  return FALSE;
}

/* At the start of a logical line: measures its indentation and opens or closes blocks. Blank
 * and comment-only lines do neither. */
static gboolean
indentation(Lexer *lx)
{
  for (;;) {
    const char *s = lx->p;
    int width = 0;
    gboolean tab = FALSE, space = FALSE;
    for (; *s == ' ' || *s == '\t'; s++) {
      tab = tab || *s == '\t';
      space = space || *s == ' ';
      width = *s == '\t' ? (width / 8 + 1) * 8 : width + 1;
    }
    if (*s == '#')
      while (*s && *s != '\n')
        s++;
    if (*s == '\n' || *s == '\r') { /* blank line */
      s += (*s == '\r' && s[1] == '\n') ? 2 : 1;
      lx->p = lx->line_start = s;
      lx->line++;
      continue;
    }
    lx->p = s;
    if (*s == '\0')
      return TRUE;
    if (tab && space)
      return fail(lx, s, TS_LANG_ERROR_INDENT,
                  "indentation mixes tabs and spaces (use one or the other)");
    const int top = g_array_index(lx->indents, int, lx->indents->len - 1);
    if (width > top) {
      g_array_append_val(lx->indents, width);
      push(lx, TS_LT_INDENT, NULL, 0, s);
    } else {
      while (width < g_array_index(lx->indents, int, lx->indents->len - 1)) {
        g_array_set_size(lx->indents, lx->indents->len - 1);
        push(lx, TS_LT_DEDENT, NULL, 0, s);
      }
      if (width != g_array_index(lx->indents, int, lx->indents->len - 1))
        return fail(lx, s, TS_LANG_ERROR_INDENT,
                    "this line's indentation matches no enclosing block");
    }
    return TRUE;
  }
}

static const char *const ops3[] = {"**=", "//=", ">>=", "<<=", NULL};
static const char *const ops2[] = {"**", "//", "==", "!=", "<=", ">=", "->", "+=", "-=",
                                   "*=", "/=", "%=", "@=", "&=", "|=", "^=", "<<", ">>", NULL};
static const char ops1[] = "+-*/%@<>=()[]{},:.;~&|^";

static gboolean
lex_number(Lexer *lx)
{
  const char *s = lx->p;
  char *end = NULL;
  if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    const guint64 v = g_ascii_strtoull(s, &end, 16);
    if (end == s + 2)
      return fail(lx, s, TS_LANG_ERROR_SYNTAX, "a hexadecimal number needs digits after 0x");
    push(lx, TS_LT_INT, g_strndup(s, (gsize)(end - s)), (double)v, s);
  } else {
    const char *q = s;
    while (g_ascii_isdigit(*q))
      q++;
    gboolean is_float = *q == '.' || *q == 'e' || *q == 'E';
    const double v = g_ascii_strtod(s, &end);
    if (is_float && end > q)
      push(lx, TS_LT_FLOAT, g_strndup(s, (gsize)(end - s)), v, s);
    else {
      end = (char *)q;
      push(lx, TS_LT_INT, g_strndup(s, (gsize)(q - s)), g_ascii_strtod(s, NULL), s);
    }
  }
  if (g_ascii_isalpha(*end) || *end == '_')
    return fail(lx, end, TS_LANG_ERROR_SYNTAX, "a name cannot start right after a number");
  lx->p = end;
  return TRUE;
}

static gboolean
lex_string(Lexer *lx)
{
  const char *s = lx->p, quote = *s;
  g_autoptr(GString) v = g_string_new(NULL);
  const char *q = s + 1;
  for (; *q && *q != quote && *q != '\n'; q++) {
    if (*q != '\\') {
      g_string_append_c(v, *q);
      continue;
    }
    q++;
    switch (*q) {
    case 'n': g_string_append_c(v, '\n'); break;
    case 't': g_string_append_c(v, '\t'); break;
    case '\\': case '\'': case '"': g_string_append_c(v, *q); break;
    default:
      return fail(lx, q - 1, TS_LANG_ERROR_SYNTAX,
                  "unknown escape in a string (known: \\n \\t \\\\ \\' \\\")");
    }
  }
  if (*q != quote)
    return fail(lx, s, TS_LANG_ERROR_SYNTAX, "this string is not closed on its line");
  push(lx, TS_LT_STRING, g_string_free(g_steal_pointer(&v), FALSE), 0, s);
  lx->p = q + 1;
  return TRUE;
}

static gboolean
lex_op(Lexer *lx)
{
  const char *s = lx->p;
  const char *const *tables[] = {ops3, ops2};
  const gsize lens[] = {3, 2};
  for (guint t = 0; t < 2; t++)
    for (const char *const *o = tables[t]; *o; o++)
      if (strncmp(s, *o, lens[t]) == 0) {
        push(lx, TS_LT_OP, g_strdup(*o), 0, s);
        lx->p += lens[t];
        return TRUE;
      }
  if (*s && strchr(ops1, *s)) {
    if (strchr("([{", *s)) {
      lx->depth++;
      TsLangTok b = {TS_LT_OP, NULL, *s, lx->line, col_of(lx, s)};
      g_array_append_val(lx->open, b);
    } else if (strchr(")]}", *s)) {
      if (lx->depth == 0)
        return fail(lx, s, TS_LANG_ERROR_SYNTAX, "this bracket closes nothing");
      const TsLangTok *b = &g_array_index(lx->open, TsLangTok, lx->open->len - 1);
      const char opener = (char)b->num, want = opener == '(' ? ')' : opener == '[' ? ']' : '}';
      if (*s != want) {
        g_autofree char *msg = g_strdup_printf("'%c' does not close the '%c' of line %d, "
                                               "column %d (expected '%c')",
                                               *s, opener, b->line, b->col, want);
        return fail(lx, s, TS_LANG_ERROR_SYNTAX, msg);
      }
      lx->depth--;
      g_array_set_size(lx->open, lx->open->len - 1);
    }
    push(lx, TS_LT_OP, g_strndup(s, 1), 0, s);
    lx->p++;
    return TRUE;
  }
  g_autofree char *msg = g_ascii_isprint(*s)
                           ? g_strdup_printf("unexpected character '%c'", *s)
                           : g_strdup_printf("unexpected byte 0x%02x", (guint8)*s);
  return fail(lx, s, TS_LANG_ERROR_SYNTAX, msg);
}

GArray *
ts__lang_lex(const char *src, const char *filename, GError **error)
{
  Lexer lx = {.src = src, .file = filename, .p = src, .line_start = src, .line = 1,
              .toks = g_array_new(FALSE, TRUE, sizeof(TsLangTok)),
              .open = g_array_new(FALSE, TRUE, sizeof(TsLangTok)),
              .indents = g_array_new(FALSE, TRUE, sizeof(int)), .error = error};
  const int zero = 0;
  g_array_append_val(lx.indents, zero);
  gboolean ok = indentation(&lx);
  while (ok && *lx.p) {
    const char c = *lx.p;
    if (c == ' ' || c == '\t' || c == '\r') {
      lx.p++;
    } else if (c == '#') {
      while (*lx.p && *lx.p != '\n')
        lx.p++;
    } else if (c == '\\' && (lx.p[1] == '\n' || (lx.p[1] == '\r' && lx.p[2] == '\n'))) {
      lx.p += lx.p[1] == '\n' ? 2 : 3;
      lx.line_start = lx.p;
      lx.line++;
    } else if (c == '\n') {
      if (lx.depth == 0 && lx.toks->len > 0 &&
          g_array_index(lx.toks, TsLangTok, lx.toks->len - 1).kind != TS_LT_NEWLINE)
        push(&lx, TS_LT_NEWLINE, NULL, 0, lx.p);
      lx.p++;
      lx.line_start = lx.p;
      lx.line++;
      if (lx.depth == 0)
        ok = indentation(&lx);
    } else if (g_ascii_isalpha(c) || c == '_') {
      const char *s = lx.p;
      while (g_ascii_isalnum(*lx.p) || *lx.p == '_')
        lx.p++;
      push(&lx, TS_LT_NAME, g_strndup(s, (gsize)(lx.p - s)), 0, s);
    } else if (g_ascii_isdigit(c) || (c == '.' && g_ascii_isdigit(lx.p[1]))) {
      ok = lex_number(&lx);
    } else if (c == '"' || c == '\'') {
      ok = lex_string(&lx);
    } else {
      ok = lex_op(&lx);
    }
  }
  if (ok && lx.depth > 0) {
    /* Blame the bracket left open, where the mistake is, not the end of the file. */
    const TsLangTok *b = &g_array_index(lx.open, TsLangTok, lx.open->len - 1);
    g_autofree char *msg = g_strdup_printf("this '%c' is never closed", (char)b->num);
    ts_lang_set_error(error, TS_LANG_ERROR_SYNTAX, src, filename, b->line, b->col, "%s", msg);
    ok = FALSE;
  }
  if (ok) {
    if (lx.toks->len > 0 &&
        g_array_index(lx.toks, TsLangTok, lx.toks->len - 1).kind != TS_LT_NEWLINE)
      push(&lx, TS_LT_NEWLINE, NULL, 0, lx.p);
    for (guint i = 1; i < lx.indents->len; i++)
      push(&lx, TS_LT_DEDENT, NULL, 0, lx.p);
    push(&lx, TS_LT_EOF, NULL, 0, lx.p);
  }
  g_array_free(lx.indents, TRUE);
  g_array_free(lx.open, TRUE);
  if (!ok) {
    ts__lang_tokens_free(lx.toks);
    return NULL;
  }
  return lx.toks;
}
