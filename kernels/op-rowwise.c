/* op-rowwise.c — the memory-bound ops: saxpy, reduce_sum, softmax_safe, layernorm_safe,
 * rmsnorm_safe. All of them stream rows (or one long vector) through the vector row
 * primitives; the schedule chooses the rows per work item (block m, or block n for saxpy), the
 * vector width and the threads. Arithmetic is f32 whatever the storage dtype. */
#include "ts-op-private.h"

#include "ts-numerics.h"

#define DIM(s, n) ((double)ts_shape_get((s), (n)))
#define KNOB(name) ts_sched_point_get_int(point, name, -1)

static gboolean
check_knobs(const char *op, gint64 block, gint64 v, gint64 t, GError **error)
{
  if (block <= 0 || v <= 0 || t <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs positive block, vector and threads knobs", op);
    return FALSE;
  }
  return TRUE;
}

/* for i0 in range(0, M, BM) parallel: for i in range(i0, min(i0 + BM, M)): <row body> */
static TsTileNode *
row_loop(TsTileKernel *k, const TsSchedPoint *point)
{
  ts_tile_kernel_define(k, "BM", KNOB("BM"));
  ts_tile_kernel_define(k, "VEC", KNOB("vector"));
  TsTileNode *par = ts_tile_parallel(k->body, KNOB("threads"));
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", "M", "BM", TS_FOR_PARALLEL);
  return ts_tile_for(i0, "i", "i0", "min(i0 + BM, M)", "1", TS_FOR_SERIAL);
}

/* ---- saxpy: Z = alpha * X + Y ---- */

static double
saxpy_flops(const TsShape *s)
{
  return 2.0 * DIM(s, "N");
}

static double
saxpy_bytes(const TsShape *s, double elem)
{
  return 3.0 * elem * DIM(s, "N");
}

static void
saxpy_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  ts_ref_saxpy(ts_op_instance_dtype(inst)->storage, ts__op_instance_float(inst, 0), in[0], in[1],
               out, ts_shape_get(ts_op_instance_shape(inst), "N"));
}

static gboolean
saxpy_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                GError **error)
{
  if (!check_knobs("saxpy", KNOB("BN"), KNOB("vector"), KNOB("threads"), error))
    return FALSE;
  ts_tile_kernel_define(k, "BN", KNOB("BN"));
  ts_tile_kernel_define(k, "VEC", KNOB("vector"));
  TsTileNode *par = ts_tile_parallel(k->body, KNOB("threads"));
  TsTileNode *i0 = ts_tile_for(par, "i0", "0", "N", "BN", TS_FOR_PARALLEL);
  TsTileNode *map = ts_tile_map(i0, "z", "alpha * x + y", "min(BN, N - i0)");
  ts_tile_node_add_view(map, "x", "X", "i0");
  ts_tile_node_add_view(map, "y", "Y", "i0");
  ts_tile_node_add_view(map, "z", "Z", "i0");
  return TRUE;
}

const TsOpDef ts__op_saxpy = {
  .name = "saxpy",
  .summary = "Z[N] = alpha * X[N] + Y[N]",
  .n_inputs = 2,
  .inputs = {{"X", "\"N\"", -1.0, 1.0}, {"Y", "\"N\"", -1.0, 1.0}},
  .output = {"Z", "\"N\"", 0, 0},
  .dims = "N",
  .n_floats = 1,
  .float_names = {"alpha"},
  .float_values = {1.5},
  .cpu_space = "block(n=[4096,16384,65536]).vector([4,8]).threads([1,2])",
  .cpu_default = "block(n=16384).vector(8).threads(2)",
  .flops = saxpy_flops,
  .bytes = saxpy_bytes,
  .reference = saxpy_reference,
  .lower_cpu = saxpy_lower_cpu,
};

/* ---- reduce_sum: Y[M] = sum over N of X[M,N] ---- */

static double
rows_flops(const TsShape *s)
{
  return DIM(s, "M") * DIM(s, "N");
}

static double
reduce_bytes(const TsShape *s, double elem)
{
  return elem * (DIM(s, "M") * DIM(s, "N") + DIM(s, "M"));
}

static void
reduce_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_reduce_sum(ts_op_instance_dtype(inst)->storage, in[0], out, ts_shape_get(s, "M"),
                    ts_shape_get(s, "N"));
}

