/* test-replay.c — replay of recorded tuning files: the three real Kernel Tuner cache samples in
 * ../shared (counts, optimum and lookups checked against values read from the files), the
 * synthetic files in tests/data (plain, gzip, interrupted, T4), malformed files that must fail
 * with an error naming the problem, and strategy comparison on a small recorded space.
 *
 * Synthetic data: tests/data/replay-small.json records 22 of the 24 configurations of
 * block_size_x [32,64,128,256] x tile [1,2,4] x use_shared [true,false]; unrecorded are
 * (256,4,True) and (32,1,False); (256,4,False) is InvalidConfig, (32,4,True)
 * CompilationFailedConfig, (64,4,False) RuntimeFailedConfig; (32,2,*) have no "times". The optimum
 * is (128,2,True), median 1.02 ms. replay-small.json.gz is the same file gzip-compressed.
 */
#include "ts-cost-model.h"
#include "ts-cost.h"
#include "ts-tune-replay.h"
#include "ts-tune-strategy.h"

#include <gio/gio.h>
#include <math.h>
#include <string.h>

/* Relative comparison: the file stores ms as doubles; we convert to s. */
#define assert_close(a, b) g_assert_cmpfloat_with_epsilon((a), (b), 1e-12 + 1e-9 * fabs(b))

static char *
shared_sample(const char *name)
{
  const char *dir = g_getenv("TS_SHARED_DIR");
  if (!dir) {
    g_test_skip("TS_SHARED_DIR is not set (tests/meson.build sets it to ../shared)");
    return NULL;
  }
  char *path = g_build_filename(dir, "data", "kernel_tuner_cache_samples", name, NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_autofree char *msg = g_strdup_printf("%s is absent", path);
    g_test_skip(msg);
    g_free(path);
    return NULL;
  }
  return path;
}

static TsTuneReplay *
load_data_file(const char *name)
{
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "data", name, NULL);
  g_autoptr(GError) error = NULL;
  TsTuneReplay *r = ts_tune_replay_load(path, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  return r;
}

static TsSchedPoint *
point(const char *text)
{
  g_autoptr(GError) error = NULL;
  TsSchedPoint *p = ts_sched_point_parse(text, &error);
  g_assert_no_error(error);
  return p;
}

static TsTuneReplayResult
lookup(const TsTuneReplay *r, const char *text)
{
  g_autoptr(TsSchedPoint) p = point(text);
  TsTuneReplayResult res;
  gboolean ok = ts_tune_replay_lookup(r, p, &res);
  g_assert_cmpint(ok, ==, res.status == TS_TUNE_REPLAY_OK);
  return res;
}

/* ---- real Kernel Tuner samples ---- */

static void
test_sample_vector_add(void)
{
  g_autofree char *path = shared_sample("test_cache_file.json");
  if (!path)
    return;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_tune_replay_format(r), ==, TS_TUNE_REPLAY_FORMAT_KERNEL_TUNER);
  g_assert_cmpstr(ts_tune_replay_device(r), ==, "NVIDIA RTX A4000");
  g_assert_cmpstr(ts_tune_replay_kernel(r), ==, "vector_add");
  g_assert_cmpstr(ts_tune_replay_objective(r), ==, "time");
  g_assert_cmpuint(ts_tune_replay_n_recorded(r), ==, 15);
  g_assert_cmpuint(ts_tune_replay_n_valid(r), ==, 15);
  g_assert_cmpuint(ts_tune_replay_n_failed(r), ==, 0);

  const TsSchedSpace *s = ts_tune_replay_space(r);
  g_assert_cmpuint(ts_sched_space_n_knobs(s), ==, 1);
  g_assert_cmpstr(ts_sched_space_knob_name(s, 0), ==, "block_size_x");
  g_assert_cmpuint(ts_sched_space_n_values(s, 0), ==, 15);
  g_assert_cmpint(ts_sched_space_value(s, 0, 14).i, ==, 1024);
  g_assert_cmpuint(ts_sched_space_n_constraints(s), ==, 0);

  /* median of the 7 samples, not the mean in "time" (0.0407 ms, dragged up by warm-up) */
  const TsSchedPoint *best = NULL;
  assert_close(ts_tune_replay_optimum(r, &best), 0.02502400055527687e-3);
  g_assert_cmpint(ts_sched_point_get_int(best, "block_size_x", 0), ==, 896);

  TsTuneReplayResult res = lookup(r, "dict(block_size_x=128)");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_OK);
  assert_close(res.time_s, 0.025472000241279602e-3);
  g_assert_cmpuint(res.n_samples, ==, 7);
  assert_close(res.samples_s[0], 0.1268800050020218e-3);
  assert_close(res.cost_ms, 440.9545585513115 + 0 + 1.091592013835907);
  res = lookup(r, "dict(block_size_x=100)");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_NOT_RECORDED);
  g_assert_true(isnan(res.time_s));
}

