/* ts-suggest.h — what every parser of the compiler puts in its errors: "did you mean ...?"
 * (Graph IR dtypes and policies, Schedule IR knobs, the kernel language's names) and the
 * caret under the column. Internal to compiler/. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Levenshtein distance, ASCII case-insensitive. */
guint ts__edit_distance(const char *a, const char *b);
/* The candidate closest to word, or NULL when none is a plausible typo: at most two edits,
 * and at most a third of the word (more suggests an unrelated word). */
const char *ts__suggest(const char *word, const char *const *candidates, guint n);

/* The caret lines every parser's errors end with: "\n  " + line `line` of src + "\n  " + spaces
 * (tabs copied, so it lines up however the terminal expands them) + "^" under column col. */
void ts__append_caret(GString *out, const char *src, int line, int col);

G_END_DECLS
