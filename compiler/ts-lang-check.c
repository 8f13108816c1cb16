/* ts-lang-check.c — a kernel's interface: its decorators (tuning space, metric, budget, cache,
 * the op it implements, a fixed schedule, numerics checks) and its signature (tensor types with
 * dtype policies, scalars, flags), each checked with an error at the construct at fault.
 * Annotations are handed to the Graph IR's own parsers as text, so a kernel's types are exactly
 * those `--dtype` and the op catalog use. */
#include "ts-lang-private.h"

#include <math.h>
#include <string.h>

#include "ts-sched.h"
#include "ts-suggest.h"

typedef struct {
  const char *src, *file;
  GError **error;
} Ctx;

static gboolean fail(Ctx *c, const TsLangNode *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean
fail(Ctx *c, const TsLangNode *at, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  ts_lang_set_error_valist(c->error, TS_LANG_ERROR_SYNTAX, c->src, c->file, at->line, at->col,
                           fmt, ap);
  va_end(ap);
  return FALSE;
}

static TsLangNode *
kid(const TsLangNode *n, guint i)
{
  return i < n->kids->len ? g_ptr_array_index(n->kids, i) : NULL;
}

/* "kernel.autotune" for the callee of a decorator, or NULL when it is no dotted name. */
static char *
dotted(const TsLangNode *n)
{
  if (n->kind == TS_LANG_NAME)
    return g_strdup(n->str);
  if (n->kind != TS_LANG_ATTR)
    return NULL;
  g_autofree char *head = dotted(kid(n, 0));
  return head ? g_strdup_printf("%s.%s", head, n->str) : NULL;
}

/* The first line of a GError from another parser, for quoting inside ours, less its own
 * " at column N": that column counts in text we made, not in the user's file. */
static char *
first_line(const GError *e)
{
  const char *nl = strchr(e->message, '\n');
  g_autofree char *line = nl ? g_strndup(e->message, (gsize)(nl - e->message))
                             : g_strdup(e->message);
  /* ... nor its "schedule:L:C: " prefix. */
  if (g_str_has_prefix(line, "schedule:")) {
    const char *msg = strstr(line, ": ");
    if (msg)
      memmove(line, msg + 2, strlen(msg + 2) + 1);
  }
  char *at = strstr(line, " at column ");
  if (at) {
    const char *rest = at + strlen(" at column ");
    while (g_ascii_isdigit(*rest))
      rest++;
    memmove(at, rest, strlen(rest) + 1);
  }
  return g_steal_pointer(&line);
}

/* "; did you mean <open>hint<close>?", or "" without a hint: the tail of a message. */
static char *
did_you_mean(const char *hint, const char *open, const char *close)
{
  return hint ? g_strdup_printf("; did you mean %s%s%s?", open, hint, close) : g_strdup("");
}

static const char *const decorators[] = {"kernel", "kernel.auto", "kernel.autotune",
                                         "kernel.implements", "kernel.schedule",
                                         "verify.numerics"};

static gboolean
number(Ctx *c, const TsLangNode *v, const char *what, double *out)
{
  const TsLangNode *x = v;
  double sign = 1;
  if (x->kind == TS_LANG_UNARY && strcmp(x->str, "-") == 0) {
    sign = -1;
    x = kid(x, 0);
  }
  if (x->kind != TS_LANG_INT && x->kind != TS_LANG_FLOAT)
    return fail(c, v, "%s must be a number", what);
  *out = sign * x->num;
  return TRUE;
}

static gboolean
string(Ctx *c, const TsLangNode *v, const char *what, char **out)
{
  if (v->kind != TS_LANG_STRING)
    return fail(c, v, "%s must be a string", what);
  g_free(*out);
  *out = g_strdup(v->str);
  return TRUE;
}

/* Keyword `name` of a decorator call among `allowed`: an unknown one is an error naming it. */
static gboolean
keyword_known(Ctx *c, const TsLangNode *kw, const char *deco, const char *const *allowed, guint n)
{
  for (guint i = 0; i < n; i++)
    if (strcmp(kw->str, allowed[i]) == 0)
      return TRUE;
  g_autofree char *list = g_strjoinv(", ", (char **)allowed);
  g_autofree char *hint = did_you_mean(ts__suggest(kw->str, allowed, n), "'", "'");
  return fail(c, kw, "@%s has no argument '%s'%s (it takes %s)", deco, kw->str, hint, list);
}

static gboolean
autotune(Ctx *c, const TsLangNode *call, TsLangKernel *k)
{
  static const char *const allowed[] = {"space", "metric", "budget_ms", "cache", NULL};
  for (guint i = 1; i < call->kids->len; i++) {
    const TsLangNode *a = kid(call, i);
    if (a->kind != TS_LANG_KEYWORD)
      return fail(c, a, "@kernel.autotune takes name=value arguments (space=, metric=, "
                        "budget_ms=, cache=)");
    if (!keyword_known(c, a, "kernel.autotune", allowed, G_N_ELEMENTS(allowed) - 1))
      return FALSE;
    const TsLangNode *v = kid(a, 0);
    if (strcmp(a->str, "space") == 0) {
      g_autofree char *text = ts_lang_expr_to_source(v);
      g_autoptr(GError) e = NULL;
      g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text, &e);
      if (space == NULL) {
        g_autofree char *why = first_line(e);
        return fail(c, v, "the autotune space does not parse: %s", why);
      }
      g_free(k->space);
      k->space = ts_sched_space_to_string(space);
      k->space_node = v;
    } else if (strcmp(a->str, "metric") == 0) {
      if (!string(c, v, "metric", &k->metric))
        return FALSE;
      if (strcmp(k->metric, "latency_ms") != 0)
        return fail(c, v, "metric \"%s\" is not measured (the tuner ranks by \"latency_ms\")",
                    k->metric);
    } else if (strcmp(a->str, "budget_ms") == 0) {
      if (!number(c, v, "budget_ms", &k->budget_ms))
        return FALSE;
      if (!(k->budget_ms > 0))
        return fail(c, v, "budget_ms must be positive");
    } else if (!string(c, v, "cache", &k->cache)) {
      return FALSE;
    }
  }
  if (k->space == NULL)
    return fail(c, call, "@kernel.autotune needs space=dict(...) (the knobs to search)");
  return TRUE;
}

