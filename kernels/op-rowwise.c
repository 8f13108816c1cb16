/* op-rowwise.c — the memory-bound ops: saxpy, reduce_sum, softmax_safe, layernorm_safe,
 * rmsnorm_safe. All of them stream rows (or one long vector) through the vector row
 * primitives; the schedule chooses the rows per work item (block m, or block n for saxpy), the
 * vector width and the threads (CPU) or warps (CUDA). Arithmetic is f32 whatever the storage
 * dtype.
 *
 * The CUDA lowerings (ts_cuda_rows.cuh) give each CTA a row tile of BM rows, WARPS * 32 / BM
 * threads per row, each thread holding VEC-element vectors of its row in registers. When the
 * whole row fits (at most ROW_REGS floats a thread) it is read once, reduced, mapped and
 * written from registers: one global read and one write per element. Longer rows are streamed
 * in COLS-wide column tiles and re-read once per pass. */
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

/* The team of a row op: BM (read at run time: it only bounds the loop over a work item's rows,
 * so the points that differ in it share one compiled kernel) and VEC, and the parallel region
 * its threads run, where per-thread buffers are allocated. */
static TsTileNode *
row_team(TsTileKernel *k, const TsSchedPoint *point)
{
  ts_tile_kernel_launch_const(k, "BM", KNOB("BM"));
  ts_tile_kernel_define(k, "VEC", KNOB("vector"));
  return ts_tile_parallel(k->body, KNOB("threads"));
}

/* ... for i0 in range(0, M, BM) parallel: the loop over work items of BM rows. */
static TsTileNode *
row_items_in(TsTileNode *par)
{
  return ts_tile_for(par, "i0", "0", "M", "BM", TS_FOR_PARALLEL_DYNAMIC);
}

/* The team and its loop over work items. scratch: the name of an f32 row of N floats each
 * thread gets for itself, or NULL. */
static TsTileNode *
row_items(TsTileKernel *k, const TsSchedPoint *point, const char *scratch)
{
  TsTileNode *par = row_team(k, point);
  if (scratch != NULL)
    ts_tile_alloc_row(par, k, scratch, "N", "one f32 row");
  return row_items_in(par);
}

/* ... : for i in range(i0, min(i0 + BM, M)): <row body> */
static TsTileNode *
row_loop_in(TsTileKernel *k, const TsSchedPoint *point, const char *scratch)
{
  TsTileNode *i0 = row_items(k, point, scratch);
  return ts_tile_for(i0, "i", "i0", "min(i0 + BM, M)", "1", TS_FOR_SERIAL);
}

static TsTileNode *
row_loop(TsTileKernel *k, const TsSchedPoint *point)
{
  return row_loop_in(k, point, NULL);
}

/* pipeline("next"): a row's first reduction is done while the row before it is written.
 *   for i0 in range(0, M, BM) parallel:
 *     var = reduce op(expr) over row i0
 *     for i in range(i0, iend): <row body>
 * and the body's last map reduces the next row into var (row_pipeline_carry). That map then
 * reads memory while it writes, as a copy does, and the row's own passes run from cache; with
 * lane-paired bf16 (ts_vf_load2_bf16) it makes a 4096 x 4096 bf16 layernorm 1.3-1.5x faster
 * from memory here (Zen 4, one or two threads), where either change alone gains nothing. */
static TsTileNode *
row_loop_pipelined(TsTileKernel *k, const TsSchedPoint *point, const char *scratch,
                   const char *var, const char *op, const char *expr)
{
  TsTileNode *i0 = row_items(k, point, scratch);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, "min(i0 + BM, M)");
  TsTileNode *first = ts_tile_reduce(i0, var, op, expr, "N");
  ts_tile_node_add_view(first, "x", "X", "i0 * N");
  return ts_tile_for(i0, "i", "i0", "iend", "1", TS_FOR_SERIAL);
}

/* The last pass over row i prefetches row i + 1 of X: at 4096 x 4096 on one core, 1.08-1.20x
 * the speed of softmax, layernorm and rmsnorm in f32 and bf16 (the passes in between run from
 * cache, and the hardware prefetcher does not carry a stream across them). */
static void
prefetch_next_row(TsTileNode *map)
{
  ts_tile_map_set_prefetch(map, "X + min(i + 1, M - 1) * N");
}

/* The carried reduction of row_loop_pipelined's body: expr over xn, the next row of the work
 * item (the last row re-reads itself, from cache, rather than a row another thread may take).
 * Rows three ahead are prefetched into L2, so the next map's reads find them there. */
static void
row_pipeline_carry(TsTileNode *map, const char *var, const char *op, const char *expr)
{
  ts_tile_map_add_carry(map, var, op, expr);
  ts_tile_node_add_view(map, "xn", "X", "min(i + 1, iend - 1) * N");
  ts_tile_map_set_prefetch_l2(map, "X + min(i + 3, M - 1) * N");
}

/* The row loop with the row's first reduction, var = op(expr) over x = row i, done: in the
 * row's body (pipeline "none") or, carried, before it (pipeline "next"). */
static TsTileNode *
row_loop_first(TsTileKernel *k, const TsSchedPoint *point, gboolean next, const char *scratch,
               const char *var, const char *op, const char *expr)
{
  if (next)
    return row_loop_pipelined(k, point, scratch, var, op, expr);
  TsTileNode *row = row_loop_in(k, point, scratch);
  TsTileNode *r = ts_tile_reduce(row, var, op, expr, "N");
  ts_tile_node_add_view(r, "x", "X", "i * N");
  return row;
}

/* The last map over row i carries the next row's first reduction (expr over xn), or prefetches
 * the next row. */
static void
row_last_map(TsTileNode *map, gboolean next, const char *var, const char *op, const char *expr)
{
  if (next)
    row_pipeline_carry(map, var, op, expr);
  else
    prefetch_next_row(map);
}

/* pipeline("none" | "next" | "skew"): *next TRUE for "next", *skew for "skew"; skew is NULL
 * for an op without "skew". */
gboolean
ts__op_pipeline_knob(const char *op, const TsSchedPoint *point, gboolean *next, gboolean *skew,
                     GError **error)
{
  const char *how = ts_sched_point_get_str(point, "pipeline", "none");
  *next = g_strcmp0(how, "next") == 0;
  const gboolean skewed = skew != NULL && g_strcmp0(how, "skew") == 0;
  if (skew != NULL)
    *skew = skewed;
  if (*next || skewed || g_strcmp0(how, "none") == 0)
    return TRUE;
  g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
              "%s: pipeline(\"%s\") is not one of \"none\", \"next\"%s", op, how,
              skew != NULL ? ", \"skew\"" : "");
  return FALSE;
}

