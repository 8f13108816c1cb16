/* ts-cuda-dl.c — finds and opens the CUDA libraries at run time (never at link time, so every
 * binary starts on a machine without a driver or toolkit), resolves their function tables once
 * per process, and formats CUDA statuses for error messages.
 *
 * Search order for each library: its soname on the loader path (LD_LIBRARY_PATH, ld.so.cache,
 * where the driver installs libcuda.so.1), then $CUDA_HOME/lib64, then the toolkit configured at
 * build time (TS_CUDA_HOME)/lib64 and its extras/CUPTI/lib64 (where older toolkits keep CUPTI).
 */
#include "config.h"

#include "ts-cuda-private.h"
#include "ts-cuda.h"

#include <dlfcn.h>
#include <string.h>

#define TS__CUDA_STR(x) #x
#define TS__CUDA_XSTR(x) TS__CUDA_STR(x)

typedef struct {
  const char *symbol;
  gsize offset;
} Sym;

/* Both arguments are macro-expanded before they get here, so the header's renames apply to the
 * string and to the member alike. */
#define DRIVER_SYM(member, symbol) {TS__CUDA_XSTR(symbol), G_STRUCT_OFFSET(TsCudaDriver, member)},
#define NVRTC_SYM(member, symbol) {TS__CUDA_XSTR(symbol), G_STRUCT_OFFSET(TsCudaNvrtc, member)},
#define NVJITLINK_SYM(member, symbol)                                                              \
  {TS__CUDA_XSTR(symbol), G_STRUCT_OFFSET(TsCudaNvJitLink, member)},

static const Sym driver_syms[] = {TS__CUDA_DRIVER_FUNCS(DRIVER_SYM)};
static const Sym nvrtc_syms[] = {TS__CUDA_NVRTC_FUNCS(NVRTC_SYM)};
static const Sym nvjitlink_syms[] = {TS__CUDA_NVJITLINK_FUNCS(NVJITLINK_SYM)};

/* ------------------------------------------------------------------------------------------ */
/* Finding a library */

static char *
where_we_looked(void)
{
  const char *env = g_getenv("CUDA_HOME");
  g_autoptr(GString) s = g_string_new("looked on the loader path");
  if (env != NULL && *env != '\0')
    g_string_append_printf(s, ", in $CUDA_HOME/lib64 (%s/lib64)", env);
  g_string_append_printf(s, " and in %s/lib64", TS_CUDA_HOME);
  return g_string_free(g_steal_pointer(&s), FALSE);
}

void *
ts__cuda_dlopen(const char *soname, gboolean *not_found, char **why)
{
  *not_found = FALSE;
  *why = NULL;
  void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (handle != NULL)
    return handle;

  /* A file that exists but does not load (wrong word size, a missing dependency) is worth
   * reporting in dlopen's own words; a file that is nowhere is reported as such. */
  g_autofree char *load_failure = NULL;
  const char *roots[] = {g_getenv("CUDA_HOME"), TS_CUDA_HOME};
  static const char *const subdirs[] = {"lib64", "extras/CUPTI/lib64"};
  for (gsize r = 0; r < G_N_ELEMENTS(roots); r++) {
    if (roots[r] == NULL || *roots[r] == '\0')
      continue;
    for (gsize s = 0; s < G_N_ELEMENTS(subdirs); s++) {
      g_autofree char *path = g_build_filename(roots[r], subdirs[s], soname, NULL);
      if (!g_file_test(path, G_FILE_TEST_EXISTS))
        continue;
      handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (handle != NULL)
        return handle;
      const char *err = dlerror();
      if (load_failure == NULL)
        load_failure =
            g_strdup_printf("cannot load %s: %s", path, err != NULL ? err : "unknown dlopen error");
    }
  }
  if (load_failure != NULL) {
    *why = g_steal_pointer(&load_failure);
  } else {
    *not_found = TRUE;
    g_autofree char *looked = where_we_looked();
    *why = g_strdup_printf("%s not found (%s)", soname, looked);
  }
  return NULL;
}

void *
ts_cuda_dlopen(const char *soname, char **why)
{
  gboolean not_found;
  return ts__cuda_dlopen(soname, &not_found, why);
}

