/* ts-suggest.h — "did you mean ...?" for every parser of the compiler (Graph IR dtypes and
 * policies, Schedule IR knobs and names). Internal to compiler/. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Levenshtein distance, ASCII case-insensitive. */
guint ts__edit_distance(const char *a, const char *b);
/* The candidate closest to word, or NULL when none is a plausible typo: at most two edits,
 * and at most a third of the word (more suggests an unrelated word). */
const char *ts__suggest(const char *word, const char *const *candidates, guint n);

G_END_DECLS
