/* test-gate-suite.c — the perf gate's suite files (every setting, the defaults, and an error
 * message that names file, group and key for every mistake), its verdicts, and its three
 * reports: the text table, the Markdown comment and JUnit XML that parses back. */
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "ts-gate.h"

/* ---- suites ---- */

static TsGateSuite *
parse_ok(const char *text, const char *path)
{
  g_autoptr(GError) error = NULL;
  TsGateSuite *suite = ts_gate_suite_parse(text, -1, path, &error);
  g_assert_no_error(error);
  g_assert_nonnull(suite);
  return suite;
}

static const TsGateWorkload *
workload(const TsGateSuite *suite, guint i)
{
  g_assert_cmpuint(i, <, suite->workloads->len);
  return g_ptr_array_index(suite->workloads, i);
}

static void
test_suite_full(void)
{
  const char *text = "# the project's suite\n"
                     "[gate]\n"
                     "name = nightly\n"
                     "backend = cpu\n"
                     "threshold = 3%\n"
                     "alpha = 0.05\n"
                     "time = 2s\n"
                     "description = anything at all\n"
                     "\n"
                     "[gemm-512]\n"
                     "op = gemm\n"
                     "shape = M=512,N=512,K=512\n"
                     "schedule = best\n"
                     "\n"
                     "[gemm.bf16_256]\n"
                     "op = gemm\n"
                     "shape = M=256, N=256, K=256\n"
                     "dtype = bf16 @accum(f32)\n"
                     "schedule = default\n"
                     "threshold = 0.1\n"
                     "description = the mixed-precision path\n"
                     "\n"
                     "[saxpy]\n"
                     "op = saxpy\n"
                     "shape = N=1048576\n"
                     "schedule = block(n=4096).vector(8)\n"
                     "threshold = 7\n";
  g_autoptr(TsGateSuite) suite = parse_ok(text, "ci/nightly.suite");
  g_assert_cmpstr(suite->path, ==, "ci/nightly.suite");
  g_assert_cmpstr(suite->name, ==, "nightly");
  g_assert_cmpstr(suite->backend, ==, "cpu");
  g_assert_cmpfloat_with_epsilon(suite->threshold, 0.03, 1e-12);
  g_assert_cmpfloat_with_epsilon(suite->alpha, 0.05, 1e-12);
  g_assert_cmpfloat_with_epsilon(suite->time_ms, 2000, 1e-9);
  g_assert_cmpuint(suite->workloads->len, ==, 3);

  const TsGateWorkload *w = workload(suite, 0);
  g_assert_cmpstr(w->name, ==, "gemm-512");
  g_assert_cmpstr(w->op, ==, "gemm");
  g_assert_cmpstr(w->shape, ==, "M=512,N=512,K=512");
  g_assert_cmpstr(w->dtype, ==, "f32");
  g_assert_cmpint(w->schedule_kind, ==, TS_GATE_SCHEDULE_BEST);
  g_assert_null(w->schedule);
  g_assert_true(isnan(w->threshold));
  g_assert_cmpfloat_with_epsilon(ts_gate_workload_threshold(suite, w), 0.03, 1e-12);

  w = workload(suite, 1);
  g_assert_cmpstr(w->name, ==, "gemm.bf16_256");
  g_assert_cmpstr(w->dtype, ==, "bf16 @accum(f32)");
  g_assert_cmpint(w->schedule_kind, ==, TS_GATE_SCHEDULE_DEFAULT);
  g_assert_null(w->schedule);
  g_assert_cmpfloat_with_epsilon(ts_gate_workload_threshold(suite, w), 0.1, 1e-12);
  g_autofree char *desc = ts_gate_workload_describe(w);
  g_assert_true(g_str_has_prefix(desc, "gemm M=256,N=256,K=256 bf16"));

  w = workload(suite, 2);
  g_assert_cmpint(w->schedule_kind, ==, TS_GATE_SCHEDULE_POINT);
  g_assert_cmpstr(w->schedule, ==, "block(n=4096).vector(8)");
  /* A bare number >= 1 is percent. */
  g_assert_cmpfloat_with_epsilon(ts_gate_workload_threshold(suite, w), 0.07, 1e-12);
  g_autofree char *desc2 = ts_gate_workload_describe(w);
  g_assert_cmpstr(desc2, ==, "saxpy N=1048576 f32");
}

