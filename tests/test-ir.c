/* test-ir.c — Graph IR: dtype catalog, policy/tensor-type/shape parsing and printing (every type
 * written in the seeds), error messages that name the token and its column, shape inference by
 * unification, and the graph printer and validator.
 */
#include "ts-ir.h"

#include <string.h>

/* ---- dtypes ---- */

static void
test_dtype_names(void)
{
  static const struct {
    const char *name;
    TsDtype dtype;
    guint bits;
    gboolean is_float;
  } cases[] = {
      {"f64", TS_DTYPE_F64, 64, TRUE},          {"fp64", TS_DTYPE_F64, 64, TRUE},
      {"f32", TS_DTYPE_F32, 32, TRUE},          {"fp32", TS_DTYPE_F32, 32, TRUE},
      {"tf32", TS_DTYPE_TF32, 32, TRUE},        {"bf16", TS_DTYPE_BF16, 16, TRUE},
      {"f16", TS_DTYPE_F16, 16, TRUE},          {"fp16", TS_DTYPE_F16, 16, TRUE},
      {"fp8_e4m3", TS_DTYPE_FP8_E4M3, 8, TRUE}, {"fp8_e5m2", TS_DTYPE_FP8_E5M2, 8, TRUE},
      {"int32", TS_DTYPE_INT32, 32, FALSE},     {"int8", TS_DTYPE_INT8, 8, FALSE},
      {"int4", TS_DTYPE_INT4, 4, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    TsDtype d = ts_dtype_from_name(cases[i].name);
    g_assert_cmpint(d, ==, cases[i].dtype);
    g_assert_cmpuint(ts_dtype_bits(d), ==, cases[i].bits);
    g_assert_cmpint(ts_dtype_is_float(d), ==, cases[i].is_float);
    /* The canonical name reads back to the same dtype and is never an fp* alias. */
    g_assert_cmpint(ts_dtype_from_name(ts_dtype_name(d)), ==, d);
    g_assert_false(g_str_has_prefix(ts_dtype_name(d), "fp") && ts_dtype_bits(d) > 8);
  }
  g_assert_cmpint(ts_dtype_from_name("bf17"), ==, TS_DTYPE_INVALID);
  g_assert_cmpint(ts_dtype_from_name(NULL), ==, TS_DTYPE_INVALID);
  g_assert_cmpuint(ts_dtype_bits(TS_DTYPE_INVALID), ==, 0);
}

/* ---- round trips: every type the seeds write ---- */

static const struct {
  const char *text;
  const char *canonical;
  guint rank;
  TsDtype storage;
} type_cases[] = {
    /* seed 003 */
    {"Tensor[\"B\",\"S\",\"D\", bf16 @accum(f32)]", NULL, 3, TS_DTYPE_BF16},
    {"Tensor[S, D, f16]", "Tensor[\"S\",\"D\", f16]", 2, TS_DTYPE_F16},
    {"Tensor[\"B*H\",\"S\",\"D_h\", bf16 @accum(f32)]", NULL, 3, TS_DTYPE_BF16},
    /* seed 004 */
    {"ts.Tensor[\"n\", ts.f32]", "Tensor[\"n\", f32]", 1, TS_DTYPE_F32},
    {"ts.Tensor[\"M\", \"K\", ts.bf16]", "Tensor[\"M\",\"K\", bf16]", 2, TS_DTYPE_BF16},
    {"ts.Tensor[\"K\", \"N\", ts.bf16]", "Tensor[\"K\",\"N\", bf16]", 2, TS_DTYPE_BF16},
    {"ts.Tensor[\"M\", \"N\", ts.f32]", "Tensor[\"M\",\"N\", f32]", 2, TS_DTYPE_F32},
    {"ts.Tensor[\"B*H\", \"S\", \"D\", ts.bf16]", "Tensor[\"B*H\",\"S\",\"D\", bf16]", 3,
     TS_DTYPE_BF16},
    {"Tensor[\"B\", \"D\", fp8_e4m3 @accum(fp32) @loss_scale(128.0)]",
     "Tensor[\"B\",\"D\", fp8_e4m3 @accum(f32) @loss_scale(128.0)]", 2, TS_DTYPE_FP8_E4M3},
    /* the header's examples and edge forms */
    {"Tensor[\"M\",\"K\", bf16 @accum(f32)]", NULL, 2, TS_DTYPE_BF16},
    {"Tensor[1024, \"N\", f32]", "Tensor[1024,\"N\", f32]", 2, TS_DTYPE_F32},
    {"Tensor[f64]", NULL, 0, TS_DTYPE_F64},
    {"Tensor[\"B * H\", 9223372036854775807, int8 @accum(int32)]",
     "Tensor[\"B*H\",9223372036854775807, int8 @accum(int32)]", 2, TS_DTYPE_INT8},
    {"Tensor[1,2,3,4,5,6, f16 @saturate @stochastic_round]",
     "Tensor[1,2,3,4,5,6, f16 @stochastic_round @saturate]", 6, TS_DTYPE_F16},
    {"Tensor[\"N\", fp8_e5m2 @loss_scale(0.1) @accum(f32)]",
     "Tensor[\"N\", fp8_e5m2 @accum(f32) @loss_scale(0.1)]", 1, TS_DTYPE_FP8_E5M2},
    {"Tensor[\"N\", f32 @loss_scale(1e20)]", "Tensor[\"N\", f32 @loss_scale(1.0e+20)]", 1,
     TS_DTYPE_F32},
};

static void
test_tensor_type_round_trip(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(type_cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsTensorType) t = ts_tensor_type_parse(type_cases[i].text, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(t->rank, ==, type_cases[i].rank);
    g_assert_cmpint(t->dtype.storage, ==, type_cases[i].storage);

    g_autofree char *printed = ts_tensor_type_to_string(t);
    const char *want = type_cases[i].canonical ? type_cases[i].canonical : type_cases[i].text;
    g_assert_cmpstr(printed, ==, want);

    /* print -> parse -> print is the identity, and the parsed types are equal. */
    g_autoptr(TsTensorType) again = ts_tensor_type_parse(printed, &error);
    g_assert_no_error(error);
    g_assert_true(ts_tensor_type_equal(t, again));
    g_autofree char *printed2 = ts_tensor_type_to_string(again);
    g_assert_cmpstr(printed2, ==, printed);

    g_autoptr(TsTensorType) copy = ts_tensor_type_copy(t);
    g_assert_true(ts_tensor_type_equal(t, copy));
  }
}

static void
test_policy_round_trip(void)
{
  static const struct {
    const char *text, *canonical;
    TsDtype storage, accum, compute;
    double loss_scale;
    gboolean sr, sat;
  } cases[] = {
      {"bf16 @accum(f32)", NULL, TS_DTYPE_BF16, TS_DTYPE_F32, TS_DTYPE_F32, 0, FALSE, FALSE},
      {"fp8_e4m3 @accum(f32) @loss_scale(128.0)", NULL, TS_DTYPE_FP8_E4M3, TS_DTYPE_F32,
       TS_DTYPE_F32, 128.0, FALSE, FALSE},
      {"fp8_e4m3 @accum(fp32) @loss_scale(128.0)", "fp8_e4m3 @accum(f32) @loss_scale(128.0)",
       TS_DTYPE_FP8_E4M3, TS_DTYPE_F32, TS_DTYPE_F32, 128.0, FALSE, FALSE},
      {"f16 @saturate", NULL, TS_DTYPE_F16, TS_DTYPE_INVALID, TS_DTYPE_F16, 0, FALSE, TRUE},
      {"bf16 @stochastic_round", NULL, TS_DTYPE_BF16, TS_DTYPE_INVALID, TS_DTYPE_BF16, 0, TRUE,
       FALSE},
      {"  fp16@saturate @stochastic_round @accum( f32 )@loss_scale(2)",
       "f16 @accum(f32) @loss_scale(2.0) @stochastic_round @saturate", TS_DTYPE_F16, TS_DTYPE_F32,
       TS_DTYPE_F32, 2.0, TRUE, TRUE},
      {"ts.bf16", "bf16", TS_DTYPE_BF16, TS_DTYPE_INVALID, TS_DTYPE_BF16, 0, FALSE, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    TsDtypePolicy p, q;
    g_assert_true(ts_dtype_policy_parse(cases[i].text, &p, &error));
    g_assert_no_error(error);
    g_assert_cmpint(p.storage, ==, cases[i].storage);
    g_assert_cmpint(p.accum, ==, cases[i].accum);
    g_assert_cmpint(ts_dtype_policy_compute(&p), ==, cases[i].compute);
    g_assert_cmpfloat(p.loss_scale, ==, cases[i].loss_scale);
    g_assert_cmpint(p.stochastic_round, ==, cases[i].sr);
    g_assert_cmpint(p.saturate, ==, cases[i].sat);
    g_autofree char *s = ts_dtype_policy_to_string(&p);
    g_assert_cmpstr(s, ==, cases[i].canonical ? cases[i].canonical : cases[i].text);
    g_assert_true(ts_dtype_policy_parse(s, &q, &error));
    g_assert_true(ts_dtype_policy_equal(&p, &q));
  }
}

/* Loss scales that need all 17 digits still read back exactly. */
static void
test_policy_loss_scale_exact(void)
{
  const double values[] = {0.1, 1.0 / 3.0, 65504.0, 1e-300, 123456789.123456789, 5e-324};
  for (guint i = 0; i < G_N_ELEMENTS(values); i++) {
    TsDtypePolicy p = {.storage = TS_DTYPE_F16, .loss_scale = values[i]}, q;
    g_autofree char *s = ts_dtype_policy_to_string(&p);
    g_assert_nonnull(strchr(s, '.'));
    g_assert_true(ts_dtype_policy_parse(s, &q, NULL));
    g_assert_cmpfloat(q.loss_scale, ==, values[i]);
  }
}

/* ---- error messages ---- */

typedef enum { KIND_TYPE, KIND_POLICY, KIND_SHAPE } Kind;

static const struct {
  const char *what;
  Kind kind;
  const char *text;
  TsIrError code;
  const char *token; /* must appear quoted in the message, with its column */
  guint nth;         /* which occurrence of token in text the column is for (1-based; 0: none) */
  const char *also;  /* another substring the message must hold, or NULL */
} error_cases[] = {
    {"unknown dtype", KIND_TYPE, "Tensor[\"M\",\"K\", bf17]", TS_IR_ERROR_UNKNOWN_DTYPE, "bf17", 1,
     "did you mean 'bf16'?"},
    {"unknown dtype lists known", KIND_POLICY, "quux", TS_IR_ERROR_UNKNOWN_DTYPE, "quux", 1,
     "known: f64, f32, tf32, bf16, f16, fp8_e4m3, fp8_e5m2, int32, int8, int4"},
    {"unknown accum dtype", KIND_POLICY, "bf16 @accum(f33)", TS_IR_ERROR_UNKNOWN_DTYPE, "f33", 1,
     NULL},
    {"unknown policy", KIND_TYPE, "Tensor[\"M\", bf16 @acum(f32)]", TS_IR_ERROR_UNKNOWN_POLICY,
     "@acum", 1, "did you mean '@accum'?"},
    {"unknown policy, no hint", KIND_POLICY, "f16 @fastmath", TS_IR_ERROR_UNKNOWN_POLICY,
     "@fastmath", 1, "known: @accum"},
    {"repeated policy", KIND_POLICY, "bf16 @accum(f32) @accum(f32)", TS_IR_ERROR_PARSE, "@accum", 2,
     "repeated"},
    {"repeated flag", KIND_TYPE, "Tensor[\"N\", f16 @saturate @saturate]", TS_IR_ERROR_PARSE,
     "@saturate", 2, "repeated"},
    {"unclosed bracket", KIND_TYPE, "Tensor[\"M\",\"K\", f32", TS_IR_ERROR_PARSE, "[", 1,
     "never closed"},
    {"extra bracket", KIND_TYPE, "Tensor[\"M\", f32]]", TS_IR_ERROR_PARSE, "]", 2,
     "unbalanced brackets"},
    {"unclosed accum", KIND_POLICY, "bf16 @accum(f32", TS_IR_ERROR_PARSE, "@accum(", 0, "')'"},
    {"empty type", KIND_TYPE, "", TS_IR_ERROR_PARSE, NULL, 0, "empty input"},
    {"blank policy", KIND_POLICY, "   ", TS_IR_ERROR_PARSE, NULL, 0, "empty input"},
    {"huge literal", KIND_TYPE, "Tensor[99999999999999999999, f32]", TS_IR_ERROR_SHAPE,
     "99999999999999999999", 1, "int64"},
    {"int64 max + 1", KIND_TYPE, "Tensor[9223372036854775808, f32]", TS_IR_ERROR_SHAPE,
     "9223372036854775808", 1, "int64"},
    {"zero dim", KIND_TYPE, "Tensor[0, \"N\", f32]", TS_IR_ERROR_SHAPE, "0", 1, "> 0"},
    {"negative dim", KIND_TYPE, "Tensor[-4, f32]", TS_IR_ERROR_SHAPE, "-4", 1, "> 0"},
    {"fractional dim", KIND_TYPE, "Tensor[2.5, f32]", TS_IR_ERROR_PARSE, "2.5", 1, "integer"},
    {"dtype not last", KIND_TYPE, "Tensor[f32, \"M\"]", TS_IR_ERROR_PARSE, "f32", 1, "last"},
    {"missing dtype", KIND_TYPE, "Tensor[\"M\",\"K\"]", TS_IR_ERROR_PARSE, "]", 1, "missing dtype"},
    {"unterminated string", KIND_TYPE, "Tensor[\"M, f32]", TS_IR_ERROR_PARSE, "\"M, f32]", 1,
     "unterminated"},
    {"empty dim name", KIND_TYPE, "Tensor[\"\", f32]", TS_IR_ERROR_PARSE, "\"\"", 1, "dim name"},
    {"bad dim name", KIND_TYPE, "Tensor[\"B+H\", f32]", TS_IR_ERROR_PARSE, "\"B+H\"", 1, "B*H"},
    {"too many dims", KIND_TYPE, "Tensor[1,2,3,4,5,6,7, f32]", TS_IR_ERROR_RANK, "7", 1,
     "at most 6"},
    {"misspelt Tensor", KIND_TYPE, "Tensr[\"M\", f32]", TS_IR_ERROR_PARSE, "Tensr", 1,
     "did you mean 'Tensor'?"},
    {"trailing junk", KIND_TYPE, "Tensor[\"M\", f32] x", TS_IR_ERROR_PARSE, "x", 1, NULL},
    {"non-positive loss scale", KIND_POLICY, "f16 @loss_scale(-1.0)", TS_IR_ERROR_PARSE, "-1.0", 1,
     "> 0"},
    {"infinite loss scale", KIND_POLICY, "f16 @loss_scale(1e999)", TS_IR_ERROR_PARSE, "1e999", 1,
     "finite"},
    {"flag with argument", KIND_POLICY, "f16 @saturate(1)", TS_IR_ERROR_PARSE, "@saturate", 1,
     "no argument"},
    {"accum without argument", KIND_POLICY, "bf16 @accum", TS_IR_ERROR_PARSE, "@accum", 1,
     "@accum(f32)"},
    {"shape bound twice", KIND_SHAPE, "M=512,K=512,K=256", TS_IR_ERROR_SHAPE, "K", 2,
     "bound to 512"},
    {"shape huge", KIND_SHAPE, "M=9223372036854775808", TS_IR_ERROR_SHAPE, "9223372036854775808", 1,
     "int64"},
    {"shape zero", KIND_SHAPE, "M=1,N=0", TS_IR_ERROR_SHAPE, "0", 1, "> 0"},
    {"shape hex", KIND_SHAPE, "M=0x40", TS_IR_ERROR_SHAPE, "0x40", 1, "decimal integer"},
    {"shape suffix", KIND_SHAPE, "M=1,N=64k", TS_IR_ERROR_SHAPE, "64k", 1, "decimal integer"},
    {"shape trailing comma", KIND_SHAPE, "M=1,", TS_IR_ERROR_PARSE, NULL, 0, "dim name"},
    {"shape missing '='", KIND_SHAPE, "M 1", TS_IR_ERROR_PARSE, "1", 1, "'='"},
};

static void
test_errors(gconstpointer data)
{
  guint i = GPOINTER_TO_UINT(data);
  g_autoptr(GError) error = NULL;
  gboolean ok;
  const char *prefix;
  switch (error_cases[i].kind) {
  case KIND_TYPE: {
    g_autoptr(TsTensorType) t = ts_tensor_type_parse(error_cases[i].text, &error);
    ok = t != NULL;
    prefix = "tensor type: ";
    break;
  }
  case KIND_POLICY: {
    TsDtypePolicy p;
    ok = ts_dtype_policy_parse(error_cases[i].text, &p, &error);
    prefix = "dtype policy: ";
    break;
  }
  default: {
    g_autoptr(TsShape) s = ts_shape_parse(error_cases[i].text, &error);
    ok = s != NULL;
    prefix = "shape: ";
    break;
  }
  }
  g_test_message("%s: %s -> %s", error_cases[i].what, error_cases[i].text,
                 error ? error->message : "(no error)");
  g_assert_false(ok);
  g_assert_error(error, TS_IR_ERROR, (gint)error_cases[i].code);
  g_assert_true(g_str_has_prefix(error->message, prefix));
  g_assert_null(strchr(error->message, '\n'));
  if (error_cases[i].token != NULL) {
    g_autofree char *quoted = g_strdup_printf("'%s'", error_cases[i].token);
    g_assert_nonnull(strstr(error->message, quoted));
  }
  if (error_cases[i].nth > 0) {
    /* The column is where the nth occurrence of the token starts in the input. */
    const char *at = error_cases[i].text - 1;
    for (guint k = 0; k < error_cases[i].nth; k++) {
      at = strstr(at + 1, error_cases[i].token);
      g_assert_nonnull(at);
    }
    g_autofree char *col = g_strdup_printf("column %u", (guint)(at - error_cases[i].text) + 1);
    g_assert_nonnull(strstr(error->message, col));
  }
  if (error_cases[i].also != NULL)
    g_assert_nonnull(strstr(error->message, error_cases[i].also));
}

/* Every proper prefix of a valid type is invalid: each must fail cleanly with a one-line message
 * (and, under ASan, without reading past the end). */
static void
test_prefixes_fail_cleanly(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(type_cases); i++) {
    const char *text = type_cases[i].text;
    for (gsize len = 0; len < strlen(text); len++) {
      g_autofree char *prefix = g_strndup(text, len);
      g_autoptr(GError) error = NULL;
      g_autoptr(TsTensorType) t = ts_tensor_type_parse(prefix, &error);
      g_assert_null(t);
      g_assert_nonnull(error);
      g_assert_null(strchr(error->message, '\n'));
      g_assert_true(strstr(error->message, "column") != NULL ||
                    strstr(error->message, "empty input") != NULL);
    }
  }
}

static void
test_tensor_type_new(void)
{
  const char *names[] = {"M", "1024", "B * H"};
  TsDtypePolicy p = {.storage = TS_DTYPE_BF16, .accum = TS_DTYPE_F32};
  g_autoptr(TsTensorType) t = ts_tensor_type_new(3, names, &p);
  g_assert_cmpstr(t->dims[0].name, ==, "M");
  g_assert_cmpint(t->dims[0].size, ==, -1);
  g_assert_null(t->dims[1].name);
  g_assert_cmpint(t->dims[1].size, ==, 1024);
  g_assert_cmpstr(t->dims[2].name, ==, "B*H");
  g_autofree char *s = ts_tensor_type_to_string(t);
  g_autoptr(TsTensorType) parsed = ts_tensor_type_parse(s, NULL);
  g_assert_true(ts_tensor_type_equal(t, parsed));
  g_autoptr(TsTensorType) other = ts_tensor_type_parse("Tensor[\"M\",1024,\"B*H\", bf16]", NULL);
  g_assert_false(ts_tensor_type_equal(t, other)); /* policy differs */
}

/* ---- shapes ---- */

static void
test_shape(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsShape) s = ts_shape_parse(" M = 1024 , N=2048,K=9223372036854775807, M=1024", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_shape_n_dims(s), ==, 3);
  g_assert_cmpstr(ts_shape_dim_name(s, 1), ==, "N");
  g_assert_cmpint(ts_shape_dim_size(s, 1), ==, 2048);
  g_assert_cmpint(ts_shape_get(s, "K"), ==, G_MAXINT64);
  g_assert_cmpint(ts_shape_get(s, "Q"), ==, -1);
  g_autofree char *str = ts_shape_to_string(s);
  g_assert_cmpstr(str, ==, "M=1024,N=2048,K=9223372036854775807");
  g_autoptr(TsShape) again = ts_shape_parse(str, &error);
  g_autofree char *str2 = ts_shape_to_string(again);
  g_assert_cmpstr(str2, ==, str);

  g_autoptr(TsShape) empty = ts_shape_parse("", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_shape_n_dims(empty), ==, 0);

  /* Binding: same size again is fine; another size names both contexts. */
  g_autoptr(TsShape) b = ts_shape_new();
  g_assert_true(ts_shape_bind(b, "K", 512, "A", &error));
  g_assert_true(ts_shape_bind(b, "K", 512, "C", &error));
  g_assert_false(ts_shape_bind(b, "K", 256, "B", &error));
  g_assert_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE);
  g_assert_cmpstr(error->message, ==, "dim 'K' is bound to 512 by 'A' but 256 by 'B'");
  g_clear_error(&error);
  g_assert_false(ts_shape_bind(b, "Z", 0, NULL, &error));
  g_assert_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE);
  g_clear_error(&error);

  g_autoptr(TsShape) c = ts_shape_copy(s);
  g_autofree char *cs = ts_shape_to_string(c);
  g_assert_cmpstr(cs, ==, str);
}

