/* ts-coll-tune.c — the collective tuner: a launch per candidate, every trial stored
 * (ts-coll-tune.h). */
#include "ts-coll-tune.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <signal.h>
#include <string.h>

#include "ts-coll-space.h"
#include "ts-tune-stats.h"
#include "ts-tune-strategy.h"

/* As the kernel tuner's (ts-tune.c): a new best must be faster beyond the noise, p < 0.01. */
#define BEST_ALPHA 0.01
/* How long a launcher that was sent SIGTERM at the timeout has to take its ranks down before
 * it is killed outright. */
#define TERM_GRACE_S 5.0

void
ts_coll_tune_config_init(TsCollTuneConfig *config)
{
  *config = (TsCollTuneConfig){
    .backend = "mpi",
    .strategy = "exhaustive",
    .seed = 1,
    .timeout_s = 60,
    .warmup = 5,
    .samples = 10,
    .round_ms = 20,
  };
}

void
ts_coll_tune_summary_clear(TsCollTuneSummary *s)
{
  g_free(s->device_name);
  g_free(s->topology);
  g_free(s->library);
  g_free(s->best_schedule);
  memset(s, 0, sizeof *s);
}

/* ---- one launch, with a timeout ---- */

typedef struct {
  GBytes *out, *err;
  gboolean done, timed_out;
  GError *error;
} Launch;

static void
launch_clear(Launch *l)
{
  g_clear_pointer(&l->out, g_bytes_unref);
  g_clear_pointer(&l->err, g_bytes_unref);
  g_clear_error(&l->error);
}

static void
communicated(GObject *source, GAsyncResult *res, gpointer data)
{
  Launch *l = data;
  g_subprocess_communicate_finish(G_SUBPROCESS(source), res, &l->out, &l->err, &l->error);
  l->done = TRUE;
}

static gboolean
tick(gpointer data)
{
  (void)data;
  return G_SOURCE_CONTINUE;
}

/* Runs argv with env added and waits for it, at most timeout_s (then SIGTERM, and SIGKILL after
 * a grace period); its output is in l. NULL only when it cannot be started. */
static GSubprocess *
launch(const char *const *argv, const char *const *env, double timeout_s, Launch *l,
       GError **error)
{
  g_autoptr(GSubprocessLauncher) sl =
    g_subprocess_launcher_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  for (guint i = 0; env && env[i]; i++) {
    g_auto(GStrv) kv = g_strsplit(env[i], "=", 2);
    g_subprocess_launcher_setenv(sl, kv[0], kv[1] ? kv[1] : "", TRUE);
  }
  GSubprocess *p = g_subprocess_launcher_spawnv(sl, argv, error);
  if (p == NULL)
    return NULL;
  GMainContext *ctx = g_main_context_new();
  g_main_context_push_thread_default(ctx);
  GSource *t = g_timeout_source_new(50);
  g_source_set_callback(t, tick, NULL, NULL);
  g_source_attach(t, ctx);
  g_subprocess_communicate_async(p, NULL, NULL, communicated, l);
  gint64 deadline = g_get_monotonic_time() + (gint64)(timeout_s * G_USEC_PER_SEC);
  gint64 kill_at = G_MAXINT64;
  while (!l->done) {
    g_main_context_iteration(ctx, TRUE);
    gint64 now = g_get_monotonic_time();
    if (!l->timed_out && now >= deadline) {
      l->timed_out = TRUE;
      g_subprocess_send_signal(p, SIGTERM);
      kill_at = now + (gint64)(TERM_GRACE_S * G_USEC_PER_SEC);
    } else if (now >= kill_at) {
      g_subprocess_force_exit(p);
      kill_at = G_MAXINT64;
    }
  }
  g_source_destroy(t);
  g_source_unref(t);
  g_main_context_pop_thread_default(ctx);
  g_main_context_unref(ctx);
  return p;
}

static char *
bytes_text(GBytes *b)
{
  gsize n = 0;
  const char *d = b ? g_bytes_get_data(b, &n) : NULL;
  return g_utf8_make_valid(d ? d : "", (gssize)n);
}

/* The last lines of a launch's error output, for a trial's message. */
static char *
tail_lines(const char *text, guint n)
{
  g_autofree char *t = g_strstrip(g_strdup(text));
  const char *p = t + strlen(t);
  for (guint k = 0; p > t && k <= n;)
    if (*--p == '\n')
      k++;
  return g_strdup(*p == '\n' ? p + 1 : p);
}

