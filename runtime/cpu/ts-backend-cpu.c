/* ts-backend-cpu.c — the "cpu" backend: describes the host, compiles generated C with the
 * system compiler ($TS_CC, else cc) into a shared object that is dlopen'ed, allocates aligned
 * host memory and times kernels with the monotonic clock. The shared parts (cache, keys,
 * checks) live in ts-backend.c; this file only talks to the host and its compiler.
 */
#include "config.h"

#include "ts-backend-private.h"
#include "ts-cpu-pch.h"
#include "ts-runtime-resources.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <glib/gstdio.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#endif

/* The kernel ABI (ts-backend.h). */
typedef void (*TsCpuEntry)(void *const *bufs, const int64_t *ints, const double *floats);
G_STATIC_ASSERT(sizeof(gint64) == sizeof(int64_t));

#define PRIMS_RESOURCE "/org/tessera/runtime/cpu/ts_cpu_prims.h"
#define PRIMS_NAME "ts_cpu_prims.h"

/* 64 bytes: one cache line on every x86-64 and most aarch64 cores, and the width of an AVX-512
 * register, so aligned vector loads never split a line. */
#define BUFFER_ALIGN 64

/* Every buffer is followed by a guard of this many bytes in a known pattern, checked after each
 * launch: a kernel that writes past the end of a buffer (a tail loop one vector too far) has
 * scribbled over memory the process still uses, the CPU's counterpart of a GPU's illegal
 * address, so the backend refuses further work (ts_backend_lost) and the tuner's worker is
 * replaced. 256 bytes: four AVX-512 stores past the end. */
#define GUARD_BYTES 256
#define GUARD_BYTE 0xa5

/* Fixed flags; -march=native makes the artifact host-specific, so the host's model name and
 * arch string go into the cache key as well (hash_inputs). */
static const char *const cc_flags[] = {
  "-O3", "-march=native", "-fPIC", "-shared", "-fopenmp", "-std=gnu17", "-ffp-contract=fast",
};

typedef struct {
  TsBackend base;
  char **cc_argv;     /* $TS_CC split like a shell would ("ccache gcc" works), or {"cc"} */
  char *cc_name;      /* how messages call the compiler: "cc" */
  char *version_line; /* first line of `cc --version`, part of the cache key */
  gboolean is_gcc;    /* GCC finds precompiled headers (ts-cpu-pch.c) */
  GBytes *prims;      /* the embedded tile-primitive header */
  char *lost;         /* why the process's memory can no longer be trusted, or NULL */
} TsCpuBackend;

typedef struct {
  TsModule base;
  void *handle;
  TsCpuEntry entry;
} TsCpuModule;

typedef struct {
  TsBuffer base;
  void *data;
} TsCpuBuffer;

/* ------------------------------------------------------------------------------------------ */
/* describe */

static char *
proc_model_name(void)
{
  g_autofree char *text = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL)) {
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l != NULL; l++) {
      /* x86 says "model name"; some aarch64 kernels only say "Hardware". */
      if (g_str_has_prefix(*l, "model name") || g_str_has_prefix(*l, "Hardware")) {
        const char *colon = strchr(*l, ':');
        if (colon != NULL && colon[1] != '\0')
          return g_strstrip(g_strdup(colon + 1));
      }
    }
  }
  return g_strdup("unknown");
}

/* The model name, and on x86 the core's family and model from CPUID: "AMD EPYC (family 25,
 * model 1)". The device's name keys its ceilings, the schedule cache and the check that MPI
 * ranks share a device, and a VM's name alone can hide the core: KVM guests of a Zen 1 and of
 * a Zen 3 host both say "AMD EPYC" (this project's CI VMs are both), with the same feature
 * list, at 39 and 102 GFLOP/s of f32 FMAs a core and with different best schedules. */
static char *
cpu_model_name(void)
{
  g_autofree char *name = proc_model_name();
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    guint family, model;
    ts__x86_family_model(eax, &family, &model);
    return g_strdup_printf("%s (family %u, model %u)", name, family, model);
  }
#endif
  return g_steal_pointer(&name);
}

