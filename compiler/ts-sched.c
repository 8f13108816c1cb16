/* ts-sched.c — the TsSchedSpace object and the environment: construction, knobs and
 * constraints, canonical printing, size, and the index <-> point mapping (mixed radix, first
 * knob most significant). */
#include "ts-sched-private.h"

#include <string.h>

struct _TsSchedEnv {
  GHashTable *values; /* name -> gint64* */
};

TsSchedEnv *
ts_sched_env_new(void)
{
  TsSchedEnv *env = g_new0(TsSchedEnv, 1);
  env->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  return env;
}

void
ts_sched_env_free(TsSchedEnv *env)
{
  if (!env)
    return;
  g_hash_table_unref(env->values);
  g_free(env);
}

void
ts_sched_env_set(TsSchedEnv *env, const char *name, gint64 value)
{
  g_return_if_fail(env && name);
  g_hash_table_replace(env->values, g_strdup(name), g_memdup2(&value, sizeof value));
}

gboolean
ts_sched_env_get(const TsSchedEnv *env, const char *name, gint64 *value)
{
  if (!env || !name)
    return FALSE;
  const gint64 *v = g_hash_table_lookup(env->values, name);
  if (v && value)
    *value = *v;
  return v != NULL;
}

/* ---- values ---- */

gboolean
ts__sched_value_equal(TsSchedValue a, TsSchedValue b)
{
  if (a.kind != b.kind)
    return FALSE;
  return a.kind == TS_SCHED_INT ? a.i == b.i : a.s == b.s || g_strcmp0(a.s, b.s) == 0;
}

void
ts__sched_append_value(GString *s, TsSchedValue v)
{
  if (v.kind == TS_SCHED_INT) {
    g_string_append_printf(s, "%" G_GINT64_FORMAT, v.i);
    return;
  }
  g_string_append_c(s, '"');
  for (const char *p = v.s; *p; p++) {
    if (*p == '"' || *p == '\\')
      g_string_append_c(s, '\\');
    g_string_append_c(s, *p);
  }
  g_string_append_c(s, '"');
}

char *
ts__sched_value_to_string(TsSchedValue v)
{
  GString *s = g_string_new(NULL);
  ts__sched_append_value(s, v);
  return g_string_free(s, FALSE);
}

static void
append_values(GString *s, const TsKnobView *k)
{
  if (k->n == 1) {
    ts__sched_append_value(s, k->vals[0]);
    return;
  }
  g_string_append_c(s, '[');
  for (guint i = 0; i < k->n; i++) {
    if (i)
      g_string_append_c(s, ',');
    ts__sched_append_value(s, k->vals[i]);
  }
  g_string_append_c(s, ']');
}

void
ts__sched_print_knobs(GString *s, const TsKnobView *knobs, guint n)
{
  gboolean chained = n > 0;
  guint32 seen = 0;
  int prev = -1;
  for (guint i = 0; i < n && chained; i++) {
    int m = ts__sched_knob_method(knobs[i].name, NULL);
    if (m < 0 || (m != prev && (seen & (1u << m))))
      chained = FALSE;
    else
      seen |= 1u << m;
    prev = m;
  }
  if (!chained) {
    g_string_append(s, "dict(");
    for (guint i = 0; i < n; i++) {
      g_string_append_printf(s, "%s%s=", i ? ", " : "", knobs[i].name);
      append_values(s, &knobs[i]);
    }
    g_string_append_c(s, ')');
    return;
  }
  for (guint i = 0; i < n;) {
    guint arg;
    int m = ts__sched_knob_method(knobs[i].name, &arg);
    const TsSchedMethod *meth = &ts__sched_methods[m];
    g_string_append_printf(s, "%s%s(", i ? "." : "", meth->method);
    for (guint first = i; i < n && ts__sched_knob_method(knobs[i].name, &arg) == m; i++) {
      if (meth->arg[0])
        g_string_append_printf(s, "%s%s=", i > first ? ", " : "", meth->arg[arg]);
      append_values(s, &knobs[i]);
    }
    g_string_append_c(s, ')');
  }
}

/* ---- spaces ---- */

/* Knob names and string values are interned reference-counted strings (g_ref_string): equal
 * text is one pointer, so compiled constraints compare strings as integers, and a string no
 * space or point holds any more is freed (a process that parses for days does not grow). */
