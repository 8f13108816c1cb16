/* test-sched.c — Schedule IR unit tests: print/parse round trips, the error table, enumeration
 * and counting against brute force on random spaces, sampling (distinct, deterministic,
 * uniform by chi-square), hashing, points and inheritance. */
#include "ts-sched.h"

#include <malloc.h>
#include <stdio.h>
#include <string.h>

static TsSchedSpace *
parse_ok(const char *text)
{
  g_autoptr(GError) error = NULL;
  TsSchedSpace *s = ts_sched_space_parse(text, &error);
  if (!s)
    g_error("parse failed for <%s>: %s", text, error->message);
  return s;
}

static gboolean
value_equal(TsSchedValue a, TsSchedValue b)
{
  return a.kind == b.kind && (a.kind == TS_SCHED_INT ? a.i == b.i : strcmp(a.s, b.s) == 0);
}

/* Structural equality through the public API: knobs in order, values, constraint texts. */
static void
assert_space_equal(const TsSchedSpace *a, const TsSchedSpace *b)
{
  g_assert_cmpuint(ts_sched_space_n_knobs(a), ==, ts_sched_space_n_knobs(b));
  for (guint k = 0; k < ts_sched_space_n_knobs(a); k++) {
    g_assert_cmpstr(ts_sched_space_knob_name(a, k), ==, ts_sched_space_knob_name(b, k));
    g_assert_cmpuint(ts_sched_space_n_values(a, k), ==, ts_sched_space_n_values(b, k));
    for (guint v = 0; v < ts_sched_space_n_values(a, k); v++)
      g_assert_true(value_equal(ts_sched_space_value(a, k, v), ts_sched_space_value(b, k, v)));
  }
  g_assert_cmpuint(ts_sched_space_n_constraints(a), ==, ts_sched_space_n_constraints(b));
  for (guint c = 0; c < ts_sched_space_n_constraints(a); c++) {
    g_autofree char *ca = ts_sched_space_constraint_to_string(a, c);
    g_autofree char *cb = ts_sched_space_constraint_to_string(b, c);
    g_assert_cmpstr(ca, ==, cb);
  }
}

static void
assert_round_trip(const TsSchedSpace *s)
{
  g_autofree char *text = ts_sched_space_to_string(s);
  g_autoptr(TsSchedSpace) again = parse_ok(text);
  assert_space_equal(s, again);
  g_autofree char *text2 = ts_sched_space_to_string(again);
  g_assert_cmpstr(text, ==, text2);
}

/* ---- round trips ---- */

static const struct {
  const char *input;
  const char *printed; /* expected canonical text, or NULL to check the round trip only */
} round_trips[] = {
    {"block(m=[64,128], n=[64,128], k=[64]).warps([4,8]).stages([2,3]).vector([4,8])",
     "block(m=[64,128], n=[64,128], k=64).warps([4,8]).stages([2,3]).vector([4,8])"},
    {"space=dict(BM=[128,256], stages=[2,3])", "block(m=[128,256]).stages([2,3])"},
    {"dict(BM=[64,128], BN=[64,96,128], BD=[64,128], warps=[4,8], stages=[2,3], vector=[4,8])",
     "dict(BM=[64,128], BN=[64,96,128], BD=[64,128], warps=[4,8], stages=[2,3], vector=[4,8])"},
    {"dict(BLOCK_M=[64, 128], BLOCK_N=[64, 128], num_warps=[4, 8], num_stages=[2, 3])", NULL},
    {"block(m=[64,128], n=[64,96,128], k=[64]).warps([4,8]).stages([2,3])\n"
     "  .vector([4,8]).swizzle([\"none\",\"xor\"])",
     "block(m=[64,128], n=[64,96,128], k=64).warps([4,8]).stages([2,3]).vector([4,8])"
     ".swizzle([\"none\",\"xor\"])"},
    {"block(m=128,n=128,k=64).warps(8).stages(3)", "block(m=128, n=128, k=64).warps(8).stages(3)"},
    {"block(128, 64).micro(m=[4,8], n=[4,8]).threads([128,256]).unroll([1,2,4])",
     "block(m=128, n=64).micro(m=[4,8], n=[4,8]).threads([128,256]).unroll([1,2,4])"},
    {"block(n=[64,128], m=[32,64])", "block(n=[64,128], m=[32,64])"},
    {"warps([4,8]).block(m=64).stages(2)", "warps([4,8]).block(m=64).stages(2)"},
    /* stages between two block knobs: chained form would reorder knobs, so dict form. */
    {"dict(BM=[1,2], stages=[2,3], BN=[4,8])", "dict(BM=[1,2], stages=[2,3], BN=[4,8])"},
    {"block(m=[64,128], k=[32,64]).stages([2,3,4])\n"
     "  .where(BM*BK*stages*2 <= 232448, M % BM == 0)",
     "block(m=[64,128], k=[32,64]).stages([2,3,4]).where(BM * BK * stages * 2 <= 232448, "
     "M % BM == 0)"},
    {"block(m=[64,128]).vector([2,4,8]).swizzle([\"none\",\"xor\"])"
     ".where(swizzle != \"xor\" || vector >= 4, (BM + 1) * 2 - -3 > 0 and not (BM == 3))",
     "block(m=[64,128]).vector([2,4,8]).swizzle([\"none\",\"xor\"]).where(swizzle != \"xor\" || "
     "vector >= 4, (BM + 1) * 2 - -3 > 0 && !(BM == 3))"},
    {"dict(a=[1,2]).where(a - (a - 1) > 0, (a - a) - 1 < 0, a / (2 * a) == 0, -(a + 1) < 0, "
     "!!a, min(a, max(1, a % 2)) >= 1, a < 2 == 1, a || a && a, (a || a) && a)",
     "dict(a=[1,2]).where(a - (a - 1) > 0, a - a - 1 < 0, a / (2 * a) == 0, -(a + 1) < 0, !!a, "
     "min(a, max(1, a % 2)) >= 1, a < 2 == 1, a || a && a, (a || a) && a)"},
    {"dict(x=[-9223372036854775808, 9223372036854775807, 0]).where(x > -9223372036854775808)",
     NULL},
    {"dict(s=[\"a\\\"b\", \"c\\\\d\"], t=1)", "dict(s=[\"a\\\"b\",\"c\\\\d\"], t=1)"},
    {"# a comment line\nblock(m=[64,128]) # trailing comment\n  .warps([4,8])",
     "block(m=[64,128]).warps([4,8])"},
    {"base = block(m=128,n=128,k=64).warps(8).stages(3)\nbase.with_block(64,64).with_warps(4)",
     "block(m=64, n=64, k=64).warps(4).stages(3)"},
    {"base = block(m=128,n=128,k=64).warps(8); small = base.with_block(64, 64, 32); "
     "small.warps([2,4]).where(BM * BN >= 4096)",
     "block(m=64, n=64, k=32).warps([2,4]).where(BM * BN >= 4096)"},
    {"a = dict(x=[1,2,3])\nb = a.where(x > 1)\nb.unroll([1,2])",
     "dict(x=[1,2,3], unroll=[1,2]).where(x > 1)"},
    {"block(m=64).warps(4).warps([8,16])", "block(m=64).warps([8,16])"},
    {"dict()", "dict()"},
    {"block(m=[64,128],).warps([4,8,],)", "block(m=[64,128]).warps([4,8])"},
};

static void
test_round_trip(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(round_trips); i++) {
    g_autoptr(TsSchedSpace) s = parse_ok(round_trips[i].input);
    g_autofree char *text = ts_sched_space_to_string(s);
    if (round_trips[i].printed)
      g_assert_cmpstr(text, ==, round_trips[i].printed);
    assert_round_trip(s);
    g_autoptr(TsSchedSpace) copy = ts_sched_space_copy(s);
    assert_space_equal(s, copy);
  }
}

/* ---- errors ---- */

