/* ts-sched-lex.c — Schedule IR tokens, the located error messages every stage reports
 * ("schedule:L:C: message", the source line, a caret), did-you-mean suggestions, and the
 * method catalog shared by the parser and the printers. */
#include "ts-sched-private.h"
#include "ts-suggest.h"

#include <string.h>

GQuark
ts_sched_error_quark(void)
{
  return g_quark_from_static_string("ts-sched-error-quark");
}

/* Canonical method order: this order is also the canonical knob order of points, so that a
 * point's text (and so its hash) does not depend on how it was written. */
const TsSchedMethod ts__sched_methods[] = {
    {"block", 3, {"BM", "BN", "BK"}, {"m", "n", "k"}},
    {"micro", 2, {"MR", "NR"}, {"m", "n"}},
    {"warps", 1, {"warps"}, {NULL}},
    {"stages", 1, {"stages"}, {NULL}},
    {"vector", 1, {"vector"}, {NULL}},
    {"swizzle", 1, {"swizzle"}, {NULL}},
    {"threads", 1, {"threads"}, {NULL}},
    {"unroll", 1, {"unroll"}, {NULL}},
    /* GPU: CTAs launched in groups of `raster` rows of C tiles, so the A and B tiles a wave
     * of CTAs reads are shared in L2 (Triton's GROUP_SIZE_M). Appended, not inserted: the
     * canonical order of existing points (and their hashes) must not change. */
    {"raster", 1, {"raster"}, {NULL}},
    /* GPU: the tensor-core instruction family ("sync": mma.sync; "wgmma": warpgroup mma,
     * sm_90a). Appended for the same reason as raster. */
    {"mma", 1, {"mma"}, {NULL}},
    /* GPU: how slices reach shared memory ("cp_async": every thread's 16-byte copies; "tma":
     * the Tensor Memory Accelerator on mbarriers, sm_90). Appended, as raster. */
    {"load", 1, {"load"}, {NULL}},
    /* CPU softmax: how a row's max, sum and exps are split into passes ("online", "max_first",
     * "stored": 3, 2 or 1 exp per element). Appended, as raster. */
    {"softmax", 1, {"softmax"}, {NULL}},
    /* CPU gemm: the multiply-add ("fma": f32 FMAs on widened panels; "bf16": vdpbf16ps on
     * K-pair-packed bf16 panels, AVX512_BF16; "amx": AMX tiles). Appended, as raster. */
    {"dot", 1, {"dot"}, {NULL}},
    /* CPU row ops: "exact" functions, or "fast" ones accurate enough for 16-bit results
     * (softmax's exp: a degree-4 polynomial). Appended, as raster. */
    {"math", 1, {"math"}, {NULL}},
    /* GPU gemm: who does what in a CTA ("plain": every warp loads and multiplies; "coop": a
     * producer warpgroup feeds consumer warpgroups through full/empty mbarriers, sm_90a;
     * "pingpong": the same, the consumers taking turns, a tile each).
     * Appended, as raster. */
    {"schedule", 1, {"schedule"}, {NULL}},
    /* GPU gemm: 0, one CTA per tile; P > 0, P CTAs (the SM count) that loop over the tiles,
     * each loading its next tile while storing the last. Appended, as raster. */
    {"persistent", 1, {"persistent"}, {NULL}},
    /* GPU gemm: how a tile leaves the consumers ("direct": each thread stores its accumulator
     * pairs; "tma": stmatrix into a swizzled staging tile, then TMA stores). Appended, as
     * raster. */
    {"epilogue", 1, {"epilogue"}, {NULL}},
    /* GPU gemm: thread-block clusters of CM x CN CTAs whose tiles share an operand row or
     * column, loaded once and multicast by the TMA (sm_90). Appended, as raster. */
    {"cluster", 2, {"CM", "CN"}, {"m", "n"}},
    /* CPU gemm: how the work is cut ("panels": BLIS's loops, a BN x BK block of B shared by
     * the team; "tiles": a BM x BN tile of C per program, as a GPU runs it). Appended, as
     * raster. */
    {"walk", 1, {"walk"}, {NULL}},
    /* CPU row ops: how the output is written ("cached": plain stores; "stream": non-temporal
     * stores that skip reading each line first and leave the cache to the input). Appended,
     * as raster. */
    {"store", 1, {"store"}, {NULL}},
    /* CPU row ops: "none", each row's passes in turn; "next", a row's first reduction done
     * in the last pass over the row before it (read while writing, as a copy does);
     * softmax("stored") also "skew", the passes of three rows in one loop (row i's exps,
     * row i + 1's max, row i - 1 written). Appended, as raster. */
    {"pipeline", 1, {"pipeline"}, {NULL}},
    /* CPU layernorm and a kernel file's row kernels: how the output is written ("row": each
     * row's last pass over all its columns; "tile": in tiles of the work item's rows, each
     * tile's [N] inputs (G and Bt) widened to f32 once for all of them). Appended, as raster. */
    {"apply", 1, {"apply"}, {NULL}},
    /* CPU layernorm: rows per pass (1, or 2: two rows' last passes jammed into one loop that
     * loads G and Bt once for both and carries the next pair's sums). Appended, as raster. */
    {"jam", 1, {"jam"}, {NULL}},
};
const guint ts__sched_n_methods = G_N_ELEMENTS(ts__sched_methods);

