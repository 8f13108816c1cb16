/* ts-studio-trace.c — Chrome Trace Event JSON files (ours from ts_prof_chrome_trace, or anyone's
 * that Perfetto opens) read into the timeline's events: durations (complete "X" events and
 * "B"/"E" pairs), async slices ("b"/"e"/"n", a lane per process and name), instants (on their
 * thread; process and global ones on a lane of their own), counters ("C", a track per process
 * and series), flows (v1 "s"/"t"/"f" and v2 bind_id) and the args of each, as Perfetto reads
 * them. What the format allows but the timeline cannot show (samples, object snapshots) is
 * skipped. */
#include "ts-studio-trace-private.h"

#include <math.h>
#include <string.h>

#include "ts-trace.h"
#include "ts-db.h"

/* A thread as the file names it: tids are only unique within their pid. */
typedef struct {
  char *pid, *tid; /* as text: either may be a number or a string */
  gboolean numeric_tid;
  gint64 tid_value;
} Thread;

typedef struct {
  const char *path;
  GArray *events;      /* TsDbEvent; start_ns absolute (the file's µs) until the end */
  GArray *threads;     /* Thread, in order of appearance */
  GArray *event_thread; /* guint: the Thread index of each event */
  GHashTable *thread_index; /* "pid\x1ftid" -> index + 1 */
  GString *key;        /* thread_of's buffer */
  GString *args;       /* args_text's */
  GHashTable *open;    /* thread index + 1 -> GArray of open "B" (TsDbEvent + element index) */
  GHashTable *process_names; /* pid key text -> name ("M" process_name) */
  GHashTable *thread_names;  /* thread index + 1 -> name ("M" thread_name) */
  GHashTable *counters; /* "pid\x1fname" -> gint64* last value of a memory counter */
  GArray *from_counters; /* TsDbEvent (owned strings): the memory counters' changes */
  GArray *from_counters_thread; /* guint: each one's thread */
  guint n_memory_instants; /* allocs and frees of their own: then the counters are a copy */
  guint orphan_ends;   /* "E" with no "B": a capture that began inside the range */
  guint unclosed;      /* "B" still open at the end */
  GHashTable *async_open; /* "pid\x1fcat\x1fid\x1fname" -> GArray of open "b" (OpenRange) */
  GHashTable *flows;   /* "cat\x1fname\x1fid" (v1) or "\x1eid" (v2) -> FlowPoint: its last point */
  guint orphan_async_ends, orphan_flow_ends;
  gint64 last_ns;      /* the latest time any element names */
} Reader;

typedef struct {
  TsDbEvent event;
  guint element;
  guint thread;
} OpenRange;

/* Where a flow last was: its start, or its last step. */
typedef struct {
  gint64 t;
  guint thread;
  char *name; /* the flow's, else its category's */
} FlowPoint;

static void
flow_point_free(gpointer p)
{
  FlowPoint *f = p;
  g_free(f->name);
  g_free(f);
}

static void
thread_clear(gpointer p)
{
  Thread *t = p;
  g_free(t->pid);
  g_free(t->tid);
}

static gboolean
fail(GError **error, const Reader *r, guint element, const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean
fail(GError **error, const Reader *r, guint element, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *what = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE,
              "%s: traceEvents[%u]: %s", r->path, element, what);
  return FALSE;
}

/* A number member in µs, as ns. */
static gboolean
time_member(const TsJsonNode *o, const char *name, gint64 *ns, gboolean *present)
{
  const TsJsonNode *n = ts__json_member(o, name);
  *present = n != NULL;
  double us;
  if (n && n->type == TS_JSON_INT)
    us = (double)n->v.i;
  else if (n && n->type == TS_JSON_DOUBLE)
    us = n->v.d;
  else
    return FALSE;
  /* Some writers use epoch time (~1.7e15 µs); past 9e15 µs the ns would overflow 64 bits. */
  if (!isfinite(us) || fabs(us) > 9e15)
    return FALSE;
  /* us * 1e3 would round epoch times to 256 ns; whole µs and the fraction apart keep what
   * the double holds. */
  double whole = floor(us);
  *ns = (gint64)whole * 1000 + llround((us - whole) * 1e3);
  return TRUE;
}

static gboolean
required_time(const Reader *r, guint i, const TsJsonNode *o, const char *name, gint64 *ns,
              GError **error)
{
  gboolean present;
  if (time_member(o, name, ns, &present))
    return TRUE;
  return fail(error, r, i, present ? "\"%s\" is not a number of microseconds" : "missing %s",
              name);
}

/* By hand: printf's setup costs more than the digits, on every event's ids. */
static void
append_int(GString *s, gint64 v)
{
  guint64 u = v < 0 ? -(guint64)v : (guint64)v;
  char digits[24], *p = digits + sizeof digits;
  do
    *--p = (char)('0' + u % 10);
  while ((u /= 10) > 0);
  if (v < 0)
    *--p = '-';
  g_string_append_len(s, p, digits + sizeof digits - p);
}

/* pid and tid are numbers in most files and strings in some; either names a thread. Appends
 * the id's text to key; TRUE with *value when it is an integer. */
