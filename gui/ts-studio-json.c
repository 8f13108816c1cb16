/* ts-studio-json.c — one element of a trace's events array parsed into a flat, reused tree.
 *
 * json-glib builds a GObject-backed tree: a JsonNode per value, a hash table per object, a
 * string per key, each malloc'd and freed again. For a 10^6-event trace that was 70% of the
 * read (glibc's malloc and free, GSlice, hashing) and every worker-thread variant of it was
 * slower still. Trace events are small objects read once: here the nodes of an element go
 * into one array and its strings into one buffer, both kept from element to element, so the
 * steady state allocates nothing. Members are found by a linear scan, which for a dozen keys
 * beats hashing them.
 *
 * It accepts exactly RFC 8259 JSON (what json-glib accepts too, less its extensions): UTF-8
 * text, no trailing commas, no comments; nesting deeper than TS_JSON_MAX_DEPTH is refused
 * rather than recursed into. */
#include "ts-studio-trace-private.h"

#include <string.h>

#define NONE G_MAXUINT32

/* The parse-time form of a node: indices, since the array may move while it grows. */
typedef struct {
  TsJsonNode node;
  guint32 next, child, key, str; /* node indices, string offsets; NONE: none */
} Slot;

struct _TsJson {
  GArray *slots;    /* Slot */
  GString *strings; /* keys and string values, each NUL-terminated */
  const char *text, *end, *p;
  const char *error;
  gsize error_at;
};

TsJson *
ts__json_new(void)
{
  TsJson *j = g_new0(TsJson, 1);
  j->slots = g_array_sized_new(FALSE, FALSE, sizeof(Slot), 64);
  j->strings = g_string_sized_new(1024);
  return j;
}

void
ts__json_free(TsJson *j)
{
  if (j == NULL)
    return;
  g_array_unref(j->slots);
  g_string_free(j->strings, TRUE);
  g_free(j);
}

static gboolean
fail(TsJson *j, const char *what)
{
  if (j->error == NULL) {
    j->error = what;
    j->error_at = (gsize)(j->p - j->text);
  }
  return FALSE;
}

static void
skip_space(TsJson *j)
{
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
    j->p++;
}

static guint32
new_slot(TsJson *j, TsJsonType type)
{
  guint32 i = j->slots->len;
  g_array_set_size(j->slots, i + 1);
  Slot *s = &g_array_index(j->slots, Slot, i);
  memset(s, 0, sizeof *s);
  s->node.type = type;
  s->next = s->child = s->key = s->str = NONE;
  s->node.text = j->p;
  return i;
}

