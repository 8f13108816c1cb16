/* ts-op-lang-attn.c — kernel files whose body is flash attention, as the seeds write it:
 *
 *   T = tile.context()
 *   Qb = tile.load(q, rows=T.m, cols=T.d)
 *   acc = tile.zeros((T.m, T.d), f32); m = tile.full((T.m,), -INF); l = tile.zeros((T.m,), f32)
 *   for nblk in tile.range_n(k.shape[1], T.n, prefetch=2):
 *       Kb = tile.load(k, nblk, cols=T.d)
 *       Vb = tile.load(v, nblk, cols=T.d)
 *       S = tile.dot(Qb, tile.transpose(Kb)) * tile.rsqrt(float(T.d))
 *       if causal: tile.mask_causal(S, tile.row_index(), tile.col_index(nblk))
 *       P, m_c, l_c = tile.softmax_online(S)
 *       acc, m, l = tile.softmax_accumulate(acc, m, l, P, Vb, m_c, l_c)
 *   return tile.cast(acc / l[:, None], bf16)
 *
 * That body is the computation the flash_attention templates of op-attention.c implement (the
 * CPU's row-at-a-time online softmax; CUDA's FlashAttention-2 on mma.sync and FlashAttention-3
 * style wgmma pipelines), so it lowers through them, as a GEMM body lowers through gemm's. The
 * names are the kernel's own; each statement is matched as source against its shape in the
 * form, so a statement that computes something else (another scale, a mask on another flag, a
 * normalisation left out) is refused at its position, saying what the form has there.
 *
 * The causal flag is a bool parameter, decided before the body is read (ts-op-lang-flags.c): the
 * kernel with the flag set is another op (its name carries "+causal") whose body has the mask,
 * lowered through flash_attention_causal. */
#include "ts-op-lang-private.h"

#include <string.h>


static const char *const attn_form =
  "an attention kernel is T = tile.context(); Q's tile tile.load(q, rows=T.m, cols=T.d); "
  "acc = tile.zeros((T.m, T.d), f32), m = tile.full((T.m,), -INF) and l = tile.zeros((T.m,), "
  "f32); for nb in tile.range_n(k.shape[1], T.n): its loads tile.load(k, nb, cols=T.d) and "
  "tile.load(v, nb, cols=T.d), S = tile.dot(Qb, tile.transpose(Kb)) * "
  "tile.rsqrt(float(T.d)), optionally if FLAG: tile.mask_causal(S, tile.row_index(), "
  "tile.col_index(nb)), P, m_c, l_c = tile.softmax_online(S) and acc, m, l = "
  "tile.softmax_accumulate(acc, m, l, P, Vb, m_c, l_c); then return tile.cast(acc / l[:, "
  "None], dtype)";

const TsLangNode *
ts__lang_attention_call(const TsLangNode *n)
{
  static const char *const attention[] = {"range_n", "softmax_online", "softmax_accumulate",
                                          "mask_causal", "transpose", NULL};
  if (n == NULL)
    return NULL;
  for (guint i = 0; attention[i]; i++)
    if (ts__lang_is_tile_call(n, attention[i]))
      return n;
  for (guint i = 0; n->kids && i < n->kids->len; i++) {
    const TsLangNode *c = ts__lang_attention_call(g_ptr_array_index(n->kids, i));
    if (c)
      return c;
  }
  return NULL;
}

/* ---- matching statements against the form ---- */

typedef struct {
  Reader *r;
  GHashTable *bound; /* placeholder -> the kernel's name (strings owned by the table) */
  GHashTable *loads; /* a loop load's tile name -> its tensor's name */
  gboolean masked;   /* the scores are masked (causal) */
  gboolean init_acc, init_m, init_l, q_seen, loop_seen, dot_seen, online_seen, accum_seen;
  char *dtype;       /* the returned tile's dtype name */
} Attn;

static gboolean
is_ident(char c)
{
  return g_ascii_isalnum(c) || c == '_';
}

/* Whether src is pattern with each $NAME placeholder one identifier (the same one wherever a
 * placeholder recurs, and the one bound before) and each # a decimal integer. Binds the new
 * placeholders only when the whole statement matches. */
