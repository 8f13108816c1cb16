/* test-ops.c — the spine on the CPU: every op × every point of a small space × every dtype is
 * lowered, compiled, run on fresh random inputs with poisoned outputs and verified against the
 * f64 reference; a deliberately wrong kernel and one that never writes its output are caught;
 * a compile error comes back with the compiler's text; bad workloads get clear errors. */
#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ts-cuda-tma.h"
#include "ts-emit.h"
#include "ts-half.h"
#include "ts-numerics.h"
#include "ts-op.h"
#include "ts-tile.h"

static TsBackend *backend;

static const char *const dtypes[] = {"f32", "bf16 @accum(f32)", "f16"};

typedef struct {
  const char *op;
  const char *shape;
  const char *space;
} OpCase;

/* Odd sizes so every kernel runs its vector body, its scalar tail and its edge tiles. */
static const OpCase cases[] = {
  {"gemm", "M=37,N=45,K=29",
   "block(m=[12], n=[32,48], k=[16]).micro(m=[4,6], n=[8,16]).vector([4,8]).unroll([2])"
   ".threads([1,2]).where(vector == 8 || MR == 4)"},
  /* A tile a program: tiles that are not whole micro-tiles, slices that are not whole K */
  {"gemm", "M=37,N=45,K=29",
   "block(m=[12,16], n=[20,32], k=[8,16]).micro(m=[6], n=[8,16]).vector([8]).unroll([2])"
   ".threads([1,2]).walk([\"tiles\"])"},
  {"saxpy", "N=1001", "block(n=[64,256]).vector([4,8]).threads([1,2])"},
  {"reduce_sum", "M=7,N=45", "block(m=[1,3]).vector([4,8]).threads([1,2])"},
  {"softmax_safe", "M=7,N=45", "block(m=[1,3]).vector([4,8]).threads([1,2])"},
  {"layernorm_safe", "M=7,N=45", "block(m=[1,3]).vector([4,8]).threads([1,2])"},
  {"rmsnorm_safe", "M=7,N=45", "block(m=[1,3]).vector([4,8]).threads([1,2])"},
};

static void
quick_options(TsRunOptions *opt)
{
  ts_run_options_init(opt);
  opt->n_warmup = 0;
  opt->min_samples = 1;
  opt->max_samples = 2;
  opt->target_ms = 1;
}

static void
test_space_runs(gconstpointer data)
{
  const OpCase *c = data;
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsOpInstance) inst = ts_op_instance_new(c->op, c->shape, dtypes[d], &error);
    g_assert_no_error(error);
    g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", c->space, &error);
    g_assert_no_error(error);
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, ts_backend_describe(backend));
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
    TsSchedPoint *p = NULL;
    guint n = 0;
    TsRunOptions opt;
    quick_options(&opt);
    opt.seed = 100 + d;
    while (ts_sched_iter_next(it, &p, &error)) {
      g_autoptr(TsSchedPoint) point = p;
      g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, &opt, &error);
      g_assert_no_error(error);
      if (r->status != TS_TRIAL_OK) {
        g_autofree char *pt = ts_sched_point_to_string(point);
        g_test_message("%s %s %s: %s", c->op, dtypes[d], pt, r->message);
      }
      g_assert_cmpstr(ts_trial_status_name(r->status), ==, "ok");
      g_assert_cmpfloat(r->rel_error, <=, r->tolerance);
      g_assert_cmpfloat(r->median_ns, >, 0);
      n++;
    }
    g_assert_no_error(error);
    guint64 expected = 0;
    g_assert_true(ts_sched_space_count_valid(space, env, &expected, NULL));
    g_assert_cmpuint(n, ==, expected);
    g_assert_cmpuint(n, >=, 8);
  }
}

static char *
replace_all(const char *s, const char *from, const char *to)
{
  g_auto(GStrv) parts = g_strsplit(s, from, -1);
  return g_strjoinv(to, parts);
}

/* The emitted source of a point (the default completing `partial`) for a workload (tests then
 * break it on purpose). */
/* The launch constants of the last source point_source_dt emitted. */
static GArray *source_ints;

static char *
point_source_dt(const char *op, const char *shape, const char *dtype, const char *partial,
                TsOpInstance **inst, char **entry)
{
  g_autoptr(GError) error = NULL;
  *inst = ts_op_instance_new(op, shape, dtype, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) user = partial ? ts_sched_point_parse(partial, &error) : NULL;
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(*inst, "cpu", user, &error);
  g_assert_no_error(error);
  g_clear_pointer(&source_ints, g_array_unref);
  char *src = ts_op_emit(*inst, "cpu", point, entry, &source_ints, &error);
  g_assert_no_error(error);
  return src;
}

static char *
point_source(const char *op, const char *shape, const char *partial, TsOpInstance **inst,
             char **entry)
{
  return point_source_dt(op, shape, "f32", partial, inst, entry);
}

static char *
default_source(const char *op, const char *shape, TsOpInstance **inst, char **entry)
{
  return point_source(op, shape, NULL, inst, entry);
}

static void
test_wrong_kernel_caught(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = default_source("saxpy", "N=1001", &inst, &entry);
  g_assert_nonnull(strstr(src, "alpha * x + y"));
  /* A sign error: every element is computed, so only the comparison with the reference can
   * catch it. */
  g_autofree char *wrong = replace_all(src, "alpha * x + y", "alpha * x - y");
  TsRunOptions opt;
  quick_options(&opt);
  g_autoptr(TsTrialResult) r = ts_op_run_source(inst, backend, wrong, entry, source_ints, &opt, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->status, ==, TS_TRIAL_WRONG_RESULT);
  g_assert_cmpfloat(r->rel_error, >, 0.1);
  g_assert_nonnull(strstr(r->message, "relative error"));
}

static void
test_unwritten_output_caught(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = default_source("gemm", "M=16,N=16,K=16", &inst, &entry);
  /* Skip the last row of C: the poisoned NaNs there must fail verification. */
  g_autofree char *bad = replace_all(src, "const int64_t mc = min(BM, M - ic);",
                                     "const int64_t mc = min(BM, M - 1 - ic);");
  g_assert_cmpstr(bad, !=, src);
  TsRunOptions opt;
  quick_options(&opt);
  g_autoptr(TsTrialResult) r = ts_op_run_source(inst, backend, bad, entry, source_ints, &opt, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->status, ==, TS_TRIAL_WRONG_RESULT);
  g_assert_nonnull(strstr(r->message, "16 of 256 output elements are NaN"));
}

static void
test_compile_error_reported(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("saxpy", "N=64", "f32", &error);
  g_assert_no_error(error);
  const char *src = "#include <stdint.h>\n"
                    "void ts_broken(void *const *b, const int64_t *i, const double *f)\n"
                    "{ int x = undeclared_tessera_name + ; }\n";
  g_autoptr(TsTrialResult) r = ts_op_run_source(inst, backend, src, "ts_broken", NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->status, ==, TS_TRIAL_COMPILE_ERROR);
  g_assert_nonnull(strstr(r->message, "error"));
  g_assert_nonnull(strstr(r->message, "undeclared_tessera_name"));
}

typedef struct {
  const char *op, *shape, *dtype;
  TsOpError code;
  const char *needle;
} BadCase;

static const BadCase bad_cases[] = {
  {"gem", "M=8", "f32", TS_OP_ERROR_UNKNOWN_OP, "unknown op 'gem'"},
  {"gemm", "M=8,N=8", "f32", TS_OP_ERROR_SHAPE, "lacks dim 'K'"},
  {"gemm", "M=8,N=8,K=8,Q=2", "f32", TS_OP_ERROR_SHAPE, "'Q'"},
  {"gemm", "M=8,N=8,K=8", "int8", TS_OP_ERROR_DTYPE, "int8"},
  {"gemm", "M=8,N=8,K=8", "bf16 @accum(bf16)", TS_OP_ERROR_DTYPE, "@accum(bf16)"},
  {"softmax_safe", "M=8,N=8", "f16 @saturate", TS_OP_ERROR_DTYPE, "@saturate"},
  {"softmax_safe", "M=8,N=8", "fp8_e4m3", TS_OP_ERROR_DTYPE, "fp8 inputs are taken by gemm"},
  {"gemm", "M=8,N=8,K=8", "fp8_e5m2 @accum(f16)", TS_OP_ERROR_DTYPE, "@accum(f16)"},
  {"saxpy", "N=4294967296", "f32", TS_OP_ERROR_SHAPE, "too large"},
};

static void
test_bad_workloads(void)
{
  for (guint i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
    const BadCase *b = &bad_cases[i];
    g_autoptr(GError) error = NULL;
    g_autoptr(TsOpInstance) inst = ts_op_instance_new(b->op, b->shape, b->dtype, &error);
    g_assert_null(inst);
    g_assert_error(error, TS_OP_ERROR, (int)b->code);
    if (strstr(error->message, b->needle) == NULL)
      g_error("case %u: '%s' lacks '%s'", i, error->message, b->needle);
  }
  /* Malformed shape and dtype come from the Graph IR parsers, prefixed with the op. */
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_op_instance_new("gemm", "M=8,N=,K=8", "f32", &error));
  g_assert_nonnull(strstr(error->message, "gemm: --shape"));
  g_clear_error(&error);
  g_assert_null(ts_op_instance_new("gemm", "M=8,N=8,K=8", "bf17", &error));
  g_assert_nonnull(strstr(error->message, "bf17"));
}

static void
test_bad_points(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=64,N=64,K=64", "f32", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) p = ts_sched_point_parse("micro(m=6,n=12).vector(8)", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cpu", p, &error));
  g_assert_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE);
  g_assert_nonnull(strstr(error->message, "NR % vector == 0"));
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) q = ts_sched_point_parse("warps(4)", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cpu", q, &error));
  g_assert_nonnull(strstr(error->message, "'warps'"));
  g_clear_error(&error);
  /* A tile a program needs the tile's f32 accumulator to fit a worker's L2 */
  g_autoptr(TsSchedPoint) r = ts_sched_point_parse("block(m=256,n=512,k=64).walk(\"tiles\")",
                                                   &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cpu", r, &error));
  g_assert_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE);
  g_assert_nonnull(strstr(error->message, "BM * BN <= 65536"));
}

static void
test_counts(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=10,N=20,K=30", "f32", &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(ts_op_instance_flops(inst), ==, 2.0 * 10 * 20 * 30);
  g_assert_cmpfloat(ts_op_instance_bytes(inst), ==, 4.0 * (10 * 30 + 30 * 20 + 10 * 20));
  g_autoptr(TsOpInstance) h = ts_op_instance_new("gemm", "M=10,N=20,K=30", "bf16", &error);
  g_assert_cmpfloat(ts_op_instance_bytes(h), ==, 2.0 * (10 * 30 + 30 * 20 + 10 * 20));
  g_autofree char *d = ts_op_instance_describe(h);
  g_assert_cmpstr(d, ==, "gemm M=10,N=20,K=30 bf16");
  /* Every default space an op has parses (a GPU-only op has no CPU space). */
  static const char *const backends[] = {"cpu", "cuda"};
  for (guint i = 0; i < ts_op_count(); i++)
    for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
      const TsOpDef *op = ts_op_nth(i);
      const char *text = ts_op_default_space(op, backends[b]);
      if (text == NULL)
        continue;
      g_autoptr(TsSchedSpace) s = ts_sched_space_parse(text, &error);
      g_assert_no_error(error);
      g_assert_nonnull(s);
    }
}

/* src (or a variant of it) bound to the launch constants of the source last emitted. */
static TsModule *
compile_source(const char *src, const char *entry)
{
  g_autoptr(GError) error = NULL;
  TsSource source = {TS_LANG_C, src, entry};
  TsModule *module = ts_backend_compile(backend, &source, &error);
  g_assert_no_error(error);
  g_assert_nonnull(module);
  g_assert_true(ts_module_bind_ints(module, (const gint64 *)(gpointer)source_ints->data,
                                    source_ints->len, &error));
  return module;
}

static double
min_of(const double *v, guint n)
{
  double m = v[0];
  for (guint i = 1; i < n; i++)
    m = MIN(m, v[i]);
  return m;
}

static TsOpTimer *
timer_ok(TsOpInstance *inst, TsModule *module)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTrialResult) r = NULL;
  TsOpTimer *t = ts_op_timer_new(inst, backend, module, NULL, &r, &error);
  g_assert_no_error(error);
  g_assert_nonnull(t);
  g_assert_nonnull(r);
  g_assert_cmpstr(ts_trial_status_name(r->status), ==, "ok");
  g_assert_cmpfloat(r->rel_error, <=, r->tolerance);
  g_assert_cmpuint(r->samples_ns->len, ==, 0);
  g_assert_cmpstr(r->artifact, ==, ts_module_hash(module));
  return t;
}

static void
test_timer_samples(void)
{
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = default_source("gemm", "M=64,N=64,K=64", &inst, &entry);
  g_autoptr(TsModule) module = compile_source(src, entry);
  g_autoptr(TsOpTimer) t = timer_ok(inst, module);
  g_autoptr(GError) error = NULL;
  double samples[5] = {0};
  g_assert_true(ts_op_timer_sample(t, 1, G_N_ELEMENTS(samples), samples, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++)
    g_assert_cmpfloat(samples[i], >, 0);
}

/* The gate's A/B rounds: a baseline and a current binary of one workload, sampled in turns. The
 * second timer's instance is gone by then: a timer keeps what it needs. */
static void
test_timer_alternate(void)
{
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = default_source("gemm", "M=64,N=64,K=64", &inst, &entry);
  g_autofree char *other_src = g_strconcat(src, "\n/* another binary */\n", NULL);
  g_autoptr(TsModule) a_mod = compile_source(src, entry);
  g_autoptr(TsModule) b_mod = compile_source(other_src, entry);
  g_assert_cmpstr(ts_module_hash(a_mod), !=, ts_module_hash(b_mod));
  g_autoptr(TsOpTimer) a = timer_ok(inst, a_mod);
  g_autoptr(TsOpTimer) b = NULL;
  {
    g_autoptr(TsOpInstance) b_inst = NULL;
    g_autofree char *b_entry = NULL;
    g_autofree char *b_src = default_source("gemm", "M=64,N=64,K=64", &b_inst, &b_entry);
    g_assert_cmpstr(b_src, ==, src);
    b = timer_ok(b_inst, b_mod);
  }
  g_autoptr(GError) error = NULL;
  for (guint round = 0; round < 6; round++) {
    double sa[3] = {0}, sb[3] = {0};
    g_assert_true(ts_op_timer_sample(a, round == 0 ? 2 : 0, G_N_ELEMENTS(sa), sa, &error));
    g_assert_true(ts_op_timer_sample(b, round == 0 ? 2 : 0, G_N_ELEMENTS(sb), sb, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < G_N_ELEMENTS(sa); i++) {
      g_assert_cmpfloat(sa[i], >, 0);
      g_assert_cmpfloat(sb[i], >, 0);
    }
  }
}

/* The injected slowdown is real time: with 2.0, every sample of one timer is its launch plus a
 * spin of twice it. Noise only ever adds time, so the fastest sample of each side is compared:
 * the slowed one is at least 3x its own fastest launch, the plain one is that launch unless all of
 * its samples were disturbed. CI once saw every plain sample of a round slower than the slowed
 * side's fastest launch (ASan, tests side by side on 2 cores), so a round that shows less than
 * 1.5x is measured again: a working slowdown shows in one of a few rounds, a missing one in none.
 * One thread: an OpenMP team on a 2-core machine shared with another test waits at its barrier
 * for a descheduled peer on every launch, which no number of samples escapes. */
static void
test_timer_slowdown(void)
{
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = point_source("gemm", "M=64,N=64,K=64", "threads(1)", &inst, &entry);
  g_autoptr(TsModule) module = compile_source(src, entry);
  g_autoptr(TsOpTimer) plain = timer_ok(inst, module);
  g_autoptr(TsOpTimer) slowed = timer_ok(inst, module);
  ts_op_timer_set_slowdown(slowed, 2.0);
  g_autoptr(GError) error = NULL;
  double warm = 0;
  g_assert_true(ts_op_timer_sample(plain, 2, 1, &warm, &error));
  g_assert_true(ts_op_timer_sample(slowed, 2, 1, &warm, &error));
  enum { N = 31, ROUNDS = 4 };
  double best_ratio = 0;
  for (guint round = 0; round < ROUNDS && best_ratio < 1.5; round++) {
    double sp[N], ss[N];
    for (guint i = 0; i < N; i++) {
      g_assert_true(ts_op_timer_sample(plain, 0, 1, &sp[i], &error));
      g_assert_true(ts_op_timer_sample(slowed, 0, 1, &ss[i], &error));
      g_assert_no_error(error);
    }
    double mp = min_of(sp, N), ms = min_of(ss, N);
    g_test_message("round %u: fastest %.0f ns plain, %.0f ns with slowdown 2.0 (x%.2f)", round,
                   mp, ms, ms / mp);
    best_ratio = MAX(best_ratio, ms / mp);
  }
  g_assert_cmpfloat(best_ratio, >=, 1.5);

  /* Several samples per call stretch each launch too. */
  double batch[4] = {0};
  g_assert_true(ts_op_timer_sample(slowed, 1, G_N_ELEMENTS(batch), batch, &error));
  g_assert_no_error(error);
  for (guint i = 0; i < G_N_ELEMENTS(batch); i++)
    g_assert_cmpfloat(batch[i], >, 0);
}

static void
test_timer_wrong_kernel(void)
{
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = default_source("saxpy", "N=1001", &inst, &entry);
  g_autofree char *wrong = replace_all(src, "alpha * x + y", "alpha * x - y");
  g_assert_cmpstr(wrong, !=, src);
  g_autoptr(TsModule) module = compile_source(wrong, entry);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTrialResult) r = NULL;
  TsOpTimer *t = ts_op_timer_new(inst, backend, module, NULL, &r, &error);
  g_assert_null(t);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  g_assert_cmpint(r->status, ==, TS_TRIAL_WRONG_RESULT);
  g_assert_nonnull(strstr(r->message, "relative error"));
  g_clear_pointer(&r, ts_trial_result_free);

  /* Unverified, the same kernel is only timed. */
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.verify = FALSE;
  g_autoptr(TsOpTimer) unchecked = ts_op_timer_new(inst, backend, module, &opt, &r, &error);
  g_assert_no_error(error);
  g_assert_nonnull(unchecked);
  g_assert_cmpint(r->status, ==, TS_TRIAL_OK);
}


/* A sibling times another module on its peer's buffers: verified there first, so a wrong
 * kernel is refused even though the peer's output was right. */
static void
test_timer_sibling(void)
{
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = default_source("saxpy", "N=1001", &inst, &entry);
  g_autofree char *wrong = replace_all(src, "alpha * x + y", "alpha * x - y");
  g_autofree char *other = g_strconcat(src, "\n/* another binary */\n", NULL);
  g_autoptr(TsModule) module = compile_source(src, entry);
  g_autoptr(TsModule) other_mod = compile_source(other, entry);
  g_autoptr(TsModule) wrong_mod = compile_source(wrong, entry);
  g_autoptr(TsOpTimer) peer = timer_ok(inst, module);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTrialResult) r = NULL;
  g_autoptr(TsOpTimer) sib = ts_op_timer_new_sibling(peer, inst, other_mod, NULL, &r, &error);
  g_assert_no_error(error);
  g_assert_nonnull(sib);
  g_assert_cmpint(r->status, ==, TS_TRIAL_OK);
  g_assert_cmpstr(r->artifact, ==, ts_module_hash(other_mod));
  double s[3];
  g_assert_true(ts_op_timer_sample(sib, 1, 3, s, &error));
  g_assert_true(ts_op_timer_sample(peer, 1, 3, s, &error));
  g_clear_pointer(&r, ts_trial_result_free);

  TsOpTimer *bad = ts_op_timer_new_sibling(peer, inst, wrong_mod, NULL, &r, &error);
  g_assert_null(bad);
  g_assert_no_error(error);
  g_assert_cmpint(r->status, ==, TS_TRIAL_WRONG_RESULT);
}

