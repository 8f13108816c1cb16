/* ts-prof-ceiling-cpu.c — the CPU ceilings, measured through the same backend that runs kernels
 * (the system compiler, OpenMP), so the peaks and the kernels share flags and threads. Each roof
 * is measured on one thread (per_core) and on one thread per core (value).
 *
 * FMA: 12 independent vector accumulators per thread. Zen and Intel cores issue two FMAs a cycle
 * with a 4-5 cycle latency, so at least 8-10 chains are needed to keep both pipes busy, and 12
 * accumulators plus the two constants still fit AVX2's 16 registers. f64 runs the same vectors
 * with half the lanes.
 * Cache reads: integer adds of vector loads into 8 accumulators. An integer add has a one-cycle
 * latency on every core, so 8 chains outrun the two or three loads a cycle a core can issue and
 * the loop is bound by the loads, not by the adds (float adds, 3-4 cycles, would not be).
 * DRAM: STREAM's triad a = b + s*c over arrays beyond the L3, counted STREAM's way (3 words per
 * element; the write-allocate read is not counted); per_core is one thread's triad. */
#include "ts-prof-private.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* A launch this long makes the clock's resolution and the OpenMP fork negligible, and keeps
 * the whole set of ~12 microbenchmarks x (calibration + rounds) within a few seconds. */
#define TARGET_NS 20e6
#define ROUNDS 5
#define FMA_CHAINS 12
#define READ_ACCS 8

static const char FMA_SRC[] =
  "#include <stdint.h>\n"
  "typedef T tsv __attribute__((vector_size(VB)));\n"
  "__attribute__((visibility(\"default\"))) void ENTRY(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "#define STEP(k) a##k = a##k * m + c;\n"
  "void ENTRY(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  (void)f;\n"
  "#pragma omp parallel num_threads((int)n[1])\n"
  "  {\n"
  "    tsv a0 = (tsv){0} + (T)1, a1 = a0 + (T)1, a2 = a0 + (T)2, a3 = a0 + (T)3, a4 = a0 + (T)4,\n"
  "        a5 = a0 + (T)5, a6 = a0 + (T)6, a7 = a0 + (T)7, a8 = a0 + (T)8, a9 = a0 + (T)9,\n"
  "        a10 = a0 + (T)10, a11 = a0 + (T)11;\n"
  /* Converges on c / (1 - m) = 0.1: no overflow, no denormals, whatever the count. */
  "    const tsv m = (tsv){0} + (T)0.999999, c = (tsv){0} + (T)1e-7;\n"
  "    for (int64_t i = 0; i < n[0]; i++) {\n"
  "      STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5)\n"
  "      STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11)\n"
  "    }\n"
  "    tsv s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;\n"
  "    T t = 0;\n"
  "    for (unsigned k = 0; k < VB / sizeof(T); k++)\n"
  "      t += s[k];\n"
  "    if (t == (T)12345)\n" /* never true, but the compiler cannot know: the chains stay */
  "      ((T *)b[0])[0] = t;\n"
  "  }\n"
  "}\n";

/* AMX (bf16_amx, where the host has AMX-BF16): four tdpbf16ps a repeat on a 2x2 block of
 * 16x16 f32 tiles from two A and two B tiles — 32768 multiply-adds with no tile loads, as the
 * gemm micro-kernel's 32x32 does between them. Each thread asks Linux for the tile state,
 * configures its tiles and releases them. */
