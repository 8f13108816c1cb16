/* ts-lang-private.h — the kernel language's tokens, shared by its lexer and parser. */
#pragma once

#include "ts-lang.h"

typedef enum {
  TS_LT_NAME,
  TS_LT_INT,
  TS_LT_FLOAT,
  TS_LT_STRING,
  TS_LT_OP,      /* punctuation and operators: text in `text` */
  TS_LT_NEWLINE, /* the end of a logical line */
  TS_LT_INDENT,
  TS_LT_DEDENT,
  TS_LT_EOF,
} TsLangTokKind;

typedef struct {
  TsLangTokKind kind;
  char *text; /* NAME, OP, STRING (value), INT/FLOAT (spelling) */
  double num;
  int line, col;
} TsLangTok;

/* Tokens of src, ending in NEWLINE, the DEDENTs that close open blocks, and EOF. A GArray of
 * TsLangTok whose texts the caller frees with ts__lang_tokens_free. */
GArray *ts__lang_lex(const char *src, const char *filename, GError **error);
void ts__lang_tokens_free(GArray *toks);

/* The body's types (ts-lang-types.c), run by ts_lang_kernel_check once every name is known to
 * be defined: fills k->bindings, or sets a TS_LANG_ERROR_TYPE error. */
gboolean ts__lang_type_body(TsLangKernel *k, const char *src, const char *filename,
                            GError **error);