static const struct {
  const char *input;
  TsSchedError code;
  int line, col;
  const char *substring;
} parse_errors[] = {
    {"block(m=[64,128]", TS_SCHED_ERROR_PARSE, 1, 17, "unbalanced parentheses"},
    {"block(m=[64,128)", TS_SCHED_ERROR_PARSE, 1, 16, "unbalanced brackets"},
    {"block(m=[64,128]))", TS_SCHED_ERROR_PARSE, 1, 18, "unbalanced parentheses"},
    {"warps([4,8", TS_SCHED_ERROR_PARSE, 1, 11, "unbalanced brackets"},
    {"block(m=[64,\n  128).warps(4)", TS_SCHED_ERROR_PARSE, 2, 6, "unbalanced brackets"},
    {"block(m=64).where((BM > 1)", TS_SCHED_ERROR_PARSE, 1, 27, "unbalanced"},
    {"block(m=[])", TS_SCHED_ERROR_PARSE, 1, 9, "empty list"},
    {"block(m=[64]).wraps([4,8])", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 15, "did you mean 'warps'?"},
    {"block(m=[64]).stagse([2])", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 15, "did you mean 'stages'?"},
    {"block(m=64).with_wraps(4)", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 13, "did you mean 'with_warps'?"},
    {"blok(m=64)", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 1, "did you mean 'block'?"},
    {"block(m=64).frobnicate(3)", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 13, "unknown knob 'frobnicate'"},
    {"base = block(m=64)\nbase.wraps(4)", TS_SCHED_ERROR_UNKNOWN_KNOB, 2, 6, "'warps'"},
    {"block(q=64)", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 7, "unknown argument 'q' of block()"},
    {"micro(m=4, k=4)", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 12, "unknown argument 'k' of micro()"},
    {"dict(a=[1,\"x\"])", TS_SCHED_ERROR_TYPE, 1, 11, "mixes integers and strings"},
    {"swizzle([\"xor\", 4])", TS_SCHED_ERROR_TYPE, 1, 17, "mixes integers and strings"},
    {"warps([4,8,4])", TS_SCHED_ERROR_PARSE, 1, 12, "duplicate value 4"},
    {"swizzle([\"a\",\"a\"])", TS_SCHED_ERROR_PARSE, 1, 14, "duplicate value \"a\""},
    {"dict(a=99999999999999999999)", TS_SCHED_ERROR_PARSE, 1, 8, "number too large"},
    {"block(m=9223372036854775808)", TS_SCHED_ERROR_PARSE, 1, 9, "number too large"},
    {"block(m=64).where(BM < 9223372036854775808)", TS_SCHED_ERROR_PARSE, 1, 24, "too large"},
    {"block(m=64) x", TS_SCHED_ERROR_PARSE, 1, 13, "trailing garbage"},
    {"block(m=64).warps(4) stages(2)", TS_SCHED_ERROR_PARSE, 1, 22, "trailing garbage"},
    {"dict(BM=[1], BN=[2], BM=[3])", TS_SCHED_ERROR_PARSE, 1, 22, "duplicate key 'BM'"},
    {"block(m=1, m=2)", TS_SCHED_ERROR_PARSE, 1, 12, "given twice"},
    {"dict(64)", TS_SCHED_ERROR_PARSE, 1, 6, "name=values"},
    {"block(m=64).where(BM / 0 > 1)", TS_SCHED_ERROR_EVAL, 1, 22, "division by zero"},
    {"block(m=64).where(BM % (2 - 2) == 0)", TS_SCHED_ERROR_EVAL, 1, 22, "division by zero"},
    {"block(m=64).where(BM < 9223372036854775807 + 1)", TS_SCHED_ERROR_EVAL, 1, 44, "overflow"},
    {"block(m=64).where(BM < -(-9223372036854775808))", TS_SCHED_ERROR_EVAL, 1, 24, "overflow"},
    {"block(m=64).where(swizzle + 1 > 0).swizzle(\"xor\")", TS_SCHED_ERROR_TYPE, 1, 27,
     "string operand of '+'"},
    {"block(m=64).where(BM == \"x\")", TS_SCHED_ERROR_TYPE, 1, 22, "compare a string"},
    {"block(m=64).where(\"x\")", TS_SCHED_ERROR_TYPE, 1, 19, "not a string"},
    {"warps(4).where(BM >)", TS_SCHED_ERROR_PARSE, 1, 20, "expected a number"},
    {"warps(4).where(foo(3) > 1)", TS_SCHED_ERROR_PARSE, 1, 16, "unknown function 'foo'"},
    {"", TS_SCHED_ERROR_PARSE, 1, 1, "empty schedule"},
    {"  # only a comment\n", TS_SCHED_ERROR_PARSE, 2, 1, "empty schedule"},
    {"warps(\"abc)", TS_SCHED_ERROR_PARSE, 1, 7, "unterminated string"},
    {"base.with_warps(4)", TS_SCHED_ERROR_PARSE, 1, 1, "unknown schedule 'base'"},
    {"bse = warps(4)\nbase.with_warps(8)", TS_SCHED_ERROR_PARSE, 2, 1, "did you mean 'bse'?"},
    {"block(m=64) @", TS_SCHED_ERROR_PARSE, 1, 13, "unexpected character '@'"},
    {"warps(4x)", TS_SCHED_ERROR_PARSE, 1, 8, "after a number"},
    {"warps()", TS_SCHED_ERROR_PARSE, 1, 1, "needs a value"},
    {"warps(4, 8)", TS_SCHED_ERROR_PARSE, 1, 10, "at most 1 argument"},
    {"block(m=4, 8)", TS_SCHED_ERROR_PARSE, 1, 12, "positional argument after"},
    {"warps(m=4)", TS_SCHED_ERROR_UNKNOWN_KNOB, 1, 7, "unknown argument 'm' of warps()"},
    {"= warps(4)", TS_SCHED_ERROR_PARSE, 1, 1, "expected a schedule"},
};

/* The message is "schedule:L:C: ...", then the source line, then a caret under column C. */
static void
assert_located(const GError *error, int line, int col)
{
  g_autofree char *prefix = g_strdup_printf("schedule:%d:%d: ", line, col);
  g_assert_true(g_str_has_prefix(error->message, prefix));
  g_auto(GStrv) lines = g_strsplit(error->message, "\n", -1);
  g_assert_cmpuint(g_strv_length(lines), ==, 3);
  g_assert_cmpuint(strlen(lines[2]), ==, (gsize)(2 + col));
  g_assert_cmpint(lines[2][1 + col], ==, '^');
}

static void
test_parse_errors(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(parse_errors); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsSchedSpace) s = ts_sched_space_parse(parse_errors[i].input, &error);
    if (s || !error || error->code != (int)parse_errors[i].code ||
        !strstr(error->message, parse_errors[i].substring))
      g_error("case %u <%s>: got %s (code %d)", i, parse_errors[i].input,
              error ? error->message : "success", error ? error->code : -1);
    g_assert_error(error, TS_SCHED_ERROR, (int)parse_errors[i].code);
    assert_located(error, parse_errors[i].line, parse_errors[i].col);
  }
}

static void
test_caret_source_line(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) s =
      ts_sched_space_parse("a = block(m=64)\na.warps(4)\n  .wraps([4,8])", &error);
  g_assert_null(s);
  g_assert_cmpstr(error->message, ==,
                  "schedule:3:4: unknown knob 'wraps'; did you mean 'warps'?\n"
                  "    .wraps([4,8])\n"
                  "     ^");
}