static void
test_sample_strategies(void)
{
  g_autofree char *path = shared_sample("strategies_test_cache_file.json");
  if (!path)
    return;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_tune_replay_n_recorded(r), ==, 15);
  g_assert_cmpuint(ts_tune_replay_n_valid(r), ==, 15);
  g_assert_cmpstr(ts_tune_replay_kernel(r), ==, "vector_add");

  /* five knobs in tune_params_keys order; booleans, floats and mixed lists become strings with
   * Python's spelling, as in the cache keys */
  const TsSchedSpace *s = ts_tune_replay_space(r);
  guint64 size = 0;
  g_assert_true(ts_sched_space_size(s, &size));
  g_assert_cmpuint(size, ==, 240);
  static const char *const knobs[] = {"block_size_x", "test_string", "test_single", "test_bool",
                                      "test_mixed"};
  for (guint k = 0; k < G_N_ELEMENTS(knobs); k++)
    g_assert_cmpstr(ts_sched_space_knob_name(s, k), ==, knobs[k]);
  g_assert_cmpint(ts_sched_space_value(s, 2, 0).kind, ==, TS_SCHED_INT);
  g_assert_cmpstr(ts_sched_space_value(s, 3, 0).s, ==, "True");
  g_assert_cmpstr(ts_sched_space_value(s, 3, 1).s, ==, "False");
  static const char *const mixed[] = {"test", "1", "True", "2.45"};
  for (guint j = 0; j < 4; j++)
    g_assert_cmpstr(ts_sched_space_value(s, 4, j).s, ==, mixed[j]);

  const TsSchedPoint *best = NULL;
  assert_close(ts_tune_replay_optimum(r, &best), 0.02502400055527687e-3);
  g_assert_cmpint(ts_sched_point_get_int(best, "block_size_x", 0), ==, 896);
  g_assert_cmpstr(ts_sched_point_get_str(best, "test_mixed", NULL), ==, "2.45");

  TsTuneReplayResult res = lookup(r, "dict(block_size_x=448, test_string=\"alg_2\", "
                                     "test_single=15, test_bool=\"True\", test_mixed=\"2.45\")");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_OK);
  assert_close(res.time_s, 0.027103999629616737e-3);
  assert_close(res.cost_ms, 449.13655519485474 + 1.1196956038475037);
  res = lookup(r, "dict(block_size_x=448, test_string=\"alg_1\", test_single=15, "
                  "test_bool=\"True\", test_mixed=\"2.45\")");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_NOT_RECORDED);
}

static void
test_sample_fp32_clocks(void)
{
  g_autofree char *path = shared_sample("synthetic_fp32_cache_NVIDIA_RTX_A4000.json");
  if (!path)
    return;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load(path, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_tune_replay_kernel(r), ==, "fp32_kernel");
  g_assert_cmpuint(ts_tune_replay_n_recorded(r), ==, 10);
  g_assert_cmpuint(ts_tune_replay_n_valid(r), ==, 10);
  g_assert_cmpuint(ts_sched_space_n_knobs(ts_tune_replay_space(r)), ==, 4);
  const TsSchedPoint *best = NULL;
  assert_close(ts_tune_replay_optimum(r, &best), 77.14503860473633e-3);
  g_assert_cmpint(ts_sched_point_get_int(best, "nvml_gr_clock", 0), ==, 1905);
  TsTuneReplayResult res =
      lookup(r, "dict(block_size_x=1024, nr_outer=64, nr_inner=1024, nvml_gr_clock=405)");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_OK);
  assert_close(res.time_s, 332.5870056152344e-3);
  g_assert_cmpuint(res.n_samples, ==, 10);
  assert_close(res.cost_ms, 3988.419521600008 + 0 + 5038.08306902647);
}

/* ---- synthetic files ---- */

