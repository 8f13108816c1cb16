/* ts-prof-ceiling-cuda.c — the GPU ceilings: CUDA C microbenchmarks compiled and timed through
 * the cuda backend (NVRTC + nvJitLink, CUPTI kernel records), chosen by the device's arch.
 *
 * Tensor cores: on sm_90a, wgmma m64n256 with both operands in shared memory, two warpgroups per
 * SM looping on the same tiles (mma.sync issues from one warp at a time and tops out near two
 * thirds of Hopper's peak); elsewhere mma.sync m16n8k16 (bf16, f16), m16n8k8 (tf32) and, from
 * sm_89, m16n8k32 e4m3, eight independent accumulators per warp to cover the pipe's latency.
 * One mma counts 2*M*N*K FLOPs. Operands hold small positive values, not zeros: a zero datapath
 * draws less power and would clock higher than any real kernel gets to.
 * CUDA cores: eight independent fmaf chains per thread, every thread slot of every SM filled.
 * DRAM: a copy over 8x the L2 (or 256 MiB), counted as bytes read plus bytes written; the backend
 * flushes the L2 before every timed launch. L2: ld.global.cg (L2 only, bypassing L1) over half
 * the L2 from every SM; the first pass after the flush comes from DRAM, so enough passes are
 * made that it does not matter. Every result reaches a conditional store to a sink, so no
 * computation can be dropped. */
#include "ts-prof-private.h"

#include "ts-cuda.h"

#include <string.h>

#define TARGET_NS 10e6
#define ROUNDS 5

/* ---- sources ---- */

static const char PRELUDE[] =
  "#include \"ts_cuda_prims.cuh\"\n"
  /* Small positive values in every operand format used: as bf16 or f16 pairs ~1.0-1.3 or
   * ~0.008, as tf32 ~0.008, as e4m3 bytes 0x00-0x3f and 0x3c (never a NaN pattern). */
  "__device__ __forceinline__ unsigned ts_peak_bits(unsigned i)\n"
  "{\n"
  "  return 0x3c003c00u ^ ((i * 2654435761u) & 0x003f003fu);\n"
  "}\n";

static const char FMA_SRC[] =
  "extern \"C\" __global__ void __launch_bounds__(THREADS, MINB) ENTRY(const TsArgs args)\n"
  "{\n"
  "  float a[8];\n"
  "  const float m = 0.999999f, c = 1e-7f;\n"
  "#pragma unroll\n"
  "  for (int k = 0; k < 8; k++)\n"
  "    a[k] = (float)(threadIdx.x + k);\n"
  "  for (long long r = 0; r < args.ints[0]; r++) {\n"
  "#pragma unroll\n"
  "    for (int i = 0; i < 32; i++)\n"
  "#pragma unroll\n"
  "      for (int k = 0; k < 8; k++)\n"
  "        a[k] = fmaf(a[k], m, c);\n"
  "  }\n"
  "  float s = 0.0f;\n"
  "#pragma unroll\n"
  "  for (int k = 0; k < 8; k++)\n"
  "    s += a[k];\n"
  "  if (s == 12345.0f)\n"
  "    ((float *)args.bufs[0])[blockIdx.x] = s;\n"
  "}\n";

/* MMA is the instruction up to its operands: "mma.sync.aligned.m16n8k16.row.col.f32.bf16..." */
static const char MMA_SRC[] =
  "extern \"C\" __global__ void __launch_bounds__(THREADS, MINB) ENTRY(const TsArgs args)\n"
  "{\n"
  "  unsigned a[4], b[2];\n"
  "#pragma unroll\n"
  "  for (int i = 0; i < 4; i++)\n"
  "    a[i] = ts_peak_bits(threadIdx.x * 8 + i);\n"
  "  b[0] = ts_peak_bits(threadIdx.x * 8 + 4);\n"
  "  b[1] = ts_peak_bits(threadIdx.x * 8 + 5);\n"
  "  float d[8][4];\n"
  "#pragma unroll\n"
  "  for (int k = 0; k < 8; k++)\n"
  "    d[k][0] = d[k][1] = d[k][2] = d[k][3] = 0.0f;\n"
  "  for (long long r = 0; r < args.ints[0]; r++) {\n"
  "#pragma unroll\n"
  "    for (int k = 0; k < 8; k++)\n"
  "      asm volatile(MMA \" {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
  "                   : \"+f\"(d[k][0]), \"+f\"(d[k][1]), \"+f\"(d[k][2]), \"+f\"(d[k][3])\n"
  "                   : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]),"
  " \"r\"(b[1]));\n"
  "  }\n"
  "  float s = 0.0f;\n"
  "#pragma unroll\n"
  "  for (int k = 0; k < 8; k++)\n"
  "    s += d[k][0] + d[k][1] + d[k][2] + d[k][3];\n"
  "  if (s == 12345.0f)\n"
  "    ((float *)args.bufs[0])[blockIdx.x] = s;\n"
  "}\n";

