/* ts-cost-work.c — how a point splits an op's work: parallel units, FLOPs with the edge tiles'
 * padding, bytes per memory level with the tiling's re-reads, and what a unit needs of the
 * machine (registers, shared memory, occupancy). One function per kernel family and target,
 * each a model of the kernel the lowering emits (kernels/op-*.c), not of an ideal one; the
 * constants are the machine's, and docs/costmodel.md derives them. */
#include "ts-cost-private.h"

#include <math.h>
#include <string.h>

#define KNOB(name) knob(p, name)

static double
knob(const TsSchedPoint *p, const char *name)
{
  if (!ts_sched_point_has(p, name))
    return NAN;
  if (strcmp(name, "swizzle") == 0)
    return g_strcmp0(ts_sched_point_get_str(p, name, "none"), "none") != 0;
  if (strcmp(name, "mma") == 0)
    return g_strcmp0(ts_sched_point_get_str(p, name, "sync"), "wgmma") == 0;
  if (strcmp(name, "load") == 0)
    return g_strcmp0(ts_sched_point_get_str(p, name, "cp_async"), "tma") == 0;
  return (double)ts_sched_point_get_int(p, name, 0);
}

static double
dim(const TsCostTarget *t, const char *name)
{
  return (double)ts_shape_get(ts_op_instance_shape(t->inst), name);
}

static double
cdiv(double a, double b)
{
  return ceil(a / b);
}

/* Executors busy on average over the rounds it takes to run units on n of them. */
static double
balance(double units, double n)
{
  return units / (cdiv(units, n) * n);
}

/* ---- GPU: occupancy from registers, shared memory and threads ---- */

typedef struct {
  const char *arch;
  double threads_sm, blocks_sm, smem_sm; /* bytes */
} SmLimits;

static const SmLimits sm_limits[] = {
  {"sm_100", 2048, 32, 228 * 1024.0}, {"sm_120", 1536, 32, 100 * 1024.0},
  {"sm_90", 2048, 32, 228 * 1024.0},  {"sm_89", 1536, 24, 100 * 1024.0},
  {"sm_86", 1536, 16, 100 * 1024.0},  {"sm_80", 2048, 32, 164 * 1024.0},
};

static const SmLimits *
sm_of(const TsCostTarget *t)
{
  for (guint i = 0; i < G_N_ELEMENTS(sm_limits); i++)
    if (t->device.arch && g_str_has_prefix(t->device.arch, sm_limits[i].arch))
      return &sm_limits[i];
  return &sm_limits[G_N_ELEMENTS(sm_limits) - 1];
}

/* Registers are allocated per warp in 256-register chunks and the block's shared memory with
 * 1 KiB the driver reserves; a block that fits nowhere still runs one at a time. */
static void
gpu_occupancy(const TsCostTarget *t, double threads, const TsModuleResources *res,
              double regs_est, double smem_est, TsCostWork *w)
{
  const SmLimits *sm = sm_of(t);
  w->regs = res && res->registers > 0 ? res->registers : MIN(regs_est, 255);
  double smem = res && res->smem_static >= 0 && res->smem_dynamic >= 0
                  ? res->smem_static + res->smem_dynamic
                  : smem_est;
  if (!(smem > 0))
    smem = smem_est;
  w->smem = smem;
  w->spill_bytes = res && res->spill_stores >= 0 ? res->spill_stores + MAX(res->spill_loads, 0)
                                                 : 0;
  double warps = cdiv(threads, 32);
  double regs_warp = cdiv(w->regs * 32, 256) * 256;
  double by_regs = floor(65536 / (regs_warp * warps));
  double by_smem = smem > 0 ? floor(sm->smem_sm / (smem + 1024)) : sm->blocks_sm;
  double by_threads = floor(sm->threads_sm / (warps * 32));
  w->blocks_per_sm = MAX(1, MIN(MIN(by_regs, by_smem), MIN(by_threads, sm->blocks_sm)));
  w->occupancy = MIN(1, w->blocks_per_sm * warps * 32 / sm->threads_sm);
  w->workers = w->blocks_per_sm * MAX(t->device.compute_units, 1);
}

/* The tensor-core instruction's share of the peak: wgmma reaches Hopper's; mma.sync issues from
 * one warp at a time and, on Hopper, reaches about two thirds of it. */
static double
mma_efficiency(const TsCostTarget *t, gboolean wgmma)
{
  if (wgmma)
    return 0.9;
  return t->device.arch && g_str_has_prefix(t->device.arch, "sm_90") ? 0.65 : 0.85;
}

/* Shared memory delivers 128 bytes a clock per SM; a warp tile of wm x wn reads (wm + wn) x k
 * elements for 2 wm wn k FLOPs, so small warp tiles starve the tensor cores. */
