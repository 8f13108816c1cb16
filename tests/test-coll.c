/* test-coll.c — collective workloads, their exact data, sizes and bandwidth definitions, and
 * the spaces and launch settings of the mpi backend. No MPI needed. */
#include <math.h>
#include <string.h>

#include "ts-coll-nccl.h"
#include "ts-coll-space.h"
#include "ts-coll.h"

static void
expect_error(const char *op, const char *shape, const char *dtype, guint ranks,
             const char *fragment)
{
  TsCollWorkload w;
  g_autoptr(GError) error = NULL;
  g_assert_false(ts_coll_workload_parse(&w, op, shape, dtype, ranks, &error));
  g_assert_nonnull(error);
  if (!strstr(error->message, fragment))
    g_error("'%s' lacks '%s'", error->message, fragment);
}

static void
test_parse(void)
{
  TsCollWorkload w;
  g_autoptr(GError) error = NULL;
  g_assert_true(ts_coll_workload_parse(&w, "all_reduce", " BYTES = 1048576 ", "bf16", 4, &error));
  g_assert_no_error(error);
  g_assert_cmpuint(w.ranks, ==, 4);
  g_assert_cmpuint(ts_coll_in_count(&w), ==, 524288);
  g_autofree char *shape = ts_coll_workload_shape(&w);
  g_assert_cmpstr(shape, ==, "BYTES=1048576,RANKS=4");
  g_autofree char *desc = ts_coll_workload_describe(&w);
  g_assert_cmpstr(desc, ==, "all_reduce BYTES=1048576,RANKS=4 bf16");
  /* RANKS in the shape is the canonical key's own: it parses back the same. */
  g_assert_true(ts_coll_workload_parse(&w, "all_reduce", shape, "bf16", 0, &error));
  g_assert_cmpuint(w.ranks, ==, 4);

  expect_error("all_reduces", "BYTES=64", "f32", 2, "unknown collective 'all_reduces'");
  expect_error("all_reduce", "BYTES=64", "f64", 2, "dtype 'f64'");
  expect_error("all_reduce", "BYTES=6", "f32", 2, "not a whole number of f32 elements");
  expect_error("all_reduce", "", "f32", 2, "needs BYTES");
  expect_error("all_reduce", "BYTES=64,M=3", "f32", 2, "unknown dim 'M'");
  expect_error("all_reduce", "BYTES=64,BYTES=64", "f32", 2, "BYTES given twice");
  expect_error("all_reduce", "BYTES=-4", "f32", 2, "positive integer");
  expect_error("all_reduce", "BYTES", "f32", 2, "not NAME=N");
  expect_error("all_reduce", "BYTES=64,RANKS=3", "f32", 2, "RANKS=3 but 2 ranks");
  expect_error("all_reduce", "BYTES=64", "f32", 0, "how many ranks");
  expect_error("all_reduce", "BYTES=64", "f32", TS_COLL_MAX_RANKS + 1, "more than the 128");
  expect_error("reduce_scatter", "BYTES=8", "f16", 3, "does not split into 3 blocks");
}

static void
test_sizes(void)
{
  TsCollWorkload w;
  g_assert_true(ts_coll_workload_parse(&w, "all_gather", "BYTES=4096", "f32", 4, NULL));
  g_assert_cmpuint(ts_coll_out_count(&w), ==, 4096);
  g_assert_cmpfloat(ts_coll_size_bytes(&w), ==, 16384);
  g_assert_cmpfloat(ts_coll_bus_factor(&w), ==, 0.75);
  /* 16384 bytes in 1 us: 16.384 GB/s of algorithm bandwidth, 3/4 of it on the bus. */
  g_assert_cmpfloat_with_epsilon(ts_coll_algbw(&w, 1000) * 1e-9, 16.384, 1e-9);
  g_assert_cmpfloat_with_epsilon(ts_coll_busbw(&w, 1000) * 1e-9, 12.288, 1e-9);
  g_assert_true(ts_coll_workload_parse(&w, "reduce_scatter", "BYTES=4096", "f32", 4, NULL));
  g_assert_cmpuint(ts_coll_out_count(&w), ==, 256);
  g_assert_cmpfloat(ts_coll_size_bytes(&w), ==, 4096);
  g_assert_cmpfloat(ts_coll_bus_factor(&w), ==, 0.75);
  g_assert_true(ts_coll_workload_parse(&w, "all_reduce", "BYTES=4096", "f32", 8, NULL));
  g_assert_cmpfloat(ts_coll_bus_factor(&w), ==, 2.0 * 7 / 8);
}