/* apply("row" | "tile"): TRUE for "tile". */
static gboolean
apply_knob(const char *op, const TsSchedPoint *point, gboolean next, gboolean *tiled,
           GError **error)
{
  const char *how = ts_sched_point_get_str(point, "apply", "row");
  *tiled = g_strcmp0(how, "tile") == 0;
  if (!*tiled && g_strcmp0(how, "row") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: apply(\"%s\") is not one of \"row\", \"tile\"", op, how);
    return FALSE;
  }
  if (*tiled && next) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: apply(\"tile\") finds the statistics of all of a work item's rows before "
                "its tiles, so no pass carries the next row's: use pipeline(\"none\")",
                op);
    return FALSE;
  }
  return TRUE;
}

/* A per-column parameter of a row op (G, Bt) and the name its elements have in expressions. */
typedef struct {
  const char *buffer, *view;
} RowParam;

/* apply("tile"): the last pass of a work item runs in tiles of its BM rows by TN columns, each
 * tile's per-column parameters widened to f32 once, into thread-private rows (Gw, Btw), for
 * all BM rows. A 16-bit G and Bt are then converted once per BM rows instead of once per row:
 * those conversions bound the last pass of an f16 layernorm here. The rows' statistics (each
 * row's two values, kept in ST) come first, from passes that read the rows from memory;
 * the tiles read them again from L2.
 *   for i0 in range(0, M, BM) parallel:
 *     for i in range(i0, iend): <the row's statistics: the body returned>
 *     for jc in range(0, N, TN):
 *       Pw[0:nc] = P[jc:jc + nc] for each parameter P
 *       for i in range(i0, iend): <the row's part of the tile: *tile> */
static TsTileNode *
row_tiles(TsTileKernel *k, const TsSchedPoint *point, const RowParam *params, guint n_params,
          TsTileNode **tile)
{
  TsTileNode *par = row_team(k, point);
  ts_tile_kernel_define(k, "TN", TS_OP_ROW_TILE_N);
  for (guint p = 0; p < n_params; p++) {
    g_autofree char *w = g_strdup_printf("%sw", params[p].buffer);
    ts_tile_alloc_row(par, k, w, "TN", "one f32 column tile");
  }
  ts_tile_alloc(par, k, "ST", TS_MEM_SHARED, TS_DTYPE_F32, "2 * BM", TRUE,
                "statistics per row");
  TsTileNode *i0 = row_items_in(par);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, "min(i0 + BM, M)");
  TsTileNode *rows = ts_tile_for(i0, "i", "i0", "iend", "1", TS_FOR_SERIAL);
  TsTileNode *jc = ts_tile_for(i0, "jc", "0", "N", "TN", TS_FOR_SERIAL);
  ts_tile_let(jc, "nc", TS_DTYPE_INT32, "min(TN, N - jc)");
  for (guint p = 0; p < n_params; p++) {
    g_autofree char *w = g_strdup_printf("%sw", params[p].buffer);
    g_autofree char *wv = g_strdup_printf("%sw", params[p].view);
    TsTileNode *widen = ts_tile_map(jc, wv, params[p].view, "nc");
    ts_tile_node_add_view(widen, params[p].view, params[p].buffer, "jc");
    ts_tile_node_add_view(widen, wv, w, "0");
  }
  *tile = ts_tile_for(jc, "i", "i0", "iend", "1", TS_FOR_SERIAL);
  return rows;
}

/* The map of row i's part of a tile of apply("tile"), y = expr over its nc columns, reading
 * each parameter from its f32 tile. */
static TsTileNode *
row_tile_map(TsTileNode *tile, const char *expr, const RowParam *params, guint n_params)
{
  TsTileNode *map = ts_tile_map(tile, "y", expr, "nc");
  ts_tile_node_add_view(map, "x", "X", "i * N + jc");
  for (guint p = 0; p < n_params; p++) {
    g_autofree char *w = g_strdup_printf("%sw", params[p].buffer);
    ts_tile_node_add_view(map, params[p].view, w, "0");
  }
  ts_tile_node_add_view(map, "y", "Y", "i * N + jc");
  return map;
}

/* store("stream"): the map writing Y uses non-temporal stores. Y is written once and not read
 * back by the kernel, so where it does not fit the cache this saves the read of every line
 * before its write (a third of the traffic of a pass that reads X and writes Y) and keeps X's
 * next rows in cache; where Y fits, a consumer would find it there, so the tuner decides. */
gboolean
ts__op_store_stream(const char *op, const TsSchedPoint *point, gboolean *stream, GError **error)
{
  const char *how = ts_sched_point_get_str(point, "store", "cached");
  *stream = g_strcmp0(how, "stream") == 0;
  if (*stream || g_strcmp0(how, "cached") == 0)
    return TRUE;
  g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
              "%s: store(\"%s\") is not one of \"cached\", \"stream\"", op, how);
  return FALSE;
}

gboolean
ts__op_store_knob(const char *op, const TsSchedPoint *point, TsTileNode *map, GError **error)
{
  gboolean stream;
  if (!ts__op_store_stream(op, point, &stream, error))
    return FALSE;
  if (stream)
    ts_tile_map_set_stream(map);
  return TRUE;
}

/* ---- the CUDA row tile (ts_cuda_rows.cuh) ---- */

/* 64 floats of a row per thread: with the loop state and the gamma/beta vectors of the store,
 * the layernorm kernel stays under 128 registers (no spills even at 512 threads, whose launch
 * bound caps a thread at 128), and a 16384 x 8192 bf16 row fits one CTA of 4 warps. */
#define ROW_REGS TS_CUDA_ROW_REGS
/* Floats per thread in each column tile of a row streamed in several passes: 4 16-byte loads
 * in flight per thread for bf16 at VEC 8. */
#define STREAM_REGS 32

typedef struct {
  TsTileNode *g;     /* the grid body: what one CTA does */
  gboolean resident; /* the whole row tile in registers: X is read once */
  gboolean loaded;   /* resident and already loaded */
  const char *c0;    /* column of the current tile: "0" when resident, else the pass's loop var */
  char *tile;        /* template constants of the tile's layout */
  char *ttile;       /* the same with the storage dtype first */
  const char *dtype; /* the storage dtype's name */
  const char *red, *red2; /* the two shared reduction slots, or "nullptr" (one warp per row) */
} RowsGpu;

static void
rows_gpu_clear(RowsGpu *r)
{
  g_free(r->tile);
  g_free(r->ttile);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RowsGpu, rows_gpu_clear)

static gboolean
is_pow2(gint64 v)
{
  return v > 0 && (v & (v - 1)) == 0;
}

static gboolean
grid_fits(const char *op, gint64 gx, GError **error)
{
  if (gx <= G_MAXINT32)
    return TRUE;
  g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
              "%s: %" G_GINT64_FORMAT " tiles exceed the grid's 2^31 - 1 CTAs", op, gx);
  return FALSE;
}

