/* test-studio-json.c — the trace reader's own JSON parser (gui/ts-studio-json.c): every JSON
 * value it must read as json-glib reads it (types, numbers at the edges of 64 bits, escapes
 * and surrogate pairs, repeated names), every malformed text refused with where and what, deep
 * nesting refused rather than recursed into, and the tree reused from parse to parse. */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-studio-trace-private.h"

static const TsJsonNode *
parse(TsJson *j, const char *text)
{
  g_autofree char *why = NULL;
  const TsJsonNode *root = ts__json_parse(j, text, strlen(text), &why);
  if (root == NULL)
    g_error("%s: %s", text, why);
  return root;
}

static char *
refuse(TsJson *j, const char *text, gsize len)
{
  char *why = NULL;
  g_assert_null(ts__json_parse(j, text, len, &why));
  g_assert_nonnull(why);
  return why;
}

static void
test_values(void)
{
  g_autoptr(TsJson) j = ts__json_new();
  const TsJsonNode *o = parse(
      j, " {\"ph\": \"X\", \"ts\": 1.5, \"dur\": 3, \"neg\": -7, \"t\": true, \"f\": false,"
         " \"n\": null, \"args\": {\"a\": [1, {\"b\": \"c\"}], \"e\": {}}, \"z\": []}\n");
  g_assert_cmpint(o->type, ==, TS_JSON_OBJECT);
  g_assert_null(o->key);
  g_assert_cmpstr(ts__json_string_member(o, "ph"), ==, "X");
  g_assert_cmpint(ts__json_member(o, "ts")->type, ==, TS_JSON_DOUBLE);
  g_assert_cmpfloat(ts__json_member(o, "ts")->v.d, ==, 1.5);
  g_assert_cmpint(ts__json_member(o, "dur")->type, ==, TS_JSON_INT);
  g_assert_cmpint(ts__json_member(o, "dur")->v.i, ==, 3);
  g_assert_cmpint(ts__json_member(o, "neg")->v.i, ==, -7);
  g_assert_true(ts__json_member(o, "t")->v.b);
  g_assert_cmpint(ts__json_member(o, "f")->type, ==, TS_JSON_BOOL);
  g_assert_false(ts__json_member(o, "f")->v.b);
  g_assert_cmpint(ts__json_member(o, "n")->type, ==, TS_JSON_NULL);
  g_assert_null(ts__json_member(o, "missing"));
  g_assert_null(ts__json_string_member(o, "dur")); /* not a string */
  g_assert_null(ts__json_member(ts__json_member(o, "ph"), "x")); /* not an object */
  /* Members in the order written; an array's elements have no key. */
  const char *keys[] = {"ph", "ts", "dur", "neg", "t", "f", "n", "args", "z"};
  guint k = 0;
  for (const TsJsonNode *m = o->child; m; m = m->next)
    g_assert_cmpstr(m->key, ==, keys[k++]);
  g_assert_cmpuint(k, ==, G_N_ELEMENTS(keys));
  const TsJsonNode *a = ts__json_member(ts__json_member(o, "args"), "a");
  g_assert_cmpint(a->type, ==, TS_JSON_ARRAY);
  g_assert_null(a->child->key);
  g_assert_cmpint(a->child->v.i, ==, 1);
  g_assert_cmpstr(ts__json_string_member(a->child->next, "b"), ==, "c");
  g_assert_null(a->child->next->next);
  g_assert_null(ts__json_member(ts__json_member(o, "args"), "e")->child);
  g_assert_null(ts__json_member(o, "z")->child);
  /* The source text of a value, and compact. */
  g_assert_cmpint(strncmp(a->text, "[1, {\"b\": \"c\"}]", a->text_len), ==, 0);
  g_autoptr(GString) c = g_string_new(NULL);
  ts__json_append_compact(c, ts__json_member(o, "args"));
  g_assert_cmpstr(c->str, ==, "{\"a\":[1,{\"b\":\"c\"}],\"e\":{}}");
  g_string_truncate(c, 0);
  ts__json_append_compact(c, parse(j, "[\"a b\\\" c\" , { \"k\" :\t1 } ]"));
  g_assert_cmpstr(c->str, ==, "[\"a b\\\" c\",{\"k\":1}]");

  /* A repeated name: the last, as json-glib keeps it. */
  o = parse(j, "{\"a\": 1, \"b\": 2, \"a\": 3}");
  g_assert_cmpint(ts__json_member(o, "a")->v.i, ==, 3);
  /* Scalars alone are values too. */
  g_assert_cmpint(parse(j, "42")->v.i, ==, 42);
  g_assert_cmpstr(parse(j, "\"s\"")->v.s, ==, "s");
}