/* ==== flash_attention (host side: workloads, reference, sampled verification) ==== */

/* Every edge: a partial last query tile of fewer rows than a micro-tile (37 = 32 + 5), a key
 * tile longer than the sequence (48), D=24 not a multiple of NR=16 (causal), 4- and 8-float
 * vectors (not causal); 8 points each, as every point compiles. */
static const OpCase attn_cases[] = {
  {"flash_attention", "B=1,H=2,S=37,D=24",
   "block(m=[32], n=[16,48]).micro(m=[6], n=[8]).vector([4,8]).threads([1,2])"},
  {"flash_attention_causal", "B=2,H=1,S=37,D=24",
   "block(m=[32], n=[16,48]).micro(m=[6], n=[8,16]).vector([8]).threads([1,2])"},
};

static void
assert_error_mentions(GError *error, gint code, const char *text)
{
  g_assert_error(error, TS_OP_ERROR, code);
  if (strstr(error->message, text) == NULL)
    g_error("'%s' does not mention '%s'", error->message, text);
}

static void
test_attention_workloads(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) a = ts_op_instance_new("flash_attention", "B=2,H=3,S=5,D=8", "bf16",
                                                 &error);
  g_assert_no_error(error);
  g_autoptr(TsOpInstance) c = ts_op_instance_new("flash_attention_causal", "B=2,H=3,S=5,D=8",
                                                 "f16", &error);
  g_assert_no_error(error);
  g_autofree char *d = ts_op_instance_describe(a);
  g_assert_cmpstr(d, ==, "flash_attention B=2,H=3,S=5,D=8 bf16");
  /* 4·B·H·S²·D; the causal op counts half, as the FlashAttention/PyTorch benchmarks do. */
  g_assert_cmpfloat(ts_op_instance_flops(a), ==, 4.0 * 2 * 3 * 5 * 5 * 8);
  g_assert_cmpfloat(ts_op_instance_flops(c), ==, 2.0 * 2 * 3 * 5 * 5 * 8);
  /* Q, K, V read once and O written once. */
  g_assert_cmpfloat(ts_op_instance_bytes(a), ==, 4.0 * 2 * (2 * 3 * 5 * 8));

  static const struct {
    const char *shape, *dtype;
    gint code;
    const char *text;
  } bad[] = {
    {"B=2,H=3,S=5", "bf16", TS_OP_ERROR_SHAPE, "'D'"},
    {"B=2,H=3,S=5,D=8,causal=1", "bf16", TS_OP_ERROR_SHAPE, "'causal'"},
    {"B=2,H=3,S=5,D=8", "fp8_e4m3", TS_OP_ERROR_DTYPE, "fp8_e4m3"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_clear_error(&error);
    g_assert_null(ts_op_instance_new("flash_attention", bad[i].shape, bad[i].dtype, &error));
    assert_error_mentions(error, bad[i].code, bad[i].text);
  }
  /* Shape dims are sizes: causal=0 is not a shape, so causal is the op's name. */
  g_clear_error(&error);
  g_assert_null(ts_op_instance_new("flash_attention", "B=1,H=1,S=4,D=8,causal=0", "bf16", &error));
  g_assert_nonnull(error);
}

/* The CPU kernel is FlashAttention's loop on the GEMM micro-kernels: a worker packs a head's K
 * and V once (reuse keyed by the head), P V reads P where the softmax leaves it (a_rows), and
 * a point whose key tile is not whole K panels is refused, naming the knobs. */