gboolean
ts__cuda_map_tile(const char *op, gint64 n, gint64 bn, gint64 warps, gint64 vector,
                  TsTileKernel *k, TsCudaRowTile *t, GError **error)
{
  const gint64 threads = warps * 32;
  if (bn <= 0 || warps <= 0 || warps > 32 || !is_pow2(vector) || vector > 16 ||
      bn % (threads * vector) != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CUDA lowering needs warps in 1..32, a vector of 1, 2, 4, 8 or 16 "
                "elements and a block n that is a multiple of warps * 32 * vector",
                op);
    return FALSE;
  }
  *t = (TsCudaRowTile){
    .threads = threads,
    .tpr = threads,
    .vec = vector,
    .per = bn / (threads * vector),
    .gx = MAX(1, (n + bn - 1) / bn),
    .resident = TRUE,
  };
  if (!grid_fits(op, t->gx, error))
    return FALSE;
  ts_tile_kernel_define(k, "BN", bn);
  ts_tile_kernel_define(k, "THREADS", threads);
  ts_tile_kernel_define(k, "VEC", vector);
  ts_tile_kernel_define(k, "PER", t->per);
  ts_tile_kernel_define(k, "NCOLS", n);
  return TRUE;
}

/* The vector is the largest power of two up to the vector knob that divides n, so that every
 * row starts aligned to it. */
static gint64
row_vec(gint64 n, gint64 vector)
{
  gint64 vec = vector;
  while (vec > 1 && n % vec != 0)
    vec /= 2;
  return vec;
}

gboolean
ts__cuda_row_resident(gint64 n, gint64 bm, gint64 warps, gint64 vector)
{
  if (bm <= 0 || warps <= 0 || vector <= 0 || warps * 32 % bm != 0)
    return FALSE;
  const gint64 tpr = warps * 32 / bm, vec = row_vec(n, vector);
  return (n + tpr * vec - 1) / (tpr * vec) * vec <= ROW_REGS;
}

gboolean
ts__cuda_row_tile(const char *op, gint64 m, gint64 n, gint64 bm, gint64 warps, gint64 vector,
                  gboolean can_stream, TsTileKernel *k, TsCudaRowTile *t, GError **error)
{
  const gint64 threads = warps * 32;
  if (bm <= 0 || warps <= 0 || warps > 32 || !is_pow2(vector) || vector > 16 ||
      threads % bm != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CUDA lowering needs warps in 1..32, a vector of 1, 2, 4, 8 or 16 "
                "elements and a block m that divides warps * 32",
                op);
    return FALSE;
  }
  const gint64 tpr = threads / bm;
  if (tpr % 32 != 0 && !is_pow2(tpr)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: %" G_GINT64_FORMAT " threads per row (warps * 32 / block m) must be a power "
                "of two or a multiple of 32",
                op, tpr);
    return FALSE;
  }
  const gint64 vec = row_vec(n, vector);
  gint64 per = (n + tpr * vec - 1) / (tpr * vec);
  const gboolean resident = per * vec <= ROW_REGS;
  if (!resident && !can_stream) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: a row of %" G_GINT64_FORMAT " elements over %" G_GINT64_FORMAT " threads "
                "does not fit in registers (%d floats a thread at most): more warps or a "
                "smaller block m",
                op, n, tpr, ROW_REGS);
    return FALSE;
  }
  if (!resident)
    per = MAX(1, STREAM_REGS / vec);
  *t = (TsCudaRowTile){
    .threads = threads,
    .tpr = tpr,
    .vec = vec,
    .per = per,
    .gx = MAX(1, (m + bm - 1) / bm),
    .resident = resident,
  };
  if (!grid_fits(op, t->gx, error))
    return FALSE;
  ts_tile_kernel_define(k, "BM", bm);
  ts_tile_kernel_define(k, "WARPS", warps);
  ts_tile_kernel_define(k, "THREADS", threads);
  ts_tile_kernel_define(k, "VEC", vec);
  ts_tile_kernel_define(k, "PER", per);
  ts_tile_kernel_define(k, "COLS", per * tpr * vec);
  ts_tile_kernel_define(k, "NCOLS", n);
  return TRUE;
}

/* The grid of a row op: ceil(M / BM) CTAs of warps * 32 threads, the register tile x and the
 * reduction slots, and r0, the CTA's first row. */
static gboolean
rows_gpu_begin(const char *op, const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
               RowsGpu *r, GError **error)
{
  const gint64 W = KNOB("warps");
  const TsShape *s = ts_op_instance_shape(inst);
  TsCudaRowTile t;
  if (!ts__cuda_row_tile(op, ts_shape_get(s, "M"), ts_shape_get(s, "N"), KNOB("BM"), W,
                         KNOB("vector"), TRUE, k, &t, error))
    return FALSE;
  const gint64 threads = t.threads, tpr = t.tpr, gx = t.gx;
  r->resident = t.resident;
  r->loaded = FALSE;
  r->c0 = "0";
  r->tile = g_strdup("BM=BM,THREADS=THREADS,VEC=VEC,COLS=COLS,NCOLS=NCOLS");
  r->dtype = ts_dtype_name(ts_op_instance_dtype(inst)->storage);
  r->ttile = g_strdup_printf("T=%s,%s", r->dtype, r->tile);
  /* A row within one warp is reduced by shuffles alone; across warps through shared memory. */
  gboolean shared = tpr > 32;
  r->g = ts_tile_grid(k->body, gx, 1, 1, threads, shared ? 2 * W * 4 : 0);
  ts_tile_alloc(r->g, k, "x", TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                r->resident ? "the thread's part of its row, vector p at column "
                              "(p * THREADS / BM + t) * VEC, t its rank in the row"
                            : "the thread's part of a COLS-wide column tile of its row");
  if (shared)
    ts_tile_alloc(r->g, k, "red", TS_MEM_SHARED, TS_DTYPE_F32, "2 * WARPS", FALSE,
                  "two slots of one partial per warp, used alternately by consecutive reductions");
  r->red = shared ? "red" : "nullptr";
  r->red2 = shared ? "red + WARPS" : "nullptr";
  ts_tile_let(r->g, "r0", TS_DTYPE_INT32, "bx * BM");
  return TRUE;
}

/* Opens a pass over the CTA's rows and returns the node its body goes in, with X's tile in x.
 * Resident: the grid body, x loaded by the first pass only (later passes see what earlier ones
 * left in x). Streamed: a loop over column tiles that reloads x. */
static TsTileNode *
rows_gpu_pass(RowsGpu *r, const char *X)
{
  TsTileNode *body = r->g;
  if (r->resident) {
    if (r->loaded)
      return body;
    r->loaded = TRUE;
  } else {
    body = ts_tile_for(r->g, "c0", "0", "N", "COLS", TS_FOR_SERIAL);
    r->c0 = "c0";
  }
  ts_tile_intrinsic(body, "rows_load", r->ttile, "x", X, "r0", r->c0, "M", "N", NULL);
  return body;
}

static void
rows_gpu_accum(RowsGpu *r, TsTileNode *body, const char *op, const char *var)
{
  g_autofree char *p = g_strdup_printf("OP=%s,%s", op, r->tile);
  ts_tile_intrinsic(body, "rows_accum", p, var, "x", r->c0, NULL);
}

