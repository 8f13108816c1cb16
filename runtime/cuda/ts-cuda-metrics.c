/* ts-cuda-metrics.c — hardware metrics of GPU work through CUPTI's range profiler, the CUDA 13
 * interface (cupti_range_profiler.h on the device side; cupti_profiler_host.h to turn metric
 * names into a configuration and counter data into values; the Events/Metrics API is gone).
 *
 * One collection: the chip's name and counter availability from the device; a host object for
 * that chip; the metric names checked one by one (so the ones the chip lacks can be named, where
 * adding them all at once would fail as a whole); a config image and its pass count; then the
 * range profiler on the context, in user-range mode with user replay: the caller's work runs
 * inside one pushed range, once per pass, until CUPTI says every pass was submitted. User ranges
 * (not auto ranges, which wrap every kernel on its own) leave the kernels of the work as
 * concurrent as they would be anyway. The counter data is decoded and the metrics evaluated for
 * that one range.
 *
 * libcupti is dlopen'ed like everywhere else in runtime/cuda: the table below is typed from the
 * real headers, so a prototype change in a toolkit update fails to compile here. Every CUPTI
 * status is checked and reported with the call's name; CUPTI_ERROR_INSUFFICIENT_PRIVILEGES is
 * TS_BACKEND_ERROR_PERMISSION carrying the fix.
 *
 * The host half (names, config image, passes) needs no device, so ts_cuda_metrics_plan works on
 * any machine with libcupti and CI checks the profiler's metric catalog with it. The device half
 * has been compiled but not yet run on a GPU.
 */
#include "config.h"

#include "ts-cuda.h"

#include <string.h>

#if TS_HAVE_CUPTI

#include "ts-cuda-private.h"

#include <cupti.h>
#include <cupti_profiler_host.h> /* needs the c-shim/ include dir: it includes C++'s <string> */
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <dlfcn.h>

#define PROFILER_FUNCS(X)                                                                          \
  X(cuptiProfilerInitialize)                                                                       \
  X(cuptiDeviceGetChipName)                                                                        \
  X(cuptiProfilerGetCounterAvailability)                                                           \
  X(cuptiProfilerHostGetSupportedChips)                                                            \
  X(cuptiProfilerHostInitialize)                                                                   \
  X(cuptiProfilerHostDeinitialize)                                                                 \
  X(cuptiProfilerHostGetMetricProperties)                                                          \
  X(cuptiProfilerHostConfigAddMetrics)                                                             \
  X(cuptiProfilerHostGetConfigImageSize)                                                           \
  X(cuptiProfilerHostGetConfigImage)                                                               \
  X(cuptiProfilerHostGetNumOfPasses)                                                               \
  X(cuptiProfilerHostEvaluateToGpuValues)                                                          \
  X(cuptiRangeProfilerEnable)                                                                      \
  X(cuptiRangeProfilerDisable)                                                                     \
  X(cuptiRangeProfilerGetCounterDataSize)                                                          \
  X(cuptiRangeProfilerCounterDataImageInitialize)                                                  \
  X(cuptiRangeProfilerSetConfig)                                                                   \
  X(cuptiRangeProfilerStart)                                                                       \
  X(cuptiRangeProfilerStop)                                                                        \
  X(cuptiRangeProfilerPushRange)                                                                   \
  X(cuptiRangeProfilerPopRange)                                                                    \
  X(cuptiRangeProfilerDecodeData)                                                                  \
  X(cuptiRangeProfilerGetCounterDataInfo)

#define PROFILER_MEMBER(fn) __typeof__(&fn) fn;
typedef struct {
  void *library;
  PROFILER_FUNCS(PROFILER_MEMBER)
} Profiler;

#define PROFILER_STR(x) #x
#define PROFILER_XSTR(x) PROFILER_STR(x)
#define PROFILER_SYM(fn) {PROFILER_XSTR(fn), G_STRUCT_OFFSET(Profiler, fn)},
static const struct {
  const char *symbol;
  gsize offset;
} profiler_syms[] = {PROFILER_FUNCS(PROFILER_SYM)};

