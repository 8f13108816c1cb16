/* ts-prof-perf.c — perf_event_open counters on every thread of this process.
 *
 * Why one fd per thread and counter, opened at begin: the kernel's OpenMP team already exists
 * when a measurement starts (it ran the verification launch), and `inherit` only follows
 * threads created after the counter. The thread list comes from /proc/self/task. User space
 * only (exclude_kernel), so perf_event_paranoid=2, the default of many distributions, allows it
 * for our own threads. */
#include "ts-prof-perf.h"

#include <errno.h>
#include <json-glib/json-glib.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
  const char *name;
  guint32 type;
  guint64 config;
  gboolean hardware; /* from the PMU: missing in most VMs */
} Counter;

static const Counter COUNTERS[] = {
  {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, TRUE},
  {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, TRUE},
  {"cache_references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, TRUE},
  {"cache_misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, TRUE},
  {"task_clock_ns", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, FALSE},
  {"page_faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, FALSE},
  {"context_switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, FALSE},
};
#define N_COUNTERS G_N_ELEMENTS(COUNTERS)

struct _TsProfCounters {
  gboolean disabled;         /* TESSERA_PERF_COUNTERS=0 */
  GArray *fds;               /* int, N_COUNTERS per thread, -1 where refused */
  double total[N_COUNTERS];
  gboolean counted[N_COUNTERS];
  int first_errno[N_COUNTERS]; /* why a counter could not be opened, 0 when it was */
  char *unavailable;
  guint launches;
};

TsProfCounters *
ts_prof_counters_new(void)
{
  TsProfCounters *c = g_new0(TsProfCounters, 1);
  c->fds = g_array_new(FALSE, FALSE, sizeof(int));
  c->disabled = g_strcmp0(g_getenv("TESSERA_PERF_COUNTERS"), "0") == 0;
  return c;
}

static void
close_all(TsProfCounters *c)
{
  for (guint i = 0; i < c->fds->len; i++)
    if (g_array_index(c->fds, int, i) >= 0)
      close(g_array_index(c->fds, int, i));
  g_array_set_size(c->fds, 0);
}

void
ts_prof_counters_free(TsProfCounters *c)
{
  if (c == NULL)
    return;
  close_all(c);
  g_array_unref(c->fds);
  g_free(c->unavailable);
  g_free(c);
}

static int
open_counter(const Counter *k, pid_t tid)
{
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = k->type;
  a.config = k->config;
  a.disabled = 1;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  return (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

void
ts_prof_counters_begin(TsProfCounters *c)
{
  close_all(c);
  if (c->disabled)
    return;
  g_autoptr(GDir) dir = g_dir_open("/proc/self/task", 0, NULL);
  if (dir == NULL)
    return;
  const char *name;
  while ((name = g_dir_read_name(dir)) != NULL) {
    pid_t tid = (pid_t)atoi(name);
    for (guint k = 0; k < N_COUNTERS; k++) {
      int fd = open_counter(&COUNTERS[k], tid);
      /* A thread that exited between the listing and the open is not a refusal. */
      if (fd < 0 && errno != ESRCH && c->first_errno[k] == 0)
        c->first_errno[k] = errno;
      g_array_append_val(c->fds, fd);
    }
  }
  for (guint i = 0; i < c->fds->len; i++) {
    int fd = g_array_index(c->fds, int, i);
    if (fd >= 0) {
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
  }
}

void
ts_prof_counters_end(TsProfCounters *c)
{
  for (guint i = 0; i < c->fds->len; i++) {
    int fd = g_array_index(c->fds, int, i);
    if (fd >= 0)
      ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
  }
  for (guint i = 0; i < c->fds->len; i++) {
    int fd = g_array_index(c->fds, int, i);
    guint64 v[3];
    if (fd < 0 || read(fd, v, sizeof v) != (ssize_t)sizeof v)
      continue;
    guint k = i % N_COUNTERS;
    /* Multiplexed counters ran part of the time: scale to the whole stretch. */
    double value = v[2] > 0 ? (double)v[0] * ((double)v[1] / (double)v[2]) : 0;
    c->total[k] += value;
    c->counted[k] = TRUE;
  }
  close_all(c);
}

static void
hook_begin(gpointer data)
{
  ts_prof_counters_begin(data);
}

static void
hook_end(gpointer data, guint n_launches)
{
  TsProfCounters *c = data;
  ts_prof_counters_end(c);
  c->launches += n_launches;
}

void
ts_prof_counters_hooks(TsProfCounters *c, TsMeasureHooks *hooks)
{
  *hooks = (TsMeasureHooks){.begin = hook_begin, .end = hook_end, .data = c};
}

TsProfCounters *
ts_prof_counters_attach(TsBackend *backend, TsRunOptions *options, TsMeasureHooks *hooks)
{
  if (strcmp(ts_backend_describe(backend)->backend, "cpu") != 0)
    return NULL;
  TsProfCounters *c = ts_prof_counters_new();
  ts_prof_counters_hooks(c, hooks);
  options->hooks = hooks;
  return c;
}

void
ts_prof_counters_finish(const TsProfCounters *c, TsTrialResult *r)
{
  if (c == NULL || r == NULL || r->status != TS_TRIAL_OK)
    return;
  g_free(r->counters_json);
  r->counters_json = ts_prof_counters_to_json(c, c->launches);
}

guint
ts_prof_counters_launches(const TsProfCounters *c)
{
  return c->launches;
}

gboolean
ts_prof_counters_get(const TsProfCounters *c, const char *name, double *value)
{
  for (guint k = 0; k < N_COUNTERS; k++)
    if (strcmp(COUNTERS[k].name, name) == 0 && c->counted[k] && c->first_errno[k] == 0) {
      *value = c->total[k];
      return TRUE;
    }
  return FALSE;
}

static const char *
reason_for(int err)
{
  switch (err) {
  case ENOENT:
  case EOPNOTSUPP:
  case ENODEV:
    return "this kernel exposes no hardware PMU (usual in a VM; on bare metal check "
           "that perf works)";
  case EACCES:
  case EPERM:
    return "not permitted: lower kernel.perf_event_paranoid (sysctl "
           "kernel.perf_event_paranoid=2) or grant CAP_PERFMON";
  case ENOSYS:
    return "the kernel or a seccomp filter refuses perf_event_open";
  case EMFILE:
  case ENFILE:
    return "out of file descriptors (raise ulimit -n)";
  default:
    return NULL;
  }
}

const char *
ts_prof_counters_unavailable(const TsProfCounters *cc)
{
  TsProfCounters *c = (TsProfCounters *)cc;
  if (c->disabled)
    return "counters unavailable: turned off by TESSERA_PERF_COUNTERS=0";
  int err = 0;
  for (guint k = 0; k < N_COUNTERS && err == 0; k++)
    if (COUNTERS[k].hardware && c->first_errno[k] != 0)
      err = c->first_errno[k];
  if (err == 0)
    return NULL;
  if (c->unavailable == NULL) {
    const char *why = reason_for(err);
    c->unavailable =
      why ? g_strdup_printf("counters unavailable: %s (perf_event_open: %s)", why, g_strerror(err))
          : g_strdup_printf("counters unavailable: perf_event_open: %s", g_strerror(err));
  }
  return c->unavailable;
}

char *
ts_prof_counters_to_json(const TsProfCounters *c, double per)
{
  if (!(per > 0))
    per = 1;
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  double v[N_COUNTERS];
  gboolean have[N_COUNTERS];
  for (guint k = 0; k < N_COUNTERS; k++) {
    have[k] = ts_prof_counters_get(c, COUNTERS[k].name, &v[k]);
    if (!have[k])
      continue;
    json_builder_set_member_name(b, COUNTERS[k].name);
    json_builder_add_double_value(b, v[k] / per);
  }
  /* The two ratios people read first; indices follow COUNTERS. */
  if (have[0] && have[1] && v[0] > 0) {
    json_builder_set_member_name(b, "ipc");
    json_builder_add_double_value(b, v[1] / v[0]);
  }
  if (have[2] && have[3] && v[2] > 0) {
    json_builder_set_member_name(b, "cache_miss_rate");
    json_builder_add_double_value(b, v[3] / v[2]);
  }
  const char *why = ts_prof_counters_unavailable(c);
  if (why) {
    json_builder_set_member_name(b, "unavailable");
    json_builder_add_string_value(b, why);
  }
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}
