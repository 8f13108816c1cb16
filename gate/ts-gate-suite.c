/* ts-gate-suite.c — suite files: a [gate] group of settings and one group per workload.
 *
 * Everything is validated here, against the op library and the CPU backend's schedule knobs,
 * so a broken suite fails in a second with a message naming file, group and key, instead of
 * after minutes of measuring the workloads before it. */
#include "ts-gate.h"

#include <math.h>
#include <string.h>

#include "ts-ir.h"
#include "ts-op.h"
#include "ts-sched.h"
#include "ts-suggest.h"

/* clang-format off */
G_DEFINE_QUARK(ts-gate-error-quark, ts_gate_error)
/* clang-format on */

#define SETTINGS_GROUP "gate"

static const char *const settings_keys[] = {"name",  "backend", "threshold",
                                            "alpha", "time",    "description"};
static const char *const workload_keys[] = {"op",       "kernel",    "shape",      "dtype",
                                            "schedule", "threshold", "description"};
/* Keys of [gate] that make no sense in a workload: named as such instead of "unknown". */
static const char *const settings_only_keys[] = {"name", "backend", "alpha", "time"};

/* The backend whose knobs point schedules are checked against: the only one with kernels. */
#define CHECK_BACKEND "cpu"

/* "PATH: [group] key: message"; group and key may be NULL. */
static void suite_error(GError **error, const char *where, const char *group, const char *key,
                        const char *fmt, ...) G_GNUC_PRINTF(5, 6);

static void
suite_error(GError **error, const char *where, const char *group, const char *key, const char *fmt,
            ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (group && key)
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE, "%s: [%s] %s: %s", where, group, key,
                msg);
  else if (group)
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE, "%s: [%s]: %s", where, group, msg);
  else
    g_set_error(error, TS_GATE_ERROR, TS_GATE_ERROR_SUITE, "%s: %s", where, msg);
}

static const char *
strip_prefix(const char *text, const char *prefix)
{
  return g_str_has_prefix(text, prefix) ? text + strlen(prefix) : text;
}

/* ---- numbers ---- */

/* A plain decimal number: digits, one '.', an optional exponent. g_ascii_strtod alone would
 * also take "inf", "nan" and hex, none of which anyone means in a suite file. */
