/* op-attention.c — flash_attention and flash_attention_causal: the attention forward pass
 * O = softmax(Q Kᵀ / sqrt(D) [causal mask]) V over B*H independent heads, Q, K, V and O all
 * [B*H, S, D] row-major (seed 004), bf16 or f16 storage with f32 accumulation.
 *
 * Causal is a second op rather than a shape dim: shape dims are sizes, which the Graph IR keeps
 * > 0 (`causal=0` would not parse), and the DB's nearest-shape lookup compares dims by log
 * ratio; as an op name it keys the schedule cache, the FLOP count and the kernel apart without
 * any of that changing. `--shape B=4,H=16,S=4096,D=128` with flash_attention_causal.
 *
 * FLOPs follow the FlashAttention / PyTorch benchmarks: 4·B·H·S²·D (two S×S×D products), half
 * of it for the causal op, whatever the tiles really compute on the diagonal.
 *
 * The CUDA kernels (ts_cuda_attn.cuh): mma("sync") is FlashAttention-2 on mma.sync, one CTA per
 * BM query rows of one head, one warp per 16 of them, Q held in registers, K and V tiles of BN
 * keys streamed through a STAGES-deep cp.async ring, the online softmax on the score fragments
 * and P fed to the P·V mma straight from registers; mma("wgmma") (sm_90a) is FlashAttention-3's
 * structure — a TMA producer warpgroup, two wgmma consumer warpgroups, the softmax overlapped
 * with the GEMMs by schedule(), persistent CTAs by persistent() (attn_lower_cuda_wgmma). */
#include "ts-op-private.h"

#include "ts-numerics.h"

#include <math.h>

#define DIM(s, n) ((double)ts_shape_get((s), (n)))
#define KNOB(name) ts_sched_point_get_int(point, name, -1)

static gboolean
is_causal(const TsOpInstance *inst)
{
  const TsOpDef *op = ts_op_instance_op(inst);
  /* A kernel file's attention lowered through these templates names the causal one. */
  return op == &ts__op_flash_attention_causal ||
         g_strcmp0(op->kernel_template, ts__op_flash_attention_causal.name) == 0;
}

static double
attn_flops(const TsShape *s)
{
  return 4.0 * DIM(s, "B") * DIM(s, "H") * DIM(s, "S") * DIM(s, "S") * DIM(s, "D");
}

static double
attn_causal_flops(const TsShape *s)
{
  return 0.5 * attn_flops(s);
}

/* Q, K and V read once, O written once. */
static double
attn_bytes(const TsShape *s, double elem)
{
  return 4.0 * elem * DIM(s, "B") * DIM(s, "H") * DIM(s, "S") * DIM(s, "D");
}

/* Small problems are checked in full. Large ones (the benchmark's 4x16x4096x128 reference is
 * 2^34 multiply-adds per product, minutes in f64) are checked on ~512 query rows drawn from the
 * data, the other rows marked NaN, which ts_numerics_rel_error leaves out of the norms while
 * still failing any NaN/Inf the kernel writes anywhere. Sampling rows is sound for these
 * kernels because every output row is computed by the same code path — its CTA and warp differ,
 * not the instructions — so a row-dependent bug shows on a fraction of rows that 512 samples
 * hit: the sample always holds the first and last row of a head (the one-key and the full causal
 * row, and the partial tail tile when S is not a multiple of the tile), and its random rows fall
 * both on diagonal tiles (masked) and below them (unmasked) for every causal head. */
static char *
attn_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  const gint64 bh = ts_shape_get(s, "B") * ts_shape_get(s, "H"), seq = ts_shape_get(s, "S"),
               dim = ts_shape_get(s, "D");
  const TsDtype dt = ts_op_instance_dtype(inst)->storage;
  gsize n_rows = 0;
  /* The limit is in gemm's multiply-adds; a score or a weighted value row here costs about 8
   * of those (scalar dot products, an exp per key): 2^28 per product at the default 2^31. */
  g_autofree gint64 *rows = ts_ref_attention_rows(
    bh, seq, dim, inst->reference_limit / 8,
    ts__op_data_hash(in[0], (gsize)(bh * seq * dim) * ts_numerics_elem_size(dt)), &n_rows);
  if (rows != NULL)
    for (gint64 i = 0; i < bh * seq * dim; i++)
      out[i] = NAN;
  ts_ref_attention(dt, in[0], in[1], in[2], out, bh, seq, dim, is_causal(inst), rows, n_rows);
  return rows != NULL ? g_strdup_printf("%" G_GSIZE_FORMAT " query rows", n_rows) : NULL;
}

/* The CPU lowering: FlashAttention's loop on the GEMM micro-kernels. A worker takes tiles of
 * BM query rows (the causal op's longest of a head first); on the first tile of a head it packs
 * the head's K and V into the micro-kernel's f32 B panels (K by rows, as the columns of K^T:
 * 2 S D floats a worker, meant for its L2 or the L3). Per tile it packs Q, scaled by 1/sqrt(D),
 * and walks the key tiles of BN keys:
 *   S = Q K^T on the micro-kernel, into an f32 tile;
 *   per row, the online softmax: m = max(m, the row's max), P = exp(S - m) in place with its
 *   sum l, and where m grew, l and the row of O rescaled by exp(m_old - m);
 *   O += P V on the micro-kernel, reading P row-major where it lies.
 * O / l is rounded into O once, at the end. The worker's Q, S and O tiles stay in its L2 across
 * the key loop. The causal op's key loop stops at the tile's last row, and each row's keys past
 * its own are zero in P. The one-row-at-a-time kernel this replaced (dot products and axpys per
 * key) ran at 0.2x PyTorch's SDPA on one Zen 3 core. */
#define ATTN_CPU_UNROLL 4

/* The micro-tiles of one product, where `when` holds (NULL: all). */
static TsTileNode *
attn_cpu_mma(TsTileNode *parent, const TsSchedPoint *point, const char *c, const char *ldc,
             const char *a, const char *b, const char *kc, const char *accumulate,
             const char *n, const char *nr_valid, const char *when)
{
  const gint64 MR = KNOB("MR"), NR = KNOB("NR"), V = KNOB("vector");
  /* A column of micro-tiles at a time: its B panel stays in L1 while the A panels stream. */
  TsTileNode *jr = ts_tile_for(parent, "jr", "0", n, "NR", TS_FOR_SERIAL);
  TsTileNode *ir = ts_tile_for(jr, "ir", "0", "mc", "MR", TS_FOR_SERIAL);
  if (when != NULL)
    ir = ts_tile_if(ir, when);
  return ts_tile_mma(ir, MR, NR, V, ATTN_CPU_UNROLL, c, ldc, a, b, kc, accumulate,
                     "min(MR, mc - ir)", nr_valid);
}

