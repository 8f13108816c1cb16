/* tt-cli.h — what the tessera-tune subcommands share: the option set, the exit codes, and the
 * helpers that turn options into a workload, a backend and a schedule cache. */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ts-backend.h"
#include "ts-db.h"
#include "ts-op.h"
#include "ts-prof-trace.h"
#include "ts-prof.h"

enum { TT_EXIT_OK = 0, TT_EXIT_CANDIDATE = 1, TT_EXIT_USAGE = 2, TT_EXIT_MACHINE = 3 };

extern const char *const TT_EXIT_HELP;

/* Which options a subcommand takes. */
enum {
  TT_OPT_WORKLOAD = 1 << 0, /* --shape --dtype */
  TT_OPT_SCHEDULE = 1 << 1, /* --schedule */
  TT_OPT_SPACE = 1 << 2,    /* --space */
  TT_OPT_BACKEND = 1 << 3,  /* --backend */
  TT_OPT_SEED = 1 << 4,     /* --seed */
  TT_OPT_JSON = 1 << 5,     /* --json */
  TT_OPT_STAGE = 1 << 6,    /* --stage */
  TT_OPT_DB = 1 << 7,       /* --db */
  TT_OPT_TUNE = 1 << 8,     /* --strategy --budget --budget-ms --timeout --top */
  TT_OPT_NEAREST = 1 << 9,  /* --nearest */
  TT_OPT_OUTPUT = 1 << 10,  /* --output */
  TT_OPT_LIMIT = 1 << 11,   /* --limit */
  TT_OPT_REPLAY = 1 << 12,  /* --replay --repeats --prior */
  TT_OPT_MEASURE = 1 << 13, /* --measure */
  TT_OPT_ARCH = 1 << 14,    /* --arch */
  TT_OPT_METRICS = 1 << 15, /* --no-metrics */
  TT_OPT_PROFILE = 1 << 16, /* --profile --trace-output */
  TT_OPT_SAMPLES = 1 << 17, /* --samples */
  TT_OPT_TIMEOUT = 1 << 18, /* --timeout alone (run) */
  TT_OPT_COLL = 1 << 19,    /* --ranks --launcher (collectives) */
  TT_OPT_KERNEL = 1 << 20,  /* --kernel */
  TT_OPT_REUSE = 1 << 21,   /* --reuse */
  TT_OPT_ESTIMATE = 1 << 22, /* --estimate */
  TT_OPT_WHERE = 1 << 23,    /* --where (check) */
};

typedef struct {
  char *shape, *dtype, *schedule, *space, *backend, *stage, *db, *strategy, *output, *replay;
  char *arch, *trace_output, *launcher, *kernel, *reuse, *where;
  char **prior; /* --prior FILE, repeatable */
  gint64 seed;
  gboolean json, nearest, measure, no_metrics, profile, estimate;
  gint budget, limit, top, repeats, samples, ranks;
  double budget_ms, timeout_s;
} TtArgs;

void tt_args_clear(TtArgs *a);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TtArgs, tt_args_clear)

/* Parses argv (argv[0] is the subcommand) into a; on failure prints the message and returns
 * FALSE. On success argc/argv keep the positional arguments. */
gboolean tt_parse(const char *name, const char *params, const char *summary, guint options,
                  TtArgs *a, int *argc, char ***argv);