/* Rank 0's JSON line: the last line of stdout that parses as an object. */
static JsonObject *
answer_object(const char *out, JsonParser **parser)
{
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  for (gint i = (gint)g_strv_length(lines) - 1; i >= 0; i--) {
    const char *line = g_strstrip(lines[i]);
    if (line[0] != '{')
      continue;
    g_autoptr(JsonParser) p = json_parser_new();
    if (json_parser_load_from_data(p, line, -1, NULL) &&
        JSON_NODE_HOLDS_OBJECT(json_parser_get_root(p))) {
      *parser = g_steal_pointer(&p);
      return json_node_get_object(json_parser_get_root(*parser));
    }
  }
  return NULL;
}

/* ---- the tune ---- */

typedef struct {
  const TsCollTuneConfig *cfg;
  TsCollTuneSummary *sum;
  GPtrArray *prefix; /* launcher argv up to the program */
  char *shape;
  char *host;
  gint64 t0;
  guint index;
  TsCollLinks links; /* valid when sum->n_model_points */
  GHashTable *seen;  /* hashes of the points stored or measured */
} Tune;

static double
elapsed_ms(const Tune *t)
{
  return (g_get_monotonic_time() - t->t0) / 1000.0;
}

static GPtrArray *
launcher_prefix(const TsCollTuneConfig *cfg)
{
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
  static const char *const mpirun[] = {"mpirun", NULL};
  gboolean own = cfg->launcher && cfg->launcher[0];
  /* One NCCL rank needs no MPI: the process is the job. */
  if (!own && cfg->w->ranks == 1 && g_strcmp0(cfg->backend, "nccl") == 0)
    return a;
  const char *const *l = own ? cfg->launcher : mpirun;
  for (guint i = 0; l[i]; i++)
    g_ptr_array_add(a, g_strdup(l[i]));
  g_ptr_array_add(a, g_strdup("-n"));
  g_ptr_array_add(a, g_strdup_printf("%u", cfg->w->ranks));
  /* Open MPI's mpirun refuses more ranks than cores unless told; on such a machine the timings
   * measure contention for the cores, and the key says so (the device's arch). */
  if (l == mpirun && cfg->w->ranks > g_get_num_processors())
    g_ptr_array_add(a, g_strdup("--oversubscribe"));
  return a;
}

static GStrv
coll_run_argv(Tune *t, gboolean probe)
{
  const TsCollTuneConfig *cfg = t->cfg;
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  for (guint i = 0; i < t->prefix->len; i++)
    g_strv_builder_add(b, g_ptr_array_index(t->prefix, i));
  g_strv_builder_add_many(b, cfg->exe, "coll-run", "--backend", cfg->backend, NULL);
  if (probe) {
    g_strv_builder_add(b, "--probe");
    return g_strv_builder_end(b);
  }
  char round[G_ASCII_DTOSTR_BUF_SIZE];
  g_autofree char *seed = g_strdup_printf("%" G_GUINT64_FORMAT, cfg->seed);
  g_autofree char *warmup = g_strdup_printf("%u", cfg->warmup);
  g_autofree char *samples = g_strdup_printf("%u", cfg->samples);
  g_strv_builder_add_many(b, ts_coll_kind_name(cfg->w->kind), "--shape", t->shape, "--dtype",
                          ts_coll_dtype_name(cfg->w->dtype), "--seed", seed, "--warmup", warmup,
                          "--samples", samples, "--round-ms",
                          g_ascii_dtostr(round, sizeof round, cfg->round_ms), NULL);
  return g_strv_builder_end(b);
}

static char *
argv_text(const char *const *argv, const char *const *env)
{
  g_autoptr(GString) s = g_string_new(NULL);
  for (guint i = 0; env && env[i]; i++)
    g_string_append_printf(s, "%s ", env[i]);
  for (guint i = 0; argv[i]; i++) {
    g_autofree char *q = g_shell_quote(argv[i]);
    g_string_append_printf(s, "%s%s", i ? " " : "", strpbrk(argv[i], " '\"$") ? q : argv[i]);
  }
  return g_string_free(g_steal_pointer(&s), FALSE);
}