static double
smem_feed(const TsCostTarget *t, double wm, double wn, double mma_eff)
{
  double roof = ts__cost_roof(t, t->compute_roof, FALSE, NULL);
  double clk = 1.7e9, sms = MAX(t->device.compute_units, 1);
  double flop_clk_sm = roof * mma_eff / (sms * clk);
  double need = flop_clk_sm * (wm + wn) * t->elem_bytes / (2 * wm * wn);
  return MIN(1, 128 / need);
}

/* Little's law on the memory system: DRAM bandwidth x ~600 ns latency of bytes in flight per
 * SM, against what the resident threads have outstanding. */
static double
gpu_mem_eff(const TsCostTarget *t, const TsCostWork *w, double bytes_per_thread_in_flight)
{
  const SmLimits *sm = sm_of(t);
  double need = ts__cost_roof(t, "dram", FALSE, NULL) * 600e-9 / MAX(t->device.compute_units, 1);
  double have = w->occupancy * sm->threads_sm * bytes_per_thread_in_flight;
  return MIN(1, 0.2 + 0.8 * have / need);
}

static void
gemm_cuda(const TsCostTarget *t, const TsSchedPoint *p, const TsModuleResources *res,
          TsCostWork *w)
{
  double M = dim(t, "M"), N = dim(t, "N"), K = dim(t, "K"), e = t->elem_bytes;
  double BM = w->tile_m, BN = w->tile_n, BK = w->tile_k, W = w->warps, S = w->stages;
  gboolean wg = w->wgmma > 0;
  /* schedule("coop") and ("pingpong") add a producer warpgroup to the W math warps and keep the
   * whole ring in flight (no CTA barrier per slice); a pingpong consumer holds a whole tile and
   * stores it while the other multiplies. */
  const char *sched = ts_sched_point_get_str(p, "schedule", "plain");
  gboolean pingpong = g_strcmp0(sched, "pingpong") == 0;
  gboolean coop = pingpong || g_strcmp0(sched, "coop") == 0;
  double threads = W * 32;
  w->units = cdiv(M, BM) * cdiv(N, BN);
  w->work_flops = w->units * BM * BN * K * 2;
  w->accumulators = BM * BN / (pingpong ? 128 : threads);
  /* With the TMA one thread issues the copies: no thread keeps copy addresses in registers
   * (sm_90a link logs: 58, 90, 154 registers for 32, 64, 128 accumulators, against 114, 154,
   * 254 with cp.async), and the ring gains 8 bytes of mbarrier a stage. */
  gboolean tma = w->tma > 0;
  double regs =
      wg ? (tma ? w->accumulators + 26 : 1.5 * w->accumulators + 56) : 1.25 * w->accumulators + 40;
  /* epilogue("tma") stages each consumer's rows of the tile: BM x BN in all, twice that when
   * each pingpong consumer holds a whole tile. */
  gboolean staged = g_strcmp0(ts_sched_point_get_str(p, "epilogue", "direct"), "tma") == 0;
  double staging = staged ? (pingpong ? 2 : 1) * BM * BN * e : 0;
  gpu_occupancy(t, threads + (coop ? 128 : 0), res, regs,
                S * (BM * BK + BK * BN) * e + staging + (tma ? (coop ? 16 : 8) * S : 0), w);
  /* CTA tiles are read from L2 once per CTA (once per cluster for the operand a cluster(m, n)
   * multicasts); a raster group of R tile rows sweeps B once, so B comes from DRAM once per
   * group when A and B do not stay in L2 together. */
  double CM = ts_sched_point_get_int(p, "CM", 1), CN = ts_sched_point_get_int(p, "CN", 1);
  w->cache_bytes = w->units * (BM / MAX(CN, 1) + BN / MAX(CM, 1)) * K * e + M * N * e;
  double R = isnan(w->raster) ? 1 : MAX(w->raster, 1);
  double a = M * K * e, b = K * N * e, c = M * N * e;
  gboolean fits = a + b <= 0.5 * t->device.l2_bytes;
  w->dram_bytes = fits ? a + b + c : a + b * cdiv(M, BM * R) + c;
  w->dram_bytes = MIN(w->dram_bytes, w->cache_bytes);
  double mma = mma_efficiency(t, wg);
  /* Warps split the tile 2 x (W/2) for mma.sync; a warpgroup owns 64 rows for wgmma. */
  double wm = wg ? 64 : BM / 2, wn = wg ? BN : BN / MAX(W / 2, 1);
  w->compute_eff = mma * smem_feed(t, wm, wn, mma) * (w->spill_bytes > 0 ? 0.7 : 1);
  w->overlap = 1 - 1 / (MAX(S, 1) * w->blocks_per_sm * (pingpong ? 2 : 1));
  /* cp.async: each thread keeps 16 bytes a stage in flight; the TMA keeps whole slices in
   * flight (STAGES - 2 ahead on the wgmma ring), whatever the thread count. */
  double ahead = coop ? S : MAX(S - 2, 1);
  double in_flight = tma ? ahead * (BM * BK + BK * BN) * e / threads : 16 * MAX(S - 1, 1);
  w->mem_eff = gpu_mem_eff(t, w, in_flight);
  w->tensor = TRUE;
}

