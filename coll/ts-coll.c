/* ts-coll.c — the collective ops' catalog, workloads, sizes and exact data (ts-coll.h). */
#include "ts-coll.h"

#include <stdlib.h>
#include <string.h>

#include "ts-half.h"

G_DEFINE_QUARK(ts-coll-error-quark, ts_coll_error)

static const struct {
  const char *name;
  const char *summary;
} ops[] = {
  [TS_COLL_ALL_REDUCE] = {"all_reduce", "sum of every rank's BYTES, left on every rank"},
  [TS_COLL_ALL_GATHER] = {"all_gather", "every rank's BYTES, concatenated on every rank"},
  [TS_COLL_REDUCE_SCATTER] = {"reduce_scatter",
                              "sum of every rank's BYTES, rank r keeping block r of RANKS"},
};

/* In Open MPI 4.1's order (ompi_info --param coll tuned --level 9). */
static const char *const mpi_algorithms[][8] = {
  [TS_COLL_ALL_REDUCE] = {"default", "basic_linear", "nonoverlapping", "recursive_doubling",
                          "ring", "segmented_ring", "rabenseifner", NULL},
  [TS_COLL_ALL_GATHER] = {"default", "linear", "bruck", "recursive_doubling", "ring", "neighbor",
                          "two_proc", NULL},
  [TS_COLL_REDUCE_SCATTER] = {"default", "non-overlapping", "recursive_halving", "ring",
                              "butterfly", NULL},
};

static const char *const mpi_params[] = {
  [TS_COLL_ALL_REDUCE] = "coll_tuned_allreduce_algorithm",
  [TS_COLL_ALL_GATHER] = "coll_tuned_allgather_algorithm",
  [TS_COLL_REDUCE_SCATTER] = "coll_tuned_reduce_scatter_algorithm",
};

static const struct {
  const char *name;
  gsize size;
} dtypes[] = {
  [TS_COLL_F32] = {"f32", 4},
  [TS_COLL_BF16] = {"bf16", 2},
  [TS_COLL_F16] = {"f16", 2},
};

const char *
ts_coll_nth(guint i)
{
  return i < G_N_ELEMENTS(ops) ? ops[i].name : NULL;
}

gboolean
ts_coll_lookup(const char *name, TsCollKind *kind)
{
  for (guint i = 0; name && i < G_N_ELEMENTS(ops); i++)
    if (strcmp(name, ops[i].name) == 0) {
      if (kind)
        *kind = (TsCollKind)i;
      return TRUE;
    }
  return FALSE;
}

const char *
ts_coll_kind_name(TsCollKind kind)
{
  return ops[kind].name;
}

const char *
ts_coll_summary(TsCollKind kind)
{
  return ops[kind].summary;
}

const char *
ts_coll_dtype_name(TsCollDtype dtype)
{
  return dtypes[dtype].name;
}

gsize
ts_coll_dtype_size(TsCollDtype dtype)
{
  return dtypes[dtype].size;
}

const char *
ts_coll_mpi_param(TsCollKind kind)
{
  return mpi_params[kind];
}

const char *
ts_coll_mpi_algorithm(TsCollKind kind, guint value)
{
  return value < G_N_ELEMENTS(mpi_algorithms[kind]) ? mpi_algorithms[kind][value] : NULL;
}

gboolean
ts_coll_parse_bytes(const char *text, guint64 *v)
{
  char *end = NULL;
  guint64 n = g_ascii_strtoull(text, &end, 10);
  if (end == text || !g_ascii_isdigit(text[0]))
    return FALSE;
  guint shift = *end == 'K' || *end == 'k' ? 10 : *end == 'M' ? 20 : *end == 'G' ? 30 : 0;
  if (shift)
    end++;
  if (*end != '\0' || n == 0 || n > ((guint64)G_MAXINT64 >> shift))
    return FALSE;
  *v = n << shift;
  return TRUE;
}

