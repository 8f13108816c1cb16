/* ts-studio-timeline-prep.c — the timeline's preparation, done once per set of events (in a
 * worker thread in the window): events grouped into rows by (lane, depth) and sorted by start,
 * a running maximum of end times for the binary search of the first visible event, the keys
 * that let a fold be found in one search, levels of detail per row (ts-studio-timeline-lod.c),
 * and memory in use over time from the allocations. A frame then costs O(pixels) whatever the
 * number of events. */
#include "ts-studio-timeline-private.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ---- */

typedef struct {
  GHashTable *by_text; /* "kind\037name" -> index + 1 */
  GArray *names;       /* TsTlName */
  /* Trace strings are interned, so the same pointers come back again and again: a small
   * direct-mapped cache keyed by pointer saves hashing the text of 10^6 events. */
  struct {
    const char *kind, *name;
    guint32 index;
  } cache[256];
} NameTable;

static guint32
name_index(NameTable *nt, const char *kind, const char *name)
{
  kind = kind ? kind : "";
  name = name ? name : "";
  guint slot = (guint)(((guintptr)name >> 4) ^ ((guintptr)kind >> 6)) & 255;
  if (nt->cache[slot].name == name && nt->cache[slot].kind == kind)
    return nt->cache[slot].index;
  g_autofree char *key = g_strconcat(kind, "\037", name, NULL);
  guint32 index = GPOINTER_TO_UINT(g_hash_table_lookup(nt->by_text, key));
  if (index == 0) {
    TsTlName n = {.kind = kind, .name = name};
    n.known = ts_trace_kind_from_name(kind, &n.k);
    n.meta = strcmp(kind, "lane") == 0 || strcmp(kind, "note") == 0;
    n.shape = strcmp(kind, "instant") == 0   ? TS_TL_INSTANT
              : strcmp(kind, "counter") == 0 ? TS_TL_COUNTER
              : strcmp(kind, "flow") == 0    ? TS_TL_FLOW
                                             : TS_TL_SLICE;
    if (!n.known)
      n.k = TS_TRACE_RANGE;
    g_array_append_val(nt->names, n);
    index = nt->names->len;
    g_hash_table_insert(nt->by_text, g_steal_pointer(&key), GUINT_TO_POINTER(index));
  }
  nt->cache[slot].kind = kind;
  nt->cache[slot].name = name;
  nt->cache[slot].index = index - 1;
  return index - 1;
}

static gboolean
is_memory_kind(const TsTlName *n)
{
  return n->known && (n->k == TS_TRACE_ALLOC || n->k == TS_TRACE_FREE);
}

/* ---- rows ---- */

/* Both halves of a 64-bit key: GLib's g_int64_hash keeps only the low 32 bits, so rows keyed
 * (lane << 32 | depth) all fell into one chain (a trace with 64,000 threads took 20 s to
 * prepare), and so would addresses that differ only above bit 32. */
guint
ts__tl_key64_hash(gconstpointer v)
{
  guint64 k = *(const guint64 *)v;
  return (guint)((k >> 32) * 0x9E3779B1u) ^ (guint)k;
}

