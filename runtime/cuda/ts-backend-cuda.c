/* ts-backend-cuda.c — the "cuda" backend: one NVIDIA GPU through the driver API (libcuda,
 * dlopen'ed, so this file costs nothing on machines without a driver: open() reports
 * "no CUDA device" and "auto" moves on to the CPU). Kernels are compiled by ts-cuda-compile.c
 * (NVRTC + nvJitLink) into cubins, which carry their own launch shape in an `<entry>_launch`
 * record; they run on a private non-blocking stream of the device's primary context, and are
 * timed from CUPTI kernel records (ts-cuda-cupti.c) or, failing that, CUDA events — never a host
 * clock around an asynchronous launch. The shared parts (cache, keys, checks) live in
 * ts-backend.c.
 */
#include "config.h"

#include "ts-cuda-private.h"
#include "ts-cuda-tma.h"

#include <elf.h>
#include <math.h>
#include <string.h>

/* Launches with more dynamic shared memory than this must opt in per kernel. */
#define SMEM_DEFAULT_LIMIT (48 * 1024)

typedef struct {
  TsBackend base;
  const TsCudaDriver *cu;
  CUdevice device;
  CUcontext ctx;     /* the device's primary context, retained by us; NULL until then */
  CUstream stream;   /* all our work goes here, so it never waits on other users' streams */
  CUevent events[2]; /* start/stop of the event timer, created on first use */
  CUdeviceptr flush; /* 2x L2, overwritten before every timed launch; allocated on first use */
  gsize flush_bytes;
  int ordinal;       /* the device's index: what CUPTI's profiler names it by */
  gboolean in_metrics; /* inside a metrics pass: time() only launches (see cuda_time) */
  GMutex lock;          /* guards compiled */
  GHashTable *compiled; /* SHA-256 of a cubin built in this process → its TsModuleResources */
  char *lost;           /* set once a sticky error has made the context unusable */
} TsCudaBackend;

typedef struct {
  TsModule base;
  CUmodule module;
  CUfunction function;
  guint32 launch[7]; /* <entry>_launch: grid x, y, z, block x, y, z, dynamic smem bytes */
  guint smem_opted;  /* dynamic shared memory this function has been allowed so far */
  guint32 tma[1 + TS_TMA_WORDS * TS_TMA_MAX_MAPS]; /* <entry>_tma, when the kernel has one */
  gsize tma_words;                                 /* 0: no tensor maps */
} TsCudaModule;

/* What a launch passes: the TsArgs struct and, for a kernel that reads through the TMA, its
 * tensor maps as the second parameter (ts_cuda_tma.cuh's TsTmaMaps: four maps, in order). */
typedef struct {
  TsCudaArgs args;
  CUtensorMap maps[TS_TMA_MAX_MAPS];
} Params;

typedef struct {
  TsBuffer base;
  CUdeviceptr ptr;
} TsCudaBuffer;

typedef struct {
  guint grid[3], block[3], smem;
} Shape;

/* ------------------------------------------------------------------------------------------ */
/* errors */

/* Teardown and best-effort calls: failures are worth a debug line, nothing more. */
static void
quiet(TsCudaBackend *self, CUresult r, const char *call)
{
  if (r != CUDA_SUCCESS) {
    g_autofree char *text = ts__cuda_result_text(self->cu, r);
    g_debug("cuda: %s: %s", call, text);
  }
}

/* Sets error to "<what>: <call>: <CUDA error>"; after a sticky error the backend remembers that
 * its context is gone, so later calls say so at once instead of failing in odd places. */
static gboolean fail(TsCudaBackend *self, CUresult r, const char *call, TsBackendError code,
                     GError **error, const char *what_fmt, ...) G_GNUC_PRINTF(6, 7);

static gboolean
fail(TsCudaBackend *self, CUresult r, const char *call, TsBackendError code, GError **error,
     const char *what_fmt, ...)
{
  va_list ap;
  va_start(ap, what_fmt);
  g_autofree char *what = g_strdup_vprintf(what_fmt, ap);
  va_end(ap);
  g_autofree char *text = ts__cuda_result_text(self->cu, r);
  g_autofree char *message = g_strdup_printf("%s: %s: %s", what, call, text);
  if (!ts__cuda_note_failure(&self->lost, r, message)) {
    g_set_error_literal(error, TS_BACKEND_ERROR, code, message);
    return FALSE;
  }
  g_set_error(error, TS_BACKEND_ERROR, code, "%s; the CUDA context is lost; restart the process",
              message);
  return FALSE;
}

static const char *
cuda_lost(TsBackend *backend)
{
  return ((TsCudaBackend *)backend)->lost;
}

/* Every entry point starts here: the primary context must be current on the calling thread (the
 * tuner may call from another thread than the one that opened us), and a lost context is
 * reported as such. */
static gboolean
enter(TsCudaBackend *self, TsBackendError code, GError **error)
{
  if (self->lost != NULL) {
    g_set_error(error, TS_BACKEND_ERROR, code,
                "the CUDA context was lost earlier (%s); restart the process", self->lost);
    return FALSE;
  }
  CUresult r = self->cu->cuCtxSetCurrent(self->ctx);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuCtxSetCurrent", code, error, "cannot use the CUDA device");
  return TRUE;
}

/* ------------------------------------------------------------------------------------------ */
/* open / close */

static void cuda_close(TsBackend *backend);

static gboolean
device_attr(TsCudaBackend *self, CUdevice_attribute attr, const char *what, int *value,
            GError **error)
{
  CUresult r = self->cu->cuDeviceGetAttribute(value, attr, self->device);
  if (r == CUDA_SUCCESS)
    return TRUE;
  return fail(self, r, "cuDeviceGetAttribute", TS_BACKEND_ERROR_UNAVAILABLE, error,
              "cannot read the CUDA device's %s", what);
}

