/* ts-cpu-pch.c — precompiled primitive headers for the CPU backend (see ts-cpu-pch.h). */
#include "ts-cpu-pch.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "ts-backend-private.h"

#define PRIMS_NAME "ts_cpu_prims.h"

int
ts__cpu_pch_source_vec(const char *source)
{
  int vec = 0;
  gboolean in_comment = FALSE;
  const char *line = source;
  while (line != NULL && *line != '\0') {
    const char *end = strchr(line, '\n');
    g_autofree char *text = end ? g_strndup(line, (gsize)(end - line)) : g_strdup(line);
    line = end ? end + 1 : NULL;
    const char *t = g_strstrip(text);
    if (in_comment) {
      in_comment = strstr(t, "*/") == NULL;
      continue;
    }
    if (*t == '\0' || g_str_has_prefix(t, "//"))
      continue;
    if (g_str_has_prefix(t, "/*")) {
      in_comment = strstr(t + 2, "*/") == NULL;
      continue;
    }
    if (g_str_has_prefix(t, "#include <"))
      continue;
    if (g_str_has_prefix(t, "#define TS_VEC ")) {
      gint64 v = g_ascii_strtoll(t + strlen("#define TS_VEC "), NULL, 10);
      vec = v == 4 || v == 8 || v == 16 ? (int)v : -1;
      continue;
    }
    if (strcmp(t, "#include \"" PRIMS_NAME "\"") == 0)
      return vec > 0 ? vec : 0;
    return 0; /* anything else may change what the header means */
  }
  return 0;
}

static char *
spec_hash(const TsCpuPchSpec *spec)
{
  g_autoptr(GChecksum) c = g_checksum_new(G_CHECKSUM_SHA256);
  for (const char *const *a = spec->cc_argv; *a != NULL; a++)
    ts__checksum_field(c, *a, -1);
  ts__checksum_field(c, spec->version_line ? spec->version_line : "", -1);
  for (gsize i = 0; i < spec->n_flags; i++)
    ts__checksum_field(c, spec->flags[i], -1);
  gsize len = 0;
  const void *data = g_bytes_get_data(spec->prims, &len);
  ts__checksum_field(c, data, (gssize)len);
  return g_strndup(g_checksum_get_string(c), 16);
}

/* A file we made: plain, ours, written by us alone (the artifact cache's rule). */
static gboolean
ours(const char *path)
{
  GStatBuf st;
  return g_lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
         (st.st_mode & 022) == 0;
}

/* The compiler with spec's flags (less -shared) and `tail`, run in dir, its output `tmp`
 * (named in tail) renamed to `dest`: workers of one tune may race to build the same file.
 * *why: `what` could not be built, and the compiler's words. */
static gboolean
compile_to(const TsCpuPchSpec *spec, const char *dir, const char *const *tail, gsize n_tail,
           const char *tmp, const char *dest, const char *what, char **why)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  for (const char *const *a = spec->cc_argv; *a != NULL; a++)
    g_ptr_array_add(argv, (gpointer)*a);
  for (gsize i = 0; i < spec->n_flags; i++)
    if (strcmp(spec->flags[i], "-shared") != 0)
      g_ptr_array_add(argv, (gpointer)spec->flags[i]);
  for (gsize i = 0; i < n_tail; i++)
    g_ptr_array_add(argv, (gpointer)tail[i]);
  g_ptr_array_add(argv, NULL);
  static const char *const env[] = {"LC_ALL=C", NULL};
  g_autofree char *output = NULL;
  int status = -1;
  g_autoptr(GError) local = NULL;
  if (!ts__run_capture((const char *const *)argv->pdata, dir, env, &output, &status, &local) ||
      status != 0) {
    *why = g_strdup_printf("the compiler could not %s: %s", what,
                           local ? local->message : output);
    g_unlink(tmp);
    return FALSE;
  }
  if (g_rename(tmp, dest) != 0) {
    *why = g_strdup_printf("cannot rename '%s': %s", tmp, g_strerror(errno));
    g_unlink(tmp);
    return FALSE;
  }
  return TRUE;
}

/* Whether the file `key` names can be used: `ready` (built before), or built now by
 * build(data). One that failed to build is not tried again by this process, since each try
 * costs a compile of its own; *why then says why. */
static gboolean
build_once(const char *key, gboolean ready, gboolean (*build)(gconstpointer data, char **why),
           gconstpointer data, char **why)
{
  static GMutex lock;
  static GHashTable *failed;
  g_autofree char *reason = NULL;
  g_mutex_lock(&lock);
  if (failed == NULL)
    failed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  const char *before = g_hash_table_lookup(failed, key);
  gboolean ok = before == NULL && (ready || build(data, &reason));
  if (!ok && before == NULL)
    g_hash_table_insert(failed, g_strdup(key), g_strdup(reason));
  else if (!ok)
    reason = g_strdup(before);
  g_mutex_unlock(&lock);
  if (!ok && why != NULL)
    *why = g_steal_pointer(&reason);
  return ok;
}