static void
test_attention_cpu_lowering(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("flash_attention_causal", "B=2,H=3,S=100,D=64",
                                                    "bf16", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) p = ts_sched_point_parse(
    "block(m=48,n=64).micro(m=6,n=16).vector(8).threads(2)", &error);
  g_assert_no_error(error);
  g_autoptr(TsTileKernel) k = ts_op_lower(inst, "cpu", p, &error);
  g_assert_no_error(error);
  g_autofree char *ir = ts_tile_kernel_to_string(k);
  g_assert_nonnull(strstr(ir, "tile.pack_bt(K + hb, ld=D, rows=D, cols=S) -> Kp  panel(NR=16) "
                              "reuse_key=(bh)"));
  g_assert_nonnull(strstr(ir, "a_rows(ld=64)"));
  g_autofree char *entry = NULL;
  g_autofree char *src = ts_op_emit(inst, "cpu", p, &entry, NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(src, "TS_DEFINE_UKR_F32_RA(ts_ukr_6x16_v8_u4_ra64, 6, 16, 8, 4, 64);"));
  /* P V on the causal diagonal: a micro-tile's keys up to its last row's, none past them. */
  g_assert_nonnull(strstr(src, "if (kt < q0 + ir + MR) {"));
  g_assert_nonnull(strstr(src, "ts_ukr_6x16_v8_u4_ra64(min(nc, q0 + ir + MR - kt), St + ir * BN,"));

  g_autoptr(TsSchedPoint) split = ts_sched_point_parse(
    "block(m=48,n=40).micro(m=6,n=16).vector(8).threads(2)", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(inst, "cpu", split, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "BN a multiple of NR (got NR=16, vector=8, BN=40)");
}

static void
test_attention_cuda_lowering(void)
{
  g_autoptr(GError) error = NULL;
  /* What the GPU kernel refuses, with the dim or dtype named. */
  g_autoptr(TsOpInstance) d96 = ts_op_instance_new("flash_attention", "B=1,H=2,S=100,D=96",
                                                   "bf16", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) p96 = ts_op_instance_complete_point(d96, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(d96, "cuda", p96, &error));
  assert_error_mentions(error, TS_OP_ERROR_SHAPE, "D=96");
  g_clear_error(&error);
  g_autoptr(TsOpInstance) f32 = ts_op_instance_new("flash_attention", "B=1,H=2,S=100,D=64",
                                                   "f32", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) pf = ts_op_instance_complete_point(f32, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(f32, "cuda", pf, &error));
  assert_error_mentions(error, TS_OP_ERROR_DTYPE, "f32");
  g_clear_error(&error);
  /* warps is not free: a warp per 16 query rows. */
  g_autoptr(TsSchedPoint) w = ts_sched_point_parse("block(m=128,n=64).warps(4)", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(f32, "cuda", w, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "warps * 16 == BM");
  g_clear_error(&error);

  /* mma("wgmma") is two consumer warpgroups of 64 query rows: other tiles are refused. */
  g_autoptr(TsOpInstance) bf = ts_op_instance_new("flash_attention", "B=1,H=2,S=100,D=64",
                                                  "bf16", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) wg64 =
    ts_sched_point_parse("block(m=64,n=64).warps(4).stages(2).mma(\"wgmma\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(bf, "cuda", wg64, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "block(m=128)");
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) bad_mma =
    ts_sched_point_parse("block(m=128,n=64).warps(8).stages(2).mma(\"tcgen05\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(bf, "cuda", bad_mma, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "tcgen05");
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) bad_sched = ts_sched_point_parse(
    "block(m=128,n=64).warps(8).stages(2).mma(\"wgmma\").schedule(\"rotate\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(bf, "cuda", bad_sched, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "rotate");
  g_clear_error(&error);
  /* epilogue("tma") stages O where a wgmma consumer's Q was: mma.sync has no such buffer. */
  g_autoptr(TsSchedPoint) sync_tma = ts_sched_point_parse(
    "block(m=64,n=64).warps(4).stages(2).mma(\"sync\").epilogue(\"tma\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(bf, "cuda", sync_tma, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "with mma(\"wgmma\"), \"tma\"");
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) bad_epi = ts_sched_point_parse(
    "block(m=128,n=64).warps(8).stages(2).mma(\"wgmma\").epilogue(\"smem\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_lower(bf, "cuda", bad_epi, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "epilogue(\"smem\")");
  g_clear_error(&error);

  /* The default spaces are small, and every point lowers and emits (compiling needs NVRTC:
   * tests/cuda-compile-all.sh). On mma.sync D=64 has 12 points, D=128 8 (BN <= 64 keeps the
   * score registers in check); mma("wgmma") adds BN 64 or 128 at 2 or 3 stages in its three
   * schedules, with and without persistent(132) (at D=128 with BN=128 two Q buffers leave
   * room for 2 stages only), each with either epilogue, where the arch has wgmma (sm_90a, and
   * the no-device default), none on sm_80. */
  static const struct {
    const char *op, *shape, *arch;
    guint64 points, wgmma;
  } spaces[] = {
    {"flash_attention", "B=1,H=3,S=77,D=64", NULL, 60, 48},
    {"flash_attention_causal", "B=2,H=1,S=200,D=128", NULL, 50, 42},
    {"flash_attention_causal", "B=2,H=1,S=200,D=128", "sm_90a", 50, 42},
    {"flash_attention", "B=1,H=3,S=77,D=64", "sm_80", 12, 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(spaces); i++) {
    g_autoptr(TsOpInstance) inst = ts_op_instance_new(spaces[i].op, spaces[i].shape, "bf16",
                                                      &error);
    g_assert_no_error(error);
    g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cuda", NULL, &error);
    g_assert_no_error(error);
    TsDeviceInfo dev = {.backend = (char *)"cuda", .name = (char *)spaces[i].arch,
                        .arch = (char *)spaces[i].arch,
                        .smem_per_block = g_strcmp0(spaces[i].arch, "sm_80") == 0 ? 166912 : 232448,
                        .compute_units = 132};
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, spaces[i].arch ? &dev : NULL);
    guint64 n = 0, wgmma = 0;
    g_assert_true(ts_sched_space_count_valid(space, env, &n, NULL));
    g_assert_cmpuint(n, ==, spaces[i].points);
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
    TsSchedPoint *p = NULL;
    const gboolean causal = g_str_has_suffix(spaces[i].op, "causal");
    while (ts_sched_iter_next(it, &p, &error)) {
      g_autoptr(TsSchedPoint) point = p;
      g_autofree char *entry = NULL;
      g_autofree char *src = ts_op_emit(inst, "cuda", point, &entry, NULL, &error);
      g_assert_no_error(error);
      const gboolean wg = g_strcmp0(ts_sched_point_get_str(point, "mma", NULL), "wgmma") == 0;
      wgmma += wg;
      g_assert_nonnull(strstr(src, wg ? "ts_attn_wg_qk" : "ts_attn_mma_qk"));
      g_assert_nonnull(strstr(src, "ts_attn_softmax_"));
      g_assert_nonnull(strstr(src, wg ? "ts_attn_wg_pv" : "ts_attn_mma_pv"));
      g_assert_nonnull(strstr(src, causal ? "CAUSAL = 1;" : "CAUSAL = 0;"));
      /* The wgmma kernel reads Q, K and V as [B*H*S, D] matrices: row count B * H * S
       * (parameter 0, multiplied by parameters 1 and 2: mask 6), boxes of 64 x BM or BN. */
      const char *sched = ts_sched_point_get_str(point, "schedule", NULL);
      g_assert_true(wg || g_strcmp0(sched, "coop") == 0);
      /* overlap and pingpong issue Q·Kᵀ and P·V together; pingpong takes turns. */
      g_assert_true((strstr(src, "ts_attn_wg_pv_issue") != NULL) ==
                    (g_strcmp0(sched, "coop") != 0));
      g_assert_true((strstr(src, "ts_order_wait(wg, true);") != NULL) ==
                    (g_strcmp0(sched, "pingpong") == 0));
      if (wg) {
        g_assert_nonnull(
          strstr(src, "ts_attn_ws_init<STAGES, QBUFS>(bars, tma_q, tma_k, tma_v);"));
        const gint64 P = ts_sched_point_get_int(point, "persistent", -1);
        g_assert_nonnull(strstr(src, P > 0 ? "QBUFS = 2;" : "QBUFS = 1;"));
        /* epilogue("tma") adds a map of O (boxes of 64 x 64: a consumer's rows of a panel),
         * and keeps the direct store for rows past S. */
        const gboolean staged =
          g_strcmp0(ts_sched_point_get_str(point, "epilogue", NULL), "tma") == 0;
        g_assert_nonnull(strstr(src, staged ? "_tma[33] = {4, 0, 2, 3, 0, 64, 128, 128, 6, 1, "
                                            : "_tma[25] = {3, 0, 2, 3, 0, 64, 128, 128, 6, 1, "));
        g_assert_true(!staged || strstr(src, ", 3, 2, 3, 0, 64, 64, 128, 6};") != NULL);
        g_assert_true((strstr(src, "ts_attn_store_tma<") != NULL) == staged);
        g_assert_true((strstr(src, "ts_tma_store_drain();") != NULL) == staged);
        g_assert_nonnull(strstr(src, "ts_attn_store<"));
      }
    }
    g_assert_no_error(error);
    g_assert_cmpuint(wgmma, ==, spaces[i].wgmma);
  }
}

/* fp8 gemm on CUDA: every point is a TMA-fed wgmma point with BK = 128 (one 128-byte row of
 * fp8), none where the arch has no wgmma; B is loaded K-major (BN x BK boxes at (n0, k)), the
 * scales multiply the finished tile and the output is bf16. The default point is one of them,
 * and an mma.sync point is refused naming the constraint. */
static void
test_gemm_fp8_cuda_space(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=4096,N=4096,K=4096", "fp8_e4m3",
                                                    &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  static const struct {
    const char *arch;
    guint points;
  } archs[] = {{"sm_90a", 198}, {"sm_80", 0}};
  for (guint a = 0; a < G_N_ELEMENTS(archs); a++) {
    TsDeviceInfo dev = {.backend = (char *)"cuda", .name = (char *)archs[a].arch,
                        .arch = (char *)archs[a].arch, .smem_per_block = 232448,
                        .compute_units = 132};
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, &dev);
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
    TsSchedPoint *p = NULL;
    guint n = 0;
    while (ts_sched_iter_next(it, &p, &error)) {
      g_autoptr(TsSchedPoint) point = p;
      n++;
      g_assert_cmpstr(ts_sched_point_get_str(point, "mma", NULL), ==, "wgmma");
      g_assert_cmpstr(ts_sched_point_get_str(point, "load", NULL), ==, "tma");
      g_assert_cmpint(ts_sched_point_get_int(point, "BK", 0), ==, 128);
      if (n % 16 != 1)
        continue; /* the source of a sample of them */
      g_autofree char *src = ts_op_emit(inst, "cuda", point, NULL, NULL, &error);
      g_assert_no_error(error);
      g_assert_nonnull(strstr(src, "ts_wgmma_tile<ts_e4m3, BM, BN, BK, WGS"));
      g_assert_nonnull(strstr(src, "ts_tma_load_tile"));
      g_assert_nonnull(strstr(src, "<ts_e4m3, BN, BK"));
      g_assert_nonnull(strstr(src, "tma_b, n0, "));
      g_assert_nonnull(strstr(src, "(acc, scale_a * scale_b);"));
      g_assert_nonnull(strstr(src, "ts_bf16 *const __restrict__ C ="));
      g_assert_nonnull(strstr(src, "const float scale_b = (float)ts_args.floats[1];"));
    }
    g_assert_no_error(error);
    g_assert_cmpuint(n, ==, archs[a].points);
  }
  g_autoptr(TsSchedPoint) def = ts_op_instance_complete_point(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_sched_point_get_str(def, "mma", NULL), ==, "wgmma");
  g_autoptr(TsSchedPoint) sync = ts_sched_point_parse(
    "block(k=64).mma(\"sync\").load(\"cp_async\").schedule(\"plain\").persistent(0)", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) bad = ts_op_instance_complete_point(inst, "cuda", sync, &error);
  g_assert_null(bad);
  g_assert_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE);
  g_assert_nonnull(strstr(error->message, "elem_bytes != 1 || mma == \"wgmma\""));
}

/* gemm's wgmma points exist where the arch has wgmma: the space's env says so per device
 * (has_wgmma), so sm_80 prunes them by constraint and sm_90a (also the no-device default)
 * keeps them, every one lowering to the warpgroup primitives. The warp-specialized points
 * (schedule("coop"), ("pingpong")) are TMA points with two consumer warpgroups and a producer;
 * pingpong's consumers each hold whole tiles (at most 128 x 128) and take turns on named
 * barriers. epilogue("tma") (wgmma points whose ring and staging tiles fit) stores through
 * shared memory and a tensor map of C; cluster(m=2) / cluster(n=2) pair persistent
 * warp-specialized CTAs. Each point is counted once: clusters, else TMA-store epilogues, else
 * by schedule. */
static void
test_gemm_wgmma_space(void)
{
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=4096,N=4096,K=4096", "bf16",
                                                    &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  static const struct {
    const char *arch; /* NULL: no device */
    guint wgmma, coop, pingpong, epi_tma, clusters;
  } archs[] = {{"sm_90a", 32, 20, 24, 68, 84},
               {NULL, 32, 20, 24, 68, 84},
               {"sm_90", 0, 0, 0, 0, 0},
               {"sm_80", 0, 0, 0, 0, 0}};
  guint sync_90a = 0;
  for (guint a = 0; a < G_N_ELEMENTS(archs); a++) {
    TsDeviceInfo dev = {.backend = (char *)"cuda", .name = (char *)archs[a].arch,
                        .arch = (char *)archs[a].arch, .smem_per_block = 232448,
                        .compute_units = 132};
    g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, archs[a].arch ? &dev : NULL);
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
    TsSchedPoint *p = NULL;
    guint wgmma = 0, sync = 0, tma = 0, coop = 0, pingpong = 0, epi_tma = 0, clusters = 0;
    while (ts_sched_iter_next(it, &p, &error)) {
      g_autoptr(TsSchedPoint) point = p;
      const gboolean is_tma = g_strcmp0(ts_sched_point_get_str(point, "load", NULL), "tma") == 0;
      if (g_strcmp0(ts_sched_point_get_str(point, "mma", NULL), "wgmma") != 0) {
        g_assert_false(is_tma); /* the TMA feeds the wgmma ring only */
        sync++;
        continue;
      }
      const char *sched = ts_sched_point_get_str(point, "schedule", NULL);
      const gboolean is_pp = g_strcmp0(sched, "pingpong") == 0;
      const gboolean is_coop = is_pp || g_strcmp0(sched, "coop") == 0; /* warp-specialized */
      const gint64 BM = ts_sched_point_get_int(point, "BM", 0),
                   BN = ts_sched_point_get_int(point, "BN", 0);
      const gboolean is_cluster =
        ts_sched_point_get_int(point, "CM", 1) * ts_sched_point_get_int(point, "CN", 1) > 1;
      if (is_cluster) {
        g_assert_true(is_coop);
        g_assert_cmpint(ts_sched_point_get_int(point, "persistent", 0), >, 0);
        clusters++;
      }
      const gboolean is_epi_tma =
        g_strcmp0(ts_sched_point_get_str(point, "epilogue", NULL), "tma") == 0;
      if (is_coop) {
        g_assert_true(is_tma);
        g_assert_cmpint(ts_sched_point_get_int(point, "warps", 0), ==, 8);
      }
      if (is_pp)
        g_assert_cmpint(BM * BN, <=, 128 * 128);
      if (is_cluster) {
        /* counted above */
      } else if (is_epi_tma) {
        epi_tma++;
      } else if (is_coop) {
        pingpong += is_pp;
        coop += !is_pp;
      } else {
        wgmma++;
        tma += is_tma;
      }
      if (a == 0) {
        g_autofree char *src = ts_op_emit(inst, "cuda", point, NULL, NULL, &error);
        g_assert_no_error(error);
        g_assert_nonnull(strstr(src, "ts_wgmma_tile<"));
        g_assert_null(strstr(src, "ts_mma_tile<"));
        /* cp.async data are fenced into the async proxy; TMA boxes are written there. */
        g_assert_true((strstr(src, "ts_async_proxy_fence();") == NULL) == is_tma);
        g_assert_true((strstr(src, "ts_copy_tile_async<") == NULL) == is_tma);
        g_assert_true((strstr(src, "const __grid_constant__ TsTmaMaps ts_tma)") != NULL) ==
                      (is_tma || is_epi_tma));
        g_assert_true((strstr(src, "ts_mbar_wait(bars + 2 * ring, kb / STAGES);") != NULL) ==
                      (is_tma && !is_coop));
        g_assert_true((strstr(src, "ts_mbar_wait(bars + 2 * ring, it / STAGES);") != NULL) ==
                      is_coop);
        /* coop: registers handed from the producer to the consumers, slots handed back on
         * empty barriers, and no CTA barrier after the barriers' initialisation. */
        g_assert_true((strstr(src, "ts_setmaxnreg_inc<CONSUMER_REGS>();") != NULL) == is_coop);
        g_assert_true((strstr(src, "ts_mbar_arrive_wg(") != NULL) == (is_coop && !is_cluster));
        /* clusters: the shared operand multicast, releases to both CTAs, cluster barriers for
         * the initialisation and the exit, compiled in as __cluster_dims__. */
        g_assert_true((strstr(src, "ts_mbar_arrive_wg_cluster<CTAS>(") != NULL) == is_cluster);
        g_assert_true((strstr(src, "ts_tma_load_tile_mc<") != NULL) == is_cluster);
        g_assert_true((strstr(src, "__cluster_dims__(2, 1, 1)") != NULL) == is_cluster);
        /* pingpong: turns passed on named barriers, a whole tile per consumer warpgroup. */
        g_assert_true((strstr(src, "ts_order_wait(wg, j > 0);") != NULL) == is_pp);
        g_assert_true((strstr(src, "ts_order_signal(3 - wg, ") != NULL) == is_pp);
        /* epilogue("tma"): staged, TMA-stored through a third map, drained before the end. */
        g_assert_true((strstr(src, "ts_wgmma_store_tma<") != NULL) == is_epi_tma);
        g_assert_true((strstr(src, "ts_wgmma_store_acc<") != NULL) == !is_epi_tma);
        g_assert_true((strstr(src, "ts_tma_store_drain();") != NULL) == is_epi_tma);
        g_assert_true((strstr(src, "tma_c = &ts_tma.map[") != NULL) == is_epi_tma);
        g_assert_true((strstr(src, "WGS = 1;") != NULL) ==
                      (is_pp || ts_sched_point_get_int(point, "warps", 0) == 4));
        /* persistent(132): 132 CTAs (else one a tile, or with pingpong one per two). */
        const gint64 tiles = (4096 / BM) * (4096 / BN);
        g_autofree char *grid = g_strdup_printf(
          "_launch[7] = {%" G_GINT64_FORMAT ", 1, 1, %d, 1, 1,",
          ts_sched_point_get_int(point, "persistent", 0) > 0 ? 132 : is_pp ? tiles / 2 : tiles,
          is_coop ? 384 : (int)ts_sched_point_get_int(point, "warps", 0) * 32);
        g_assert_nonnull(strstr(src, grid));
        if (is_coop && !is_cluster) {
          g_assert_nonnull(strstr(src, "__launch_bounds__(384, 1)"));
          const char *sync_at = strstr(src, "__syncthreads();");
          g_assert_nonnull(sync_at);
          g_assert_null(strstr(sync_at + 1, "__syncthreads();"));
        } else if (is_cluster) {
          g_assert_null(strstr(src, "__syncthreads();"));
          const char *sync_at = strstr(src, "ts_cluster_sync();");
          g_assert_nonnull(sync_at);
          g_assert_nonnull(strstr(sync_at + 1, "ts_cluster_sync();"));
        }
      }
    }
    g_assert_no_error(error);
    g_assert_cmpuint(wgmma, ==, archs[a].wgmma);
    g_assert_cmpuint(coop, ==, archs[a].coop);
    g_assert_cmpuint(pingpong, ==, archs[a].pingpong);
    g_assert_cmpuint(epi_tma, ==, archs[a].epi_tma);
    g_assert_cmpuint(clusters, ==, archs[a].clusters);
    g_assert_cmpuint(tma, ==, archs[a].wgmma / 2); /* every wgmma point, with either load */
    if (a == 0)
      sync_90a = sync;
    else if (archs[a].arch)
      g_assert_cmpuint(sync, ==, sync_90a); /* same shared memory: the same mma.sync points */
  }
  /* The default stays on mma.sync; a wgmma point must take BK=64. */
  g_autoptr(TsSchedPoint) def = ts_op_instance_complete_point(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_sched_point_get_str(def, "mma", NULL), ==, "sync");
  g_autoptr(TsSchedPoint) bad = ts_sched_point_parse("block(k=32).mma(\"wgmma\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cuda", bad, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "has_wgmma == 1");
  g_clear_error(&error);
  /* The TMA feeds the wgmma ring only; the default loads with cp.async. */
  g_assert_cmpstr(ts_sched_point_get_str(def, "load", NULL), ==, "cp_async");
  g_autoptr(TsSchedPoint) sync_tma = ts_sched_point_parse("load(\"tma\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cuda", sync_tma, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "load == \"cp_async\"");
  g_clear_error(&error);
  /* Warp specialization is built around the TMA and two consumer warpgroups. */
  g_assert_cmpstr(ts_sched_point_get_str(def, "schedule", NULL), ==, "plain");
  static const char *const bad_coop[] = {
    "block(m=128,n=128,k=64).mma(\"wgmma\").load(\"cp_async\").schedule(\"coop\")",
    "block(m=64,n=128,k=64).warps(4).mma(\"wgmma\").load(\"tma\").schedule(\"coop\")",
    "block(m=64,n=128,k=64).warps(4).mma(\"wgmma\").load(\"tma\").schedule(\"pingpong\")"};
  for (guint i = 0; i < G_N_ELEMENTS(bad_coop); i++) {
    g_autoptr(TsSchedPoint) pt = ts_sched_point_parse(bad_coop[i], &error);
    g_assert_no_error(error);
    g_assert_null(ts_op_instance_complete_point(inst, "cuda", pt, &error));
    assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "schedule == \"plain\"");
    g_clear_error(&error);
  }
  /* Only the warp-specialized loop walks several tiles per CTA. */
  g_autoptr(TsSchedPoint) plain_persistent = ts_sched_point_parse(
    "block(m=128,n=128,k=64).warps(8).mma(\"wgmma\").load(\"tma\").persistent(132)", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cuda", plain_persistent, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "persistent == 0");
  g_clear_error(&error);
  /* A pingpong consumer holds its whole tile: 128 x 256 would take 256 accumulators a thread. */
  g_autoptr(TsSchedPoint) pp_wide = ts_sched_point_parse(
    "block(m=128,n=256,k=64).warps(8).stages(3).mma(\"wgmma\").load(\"tma\")"
    ".schedule(\"pingpong\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cuda", pp_wide, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "BM * BN <= 128 * 128");
  g_clear_error(&error);
  /* Clusters pair warp-specialized persistent CTAs, and their tiles must pair up. */
  static const struct {
    const char *shape, *point, *mentions;
  } bad_cluster[] = {
    {"M=4096,N=4096,K=4096", "block(m=128,n=128,k=64).warps(8).mma(\"wgmma\").load(\"tma\").cluster(m=2)",
     "schedule != \"plain\" && persistent > 0"},
    {"M=4096,N=4096,K=4096",
     "block(m=128,n=128,k=64).warps(8).mma(\"wgmma\").load(\"tma\").schedule(\"coop\")"
     ".persistent(132).cluster(m=2,n=2)",
     "CM * CN <= 2"},
    {"M=384,N=4096,K=4096",
     "block(m=128,n=128,k=64).warps(8).mma(\"wgmma\").load(\"tma\").schedule(\"coop\")"
     ".persistent(132).cluster(m=2)",
     "(M + BM - 1) / BM % CM == 0"}};
  for (guint i = 0; i < G_N_ELEMENTS(bad_cluster); i++) {
    g_autoptr(TsOpInstance) ci = ts_op_instance_new("gemm", bad_cluster[i].shape, "bf16", &error);
    g_assert_no_error(error);
    g_autoptr(TsSchedPoint) pt = ts_sched_point_parse(bad_cluster[i].point, &error);
    g_assert_no_error(error);
    g_assert_null(ts_op_instance_complete_point(ci, "cuda", pt, &error));
    assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, bad_cluster[i].mentions);
    g_clear_error(&error);
  }
  /* The TMA-store epilogue stages wgmma accumulators only. */
  g_autoptr(TsSchedPoint) plain_epi = ts_sched_point_parse(
    "block(m=128,n=128,k=32).warps(8).mma(\"sync\").epilogue(\"tma\")", &error);
  g_assert_no_error(error);
  g_assert_null(ts_op_instance_complete_point(inst, "cuda", plain_epi, &error));
  assert_error_mentions(error, TS_OP_ERROR_SCHEDULE, "epilogue == \"direct\"");
  g_clear_error(&error);
}

/* The CPU spaces follow the machine's SIMD: an AVX2 machine keeps 8-float vectors and tiles
 * whose accumulators fit 16 registers; AVX-512 adds 16-float vectors and tiles for 32 zmm
 * registers (14x32, 8x48), every AVX2 point staying valid. Then AVX-512 points compile and
 * verify on this machine in every dtype, the gemm micro-kernels and the row helpers at 16
 * lanes. */
/* The point (a user's text, completed by the op's default) verified and timed on the CPU. */
static void
assert_cpu_point_ok(TsOpInstance *inst, const char *text)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedPoint) user = ts_sched_point_parse(text, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cpu", user, &error);
  g_assert_no_error(error);
  TsRunOptions opt;
  quick_options(&opt);
  g_autoptr(TsTrialResult) res = ts_op_run(inst, backend, point, &opt, &error);
  g_assert_no_error(error);
  if (res->status != TS_TRIAL_OK) {
    g_autofree char *what = ts_op_instance_describe(inst);
    g_test_message("%s %s: %s", what, text, res->message);
  }
  g_assert_cmpstr(ts_trial_status_name(res->status), ==, "ok");
  g_assert_cmpfloat(res->rel_error, <=, res->tolerance);
}

/* The point (knobs left out take the op's defaults) fails to lower or run, with a message that
 * says `says`. */
static void
assert_cpu_point_refused(TsOpInstance *inst, const char *text, const char *says)
{
  GError *error = NULL;
  g_autoptr(TsSchedPoint) user = ts_sched_point_parse(text, &error);
  g_assert_no_error(error);
  g_autoptr(TsTrialResult) res = ts_op_run(inst, backend, user, NULL, &error);
  g_assert_true(error != NULL || res->status != TS_TRIAL_OK);
  const char *msg = error ? error->message : res->message;
  if (strstr(msg, says) == NULL) {
    g_autofree char *what = ts_op_instance_describe(inst);
    g_error("%s %s: '%s' does not say '%s'", what, text, msg, says);
  }
  g_clear_error(&error);
}

/* How many points of the instance's CPU space on `dev` have the string `value` for `knob`
 * (*total: all of them). */
static guint
count_substr(const char *text, const char *what)
{
  guint n = 0;
  for (const char *p = strstr(text, what); p != NULL; p = strstr(p + 1, what))
    n++;
  return n;
}

static guint
count_knob_value(TsOpInstance *inst, const TsDeviceInfo *dev, const char *knob,
                 const char *value, guint *total)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, dev);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p;
  guint n = 0;
  *total = 0;
  while (ts_sched_iter_next(it, &p, &error)) {
    g_autoptr(TsSchedPoint) point = p;
    n += g_strcmp0(ts_sched_point_get_str(point, knob, ""), value) == 0;
    (*total)++;
  }
  g_assert_no_error(error);
  return n;
}

/* ... the same for an integer knob */
static guint
count_knob_int(TsOpInstance *inst, const TsDeviceInfo *dev, const char *knob, gint64 value,
               guint *total)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, dev);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p;
  guint n = 0;
  *total = 0;
  while (ts_sched_iter_next(it, &p, &error)) {
    g_autoptr(TsSchedPoint) point = p;
    n += ts_sched_point_get_int(point, knob, -1) == value;
    (*total)++;
  }
  g_assert_no_error(error);
  return n;
}

static guint
count_cpu_points(TsOpInstance *inst, const TsDeviceInfo *dev, guint *wide, guint *max_acc,
                 GHashTable *seen)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, dev);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p = NULL;
  guint n = 0;
  *wide = *max_acc = 0;
  while (ts_sched_iter_next(it, &p, &error)) {
    g_autoptr(TsSchedPoint) point = p;
    gint64 v = ts_sched_point_get_int(point, "vector", 0);
    gint64 mr = ts_sched_point_get_int(point, "MR", 1), nr = ts_sched_point_get_int(point, "NR", 1);
    *wide += v == 16;
    *max_acc = MAX(*max_acc, (guint)(mr * nr / v));
    g_autofree char *text = ts_sched_point_to_string(point);
    if (seen && g_hash_table_contains(seen, text) == FALSE)
      g_hash_table_add(seen, g_steal_pointer(&text));
    n++;
  }
  g_assert_no_error(error);
  return n;
}

static gboolean
host_has_avx512(void)
{
  return ts_backend_describe(backend)->vector_bits >= 512;
}

