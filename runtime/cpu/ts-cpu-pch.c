/* ts-cpu-pch.c — what the CPU backend compiles once and shares (see ts-cpu-pch.h). */
#include "ts-cpu-pch.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

#include "ts-backend-private.h"
#include "ts-cpu-asm.h"

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
  ts__checksum_field(c, spec->host_name ? spec->host_name : "", -1);
  ts__checksum_field(c, spec->host_arch ? spec->host_arch : "", -1);
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
  const char *ext; /* the source's suffix: ".c" unless set */
  int vec;
} BuildJob;

static gboolean
build_pch(gconstpointer data, char **why)
{
  const BuildJob *job = data;
  const TsCpuPchSpec *spec = job->spec;
  const char *dir = job->dir, *header = job->header;
  int vec = job->vec;
  g_autofree char *wrapper = g_strdup_printf(
      "/* Tessera's CPU backend: the primitive library at TS_VEC %d, precompiled beside this\n"
      " * file and passed with -include (see runtime/cpu/ts-cpu-pch.c). */\n"
      "#define TS_VEC %d\n#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
      "#include \"" PRIMS_NAME "\"\n",
      vec, vec);
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(header, wrapper, -1, &local)) {
    *why = g_strdup(local->message);
    return FALSE;
  }
  g_autofree char *gch = g_strconcat(header, ".gch", NULL);
  g_autofree char *tmp = g_strdup_printf("%s.%d.tmp", gch, (int)getpid());
  const char *tail[] = {"-x", "c-header", "-o", tmp, header};
  return compile_to(spec, dir, tail, G_N_ELEMENTS(tail), tmp, gch, "precompile the header",
                    why);
}

static gboolean
write_prims(gconstpointer data, char **why)
{
  const BuildJob *job = data;
  gsize len = 0;
  const char *prims = g_bytes_get_data(job->spec->prims, &len);
  g_autoptr(GError) local = NULL;
  if (g_mkdir_with_parents(job->dir, 0700) != 0) {
    *why = g_strdup_printf("cannot create '%s': %s", job->dir, g_strerror(errno));
    return FALSE;
  }
  if (!g_file_set_contents(job->obj, prims, (gssize)len, &local)) {
    *why = g_strdup(local->message);
    return FALSE;
  }
  return TRUE;
}

/* The directory of the objects built for spec's compiler, flags and primitives, the
 * primitives' text in it (what they include), or NULL (*why). */
static char *
prims_dir(const TsCpuPchSpec *spec, int vec, char **why)
{
  const char *reason = NULL;
  if (!spec->is_gcc)
    reason = "the compiler is not GCC";
  else if (spec->cache_dir == NULL)
    reason = "no artifact cache";
  else if (vec != 4 && vec != 8 && vec != 16)
    reason = "the source does not include the primitives the usual way";
  if (reason != NULL) {
    if (why)
      *why = g_strdup(reason);
    return NULL;
  }
  g_autofree char *hash = spec_hash(spec);
  g_autofree char *sub = g_strconcat("pch-", hash, NULL);
  char *dir = g_build_filename(spec->cache_dir, sub, NULL);
  g_autofree char *prims_path = g_build_filename(dir, PRIMS_NAME, NULL);
  BuildJob job = {.spec = spec, .dir = dir, .obj = prims_path};
  if (!build_once(prims_path, ours(prims_path), write_prims, &job, why)) {
    g_free(dir);
    return NULL;
  }
  return dir;
}

/* Whether the environment variable `var` is "0" (*why, may be NULL, then says so). */
static gboolean
switched_off(const char *var, char **why)
{
  const char *value = g_getenv(var);
  if (value == NULL || strcmp(value, "0") != 0)
    return FALSE;
  if (why)
    *why = g_strconcat(var, "=0", NULL);
  return TRUE;
}

