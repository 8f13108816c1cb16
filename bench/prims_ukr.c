/* prims_ukr.c — benchmark (not a test) of the f32 GEMM micro-kernels alone: every MR x NR tile
 * at every vector width the gemm space offers on this machine, timed in L1 (packed panels of kc
 * steps, the C tile accumulated in place) against the core's FMA peak measured in the same run,
 * beside the analytic cost model's compute efficiency for the same tile (costmodel/, the
 * micro-kernel's port balance, latency cover, spills and vector share).
 *
 * The kernels are compiled at run time exactly as the runtime compiles generated code ($CC or
 * cc, -O3 -march=native -fPIC -shared -std=gnu17 -ffp-contract=fast, ts_cpu_prims.h from the
 * source tree) and dlopen'ed. Rounds alternate the kernels and the peak loop; each keeps its
 * fastest round, timed on the thread's CPU clock so that time the VM's host takes away from the
 * core is not counted.
 *
 * Where the runtime assembles a micro-kernel instead (runtime/cpu/ts-cpu-asm.c: GCC, AVX with
 * FMA, AVX-512F for 16 lanes), the tile is timed twice in the same rounds, compiled from C and
 * assembled, and the ratio printed.
 *
 *   prims-ukr                        every tile of the space, kc 128, 200 rounds
 *   prims-ukr --shapes 4x16/8,6x16/8 --kc 256
 */
#include "config.h"

#include "runtime/cpu/ts-cpu-asm.h"
#include "ts-backend.h"
#include "ts-cost.h"
#include "ts-op.h"

#include <dlfcn.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef void (*Ukr)(int64_t kc, const float *restrict Ap, const float *restrict Bp,
                    float *restrict C, int64_t ldc, int accumulate, int64_t mr, int64_t nr);
typedef float (*Peak)(int64_t iters);

typedef struct {
  int mr, nr, v;
  Ukr fn, asm_fn; /* asm_fn: the assembled one, where there is one */
  double best_s, asm_best_s, model;
} Tile;

static int
tile_cmp(gconstpointer a, gconstpointer b)
{
  const Tile *x = a, *y = b;
  return x->v != y->v ? x->v - y->v : x->mr != y->mr ? x->mr - y->mr : x->nr - y->nr;
}

/* The f32 FMA tiles (MR, NR, V) of the gemm space's valid points on this device: the op's own
 * space and constraints (vector <= simd_floats, the accumulators within vector_registers). */
static GArray *
space_tiles(const TsOpInstance *inst, const TsDeviceInfo *device, GError **error)
{
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cpu", NULL, error);
  if (space == NULL)
    return NULL;
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, device);
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GArray) tiles = g_array_new(FALSE, TRUE, sizeof(Tile));
  TsSchedPoint *p = NULL;
  while (ts_sched_iter_next(it, &p, error)) {
    g_autoptr(TsSchedPoint) point = p;
    if (g_strcmp0(ts_sched_point_get_str(point, "dot", "fma"), "fma") != 0)
      continue;
    Tile t = {.mr = (int)ts_sched_point_get_int(point, "MR", 0),
              .nr = (int)ts_sched_point_get_int(point, "NR", 0),
              .v = (int)ts_sched_point_get_int(point, "vector", 0)};
    if (g_hash_table_add(seen, g_strdup_printf("%d %d %d", t.mr, t.nr, t.v)))
      g_array_append_val(tiles, t);
  }
  if (error && *error)
    return NULL;
  g_array_sort(tiles, tile_cmp);
  return g_steal_pointer(&tiles);
}

static GArray *
parse_tiles(const char *text, int widest, GError **error)
{
  GArray *tiles = g_array_new(FALSE, TRUE, sizeof(Tile));
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (guint i = 0; parts[i]; i++) {
    Tile t = {0};
    char tail = 0;
    if (sscanf(parts[i], "%dx%d/%d%c", &t.mr, &t.nr, &t.v, &tail) != 3 || t.mr <= 0 ||
        t.nr <= 0 || (t.v != 4 && t.v != 8 && t.v != 16) || t.nr % t.v != 0 || t.v > widest) {
      g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                  "--shapes: '%s' is not MRxNR/V with V 4, 8 or 16 (at most %d here) dividing NR",
                  parts[i], widest);
      g_array_unref(tiles);
      return NULL;
    }
    g_array_append_val(tiles, t);
  }
  return tiles;
}

/* One source: each tile's micro-kernel, and the FMA peak, twelve independent chains of the
 * widest vector (enough to cover the FMA's latency on any current x86 core). */
