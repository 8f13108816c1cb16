/* ts-coll-mpi.c — a collective measured on every rank of the job (ts-coll-mpi.h). */
#include "ts-coll-mpi.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "ts-coll.h"
#include "ts-half.h"

static void
sum_bf16(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; i++)
    b[i] = ts_f32_to_bf16(ts_bf16_to_f32(a[i]) + ts_bf16_to_f32(b[i]));
}

static void
sum_f16(void *in, void *inout, int *len, MPI_Datatype *type)
{
  (void)type;
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; i++)
    b[i] = ts_f32_to_f16(ts_f16_to_f32(a[i]) + ts_f16_to_f32(b[i]));
}

typedef struct {
  TsCollWorkload w;
  void *send, *recv;
  int *counts; /* reduce_scatter's receive counts, one a rank */
  MPI_Datatype type;
  MPI_Op op;
} Coll;

static int
coll_call(Coll *c)
{
  int in = (int)ts_coll_in_count(&c->w);
  switch (c->w.kind) {
  case TS_COLL_ALL_GATHER:
    return MPI_Allgather(c->send, in, c->type, c->recv, in, c->type, MPI_COMM_WORLD);
  case TS_COLL_REDUCE_SCATTER:
    /* MPI_Reduce_scatter, not _block: it is the call coll_tuned_reduce_scatter_algorithm
     * forces. */
    return MPI_Reduce_scatter(c->send, c->recv, c->counts, c->type, c->op, MPI_COMM_WORLD);
  case TS_COLL_ALL_REDUCE:
  default:
    return MPI_Allreduce(c->send, c->recv, in, c->type, c->op, MPI_COMM_WORLD);
  }
}

/* Elements of this rank's output that differ from the exact result; the first one's index,
 * value and expected value. */
static guint64
coll_check(Coll *c, guint64 seed, int rank, double first[3])
{
  guint64 bad = 0, n = ts_coll_out_count(&c->w);
  for (guint64 j = 0; j < n; j++) {
    double got = ts_coll_load(c->w.dtype, c->recv, j);
    int want = ts_coll_expected(&c->w, seed, (guint)rank, j);
    if (got != (double)want) {
      if (bad++ == 0) {
        first[0] = (double)j;
        first[1] = got;
        first[2] = want;
      }
    }
  }
  return bad;
}

/* Every rank's host name, and on rank 0 the hosts in order of first rank with their counts. */
static JsonNode *
gather_hosts(int rank, int size)
{
  char mine[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(mine, &len);
  char *all = rank == 0 ? g_malloc0((gsize)size * MPI_MAX_PROCESSOR_NAME) : NULL;
  MPI_Gather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
             MPI_COMM_WORLD);
  if (rank != 0)
    return NULL;
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_array(b);
  for (int r = 0; r < size; r++) {
    const char *h = all + (gsize)r * MPI_MAX_PROCESSOR_NAME;
    gboolean seen = FALSE;
    for (int q = 0; q < r && !seen; q++)
      seen = strncmp(h, all + (gsize)q * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME) == 0;
    if (seen)
      continue;
    int count = 0;
    for (int q = r; q < size; q++)
      count += strncmp(h, all + (gsize)q * MPI_MAX_PROCESSOR_NAME, MPI_MAX_PROCESSOR_NAME) == 0;
    json_builder_begin_array(b);
    json_builder_add_string_value(b, h);
    json_builder_add_int_value(b, count);
    json_builder_end_array(b);
  }
  json_builder_end_array(b);
  g_free(all);
  return json_builder_get_root(b);
}

static char *
cpu_model(void)
{
  g_autofree char *text = NULL;
  if (g_file_get_contents("/proc/cpuinfo", &text, NULL, NULL))
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1
                                                                      : NULL)
      if (g_str_has_prefix(line, "model name")) {
        char *colon = strchr(line, ':');
        char *end = strchr(line, '\n');
        if (colon && (!end || colon < end))
          return g_strstrip(g_strndup(colon + 1, end ? (gsize)(end - colon - 1)
                                                     : strlen(colon + 1)));
      }
  return g_strdup("unknown CPU");
}

