/* ts-tune-worker.c — both ends of the worker protocol: the loop inside `tessera-tune worker`
 * and the parent that feeds it one candidate at a time, with a timeout, and restarts it after
 * a crash. One JSON object per line each way. */
#include "ts-tune-worker.h"

#include <errno.h>
#include <gio/gio.h>
#include <gio/gunixinputstream.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "ts-measure-lock.h"
#include "ts-nvtx.h"
#include "ts-prof-metrics.h"
#include "ts-prof-perf.h"
#include "ts-tune-strategy.h"

/* ---- wire format ---- */

static char *
request_to_json(const TsTuneRequest *q)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
#define STR(k, v)                                                                                 \
  do {                                                                                            \
    json_builder_set_member_name(b, k);                                                           \
    if (v)                                                                                        \
      json_builder_add_string_value(b, v);                                                        \
    else                                                                                          \
      json_builder_add_null_value(b);                                                             \
  } while (0)
#define NUM(k, v)                                                                                 \
  do {                                                                                            \
    json_builder_set_member_name(b, k);                                                           \
    json_builder_add_double_value(b, v);                                                          \
  } while (0)
  STR("op", q->op);
  /* A kernel file's op exists only where it was registered: the worker registers it too. */
  const char *kernel = q->op ? ts_op_kernel_source(ts_op_lookup(q->op)) : NULL;
  if (kernel) {
    STR("kernel", kernel);
    STR("kernel_path", ts_op_kernel_path(ts_op_lookup(q->op)));
  }
  STR("shape", q->shape);
  STR("dtype", q->dtype);
  STR("schedule", q->schedule);
  STR("backend", q->backend);
  STR("cache_dir", q->cache_dir);
  NUM("seed", (double)q->options.seed);
  NUM("verify", q->options.verify);
  NUM("n_warmup", q->options.n_warmup);
  NUM("min_samples", q->options.min_samples);
  NUM("max_samples", q->options.max_samples);
  NUM("target_ms", q->options.target_ms);
  NUM("rel_spread", q->options.rel_spread);
  if (q->trace) {
    json_builder_set_member_name(b, "trace");
    json_builder_add_boolean_value(b, TRUE);
  }
  if (q->metrics) {
    json_builder_set_member_name(b, "metrics");
    json_builder_add_boolean_value(b, TRUE);
  }
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}

/* The trial's timeline: the worker's lane (so the parent can tell its serving thread from the
 * others) and every event, times on the host clock, which both processes share. */
static void
add_trace(JsonBuilder *b, TsTrace *trace)
{
  guint n = 0;
  const TsTraceEvent *ev = ts_trace_events(trace, &n);
  json_builder_set_member_name(b, "trace");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "lane");
  json_builder_add_int_value(b, ts_trace_thread_lane());
  json_builder_set_member_name(b, "events");
  json_builder_begin_array(b);
  for (guint i = 0; i < n; i++) {
    const TsTraceEvent *e = &ev[i];
    json_builder_begin_object(b);
    STR("kind", ts_trace_kind_name(e->kind));
    STR("name", e->name);
    STR("detail", e->detail);
#define INT(k, v)                                                                                 \
  do {                                                                                            \
    json_builder_set_member_name(b, k);                                                           \
    json_builder_add_int_value(b, (gint64)(v));                                                   \
  } while (0)
    INT("start_ns", e->start_ns);
    INT("dur_ns", e->dur_ns);
    INT("bytes", e->bytes);
    INT("address", e->address);
    INT("lane", e->lane);
    INT("depth", e->depth);
#undef INT
    json_builder_end_object(b);
  }
  json_builder_end_array(b);
  json_builder_end_object(b);
}