static gboolean
parse_number(const char *text, double *value, const char **rest)
{
  if (!g_ascii_isdigit(text[0]) && !(text[0] == '.' && g_ascii_isdigit(text[1])))
    return FALSE;
  if (text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
    return FALSE;
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  if (end == text || !isfinite(v))
    return FALSE;
  *value = v;
  *rest = end;
  return TRUE;
}

static const char *
skip_spaces(const char *s)
{
  while (g_ascii_isspace(*s))
    s++;
  return s;
}

gboolean
ts_gate_parse_fraction(const char *text, double *fraction)
{
  if (text == NULL)
    return FALSE;
  double v;
  const char *rest;
  if (!parse_number(skip_spaces(text), &v, &rest))
    return FALSE;
  rest = skip_spaces(rest);
  /* "5" alone is read as percent: nobody means a 500% threshold. */
  gboolean percent = *rest == '%' || v >= 1.0;
  if (*rest == '%')
    rest = skip_spaces(rest + 1);
  if (*rest != '\0')
    return FALSE;
  double f = percent ? v / 100.0 : v;
  if (!(f > 0.0 && f < 1.0))
    return FALSE;
  if (fraction)
    *fraction = f;
  return TRUE;
}

/* "1500", "1500ms", "1.5s" → milliseconds. */
static gboolean
parse_duration_ms(const char *text, double *ms)
{
  double v;
  const char *rest;
  if (!parse_number(skip_spaces(text), &v, &rest))
    return FALSE;
  rest = skip_spaces(rest);
  double scale = 0;
  if (*rest == '\0' || g_ascii_strcasecmp(rest, "ms") == 0)
    scale = 1;
  else if (g_ascii_strcasecmp(rest, "s") == 0)
    scale = 1000;
  if (scale == 0 || !(v > 0))
    return FALSE;
  *ms = v * scale;
  return TRUE;
}

/* ---- keys ---- */

static gboolean
in_list(const char *word, const char *const *list, guint n)
{
  for (guint i = 0; i < n; i++)
    if (strcmp(word, list[i]) == 0)
      return TRUE;
  return FALSE;
}

/* The value of an optional key, stripped: *value NULL when absent. Present but empty is an
 * error, since "threshold=" is more likely a half-finished edit than a request for the
 * default. */
static gboolean
get_value(GKeyFile *kf, const char *where, const char *group, const char *key, char **value,
          GError **error)
{
  *value = NULL;
  if (!g_key_file_has_key(kf, group, key, NULL))
    return TRUE;
  g_autoptr(GError) local = NULL;
  g_autofree char *v = g_key_file_get_string(kf, group, key, &local);
  if (v == NULL) {
    suite_error(error, where, group, key, "%s", local->message);
    return FALSE;
  }
  g_strstrip(v);
  if (*v == '\0') {
    static const char *const required[] = {"op", "shape"};
    suite_error(error, where, group, key, "empty value: give one%s",
                in_list(key, required, G_N_ELEMENTS(required))
                    ? ""
                    : ", or remove the line for the default");
    return FALSE;
  }
  *value = g_steal_pointer(&v);
  return TRUE;
}

static gboolean
get_fraction(GKeyFile *kf, const char *where, const char *group, const char *key, double *fraction,
             GError **error)
{
  g_autofree char *text = NULL;
  if (!get_value(kf, where, group, key, &text, error))
    return FALSE;
  if (text && !ts_gate_parse_fraction(text, fraction)) {
    suite_error(error, where, group, key,
                "'%s' is not a fraction between 0 and 1: write a percentage (5%%) or a fraction "
                "(0.05)",
                text);
    return FALSE;
  }
  return TRUE;
}

/* Unknown keys are typos far more often than intent: each is an error with the closest
 * allowed key. GKeyFile keeps a key given twice as two entries, so repeats show up here too. */
static gboolean
check_keys(GKeyFile *kf, const char *where, const char *group, const char *const *allowed,
           guint n_allowed, GError **error)
{
  gboolean settings = strcmp(group, SETTINGS_GROUP) == 0;
  g_auto(GStrv) keys = g_key_file_get_keys(kf, group, NULL, NULL);
  for (guint i = 0; keys && keys[i]; i++) {
    for (guint j = 0; j < i; j++)
      if (strcmp(keys[i], keys[j]) == 0) {
        suite_error(error, where, group, keys[i], "given twice; keep one");
        return FALSE;
      }
    if (in_list(keys[i], allowed, n_allowed))
      continue;
    g_autofree char *known = g_strjoinv(", ", (char **)allowed);
    if (!settings && in_list(keys[i], settings_only_keys, G_N_ELEMENTS(settings_only_keys))) {
      suite_error(error, where, group, keys[i],
                  "a suite setting, not a workload key: move it to [%s] (workload keys: %s)",
                  SETTINGS_GROUP, known);
      return FALSE;
    }
    const char *hint = ts__suggest(keys[i], allowed, n_allowed);
    if (hint)
      suite_error(error, where, group, keys[i], "unknown key; did you mean '%s'? (keys of %s: %s)",
                  hint, settings ? "[" SETTINGS_GROUP "]" : "a workload", known);
    else
      suite_error(error, where, group, keys[i], "unknown key (keys of %s: %s)",
                  settings ? "[" SETTINGS_GROUP "]" : "a workload", known);
    return FALSE;
  }
  return TRUE;
}

/* ---- [gate] ---- */

static gboolean
parse_backend(GKeyFile *kf, const char *where, TsGateSuite *suite, GError **error)
{
  g_autofree char *backend = NULL;
  if (!get_value(kf, where, SETTINGS_GROUP, "backend", &backend, error))
    return FALSE;
  if (backend == NULL)
    return TRUE;
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_ptr_array_add(names, (gpointer) "auto");
  for (const char *const *n = ts_backend_names(); *n; n++)
    g_ptr_array_add(names, (gpointer)*n);
  if (!in_list(backend, (const char *const *)names->pdata, names->len)) {
    const char *hint = ts__suggest(backend, (const char *const *)names->pdata, names->len);
    g_ptr_array_add(names, NULL);
    g_autofree char *known = g_strjoinv(", ", (char **)names->pdata);
    suite_error(error, where, SETTINGS_GROUP, "backend", "unknown backend '%s'%s%s%s (known: %s)",
                backend, hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "", known);
    return FALSE;
  }
  g_free(suite->backend);
  suite->backend = g_steal_pointer(&backend);
  return TRUE;
}

static gboolean
parse_settings(GKeyFile *kf, const char *where, TsGateSuite *suite, GError **error)
{
  if (!check_keys(kf, where, SETTINGS_GROUP, settings_keys, G_N_ELEMENTS(settings_keys), error))
    return FALSE;
  g_autofree char *name = NULL;
  g_autofree char *time = NULL;
  if (!get_value(kf, where, SETTINGS_GROUP, "name", &name, error) ||
      !parse_backend(kf, where, suite, error) ||
      !get_fraction(kf, where, SETTINGS_GROUP, "threshold", &suite->threshold, error) ||
      !get_fraction(kf, where, SETTINGS_GROUP, "alpha", &suite->alpha, error) ||
      !get_value(kf, where, SETTINGS_GROUP, "time", &time, error))
    return FALSE;
  if (name) {
    g_free(suite->name);
    suite->name = g_steal_pointer(&name);
  }
  if (time && !parse_duration_ms(time, &suite->time_ms)) {
    suite_error(error, where, SETTINGS_GROUP, "time",
                "'%s' is not a duration: write milliseconds (1500 or 1500ms) or seconds (1.5s), "
                "greater than 0",
                time);
    return FALSE;
  }
  return TRUE;
}

/* ---- workloads ---- */

static void
workload_free(TsGateWorkload *w)
{
  if (w == NULL)
    return;
  g_free(w->name);
  g_free(w->op);
  g_free(w->kernel);
  g_free(w->kernel_path);
  g_free(w->kernel_src);
  g_free(w->shape);
  g_free(w->dtype);
  g_free(w->schedule);
  g_free(w);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsGateWorkload, workload_free)

static gboolean
check_name(const char *where, const char *group, GError **error)
{
  if (g_ascii_strcasecmp(group, SETTINGS_GROUP) == 0) {
    suite_error(error, where, group, NULL,
                "group names are case-sensitive: the settings group is [%s], and a workload "
                "cannot be named like it",
                SETTINGS_GROUP);
    return FALSE;
  }
  for (const char *c = group; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '_' && *c != '.' && *c != '-') {
      suite_error(error, where, group, NULL,
                  "a workload name may only contain letters, digits, '_', '.' and '-' (it names "
                  "the workload in reports and the database)");
      return FALSE;
    }
  return TRUE;
}

static char *
known_ops(void)
{
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < ts_op_count(); i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", ts_op_name(ts_op_nth(i)));
  return g_string_free(s, FALSE);
}

static gboolean
parse_op(GKeyFile *kf, const char *where, const char *group, TsGateWorkload *w, GError **error)
{
  if (!get_value(kf, where, group, "op", &w->op, error))
    return FALSE;
  g_autofree char *known = known_ops();
  if (w->op == NULL) {
    suite_error(error, where, group, NULL, "missing op= (the op to measure; one of: %s)", known);
    return FALSE;
  }
  if (ts_op_lookup(w->op) != NULL)
    return TRUE;
  g_autofree const char **names = g_new(const char *, ts_op_count());
  for (guint i = 0; i < ts_op_count(); i++)
    names[i] = ts_op_name(ts_op_nth(i));
  const char *hint = ts__suggest(w->op, names, ts_op_count());
  suite_error(error, where, group, "op", "unknown op '%s'%s%s%s (known ops: %s)", w->op,
              hint ? "; did you mean '" : "", hint ? hint : "", hint ? "'?" : "", known);
  return FALSE;
}

/* kernel=FILE: a kernel file's kernel as the workload's op, registered here (op=, when given,
 * picks the file's kernel and sets its flags, as tessera-tune's OP does with --kernel). The
 * file is found from the suite's folder and read now: its text, not its name, is the op
 * ("kernel:NAME@HASH"), so a baseline of an edited kernel is another workload's. */
static gboolean
parse_kernel(GKeyFile *kf, const char *where, const char *group, const char *dir,
             TsGateWorkload *w, GError **error)
{
  g_autofree char *name = NULL;
  if (!get_value(kf, where, group, "op", &name, error))
    return FALSE;
  w->kernel_path = dir == NULL || g_path_is_absolute(w->kernel)
                     ? g_strdup(w->kernel)
                     : g_build_filename(dir, w->kernel, NULL);
  g_autoptr(GError) local = NULL;
  /* A device or a pipe would be read until it ends, which it may never do. */
  if (g_file_test(w->kernel_path, G_FILE_TEST_EXISTS) &&
      !g_file_test(w->kernel_path, G_FILE_TEST_IS_REGULAR)) {
    suite_error(error, where, group, "kernel", "'%s' is not a file", w->kernel_path);
    return FALSE;
  }
  if (!g_file_get_contents(w->kernel_path, &w->kernel_src, NULL, &local)) {
    suite_error(error, where, group, "kernel", "cannot read the kernel file: %s",
                local->message);
    return FALSE;
  }
  const TsOpDef *op = ts_op_register_kernel(w->kernel_src, w->kernel_path, name, &local);
  if (op == NULL) {
    /* The kernel's name or flags (op=), or the file itself (kernel=) */
    gboolean by_name =
      name != NULL && g_error_matches(local, TS_OP_ERROR, TS_OP_ERROR_UNKNOWN_OP);
    suite_error(error, where, group, by_name ? "op" : "kernel", "%s", local->message);
    return FALSE;
  }
  w->op = g_strdup(ts_op_name(op));
  return TRUE;
}

/* The op library words its messages for tessera-tune's command line; in a suite file the same
 * things are keys. */
static char *
as_suite_words(const char *message)
{
  GString *s = g_string_new(message);
  g_string_replace(s, "--shape", "shape", 0);
  g_string_replace(s, "--dtype", "dtype", 0);
  return g_string_free(s, FALSE);
}

/* "M=512,N=512,K=512" for gemm: a shape the user can copy and edit. */
static char *
shape_example(const char *op)
{
  g_autofree char *dims = ts_op_dims(ts_op_lookup(op));
  g_auto(GStrv) names = g_strsplit(dims, ",", -1);
  GString *example = g_string_new(NULL);
  for (guint i = 0; names[i]; i++)
    g_string_append_printf(example, "%s%s=512", i ? "," : "", names[i]);
  return g_string_free(example, FALSE);
}

/* Shape and dtype are parsed here first so a syntax error names its key; the op then checks
 * what it accepts (dims, dtypes, policies) in ts_op_instance_new. */
static TsOpInstance *
build_instance(const char *where, const char *group, const TsGateWorkload *w, GError **error)
{
  g_autoptr(GError) local = NULL;
  g_autoptr(TsShape) shape = ts_shape_parse(w->shape, &local);
  if (shape == NULL) {
    g_autofree char *example = shape_example(w->op);
    suite_error(error, where, group, "shape", "%s (write it as %s)",
                strip_prefix(local->message, "shape: "), example);
    return NULL;
  }
  TsDtypePolicy policy;
  if (!ts_dtype_policy_parse(w->dtype, &policy, &local)) {
    suite_error(error, where, group, "dtype", "%s", strip_prefix(local->message, "dtype policy: "));
    return NULL;
  }
  TsOpInstance *inst = ts_op_instance_new(w->op, w->shape, w->dtype, &local);
  if (inst == NULL) {
    const char *key = g_error_matches(local, TS_OP_ERROR, TS_OP_ERROR_DTYPE) ? "dtype" : "shape";
    g_autofree char *msg = as_suite_words(local->message);
    suite_error(error, where, group, key, "%s", msg);
  }
  return inst;
}

static gboolean
parse_shape(GKeyFile *kf, const char *where, const char *group, TsGateWorkload *w, GError **error)
{
  if (!get_value(kf, where, group, "shape", &w->shape, error))
    return FALSE;
  if (w->shape != NULL)
    return TRUE;
  g_autofree char *dims = ts_op_dims(ts_op_lookup(w->op));
  g_autofree char *example = shape_example(w->op);
  suite_error(error, where, group, NULL, "missing shape= (%s's dims are %s, e.g. shape=%s)", w->op,
              dims, example);
  return FALSE;
}

/* "best", "default", or one point, checked against the op's knobs and constraints. */
static gboolean
parse_schedule(GKeyFile *kf, const char *where, const char *group, const TsOpInstance *inst,
               TsGateWorkload *w, GError **error)
{
  g_autofree char *text = NULL;
  if (!get_value(kf, where, group, "schedule", &text, error))
    return FALSE;
  w->schedule_kind = TS_GATE_SCHEDULE_DEFAULT;
  if (text == NULL || strcmp(text, "default") == 0)
    return TRUE;
  if (strcmp(text, "best") == 0) {
    w->schedule_kind = TS_GATE_SCHEDULE_BEST;
    return TRUE;
  }
  static const char *const words[] = {"best", "default"};
  const char *hint = ts__suggest(text, words, G_N_ELEMENTS(words));
  if (hint && strchr(text, '(') == NULL) {
    suite_error(error, where, group, "schedule",
                "'%s' is not a schedule; did you mean '%s'? (write best, default, or one "
                "point; `tessera-tune ops` lists each op's knobs)",
                text, hint);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(text, &local);
  if (point == NULL) {
    /* Syntax errors end in a caret line under the column: nothing can follow them. */
    gboolean several = g_error_matches(local, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT);
    suite_error(error, where, group, "schedule", "%s%s", strip_prefix(local->message, "schedule: "),
                several ? " (a workload measures one point: best, default, or one value per knob)"
                        : "");
    return FALSE;
  }
  g_autoptr(TsSchedPoint) full = ts_op_instance_complete_point(inst, CHECK_BACKEND, point, &local);
  if (full == NULL) {
    suite_error(error, where, group, "schedule", "%s", local->message);
    return FALSE;
  }
  w->schedule_kind = TS_GATE_SCHEDULE_POINT;
  /* The user's knobs only, canonical: the op's defaults for the rest are filled in when the
   * workload runs, as for tessera-tune run. */
  w->schedule = ts_sched_point_to_string(point);
  return TRUE;
}

static TsGateWorkload *
parse_workload(GKeyFile *kf, const char *where, const char *group, const char *dir,
               GError **error)
{
  if (!check_name(where, group, error) ||
      !check_keys(kf, where, group, workload_keys, G_N_ELEMENTS(workload_keys), error))
    return NULL;
  g_autoptr(TsGateWorkload) w = g_new0(TsGateWorkload, 1);
  w->name = g_strdup(group);
  w->threshold = NAN;
  if (!get_value(kf, where, group, "kernel", &w->kernel, error))
    return NULL;
  if (!(w->kernel ? parse_kernel(kf, where, group, dir, w, error)
                  : parse_op(kf, where, group, w, error)) ||
      !parse_shape(kf, where, group, w, error) ||
      !get_value(kf, where, group, "dtype", &w->dtype, error) ||
      !get_fraction(kf, where, group, "threshold", &w->threshold, error))
    return NULL;
  if (w->dtype == NULL)
    w->dtype = g_strdup("f32");
  g_autoptr(TsOpInstance) inst = build_instance(where, group, w, error);
  if (inst == NULL || !parse_schedule(kf, where, group, inst, w, error))
    return NULL;
  return g_steal_pointer(&w);
}

/* ---- the file ---- */

/* GKeyFile merges a group given twice into one, which would silently mix two workloads' keys:
 * the raw text is scanned for repeated group headers first. */
static gboolean
check_duplicate_groups(const char *text, gssize length, const char *where, GError **error)
{
  g_autofree char *copy = length < 0 ? g_strdup(text) : g_strndup(text, (gsize)length);
  g_auto(GStrv) lines = g_strsplit(copy, "\n", -1);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; lines[i]; i++) {
    char *line = g_strstrip(lines[i]);
    gsize n = strlen(line);
    /* GKeyFile's rule: '[' first, and the first ']' ends the line. */
    if (n < 2 || line[0] != '[' || strchr(line, ']') != line + n - 1)
      continue;
    line[n - 1] = '\0';
    const char *group = line + 1;
    if (!g_hash_table_add(seen, (gpointer)group)) {
      suite_error(error, where, group, NULL,
                  strcmp(group, SETTINGS_GROUP) == 0
                      ? "given twice; keep one [gate] group of settings"
                      : "given twice; workload names must be unique");
      return FALSE;
    }
  }
  return TRUE;
}

/* "bench/gate.suite" → "gate". */
static char *
default_name(const char *path)
{
  if (path == NULL)
    return g_strdup("suite");
  g_autofree char *base = g_path_get_basename(path);
  char *dot = strrchr(base, '.');
  if (dot && dot != base)
    *dot = '\0';
  return g_steal_pointer(&base);
}

static TsGateSuite *
suite_new(const char *path)
{
  TsGateSuite *suite = g_new0(TsGateSuite, 1);
  suite->path = g_strdup(path ? path : "<string>");
  suite->name = default_name(path);
  suite->backend = g_strdup("auto");
  suite->threshold = 0.05;
  suite->alpha = 0.01;
  suite->time_ms = 1500;
  suite->workloads = g_ptr_array_new_with_free_func((GDestroyNotify)workload_free);
  return suite;
}

TsGateSuite *
ts_gate_suite_parse(const char *text, gssize length, const char *path, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_autoptr(TsGateSuite) suite = suite_new(path);
  const char *where = suite->path;
  g_autoptr(GKeyFile) kf = g_key_file_new();
  g_autoptr(GError) local = NULL;
  if (!g_key_file_load_from_data(kf, text, length < 0 ? (gsize)-1 : (gsize)length, G_KEY_FILE_NONE,
                                 &local)) {
    suite_error(error, where, NULL, NULL, "%s (the format is in docs/perfgate.md)", local->message);
    return NULL;
  }
  if (!check_duplicate_groups(text, length, where, error))
    return NULL;
  if (g_key_file_has_group(kf, SETTINGS_GROUP) && !parse_settings(kf, where, suite, error))
    return NULL;
  /* kernel= files are found from the suite's folder (from the working directory for a suite
   * given as text). */
  g_autofree char *dir = path != NULL ? g_path_get_dirname(path) : NULL;
  g_auto(GStrv) groups = g_key_file_get_groups(kf, NULL);
  for (guint i = 0; groups[i]; i++) {
    if (strcmp(groups[i], SETTINGS_GROUP) == 0)
      continue;
    TsGateWorkload *w = parse_workload(kf, where, groups[i], dir, error);
    if (w == NULL)
      return NULL;
    g_ptr_array_add(suite->workloads, w);
  }
  if (suite->workloads->len == 0) {
    suite_error(error, where, NULL, NULL,
                "no workloads: add a [name] group with op= (or kernel=) and shape=");
    return NULL;
  }
  return g_steal_pointer(&suite);
}

TsGateSuite *
ts_gate_suite_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *text = NULL;
  gsize length = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, &length, &local)) {
    if (g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
      suite_error(error, path, NULL, NULL,
                  "no such suite file (the format is in docs/perfgate.md; bench/gate.suite is "
                  "an example)");
    else
      suite_error(error, path, NULL, NULL, "cannot read the suite: %s", local->message);
    return NULL;
  }
  return ts_gate_suite_parse(text, (gssize)length, path, error);
}

void
ts_gate_suite_free(TsGateSuite *suite)
{
  if (suite == NULL)
    return;
  g_free(suite->path);
  g_free(suite->name);
  g_free(suite->backend);
  g_clear_pointer(&suite->workloads, g_ptr_array_unref);
  g_free(suite);
}

double
ts_gate_workload_threshold(const TsGateSuite *suite, const TsGateWorkload *workload)
{
  g_return_val_if_fail(suite != NULL && workload != NULL, NAN);
  return isnan(workload->threshold) ? suite->threshold : workload->threshold;
}

char *
ts_gate_workload_describe(const TsGateWorkload *workload)
{
  g_return_val_if_fail(workload != NULL, NULL);
  /* The op's canonical key text when it builds (the same text the schedule cache uses); a
   * workload put together by hand and never validated is described as written. */
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(
      workload->op, workload->shape, workload->dtype ? workload->dtype : "f32", NULL);
  if (inst)
    return ts_op_instance_describe(inst);
  return g_strdup_printf("%s %s %s", workload->op, workload->shape,
                         workload->dtype ? workload->dtype : "f32");
}