/* WGMMA(d, da, db) is generated (wgmma_macro): 128 accumulator operands are no text to write by
 * hand. A is 64 x K, B is 256 x K, both K-major without swizzle: 8x16-byte core matrices stored
 * contiguously (128 bytes), the next along K at +128 bytes, the next along M or N at +256. That
 * is 2 KiB of A and 8 KiB of B for every operand type, since K is always 32 bytes. */
static const char WGMMA_SRC[] =
  "__device__ __forceinline__ unsigned long long ts_peak_desc(unsigned addr)\n"
  "{\n"
  "  return (unsigned long long)((addr & 0x3ffffu) >> 4) | (128ull >> 4) << 16 |"
  " (256ull >> 4) << 32;\n"
  "}\n"
  "extern \"C\" __global__ void __launch_bounds__(THREADS, MINB) ENTRY(const TsArgs args)\n"
  "{\n"
  "  __shared__ __align__(1024) unsigned tile[(2048 + 8192) / 4];\n"
  "  for (unsigned i = threadIdx.x; i < (2048 + 8192) / 4; i += THREADS)\n"
  "    tile[i] = ts_peak_bits(i);\n"
  "  __syncthreads();\n"
  /* wgmma reads shared memory through the async proxy: make the plain stores visible to it. */
  "  asm volatile(\"fence.proxy.async.shared::cta;\\n\" ::: \"memory\");\n"
  "  const unsigned long long da = ts_peak_desc(ts_smem_addr(tile));\n"
  "  const unsigned long long db = ts_peak_desc(ts_smem_addr(tile + 2048 / 4));\n"
  "  const unsigned one = args.ints[0] > 0;\n"
  "  float d[128];\n"
  "#pragma unroll\n"
  "  for (int i = 0; i < 128; i++)\n"
  "    d[i] = 0.0f;\n"
  "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" ::: \"memory\");\n"
  "  for (long long r = 0; r < args.ints[0]; r++) {\n"
  /* Four per group and one group left in flight: the tensor cores never wait for the issue. */
  "#pragma unroll\n"
  "    for (int k = 0; k < 4; k++)\n"
  "      WGMMA(d, da, db, one);\n"
  "    asm volatile(\"wgmma.commit_group.sync.aligned;\\n\" ::: \"memory\");\n"
  "    asm volatile(\"wgmma.wait_group.sync.aligned 1;\\n\" ::: \"memory\");\n"
  "  }\n"
  "  asm volatile(\"wgmma.wait_group.sync.aligned 0;\\n\" ::: \"memory\");\n"
  "  float s = 0.0f;\n"
  "#pragma unroll\n"
  "  for (int i = 0; i < 128; i++)\n"
  "    s += d[i];\n"
  "  if (s == 12345.0f)\n"
  "    ((float *)args.bufs[0])[blockIdx.x] = s;\n"
  "}\n";