static void
rows_gpu_allreduce(RowsGpu *r, const char *op, const char *var, const char *slot)
{
  g_autofree char *p = g_strdup_printf("OP=%s,BM=BM,THREADS=THREADS", op);
  ts_tile_intrinsic(r->g, "rows_allreduce", p, var, slot, NULL);
}

static void
rows_gpu_store(RowsGpu *r, TsTileNode *body, const char *scale, const char *gamma, const char *beta)
{
  ts_tile_intrinsic(body, "rows_store", r->ttile, "Y", "r0", r->c0, "M", "x", scale, gamma, beta,
                    NULL);
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

static char *
saxpy_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  ts_ref_saxpy(ts_op_instance_dtype(inst)->storage, ts__op_instance_float(inst, 0), in[0], in[1],
               out, ts_shape_get(ts_op_instance_shape(inst), "N"));
  return NULL;
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
  return ts__op_store_knob("saxpy", point, map, error);
}

/* The vector is cut in BN-element tiles, one per CTA, each one row tile of the rows
 * primitives: both inputs in registers, a fused multiply-add, one store. A last partial vector
 * (N not a multiple of VEC) is read and written element by element. */
static gboolean
saxpy_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                 GError **error)
{
  TsCudaRowTile t;
  if (!ts__cuda_map_tile("saxpy", ts_shape_get(ts_op_instance_shape(inst), "N"), KNOB("BN"),
                         KNOB("warps"), KNOB("vector"), k, &t, error))
    return FALSE;
  const gint64 threads = t.threads, gx = t.gx;
  g_autofree char *tile = g_strdup_printf("T=%s,BM=1,THREADS=THREADS,VEC=VEC,COLS=BN,NCOLS=NCOLS",
                                          ts_dtype_name(ts_op_instance_dtype(inst)->storage));
  TsTileNode *g = ts_tile_grid(k->body, gx, 1, 1, threads, 0);
  ts_tile_alloc(g, k, "x", TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE,
                "vector p at element (p * THREADS + thread) * VEC of the tile");
  ts_tile_alloc(g, k, "y", TS_MEM_REGISTER, TS_DTYPE_F32, "PER * VEC", FALSE, "as x");
  ts_tile_let(g, "i0", TS_DTYPE_INT32, "bx * BN");
  ts_tile_intrinsic(g, "rows_load", tile, "x", "X", "0", "i0", "1", "N", NULL);
  ts_tile_intrinsic(g, "rows_load", tile, "y", "Y", "0", "i0", "1", "N", NULL);
  ts_tile_intrinsic(g, "rows_axpy", NULL, "y", "alpha", "x", NULL);
  ts_tile_intrinsic(g, "rows_store", tile, "Z", "0", "i0", "1", "y", "1.0f", "nullptr", "nullptr",
                    NULL);
  return TRUE;
}

/* ---- how each kernel sweeps its rows (ts_op_instance_row_work, for the cost model) ---- */

/* M rows of N: `cpu` reads of each row on the CPU; on CUDA one when the row tile holds the row
 * in registers, else `streamed`, a pass over memory for each of the kernel's sweeps. */
static gboolean
rows_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda, double cpu,
          double streamed, TsOpRowWork *w)
{
  const TsShape *s = ts_op_instance_shape(inst);
  w->rows = DIM(s, "M");
  w->cols = DIM(s, "N");
  w->passes = !cuda ? cpu
              : ts__cuda_row_resident(ts_shape_get(s, "N"), KNOB("BM"), KNOB("warps"),
                                      KNOB("vector"))
                ? 1
                : streamed;
  return cpu > 0;
}

static gboolean
saxpy_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda, TsOpRowWork *w)
{
  (void)point, (void)cuda;
  *w = (TsOpRowWork){.rows = 1, .cols = DIM(ts_op_instance_shape(inst), "N"), .passes = 1};
  return TRUE;
}

static gboolean
reduce_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda, TsOpRowWork *w)
{
  return rows_work(inst, point, cuda, 1, 1, w);
}

/* The CPU's softmax(): online and stored read a row twice, max_first three times; stored reads
 * its row of exps a third time. Exps an element: online 3, max_first 2, stored 1. Streamed on
 * CUDA: the online pass, then the output's; an exp in each. */
static gboolean
softmax_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda, TsOpRowWork *w)
{
  const char *how = ts_sched_point_get_str(point, "softmax", "online");
  const gboolean online = g_strcmp0(how, "online") == 0, stored = g_strcmp0(how, "stored") == 0;
  const double cpu = online ? 2 : stored || g_strcmp0(how, "max_first") == 0 ? 3 : 0;
  if (!rows_work(inst, point, cuda, cpu, 2, w))
    return FALSE;
  const gboolean fast = g_strcmp0(ts_sched_point_get_str(point, "math", "exact"), "fast") == 0;
  w->exps = cuda ? (w->passes > 1 ? 2 : 1) : online ? 3 : stored ? 1 : 2;
  w->fast_exp = fast;
  w->skewed = !cuda && g_strcmp0(ts_sched_point_get_str(point, "pipeline", "none"), "skew") == 0;
  return TRUE;
}

/* The mean, the centred sum of squares, the output. */
static gboolean
layernorm_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda,
               TsOpRowWork *w)
{
  return rows_work(inst, point, cuda, 3, 3, w);
}

static gboolean
rmsnorm_work(const TsOpInstance *inst, const TsSchedPoint *point, gboolean cuda, TsOpRowWork *w)
{
  return rows_work(inst, point, cuda, 2, 2, w);
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
  /* Z is written once and not read back: store("stream") spares the read of each of its
   * lines before the write (a third of the traffic where Z does not fit the cache). */
  .cpu_space = "block(n=[4096,16384,65536]).vector([4,8,16]).threads([1,2])"
               ".store([\"cached\", \"stream\"]).where(vector <= simd_floats)",
  .cpu_default = "block(n=16384).vector(8).threads(2).store(\"cached\")",
  .flops = saxpy_flops,
  .bytes = saxpy_bytes,
  .row_work = saxpy_work,
  .reference = saxpy_reference,
  .lower_cpu = saxpy_lower_cpu,
  /* At most 32 floats of each input per thread (BN <= 32 * threads): both tiles stay in
   * registers. */
  .cuda_space = "block(n=[2048,4096,8192]).warps([4,8]).vector([4,8])"
                ".where(BN % (warps * 32 * vector) == 0, BN <= 32 * warps * 32)",
  .cuda_default = "block(n=4096).warps(8).vector(8)",
  .lower_cuda = saxpy_lower_cuda,
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

static char *
reduce_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_reduce_sum(ts_op_instance_dtype(inst)->storage, in[0], out, ts_shape_get(s, "M"),
                    ts_shape_get(s, "N"));
  return NULL;
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

static gboolean
reduce_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                  GError **error)
{
  g_auto(RowsGpu) r = {0};
  if (!rows_gpu_begin("reduce_sum", inst, point, k, &r, error))
    return FALSE;
  ts_tile_let(r.g, "s", TS_DTYPE_F32, "0.0f");
  rows_gpu_accum(&r, rows_gpu_pass(&r, "X"), "ts_sum", "s");
  rows_gpu_allreduce(&r, "ts_sum", "s", r.red);
  g_autofree char *p = g_strdup_printf("T=%s,BM=BM,THREADS=THREADS", r.dtype);
  ts_tile_intrinsic(r.g, "rows_store_scalar", p, "Y", "r0", "M", "s", NULL);
  return TRUE;
}