static void
test_suite_defaults(void)
{
  g_autoptr(TsGateSuite) suite = parse_ok("[w]\nop=saxpy\nshape=N=1024\n", NULL);
  g_assert_cmpstr(suite->path, ==, "<string>");
  g_assert_cmpstr(suite->name, ==, "suite");
  g_assert_cmpstr(suite->backend, ==, "auto");
  g_assert_cmpfloat(suite->threshold, ==, 0.05);
  g_assert_cmpfloat(suite->alpha, ==, 0.01);
  g_assert_cmpfloat(suite->time_ms, ==, 1500);
  const TsGateWorkload *w = workload(suite, 0);
  g_assert_cmpstr(w->dtype, ==, "f32");
  g_assert_cmpint(w->schedule_kind, ==, TS_GATE_SCHEDULE_DEFAULT);
  g_assert_true(isnan(w->threshold));
  g_assert_cmpfloat(ts_gate_workload_threshold(suite, w), ==, 0.05);

  /* The name defaults to the file's basename without its extension. */
  const char *text = "[w]\nop=saxpy\nshape=N=1024\n";
  g_autoptr(TsGateSuite) a = parse_ok(text, "/some/dir/perf.gate.suite");
  g_assert_cmpstr(a->name, ==, "perf.gate");
  g_autoptr(TsGateSuite) b = parse_ok(text, "noext");
  g_assert_cmpstr(b->name, ==, "noext");
  g_autoptr(TsGateSuite) c = parse_ok(text, "dir/.hidden");
  g_assert_cmpstr(c->name, ==, ".hidden");

  /* An explicit length: what follows is not read. */
  const char *longer = "[w]\nop=saxpy\nshape=N=8\n[junk";
  g_autoptr(GError) error = NULL;
  g_autoptr(TsGateSuite) e = ts_gate_suite_parse(longer, (gssize)strlen(longer) - 5, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(e->workloads->len, ==, 1);

  /* Workloads keep file order, wherever [gate] is. */
  g_autoptr(TsGateSuite) d =
      parse_ok("[b]\nop=saxpy\nshape=N=8\n[gate]\nalpha=5%\n[a]\nop=saxpy\nshape=N=8\n", NULL);
  g_assert_cmpstr(workload(d, 0)->name, ==, "b");
  g_assert_cmpstr(workload(d, 1)->name, ==, "a");
  g_assert_cmpfloat_with_epsilon(d->alpha, 0.05, 1e-12);
}

static void
test_suite_time_forms(void)
{
  static const struct {
    const char *text;
    double ms;
  } good[] = {{"1500", 1500}, {"1500ms", 1500}, {"1.5s", 1500}, {" 250 ms", 250},
              {"0.5", 0.5},   {"2S", 2000},     {".25s", 250}};
  for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
    g_autofree char *text =
        g_strdup_printf("[gate]\ntime=%s\n[w]\nop=saxpy\nshape=N=8\n", good[i].text);
    g_autoptr(TsGateSuite) suite = parse_ok(text, NULL);
    g_assert_cmpfloat_with_epsilon(suite->time_ms, good[i].ms, 1e-9);
  }
  static const char *const bad[] = {"0", "-1", "fast", "1.5h", "inf", "nan", "0x10", "1 2"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autofree char *text = g_strdup_printf("[gate]\ntime=%s\n[w]\nop=saxpy\nshape=N=8\n", bad[i]);
    g_autoptr(GError) error = NULL;
    g_assert_null(ts_gate_suite_parse(text, -1, "t.suite", &error));
    g_assert_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE);
    g_assert_nonnull(strstr(error->message, "t.suite: [gate] time: "));
    g_assert_nonnull(strstr(error->message, "1.5s"));
  }
}

static void
test_fraction(void)
{
  static const struct {
    const char *text;
    double value;
  } good[] = {{"5%", 0.05}, {"0.05", 0.05}, {"5", 0.05},     {"0.5%", 0.005}, {" 2.5 % ", 0.025},
              {"1", 0.01},  {"99%", 0.99},  {"1e-3", 0.001}, {".2", 0.2},     {"50", 0.5}};
  for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
    double f = -1;
    g_assert_true(ts_gate_parse_fraction(good[i].text, &f));
    g_assert_cmpfloat_with_epsilon(f, good[i].value, 1e-12);
  }
  static const char *const bad[] = {"0", "0%", "100%", "100", "150%", "-5%", "abc",  "5%%",
                                    "",  "%",  "inf",  "nan", "0x1",  "5 x", "1.0.0"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    double f = -1;
    g_assert_false(ts_gate_parse_fraction(bad[i], &f));
    g_assert_cmpfloat(f, ==, -1);
  }
  g_assert_false(ts_gate_parse_fraction(NULL, NULL));
}

typedef struct {
  const char *text;
  const char *expect[4]; /* substrings of the message, NULL-terminated */
} BadSuite;