static int
hex(char c)
{
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

static gboolean
read_hex4(TsJson *j, guint32 *u)
{
  if (j->end - j->p < 4)
    return fail(j, "a \\u escape cut short");
  *u = 0;
  for (int k = 0; k < 4; k++) {
    int h = hex(j->p[k]);
    if (h < 0)
      return fail(j, "a \\u escape that is not four hex digits");
    *u = *u << 4 | (guint32)h;
  }
  j->p += 4;
  return TRUE;
}

/* The string at p (on its opening quote), unescaped into strings: its offset. */
static gboolean
read_string(TsJson *j, guint32 *offset)
{
  j->p++;
  *offset = (guint32)j->strings->len;
  for (;;) {
    const char *run = j->p;
    while (j->p < j->end && *j->p != '"' && *j->p != '\\' && (guchar)*j->p >= 0x20)
      j->p++;
    if (j->p > run) {
      const char *bad;
      if (!g_utf8_validate_len(run, (gsize)(j->p - run), &bad)) {
        j->p = bad;
        return fail(j, "a string that is not UTF-8");
      }
      g_string_append_len(j->strings, run, j->p - run);
    }
    if (j->p >= j->end)
      return fail(j, "a string with no closing quote");
    char c = *j->p++;
    if (c == '"')
      break;
    if (c != '\\') {
      j->p--;
      return fail(j, "a control character in a string (escape it)");
    }
    if (j->p >= j->end)
      return fail(j, "a string with no closing quote");
    c = *j->p++;
    switch (c) {
    case '"':
    case '\\':
    case '/':
      g_string_append_c(j->strings, c);
      break;
    case 'b':
      g_string_append_c(j->strings, '\b');
      break;
    case 'f':
      g_string_append_c(j->strings, '\f');
      break;
    case 'n':
      g_string_append_c(j->strings, '\n');
      break;
    case 'r':
      g_string_append_c(j->strings, '\r');
      break;
    case 't':
      g_string_append_c(j->strings, '\t');
      break;
    case 'u': {
      guint32 u;
      if (!read_hex4(j, &u))
        return FALSE;
      if (u >= 0xD800 && u < 0xDC00 && j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u') {
        const char *back = j->p;
        guint32 lo;
        j->p += 2;
        if (!read_hex4(j, &lo))
          return FALSE;
        if (lo >= 0xDC00 && lo < 0xE000)
          u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
        else
          j->p = back; /* a lone high surrogate; the next escape is read on its own */
      }
      if (u >= 0xD800 && u < 0xE000)
        u = 0xFFFD; /* lone surrogates are no characters: the replacement character */
      char utf8[6];
      g_string_append_len(j->strings, utf8, g_unichar_to_utf8(u, utf8));
      break;
    }
    default:
      j->p--;
      return fail(j, "an unknown escape in a string");
    }
  }
  g_string_append_c(j->strings, '\0');
  return TRUE;
}

static gboolean
read_number(TsJson *j, Slot *s)
{
  const char *start = j->p;
  gboolean negative = j->p < j->end && *j->p == '-';
  j->p += negative;
  if (j->p >= j->end || !g_ascii_isdigit(*j->p))
    return fail(j, "a number without digits");
  guint64 u = 0;
  gboolean overflow = FALSE;
  if (*j->p == '0') {
    j->p++;
  } else {
    while (j->p < j->end && g_ascii_isdigit(*j->p)) {
      guint d = (guint)(*j->p++ - '0');
      overflow |= u > (G_MAXUINT64 - d) / 10;
      u = u * 10 + d;
    }
  }
  gboolean integer = TRUE;
  if (j->p < j->end && *j->p == '.') {
    integer = FALSE;
    j->p++;
    if (j->p >= j->end || !g_ascii_isdigit(*j->p))
      return fail(j, "a number with no digits after its point");
    while (j->p < j->end && g_ascii_isdigit(*j->p))
      j->p++;
  }
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    integer = FALSE;
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
      j->p++;
    if (j->p >= j->end || !g_ascii_isdigit(*j->p))
      return fail(j, "a number with no digits in its exponent");
    while (j->p < j->end && g_ascii_isdigit(*j->p))
      j->p++;
  }
  guint64 limit = negative ? (guint64)G_MAXINT64 + 1 : (guint64)G_MAXINT64;
  if (integer && !overflow && u <= limit) {
    s->node.type = TS_JSON_INT;
    s->node.v.i = negative ? (gint64)(0 - u) : (gint64)u;
    return TRUE;
  }
  /* g_ascii_strtod needs the digits NUL-terminated; a number is rarely long. */
  gsize n = (gsize)(j->p - start);
  char buf[64];
  g_autofree char *big = n >= sizeof buf ? g_strndup(start, n) : NULL;
  if (big == NULL) {
    memcpy(buf, start, n);
    buf[n] = '\0';
  }
  s->node.type = TS_JSON_DOUBLE;
  s->node.v.d = g_ascii_strtod(big ? big : buf, NULL);
  return TRUE;
}

static gboolean
literal(TsJson *j, const char *word, gsize len)
{
  if ((gsize)(j->end - j->p) < len || memcmp(j->p, word, len) != 0)
    return fail(j, "an unexpected character");
  j->p += len;
  return TRUE;
}

static gboolean read_value(TsJson *j, guint32 *index, guint depth);

