/* gemm-anchors.c — OpenBLAS and oneDNN as GEMM anchors (see gemm-anchors.h). */
#include "gemm-anchors.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#ifdef TS_HAVE_OPENBLAS
#include <cblas.h>
#endif
#ifdef TS_HAVE_ONEDNN
#include <dnnl.h>
#include <omp.h>
#endif

struct _GemmAnchor {
  char *name;
  gint64 n;
  int threads;
  void (*call)(GemmAnchor *self);
  void (*clear)(GemmAnchor *self);
  const void *a, *b;
  void *c;
#ifdef TS_HAVE_ONEDNN
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  dnnl_primitive_t prim;
  dnnl_memory_t mem[4]; /* A, B, C, the scratchpad */
#endif
};

static double
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#ifdef TS_HAVE_OPENBLAS
static void
openblas_call(GemmAnchor *self)
{
  openblas_set_num_threads(self->threads);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, self->n, self->n, self->n, 1.0f, self->a,
              self->n, self->b, self->n, 0.0f, self->c, self->n);
}
#endif

#ifdef TS_HAVE_ONEDNN
static void
onednn_call(GemmAnchor *self)
{
  omp_set_num_threads(self->threads);
  dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, self->mem[0]},
                            {DNNL_ARG_WEIGHTS, self->mem[1]},
                            {DNNL_ARG_DST, self->mem[2]},
                            {DNNL_ARG_SCRATCHPAD, self->mem[3]}};
  dnnl_primitive_execute(self->prim, self->stream, G_N_ELEMENTS(args), args);
  dnnl_stream_wait(self->stream);
}

static void
onednn_clear(GemmAnchor *self)
{
  for (guint i = 0; i < G_N_ELEMENTS(self->mem); i++)
    if (self->mem[i])
      dnnl_memory_destroy(self->mem[i]);
  if (self->prim)
    dnnl_primitive_destroy(self->prim);
  if (self->stream)
    dnnl_stream_destroy(self->stream);
  if (self->engine)
    dnnl_engine_destroy(self->engine);
}

/* oneDNN 2.x's C API: a matmul of row-major (tag ab) n x n matrices, A and B in dtype, C in
 * dtype too (ours writes bf16 C from f32 accumulators), the library's memory wrapped around
 * ours (no copies), and its scratchpad allocated once here rather than by the library at each
 * call, as a framework that keeps primitives does. */
static gboolean
onednn_init(GemmAnchor *self, gboolean bf16)
{
  dnnl_data_type_t dt = bf16 ? dnnl_bf16 : dnnl_f32;
  dnnl_dims_t dims = {self->n, self->n};
  dnnl_memory_desc_t md[3];
  dnnl_matmul_desc_t op;
  dnnl_primitive_desc_t pd = NULL;
  omp_set_num_threads(self->threads);
  if (dnnl_engine_create(&self->engine, dnnl_cpu, 0) != dnnl_success ||
      dnnl_stream_create(&self->stream, self->engine, dnnl_stream_default_flags) != dnnl_success)
    return FALSE;
  for (guint i = 0; i < 3; i++)
    if (dnnl_memory_desc_init_by_tag(&md[i], 2, dims, dt, dnnl_ab) != dnnl_success)
      return FALSE;
  dnnl_primitive_attr_t attr = NULL;
  if (dnnl_primitive_attr_create(&attr) != dnnl_success)
    return FALSE;
  dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
  gboolean made = dnnl_matmul_desc_init(&op, &md[0], &md[1], NULL, &md[2]) == dnnl_success &&
                  dnnl_primitive_desc_create(&pd, &op, attr, self->engine, NULL) == dnnl_success;
  dnnl_primitive_attr_destroy(attr);
  if (!made)
    return FALSE;
  const char *impl = "?";
  dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
  const dnnl_version_t *v = dnnl_version();
  self->name = g_strdup_printf("oneDNN %d.%d.%d matmul %s", v->major, v->minor, v->patch, impl);
  const dnnl_memory_desc_t *scratch = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  dnnl_status_t st = dnnl_primitive_create(&self->prim, pd);
  if (st == dnnl_success && scratch != NULL)
    st = dnnl_memory_create(&self->mem[3], scratch, self->engine, DNNL_MEMORY_ALLOCATE);
  dnnl_primitive_desc_destroy(pd);
  if (st != dnnl_success)
    return FALSE;
  void *handles[3] = {(void *)self->a, (void *)self->b, self->c};
  for (guint i = 0; i < 3; i++)
    if (dnnl_memory_create(&self->mem[i], &md[i], self->engine, handles[i]) != dnnl_success)
      return FALSE;
  return TRUE;
}
#endif

