/* ts-coll-run.c — a collective measured on every rank through an engine (ts-coll-run.h). */
#include "ts-coll-run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Elements of this rank's output that differ from the exact result; the first one's index,
 * value and expected value. */
static guint64
check(const TsCollWorkload *w, const void *out, guint64 seed, int rank, double first[3])
{
  guint64 bad = 0, n = ts_coll_out_count(w);
  for (guint64 j = 0; j < n; j++) {
    double got = ts_coll_load(w->dtype, out, j);
    int want = ts_coll_expected(w, seed, (guint)rank, j);
    if (got != (double)want && bad++ == 0) {
      first[0] = (double)j;
      first[1] = got;
      first[2] = want;
    }
  }
  return bad;
}

static void
print_json(JsonBuilder *b)
{
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autofree char *text = json_to_string(root, FALSE);
  g_print("%s\n", text);
}

static void
add_samples(JsonBuilder *b, const char *name, const GArray *v)
{
  json_builder_set_member_name(b, name);
  json_builder_begin_array(b);
  for (guint i = 0; i < v->len; i++)
    json_builder_add_double_value(b, g_array_index(v, double, i));
  json_builder_end_array(b);
}

/* The per-call time of one round of `iters` back-to-back calls: this rank's, in seconds (NAN
 * when a call failed). */
static double
timed_round(const TsCollComm *comm, const TsCollEngine *e, guint iters, GError **error)
{
  comm->barrier();
  if (*error != NULL) /* an earlier round failed: this rank keeps step with the others */
    return NAN;
  gint64 t0 = g_get_monotonic_time();
  gboolean ok = TRUE;
  for (guint i = 0; i < iters && ok; i++)
    ok = e->call(e->self, error);
  ok = ok && (e->wait == NULL || e->wait(e->self, error));
  return ok ? (g_get_monotonic_time() - t0) * 1e-6 / iters : NAN;
}

/* Whether every rank got through a step; *first_bad gets the lowest rank that did not. */
static gboolean
all_ok(const TsCollComm *comm, gboolean mine, int *first_bad)
{
  double bad = mine ? 0 : 1, who = mine ? -G_MAXINT : -comm->rank;
  comm->allreduce(&bad, 1, FALSE);
  comm->allreduce(&who, 1, TRUE); /* max of -rank: the lowest failing rank */
  *first_bad = (int)-who;
  return bad == 0;
}

static int
fail(JsonBuilder *b, const TsCollComm *comm, int status, const char *message)
{
  if (comm->rank == 0) {
    json_builder_set_member_name(b, "error");
    json_builder_add_string_value(b, message);
    print_json(b);
  }
  return status;
}