static const BadSuite bad_suites[] = {
    /* structure */
    {"", {"t.suite: no workloads: add a [name] group with op= (or kernel=) and shape="}},
    {"[gate]\nthreshold=5%\n", {"no workloads: add a [name] group with op= (or kernel=) and shape="}},
    {"op=gemm\n", {"t.suite: ", "docs/perfgate.md"}},
    {"[w]\nop=saxpy\nshape=N=8\n[w]\nop=gemm\n", {"t.suite: [w]: given twice", "unique"}},
    {"[gate]\n[gate]\n[w]\nop=saxpy\nshape=N=8\n", {"[gate]: given twice", "keep one"}},
    {"[Gate]\nthreshold=5%\n", {"[Gate]: ", "case-sensitive", "[gate]"}},
    {"[my gemm]\nop=gemm\n", {"[my gemm]: ", "letters, digits"}},
    {"[w/x]\nop=gemm\n", {"[w/x]: ", "letters, digits"}},
    /* keys */
    {"[w]\nop=saxpy\nshape=N=8\nthreshhold=5%\n",
     {"t.suite: [w] threshhold: unknown key", "did you mean 'threshold'?"}},
    {"[gate]\nthresold=5%\n[w]\nop=saxpy\nshape=N=8\n",
     {"[gate] thresold: unknown key", "did you mean 'threshold'?", "keys of [gate]"}},
    {"[gate]\nnmae=x\n[w]\nop=saxpy\nshape=N=8\n", {"[gate] nmae: ", "did you mean 'name'?"}},
    {"[w]\nop=saxpy\nshape=N=8\nwhatever=1\n",
     {"[w] whatever: unknown key (keys of a workload: op, kernel, shape, dtype"}},
    {"[w]\nop=saxpy\nshape=N=8\nalpha=0.01\n", {"[w] alpha: a suite setting", "move it to [gate]"}},
    {"[w]\nop=saxpy\nop=gemm\nshape=N=8\n", {"[w] op: given twice"}},
    {"[w]\nop=saxpy\nshape=\n", {"[w] shape: empty value"}},
    {"[gate]\nname=\n[w]\nop=saxpy\nshape=N=8\n", {"[gate] name: empty value"}},
    /* settings */
    {"[gate]\nthreshold=150%\n[w]\nop=saxpy\nshape=N=8\n",
     {"[gate] threshold: '150%' is not a fraction", "5%", "0.05"}},
    {"[gate]\nalpha=0\n[w]\nop=saxpy\nshape=N=8\n", {"[gate] alpha: '0' is not a fraction"}},
    {"[gate]\nbackend=cpuu\n[w]\nop=saxpy\nshape=N=8\n",
     {"[gate] backend: unknown backend 'cpuu'", "did you mean 'cpu'?", "auto"}},
    /* workloads */
    {"[w]\nshape=N=8\n", {"t.suite: [w]: missing op=", "gemm", "saxpy"}},
    {"[w]\nop=gem\nshape=M=8,N=8,K=8\n",
     {"[w] op: unknown op 'gem'", "did you mean 'gemm'?", "known ops:"}},
    {"[w]\nop=gemm\n", {"[w]: missing shape=", "M,N,K", "shape=M=512,N=512,K=512"}},
    {"[w]\nop=gemm\nshape=M=64,N=64\n", {"[w] shape: ", "lacks dim 'K'"}},
    {"[w]\nop=gemm\nshape=M=64,N=64,K=64,Q=2\n", {"[w] shape: ", "'Q'"}},
    {"[w]\nop=gemm\nshape=M=64,N=64,K=x\n", {"[w] shape: ", "M=512,N=512,K=512"}},
    {"[w]\nop=saxpy\nshape=N=0\n", {"[w] shape: ", "(write it as N=512)"}},
    {"[w]\nop=saxpy\nshape=N=64\ndtype=f33\n", {"[w] dtype: ", "f33"}},
    {"[w]\nop=saxpy\nshape=N=64\ndtype=int8\n", {"[w] dtype: ", "not supported"}},
    {"[w]\nop=saxpy\nshape=N=64\nthreshold=-5%\n", {"[w] threshold: '-5%' is not a fraction"}},
    {"[w]\nop=saxpy\nshape=N=64\nschedule=bset\n",
     {"[w] schedule: 'bset' is not a schedule", "did you mean 'best'?"}},
    {"[w]\nop=saxpy\nshape=N=64\nschedule=Default\n", {"did you mean 'default'?"}},
    {"[w]\nop=saxpy\nshape=N=64\nschedule=block(n=[4096,16384])\n",
     {"[w] schedule: knob 'BN' has 2 values", "one point"}},
    {"[w]\nop=saxpy\nshape=N=64\nschedule=block(n=4096).wraps(4)\n",
     {"[w] schedule: ", "did you mean 'warps'?"}},
    {"[w]\nop=saxpy\nshape=N=64\nschedule=block(n=4096).warps(4)\n",
     {"[w] schedule: ", "'warps'", "cpu"}},
    {"[w]\nop=gemm\nshape=M=64,N=64,K=64\nschedule=micro(m=6,n=16).vector(5)\n",
     {"[w] schedule: ", "violates"}},
    {"[w]\nop=saxpy\nshape=N=64\nschedule=block(n=\n", {"[w] schedule: "}},
};