/* "1 host x 4 ranks", "2 hosts x 4 ranks", "3 hosts: 4+4+2 ranks". */
static char *
topology_text(JsonArray *hosts, guint ranks, gboolean oversubscribed)
{
  guint n = json_array_get_length(hosts);
  gboolean even = TRUE;
  g_autoptr(GString) counts = g_string_new(NULL);
  for (guint i = 0; i < n; i++) {
    JsonArray *h = json_array_get_array_element(hosts, i);
    gint64 c = json_array_get_int_element(h, 1);
    even = even && c == json_array_get_int_element(json_array_get_array_element(hosts, 0), 1);
    g_string_append_printf(counts, "%s%" G_GINT64_FORMAT, i ? "+" : "", c);
  }
  g_autoptr(GString) s = g_string_new(NULL);
  if (even)
    g_string_printf(s, "%u host%s x %u rank%s", n, n == 1 ? "" : "s", n ? ranks / n : 0,
                    n && ranks / n == 1 ? "" : "s");
  else
    g_string_printf(s, "%u hosts: %s ranks", n, counts->str);
  if (oversubscribed)
    g_string_append(s, ", oversubscribed");
  return g_string_free(g_steal_pointer(&s), FALSE);
}

/* The first launch: who the ranks are, so the cache key is known before anything is measured
 * (and a launcher that cannot start them fails here, once, with its own words). */
static gboolean
probe(Tune *t, GError **error)
{
  const TsCollTuneConfig *cfg = t->cfg;
  TsCollTuneSummary *s = t->sum;
  g_auto(GStrv) argv = coll_run_argv(t, TRUE);
  Launch l = {0};
  g_autoptr(GError) spawn = NULL;
  g_autoptr(GSubprocess) p = launch((const char *const *)argv, NULL, cfg->timeout_s, &l, &spawn);
  if (p == NULL) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH,
                "cannot start the launcher '%s' (%s): collectives on the mpi backend need Open "
                "MPI's mpirun (Debian: openmpi-bin), or --launcher naming yours",
                argv[0], spawn->message);
    return FALSE;
  }
  g_autofree char *out = bytes_text(l.out), *err = bytes_text(l.err);
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *o = l.timed_out ? NULL : answer_object(out, &parser);
  if (o && json_object_has_member(o, "error")) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH, "%s on %s: %s",
                ts_coll_kind_name(cfg->w->kind), cfg->backend,
                json_object_get_string_member(o, "error"));
    launch_clear(&l);
    return FALSE;
  }
  gboolean ok = o && json_object_has_member(o, "hosts") && json_object_has_member(o, "library") &&
                json_object_has_member(o, "device");
  if (ok && json_object_get_int_member(o, "ranks") != cfg->w->ranks) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH,
                "the launcher started %" G_GINT64_FORMAT " ranks where %u were asked for",
                json_object_get_int_member(o, "ranks"), cfg->w->ranks);
    launch_clear(&l);
    return FALSE;
  }
  if (!ok) {
    g_autofree char *cmd = argv_text((const char *const *)argv, NULL);
    g_autofree char *tail = tail_lines(*err ? err : out, 12);
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH,
                "could not start %u ranks with `%s`%s: %s", cfg->w->ranks, cmd,
                l.timed_out ? " (no answer before the timeout)" : "",
                *tail ? tail : "no output");
    launch_clear(&l);
    return FALSE;
  }
  JsonArray *hosts = json_object_get_array_member(o, "hosts");
  s->oversubscribed = g_ptr_array_find_with_equal_func(t->prefix, "--oversubscribe",
                                                       g_str_equal, NULL);
  s->topology = topology_text(hosts, cfg->w->ranks, s->oversubscribed);
  g_autofree char *lib = g_strdup(json_object_get_string_member(o, "library"));
  char *comma = strchr(lib, ',');
  if (comma)
    *comma = '\0';
  s->library = g_strdup(g_strstrip(lib));
  s->device_name = g_strdup_printf("%s x %u ranks", json_object_get_string_member(o, "device"),
                                   cfg->w->ranks);
  t->host = g_strdup(json_array_get_string_element(json_array_get_array_element(hosts, 0), 0));
  launch_clear(&l);
  return TRUE;
}