static char *
result_to_json(const TsTrialResult *r, const char *refused, TsTrace *trace, gboolean exiting)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  if (exiting) {
    json_builder_set_member_name(b, "worker_exit");
    json_builder_add_boolean_value(b, TRUE);
  }
  if (refused) {
    STR("refused", refused);
  } else {
    STR("status", ts_trial_status_name(r->status));
    STR("message", r->message);
    STR("host", g_get_host_name());
    STR("artifact", r->artifact);
    NUM("rel_error", isfinite(r->rel_error) ? r->rel_error : -1.0);
    NUM("tolerance", r->tolerance);
    STR("verification", r->verification);
    NUM("compile_ms", r->compile_ms);
    NUM("compile_cpu_ms", r->compile_cpu_ms);
    NUM("cache_hit", r->cache_hit);
    const TsModuleResources *res = &r->resources;
    NUM("registers", res->registers);
    NUM("smem_static", res->smem_static);
    NUM("smem_dynamic", res->smem_dynamic);
    NUM("local_bytes", res->local_bytes);
    NUM("spill_stores", res->spill_stores);
    NUM("spill_loads", res->spill_loads);
    NUM("threads", res->threads);
    STR("counters", r->counters_json);
    if (r->gpu_metrics_json)
      STR("gpu_metrics", r->gpu_metrics_json);
    json_builder_set_member_name(b, "samples_ns");
    json_builder_begin_array(b);
    for (guint i = 0; i < r->samples_ns->len; i++)
      json_builder_add_double_value(b, g_array_index(r->samples_ns, double, i));
    json_builder_end_array(b);
    if (r->cpu_samples) { /* pairs: thread, process */
      json_builder_set_member_name(b, "cpu_ns");
      json_builder_begin_array(b);
      for (guint i = 0; i < r->cpu_samples->len; i++) {
        const TsCpuTime *c = &g_array_index(r->cpu_samples, TsCpuTime, i);
        json_builder_add_double_value(b, c->thread_ns);
        json_builder_add_double_value(b, c->process_ns);
      }
      json_builder_end_array(b);
    }
  }
  if (trace)
    add_trace(b, trace);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}
#undef STR
#undef NUM

static TsTrialStatus
status_from_name(const char *name)
{
  for (int s = TS_TRIAL_OK; s <= TS_TRIAL_WRONG_RESULT; s++)
    if (g_strcmp0(ts_trial_status_name(s), name) == 0)
      return s;
  return TS_TRIAL_RUNTIME_ERROR;
}

/* ---- worker side ---- */