static gboolean
attn_lower_cpu(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
               GError **error)
{
  const gint64 BM = KNOB("BM"), BN = KNOB("BN"), MR = KNOB("MR"), NR = KNOB("NR"),
               V = KNOB("vector"), T = KNOB("threads");
  const char *op = ts_op_name(ts_op_instance_op(inst));
  if (BM <= 0 || BN <= 0 || MR <= 0 || NR <= 0 || V <= 0 || T <= 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs positive BM, BN, MR, NR, vector and threads knobs",
                op);
    return FALSE;
  }
  /* A key tile starts on a K panel. */
  if (NR % V != 0 || BN % NR != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CPU lowering needs NR a multiple of vector and BN a multiple of NR "
                "(got NR=%" G_GINT64_FORMAT ", vector=%" G_GINT64_FORMAT ", BN=%" G_GINT64_FORMAT
                ")", op, NR, V, BN);
    return FALSE;
  }
  const gboolean causal = is_causal(inst);
  /* The query tile only bounds loops and sizes buffers: read at run time, so the points that
   * differ in it share one compiled kernel. BN is compiled in: it is P's row stride in the P V
   * micro-kernel (as a run-time stride that kernel ran 3% slower at 14 x 8). */
  ts_tile_kernel_launch_const(k, "BM", BM);
  ts_tile_kernel_define(k, "BN", BN);
  ts_tile_kernel_define(k, "MR", MR);
  ts_tile_kernel_define(k, "NR", NR);
  ts_tile_kernel_define(k, "VEC", V);
  TsTileNode *par = ts_tile_parallel(k->body, T);
  ts_tile_alloc(par, k, "Kp", TS_MEM_SHARED, TS_DTYPE_F32, "(S + NR - 1) / NR * NR * D", TRUE,
                "panel(NR): one head's K, its rows the panels' columns");
  ts_tile_alloc(par, k, "Vp", TS_MEM_SHARED, TS_DTYPE_F32, "(D + NR - 1) / NR * NR * S", TRUE,
                "panel(NR): one head's V");
  ts_tile_alloc(par, k, "Qp", TS_MEM_SHARED, TS_DTYPE_F32, "(BM + MR - 1) / MR * MR * D", TRUE,
                "panel(MR): the tile's Q");
  /* Whole MR-row micro-tiles of it are read (P V). */
  ts_tile_alloc(par, k, "St", TS_MEM_SHARED, TS_DTYPE_F32, "(BM + MR - 1) / MR * MR * BN", TRUE,
                "scores, then probabilities, of a key tile");
  ts_tile_alloc(par, k, "Ot", TS_MEM_SHARED, TS_DTYPE_F32, "BM * D", TRUE, "output tile, f32");
  ts_tile_alloc(par, k, "Ms", TS_MEM_SHARED, TS_DTYPE_F32, "BM", TRUE, "running max per row");
  ts_tile_alloc(par, k, "Ls", TS_MEM_SHARED, TS_DTYPE_F32, "BM", TRUE, "running sum per row");
  g_autofree char *scale = g_strdup_printf("%.9gf", 1.0 / sqrt((double)ts_shape_get(
                                                        ts_op_instance_shape(inst), "D")));
  ts_tile_let(par, "scale", TS_DTYPE_F32, scale);
  ts_tile_let(par, "n_qt", TS_DTYPE_INT32, "(S + BM - 1) / BM");
  /* The query tiles of all heads are handed out in one loop, so a team never waits at a
   * barrier between heads; a worker packs a head's K and V when it first takes one of the
   * head's tiles (2 S D conversions a head a worker, against 4 S^2 D FLOPs). */
  TsTileNode *qt = ts_tile_for(par, "t", "0", "B * H * n_qt", "1", TS_FOR_PARALLEL_DYNAMIC);
  ts_tile_let(qt, "bh", TS_DTYPE_INT32, "t / n_qt");
  ts_tile_let(qt, "hb", TS_DTYPE_INT32, "bh * S * D");
  TsTileNode *pk = ts_tile_pack(qt, 2, NR, "K + hb", "D", "D", "S", "Kp");
  ts_tile_pack_set_reuse_key(pk, "bh");
  TsTileNode *pv_pack = ts_tile_pack(qt, 1, NR, "V + hb", "D", "S", "D", "Vp");
  ts_tile_pack_set_reuse_key(pv_pack, "bh");
  ts_tile_let(qt, "q0", TS_DTYPE_INT32, causal ? "(n_qt - 1 - t % n_qt) * BM" : "t % n_qt * BM");
  ts_tile_let(qt, "mc", TS_DTYPE_INT32, "min(BM, S - q0)");
  ts_tile_let(qt, "nk", TS_DTYPE_INT32, causal ? "q0 + mc" : "S");
  ts_tile_pack(qt, 0, MR, "Q + hb + q0 * D", "D", "mc", "D", "Qp");
  /* Q scaled once here, not every score. */
  TsTileNode *qs = ts_tile_map(qt, "qn", "q * scale", "(mc + MR - 1) / MR * MR * D");
  ts_tile_node_add_view(qs, "q", "Qp", "0");
  ts_tile_node_add_view(qs, "qn", "Qp", "0");
  TsTileNode *init = ts_tile_map(qt, "m0", "-INFINITY", "mc");
  ts_tile_node_add_view(init, "m0", "Ms", "0");
  init = ts_tile_map(qt, "l0", "0.0f", "mc");
  ts_tile_node_add_view(init, "l0", "Ls", "0");
  init = ts_tile_map(qt, "o0", "0.0f", "mc * D");
  ts_tile_node_add_view(init, "o0", "Ot", "0");
  /* The rows of P past the tile's last, up to its last micro-tile's, are read (their results
   * dropped): zeros, rather than whatever the buffer held, which may be denormals, slow on
   * some cores. */
  init = ts_tile_map(qt, "s0", "0.0f", "((mc + MR - 1) / MR * MR - mc) * BN");
  ts_tile_node_add_view(init, "s0", "St", "mc * BN");

  TsTileNode *kt = ts_tile_for(qt, "kt", "0", "nk", "BN", TS_FOR_SERIAL);
  ts_tile_let(kt, "nc", TS_DTYPE_INT32, "min(BN, nk - kt)");
  /* The causal op skips the scores of micro-tiles past every row's diagonal (the softmax
   * reads a row's first nv only, and zeroes the rest of P): 2-3% of the kernel at 96 x 96
   * (Zen 3, 4 x 1024^2 x 64). */
  attn_cpu_mma(kt, point, "St + ir * BN + jr", "BN", "Qp + ir * D", "Kp + (kt + jr) * D", "D",
               "0", "nc", "min(NR, nc - jr)", causal ? "kt + jr < q0 + ir + MR" : NULL);
  /* (Loop variables avoid j and acc, the names the emitted row loops use.) */
  TsTileNode *row = ts_tile_for(kt, "i", "0", "mc", "1", TS_FOR_SERIAL);
  ts_tile_let(row, "nv", TS_DTYPE_INT32, causal ? "max(0, min(nc, q0 + i + 1 - kt))" : "nc");
  TsTileNode *mx = ts_tile_reduce(row, "mt", "max", "s", "nv");
  ts_tile_node_add_view(mx, "s", "St", "i * BN");
  ts_tile_let(row, "mo", TS_DTYPE_F32, "Ms[i]");
  ts_tile_let(row, "mn", TS_DTYPE_F32, "max(mo, mt)");
  /* exp(s - m) of the difference, as FlashAttention takes it: exp_fast_sub's split of m for
   * large m cost a scalar exp a row and a key tile, half of the softmax's time (Zen 3, BN=64).
   * 16-bit outputs take the exp for rounded results. */
  const gboolean wide = ts_op_instance_dtype(inst)->storage == TS_DTYPE_F32;
  TsTileNode *p = ts_tile_map(row, "p", wide ? "exp(s - mn)" : "exp_fast(s - mn)", "nv");
  ts_tile_map_set_sum(p, "ps");
  ts_tile_node_add_view(p, "s", "St", "i * BN");
  ts_tile_node_add_view(p, "p", "St", "i * BN");
  if (causal) {
    TsTileNode *z = ts_tile_map(row, "p", "0.0f", "nc - nv");
    ts_tile_node_add_view(z, "p", "St", "i * BN + nv");
  }
  /* l and O rescaled where the max grew, which after the first key tiles is rare. */
  TsTileNode *grew = ts_tile_if(row, "mn > mo");
  ts_tile_let(grew, "corr", TS_DTYPE_F32, "exp(mo - mn)");
  ts_tile_set(grew, "Ls", "i", "Ls[i] * corr");
  TsTileNode *rescale = ts_tile_map(grew, "on", "o * corr", "D");
  ts_tile_node_add_view(rescale, "o", "Ot", "i * D");
  ts_tile_node_add_view(rescale, "on", "Ot", "i * D");
  ts_tile_set(row, "Ls", "i", "Ls[i] + ps");
  ts_tile_set(row, "Ms", "i", "mn");
  /* P is A as the softmax leaves it, row-major: packed, it cost 11% of the kernel (Zen 3,
   * 4x1024x64). The causal op's micro-tile takes the keys up to its last row's diagonal only,
   * the rest of its P being zeros: 4% of the kernel (Zen 3, 4 x 1024^2 x 64 bf16 at 96 x 96, one
   * thread, the median of six alternating runs). */
  TsTileNode *pv = attn_cpu_mma(kt, point, "Ot + ir * D + jr", "D", "St + ir * BN",
                                "Vp + jr * S + kt * NR", causal ? "min(nc, q0 + ir + MR - kt)" : "nc",
                                "1", "D", "min(NR, D - jr)", causal ? "kt < q0 + ir + MR" : NULL);
  ts_tile_mma_set_a_rows(pv, BN);

  TsTileNode *out = ts_tile_for(qt, "i", "0", "mc", "1", TS_FOR_SERIAL);
  ts_tile_let(out, "r", TS_DTYPE_F32, "1.0f / Ls[i]");
  TsTileNode *store = ts_tile_map(out, "o", "a * r", "D");
  ts_tile_node_add_view(store, "a", "Ot", "i * D");
  ts_tile_node_add_view(store, "o", "O", "hb + (q0 + i) * D");
  return TRUE;
}