static char *
kernels_source(GArray *tiles, int widest, GString *as)
{
  GString *s = g_string_new("#define TS_UKR_LINKAGE\n#include \"ts_cpu_prims.h\"\n");
  for (guint i = 0; i < tiles->len; i++) {
    Tile *t = &g_array_index(tiles, Tile, i);
    g_string_append_printf(s, "TS_DEFINE_UKR_F32(bench_ukr_%u, %d, %d, %d, 8);\n", i, t->mr,
                           t->nr, t->v);
    /* The assembled twin is hidden as the runtime's are: called through an exported C
     * function (a tail jump). */
    g_autofree char *name = g_strdup_printf("bench_asm_%u_", i);
    g_autofree char *text = ts__cpu_asm_ukr_f32(name, t->mr, t->nr, t->v, 8);
    if (text == NULL)
      continue;
    g_string_append(as, text);
    g_string_append_printf(s,
                           "TS_DECLARE_UKR_F32_SLOT(%s);\n"
                           "void bench_asm_%u TS_UKR_F32_PARAMS_ {\n"
                           "  %s(kc, Ap, Bp, C, ldc, accumulate, mr, nr);\n}\n",
                           name, i, name);
  }
  g_string_append_printf(s,
    "typedef float pv_ __attribute__((vector_size(%d)));\n"
    "float bench_peak(int64_t iters);\n"
    "float bench_peak(int64_t iters) {\n"
    "  pv_ a[12], b = -(pv_){0} + 1.0000001f, c = -(pv_){0} + 1e-7f;\n"
    "  for (int j = 0; j < 12; j++) a[j] = -(pv_){0} + (float)j;\n"
    "  for (int64_t i = 0; i < iters; i++)\n"
    "    _Pragma(\"GCC unroll 12\") for (int j = 0; j < 12; j++) a[j] = a[j] * b + c;\n"
    "  float s = 0;\n"
    "  for (int j = 0; j < 12; j++) for (int l = 0; l < %d; l++) s += a[j][l];\n"
    "  return s;\n"
    "}\n", widest * 4, widest);
  return g_string_free(s, FALSE);
}

static void *
compile(const char *dir, const char *source, const char *as, GError **error)
{
  g_autofree char *src = g_build_filename(dir, "ukr.c", NULL);
  g_autofree char *asm_src = g_build_filename(dir, "ukr-asm.s", NULL);
  g_autofree char *so = g_build_filename(dir, "ukr.so", NULL);
  if (!g_file_set_contents(src, source, -1, error) ||
      !g_file_set_contents(asm_src, as, -1, error))
    return NULL;
  const char *cc = g_getenv("CC") ? g_getenv("CC") : "cc";
  const char *argv[] = {cc, "-O3", "-march=native", "-fPIC", "-shared", "-std=gnu17",
                        "-ffp-contract=fast", "-I" TS_SOURCE_DIR "/runtime/cpu", src, asm_src, "-o",
                        so, NULL};
  int status = 0;
  g_autofree char *err = NULL;
  gboolean built = g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL,
                                &err, &status, error);
  g_unlink(src);
  g_unlink(asm_src);
  if (built && !g_spawn_check_wait_status(status, error)) {
    g_prefix_error(error, "%s: %s\n", cc, err ? err : "");
    built = FALSE;
  }
  void *h = built ? dlopen(so, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (built && h == NULL)
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "dlopen %s: %s", so, dlerror());
  g_unlink(so);
  return h;
}

static double
thread_s(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The cost model's compute efficiency of the tile: the gemm point on one thread of this CPU,
 * nominal figures (no ceilings measured). */
static double
model_efficiency(const TsOpInstance *inst, const TsDeviceInfo *device, const Tile *t)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsCostTarget) target = ts_cost_target_new(inst, "cpu", device, NULL);
  g_autofree char *text = g_strdup_printf("block(m=%d,n=%d,k=256).micro(m=%d,n=%d).vector(%d)"
                                          ".unroll(8).threads(1)",
                                          t->mr * 12, t->nr * 8, t->mr, t->nr, t->v);
  g_autoptr(TsSchedPoint) p = ts_sched_point_parse(text, &error);
  TsCostEstimate est;
  if (p == NULL || !ts_cost_analytic(target, p, NULL, &est, &error))
    return NAN;
  return est.compute_efficiency;
}