#define ROW_SPACE "block(m=[1,4,16]).vector([4,8,16]).threads([1,2]).where(vector <= simd_floats)"
#define ROW_DEFAULT "block(m=4).vector(8).threads(2)"
/* Row ops whose output is a matrix as large as X: how it is written is a knob. */
#define ROW_MAP_SPACE                                                                              \
  "block(m=[1,4,16]).vector([4,8,16]).threads([1,2]).store([\"cached\", \"stream\"])"          \
  ".pipeline([\"none\", \"next\"]).where(vector <= simd_floats)"
#define ROW_MAP_DEFAULT "block(m=4).vector(8).threads(2).store(\"cached\").pipeline(\"next\")"
/* layernorm: also how G and Bt are applied, row by row or in tiles of the work item's rows
 * (apply("tile"), which has no pipeline, and needs rows to share a tile with). rmsnorm has
 * no such knob: with G alone the tiles were 0.8-0.95x its best rows (f16, 4096 x 4096, one
 * and two threads of Zen 4), which read X once from memory where the tiles read it twice. */
#define LAYERNORM_SPACE                                                                            \
  "block(m=[1,4,16]).vector([4,8,16]).threads([1,2]).store([\"cached\", \"stream\"])"          \
  ".pipeline([\"none\", \"next\"]).apply([\"row\", \"tile\"]).jam([1, 2])"                      \
  ".where(vector <= simd_floats, apply == \"row\" || pipeline == \"none\","                     \
  " apply == \"row\" || BM > 1, jam == 1 || pipeline == \"next\", jam == 1 || BM > 1)"
#define LAYERNORM_DEFAULT ROW_MAP_DEFAULT ".apply(\"row\").jam(1)"
/* math("fast"): exp by a degree-4 polynomial (7e-6 relative), offered where the output is a
 * 16-bit float whose rounding (2^-8 or 2^-11) hides it. */
#define SOFTMAX_SPACE                                                                              \
  "block(m=[1,4,16]).vector([4,8,16]).threads([1,2])"                                              \
  ".softmax([\"online\", \"max_first\", \"stored\"]).math([\"exact\", \"fast\"])"                 \
  ".store([\"cached\", \"stream\"]).pipeline([\"none\", \"next\", \"skew\"])" \
  ".where(vector <= simd_floats, math == \"exact\" || elem_bytes == 2,"                           \
  " pipeline == \"none\" || softmax != \"online\", pipeline != \"skew\" || softmax == \"stored\")"
/* stored: at 4096 x 4096 on one core 3.6x online's speed in f32 and 1.7x max_first's in bf16
 * (its row of exps stays in L1/L2 up to rows of ~64 K floats; longer rows are the tuner's);
 * pipeline("none"), not the faster "skew", because a default fills the knobs a partial
 * schedule leaves out, and "skew" would make softmax("max_first") alone an invalid point. */
#define SOFTMAX_DEFAULT                                                                            \
  "block(m=4).vector(8).threads(2).softmax(\"stored\").math(\"exact\").store(\"cached\")"          \
  ".pipeline(\"none\")"

/* Every point keeps its row tile within ROW_REGS floats a thread, or has one row a CTA (the
 * streamed fallback for rows too long for any CTA's registers): N * BM <= ROW_REGS * 32 *
 * warps. */
#define ROW_CUDA_SPACE                                                                             \
  "block(m=[1,2,4,16]).warps([4,8,16]).vector([4,8])"                                              \
  ".where(warps * 32 % BM == 0, BM == 1 || N * BM <= " G_STRINGIFY(ROW_REGS) " * 32 * warps)"
/* 16384 x 8192 bf16: 256 threads a row, 4 16-byte loads each, 32 registers of row. */
#define ROW_CUDA_DEFAULT "block(m=1).warps(8).vector(8)"

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
  .row_work = reduce_work,
  .reference = reduce_reference,
  .lower_cpu = reduce_lower_cpu,
  .cuda_space = ROW_CUDA_SPACE,
  .cuda_default = ROW_CUDA_DEFAULT,
  .lower_cuda = reduce_lower_cuda,
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

static char *
softmax_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_softmax(ts_op_instance_dtype(inst)->storage, in[0], out, ts_shape_get(s, "M"),
                 ts_shape_get(s, "N"));
  return NULL;
}

/* softmax("stored") with pipeline("skew"): the three passes of three rows in one loop. Row
 * i's exps (from cache) are computed while row i + 1's max is taken (from memory) and row
 * i - 1 is written from its exps (to memory), so the pass bound by exp's arithmetic also
 * carries all of the memory traffic, spread evenly over it, rather than leaving it to passes
 * that only move data. Each thread keeps two rows of exps, this row's and the last one's, and
 * the last one's 1 / sum in R.
 *   for i0 in range(0, M, BM) parallel:
 *     m = max of row i0
 *     W[0] = exp(x - m) of row i0, its sum l, m = max of row i0 + 1; R[0] = 1 / l
 *     for i in range(i0 + 1, iend):
 *       rp = R[0]
 *       W[this] = exp(x - m) of row i, l, m = max of row i + 1, and Y[i - 1] = W[last] * rp
 *       R[0] = 1 / l
 *     Y[iend - 1] = W[last] * R[0]
 * The output is the same bytes as pipeline("none")'s. On two threads of Zen 4 at 4096 x 4096
 * f32, by hand, 1.1-1.3x the speed of the best "none" point (0.81-0.86x a copy); on one, where
 * the exps alone take longer than the memory traffic, ~1.03x. */
