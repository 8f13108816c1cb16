/* ts-nvtx.h — named, nested ranges on the host timeline of Nsight Systems (NVTX), so a profile of
 * a tuning run shows which trial, compile or measurement each stretch of GPU work belongs to.
 * Ranges are in the "tessera" domain. With no profiler attached each call costs one indirect
 * call; in a build without the NVTX headers both are empty. Any thread; pushes and pops pair up
 * per thread. No CUDA header is seen by callers.
 */
#pragma once

#include <glib.h>

#include "ts-trace.h"

G_BEGIN_DECLS

/* Opens a range named name (copied by the tool; any UTF-8). */
void ts_nvtx_push(const char *name);
/* Closes the innermost range this thread opened. */
void ts_nvtx_pop(void);
/* The same, recorded in the trace (below) under name instead of the name it was opened with:
 * what was learnt while it was open (the tuner knows a trial's database id only once the trial
 * is stored). Nsight keeps the name given at the push. NULL: the pushed name. */
void ts_nvtx_pop_as(const char *name);

/* While set, every range closed on any thread is also recorded in trace (TS_TRACE_RANGE, with
 * its nesting depth): the CPU timeline gets the same phases Nsight shows. NULL stops it; the
 * ranges still open then are not recorded. */
void ts_nvtx_set_trace(TsTrace *trace);

/* How many ranges the calling thread has open: the depth a range pushed now is recorded with.
 * Events recorded elsewhere (the tuner's worker process) and placed inside this thread's open
 * ranges take it as their offset. */
guint ts_nvtx_depth(void);

G_END_DECLS
