/* ts-cuda.h — the CUDA toolchain without a device: compile generated CUDA C for an arch through
 * NVRTC and nvJitLink (both dlopen'ed; neither needs a driver) and read what the kernel uses.
 * This is what CI checks every schedule point with, and what the cuda backend compiles with.
 *
 * Sources are self-contained: they include "ts_cuda_prims.cuh" (the CUDA tile-primitive library,
 * embedded in the binary and handed to NVRTC as an in-memory header) and nothing from the CUDA
 * toolkit, so compiling needs only libnvrtc and libnvJitLink, found as libnvrtc.so.13 /
 * libnvJitLink.so.13 on the loader path, then under $CUDA_HOME/lib64, then under the toolkit the
 * build was configured with (-Dcuda-home, /usr/local/cuda by default). Each is loaded once per
 * process; all functions are thread-safe. Errors are TS_BACKEND_ERROR (UNAVAILABLE when a library
 * is missing or the build had no CUDA headers, COMPILE with the compiler's log). */
#pragma once

#include "ts-backend.h"

G_BEGIN_DECLS

/* What is known about a GPU architecture without a device: enough to check a schedule's
 * resources (the cost model and the space's constraints use the same numbers). */
typedef struct {
  const char *arch;          /* "sm_80", "sm_90a" */
  int major, minor;          /* compute capability */
  guint smem_per_block;      /* largest dynamic shared memory one block may opt in to */
  guint smem_per_sm;
  guint regs_per_sm;         /* 32-bit registers */
  guint max_threads_per_sm;
  guint max_regs_per_thread; /* 255 */
  gboolean wgmma;            /* warpgroup mma and TMA (sm_90a) */
} TsCudaArch;

/* NULL when the arch is unknown. Known: sm_80, sm_86, sm_89, sm_90, sm_90a, sm_100a, sm_120. */
const TsCudaArch *ts_cuda_arch_lookup(const char *arch);
/* "sm_90a" for compute capability 9.0 (the a-variant where the arch has one), "sm_80" ... */
char *ts_cuda_arch_for_cc(int major, int minor);

/* "nvrtc 13.0, nvjitlink 13.0"; NULL with UNAVAILABLE naming the library that is missing. */
char *ts_cuda_toolchain(GError **error);

/* Compiles a whole translation unit for arch (NVRTC to LTO-IR, nvJitLink -lto to a cubin) and
 * returns the cubin. *resources (may be NULL) receives registers, static shared memory, stack
 * frame and spill bytes of `entry` from the linker's verbose report (smem_dynamic and threads
 * stay -1: they come from the launch; all stay -1 when the report does not mention entry, i.e.
 * the cubin has no such kernel). *log (may be NULL) receives NVRTC's warnings and the linker's
 * report. Failures are COMPILE errors beginning with the step that failed ("NVRTC ...",
 * "nvJitLink ...") followed by that step's log verbatim; *log is then NULL. */
GBytes *ts_cuda_compile(const char *source, const char *entry, const char *arch,
                        TsModuleResources *resources, char **log, GError **error);

/* What ts_cuda_compile(source, entry, arch) yields depends on the toolchain, the options, the
 * embedded primitive headers and the source; this is a digest of them all (hex SHA-256) in
 * which the kernel's name and a leading comment (with the blank space after it) do not count: two ops lowered to the same code
 * under different names (a kernel file through a built-in op's templates) share it. NULL with
 * the error ts_cuda_compile would give when NVRTC, nvJitLink or the headers are missing. */
char *ts_cuda_compile_key(const char *source, const char *entry, const char *arch,
                          GError **error);

/* Parses the ptxas report of one kernel in a linker log ("ptxas info : Used 128 registers,
 * used 1 barriers, 65536 bytes smem ..."; "... bytes stack frame, N bytes spill stores, M bytes
 * spill loads"). FALSE when the log has no report for entry. Exposed for tests. */
gboolean ts_cuda_parse_resources(const char *log, const char *entry, TsModuleResources *out);

/* ---- hardware metrics without a device ----
 * CUPTI's profiler host API knows every supported chip's metrics, so which metric names a chip
 * offers and how many replay passes a set of them costs can be settled without a GPU: CI checks
 * the profiler's metric catalog with it. Needs libcupti (and the libnvperf_host beside it). */

/* CUPTI's chip name for an arch of ts_cuda_arch_lookup, taking the arch's data-center part
 * ("sm_90a" → "GH100", "sm_80" → "GA100", "sm_89" → "AD102"); NULL when unknown. */
const char *ts_cuda_metrics_chip(const char *arch);
/* For chip ("GH100"): the names of metrics (NULL-terminated) the chip lacks go to *unsupported
 * (NULL-terminated, maybe empty; g_strfreev), and *n_passes (may be NULL) receives how many
 * replay passes the range profiler needs for the others (0 when none is supported).
 * UNAVAILABLE without libcupti or in a build without the CUPTI headers; UNSUPPORTED for a chip
 * CUPTI does not know (the message lists those it does). */
gboolean ts_cuda_metrics_plan(const char *chip, const char *const *metrics, GStrv *unsupported,
                              guint *n_passes, GError **error);

/* Opens a CUDA library by soname (dlopen), looking where the driver, NVRTC and CUPTI are
 * looked for: the loader path, $CUDA_HOME/lib64, the toolkit found at build time. NULL with
 * *why (g_free it) when it cannot be, in dlopen's own words or saying where it was looked for. */
void *ts_cuda_dlopen(const char *soname, char **why);

/* For libraries that work on device memory themselves (NCCL): a cuda backend buffer's device
 * address (0 for another backend's), the backend's stream (a CUstream; NULL for another
 * backend), and a wait until the stream's work is done. */
guint64 ts_cuda_buffer_address(const TsBuffer *buffer);
void *ts_cuda_stream(TsBackend *backend);
gboolean ts_cuda_synchronize(TsBackend *backend, GError **error);

G_END_DECLS
