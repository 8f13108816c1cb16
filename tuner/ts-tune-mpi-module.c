/* ts-tune-mpi-module.c — libtessera-mpi.so, the MPI side of distributed tuning (ts-tune-mpi.h),
 * loaded by ts-tune-mpi.c. Messages are text: a server's hello ("host\tdevice"), a request
 * ("timeout_s\n" then the worker's request line), the worker's answer line, and an empty stop.
 * Errors are G_IO_ERROR_FAILED: the tools report them as machine failures (exit 3). */
#include <gio/gio.h>
#include <gmodule.h>
#include <json-glib/json-glib.h>
#include <mpi.h>
#include <string.h>

#include "ts-tune-mpi-module.h"

enum { TAG_HELLO = 1, TAG_REQUEST, TAG_ANSWER, TAG_STOP };

static int world_rank, world_size;
static gboolean initialised;
static TsTuneMpiHost host_api;

typedef struct {
  TsTuneFarm farm;
  gboolean hellos_read;
} Farm;

static Farm the_farm;

static gboolean
mpi_init(const TsTuneMpiHost *host, GError **error)
{
  (void)error;
  host_api = *host;
  int provided = 0;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  initialised = TRUE;
  return TRUE;
}

static int
mpi_rank(void)
{
  return world_rank;
}

static int
mpi_size(void)
{
  return initialised ? world_size : 1;
}

/* Waits for a message without spinning: Open MPI's blocking calls poll a core at full speed, and
 * on a machine whose ranks take turns measuring (ts-measure-lock.h) a waiting rank would steal
 * it from the measurement (or its hyperthread sibling). A message is noticed within 2 ms,
 * nothing beside trials that take tens of milliseconds and more. */
static void
probe(int source, int tag, MPI_Status *st)
{
  gulong sleep_us = 20;
  for (;;) {
    int flag = 0;
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, st);
    if (flag)
      return;
    g_usleep(sleep_us);
    sleep_us = MIN(sleep_us * 2, 2000);
  }
}

