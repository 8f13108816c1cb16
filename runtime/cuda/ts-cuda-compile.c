/* ts-cuda-compile.c — the CUDA toolchain without a device (ts-cuda.h): what each GPU
 * architecture offers a kernel, NVRTC → LTO-IR → nvJitLink → cubin for one arch, and the
 * per-kernel resource report of the linker's ptxas pass. The cuda backend compiles through here,
 * and so does CI, which has the toolkit's libraries but no GPU.
 *
 * The arch table and the report parser need no CUDA at all, so they also work in a build made
 * without the CUDA headers; compiling then says how to get them.
 */
#include "config.h"

#include "ts-backend-private.h"
#include "ts-cuda.h"
#include "ts-runtime-resources.h"

#include <gio/gio.h>
#include <string.h>

#if TS_HAVE_CUDA
#include "ts-cuda-private.h"
#endif

/* ------------------------------------------------------------------------------------------ */
/* Architectures */

/* From the CUDA C++ Programming Guide's per-compute-capability table. smem_per_block is the
 * opt-in maximum (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES), which is the SM's shared
 * memory less the 1 KiB the driver reserves per block: 163 KiB on A100, 227 KiB on H100/B200,
 * 99 KiB on the GA10x/AD10x/GB20x parts, whose SMs also hold only 1536 threads. */
static const TsCudaArch arches[] = {
    {"sm_80", 8, 0, 166912, 167936, 65536, 2048, 255, FALSE},
    {"sm_86", 8, 6, 101376, 102400, 65536, 1536, 255, FALSE},
    {"sm_89", 8, 9, 101376, 102400, 65536, 1536, 255, FALSE},
    /* Plain sm_90 code cannot use wgmma or TMA: those exist only in the arch-specific target. */
    {"sm_90", 9, 0, 232448, 233472, 65536, 2048, 255, FALSE},
    {"sm_90a", 9, 0, 232448, 233472, 65536, 2048, 255, TRUE},
    {"sm_100a", 10, 0, 232448, 233472, 65536, 2048, 255, FALSE},
    {"sm_120", 12, 0, 101376, 102400, 65536, 1536, 255, FALSE},
};

const TsCudaArch *
ts_cuda_arch_lookup(const char *arch)
{
  g_return_val_if_fail(arch != NULL, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(arches); i++)
    if (strcmp(arches[i].arch, arch) == 0)
      return &arches[i];
  return NULL;
}

char *
ts_cuda_arch_for_cc(int major, int minor)
{
  /* Hopper and Blackwell code is built for the arch-specific target so generated kernels may
   * use its instructions (wgmma, TMA, tcgen05); that cubin runs on exactly that capability. */
  if ((major == 9 || major == 10) && minor == 0)
    return g_strdup_printf("sm_%d%da", major, minor);
  return g_strdup_printf("sm_%d%d", major, minor);
}

/* "sm_" then digits, then at most one suffix letter ("a" arch-specific, "f" family). */
static gboolean
arch_is_valid(const char *arch)
{
  if (!g_str_has_prefix(arch, "sm_"))
    return FALSE;
  const char *p = arch + 3;
  if (!g_ascii_isdigit(*p))
    return FALSE;
  while (g_ascii_isdigit(*p))
    p++;
  if (*p == 'a' || *p == 'f')
    p++;
  return *p == '\0';
}

/* ------------------------------------------------------------------------------------------ */
/* The ptxas report */

/* The decimal number that ends right before `phrase` in line (spaces between), or -1. */
static gint
number_before(const char *line, const char *phrase)
{
  const char *hit = strstr(line, phrase);
  if (hit == NULL)
    return -1;
  const char *end = hit;
  while (end > line && end[-1] == ' ')
    end--;
  const char *start = end;
  while (start > line && g_ascii_isdigit(start[-1]))
    start--;
  if (start == end)
    return -1;
  guint64 value = g_ascii_strtoull(start, NULL, 10);
  return value > G_MAXINT ? G_MAXINT : (gint)value;
}

