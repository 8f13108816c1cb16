/* tessera-perfgate — the CI perf-regression gate: `baseline` measures a suite and stores it,
 * `check` measures again side by side with the baseline's kernels and fails on a slowdown
 * that is both large and real, `compare` judges two stored runs, `list` shows the runs.
 * docs/perfgate.md describes the suite format and how the gate decides. */
#include "config.h"
#include "ts-output.h"

#include <gio/gio.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ts-backend.h"
#include "ts-db.h"
#include "ts-gate.h"
#include "ts-tune.h"

enum { EXIT_PASS = 0, EXIT_REGRESSION = 1, EXIT_ERROR = 2 };

static const char EXIT_HELP[] =
    "Exit status: 0 pass; 1 a regression, or a kernel that no longer compiles, crashes or\n"
    "computes wrong results; 2 the gate could not decide (bad suite or options, no baseline\n"
    "for this device, unknown run, no device, schedule-cache failure).";

typedef struct {
  char *suite, *db, *backend, *base, *head, *markdown, *junit, *label, *commit, *threshold,
      *inject_only;
  double alpha, inject_slowdown, time_scale, timeout;
  int retries, limit;
  gboolean no_store;
} Args;

static void
args_clear(Args *a)
{
  g_free(a->suite);
  g_free(a->db);
  g_free(a->backend);
  g_free(a->base);
  g_free(a->head);
  g_free(a->markdown);
  g_free(a->junit);
  g_free(a->label);
  g_free(a->commit);
  g_free(a->threshold);
  g_free(a->inject_only);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Args, args_clear)

static int
fail(const GError *error)
{
  g_printerr("tessera-perfgate: %s\n", error->message);
  return EXIT_ERROR;
}

static int
usage(const char *msg)
{
  g_printerr("tessera-perfgate: %s\nRun with --help for usage.\n", msg);
  return EXIT_ERROR;
}

enum {
  OPT_SUITE = 1 << 0,
  OPT_DB = 1 << 1,
  OPT_BACKEND = 1 << 2,
  OPT_BASE = 1 << 3,
  OPT_HEAD = 1 << 4,
  OPT_REPORTS = 1 << 5,
  OPT_STORE = 1 << 6,
  OPT_DECIDE = 1 << 7,
  OPT_MEASURE = 1 << 8,
  OPT_LIMIT = 1 << 9,
  OPT_NO_STORE = 1 << 10,
};

