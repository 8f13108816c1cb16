/* test-trace.c — the timeline recorder (threads, order, NVTX ranges), its conversion to stored
 * rows and to Chrome trace JSON, and the CPU perf counters (counted or refused with a reason,
 * never a crash). */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <time.h>

#include "ts-nvtx.h"
#include "ts-prof-perf.h"
#include "ts-prof-trace.h"

static gpointer
record_thread(gpointer data)
{
  TsTrace *t = data;
  for (int i = 0; i < 1000; i++)
    ts_trace_add_host(t, TS_TRACE_KERNEL, "k", ts_trace_now_ns(), 10, 0, 0, NULL);
  return GUINT_TO_POINTER(ts_trace_thread_lane());
}

static void
test_recorder_threads(void)
{
  g_autoptr(TsTrace) t = ts_trace_new();
  GThread *a = g_thread_new("a", record_thread, t);
  GThread *b = g_thread_new("b", record_thread, t);
  guint la = GPOINTER_TO_UINT(g_thread_join(a)), lb = GPOINTER_TO_UINT(g_thread_join(b));
  g_assert_cmpuint(la, !=, lb);
  guint n = 0;
  const TsTraceEvent *ev = ts_trace_events(t, &n);
  g_assert_cmpuint(n, ==, 2000);
  guint on_a = 0;
  for (guint i = 0; i < n; i++) {
    if (i > 0)
      g_assert_cmpint(ev[i - 1].start_ns, <=, ev[i].start_ns);
    g_assert_true(ev[i].lane == la || ev[i].lane == lb);
    on_a += ev[i].lane == la;
    g_assert_cmpstr(ev[i].name, ==, "k");
    g_assert_true(ev[i].name == ev[0].name); /* one copy per text in a trace */
  }
  g_assert_cmpuint(on_a, ==, 1000);
}

static void
test_recorder_sorts(void)
{
  g_autoptr(TsTrace) t = ts_trace_new();
  /* Device records arrive late and out of order; an enclosing event starting at the same
   * instant sorts first. */
  TsTraceEvent e3 = {.kind = TS_TRACE_KERNEL, .name = "c", .start_ns = 300, .dur_ns = 5};
  TsTraceEvent e1 = {.kind = TS_TRACE_RANGE, .name = "a", .start_ns = 100, .dur_ns = 10};
  TsTraceEvent e2 = {.kind = TS_TRACE_KERNEL, .name = "b", .start_ns = 100, .dur_ns = 500};
  ts_trace_add(t, &e3);
  ts_trace_add(t, &e1);
  ts_trace_add(t, &e2);
  guint n;
  const TsTraceEvent *ev = ts_trace_events(t, &n);
  g_assert_cmpuint(n, ==, 3);
  g_assert_cmpstr(ev[0].name, ==, "b");
  g_assert_cmpstr(ev[1].name, ==, "a");
  g_assert_cmpstr(ev[2].name, ==, "c");
  gint64 t0 = 0;
  g_autoptr(GArray) rows = ts_prof_trace_events(t, &t0);
  g_assert_cmpint(t0, ==, 100);
  g_assert_cmpint(g_array_index(rows, TsDbEvent, 2).start_ns, ==, 200);
  g_assert_cmpstr(g_array_index(rows, TsDbEvent, 1).kind, ==, "range");
  for (guint k = 0; k < TS_TRACE_N_KINDS; k++) {
    TsTraceKind back;
    g_assert_true(ts_trace_kind_from_name(ts_trace_kind_name((TsTraceKind)k), &back));
    g_assert_cmpint(back, ==, k);
  }
  TsTraceKind dummy;
  g_assert_false(ts_trace_kind_from_name("teleport", &dummy));
}

static void
test_nvtx_ranges(void)
{
  g_autoptr(TsTrace) t = ts_trace_new();
  ts_nvtx_push("before"); /* opened before recording: not recorded */
  ts_nvtx_set_trace(t);
  ts_nvtx_pop();
  ts_nvtx_push("outer");
  ts_nvtx_push("inner");
  ts_nvtx_pop();
  ts_nvtx_pop();
  ts_nvtx_set_trace(NULL);
  ts_nvtx_push("after");
  ts_nvtx_pop();
  guint n;
  const TsTraceEvent *ev = ts_trace_events(t, &n);
  g_assert_cmpuint(n, ==, 2);
  g_assert_cmpstr(ev[0].name, ==, "outer");
  g_assert_cmpuint(ev[0].depth, ==, 0);
  g_assert_cmpstr(ev[1].name, ==, "inner");
  g_assert_cmpuint(ev[1].depth, ==, 1);
  g_assert_cmpint(ev[1].start_ns, >=, ev[0].start_ns);
  g_assert_cmpint(ev[1].start_ns + ev[1].dur_ns, <=, ev[0].start_ns + ev[0].dur_ns);
  g_assert_cmpint(ev[0].kind, ==, TS_TRACE_RANGE);
}

