/* ts-tile.h — Tile IR: what one schedule point of one op does, in tiles rather than threads.
 *
 * A kernel is a tree of statements over named buffers in three memory spaces (seed 003):
 * global (the op's tensors), shared (CPU: packed cache-resident panels; GPU: shared memory)
 * and register (CPU: the micro-tile; GPU: fragments). Index and extent arguments are plain
 * integer expressions in C syntax over loop variables, shape dims and schedule constants, so
 * both the C and the CUDA emitters print them verbatim.
 *
 * Statements:
 *   parallel threads=T { ... }           a team of T workers (CPU threads / GPU CTAs)
 *   for v in range(lo, hi, step) { ... } serial, or `parallel` (work shared by the team),
 *                                        or `unroll`
 *   let v = expr                         an integer or float scalar
 *   alloc B                              declares a shared/register buffer
 *   pack A|B src rows x cols -> dst panel(P) [reuse_key=k]
 *                                        copies a tile into the packed panel layout the mma
 *                                        expects, converting to the compute dtype; skipped
 *                                        while the worker's dst already holds block k
 *   mma C[row, col] (+)= A_panel · B_panel  k=kc  micro=MRxNR vector=V unroll=U
 *   reduce v = op(expr) over j < n        row reduction (sum|max) of an elementwise expression
 *   softmax_online (m, l) = x over j < n  one-pass running max and rescaled sum (online softmax)
 *   map dst[j] = expr over j < n          elementwise map and store (GPU: over the thread's
 *                                        f32 register tiles, expr in CUDA C); CPU row
 *                                        passes add a sum of what it stores, a carried
 *                                        reduction and a second store (`and d = e`)
 *   convert src -> dst n [scale]         dtype conversion of a finished tile, optionally scaled
 *   barrier                              team barrier
 * GPU kernels (the CUDA target) add two:
 *   grid (gx, gy, gz) threads=T smem=S { ... }
 *                                        the launch: a gx×gy×gz grid of CTAs of T threads
 *                                        with S bytes of dynamic shared memory; the body is
 *                                        what one CTA does, with its coordinates in bx, by, bz
 *   name<K=v, ...>(operand, ...)         a tile intrinsic of the target's primitive library
 *                                        (seed 003): cp_async tile copies with a vector width
 *                                        and swizzle, mma on warp tiles, fragment stores,
 *                                        row loads and CTA reductions ... The template
 *                                        constants are the schedule's numbers; the operands
 *                                        are expressions (buffers, offsets, loop variables,
 *                                        register tiles passed by reference).
 * Views name a row of a buffer: `x = X[i*N]` means x[j] is X[i*N + j].
 */
#pragma once

#include <glib.h>

#include "ts-ir.h"

G_BEGIN_DECLS

typedef enum { TS_MEM_GLOBAL, TS_MEM_SHARED, TS_MEM_REGISTER } TsMemSpace;

typedef enum {
  TS_TILE_BLOCK, /* a sequence of statements (kernel body, loop body) */
  TS_TILE_PARALLEL,
  TS_TILE_FOR,
  TS_TILE_LET,
  TS_TILE_ALLOC,
  TS_TILE_PACK,
  TS_TILE_MMA,
  TS_TILE_REDUCE,
  TS_TILE_SOFTMAX_ONLINE,
  TS_TILE_MAP,
  TS_TILE_CONVERT,
  TS_TILE_BARRIER,
  TS_TILE_GRID,      /* GPU launch: ints {gx, gy, gz, threads, smem bytes} */
  TS_TILE_INTRINSIC, /* var = intrinsic name, params = template constants, args = operands */
  /* expr: a condition; children run where it holds (GPU: a role of the CTA's threads, e.g.
   * the producer warpgroup of a warp-specialized kernel). Appended: TsTileOp values are not
   * stored, but appending keeps every switch's order readable. */
  TS_TILE_IF,
  /* dst[lo] = expr: one f32 element of a buffer (per-row values a later loop reads back) */
  TS_TILE_SET,
} TsTileOp;

typedef enum {
  TS_FOR_SERIAL,
  TS_FOR_PARALLEL, /* iterations shared among the enclosing team */
  TS_FOR_UNROLL,
  /* Shared among the team one iteration at a time, to whichever thread is free: a thread whose
   * core is busy with someone else's work takes fewer (a static split would wait for it). */
  TS_FOR_PARALLEL_DYNAMIC,
} TsForKind;

/* Which multiply-add a GEMM's packs and micro-kernel are laid out for (CPU): f32 FMAs on
 * panels widened to f32; vdpbf16ps on bf16 K-pair panels; AMX tiles (tdpbf16ps) on 32-deep
 * K steps. */