static gboolean
describe(TsCudaBackend *self, int ordinal, GError **error)
{
  const TsCudaDriver *cu = self->cu;
  TsDeviceInfo *info = &self->base.info;
  char name[256] = "";
  CUresult r = cu->cuDeviceGetName(name, sizeof name, self->device);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuDeviceGetName", TS_BACKEND_ERROR_UNAVAILABLE, error,
                "cannot describe CUDA device %d", ordinal);
  int major = 0, minor = 0, sms = 0, smem_sm = 0, l2 = 0, smem_block = 0;
  if (!device_attr(self, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability", &major,
                   error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability", &minor,
                   error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count", &sms, error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                   "shared memory per SM", &smem_sm, error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size", &l2, error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                   "shared memory per block", &smem_block, error))
    return FALSE;
  int pci_domain = 0, pci_bus = 0, pci_dev = 0;
  if (!device_attr(self, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, "PCI domain", &pci_domain, error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, "PCI bus", &pci_bus, error) ||
      !device_attr(self, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, "PCI device", &pci_dev, error))
    return FALSE;
  size_t memory = 0;
  r = cu->cuDeviceTotalMem(&memory, self->device);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuDeviceTotalMem", TS_BACKEND_ERROR_UNAVAILABLE, error,
                "cannot describe CUDA device %d", ordinal);
  int driver = 0;
  r = cu->cuDriverGetVersion(&driver);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuDriverGetVersion", TS_BACKEND_ERROR_UNAVAILABLE, error,
                "cannot read the CUDA driver's version");

  g_autoptr(GError) local = NULL;
  g_autofree char *toolchain = ts_cuda_toolchain(&local);
  if (toolchain == NULL) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "CUDA device %d (%s) is present, but kernels cannot be compiled for it: %s",
                ordinal, name, local->message);
    return FALSE;
  }

  info->backend = g_strdup("cuda");
  info->name = g_strdup(name);
  info->arch = ts_cuda_arch_for_cc(major, minor);
  info->compute_units = (guint)sms;
  info->memory_bytes = memory;
  /* The SM's shared memory is its configurable L1: the figure a tile schedule plans with. */
  info->l1_bytes = (guint64)smem_sm;
  info->l2_bytes = (guint64)l2;
  info->l3_bytes = 0;
  info->smem_per_block = (guint64)smem_block;
  /* The PCI address, unlike the ordinal, names the same GPU whatever CUDA_VISIBLE_DEVICES
   * each process was started with. */
  info->unit = g_strdup_printf("cuda-pci-%04x:%02x:%02x", (unsigned)pci_domain, (unsigned)pci_bus,
                               (unsigned)pci_dev);
  info->vector_bits = 128; /* the widest load/store one thread issues (ld.global.v4.b32) */
  /* The driver JITs nothing here (cubins are SASS), but it is part of the key all the same: a
   * driver update changes what a cubin's timings mean. */
  info->toolchain =
      g_strdup_printf("%s, driver %d.%d", toolchain, driver / 1000, driver % 1000 / 10);
  return TRUE;
}

static gboolean
setup(TsCudaBackend *self, int ordinal, GError **error)
{
  const TsCudaDriver *cu = self->cu;
  CUresult r = cu->cuDeviceGet(&self->device, ordinal);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuDeviceGet", TS_BACKEND_ERROR_UNAVAILABLE, error,
                "no CUDA device: cannot open device %d", ordinal);
  self->ordinal = ordinal;
  CUcontext ctx = NULL;
  r = cu->cuDevicePrimaryCtxRetain(&ctx, self->device);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuDevicePrimaryCtxRetain", TS_BACKEND_ERROR_UNAVAILABLE, error,
                "CUDA device %d is present but unusable (exclusive to another process, or "
                "out of memory)",
                ordinal);
  self->ctx = ctx;
  if (!enter(self, TS_BACKEND_ERROR_UNAVAILABLE, error))
    return FALSE;
  r = cu->cuStreamCreate(&self->stream, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuStreamCreate", TS_BACKEND_ERROR_UNAVAILABLE, error,
                "CUDA device %d is present but unusable", ordinal);
  return describe(self, ordinal, error);
}

static TsBackend *
cuda_open(GError **error)
{
  const TsCudaDriver *cu = ts__cuda_driver(error);
  if (cu == NULL)
    return NULL;
  CUresult r = cu->cuInit(0);
  if (r != CUDA_SUCCESS) {
    g_autofree char *text = ts__cuda_result_text(cu, r);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, "no CUDA device: cuInit: %s",
                text);
    return NULL;
  }
  int count = 0;
  r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) {
    g_autofree char *text = ts__cuda_result_text(cu, r);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "no CUDA device: cuDeviceGetCount: %s", text);
    return NULL;
  }
  if (count <= 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "no CUDA device: the driver is loaded but sees no GPU (check "
                "CUDA_VISIBLE_DEVICES)");
    return NULL;
  }
  guint64 ordinal = 0;
  const char *env = g_getenv("TESSERA_CUDA_DEVICE");
  if (env != NULL && *env != '\0' &&
      !g_ascii_string_to_unsigned(env, 10, 0, (guint64)count - 1, &ordinal, NULL)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "no CUDA device: TESSERA_CUDA_DEVICE='%s' is not a device index; this machine "
                "has %d (0 to %d)",
                env, count, count - 1);
    return NULL;
  }

  TsCudaBackend *self = g_new0(TsCudaBackend, 1);
  self->base.klass = &ts__backend_cuda_class;
  self->cu = cu;
  g_mutex_init(&self->lock);
  self->compiled = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (!setup(self, (int)ordinal, error)) {
    ts__device_info_clear(&self->base.info);
    cuda_close(&self->base);
    return NULL;
  }
  return &self->base;
}

