/* op-gemm.c — gemm: C[M,N] = A[M,K] · B[K,N], f32 or 16-bit storage with f32 accumulation.
 *
 * CPU lowering in the BLIS structure (Van Zee & van de Geijn): NC×KC panels of B and MC×KC
 * blocks of A are packed into cache-resident buffers (B for the L3/L2, A for the L2), and an
 * MR×NR register micro-tile walks them. Schedule knobs: block(m=MC, n=NC, k=KC),
 * micro(m=MR, n=NR), vector (floats per SIMD register), unroll (k-loop), threads. 16-bit
 * inputs are widened to f32 while packing ("converted in the kernel"); a 16-bit output is
 * accumulated in an f32 workspace and rounded once at the end, so K-blocking never rounds
 * partial sums. */
#include "ts-op-private.h"

#include "ts-numerics.h"

static double
gemm_flops(const TsShape *s)
{
  return 2.0 * ts_shape_get(s, "M") * ts_shape_get(s, "N") * ts_shape_get(s, "K");
}

static double
gemm_bytes(const TsShape *s, double elem)
{
  double m = ts_shape_get(s, "M"), n = ts_shape_get(s, "N"), k = ts_shape_get(s, "K");
  return elem * (m * k + k * n + m * n);
}

/* fp8 B is stored K-major, [N, K] row-major (K contiguous; logically still B[K, N]): the
 * layout cuBLASLt's and torch._scaled_mm's fp8 GEMMs take, because Hopper's fp8 wgmma reads
 * only K-major operands from shared memory, so a TMA box of it is the tile the tensor cores
 * want. 16-bit B stays [K, N], which wgmma reads transposed. */
static gboolean
gemm_b_kmajor(TsDtype dt)
{
  return ts_dtype_is_fp8(dt);
}

/* In full up to the instance's reference limit (2^31 multiply-adds by default, ~1 s); beyond
 * it, on a sample (ts_ref_gemm_sampled): whole rows and columns, the first and last of each
 * among them, and elements anywhere. Every element of the output is still scanned for NaN/Inf,
 * so an element the kernel never wrote fails wherever it is. A sample is sound for these
 * kernels because every tile of C runs the same instructions (its CTA differs, not its code):
 * what differs is the tails, which the last row and column cover, and the indexing of the
 * tiles, which the random rows, columns and elements land on all over C. */
static char *
gemm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  const gint64 m = ts_shape_get(s, "M"), n = ts_shape_get(s, "N"), k = ts_shape_get(s, "K");
  const TsDtype dt = ts_op_instance_dtype(inst)->storage;
  /* fp8: the product of the stored values, times both per-tensor scales (exact in f64 but for
   * the last bit): the reference of the dequantized inputs. */
  const double scale = ts__op_instance_input_scale(inst, 0) * ts__op_instance_input_scale(inst, 1);
  const gboolean full = (double)m * (double)n * (double)k <= inst->reference_limit;
  /* fp8 B is stored [N, K] (gemm_b_kmajor): the references take [K, N]. */
  g_autofree guint8 *bt = NULL;
  const void *b = in[1];
  if (gemm_b_kmajor(dt)) {
    const guint8 *src = in[1];
    bt = g_malloc((gsize)(k * n));
    for (gint64 j = 0; j < n; j++)
      for (gint64 p = 0; p < k; p++)
        bt[p * n + j] = src[j * k + p];
    b = bt;
  }
  if (full)
    ts_ref_gemm(dt, in[0], b, out, m, n, k);
  else
    ts_ref_gemm_sampled(dt, in[0], b, out, m, n, k,
                        ts__op_data_hash(in[0], (gsize)(m * k) * ts_numerics_elem_size(dt)));
  if (scale != 1.0)
    for (gint64 i = 0; i < m * n; i++)
      out[i] *= scale; /* NaN (not sampled) stays NaN */
  if (full)
    return NULL;
  return g_strdup_printf("%d rows, %d columns and %d random elements",
                         (int)MIN(m, TS_REF_GEMM_SAMPLE_ROWS), (int)MIN(n, TS_REF_GEMM_SAMPLE_COLS),
                         TS_REF_GEMM_SAMPLE_ELEMS);
}

#define KNOB(name) ts_sched_point_get_int(point, name, -1)

/* Elements of a packed panel per row or column for a depth of k (kc, or for the buffers the
 * most it can be, BK): k, its K-pairs' two halves, or whole 32-deep tile steps. */
static char *
panel_depth(TsTileDot dot, const char *k)
{
  switch (dot) {
  case TS_TILE_DOT_AMX:
    return g_strdup_printf("((%s + 31) / 32 * 32)", k);
  case TS_TILE_DOT_BF16:
    return g_strdup_printf("(2 * ((%s + 1) / 2))", k);
  case TS_TILE_DOT_FMA:
    break;
  }
  return g_strdup(k);
}

/* walk("tiles"): a program per BM x BN tile of C, as a kernel file's GEMM reads and as a GPU
 * runs it. Each worker takes whole tiles and walks K in BK slices, its micro-tiles
 * accumulating in the tile, which stays in the worker's cache across the K loop; the tile's
 * epilogue or rounding runs while it is still there. The panels walk instead passes over a
 * BN-wide column of C once per K block: with a GPU's 64-deep slices, four times as often as
 * with its own 256-deep ones, through memory.
 *
 * The slices' loads read A and B packed once, before the tiles, into the micro-kernels'
 * panels: A in blocks of BM rows, B of BN columns, each panel K deep, so a slice is an offset
 * into its panel. Packing each tile's slices as it goes would pack A N / BN times and B M / BM
 * times, converting 16-bit inputs each time: at 1024^3 with 128 x 128 tiles, 16 times the
 * inputs. The cost is M K + K N more panel
 * elements of memory. BM and BN need not be multiples of MR and NR: a tile's last micro-tiles
 * are its edges. */