static void
test_dim_resolve(void)
{
  g_autoptr(TsShape) s = ts_shape_parse("B=8,H=16,S=4611686018427387904", NULL);
  TsDim lit = {NULL, 77}, bh = {"B*H", -1}, b2 = {"2*B", -1}, unb = {"B*X", -1}, ovf = {"S*S", -1},
        named = {"Q", 5};
  g_assert_cmpint(ts_dim_resolve(&lit, s), ==, 77);
  g_assert_cmpint(ts_dim_resolve(&bh, s), ==, 8 * 16);
  g_assert_cmpint(ts_dim_resolve(&b2, s), ==, 16);
  g_assert_cmpint(ts_dim_resolve(&unb, s), ==, -1);
  g_assert_cmpint(ts_dim_resolve(&ovf, s), ==, -1);
  /* An unbound name falls back to the size inference already gave it. */
  g_assert_cmpint(ts_dim_resolve(&named, s), ==, 5);
  g_assert_cmpint(ts_dim_resolve(&bh, NULL), ==, -1);
}

/* ---- shape inference ---- */

static TsTensorType *
parse_type(const char *text)
{
  g_autoptr(GError) error = NULL;
  TsTensorType *t = ts_tensor_type_parse(text, &error);
  g_assert_no_error(error);
  return t;
}