static void
test_cpu_spaces_follow_simd(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) gemm = ts_op_instance_new("gemm", "M=1024,N=1024,K=1024", "f32", &error);
  g_assert_no_error(error);
  TsDeviceInfo avx2 = {.backend = (char *)"cpu", .arch = (char *)"x86_64+avx2+fma+f16c",
                       .vector_bits = 256, .compute_units = 2};
  TsDeviceInfo avx512 = avx2;
  avx512.arch = (char *)"x86_64+avx2+fma+f16c+avx512f+avx512bw+avx512vl";
  avx512.vector_bits = 512;
  g_autoptr(GHashTable) narrow = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GHashTable) wide_pts = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  guint wide, acc;
  guint n2 = count_cpu_points(gemm, &avx2, &wide, &acc, narrow);
  g_assert_cmpuint(n2, >, 100);
  g_assert_cmpuint(wide, ==, 0);
  g_assert_cmpuint(acc, <=, 16);
  GHashTableIter it;
  gpointer key;
  guint n5 = count_cpu_points(gemm, &avx512, &wide, &acc, wide_pts);
  g_assert_cmpuint(n5, >, n2);
  g_assert_cmpuint(wide, >, 0);
  g_assert_cmpuint(acc, ==, 32); /* accumulators up to the register file, as on AVX2 */
  gboolean has_14x32 = FALSE, deep_k = FALSE;
  g_hash_table_iter_init(&it, wide_pts);
  while (g_hash_table_iter_next(&it, &key, NULL)) {
    has_14x32 |= strstr(key, "micro(m=14, n=32).vector(16)") != NULL;
    /* K blocks as deep as the problem's K: each K block is a pass over C (see op-gemm.c). */
    deep_k |= strstr(key, "k=1024)") != NULL && strstr(key, "micro(m=14, n=32)") != NULL &&
              (strstr(key, "block(m=84,") != NULL || strstr(key, "block(m=168,") != NULL);
  }
  g_assert_true(has_14x32);
  g_assert_true(deep_k);
  g_hash_table_iter_init(&it, narrow);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_assert_true(g_hash_table_contains(wide_pts, key));
  g_test_message("gemm CPU space: %u points with AVX2, %u with AVX-512", n2, n5);
  /* The row ops too. */
  g_autoptr(TsOpInstance) sm = ts_op_instance_new("softmax_safe", "M=64,N=4096", "f32", &error);
  g_assert_no_error(error);
  count_cpu_points(sm, &avx2, &wide, &acc, NULL);
  g_assert_cmpuint(wide, ==, 0);
  count_cpu_points(sm, &avx512, &wide, &acc, NULL);
  g_assert_cmpuint(wide, >, 0);

  if (!host_has_avx512()) {
    g_test_skip("this machine has no AVX-512: the 16-lane points are not run here");
    return;
  }
  static const struct {
    const char *op, *shape, *point;
  } runs[] = {
      {"gemm", "M=37,N=45,K=29", "block(m=28,n=64,k=16).micro(m=14,n=32).vector(16).unroll(2)"},
      {"gemm", "M=37,N=45,K=29", "block(m=24,n=96,k=16).micro(m=8,n=48).vector(16).unroll(4)"},
      {"gemm", "M=37,N=45,K=29", "block(m=24,n=32,k=16).micro(m=12,n=32).vector(16).unroll(2)"},
      {"softmax_safe", "M=7,N=45", "block(m=3).vector(16)"},
      {"layernorm_safe", "M=7,N=45", "block(m=3).vector(16)"},
      {"rmsnorm_safe", "M=7,N=45", "block(m=1).vector(16)"},
      {"reduce_sum", "M=7,N=45", "block(m=3).vector(16)"},
      {"saxpy", "N=1001", "block(n=64).vector(16)"},
  };
  for (guint r = 0; r < G_N_ELEMENTS(runs); r++)
    for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
      for (gint64 threads = 1; threads <= 2; threads++) {
        g_autoptr(TsOpInstance) inst = ts_op_instance_new(runs[r].op, runs[r].shape, dtypes[d],
                                                          &error);
        g_assert_no_error(error);
        g_autofree char *text = g_strdup_printf("%s.threads(%" G_GINT64_FORMAT ")",
                                                runs[r].point, threads);
        assert_cpu_point_ok(inst, text);
      }
}

/* gemm bf16 points, each with one and two threads and dot(dot), verified on the CPU. */
typedef struct {
  const char *shape, *point;
} GemmRun;

static void
run_bf16_gemm_points(const GemmRun *runs, guint n, const char *dot)
{
  for (guint r = 0; r < n; r++)
    for (gint64 threads = 1; threads <= 2; threads++) {
      g_autoptr(GError) error = NULL;
      g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", runs[r].shape, "bf16 @accum(f32)",
                                                        &error);
      g_assert_no_error(error);
      g_autofree char *text = g_strdup_printf("%s.threads(%" G_GINT64_FORMAT ").dot(\"%s\")",
                                              runs[r].point, threads, dot);
      assert_cpu_point_ok(inst, text);
    }
}

/* fp8 gemm: e4m3 and e5m2 inputs quantized with per-tensor scales, a bf16 output, verified
 * against the f64 product of the dequantized inputs; the workload's types, parameters and
 * bytes say so. */
static void
test_cpu_gemm_fp8(void)
{
  const char *dts[] = {"fp8_e4m3 @accum(f32)", "fp8_e5m2"};
  for (guint d = 0; d < G_N_ELEMENTS(dts); d++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=67,N=45,K=131", dts[d], &error);
    g_assert_no_error(error);
    g_assert_cmpint(ts_op_instance_out_dtype(inst), ==, TS_DTYPE_BF16);
    /* A and B one byte an element, C two */
    g_assert_cmpfloat(ts_op_instance_bytes(inst), ==, 67.0 * 131 + 131.0 * 45 + 2.0 * 67 * 45);
    g_autofree char *graph = ts_graph_to_string(ts_op_instance_graph(inst), NULL);
    g_assert_nonnull(strstr(graph, "scale_a="));
    g_assert_nonnull(strstr(graph, ": Tensor[\"M\",\"N\", bf16"));
    /* B K-major, as fp8 GEMMs take it */
    g_assert_nonnull(strstr(graph, "%B : Tensor[\"N\",\"K\", fp8_e"));
    /* The scales map the inputs' range [-1, 1) onto the format's: 1/448, 1/57344. */
    g_assert_nonnull(strstr(graph, d == 0 ? "scale_b=0.00223214" : "scale_b=1.74386e-05"));
    const GemmRun runs[] = {
      {"M=67,N=45,K=131", "block(m=24,n=32,k=40).micro(m=6,n=16).vector(8).unroll(4)"},
      {"M=5,N=3,K=2", "block(m=24,n=32,k=16).micro(m=4,n=8).vector(4).unroll(1)"},
      {"M=67,N=45,K=131", "block(m=32,n=40,k=32).micro(m=6,n=16).vector(8).unroll(4)"
                          ".walk(\"tiles\")"},
    };
    for (guint r = 0; r < G_N_ELEMENTS(runs); r++)
      for (gint64 threads = 1; threads <= 2; threads++) {
        g_autoptr(TsOpInstance) ri = ts_op_instance_new("gemm", runs[r].shape, dts[d], &error);
        g_assert_no_error(error);
        g_autofree char *text =
          g_strdup_printf("%s.threads(%" G_GINT64_FORMAT ")", runs[r].point, threads);
        assert_cpu_point_ok(ri, text);
      }
  }
}

/* Points that differ only in their blocks (and shapes) have one C source, one entry, and
 * their blocks as launch ints; each runs right with its own. A GEMM's micro-tile shape is a
 * launch int too, compiled into its micro-kernel only: another micro-tile is another source
 * (its micro-kernel's line) under the same entry. */
static void
test_cpu_launch_consts(void)
{
  const struct {
    const char *op, *shape, *point;
    guint group; /* points of a group share a source; the next group's differs */
    gint64 want[5];
    guint n;
  } pts[] = {
    {"gemm", "M=40,N=33,K=70", "block(m=24, n=32, k=16).micro(m=6, n=16).threads(1)", 0,
     {24, 32, 16, 6, 16}, 5},
    {"gemm", "M=40,N=33,K=70", "block(m=12, n=64, k=64).micro(m=6, n=16).threads(1)", 0,
     {12, 64, 64, 6, 16}, 5},
    {"gemm", "M=17,N=50,K=9", "block(m=36, n=16, k=8).micro(m=6, n=16).threads(1)", 0,
     {36, 16, 8, 6, 16}, 5},
    {"gemm", "M=40,N=33,K=70", "block(m=24, n=32, k=16).micro(m=4, n=16).threads(1)", 1,
     {24, 32, 16, 4, 16}, 5},
    {"flash_attention", "B=1,H=2,S=40,D=16", "block(m=32, n=32).micro(m=4, n=16).threads(1)", 2,
     {32}, 1},
    {"flash_attention", "B=1,H=2,S=40,D=16", "block(m=48, n=32).micro(m=4, n=16).threads(1)", 2,
     {48}, 1},
    {"layernorm_safe", "M=37,N=50", "block(m=4).threads(1).apply(\"tile\").pipeline(\"none\")", 3,
     {4}, 1},
    {"layernorm_safe", "M=37,N=50", "block(m=16).threads(1).apply(\"tile\").pipeline(\"none\")", 3,
     {16}, 1},
  };
  g_autofree char *group_src = NULL, *group_entry = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(pts); i++) {
    g_autoptr(TsOpInstance) inst = NULL;
    g_autofree char *entry = NULL;
    g_autofree char *src = point_source(pts[i].op, pts[i].shape, pts[i].point, &inst, &entry);
    g_assert_cmpuint(source_ints->len, ==, pts[i].n);
    for (guint j = 0; j < pts[i].n; j++)
      g_assert_cmpint(g_array_index(source_ints, gint64, j), ==, pts[i].want[j]);
    g_assert_nonnull(strstr(src, "const int64_t BM = ints["));
    g_assert_null(strstr(src, "#define BM "));
    if (pts[i].group == 1) /* the first group's entry: its loops are the same */
      g_assert_cmpstr(entry, ==, group_entry);
    if (i > 0 && pts[i].group == pts[i - 1].group) {
      g_assert_cmpstr(src, ==, group_src);
      g_assert_cmpstr(entry, ==, group_entry);
    } else {
      g_assert_true(group_src == NULL || strcmp(src, group_src) != 0);
      g_free(group_src);
      g_free(group_entry);
      group_src = g_strdup(src);
      group_entry = g_strdup(entry);
    }
    g_autoptr(TsModule) module = compile_source(src, entry);
    ts_op_timer_free(timer_ok(inst, module));
  }
}

/* A kernel that leaves out the scales, applies one twice, decodes e4m3 as e5m2 or reads B as
 * [K, N] writes finite values of the right shape: only the reference catches it. */
static void
test_cpu_gemm_fp8_wrong_caught(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = point_source_dt("gemm", "M=40,N=33,K=70", "fp8_e4m3", NULL, &inst, &entry);
  TsRunOptions opt;
  quick_options(&opt);
  g_autoptr(TsTrialResult) ok = ts_op_run_source(inst, backend, src, entry, source_ints, &opt, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ok->status, ==, TS_TRIAL_OK);
  g_assert_nonnull(strstr(src, "(float)(scale_a * scale_b)"));
  g_assert_nonnull(strstr(src, "_e4m3("));
  g_assert_nonnull(strstr(src, "ts_pack_bt_block_e4m3(B + (jc + jp * NR) * K + pc, K,"));
  /* no scales; one scale twice; e4m3 read as e5m2; B read as [K, N] instead of [N, K] */
  const char *from[] = {"(float)(scale_a * scale_b)", "(float)(scale_a * scale_b)", "_e4m3(",
                        "ts_pack_bt_block_e4m3(B + (jc + jp * NR) * K + pc, K,"};
  const char *to[] = {"1.0f", "(float)(scale_a * scale_a * scale_b)", "_e5m2(",
                      "ts_pack_b_block_e4m3(B + pc * N + jc + jp * NR, N,"};
  for (guint i = 0; i < G_N_ELEMENTS(from); i++) {
    g_autofree char *wrong = replace_all(src, from[i], to[i]);
    g_autoptr(TsTrialResult) r = ts_op_run_source(inst, backend, wrong, entry, source_ints, &opt, &error);
    g_assert_no_error(error);
    if (r->status != TS_TRIAL_WRONG_RESULT)
      g_error("fp8 plant %u (%s -> %s) was not caught: %s", i, from[i], to[i],
              ts_trial_status_name(r->status));
  }
}

/* gemm's dot("bf16"): vdpbf16ps on K-pair panels, offered for bf16 storage on AVX512_BF16 only
 * and with 16-float vectors; run (where the host has the instruction) at shapes with odd K and
 * partial tiles on every edge, with one and two threads. */
static void
test_cpu_gemm_bf16dot(void)
{
  g_autoptr(GError) error = NULL;
  TsDeviceInfo plain = {.backend = (char *)"cpu",
                        .arch = (char *)"x86_64+avx2+fma+f16c+avx512f+avx512bw+avx512vl",
                        .vector_bits = 512, .compute_units = 2};
  TsDeviceInfo bf = plain;
  bf.arch = (char *)"x86_64+avx2+fma+f16c+avx512f+avx512bw+avx512vl+avx512bf16";
  const char *dts[] = {"bf16 @accum(f32)", "f32", "f16"};
  for (guint d = 0; d < G_N_ELEMENTS(dts); d++)
    for (int with = 0; with < 2; with++) {
      g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=512,N=512,K=512", dts[d],
                                                        &error);
      g_assert_no_error(error);
      g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, &error);
      g_assert_no_error(error);
      g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, with ? &bf : &plain);
      g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
      TsSchedPoint *p;
      guint dot = 0, fma = 0;
      while (ts_sched_iter_next(it, &p, &error)) {
        g_autoptr(TsSchedPoint) point = p;
        if (g_strcmp0(ts_sched_point_get_str(point, "dot", ""), "bf16") == 0) {
          dot++;
          g_assert_cmpint(ts_sched_point_get_int(point, "vector", 0), ==, 16);
        } else {
          fma++;
        }
      }
      g_assert_no_error(error);
      g_assert_cmpuint(fma, >, 0);
      if (d == 0 && with)
        g_assert_cmpuint(dot, >, 0);
      else
        g_assert_cmpuint(dot, ==, 0);
    }

  const TsDeviceInfo *host = ts_backend_describe(backend);
  if (host->arch == NULL || strstr(host->arch, "+avx512bf16") == NULL) {
    g_test_skip("this machine has no AVX512_BF16: the dot-product points are not run here");
    return;
  }
  static const GemmRun runs[] = {
      {"M=37,N=45,K=29", "block(m=28,n=64,k=16).micro(m=14,n=32).vector(16).unroll(2)"},
      {"M=37,N=45,K=29", "block(m=24,n=96,k=10).micro(m=8,n=48).vector(16).unroll(4)"},
      {"M=37,N=45,K=29", "block(m=24,n=32,k=7).micro(m=12,n=32).vector(16).unroll(1)"},
      {"M=5,N=17,K=1", "block(m=14,n=32,k=16).micro(m=14,n=32).vector(16).unroll(2)"},
      {"M=37,N=45,K=70", "block(m=20,n=40,k=32).micro(m=14,n=32).vector(16).unroll(2)"
                         ".walk(\"tiles\")"},
  };
  run_bf16_gemm_points(runs, G_N_ELEMENTS(runs), "bf16");
}

/* gemm's dot("amx"): AMX tiles, offered for bf16 storage where the host has AMX-BF16 (and
 * its kernel the tile state) and only in micro-tiles of whole tiles that fit the eight tile
 * registers; the FMA points stay as they were. Run (where the host has AMX) in every shape at
 * sizes with partial tiles on every edge, K shorter than one 32-deep step, several K blocks
 * (accumulating into C), with one and two threads. */