/* A range profiler pass holds one range; a bigger image buys nothing. */
#define MAX_RANGES 1
/* A pass count past what the config image asked for means the replay loop is not converging. */
#define EXTRA_PASSES 2
#define RANGE_NAME "tessera"

/* The table, or why there is none: the same answer for the whole process. */
typedef struct {
  Profiler *table;
  char *why;
} Loaded;

/* gcc says __SANITIZE_ADDRESS__; clang 14 only answers __has_feature. */
#if defined(__SANITIZE_ADDRESS__)
#define TS_ASAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TS_ASAN_BUILD 1
#endif
#endif

static gpointer
load_profiler(gpointer data)
{
  Loaded *loaded = g_new0(Loaded, 1);
#if defined(TS_ASAN_BUILD)
  /* CUPTI's host API dlopens libnvperf_host.so with RTLD_DEEPBIND, which AddressSanitizer
   * cannot run: it aborts the process (google/sanitizers#611). Say so instead. */
  loaded->why = g_strdup("this is an AddressSanitizer build, and CUPTI's profiler library is "
                         "loaded with RTLD_DEEPBIND, which AddressSanitizer cannot run "
                         "(google/sanitizers#611); use a build without sanitizers");
  return loaded;
#endif
  void *library = ts__cuda_cupti_library(&loaded->why);
  if (library == NULL)
    return loaded;
  Profiler *p = g_new0(Profiler, 1);
  p->library = library;
  for (gsize i = 0; i < G_N_ELEMENTS(profiler_syms); i++) {
    void *sym = dlsym(library, profiler_syms[i].symbol);
    if (sym == NULL) {
      g_free(p);
      loaded->why = g_strdup_printf("libcupti.so.13 lacks %s (a CUPTI older than CUDA 13?)",
                                    profiler_syms[i].symbol);
      return loaded;
    }
    memcpy((char *)p + profiler_syms[i].offset, &sym, sizeof sym);
  }
  loaded->table = p;
  return loaded;
}

static const Profiler *
profiler(GError **error)
{
  static GOnce once = G_ONCE_INIT;
  const Loaded *loaded = g_once(&once, load_profiler, NULL);
  if (loaded->table == NULL)
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
                "hardware metrics need libcupti: %s", loaded->why);
  return loaded->table;
}

/* TRUE on CUPTI_SUCCESS; else the error names the call. Refused counters get their own code
 * and the fix; a GPU or setup that has no counters at all is UNSUPPORTED. */
static gboolean
check(const Profiler *p, CUptiResult r, const char *call, GError **error)
{
  if (r == CUPTI_SUCCESS)
    return TRUE;
  g_autofree char *text = ts__cuda_cupti_result_text(p->library, (int)r);
  switch (r) {
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_PERMISSION,
                "GPU performance counters refused: %s (%s: %s)",
                ts_backend_counter_permission_help(), call, text);
    return FALSE;
  case CUPTI_ERROR_NOT_SUPPORTED:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED,
                "this GPU or its setup offers no performance counters to CUPTI (%s: %s)", call,
                text);
    return FALSE;
  default:
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH, "%s: %s", call, text);
    return FALSE;
  }
}

/* ------------------------------------------------------------------------------------------ */
/* The host half: names, config image, values */

typedef struct {
  const Profiler *p;
  CUpti_Profiler_Host_Object *host;
  char *chip;
  GPtrArray *supported; /* const char *, borrowed from the caller's list */
  guint8 *config;
  gsize config_size;
  gsize n_passes;
} Plan;

static void
plan_clear(Plan *plan)
{
  if (plan->host != NULL) {
    CUpti_Profiler_Host_Deinitialize_Params d = {
        .structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE,
        .pHostObject = plan->host};
    plan->p->cuptiProfilerHostDeinitialize(&d);
    plan->host = NULL;
  }
  g_clear_pointer(&plan->chip, g_free);
  g_clear_pointer(&plan->supported, g_ptr_array_unref);
  g_clear_pointer(&plan->config, g_free);
}

