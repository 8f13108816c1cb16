/* ts-artifact-cache.h — the content-addressed store of compiled artifacts (CPU .so, CUDA
 * .cubin) shared by every backend. An artifact lives at <dir>/<key><suffix>, key = hex SHA-256
 * of everything that decides its bytes. Entries are only ever created by rename(2) of a
 * finished file, so concurrent processes see either no entry or a whole one; two processes
 * building the same key both rename a correct file and the last one wins. Internal to runtime/.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _TsArtifactCache TsArtifactCache;

/* No I/O happens here: the directory is created on first use (ts__artifact_cache_ensure). */
TsArtifactCache *ts__artifact_cache_new(const char *dir);
void ts__artifact_cache_free(TsArtifactCache *cache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsArtifactCache, ts__artifact_cache_free)
/* Default root: $TESSERA_ARTIFACT_DIR, or $XDG_CACHE_HOME/tessera/artifacts. Newly allocated. */
char *ts__artifact_cache_default_dir(void);

const char *ts__artifact_cache_dir(const TsArtifactCache *cache);
/* Creates the directory and checks it can be written: TS_BACKEND_ERROR_IO naming the path. */
gboolean ts__artifact_cache_ensure(TsArtifactCache *cache, GError **error);

/* The path an entry has (or would have). Newly allocated. */
char *ts__artifact_cache_path(const TsArtifactCache *cache, const char *key, const char *suffix);
/* The entry's path when it exists, else NULL. */
char *ts__artifact_cache_lookup(const TsArtifactCache *cache, const char *key, const char *suffix);
/* Moves a finished file into the cache under key, atomically. built_path is consumed (renamed
 * or removed). Returns the entry's path, or NULL with TS_BACKEND_ERROR_IO. */
char *ts__artifact_cache_commit(TsArtifactCache *cache, const char *key, const char *suffix,
                                const char *built_path, GError **error);
/* Writes bytes into the cache under key, atomically (a temp file in the cache, then rename).
 * Returns the entry's path, or NULL with TS_BACKEND_ERROR_IO. */
char *ts__artifact_cache_store(TsArtifactCache *cache, const char *key, const char *suffix,
                               const void *data, gsize len, GError **error);
/* Drops an entry (a corrupt one): later lookups miss. Missing entries are fine. */
void ts__artifact_cache_evict(TsArtifactCache *cache, const char *key, const char *suffix);

/* Hex SHA-256 key helper: feeds one length-prefixed field, so ("ab","c") and ("a","bc") differ. */
void ts__checksum_field(GChecksum *checksum, const void *data, gssize len);

G_END_DECLS