/* The text after `prefix` in line, with trailing blanks and a closing quote cut off. */
static gboolean
line_names(const char *line, const char *prefix, const char *entry)
{
  const char *hit = strstr(line, prefix);
  if (hit == NULL)
    return FALSE;
  const char *name = hit + strlen(prefix);
  gsize len = strlen(entry);
  if (strncmp(name, entry, len) != 0)
    return FALSE;
  const char *rest = name + len;
  if (*rest == '\'')
    rest++;
  while (*rest == ' ' || *rest == '\t' || *rest == '\r')
    rest++;
  /* "Compiling entry function 'kk' for 'sm_90a'" goes on after the name. */
  return *rest == '\0' || g_str_has_prefix(rest, "for ");
}

/* The report, per kernel (device functions that were not inlined get a "Function properties"
 * block of their own, which must not be taken for the kernel's):
 *   ptxas info    : Compiling entry function 'kk' for 'sm_90a'
 *   ptxas info    : Function properties for kk
 *   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
 *   ptxas info    : Used 20 registers, used 1 barriers, 8192 bytes smem[, 512 bytes cmem[0]]
 * "N bytes smem" is left out when the kernel declares no shared memory. */
gboolean
ts_cuda_parse_resources(const char *log, const char *entry, TsModuleResources *out)
{
  g_return_val_if_fail(log != NULL && entry != NULL && out != NULL, FALSE);
  ts__module_resources_init(out);
  g_auto(GStrv) lines = g_strsplit(log, "\n", -1);
  gboolean in_entry = FALSE; /* between our kernel's "Compiling" line and its "Used" line */
  gboolean in_props = FALSE; /* the "Function properties" block is our kernel's */
  for (char **l = lines; *l != NULL; l++) {
    const char *line = *l;
    if (strstr(line, "Compiling entry function '") != NULL) {
      in_entry = line_names(line, "Compiling entry function '", entry);
      in_props = FALSE;
    } else if (strstr(line, "Function properties for ") != NULL) {
      in_props = line_names(line, "Function properties for ", entry);
      in_entry = in_entry || in_props;
    } else if (in_props && strstr(line, "bytes stack frame") != NULL) {
      out->local_bytes = number_before(line, "bytes stack frame");
      out->spill_stores = number_before(line, "bytes spill stores");
      out->spill_loads = number_before(line, "bytes spill loads");
      in_props = FALSE;
    } else if (in_entry && strstr(line, "Used ") != NULL && strstr(line, " registers") != NULL) {
      out->registers = number_before(line, "registers");
      gint smem = number_before(line, "bytes smem");
      out->smem_static = smem >= 0 ? smem : 0;
      return out->registers >= 0;
    }
  }
  ts__module_resources_init(out);
  return FALSE;
}

/* ------------------------------------------------------------------------------------------ */
/* The embedded tile-primitive headers */

/* The names generated code includes them by; NVRTC resolves #include against these. */
static const char *const header_names[] = {
    "ts_cuda_prims.cuh",
    "ts_cuda_gemm.cuh",
    "ts_cuda_wgmma.cuh",
    "ts_cuda_tma.cuh",
    "ts_cuda_rows.cuh",
    "ts_cuda_attn.cuh",
};

typedef struct {
  char *texts[G_N_ELEMENTS(header_names)]; /* NUL-terminated, as NVRTC wants them */
  gsize lens[G_N_ELEMENTS(header_names)];
  char *failure;
} Headers;

