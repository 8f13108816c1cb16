/* ts-op-private.h — the op definition record behind the catalog (kernels/ only). */
#pragma once

#include "ts-op.h"

#define TS_OP_MAX_ARGS 4
#define TS_OP_MAX_FLOATS (2 + TS_OP_MAX_ARGS)

typedef struct {
  const char *name; /* buffer name in generated code (upper case: views use lower case) */
  const char *sig;  /* dims of the tensor template: "\"M\",\"K\"" */
  double lo, hi;    /* range of random inputs */
} TsOpArg;

/* What a GEMM does to each accumulator element before C stores it (a kernel file's epilogue,
 * ts-op-lang-gemm.c): gemm's templates apply it when an op has one. The expressions read the
 * element as `acc` (f32), the [N] inputs' values at its column by their view names, the float
 * parameters and the dims. */
typedef struct {
  const char *cpu_expr;  /* C, for a Tile IR map over a row (GCC vectors: splat() for scalars) */
  const char *cuda_expr; /* CUDA C over float locals */
  guint n_vectors;
  const char *views[TS_OP_MAX_ARGS];   /* "bias" */
  const char *buffers[TS_OP_MAX_ARGS]; /* "BIAS" */
} TsGemmEpilogue;

struct _TsOpDef {
  const char *name;
  const char *summary;
  gboolean hidden; /* test-only: found only when TESSERA_TEST_OPS=1 */
  guint n_inputs;
  TsOpArg inputs[TS_OP_MAX_ARGS];
  TsOpArg output;
  const char *dims;        /* ABI order of the integer parameters: "M,N,K" */
  guint n_floats;
  const char *float_names[2];
  double float_values[2];
  /* Takes fp8 (e4m3, e5m2) inputs: each with a per-tensor scale, a float parameter
   * "scale_<input>" after the op's own (the value is x = scale * stored), and a bf16 output.
   * fp8_sigs: an input's dims when it is fp8, where its layout differs (NULL: `sig`). */
  gboolean fp8;
  const char *fp8_sigs[TS_OP_MAX_ARGS];
  const char *fp8_cuda_default; /* the CUDA default point for fp8 inputs (NULL: cuda_default) */
  const char *cpu_space;   /* default space on the CPU, with the op's constraints */
  const char *cpu_default; /* default point: fills the knobs a user's point leaves out */
  /* A kernel file's CPU default is the valid point most like this one when set (gemm: a GPU's
   * tile a program, walk("tiles")), else most like cpu_default. */
  const char *cpu_kernel_default;
  /* Its FLOPs are matrix products on tensor cores where the GPU has them (gemm, attention):
   * the roofline holds it to the tensor-core peak of its dtype, not the FMA peak. */
  gboolean tensor_math;
  double (*flops)(const TsShape *shape);
  double (*bytes)(const TsShape *shape, double elem_bytes);
  /* f64 reference: inputs in storage dtype, output as doubles. One too costly to compute in
   * full (more multiply-adds than the instance's reference_limit) may compute a sample, mark
   * every other element NaN and return what the sample is ("16 rows, 16 columns and 4096
   * random elements"); a full reference returns NULL. */
  char *(*reference)(const TsOpInstance *inst, void *const *inputs, double *out);
  gboolean (*lower_cpu)(const TsOpInstance *inst, const TsSchedPoint *point,
                        TsTileKernel *kernel, GError **error);
  /* The CUDA target: default space (with the constraints that keep a point within the arch's
   * shared memory and registers: smem_bytes, regs_per_sm ... from ts_op_instance_env), the
   * default point, and the lowering to a GRID of tile intrinsics (ts_cuda_prims.cuh). */
  const char *cuda_space;
  const char *cuda_default;
  gboolean (*lower_cuda)(const TsOpInstance *inst, const TsSchedPoint *point,
                         TsTileKernel *kernel, GError **error);
  /* Kernels of the kernel language (ts-op-lang.c), registered at run time: */
  const char *symbol;      /* a C identifier for generated names (NULL: the name is one) */
  const char *only_dtype;  /* the dtype its signature declares (NULL: any the checks allow) */
  const char *tolerance_as; /* the op whose verification bound applies (NULL: its own name) */
  double (*inst_flops)(const TsOpInstance *inst); /* instead of flops when set */
  const char *kernel_src, *kernel_path; /* its source (a worker registers it again from it) */
  double kernel_budget_ms;  /* @kernel.autotune(budget_ms=...), 0 when not given */
  const char *kernel_cache; /* @kernel.autotune(cache=...), NULL when not given */
  const char *kernel_template; /* the built-in op whose lowerings it uses, or NULL */
  /* @verify.numerics(bounded=[lo, hi]): every output element checked within [lo, hi]. */
  gboolean verify_bounded;
  double verify_lo, verify_hi;
  /* The kernel's own spellings of dims, in dims' order ("B,H,S,D_h"): --shape may use them. */
  const char *dim_names;
  const TsGemmEpilogue *gemm_epilogue; /* gemm's templates: applied before the store */
  const char *cpu_why, *cuda_why; /* why a kernel op has no space on that target, or NULL */
  /* A row-wise op (rows, elementwise maps): how its kernel at a point sweeps the rows, for the
   * cost model (ts_op_instance_row_work); NULL for ops of other forms. */
  gboolean (*row_work)(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda,
                       TsOpRowWork *work);
  /* Test ops only: C source written directly instead of lowered through Tile IR. */
  char *(*emit_cpu_source)(const TsOpInstance *inst, const TsSchedPoint *point,
                           const char *entry, GError **error);
};

