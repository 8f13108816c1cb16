/* ts-ir.h — Graph IR: dtypes with numeric policies, tensor types with named symbolic dims,
 * shape bindings, and single-op graphs with shape inference.
 *
 * Text forms follow the seeds exactly:
 *   dtype policy : bf16 @accum(f32)    fp8_e4m3 @accum(f32) @loss_scale(128.0)    f16 @saturate
 *   tensor type  : Tensor["M","K", bf16 @accum(f32)]      Tensor[1024, "N", f32]
 *   shape        : M=1024,N=1024,K=1024
 * Errors use TS_IR_ERROR and name the offending token and its column.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_IR_ERROR (ts_ir_error_quark())
GQuark ts_ir_error_quark(void);

typedef enum {
  TS_IR_ERROR_PARSE,          /* malformed text */
  TS_IR_ERROR_UNKNOWN_DTYPE,  /* e.g. "bf17" */
  TS_IR_ERROR_UNKNOWN_POLICY, /* e.g. "@acum(f32)" */
  TS_IR_ERROR_RANK,           /* rank mismatch against a signature */
  TS_IR_ERROR_SHAPE,          /* a dim bound twice to different sizes, unbound dim, size <= 0 */
  TS_IR_ERROR_DTYPE,          /* dtype not accepted by an op / inconsistent inputs */
} TsIrError;

typedef enum {
  TS_DTYPE_INVALID = 0,
  TS_DTYPE_F64,
  TS_DTYPE_F32,
  TS_DTYPE_TF32,
  TS_DTYPE_BF16,
  TS_DTYPE_F16,
  TS_DTYPE_FP8_E4M3,
  TS_DTYPE_FP8_E5M2,
  TS_DTYPE_INT32,
  TS_DTYPE_INT8,
  TS_DTYPE_INT4,
} TsDtype;

/* Canonical names: "f64" "f32" "tf32" "bf16" "f16" "fp8_e4m3" "fp8_e5m2" "int32" "int8" "int4".
 * Parsing also accepts the seeds' spellings fp64, fp32, fp16. */
const char *ts_dtype_name(TsDtype dtype);
TsDtype ts_dtype_from_name(const char *name); /* TS_DTYPE_INVALID if unknown */
guint ts_dtype_bits(TsDtype dtype);           /* storage bits: 32, 16, 8, 4 ... */
gboolean ts_dtype_is_float(TsDtype dtype);
gboolean ts_dtype_is_fp8(TsDtype dtype); /* fp8_e4m3, fp8_e5m2 */

/* A storage dtype plus its numeric policies (seed 003 "Mixed precision policies as types"). */
typedef struct {
  TsDtype storage;
  TsDtype accum;       /* TS_DTYPE_INVALID when no @accum(...) was given */
  double loss_scale;   /* 0.0 when no @loss_scale(k) */
  gboolean stochastic_round;
  gboolean saturate;
} TsDtypePolicy;

/* "bf16 @accum(f32) @loss_scale(128.0)"; policies in any order, each at most once.
 * Errors: unknown dtype or policy (naming the token), a repeated policy, loss_scale <= 0. */
gboolean ts_dtype_policy_parse(const char *text, TsDtypePolicy *out, GError **error);
/* Canonical text: storage, then @accum, @loss_scale, @stochastic_round, @saturate in that order.
 * loss_scale printed with the shortest "%.Ng" (N <= 17) that reads back exactly, always containing
 * a '.' (128.0). Free with g_free. */
char *ts_dtype_policy_to_string(const TsDtypePolicy *policy);
/* The dtype arithmetic happens in: accum if set, else storage. */
TsDtype ts_dtype_policy_compute(const TsDtypePolicy *policy);
gboolean ts_dtype_policy_equal(const TsDtypePolicy *a, const TsDtypePolicy *b);

#define TS_MAX_RANK 6

typedef struct {
  char *name;  /* symbolic name ("M", "B*H") or NULL for a literal size */
  gint64 size; /* literal size, or -1 while symbolic and unbound */
} TsDim;

typedef struct {
  guint rank;
  TsDim dims[TS_MAX_RANK];
  TsDtypePolicy dtype;
} TsTensorType;

/* Tensor["M","K", bf16 @accum(f32)]: dims are quoted names or integer literals, then the dtype
 * with policies. Errors name the token and column. */
TsTensorType *ts_tensor_type_parse(const char *text, GError **error);
/* names[i] is a dim name ("M", "B*H") or a decimal literal ("1024"), which becomes a literal dim. */
TsTensorType *ts_tensor_type_new(guint rank, const char *const *names, const TsDtypePolicy *dtype);
TsTensorType *ts_tensor_type_copy(const TsTensorType *type);
void ts_tensor_type_free(TsTensorType *type);
char *ts_tensor_type_to_string(const TsTensorType *type); /* print -> parse is the identity */
/* Same rank, dim names (literal sizes for unnamed dims) and dtype policy; resolved sizes of named
 * dims are not compared. Two NULLs are equal. */