static void
attn_cuda(const TsCostTarget *t, const TsSchedPoint *p, const TsModuleResources *res,
          TsCostWork *w)
{
  double B = dim(t, "B"), H = dim(t, "H"), S = dim(t, "S"), D = dim(t, "D"), e = t->elem_bytes;
  double BM = w->tile_m, BN = w->tile_n, W = w->warps, ST = w->stages;
  gboolean causal = strstr(t->op, "causal") != NULL;
  /* mma("wgmma"): a producer warpgroup beside the W math warps, Q read from shared memory by
   * the wgmmas (no Q fragments in registers, P packed to 16 bits for the register-A P·V), and
   * the whole TMA ring in flight. */
  gboolean wg = w->wgmma > 0;
  double threads = W * 32, heads = B * H;
  w->units = heads * cdiv(S, BM);
  /* A CTA visits every key block, or (causal) those up to its own diagonal: half on average,
   * plus the diagonal block. */
  double keys = causal ? S / 2 + BN / 2 + BM / 2 : cdiv(S, BN) * BN;
  w->work_flops = w->units * BM * keys * D * 4;
  w->accumulators = (16 * D + 16 * BN) / 32; /* O and S fragments of a warp's 16 rows */
  double regs = wg ? w->accumulators + BN / 4 + 30 : w->accumulators + D / 4 + 40;
  /* persistent(P) (wgmma): two Q buffers, so the next tile's loads run under this one's
   * last products and store. epilogue() does not enter the estimate: O is written once a
   * query tile, after S / BN key tiles of products, and the TMA form stages it in the Q
   * buffer, so it costs no shared memory either; the measurements decide. */
  gboolean persistent = wg && ts_sched_point_get_int(p, "persistent", 0) > 0;
  double qbufs = persistent ? 2 : 1;
  gpu_occupancy(t, threads + (wg ? 128 : 0), res, regs,
                (qbufs * BM + 2 * ST * BN) * D * e + (wg ? 8 * (2 * ST + 2 * qbufs) : 0), w);
  w->cache_bytes = w->units * (2 * BM + 2 * keys) * D * e;
  w->dram_bytes = MIN(4 * heads * S * D * e + (2 * S * D * e > 0.5 * t->device.l2_bytes
                                                  ? w->cache_bytes / 2
                                                  : 0),
                      w->cache_bytes);
  double mma = mma_efficiency(t, wg);
  /* Softmax between the two products: exp and rescale per score, a fixed share per key
   * block. A warpgroup's wgmma tile is 64 rows by BN keys, a warp's mma.sync tile 16. The
   * wgmma schedules hide part of it: "overlap" runs it under the warpgroup's own P·V,
   * "pingpong" also under the other warpgroup's GEMMs (FlashAttention-3 reports about 10%
   * from the second). */
  const char *sched = ts_sched_point_get_str(p, "schedule", "coop");
  double softmax = 16 / BN * (!wg                                     ? 1
                              : g_strcmp0(sched, "pingpong") == 0 ? 0.25
                              : g_strcmp0(sched, "overlap") == 0  ? 0.5
                                                                  : 1);
  w->compute_eff = mma * smem_feed(t, wg ? 64 : 16, BN, mma) / (1 + softmax);
  w->overlap = 1 - 1 / (MAX(ST, 1) * w->blocks_per_sm * qbufs);
  w->mem_eff = gpu_mem_eff(t, w, wg ? ST * 2 * BN * D * e / threads : 16 * MAX(ST - 1, 1));
  w->tensor = TRUE;
}

/* Row ops on the GPU: a CTA of W warps takes BM rows (or BN elements of a map). A row too
 * long for the registers is streamed in column tiles, read again for each of the kernel's
 * passes: from L2 while the rows the resident CTAs stream fit half of it, else from DRAM. */