/* The members or elements of the object or array at p, after its opening bracket. */
static gboolean
read_children(TsJson *j, guint32 parent, gboolean object, guint depth)
{
  char close = object ? '}' : ']';
  skip_space(j);
  if (j->p < j->end && *j->p == close) {
    j->p++;
    return TRUE;
  }
  guint32 last = NONE;
  for (;;) {
    guint32 key = NONE;
    if (object) {
      skip_space(j);
      if (j->p >= j->end || *j->p != '"')
        return fail(j, "expected a member name in quotes");
      if (!read_string(j, &key))
        return FALSE;
      skip_space(j);
      if (j->p >= j->end || *j->p != ':')
        return fail(j, "expected ':' after a member name");
      j->p++;
    }
    guint32 child;
    if (!read_value(j, &child, depth + 1))
      return FALSE;
    g_array_index(j->slots, Slot, child).key = key;
    if (last == NONE)
      g_array_index(j->slots, Slot, parent).child = child;
    else
      g_array_index(j->slots, Slot, last).next = child;
    last = child;
    skip_space(j);
    if (j->p < j->end && *j->p == ',') {
      j->p++;
      continue;
    }
    if (j->p < j->end && *j->p == close) {
      j->p++;
      return TRUE;
    }
    return fail(j, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static gboolean
read_value(TsJson *j, guint32 *index, guint depth)
{
  if (depth > TS_JSON_MAX_DEPTH)
    return fail(j, "nested too deeply");
  skip_space(j);
  if (j->p >= j->end)
    return fail(j, "expected a value");
  guint32 i = *index = new_slot(j, TS_JSON_NULL);
  gboolean ok;
  switch (*j->p) {
  case '{':
  case '[': {
    gboolean object = *j->p == '{';
    g_array_index(j->slots, Slot, i).node.type = object ? TS_JSON_OBJECT : TS_JSON_ARRAY;
    j->p++;
    ok = read_children(j, i, object, depth);
    break;
  }
  case '"': {
    guint32 str;
    ok = read_string(j, &str);
    Slot *s = &g_array_index(j->slots, Slot, i);
    s->node.type = TS_JSON_STRING;
    s->str = str;
    break;
  }
  case 't':
  case 'f': {
    gboolean t = *j->p == 't';
    ok = t ? literal(j, "true", 4) : literal(j, "false", 5);
    Slot *s = &g_array_index(j->slots, Slot, i);
    s->node.type = TS_JSON_BOOL;
    s->node.v.b = t;
    break;
  }
  case 'n':
    ok = literal(j, "null", 4);
    break;
  default:
    ok = *j->p == '-' || g_ascii_isdigit(*j->p)
             ? read_number(j, &g_array_index(j->slots, Slot, i))
             : fail(j, "an unexpected character");
  }
  Slot *s = &g_array_index(j->slots, Slot, i);
  s->node.text_len = (gsize)(j->p - s->node.text);
  return ok;
}

const TsJsonNode *
ts__json_parse(TsJson *j, const char *text, gsize len, char **why)
{
  g_array_set_size(j->slots, 0);
  g_string_truncate(j->strings, 0);
  j->text = j->p = text;
  j->end = text + len;
  j->error = NULL;
  guint32 root;
  gboolean ok = read_value(j, &root, 0);
  if (ok) {
    skip_space(j);
    if (j->p < j->end)
      ok = fail(j, "text after the value");
  }
  if (!ok) {
    *why = g_strdup_printf("byte %" G_GSIZE_FORMAT ": %s", j->error_at, j->error);
    return NULL;
  }
  /* Indices and offsets become pointers, now that nothing moves. */
  Slot *slots = (Slot *)j->slots->data;
  const char *strings = j->strings->str;
  for (guint i = 0; i < j->slots->len; i++) {
    Slot *s = &slots[i];
    s->node.next = s->next == NONE ? NULL : &slots[s->next].node;
    s->node.child = s->child == NONE ? NULL : &slots[s->child].node;
    s->node.key = s->key == NONE ? NULL : strings + s->key;
    if (s->node.type == TS_JSON_STRING)
      s->node.v.s = strings + s->str;
  }
  return &slots[root].node;
}

const TsJsonNode *
ts__json_member(const TsJsonNode *object, const char *name)
{
  if (object == NULL || object->type != TS_JSON_OBJECT)
    return NULL;
  /* The last of equal names, as json-glib keeps it. */
  const TsJsonNode *found = NULL;
  for (const TsJsonNode *m = object->child; m; m = m->next)
    if (m->key[0] == name[0] && strcmp(m->key, name) == 0)
      found = m;
  return found;
}

const char *
ts__json_string_member(const TsJsonNode *object, const char *name)
{
  const TsJsonNode *n = ts__json_member(object, name);
  return n && n->type == TS_JSON_STRING ? n->v.s : NULL;
}

void
ts__json_append_compact(GString *out, const TsJsonNode *node)
{
  gboolean in_string = FALSE, escaped = FALSE;
  for (gsize k = 0; k < node->text_len; k++) {
    char c = node->text[k];
    if (in_string) {
      in_string = escaped || c != '"';
      escaped = !escaped && c == '\\';
    } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
      continue;
    } else {
      in_string = c == '"';
    }
    g_string_append_c(out, c);
  }
}