static void
test_suite_errors(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(bad_suites); i++) {
    const BadSuite *b = &bad_suites[i];
    g_autoptr(GError) error = NULL;
    g_autoptr(TsGateSuite) suite = ts_gate_suite_parse(b->text, -1, "t.suite", &error);
    if (suite != NULL)
      g_error("accepted: %s", b->text);
    g_assert_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE);
    g_assert_true(g_str_has_prefix(error->message, "t.suite: "));
    for (guint j = 0; b->expect[j]; j++)
      if (strstr(error->message, b->expect[j]) == NULL)
        g_error("message for %s\n  %s\nlacks: %s", b->text, error->message, b->expect[j]);
  }
}

static void
test_suite_load(void)
{
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_gate_suite_load("/nonexistent/x.suite", &error));
  g_assert_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE);
  g_assert_true(g_str_has_prefix(error->message, "/nonexistent/x.suite: "));
  g_clear_error(&error);

  g_autofree char *dir = g_dir_make_tmp("gate-suite-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *path = g_build_filename(dir, "mine.suite", NULL);
  g_assert_true(g_file_set_contents(path, "[w]\nop=saxpy\nshape=N=8\n", -1, &error));
  g_autoptr(TsGateSuite) suite = ts_gate_suite_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(suite->name, ==, "mine");
  g_assert_cmpstr(suite->path, ==, path);

  /* Errors of a loaded file name it. */
  g_assert_true(g_file_set_contents(path, "[w]\nop=saxpy\n", -1, &error));
  g_assert_null(ts_gate_suite_load(path, &error));
  g_assert_true(g_str_has_prefix(error->message, path));
  g_clear_error(&error);
  /* Binary junk is GKeyFile's error, prefixed with the path. */
  g_assert_true(g_file_set_contents(path, "[w]\n\xff\xfe=1\n", -1, &error));
  g_assert_null(ts_gate_suite_load(path, &error));
  g_assert_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE);
  g_assert_true(g_str_has_prefix(error->message, path));
  g_clear_error(&error);
  g_unlink(path);
  g_rmdir(dir);
}

/* kernel=FILE: a kernel file's kernel as the workload's op, found from the suite's folder,
 * op= picking the kernel and its flags; each mistake named at its key. */
static void
test_suite_kernel(void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("gate-suite-XXXXXX", &error);
  g_assert_no_error(error);
  g_autofree char *src = NULL;
  g_autofree char *kfile = g_test_build_filename(G_TEST_DIST, "kernels", "affine_flag.tsk", NULL);
  g_assert_true(g_file_get_contents(kfile, &src, NULL, &error));
  g_autofree char *sub = g_build_filename(dir, "k", NULL);
  g_assert_cmpint(g_mkdir(sub, 0700), ==, 0);
  g_autofree char *kpath = g_build_filename(sub, "affine.tsk", NULL);
  g_assert_true(g_file_set_contents(kpath, src, -1, &error));
  g_autofree char *path = g_build_filename(dir, "mine.suite", NULL);
  g_assert_true(g_file_set_contents(path,
                                    "[on]\nkernel = k/affine.tsk\nshape = N=4096\n"
                                    "[off]\nkernel = k/affine.tsk\nop = affine+relu=false\n"
                                    "shape = N=4096\nschedule = block(n=1024).vector(4)\n",
                                    -1, &error));
  g_autoptr(TsGateSuite) suite = ts_gate_suite_load(path, &error);
  g_assert_no_error(error);
  const TsGateWorkload *on = workload(suite, 0), *off = workload(suite, 1);
  g_assert_true(g_str_has_prefix(on->op, "kernel:affine@"));
  g_assert_true(g_str_has_prefix(off->op, "kernel:affine+relu=false@"));
  g_assert_cmpstr(on->kernel, ==, "k/affine.tsk");
  g_assert_cmpstr(on->kernel_path, ==, kpath);
  g_assert_cmpstr(on->kernel_src, ==, src);
  g_assert_cmpint(off->schedule_kind, ==, TS_GATE_SCHEDULE_POINT);

  static const BadSuite bad[] = {
    {"[w]\nkernel = k/nosuch.tsk\nshape = N=64\n",
     {"[w] kernel: cannot read the kernel file", "nosuch.tsk"}},
    {"[w]\nkernel = k/affine.tsk\nop = affin\nshape = N=64\n",
     {"[w] op: ", "has no kernel named 'affin'"}},
    {"[w]\nkernel = k/affine.tsk\nop = affine+gelu\nshape = N=64\n", {"[w] op: ", "gelu"}},
    {"[w]\nkernel = k/bad.tsk\nshape = N=64\n", {"[w] kernel: ", "bad.tsk:2:"}},
    {"[w]\nkernel = k/affine.tsk\nshape = M=64\n", {"[w] shape: "}},
    {"[w]\nkernel = /dev/zero\nshape = N=64\n", {"[w] kernel: '/dev/zero' is not a file"}},
    {"[w]\nkernel = k\nshape = N=64\n", {"[w] kernel: ", "is not a file"}},
  };
  g_autofree char *badk = g_build_filename(sub, "bad.tsk", NULL);
  g_assert_true(g_file_set_contents(badk, "def f(x: Tensor[\"N\", f32]):\n    y = = 1\n", -1,
                                    &error));
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_assert_true(g_file_set_contents(path, bad[i].text, -1, &error));
    g_autoptr(TsGateSuite) s = ts_gate_suite_load(path, &error);
    if (s != NULL)
      g_error("accepted: %s", bad[i].text);
    g_assert_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE);
    g_assert_true(g_str_has_prefix(error->message, path));
    for (guint j = 0; bad[i].expect[j]; j++)
      if (strstr(error->message, bad[i].expect[j]) == NULL)
        g_error("message for %s\n  %s\nlacks: %s", bad[i].text, error->message, bad[i].expect[j]);
    g_clear_error(&error);
  }
  g_unlink(badk);
  g_unlink(kpath);
  g_rmdir(sub);
  g_unlink(path);
  g_rmdir(dir);
}