static gboolean
numerics(Ctx *c, const TsLangNode *call, TsLangKernel *k)
{
  static const char *const allowed[] = {"stable", "bounded", NULL};
  for (guint i = 1; i < call->kids->len; i++) {
    const TsLangNode *a = kid(call, i);
    if (a->kind != TS_LANG_KEYWORD)
      return fail(c, a, "@verify.numerics takes name=value arguments (stable=, bounded=)");
    if (!keyword_known(c, a, "verify.numerics", allowed, G_N_ELEMENTS(allowed) - 1))
      return FALSE;
    const TsLangNode *v = kid(a, 0);
    if (strcmp(a->str, "stable") == 0) {
      if (v->kind != TS_LANG_NAME || (strcmp(v->str, "True") && strcmp(v->str, "False")))
        return fail(c, v, "stable must be True or False");
      k->verify_stable = strcmp(v->str, "True") == 0;
    } else {
      if ((v->kind != TS_LANG_LIST && v->kind != TS_LANG_TUPLE) || v->kids->len != 2)
        return fail(c, v, "bounded must be [lo, hi]");
      if (!number(c, kid(v, 0), "bounded's lower end", &k->bound_lo) ||
          !number(c, kid(v, 1), "bounded's upper end", &k->bound_hi))
        return FALSE;
      if (!(k->bound_lo < k->bound_hi))
        return fail(c, v, "bounded's lower end must be below its upper end");
      k->bounded = TRUE;
    }
  }
  return TRUE;
}