static void
test_cpu_gemm_amx(void)
{
  g_autoptr(GError) error = NULL;
  TsDeviceInfo plain = {.backend = (char *)"cpu",
                        .arch = (char *)"x86_64+avx2+fma+f16c+avx512f+avx512bw+avx512vl+avx512bf16",
                        .vector_bits = 512, .compute_units = 2};
  TsDeviceInfo amx = plain;
  amx.arch = (char *)"x86_64+avx2+fma+f16c+avx512f+avx512bw+avx512vl+avx512bf16+amxbf16";
  const char *dts[] = {"bf16 @accum(f32)", "f32", "f16"};
  for (guint d = 0; d < G_N_ELEMENTS(dts); d++) {
    g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=512,N=512,K=512", dts[d], &error);
    g_assert_no_error(error);
    guint total_plain, total_amx;
    guint fma_plain = count_knob_value(inst, &plain, "dot", "fma", &total_plain);
    guint fma_amx = count_knob_value(inst, &amx, "dot", "fma", &total_amx);
    guint tiles = count_knob_value(inst, &amx, "dot", "amx", &total_amx);
    g_assert_cmpuint(fma_plain, >, 0);
    g_assert_cmpuint(fma_amx, ==, fma_plain);
    g_assert_cmpuint(count_knob_value(inst, &plain, "dot", "amx", &total_plain), ==, 0);
    if (d == 0)
      g_assert_cmpuint(tiles, >, 0);
    else
      g_assert_cmpuint(tiles, ==, 0);
  }
  /* Every AMX point of the space is a shape the micro-kernel has. */
  g_autoptr(TsOpInstance) bf = ts_op_instance_new("gemm", "M=512,N=512,K=512", "bf16", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(bf, "cpu", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(bf, &amx);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p;
  while (ts_sched_iter_next(it, &p, &error)) {
    g_autoptr(TsSchedPoint) point = p;
    if (g_strcmp0(ts_sched_point_get_str(point, "dot", ""), "amx") != 0)
      continue;
    gint64 tm = ts_sched_point_get_int(point, "MR", 0) / 16,
           tn = ts_sched_point_get_int(point, "NR", 0) / 16;
    g_assert_cmpint(tm * 16, ==, ts_sched_point_get_int(point, "MR", 0));
    g_assert_cmpint(tn * 16, ==, ts_sched_point_get_int(point, "NR", 0));
    g_assert_cmpint(tm * tn + tm + tn, <=, 8);
  }
  g_assert_no_error(error);

  const TsDeviceInfo *host = ts_backend_describe(backend);
  if (host->arch == NULL || strstr(host->arch, "+amxbf16") == NULL) {
    g_test_skip("this machine has no usable AMX-BF16: the tile points are not run here");
    return;
  }
  static const GemmRun runs[] = {
      {"M=37,N=45,K=29", "block(m=32,n=64,k=16).micro(m=32,n=32).vector(16).unroll(2)"},
      {"M=37,N=45,K=70", "block(m=32,n=32,k=32).micro(m=32,n=32).vector(16).unroll(1)"},
      {"M=37,N=45,K=70", "block(m=16,n=64,k=48).micro(m=16,n=32).vector(16).unroll(4)"},
      {"M=37,N=45,K=70", "block(m=32,n=48,k=64).micro(m=32,n=16).vector(16).unroll(4)"},
      {"M=50,N=61,K=95", "block(m=48,n=48,k=64).micro(m=16,n=48).vector(16).unroll(2)"},
      {"M=50,N=61,K=95", "block(m=48,n=32,k=128).micro(m=48,n=16).vector(16).unroll(2)"},
      {"M=50,N=61,K=95", "block(m=16,n=16,k=256).micro(m=16,n=16).vector(16).unroll(1)"},
      {"M=5,N=17,K=1", "block(m=32,n=32,k=32).micro(m=32,n=32).vector(16).unroll(4)"},
      {"M=50,N=61,K=95", "block(m=40,n=40,k=32).micro(m=32,n=32).vector(16).unroll(1)"
                         ".walk(\"tiles\")"},
  };
  run_bf16_gemm_points(runs, G_N_ELEMENTS(runs), "amx");
}

/* softmax_safe's CPU passes: each variant offered and verified for every dtype at a shape with
 * tails, with one and two threads ("stored" keeps a per-thread f32 row); an unknown variant
 * named in the error. */
static void
test_cpu_softmax_passes(void)
{
  static const char *const hows[] = {"online", "max_first", "stored"};
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++) {
    GError *error = NULL;
    g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", "M=7,N=45", dtypes[d],
                                                      &error);
    g_assert_no_error(error);
    /* The space offers every variant for every dtype; the two that compute a row's max apart
     * with pipeline "none" or "next", online with "none" only, and stored with "skew" too. */
    TsDeviceInfo dev = {.backend = (char *)"cpu", .vector_bits = 256, .compute_units = 2};
    guint per_how[3], total;
    for (guint h = 0; h < G_N_ELEMENTS(hows); h++)
      per_how[h] = count_knob_value(inst, &dev, "softmax", hows[h], &total);
    g_assert_cmpuint(per_how[0], >, 0);
    g_assert_cmpuint(per_how[1], ==, 2 * per_how[0]);
    g_assert_cmpuint(per_how[2], ==, 3 * per_how[0]);

    for (guint h = 0; h < G_N_ELEMENTS(hows); h++)
      for (gint64 threads = 1; threads <= 2; threads++) {
        g_autofree char *text = g_strdup_printf(
            "block(m=3).vector(%d).threads(%" G_GINT64_FORMAT ").softmax(\"%s\")",
            h == 1 ? 4 : 8, threads, hows[h]);
        assert_cpu_point_ok(inst, text);
      }
    /* math("fast"): offered (and verified) for 16-bit outputs only, in every variant. */
    gboolean narrow = g_strcmp0(dtypes[d], "f32") != 0;
    guint fast = count_knob_value(inst, &dev, "math", "fast", &total);
    g_assert_cmpuint(fast, ==, narrow ? total / 2 : 0);
    for (guint h = 0; narrow && h < G_N_ELEMENTS(hows); h++) {
      g_autofree char *text = g_strdup_printf(
          "block(m=3).vector(8).threads(2).softmax(\"%s\").math(\"fast\")", hows[h]);
      assert_cpu_point_ok(inst, text);
    }
  }
  /* A variant the lowering does not know. */
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", "M=7,N=45", "f32", &error);
  g_assert_no_error(error);
  assert_cpu_point_refused(inst, "block(m=1).vector(4).threads(1).softmax(\"fast\")",
                           "softmax(\"fast\") is not one of");
}

/* The TMA point's record and tensor maps: A read as K-contiguous rows of M in boxes of one
 * 128-byte swizzle row by BM rows, B as N-contiguous rows of K in 64 x 64 boxes; the record's
 * words plan (ts-cuda-tma.h) into the maps the backend encodes; a C target refuses them. */
/* A row op's output (raw bytes of Y) at a point, on fixed inputs: X in [-4, 4) (or x_raw, X's
 * bytes), G in [0.5, 1.5), Bt in [-0.5, 0.5), all rounded to the op's dtype. */
static GBytes *
row_op_output_x(const char *op, gint64 m, gint64 n, const char *dtype, const char *partial,
                const void *x_raw)
{
  g_autofree char *shape = g_strdup_printf("M=%" G_GINT64_FORMAT ",N=%" G_GINT64_FORMAT, m, n);
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = point_source_dt(op, shape, dtype, partial, &inst, &entry);
  g_autoptr(TsModule) module = compile_source(src, entry);
  const guint esz = g_strcmp0(dtype, "f32") == 0 ? 4 : 2;
  /* X, then G and Bt as far as the op takes them, then Y. */
  /* (a kernel file's layernorm takes layernorm_safe's inputs) */
  const guint n_in = g_strcmp0(op, "layernorm_safe") == 0 || g_str_has_prefix(op, "kernel:layernorm")
                         ? 3
                         : g_strcmp0(op, "rmsnorm_safe") == 0 ? 2 : 1;
  TsBuffer *bufs[4];
  g_autoptr(GError) error = NULL;
  for (guint b = 0; b <= n_in; b++) {
    const gint64 count = b == 0 || b == n_in ? m * n : n;
    g_autofree guint8 *host = g_malloc((gsize)count * esz);
    for (gint64 i = 0; i < count; i++) {
      const float lo = b == 0 ? -4.0f : b == 1 ? 0.5f : -0.5f, span = b == 0 ? 8.0f : 1.0f;
      const float v = lo + span * (float)((i * 2654435761u) % 1000u) / 1000.0f;
      if (b == 0 && x_raw != NULL)
        memcpy(host + i * esz, (const guint8 *)x_raw + i * esz, esz);
      else if (esz == 4)
        memcpy(host + i * 4, &v, 4);
      else {
        const guint16 h = g_str_has_prefix(dtype, "bf16") ? ts_f32_to_bf16(v) : ts_f32_to_f16(v);
        memcpy(host + i * 2, &h, 2);
      }
    }
    bufs[b] = ts_backend_alloc(backend, (gsize)count * esz, &error);
    g_assert_no_error(error);
    if (b == n_in) /* Y starts as garbage, which an element left unwritten keeps */
      memset(host, 0x5a, (gsize)count * esz);
    ts_backend_upload(backend, bufs[b], host, (gsize)count * esz, &error);
    g_assert_no_error(error);
  }
  const gint64 ints[] = {m, n};
  const double floats[] = {1e-5};
  TsLaunch launch = {.buffers = bufs, .n_buffers = n_in + 1, .ints = ints, .n_ints = 2,
                     .floats = floats, .n_floats = 1};
  g_assert_true(ts_backend_launch(backend, module, &launch, &error));
  g_assert_no_error(error);
  const gsize bytes = (gsize)(m * n) * esz;
  guint8 *out = g_malloc(bytes);
  g_assert_true(ts_backend_download(backend, out, bufs[n_in], bytes, &error));
  g_assert_no_error(error);
  for (guint b = 0; b <= n_in; b++)
    ts_backend_buffer_free(backend, bufs[b]);
  return g_bytes_new_take(out, bytes);
}

static GBytes *
row_op_output(const char *op, gint64 m, gint64 n, const char *dtype, const char *partial)
{
  return row_op_output_x(op, m, n, dtype, partial, NULL);
}

/* store("stream") writes exactly what store("cached") writes: rows whose start is aligned to
 * a vector (N = 64) take the non-temporal stores, rows that are not (N = 45) the fallback, and
 * every row's tail the scalar loop; one thread, then two, at every vector width the machine has.
 * The stream points also verify, and the space offers both values for every point. */
static void
test_cpu_rows_stream(void)
{
  static const struct {
    const char *op, *extra;
  } rows[] = {
      {"softmax_safe", ".softmax(\"stored\").math(\"exact\")"},
      {"layernorm_safe", ""},
      {"rmsnorm_safe", ""},
  };
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  for (guint c = 0; c < G_N_ELEMENTS(rows); c++)
    for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++) {
      for (gint64 n = 45, t = 1; n <= 64; n += 19, t++)
        for (guint v = 4; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2) {
            g_autofree char *base = g_strdup_printf("block(m=3).vector(%u).threads(%" G_GINT64_FORMAT ")%s",
                                                    v, t, rows[c].extra);
            g_autofree char *cached = g_strdup_printf("%s.store(\"cached\")", base);
            g_autofree char *stream = g_strdup_printf("%s.store(\"stream\")", base);
            g_autoptr(GBytes) a = row_op_output(rows[c].op, 7, n, dtypes[d], cached);
            g_autoptr(GBytes) b = row_op_output(rows[c].op, 7, n, dtypes[d], stream);
            if (!g_bytes_equal(a, b))
              g_error("%s %s N=%" G_GINT64_FORMAT " %s: the streamed output differs", rows[c].op,
                      dtypes[d], n, stream);
          }
      g_autofree char *shape = g_strdup("M=7,N=45");
      GError *error = NULL;
      g_autoptr(TsOpInstance) inst = ts_op_instance_new(rows[c].op, shape, dtypes[d], &error);
      g_assert_no_error(error);
      g_autofree char *pt = g_strdup_printf("block(m=3).vector(4).threads(2)%s.store(\"stream\")",
                                            rows[c].extra);
      assert_cpu_point_ok(inst, pt);
      guint total, streamed = count_knob_value(inst, dev, "store", "stream", &total);
      g_assert_cmpuint(streamed * 2, ==, total);
    }
}

/* layernorm's apply("tile") (each tile's G and Bt widened to f32 once for all the rows of a
 * work item) writes the bytes apply("row") writes: items of 4 rows and of 16 that M = 7
 * leaves partial, tiles that end in a scalar tail (N = 45: one partial tile; N = 300: a full
 * tile of 256 and one of 44), one thread and two, every vector width the machine has from 8.
 * The tiled points verify; the space offers the tile with no pipeline and more than one row an
 * item only, and a point that asks for both is refused with a message that says which to drop. */
static void
test_cpu_rows_apply_tile(void)
{
  static const char *const ops[] = {"layernorm_safe"};
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  for (guint c = 0; c < G_N_ELEMENTS(ops); c++)
    for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
      for (gint64 n = 45; n <= 300; n += 255) {
        for (guint v = 8; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2)
          for (gint64 bm = 4; bm <= 16; bm *= 4) {
            g_autofree char *base = g_strdup_printf(
                "block(m=%" G_GINT64_FORMAT ").vector(%u).threads(%d).store(\"%s\")"
                ".pipeline(\"none\")", bm, v, bm == 4 ? 1 : 2, bm == 4 ? "stream" : "cached");
            g_autofree char *row = g_strdup_printf("%s.apply(\"row\")", base);
            g_autofree char *tile = g_strdup_printf("%s.apply(\"tile\")", base);
            g_autoptr(GBytes) a = row_op_output(ops[c], 7, n, dtypes[d], row);
            g_autoptr(GBytes) b = row_op_output(ops[c], 7, n, dtypes[d], tile);
            if (!g_bytes_equal(a, b))
              g_error("%s %s N=%" G_GINT64_FORMAT " %s: differs from apply(\"row\")", ops[c],
                      dtypes[d], n, tile);
          }
        g_autofree char *shape = g_strdup_printf("M=7,N=%" G_GINT64_FORMAT, n);
        GError *error = NULL;
        g_autoptr(TsOpInstance) inst = ts_op_instance_new(ops[c], shape, dtypes[d], &error);
        g_assert_no_error(error);
        assert_cpu_point_ok(inst, "block(m=4).vector(8).threads(2).pipeline(\"none\")"
                                  ".apply(\"tile\")");
        guint total, tiled = count_knob_value(inst, dev, "apply", "tile", &total);
        guint piped = count_knob_value(inst, dev, "pipeline", "next", &total);
        guint jammed = count_knob_int(inst, dev, "jam", 2, &total);
        g_assert_cmpuint(tiled, >, 0);
        g_assert_cmpuint((piped - jammed) * 2 + tiled, ==, total - jammed);
        g_assert_cmpuint(tiled * 3, ==, (piped - jammed) * 2); /* not at block(m=1), one of 3 */
        g_assert_cmpuint(jammed, ==, tiled); /* pipeline("next") where the tile has none */
        /* both asked for, or a value the lowering does not know: refused, saying why */
        static const struct {
          const char *point, *says;
        } bad[] = {
            {"block(m=4).vector(8).threads(1).pipeline(\"next\").apply(\"tile\")",
             "use pipeline(\"none\")"},
            {"block(m=4).vector(8).threads(1).pipeline(\"none\").apply(\"tiles\")",
             "apply(\"tiles\") is not one of"},
        };
        for (guint b = 0; b < G_N_ELEMENTS(bad); b++)
          assert_cpu_point_refused(inst, bad[b].point, bad[b].says);
      }
}

/* A kernel file's layernorm (examples/layernorm.tsk's body) in each dtype: apply("tile") (its
 * rows' reductions first, then tiles of TN columns with gamma and beta widened once a tile)
 * writes the bytes apply("row") writes, and the built-in layernorm_safe's tile writes, with
 * one tile and a tail (N = 45) and several and a tail (N = 300), 4 and 7 rows a work item (7
 * rows: one item of 4, one of 3), every vector width the machine has, one and two threads; with
 * pipeline("next") or an unknown value it is refused. */
static void
test_cpu_lang_apply_tile(void)
{
  static const char body[] =
      "@kernel.autotune(space=dict(BM=[1, 4, 16], vector=[8, 16], pipeline=[\"none\", \"next\"],\n"
      "                            store=[\"cached\", \"stream\"], apply=[\"row\", \"tile\"]))\n"
      "@kernel.implements(\"layernorm_safe\")\n"
      "def layernorm(x: Tensor[\"M\", \"N\", DT], gamma: Tensor[\"N\", DT],\n"
      "              beta: Tensor[\"N\", DT], y: mut Tensor[\"M\", \"N\", DT], eps: f32 = 1e-5):\n"
      "    T = tile.context()\n"
      "    xr = tile.load(x, rows=T.m)\n"
      "    mean = tile.row_sum(xr) / x.shape[1]\n"
      "    d = xr - mean[:, None]\n"
      "    var = tile.row_sum(d * d) / x.shape[1]\n"
      "    rstd = tile.rsqrt(var + eps)\n"
      "    tile.store(y, d * rstd[:, None] * tile.load(gamma) + tile.load(beta))\n";
  static const char *const decl[] = {"f32", "bf16 @accum(f32)", "f16"};
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++) {
    g_auto(GStrv) parts = g_strsplit(body, "DT", -1);
    g_autofree char *src = g_strjoinv(decl[d], parts);
    g_autoptr(GError) error = NULL;
    const TsOpDef *op = ts_op_register_kernel(src, NULL, NULL, &error);
    g_assert_no_error(error);
    for (gint64 n = 45; n <= 300; n += 255)
      for (guint v = 8; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2)
        for (gint64 bm = 4; bm <= 7; bm += 3) {
          g_autofree char *base = g_strdup_printf(
              "block(m=%" G_GINT64_FORMAT ").vector(%u).threads(%d).store(\"%s\")"
              ".pipeline(\"none\")", bm, v, bm == 4 ? 1 : 2, bm == 4 ? "stream" : "cached");
          g_autofree char *row = g_strdup_printf("%s.apply(\"row\")", base);
          g_autofree char *tile = g_strdup_printf("%s.apply(\"tile\")", base);
          g_autoptr(GBytes) a = row_op_output(ts_op_name(op), 7, n, dtypes[d], row);
          g_autoptr(GBytes) b = row_op_output(ts_op_name(op), 7, n, dtypes[d], tile);
          g_autoptr(GBytes) c = row_op_output("layernorm_safe", 7, n, dtypes[d], tile);
          if (!g_bytes_equal(a, b) || !g_bytes_equal(b, c))
            g_error("%s N=%" G_GINT64_FORMAT " %s: differs from %s", dtypes[d], n, tile,
                    g_bytes_equal(a, b) ? "the built-in's" : "apply(\"row\")");
        }
    /* with a pipeline, or a value the lowering does not know: refused, saying why */
    g_autoptr(TsOpInstance) inst = ts_op_instance_new(ts_op_name(op), "M=7,N=45", dtypes[d], &error);
    g_assert_no_error(error);
    assert_cpu_point_refused(inst, "block(m=4).pipeline(\"next\").apply(\"tile\")",
                             "use pipeline(\"none\")");
    assert_cpu_point_refused(inst, "block(m=4).pipeline(\"none\").apply(\"tiles\")",
                             "apply(\"tiles\") is not one of");
  }
}

