/* ts-cuda-cupti.c — kernel durations from CUPTI activity records: the GPU's own start and end
 * timestamps of each kernel, with nothing of the launch overhead or of the memsets the backend
 * issues between timed launches (only kernel records become samples).
 *
 * A record is matched to our launch by correlation id: a driver-API callback on cuLaunchKernel
 * notes the id of each launch the timing thread makes, in order, and the CONCURRENT_KERNEL records
 * that carry those ids are the samples. Launches from other threads, or made outside a timing
 * session, are ignored. CUPTI is process-wide, so this state is too; it is set up on first use
 * and kept (enabling the kernel records once costs tens of milliseconds).
 *
 * While a trace is set (a profiled run), the device's copies, sets, allocations and frees and
 * the NVTX ranges of other libraries also become timeline events. Those record kinds are
 * enabled only then, so an unprofiled timing session runs exactly as before.
 */
#include "config.h"

#include "ts-cuda-private.h"

#include <cupti.h>
#include <dlfcn.h>
#include <string.h>

#define CUPTI_FUNCS(X)                                                                             \
  X(cuptiGetResultString)                                                                          \
  X(cuptiActivityRegisterCallbacks)                                                                \
  X(cuptiActivityEnable)                                                                           \
  X(cuptiActivityDisable)                                                                          \
  X(cuptiActivityFlushAll)                                                                         \
  X(cuptiActivityGetNextRecord)                                                                    \
  X(cuptiActivityGetNumDroppedRecords)                                                             \
  X(cuptiGetTimestamp)                                                                             \
  X(cuptiSubscribe)                                                                                \
  X(cuptiEnableCallback)

#define CUPTI_MEMBER(fn) __typeof__(&fn) fn;
typedef struct {
  CUPTI_FUNCS(CUPTI_MEMBER)
} Cupti;

#define CUPTI_STR(x) #x
#define CUPTI_XSTR(x) CUPTI_STR(x)
#define CUPTI_SYM(fn) {CUPTI_XSTR(fn), G_STRUCT_OFFSET(Cupti, fn)},
static const struct {
  const char *symbol;
  gsize offset;
} cupti_syms[] = {CUPTI_FUNCS(CUPTI_SYM)};

/* 1 MiB holds about 4000 kernel records; CUPTI asks for more buffers when it needs them. */
#define BUFFER_BYTES (1u << 20)

static const Cupti *api; /* set once, before any callback can run */

/* What the callbacks share with the timing thread. */
static struct {
  GMutex lock;
  GThread *thread;   /* whose launches are recorded; NULL between sessions */
  GArray *corr;      /* guint32: correlation ids of the recorded launches, in launch order */
  GHashTable *index; /* correlation id → launch index + 1 */
  GArray *durations; /* double ns per recorded launch; -1 until its record arrives */
  GArray *starts;    /* guint64: the GPU's start timestamp per recorded launch (CUPTI clock) */
  gint64 to_host;    /* host clock (ts_trace_now_ns) minus CUPTI clock, taken at begin */
  TsTrace *trace;    /* where device activity records go while a profiled run is recorded */
  GHashTable *open_markers; /* NVTX range id → Marker, between its start and end records */
  guint marker_depth;
} rec;

typedef struct {
  gint64 start_ns; /* host clock */
  char *name;
  guint depth;
} Marker;

static void
marker_free(gpointer p)
{
  Marker *m = p;
  g_free(m->name);
  g_free(m);
}

/* Our own ranges (domain "tessera") are recorded by ts-nvtx.c on the thread that opened them;
 * CUPTI's copies of them would only repeat those. */
#define OWN_NVTX_DOMAIN "tessera"

static char *
result_text(CUptiResult r)
{
  const char *text = NULL;
  if (api == NULL || api->cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == NULL)
    return g_strdup_printf("CUPTI error %d", (int)r);
  return g_strdup(text);
}

static void CUPTIAPI
buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
  *buffer = g_aligned_alloc(1, BUFFER_BYTES, ACTIVITY_RECORD_ALIGNMENT);
  *size = BUFFER_BYTES;
  *max_records = 0; /* as many as fit */
}

static const char *
copy_name(uint8_t kind)
{
  switch (kind) {
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    return "HtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    return "DtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    return "DtoD";
  case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
    return "HtoH";
  case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
    return "PtoP";
  default:
    return "memcpy";
  }
}