/* Adds the ranks' inputs one at a time in the dtype, in the given order. */
static double
sum_in_dtype(TsCollDtype dtype, guint ranks, guint64 seed, guint64 j, gboolean reverse)
{
  guint16 acc[2] = {0};
  ts_coll_store(dtype, acc, 0, 0);
  for (guint k = 0; k < ranks; k++) {
    guint r = reverse ? ranks - 1 - k : k;
    double partial = ts_coll_load(dtype, acc, 0) + ts_coll_input(seed, r, j);
    g_assert_cmpfloat(partial, ==, rint(partial));
    ts_coll_store(dtype, acc, 0, (int)partial);
  }
  return ts_coll_load(dtype, acc, 0);
}

static void
test_exact(void)
{
  static const TsCollDtype dtypes[] = {TS_COLL_F32, TS_COLL_BF16, TS_COLL_F16};
  static const guint ranks[] = {2, 3, 8, TS_COLL_MAX_RANKS};
  for (guint d = 0; d < G_N_ELEMENTS(dtypes); d++)
    for (guint r = 0; r < G_N_ELEMENTS(ranks); r++) {
      TsCollWorkload w;
      g_autofree char *shape = g_strdup_printf("BYTES=%u", 512 * ranks[r]);
      g_assert_true(ts_coll_workload_parse(&w, "all_reduce", shape,
                                           ts_coll_dtype_name(dtypes[d]), ranks[r], NULL));
      int lo = 0, hi = 0;
      for (guint64 j = 0; j < ts_coll_out_count(&w); j++) {
        int want = ts_coll_expected(&w, 7, 0, j);
        lo = MIN(lo, want);
        hi = MAX(hi, want);
        /* Whatever order an algorithm adds in, the dtype holds every partial sum. */
        g_assert_cmpfloat(sum_in_dtype(dtypes[d], ranks[r], 7, j, FALSE), ==, want);
        g_assert_cmpfloat(sum_in_dtype(dtypes[d], ranks[r], 7, j, TRUE), ==, want);
      }
      g_assert_cmpint(lo, <, hi); /* the data is not constant */
    }
  /* Inputs span -2..2, differ by rank and by seed. */
  gboolean seen[5] = {0};
  guint differ_rank = 0, differ_seed = 0;
  for (guint64 i = 0; i < 1000; i++) {
    int v = ts_coll_input(1, 0, i);
    g_assert_cmpint(v, >=, -2);
    g_assert_cmpint(v, <=, 2);
    seen[v + 2] = TRUE;
    differ_rank += v != ts_coll_input(1, 1, i);
    differ_seed += v != ts_coll_input(2, 0, i);
  }
  for (guint k = 0; k < 5; k++)
    g_assert_true(seen[k]);
  g_assert_cmpuint(differ_rank, >, 500);
  g_assert_cmpuint(differ_seed, >, 500);
}

static void
test_expected_layout(void)
{
  TsCollWorkload w;
  g_assert_true(ts_coll_workload_parse(&w, "all_gather", "BYTES=16", "f32", 3, NULL));
  for (guint64 j = 0; j < 12; j++)
    g_assert_cmpint(ts_coll_expected(&w, 5, 2, j), ==, ts_coll_input(5, (guint)(j / 4), j % 4));
  g_assert_true(ts_coll_workload_parse(&w, "reduce_scatter", "BYTES=48", "f32", 3, NULL));
  for (guint rank = 0; rank < 3; rank++)
    for (guint64 j = 0; j < 4; j++) {
      int sum = 0;
      for (guint r = 0; r < 3; r++)
        sum += ts_coll_input(5, r, rank * 4 + j);
      g_assert_cmpint(ts_coll_expected(&w, 5, rank, j), ==, sum);
    }
}