static gboolean
append_id(GString *key, const TsJsonNode *o, const char *name, gint64 *value)
{
  const TsJsonNode *n = ts__json_member(o, name);
  if (n == NULL)
    return FALSE;
  if (n->type == TS_JSON_INT) {
    *value = n->v.i;
    append_int(key, *value);
    return TRUE;
  }
  if (n->type == TS_JSON_DOUBLE) {
    double d = n->v.d;
    if (d == floor(d) && fabs(d) < 9e15) {
      *value = (gint64)d;
      append_int(key, *value);
      return TRUE;
    }
    g_string_append_printf(key, "%.17g", d);
  } else if (n->type == TS_JSON_STRING) {
    /* Quoted, so the string "5" is not the number 5. */
    g_string_append_c(key, '"');
    g_string_append(key, n->v.s);
  }
  return FALSE;
}

/* The thread r->key names ("pid\x1ftid", the pid pid_len bytes long): its index, added on
 * first sight. */
static guint
thread_of_key(Reader *r, gsize pid_len, gboolean numeric_tid, gint64 tid)
{
  GString *key = r->key;
  gpointer found = g_hash_table_lookup(r->thread_index, key->str);
  if (found)
    return GPOINTER_TO_UINT(found) - 1;
  Thread t = {
    .pid = g_strndup(key->str, pid_len),
    .tid = g_strdup(key->str + pid_len + 1),
    .numeric_tid = numeric_tid,
    .tid_value = tid,
  };
  g_array_append_val(r->threads, t);
  g_hash_table_insert(r->thread_index, g_strdup(key->str), GUINT_TO_POINTER(r->threads->len));
  return r->threads->len - 1;
}

/* The thread's index; the key is built in a reused buffer, since this runs once per event and
 * a trace has a handful of threads. */
static guint
thread_of(Reader *r, const TsJsonNode *o)
{
  GString *key = r->key;
  g_string_truncate(key, 0);
  gint64 pid = 0, tid = 0;
  append_id(key, o, "pid", &pid);
  gsize pid_len = key->len;
  g_string_append_c(key, '\x1f');
  gboolean numeric_tid = append_id(key, o, "tid", &tid);
  return thread_of_key(r, pid_len, numeric_tid, tid);
}

/* A lane of the reader's own in o's process (none: the whole trace's): an async track, the
 * process's instants, its counters. Its name is label, as a thread_name would give it. */
static guint
pseudo_thread(Reader *r, const TsJsonNode *o, const char *label)
{
  GString *key = r->key;
  g_string_truncate(key, 0);
  gint64 pid = 0;
  if (o)
    append_id(key, o, "pid", &pid);
  gsize pid_len = key->len;
  /* \x1e cannot start a tid's text (append_id writes digits, '-' or '"'). */
  g_string_append(key, "\x1f\x1e");
  g_string_append(key, label);
  guint before = r->threads->len;
  guint thread = thread_of_key(r, pid_len, FALSE, 0);
  if (r->threads->len > before)
    g_hash_table_replace(r->thread_names, GUINT_TO_POINTER(thread + 1), g_strdup(label));
  return thread;
}

/* "M" metadata: the names Perfetto and Nsight show for processes and threads. */
static void
read_metadata(Reader *r, const TsJsonNode *o, const char *name)
{
  gboolean process = g_strcmp0(name, "process_name") == 0;
  if (!process && g_strcmp0(name, "thread_name") != 0)
    return; /* sort indices, labels: nothing the timeline shows */
  const char *value = ts__json_string_member(ts__json_member(o, "args"), "name");
  if (value == NULL || *value == '\0')
    return;
  guint thread = thread_of(r, o);
  if (process)
    g_hash_table_replace(r->process_names,
                         g_strdup(g_array_index(r->threads, Thread, thread).pid),
                         g_strdup(value));
  else
    g_hash_table_replace(r->thread_names, GUINT_TO_POINTER(thread + 1), g_strdup(value));
}

/* Whether the comma-separated category list holds name (case-insensitive). */
static gboolean
has_category(const char *cat, const char *name)
{
  gsize len = strlen(name);
  for (const char *p = cat; p && *p;) {
    while (*p == ' ')
      p++;
    const char *end = strchr(p, ',');
    gsize n = end ? (gsize)(end - p) : strlen(p);
    while (n > 0 && p[n - 1] == ' ')
      n--;
    if (n == len && g_ascii_strncasecmp(p, name, len) == 0)
      return TRUE;
    p = end ? end + 1 : NULL;
  }
  return FALSE;
}

/* The event kind of a category list ("kernel", "gpu_memcpy", "cuda,kernel"). What the
 * timeline cannot tell apart (user annotations, CPU ops) is a range. */
static const char *
kind_of(const char *cat)
{
  static const char *const map[][2] = {
    {"kernel", "kernel"},     {"compile", "compile"},    {"memcpy", "memcpy"},
    {"gpu_memcpy", "memcpy"}, {"memset", "memset"},      {"gpu_memset", "memset"},
  };
  for (guint i = 0; cat && i < G_N_ELEMENTS(map); i++)
    if (has_category(cat, map[i][0]))
      return map[i][1];
  return "range";
}

/* "alloc" or "free" for an allocation instant's category list, else NULL. */
static const char *
memory_kind_of(const char *cat)
{
  if (has_category(cat, "alloc"))
    return "alloc";
  if (has_category(cat, "free"))
    return "free";
  return NULL;
}