static gboolean
reduce_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                 GError **error)
{
  if (!check_knobs("reduce_sum", KNOB("BM"), KNOB("vector"), KNOB("threads"), error))
    return FALSE;
  TsTileNode *row = row_loop(k, point);
  TsTileNode *r = ts_tile_reduce(row, "s", "sum", "x", "N");
  ts_tile_node_add_view(r, "x", "X", "i * N");
  TsTileNode *st = ts_tile_map(row, "y", "s", "1");
  ts_tile_node_add_view(st, "y", "Y", "i");
  return TRUE;
}

#define ROW_SPACE "block(m=[1,4,16]).vector([4,8]).threads([1,2])"
#define ROW_DEFAULT "block(m=4).vector(8).threads(2)"

const TsOpDef ts__op_reduce_sum = {
  .name = "reduce_sum",
  .summary = "Y[M] = sum_N X[M,N] (f32 accumulation)",
  .n_inputs = 1,
  .inputs = {{"X", "\"M\",\"N\"", -1.0, 1.0}},
  .output = {"Y", "\"M\"", 0, 0},
  .dims = "M,N",
  .cpu_space = ROW_SPACE,
  .cpu_default = ROW_DEFAULT,
  .flops = rows_flops,
  .bytes = reduce_bytes,
  .reference = reduce_reference,
  .lower_cpu = reduce_lower_cpu,
};

/* ---- softmax_safe: Y = exp(X - rowmax) / rowsum ---- */

static double
softmax_flops(const TsShape *s)
{
  return 5.0 * DIM(s, "M") * DIM(s, "N"); /* max, sub, exp, sum, scale */
}

static double
rows_bytes(const TsShape *s, double elem)
{
  return 2.0 * elem * DIM(s, "M") * DIM(s, "N");
}

static void
softmax_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_softmax(ts_op_instance_dtype(inst)->storage, in[0], out, ts_shape_get(s, "M"),
                 ts_shape_get(s, "N"));
}

static gboolean
softmax_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                  GError **error)
{
  if (!check_knobs("softmax_safe", KNOB("BM"), KNOB("vector"), KNOB("threads"), error))
    return FALSE;
  TsTileNode *row = row_loop(k, point);
  /* One pass for the running max and rescaled sum (softmax_online), one to write. */
  TsTileNode *so = ts_tile_softmax_online(row, "m", "l", "x", "N");
  ts_tile_node_add_view(so, "x", "X", "i * N");
  ts_tile_let(row, "r", TS_DTYPE_F32, "1.0f / l");
  TsTileNode *map = ts_tile_map(row, "y", "exp(x - m) * r", "N");
  ts_tile_node_add_view(map, "x", "X", "i * N");
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  return TRUE;
}

const TsOpDef ts__op_softmax_safe = {
  .name = "softmax_safe",
  .summary = "Y[M,N] = softmax over N of X, max-subtracted (online softmax)",
  .n_inputs = 1,
  .inputs = {{"X", "\"M\",\"N\"", -4.0, 4.0}},
  .output = {"Y", "\"M\",\"N\"", 0, 0},
  .dims = "M,N",
  .cpu_space = ROW_SPACE,
  .cpu_default = ROW_DEFAULT,
  .flops = softmax_flops,
  .bytes = rows_bytes,
  .reference = softmax_reference,
  .lower_cpu = softmax_lower_cpu,
};

/* ---- layernorm_safe: Y = (X - mean) / sqrt(var + eps) * G + B ---- */

static double
layernorm_flops(const TsShape *s)
{
  return 8.0 * DIM(s, "M") * DIM(s, "N");
}

static double
layernorm_bytes(const TsShape *s, double elem)
{
  return elem * (2.0 * DIM(s, "M") * DIM(s, "N") + 2.0 * DIM(s, "N"));
}

static void
layernorm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_layernorm(ts_op_instance_dtype(inst)->storage, in[0], in[1], in[2],
                   ts__op_instance_float(inst, 0), out, ts_shape_get(s, "M"), ts_shape_get(s, "N"));
}