static void
rows_cuda(const TsCostTarget *t, const TsModuleResources *res, TsCostWork *w,
          const TsOpRowWork *rw)
{
  double rows = rw->rows, cols = rw->cols, e = t->elem_bytes;
  double threads = w->warps * 32, V = isnan(w->vector) ? 1 : w->vector;
  double per_unit = isnan(w->tile_m) ? w->tile_n : w->tile_m * cols;
  w->units = cdiv(rows * cols, per_unit);
  w->work_flops = w->flops * w->units * per_unit / (rows * cols);
  w->accumulators = V;
  gpu_occupancy(t, threads, res, 32 + 4 * V, 0, w);
  double rereads = (rw->passes - 1) * rows * cols * e;
  double streaming = MIN(w->workers, w->units) * per_unit * e;
  w->cache_bytes = ts_op_instance_bytes(t->inst) + rereads;
  w->dram_bytes = ts_op_instance_bytes(t->inst) +
                  (streaming > 0.5 * t->device.l2_bytes ? rereads : 0);
  w->compute_eff = 0.5;
  w->overlap = 1 - 1 / (2 * w->blocks_per_sm);
  w->mem_eff = gpu_mem_eff(t, w, V * t->elem_bytes * MIN(per_unit / threads / V, 4));
  /* Lanes issuing narrower than 16-byte accesses waste transactions. */
  w->mem_eff *= MIN(1, 0.6 + 0.4 * V * t->elem_bytes / 16);
}

/* ---- CPU ---- */

/* One core's measured roof `num` over its measured `den` ("exp_x4" over "exp", "bf16_dot" over
 * "f32"), or `unmeasured` where the device's ceilings lack either. */
static double
measured_ratio(const TsCostTarget *t, const char *num, const char *den, double unmeasured)
{
  gboolean have_num = FALSE, have_den = FALSE;
  double n = ts__cost_roof(t, num, TRUE, &have_num);
  double d = ts__cost_roof(t, den, TRUE, &have_den);
  return have_num && have_den && d > 0 ? n / d : unmeasured;
}

/* A vector of V floats' share of the f32 roof: V over the lanes, or where the ceilings have it
 * the measured roof of V-lane FMAs over the widest's (a core that splits its widest vectors in
 * halves, as Zen 1 and Zen 4, multiplies as fast on narrower ones). */
static double
cpu_vector_eff(const TsCostTarget *t, double V)
{
  double lanes = MAX(t->device.vector_bits, 128) / 32.0;
  if (isnan(V))
    return 1 / lanes;
  if (V >= lanes)
    return 1;
  char name[32];
  g_snprintf(name, sizeof name, "f32x%.0f", V);
  gboolean measured = FALSE;
  double narrow = ts__cost_roof(t, name, TRUE, &measured);
  double wide = ts__cost_roof(t, "f32", TRUE, NULL);
  return measured && wide > 0 ? MIN(1, narrow / wide) : V / lanes;
}

/* A row kernel's share of its widest vector's rate at V floats: where the ceilings have it, the
 * measured rate of ts_cpu_prims.h's exp at V lanes over the widest's ("exp_x4" over "exp"; the
 * fast exp's for math("fast")), else the FMAs' (cpu_vector_eff). A row pass is loads,
 * conversions, an exp's shifts and blends and a store around each few FMAs, so it narrows as
 * the exp does, not as bare FMAs: on Zen 1, which splits 256-bit operations in two, 4-lane FMAs
 * are as fast as 8-lane ones, the exp's 8 chains 6% slower, softmax's row kernels 12-44% slower
 * (docs/costmodel.md): the exp's share orders each vector(4)/vector(8) pair, if short of the
 * whole gap. */
static double
row_vector_eff(const TsCostTarget *t, double V, gboolean fast)
{
  double lanes = MAX(t->device.vector_bits, 128) / 32.0;
  if (isnan(V) || V >= lanes)
    return cpu_vector_eff(t, V);
  const char *widest = fast ? "exp_fast" : "exp";
  char name[32];
  g_snprintf(name, sizeof name, "%s_x%.0f", widest, V);
  double share = measured_ratio(t, name, widest, NAN);
  return isnan(share) ? cpu_vector_eff(t, V) : MIN(1, share);
}

/* Bytes streamed from the level where a working set of `set` bytes lives, per core. */
static const char *
cpu_level(const TsCostTarget *t, double set)
{
  if (set <= 0.5 * t->device.l1_bytes)
    return "l1";
  if (set <= 0.75 * t->device.l2_bytes)
    return "l2";
  if (t->device.l3_bytes > 0 && set <= 0.75 * t->device.l3_bytes)
    return "l3";
  return "dram";
}