/* NULL on success; else why the library cannot be used. *not_found: it is nowhere. */
static char *
load_table(const char *soname, const Sym *syms, gsize n_syms, void *table, gboolean *not_found)
{
  char *why = NULL;
  void *handle = ts__cuda_dlopen(soname, not_found, &why);
  if (handle == NULL)
    return why;
  for (gsize i = 0; i < n_syms; i++) {
    void *sym = dlsym(handle, syms[i].symbol);
    if (sym == NULL) {
      /* Left open: the process keeps whatever a library mapped, as for the loaded ones. */
      return g_strdup_printf("%s lacks %s: it is older than the CUDA %d.%d headers Tessera was "
                             "built with; update it (or point CUDA_HOME at a newer toolkit)",
                             soname, syms[i].symbol, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    }
    /* POSIX: function pointers round-trip through dlsym's void *. */
    memcpy((char *)table + syms[i].offset, &sym, sizeof sym);
  }
  return NULL;
}

typedef struct {
  TsCudaDriver fns;
  char *failure;
} DriverLoad;

static gpointer
load_driver(gpointer data)
{
  DriverLoad *l = g_new0(DriverLoad, 1);
  gboolean not_found = FALSE;
  g_autofree char *why =
      load_table("libcuda.so.1", driver_syms, G_N_ELEMENTS(driver_syms), &l->fns, &not_found);
  if (not_found)
    l->failure =
        g_strdup("no CUDA device: libcuda.so.1 not found (no NVIDIA driver on this machine)");
  else if (why != NULL)
    l->failure = g_strconcat("no CUDA device: ", why, NULL);
  return l;
}

const TsCudaDriver *
ts__cuda_driver(GError **error)
{
  static GOnce once = G_ONCE_INIT;
  const DriverLoad *l = g_once(&once, load_driver, NULL);
  if (l->failure != NULL) {
    g_set_error_literal(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, l->failure);
    return NULL;
  }
  return &l->fns;
}

typedef struct {
  TsCudaNvrtc fns;
  char *failure;
} NvrtcLoad;

static gpointer
load_nvrtc(gpointer data)
{
  NvrtcLoad *l = g_new0(NvrtcLoad, 1);
  gboolean not_found = FALSE;
  g_autofree char *why =
      load_table("libnvrtc.so.13", nvrtc_syms, G_N_ELEMENTS(nvrtc_syms), &l->fns, &not_found);
  if (why != NULL)
    l->failure = g_strdup_printf("%s%s", why,
                                 not_found ? "; install the CUDA 13 NVRTC (cuda-nvrtc-13-x) "
                                             "or set CUDA_HOME to a CUDA 13 toolkit"
                                           : "");
  return l;
}

const TsCudaNvrtc *
ts__cuda_nvrtc(GError **error)
{
  static GOnce once = G_ONCE_INIT;
  const NvrtcLoad *l = g_once(&once, load_nvrtc, NULL);
  if (l->failure != NULL) {
    g_set_error_literal(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, l->failure);
    return NULL;
  }
  return &l->fns;
}

typedef struct {
  TsCudaNvJitLink fns;
  char *failure;
} NvJitLinkLoad;

static gpointer
load_nvjitlink(gpointer data)
{
  NvJitLinkLoad *l = g_new0(NvJitLinkLoad, 1);
  gboolean not_found = FALSE;
  g_autofree char *why = load_table("libnvJitLink.so.13", nvjitlink_syms,
                                    G_N_ELEMENTS(nvjitlink_syms), &l->fns, &not_found);
  if (why != NULL)
    l->failure = g_strdup_printf("%s%s", why,
                                 not_found ? "; install the CUDA 13 nvJitLink "
                                             "(libnvjitlink-13-x) or set CUDA_HOME to a CUDA 13 "
                                             "toolkit"
                                           : "");
  return l;
}

const TsCudaNvJitLink *
ts__cuda_nvjitlink(GError **error)
{
  static GOnce once = G_ONCE_INIT;
  const NvJitLinkLoad *l = g_once(&once, load_nvjitlink, NULL);
  if (l->failure != NULL) {
    g_set_error_literal(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, l->failure);
    return NULL;
  }
  return &l->fns;
}

/* ------------------------------------------------------------------------------------------ */
/* Statuses */

/* For when the driver cannot name its own errors: the stub libcuda.so that toolkits ship for
 * linking (which someone may have put on the loader path) answers every call with an error. */
static const struct {
  CUresult result;
  const char *text;
} fallback_names[] = {
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
    {CUDA_ERROR_STUB_LIBRARY, "CUDA_ERROR_STUB_LIBRARY (libcuda.so.1 is the toolkit's link stub, "
                              "not a driver; install the NVIDIA driver)"},
    {CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER (the NVIDIA "
                                            "driver is too old; update it)"},
    {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"},
};

char *
ts__cuda_result_text(const TsCudaDriver *cu, CUresult result)
{
  const char *name = NULL, *text = NULL;
  if (cu == NULL || cu->cuGetErrorName(result, &name) != CUDA_SUCCESS || name == NULL) {
    for (gsize i = 0; i < G_N_ELEMENTS(fallback_names); i++)
      if (fallback_names[i].result == result)
        return g_strdup(fallback_names[i].text);
    return g_strdup_printf("CUDA error %d", (int)result);
  }
  if (cu->cuGetErrorString(result, &text) != CUDA_SUCCESS || text == NULL)
    return g_strdup(name);
  return g_strdup_printf("%s (%s)", name, text);
}

gboolean
ts__cuda_check(const TsCudaDriver *cu, CUresult result, const char *call, TsBackendError code,
               GError **error)
{
  if (result == CUDA_SUCCESS)
    return TRUE;
  g_autofree char *text = ts__cuda_result_text(cu, result);
  g_set_error(error, TS_BACKEND_ERROR, code, "%s: %s", call, text);
  return FALSE;
}

gboolean
ts__cuda_result_is_sticky(CUresult result)
{
  switch (result) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_NVLINK_UNCORRECTABLE:
  case CUDA_ERROR_CONTAINED:
  case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean
ts__cuda_note_failure(char **lost, CUresult result, const char *message)
{
  g_return_val_if_fail(lost != NULL, FALSE);
  if (!ts__cuda_result_is_sticky(result))
    return FALSE;
  if (*lost == NULL)
    *lost = g_strdup(message);
  return TRUE;
}

const char *
ts__cuda_nvjitlink_result_name(nvJitLinkResult result)
{
  switch (result) {
#define NAME(r)                                                                                    \
  case r:                                                                                          \
    return #r;
    NAME(NVJITLINK_SUCCESS)
    NAME(NVJITLINK_ERROR_UNRECOGNIZED_OPTION)
    NAME(NVJITLINK_ERROR_MISSING_ARCH)
    NAME(NVJITLINK_ERROR_INVALID_INPUT)
    NAME(NVJITLINK_ERROR_PTX_COMPILE)
    NAME(NVJITLINK_ERROR_NVVM_COMPILE)
    NAME(NVJITLINK_ERROR_INTERNAL)
    NAME(NVJITLINK_ERROR_THREADPOOL)
    NAME(NVJITLINK_ERROR_UNRECOGNIZED_INPUT)
    NAME(NVJITLINK_ERROR_FINALIZE)
    NAME(NVJITLINK_ERROR_NULL_INPUT)
    NAME(NVJITLINK_ERROR_INCOMPATIBLE_OPTIONS)
    NAME(NVJITLINK_ERROR_INCORRECT_INPUT_TYPE)
    NAME(NVJITLINK_ERROR_ARCH_MISMATCH)
    NAME(NVJITLINK_ERROR_OUTDATED_LIBRARY)
    NAME(NVJITLINK_ERROR_MISSING_FATBIN)
    NAME(NVJITLINK_ERROR_UNRECOGNIZED_ARCH)
    NAME(NVJITLINK_ERROR_UNSUPPORTED_ARCH)
    NAME(NVJITLINK_ERROR_LTO_NOT_ENABLED)
#undef NAME
  }
  return "NVJITLINK_ERROR_UNKNOWN";
}
