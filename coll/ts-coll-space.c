/* ts-coll-space.c — collective schedule spaces and the launches their points need
 * (ts-coll-space.h). */
#include "ts-coll-space.h"

#include <string.h>

static const char *const backends[] = {"mpi", "nccl", NULL};

const char *const *
ts_coll_backends(void)
{
  return backends;
}

gboolean
ts_coll_backend_known(const char *name)
{
  return name && g_strv_contains(backends, name);
}

/* Segments only mean something to the segmented ring; the rest take none. Segments are powers
 * of two from a page to a quarter MiB, the range where the ring's pipelining trades latency for
 * overlap on shared memory and TCP alike. */
static const char *const mpi_spaces[] = {
  [TS_COLL_ALL_REDUCE] =
    "dict(algorithm=[\"default\", \"basic_linear\", \"nonoverlapping\", \"recursive_doubling\", "
    "\"ring\", \"segmented_ring\", \"rabenseifner\"], segment=[0, 4096, 16384, 65536, 262144])"
    ".where(algorithm == \"segmented_ring\" || segment == 0, "
    "algorithm != \"segmented_ring\" || segment > 0)",
  [TS_COLL_ALL_GATHER] =
    "dict(algorithm=[\"default\", \"linear\", \"bruck\", \"recursive_doubling\", \"ring\", "
    "\"neighbor\", \"two_proc\"])",
  [TS_COLL_REDUCE_SCATTER] =
    "dict(algorithm=[\"default\", \"non-overlapping\", \"recursive_halving\", \"ring\", "
    "\"butterfly\"])",
};

/* NCCL_ALGO, NCCL_PROTO, the channel count (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS) and
 * NCCL_BUFFSIZE; "default" and 0 leave NCCL's own choice. Trees only all-reduce. NVLS and
 * CollNet need an NVSwitch or a SHARP network: spaces for machines with them list them. */
#define NCCL_COMMON \
  "protocol=[\"default\", \"LL\", \"LL128\", \"Simple\"], channels=[0, 8, 16, 32], " \
  "buffsize=[0, 4194304])"
static const char *const nccl_spaces[] = {
  [TS_COLL_ALL_REDUCE] = "dict(algorithm=[\"default\", \"Ring\", \"Tree\"], " NCCL_COMMON,
  [TS_COLL_ALL_GATHER] = "dict(algorithm=[\"default\", \"Ring\"], " NCCL_COMMON,
  [TS_COLL_REDUCE_SCATTER] = "dict(algorithm=[\"default\", \"Ring\"], " NCCL_COMMON,
};

/* What an all_gather algorithm needs of the rank count: Open MPI falls back to another
 * algorithm (or fails) outside it, and a fallback's timing would be filed under the wrong
 * name. (all_reduce's recursive doubling handles any count.) */
static const char *const mpi_gather_constraints[] = {
  "algorithm != \"neighbor\" || RANKS % 2 == 0",
  "algorithm != \"two_proc\" || RANKS == 2",
  "algorithm != \"recursive_doubling\" || RANKS_POW2 == 1",
};

const char *
ts_coll_default_space(TsCollKind kind, const char *backend)
{
  if (g_strcmp0(backend, "mpi") == 0)
    return mpi_spaces[kind];
  if (g_strcmp0(backend, "nccl") == 0)
    return nccl_spaces[kind];
  return NULL;
}

/* The values a string knob may take: those of the default space's list. */
static char *
value_list(const TsSchedSpace *def, int k)
{
  g_autoptr(GString) s = g_string_new(NULL);
  for (guint v = 0; v < ts_sched_space_n_values(def, (guint)k); v++)
    g_string_append_printf(s, "%s\"%s\"", v ? ", " : "", ts_sched_space_value(def, (guint)k, v).s);
  return g_string_free(g_steal_pointer(&s), FALSE);
}