static gboolean
match(Attn *a, const char *pattern, const char *src)
{
  g_autoptr(GHashTable) fresh = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  const char *p = pattern, *s = src;
  while (*p) {
    if (*p == '$') {
      const char *name0 = ++p;
      while (is_ident(*p))
        p++;
      g_autofree char *name = g_strndup(name0, (gsize)(p - name0));
      const char *id0 = s;
      if (!g_ascii_isalpha(*s) && *s != '_')
        return FALSE;
      while (is_ident(*s))
        s++;
      g_autofree char *id = g_strndup(id0, (gsize)(s - id0));
      const char *known = g_hash_table_lookup(a->bound, name);
      if (known == NULL)
        known = g_hash_table_lookup(fresh, name);
      if (known != NULL && strcmp(known, id) != 0)
        return FALSE;
      if (known == NULL)
        g_hash_table_insert(fresh, g_steal_pointer(&name), g_steal_pointer(&id));
    } else if (*p == '#') {
      p++;
      if (!g_ascii_isdigit(*s))
        return FALSE;
      while (g_ascii_isdigit(*s))
        s++;
    } else if (*p++ != *s++) {
      return FALSE;
    }
  }
  if (*s != '\0')
    return FALSE;
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, fresh);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    g_hash_table_iter_steal(&it);
    g_hash_table_insert(a->bound, k, v);
  }
  return TRUE;
}

static const char *
bound(Attn *a, const char *placeholder)
{
  return g_hash_table_lookup(a->bound, placeholder);
}

static gboolean
refuse(Attn *a, const TsLangNode *at, const char *what)
{
  g_autofree char *src = ts_lang_expr_to_source(at);
  return ts__lang_fail(a->r, at, "%s is not lowered: %s (%s)", src, what, attn_form);
}

/* A statement as one line of source: "target = value", "(P, m_c, l_c) = ...", an expression. */
static char *
statement_source(const TsLangNode *st)
{
  if (st->kind == TS_LANG_ASSIGN) {
    g_autofree char *t = ts_lang_expr_to_source(ts__lang_kid(st, 0));
    g_autofree char *v = ts_lang_expr_to_source(ts__lang_kid(st, 1));
    return g_strdup_printf("%s = %s", t, v);
  }
  if (st->kind == TS_LANG_EXPR_STMT || st->kind == TS_LANG_RETURN)
    return ts_lang_expr_to_source(ts__lang_kid(st, 0));
  return g_strdup(ts_lang_kind_name(st->kind));
}

/* A tensor parameter's name, or NULL. */
static const TsLangParam *
tensor_named(Attn *a, const char *name)
{
  int t = name ? ts__lang_tensor_index(a->r, name) : -1;
  return t >= 0 ? g_ptr_array_index(a->r->tensors, t) : NULL;
}

static gboolean
read_prologue(Attn *a, const TsLangNode *st)
{
  g_autofree char *src = statement_source(st);
  const TsLangNode *value = st->kind == TS_LANG_ASSIGN ? ts__lang_kid(st, 1) : st;
  if (bound(a, "T") == NULL)
    return match(a, "$T = tile.context()", src) ? TRUE
           : refuse(a, st->kind == TS_LANG_ASSIGN ? value : st,
                    "the body starts with T = tile.context(), which the tiles' shapes name");
  if (!a->q_seen && match(a, "$Qb = tile.load($q, rows=$T.m, cols=$T.d)", src)) {
    a->q_seen = TRUE;
    return TRUE;
  }
  if (!a->init_acc && match(a, "$acc = tile.zeros(($T.m, $T.d), f32)", src))
    return a->init_acc = TRUE;
  if (!a->init_m && match(a, "$m = tile.full(($T.m,), -INF)", src))
    return a->init_m = TRUE;
  if (!a->init_l && match(a, "$l = tile.zeros(($T.m,), f32)", src))
    return a->init_l = TRUE;
  return refuse(a, value, "before the loop, the form loads Q's tile as tile.load(q, rows=T.m, "
                          "cols=T.d) and starts the accumulator (T.m, T.d), the running max at "
                          "-INF and the running sum at 0, each once");
}