static gboolean
softmax_skewed(TsTileKernel *k, const TsSchedPoint *point, const char *e_xm, GError **error)
{
  gboolean stream;
  if (!ts__op_store_stream("softmax_safe", point, &stream, error))
    return FALSE;
  TsTileNode *par = row_team(k, point);
  ts_tile_alloc_row(par, k, "W", "2 * N", "two f32 rows: this row's exps and the last one's");
  ts_tile_alloc(par, k, "R", TS_MEM_REGISTER, TS_DTYPE_F32, "1", TRUE,
                "1 / the sum of the last row's exps");
  TsTileNode *i0 = row_items_in(par);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, "min(i0 + BM, M)");
  TsTileNode *first = ts_tile_reduce(i0, "m", "max", "x", "N");
  ts_tile_node_add_view(first, "x", "X", "i0 * N");
  for (int peeled = 1; peeled >= 0; peeled--) {
    TsTileNode *at = peeled ? i0 : ts_tile_for(i0, "i", "i0 + 1", "iend", "1", TS_FOR_SERIAL);
    const char *i = peeled ? "i0" : "i";
    g_autofree char *x = g_strdup_printf("%s * N", i);
    const char *w = peeled ? "0" : "(i - i0) % 2 * N";
    g_autofree char *xn = g_strdup_printf("min(%s + 1, iend - 1) * N", i);
    g_autofree char *ahead = g_strdup_printf("X + min(%s + 2, M - 1) * N", i);
    if (!peeled)
      ts_tile_let(at, "rp", TS_DTYPE_F32, "R[0]");
    TsTileNode *e = ts_tile_map(at, "w", e_xm, "N");
    ts_tile_map_set_sum(e, "l");
    ts_tile_map_add_carry(e, "m", "max", "xn");
    ts_tile_node_add_view(e, "x", "X", x);
    ts_tile_node_add_view(e, "w", "W", w);
    ts_tile_node_add_view(e, "xn", "X", xn);
    ts_tile_map_set_prefetch_l2(e, ahead);
    if (!peeled) {
      ts_tile_map_set_drain(e, "y", "wp * rp", stream);
      ts_tile_node_add_view(e, "wp", "W", "(i - i0 + 1) % 2 * N");
      ts_tile_node_add_view(e, "y", "Y", "(i - 1) * N");
    }
    ts_tile_set(at, "R", "0", "1.0f / l");
  }
  ts_tile_let(i0, "r", TS_DTYPE_F32, "R[0]");
  TsTileNode *map = ts_tile_map(i0, "y", "w * r", "N");
  ts_tile_node_add_view(map, "w", "W", "(iend - 1 - i0) % 2 * N");
  ts_tile_node_add_view(map, "y", "Y", "(iend - 1) * N");
  if (stream)
    ts_tile_map_set_stream(map);
  return TRUE;
}

static gboolean
softmax_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                  GError **error)
{
  if (!check_knobs("softmax_safe", KNOB("BM"), KNOB("vector"), KNOB("threads"), error))
    return FALSE;
  /* On a CPU softmax is bound by exp, not by memory, so the knob trades passes over a row
   * (which stays in cache at the sizes that matter) for exp evaluations per element:
   *   online     the running max and rescaled sum in one pass, then the output: 3 exps
   *   max_first  the max, the sum of exp(x - max), then the output: 2 exps
   *   stored     the max, w = exp(x - max) kept in an f32 row of the thread's own, its sum,
   *              then y = w / sum: 1 exp, and Y written once, whatever its dtype */
  const char *how = ts_sched_point_get_str(point, "softmax", "online");
  gboolean stored = g_strcmp0(how, "stored") == 0;
  if (!stored && g_strcmp0(how, "online") != 0 && g_strcmp0(how, "max_first") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "softmax_safe: softmax(\"%s\") is not one of \"online\", \"max_first\", "
                "\"stored\"", how);
    return FALSE;
  }
  const char *math = ts_sched_point_get_str(point, "math", "exact");
  if (g_strcmp0(math, "exact") != 0 && g_strcmp0(math, "fast") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "softmax_safe: math(\"%s\") is not one of \"exact\", \"fast\"", math);
    return FALSE;
  }
  gboolean next, skew;
  if (!ts__op_pipeline_knob("softmax_safe", point, &next, &skew, error))
    return FALSE;
  if (next && g_strcmp0(how, "online") == 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "softmax_safe: pipeline(\"next\") carries a row's max, which "
                "softmax(\"online\") does not compute apart: use \"max_first\" or \"stored\"");
    return FALSE;
  }
  if (skew && !stored) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "softmax_safe: pipeline(\"skew\") writes a row from the exps kept by the pass "
                "before, which only softmax(\"stored\") keeps: use \"stored\"");
    return FALSE;
  }
  /* into f16, the fast exp may read results below 2^-100 as 2^-100 and skip its range check
   * (ts_exp_fast_sub_row_h_f32): 1.06-1.12x on a Zen 3 core, 1.5x with causal masks, same
   * output bits (docs/DESIGN.md) */
  const gboolean into_f16 = ts_op_instance_dtype(inst)->storage == TS_DTYPE_F16;
  const char *e_xm = g_strcmp0(math, "fast") != 0 ? "exp(x - m)"
                     : into_f16                   ? "exp_fast_sub_h(x, m)"
                                                  : "exp_fast_sub(x, m)";
  if (skew)
    return softmax_skewed(k, point, e_xm, error);
  g_autofree char *e_xm_r = g_strdup_printf("%s * r", e_xm);
  TsTileNode *row;
  if (g_strcmp0(how, "online") == 0) {
    row = row_loop(k, point);
    TsTileNode *so = ts_tile_softmax_online(row, "m", "l", "x", "N");
    ts_tile_node_add_view(so, "x", "X", "i * N");
  } else {
    row = row_loop_first(k, point, next, stored ? "W" : NULL, "m", "max", "x");
  }
  TsTileNode *map;
  if (stored) {
    /* The exps and their sum in one pass. The next row of X is fetched during this pass, the
     * one bound by arithmetic, rather than during the last (bound by the stores). */
    TsTileNode *e = ts_tile_map(row, "w", e_xm, "N");
    ts_tile_map_set_sum(e, "l");
    ts_tile_node_add_view(e, "x", "X", "i * N");
    ts_tile_node_add_view(e, "w", "W", "0");
    if (!next)
      prefetch_next_row(e);
    ts_tile_let(row, "r", TS_DTYPE_F32, "1.0f / l");
    map = ts_tile_map(row, "y", "w * r", "N");
    ts_tile_node_add_view(map, "w", "W", "0");
  } else {
    if (g_strcmp0(how, "max_first") == 0) {
      TsTileNode *sum = ts_tile_reduce(row, "l", "sum", e_xm, "N");
      ts_tile_node_add_view(sum, "x", "X", "i * N");
    }
    ts_tile_let(row, "r", TS_DTYPE_F32, "1.0f / l");
    map = ts_tile_map(row, "y", e_xm_r, "N");
    ts_tile_node_add_view(map, "x", "X", "i * N");
  }
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  if (next || !stored)
    row_last_map(map, next, "m", "max", "xn");
  return ts__op_store_knob("softmax_safe", point, map, error);
}

/* Resident: max, x = exp(x - max), sum, store x / sum. Streamed: one online pass for the max
 * and the rescaled sum, one to write. */
