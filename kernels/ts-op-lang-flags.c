/* ts-op-lang-flags.c — a kernel's compile-time flags decided before its body is read: every
 * `if` whose condition is made of bool parameters (`if causal:`, `if not relu:`, `if a and b:`,
 * `elif`, `else`) is replaced by the block its flags' values pick, so the readers after this
 * (elementwise, row, GEMM, attention) see straight-line bodies and loops, and a kernel set with
 * other flags is simply another body. The specialised body is a view: new BLOCK and FOR nodes
 * listing the original statements, which stay the tree's. */
#include "ts-op-lang-private.h"

/* A view node's kids are borrowed. */
static void
view_free(gpointer p)
{
  TsLangNode *n = p;
  g_ptr_array_unref(n->kids);
  g_free(n);
}

GPtrArray *
ts__lang_views_new(void)
{
  return g_ptr_array_new_with_free_func(view_free);
}

static TsLangNode *
view_of(const TsLangNode *n, GPtrArray *views)
{
  TsLangNode *v = g_new(TsLangNode, 1);
  *v = *n;
  v->kids = g_ptr_array_new();
  g_ptr_array_add(views, v);
  return v;
}

/* 1 or 0 for a condition of flags, -1 (with the error set) for one that is not. */
static int
decide(Reader *r, const TsLangNode *c, GHashTable *flags, GHashTable *used)
{
  if (c->kind == TS_LANG_NAME) {
    if (strcmp(c->str, "True") == 0 || strcmp(c->str, "False") == 0)
      return c->str[0] == 'T';
    const char *v = g_hash_table_lookup(flags, c->str);
    if (v != NULL) {
      g_hash_table_add(used, c->str);
      return v[0] == '1';
    }
  } else if (c->kind == TS_LANG_UNARY && strcmp(c->str, "not") == 0) {
    int v = decide(r, ts__lang_kid(c, 0), flags, used);
    return v < 0 ? -1 : !v;
  } else if (c->kind == TS_LANG_BOOLOP) {
    int a = decide(r, ts__lang_kid(c, 0), flags, used);
    int b = a < 0 ? -1 : decide(r, ts__lang_kid(c, 1), flags, used);
    return b < 0 ? -1 : strcmp(c->str, "and") == 0 ? a && b : a || b;
  }
  g_autofree char *src = ts_lang_expr_to_source(c);
  ts__lang_fail(r, c, "if %s is not lowered: the lowering decides an if on the kernel's bool "
                      "parameters (its flags), with not, and and or; one on dims or knobs is not "
                      "lowered yet", src);
  return -1;
}

static gboolean specialise_into(Reader *r, const TsLangNode *block, GHashTable *flags,
                                GHashTable *used, GPtrArray *views, TsLangNode *out);

static gboolean
statement(Reader *r, const TsLangNode *st, GHashTable *flags, GHashTable *used,
          GPtrArray *views, TsLangNode *out)
{
  if (st->kind == TS_LANG_IF) {
    int v = decide(r, ts__lang_kid(st, 0), flags, used);
    if (v < 0)
      return FALSE;
    const TsLangNode *taken = ts__lang_kid(st, v ? 1 : 2);
    return taken == NULL || specialise_into(r, taken, flags, used, views, out);
  }
  if (st->kind == TS_LANG_FOR) {
    TsLangNode *loop = view_of(st, views);
    g_ptr_array_add(loop->kids, (gpointer)ts__lang_kid(st, 0));
    g_ptr_array_add(loop->kids, (gpointer)ts__lang_kid(st, 1));
    TsLangNode *body = view_of(ts__lang_kid(st, 2), views);
    g_ptr_array_add(loop->kids, body);
    g_ptr_array_add(out->kids, loop);
    return specialise_into(r, ts__lang_kid(st, 2), flags, used, views, body);
  }
  g_ptr_array_add(out->kids, (gpointer)st);
  return TRUE;
}

static gboolean
specialise_into(Reader *r, const TsLangNode *block, GHashTable *flags, GHashTable *used,
                GPtrArray *views, TsLangNode *out)
{
  for (guint i = 0; i < block->kids->len; i++)
    if (!statement(r, ts__lang_kid(block, i), flags, used, views, out))
      return FALSE;
  return TRUE;
}

const TsLangNode *
ts__lang_specialise(Reader *r, const TsLangNode *block, GHashTable *flags, GPtrArray *views)
{
  g_autoptr(GHashTable) used = g_hash_table_new(g_str_hash, g_str_equal);
  TsLangNode *out = view_of(block, views);
  if (!specialise_into(r, block, flags, used, views, out))
    return NULL;
  GHashTableIter it;
  gpointer flag;
  g_hash_table_iter_init(&it, flags);
  while (g_hash_table_iter_next(&it, &flag, NULL))
    if (!g_hash_table_contains(used, flag))
      return ts__lang_fail(r, r->k->def, "the flag %s of kernel %s decides nothing: no if reads "
                                         "it", (const char *)flag, r->k->name),
             NULL;
  return out;
}
