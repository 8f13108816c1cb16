/* test-cost.c — features and the analytic estimate: deterministic, named, knob-only for foreign
 * spaces; the estimate never beats the plain roofline, ranks a well-tiled point above a badly
 * tiled one on both backends, sees wave quantization, occupancy and spills, and says which
 * roof binds. Devices are described by hand so the figures do not depend on this machine. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "ts-cost.h"

static const TsDeviceInfo cpu_dev = {
  .backend = "cpu", .name = "test x86", .arch = "x86_64+avx2+fma", .compute_units = 2,
  .memory_bytes = 24ull << 30, .l1_bytes = 32 << 10, .l2_bytes = 512 << 10, .l3_bytes = 32 << 20,
  .vector_bits = 256, .toolchain = "gcc 12.2.0"};

static const TsDeviceInfo h100 = {
  .backend = "cuda", .name = "NVIDIA H100 80GB HBM3", .arch = "sm_90a", .compute_units = 132,
  .memory_bytes = 80ull << 30, .l1_bytes = 256 << 10, .l2_bytes = 50 << 20,
  .smem_per_block = 227 << 10, .toolchain = "nvrtc 13.0"};

static TsProfCeilings *
cpu_ceilings(void)
{
  TsProfCeilings *c = ts_prof_ceilings_new("cpu", "gcc 12.2.0");
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 181.0, 93.9);
  ts_prof_ceilings_set(c, "f64", TS_PROF_COMPUTE, 90.4, 46.3);
  ts_prof_ceilings_set(c, "l1", TS_PROF_MEMORY, 263.1, 137.2);
  ts_prof_ceilings_set(c, "l2", TS_PROF_MEMORY, 175.5, 78.7);
  ts_prof_ceilings_set(c, "l3", TS_PROF_MEMORY, 60.0, 40.0);
  ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 19.2, 14.0);
  return c;
}

static TsSchedPoint *
point(const char *text)
{
  g_autoptr(GError) error = NULL;
  TsSchedPoint *p = ts_sched_point_parse(text, &error);
  g_assert_no_error(error);
  return p;
}

static TsOpInstance *
instance(const char *op, const char *shape, const char *dtype)
{
  g_autoptr(GError) error = NULL;
  TsOpInstance *inst = ts_op_instance_new(op, shape, dtype, &error);
  g_assert_no_error(error);
  return inst;
}

static double
estimate(const TsCostTarget *t, const char *text, TsCostEstimate *out)
{
  g_autoptr(TsSchedPoint) p = point(text);
  g_autoptr(GError) error = NULL;
  TsCostEstimate e;
  g_assert_true(ts_cost_analytic(t, p, NULL, &e, &error));
  g_assert_no_error(error);
  g_assert_true(isfinite(e.time_s) && e.time_s > 0);
  if (out)
    *out = e;
  return e.time_s;
}

static int
feature_index(const TsCostTarget *t, const char *name)
{
  const char *const *names = ts_cost_feature_names(t);
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* A GEMM kernel file runs gemm's templates: the model estimates it as gemm, on both targets. */
static void
test_kernel_gemm(void)
{
  static const char src[] =
    "@kernel.autotune(space=dict(BM=[64, 128], BN=[128], BK=[32, 64], warps=[4, 8]))\n"
    "def g(A: Tensor[\"M\", \"K\", bf16 @accum(f32)], B: Tensor[\"K\", \"N\", bf16 @accum(f32)],\n"
    "      C: mut Tensor[\"M\", \"N\", bf16]):\n"
    "    T = tile.context()\n"
    "    acc = tile.zeros((T.m, T.n), f32)\n"
    "    for kb in tile.range_k(A.shape[1], T.k):\n"
    "        acc += tile.dot(tile.load(A, rows=T.m, cols=kb), tile.load(B, rows=kb, cols=T.n))\n"
    "    tile.store(C, tile.cast(acc, bf16))\n";
  g_autoptr(GError) error = NULL;
  const TsOpDef *op = ts_op_register_kernel(src, NULL, NULL, &error);
  g_assert_no_error(error);
  g_assert_cmpstr(ts_op_kernel_template(op), ==, "gemm");
  g_assert_null(ts_op_kernel_template(ts_op_lookup("gemm")));
  g_autoptr(TsOpInstance) k = instance(ts_op_name(op), "M=2048,N=2048,K=2048", "bf16");
  g_autoptr(TsOpInstance) g = instance("gemm", "M=2048,N=2048,K=2048", "bf16");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  const char *cpu = "block(m=128,n=128,k=64).micro(m=8,n=16).vector(8).unroll(8).threads(2)";
  const char *gpu = "block(m=128,n=128,k=64).warps(8).stages(3).vector(8).swizzle(\"xor\")"
                    ".raster(8).mma(\"wgmma\").load(\"tma\").schedule(\"coop\").persistent(132)";
  g_autoptr(TsCostTarget) kc = ts_cost_target_new(k, "cpu", &cpu_dev, c);
  g_autoptr(TsCostTarget) gc = ts_cost_target_new(g, "cpu", &cpu_dev, c);
  g_autoptr(TsCostTarget) kg = ts_cost_target_new(k, "cuda", &h100, NULL);
  g_autoptr(TsCostTarget) gg = ts_cost_target_new(g, "cuda", &h100, NULL);
  TsCostEstimate ek, eg;
  g_assert_cmpfloat(estimate(kc, cpu, &ek), ==, estimate(gc, cpu, &eg));
  g_assert_cmpstr(ek.bound, ==, eg.bound);
  g_assert_cmpfloat(estimate(kg, gpu, &ek), ==, estimate(gg, gpu, &eg));
  g_assert_cmpstr(ek.bound, ==, eg.bound);
}