static guint64
valid_on(const char *backend, const char *op, guint ranks, const char *space_text)
{
  TsCollWorkload w;
  g_autofree char *shape = g_strdup_printf("BYTES=%u", 64 * ranks);
  g_assert_true(ts_coll_workload_parse(&w, op, shape, "f32", ranks, NULL));
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_coll_space(w.kind, backend, space_text, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_coll_env(&w);
  guint64 n = 0;
  g_assert_true(ts_sched_space_count_valid(space, env, &n, &error));
  return n;
}

static guint64
valid_points(const char *op, guint ranks, const char *space_text)
{
  return valid_on("mpi", op, ranks, space_text);
}

static void
test_spaces(void)
{
  /* Six algorithms without segments, the segmented ring at four sizes. */
  g_assert_cmpuint(valid_points("all_reduce", 2, NULL), ==, 10);
  g_assert_cmpuint(valid_points("all_reduce", 3, NULL), ==, 10);
  /* neighbor needs an even count, two_proc two, recursive doubling a power of two. */
  g_assert_cmpuint(valid_points("all_gather", 2, NULL), ==, 7);
  g_assert_cmpuint(valid_points("all_gather", 3, NULL), ==, 4);
  g_assert_cmpuint(valid_points("all_gather", 4, NULL), ==, 6);
  g_assert_cmpuint(valid_points("all_gather", 6, NULL), ==, 5);
  g_assert_cmpuint(valid_points("reduce_scatter", 3, NULL), ==, 5);
  /* A user's space keeps the op's constraints, and its missing knobs take the default. */
  g_assert_cmpuint(valid_points("all_reduce", 2,
                                "dict(algorithm=[\"ring\", \"segmented_ring\"], "
                                "segment=[0, 8192])"), ==, 2);
  g_assert_cmpuint(valid_points("all_reduce", 2, "dict(algorithm=[\"ring\", \"default\"])"), ==,
                   2);

  /* Every algorithm of a default space is one the launch can name, and vice versa. */
  for (guint i = 0; ts_coll_nth(i); i++) {
    TsCollKind kind;
    g_assert_true(ts_coll_lookup(ts_coll_nth(i), &kind));
    g_autoptr(TsSchedSpace) space = ts_coll_space(kind, "mpi", NULL, NULL);
    int k = ts_sched_space_knob_index(space, "algorithm");
    g_assert_cmpint(k, >=, 0);
    guint n = 0;
    while (ts_coll_mpi_algorithm(kind, n))
      n++;
    g_assert_cmpuint(ts_sched_space_n_values(space, (guint)k), ==, n);
    for (guint v = 0; v < n; v++)
      g_assert_cmpstr(ts_sched_space_value(space, (guint)k, v).s, ==,
                      ts_coll_mpi_algorithm(kind, v));
  }

  g_autoptr(GError) error = NULL;
  g_assert_null(ts_coll_space(TS_COLL_ALL_REDUCE, "mpi", "dict(algorithm=[\"rings\"])", &error));
  g_assert_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE);
  g_assert_nonnull(strstr(error->message, "\"rings\""));
  g_assert_nonnull(strstr(error->message, "\"rabenseifner\""));
  g_clear_error(&error);
  g_assert_null(ts_coll_space(TS_COLL_ALL_GATHER, "mpi", "dict(segment=[0])", &error));
  g_assert_nonnull(strstr(error->message, "no knob 'segment'"));
  g_clear_error(&error);
  g_assert_null(ts_coll_space(TS_COLL_ALL_REDUCE, "gloo", NULL, &error));
  g_assert_nonnull(strstr(error->message, "no collective backend 'gloo' (mpi, nccl)"));
  g_clear_error(&error);
  g_assert_null(ts_coll_space(TS_COLL_ALL_REDUCE, "mpi", "dict(algorithm=[\"ring\"", &error));
  g_assert_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_PARSE);
}

static guint64
valid_nccl(const char *op, const char *space_text)
{
  return valid_on("nccl", op, 8, space_text);
}

