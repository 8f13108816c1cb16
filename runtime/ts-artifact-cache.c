/* ts-artifact-cache.c — the content-addressed artifact store every backend compiles into (see
 * ts-artifact-cache.h for the layout and the concurrency rule: entries appear only by rename).
 */
#include "config.h"

#include "ts-artifact-cache.h"
#include "ts-backend.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct _TsArtifactCache {
  char *dir;
  gboolean ready; /* directory created and found writable once; not re-checked per compile */
};

TsArtifactCache *
ts__artifact_cache_new(const char *dir)
{
  g_assert(dir != NULL);
  TsArtifactCache *cache = g_new0(TsArtifactCache, 1);
  cache->dir = g_strdup(dir);
  return cache;
}

void
ts__artifact_cache_free(TsArtifactCache *cache)
{
  if (cache == NULL)
    return;
  g_free(cache->dir);
  g_free(cache);
}

/* TESSERA_ARTIFACT_DIR moves the compiled kernels alone, apart from the schedule cache beside
 * them: onto a larger disk, or shared by runs that each keep their own schedule cache (the
 * test suites' scratch caches share one, so each kernel compiles once per machine). */
char *
ts__artifact_cache_default_dir(void)
{
  const char *env = g_getenv("TESSERA_ARTIFACT_DIR");
  if (env != NULL && *env != '\0')
    return g_strdup(env);
  return g_build_filename(g_get_user_cache_dir(), "tessera", "artifacts", NULL);
}

const char *
ts__artifact_cache_dir(const TsArtifactCache *cache)
{
  return cache->dir;
}

gboolean
ts__artifact_cache_ensure(TsArtifactCache *cache, GError **error)
{
  if (cache->ready)
    return TRUE;
  if (g_mkdir_with_parents(cache->dir, 0755) != 0) {
    int saved = errno;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "cannot create the artifact cache directory '%s': %s; point "
                "TESSERA_ARTIFACT_DIR (or XDG_CACHE_HOME) at a writable directory",
                cache->dir, g_strerror(saved));
    return FALSE;
  }
  /* Its entries are loaded as code: a directory someone else owns or may write into would run
   * their code as us (ssh refuses a ~/.ssh like that for the same reason). */
  GStatBuf st;
  if (g_stat(cache->dir, &st) == 0 && (st.st_uid != geteuid() || (st.st_mode & 022) != 0)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "the artifact cache directory '%s' is %s: kernels loaded from it could be "
                "anyone's code; make it yours alone (chmod go-w) or point TESSERA_ARTIFACT_DIR "
                "(or XDG_CACHE_HOME) at a private directory",
                cache->dir, st.st_uid != geteuid() ? "owned by another user" : "writable by others");
    return FALSE;
  }
  if (access(cache->dir, W_OK | X_OK) != 0) {
    int saved = errno;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "the artifact cache directory '%s' is not writable: %s; point "
                "TESSERA_ARTIFACT_DIR (or XDG_CACHE_HOME) at a writable directory",
                cache->dir, g_strerror(saved));
    return FALSE;
  }
  cache->ready = TRUE;
  return TRUE;
}

char *
ts__artifact_cache_path(const TsArtifactCache *cache, const char *key, const char *suffix)
{
  g_autofree char *base = g_strconcat(key, suffix, NULL);
  return g_build_filename(cache->dir, base, NULL);
}

/* An entry is ours when it is a plain file (not a link to elsewhere) that we own and only we
 * may write: what commit leaves. Anything else is treated as absent, and the rebuild's rename
 * replaces it. */
static gboolean
trusted_entry(const char *path)
{
  GStatBuf st;
  return g_lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
         (st.st_mode & 022) == 0;
}

char *
ts__artifact_cache_lookup(const TsArtifactCache *cache, const char *key, const char *suffix)
{
  char *path = ts__artifact_cache_path(cache, key, suffix);
  if (trusted_entry(path))
    return path;
  if (g_file_test(path, G_FILE_TEST_EXISTS))
    g_message("ignoring artifact %s: not a private regular file of this user; rebuilding it",
              path);
  g_free(path);
  return NULL;
}

static gboolean
write_all(int fd, const char *data, gsize len)
{
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return FALSE;
    data += n;
    len -= (gsize)n;
  }
  return TRUE;
}

/* Entries appear only by rename, so the bytes go to a unique temp file inside the cache first
 * (rename(2) cannot cross file systems). */
static gboolean
write_then_rename(const void *data, gsize len, const char *final_path, const char *key,
                  const char *dir, GError **error)
{
  g_autofree char *tmpl_base = g_strdup_printf(".%s.XXXXXX", key);
  g_autofree char *tmp = g_build_filename(dir, tmpl_base, NULL);
  int fd = g_mkstemp_full(tmp, O_WRONLY, 0644);
  if (fd < 0) {
    int saved = errno;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "cannot create a temporary file in the artifact cache '%s': %s", dir,
                g_strerror(saved));
    return FALSE;
  }
  gboolean ok = write_all(fd, data, len);
  int saved = errno;
  if (close(fd) != 0 && ok) {
    ok = FALSE;
    saved = errno;
  }
  if (!ok || rename(tmp, final_path) != 0) {
    if (ok)
      saved = errno;
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "cannot store the artifact '%s': %s", final_path, g_strerror(saved));
    g_unlink(tmp);
    return FALSE;
  }
  return TRUE;
}

/* The build directory may sit on another file system than the cache (/tmp is often tmpfs). */
static gboolean
copy_then_rename(const char *built_path, const char *final_path, const char *key,
                 const char *dir, GError **error)
{
  g_autofree char *contents = NULL;
  gsize len = 0;
  if (!g_file_get_contents(built_path, &contents, &len, error))
    return FALSE;
  return write_then_rename(contents, len, final_path, key, dir, error);
}

char *
ts__artifact_cache_commit(TsArtifactCache *cache, const char *key, const char *suffix,
                          const char *built_path, GError **error)
{
  if (!ts__artifact_cache_ensure(cache, error)) {
    g_unlink(built_path);
    return NULL;
  }
  g_autofree char *final_path = ts__artifact_cache_path(cache, key, suffix);
  if (rename(built_path, final_path) == 0)
    return g_steal_pointer(&final_path);
  int saved = errno;
  if (saved != EXDEV) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "cannot move the artifact into the cache as '%s': %s", final_path,
                g_strerror(saved));
    g_unlink(built_path);
    return NULL;
  }
  gboolean ok = copy_then_rename(built_path, final_path, key, cache->dir, error);
  g_unlink(built_path);
  return ok ? g_steal_pointer(&final_path) : NULL;
}

char *
ts__artifact_cache_store(TsArtifactCache *cache, const char *key, const char *suffix,
                         const void *data, gsize len, GError **error)
{
  if (!ts__artifact_cache_ensure(cache, error))
    return NULL;
  g_autofree char *final_path = ts__artifact_cache_path(cache, key, suffix);
  if (!write_then_rename(data, len, final_path, key, cache->dir, error))
    return NULL;
  return g_steal_pointer(&final_path);
}

void
ts__artifact_cache_evict(TsArtifactCache *cache, const char *key, const char *suffix)
{
  g_autofree char *path = ts__artifact_cache_path(cache, key, suffix);
  g_unlink(path);
}

void
ts__checksum_field(GChecksum *checksum, const void *data, gssize len)
{
  if (len < 0)
    len = data != NULL ? (gssize)strlen(data) : 0;
  guint64 n = (guint64)len;
  g_checksum_update(checksum, (const guchar *)&n, sizeof n);
  if (len > 0)
    g_checksum_update(checksum, data, (gsize)len);
}