/* The CUDA lowering. Per CTA: its head and query tile (in reverse, so the causal op's longest
 * rows start first and short ones fill the tail of the launch), Q copied once and loaded into
 * registers, then one loop over the key tiles, each iteration the multi-stage step of the gemm
 * (wait for tile j, barrier, refill the slot tile j-1 used with tile j+STAGES-1, compute on
 * tile j), and finally O / l stored. Only the tiles from n_full on (the causal diagonal, the
 * sequence's partial last tile) are masked, by a warp-uniform test in attn_mask: two loops,
 * unmasked then masked, read better but make ptxas keep both loops' hoisted addresses live and
 * spill (D=64, BN=64, 3 stages: 168 registers and 60 bytes of spills, against 174 and none). */
/* A query tile's head bh and first row q0 (given as expressions); the keys it needs (kv_end),
 * its key tiles (n_kv) and how many of them need no mask at all (n_full). */
static void
attn_tile_keys(TsTileNode *g, const char *bh, const char *q0, gboolean causal)
{
  ts_tile_let(g, "bh", TS_DTYPE_INT32, bh);
  ts_tile_let(g, "q0", TS_DTYPE_INT32, q0);
  if (causal) {
    ts_tile_let(g, "kv_end", TS_DTYPE_INT32, "min(S, q0 + BM)");
    ts_tile_let(g, "n_full", TS_DTYPE_INT32, "(q0 + 1) / BN");
  } else {
    ts_tile_let(g, "kv_end", TS_DTYPE_INT32, "S");
    ts_tile_let(g, "n_full", TS_DTYPE_INT32, "S / BN");
  }
  ts_tile_let(g, "n_kv", TS_DTYPE_INT32, "(kv_end + BN - 1) / BN");
}

/* The wgmma kernel's tile walk: query tile u of B*H*TILES_M in longest-first order (all heads'
 * last query tiles first, the causal op's longest rows, then the next; heads interleaved),
 * CTA bx taking u = bx, bx + gridDim.x, ... — one tile a CTA when the grid has one CTA per
 * tile, several with persistent(P). `lt` is the tile's index among the CTA's; `base` the key
 * tiles the CTA's ring carried before it (kv[0], a running count: the causal op's tiles have
 * different lengths), so slots and phases run on across tiles. */
static TsTileNode *
attn_wg_tiles(TsTileNode *parent, gboolean causal)
{
  TsTileNode *t = ts_tile_for(parent, "u", "bx", "B * H * TILES_M", "gridDim.x", TS_FOR_SERIAL);
  attn_tile_keys(t, "u % (B * H)", "(TILES_M - 1 - u / (B * H)) * BM", causal);
  ts_tile_let(t, "lt", TS_DTYPE_INT32, "(u - bx) / gridDim.x");
  ts_tile_let(t, "base", TS_DTYPE_INT32, "kv[0]");
  ts_tile_let(t, "qb", TS_DTYPE_INT32, "lt % QBUFS");
  return t;
}

/* The scores of the key tile starting at key k0 (just computed) masked where `needed`, then
 * the softmax step: P in their registers, the tile's rescale factors in alpha. */
static void
attn_wg_softmax(TsTileNode *parent, const char *k0, const char *needed)
{
  ts_tile_intrinsic(parent, "attn_mask", "BN=BN,CAUSAL=CAUSAL,T0=128", "s", "q0", k0, "S",
                    needed, NULL);
  ts_tile_intrinsic(parent, "attn_softmax_step", "BN=BN", "s", "m", "l", "alpha", "scale_log2",
                    NULL);
}

/* O rescaled by the last softmax's factors, then the P·V of the key tile in ring slot `slot`
 * issued (P packed in p). */
static void
attn_wg_pv_next(TsTileNode *parent, const char *pv, const char *slot)
{
  g_autofree char *vs = g_strdup_printf("Vs + %s * BN * HD", slot);
  ts_tile_intrinsic(parent, "attn_rescale", "D=HD", "o", "alpha", NULL);
  ts_tile_intrinsic(parent, "attn_wg_pv_issue", pv, "o", "(const unsigned *)p", vs, NULL);
}

