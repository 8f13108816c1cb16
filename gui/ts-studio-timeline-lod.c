/* ts-studio-timeline-lod.c — what the timeline aggregates ahead of any frame: per row, levels of
 * detail (busy time, event count and dominant name per power-of-two time bucket, as Perfetto's
 * mipmaps), which a fold draws from at O(its width in px); and block maxima over an array,
 * which find where a fold ends and the most memory in use under a pixel in O(log n). */
#include "ts-studio-timeline-private.h"

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

/* ---- levels of detail ---- */

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
void
ts__tl_build_lod(TsTlRow *row, gint64 span0, gint64 span1)
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