static gpointer
load_headers(gpointer data)
{
  Headers *h = g_new0(Headers, 1);
  for (gsize i = 0; i < G_N_ELEMENTS(header_names) && h->failure == NULL; i++) {
    g_autofree char *path = g_strconcat("/org/tessera/runtime/cuda/", header_names[i], NULL);
    g_autoptr(GError) local = NULL;
    g_autoptr(GBytes) bytes = g_resource_lookup_data(ts_runtime_get_resource(), path,
                                                     G_RESOURCE_LOOKUP_FLAGS_NONE, &local);
    if (bytes == NULL) {
      /* A build mistake (the .gresource.xml lost a file), not a property of the machine. */
      h->failure =
          g_strdup_printf("the embedded header %s is missing: %s", header_names[i], local->message);
      break;
    }
    const void *data_ = g_bytes_get_data(bytes, &h->lens[i]);
    h->texts[i] = g_strndup(data_, h->lens[i]);
  }
  return h;
}

static const Headers *
embedded_headers(GError **error)
{
  static GOnce once = G_ONCE_INIT;
  const Headers *h = g_once(&once, load_headers, NULL);
  if (h->failure != NULL) {
    g_set_error_literal(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE, h->failure);
    return NULL;
  }
  return h;
}

#if TS_HAVE_CUDA

/* ------------------------------------------------------------------------------------------ */
/* Options */

/* No fast math: generated kernels are checked against references with IEEE semantics, and the
 * tuner must not win by changing the numerics. -lineinfo keeps source lines for profilers; it
 * does not change the code. -O3 is nvJitLink's default spelled out, so the key says it.
 * -no-cache: where a driver is installed, nvJitLink keeps its own cache of finished links, and
 * a link served from it prints no ptxas report, so registers, shared memory and spills would
 * read as unknown from the second compile of a kernel on (seen on an H100, 2026-11-26). Our
 * own artifact cache already serves repeated compiles. */
typedef struct {
  char *nvrtc[4];
  char *link[5];
} Options;

static void
options_init(Options *o, const char *arch)
{
  o->nvrtc[0] = g_strconcat("-arch=compute_", arch + strlen("sm_"), NULL);
  o->nvrtc[1] = g_strdup("-dlto");
  o->nvrtc[2] = g_strdup("-std=c++17");
  o->nvrtc[3] = g_strdup("-lineinfo");
  o->link[0] = g_strconcat("-arch=", arch, NULL);
  o->link[1] = g_strdup("-lto");
  o->link[2] = g_strdup("-verbose");
  o->link[3] = g_strdup("-O3");
  o->link[4] = g_strdup("-no-cache");
}

static void
options_clear(Options *o)
{
  for (gsize i = 0; i < G_N_ELEMENTS(o->nvrtc); i++)
    g_free(o->nvrtc[i]);
  for (gsize i = 0; i < G_N_ELEMENTS(o->link); i++)
    g_free(o->link[i]);
}

void
ts__cuda_hash_compile_inputs(GChecksum *checksum, const char *arch)
{
  Options o;
  options_init(&o, arch);
  for (gsize i = 0; i < G_N_ELEMENTS(o.nvrtc); i++)
    ts__checksum_field(checksum, o.nvrtc[i], -1);
  for (gsize i = 0; i < G_N_ELEMENTS(o.link); i++)
    ts__checksum_field(checksum, o.link[i], -1);
  options_clear(&o);
  const Headers *h = embedded_headers(NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(header_names); i++) {
    ts__checksum_field(checksum, header_names[i], -1);
    if (h != NULL)
      ts__checksum_field(checksum, h->texts[i], (gssize)h->lens[i]);
  }
}

/* ------------------------------------------------------------------------------------------ */
/* Toolchain */