/* What Open MPI's tuned component was told to run, read back through MPI_T: proof that the
 * launch's --mca settings reached the library, in its own names. */
static void
add_forced(JsonBuilder *b, TsCollKind kind)
{
  int provided;
  json_builder_set_member_name(b, "forced");
  json_builder_begin_object(b);
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    json_builder_end_object(b);
    return;
  }
  g_autofree char *seg = g_strdup_printf("%s_segmentsize", ts_coll_mpi_param(kind));
  const char *names[] = {"coll_tuned_use_dynamic_rules", ts_coll_mpi_param(kind), seg};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    int idx, count, value = 0, verbosity, bind, scope;
    char name[256], desc[16];
    int name_len = sizeof name, desc_len = sizeof desc;
    MPI_Datatype type;
    MPI_T_enum en;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_get_index(names[i], &idx) != MPI_SUCCESS ||
        MPI_T_cvar_get_info(idx, name, &name_len, &verbosity, &type, &en, desc, &desc_len, &bind,
                            &scope) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
      continue;
    if (MPI_T_cvar_read(h, &value) == MPI_SUCCESS) {
      json_builder_set_member_name(b, names[i]);
      char item[128];
      int item_len = sizeof item, item_value = 0, n_items = 0;
      char en_name[128];
      int en_len = sizeof en_name;
      gboolean named = FALSE;
      /* The bool's enum names false/true; only the algorithm's names are worth reporting. */
      if (i == 1 && en != MPI_T_ENUM_NULL &&
          MPI_T_enum_get_info(en, &n_items, en_name, &en_len) == MPI_SUCCESS)
        for (int k = 0; k < n_items && !named; k++) {
          item_len = sizeof item;
          if (MPI_T_enum_get_item(en, k, &item_value, item, &item_len) == MPI_SUCCESS &&
              item_value == value) {
            json_builder_add_string_value(b, item);
            named = TRUE;
          }
        }
      if (!named)
        json_builder_add_int_value(b, value);
    }
    MPI_T_cvar_handle_free(&h);
  }
  MPI_T_finalize();
  json_builder_end_object(b);
}

static void
print_json(JsonBuilder *b)
{
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  g_autofree char *text = json_to_string(root, FALSE);
  g_print("%s\n", text);
}