/* The consumer loop of schedule("overlap") and ("pingpong"), FlashAttention-3's two
 * overlaps. Within a warpgroup: key tile j's Q·Kᵀ and tile j - 1's P·V are issued together,
 * and the softmax of tile j runs while P·V still multiplies — so O is rescaled by tile j's
 * alpha only before the next P·V is issued, and P is kept packed (p) for it. Tile 0's Q·Kᵀ
 * and softmax come first, the last tile's P·V after the loop; the slot of tile j - 1 is
 * released once its P·V has finished. pingpong: the warpgroups' issues take turns on named
 * barriers 1 and 2 (ts_order_wait / ts_order_signal, as gemm's ping-pong), so one
 * warpgroup's softmax runs under the other's GEMMs; each warpgroup has n_kv + 1 turns a query
 * tile, the first warpgroup's first one of the CTA waiting for no one and the second's last
 * passing to no one. */
static void
attn_wgmma_overlap(TsTileNode *ct, TsTileKernel *k, const char *t, gboolean pingpong)
{
  g_autofree char *qk = g_strdup_printf("T=%s,BM=BM,BN=BN,D=HD,WG0=1", t);
  g_autofree char *pv = g_strdup_printf("T=%s,BN=BN,D=HD", t);
  g_autofree char *pack = g_strdup_printf("T=%s,BN=BN", t);
  ts_tile_alloc(ct, k, "p", TS_MEM_REGISTER, TS_DTYPE_INT32, "BN / 4", FALSE,
                "the last tile's probabilities in pairs of 16 bits, P·V's A fragments");
  ts_tile_alloc(ct, k, "alpha", TS_MEM_REGISTER, TS_DTYPE_F32, "2", FALSE,
                "the last tile's rescale factors of rows lane/4 and lane/4 + 8");
  ts_tile_let(ct, "first", TS_DTYPE_INT32, "base % STAGES");
  ts_tile_intrinsic(ct, "mbar_wait", NULL, "bars + 2 * first", "base / STAGES", NULL);
  if (pingpong)
    ts_tile_intrinsic(ct, "order_wait", NULL, "wg", "wg == 2 || lt > 0", NULL);
  ts_tile_intrinsic(ct, "attn_wg_qk_issue", qk, "s", "Qs + qb * BM * HD", "Ks + first * BN * HD",
                    NULL);
  if (pingpong)
    ts_tile_intrinsic(ct, "order_signal", NULL, "3 - wg", "true", NULL);
  ts_tile_intrinsic(ct, "attn_wg_wait", "N=0,NACC=BN / 2", "s", NULL);
  attn_wg_softmax(ct, "0", "0 >= n_full");
  ts_tile_intrinsic(ct, "attn_pack_p", pack, "(unsigned *)p", "s", NULL);

  TsTileNode *j = ts_tile_for(ct, "j", "1", "n_kv", "1", TS_FOR_SERIAL);
  ts_tile_let(j, "slot", TS_DTYPE_INT32, "(base + j) % STAGES");
  ts_tile_let(j, "prev", TS_DTYPE_INT32, "(base + j - 1) % STAGES");
  ts_tile_intrinsic(j, "mbar_wait", NULL, "bars + 2 * slot", "(base + j) / STAGES", NULL);
  if (pingpong)
    ts_tile_intrinsic(j, "order_wait", NULL, "wg", "true", NULL);
  ts_tile_intrinsic(j, "attn_wg_qk_issue", qk, "s", "Qs + qb * BM * HD", "Ks + slot * BN * HD",
                    NULL);
  attn_wg_pv_next(j, pv, "prev");
  if (pingpong)
    ts_tile_intrinsic(j, "order_signal", NULL, "3 - wg", "true", NULL);
  /* Groups finish in order: one left unfinished is the P·V. */
  ts_tile_intrinsic(j, "attn_wg_wait", "N=1,NACC=BN / 2", "s", NULL);
  attn_wg_softmax(j, "j * BN", "j >= n_full");
  ts_tile_intrinsic(j, "attn_wg_wait", "N=0,NACC=HD / 2", "o", NULL);
  ts_tile_intrinsic(j, "mbar_arrive_wg", NULL, "bars + 2 * (STAGES + prev)", "true", NULL);
  ts_tile_intrinsic(j, "attn_pack_p", pack, "(unsigned *)p", "s", NULL);

  /* The query tile's last turn passes to the other warpgroup unless it is the second's last
   * of the CTA. */
  ts_tile_let(ct, "last", TS_DTYPE_INT32, "(base + n_kv - 1) % STAGES");
  if (pingpong)
    ts_tile_intrinsic(ct, "order_wait", NULL, "wg", "true", NULL);
  attn_wg_pv_next(ct, pv, "last");
  if (pingpong)
    ts_tile_intrinsic(ct, "order_signal", NULL, "3 - wg",
                      "wg == 1 || u + gridDim.x < B * H * TILES_M", NULL);
  ts_tile_intrinsic(ct, "attn_wg_wait", "N=0,NACC=HD / 2", "o", NULL);
  ts_tile_intrinsic(ct, "mbar_arrive_wg", NULL, "bars + 2 * (STAGES + last)", "true", NULL);
}

/* mma("wgmma"), sm_90a: FlashAttention-3's structure (ts_cuda_attn.cuh). Query tiles of
 * BM = 128 rows of one head, walked longest first (attn_wg_tiles): one a CTA, or with
 * persistent(P) P CTAs walking them all; three warpgroups. The producer's thread 0 loads each
 * tile's Q into one of QBUFS buffers (two when persistent, so the next tile's Q lands while the
 * consumers finish this one; a buffer is refilled once both consumers have released it) and,
 * for each key tile, waits until its ring slot has been released by both consumers (the
 * slot's empty barrier), posts K's and V's bytes on the slot's full barrier and issues their
 * TMA boxes. Each consumer warpgroup (64 query rows) waits for its Q, then per key tile for
 * the slot's full phase: S = Q·Kᵀ (wgmma, both from shared memory), the mask where needed, the
 * online softmax, O += P·V (wgmma, P from registers), and the release of the slot; after the
 * tile it releases the Q buffer and stores O. The ring's slot and phase come from the running
 * count of key tiles, the same in every role. The tensors are read as [B*H*S, D] matrices:
 * a tile running past its head's S reads the next head's rows (or the TMA's zeros past the
 * last), which the mask turns into p = 0, and rows past S are not stored. The producer keeps
 * 40 registers a thread and the consumers take 232, as gemm's (setmaxnreg: the CTA keeps the
 * 168 a thread of its launch, and the producer's 128 fewer pay for 64 more in each consumer;
 * with FlashAttention-3's 24 or with 32, the producer's loop spilled: 44 and 16 bytes at 3
 * stages, sm_90a, CUDA 13.0). */