/* The project's own suite must always parse. */
static void
test_bench_suite(void)
{
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "..", "bench", "gate.suite", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsGateSuite) suite = ts_gate_suite_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(suite->name, ==, "gate");
  g_assert_cmpstr(suite->backend, ==, "cpu");
  static const char *const ops[] = {"gemm",  "gemm",  "softmax_safe", "layernorm_safe",
                                    "saxpy", "flash_attention_causal"};
  g_assert_cmpuint(suite->workloads->len, ==, G_N_ELEMENTS(ops));
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    g_assert_cmpstr(workload(suite, i)->op, ==, ops[i]);
  g_assert_cmpstr(workload(suite, 1)->dtype, ==, "bf16 @accum(f32)");
  g_assert_cmpstr(workload(suite, 5)->dtype, ==, "bf16 @accum(f32)");
}

/* ---- verdicts ---- */

static void
test_verdicts(void)
{
  static const struct {
    TsGateVerdict v;
    const char *name;
    gboolean fails;
  } all[] = {{TS_GATE_PASS, "pass", FALSE},
             {TS_GATE_IMPROVED, "improved", FALSE},
             {TS_GATE_REGRESSION, "regression", TRUE},
             {TS_GATE_FAILED, "failed", TRUE},
             {TS_GATE_NEW, "new", FALSE}};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    g_assert_cmpstr(ts_gate_verdict_name(all[i].v), ==, all[i].name);
    TsGateVerdict parsed = TS_GATE_PASS;
    g_assert_true(ts_gate_verdict_parse(all[i].name, &parsed));
    g_assert_cmpint(parsed, ==, all[i].v);
    g_assert_cmpint(ts_gate_verdict_fails(all[i].v), ==, all[i].fails);
  }
  TsGateVerdict v = TS_GATE_NEW;
  g_assert_false(ts_gate_verdict_parse("regresion", &v));
  g_assert_false(ts_gate_verdict_parse(NULL, &v));
  g_assert_cmpint(v, ==, TS_GATE_NEW);

  g_autoptr(TsGateResult) r = ts_gate_result_new();
  g_assert_cmpint(r->verdict, ==, TS_GATE_PASS);
  g_assert_true(isnan(r->change) && isnan(r->p_value) && isnan(r->base_median_ns) &&
                isnan(r->cur_median_ns) && isnan(r->threshold));
  g_assert_null(r->note);
  ts_gate_result_add_note(r, "first %d", 1);
  ts_gate_result_add_note(r, "second");
  g_assert_cmpstr(r->note, ==, "first 1; second");
}

/* ---- reports ---- */

static GArray *
samples(double value, guint n)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < n; i++)
    g_array_append_val(a, value);
  return a;
}

static TsGateResult *
result(const char *name, TsGateVerdict verdict, double base, double cur, double change, double p)
{
  TsGateResult *r = ts_gate_result_new();
  r->name = g_strdup(name);
  r->workload = g_strdup_printf("%s M=1 f32", name);
  r->verdict = verdict;
  r->base_median_ns = base;
  r->cur_median_ns = cur;
  r->change = change;
  r->p_value = p;
  r->threshold = 0.05;
  if (!isnan(base))
    r->base_ns = samples(base, 4);
  if (!isnan(cur))
    r->cur_ns = samples(cur, 4);
  return r;
}