typedef struct {
  const TsCpuPchSpec *spec;
  const char *dir, *header, *line, *obj;
  int vec;
} BuildJob;

static gboolean
build_pch(gconstpointer data, char **why)
{
  const BuildJob *job = data;
  const TsCpuPchSpec *spec = job->spec;
  const char *dir = job->dir, *header = job->header;
  int vec = job->vec;
  if (g_mkdir_with_parents(dir, 0700) != 0) {
    *why = g_strdup_printf("cannot create '%s': %s", dir, g_strerror(errno));
    return FALSE;
  }
  gsize len = 0;
  const char *prims = g_bytes_get_data(spec->prims, &len);
  g_autofree char *prims_path = g_build_filename(dir, PRIMS_NAME, NULL);
  g_autofree char *wrapper = g_strdup_printf(
      "/* Tessera's CPU backend: the primitive library at TS_VEC %d, precompiled beside this\n"
      " * file and passed with -include (see runtime/cpu/ts-cpu-pch.c). */\n"
      "#define TS_VEC %d\n#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
      "#include \"" PRIMS_NAME "\"\n",
      vec, vec);
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(prims_path, prims, (gssize)len, &local) ||
      !g_file_set_contents(header, wrapper, -1, &local)) {
    *why = g_strdup(local->message);
    return FALSE;
  }
  g_autofree char *gch = g_strconcat(header, ".gch", NULL);
  g_autofree char *tmp = g_strdup_printf("%s.%d.tmp", gch, (int)getpid());
  const char *tail[] = {"-x", "c-header", "-o", tmp, header};
  return compile_to(spec, dir, tail, G_N_ELEMENTS(tail), tmp, gch, "precompile the header",
                    why);
}

char *
ts__cpu_pch_header(const TsCpuPchSpec *spec, int vec, char **why)
{
  g_autofree char *reason = NULL;
  const char *off = g_getenv("TS_CPU_PCH");
  if (off != NULL && strcmp(off, "0") == 0)
    reason = g_strdup("TS_CPU_PCH=0");
  else if (!spec->is_gcc)
    reason = g_strdup("the compiler is not GCC");
  else if (spec->cache_dir == NULL)
    reason = g_strdup("no artifact cache");
  else if (vec != 4 && vec != 8 && vec != 16)
    reason = g_strdup("the source does not include the primitives the usual way");
  if (reason != NULL) {
    if (why)
      *why = g_steal_pointer(&reason);
    return NULL;
  }
  g_autofree char *hash = spec_hash(spec);
  g_autofree char *sub = g_strconcat("pch-", hash, NULL);
  g_autofree char *dir = g_build_filename(spec->cache_dir, sub, NULL);
  g_autofree char *name = g_strdup_printf("ts_cpu_prims_v%d.h", vec);
  char *header = g_build_filename(dir, name, NULL);
  g_autofree char *gch = g_strconcat(header, ".gch", NULL);
  g_autofree char *prims_path = g_build_filename(dir, PRIMS_NAME, NULL);

  BuildJob job = {.spec = spec, .dir = dir, .header = header, .vec = vec};
  if (!build_once(gch, ours(gch) && ours(header) && ours(prims_path), build_pch, &job, why)) {
    g_free(header);
    return NULL;
  }
  return header;
}

/* The lines of a generated source that instantiate a micro-kernel another unit may define.
 * AMX's stay: its tile state is per unit. */
static const char *
ukr_macro(const char *line)
{
  static const char *const macros[] = {"TS_DEFINE_UKR_F32(", "TS_DEFINE_UKR_F32_RA(",
                                       "TS_DEFINE_UKR_BF16DOT("};
  for (gsize i = 0; i < G_N_ELEMENTS(macros); i++)
    if (g_str_has_prefix(line, macros[i]))
      return macros[i];
  return NULL;
}

/* An object shared by every kernel that uses it: job->line, a micro-kernel's TS_DEFINE_UKR_
 * line or the out-of-line prims' definitions, compiled with the precompiled header. */
static gboolean
build_ukr(gconstpointer data, char **why)
{
  const BuildJob *job = data;
  g_autofree char *text = g_strdup_printf(
      "/* Tessera's CPU backend: code shared by every kernel that uses it (see\n"
      " * runtime/cpu/ts-cpu-pch.c). */\n"
      "#define TS_VEC %d\n#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
      "#include \"" PRIMS_NAME "\"\n#undef TS_UKR_LINKAGE\n#define TS_UKR_LINKAGE TS_UKR_SHARED_\n"
      "%s\n",
      job->vec, job->line);
  g_autofree char *src = g_strdup_printf("%s.%d.c", job->obj, (int)getpid());
  g_autofree char *tmp = g_strdup_printf("%s.%d.tmp", job->obj, (int)getpid());
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(src, text, -1, &local)) {
    *why = g_strdup(local->message);
    return FALSE;
  }
  g_autofree char *include = g_strconcat("-I", job->dir, NULL);
  const char *tail[] = {"-c", "-Winvalid-pch", "-include", job->header, include, "-o", tmp, src};
  gboolean ok = compile_to(job->spec, job->dir, tail, G_N_ELEMENTS(tail), tmp, job->obj,
                           "build a shared object of the kernels", why);
  g_unlink(src);
  return ok;
}