gboolean ts_tensor_type_equal(const TsTensorType *a, const TsTensorType *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTensorType, ts_tensor_type_free)

/* Named dim bindings, in insertion order. */
typedef struct _TsShape TsShape;

TsShape *ts_shape_new(void);
TsShape *ts_shape_copy(const TsShape *shape);
void ts_shape_free(TsShape *shape);
/* "M=1024,N=1024,K=1024" (spaces allowed). Sizes must be > 0 and fit in int64; a name given
 * twice with different sizes is an error naming it. */
TsShape *ts_shape_parse(const char *text, GError **error);
char *ts_shape_to_string(const TsShape *shape); /* "M=1024,N=1024,K=1024" in insertion order */
/* Binds name to size; binding again to the same size is fine, to another size is
 * TS_IR_ERROR_SHAPE: "dim 'K' is 512 in A but 256 in B" style messages come from callers via
 * the context argument (may be NULL), e.g. context = "B". */
gboolean ts_shape_bind(TsShape *shape, const char *name, gint64 size, const char *context,
                       GError **error);
gboolean ts_shape_lookup(const TsShape *shape, const char *name, gint64 *size);
gint64 ts_shape_get(const TsShape *shape, const char *name); /* -1 when unbound */
guint ts_shape_n_dims(const TsShape *shape);
const char *ts_shape_dim_name(const TsShape *shape, guint i);
gint64 ts_shape_dim_size(const TsShape *shape, guint i);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsShape, ts_shape_free)

/* Size of a dim under bindings: a literal, a bound name, or a product "B*H" of bound names.
 * Returns -1 when some factor is unbound. */
gint64 ts_dim_resolve(const TsDim *dim, const TsShape *shape);

/* Graph IR: a small DAG of op nodes over named tensor values. Ops are looked up by the caller
 * (kernels/); the graph only records and prints them. */
typedef struct _TsGraph TsGraph;

typedef struct {
  char *name;       /* "A", "B", "C" */
  TsTensorType *type;
} TsGraphValue;

TsGraph *ts_graph_new(const char *name);
void ts_graph_free(TsGraph *graph);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsGraph, ts_graph_free)
/* Adds a graph input; the type is copied. */
void ts_graph_add_input(TsGraph *graph, const char *name, const TsTensorType *type);
/* Adds a node `outputs = op(inputs) {attrs}`; attrs is "key=value" text or NULL. Types copied. */
void ts_graph_add_node(TsGraph *graph, const char *op, const char *const *inputs, guint n_inputs,
                       const char *output, const TsTensorType *output_type, const char *attrs);
/* Binds every symbolic dim of the graph's values from shape; fails naming the first dim that is
 * unbound or bound inconsistently. */
gboolean ts_graph_validate(const TsGraph *graph, const TsShape *shape, GError **error);
/* Printer (the first stage of the lowering inspector):
 *   graph gemm(M=1024, N=1024, K=1024) {
 *     %A : Tensor["M","K", bf16 @accum(f32)]
 *     %B : Tensor["K","N", bf16 @accum(f32)]
 *     %C = gemm(%A, %B) : Tensor["M","N", bf16 @accum(f32)]
 *   }
 */
char *ts_graph_to_string(const TsGraph *graph, const TsShape *shape);

/* Shape inference by signature unification: each of sig_inputs (templates such as
 * Tensor["M","K", f32]) is matched against the actual input of the same index: ranks must agree
 * (TS_IR_ERROR_RANK naming the argument), each template dim binds its name in `shape` (a clash
 * is TS_IR_ERROR_SHAPE naming the dim and both sizes). Returns the output type: sig_output's dims
 * with sizes resolved from `shape`, dtype taken from the first input. arg_names name the inputs
 * in messages. */
TsTensorType *ts_ir_infer(const TsTensorType *const *sig_inputs, const TsTensorType *const *inputs,
                          const char *const *arg_names, guint n_inputs,
                          const TsTensorType *sig_output, TsShape *shape, GError **error);
/* ts_ir_infer with the op's name in messages ("argument 'B' of gemm has rank 3, expected 2").
 * op may be NULL. */
TsTensorType *ts_ir_infer_op(const char *op, const TsTensorType *const *sig_inputs,
                             const TsTensorType *const *inputs, const char *const *arg_names,
                             guint n_inputs, const TsTensorType *sig_output, TsShape *shape,
                             GError **error);

G_END_DECLS