void
ts__x86_family_model(guint32 signature, guint *family, guint *model)
{
  /* The extended fields add to family 15 and extend the model of families 6 and 15 up (Intel's
   * SDM and AMD's APM, CPUID leaf 1, alike). */
  guint f = (signature >> 8) & 0xfu, m = (signature >> 4) & 0xfu;
  if (f == 0xfu)
    f += (signature >> 20) & 0xffu;
  if (f == 0x6u || f >= 0xfu)
    m += ((signature >> 16) & 0xfu) << 4;
  *family = f;
  *model = m;
}

/* "48K", "1M", "32768" → bytes. */
static guint64
parse_cache_size(const char *text)
{
  char *end = NULL;
  guint64 value = g_ascii_strtoull(text, &end, 10);
  if (end != NULL && (*end == 'K' || *end == 'k'))
    value *= 1024;
  else if (end != NULL && (*end == 'M' || *end == 'm'))
    value *= 1024 * 1024;
  return value;
}

static guint64
sysfs_cache_size(int want_level)
{
  const char *base = "/sys/devices/system/cpu/cpu0/cache";
  g_autoptr(GDir) dir = g_dir_open(base, 0, NULL);
  if (dir == NULL)
    return 0;
  const char *name;
  while ((name = g_dir_read_name(dir)) != NULL) {
    if (!g_str_has_prefix(name, "index"))
      continue;
    g_autofree char *level_path = g_build_filename(base, name, "level", NULL);
    g_autofree char *type_path = g_build_filename(base, name, "type", NULL);
    g_autofree char *size_path = g_build_filename(base, name, "size", NULL);
    g_autofree char *level = NULL, *type = NULL, *size = NULL;
    if (!g_file_get_contents(level_path, &level, NULL, NULL) ||
        !g_file_get_contents(type_path, &type, NULL, NULL) ||
        !g_file_get_contents(size_path, &size, NULL, NULL))
      continue;
    if (atoi(level) != want_level || g_str_has_prefix(type, "Instruction"))
      continue;
    return parse_cache_size(g_strstrip(size));
  }
  return 0;
}

static guint64
cache_size(int level)
{
  long value = -1;
  switch (level) {
#ifdef _SC_LEVEL1_DCACHE_SIZE
  case 1: value = sysconf(_SC_LEVEL1_DCACHE_SIZE); break;
  case 2: value = sysconf(_SC_LEVEL2_CACHE_SIZE); break;
  case 3: value = sysconf(_SC_LEVEL3_CACHE_SIZE); break;
#endif
  default: break;
  }
  /* sysfs first: it describes the cache instance a core actually shares (a Zen CCX's 32 MiB L3),
   * where glibc's sysconf may report the whole package's (384 MiB seen on a Zen 5 VM), which
   * would put the "L3" roof and blocking decisions at DRAM sizes. glibc is the fallback: sysfs
   * is missing in some containers. */
  guint64 sysfs = sysfs_cache_size(level);
  return sysfs > 0 ? sysfs : value > 0 ? (guint64)value : 0;
}

#if defined(__x86_64__) || defined(__i386__)
/* AMX's tile data is state the kernel must support (and hand out, on request) before a tile
 * instruction runs; a kernel or hypervisor without it leaves the CPUID bit set but faults. */
static gboolean
amx_state_supported(void)
{
#if defined(__x86_64__) && defined(__linux__)
  unsigned long features = 0;
  return syscall(SYS_arch_prctl, 0x1021 /* ARCH_GET_XCOMP_SUPP */, &features) == 0 &&
         (features & (1ul << 18)) != 0; /* XFEATURE_XTILEDATA */
#else
  return FALSE;
#endif
}
#endif