static void
release_values(GArray *values)
{
  for (guint i = 0; i < values->len; i++) {
    TsSchedValue *v = &g_array_index(values, TsSchedValue, i);
    if (v->kind == TS_SCHED_STR && v->s)
      g_ref_string_release((char *)v->s);
  }
  g_array_unref(values);
}

static void
knob_free(gpointer data)
{
  TsKnob *k = data;
  release_values(k->values);
  g_ref_string_release((char *)k->name);
  g_free(k);
}

TsSchedSpace *
ts__sched_space_new(void)
{
  TsSchedSpace *space = g_new0(TsSchedSpace, 1);
  space->knobs = g_ptr_array_new_with_free_func(knob_free);
  space->constraints = g_ptr_array_new_with_free_func((GDestroyNotify)ts__sched_expr_free);
  return space;
}

TsSchedSpace *
ts_sched_space_parse(const char *text, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  return ts__sched_parse_program(text, error);
}

void
ts_sched_space_free(TsSchedSpace *space)
{
  if (!space)
    return;
  g_ptr_array_unref(space->knobs);
  g_ptr_array_unref(space->constraints);
  g_free(space);
}

TsSchedSpace *
ts_sched_space_copy(const TsSchedSpace *space)
{
  g_return_val_if_fail(space != NULL, NULL);
  TsSchedSpace *c = ts__sched_space_new();
  for (guint i = 0; i < space->knobs->len; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    GArray *v = g_array_sized_new(FALSE, FALSE, sizeof(TsSchedValue), k->values->len);
    g_array_append_vals(v, k->values->data, k->values->len);
    ts__sched_space_set_knob_array(c, k->name, v);
  }
  for (guint i = 0; i < space->constraints->len; i++)
    ts__sched_space_add_expr(c, ts__sched_expr_copy(g_ptr_array_index(space->constraints, i)));
  return c;
}

char *
ts_sched_space_to_string(const TsSchedSpace *space)
{
  g_return_val_if_fail(space != NULL, NULL);
  guint n = space->knobs->len;
  g_autofree TsKnobView *views = g_new0(TsKnobView, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    views[i] = (TsKnobView){k->name, (const TsSchedValue *)k->values->data, k->values->len};
  }
  GString *s = g_string_new(NULL);
  ts__sched_print_knobs(s, views, n);
  for (guint i = 0; i < space->constraints->len; i++) {
    g_string_append(s, i ? ", " : ".where(");
    g_autofree char *e = ts__sched_expr_to_string(g_ptr_array_index(space->constraints, i));
    g_string_append(s, e);
  }
  if (space->constraints->len)
    g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}

guint
ts_sched_space_n_knobs(const TsSchedSpace *space)
{
  g_return_val_if_fail(space != NULL, 0);
  return space->knobs->len;
}

static const TsKnob *
knob_at(const TsSchedSpace *space, guint knob)
{
  g_return_val_if_fail(space != NULL && knob < space->knobs->len, NULL);
  return g_ptr_array_index(space->knobs, knob);
}

const char *
ts_sched_space_knob_name(const TsSchedSpace *space, guint knob)
{
  const TsKnob *k = knob_at(space, knob);
  return k ? k->name : NULL;
}

guint
ts_sched_space_n_values(const TsSchedSpace *space, guint knob)
{
  const TsKnob *k = knob_at(space, knob);
  return k ? k->values->len : 0;
}

TsSchedValue
ts_sched_space_value(const TsSchedSpace *space, guint knob, guint value_index)
{
  const TsKnob *k = knob_at(space, knob);
  g_return_val_if_fail(k && value_index < k->values->len, (TsSchedValue){0});
  return g_array_index(k->values, TsSchedValue, value_index);
}

int
ts_sched_space_knob_index(const TsSchedSpace *space, const char *name)
{
  g_return_val_if_fail(space != NULL && name != NULL, -1);
  for (guint i = 0; i < space->knobs->len; i++)
    if (strcmp(((const TsKnob *)g_ptr_array_index(space->knobs, i))->name, name) == 0)
      return (int)i;
  return -1;
}

guint
ts_sched_space_n_constraints(const TsSchedSpace *space)
{
  g_return_val_if_fail(space != NULL, 0);
  return space->constraints->len;
}