static gboolean
attn_lower_cuda_wgmma(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                      GError **error)
{
  const char *name = ts_op_name(ts_op_instance_op(inst));
  const gint64 BM = KNOB("BM"), BN = KNOB("BN"), W = KNOB("warps"), ST = KNOB("stages");
  const gint64 P = ts_sched_point_get_int(point, "persistent", 0);
  const TsDtype dt = ts_op_instance_dtype(inst)->storage;
  const TsShape *shape = ts_op_instance_shape(inst);
  const gint64 D = ts_shape_get(shape, "D"), S = ts_shape_get(shape, "S"),
               BH = ts_shape_get(shape, "B") * ts_shape_get(shape, "H");
  const gboolean causal = is_causal(inst);
  const char *sched = ts_sched_point_get_str(point, "schedule", "coop");
  const gboolean pingpong = g_strcmp0(sched, "pingpong") == 0;
  const gboolean overlap = pingpong || g_strcmp0(sched, "overlap") == 0;
  const gboolean tma_store =
    g_strcmp0(ts_sched_point_get_str(point, "epilogue", "direct"), "tma") == 0;
  if (!overlap && g_strcmp0(sched, "coop") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: schedule(\"%s\"): mma(\"wgmma\") has \"coop\" (each consumer "
                "multiplies, then runs the softmax), \"overlap\" (the next Q·Kᵀ and this P·V "
                "in flight during the softmax) and \"pingpong\" (overlap, the consumers' "
                "GEMMs taking turns)", name, sched);
    return FALSE;
  }
  if (BM != 128 || W != 8 || (BN != 64 && BN != 128) || ST < 2 || P < 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: mma(\"wgmma\") has two consumer warpgroups of 64 query rows beside the "
                "producer: it needs block(m=128), warps(8), BN 64 or 128, at least 2 stages "
                "and persistent(0) or a CTA count", name);
    return FALSE;
  }
  const gint64 tiles_m = (S + BM - 1) / BM, elem = ts_dtype_bits(dt) / 8;
  if (BH * S > G_MAXINT32 || BH * tiles_m > G_MAXINT32) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                "%s: mma(\"wgmma\") addresses the B*H*S = %" G_GINT64_FORMAT " rows of Q, K "
                "and V with 32-bit TMA coordinates; at most 2^31 - 1", name, BH * S);
    return FALSE;
  }
  const gint64 tiles = BH * tiles_m, ctas = P > 0 ? MIN(P, tiles) : tiles;
  const gint64 QB = P > 0 ? 2 : 1;
  /* Q's buffers, the K and V rings, then 2 * STAGES + 2 * QBUFS mbarriers of 8 bytes. */
  const gint64 smem = (QB * BM + 2 * ST * BN) * D * elem + 8 * (2 * ST + 2 * QB);

  ts_tile_kernel_define(k, "BM", BM);
  ts_tile_kernel_define(k, "BN", BN);
  ts_tile_kernel_define(k, "HD", D);
  ts_tile_kernel_define(k, "STAGES", ST);
  ts_tile_kernel_define(k, "QBUFS", QB);
  ts_tile_kernel_define(k, "CAUSAL", causal);
  ts_tile_kernel_define(k, "TILES_M", tiles_m);
  ts_tile_kernel_define(k, "Q_BYTES", BM * D * elem);
  ts_tile_kernel_define(k, "KV_BYTES", 2 * BN * D * elem);
  ts_tile_kernel_define(k, "PRODUCER_REGS", 40);
  ts_tile_kernel_define(k, "CONSUMER_REGS", 232);
  /* Boxes of one 128-byte panel row by a tile's rows. */
  ts_tile_kernel_add_tensor_map(k, "tma_q", "Q", "D", "B*H*S", 128 / elem, BM, 128);
  ts_tile_kernel_add_tensor_map(k, "tma_k", "K", "D", "B*H*S", 128 / elem, BN, 128);
  ts_tile_kernel_add_tensor_map(k, "tma_v", "V", "D", "B*H*S", 128 / elem, BN, 128);
  if (tma_store) /* a consumer's 64 rows of one panel a box */
    ts_tile_kernel_add_tensor_map(k, "tma_o", "O", "D", "B*H*S", 128 / elem, 64, 128);

  const char *t = ts_dtype_name(dt);
  TsTileNode *g = ts_tile_grid(k->body, ctas, 1, 1, 384, smem);
  ts_tile_alloc(g, k, "Qs", TS_MEM_SHARED, dt, "QBUFS * BM * HD", FALSE,
                "QBUFS BM x D query tiles: D/64 panels of BM 128-byte rows, 128-byte swizzle");
  ts_tile_alloc(g, k, "Ks", TS_MEM_SHARED, dt, "STAGES * BN * HD", FALSE,
                "ring of STAGES BN x D key tiles, panels as Q's");
  ts_tile_alloc(g, k, "Vs", TS_MEM_SHARED, dt, "STAGES * BN * HD", FALSE,
                "ring of STAGES BN x D value tiles, panels as Q's");
  ts_tile_alloc(g, k, "bars", TS_MEM_SHARED, TS_DTYPE_INT32, "2 * (2 * STAGES + 2 * QBUFS)",
                FALSE,
                "mbarriers (8 bytes each): full[STAGES], empty[STAGES], Q full[QBUFS], Q "
                "empty[QBUFS]");
  ts_tile_intrinsic(g, "attn_ws_init", "STAGES=STAGES,QBUFS=QBUFS", "bars", "tma_q", "tma_k",
                    "tma_v", NULL);
  ts_tile_barrier(g);
  ts_tile_let(g, "wg", TS_DTYPE_INT32, "ts_warpgroup()");

  g_autofree char *load_q = g_strdup_printf("T=%s,ROWS=BM,COLS=HD", t);
  g_autofree char *load_kv = g_strdup_printf("T=%s,ROWS=BN,COLS=HD", t);
  TsTileNode *prod = ts_tile_if(g, "wg == 0");
  ts_tile_intrinsic(prod, "setmaxnreg_dec", "N=PRODUCER_REGS", NULL);
  TsTileNode *lead = ts_tile_if(prod, "threadIdx.x == 0");
  ts_tile_alloc(lead, k, "kv", TS_MEM_REGISTER, TS_DTYPE_INT32, "1", FALSE,
                "key tiles loaded for the CTA's earlier query tiles");
  TsTileNode *pt = attn_wg_tiles(lead, causal);
  TsTileNode *qreuse = ts_tile_if(pt, "lt >= QBUFS");
  ts_tile_intrinsic(qreuse, "mbar_wait", NULL, "bars + 2 * (2 * STAGES + QBUFS + qb)",
                    "lt / QBUFS - 1", NULL);
  ts_tile_intrinsic(pt, "tma_expect", "BYTES=Q_BYTES", "bars + 2 * (2 * STAGES + qb)", "true",
                    NULL);
  ts_tile_intrinsic(pt, "tma_load_tile", load_q, "Qs + qb * BM * HD", "tma_q", "bh * S + q0",
                    "0", "bars + 2 * (2 * STAGES + qb)", "true", NULL);
  TsTileNode *pj = ts_tile_for(pt, "j", "0", "n_kv", "1", TS_FOR_SERIAL);
  ts_tile_let(pj, "it", TS_DTYPE_INT32, "base + j");
  ts_tile_let(pj, "slot", TS_DTYPE_INT32, "it % STAGES");
  TsTileNode *reuse = ts_tile_if(pj, "it >= STAGES");
  ts_tile_intrinsic(reuse, "mbar_wait", NULL, "bars + 2 * (STAGES + slot)", "it / STAGES - 1",
                    NULL);
  ts_tile_intrinsic(pj, "tma_expect", "BYTES=KV_BYTES", "bars + 2 * slot", "true", NULL);
  ts_tile_intrinsic(pj, "tma_load_tile", load_kv, "Ks + slot * BN * HD", "tma_k",
                    "bh * S + j * BN", "0", "bars + 2 * slot", "true", NULL);
  ts_tile_intrinsic(pj, "tma_load_tile", load_kv, "Vs + slot * BN * HD", "tma_v",
                    "bh * S + j * BN", "0", "bars + 2 * slot", "true", NULL);
  ts_tile_intrinsic(pt, "count_add", NULL, "kv", "n_kv", NULL);

  TsTileNode *cons = ts_tile_if(g, "wg > 0");
  ts_tile_intrinsic(cons, "setmaxnreg_inc", "N=CONSUMER_REGS", NULL);
  ts_tile_alloc(cons, k, "kv", TS_MEM_REGISTER, TS_DTYPE_INT32, "1", FALSE,
                "key tiles consumed for the CTA's earlier query tiles");
  g_autofree char *scale = g_strdup_printf("%.9gf", M_LOG2E / sqrt((double)D));
  ts_tile_let(cons, "scale_log2", TS_DTYPE_F32, scale);
  TsTileNode *ct = attn_wg_tiles(cons, causal);
  ts_tile_alloc(ct, k, "o", TS_MEM_REGISTER, TS_DTYPE_F32, "HD / 2", FALSE,
                "O accumulator of the warpgroup's 64 rows, m64nDk16 layout [D/8][4], zeroed "
                "per query tile");
  ts_tile_alloc(ct, k, "s", TS_MEM_REGISTER, TS_DTYPE_F32, "BN / 2", FALSE,
                "scores, then probabilities, m64nBNk16 layout [BN/8][4]");
  ts_tile_alloc(ct, k, "m", TS_MEM_REGISTER, TS_DTYPE_F32, "2", FALSE,
                "running row max, rows lane/4 and lane/4 + 8 of the warp's 16");
  ts_tile_alloc(ct, k, "l", TS_MEM_REGISTER, TS_DTYPE_F32, "2", FALSE,
                "running row sum, this thread's columns");
  ts_tile_intrinsic(ct, "attn_softmax_init", NULL, "m", "l", NULL);
  ts_tile_intrinsic(ct, "mbar_wait", NULL, "bars + 2 * (2 * STAGES + qb)", "lt / QBUFS", NULL);
  g_autofree char *qk = g_strdup_printf("T=%s,BM=BM,BN=BN,D=HD,WG0=1", t);
  g_autofree char *pv = g_strdup_printf("T=%s,BN=BN,D=HD", t);
  if (!overlap) {
    TsTileNode *j = ts_tile_for(ct, "j", "0", "n_kv", "1", TS_FOR_SERIAL);
    ts_tile_let(j, "it", TS_DTYPE_INT32, "base + j");
    ts_tile_let(j, "slot", TS_DTYPE_INT32, "it % STAGES");
    ts_tile_intrinsic(j, "mbar_wait", NULL, "bars + 2 * slot", "it / STAGES", NULL);
    ts_tile_intrinsic(j, "attn_wg_qk", qk, "s", "Qs + qb * BM * HD", "Ks + slot * BN * HD",
                      NULL);
    ts_tile_intrinsic(j, "attn_mask", "BN=BN,CAUSAL=CAUSAL,T0=128", "s", "q0", "j * BN", "S",
                      "j >= n_full", NULL);
    ts_tile_intrinsic(j, "attn_softmax_online", "BN=BN,D=HD", "s", "m", "l", "o", "scale_log2",
                      NULL);
    ts_tile_intrinsic(j, "attn_wg_pv", pv, "o", "s", "Vs + slot * BN * HD", NULL);
    ts_tile_intrinsic(j, "mbar_arrive_wg", NULL, "bars + 2 * (STAGES + slot)", "true", NULL);
  } else {
    attn_wgmma_overlap(ct, k, t, pingpong);
  }
  /* Every Q·Kᵀ of the tile has finished: its Q buffer may be refilled — with epilogue("tma")
   * once O has been staged in the consumer's rows of it and stored (the stores read, by the
   * thread that arrives), where the consumer's 64 rows lie inside the head; rows past S are
   * stored by each thread, as with "direct". */
  const char *q_empty = "bars + 2 * (2 * STAGES + QBUFS + qb)";
  g_autofree char *store = g_strdup_printf("T=%s,D=HD,T0=128", t);
  TsTileNode *direct = ct;
  if (tma_store) {
    g_autofree char *staged = g_strdup_printf("T=%s,BM=BM,D=HD,T0=128", t);
    TsTileNode *whole = ts_tile_if(ct, "q0 + 64 * wg <= S");
    ts_tile_intrinsic(whole, "attn_store_tma", staged, "Qs + qb * BM * HD", "tma_o",
                      "bh * S + q0", "o", "l", NULL);
    ts_tile_intrinsic(whole, "mbar_arrive_wg", NULL, q_empty, "true", NULL);
    direct = ts_tile_if(ct, "q0 + 64 * wg > S");
  }
  ts_tile_intrinsic(direct, "mbar_arrive_wg", NULL, q_empty, "true", NULL);
  ts_tile_intrinsic(direct, "attn_store", store, "O + bh * S * HD", "o", "l", "q0", "S", NULL);
  ts_tile_intrinsic(ct, "count_add", NULL, "kv", "n_kv", NULL);
  if (tma_store)
    ts_tile_intrinsic(cons, "tma_store_drain", NULL, NULL);
  return TRUE;
}