static const TsOpDef *
register_kernel(const char *src)
{
  g_autoptr(GError) error = NULL;
  const TsOpDef *op = ts_op_register_kernel(src, NULL, NULL, &error);
  g_assert_no_error(error);
  return op;
}

/* A row kernel file is estimated from how its lowering sweeps a row: on the CPU a read of the
 * row for each step and the output (a scratch row's sum rides in the pass writing it); on
 * CUDA one read while the row fits the registers, a pass over L2 for each reduction and the
 * output once it is streamed (softmax's three steps one online pass), as the built-ins. */
static void
test_kernel_rows(void)
{
  const TsOpDef *op = register_kernel(
    "def sm(x: Tensor[\"M\", \"N\", f32], y: mut Tensor[\"M\", \"N\", f32]):\n"
    "    T = tile.context()\n"
    "    xr = tile.load(x, rows=T.m)\n"
    "    m = tile.row_max(xr)\n"
    "    e = tile.exp(xr - m[:, None])\n"
    "    s = tile.row_sum(e)\n"
    "    tile.store(y, e / s[:, None])\n");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  const char *shape = "M=1024,N=4096";
  g_autoptr(TsOpInstance) k = instance(ts_op_name(op), shape, "f32");
  g_autoptr(TsOpInstance) b = instance("softmax_safe", shape, "f32");
  g_autoptr(TsCostTarget) kc = ts_cost_target_new(k, "cpu", &cpu_dev, c);
  g_autoptr(TsCostTarget) bc = ts_cost_target_new(b, "cpu", &cpu_dev, c);
  TsCostEstimate ek, stored, online;
  const char *rest = ".vector(8).threads(2).store(\"cached\").pipeline(\"none\")";
  g_autofree char *kp = g_strconcat("block(m=4)", rest, NULL);
  g_autofree char *sp = g_strconcat("block(m=4).softmax(\"stored\").math(\"exact\")", rest, NULL);
  g_autofree char *op_ = g_strconcat("block(m=4).softmax(\"online\").math(\"exact\")", rest, NULL);
  estimate(kc, kp, &ek);
  estimate(bc, sp, &stored);
  estimate(bc, op_, &online);
  const double row_bytes = 1024.0 * 4096 * 4;
  /* max, the exps with their sum, the output: three reads, as softmax("stored"); two of
   * them again from cache */
  g_assert_cmpfloat(ek.cache_bytes, ==, 2 * row_bytes);
  g_assert_cmpfloat(stored.cache_bytes, ==, 2 * row_bytes);
  g_assert_cmpfloat(online.cache_bytes, ==, row_bytes);
  /* one exp an element, as stored's (online takes three), and the FLOPs of its own count */
  g_assert_cmpfloat(ts_op_instance_flops(k), ==, ts_op_instance_flops(b));
  g_assert_cmpfloat(ek.compute_s, ==, stored.compute_s);
  g_assert_cmpfloat(online.compute_s, >, 2.5 * stored.compute_s);
  /* pipeline("skew") hides the data passes under the exps as the built-in's does */
  const char *skew = ".vector(8).threads(2).store(\"cached\").pipeline(\"skew\")";
  g_autofree char *kps = g_strconcat("block(m=4)", skew, NULL);
  g_autofree char *sps = g_strconcat("block(m=4).softmax(\"stored\").math(\"exact\")", skew, NULL);
  TsCostEstimate eks, skewed;
  estimate(kc, kps, &eks);
  estimate(bc, sps, &skewed);
  g_assert_cmpfloat(skewed.time_s, <, stored.time_s);
  g_assert_cmpfloat(eks.time_s, ==, skewed.time_s);

  /* CUDA: 4096 columns over 256 threads stay in registers; 100000 are streamed. */
  g_autoptr(TsOpInstance) kl = instance(ts_op_name(op), "M=1024,N=100000", "f32");
  g_autoptr(TsOpInstance) bl = instance("softmax_safe", "M=1024,N=100000", "f32");
  g_autoptr(TsCostTarget) kg = ts_cost_target_new(k, "cuda", &h100, NULL);
  g_autoptr(TsCostTarget) kgl = ts_cost_target_new(kl, "cuda", &h100, NULL);
  g_autoptr(TsCostTarget) bgl = ts_cost_target_new(bl, "cuda", &h100, NULL);
  const char *gpu = "block(m=1).warps(8).vector(4)";
  TsCostEstimate resident, streamed, builtin;
  estimate(kg, gpu, &resident);
  estimate(kgl, gpu, &streamed);
  estimate(bgl, gpu, &builtin);
  g_assert_cmpfloat(resident.cache_bytes, ==, ts_op_instance_bytes(k));
  g_assert_cmpfloat(streamed.cache_bytes, ==, ts_op_instance_bytes(kl) + 1024.0 * 100000 * 4);
  g_assert_cmpfloat(builtin.cache_bytes, ==, streamed.cache_bytes);
  /* ... from DRAM: the 1056 resident CTAs stream 400 KB rows, far over the 50 MiB L2; 32
   * rows of them fit half of it */
  g_assert_cmpfloat(streamed.dram_bytes, ==, streamed.cache_bytes);
  g_autoptr(TsOpInstance) kf = instance(ts_op_name(op), "M=32,N=100000", "f32");
  g_autoptr(TsCostTarget) kgf = ts_cost_target_new(kf, "cuda", &h100, NULL);
  estimate(kgf, gpu, &streamed);
  g_assert_cmpfloat(streamed.cache_bytes, ==, ts_op_instance_bytes(kf) + 32.0 * 100000 * 4);
  g_assert_cmpfloat(streamed.dram_bytes, ==, ts_op_instance_bytes(kf));

  /* an elementwise kernel file: one read of each element, on both targets */
  const TsOpDef *map = register_kernel(
    "def ax(x: Tensor[\"N\", f32], y: mut Tensor[\"N\", f32]):\n"
    "    i = tile.linear_id()\n"
    "    y[i] = 2.0 * x[i] + 1.0\n");
  g_autoptr(TsOpInstance) mi = instance(ts_op_name(map), "N=1048576", "f32");
  g_autoptr(TsCostTarget) mc = ts_cost_target_new(mi, "cpu", &cpu_dev, c);
  g_autoptr(TsCostTarget) mg = ts_cost_target_new(mi, "cuda", &h100, NULL);
  TsCostEstimate e;
  estimate(mc, "block(n=4096).vector(8).threads(2).store(\"cached\")", &e);
  g_assert_cmpfloat(e.cache_bytes, ==, 0);
  g_assert_cmpfloat(e.dram_bytes, ==, ts_op_instance_bytes(mi));
  estimate(mg, "block(n=4096).warps(4).vector(4)", &e);
  g_assert_cmpfloat(e.cache_bytes, ==, ts_op_instance_bytes(mi));
}