int
ts__sched_method_find(const char *name)
{
  for (guint m = 0; m < ts__sched_n_methods; m++)
    if (strcmp(ts__sched_methods[m].method, name) == 0)
      return (int)m;
  return -1;
}

int
ts__sched_knob_method(const char *knob, guint *arg)
{
  for (guint m = 0; m < ts__sched_n_methods; m++)
    for (guint a = 0; a < ts__sched_methods[m].n; a++)
      if (strcmp(ts__sched_methods[m].knob[a], knob) == 0) {
        if (arg)
          *arg = a;
        return (int)m;
      }
  return -1;
}

void
ts__sched_error_at(GError **error, TsSchedError code, const char *src, int line, int col,
                   const char *fmt, ...)
{
  if (!error)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);

  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "schedule:%d:%d: %s", line, col, msg);
  ts__append_caret(s, src, line, col);
  g_set_error_literal(error, TS_SCHED_ERROR, code, s->str);
  g_string_free(s, TRUE);
}

static void
push(TsParser *p, TsTokKind kind, int line, int col, gboolean nl)
{
  TsTok t = {.kind = kind, .line = line, .col = col, .nl_before = nl};
  g_array_append_val(p->toks, t);
}

gboolean
ts__sched_lex(TsParser *p, const char *src, GError **error)
{
  p->src = src;
  p->toks = g_array_new(FALSE, TRUE, sizeof(TsTok));
  p->pos = 0;
  const char *s = src, *line_start = src;
  int line = 1;
  gboolean nl = FALSE;

  for (;;) {
    char c = *s;
    int col = (int)(s - line_start) + 1;
    if (c == '\n') {
      s++;
      line++;
      line_start = s;
      nl = TRUE;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      s++;
      continue;
    }
    if (c == '#') {
      while (*s && *s != '\n')
        s++;
      continue;
    }
    if (c == '\0') {
      push(p, TS_TOK_EOF, line, col, nl);
      return TRUE;
    }
    if (g_ascii_isalpha(c) || c == '_') {
      const char *b = s;
      while (g_ascii_isalnum(*s) || *s == '_')
        s++;
      g_autofree char *word = g_strndup(b, (gsize)(s - b));
      push(p, TS_TOK_IDENT, line, col, nl);
      g_array_index(p->toks, TsTok, p->toks->len - 1).text = g_ref_string_new_intern(word);
    } else if (g_ascii_isdigit(c)) {
      guint64 v = 0;
      gboolean big = FALSE;
      while (g_ascii_isdigit(*s)) {
        /* 2^63 itself is allowed so that the most negative int64 can be written. */
        if (__builtin_mul_overflow(v, 10, &v) ||
            __builtin_add_overflow(v, (guint64)(*s - '0'), &v) || v > (guint64)G_MAXINT64 + 1)
          big = TRUE;
        s++;
      }
      if (big) {
        ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, src, line, col,
                           "number too large (integers are 64-bit, at most %" G_GINT64_FORMAT ")",
                           G_MAXINT64);
        return FALSE;
      }
      if (g_ascii_isalpha(*s) || *s == '_') {
        ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, src, line, (int)(s - line_start) + 1,
                           "unexpected '%c' after a number", *s);
        return FALSE;
      }
      push(p, TS_TOK_INT, line, col, nl);
      g_array_index(p->toks, TsTok, p->toks->len - 1).mag = v;
    } else if (c == '"') {
      GString *str = g_string_new(NULL);
      s++;
      while (*s && *s != '"' && *s != '\n') {
        if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
          s++;
        g_string_append_c(str, *s++);
      }
      if (*s != '"') {
        g_string_free(str, TRUE);
        ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, src, line, col, "unterminated string");
        return FALSE;
      }
      s++;
      push(p, TS_TOK_STR, line, col, nl);
      g_array_index(p->toks, TsTok, p->toks->len - 1).text = g_ref_string_new_intern(str->str);
      g_string_free(str, TRUE);
    } else {
      static const struct {
        const char *text;
        TsTokKind kind;
      } punct[] = {
          {"<=", TS_TOK_LE},     {">=", TS_TOK_GE},    {"==", TS_TOK_EQ},     {"!=", TS_TOK_NE},
          {"&&", TS_TOK_ANDAND}, {"||", TS_TOK_OROR},  {"(", TS_TOK_LPAREN},  {")", TS_TOK_RPAREN},
          {"[", TS_TOK_LBRACK},  {"]", TS_TOK_RBRACK}, {",", TS_TOK_COMMA},   {".", TS_TOK_DOT},
          {"=", TS_TOK_ASSIGN},  {";", TS_TOK_SEMI},   {"+", TS_TOK_PLUS},    {"-", TS_TOK_MINUS},
          {"*", TS_TOK_STAR},    {"/", TS_TOK_SLASH},  {"%", TS_TOK_PERCENT}, {"<", TS_TOK_LT},
          {">", TS_TOK_GT},      {"!", TS_TOK_BANG},
      };
      guint k;
      for (k = 0; k < G_N_ELEMENTS(punct); k++)
        if (strncmp(s, punct[k].text, strlen(punct[k].text)) == 0)
          break;
      if (k == G_N_ELEMENTS(punct)) {
        if ((guchar)c < 0x20 || (guchar)c >= 0x7f)
          ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, src, line, col, "unexpected byte 0x%02x",
                             (guchar)c);
        else
          ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, src, line, col,
                             "unexpected character '%c'", c);
        return FALSE;
      }
      push(p, punct[k].kind, line, col, nl);
      s += strlen(punct[k].text);
    }
    nl = FALSE;
  }
}

