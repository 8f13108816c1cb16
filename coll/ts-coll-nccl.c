/* ts-coll-nccl.c — collectives on NCCL, loaded at run time (ts-coll-nccl.h).
 *
 * NCCL's ABI is declared here rather than taken from nccl.h (which pulls in the CUDA runtime's
 * C++-leaning headers): the handful of calls below, the 128-byte unique id and the enum values
 * NCCL 2.x has kept since 2.0 (ncclSum 0; ncclFloat16 6, ncclFloat32 7; ncclBfloat16 9 since
 * 2.10). Buffers and the stream are the CUDA backend's, so the device, its context and its
 * errors are handled where every other GPU trial's are.
 */
#include "ts-coll-nccl.h"

#include <dlfcn.h>
#include <string.h>

#include "ts-backend.h"
#include "ts-coll-run.h"
#include "ts-cuda.h"

#define NCCL_UNIQUE_ID_BYTES 128
enum { NCCL_SUCCESS = 0, NCCL_SUM = 0, NCCL_F16 = 6, NCCL_F32 = 7, NCCL_BF16 = 9 };

typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} NcclId;
typedef void *NcclComm;

typedef struct {
  int (*get_version)(int *version);
  int (*get_unique_id)(NcclId *id);
  int (*comm_init_rank)(NcclComm *comm, int nranks, NcclId id, int rank);
  int (*comm_destroy)(NcclComm comm);
  int (*all_reduce)(const void *send, void *recv, size_t count, int type, int op, NcclComm comm,
                    void *stream);
  int (*all_gather)(const void *send, void *recv, size_t count, int type, NcclComm comm,
                    void *stream);
  int (*reduce_scatter)(const void *send, void *recv, size_t count, int type, int op,
                        NcclComm comm, void *stream);
  const char *(*error_string)(int result);
} Nccl;

static Nccl nccl;
static char *nccl_version;

static const struct {
  const char *symbol;
  gsize offset;
} symbols[] = {
  {"ncclGetVersion", G_STRUCT_OFFSET(Nccl, get_version)},
  {"ncclGetUniqueId", G_STRUCT_OFFSET(Nccl, get_unique_id)},
  {"ncclCommInitRank", G_STRUCT_OFFSET(Nccl, comm_init_rank)},
  {"ncclCommDestroy", G_STRUCT_OFFSET(Nccl, comm_destroy)},
  {"ncclAllReduce", G_STRUCT_OFFSET(Nccl, all_reduce)},
  {"ncclAllGather", G_STRUCT_OFFSET(Nccl, all_gather)},
  {"ncclReduceScatter", G_STRUCT_OFFSET(Nccl, reduce_scatter)},
  {"ncclGetErrorString", G_STRUCT_OFFSET(Nccl, error_string)},
};

gboolean
ts_coll_nccl_load(char **version, GError **error)
{
  if (nccl_version == NULL) {
    g_autofree char *why = NULL;
    void *lib = ts_cuda_dlopen("libnccl.so.2", &why);
    if (lib == NULL) {
      g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH,
                  "NCCL cannot be loaded: %s (NVIDIA's libnccl2 package, or the CUDA toolkit's "
                  "lib directory on LD_LIBRARY_PATH)", why);
      return FALSE;
    }
    Nccl table;
    for (guint i = 0; i < G_N_ELEMENTS(symbols); i++) {
      void *f = dlsym(lib, symbols[i].symbol);
      if (f == NULL) {
        g_set_error(error, TS_COLL_ERROR, TS_COLL_ERROR_LAUNCH,
                    "this libnccl.so.2 has no %s: NCCL 2.10 or newer is needed",
                    symbols[i].symbol);
        dlclose(lib);
        return FALSE;
      }
      memcpy((char *)&table + symbols[i].offset, &f, sizeof f);
    }
    int v = 0;
    table.get_version(&v);
    nccl = table;
    /* 2.9 and later: major * 10000 + minor * 100 + patch */
    nccl_version = g_strdup_printf("NCCL %d.%d.%d", v / 10000, v / 100 % 100, v % 100);
  }
  if (version)
    *version = g_strdup(nccl_version);
  return TRUE;
}

/* ---- a lone process ---- */

static void
alone_barrier(void)
{
}

static void
alone_bcast(void *buf, gsize bytes)
{
  (void)buf;
  (void)bytes;
}

static void
alone_allreduce(double *v, guint n, gboolean max)
{
  (void)v;
  (void)n;
  (void)max;
}

static char *
alone_hosts(void)
{
  g_autoptr(JsonNode) s = json_node_init_string(json_node_alloc(), g_get_host_name());
  g_autofree char *host = json_to_string(s, FALSE);
  return g_strdup_printf("[[%s, 1]]", host);
}

static void
alone_finish(void)
{
}

const TsCollComm *
ts_coll_comm_alone(void)
{
  static const TsCollComm comm = {
    .rank = 0,
    .size = 1,
    .barrier = alone_barrier,
    .bcast = alone_bcast,
    .allreduce = alone_allreduce,
    .hosts = alone_hosts,
    .finish = alone_finish,
  };
  return &comm;
}