static void
test_features_deterministic(void)
{
  g_autoptr(TsOpInstance) inst = instance("gemm", "M=512,N=512,K=512", "f32");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, "cpu", &cpu_dev, c);
  guint n = ts_cost_n_features(t);
  const char *const *names = ts_cost_feature_names(t);
  g_assert_cmpuint(g_strv_length((char **)names), ==, n);
  /* Names are unique, the knobs come last, one per knob of the op's CPU space. */
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  guint knobs = 0;
  for (guint i = 0; i < n; i++) {
    g_assert_false(g_hash_table_contains(seen, names[i]));
    g_hash_table_add(seen, (gpointer)names[i]);
    if (g_str_has_prefix(names[i], "knob."))
      knobs++;
    else
      g_assert_cmpuint(knobs, ==, 0);
  }
  g_assert_cmpuint(knobs, ==, 10); /* BM BN BK MR NR vector unroll threads dot walk */

  g_autoptr(TsSchedPoint) p =
    point("block(m=144,n=4080,k=256).micro(m=6,n=16).vector(8).unroll(8).threads(2)");
  g_autofree float *a = g_new(float, n);
  g_autofree float *b = g_new(float, n);
  ts_cost_features(t, p, NULL, a);
  /* A second target of the same workload gives the same bits. */
  g_autoptr(TsCostTarget) t2 = ts_cost_target_new(inst, "cpu", &cpu_dev, c);
  ts_cost_features(t2, p, NULL, b);
  g_assert_cmpmem(a, n * sizeof(float), b, n * sizeof(float));

  const struct {
    const char *name;
    double want;
  } exact[] = {{"tile.m", 144}, {"tile.n", 4080}, {"tile.k", 256}, {"tile.micro_m", 6},
               {"tile.micro_n", 16}, {"tile.vector", 8}, {"tile.threads", 2}, {"knob.MR", 6},
               {"op.log2_flops", log2(2.0 * 512 * 512 * 512)}, {"dev.gpu", 0},
               {"ceil.compute_gflops", 181.0}, {"ceil.measured", 1}};
  for (guint i = 0; i < G_N_ELEMENTS(exact); i++) {
    int k = feature_index(t, exact[i].name);
    g_assert_cmpint(k, >=, 0);
    g_assert_cmpfloat_with_epsilon(a[k], exact[i].want, 1e-4);
  }
  /* The work decomposition and the estimate are filled in; GPU resources are not. */
  const char *finite[] = {"work.waves", "work.wave_eff", "work.balance", "work.tile_intensity",
                          "est.log2_time", "est.rel_time", "est.compute_eff"};
  for (guint i = 0; i < G_N_ELEMENTS(finite); i++)
    g_assert_true(isfinite(a[feature_index(t, finite[i])]));
  g_assert_true(isnan(a[feature_index(t, "res.regs")]));
  g_assert_true(isnan(a[feature_index(t, "tile.warps")]));
  /* The estimate is never below the plain roofline. */
  g_assert_cmpfloat(a[feature_index(t, "est.rel_time")], >=, 1.0);
}

static void
test_features_generic(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) s =
    ts_sched_space_parse("space=dict(block_size_x=[128,256], alg=[\"a\",\"b\",\"c\"])", &error);
  g_assert_no_error(error);
  g_autoptr(TsCostTarget) t = ts_cost_target_new_generic(s, "RTX A4000");
  g_assert_null(ts_cost_target_op(t));
  guint n = ts_cost_n_features(t);
  g_autoptr(TsSchedPoint) p = point("space=dict(block_size_x=256, alg=\"c\")");
  g_autofree float *f = g_new(float, n);
  ts_cost_features(t, p, NULL, f);
  const char *const *names = ts_cost_feature_names(t);
  for (guint i = 0; i < n; i++) {
    if (strcmp(names[i], "knob.block_size_x") == 0)
      g_assert_cmpfloat(f[i], ==, 256);
    else if (strcmp(names[i], "knob.alg") == 0)
      g_assert_cmpfloat(f[i], ==, 2); /* index of "c" */
    else
      g_assert_true(isnan(f[i]));
  }
  TsCostEstimate e;
  g_assert_false(ts_cost_analytic(t, p, NULL, &e, &error));
  g_assert_error(error, TS_COST_ERROR, TS_COST_ERROR_NO_MODEL);
  g_assert_nonnull(strstr(error->message, "not a Tessera op"));
}