static guint64
arg_u64(const TsJsonNode *args, const char *name)
{
  const TsJsonNode *n = ts__json_member(args, name);
  if (n == NULL)
    return 0;
  if (n->type == TS_JSON_INT)
    return (guint64)MAX(n->v.i, 0);
  if (n->type == TS_JSON_DOUBLE) /* 2^64 and beyond do not convert */
    return n->v.d > 0 && n->v.d < 1.8e19 ? (guint64)n->v.d : 0;
  if (n->type == TS_JSON_STRING) /* addresses are often written as "0x7f..." */
    return g_ascii_strtoull(n->v.s, NULL, 0);
  return 0;
}

/* Appends e; its strings become the array's (owned: e holds references already, else they are
 * borrowed from the JSON and referenced now). */
static void
add_event(Reader *r, TsDbEvent *e, guint thread, gboolean owned)
{
  if (!owned)
    ts_db_event_own_strings(e);
  g_array_append_val(r->events, *e);
  g_array_append_val(r->event_thread, thread);
}

static void
open_range_clear(gpointer data)
{
  ts_db_event_release_strings(&((OpenRange *)data)->event);
}

static void
append_value(GString *s, const TsJsonNode *n)
{
  switch (n->type) {
  case TS_JSON_STRING:
    g_string_append(s, n->v.s);
    break;
  case TS_JSON_INT:
    append_int(s, n->v.i);
    break;
  case TS_JSON_DOUBLE: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.15g", n->v.d));
    break;
  }
  case TS_JSON_BOOL:
    g_string_append(s, n->v.b ? "true" : "false");
    break;
  default: /* an object, an array, null: as written, without the whitespace between tokens */
    ts__json_append_compact(s, n);
  }
}

/* What the event's args say beyond its own fields, for the details panel: the "detail" text
 * tessera writes, then every other member as a "key: value" line (bytes and address only when
 * they were not read into the event's fields). NULL when there is nothing. The text is a
 * reference-counted string of the event's own, not interned: args such as correlation ids
 * differ from one event to the next, and interning 10^6 of them cost a quarter of the read. */
static char *
args_text(const TsJsonNode *args, const TsDbEvent *e, GString *buf)
{
  if (args == NULL)
    return NULL;
  const char *detail = ts__json_string_member(args, "detail");
  g_string_assign(buf, detail ? detail : "");
  for (const TsJsonNode *m = args->child; m; m = m->next) {
    if (strcmp(m->key, "detail") == 0 || (strcmp(m->key, "bytes") == 0 && e->bytes) ||
        (strcmp(m->key, "address") == 0 && e->address))
      continue;
    if (buf->len)
      g_string_append_c(buf, '\n');
    g_string_append(buf, m->key);
    g_string_append(buf, ": ");
    append_value(buf, m);
  }
  return buf->len ? g_ref_string_new_len(buf->str, (gssize)buf->len) : NULL;
}

/* Fields every kept event has. e->detail is left NULL and its text (a GRefString, or NULL)
 * returned, for own_event to give it once the event's other strings are its own. */
static char *
fill_common(Reader *r, TsDbEvent *e, const TsJsonNode *o, const char *kind)
{
  const TsJsonNode *args = ts__json_member(o, "args");
  if (args && args->type != TS_JSON_OBJECT)
    args = NULL;
  e->kind = kind;
  e->bytes = arg_u64(args, "bytes");
  e->address = arg_u64(args, "address");
  e->detail = NULL;
  return args_text(args, e, r->args);
}

/* e's kind and name made references of its own, its detail the text fill_common returned. */
static void
own_event(TsDbEvent *e, char *detail)
{
  ts_db_event_own_strings(e);
  e->detail = detail;
}

/* A counter of memory in use ("GPU memory", the PyTorch profiler's "[memory]" with
 * "Total Allocated", Perfetto's "mem.*"): its value is what the memory area draws, so each
 * change becomes an alloc (up) or a free (down) of the difference, with no address (each
 * event counts its own bytes). Other counters get tracks of their own (read_counter). */
static gboolean
memory_counter(const TsJsonNode *args, const char *name, gint64 *value)
{
  gboolean named = name && (strstr(name, "memory") || strstr(name, "Memory") ||
                            g_str_has_prefix(name, "mem."));
  gboolean found = FALSE;
  for (const TsJsonNode *m = args->child; m && !found; m = m->next) {
    const char *key = m->key;
    const TsJsonNode *n = ts__json_member(args, key); /* the last of a repeated name */
    if (n->type != TS_JSON_INT && n->type != TS_JSON_DOUBLE)
      continue;
    gboolean bytes = strstr(key, "bytes") || strstr(key, "Bytes") || strstr(key, "Allocated") ||
                     strstr(key, "allocated");
    if (!named && !bytes)
      continue;
    double v = n->type == TS_JSON_INT ? (double)n->v.i : n->v.d;
    if (!(v >= 0 && v < 9e18))
      continue;
    *value = (gint64)v;
    found = TRUE;
  }
  return found;
}

/* A counter's value: a number, or a string holding one (some writers quote them). */
static gboolean
counter_value(const TsJsonNode *n, double *v)
{
  if (n->type == TS_JSON_INT)
    *v = (double)n->v.i;
  else if (n->type == TS_JSON_DOUBLE)
    *v = n->v.d;
  else if (n->type == TS_JSON_STRING) {
    char *end = NULL;
    *v = g_ascii_strtod(n->v.s, &end);
    if (end == n->v.s || *end != '\0')
      return FALSE;
  } else
    return FALSE;
  return isfinite(*v);
}

