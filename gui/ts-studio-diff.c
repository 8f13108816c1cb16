/* ts-studio-diff.c — line diffs of two stage texts (two schedules' Tile IR or target source):
 * Myers' O(ND) algorithm in its linear-space form (middle snake, divide and conquer), so two
 * unrelated 10^4-line sources cost O(N) memory rather than O(D^2), and unified-diff text for
 * the file export. */
#include "ts-studio-data.h"

#include <string.h>

struct _TsStudioDiff {
  char *a, *b;   /* copies the lines point into */
  GArray *lines; /* TsStudioDiffLine */
  guint n_changed;
  guint n_a, n_b;
  gboolean a_no_eol, b_no_eol; /* the last line has no newline */
};

typedef struct {
  const char *text;
  guint len;
} Line;

/* Lines of text without their newlines; *no_eol when the last one lacks one. */
static GArray *
split_lines(const char *text, gboolean *no_eol)
{
  GArray *lines = g_array_new(FALSE, FALSE, sizeof(Line));
  const char *p = text;
  *no_eol = FALSE;
  while (*p) {
    const char *nl = strchr(p, '\n');
    Line l = {p, nl ? (guint)(nl - p) : (guint)strlen(p)};
    g_array_append_val(lines, l);
    if (!nl) {
      *no_eol = TRUE;
      break;
    }
    p = nl + 1;
  }
  return lines;
}

/* Lines compare as small integers: one hash lookup per line instead of a memcmp per probe.
 * A last line without its newline differs from the same text with one, as in diff(1). */
typedef struct {
  const char *text;
  guint len;
  gboolean no_eol;
} LineKey;

static guint
line_hash(gconstpointer p)
{
  const LineKey *k = p;
  guint h = 5381u + (guint)k->no_eol;
  for (guint i = 0; i < k->len; i++)
    h = h * 33u + (guchar)k->text[i];
  return h;
}

static gboolean
line_equal(gconstpointer x, gconstpointer y)
{
  const LineKey *a = x, *b = y;
  return a->len == b->len && a->no_eol == b->no_eol && memcmp(a->text, b->text, a->len) == 0;
}

static gint *
line_ids(GHashTable *ids, GArray *keys, const GArray *lines, gboolean no_eol)
{
  gint *out = g_new(gint, MAX(lines->len, 1));
  for (guint i = 0; i < lines->len; i++) {
    const Line *l = &g_array_index(lines, Line, i);
    LineKey k = {l->text, l->len, no_eol && i == lines->len - 1};
    gpointer id;
    if (!g_hash_table_lookup_extended(ids, &k, NULL, &id)) {
      LineKey *stored = g_new(LineKey, 1);
      *stored = k;
      g_array_append_val(keys, stored);
      id = GINT_TO_POINTER(g_hash_table_size(ids));
      g_hash_table_insert(ids, stored, id);
    }
    out[i] = GPOINTER_TO_INT(id);
  }
  return out;
}

typedef struct {
  const gint *a, *b;
  gboolean *del, *add; /* per line of a / b: not part of the common subsequence */
  gint *vf, *vb;       /* furthest-reaching x per diagonal, offset by `off` */
  gint off;
} Myers;

/* The middle snake of a[a0..a1) against b[b0..b1) (both non-empty, ends differing): the
 * diagonal run an optimal path crosses halfway, as [*xs,*xe) x [*ys,*ye) relative to a0/b0. */
static void
middle_snake(Myers *m, gint a0, gint a1, gint b0, gint b1, gint *xs, gint *ys, gint *xe,
             gint *ye)
{
  const gint n = a1 - a0, mm = b1 - b0, delta = n - mm, max = (n + mm + 1) / 2;
  const gboolean odd = (delta & 1) != 0;
  gint *vf = m->vf + m->off, *vb = m->vb + m->off;
  vf[1] = 0;
  vb[1] = 0;
  for (gint d = 0; d <= max; d++) {
    for (gint k = -d; k <= d; k += 2) {
      gint x = (k == -d || (k != d && vf[k - 1] < vf[k + 1])) ? vf[k + 1] : vf[k - 1] + 1;
      gint y = x - k, x0 = x, y0 = y;
      while (x < n && y < mm && m->a[a0 + x] == m->b[b0 + y])
        x++, y++;
      vf[k] = x;
      /* The backward search of step d-1 reached diagonals delta-(d-1)..delta+(d-1). */
      if (odd && k >= delta - (d - 1) && k <= delta + (d - 1) && vf[k] + vb[delta - k] >= n) {
        *xs = x0, *ys = y0, *xe = x, *ye = y;
        return;
      }
    }
    /* The same from the ends, in reversed coordinates (u, v) = (n - x, mm - y). */
    for (gint c = -d; c <= d; c += 2) {
      gint u = (c == -d || (c != d && vb[c - 1] < vb[c + 1])) ? vb[c + 1] : vb[c - 1] + 1;
      gint v = u - c, u0 = u, v0 = v;
      while (u < n && v < mm && m->a[a1 - 1 - u] == m->b[b1 - 1 - v])
        u++, v++;
      vb[c] = u;
      if (!odd && delta - c >= -d && delta - c <= d && vf[delta - c] + vb[c] >= n) {
        *xs = n - u, *ys = mm - v, *xe = n - u0, *ye = mm - v0;
        return;
      }
    }
  }
  g_assert_not_reached(); /* the two searches always meet by d = ceil((n + m) / 2) */
}