static void
test_cpu_gemm_ranking(void)
{
  g_autoptr(TsOpInstance) inst = instance("gemm", "M=1024,N=1024,K=1024", "f32");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, "cpu", &cpu_dev, c);
  /* The AVX2 classic against a register-starved, half-width, single-threaded tiling. */
  TsCostEstimate good, bad;
  estimate(t, "block(m=144,n=4080,k=256).micro(m=6,n=16).vector(8).unroll(8).threads(2)", &good);
  estimate(t, "block(m=72,n=2016,k=128).micro(m=4,n=8).vector(4).unroll(4).threads(1)", &bad);
  g_test_message("good %.3f ms (%s), bad %.3f ms (%s)", good.time_s * 1e3, good.bound,
                 bad.time_s * 1e3, bad.bound);
  g_assert_cmpfloat(bad.time_s, >, 3 * good.time_s);
  g_assert_cmpstr(good.bound, ==, "compute");
  /* One knob at a time: more threads, full vectors, more accumulators each help. */
  double t1 = estimate(t, "block(m=144,n=4080,k=256).micro(m=6,n=16).vector(8).unroll(8)"
                          ".threads(1)", NULL);
  g_assert_cmpfloat(t1, >, 1.5 * good.time_s);
  double v4 = estimate(t, "block(m=144,n=4080,k=256).micro(m=6,n=8).vector(4).unroll(8)"
                          ".threads(2)", NULL);
  g_assert_cmpfloat(v4, >, 1.5 * good.time_s);
  /* Eight accumulators cover the FMAs' latency on two ports (4x16 at 8 lanes ran as fast as 6x16
   * on a Zen 3 core, in L1), four half of it (4x8 ran at 0.51 of the peak). */
  double k4x16 = estimate(t, "block(m=144,n=4080,k=256).micro(m=4,n=16).vector(8).unroll(8)"
                             ".threads(2)", NULL);
  double k4x8 = estimate(t, "block(m=144,n=4080,k=256).micro(m=4,n=8).vector(8).unroll(8)"
                            ".threads(2)", NULL);
  g_assert_cmpfloat(k4x16, <, 1.05 * good.time_s);
  g_assert_cmpfloat(k4x8, >, 1.6 * k4x16);
  /* The 6x16 kernel reaches the roof within the model's reach: at most 1.5x the FMA bound. */
  g_assert_cmpfloat(good.time_s, <, 1.5 * 2.0 * 1024 * 1024 * 1024 / 181e9);
  /* A GPU's tiles: a tile a program keeps C in cache over the slices, where BLIS's loops pass
   * over it once per 64-deep block (measured at 1024^3 bf16 on the AVX2 VM: 13.1-13.3 ms tuned
   * against the template's 12.2-12.6, and twice as fast as the same blocks walked as panels). */
  TsCostEstimate tiles, panels;
  estimate(t, "block(m=128,n=128,k=64).micro(m=6,n=16).vector(8).unroll(8).threads(2)"
              ".walk(\"tiles\")", &tiles);
  estimate(t, "block(m=128,n=128,k=64).micro(m=8,n=16).vector(8).unroll(8).threads(2)"
              ".walk(\"panels\")", &panels);
  g_test_message("tiles %.3f ms (%s), panels %.3f ms (%s)", tiles.time_s * 1e3, tiles.bound,
                 panels.time_s * 1e3, panels.bound);
  g_assert_cmpfloat(tiles.time_s, <, panels.time_s);
  g_assert_cmpfloat(tiles.time_s, <, 1.3 * good.time_s);
}

static void
test_cuda_gemm_ranking(void)
{
  g_autoptr(TsOpInstance) inst = instance("gemm", "M=4096,N=4096,K=4096", "bf16 @accum(f32)");
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, "cuda", &h100, NULL);
  TsCostEstimate good, bad;
  estimate(t, "block(m=128,n=128,k=64).warps(8).stages(4).vector(8).swizzle(\"xor\").raster(8)"
              ".mma(\"wgmma\")", &good);
  estimate(t, "block(m=64,n=64,k=32).warps(4).stages(2).vector(8).swizzle(\"xor\").raster(8)"
              ".mma(\"sync\")", &bad);
  g_test_message("good %.3f ms occ %.2f, bad %.3f ms occ %.2f", good.time_s * 1e3,
                 good.occupancy, bad.time_s * 1e3, bad.occupancy);
  g_assert_cmpfloat(bad.time_s, >, 1.3 * good.time_s);
  /* 128x128 tiles read 15 bytes from L2 per 1000 FLOPs: at 989 TFLOP/s that is about what L2
   * delivers, so either roof may bind; DRAM must not. */
  g_assert_cmpstr(good.bound, !=, "dram");
  /* Nominal H100: 989 TFLOP/s dense bf16; nothing beats it, and a good tile gets within 2x. */
  double ideal = 2.0 * 4096.0 * 4096 * 4096 / 989e12;
  g_assert_cmpfloat(good.time_s, >=, ideal);
  g_assert_cmpfloat(good.time_s, <, 2 * ideal);
}

/* FlashAttention-3's premise on Hopper: the warpgroup kernel (wgmma, TMA ring) beats the
 * mma.sync one at the same tile, and stays under the tensor cores' roof. */