/* A memory counter feeds the memory area (below, in read_text). Any other "C" is a sample of
 * one series per numeric member, named as Perfetto names them ("name key"; a member called
 * "value" adds nothing), on a counters lane of the event's process. */
static gboolean
read_counter(Reader *r, guint i, const TsJsonNode *o, const char *name, GError **error)
{
  const TsJsonNode *members = ts__json_member(o, "args");
  if (members == NULL || members->type != TS_JSON_OBJECT)
    return TRUE;
  gint64 value;
  TsDbEvent e = {.kind = NULL, .name = name};
  if (!required_time(r, i, o, "ts", &e.start_ns, error))
    return FALSE;
  if (!memory_counter(members, name, &value)) {
    guint thread = pseudo_thread(r, o, "counters");
    for (const TsJsonNode *k = members->child; k; k = k->next) {
      double v;
      if (ts__json_member(members, k->key) != k || !counter_value(k, &v))
        continue; /* a repeated name counts once, with its last value */
      g_autofree char *series = strcmp(k->key, "value") == 0
                                  ? g_strdup(name)
                                  : g_strdup_printf("%s %s", name, k->key);
      TsDbEvent c = {.kind = "counter", .name = series, .start_ns = e.start_ns, .value = v};
      add_event(r, &c, thread, FALSE);
    }
    return TRUE;
  }
  guint thread = thread_of(r, o);
  g_autofree char *key = g_strdup_printf("%s\x1f%s",
                                         g_array_index(r->threads, Thread, thread).pid, name);
  gint64 *last = g_hash_table_lookup(r->counters, key);
  if (last == NULL) {
    last = g_new0(gint64, 1);
    g_hash_table_insert(r->counters, g_steal_pointer(&key), last);
  }
  gint64 delta = value - *last;
  *last = value;
  if (delta == 0)
    return TRUE;
  e.kind = delta > 0 ? "alloc" : "free";
  e.bytes = (guint64)(delta > 0 ? delta : -delta);
  ts_db_event_own_strings(&e);
  g_array_append_val(r->from_counters, e);
  g_array_append_val(r->from_counters_thread, thread);
  return TRUE;
}

/* The text of an id member (a number or a string, as append_id writes it); FALSE when o has
 * none. Async events may give it as id2 {"global": ...} or {"local": ...}. */
static gboolean
append_event_id(GString *key, const TsJsonNode *o)
{
  gint64 unused;
  if (ts__json_member(o, "id")) {
    gsize before = key->len;
    append_id(key, o, "id", &unused);
    return key->len > before;
  }
  const TsJsonNode *ids = ts__json_member(o, "id2");
  if (ids == NULL || ids->type != TS_JSON_OBJECT)
    return FALSE;
  gsize before = key->len;
  if (ts__json_member(ids, "global"))
    append_id(key, ids, "global", &unused);
  else if (ts__json_member(ids, "local")) {
    append_id(key, o, "pid", &unused); /* a local id is only unique within its process */
    g_string_append_c(key, '/');
    append_id(key, ids, "local", &unused);
  }
  return key->len > before;
}

/* An arrow from the flow's last point to (t, thread): one segment of a flow. */
static void
add_flow(Reader *r, const FlowPoint *from, gint64 t, guint thread, gboolean to_next)
{
  TsDbEvent e = {
    .kind = "flow",
    .name = from->name,
    .start_ns = from->t,
    .to_ns = t,
    .to_lane = thread, /* a thread index until assign_lanes */
    .to_next = to_next,
  };
  add_event(r, &e, from->thread, FALSE);
}

/* Flow events, version 1: "s" starts a flow at the slice enclosing it, "t" steps through
 * another, "f" ends it, on the slice enclosing it with "bp": "e", else on the next slice to
 * begin on its thread. A flow is its category, name and id. */
static gboolean
read_flow(Reader *r, guint i, const TsJsonNode *o, char ph, const char *cat, const char *name,
          GError **error)
{
  g_autoptr(GString) key = g_string_new(cat);
  g_string_append_c(key, '\x1f');
  g_string_append(key, name ? name : "");
  g_string_append_c(key, '\x1f');
  if (!append_event_id(key, o))
    return TRUE; /* Perfetto drops these too: there is nothing to pair them by */
  gint64 t;
  if (!required_time(r, i, o, "ts", &t, error))
    return FALSE;
  guint thread = thread_of(r, o);
  FlowPoint *last = g_hash_table_lookup(r->flows, key->str);
  if (ph == 's') {
    FlowPoint *p = g_new(FlowPoint, 1);
    *p = (FlowPoint){t, thread, g_strdup(name ? name : cat ? cat : "flow")};
    g_hash_table_replace(r->flows, g_strdup(key->str), p);
    return TRUE;
  }
  if (last == NULL) {
    r->orphan_flow_ends++;
    return TRUE;
  }
  gboolean enclosing = ph == 't' || g_strcmp0(ts__json_string_member(o, "bp"), "e") == 0;
  add_flow(r, last, t, thread, !enclosing);
  if (ph == 't') {
    last->t = t;
    last->thread = thread;
  } else {
    g_hash_table_remove(r->flows, key->str);
  }
  return TRUE;
}

/* Flow events, version 2: a slice with "bind_id" and "flow_in" ends the flow of that id at
 * its start; with "flow_out" it starts one there. */