static gboolean
key_ids(Tune *t, GError **error)
{
  const TsCollTuneConfig *cfg = t->cfg;
  TsCollTuneSummary *s = t->sum;
  TsDbDevice dev = {
    .backend = cfg->backend,
    .name = s->device_name,
    .arch = s->topology,
    .compute_units = cfg->w->ranks,
  };
  s->device_id = ts_db_ensure_device(cfg->db, &dev, error);
  if (s->device_id == 0)
    return FALSE;
  s->toolchain_id = ts_db_ensure_toolchain(cfg->db, s->library, TS_COLL_BENCH_VERSION, error);
  if (s->toolchain_id == 0)
    return FALSE;
  s->workload_id = ts_db_ensure_workload(cfg->db, ts_coll_kind_name(cfg->w->kind), t->shape,
                                         ts_coll_dtype_name(cfg->w->dtype), error);
  return s->workload_id != 0;
}

static gboolean
is_default(const char *schedule)
{
  g_autoptr(TsSchedPoint) p = ts_sched_point_parse(schedule, NULL);
  return p && g_strcmp0(ts_sched_point_get_str(p, "algorithm", ""), "default") == 0;
}

/* Makes the trial the key's best when it beats the stored best beyond noise. */
static gboolean
maybe_promote(Tune *t, const TsDbTrial *trial, GError **error)
{
  TsCollTuneSummary *s = t->sum;
  if (trial->status != TS_DB_TRIAL_OK || trial->samples_ns == NULL)
    return TRUE;
  if (is_default(trial->schedule))
    s->default_median_ns = trial->median_ns;
  g_autoptr(GError) nf = NULL;
  g_autoptr(TsDbTrial) best = ts_db_get_best(t->cfg->db, s->workload_id, s->device_id,
                                             s->toolchain_id, &nf);
  gboolean promote = best == NULL;
  if (best && best->id != trial->id && best->samples_ns)
    promote = ts_stats_faster((double *)trial->samples_ns->data, trial->samples_ns->len,
                              (double *)best->samples_ns->data, best->samples_ns->len,
                              BEST_ALPHA);
  const TsDbTrial *winner = promote ? trial : best;
  if (promote && !ts_db_set_best(t->cfg->db, s->workload_id, s->device_id, s->toolchain_id,
                                 trial->id, error))
    return FALSE;
  s->best_trial_id = winner->id;
  s->best_median_ns = winner->median_ns;
  g_free(s->best_schedule);
  s->best_schedule = g_strdup(winner->schedule);
  return TRUE;
}

static void
set_member_double(JsonBuilder *b, const char *name, double v)
{
  json_builder_set_member_name(b, name);
  json_builder_add_double_value(b, v);
}

/* The algorithm Open MPI reports it was forced to (MPI_T), against the point's: a library
 * that numbers its algorithms differently would otherwise file one algorithm's time under
 * another's name. */
static char *
forced_mismatch(const Tune *t, JsonObject *o, const TsSchedPoint *point)
{
  const TsCollTuneConfig *cfg = t->cfg;
  JsonObject *forced = json_object_has_member(o, "forced")
                         ? json_object_get_object_member(o, "forced")
                         : NULL;
  const char *param = ts_coll_mpi_param(cfg->w->kind);
  if (forced == NULL || !json_object_has_member(forced, param))
    return NULL; /* a library without MPI_T names: nothing to compare */
  JsonNode *n = json_object_get_member(forced, param);
  const char *want = ts_sched_point_get_str(point, "algorithm", "default");
  const char *got = JSON_NODE_HOLDS_VALUE(n) && json_node_get_value_type(n) == G_TYPE_STRING
                      ? json_node_get_string(n)
                      : NULL;
  if (got == NULL || (strcmp(want, "default") == 0 ? strcmp(got, "ignore") == 0
                                                    : strcmp(got, want) == 0))
    return NULL;
  return g_strdup_printf("Open MPI ran its algorithm '%s' for point algorithm \"%s\": this "
                         "library (%s) numbers its algorithms differently from Open MPI 4.1's",
                         got, want, t->sum->library);
}

/* The calibrated model's time for a point, in ns; NAN without a model (or for "default"). */
static double
predict_ns(const Tune *t, const TsSchedPoint *point)
{
  if (t->sum->n_model_points == 0)
    return NAN;
  const TsCollWorkload *w = t->cfg->w;
  return 1e9 * ts_cost_coll_predict(&t->links, w->kind,
                                    ts_sched_point_get_str(point, "algorithm", "default"),
                                    w->ranks, (double)w->bytes,
                                    (double)ts_sched_point_get_int(point, "segment", 0));
}