static int
cmp_event(const void *pa, const void *pb)
{
  const TsTlEvent *a = pa, *b = pb;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  if (a->end != b->end) /* an enclosing event before what it holds */
    return a->end > b->end ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

void
ts__tl_visible(const TsTlRow *row, gint64 t0, gint64 t1, guint *first, guint *end)
{
  /* max_end rises with i, so the events ending before t0 are a prefix. */
  guint lo = 0, hi = row->n;
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (row->max_end[mid] < t0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *first = lo;
  *end = t1 == G_MAXINT64 ? row->n : ts__tl_lower_bound(row, lo, row->n, t1 + 1);
}

guint
ts__tl_lower_bound(const TsTlRow *row, guint lo, guint hi, gint64 t)
{
  while (lo < hi) {
    guint mid = lo + (hi - lo) / 2;
    if (row->ev[mid].start < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* ---- memory ---- */

int
ts__tl_cmp_stamp(const void *pa, const void *pb)
{
  const TsTlStamp *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Alloc adds its bytes at its address; free removes the allocation at its address, whatever
 * bytes it claims (a free of memory allocated before recording began changes nothing: its size
 * is unknown to the account). Events without an address count their own bytes. As in the
 * profiler's summary, when the device reported allocations (CUPTI, on device lanes) the host's
 * record of the same buffers is left out. */
static void
build_memory(TsTlView *tl, const guint32 *names_of)
{
  const TsDbEvent *ev = (const TsDbEvent *)tl->events->data;
  guint n_events = tl->events->len;
  gboolean device = FALSE;
  guint n = 0;
  for (guint i = 0; i < n_events; i++) {
    if (!is_memory_kind(&tl->names[names_of[i]]))
      continue;
    n++;
    device |= ev[i].lane >= TS_TRACE_DEVICE_LANE;
  }
  TsTlStamp *me = g_new(TsTlStamp, MAX(n, 1));
  guint m = 0;
  gboolean sorted = TRUE;
  for (guint i = 0; i < n_events; i++) {
    if (!is_memory_kind(&tl->names[names_of[i]]) || (device && ev[i].lane < TS_TRACE_DEVICE_LANE))
      continue;
    me[m] = (TsTlStamp){ev[i].start_ns, i};
    sorted &= m == 0 || me[m - 1].t <= me[m].t;
    m++;
  }
  if (!sorted)
    qsort(me, m, sizeof *me, ts__tl_cmp_stamp);

  TsTlMemory *mem = &tl->mem;
  mem->n = m;
  mem->t = g_new(gint64, MAX(m, 1));
  mem->v = g_new(gint64, MAX(m, 1));
  mem->index = g_new(guint32, MAX(m, 1));
  g_autoptr(GHashTable) live =
      g_hash_table_new_full(ts__tl_key64_hash, g_int64_equal, g_free, NULL);
  gint64 in_use = 0;
  for (guint j = 0; j < m; j++) {
    const TsDbEvent *e = &ev[me[j].index];
    gint64 addr = (gint64)e->address;
    gint64 *old = addr ? g_hash_table_lookup(live, &addr) : NULL;
    /* Sizes beyond 2^62 are no allocation anyone made: clamped so sums cannot overflow. */
    gint64 bytes = (gint64)MIN(e->bytes, (guint64)1 << 62);
    gboolean alloc = tl->names[names_of[me[j].index]].k == TS_TRACE_ALLOC;
    if (addr == 0) {
      /* No address (a Chrome trace keeps only sizes): each event counts its own bytes, as
       * the profiler's summary does. */
      in_use = alloc ? MIN(in_use + bytes, G_MAXINT64 / 2) : in_use - MIN(in_use, bytes);
    } else if (alloc) {
      /* Two allocations at one address without a free between: the second replaces the
       * first, so the account stays bounded by what could really be live. */
      if (old)
        in_use -= MIN(in_use, old[1]);
      in_use = MIN(in_use + bytes, G_MAXINT64 / 2);
      gint64 *entry = g_new(gint64, 2);
      entry[0] = addr;
      entry[1] = bytes;
      g_hash_table_replace(live, entry, entry);
    } else if (old) {
      in_use -= MIN(in_use, old[1]);
      g_hash_table_remove(live, &addr);
    }
    mem->t[j] = me[j].t;
    mem->v[j] = in_use;
    mem->index[j] = me[j].index;
    if (in_use > mem->peak) {
      mem->peak = in_use;
      mem->peak_t = me[j].t;
    }
  }
  g_free(me);
  ts__tl_max_build(&mem->tree, mem->v, m);
}

guint
ts__tl_memory_at(const TsTlMemory *mem, guint hint, gint64 t)
{
  /* Gallop from the hint, then binary search what the gallop bracketed: columns to the
   * right of the last one cost O(log distance), not O(log n). */
  guint lo = hint < mem->n && mem->t[hint] <= t ? hint : 0, step = 1, hi = lo + 1;
  while (hi < mem->n && mem->t[hi] <= t) {
    lo = hi;
    step *= 2;
    hi = lo + step;
  }
  hi = MIN(hi, mem->n);
  /* Now t[lo] <= t (unless lo is 0 and even it is later) and t[hi] > t or hi == n. */
  if (lo == 0 && (mem->n == 0 || mem->t[0] > t))
    return G_MAXUINT;
  while (hi - lo > 1) {
    guint mid = lo + (hi - lo) / 2;
    if (mem->t[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

void
ts__tl_memory_columns(const TsTlMemory *mem, gint64 t0, double ns_per_col, guint cols,
                      gint64 *out)
{
  /* Columns are walked left to right through the changes: up to 256 changes a column are read
   * one by one (a sequential read beats the tree there), more are skipped over with the block
   * maxima, so a frame costs O(min(changes, columns x log n)). */
  guint at = ts__tl_memory_at(mem, 0, t0);
  gint64 in_use = at == G_MAXUINT ? 0 : mem->v[at];
  guint k = at == G_MAXUINT ? 0 : at + 1; /* the next change */
  gint64 start = t0;
  for (guint col = 0; col < cols; col++) {
    /* Changes at the column's first moment set what is in use there. */
    while (k < mem->n && mem->t[k] <= start)
      in_use = mem->v[k++];
    gint64 end = t0 + (gint64)floor((col + 1) * ns_per_col);
    gint64 v = in_use;
    guint k0 = k;
    while (k < mem->n && mem->t[k] < end && k - k0 < 256) {
      v = MAX(v, mem->v[k]);
      k++;
    }
    if (k < mem->n && mem->t[k] < end) {
      guint kb = ts__tl_memory_at(mem, k, end - 1) + 1;
      v = MAX(v, ts__tl_max_range(&mem->tree, mem->v, k, kb));
      k = kb;
    }
    if (k > k0)
      in_use = mem->v[k - 1];
    out[col] = v;
    start = MAX(start, end);
  }
}

/* ---- nesting ---- */

typedef struct {
  gint64 start, dur;
  guint32 index;
} TimeKey;

/* By start, enclosing ranges first, as the recorder orders events. */
static int
cmp_time(const void *pa, const void *pb)
{
  const TimeKey *a = pa, *b = pb;
  if (a->start != b->start)
    return a->start < b->start ? -1 : 1;
  if (a->dur != b->dur)
    return a->dur > b->dur ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* The row depth of each event. Ranges keep the depth they were recorded at; a kernel, copy or
 * compile on a lane that has ranges goes one below the innermost range open when it starts
 * (the recorder gives them depth 0, which would put a compile on top of the trial range that
 * holds it). Returns NULL when no lane has ranges: every event keeps its own depth. */
static guint32 *
nest_depths(const TsDbEvent *ev, guint n, const TsTlName *names, const guint32 *names_of)
{
  g_autoptr(GHashTable) stacks =
      g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < n; i++)
    if (names[names_of[i]].k == TS_TRACE_RANGE && names[names_of[i]].shape == TS_TL_SLICE &&
        !g_hash_table_contains(stacks, GUINT_TO_POINTER(ev[i].lane + 1u)))
      g_hash_table_insert(stacks, GUINT_TO_POINTER(ev[i].lane + 1u),
                          g_array_new(FALSE, FALSE, sizeof(gint64)));
  if (g_hash_table_size(stacks) == 0)
    return NULL;

  /* In time order, enclosing ranges first; a recorded trace is already. */
  TimeKey *order = NULL;
  for (guint i = 1; i < n && order == NULL; i++) {
    TimeKey a = {ev[i - 1].start_ns, ev[i - 1].dur_ns, i - 1},
            b = {ev[i].start_ns, ev[i].dur_ns, i};
    if (cmp_time(&a, &b) > 0) {
      order = g_new(TimeKey, n);
      for (guint k = 0; k < n; k++)
        order[k] = (TimeKey){ev[k].start_ns, ev[k].dur_ns, k};
      qsort(order, n, sizeof *order, cmp_time);
    }
  }
  guint32 *depth = g_new(guint32, MAX(n, 1));
  guint32 last_lane = G_MAXUINT32;
  GArray *ends = NULL;
  for (guint k = 0; k < n; k++) {
    guint i = order ? order[k].index : k;
    const TsDbEvent *e = &ev[i];
    depth[i] = e->depth;
    if (e->lane != last_lane) {
      ends = g_hash_table_lookup(stacks, GUINT_TO_POINTER(e->lane + 1u));
      last_lane = e->lane;
    }
    const TsTlName *nm = &names[names_of[i]];
    if (ends == NULL || is_memory_kind(nm) || nm->meta || nm->shape == TS_TL_COUNTER ||
        nm->shape == TS_TL_FLOW)
      continue;
    while (ends->len > 0 && g_array_index(ends, gint64, ends->len - 1) <= e->start_ns)
      g_array_set_size(ends, ends->len - 1);
    if (nm->k == TS_TRACE_RANGE && nm->shape == TS_TL_SLICE) {
      gint64 end = e->start_ns + MAX(e->dur_ns, 0);
      g_array_append_val(ends, end);
    } else {
      depth[i] = MAX(e->depth, ends->len);
    }
  }
  g_free(order);
  return depth;
}

/* ---- the colour legend ---- */

/* The names taking the most time, whole trace: what the colours a user sees most stand for. */
static void
build_legend(TsTlView *tl)
{
  g_autofree gint64 *total = g_new0(gint64, MAX(tl->n_names, 1));
  for (guint k = 0; k < tl->n_rows; k++)
    for (guint i = 0; i < tl->rows[k].n; i++) {
      const TsTlEvent *e = &tl->rows[k].ev[i];
      if (tl->names[e->name].shape == TS_TL_SLICE)
        total[e->name] += e->end - e->start;
    }
  tl->n_legend = 0;
  for (guint k = 0; k < tl->n_names; k++) {
    if (total[k] <= 0)
      continue;
    /* Insertion into the short sorted list. */
    guint at = tl->n_legend;
    while (at > 0 && tl->legend_ns[at - 1] < total[k])
      at--;
    if (at >= TS_TL_LEGEND_MAX)
      continue;
    guint last = MIN(tl->n_legend, TS_TL_LEGEND_MAX - 1);
    for (guint j = last; j > at; j--) {
      tl->legend[j] = tl->legend[j - 1];
      tl->legend_ns[j] = tl->legend_ns[j - 1];
    }
    tl->legend[at] = k;
    tl->legend_ns[at] = total[k];
    tl->n_legend = MIN(tl->n_legend + 1, TS_TL_LEGEND_MAX);
  }
}

/* ---- the whole preparation ---- */

static gint64
row_key(guint32 lane, guint32 depth)
{
  return (gint64)((guint64)lane << 32 | depth);
}


/* Host threads first (they launch), then device streams; each lane's depths in order. */
typedef struct {
  guint32 lane, depth, k;
} RowOrder;

static int
cmp_row_order(const void *pa, const void *pb)
{
  const RowOrder *a = pa, *b = pb;
  if (a->lane != b->lane)
    return a->lane < b->lane ? -1 : 1;
  return a->depth < b->depth ? -1 : a->depth > b->depth;
}

void
ts__tl_prepare(TsTlView *tl)
{
  const TsDbEvent *ev = (const TsDbEvent *)tl->events->data;
  guint n = tl->events->len;
  NameTable nt = {
      .by_text = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
      .names = g_array_new(FALSE, FALSE, sizeof(TsTlName)),
  };
  guint32 *names_of = g_new(guint32, MAX(n, 1));
  tl->row_of = g_new(guint32, MAX(n, 1));

  /* Pass 1: names and the span; then where each event nests. */
  tl->span0 = n ? G_MAXINT64 : 0;
  tl->span1 = n ? G_MININT64 : 0;
  tl->lane_names = g_hash_table_new(NULL, NULL);
  tl->notes = g_ptr_array_new();
  guint n_meta = 0;
  for (guint i = 0; i < n; i++) {
    names_of[i] = name_index(&nt, ev[i].kind, ev[i].name);
    const TsTlName *nm = &g_array_index(nt.names, TsTlName, names_of[i]);
    if (nm->meta) {
      n_meta++;
      if (strcmp(nm->kind, "lane") == 0)
        g_hash_table_insert(tl->lane_names, GUINT_TO_POINTER(ev[i].lane + 1u), (gpointer)nm->name);
      else
        g_ptr_array_add(tl->notes, (gpointer)nm->name);
      continue;
    }
    tl->span0 = MIN(tl->span0, ev[i].start_ns);
    tl->span1 = MAX(tl->span1, ev[i].start_ns + MAX(ev[i].dur_ns, 0));
    if (nm->shape == TS_TL_FLOW) {
      tl->span0 = MIN(tl->span0, ev[i].to_ns);
      tl->span1 = MAX(tl->span1, ev[i].to_ns);
    }
  }
  if (n_meta == n) {
    tl->span0 = 0;
    tl->span1 = 0;
  }
  tl->parent.n_marks = n - n_meta;
  if (tl->span1 <= tl->span0)
    tl->span1 = tl->span0 + 1;
  tl->n_names = nt.names->len;
  tl->names = (TsTlName *)g_array_free(nt.names, FALSE);
  g_hash_table_unref(nt.by_text);
  guint32 *depth_of = nest_depths(ev, n, tl->names, names_of);

  /* Pass 2: which row each event goes to and how many each row holds. */
  g_autoptr(GHashTable) rows_by_key =
      g_hash_table_new_full(ts__tl_key64_hash, g_int64_equal, g_free, NULL);
  GArray *rows = g_array_new(FALSE, TRUE, sizeof(TsTlRow));
  /* Streams interleave in a recorded trace, so the row changes at almost every event: a
   * small direct-mapped cache in front of the table. */
  struct {
    gint64 key;
    guint32 row;
  } recent[64];
  for (guint k = 0; k < G_N_ELEMENTS(recent); k++)
    recent[k].row = G_MAXUINT32;
  for (guint i = 0; i < n; i++) {
    const TsTlName *nm = &tl->names[names_of[i]];
    if (is_memory_kind(nm) || nm->meta || nm->shape == TS_TL_COUNTER || nm->shape == TS_TL_FLOW) {
      tl->row_of[i] = G_MAXUINT32;
      continue;
    }
    guint32 depth = depth_of ? depth_of[i] : ev[i].depth;
    gint64 key = row_key(ev[i].lane, depth);
    guint slot = (ev[i].lane * 7 + depth) & 63;
    if (recent[slot].row == G_MAXUINT32 || recent[slot].key != key) {
      gpointer found = g_hash_table_lookup(rows_by_key, &key);
      if (found == NULL) {
        TsTlRow row = {.lane = ev[i].lane, .depth = depth};
        g_array_append_val(rows, row);
        found = GUINT_TO_POINTER(rows->len);
        g_hash_table_insert(rows_by_key, g_memdup2(&key, sizeof key), found);
      }
      recent[slot].key = key;
      recent[slot].row = GPOINTER_TO_UINT(found) - 1;
    }
    tl->row_of[i] = recent[slot].row;
    g_array_index(rows, TsTlRow, recent[slot].row).n++;
  }
  g_free(depth_of);

  /* Pass 3: fill the rows, sort what is not sorted already (a recorded trace is). */
  tl->n_rows = rows->len;
  TsTlRow *unsorted = (TsTlRow *)g_array_free(rows, FALSE);
  /* Rows in display order (usually a handful, but a trace may hold tens of thousands of
   * threads), each event's row renumbered. */
  RowOrder *perm = g_new(RowOrder, MAX(tl->n_rows, 1));
  guint32 *order = g_new(guint32, MAX(tl->n_rows, 1));
  for (guint k = 0; k < tl->n_rows; k++)
    perm[k] = (RowOrder){unsorted[k].lane, unsorted[k].depth, k};
  qsort(perm, tl->n_rows, sizeof *perm, cmp_row_order);
  TsTlRow *r = g_new(TsTlRow, MAX(tl->n_rows, 1));
  for (guint k = 0; k < tl->n_rows; k++) {
    r[k] = unsorted[perm[k].k];
    order[perm[k].k] = k;
    r[k].ev = g_new(TsTlEvent, MAX(r[k].n, 1));
    r[k].n = 0;
  }
  g_free(unsorted);
  g_free(perm);
  for (guint i = 0; i < n; i++) {
    if (tl->row_of[i] == G_MAXUINT32)
      continue;
    tl->row_of[i] = order[tl->row_of[i]];
    TsTlRow *row = &r[tl->row_of[i]];
    row->ev[row->n++] = (TsTlEvent){
        .start = ev[i].start_ns,
        .end = ev[i].start_ns + MAX(ev[i].dur_ns, 0),
        .index = i,
        .name = names_of[i],
    };
  }
  g_free(order);

  for (guint k = 0; k < tl->n_rows; k++) {
    TsTlRow *row = &r[k];
    gboolean sorted = TRUE;
    for (guint i = 1; i < row->n && sorted; i++)
      sorted = cmp_event(&row->ev[i - 1], &row->ev[i]) <= 0;
    if (!sorted)
      qsort(row->ev, row->n, sizeof *row->ev, cmp_event);
    row->max_end = g_new(gint64, MAX(row->n, 1));
    row->fold_key = g_new(gint64, MAX(row->n, 1));
    gint64 m = G_MININT64;
    for (guint i = 0; i < row->n; i++)
      row->max_end[i] = m = MAX(m, row->ev[i].end);
    for (guint i = 0; i + 1 < row->n; i++)
      row->fold_key[i] =
          MAX(row->ev[i + 1].start - row->max_end[i], row->ev[i + 1].end - row->ev[i + 1].start);
    if (row->n)
      row->fold_key[row->n - 1] = G_MAXINT64;
    ts__tl_max_build(&row->fold_tree, row->fold_key, row->n);
    ts__tl_build_lod(row, tl->span0, tl->span1);
  }
  tl->rows = r;
  build_legend(tl);
  build_memory(tl, names_of);
  ts__tl_build_counters(tl, names_of);
  ts__tl_build_flows(tl, names_of);
  g_free(names_of);
}

void
ts__tl_release(TsTlView *tl)
{
  for (guint k = 0; k < tl->n_rows; k++) {
    TsTlRow *row = &tl->rows[k];
    g_free(row->ev);
    g_free(row->max_end);
    g_free(row->fold_key);
    ts__tl_max_clear(&row->fold_tree);
    for (guint l = 0; l < row->n_levels; l++)
      g_free(row->lod[l]);
    g_free(row->lod);
    g_free(row->n_buckets);
  }
  g_free(tl->rows);
  g_free(tl->names);
  if (tl->lane_names)
    g_hash_table_unref(tl->lane_names);
  if (tl->notes)
    g_ptr_array_unref(tl->notes);
  g_free(tl->row_of);
  g_free(tl->mem.t);
  g_free(tl->mem.v);
  g_free(tl->mem.index);
  ts__tl_max_clear(&tl->mem.tree);
  ts__tl_release_tracks(tl);
}
