/* ts-measure-lock.c — flock(2) turns at a device (ts-measure-lock.h). The exclusive holder
 * writes "pid\twhat" into the lock file so that waiters can say whom they wait for; it empties
 * the file before it lets go. */
#include "ts-measure-lock.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_MAX_WAIT_S 120.0

struct _TsMeasureLock {
  int fd; /* -1 when not held */
  TsMeasureLockMode mode;
  double waited_s;
  char *note;
};

double
ts_measure_lock_max_wait_s(void)
{
  const char *env = g_getenv("TESSERA_MEASURE_LOCK");
  if (env == NULL || *env == '\0')
    return DEFAULT_MAX_WAIT_S;
  if (g_ascii_strcasecmp(env, "off") == 0)
    return -1;
  char *end = NULL;
  double s = g_ascii_strtod(env, &end);
  if (end != env && *end == '\0' && s >= 0 && s < 1e6)
    return s;
  static gsize warned;
  if (g_once_init_enter(&warned)) {
    g_printerr("tessera: TESSERA_MEASURE_LOCK='%s' is neither 'off' nor a number of seconds; "
               "waiting for a device's lock at most %.0f s\n",
               env, DEFAULT_MAX_WAIT_S);
    g_once_init_leave(&warned, 1);
  }
  return DEFAULT_MAX_WAIT_S;
}

/* The lock directory, made world-writable and sticky like /tmp: every user's tools on a host
 * share one GPU. */
static char *
lock_dir(GError **error)
{
  const char *env = g_getenv("TESSERA_LOCK_DIR");
  char *dir = env && *env ? g_strdup(env) : g_build_filename(g_get_tmp_dir(), "tessera-locks", NULL);
  if (g_mkdir_with_parents(dir, 0777) != 0) {
    int e = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "cannot create %s: %s", dir,
                g_strerror(e));
    g_free(dir);
    return NULL;
  }
  struct stat st;
  if (!env && stat(dir, &st) == 0 && st.st_uid == getuid() && (st.st_mode & 01777) != 01777)
    (void)chmod(dir, 01777);
  return dir;
}

static int
open_lock(const char *unit, char **path_out, GError **error)
{
  g_autofree char *dir = lock_dir(error);
  if (dir == NULL)
    return -1;
  g_autofree char *name = g_strdup(unit);
  g_strcanon(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", '-');
  g_autofree char *file = g_strconcat(name, ".lock", NULL);
  char *path = g_build_filename(dir, file, NULL);
  /* O_CLOEXEC: a lock inherited by a spawned compiler or worker would outlive its release. */
  int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "cannot open %s: %s", path,
                g_strerror(e));
    g_free(path);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) == 0 && st.st_uid == getuid() && (st.st_mode & 0666) != 0666)
    (void)fchmod(fd, 0666); /* past the umask, for the other users of the device */
  *path_out = path;
  return fd;
}

/* Who holds the lock now, as its exclusive holder wrote it; shared holders write nothing. */
static char *
describe_holder(int fd)
{
  char buf[512];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n > 0) {
    buf[n] = '\0';
    g_strchomp(buf);
    char *tab = strchr(buf, '\t');
    char *end = NULL;
    long pid = strtol(buf, &end, 10);
    /* A holder that died without emptying the file no longer holds anything. */
    if (tab && end == tab && pid > 0 && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
      return g_strdup_printf("pid %ld (%s)", pid, tab + 1);
  }
  return g_strdup("other processes compiling or verifying kernels on this host");
}

/* Turns are taken in line: a process first holds the unit's queue lock, exclusively, and only
 * then tries the unit's lock itself, letting go of the queue once it has it. Without the line,
 * compiles (shared) could follow each other on a busy host so that the shared lock is never
 * free and a measurement waits out its whole bound every time; in line, compiles that come
 * after a waiting measurement wait behind it. -1 when the queue file cannot be had: the turn is
 * then taken out of line. */
static int
open_queue(const char *unit)
{
  g_autofree char *name = g_strconcat(unit, ".queue", NULL);
  g_autofree char *path = NULL;
  return open_lock(name, &path, NULL);
}

/* After a failed try at the queue: FALSE while another process is ahead in it; TRUE, with the
 * queue given up (*queue = -1), when flock cannot work on it at all. */