static void
gemm_cpu_tiles(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
               TsTileDot dot, const char *bp_layout, const char *ap_layout)
{
  const gint64 MR = KNOB("MR"), NR = KNOB("NR"), V = KNOB("vector"), U = KNOB("unroll"),
               T = KNOB("threads");
  const TsDtype panel_dt = dot == TS_TILE_DOT_FMA ? TS_DTYPE_F32 : TS_DTYPE_BF16;
  const TsGemmEpilogue *epi = ts_op_instance_op(inst)->gemm_epilogue;
  TsTileNode *body = k->body;
  /* A block of BM rows is whole MR-row panels, the last one padded; so are B's. */
  g_autofree char *depth = panel_depth(dot, "K");
  g_autofree char *a_block = g_strdup_printf("((BM + MR - 1) / MR * MR * %s)", depth);
  g_autofree char *b_block = g_strdup_printf("((BN + NR - 1) / NR * NR * %s)", depth);
  g_autofree char *ap_size = g_strdup_printf("(M + BM - 1) / BM * %s", a_block);
  g_autofree char *bp_size = g_strdup_printf("(N + BN - 1) / BN * %s", b_block);
  ts_tile_alloc(body, k, "Ap", TS_MEM_GLOBAL, panel_dt, ap_size, FALSE, ap_layout);
  ts_tile_alloc(body, k, "Bp", TS_MEM_GLOBAL, panel_dt, bp_size, FALSE, bp_layout);
  TsTileNode *par = ts_tile_parallel(body, T);
  /* Each worker's accumulator: a tile's rows BN apart, not N, so that a power-of-two N does
   * not map them all to the same cache sets. */
  ts_tile_alloc(par, k, "Ct", TS_MEM_SHARED, TS_DTYPE_F32, "BM * BN", TRUE,
                "row-major f32 tile accumulator");
  ts_tile_let(par, "n_tm", TS_DTYPE_INT32, "(M + BM - 1) / BM");
  ts_tile_let(par, "n_tn", TS_DTYPE_INT32, "(N + BN - 1) / BN");
  /* The team packs a block at a time; each loop's end is a barrier. */
  TsTileNode *ia = ts_tile_for(par, "ib", "0", "n_tm", "1", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *adst = g_strdup_printf("Ap + ib * %s", a_block);
  TsTileNode *pa = ts_tile_pack(ia, 0, MR, "A + ib * BM * K", "K", "min(BM, M - ib * BM)", "K",
                                adst);
  ts_tile_set_dot(pa, dot);
  TsTileNode *jb = ts_tile_for(par, "jb", "0", "n_tn", "1", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *bdst = g_strdup_printf("Bp + jb * %s", b_block);
  const gboolean kmajor = gemm_b_kmajor(ts_op_instance_dtype(inst)->storage);
  TsTileNode *pb =
    kmajor ? ts_tile_pack(jb, 2, NR, "B + jb * BN * K", "K", "K", "min(BN, N - jb * BN)", bdst)
           : ts_tile_pack(jb, 1, NR, "B + jb * BN", "N", "K", "min(BN, N - jb * BN)", bdst);
  ts_tile_set_dot(pb, dot);
  /* Tiles in row order: the workers run along a row of C together, on one block of A. */
  TsTileNode *t = ts_tile_for(par, "t", "0", "n_tm * n_tn", "1", TS_FOR_PARALLEL_DYNAMIC);
  ts_tile_let(t, "ic", TS_DTYPE_INT32, "t / n_tn * BM");
  ts_tile_let(t, "jc", TS_DTYPE_INT32, "t % n_tn * BN");
  ts_tile_let(t, "mc", TS_DTYPE_INT32, "min(BM, M - ic)");
  ts_tile_let(t, "nc", TS_DTYPE_INT32, "min(BN, N - jc)");
  TsTileNode *pc = ts_tile_for(t, "pc", "0", "K", "BK", TS_FOR_SERIAL);
  ts_tile_let(pc, "kc", TS_DTYPE_INT32, "min(BK, K - pc)");
  /* A column of micro-tiles at a time: its B panel stays in L1 while the A panels stream. */
  TsTileNode *jr = ts_tile_for(pc, "jr", "0", "nc", "NR", TS_FOR_SERIAL);
  TsTileNode *ir = ts_tile_for(jr, "ir", "0", "mc", "MR", TS_FOR_SERIAL);
  const char *c = "Ct + ir * BN + jr";
  g_autofree char *ap =
    g_strdup_printf("Ap + t / n_tn * %s + ir * %s + pc * MR", a_block, depth);
  g_autofree char *bp =
    g_strdup_printf("Bp + t %% n_tn * %s + jr * %s + pc * NR", b_block, depth);
  TsTileNode *mma = ts_tile_mma(ir, MR, NR, V, U, c, "BN", ap, bp, "kc", "pc > 0",
                                "min(MR, mc - ir)", "min(NR, nc - jr)");
  ts_tile_set_dot(mma, dot);
  /* The finished tile into C, a row at a time: through the epilogue, rounded to C's dtype
   * (fp8 inputs' scales first), or copied. */
  TsTileNode *row = ts_tile_for(t, "i", "0", "mc", "1", TS_FOR_SERIAL);
  if (epi != NULL) {
    TsTileNode *map = ts_tile_map(row, "c_out", epi->cpu_expr, "nc");
    ts_tile_node_add_view(map, "acc", "Ct", "i * BN");
    for (guint v = 0; v < epi->n_vectors; v++)
      ts_tile_node_add_view(map, epi->views[v], epi->buffers[v], "jc");
    ts_tile_node_add_view(map, "c_out", "C", "(ic + i) * N + jc");
  } else {
    ts_tile_convert_scaled(row, "Ct + i * BN", "C + (ic + i) * N + jc", "nc",
                           ts_dtype_is_fp8(ts_op_instance_dtype(inst)->storage)
                             ? "scale_a * scale_b"
                             : NULL);
  }
}

static gboolean
gemm_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
               GError **error)
{
  const gint64 BM = KNOB("BM"), BN = KNOB("BN"), BK = KNOB("BK"), MR = KNOB("MR"),
               NR = KNOB("NR"), V = KNOB("vector"), U = KNOB("unroll"), T = KNOB("threads");
  if (BM <= 0 || BN <= 0 || BK <= 0 || MR <= 0 || NR <= 0 || V <= 0 || U <= 0 || T <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: the CPU lowering needs positive BM, BN, BK, MR, NR, vector, unroll and "
                "threads knobs");
    return FALSE;
  }
  const char *walk = ts_sched_point_get_str(point, "walk", "panels");
  const gboolean tiles = g_strcmp0(walk, "tiles") == 0;
  if (!tiles && g_strcmp0(walk, "panels") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: walk(\"%s\") is not one of \"panels\", \"tiles\"", walk);
    return FALSE;
  }
  if (!tiles && BM % MR != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: the CPU lowering needs BM a multiple of MR (got BM=%" G_GINT64_FORMAT
                ", MR=%" G_GINT64_FORMAT ")", BM, MR);
    return FALSE;
  }
  /* The cache blocks only bound loops and size buffers: read at run time (no slower, measured:
   * bf16 1024^3 at 144 x 4080 x 256, Zen 3, one thread), so a tune compiles one kernel per
   * micro-kernel shape and the points that differ in their blocks reuse it. So is the
   * micro-tile's shape, outside the micro-kernel (which has it compiled in): the loops around
   * it are then one text for every micro-kernel, which the CPU backend compiles once and links
   * with each (runtime/cpu/ts-cpu-pch.c). */
  ts_tile_kernel_launch_const(k, "BM", BM);
  ts_tile_kernel_launch_const(k, "BN", BN);
  ts_tile_kernel_launch_const(k, "BK", BK);
  ts_tile_kernel_launch_const(k, "MR", MR);
  ts_tile_kernel_launch_const(k, "NR", NR);
  ts_tile_kernel_define(k, "VEC", V);

  /* dot("bf16"): panels of bf16 K-pairs for vdpbf16ps instead of panels widened to f32; the
   * space offers it only for bf16 storage on AVX512_BF16 (bf16_dot), 16-float vectors.
   * dot("amx"): bf16 panels in 32-deep K steps for AMX tiles (amx_bf16), MR and NR whole
   * 16-row/16-column tiles, at most eight tile registers for C, A and B. */
  const char *dot_knob = ts_sched_point_get_str(point, "dot", "fma");
  const TsTileDot dot = g_strcmp0(dot_knob, "amx") == 0    ? TS_TILE_DOT_AMX
                        : g_strcmp0(dot_knob, "bf16") == 0 ? TS_TILE_DOT_BF16
                                                           : TS_TILE_DOT_FMA;
  if (dot == TS_TILE_DOT_FMA && g_strcmp0(dot_knob, "fma") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: dot(\"%s\") is not one of \"fma\", \"bf16\", \"amx\"", dot_knob);
    return FALSE;
  }
  const gboolean bf16_in = ts_op_instance_dtype(inst)->storage == TS_DTYPE_BF16;
  if (dot == TS_TILE_DOT_BF16 && (!bf16_in || V != 16 || NR % 16)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: dot(\"bf16\") needs bf16 storage, vector(16) and NR a multiple of 16");
    return FALSE;
  }
  if (dot == TS_TILE_DOT_AMX &&
      (!bf16_in || MR % 16 || NR % 16 || (MR / 16) * (NR / 16) + MR / 16 + NR / 16 > 8)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: dot(\"amx\") needs bf16 storage and a micro-tile of whole 16x16 tiles "
                "that fits the eight tile registers (16x16, 16x32, 32x16, 32x32, 16x48 or "
                "48x16; got %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ")", MR, NR);
    return FALSE;
  }
  /* The tiles walk's slices are offsets into K-deep panels: whole K-pairs or AMX steps. */
  if (tiles && dot != TS_TILE_DOT_FMA && BK % 32 != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: walk(\"tiles\") with dot(\"%s\") needs BK a multiple of 32 (got BK=%"
                G_GINT64_FORMAT ")", dot_knob, BK);
    return FALSE;
  }
  const TsDtype panel_dt = dot == TS_TILE_DOT_FMA ? TS_DTYPE_F32 : TS_DTYPE_BF16;
  g_autofree char *depth = panel_depth(dot, "kc");
  g_autofree char *block_depth = panel_depth(dot, "BK");
  const char *layout = dot == TS_TILE_DOT_AMX ? " in AMX tile steps"
                       : dot == TS_TILE_DOT_BF16 ? " of K-pairs"
                                                 : "";

  g_autofree char *bp_layout = g_strdup_printf("panel(NR)%s", layout);
  g_autofree char *ap_layout = g_strdup_printf("panel(MR)%s", layout);
  if (tiles) {
    gemm_cpu_tiles(inst, point, k, dot, bp_layout, ap_layout);
    return TRUE;
  }
  /* An epilogue (a kernel file's) maps the finished f32 accumulator into C: the product
   * accumulates in the workspace then, whatever C's dtype. */
  const TsGemmEpilogue *epi = ts_op_instance_op(inst)->gemm_epilogue;
  gboolean narrow_out = ts_op_instance_dtype(inst)->storage != TS_DTYPE_F32 || epi != NULL;
  TsTileNode *body = k->body;
  const char *cd = "C";
  if (narrow_out) {
    ts_tile_alloc(body, k, "Cw", TS_MEM_GLOBAL, TS_DTYPE_F32, "M * N", FALSE,
                  "row-major f32 accumulator");
    cd = "Cw";
  }
  /* Panels are padded to whole MR/NR widths, hence the extra NR and MR. */
  g_autofree char *bp_size = g_strdup_printf("%s * (BN + NR)", block_depth);
  g_autofree char *ap_size = g_strdup_printf("%s * (BM + MR)", block_depth);
  ts_tile_alloc(body, k, "Bp", TS_MEM_SHARED, panel_dt, bp_size, FALSE, bp_layout);
  TsTileNode *par = ts_tile_parallel(body, T);
  ts_tile_alloc(par, k, "Ap", TS_MEM_SHARED, panel_dt, ap_size, TRUE, ap_layout);
  TsTileNode *jc = ts_tile_for(par, "jc", "0", "N", "BN", TS_FOR_SERIAL);
  ts_tile_let(jc, "nc", TS_DTYPE_INT32, "min(BN, N - jc)");
  ts_tile_let(jc, "n_jr", TS_DTYPE_INT32, "(nc + NR - 1) / NR");
  TsTileNode *pc = ts_tile_for(jc, "pc", "0", "K", "BK", TS_FOR_SERIAL);
  ts_tile_let(pc, "kc", TS_DTYPE_INT32, "min(BK, K - pc)");
  /* The team packs the B block together, a panel at a time to whoever is free; the loop's
   * end is the barrier before its use. */
  TsTileNode *jp = ts_tile_for(pc, "jp", "0", "n_jr", "1", TS_FOR_PARALLEL_DYNAMIC);
  g_autofree char *bdst = g_strdup_printf("Bp + jp * NR * %s", depth);
  const gboolean kmajor = gemm_b_kmajor(ts_op_instance_dtype(inst)->storage);
  TsTileNode *pb = kmajor ? ts_tile_pack(jp, 2, NR, "B + (jc + jp * NR) * K + pc", "K", "kc",
                                         "min(NR, nc - jp * NR)", bdst)
                          : ts_tile_pack(jp, 1, NR, "B + pc * N + jc + jp * NR", "N", "kc",
                                         "min(NR, nc - jp * NR)", bdst);
  ts_tile_set_dot(pb, dot);
  /* The work is handed out dynamically in column panels: one NR-wide panel of one A block (ic)
   * per grab, its MR-row micro-tiles in turn. A static split waits for its slowest thread at
   * every barrier, and on a shared machine a thread whose core is taken holds the whole team
   * for a scheduler tick; grabbed panels go to the thread that is running. Panels are handed
   * out in block order, so each worker packs an A block once, when it first reaches it (a
   * worker packs every block: M x K more elements than a static split, ~1% of a large gemm). */
  ts_tile_let(pc, "rows", TS_DTYPE_INT32, "(M + MR - 1) / MR");
  ts_tile_let(pc, "bpr", TS_DTYPE_INT32, "BM / MR");
  ts_tile_let(pc, "n_blk", TS_DTYPE_INT32, "(M + BM - 1) / BM");
  TsTileNode *q = ts_tile_for(pc, "q", "0", "n_blk * n_jr", "1", TS_FOR_PARALLEL_DYNAMIC);
  ts_tile_let(q, "b", TS_DTYPE_INT32, "q / n_jr");
  ts_tile_let(q, "ic", TS_DTYPE_INT32, "b * BM");
  ts_tile_let(q, "rows_b", TS_DTYPE_INT32, "min(bpr, rows - b * bpr)");
  ts_tile_let(q, "jr", TS_DTYPE_INT32, "(q - b * n_jr) * NR");
  ts_tile_let(q, "mc", TS_DTYPE_INT32, "min(BM, M - ic)");
  TsTileNode *pa = ts_tile_pack(q, 0, MR, "A + ic * K + pc", "K", "mc", "kc", "Ap");
  ts_tile_pack_set_reuse_key(pa, "pc * M + ic");
  ts_tile_set_dot(pa, dot);
  TsTileNode *ir = ts_tile_for(q, "ir", "0", "rows_b * MR", "MR", TS_FOR_SERIAL);
  g_autofree char *c = g_strdup_printf("%s + (ic + ir) * N + jc + jr", cd);
  g_autofree char *ap = g_strdup_printf("Ap + ir * %s", depth);
  g_autofree char *bp = g_strdup_printf("Bp + jr * %s", depth);
  TsTileNode *mma = ts_tile_mma(ir, MR, NR, V, U, c, "N", ap, bp, "kc", "pc > 0",
                                "min(MR, mc - ir)", "min(NR, nc - jr)");
  ts_tile_set_dot(mma, dot);
  if (epi != NULL) {
    /* Each row of the accumulator through the epilogue into C, rows handed out as threads
     * free up; [N] inputs are read at the element's column. */
    TsTileNode *i0 = ts_tile_for(par, "i0", "0", "M", "BM", TS_FOR_PARALLEL_DYNAMIC);
    TsTileNode *row = ts_tile_for(i0, "i", "i0", "min(i0 + BM, M)", "1", TS_FOR_SERIAL);
    TsTileNode *map = ts_tile_map(row, "c_out", epi->cpu_expr, "N");
    ts_tile_node_add_view(map, "acc", "Cw", "i * N");
    for (guint v = 0; v < epi->n_vectors; v++)
      ts_tile_node_add_view(map, epi->views[v], epi->buffers[v], "0");
    ts_tile_node_add_view(map, "c_out", "C", "i * N");
  } else if (narrow_out) {
    /* Round the f32 accumulator to the output dtype, rows shared among the team; fp8 inputs'
     * scales multiply it first. */
    TsTileNode *cv = ts_tile_for(par, "i", "0", "M", "BM", TS_FOR_PARALLEL);
    ts_tile_convert_scaled(cv, "Cw + i * N", "C + i * N", "min(BM, M - i) * N",
                           ts_dtype_is_fp8(ts_op_instance_dtype(inst)->storage)
                             ? "scale_a * scale_b"
                             : NULL);
  }
  return TRUE;
}

