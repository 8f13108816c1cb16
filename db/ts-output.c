/* ts-output.c — see ts-output.h. */
#include "ts-output.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gboolean
fail_errno(const char *path, int err, const char *what, GError **error)
{
  g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err), "cannot %s '%s': %s", what, path,
              g_strerror(err));
  return FALSE;
}

/* Writes into what is already there (a FIFO, a device): open, write everything, close. */
static gboolean
write_through(const char *path, const char *data, gsize len, GError **error)
{
  int fd = g_open(path, O_WRONLY | O_CLOEXEC, 0);
  if (fd < 0)
    return fail_errno(path, errno, "open", error);
  gsize off = 0;
  while (off < len) {
    ssize_t n = write(fd, data + off, len - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int err = n < 0 ? errno : ENOSPC;
      close(fd);
      return fail_errno(path, err, "write to", error);
    }
    off += (gsize)n;
  }
  if (close(fd) != 0)
    return fail_errno(path, errno, "write to", error);
  return TRUE;
}

/* Links followed before giving up, as the kernel's own limit (a link to itself would recurse
 * forever). */
#define MAX_LINKS 40

static gboolean
write_path(const char *path, const char *data, gsize n, guint links, GError **error)
{
  GStatBuf st;
  if (g_lstat(path, &st) != 0) /* nothing there yet */
    return g_file_set_contents(path, data, (gssize)n, error);
  if (S_ISLNK(st.st_mode)) {
    /* The link's target takes the output; a dangling link's target is created. */
    g_autofree char *target = g_file_read_link(path, NULL);
    if (target == NULL)
      return fail_errno(path, errno, "read the link", error);
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *resolved =
      g_path_is_absolute(target) ? g_strdup(target) : g_build_filename(dir, target, NULL);
    if (links >= MAX_LINKS)
      return fail_errno(path, ELOOP, "follow the links of", error);
    return write_path(resolved, data, n, links + 1, error);
  }
  if (!S_ISREG(st.st_mode)) {
    if (S_ISDIR(st.st_mode)) {
      g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_ISDIR, "cannot write '%s': it is a directory",
                  path);
      return FALSE;
    }
    return write_through(path, data, n, error);
  }
  return g_file_set_contents(path, data, (gssize)n, error);
}

gboolean
ts_output_write(const char *path, const void *data, gssize len, GError **error)
{
  g_return_val_if_fail(path != NULL && data != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  return write_path(path, data, len < 0 ? strlen(data) : (gsize)len, 0, error);
}