static gboolean
parse(const char *name, const char *summary, guint opts, Args *a, int *argc, char ***argv)
{
  GOptionEntry all[] = {
      {"suite", 0, 0, G_OPTION_ARG_FILENAME, &a->suite, "Suite file (see docs/perfgate.md)",
       "FILE"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &a->db,
       "Schedule cache holding the runs (default $XDG_CACHE_HOME/tessera/schedules.db)", "PATH"},
      {"backend", 0, 0, G_OPTION_ARG_STRING, &a->backend,
       "Backend, overriding the suite's (cpu or auto)", "NAME"},
      {"base", 0, 0, G_OPTION_ARG_STRING, &a->base,
       "Run to compare against: #ID, a commit, a git ref, 'baseline' or 'latest' (check default: "
       "the newest baseline)",
       "REV"},
      {"head", 0, 0, G_OPTION_ARG_STRING, &a->head, "Run to judge (default: latest)", "REV"},
      {"markdown", 0, 0, G_OPTION_ARG_FILENAME, &a->markdown,
       "Also write a Markdown summary (for a PR comment)", "FILE"},
      {"junit", 0, 0, G_OPTION_ARG_FILENAME, &a->junit, "Also write JUnit XML (for CI systems)",
       "FILE"},
      {"label", 0, 0, G_OPTION_ARG_STRING, &a->label, "Free text stored with the run (CI job)",
       "TEXT"},
      {"commit", 0, 0, G_OPTION_ARG_STRING, &a->commit,
       "Commit to record (default: git rev-parse HEAD here)", "SHA"},
      {"no-store", 0, 0, G_OPTION_ARG_NONE, &a->no_store, "Do not store this check's run", NULL},
      {"threshold", 0, 0, G_OPTION_ARG_STRING, &a->threshold,
       "Slowdown that fails, for workloads without their own (default: the suite's, or 5%)",
       "PCT"},
      {"alpha", 0, 0, G_OPTION_ARG_DOUBLE, &a->alpha,
       "Significance level of the rank test (default: the suite's, or 0.01)", "P"},
      {"retries", 0, 0, G_OPTION_ARG_INT, &a->retries,
       "Re-measurements of a borderline regression before it fails (default 2)", "N"},
      {"time-scale", 0, 0, G_OPTION_ARG_DOUBLE, &a->time_scale,
       "Multiply the suite's measuring time per workload (default 1)", "X"},
      {"timeout", 0, 0, G_OPTION_ARG_DOUBLE, &a->timeout,
       "Seconds a kernel may take to load and verify before it counts as hung and fails; "
       "timing gets its measuring time on top (default 60)",
       "S"},
      {"inject-slowdown", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_DOUBLE, &a->inject_slowdown,
       "Test hook: really slow the current kernels by this fraction", "F"},
      {"inject-only", 0, G_OPTION_FLAG_HIDDEN, G_OPTION_ARG_STRING, &a->inject_only,
       "Test hook: ... only this workload", "NAME"},
      {"limit", 0, 0, G_OPTION_ARG_INT, &a->limit, "Show at most N runs (default 20)", "N"},
  };
  static const guint masks[] = {
      OPT_SUITE,   OPT_DB,      OPT_BACKEND, OPT_BASE,    OPT_HEAD,    OPT_REPORTS,
      OPT_REPORTS, OPT_STORE,   OPT_STORE,   OPT_NO_STORE, OPT_DECIDE, OPT_DECIDE,
      OPT_DECIDE,  OPT_MEASURE, OPT_MEASURE, OPT_DECIDE,  OPT_DECIDE,  OPT_LIMIT,
  };
  G_STATIC_ASSERT(G_N_ELEMENTS(masks) == G_N_ELEMENTS(all));
  GOptionEntry chosen[G_N_ELEMENTS(all) + 1];
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    if (opts & masks[i])
      chosen[n++] = all[i];
  chosen[n] = (GOptionEntry)G_OPTION_ENTRY_NULL;
  g_autofree char *param = g_strdup_printf("%s — %s", name, summary);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_add_main_entries(ctx, chosen, NULL);
  g_option_context_set_description(ctx, EXIT_HELP);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    usage(error->message);
    return FALSE;
  }
  if (*argc > 2) {
    g_autofree char *msg = g_strdup_printf("unexpected argument '%s'", (*argv)[2]);
    usage(msg);
    return FALSE;
  }
  return TRUE;
}

/* ---- shared set-up ---- */

typedef struct {
  TsGateSuite *suite;
  TsDb *db;
  TsBackend *backend;
  char *device; /* "NAME (ARCH), TOOLCHAIN" */
} Env;