static int
finish(int status)
{
  MPI_Finalize();
  return status;
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

/* The per-call time of one round of `iters` back-to-back calls: this rank's, in seconds. */
static double
timed_round(Coll *c, guint iters)
{
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (guint i = 0; i < iters; i++)
    coll_call(c);
  return (MPI_Wtime() - t0) / iters;
}

int
ts_coll_mpi_run(const TsCollRunArgs *a)
{
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  Coll c = {0};
  g_autoptr(GError) error = NULL;
  if (!a->probe &&
      !ts_coll_workload_parse(&c.w, a->op, a->shape, a->dtype, (guint)size, &error)) {
    if (rank == 0) {
      json_builder_set_member_name(b, "error");
      json_builder_add_string_value(b, error->message);
      json_builder_end_object(b);
      print_json(b);
    }
    return finish(2);
  }
  g_autoptr(JsonNode) hosts = gather_hosts(rank, size);
  if (rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
      *nl = '\0';
    g_autofree char *cpu = cpu_model();
    json_builder_set_member_name(b, "ranks");
    json_builder_add_int_value(b, size);
    json_builder_set_member_name(b, "hosts");
    json_builder_add_value(b, g_steal_pointer(&hosts));
    json_builder_set_member_name(b, "library");
    json_builder_add_string_value(b, g_strstrip(lib));
    json_builder_set_member_name(b, "cpu");
    json_builder_add_string_value(b, cpu);
    add_forced(b, a->probe ? TS_COLL_ALL_REDUCE : c.w.kind);
  }
  if (a->probe) {
    if (rank == 0) {
      json_builder_end_object(b);
      print_json(b);
    }
    return finish(0);
  }

  gsize elem = ts_coll_dtype_size(c.w.dtype);
  guint64 in = ts_coll_in_count(&c.w), out = ts_coll_out_count(&c.w);
  c.send = g_aligned_alloc(in, elem, 64);
  c.recv = g_aligned_alloc(out, elem, 64);
  c.counts = g_new(int, size);
  for (int r = 0; r < size; r++)
    c.counts[r] = (int)out;
  for (guint64 i = 0; i < in; i++)
    ts_coll_store(c.w.dtype, c.send, i, ts_coll_input(a->seed, (guint)rank, i));
  if (c.w.dtype == TS_COLL_F32) {
    c.type = MPI_FLOAT;
    c.op = MPI_SUM;
  } else {
    c.type = MPI_UINT16_T;
    MPI_Op_create(c.w.dtype == TS_COLL_BF16 ? sum_bf16 : sum_f16, 1, &c.op);
  }

  /* Checked once before timing (outputs poisoned with NaN first, so an element no algorithm
   * wrote fails) and once after, on what the last timed call left. */
  double first[3] = {0};
  memset(c.recv, 0xff, out * elem);
  coll_call(&c);
  /* The tests' stand-in for a broken algorithm: with TESSERA_TEST_OPS=1 (which also shows the
   * kernel tests' faulty ops), the rank TESSERA_TEST_COLL_CORRUPT names spoils its first
   * element. */
  const char *corrupt = g_getenv("TESSERA_TEST_COLL_CORRUPT");
  if (corrupt && g_strcmp0(g_getenv("TESSERA_TEST_OPS"), "1") == 0 && atoi(corrupt) == rank)
    ts_coll_store(c.w.dtype, c.recv, 0, 100);
  guint64 bad = coll_check(&c, a->seed, rank, first);
  for (guint i = 0; i < a->warmup; i++)
    coll_call(&c);
  /* Rounds long enough to time at the clock's grain, the same count on every rank. */
  double one = timed_round(&c, 1), slowest = 0;
  MPI_Allreduce(&one, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  guint iters = (guint)CLAMP(ceil(a->round_ms * 1e-3 / MAX(slowest, 1e-9)), 1, 100000);
  g_autoptr(GArray) mean = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) worst = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint s = 0; s < MAX(a->samples, 1u); s++) {
    double t = timed_round(&c, iters), sum = 0, max = 0;
    MPI_Allreduce(&t, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double ns = sum / size * 1e9, max_ns = max * 1e9;
    g_array_append_val(mean, ns);
    g_array_append_val(worst, max_ns);
  }
  double after[3] = {0};
  guint64 bad_after = coll_check(&c, a->seed, rank, after);
  if (bad == 0 && bad_after != 0)
    memcpy(first, after, sizeof first);
  bad += bad_after;

  /* Rank 0 reports the first rank with a wrong element. */
  double mine[5] = {(double)bad, rank, first[0], first[1], first[2]};
  double *all = rank == 0 ? g_new(double, 5 * (gsize)size) : NULL;
  MPI_Gather(mine, 5, MPI_DOUBLE, all, 5, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double total = 0;
    int who = -1;
    for (int r = 0; r < size; r++) {
      total += all[5 * r];
      if (who < 0 && all[5 * r] > 0)
        who = r;
    }
    json_builder_set_member_name(b, "status");
    json_builder_add_string_value(b, total > 0 ? "wrong_result" : "ok");
    json_builder_set_member_name(b, "message");
    if (total > 0) {
      g_autofree char *msg =
        g_strdup_printf("%.0f elements differ from the exact sums; the first on rank %d, "
                        "element %.0f: %g where %g is exact", total, who, all[5 * who + 2],
                        all[5 * who + 3], all[5 * who + 4]);
      json_builder_add_string_value(b, msg);
    } else {
      json_builder_add_string_value(b, "");
    }
    json_builder_set_member_name(b, "mismatches");
    json_builder_add_int_value(b, (gint64)total);
    json_builder_set_member_name(b, "iters");
    json_builder_add_int_value(b, iters);
    add_samples(b, "samples_ns", mean);
    add_samples(b, "max_rank_ns", worst);
    json_builder_end_object(b);
    print_json(b);
  }
  g_free(all);
  if (c.op != MPI_SUM)
    MPI_Op_free(&c.op);
  g_aligned_free(c.send);
  g_aligned_free(c.recv);
  g_free(c.counts);
  return finish(0);
}