static gboolean
queue_held(int *queue)
{
  if (errno == EWOULDBLOCK || errno == EINTR)
    return FALSE;
  close(*queue);
  *queue = -1;
  return TRUE;
}

TsMeasureLock *
ts_measure_lock_acquire(const char *unit, TsMeasureLockMode mode, const char *what,
                        TsMeasureLockWait wait, gpointer data)
{
  g_return_val_if_fail(unit != NULL, NULL);
  TsMeasureLock *lock = g_new0(TsMeasureLock, 1);
  lock->fd = -1;
  lock->mode = mode;
  double max_wait_s = ts_measure_lock_max_wait_s();
  if (max_wait_s < 0)
    return lock;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  int fd = open_lock(unit, &path, &error);
  if (fd < 0) {
    lock->note = g_strdup_printf("without the %s lock: %s", unit, error->message);
    return lock;
  }
  int op = mode == TS_MEASURE_LOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH;
  int queue = open_queue(unit);
  gint64 start = g_get_monotonic_time();
  gboolean told = FALSE;
  g_autofree char *holder = NULL;
  gulong sleep_us = 500;
  for (;;) {
    gboolean first = queue < 0 || flock(queue, LOCK_EX | LOCK_NB) == 0 || queue_held(&queue);
    if (first && flock(fd, op | LOCK_NB) == 0) {
      /* A lock file removed and made anew (a /tmp cleaner) while this one was opened is no
       * longer the one others lock: take the lock on the file the path names now. */
      struct stat held, named;
      if (fstat(fd, &held) != 0 || stat(path, &named) != 0 || held.st_ino == named.st_ino ||
          held.st_dev != named.st_dev)
        break;
      close(fd);
      g_clear_pointer(&path, g_free);
      fd = open_lock(unit, &path, &error);
      if (fd < 0) {
        lock->note = g_strdup_printf("without the %s lock: %s", unit, error->message);
        break;
      }
      continue;
    }
    if (first && errno != EWOULDBLOCK && errno != EINTR) {
      int e = errno;
      lock->note = g_strdup_printf("without the %s lock: flock %s: %s", unit, path, g_strerror(e));
      close(fd);
      fd = -1;
      break;
    }
    if (!told) {
      holder = describe_holder(fd);
      if (wait)
        wait(data, holder);
      told = TRUE;
    }
    double waited = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
    if (waited >= max_wait_s) {
      lock->note = g_strdup_printf("waited %.1f s for the %s lock, held by %s, and went ahead "
                                   "without it",
                                   waited, unit, holder);
      close(fd);
      fd = -1;
      break;
    }
    /* Polled, not blocked on: a blocking flock cannot be given up on time. Hand-overs are
     * noticed within 10 ms. */
    g_usleep(sleep_us);
    sleep_us = MIN(sleep_us * 2, 10000);
  }
  if (queue >= 0)
    close(queue); /* the next in line may try */
  lock->waited_s = (double)(g_get_monotonic_time() - start) / G_USEC_PER_SEC;
  if (told && wait)
    wait(data, NULL);
  lock->fd = fd;
  if (fd >= 0 && mode == TS_MEASURE_LOCK_EXCLUSIVE) {
    g_autofree char *me = g_strdup_printf("%ld\t%s: %s\n", (long)getpid(),
                                          g_get_prgname() ? g_get_prgname() : "tessera",
                                          what ? what : "measuring");
    if (ftruncate(fd, 0) != 0 || pwrite(fd, me, strlen(me), 0) < 0) {
      /* Only the waiters' messages lose their holder's name. */
    }
  }
  return lock;
}

const char *
ts_measure_lock_note(const TsMeasureLock *lock)
{
  g_return_val_if_fail(lock != NULL, NULL);
  return lock->note;
}

double
ts_measure_lock_waited_s(const TsMeasureLock *lock)
{
  g_return_val_if_fail(lock != NULL, 0);
  return lock->waited_s;
}

void
ts_measure_lock_release(TsMeasureLock *lock)
{
  if (lock == NULL)
    return;
  if (lock->fd >= 0) {
    if (lock->mode == TS_MEASURE_LOCK_EXCLUSIVE && ftruncate(lock->fd, 0) != 0) {
      /* a stale name is recognised by its dead pid */
    }
    close(lock->fd); /* releases the flock */
  }
  g_free(lock->note);
  g_free(lock);
}