char *
ts__cpu_pch_header(const TsCpuPchSpec *spec, int vec, char **why)
{
  g_autofree char *dir = switched_off("TS_CPU_PCH", why) ? NULL : prims_dir(spec, vec, why);
  if (dir == NULL)
    return NULL;
  g_autofree char *name = g_strdup_printf("ts_cpu_prims_v%d.h", vec);
  char *header = g_build_filename(dir, name, NULL);
  g_autofree char *gch = g_strconcat(header, ".gch", NULL);
  BuildJob job = {.spec = spec, .dir = dir, .header = header, .vec = vec};
  if (!build_once(gch, ours(gch) && ours(header), build_pch, &job, why)) {
    g_free(header);
    return NULL;
  }
  return header;
}

/* The lines of a generated source that instantiate a micro-kernel another unit may define,
 * and how a driver declares one under a slot name. AMX's stay: its tile state is per unit. */
typedef struct {
  const char *define, *declare_slot;
  gboolean light; /* compiles without the intrinsics headers (TS_CPU_LIGHT) */
  int as;         /* may be assembled instead (ts-cpu-asm.h): 1 f32 (TS_DEFINE_UKR_F32),
                   * 2 bf16 dot product; 0 not */
} UkrMacro;

static const UkrMacro *
ukr_macro(const char *line)
{
  static const UkrMacro macros[] = {
    {"TS_DEFINE_UKR_F32(", "TS_DECLARE_UKR_F32_SLOT", TRUE, 1},
    {"TS_DEFINE_UKR_F32_RA(", "TS_DECLARE_UKR_F32_SLOT", TRUE, 0},
    {"TS_DEFINE_UKR_BF16DOT(", "TS_DECLARE_UKR_BF16DOT_SLOT", FALSE, 2},
  };
  for (gsize i = 0; i < G_N_ELEMENTS(macros); i++)
    if (g_str_has_prefix(line, macros[i].define))
      return &macros[i];
  return NULL;
}

/* The assembly of a micro-kernel's line, `args` what follows the macro's name (f32: `NAME, MR,
 * NR, V, UNROLL);`, bf16 dot product: `NAME, MR, NR, UNROLL);`), or NULL where the C macro
 * must compile it: assembly off, not for this host, or a tile it does not write. */
static char *
ukr_asm(const UkrMacro *macro, const char *args)
{
  if (macro->as == 0)
    return NULL;
  const guint n = macro->as == 1 ? 4 : 3;
  g_auto(GStrv) f = g_strsplit_set(args, ",)", -1);
  if (g_strv_length(f) != n + 2)
    return NULL;
  int v[4];
  for (guint i = 0; i < n; i++) {
    char *end = NULL;
    gint64 x = g_ascii_strtoll(f[i + 1], &end, 10);
    if (end == f[i + 1] || *g_strstrip(end) != '\0' || x <= 0 || x > 1024)
      return NULL;
    v[i] = (int)x;
  }
  const char *name = g_strstrip(f[0]);
  return macro->as == 1 ? ts__cpu_asm_ukr_f32(name, v[0], v[1], v[2], v[3])
                        : ts__cpu_asm_ukr_bf16dot(name, v[0], v[1], v[2]);
}

/* An object shared by every kernel that uses it: job->line, its whole text, compiled with the
 * precompiled header job->header, or without one (NULL). */
static gboolean
build_object(gconstpointer data, char **why)
{
  const BuildJob *job = data;
  g_autofree char *src =
    g_strdup_printf("%s.%d%s", job->obj, (int)getpid(), job->ext ? job->ext : ".c");
  g_autofree char *tmp = g_strdup_printf("%s.%d.tmp", job->obj, (int)getpid());
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(src, job->line, -1, &local)) {
    *why = g_strdup(local->message);
    return FALSE;
  }
  g_autofree char *include = g_strconcat("-I", job->dir, NULL);
  const char *tail[] = {"-Winvalid-pch", "-include", job->header, "-c", include, "-o", tmp, src};
  const gsize skip = job->header == NULL ? 3 : 0;
  gboolean ok = compile_to(job->spec, job->dir, tail + skip, G_N_ELEMENTS(tail) - skip, tmp,
                           job->obj, "build an object shared by kernels", why);
  g_unlink(src);
  return ok;
}