static gboolean
decorator(Ctx *c, const TsLangNode *d, TsLangKernel *k, GHashTable *seen)
{
  const TsLangNode *callee = d->kind == TS_LANG_CALL ? kid(d, 0) : d;
  g_autofree char *name = dotted(callee);
  if (name == NULL)
    return fail(c, d, "a decorator is a name such as @kernel.autotune(...)");
  gboolean known = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(decorators); i++)
    known = known || strcmp(name, decorators[i]) == 0;
  if (!known) {
    g_autofree char *hint =
      did_you_mean(ts__suggest(name, decorators, G_N_ELEMENTS(decorators)), "@", "");
    return fail(c, d, "unknown decorator @%s%s (known: @kernel, @kernel.auto, "
                      "@kernel.autotune, @kernel.implements, @kernel.schedule, "
                      "@verify.numerics)",
                name, hint);
  }
  if (!g_hash_table_add(seen, g_strdup(name)))
    return fail(c, d, "@%s is given twice", name);
  const gboolean takes_args = strcmp(name, "kernel") != 0 && strcmp(name, "kernel.auto") != 0;
  if (d->kind != TS_LANG_CALL) {
    if (takes_args)
      return fail(c, d, "@%s needs arguments: @%s(...)", name, name);
    return TRUE;
  }
  if (!takes_args)
    return fail(c, d, "@%s takes no arguments", name);
  if (strcmp(name, "kernel.autotune") == 0)
    return autotune(c, d, k);
  if (strcmp(name, "verify.numerics") == 0)
    return numerics(c, d, k);
  if (d->kids->len != 2 || kid(d, 1)->kind == TS_LANG_KEYWORD)
    return fail(c, d, "@%s takes one argument", name);
  const TsLangNode *arg = kid(d, 1);
  if (strcmp(name, "kernel.implements") == 0)
    return string(c, arg, "the op's name", &k->implements);
  /* kernel.schedule: a point in the Schedule IR's syntax. */
  g_autofree char *text = ts_lang_expr_to_source(arg);
  g_autoptr(GError) e = NULL;
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(text, &e);
  if (point == NULL) {
    g_autofree char *why = first_line(e);
    return fail(c, arg, "the schedule does not parse as a point: %s", why);
  }
  k->schedule = ts_sched_point_to_string(point);
  k->schedule_node = arg;
  return TRUE;
}

/* ---- types ---- */

static const char *const scalar_types[] = {"f32", "f64", "f16", "bf16", "int", "bool", "float"};
static const char *const tensor_heads[] = {"Tensor", "KTile", "Tile"};

/* The dtype policy of an annotation as Graph IR text: bf16, `bf16 @accum(f32)`. */
static gboolean
policy_text(Ctx *c, const TsLangNode *n, GString *out)
{
  if (n->kind == TS_LANG_NAME) {
    g_string_append(out, n->str);
    return TRUE;
  }
  if (n->kind == TS_LANG_BINOP && strcmp(n->str, "@") == 0) {
    if (!policy_text(c, kid(n, 0), out))
      return FALSE;
    const TsLangNode *p = kid(n, 1);
    g_autofree char *ptext = ts_lang_expr_to_source(p);
    g_string_append_printf(out, " @%s", ptext);
    return TRUE;
  }
  return fail(c, n, "expected a dtype with policies, such as bf16 @accum(f32)");
}

