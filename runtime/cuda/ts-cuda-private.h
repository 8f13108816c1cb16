/* ts-cuda-private.h — what the CUDA files of runtime/ share, seen nowhere else: the function
 * tables of the dlopen'ed driver, NVRTC, nvJitLink and CUPTI, the kernel ABI mirrored in C, and
 * the helpers that turn a CUDA status into a GError. Only built when configure found the CUDA
 * headers (TS_HAVE_CUDA); never installed.
 *
 * The tables are typed from the real headers (`__typeof__(&cuMemAlloc)`), so a prototype change
 * in a toolkit update is a compile error here rather than a crash at run time. cuda.h maps many
 * names onto versioned symbols (cuMemAlloc → cuMemAlloc_v2, cuEventElapsedTime → ..._v2): the
 * same macros expand the member names and the symbol strings below, so the header decides which
 * symbol is looked up, never a hand-kept list.
 */
#pragma once

#include "ts-backend-private.h"
#include "ts-cuda.h"

#include <cuda.h>
#include <nvJitLink.h>
#include <nvrtc.h>

G_BEGIN_DECLS

/* nvJitLink.h wraps its entry points in static inline functions that call symbols carrying the
 * toolkit version (__nvJitLinkCreate_13_0), and the sonames carry the major version too. */
#if CUDA_VERSION / 1000 != 13
#error "new CUDA major version: update the sonames (ts-cuda-dl.c) and nvJitLink symbols"
#endif

/* X(member, symbol): member is how the code calls it, symbol what dlsym looks up (after the
 * header's macros have renamed it). */
#define TS__CUDA_DRIVER_FUNCS(X)                                                                   \
  X(cuInit, cuInit)                                                                                \
  X(cuDriverGetVersion, cuDriverGetVersion)                                                        \
  X(cuGetErrorName, cuGetErrorName)                                                                \
  X(cuGetErrorString, cuGetErrorString)                                                            \
  X(cuDeviceGetCount, cuDeviceGetCount)                                                            \
  X(cuDeviceGet, cuDeviceGet)                                                                      \
  X(cuDeviceGetName, cuDeviceGetName)                                                              \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute)                                                    \
  X(cuDeviceTotalMem, cuDeviceTotalMem)                                                            \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                                            \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease)                                          \
  X(cuCtxSetCurrent, cuCtxSetCurrent)                                                              \
  X(cuStreamCreate, cuStreamCreate)                                                                \
  X(cuStreamDestroy, cuStreamDestroy)                                                              \
  X(cuStreamSynchronize, cuStreamSynchronize)                                                      \
  X(cuModuleLoadData, cuModuleLoadData)                                                            \
  X(cuModuleUnload, cuModuleUnload)                                                                \
  X(cuModuleGetFunction, cuModuleGetFunction)                                                      \
  X(cuModuleGetGlobal, cuModuleGetGlobal)                                                          \
  X(cuFuncGetAttribute, cuFuncGetAttribute)                                                        \
  X(cuFuncSetAttribute, cuFuncSetAttribute)                                                        \
  X(cuMemAlloc, cuMemAlloc)                                                                        \
  X(cuMemFree, cuMemFree)                                                                          \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync)                                                          \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync)                                                          \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync)                                                          \
  X(cuMemsetD32Async, cuMemsetD32Async)                                                            \
  X(cuTensorMapEncodeTiled, cuTensorMapEncodeTiled)                                                \
  X(cuLaunchKernel, cuLaunchKernel)                                                                \
  X(cuEventCreate, cuEventCreate)                                                                  \
  X(cuEventDestroy, cuEventDestroy)                                                                \
  X(cuEventRecord, cuEventRecord)                                                                  \
  X(cuEventSynchronize, cuEventSynchronize)                                                        \
  X(cuEventElapsedTime, cuEventElapsedTime)