static void
env_clear(Env *e)
{
  g_clear_pointer(&e->suite, ts_gate_suite_free);
  g_clear_pointer(&e->backend, ts_backend_free);
  g_clear_pointer(&e->db, ts_db_close);
  g_clear_pointer(&e->device, g_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Env, env_clear)

/* Suite (with command-line overrides), database and backend; NULL error on success. */
static gboolean
env_open(Env *e, Args *a, gboolean need_suite, gboolean need_backend, GError **error)
{
  if (need_suite && a->suite == NULL) {
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE,
                "--suite FILE is required (the project's own suite is bench/gate.suite)");
    return FALSE;
  }
  if (a->suite) {
    e->suite = ts_gate_suite_load(a->suite, error);
    if (e->suite == NULL)
      return FALSE;
    if (a->threshold && !ts_gate_parse_fraction(a->threshold, &e->suite->threshold)) {
      g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE,
                  "--threshold %s: expected a slowdown such as 5%% or 0.05, between 0 and 100%%",
                  a->threshold);
      return FALSE;
    }
    if (a->alpha != 0) {
      if (!(a->alpha > 0 && a->alpha < 1)) {
        g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE,
                    "--alpha %g: expected a significance level between 0 and 1, such as 0.01",
                    a->alpha);
        return FALSE;
      }
      e->suite->alpha = a->alpha;
    }
  }
  e->db = ts_db_open(a->db, TS_DB_OPEN_DEFAULT, error);
  if (e->db != NULL)
    ts_db_set_schedule_check(e->db, ts_tune_schedule_check, NULL);
  if (e->db == NULL)
    return FALSE;
  if (!need_backend)
    return TRUE;
  const char *backend = a->backend ? a->backend : e->suite ? e->suite->backend : "auto";
  e->backend = ts_backend_open(backend, error);
  if (e->backend == NULL)
    return FALSE;
  const TsDeviceInfo *d = ts_backend_describe(e->backend);
  e->device = g_strdup_printf("%s (%s), %s", d->name, d->arch, d->toolchain);
  return TRUE;
}

static void
print_progress(const char *line, gpointer user_data)
{
  g_printerr("%s\n", line);
}

/* Kernels run in a child of this binary (`measure-worker`), so one that crashes or hangs fails
 * its workload, not the gate. */
static char *
self_exe(void)
{
  char *exe = g_file_read_link("/proc/self/exe", NULL);
  return exe ? exe : g_strdup("tessera-perfgate");
}

/* FALSE (after saying why) when a measuring option is out of range. */
static gboolean
options_from_args(TsGateOptions *o, const Args *a, const char *exe)
{
  ts_gate_options_init(o);
  if (a->time_scale != 0 && !(a->time_scale > 0 && isfinite(a->time_scale))) {
    usage("--time-scale must be a positive number");
    return FALSE;
  }
  if (a->timeout != 0 && !(a->timeout > 0 && isfinite(a->timeout))) {
    usage("--timeout must be a positive number of seconds");
    return FALSE;
  }
  if (a->timeout > 0)
    o->timeout_s = a->timeout;
  o->worker_exe = exe;
  o->git_commit = a->commit;
  o->label = a->label;
  if (a->time_scale > 0)
    o->time_scale = a->time_scale;
  if (a->retries >= 0)
    o->max_remeasure = (guint)a->retries;
  o->inject_slowdown = a->inject_slowdown;
  o->inject_only = a->inject_only;
  o->store = !a->no_store;
  o->progress = print_progress;
  return TRUE;
}

static gboolean
write_file(const char *path, const char *text, GError **error)
{
  if (ts_output_write(path, text, -1, error))
    return TRUE;
  g_prefix_error(error, "writing the report: ");
  return FALSE;
}

/* Prints the table and writes the requested reports; returns the exit status. */
static int
report(const Args *a, TsGateReport *rep)
{
  g_autofree char *text = ts_gate_report_text(rep, isatty(STDOUT_FILENO));
  fputs(text, stdout);
  g_autoptr(GError) error = NULL;
  if (a->markdown) {
    g_autofree char *md = ts_gate_report_markdown(rep);
    if (!write_file(a->markdown, md, &error))
      return fail(error);
  }
  if (a->junit) {
    g_autofree char *xml = ts_gate_report_junit(rep);
    if (!write_file(a->junit, xml, &error))
      return fail(error);
  }
  return ts_gate_report_exit_code(rep);
}