char *
ts_cuda_toolchain(GError **error)
{
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  const TsCudaNvrtc *rtc = ts__cuda_nvrtc(error);
  if (rtc == NULL)
    return NULL;
  const TsCudaNvJitLink *jl = ts__cuda_nvjitlink(error);
  if (jl == NULL)
    return NULL;
  int rmaj = 0, rmin = 0;
  nvrtcResult rr = rtc->nvrtcVersion(&rmaj, &rmin);
  if (rr != NVRTC_SUCCESS) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, "nvrtcVersion: %s",
                rtc->nvrtcGetErrorString(rr));
    return NULL;
  }
  unsigned jmaj = 0, jmin = 0;
  nvJitLinkResult jr = jl->nvJitLinkVersion(&jmaj, &jmin);
  if (jr != NVJITLINK_SUCCESS) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, "nvJitLinkVersion: %s",
                ts__cuda_nvjitlink_result_name(jr));
    return NULL;
  }
  return g_strdup_printf("nvrtc %d.%d, nvjitlink %u.%u", rmaj, rmin, jmaj, jmin);
}

/* ------------------------------------------------------------------------------------------ */
/* Compile */

/* Logs quote source lines, which may hold any bytes; messages must be UTF-8. */
static char *
program_log(const TsCudaNvrtc *rtc, nvrtcProgram prog)
{
  size_t size = 0;
  if (rtc->nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0)
    return g_strdup("");
  g_autofree char *buf = g_malloc0(size + 1);
  if (rtc->nvrtcGetProgramLog(prog, buf) != NVRTC_SUCCESS)
    return g_strdup("");
  return g_strstrip(g_utf8_make_valid(buf, -1));
}

static char *
link_log(const TsCudaNvJitLink *jl, nvJitLinkHandle link, gboolean errors)
{
  size_t size = 0;
  nvJitLinkResult r =
      errors ? jl->nvJitLinkGetErrorLogSize(link, &size) : jl->nvJitLinkGetInfoLogSize(link, &size);
  if (r != NVJITLINK_SUCCESS || size == 0)
    return g_strdup("");
  g_autofree char *buf = g_malloc0(size + 1);
  r = errors ? jl->nvJitLinkGetErrorLog(link, buf) : jl->nvJitLinkGetInfoLog(link, buf);
  if (r != NVJITLINK_SUCCESS)
    return g_strdup("");
  return g_strstrip(g_utf8_make_valid(buf, -1));
}

static void
set_nvrtc_error(GError **error, const TsCudaNvrtc *rtc, const char *call, nvrtcResult r)
{
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE, "NVRTC: %s: %s", call,
              rtc->nvrtcGetErrorString(r));
}

/* NVRTC: source → LTO-IR. */
static char *
compile_to_ltoir(const TsCudaNvrtc *rtc, const Headers *h, const Options *o, const char *source,
                 size_t *lto_size, char **rtc_log, GError **error)
{
  nvrtcProgram prog = NULL;
  nvrtcResult r =
      rtc->nvrtcCreateProgram(&prog, source, "kernel.cu", (int)G_N_ELEMENTS(header_names),
                              (const char *const *)h->texts, header_names);
  if (r != NVRTC_SUCCESS) {
    set_nvrtc_error(error, rtc, "nvrtcCreateProgram", r);
    return NULL;
  }
  char *lto = NULL;
  r = rtc->nvrtcCompileProgram(prog, (int)G_N_ELEMENTS(o->nvrtc), (const char *const *)o->nvrtc);
  *rtc_log = program_log(rtc, prog);
  if (r != NVRTC_SUCCESS) {
    /* The diagnostics verbatim: they name the line of generated code that is wrong. */
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE,
                "NVRTC could not compile the kernel (%s, %s):\n%s", o->nvrtc[0] + strlen("-arch="),
                rtc->nvrtcGetErrorString(r), **rtc_log ? *rtc_log : "(NVRTC gave no log)");
  } else if ((r = rtc->nvrtcGetLTOIRSize(prog, lto_size)) != NVRTC_SUCCESS) {
    set_nvrtc_error(error, rtc, "nvrtcGetLTOIRSize", r);
  } else {
    lto = g_malloc(*lto_size > 0 ? *lto_size : 1);
    if ((r = rtc->nvrtcGetLTOIR(prog, lto)) != NVRTC_SUCCESS) {
      set_nvrtc_error(error, rtc, "nvrtcGetLTOIR", r);
      g_clear_pointer(&lto, g_free);
    }
  }
  rtc->nvrtcDestroyProgram(&prog);
  return lto;
}