typedef enum { TS_TILE_DOT_FMA, TS_TILE_DOT_BF16, TS_TILE_DOT_AMX } TsTileDot;

typedef struct {
  char *name;
  TsMemSpace space;
  TsDtype dtype;
  char *size;          /* element count, an expression */
  gboolean per_worker; /* one copy per worker of the team (CPU thread-private) */
  /* only row loops (maps, reductions) over the same columns touch it, so they may keep its
   * elements in any order they agree on (the C target: bf16 lane pairs) */
  gboolean any_order;
  char *layout;        /* "row-major", "panel(MR=6)", ... for the printer */
} TsTileBuffer;

/* A map's carried reduction: var = op ("sum" or "max") of expr over the map's columns. */
typedef struct {
  char *var, *op, *expr;
} TsTileCarry;

/* A row view: name[j] is buffer[offset + j] (offset an expression; buffer global/shared). */
typedef struct {
  char *name;
  char *buffer;
  char *offset;
} TsTileView;

typedef struct _TsTileNode TsTileNode;
struct _TsTileNode {
  TsTileOp op;
  char *var;      /* FOR loop var, LET name, REDUCE result, SOFTMAX m, PACK reuse key, MAP sum
                     of the values it stores (NULL: none) */
  char *var2;     /* SOFTMAX l */
  char *lo, *hi, *step; /* FOR range; REDUCE/MAP/SOFTMAX use hi as the column count */
  char *expr;     /* LET / REDUCE / MAP expression; REDUCE op in `step` ("sum"|"max") */
  char *dst;      /* MAP destination view; PACK/MMA/CONVERT destination buffer[offset] */
  GPtrArray *prefetch; /* char*: MAP's pointer expressions p; the loop prefetches each p[j] */
  gboolean prefetch_l2; /* MAP: ... into L2 only (rows further ahead) */
  GPtrArray *carries; /* TsTileCarry*: MAP's carried reductions, in order (NULL: none) */
  gboolean stream; /* MAP: the destination written with non-temporal stores */
  char *drain, *drain_expr; /* MAP: a second destination view, drain[j] = drain_expr */
  gboolean drain_stream;    /* MAP: ... written with non-temporal stores */
  TsForKind for_kind;
  TsDtype dtype;  /* LET scalar type (f32 or int via TS_DTYPE_INT32 meaning int64 index) */
  gint64 ints[6]; /* op-specific constants: PACK {operand(0=A,1=B), panel}, MMA {MR, NR, V,
                     unroll, A's row stride when read in place (0: packed)}, PARALLEL
                     {threads}; PACK/MMA: ints[5] the TsTileDot */
  GPtrArray *args;     /* char*: op-specific operands (PACK: src, rows, cols, ld, dst;
                          MMA: C, ldc, A, B, kc, accumulate, mr, nr) */
  GPtrArray *views;    /* TsTileView*: REDUCE/MAP/SOFTMAX inputs */
  GPtrArray *children; /* TsTileNode*: BLOCK/PARALLEL/FOR bodies */
  TsTileBuffer *buffer; /* ALLOC */
  GPtrArray *params;    /* char* "NAME=VALUE": INTRINSIC template constants, in order */
};

/* A tensor map (GPU, sm_90): a global parameter seen by the Tensor Memory Accelerator as a
 * row-major matrix of `outer` rows of `inner` elements (integer parameters; `outer` may be a
 * product of them, "B*H*S", a [B*H, S, D] tensor read as one matrix of rows), copied in
 * boxes of box_outer x box_inner elements into shared memory in a swizzle of `swizzle` bytes
 * (0, 32, 64 or 128). The target encodes it on the host; the body names it in intrinsics. */
typedef struct {
  char *name;
  char *buffer;        /* a global parameter */
  char *inner, *outer; /* integer parameters (outer: or a product "B*H*S") */
  gint64 box_inner, box_outer, swizzle;
} TsTileTensorMap;

/* A kernel: its parameters (the op's global tensors, integer dims and float params in ABI
 * order), its tensor maps and its body. */
typedef struct {
  char *name;
  char *op;
  TsDtypePolicy dtype;
  GPtrArray *params;      /* TsTileBuffer*: global buffers in ABI order */
  GPtrArray *int_params;  /* char*: dims in ABI order ("M", "N", "K") */
  GPtrArray *float_params; /* char*: ("alpha", "eps") */
  GPtrArray *defines;     /* char*: "NAME=VALUE" schedule constants, printed as a header */
  /* Schedule constants the kernel reads at run time, the ints after int_params in this order
   * (a C target's block sizes: one compiled kernel then serves every point that differs only
   * in them): their names (char*) and values (gint64) */
  GPtrArray *launch_names;
  GArray *launch_values;
  GPtrArray *tensor_maps; /* TsTileTensorMap* */
  TsTileNode *body;       /* TS_TILE_BLOCK */
} TsTileKernel;