static void
check_small(const TsTuneReplay *r)
{
  g_assert_cmpstr(ts_tune_replay_device(r), ==, "Synthetic GPU");
  g_assert_cmpstr(ts_tune_replay_kernel(r), ==, "toy_kernel");
  g_assert_cmpuint(ts_tune_replay_n_recorded(r), ==, 22);
  g_assert_cmpuint(ts_tune_replay_n_valid(r), ==, 19);
  g_assert_cmpuint(ts_tune_replay_n_failed(r), ==, 3);
  const TsSchedPoint *best = NULL;
  assert_close(ts_tune_replay_optimum(r, &best), 1.02e-3);
  g_autofree char *bt = ts_sched_point_to_string(best);
  g_assert_cmpstr(bt, ==, "dict(block_size_x=128, tile=2, use_shared=\"True\")");

  TsTuneReplayResult res = lookup(r, "dict(block_size_x=64, tile=2, use_shared=\"True\")");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_OK);
  assert_close(res.time_s, 2.04e-3);
  assert_close(res.cost_ms, 409.0 + 0.0 + 12.25);
  g_assert_cmpuint(res.n_samples, ==, 5);
  /* no "times": the recorded time itself */
  res = lookup(r, "dict(block_size_x=32, tile=2, use_shared=\"True\")");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_OK);
  assert_close(res.time_s, 2.5e-3);
  g_assert_cmpuint(res.n_samples, ==, 0);
  g_assert_null(res.samples_s);

  static const struct {
    const char *point;
    TsTuneReplayStatus status;
  } failures[] = {
      {"dict(block_size_x=256, tile=4, use_shared=\"False\")", TS_TUNE_REPLAY_INVALID},
      {"dict(block_size_x=32, tile=4, use_shared=\"True\")", TS_TUNE_REPLAY_COMPILE_ERROR},
      {"dict(block_size_x=64, tile=4, use_shared=\"False\")", TS_TUNE_REPLAY_RUNTIME_ERROR},
      {"dict(block_size_x=256, tile=4, use_shared=\"True\")", TS_TUNE_REPLAY_NOT_RECORDED},
      {"dict(block_size_x=32, tile=1, use_shared=\"False\")", TS_TUNE_REPLAY_NOT_RECORDED},
      /* outside the space, and a point lacking a knob */
      {"dict(block_size_x=48, tile=1, use_shared=\"True\")", TS_TUNE_REPLAY_NOT_RECORDED},
      {"dict(block_size_x=64, tile=1)", TS_TUNE_REPLAY_NOT_RECORDED},
  };
  for (guint i = 0; i < G_N_ELEMENTS(failures); i++) {
    res = lookup(r, failures[i].point);
    g_assert_cmpstr(ts_tune_replay_status_name(res.status), ==,
                    ts_tune_replay_status_name(failures[i].status));
    g_assert_true(isnan(res.time_s));
  }
  /* a recorded failure still costs what it cost */
  res = lookup(r, failures[0].point);
  assert_close(res.cost_ms, 424.0 + 2.5 + 16.0);
  g_assert_cmpfloat(lookup(r, failures[3].point).cost_ms, ==, 0.0);
}

static void
test_small_plain(void)
{
  g_autoptr(TsTuneReplay) r = load_data_file("replay-small.json");
  check_small(r);
  /* every recorded point looks itself up */
  for (guint i = 0; i < ts_tune_replay_n_recorded(r); i++) {
    TsTuneReplayResult res;
    ts_tune_replay_lookup(r, ts_tune_replay_recorded_point(r, i), &res);
    g_assert_cmpint(res.status, !=, TS_TUNE_REPLAY_NOT_RECORDED);
  }
}

static void
test_small_gzip(void)
{
  g_autoptr(TsTuneReplay) plain = load_data_file("replay-small.json");
  g_autoptr(TsTuneReplay) gz = load_data_file("replay-small.json.gz");
  check_small(gz);
  g_autofree char *a = ts_sched_space_to_string(ts_tune_replay_space(plain));
  g_autofree char *b = ts_sched_space_to_string(ts_tune_replay_space(gz));
  g_assert_cmpstr(a, ==, b);
  g_assert_cmpuint(ts_tune_replay_n_recorded(gz), ==, ts_tune_replay_n_recorded(plain));
  for (guint i = 0; i < ts_tune_replay_n_recorded(plain); i++) {
    const TsSchedPoint *p = ts_tune_replay_recorded_point(plain, i);
    g_assert_true(ts_sched_point_equal(p, ts_tune_replay_recorded_point(gz, i)));
    TsTuneReplayResult x, y;
    ts_tune_replay_lookup(plain, p, &x);
    ts_tune_replay_lookup(gz, p, &y);
    g_assert_cmpint(x.status, ==, y.status);
    g_assert_cmpuint(x.n_samples, ==, y.n_samples);
    g_assert_true(x.time_s == y.time_s || (isnan(x.time_s) && isnan(y.time_s)));
    g_assert_cmpfloat(x.cost_ms, ==, y.cost_ms);
  }
}

/* Kernel Tuner writes the closing braces only when tuning ends; an interrupted run is read as
 * far as it got. */
static void
test_interrupted_cache(void)
{
  static const char text[] =
      "{\"device_name\": \"X\", \"kernel_name\": \"k\", \"tune_params_keys\": [\"x\"],\n"
      "\"tune_params\": {\"x\": [1, 2, 3]},\n\"cache\": {\n"
      "\"1\": {\"x\": 1, \"time\": 2.0, \"compile_time\": 1, \"verification_time\": 0, "
      "\"benchmark_time\": 1},\n"
      "\"2\": {\"x\": 2, \"time\": 1.0, \"compile_time\": 1, \"verification_time\": 0, "
      "\"benchmark_time\": 1},\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load_data(text, strlen(text), "partial", &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_tune_replay_n_recorded(r), ==, 2);
  assert_close(ts_tune_replay_optimum(r, NULL), 1.0e-3);
}

