/* test-measure-lock.c — turns at a device (ts-measure-lock.h). flock(2) locks belong to open
 * files, so two acquisitions in this one process contend as two processes would. */
#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-util.h"
#include "ts-measure-lock.h"

typedef struct {
  GPtrArray *told; /* holder texts, "" for the end of a wait */
} Waits;

static void
on_wait(gpointer data, const char *holder)
{
  Waits *w = data;
  g_ptr_array_add(w->told, g_strdup(holder ? holder : ""));
}

/* A lock directory of the test's own, removed with its lock files when the test ends. */
typedef char LockDir;

static void
lock_dir_free(LockDir *dir)
{
  ts_test_remove_tree(dir);
  g_free(dir);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LockDir, lock_dir_free)

static LockDir *
fresh_dir(void)
{
  char *dir = g_dir_make_tmp("tessera-lock-test-XXXXXX", NULL);
  g_assert_nonnull(dir);
  g_setenv("TESSERA_LOCK_DIR", dir, TRUE);
  return dir;
}

static void
test_exclusive_waits(void)
{
  g_autoptr(LockDir) dir = fresh_dir();
  g_setenv("TESSERA_MEASURE_LOCK", "0.3", TRUE);
  g_autoptr(TsMeasureLock) a =
    ts_measure_lock_acquire("cuda-pci-0000:19:00", TS_MEASURE_LOCK_EXCLUSIVE, "gemm A", NULL, NULL);
  g_assert_null(ts_measure_lock_note(a));
  Waits w = {g_ptr_array_new_with_free_func(g_free)};
  g_autoptr(TsMeasureLock) b = ts_measure_lock_acquire(
    "cuda-pci-0000:19:00", TS_MEASURE_LOCK_EXCLUSIVE, "gemm B", on_wait, &w);
  /* b gave up after its bound and says on whom it waited. */
  g_assert_cmpfloat(ts_measure_lock_waited_s(b), >=, 0.3);
  g_autofree char *me = g_strdup_printf("pid %ld (", (long)getpid());
  const char *note = ts_measure_lock_note(b);
  g_assert_nonnull(note);
  g_assert_true(g_str_has_prefix(note, "waited 0."));
  g_assert_true(strstr(note, " s for the cuda-pci-0000:19:00 lock, held by ") != NULL);
  g_assert_true(strstr(note, me) != NULL);
  g_assert_true(strstr(note, ": gemm A)") != NULL);
  g_assert_cmpuint(w.told->len, ==, 2);
  g_assert_true(strstr(g_ptr_array_index(w.told, 0), ": gemm A)") != NULL);
  g_assert_cmpstr(g_ptr_array_index(w.told, 1), ==, "");
  /* Another GPU is another lock. */
  g_autoptr(TsMeasureLock) c =
    ts_measure_lock_acquire("cuda-pci-0000:1a:00", TS_MEASURE_LOCK_EXCLUSIVE, NULL, on_wait, &w);
  g_assert_null(ts_measure_lock_note(c));
  g_assert_cmpuint(w.told->len, ==, 2);
  /* Once a lets go the lock is free at once, and its file no longer names it. */
  g_clear_pointer(&a, ts_measure_lock_release);
  g_clear_pointer(&b, ts_measure_lock_release);
  g_autoptr(TsMeasureLock) d =
    ts_measure_lock_acquire("cuda-pci-0000:19:00", TS_MEASURE_LOCK_EXCLUSIVE, NULL, on_wait, &w);
  g_assert_null(ts_measure_lock_note(d));
  g_assert_cmpfloat(ts_measure_lock_waited_s(d), <, 0.3);
  g_assert_cmpuint(w.told->len, ==, 2);
  g_ptr_array_unref(w.told);
  g_clear_pointer(&c, ts_measure_lock_release);
  g_clear_pointer(&d, ts_measure_lock_release);
  g_autofree char *file = g_build_filename(dir, "cuda-pci-0000-19-00.lock", NULL);
  g_autofree char *text = NULL;
  gsize len = 1;
  g_assert_true(g_file_get_contents(file, &text, &len, NULL));
  g_assert_cmpuint(len, ==, 0);
}