static void
cuda_close(TsBackend *backend)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  const TsCudaDriver *cu = self->cu;
  if (self->ctx != NULL) {
    /* After a sticky error these fail too; the context goes with the process anyway. */
    quiet(self, cu->cuCtxSetCurrent(self->ctx), "cuCtxSetCurrent");
    if (self->flush != 0)
      quiet(self, cu->cuMemFree(self->flush), "cuMemFree");
    for (gsize i = 0; i < G_N_ELEMENTS(self->events); i++)
      if (self->events[i] != NULL)
        quiet(self, cu->cuEventDestroy(self->events[i]), "cuEventDestroy");
    if (self->stream != NULL)
      quiet(self, cu->cuStreamDestroy(self->stream), "cuStreamDestroy");
    quiet(self, cu->cuDevicePrimaryCtxRelease(self->device), "cuDevicePrimaryCtxRelease");
  }
  g_clear_pointer(&self->compiled, g_hash_table_unref);
  g_mutex_clear(&self->lock);
  g_free(self->lost);
  g_free(self);
}

/* ------------------------------------------------------------------------------------------ */
/* compile / load */

static void
cuda_hash_inputs(TsBackend *backend, const TsSource *source, GChecksum *checksum)
{
  ts__cuda_hash_compile_inputs(checksum, backend->info.arch);
}

static gboolean
cuda_compile(TsBackend *backend, const TsSource *source, const char *workdir, const char *out_path,
             char **log, GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  if (source->lang != TS_LANG_CUDA) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE,
                "the cuda backend compiles CUDA sources only; emit the CUDA target for it");
    return FALSE;
  }
  TsModuleResources res;
  g_autofree char *compile_log = NULL;
  g_autoptr(GBytes) cubin =
      ts_cuda_compile(source->text, source->entry, backend->info.arch, &res, &compile_log, error);
  if (cubin == NULL)
    return FALSE;
  gsize len = 0;
  const char *data = g_bytes_get_data(cubin, &len);
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(out_path, data, (gssize)len, &local)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO, "cannot write the cubin: %s",
                local->message);
    return FALSE;
  }
  /* The driver knows registers and memory of a loaded kernel but not its spills, so load()
   * takes them from here. Keyed by the bytes: the cache moves the file between here and load. */
  if (res.registers >= 0) {
    g_mutex_lock(&self->lock);
    g_hash_table_replace(self->compiled, g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, cubin),
                         g_memdup2(&res, sizeof res));
    g_mutex_unlock(&self->lock);
  }
  g_autoptr(GString) out = g_string_new(compile_log);
  if (res.registers >= 0)
    g_string_append_printf(out,
                           "%s%s: %d registers, %d bytes static shared memory, %d bytes stack, "
                           "%d bytes spill stores, %d bytes spill loads",
                           out->len ? "\n" : "", source->entry, res.registers, res.smem_static,
                           res.local_bytes, res.spill_stores, res.spill_loads);
  *log = g_string_free(g_steal_pointer(&out), FALSE);
  return TRUE;
}

/* [offset, offset + len) lies within size bytes; no sum that could wrap. */
static gboolean
fits(guint64 offset, guint64 len, gsize size)
{
  return offset <= size && len <= size - offset;
}

/* The driver parses the cubin in memory, trusting the offsets its headers claim; a cubin cut
 * short in storage would be read past its end. Checking them first turns that into a reason. */
static const char *
check_cubin(const char *data, gsize size, char **detail)
{
  Elf64_Ehdr eh;
  if (size < sizeof eh || memcmp(data, ELFMAG, SELFMAG) != 0)
    return "not a cubin (no ELF header)";
  memcpy(&eh, data, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_CUDA)
    return *detail = g_strdup_printf("not a cubin (ELF machine %u, a cubin is %u)",
                                     (guint)eh.e_machine, (guint)EM_CUDA);
  if ((eh.e_shnum > 0 && eh.e_shentsize != sizeof(Elf64_Shdr)) ||
      (eh.e_phnum > 0 && eh.e_phentsize != sizeof(Elf64_Phdr)) ||
      !fits(eh.e_shoff, (guint64)eh.e_shnum * sizeof(Elf64_Shdr), size) ||
      !fits(eh.e_phoff, (guint64)eh.e_phnum * sizeof(Elf64_Phdr), size))
    return "truncated (its headers reach past the end of the file)";
  for (guint i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, data + eh.e_shoff + (gsize)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_NOBITS && !fits(sh.sh_offset, sh.sh_size, size))
      return *detail = g_strdup_printf("truncated (section %u reaches past the end of the "
                                       "%" G_GSIZE_FORMAT "-byte file)",
                                       i, size);
  }
  for (guint i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, data + eh.e_phoff + (gsize)i * sizeof ph, sizeof ph);
    if (!fits(ph.p_offset, ph.p_filesz, size))
      return "truncated (a segment reaches past the end of the file)";
  }
  return NULL;
}

/* Raises the function's dynamic shared memory limit when a launch needs more than the default. */
static gboolean
allow_smem(TsCudaBackend *self, TsCudaModule *m, const char *entry, guint bytes,
           TsBackendError code, GError **error)
{
  if (bytes <= SMEM_DEFAULT_LIMIT || bytes <= m->smem_opted)
    return TRUE;
  CUresult r = self->cu->cuFuncSetAttribute(
      m->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)MIN(bytes, G_MAXINT));
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)", code, error,
                "kernel '%s' asks for %u bytes of dynamic shared memory; this GPU offers a "
                "block at most %" G_GUINT64_FORMAT " in all",
                entry, bytes, self->base.info.smem_per_block);
  m->smem_opted = bytes;
  return TRUE;
}

static gint
func_attr(TsCudaBackend *self, TsCudaModule *m, CUfunction_attribute attr, const char *call)
{
  int value = -1;
  CUresult r = self->cu->cuFuncGetAttribute(&value, attr, m->function);
  if (r != CUDA_SUCCESS) {
    quiet(self, r, call); /* the figure stays unknown; the kernel still runs */
    return -1;
  }
  return value;
}