static gboolean
write_line(int fd, const char *text)
{
  g_autofree char *line = g_strconcat(text, "\n", NULL);
  gsize len = strlen(line), off = 0;
  while (off < len) {
    ssize_t n = write(fd, line + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    off += n;
  }
  return TRUE;
}

/* The loop's answer pipe, for the lines that tell the parent about a lock wait between a request
 * and its answer: {"lock_wait": "who holds it"}, then {"lock_wait": null}. */
static int announce_fd = -1;

static void
announce_lock_wait(gpointer data, const char *holder)
{
  (void)data;
  g_autoptr(JsonNode) who = holder ? json_node_init_string(json_node_alloc(), holder)
                                   : json_node_init_null(json_node_alloc());
  g_autofree char *text = json_to_string(who, FALSE);
  g_autofree char *line = g_strdup_printf("{\"lock_wait\": %s}", text);
  if (announce_fd >= 0)
    (void)write_line(announce_fd, line);
}

TsMeasureLock *
ts_tune_worker_take_turn(const char *unit, TsMeasureLockMode mode, const char *what)
{
  return ts_measure_lock_acquire(unit, mode, what, announce_lock_wait, NULL);
}

void
ts_tune_worker_watch_locks(TsRunOptions *options)
{
  g_return_if_fail(options != NULL);
  options->lock_wait = announce_lock_wait;
  options->lock_wait_data = NULL;
}

/* Reads one '\n'-terminated line; waits at most timeout_ms (< 0: forever). Returns NULL on
 * EOF; *timed_out tells a timeout apart. */
static char *
read_line(int fd, GString *buf, int timeout_ms, gboolean *timed_out)
{
  gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  *timed_out = FALSE;
  for (;;) {
    char *nl = memchr(buf->str, '\n', buf->len);
    if (nl) {
      char *line = g_strndup(buf->str, nl - buf->str);
      g_string_erase(buf, 0, nl - buf->str + 1);
      return line;
    }
    int wait = -1;
    if (deadline >= 0) {
      gint64 left = deadline - g_get_monotonic_time();
      if (left <= 0) {
        *timed_out = TRUE;
        return NULL;
      }
      wait = (int)MIN(left / 1000 + 1, G_MAXINT);
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int rc = poll(&p, 1, wait);
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc == 0)
      continue; /* the deadline check above decides */
    char chunk[4096];
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return NULL;
    g_string_append_len(buf, chunk, n);
  }
}

typedef struct {
  GHashTable *instances; /* "op|shape|dtype" -> TsOpInstance */
  GHashTable *backends;  /* name -> TsBackend */
} WorkerState;

/* The trial as the worker answers it when its backend is lost (ts_backend_lost): the candidate
 * that broke the device state fails as a runtime error, whether the breakage surfaced in its
 * launch (r) or in the machinery after it (error), and the worker then exits so that no later
 * candidate inherits a dead context. */
static TsTrialResult *
lost_result(TsTrialResult *r, GError *error, const char *lost)
{
  if (r == NULL)
    r = ts_trial_result_new();
  const char *why = r->status != TS_TRIAL_OK && *r->message ? r->message
                    : error != NULL                         ? error->message
                                                            : lost;
  g_autofree char *message =
    g_strdup_printf("%s (the worker exits; the next candidate runs in a fresh one)", why);
  r->status = TS_TRIAL_RUNTIME_ERROR;
  g_free(r->message);
  r->message = g_steal_pointer(&message);
  return r;
}

static char *
serve(gpointer data, const char *line, gboolean *exiting)
{
  WorkerState *st = data;
  g_autoptr(JsonParser) parser = json_parser_new();
  g_autoptr(GError) error = NULL;
  if (!json_parser_load_from_data(parser, line, -1, &error))
    return result_to_json(NULL, error->message, NULL, FALSE);
  JsonObject *o = json_node_get_object(json_parser_get_root(parser));
  const char *op = json_object_get_string_member_with_default(o, "op", "");
  const char *shape = json_object_get_string_member_with_default(o, "shape", "");
  const char *dtype = json_object_get_string_member_with_default(o, "dtype", "f32");
  const char *schedule = json_object_get_string_member_with_default(o, "schedule", "");
  const char *backend_name = json_object_get_string_member_with_default(o, "backend", "cpu");
  const char *cache_dir = NULL;
  if (json_object_has_member(o, "cache_dir") && !json_object_get_null_member(o, "cache_dir"))
    cache_dir = json_object_get_string_member(o, "cache_dir");

  if (json_object_has_member(o, "kernel") && ts_op_lookup(op) == NULL) {
    const char *path = json_object_has_member(o, "kernel_path") &&
                           !json_object_get_null_member(o, "kernel_path")
                         ? json_object_get_string_member(o, "kernel_path")
                         : NULL;
    if (ts_op_register_kernel_op(op, json_object_get_string_member(o, "kernel"), path,
                                 &error) == NULL)
      return result_to_json(NULL, error->message, NULL, FALSE);
  }
  g_autofree char *key = g_strdup_printf("%s|%s|%s", op, shape, dtype);
  TsOpInstance *inst = g_hash_table_lookup(st->instances, key);
  if (inst == NULL) {
    inst = ts_op_instance_new(op, shape, dtype, &error);
    if (inst == NULL)
      return result_to_json(NULL, error->message, NULL, FALSE);
    g_hash_table_insert(st->instances, g_strdup(key), inst);
  }
  TsBackend *backend = g_hash_table_lookup(st->backends, backend_name);
  if (backend == NULL) {
    backend = ts_backend_open(backend_name, &error);
    if (backend == NULL)
      return result_to_json(NULL, error->message, NULL, FALSE);
    g_hash_table_insert(st->backends, g_strdup(backend_name), backend);
  }
  ts_backend_set_cache_dir(backend, cache_dir);
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(schedule, &error);
  if (point == NULL)
    return result_to_json(NULL, error->message, NULL, FALSE);

  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.seed = (guint64)json_object_get_double_member_with_default(o, "seed", 1);
  opt.verify = json_object_get_double_member_with_default(o, "verify", 1) != 0;
  opt.n_warmup = (guint)json_object_get_double_member_with_default(o, "n_warmup", opt.n_warmup);
  opt.min_samples =
    (guint)json_object_get_double_member_with_default(o, "min_samples", opt.min_samples);
  opt.max_samples =
    (guint)json_object_get_double_member_with_default(o, "max_samples", opt.max_samples);
  opt.target_ms = json_object_get_double_member_with_default(o, "target_ms", opt.target_ms);
  opt.rel_spread = json_object_get_double_member_with_default(o, "rel_spread", opt.rel_spread);
  ts_tune_worker_watch_locks(&opt);
  TsMeasureHooks hooks;
  g_autoptr(TsProfCounters) counters = ts_prof_counters_attach(backend, &opt, &hooks);
  /* Recorded only while this trial runs, so an unprofiled request times exactly as before (on
   * a GPU the trace also turns CUPTI's device records on). */
  g_autoptr(TsTrace) trace =
    json_object_get_boolean_member_with_default(o, "trace", FALSE) ? ts_trace_new() : NULL;
  if (trace) {
    ts_backend_set_trace(backend, trace);
    ts_nvtx_set_trace(trace);
  }
  g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, &opt, &error);
  if (trace) {
    ts_nvtx_set_trace(NULL);
    ts_backend_set_trace(backend, NULL);
  }
  const char *lost = ts_backend_lost(backend);
  if (lost != NULL) {
    *exiting = TRUE;
    r = lost_result(g_steal_pointer(&r), error, lost);
    return result_to_json(r, NULL, NULL, TRUE);
  }
  if (r == NULL)
    return result_to_json(NULL, error->message, NULL, FALSE);
  ts_prof_counters_finish(counters, r);
  /* Hardware metrics: a pass of their own after the timed run and off the timeline, since the
   * range profiler replays and serialises the kernel. */
  if (json_object_get_boolean_member_with_default(o, "metrics", FALSE) &&
      ts_backend_has_metrics(backend) && r->status == TS_TRIAL_OK) {
    g_autofree char *why = NULL;
    g_autoptr(TsProfKernelMetrics) m = ts_prof_point_metrics(inst, backend, point, &opt, &why);
    if (m != NULL) {
      r->gpu_metrics_json = ts_prof_kernel_metrics_to_json(m);
    } else {
      g_autoptr(JsonBuilder) u = json_builder_new();
      json_builder_begin_object(u);
      json_builder_set_member_name(u, "unavailable");
      json_builder_add_string_value(u, why);
      json_builder_end_object(u);
      g_autoptr(JsonNode) un = json_builder_get_root(u);
      r->gpu_metrics_json = json_to_string(un, FALSE);
    }
    if ((lost = ts_backend_lost(backend)) != NULL) {
      *exiting = TRUE;
      return result_to_json(r, NULL, NULL, TRUE);
    }
  }
  return result_to_json(r, NULL, trace, FALSE);
}