/* The next message with this tag from source (or any), as a string; *from gets its sender. */
static char *
recv_text(int source, int tag, int *from)
{
  MPI_Status st;
  probe(source, tag, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  char *text = g_malloc((gsize)n + 1);
  MPI_Recv(text, n, MPI_CHAR, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  text[n] = '\0';
  if (from)
    *from = st.MPI_SOURCE;
  return text;
}

static void
send_text(int dest, int tag, const char *text)
{
  MPI_Send(text, (int)strlen(text), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
}

static int
mpi_serve(const char *worker_exe, const char *device)
{
  g_autofree char *hello = g_strdup_printf("%s\t%s", g_get_host_name(), device);
  send_text(0, TAG_HELLO, hello);
  TsTuneWorker *worker = host_api.worker_new(worker_exe);
  for (;;) {
    MPI_Status st;
    probe(0, MPI_ANY_TAG, &st);
    g_autofree char *msg = recv_text(0, st.MPI_TAG, NULL);
    if (st.MPI_TAG == TAG_STOP) {
      host_api.worker_free(worker);
      return 0;
    }
    char *request = strchr(msg, '\n');
    g_return_val_if_fail(st.MPI_TAG == TAG_REQUEST && request != NULL, 1);
    *request++ = '\0';
    double timeout_s = g_ascii_strtod(msg, NULL);
    g_autoptr(GError) error = NULL;
    g_autofree char *answer = host_api.worker_answer(worker, request, timeout_s, &error);
    if (answer == NULL) {
      /* No worker could start here: rank 0's tune fails with the reason, as it would locally. */
      g_autoptr(JsonNode) why = json_node_init_string(json_node_alloc(), error->message);
      g_autofree char *text = json_to_string(why, FALSE);
      answer = g_strdup_printf("{\"refused\": %s}", text);
    }
    send_text(0, TAG_ANSWER, answer);
  }
}

static gboolean
farm_send(gpointer data, guint remote, const char *request, double timeout_s, GError **error)
{
  (void)data;
  (void)error;
  char t[G_ASCII_DTOSTR_BUF_SIZE];
  g_autofree char *msg = g_strdup_printf("%s\n%s", g_ascii_dtostr(t, sizeof t, timeout_s),
                                         request);
  send_text((int)remote + 1, TAG_REQUEST, msg);
  return TRUE;
}

static gboolean
farm_ready(gpointer data)
{
  (void)data;
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, TAG_ANSWER, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

static char *
farm_receive(gpointer data, guint *remote, GError **error)
{
  (void)data;
  (void)error;
  int from = 0;
  char *answer = recv_text(MPI_ANY_SOURCE, TAG_ANSWER, &from);
  *remote = (guint)(from - 1);
  return answer;
}

static gint
farm_rank_of(gpointer data, guint remote)
{
  (void)data;
  return (gint)remote + 1;
}

static const TsTuneFarm *
mpi_farm(const char *device, GError **error)
{
  g_return_val_if_fail(initialised && world_rank == 0, NULL);
  if (!the_farm.hellos_read) {
    g_autoptr(GString) differ = g_string_new(NULL);
    for (int r = 1; r < world_size; r++) {
      g_autofree char *hello = recv_text(r, TAG_HELLO, NULL);
      char *theirs = strchr(hello, '\t');
      theirs = theirs ? theirs + 1 : hello;
      if (strcmp(theirs, device) != 0)
        g_string_append_printf(differ, "%srank %d on %.*s has %s", differ->len ? "; " : "", r,
                               (int)(theirs - hello - 1), hello, theirs);
    }
    the_farm.hellos_read = TRUE;
    the_farm.farm = (TsTuneFarm){
      .n_remote = (guint)(world_size - 1),
      .local_rank = 0,
      .send = farm_send,
      .ready = farm_ready,
      .receive = farm_receive,
      .rank_of = farm_rank_of,
    };
    if (differ->len) {
      the_farm.farm.n_remote = 0;
      g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                  "the ranks do not all have rank 0's device (%s): %s; their timings cannot be "
                  "ranked together, so run one mpirun per kind of device", device, differ->str);
      return NULL;
    }
  }
  if (the_farm.farm.n_remote == 0 && world_size > 1) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                "the ranks do not all have rank 0's device (%s)", device);
    return NULL;
  }
  return &the_farm.farm;
}

static void
mpi_finalize(void)
{
  if (!initialised)
    return;
  if (world_rank == 0) {
    /* Servers whose hello was never read (rank 0 failed before it tuned) are stopped too. */
    for (int r = 1; r < world_size; r++) {
      if (!the_farm.hellos_read)
        g_free(recv_text(r, TAG_HELLO, NULL));
      send_text(r, TAG_STOP, "");
    }
  }
  MPI_Finalize();
  initialised = FALSE;
}

static int
mpi_coll_run(const TsCollRunArgs *args)
{
  g_return_val_if_fail(initialised, 3);
  int rc = ts_coll_mpi_run(args);
  initialised = FALSE;
  return rc;
}

static const TsCollComm *comm_inner;

static void
comm_finish(void)
{
  comm_inner->finish();
  initialised = FALSE;
}

static const TsCollComm *
mpi_coll_comm(void)
{
  static TsCollComm comm;
  g_return_val_if_fail(initialised, NULL);
  comm_inner = ts_coll_mpi_comm();
  comm = *comm_inner;
  comm.finish = comm_finish;
  return &comm;
}

G_MODULE_EXPORT const TsTuneMpiModule ts_tune_mpi_module = {
  .abi = TS_TUNE_MPI_ABI,
  .init = mpi_init,
  .rank = mpi_rank,
  .size = mpi_size,
  .serve = mpi_serve,
  .farm = mpi_farm,
  .finalize = mpi_finalize,
  .coll_run = mpi_coll_run,
  .coll_comm = mpi_coll_comm,
};