static void
read_flow_v2(Reader *r, const TsJsonNode *o, const char *name, gint64 t, guint thread)
{
  if (!ts__json_member(o, "bind_id"))
    return;
  g_autoptr(GString) key = g_string_new("\x1e");
  gint64 unused;
  append_id(key, o, "bind_id", &unused);
  const TsJsonNode *flow_in = ts__json_member(o, "flow_in");
  const TsJsonNode *flow_out = ts__json_member(o, "flow_out");
  gboolean in = flow_in && flow_in->type == TS_JSON_BOOL && flow_in->v.b;
  gboolean out = flow_out && flow_out->type == TS_JSON_BOOL && flow_out->v.b;
  FlowPoint *last = g_hash_table_lookup(r->flows, key->str);
  if (in && last)
    add_flow(r, last, t, thread, FALSE);
  else if (in)
    r->orphan_flow_ends++;
  if (out) {
    FlowPoint *p = g_new(FlowPoint, 1);
    *p = (FlowPoint){t, thread, g_strdup(name)};
    g_hash_table_replace(r->flows, g_strdup(key->str), p);
  } else if (in && last) {
    g_hash_table_remove(r->flows, key->str);
  }
}

/* Async slices ("b"/"e", instants "n"): matched by process, category, id and name, drawn on a
 * lane per process and name, as Perfetto groups them. */
static gboolean
read_async(Reader *r, guint i, const TsJsonNode *o, char ph, const char *cat, const char *name,
           GError **error)
{
  TsDbEvent e = {0};
  if (!required_time(r, i, o, "ts", &e.start_ns, error))
    return FALSE;
  g_autoptr(GString) key = g_string_new(NULL);
  gint64 unused;
  append_id(key, o, "pid", &unused);
  g_string_append_c(key, '\x1f');
  g_string_append(key, cat ? cat : "");
  g_string_append_c(key, '\x1f');
  append_event_id(key, o);
  g_string_append_c(key, '\x1f');
  g_string_append(key, name ? name : "");
  GArray *stack = g_hash_table_lookup(r->async_open, key->str);
  if (ph == 'e') {
    if (stack == NULL || stack->len == 0) {
      r->orphan_async_ends++;
      return TRUE;
    }
    OpenRange *top = &g_array_index(stack, OpenRange, stack->len - 1);
    top->event.dur_ns = MAX(e.start_ns - top->event.start_ns, 0);
    add_event(r, &top->event, top->thread, TRUE);
    *top = (OpenRange){0};
    g_array_set_size(stack, stack->len - 1);
    return TRUE;
  }
  if (name == NULL)
    return fail(error, r, i, "missing name");
  guint thread = pseudo_thread(r, o, name);
  char *detail = fill_common(r, &e, o, ph == 'n' ? "instant" : kind_of(cat));
  e.name = name;
  own_event(&e, detail);
  if (ph == 'n') {
    add_event(r, &e, thread, TRUE);
    return TRUE;
  }
  if (stack == NULL) {
    stack = g_array_new(FALSE, FALSE, sizeof(OpenRange));
    g_array_set_clear_func(stack, open_range_clear);
    g_hash_table_insert(r->async_open, g_strdup(key->str), stack);
  }
  OpenRange open = {e, i, thread};
  g_array_append_val(stack, open);
  return TRUE;
}

static gboolean
read_element(Reader *r, guint i, const TsJsonNode *o, GError **error)
{
  if (o->type != TS_JSON_OBJECT)
    return fail(error, r, i, "expected an object");
  const char *ph = ts__json_string_member(o, "ph");
  if (ph == NULL)
    return fail(error, r, i, "missing ph (the event type)");
  const char *cat = ts__json_string_member(o, "cat");
  const char *name = ts__json_string_member(o, "name");
  char phase = ph[0] && !ph[1] ? ph[0] : '?';
  gboolean complete = phase == 'X', begin = phase == 'B', end = phase == 'E';
  gboolean instant = phase == 'i' || phase == 'I' || phase == 'n';
  const char *memory = instant ? memory_kind_of(cat) : NULL;
  if (phase == 'M') {
    read_metadata(r, o, name);
    return TRUE;
  }
  /* Whatever else has a time (samples, snapshots) still says how far the trace goes. */
  gint64 at;
  gboolean has_ts;
  if (time_member(o, "ts", &at, &has_ts))
    r->last_ns = MAX(r->last_ns, at);
  switch (phase) {
  case 'C':
    return name ? read_counter(r, i, o, name, error) : TRUE;
  case 's':
  case 't':
  case 'f':
    return read_flow(r, i, o, phase, cat, name, error);
  case 'b':
  case 'e':
    return read_async(r, i, o, phase, cat, name, error);
  case 'n':
    if (memory == NULL)
      return read_async(r, i, o, phase, cat, name, error);
    break;
  default:
    if (!complete && !begin && !end && !instant)
      return TRUE; /* samples, object snapshots, marks */
  }

  TsDbEvent e = {0};
  if (!required_time(r, i, o, "ts", &e.start_ns, error))
    return FALSE;
  if (name == NULL && !end)
    return fail(error, r, i, "missing name");
  guint thread = thread_of(r, o);
  gpointer key = GUINT_TO_POINTER(thread + 1);

  if (end) {
    GArray *stack = g_hash_table_lookup(r->open, key);
    if (stack == NULL || stack->len == 0) {
      /* Normal in a ring-buffer capture that began inside the range: left out, and said. */
      r->orphan_ends++;
      return TRUE;
    }
    OpenRange *top = &g_array_index(stack, OpenRange, stack->len - 1);
    if (e.start_ns < top->event.start_ns)
      return fail(error, r, i, "\"E\" event before its \"B\" (traceEvents[%u])", top->element);
    top->event.dur_ns = e.start_ns - top->event.start_ns;
    add_event(r, &top->event, thread, TRUE);
    *top = (OpenRange){0}; /* its strings moved to the events */
    g_array_set_size(stack, stack->len - 1);
    return TRUE;
  }

  if (instant && memory == NULL) {
    /* Process and global instants are no thread's: each gets a lane of its own. */
    const char *scope = ts__json_string_member(o, "s");
    if (g_strcmp0(scope, "g") == 0)
      thread = pseudo_thread(r, NULL, "global instants");
    else if (g_strcmp0(scope, "p") == 0)
      thread = pseudo_thread(r, o, "process instants");
    char *detail = fill_common(r, &e, o, "instant");
    e.name = name;
    own_event(&e, detail);
    add_event(r, &e, thread, TRUE);
    return TRUE;
  }
  if (complete) {
    if (!required_time(r, i, o, "dur", &e.dur_ns, error))
      return FALSE;
    if (e.dur_ns < 0)
      return fail(error, r, i, "negative dur");
  }
  char *detail = fill_common(r, &e, o, memory ? memory : kind_of(cat));
  r->n_memory_instants += memory != NULL;
  e.name = name;
  own_event(&e, detail);
  if (complete || begin)
    read_flow_v2(r, o, name, e.start_ns, thread);
  if (begin) {
    GArray *stack = g_hash_table_lookup(r->open, key);
    if (stack == NULL) {
      stack = g_array_new(FALSE, FALSE, sizeof(OpenRange));
      g_array_set_clear_func(stack, open_range_clear);
      g_hash_table_insert(r->open, key, stack);
    }
    OpenRange open = {e, i, thread}; /* its strings the stack's until the "E" moves them on */
    g_array_append_val(stack, open);
    return TRUE;
  }
  add_event(r, &e, thread, TRUE);
  return TRUE;
}