static char *
host_arch(guint *vector_bits)
{
  struct utsname u;
  g_autoptr(GString) arch = g_string_new(uname(&u) == 0 ? u.machine : "unknown");
  *vector_bits = 0; /* unknown ISA: marked, not guessed */
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  *vector_bits = 128; /* SSE2 is the x86-64 baseline */
  if (__builtin_cpu_supports("avx2"))
    g_string_append(arch, "+avx2");
  if (__builtin_cpu_supports("fma"))
    g_string_append(arch, "+fma");
  /* F16C from CPUID itself (leaf 1, ECX bit 29): clang's __builtin_cpu_supports does not
   * know the name. */
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)))
    g_string_append(arch, "+f16c");
  if (__builtin_cpu_supports("avx512f"))
    g_string_append(arch, "+avx512f");
  if (__builtin_cpu_supports("avx512bw"))
    g_string_append(arch, "+avx512bw");
  if (__builtin_cpu_supports("avx512vl"))
    g_string_append(arch, "+avx512vl");
  /* The 16-bit float extensions, from CPUID (leaf 7; not every compiler's
   * __builtin_cpu_supports knows them): AVX512_BF16 is subleaf 1 EAX bit 5; AVX512_FP16 and
   * AMX-BF16 are subleaf 0 EDX bits 23 and 22. Generated code uses what -march=native enables;
   * the names tell a user (and the cache key) which machine a result came from. */
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) && (eax & (1u << 5)))
    g_string_append(arch, "+avx512bf16");
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    if (edx & (1u << 23))
      g_string_append(arch, "+avx512fp16");
    if ((edx & (1u << 22)) && amx_state_supported())
      g_string_append(arch, "+amxbf16");
  }
  if (__builtin_cpu_supports("avx"))
    *vector_bits = 256;
  if (__builtin_cpu_supports("avx512f"))
    *vector_bits = 512;
#elif defined(__aarch64__)
  g_string_append(arch, "+neon"); /* mandatory in ARMv8-A */
  *vector_bits = 128;
#if defined(__linux__) && defined(HWCAP_SVE)
  if (getauxval(AT_HWCAP) & HWCAP_SVE)
    g_string_append(arch, "+sve");
#endif
#endif
  return g_string_free(g_steal_pointer(&arch), FALSE);
}

/* "gcc 12.2.0" / "clang 16.0.6": the family from `cc --version` (its first line names the
 * vendor, or just "cc" for gcc; clang's always says "clang"), the version from
 * -dumpfullversion (gcc's full x.y.z; clang falls back to -dumpversion). */
static char *
toolchain_identity(TsCpuBackend *self)
{
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_strv_builder_addv(b, (const char **)self->cc_argv);
  g_strv_builder_add(b, "--version");
  g_auto(GStrv) argv = g_strv_builder_end(b);
  g_autofree char *out = NULL;
  int status = -1;
  if (!ts__run_capture((const char *const *)argv, NULL, NULL, &out, &status, NULL) ||
      status != 0)
    return g_strdup("unknown");
  g_auto(GStrv) lines = g_strsplit(out, "\n", 2);
  self->version_line = g_strdup(g_strstrip(lines[0]));
  const char *family = strstr(out, "clang") != NULL ? "clang"
                       : (strstr(out, "Free Software Foundation") != NULL || strstr(out, "gcc"))
                         ? "gcc"
                         : self->cc_name;
  self->is_gcc = strcmp(family, "gcc") == 0;

  g_autofree char *version = NULL;
  const char *probes[] = { "-dumpfullversion", "-dumpversion" };
  for (gsize i = 0; i < G_N_ELEMENTS(probes) && version == NULL; i++) {
    g_autoptr(GStrvBuilder) pb = g_strv_builder_new();
    g_strv_builder_addv(pb, (const char **)self->cc_argv);
    g_strv_builder_add(pb, probes[i]);
    g_auto(GStrv) pargv = g_strv_builder_end(pb);
    g_autofree char *v = NULL;
    if (ts__run_capture((const char *const *)pargv, NULL, NULL, &v, &status, NULL) &&
        status == 0 && *g_strstrip(v) != '\0' && strchr(v, '\n') == NULL)
      version = g_steal_pointer(&v);
  }
  if (version == NULL)
    return g_strdup(self->version_line);
  return g_strdup_printf("%s %s", family, version);
}

/* ------------------------------------------------------------------------------------------ */
/* open / close */