static double
cpu_stream_s(const TsCostTarget *t, const char *level, double bytes, double cores)
{
  /* L3 and DRAM are shared: their whole-chip figure is what all cores get together. */
  gboolean shared = strcmp(level, "l3") == 0 || strcmp(level, "dram") == 0;
  double bw = shared ? MIN(ts__cost_roof(t, level, TRUE, NULL) * cores,
                           ts__cost_roof(t, level, FALSE, NULL))
                     : ts__cost_roof(t, level, TRUE, NULL) * cores;
  return bytes / bw;
}

/* walk("tiles"): the team packs A and B once, K-deep panels in memory; a worker's BM x BN tile
 * of C accumulates in its cache over the BK slices, each slice's panels streamed from the
 * packed operands (A once per column of tiles, B once per row), the A slice re-read per NR
 * column from where BM x BK fits, a B panel per MR row from where BK x NR does. */
static void
gemm_cpu_tiles(const TsCostTarget *t, TsCostWork *w, double a_bytes, double b_bytes, double e)
{
  double M = dim(t, "M"), N = dim(t, "N"), K = dim(t, "K");
  double BM = MIN(w->tile_m, M), BN = MIN(w->tile_n, N), BK = MIN(w->tile_k, K),
         MR = w->micro_m, NR = w->micro_n, T = w->threads;
  double tiles = cdiv(M, BM) * cdiv(N, BN);
  w->units = tiles * cdiv(K, BK);
  w->cores_used = MIN(MIN(T, MAX(t->device.compute_units, 1)), tiles);
  w->balance = balance(tiles, T);
  /* A tile's last micro-tiles are whole ones, computed and cut. */
  w->work_flops = cdiv(M, BM) * cdiv(BM, MR) * MR * cdiv(N, BN) * cdiv(BN, NR) * NR * K * 2;
  double packed = (M * K + K * N) * e;
  double p_bytes = M * K * e * cdiv(N, BN) + K * N * e * cdiv(M, BM);
  double cores = w->cores_used;
  double ta = cpu_stream_s(t, cpu_level(t, BM * BK * e), a_bytes, cores);
  double tb = cpu_stream_s(t, cpu_level(t, BK * NR * e), b_bytes, cores);
  double c_bytes = 2 * M * N * 4 * cdiv(K, BK); /* the f32 tile, read and written per slice */
  double tc = cpu_stream_s(t, cpu_level(t, BM * BN * 4), c_bytes, cores);
  double tp = cpu_stream_s(t, cpu_level(t, packed), p_bytes, cores);
  w->cache_bytes = a_bytes + b_bytes + c_bytes + p_bytes;
  w->cache_s = MAX(MAX(ta, tb), MAX(tc, tp));
  w->dram_bytes = ts_op_instance_bytes(t->inst) + 2 * packed +
                  (strcmp(cpu_level(t, packed), "dram") == 0 ? p_bytes : 0);
  w->overlap = 0.8;
  w->mem_eff = 1;
  /* The fork, and a barrier after packing each operand. */
  w->launch_s = 3e-6 + (T > 1 ? 8e-6 + 2 * 1e-6 : 0);
}

/* The f32 FMA micro-kernel's accumulators and share of the roof (gemm_cpu says why). */
static void
cpu_ukr(const TsCostTarget *t, TsCostWork *w, double MR, double NR, double V)
{
  double acc = MR * NR / V, loads = NR / V + MR;
  double vregs = t->device.vector_bits >= 512 ? 32 : 16;
  w->accumulators = acc;
  w->compute_eff = MIN(MIN(1, acc / loads), MIN(1, acc / 8)) * cpu_vector_eff(t, V) *
                   (acc + NR / V + 1 > vregs ? 0.7 : 1);
}

/* BLIS-style: the team packs a BK x BN block of B (meant for L3), each thread a BM x BK block
 * of A (L2), and the MR x NR micro-kernel streams BK x NR panels of B (L1). */