TsTileKernel *ts_tile_kernel_new(const char *name, const char *op, const TsDtypePolicy *dtype);
void ts_tile_kernel_free(TsTileKernel *kernel);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTileKernel, ts_tile_kernel_free)
void ts_tile_kernel_add_param(TsTileKernel *kernel, const char *name, TsDtype dtype,
                              const char *size);
void ts_tile_kernel_add_int_param(TsTileKernel *kernel, const char *name);
void ts_tile_kernel_add_float_param(TsTileKernel *kernel, const char *name);
void ts_tile_kernel_define(TsTileKernel *kernel, const char *name, gint64 value);
/* A constant like a define's that the kernel reads at run time (see launch_names), named as
 * the schedule knob it holds: ts_op_emit names and heads the source by the point's other knobs. */
void ts_tile_kernel_launch_const(TsTileKernel *kernel, const char *name, gint64 value);
/* "BM=72, BN=4032, BK=384": the launch constants' values, or NULL when there are none. */
char *ts_tile_kernel_launch_text(const TsTileKernel *kernel);
void ts_tile_kernel_add_tensor_map(TsTileKernel *kernel, const char *name, const char *buffer,
                                   const char *inner, const char *outer, gint64 box_inner,
                                   gint64 box_outer, gint64 swizzle);
const TsTileBuffer *ts_tile_kernel_find_buffer(const TsTileKernel *kernel, const char *name);

/* Node constructors. Each appends the new node to `parent` (a BLOCK, PARALLEL or FOR) when
 * parent is non-NULL and returns it (owned by the parent). Strings are copied. */
TsTileNode *ts_tile_block_new(void);
void ts_tile_node_free(TsTileNode *node);
TsTileNode *ts_tile_parallel(TsTileNode *parent, gint64 threads);
TsTileNode *ts_tile_for(TsTileNode *parent, const char *var, const char *lo, const char *hi,
                        const char *step, TsForKind kind);
TsTileNode *ts_tile_let(TsTileNode *parent, const char *var, TsDtype dtype, const char *expr);
/* A per-worker f32 row that only maps and reductions over its N columns touch (any_order). */
TsTileNode *ts_tile_alloc_row(TsTileNode *parent, TsTileKernel *kernel, const char *name,
                              const char *n, const char *layout);
TsTileNode *ts_tile_alloc(TsTileNode *parent, TsTileKernel *kernel, const char *name,
                          TsMemSpace space, TsDtype dtype, const char *size, gboolean per_worker,
                          const char *layout);
/* Packs a rows x cols block of src (row stride ld) into panels: operand 0 = A (MR-row
 * panels), 1 = B (NR-column panels), converting to f32; 2 = B stored K-major (element (k, j)
 * of the kc x nc block at src[j * ld + k]) into the same NR-column panels. */
TsTileNode *ts_tile_pack(TsTileNode *parent, int operand, gint64 panel, const char *src,
                         const char *ld, const char *rows, const char *cols, const char *dst);
/* Skip the pack while the per-worker destination already holds the block named by key (an
 * integer expression): the software-cache reuse of a packed tile across loop iterations. */
void ts_tile_pack_set_reuse_key(TsTileNode *pack, const char *key);
/* The dot-product engine of a pack or an mma (TS_TILE_DOT_FMA unless set). */
void ts_tile_set_dot(TsTileNode *pack_or_mma, TsTileDot dot);
TsTileDot ts_tile_get_dot(const TsTileNode *pack_or_mma);
TsTileNode *ts_tile_mma(TsTileNode *parent, gint64 mr, gint64 nr, gint64 vector, gint64 unroll,
                        const char *c, const char *ldc, const char *a, const char *b,
                        const char *kc, const char *accumulate, const char *mr_valid,
                        const char *nr_valid);
/* The mma reads A in place, a row-major f32 matrix with row stride lda (a constant), instead
 * of packed MR-row panels; all MR rows of a micro-tile must be readable. */
void ts_tile_mma_set_a_rows(TsTileNode *mma, gint64 lda);
TsTileNode *ts_tile_reduce(TsTileNode *parent, const char *var, const char *op,
                           const char *expr, const char *n);
TsTileNode *ts_tile_softmax_online(TsTileNode *parent, const char *m, const char *l,
                                   const char *x, const char *n);