/* Copies the module's global `name` (a `what`, for messages) into dst when it holds at most
 * `max` bytes; *bytes is its size, 0 when the module has no such global. */
static gboolean
read_record(TsCudaBackend *self, TsCudaModule *m, const char *name, const char *what, void *dst,
            gsize max, gsize *bytes, GError **error)
{
  const TsCudaDriver *cu = self->cu;
  CUdeviceptr ptr = 0;
  size_t size = 0;
  CUresult r = cu->cuModuleGetGlobal(&ptr, &size, m->module, name);
  *bytes = 0;
  if (r == CUDA_ERROR_NOT_FOUND)
    return TRUE;
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuModuleGetGlobal", TS_BACKEND_ERROR_LOAD, error,
                "cannot find the %s %s", what, name);
  *bytes = size;
  if (size > max)
    return TRUE;
  r = cu->cuMemcpyDtoHAsync(dst, ptr, size, self->stream);
  if (r == CUDA_SUCCESS)
    r = cu->cuStreamSynchronize(self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuMemcpyDtoHAsync", TS_BACKEND_ERROR_LOAD, error,
                "cannot read the %s %s", what, name);
  return TRUE;
}

/* Encodes the kernel's tensor maps for this launch's buffers and dims (ts-cuda-tma.h plans
 * them; the driver writes the descriptors). Host-side work of a few microseconds, outside what
 * any timer measures. */
static gboolean
encode_tma(TsCudaBackend *self, TsCudaModule *m, const TsLaunch *launch, Params *p, GError **error)
{
  TsTmaPlan plans[TS_TMA_MAX_MAPS];
  const char *why = NULL;
  int n = ts_tma_plan(m->tma, m->tma_words, p->args.ints, launch->n_ints, launch->n_buffers, plans,
                      &why);
  if (n < 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH, "launch of %s: %s", m->base.entry,
                why);
    return FALSE;
  }
  static const CUtensorMapDataType by_size[9] = {[1] = CU_TENSOR_MAP_DATA_TYPE_UINT8,
                                                 [2] = CU_TENSOR_MAP_DATA_TYPE_UINT16,
                                                 [4] = CU_TENSOR_MAP_DATA_TYPE_UINT32,
                                                 [8] = CU_TENSOR_MAP_DATA_TYPE_UINT64};
  for (int i = 0; i < n; i++) {
    const TsTmaPlan *t = &plans[i];
    const CUdeviceptr base = p->args.bufs[t->buf];
    if (base % 16 != 0) {
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                  "launch of %s: buffer %u is read through the TMA and must be 16-byte aligned",
                  m->base.entry, t->buf);
      return FALSE;
    }
    const cuuint64_t dims[2] = {t->dim[0], t->dim[1]}, strides[1] = {t->row_stride};
    const cuuint32_t box[2] = {t->box[0], t->box[1]}, steps[2] = {1, 1};
    const CUtensorMapSwizzle swizzle = t->swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                       : t->swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                       : t->swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                                : CU_TENSOR_MAP_SWIZZLE_NONE;
    /* Bytes move as raw bits (the kernel knows their type); out-of-bounds boxes read zeros. */
    CUresult r = self->cu->cuTensorMapEncodeTiled(
        &p->maps[i], by_size[t->elem_bytes], 2, (void *)(uintptr_t)base, dims, strides, box, steps,
        CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
      return fail(self, r, "cuTensorMapEncodeTiled", TS_BACKEND_ERROR_LAUNCH, error,
                  "cannot describe buffer %u of %s (%" G_GUINT64_FORMAT " x %" G_GUINT64_FORMAT
                  " elements, box %u x %u) to the TMA",
                  t->buf, m->base.entry, (guint64)t->dim[1], (guint64)t->dim[0], t->box[1],
                  t->box[0]);
  }
  return TRUE;
}

/* Finds the entry and its launch record in a loaded module. */
static gboolean
resolve(TsCudaBackend *self, TsCudaModule *m, const char *entry, GError **error)
{
  const TsCudaDriver *cu = self->cu;
  CUresult r = cu->cuModuleGetFunction(&m->function, m->module, entry);
  if (r == CUDA_ERROR_NOT_FOUND) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                "entry symbol '%s' not found in the compiled module; the source must define "
                "extern \"C\" __global__ void %s(const TsArgs args)",
                entry, entry);
    return FALSE;
  }
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuModuleGetFunction", TS_BACKEND_ERROR_LOAD, error,
                "cannot find kernel '%s'", entry);

  g_autofree char *record = g_strconcat(entry, "_launch", NULL);
  gsize bytes = 0;
  if (!read_record(self, m, record, "launch record", m->launch, sizeof m->launch, &bytes, error))
    return FALSE;
  if (bytes == 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                "not a Tessera kernel: no %s record; the source must define extern \"C\" "
                "__constant__ unsigned int %s[7] = {grid x, y, z, block x, y, z, dynamic smem "
                "bytes}",
                record, record);
    return FALSE;
  }
  if (bytes != sizeof m->launch) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                "the launch record %s is %zu bytes; it must be 7 unsigned ints (28 bytes)", record,
                bytes);
    return FALSE;
  }

  /* A kernel that reads through the TMA also has a tensor-map record (ts-cuda-tma.h). */
  g_autofree char *tma = g_strconcat(entry, "_tma", NULL);
  if (!read_record(self, m, tma, "tensor-map record", m->tma, sizeof m->tma, &bytes, error))
    return FALSE;
  if (bytes != 0 && (bytes % 4 != 0 || bytes > sizeof m->tma)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                "the tensor-map record %s is %zu bytes; it must be 1 + 8 n unsigned ints for n "
                "<= %d maps",
                tma, bytes, TS_TMA_MAX_MAPS);
    return FALSE;
  }
  m->tma_words = bytes / 4;
  return TRUE;
}

