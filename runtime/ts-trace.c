/* ts-trace.c — the timeline recorder. One mutex-protected GArray: a profiled run records
 * thousands of events, not millions per second, and sorting happens once, when read. */
#include "ts-trace.h"

#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct _TsTrace {
  gint ref;
  GMutex lock;
  GArray *events; /* TsTraceEvent */
  /* The events' names and details, each text once: they live as long as the trace (interning
   * them for good made a long tune grow with every "trial N: ..." range). */
  GStringChunk *strings;
  gboolean sorted;
};

TsTrace *
ts_trace_new(void)
{
  TsTrace *t = g_new0(TsTrace, 1);
  t->ref = 1;
  g_mutex_init(&t->lock);
  t->events = g_array_new(FALSE, FALSE, sizeof(TsTraceEvent));
  t->strings = g_string_chunk_new(4096);
  t->sorted = TRUE;
  return t;
}

TsTrace *
ts_trace_ref(TsTrace *t)
{
  g_atomic_int_inc(&t->ref);
  return t;
}

void
ts_trace_unref(TsTrace *t)
{
  if (t == NULL || !g_atomic_int_dec_and_test(&t->ref))
    return;
  g_array_unref(t->events);
  g_string_chunk_free(t->strings);
  g_mutex_clear(&t->lock);
  g_free(t);
}

gint64
ts_trace_now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

guint32
ts_trace_thread_lane(void)
{
  static __thread guint32 lane;
  if (lane == 0)
    lane = (guint32)syscall(SYS_gettid);
  return lane;
}

void
ts_trace_add(TsTrace *t, const TsTraceEvent *e)
{
  g_return_if_fail(t != NULL && e != NULL && e->name != NULL);
  TsTraceEvent copy = *e;
  g_mutex_lock(&t->lock);
  copy.name = g_string_chunk_insert_const(t->strings, e->name);
  copy.detail = e->detail ? g_string_chunk_insert_const(t->strings, e->detail) : NULL;
  if (t->events->len > 0) {
    const TsTraceEvent *last = &g_array_index(t->events, TsTraceEvent, t->events->len - 1);
    if (copy.start_ns < last->start_ns)
      t->sorted = FALSE;
  }
  g_array_append_val(t->events, copy);
  g_mutex_unlock(&t->lock);
}

void
ts_trace_add_host(TsTrace *t, TsTraceKind kind, const char *name, gint64 start_ns,
                  gint64 dur_ns, guint64 bytes, guint64 address, const char *detail)
{
  TsTraceEvent e = {
    .kind = kind,
    .name = name,
    .start_ns = start_ns,
    .dur_ns = dur_ns,
    .bytes = bytes,
    .address = address,
    .lane = ts_trace_thread_lane(),
    .detail = detail,
  };
  ts_trace_add(t, &e);
}

static gint
by_start(gconstpointer a, gconstpointer b)
{
  const TsTraceEvent *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  if (x->dur_ns != y->dur_ns)
    return x->dur_ns > y->dur_ns ? -1 : 1;
  return (x->depth > y->depth) - (x->depth < y->depth);
}

const TsTraceEvent *
ts_trace_events(TsTrace *t, guint *n_events)
{
  g_mutex_lock(&t->lock);
  if (!t->sorted) {
    /* Stable, so events recorded in order at the same instant keep it. */
    g_array_sort(t->events, by_start);
    t->sorted = TRUE;
  }
  *n_events = t->events->len;
  const TsTraceEvent *events = (const TsTraceEvent *)(void *)t->events->data;
  g_mutex_unlock(&t->lock);
  return events;
}

static const char *const KIND_NAMES[TS_TRACE_N_KINDS] = {
  "kernel", "compile", "memcpy", "memset", "alloc", "free", "range",
};

const char *
ts_trace_kind_name(TsTraceKind kind)
{
  return (guint)kind < TS_TRACE_N_KINDS ? KIND_NAMES[kind] : "unknown";
}

gboolean
ts_trace_kind_from_name(const char *name, TsTraceKind *kind)
{
  for (guint i = 0; i < TS_TRACE_N_KINDS; i++)
    if (g_strcmp0(name, KIND_NAMES[i]) == 0) {
      *kind = (TsTraceKind)i;
      return TRUE;
    }
  return FALSE;
}