/* Four independent 16-byte vectors in flight per thread per step of a grid-stride loop. */
static const char DRAM_SRC[] =
  "extern \"C\" __global__ void __launch_bounds__(THREADS, MINB) ENTRY(const TsArgs args)\n"
  "{\n"
  "  const uint4 *src = (const uint4 *)args.bufs[1];\n"
  "  uint4 *dst = (uint4 *)args.bufs[2];\n"
  "  const long long n = args.ints[1], stride = (long long)gridDim.x * THREADS;\n"
  "  for (long long r = 0; r < args.ints[0]; r++)\n"
  "    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += 4 * stride) {\n"
  "      uint4 v[4];\n"
  "#pragma unroll\n"
  "      for (int u = 0; u < 4; u++)\n"
  "        if (i + u * stride < n)\n"
  "          v[u] = src[i + u * stride];\n"
  "#pragma unroll\n"
  "      for (int u = 0; u < 4; u++)\n"
  "        if (i + u * stride < n)\n"
  "          dst[i + u * stride] = v[u];\n"
  "    }\n"
  "}\n";

static const char L2_SRC[] =
  "extern \"C\" __global__ void __launch_bounds__(THREADS, MINB) ENTRY(const TsArgs args)\n"
  "{\n"
  "  const uint4 *src = (const uint4 *)args.bufs[1];\n"
  "  const long long n = args.ints[1], stride = (long long)gridDim.x * THREADS;\n"
  "  unsigned acc = 0;\n"
  "  for (long long r = 0; r < args.ints[0]; r++)\n"
  "    for (long long i = (long long)blockIdx.x * THREADS + threadIdx.x; i < n; i += 4 * stride) {\n"
  "      unsigned v[4][4];\n"
  "#pragma unroll\n"
  "      for (int u = 0; u < 4; u++) {\n"
  "        v[u][0] = v[u][1] = v[u][2] = v[u][3] = 0;\n"
  "        if (i + u * stride < n)\n"
  /* volatile: every pass loads again; .cg: from L2, never from the SM's L1. */
  "          asm volatile(\"ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\\n\"\n"
  "                       : \"=r\"(v[u][0]), \"=r\"(v[u][1]), \"=r\"(v[u][2]), \"=r\"(v[u][3])\n"
  "                       : \"l\"(src + i + u * stride));\n"
  "      }\n"
  "#pragma unroll\n"
  "      for (int u = 0; u < 4; u++)\n"
  "        acc ^= v[u][0] ^ v[u][1] ^ v[u][2] ^ v[u][3];\n"
  "    }\n"
  "  if (acc == 0x9e3779b9u)\n"
  "    ((unsigned *)args.bufs[0])[blockIdx.x] = acc;\n"
  "}\n";

/* "#define WGMMA(d, da, db, one) asm volatile(...)" for one wgmma instruction with an m64n256
 * f32 accumulator (128 registers a thread), operands from descriptors, and imm the immediates
 * that follow scale-d. */
static char *
wgmma_macro(const char *instr, const char *imm)
{
  GString *s = g_string_new("#define WGMMA(d, da, db, one) asm volatile(\"{\\n.reg .pred p;\\n"
                            "setp.ne.b32 p, %130, 0;\\n");
  g_string_append_printf(s, "%s {", instr);
  for (int i = 0; i < 128; i++)
    g_string_append_printf(s, "%s%%%d", i ? ", " : "", i);
  g_string_append_printf(s, "}, %%128, %%129, p, %s;\\n}\\n\" : ", imm);
  for (int i = 0; i < 128; i++)
    g_string_append_printf(s, "%s\"+f\"(d[%d])", i ? ", " : "", i);
  g_string_append(s, " : \"l\"(da), \"l\"(db), \"r\"(one))\n");
  return g_string_free(s, FALSE);
}

static void
source_free(gpointer p)
{
  TsProfCudaSource *s = p;
  g_free(s->roof);
  g_free(s->entry);
  g_free(s->source);
  g_free(s->what);
  g_free(s);
}

static TsProfCudaSource *
add_source(GPtrArray *out, const char *roof, TsProfCeilingKind kind, guint threads,
           guint blocks_per_sm, const char *defines, const char *body, const char *what)
{
  TsProfCudaSource *s = g_new0(TsProfCudaSource, 1);
  s->roof = g_strdup(roof);
  s->entry = g_strdup_printf("ts_peak_%s", roof);
  s->kind = kind;
  s->threads = threads;
  s->blocks_per_sm = blocks_per_sm;
  s->what = g_strdup(what);
  /* The launch record is required by the loader; the real shape comes with every launch. */
  s->source = g_strdup_printf("%s#define THREADS %u\n#define MINB %u\n#define ENTRY %s\n%s"
                              "extern \"C\" __constant__ unsigned int %s_launch[7] = "
                              "{1, 1, 1, %u, 1, 1, 0};\n%s",
                              PRELUDE, threads, blocks_per_sm, s->entry, defines, s->entry,
                              threads, body);
  g_ptr_array_add(out, s);
  return s;
}