/* "NAME=INT" items; FALSE with the item when one is malformed or unknown. */
static gboolean
parse_dims(const char *op, const char *shape, guint64 *bytes, guint64 *ranks, GError **error)
{
  *bytes = *ranks = 0;
  g_auto(GStrv) items = g_strsplit(shape ? shape : "", ",", -1);
  for (guint i = 0; items[i]; i++) {
    g_strstrip(items[i]);
    if (items[i][0] == '\0')
      continue;
    char *eq = strchr(items[i], '=');
    guint64 v = 0;
    if (eq) {
      *eq = '\0';
      g_strstrip(items[i]);
    }
    if (eq == NULL || !ts_coll_parse_bytes(g_strstrip(eq + 1), &v)) {
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                  "%s: shape item '%s%s%s' is not NAME=N with N a positive integer, or a size "
                  "like 4K or 16M (e.g. --shape BYTES=1048576)",
                  op, items[i], eq ? "=" : "", eq ? eq + 1 : "");
      return FALSE;
    }
    guint64 *dst = strcmp(items[i], "BYTES") == 0 ? bytes
                   : strcmp(items[i], "RANKS") == 0 ? ranks
                                                    : NULL;
    if (dst == NULL) {
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                  "%s: unknown dim '%s' (a collective takes BYTES, each rank's input in bytes, "
                  "and RANKS)", op, items[i]);
      return FALSE;
    }
    if (*dst != 0) {
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE, "%s: dim %s given twice", op,
                  items[i]);
      return FALSE;
    }
    *dst = v;
  }
  return TRUE;
}

gboolean
ts_coll_workload_parse(TsCollWorkload *w, const char *op, const char *shape, const char *dtype,
                       guint ranks, GError **error)
{
  memset(w, 0, sizeof *w);
  if (!ts_coll_lookup(op, &w->kind)) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_UNKNOWN_OP,
                "unknown collective '%s' (all_reduce, all_gather, reduce_scatter)", op);
    return FALSE;
  }
  gboolean dtype_ok = FALSE;
  for (guint i = 0; dtype && i < G_N_ELEMENTS(dtypes); i++)
    if (strcmp(dtype, dtypes[i].name) == 0) {
      w->dtype = (TsCollDtype)i;
      dtype_ok = TRUE;
    }
  if (!dtype_ok) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_DTYPE,
                "%s: dtype '%s' is not one the collectives sum (f32, bf16, f16)", op,
                dtype ? dtype : "");
    return FALSE;
  }
  guint64 bytes, shape_ranks;
  if (!parse_dims(op, shape, &bytes, &shape_ranks, error))
    return FALSE;
  if (bytes == 0) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                "%s: the shape needs BYTES, each rank's input in bytes (e.g. --shape "
                "BYTES=1048576)", op);
    return FALSE;
  }
  if (shape_ranks != 0 && ranks != 0 && shape_ranks != ranks) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                "%s: the shape says RANKS=%" G_GUINT64_FORMAT " but %u ranks were asked for", op,
                shape_ranks, ranks);
    return FALSE;
  }
  guint64 n = shape_ranks ? shape_ranks : ranks;
  if (n == 0) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                "%s: how many ranks? (RANKS in the shape, or --ranks)", op);
    return FALSE;
  }
  if (n > TS_COLL_MAX_RANKS) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                "%s: RANKS=%" G_GUINT64_FORMAT " is more than the %d whose exact sums every "
                "dtype holds", op, n, TS_COLL_MAX_RANKS);
    return FALSE;
  }
  w->ranks = (guint)n;
  w->bytes = bytes;
  gsize elem = ts_coll_dtype_size(w->dtype);
  guint64 unit = w->kind == TS_COLL_REDUCE_SCATTER ? elem * n : elem;
  if (bytes % unit != 0) {
    if (w->kind == TS_COLL_REDUCE_SCATTER)
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                  "%s: BYTES=%" G_GUINT64_FORMAT " does not split into %u blocks of whole %s "
                  "elements (make it a multiple of %" G_GUINT64_FORMAT ")", op, bytes, (guint)n,
                  ts_coll_dtype_name(w->dtype), unit);
    else
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                  "%s: BYTES=%" G_GUINT64_FORMAT " is not a whole number of %s elements (make "
                  "it a multiple of %" G_GUINT64_FORMAT ")", op, bytes,
                  ts_coll_dtype_name(w->dtype), unit);
    return FALSE;
  }
  /* The output of all_gather is BYTES x RANKS on each rank; keep it addressable by an int
   * count, which is what MPI's calls take. */
  if (ts_coll_out_count(w) > G_MAXINT || ts_coll_in_count(w) > G_MAXINT) {
    g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SHAPE,
                "%s: BYTES=%" G_GUINT64_FORMAT " at %u ranks is more than 2^31 elements a rank",
                op, bytes, w->ranks);
    return FALSE;
  }
  return TRUE;
}