static void
test_cuda_attention_wgmma(void)
{
  g_autoptr(TsOpInstance) inst =
    instance("flash_attention", "B=4,H=16,S=8192,D=128", "bf16 @accum(f32)");
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, "cuda", &h100, NULL);
  TsCostEstimate wg, sync;
  estimate(t, "block(m=128,n=128).warps(8).stages(2).mma(\"wgmma\")", &wg);
  estimate(t, "block(m=128,n=64).warps(8).stages(2).mma(\"sync\")", &sync);
  g_test_message("wgmma %.3f ms, mma.sync %.3f ms", wg.time_s * 1e3, sync.time_s * 1e3);
  g_assert_cmpfloat(sync.time_s, >, 1.2 * wg.time_s);
  /* Hiding the softmax under the GEMMs only helps: coop >= overlap >= pingpong. */
  TsCostEstimate ov, pp;
  estimate(t, "block(m=128,n=128).warps(8).stages(2).mma(\"wgmma\").schedule(\"overlap\")", &ov);
  estimate(t, "block(m=128,n=128).warps(8).stages(2).mma(\"wgmma\").schedule(\"pingpong\")",
           &pp);
  g_assert_cmpfloat(ov.time_s, <=, wg.time_s);
  g_assert_cmpfloat(pp.time_s, <=, ov.time_s);
  double ideal = 4.0 * 4 * 16 * 8192.0 * 8192 * 128 / 989e12;
  g_assert_cmpfloat(wg.time_s, >=, ideal);
}

/* fp8 on Hopper: the same warp-specialized tile, twice the tensor cores' rate and half the
 * bytes, predicted faster than bf16 but not past the fp8 roof. */
static void
test_cuda_gemm_fp8(void)
{
  g_autoptr(TsOpInstance) f8 = instance("gemm", "M=8192,N=8192,K=8192", "fp8_e4m3 @accum(f32)");
  g_autoptr(TsOpInstance) b16 = instance("gemm", "M=8192,N=8192,K=8192", "bf16 @accum(f32)");
  g_autoptr(TsCostTarget) t8 = ts_cost_target_new(f8, "cuda", &h100, NULL);
  g_autoptr(TsCostTarget) t16 = ts_cost_target_new(b16, "cuda", &h100, NULL);
  const char *ws = ".warps(8).stages(4).vector(8).swizzle(\"xor\").raster(8).mma(\"wgmma\")"
                   ".load(\"tma\").schedule(\"coop\").persistent(132)";
  g_autofree char *p8 = g_strconcat("block(m=128,n=256,k=128)", ws, NULL);
  g_autofree char *p16 = g_strconcat("block(m=128,n=256,k=64)", ws, NULL);
  TsCostEstimate a, b;
  estimate(t8, p8, &a);
  estimate(t16, p16, &b);
  g_test_message("fp8 %.3f ms, bf16 %.3f ms: %.2fx", a.time_s * 1e3, b.time_s * 1e3,
                 b.time_s / a.time_s);
  g_assert_cmpfloat(b.time_s, >, 1.3 * a.time_s);
  g_assert_cmpfloat(a.time_s, >=, 2.0 * 8192.0 * 8192 * 8192 / 1979e12);
}

static void
test_wave_quantization(void)
{
  /* 132 SMs: 132 tiles fill one wave exactly, 133 need a second for one tile. */
  g_autoptr(TsOpInstance) full = instance("gemm", "M=1536,N=1408,K=4096", "bf16 @accum(f32)");
  g_autoptr(TsOpInstance) over = instance("gemm", "M=1664,N=1408,K=4096", "bf16 @accum(f32)");
  g_autoptr(TsCostTarget) tf = ts_cost_target_new(full, "cuda", &h100, NULL);
  g_autoptr(TsCostTarget) to = ts_cost_target_new(over, "cuda", &h100, NULL);
  /* 128x128 tiles, a 4-stage ring of 128 KiB: one block per SM. */
  const char *p = "block(m=128,n=128,k=64).warps(8).stages(4).vector(8).swizzle(\"xor\")"
                  ".raster(8).mma(\"sync\")";
  TsCostEstimate a, b;
  estimate(tf, p, &a); /* 12 x 11 = 132 tiles */
  estimate(to, p, &b); /* 13 x 11 = 143 tiles */
  g_test_message("132 tiles: wave eff %.3f, %.3f ms; 143 tiles: %.3f, %.3f ms",
                 a.wave_efficiency, a.time_s * 1e3, b.wave_efficiency, b.time_s * 1e3);
  g_assert_cmpfloat(b.time_s / a.time_s, >, 1.3); /* 8% more work, a whole second round */
}

static void
test_resources_and_bounds(void)
{
  g_autoptr(TsOpInstance) inst = instance("gemm", "M=4096,N=4096,K=4096", "bf16 @accum(f32)");
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, "cuda", &h100, NULL);
  g_autoptr(TsSchedPoint) p = point("block(m=128,n=128,k=32).warps(8).stages(4).vector(8)"
                                    ".swizzle(\"xor\").raster(8).mma(\"sync\")");
  TsCostEstimate lean, fat;
  TsModuleResources r = {.registers = 96, .smem_static = 0, .smem_dynamic = 64 << 10,
                         .local_bytes = 0, .spill_stores = 0, .spill_loads = 0, .threads = 256};
  g_assert_true(ts_cost_analytic(t, p, &r, &lean, NULL));
  r.registers = 255;
  r.spill_stores = r.spill_loads = 64;
  g_assert_true(ts_cost_analytic(t, p, &r, &fat, NULL));
  g_assert_cmpfloat(fat.occupancy, <, lean.occupancy);
  g_assert_cmpfloat(fat.time_s, >, lean.time_s);

  /* Row ops are memory-bound on the GPU and, without exps, on the CPU; a CPU's softmax is
   * bound by its vector exps, three an element online, one when the exps are stored. */
  g_autoptr(TsOpInstance) sm = instance("softmax_safe", "M=4096,N=8192", "f32");
  g_autoptr(TsCostTarget) tg = ts_cost_target_new(sm, "cuda", &h100, NULL);
  TsCostEstimate e, stored;
  estimate(tg, "block(m=1).warps(8).vector(4)", &e);
  g_assert_cmpstr(e.bound, ==, "dram");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  g_autoptr(TsOpInstance) ln = instance("layernorm_safe", "M=4096,N=8192", "f32");
  g_autoptr(TsCostTarget) tl = ts_cost_target_new(ln, "cpu", &cpu_dev, c);
  estimate(tl, "block(m=4).vector(8).threads(2)", &e);
  g_assert_true(strcmp(e.bound, "dram") == 0 || strcmp(e.bound, "cache") == 0);
  g_autoptr(TsCostTarget) tc = ts_cost_target_new(sm, "cpu", &cpu_dev, c);
  estimate(tc, "block(m=4).vector(8).threads(2).softmax(\"online\")", &e);
  estimate(tc, "block(m=4).vector(8).threads(2).softmax(\"stored\")", &stored);
  g_assert_cmpstr(e.bound, ==, "compute");
  g_assert_cmpfloat(e.time_s, >, 2 * stored.time_s);
}