static void
test_chrome(void)
{
  TsDbEvent ev[] = {
      {.kind = "range", .name = "tessera: measure", .dur_ns = 5000, .lane = 7},
      {.kind = "alloc", .name = "alloc", .start_ns = 100, .bytes = 1000, .address = 1, .lane = 7},
      {.kind = "alloc", .name = "alloc", .start_ns = 200, .bytes = 500, .address = 2, .lane = 7},
      {.kind = "kernel",
       .name = "k\"quoted\"",
       .start_ns = 300,
       .dur_ns = 1500,
       .lane = TS_TRACE_DEVICE_LANE + 3,
       .detail = "timed"},
      {.kind = "free", .name = "free", .start_ns = 2000, .bytes = 1000, .address = 1, .lane = 7},
      {.kind = "memcpy",
       .name = "DtoH",
       .start_ns = 2100,
       .dur_ns = 400,
       .bytes = 500,
       .address = 2,
       .lane = 7,
       .depth = 1},
      {.kind = "free", .name = "free", .start_ns = 3000, .bytes = 500, .address = 2, .lane = 7},
  };
  TsProfTraceSummary s;
  ts_prof_trace_summarise(ev, G_N_ELEMENTS(ev), &s);
  g_assert_cmpuint(s.peak_bytes, ==, 1500);
  g_assert_cmpint(s.span_ns, ==, 5000);
  g_assert_cmpint(s.kernel_ns, ==, 1500);
  g_assert_cmpuint(s.n_by_kind[TS_TRACE_ALLOC], ==, 2);
  g_assert_cmpuint(s.n_by_kind[TS_TRACE_KERNEL], ==, 1);

  g_autofree char *json = ts_prof_chrome_trace(ev, G_N_ELEMENTS(ev), "proc \"x\"");
  g_autoptr(JsonParser) p = json_parser_new();
  g_autoptr(GError) error = NULL;
  g_assert_true(json_parser_load_from_data(p, json, -1, &error));
  JsonArray *a = json_object_get_array_member(json_node_get_object(json_parser_get_root(p)),
                                              "traceEvents");
  guint n_x = 0, n_i = 0, n_c = 0, n_m = 0;
  gint64 mem[4] = {0};
  gboolean device_lane_named = FALSE;
  for (guint i = 0; i < json_array_get_length(a); i++) {
    JsonObject *o = json_array_get_object_element(a, i);
    const char *ph = json_object_get_string_member(o, "ph");
    JsonObject *args = json_object_get_object_member(o, "args");
    if (strcmp(ph, "X") == 0) {
      n_x++;
      if (strcmp(json_object_get_string_member(o, "cat"), "kernel") == 0) {
        g_assert_cmpstr(json_object_get_string_member(o, "name"), ==, "k\"quoted\"");
        g_assert_cmpfloat(json_object_get_double_member(o, "ts"), ==, 0.3);
        g_assert_cmpfloat(json_object_get_double_member(o, "dur"), ==, 1.5);
        g_assert_cmpstr(json_object_get_string_member(args, "detail"), ==, "timed");
      }
    } else if (strcmp(ph, "i") == 0) {
      n_i++;
    } else if (strcmp(ph, "C") == 0) {
      mem[n_c++] = json_object_get_int_member(args, "bytes");
    } else if (strcmp(ph, "M") == 0) {
      n_m++;
      if (strcmp(json_object_get_string_member(args, "name"), "device stream 3") == 0)
        device_lane_named = TRUE;
    }
  }
  g_assert_cmpuint(n_x, ==, 3);
  g_assert_cmpuint(n_i, ==, 4);
  g_assert_cmpuint(n_c, ==, 4);
  g_assert_cmpuint(n_m, ==, 3); /* the process and two lanes */
  g_assert_true(device_lane_named);
  g_assert_cmpint(mem[0], ==, 1000);
  g_assert_cmpint(mem[1], ==, 1500);
  g_assert_cmpint(mem[2], ==, 500);
  g_assert_cmpint(mem[3], ==, 0);

  g_assert_false(ts_prof_chrome_trace_write(ev, 1, "x", "/nonexistent/dir/t.json", &error));
  g_assert_nonnull(strstr(error->message, "writing the trace"));
}

static volatile double sink;
static gint go;

static gint64
thread_cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static gint64
process_cpu_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins 100 ms of wall time once `go` is set; returns the CPU time it got meanwhile. */
static gpointer
spin(gpointer data)
{
  while (!g_atomic_int_get(&go))
    g_usleep(100);
  gint64 cpu0 = thread_cpu_ns();
  gint64 end = g_get_monotonic_time() + 100000;
  double x = 1;
  while (g_get_monotonic_time() < end)
    for (int i = 0; i < 1000; i++)
      x = x * 1.0000001 + 1e-9;
  sink = x;
  return GSIZE_TO_POINTER((gsize)(thread_cpu_ns() - cpu0));
}

