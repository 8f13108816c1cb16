/* bench-torch.c — the PyTorch helper process (bench-torch.h). */
#include "bench-torch.h"

#include <math.h>
#include <string.h>

void
bench_torch_clear(BenchTorch *t)
{
  if (t->proc) {
    g_output_stream_close(g_subprocess_get_stdin_pipe(t->proc), NULL, NULL);
    g_subprocess_wait(t->proc, NULL, NULL);
  }
  g_clear_object(&t->out);
  g_clear_object(&t->proc);
  g_clear_pointer(&t->what, g_free);
}

static gboolean
start(BenchTorch *t, const char *python, const char *op, const char *dtype, const char *shape,
      gint threads)
{
  g_autofree char *script = g_build_filename(TS_BENCH_SRCDIR, "torch_ops.py", NULL);
  g_autofree char *ts = g_strdup_printf("%d", threads);
  g_autoptr(GError) error = NULL;
  t->proc = g_subprocess_new(G_SUBPROCESS_FLAGS_STDIN_PIPE | G_SUBPROCESS_FLAGS_STDOUT_PIPE, &error,
                             python, script, "--op", op, "--dtype", dtype, "--shape", shape,
                             "--threads", ts, NULL);
  if (t->proc == NULL) {
    t->what = g_strdup_printf("%s could not be started: %s", python, error->message);
    return FALSE;
  }
  t->out = g_data_input_stream_new(g_subprocess_get_stdout_pipe(t->proc));
  char *line = g_data_input_stream_read_line(t->out, NULL, NULL, &error);
  if (line == NULL || !g_str_has_prefix(line, "ready ")) {
    char *why = line && g_str_has_prefix(line, "skip ")
                    ? g_strdup(line + 5)
                    : g_strdup_printf("%s %s said nothing usable (%s)", python, script,
                                      line ? line : error ? error->message : "no output");
    g_free(line);
    bench_torch_clear(t);
    t->what = why;
    return FALSE;
  }
  t->what = g_strdup(line + 6);
  g_free(line);
  return TRUE;
}

gboolean
bench_torch_start(BenchTorch *t, const char *python, const char *op, const char *dtype,
                  const char *shape, gint threads)
{
  gboolean ok = FALSE;
  if (python == NULL)
    t->what = g_strdup("left out (--no-torch)");
  else
    ok = start(t, python, op, dtype, shape, threads);
  g_print("# %s %s: PyTorch anchor%s %s\n", op, dtype, ok ? ":" : " skipped:", t->what);
  return ok;
}

double
bench_torch_sample(BenchTorch *t, guint calls)
{
  g_autofree char *req = g_strdup_printf("%u\n", calls);
  GOutputStream *in = g_subprocess_get_stdin_pipe(t->proc);
  if (!g_output_stream_write_all(in, req, strlen(req), NULL, NULL, NULL) ||
      !g_output_stream_flush(in, NULL, NULL))
    return NAN;
  g_autofree char *line = g_data_input_stream_read_line(t->out, NULL, NULL, NULL);
  return line ? g_ascii_strtod(line, NULL) : NAN;
}

char *
bench_torch_anchor_name(const BenchTorch *t)
{
  g_auto(GStrv) parts = g_strsplit(t->what ? t->what : "", ", ", 3);
  const char *form = parts[0] ? parts[0] : "";
  const char *build = parts[0] && parts[1] ? parts[1] : "PyTorch";
  /* "PyTorch 2.15.0+cu132 (AVX2)": the build without its capability */
  g_autofree char *version = g_strchomp(g_strndup(build, strcspn(build, "(")));
  return g_strdup_printf("%s %s", version, form);
}

const char *
bench_torch_default_python(void)
{
  const char *env = g_getenv("TS_BENCH_PYTHON");
  return env ? env : "python3";
}
