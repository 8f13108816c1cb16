/* ts-tune-worker.h — candidates run in a worker process, so one that crashes (SIGSEGV, abort)
 * or hangs takes the worker down, not the tuner.
 *
 * The worker is `tessera-tune worker`: it reads one JSON request per line on stdin (workload,
 * schedule point, seed, sampling options), runs the trial with ts_op_run() (artifacts come
 * from the shared cache the parent has already filled), and writes one JSON result per line on
 * stdout. It keeps workloads, inputs and references across requests, so a tune pays for the
 * f64 reference once. The parent side restarts the worker after a crash or a timeout.
 */
#pragma once

#include <glib.h>

#include "ts-measure-lock.h"
#include "ts-op.h"

G_BEGIN_DECLS

typedef struct {
  const char *op;
  const char *shape;
  const char *dtype;
  const char *schedule; /* complete point, canonical text */
  const char *backend;
  const char *cache_dir; /* artifact cache, or NULL for the default */
  TsRunOptions options;
  /* Non-NULL: the worker records the trial's timeline (backend events and NVTX ranges, as
   * `tessera-tune profile` does) and ts_tune_worker_run adds it here. The worker's own thread
   * is drawn on the calling thread's lane, inside the ranges that thread has open: the caller
   * waits on the worker, so that is where the trial's time goes. A worker that crashes or
   * times out returns no timeline. */
  TsTrace *trace;
  /* TRUE: after a good trial on a backend with hardware counters, the worker also runs the
   * point's metrics pass (ts_prof_point_metrics) into the result's gpu_metrics_json. */
  gboolean metrics;
} TsTuneRequest;

/* The worker's main loop on the given descriptors; returns the process exit status. */
int ts_tune_worker_main(int in_fd, int out_fd);

typedef struct _TsTuneWorker TsTuneWorker;

/* exe: a binary whose `exe worker` runs ts_tune_worker_main (tessera-tune). Started lazily. */
TsTuneWorker *ts_tune_worker_new(const char *exe);
void ts_tune_worker_free(TsTuneWorker *worker);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsTuneWorker, ts_tune_worker_free)

/* One trial in the worker. A crash becomes TS_TRIAL_RUNTIME_ERROR naming the signal, no answer
 * within timeout_s becomes TS_TRIAL_TIMEOUT (the worker is killed); both restart the worker on
 * the next call. GError only when no worker can be started or the request is refused (bad
 * workload: the message says why). */
TsTrialResult *ts_tune_worker_run(TsTuneWorker *worker, const TsTuneRequest *request,
                                  double timeout_s, GError **error);
/* The pieces of ts_tune_worker_run, for a tuner whose candidates are measured elsewhere (another
 * MPI rank's worker, ts-tune-mpi.c): the request as its JSON line; the worker's answer to such
 * a line, or the result line a crash or timeout comes to (NULL with error only when no worker
 * can be started); and a result line read back (trace as in TsTuneRequest). */
char *ts_tune_request_to_json(const TsTuneRequest *request);
char *ts_tune_worker_answer(TsTuneWorker *worker, const char *request, double timeout_s,
                            GError **error);
TsTrialResult *ts_tune_result_from_json(const char *line, TsTrace *trace, GError **error);
/* The same process protocol for other requests: `exe command` started lazily, one request line
 * in, one answer line out (gate/ts-gate-worker.c uses it to measure a perf gate's kernels). */
TsTuneWorker *ts_tune_worker_new_command(const char *exe, const char *command);

typedef enum {
  TS_TUNE_WORKER_ANSWERED,  /* the answer line is returned */
  TS_TUNE_WORKER_TIMED_OUT, /* no answer within the timeout: the worker was killed */
  TS_TUNE_WORKER_DIED,      /* the worker died during the request (a crash, an exit) */
} TsTuneWorkerFate;

/* request: one line of text without '\n'. NULL unless answered: *why then says what happened
 * ("signal 11 (Segmentation fault)", "exited with status 1", "no result within 5.0 s; ..."), and the next call starts a
 * fresh worker; GError only when no worker can be started (*why NULL). */
char *ts_tune_worker_call(TsTuneWorker *worker, const char *request, double timeout_s,
                          TsTuneWorkerFate *fate, char **why, GError **error);
/* The worker's side of that protocol: each request line answered by serve (which sets
 * *exiting to end the process after its answer) until the input ends. Returns the process exit
 * status. */
typedef char *(*TsTuneWorkerServe)(gpointer data, const char *line, gboolean *exiting);
int ts_tune_worker_loop(int in_fd, int out_fd, TsTuneWorkerServe serve, gpointer data);
/* Inside that loop: runs with these options tell the parent when they wait for another
 * process's measuring lock, so that the wait does not count against the request's timeout. */
void ts_tune_worker_watch_locks(TsRunOptions *options);
/* ... and a turn taken by hand (ts-measure-lock.h), its wait told to the parent the same way. */
TsMeasureLock *ts_tune_worker_take_turn(const char *unit, TsMeasureLockMode mode,
                                        const char *what);
/* Kills the running worker, if any (a caller that gives up on its state). */
void ts_tune_worker_stop(TsTuneWorker *worker);

/* Process id of the running worker, 0 when none (tests kill it). */
GPid ts_tune_worker_pid(const TsTuneWorker *worker);

G_END_DECLS