/* ---- the engine ---- */

typedef struct {
  const TsCollComm *comm;
  TsBackend *cuda;
  NcclComm nc;
  TsCollWorkload w;
  TsBuffer *send, *recv;
  int type;
} Engine;

static gboolean
nccl_check(int r, const char *call, GError **error)
{
  if (r == NCCL_SUCCESS)
    return TRUE;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_LAUNCH, "%s failed: %s", call,
              nccl.error_string(r));
  return FALSE;
}

static char *
engine_device(gpointer self)
{
  Engine *e = self;
  return g_strdup(e->cuda ? ts_backend_describe(e->cuda)->name : "no CUDA device");
}

static gboolean
engine_setup(gpointer self, const TsCollWorkload *w, const void *input, GError **error)
{
  Engine *e = self;
  e->w = *w;
  e->type = w->dtype == TS_COLL_F32 ? NCCL_F32 : w->dtype == TS_COLL_BF16 ? NCCL_BF16 : NCCL_F16;
  gsize elem = ts_coll_dtype_size(w->dtype);
  gsize in = ts_coll_in_count(w) * elem, out = ts_coll_out_count(w) * elem;
  e->send = ts_backend_alloc(e->cuda, in, error);
  e->recv = e->send ? ts_backend_alloc(e->cuda, out, error) : NULL;
  if (e->recv == NULL || !ts_backend_upload(e->cuda, e->send, input, in, error))
    return FALSE;
  /* The communicator: rank 0's id to every rank, then every rank joins. */
  NcclId id = {{0}};
  if (e->comm->rank == 0 && !nccl_check(nccl.get_unique_id(&id), "ncclGetUniqueId", error))
    return FALSE;
  e->comm->bcast(&id, sizeof id);
  return nccl_check(nccl.comm_init_rank(&e->nc, e->comm->size, id, e->comm->rank),
                    "ncclCommInitRank", error);
}

static gboolean
engine_call(gpointer self, GError **error)
{
  Engine *e = self;
  void *s = GSIZE_TO_POINTER(ts_cuda_buffer_address(e->send));
  void *r = GSIZE_TO_POINTER(ts_cuda_buffer_address(e->recv));
  void *stream = ts_cuda_stream(e->cuda);
  switch (e->w.kind) {
  case TS_COLL_ALL_GATHER:
    return nccl_check(nccl.all_gather(s, r, ts_coll_in_count(&e->w), e->type, e->nc, stream),
                      "ncclAllGather", error);
  case TS_COLL_REDUCE_SCATTER:
    return nccl_check(nccl.reduce_scatter(s, r, ts_coll_out_count(&e->w), e->type, NCCL_SUM,
                                          e->nc, stream),
                      "ncclReduceScatter", error);
  case TS_COLL_ALL_REDUCE:
  default:
    return nccl_check(nccl.all_reduce(s, r, ts_coll_in_count(&e->w), e->type, NCCL_SUM, e->nc,
                                      stream),
                      "ncclAllReduce", error);
  }
}

static gboolean
engine_wait(gpointer self, GError **error)
{
  return ts_cuda_synchronize(((Engine *)self)->cuda, error);
}

static gboolean
engine_fill(gpointer self, guint8 byte, GError **error)
{
  Engine *e = self;
  gsize n = ts_buffer_size(e->recv);
  g_autofree guint8 *poison = g_malloc(n);
  memset(poison, byte, n);
  return ts_backend_upload(e->cuda, e->recv, poison, n, error);
}

static gboolean
engine_read(gpointer self, void *dst, GError **error)
{
  Engine *e = self;
  return ts_backend_download(e->cuda, dst, e->recv, ts_buffer_size(e->recv), error);
}

static void
engine_teardown(gpointer self)
{
  Engine *e = self;
  if (e->nc)
    nccl.comm_destroy(e->nc);
  if (e->send)
    ts_backend_buffer_free(e->cuda, e->send);
  if (e->recv)
    ts_backend_buffer_free(e->cuda, e->recv);
  g_clear_pointer(&e->cuda, ts_backend_free);
}

static const char *
engine_library(gpointer self)
{
  (void)self;
  return nccl_version;
}

static gboolean
engine_ready(gpointer self, GError **error)
{
  Engine *e = self;
  if (!ts_coll_nccl_load(NULL, error))
    return FALSE;
  e->cuda = ts_backend_open("cuda", error);
  return e->cuda != NULL;
}

int
ts_coll_nccl_run(const TsCollRunArgs *a, const TsCollComm *comm)
{
  Engine engine = {.comm = comm};
  const TsCollEngine e = {
    .library = engine_library,
    .ready = engine_ready,
    .device = engine_device,
    .setup = engine_setup,
    .call = engine_call,
    .wait = engine_wait,
    .fill_output = engine_fill,
    .read_output = engine_read,
    .teardown = engine_teardown,
    .self = &engine,
  };
  return ts_coll_measure(a, comm, &e);
}
