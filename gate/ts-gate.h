/* ts-gate.h — the CI perf-regression gate: a suite of workloads, measured against a stored
 * baseline, judged by effect size and a rank test together, reported for terminals, PR comments
 * and CI systems.
 *
 * Why A/B: on a shared machine the speed of the same binary drifts by tens of percent over
 * seconds (a busy neighbour, a sibling hyperthread), so two sample sets taken minutes apart
 * differ even when nothing changed. A check therefore loads the baseline's stored kernel binary
 * and times it in short rounds alternating with the current kernel: both see the same machine.
 * The stored baseline samples are the fallback when the binary cannot be run again (another
 * compiler, another machine) and what `compare` uses.
 */
#pragma once

#include <glib.h>

#include "ts-backend.h"
#include "ts-db.h"

G_BEGIN_DECLS

#define TS_GATE_ERROR (ts_gate_error_quark())
GQuark ts_gate_error_quark(void);

typedef enum {
  TS_GATE_ERROR_SUITE,       /* unreadable or malformed suite file; the message names the
                                file, the section and the key */
  TS_GATE_ERROR_NO_BASELINE, /* nothing to compare with; the message says how to record one */
  TS_GATE_ERROR_REV,         /* a --base/--head reference that matches no stored run */
  TS_GATE_ERROR_FAILED,      /* anything else the gate itself could not do */
} TsGateError;

/* ---- the suite file (format: docs/perfgate.md) ---- */

/* A workload's schedule: a fixed point, the op's default point, or the best in the cache. */
typedef enum {
  TS_GATE_SCHEDULE_POINT,
  TS_GATE_SCHEDULE_DEFAULT,
  TS_GATE_SCHEDULE_BEST,
} TsGateScheduleKind;

typedef struct {
  char *name;     /* the section name: unique, [A-Za-z0-9_.-]+ */
  char *op;       /* a known op; for kernel= the kernel's, "kernel:NAME@HASH" */
  char *kernel;      /* kernel= as written (a .tsk file), or NULL: a built-in op */
  char *kernel_path; /* that file, found from the suite's folder */
  char *kernel_src;  /* its text, as read when the suite was parsed */
  char *shape;    /* as given ("M=512,N=512,K=512"); validated against the op */
  char *dtype;    /* default "f32" */
  TsGateScheduleKind schedule_kind;
  char *schedule; /* the point's text (POINT only, NULL otherwise) */
  double threshold; /* slowdown fraction that fails (0.05 = 5%); NAN: the suite's */
} TsGateWorkload;

typedef struct {
  char *path;        /* as loaded, for messages; "<string>" for parsed text */
  char *name;        /* [gate] name, default: the file's basename without extension */
  char *backend;     /* [gate] backend, default "auto" */
  double threshold;  /* [gate] threshold, default 0.05 */
  double alpha;      /* [gate] alpha, default 0.01 */
  double time_ms;    /* [gate] time per workload and side, default 1500 */
  GPtrArray *workloads; /* TsGateWorkload*, in file order, at least one */
} TsGateSuite;

/* A suite is a GKeyFile: one [gate] group of settings, then one group per workload. Every
 * problem is TS_GATE_ERROR_SUITE naming the file, group and key: unknown groups' keys (with a
 * did-you-mean), unknown ops, shapes or dtypes the op rejects, malformed schedules, thresholds
 * outside (0, 1) (written "5%" or "0.05"), duplicate workload names, no workloads. */
TsGateSuite *ts_gate_suite_parse(const char *text, gssize length, const char *path,
                                 GError **error);
TsGateSuite *ts_gate_suite_load(const char *path, GError **error);
void ts_gate_suite_free(TsGateSuite *suite);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsGateSuite, ts_gate_suite_free)
/* The threshold that applies to a workload (its own, or the suite's). */
double ts_gate_workload_threshold(const TsGateSuite *suite, const TsGateWorkload *workload);
/* "gemm M=512,N=512,K=512 f32". */
char *ts_gate_workload_describe(const TsGateWorkload *workload);
/* "5%", "0.05" or "5" (percent) → fraction. FALSE when malformed or outside (0, 1). */
gboolean ts_gate_parse_fraction(const char *text, double *fraction);

