/* ts-cuda-cupti.c — kernel durations from CUPTI activity records: the GPU's own start and end
 * timestamps of each kernel, with nothing of the launch overhead or of the memsets the backend
 * issues between timed launches (memset records are not enabled, so they never show up).
 *
 * A record is matched to our launch by correlation id: a driver-API callback on cuLaunchKernel
 * notes the id of each launch the timing thread makes, in order, and the CONCURRENT_KERNEL records
 * that carry those ids are the samples. Launches from other threads, or made outside a timing
 * session, are ignored. CUPTI is process-wide, so this state is too; it is set up on first use
 * and kept (enabling the kernel records once costs tens of milliseconds).
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
} rec;

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

static void CUPTIAPI
buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t *buffer, size_t size, size_t valid_size)
{
  CUpti_Activity *record = NULL;
  g_mutex_lock(&rec.lock);
  while (api->cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
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
init_cupti(gpointer data)
{
  gboolean not_found = FALSE;
  char *why = NULL;
  void *handle = ts__cuda_dlopen("libcupti.so.13", &not_found, &why);
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

gboolean
ts__cuda_cupti_begin(GError **error)
{
  static GOnce once = G_ONCE_INIT;
  const char *failure = g_once(&once, init_cupti, NULL);
  if (failure != NULL) {
    g_set_error_literal(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, failure);
    return FALSE;
  }
  g_mutex_lock(&rec.lock);
  g_array_set_size(rec.corr, 0);
  g_array_set_size(rec.durations, 0);
  g_array_set_size(rec.starts, 0);
  g_hash_table_remove_all(rec.index);
  /* Both clocks count nanoseconds; one reading of each, back to back, maps one onto the other
   * within a microsecond, which is what a timeline needs. */
  uint64_t cupti_now = 0;
  gint64 host_now = ts_trace_now_ns();
  rec.to_host = api->cuptiGetTimestamp(&cupti_now) == CUPTI_SUCCESS
                    ? host_now - (gint64)cupti_now
                    : 0;
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
