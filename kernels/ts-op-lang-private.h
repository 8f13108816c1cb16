/* ts-op-lang-private.h — what the three parts of a kernel file's op share: the elements of
 * values as expression trees (read from the body by ts-op-lang-read.c), the op record built
 * from them (ts-op-lang.c) and the lowerings, references and costs (ts-op-lang-lower.c). */
#pragma once

#include "ts-op-private.h"

#include "ts-lang.h"

#include <string.h>

/* An element of a value, as an expression: of the inputs' elements (a row kernel: of row i's
 * elements, and of [N] tensors broadcast over the rows), the kernel's floats, numbers, per-row
 * reductions computed before (EX_ROW), rows stored in a scratch row (EX_SCRATCH) and dims. */
typedef enum {
  EX_NUM, EX_VIEW, EX_FLOAT, EX_BIN, EX_NEG, EX_EXP, EX_SQRT, EX_MAX, EX_ROW, EX_SCRATCH, EX_DIM
} ExKind;

typedef struct Ex Ex;
struct Ex {
  ExKind kind;
  char op;      /* EX_BIN: + - * / */
  double num;   /* EX_NUM */
  guint index;  /* EX_VIEW: the input; EX_FLOAT: the float parameter; EX_ROW, EX_SCRATCH */
  const char *dim; /* EX_DIM: its name (interned) */
  const Ex *a, *b;
};

/* A row kernel's steps before its output, in order: a row reduction into r<index>, or a value
 * kept in scratch row W<index> (computed once, read by the steps after it). */
typedef struct {
  gboolean scratch;
  gboolean max; /* reduction: max, else sum */
  guint index;
  const Ex *expr;
} Step;

typedef struct {
  TsOpDef def; /* first: an instance's op points here */
  char *name, *symbol, *summary, *dims, *space, *default_point, *dtype, *src, *path, *cache;
  char *cuda_space, *cuda_default;
  char *arg_names[TS_OP_MAX_ARGS + 1], *arg_sigs[TS_OP_MAX_ARGS + 1];
  char *views[TS_OP_MAX_ARGS + 1];  /* inputs' views, then the output's */
  char *float_names[2];
  const TsOpDef *implements;
  GPtrArray *arena; /* Ex* */
  const Ex *value;  /* the output element */
  char *expr;       /* value as a Tile IR map expression */
  double flops_per_element;
  /* Row kernels: [M, N] tensors walked row by row (BM rows a program), [N] tensors broadcast. */
  gboolean rows;
  char *row_dim, *col_dim;
  gboolean broadcast[TS_OP_MAX_ARGS]; /* input: an [N] tensor */
  GArray *steps;                      /* Step */
  /* A GEMM kernel: lowered through the gemm templates (ts-op-lang-gemm.c); its tensors' positions,
   * and its epilogue (value, when not NULL: C's element from the accumulator's, views[gemm_c]
   * being "acc", and the [N] inputs'). */
  gboolean gemm;
  guint gemm_a, gemm_b, gemm_c;
  TsGemmEpilogue epilogue;
  char *epi_cpu, *epi_cuda;
  char *cpu_why, *cuda_why; /* a target whose template space the kernel's leaves empty */
  /* An attention kernel: lowered through the flash_attention templates (ts-op-lang-attn.c);
   * causal when its flag masks; user_dims: its own spellings of B,H,S,D ("B,H,S,D_h"). */
  gboolean attn, attn_causal;
  guint attn_q, attn_k, attn_v;
  char *user_dims;
  guint input_of[TS_OP_MAX_ARGS + 1]; /* a tensor's position among the inputs */
  guint n_rowvars, n_scratch;
} LangOp;

typedef struct {
  LangOp *o;
  const TsLangKernel *k;
  const char *src, *file;
  GError **error;
  GHashTable *index_vars; /* names bound to tile.linear_id() */
  GHashTable *locals;     /* name -> const Ex* */
  GPtrArray *tensors;     /* TsLangParam* of the tensor parameters, in order */
  GPtrArray *floats;      /* TsLangParam* of the float parameters */
  gboolean read[TS_OP_MAX_ARGS + 1];
  const TsLangParam *out;
  const Ex *written;      /* out's element once assigned */
  gboolean rows;          /* a row kernel (its tensors have two dims) */
} Reader;