/* One candidate: its launch, its trial. */
static gboolean
measure(Tune *t, TsTuneStrategy *strategy, const TsSchedPoint *point, GError **error)
{
  const TsCollTuneConfig *cfg = t->cfg;
  TsCollTuneSummary *s = t->sum;
  g_autoptr(TsDbTrial) trial = ts_db_trial_new();
  trial->workload_id = s->workload_id;
  trial->device_id = s->device_id;
  trial->toolchain_id = s->toolchain_id;
  trial->run_id = s->run_id;
  trial->schedule = ts_sched_point_to_string(point);
  trial->strategy = g_strdup(g_strcmp0(cfg->strategy, "model") == 0
                               ? "model"
                               : ts_tune_strategy_name(strategy));
  trial->host = g_strdup(t->host);
  trial->rank = -1;
  trial->predicted_cost = predict_ns(t, point);
  g_hash_table_add(t->seen, g_strdup(ts_sched_point_hash(point)));
  g_auto(GStrv) env = ts_coll_env_for(cfg->backend, cfg->w->kind, point, error);
  if (env == NULL)
    return FALSE;
  g_auto(GStrv) argv = coll_run_argv(t, FALSE);
  g_autofree char *cmd = argv_text((const char *const *)argv, (const char *const *)env);
  Launch l = {0};
  gint64 start = g_get_monotonic_time();
  g_autoptr(GSubprocess) p = launch((const char *const *)argv, (const char *const *)env,
                                    cfg->timeout_s, &l, error);
  if (p == NULL)
    return FALSE;
  double launch_ms = (g_get_monotonic_time() - start) / 1000.0;
  g_autofree char *out = bytes_text(l.out), *err = bytes_text(l.err);
  g_autoptr(JsonParser) parser = NULL;
  JsonObject *o = l.timed_out ? NULL : answer_object(out, &parser);
  g_autofree char *mismatch = o ? forced_mismatch(t, o, point) : NULL;
  g_autoptr(JsonBuilder) m = json_builder_new();
  json_builder_begin_object(m);
  json_builder_set_member_name(m, "launch");
  json_builder_add_string_value(m, cmd);
  set_member_double(m, "launch_ms", launch_ms);
  if (l.timed_out) {
    trial->status = TS_DB_TRIAL_TIMEOUT;
    trial->error_text = g_strdup_printf("no result within %.0f s: the launch was killed",
                                        cfg->timeout_s);
  } else if (o == NULL || !json_object_has_member(o, "status") || mismatch) {
    trial->status = TS_DB_TRIAL_RUNTIME_ERROR;
    g_autofree char *tail = tail_lines(*err ? err : out, 12);
    if (mismatch)
      trial->error_text = g_steal_pointer(&mismatch);
    else if (o && json_object_has_member(o, "error"))
      trial->error_text = g_strdup(json_object_get_string_member(o, "error"));
    else if (g_subprocess_get_if_signaled(p))
      trial->error_text = g_strdup_printf("the launcher died of signal %d: %s",
                                          g_subprocess_get_term_sig(p),
                                          *tail ? tail : "no output");
    else
      trial->error_text = g_strdup_printf("the ranks gave no result (exit status %d): %s",
                                          g_subprocess_get_exit_status(p),
                                          *tail ? tail : "no output");
  } else {
    const char *status = json_object_get_string_member(o, "status");
    trial->status = g_strcmp0(status, "ok") == 0 ? TS_DB_TRIAL_OK : TS_DB_TRIAL_WRONG_RESULT;
    const char *msg = json_object_get_string_member_with_default(o, "message", "");
    if (*msg)
      trial->error_text = g_strdup(msg);
    trial->rel_error = json_object_get_int_member_with_default(o, "mismatches", 0) > 0 ? 1.0
                                                                                       : 0.0;
    JsonArray *samples = json_object_get_array_member(o, "samples_ns");
    JsonArray *worst = json_object_get_array_member(o, "max_rank_ns");
    trial->samples_ns = g_array_new(FALSE, FALSE, sizeof(double));
    g_autoptr(GArray) w = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; samples && i < json_array_get_length(samples); i++) {
      double v = json_array_get_double_element(samples, i);
      g_array_append_val(trial->samples_ns, v);
      trial->min_ns = i == 0 ? v : MIN(trial->min_ns, v);
      trial->max_ns = i == 0 ? v : MAX(trial->max_ns, v);
    }
    for (guint i = 0; worst && i < json_array_get_length(worst); i++) {
      double v = json_array_get_double_element(worst, i);
      g_array_append_val(w, v);
    }
    if (trial->samples_ns->len == 0) {
      trial->status = TS_DB_TRIAL_RUNTIME_ERROR;
      trial->error_text = g_strdup("the ranks reported no timing");
    } else {
      trial->median_ns = ts_stats_median((double *)trial->samples_ns->data,
                                         trial->samples_ns->len);
      set_member_double(m, "algbw_GBps", ts_coll_algbw(cfg->w, trial->median_ns) * 1e-9);
      set_member_double(m, "busbw_GBps", ts_coll_busbw(cfg->w, trial->median_ns) * 1e-9);
      if (w->len)
        set_member_double(m, "max_rank_median_ns", ts_stats_median((double *)w->data, w->len));
      json_builder_set_member_name(m, "iters");
      json_builder_add_int_value(m, json_object_get_int_member_with_default(o, "iters", 0));
    }
    if (json_object_has_member(o, "forced")) {
      json_builder_set_member_name(m, "forced");
      json_builder_add_value(m, json_node_copy(json_object_get_member(o, "forced")));
    }
  }
  json_builder_end_object(m);
  g_autoptr(JsonNode) root = json_builder_get_root(m);
  trial->metrics_json = json_to_string(root, FALSE);
  launch_clear(&l);

  gboolean existed = FALSE;
  if (!ts_db_add_trial(cfg->db, trial, &trial->id, &existed, error))
    return FALSE;
  gboolean ok = trial->status == TS_DB_TRIAL_OK;
  ts_tune_strategy_observe(strategy, point, ok, ok ? trial->median_ns * 1e-9 : 0.0);
  s->n_measured++;
  if (ok)
    s->n_ok++;
  else
    s->n_failed++;
  if (!maybe_promote(t, trial, error))
    return FALSE;
  if (cfg->progress) {
    TsCollProgress pr = {
      .index = ++t->index,
      .schedule = trial->schedule,
      .status = ts_db_trial_status_name(trial->status),
      .message = trial->error_text ? trial->error_text : "",
      .median_ns = ok ? trial->median_ns : NAN,
      .algbw = ok ? ts_coll_algbw(cfg->w, trial->median_ns) : NAN,
      .busbw = ok ? ts_coll_busbw(cfg->w, trial->median_ns) : NAN,
      .best_ns = s->best_trial_id ? s->best_median_ns : NAN,
      .launch_ms = launch_ms,
    };
    cfg->progress(&pr, cfg->progress_data);
  }
  return TRUE;
}