static gboolean
known_value(const TsSchedSpace *def, int k, const char *value)
{
  for (guint v = 0; v < ts_sched_space_n_values(def, (guint)k); v++)
    if (strcmp(value, ts_sched_space_value(def, (guint)k, v).s) == 0)
      return TRUE;
  return FALSE;
}

TsSchedSpace *
ts_coll_space(TsCollKind kind, const char *backend, const char *text, GError **error)
{
  const char *def_text = ts_coll_default_space(kind, backend);
  if (def_text == NULL) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE,
                "%s: no collective backend '%s' (mpi, nccl)", ts_coll_kind_name(kind),
                backend ? backend : "");
    return NULL;
  }
  g_autoptr(TsSchedSpace) def = ts_sched_space_parse(def_text, error);
  g_return_val_if_fail(def != NULL, NULL);
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text ? text : def_text, error);
  if (space == NULL)
    return NULL;
  for (guint k = 0; k < ts_sched_space_n_knobs(space); k++) {
    const char *name = ts_sched_space_knob_name(space, k);
    int dk = ts_sched_space_knob_index(def, name);
    if (dk < 0) {
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE,
                  "%s on %s has no knob '%s' (its space: %s)", ts_coll_kind_name(kind), backend,
                  name, def_text);
      return NULL;
    }
    gboolean want_str = ts_sched_space_value(def, (guint)dk, 0).kind == TS_SCHED_STR;
    for (guint v = 0; v < ts_sched_space_n_values(space, k); v++) {
      TsSchedValue value = ts_sched_space_value(space, k, v);
      gboolean is_str = value.kind == TS_SCHED_STR;
      if (want_str && (!is_str || !known_value(def, dk, value.s))) {
        g_autofree char *list = value_list(def, dk);
        g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE,
                    "%s on %s: %s %s%s%s is not one of %s's (%s)", ts_coll_kind_name(kind),
                    backend, name, is_str ? "\"" : "", is_str ? value.s : "a number",
                    is_str ? "\"" : "", g_strcmp0(backend, "mpi") == 0 ? "Open MPI" : "NCCL",
                    list);
        return NULL;
      }
      if (!want_str && (is_str || value.i < 0)) {
        g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE,
                    "%s on %s: %s takes sizes and counts, 0 for the library's own choice",
                    ts_coll_kind_name(kind), backend, name);
        return NULL;
      }
    }
  }
  /* The default point's value for each knob the user's space leaves out: the first value of
   * the default list ("default", 0). */
  for (guint k = 0; k < ts_sched_space_n_knobs(def); k++) {
    const char *name = ts_sched_space_knob_name(def, k);
    if (ts_sched_space_knob_index(space, name) < 0) {
      TsSchedValue first = ts_sched_space_value(def, k, 0);
      ts_sched_space_set_knob(space, name, &first, 1);
    }
  }
  if (text != NULL)
    for (guint c = 0; c < ts_sched_space_n_constraints(def); c++) {
      g_autofree char *expr = ts_sched_space_constraint_to_string(def, c);
      if (!ts_sched_space_add_constraint(space, expr, error))
        return NULL;
    }
  gboolean gather = kind == TS_COLL_ALL_GATHER && g_strcmp0(backend, "mpi") == 0;
  for (guint c = 0; gather && c < G_N_ELEMENTS(mpi_gather_constraints); c++)
    if (!ts_sched_space_add_constraint(space, mpi_gather_constraints[c], error))
      return NULL;
  return g_steal_pointer(&space);
}

TsSchedEnv *
ts_coll_env(const TsCollWorkload *w)
{
  TsSchedEnv *env = ts_sched_env_new();
  ts_sched_env_set(env, "RANKS", w->ranks);
  ts_sched_env_set(env, "RANKS_POW2", (w->ranks & (w->ranks - 1)) == 0);
  ts_sched_env_set(env, "BYTES", (gint64)w->bytes);
  return env;
}