/* Errors that only evaluation can find: reported by counting, iteration and sampling alike. */
static const struct {
  const char *input;
  TsSchedError code;
  const char *substring;
} eval_errors[] = {
    {"block(m=[0,64]).where(M % BM == 0)", TS_SCHED_ERROR_EVAL,
     "division by zero in constraint 'M % BM == 0' at point block(m=0)"},
    {"block(m=[64,0]).where(M / BM > 1)", TS_SCHED_ERROR_EVAL, "division by zero"},
    {"block(m=[1,2]).where(BM * 9223372036854775807 > 0)", TS_SCHED_ERROR_EVAL,
     "integer overflow in constraint 'BM * 9223372036854775807 > 0' at point block(m=2)"},
    {"block(m=[1,2]).where(BM + HUGE > 0)", TS_SCHED_ERROR_EVAL, "integer overflow"},
    {"dict(x=[-9223372036854775808]).where(-x > 0)", TS_SCHED_ERROR_EVAL, "integer overflow"},
    {"dict(x=[-9223372036854775808]).where(x / -1 > 0)", TS_SCHED_ERROR_EVAL, "integer overflow"},
    {"block(m=[64]).where(Q > 1)", TS_SCHED_ERROR_EVAL, "unknown name 'Q'"},
};

static TsSchedEnv *
test_env(void)
{
  TsSchedEnv *env = ts_sched_env_new();
  ts_sched_env_set(env, "M", 4096);
  ts_sched_env_set(env, "N", 2048);
  ts_sched_env_set(env, "K", 1024);
  ts_sched_env_set(env, "HUGE", G_MAXINT64);
  ts_sched_env_set(env, "smem_bytes", 232448);
  return env;
}

static void
test_eval_errors(void)
{
  g_autoptr(TsSchedEnv) env = test_env();
  for (guint i = 0; i < G_N_ELEMENTS(eval_errors); i++) {
    g_autoptr(TsSchedSpace) s = parse_ok(eval_errors[i].input);
    g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;
    guint64 count = 0;
    g_assert_false(ts_sched_space_count_valid(s, env, &count, &e1));
    g_assert_error(e1, TS_SCHED_ERROR, (int)eval_errors[i].code);
    if (!strstr(e1->message, eval_errors[i].substring))
      g_error("case %u: message <%s> lacks <%s>", i, e1->message, eval_errors[i].substring);

    g_autoptr(TsSchedIter) it = ts_sched_iter_new(s, env);
    TsSchedPoint *p = NULL;
    gboolean got = TRUE;
    while (got) {
      got = ts_sched_iter_next(it, &p, &e2);
      ts_sched_point_free(p);
    }
    g_assert_error(e2, TS_SCHED_ERROR, (int)eval_errors[i].code);

    g_autoptr(GRand) rng = g_rand_new_with_seed(7);
    g_autoptr(GPtrArray) sample = ts_sched_space_sample(s, env, 2, rng, &e3);
    g_assert_null(sample);
    g_assert_error(e3, TS_SCHED_ERROR, (int)eval_errors[i].code);
  }
}

/* ---- enumeration against brute force on random spaces ---- */

static char *
random_arith(GRand *r, char **names, guint n, int depth)
{
  if (depth == 0 || g_rand_int_range(r, 0, 10) < 4) {
    if (g_rand_boolean(r))
      return g_strdup(names[g_rand_int_range(r, 0, (gint32)n)]);
    return g_strdup_printf("%d", g_rand_int_range(r, -3, 40));
  }
  g_autofree char *a = random_arith(r, names, n, depth - 1);
  static const char *const ops[] = {"+", "-", "*", "/", "%", "min", "max"};
  const char *op = ops[g_rand_int_range(r, 0, G_N_ELEMENTS(ops))];
  if (op[0] == '/' || op[0] == '%') {
    /* Knob values are >= 1, so a divisor that is a knob or a positive literal is safe. */
    g_autofree char *b = g_rand_boolean(r) ? g_strdup(names[g_rand_int_range(r, 0, (gint32)n)])
                                           : g_strdup_printf("%d", g_rand_int_range(r, 1, 7));
    return g_strdup_printf("(%s %s %s)", a, op, b);
  }
  g_autofree char *b = random_arith(r, names, n, depth - 1);
  if (op[0] == 'm')
    return g_strdup_printf("%s(%s, %s)", op, a, b);
  return g_strdup_printf("(%s %s %s)", a, op, b);
}

static char *
random_cond(GRand *r, char **names, guint n, gboolean with_str)
{
  static const char *const cmps[] = {"<", "<=", ">", ">=", "==", "!="};
  g_autofree char *a = random_arith(r, names, n, 2);
  g_autofree char *b = random_arith(r, names, n, 1);
  char *c = g_strdup_printf("%s %s %s", a, cmps[g_rand_int_range(r, 0, 6)], b);
  int shape = g_rand_int_range(r, 0, 5);
  if (shape == 1) {
    g_autofree char *old = c;
    c = g_strdup_printf("!(%s)", old);
  } else if (shape == 2 && with_str) {
    g_autofree char *old = c;
    c = g_strdup_printf("S %s \"y\" || %s", g_rand_boolean(r) ? "==" : "!=", old);
  } else if (shape == 3) {
    g_autofree char *old = c;
    g_autofree char *other = random_arith(r, names, n, 1);
    c = g_strdup_printf("%s and %s >= 5 or BMX > 100", old, other);
  }
  return c;
}

/* A random small space in dict form: 1-5 integer knobs of 1-4 distinct values in 1..16,
 * sometimes a string knob S, and 0-3 random constraints. */
static TsSchedSpace *
random_space(GRand *r)
{
  guint n = (guint)g_rand_int_range(r, 1, 6);
  gboolean with_str = g_rand_int_range(r, 0, 3) == 0;
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  GString *s = g_string_new("dict(");
  for (guint k = 0; k < n; k++) {
    g_ptr_array_add(names, g_strdup_printf("K%u", k));
    g_string_append_printf(s, "%sK%u=[", k ? ", " : "", k);
    guint nv = (guint)g_rand_int_range(r, 1, 5);
    guint32 used = 0;
    for (guint v = 0; v < nv;) {
      int x = g_rand_int_range(r, 1, 17);
      if (used & (1u << x))
        continue;
      used |= 1u << x;
      g_string_append_printf(s, "%s%d", v ? "," : "", x);
      v++;
    }
    g_string_append_c(s, ']');
    if (with_str && k == n / 2)
      g_string_append(s, ", S=[\"x\",\"y\",\"z\"]");
  }
  g_string_append(s, ", BMX=[1,200])");
  g_ptr_array_add(names, g_strdup("BMX"));
  guint nc = (guint)g_rand_int_range(r, 0, 4);
  for (guint c = 0; c < nc; c++) {
    g_autofree char *cond = random_cond(r, (char **)names->pdata, names->len, with_str);
    g_string_append_printf(s, "%s%s", c ? ", " : ".where(", cond);
  }
  if (nc)
    g_string_append_c(s, ')');
  g_autofree char *text = g_string_free(s, FALSE);
  return parse_ok(text);
}