struct _TsOpInstance {
  const TsOpDef *op;
  TsShape *shape;
  TsDtypePolicy dtype;
  TsGraph *graph;
  gint64 numel[TS_OP_MAX_ARGS + 1]; /* inputs, then the output */
  /* Host inputs and the reference output for data_seed, computed once: an f64 reference of a
   * 2048^3 gemm takes seconds, and every candidate of a tune is checked against it. */
  gboolean have_data;
  guint64 data_seed;
  void *inputs[TS_OP_MAX_ARGS];
  double *ref;
  double reference_limit; /* multiply-adds a reference may cost before it is sampled */
  /* The kernel's float parameters: the op's, then an fp8 input's scales. */
  guint n_floats;
  char *float_names[TS_OP_MAX_FLOATS];
  double float_values[TS_OP_MAX_FLOATS];
  TsDtype out_dtype; /* the output's storage: the inputs', or bf16 for fp8 inputs */
  char *verification;     /* what checking against ref means: "full f64 reference ..." */
};

/* A 32-bit hash of the start of an input (FNV-1a over its first 4 KiB): the inputs come from
 * the data seed, so samples drawn from it do too, without the reference needing the seed. */
guint32 ts__op_data_hash(const void *data, gsize bytes);

/* Catalog entries, one per file. */
extern const TsOpDef ts__op_gemm;
extern const TsOpDef ts__op_saxpy;
extern const TsOpDef ts__op_reduce_sum;
extern const TsOpDef ts__op_softmax_safe;
extern const TsOpDef ts__op_layernorm_safe;
extern const TsOpDef ts__op_rmsnorm_safe;
extern const TsOpDef ts__op_flash_attention, ts__op_flash_attention_causal;
extern const TsOpDef ts__op_test_fault;

/* Element counts of the op's buffers at the instance's shape (inputs then output). */
gint64 ts__op_instance_numel(const TsOpInstance *inst, guint arg);
/* Float parameter i of the instance (the op's in order, then the fp8 scales). */
double ts__op_instance_float(const TsOpInstance *inst, guint i);
/* pipeline("none" | "next" | "skew") of a CPU row op: *next TRUE for "next", *skew for "skew";
 * skew NULL for an op without "skew" (the value is then refused). Defined in op-rowwise.c. */
gboolean ts__op_pipeline_knob(const char *op, const TsSchedPoint *point, gboolean *next,
                              gboolean *skew, GError **error);
/* Columns of a tile of a row op's apply("tile") (the built-in layernorm's and a kernel file's):
 * 2 KB of f32 per [N] input, which stay in L1 with the tile's rows; 128 and 512 were no faster
 * (f16 layernorm, 4096 x 4096, one core of Zen 4). */
#define TS_OP_ROW_TILE_N 256
/* The CPU lowerings' store("cached"|"stream") knob applied to the map that writes the output
 * (stream: non-temporal stores, ts_tile_map_set_stream); another value is a schedule error
 * naming `op`. Defined in op-rowwise.c. */
gboolean ts__op_store_knob(const char *op, const TsSchedPoint *point, TsTileNode *map,
                           GError **error);
/* The same knob's value: *stream TRUE for "stream" (for a lowering whose output is written by
 * more than one map, or as a map's second destination). */
gboolean ts__op_store_stream(const char *op, const TsSchedPoint *point, gboolean *stream,
                             GError **error);
/* An fp8 input's per-tensor scale: the value its stored element stands for is scale * stored
 * (1.0 for other dtypes). */
double ts__op_instance_input_scale(const TsOpInstance *inst, guint input);
/* Adds a run-time op (a kernel file's) to the ops ts_op_lookup finds; the registry keeps it
 * for the life of the process. FALSE when its name is taken by another op. */
gboolean ts__op_register(const TsOpDef *op);
/* The CUDA row tile of ts_cuda_rows.cuh, as the built-in ops and kernel files lower to it. */
typedef struct {
  gint64 threads; /* warps * 32 */
  gint64 tpr;     /* threads a row: warps * 32 / BM (a map's one row: all of them) */
  gint64 vec;     /* elements a load: the vector knob, halved until it divides a row */
  gint64 per;     /* vectors a thread holds of each tile */
  gint64 gx;      /* CTAs */
  gboolean resident; /* the whole row in registers; else streamed in tiles of `per` vectors */
} TsCudaRowTile;
/* Floats of a row a thread holds at most when the row stays in registers. */
#define TS_CUDA_ROW_REGS 64
/* An elementwise map over n elements, BN a CTA, as one-row tiles: the knobs checked (warps in
 * 1..32, vector a power of two up to 16 dividing BN / (warps * 32)) and the grid; defines BN,
 * THREADS, VEC, PER, NCOLS in k. */
gboolean ts__cuda_map_tile(const char *op, gint64 n, gint64 bn, gint64 warps, gint64 vector,
                           TsTileKernel *k, TsCudaRowTile *t, GError **error);
/* m rows of n, BM rows a CTA: the knobs checked (BM dividing warps * 32 into a power of two or
 * a multiple of 32 threads a row), the register budget (a row too long for it streams when
 * can_stream, else is refused) and the grid; defines BM, WARPS, THREADS, VEC, PER, COLS, NCOLS
 * in k. */
gboolean ts__cuda_row_tile(const char *op, gint64 m, gint64 n, gint64 bm, gint64 warps,
                           gint64 vector, gboolean can_stream, TsTileKernel *k, TsCudaRowTile *t,
                           GError **error);
/* Whether ts__cuda_row_tile holds a row of n in registers (else it streams the row in column
 * tiles, a pass over memory for each of the kernel's sweeps); FALSE for knobs it refuses. */
gboolean ts__cuda_row_resident(gint64 n, gint64 bm, gint64 warps, gint64 vector);
/* Declares the kernel's params (buffers, dims, floats) in ABI order. */
void ts__op_declare_params(const TsOpInstance *inst, TsTileKernel *kernel);