static void
add_device_event(TsTraceKind kind, const char *name, guint64 start, guint64 end, guint64 bytes,
                 guint64 address, guint depth)
{
  TsTraceEvent e = {.kind = kind,
                    .name = name,
                    .start_ns = (gint64)start + rec.to_host,
                    .dur_ns = end > start ? (gint64)(end - start) : 0,
                    .bytes = bytes,
                    .address = address,
                    .lane = TS_TRACE_DEVICE_LANE,
                    .depth = depth,
                    .detail = "CUPTI"};
  ts_trace_add(rec.trace, &e);
}

/* A record of one of the kinds enabled while a trace is set; rec.lock is held. */
static void
trace_record(const CUpti_Activity *record)
{
  switch (record->kind) {
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const CUpti_ActivityMemcpy6 *c = (const CUpti_ActivityMemcpy6 *)(const void *)record;
    add_device_event(TS_TRACE_MEMCPY, copy_name(c->copyKind), c->start, c->end, c->bytes, 0, 0);
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)(const void *)record;
    add_device_event(TS_TRACE_MEMSET, "memset", m->start, m->end, m->bytes, 0, 0);
    break;
  }
  case CUPTI_ACTIVITY_KIND_MEMORY2: {
    const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)(const void *)record;
    /* Device memory only: "peak memory" on the timeline means the GPU's. */
    if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
      break;
    if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
      add_device_event(TS_TRACE_ALLOC, "alloc", m->timestamp, m->timestamp, m->bytes, m->address,
                       0);
    else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
      add_device_event(TS_TRACE_FREE, "free", m->timestamp, m->timestamp, m->bytes, m->address,
                       0);
    break;
  }
  case CUPTI_ACTIVITY_KIND_MARKER: {
    const CUpti_ActivityMarker2 *m = (const CUpti_ActivityMarker2 *)(const void *)record;
    if (m->domain != NULL && strcmp(m->domain, OWN_NVTX_DOMAIN) == 0)
      break;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
      Marker *open = g_new0(Marker, 1);
      open->start_ns = (gint64)m->timestamp;
      open->name = g_strdup(m->name != NULL ? m->name : "nvtx");
      open->depth = rec.marker_depth++;
      g_hash_table_replace(rec.open_markers, GUINT_TO_POINTER(m->id), open);
    } else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
      Marker *open = g_hash_table_lookup(rec.open_markers, GUINT_TO_POINTER(m->id));
      if (open == NULL)
        break; /* opened before the trace was set */
      add_device_event(TS_TRACE_RANGE, open->name, (guint64)open->start_ns, m->timestamp, 0, 0,
                       open->depth);
      rec.marker_depth = rec.marker_depth > 0 ? rec.marker_depth - 1 : 0;
      g_hash_table_remove(rec.open_markers, GUINT_TO_POINTER(m->id));
    }
    break;
  }
  default:
    break;
  }
}

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid_size)
{
  CUpti_Activity *record = NULL;
  g_mutex_lock(&rec.lock);
  while (api->cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
      if (rec.trace != NULL)
        trace_record(record);
      continue;
    }
    /* Every kernel record version starts with the same fields; this header's is the newest. */
    const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)(const void *)record;
    guint slot =
        GPOINTER_TO_UINT(g_hash_table_lookup(rec.index, GUINT_TO_POINTER(k->correlationId)));
    if (slot == 0 || k->end < k->start)
      continue;
    g_array_index(rec.durations, double, slot - 1) = (double)(k->end - k->start);
    g_array_index(rec.starts, guint64, slot - 1) = k->start;
  }
  g_mutex_unlock(&rec.lock);
  g_aligned_free(buffer);
}

/* Runs inside cuLaunchKernel on the launching thread, so the ids arrive in launch order. */
static void CUPTIAPI
on_driver_api(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
  const CUpti_CallbackData *cb = data;
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid != CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel ||
      cb->callbackSite != CUPTI_API_EXIT)
    return;
  /* A launch that failed has no kernel record; the caller reports the failure itself. */
  if (cb->functionReturnValue != NULL && *(const CUresult *)cb->functionReturnValue != CUDA_SUCCESS)
    return;
  g_mutex_lock(&rec.lock);
  if (rec.thread == g_thread_self()) {
    guint32 id = cb->correlationId;
    g_array_append_val(rec.corr, id);
    double pending = -1.0;
    g_array_append_val(rec.durations, pending);
    guint64 no_start = 0;
    g_array_append_val(rec.starts, no_start);
    g_hash_table_insert(rec.index, GUINT_TO_POINTER(id), GUINT_TO_POINTER(rec.corr->len));
  }
  g_mutex_unlock(&rec.lock);
}