static void
check_against_brute_force(const TsSchedSpace *s, const TsSchedEnv *env)
{
  guint64 size;
  g_assert_true(ts_sched_space_size(s, &size));
  g_autoptr(GArray) valid = g_array_new(FALSE, FALSE, sizeof(guint64));
  /* One checker for every point: it must answer as a fresh check of each. */
  g_autoptr(TsSchedChecker) checker = ts_sched_checker_new(s, env, NULL);
  g_assert_nonnull(checker);
  for (guint64 i = 0; i < size; i++) {
    g_autoptr(TsSchedPoint) p = ts_sched_space_point_at(s, i);
    guint64 back = G_MAXUINT64;
    g_assert_true(ts_sched_space_index_of(s, p, &back));
    g_assert_cmpuint(back, ==, i);
    gboolean ok = FALSE, prepared = !ok;
    g_autoptr(GError) error = NULL;
    g_assert_true(ts_sched_space_check(s, env, p, &ok, &error));
    g_assert_no_error(error);
    g_assert_true(ts_sched_checker_check(checker, p, &prepared, &error));
    g_assert_no_error(error);
    g_assert_cmpint(prepared, ==, ok);
    if (ok)
      g_array_append_val(valid, i);
  }
  guint64 count = G_MAXUINT64;
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_sched_space_count_valid(s, env, &count, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(count, ==, valid->len);

  /* The iterator yields exactly the valid points, in index order. */
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(s, env);
  TsSchedPoint *p;
  guint seen = 0;
  while (ts_sched_iter_next(it, &p, &error)) {
    guint64 idx;
    g_assert_true(ts_sched_space_index_of(s, p, &idx));
    g_assert_cmpuint(seen, <, valid->len);
    g_assert_cmpuint(idx, ==, g_array_index(valid, guint64, seen));
    seen++;
    ts_sched_point_free(p);
  }
  g_assert_no_error(error);
  g_assert_cmpuint(seen, ==, valid->len);
  g_assert_false(ts_sched_iter_next(it, &p, &error)); /* stays exhausted */
  g_assert_null(p);

  /* Sampling returns distinct valid points, all of them when asked for more than exist. */
  g_autoptr(GRand) rng = g_rand_new_with_seed((guint32)size);
  guint want = valid->len ? (guint)g_rand_int_range(rng, 1, (gint32)valid->len + 3) : 1;
  g_autoptr(GPtrArray) sample = ts_sched_space_sample(s, env, want, rng, &error);
  if (valid->len == 0) {
    g_assert_null(sample);
    g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EMPTY);
    return;
  }
  g_assert_no_error(error);
  g_assert_cmpuint(sample->len, ==, MIN(want, valid->len));
  g_autoptr(GHashTable) distinct = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < sample->len; i++) {
    gboolean ok = FALSE;
    g_assert_true(ts_sched_space_check(s, env, sample->pdata[i], &ok, NULL));
    g_assert_true(ok);
    g_assert_true(g_hash_table_add(distinct, (gpointer)ts_sched_point_hash(sample->pdata[i])));
  }
}

static void
test_enumeration_brute_force(void)
{
  g_autoptr(GRand) r = g_rand_new_with_seed(20261123);
  g_autoptr(TsSchedEnv) env = test_env();
  guint nonempty = 0, partial = 0;
  for (guint i = 0; i < 300; i++) {
    g_autoptr(TsSchedSpace) s = random_space(r);
    assert_round_trip(s);
    check_against_brute_force(s, env);
    guint64 size, count;
    ts_sched_space_size(s, &size);
    ts_sched_space_count_valid(s, env, &count, NULL);
    nonempty += count > 0;
    partial += count > 0 && count < size;
  }
  /* The generator must exercise pruning, not only trivially true or false constraints. */
  g_assert_cmpuint(nonempty, >, 100);
  g_assert_cmpuint(partial, >, 50);
}

static void
test_env_constraints(void)
{
  g_autoptr(TsSchedSpace) s =
      parse_ok("block(m=[64,128,256]).where(M >= 4096, BM <= smem_bytes / 1000)");
  g_autoptr(TsSchedEnv) env = test_env();
  guint64 count;
  g_assert_true(ts_sched_space_count_valid(s, env, &count, NULL));
  g_assert_cmpuint(count, ==, 2);
  ts_sched_env_set(env, "M", 100);
  gint64 m = 0;
  g_assert_true(ts_sched_env_get(env, "M", &m));
  g_assert_cmpint(m, ==, 100);
  g_assert_false(ts_sched_env_get(env, "nope", &m));
  g_assert_true(ts_sched_space_count_valid(s, env, &count, NULL));
  g_assert_cmpuint(count, ==, 0);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(s, env);
  TsSchedPoint *p = NULL;
  g_autoptr(GError) error = NULL;
  g_assert_false(ts_sched_iter_next(it, &p, &error));
  g_assert_no_error(error);
  g_autoptr(GRand) rng = g_rand_new_with_seed(1);
  g_autoptr(GPtrArray) none = ts_sched_space_sample(s, env, 3, rng, &error);
  g_assert_null(none);
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EMPTY);
}

static void
test_size_overflow(void)
{
  GString *t = g_string_new("dict(");
  for (int k = 0; k < 20; k++)
    g_string_append_printf(t, "%sk%d=[1,2,3,4,5,6,7,8,9,10]", k ? ", " : "", k);
  g_string_append(t, ")");
  g_autofree char *text = g_string_free(t, FALSE);
  g_autoptr(TsSchedSpace) s = parse_ok(text);
  guint64 size = 0;
  g_assert_false(ts_sched_space_size(s, &size)); /* 10^20 > 2^64 */
  g_assert_cmpuint(size, ==, G_MAXUINT64);
  g_autoptr(GError) error = NULL;
  guint64 count;
  g_assert_false(ts_sched_space_count_valid(s, NULL, &count, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL);
  /* Sampling still works: draws are per digit, never through a 64-bit index. */
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  g_autoptr(GPtrArray) sample = ts_sched_space_sample(s, NULL, 5, rng, NULL);
  g_assert_nonnull(sample);
  g_assert_cmpuint(sample->len, ==, 5);

  g_autoptr(TsSchedSpace) fits = parse_ok("dict(a=[1,2,3], b=[1,2]).where(a != 2)");
  g_assert_true(ts_sched_space_size(fits, &size));
  g_assert_cmpuint(size, ==, 6);
}

/* 10^7 points, constraints on the first and the last knob so pruning and leaf checks both run;
 * compared with nested loops written out here. */
static void
test_count_ten_million(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok(
      "block(m=[16,32,48,64,96,128,160,192,224,256], n=[16,32,48,64,96,128,160,192,224,256],\n"
      "      k=[8,16,24,32,40,48,56,64,96,128])\n"
      "  .warps([1,2,3,4,5,6,7,8,12,16]).stages([1,2,3,4,5,6,7,8,9,10])\n"
      "  .vector([1,2,3,4,5,6,7,8,12,16]).unroll([1,2,3,4,5,6,7,8,9,10])\n"
      "  .where(M % BM == 0, N % BN == 0, (BM + BN) * BK * stages * 2 <= smem_bytes,\n"
      "         BM * BN / (warps * 32) >= vector * unroll, K % (BK * unroll) == 0 || unroll == 1)");
  g_autoptr(TsSchedEnv) env = test_env();
  guint64 size;
  g_assert_true(ts_sched_space_size(s, &size));
  g_assert_cmpuint(size, ==, 10000000);

  gint64 t0 = g_get_monotonic_time();
  guint64 count = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_sched_space_count_valid(s, env, &count, &error));
  g_assert_no_error(error);
  gint64 t1 = g_get_monotonic_time();

  static const gint64 bm[] = {16, 32, 48, 64, 96, 128, 160, 192, 224, 256};
  static const gint64 bk[] = {8, 16, 24, 32, 40, 48, 56, 64, 96, 128};
  static const gint64 wv[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16};
  guint64 expect = 0;
  for (int a = 0; a < 10; a++)
    for (int b = 0; b < 10; b++)
      for (int c = 0; c < 10; c++)
        for (int w = 0; w < 10; w++)
          for (int st = 1; st <= 10; st++)
            for (int v = 0; v < 10; v++)
              for (int u = 1; u <= 10; u++)
                expect += 4096 % bm[a] == 0 && 2048 % bm[b] == 0 &&
                          (bm[a] + bm[b]) * bk[c] * st * 2 <= 232448 &&
                          bm[a] * bm[b] / (wv[w] * 32) >= wv[v] * u &&
                          (1024 % (bk[c] * u) == 0 || u == 1);
  g_assert_cmpuint(count, ==, expect);
  g_assert_cmpuint(count, >, 0);
  g_test_message("counted %" G_GUINT64_FORMAT " valid of 10^7 points in %.1f ms", count,
                 (t1 - t0) / 1000.0);

  g_autoptr(TsSchedIter) it = ts_sched_iter_new(s, env);
  TsSchedPoint *p;
  guint64 iterated = 0;
  while (ts_sched_iter_next(it, &p, &error)) {
    iterated++;
    ts_sched_point_free(p);
  }
  g_assert_no_error(error);
  g_assert_cmpuint(iterated, ==, expect);
  g_test_message("iterated them in %.1f ms", (g_get_monotonic_time() - t1) / 1000.0);
}