int tt_fail(int code, const GError *error);
int tt_usage(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
/* Exit code for an error from any layer. */
int tt_error_code(const GError *error);

TsOpInstance *tt_workload(const char *op, const TtArgs *a, GError **error);
/* The op a command works on: its one positional OP, or with --kernel FILE the kernel file's
 * op (registered here; an OP then names one of the file's kernels). Returns TT_EXIT_OK with
 * *op set, or prints why not and returns the exit code. */
int tt_op_arg(const TtArgs *a, int argc, char **argv, const char *cmd, const char **op);
TsBackend *tt_backend(const TtArgs *a, GError **error);
/* TT_DB_READ: for commands that only read (show, export): a read-write open, which creates the
 * cache or upgrades an older one, else a read-only one when the file or its directory cannot
 * be written (a cache on a read-only mount, another user's cache). */
#define TT_DB_READ ((TsDbOpenFlags)(1 << 8))
TsDb *tt_db(const TtArgs *a, TsDbOpenFlags flags, GError **error);
/* The workload OP --shape --dtype, the backend and the schedule cache, for the commands that
 * take all three. Returns TT_EXIT_OK, or prints the error and returns the exit code. */
int tt_open(const char *op, const TtArgs *a, TsDbOpenFlags flags, TsOpInstance **inst,
            TsBackend **backend, TsDb **db);

/* A workload takes part in a held-out evaluation of the learned model with this many verified
 * trials, fewer making its tau meaningless (model eval, model train, and the tuner's check of
 * its prior). */
#define TT_EVAL_MIN_ROWS 10

/* The device's measured ceilings from the cache, measured and stored first when missing (or
 * always, with remeasure). Prints a line when it measures, unless quiet. */
TsProfCeilings *tt_ceilings(TsDb *db, TsBackend *backend, gint64 device_id, gboolean remeasure,
                            gboolean quiet, GError **error);

/* A timeline recorded around a piece of work (tt-profile.c): `profile` records one run with it,
 * `tune --profile` a whole session. */
typedef struct {
  TsTrace *trace;
  TsBackend *backend;         /* the backend it is attached to, or NULL */
  gboolean recording;
  GArray *events;             /* TsDbEvent, once stopped */
  gint64 t0_ns;
  TsProfTraceSummary summary; /* once stopped */
} TtTimeline;

/* Starts recording: the backend's events when backend is given (NULL: the caller attaches the
 * trace where it wants it), and every NVTX range, inside an outer range named range. */
void tt_timeline_start(TtTimeline *tl, TsBackend *backend, const char *range);
/* Closes the outer range, detaches, and fills events, t0_ns and summary. */
void tt_timeline_stop(TtTimeline *tl);
/* Stops it if still recording (an error path) and frees it. */
void tt_timeline_clear(TtTimeline *tl);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TtTimeline, tt_timeline_clear)
/* Adds the summary's members to an open JSON object: "events" (a count per kind),
 * "peak_bytes", "span_ns", "kernel_ns". */
void tt_timeline_summary_json(const TtTimeline *tl, JsonBuilder *b);
/* The report's "timeline" line. */
void tt_timeline_print(const TtTimeline *tl);
/* Stores the events as a profile (profile's keys, kind, schedule and summary as given; t0_ns
 * set here) and, with output, writes them as a Chrome trace whose process is named process. */
gboolean tt_timeline_store(TtTimeline *tl, TsDb *db, TsDbProfile *profile, const char *process,
                           const char *output, gint64 *profile_id, GError **error);

/* The absolute path of the running binary (the tuner re-executes it as its worker). */
char *tt_self_exe(void);

/* What `run` and `profile` share. --timeout: 0 becomes the default 60 s; anything but a
 * positive number is a usage error (returns its exit code, else TT_EXIT_OK). */
int tt_check_timeout(TtArgs *a);
/* A point the tuner would prune cannot run well here either (threads(100000) overflows the
 * OpenMP runtime's stack): the usage error saying why, else TT_EXIT_OK. */
int tt_check_runnable(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point);
/* The point run in the tuner's candidate worker, as every trial: a kernel that crashes, hangs
 * past timeout_s or leaves the device unusable is a status, not the end of this process.
 * trace and metrics as in TsTuneRequest. Samples summarised; NULL when no worker could run. */
TsTrialResult *tt_run_point(TsOpInstance *inst, TsBackend *backend, const TsSchedPoint *point,
                            const TsRunOptions *options, TsTrace *trace, gboolean metrics,
                            double timeout_s, GError **error);

int tt_cmd_tune(int argc, char **argv);
int tt_cmd_lookup(int argc, char **argv);
int tt_cmd_show(int argc, char **argv);
int tt_cmd_export(int argc, char **argv);
int tt_cmd_import(int argc, char **argv);
int tt_cmd_strategies(int argc, char **argv);
int tt_cmd_check(int argc, char **argv);
int tt_cmd_profile(int argc, char **argv);
int tt_cmd_model(int argc, char **argv);
int tt_cmd_batch(int argc, char **argv);
int tt_cmd_coll(int argc, char **argv);     /* argv[0]: the collective op */
int tt_cmd_coll_run(int argc, char **argv); /* each rank of a collective's launch */
int tt_cmd_coll_model(int argc, char **argv);
/* `show` and `lookup` of a collective (argv[1] names one). */
int tt_cmd_coll_show(int argc, char **argv, gboolean lookup);
/* The device as distributed-tuning ranks compare it: backend, name, arch, compute units. */
char *tt_device_text(TsBackend *backend);
