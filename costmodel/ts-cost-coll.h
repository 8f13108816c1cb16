/* ts-cost-coll.h — the α–β(–γ) model of collectives (Hockney's; the per-algorithm terms follow
 * Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication Operations in
 * MPICH", 2005).
 *
 * An algorithm at n ranks on a per-rank input of S bytes costs
 *     t = steps x α  +  link_bytes x β  +  reduced_bytes x γ
 * α the latency of one message step, β the time a byte takes over the busiest link, γ the time
 * a byte takes to be added (zero where the reduction is far faster than the links, as on GPUs).
 * ts_cost_coll_terms gives the three counts of each algorithm; α, β and γ come from a machine:
 * fitted to measured trials (ts_cost_coll_fit), or set from a datasheet for one that cannot run
 * here (ts_cost_coll_link_preset). The model then predicts sizes and rank counts never run.
 */
#pragma once

#include <glib.h>

#include "ts-coll.h"

G_BEGIN_DECLS

typedef struct {
  double alpha_s;        /* per message step */
  double beta_s_per_b;   /* per byte over the busiest link */
  double gamma_s_per_b;  /* per byte reduced */
  double base_s;         /* per call, whatever the algorithm (a launch; 0 for MPI) */
} TsCollLinks;

/* The counts of `algorithm` (Open MPI's names, plus NCCL's "tree") for the op at n ranks and
 * `bytes` per rank (segment: the segmented ring's segment size, 0 otherwise). FALSE for an
 * algorithm without a model ("default": the library's own choice, which varies with size). */
gboolean ts_cost_coll_terms(TsCollKind kind, const char *algorithm, guint n, double bytes,
                            double segment, double *steps, double *link_bytes,
                            double *reduced_bytes);
/* Predicted seconds; NAN for an algorithm without a model. */
double ts_cost_coll_predict(const TsCollLinks *links, TsCollKind kind, const char *algorithm,
                            guint n, double bytes, double segment);

typedef struct {
  TsCollKind kind;
  const char *algorithm;
  guint ranks;
  double bytes, segment;
  double seconds;
} TsCollObservation;

/* α, β and γ, none negative, minimising the squared relative errors over the observations
 * (those of algorithms without a model are skipped); *n_used (optional) gets how many counted
 * and *median_rel_err (optional) their median |predicted - measured| / measured. FALSE with an
 * error naming the need when fewer than 3 observations have a model. */
gboolean ts_cost_coll_fit(const TsCollObservation *obs, guint n_obs, TsCollLinks *links,
                          guint *n_used, double *median_rel_err, GError **error);

/* Machines that cannot run here, from published figures (docs/collectives.md cites them):
 * "h100-nvlink" (NVLink 4 through NVSwitch, 450 GB/s a direction per GPU) and "gb200-nvl72"
 * (NVLink 5, 900 GB/s a direction per GPU, 72 GPUs in one NVLink domain), with NCCL's own
 * latency constants for a ring over NVLink (Simple protocol). NULL name: the list. */
gboolean ts_cost_coll_link_preset(const char *name, TsCollLinks *links, const char **about);
const char *const *ts_cost_coll_link_presets(void);

G_END_DECLS