static gboolean
softmax_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                   GError **error)
{
  g_auto(RowsGpu) r = {0};
  if (!rows_gpu_begin("softmax_safe", inst, point, k, &r, error))
    return FALSE;
  ts_tile_let(r.g, "m", TS_DTYPE_F32, "ts_max::init()");
  ts_tile_let(r.g, "l", TS_DTYPE_F32, "0.0f");
  TsTileNode *pass = rows_gpu_pass(&r, "X");
  if (r.resident) {
    rows_gpu_accum(&r, pass, "ts_max", "m");
    rows_gpu_allreduce(&r, "ts_max", "m", r.red);
    ts_tile_intrinsic(r.g, "rows_map", "F=ts_exp_sub", "x", "m", NULL);
    rows_gpu_accum(&r, r.g, "ts_sum", "l");
    rows_gpu_allreduce(&r, "ts_sum", "l", r.red2);
  } else {
    ts_tile_intrinsic(pass, "rows_accum_softmax", r.tile, "m", "l", "x", "c0", NULL);
    ts_tile_intrinsic(r.g, "rows_allreduce_softmax", "BM=BM,THREADS=THREADS", "m", "l", r.red,
                      NULL);
  }
  ts_tile_let(r.g, "rl", TS_DTYPE_F32, "1.0f / l");
  pass = rows_gpu_pass(&r, "X");
  if (!r.resident)
    ts_tile_intrinsic(pass, "rows_map", "F=ts_exp_sub", "x", "m", NULL);
  rows_gpu_store(&r, pass, "rl", "nullptr", "nullptr");
  return TRUE;
}

const TsOpDef ts__op_softmax_safe = {
  .name = "softmax_safe",
  .summary = "Y[M,N] = softmax over N of X, max-subtracted",
  .n_inputs = 1,
  .inputs = {{"X", "\"M\",\"N\"", -4.0, 4.0}},
  .output = {"Y", "\"M\",\"N\"", 0, 0},
  .dims = "M,N",
  .cpu_space = SOFTMAX_SPACE,
  .cpu_default = SOFTMAX_DEFAULT,
  .flops = softmax_flops,
  .bytes = rows_bytes,
  .row_work = softmax_work,
  .reference = softmax_reference,
  .lower_cpu = softmax_lower_cpu,
  .cuda_space = ROW_CUDA_SPACE,
  .cuda_default = ROW_CUDA_DEFAULT,
  .lower_cuda = softmax_lower_cuda,
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

static char *
layernorm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_layernorm(ts_op_instance_dtype(inst)->storage, in[0], in[1], in[2],
                   ts__op_instance_float(inst, 0), out, ts_shape_get(s, "M"), ts_shape_get(s, "N"));
  return NULL;
}

/* Row i's mean from its sum s, then q, the sum of squares of the centred row. Two-pass
 * variance: E[(x - mean)^2] does not cancel catastrophically as E[x^2] - mean^2 does for rows
 * with a large mean — the "safe" in the name. */
static void
layernorm_variance(TsTileNode *row)
{
  ts_tile_let(row, "mean", TS_DTYPE_F32, "s / (float)N");
  TsTileNode *q = ts_tile_reduce(row, "q", "sum", "(x - mean) * (x - mean)", "N");
  ts_tile_node_add_view(q, "x", "X", "i * N");
}

/* jam(2): the rows of a work item in pairs, row i and i1 = i + 1 (the item's last row paired
 * with itself where it has an odd count: computed twice, stored twice, the same bytes). Each
 * row's variance pass as with jam(1), then one last pass for both, which loads G and Bt once
 * for the two rows and carries the sums of the next pair, prefetching the pair after it.
 *   for i0 in range(0, M, BM) parallel:
 *     s, s2 = sums of rows i0 and min(i0 + 1, iend - 1)
 *     for i in range(i0, iend, 2):
 *       mean, rstd of row i; mean2, rstd2 of row i1
 *       y = (x - mean) * rstd * g + b and y2 = (x2 - mean2) * rstd2 * g + b,
 *         carry s = sum of row i + 2, s2 = sum of row i + 3
 * Rows are 16 KB in f32 at N = 4096, so a row's last pass streams x, the next row, G and Bt
 * (four rows' worth) through a 32 KB L1: pairing them cut that to three. By hand, at 4096 x
 * 4096 f32 on Zen 4, 1.13-1.19x jam(1)'s speed on one thread and 1.15x on two. */
static gboolean
layernorm_jammed(TsTileKernel *k, const TsSchedPoint *point, GError **error)
{
  gboolean stream;
  if (!ts__op_store_stream("layernorm_safe", point, &stream, error))
    return FALSE;
  TsTileNode *i0 = row_items(k, point, NULL);
  ts_tile_let(i0, "iend", TS_DTYPE_INT32, "min(i0 + BM, M)");
  TsTileNode *s = ts_tile_reduce(i0, "s", "sum", "x", "N");
  ts_tile_node_add_view(s, "x", "X", "i0 * N");
  TsTileNode *s2 = ts_tile_reduce(i0, "s2", "sum", "x", "N");
  ts_tile_node_add_view(s2, "x", "X", "min(i0 + 1, iend - 1) * N");
  TsTileNode *row = ts_tile_for(i0, "i", "i0", "iend", "2", TS_FOR_SERIAL);
  ts_tile_let(row, "i1", TS_DTYPE_INT32, "min(i + 1, iend - 1)");
  layernorm_variance(row);
  ts_tile_let(row, "rstd", TS_DTYPE_F32, "1.0f / sqrt(q / (float)N + eps)");
  ts_tile_let(row, "mean2", TS_DTYPE_F32, "s2 / (float)N");
  TsTileNode *q2 = ts_tile_reduce(row, "q2", "sum", "(x - mean2) * (x - mean2)", "N");
  ts_tile_node_add_view(q2, "x", "X", "i1 * N");
  ts_tile_let(row, "rstd2", TS_DTYPE_F32, "1.0f / sqrt(q2 / (float)N + eps)");
  TsTileNode *map = ts_tile_map(row, "y", "(x - mean) * rstd * g + b", "N");
  ts_tile_map_set_drain(map, "y2", "(x2 - mean2) * rstd2 * g + b", stream);
  ts_tile_map_add_carry(map, "s", "sum", "xn");
  ts_tile_map_add_carry(map, "s2", "sum", "xn2");
  ts_tile_node_add_view(map, "x", "X", "i * N");
  ts_tile_node_add_view(map, "x2", "X", "i1 * N");
  ts_tile_node_add_view(map, "g", "G", "0");
  ts_tile_node_add_view(map, "b", "Bt", "0");
  ts_tile_node_add_view(map, "xn", "X", "min(i + 2, iend - 1) * N");
  ts_tile_node_add_view(map, "xn2", "X", "min(i + 3, iend - 1) * N");
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  ts_tile_node_add_view(map, "y2", "Y", "i1 * N");
  ts_tile_map_set_prefetch_l2(map, "X + min(i + 4, M - 1) * N");
  ts_tile_map_add_prefetch(map, "X + min(i + 5, M - 1) * N");
  if (stream)
    ts_tile_map_set_stream(map);
  return TRUE;
}