#define TS__CUDA_NVRTC_FUNCS(X)                                                                    \
  X(nvrtcVersion, nvrtcVersion)                                                                    \
  X(nvrtcGetErrorString, nvrtcGetErrorString)                                                      \
  X(nvrtcCreateProgram, nvrtcCreateProgram)                                                        \
  X(nvrtcDestroyProgram, nvrtcDestroyProgram)                                                      \
  X(nvrtcCompileProgram, nvrtcCompileProgram)                                                      \
  X(nvrtcGetProgramLogSize, nvrtcGetProgramLogSize)                                                \
  X(nvrtcGetProgramLog, nvrtcGetProgramLog)                                                        \
  X(nvrtcGetLTOIRSize, nvrtcGetLTOIRSize)                                                          \
  X(nvrtcGetLTOIR, nvrtcGetLTOIR)

#define TS__CUDA_NVJITLINK_FUNCS(X)                                                                \
  X(nvJitLinkVersion, nvJitLinkVersion)                                                            \
  X(nvJitLinkCreate, __nvJitLinkCreate_13_0)                                                       \
  X(nvJitLinkDestroy, __nvJitLinkDestroy_13_0)                                                     \
  X(nvJitLinkAddData, __nvJitLinkAddData_13_0)                                                     \
  X(nvJitLinkComplete, __nvJitLinkComplete_13_0)                                                   \
  X(nvJitLinkGetLinkedCubinSize, __nvJitLinkGetLinkedCubinSize_13_0)                               \
  X(nvJitLinkGetLinkedCubin, __nvJitLinkGetLinkedCubin_13_0)                                       \
  X(nvJitLinkGetErrorLogSize, __nvJitLinkGetErrorLogSize_13_0)                                     \
  X(nvJitLinkGetErrorLog, __nvJitLinkGetErrorLog_13_0)                                             \
  X(nvJitLinkGetInfoLogSize, __nvJitLinkGetInfoLogSize_13_0)                                       \
  X(nvJitLinkGetInfoLog, __nvJitLinkGetInfoLog_13_0)

#define TS__CUDA_MEMBER(member, symbol) __typeof__(&symbol) member;

typedef struct {
  TS__CUDA_DRIVER_FUNCS(TS__CUDA_MEMBER)
} TsCudaDriver;

typedef struct {
  TS__CUDA_NVRTC_FUNCS(TS__CUDA_MEMBER)
} TsCudaNvrtc;

typedef struct {
  TS__CUDA_NVJITLINK_FUNCS(TS__CUDA_MEMBER)
} TsCudaNvJitLink;

/* Each library is loaded once per process, on first use, and never unloaded (libcuda does not
 * survive being unloaded under live contexts). NULL with TS_BACKEND_ERROR_UNAVAILABLE saying
 * which library is missing (the driver's message begins "no CUDA device: "); the answer is the
 * same on every later call. Thread-safe. */
const TsCudaDriver *ts__cuda_driver(GError **error);
const TsCudaNvrtc *ts__cuda_nvrtc(GError **error);
const TsCudaNvJitLink *ts__cuda_nvjitlink(GError **error);
/* Opens a library by that search order (the soname, $CUDA_HOME, then the configured toolkit's
 * lib64 and extras/CUPTI/lib64): what ts-cuda-cupti.c opens libcupti with. NULL with a reason in
 * *why (free it) when it cannot; *not_found when no such file is anywhere. */
void *ts__cuda_dlopen(const char *soname, gboolean *not_found, char **why);

/* "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)" */
char *ts__cuda_result_text(const TsCudaDriver *cu, CUresult result);
/* TRUE when result is CUDA_SUCCESS; else sets error (domain TS_BACKEND_ERROR, code) to
 * "<call>: <result text>" and returns FALSE. Callers prefix what they were doing. */
gboolean ts__cuda_check(const TsCudaDriver *cu, CUresult result, const char *call,
                        TsBackendError code, GError **error);
/* Errors after which the context is unusable: every later call fails the same way, and only a
 * new process gets a working context. */
gboolean ts__cuda_result_is_sticky(CUresult result);
/* The backend's decision after a failed call: for a sticky result, *lost (the backend's "why it
 * is lost" text) is set to message unless it already holds the first cause, and TRUE is
 * returned; other results leave it alone. */