static inline gboolean
ts__lang_has_view(const Ex *e)
{
  return e && (e->kind == EX_VIEW || e->kind == EX_SCRATCH || ts__lang_has_view(e->a) ||
               ts__lang_has_view(e->b));
}

static inline gboolean
ts__lang_has_exp(const Ex *e)
{
  return e && (e->kind == EX_EXP || ts__lang_has_exp(e->a) || ts__lang_has_exp(e->b));
}

static inline const TsLangNode *
ts__lang_kid(const TsLangNode *n, guint i)
{
  return i < n->kids->len ? g_ptr_array_index(n->kids, i) : NULL;
}

/* tile.fn(...) */
static inline gboolean
ts__lang_is_tile_call(const TsLangNode *n, const char *fn)
{
  if (n == NULL || n->kind != TS_LANG_CALL || ts__lang_kid(n, 0)->kind != TS_LANG_ATTR)
    return FALSE;
  const TsLangNode *callee = ts__lang_kid(n, 0), *obj = ts__lang_kid(callee, 0);
  return strcmp(callee->str, fn) == 0 && obj->kind == TS_LANG_NAME &&
         strcmp(obj->str, "tile") == 0;
}

/* ---- ts-op-lang.c ---- */
/* FALSE (with the error set) when a float parameter's name cannot be the generated code's. */
typedef gboolean (*TsLangNameCheck)(Reader *r, const char *name, gpointer data);
/* The kernel's float parameters (at most 2) as the op's, each name passed by clear first; each
 * runs with its default, else 1.5. */
gboolean ts__lang_bind_floats(Reader *r, TsLangNameCheck clear, gpointer data);