static void
test_t4(void)
{
  g_autoptr(TsTuneReplay) r = load_data_file("replay-t4.json");
  g_assert_cmpint(ts_tune_replay_format(r), ==, TS_TUNE_REPLAY_FORMAT_T4);
  g_assert_null(ts_tune_replay_device(r));
  g_assert_cmpstr(ts_tune_replay_objective(r), ==, "time");
  g_assert_cmpuint(ts_tune_replay_n_recorded(r), ==, 5);
  g_assert_cmpuint(ts_tune_replay_n_valid(r), ==, 3);
  g_assert_cmpuint(ts_tune_replay_n_failed(r), ==, 2);
  /* the space from the configurations: first-seen knob order, integers ascending */
  g_autofree char *space = ts_sched_space_to_string(ts_tune_replay_space(r));
  g_assert_cmpstr(space, ==, "dict(block_size_x=[32,64,128], algo=[\"a\",\"b\"])");

  const TsSchedPoint *best = NULL;
  assert_close(ts_tune_replay_optimum(r, &best), 0.3e-3);
  g_assert_cmpint(ts_sched_point_get_int(best, "block_size_x", 0), ==, 64);

  TsTuneReplayResult res = lookup(r, "dict(block_size_x=128, algo=\"a\")");
  g_assert_cmpint(res.status, ==, TS_TUNE_REPLAY_OK);
  assert_close(res.time_s, 0.5e-3); /* median of times.runtimes */
  g_assert_cmpuint(res.n_samples, ==, 3);
  assert_close(res.cost_ms, 106.0);
  res = lookup(r, "dict(block_size_x=64, algo=\"a\")");
  assert_close(res.cost_ms, 94.0); /* "compilation_time", the schema's spelling */
  res = lookup(r, "dict(block_size_x=128, algo=\"b\")");
  assert_close(res.time_s, 0.8e-3); /* unit "s" */
  g_assert_cmpint(lookup(r, "dict(block_size_x=32, algo=\"b\")").status, ==,
                  TS_TUNE_REPLAY_COMPILE_ERROR);
  g_assert_cmpint(lookup(r, "dict(block_size_x=64, algo=\"b\")").status, ==,
                  TS_TUNE_REPLAY_INVALID);
  g_assert_cmpint(lookup(r, "dict(block_size_x=32, algo=\"a\")").status, ==,
                  TS_TUNE_REPLAY_NOT_RECORDED);
}

/* ---- malformed files ---- */

static void
expect_error(const char *text, gsize len, int code, const char *const *needles)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load_data(text, len, "bad.json", &error);
  g_assert_null(r);
  g_assert_error(error, TS_TUNE_REPLAY_ERROR, code);
  g_test_message("%s", error->message);
  g_assert_true(g_str_has_prefix(error->message, "bad.json: "));
  for (guint i = 0; needles[i]; i++)
    if (!strstr(error->message, needles[i]))
      g_error("message '%s' lacks '%s'", error->message, needles[i]);
}

#define KT_HEAD                                                                                    \
  "{\"tune_params_keys\": [\"x\", \"y\"], \"tune_params\": {\"x\": [1, 2], \"y\": [\"a\", "        \
  "\"b\"]}, "

