/* bench-torch.h — PyTorch CPU as a benchmark's anchor: bench/torch_ops.py in a helper process
 * that times `calls` calls of the op whenever asked, so that the benchmark can alternate its own
 * rounds with PyTorch's and both see the machine at the same moments. cpu_rows, cpu_attention
 * and cpu_gemm share it. */
#pragma once

#include <gio/gio.h>

typedef struct {
  GSubprocess *proc;
  GDataInputStream *out;
  char *what; /* the "ready" line: the form and PyTorch build chosen, or why it was skipped */
} BenchTorch;

/* Starts the helper for op on shape (our dims, "M=4096,N=4096") in dtype on `threads` threads
 * (python NULL: the anchor left out, as --no-torch asks) and prints the benchmark's line that
 * says which anchor it is; FALSE, with t->what saying why, where it cannot give one. */
gboolean bench_torch_start(BenchTorch *t, const char *python, const char *op, const char *dtype,
                           const char *shape, gint threads);

/* The median ns of `calls` calls, or NAN where the helper has gone. */
double bench_torch_sample(BenchTorch *t, guint calls);

void bench_torch_clear(BenchTorch *t);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(BenchTorch, bench_torch_clear)

/* A short name for a results row: "PyTorch 2.15.0 torch.matmul" from the helper's "ready"
 * line ("torch.matmul, PyTorch 2.15.0 (AVX2), 1 thread(s)"). */
char *bench_torch_anchor_name(const BenchTorch *t);

/* --python's default: $TS_BENCH_PYTHON, else python3. */
const char *bench_torch_default_python(void);
