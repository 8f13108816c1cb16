/* ts-coll-mpi.c — a collective measured on every rank of the job (ts-coll-mpi.h). */
#include "ts-coll-mpi.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "ts-coll-run.h"
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

static gboolean
coll_setup(gpointer self, const TsCollWorkload *w, const void *input, GError **error)
{
  (void)error;
  Coll *c = self;
  int size;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  c->w = *w;
  gsize elem = ts_coll_dtype_size(w->dtype);
  guint64 in = ts_coll_in_count(w), out = ts_coll_out_count(w);
  c->send = g_aligned_alloc(in, elem, 64);
  c->recv = g_aligned_alloc(out, elem, 64);
  memcpy(c->send, input, in * elem);
  c->counts = g_new(int, size);
  for (int r = 0; r < size; r++)
    c->counts[r] = (int)out;
  if (w->dtype == TS_COLL_F32) {
    c->type = MPI_FLOAT;
    c->op = MPI_SUM;
  } else {
    c->type = MPI_UINT16_T;
    MPI_Op_create(w->dtype == TS_COLL_BF16 ? sum_bf16 : sum_f16, 1, &c->op);
  }
  return TRUE;
}

static gboolean
coll_call(gpointer self, GError **error)
{
  (void)error; /* MPI's default handler aborts the job on an error */
  Coll *c = self;
  int in = (int)ts_coll_in_count(&c->w);
  switch (c->w.kind) {
  case TS_COLL_ALL_GATHER:
    MPI_Allgather(c->send, in, c->type, c->recv, in, c->type, MPI_COMM_WORLD);
    break;
  case TS_COLL_REDUCE_SCATTER:
    /* MPI_Reduce_scatter, not _block: it is the call coll_tuned_reduce_scatter_algorithm
     * forces. */
    MPI_Reduce_scatter(c->send, c->recv, c->counts, c->type, c->op, MPI_COMM_WORLD);
    break;
  case TS_COLL_ALL_REDUCE:
  default:
    MPI_Allreduce(c->send, c->recv, in, c->type, c->op, MPI_COMM_WORLD);
    break;
  }
  return TRUE;
}

static gboolean
coll_fill(gpointer self, guint8 byte, GError **error)
{
  (void)error;
  Coll *c = self;
  memset(c->recv, byte, ts_coll_out_count(&c->w) * ts_coll_dtype_size(c->w.dtype));
  return TRUE;
}

static gboolean
coll_read(gpointer self, void *dst, GError **error)
{
  (void)error;
  Coll *c = self;
  memcpy(dst, c->recv, ts_coll_out_count(&c->w) * ts_coll_dtype_size(c->w.dtype));
  return TRUE;
}

static void
coll_teardown(gpointer self)
{
  Coll *c = self;
  if (c->op != MPI_OP_NULL && c->op != MPI_SUM)
    MPI_Op_free(&c->op);
  g_aligned_free(c->send);
  g_aligned_free(c->recv);
  g_free(c->counts);
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

typedef struct {
  Coll coll;
  TsCollKind kind;
  char library[MPI_MAX_LIBRARY_VERSION_STRING];
} Engine;

static const char *
engine_library(gpointer self)
{
  return ((Engine *)self)->library;
}

static char *
engine_device(gpointer self)
{
  (void)self;
  return cpu_model();
}

static void
engine_describe(gpointer self, JsonBuilder *b)
{
  add_forced(b, ((Engine *)self)->kind);
}

int
ts_coll_mpi_run(const TsCollRunArgs *a)
{
  Engine engine = {.coll = {.op = MPI_OP_NULL}};
  int len = 0;
  MPI_Get_library_version(engine.library, &len);
  char *nl = strchr(engine.library, '\n');
  if (nl)
    *nl = '\0';
  g_strstrip(engine.library);
  /* The probe reports all_reduce's settings: any op's would say whether they reach the ranks. */
  if (a->probe || !ts_coll_lookup(a->op, &engine.kind))
    engine.kind = TS_COLL_ALL_REDUCE;
  const TsCollEngine e = {
    .library = engine_library,
    .device = engine_device,
    .setup = coll_setup,
    .call = coll_call,
    .fill_output = coll_fill,
    .read_output = coll_read,
    .describe = engine_describe,
    .teardown = coll_teardown,
    .self = &engine,
  };
  return ts_coll_measure(a, ts_coll_mpi_comm(), &e);
}

/* ---- the job's ranks, for a measurement that is not MPI's own (NCCL) ---- */

static void
comm_barrier(void)
{
  MPI_Barrier(MPI_COMM_WORLD);
}

static void
comm_bcast(void *buf, gsize bytes)
{
  MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void
comm_allreduce(double *v, guint n, gboolean max)
{
  MPI_Allreduce(MPI_IN_PLACE, v, (int)n, MPI_DOUBLE, max ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD);
}

static char *
comm_hosts(void)
{
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  g_autoptr(JsonNode) hosts = gather_hosts(rank, size);
  return hosts ? json_to_string(hosts, FALSE) : NULL;
}

static void
comm_finish(void)
{
  MPI_Finalize();
}

const TsCollComm *
ts_coll_mpi_comm(void)
{
  static TsCollComm comm;
  MPI_Comm_rank(MPI_COMM_WORLD, &comm.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &comm.size);
  comm.barrier = comm_barrier;
  comm.bcast = comm_bcast;
  comm.allreduce = comm_allreduce;
  comm.hosts = comm_hosts;
  comm.finish = comm_finish;
  return &comm;
}