static void
test_malformed(void)
{
  static const struct {
    const char *text;
    int code;
    const char *needles[3];
  } cases[] = {
      {"this is not JSON", TS_TUNE_REPLAY_ERROR_PARSE, {"not JSON", NULL}},
      {"", TS_TUNE_REPLAY_ERROR_PARSE, {"not JSON", NULL}},
      {"[1, 2]", TS_TUNE_REPLAY_ERROR_FORMAT, {"not a JSON object", NULL}},
      {"{\"foo\": 1}", TS_TUNE_REPLAY_ERROR_FORMAT, {"neither", NULL}},
      {"{\"cache\": {}}", TS_TUNE_REPLAY_ERROR_FORMAT, {"missing \"tune_params\"", NULL}},
      {"{\"tune_params\": {\"x\": [1]}}", TS_TUNE_REPLAY_ERROR_FORMAT, {"missing \"cache\"", NULL}},
      {"{\"tune_params\": {\"x\": []}, \"cache\": {}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"'x' has no values", NULL}},
      {"{\"tune_params\": {\"x\": [1, 1]}, \"cache\": {}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"'x' lists 1 twice", NULL}},
      {"{\"tune_params_keys\": [\"x\", \"z\"], \"tune_params\": {\"x\": [1]}, \"cache\": {}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"no list of values for 'z'", NULL}},
      {KT_HEAD "\"cache\": {\"3,a\": {\"x\": 3, \"y\": \"a\", \"time\": 1.0}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"cache entry '3,a'", "x = 3 is not in tune_params (1, 2)", NULL}},
      {KT_HEAD "\"cache\": {\"1,c\": {\"time\": 1.0}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"cache entry '1,c'", "y = c is not in tune_params (a, b)", NULL}},
      {KT_HEAD "\"cache\": {\"1\": {\"time\": 1.0}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"cache entry '1' has no value for 'x'", NULL}},
      {KT_HEAD "\"cache\": {\"1,a\": {\"x\": 1, \"y\": \"a\", \"time\": \"WeirdConfig\"}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"cache entry '1,a'", "unknown error marker \"WeirdConfig\"", NULL}},
      {KT_HEAD "\"cache\": {\"1,a\": {\"x\": 1, \"y\": \"a\"}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"cache entry '1,a' has no \"time\"", NULL}},
      {KT_HEAD
       "\"cache\": {\"1,a\": {\"x\": 1, \"y\": \"a\", \"time\": 1, \"times\": [1, \"x\"]}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"\"times\"[1]", NULL}},
      {KT_HEAD "\"cache\": {\"1,a\": {\"x\": 1, \"y\": \"a\", \"time\": 1}, "
               "\"1, a\": {\"x\": 1, \"y\": \"a\", \"time\": 2}}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"records the same configuration as cache entry '1,a'", NULL}},
      {"{\"schema_version\": \"1.0.0\", \"results\": {}}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"\"results\" is not a list", NULL}},
      {"{\"schema_version\": \"1.0.0\", \"results\": [{\"configuration\": {\"x\": 1}, "
       "\"invalidity\": \"broken\"}]}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"result 0", "unknown invalidity \"broken\"", NULL}},
      {"{\"schema_version\": \"1.0.0\", \"results\": [{\"configuration\": {\"x\": 1}, "
       "\"invalidity\": \"correct\", \"measurements\": []}]}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"result 0 is recorded as valid but has no usable time", NULL}},
      {"{\"schema_version\": \"1.0.0\", \"results\": [{\"configuration\": {\"x\": 1}, "
       "\"invalidity\": \"correct\", \"measurements\": [{\"name\": \"time\", \"value\": 1}]}, "
       "{\"configuration\": {\"y\": 1}, \"invalidity\": \"correct\"}]}",
       TS_TUNE_REPLAY_ERROR_FORMAT,
       {"result 0 has no value for 'y'", NULL}},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    expect_error(cases[i].text, strlen(cases[i].text), cases[i].code, cases[i].needles);
}

static void
test_truncated_gzip(void)
{
  g_autofree char *path = g_test_build_filename(G_TEST_DIST, "data", "replay-small.json.gz", NULL);
  g_autofree char *data = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &data, &len, NULL));
  static const char *const needles[] = {"truncated or corrupt gzip", NULL};
  expect_error(data, len / 2, TS_TUNE_REPLAY_ERROR_IO, needles);
  /* a damaged byte in the deflate stream or the CRC is caught too */
  data[len - 6] ^= 0x55;
  expect_error(data, len, TS_TUNE_REPLAY_ERROR_IO, needles);
}

static void
test_missing_file(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load("/nonexistent/replay.json", &error);
  g_assert_null(r);
  g_assert_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "/nonexistent/replay.json"));
}

static void
test_null_accepted(void)
{
  ts_tune_replay_free(NULL);
  ts_tune_replay_comparison_free(NULL);
  g_assert_cmpstr(ts_tune_replay_status_name(TS_TUNE_REPLAY_NOT_RECORDED), ==, "not_recorded");
  g_assert_cmpstr(ts_tune_replay_status_name((TsTuneReplayStatus)99), ==, "unknown");
}

/* ---- comparison ---- */

static const char *const both[] = {"exhaustive", "random", NULL};