char *
ts_sched_space_constraint_to_string(const TsSchedSpace *space, guint i)
{
  g_return_val_if_fail(space != NULL && i < space->constraints->len, NULL);
  return ts__sched_expr_to_string(g_ptr_array_index(space->constraints, i));
}

void
ts__sched_space_add_expr(TsSchedSpace *space, TsExpr *e)
{
  g_ptr_array_add(space->constraints, e);
}

gboolean
ts_sched_space_add_constraint(TsSchedSpace *space, const char *expr, GError **error)
{
  g_return_val_if_fail(space != NULL && expr != NULL, FALSE);
  TsParser p = {0};
  if (!ts__sched_lex(&p, expr, error)) {
    ts__sched_parser_clear(&p);
    return FALSE;
  }
  g_autoptr(TsExpr) e = ts__sched_expr_parse(&p, error);
  gboolean ok = e != NULL;
  const TsTok *t = ts__sched_peek(&p, 0);
  if (ok && t->kind != TS_TOK_EOF) {
    char buf[64];
    ts__sched_error_at(error, TS_SCHED_ERROR_PARSE, expr, t->line, t->col,
                       "trailing garbage: unexpected %s after the constraint",
                       ts__sched_tok_describe(t, buf, sizeof buf));
    ok = FALSE;
  }
  ok = ok && ts__sched_expr_check(e, space, expr, error);
  ts__sched_parser_clear(&p);
  if (ok)
    ts__sched_space_add_expr(space, g_steal_pointer(&e));
  return ok;
}

/* Takes values (their strings are interned here: the caller's stay its own); replaces the knob
 * in place (keeping its index position) or appends it. */
void
ts__sched_space_set_knob_array(TsSchedSpace *space, const char *name, GArray *values)
{
  g_assert(values->len > 0);
  for (guint j = 0; j < values->len; j++) {
    TsSchedValue *v = &g_array_index(values, TsSchedValue, j);
    if (v->kind == TS_SCHED_STR)
      v->s = g_ref_string_new_intern(v->s);
  }
  int i = ts_sched_space_knob_index(space, name);
  TsKnob *k;
  if (i >= 0) {
    k = g_ptr_array_index(space->knobs, i);
    release_values(k->values);
  } else {
    k = g_new0(TsKnob, 1);
    k->name = g_ref_string_new_intern(name);
    g_ptr_array_add(space->knobs, k);
  }
  k->values = values;
  k->kind = g_array_index(values, TsSchedValue, 0).kind;
}

void
ts_sched_space_set_knob(TsSchedSpace *space, const char *name, const TsSchedValue *values,
                        guint n_values)
{
  g_return_if_fail(space != NULL && name != NULL && values != NULL && n_values > 0);
  GArray *v = g_array_sized_new(FALSE, FALSE, sizeof(TsSchedValue), n_values);
  for (guint i = 0; i < n_values; i++) {
    TsSchedValue x = values[i];
    if (x.kind != values[0].kind) {
      g_critical("ts_sched_space_set_knob: knob '%s' mixes integers and strings", name);
      g_array_unref(v);
      return;
    }
    g_array_append_val(v, x);
  }
  ts__sched_space_set_knob_array(space, name, v);
}

gboolean
ts_sched_space_size(const TsSchedSpace *space, guint64 *size)
{
  g_return_val_if_fail(space != NULL, FALSE);
  guint64 s = 1;
  for (guint i = 0; i < space->knobs->len; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    if (__builtin_mul_overflow(s, (guint64)k->values->len, &s)) {
      if (size)
        *size = G_MAXUINT64;
      return FALSE;
    }
  }
  if (size)
    *size = s;
  return TRUE;
}

TsSchedPoint *
ts_sched_space_point_at(const TsSchedSpace *space, guint64 index)
{
  g_return_val_if_fail(space != NULL, NULL);
  guint64 size;
  if (ts_sched_space_size(space, &size))
    g_return_val_if_fail(index < size, NULL);
  guint n = space->knobs->len;
  g_autofree guint *digit = g_new0(guint, MAX(n, 1));
  for (guint i = n; i-- > 0;) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    digit[i] = (guint)(index % k->values->len);
    index /= k->values->len;
  }
  TsSchedPoint *p = ts__sched_point_new_sized(n);
  for (guint i = 0; i < n; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    ts__sched_point_push_interned(p, k->name, g_array_index(k->values, TsSchedValue, digit[i]));
  }
  return p;
}