static const char AMX_SRC[] =
  "#include <immintrin.h>\n"
  "#include <stdint.h>\n"
  "#include <string.h>\n"
  "#include <sys/syscall.h>\n"
  "#include <unistd.h>\n"
  "__attribute__((visibility(\"default\"))) void ts_peak_amx(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "void ts_peak_amx(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  (void)b; (void)f;\n"
  "  syscall(SYS_arch_prctl, 0x1023, 18);\n"
  "#pragma omp parallel num_threads((int)n[1])\n"
  "  {\n"
  "    struct { uint8_t palette, start, pad[14]; uint16_t colsb[16]; uint8_t rows[16]; } cfg;\n"
  "    memset(&cfg, 0, sizeof cfg);\n"
  "    cfg.palette = 1;\n"
  "    for (int t = 0; t < 8; t++) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }\n"
  "    _tile_loadconfig(&cfg);\n"
  "    _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);\n"
  "    _tile_zero(4); _tile_zero(5); _tile_zero(6); _tile_zero(7);\n"
  "    for (int64_t i = 0; i < n[0]; i++) {\n"
  "      _tile_dpbf16ps(0, 4, 6); _tile_dpbf16ps(1, 4, 7);\n"
  "      _tile_dpbf16ps(2, 5, 6); _tile_dpbf16ps(3, 5, 7);\n"
  "    }\n"
  "    _tile_release();\n"
  "  }\n"
  "}\n";

/* bf16 dot products (bf16_dot, where the host has AVX512_BF16): FMA_CHAINS independent
 * vdpbf16ps on 16-float accumulators, each adding 32 bf16 products: what gemm's dot("bf16")
 * micro-kernel issues between its loads. */
static const char BF16DOT_SRC[] =
  "#include <immintrin.h>\n"
  "#include <stdint.h>\n"
  "__attribute__((visibility(\"default\"))) void ts_peak_bf16dot(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "#define STEP(k) a##k = _mm512_dpbf16_ps(a##k, x, y);\n"
  "void ts_peak_bf16dot(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  (void)f;\n"
  "#pragma omp parallel num_threads((int)n[1])\n"
  "  {\n"
  /* Small products (1e-3 squared): the sums stay finite and normal whatever the count. */
  "    const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));\n"
  "    const __m512bh y = x;\n"
  /* Distinct starts: equal chains would be merged into one by the compiler. */
  "    __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2),\n"
  "           a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),\n"
  "           a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8),\n"
  "           a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);\n"
  "    for (int64_t i = 0; i < n[0]; i++) {\n"
  "      STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5)\n"
  "      STEP(6) STEP(7) STEP(8) STEP(9) STEP(10) STEP(11)\n"
  /* An opaque accumulator a repeat: the compiler may not fold repeats into multiplications. */
  "      __asm__ volatile(\"\" : \"+v\"(a0));\n"
  "    }\n"
  "    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),\n"
  "               _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));\n"
  "    s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));\n"
  "    if (_mm512_reduce_add_ps(s) == 12345.0f)\n"
  "      ((float *)b[0])[0] = 1;\n"
  "  }\n"
  "}\n";

/* The kernels' own vector exp (ts_cpu_prims.h, at the widest vector): EXP_CHAINS independent
 * chains a = exp(-a), which converge on 0.567 (no overflow, no denormals, whatever the count).
 * An exp is dozens of instructions with a long dependency chain: 8 chains keep the pipes busy
 * (4, 8 and 12 measured alike on Zen 1), and its temporaries still fit 16 registers. */
#define EXP_CHAINS 8
/* ints: repeats, threads, 0 for ts_vf_exp or 1 for ts_vf_exp_fast; b[0] a sink. One module for
 * both, its header first (so the backend's precompiled ts_cpu_prims.h serves it): one compile. */
static const char EXP_SRC[] =
  "#include \"ts_cpu_prims.h\"\n"
  "__attribute__((visibility(\"default\"))) void ENTRY(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "#define STEP(k, F) a##k = F(z - a##k);\n"
  "#define CHAINS(F)                                                          \\\n"
  "  for (int64_t i = 0; i < n[0]; i++) {                                     \\\n"
  "    STEP(0, F) STEP(1, F) STEP(2, F) STEP(3, F)                             \\\n"
  "    STEP(4, F) STEP(5, F) STEP(6, F) STEP(7, F)                             \\\n"
  "  }\n"
  "void ENTRY(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  (void)f;\n"
  "#pragma omp parallel num_threads((int)n[1])\n"
  "  {\n"
  "    const ts_vf z = ts_vf_splat(0.0f);\n"
  "    ts_vf a0 = z + 0.1f, a1 = z + 0.2f, a2 = z + 0.3f, a3 = z + 0.4f, a4 = z + 0.5f,\n"
  "          a5 = z + 0.6f, a6 = z + 0.7f, a7 = z + 0.8f;\n"
  "    if (n[2])\n"
  "      CHAINS(ts_vf_exp_fast)\n"
  "    else\n"
  "      CHAINS(ts_vf_exp)\n"
  "    ts_vf s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;\n"
  "    float t = 0;\n"
  "    for (int k = 0; k < TS_VEC; k++)\n"
  "      t += s[k];\n"
  "    if (t == 12345.0f)\n"
  "      ((float *)b[0])[0] = t;\n"
  "  }\n"
  "}\n";

/* ints: repeats, threads, vectors per thread (a multiple of 8); b[0] the data (one slice per
 * thread), b[1] a sink. */
static const char READ_SRC[] =
  "#include <stdint.h>\n"
  "typedef uint32_t tsv __attribute__((vector_size(VB)));\n"
  "__attribute__((visibility(\"default\"))) void ts_peak_read(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "void ts_peak_read(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  (void)f;\n"
  "  const int64_t per = n[2];\n"
  "#pragma omp parallel for num_threads((int)n[1]) schedule(static, 1)\n"
  "  for (int64_t t = 0; t < n[1]; t++) {\n"
  "    tsv a0 = {0}, a1 = {0}, a2 = {0}, a3 = {0}, a4 = {0}, a5 = {0}, a6 = {0}, a7 = {0};\n"
  "    for (int64_t r = 0; r < n[0]; r++) {\n"
  "      const tsv *q = (const tsv *)b[0] + t * per;\n"
  /* An opaque pointer per pass: the compiler may not fold passes over the same data into one. */
  "      __asm__ volatile(\"\" : \"+r\"(q));\n"
  "      for (int64_t i = 0; i < per; i += 8) {\n"
  "        a0 += q[i]; a1 += q[i + 1]; a2 += q[i + 2]; a3 += q[i + 3];\n"
  "        a4 += q[i + 4]; a5 += q[i + 5]; a6 += q[i + 6]; a7 += q[i + 7];\n"
  "      }\n"
  "    }\n"
  "    tsv s = a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7;\n"
  "    uint32_t x = 0;\n"
  "    for (unsigned k = 0; k < VB / 4; k++)\n"
  "      x |= s[k];\n"
  "    if (x == 0x9e3779b9u)\n"
  "      ((uint32_t *)b[1])[0] = x;\n"
  "  }\n"
  "}\n";

/* ints: repeats, threads, elements; b[0] = b[1] + 3 * b[2]. */
static const char TRIAD_SRC[] =
  "#include <stdint.h>\n"
  "__attribute__((visibility(\"default\"))) void ts_peak_triad(void *const *b, const int64_t *n,"
  " const double *f);\n"
  "void ts_peak_triad(void *const *b, const int64_t *n, const double *f)\n"
  "{\n"
  "  float *restrict a = b[0];\n"
  "  const float *restrict x = b[1], *restrict y = b[2];\n"
  "  const float s = 3.0f;\n"
  "  (void)f;\n"
  "#pragma omp parallel num_threads((int)n[1])\n"
  "  for (int64_t r = 0; r < n[0]; r++) {\n"
  /* The same static split every pass: each thread streams the pages it touched before. */
  "#pragma omp for schedule(static)\n"
  "    for (int64_t i = 0; i < n[2]; i++)\n"
  "      a[i] = x[i] + s * y[i];\n"
  "  }\n"
  "}\n";

typedef struct {
  TsBackend *be;
  const TsDeviceInfo *d;
  guint cores;
  guint vbytes;       /* bytes of one vector */
  GPtrArray *modules; /* TsModule, owned */
  GPtrArray *buffers; /* TsBuffer, owned */
  GArray *benches;    /* TsProfBench */
  TsBuffer *sink;
  guint64 triad_bytes; /* per array */
} Cpu;

static void
cpu_clear(Cpu *c)
{
  for (guint i = 0; i < c->buffers->len; i++)
    ts_backend_buffer_free(c->be, c->buffers->pdata[i]);
  g_ptr_array_unref(c->buffers);
  g_ptr_array_unref(c->modules);
  g_array_unref(c->benches);
}

static TsModule *
compile(Cpu *c, const char *text, const char *entry, GError **error)
{
  TsSource s = {.lang = TS_LANG_C, .text = text, .entry = entry};
  TsModule *m = ts_backend_compile(c->be, &s, error);
  if (m != NULL)
    g_ptr_array_add(c->modules, m);
  return m;
}

/* A buffer of zeros, written so that every page is really mapped: untouched pages all map the
 * one zero page, and reading them would hit in cache whatever their size. */
static TsBuffer *
zeroed(Cpu *c, gsize bytes, GError **error)
{
  TsBuffer *b = ts_backend_alloc(c->be, bytes, error);
  if (b == NULL)
    return NULL;
  g_ptr_array_add(c->buffers, b);
  g_autofree void *zeros = g_malloc0(bytes);
  return ts_backend_upload(c->be, b, zeros, bytes, error) ? b : NULL;
}

static void
add_bench(Cpu *c, const char *roof, guint threads, TsModule *m, TsBuffer *const *bufs,
          guint n_bufs, gint64 reps, gint64 size, double work)
{
  TsProfBench b = {.roof = roof, .one_core = threads == 1, .module = m, .work = work};
  memcpy(b.bufs, bufs, n_bufs * sizeof(TsBuffer *));
  b.launch.n_buffers = n_bufs;
  b.ints[0] = reps;
  b.ints[1] = threads;
  b.ints[2] = size;
  b.launch.n_ints = 3;
  g_array_append_val(c->benches, b);
}

static gboolean
add_fma(Cpu *c, const char *roof, const char *type, gsize type_bytes, guint vbytes,
        GError **error)
{
  g_autofree char *entry = g_strdup_printf("ts_peak_fma_%s", roof);
  g_autofree char *src = g_strdup_printf("#define T %s\n#define VB %u\n#define ENTRY %s\n%s",
                                         type, vbytes, entry, FMA_SRC);
  TsModule *m = compile(c, src, entry, error);
  if (m == NULL)
    return FALSE;
  double per_thread = 2.0 * FMA_CHAINS * (double)(vbytes / type_bytes);
  add_bench(c, roof, 1, m, &c->sink, 1, 1000, 0, per_thread);
  add_bench(c, roof, c->cores, m, &c->sink, 1, 1000, 0, per_thread * c->cores);
  return TRUE;
}

/* The rates of ts_cpu_prims.h's vector exps ("exp": ts_vf_exp, "exp_fast": ts_vf_exp_fast),
 * in exps a second, lane by lane, at the widest vector and at each narrower one ("exp_x4",
 * "exp_fast_x4"...). A row kernel at vector(4) runs them as such: on Zen 1, which splits its
 * 256-bit operations in two, the FMAs are as fast at 4 lanes (f32x4), the exps, with their
 * conversions, shifts and blends, 6% slower, and softmax's row kernels 12-44% slower. */
static gboolean
add_exps(Cpu *c, guint vbytes, GError **error)
{
  const gboolean widest = vbytes == c->vbytes;
  g_autofree char *entry = g_strdup_printf("ts_peak_exp_x%u", vbytes / 4);
  g_autofree char *src = g_strdup_printf("#define TS_VEC %u\n#define ENTRY %s\n%s", vbytes / 4,
                                         entry, EXP_SRC);
  TsModule *m = compile(c, src, entry, error);
  if (m == NULL)
    return FALSE;
  double per_thread = (double)EXP_CHAINS * (vbytes / 4);
  static const char *const names[] = {"exp", "exp_fast"};
  for (gint64 fast = 0; fast < 2; fast++) {
    g_autofree char *narrow = g_strdup_printf("%s_x%u", names[fast], vbytes / 4);
    const char *roof = widest ? names[fast] : g_intern_string(narrow);
    add_bench(c, roof, 1, m, &c->sink, 1, 1000, fast, per_thread);
    add_bench(c, roof, c->cores, m, &c->sink, 1, 1000, fast, per_thread * c->cores);
  }
  return TRUE;
}

static guint64
round_down(guint64 bytes, guint64 unit)
{
  return MAX(bytes / unit, 1) * unit;
}

/* Read bandwidth of one cache level: one thread over half of it (per_core); on all cores, a
 * quarter of a private level per thread, so that two SMT siblings sharing it still fit in it,
 * or a shared level split between the threads. */
static gboolean
add_read(Cpu *c, TsModule *m, const char *roof, guint64 level, gboolean shared, GError **error)
{
  const guint64 unit = (guint64)c->vbytes * READ_ACCS;
  guint64 one = round_down(level / 2, unit);
  guint64 each = shared ? level / 2 / c->cores : level / 4;
  /* A slice of a shared level must still miss the private L2: on a many-core part the share of
   * L3 per thread can be smaller than the L2. */
  if (shared)
    each = MAX(each, 2 * c->d->l2_bytes);
  each = round_down(each, unit);
  TsBuffer *data = zeroed(c, MAX(one, each * c->cores), error);
  if (data == NULL)
    return FALSE;
  TsBuffer *bufs[2] = {data, c->sink};
  add_bench(c, roof, 1, m, bufs, 2, 1, (gint64)(one / c->vbytes), (double)one);
  add_bench(c, roof, c->cores, m, bufs, 2, 1, (gint64)(each / c->vbytes),
            (double)(each * c->cores));
  return TRUE;
}

/* Each array twice the last-level cache (at least three times it in flight: no pass finds the
 * previous one's data), from 32 MiB to 256 MiB, and together at most a sixteenth of the RAM. */
static gboolean
add_triad(Cpu *c, GError **error)
{
  TsModule *m = compile(c, TRIAD_SRC, "ts_peak_triad", error);
  if (m == NULL)
    return FALSE;
  guint64 llc = c->d->l3_bytes > 0 ? c->d->l3_bytes : c->d->l2_bytes * c->cores;
  guint64 bytes = CLAMP(2 * llc, (guint64)32 << 20, (guint64)256 << 20);
  if (c->d->memory_bytes > 0)
    bytes = MIN(bytes, c->d->memory_bytes / 48);
  bytes = round_down(bytes, 4096);
  c->triad_bytes = bytes;
  TsBuffer *bufs[3];
  for (int i = 0; i < 3; i++)
    if ((bufs[i] = zeroed(c, bytes, error)) == NULL)
      return FALSE;
  gint64 n = (gint64)(bytes / sizeof(float));
  add_bench(c, "dram", 1, m, bufs, 3, 1, n, 3.0 * (double)bytes);
  add_bench(c, "dram", c->cores, m, bufs, 3, 1, n, 3.0 * (double)bytes);
  return TRUE;
}

/* A compute roof of an engine only some CPUs have (`feature` in the arch string): none is
 * guessed where it is missing. `per_thread`: the work of one repeat of the loop. */
static gboolean
add_engine(Cpu *c, const char *feature, const char *roof, const char *src, const char *entry,
           double per_thread, GError **error)
{
  if (c->d->arch == NULL || strstr(c->d->arch, feature) == NULL)
    return TRUE;
  TsModule *m = compile(c, src, entry, error);
  if (m == NULL)
    return FALSE;
  add_bench(c, roof, 1, m, &c->sink, 1, 1000, 0, per_thread);
  add_bench(c, roof, c->cores, m, &c->sink, 1, 1000, 0, per_thread * c->cores);
  return TRUE;
}

static gboolean
build(Cpu *c, GError **error)
{
  if (!add_fma(c, "f32", "float", sizeof(float), c->vbytes, error) ||
      !add_fma(c, "f64", "double", sizeof(double), c->vbytes, error) ||
      /* 32 bf16 products a vdpbf16ps, each a multiply and an add */
      !add_engine(c, "+avx512bf16", "bf16_dot", BF16DOT_SRC, "ts_peak_bf16dot",
                  2.0 * FMA_CHAINS * 32, error) ||
      !add_engine(c, "+amxbf16", "bf16_amx", AMX_SRC, "ts_peak_amx", 4.0 * 16 * 16 * 32 * 2,
                  error))
    return FALSE;
  /* f32 on each narrower vector (f32x4, f32x8): a core that runs its widest vectors as two
   * halves (Zen 1's 256-bit, Zen 4's 512-bit) multiplies as fast on the narrower ones, which
   * the lanes alone do not say. */
  for (guint vb = 16; vb < c->vbytes; vb *= 2) {
    g_autofree char *roof = g_strdup_printf("f32x%u", vb / 4);
    if (!add_fma(c, g_intern_string(roof), "float", sizeof(float), vb, error))
      return FALSE;
  }
  for (guint vb = 16; vb <= c->vbytes; vb *= 2)
    if (!add_exps(c, vb, error))
      return FALSE;
  g_autofree char *src = g_strdup_printf("#define VB %u\n%s", c->vbytes, READ_SRC);
  const struct {
    const char *roof;
    guint64 bytes;
    gboolean shared;
  } levels[] = {{"l1", c->d->l1_bytes, FALSE},
                {"l2", c->d->l2_bytes, FALSE},
                {"l3", c->d->l3_bytes, TRUE}};
  TsModule *read = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(levels); i++) {
    if (levels[i].bytes == 0)
      continue; /* a level the host does not report is not guessed */
    if (read == NULL && (read = compile(c, src, "ts_peak_read", error)) == NULL)
      return FALSE;
    if (!add_read(c, read, levels[i].roof, levels[i].bytes, levels[i].shared, error))
      return FALSE;
  }
  return add_triad(c, error);
}

static TsProfCpuFigure *
find_figure(TsProfCpuFigure *f, guint n, const char *roof)
{
  for (guint i = 0; i < n; i++)
    if (f[i].keep && strcmp(f[i].roof, roof) == 0)
      return &f[i];
  return NULL;
}

static void
drop(TsProfCpuFigure *f, GString *notes, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void
drop(TsProfCpuFigure *f, GString *notes, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *why = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_string_append_printf(notes, "%s%s", notes->len ? "; " : "", why);
  f->keep = FALSE;
}

void
ts__prof_cpu_screen(TsProfCpuFigure *f, guint n, GString *notes)
{
  for (guint i = 0; i < n; i++)
    if (f[i].keep && !(isfinite(f[i].value) && isfinite(f[i].per_core) && f[i].value > 0 &&
                       f[i].per_core > 0))
      drop(&f[i], notes, "%s not stored: no positive finite rate", f[i].roof);
  TsProfCpuFigure *f32 = find_figure(f, n, "f32"), *f64 = find_figure(f, n, "f64");
  if (f32 && f64 && (f64->value > 0.75 * f32->value || f64->per_core > 0.75 * f32->per_core))
    drop(f64, notes, "f64 not stored: %.1f GFLOP/s (%.1f on one core) above 3/4 of f32's %.1f "
         "(%.1f)", f64->value, f64->per_core, f32->value, f32->per_core);
  /* A narrower vector may multiply as fast as the widest, not faster (10% for noise). */
  for (guint i = 0; f32 && i < n; i++)
    if (f[i].keep && g_str_has_prefix(f[i].roof, "f32x") &&
        (f[i].value > 1.1 * f32->value || f[i].per_core > 1.1 * f32->per_core))
      drop(&f[i], notes, "%s not stored: %.1f GFLOP/s (%.1f on one core) above f32's %.1f "
           "(%.1f)", f[i].roof, f[i].value, f[i].per_core, f32->value, f32->per_core);
  /* Nor an exp on a narrower vector faster than on the widest. */
  for (guint i = 0; i < n; i++) {
    const char *x = f[i].keep && g_str_has_prefix(f[i].roof, "exp") ? strstr(f[i].roof, "_x")
                                                                      : NULL;
    if (x == NULL)
      continue;
    g_autofree char *wide_name = g_strndup(f[i].roof, (gsize)(x - f[i].roof));
    const TsProfCpuFigure *wide = find_figure(f, n, wide_name);
    if (wide && (f[i].value > 1.1 * wide->value || f[i].per_core > 1.1 * wide->per_core))
      drop(&f[i], notes, "%s not stored: %.2f G/s (%.2f on one core) above %s's %.2f (%.2f)",
           f[i].roof, f[i].value, f[i].per_core, wide->roof, wide->value, wide->per_core);
  }
  /* An exp takes a dozen FMA slots or more (a range reduction, a polynomial, a scaling): one
   * faster than a quarter of the FMA rate in FLOPs was not computed. */
  for (guint i = 0; f32 && i < n; i++)
    if (f[i].keep && g_str_has_prefix(f[i].roof, "exp") &&
        (f[i].value > f32->value / 4 || f[i].per_core > f32->per_core / 4))
      drop(&f[i], notes, "%s not stored: %.2f G/s (%.2f on one core) above a quarter of f32's "
           "%.1f GFLOP/s (%.1f)", f[i].roof, f[i].value, f[i].per_core, f32->value,
           f32->per_core);
  /* From DRAM inwards: each level must be at least about as fast as every level beyond it. */
  static const char *const chain[] = {"dram", "l3", "l2", "l1"};
  const TsProfCpuFigure *outer = NULL;
  for (gsize c = 0; c < G_N_ELEMENTS(chain); c++) {
    TsProfCpuFigure *level = find_figure(f, n, chain[c]);
    if (level == NULL)
      continue;
    if (outer && (level->value * 1.1 < outer->value || level->per_core * 1.1 < outer->per_core)) {
      drop(level, notes, "%s not stored: %.1f GB/s (%.1f on one core) below %s's %.1f (%.1f)",
           level->roof, level->value, level->per_core, outer->roof, outer->value,
           outer->per_core);
      continue;
    }
    outer = level;
  }
}

static TsProfCeilingKind
roof_kind(const char *roof)
{
  if (g_str_has_prefix(roof, "exp"))
    return TS_PROF_RATE;
  if (g_str_has_prefix(roof, "f32") || strcmp(roof, "f64") == 0 ||
      g_str_has_prefix(roof, "bf16_"))
    return TS_PROF_COMPUTE;
  return TS_PROF_MEMORY;
}

TsProfCeilings *
ts__prof_measure_cpu(TsBackend *be, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(be);
  Cpu c = {
    .be = be,
    .d = d,
    .cores = MAX(d->compute_units, 1),
    /* The widest register; 16 bytes where the ISA is unknown (every SIMD ISA has those). */
    .vbytes = d->vector_bits >= 128 ? d->vector_bits / 8 : 16,
    .modules = g_ptr_array_new_with_free_func((GDestroyNotify)ts_module_free),
    .buffers = g_ptr_array_new(),
    .benches = g_array_new(FALSE, TRUE, sizeof(TsProfBench)),
  };
  gboolean ok = (c.sink = zeroed(&c, 64, error)) != NULL && build(&c, error);
  TsProfBench *b = (TsProfBench *)(void *)c.benches->data;
  for (guint i = 0; ok && i < c.benches->len; i++)
    ok = ts__prof_calibrate(be, &b[i], TARGET_NS, error);
  ok = ok && ts__prof_run_benches(be, b, c.benches->len, ROUNDS, error);
  TsProfCeilings *out = NULL;
  if (ok) {
    g_autofree char *toolchain = ts_prof_toolchain_of(d);
    out = ts_prof_ceilings_new(d->backend, toolchain);
    /* Benches come in pairs, one core then all cores. */
    guint nf = c.benches->len / 2;
    g_autofree TsProfCpuFigure *fig = g_new0(TsProfCpuFigure, nf);
    for (guint i = 0; i < nf; i++)
      fig[i] = (TsProfCpuFigure){.roof = b[2 * i].roof,
                                 .value = ts__prof_bench_rate(&b[2 * i + 1]),
                                 .per_core = ts__prof_bench_rate(&b[2 * i]),
                                 .keep = TRUE};
    g_autoptr(GString) notes = g_string_new(NULL);
    ts__prof_cpu_screen(fig, nf, notes);
    for (guint i = 0; i < nf; i++)
      if (fig[i].keep)
        ts_prof_ceilings_set(out, fig[i].roof, roof_kind(fig[i].roof), fig[i].value,
                             fig[i].per_core);
    g_autofree char *method = g_strdup_printf(
      "FMA: %d chains of %u-byte vectors per thread (f32 also of each narrower one, from 16 "
      "bytes: f32x4 ...)%s; exp: %d chains of ts_cpu_prims.h's %u-float exp and exp_fast (and "
      "of each narrower vector: exp_x4 ...); "
      "cache reads: %d accumulators of %u-byte "
      "loads over half of each level (a quarter of a private one per thread on all cores); "
      "DRAM: STREAM triad over 3 x %" G_GUINT64_FORMAT " MiB; fastest of %d interleaved runs of "
      "~%.0f ms",
      FMA_CHAINS, c.vbytes,
      strstr(d->arch ? d->arch : "", "+amxbf16")      ? "; AMX: 4 tdpbf16ps a repeat on 8 tiles"
      : strstr(d->arch ? d->arch : "", "+avx512bf16") ? "; bf16: 12 chains of vdpbf16ps"
                                                      : "",
      EXP_CHAINS, c.vbytes / 4, READ_ACCS, c.vbytes,
      c.triad_bytes >> 20, ROUNDS, TARGET_NS / 1e6);
    if (notes->len > 0) {
      g_autofree char *m = g_strconcat(method, "; IMPOSSIBLE, so left out: ", notes->str, NULL);
      ts_prof_ceilings_set_method(out, m);
    } else {
      ts_prof_ceilings_set_method(out, method);
    }
  }
  cpu_clear(&c);
  return out;
}
