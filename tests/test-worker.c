/* test-worker.c — the candidate worker (`tessera-tune worker`) from the tuner's side: a trial
 * that leaves the backend lost (a CPU kernel writing past its buffer, the CPU's illegal
 * address) is a runtime error and the worker exits, so the next candidate runs in a fresh
 * process and passes; a crash restarts it too; a worker killed while idle is replaced without
 * blaming the next candidate. Usage: test-worker TESSERA_TUNE [g_test options]. */
#include <glib.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "test-util.h"
#include "ts-tune-worker.h"

static const char *exe;
static char *cache_dir;

static TsTrialResult *
run_mode(TsTuneWorker *w, const char *mode)
{
  g_autofree char *schedule = g_strdup_printf("dict(mode=\"%s\")", mode);
  TsTuneRequest q = {
    .op = "test_fault",
    .shape = "N=1000",
    .dtype = "f32",
    .schedule = schedule,
    .backend = "cpu",
    .cache_dir = cache_dir,
  };
  ts_run_options_init(&q.options);
  q.options.n_warmup = 0;
  q.options.min_samples = 1;
  q.options.max_samples = 2;
  q.options.target_ms = 1;
  g_autoptr(GError) error = NULL;
  TsTrialResult *r = ts_tune_worker_run(w, &q, 30, &error);
  g_assert_no_error(error);
  g_assert_nonnull(r);
  return r;
}

static void
assert_ok(TsTrialResult *r)
{
  if (r->status != TS_TRIAL_OK)
    g_error("expected ok, got %s: %s", ts_trial_status_name(r->status), r->message);
}

static void
test_lost_backend(void)
{
  g_autoptr(TsTuneWorker) w = ts_tune_worker_new(exe);
  g_autoptr(TsTrialResult) first = run_mode(w, "ok");
  assert_ok(first);
  /* A CPU kernel's CPU time comes back beside its wall time, a pair per sample. */
  g_assert_nonnull(first->cpu_samples);
  g_assert_cmpuint(first->cpu_samples->len, ==, first->samples_ns->len);
  g_assert_cmpfloat(g_array_index(first->cpu_samples, TsCpuTime, 0).process_ns, >, 0);
  GPid before = ts_tune_worker_pid(w);
  g_assert_cmpint(before, >, 0);

  g_autoptr(TsTrialResult) oob = run_mode(w, "oob");
  g_assert_cmpstr(ts_trial_status_name(oob->status), ==, "runtime_error");
  g_assert_nonnull(strstr(oob->message, "wrote past the end of buffer 2 (4000 bytes)"));
  g_assert_nonnull(strstr(oob->message, "the worker exits"));
  g_assert_cmpint(ts_tune_worker_pid(w), ==, 0); /* gone, reaped */

  /* Without the exit every later candidate would be refused by the lost backend. */
  g_autoptr(TsTrialResult) after = run_mode(w, "ok");
  assert_ok(after);
  g_assert_cmpint(ts_tune_worker_pid(w), >, 0);
  g_assert_cmpint(ts_tune_worker_pid(w), !=, before);
}

static void
test_crash_restarts(void)
{
  g_autoptr(TsTuneWorker) w = ts_tune_worker_new(exe);
  g_autoptr(TsTrialResult) segv = run_mode(w, "segv");
  g_assert_cmpstr(ts_trial_status_name(segv->status), ==, "runtime_error");
  g_autoptr(TsTrialResult) after = run_mode(w, "ok");
  assert_ok(after);
}

static void
test_killed_idle(void)
{
  g_autoptr(TsTuneWorker) w = ts_tune_worker_new(exe);
  g_autoptr(TsTrialResult) first = run_mode(w, "ok");
  assert_ok(first);
  GPid pid = ts_tune_worker_pid(w);
  g_assert_cmpint(kill(pid, SIGKILL), ==, 0);
  /* Wait until GLib's worker thread has reaped it. A zombie group leader is not enough: its
   * other threads (OpenMP's, GLib's) may still hold the pipes open, and a request written then
   * is taken by a process that is about to vanish (seen under ASan on a loaded 2-core VM). */
  for (int i = 0; i < 1000 && kill(pid, 0) == 0; i++)
    g_usleep(10000);
  g_assert_cmpint(kill(pid, 0), !=, 0);
  g_autoptr(TsTrialResult) next = run_mode(w, "ok");
  assert_ok(next);
  g_assert_cmpint(ts_tune_worker_pid(w), !=, pid);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  if (argc < 2) {
    g_printerr("usage: test-worker TESSERA_TUNE\n");
    return 2;
  }
  exe = argv[1];
  g_setenv("TESSERA_TEST_OPS", "1", TRUE);
  cache_dir = g_dir_make_tmp("ts-test-worker-XXXXXX", NULL);
  g_test_add_func("/worker/lost-backend", test_lost_backend);
  g_test_add_func("/worker/crash-restarts", test_crash_restarts);
  g_test_add_func("/worker/killed-idle", test_killed_idle);
  int rc = g_test_run();
  ts_test_remove_tree(cache_dir);
  g_free(cache_dir);
  return rc;
}
