/* ts-prof-trace.c — timelines: live trace → rows, rows → summary, rows → Chrome trace JSON. */
#include "ts-prof-trace.h"
#include "ts-output.h"

#include <gio/gio.h>
#include <json-glib/json-glib.h>

GArray *
ts_prof_trace_events(TsTrace *trace, gint64 *t0_ns)
{
  guint n = 0;
  const TsTraceEvent *ev = ts_trace_events(trace, &n);
  GArray *out = g_array_sized_new(FALSE, FALSE, sizeof(TsDbEvent), n);
  gint64 t0 = n > 0 ? ev[0].start_ns : 0; /* sorted by start */
  for (guint i = 0; i < n; i++) {
    TsDbEvent e = {
      .kind = ts_trace_kind_name(ev[i].kind),
      .name = ev[i].name,
      .start_ns = ev[i].start_ns - t0,
      .dur_ns = ev[i].dur_ns,
      .bytes = ev[i].bytes,
      .address = ev[i].address,
      .lane = ev[i].lane,
      .depth = ev[i].depth,
      .detail = ev[i].detail,
    };
    g_array_append_val(out, e);
  }
  if (t0_ns)
    *t0_ns = t0;
  return out;
}

/* Walks allocations in time order; calls back with the bytes in use after each change. */
typedef void (*MemoryFunc)(const TsDbEvent *e, guint64 in_use, gpointer data);

static gboolean
is_memory(const TsDbEvent *e, TsTraceKind *k)
{
  return ts_trace_kind_from_name(e->kind, k) && (*k == TS_TRACE_ALLOC || *k == TS_TRACE_FREE);
}

static guint64
walk_memory(const TsDbEvent *events, guint n, MemoryFunc fn, gpointer data)
{
  /* On a GPU the same buffers are seen twice: the backend's calls on the host lane and the
   * device's own records (CUPTI MEMORY2) on a device lane. The device's account wins when it is
   * there: it also holds what was allocated past the backend's API (the L2 flush buffer). */
  gboolean device = FALSE;
  for (guint i = 0; i < n && !device; i++) {
    TsTraceKind k;
    device = is_memory(&events[i], &k) && events[i].lane >= TS_TRACE_DEVICE_LANE;
  }
  guint64 in_use = 0, peak = 0;
  for (guint i = 0; i < n; i++) {
    const TsDbEvent *e = &events[i];
    TsTraceKind k;
    if (!is_memory(e, &k) || (device && e->lane < TS_TRACE_DEVICE_LANE))
      continue;
    if (k == TS_TRACE_ALLOC) {
      in_use += e->bytes;
    } else {
      /* A free of memory allocated before recording began does not go below zero. */
      in_use -= MIN(in_use, e->bytes);
    }
    peak = MAX(peak, in_use);
    if (fn)
      fn(e, in_use, data);
  }
  return peak;
}

void
ts_prof_trace_summarise(const TsDbEvent *events, guint n, TsProfTraceSummary *out)
{
  *out = (TsProfTraceSummary){0};
  gint64 first = G_MAXINT64, last = G_MININT64;
  for (guint i = 0; i < n; i++) {
    const TsDbEvent *e = &events[i];
    TsTraceKind k;
    if (!ts_trace_kind_from_name(e->kind, &k))
      continue;
    out->n_by_kind[k]++;
    if (k == TS_TRACE_KERNEL)
      out->kernel_ns += e->dur_ns;
    first = MIN(first, e->start_ns);
    last = MAX(last, e->start_ns + e->dur_ns);
  }
  out->span_ns = n > 0 ? last - first : 0;
  out->peak_bytes = walk_memory(events, n, NULL, NULL);
}

static void
add_common(JsonBuilder *b, const char *name, const char *cat, const char *ph, double ts_us,
           guint32 lane)
{
  json_builder_set_member_name(b, "name");
  json_builder_add_string_value(b, name);
  json_builder_set_member_name(b, "cat");
  json_builder_add_string_value(b, cat);
  json_builder_set_member_name(b, "ph");
  json_builder_add_string_value(b, ph);
  json_builder_set_member_name(b, "ts");
  json_builder_add_double_value(b, ts_us);
  json_builder_set_member_name(b, "pid");
  json_builder_add_int_value(b, 1);
  json_builder_set_member_name(b, "tid");
  json_builder_add_int_value(b, lane);
}

