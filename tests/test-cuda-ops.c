/* test-cuda-ops.c — the spine on the GPU: every GPU op × every point of its default CUDA space
 * × each 16-bit dtype, at odd shapes (edge tiles, tails, partial rows), lowered, compiled with
 * NVRTC for the device, run on fresh random inputs with poisoned outputs and verified against
 * the f64 reference. Needs an NVIDIA GPU: exits 77 (skip) with the reason when there is none. */
#include <glib.h>
#include <stdio.h>
#include <string.h>

#include "test-util.h"
#include "ts-op.h"

static TsBackend *backend;

typedef struct {
  const char *op;
  const char *shape;
  const char *dtype;
} GpuCase;

/* Odd sizes: partial CTA tiles in M and N, K and row lengths not multiples of the tile. gemm
 * needs K and N to be multiples of the 16-byte vector (8 elements). */
static const GpuCase cases[] = {
  {"gemm", "M=200,N=136,K=88", "bf16"},
  {"gemm", "M=257,N=320,K=520", "f16"},
  {"flash_attention", "B=1,H=3,S=77,D=64", "bf16"},
  {"flash_attention_causal", "B=1,H=3,S=77,D=64", "bf16"},
  {"flash_attention", "B=2,H=1,S=200,D=128", "f16"},
  {"flash_attention_causal", "B=2,H=1,S=200,D=128", "bf16"},
  {"saxpy", "N=100003", "bf16"},
  {"reduce_sum", "M=37,N=1000", "bf16"},
  {"softmax_safe", "M=37,N=1000", "bf16"},
  {"softmax_safe", "M=5,N=8200", "f16"},
  {"layernorm_safe", "M=37,N=1000", "bf16"},
  {"layernorm_safe", "M=5,N=8200", "f32"},
  {"rmsnorm_safe", "M=37,N=1000", "bf16"},
};

static void
test_space(gconstpointer data)
{
  const GpuCase *c = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(c->op, c->shape, c->dtype, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedSpace) space = ts_op_instance_space(inst, "cuda", NULL, &error);
  g_assert_no_error(error);
  g_autoptr(TsSchedEnv) env = ts_op_instance_env(inst, ts_backend_describe(backend));
  g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
  TsRunOptions opt;
  ts_run_options_init(&opt);
  opt.n_warmup = 0;
  opt.min_samples = 1;
  opt.max_samples = 2;
  opt.target_ms = 1;
  TsSchedPoint *p = NULL;
  guint n = 0;
  while (ts_sched_iter_next(it, &p, &error)) {
    g_autoptr(TsSchedPoint) point = p;
    g_autofree char *text = ts_sched_point_to_string(point);
    opt.seed = 7 + n;
    g_autoptr(TsTrialResult) r = ts_op_run(inst, backend, point, &opt, &error);
    g_assert_no_error(error);
    if (r->status != TS_TRIAL_OK)
      g_error("%s %s %s at %s: %s: %s", c->op, c->shape, c->dtype, text,
              ts_trial_status_name(r->status), r->message);
    g_assert_cmpint(r->resources.registers, >, 0);
    n++;
  }
  g_assert_no_error(error);
  g_assert_cmpuint(n, >, 0);
  g_test_message("%s %s %s: %u points verified", c->op, c->shape, c->dtype, n);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_autoptr(GError) error = NULL;
  backend = ts_backend_open("cuda", &error);
  if (backend == NULL) {
    printf("1..0 # SKIP %s\n", error->message);
    return 77;
  }
  g_autofree char *dir = g_dir_make_tmp("ts-cuda-ops-XXXXXX", NULL);
  ts_backend_set_cache_dir(backend, dir);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path = g_strdup_printf("/cuda-ops/%s/%s/%s", cases[i].op, cases[i].dtype,
                                            cases[i].shape);
    g_test_add_data_func(path, &cases[i], test_space);
  }
  int rc = g_test_run();
  ts_backend_free(backend);
  ts_test_remove_tree(dir);
  return rc;
}