/* Knobs that share no constraint are counted group by group: 10^7 points in the groups {a, b},
 * {c, d, e} and {f, g}, counted as nested loops over each group count them. An empty group makes
 * the space empty however many points the others have (no overflow error), and the groups are
 * counted in the order of their first knob: one that cannot be evaluated (a division by zero)
 * is an error, unless a group before it is empty; a product past 64 bits is an error. (Walked
 * as one group, the 10^20 points before z's empty one would never be counted.) */
static void
test_count_groups(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok(
      "dict(a=[1,2,3,4,5,6,7,8,9,10], b=[1,2,3,4,5,6,7,8,9,10], c=[1,2,3,4,5,6,7,8,9,10],"
      " d=[1,2,3,4,5,6,7,8,9,10], e=[1,2,3,4,5,6,7,8,9,10], f=[1,2,3,4,5,6,7,8,9,10],"
      " g=[1,2,3,4,5,6,7,8,9,10]).where(a * b <= 60, c + d + e >= 8, (f * g) % 3 != 1)");
  guint64 ab = 0, cde = 0, fg = 0;
  for (int x = 1; x <= 10; x++)
    for (int y = 1; y <= 10; y++) {
      ab += x * y <= 60;
      fg += (x * y) % 3 != 1;
      for (int z = 1; z <= 10; z++)
        cde += x + y + z >= 8;
    }
  guint64 count = 0;
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_sched_space_count_valid(s, NULL, &count, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(count, ==, ab * cde * fg);

  GString *t = g_string_new("dict(");
  for (int k = 0; k < 20; k++)
    g_string_append_printf(t, "k%d=[1,2,3,4,5,6,7,8,9,10], ", k);
  g_autofree char *free20 = g_string_free(t, FALSE);
  static const struct {
    const char *tail; /* after the 20 free knobs of 10 values each (10^20 points) */
    gboolean ok;
    guint64 count;
    const char *says;
  } cases[] = {
      {"z=[1,2]).where(z > 5)", TRUE, 0, NULL},
      {"z=[1,2]).where(z > 1)", FALSE, 0, "overflows 64 bits"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *text = g_strconcat(free20, cases[i].tail, NULL);
    g_autoptr(TsSchedSpace) big = parse_ok(text);
    g_autoptr(GError) e = NULL;
    count = 7;
    g_assert_cmpint(ts_sched_space_count_valid(big, NULL, &count, &e), ==, cases[i].ok);
    if (cases[i].ok)
      g_assert_cmpuint(count, ==, cases[i].count);
    else
      g_assert_true(e != NULL && strstr(e->message, cases[i].says) != NULL);
  }
  g_autoptr(TsSchedSpace) empty_first = parse_ok("dict(a=[1,2], b=[0,1]).where(a > 5, 10 / b > 1)");
  g_assert_true(ts_sched_space_count_valid(empty_first, NULL, &count, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(count, ==, 0);
  g_autoptr(TsSchedSpace) error_first = parse_ok("dict(b=[0,1], a=[1,2]).where(a > 5, 10 / b > 1)");
  g_assert_false(ts_sched_space_count_valid(error_first, NULL, &count, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL);
  g_assert_nonnull(strstr(error->message, "division by zero"));
}

/* ---- sampling ---- */

static void
test_sample_determinism(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok(
      "block(m=[32,64,128,256], n=[32,64,128,256], k=[16,32,64]).warps([2,4,8]).stages([2,3,4])"
      ".where(BM * BN / (warps * 32) >= 16)");
  g_autoptr(GRand) r1 = g_rand_new_with_seed(99);
  g_autoptr(GRand) r2 = g_rand_new_with_seed(99);
  g_autoptr(GRand) r3 = g_rand_new_with_seed(100);
  g_autoptr(GPtrArray) a = ts_sched_space_sample(s, NULL, 20, r1, NULL);
  g_autoptr(GPtrArray) b = ts_sched_space_sample(s, NULL, 20, r2, NULL);
  g_autoptr(GPtrArray) c = ts_sched_space_sample(s, NULL, 20, r3, NULL);
  g_assert_cmpuint(a->len, ==, 20);
  g_assert_cmpuint(b->len, ==, 20);
  guint same_as_other_seed = 0;
  g_autoptr(GHashTable) distinct = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < 20; i++) {
    g_assert_true(ts_sched_point_equal(a->pdata[i], b->pdata[i]));
    same_as_other_seed += ts_sched_point_equal(a->pdata[i], c->pdata[i]);
    g_assert_true(g_hash_table_add(distinct, (gpointer)ts_sched_point_hash(a->pdata[i])));
  }
  g_assert_cmpuint(same_as_other_seed, <, 20);
}

/* Chi-square of n=1 draws against the uniform distribution over the valid points. */
static void
check_uniform(const char *text, guint expect_valid, guint draws_per_point, double critical)
{
  g_autoptr(TsSchedSpace) s = parse_ok(text);
  guint64 size, valid;
  g_assert_true(ts_sched_space_size(s, &size));
  g_assert_true(ts_sched_space_count_valid(s, NULL, &valid, NULL));
  g_assert_cmpuint(valid, ==, expect_valid);
  g_autofree guint *hits = g_new0(guint, size);
  g_autoptr(GRand) rng = g_rand_new_with_seed(4242);
  guint draws = draws_per_point * expect_valid;
  for (guint t = 0; t < draws; t++) {
    g_autoptr(GPtrArray) one = ts_sched_space_sample(s, NULL, 1, rng, NULL);
    g_assert_cmpuint(one->len, ==, 1);
    guint64 idx;
    g_assert_true(ts_sched_space_index_of(s, one->pdata[0], &idx));
    hits[idx]++;
  }
  double chi = 0, e = draws_per_point;
  guint nonzero = 0;
  for (guint64 i = 0; i < size; i++) {
    if (!hits[i])
      continue;
    nonzero++;
    chi += (hits[i] - e) * (hits[i] - e) / e;
  }
  g_assert_cmpuint(nonzero, ==, expect_valid); /* every valid point drawn, nothing else */
  g_test_message("%s: chi-square %.2f (critical %.2f, %u dof)", text, chi, critical,
                 expect_valid - 1);
  g_assert_cmpfloat(chi, <, critical);
}

static void
test_sample_uniform(void)
{
  /* High acceptance (10 of 16): rejection sampling. BM <= BN makes the valid set lopsided per
   * first digit, so picking digits one by one would fail this. Critical values: p = 0.001. */
  check_uniform("block(m=[1,2,3,4], n=[1,2,3,4]).where(BM <= BN)", 10, 400, 27.88);
  /* 30 of 2000 valid: the enumeration fallback. */
  check_uniform("dict(a=[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20],"
                "b=[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20], c=[1,2,3,4,5])"
                ".where(a + b + c == 10)",
                30, 100, 59.70);
}

static void
test_sample_low_acceptance(void)
{
  g_autoptr(TsSchedSpace) s =
      parse_ok("dict(a=[1,2,3,4,5,6,7,8,9,10], b=[1,2,3,4,5,6,7,8,9,10], c=[1,2,3,4,5,6,7,8,9,10])"
               ".where(a == b, b == c, a % 3 == 0)");
  g_autoptr(GRand) rng = g_rand_new_with_seed(5);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) all = ts_sched_space_sample(s, NULL, 10, rng, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(all->len, ==, 3); /* (3,3,3), (6,6,6), (9,9,9) */
  g_autoptr(GHashTable) distinct = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < all->len; i++) {
    gint64 a = ts_sched_point_get_int(all->pdata[i], "a", -1);
    g_assert_cmpint(a % 3, ==, 0);
    g_assert_cmpint(ts_sched_point_get_int(all->pdata[i], "c", -1), ==, a);
    g_assert_true(g_hash_table_add(distinct, (gpointer)ts_sched_point_hash(all->pdata[i])));
  }
  g_autoptr(GPtrArray) zero = ts_sched_space_sample(s, NULL, 0, rng, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(zero->len, ==, 0);
}

/* ---- points and hashes ---- */

static TsSchedPoint *
point_ok(const char *text)
{
  g_autoptr(GError) error = NULL;
  TsSchedPoint *p = ts_sched_point_parse(text, &error);
  if (!p)
    g_error("point parse failed for <%s>: %s", text, error->message);
  return p;
}

static void
test_hash(void)
{
  static const char *const same[] = {
      "block(m=128,n=128,k=64).warps(8).stages(3).swizzle(\"xor\")",
      "dict(swizzle=[\"xor\"], stages=3, warps=[8], BK=64, BN=128, BM=128)",
      "stages(3).swizzle(\"xor\").block(k=64, n=128, m=128).warps(8)",
      ("base = block(m=64,n=64,k=64).warps(4).stages(3).swizzle(\"none\")\n"
       "base.with_block(128, 128).with_warps(8).swizzle(\"xor\")"),
  };
  g_autoptr(TsSchedPoint) first = point_ok(same[0]);
  g_autofree char *canon = ts_sched_point_to_string(first);
  g_assert_cmpstr(canon, ==, "block(m=128, n=128, k=64).warps(8).stages(3).swizzle(\"xor\")");
  const char *h = ts_sched_point_hash(first);
  g_assert_cmpuint(strlen(h), ==, 16);
  for (const char *c = h; *c; c++)
    g_assert_true(g_ascii_isdigit(*c) || (*c >= 'a' && *c <= 'f'));
  g_autofree char *sha = g_compute_checksum_for_string(G_CHECKSUM_SHA256, canon, -1);
  g_assert_true(strncmp(sha, h, 16) == 0);
  /* Pinned: the hash names points in the DB, so it must never drift between versions. */
  g_assert_cmpstr(h, ==, "ae0bfa4cf259fb9e");
  for (guint i = 1; i < G_N_ELEMENTS(same); i++) {
    g_autoptr(TsSchedPoint) p = point_ok(same[i]);
    g_assert_cmpstr(ts_sched_point_hash(p), ==, h);
    g_assert_true(ts_sched_point_equal(p, first));
  }

  /* Every point of a space hashes differently, and differs from the point above. */
  g_autoptr(TsSchedSpace) s =
      parse_ok("block(m=[64,128], n=[64,128], k=[32,64]).warps([4,8]).stages(3)"
               ".swizzle([\"none\",\"xor\"]).threads([128,256])");
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_add(seen, g_strdup(h));
  guint64 size;
  g_assert_true(ts_sched_space_size(s, &size));
  for (guint64 i = 0; i < size; i++) {
    g_autoptr(TsSchedPoint) p = ts_sched_space_point_at(s, i);
    g_assert_true(g_hash_table_add(seen, g_strdup(ts_sched_point_hash(p))));
    g_assert_false(ts_sched_point_equal(p, first));
  }
  g_assert_cmpuint(g_hash_table_size(seen), ==, size + 1);
}

static void
test_point_api(void)
{
  g_autoptr(TsSchedPoint) p = point_ok("block(m=128, n=64).warps(4).swizzle(\"xor\")");
  g_assert_cmpuint(ts_sched_point_n_knobs(p), ==, 4);
  g_assert_cmpstr(ts_sched_point_knob_name(p, 0), ==, "BM");
  g_assert_cmpint(ts_sched_point_knob_value(p, 1).i, ==, 64);
  g_assert_true(ts_sched_point_has(p, "warps"));
  g_assert_false(ts_sched_point_has(p, "stages"));
  g_assert_cmpint(ts_sched_point_get_int(p, "BM", -1), ==, 128);
  g_assert_cmpint(ts_sched_point_get_int(p, "stages", -1), ==, -1);
  g_assert_cmpint(ts_sched_point_get_int(p, "swizzle", -7), ==, -7);
  g_assert_cmpstr(ts_sched_point_get_str(p, "swizzle", NULL), ==, "xor");
  g_assert_cmpstr(ts_sched_point_get_str(p, "BM", "dflt"), ==, "dflt");

  const char *h1 = g_intern_string(ts_sched_point_hash(p));
  g_autoptr(TsSchedPoint) copy = ts_sched_point_copy(p);
  g_assert_true(ts_sched_point_equal(p, copy));
  ts_sched_point_set_int(copy, "warps", 8);
  g_assert_false(ts_sched_point_equal(p, copy));
  g_assert_cmpstr(ts_sched_point_hash(copy), !=, h1); /* set invalidates the cached hash */
  ts_sched_point_set_int(copy, "warps", 4);
  g_assert_cmpstr(ts_sched_point_hash(copy), ==, h1);
  ts_sched_point_set_str(copy, "layout", "row");
  g_autofree char *text = ts_sched_point_to_string(copy);
  g_assert_cmpstr(text, ==, "dict(BM=128, BN=64, warps=4, swizzle=\"xor\", layout=\"row\")");
  g_autoptr(TsSchedPoint) back = point_ok(text);
  g_assert_true(ts_sched_point_equal(back, copy));

  g_autoptr(TsSchedPoint) built = ts_sched_point_new();
  ts_sched_point_set_int(built, "warps", 4);
  ts_sched_point_set_int(built, "BN", 64);
  ts_sched_point_set_str(built, "swizzle", "xor");
  ts_sched_point_set_int(built, "BM", 128);
  g_assert_cmpstr(ts_sched_point_hash(built), ==, h1);

  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedPoint) many = ts_sched_point_parse("block(m=[64,128])", &error);
  g_assert_null(many);
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT);
  g_assert_nonnull(strstr(error->message, "'BM' has 2 values"));
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) bad = ts_sched_point_parse("block(m=[64", &error);
  g_assert_null(bad);
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_PARSE);

  /* Destructors accept NULL. */
  ts_sched_point_free(NULL);
  ts_sched_space_free(NULL);
  ts_sched_env_free(NULL);
  ts_sched_iter_free(NULL);
  g_assert_true(ts_sched_point_equal(NULL, NULL));
  g_assert_false(ts_sched_point_equal(p, NULL));
}