/* A narrower vector takes the share of the f32 roof its measured FMA peak says: all of it on
 * a core that splits its widest vectors in halves, else its lanes' share; a row kernel, the
 * share its measured exp at that width says. */
static void
test_vector_roofs(void)
{
  g_autoptr(TsOpInstance) sm = instance("softmax_safe", "M=1024,N=4096", "f32");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  g_autoptr(TsCostTarget) lanes = ts_cost_target_new(sm, "cpu", &cpu_dev, c);
  TsCostEstimate v4, v8;
  const char *p4 = "block(m=4).vector(4).threads(2).softmax(\"stored\")";
  const char *p8 = "block(m=4).vector(8).threads(2).softmax(\"stored\")";
  estimate(lanes, p4, &v4);
  estimate(lanes, p8, &v8);
  g_assert_cmpfloat(fabs(v4.compute_s / v8.compute_s - 2), <, 1e-9);
  ts_prof_ceilings_set(c, "f32x4", TS_PROF_COMPUTE, 178.0, 92.0); /* a split 256-bit FMA */
  g_autoptr(TsCostTarget) split = ts_cost_target_new(sm, "cpu", &cpu_dev, c);
  estimate(split, p4, &v4);
  estimate(split, p8, &v8);
  g_assert_cmpfloat(fabs(v4.compute_s / v8.compute_s - 93.9 / 92.0), <, 1e-9);

  /* A row kernel narrows as its exp does where both widths' exps were measured (the fast exp's
   * for math("fast")); with the narrow one alone, as its FMAs do. */
  ts_prof_ceilings_set(c, "exp_x4", TS_PROF_RATE, 1.1, 0.55);
  g_autoptr(TsCostTarget) only_narrow = ts_cost_target_new(sm, "cpu", &cpu_dev, c);
  estimate(only_narrow, p4, &v4);
  estimate(only_narrow, p8, &v8);
  g_assert_cmpfloat(fabs(v4.compute_s / v8.compute_s - 93.9 / 92.0), <, 1e-9);
  ts_prof_ceilings_set(c, "exp", TS_PROF_RATE, 1.2, 0.6);
  ts_prof_ceilings_set(c, "exp_fast", TS_PROF_RATE, 1.6, 0.8);
  ts_prof_ceilings_set(c, "exp_fast_x4", TS_PROF_RATE, 1.2, 0.6);
  g_autoptr(TsCostTarget) exps = ts_cost_target_new(sm, "cpu", &cpu_dev, c);
  estimate(exps, p4, &v4);
  estimate(exps, p8, &v8);
  g_assert_cmpfloat(fabs(v4.compute_s / v8.compute_s - 0.6 / 0.55), <, 1e-9);
  g_autoptr(TsOpInstance) sb = instance("softmax_safe", "M=1024,N=4096", "bf16");
  g_autoptr(TsCostTarget) fast = ts_cost_target_new(sb, "cpu", &cpu_dev, c);
  g_autofree char *f4 = g_strconcat(p4, ".math(\"fast\")", NULL);
  g_autofree char *f8 = g_strconcat(p8, ".math(\"fast\")", NULL);
  estimate(fast, f4, &v4);
  estimate(fast, f8, &v8);
  g_assert_cmpfloat(fabs(v4.compute_s / v8.compute_s - 0.8 / 0.6), <, 1e-9);
}

/* A bf16 GEMM's dot("bf16") points (vdpbf16ps) compute at the rate the device measured for
 * that instruction against its f32 FMAs: twice on a Zen 4 core, half on an Emerald Rapids one,
 * where the dot("fma") points on widened panels must come out faster; unmeasured, as the FMAs. */
static void
test_cpu_gemm_bf16_engines(void)
{
  const TsDeviceInfo avx512 = {
    .backend = "cpu", .name = "test avx512", .arch = "x86_64+avx2+fma+avx512f+avx512bf16",
    .compute_units = 2, .memory_bytes = 24ull << 30, .l1_bytes = 48 << 10,
    .l2_bytes = 2048 << 10, .l3_bytes = 32 << 20, .vector_bits = 512, .toolchain = "gcc 12.2.0"};
  g_autoptr(TsOpInstance) g = instance("gemm", "M=1024,N=1024,K=1024", "bf16");
  const char *fma = "block(m=168,n=2016,k=256).micro(m=14,n=32).vector(16).unroll(4)"
                    ".threads(1).dot(\"fma\")";
  const char *dot = "block(m=168,n=2016,k=256).micro(m=14,n=32).vector(16).unroll(4)"
                    ".threads(1).dot(\"bf16\")";
  const double ratios[] = {0, 0.48, 2.0}; /* bf16_dot over f32; 0: not measured */
  for (guint i = 0; i < G_N_ELEMENTS(ratios); i++) {
    g_autoptr(TsProfCeilings) c = cpu_ceilings();
    if (ratios[i] > 0)
      ts_prof_ceilings_set(c, "bf16_dot", TS_PROF_COMPUTE, 181.0 * ratios[i], 93.9 * ratios[i]);
    g_autoptr(TsCostTarget) t = ts_cost_target_new(g, "cpu", &avx512, c);
    TsCostEstimate ef, ed;
    estimate(t, fma, &ef);
    estimate(t, dot, &ed);
    g_assert_cmpfloat(fabs(ef.compute_s / ed.compute_s - (ratios[i] > 0 ? ratios[i] : 1)), <,
                      1e-9);
    if (ratios[i] > 0 && ratios[i] < 1)
      g_assert_cmpfloat(ef.time_s, <, ed.time_s);
  }
}