static gboolean
read_loop_statement(Attn *a, const TsLangNode *st)
{
  if (st->kind == TS_LANG_PASS)
    return TRUE;
  g_autofree char *src = statement_source(st);
  const TsLangNode *value = st->kind == TS_LANG_ASSIGN ? ts__lang_kid(st, 1) : st;
  /* The loads are K's and V's by how they are used below. */
  if (!a->dot_seen && st->kind == TS_LANG_ASSIGN && ts__lang_is_tile_call(value, "load")) {
    if (match(a, "$tile = tile.load($x, $nb, cols=$T.d)", src)) {
      g_hash_table_insert(a->loads, g_strdup(bound(a, "tile")), g_strdup(bound(a, "x")));
      g_hash_table_remove(a->bound, "tile");
      g_hash_table_remove(a->bound, "x");
      return TRUE;
    }
  }
  if (!a->dot_seen && g_hash_table_size(a->loads) >= 2 &&
      match(a, "$S = (tile.dot($Qb, tile.transpose($Kb)) * tile.rsqrt(float($T.d)))", src))
    return a->dot_seen = TRUE;
  if (a->dot_seen && !a->online_seen && !a->masked &&
      match(a, "tile.mask_causal($S, tile.row_index(), tile.col_index($nb))", src))
    return a->masked = TRUE;
  if (a->dot_seen && !a->online_seen &&
      match(a, "($P, $m_c, $l_c) = tile.softmax_online($S)", src))
    return a->online_seen = TRUE;
  if (a->online_seen && !a->accum_seen &&
      match(a, "($acc, $m, $l) = tile.softmax_accumulate($acc, $m, $l, $P, $Vb, $m_c, $l_c)",
            src))
    return a->accum_seen = TRUE;
  const char *what =
    !a->dot_seen ? "the loop loads K's and V's tiles as tile.load(k, nb, cols=T.d), then scores "
                   "S = tile.dot(Qb, tile.transpose(Kb)) * tile.rsqrt(float(T.d))"
    : !a->online_seen ? "after the scores, optionally their causal mask "
                        "tile.mask_causal(S, tile.row_index(), tile.col_index(nb)) (under a "
                        "flag: if causal:), then P, m_c, l_c = tile.softmax_online(S)"
    : !a->accum_seen ? "after the online softmax, acc, m, l = tile.softmax_accumulate(acc, m, l, "
                       "P, Vb, m_c, l_c) with the names the prologue started"
                     : "the loop ends with the accumulation";
  return refuse(a, value, what);
}

static gboolean
read_loop(Attn *a, const TsLangNode *st)
{
  const TsLangNode *target = ts__lang_kid(st, 0), *iter = ts__lang_kid(st, 1);
  g_autofree char *t = ts_lang_expr_to_source(target);
  g_autofree char *it = ts_lang_expr_to_source(iter);
  g_autofree char *src = g_strdup_printf("%s in %s", t, it);
  if (!a->q_seen || !a->init_acc || !a->init_m || !a->init_l || a->loop_seen ||
      !(match(a, "$nb in tile.range_n($kt.shape[1], $T.n)", src) ||
        match(a, "$nb in tile.range_n($kt.shape[1], $T.n, prefetch=#)", src)))
    return refuse(a, iter, "after the prologue, one loop over the key tiles: for nb in "
                           "tile.range_n(k.shape[1], T.n) (prefetch=N allowed: the depth is the "
                           "stages knob's)");
  a->loop_seen = TRUE;
  const TsLangNode *block = ts__lang_kid(st, 2);
  for (guint i = 0; i < block->kids->len; i++)
    if (!read_loop_statement(a, ts__lang_kid(block, i)))
      return FALSE;
  if (!a->accum_seen)
    return refuse(a, iter, "the loop's body ends before the accumulation");
  return TRUE;
}

static gboolean
read_return(Attn *a, const TsLangNode *st)
{
  g_autofree char *src = statement_source(st);
  if (!a->loop_seen || ts__lang_kid(st, 0) == NULL)
    return refuse(a, st, "the kernel returns the normalised accumulator after the loop");
  if (match(a, "tile.cast(($acc / $l[:, None]), $dtype)", src)) {
    a->dtype = g_strdup(bound(a, "dtype"));
    return TRUE;
  }
  if (match(a, "($acc / $l[:, None])", src)) {
    a->dtype = g_strdup("f32");
    return TRUE;
  }
  return refuse(a, ts__lang_kid(st, 0), "the kernel returns acc / l[:, None], the accumulator "
                                        "over the running sum, cast to the inputs' dtype");
}