/* layernorm's jam(2) (two rows' last passes in one loop, G and Bt loaded once for both, the
 * next pair's sums carried) verifies in every dtype with work items of 3, 4 and 7 of 7 rows (an
 * odd item ends with a row paired with itself), one and two threads, both stores, every vector
 * width the machine has, with a scalar tail (N = 45) and without (N = 64); in bf16, where the
 * sums of both forms add the same lane pairs in the same order, it gives jam(1)'s bytes. The
 * space offers it with pipeline("next") only; the lowering refuses it without, and other
 * values, saying why. */
static void
test_cpu_layernorm_jam(void)
{
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
    for (gint64 n = 45; n <= 64; n += 19) {
      g_autofree char *shape = g_strdup_printf("M=7,N=%" G_GINT64_FORMAT, n);
      GError *error = NULL;
      g_autoptr(TsOpInstance) inst = ts_op_instance_new("layernorm_safe", shape, dtypes[d],
                                                        &error);
      g_assert_no_error(error);
      for (guint v = 4; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2)
        for (gint64 bm = 3; bm <= 7; bm += bm == 3 ? 1 : 3) {
          g_autofree char *base = g_strdup_printf(
              "block(m=%" G_GINT64_FORMAT ").vector(%u).threads(%d).store(\"%s\")"
              ".pipeline(\"next\").apply(\"row\")",
              bm, v, bm == 4 ? 1 : 2, bm == 7 ? "cached" : "stream");
          g_autofree char *one = g_strdup_printf("%s.jam(1)", base);
          g_autofree char *two = g_strdup_printf("%s.jam(2)", base);
          assert_cpu_point_ok(inst, two);
          if (!g_str_has_prefix(dtypes[d], "bf16"))
            continue;
          g_autoptr(GBytes) a = row_op_output("layernorm_safe", 7, n, dtypes[d], one);
          g_autoptr(GBytes) b = row_op_output("layernorm_safe", 7, n, dtypes[d], two);
          if (!g_bytes_equal(a, b))
            g_error("layernorm bf16 N=%" G_GINT64_FORMAT " %s: differs from jam(1)", n, two);
        }
      guint total, jammed = count_knob_int(inst, dev, "jam", 2, &total);
      guint tiled = count_knob_value(inst, dev, "apply", "tile", &total);
      g_assert_cmpuint(jammed, >, 0);
      g_assert_cmpuint(jammed, ==, tiled);
      static const struct {
        const char *point, *says;
      } bad[] = {
          {"block(m=4).vector(8).threads(1).pipeline(\"none\").apply(\"row\").jam(2)",
           "use pipeline(\"next\")"},
          {"block(m=4).vector(8).threads(1).pipeline(\"next\").apply(\"row\").jam(3)",
           "jam(3) is not 1 or 2"},
      };
      for (guint b = 0; b < G_N_ELEMENTS(bad); b++)
        assert_cpu_point_refused(inst, bad[b].point, bad[b].says);
    }
}

/* softmax's pipeline("skew") (row i's exps computed while row i + 1's max is read and row
 * i - 1 is written from the exps kept for it) gives pipeline("none")'s bytes in every dtype and
 * with both exps: work items of 1, 3 and 4 of 7 rows (an item of one row runs only its first
 * and its last pass), one and two threads, both stores, every vector width the machine has,
 * with a scalar tail (N = 45) and without (N = 64). The space offers it with
 * softmax("stored") only, and the lowering refuses it elsewhere, saying why. */
static void
test_cpu_softmax_skew(void)
{
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
    for (gint64 n = 45; n <= 64; n += 19) {
      for (guint v = 4; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2)
        for (gint64 bm = 1; bm <= 4; bm += bm == 1 ? 2 : 1)
          for (int fast = 0; fast <= (d > 0); fast++) {
            g_autofree char *base = g_strdup_printf(
                "block(m=%" G_GINT64_FORMAT ").vector(%u).threads(%d).store(\"%s\")"
                ".softmax(\"stored\").math(\"%s\")",
                bm, v, bm == 3 ? 1 : 2, bm == 4 ? "cached" : "stream", fast ? "fast" : "exact");
            g_autofree char *none = g_strdup_printf("%s.pipeline(\"none\")", base);
            g_autofree char *skew = g_strdup_printf("%s.pipeline(\"skew\")", base);
            g_autoptr(GBytes) a = row_op_output("softmax_safe", 7, n, dtypes[d], none);
            g_autoptr(GBytes) b = row_op_output("softmax_safe", 7, n, dtypes[d], skew);
            if (!g_bytes_equal(a, b))
              g_error("softmax %s N=%" G_GINT64_FORMAT " %s: differs from pipeline(\"none\")",
                      dtypes[d], n, skew);
          }
      g_autofree char *shape = g_strdup_printf("M=7,N=%" G_GINT64_FORMAT, n);
      GError *error = NULL;
      g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", shape, dtypes[d], &error);
      g_assert_no_error(error);
      assert_cpu_point_ok(inst, "block(m=4).vector(8).threads(2).softmax(\"stored\")"
                                ".math(\"exact\").pipeline(\"skew\")");
      guint total, skewed = count_knob_value(inst, dev, "pipeline", "skew", &total);
      guint stored = count_knob_value(inst, dev, "softmax", "stored", &total);
      g_assert_cmpuint(skewed, >, 0);
      g_assert_cmpuint(skewed * 3, ==, stored); /* "none", "next" or "skew" */
      static const struct {
        const char *op, *point, *says;
      } bad[] = {
          {"softmax_safe", "block(m=4).vector(8).threads(1).softmax(\"max_first\")"
                           ".pipeline(\"skew\")", "use \"stored\""},
          {"softmax_safe", "block(m=4).vector(8).threads(1).softmax(\"stored\")"
                           ".pipeline(\"skewed\")", "not one of \"none\", \"next\", \"skew\""},
          {"rmsnorm_safe", "block(m=4).vector(8).threads(1).pipeline(\"skew\")",
           "not one of \"none\", \"next\""},
      };
      for (guint b = 0; b < G_N_ELEMENTS(bad); b++) {
        g_autoptr(TsOpInstance) bi = ts_op_instance_new(bad[b].op, shape, dtypes[d], &error);
        g_assert_no_error(error);
        assert_cpu_point_refused(bi, bad[b].point, bad[b].says);
      }
    }
}

/* Softmax on rows of negative values, of masks (-Inf) around a few values, of signed zeros and
 * subnormals, of huge values (bf16 past 2^24, where the fast exp subtracts the low part of
 * m log2(e)), and with the max in the scalar tail, against softmax in double: masked entries
 * exactly 0, the rest within the dtype's rounding. Every pipeline, both exps where the dtype
 * has two (f16's fast one skips its range check: exp_fast_sub_h); 16-bit rows take their maxes
 * on the bits (ts_vk_*). The online form once gave NaN
 * for a vector of lanes that had seen only masks. */
static void
test_cpu_softmax_special(void)
{
  static const char *const points[] = {
      "softmax(\"stored\").pipeline(\"none\")", "softmax(\"stored\").pipeline(\"next\")",
      "softmax(\"stored\").pipeline(\"skew\")", "softmax(\"max_first\").pipeline(\"none\")",
      "softmax(\"max_first\").pipeline(\"next\")", "softmax(\"online\")"};
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  const gint64 m = 5;
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
    for (gint64 n = 45; n <= 64; n += 19) {
      const gboolean bf = g_str_has_prefix(dtypes[d], "bf16"), f32 = d == 0;
      float *x = g_new(float, m * n);
      for (gint64 j = 0; j < n; j++) {
        const float u = (float)((j * 2654435761u) % 1000u) / 1000.0f;
        x[0 * n + j] = -180.0f + 179.0f * u; /* negative, too wide for a wrong max */
        x[1 * n + j] = j % 7 == 3 ? 2.0f * u : -INFINITY;         /* masked */
        x[2 * n + j] = j % 3 == 0 ? -0.0f : j % 3 == 1 ? 0.0f : -1e-7f * (float)(j + 1);
        x[3 * n + j] = (f32 || bf ? 3e30f : 60000.0f) - (j % 4 == 0 ? 0.0f : bf ? 1e29f : 32.0f);
        x[4 * n + j] = j == n - 1 ? 3.0f : -3.0f + u;            /* the max in the tail */
      }
      guint16 *x16 = g_new(guint16, m * n);
      for (gint64 i = 0; i < m * n && !f32; i++) {
        x16[i] = bf ? ts_f32_to_bf16(x[i]) : ts_f32_to_f16(x[i]);
        x[i] = bf ? ts_bf16_to_f32(x16[i]) : ts_f16_to_f32(x16[i]);
      }
      for (guint p = 0; p < G_N_ELEMENTS(points); p++)
        for (guint v = 8; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2)
          for (int fast = 0; fast <= !f32; fast++) {
            g_autofree char *point = g_strdup_printf(
                "block(m=2).vector(%u).threads(2).math(\"%s\").%s", v, fast ? "fast" : "exact",
                points[p]);
            g_autoptr(GBytes) out =
                row_op_output_x("softmax_safe", m, n, dtypes[d], point, f32 ? (void *)x : x16);
            const guint16 *y = g_bytes_get_data(out, NULL);
            const float *yf = g_bytes_get_data(out, NULL);
            for (gint64 i = 0; i < m; i++) {
              double mx = -INFINITY, sum = 0;
              for (gint64 j = 0; j < n; j++)
                mx = fmax(mx, x[i * n + j]);
              for (gint64 j = 0; j < n; j++)
                sum += exp((double)x[i * n + j] - mx);
              for (gint64 j = 0; j < n; j++) {
                const double ref = exp((double)x[i * n + j] - mx) / sum;
                const double got = f32  ? yf[i * n + j]
                                   : bf ? ts_bf16_to_f32(y[i * n + j])
                                        : ts_f16_to_f32(y[i * n + j]);
                const double tol = (f32 ? 1e-6 : bf ? 1.0 / 128 : 1.0 / 1024) * ref + 1e-7;
                if (!(fabs(got - ref) <= tol) || (ref == 0 && got != 0))
                  g_error("softmax %s N=%" G_GINT64_FORMAT " %s: row %" G_GINT64_FORMAT
                          " col %" G_GINT64_FORMAT ": %g, want %g", dtypes[d], n, point, i, j, got,
                          ref);
              }
            }
          }
      g_free(x);
      g_free(x16);
      /* the max pass and the carried max on the bits in 16 bits, as floats in f32 */
      g_autoptr(TsOpInstance) inst = NULL;
      g_autofree char *entry = NULL;
      g_autofree char *src = point_source_dt(
          "softmax_safe", "M=5,N=64", dtypes[d],
          "softmax(\"stored\").pipeline(\"skew\").math(\"exact\")", &inst, &entry);
      /* the first row's max: 3 (two accumulators, then one); each carry: 2, the map stepping
       * by pairs (bf16 lane pairs, f16 vector pairs) */
      g_assert_cmpuint(count_substr(src, "= ts_vk_max("), ==, f32 ? 0 : 3 + 2 * 2);
    }
}

/* pipeline("next") (a row's first reduction carried in the last pass over the row before it)
 * verifies with work items of 1, 3 and 7 rows (the last row of an item re-reads itself), on
 * one thread (3) and two (1, 7), at every vector width the machine has, with and without a scalar tail;
 * in bf16, where both forms sum the same lane pairs in the same order, its output is the same
 * bytes as pipeline("none")'s. The space offers both values. */
static void
test_cpu_rows_pipeline(void)
{
  static const char *const ops[] = {"layernorm_safe", "rmsnorm_safe", "softmax_safe",
                                    "softmax_safe"};
  /* softmax: its row of exps kept (a thread-private f32 row, paired in bf16 like the rows
   * around it), then computed twice */
  static const char *const extra[] = {"", "", ".softmax(\"stored\").math(\"exact\")",
                                      ".softmax(\"max_first\").math(\"exact\")"};
  const TsDeviceInfo *dev = ts_backend_describe(backend);
  for (guint c = 0; c < G_N_ELEMENTS(ops); c++)
    for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++) {
      for (gint64 n = 45; n <= 64; n += 19) {
        g_autofree char *shape = g_strdup_printf("M=7,N=%" G_GINT64_FORMAT, n);
        g_autoptr(GError) error = NULL;
        g_autoptr(TsOpInstance) inst = ts_op_instance_new(ops[c], shape, dtypes[d], &error);
        g_assert_no_error(error);
        for (guint v = 4; v <= 16 && v <= (guint)dev->vector_bits / 32; v *= 2)
          for (gint64 bm = 1; bm <= 7; bm += 2 + (bm == 3 ? 2 : 0)) {
            const gint64 t = bm == 3 ? 1 : 2;
              g_autofree char *base = g_strdup_printf(
                  "block(m=%" G_GINT64_FORMAT ").vector(%u).threads(%" G_GINT64_FORMAT ")"
                  ".store(\"stream\")%s", bm, v, t, extra[c]);
              g_autofree char *next = g_strdup_printf("%s.pipeline(\"next\")", base);
              assert_cpu_point_ok(inst, next);
              if (!g_str_has_prefix(dtypes[d], "bf16"))
                continue;
              g_autofree char *none = g_strdup_printf("%s.pipeline(\"none\")", base);
              g_autoptr(GBytes) a = row_op_output(ops[c], 7, n, dtypes[d], none);
              g_autoptr(GBytes) b = row_op_output(ops[c], 7, n, dtypes[d], next);
              if (!g_bytes_equal(a, b))
                g_error("%s bf16 N=%" G_GINT64_FORMAT " %s: differs from pipeline(\"none\")",
                        ops[c], n, next);
            }
        /* every point both ways, but softmax("online"), which has no max to carry, and
         * apply("tile"), whose rows' statistics come before their tiles */
        guint total, piped = count_knob_value(inst, dev, "pipeline", "next", &total);
        guint online = count_knob_value(inst, dev, "softmax", "online", &total);
        guint tiled = count_knob_value(inst, dev, "apply", "tile", &total);
        guint skewed = count_knob_value(inst, dev, "pipeline", "skew", &total);
        guint jammed = count_knob_int(inst, dev, "jam", 2, &total);
        g_assert_cmpuint((piped - jammed) * 2 + online + tiled + skewed + jammed, ==, total);
        g_assert_cmpuint(piped, >, 0);
      }
    }
}

/* A thread-private f32 row in a bf16 kernel holds lane pairs when the loops over it pair: one
 * that pairs (W = X, bf16) and one that cannot (a sum of W times an f32 global, whose values
 * are in order) would disagree on where each value is, so the C target refuses the mix; with a
 * bf16 G both pair, and W is read as the vectors it holds. */
static void
test_emit_private_row_order(void)
{
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", "M=4,N=64", "bf16", &error);
  g_assert_no_error(error);
  for (int g_bf16 = 0; g_bf16 < 2; g_bf16++) {
    g_autoptr(TsTileKernel) k = ts_tile_kernel_new("rows", "softmax_safe",
                                                   ts_op_instance_dtype(inst));
    ts_tile_kernel_add_param(k, "X", TS_DTYPE_BF16, "N");
    ts_tile_kernel_add_param(k, "G", g_bf16 ? TS_DTYPE_BF16 : TS_DTYPE_F32, "N");
    ts_tile_kernel_add_param(k, "Y", TS_DTYPE_F32, "1");
    ts_tile_kernel_add_int_param(k, "N");
    ts_tile_kernel_define(k, "VEC", 8);
    TsTileNode *par = ts_tile_parallel(k->body, 1);
    ts_tile_alloc_row(par, k, "W", "N", "one f32 row");
    TsTileNode *m = ts_tile_map(par, "w", "x", "N");
    ts_tile_node_add_view(m, "x", "X", "0");
    ts_tile_node_add_view(m, "w", "W", "0");
    TsTileNode *r = ts_tile_reduce(par, "s", "sum", "w * g", "N");
    ts_tile_node_add_view(r, "w", "W", "0");
    ts_tile_node_add_view(r, "g", "G", "0");
    TsTileNode *st = ts_tile_map(par, "y", "s", "1");
    ts_tile_node_add_view(st, "y", "Y", "0");
    g_autofree char *src = ts_emit_c(k, "rows", NULL, &error);
    if (!g_bf16) {
      g_assert_null(src);
      g_assert_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED);
      g_assert_nonnull(strstr(error->message, "'W' is used in bf16 lane pairs by one loop"));
      g_clear_error(&error);
      continue;
    }
    g_assert_no_error(error);
    g_assert_nonnull(strstr(src, "ts_vf_load2_bf16(G + (0) + j, &g_e_, &g_o_);"));
    g_assert_nonnull(strstr(src, "const ts_vf w_o_ = ts_vf_load_f32(W + (0) + j + TS_VEC);"));
    g_assert_nonnull(strstr(src, "ts_vf_store_f32(W + (0) + j + TS_VEC, ts_vo_);"));
  }
}

/* tile.set, one f32 element of a buffer: printed and emitted as an assignment (its value
 * rewritten as any scalar expression is); a 16-bit destination is refused by the C target, and
 * the construct by the CUDA target. */