static void
set_link_error(GError **error, const TsCudaNvJitLink *jl, nvJitLinkHandle link, const char *call,
               nvJitLinkResult r)
{
  g_autofree char *errors = link != NULL ? link_log(jl, link, TRUE) : g_strdup("");
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE, "nvJitLink: %s: %s%s%s", call,
              ts__cuda_nvjitlink_result_name(r), *errors ? ":\n" : "", errors);
}

/* nvJitLink: LTO-IR → cubin, with ptxas's report in *info. */
static GBytes *
link_to_cubin(const TsCudaNvJitLink *jl, const Options *o, const char *lto, size_t lto_size,
              char **info, GError **error)
{
  nvJitLinkHandle link = NULL;
  nvJitLinkResult r =
      jl->nvJitLinkCreate(&link, (uint32_t)G_N_ELEMENTS(o->link), (const char **)o->link);
  if (r != NVJITLINK_SUCCESS) {
    g_autofree char *call = g_strdup_printf("nvJitLinkCreate (%s)", o->link[0]);
    set_link_error(error, jl, link, call, r);
    if (link != NULL)
      jl->nvJitLinkDestroy(&link);
    return NULL;
  }
  GBytes *cubin = NULL;
  if ((r = jl->nvJitLinkAddData(link, NVJITLINK_INPUT_LTOIR, lto, lto_size, "kernel.cu")) !=
      NVJITLINK_SUCCESS) {
    set_link_error(error, jl, link, "nvJitLinkAddData", r);
  } else if ((r = jl->nvJitLinkComplete(link)) != NVJITLINK_SUCCESS) {
    /* ptxas errors (too much shared memory, bad inline PTX) land here, in the error log. */
    g_autofree char *errors = link_log(jl, link, TRUE);
    g_autofree char *infos = link_log(jl, link, FALSE);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE,
                "nvJitLink could not link the kernel for %s (%s):\n%s%s%s",
                o->link[0] + strlen("-arch="), ts__cuda_nvjitlink_result_name(r),
                *errors ? errors : "(nvJitLink gave no error log)", *infos ? "\n" : "", infos);
  } else {
    size_t size = 0;
    if ((r = jl->nvJitLinkGetLinkedCubinSize(link, &size)) != NVJITLINK_SUCCESS) {
      set_link_error(error, jl, link, "nvJitLinkGetLinkedCubinSize", r);
    } else {
      void *data = g_malloc(size > 0 ? size : 1);
      if ((r = jl->nvJitLinkGetLinkedCubin(link, data)) != NVJITLINK_SUCCESS) {
        set_link_error(error, jl, link, "nvJitLinkGetLinkedCubin", r);
        g_free(data);
      } else {
        cubin = g_bytes_new_take(data, size);
        *info = link_log(jl, link, FALSE);
      }
    }
  }
  jl->nvJitLinkDestroy(&link);
  return cubin;
}