/* The object `prefix`-<hash of text>.o in dir, text (C, or assembly if prefix is "asm")
 * compiled there once (build_object) for every kernel that uses it; NULL (*why) if it cannot
 * be built. */
static char *
shared_object(const TsCpuPchSpec *spec, const char *dir, const char *header, const char *prefix,
              const char *text, char **why)
{
  g_autofree char *hash = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
  g_autofree char *name = g_strdup_printf("%s-%.16s.o", prefix, hash);
  char *obj = g_build_filename(dir, name, NULL);
  BuildJob job = {.spec = spec, .dir = dir, .header = header, .line = text, .obj = obj,
                  .ext = strcmp(prefix, "asm") == 0 ? ".s" : ".c"};
  if (!build_once(obj, ours(obj), build_object, &job, why)) {
    g_free(obj);
    return NULL;
  }
  return obj;
}

/* What an object of code from the primitives compiles: `body` after them at TS_VEC vec, in
 * the light form (TS_CPU_LIGHT: no intrinsics headers) if asked, the shared linkage for
 * micro-kernels. */
static char *
prims_unit(int vec, gboolean light, const char *body)
{
  return g_strdup_printf(
      "/* Tessera's CPU backend: code shared by every kernel that uses it (see\n"
      " * runtime/cpu/ts-cpu-pch.c). */\n"
      "%s#define TS_VEC %d\n#include <stdint.h>\n#include <string.h>\n#include <math.h>\n"
      "#include \"" PRIMS_NAME "\"\n#undef TS_UKR_LINKAGE\n#define TS_UKR_LINKAGE TS_UKR_SHARED_\n"
      "%s\n",
      light ? "#define TS_CPU_LIGHT\n" : "", vec, body);
}

/* The entries of ts_cpu_prims.h's TS_OUTLINE_LIST_, `X(NAME, (params), (args))` each: NAME ->
 * the entry with X as TS_OUTLINE_DEFINE_, what defines NAME's out-of-line version. In the
 * list's order. */
static GPtrArray *
outline_entries(const TsCpuPchSpec *spec, GHashTable *defs)
{
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  gsize size = 0;
  const char *text = g_bytes_get_data(spec->prims, &size);
  g_autofree char *copy = g_strndup(text, size);
  const char *list = strstr(copy, "#define TS_OUTLINE_LIST_(X)");
  if (list == NULL)
    return names;
  g_autoptr(GString) body = g_string_new(NULL);
  const char *line = strchr(list, '\n');
  while (line != NULL && line > list && line[-1] == '\\') {
    const char *next = strchr(line + 1, '\n');
    gsize len = next ? (gsize)(next - line - 1) : strlen(line + 1);
    g_string_append_len(body, line + 1, (gssize)len);
    if (body->len > 0 && body->str[body->len - 1] == '\\')
      g_string_truncate(body, body->len - 1);
    line = next;
  }
  g_auto(GStrv) parts = g_strsplit(body->str, " X(", -1);
  for (guint i = 0; parts[i] != NULL; i++) {
    const char *entry = g_strstrip(parts[i]);
    if (g_str_has_prefix(entry, "X("))
      entry += 2;
    gsize len = strspn(entry, "abcdefghijklmnopqrstuvwxyz0123456789_");
    if (len == 0 || entry[len] != ',')
      continue;
    char *name = g_strndup(entry, len);
    g_ptr_array_add(names, name);
    g_hash_table_insert(defs, g_strdup(name), g_strconcat("TS_OUTLINE_DEFINE_(", entry, NULL));
  }
  return names;
}

static gboolean
includes_prims(const char *line)
{
  return strcmp(line, "#include \"" PRIMS_NAME "\"") == 0;
}

/* The packing and conversion functions the source calls, renamed to their out-of-line
 * versions by #defines after its #include of the primitives, and compiled once into an object
 * of those (an outline- object per set and TS_VEC); nothing when it calls none, or the object
 * could not be built (the calls stay inline). Appends the names renamed, and their _ol_
 * versions, to `renamed`. */
