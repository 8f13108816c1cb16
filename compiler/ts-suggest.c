/* ts-suggest.c — edit distance and the typo suggestions built on it; the caret under an error's
 * column. */
#include "ts-suggest.h"

#include <string.h>

guint
ts__edit_distance(const char *a, const char *b)
{
  gsize la = strlen(a), lb = strlen(b);
  g_autofree guint *row = g_new(guint, lb + 1);
  for (gsize j = 0; j <= lb; j++)
    row[j] = (guint)j;
  for (gsize i = 1; i <= la; i++) {
    guint diag = row[0];
    row[0] = (guint)i;
    for (gsize j = 1; j <= lb; j++) {
      guint up = row[j];
      guint cost = g_ascii_tolower(a[i - 1]) == g_ascii_tolower(b[j - 1]) ? 0 : 1;
      row[j] = MIN(MIN(up + 1, row[j - 1] + 1), diag + cost);
      diag = up;
    }
  }
  return row[lb];
}

const char *
ts__suggest(const char *word, const char *const *candidates, guint n)
{
  if (word == NULL)
    return NULL;
  const char *best = NULL;
  guint best_d = G_MAXUINT;
  guint limit = MIN(2u, MAX(1u, (guint)strlen(word) / 3 + 1));
  for (guint i = 0; i < n; i++) {
    guint d = ts__edit_distance(word, candidates[i]);
    if (d < best_d) {
      best_d = d;
      best = candidates[i];
    }
  }
  return best_d <= limit ? best : NULL;
}

void
ts__append_caret(GString *out, const char *src, int line, int col)
{
  const char *p = src ? src : "";
  for (int l = 1; l < line && *p; p++)
    if (*p == '\n')
      l++;
  const char *end = strchr(p, '\n');
  const gsize len = end ? (gsize)(end - p) : strlen(p);
  g_string_append(out, "\n  ");
  g_string_append_len(out, p, (gssize)len);
  g_string_append(out, "\n  ");
  for (int c = 1; c < col; c++)
    g_string_append_c(out, (gsize)(c - 1) < len && p[c - 1] == '\t' ? '\t' : ' ');
  g_string_append_c(out, '^');
}