/* The CUDA lowerings: one CTA per BM x BN tile of C and a STAGES-deep cp.async ring of BK
 * slices of A and B in (swizzled) shared memory, with f32 accumulators in registers; CTAs are
 * rasterised in groups of `raster` tile rows for L2 reuse. The `mma` knob picks the tensor-core
 * instruction: "sync" is mma.sync m16n8k16 on warp tiles (ts_cuda_gemm.cuh), "wgmma" the
 * sm_90a warpgroup mma reading both operands from shared memory (ts_cuda_wgmma.cuh). */

/* What the two math paths do differently in the same multi-stage loop.
 *
 * mma.sync: the classic loop — wait for slice t, barrier (so every warp is done with the
 * buffer about to be refilled), issue the copy of slice t + STAGES - 1, compute on slice t.
 *
 * wgmma: the tensor cores read a slice while the next copies are issued, so a buffer is free
 * for refilling only once the wgmmas reading it have finished. ts_wgmma_tile leaves the newest
 * slice's group running and waits for the one before; after the next barrier every warpgroup
 * is past that wait, so the loop refills the buffer of slice t - 2 with slice t + STAGES - 2:
 * one stage fewer in flight than mma.sync for the same ring, hence STAGES >= 3. Each thread
 * fences its landed copies into the async proxy (which wgmma reads in) before the barrier. */
typedef struct {
  gint64 lag;             /* stages kept back from the ring: 1 (sync), 2 (wgmma) */
  const char *swizzle;    /* the copies' SWZ: the knob's, or wgmma's 128-byte pattern (2) */
  gboolean proxy_fence;   /* fence.proxy.async before the barrier */
  const char *mma, *mma_params;     /* the tile-math intrinsic, its parameters after T= */
  const char *drain;                /* waits for the math before the epilogue, or NULL */
  const char *store, *store_params; /* the epilogue intrinsic, its parameters after T= */
} GemmMath;

static const GemmMath gemm_sync = {
  .lag = 1, .swizzle = "SWZ", .mma = "mma_tile",
  .mma_params = "BM=BM,BN=BN,BK=BK,WARPS_M=WARPS_M,WARPS_N=WARPS_N,SWZ=SWZ",
  .store = "store_acc", .store_params = "BM=BM,BN=BN,WARPS_M=WARPS_M,WARPS_N=WARPS_N"};

static const GemmMath gemm_wgmma = {
  .lag = 2, .swizzle = "2", .proxy_fence = TRUE, .mma = "wgmma_tile",
  .mma_params = "BM=BM,BN=BN,BK=BK,WGS=WGS", .drain = "wgmma_wait",
  .store = "wgmma_store_acc", .store_params = "BM=BM,BN=BN,WGS=WGS"};

/* The element types of a CUDA lowering: the inputs' (`in`, a dtype name), the output's, and
 * whether they are fp8 (B stored [N, K], its slices loaded K-major: gemm_b_kmajor). */
typedef struct {
  const char *in, *out;
  gboolean fp8;
  const char *epilogue; /* a kernel file's epilogue as a lambda over (acc, r, c), or NULL */
} GemmTypes;

/* The epilogue of a kernel file's GEMM as a CUDA lambda: an accumulator element, its row and
 * column to the value stored. [N] inputs are read at the column, clamped: the columns of a
 * tile past N are computed and never stored. */
static char *
gemm_epilogue_lambda(const TsGemmEpilogue *epi)
{
  if (epi == NULL)
    return NULL;
  GString *s = g_string_new("[=](float acc, long long r, long long c) -> float { (void)r; (void)c; ");
  for (guint v = 0; v < epi->n_vectors; v++)
    g_string_append_printf(s, "const float %s = ts_to_f32(%s[c < N ? c : N - 1]); ",
                           epi->views[v], epi->buffers[v]);
  g_string_append_printf(s, "return %s; }", epi->cuda_expr);
  return g_string_free(s, FALSE);
}

/* The B slice for k-block `k`: N-major 16-bit B is BK x BN at (k * BK, n0) of [K, N]; fp8's
 * K-major B is BN x BK at (n0, k * BK) of [N, K]. `parts`: the params' cluster split. */