static void
outline_split(const TsCpuPchSpec *spec, const char *dir, int vec, GPtrArray *lines,
              GPtrArray *objects, GHashTable *renamed)
{
  if (switched_off("TS_CPU_OUTLINE", NULL))
    return;
  guint at = 0;
  while (at < lines->len && !includes_prims(g_ptr_array_index(lines, at)))
    at++;
  if (at == lines->len)
    return;
  g_autoptr(GHashTable) defs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) names = outline_entries(spec, defs);
  g_autoptr(GPtrArray) defines = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) body = g_string_new(NULL);
  for (guint n = 0; n < names->len; n++) {
    const char *name = g_ptr_array_index(names, n);
    g_autofree char *call = g_strconcat(name, "(", NULL);
    for (guint i = at + 1; i < lines->len; i++)
      if (strstr(g_ptr_array_index(lines, i), call) != NULL) {
        g_ptr_array_add(defines, g_strdup_printf("#define %s %s_ol_", name, name));
        g_string_append_printf(body, "%s\n", (char *)g_hash_table_lookup(defs, name));
        break;
      }
  }
  if (defines->len == 0)
    return;
  /* The intrinsics parsed for this one object: a precompiled header costs more to build. */
  g_autofree char *text = prims_unit(vec, FALSE, body->str);
  char *obj = shared_object(spec, dir, NULL, "outline", text, NULL);
  if (obj == NULL)
    return;
  g_ptr_array_add(objects, obj);
  for (guint d = 0; d < defines->len; d++) {
    const char *define = g_ptr_array_index(defines, d);
    g_ptr_array_insert(lines, (gint)(at + 1 + d), g_strdup(define));
    g_auto(GStrv) words = g_strsplit(define, " ", -1);
    g_hash_table_add(renamed, g_strdup(words[1]));
    g_hash_table_add(renamed, g_strdup(words[2]));
  }
}

/* Every whole-word `name` in lines[from...] replaced by `to`. */
static void
rename_word(GPtrArray *lines, guint from, const char *name, const char *to)
{
  g_autofree char *quoted = g_regex_escape_string(name, -1);
  g_autofree char *pattern = g_strconcat("\\b", quoted, "\\b", NULL);
  g_autoptr(GRegex) re = g_regex_new(pattern, G_REGEX_OPTIMIZE, 0, NULL);
  for (guint i = from; i < lines->len; i++) {
    char *line = g_ptr_array_index(lines, i);
    if (strstr(line, name) == NULL)
      continue;
    g_ptr_array_index(lines, i) = g_regex_replace_literal(re, line, -1, 0, to, 0, NULL);
    g_free(line);
  }
}

/* Whether the driver needs nothing of the primitives but what their light form declares
 * (TS_CPU_LIGHT: scratch, the micro-kernels' slots, the out-of-line functions in `renamed`):
 * then it compiles without the intrinsics headers, in a third of the time. */
static gboolean
driver_is_light(GPtrArray *lines, GHashTable *renamed)
{
  static const char *const light[] = {"ts_cpu_alloc", "ts_cpu_free", "TS_DECLARE_UKR_F32_SLOT",
                                      "TS_DECLARE_UKR_BF16DOT_SLOT", TS_CPU_DRIVER_ENTRY};
  g_autoptr(GRegex) re = g_regex_new("\\b(ts|TS)_\\w*", G_REGEX_OPTIMIZE, 0, NULL);
  gboolean after = FALSE; /* the #include of the primitives and the lines before it are known */
  for (guint i = 0; i < lines->len; i++) {
    const char *line = g_ptr_array_index(lines, i);
    if (!after) {
      after = includes_prims(line);
      continue;
    }
    g_autoptr(GMatchInfo) m = NULL;
    for (g_regex_match(re, line, 0, &m); g_match_info_matches(m); g_match_info_next(m, NULL)) {
      g_autofree char *word = g_match_info_fetch(m, 0);
      gboolean ok = g_str_has_prefix(word, "ts_ukr_slot") || g_hash_table_contains(renamed, word);
      for (gsize k = 0; !ok && k < G_N_ELEMENTS(light); k++)
        ok = strcmp(word, light[k]) == 0;
      if (!ok)
        return FALSE;
    }
  }
  return after;
}