static void
test_compare_exhaustive_reaches_optimum(void)
{
  g_autoptr(TsTuneReplay) r = load_data_file("replay-small.json");
  g_autoptr(GError) error = NULL;
  /* 22 counted evaluations = every recorded configuration: both strategies see all of them */
  g_autoptr(TsTuneReplayComparison) c =
      ts_tune_replay_compare(r, both, ts_tune_replay_n_recorded(r), 3, 7, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_tune_replay_comparison_n_scores(c), ==, 2);
  for (guint i = 0; i < 2; i++) {
    const TsTuneReplayScore *s = ts_tune_replay_comparison_score(c, i);
    g_assert_cmpstr(s->strategy, ==, both[i]);
    g_assert_cmpuint(s->repeats, ==, 3);
    g_assert_cmpfloat(s->mean_fraction, ==, 1.0);
    g_assert_cmpfloat(s->min_fraction, ==, 1.0);
    g_assert_cmpuint(s->n_reached, ==, 3);
    g_assert_cmpfloat(s->mean_evals_to_95, >=, 1.0);
    g_assert_cmpfloat(s->mean_evals_to_95, <=, 22.0);
    g_assert_cmpfloat(s->mean_evals, ==, 22.0);
  }
  g_autofree char *table = ts_tune_replay_comparison_to_string(c);
  g_test_message("%s", table);
  g_assert_nonnull(strstr(table, "toy_kernel"));
  g_assert_nonnull(strstr(table, "exhaustive"));
  g_assert_nonnull(strstr(table, "3/3"));

  /* a larger budget than there is to evaluate: the strategies run out, nothing breaks */
  g_autoptr(TsTuneReplayComparison) big = ts_tune_replay_compare(r, both, 1000, 1, 1, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(ts_tune_replay_comparison_score(big, 0)->mean_evals, ==, 22.0);
  g_assert_cmpfloat(ts_tune_replay_comparison_score(big, 0)->mean_fraction, ==, 1.0);
}

/* A time budget charges each evaluation its recorded compile + benchmark time (each entry of
 * the small file costs about 400 ms): 1000 ms buys three evaluations, the third crossing it. */
static void
test_compare_time_budget(void)
{
  g_autoptr(TsTuneReplay) r = load_data_file("replay-small.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplayComparison) c =
    ts_tune_replay_compare_timed(r, both, 0, 1000.0, 3, 7, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < 2; i++) {
    const TsTuneReplayScore *x = ts_tune_replay_comparison_score(c, i);
    g_assert_cmpfloat(x->mean_cost_ms, >=, 1000.0);
    g_assert_cmpfloat(x->mean_evals, >=, 2.0);
    g_assert_cmpfloat(x->mean_evals, <=, 3.0);
  }
}

static void
test_compare_deterministic(void)
{
  g_autoptr(TsTuneReplay) r = load_data_file("replay-small.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplayComparison) a = ts_tune_replay_compare(r, both, 4, 5, 42, &error);
  g_assert_no_error(error);
  g_autoptr(TsTuneReplayComparison) b = ts_tune_replay_compare(r, both, 4, 5, 42, &error);
  g_assert_no_error(error);
  for (guint i = 0; i < 2; i++) {
    const TsTuneReplayScore *x = ts_tune_replay_comparison_score(a, i);
    const TsTuneReplayScore *y = ts_tune_replay_comparison_score(b, i);
    g_assert_cmpfloat(x->mean_fraction, ==, y->mean_fraction);
    g_assert_cmpfloat(x->min_fraction, ==, y->min_fraction);
    g_assert_cmpuint(x->n_reached, ==, y->n_reached);
    g_assert_true(x->mean_evals_to_95 == y->mean_evals_to_95 ||
                  (isnan(x->mean_evals_to_95) && isnan(y->mean_evals_to_95)));
    g_assert_cmpfloat(x->mean_cost_ms, ==, y->mean_cost_ms);
    /* a fraction of the optimum, and never more than the budget */
    g_assert_cmpfloat(x->mean_fraction, >, 0.0);
    g_assert_cmpfloat(x->mean_fraction, <=, 1.0);
    g_assert_cmpfloat(x->mean_evals, <=, 4.0);
    g_assert_cmpuint(x->n_reached, <=, 5);
  }
  g_autofree char *ta = ts_tune_replay_comparison_to_string(a);
  g_autofree char *tb = ts_tune_replay_comparison_to_string(b);
  g_assert_cmpstr(ta, ==, tb);
}

static void
test_compare_errors(void)
{
  g_autoptr(TsTuneReplay) r = load_data_file("replay-small.json");
  g_autoptr(GError) error = NULL;
  static const char *const bogus[] = {"no-such-strategy", NULL};
  g_assert_null(ts_tune_replay_compare(r, bogus, 4, 1, 1, &error));
  g_assert_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_UNKNOWN_STRATEGY);
  g_clear_error(&error);

  /* every registered strategy when none is named */
  g_autoptr(TsTuneReplayComparison) all = ts_tune_replay_compare(r, NULL, 2, 1, 1, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_tune_replay_comparison_n_scores(all), ==,
                   g_strv_length((char **)ts_tune_strategy_names()));

  static const char only_failures[] =
      "{\"tune_params\": {\"x\": [1, 2]}, \"cache\": {\"1\": {\"x\": 1, \"time\": "
      "\"InvalidConfig\"}}}";
  g_autoptr(TsTuneReplay) f =
      ts_tune_replay_load_data(only_failures, strlen(only_failures), "failures", &error);
  g_assert_no_error(error);
  g_assert_true(isnan(ts_tune_replay_optimum(f, NULL)));
  g_assert_null(ts_tune_replay_compare(f, both, 4, 1, 1, &error));
  g_assert_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_EMPTY);
}

/* The table on the real samples, for the log (and the report). */
static void
test_compare_samples(void)
{
  static const char *const files[] = {"test_cache_file.json", "strategies_test_cache_file.json",
                                      "synthetic_fp32_cache_NVIDIA_RTX_A4000.json"};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *path = shared_sample(files[i]);
    if (!path)
      return;
    g_autoptr(GError) error = NULL;
    g_autoptr(TsTuneReplay) r = ts_tune_replay_load(path, &error);
    g_assert_no_error(error);
    g_autoptr(TsTuneReplayComparison) c = ts_tune_replay_compare(r, NULL, 5, 20, 1, &error);
    g_assert_no_error(error);
    g_autofree char *table = ts_tune_replay_comparison_to_string(c);
    g_test_message("%s", table);
    /* exhaustive with a budget of every recorded configuration finds the optimum */
    static const char *const ex[] = {"exhaustive", NULL};
    g_autoptr(TsTuneReplayComparison) full =
        ts_tune_replay_compare(r, ex, ts_tune_replay_n_recorded(r), 1, 1, &error);
    g_assert_no_error(error);
    g_assert_cmpfloat(ts_tune_replay_comparison_score(full, 0)->mean_fraction, ==, 1.0);
  }
}

