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

static void
gemm_reference(const TsOpInstance *inst, void *const *in, double *out)
{
  const TsShape *s = ts_op_instance_shape(inst);
  ts_ref_gemm(ts_op_instance_dtype(inst)->storage, in[0], in[1], out, ts_shape_get(s, "M"),
              ts_shape_get(s, "N"), ts_shape_get(s, "K"));
}

#define KNOB(name) ts_sched_point_get_int(point, name, -1)

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
  ts_tile_kernel_define(k, "BM", BM);
  ts_tile_kernel_define(k, "BN", BN);
  ts_tile_kernel_define(k, "BK", BK);
  ts_tile_kernel_define(k, "MR", MR);
  ts_tile_kernel_define(k, "NR", NR);
  ts_tile_kernel_define(k, "VEC", V);

  gboolean narrow_out = ts_op_instance_dtype(inst)->storage != TS_DTYPE_F32;
  TsTileNode *body = k->body;
  const char *cd = "C";
  if (narrow_out) {
    ts_tile_alloc(body, k, "Cw", TS_MEM_GLOBAL, TS_DTYPE_F32, "M * N", FALSE,
                  "row-major f32 accumulator");
    cd = "Cw";
  }
  /* Panels are padded to whole MR/NR widths, hence the extra NR and MR. */
  ts_tile_alloc(body, k, "Bp", TS_MEM_SHARED, TS_DTYPE_F32, "BK * (BN + NR)", FALSE,
                "panel(NR)");
  TsTileNode *par = ts_tile_parallel(body, T);
  ts_tile_alloc(par, k, "Ap", TS_MEM_SHARED, TS_DTYPE_F32, "BK * (BM + MR)", TRUE, "panel(MR)");
  TsTileNode *jc = ts_tile_for(par, "jc", "0", "N", "BN", TS_FOR_SERIAL);
  ts_tile_let(jc, "nc", TS_DTYPE_INT32, "min(BN, N - jc)");
  ts_tile_let(jc, "n_jr", TS_DTYPE_INT32, "(nc + NR - 1) / NR");
  TsTileNode *pc = ts_tile_for(jc, "pc", "0", "K", "BK", TS_FOR_SERIAL);
  ts_tile_let(pc, "kc", TS_DTYPE_INT32, "min(BK, K - pc)");
  /* The team packs the B block together; the loop's end is the barrier before its use. */
  TsTileNode *jp = ts_tile_for(pc, "jp", "0", "n_jr", "1", TS_FOR_PARALLEL);
  ts_tile_pack(jp, 1, NR, "B + pc * N + jc + jp * NR", "N", "kc", "min(NR, nc - jp * NR)",
               "Bp + jp * NR * kc");
  /* The ic x jr tiles are one flattened range split evenly: a parallel ic loop alone leaves a
   * thread idle whenever M / BM is not a multiple of the team (1024 / 96 = 10.7 blocks). Each
   * worker packs an A block once, when its slice first reaches it. */
  ts_tile_let(pc, "n_ic", TS_DTYPE_INT32, "(M + BM - 1) / BM");
  TsTileNode *t = ts_tile_for(pc, "t", "0", "n_ic * n_jr", "1", TS_FOR_PARALLEL);
  ts_tile_let(t, "ic", TS_DTYPE_INT32, "t / n_jr * BM");
  ts_tile_let(t, "jr", TS_DTYPE_INT32, "t % n_jr * NR");
  ts_tile_let(t, "mc", TS_DTYPE_INT32, "min(BM, M - ic)");
  TsTileNode *pa = ts_tile_pack(t, 0, MR, "A + ic * K + pc", "K", "mc", "kc", "Ap");
  ts_tile_pack_set_reuse_key(pa, "pc * M + ic");
  TsTileNode *ir = ts_tile_for(t, "ir", "0", "mc", "MR", TS_FOR_SERIAL);
  g_autofree char *c = g_strdup_printf("%s + (ic + ir) * N + jc + jr", cd);
  ts_tile_mma(ir, MR, NR, V, U, c, "N", "Ap + ir * kc", "Bp + jr * kc", "kc", "pc > 0",
              "min(MR, mc - ir)", "min(NR, nc - jr)");
  if (narrow_out) {
    /* Round the f32 accumulator to the output dtype, rows shared among the team. */
    TsTileNode *cv = ts_tile_for(par, "i", "0", "M", "BM", TS_FOR_PARALLEL);
    ts_tile_convert(cv, "Cw + i * N", "C + i * N", "min(BM, M - i) * N");
  }
  return TRUE;
}

const TsOpDef ts__op_gemm = {
  .name = "gemm",
  .summary = "C[M,N] = A[M,K] B[K,N]; f32, or bf16/f16 storage with f32 accumulation",
  .n_inputs = 2,
  .inputs = {{"A", "\"M\",\"K\"", -1.0, 1.0}, {"B", "\"K\",\"N\"", -1.0, 1.0}},
  .output = {"C", "\"M\",\"N\"", 0, 0},
  .dims = "M,N,K",
  /* 6x16 with 8-float vectors is the AVX2 classic: 12 accumulators + 2 B vectors + 1
   * broadcast fit the 16 ymm registers. */
  .cpu_space = "block(m=[72,96,144], n=[2016,4080], k=[128,256,384])"
               ".micro(m=[4,6,8], n=[8,16,24]).vector([4,8]).unroll([4,8]).threads([1,2])"
               ".where(NR % vector == 0, BM % MR == 0, BN % NR == 0,"
               " MR * NR / vector <= 16)",
  /* MC=144: the 144x256 packed A block is 144 KiB of the 512 KiB L2; NC=4080 keeps the 4 MiB
   * B block well inside the L3 and is a multiple of 8, 16 and 24 (as is 2016). */
  .cpu_default = "block(m=144,n=4080,k=256).micro(m=6,n=16).vector(8).unroll(8).threads(2)",
  .flops = gemm_flops,
  .bytes = gemm_bytes,
  .reference = gemm_reference,
  .lower_cpu = gemm_lower_cpu,
};