static TsModule *
cuda_load(TsBackend *backend, const char *path, const char *entry, gboolean *bad_artifact,
          GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  const TsCudaDriver *cu = self->cu;
  if (!enter(self, TS_BACKEND_ERROR_LOAD, error))
    return NULL;
  g_autofree char *data = NULL;
  gsize size = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &data, &size, &local)) {
    *bad_artifact = TRUE;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD, "cannot load: %s", local->message);
    return NULL;
  }
  g_autofree char *detail = NULL;
  const char *why = check_cubin(data, size, &detail);
  if (why != NULL) {
    *bad_artifact = TRUE;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD, "cannot load '%s': %s", path, why);
    return NULL;
  }

  CUmodule module = NULL;
  CUresult r = cu->cuModuleLoadData(&module, data);
  if (r != CUDA_SUCCESS) {
    /* Out of memory or a lost context is no fault of the file; anything else is. */
    *bad_artifact = r != CUDA_ERROR_OUT_OF_MEMORY && !ts__cuda_result_is_sticky(r);
    fail(self, r, "cuModuleLoadData", TS_BACKEND_ERROR_LOAD, error, "cannot load '%s'%s", path,
         r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_IMAGE
             ? " (is it built for another GPU architecture?)"
             : "");
    return NULL;
  }
  TsCudaModule *m = g_new0(TsCudaModule, 1);
  m->module = module;
  if (!resolve(self, m, entry, error)) {
    quiet(self, cu->cuModuleUnload(module), "cuModuleUnload");
    g_free(m);
    return NULL;
  }
  /* The record's own size is opted in now so a plain launch cannot fail on it later. */
  if (!allow_smem(self, m, entry, m->launch[6], TS_BACKEND_ERROR_LOAD, error)) {
    quiet(self, cu->cuModuleUnload(module), "cuModuleUnload");
    g_free(m);
    return NULL;
  }

  TsModuleResources *res = &m->base.resources;
  ts__module_resources_init(res);
  res->registers = func_attr(self, m, CU_FUNC_ATTRIBUTE_NUM_REGS, "cuFuncGetAttribute(NUM_REGS)");
  res->smem_static =
      func_attr(self, m, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, "cuFuncGetAttribute(SHARED_SIZE)");
  res->local_bytes =
      func_attr(self, m, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, "cuFuncGetAttribute(LOCAL_SIZE)");
  res->smem_dynamic = (gint)MIN(m->launch[6], (guint32)G_MAXINT);
  guint64 threads = (guint64)m->launch[3] * m->launch[4] * m->launch[5];
  res->threads = (gint)MIN(threads, (guint64)G_MAXINT);
  g_autofree char *key = g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, size);
  g_mutex_lock(&self->lock);
  const TsModuleResources *built = g_hash_table_lookup(self->compiled, key);
  if (built != NULL) {
    res->spill_stores = built->spill_stores;
    res->spill_loads = built->spill_loads;
  }
  g_mutex_unlock(&self->lock);
  return &m->base;
}

static void
cuda_module_free(TsModule *module)
{
  TsCudaModule *m = (TsCudaModule *)module;
  TsCudaBackend *self = (TsCudaBackend *)module->backend;
  /* Also after a sticky error: the driver frees what it still can. */
  quiet(self, self->cu->cuCtxSetCurrent(self->ctx), "cuCtxSetCurrent");
  quiet(self, self->cu->cuModuleUnload(m->module), "cuModuleUnload");
  g_free(m);
}

/* ------------------------------------------------------------------------------------------ */
/* memory */

static TsBuffer *
cuda_alloc(TsBackend *backend, gsize bytes, GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  if (!enter(self, TS_BACKEND_ERROR_MEMORY, error))
    return NULL;
  CUdeviceptr ptr = 0;
  /* cuMemAlloc refuses 0 bytes; an empty buffer still needs an address to pass. */
  CUresult r = self->cu->cuMemAlloc(&ptr, bytes > 0 ? bytes : 1);
  if (r != CUDA_SUCCESS) {
    fail(self, r, "cuMemAlloc", TS_BACKEND_ERROR_MEMORY, error,
         "cannot allocate %" G_GSIZE_FORMAT " bytes on the GPU (%" G_GUINT64_FORMAT
         " bytes in all)",
         bytes, backend->info.memory_bytes);
    return NULL;
  }
  TsCudaBuffer *buffer = g_new0(TsCudaBuffer, 1);
  buffer->base.backend = backend;
  buffer->base.size = bytes;
  buffer->ptr = ptr;
  return &buffer->base;
}

static void
cuda_buffer_free(TsBackend *backend, TsBuffer *buffer)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  TsCudaBuffer *b = (TsCudaBuffer *)buffer;
  quiet(self, self->cu->cuCtxSetCurrent(self->ctx), "cuCtxSetCurrent");
  quiet(self, self->cu->cuMemFree(b->ptr), "cuMemFree");
  g_free(b);
}

/* Copies are issued on our stream and waited for, so they are ordered after our kernels and
 * the host buffer may be reused as soon as they return. */
static gboolean
cuda_upload(TsBackend *backend, TsBuffer *dst, const void *src, gsize bytes, GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  if (!enter(self, TS_BACKEND_ERROR_MEMORY, error))
    return FALSE;
  CUresult r = self->cu->cuMemcpyHtoDAsync(((TsCudaBuffer *)dst)->ptr, src, bytes, self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuMemcpyHtoDAsync", TS_BACKEND_ERROR_MEMORY, error,
                "upload of %" G_GSIZE_FORMAT " bytes", bytes);
  r = self->cu->cuStreamSynchronize(self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuStreamSynchronize", TS_BACKEND_ERROR_MEMORY, error,
                "upload of %" G_GSIZE_FORMAT " bytes", bytes);
  return TRUE;
}