/* A trace cut short (a crashed or still-running process) leaves ranges open: they end where
 * the trace does rather than being lost. */
static void
close_stacks(Reader *r, GHashTable *open, gint64 last)
{
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, open);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    GArray *stack = value;
    for (guint i = 0; i < stack->len; i++) {
      OpenRange *o = &g_array_index(stack, OpenRange, i);
      o->event.dur_ns = last - o->event.start_ns;
      r->unclosed++;
      add_event(r, &o->event, o->thread, TRUE);
      *o = (OpenRange){0};
    }
    g_array_set_size(stack, 0);
  }
}

static gint64
latest_start(GHashTable *open, gint64 last)
{
  GHashTableIter it;
  gpointer value;
  g_hash_table_iter_init(&it, open);
  while (g_hash_table_iter_next(&it, NULL, &value)) {
    GArray *stack = value;
    for (guint i = 0; i < stack->len; i++)
      last = MAX(last, g_array_index(stack, OpenRange, i).event.start_ns);
  }
  return last;
}

static void
close_open_ranges(Reader *r)
{
  gint64 last = r->last_ns;
  for (guint i = 0; i < r->events->len; i++) {
    const TsDbEvent *e = &g_array_index(r->events, TsDbEvent, i);
    last = MAX(last, e->start_ns + e->dur_ns);
  }
  last = latest_start(r->async_open, latest_start(r->open, last));
  close_stacks(r, r->open, last);
  close_stacks(r, r->async_open, last);
}

/* Lanes: a file's own tids when they can be kept — non-negative 32-bit numbers, each in one
 * process — so a trace we wrote reads back with the lanes it was recorded with (host thread
 * ids, TS_TRACE_DEVICE_LANE + stream). Otherwise threads are numbered in order of appearance. */
static gboolean
assign_lanes(Reader *r)
{
  gboolean keep = TRUE;
  g_autoptr(GHashTable) tid_pid = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < r->threads->len && keep; i++) {
    Thread *t = &g_array_index(r->threads, Thread, i);
    const char *pid = g_hash_table_lookup(tid_pid, t->tid);
    keep = t->numeric_tid && t->tid_value >= 0 && t->tid_value <= G_MAXUINT32 &&
           (pid == NULL || strcmp(pid, t->pid) == 0);
    g_hash_table_insert(tid_pid, t->tid, t->pid);
  }
  for (guint i = 0; i < r->events->len; i++) {
    TsDbEvent *e = &g_array_index(r->events, TsDbEvent, i);
    guint thread = g_array_index(r->event_thread, guint, i);
    e->lane = keep ? (guint32)g_array_index(r->threads, Thread, thread).tid_value : thread;
    if (e->kind[0] == 'f' && strcmp(e->kind, "flow") == 0)
      e->to_lane = keep ? (guint32)g_array_index(r->threads, Thread, e->to_lane).tid_value
                        : e->to_lane;
  }
  return keep;
}

/* What the timeline shows besides events, as events of its own at time 0 (the Chrome format
 * does the same with "M"): a "lane" per named thread (name: its label), a "note" per thing read
 * differently than written. */