/* q, k and v: the same [X*Y, S, D] type, with the X*Y, S and D of the built-in's B*H, S, D. */
static gboolean
check_tensors(Attn *a, const TsLangParam *q, const TsLangParam *k, const TsLangParam *v)
{
  Reader *r = a->r;
  const TsLangParam *all[] = {q, k, v};
  g_autofree char *tq = ts_tensor_type_to_string(q->tensor);
  for (guint i = 0; i < 3; i++)
    for (guint j = 0; j < i; j++)
      if (all[i] == all[j])
        return ts__lang_fail(r, r->k->def, "%s is both %s and %s of the attention: Q, K and V "
                                           "are three tensors", all[i]->name,
                             j == 0 ? "Q" : "K", i == 1 ? "K" : "V");
  const TsTensorType *t = q->tensor;
  g_auto(GStrv) bh = t->rank == 3 && t->dims[0].name ? g_strsplit(t->dims[0].name, "*", -1) : NULL;
  gboolean distinct = bh && g_strv_length(bh) == 2 && t->dims[1].name && t->dims[2].name;
  const char *names[] = {bh && distinct ? bh[0] : NULL, bh && distinct ? bh[1] : NULL,
                         t->dims[1].name, t->dims[2].name};
  for (guint i = 0; distinct && i < 4; i++)
    for (guint j = 0; j < i; j++)
      distinct = distinct && strcmp(names[i], names[j]) != 0;
  if (!distinct)
    return ts__lang_fail(r, r->k->def, "%s is %s: the attention lowering takes [\"B*H\", \"S\", "
                                       "\"D\"] tensors, the batch and heads a product of two "
                                       "named dims, the sequence and the head dim named, "
                                       "four names in all",
                         q->name, tq);
  for (guint i = 1; i < 3; i++) {
    g_autofree char *ti = ts_tensor_type_to_string(all[i]->tensor);
    if (strcmp(ti, tq) != 0)
      return ts__lang_fail(r, r->k->def, "%s is %s but %s is %s: the attention lowering takes "
                                         "Q, K and V of one type (self-attention, one sequence "
                                         "length)", all[i]->name, ti, q->name, tq);
  }
  for (guint t2 = 0; t2 < r->tensors->len; t2++) {
    const TsLangParam *p = g_ptr_array_index(r->tensors, t2);
    if (p != q && p != k && p != v)
      return ts__lang_fail(r, r->k->def, "the tensor %s is not one of the attention's Q, K and "
                                         "V: an attention kernel reads those three and returns "
                                         "its output", p->name);
  }
  r->o->user_dims = g_strdup_printf("%s,%s,%s,%s", bh[0], bh[1], t->dims[1].name,
                                    t->dims[2].name);
  return TRUE;
}

/* Each value of the form has a name of its own: `m = tile.full(...)` then `m = tile.zeros(...)`
 * matches the form statement by statement, but the running max is lost. */
static gboolean
distinct_names(Attn *a)
{
  /* Kb and Vb are among the loop's loads, entered first. */
  static const char *const values[] = {"T", "Qb", "acc", "m", "l", "nb", "S", "P", "m_c", "l_c"};
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  GHashTableIter it;
  gpointer tile;
  g_hash_table_iter_init(&it, a->loads);
  while (g_hash_table_iter_next(&it, &tile, NULL))
    if (!g_hash_table_insert(seen, tile, (gpointer) "a loop load"))
      break;
  for (guint i = 0; i < G_N_ELEMENTS(values); i++) {
    const char *name = bound(a, values[i]), *other = name ? g_hash_table_lookup(seen, name) : NULL;
    if (other != NULL)
      return ts__lang_fail(a->r, a->r->k->def, "kernel %s names two values of the attention "
                                               "form %s (%s and %s): each needs its own name",
                           a->r->k->name, name, other, values[i]);
    if (name != NULL)
      g_hash_table_insert(seen, (gpointer)name, (gpointer)values[i]);
  }
  return TRUE;
}