static char *
gemm_load_b_params(const GemmTypes *ty, const char *parts)
{
  return ty->fp8 ? g_strdup_printf("T=%s,ROWS=BN,COLS=BK%s", ty->in, parts)
                 : g_strdup_printf("T=%s,ROWS=BK,COLS=BN%s", ty->in, parts);
}

static void
gemm_load_b(TsTileNode *parent, const char *intrinsic, const char *params, const GemmTypes *ty,
            const char *dst, const char *k, const char *bar, const char *valid)
{
  if (ty->fp8)
    ts_tile_intrinsic(parent, intrinsic, params, dst, "tma_b", "n0", k, bar, valid, NULL);
  else
    ts_tile_intrinsic(parent, intrinsic, params, dst, "tma_b", k, "n0", bar, valid, NULL);
}

/* A wgmma tile's epilogue: each thread's pairs straight to C, or (epilogue("tma")) through a
 * staging tile per math warpgroup and TMA stores, whose last bulk group the kernel waits for
 * under `drain` (the node that outlives the tile loop). WG0: the first math warpgroup. */
static void
gemm_wgmma_epilogue(TsTileNode *tile, TsTileNode *drain, const GemmTypes *ty, int wg0,
                    gboolean tma_store)
{
  /* fp8: the per-tensor scales multiply the finished tile once, in registers. */
  if (ty->fp8)
    ts_tile_intrinsic(tile, "acc_scale", "NACC=BM * BN / (128 * WGS)", "acc",
                      "scale_a * scale_b", NULL);
  if (ty->epilogue) {
    g_autofree char *params = g_strdup_printf("%s%s", gemm_wgmma.store_params, wg0 ? ",WG0=1" : "");
    ts_tile_intrinsic(tile, "wgmma_acc_epilogue", params, "acc", "m0", "n0", ty->epilogue, NULL);
  }
  g_autofree char *store =
    g_strdup_printf("T=%s,%s%s", ty->out, gemm_wgmma.store_params, wg0 ? ",WG0=1" : "");
  if (tma_store) {
    ts_tile_intrinsic(tile, "wgmma_store_tma", store, "Cs", "tma_c", "m0", "n0", "acc", NULL);
    ts_tile_intrinsic(drain, "tma_store_drain", NULL, NULL);
  } else {
    ts_tile_intrinsic(tile, gemm_wgmma.store, store, "C", "N", "m0", "n0", "M", "N", "acc", NULL);
  }
}

static void
gemm_cuda_loop(TsTileNode *g, const char *t, gint64 S, const GemmMath *m, gboolean tma_store,
               const char *epilogue)
{
  g_autofree char *copy_a =
    g_strdup_printf("T=%s,ROWS=BM,COLS=BK,VEC=VEC,SWZ=%s,THREADS=THREADS", t, m->swizzle);
  g_autofree char *copy_b =
    g_strdup_printf("T=%s,ROWS=BK,COLS=BN,VEC=VEC,SWZ=%s,THREADS=THREADS", t, m->swizzle);
  g_autofree char *prologue = g_strdup_printf("STAGES - %" G_GINT64_FORMAT, m->lag);
  TsTileNode *pro = ts_tile_for(g, "s", "0", prologue, "1", TS_FOR_UNROLL);
  ts_tile_intrinsic(pro, "copy_tile_async", copy_a, "As + s * BM * BK", "A", "K", "m0", "s * BK",
                    "M", "K", NULL);
  ts_tile_intrinsic(pro, "copy_tile_async", copy_b, "Bs + s * BK * BN", "B", "N", "s * BK", "n0",
                    "K", "N", NULL);
  ts_tile_intrinsic(pro, "async_commit", NULL, NULL);

  TsTileNode *main = ts_tile_for(g, "kb", "0", "kt", "1", TS_FOR_SERIAL);
  g_autofree char *wait = g_strdup_printf("PENDING=%" G_GINT64_FORMAT, S - 1 - m->lag);
  ts_tile_intrinsic(main, "async_wait", wait, NULL);
  if (m->proxy_fence)
    ts_tile_intrinsic(main, "async_proxy_fence", NULL, NULL);
  ts_tile_barrier(main);
  g_autofree char *next = g_strdup_printf("kb + STAGES - %" G_GINT64_FORMAT, m->lag);
  ts_tile_let(main, "next", TS_DTYPE_INT32, next);
  ts_tile_let(main, "ring_next", TS_DTYPE_INT32, "next % STAGES");
  ts_tile_intrinsic(main, "copy_tile_async", copy_a, "As + ring_next * BM * BK", "A", "K", "m0",
                    "next * BK", "M", "K", NULL);
  ts_tile_intrinsic(main, "copy_tile_async", copy_b, "Bs + ring_next * BK * BN", "B", "N",
                    "next * BK", "n0", "K", "N", NULL);
  ts_tile_intrinsic(main, "async_commit", NULL, NULL);
  ts_tile_let(main, "ring", TS_DTYPE_INT32, "kb % STAGES");
  g_autofree char *mma = g_strdup_printf("T=%s,%s", t, m->mma_params);
  ts_tile_intrinsic(main, m->mma, mma, "acc", "As + ring * BM * BK", "Bs + ring * BK * BN", NULL);
  if (m->drain)
    ts_tile_intrinsic(g, m->drain, "PENDING=0", NULL);
  ts_tile_intrinsic(g, "async_wait", "PENDING=0", NULL);
  if (m == &gemm_wgmma) {
    const GemmTypes ty = {t, t, FALSE, epilogue};
    gemm_wgmma_epilogue(g, g, &ty, 0, tma_store);
  } else {
    if (epilogue)
      ts_tile_intrinsic(g, "acc_epilogue", m->store_params, "acc", "m0", "n0", epilogue, NULL);
    g_autofree char *store = g_strdup_printf("T=%s,%s", t, m->store_params);
    ts_tile_intrinsic(g, m->store, store, "C", "N", "m0", "n0", "M", "N", "acc", NULL);
  }
}

/* The TMA variant of the wgmma loop (load("tma"), sm_90a): thread 0 of the CTA moves every
 * slice, A as one BM x 64 box and B as BN / 64 boxes of 64 x 64, written by the TMA in the
 * same 128-byte swizzled layout the cp.async copies produce, and each ring slot has an
 * mbarrier that completes once its slice's bytes have landed. The ring discipline is the
 * wgmma one (refill the slot of slice t - 2 with slice t + STAGES - 2 after the barrier that
 * follows every warpgroup's wait for slice t - 1's wgmmas); slice t is the (t / STAGES)-th use
 * of its slot, so its phase parity is t / STAGES. Slots past the last slice get neither an
 * arrival nor copies. */
static void
gemm_cuda_loop_tma(TsTileNode *g, const GemmTypes *ty, gboolean tma_store)
{
  const char *t = ty->in;
  g_autofree char *load_a = g_strdup_printf("T=%s,ROWS=BM,COLS=BK", t);
  g_autofree char *load_b = gemm_load_b_params(ty, "");
  ts_tile_intrinsic(g, "tma_init", "N=STAGES", "bars", "tma_a", "tma_b", NULL);
  ts_tile_barrier(g);
  TsTileNode *pro = ts_tile_for(g, "s", "0", "STAGES - 2", "1", TS_FOR_UNROLL);
  ts_tile_intrinsic(pro, "tma_expect", "BYTES=SLICE_BYTES", "bars + 2 * s", "s < kt", NULL);
  ts_tile_intrinsic(pro, "tma_load_tile", load_a, "As + s * BM * BK", "tma_a", "m0", "s * BK",
                    "bars + 2 * s", "s < kt", NULL);
  gemm_load_b(pro, "tma_load_tile", load_b, ty, "Bs + s * BK * BN", "s * BK", "bars + 2 * s",
              "s < kt");

  TsTileNode *main = ts_tile_for(g, "kb", "0", "kt", "1", TS_FOR_SERIAL);
  ts_tile_barrier(main);
  ts_tile_let(main, "next", TS_DTYPE_INT32, "kb + STAGES - 2");
  ts_tile_let(main, "ring_next", TS_DTYPE_INT32, "next % STAGES");
  ts_tile_intrinsic(main, "tma_expect", "BYTES=SLICE_BYTES", "bars + 2 * ring_next", "next < kt",
                    NULL);
  ts_tile_intrinsic(main, "tma_load_tile", load_a, "As + ring_next * BM * BK", "tma_a", "m0",
                    "next * BK", "bars + 2 * ring_next", "next < kt", NULL);
  gemm_load_b(main, "tma_load_tile", load_b, ty, "Bs + ring_next * BK * BN", "next * BK",
              "bars + 2 * ring_next", "next < kt");
  ts_tile_let(main, "ring", TS_DTYPE_INT32, "kb % STAGES");
  ts_tile_intrinsic(main, "mbar_wait", NULL, "bars + 2 * ring", "kb / STAGES", NULL);
  g_autofree char *mma = g_strdup_printf("T=%s,%s", t, gemm_wgmma.mma_params);
  ts_tile_intrinsic(main, gemm_wgmma.mma, mma, "acc", "As + ring * BM * BK", "Bs + ring * BK * BN",
                    NULL);
  ts_tile_intrinsic(g, gemm_wgmma.drain, "PENDING=0", NULL);
  gemm_wgmma_epilogue(g, g, ty, 0, tma_store);
}