/* A measurement waits for compiles; compiles share; a dead holder's name is not believed. */
static void
test_shared_and_stale(void)
{
  g_autoptr(LockDir) dir = fresh_dir();
  g_setenv("TESSERA_MEASURE_LOCK", "0.2", TRUE);
  g_autoptr(TsMeasureLock) s1 =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_SHARED, NULL, NULL, NULL);
  g_autoptr(TsMeasureLock) s2 =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_SHARED, NULL, NULL, NULL);
  g_assert_null(ts_measure_lock_note(s1));
  g_assert_null(ts_measure_lock_note(s2));
  g_assert_cmpfloat(ts_measure_lock_waited_s(s2), <, 0.2);
  /* A holder that died without emptying the file: a pid that is no longer a process. */
  pid_t child = fork();
  if (child == 0)
    _exit(0);
  waitpid(child, NULL, 0);
  g_autofree char *file = g_build_filename(dir, "host.lock", NULL);
  g_autofree char *stale = g_strdup_printf("%ld\ttessera-tune: gemm long gone\n", (long)child);
  FILE *f = fopen(file, "r+"); /* in place: the holders lock this very file */
  g_assert_nonnull(f);
  g_assert_cmpint(fputs(stale, f), >=, 0);
  g_assert_cmpint(fclose(f), ==, 0);
  g_autoptr(TsMeasureLock) x =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_EXCLUSIVE, NULL, NULL, NULL);
  g_assert_true(g_str_has_suffix(ts_measure_lock_note(x),
                                 " s for the host lock, held by other processes compiling or "
                                 "verifying kernels on this host, and went ahead without it"));
  /* The compiles over, the measurement has the host to itself. */
  g_clear_pointer(&x, ts_measure_lock_release);
  g_clear_pointer(&s1, ts_measure_lock_release);
  g_clear_pointer(&s2, ts_measure_lock_release);
  g_autoptr(TsMeasureLock) y =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_EXCLUSIVE, "m", NULL, NULL);
  g_assert_null(ts_measure_lock_note(y));
  g_autoptr(TsMeasureLock) z =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_SHARED, NULL, NULL, NULL);
  g_assert_nonnull(ts_measure_lock_note(z));
}

typedef struct {
  TsMeasureLockMode mode;
  gulong hold_ms;
  gint64 got_us;
  gboolean noted;
} Turn;

static gpointer
take_turn(gpointer data)
{
  Turn *t = data;
  TsMeasureLock *lock = ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, t->mode, "t", NULL, NULL);
  t->got_us = g_get_monotonic_time();
  t->noted = ts_measure_lock_note(lock) != NULL;
  g_usleep(t->hold_ms * 1000);
  ts_measure_lock_release(lock);
  return NULL;
}

/* Turns are taken in line: a compile that comes while a measurement waits for earlier compiles
 * waits behind it, so compiles that overlap one another cannot keep a measurement out. */
static void
test_in_line(void)
{
  g_autoptr(LockDir) dir = fresh_dir();
  g_setenv("TESSERA_MEASURE_LOCK", "20", TRUE);
  TsMeasureLock *compiling =
    ts_measure_lock_acquire(TS_MEASURE_LOCK_HOST, TS_MEASURE_LOCK_SHARED, NULL, NULL, NULL);
  Turn measure = {TS_MEASURE_LOCK_EXCLUSIVE, 100, 0, FALSE};
  Turn compile = {TS_MEASURE_LOCK_SHARED, 0, 0, FALSE};
  GThread *m = g_thread_new("measure", take_turn, &measure);
  g_usleep(200 * 1000); /* the measurement waits for the first compile */
  GThread *c = g_thread_new("compile", take_turn, &compile);
  g_usleep(300 * 1000);
  gint64 released = g_get_monotonic_time();
  ts_measure_lock_release(compiling);
  g_thread_join(m);
  g_thread_join(c);
  g_assert_false(measure.noted);
  g_assert_false(compile.noted);
  /* The later compile did not join the first: it waited for the measurement. */
  g_assert_cmpint(measure.got_us, >=, released);
  g_assert_cmpint(compile.got_us, >=, measure.got_us + 100 * 1000);
  g_autofree char *queue = g_build_filename(dir, "host.queue.lock", NULL);
  g_assert_true(g_file_test(queue, G_FILE_TEST_EXISTS));
}