/* In suite order: a pass, an improvement, a regression, a failure, a new workload. */
static GPtrArray *
mixed_results(void)
{
  GPtrArray *results = g_ptr_array_new_with_free_func((GDestroyNotify)ts_gate_result_free);
  TsGateResult *r = result("gemm-384", TS_GATE_PASS, 1.2e6, 1.25e6, 0.016, 0.31);
  r->ab = TRUE;
  g_ptr_array_add(results, r);
  r = result("softmax", TS_GATE_IMPROVED, 50e3, 40e3, -0.2, 1e-8);
  r->ab = TRUE;
  r->threshold = 0.03;
  g_ptr_array_add(results, r);
  r = result("saxpy", TS_GATE_REGRESSION, 800, 850, 0.061, 0.0003);
  r->remeasured = 2;
  g_ptr_array_add(results, r);
  r = result("layernorm", TS_GATE_FAILED, 2e3, NAN, NAN, NAN);
  ts_gate_result_add_note(r, "compile error: a | b <&> \x1b[31mred\x1b[0m\nsecond line");
  g_ptr_array_add(results, r);
  r = result("gemm-bf16", TS_GATE_NEW, NAN, 2.5e9, NAN, NAN);
  ts_gate_result_add_note(r, "no baseline for this workload");
  g_ptr_array_add(results, r);
  return results;
}

static TsGateReport
report_of(GPtrArray *results)
{
  TsGateReport report = {
      .suite = "gate",
      .device = "AMD EPYC | test, gcc 12.2.0",
      .base = "baseline #3 abc1234 (2026-11-23 10:01)",
      .head = "this build def5678",
      .threshold = 0.05,
      .alpha = 0.01,
      .results = results,
  };
  return report;
}

static void
test_report_verdict(void)
{
  g_autoptr(GPtrArray) results = mixed_results();
  TsGateReport report = report_of(results);
  g_assert_cmpint(ts_gate_report_verdict(&report), ==, TS_GATE_FAILED);
  g_assert_cmpint(ts_gate_report_exit_code(&report), ==, 1);
  g_ptr_array_remove_index(results, 3); /* the failure */
  g_assert_cmpint(ts_gate_report_verdict(&report), ==, TS_GATE_REGRESSION);
  g_assert_cmpint(ts_gate_report_exit_code(&report), ==, 1);
  g_ptr_array_remove_index(results, 2); /* the regression */
  g_assert_cmpint(ts_gate_report_verdict(&report), ==, TS_GATE_PASS);
  g_assert_cmpint(ts_gate_report_exit_code(&report), ==, 0);
  g_ptr_array_set_size(results, 0);
  g_assert_cmpint(ts_gate_report_exit_code(&report), ==, 0);
}

/* The column (in characters) where `word` starts on the line starting with `prefix`. */
static glong
column_of(char **lines, const char *prefix, const char *word)
{
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i], prefix)) {
      const char *at = strstr(lines[i], word);
      g_assert_nonnull(at);
      return g_utf8_pointer_to_offset(lines[i], at);
    }
  g_error("no line starts with '%s'", prefix);
}

static void
test_report_text(void)
{
  g_autoptr(GPtrArray) results = mixed_results();
  TsGateReport report = report_of(results);
  g_autofree char *text = ts_gate_report_text(&report, FALSE);
  g_test_message("%s", text);
  static const char *const expect[] = {
      "suite gate",
      "AMD EPYC | test",
      "baseline #3 abc1234",
      "this build def5678",
      "1.20 ms",
      "1.25 ms",
      "+1.6%",
      "0.31",
      "pass (A/B)",
      "50.0 µs",
      "40.0 µs",
      "-20.0%",
      "<1e-6",
      "improved (A/B, threshold 3%)",
      "800 ns",
      "850 ns",
      "+6.1%",
      "0.0003",
      "regression (stored, re-measured 2×)",
      "2.50 s",
      "note: no baseline for this workload",
      "note: compile error: a | b <&> red\n            second line",
      "5 workloads: 1 pass, 1 improved, 1 regression, 1 failed, 1 new — FAIL",
  };
  for (guint i = 0; i < G_N_ELEMENTS(expect); i++)
    if (strstr(text, expect[i]) == NULL)
      g_error("text report lacks '%s'", expect[i]);
  g_assert_null(strstr(text, "\033[3"));

  /* Columns line up, counting characters (µs and — are multi-byte). */
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  glong col = column_of(lines, "  workload", "verdict");
  g_assert_cmpint(column_of(lines, "  gemm-384", "pass"), ==, col);
  g_assert_cmpint(column_of(lines, "  softmax", "improved"), ==, col);
  g_assert_cmpint(column_of(lines, "  layernorm", "failed"), ==, col);
  g_assert_cmpint(column_of(lines, "  gemm-bf16", "new"), ==, col);

  g_autofree char *colored = ts_gate_report_text(&report, TRUE);
  g_assert_nonnull(strstr(colored, "\033[31mregression\033[0m"));
  g_assert_nonnull(strstr(colored, "\033[31mfailed\033[0m"));
  g_assert_nonnull(strstr(colored, "\033[32mimproved\033[0m"));
  g_assert_nonnull(strstr(colored, "FAIL\033[0m"));

  g_ptr_array_remove_range(results, 1, 4);
  g_autofree char *pass = ts_gate_report_text(&report, FALSE);
  g_assert_nonnull(strstr(pass, "1 workload: 1 pass — PASS"));
}