static char *
supported_chips(const Profiler *p)
{
  CUpti_Profiler_Host_GetSupportedChips_Params c = {
      .structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE};
  if (p->cuptiProfilerHostGetSupportedChips(&c) != CUPTI_SUCCESS)
    return g_strdup("(CUPTI does not say)");
  g_autoptr(GString) s = g_string_new(NULL);
  for (size_t i = 0; i < c.numChips; i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", c.ppChipNames[i]);
  return g_string_free(g_steal_pointer(&s), FALSE);
}

/* Opens the host object for chip, sorts metrics into supported (plan->supported) and not
 * (unsupported, or an error naming them when it is NULL), and builds the config image of the
 * supported ones. availability: the device's counter availability image, or NULL (host only). */
static gboolean
plan_open(Plan *plan, const Profiler *p, const char *chip, const guint8 *availability,
          const char *const *metrics, GPtrArray *unsupported, GError **error)
{
  plan->p = p;
  plan->chip = g_strdup(chip);
  plan->supported = g_ptr_array_new();
  CUpti_Profiler_Host_Initialize_Params init = {
      .structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE,
      .profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER,
      .pChipName = chip,
      .pCounterAvailabilityImage = availability};
  CUptiResult r = p->cuptiProfilerHostInitialize(&init);
  if (r != CUPTI_SUCCESS) {
    g_autofree char *text = ts__cuda_cupti_result_text(p->library, (int)r);
    g_autofree char *chips = supported_chips(p);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED,
                "CUPTI's profiler does not know the chip '%s' (cuptiProfilerHostInitialize: %s); "
                "it knows %s",
                chip, text, chips);
    return FALSE;
  }
  plan->host = init.pHostObject;

  g_autoptr(GPtrArray) missing = g_ptr_array_new();
  for (const char *const *m = metrics; *m != NULL; m++) {
    CUpti_Profiler_Host_GetMetricProperties_Params prop = {
        .structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE,
        .pHostObject = plan->host,
        .pMetricName = *m};
    r = p->cuptiProfilerHostGetMetricProperties(&prop);
    if (r == CUPTI_ERROR_INVALID_METRIC_NAME || r == CUPTI_ERROR_NOT_SUPPORTED)
      g_ptr_array_add(missing, (gpointer)*m);
    else if (!check(p, r, "cuptiProfilerHostGetMetricProperties", error))
      return FALSE;
    else
      g_ptr_array_add(plan->supported, (gpointer)*m);
  }
  if (missing->len > 0 && unsupported == NULL) {
    g_ptr_array_add(missing, NULL);
    g_autofree char *names = g_strjoinv(", ", (char **)missing->pdata);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNSUPPORTED,
                "%u of the metrics asked for are not available on %s: %s", missing->len - 1, chip,
                names);
    return FALSE;
  }
  for (guint i = 0; i < missing->len; i++)
    g_ptr_array_add(unsupported, g_strdup(missing->pdata[i]));
  if (plan->supported->len == 0)
    return TRUE;

  CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
      .structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE,
      .pHostObject = plan->host,
      .ppMetricNames = (const char **)plan->supported->pdata,
      .numMetrics = plan->supported->len};
  if (!check(p, p->cuptiProfilerHostConfigAddMetrics(&add), "cuptiProfilerHostConfigAddMetrics",
             error))
    return FALSE;
  CUpti_Profiler_Host_GetConfigImageSize_Params size = {
      .structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE,
      .pHostObject = plan->host};
  if (!check(p, p->cuptiProfilerHostGetConfigImageSize(&size),
             "cuptiProfilerHostGetConfigImageSize", error))
    return FALSE;
  plan->config_size = size.configImageSize;
  plan->config = g_malloc0(MAX(plan->config_size, 1));
  CUpti_Profiler_Host_GetConfigImage_Params image = {
      .structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE,
      .pHostObject = plan->host,
      .configImageSize = plan->config_size,
      .pConfigImage = plan->config};
  if (!check(p, p->cuptiProfilerHostGetConfigImage(&image), "cuptiProfilerHostGetConfigImage",
             error))
    return FALSE;
  CUpti_Profiler_Host_GetNumOfPasses_Params passes = {
      .structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE,
      .configImageSize = plan->config_size,
      .pConfigImage = plan->config};
  if (!check(p, p->cuptiProfilerHostGetNumOfPasses(&passes), "cuptiProfilerHostGetNumOfPasses",
             error))
    return FALSE;
  plan->n_passes = passes.numOfPasses;
  return TRUE;
}