/* Tensor["M", "K", bf16 @accum(f32)] (also KTile, Tile), or the seeds' short form f32[n]. */
static TsTensorType *
tensor_type(Ctx *c, const TsLangNode *ann)
{
  const TsLangNode *head = kid(ann, 0), *index = kid(ann, 1);
  if (head->kind != TS_LANG_NAME)
    return fail(c, head, "expected a tensor type such as Tensor[\"N\", f32]"), NULL;
  const gboolean short_form = g_strv_contains(scalar_types, head->str) &&
                              strcmp(head->str, "int") != 0 && strcmp(head->str, "bool") != 0;
  gboolean known = short_form;
  for (guint i = 0; i < G_N_ELEMENTS(tensor_heads); i++)
    known = known || strcmp(head->str, tensor_heads[i]) == 0;
  if (!known) {
    g_autofree char *hint =
      did_you_mean(ts__suggest(head->str, tensor_heads, G_N_ELEMENTS(tensor_heads)), "'", "'");
    fail(c, head, "unknown tensor type '%s'%s (Tensor[dims..., dtype], or dtype[dims...])",
         head->str, hint);
    return NULL;
  }
  const TsLangNode *one[1] = {index};
  const TsLangNode *const *it = (const TsLangNode *const *)one;
  guint n = 1;
  if (index->kind == TS_LANG_TUPLE) {
    it = (const TsLangNode *const *)index->kids->pdata;
    n = index->kids->len;
  }
  const guint n_dims = short_form ? n : n - 1;
  if (n_dims == 0 || n_dims > TS_MAX_RANK) {
    fail(c, index, "a tensor has 1 to %d dims, then its dtype (Tensor[\"M\", \"K\", bf16])",
         TS_MAX_RANK);
    return NULL;
  }
  g_autoptr(GString) text = g_string_new("Tensor[");
  for (guint i = 0; i < n_dims; i++) {
    const TsLangNode *d = it[i];
    if (d->kind == TS_LANG_STRING || (short_form && d->kind == TS_LANG_NAME))
      g_string_append_printf(text, "\"%s\", ", d->str);
    else if (d->kind == TS_LANG_INT)
      g_string_append_printf(text, "%.0f, ", d->num);
    else {
      fail(c, d, "a dim is a quoted name such as \"M\" or \"B*H\", or a number");
      return NULL;
    }
  }
  if (short_form)
    g_string_append(text, head->str);
  else if (!policy_text(c, it[n - 1], text))
    return NULL;
  g_string_append_c(text, ']');
  g_autoptr(GError) e = NULL;
  TsTensorType *t = ts_tensor_type_parse(text->str, &e);
  if (t == NULL) {
    g_autofree char *why = first_line(e);
    fail(c, short_form ? head : it[n - 1], "%s", why);
  }
  return t;
}

static void
param_free(TsLangParam *p)
{
  if (p == NULL)
    return;
  g_free(p->name);
  ts_tensor_type_free(p->tensor);
  g_free(p->scalar);
  g_free(p->default_source);
  g_free(p);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsLangParam, param_free)

static TsLangParam *
parameter(Ctx *c, const TsLangNode *p, gboolean keyword_only)
{
  g_autoptr(TsLangParam) out = g_new0(TsLangParam, 1);
  out->name = g_strdup(p->str);
  out->mut = (p->flags & TS_LANG_MUT) != 0;
  out->keyword_only = keyword_only;
  out->line = p->line;
  out->col = p->col;
  const TsLangNode *ann = kid(p, 0), *def = kid(p, 1);
  if (ann == NULL)
    return fail(c, p, "parameter '%s' needs a type: a tensor such as Tensor[\"N\", f32], or a "
                      "scalar (f32, int, bool ...)", p->str), NULL;
  if (ann->kind == TS_LANG_SUBSCRIPT) {
    out->tensor = tensor_type(c, ann);
    if (out->tensor == NULL)
      return NULL;
    if (def)
      return fail(c, def, "tensor parameter '%s' cannot have a default", p->str), NULL;
  } else if (ann->kind == TS_LANG_NAME && g_strv_contains(scalar_types, ann->str)) {
    if (out->mut)
      return fail(c, p, "scalar parameter '%s' cannot be mut: only tensors are written",
                  p->str), NULL;
    out->scalar = g_strdup(ann->str);
    if (def)
      out->default_source = ts_lang_expr_to_source(def);
  } else {
    g_autofree char *text = ts_lang_expr_to_source(ann);
    g_autofree char *hint = did_you_mean(
      ann->kind == TS_LANG_NAME ? ts__suggest(ann->str, scalar_types, G_N_ELEMENTS(scalar_types))
                                : NULL,
      "'", "'");
    return fail(c, ann, "parameter '%s': unknown type '%s'%s (tensors: Tensor[dims..., "
                        "dtype]; scalars: f32, f64, f16, bf16, int, bool, float)",
                p->str, text, hint), NULL;
  }
  return g_steal_pointer(&out);
}