TsTileNode *ts_tile_map(TsTileNode *parent, const char *dst, const char *expr, const char *n);
/* While the map walks its columns j, prefetch where[j] into L1: a row op's last pass over row
 * i asks for row i + 1, whose first pass would otherwise wait on memory (the hardware
 * prefetcher stops following a stream the passes in between do not touch). */
void ts_tile_map_set_prefetch(TsTileNode *map, const char *where);
/* ... into L2 only: for a row several rows ahead, which would evict the rows in use from L1. */
void ts_tile_map_set_prefetch_l2(TsTileNode *map, const char *where);
/* ... and also where[j] (the same level): a second row ahead, for rows processed in pairs. */
void ts_tile_map_add_prefetch(TsTileNode *map, const char *where);
/* The map also reduces expr (over its views, at the same columns) with op ("sum" or "max")
 * into var, an f32 declared before it, assigned when the map ends: a row op's first reduction
 * of the next row fused into this row's last pass, so that pass reads memory while it writes
 * (as a copy does) and the row's own passes run from cache. A map may carry several, each
 * with its own accumulators (rows processed in pairs carry the next pair's). */
void ts_tile_map_add_carry(TsTileNode *map, const char *var, const char *op, const char *expr);
/* The map's stores bypass the caches (non-temporal, where the target has them): for an output
 * that is written once and not read again soon, it saves reading each line in before it is
 * written, and leaves the cache to the input. The team's stores are fenced before it ends. */
void ts_tile_map_set_stream(TsTileNode *map);
/* The map also sums the f32 values it stores into a new f32 `var` (before any rounding to the
 * destination's dtype): a reduction of its output fused into the pass that writes it. */
void ts_tile_map_set_sum(TsTileNode *map, const char *var);
/* The map also stores expr (over its views, at the same columns) into the view dst, with
 * non-temporal stores if stream: a pass that finishes another row while it computes this one
 * (softmax's pipeline("skew") writes row i - 1 during row i's exps), so that the bound-by-
 * arithmetic loop also carries the row's share of the memory traffic. */
void ts_tile_map_set_drain(TsTileNode *map, const char *dst, const char *expr, gboolean stream);
TsTileNode *ts_tile_convert(TsTileNode *parent, const char *src, const char *dst, const char *n);
/* ... multiplying by `scale` (an expression) before rounding: fp8 inputs' per-tensor scales. */
TsTileNode *ts_tile_convert_scaled(TsTileNode *parent, const char *src, const char *dst,
                                   const char *n, const char *scale);
TsTileNode *ts_tile_barrier(TsTileNode *parent);
/* buffer[index] = expr, an f32 value (an expression) stored in one element of an f32 buffer:
 * a statistic of each row of a work item, kept for a loop over the item's column tiles. */
TsTileNode *ts_tile_set(TsTileNode *parent, const char *buffer, const char *index,
                        const char *expr);
/* A block that runs where cond (an expression) holds. */
TsTileNode *ts_tile_if(TsTileNode *parent, const char *cond);
/* The launch of a GPU kernel: the body runs once per CTA, with bx, by, bz its coordinates.
 * One per kernel, directly in the kernel's body. */
TsTileNode *ts_tile_grid(TsTileNode *parent, gint64 gx, gint64 gy, gint64 gz, gint64 threads,
                         gint64 smem_bytes);
/* Groups the grid's CTAs (along x, `ctas` consecutive ones, dividing the grid) into thread-block
 * clusters (sm_90): they run at once on neighbouring SMs and reach each other's shared memory. */
void ts_tile_grid_set_cluster(TsTileNode *grid, gint64 ctas);
/* A call of a target tile intrinsic. `params` is "NAME=VALUE,NAME=VALUE" (or NULL): template
 * constants in order; the operands follow as a NULL-terminated list of expressions. */
TsTileNode *ts_tile_intrinsic(TsTileNode *parent, const char *name, const char *params, ...)
  G_GNUC_NULL_TERMINATED;
/* Finds the GRID node of a kernel, or NULL (CPU kernels have none). */
const TsTileNode *ts_tile_kernel_grid(const TsTileKernel *kernel);

/* Adds a row view to a REDUCE, SOFTMAX_ONLINE or MAP node. */
void ts_tile_node_add_view(TsTileNode *node, const char *name, const char *buffer,
                           const char *offset);

/* The printer: the Tile IR stage of the lowering inspector. */
char *ts_tile_kernel_to_string(const TsTileKernel *kernel);
const char *ts_mem_space_name(TsMemSpace space);

G_END_DECLS