static TsBackend *
cpu_open(GError **error)
{
  g_autoptr(GBytes) prims = g_resource_lookup_data(ts_runtime_get_resource(), PRIMS_RESOURCE,
                                                   G_RESOURCE_LOOKUP_FLAGS_NONE, error);
  if (prims == NULL)
    return NULL; /* a build mistake, not a host property */

  TsCpuBackend *self = g_new0(TsCpuBackend, 1);
  self->base.klass = &ts__backend_cpu_class;
  self->prims = g_steal_pointer(&prims);

  const char *env_cc = g_getenv("TS_CC");
  if (env_cc != NULL && *env_cc != '\0' && !g_shell_parse_argv(env_cc, NULL, &self->cc_argv, NULL))
    g_clear_pointer(&self->cc_argv, g_strfreev);
  if (self->cc_argv == NULL) {
    self->cc_argv = g_new0(char *, 2);
    self->cc_argv[0] = g_strdup("cc");
  }
  self->cc_name = g_strjoinv(" ", self->cc_argv);

  TsDeviceInfo *info = &self->base.info;
  info->backend = g_strdup("cpu");
  info->name = cpu_model_name();
  info->arch = host_arch(&info->vector_bits);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  info->compute_units = cores > 0 ? (guint)cores : 1;
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  info->memory_bytes = pages > 0 && page > 0 ? (guint64)pages * (guint64)page : 0;
  info->l1_bytes = cache_size(1);
  info->l2_bytes = cache_size(2);
  info->l3_bytes = cache_size(3);
  info->smem_per_block = 0;
  info->toolchain = toolchain_identity(self);
  info->unit = g_strdup("host");
  return &self->base;
}

static void
cpu_close(TsBackend *backend)
{
  TsCpuBackend *self = (TsCpuBackend *)backend;
  g_strfreev(self->cc_argv);
  g_free(self->cc_name);
  g_free(self->version_line);
  g_clear_pointer(&self->prims, g_bytes_unref);
  g_free(self->lost);
  g_free(self);
}

/* ------------------------------------------------------------------------------------------ */
/* compile / load */

static void
cpu_hash_inputs(TsBackend *backend, const TsSource *source, GChecksum *checksum)
{
  TsCpuBackend *self = (TsCpuBackend *)backend;
  for (char **a = self->cc_argv; *a != NULL; a++)
    ts__checksum_field(checksum, *a, -1);
  ts__checksum_field(checksum, self->version_line, -1);
  for (gsize i = 0; i < G_N_ELEMENTS(cc_flags); i++)
    ts__checksum_field(checksum, cc_flags[i], -1);
  ts__checksum_field(checksum, backend->info.name, -1);
  ts__checksum_field(checksum, backend->info.arch, -1);
  gsize len = 0;
  const void *data = g_bytes_get_data(self->prims, &len);
  ts__checksum_field(checksum, data, (gssize)len);
}

static gboolean
write_file(const char *dir, const char *name, const void *data, gsize len, GError **error)
{
  g_autofree char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GError) local = NULL;
  if (g_file_set_contents(path, data, (gssize)len, &local))
    return TRUE;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO, "cannot write '%s': %s", path,
              local->message);
  return FALSE;
}

/* cc FLAGS [-include PCH] -I workdir -o out_path [src.c] [objects] [link_args]: the text as
 * src.c; without one, a link of the objects. */
static gboolean
run_cc(TsCpuBackend *self, const char *workdir, const char *text, const char *pch_header,
       GPtrArray *objects, GPtrArray *link_args, const char *out_path, char **log,
       GError **error)
{
  if (text != NULL && !write_file(workdir, "src.c", text, strlen(text), error))
    return FALSE;
  g_autofree char *include = g_strconcat("-I", workdir, NULL);
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  for (char **a = self->cc_argv; *a != NULL; a++)
    g_ptr_array_add(argv, *a);
  for (gsize i = 0; i < G_N_ELEMENTS(cc_flags); i++)
    g_ptr_array_add(argv, (gpointer)cc_flags[i]);
  if (pch_header != NULL) {
    g_ptr_array_add(argv, "-Winvalid-pch");
    g_ptr_array_add(argv, "-include");
    g_ptr_array_add(argv, (gpointer)pch_header);
  }
  g_ptr_array_add(argv, include);
  g_ptr_array_add(argv, "-o");
  g_ptr_array_add(argv, (gpointer)out_path);
  if (text != NULL)
    g_ptr_array_add(argv, "src.c");
  for (guint i = 0; objects != NULL && i < objects->len; i++)
    g_ptr_array_add(argv, g_ptr_array_index(objects, i));
  for (guint i = 0; link_args != NULL && i < link_args->len; i++)
    g_ptr_array_add(argv, g_ptr_array_index(link_args, i));
  g_ptr_array_add(argv, NULL);

  /* LC_ALL=C: diagnostics in English with ASCII quotes, so the tuner and the DB can classify
   * them and the same error reads the same on every machine. */
  static const char *const env[] = { "LC_ALL=C", NULL };
  g_autofree char *output = NULL;
  int status = -1;
  g_autoptr(GError) local = NULL;
  if (!ts__run_capture((const char *const *)argv->pdata, workdir, env, &output, &status,
                       &local)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE,
                "cannot run the C compiler '%s': %s; install one or set TS_CC", self->cc_name,
                local->message);
    return FALSE;
  }
  if (status != 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE, "%s failed (exit %d):\n%s",
                self->cc_name, status, output);
    return FALSE;
  }
  *log = g_steal_pointer(&output);
  return TRUE;
}