void
ts_lang_kernel_free(TsLangKernel *k)
{
  if (k == NULL)
    return;
  g_free(k->name);
  if (k->params)
    g_ptr_array_free(k->params, TRUE);
  g_free(k->space);
  g_free(k->metric);
  g_free(k->cache);
  g_free(k->implements);
  g_free(k->schedule);
  if (k->bindings)
    g_ptr_array_free(k->bindings, TRUE);
  g_free(k);
}

/* ---- the body: names and intrinsics ---- */

typedef struct {
  const char *name;
  guint min_args, max_args;           /* positional */
  const char *const *keywords;        /* NULL-terminated; NULL for none */
} Intrinsic;

#define KW(...) ((const char *const[]){__VA_ARGS__, NULL})
static const Intrinsic intrinsics[] = {
  {"alloc_shared", 2, 2, KW("swizzle")},
  {"barrier", 0, 0, NULL},
  {"cast", 2, 2, NULL},
  {"col_index", 0, 1, NULL},
  {"context", 0, 0, NULL},
  {"cp_async", 2, 2, NULL},
  {"dot", 2, 2, KW("accum")},
  {"exp", 1, 1, NULL},
  {"full", 2, 3, NULL},
  {"linear_id", 0, 0, NULL},
  {"load", 1, 2, KW("rows", "cols", "index", "vector", "prefetch")},
  {"mask_causal", 1, 3, NULL},
  {"maximum", 2, 2, NULL},
  {"mma", 2, 2, KW("accum", "accumulator")},
  {"range", 1, 3, KW("step", "prefetch")},
  {"range_k", 2, 2, KW("prefetch")},
  {"range_n", 2, 2, KW("prefetch")},
  {"row_index", 0, 0, NULL},
  {"row_max", 1, 1, NULL},
  {"row_sum", 1, 1, NULL},
  {"rsqrt", 1, 1, NULL},
  {"softmax_accumulate", 7, 7, NULL},
  {"softmax_online", 1, 1, NULL},
  {"store", 1, 2, KW("index", "value", "rows", "cols")},
  {"transpose", 1, 1, NULL},
  {"zeros", 1, 2, NULL},
};
#undef KW

/* Names a body may use without defining them: the tile module, dtypes, constants, builtins. */
static const char *const builtins[] = {"tile", "ts", "f64", "f32", "tf32", "bf16", "f16",
                                       "fp8_e4m3", "fp8_e5m2", "int32", "int8", "INF", "None",
                                       "True", "False", "float", "int", "min", "max", "sqrt",
                                       "abs", "len"};

typedef struct {
  Ctx *c;
  GHashTable *names; /* defined so far (params, builtins, assignments, loop variables) */
} Scope;

static gboolean check_expr(Scope *s, const TsLangNode *n);

/* The intrinsic a callee names: tile.X or ts.tile.X; NULL (and *is_tile FALSE) otherwise. */
static const char *
intrinsic_name(const TsLangNode *callee, gboolean *is_tile)
{
  *is_tile = FALSE;
  if (callee->kind != TS_LANG_ATTR)
    return NULL;
  const TsLangNode *obj = kid(callee, 0);
  const gboolean tile = obj->kind == TS_LANG_NAME && strcmp(obj->str, "tile") == 0;
  const gboolean ts_tile = obj->kind == TS_LANG_ATTR && strcmp(obj->str, "tile") == 0 &&
                           kid(obj, 0)->kind == TS_LANG_NAME &&
                           strcmp(kid(obj, 0)->str, "ts") == 0;
  *is_tile = tile || ts_tile;
  return *is_tile ? callee->str : NULL;
}