static gboolean
layernorm_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                    GError **error)
{
  if (!check_knobs("layernorm_safe", KNOB("BM"), KNOB("vector"), KNOB("threads"), error))
    return FALSE;
  TsTileNode *row = row_loop(k, point);
  /* Two-pass variance: E[(x - mean)^2] does not cancel catastrophically as E[x^2] - mean^2
   * does for rows with a large mean — the "safe" in the name. */
  TsTileNode *s1 = ts_tile_reduce(row, "s", "sum", "x", "N");
  ts_tile_node_add_view(s1, "x", "X", "i * N");
  ts_tile_let(row, "mean", TS_DTYPE_F32, "s / (float)N");
  TsTileNode *s2 = ts_tile_reduce(row, "q", "sum", "(x - mean) * (x - mean)", "N");
  ts_tile_node_add_view(s2, "x", "X", "i * N");
  ts_tile_let(row, "rstd", TS_DTYPE_F32, "1.0f / sqrt(q / (float)N + eps)");
  TsTileNode *map = ts_tile_map(row, "y", "(x - mean) * rstd * g + b", "N");
  ts_tile_node_add_view(map, "x", "X", "i * N");
  ts_tile_node_add_view(map, "g", "G", "0");
  ts_tile_node_add_view(map, "b", "Bt", "0");
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  return TRUE;
}

const TsOpDef ts__op_layernorm_safe = {
  .name = "layernorm_safe",
  .summary = "Y[M,N] = (X - mean) / sqrt(var + eps) * G[N] + Bt[N], two-pass variance",
  .n_inputs = 3,
  .inputs = {{"X", "\"M\",\"N\"", -1.0, 3.0}, {"G", "\"N\"", 0.5, 1.5}, {"Bt", "\"N\"", -0.5, 0.5}},
  .output = {"Y", "\"M\",\"N\"", 0, 0},
  .dims = "M,N",
  .n_floats = 1,
  .float_names = {"eps"},
  .float_values = {1e-5},
  .cpu_space = ROW_SPACE,
  .cpu_default = ROW_DEFAULT,
  .flops = layernorm_flops,
  .bytes = layernorm_bytes,
  .reference = layernorm_reference,
  .lower_cpu = layernorm_lower_cpu,
};

/* ---- rmsnorm_safe: Y = X / sqrt(mean(X^2) + eps) * G ---- */

static double
rmsnorm_flops(const TsShape *s)
{
  return 4.0 * DIM(s, "M") * DIM(s, "N");
}

static double
rmsnorm_bytes(const TsShape *s, double elem)
{
  return elem * (2.0 * DIM(s, "M") * DIM(s, "N") + DIM(s, "N"));
}

static void
rmsnorm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_rmsnorm(ts_op_instance_dtype(inst)->storage, in[0], in[1], ts__op_instance_float(inst, 0),
                 out, ts_shape_get(s, "M"), ts_shape_get(s, "N"));
}

static gboolean
rmsnorm_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                  GError **error)
{
  if (!check_knobs("rmsnorm_safe", KNOB("BM"), KNOB("vector"), KNOB("threads"), error))
    return FALSE;
  TsTileNode *row = row_loop(k, point);
  TsTileNode *s = ts_tile_reduce(row, "q", "sum", "x * x", "N");
  ts_tile_node_add_view(s, "x", "X", "i * N");
  ts_tile_let(row, "rstd", TS_DTYPE_F32, "1.0f / sqrt(q / (float)N + eps)");
  TsTileNode *map = ts_tile_map(row, "y", "x * rstd * g", "N");
  ts_tile_node_add_view(map, "x", "X", "i * N");
  ts_tile_node_add_view(map, "g", "G", "0");
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  return TRUE;
}

const TsOpDef ts__op_rmsnorm_safe = {
  .name = "rmsnorm_safe",
  .summary = "Y[M,N] = X / sqrt(mean(X^2) + eps) * G[N]",
  .n_inputs = 2,
  .inputs = {{"X", "\"M\",\"N\"", -1.0, 1.0}, {"G", "\"N\"", 0.5, 1.5}},
  .output = {"Y", "\"M\",\"N\"", 0, 0},
  .dims = "M,N",
  .n_floats = 1,
  .float_names = {"eps"},
  .float_values = {1e-5},
  .cpu_space = ROW_SPACE,
  .cpu_default = ROW_DEFAULT,
  .flops = rmsnorm_flops,
  .bytes = rmsnorm_bytes,
  .reference = rmsnorm_reference,
  .lower_cpu = rmsnorm_lower_cpu,
};