static gboolean
cpu_compile(TsBackend *backend, const TsSource *source, const char *workdir,
            const char *out_path, char **log, GError **error)
{
  TsCpuBackend *self = (TsCpuBackend *)backend;
  if (source->lang != TS_LANG_C) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_COMPILE,
                "the cpu backend compiles C sources only; emit the C target for it");
    return FALSE;
  }
  gsize prims_len = 0;
  const void *prims = g_bytes_get_data(self->prims, &prims_len);
  if (!write_file(workdir, PRIMS_NAME, prims, prims_len, error))
    return FALSE;

  TsCpuPchSpec pch = {
      .cc_argv = (const char *const *)self->cc_argv,
      .version_line = self->version_line,
      .host_name = backend->info.name,
      .host_arch = backend->info.arch,
      .is_gcc = self->is_gcc,
      .flags = cc_flags,
      .n_flags = G_N_ELEMENTS(cc_flags),
      .prims = self->prims,
      .cache_dir = ts_backend_get_cache_dir(backend),
  };
  int vec = ts__cpu_pch_source_vec(source->text);
  /* Its micro-kernels compiled once for all the kernels that use them, its driver once for all
   * that differ only in those: a kernel is then at most a micro-kernel and a link. */
  g_autoptr(GPtrArray) objects = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) link_args = g_ptr_array_new_with_free_func(g_free);
  const gboolean split =
    vec > 0 && ts__cpu_split(&pch, vec, source->text, source->entry, objects, link_args, NULL);
  if (split) {
    g_autoptr(GError) link_error = NULL;
    if (run_cc(self, workdir, NULL, NULL, objects, link_args, out_path, log, &link_error))
      return TRUE;
  }
  /* Else the source whole, with the primitives precompiled where the compiler and the source
   * allow it (the same code, in about two thirds of the time). It decides: its error is the
   * one to report, and if it builds after a failed link, a cached object was at fault (damaged
   * in storage): gone, it is built again when next used. */
  g_autofree char *pch_header = vec > 0 ? ts__cpu_pch_header(&pch, vec, NULL) : NULL;
  if (!run_cc(self, workdir, source->text, pch_header, NULL, NULL, out_path, log, error))
    return FALSE;
  for (guint i = 0; split && i < objects->len; i++)
    g_unlink(g_ptr_array_index(objects, i));
  return TRUE;
}

/* A kernel built with -fopenmp pulls the OpenMP runtime in with it, and that runtime keeps a
 * pool of parked worker threads. If dlclose() of the last kernel unloaded the runtime too, those
 * threads would wake up in unmapped code and crash the process. So once a runtime is loaded we
 * mark it RTLD_NODELETE (RTLD_NOLOAD: never loads anything itself); kernels still unload. */