/* ---- verdicts ---- */

typedef enum {
  TS_GATE_PASS,       /* no slowdown beyond the threshold and the noise */
  TS_GATE_IMPROVED,   /* faster beyond the threshold and the noise (passes) */
  TS_GATE_REGRESSION, /* slower beyond the threshold and the noise */
  TS_GATE_FAILED,     /* the current kernel did not compile, crashed or is wrong */
  TS_GATE_NEW,        /* no baseline for this workload (passes, with a note) */
} TsGateVerdict;

const char *ts_gate_verdict_name(TsGateVerdict verdict); /* "pass", "improved", ... */
gboolean ts_gate_verdict_parse(const char *name, TsGateVerdict *verdict);
/* Whether the verdict fails the gate (regression, failed). */
gboolean ts_gate_verdict_fails(TsGateVerdict verdict);

/* One workload's comparison. */
typedef struct {
  char *name;          /* the workload's name in the suite */
  char *workload;      /* "gemm M=512,N=512,K=512 f32" */
  char *schedule;      /* the current point, or NULL */
  char *base_schedule; /* the baseline's point, or NULL */
  GArray *base_ns;     /* double: baseline samples compared (NULL for NEW) */
  GArray *cur_ns;      /* double: current samples compared (NULL for FAILED) */
  GArray *round_ratios;/* double: per-round median(cur)/median(base) of A/B rounds, or NULL */
  double base_median_ns, cur_median_ns;
  double change;       /* estimated cur/base - 1 (A/B: median of the round ratios; otherwise
                          the ratio of the medians); NAN when not compared */
  double p_value;      /* one-sided Mann–Whitney U: of "slower" for pass/regression, of "faster"
                          for improved; NAN when not compared */
  double threshold;
  gboolean ab;         /* the baseline binary was re-run side by side */
  guint remeasured;    /* borderline re-measurements made */
  TsGateVerdict verdict;
  char *note;          /* why it failed, what changed, or NULL */
} TsGateResult;

