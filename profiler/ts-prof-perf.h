/* ts-prof-perf.h — CPU performance counters around a measured stretch (perf_event_open):
 * cycles, instructions, cache references and misses from the PMU, plus the kernel's software
 * counters (task clock, page faults, context switches). Counted on every thread of the process
 * (the kernel's OpenMP team included), user space only, scaled for multiplexing.
 *
 * Never fails: where the kernel or the VM refuses a counter (no PMU in many VMs,
 * perf_event_paranoid, seccomp), it is reported unavailable with the reason and what to do,
 * and the measurement goes on. TESSERA_PERF_COUNTERS=0 turns them all off. */
#pragma once

#include <glib.h>

#include "ts-op.h"

G_BEGIN_DECLS

typedef struct _TsProfCounters TsProfCounters;

TsProfCounters *ts_prof_counters_new(void);
void ts_prof_counters_free(TsProfCounters *counters);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsProfCounters, ts_prof_counters_free)

/* Opens the counters on every thread the process has now and starts them from zero. */
void ts_prof_counters_begin(TsProfCounters *counters);
/* Stops and reads them, adding to the totals since ts_prof_counters_new (several stretches
 * accumulate). */
void ts_prof_counters_end(TsProfCounters *counters);

/* Hooks for TsRunOptions: count around a trial's timed launches (and remember how many). */
void ts_prof_counters_hooks(TsProfCounters *counters, TsMeasureHooks *hooks);
/* Launches counted through the hooks, 0 when none. */
guint ts_prof_counters_launches(const TsProfCounters *counters);

/* A trial's counters: on the cpu backend, new counters hooked into options through hooks
 * (which must outlive the run); NULL elsewhere, where host counters would count the launcher.
 * After the run, ts_prof_counters_finish stores the per-launch figures in a verified result. */
TsProfCounters *ts_prof_counters_attach(TsBackend *backend, TsRunOptions *options,
                                        TsMeasureHooks *hooks);
void ts_prof_counters_finish(const TsProfCounters *counters, TsTrialResult *result);

/* Counter names: "cycles", "instructions", "cache_references", "cache_misses",
 * "task_clock_ns", "page_faults", "context_switches". TRUE and *value (total) when counted. */
gboolean ts_prof_counters_get(const TsProfCounters *counters, const char *name, double *value);
/* Why the PMU counters (cycles ... cache_misses) are missing, one line with the fix; NULL when
 * they were counted. */
const char *ts_prof_counters_unavailable(const TsProfCounters *counters);

/* {"cycles": .., "instructions": .., "ipc": .., "cache_miss_rate": .., "task_clock_ns": ..,
 *  ..., "unavailable": "..."}: totals divided by per (e.g. launches, for per-launch figures);
 * counters not counted are left out and "unavailable" says why. */
char *ts_prof_counters_to_json(const TsProfCounters *counters, double per);

G_END_DECLS