typedef struct {
  int in_fd;
  pid_t parent;
} Watch;

/* A worker outlives a parent killed from outside (kill -9, a test's timeout, MPI taking a job
 * down) unless it notices: mid-request, it would go on compiling, verifying or looping in a
 * hung kernel, holding the host's lock (ts-measure-lock.h) that every other tuner on the host
 * then waits for. The parent's death closes the request pipe's last writer; poll() reports that
 * hang-up even with no events asked for, so this thread sleeps until then, and stops the worker
 * once the parent is really gone — a parent that closed the pipe on purpose, or a pipe fed from
 * a finished `printf`, leaves the worker to answer and exit by itself. Exit runs after the
 * parent's files are closed, so getppid() is polled a while before it changes. */
static gpointer
watch_parent(gpointer data)
{
  Watch *w = data;
  struct pollfd p = {.fd = w->in_fd, .events = 0};
  while (poll(&p, 1, -1) < 0 && errno == EINTR)
    ;
  if ((p.revents & (POLLHUP | POLLERR)) == 0)
    return NULL;
  for (;;) {
    if (getppid() != w->parent) {
      g_printerr("tessera-tune worker: its parent (pid %ld) is gone; stopping\n",
                 (long)w->parent);
      _exit(1);
    }
    g_usleep(20 * 1000);
  }
}