static gboolean
attn_lower_cuda(const TsOpInstance *inst, const TsSchedPoint *point, TsTileKernel *k,
                GError **error)
{
  const char *name = ts_op_name(ts_op_instance_op(inst));
  const gint64 BM = KNOB("BM"), BN = KNOB("BN"), W = KNOB("warps"), ST = KNOB("stages");
  const TsDtype dt = ts_op_instance_dtype(inst)->storage;
  const TsShape *shape = ts_op_instance_shape(inst);
  const gint64 D = ts_shape_get(shape, "D"), S = ts_shape_get(shape, "S"),
               BH = ts_shape_get(shape, "B") * ts_shape_get(shape, "H");
  const gboolean causal = is_causal(inst);
  if (dt != TS_DTYPE_BF16 && dt != TS_DTYPE_F16) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_DTYPE,
                "%s: the CUDA kernel uses tensor cores and takes bf16 or f16 (f32 accumulation); "
                "%s is not supported on the GPU", name, ts_dtype_name(dt));
    return FALSE;
  }
  if (D != 64 && D != 128) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                "%s: the CUDA kernel supports head dims D=64 and D=128, not D=%" G_GINT64_FORMAT,
                name, D);
    return FALSE;
  }
  const char *mma_knob = ts_sched_point_get_str(point, "mma", "sync");
  const char *epilogue = ts_sched_point_get_str(point, "epilogue", "direct");
  if (g_strcmp0(epilogue, "direct") != 0 &&
      (g_strcmp0(epilogue, "tma") != 0 || g_strcmp0(mma_knob, "wgmma") != 0)) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: epilogue(\"%s\"): the CUDA lowering has \"direct\" (each thread stores its "
                "rows of O) and, with mma(\"wgmma\"), \"tma\" (O staged in the Q buffer by "
                "stmatrix, stored by the TMA)", name, epilogue);
    return FALSE;
  }
  if (g_strcmp0(mma_knob, "wgmma") == 0)
    return attn_lower_cuda_wgmma(inst, point, k, error);
  if (g_strcmp0(mma_knob, "sync") != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: mma(\"%s\"): the CUDA lowering has \"sync\" (FlashAttention-2 on "
                "mma.sync) and \"wgmma\" (FlashAttention-3 style, sm_90a)", name, mma_knob);
    return FALSE;
  }
  if (BM <= 0 || BM % 16 || W != BM / 16 || BN <= 0 || BN % 16 || ST < 2) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: the CUDA lowering needs BM and BN multiples of 16, warps = BM / 16 (a warp "
                "per 16 query rows) and at least 2 stages", name);
    return FALSE;
  }
  /* A CTA's threads copy 16 * BM / D whole rows a pass (ts_attn_copy_rows_async). */
  if (BN % (16 * BM / D) != 0) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SCHEDULE,
                "%s: BN=%" G_GINT64_FORMAT " must be a multiple of %" G_GINT64_FORMAT
                " (the key rows %" G_GINT64_FORMAT " threads copy a pass at D=%" G_GINT64_FORMAT
                ")", name, BN, 16 * BM / D, W * 32, D);
    return FALSE;
  }
  const gint64 tiles_m = (S + BM - 1) / BM, elem = ts_dtype_bits(dt) / 8;
  if (tiles_m * BH > G_MAXINT32) {
    g_set_error(error, TS_OP_ERROR, TS_OP_ERROR_SHAPE,
                "%s: %" G_GINT64_FORMAT " CTAs (B*H x S/BM) exceed the grid's 2^31 - 1", name,
                tiles_m * BH);
    return FALSE;
  }
  const gint64 smem = (BM + 2 * ST * BN) * D * elem;

  ts_tile_kernel_define(k, "BM", BM);
  ts_tile_kernel_define(k, "BN", BN);
  ts_tile_kernel_define(k, "HD", D);
  ts_tile_kernel_define(k, "STAGES", ST);
  ts_tile_kernel_define(k, "THREADS", W * 32);
  ts_tile_kernel_define(k, "CAUSAL", causal);
  ts_tile_kernel_define(k, "TILES_M", tiles_m);

  const char *t = ts_dtype_name(dt);
  TsTileNode *g = ts_tile_grid(k->body, tiles_m * BH, 1, 1, W * 32, smem);
  ts_tile_alloc(g, k, "Qs", TS_MEM_SHARED, dt, "BM * HD", FALSE,
                "BM x D query tile, row-major, 16-byte chunks xor-swizzled by row");
  ts_tile_alloc(g, k, "Ks", TS_MEM_SHARED, dt, "STAGES * BN * HD", FALSE,
                "ring of STAGES BN x D key tiles, row-major, swizzled");
  ts_tile_alloc(g, k, "Vs", TS_MEM_SHARED, dt, "STAGES * BN * HD", FALSE,
                "ring of STAGES BN x D value tiles, row-major, swizzled");
  ts_tile_alloc(g, k, "qf", TS_MEM_REGISTER, TS_DTYPE_INT32, "HD / 4", FALSE,
                "the warp's 16 query rows as m16k16 A fragments [D/16][4]");
  ts_tile_alloc(g, k, "o", TS_MEM_REGISTER, TS_DTYPE_F32, "HD / 2", FALSE,
                "O accumulator, m16n8 fragments [D/8][4]");
  ts_tile_alloc(g, k, "s", TS_MEM_REGISTER, TS_DTYPE_F32, "BN / 2", FALSE,
                "scores, then probabilities, m16n8 fragments [BN/8][4]");
  ts_tile_alloc(g, k, "m", TS_MEM_REGISTER, TS_DTYPE_F32, "2", FALSE,
                "running row max, rows lane/4 and lane/4 + 8");
  ts_tile_alloc(g, k, "l", TS_MEM_REGISTER, TS_DTYPE_F32, "2", FALSE,
                "running row sum, this thread's columns");

  /* Query tiles in reverse, so the causal op's longest rows start first and short ones fill
   * the tail of the launch. */
  attn_tile_keys(g, "bx / TILES_M", "(TILES_M - 1 - bx % TILES_M) * BM", causal);
  ts_tile_let(g, "head", TS_DTYPE_INT32, "bh * S * D");
  /* 1/sqrt(D) folded with log2(e): softmax as exp2. */
  g_autofree char *scale = g_strdup_printf("%.9gf", M_LOG2E / sqrt((double)D));
  ts_tile_let(g, "scale_log2", TS_DTYPE_F32, scale);
  ts_tile_intrinsic(g, "attn_softmax_init", NULL, "m", "l", NULL);

  g_autofree char *copy_q = g_strdup_printf("T=%s,ROWS=BM,D=HD,THREADS=THREADS", t);
  g_autofree char *copy_kv = g_strdup_printf("T=%s,ROWS=BN,D=HD,THREADS=THREADS", t);
  ts_tile_intrinsic(g, "attn_copy_rows_async", copy_q, "Qs", "Q + head", "q0", "S", NULL);
  TsTileNode *pro = ts_tile_for(g, "st", "0", "STAGES - 1", "1", TS_FOR_UNROLL);
  ts_tile_intrinsic(pro, "attn_copy_rows_async", copy_kv, "Ks + st * BN * HD", "K + head",
                    "st * BN", "kv_end", NULL);
  ts_tile_intrinsic(pro, "attn_copy_rows_async", copy_kv, "Vs + st * BN * HD", "V + head",
                    "st * BN", "kv_end", NULL);
  ts_tile_intrinsic(pro, "async_commit", NULL, NULL);
  g_autofree char *wait = g_strdup_printf("PENDING=%" G_GINT64_FORMAT, ST - 2);
  ts_tile_intrinsic(g, "async_wait", wait, NULL);
  ts_tile_barrier(g);
  g_autofree char *load_q = g_strdup_printf("T=%s,D=HD", t);
  ts_tile_intrinsic(g, "attn_load_q", load_q, "qf", "Qs", NULL);

  g_autofree char *mma = g_strdup_printf("T=%s,BN=BN,D=HD", t);
  TsTileNode *j = ts_tile_for(g, "j", "0", "n_kv", "1", TS_FOR_SERIAL);
  ts_tile_intrinsic(j, "async_wait", wait, NULL);
  ts_tile_barrier(j);
  ts_tile_let(j, "fill", TS_DTYPE_INT32, "(j + STAGES - 1) % STAGES");
  ts_tile_intrinsic(j, "attn_copy_rows_async", copy_kv, "Ks + fill * BN * HD", "K + head",
                    "(j + STAGES - 1) * BN", "kv_end", NULL);
  ts_tile_intrinsic(j, "attn_copy_rows_async", copy_kv, "Vs + fill * BN * HD", "V + head",
                    "(j + STAGES - 1) * BN", "kv_end", NULL);
  ts_tile_intrinsic(j, "async_commit", NULL, NULL);
  ts_tile_let(j, "slot", TS_DTYPE_INT32, "j % STAGES");
  ts_tile_intrinsic(j, "attn_mma_qk", mma, "s", "qf", "Ks + slot * BN * HD", NULL);
  ts_tile_intrinsic(j, "attn_mask", "BN=BN,CAUSAL=CAUSAL", "s", "q0", "j * BN", "S",
                    "j >= n_full", NULL);
  ts_tile_intrinsic(j, "attn_softmax_online", "BN=BN,D=HD", "s", "m", "l", "o", "scale_log2",
                    NULL);
  ts_tile_intrinsic(j, "attn_mma_pv", mma, "o", "s", "Vs + slot * BN * HD", NULL);
  ts_tile_intrinsic(g, "async_wait", "PENDING=0", NULL);
  g_autofree char *store = g_strdup_printf("T=%s,D=HD", t);
  ts_tile_intrinsic(g, "attn_store", store, "O + head", "o", "l", "q0", "S", NULL);
  return TRUE;
}