static void
pin_openmp_runtime(void)
{
  static const char *const runtimes[] = { "libgomp.so.1", "libomp.so.5", "libomp.so",
                                          "libiomp5.so" };
  for (gsize i = 0; i < G_N_ELEMENTS(runtimes); i++) {
    void *h = dlopen(runtimes[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (h != NULL)
      dlclose(h); /* drops our reference; NODELETE keeps it mapped */
  }
}

#if defined(__x86_64__)
#define HOST_ELF_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_ELF_MACHINE EM_AARCH64
#elif defined(__i386__)
#define HOST_ELF_MACHINE EM_386
#elif defined(__powerpc64__)
#define HOST_ELF_MACHINE EM_PPC64
#elif defined(__riscv)
#define HOST_ELF_MACHINE EM_RISCV
#else
#define HOST_ELF_MACHINE EM_NONE /* unknown: dlopen alone judges the machine */
#endif

/* dlopen maps segments by the sizes the program headers claim, so a truncated shared object
 * (an artifact cut short in storage or transfer) gets SIGBUS inside dlopen instead of an error.
 * Checking the headers against the file first turns that into a reason, and also names a
 * foreign artifact's architecture. */
static gboolean
check_elf(const char *path, GError **error)
{
  g_autofree char *data = NULL;
  gsize size = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &data, &size, &local)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD, "cannot load: %s",
                local->message);
    return FALSE;
  }
  const char *why = NULL;
  g_autofree char *detail = NULL;
  ElfW(Ehdr) eh;
  if (size < sizeof eh || memcmp(data, ELFMAG, SELFMAG) != 0) {
    why = "not an ELF file";
  } else {
    memcpy(&eh, data, sizeof eh);
    guint64 ph_end = (guint64)eh.e_phoff + (guint64)eh.e_phnum * eh.e_phentsize;
    guint64 sh_end =
      eh.e_shoff == 0 ? 0 : (guint64)eh.e_shoff + (guint64)eh.e_shnum * eh.e_shentsize;
    if (eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        eh.e_ident[EI_DATA] != (G_BYTE_ORDER == G_LITTLE_ENDIAN ? ELFDATA2LSB : ELFDATA2MSB))
      why = "an ELF file for another word size or byte order";
    else if (HOST_ELF_MACHINE != EM_NONE && eh.e_machine != HOST_ELF_MACHINE)
      why = detail = g_strdup_printf("built for ELF machine %u, this host is %u",
                                     (guint)eh.e_machine, (guint)HOST_ELF_MACHINE);
    else if (eh.e_type != ET_DYN)
      why = "not a shared object";
    else if (eh.e_phentsize != sizeof(ElfW(Phdr)) || ph_end > size || sh_end > size)
      why = "truncated (its headers reach past the end of the file)";
    for (guint i = 0; why == NULL && i < eh.e_phnum; i++) {
      ElfW(Phdr) ph;
      memcpy(&ph, data + eh.e_phoff + (gsize)i * sizeof ph, sizeof ph);
      if ((guint64)ph.p_offset + ph.p_filesz > size)
        why = detail = g_strdup_printf("truncated (a segment ends at byte %" G_GUINT64_FORMAT
                                       " of a %" G_GSIZE_FORMAT "-byte file)",
                                       (guint64)ph.p_offset + ph.p_filesz, size);
    }
  }
  if (why == NULL)
    return TRUE;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD, "cannot load '%s': %s", path, why);
  return FALSE;
}

static TsModule *
cpu_load(TsBackend *backend, const char *path, const char *entry, gboolean *bad_artifact,
         GError **error)
{
  if (!check_elf(path, error)) {
    *bad_artifact = TRUE;
    return NULL;
  }
  void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *why = dlerror();
    *bad_artifact = TRUE;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD, "cannot load '%s': %s", path,
                why != NULL ? why : "unknown dlopen error");
    return NULL;
  }
  pin_openmp_runtime();
  dlerror();
  void *sym = dlsym(handle, entry);
  if (sym == NULL) {
    dlclose(handle);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LOAD,
                "entry symbol '%s' not found in the compiled module; the source must define "
                "a non-static function '%s'",
                entry, entry);
    return NULL;
  }
  TsCpuModule *module = g_new0(TsCpuModule, 1);
  ts__module_resources_init(&module->base.resources);
  module->handle = handle;
  /* POSIX guarantees data and function pointers convert through dlsym's void *. */
  *(void **)&module->entry = sym;
  return &module->base;
}

static void
cpu_module_free(TsModule *module)
{
  TsCpuModule *self = (TsCpuModule *)module;
  if (self->handle != NULL)
    dlclose(self->handle);
  g_free(self);
}