/* The names in ts_cpu_prims.h's TS_OUTLINE_LIST_ (its `  X(NAME, ` lines). */
static GPtrArray *
outline_names(const TsCpuPchSpec *spec)
{
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  gsize size = 0;
  const char *text = g_bytes_get_data(spec->prims, &size);
  g_autofree char *copy = g_strndup(text, size);
  g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++) {
    if (!g_str_has_prefix(lines[i], "  X(ts_"))
      continue;
    const char *name = lines[i] + 4;
    gsize len = strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_");
    if (name[len] == ',')
      g_ptr_array_add(names, g_strndup(name, len));
  }
  return names;
}

/* The packing and conversion functions the source calls, renamed to their out-of-line
 * versions (the object outline-v<vec>.o) by #defines after its #include of the primitives;
 * nothing when it calls none, or the object could not be built (the calls stay inline). */
static void
outline_split(const TsCpuPchSpec *spec, const char *dir, const char *pch_header, int vec,
              GPtrArray *lines, GPtrArray *objects)
{
  const char *off = g_getenv("TS_CPU_OUTLINE");
  if (off != NULL && strcmp(off, "0") == 0)
    return;
  guint at = 0;
  while (at < lines->len && strcmp(g_ptr_array_index(lines, at), "#include \"" PRIMS_NAME "\"") != 0)
    at++;
  if (at == lines->len)
    return;
  g_autoptr(GPtrArray) names = outline_names(spec);
  g_autoptr(GPtrArray) defines = g_ptr_array_new_with_free_func(g_free);
  for (guint n = 0; n < names->len; n++) {
    const char *name = g_ptr_array_index(names, n);
    g_autofree char *call = g_strconcat(name, "(", NULL);
    for (guint i = at + 1; i < lines->len; i++)
      if (strstr(g_ptr_array_index(lines, i), call) != NULL) {
        g_ptr_array_add(defines, g_strdup_printf("#define %s %s_ol_", name, name));
        break;
      }
  }
  if (defines->len == 0)
    return;
  g_autofree char *name = g_strdup_printf("outline-v%d.o", vec);
  char *obj = g_build_filename(dir, name, NULL);
  BuildJob job = {.spec = spec, .dir = dir, .header = pch_header,
                  .line = "TS_OUTLINE_LIST_(TS_OUTLINE_DEFINE_)", .obj = obj, .vec = vec};
  if (!build_once(obj, ours(obj), build_ukr, &job, NULL)) {
    g_free(obj);
    return;
  }
  g_ptr_array_add(objects, obj);
  for (guint d = 0; d < defines->len; d++)
    g_ptr_array_insert(lines, (gint)(at + 1 + d), g_strdup(g_ptr_array_index(defines, d)));
}

char *
ts__cpu_ukr_split(const TsCpuPchSpec *spec, const char *pch_header, int vec, const char *source,
                  GPtrArray *objects, char **why)
{
  const char *off = g_getenv("TS_CPU_UKR_CACHE");
  if (off != NULL && strcmp(off, "0") == 0) {
    if (why)
      *why = g_strdup("TS_CPU_UKR_CACHE=0");
    return NULL;
  }
  g_autofree char *dir = g_path_get_dirname(pch_header);
  g_auto(GStrv) split = g_strsplit(source, "\n", -1);
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; split[i] != NULL; i++)
    g_ptr_array_add(lines, g_steal_pointer(&split[i]));
  guint n_before = objects->len;
  for (guint i = 0; i < lines->len; i++) {
    const char *line = g_ptr_array_index(lines, i);
    const char *macro = ukr_macro(line);
    if (macro == NULL)
      continue;
    g_autofree char *key = g_strdup_printf("%d %s", vec, line);
    g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
    g_autofree char *name = g_strdup_printf("ukr-%.16s.o", hash);
    char *obj = g_build_filename(dir, name, NULL);
    g_ptr_array_add(objects, obj);
    BuildJob job = {
        .spec = spec, .dir = dir, .header = pch_header, .line = line, .obj = obj, .vec = vec};
    if (!build_once(obj, ours(obj), build_ukr, &job, why)) {
      g_ptr_array_remove_range(objects, n_before, objects->len - n_before);
      return NULL;
    }
    char *decl = g_strconcat("TS_DECLARE_UKR_", line + strlen("TS_DEFINE_UKR_"), NULL);
    g_free(g_ptr_array_index(lines, i));
    g_ptr_array_index(lines, i) = decl;
  }
  /* An outline that cannot be built leaves the calls inline: the micro-kernels still help. */
  outline_split(spec, dir, pch_header, vec, lines, objects);
  if (objects->len == n_before) {
    if (why)
      *why = g_strdup("the source instantiates no micro-kernel and calls no packing");
    return NULL;
  }
  g_ptr_array_add(lines, NULL);
  return g_strjoinv("\n", (char **)lines->pdata);
}