static void
test_emit_tile_set(void)
{
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("rmsnorm_safe", "M=4,N=64", "f32", &error);
  g_assert_no_error(error);
  for (int f32 = 0; f32 < 2; f32++) {
    g_autoptr(TsTileKernel) k = ts_tile_kernel_new("rows", "rmsnorm_safe",
                                                   ts_op_instance_dtype(inst));
    ts_tile_kernel_add_param(k, "Y", f32 ? TS_DTYPE_F32 : TS_DTYPE_F16, "2");
    ts_tile_kernel_add_int_param(k, "N");
    TsTileNode *par = ts_tile_parallel(k->body, 1);
    ts_tile_set(par, "Y", "1", "sqrt((float)N)");
    g_autofree char *ir = ts_tile_kernel_to_string(k);
    g_assert_nonnull(strstr(ir, "Y[1] = sqrt((float)N)\n"));
    g_autofree char *src = ts_emit_c(k, "rows", NULL, &error);
    if (!f32) {
      g_assert_null(src);
      g_assert_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED);
      g_assert_nonnull(strstr(error->message, "tile.set stores f32, 'Y' is f16"));
      g_clear_error(&error);
      continue;
    }
    g_assert_no_error(error);
    g_assert_nonnull(strstr(src, "Y[1] = sqrtf((float)N);"));
    g_autoptr(TsTileKernel) gk = ts_tile_kernel_new("rows", "rmsnorm_safe",
                                                    ts_op_instance_dtype(inst));
    ts_tile_kernel_add_param(gk, "Y", TS_DTYPE_F32, "2");
    ts_tile_set(ts_tile_grid(gk->body, 1, 1, 1, 32, 0), "Y", "1", "0.0f");
    g_autofree char *cu = ts_emit_cuda(gk, "rows", NULL, &error);
    g_assert_null(cu);
    g_assert_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED);
    g_assert_nonnull(strstr(error->message, "reduce/convert/set"));
    g_clear_error(&error);
  }
}

/* A map's second store (drain): printed after the map's carry, emitted in its vector loop (in
 * the destination's dtype, non-temporal when asked) and in its scalar tail, and fenced; a
 * drain naming no view is an invalid kernel; the CUDA target refuses the construct. */
static void
test_emit_map_drain(void)
{
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", "M=4,N=64", "f32", &error);
  g_assert_no_error(error);
  for (int bad = 0; bad < 2; bad++) {
    g_autoptr(TsTileKernel) k = ts_tile_kernel_new("rows", "softmax_safe",
                                                   ts_op_instance_dtype(inst));
    ts_tile_kernel_add_param(k, "X", TS_DTYPE_F32, "N");
    ts_tile_kernel_add_param(k, "Y", TS_DTYPE_F32, "N");
    ts_tile_kernel_add_param(k, "Z", TS_DTYPE_F16, "N");
    ts_tile_kernel_add_int_param(k, "N");
    ts_tile_kernel_define(k, "VEC", 8);
    TsTileNode *par = ts_tile_parallel(k->body, 1);
    TsTileNode *m = ts_tile_map(par, "y", "x * 2.0f", "N");
    ts_tile_map_set_drain(m, bad ? "q" : "z", "x + 1.0f", TRUE);
    ts_tile_node_add_view(m, "x", "X", "0");
    ts_tile_node_add_view(m, "y", "Y", "0");
    ts_tile_node_add_view(m, "z", "Z", "0");
    g_autofree char *src = ts_emit_c(k, "rows", NULL, &error);
    if (bad) {
      g_assert_null(src);
      g_assert_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_INVALID);
      g_assert_nonnull(strstr(error->message, "second destination 'q' is not a view"));
      g_clear_error(&error);
      continue;
    }
    g_autofree char *ir = ts_tile_kernel_to_string(k);
    g_assert_nonnull(strstr(ir, "y = tile.map(x * 2.0f, j < N) and z = x + 1.0f (stream)  with"));
    g_assert_no_error(error);
    g_assert_nonnull(strstr(src, "const ts_vf ts_d_ = x + 1.0f;"));
    g_assert_nonnull(strstr(src, "ts_vf_store_f32(Y + (0) + j, ts_v_);"));
    g_assert_nonnull(strstr(src, "ts_vf_stream_f16(Z + (0) + j, ts_d_);"));
    g_assert_nonnull(strstr(src, "Z[(0) + j] = ts_cpu_f32_to_f16(ts_d_);"));
    g_assert_nonnull(strstr(src, "ts_stream_fence();"));
    g_autoptr(TsTileKernel) gk = ts_tile_kernel_new("rows", "softmax_safe",
                                                    ts_op_instance_dtype(inst));
    TsTileNode *g = ts_tile_grid(gk->body, 1, 1, 1, 32, 0);
    ts_tile_alloc(g, gk, "x", TS_MEM_REGISTER, TS_DTYPE_F32, "8", FALSE, "row");
    ts_tile_alloc(g, gk, "z", TS_MEM_REGISTER, TS_DTYPE_F32, "8", FALSE, "row");
    TsTileNode *gm = ts_tile_map(g, "x", "x * 2.0f", "8");
    ts_tile_map_set_drain(gm, "z", "x", FALSE);
    ts_tile_node_add_view(gm, "x", "x", "0");
    ts_tile_node_add_view(gm, "z", "z", "0");
    g_autofree char *cu = ts_emit_cuda(gk, "rows", NULL, &error);
    g_assert_null(cu);
    g_assert_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED);
    g_assert_nonnull(strstr(error->message, "second store is a CPU row-pass construct"));
    g_clear_error(&error);
  }
}

/* exp_fast_sub(a, m) with m the same for every column gets m's constants made once, ahead of
 * the loop; an m that reads a view stays in the loop, and calls nest (the softmax tests run
 * the kernels this makes). */
static void
test_emit_row_consts(void)
{
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("softmax_safe", "M=1,N=37", "f32", &error);
  g_assert_no_error(error);
  g_autoptr(TsTileKernel) k = ts_tile_kernel_new("rows", "softmax_safe",
                                                 ts_op_instance_dtype(inst));
  ts_tile_kernel_add_param(k, "X", TS_DTYPE_F32, "N");
  ts_tile_kernel_add_param(k, "Y", TS_DTYPE_F32, "N");
  ts_tile_kernel_add_int_param(k, "N");
  ts_tile_kernel_define(k, "VEC", 8);
  TsTileNode *par = ts_tile_parallel(k->body, 1);
  TsTileNode *r = ts_tile_reduce(par, "m", "max", "x", "N");
  ts_tile_node_add_view(r, "x", "X", "0");
  TsTileNode *s =
      ts_tile_reduce(par, "l", "sum", "exp_fast_sub(exp_fast_sub(x, m), m - 1.0f)", "N");
  ts_tile_node_add_view(s, "x", "X", "0");
  TsTileNode *mp = ts_tile_map(par, "y", "exp_fast_sub(x, m) + exp_fast_sub(x, x) + l", "N");
  ts_tile_node_add_view(mp, "x", "X", "0");
  ts_tile_node_add_view(mp, "y", "Y", "0");
  /* softmax into f16's variant the same way, into exp_fast_sub_row_h */
  TsTileNode *mh = ts_tile_map(par, "y", "exp_fast_sub_h(x, m) * l", "N");
  ts_tile_node_add_view(mh, "x", "X", "0");
  ts_tile_node_add_view(mh, "y", "Y", "0");
  g_autofree char *src = ts_emit_c(k, "rows", NULL, &error);
  g_assert_no_error(error);
  g_assert_nonnull(strstr(src, "const TsExpSub ts_es0_ = ts_exp_sub_row(m);"));
  g_assert_nonnull(strstr(src, "const TsExpSub ts_es1_ = ts_exp_sub_row(m - 1.0f);"));
  g_assert_nonnull(strstr(
      src, "ts_vf_exp_fast_sub_row(ts_vf_exp_fast_sub_row(x, ts_es0_), ts_es1_)"));
  g_assert_nonnull(strstr(src, "const TsExpSub ts_es2_ = ts_exp_sub_row(m);"));
  g_assert_nonnull(
      strstr(src, "ts_vf_exp_fast_sub_row(x, ts_es2_) + ts_vf_exp_fast_sub(x, x) + l"));
  g_assert_nonnull(
      strstr(src, "ts_exp_fast_sub_row_f32(x, ts_es2_) + ts_exp_fast_sub_f32(x, x) + l"));
  g_assert_nonnull(strstr(src, "const TsExpSub ts_es3_ = ts_exp_sub_row(m);"));
  g_assert_nonnull(strstr(src, "ts_vf_exp_fast_sub_row_h(x, ts_es3_) * l"));
  g_assert_nonnull(strstr(src, "ts_exp_fast_sub_row_h_f32(x, ts_es3_) * l"));
  g_assert_null(strstr(src, "ts_es4_"));
  /* the declaration comes before the loop that uses it */
  const char *decl = strstr(src, "ts_es2_ = ");
  const char *loop = strstr(decl, "for (");
  g_assert_nonnull(loop);
  g_assert_true(loop < strstr(src, "ts_vf_exp_fast_sub_row(x, ts_es2_)"));
}

static void
test_gemm_tma_lowering(void)
{
  GError *error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=1000,N=1024,K=520", "bf16",
                                                    &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) user = ts_sched_point_parse(
      "block(m=128,n=256,k=64).warps(8).stages(3).mma(\"wgmma\").load(\"tma\")", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cuda", user, &error);
  g_assert_no_error(error);
  g_autofree char *entry = NULL;
  g_autofree char *src = ts_op_emit(inst, "cuda", point, &entry, NULL, &error);
  g_assert_no_error(error);
  /* buffers A B C; ints M N K: map 0 = A, rows of K (int 2), M rows (int 0), box 64 x 128;
   * map 1 = B, rows of N (int 1), K rows (int 2), box 64 x 64; 128-byte swizzle, 2 bytes. */
  g_autofree char *record = g_strdup_printf(
      "extern \"C\" __constant__ unsigned int %s_tma[17] = {2, 0, 2, 2, 0, 64, 128, 128, 0, "
      "1, 2, 1, 2, 64, 64, 128, 0};", entry);
  g_assert_nonnull(strstr(src, record));
  g_assert_nonnull(strstr(src, "const TsTmaMap *const tma_a = &ts_tma.map[0];"));
  g_assert_nonnull(strstr(src, "static constexpr long long SLICE_BYTES = 49152;"));
  /* The mbarriers follow the 3-stage ring: 3 x (128 + 256) x 64 x 2 bytes + 3 x 8. */
  g_assert_nonnull(strstr(src, "= {32, 1, 1, 256, 1, 1, 147480};"));

  const unsigned words[17] = {2, 0, 2, 2, 0, 64, 128, 128, 0, 1, 2, 1, 2, 64, 64, 128, 0};
  const long long ints[3] = {1000, 1024, 520};
  TsTmaPlan plans[TS_TMA_MAX_MAPS];
  const char *why = NULL;
  g_assert_cmpint(ts_tma_plan(words, 17, ints, 3, 3, plans, &why), ==, 2);
  g_assert_cmpuint(plans[0].dim[0], ==, 520);
  g_assert_cmpuint(plans[0].dim[1], ==, 1000);
  g_assert_cmpuint(plans[0].row_stride, ==, 1040);
  g_assert_cmpuint(plans[0].box[0], ==, 64);
  g_assert_cmpuint(plans[0].box[1], ==, 128);
  g_assert_cmpuint(plans[1].buf, ==, 1);
  g_assert_cmpuint(plans[1].dim[0], ==, 1024);
  g_assert_cmpuint(plans[1].dim[1], ==, 520);
  g_assert_cmpuint(plans[1].swizzle_bytes, ==, 128);
  /* A K the TMA cannot stride (rows of 1038 bytes), a count the record cannot hold, a box
   * wider than its swizzle. */
  const long long odd[3] = {1000, 1024, 519};
  g_assert_cmpint(ts_tma_plan(words, 17, odd, 3, 3, plans, &why), ==, -1);
  g_assert_nonnull(strstr(why, "multiple of 16 bytes"));
  g_assert_cmpint(ts_tma_plan(words, 16, ints, 3, 3, plans, &why), ==, -1);
  unsigned wide[9] = {1, 0, 2, 2, 0, 128, 64, 128, 0};
  g_assert_cmpint(ts_tma_plan(wide, 9, ints, 3, 3, plans, &why), ==, -1);
  g_assert_nonnull(strstr(why, "no wider than the swizzle"));
  /* Rows as a product of dims (attention's [B*H, S, D] as B*H*S rows): ints 0 (B) times the
   * mask's 1 and 2 (H, S), D = int 3 elements a row; a product past 2^32, or a mask naming a
   * parameter the launch does not have, is refused. */
  const unsigned flat[9] = {1, 0, 2, 3, 0, 64, 128, 128, 6};
  const long long bhsd[4] = {2, 16, 4096, 128};
  g_assert_cmpint(ts_tma_plan(flat, 9, bhsd, 4, 1, plans, &why), ==, 1);
  g_assert_cmpuint(plans[0].dim[0], ==, 128);
  g_assert_cmpuint(plans[0].dim[1], ==, 2 * 16 * 4096);
  const long long huge[4] = {1 << 20, 1 << 20, 1 << 20, 128};
  g_assert_cmpint(ts_tma_plan(flat, 9, huge, 4, 1, plans, &why), ==, -1);
  g_assert_nonnull(strstr(why, "2^32"));
  const unsigned past[9] = {1, 0, 2, 3, 0, 64, 128, 128, 1u << 5};
  g_assert_cmpint(ts_tma_plan(past, 9, bhsd, 4, 1, plans, &why), ==, -1);
  g_assert_nonnull(strstr(why, "integer argument"));

  /* The Tile IR names the maps; a C target refuses them. */
  g_autoptr(TsTileKernel) k = ts_op_lower(inst, "cuda", point, &error);
  g_assert_no_error(error);
  g_autofree char *tile = ts_tile_kernel_to_string(k);
  g_assert_nonnull(strstr(tile, "tensor_map tma_a: A[M, K] box 128x64, swizzle 128B"));
  g_assert_nonnull(strstr(tile, "tensor_map tma_b: B[K, N] box 64x64, swizzle 128B"));
  g_assert_null(ts_emit_c(k, entry, NULL, &error));
  g_assert_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "TMA tensor maps"));
  g_clear_error(&error);
}

/* The reference against a naive f64 computation done differently: no max subtraction, the
 * whole probability matrix first, then P·V. */
static void
naive_attention(const float *q, const float *k, const float *v, double *o, int heads, int seq,
                int dim, gboolean causal)
{
  g_autofree double *p = g_new(double, seq * seq);
  for (int h = 0; h < heads; h++) {
    const float *qh = q + h * seq * dim, *kh = k + h * seq * dim, *vh = v + h * seq * dim;
    for (int i = 0; i < seq; i++) {
      double z = 0;
      for (int j = 0; j < seq; j++) {
        double s = 0;
        for (int d = 0; d < dim; d++)
          s += (double)qh[i * dim + d] * kh[j * dim + d];
        p[i * seq + j] = causal && j > i ? 0.0 : exp(s / sqrt((double)dim));
        z += p[i * seq + j];
      }
      for (int j = 0; j < seq; j++)
        p[i * seq + j] /= z;
    }
    for (int i = 0; i < seq; i++)
      for (int d = 0; d < dim; d++) {
        double acc = 0;
        for (int j = 0; j < seq; j++)
          acc += p[i * seq + j] * vh[j * dim + d];
        o[(h * seq + i) * dim + d] = acc;
      }
  }
}

static void
test_attention_reference(void)
{
  enum { H = 2, S = 7, D = 5, N = H * S * D };
  float q[N], k[N], v[N];
  g_autoptr(GRand) rng = g_rand_new_with_seed(11);
  for (int i = 0; i < N; i++) {
    q[i] = (float)g_rand_double_range(rng, -2, 2);
    k[i] = (float)g_rand_double_range(rng, -2, 2);
    v[i] = (float)g_rand_double_range(rng, -1, 1);
  }
  for (int causal = 0; causal < 2; causal++) {
    double ref[N], want[N];
    ts_ref_attention(TS_DTYPE_F32, q, k, v, ref, H, S, D, causal, NULL, 0);
    naive_attention(q, k, v, want, H, S, D, causal);
    for (int i = 0; i < N; i++)
      g_assert_cmpfloat_with_epsilon(ref[i], want[i], 1e-12);
    /* A causal first row sees only its own key: O = V row 0, exactly. */
    if (causal)
      for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++)
          g_assert_cmpfloat(ref[h * S * D + d], ==, (double)v[h * S * D + d]);
    /* Only the listed rows are written. */
    double part[N];
    for (int i = 0; i < N; i++)
      part[i] = NAN;
    const gint64 rows[] = {0, 6, 9};
    ts_ref_attention(TS_DTYPE_F32, q, k, v, part, H, S, D, causal, rows, G_N_ELEMENTS(rows));
    for (int i = 0; i < N; i++) {
      gint64 row = i / D;
      gboolean listed = row == 0 || row == 6 || row == 9;
      if (listed)
        g_assert_cmpfloat(part[i], ==, ref[i]);
      else
        g_assert_true(isnan(part[i]));
    }
  }
  /* Logits far past exp()'s range (|s| ~ 1e4): max subtraction keeps the reference finite;
   * with all keys equal every weight is the same, so O is the mean of the value rows. */
  float big_q[S * D], same_k[S * D];
  for (int i = 0; i < S * D; i++) {
    big_q[i] = 100.0f;
    same_k[i] = 50.0f;
  }
  double o[S * D];
  ts_ref_attention(TS_DTYPE_F32, big_q, same_k, v, o, 1, S, D, FALSE, NULL, 0);
  for (int d = 0; d < D; d++) {
    double mean = 0;
    for (int j = 0; j < S; j++)
      mean += (double)v[j * D + d] / S;
    for (int i = 0; i < S; i++)
      g_assert_cmpfloat_with_epsilon(o[i * D + d], mean, 1e-12);
  }
}

