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

/* ---- one element's JSON, parsed into a reused flat tree (ts-studio-json.c) ---- */

#define TS_JSON_MAX_DEPTH 256

typedef enum {
  TS_JSON_NULL,
  TS_JSON_BOOL,
  TS_JSON_INT,    /* an integer that fits 64 bits */
  TS_JSON_DOUBLE, /* any other number */
  TS_JSON_STRING,
  TS_JSON_OBJECT,
  TS_JSON_ARRAY,
} TsJsonType;

typedef struct _TsJsonNode TsJsonNode;
struct _TsJsonNode {
  TsJsonType type;
  const char *key;          /* a member's name; NULL for an array's element or the root */
  const TsJsonNode *next;   /* the next member or element */
  const TsJsonNode *child;  /* an object's first member, an array's first element */
  const char *text;         /* the value as written in the source, text_len bytes */
  gsize text_len;
  union {
    gboolean b;
    gint64 i;
    double d;
    const char *s; /* unescaped, NUL-terminated */
  } v;
};

typedef struct _TsJson TsJson;
TsJson *ts__json_new(void);
void ts__json_free(TsJson *json);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsJson, ts__json_free)
/* Parses text (len bytes, one JSON value) into json, replacing what it held: the root, valid
 * until the next parse; NULL with *why ("byte 12: expected ',' or '}'") when it is not JSON. */
const TsJsonNode *ts__json_parse(TsJson *json, const char *text, gsize len, char **why);
/* The member of that name (the last, if repeated), or NULL (also when object is no object). */
const TsJsonNode *ts__json_member(const TsJsonNode *object, const char *name);
/* A member's string value, or NULL when it is missing or no string. */
const char *ts__json_string_member(const TsJsonNode *object, const char *name);
/* The value's text as written, less the whitespace between its tokens: [[1,2],{"a":"b c"}]. */
void ts__json_append_compact(GString *out, const TsJsonNode *node);