/* Every stored trial of the key is observed first, so a re-run measures none of them again. The
 * stored best stands: it changes only when a newly measured trial beats it (the rule is not
 * transitive, so judging the stored trials again could crown another). A cache whose trials
 * have no best yet (an import) gets one the same way the tune would have chosen it. */
static gboolean
resume(Tune *t, TsTuneStrategy *strategy, GError **error)
{
  TsCollTuneSummary *s = t->sum;
  g_autoptr(GPtrArray) stored = ts_db_list_trials(t->cfg->db, s->workload_id, s->device_id,
                                                  s->toolchain_id, TS_DB_ORDER_INSERTION, error);
  if (stored == NULL)
    return FALSE;
  for (guint i = 0; i < stored->len; i++) {
    const TsDbTrial *tr = g_ptr_array_index(stored, i);
    g_autoptr(TsSchedPoint) p = ts_sched_point_parse(tr->schedule, NULL);
    if (p == NULL)
      continue;
    gboolean ok = tr->status == TS_DB_TRIAL_OK;
    ts_tune_strategy_observe(strategy, p, ok, ok ? tr->median_ns * 1e-9 : 0.0);
    g_hash_table_add(t->seen, g_strdup(ts_sched_point_hash(p)));
    if (ok && is_default(tr->schedule))
      s->default_median_ns = tr->median_ns;
  }
  s->n_resumed = stored->len;
  g_autoptr(GError) none = NULL;
  g_autoptr(TsDbTrial) best = ts_db_get_best(t->cfg->db, s->workload_id, s->device_id,
                                             s->toolchain_id, &none);
  if (best) {
    s->best_trial_id = best->id;
    s->best_median_ns = best->median_ns;
    s->best_schedule = g_strdup(best->schedule);
    return TRUE;
  }
  for (guint i = 0; i < stored->len; i++)
    if (!maybe_promote(t, g_ptr_array_index(stored, i), error))
      return FALSE;
  return TRUE;
}