/* A schedule stored before a knob existed, read in a space that fixes the knob to one value */
static void
test_complete_point(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok("block(m=[64,128]).vector(8).walk(\"panels\")");
  g_autoptr(TsSchedPoint) old = point_ok("block(m=128)");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedPoint) full = ts_sched_space_complete(s, old, &error);
  g_assert_no_error(error);
  g_autofree char *text = ts_sched_point_to_string(full);
  g_assert_cmpstr(text, ==, "block(m=128).vector(8).walk(\"panels\")");
  guint64 idx = 0;
  g_assert_false(ts_sched_space_index_of(s, old, &idx));
  g_assert_true(ts_sched_space_index_of(s, full, &idx));
  g_assert_cmpuint(idx, ==, 1);
  /* the point itself is not changed, and a complete point comes back equal */
  g_autofree char *old_text = ts_sched_point_to_string(old);
  g_assert_cmpstr(old_text, ==, "block(m=128)");
  g_autoptr(TsSchedPoint) again = ts_sched_space_complete(s, full, &error);
  g_assert_no_error(error);
  g_assert_true(ts_sched_point_equal(again, full));
  /* a value outside the space stays (index_of rejects it), a knob the space lacks stays */
  g_autoptr(TsSchedPoint) extra = point_ok("block(m=96).unroll(4)");
  g_autoptr(TsSchedPoint) extra_full = ts_sched_space_complete(s, extra, &error);
  g_assert_no_error(error);
  g_autofree char *extra_text = ts_sched_point_to_string(extra_full);
  g_assert_cmpstr(extra_text, ==, "block(m=96).vector(8).unroll(4).walk(\"panels\")");
  g_assert_false(ts_sched_space_index_of(s, extra_full, &idx));
  /* a knob of several values cannot be guessed */
  g_autoptr(TsSchedPoint) no_block = point_ok("vector(8)");
  g_assert_null(ts_sched_space_complete(s, no_block, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT);
  g_assert_nonnull(strstr(error->message, "'BM'"));
}