static gboolean
cuda_download(TsBackend *backend, void *dst, const TsBuffer *src, gsize bytes, GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  if (!enter(self, TS_BACKEND_ERROR_MEMORY, error))
    return FALSE;
  CUresult r =
      self->cu->cuMemcpyDtoHAsync(dst, ((const TsCudaBuffer *)src)->ptr, bytes, self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuMemcpyDtoHAsync", TS_BACKEND_ERROR_MEMORY, error,
                "download of %" G_GSIZE_FORMAT " bytes", bytes);
  r = self->cu->cuStreamSynchronize(self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuStreamSynchronize", TS_BACKEND_ERROR_MEMORY, error,
                "download of %" G_GSIZE_FORMAT " bytes", bytes);
  return TRUE;
}

/* ------------------------------------------------------------------------------------------ */
/* launch */

/* The kernel's one by-value argument, and the shape to launch it with: the caller's when it
 * gives a block, else the module's own record. */
static gboolean
prepare(TsCudaBackend *self, TsCudaModule *m, const TsLaunch *launch, Params *params, Shape *shape,
        GError **error)
{
  const char *entry = m->base.entry;
  if (launch->n_buffers > TS__CUDA_MAX_BUFS || launch->n_ints > TS__CUDA_MAX_INTS ||
      launch->n_floats > TS__CUDA_MAX_FLOATS) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "launch of %s: %u buffers, %u ints and %u floats; the CUDA kernel ABI carries "
                "at most %d, %d and %d",
                entry, launch->n_buffers, launch->n_ints, launch->n_floats, TS__CUDA_MAX_BUFS,
                TS__CUDA_MAX_INTS, TS__CUDA_MAX_FLOATS);
    return FALSE;
  }
  memset(params, 0, sizeof *params);
  TsCudaArgs *args = &params->args;
  for (guint i = 0; i < launch->n_buffers; i++)
    args->bufs[i] = ((const TsCudaBuffer *)launch->buffers[i])->ptr;
  for (guint i = 0; i < launch->n_ints; i++)
    args->ints[i] = launch->ints[i];
  for (guint i = 0; i < launch->n_floats; i++)
    args->floats[i] = launch->floats[i];
  if (m->tma_words > 0 && !encode_tma(self, m, launch, params, error))
    return FALSE;

  if (launch->block[0] != 0) {
    for (int d = 0; d < 3; d++) {
      /* An unset y or z means 1, as in a dim3. */
      shape->grid[d] = d > 0 && launch->grid[d] == 0 ? 1 : launch->grid[d];
      shape->block[d] = d > 0 && launch->block[d] == 0 ? 1 : launch->block[d];
    }
    shape->smem = launch->smem_bytes;
  } else {
    for (int d = 0; d < 3; d++) {
      shape->grid[d] = m->launch[d];
      shape->block[d] = m->launch[3 + d];
    }
    shape->smem = m->launch[6];
  }
  for (int d = 0; d < 3; d++) {
    if (shape->grid[d] == 0 || shape->block[d] == 0) {
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                  "launch of %s: grid %ux%ux%u, block %ux%ux%u has an empty dimension", entry,
                  shape->grid[0], shape->grid[1], shape->grid[2], shape->block[0], shape->block[1],
                  shape->block[2]);
      return FALSE;
    }
  }
  return allow_smem(self, m, entry, shape->smem, TS_BACKEND_ERROR_LAUNCH, error);
}

static gboolean
fail_launch(TsCudaBackend *self, TsCudaModule *m, const Shape *s, CUresult r, const char *call,
            const char *when, GError **error)
{
  return fail(self, r, call, TS_BACKEND_ERROR_LAUNCH, error,
              "%s %s (grid %ux%ux%u, block %ux%ux%u, %u bytes dynamic shared memory)", when,
              m->base.entry, s->grid[0], s->grid[1], s->grid[2], s->block[0], s->block[1],
              s->block[2], s->smem);
}

/* Queues one launch; its execution errors surface at the next synchronisation. */
static gboolean
enqueue(TsCudaBackend *self, TsCudaModule *m, Params *p, const Shape *s, GError **error)
{
  void *params[] = {&p->args, p->maps};
  CUresult r =
      self->cu->cuLaunchKernel(m->function, s->grid[0], s->grid[1], s->grid[2], s->block[0],
                               s->block[1], s->block[2], s->smem, self->stream, params, NULL);
  if (r != CUDA_SUCCESS)
    return fail_launch(self, m, s, r, "cuLaunchKernel", "cannot launch", error);
  return TRUE;
}

static gboolean
wait_stream(TsCudaBackend *self, TsCudaModule *m, const Shape *s, GError **error)
{
  CUresult r = self->cu->cuStreamSynchronize(self->stream);
  if (r != CUDA_SUCCESS)
    return fail_launch(self, m, s, r, "cuStreamSynchronize", "failure while running", error);
  return TRUE;
}

static gboolean
cuda_launch(TsBackend *backend, TsModule *module, const TsLaunch *launch, GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  TsCudaModule *m = (TsCudaModule *)module;
  Params args;
  Shape shape;
  return enter(self, TS_BACKEND_ERROR_LAUNCH, error) &&
         prepare(self, m, launch, &args, &shape, error) && enqueue(self, m, &args, &shape, error) &&
         wait_stream(self, m, &shape, error);
}

/* ------------------------------------------------------------------------------------------ */
/* time */

/* A kernel timed right after its previous run finds its inputs in L2 (50 MiB on an H100), and
 * would look faster than it ever runs inside a program. Overwriting twice the L2 before each
 * timed launch evicts them. */