static char *
this_build(const Args *a)
{
  if (a->commit)
    return g_strdup_printf("this build %.10s", a->commit);
  g_autoptr(GSubprocess) p = g_subprocess_new(
      G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_SILENCE, NULL, "git",
      "rev-parse", "--short=10", "HEAD", NULL);
  g_autofree char *out = NULL;
  if (p && g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, NULL) &&
      g_subprocess_get_successful(p))
    return g_strdup_printf("this build %s", g_strstrip(out));
  return g_strdup("this build");
}

static gint64
device_id_of(Env *e, GError **error)
{
  return ts_tune_device_id(e->db, e->backend, error);
}

/* ---- commands ---- */

static int
cmd_baseline(int argc, char **argv)
{
  g_auto(Args) a = {.retries = -1};
  if (!parse("baseline", "measure a suite and store it as this device's baseline",
             OPT_SUITE | OPT_DB | OPT_BACKEND | OPT_STORE | OPT_MEASURE, &a, &argc, &argv))
    return EXIT_ERROR;
  g_auto(Env) e = {0};
  g_autoptr(GError) error = NULL;
  if (!env_open(&e, &a, TRUE, TRUE, &error))
    return fail(error);
  TsGateOptions o;
  g_autofree char *exe = self_exe();
  if (!options_from_args(&o, &a, exe))
    return EXIT_ERROR;
  gint64 run_id = 0;
  g_autoptr(GPtrArray) results = ts_gate_baseline(e.db, e.backend, e.suite, &o, &run_id, &error);
  if (results == NULL)
    return fail(error);
  g_autoptr(TsDbGateRun) run = ts_db_gate_get_run(e.db, run_id, &error);
  if (run == NULL)
    return fail(error);
  g_autofree char *what = ts_gate_describe_run(run);
  g_print("Suite %s on %s: stored %s in %s\n", e.suite->name, e.device, what, ts_db_path(e.db));
  guint failed = 0;
  for (guint i = 0; i < results->len; i++) {
    const TsGateResult *r = g_ptr_array_index(results, i);
    if (r->verdict == TS_GATE_FAILED) {
      failed++;
      g_print("  %-24s FAILED  %s\n", r->name, r->note ? r->note : "");
    } else {
      g_print("  %-24s %10.4g ms  (%u samples)  %s\n", r->name, r->cur_median_ns / 1e6,
              r->cur_ns->len, r->schedule);
    }
  }
  if (failed)
    g_printerr("tessera-perfgate: %u workload(s) failed; they will be reported as new until a "
               "baseline measures them\n",
               failed);
  return failed ? EXIT_REGRESSION : EXIT_PASS;
}

static int
cmd_check(int argc, char **argv)
{
  g_auto(Args) a = {.retries = -1};
  if (!parse("check", "measure the suite again and fail on a real slowdown",
             OPT_SUITE | OPT_DB | OPT_BACKEND | OPT_BASE | OPT_REPORTS | OPT_STORE | OPT_NO_STORE |
                 OPT_DECIDE | OPT_MEASURE,
             &a, &argc, &argv))
    return EXIT_ERROR;
  if (a.inject_slowdown < 0 || a.inject_slowdown > 10)
    return usage("--inject-slowdown: expected a fraction between 0 and 10");
  g_auto(Env) e = {0};
  g_autoptr(GError) error = NULL;
  if (!env_open(&e, &a, TRUE, TRUE, &error))
    return fail(error);
  gint64 base_id = 0;
  if (a.base) {
    gint64 device_id = device_id_of(&e, &error);
    if (device_id == 0)
      return fail(error);
    base_id = ts_gate_resolve_rev(e.db, e.suite->name, device_id, a.base, &error);
    if (base_id == 0)
      return fail(error);
  }
  TsGateOptions o;
  g_autofree char *exe = self_exe();
  if (!options_from_args(&o, &a, exe))
    return EXIT_ERROR;
  gint64 run_id = 0;
  g_autoptr(GPtrArray) results =
      ts_gate_check(e.db, e.backend, e.suite, base_id, &o, &run_id, &error);
  if (results == NULL)
    return fail(error);

  /* The run compared against, for the report's context line. */
  g_autofree char *base_desc = NULL;
  g_autofree char *head_desc = this_build(&a);
  if (run_id) {
    g_autoptr(TsDbGateRun) run = ts_db_gate_get_run(e.db, run_id, &error);
    if (run == NULL)
      return fail(error);
    g_autoptr(TsDbGateRun) base = ts_db_gate_get_run(e.db, run->base_run_id, &error);
    if (base == NULL)
      return fail(error);
    base_desc = ts_gate_describe_run(base);
    g_autofree char *stored = ts_gate_describe_run(run);
    g_free(head_desc);
    head_desc = g_strdup_printf("this build, stored as %s", stored);
  } else {
    base_desc = g_strdup(a.base ? a.base : "the newest baseline");
  }
  TsGateReport rep = {
      .suite = e.suite->name,
      .device = e.device,
      .base = base_desc,
      .head = head_desc,
      .threshold = e.suite->threshold,
      .alpha = e.suite->alpha,
      .results = results,
  };
  return report(&a, &rep);
}