/* Every point: a warp per 16 query rows; the Q tile plus two rings of STAGES key/value tiles
 * within the arch's shared memory (sm_80 allows 163 KiB a block, sm_90a 227 KiB); and, on
 * mma.sync, no more than 64 score registers a thread at D=128 (o alone is 64 there, Q 32).
 * mma("wgmma") (has_wgmma: sm_90a) has two consumer warpgroups of 64 rows (BM = 128, warps(8)
 * counting the consumers), key tiles of whole 64-row wgmma widths and the ring's mbarriers;
 * schedule() picks among its consumer loops ("coop" only on mma.sync, which has one);
 * persistent(P) (wgmma only; the device's SM count, pruned above gpu_sms) walks the query
 * tiles with P CTAs and double-buffers Q; epilogue("tma") (wgmma only) stages O in the Q
 * buffer, so it costs no shared memory. Its Q lives in shared memory, so at D=128 a thread
 * holds 64 O and BN / 2 score floats and BN / 4 packed probabilities within its 232
 * registers. */
#define ATTN_CUDA_SPACE                                                                        \
  "block(m=[64,128], n=[32,64,128]).warps([4,8]).stages([2,3]).mma([\"sync\",\"wgmma\"])"      \
  ".schedule([\"coop\",\"overlap\",\"pingpong\"]).persistent([0,132])"                            \
  ".epilogue([\"direct\",\"tma\"])"                                                               \
  ".where(warps * 16 == BM, schedule == \"coop\" || mma == \"wgmma\","                           \
  " epilogue == \"direct\" || mma == \"wgmma\","                                                  \
  " persistent == 0 || mma == \"wgmma\" && persistent <= gpu_sms"                                \
  " && (2 * BM + 2 * stages * BN) * D * 2 + 8 * (2 * stages + 4) <= smem_bytes,"                \
  " (BM + 2 * stages * BN) * D * 2 <= smem_bytes,"                                             \
  " mma == \"sync\" && BN * D <= 8192"                                                          \
  " || mma == \"wgmma\" && has_wgmma == 1 && BM == 128 && BN % 64 == 0"                         \
  " && (BM + 2 * stages * BN) * D * 2 + 8 * (2 * stages + 2) <= smem_bytes)"