/* The supported metrics' values in the one range of a decoded counter data image. */
static gboolean
plan_evaluate(Plan *plan, const guint8 *data, gsize size, GHashTable *values, GError **error)
{
  const Profiler *p = plan->p;
  CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
      .structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE,
      .pCounterDataImage = data,
      .counterDataImageSize = size};
  if (!check(p, p->cuptiRangeProfilerGetCounterDataInfo(&info),
             "cuptiRangeProfilerGetCounterDataInfo", error))
    return FALSE;
  if (info.numTotalRanges < 1) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "the range profiler recorded no range (did the work launch anything?)");
    return FALSE;
  }
  g_autofree double *out = g_new0(double, plan->supported->len);
  CUpti_Profiler_Host_EvaluateToGpuValues_Params eval = {
      .structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE,
      .pHostObject = plan->host,
      .pCounterDataImage = data,
      .counterDataImageSize = size,
      .rangeIndex = 0,
      .ppMetricNames = (const char **)plan->supported->pdata,
      .numMetrics = plan->supported->len,
      .pMetricValues = out};
  if (!check(p, p->cuptiProfilerHostEvaluateToGpuValues(&eval),
             "cuptiProfilerHostEvaluateToGpuValues", error))
    return FALSE;
  for (guint i = 0; i < plan->supported->len; i++)
    g_hash_table_replace(values, g_strdup(plan->supported->pdata[i]),
                         g_memdup2(&out[i], sizeof out[i]));
  return TRUE;
}

/* ------------------------------------------------------------------------------------------ */
/* The device half */