static int
cmd_compare(int argc, char **argv)
{
  g_auto(Args) a = {.retries = -1};
  if (!parse("compare", "judge a stored run against another without measuring",
             OPT_SUITE | OPT_DB | OPT_BACKEND | OPT_BASE | OPT_HEAD | OPT_REPORTS | OPT_DECIDE,
             &a, &argc, &argv))
    return EXIT_ERROR;
  if (a.base == NULL)
    return usage("compare needs --base REV (and optionally --head REV, default latest)");
  g_autoptr(GError) error = NULL;
  g_auto(Env) e = {0};
  /* Run ids need neither a suite nor a device; commits and refs name runs of a suite on this
   * device. */
  gboolean ids_only = (a.base[0] == '#') && (a.head && a.head[0] == '#');
  if (!env_open(&e, &a, FALSE, !ids_only, &error))
    return fail(error);
  if (!ids_only && e.suite == NULL)
    return usage("compare needs --suite FILE unless --base and --head are run ids (#N)");
  gint64 device_id = 0;
  if (!ids_only && (device_id = device_id_of(&e, &error)) == 0)
    return fail(error);
  const char *suite_name = e.suite ? e.suite->name : NULL;
  gint64 ids[2] = {0};
  const char *revs[2] = {a.base, a.head ? a.head : "latest"};
  for (guint i = 0; i < 2; i++) {
    if (revs[i][0] == '#' && ids_only) {
      ids[i] = g_ascii_strtoll(revs[i] + 1, NULL, 10);
      continue;
    }
    ids[i] = ts_gate_resolve_rev(e.db, suite_name, device_id, revs[i], &error);
    if (ids[i] == 0)
      return fail(error);
  }
  g_autoptr(TsDbGateRun) base = ts_db_gate_get_run(e.db, ids[0], &error);
  if (base == NULL)
    return fail(error);
  g_autoptr(TsDbGateRun) head = ts_db_gate_get_run(e.db, ids[1], &error);
  if (head == NULL)
    return fail(error);
  if (!g_str_equal(base->suite, head->suite))
    g_printerr("tessera-perfgate: note: comparing runs of different suites ('%s', '%s')\n",
               base->suite, head->suite);
  double alpha = e.suite ? e.suite->alpha : a.alpha > 0 ? a.alpha : 0.01;
  g_autoptr(GPtrArray) results = ts_gate_compare(e.db, ids[0], ids[1], e.suite, alpha, &error);
  if (results == NULL)
    return fail(error);
  g_autofree char *base_desc = ts_gate_describe_run(base);
  g_autofree char *head_desc = ts_gate_describe_run(head);
  g_autofree char *device = g_strdup_printf("%s (%s), %s", head->device_name, head->device_arch,
                                            head->toolchain);
  TsGateReport rep = {
      .suite = head->suite,
      .device = device,
      .base = base_desc,
      .head = head_desc,
      .threshold = e.suite ? e.suite->threshold : 0.05,
      .alpha = alpha,
      .results = results,
  };
  g_printerr("tessera-perfgate: stored runs compared sample set to sample set: machine drift "
             "between the two runs counts as change; `check` measures side by side instead\n");
  return report(&a, &rep);
}