char *
ts_coll_machine(const char *device_name, const char *topology)
{
  g_autofree char *name = g_strdup(device_name ? device_name : "");
  char *x = g_strrstr(name, " x ");
  if (x && g_str_has_suffix(name, " ranks"))
    *x = '\0';
  const char *topo = topology ? topology : "";
  gsize hosts = strcspn(topo, "x:");
  g_autofree char *h = g_strstrip(g_strndup(topo, hosts));
  return g_strdup_printf("%s, %s%s", name, h,
                         strstr(topo, "oversubscribed") ? ", oversubscribed" : "");
}

GArray *
ts_coll_tune_observations(TsDb *db, const char *machine, TsCollDtype dtype, GError **error)
{
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db, error);
  if (keys == NULL)
    return NULL;
  GArray *obs = g_array_new(FALSE, FALSE, sizeof(TsCollObservation));
  for (guint k = 0; k < keys->len; k++) {
    const TsDbTrialKey *key = g_ptr_array_index(keys, k);
    TsCollWorkload w;
    if (!ts_coll_backend_known(key->device.backend) ||
        !ts_coll_workload_parse(&w, key->op, key->shape, key->dtype, 0, NULL) ||
        w.dtype != dtype)
      continue;
    g_autofree char *m = ts_coll_machine(key->device.name, key->device.arch);
    if (g_strcmp0(m, machine) != 0)
      continue;
    g_autoptr(GPtrArray) trials = ts_db_list_trials(db, key->workload_id, key->device_id,
                                                    key->toolchain_id, TS_DB_ORDER_INSERTION,
                                                    NULL);
    for (guint i = 0; trials && i < trials->len; i++) {
      const TsDbTrial *tr = g_ptr_array_index(trials, i);
      g_autoptr(TsSchedPoint) p = tr->status == TS_DB_TRIAL_OK
                                    ? ts_sched_point_parse(tr->schedule, NULL)
                                    : NULL;
      if (p == NULL)
        continue;
      TsCollObservation o = {
        .kind = w.kind,
        .algorithm = g_intern_string(ts_sched_point_get_str(p, "algorithm", "default")),
        .ranks = w.ranks,
        .bytes = (double)w.bytes,
        .segment = (double)ts_sched_point_get_int(p, "segment", 0),
        .seconds = tr->median_ns * 1e-9,
      };
      g_array_append_val(obs, o);
    }
  }
  return obs;
}

/* The α–β model of this machine and dtype from what the cache holds, when it can be fitted. */
static void
calibrate(Tune *t)
{
  TsCollTuneSummary *s = t->sum;
  g_autofree char *machine = ts_coll_machine(s->device_name, s->topology);
  g_autoptr(GArray) obs = ts_coll_tune_observations(t->cfg->db, machine, t->cfg->w->dtype, NULL);
  guint n = 0;
  if (obs && ts_cost_coll_fit((TsCollObservation *)obs->data, obs->len, &t->links, &n,
                              &s->model_rel_err, NULL))
    s->n_model_points = n;
}

typedef struct {
  TsSchedPoint *point;
  double ns;
} Ranked;

static gint
by_prediction(gconstpointer a, gconstpointer b)
{
  const Ranked *x = a, *y = b;
  /* No prediction (the library's own choice) first: it is the baseline every other is judged
   * against. */
  gboolean nx = isnan(x->ns), ny = isnan(y->ns);
  if (nx || ny)
    return ny - nx;
  return (x->ns > y->ns) - (x->ns < y->ns);
}