/* NULL when CUPTI is ready; else why not, for the rest of the process. */
static gpointer
open_library(gpointer why_out)
{
  gboolean not_found = FALSE;
  return ts__cuda_dlopen("libcupti.so.13", &not_found, (char **)why_out);
}

void *
ts__cuda_cupti_library(char **why)
{
  static GOnce once = G_ONCE_INIT;
  static char *failure;
  void *handle = g_once(&once, open_library, &failure);
  *why = handle == NULL ? g_strdup(failure) : NULL;
  return handle;
}

char *
ts__cuda_cupti_result_text(void *library, int result)
{
  __typeof__(&cuptiGetResultString) get =
      library != NULL ? (__typeof__(&cuptiGetResultString))dlsym(library, "cuptiGetResultString")
                      : NULL;
  const char *text = NULL;
  if (get == NULL || get((CUptiResult)result, &text) != CUPTI_SUCCESS || text == NULL)
    return g_strdup_printf("CUPTI error %d", result);
  return g_strdup(text);
}

static gpointer
init_cupti(gpointer data)
{
  char *why = NULL;
  void *handle = ts__cuda_cupti_library(&why);
  if (handle == NULL)
    return why;
  Cupti *fns = g_new0(Cupti, 1);
  for (gsize i = 0; i < G_N_ELEMENTS(cupti_syms); i++) {
    void *sym = dlsym(handle, cupti_syms[i].symbol);
    if (sym == NULL) {
      g_free(fns);
      return g_strdup_printf("libcupti.so.13 lacks %s", cupti_syms[i].symbol);
    }
    memcpy((char *)fns + cupti_syms[i].offset, &sym, sizeof sym);
  }
  api = fns;
  rec.corr = g_array_new(FALSE, FALSE, sizeof(guint32));
  rec.durations = g_array_new(FALSE, FALSE, sizeof(double));
  rec.starts = g_array_new(FALSE, FALSE, sizeof(guint64));
  rec.index = g_hash_table_new(NULL, NULL);
  rec.open_markers = g_hash_table_new_full(NULL, NULL, NULL, marker_free);

  CUpti_SubscriberHandle subscriber = NULL;
  CUptiResult r;
  const char *call = NULL;
  /* Another profiler (nsys, ncu) owns the one subscriber slot, or the driver refuses: */
  if ((r = api->cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) !=
      CUPTI_SUCCESS)
    call = "cuptiActivityRegisterCallbacks";
  else if ((r = api->cuptiSubscribe(&subscriber, on_driver_api, NULL)) != CUPTI_SUCCESS)
    call = "cuptiSubscribe";
  else if ((r = api->cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                         CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)) != CUPTI_SUCCESS)
    call = "cuptiEnableCallback";
  else if ((r = api->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
    call = "cuptiActivityEnable(CONCURRENT_KERNEL)";
  if (call != NULL) {
    g_autofree char *text = result_text(r);
    return g_strdup_printf("%s: %s", call, text);
  }
  return NULL;
}

/* NULL when CUPTI is ready, else why not (the same for the whole process). */
static const char *
cupti_ready(void)
{
  static GOnce once = G_ONCE_INIT;
  return g_once(&once, init_cupti, NULL);
}

/* Both clocks count nanoseconds; one reading of each, back to back, maps one onto the other
 * within a microsecond, which is what a timeline needs. rec.lock is held. */
static void
map_clocks(void)
{
  uint64_t cupti_now = 0;
  gint64 host_now = ts_trace_now_ns();
  rec.to_host = api->cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS
                    ? host_now - (gint64)cupti_now
                    : 0;
}

gboolean
ts__cuda_cupti_begin(GError **error)
{
  const char *failure = cupti_ready();
  if (failure != NULL) {
    g_set_error_literal(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, failure);
    return FALSE;
  }
  g_mutex_lock(&rec.lock);
  g_array_set_size(rec.corr, 0);
  g_array_set_size(rec.durations, 0);
  g_array_set_size(rec.starts, 0);
  g_hash_table_remove_all(rec.index);
  map_clocks();
  rec.thread = g_thread_self();
  g_mutex_unlock(&rec.lock);
  return TRUE;
}

gboolean
ts__cuda_cupti_end(double *samples_ns, gint64 *starts_ns, guint n, guint *n_found,
                   GError **error)
{
  g_mutex_lock(&rec.lock);
  rec.thread = NULL;
  guint launched = rec.corr->len;
  g_mutex_unlock(&rec.lock);

  /* Blocking: every buffer, partly filled ones included, goes through buffer_completed before it
   * returns. The caller has synchronised the stream, so the records are complete. */
  CUptiResult r = api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

  g_mutex_lock(&rec.lock);
  guint found = 0;
  for (guint i = 0; i < n && i < rec.durations->len; i++) {
    samples_ns[i] = g_array_index(rec.durations, double, i);
    if (starts_ns)
      starts_ns[i] = (gint64)g_array_index(rec.starts, guint64, i) + rec.to_host;
    if (samples_ns[i] >= 0)
      found++;
  }
  g_hash_table_remove_all(rec.index);
  g_mutex_unlock(&rec.lock);
  *n_found = found;

  if (r != CUPTI_SUCCESS) {
    g_autofree char *text = result_text(r);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "cuptiActivityFlushAll: %s; set TESSERA_TIMER=events to time with CUDA events",
                text);
    return FALSE;
  }
  if (found < n) {
    size_t dropped = 0;
    api->cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH,
                "CUPTI delivered kernel records for %u of %u timed launches (%u launches seen, "
                "%zu records dropped); set TESSERA_TIMER=events to time with CUDA events",
                found, n, launched, dropped);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------------------------------------ */
/* The device timeline of a profiled run */

static const struct {
  CUpti_ActivityKind kind;
  const char *name;
} trace_kinds[] = {
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "MEMORY2"},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER"},
};