static void
compare(Myers *m, gint a0, gint a1, gint b0, gint b1)
{
  while (a0 < a1 && b0 < b1 && m->a[a0] == m->b[b0])
    a0++, b0++;
  while (a0 < a1 && b0 < b1 && m->a[a1 - 1] == m->b[b1 - 1])
    a1--, b1--;
  if (a0 == a1) {
    for (gint j = b0; j < b1; j++)
      m->add[j] = TRUE;
    return;
  }
  if (b0 == b1) {
    for (gint i = a0; i < a1; i++)
      m->del[i] = TRUE;
    return;
  }
  gint xs, ys, xe, ye;
  middle_snake(m, a0, a1, b0, b1, &xs, &ys, &xe, &ye);
  compare(m, a0, a0 + xs, b0, b0 + ys);
  compare(m, a0 + xe, a1, b0 + ye, b1);
}

/* Lines found only on one side cannot be in the common subsequence: they are marked and left
 * out before the search (as diff(1) does), so unrelated texts cost O(N), not O(N^2), and the
 * script stays minimal. */
static void
compare_lines(const gint *ia, gint n, const gint *ib, gint mm, guint n_ids, gboolean *del,
              gboolean *add)
{
  g_autofree guint8 *in_a = g_new0(guint8, n_ids + 1), *in_b = g_new0(guint8, n_ids + 1);
  for (gint i = 0; i < n; i++)
    in_a[ia[i]] = 1;
  for (gint j = 0; j < mm; j++)
    in_b[ib[j]] = 1;
  g_autofree gint *xa = g_new(gint, MAX(n, 1)), *xb = g_new(gint, MAX(mm, 1));
  g_autofree gint *from_a = g_new(gint, MAX(n, 1)), *from_b = g_new(gint, MAX(mm, 1));
  gint cn = 0, cm = 0;
  for (gint i = 0; i < n; i++) {
    if (in_b[ia[i]])
      xa[cn] = ia[i], from_a[cn++] = i;
    else
      del[i] = TRUE;
  }
  for (gint j = 0; j < mm; j++) {
    if (in_a[ib[j]])
      xb[cm] = ib[j], from_b[cm++] = j;
    else
      add[j] = TRUE;
  }
  g_autofree gboolean *cdel = g_new0(gboolean, MAX(cn, 1));
  g_autofree gboolean *cadd = g_new0(gboolean, MAX(cm, 1));
  g_autofree gint *vf = g_new0(gint, 2 * (cn + cm) + 4);
  g_autofree gint *vb = g_new0(gint, 2 * (cn + cm) + 4);
  Myers m = {xa, xb, cdel, cadd, vf, vb, cn + cm + 2};
  compare(&m, 0, cn, 0, cm);
  for (gint k = 0; k < cn; k++)
    del[from_a[k]] = cdel[k];
  for (gint k = 0; k < cm; k++)
    add[from_b[k]] = cadd[k];
}

static void
free_key(gpointer p)
{
  g_free(*(LineKey **)p);
}

TsStudioDiff *
ts_studio_diff(const char *a, const char *b)
{
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  TsStudioDiff *diff = g_new0(TsStudioDiff, 1);
  diff->a = g_strdup(a);
  diff->b = g_strdup(b);
  diff->lines = g_array_new(FALSE, FALSE, sizeof(TsStudioDiffLine));
  g_autoptr(GArray) la = split_lines(diff->a, &diff->a_no_eol);
  g_autoptr(GArray) lb = split_lines(diff->b, &diff->b_no_eol);
  diff->n_a = la->len;
  diff->n_b = lb->len;

  g_autoptr(GHashTable) ids = g_hash_table_new(line_hash, line_equal);
  g_autoptr(GArray) keys = g_array_new(FALSE, FALSE, sizeof(LineKey *));
  g_array_set_clear_func(keys, free_key);
  g_autofree gint *ia = line_ids(ids, keys, la, diff->a_no_eol);
  g_autofree gint *ib = line_ids(ids, keys, lb, diff->b_no_eol);
  gint n = (gint)la->len, mm = (gint)lb->len;
  g_autofree gboolean *del = g_new0(gboolean, MAX(n, 1));
  g_autofree gboolean *add = g_new0(gboolean, MAX(mm, 1));
  compare_lines(ia, n, ib, mm, g_hash_table_size(ids), del, add);

  /* Deletions before the additions that replace them, as unified diffs show them. */
  gint i = 0, j = 0;
  while (i < n || j < mm) {
    TsStudioDiffLine out;
    if (i < n && del[i]) {
      const Line *l = &g_array_index(la, Line, i);
      out = (TsStudioDiffLine){TS_STUDIO_DIFF_DEL, (guint)i + 1, 0, l->text, l->len};
      i++;
      diff->n_changed++;
    } else if (j < mm && add[j]) {
      const Line *l = &g_array_index(lb, Line, j);
      out = (TsStudioDiffLine){TS_STUDIO_DIFF_ADD, 0, (guint)j + 1, l->text, l->len};
      j++;
      diff->n_changed++;
    } else {
      g_assert(i < n && j < mm);
      const Line *l = &g_array_index(la, Line, i);
      out = (TsStudioDiffLine){TS_STUDIO_DIFF_SAME, (guint)i + 1, (guint)j + 1, l->text, l->len};
      i++, j++;
    }
    g_array_append_val(diff->lines, out);
  }
  return diff;
}