static gboolean
flush_l2(TsCudaBackend *self, guint i, GError **error)
{
  const char *env = g_getenv("TESSERA_L2_FLUSH");
  if (env != NULL && strcmp(env, "0") == 0)
    return TRUE;
  if (self->flush == 0 && self->base.info.l2_bytes > 0) {
    gsize bytes = (gsize)self->base.info.l2_bytes * 2;
    CUresult r = self->cu->cuMemAlloc(&self->flush, bytes);
    if (r != CUDA_SUCCESS)
      return fail(self, r, "cuMemAlloc", TS_BACKEND_ERROR_MEMORY, error,
                  "cannot allocate the %" G_GSIZE_FORMAT "-byte L2 flush buffer (set "
                  "TESSERA_L2_FLUSH=0 to time without flushing)",
                  bytes);
    self->flush_bytes = bytes;
  }
  if (self->flush == 0)
    return TRUE;
  CUresult r = self->cu->cuMemsetD32Async(self->flush, i, self->flush_bytes / 4, self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuMemsetD32Async", TS_BACKEND_ERROR_LAUNCH, error,
                "cannot flush the L2 cache before a timed launch");
  return TRUE;
}

/* Once CUPTI has failed in this process it stays failed; say so once, not on every call. */
static gint events_only = 0;

static void
fall_back_to_events(const char *why)
{
  if (g_atomic_int_compare_and_exchange(&events_only, 0, 1))
    g_message("cuda: timing kernels with CUDA events: %s", why);
}

static gboolean
time_with_events(TsCudaBackend *self, TsCudaModule *m, Params *args, const Shape *s, guint n,
                 double *samples_ns, GError **error)
{
  const TsCudaDriver *cu = self->cu;
  for (gsize i = 0; i < G_N_ELEMENTS(self->events); i++) {
    if (self->events[i] != NULL)
      continue;
    CUresult r = cu->cuEventCreate(&self->events[i], CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS)
      return fail(self, r, "cuEventCreate", TS_BACKEND_ERROR_LAUNCH, error, "cannot time %s",
                  m->base.entry);
  }
  for (guint i = 0; i < n; i++) {
    CUresult r;
    if (!flush_l2(self, i, error))
      return FALSE;
    if ((r = cu->cuEventRecord(self->events[0], self->stream)) != CUDA_SUCCESS)
      return fail_launch(self, m, s, r, "cuEventRecord", "cannot time", error);
    if (!enqueue(self, m, args, s, error))
      return FALSE;
    if ((r = cu->cuEventRecord(self->events[1], self->stream)) != CUDA_SUCCESS)
      return fail_launch(self, m, s, r, "cuEventRecord", "cannot time", error);
    if ((r = cu->cuEventSynchronize(self->events[1])) != CUDA_SUCCESS)
      return fail_launch(self, m, s, r, "cuEventSynchronize", "failure while running", error);
    float ms = 0.0f;
    if ((r = cu->cuEventElapsedTime(&ms, self->events[0], self->events[1])) != CUDA_SUCCESS)
      return fail_launch(self, m, s, r, "cuEventElapsedTime", "cannot time", error);
    samples_ns[i] = (double)ms * 1e6;
  }
  return TRUE;
}

#if TS_HAVE_CUPTI
/* FALSE with *error unset: CUPTI cannot be used; the caller times with events instead. */
static gboolean
time_with_cupti(TsCudaBackend *self, TsCudaModule *m, Params *args, const Shape *s, guint n,
                double *samples_ns, gboolean *ok, GError **error)
{
  g_autoptr(GError) local = NULL;
  if (!ts__cuda_cupti_begin(&local)) {
    fall_back_to_events(local->message);
    return FALSE;
  }
  gboolean launched = TRUE;
  for (guint i = 0; i < n && launched; i++)
    launched = flush_l2(self, i, error) && enqueue(self, m, args, s, error);
  launched = launched && wait_stream(self, m, s, error);
  /* Ends the session even after a failure, so no later launch is recorded by mistake. */
  guint found = 0;
  g_autofree gint64 *starts = self->base.trace ? g_new0(gint64, n) : NULL;
  *ok = ts__cuda_cupti_end(samples_ns, starts, n, &found, &local) && launched;
  /* On a profiled run the GPU's own start and end go on the timeline, on the device's lane. */
  for (guint i = 0; starts && *ok && i < n; i++) {
    TsTraceEvent e = {.kind = TS_TRACE_KERNEL, .name = m->base.entry, .start_ns = starts[i],
                      .dur_ns = (gint64)samples_ns[i], .lane = TS_TRACE_DEVICE_LANE,
                      .detail = "timed (CUPTI)"};
    ts_trace_add(self->base.trace, &e);
  }
  if (launched && found == 0) {
    /* CUPTI took the setup but records nothing (a driver that withholds them): it never will. */
    fall_back_to_events(local != NULL ? local->message : "CUPTI delivers no kernel records");
    return FALSE;
  }
  if (launched && local != NULL)
    g_propagate_error(error, g_steal_pointer(&local));
  return TRUE;
}
#endif

static gboolean
cuda_time(TsBackend *backend, TsModule *module, const TsLaunch *launch, guint n_warmup,
          guint n_samples, double *samples_ns, GError **error)
{
  TsCudaBackend *self = (TsCudaBackend *)backend;
  TsCudaModule *m = (TsCudaModule *)module;
  Params args;
  Shape shape;
  if (!enter(self, TS_BACKEND_ERROR_LAUNCH, error) ||
      !prepare(self, m, launch, &args, &shape, error))
    return FALSE;
  if (self->in_metrics) {
    /* The range profiler owns the counters and replays the work: no flush inside its range (it
     * would count the flush's traffic), no kernel records, and no times to give. */
    for (guint i = 0; i < n_warmup + n_samples; i++)
      if (!enqueue(self, m, &args, &shape, error))
        return FALSE;
    for (guint i = 0; i < n_samples; i++)
      samples_ns[i] = NAN;
    return wait_stream(self, m, &shape, error);
  }
  for (guint i = 0; i < n_warmup; i++)
    if (!enqueue(self, m, &args, &shape, error))
      return FALSE;
  /* A warm-up that faults is reported as such, not as a timing failure. */
  if (!wait_stream(self, m, &shape, error))
    return FALSE;
  if (n_samples == 0)
    return TRUE;

  const char *timer = g_getenv("TESSERA_TIMER");
  gboolean events =
      (timer != NULL && strcmp(timer, "events") == 0) || g_atomic_int_get(&events_only);
#if TS_HAVE_CUPTI
  gboolean ok = FALSE;
  if (!events && time_with_cupti(self, m, &args, &shape, n_samples, samples_ns, &ok, error))
    return ok;
#else
  if (!events)
    fall_back_to_events("this build has no CUPTI headers");
#endif
  return time_with_events(self, m, &args, &shape, n_samples, samples_ns, error);
}