/* NVTX hands its ranges to a tool only when NVTX_INJECTION64_PATH names one, read on the
 * process's first NVTX call; pointing it at the libcupti we use lets MARKER records arrive. A
 * path already set (nsys sets its own) is left alone, and when NVTX has already started, no
 * MARKER records come: the kind is best effort. */
static gboolean offered_nvtx; /* we set NVTX_INJECTION64_PATH (under rec.lock) */

static void
offer_nvtx_injection(void)
{
  if (g_getenv("NVTX_INJECTION64_PATH") != NULL)
    return;
  Dl_info info;
  if (dladdr((void *)api->cuptiActivityEnable, &info) != 0 && info.dli_fname != NULL)
    offered_nvtx = g_setenv("NVTX_INJECTION64_PATH", info.dli_fname, FALSE);
}

/* Child processes (the tuner's workers) must not inherit it: their NVTX would load libcupti. */
static void
withdraw_nvtx_injection(void)
{
  if (offered_nvtx)
    g_unsetenv("NVTX_INJECTION64_PATH");
  offered_nvtx = FALSE;
}

void
ts__cuda_cupti_set_trace(TsTrace *trace)
{
  if (trace == NULL) {
    /* Nothing to stop when no trace was being fed (and no reason to start CUPTI for it). */
    g_mutex_lock(&rec.lock);
    gboolean feeding = rec.trace != NULL;
    g_mutex_unlock(&rec.lock);
    if (!feeding)
      return;
  }
  const char *failure = cupti_ready();
  if (failure != NULL) {
    g_debug("cuda: no device activity on the timeline: %s", failure);
    return;
  }
  if (trace != NULL) {
    g_mutex_lock(&rec.lock);
    offer_nvtx_injection();
    TsTrace *old = rec.trace;
    rec.trace = ts_trace_ref(trace);
    map_clocks();
    g_mutex_unlock(&rec.lock);
    if (old != NULL)
      ts_trace_unref(old);
    for (gsize i = 0; i < G_N_ELEMENTS(trace_kinds); i++) {
      CUptiResult r = api->cuptiActivityEnable(trace_kinds[i].kind);
      if (r != CUPTI_SUCCESS) {
        g_autofree char *text = result_text(r);
        g_debug("cuda: cuptiActivityEnable(%s): %s", trace_kinds[i].name, text);
      }
    }
    return;
  }
  /* Records of work done while the trace was set still sit in CUPTI's buffers: into the trace
   * with them before it is let go. */
  CUptiResult r = api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (r != CUPTI_SUCCESS) {
    g_autofree char *text = result_text(r);
    g_debug("cuda: cuptiActivityFlushAll: %s", text);
  }
  for (gsize i = 0; i < G_N_ELEMENTS(trace_kinds); i++) {
    r = api->cuptiActivityDisable(trace_kinds[i].kind);
    if (r != CUPTI_SUCCESS) {
      g_autofree char *text = result_text(r);
      g_debug("cuda: cuptiActivityDisable(%s): %s", trace_kinds[i].name, text);
    }
  }
  g_mutex_lock(&rec.lock);
  TsTrace *old = g_steal_pointer(&rec.trace);
  g_hash_table_remove_all(rec.open_markers);
  rec.marker_depth = 0;
  withdraw_nvtx_injection();
  g_mutex_unlock(&rec.lock);
  if (old != NULL)
    ts_trace_unref(old);
}
