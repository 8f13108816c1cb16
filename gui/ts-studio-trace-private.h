/* ts-studio-trace-private.h — the Chrome trace reader's parts (ts-studio-trace*.c). Not API. */
#pragma once

#include "ts-studio-data.h"

/* Where the events array of a trace's text is, and how far it has been read. */
typedef struct {
  const char *text;
  gsize len, pos;
  const char *name; /* the file, for messages */
  guint n;          /* elements returned */
  gboolean truncated; /* the array had no closing ']' */
} TsTraceScan;

/* Positions s at the first element of the events array (the root array, or the traceEvents
 * member of the root object). FALSE with TS_STUDIO_ERROR_TRACE when the text has none. */
gboolean ts__trace_scan_begin(TsTraceScan *s, const char *text, gsize len, const char *name,
                              GError **error);
/* The next element's text (not NUL-terminated): 1; the end of the array: 0; an error: -1. */
int ts__trace_scan_next(TsTraceScan *s, const char **element, gsize *length, GError **error);