typedef struct {
  TsTensorType *sig[2], *out;
} GemmSig;

static void
gemm_sig_init(GemmSig *g)
{
  g->sig[0] = parse_type("Tensor[\"M\",\"K\", f32]");
  g->sig[1] = parse_type("Tensor[\"K\",\"N\", f32]");
  g->out = parse_type("Tensor[\"M\",\"N\", f32]");
}

static void
gemm_sig_clear(GemmSig *g)
{
  ts_tensor_type_free(g->sig[0]);
  ts_tensor_type_free(g->sig[1]);
  ts_tensor_type_free(g->out);
}

static TsTensorType *
infer_gemm(const char *a, const char *b, TsShape *shape, GError **error)
{
  GemmSig g;
  gemm_sig_init(&g);
  g_autoptr(TsTensorType) ta = parse_type(a);
  g_autoptr(TsTensorType) tb = parse_type(b);
  const TsTensorType *in[] = {ta, tb};
  const char *names[] = {"A", "B"};
  TsTensorType *out =
      ts_ir_infer_op("gemm", (const TsTensorType *const *)g.sig, in, names, 2, g.out, shape, error);
  gemm_sig_clear(&g);
  return out;
}

static void
test_infer_gemm(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsShape) shape = ts_shape_new();
  g_autoptr(TsTensorType) c = infer_gemm("Tensor[128, 64, bf16 @accum(f32)]",
                                         "Tensor[64, 32, bf16 @accum(f32)]", shape, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(c->rank, ==, 2);
  g_assert_cmpstr(c->dims[0].name, ==, "M");
  g_assert_cmpint(c->dims[0].size, ==, 128);
  g_assert_cmpstr(c->dims[1].name, ==, "N");
  g_assert_cmpint(c->dims[1].size, ==, 32);
  g_assert_cmpint(ts_shape_get(shape, "K"), ==, 64);
  /* The output carries the first input's dtype policy, not the template's f32. */
  g_assert_cmpint(c->dtype.storage, ==, TS_DTYPE_BF16);
  g_assert_cmpint(c->dtype.accum, ==, TS_DTYPE_F32);

  /* Symbolic inputs under a shape resolve through it. */
  g_autoptr(TsShape) s2 = ts_shape_parse("M=1024,N=512,K=256", NULL);
  g_autoptr(TsTensorType) c2 =
      infer_gemm("Tensor[\"M\",\"K\", f16]", "Tensor[\"K\",\"N\", f16]", s2, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_dim_resolve(&c2->dims[0], NULL), ==, 1024);
  g_assert_cmpint(ts_dim_resolve(&c2->dims[1], NULL), ==, 512);
  g_autofree char *c2s = ts_tensor_type_to_string(c2);
  g_assert_cmpstr(c2s, ==, "Tensor[\"M\",\"N\", f16]");

  /* Unbound symbolic inputs unify by name: the output takes the actual names. */
  g_autoptr(TsShape) s3 = ts_shape_new();
  g_autoptr(TsTensorType) c3 =
      infer_gemm("Tensor[\"S\",\"D\", f32]", "Tensor[\"D\",\"V\", f32]", s3, &error);
  g_assert_no_error(error);
  g_autofree char *c3s = ts_tensor_type_to_string(c3);
  g_assert_cmpstr(c3s, ==, "Tensor[\"S\",\"V\", f32]");
  g_assert_cmpint(c3->dims[0].size, ==, -1);
}