/* ------------------------------------------------------------------------------------------ */
/* hardware metrics, device timeline */

#if TS_HAVE_CUPTI
typedef struct {
  TsCudaBackend *self;
  TsBackendLaunchFunc launch;
  gpointer data;
} MetricsPass;

/* Outside the profiled range: every pass starts with a cold L2, as a timed launch does, and the
 * flush's own traffic is not counted. */
static gboolean
metrics_before_pass(gpointer data, guint pass, GError **error)
{
  MetricsPass *mp = data;
  TsCudaBackend *self = mp->self;
  if (!flush_l2(self, pass, error))
    return FALSE;
  CUresult r = self->cu->cuStreamSynchronize(self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuStreamSynchronize", TS_BACKEND_ERROR_LAUNCH, error,
                "cannot flush the L2 cache before a metrics pass");
  return TRUE;
}

static gboolean
metrics_launch(gpointer data, GError **error)
{
  MetricsPass *mp = data;
  if (!mp->launch(mp->data, error))
    return FALSE;
  /* The pass ends at the range's pop: the work must be finished by then. */
  CUresult r = mp->self->cu->cuStreamSynchronize(mp->self->stream);
  if (r != CUDA_SUCCESS)
    return fail(mp->self, r, "cuStreamSynchronize", TS_BACKEND_ERROR_LAUNCH, error,
                "failure while running a metrics pass");
  return TRUE;
}

#endif /* TS_HAVE_CUPTI */

static gboolean
cuda_collect_metrics(TsBackend *backend, const char *const *metrics, TsBackendLaunchFunc launch,
                     gpointer data, GHashTable *values, GPtrArray *unsupported, GError **error)
{
#if TS_HAVE_CUPTI
  TsCudaBackend *self = (TsCudaBackend *)backend;
  if (!enter(self, TS_BACKEND_ERROR_LAUNCH, error))
    return FALSE;
  MetricsPass mp = {self, launch, data};
  TsCudaMetricsWork work = {
      .before_pass = metrics_before_pass, .launch = metrics_launch, .data = &mp};
  self->in_metrics = TRUE;
  gboolean ok = ts__cuda_metrics_collect(self->ctx, self->ordinal, metrics, &work, values,
                                         unsupported, error);
  self->in_metrics = FALSE;
  return ok;
#else
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED,
              "this build has no CUPTI headers, so no hardware metrics (rebuild with a CUDA "
              "toolkit that has CUPTI)");
  return FALSE;
#endif
}

static void
cuda_trace_changed(TsBackend *backend, TsTrace *trace)
{
#if TS_HAVE_CUPTI
  /* Whoever chose events over CUPTI (TESSERA_TIMER=events: another profiler holds CUPTI) gets
   * no CUPTI records on the timeline either. */
  const char *timer = g_getenv("TESSERA_TIMER");
  if (trace != NULL && ((timer != NULL && strcmp(timer, "events") == 0) ||
                        g_atomic_int_get(&events_only)))
    return;
  ts__cuda_cupti_set_trace(trace);
#endif
}

const TsBackendClass ts__backend_cuda_class = {
    .name = "cuda",
    .artifact_suffix = ".cubin",
    .open = cuda_open,
    .close = cuda_close,
    .hash_inputs = cuda_hash_inputs,
    .compile = cuda_compile,
    .load = cuda_load,
    .module_free = cuda_module_free,
    .alloc = cuda_alloc,
    .buffer_free = cuda_buffer_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .launch = cuda_launch,
    .time = cuda_time,
    .collect_metrics = cuda_collect_metrics,
    .trace_changed = cuda_trace_changed,
    .lost = cuda_lost,
};

/* ------------------------------------------------------------------------------------------ */
/* for libraries that take device memory (ts-cuda.h) */

static gboolean
is_cuda(const TsBackend *backend)
{
  return backend && g_strcmp0(ts_backend_name((TsBackend *)backend), "cuda") == 0;
}

guint64
ts_cuda_buffer_address(const TsBuffer *buffer)
{
  return buffer && is_cuda(buffer->backend) ? (guint64)((const TsCudaBuffer *)buffer)->ptr : 0;
}

void *
ts_cuda_stream(TsBackend *backend)
{
  if (!is_cuda(backend) || !enter((TsCudaBackend *)backend, TS_BACKEND_ERROR_LAUNCH, NULL))
    return NULL;
  return ((TsCudaBackend *)backend)->stream;
}

gboolean
ts_cuda_synchronize(TsBackend *backend, GError **error)
{
  g_return_val_if_fail(is_cuda(backend), FALSE);
  TsCudaBackend *self = (TsCudaBackend *)backend;
  if (!enter(self, TS_BACKEND_ERROR_LAUNCH, error))
    return FALSE;
  CUresult r = self->cu->cuStreamSynchronize(self->stream);
  if (r != CUDA_SUCCESS)
    return fail(self, r, "cuStreamSynchronize", TS_BACKEND_ERROR_LAUNCH, error,
                "failure while a library's work ran");
  return TRUE;
}