/* One tensor-core roof: its type names in the mma.sync and wgmma spellings, and K. */
typedef struct {
  const char *roof;
  const char *mma_types; /* after ".row.col.f32." */
  int mma_k;
  const char *wgmma_types; /* after ".f32." */
  int wgmma_k;
  const char *wgmma_imm; /* the immediates after scale-d */
  int min_sm;            /* major * 10 + minor */
} Tensor;

static const Tensor tensors[] = {
  {"bf16_tensor", "bf16.bf16.f32", 16, "bf16.bf16", 16, "1, 1, 0, 0", 80},
  {"f16_tensor", "f16.f16.f32", 16, "f16.f16", 16, "1, 1, 0, 0", 80},
  {"tf32_tensor", "tf32.tf32.f32", 8, "tf32.tf32", 8, "1, 1", 80},
  {"fp8_tensor", "e4m3.e4m3.f32", 32, "e4m3.e4m3", 32, "1, 1", 89},
};

GPtrArray *
ts_prof_cuda_ceiling_sources(const char *arch)
{
  const TsCudaArch *a = ts_cuda_arch_lookup(arch);
  if (a == NULL || a->major * 10 + a->minor < 80)
    return NULL;
  const int sm = a->major * 10 + a->minor;
  GPtrArray *out = g_ptr_array_new_with_free_func(source_free);
  for (gsize i = 0; i < G_N_ELEMENTS(tensors); i++) {
    const Tensor *t = &tensors[i];
    if (sm < t->min_sm)
      continue;
    TsProfCudaSource *s;
    if (a->wgmma) {
      g_autofree char *instr = g_strdup_printf("wgmma.mma_async.sync.aligned.m64n256k%d.f32.%s",
                                               t->wgmma_k, t->wgmma_types);
      g_autofree char *macro = wgmma_macro(instr, t->wgmma_imm);
      g_autofree char *what = g_strdup_printf("wgmma m64n256k%d", t->wgmma_k);
      /* Two warpgroups of 128 accumulators each fill the SM's registers halfway. */
      s = add_source(out, t->roof, TS_PROF_COMPUTE, 256, 1, macro, WGMMA_SRC, what);
      s->flops = 2.0 * 64 * 256 * t->wgmma_k * 4 /* per group */ * 2 /* warpgroups */;
    } else {
      g_autofree char *define = g_strdup_printf(
        "#define MMA \"mma.sync.aligned.m16n8k%d.row.col.f32.%s\"\n", t->mma_k, t->mma_types);
      g_autofree char *what = g_strdup_printf("mma.sync m16n8k%d", t->mma_k);
      /* 16 warps an SM, 8 accumulators each: 32 mmas in flight per warp scheduler. */
      s = add_source(out, t->roof, TS_PROF_COMPUTE, 256, 2, define, MMA_SRC, what);
      s->flops = 2.0 * 16 * 8 * t->mma_k * 8 /* chains */ * 8 /* warps */;
    }
  }
  const guint full = MAX(a->max_threads_per_sm / 256, 1);
  TsProfCudaSource *s =
    add_source(out, "f32", TS_PROF_COMPUTE, 256, full, "", FMA_SRC, "8 fmaf chains");
  s->flops = 2.0 * 32 * 8 * 256;
  /* Half the thread slots, with four 16-byte loads in flight each, is 64 KiB in flight per SM:
   * several times the latency-bandwidth product, and 64 registers a thread leave room for the
   * 64-bit addresses. */
  const guint half = MAX(full / 2, 1);
  s = add_source(out, "dram", TS_PROF_MEMORY, 256, half, "", DRAM_SRC, "copy");
  s->bytes_per_vector = 32; /* 16 read, 16 written */
  s = add_source(out, "l2", TS_PROF_MEMORY, 256, half, "", L2_SRC, "ld.global.cg");
  s->bytes_per_vector = 16;
  return out;
}