static void
anchor_free(gpointer p)
{
  GemmAnchor *self = p;
  if (self->clear)
    self->clear(self);
  g_free(self->c);
  g_free(self->name);
  g_free(self);
}

static GemmAnchor *
anchor_new(gint64 n, int threads, const void *a, const void *b, gsize elem)
{
  GemmAnchor *self = g_new0(GemmAnchor, 1);
  self->n = n;
  self->threads = threads;
  self->a = a;
  self->b = b;
  self->c = g_malloc0((gsize)n * (gsize)n * elem);
  return self;
}

GPtrArray *
gemm_anchors_new(const char *dtype, gint64 n, int threads, const void *a, const void *b)
{
  GPtrArray *all = g_ptr_array_new_with_free_func(anchor_free);
  gboolean bf16 = g_strcmp0(dtype, "bf16") == 0;
#ifdef TS_HAVE_OPENBLAS
  if (!bf16) {
    GemmAnchor *ob = anchor_new(n, threads, a, b, 4);
    g_autofree char *version = g_strstrip(g_strdup(OPENBLAS_VERSION));
    ob->name = g_strdup_printf("%s sgemm, %s kernel", version, openblas_get_corename());
    ob->call = openblas_call;
    g_ptr_array_add(all, ob);
  }
#endif
#ifdef TS_HAVE_ONEDNN
  GemmAnchor *dn = anchor_new(n, threads, a, b, bf16 ? 2 : 4);
  dn->call = onednn_call;
  dn->clear = onednn_clear;
  if (onednn_init(dn, bf16)) {
    g_ptr_array_add(all, dn);
  } else {
    fprintf(stderr, "cpu_gemm: oneDNN could not set up a %s matmul; left out\n", dtype);
    anchor_free(dn);
  }
#endif
  (void)bf16;
  (void)a;
  (void)b;
  (void)threads;
  (void)n;
  return all;
}

const char *
gemm_anchor_name(const GemmAnchor *anchor)
{
  return anchor->name;
}

double
gemm_anchor_call(GemmAnchor *anchor)
{
  double t0 = now_ns();
  anchor->call(anchor);
  return now_ns() - t0;
}

const char *
gemm_anchors_openblas_core(void)
{
#ifdef TS_HAVE_OPENBLAS
  return openblas_get_corename();
#else
  return NULL;
#endif
}

/* OpenBLAS's x86-64 kernels by the widest vectors they use (names as openblas_get_corename()
 * and OPENBLAS_CORETYPE spell them); a kernel not listed is taken as 128-bit. */
static guint
openblas_core_bits(const char *core)
{
  static const char *const k512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  static const char *const k256[] = {"Haswell", "Zen", "Excavator", "Sandybridge",
                                     "Bulldozer", "Piledriver", "Steamroller"};
  for (guint i = 0; i < G_N_ELEMENTS(k512); i++)
    if (g_ascii_strcasecmp(core, k512[i]) == 0)
      return 512;
  for (guint i = 0; i < G_N_ELEMENTS(k256); i++)
    if (g_ascii_strcasecmp(core, k256[i]) == 0)
      return 256;
  return 128;
}

const char *
gemm_anchors_openblas_better_core(const char *host_arch, guint vector_bits)
{
  const char *core = gemm_anchors_openblas_core();
  if (core == NULL || host_arch == NULL || !g_str_has_prefix(host_arch, "x86_64") ||
      openblas_core_bits(core) >= vector_bits)
    return NULL;
  if (vector_bits >= 512)
    return strstr(host_arch, "+avx512bf16") ? "Cooperlake" : "SkylakeX";
  if (vector_bits >= 256 && strstr(host_arch, "+fma"))
    return "Haswell";
  return NULL;
}

const char *
gemm_anchors_missing(void)
{
#if !defined(TS_HAVE_OPENBLAS) && !defined(TS_HAVE_ONEDNN)
  return "OpenBLAS (libopenblas-dev) and oneDNN (libdnnl-dev)";
#elif !defined(TS_HAVE_OPENBLAS)
  return "OpenBLAS (libopenblas-dev)";
#elif !defined(TS_HAVE_ONEDNN)
  return "oneDNN (libdnnl-dev)";
#else
  return NULL;
#endif
}
