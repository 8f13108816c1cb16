/* ts-studio-trace-scan.c — the events of a Chrome trace one at a time, without the whole file's
 * DOM. json-glib builds a tree of the entire text (a 111 MB trace took 15 s and 2.4 GB); this
 * only finds where each element of the events array begins and ends, skipping strings and
 * nesting, so the caller parses one small object at a time and memory follows the events kept.
 *
 * The array form ([...]) and the object form ({"traceEvents": [...], ...}) are both read, and,
 * as the format allows and Perfetto does, an array cut short (a crashed or still-running
 * writer) ends where the text does. */
#include "ts-studio-trace-private.h"

#include <string.h>

#include "ts-db.h"

static gboolean
scan_fail(GError **error, const TsTraceScan *s, gsize at, const char *what)
{
  g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_TRACE, "%s: byte %" G_GSIZE_FORMAT ": %s",
              s->name, at, what);
  return FALSE;
}

static void
skip_space(TsTraceScan *s)
{
  while (s->pos < s->len) {
    char c = s->text[s->pos];
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
      return;
    s->pos++;
  }
}

/* Past the string that starts at pos (on its opening quote). */
static gboolean
skip_string(TsTraceScan *s, GError **error)
{
  gsize start = s->pos++;
  while (s->pos < s->len) {
    const char *q = memchr(s->text + s->pos, '"', s->len - s->pos);
    if (q == NULL)
      break;
    gsize at = (gsize)(q - s->text);
    /* A quote preceded by an odd number of backslashes is escaped. */
    gsize bs = 0;
    while (at - bs > start + 1 && s->text[at - bs - 1] == '\\')
      bs++;
    s->pos = at + 1;
    if (bs % 2 == 0)
      return TRUE;
  }
  s->pos = s->len;
  return scan_fail(error, s, start, "a string that never ends (the file is cut short)");
}

/* Past the value at pos: a string, an object or array (nested at most TS_DB_JSON_MAX_DEPTH
 * deep), or a number or literal. The value's syntax is left to the parser of the element. */
static gboolean
skip_value(TsTraceScan *s, GError **error)
{
  skip_space(s);
  if (s->pos >= s->len)
    return scan_fail(error, s, s->pos, "a value expected, the file ends");
  char c = s->text[s->pos];
  if (c == '"')
    return skip_string(s, error);
  if (c != '{' && c != '[') {
    while (s->pos < s->len && !strchr(",]} \n\r\t", s->text[s->pos]))
      s->pos++;
    return TRUE;
  }
  gsize start = s->pos;
  guint depth = 0;
  while (s->pos < s->len) {
    c = s->text[s->pos];
    if (c == '"') {
      if (!skip_string(s, error))
        return FALSE;
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > TS_DB_JSON_MAX_DEPTH)
        return scan_fail(error, s, s->pos, "JSON nested too deep: not a Chrome trace");
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        s->pos++;
        return TRUE;
      }
    }
    s->pos++;
  }
  return scan_fail(error, s, start, "an object or array that never ends (the file is cut short)");
}

gboolean
ts__trace_scan_begin(TsTraceScan *s, const char *text, gsize len, const char *name,
                     GError **error)
{
  *s = (TsTraceScan){.text = text, .len = len, .name = name};
  skip_space(s);
  if (s->pos < s->len && s->text[s->pos] == '[') {
    s->pos++;
    return TRUE;
  }
  if (s->pos >= s->len || s->text[s->pos] != '{')
    return scan_fail(error, s, s->pos,
                     "expected a JSON object with traceEvents or an array of events (not a "
                     "Chrome Trace Event file?)");
  s->pos++;
  /* The object's members until traceEvents; the others (metadata) are skipped. */
  for (;;) {
    skip_space(s);
    if (s->pos >= s->len || s->text[s->pos] == '}')
      return scan_fail(error, s, s->pos, "no traceEvents array (not a Chrome Trace Event file?)");
    if (s->text[s->pos] != '"')
      return scan_fail(error, s, s->pos, "expected a member name");
    gsize key = s->pos;
    if (!skip_string(s, error))
      return FALSE;
    gboolean events = s->pos - key == strlen("\"traceEvents\"") &&
                      memcmp(s->text + key, "\"traceEvents\"", s->pos - key) == 0;
    skip_space(s);
    if (s->pos >= s->len || s->text[s->pos] != ':')
      return scan_fail(error, s, s->pos, "expected ':' after a member name");
    s->pos++;
    skip_space(s);
    if (events) {
      if (s->pos >= s->len || s->text[s->pos] != '[')
        return scan_fail(error, s, s->pos, "traceEvents is not an array");
      s->pos++;
      return TRUE;
    }
    if (!skip_value(s, error))
      return FALSE;
    skip_space(s);
    if (s->pos < s->len && s->text[s->pos] == ',')
      s->pos++;
  }
}

int
ts__trace_scan_next(TsTraceScan *s, const char **element, gsize *length, GError **error)
{
  skip_space(s);
  if (s->pos < s->len && s->text[s->pos] == ',' && s->n > 0) {
    s->pos++;
    skip_space(s);
  }
  if (s->pos >= s->len) {
    if (s->n == 0) {
      scan_fail(error, s, s->pos, "the file is cut short before its first event");
      return -1;
    }
    s->truncated = TRUE; /* no closing ']': the writer stopped */
    return 0;
  }
  if (s->text[s->pos] == ']')
    return 0;
  gsize start = s->pos;
  if (!skip_value(s, error)) {
    /* The last element cut in half: what came before stands. */
    if (s->pos >= s->len && s->n > 0) {
      g_clear_error(error);
      s->truncated = TRUE;
      return 0;
    }
    return -1;
  }
  *element = s->text + start;
  *length = s->pos - start;
  s->n++;
  return 1;
}