static void
test_report_markdown(void)
{
  g_autoptr(GPtrArray) results = mixed_results();
  TsGateReport report = report_of(results);
  g_autofree char *md = ts_gate_report_markdown(&report);
  g_test_message("%s", md);
  g_assert_true(
      g_str_has_prefix(md, "## ❌ Perf gate: regression in 1 and failure in 1 of 5 workloads\n"));
  g_assert_nonnull(strstr(md, "AMD EPYC \\| test"));
  g_assert_nonnull(strstr(md, "| workload | baseline | current | change | p | verdict |"));

  /* One row per result, regressions first, then failures, then the rest in suite order. */
  g_auto(GStrv) lines = g_strsplit(md, "\n", -1);
  static const char *const order[] = {"| saxpy |", "| layernorm |", "| gemm-384 |", "| softmax |",
                                      "| gemm-bf16 |"};
  guint row = 0;
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i], "| ") && !g_str_has_prefix(lines[i], "| workload")) {
      g_assert_cmpuint(row, <, G_N_ELEMENTS(order));
      g_assert_true(g_str_has_prefix(lines[i], order[row]));
      row++;
    }
  g_assert_cmpuint(row, ==, G_N_ELEMENTS(order));
  g_assert_nonnull(strstr(md, "| 800 ns | 850 ns | +6.1% | 0.0003 | ❌ **regression** "
                              "(stored, re-measured 2×) |"));
  g_assert_nonnull(strstr(md, "| \\<1e-6 |"));

  /* The note is escaped: no raw '|', '<' or newline can break the list or inject HTML. */
  g_assert_nonnull(strstr(md, "- **layernorm**: compile error: a \\| b \\<\\&\\>"));
  g_assert_nonnull(strstr(md, "<br>second line"));
  g_assert_null(strstr(md, "<&>"));
  g_assert_nonnull(strstr(md, "5 workloads: 1 pass, 1 improved, 1 regression, 1 failed, 1 new"));

  /* Titles of the other outcomes. */
  g_ptr_array_remove_index(results, 3);
  g_autofree char *reg = ts_gate_report_markdown(&report);
  g_assert_true(g_str_has_prefix(reg, "## ❌ Perf gate: regression in 1 of 4 workloads\n"));
  g_ptr_array_remove_index(results, 2);
  g_autofree char *improved = ts_gate_report_markdown(&report);
  g_assert_true(g_str_has_prefix(improved, "## ✅ Perf gate: pass (3 workloads, 1 improved)\n"));
  g_ptr_array_remove_index(results, 1);
  g_autofree char *pass = ts_gate_report_markdown(&report);
  g_assert_true(g_str_has_prefix(pass, "## ✅ Perf gate: pass (2 workloads)\n"));
}

/* ---- JUnit, parsed back ---- */

typedef struct {
  guint testsuites, testsuite, testcase, failure, skipped, system_out, property;
  GString *path;     /* element names from the root, '/'-separated */
  GHashTable *attrs; /* "element@attr" of the first element of each kind -> value */
  GString *text;     /* text of all <failure> elements */
  GPtrArray *failure_types;
  char *case_time; /* time of the testcase named gemm-384 */
} JunitCounts;

static void
junit_start(GMarkupParseContext *ctx, const char *element, const char **names, const char **values,
            gpointer data, GError **error)
{
  JunitCounts *c = data;
  g_string_append_printf(c->path, "/%s", element);
  if (strcmp(element, "testsuites") == 0)
    c->testsuites++;
  else if (strcmp(element, "testsuite") == 0)
    c->testsuite++;
  else if (strcmp(element, "testcase") == 0)
    c->testcase++;
  else if (strcmp(element, "failure") == 0)
    c->failure++;
  else if (strcmp(element, "skipped") == 0)
    c->skipped++;
  else if (strcmp(element, "system-out") == 0)
    c->system_out++;
  else if (strcmp(element, "property") == 0)
    c->property++;
  gboolean gemm = FALSE;
  for (guint i = 0; names[i]; i++) {
    char *key = g_strdup_printf("%s@%s", element, names[i]);
    if (!g_hash_table_contains(c->attrs, key))
      g_hash_table_insert(c->attrs, key, g_strdup(values[i]));
    else
      g_free(key);
    if (strcmp(element, "failure") == 0 && strcmp(names[i], "type") == 0)
      g_ptr_array_add(c->failure_types, g_strdup(values[i]));
    if (strcmp(element, "testcase") == 0 && strcmp(names[i], "name") == 0)
      gemm = strcmp(values[i], "gemm-384") == 0;
  }
  for (guint i = 0; gemm && names[i]; i++)
    if (strcmp(names[i], "time") == 0)
      c->case_time = g_strdup(values[i]);
}