/* The C tile `tile` of the grouped rasterisation (consecutive tiles walk GROUP tile rows down
 * one tile column, so the A and B tiles a wave reads are shared in L2): its origin m0, n0.
 * With clusters, `tile` is a cluster tile, CM x CN C tiles, rasterised alike, and the CTA of
 * rank crank takes C tile (crank % CM, crank / CM) of it. */
static void
gemm_tile_origin(TsTileNode *parent, const char *tile, gboolean cluster)
{
  g_autofree char *first_m = g_strdup_printf("%s / width * GROUP", tile);
  g_autofree char *m0 =
    cluster ? g_strdup_printf("((first_m + %s %% width %% group_m) * CM + crank %% CM) * BM", tile)
            : g_strdup_printf("(first_m + %s %% width %% group_m) * BM", tile);
  g_autofree char *n0 = cluster ? g_strdup_printf("(%s %% width / group_m * CN + crank / CM) * BN", tile)
                                : g_strdup_printf("%s %% width / group_m * BN", tile);
  ts_tile_let(parent, "first_m", TS_DTYPE_INT32, first_m);
  ts_tile_let(parent, "group_m", TS_DTYPE_INT32,
              cluster ? "min(CTILES_M - first_m, GROUP)" : "min(TILES_M - first_m, GROUP)");
  ts_tile_let(parent, "m0", TS_DTYPE_INT32, m0);
  ts_tile_let(parent, "n0", TS_DTYPE_INT32, n0);
}

/* Where a warp-specialized CTA walks from: its index `at` among `count` walkers over `tiles`
 * (C tiles; with clusters, the cluster's index among the clusters over cluster tiles). */
typedef struct {
  const char *at, *count, *tiles;
  gboolean cluster;
} GemmWalk;

static const GemmWalk gemm_walk_cta = {"bx", "gridDim.x", "TILES_M * TILES_N", FALSE};
static const GemmWalk gemm_walk_cluster = {"cid", "nclu", "CTILES_M * CTILES_N", TRUE};

/* The walk over tiles at + first * count (first NULL: at), stepping `every` counts (the
 * producer and coop's consumers walk every tile; a ping-pong consumer, from the tile of its
 * turn, every other): each tile's origin, `j`, its index among the walker's tiles, and `base`,
 * the walker's slices before it. */
static TsTileNode *
gemm_ws_tiles(TsTileNode *parent, const GemmWalk *w, const char *first, int every)
{
  g_autofree char *from =
    first ? g_strdup_printf("%s + (%s) * %s", w->at, first, w->count) : g_strdup(w->at);
  g_autofree char *step =
    every > 1 ? g_strdup_printf("%d * %s", every, w->count) : g_strdup(w->count);
  TsTileNode *t = ts_tile_for(parent, "tile", from, w->tiles, step, TS_FOR_SERIAL);
  gemm_tile_origin(t, "tile", w->cluster);
  g_autofree char *j = g_strdup_printf("(tile - %s) / %s", w->at, w->count);
  ts_tile_let(t, "j", TS_DTYPE_INT32, j);
  ts_tile_let(t, "base", TS_DTYPE_INT32, "j * kt");
  return t;
}

/* schedule("coop") and schedule("pingpong"): the TMA/wgmma loop warp-specialized. Warpgroup 0
 * is the producer: it gives up registers (setmaxnreg) and its thread 0 refills ring slot
 * it % STAGES with the CTA's it-th slice as soon as the slot's previous slice has been
 * released (its empty barrier), so all STAGES slices can be in flight instead of STAGES - 2
 * behind a CTA barrier per slice. Warpgroups 1 and 2 are the consumers: they take the
 * registers, wait for slice it's full barrier, issue its wgmmas, and once the wait in
 * ts_wgmma_tile has retired slice it - 1's wgmmas hand that slot back; a tile's last slot goes
 * back after the final wait, before its epilogue.
 *   coop: both consumers work on every tile, each on its BM / 2 rows; a slot's empty barrier
 *   completes on both releases.
 *   pingpong: each consumer owns whole tiles, taking turns — consumer c the CTA's tiles
 *   j = c, c + 2, ... — so one stores its tile while the other multiplies; a named barrier per
 *   consumer passes the turn once a main loop has issued its last wgmma (ts_order_wait /
 *   ts_order_signal), and a slot's empty barrier completes on its one reader's release.
 * The CTA walks tiles bx, bx + gridDim.x, ...: one per CTA in a coop grid of one CTA per tile,
 * two in a pingpong grid of one CTA per two tiles, several with persistent(P) (P CTAs, the
 * GPU's SM count), where the producer loads the next tile's slices while a consumer stores the
 * last one. `it` counts the CTA's slices over all its tiles, so the ring's slots and phases run
 * on across tiles. epilogue("tma") stores a tile through a staging tile per consumer and TMA
 * stores (ts_wgmma_store_tma), which run on while the consumer starts its next tile. The role
 * is read from a warp-uniform broadcast (ts_warpgroup), so ptxas sees uniform branches around
 * the wgmmas.
 *   cluster(m=2) / cluster(n=2): CTA pairs whose tiles share B (two tile rows, one column) or
 *   A (one row, two columns) walk cluster tiles together. Each producer loads its own A (or
 *   B) and half the rows of each shared panel, multicast into both CTAs' ring slot; a slot is
 *   then written by both producers, so its empty barrier takes the releases of the consumers
 *   of both CTAs (each consumer arrives on its own and, through mapa, on its peer's). The
 *   barriers are published, and the CTAs kept alive until no peer can touch them, by cluster
 *   barriers. */
static void
gemm_cuda_loop_ws(TsTileNode *g, TsTileKernel *k, const GemmTypes *ty, gboolean pingpong,
                  gboolean tma_store, gint64 CM, gint64 CN)
{
  const char *t = ty->in;
  const gboolean cluster = CM * CN > 1;
  const GemmWalk *walk = cluster ? &gemm_walk_cluster : &gemm_walk_cta;
  g_autofree char *load_a = g_strdup_printf("T=%s,ROWS=BM,COLS=BK%s", t, CN > 1 ? ",PARTS=CN" : "");
  g_autofree char *load_b = gemm_load_b_params(ty, CM > 1 ? ",PARTS=CM" : "");
  if (cluster) {
    ts_tile_let(g, "crank", TS_DTYPE_INT32, "bx % CTAS");
    ts_tile_let(g, "cid", TS_DTYPE_INT32, "bx / CTAS");
    ts_tile_let(g, "nclu", TS_DTYPE_INT32, "gridDim.x / CTAS");
    ts_tile_intrinsic(g, "tma_init_ws", "STAGES=STAGES,CONSUMERS=WGS,CTAS=CTAS", "bars", "tma_a",
                      "tma_b", NULL);
    ts_tile_intrinsic(g, "cluster_sync", NULL, NULL);
  } else {
    ts_tile_intrinsic(g, "tma_init_ws", "STAGES=STAGES,CONSUMERS=WGS", "bars", "tma_a", "tma_b",
                      NULL);
    ts_tile_barrier(g);
  }
  ts_tile_let(g, "wg", TS_DTYPE_INT32, "ts_warpgroup()");

  TsTileNode *prod = ts_tile_if(g, "wg == 0");
  ts_tile_intrinsic(prod, "setmaxnreg_dec", "N=PRODUCER_REGS", NULL);
  TsTileNode *lead = ts_tile_if(prod, "threadIdx.x == 0");
  TsTileNode *pt = gemm_ws_tiles(lead, walk, NULL, 1);
  TsTileNode *pl = ts_tile_for(pt, "kb", "0", "kt", "1", TS_FOR_SERIAL);
  ts_tile_let(pl, "it", TS_DTYPE_INT32, "base + kb");
  ts_tile_let(pl, "ring", TS_DTYPE_INT32, "it % STAGES");
  TsTileNode *reuse = ts_tile_if(pl, "it >= STAGES");
  ts_tile_intrinsic(reuse, "mbar_wait", NULL, "bars + 2 * (STAGES + ring)", "it / STAGES - 1",
                    NULL);
  ts_tile_intrinsic(pl, "tma_expect", "BYTES=SLICE_BYTES", "bars + 2 * ring", "true", NULL);
  ts_tile_intrinsic(pl, CN > 1 ? "tma_load_tile_mc" : "tma_load_tile", load_a,
                    "As + ring * BM * BK", "tma_a", "m0", "kb * BK", "bars + 2 * ring", "true",
                    NULL);
  gemm_load_b(pl, CM > 1 ? "tma_load_tile_mc" : "tma_load_tile", load_b, ty,
              "Bs + ring * BK * BN", "kb * BK", "bars + 2 * ring", "true");

  TsTileNode *cons = ts_tile_if(g, "wg > 0");
  ts_tile_intrinsic(cons, "setmaxnreg_inc", "N=CONSUMER_REGS", NULL);
  TsTileNode *ct = gemm_ws_tiles(cons, walk, pingpong ? "wg - 1" : NULL, pingpong ? 2 : 1);
  ts_tile_alloc(ct, k, "acc", TS_MEM_REGISTER, TS_DTYPE_F32, "BM * BN / (128 * WGS)", FALSE,
                pingpong ? "m64nBNk16 accumulators [mi][BN/2] of each consumer thread, the "
                           "whole tile's, zeroed per tile"
                         : "m64nBNk16 accumulators [mi][BN/2] of each consumer thread, its "
                           "warpgroup's rows, zeroed per tile");
  if (pingpong)
    ts_tile_intrinsic(ct, "order_wait", NULL, "wg", "j > 0", NULL);
  TsTileNode *cl = ts_tile_for(ct, "kb", "0", "kt", "1", TS_FOR_SERIAL);
  ts_tile_let(cl, "it", TS_DTYPE_INT32, "base + kb");
  ts_tile_let(cl, "ring", TS_DTYPE_INT32, "it % STAGES");
  ts_tile_intrinsic(cl, "mbar_wait", NULL, "bars + 2 * ring", "it / STAGES", NULL);
  g_autofree char *mma = g_strdup_printf("T=%s,%s,WG0=1", t, gemm_wgmma.mma_params);
  ts_tile_intrinsic(cl, gemm_wgmma.mma, mma, "acc", "As + ring * BM * BK", "Bs + ring * BK * BN",
                    NULL);
  const char *release = cluster ? "mbar_arrive_wg_cluster" : "mbar_arrive_wg";
  const char *release_params = cluster ? "CTAS=CTAS" : NULL;
  ts_tile_intrinsic(cl, release, release_params,
                    "bars + 2 * (STAGES + (it + STAGES - 1) % STAGES)", "kb > 0", NULL);
  /* Named barrier 3 - wg is the other consumer's; it waits only for a tile that exists. */
  if (pingpong) {
    g_autofree char *next = g_strdup_printf("tile + %s < %s", walk->count, walk->tiles);
    ts_tile_intrinsic(ct, "order_signal", NULL, "3 - wg", next, NULL);
  }
  ts_tile_intrinsic(ct, gemm_wgmma.drain, "PENDING=0", NULL);
  ts_tile_intrinsic(ct, release, release_params, "bars + 2 * (STAGES + (base + kt - 1) % STAGES)",
                    "true", NULL);
  gemm_wgmma_epilogue(ct, cons, ty, 1, tma_store);
  if (cluster)
    ts_tile_intrinsic(g, "cluster_sync", NULL, NULL);
}