/* ------------------------------------------------------------------------------------------ */
/* memory */

static TsBuffer *
cpu_alloc(TsBackend *backend, gsize bytes, GError **error)
{
  /* Refuse what the host cannot hold instead of letting the allocator overcommit (or ASan
   * abort) on a size computed from a bad shape. */
  if (backend->info.memory_bytes > 0 && bytes > backend->info.memory_bytes) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY,
                "cannot allocate %" G_GSIZE_FORMAT " bytes: the host has %" G_GUINT64_FORMAT
                " bytes of RAM",
                bytes, backend->info.memory_bytes);
    return NULL;
  }
  void *data = NULL;
  int rc = posix_memalign(&data, BUFFER_ALIGN, bytes + GUARD_BYTES);
  if (rc != 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_MEMORY,
                "cannot allocate %" G_GSIZE_FORMAT " bytes: %s", bytes, g_strerror(rc));
    return NULL;
  }
  memset((char *)data + bytes, GUARD_BYTE, GUARD_BYTES);
  TsCpuBuffer *buffer = g_new0(TsCpuBuffer, 1);
  buffer->base.backend = backend;
  buffer->base.size = bytes;
  buffer->data = data;
  return &buffer->base;
}

static void
cpu_buffer_free(TsBackend *backend, TsBuffer *buffer)
{
  TsCpuBuffer *self = (TsCpuBuffer *)buffer;
  free(self->data);
  g_free(self);
}

static gboolean
cpu_upload(TsBackend *backend, TsBuffer *dst, const void *src, gsize bytes, GError **error)
{
  memcpy(((TsCpuBuffer *)dst)->data, src, bytes);
  return TRUE;
}

static gboolean
cpu_download(TsBackend *backend, void *dst, const TsBuffer *src, gsize bytes, GError **error)
{
  memcpy(dst, ((const TsCpuBuffer *)src)->data, bytes);
  return TRUE;
}

/* ------------------------------------------------------------------------------------------ */
/* launch / time */

/* Up to 16 buffers live on the stack; more go to the heap (no op has that many yet). */
typedef struct {
  void *stack[16];
  void **ptrs;
} BufferPtrs;

static void *const *
collect_ptrs(BufferPtrs *p, const TsLaunch *launch)
{
  p->ptrs = launch->n_buffers <= G_N_ELEMENTS(p->stack) ? p->stack
                                                        : g_new(void *, launch->n_buffers);
  for (guint i = 0; i < launch->n_buffers; i++)
    p->ptrs[i] = ((TsCpuBuffer *)launch->buffers[i])->data;
  return p->ptrs;
}

static void
release_ptrs(BufferPtrs *p)
{
  if (p->ptrs != p->stack)
    g_free(p->ptrs);
}

static gint64
clock_ns(clockid_t clock)
{
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (gint64)ts.tv_sec * G_GINT64_CONSTANT(1000000000) + ts.tv_nsec;
}

static gint64
now_ns(void)
{
  return clock_ns(CLOCK_MONOTONIC);
}

/* A kernel on the CPU runs in the calling thread (and its OpenMP team): its event goes on the
 * caller's lane, inside whatever range the caller has open. */
static void
record_kernel(TsBackend *backend, TsModule *module, gint64 t0, gint64 t1, const char *detail)
{
  ts_trace_add_host(backend->trace, TS_TRACE_KERNEL, module->entry, t0, t1 - t0, 0, 0, detail);
}

/* After the kernel: every buffer's guard intact, or the backend is lost (see GUARD_BYTES). */
static gboolean
check_guards(TsBackend *backend, TsModule *module, const TsLaunch *launch, GError **error)
{
  TsCpuBackend *self = (TsCpuBackend *)backend;
  for (guint i = 0; i < launch->n_buffers; i++) {
    const TsCpuBuffer *b = (const TsCpuBuffer *)launch->buffers[i];
    const guint8 *guard = (const guint8 *)b->data + b->base.size;
    gsize g = 0;
    while (g < GUARD_BYTES && guard[g] == GUARD_BYTE)
      g++;
    if (g == GUARD_BYTES)
      continue;
    gsize last = GUARD_BYTES;
    while (last > g && guard[last - 1] == GUARD_BYTE)
      last--;
    g_free(self->lost);
    self->lost = g_strdup_printf("kernel %s wrote past the end of buffer %u (%" G_GSIZE_FORMAT
                                 " bytes), %" G_GSIZE_FORMAT " to %" G_GSIZE_FORMAT
                                 " bytes beyond it: memory outside the kernel's buffers may be "
                                 "corrupt", module->entry, i, b->base.size, g + 1, last);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH, "%s; restart the process",
                self->lost);
    return FALSE;
  }
  return TRUE;
}