static void
gemm_cpu(const TsCostTarget *t, const TsSchedPoint *p, TsCostWork *w)
{
  double M = dim(t, "M"), N = dim(t, "N"), K = dim(t, "K");
  double BM = w->tile_m, BN = MIN(w->tile_n, N), BK = MIN(w->tile_k, K), MR = w->micro_m,
         NR = w->micro_n, V = w->vector, T = w->threads;
  double blocks = cdiv(N, BN) * cdiv(K, BK);
  double tasks = cdiv(M, BM) * cdiv(BN, NR);
  w->units = tasks * blocks;
  w->workers = T;
  w->cores_used = MIN(MIN(T, MAX(t->device.compute_units, 1)), tasks);
  w->balance = balance(tasks, T);
  w->work_flops = cdiv(M, MR) * MR * cdiv(N, NR) * NR * K * 2;
  /* Ports: two FMAs and two loads a clock; a k step does MR*NR/V FMAs and NR/V + MR loads
   * (broadcasts of A). Latency: 4-cycle FMAs on two ports need 8 independent accumulators
   * (one Zen 3 core, in L1: 4, 6 and 8 accumulators ran at 0.51, 0.74 and 0.97-1.0 of the
   * peak, 4x8, 6x8 and 4x16 at 8 lanes). Registers: the accumulators, the NR/V vectors of B
   * and the broadcast must fit the 16 vector registers (32 with AVX-512), or the kernel spills:
   * measured here at 0.67-0.73x its neighbours (8x16, 4x16/4 and 8x8/4 against 6x16, 4x8/4
   * and 6x8/4 on AVX2). */
  cpu_ukr(t, w, MR, NR, V);
  double e = 4; /* packed panels are f32 whatever the storage, but for the dot products' */
  const char *dot = ts_sched_point_get_str(p, "dot", "fma");
  if (g_strcmp0(dot, "amx") == 0) {
    /* AMX: a tdpbf16ps is 8192 multiply-adds, 32 times a zmm FMA's, issued at about half the
     * FMA pipes' rate (measured on a Sapphire Rapids core: 3.5-3.7 TFLOP/s against f32 FMAs'
     * ~0.2); a k step loads MR/16 + NR/16 tiles for (MR/16)(NR/16) products. */
    double tm = MR / 16, tn = NR / 16;
    w->accumulators = tm * tn;
    w->compute_eff = measured_ratio(t, "bf16_amx", "f32", 16) * MIN(1, tm * tn / (tm + tn));
    e = 2;
  } else if (g_strcmp0(dot, "bf16") == 0) {
    /* vdpbf16ps: twice the FMA's products an instruction, at a rate that differs by core:
     * measured 2.0x the f32 FMAs' FLOP/s on a Zen 4 core, 0.48x on an Emerald Rapids one (where
     * the f32 FMAs on widened panels win, and the model must not send the search the other way). */
    w->compute_eff *= measured_ratio(t, "bf16_dot", "f32", 1);
    e = 2;
  }
  double a_bytes = M * K * e * cdiv(N, BN) * cdiv(BN, NR); /* Ap read once per NR column */
  double b_bytes = K * N * e * cdiv(M, MR);                 /* a Bp panel per MR row */
  double c_bytes = 2 * M * N * e * cdiv(K, BK);             /* C read and written per kc */
  if (g_strcmp0(ts_sched_point_get_str(p, "walk", "panels"), "tiles") == 0) {
    gemm_cpu_tiles(t, w, a_bytes, b_bytes, e);
    return;
  }
  double in_bytes = ts_op_instance_bytes(t->inst) + M * K * e * (cdiv(N, BN) - 1);
  double cores = w->cores_used;
  double ta = cpu_stream_s(t, cpu_level(t, BM * BK * e), a_bytes, cores);
  double tb = cpu_stream_s(t, cpu_level(t, BK * NR * e), b_bytes, cores);
  double tc = cpu_stream_s(t, cpu_level(t, M * N * e / cores), c_bytes, cores);
  w->cache_bytes = a_bytes + b_bytes + c_bytes;
  w->cache_s = MAX(MAX(ta, tb), tc);
  w->dram_bytes = in_bytes + (strcmp(cpu_level(t, M * N * e), "dram") == 0 ? c_bytes : 0);
  w->overlap = 0.8; /* hardware prefetch streams the packed panels */
  w->mem_eff = 1;
  /* The team forks once and meets at a barrier per block (twice: after packing B). */
  w->launch_s = 3e-6 + (T > 1 ? 8e-6 + blocks * 2 * 1e-6 : 0);
}

/* The fraction of the FMA roof a row op's arithmetic reaches between its loads and stores. */
#define ROW_EFF 0.5

/* An element's exps in FLOPs of the compute roof, at the row ops' efficiency: the time of
 * exps_per_element exps is that of this many FLOPs. The exps take the measured rate of the
 * kernels' own vector exp ("exp", or "exp_fast" for math("fast"); profiler/ts-prof-ceiling-cpu.c)
 * on one core, at the point's vector width (row_vector_eff: the measured exp at that width), not
 * the row ops' efficiency: an exp is all arithmetic. On the Zen 1 VM (0.56 G exps/s a core, 40.2 GFLOP/s
 * of f32 FMAs), softmax_safe 256 x 65536 f32 on two threads at 1, 2 and 3 exps an element
 * ("stored", "max_first", "online") comes out 15, 30 and 45 ms against 17.5, 31 and 47
 * measured. */