static void
add_lane_names(JsonBuilder *b, const TsDbEvent *events, guint n, const char *process_name)
{
  json_builder_begin_object(b);
  add_common(b, "process_name", "__metadata", "M", 0, 0);
  json_builder_set_member_name(b, "args");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "name");
  json_builder_add_string_value(b, process_name);
  json_builder_end_object(b);
  json_builder_end_object(b);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint i = 0; i < n; i++) {
    guint32 lane = events[i].lane;
    if (g_hash_table_contains(seen, GUINT_TO_POINTER(lane + 1)))
      continue;
    g_hash_table_add(seen, GUINT_TO_POINTER(lane + 1));
    g_autofree char *name = lane >= TS_TRACE_DEVICE_LANE
                              ? g_strdup_printf("device stream %u", lane - TS_TRACE_DEVICE_LANE)
                              : g_strdup_printf("host thread %u", lane);
    json_builder_begin_object(b);
    add_common(b, "thread_name", "__metadata", "M", 0, lane);
    json_builder_set_member_name(b, "args");
    json_builder_begin_object(b);
    json_builder_set_member_name(b, "name");
    json_builder_add_string_value(b, name);
    json_builder_end_object(b);
    json_builder_end_object(b);
  }
}

static void
add_memory_counter(const TsDbEvent *e, guint64 in_use, gpointer data)
{
  JsonBuilder *b = data;
  json_builder_begin_object(b);
  add_common(b, "memory in use", "memory", "C", e->start_ns / 1e3, e->lane);
  json_builder_set_member_name(b, "args");
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "bytes");
  json_builder_add_int_value(b, (gint64)in_use);
  json_builder_end_object(b);
  json_builder_end_object(b);
}

char *
ts_prof_chrome_trace(const TsDbEvent *events, guint n, const char *process_name)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "displayTimeUnit");
  json_builder_add_string_value(b, "ns");
  json_builder_set_member_name(b, "traceEvents");
  json_builder_begin_array(b);
  add_lane_names(b, events, n, process_name ? process_name : "tessera");
  for (guint i = 0; i < n; i++) {
    const TsDbEvent *e = &events[i];
    TsTraceKind k;
    if (!ts_trace_kind_from_name(e->kind, &k))
      continue;
    gboolean instant = k == TS_TRACE_ALLOC || k == TS_TRACE_FREE;
    json_builder_begin_object(b);
    add_common(b, e->name, e->kind, instant ? "i" : "X", e->start_ns / 1e3, e->lane);
    if (instant) {
      json_builder_set_member_name(b, "s");
      json_builder_add_string_value(b, "t");
    } else {
      json_builder_set_member_name(b, "dur");
      json_builder_add_double_value(b, e->dur_ns / 1e3);
    }
    json_builder_set_member_name(b, "args");
    json_builder_begin_object(b);
    if (e->bytes) {
      json_builder_set_member_name(b, "bytes");
      json_builder_add_int_value(b, (gint64)e->bytes);
    }
    if (e->detail) {
      json_builder_set_member_name(b, "detail");
      json_builder_add_string_value(b, e->detail);
    }
    json_builder_end_object(b);
    json_builder_end_object(b);
  }
  walk_memory(events, n, add_memory_counter, b);
  json_builder_end_array(b);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}

gboolean
ts_prof_chrome_trace_write(const TsDbEvent *events, guint n, const char *process_name,
                           const char *path, GError **error)
{
  g_autofree char *json = ts_prof_chrome_trace(events, n, process_name);
  g_autoptr(GError) local = NULL;
  if (!ts_output_write(path, json, -1, &local)) {
    g_set_error(error, G_FILE_ERROR, local->code, "writing the trace: %s", local->message);
    return FALSE;
  }
  return TRUE;
}