gboolean
ts__cpu_split(const TsCpuPchSpec *spec, int vec, const char *source, const char *entry,
              GPtrArray *objects, GPtrArray *link_args, char **why)
{
  g_autofree char *dir =
    switched_off("TS_CPU_UKR_CACHE", why) ? NULL : prims_dir(spec, vec, why);
  if (dir == NULL)
    return FALSE;
  g_auto(GStrv) split = g_strsplit(source, "\n", -1);
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
  /* The leading comment (what the kernel is, its schedule) changes no code: without it the
   * kernels of one driver share its text. */
  guint first = 0;
  if (split[0] != NULL && g_str_has_prefix(split[0], "/*")) {
    while (split[first] != NULL && strstr(split[first], "*/") == NULL)
      first++;
    first = split[first] != NULL ? first + 1 : 0;
  }
  for (guint i = first; split[i] != NULL; i++)
    g_ptr_array_add(lines, g_strdup(split[i]));
  guint n_before = objects->len, n_args = link_args->len, slots = 0;
  gboolean ok = TRUE;
  for (guint i = 0; i < lines->len; i++) {
    const char *line = g_ptr_array_index(lines, i);
    const UkrMacro *macro = ukr_macro(line);
    if (macro == NULL)
      continue;
    const char *name = line + strlen(macro->define);
    g_autofree char *ukr = g_strndup(name, strcspn(name, ", )"));
    /* Assembly where it applies; where it will not assemble, the C macro after all, its
     * intrinsics (the bf16 dot product's) precompiled where they can be. */
    g_autofree char *as = ukr_asm(macro, name);
    char *obj = as ? shared_object(spec, dir, NULL, "asm", as, NULL) : NULL;
    if (obj == NULL) {
      g_autofree char *header = macro->light ? NULL : ts__cpu_pch_header(spec, vec, NULL);
      g_autofree char *text = prims_unit(vec, macro->light, line);
      obj = shared_object(spec, dir, header, "ukr", text, why);
    }
    if (obj == NULL) {
      ok = FALSE;
      break;
    }
    g_ptr_array_add(objects, obj);
    /* Called under a slot name, mapped to this micro-kernel when the kernel is linked. */
    g_autofree char *slot = g_strdup_printf("ts_ukr_slot%u_", slots++);
    g_ptr_array_add(link_args, g_strdup_printf("-Wl,--defsym=%s=%s", slot, ukr));
    g_free(g_ptr_array_index(lines, i));
    g_ptr_array_index(lines, i) = g_strdup_printf("%s(%s);", macro->declare_slot, slot);
    rename_word(lines, i + 1, ukr, slot);
  }
  /* An outline that cannot be built leaves the calls inline: the micro-kernels still help. */
  g_autoptr(GHashTable) renamed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (ok)
    outline_split(spec, dir, vec, lines, objects, renamed);
  if (ok && objects->len == n_before) {
    if (why)
      *why = g_strdup("the source instantiates no micro-kernel and calls no packing");
    ok = FALSE;
  }
  if (ok) {
    rename_word(lines, 0, entry, TS_CPU_DRIVER_ENTRY);
    g_ptr_array_add(link_args, g_strdup_printf("-Wl,--defsym=%s=" TS_CPU_DRIVER_ENTRY, entry));
    const gboolean light = driver_is_light(lines, renamed);
    if (light)
      g_ptr_array_insert(lines, 0, g_strdup("#define TS_CPU_LIGHT"));
    g_ptr_array_add(lines, NULL);
    g_autofree char *driver = g_strjoinv("\n", (char **)lines->pdata);
    g_autofree char *header = light ? NULL : ts__cpu_pch_header(spec, vec, NULL);
    char *obj = shared_object(spec, dir, header, "drv", driver, why);
    ok = obj != NULL;
    if (ok)
      g_ptr_array_add(objects, obj);
  }
  if (!ok) {
    g_ptr_array_remove_range(objects, n_before, objects->len - n_before);
    g_ptr_array_remove_range(link_args, n_args, link_args->len - n_args);
  }
  return ok;
}