static void
test_check_point(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok("block(m=[64,128]).swizzle([\"none\",\"xor\"])"
                                       ".where(swizzle == \"none\" || BM > 64)");
  g_autoptr(TsSchedPoint) p = point_ok("block(m=64).swizzle(\"xor\").warps(4)");
  gboolean ok = TRUE;
  g_assert_true(ts_sched_space_check(s, NULL, p, &ok, NULL));
  g_assert_false(ok);
  ts_sched_point_set_int(p, "BM", 256); /* outside the lists: still checkable, not indexable */
  g_assert_true(ts_sched_space_check(s, NULL, p, &ok, NULL));
  g_assert_true(ok);
  guint64 idx;
  g_assert_false(ts_sched_space_index_of(s, p, &idx));
  ts_sched_point_set_int(p, "BM", 128);
  g_assert_true(ts_sched_space_index_of(s, p, &idx));
  g_assert_cmpuint(idx, ==, 3);

  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedPoint) lacking = point_ok("block(m=64)");
  g_assert_false(ts_sched_space_check(s, NULL, lacking, &ok, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT);
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) wrong = point_ok("block(m=64).swizzle(3)");
  g_assert_false(ts_sched_space_check(s, NULL, wrong, &ok, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_TYPE);
  g_clear_error(&error);

  /* A prepared checker: the same answers and errors, and still usable after an error. */
  g_autoptr(TsSchedChecker) checker = ts_sched_checker_new(s, NULL, &error);
  g_assert_no_error(error);
  g_assert_false(ts_sched_checker_check(checker, lacking, &ok, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT);
  g_clear_error(&error);
  ok = FALSE;
  g_assert_true(ts_sched_checker_check(checker, p, &ok, &error)); /* BM 128, xor */
  g_assert_true(ok);
  g_autoptr(TsSchedPoint) small = point_ok("block(m=64).swizzle(\"xor\")");
  g_assert_true(ts_sched_checker_check(checker, small, &ok, &error));
  g_assert_false(ok);
  g_assert_no_error(error);
  /* A constraint that cannot be compiled fails when the checker is made, naming it. */
  g_autoptr(TsSchedSpace) unknown = parse_ok("block(m=[64]).where(Q > 1)");
  g_assert_null(ts_sched_checker_new(unknown, NULL, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL);
  g_assert_nonnull(strstr(error->message, "unknown name 'Q'"));
}

static void
test_inheritance(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok("base = block(m=128, n=128, k=64).warps(8).stages(3)\n"
                                       "small = base.with_block(64, 64)\n"
                                       "lean = base.with_warps(4)\n"
                                       "small.with_warps([2,4]).stages([2,3]); lean");
  g_autofree char *t = ts_sched_space_to_string(s);
  g_assert_cmpstr(t, ==, "block(m=128, n=128, k=64).warps(4).stages(3)");

  g_autoptr(TsSchedSpace) s2 = parse_ok(
      "base = block(m=128, n=128, k=64).warps(8).stages(3)\nsmall = base.with_block(64, 64)\n"
      "small.with_warps([2,4]).stages([2,3])\n");
  g_autofree char *t2 = ts_sched_space_to_string(s2);
  g_assert_cmpstr(t2, ==, "block(m=64, n=64, k=64).warps([2,4]).stages([2,3])");

  /* Reassignment and a continuation line starting with '.' */
  g_autoptr(TsSchedSpace) s3 = parse_ok("a = warps(4)\na = a.stages(2)\na\n  .vector(8)");
  g_autofree char *t3 = ts_sched_space_to_string(s3);
  g_assert_cmpstr(t3, ==, "warps(4).stages(2).vector(8)");

  /* A variable is a copy: changing the result leaves the original alone. */
  g_autoptr(TsSchedSpace) s4 = parse_ok("a = warps([4,8])\nb = a.warps(2)\na");
  g_autofree char *t4 = ts_sched_space_to_string(s4);
  g_assert_cmpstr(t4, ==, "warps([4,8])");
}

static void
test_set_knob_and_constraint(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok("block(m=[64,128])");
  TsSchedValue warps[] = {{TS_SCHED_INT, 4, NULL}, {TS_SCHED_INT, 8, NULL}};
  ts_sched_space_set_knob(s, "warps", warps, 2);
  char dyn[] = "xor"; /* not interned by the caller */
  TsSchedValue sw[] = {{TS_SCHED_STR, 0, "none"}, {TS_SCHED_STR, 0, dyn}};
  ts_sched_space_set_knob(s, "swizzle", sw, 2);
  TsSchedValue bm[] = {{TS_SCHED_INT, 32, NULL}};
  ts_sched_space_set_knob(s, "BM", bm, 1); /* replaces in place */
  g_assert_cmpint(ts_sched_space_knob_index(s, "BM"), ==, 0);
  g_assert_cmpint(ts_sched_space_knob_index(s, "swizzle"), ==, 2);
  g_assert_cmpint(ts_sched_space_knob_index(s, "nope"), ==, -1);
  g_assert_cmpuint(ts_sched_space_n_values(s, 0), ==, 1);
  g_assert_cmpstr(ts_sched_space_value(s, 2, 1).s, ==, "xor");
  g_assert_true(ts_sched_space_value(s, 2, 1).s != dyn); /* the space keeps its own */

  g_autoptr(GError) error = NULL;
  g_assert_true(
      ts_sched_space_add_constraint(s, "warps * 32 <= BM * 4 or swizzle == \"none\"", &error));
  g_assert_no_error(error);
  g_autofree char *c0 = ts_sched_space_constraint_to_string(s, 0);
  g_assert_cmpstr(c0, ==, "warps * 32 <= BM * 4 || swizzle == \"none\"");
  g_assert_false(ts_sched_space_add_constraint(s, "warps > 1 2", &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_PARSE);
  g_assert_true(g_str_has_prefix(error->message, "schedule:1:11: trailing garbage"));
  g_clear_error(&error);
  g_assert_false(ts_sched_space_add_constraint(s, "swizzle > 1", &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_TYPE);
  g_clear_error(&error);
  g_assert_cmpuint(ts_sched_space_n_constraints(s), ==, 1);

  g_autofree char *t = ts_sched_space_to_string(s);
  g_assert_cmpstr(t, ==,
                  "block(m=32).warps([4,8]).swizzle([\"none\",\"xor\"])"
                  ".where(warps * 32 <= BM * 4 || swizzle == \"none\")");
  assert_round_trip(s);
  guint64 count;
  g_assert_true(ts_sched_space_count_valid(s, NULL, &count, NULL));
  g_assert_cmpuint(count, ==, 3); /* (4,none), (4,xor), (8,none) */

  /* A knob retyped after the constraint was added is caught when enumeration starts. */
  TsSchedValue ints[] = {{TS_SCHED_INT, 1, NULL}};
  ts_sched_space_set_knob(s, "swizzle", ints, 1);
  g_assert_false(ts_sched_space_count_valid(s, NULL, &count, &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_TYPE);
}

/* Every prefix and many single-byte mutations of the round-trip inputs either parse (and then
 * round-trip) or fail with a located message whose caret line fits its column. */
static void
test_parse_robustness(void)
{
  static const char bytes[] = "()[],.=;+-*/%<>!&|\"#\n\t 09azAZ_\x80";
  g_autoptr(GRand) r = g_rand_new_with_seed(11);
  guint ok = 0, failed = 0;
  for (guint i = 0; i < G_N_ELEMENTS(round_trips); i++) {
    const char *src = round_trips[i].input;
    gsize len = strlen(src);
    for (gsize cut = 0; cut <= len + 40; cut++) {
      g_autofree char *text = g_strndup(src, MIN(cut, len));
      if (cut > len) { /* mutate one byte of the whole input */
        g_free(text);
        text = g_strdup(src);
        text[g_rand_int_range(r, 0, (gint32)len)] =
            bytes[g_rand_int_range(r, 0, (gint32)sizeof bytes - 1)];
      }
      g_autoptr(GError) error = NULL;
      g_autoptr(TsSchedSpace) s = ts_sched_space_parse(text, &error);
      if (s) {
        ok++;
        assert_round_trip(s);
        continue;
      }
      failed++;
      g_assert_nonnull(error);
      int line = 0, col = 0;
      g_assert_cmpint(sscanf(error->message, "schedule:%d:%d:", &line, &col), ==, 2);
      g_assert_cmpint(line, >=, 1);
      g_assert_cmpint(col, >=, 1);
      assert_located(error, line, col);
    }
  }
  g_assert_cmpuint(ok, >, 0);
  g_assert_cmpuint(failed, >, 100);
}

static void
test_empty_space(void)
{
  g_autoptr(TsSchedSpace) s = parse_ok("dict()");
  guint64 size, count;
  g_assert_true(ts_sched_space_size(s, &size));
  g_assert_cmpuint(size, ==, 1);
  g_assert_true(ts_sched_space_count_valid(s, NULL, &count, NULL));
  g_assert_cmpuint(count, ==, 1);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(s, NULL);
  TsSchedPoint *p = NULL;
  g_assert_true(ts_sched_iter_next(it, &p, NULL));
  g_assert_cmpuint(ts_sched_point_n_knobs(p), ==, 0);
  g_autofree char *text = ts_sched_point_to_string(p);
  g_assert_cmpstr(text, ==, "dict()");
  ts_sched_point_free(p);
  g_assert_false(ts_sched_iter_next(it, &p, NULL));
  g_autoptr(GRand) rng = g_rand_new_with_seed(2);
  g_autoptr(GPtrArray) one = ts_sched_space_sample(s, NULL, 4, rng, NULL);
  g_assert_cmpuint(one->len, ==, 1);
}

/* Expressions nested past TS_SCHED_MAX_EXPR_DEPTH are a parse error naming the limit, whether
 * nested by parentheses, unary operators, min/max or a long chain of one operator (20,000
 * parentheses, a 30,000-term sum and 100,000 unary minuses crashed every recursive walk). */
static void
test_deep_expressions(void)
{
  static const struct {
    const char *open, *middle, *close;
    int n;
  } shapes[] = {
    {"(", "BM", ")", 20000},
    {"", "BM + ", "", 30000},
    {"-", "BM", "", 100000},
    {"not ", "BM", "", 5000},
    {"min(BM, ", "1", ")", 5000},
  };
  for (guint i = 0; i < G_N_ELEMENTS(shapes); i++) {
    g_autoptr(GString) s = g_string_new("block(m=[64]).where(");
    for (int k = 0; k < shapes[i].n; k++)
      g_string_append(s, shapes[i].open[0] ? shapes[i].open : shapes[i].middle);
    if (shapes[i].open[0])
      g_string_append(s, shapes[i].middle);
    else
      g_string_append(s, "BM");
    for (int k = 0; k < shapes[i].n && shapes[i].close[0]; k++)
      g_string_append(s, shapes[i].close);
    g_string_append(s, " > 0)");
    g_autoptr(GError) error = NULL;
    g_autoptr(TsSchedSpace) space = ts_sched_space_parse(s->str, &error);
    g_assert_null(space);
    g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_PARSE);
    if (strstr(error->message, "nested more than 256 deep") == NULL)
      g_error("shape %u: '%.200s'", i, error->message);
  }
  /* At the limit's scale, real constraints still parse. */
  g_autoptr(GString) fine = g_string_new("block(m=[64]).where(");
  for (int k = 0; k < 100; k++)
    g_string_append(fine, "(BM + ");
  g_string_append(fine, "1");
  for (int k = 0; k < 100; k++)
    g_string_append_c(fine, ')');
  g_string_append(fine, " > 0)");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(fine->str, &error);
  g_assert_no_error(error);
  g_assert_nonnull(space);
}

/* Identifiers and strings live as long as a space, point or constraint holds them: a process
 * that parses schedules for days (the studio, a fuzzer, a service) does not keep every name
 * it ever read (they were interned for good). Measured through the allocator: 50,000 spaces,
 * points and constraints with names of their own leave nothing behind. */
static void
test_names_released(void)
{
  struct mallinfo2 before = mallinfo2();
  if (before.uordblks == 0) {
    g_test_skip("the allocator does not report its use (a sanitizer build)");
    return;
  }
  for (guint i = 0; i < 50000; i++) {
    g_autofree char *text = g_strdup_printf(
      "dict(knob_with_a_rather_long_name_%u=[1, 2], s=[\"value_%u_also_long_enough\"])"
      ".where(knob_with_a_rather_long_name_%u + env_name_%u > 0)",
      i, i, i, i);
    g_autoptr(GError) error = NULL;
    g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text, &error);
    g_assert_no_error(error);
    g_autoptr(TsSchedSpace) copy = ts_sched_space_copy(space);
    g_autoptr(TsSchedPoint) p = ts_sched_space_point_at(copy, 1);
    g_autoptr(TsSchedPoint) q = ts_sched_point_copy(p);
    g_autofree char *name = g_strdup_printf("set_%u_by_name_of_some_length", i);
    ts_sched_point_set_str(q, name, name);
  }
  struct mallinfo2 after = mallinfo2();
  gssize grown = (gssize)after.uordblks - (gssize)before.uordblks;
  g_test_message("heap grew by %" G_GSSIZE_FORMAT " bytes", grown);
  g_assert_cmpint(grown, <, 1 << 20); /* interned for good: 6 MB */
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/sched/round-trip", test_round_trip);
  g_test_add_func("/sched/parse-errors", test_parse_errors);
  g_test_add_func("/sched/deep-expressions", test_deep_expressions);
  g_test_add_func("/sched/caret", test_caret_source_line);
  g_test_add_func("/sched/eval-errors", test_eval_errors);
  g_test_add_func("/sched/enumeration-brute-force", test_enumeration_brute_force);
  g_test_add_func("/sched/env-constraints", test_env_constraints);
  g_test_add_func("/sched/size-overflow", test_size_overflow);
  g_test_add_func("/sched/count-ten-million", test_count_ten_million);
  g_test_add_func("/sched/count-groups", test_count_groups);
  g_test_add_func("/sched/sample-determinism", test_sample_determinism);
  g_test_add_func("/sched/sample-uniform", test_sample_uniform);
  g_test_add_func("/sched/sample-low-acceptance", test_sample_low_acceptance);
  g_test_add_func("/sched/hash", test_hash);
  g_test_add_func("/sched/point-api", test_point_api);
  g_test_add_func("/sched/parse-robustness", test_parse_robustness);
  g_test_add_func("/sched/empty-space", test_empty_space);
  g_test_add_func("/sched/check-point", test_check_point);
  g_test_add_func("/sched/complete-point", test_complete_point);
  g_test_add_func("/sched/inheritance", test_inheritance);
  g_test_add_func("/sched/set-knob-and-constraint", test_set_knob_and_constraint);
  g_test_add_func("/sched/names-released", test_names_released);
  return g_test_run();
}