static void
junit_end(GMarkupParseContext *ctx, const char *element, gpointer data, GError **error)
{
  JunitCounts *c = data;
  g_string_truncate(c->path, strrchr(c->path->str, '/') - c->path->str);
}

static void
junit_text(GMarkupParseContext *ctx, const char *text, gsize len, gpointer data, GError **error)
{
  JunitCounts *c = data;
  if (g_str_has_suffix(c->path->str, "/failure"))
    g_string_append_len(c->text, text, (gssize)len);
}

static void
test_report_junit(void)
{
  g_autoptr(GPtrArray) results = mixed_results();
  TsGateReport report = report_of(results);
  g_autofree char *xml = ts_gate_report_junit(&report);
  g_test_message("%s", xml);
  g_assert_true(g_str_has_prefix(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"));
  /* The escape character of the note cannot appear in XML 1.0, not even as a reference. */
  g_assert_null(strchr(xml, '\x1b'));
  g_assert_null(strstr(xml, "&#x1b;"));

  JunitCounts c = {0};
  c.path = g_string_new(NULL);
  c.attrs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  c.text = g_string_new(NULL);
  c.failure_types = g_ptr_array_new_with_free_func(g_free);
  static const GMarkupParser parser = {junit_start, junit_end, junit_text, NULL, NULL};
  GMarkupParseContext *ctx = g_markup_parse_context_new(&parser, 0, &c, NULL);
  g_autoptr(GError) error = NULL;
  g_assert_true(g_markup_parse_context_parse(ctx, xml, -1, &error));
  g_assert_true(g_markup_parse_context_end_parse(ctx, &error));
  g_assert_no_error(error);
  g_markup_parse_context_free(ctx);

  g_assert_cmpuint(c.testsuites, ==, 1);
  g_assert_cmpuint(c.testsuite, ==, 1);
  g_assert_cmpuint(c.testcase, ==, 5);
  g_assert_cmpuint(c.failure, ==, 2);
  g_assert_cmpuint(c.skipped, ==, 1);
  g_assert_cmpuint(c.system_out, ==, 5);
  g_assert_cmpuint(c.property, ==, 5);
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "testsuite@name"), ==, "gate");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "testsuite@tests"), ==, "5");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "testsuite@failures"), ==, "2");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "testsuite@errors"), ==, "0");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "testsuite@skipped"), ==, "1");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "testcase@classname"), ==, "perfgate.gate");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "skipped@message"), ==, "no baseline");
  g_assert_cmpstr(g_hash_table_lookup(c.attrs, "property@value"), ==,
                  "AMD EPYC | test, gcc 12.2.0");
  g_assert_cmpuint(c.failure_types->len, ==, 2);
  g_assert_cmpstr(g_ptr_array_index(c.failure_types, 0), ==, "regression");
  g_assert_cmpstr(g_ptr_array_index(c.failure_types, 1), ==, "failed");
  const char *msg = g_hash_table_lookup(c.attrs, "failure@message");
  g_assert_nonnull(strstr(msg, "+6.1%"));
  g_assert_nonnull(strstr(msg, "800 ns"));
  g_assert_nonnull(strstr(msg, "850 ns"));
  /* The failed kernel's note survives escaping intact, less its colours. */
  g_assert_nonnull(strstr(c.text->str, "compile error: a | b <&> red\nsecond line"));
  g_assert_nonnull(strstr(c.text->str, "second line"));
  /* 4 base + 4 current samples of 1.2 and 1.25 ms. */
  g_assert_cmpfloat_with_epsilon(g_ascii_strtod(c.case_time, NULL), 9.8e-3, 1e-9);
  /* Every case carries its numbers. */
  g_assert_nonnull(strstr(xml, "baseline: 800 ns (median of 4 samples)"));
  g_assert_nonnull(strstr(xml, "p: 0.0003 (alpha 0.01)"));

  g_free(c.case_time);
  g_ptr_array_unref(c.failure_types);
  g_string_free(c.text, TRUE);
  g_hash_table_unref(c.attrs);
  g_string_free(c.path, TRUE);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/gate/suite/full", test_suite_full);
  g_test_add_func("/gate/suite/defaults", test_suite_defaults);
  g_test_add_func("/gate/suite/time", test_suite_time_forms);
  g_test_add_func("/gate/suite/fraction", test_fraction);
  g_test_add_func("/gate/suite/errors", test_suite_errors);
  g_test_add_func("/gate/suite/load", test_suite_load);
  g_test_add_func("/gate/suite/kernel", test_suite_kernel);
  g_test_add_func("/gate/suite/bench", test_bench_suite);
  g_test_add_func("/gate/verdicts", test_verdicts);
  g_test_add_func("/gate/report/verdict", test_report_verdict);
  g_test_add_func("/gate/report/text", test_report_text);
  g_test_add_func("/gate/report/markdown", test_report_markdown);
  g_test_add_func("/gate/report/junit", test_report_junit);
  return g_test_run();
}
