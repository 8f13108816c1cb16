/* ts-prof-trace.h — a recorded timeline as stored rows and as a Chrome trace.
 *
 * The exchange form is the DB's TsDbEvent (times relative to the profile's t0): a live TsTrace
 * converts to it, the schedule cache stores and returns it, and the Chrome-trace writer and the
 * GUI read it, so a trace exported now and one exported from the cache a month later are the
 * same file. */
#pragma once

#include <glib.h>

#include "ts-db.h"
#include "ts-trace.h"

G_BEGIN_DECLS

/* The trace's events in time order (GArray of TsDbEvent, strings interned), start times made
 * relative to the earliest; *t0_ns gets that earliest host time (0 when empty). */
GArray *ts_prof_trace_events(TsTrace *trace, gint64 *t0_ns);

typedef struct {
  guint64 peak_bytes;  /* most memory allocated at once */
  guint n_by_kind[TS_TRACE_N_KINDS];
  gint64 span_ns;      /* first start to last end */
  gint64 kernel_ns;    /* sum of kernel durations */
} TsProfTraceSummary;

void ts_prof_trace_summarise(const TsDbEvent *events, guint n_events, TsProfTraceSummary *out);

/* Chrome Trace Event Format (the JSON object form, which Perfetto UI and chrome://tracing
 * open): one process named process_name; a thread per lane (host threads "host thread N",
 * device lanes "device stream N"); kernels, compiles, copies, sets and ranges as complete
 * ("X") events in microseconds with bytes and detail as args; allocations and frees as instant
 * events plus a "memory in use" counter track. */
char *ts_prof_chrome_trace(const TsDbEvent *events, guint n_events, const char *process_name);
gboolean ts_prof_chrome_trace_write(const TsDbEvent *events, guint n_events,
                                    const char *process_name, const char *path, GError **error);

G_END_DECLS