/* ---- measurement ---- */

TsProfCeilings *
ts__prof_measure_cuda(TsBackend *be, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(be);
  g_autoptr(GPtrArray) sources = ts_prof_cuda_ceiling_sources(d->arch);
  if (sources == NULL) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "no ceiling microbenchmarks for %s (%s): Tessera's CUDA kernels need sm_80 or "
                "newer",
                d->arch, d->name);
    return NULL;
  }
  const guint sms = MAX(d->compute_units, 1);
  /* DRAM: 8x the L2 so no pass finds the last one's data, at least 256 MiB, at most an eighth
   * of the device; L2: half of it, so it stays resident beside what else the L2 holds. */
  guint64 dram_bytes = MAX(8 * d->l2_bytes, (guint64)256 << 20);
  if (d->memory_bytes > 0)
    dram_bytes = MIN(dram_bytes, d->memory_bytes / 16);
  dram_bytes = dram_bytes / 4096 * 4096;
  guint64 l2_bytes = MAX(d->l2_bytes / 2 / 4096 * 4096, 4096);

  g_autoptr(GPtrArray) modules = g_ptr_array_new_with_free_func((GDestroyNotify)ts_module_free);
  TsBuffer *bufs[3] = {0};
  TsProfBench *benches = g_new0(TsProfBench, sources->len);
  TsProfCeilings *out = NULL;
  gboolean ok = (bufs[0] = ts_backend_alloc(be, 4096, error)) != NULL &&
                (bufs[1] = ts_backend_alloc(be, dram_bytes, error)) != NULL &&
                (bufs[2] = ts_backend_alloc(be, dram_bytes, error)) != NULL;
  for (guint i = 0; ok && i < sources->len; i++) {
    const TsProfCudaSource *s = sources->pdata[i];
    TsSource src = {.lang = TS_LANG_CUDA, .text = s->source, .entry = s->entry};
    TsModule *m = ts_backend_compile(be, &src, error);
    if (!(ok = m != NULL))
      break;
    g_ptr_array_add(modules, m);
    TsProfBench *b = &benches[i];
    b->roof = s->roof;
    b->module = m;
    memcpy(b->bufs, bufs, sizeof bufs);
    b->launch.n_buffers = 3;
    b->launch.n_ints = 2;
    b->launch.grid[0] = sms * s->blocks_per_sm;
    b->launch.block[0] = s->threads;
    b->ints[0] = 4;
    if (s->kind == TS_PROF_COMPUTE) {
      b->work = s->flops * b->launch.grid[0];
    } else {
      b->ints[1] = (gint64)((strcmp(s->roof, "l2") == 0 ? l2_bytes : dram_bytes) / 16);
      b->work = s->bytes_per_vector * (double)b->ints[1];
    }
    ok = ts__prof_calibrate(be, b, TARGET_NS, error);
  }
  ok = ok && ts__prof_run_benches(be, benches, sources->len, ROUNDS, error);
  if (ok) {
    g_autofree char *toolchain = ts_prof_toolchain_of(d);
    out = ts_prof_ceilings_new(d->backend, toolchain);
    g_autoptr(GString) method = g_string_new("");
    for (guint i = 0; i < sources->len; i++) {
      const TsProfCudaSource *s = sources->pdata[i];
      ts_prof_ceilings_set(out, s->roof, s->kind, ts__prof_bench_rate(&benches[i]), 0);
      g_string_append_printf(method, "%s%s: %s", i ? "; " : "", s->roof, s->what);
    }
    g_string_append_printf(method, "; dram over %" G_GUINT64_FORMAT " MiB, l2 over %"
                                   G_GUINT64_FORMAT " KiB; fastest of %d runs of ~%.0f ms",
                           dram_bytes >> 20, l2_bytes >> 10, ROUNDS, TARGET_NS / 1e6);
    ts_prof_ceilings_set_method(out, method->str);
  }
  for (int i = 0; i < 3; i++)
    if (bufs[i] != NULL)
      ts_backend_buffer_free(be, bufs[i]);
  g_free(benches);
  return out;
}