TsGateResult *ts_gate_result_new(void); /* numbers NAN, verdict PASS */
void ts_gate_result_free(TsGateResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsGateResult, ts_gate_result_free)
/* Appends to the note ("; " between parts). */
void ts_gate_result_add_note(TsGateResult *result, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Fills median, change, p_value and verdict from base_ns, cur_ns and round_ratios (when
 * non-NULL). Regression: change >= threshold and p < alpha; improved: change <= -threshold and
 * p < alpha (for "faster"); else pass. Results already FAILED or NEW are left alone. */
void ts_gate_decide(TsGateResult *result, double threshold, double alpha);
/* A regression that noise could plausibly have produced, worth measuring again before failing
 * it: the change is under twice the threshold, or p is within a factor 100 of alpha. */
gboolean ts_gate_borderline(const TsGateResult *result, double alpha);

/* ---- reports ---- */

typedef struct {
  const char *suite;     /* suite name */
  const char *device;    /* "AMD EPYC (x86_64+avx2+fma+f16c), gcc 12.2.0" */
  const char *base;      /* "baseline #3 abc1234 (2026-11-23 10:01)" */
  const char *head;      /* "this build def5678" or "check #7 ..." */
  double threshold, alpha; /* the suite defaults */
  GPtrArray *results;    /* TsGateResult*, borrowed */
} TsGateReport;

/* The overall verdict: FAILED if any failed, else REGRESSION if any regressed, else PASS. */
TsGateVerdict ts_gate_report_verdict(const TsGateReport *report);
/* Exit status: 0 pass, 1 regression or failed. */
int ts_gate_report_exit_code(const TsGateReport *report);

/* Aligned text table: workload, baseline median, current median, change %, p-value, verdict,
 * with a header and a one-line summary; notes under the rows they belong to. Times in the
 * best unit (ns, µs, ms, s). color: ANSI colours on verdicts. */
char *ts_gate_report_text(const TsGateReport *report, gboolean color);
/* GitHub-flavoured Markdown for a PR comment: a title with the overall verdict, the context,
 * the table (regressions first), and the notes. Cells are escaped (|, newlines). */
char *ts_gate_report_markdown(const TsGateReport *report);
/* JUnit XML: one <testsuite> named after the suite, one <testcase> per workload (classname
 * "perfgate.<suite>"), <failure> for regressions and failures with the numbers in its message,
 * <skipped> for NEW, times in seconds of measurement. Text is XML-escaped. */
char *ts_gate_report_junit(const TsGateReport *report);

/* ---- running the gate (ts-gate.c) ---- */

typedef struct {
  const char *git_commit; /* NULL: asked of git in the working directory (none outside one) */
  const char *label;      /* stored with the run, or NULL */
  double time_scale;      /* multiplies the suite's time_ms (default 1) */
  guint max_remeasure;    /* borderline re-measurements per workload (default 2) */
  double inject_slowdown; /* test hook: slow every current kernel by this fraction */
  const char *inject_only;/* ... only this workload (NULL: all) */
  gboolean store;         /* store the check's run (default TRUE) */
  /* Kernels run in a child, `worker_exe measure-worker` (ts_gate_worker_main), so one that
   * crashes or hangs fails its workload instead of the gate. Required. */
  const char *worker_exe;
  double timeout_s;       /* a child step (compile + verify) that takes longer is a hang: the
                             workload fails (default 60; measuring gets its time on top) */
  guint64 seed;           /* input data (default 1) */
  /* Progress lines ("measuring gemm-512 (2/3)..."), or NULL. */
  void (*progress)(const char *line, gpointer user_data);
  gpointer user_data;
} TsGateOptions;

void ts_gate_options_init(TsGateOptions *options);

/* Measures every workload of the suite on the backend and stores the samples and kernel
 * binaries as a baseline run. *run_id (optional) gets the run. Workloads that fail are stored
 * as failed and reported in the returned results; the gate error is for the machinery, an
 * unresolvable "best" schedule, or the database. */
GPtrArray *ts_gate_baseline(TsDb *db, TsBackend *backend, const TsGateSuite *suite,
                            const TsGateOptions *options, gint64 *run_id, GError **error);

/* Measures again and compares with the baseline run base_run_id (0: the newest baseline of the
 * suite on this device; none is TS_GATE_ERROR_NO_BASELINE saying how to record one). The
 * report's results are filled (owned by the returned array). */
GPtrArray *ts_gate_check(TsDb *db, TsBackend *backend, const TsGateSuite *suite,
                         gint64 base_run_id, const TsGateOptions *options, gint64 *run_id,
                         GError **error);

/* The measuring child's main loop on the given descriptors (ts-gate-worker.c); returns the
 * process exit status. */
int ts_gate_worker_main(int in_fd, int out_fd);

/* Compares two stored runs without measuring (their own-kernel samples, unpaired). suite may be
 * NULL (all workloads the runs share, thresholds from the head run or 5%). */
GPtrArray *ts_gate_compare(TsDb *db, gint64 base_run_id, gint64 head_run_id,
                           const TsGateSuite *suite, double alpha, GError **error);

/* Resolves a run reference for a suite on a device: "#12" or "12" (a run id), "baseline" or
 * "latest" (the newest baseline / run), a commit hex prefix, or anything `git rev-parse`
 * resolves in the working directory (branch, tag, HEAD~1). The newest matching finished run;
 * TS_GATE_ERROR_REV naming the reference and saying how to list runs. */
gint64 ts_gate_resolve_rev(TsDb *db, const char *suite, gint64 device_id, const char *rev,
                           GError **error);
/* "abc1234 (2026-11-23 10:01, dirty)"-style description of a run for reports. */
char *ts_gate_describe_run(const TsDbGateRun *run);

G_END_DECLS