int
ts_tune_worker_loop(int in_fd, int out_fd, TsTuneWorkerServe serve_line, gpointer data)
{
  g_autoptr(GString) buf = g_string_new(NULL);
  announce_fd = out_fd;
  static Watch watch;
  watch.in_fd = in_fd;
  watch.parent = getppid();
  if (watch.parent > 1)
    g_thread_unref(g_thread_new("ts-watch-parent", watch_parent, &watch));
  for (;;) {
    gboolean timed_out;
    g_autofree char *line = read_line(in_fd, buf, -1, &timed_out);
    if (line == NULL)
      return 0;
    gboolean exiting = FALSE;
    g_autofree char *reply = serve_line(data, line, &exiting);
    if (!write_line(out_fd, reply))
      return 1;
    if (exiting)
      return 0;
  }
}

int
ts_tune_worker_main(int in_fd, int out_fd)
{
  WorkerState st = {
    .instances = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify)ts_op_instance_free),
    .backends = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify)ts_backend_free),
  };
  int status = ts_tune_worker_loop(in_fd, out_fd, serve, &st);
  g_hash_table_unref(st.instances);
  g_hash_table_unref(st.backends);
  return status;
}

/* ---- parent side ---- */

struct _TsTuneWorker {
  char *exe;
  char *command;
  GSubprocess *proc;
  GOutputStream *in;
  int out_fd;
  GString *buf;
};

TsTuneWorker *
ts_tune_worker_new(const char *exe)
{
  return ts_tune_worker_new_command(exe, "worker");
}

TsTuneWorker *
ts_tune_worker_new_command(const char *exe, const char *command)
{
  TsTuneWorker *w = g_new0(TsTuneWorker, 1);
  w->exe = g_strdup(exe);
  w->command = g_strdup(command);
  w->buf = g_string_new(NULL);
  w->out_fd = -1;
  return w;
}

static void
worker_stop(TsTuneWorker *w, gboolean kill)
{
  if (w->proc == NULL)
    return;
  if (kill)
    g_subprocess_force_exit(w->proc);
  g_output_stream_close(w->in, NULL, NULL);
  g_subprocess_wait(w->proc, NULL, NULL);
  g_clear_object(&w->proc);
  w->in = NULL;
  w->out_fd = -1;
  g_string_truncate(w->buf, 0);
}

void
ts_tune_worker_free(TsTuneWorker *w)
{
  if (w == NULL)
    return;
  worker_stop(w, FALSE);
  g_free(w->exe);
  g_free(w->command);
  g_string_free(w->buf, TRUE);
  g_free(w);
}

GPid
ts_tune_worker_pid(const TsTuneWorker *w)
{
  if (w == NULL || w->proc == NULL)
    return 0;
  const char *id = g_subprocess_get_identifier(w->proc);
  return id ? (GPid)g_ascii_strtoll(id, NULL, 10) : 0;
}

static gboolean
worker_start(TsTuneWorker *w, GError **error)
{
  if (w->proc)
    return TRUE;
  /* A worker that died must not kill the tuner through SIGPIPE on the next request. */
  signal(SIGPIPE, SIG_IGN);
  w->proc = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, error,
                             w->exe, w->command, NULL);
  if (w->proc == NULL) {
    g_prefix_error(error, "cannot start the worker process '%s %s': ", w->exe, w->command);
    return FALSE;
  }
  w->in = g_subprocess_get_stdin_pipe(w->proc);
  w->out_fd = g_unix_input_stream_get_fd(G_UNIX_INPUT_STREAM(g_subprocess_get_stdout_pipe(w->proc)));
  return TRUE;
}

/* The worker's timeline into the caller's trace: its serving thread onto the calling thread's
 * lane, its ranges below the ranges open there; its other lanes (device streams, helper
 * threads) as they are. */