static void
test_nccl_space(void)
{
  /* algorithm x protocol x channels x buffer size; trees only all-reduce */
  g_assert_cmpuint(valid_nccl("all_reduce", NULL), ==, 3 * 4 * 4 * 2);
  g_assert_cmpuint(valid_nccl("all_gather", NULL), ==, 2 * 4 * 4 * 2);
  g_assert_cmpuint(valid_nccl("reduce_scatter", "dict(protocol=[\"LL\", \"Simple\"])"), ==, 2);
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_coll_space(TS_COLL_ALL_GATHER, "nccl", "dict(algorithm=[\"Tree\"])", &error));
  g_assert_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE);
  g_assert_nonnull(strstr(error->message, "NCCL's"));
  g_clear_error(&error);
  g_assert_null(ts_coll_space(TS_COLL_ALL_REDUCE, "nccl", "dict(channels=[\"many\"])", &error));
  g_assert_nonnull(strstr(error->message, "channels takes sizes and counts"));
  g_clear_error(&error);

  g_autoptr(TsSchedPoint) p = ts_sched_point_parse(
    "dict(algorithm=\"Tree\", protocol=\"LL128\", channels=16, buffsize=4194304)", NULL);
  g_auto(GStrv) env = ts_coll_env_for("nccl", TS_COLL_ALL_REDUCE, p, &error);
  g_assert_no_error(error);
  g_autofree char *joined = g_strjoinv(" ", env);
  g_assert_cmpstr(joined, ==, "NCCL_ALGO=Tree NCCL_PROTO=LL128 NCCL_MIN_NCHANNELS=16 "
                              "NCCL_MAX_NCHANNELS=16 NCCL_BUFFSIZE=4194304");
  /* NCCL's own choice sets nothing */
  g_autoptr(TsSchedPoint) d = ts_sched_point_parse(
    "dict(algorithm=\"default\", protocol=\"default\", channels=0, buffsize=0)", NULL);
  g_auto(GStrv) none = ts_coll_env_for("nccl", TS_COLL_ALL_GATHER, d, &error);
  g_assert_cmpuint(g_strv_length(none), ==, 0);
  g_assert_null(ts_coll_env_for("nccl", TS_COLL_ALL_GATHER, p, &error));
  g_assert_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE);
}

/* NCCL loads without a GPU (CI compiles the NCCL path and checks its library here); where the
 * toolkit has no NCCL the check is skipped with the loader's reason. */
static void
test_nccl_load(void)
{
  g_autofree char *version = NULL;
  g_autoptr(GError) error = NULL;
  if (!ts_coll_nccl_load(&version, &error)) {
    g_assert_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH);
    g_assert_nonnull(strstr(error->message, "libnccl.so.2"));
    g_test_skip(error->message);
    return;
  }
  g_assert_true(g_str_has_prefix(version, "NCCL 2."));
  g_test_message("%s", version);
  g_assert_true(ts_coll_nccl_load(NULL, NULL)); /* loaded once, answered again */
}

static void
test_launch_env(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedPoint) p =
    ts_sched_point_parse("dict(algorithm=\"segmented_ring\", segment=16384)", &error);
  g_assert_no_error(error);
  g_auto(GStrv) env = ts_coll_mpi_env(TS_COLL_ALL_REDUCE, p, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(g_strv_length(env), ==, 3);
  g_assert_cmpstr(env[0], ==, "OMPI_MCA_coll_tuned_use_dynamic_rules=1");
  g_assert_cmpstr(env[1], ==, "OMPI_MCA_coll_tuned_allreduce_algorithm=5");
  g_assert_cmpstr(env[2], ==, "OMPI_MCA_coll_tuned_allreduce_algorithm_segmentsize=16384");

  g_autoptr(TsSchedPoint) q = ts_sched_point_parse("dict(algorithm=\"default\")", NULL);
  g_auto(GStrv) env2 = ts_coll_mpi_env(TS_COLL_REDUCE_SCATTER, q, &error);
  g_assert_cmpuint(g_strv_length(env2), ==, 2);
  g_assert_cmpstr(env2[1], ==, "OMPI_MCA_coll_tuned_reduce_scatter_algorithm=0");

  g_autoptr(TsSchedPoint) bad = ts_sched_point_parse("dict(algorithm=\"bruck\")", NULL);
  g_assert_null(ts_coll_mpi_env(TS_COLL_ALL_REDUCE, bad, &error));
  g_assert_error(error, TS_COLL_ERROR, TS_COLL_ERROR_SPACE);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/coll/parse", test_parse);
  g_test_add_func("/coll/sizes", test_sizes);
  g_test_add_func("/coll/exact", test_exact);
  g_test_add_func("/coll/expected-layout", test_expected_layout);
  g_test_add_func("/coll/spaces", test_spaces);
  g_test_add_func("/coll/launch-env", test_launch_env);
  g_test_add_func("/coll/nccl-space", test_nccl_space);
  g_test_add_func("/coll/nccl-load", test_nccl_load);
  return g_test_run();
}