static void
test_counters(void)
{
  /* A thread that exists before counting starts is counted too (the OpenMP team's case). The
   * task clock is checked against the CPU time each thread says it got: the machine's load
   * changes how much that is, not whether they agree. */
  g_autoptr(TsProfCounters) c = ts_prof_counters_new();
  g_atomic_int_set(&go, 0);
  GThread *other = g_thread_new("spin", spin, NULL);
  gint64 proc0 = process_cpu_ns();
  gint64 wall0 = g_get_monotonic_time();
  ts_prof_counters_begin(c);
  g_atomic_int_set(&go, 1);
  double mine = (double)GPOINTER_TO_SIZE(spin(NULL));
  double theirs = (double)GPOINTER_TO_SIZE(g_thread_join(other));
  ts_prof_counters_end(c);
  double wall = 1e3 * (double)(g_get_monotonic_time() - wall0);
  double process = (double)(process_cpu_ns() - proc0);
  double clock = 0;
  if (ts_prof_counters_get(c, "task_clock_ns", &clock)) {
    g_test_message("task clock %.1f ms; the threads got %.1f + %.1f ms, the process %.1f ms, "
                   "in %.1f ms of wall time",
                   clock / 1e6, mine / 1e6, theirs / 1e6, process / 1e6, wall / 1e6);
    g_assert_cmpfloat(clock, >, 0.9 * (mine + theirs));
    /* The upper bound is the whole process's CPU time over a window that brackets the counting
     * one: the spinning thread's start-up and exit, and any other thread the process has (the
     * sanitizers' among them), are counted too and cost more than the 5 ms once allowed here
     * on a loaded CI machine. On a virtual machine the task clock also counts the time the host
     * took a vCPU away from a running thread, which the scheduler's CPU time leaves out (a
     * loaded CI guest once showed 113 ms against 99 ms); neither spinning thread can lose more
     * than the wall time it did not get, so that much more is allowed. Counting each thread
     * twice still fails whenever the threads got most of the window. */
    double stolen = MAX(0.0, 2 * wall - mine - theirs);
    g_assert_cmpfloat(clock, <, 1.05 * process + stolen + 1e6);
  } else {
    g_test_message("software counters refused here");
  }
  double cycles = 0;
  const char *why = ts_prof_counters_unavailable(c);
  if (ts_prof_counters_get(c, "cycles", &cycles)) {
    g_assert_null(why);
    g_assert_cmpfloat(cycles, >, 1e6);
    double instr = 0;
    g_assert_true(ts_prof_counters_get(c, "instructions", &instr));
    g_assert_cmpfloat(instr, >, 1e6);
  } else {
    g_test_message("%s", why);
    g_assert_nonnull(why);
    g_assert_true(g_str_has_prefix(why, "counters unavailable: "));
  }
  g_autofree char *json = ts_prof_counters_to_json(c, 2);
  g_autoptr(JsonParser) p = json_parser_new();
  g_assert_true(json_parser_load_from_data(p, json, -1, NULL));
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
  g_assert_cmpint(json_object_has_member(o, "cycles"), ==, why == NULL);
  g_assert_cmpint(json_object_has_member(o, "unavailable"), ==, why != NULL);
  if (clock > 0) /* per = 2: halves */
    g_assert_cmpfloat_with_epsilon(json_object_get_double_member(o, "task_clock_ns"), clock / 2,
                                   1e-6 * clock);

  /* Turned off: nothing counted, said so. */
  g_setenv("TESSERA_PERF_COUNTERS", "0", TRUE);
  g_autoptr(TsProfCounters) off = ts_prof_counters_new();
  g_unsetenv("TESSERA_PERF_COUNTERS");
  ts_prof_counters_begin(off);
  spin(NULL);
  ts_prof_counters_end(off);
  g_assert_cmpuint(ts_prof_counters_launches(off), ==, 0);
  g_assert_false(ts_prof_counters_get(off, "task_clock_ns", &clock));
  g_assert_cmpstr(ts_prof_counters_unavailable(off), ==,
                  "counters unavailable: turned off by TESSERA_PERF_COUNTERS=0");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/trace/recorder-threads", test_recorder_threads);
  g_test_add_func("/trace/recorder-sorts", test_recorder_sorts);
  g_test_add_func("/trace/nvtx-ranges", test_nvtx_ranges);
  g_test_add_func("/trace/chrome", test_chrome);
  g_test_add_func("/trace/counters", test_counters);
  return g_test_run();
}