/* ---- ts-op-lang-read.c ---- */
gboolean ts__lang_fail(Reader *r, const TsLangNode *at, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
int ts__lang_tensor_index(Reader *r, const char *name);
/* The body's statements into r: the output element (elementwise) or the row program's steps
 * and output (row kernels), or FALSE with the error at the construct not lowered. */
gboolean ts__lang_read_body(Reader *r, const TsLangNode *block);

/* ---- ts-op-lang-gemm.c ---- */
/* Whether the body multiplies tiles (tile.dot anywhere): read by the GEMM reader. */
gboolean ts__lang_is_contraction(const TsLangNode *block);
/* The body as the GEMM form (A, B, C and the output found), or FALSE at what is not. */
gboolean ts__lang_read_gemm(Reader *r, const TsLangNode *block);
/* The expression of a body's node (a row kernel's reading: tile.cast converts at the store,
 * [N] tensors are their column's value), or NULL with the error at what is not lowered. */
const Ex *ts__lang_expr(Reader *r, const TsLangNode *n);
/* gemm's f64 reference, then the epilogue applied to each element it checks. */
char *ts__lang_gemm_reference(const TsOpInstance *inst, void *const *in, double *out);
/* The op's buffers, dims, spaces and lowerings: the gemm templates'. */
gboolean ts__lang_build_gemm(Reader *r, const TsLangKernel *k);

/* ---- ts-op-lang-template.c ---- */
/* An environment for choosing a template's default point: the dtype's size and, on CUDA, an
 * sm_90a with 132 SMs, on the CPU AVX2; the caller adds the nominal problem's dims. */
TsSchedEnv *ts__lang_nominal_env(TsDtype dt, gboolean cuda);
/* The op lowered through t's templates on both targets: its dims, FLOPs, bytes and lowerings,
 * and on each target t's space with the kernel's values for the knobs the kernel names (and its
 * constraints), the default point the valid one in the env most like t's default. A target the
 * kernel's space leaves no point says why ("the space leaves the CPU <what> lowering no valid
 * point for <problem>"); both: an error. */
gboolean ts__lang_use_templates(Reader *r, const TsLangKernel *k, const TsOpDef *t,
                                const char *what, const char *problem,
                                const TsSchedEnv *cpu_env, const TsSchedEnv *cuda_env);

/* ---- ts-op-lang-flags.c ---- */
/* Where the specialised bodies' own nodes are kept (freed with the array). */
GPtrArray *ts__lang_views_new(void);
/* The block with every if decided by flags (name -> "1"/"0": the kernel's bool parameters), or
 * NULL with the error at an if on something else, or naming a flag no if reads. */
const TsLangNode *ts__lang_specialise(Reader *r, const TsLangNode *block, GHashTable *flags,
                                      GPtrArray *views);

/* ---- ts-op-lang-attn.c ---- */
/* The first attention intrinsic (tile.range_n, tile.softmax_online ...) of a body, or NULL. */
const TsLangNode *ts__lang_attention_call(const TsLangNode *block);
/* The body as the flash-attention form (Q, K, V, whether it masks, the output dtype), or
 * FALSE at what is not. */
gboolean ts__lang_read_attention(Reader *r, const TsLangNode *block);
/* The op's buffers, dims, spaces and lowerings: the flash_attention templates'. */
gboolean ts__lang_build_attention(Reader *r, const TsLangKernel *k);

/* ---- ts-op-lang-lower.c ---- */
/* Whether pipeline("next") applies to a row kernel: its first step is a reduction. */
gboolean ts__lang_pipeline_applies(const LangOp *o);
/* Why pipeline("skew") does not apply to a row kernel (a sentence's end: "this kernel ..."),
 * or NULL where it does: a first reduction, one scratch row (its sum taken as it is written)
 * and an output that does not read the first reduction. */
const char *ts__lang_skew_refusal(const LangOp *o);
/* Why math("fast") does not apply (a sentence's end: "this kernel ..."), or NULL where it
 * does: a kernel with an exp that writes a 16-bit output. */
const char *ts__lang_fast_math_refusal(const LangOp *o);
#define TS_LANG_FAST_MATH_WHAT                                                                 \
  "takes exp by a polynomial of 7.6e-6 relative error, which a 16-bit output's rounding hides"
/* Why jam(2) does not apply (a sentence's end), or NULL where it does: a row kernel of
 * reductions (the first one carried, pipeline("next")) and its output, with no scratch row. */
const char *ts__lang_jam_refusal(const LangOp *o);
#define TS_LANG_JAM_WHAT "runs the output passes of two rows as one"
/* Why apply("tile") does not apply (a sentence's end), or NULL where it does: a row kernel of
 * reductions and its output, with no scratch row, reading an [N] input. */
const char *ts__lang_tile_refusal(const LangOp *o);
#define TS_LANG_TILE_WHAT "writes a work item's rows in tiles, each [N] input's tile widened once"
/* The knobs only the CPU lowerings read, each with the one value a CUDA space holds (str, or
 * the integer i where str is NULL) and what it does on the CPU. */
typedef struct {
  const char *knob, *str;
  gint64 i;
  const char *what;
} TsLangCpuKnob;
#define TS_LANG_N_CPU_KNOBS 5
extern const TsLangCpuKnob ts__lang_cpu_knobs[TS_LANG_N_CPU_KNOBS];
#define TS_LANG_SKEW_WHAT                                                                      \
  "takes a row's scratch pass with the next row's first reduction and the last row's output"
/* The element as C (cuda: CUDA C); hoist/hoisted: where per-row parts go as lets, or NULL. */
char *ts__lang_print(const LangOp *o, const Ex *e, gboolean cuda, TsTileNode *hoist,
                     GHashTable *hoisted);
double ts__lang_count_flops(const Ex *e);
/* The op's functions (TsOpDef members). */
double ts__lang_flops(const TsOpInstance *inst);
char *ts__lang_reference(const TsOpInstance *inst, void *const *in, double *out);
char *ts__lang_reference_rows(const TsOpInstance *inst, void *const *in, double *out);
char *ts__lang_implemented_reference(const TsOpInstance *inst, void *const *in, double *out);
gboolean ts__lang_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                            GError **error);
gboolean ts__lang_lower_cpu_rows(const TsOpInstance *inst, const TsSchedPoint *point,
                                 TsTileKernel *k, GError **error);
gboolean ts__lang_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                             GError **error);
gboolean ts__lang_lower_cuda_rows(const TsOpInstance *inst, const TsSchedPoint *point,
                                  TsTileKernel *k, GError **error);
gboolean ts__lang_row_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda,
                           TsOpRowWork *work);