static void
test_infer_errors(void)
{
  static const struct {
    const char *a, *b;
    TsIrError code;
    const char *message; /* exact */
  } cases[] = {
      {"Tensor[4, 8, f32]", "Tensor[2, 8, 16, f32]", TS_IR_ERROR_RANK,
       "rank mismatch: argument 'B' of gemm has rank 3, expected 2 (Tensor[\"K\",\"N\"])"},
      {"Tensor[4, 512, f32]", "Tensor[256, 16, f32]", TS_IR_ERROR_SHAPE,
       "dim 'K' is bound to 512 by 'A' but 256 by 'B'"},
      {"Tensor[4, 8, f32]", "Tensor[8, 16, f16]", TS_IR_ERROR_DTYPE,
       "argument 'B' of gemm is f16 but 'A' is f32; inputs must share a storage dtype"},
      {"Tensor[\"S\",\"D\", f32]", "Tensor[\"E\",\"V\", f32]", TS_IR_ERROR_SHAPE,
       "dim 'K' of gemm is 'D' in an earlier argument but 'E' in 'B'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsShape) shape = ts_shape_new();
    g_autoptr(TsTensorType) c = infer_gemm(cases[i].a, cases[i].b, shape, &error);
    g_assert_null(c);
    g_assert_error(error, TS_IR_ERROR, (gint)cases[i].code);
    g_assert_cmpstr(error->message, ==, cases[i].message);
  }
}

/* Products in templates: attention's "B*H" binds its one unbound factor. */
static void
test_infer_product(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTensorType) sig = parse_type("Tensor[\"B*H\",\"S\",\"D\", bf16]");
  g_autoptr(TsTensorType) q = parse_type("Tensor[64, 128, 32, bf16]");
  g_autoptr(TsShape) shape = ts_shape_parse("B=8", NULL);
  const TsTensorType *sigs[] = {sig}, *ins[] = {q};
  const char *names[] = {"Q"};
  g_autoptr(TsTensorType) out = ts_ir_infer(sigs, ins, names, 1, sig, shape, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_shape_get(shape, "H"), ==, 64 / 8);
  g_assert_cmpint(out->dims[0].size, ==, 64);

  /* 60 is not a multiple of B=8. */
  g_autoptr(TsTensorType) bad = parse_type("Tensor[60, 128, 32, bf16]");
  g_autoptr(TsShape) s2 = ts_shape_parse("B=8", NULL);
  const TsTensorType *ins2[] = {bad};
  g_autoptr(TsTensorType) none = ts_ir_infer(sigs, ins2, names, 1, sig, s2, &error);
  g_assert_null(none);
  g_assert_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE);
  g_assert_nonnull(strstr(error->message, "'B*H'"));
}