#define ATTN_CUDA_DEFAULT                                                                      \
  "block(m=128,n=64).warps(8).stages(2).mma(\"sync\").schedule(\"coop\").persistent(0)"             \
  ".epilogue(\"direct\")"

/* The micro-tiles are gemm's (MR * NR / vector accumulators within the registers: 12 and 14
 * rows for AVX-512's 32, or for 8-wide columns on AVX2); a key tile is whole K panels. */
#define ATTN_CPU_SPACE                                                                         \
  "block(m=[32,48,64,96,128], n=[32,48,64,96,128]).micro(m=[4,6,8,12,14], n=[8,16,24,32])"     \
  ".vector([4,8,16]).threads([1,2])"                                                           \
  ".where(NR % vector == 0, vector <= simd_floats, BN % NR == 0,"                              \
  " MR * NR / vector <= vector_registers)"
#define ATTN_CPU_DEFAULT "block(m=96,n=96).micro(m=6,n=16).vector(8).threads(2)"

#define ATTN_COMMON                                                                            \
  .n_inputs = 3,                                                                               \
  .inputs = {{"Q", "\"B*H\",\"S\",\"D\"", -2.0, 2.0},                                          \
             {"K", "\"B*H\",\"S\",\"D\"", -2.0, 2.0},                                          \
             {"V", "\"B*H\",\"S\",\"D\"", -1.0, 1.0}},                                         \
  .output = {"O", "\"B*H\",\"S\",\"D\"", 0, 0},                                                \
  .dims = "B,H,S,D",                                                                           \
  .cpu_space = ATTN_CPU_SPACE,                                                                 \
  .cpu_default = ATTN_CPU_DEFAULT,                                                             \
  .bytes = attn_bytes,                                                                         \
  .reference = attn_reference,                                                                 \
  .lower_cpu = attn_lower_cpu,                                                                 \
  .cuda_space = ATTN_CUDA_SPACE,                                                               \
  .cuda_default = ATTN_CUDA_DEFAULT,                                                           \
  .lower_cuda = attn_lower_cuda

const TsOpDef ts__op_flash_attention = {
  .name = "flash_attention",
  .summary = "O[B*H,S,D] = softmax(Q K^T / sqrt(D)) V (online softmax); bf16/f16, f32 accum",
  .tensor_math = TRUE,
  .flops = attn_flops,
  ATTN_COMMON,
};

const TsOpDef ts__op_flash_attention_causal = {
  .name = "flash_attention_causal",
  .summary = "flash_attention with the causal mask (key <= query); FLOPs counted as half",
  .tensor_math = TRUE,
  .flops = attn_causal_flops,
  ATTN_COMMON,
};
