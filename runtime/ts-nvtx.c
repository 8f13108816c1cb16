/* ts-nvtx.c — ts-nvtx.h over the header-only NVTX3. NVTX3 itself finds the profiler's injection
 * library (NVTX_INJECTION64_PATH, set by nsys) with dlopen on the first call, so nothing is
 * linked and a process without a profiler pays only a branch.
 */
#include "config.h"

#include "ts-nvtx.h"

/* The recording side, independent of NVTX: a per-thread stack of open ranges. */
typedef struct {
  char *name; /* owned */
  gint64 start_ns;
  TsTrace *trace;   /* the trace when it opened: a range spanning a set_trace is dropped */
} Open;

static TsTrace *recording; /* under rec_lock */
static GMutex rec_lock;
static void
free_open_ranges(gpointer p)
{
  GArray *a = p;
  for (guint i = 0; i < a->len; i++) {
    ts_trace_unref(g_array_index(a, Open, i).trace);
    g_free(g_array_index(a, Open, i).name);
  }
  g_array_unref(a);
}

static GPrivate open_key = G_PRIVATE_INIT(free_open_ranges);

void
ts_nvtx_set_trace(TsTrace *trace)
{
  g_mutex_lock(&rec_lock);
  TsTrace *old = recording;
  recording = trace ? ts_trace_ref(trace) : NULL;
  g_mutex_unlock(&rec_lock);
  ts_trace_unref(old);
}

static void
record_push(const char *name)
{
  GArray *open_ranges = g_private_get(&open_key);
  if (open_ranges == NULL) {
    open_ranges = g_array_new(FALSE, FALSE, sizeof(Open));
    g_private_set(&open_key, open_ranges);
  }
  g_mutex_lock(&rec_lock);
  Open o = {g_strdup(name), ts_trace_now_ns(), recording ? ts_trace_ref(recording) : NULL};
  g_mutex_unlock(&rec_lock);
  g_array_append_val(open_ranges, o);
}

static void
record_pop(const char *rename)
{
  GArray *open_ranges = g_private_get(&open_key);
  if (open_ranges == NULL || open_ranges->len == 0)
    return;
  Open o = g_array_index(open_ranges, Open, open_ranges->len - 1);
  g_array_set_size(open_ranges, open_ranges->len - 1);
  g_autofree char *name = g_steal_pointer(&o.name);
  if (rename) {
    g_free(name);
    name = g_strdup(rename);
  }
  if (o.trace == NULL)
    return;
  g_mutex_lock(&rec_lock);
  gboolean same = o.trace == recording;
  g_mutex_unlock(&rec_lock);
  if (same) {
    gint64 now = ts_trace_now_ns();
    TsTraceEvent e = {
      .kind = TS_TRACE_RANGE,
      .name = name,
      .start_ns = o.start_ns,
      .dur_ns = now - o.start_ns,
      .lane = ts_trace_thread_lane(),
      .depth = open_ranges->len,
    };
    ts_trace_add(o.trace, &e);
  }
  ts_trace_unref(o.trace);
}

guint
ts_nvtx_depth(void)
{
  GArray *open_ranges = g_private_get(&open_key);
  return open_ranges ? open_ranges->len : 0;
}

#if TS_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

/* A domain of our own keeps our ranges in one row of the timeline, apart from the ranges of
 * libraries in the same process (cuBLAS, PyTorch). */
static nvtxDomainHandle_t
domain(void)
{
  static gsize once = 0;
  static nvtxDomainHandle_t handle = NULL;
  if (g_once_init_enter(&once)) {
    handle = nvtxDomainCreateA("tessera");
    g_once_init_leave(&once, 1);
  }
  return handle;
}

void
ts_nvtx_push(const char *name)
{
  g_return_if_fail(name != NULL);
  nvtxEventAttributes_t attr = {0};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &attr);
  record_push(name);
}

void
ts_nvtx_pop(void)
{
  nvtxDomainRangePop(domain());
  record_pop(NULL);
}

void
ts_nvtx_pop_as(const char *name)
{
  nvtxDomainRangePop(domain());
  record_pop(name);
}

#else /* !TS_HAVE_NVTX */

void
ts_nvtx_push(const char *name)
{
  record_push(name);
}

void
ts_nvtx_pop(void)
{
  record_pop(NULL);
}

void
ts_nvtx_pop_as(const char *name)
{
  record_pop(name);
}

#endif