/* The model strategy's order: every valid point, by predicted time. */
static GPtrArray *
model_order(Tune *t, const TsSchedSpace *space, const TsSchedEnv *env, GError **error)
{
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  g_autoptr(GArray) ranked = g_array_new(FALSE, FALSE, sizeof(Ranked));
  TsSchedPoint *p = NULL;
  GError *local = NULL;
  while (ts_sched_iter_next(it, &p, &local)) {
    Ranked r = {p, predict_ns(t, p)};
    g_array_append_val(ranked, r);
  }
  if (local) {
    g_propagate_error(error, local);
    for (guint i = 0; i < ranked->len; i++)
      ts_sched_point_free(g_array_index(ranked, Ranked, i).point);
    return NULL;
  }
  GPtrArray *order = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  g_array_sort(ranked, by_prediction);
  for (guint i = 0; i < ranked->len; i++)
    g_ptr_array_add(order, g_array_index(ranked, Ranked, i).point);
  return order;
}

gboolean
ts_coll_tune_run(const TsCollTuneConfig *cfg, TsCollTuneSummary *sum, GError **error)
{
  g_return_val_if_fail(cfg->w && cfg->db && cfg->exe, FALSE);
  memset(sum, 0, sizeof *sum);
  sum->best_median_ns = sum->default_median_ns = NAN;
  g_autoptr(TsSchedSpace) space = ts_coll_space(cfg->w->kind, cfg->backend, cfg->space, error);
  if (space == NULL)
    return FALSE;
  g_autoptr(TsSchedEnv) env = ts_coll_env(cfg->w);
  if (!ts_sched_space_count_valid(space, env, &sum->n_valid, error))
    return FALSE;
  /* The model strategy orders the space itself; the exhaustive one keeps the books. */
  gboolean by_model = g_strcmp0(cfg->strategy, "model") == 0;
  g_autoptr(TsTuneStrategy) strategy = ts_tune_strategy_new(
    cfg->strategy && !by_model ? cfg->strategy : "exhaustive", space, env, cfg->seed, error);
  if (strategy == NULL)
    return FALSE;
  if (cfg->budget_evals)
    ts_tune_strategy_set_budget(strategy, cfg->budget_evals);
  Tune t = {
    .cfg = cfg,
    .sum = sum,
    .prefix = launcher_prefix(cfg),
    .shape = ts_coll_workload_shape(cfg->w),
    .t0 = g_get_monotonic_time(),
    .seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
  };
  gboolean ok = probe(&t, error) && key_ids(&t, error);
  if (ok)
    calibrate(&t);
  ok = ok && resume(&t, strategy, error);
  g_autoptr(GPtrArray) order = ok && by_model ? model_order(&t, space, env, error) : NULL;
  ok = ok && (!by_model || order != NULL);
  if (ok) {
    g_autofree char *budget = g_strdup_printf("evals=%u ms=%.0f", cfg->budget_evals,
                                              cfg->budget_ms);
    sum->run_id = ts_db_begin_run(cfg->db, sum->workload_id, sum->device_id, sum->toolchain_id,
                                  by_model ? "model" : ts_tune_strategy_name(strategy),
                                  cfg->seed, budget, error);
    ok = sum->run_id != 0;
  }
  guint next = 0;
  while (ok) {
    if ((cfg->budget_evals && sum->n_measured >= cfg->budget_evals) ||
        (cfg->budget_ms > 0 && elapsed_ms(&t) >= cfg->budget_ms))
      break;
    if (by_model) {
      while (next < order->len &&
             g_hash_table_contains(t.seen,
                                   ts_sched_point_hash(g_ptr_array_index(order, next))))
        next++;
      if (next == order->len) {
        sum->exhausted = TRUE;
        break;
      }
      ok = measure(&t, strategy, g_ptr_array_index(order, next++), error);
      continue;
    }
    g_autoptr(GPtrArray) points = ts_tune_strategy_propose(strategy, 1, error);
    if (points == NULL) {
      ok = FALSE;
      break;
    }
    if (points->len == 0) {
      sum->exhausted = TRUE;
      break;
    }
    ok = measure(&t, strategy, g_ptr_array_index(points, 0), error);
  }
  sum->elapsed_ms = elapsed_ms(&t);
  if (sum->run_id)
    ts_db_end_run(cfg->db, sum->run_id, ok ? "done" : "failed", NULL);
  g_ptr_array_unref(t.prefix);
  g_hash_table_unref(t.seen);
  g_free(t.shape);
  g_free(t.host);
  return ok;
}
