/* ts-coll-space.h — what a collective's schedule is on each backend, and how a point becomes the
 * launch that runs it.
 *
 * Backend "mpi" (Open MPI's tuned collective component): knob `algorithm`, the component's
 * algorithm names ("default" is its own decision rules), and for all_reduce `segment`, the
 * segment size in bytes of the segmented ring. Open MPI reads coll_tuned_use_dynamic_rules at
 * MPI_Init, so a point is run by one launch of its own, with
 * OMPI_MCA_coll_tuned_use_dynamic_rules=1 OMPI_MCA_coll_tuned_allreduce_algorithm=4 ... in the
 * ranks' environment.
 *
 * Backend "nccl": knobs `algorithm` (NCCL_ALGO: Ring; Tree for all_reduce), `protocol`
 * (NCCL_PROTO: LL, LL128, Simple), `channels` and `buffsize` ("default" and 0 leave NCCL's
 * choice), set in the environment of the launch's ranks.
 *
 * Constraints see RANKS, RANKS_POW2 (1 when RANKS is a power of two) and BYTES.
 */
#pragma once

#include <glib.h>

#include "ts-coll.h"
#include "ts-sched.h"

G_BEGIN_DECLS

/* Backends a collective can be tuned on ("mpi", "nccl"), NULL-terminated. */
const char *const *ts_coll_backends(void);
/* Whether name is one of them (a device row's backend says whether its trials are
 * collectives'). */
gboolean ts_coll_backend_known(const char *name);
/* The default space text of an op on a backend; NULL when the backend is unknown. */
const char *ts_coll_default_space(TsCollKind kind, const char *backend);
/* `text`, or the default space when NULL, parsed, with the default point's value for each knob
 * it lacks and the op's constraints added. Unknown knobs and algorithm names are
 * TS_COLL_ERROR_SPACE naming them and the ones there are. */
TsSchedSpace *ts_coll_space(TsCollKind kind, const char *backend, const char *text,
                            GError **error);
/* The environment the constraints see. */
TsSchedEnv *ts_coll_env(const TsCollWorkload *w);
/* The MCA settings a point needs, as environment assignments for its ranks
 * ("OMPI_MCA_coll_tuned_use_dynamic_rules=1", ...): Open MPI reads OMPI_MCA_* from each rank's
 * environment, which mpirun forwards and srun passes on, so any launcher works. */
GStrv ts_coll_mpi_env(TsCollKind kind, const TsSchedPoint *point, GError **error);
/* Backend "nccl": NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS and NCCL_MAX_NCHANNELS (both the
 * point's channels), NCCL_BUFFSIZE; knobs at "default" or 0 set nothing. NCCL reads several of
 * them once a process, so here too a point is a launch of its own. */
GStrv ts_coll_nccl_env(TsCollKind kind, const TsSchedPoint *point, GError **error);
/* The environment of a point on either backend. */
GStrv ts_coll_env_for(const char *backend, TsCollKind kind, const TsSchedPoint *point,
                      GError **error);

G_END_DECLS