void
ts__sched_parser_clear(TsParser *p)
{
  if (p->toks) {
    for (guint i = 0; i < p->toks->len; i++) {
      const char *text = g_array_index(p->toks, TsTok, i).text;
      if (text)
        g_ref_string_release((char *)text);
    }
    g_array_unref(p->toks);
  }
  p->toks = NULL;
}

const TsTok *
ts__sched_peek(const TsParser *p, guint ahead)
{
  guint i = MIN(p->pos + ahead, p->toks->len - 1);
  return &g_array_index(p->toks, TsTok, i);
}

const TsTok *
ts__sched_next(TsParser *p)
{
  const TsTok *t = ts__sched_peek(p, 0);
  if (p->pos < p->toks->len - 1)
    p->pos++;
  return t;
}

const char *
ts__sched_tok_describe(const TsTok *t, char *buf, gsize size)
{
  static const char *const names[] = {
      [TS_TOK_LPAREN] = "(",  [TS_TOK_RPAREN] = ")", [TS_TOK_LBRACK] = "[", [TS_TOK_RBRACK] = "]",
      [TS_TOK_COMMA] = ",",   [TS_TOK_DOT] = ".",    [TS_TOK_ASSIGN] = "=", [TS_TOK_SEMI] = ";",
      [TS_TOK_PLUS] = "+",    [TS_TOK_MINUS] = "-",  [TS_TOK_STAR] = "*",   [TS_TOK_SLASH] = "/",
      [TS_TOK_PERCENT] = "%", [TS_TOK_LT] = "<",     [TS_TOK_LE] = "<=",    [TS_TOK_GT] = ">",
      [TS_TOK_GE] = ">=",     [TS_TOK_EQ] = "==",    [TS_TOK_NE] = "!=",    [TS_TOK_ANDAND] = "&&",
      [TS_TOK_OROR] = "||",   [TS_TOK_BANG] = "!",
  };
  switch (t->kind) {
  case TS_TOK_EOF:
    g_strlcpy(buf, "end of input", size);
    break;
  case TS_TOK_IDENT:
    g_snprintf(buf, size, "'%s'", t->text);
    break;
  case TS_TOK_INT:
    g_snprintf(buf, size, "%" G_GUINT64_FORMAT, t->mag);
    break;
  case TS_TOK_STR:
    g_snprintf(buf, size, "\"%s\"", t->text);
    break;
  default:
    g_snprintf(buf, size, "'%s'", names[t->kind]);
    break;
  }
  return buf;
}
