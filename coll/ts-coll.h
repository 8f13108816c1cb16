/* ts-coll.h — collectives as tunable ops: all_reduce, all_gather and reduce_scatter (sum) over
 * the ranks of an MPI job, in f32, bf16 or f16.
 *
 * A collective workload is (op, BYTES, RANKS, dtype). BYTES is what each rank contributes: its
 * input buffer. all_reduce leaves BYTES on every rank, all_gather BYTES x RANKS, reduce_scatter
 * BYTES / RANKS. Times and bandwidths follow nccl-tests (its PERFORMANCE.md): the time of one
 * collective is the mean of back-to-back calls averaged over the ranks; algorithm bandwidth is
 * S / time with S the larger buffer of a rank (BYTES, or BYTES x RANKS for all_gather); bus
 * bandwidth scales it by what each link must carry in the best algorithm, 2(n-1)/n for
 * all_reduce and (n-1)/n for the other two, so it reads against the hardware's link speed
 * whatever the rank count.
 *
 * Inputs are small integers (-2..2), chosen so that every partial sum, in any order an
 * algorithm adds them, is exact in each dtype: outputs are checked for equality with the exact
 * sums, not within a tolerance. That bounds the ranks (TS_COLL_MAX_RANKS).
 *
 * GLib only: the MPI module that runs the collectives (ts-coll-mpi.c) links it.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_COLL_ERROR (ts_coll_error_quark())
GQuark ts_coll_error_quark(void);

typedef enum {
  TS_COLL_ERROR_UNKNOWN_OP,
  TS_COLL_ERROR_DTYPE,
  TS_COLL_ERROR_SHAPE,  /* BYTES or RANKS missing, not a multiple, out of range */
  TS_COLL_ERROR_SPACE,  /* a space or point the backend cannot run */
  TS_COLL_ERROR_LAUNCH, /* the launcher (mpirun) could not start the ranks */
} TsCollError;

typedef enum { TS_COLL_ALL_REDUCE, TS_COLL_ALL_GATHER, TS_COLL_REDUCE_SCATTER } TsCollKind;
typedef enum { TS_COLL_F32, TS_COLL_BF16, TS_COLL_F16 } TsCollDtype;

/* |sum| of RANKS inputs stays <= 256, the largest run of integers bf16 holds exactly. */
#define TS_COLL_MAX_RANKS 128

/* The ops, in catalog order; NULL past the end or for an unknown name. */
const char *ts_coll_nth(guint i);
gboolean ts_coll_lookup(const char *name, TsCollKind *kind);
const char *ts_coll_kind_name(TsCollKind kind);
const char *ts_coll_summary(TsCollKind kind);
const char *ts_coll_dtype_name(TsCollDtype dtype);
gsize ts_coll_dtype_size(TsCollDtype dtype);

typedef struct {
  TsCollKind kind;
  TsCollDtype dtype;
  guint64 bytes; /* per rank, input */
  guint ranks;
} TsCollWorkload;

/* Parses and checks a workload: op name, shape "BYTES=N" or "BYTES=N,RANKS=R" (RANKS also from
 * `ranks` when the shape lacks it; 0: required in the shape), dtype "f32", "bf16" or "f16".
 * Errors name what was wrong: an unknown op or dtype, BYTES not a multiple of the element (or,
 * for reduce_scatter, of RANKS elements), RANKS out of 1..TS_COLL_MAX_RANKS, a RANKS in the
 * shape that differs from `ranks`. */
gboolean ts_coll_workload_parse(TsCollWorkload *w, const char *op, const char *shape,
                                const char *dtype, guint ranks, GError **error);
/* A size in bytes: "64", or with a binary suffix "4K", "16M", "1G". */
gboolean ts_coll_parse_bytes(const char *text, guint64 *bytes);
/* Canonical shape "BYTES=1048576,RANKS=4" (part of the schedule-cache key). */
char *ts_coll_workload_shape(const TsCollWorkload *w);
/* "all_reduce BYTES=1048576,RANKS=4 bf16" */
char *ts_coll_workload_describe(const TsCollWorkload *w);

guint64 ts_coll_in_count(const TsCollWorkload *w);  /* elements each rank sends */
guint64 ts_coll_out_count(const TsCollWorkload *w); /* elements each rank receives */
/* nccl-tests' S (bytes) and bus-bandwidth factor. */
double ts_coll_size_bytes(const TsCollWorkload *w);
double ts_coll_bus_factor(const TsCollWorkload *w);
/* Algorithm and bus bandwidth (bytes/s) of a per-call time in ns. */
double ts_coll_algbw(const TsCollWorkload *w, double ns);
double ts_coll_busbw(const TsCollWorkload *w, double ns);

/* Element i of `rank`'s input for `seed`: an integer in -2..2. */
int ts_coll_input(guint64 seed, guint rank, guint64 i);
/* Element j of `rank`'s exact output. */
int ts_coll_expected(const TsCollWorkload *w, guint64 seed, guint rank, guint64 j);

/* Open MPI's tuned component: the MCA parameter that forces the op's algorithm
 * ("coll_tuned_allreduce_algorithm"), and the algorithm named by each of its values (0:
 * "default", the component's own decision rules; NULL past the last), as Open MPI 4.1 numbers
 * them. The MPI side checks the names against the library's own. */
const char *ts_coll_mpi_param(TsCollKind kind);
const char *ts_coll_mpi_algorithm(TsCollKind kind, guint value);

/* Stores v (an exact small integer) as element i of a dtype buffer, and reads it back. */
void ts_coll_store(TsCollDtype dtype, void *buf, guint64 i, int v);
double ts_coll_load(TsCollDtype dtype, const void *buf, guint64 i);

G_END_DECLS