/* A CPU's exps take the time the device's measured exp rates say: each exp an element more
 * adds rows x cols over the rate of the cores (one core's rate, times the cores used), the
 * fast polynomial its own rate (slower here, as on Zen 1), and without measured rates the
 * nominal one. A skewed pipeline hides the data passes under the exps. */
static void
test_exp_rates(void)
{
  const double M = 1024, N = 4096;
  g_autoptr(TsOpInstance) f32 = instance("softmax_safe", "M=1024,N=4096", "f32");
  g_autoptr(TsOpInstance) bf16 = instance("softmax_safe", "M=1024,N=4096", "bf16");
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  ts_prof_ceilings_set(c, "exp", TS_PROF_RATE, 1.2, 0.6);
  ts_prof_ceilings_set(c, "exp_fast", TS_PROF_RATE, 0.8, 0.4);
  g_autoptr(TsCostTarget) t = ts_cost_target_new(f32, "cpu", &cpu_dev, c);
  const char *rest = ".vector(8).threads(2).store(\"stream\").pipeline(\"none\")";
  g_autofree char *ps = g_strconcat("block(m=4).softmax(\"stored\")", rest, NULL);
  g_autofree char *pm = g_strconcat("block(m=4).softmax(\"max_first\")", rest, NULL);
  g_autofree char *po = g_strconcat("block(m=4).softmax(\"online\")", rest, NULL);
  TsCostEstimate s, m, o;
  estimate(t, ps, &s);
  estimate(t, pm, &m);
  estimate(t, po, &o);
  /* 1024 tasks of 4 rows on 2 threads: both cores, evenly */
  const double per_exp = M * N / (0.6e9 * 2);
  g_assert_cmpfloat(fabs((m.compute_s - s.compute_s) / per_exp - 1), <, 1e-9);
  g_assert_cmpfloat(fabs((o.compute_s - s.compute_s) / (2 * per_exp) - 1), <, 1e-9);
  g_assert_cmpstr(o.bound, ==, "compute");

  g_autoptr(TsCostTarget) tb = ts_cost_target_new(bf16, "cpu", &cpu_dev, c);
  g_autofree char *exact = g_strconcat(po, ".math(\"exact\")", NULL);
  g_autofree char *fast = g_strconcat(po, ".math(\"fast\")", NULL);
  TsCostEstimate ex, fa;
  estimate(tb, exact, &ex);
  estimate(tb, fast, &fa);
  g_assert_cmpfloat(fabs((fa.compute_s - ex.compute_s) / (3 * M * N * (1 / 0.8e9 - 1 / 1.2e9)) - 1),
                    <, 1e-9);

  /* Without measured rates: a nominal exp of 72 FLOPs of the measured FMA roof a core. */
  g_autoptr(TsProfCeilings) bare = cpu_ceilings();
  g_autoptr(TsCostTarget) tn = ts_cost_target_new(f32, "cpu", &cpu_dev, bare);
  estimate(tn, ps, &s);
  estimate(tn, pm, &m);
  g_assert_cmpfloat(m.compute_s, >, s.compute_s);

  /* skew: time = the longer phase and the launch; none: a fifth of the shorter one shows */
  g_autofree char *skew = g_strconcat("block(m=4).softmax(\"stored\").vector(8).threads(2)"
                                      ".store(\"stream\").pipeline(\"skew\")",
                                      NULL);
  TsCostEstimate k;
  estimate(t, skew, &k);
  estimate(t, ps, &s);
  g_assert_cmpfloat(fabs(k.time_s - (MAX(k.compute_s, k.memory_s) + k.launch_s)), <,
                    1e-12 + 1e-9 * k.time_s);
  g_assert_cmpfloat(fabs(s.time_s - (MAX(s.compute_s, s.memory_s) +
                                     0.2 * MIN(s.compute_s, s.memory_s) + s.launch_s)),
                    <, 1e-12 + 1e-9 * s.time_s);
  g_assert_cmpfloat(k.time_s, <, s.time_s);
}

/* Over whole spaces: every valid point gets a finite estimate no faster than the roofline of
 * its op, on both backends. */
static void
check_space(const char *op, const char *shape, const char *dtype, const char *backend,
            const TsDeviceInfo *dev, const TsProfCeilings *c)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = instance(op, shape, dtype);
  g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, backend, dev, c);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, backend, NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, dev);
  ts_sched_env_set(env, "has_wgmma", 1);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsSchedPoint *p;
  guint n = 0;
  guint nf = ts_cost_n_features(t);
  g_autofree float *f = g_new(float, nf);
  int rel = feature_index(t, "est.rel_time");
  while (ts_sched_iter_next(it, &p, &error)) {
    TsCostEstimate e;
    g_assert_true(ts_cost_analytic(t, p, NULL, &e, NULL));
    g_assert_true(isfinite(e.time_s));
    ts_cost_features(t, p, NULL, f);
    if (!(f[rel] >= 0.999)) {
      g_autofree char *s = ts_sched_point_to_string(p);
      g_error("%s %s: %s estimated %.3g x the roofline", op, backend, s, f[rel]);
    }
    ts_sched_point_free(p);
    n++;
  }
  g_assert_no_error(error);
  g_test_message("%s %s %s: %u points", op, shape, backend, n);
  g_assert_cmpuint(n, >, 0);
}

