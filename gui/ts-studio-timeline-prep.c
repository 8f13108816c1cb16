/* ts-studio-timeline-prep.c — the timeline's preparation, done once per set of events (in a
 * worker thread in the window): events grouped into rows by (lane, depth) and sorted by start,
 * a running maximum of end times for the binary search of the first visible event, levels of
 * detail per row, and memory in use over time from the allocations. A frame then costs
 * O(pixels) whatever the number of events. */
#include "ts-studio-timeline-private.h"

#include <stdlib.h>
#include <string.h>

/* ---- names ---- */

typedef struct {
  GHashTable *by_text;  /* "kind\037name" -> index + 1 */
  GArray *names;        /* TsTlName */
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

/* ---- block maxima ---- */

void
ts__tl_max_build(TsTlMaxTree *tree, const gint64 *v, guint n)
{
  tree->n = n;
  tree->n_levels = 0;
  while (((guint64)2 << tree->n_levels) <= n)
    tree->n_levels++;
  tree->max = g_new0(gint64 *, MAX(tree->n_levels, 1));
  for (guint l = 0; l < tree->n_levels; l++) {
    guint nb = n >> (l + 1);
    const gint64 *below = l == 0 ? v : tree->max[l - 1];
    gint64 *m = tree->max[l] = g_new(gint64, MAX(nb, 1));
    for (guint k = 0; k < nb; k++)
      m[k] = MAX(below[2 * k], below[2 * k + 1]);
  }
}

void
ts__tl_max_clear(TsTlMaxTree *tree)
{
  for (guint l = 0; l < tree->n_levels; l++)
    g_free(tree->max[l]);
  g_clear_pointer(&tree->max, g_free);
  tree->n_levels = 0;
}

/* The maximum over the block of 2^l elements at p (p aligned to it). */
static inline gint64
block_max(const TsTlMaxTree *tree, const gint64 *v, guint l, guint p)
{
  return l == 0 ? v[p] : tree->max[l - 1][p >> l];
}

/* The level of the largest aligned block that starts at p and ends by b. */
static inline guint
block_level(const TsTlMaxTree *tree, guint p, guint b)
{
  guint l = 0;
  while (l < tree->n_levels && (p & ((2u << l) - 1)) == 0 && (guint64)p + (2u << l) <= b)
    l++;
  return l;
}

gint64
ts__tl_max_range(const TsTlMaxTree *tree, const gint64 *v, guint a, guint b)
{
  gint64 best = G_MININT64;
  b = MIN(b, tree->n);
  while (a < b) {
    guint l = block_level(tree, a, b);
    best = MAX(best, block_max(tree, v, l, a));
    a += 1u << l;
  }
  return best;
}

guint
ts__tl_max_find(const TsTlMaxTree *tree, const gint64 *v, guint i, gint64 threshold)
{
  /* Skip whole blocks whose maximum stays under the threshold, growing the blocks while
   * nothing is found, then narrow down inside the first block that has it. */
  guint p = i, l = 0;
  while (p < tree->n) {
    if (block_max(tree, v, l, p) < threshold) {
      p += 1u << l;
      l = block_level(tree, p, tree->n);
    } else if (l == 0) {
      return p;
    } else {
      l--;
    }
  }
  return tree->n;
}

/* ---- rows ---- */

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

/* Host threads first (they launch), then device streams; each lane's depths in order. */
static int
cmp_row(const void *pa, const void *pb)
{
  const TsTlRow *a = pa, *b = pb;
  if (a->lane != b->lane)
    return a->lane < b->lane ? -1 : 1;
  return a->depth < b->depth ? -1 : a->depth > b->depth;
}

static guint
next_pow2(guint64 v)
{
  guint p = 0;
  while (((guint64)1 << p) < v)
    p++;
  return p;
}

/* Level 0 gets about two buckets per event of the row, so a fold's coverage is drawn at the
 * resolution of the events it holds; 2^18 at most (3 MiB a row), 16 at least. */
static void
build_lod(TsTlRow *row, gint64 span0, gint64 span1)
{
  guint p = CLAMP(next_pow2(2 * (guint64)row->n), 4, 18);
  gint64 len = MAX(span1 - span0, 1);
  row->bucket_ns = MAX((len + ((gint64)1 << p) - 1) >> p, 1);
  guint levels = 1;
  for (gint64 nb = (len + row->bucket_ns - 1) / row->bucket_ns; nb > 1; nb = (nb + 1) / 2)
    levels++;
  row->n_levels = levels;
  row->n_buckets = g_new(guint, levels);
  row->lod = g_new(TsTlBucket *, levels);

  gint64 b_ns = row->bucket_ns;
  guint nb0 = (guint)((len + b_ns - 1) / b_ns);
  row->n_buckets[0] = nb0;
  TsTlBucket *l0 = g_new(TsTlBucket, nb0);
  float *best = g_new0(float, nb0); /* the longest overlap so far: who dominates */
  for (guint b = 0; b < nb0; b++)
    l0[b] = (TsTlBucket){.name = G_MAXUINT32};
  for (guint i = 0; i < row->n; i++) {
    const TsTlEvent *e = &row->ev[i];
    gint64 s = e->start - span0, t = e->end - span0;
    guint first = (guint)MIN(s / b_ns, nb0 - 1);
    l0[first].count++;
    if (t <= s) {
      if (l0[first].name == G_MAXUINT32)
        l0[first].name = e->name;
      continue;
    }
    guint last = (guint)MIN((t - 1) / b_ns, nb0 - 1);
    for (guint b = first; b <= last; b++) {
      gint64 lo = MAX(s, (gint64)b * b_ns), hi = MIN(t, (gint64)(b + 1) * b_ns);
      float overlap = (float)(hi - lo);
      l0[b].busy_ns += overlap;
      if (overlap > best[b] || l0[b].name == G_MAXUINT32) {
        best[b] = overlap;
        l0[b].name = e->name;
      }
    }
  }
  g_free(best);
  row->lod[0] = l0;

  for (guint l = 1; l < levels; l++) {
    const TsTlBucket *lo = row->lod[l - 1];
    guint nlo = row->n_buckets[l - 1], n = (nlo + 1) / 2;
    TsTlBucket *up = g_new(TsTlBucket, n);
    for (guint b = 0; b < n; b++) {
      TsTlBucket a = lo[2 * b];
      TsTlBucket c = 2 * b + 1 < nlo ? lo[2 * b + 1] : (TsTlBucket){.name = G_MAXUINT32};
      /* The child busier for its own dominant name: an approximation that never names
       * something absent from the bucket. */
      up[b].busy_ns = a.busy_ns + c.busy_ns;
      up[b].count = a.count + c.count;
      up[b].name = a.name == G_MAXUINT32 || (c.name != G_MAXUINT32 && c.busy_ns > a.busy_ns)
                     ? c.name
                     : a.name;
    }
    row->n_buckets[l] = n;
    row->lod[l] = up;
  }
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

typedef struct {
  gint64 t;
  guint32 index;
} MemEvent;

static int
cmp_mem(const void *pa, const void *pb)
{
  const MemEvent *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Alloc adds its bytes at its address; free removes the allocation at its address, whatever
 * bytes it claims (a free of memory allocated before recording began changes nothing: its size
 * is unknown to the account). As in the profiler's summary, when the device reported
 * allocations (CUPTI, on device lanes) the host's record of the same buffers is left out. */
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
  MemEvent *me = g_new(MemEvent, MAX(n, 1));
  guint m = 0;
  gboolean sorted = TRUE;
  for (guint i = 0; i < n_events; i++) {
    if (!is_memory_kind(&tl->names[names_of[i]]) || (device && ev[i].lane < TS_TRACE_DEVICE_LANE))
      continue;
    me[m] = (MemEvent){ev[i].start_ns, i};
    sorted &= m == 0 || me[m - 1].t <= me[m].t;
    m++;
  }
  if (!sorted)
    qsort(me, m, sizeof *me, cmp_mem);

  TsTlMemory *mem = &tl->mem;
  mem->n = m;
  mem->t = g_new(gint64, MAX(m, 1));
  mem->v = g_new(gint64, MAX(m, 1));
  mem->index = g_new(guint32, MAX(m, 1));
  g_autoptr(GHashTable) live = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  gint64 in_use = 0;
  for (guint j = 0; j < m; j++) {
    const TsDbEvent *e = &ev[me[j].index];
    gint64 addr = (gint64)e->address;
    gint64 *old = g_hash_table_lookup(live, &addr);
    /* Sizes beyond 2^62 are no allocation anyone made: clamped so sums cannot overflow. */
    gint64 bytes = (gint64)MIN(e->bytes, (guint64)1 << 62);
    if (tl->names[names_of[me[j].index]].k == TS_TRACE_ALLOC) {
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

/* ---- the whole preparation ---- */

static gint64
row_key(guint32 lane, guint32 depth)
{
  return (gint64)((guint64)lane << 32 | depth);
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

  /* Pass 1: names, the span, which row each event goes to and how many each row holds. */
  g_autoptr(GHashTable) rows_by_key =
    g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
  GArray *rows = g_array_new(FALSE, TRUE, sizeof(TsTlRow));
  tl->span0 = n ? G_MAXINT64 : 0;
  tl->span1 = n ? G_MININT64 : 0;
  /* Streams interleave in a recorded trace, so the row changes at almost every event: a
   * small direct-mapped cache in front of the table. */
  struct {
    gint64 key;
    guint32 row;
  } recent[64];
  for (guint k = 0; k < G_N_ELEMENTS(recent); k++)
    recent[k].row = G_MAXUINT32;
  for (guint i = 0; i < n; i++) {
    names_of[i] = name_index(&nt, ev[i].kind, ev[i].name);
    gint64 end = ev[i].start_ns + MAX(ev[i].dur_ns, 0);
    tl->span0 = MIN(tl->span0, ev[i].start_ns);
    tl->span1 = MAX(tl->span1, end);
    if (is_memory_kind(&g_array_index(nt.names, TsTlName, names_of[i]))) {
      tl->row_of[i] = G_MAXUINT32;
      continue;
    }
    gint64 key = row_key(ev[i].lane, ev[i].depth);
    guint slot = (ev[i].lane * 7 + ev[i].depth) & 63;
    if (recent[slot].row == G_MAXUINT32 || recent[slot].key != key) {
      gpointer found = g_hash_table_lookup(rows_by_key, &key);
      if (found == NULL) {
        TsTlRow row = {.lane = ev[i].lane, .depth = ev[i].depth};
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
  if (tl->span1 <= tl->span0)
    tl->span1 = tl->span0 + 1;
  tl->n_names = nt.names->len;
  tl->names = (TsTlName *)g_array_free(nt.names, FALSE);
  g_hash_table_unref(nt.by_text);

  /* Pass 2: fill the rows, sort what is not sorted already (a recorded trace is). */
  tl->n_rows = rows->len;
  TsTlRow *unsorted = (TsTlRow *)g_array_free(rows, FALSE);
  /* Rows in display order (a handful of them: insertion sort), each event's row renumbered. */
  guint32 *perm = g_new(guint32, MAX(tl->n_rows, 1)), *order = g_new(guint32, MAX(tl->n_rows, 1));
  for (guint k = 0; k < tl->n_rows; k++) {
    guint j = k;
    for (; j > 0 && cmp_row(&unsorted[perm[j - 1]], &unsorted[k]) > 0; j--)
      perm[j] = perm[j - 1];
    perm[j] = k;
  }
  TsTlRow *r = g_new(TsTlRow, MAX(tl->n_rows, 1));
  for (guint k = 0; k < tl->n_rows; k++) {
    r[k] = unsorted[perm[k]];
    order[perm[k]] = k;
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
    build_lod(row, tl->span0, tl->span1);
  }
  tl->rows = r;
  build_memory(tl, names_of);
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
  g_free(tl->row_of);
  g_free(tl->mem.t);
  g_free(tl->mem.v);
  g_free(tl->mem.index);
  ts__tl_max_clear(&tl->mem.tree);
}