/* A recorded file nested 100,000 deep is refused before the parser recurses into it. */
static void
test_deep_json(void)
{
  g_autoptr(GString) deep = g_string_new("{\"cache\": ");
  for (int i = 0; i < 100000; i++)
    g_string_append_c(deep, '[');
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load_data(deep->str, deep->len, "deep.json", &error);
  g_assert_null(r);
  g_assert_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_PARSE);
  g_assert_nonnull(strstr(error->message, "deep.json: JSON nested more than 512 deep"));
}

/* A gzip bomb is stopped while it inflates (2 MB that unpack to 1 GiB used to be inflated
 * whole, then reported as empty). */
static void
test_gzip_bomb(void)
{
  g_autoptr(GZlibCompressor) z = g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, 9);
  g_autoptr(GOutputStream) mem = g_memory_output_stream_new_resizable();
  g_autoptr(GOutputStream) out = g_converter_output_stream_new(mem, G_CONVERTER(z));
  g_autofree guint8 *zeros = g_malloc0(1 << 20);
  for (int i = 0; i < 300; i++)
    g_assert_true(g_output_stream_write_all(out, zeros, 1 << 20, NULL, NULL, NULL));
  g_assert_true(g_output_stream_close(out, NULL, NULL));
  g_autoptr(GBytes) bomb = g_memory_output_stream_steal_as_bytes(G_MEMORY_OUTPUT_STREAM(mem));
  g_assert_cmpuint(g_bytes_get_size(bomb), <, 1 << 20);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load_data(g_bytes_get_data(bomb, NULL),
                                                       g_bytes_get_size(bomb), "bomb.json.gz",
                                                       &error);
  g_assert_null(r);
  g_assert_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_IO);
  g_assert_nonnull(strstr(error->message, "bomb.json.gz: unpacks to more than 256 MiB"));
}

/* Other devices' recordings as the model strategy's prior: a recording of the very same
 * space teaches the exact ranking, so the model proposes the optimum region at once (without
 * it the model needs ~10 of 22); a file of another kernel is refused naming the knob. */
static void
test_prior(void)
{
  g_autoptr(TsTuneReplay) replay = load_data_file("replay-small.json");
  g_autoptr(GPtrArray) priors = g_ptr_array_new_with_free_func((GDestroyNotify)ts_tune_replay_free);
  g_ptr_array_add(priors, load_data_file("replay-small.json.gz"));
  g_autoptr(GError) error = NULL;
  g_autoptr(TsCostTarget) target = NULL;
  g_autoptr(TsCostModel) prior = ts_tune_replay_train_prior(replay, priors, &target, &error);
  g_assert_no_error(error);
  g_assert_nonnull(prior);
  g_assert_nonnull(target);
  /* The model strategy ranks by the prior; the evolutionary one starts from its best. */
  const char *strategies[] = {"model", "evolutionary", NULL};
  g_autoptr(TsTuneReplayComparison) without =
    ts_tune_replay_compare(replay, strategies, 22, 10, 1, &error);
  g_assert_no_error(error);
  ts_tune_replay_set_context(replay, NULL, target, prior);
  g_autoptr(TsTuneReplayComparison) with =
    ts_tune_replay_compare(replay, strategies, 22, 10, 1, &error);
  g_assert_no_error(error);
  for (guint i = 0; strategies[i]; i++) {
    const TsTuneReplayScore *a = ts_tune_replay_comparison_score(without, i);
    const TsTuneReplayScore *b = ts_tune_replay_comparison_score(with, i);
    g_test_message("%s: capped evaluations to 95%%: %.1f without the prior, %.1f with it",
                   strategies[i], a->capped_evals_to_95, b->capped_evals_to_95);
    g_assert_cmpuint(b->n_reached, ==, 10);
    g_assert_cmpfloat(b->capped_evals_to_95, <=, 2.0);
    g_assert_cmpfloat(b->capped_evals_to_95, <, a->capped_evals_to_95 / 2);
  }
  /* With the recording's best configurations as seeds, the first evaluation is its optimum. */
  g_autoptr(GPtrArray) seeds = ts_tune_replay_prior_seeds(priors, 64);
  g_assert_cmpuint(seeds->len, ==, ts_tune_replay_n_valid(priors->pdata[0]));
  ts_tune_replay_set_seeds(replay, seeds);
  g_autoptr(TsTuneReplayComparison) seeded =
    ts_tune_replay_compare(replay, strategies, 22, 10, 1, &error);
  g_assert_no_error(error);
  for (guint i = 0; strategies[i]; i++)
    g_assert_cmpfloat(ts_tune_replay_comparison_score(seeded, i)->capped_evals_to_95, ==, 1.0);

  g_autoptr(GPtrArray) foreign = g_ptr_array_new_with_free_func((GDestroyNotify)ts_tune_replay_free);
  g_ptr_array_add(foreign, load_data_file("replay-t4.json"));
  g_autoptr(TsCostTarget) t2 = NULL;
  g_assert_null(ts_tune_replay_train_prior(replay, foreign, &t2, &error));
  g_assert_error(error, TS_TUNE_REPLAY_ERROR, TS_TUNE_REPLAY_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "no knob 'tile'"));
  g_assert_null(t2);
}