/* The CPU attention's products as the kernel runs them, micro-tile by micro-tile: the causal
 * op's Q K^T micro-tiles up to each micro-row's last diagonal, its P V keys likewise. */
static double
attention_cpu_product_flops(gboolean causal, double S, double D, double BM, double BN, double MR,
                            double NR)
{
  double f = 0;
  for (double q0 = 0; q0 < S; q0 += BM) {
    double mc = MIN(BM, S - q0), nk = causal ? q0 + mc : S;
    for (double kt = 0; kt < nk; kt += BN) {
      double nc = MIN(BN, nk - kt);
      for (double ir = 0; ir < mc; ir += MR) {
        for (double jr = 0; jr < nc; jr += NR)
          if (!causal || kt + jr < q0 + ir + MR)
            f += 2 * MR * NR * D;
        if (!causal || kt < q0 + ir + MR)
          f += 2 * MR * ceil(D / NR) * NR * (causal ? MIN(nc, q0 + ir + MR - kt) : nc);
      }
    }
  }
  return f;
}

static double
knob(const TsSchedPoint *p, const char *name)
{
  return (double)ts_sched_point_get_int(p, name, 0);
}

/* The analytic work of CPU attention is what the kernel computes: its exps made free (a rate
 * beyond any), the work beyond the op's FLOPs (work.pad_waste) is the padded products'. */
static void
test_cpu_attention_work(void)
{
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  ts_prof_ceilings_set(c, "exp_fast", TS_PROF_RATE, 1e12, 1e12);
  const char *pts[] = {"block(m=96,n=96).micro(m=6,n=16).vector(8).threads(2)",
                       "block(m=64,n=128).micro(m=4,n=16).vector(8).threads(1)",
                       "block(m=48,n=32).micro(m=14,n=8).vector(8).threads(2)"};
  for (int causal = 0; causal < 2; causal++) {
    const char *op = causal ? "flash_attention_causal" : "flash_attention";
    const double heads = 2;
    g_autoptr(TsOpInstance) inst = instance(op, "B=1,H=2,S=300,D=40", "bf16");
    g_autoptr(TsCostTarget) t = ts_cost_target_new(inst, "cpu", &cpu_dev, c);
    int pad = feature_index(t, "work.pad_waste");
    g_assert_cmpint(pad, >=, 0);
    g_autofree float *f = g_new(float, ts_cost_n_features(t));
    for (guint i = 0; i < G_N_ELEMENTS(pts); i++) {
      g_autoptr(TsSchedPoint) p = point(pts[i]);
      ts_cost_features(t, p, NULL, f);
      double want = heads *
                    attention_cpu_product_flops(causal, 300, 40, knob(p, "BM"), knob(p, "BN"),
                                                knob(p, "MR"), knob(p, "NR")) /
                    ts_op_instance_flops(inst);
      g_test_message("%s %s: work / flops %.4f, the kernel's %.4f", op, pts[i], f[pad] + 1, want);
      g_assert_cmpfloat(fabs((f[pad] + 1) / want - 1), <, 1e-3);
    }
  }
}

static void
test_whole_spaces(void)
{
  g_autoptr(TsProfCeilings) c = cpu_ceilings();
  const char *ops[][3] = {{"gemm", "M=512,N=768,K=1024", "f32"},
                          {"flash_attention", "B=2,H=4,S=1024,D=64", "bf16 @accum(f32)"},
                          {"flash_attention_causal", "B=2,H=4,S=1024,D=128", "bf16 @accum(f32)"},
                          {"softmax_safe", "M=1024,N=4096", "f32"},
                          {"layernorm_safe", "M=1024,N=4096", "f32"},
                          {"rmsnorm_safe", "M=1024,N=4096", "f32"},
                          {"reduce_sum", "M=1024,N=4096", "f32"},
                          {"saxpy", "N=1048576", "f32"}};
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
    gboolean tensor = strcmp(ops[i][0], "gemm") == 0 || g_str_has_prefix(ops[i][0], "flash");
    check_space(ops[i][0], ops[i][1], ops[i][2], "cpu", &cpu_dev, c);
    check_space(ops[i][0], ops[i][1], tensor ? "bf16 @accum(f32)" : ops[i][2], "cuda", &h100,
                NULL);
  }
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/cost/features/deterministic", test_features_deterministic);
  g_test_add_func("/cost/features/generic", test_features_generic);
  g_test_add_func("/cost/analytic/cpu-gemm", test_cpu_gemm_ranking);
  g_test_add_func("/cost/analytic/cuda-gemm", test_cuda_gemm_ranking);
  g_test_add_func("/cost/analytic/cuda-attention-wgmma", test_cuda_attention_wgmma);
  g_test_add_func("/cost/analytic/cuda-gemm-fp8", test_cuda_gemm_fp8);
  g_test_add_func("/cost/analytic/waves", test_wave_quantization);
  g_test_add_func("/cost/analytic/resources-bounds", test_resources_and_bounds);
  g_test_add_func("/cost/analytic/whole-spaces", test_whole_spaces);
  g_test_add_func("/cost/analytic/cpu-attention-work", test_cpu_attention_work);
  g_test_add_func("/cost/analytic/kernel-gemm", test_kernel_gemm);
  g_test_add_func("/cost/analytic/kernel-rows", test_kernel_rows);
  g_test_add_func("/cost/analytic/vector-roofs", test_vector_roofs);
  g_test_add_func("/cost/analytic/exp-rates", test_exp_rates);
  g_test_add_func("/cost/analytic/cpu-gemm-bf16-engines", test_cpu_gemm_bf16_engines);
  return g_test_run();
}