static int
measure(const TsCollRunArgs *a, const TsCollComm *comm, const TsCollEngine *e, JsonBuilder *b)
{
  TsCollWorkload w;
  g_autoptr(GError) error = NULL;
  if (!a->probe && !ts_coll_workload_parse(&w, a->op, a->shape, a->dtype, (guint)comm->size,
                                           &error))
    return fail(b, comm, 2, error->message);
  int who = 0;
  gboolean ready = e->ready == NULL || e->ready(e->self, &error);
  if (!all_ok(comm, ready, &who)) {
    g_autofree char *msg = ready ? g_strdup_printf("rank %d cannot run the collective", who)
                                 : g_strdup(error->message);
    return fail(b, comm, 3, msg);
  }
  g_autofree char *hosts = comm->hosts();
  g_autofree char *device = e->device(e->self);
  if (comm->rank == 0) {
    json_builder_set_member_name(b, "ranks");
    json_builder_add_int_value(b, comm->size);
    json_builder_set_member_name(b, "hosts");
    json_builder_add_value(b, json_from_string(hosts, NULL));
    json_builder_set_member_name(b, "library");
    json_builder_add_string_value(b, e->library(e->self));
    json_builder_set_member_name(b, "device");
    json_builder_add_string_value(b, device);
    if (e->describe)
      e->describe(e->self, b);
  }
  if (a->probe) {
    if (comm->rank == 0)
      print_json(b);
    return 0;
  }

  gsize elem = ts_coll_dtype_size(w.dtype);
  guint64 in = ts_coll_in_count(&w), out = ts_coll_out_count(&w);
  g_autofree void *input = g_malloc(in * elem);
  g_autofree void *output = g_malloc(out * elem);
  for (guint64 i = 0; i < in; i++)
    ts_coll_store(w.dtype, input, i, ts_coll_input(a->seed, (guint)comm->rank, i));
  gboolean set = e->setup(e->self, &w, input, &error);
  if (!all_ok(comm, set, &who)) {
    g_autofree char *msg = set ? g_strdup_printf("rank %d could not set up the collective", who)
                               : g_strdup(error->message);
    return fail(b, comm, 3, msg);
  }

  /* Checked once before timing (outputs poisoned with NaN first, so an element no algorithm
   * wrote fails) and once after, on what the last timed call left. */
  double first[3] = {0};
  gboolean ran = e->fill_output(e->self, 0xff, &error) && e->call(e->self, &error) &&
                 (e->wait == NULL || e->wait(e->self, &error)) &&
                 e->read_output(e->self, output, &error);
  /* The tests' stand-in for a broken algorithm: with TESSERA_TEST_OPS=1 (which also shows the
   * kernel tests' faulty ops), the rank TESSERA_TEST_COLL_CORRUPT names spoils its first
   * element. */
  const char *corrupt = g_getenv("TESSERA_TEST_COLL_CORRUPT");
  if (corrupt && g_strcmp0(g_getenv("TESSERA_TEST_OPS"), "1") == 0 && atoi(corrupt) == comm->rank)
    ts_coll_store(w.dtype, output, 0, 100);
  guint64 bad = ran ? check(&w, output, a->seed, comm->rank, first) : 0;
  for (guint i = 0; ran && i < a->warmup; i++)
    ran = e->call(e->self, &error);
  ran = ran && (e->wait == NULL || e->wait(e->self, &error));
  if (!all_ok(comm, ran, &who)) {
    g_autofree char *msg = ran ? g_strdup_printf("rank %d: the collective failed", who)
                               : g_strdup(error->message);
    return fail(b, comm, 1, msg);
  }
  /* Rounds long enough to time at the clock's grain, the same count on every rank. */
  double slowest = timed_round(comm, e, 1, &error);
  if (isnan(slowest))
    slowest = 0; /* the error stops the rounds below */
  comm->allreduce(&slowest, 1, TRUE);
  guint iters = (guint)CLAMP(ceil(a->round_ms * 1e-3 / MAX(slowest, 1e-9)), 1, 100000);
  g_autoptr(GArray) mean = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) worst = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint s = 0; s < MAX(a->samples, 1u); s++) {
    double t[2] = {timed_round(comm, e, iters, &error), 0};
    t[1] = t[0];
    comm->allreduce(&t[0], 1, FALSE);
    comm->allreduce(&t[1], 1, TRUE);
    double ns = t[0] / comm->size * 1e9, max_ns = t[1] * 1e9;
    g_array_append_val(mean, ns);
    g_array_append_val(worst, max_ns);
  }
  double after[3] = {0};
  ran = error == NULL && e->read_output(e->self, output, &error);
  guint64 bad_after = ran ? check(&w, output, a->seed, comm->rank, after) : 0;
  if (bad == 0 && bad_after != 0)
    memcpy(first, after, sizeof first);
  bad += bad_after;
  if (!all_ok(comm, ran, &who)) {
    g_autofree char *msg = ran ? g_strdup_printf("rank %d: a timed round failed", who)
                               : g_strdup(error->message);
    return fail(b, comm, 1, msg);
  }

  /* Rank 0 reports the lowest rank with a wrong element. */
  double total = (double)bad;
  comm->allreduce(&total, 1, FALSE);
  double lowest = bad ? -comm->rank : -G_MAXINT;
  comm->allreduce(&lowest, 1, TRUE);
  double report[3] = {0};
  if (bad && comm->rank == (int)-lowest)
    memcpy(report, first, sizeof report);
  comm->allreduce(report, 3, FALSE);
  if (comm->rank == 0) {
    json_builder_set_member_name(b, "status");
    json_builder_add_string_value(b, total > 0 ? "wrong_result" : "ok");
    json_builder_set_member_name(b, "message");
    g_autofree char *msg =
      total > 0 ? g_strdup_printf("%.0f elements differ from the exact sums; the first on rank "
                                  "%.0f, element %.0f: %g where %g is exact",
                                  total, -lowest, report[0], report[1], report[2])
                : g_strdup("");
    json_builder_add_string_value(b, msg);
    json_builder_set_member_name(b, "mismatches");
    json_builder_add_int_value(b, (gint64)total);
    json_builder_set_member_name(b, "iters");
    json_builder_add_int_value(b, iters);
    add_samples(b, "samples_ns", mean);
    add_samples(b, "max_rank_ns", worst);
    print_json(b);
  }
  return 0;
}

int
ts_coll_measure(const TsCollRunArgs *a, const TsCollComm *comm, const TsCollEngine *e)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  int status = measure(a, comm, e, b);
  if (e->teardown)
    e->teardown(e->self);
  comm->finish();
  return status;
}