static double
exp_flops(const TsCostTarget *t, const TsOpRowWork *rw)
{
  if (rw->exps <= 0)
    return 0;
  double rate = ts__cost_roof(t, rw->fast_exp ? "exp_fast" : "exp", TRUE, NULL);
  double roof = ts__cost_roof(t, t->compute_roof, TRUE, NULL);
  return rw->exps * roof * ROW_EFF / rate;
}

/* Rows split into tasks of BM rows (maps: BN elements), each streamed once per pass. */
static void
rows_cpu(const TsCostTarget *t, TsCostWork *w, const TsOpRowWork *rw)
{
  double T = w->threads, e = t->elem_bytes, rows = rw->rows, cols = rw->cols;
  double passes = rw->passes;
  double per_task = isnan(w->tile_m) ? w->tile_n : w->tile_m * cols;
  w->units = cdiv(rows * cols, per_task);
  w->workers = T;
  w->cores_used = MIN(MIN(T, MAX(t->device.compute_units, 1)), w->units);
  w->balance = balance(w->units, T);
  w->work_flops = w->flops + rows * cols * exp_flops(t, rw);
  w->accumulators = 1;
  w->compute_eff = row_vector_eff(t, w->vector, rw->fast_exp) * ROW_EFF;
  double compulsory = ts_op_instance_bytes(t->inst);
  double row_set = cols * e * (isnan(w->tile_m) ? 1 : w->tile_m);
  const char *reread = cpu_level(t, row_set);
  double rereads = (passes - 1) * rows * cols * e;
  w->dram_bytes = compulsory + (strcmp(reread, "dram") == 0 ? rereads : 0);
  w->cache_bytes = rereads;
  w->cache_s = cpu_stream_s(t, reread, rereads, w->cores_used);
  /* Hardware prefetch overlaps most of a pass's loads with its arithmetic; a skewed pipeline
   * runs the passes that only move data inside the exps' loop, all of them hidden. */
  w->overlap = rw->skewed ? 1.0 : 0.8;
  w->mem_eff = 1;
  w->launch_s = 3e-6 + (T > 1 ? 8e-6 : 0) + w->units / T * 0.1e-6;
}

/* The online softmax per score, in exps of the kernels' exp_fast (or exp, f32) at the point's
 * width: its exp and the max, sum and store passes around it (Zen 3, one core, 4 x 1024^2 x 64
 * bf16: the kernel less its softmax ran 1.5-2.6 ms faster at key tiles of 32, 64 and 128, 2.1
 * on average, 2 exps a score at 4.06 G exp_fast/s), and per row and key tile the reductions' ends and the
 * branch. */
#define ATTN_EXPS_PER_SCORE 2.0
#define ATTN_EXPS_PER_ROW_TILE 8.0

/* A task is BM query rows of one head (a worker packs each head's K and V once, as f32 panels,
 * and keeps them in its cache: 2 S D floats): per key tile of BN keys, S = Q K^T and O += P V
 * on the micro-kernel, micro-tiles padded to MR x NR, and the online softmax between them. The
 * causal op's micro-row of MR queries takes the keys up to its last row's diagonal in both
 * products (the kernel's skips: Q K^T micro-tiles past it, P V's keys past it), and a row's
 * softmax its own keys. The exps' time counts as FLOPs at the micro-kernel's efficiency. */
static void
attn_cpu(const TsCostTarget *t, TsCostWork *w)
{
  double S = dim(t, "S"), D = dim(t, "D"), heads = dim(t, "B") * dim(t, "H");
  double BM = MIN(w->tile_m, S), BN = w->tile_n, MR = w->micro_m, NR = w->micro_n,
         V = w->vector, T = w->threads;
  gboolean causal = strstr(t->op, "causal") != NULL;
  double n_qt = cdiv(S, BM);
  w->units = heads * n_qt;
  w->workers = T;
  w->cores_used = MIN(MIN(T, MAX(t->device.compute_units, 1)), w->units);
  w->balance = balance(w->units, T);
  double gemm = 0, scores = 0, row_tiles = 0, kv_keys = 0;
  for (double q = 0; q < n_qt; q++) {
    double q0 = q * BM, mc = MIN(BM, S - q0), keys = causal ? q0 + mc : S;
    /* BN is a multiple of NR: only the last key tile's last micro-tile is partial. */
    for (double ir = 0; ir < mc; ir += MR) {
      double need = causal ? MIN(keys, q0 + ir + MR) : keys;
      gemm += 2 * MR * cdiv(need, NR) * NR * D + 2 * MR * cdiv(D, NR) * NR * need;
    }
    scores += causal ? mc * q0 + mc * (mc + 1) / 2 : mc * keys;
    row_tiles += mc * cdiv(keys, BN);
    kv_keys += keys;
  }
  cpu_ukr(t, w, MR, NR, V);
  gboolean wide = ts_op_instance_dtype(t->inst)->storage == TS_DTYPE_F32;
  double exp_rate = ts__cost_roof(t, wide ? "exp" : "exp_fast", TRUE, NULL) *
                    row_vector_eff(t, V, !wide);
  double roof = ts__cost_roof(t, t->compute_roof, TRUE, NULL);
  double exps = ATTN_EXPS_PER_SCORE * scores + ATTN_EXPS_PER_ROW_TILE * row_tiles;
  w->work_flops = heads * (gemm + exps * roof * w->compute_eff / MAX(exp_rate, 1));
  /* Each task streams its keys' K and V panels (f32) from where a head's fit. */
  w->cache_bytes = heads * kv_keys * 2 * D * 4;
  const char *lvl = cpu_level(t, 2 * S * D * 4);
  w->cache_s = cpu_stream_s(t, lvl, w->cache_bytes, w->cores_used);
  w->dram_bytes = ts_op_instance_bytes(t->inst) + (strcmp(lvl, "dram") == 0 ? w->cache_bytes : 0);
  w->overlap = 0.8;
  w->mem_eff = 1;
  w->launch_s = 3e-6 + (T > 1 ? 8e-6 : 0);
}