gboolean ts__cuda_note_failure(char **lost, CUresult result, const char *message);
/* "NVJITLINK_ERROR_PTX_COMPILE": nvJitLink has no string function of its own. */
const char *ts__cuda_nvjitlink_result_name(nvJitLinkResult result);

/* Everything besides the source that decides a cubin ts_cuda_compile builds for arch: both
 * compilers' options and the bytes of the embedded tile-primitive headers. */
void ts__cuda_hash_compile_inputs(GChecksum *checksum, const char *arch);

/* The kernel ABI (ts-backend.h, ts_cuda_prims.cuh): one by-value struct, whose layout must match
 * the device side's byte for byte. */
#define TS__CUDA_MAX_BUFS 8
#define TS__CUDA_MAX_INTS 8
#define TS__CUDA_MAX_FLOATS 4
typedef struct {
  CUdeviceptr bufs[TS__CUDA_MAX_BUFS]; /* void * on the device: 64-bit there, as here */
  long long ints[TS__CUDA_MAX_INTS];
  double floats[TS__CUDA_MAX_FLOATS];
} TsCudaArgs;
G_STATIC_ASSERT(sizeof(CUdeviceptr) == 8);
G_STATIC_ASSERT(sizeof(TsCudaArgs) == 160);
G_STATIC_ASSERT(G_STRUCT_OFFSET(TsCudaArgs, ints) == 64);
G_STATIC_ASSERT(G_STRUCT_OFFSET(TsCudaArgs, floats) == 128);

#if TS_HAVE_CUPTI
/* Kernel timing from CUPTI activity records (ts-cuda-cupti.c). CUPTI is process-wide, so these
 * are too. begin: records the kernels this thread launches with cuLaunchKernel from now on;
 * FALSE with the reason when CUPTI cannot be used in this process (the library is missing, or
 * refuses: another profiler holds it, or the driver forbids it), which will not change: callers
 * switch to events for good. end (after the caller has synchronised the stream): stops, flushes
 * the records, and fills samples_ns[i] with the duration of the i-th launch since begin;
 * *n_found says how many arrived, and fewer than n is TS_BACKEND_ERROR_LAUNCH. */
gboolean ts__cuda_cupti_begin(GError **error);
/* samples_ns[i]: duration of the i-th recorded launch; starts_ns (optional): its start on the
 * host clock of ts_trace_now_ns. */
gboolean ts__cuda_cupti_end(double *samples_ns, gint64 *starts_ns, guint n, guint *n_found,
                            GError **error);

/* libcupti, opened once per process (ts__cuda_dlopen); NULL with the reason in *why (free it). */
void *ts__cuda_cupti_library(char **why);
/* "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES (...)" from the loaded library, or the bare number. */
char *ts__cuda_cupti_result_text(void *library, int result);

/* The device timeline: while trace is set, CUPTI's MEMCPY, MEMSET, MEMORY2 (device allocations
 * and frees) and NVTX MARKER records go onto it as memcpy, memset, alloc, free and range events
 * on TS_TRACE_DEVICE_LANE, their CUPTI timestamps mapped onto the host clock as the kernel
 * records are. NULL flushes what is still buffered into the trace set before and stops those
 * records; kernel timing is not affected either way. Best effort: without CUPTI it does nothing
 * (the host events of ts-backend.c remain). */
void ts__cuda_cupti_set_trace(TsTrace *trace);

/* Hardware metrics (ts-cuda-metrics.c): CUPTI's range profiler over work run once per replay
 * pass. before_pass runs outside the profiled range (the L2 flush), launch inside it; both must
 * have finished their GPU work when they return. Values go to values (name → g_new'd double);
 * names the chip lacks to unsupported, or an UNSUPPORTED error when it is NULL. */
typedef struct {
  gboolean (*before_pass)(gpointer data, guint pass, GError **error);
  gboolean (*launch)(gpointer data, GError **error);
  gpointer data;
} TsCudaMetricsWork;

gboolean ts__cuda_metrics_collect(CUcontext ctx, int ordinal, const char *const *metrics,
                                  const TsCudaMetricsWork *work, GHashTable *values,
                                  GPtrArray *unsupported, GError **error);
#endif

G_END_DECLS