static void
test_numbers(void)
{
  g_autoptr(TsJson) j = ts__json_new();
  g_assert_cmpint(parse(j, "9223372036854775807")->v.i, ==, G_MAXINT64);
  g_assert_cmpint(parse(j, "-9223372036854775808")->v.i, ==, G_MININT64);
  /* Past 64 bits: a double, as json-glib reads it. */
  const TsJsonNode *big = parse(j, "9223372036854775808");
  g_assert_cmpint(big->type, ==, TS_JSON_DOUBLE);
  g_assert_cmpfloat(big->v.d, ==, 9223372036854775808.0);
  g_assert_cmpint(parse(j, "123456789012345678901234567890")->type, ==, TS_JSON_DOUBLE);
  g_assert_cmpint(parse(j, "-0")->type, ==, TS_JSON_INT);
  g_assert_cmpfloat(parse(j, "1e300")->v.d, ==, 1e300);
  g_assert_cmpfloat(parse(j, "-2.5E-3")->v.d, ==, -2.5e-3);
  g_assert_cmpfloat(parse(j, "1700000000000000.125")->v.d, ==, 1700000000000000.125);
  g_assert_true(isinf(parse(j, "1e999")->v.d));
  /* A long number still reads whole. */
  g_autofree char *zeros = g_strnfill(100, '0');
  g_autofree char *digits = g_strdup_printf("0.%s1", zeros);
  g_assert_cmpfloat(parse(j, digits)->v.d, ==, 1e-101);
}