gboolean
ts__lang_read_attention(Reader *r, const TsLangNode *block)
{
  g_autoptr(GHashTable) bound_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                            g_free);
  g_autoptr(GHashTable) loads = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  Attn a = {.r = r, .bound = bound_names, .loads = loads};
  gboolean ok = TRUE;
  const TsLangNode *ret = NULL;
  for (guint i = 0; ok && i < block->kids->len; i++) {
    const TsLangNode *st = ts__lang_kid(block, i);
    if (ret != NULL)
      ok = refuse(&a, st, "the return ends the kernel");
    else if (st->kind == TS_LANG_PASS)
      continue;
    else if (st->kind == TS_LANG_FOR)
      ok = read_loop(&a, st);
    else if (st->kind == TS_LANG_RETURN)
      ok = read_return(&a, ret = st);
    else if (a.loop_seen)
      ok = refuse(&a, st, "after the loop, the kernel returns its output");
    else
      ok = read_prologue(&a, st);
  }
  if (ok && ret == NULL)
    ok = ts__lang_fail(r, r->k->def, "kernel %s returns nothing: an attention kernel returns "
                                     "tile.cast(acc / l[:, None], dtype) (%s)", r->k->name,
                       attn_form);
  if (!ok) {
    g_free(a.dtype);
    return FALSE;
  }
  g_autofree char *dtype = a.dtype;
  if (!distinct_names(&a))
    return FALSE;
  const char *kb = bound(&a, "Kb"), *vb = bound(&a, "Vb");
  const TsLangParam *q = tensor_named(&a, bound(&a, "q"));
  const TsLangParam *k = tensor_named(&a, g_hash_table_lookup(loads, kb));
  const TsLangParam *v = tensor_named(&a, g_hash_table_lookup(loads, vb));
  const TsLangParam *kt = tensor_named(&a, bound(&a, "kt"));
  if (q == NULL || k == NULL || v == NULL || strcmp(kb, vb) == 0)
    return ts__lang_fail(r, r->k->def, "kernel %s's Q tile, transposed key tile and value tile "
                                       "must be loads of three tensor parameters (%s)",
                         r->k->name, attn_form);
  if (kt != k && kt != v)
    return ts__lang_fail(r, r->k->def, "kernel %s walks the keys over %s.shape[1]: the loop "
                                       "runs over K's (or V's) sequence", r->k->name,
                         bound(&a, "kt"));
  if (!check_tensors(&a, q, k, v))
    return FALSE;
  const TsDtype dt = q->tensor->dtype.storage;
  if (strcmp(dtype, ts_dtype_name(dt)) != 0) {
    g_autofree char *tq = ts_tensor_type_to_string(q->tensor);
    return ts__lang_fail(r, ret, "the kernel returns %s but its inputs are %s: the attention "
                                 "templates write the inputs' dtype", dtype, tq);
  }
  LangOp *o = r->o;
  o->attn = TRUE;
  o->attn_causal = a.masked;
  o->attn_q = (guint)ts__lang_tensor_index(r, q->name);
  o->attn_k = (guint)ts__lang_tensor_index(r, k->name);
  o->attn_v = (guint)ts__lang_tensor_index(r, v->name);
  o->dtype = g_strdup(ts_dtype_name(dt));
  return TRUE;
}

/* ---- the op ---- */

/* The benchmarks' 4 x 16 heads of 4096 x 128, where the default point is chosen. */
static TsSchedEnv *
nominal_env(TsDtype dt, gboolean cuda)
{
  TsSchedEnv *env = ts__lang_nominal_env(dt, cuda);
  ts_sched_env_set(env, "B", 4);
  ts_sched_env_set(env, "H", 16);
  ts_sched_env_set(env, "S", 4096);
  ts_sched_env_set(env, "D", 128);
  return env;
}

gboolean
ts__lang_build_attention(Reader *r, const TsLangKernel *k)
{
  LangOp *o = r->o;
  const TsOpDef *t = o->attn_causal ? &ts__op_flash_attention_causal : &ts__op_flash_attention;
  if (r->floats->len > 0)
    return ts__lang_fail(r, k->def, "kernel %s has float parameters: the attention form reads "
                                    "none (its scale is 1/sqrt(D))", k->name);
  /* The templates' own names for Q, K, V and O: the generated code's. */
  o->def.n_inputs = 3;
  for (guint i = 0; i < 3; i++)
    o->def.inputs[i] = t->inputs[i];
  o->def.output = t->output;
  o->input_of[o->attn_q] = 0;
  o->input_of[o->attn_k] = 1;
  o->input_of[o->attn_v] = 2;
  o->def.dim_names = o->user_dims;
  o->def.reference = t->reference;
  g_autoptr(TsSchedEnv) cpu_env = nominal_env(ts_dtype_from_name(o->dtype), FALSE);
  g_autoptr(TsSchedEnv) cuda_env = nominal_env(ts_dtype_from_name(o->dtype), TRUE);
  return ts__lang_use_templates(r, k, t, "attention", "4 x 16 heads of 4096 x 128", cpu_env,
                                cuda_env);
}