gboolean
ts_sched_space_index_of(const TsSchedSpace *space, const TsSchedPoint *point, guint64 *index)
{
  g_return_val_if_fail(space != NULL && point != NULL, FALSE);
  guint64 idx = 0;
  for (guint i = 0; i < space->knobs->len; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    const TsSchedValue *v = ts__sched_point_lookup(point, k->name);
    if (!v)
      return FALSE;
    guint j;
    for (j = 0; j < k->values->len; j++)
      if (ts__sched_value_equal(*v, g_array_index(k->values, TsSchedValue, j)))
        break;
    if (j == k->values->len)
      return FALSE;
    if (__builtin_mul_overflow(idx, (guint64)k->values->len, &idx) ||
        __builtin_add_overflow(idx, (guint64)j, &idx))
      return FALSE;
  }
  if (index)
    *index = idx;
  return TRUE;
}

TsSchedPoint *
ts_sched_space_complete(const TsSchedSpace *space, const TsSchedPoint *point, GError **error)
{
  g_return_val_if_fail(space != NULL && point != NULL, NULL);
  g_autoptr(TsSchedPoint) full = ts_sched_point_copy(point);
  for (guint i = 0; i < space->knobs->len; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    if (ts__sched_point_lookup(point, k->name))
      continue;
    if (k->values->len != 1) {
      g_autofree char *text = ts_sched_point_to_string(point);
      g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT,
                  "schedule: point %s lacks knob '%s', which the space gives %u values", text,
                  k->name, k->values->len);
      return NULL;
    }
    ts__sched_point_append(full, k->name, g_array_index(k->values, TsSchedValue, 0));
  }
  return g_steal_pointer(&full);
}

static gboolean
plan_check(TsSchedPlan *plan, const TsSchedPoint *point, gboolean *valid, GError **error)
{
  const TsSchedSpace *space = plan->space;
  for (guint d = 0; d < plan->n; d++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, d);
    const TsSchedValue *v = ts__sched_point_lookup(point, k->name);
    if (!v || v->kind != k->kind) {
      g_autofree char *text = ts_sched_point_to_string(point);
      g_set_error(error, TS_SCHED_ERROR, v ? TS_SCHED_ERROR_TYPE : TS_SCHED_ERROR_NOT_POINT,
                  "schedule: point %s %s knob '%s'", text,
                  v ? "has the wrong kind of value for" : "lacks", k->name);
      return FALSE;
    }
    /* A point's strings are interned like the space's (ts__sched_point_append). */
    plan->slots[d] = v->kind == TS_SCHED_INT ? v->i : (gint64)(gintptr)v->s;
  }
  for (int d = -1; d < (int)plan->n; d++) {
    int r = ts__sched_plan_check_depth(plan, d, error);
    if (r < 0)
      return FALSE;
    if (r == 0) {
      if (valid)
        *valid = FALSE;
      return TRUE;
    }
  }
  if (valid)
    *valid = TRUE;
  return TRUE;
}

gboolean
ts_sched_space_check(const TsSchedSpace *space, const TsSchedEnv *env, const TsSchedPoint *point,
                     gboolean *valid, GError **error)
{
  g_return_val_if_fail(space != NULL && point != NULL, FALSE);
  g_autoptr(TsSchedPlan) plan = ts__sched_plan_new(space, env, error);
  return plan && plan_check(plan, point, valid, error);
}

struct _TsSchedChecker {
  TsSchedPlan *plan;
};

TsSchedChecker *
ts_sched_checker_new(const TsSchedSpace *space, const TsSchedEnv *env, GError **error)
{
  g_return_val_if_fail(space != NULL, NULL);
  TsSchedPlan *plan = ts__sched_plan_new(space, env, error);
  if (!plan)
    return NULL;
  TsSchedChecker *checker = g_new(TsSchedChecker, 1);
  checker->plan = plan;
  return checker;
}

gboolean
ts_sched_checker_check(TsSchedChecker *checker, const TsSchedPoint *point, gboolean *valid,
                       GError **error)
{
  g_return_val_if_fail(checker != NULL && point != NULL, FALSE);
  return plan_check(checker->plan, point, valid, error);
}

void
ts_sched_checker_free(TsSchedChecker *checker)
{
  if (!checker)
    return;
  ts__sched_plan_free(checker->plan);
  g_free(checker);
}