char *
ts_coll_workload_shape(const TsCollWorkload *w)
{
  return g_strdup_printf("BYTES=%" G_GUINT64_FORMAT ",RANKS=%u", w->bytes, w->ranks);
}

char *
ts_coll_workload_describe(const TsCollWorkload *w)
{
  g_autofree char *shape = ts_coll_workload_shape(w);
  return g_strdup_printf("%s %s %s", ts_coll_kind_name(w->kind), shape,
                         ts_coll_dtype_name(w->dtype));
}

guint64
ts_coll_in_count(const TsCollWorkload *w)
{
  return w->bytes / ts_coll_dtype_size(w->dtype);
}

guint64
ts_coll_out_count(const TsCollWorkload *w)
{
  guint64 in = ts_coll_in_count(w);
  switch (w->kind) {
  case TS_COLL_ALL_GATHER:
    return in * w->ranks;
  case TS_COLL_REDUCE_SCATTER:
    return in / w->ranks;
  case TS_COLL_ALL_REDUCE:
  default:
    return in;
  }
}

double
ts_coll_size_bytes(const TsCollWorkload *w)
{
  return w->kind == TS_COLL_ALL_GATHER ? (double)w->bytes * w->ranks : (double)w->bytes;
}

double
ts_coll_bus_factor(const TsCollWorkload *w)
{
  double n = w->ranks;
  return (w->kind == TS_COLL_ALL_REDUCE ? 2.0 : 1.0) * (n - 1) / n;
}

double
ts_coll_algbw(const TsCollWorkload *w, double ns)
{
  return ts_coll_size_bytes(w) / (ns * 1e-9);
}

double
ts_coll_busbw(const TsCollWorkload *w, double ns)
{
  return ts_coll_algbw(w, ns) * ts_coll_bus_factor(w);
}

int
ts_coll_input(guint64 seed, guint rank, guint64 i)
{
  /* A cheap mix of the three, so neighbouring elements and ranks differ. */
  guint64 h = (i + 1) * 0x9e3779b97f4a7c15ull ^ (rank + 1) * 0xc2b2ae3d27d4eb4full ^ seed;
  h ^= h >> 29;
  return (int)(h % 5) - 2;
}

int
ts_coll_expected(const TsCollWorkload *w, guint64 seed, guint rank, guint64 j)
{
  guint64 in = ts_coll_in_count(w);
  int sum = 0;
  switch (w->kind) {
  case TS_COLL_ALL_GATHER:
    return ts_coll_input(seed, (guint)(j / in), j % in);
  case TS_COLL_REDUCE_SCATTER:
    j += (guint64)rank * ts_coll_out_count(w);
    break;
  case TS_COLL_ALL_REDUCE:
  default:
    break;
  }
  for (guint r = 0; r < w->ranks; r++)
    sum += ts_coll_input(seed, r, j);
  return sum;
}

void
ts_coll_store(TsCollDtype dtype, void *buf, guint64 i, int v)
{
  switch (dtype) {
  case TS_COLL_F32:
    ((float *)buf)[i] = (float)v;
    break;
  case TS_COLL_BF16:
    ((uint16_t *)buf)[i] = ts_f32_to_bf16((float)v);
    break;
  case TS_COLL_F16:
    ((uint16_t *)buf)[i] = ts_f32_to_f16((float)v);
    break;
  }
}

double
ts_coll_load(TsCollDtype dtype, const void *buf, guint64 i)
{
  switch (dtype) {
  case TS_COLL_BF16:
    return ts_bf16_to_f32(((const uint16_t *)buf)[i]);
  case TS_COLL_F16:
    return ts_f16_to_f32(((const uint16_t *)buf)[i]);
  case TS_COLL_F32:
  default:
    return ((const float *)buf)[i];
  }
}