/* The lock file removed and made anew while a holder has the old one: a newcomer's lock is on the
 * new file, and the holder's release does not free it. */
static void
test_file_replaced(void)
{
  g_autoptr(LockDir) dir = fresh_dir();
  g_setenv("TESSERA_MEASURE_LOCK", "0.2", TRUE);
  g_autoptr(TsMeasureLock) old =
    ts_measure_lock_acquire("host", TS_MEASURE_LOCK_EXCLUSIVE, "old", NULL, NULL);
  g_autofree char *file = g_build_filename(dir, "host.lock", NULL);
  g_assert_cmpint(g_unlink(file), ==, 0);
  g_autoptr(TsMeasureLock) a =
    ts_measure_lock_acquire("host", TS_MEASURE_LOCK_EXCLUSIVE, "a", NULL, NULL);
  g_assert_null(ts_measure_lock_note(a));
  g_clear_pointer(&old, ts_measure_lock_release);
  g_autoptr(TsMeasureLock) b =
    ts_measure_lock_acquire("host", TS_MEASURE_LOCK_EXCLUSIVE, "b", NULL, NULL);
  g_assert_nonnull(ts_measure_lock_note(b));
  g_assert_true(strstr(ts_measure_lock_note(b), ": a)") != NULL);
}

static void
test_off_and_unusable(void)
{
  g_autoptr(LockDir) dir = fresh_dir();
  g_setenv("TESSERA_MEASURE_LOCK", "off", TRUE);
  g_assert_cmpfloat(ts_measure_lock_max_wait_s(), <, 0);
  g_autoptr(TsMeasureLock) a =
    ts_measure_lock_acquire("host", TS_MEASURE_LOCK_EXCLUSIVE, NULL, NULL, NULL);
  g_autoptr(TsMeasureLock) b =
    ts_measure_lock_acquire("host", TS_MEASURE_LOCK_EXCLUSIVE, NULL, NULL, NULL);
  g_assert_null(ts_measure_lock_note(a));
  g_assert_null(ts_measure_lock_note(b));
  g_assert_cmpfloat(ts_measure_lock_waited_s(b), <, 0.1);
  g_autofree char *file = g_build_filename(dir, "host.lock", NULL);
  g_assert_false(g_file_test(file, G_FILE_TEST_EXISTS));

  g_unsetenv("TESSERA_MEASURE_LOCK");
  g_assert_cmpfloat(ts_measure_lock_max_wait_s(), ==, 120);
  /* A lock directory that cannot be made: the work goes ahead, and the note names the path. */
  g_autofree char *blocker = g_build_filename(dir, "a-file", NULL);
  g_assert_true(g_file_set_contents(blocker, "", 0, NULL));
  g_autofree char *under = g_build_filename(blocker, "locks", NULL);
  g_setenv("TESSERA_LOCK_DIR", under, TRUE);
  g_autoptr(TsMeasureLock) c =
    ts_measure_lock_acquire("host", TS_MEASURE_LOCK_EXCLUSIVE, NULL, NULL, NULL);
  const char *note = ts_measure_lock_note(c);
  g_assert_nonnull(note);
  g_assert_true(g_str_has_prefix(note, "without the host lock: cannot create "));
  g_assert_true(strstr(note, under) != NULL);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/measure-lock/exclusive-waits", test_exclusive_waits);
  g_test_add_func("/measure-lock/shared-and-stale", test_shared_and_stale);
  g_test_add_func("/measure-lock/in-line", test_in_line);
  g_test_add_func("/measure-lock/file-replaced", test_file_replaced);
  g_test_add_func("/measure-lock/off-and-unusable", test_off_and_unusable);
  return g_test_run();
}