void
ts_studio_diff_free(TsStudioDiff *diff)
{
  if (diff == NULL)
    return;
  g_array_unref(diff->lines);
  g_free(diff->a);
  g_free(diff->b);
  g_free(diff);
}

const GArray *
ts_studio_diff_lines(const TsStudioDiff *diff)
{
  g_return_val_if_fail(diff != NULL, NULL);
  return diff->lines;
}

guint
ts_studio_diff_n_changed(const TsStudioDiff *diff)
{
  g_return_val_if_fail(diff != NULL, 0);
  return diff->n_changed;
}

/* "-START,COUNT" as diff(1) writes it: COUNT 1 is left out, and an empty range starts at the
 * line before it. */
static void
append_range(GString *s, char sign, guint first, guint count)
{
  if (count == 1)
    g_string_append_printf(s, "%c%u", sign, first);
  else
    g_string_append_printf(s, "%c%u,%u", sign, count ? first : first - 1, count);
}

static void
append_line(GString *s, const TsStudioDiff *diff, const TsStudioDiffLine *l)
{
  static const char mark[] = {[TS_STUDIO_DIFF_SAME] = ' ', [TS_STUDIO_DIFF_DEL] = '-',
                              [TS_STUDIO_DIFF_ADD] = '+'};
  g_string_append_c(s, mark[l->op]);
  g_string_append_len(s, l->text, l->len);
  g_string_append_c(s, '\n');
  gboolean last_a = l->a_line && l->a_line == diff->n_a && diff->a_no_eol;
  gboolean last_b = l->b_line && l->b_line == diff->n_b && diff->b_no_eol;
  if (last_a || last_b)
    g_string_append(s, "\\ No newline at end of file\n");
}

char *
ts_studio_diff_to_unified(const TsStudioDiff *diff, const char *a_name, const char *b_name,
                          guint context)
{
  g_return_val_if_fail(diff != NULL, NULL);
  const GArray *lines = diff->lines;
  GString *s = g_string_new(NULL);
  if (diff->n_changed == 0)
    return g_string_free(s, FALSE);
  g_string_append_printf(s, "--- %s\n+++ %s\n", a_name ? a_name : "a", b_name ? b_name : "b");
  guint i = 0;
  while (i < lines->len) {
    const TsStudioDiffLine *l = &g_array_index(lines, TsStudioDiffLine, i);
    if (l->op == TS_STUDIO_DIFF_SAME) {
      i++;
      continue;
    }
    /* A hunk: context before the change, then changes and the unchanged runs between them
     * while a run is short enough that two hunks would share context. */
    guint start = i > context ? i - context : 0, end = i;
    for (;;) {
      while (end < lines->len && g_array_index(lines, TsStudioDiffLine, end).op != TS_STUDIO_DIFF_SAME)
        end++;
      guint same = end;
      while (same < lines->len && g_array_index(lines, TsStudioDiffLine, same).op == TS_STUDIO_DIFF_SAME)
        same++;
      if (same < lines->len && same - end <= 2 * context) {
        end = same;
        continue;
      }
      end = MIN(end + context, lines->len);
      break;
    }
    /* Line numbers where the hunk starts in a and b: its first line's, or for a side the
     * hunk holds no line of, one past the lines before it. */
    guint a_first = 0, b_first = 0, a_count = 0, b_count = 0;
    guint a_before = 0, b_before = 0;
    for (guint k = 0; k < start; k++) {
      const TsStudioDiffLine *p = &g_array_index(lines, TsStudioDiffLine, k);
      a_before = p->a_line ? p->a_line : a_before;
      b_before = p->b_line ? p->b_line : b_before;
    }
    for (guint k = start; k < end; k++) {
      const TsStudioDiffLine *p = &g_array_index(lines, TsStudioDiffLine, k);
      if (p->a_line) {
        a_first = a_first ? a_first : p->a_line;
        a_count++;
      }
      if (p->b_line) {
        b_first = b_first ? b_first : p->b_line;
        b_count++;
      }
    }
    g_string_append(s, "@@ ");
    append_range(s, '-', a_first ? a_first : a_before + 1, a_count);
    g_string_append_c(s, ' ');
    append_range(s, '+', b_first ? b_first : b_before + 1, b_count);
    g_string_append(s, " @@\n");
    for (guint k = start; k < end; k++)
      append_line(s, diff, &g_array_index(lines, TsStudioDiffLine, k));
    i = end;
  }
  return g_string_free(s, FALSE);
}
