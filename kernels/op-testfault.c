/* op-testfault.c — test_fault: a test-only op whose schedule knob `mode` picks a way for the
 * candidate to fail, so the tuner's isolation and verification are tested on real crashes,
 * hangs, wrong answers and writes out of bounds (which leave the backend lost; "oob" comes
 * first in the space so the candidate after it shows the worker was replaced). Semantics when it works: Z[N] = X[N] + Y[N]. Visible only when the
 * environment has TESSERA_TEST_OPS=1; it writes its C directly rather than through Tile IR. */
#include "ts-op-private.h"

#include "ts-numerics.h"

static double
fault_flops(const TsShape *s)
{
  return (double)ts_shape_get(s, "N");
}

static double
fault_bytes(const TsShape *s, double elem)
{
  return 3.0 * elem * ts_shape_get(s, "N");
}

static char *
fault_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  ts_ref_saxpy(ts_op_instance_dtype(inst)->storage, 1.0, in[0], in[1], out,
               ts_shape_get(ts_op_instance_shape(inst), "N"));
  return NULL;
}

static char *
fault_source(const TsOpInstance *inst, const TsSchedPoint *point, const char *entry,
             GError **error)
{
  if (ts_op_instance_dtype(inst)->storage != TS_DTYPE_F32) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE, "test_fault: f32 only");
    return NULL;
  }
  const char *mode = ts_sched_point_get_str(point, "mode", "ok");
  const char *body = NULL;
  if (g_str_equal(mode, "ok"))
    body = "for (int64_t i = 0; i < n; i++) z[i] = x[i] + y[i];";
  else if (g_str_equal(mode, "slow")) /* 16 passes: slower than "ok" beyond any machine noise */
    body = "for (int r = 0; r < 16; r++) for (int64_t i = 0; i < n; i++) "
           "((volatile float *)z)[i] = x[i] + y[i];";
  else if (g_str_equal(mode, "oob")) /* 64 bytes past the end of Z: the backend is lost */
    body = "for (int64_t i = 0; i < n + 16; i++) z[i] = x[i % n] + y[i % n];";
  else if (g_str_equal(mode, "wrong"))
    body = "for (int64_t i = 0; i < n; i++) z[i] = x[i] - y[i];";
  else if (g_str_equal(mode, "segv"))
    body = "*(volatile int *)(uintptr_t)8 = 1;";
  else if (g_str_equal(mode, "abort"))
    body = "abort();";
  else if (g_str_equal(mode, "hang"))
    body = "for (volatile int spin = 1; spin;) {}";
  else if (g_str_equal(mode, "nocompile"))
    body = "this does not compile;";
  if (body == NULL) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE, "test_fault: unknown mode '%s'", mode);
    return NULL;
  }
  return g_strdup_printf("#include <stdint.h>\n#include <stdlib.h>\n"
                         "__attribute__((visibility(\"default\")))\n"
                         "void %s(void *const *bufs, const int64_t *ints, const double *floats);\n"
                         "void %s(void *const *bufs, const int64_t *ints, const double *floats)\n"
                         "{\n  const float *x = bufs[0], *y = bufs[1];\n  float *z = bufs[2];\n"
                         "  const int64_t n = ints[0];\n  (void)floats; (void)x; (void)y; (void)z;"
                         " (void)n;\n  %s\n}\n",
                         entry, entry, body);
}

const TsOpDef ts__op_test_fault = {
  .name = "test_fault",
  .summary = "test only: Z = X + Y, or a crash, hang or wrong answer chosen by the mode knob",
  .hidden = TRUE,
  .n_inputs = 2,
  .inputs = {{"X", "\"N\"", -1.0, 1.0}, {"Y", "\"N\"", -1.0, 1.0}},
  .output = {"Z", "\"N\"", 0, 0},
  .dims = "N",
  .cpu_space = "dict(mode=[\"oob\", \"ok\", \"slow\", \"wrong\", \"segv\", \"abort\", \"hang\", \"nocompile\"])",
  .cpu_default = "dict(mode=\"ok\")",
  .flops = fault_flops,
  .bytes = fault_bytes,
  .reference = fault_reference,
  .emit_cpu_source = fault_source,
};