static TsTuneReplay *
recording(const TsSchedSpace *space, const char *device, const double *times, guint n)
{
  TsTuneReplay *r = ts_tune_replay_new(space, device, device, "k");
  for (guint i = 0; i < n; i++) {
    if (isnan(times[i]))
      continue; /* not recorded */
    g_autoptr(TsSchedPoint) p = ts_sched_point_new();
    ts_sched_point_set_int(p, "x", i + 1);
    g_autoptr(GError) error = NULL;
    g_assert_true(ts_tune_replay_add(r, p, times[i] < 0 ? TS_TUNE_REPLAY_RUNTIME_ERROR
                                                        : TS_TUNE_REPLAY_OK,
                                     fabs(times[i]), 1.0, &error));
    g_assert_no_error(error);
  }
  return r;
}

/* The seeds of several priors: each file's best, then each one's second, ..., each point once,
 * never one that failed everywhere it was recorded. */
static void
test_prior_seeds(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse("dict(x=[1,2,3,4,5])", &error);
  g_assert_no_error(error);
  const double a[] = {3, 1, 2, -1, NAN}, b[] = {5, 2, 1, NAN, 4};
  g_autoptr(GPtrArray) priors = g_ptr_array_new_with_free_func((GDestroyNotify)ts_tune_replay_free);
  g_ptr_array_add(priors, recording(space, "A", a, G_N_ELEMENTS(a)));
  g_ptr_array_add(priors, recording(space, "B", b, G_N_ELEMENTS(b)));
  g_autoptr(GPtrArray) seeds = ts_tune_replay_prior_seeds(priors, 10);
  /* A: 2 3 1; B: 3 2 5 1 -> 2 3 (3) (2) 1 5 (1) */
  const gint64 want[] = {2, 3, 1, 5};
  g_assert_cmpuint(seeds->len, ==, G_N_ELEMENTS(want));
  for (guint i = 0; i < G_N_ELEMENTS(want); i++)
    g_assert_cmpint(ts_sched_point_get_int(seeds->pdata[i], "x", -1), ==, want[i]);
  g_autoptr(GPtrArray) two = ts_tune_replay_prior_seeds(priors, 2);
  g_assert_cmpuint(two->len, ==, 2);
  g_autoptr(GPtrArray) none = g_ptr_array_new();
  g_autoptr(GPtrArray) empty = ts_tune_replay_prior_seeds(none, 10);
  g_assert_cmpuint(empty->len, ==, 0);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/replay/deep-json", test_deep_json);
  g_test_add_func("/replay/gzip-bomb", test_gzip_bomb);
  g_test_add_func("/replay/sample/vector-add", test_sample_vector_add);
  g_test_add_func("/replay/sample/strategies", test_sample_strategies);
  g_test_add_func("/replay/sample/fp32-clocks", test_sample_fp32_clocks);
  g_test_add_func("/replay/small/plain", test_small_plain);
  g_test_add_func("/replay/small/gzip", test_small_gzip);
  g_test_add_func("/replay/small/interrupted", test_interrupted_cache);
  g_test_add_func("/replay/t4", test_t4);
  g_test_add_func("/replay/malformed/files", test_malformed);
  g_test_add_func("/replay/malformed/truncated-gzip", test_truncated_gzip);
  g_test_add_func("/replay/malformed/missing-file", test_missing_file);
  g_test_add_func("/replay/null", test_null_accepted);
  g_test_add_func("/replay/compare/exhaustive-optimum", test_compare_exhaustive_reaches_optimum);
  g_test_add_func("/replay/compare/deterministic", test_compare_deterministic);
  g_test_add_func("/replay/compare/time-budget", test_compare_time_budget);
  g_test_add_func("/replay/compare/errors", test_compare_errors);
  g_test_add_func("/replay/compare/samples", test_compare_samples);
  g_test_add_func("/replay/prior", test_prior);
  g_test_add_func("/replay/prior-seeds", test_prior_seeds);
  return g_test_run();
}
