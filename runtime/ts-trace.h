/* ts-trace.h — a timeline recorder: what a backend did, when, on which lane. A profiled run
 * hands a TsTrace to the backend (ts_backend_set_trace) and to the NVTX ranges (ts_nvtx_set_trace);
 * the profiler stores the events and writes them as a Chrome trace.
 *
 * Times are nanoseconds on one host clock (CLOCK_MONOTONIC, ts_trace_now_ns): host events read
 * it directly; device events (CUPTI records) are mapped onto it by the backend. Recording is
 * thread-safe and cheap (an append under a mutex); names and details are interned strings. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
  TS_TRACE_KERNEL,  /* a kernel's execution */
  TS_TRACE_COMPILE, /* building (or fetching from the artifact cache) a module */
  TS_TRACE_MEMCPY,  /* name "HtoD", "DtoH", "DtoD" */
  TS_TRACE_MEMSET,
  TS_TRACE_ALLOC,   /* instant; bytes, address */
  TS_TRACE_FREE,    /* instant; bytes, address of the allocation it ends */
  TS_TRACE_RANGE,   /* an NVTX range: a tuner phase, a trial */
} TsTraceKind;

#define TS_TRACE_N_KINDS (TS_TRACE_RANGE + 1)

/* Lanes: host threads are their thread id; device streams are offset so they never collide. */
#define TS_TRACE_DEVICE_LANE 0x40000000u

typedef struct {
  TsTraceKind kind;
  const char *name;   /* kernel entry, range name, "HtoD" ... */
  gint64 start_ns;    /* host clock */
  gint64 dur_ns;      /* 0 for instants */
  guint64 bytes;      /* copies, sets, allocations */
  guint64 address;    /* allocations: pairs ALLOC with FREE */
  guint32 lane;       /* host thread id, or TS_TRACE_DEVICE_LANE + stream */
  guint32 depth;      /* nesting of ranges on their lane, 0 outermost */
  const char *detail; /* or NULL: module hash, "from cache", a schedule */
} TsTraceEvent;

typedef struct _TsTrace TsTrace;

TsTrace *ts_trace_new(void);
TsTrace *ts_trace_ref(TsTrace *trace);
void ts_trace_unref(TsTrace *trace);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTrace, ts_trace_unref)

gint64 ts_trace_now_ns(void);
/* The calling thread's lane. */
guint32 ts_trace_thread_lane(void);

/* Appends a copy; name and detail are copied into the trace (once per distinct text), valid as
 * long as the trace is. */
void ts_trace_add(TsTrace *trace, const TsTraceEvent *event);
/* Shorthand for a host event on the calling thread's lane. */
void ts_trace_add_host(TsTrace *trace, TsTraceKind kind, const char *name, gint64 start_ns,
                       gint64 dur_ns, guint64 bytes, guint64 address, const char *detail);

/* Events sorted by start time (ties: longer first, so an enclosing range precedes what it
 * holds). The array is the trace's; it stays valid until the next add. */
const TsTraceEvent *ts_trace_events(TsTrace *trace, guint *n_events);

const char *ts_trace_kind_name(TsTraceKind kind); /* "kernel", "compile", ... */
/* TRUE and *kind set for a name ts_trace_kind_name gives. */
gboolean ts_trace_kind_from_name(const char *name, TsTraceKind *kind);

G_END_DECLS