int
main(int argc, char **argv)
{
  int kc = 128, rounds = 200;
  g_autofree char *shapes = NULL;
  GOptionEntry entries[] = {
    {"shapes", 0, 0, G_OPTION_ARG_STRING, &shapes, "Tiles MRxNR/V, e.g. 4x16/8,6x16/8 (default: the gemm space's)", "LIST"},
    {"kc", 0, 0, G_OPTION_ARG_INT, &kc, "k steps a call (default 128: the panels stay in L1)", "K"},
    {"rounds", 0, 0, G_OPTION_ARG_INT, &rounds, "Alternating rounds (default 200)", "R"},
    G_OPTION_ENTRY_NULL};
  g_autoptr(GOptionContext) ctx = g_option_context_new("- GEMM micro-kernels against the FMA peak");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || kc < 1 || kc > 4096 || rounds < 1) {
    g_printerr("prims-ukr: %s\n", error ? error->message : "--kc takes 1..4096, --rounds >= 1");
    return 2;
  }
  g_autoptr(TsBackend) backend = ts_backend_open("cpu", &error);
  g_autoptr(TsOpInstance) inst =
    backend ? ts_op_instance_new("gemm", "M=1024,N=1024,K=1024", "f32", &error) : NULL;
  if (inst == NULL) {
    g_printerr("prims-ukr: %s\n", error->message);
    return 1;
  }
  const TsDeviceInfo *device = ts_backend_describe(backend);
  int widest = MAX(device->vector_bits, 128) / 32;
  g_autoptr(GArray) tiles =
    shapes ? parse_tiles(shapes, widest, &error) : space_tiles(inst, device, &error);
  if (tiles == NULL) {
    g_printerr("prims-ukr: %s\n", error->message);
    return 2;
  }
  g_autofree char *dir = g_dir_make_tmp("prims-ukr-XXXXXX", &error);
  g_autoptr(GString) as = g_string_new(NULL);
  g_autofree char *source = dir ? kernels_source(tiles, widest, as) : NULL;
  void *h = dir ? compile(dir, source, as->str, &error) : NULL;
  if (dir)
    g_rmdir(dir);
  if (h == NULL) {
    g_printerr("prims-ukr: %s\n", error->message);
    return 1;
  }
  Peak peak = (Peak)dlsym(h, "bench_peak");
  for (guint i = 0; i < tiles->len; i++) {
    Tile *t = &g_array_index(tiles, Tile, i);
    g_autofree char *name = g_strdup_printf("bench_ukr_%u", i);
    t->fn = (Ukr)dlsym(h, name);
    g_autofree char *asm_name = g_strdup_printf("bench_asm_%u", i);
    t->asm_fn = (Ukr)dlsym(h, asm_name);
    t->best_s = t->asm_best_s = G_MAXDOUBLE;
    t->model = model_efficiency(inst, device, t);
  }
  /* Panels for the largest tile, 64-byte aligned, in L1 with the C tile. */
  float *ap = g_aligned_alloc0((size_t)16 * kc, sizeof(float), 64);
  float *bp = g_aligned_alloc0((size_t)48 * kc, sizeof(float), 64);
  float c[16 * 48];
  for (int i = 0; i < 16 * kc; i++)
    ap[i] = 1e-3f * (float)(i % 7);
  for (int i = 0; i < 48 * kc; i++)
    bp[i] = 1e-3f * (float)(i % 5);
  memset(c, 0, sizeof c);
  const int calls = 200;
  const int64_t peak_iters = 20000;
  double peak_best = G_MAXDOUBLE;
  volatile float sink = 0;
  for (int r = 0; r < rounds; r++) {
    double t0 = thread_s();
    sink += peak(peak_iters);
    peak_best = MIN(peak_best, thread_s() - t0);
    for (guint i = 0; i < tiles->len; i++) {
      Tile *t = &g_array_index(tiles, Tile, i);
      t0 = thread_s();
      for (int k = 0; k < calls; k++)
        t->fn(kc, ap, bp, c, t->nr, 1, t->mr, t->nr);
      t->best_s = MIN(t->best_s, thread_s() - t0);
      if (t->asm_fn == NULL)
        continue;
      t0 = thread_s();
      for (int k = 0; k < calls; k++)
        t->asm_fn(kc, ap, bp, c, t->nr, 1, t->mr, t->nr);
      t->asm_best_s = MIN(t->asm_best_s, thread_s() - t0);
    }
  }
  double peak_gf = 12.0 * widest * 2 * (double)peak_iters / peak_best / 1e9;
  printf("# prims-ukr: f32 GEMM micro-kernels in L1 (kc %d, %d calls a round, best of %d rounds, "
         "thread CPU time)\n", kc, calls, rounds);
  printf("# FMA peak of one core, %d-float vectors: %.1f GFLOP/s; compiler %s\n", widest,
         peak_gf, g_getenv("CC") ? g_getenv("CC") : "cc");
  printf("# model: the analytic cost model's compute efficiency for the tile (nominal figures)\n");
  printf("# asm: the same tile assembled as the runtime does (runtime/cpu/ts-cpu-asm.c), "
         "GFLOP/s and its ratio to C's\n");
  printf("  tile     acc   GFLOP/s  of peak  model      asm  asm/C\n");
  for (guint i = 0; i < tiles->len; i++) {
    Tile *t = &g_array_index(tiles, Tile, i);
    double gf = 2.0 * t->mr * t->nr * kc * calls / t->best_s / 1e9;
    g_autofree char *name = g_strdup_printf("%dx%d/%d", t->mr, t->nr, t->v);
    double asm_gf = t->asm_fn ? 2.0 * t->mr * t->nr * kc * calls / t->asm_best_s / 1e9 : NAN;
    printf("  %-8s %3d  %8.1f  %7.2f  %5.2f  %7.1f  %5.2f\n", name, t->mr * t->nr / t->v, gf,
           gf / peak_gf, t->model, asm_gf, asm_gf / gf);
  }
  g_aligned_free(ap);
  g_aligned_free(bp);
  (void)sink;
  return 0;
}