static gboolean
initialize(const Profiler *p, GError **error)
{
  /* Once per process: it loads the profiler's libraries and hooks the driver. */
  static gsize done = 0;
  static CUptiResult result = CUPTI_SUCCESS;
  if (g_once_init_enter(&done)) {
    CUpti_Profiler_Initialize_Params init = {.structSize =
                                                 CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    result = p->cuptiProfilerInitialize(&init);
    g_once_init_leave(&done, 1);
  }
  return check(p, result, "cuptiProfilerInitialize", error);
}

static guint8 *
counter_availability(const Profiler *p, CUcontext ctx, GError **error)
{
  CUpti_Profiler_GetCounterAvailability_Params a = {
      .structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE, .ctx = ctx};
  if (!check(p, p->cuptiProfilerGetCounterAvailability(&a), "cuptiProfilerGetCounterAvailability",
             error))
    return NULL;
  g_autofree guint8 *image = g_malloc0(MAX(a.counterAvailabilityImageSize, 1));
  a.pCounterAvailabilityImage = image;
  if (!check(p, p->cuptiProfilerGetCounterAvailability(&a), "cuptiProfilerGetCounterAvailability",
             error))
    return NULL;
  return g_steal_pointer(&image);
}

/* Pushes the range, runs the work, pops it: one pass. */
static gboolean
run_pass(const Profiler *p, CUpti_RangeProfiler_Object *object, const TsCudaMetricsWork *work,
         guint pass, gboolean *all_submitted, GError **error)
{
  if (work->before_pass != NULL && !work->before_pass(work->data, pass, error))
    return FALSE;
  CUpti_RangeProfiler_Start_Params start = {
      .structSize = CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, .pRangeProfilerObject = object};
  if (!check(p, p->cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart", error))
    return FALSE;
  CUpti_RangeProfiler_PushRange_Params push = {.structSize =
                                                   CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE,
                                               .pRangeProfilerObject = object,
                                               .pRangeName = RANGE_NAME};
  gboolean ok =
      check(p, p->cuptiRangeProfilerPushRange(&push), "cuptiRangeProfilerPushRange", error);
  if (ok) {
    ok = work->launch(work->data, error);
    /* Popped and stopped even after a failed launch, so the profiler is left consistent for
     * Disable. */
    CUpti_RangeProfiler_PopRange_Params pop = {.structSize =
                                                   CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE,
                                               .pRangeProfilerObject = object};
    CUptiResult r = p->cuptiRangeProfilerPopRange(&pop);
    ok = ok && check(p, r, "cuptiRangeProfilerPopRange", error);
  }
  CUpti_RangeProfiler_Stop_Params stop = {.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE,
                                          .pRangeProfilerObject = object};
  CUptiResult r = p->cuptiRangeProfilerStop(&stop);
  ok = ok && check(p, r, "cuptiRangeProfilerStop", error);
  *all_submitted = stop.isAllPassSubmitted != 0;
  return ok;
}

static gboolean
profile(const Profiler *p, CUcontext ctx, Plan *plan, const TsCudaMetricsWork *work,
        GHashTable *values, GError **error)
{
  CUpti_RangeProfiler_Enable_Params enable = {
      .structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE, .ctx = ctx};
  if (!check(p, p->cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable", error))
    return FALSE;
  CUpti_RangeProfiler_Object *object = enable.pRangeProfilerObject;
  gboolean ok = FALSE;
  g_autofree guint8 *data = NULL;

  CUpti_RangeProfiler_GetCounterDataSize_Params size = {
      .structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE,
      .pRangeProfilerObject = object,
      .pMetricNames = (const char **)plan->supported->pdata,
      .numMetrics = plan->supported->len,
      .maxNumOfRanges = MAX_RANGES,
      .maxNumRangeTreeNodes = MAX_RANGES};
  if (!check(p, p->cuptiRangeProfilerGetCounterDataSize(&size),
             "cuptiRangeProfilerGetCounterDataSize", error))
    goto out;
  data = g_malloc0(MAX(size.counterDataSize, 1));
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
      .structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE,
      .pRangeProfilerObject = object,
      .counterDataSize = size.counterDataSize,
      .pCounterData = data};
  if (!check(p, p->cuptiRangeProfilerCounterDataImageInitialize(&init),
             "cuptiRangeProfilerCounterDataImageInitialize", error))
    goto out;
  CUpti_RangeProfiler_SetConfig_Params config = {
      .structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE,
      .pRangeProfilerObject = object,
      .configSize = plan->config_size,
      .pConfig = plan->config,
      .counterDataImageSize = size.counterDataSize,
      .pCounterDataImage = data,
      .range = CUPTI_UserRange,
      .replayMode = CUPTI_UserReplay,
      .maxRangesPerPass = MAX_RANGES,
      .numNestingLevels = 1,
      .minNestingLevel = 1,
      .passIndex = 0,
      .targetNestingLevel = 1};
  if (!check(p, p->cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig", error))
    goto out;

  gboolean all_submitted = FALSE;
  guint pass = 0;
  for (; !all_submitted; pass++) {
    if (pass >= plan->n_passes + EXTRA_PASSES) {
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                  "the range profiler still wants passes after %u (the config needs %zu)", pass,
                  plan->n_passes);
      goto out;
    }
    if (!run_pass(p, object, work, pass, &all_submitted, error))
      goto out;
  }
  CUpti_RangeProfiler_DecodeData_Params decode = {
      .structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE,
      .pRangeProfilerObject = object};
  if (!check(p, p->cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData", error))
    goto out;
  if (decode.numOfRangeDropped > 0) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "the range profiler dropped %zu range(s) of %u pass(es)", decode.numOfRangeDropped,
                pass);
    goto out;
  }
  ok = plan_evaluate(plan, data, size.counterDataSize, values, error);

out:;
  CUpti_RangeProfiler_Disable_Params disable = {
      .structSize = CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, .pRangeProfilerObject = object};
  CUptiResult r = p->cuptiRangeProfilerDisable(&disable);
  if (ok)
    ok = check(p, r, "cuptiRangeProfilerDisable", error);
  return ok;
}

gboolean
ts__cuda_metrics_collect(CUcontext ctx, int ordinal, const char *const *metrics,
                         const TsCudaMetricsWork *work, GHashTable *values, GPtrArray *unsupported,
                         GError **error)
{
  const Profiler *p = profiler(error);
  if (p == NULL || !initialize(p, error))
    return FALSE;
  CUpti_Device_GetChipName_Params chip = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
                                          .deviceIndex = (size_t)ordinal};
  if (!check(p, p->cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName", error))
    return FALSE;
  g_autofree guint8 *availability = counter_availability(p, ctx, error);
  if (availability == NULL)
    return FALSE;
  Plan plan = {0};
  gboolean ok = plan_open(&plan, p, chip.pChipName, availability, metrics, unsupported, error) &&
                (plan.supported->len == 0 || profile(p, ctx, &plan, work, values, error));
  /* A failing CUPTI call says what failed, not on which GPU. */
  if (!ok && plan.chip != NULL && error != NULL && *error != NULL &&
      (*error)->code == TS_BACKEND_ERROR_LAUNCH)
    g_prefix_error(error, "metrics on %s: ", plan.chip);
  plan_clear(&plan);
  return ok;
}

gboolean
ts_cuda_metrics_plan(const char *chip, const char *const *metrics, GStrv *unsupported,
                     guint *n_passes, GError **error)
{
  g_return_val_if_fail(chip != NULL && metrics != NULL && unsupported != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  *unsupported = NULL;
  const Profiler *p = profiler(error);
  if (p == NULL)
    return FALSE;
  g_autoptr(GPtrArray) missing = g_ptr_array_new_with_free_func(g_free);
  Plan plan = {0};
  gboolean ok = plan_open(&plan, p, chip, NULL, metrics, missing, error);
  if (ok && n_passes != NULL)
    *n_passes = (guint)plan.n_passes;
  plan_clear(&plan);
  if (!ok)
    return FALSE;
  g_ptr_array_add(missing, NULL);
  *unsupported = (GStrv)g_ptr_array_free(g_steal_pointer(&missing), FALSE);
  return TRUE;
}

#else /* !TS_HAVE_CUPTI */

gboolean
ts_cuda_metrics_plan(const char *chip, const char *const *metrics, GStrv *unsupported,
                     guint *n_passes, GError **error)
{
  g_return_val_if_fail(unsupported != NULL, FALSE);
  *unsupported = NULL;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE,
              "this build has no CUPTI headers: hardware metrics are not built in");
  return FALSE;
}

#endif /* TS_HAVE_CUPTI */

const char *
ts_cuda_metrics_chip(const char *arch)
{
  static const struct {
    const char *arch, *chip;
  } chips[] = {
      {"sm_80", "GA100"},  {"sm_86", "GA102"},   {"sm_89", "AD102"},  {"sm_90", "GH100"},
      {"sm_90a", "GH100"}, {"sm_100a", "GB100"}, {"sm_120", "GB202"},
  };
  g_return_val_if_fail(arch != NULL, NULL);
  for (gsize i = 0; i < G_N_ELEMENTS(chips); i++)
    if (strcmp(chips[i].arch, arch) == 0)
      return chips[i].chip;
  return NULL;
}