static gboolean
check_intrinsic_call(Scope *s, const TsLangNode *call, const char *name)
{
  const Intrinsic *in = NULL;
  const char *names[G_N_ELEMENTS(intrinsics)];
  for (guint i = 0; i < G_N_ELEMENTS(intrinsics); i++) {
    names[i] = intrinsics[i].name;
    if (strcmp(name, intrinsics[i].name) == 0)
      in = &intrinsics[i];
  }
  const TsLangNode *callee = kid(call, 0);
  if (in == NULL) {
    g_autofree char *hint =
      did_you_mean(ts__suggest(name, names, G_N_ELEMENTS(names)), "tile.", "");
    return fail(s->c, callee, "unknown intrinsic tile.%s%s", name, hint);
  }
  guint positional = 0;
  for (guint i = 1; i < call->kids->len; i++) {
    const TsLangNode *a = kid(call, i);
    if (a->kind != TS_LANG_KEYWORD) {
      positional++;
      continue;
    }
    if (in->keywords == NULL || !g_strv_contains(in->keywords, a->str)) {
      g_autofree char *list = in->keywords ? g_strjoinv(", ", (char **)in->keywords) : NULL;
      g_autofree char *hint = did_you_mean(
        in->keywords ? ts__suggest(a->str, in->keywords, g_strv_length((char **)in->keywords))
                     : NULL,
        "'", "'");
      return fail(s->c, a, "tile.%s has no argument '%s'%s (%s%s)", name, a->str, hint,
                  list ? "it takes " : "it takes no keyword arguments", list ? list : "");
    }
  }
  if (positional < in->min_args || positional > in->max_args) {
    g_autofree char *want = in->min_args == in->max_args
                              ? g_strdup_printf("%u", in->min_args)
                              : g_strdup_printf("%u to %u", in->min_args, in->max_args);
    return fail(s->c, call, "tile.%s takes %s positional argument%s, not %u", name, want,
                in->max_args == 1 ? "" : "s", positional);
  }
  return TRUE;
}

static gboolean
check_name(Scope *s, const TsLangNode *n)
{
  if (g_hash_table_contains(s->names, n->str))
    return TRUE;
  g_autofree const char **known = (const char **)g_hash_table_get_keys_as_array(s->names, NULL);
  g_autofree char *hint =
    did_you_mean(ts__suggest(n->str, known, g_hash_table_size(s->names)), "'", "'");
  return fail(s->c, n, "name '%s' is not defined here%s", n->str, hint);
}

static gboolean
check_expr(Scope *s, const TsLangNode *n)
{
  if (n == NULL)
    return TRUE;
  switch (n->kind) {
  case TS_LANG_NAME:
    return check_name(s, n);
  case TS_LANG_CALL: {
    gboolean is_tile = FALSE;
    const char *name = intrinsic_name(kid(n, 0), &is_tile);
    if (is_tile) {
      if (!check_intrinsic_call(s, n, name))
        return FALSE;
    } else if (!check_expr(s, kid(n, 0))) {
      return FALSE;
    }
    for (guint i = 1; i < n->kids->len; i++)
      if (!check_expr(s, kid(n, i)))
        return FALSE;
    return TRUE;
  }
  case TS_LANG_ATTR: {
    gboolean is_tile = FALSE;
    if (intrinsic_name(n, &is_tile) && is_tile)
      return fail(s->c, n, "tile.%s is an intrinsic: call it, tile.%s(...)", n->str, n->str);
    if (kid(n, 0)->kind == TS_LANG_NAME && strcmp(kid(n, 0)->str, "ts") == 0)
      return TRUE; /* ts.f32, ts.tile: the module's names */
    return check_expr(s, kid(n, 0));
  }
  case TS_LANG_KEYWORD:
    return check_expr(s, kid(n, 0));
  default:
    for (guint i = 0; i < n->kids->len; i++)
      if (!check_expr(s, kid(n, i)))
        return FALSE;
    return TRUE;
  }
}

/* Names an assignment or loop defines; an attribute or subscript target only uses its object. */
static gboolean
define_targets(Scope *s, const TsLangNode *t)
{
  switch (t->kind) {
  case TS_LANG_NAME:
    g_hash_table_add(s->names, t->str);
    return TRUE;
  case TS_LANG_TUPLE:
    for (guint i = 0; i < t->kids->len; i++)
      if (!define_targets(s, kid(t, i)))
        return FALSE;
    return TRUE;
  default:
    return check_expr(s, t);
  }
}