static gboolean
gemm_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                GError **error)
{
  const gint64 BM = KNOB("BM"), BN = KNOB("BN"), BK = KNOB("BK"), W = KNOB("warps"),
               S = KNOB("stages"), V = KNOB("vector"), G = KNOB("raster");
  const char *swz = ts_sched_point_get_str(point, "swizzle", "xor");
  const char *mma = ts_sched_point_get_str(point, "mma", "sync");
  const char *load = ts_sched_point_get_str(point, "load", "cp_async");
  const char *sched = ts_sched_point_get_str(point, "schedule", "plain");
  const gint64 P = ts_sched_point_get_int(point, "persistent", 0);
  const char *epilogue = ts_sched_point_get_str(point, "epilogue", "direct");
  const gint64 CM = ts_sched_point_get_int(point, "CM", 1), CN = ts_sched_point_get_int(point, "CN", 1);
  TsDtype dt = ts_op_instance_dtype(inst)->storage;
  const gboolean fp8 = gemm_b_kmajor(dt);
  if (dt != TS_DTYPE_BF16 && dt != TS_DTYPE_F16 && !fp8) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "gemm: the CUDA kernels use tensor cores and take bf16, f16 or fp8 inputs "
                "(f32 accumulation); %s is not supported on the GPU", ts_dtype_name(dt));
    return FALSE;
  }
  if (fp8 && (g_strcmp0(mma, "wgmma") != 0 || g_strcmp0(load, "tma") != 0)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: %s runs on the fp8 wgmma (sm_90a) with its K-major slices loaded by the "
                "TMA: use mma(\"wgmma\").load(\"tma\")", ts_dtype_name(dt));
    return FALSE;
  }
  const TsDtype out_dt = ts_op_instance_out_dtype(inst);
  g_autofree char *epi_lambda = gemm_epilogue_lambda(ts_op_instance_op(inst)->gemm_epilogue);
  const GemmTypes types = {ts_dtype_name(dt), ts_dtype_name(out_dt), fp8, epi_lambda};
  const gint64 out_elem = ts_dtype_bits(out_dt) / 8;
  if (BM <= 0 || BN <= 0 || BK <= 0 || (W != 4 && W != 8) || S < 2 || V <= 0 || G <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: the CUDA lowering needs positive BM, BN, BK, vector and raster, warps 4 "
                "or 8, and at least 2 stages");
    return FALSE;
  }
  const gboolean wgmma = g_strcmp0(mma, "wgmma") == 0;
  if (!wgmma && g_strcmp0(mma, "sync") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: mma(\"%s\"): the CUDA lowering has \"sync\" (mma.sync) and \"wgmma\"",
                mma);
    return FALSE;
  }
  const gboolean tma = g_strcmp0(load, "tma") == 0;
  if (!tma && g_strcmp0(load, "cp_async") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: load(\"%s\"): the CUDA lowering has \"cp_async\" and \"tma\"", load);
    return FALSE;
  }
  if (tma && !wgmma) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: load(\"tma\") feeds the wgmma path only (sm_90a): use it with "
                "mma(\"wgmma\")");
    return FALSE;
  }
  const gboolean pingpong = g_strcmp0(sched, "pingpong") == 0;
  /* ws: warp-specialized, a producer warpgroup and two consumers (coop or pingpong). */
  const gboolean ws = pingpong || g_strcmp0(sched, "coop") == 0;
  if (!ws && g_strcmp0(sched, "plain") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: schedule(\"%s\"): the CUDA lowering has \"plain\" (every warp loads "
                "and multiplies), \"coop\" (a producer warpgroup, two consumer warpgroups "
                "sharing each tile) and \"pingpong\" (two consumers taking turns, a tile each)",
                sched);
    return FALSE;
  }
  if (P < 0 || (P > 0 && !ws)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: persistent(%" G_GINT64_FORMAT "): CTAs that loop over the tiles need "
                "schedule(\"coop\") or schedule(\"pingpong\") (persistent(0): one CTA per "
                "tile, or per two with pingpong)", P);
    return FALSE;
  }
  const gboolean tma_store = g_strcmp0(epilogue, "tma") == 0;
  if (!tma_store && g_strcmp0(epilogue, "direct") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: epilogue(\"%s\"): the CUDA lowering has \"direct\" (each thread stores "
                "its accumulators) and \"tma\" (stmatrix into shared memory, TMA stores)",
                epilogue);
    return FALSE;
  }
  if (tma_store && !wgmma) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: epilogue(\"tma\") stages wgmma accumulators (stmatrix of the warpgroup "
                "fragment layout): use it with mma(\"wgmma\")");
    return FALSE;
  }
  if (ws && (!tma || W != 8)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: schedule(\"%s\") is warp-specialized around the TMA, with two consumer "
                "warpgroups: use it with mma(\"wgmma\").load(\"tma\").warps(8)", sched);
    return FALSE;
  }
  const gint64 elem = ts_dtype_bits(dt) / 8;
  /* mma.sync: 8 warps split the longer side of the tile 4 ways, so warp tiles stay
   * square-ish. wgmma: warpgroups (4 warps) split the rows, 64 or 128 each — except with
   * pingpong, where each consumer warpgroup holds a whole tile. */
  const gint64 WARPS_M = W == 4 ? 2 : (BM >= BN ? 4 : 2), WARPS_N = W / WARPS_M,
               WGS = pingpong ? 1 : W / 4;
  if (wgmma) {
    if (BK * elem != 128 || (BM / WGS) % 64 || BN % 64 || BN > 256 || S < 3 ||
        g_strcmp0(swz, "xor") != 0) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                  "gemm: wgmma needs BK=64 (fp8: 128; one 128-byte swizzled row), 64-row blocks per "
                  "warpgroup (BM=%" G_GINT64_FORMAT " over %" G_GINT64_FORMAT "), BN a "
                  "multiple of 64 up to 256, at least 3 stages and swizzle(\"xor\")",
                  BM, WGS);
      return FALSE;
    }
    if (pingpong && BM * BN > 128 * 128) {
      g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                  "gemm: schedule(\"pingpong\") keeps a whole %" G_GINT64_FORMAT "x%"
                  G_GINT64_FORMAT " tile in one warpgroup's registers, %" G_GINT64_FORMAT
                  " floats a thread; at most 128 fit beside the addresses (BM * BN <= 16384)",
                  BM, BN, BM * BN / 128);
      return FALSE;
    }
  } else if ((BM / WARPS_M) % 16 || (BN / WARPS_N) % 16 || BK % 16) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: warp tiles of %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                " and BK=%" G_GINT64_FORMAT " must be multiples of 16",
                BM / WARPS_M, BN / WARPS_N, BK);
    return FALSE;
  }
  const TsShape *s = ts_op_instance_shape(inst);
  const gint64 M = ts_shape_get(s, "M"), N = ts_shape_get(s, "N");
  const gint64 gm = (M + BM - 1) / BM, gn = (N + BN - 1) / BN;
  const gint64 CTAS = CM * CN;
  if (CM < 1 || CN < 1 || CTAS > 2) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: cluster(m=%" G_GINT64_FORMAT ", n=%" G_GINT64_FORMAT "): the CUDA "
                "lowering has clusters of one CTA or of a pair, cluster(m=2) or cluster(n=2)",
                CM, CN);
    return FALSE;
  }
  if (CTAS > 1 && !ws) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: cluster(m=%" G_GINT64_FORMAT ", n=%" G_GINT64_FORMAT "): a cluster "
                "shares its operand through the producer warpgroups: use it with "
                "schedule(\"coop\") or schedule(\"pingpong\")", CM, CN);
    return FALSE;
  }
  if (gm % CM || gn % CN) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "gemm: cluster(m=%" G_GINT64_FORMAT ", n=%" G_GINT64_FORMAT "): the %"
                G_GINT64_FORMAT "x%" G_GINT64_FORMAT " tiles of %" G_GINT64_FORMAT "x%"
                G_GINT64_FORMAT " do not pair up along the cluster", CM, CN, gm, gn, BM, BN);
    return FALSE;
  }
  /* The TMA ring's mbarriers follow the ring: 8 bytes a slot (16 with coop's full/empty pairs). */
  /* epilogue("tma"): a BM / WGS x BN staging tile per math warpgroup (pingpong: BM x BN each
   * of two). */
  const gint64 staging = tma_store ? (pingpong ? 2 : 1) * BM * BN * out_elem : 0;
  const gint64 smem = S * (BM * BK + BK * BN) * elem + staging + (tma ? (ws ? 16 : 8) * S : 0);

  ts_tile_kernel_define(k, "BM", BM);
  ts_tile_kernel_define(k, "BN", BN);
  ts_tile_kernel_define(k, "BK", BK);
  ts_tile_kernel_define(k, "STAGES", S);
  if (wgmma) {
    ts_tile_kernel_define(k, "WGS", WGS);
  } else {
    ts_tile_kernel_define(k, "WARPS_M", WARPS_M);
    ts_tile_kernel_define(k, "WARPS_N", WARPS_N);
  }
  ts_tile_kernel_define(k, "THREADS", W * 32);
  ts_tile_kernel_define(k, "VEC", V);
  if (!wgmma)
    ts_tile_kernel_define(k, "SWZ", g_strcmp0(swz, "xor") == 0);
  ts_tile_kernel_define(k, "GROUP", G);
  ts_tile_kernel_define(k, "TILES_M", gm);
  ts_tile_kernel_define(k, "TILES_N", gn);
  if (CTAS > 1) {
    ts_tile_kernel_define(k, "CM", CM);
    ts_tile_kernel_define(k, "CN", CN);
    ts_tile_kernel_define(k, "CTAS", CTAS);
    ts_tile_kernel_define(k, "CTILES_M", gm / CM);
    ts_tile_kernel_define(k, "CTILES_N", gn / CN);
  }
  if (ws) {
    /* The 384 threads start with 168 registers each (64K an SM, __launch_bounds__(384, 1));
     * the producer warpgroup drops to 40 and the two consumers take the rest, 232 (setmaxnreg
     * counts in steps of 8; the total stays within 64K). Only with a fixed entry count of at
     * most 232 is the increase one, hence warps(8) only. */
    ts_tile_kernel_define(k, "PRODUCER_REGS", 40);
    ts_tile_kernel_define(k, "CONSUMER_REGS", 232);
  }
  if (tma) {
    ts_tile_kernel_define(k, "SLICE_BYTES", (BM * BK + BK * BN) * elem);
    /* A: BM rows of one 64-element (128-byte) swizzle row each; B: 64 k-rows of one 64-column
     * panel each, BN / 64 boxes a slice. */
    /* The operand a cluster shares comes in parts: each CTA's box has 1 / CTAS of the rows. */
    ts_tile_kernel_add_tensor_map(k, "tma_a", "A", "K", "M", 128 / elem, BM / CN, 128);
    /* fp8's K-major B ([N, K]): BN rows of one 128-element row a box, as A. */
    if (fp8)
      ts_tile_kernel_add_tensor_map(k, "tma_b", "B", "K", "N", 128 / elem, BN / CM, 128);
    else
      ts_tile_kernel_add_tensor_map(k, "tma_b", "B", "N", "K", 128 / elem, BK / CM, 128);
  }
  /* C: a staging tile's rows of one 64-column panel a box. */
  if (tma_store)
    ts_tile_kernel_add_tensor_map(k, "tma_c", "C", "N", "M", 128 / out_elem, BM / WGS, 128);

  /* Walkers: CTAs, or clusters of CTAS CTAs over cluster tiles. */
  const gint64 tiles = gm * gn / CTAS;
  const gint64 walkers = P > 0 ? MIN(P / CTAS, tiles) : pingpong ? (tiles + 1) / 2 : tiles;
  TsTileNode *g = ts_tile_grid(k->body, walkers * CTAS, 1, 1, W * 32 + (ws ? 128 : 0), smem);
  if (CTAS > 1)
    ts_tile_grid_set_cluster(g, CTAS);
  if (wgmma) {
    ts_tile_alloc(g, k, "As", TS_MEM_SHARED, dt, "STAGES * BM * BK", FALSE,
                  "ring of STAGES BMx64 slices, K-major, 128-byte swizzle");
    ts_tile_alloc(g, k, "Bs", TS_MEM_SHARED, dt, "STAGES * BK * BN", FALSE,
                  fp8 ? "ring of STAGES BNx128 slices, K-major, 128-byte swizzle"
                      : "ring of STAGES 64xBN slices, N-major 64x64 panels, 128-byte swizzle");
    if (tma_store)
      ts_tile_alloc(g, k, "Cs", TS_MEM_SHARED, out_dt, pingpong ? "2 * BM * BN" : "BM * BN", FALSE,
                    "a (BM/WGS)xBN staging tile per math warpgroup, 64-column panels, 128-byte "
                    "swizzle, read by TMA stores");
    if (ws)
      ts_tile_alloc(g, k, "bars", TS_MEM_SHARED, TS_DTYPE_INT32, "4 * STAGES", FALSE,
                    "2 x STAGES mbarriers (8 bytes each): a slot's slice has landed (full), "
                    "its readers are done (empty)");
    else if (tma)
      ts_tile_alloc(g, k, "bars", TS_MEM_SHARED, TS_DTYPE_INT32, "2 * STAGES", FALSE,
                    "STAGES mbarriers (8 bytes each): a ring slot's slice has landed");
    if (!ws)
      ts_tile_alloc(g, k, "acc", TS_MEM_REGISTER, TS_DTYPE_F32, "BM * BN / THREADS", FALSE,
                    "m64nBNk16 accumulators [mi][BN/2] of each warpgroup thread");
  } else {
    ts_tile_alloc(g, k, "As", TS_MEM_SHARED, dt, "STAGES * BM * BK", FALSE,
                  "ring of STAGES BMxBK slices, row-major, 16-byte chunks xor-swizzled by row");
    ts_tile_alloc(g, k, "Bs", TS_MEM_SHARED, dt, "STAGES * BK * BN", FALSE,
                  "ring of STAGES BKxBN slices, row-major, swizzled");
    ts_tile_alloc(g, k, "acc", TS_MEM_REGISTER, TS_DTYPE_F32, "BM * BN / THREADS", FALSE,
                  "m16n8 accumulator fragments [mi][ni][4]");
  }
  /* Grouped rasterisation: CTA bx takes tile bx (warp-specialized: tiles bx, bx + gridDim.x,
   * ...). */
  ts_tile_let(g, "width", TS_DTYPE_INT32, CTAS > 1 ? "GROUP * CTILES_N" : "GROUP * TILES_N");
  if (!ws)
    gemm_tile_origin(g, "bx", FALSE);
  ts_tile_let(g, "kt", TS_DTYPE_INT32, "(K + BK - 1) / BK");
  if (ws)
    gemm_cuda_loop_ws(g, k, &types, pingpong, tma_store, CM, CN);
  else if (tma)
    gemm_cuda_loop_tma(g, &types, tma_store);
  else
    gemm_cuda_loop(g, ts_dtype_name(dt), S, wgmma ? &gemm_wgmma : &gemm_sync, tma_store,
                   epi_lambda);
  return TRUE;
}