static gboolean
layernorm_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                    GError **error)
{
  gboolean next, tiled;
  if (!check_knobs("layernorm_safe", KNOB("BM"), KNOB("vector"), KNOB("threads"), error) ||
      !ts__op_pipeline_knob("layernorm_safe", point, &next, NULL, error) ||
      !apply_knob("layernorm_safe", point, next, &tiled, error))
    return FALSE;
  const gint64 jam = ts_sched_point_get_int(point, "jam", 1);
  if (jam != 1 && jam != 2) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "layernorm_safe: jam(%" G_GINT64_FORMAT ") is not 1 or 2 rows a pass", jam);
    return FALSE;
  }
  if (jam == 2 && !next) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "layernorm_safe: jam(2) carries the next pair's sums in the pair's last pass: "
                "use pipeline(\"next\")");
    return FALSE;
  }
  if (jam == 2)
    return layernorm_jammed(k, point, error);
  if (tiled) {
    static const RowParam params[] = {{"G", "g"}, {"Bt", "b"}};
    TsTileNode *tile;
    TsTileNode *row = row_tiles(k, point, params, G_N_ELEMENTS(params), &tile);
    TsTileNode *s = ts_tile_reduce(row, "s", "sum", "x", "N");
    ts_tile_node_add_view(s, "x", "X", "i * N");
    layernorm_variance(row);
    ts_tile_set(row, "ST", "2 * (i - i0)", "mean");
    ts_tile_set(row, "ST", "2 * (i - i0) + 1", "1.0f / sqrt(q / (float)N + eps)");
    ts_tile_let(tile, "mean", TS_DTYPE_F32, "ST[2 * (i - i0)]");
    ts_tile_let(tile, "rstd", TS_DTYPE_F32, "ST[2 * (i - i0) + 1]");
    TsTileNode *map = row_tile_map(tile, "(x - mean) * rstd * g + b", params,
                                   G_N_ELEMENTS(params));
    return ts__op_store_knob("layernorm_safe", point, map, error);
  }
  TsTileNode *row = row_loop_first(k, point, next, NULL, "s", "sum", "x");
  layernorm_variance(row);
  ts_tile_let(row, "rstd", TS_DTYPE_F32, "1.0f / sqrt(q / (float)N + eps)");
  TsTileNode *map = ts_tile_map(row, "y", "(x - mean) * rstd * g + b", "N");
  row_last_map(map, next, "s", "sum", "xn");
  ts_tile_node_add_view(map, "x", "X", "i * N");
  ts_tile_node_add_view(map, "g", "G", "0");
  ts_tile_node_add_view(map, "b", "Bt", "0");
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  return ts__op_store_knob("layernorm_safe", point, map, error);
}

/* Two-pass variance as on the CPU: the mean, then the sum of squares of the centred row
 * (resident: centred once, in registers). */
static gboolean
layernorm_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                     GError **error)
{
  g_auto(RowsGpu) r = {0};
  if (!rows_gpu_begin("layernorm_safe", inst, point, k, &r, error))
    return FALSE;
  ts_tile_let(r.g, "s", TS_DTYPE_F32, "0.0f");
  rows_gpu_accum(&r, rows_gpu_pass(&r, "X"), "ts_sum", "s");
  rows_gpu_allreduce(&r, "ts_sum", "s", r.red);
  ts_tile_let(r.g, "mean", TS_DTYPE_F32, "s / (float)N");
  ts_tile_let(r.g, "q", TS_DTYPE_F32, "0.0f");
  TsTileNode *pass = rows_gpu_pass(&r, "X");
  ts_tile_intrinsic(pass, "rows_map", "F=ts_sub", "x", "mean", NULL);
  rows_gpu_accum(&r, pass, "ts_sumsq", "q");
  rows_gpu_allreduce(&r, "ts_sum", "q", r.red2);
  ts_tile_let(r.g, "rstd", TS_DTYPE_F32, "rsqrtf(q / (float)N + eps)");
  pass = rows_gpu_pass(&r, "X");
  if (!r.resident)
    ts_tile_intrinsic(pass, "rows_map", "F=ts_sub", "x", "mean", NULL);
  rows_gpu_store(&r, pass, "rstd", "G", "Bt");
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
  .cpu_space = LAYERNORM_SPACE,
  .cpu_default = LAYERNORM_DEFAULT,
  .flops = layernorm_flops,
  .bytes = layernorm_bytes,
  .row_work = layernorm_work,
  .reference = layernorm_reference,
  .lower_cpu = layernorm_lower_cpu,
  .cuda_space = ROW_CUDA_SPACE,
  .cuda_default = ROW_CUDA_DEFAULT,
  .lower_cuda = layernorm_lower_cuda,
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

static char *
rmsnorm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_rmsnorm(ts_op_instance_dtype(inst)->storage, in[0], in[1], ts__op_instance_float(inst, 0),
                 out, ts_shape_get(s, "M"), ts_shape_get(s, "N"));
  return NULL;
}

static gboolean
rmsnorm_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                  GError **error)
{
  gboolean next;
  if (!check_knobs("rmsnorm_safe", KNOB("BM"), KNOB("vector"), KNOB("threads"), error) ||
      !ts__op_pipeline_knob("rmsnorm_safe", point, &next, NULL, error))
    return FALSE;
  TsTileNode *row = row_loop_first(k, point, next, NULL, "q", "sum", "x * x");
  ts_tile_let(row, "rstd", TS_DTYPE_F32, "1.0f / sqrt(q / (float)N + eps)");
  TsTileNode *map = ts_tile_map(row, "y", "x * rstd * g", "N");
  row_last_map(map, next, "q", "sum", "xn * xn");
  ts_tile_node_add_view(map, "x", "X", "i * N");
  ts_tile_node_add_view(map, "g", "G", "0");
  ts_tile_node_add_view(map, "y", "Y", "i * N");
  return ts__op_store_knob("rmsnorm_safe", point, map, error);
}

static gboolean
rmsnorm_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                   GError **error)
{
  g_auto(RowsGpu) r = {0};
  if (!rows_gpu_begin("rmsnorm_safe", inst, point, k, &r, error))
    return FALSE;
  ts_tile_let(r.g, "q", TS_DTYPE_F32, "0.0f");
  rows_gpu_accum(&r, rows_gpu_pass(&r, "X"), "ts_sumsq", "q");
  rows_gpu_allreduce(&r, "ts_sum", "q", r.red);
  ts_tile_let(r.g, "rstd", TS_DTYPE_F32, "rsqrtf(q / (float)N + eps)");
  rows_gpu_store(&r, rows_gpu_pass(&r, "X"), "rstd", "G", "nullptr");
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
  .cpu_space = ROW_MAP_SPACE,
  .cpu_default = ROW_MAP_DEFAULT,
  .flops = rmsnorm_flops,
  .bytes = rmsnorm_bytes,
  .row_work = rmsnorm_work,
  .reference = rmsnorm_reference,
  .lower_cpu = rmsnorm_lower_cpu,
  .cuda_space = ROW_CUDA_SPACE,
  .cuda_default = ROW_CUDA_DEFAULT,
  .lower_cuda = rmsnorm_lower_cuda,
};