static void
test_attention_sampled_rows(void)
{
  /* Small problems are checked in full. */
  gsize n = 0;
  g_assert_null(ts_ref_attention_rows(2, 100, 64, 1 << 28, 1, &n));
  g_assert_cmpuint(n, ==, 200);
  /* The benchmark's size: ~512 rows, ascending, the first and last of the first and last
   * head included, the same for the same seed and not for another. */
  const gint64 heads = 64, seq = 4096, total = heads * seq;
  g_autofree gint64 *r1 = ts_ref_attention_rows(heads, seq, 128, 1 << 28, 7, &n);
  g_assert_nonnull(r1);
  g_assert_cmpuint(n, <=, 512);
  g_assert_cmpuint(n, >, 400);
  for (gsize i = 1; i < n; i++)
    g_assert_cmpint(r1[i - 1], <, r1[i]);
  g_assert_cmpint(r1[0], ==, 0);
  g_assert_cmpint(r1[n - 1], ==, total - 1);
  gboolean has_last_of_first = FALSE, has_first_of_last = FALSE;
  for (gsize i = 0; i < n; i++) {
    has_last_of_first |= r1[i] == seq - 1;
    has_first_of_last |= r1[i] == total - seq;
  }
  g_assert_true(has_last_of_first && has_first_of_last);
  gsize n2 = 0, n3 = 0;
  g_autofree gint64 *r2 = ts_ref_attention_rows(heads, seq, 128, 1 << 28, 7, &n2);
  g_autofree gint64 *r3 = ts_ref_attention_rows(heads, seq, 128, 1 << 28, 8, &n3);
  g_assert_cmpmem(r1, n * sizeof *r1, r2, n2 * sizeof *r2);
  g_assert_false(n == n3 && memcmp(r1, r3, n * sizeof *r1) == 0);

  /* Unchecked (NaN) reference entries are left out of the error but a non-finite output is
   * caught anywhere; a reference that checks nothing passes nothing. Other ops' references
   * have no NaN, and for them the check is the one it was. */
  const double ref[] = {1.0, 2.0, NAN, NAN};
  const float good[] = {1.0f, 2.0f, 123.0f, -7.0f};
  const float nan_unchecked[] = {1.0f, 2.0f, NAN, 0.0f};
  const float wrong_checked[] = {1.0f, 3.0f, 0.0f, 0.0f};
  gsize bad = 9;
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, good, ref, 4, &bad), ==, 0.0);
  g_assert_cmpuint(bad, ==, 0);
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, nan_unchecked, ref, 4, &bad), ==,
                    INFINITY);
  g_assert_cmpuint(bad, ==, 1);
  g_assert_cmpfloat_with_epsilon(ts_numerics_rel_error(TS_DTYPE_F32, wrong_checked, ref, 4, NULL),
                                 1.0 / sqrt(5.0), 1e-12);
  const double none[] = {NAN, NAN};
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, good, none, 2, NULL), ==, INFINITY);
  const double full[] = {1.0, 2.0};
  g_assert_cmpfloat(ts_numerics_rel_error(TS_DTYPE_F32, good, full, 2, NULL), ==, 0.0);
}

/* The whole trial on a problem big enough to be verified on sampled rows (4100^2 x 16 >
 * 2^28): the CPU kernel passes; the same kernel leaving one row unwritten fails on the
 * poisoned NaN whether or not that row was sampled. */
static void
test_attention_sampled_trial(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("flash_attention_causal",
                                                    "B=1,H=1,S=4100,D=16", "f32", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cpu", NULL, &error);
  g_assert_no_error(error);
  g_autofree char *entry = NULL;
  g_clear_pointer(&source_ints, g_array_unref);
  g_autofree char *src = ts_op_emit(inst, "cpu", point, &entry, &source_ints, &error);
  g_assert_no_error(error);
  TsRunOptions opt;
  quick_options(&opt);
  opt.max_samples = 1;
  g_autoptr(TsTrialResult) ok = ts_op_run_source(inst, backend, src, entry, source_ints, &opt, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_trial_status_name(ok->status), ==, "ok");
  g_assert_cmpfloat(ok->rel_error, <=, ok->tolerance);

  /* The store of a tile's row i. */
  const char *loop = "const float r = 1.0f / Ls[i];";
  g_assert_nonnull(strstr(src, loop));
  g_autofree char *skip_row = g_strconcat("if (q0 + i == 1) continue; ", loop, NULL);
  g_autofree char *bad = replace_all(src, loop, skip_row);
  g_autoptr(TsTrialResult) r = ts_op_run_source(inst, backend, bad, entry, source_ints, &opt, &error);
  g_assert_no_error(error);
  g_assert_cmpint(r->status, ==, TS_TRIAL_WRONG_RESULT);
  g_assert_nonnull(strstr(r->message, "NaN/Inf"));
}


/* ==== verification that scales: gemm checked on a sample ==== */

/* The sampled reference equals the full one wherever it checks (the same products summed in the
 * same order), holds whole rows and columns (the first and last among them) and the random
 * elements, and is NaN elsewhere; the same seed gives the same sample. */
static void
test_gemm_sampled_reference(void)
{
  const gint64 m = 200, n = 300, k = 40;
  g_autoptr(GRand) rng = g_rand_new_with_seed(3);
  g_autofree guint16 *a = g_new(guint16, m * k);
  g_autofree guint16 *b = g_new(guint16, k * n);
  ts_numerics_fill_random(TS_DTYPE_BF16, a, m * k, rng, -1, 1);
  ts_numerics_fill_random(TS_DTYPE_BF16, b, k * n, rng, -1, 1);
  g_autofree double *full = g_new(double, m * n);
  g_autofree double *s1 = g_new(double, m * n);
  g_autofree double *s2 = g_new(double, m * n);
  g_autofree double *s3 = g_new(double, m * n);
  ts_ref_gemm(TS_DTYPE_BF16, a, b, full, m, n, k);
  ts_ref_gemm_sampled(TS_DTYPE_BF16, a, b, s1, m, n, k, 11);
  ts_ref_gemm_sampled(TS_DTYPE_BF16, a, b, s2, m, n, k, 11);
  ts_ref_gemm_sampled(TS_DTYPE_BF16, a, b, s3, m, n, k, 12);
  gsize checked = 0, full_rows = 0, full_cols = 0;
  for (gint64 i = 0; i < m * n; i++) {
    if (isnan(s1[i]))
      continue;
    checked++;
    g_assert_cmpfloat_with_epsilon(s1[i], full[i], 1e-12 * (1 + fabs(full[i])));
  }
  for (gint64 i = 0; i < m; i++) {
    gboolean whole = TRUE;
    for (gint64 j = 0; j < n && whole; j++)
      whole = !isnan(s1[i * n + j]);
    full_rows += whole;
    if (i == 0 || i == m - 1)
      g_assert_true(whole);
  }
  for (gint64 j = 0; j < n; j++) {
    gboolean whole = TRUE;
    for (gint64 i = 0; i < m && whole; i++)
      whole = !isnan(s1[i * n + j]);
    full_cols += whole;
    if (j == 0 || j == n - 1)
      g_assert_true(whole);
  }
  g_assert_cmpuint(full_rows, ==, TS_REF_GEMM_SAMPLE_ROWS);
  g_assert_cmpuint(full_cols, ==, TS_REF_GEMM_SAMPLE_COLS);
  /* Rows and columns overlap in 16 x 16 elements; the random elements may fall on them too. */
  const gsize lines = 16 * n + 16 * m - 16 * 16;
  g_assert_cmpuint(checked, >, lines + TS_REF_GEMM_SAMPLE_ELEMS / 2);
  g_assert_cmpuint(checked, <=, lines + TS_REF_GEMM_SAMPLE_ELEMS);
  g_assert_cmpuint(checked, <, (gsize)(m * n));
  g_assert_cmpmem(s1, sizeof(double) * m * n, s2, sizeof(double) * m * n);
  gboolean differ = FALSE;
  for (gint64 i = 0; i < m * n && !differ; i++)
    differ = isnan(s1[i]) != isnan(s3[i]);
  g_assert_true(differ);
}

/* The C source of `src` with `patch` applied to the finished output: the entry is renamed and
 * called from a new entry of the same name, which then runs `patch` (C code seeing bufs). */
static char *
patch_output(const char *src, const char *entry, const char *patch)
{
  g_autofree char *call = g_strconcat(entry, "(", NULL);
  g_autofree char *inner = g_strconcat(entry, "_inner(", NULL);
  g_autofree char *renamed = replace_all(src, call, inner);
  return g_strdup_printf("%s\n__attribute__((visibility(\"default\")))\n"
                         "void %s(void *const *bufs, const int64_t *ints, const double *floats);\n"
                         "void %s(void *const *bufs, const int64_t *ints, const double *floats)\n"
                         "{\n  %s_inner(bufs, ints, floats);\n  %s\n}\n",
                         renamed, entry, entry, entry, patch);
}

/* A whole trial verified on a sample (the limit lowered so a small gemm is sampled): the real
 * kernel passes and says so; an element the sample does not check, left NaN, still fails (the
 * NaN/Inf scan covers every element); a wrong finite value there passes, which is what sampling
 * gives up; the same value on a sampled element fails. */
static void
test_gemm_sampled_trial(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = NULL;
  g_autofree char *entry = NULL;
  g_autofree char *src = point_source("gemm", "M=96,N=160,K=48", "threads(1)", &inst, &entry);
  ts_op_instance_set_reference_limit(inst, 0);
  TsRunOptions opt;
  quick_options(&opt);
  gsize n = 0;
  const char *how = NULL;
  const double *ref = ts_op_instance_reference(inst, opt.seed, &n, &how);
  g_assert_cmpuint(n, ==, 96 * 160);
  g_assert_true(g_str_has_prefix(how, "sampled f64 reference: 16 rows, 16 columns and 4096"));
  g_assert_nonnull(strstr(how, "every element scanned for NaN/Inf"));
  gsize unchecked = n, checked = n;
  for (gsize i = 0; i < n && (unchecked == n || checked == n); i++) {
    if (isnan(ref[i]) && unchecked == n)
      unchecked = i;
    if (!isnan(ref[i]) && checked == n && i > 0)
      checked = i;
  }
  g_assert_cmpuint(unchecked, <, n);
  g_assert_cmpuint(checked, <, n);

  g_autoptr(TsTrialResult) ok = ts_op_run_source(inst, backend, src, entry, source_ints, &opt, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_trial_status_name(ok->status), ==, "ok");
  g_assert_cmpstr(ok->verification, ==, how);

  static const struct {
    const char *value;
    gboolean at_checked;
    TsTrialStatus status;
    const char *needle;
  } plants[] = {
    {"__builtin_nanf(\"\")", FALSE, TS_TRIAL_WRONG_RESULT, "1 of 15360 output elements are NaN"},
    {"__builtin_inff()", FALSE, TS_TRIAL_WRONG_RESULT, "NaN/Inf"},
    {"1000.0f", FALSE, TS_TRIAL_OK, NULL},
    {"1000.0f", TRUE, TS_TRIAL_WRONG_RESULT, "relative error"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(plants); i++) {
    g_autofree char *patch = g_strdup_printf("((float *)bufs[2])[%" G_GSIZE_FORMAT "] = %s;",
                                             plants[i].at_checked ? checked : unchecked,
                                             plants[i].value);
    g_autofree char *bad = patch_output(src, entry, patch);
    g_autoptr(TsTrialResult) r = ts_op_run_source(inst, backend, bad, entry, source_ints, &opt, &error);
    g_assert_no_error(error);
    if (r->status != plants[i].status)
      g_error("planting %s: %s (%s)", patch, ts_trial_status_name(r->status), r->message);
    if (plants[i].needle && strstr(r->message, plants[i].needle) == NULL)
      g_error("planting %s: '%s' does not say '%s'", patch, r->message, plants[i].needle);
  }

  /* Under the default limit the same problem is checked in full. */
  g_autoptr(TsOpInstance) whole = ts_op_instance_new("gemm", "M=96,N=160,K=48", "f32", &error);
  g_assert_no_error(error);
  ts_op_instance_reference(whole, opt.seed, NULL, &how);
  g_assert_cmpstr(how, ==, "full f64 reference (15360 elements)");
}

/* A string knob cannot end the banner comment and become code: the schedule is quoted into
 * the generated source's first comment (issue: swizzle("*\/ static_assert(...); /\*") was
 * compiled by NVRTC). */
static void
test_knob_string_in_comment(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new("gemm", "M=64,N=64,K=64", "bf16", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) user =
    ts_sched_point_parse("swizzle(\"*/ int injected_code; /*\")", &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, "cuda", user, &error);
  g_assert_no_error(error);
  g_autofree char *entry = NULL;
  g_autofree char *src = ts_op_emit(inst, "cuda", point, &entry, NULL, &error);
  g_assert_no_error(error);
  const char *end = strstr(src, "*/");
  const char *injected = strstr(src, "int injected_code;");
  g_assert_nonnull(end);
  g_assert_nonnull(injected);
  g_assert_true(injected < end); /* still inside the banner */
  g_assert_null(strstr(src, "*/ int injected_code"));
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_autoptr(GError) error = NULL;
  backend = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  /* One artifact cache for every build configuration: the sources are identical. (dev.sh
   * names one for all the suites' tests in TESSERA_ARTIFACT_DIR, which the backend takes.) */
  if (g_getenv("TESSERA_ARTIFACT_DIR") == NULL) {
    g_autofree char *cache = g_build_filename(g_get_user_cache_dir(), "tessera",
                                              "test-artifacts", NULL);
    ts_backend_set_cache_dir(backend, cache);
  }
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = i > 0 && strcmp(cases[i - 1].op, cases[i].op) == 0
                              ? g_strdup_printf("/ops/space/%s-%u", cases[i].op, i)
                              : g_strdup_printf("/ops/space/%s", cases[i].op);
    g_test_add_data_func(path, &cases[i], test_space_runs);
  }
  g_test_add_func("/ops/verify/wrong-kernel", test_wrong_kernel_caught);
  g_test_add_func("/ops/verify/unwritten-output", test_unwritten_output_caught);
  g_test_add_func("/ops/compile-error", test_compile_error_reported);
  g_test_add_func("/ops/bad-workloads", test_bad_workloads);
  g_test_add_func("/ops/bad-points", test_bad_points);
  g_test_add_func("/ops/counts", test_counts);
  g_test_add_func("/ops/timer/samples", test_timer_samples);
  g_test_add_func("/ops/timer/alternate", test_timer_alternate);
  g_test_add_func("/ops/timer/slowdown", test_timer_slowdown);
  g_test_add_func("/ops/timer/wrong-kernel", test_timer_wrong_kernel);
  g_test_add_func("/ops/timer/sibling", test_timer_sibling);

  /* flash_attention: host-side checks (the kernels themselves need a GPU: test-cuda-ops). */
  for (guint i = 0; i < G_N_ELEMENTS(attn_cases); i++) {
    g_autofree char *path = g_strdup_printf("/ops/attention/space/%s", attn_cases[i].op);
    g_test_add_data_func(path, &attn_cases[i], test_space_runs);
  }
  g_test_add_func("/ops/cpu/spaces-follow-simd", test_cpu_spaces_follow_simd);
  g_test_add_func("/ops/cpu/launch-consts", test_cpu_launch_consts);
  g_test_add_func("/ops/cpu/softmax-passes", test_cpu_softmax_passes);
  g_test_add_func("/ops/cpu/rows-stream", test_cpu_rows_stream);
  g_test_add_func("/ops/cpu/rows-pipeline", test_cpu_rows_pipeline);
  g_test_add_func("/ops/cpu/rows-apply-tile", test_cpu_rows_apply_tile);
  g_test_add_func("/ops/cpu/lang-apply-tile", test_cpu_lang_apply_tile);
  g_test_add_func("/ops/cpu/softmax-skew", test_cpu_softmax_skew);
  g_test_add_func("/ops/cpu/softmax-special", test_cpu_softmax_special);
  g_test_add_func("/ops/cpu/layernorm-jam", test_cpu_layernorm_jam);
  g_test_add_func("/ops/emit/private-row-order", test_emit_private_row_order);
  g_test_add_func("/ops/emit/tile-set", test_emit_tile_set);
  g_test_add_func("/ops/emit/map-drain", test_emit_map_drain);
  g_test_add_func("/ops/emit/row-consts", test_emit_row_consts);
  g_test_add_func("/ops/cpu/gemm-bf16dot", test_cpu_gemm_bf16dot);
  g_test_add_func("/ops/cpu/gemm-amx", test_cpu_gemm_amx);
  g_test_add_func("/ops/cpu/gemm-fp8", test_cpu_gemm_fp8);
  g_test_add_func("/ops/cpu/gemm-fp8-wrong", test_cpu_gemm_fp8_wrong_caught);
  g_test_add_func("/ops/gemm/wgmma-space", test_gemm_wgmma_space);
  g_test_add_func("/ops/gemm/fp8-cuda-space", test_gemm_fp8_cuda_space);
  g_test_add_func("/ops/gemm/tma-lowering", test_gemm_tma_lowering);
  g_test_add_func("/ops/attention/workloads", test_attention_workloads);
  g_test_add_func("/ops/attention/cpu-lowering", test_attention_cpu_lowering);
  g_test_add_func("/ops/attention/cuda-lowering", test_attention_cuda_lowering);
  g_test_add_func("/ops/attention/reference", test_attention_reference);
  g_test_add_func("/ops/attention/sampled-rows", test_attention_sampled_rows);
  g_test_add_func("/ops/attention/sampled-trial", test_attention_sampled_trial);
  g_test_add_func("/ops/gemm/sampled-reference", test_gemm_sampled_reference);
  g_test_add_func("/ops/gemm/sampled-trial", test_gemm_sampled_trial);
  g_test_add_func("/ops/emit/knob-string-in-comment", test_knob_string_in_comment);
  int rc = g_test_run();
  ts_backend_free(backend);
  return rc;
}