const TsOpDef ts__op_gemm = {
  .name = "gemm",
  .summary = "C[M,N] = A[M,K] B[K,N]; f32, or bf16/f16 storage with f32 accumulation, or "
             "fp8 e4m3/e5m2 (B stored [N,K]) with per-tensor scales into bf16",
  .fp8 = TRUE,
  .fp8_sigs = {NULL, "\"N\",\"K\""}, /* gemm_b_kmajor */
  .n_inputs = 2,
  .inputs = {{"A", "\"M\",\"K\"", -1.0, 1.0}, {"B", "\"K\",\"N\"", -1.0, 1.0}},
  .output = {"C", "\"M\",\"N\"", 0, 0},
  .dims = "M,N,K",
  /* 6x16 with 8-float vectors is the AVX2 classic: 12 accumulators + 2 B vectors + 1
   * broadcast fit the 16 ymm registers. With AVX-512 (simd_floats 16, 32 zmm registers) the
   * space widens by itself: 16-float vectors and tiles such as 14x32 (28 accumulators) or
   * 8x48; a machine without it keeps the AVX2 space. MC=168 is there for MR=14. bf16 on
   * AVX512_BF16 (bf16_dot) adds dot("bf16"): vdpbf16ps on K-pair panels, 16-float vectors;
   * on AMX-BF16 (amx_bf16) dot("amx") takes micro-tiles of 16x16 tile registers (MR 16..48)
   * and a 192-row A block. MC=84 and 112 give MR=14 and MR=8 blocks besides 168, NC=4032 a
   * multiple of 32 near 4080. KC runs to 2048 because every K block is a pass over C (for
   * 16-bit C, its f32 workspace): on a 2-core Zen 4, bf16 2048^3 on two threads went from
   * 0.75x to 0.96x oneDNN with KC=2048 instead of 768, f32 from 0.74x to 1.06x OpenBLAS with
   * KC=1024 instead of 384 (bench/cpu_gemm); the B micro-panel then streams from the L2. */
  .cpu_space = "block(m=[72,84,96,112,144,168,192], n=[2016,4032,4080],"
               " k=[128,256,384,512,1024,2048])"
               ".micro(m=[4,6,8,12,14,16,32,48], n=[8,16,24,32,48]).vector([4,8,16]).unroll([4,8])"
               ".threads([1,2]).dot([\"fma\", \"bf16\", \"amx\"]).walk([\"panels\", \"tiles\"])"
               ".where(NR % vector == 0, vector <= simd_floats,"
               " walk == \"panels\" && BM % MR == 0 && BN % NR == 0"
               " || walk == \"tiles\" && BM * BN <= 65536 && (dot == \"fma\" || BK % 32 == 0),"
               " dot == \"amx\" || MR < 16 && MR * NR / vector <= vector_registers,"
               " dot != \"bf16\" || bf16_dot == 1 && vector == 16,"
               " dot != \"amx\" || amx_bf16 == 1 && vector == 16 && MR % 16 == 0"
               " && NR % 16 == 0 && (MR / 16) * (NR / 16) + MR / 16 + NR / 16 <= 8,"
               " dot == \"amx\" || BM != 192)",
  /* MC=144: the 144x256 packed A block is 144 KiB of the 512 KiB L2; NC=4080 keeps the 4 MiB
   * B block well inside the L3 and is a multiple of 8, 16 and 24 (as is 2016). */
  .cpu_default = "block(m=144,n=4080,k=256).micro(m=6,n=16).vector(8).unroll(8).threads(2)"
                 ".dot(\"fma\").walk(\"panels\")",
  /* A kernel file names a GPU's tiles, 64 to 128 a side and 32 or 64 deep: a tile a program
   * then (walk("tiles")), with the AVX2 micro-tile. */
  .cpu_kernel_default = "block(m=128,n=128,k=64).micro(m=6,n=16).vector(8).unroll(8).threads(2)"
                        ".dot(\"fma\").walk(\"tiles\")",
  .tensor_math = TRUE,
  .flops = gemm_flops,
  .bytes = gemm_bytes,
  .reference = gemm_reference,
  .lower_cpu = gemm_lower_cpu,
  /* Every point keeps its accumulators within 128 registers a thread — 64 with 4 warps (or,
   * with mma.sync, BK=64), where the fragments and the copy loop's addresses need the rest
   * (measured with `tessera-tune check`: those points spilled; a wgmma warpgroup alone spills
   * with 128 too) —, and an mma.sync point with 4 warps at that limit with BK=64 keeps to 2
   * stages when its warp tiles are wide (BN > BM): 64x128x64 at 3 stages took 255 registers
   * and spilled 24 bytes on sm_90a (CUDA 13.0; 4 stages and 128x64 did not, but nothing in the
   * kernel makes them safer), and cuda-compile-all fails on any spill in the default space,
   * its ring within the arch's shared memory, and its global loads aligned. wgmma points exist
   * only where the arch has wgmma (has_wgmma: sm_90a) and in its shapes: 64-row blocks per
   * warpgroup, whole 64-column B panels, BK one 128-byte swizzle row, and a ring of at least
   * 3 stages (the loop keeps one slice's wgmmas in flight). load("tma") replaces the
   * cp.async copies of the wgmma path by TMA boxes on mbarriers (8 more bytes of shared memory
   * a stage). schedule("coop") and ("pingpong") warp-specialize that path (8 warps: two
   * consumer warpgroups beside the producer); pingpong's consumers each hold a whole tile, so
   * its tiles keep to 128 accumulators a thread (BM * BN <= 16384) and, 64-row blocks being a
   * warpgroup's, BM need not split in two. epilogue("tma") (wgmma) stages each math
   * warpgroup's rows of the tile in shared memory (BM x BN 16-bit elements in all, twice that
   * with pingpong, whose consumers hold whole tiles) for TMA stores. cluster(m=2) / cluster(n=2)
   * pair the CTAs of a persistent warp-specialized grid, multicasting the operand their tiles
   * share; the tiles must pair up. fp8 (elem_bytes 1) runs on wgmma with TMA loads only, its
   * BK = 128 making the same 128-byte rows (k=128 is for it alone: mma.sync keeps BK <= 64),
   * and its rows of K bytes must be 16-byte multiples for the tensor maps; its output, and so
   * the epilogue's staging, stays 16-bit. */
  .cuda_space = "block(m=[64,128,256], n=[64,128,256], k=[32,64,128]).warps([4,8]).stages([2,3,4])"
                ".vector([8]).swizzle([\"xor\"]).raster([8]).mma([\"sync\",\"wgmma\"])"
                ".load([\"cp_async\",\"tma\"]).schedule([\"plain\",\"coop\",\"pingpong\"])"
                ".persistent([0,132]).epilogue([\"direct\",\"tma\"]).cluster(m=[1,2], n=[1,2])"
                ".where(BM * BN / (warps * 32) <= 128,"
                " schedule != \"pingpong\" || BM * BN <= 128 * 128,"
                " warps == 8 || BM * BN / (warps * 32) <= 64,"
                " stages * (BM * BK + BK * BN) * elem_bytes <= smem_bytes,"
                " mma == \"wgmma\" || BK <= 64 && BM * BN / (warps * 32) * BK <= 128 * 32,"
                " mma == \"wgmma\" || warps == 8 || BK < 64 || BN <= BM || stages == 2,"
                " mma == \"sync\" || has_wgmma == 1 && BK * elem_bytes == 128 && stages >= 3"
                " && BM % 64 == 0"
                " && (schedule == \"pingpong\" || BM / (warps / 4) % 64 == 0)"
                " && BN % 64 == 0 && swizzle == \"xor\","
                " load == \"cp_async\" || mma == \"wgmma\""
                " && stages * (BM * BK + BK * BN) * elem_bytes + 8 * stages <= smem_bytes,"
                " schedule == \"plain\" || load == \"tma\" && warps == 8"
                " && stages * (BM * BK + BK * BN) * elem_bytes + 16 * stages <= smem_bytes,"
                " persistent == 0 || schedule != \"plain\" && persistent <= gpu_sms,"
                " epilogue == \"direct\" || mma == \"wgmma\" && schedule == \"plain\""
                " && stages * (BM * BK + BK * BN) * elem_bytes + 8 * stages + BM * BN * 2"
                " <= smem_bytes"
                " || schedule == \"coop\""
                " && stages * (BM * BK + BK * BN) * elem_bytes + 16 * stages + BM * BN * 2"
                " <= smem_bytes"
                " || schedule == \"pingpong\""
                " && stages * (BM * BK + BK * BN) * elem_bytes + 16 * stages + 4 * BM * BN"
                " <= smem_bytes,"
                " CM * CN <= 2, CM * CN == 1 || schedule != \"plain\" && persistent > 0,"
                " (M + BM - 1) / BM % CM == 0, (N + BN - 1) / BN % CN == 0,"
                " K % vector == 0, N % vector == 0,"
                " elem_bytes != 1 || mma == \"wgmma\" && load == \"tma\" && K % 16 == 0)",
  .cuda_default = "block(m=128,n=128,k=32).warps(8).stages(4).vector(8).swizzle(\"xor\").raster(8)"
                  ".mma(\"sync\").load(\"cp_async\").schedule(\"plain\").persistent(0)"
                  ".epilogue(\"direct\").cluster(m=1, n=1)",
  .lower_cuda = gemm_lower_cuda,
  .fp8_cuda_default = "block(m=128,n=128,k=128).warps(8).stages(4).vector(8).swizzle(\"xor\")"
                      ".raster(8).mma(\"wgmma\").load(\"tma\").schedule(\"coop\")"
                      ".persistent(132).epilogue(\"direct\").cluster(m=1, n=1)",
};