/* ---- graphs ---- */

static TsGraph *
gemm_graph(void)
{
  g_autoptr(TsTensorType) a = parse_type("Tensor[\"M\",\"K\", bf16 @accum(f32)]");
  g_autoptr(TsTensorType) b = parse_type("Tensor[\"K\",\"N\", bf16 @accum(f32)]");
  g_autoptr(TsTensorType) c = parse_type("Tensor[\"M\",\"N\", bf16 @accum(f32)]");
  TsGraph *g = ts_graph_new("gemm");
  ts_graph_add_input(g, "A", a);
  ts_graph_add_input(g, "B", b);
  const char *ins[] = {"A", "B"};
  ts_graph_add_node(g, "gemm", ins, 2, "C", c, NULL);
  return g;
}

static void
test_graph_print(void)
{
  g_autoptr(TsGraph) g = gemm_graph();
  g_autoptr(TsShape) shape = ts_shape_parse("M=1024,N=1024,K=1024", NULL);
  g_autofree char *s = ts_graph_to_string(g, shape);
  g_assert_cmpstr(s, ==,
                  "graph gemm(M=1024, N=1024, K=1024) {\n"
                  "  %A : Tensor[\"M\",\"K\", bf16 @accum(f32)]\n"
                  "  %B : Tensor[\"K\",\"N\", bf16 @accum(f32)]\n"
                  "  %C = gemm(%A, %B) : Tensor[\"M\",\"N\", bf16 @accum(f32)]\n"
                  "}\n");

  g_autoptr(TsGraph) g2 = ts_graph_new("axpy");
  g_autoptr(TsTensorType) x = parse_type("Tensor[16, f32]");
  ts_graph_add_input(g2, "x", x);
  ts_graph_add_input(g2, "y", x);
  const char *ins[] = {"x", "y"};
  ts_graph_add_node(g2, "saxpy", ins, 2, "z", x, "alpha=2.0");
  g_autofree char *s2 = ts_graph_to_string(g2, NULL);
  g_assert_nonnull(strstr(s2, "graph axpy() {\n"));
  g_assert_nonnull(strstr(s2, "  %z = saxpy(%x, %y) {alpha=2.0} : Tensor[16, f32]\n"));
}