gboolean
ts__cost_work(const TsCostTarget *t, const TsSchedPoint *p, const TsModuleResources *res,
              TsCostWork *w)
{
  memset(w, 0, sizeof *w);
  w->tile_m = KNOB("BM");
  w->tile_n = KNOB("BN");
  w->tile_k = KNOB("BK");
  w->micro_m = KNOB("MR");
  w->micro_n = KNOB("NR");
  w->vector = KNOB("vector");
  w->unroll = KNOB("unroll");
  w->threads = KNOB("threads");
  w->warps = KNOB("warps");
  w->stages = KNOB("stages");
  w->swizzle = KNOB("swizzle");
  w->wgmma = KNOB("mma");
  w->tma = KNOB("load");
  w->raster = KNOB("raster");
  w->regs = w->smem = w->blocks_per_sm = w->occupancy = w->spill_bytes = NAN;
  w->cache_s = 0;
  if (t->inst == NULL)
    return FALSE;
  w->flops = ts_op_instance_flops(t->inst);
  const char *op = t->op;
  gboolean gemm = strcmp(op, "gemm") == 0, attn = g_str_has_prefix(op, "flash_attention");
  /* Row ops, maps and a kernel file's of either form: how the lowering sweeps the rows at
   * this point (passes over a row) comes from the op. */
  TsOpRowWork rw;
  gboolean rows = !gemm && !attn && ts_op_instance_row_work(t->inst, p, t->gpu, &rw);
  if (t->gpu) {
    if (isnan(w->warps))
      return FALSE;
    if (gemm && !isnan(w->tile_m) && !isnan(w->tile_n) && !isnan(w->tile_k))
      gemm_cuda(t, p, res, w);
    else if (attn && !isnan(w->tile_m) && !isnan(w->tile_n))
      attn_cuda(t, p, res, w);
    else if (rows && (!isnan(w->tile_m) || !isnan(w->tile_n)))
      rows_cuda(t, res, w, &rw);
    else
      return FALSE;
    w->cores_used = MIN(w->units, MAX(t->device.compute_units, 1));
    w->balance = balance(w->units, MAX(t->device.compute_units, 1));
    w->launch_s = 4e-6;
  } else {
    if (isnan(w->threads))
      return FALSE;
    if (gemm && !isnan(w->micro_m) && !isnan(w->micro_n) && !isnan(w->vector))
      gemm_cpu(t, p, w);
    else if (attn && !isnan(w->tile_m) && !isnan(w->tile_n) && !isnan(w->micro_m) &&
             !isnan(w->micro_n) && !isnan(w->vector))
      attn_cpu(t, w);
    else if (rows && (!isnan(w->tile_m) || !isnan(w->tile_n)))
      rows_cpu(t, w, &rw);
    else
      return FALSE;
  }
  w->waves = cdiv(w->units, MAX(w->workers, 1));
  w->wave_eff = w->units / (w->waves * MAX(w->workers, 1));
  w->pad_waste = w->flops > 0 ? w->work_flops / w->flops - 1 : 0;
  double unit_bytes = w->cache_bytes / MAX(w->units, 1);
  w->tile_intensity = unit_bytes > 0 ? w->work_flops / w->units / unit_bytes : NAN;
  if (t->gpu) {
    const char *lvl = "l2";
    w->cache_s = w->cache_bytes / ts__cost_roof(t, lvl, FALSE, NULL);
  }
  return TRUE;
}