static void
merge_trace(JsonObject *o, TsTrace *into)
{
  JsonNode *tn = json_object_get_member(o, "trace");
  if (tn == NULL || !JSON_NODE_HOLDS_OBJECT(tn))
    return;
  JsonObject *t = json_node_get_object(tn);
  gint64 worker_lane = json_object_get_int_member_with_default(t, "lane", -1);
  guint32 lane = ts_trace_thread_lane();
  guint depth = ts_nvtx_depth();
  JsonArray *a = json_object_get_array_member(t, "events");
  for (guint i = 0; a && i < json_array_get_length(a); i++) {
    JsonNode *en = json_array_get_element(a, i);
    if (!JSON_NODE_HOLDS_OBJECT(en))
      continue;
    JsonObject *e = json_node_get_object(en);
    TsTraceKind kind;
    const char *name = json_object_get_string_member_with_default(e, "name", NULL);
    if (name == NULL ||
        !ts_trace_kind_from_name(json_object_get_string_member_with_default(e, "kind", ""),
                                 &kind))
      continue;
    TsTraceEvent ev = {
      .kind = kind,
      .name = name,
      .start_ns = json_object_get_int_member_with_default(e, "start_ns", 0),
      .dur_ns = json_object_get_int_member_with_default(e, "dur_ns", 0),
      .bytes = (guint64)json_object_get_int_member_with_default(e, "bytes", 0),
      .address = (guint64)json_object_get_int_member_with_default(e, "address", 0),
      .lane = (guint32)json_object_get_int_member_with_default(e, "lane", 0),
      .depth = (guint32)json_object_get_int_member_with_default(e, "depth", 0),
    };
    if (json_object_has_member(e, "detail") && !json_object_get_null_member(e, "detail"))
      ev.detail = json_object_get_string_member(e, "detail");
    if ((gint64)ev.lane == worker_lane) {
      ev.lane = lane;
      if (kind == TS_TRACE_RANGE)
        ev.depth += depth;
    }
    ts_trace_add(into, &ev);
  }
}

static TsTrialResult *
parse_result(const char *line, TsTrace *trace, gboolean *exiting, GError **error)
{
  g_autoptr(JsonParser) parser = json_parser_new();
  if (!json_parser_load_from_data(parser, line, -1, error))
    return NULL;
  JsonNode *root = json_parser_get_root(parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_FAILED,
                "the candidate worker answered something that is not a JSON object");
    return NULL;
  }
  JsonObject *o = json_node_get_object(root);
  *exiting = json_object_get_boolean_member_with_default(o, "worker_exit", FALSE);
  if (json_object_has_member(o, "refused")) {
    g_set_error(error, TS_TUNE_ERROR, TS_TUNE_ERROR_FAILED, "%s",
                json_object_get_string_member(o, "refused"));
    return NULL;
  }
  TsTrialResult *r = ts_trial_result_new();
  r->status = status_from_name(json_object_get_string_member_with_default(o, "status", ""));
  g_free(r->message);
  r->message = g_strdup(json_object_get_string_member_with_default(o, "message", ""));
  if (json_object_has_member(o, "artifact") && !json_object_get_null_member(o, "artifact"))
    r->artifact = g_strdup(json_object_get_string_member_with_default(o, "artifact", NULL));
  r->rel_error = json_object_get_double_member_with_default(o, "rel_error", -1);
  if (r->rel_error < 0)
    r->rel_error = INFINITY;
  r->tolerance = json_object_get_double_member_with_default(o, "tolerance", 0);
  r->verification =
    g_strdup(json_object_get_string_member_with_default(o, "verification", NULL));
  r->compile_ms = json_object_get_double_member_with_default(o, "compile_ms", 0);
  r->compile_cpu_ms = json_object_get_double_member_with_default(o, "compile_cpu_ms", 0);
  r->host = g_strdup(json_object_get_string_member_with_default(o, "host", NULL));
  r->cache_hit = json_object_get_double_member_with_default(o, "cache_hit", 0) != 0;
  TsModuleResources *res = &r->resources;
  res->registers = (gint)json_object_get_int_member_with_default(o, "registers", -1);
  res->smem_static = (gint)json_object_get_int_member_with_default(o, "smem_static", -1);
  res->smem_dynamic = (gint)json_object_get_int_member_with_default(o, "smem_dynamic", -1);
  res->local_bytes = (gint)json_object_get_int_member_with_default(o, "local_bytes", -1);
  res->spill_stores = (gint)json_object_get_int_member_with_default(o, "spill_stores", -1);
  res->spill_loads = (gint)json_object_get_int_member_with_default(o, "spill_loads", -1);
  res->threads = (gint)json_object_get_int_member_with_default(o, "threads", -1);
  const char *counters = json_object_get_string_member_with_default(o, "counters", NULL);
  r->counters_json = counters ? g_strdup(counters) : NULL;
  r->gpu_metrics_json =
    g_strdup(json_object_get_string_member_with_default(o, "gpu_metrics", NULL));
  JsonArray *a = json_object_get_array_member(o, "samples_ns");
  for (guint i = 0; a && i < json_array_get_length(a); i++) {
    double v = json_array_get_double_element(a, i);
    g_array_append_val(r->samples_ns, v);
  }
  JsonArray *c = json_object_has_member(o, "cpu_ns") ? json_object_get_array_member(o, "cpu_ns")
                                                     : NULL;
  if (c && json_array_get_length(c) == 2 * r->samples_ns->len) {
    r->cpu_samples = g_array_sized_new(FALSE, FALSE, sizeof(TsCpuTime), r->samples_ns->len);
    for (guint i = 0; i < r->samples_ns->len; i++) {
      TsCpuTime t = {json_array_get_double_element(c, 2 * i),
                     json_array_get_double_element(c, 2 * i + 1)};
      g_array_append_val(r->cpu_samples, t);
    }
  }
  if (trace)
    merge_trace(o, trace);
  return r;
}