static void
test_graph_validate(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsGraph) g = gemm_graph();
  g_autoptr(TsShape) full = ts_shape_parse("M=64,N=32,K=16", NULL);
  g_assert_true(ts_graph_validate(g, full, &error));
  g_assert_no_error(error);

  g_autoptr(TsShape) partial = ts_shape_parse("M=64,K=16", NULL);
  g_assert_false(ts_graph_validate(g, partial, &error));
  g_assert_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE);
  g_assert_nonnull(strstr(error->message, "'N'"));
  g_assert_nonnull(strstr(error->message, "%B"));
  g_clear_error(&error);

  /* A dim whose type already carries a size must agree with the shape. */
  g_autoptr(TsTensorType) t = parse_type("Tensor[\"K\", f32]");
  t->dims[0].size = 8;
  g_autoptr(TsGraph) g2 = ts_graph_new("g2");
  ts_graph_add_input(g2, "x", t);
  g_assert_false(ts_graph_validate(g2, full, &error));
  g_assert_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE);
  g_assert_nonnull(strstr(error->message, "'K'"));
  g_clear_error(&error);

  /* Undefined operand. */
  const char *ins[] = {"nope"};
  ts_graph_add_node(g2, "relu", ins, 1, "y", t, NULL);
  t->dims[0].size = 16;
  g_autoptr(TsGraph) g3 = ts_graph_new("g3");
  ts_graph_add_node(g3, "relu", ins, 1, "y", t, NULL);
  g_assert_false(ts_graph_validate(g3, full, &error));
  g_assert_nonnull(strstr(error->message, "%nope"));
}