GStrv
ts_coll_mpi_env(TsCollKind kind, const TsSchedPoint *point, GError **error)
{
  const char *algorithm = ts_sched_point_get_str(point, "algorithm", "default");
  guint value = 0;
  while (ts_coll_mpi_algorithm(kind, value) &&
         strcmp(ts_coll_mpi_algorithm(kind, value), algorithm) != 0)
    value++;
  if (ts_coll_mpi_algorithm(kind, value) == NULL) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE,
                "%s: algorithm \"%s\" is not one of Open MPI's (its space: %s)",
                ts_coll_kind_name(kind), algorithm, mpi_spaces[kind]);
    return NULL;
  }
  GPtrArray *env = g_ptr_array_new();
  /* Read at MPI_Init: without it the forced algorithm is ignored. */
  g_ptr_array_add(env, g_strdup("OMPI_MCA_coll_tuned_use_dynamic_rules=1"));
  g_ptr_array_add(env, g_strdup_printf("OMPI_MCA_%s=%u", ts_coll_mpi_param(kind), value));
  gint64 segment = ts_sched_point_get_int(point, "segment", 0);
  if (segment > 0)
    g_ptr_array_add(env, g_strdup_printf("OMPI_MCA_%s_segmentsize=%" G_GINT64_FORMAT,
                                         ts_coll_mpi_param(kind), segment));
  g_ptr_array_add(env, NULL);
  return (GStrv)g_ptr_array_free(env, FALSE);
}

GStrv
ts_coll_nccl_env(TsCollKind kind, const TsSchedPoint *point, GError **error)
{
  static const char *const algorithms[] = {"default", "Ring", "Tree"};
  static const char *const protocols[] = {"default", "LL", "LL128", "Simple"};
  const char *algorithm = ts_sched_point_get_str(point, "algorithm", "default");
  const char *protocol = ts_sched_point_get_str(point, "protocol", "default");
  gboolean a_ok = FALSE, p_ok = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(algorithms); i++)
    a_ok = a_ok || (strcmp(algorithm, algorithms[i]) == 0 &&
                    (kind == TS_COLL_ALL_REDUCE || strcmp(algorithm, "Tree") != 0));
  for (guint i = 0; i < G_N_ELEMENTS(protocols); i++)
    p_ok = p_ok || strcmp(protocol, protocols[i]) == 0;
  gint64 channels = ts_sched_point_get_int(point, "channels", 0);
  gint64 buffsize = ts_sched_point_get_int(point, "buffsize", 0);
  if (!a_ok || !p_ok || channels < 0 || buffsize < 0) {
    g_autofree char *text = ts_sched_point_to_string(point);
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE, "%s: %s is not a point NCCL runs "
                "(its space: %s)", ts_coll_kind_name(kind), text, nccl_spaces[kind]);
    return NULL;
  }
  GPtrArray *env = g_ptr_array_new();
  if (strcmp(algorithm, "default") != 0)
    g_ptr_array_add(env, g_strdup_printf("NCCL_ALGO=%s", algorithm));
  if (strcmp(protocol, "default") != 0)
    g_ptr_array_add(env, g_strdup_printf("NCCL_PROTO=%s", protocol));
  if (channels > 0) {
    g_ptr_array_add(env, g_strdup_printf("NCCL_MIN_NCHANNELS=%" G_GINT64_FORMAT, channels));
    g_ptr_array_add(env, g_strdup_printf("NCCL_MAX_NCHANNELS=%" G_GINT64_FORMAT, channels));
  }
  if (buffsize > 0)
    g_ptr_array_add(env, g_strdup_printf("NCCL_BUFFSIZE=%" G_GINT64_FORMAT, buffsize));
  g_ptr_array_add(env, NULL);
  return (GStrv)g_ptr_array_free(env, FALSE);
}

GStrv
ts_coll_env_for(const char *backend, TsCollKind kind, const TsSchedPoint *point, GError **error)
{
  if (g_strcmp0(backend, "nccl") == 0)
    return ts_coll_nccl_env(kind, point, error);
  return ts_coll_mpi_env(kind, point, error);
}