static gboolean
send_request(TsTuneWorker *w, const char *line)
{
  return g_output_stream_write_all(w->in, line, strlen(line), NULL, NULL, NULL) &&
         g_output_stream_flush(w->in, NULL, NULL);
}

/* A line the worker wrote, as an object, or NULL when it is none. */
static JsonObject *
line_object(JsonParser *parser, const char *line)
{
  JsonNode *root = json_parser_load_from_data(parser, line, -1, NULL)
                     ? json_parser_get_root(parser)
                     : NULL;
  return root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
}

#define LOCK_WAIT_PREFIX "{\"lock_wait\": "

/* A wait this long is told on stderr: the user sees why the tune stands still. */
#define LOCK_WAIT_TELL_US (10 * G_USEC_PER_SEC)

/* The answer to the request just sent, within timeout_s of the worker's own time: while it
 * says it waits for another process's lock (ts-measure-lock.h) the clock stops, up to the
 * lock's own bound on waiting. */
static char *
read_answer(TsTuneWorker *w, double timeout_s, gboolean *timed_out)
{
  gint64 left_us = (gint64)MIN(timeout_s * G_USEC_PER_SEC, (double)G_MAXINT64 / 2);
  double lock_wait_s = ts_measure_lock_max_wait_s();
  gboolean waiting = FALSE, told = FALSE;
  g_autofree char *holder = NULL;
  for (;;) {
    gint64 started = g_get_monotonic_time();
    gint64 wait_us = waiting ? (gint64)((MAX(lock_wait_s, 0) + 30) * G_USEC_PER_SEC) : left_us;
    if (waiting && !told)
      wait_us = LOCK_WAIT_TELL_US;
    char *line = read_line(w->out_fd, w->buf, (int)CLAMP(wait_us / 1000, 0, G_MAXINT), timed_out);
    if (!waiting)
      left_us -= g_get_monotonic_time() - started;
    if (line == NULL && *timed_out && waiting && !told) {
      g_printerr("tessera-tune: waiting for its turn at the device: %s\n", holder);
      told = TRUE;
      continue;
    }
    if (line == NULL || !g_str_has_prefix(line, LOCK_WAIT_PREFIX))
      return line;
    /* {"lock_wait": "who"} starts a wait, {"lock_wait": null} ends it. */
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = line_object(parser, line);
    g_free(line);
    const char *who = o ? json_object_get_string_member_with_default(o, "lock_wait", NULL) : NULL;
    waiting = who != NULL;
    if (waiting) {
      g_free(holder);
      holder = g_strdup(who);
      told = FALSE;
    }
    if (!waiting && left_us <= 0) {
      *timed_out = TRUE;
      return NULL;
    }
  }
}

/* Sends one line and reads the answer. retry_idle: a worker found dead before it was asked
 * (killed from outside while idle) is replaced and asked again, so the request is not blamed
 * for a death it did not cause; a stateful caller cannot do that, its state died too. */