static GArray *
meta_events(Reader *r, gboolean keep_tids)
{
  GArray *meta = ts_db_events_new(0);
  gboolean one_process = g_hash_table_size(r->process_names) <= 1;
  /* Only threads with events have lanes ("M" events name the process on a thread of its own). */
  g_autofree gboolean *used = g_new0(gboolean, MAX(r->threads->len, 1));
  for (guint i = 0; i < r->event_thread->len; i++)
    used[g_array_index(r->event_thread, guint, i)] = TRUE;
  /* A flow may end on a thread with nothing else. Its lane is the thread's tid when they are
   * kept (each tid in one process, then). */
  g_autoptr(GHashTable) by_tid = g_hash_table_new(NULL, NULL);
  for (guint i = 0; keep_tids && i < r->threads->len; i++)
    g_hash_table_insert(by_tid,
                        GUINT_TO_POINTER((guint)g_array_index(r->threads, Thread, i).tid_value + 1),
                        GUINT_TO_POINTER(i + 1));
  for (guint i = 0; i < r->events->len; i++) {
    const TsDbEvent *e = &g_array_index(r->events, TsDbEvent, i);
    if (strcmp(e->kind, "flow") != 0)
      continue;
    guint to = keep_tids ? GPOINTER_TO_UINT(g_hash_table_lookup(by_tid,
                                                                 GUINT_TO_POINTER(e->to_lane + 1)))
                         : e->to_lane + 1;
    if (to > 0)
      used[to - 1] = TRUE;
  }
  for (guint i = 0; i < r->threads->len; i++) {
    const Thread *t = &g_array_index(r->threads, Thread, i);
    if (!used[i])
      continue;
    const char *thread = g_hash_table_lookup(r->thread_names, GUINT_TO_POINTER(i + 1));
    const char *process = g_hash_table_lookup(r->process_names, t->pid);
    g_autofree char *label = NULL;
    if (thread && (one_process || process == NULL))
      label = g_strdup(thread);
    else if (thread)
      label = g_strdup_printf("%s: %s", process, thread);
    else if (process)
      label = g_strdup_printf("%s: thread %s", process, *t->tid ? t->tid : "?");
    else
      continue;
    TsDbEvent e = {.kind = "lane", .name = label,
                   .lane = keep_tids ? (guint32)t->tid_value : i};
    ts_db_event_own_strings(&e);
    g_array_append_val(meta, e);
  }
  g_autofree char *orphans =
    r->orphan_ends ? g_strdup_printf("%u \"E\" event%s without a \"B\" on %s thread left out "
                                     "(a capture that began inside %s)",
                                     r->orphan_ends, r->orphan_ends == 1 ? "" : "s",
                                     r->orphan_ends == 1 ? "its" : "their",
                                     r->orphan_ends == 1 ? "the range" : "the ranges")
                   : NULL;
  g_autofree char *unclosed =
    r->unclosed ? g_strdup_printf("%u range%s never closed: drawn to the end of the trace",
                                  r->unclosed, r->unclosed == 1 ? "" : "s")
                : NULL;
  g_autofree char *async_orphans =
    r->orphan_async_ends ? g_strdup_printf("%u async \"e\" event%s without a \"b\" left out",
                                           r->orphan_async_ends,
                                           r->orphan_async_ends == 1 ? "" : "s")
                         : NULL;
  g_autofree char *flow_orphans =
    r->orphan_flow_ends ? g_strdup_printf("%u flow end%s without a start left out",
                                          r->orphan_flow_ends,
                                          r->orphan_flow_ends == 1 ? "" : "s")
                        : NULL;
  guint open_flows = g_hash_table_size(r->flows);
  g_autofree char *unfinished =
    open_flows ? g_strdup_printf("%u flow%s never finished: not drawn", open_flows,
                                 open_flows == 1 ? "" : "s")
               : NULL;
  const char *notes[] = {orphans, unclosed, async_orphans, flow_orphans, unfinished};
  for (guint i = 0; i < G_N_ELEMENTS(notes); i++) {
    if (notes[i] == NULL)
      continue;
    TsDbEvent e = {.kind = "note", .name = notes[i]};
    ts_db_event_own_strings(&e);
    g_array_append_val(meta, e);
  }
  return meta;
}

static gint
by_time(gconstpointer a, gconstpointer b)
{
  const TsDbEvent *x = a, *y = b;
  if (x->start_ns != y->start_ns)
    return x->start_ns < y->start_ns ? -1 : 1;
  /* An enclosing range before what it holds, as ts_trace_events orders them. */
  if (x->dur_ns != y->dur_ns)
    return x->dur_ns > y->dur_ns ? -1 : 1;
  return (x->lane > y->lane) - (x->lane < y->lane);
}

/* Nesting of ranges on each lane, as the recorder counts it: how many ranges of the lane are
 * still open when one starts. Events must be in by_time order. */