static void
test_strings(void)
{
  g_autoptr(TsJson) j = ts__json_new();
  g_assert_cmpstr(parse(j, "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"")->v.s, ==, "a\"b\\c/d\b\f\n\r\t");
  g_assert_cmpstr(parse(j, "\"\\u00e9\\u4e2d\"")->v.s, ==, "é中");
  g_assert_cmpstr(parse(j, "\"\\ud83d\\ude00\"")->v.s, ==, "😀"); /* a surrogate pair */
  g_assert_cmpstr(parse(j, "\"\\ud83d x\"")->v.s, ==, "\xef\xbf\xbd x"); /* lone: U+FFFD */
  g_assert_cmpstr(parse(j, "\"\\ude00\"")->v.s, ==, "\xef\xbf\xbd");
  g_assert_cmpstr(parse(j, "\"\\ud83d\\u0041\"")->v.s, ==, "\xef\xbf\xbd" "A");
  g_assert_cmpstr(parse(j, "\"grüße\"")->v.s, ==, "grüße");
  const TsJsonNode *o = parse(j, "{\"k\\u0065y\": \"v\"}");
  g_assert_cmpstr(o->child->key, ==, "key");
}

static void
test_malformed(void)
{
  g_autoptr(TsJson) j = ts__json_new();
  const struct {
    const char *text, *why;
  } bad[] = {
      {"", "byte 0: expected a value"},
      {"{\"a\": 1,}", "byte 8: expected a member name in quotes"},
      {"[1, 2,]", "byte 6: an unexpected character"},
      {"{\"a\" 1}", "byte 5: expected ':' after a member name"},
      {"{\"a\": 1 \"b\": 2}", "byte 8: expected ',' or '}'"},
      {"[1 2]", "byte 3: expected ',' or ']'"},
      {"{\"a\": 1", "expected ',' or '}'"},
      {"\"abc", "a string with no closing quote"},
      {"\"a\tb\"", "byte 2: a control character in a string"},
      {"\"\\x\"", "an unknown escape"},
      {"\"\\u12zz\"", "a \\u escape that is not four hex digits"},
      {"\"\\u12", "a \\u escape cut short"},
      {"\"a\xff\"", "byte 2: a string that is not UTF-8"},
      {"01", "text after the value"},
      {"-", "a number without digits"},
      {"1.", "no digits after its point"},
      {"1e+", "no digits in its exponent"},
      {"tru", "an unexpected character"},
      {"nul", "an unexpected character"},
      {"{} {}", "byte 3: text after the value"},
      {"'a'", "byte 0: an unexpected character"},
      {"/* c */ 1", "byte 0: an unexpected character"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *why = refuse(j, bad[i].text, strlen(bad[i].text));
    g_autofree char *shown = g_strescape(bad[i].text, NULL); /* the TAP stream stays UTF-8 */
    g_test_message("%s -> %s", shown, why);
    g_assert_nonnull(strstr(why, bad[i].why));
  }
  /* A NUL inside the text is not the end of it. */
  g_autofree char *nul = refuse(j, "[1]\0[2]", 7);
  g_assert_nonnull(strstr(nul, "text after the value"));

  /* Nesting as deep as allowed reads; one more is refused, without recursing further. */
  g_autoptr(GString) deep = g_string_new(NULL);
  for (guint i = 0; i <= TS_JSON_MAX_DEPTH; i++)
    g_string_append_c(deep, '[');
  for (guint i = 0; i <= TS_JSON_MAX_DEPTH; i++)
    g_string_append_c(deep, ']');
  g_autofree char *why = NULL;
  g_assert_nonnull(ts__json_parse(j, deep->str, deep->len, &why));
  g_string_prepend_c(deep, '[');
  g_string_append_c(deep, ']');
  g_autofree char *too_deep = refuse(j, deep->str, deep->len);
  g_assert_nonnull(strstr(too_deep, "nested too deeply"));
  g_autoptr(GString) bomb = g_string_new(NULL);
  for (guint i = 0; i < 100000; i++)
    g_string_append(bomb, "{\"a\":");
  g_autofree char *bombed = refuse(j, bomb->str, bomb->len);
  g_assert_nonnull(strstr(bombed, "nested too deeply"));
}

/* The same texts through json-glib: where it reads a value, so do we, with the same types. */
static void
test_like_json_glib(void)
{
  g_autoptr(TsJson) j = ts__json_new();
  g_autoptr(JsonParser) p = json_parser_new();
  const char *texts[] = {"{\"ts\": 1700000000000000.5, \"id\": 18446744073709551615}",
                         "[0, -0, 1.0, 2e3, 9007199254740993, -12]", "\"\\u00e9\"",
                         "{\"a\": [true, false, null, {}]}"};
  for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
    g_assert_true(json_parser_load_from_data(p, texts[i], -1, NULL));
    JsonNode *theirs = json_parser_get_root(p);
    const TsJsonNode *ours = parse(j, texts[i]);
    if (JSON_NODE_HOLDS_ARRAY(theirs)) {
      JsonArray *a = json_node_get_array(theirs);
      const TsJsonNode *e = ours->child;
      for (guint k = 0; k < json_array_get_length(a); k++, e = e->next) {
        JsonNode *t = json_array_get_element(a, k);
        g_assert_nonnull(e);
        if (json_node_get_value_type(t) == G_TYPE_INT64) {
          g_assert_cmpint(e->type, ==, TS_JSON_INT);
          g_assert_cmpint(e->v.i, ==, json_node_get_int(t));
        } else {
          g_assert_cmpint(e->type, ==, TS_JSON_DOUBLE);
          g_assert_cmpfloat(e->v.d, ==, json_node_get_double(t));
        }
      }
    } else if (JSON_NODE_HOLDS_OBJECT(theirs)) {
      JsonObject *o = json_node_get_object(theirs);
      g_assert_cmpuint(json_object_get_size(o), >, 0);
      for (const TsJsonNode *m = ours->child; m; m = m->next)
        g_assert_true(json_object_has_member(o, m->key));
      JsonNode *ts = json_object_get_member(o, "ts");
      if (ts)
        g_assert_cmpfloat(ts__json_member(ours, "ts")->v.d, ==, json_node_get_double(ts));
    } else {
      g_assert_cmpstr(ours->v.s, ==, json_node_get_string(theirs));
    }
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/studio-json/values", test_values);
  g_test_add_func("/studio-json/numbers", test_numbers);
  g_test_add_func("/studio-json/strings", test_strings);
  g_test_add_func("/studio-json/malformed", test_malformed);
  g_test_add_func("/studio-json/like-json-glib", test_like_json_glib);
  return g_test_run();
}