static char *
worker_call(TsTuneWorker *w, const char *request, double timeout_s, gboolean retry_idle,
            TsTuneWorkerFate *fate, char **why, GError **error)
{
  *fate = TS_TUNE_WORKER_DIED;
  *why = NULL;
  /* GSubprocess reaps through GLib's worker thread; a reaped worker has no identifier. Its pipe
   * can still take a write while its last threads exit, so look before writing. */
  if (retry_idle && w->proc && g_subprocess_get_identifier(w->proc) == NULL)
    worker_stop(w, FALSE);
  if (!worker_start(w, error))
    return NULL;
  g_autofree char *line = g_strconcat(request, "\n", NULL);
  gboolean sent = send_request(w, line);
  if (!sent && retry_idle) {
    worker_stop(w, TRUE);
    if (!worker_start(w, error))
      return NULL;
    sent = send_request(w, line);
  }
  gboolean timed_out = FALSE;
  char *reply = NULL;
  if (sent)
    reply = read_answer(w, timeout_s, &timed_out);
  if (reply != NULL) {
    *fate = TS_TUNE_WORKER_ANSWERED;
    return reply;
  }
  if (timed_out) {
    worker_stop(w, TRUE);
    *fate = TS_TUNE_WORKER_TIMED_OUT;
    *why = g_strdup_printf("no result within %.1f s; the worker was killed", timeout_s);
    return NULL;
  }
  /* EOF: the request took the worker down. */
  g_subprocess_wait(w->proc, NULL, NULL);
  if (g_subprocess_get_if_signaled(w->proc)) {
    int sig = g_subprocess_get_term_sig(w->proc);
    *why = g_strdup_printf("signal %d (%s)", sig, g_strsignal(sig));
  } else {
    *why = g_strdup_printf("exited with status %d", g_subprocess_get_exit_status(w->proc));
  }
  worker_stop(w, FALSE);
  return NULL;
}

char *
ts_tune_worker_call(TsTuneWorker *w, const char *request, double timeout_s,
                    TsTuneWorkerFate *fate, char **why, GError **error)
{
  return worker_call(w, request, timeout_s, FALSE, fate, why, error);
}

void
ts_tune_worker_stop(TsTuneWorker *w)
{
  worker_stop(w, TRUE);
}

/* What a request the worker never answered comes to: a crash, or a timeout. */
static TsTrialResult *
unanswered_result(TsTuneWorkerFate fate, char *why)
{
  TsTrialResult *r = ts_trial_result_new();
  g_free(r->message);
  if (fate == TS_TUNE_WORKER_TIMED_OUT) {
    r->status = TS_TRIAL_TIMEOUT;
    r->message = why;
  } else {
    r->status = TS_TRIAL_RUNTIME_ERROR;
    r->message = g_str_has_prefix(why, "signal")
                     ? g_strdup_printf("the candidate crashed the worker: %s", why)
                     : g_strdup_printf("the worker %s during the candidate", why);
    g_free(why);
  }
  return r;
}

char *
ts_tune_worker_answer(TsTuneWorker *w, const char *request, double timeout_s, GError **error)
{
  TsTuneWorkerFate fate;
  char *why = NULL;
  char *reply = worker_call(w, request, timeout_s, TRUE, &fate, &why, error);
  if (reply != NULL) {
    g_autoptr(JsonParser) parser = json_parser_new();
    JsonObject *o = line_object(parser, reply);
    if (o && json_object_get_boolean_member_with_default(o, "worker_exit", FALSE))
      worker_stop(w, FALSE); /* it exits by itself; the next call starts a fresh one */
    return reply;
  }
  if (why == NULL)
    return NULL; /* no worker could be started: error is set */
  g_autoptr(TsTrialResult) r = unanswered_result(fate, why);
  return result_to_json(r, NULL, NULL, FALSE);
}

TsTrialResult *
ts_tune_result_from_json(const char *line, TsTrace *trace, GError **error)
{
  gboolean exiting = FALSE;
  return parse_result(line, trace, &exiting, error);
}

char *
ts_tune_request_to_json(const TsTuneRequest *q)
{
  return request_to_json(q);
}

TsTrialResult *
ts_tune_worker_run(TsTuneWorker *w, const TsTuneRequest *q, double timeout_s, GError **error)
{
  g_autofree char *req = request_to_json(q);
  g_autofree char *reply = ts_tune_worker_answer(w, req, timeout_s, error);
  return reply ? ts_tune_result_from_json(reply, q->trace, error) : NULL;
}