static int
cmd_list(int argc, char **argv)
{
  g_auto(Args) a = {.limit = 20};
  if (!parse("list", "show the stored gate runs, newest first", OPT_SUITE | OPT_DB | OPT_LIMIT,
             &a, &argc, &argv))
    return EXIT_ERROR;
  g_auto(Env) e = {0};
  g_autoptr(GError) error = NULL;
  if (!env_open(&e, &a, FALSE, FALSE, &error))
    return fail(error);
  g_autoptr(GPtrArray) runs = ts_db_gate_list_runs(e.db, e.suite ? e.suite->name : NULL, 0, NULL,
                                                   a.limit > 0 ? (guint)a.limit : 0, &error);
  if (runs == NULL)
    return fail(error);
  if (runs->len == 0) {
    g_print("No gate runs in %s. Record a baseline with `tessera-perfgate baseline --suite "
            "FILE`.\n",
            ts_db_path(e.db));
    return EXIT_PASS;
  }
  g_print("%6s  %-8s  %-16s  %-12s  %-16s  %-10s  %4s  %s\n", "run", "kind", "suite", "commit",
          "created (UTC)", "status", "wl", "device");
  for (guint i = 0; i < runs->len; i++) {
    TsDbGateRun *r = g_ptr_array_index(runs, i);
    g_autofree char *commit = r->git_commit ? g_strdup_printf("%.10s%s", r->git_commit,
                                                              r->git_dirty ? "+" : "")
                                            : g_strdup("-");
    const char *status = r->verdict ? r->verdict : r->status;
    g_print("%6" G_GINT64_FORMAT "  %-8s  %-16s  %-12s  %-16.16s  %-10s  %4u  %s (%s)%s%s\n",
            r->id, r->kind, r->suite, commit, r->created_at, status, r->n_results, r->device_name,
            r->device_arch, r->label ? "  " : "", r->label ? r->label : "");
  }
  return EXIT_PASS;
}

static const struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} commands[] = {
    {"baseline", cmd_baseline, "measure a suite and store it as this device's baseline"},
    {"check", cmd_check, "measure again side by side with the baseline; fail on a real slowdown"},
    {"compare", cmd_compare, "judge a stored run against another without measuring"},
    {"list", cmd_list, "show the stored gate runs"},
};

static int
help(FILE *out)
{
  fprintf(out, "Usage: tessera-perfgate COMMAND [OPTION…]\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(out, "\n`tessera-perfgate COMMAND --help` lists a command's options.\n%s\n", EXIT_HELP);
  return out == stdout ? EXIT_PASS : EXIT_ERROR;
}

int
main(int argc, char **argv)
{
  setlocale(LC_ALL, "");
  if (argc < 2)
    return help(stderr);
  if (g_str_equal(argv[1], "--help") || g_str_equal(argv[1], "-h") ||
      g_str_equal(argv[1], "help"))
    return help(stdout);
  /* Internal: the child that loads, verifies and times the kernels (ts-gate-worker.c). */
  if (g_str_equal(argv[1], "measure-worker"))
    return ts_gate_worker_main(0, 1);
  if (g_str_equal(argv[1], "--version")) {
    g_print("tessera-perfgate %s\n", TS_VERSION);
    return EXIT_PASS;
  }
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    if (g_str_equal(argv[1], commands[i].name))
      return commands[i].run(argc, argv);
  g_printerr("tessera-perfgate: unknown command '%s'\n", argv[1]);
  return help(stderr);
}