GBytes *
ts_cuda_compile(const char *source, const char *entry, const char *arch,
                TsModuleResources *resources, char **log, GError **error)
{
  g_return_val_if_fail(source != NULL && entry != NULL && arch != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (resources != NULL)
    ts__module_resources_init(resources);
  if (log != NULL)
    *log = NULL;

  if (!arch_is_valid(arch)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE,
                "cannot compile for '%s': not a GPU architecture; name one as sm_NN, such as "
                "sm_80 or sm_90a",
                arch);
    return NULL;
  }
  const TsCudaNvrtc *rtc = ts__cuda_nvrtc(error);
  if (rtc == NULL)
    return NULL;
  const TsCudaNvJitLink *jl = ts__cuda_nvjitlink(error);
  if (jl == NULL)
    return NULL;
  const Headers *h = embedded_headers(error);
  if (h == NULL)
    return NULL;

  Options o;
  options_init(&o, arch);
  size_t lto_size = 0;
  g_autofree char *rtc_log = NULL;
  g_autofree char *info = NULL;
  g_autofree char *lto = compile_to_ltoir(rtc, h, &o, source, &lto_size, &rtc_log, error);
  GBytes *cubin = lto != NULL ? link_to_cubin(jl, &o, lto, lto_size, &info, error) : NULL;
  options_clear(&o);
  if (cubin == NULL)
    return NULL;

  /* No report for entry means the cubin has no such kernel; loading it will say so. */
  if (resources != NULL)
    ts_cuda_parse_resources(info, entry, resources);
  if (log != NULL)
    *log = g_strconcat(rtc_log, *rtc_log && *info ? "\n" : "", info, NULL);
  return cubin;
}

char *
ts_cuda_compile_key(const char *source, const char *entry, const char *arch, GError **error)
{
  g_return_val_if_fail(source != NULL && entry != NULL && *entry && arch != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autofree char *toolchain = ts_cuda_toolchain(error);
  const Headers *h = toolchain ? embedded_headers(error) : NULL;
  if (h == NULL)
    return NULL;
  g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
  /* Each part NUL-terminated, so no two splits of the same bytes collide. */
#define PART(text, len) (g_checksum_update(sum, (const guchar *)(text), (gssize)(len)), \
                         g_checksum_update(sum, (const guchar *)"", 1))
  PART(toolchain, strlen(toolchain));
  Options o;
  options_init(&o, arch);
  for (gsize i = 0; i < G_N_ELEMENTS(o.nvrtc); i++)
    PART(o.nvrtc[i], strlen(o.nvrtc[i]));
  for (gsize i = 0; i < G_N_ELEMENTS(o.link); i++)
    PART(o.link[i], strlen(o.link[i]));
  options_clear(&o);
  for (gsize i = 0; i < G_N_ELEMENTS(header_names); i++)
    PART(h->texts[i], h->lens[i]);
  /* The leading comment names the op and its point; the code after it is what compiles (its
   * line numbers do not change the resources). */
  guint32 banner_lines = 0;
  const char *code = ts__source_code_start(source, &banner_lines);
  while (code != source && g_ascii_isspace(*code))
    code++;
  /* The name is the entry and the prefix of its launch and tensor-map records. */
  const gsize n = strlen(entry);
  for (const char *at; (at = strstr(code, entry)) != NULL; code = at + n)
    PART(code, at - code);
  PART(code, strlen(code));
#undef PART
  return g_strdup(g_checksum_get_string(sum));
}

#else /* !TS_HAVE_CUDA */

static void
set_unavailable(GError **error)
{
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
              "built without the CUDA headers (cuda-home=%s); install the CUDA toolkit's "
              "headers there or reconfigure with -Dcuda-home=DIR",
              TS_CUDA_HOME);
}

char *
ts_cuda_toolchain(GError **error)
{
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  set_unavailable(error);
  return NULL;
}

GBytes *
ts_cuda_compile(const char *source, const char *entry, const char *arch,
                TsModuleResources *resources, char **log, GError **error)
{
  g_return_val_if_fail(source != NULL && entry != NULL && arch != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  if (resources != NULL)
    ts__module_resources_init(resources);
  if (log != NULL)
    *log = NULL;
  /* Still checked, so a build without CUDA finds a broken .gresource.xml as well. */
  if (!arch_is_valid(arch) || embedded_headers(error) == NULL)
    return NULL;
  set_unavailable(error);
  return NULL;
}

char *
ts_cuda_compile_key(const char *source, const char *entry, const char *arch, GError **error)
{
  g_return_val_if_fail(source != NULL && entry != NULL && *entry && arch != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  set_unavailable(error);
  return NULL;
}

#endif /* TS_HAVE_CUDA */