static gboolean
check_block(Scope *s, const TsLangNode *block)
{
  for (guint i = 0; block && i < block->kids->len; i++) {
    const TsLangNode *st = kid(block, i);
    switch (st->kind) {
    case TS_LANG_ASSIGN:
      if (!check_expr(s, kid(st, 1)) || !define_targets(s, kid(st, 0)))
        return FALSE;
      break;
    case TS_LANG_AUGASSIGN:
      if (!check_expr(s, kid(st, 1)) || !check_expr(s, kid(st, 0)))
        return FALSE;
      break;
    case TS_LANG_FOR:
      if (!check_expr(s, kid(st, 1)) || !define_targets(s, kid(st, 0)) ||
          !check_block(s, kid(st, 2)))
        return FALSE;
      break;
    case TS_LANG_IF:
      /* Names defined in either branch are visible after it, as in Python. */
      if (!check_expr(s, kid(st, 0)) || !check_block(s, kid(st, 1)) ||
          !check_block(s, kid(st, 2)))
        return FALSE;
      break;
    case TS_LANG_RETURN:
    case TS_LANG_EXPR_STMT:
      if (!check_expr(s, kid(st, 0)))
        return FALSE;
      break;
    default:
      break;
    }
  }
  return TRUE;
}

TsLangKernel *
ts_lang_kernel_check(const TsLangNode *def, const char *src, const char *filename,
                     GError **error)
{
  g_return_val_if_fail(def != NULL && def->kind == TS_LANG_DEF, NULL);
  Ctx c = {src, filename, error};
  g_autoptr(TsLangKernel) k = g_new0(TsLangKernel, 1);
  k->name = g_strdup(def->str);
  k->def = def;
  k->metric = g_strdup("latency_ms");
  k->params = g_ptr_array_new_with_free_func((GDestroyNotify)param_free);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  const TsLangNode *decos = kid(def, 0), *params = kid(def, 1);
  for (guint i = 0; i < decos->kids->len; i++)
    if (!decorator(&c, kid(decos, i), k, seen))
      return NULL;
  gboolean keyword_only = FALSE;
  for (guint i = 0; i < params->kids->len; i++) {
    const TsLangNode *p = kid(params, i);
    if (p->kind == TS_LANG_STAR) {
      if (keyword_only)
        return fail(&c, p, "'*' is given twice"), NULL;
      keyword_only = TRUE;
      continue;
    }
    TsLangParam *out = parameter(&c, p, keyword_only);
    if (out == NULL)
      return NULL;
    g_ptr_array_add(k->params, out);
  }
  g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < G_N_ELEMENTS(builtins); i++)
    g_hash_table_add(names, (gpointer)builtins[i]);
  for (guint i = 0; i < k->params->len; i++)
    g_hash_table_add(names, ((TsLangParam *)g_ptr_array_index(k->params, i))->name);
  /* A knob of the space is a name the body may use (an integer). */
  g_autoptr(TsSchedSpace) space = k->space ? ts_sched_space_parse(k->space, NULL) : NULL;
  for (guint i = 0; space && i < ts_sched_space_n_knobs(space); i++)
    g_hash_table_add(names, (gpointer)ts_sched_space_knob_name(space, i));
  Scope scope = {&c, names};
  if (!check_block(&scope, kid(def, 3)) || !ts__lang_type_body(k, src, filename, error))
    return NULL;
  return g_steal_pointer(&k);
}

char *
ts_lang_param_to_string(const TsLangParam *p)
{
  g_autofree char *type = p->tensor ? ts_tensor_type_to_string(p->tensor) : g_strdup(p->scalar);
  return g_strdup_printf("%s%s: %s%s%s%s", p->keyword_only ? "*" : "", p->name,
                         p->mut ? "mut " : "", type, p->default_source ? " = " : "",
                         p->default_source ? p->default_source : "");
}