static gboolean
refuse_if_lost(TsBackend *backend, GError **error)
{
  TsCpuBackend *self = (TsCpuBackend *)backend;
  if (self->lost == NULL)
    return TRUE;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
              "an earlier %s; restart the process", self->lost);
  return FALSE;
}

static const char *
cpu_lost(TsBackend *backend)
{
  return ((TsCpuBackend *)backend)->lost;
}

static gboolean
cpu_launch(TsBackend *backend, TsModule *module, const TsLaunch *launch, GError **error)
{
  if (!refuse_if_lost(backend, error))
    return FALSE;
  BufferPtrs p;
  void *const *bufs = collect_ptrs(&p, launch);
  gint64 t0 = now_ns();
  ((TsCpuModule *)module)->entry(bufs, (const int64_t *)(const void *)launch->ints,
                                 launch->floats);
  if (backend->trace)
    record_kernel(backend, module, t0, now_ns(), "launch");
  release_ptrs(&p);
  return check_guards(backend, module, launch, error);
}

/* The pointer array is built once so the timed region holds only the call. The CPU clocks are
 * system calls (the process clock walks every thread), so they are read outside the wall
 * clock's pair, which times the call alone. */
static gboolean
cpu_time_cpu(TsBackend *backend, TsModule *module, const TsLaunch *launch, guint n_warmup,
             guint n_samples, double *samples_ns, TsCpuTime *cpu, GError **error)
{
  if (!refuse_if_lost(backend, error))
    return FALSE;
  TsCpuEntry entry = ((TsCpuModule *)module)->entry;
  BufferPtrs p;
  void *const *bufs = collect_ptrs(&p, launch);
  const int64_t *ints = (const int64_t *)(const void *)launch->ints;
  for (guint i = 0; i < n_warmup; i++) {
    gint64 t0 = now_ns();
    entry(bufs, ints, launch->floats);
    if (backend->trace)
      record_kernel(backend, module, t0, now_ns(), "warm-up");
  }
  for (guint i = 0; i < n_samples; i++) {
    gint64 c0 = 0, p0 = 0;
    if (cpu) {
      p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
      c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    }
    gint64 t0 = now_ns();
    entry(bufs, ints, launch->floats);
    gint64 t1 = now_ns();
    samples_ns[i] = (double)(t1 - t0);
    if (cpu) {
      cpu[i].thread_ns = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0);
      cpu[i].process_ns = (double)(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0);
    }
    if (backend->trace)
      record_kernel(backend, module, t0, t1, "timed");
  }
  release_ptrs(&p);
  /* Checked once after the batch: the samples time the kernel alone. */
  return check_guards(backend, module, launch, error);
}

static gboolean
cpu_time(TsBackend *backend, TsModule *module, const TsLaunch *launch, guint n_warmup,
         guint n_samples, double *samples_ns, GError **error)
{
  return cpu_time_cpu(backend, module, launch, n_warmup, n_samples, samples_ns, NULL, error);
}

const TsBackendClass ts__backend_cpu_class = {
  .name = "cpu",
  .artifact_suffix = ".so",
  .open = cpu_open,
  .close = cpu_close,
  .hash_inputs = cpu_hash_inputs,
  .compile = cpu_compile,
  .load = cpu_load,
  .module_free = cpu_module_free,
  .alloc = cpu_alloc,
  .buffer_free = cpu_buffer_free,
  .upload = cpu_upload,
  .download = cpu_download,
  .launch = cpu_launch,
  .time = cpu_time,
  .time_cpu = cpu_time_cpu,
  .lost = cpu_lost,
};
