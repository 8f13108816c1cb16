/* ts-ir-private.h — helpers shared by the Graph IR's data code (ts-ir.c) and its parser
 * (ts-ir-parse.c). Not API: never installed, never included outside compiler/.
 */
#pragma once

#include "ts-ir.h"

G_BEGIN_DECLS

/* Decimal digits to a positive int64; FALSE on overflow, on a non-digit, or on an empty string. */
gboolean ts__ir_parse_size(const char *digits, gsize len, gint64 *out);

/* Canonical form of a dim name: factors joined by '*' without spaces ("B * H" -> "B*H").
 * Each factor is an identifier or a positive integer. NULL when the name is malformed. */
char *ts__ir_dim_canonical(const char *name);

/* "f64, f32, tf32, ..." — for "unknown dtype" messages. */
const char *ts__ir_known_dtypes(void);

G_END_DECLS