static void
assign_depths(GArray *events)
{
  g_autoptr(GHashTable) open = g_hash_table_new_full(NULL, NULL, NULL,
                                                     (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < events->len; i++) {
    TsDbEvent *e = &g_array_index(events, TsDbEvent, i);
    e->depth = 0;
    if (g_strcmp0(e->kind, "range") != 0)
      continue;
    gpointer key = GUINT_TO_POINTER(e->lane + 1u);
    GArray *ends = g_hash_table_lookup(open, key);
    if (ends == NULL) {
      ends = g_array_new(FALSE, FALSE, sizeof(gint64));
      g_hash_table_insert(open, key, ends);
    }
    while (ends->len > 0 && g_array_index(ends, gint64, ends->len - 1) <= e->start_ns)
      g_array_set_size(ends, ends->len - 1);
    e->depth = ends->len;
    gint64 end = e->start_ns + e->dur_ns;
    g_array_append_val(ends, end);
  }
}

static GArray *read_text(const char *text, gsize length, const char *name,
                         GCancellable *cancellable, gint *permille, GError **error);

GArray *
ts_studio_trace_load(const char *path, GError **error)
{
  return ts_studio_trace_load_full(path, NULL, NULL, error);
}

GArray *
ts_studio_trace_load_data(const char *text, gsize length, const char *name, GError **error)
{
  g_return_val_if_fail(text != NULL && name != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  return read_text(text, length, name, NULL, NULL, error);
}

GArray *
ts_studio_trace_load_full(const char *path, GCancellable *cancellable, gint *permille,
                          GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(GError) local = NULL;
  g_autoptr(GMappedFile) mapped = g_mapped_file_new(path, FALSE, &local);
  if (mapped == NULL) {
    if (strstr(local->message, path))
      g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE, "%s", local->message);
    else
      g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE, "%s: %s", path, local->message);
    return NULL;
  }
  /* An empty file maps to no contents at all. */
  const char *text = g_mapped_file_get_contents(mapped);
  GArray *events = read_text(text ? text : "", g_mapped_file_get_length(mapped), path,
                             cancellable, permille, error);
  if (events && permille)
    g_atomic_int_set(permille, 1000);
  return events;
}

static GArray *
read_text(const char *text, gsize length, const char *name, GCancellable *cancellable,
          gint *permille, GError **error)
{
  TsTraceScan scan;
  if (!ts__trace_scan_begin(&scan, text, length, name, error))
    return NULL;
  g_autoptr(TsJson) json = ts__json_new();

  Reader r = {
    .path = name,
    .events = ts_db_events_new(0),
    .threads = g_array_new(FALSE, TRUE, sizeof(Thread)),
    .event_thread = g_array_new(FALSE, FALSE, sizeof(guint)),
    .thread_index = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
    .open = g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_array_unref),
    .key = g_string_new(NULL),
    .args = g_string_new(NULL),
    .process_names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
    .thread_names = g_hash_table_new_full(NULL, NULL, NULL, g_free),
    .counters = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free),
    .from_counters = ts_db_events_new(0),
    .from_counters_thread = g_array_new(FALSE, FALSE, sizeof(guint)),
    .last_ns = G_MININT64,
    .async_open = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)g_array_unref),
    .flows = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, flow_point_free),
  };
  g_array_set_clear_func(r.threads, thread_clear);
  gboolean ok = TRUE;
  for (guint i = 0; ok; i++) {
    const char *at;
    gsize len;
    int more = ts__trace_scan_next(&scan, &at, &len, error);
    if (more <= 0) {
      ok = more == 0;
      break;
    }
    /* Cancelled and progress: every 4096 elements, which costs nothing to ask. */
    if ((i & 4095) == 0) {
      if (g_cancellable_set_error_if_cancelled(cancellable, error)) {
        ok = FALSE;
        break;
      }
      if (permille)
        g_atomic_int_set(permille, (gint)(1000.0 * (double)scan.pos / (double)MAX(length, 1)));
    }
    g_autofree char *why = NULL;
    const TsJsonNode *root = ts__json_parse(json, at, len, &why);
    ok = root ? read_element(&r, i, root, error) : fail(error, &r, i, "%s", why);
  }
  g_autoptr(GArray) meta = NULL;
  if (ok && r.n_memory_instants == 0) {
    /* A trace that records allocations (ours does, with a counter beside them for Perfetto)
     * is drawn from them; one with only a memory counter, from the counter. */
    for (guint i = 0; i < r.from_counters->len; i++)
      add_event(&r, &g_array_index(r.from_counters, TsDbEvent, i),
                g_array_index(r.from_counters_thread, guint, i), TRUE);
    g_free(g_array_steal(r.from_counters, NULL)); /* their strings moved on */
  }
  g_array_unref(r.from_counters);
  g_array_unref(r.from_counters_thread);
  if (ok) {
    close_open_ranges(&r);
    meta = meta_events(&r, assign_lanes(&r));
  }
  g_array_unref(r.threads);
  g_hash_table_unref(r.process_names);
  g_hash_table_unref(r.thread_names);
  g_hash_table_unref(r.counters);
  g_array_unref(r.event_thread);
  g_hash_table_unref(r.thread_index);
  g_hash_table_unref(r.open);
  g_hash_table_unref(r.async_open);
  g_hash_table_unref(r.flows);
  g_string_free(r.key, TRUE);
  g_string_free(r.args, TRUE);
  if (!ok) {
    g_array_unref(r.events);
    return NULL;
  }

  GArray *events = r.events;
  g_array_sort(events, by_time);
  gint64 t0 = events->len > 0 ? g_array_index(events, TsDbEvent, 0).start_ns : 0;
  for (guint i = 0; i < events->len; i++) {
    TsDbEvent *e = &g_array_index(events, TsDbEvent, i);
    e->start_ns -= t0;
    if (e->kind[0] == 'f' && strcmp(e->kind, "flow") == 0)
      e->to_ns -= t0;
  }
  assign_depths(events);
  g_array_prepend_vals(events, meta->data, meta->len);
  g_free(g_array_steal(meta, NULL)); /* their strings moved with them: no clearing */
  return events;
}