static void
test_null_safe(void)
{
  ts_tensor_type_free(NULL);
  ts_shape_free(NULL);
  ts_graph_free(NULL);
  g_assert_null(ts_tensor_type_copy(NULL));
  g_assert_null(ts_shape_copy(NULL));
  g_assert_true(ts_tensor_type_equal(NULL, NULL));
  g_assert_false(ts_shape_lookup(NULL, "M", NULL));
  g_assert_cmpuint(ts_shape_n_dims(NULL), ==, 0);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/ir/dtype/names", test_dtype_names);
  g_test_add_func("/ir/tensor-type/round-trip", test_tensor_type_round_trip);
  g_test_add_func("/ir/tensor-type/prefixes", test_prefixes_fail_cleanly);
  g_test_add_func("/ir/tensor-type/new", test_tensor_type_new);
  g_test_add_func("/ir/policy/round-trip", test_policy_round_trip);
  g_test_add_func("/ir/policy/loss-scale-exact", test_policy_loss_scale_exact);
  for (guint i = 0; i < G_N_ELEMENTS(error_cases); i++) {
    g_autofree char *path = g_strdup_printf("/ir/errors/%02u", i);
    g_test_add_data_func(path, GUINT_TO_POINTER(i), test_errors);
  }
  g_test_add_func("/ir/shape/parse-bind", test_shape);
  g_test_add_func("/ir/shape/dim-resolve", test_dim_resolve);
  g_test_add_func("/ir/infer/gemm", test_infer_gemm);
  g_test_add_func("/ir/infer/errors", test_infer_errors);
  g_test_add_func("/ir/infer/product", test_infer_product);
  g_test_add_func("/ir/graph/print", test_graph_print);
  g_test_add_func("/ir/graph/validate", test_graph_validate);
  g_test_add_func("/ir/null-safe", test_null_safe);
  return g_test_run();
}
