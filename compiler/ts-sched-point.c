/* ts-sched-point.c — schedule points: one value per knob, canonical text and the stable hash
 * that names a point in the DB. Canonical knob order is the catalog's method order (block,
 * micro, warps, stages, vector, swizzle, threads, unroll, raster, mma, load; m, n, k inside), then
 * any other knob by name, so the text — and so the hash — does not depend on how the point
 * was written. */
#include "ts-sched-private.h"

#include <string.h>

typedef struct {
  const char *name; /* interned reference-counted string (g_ref_string), one reference */
  TsSchedValue v;   /* a string value likewise */
} PKnob;

static void
pknob_acquire(PKnob *k)
{
  g_ref_string_acquire((char *)k->name);
  if (k->v.kind == TS_SCHED_STR)
    g_ref_string_acquire((char *)k->v.s);
}

static void
pknob_release(PKnob *k)
{
  g_ref_string_release((char *)k->name);
  if (k->v.kind == TS_SCHED_STR)
    g_ref_string_release((char *)k->v.s);
}

struct _TsSchedPoint {
  GArray *knobs; /* PKnob, in insertion order */
  char hash[17]; /* "" until computed */
};

TsSchedPoint *
ts__sched_point_new_sized(guint n)
{
  TsSchedPoint *p = g_new0(TsSchedPoint, 1);
  p->knobs = g_array_sized_new(FALSE, FALSE, sizeof(PKnob), n);
  return p;
}

TsSchedPoint *
ts_sched_point_new(void)
{
  return ts__sched_point_new_sized(8);
}

void
ts_sched_point_free(TsSchedPoint *point)
{
  if (!point)
    return;
  for (guint i = 0; i < point->knobs->len; i++)
    pknob_release(&g_array_index(point->knobs, PKnob, i));
  g_array_unref(point->knobs);
  g_free(point);
}

TsSchedPoint *
ts_sched_point_copy(const TsSchedPoint *point)
{
  g_return_val_if_fail(point != NULL, NULL);
  TsSchedPoint *c = ts__sched_point_new_sized(point->knobs->len);
  g_array_append_vals(c->knobs, point->knobs->data, point->knobs->len);
  for (guint i = 0; i < c->knobs->len; i++)
    pknob_acquire(&g_array_index(c->knobs, PKnob, i));
  memcpy(c->hash, point->hash, sizeof c->hash);
  return c;
}

static PKnob *
find(const TsSchedPoint *point, const char *name)
{
  for (guint i = 0; i < point->knobs->len; i++) {
    PKnob *k = &g_array_index(point->knobs, PKnob, i);
    if (strcmp(k->name, name) == 0)
      return k;
  }
  return NULL;
}

const TsSchedValue *
ts__sched_point_lookup(const TsSchedPoint *point, const char *name)
{
  PKnob *k = find(point, name);
  return k ? &k->v : NULL;
}

/* Adds or replaces; string values are interned so equality can compare pointers. */
void
ts__sched_point_append(TsSchedPoint *point, const char *name, TsSchedValue v)
{
  if (v.kind == TS_SCHED_STR)
    v.s = g_ref_string_new_intern(v.s);
  point->hash[0] = '\0';
  PKnob *k = find(point, name);
  if (k) {
    if (k->v.kind == TS_SCHED_STR)
      g_ref_string_release((char *)k->v.s);
    k->v = v;
    return;
  }
  PKnob nk = {g_ref_string_new_intern(name), v};
  g_array_append_val(point->knobs, nk);
}

void
ts__sched_point_push_interned(TsSchedPoint *point, const char *name, TsSchedValue v)
{
  PKnob nk = {name, v};
  pknob_acquire(&nk);
  g_array_append_val(point->knobs, nk);
}

/* A knob in canonical order: the methods' knobs in the seeds' order, then the others by name.
 * Each knob's place in the method table is looked up once, not at every comparison. */
typedef struct {
  int method; /* -1: not a method's knob */
  guint arg;
  const PKnob *k;
} Ranked;

static int
canon_cmp(gconstpointer pa, gconstpointer pb)
{
  const Ranked *a = pa, *b = pb;
  if (a->method >= 0 && b->method >= 0)
    return a->method != b->method ? a->method - b->method : (int)a->arg - (int)b->arg;
  if (a->method >= 0 || b->method >= 0)
    return a->method >= 0 ? -1 : 1;
  return strcmp(a->k->name, b->k->name);
}

char *
ts_sched_point_to_string(const TsSchedPoint *point)
{
  g_return_val_if_fail(point != NULL, NULL);
  guint n = point->knobs->len;
  g_autofree Ranked *sorted = g_new(Ranked, MAX(n, 1));
  for (guint i = 0; i < n; i++) {
    sorted[i].k = &g_array_index(point->knobs, PKnob, i);
    sorted[i].method = ts__sched_knob_method(sorted[i].k->name, &sorted[i].arg);
  }
  if (n)
    qsort(sorted, n, sizeof(Ranked), canon_cmp);
  g_autofree TsKnobView *views = g_new0(TsKnobView, MAX(n, 1));
  for (guint i = 0; i < n; i++)
    views[i] = (TsKnobView){sorted[i].k->name, &sorted[i].k->v, 1};
  GString *s = g_string_new(NULL);
  ts__sched_print_knobs(s, views, n);
  return g_string_free(s, FALSE);
}

const char *
ts_sched_point_hash(const TsSchedPoint *point)
{
  g_return_val_if_fail(point != NULL, NULL);
  if (!point->hash[0]) {
    g_autofree char *text = ts_sched_point_to_string(point);
    g_autofree char *sha = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
    /* The hash is a cache of an immutable function of the point, so const stays honest. */
    memcpy(((TsSchedPoint *)point)->hash, sha, 16);
    ((TsSchedPoint *)point)->hash[16] = '\0';
  }
  return point->hash;
}

gboolean
ts_sched_point_equal(const TsSchedPoint *a, const TsSchedPoint *b)
{
  if (!a || !b)
    return a == b;
  if (a->knobs->len != b->knobs->len)
    return FALSE;
  for (guint i = 0; i < a->knobs->len; i++) {
    const PKnob *k = &g_array_index(a->knobs, PKnob, i);
    const TsSchedValue *v = ts__sched_point_lookup(b, k->name);
    if (!v || !ts__sched_value_equal(k->v, *v))
      return FALSE;
  }
  return TRUE;
}

TsSchedPoint *
ts_sched_point_parse(const char *text, GError **error)
{
  g_return_val_if_fail(text != NULL, NULL);
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text, error);
  if (!space)
    return NULL;
  for (guint i = 0; i < space->knobs->len; i++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, i);
    if (k->values->len != 1) {
      g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT,
                  "schedule: knob '%s' has %u values where a point needs one", k->name,
                  k->values->len);
      return NULL;
    }
  }
  if (space->constraints->len) {
    g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_NOT_POINT,
                "schedule: a point cannot carry constraints (.where)");
    return NULL;
  }
  return ts_sched_space_point_at(space, 0);
}

guint
ts_sched_point_n_knobs(const TsSchedPoint *point)
{
  g_return_val_if_fail(point != NULL, 0);
  return point->knobs->len;
}

const char *
ts_sched_point_knob_name(const TsSchedPoint *point, guint i)
{
  g_return_val_if_fail(point != NULL && i < point->knobs->len, NULL);
  return g_array_index(point->knobs, PKnob, i).name;
}

TsSchedValue
ts_sched_point_knob_value(const TsSchedPoint *point, guint i)
{
  g_return_val_if_fail(point != NULL && i < point->knobs->len, (TsSchedValue){0});
  return g_array_index(point->knobs, PKnob, i).v;
}

gboolean
ts_sched_point_has(const TsSchedPoint *point, const char *knob)
{
  g_return_val_if_fail(point != NULL && knob != NULL, FALSE);
  return find(point, knob) != NULL;
}

gint64
ts_sched_point_get_int(const TsSchedPoint *point, const char *knob, gint64 def)
{
  g_return_val_if_fail(point != NULL && knob != NULL, def);
  const PKnob *k = find(point, knob);
  return k && k->v.kind == TS_SCHED_INT ? k->v.i : def;
}

const char *
ts_sched_point_get_str(const TsSchedPoint *point, const char *knob, const char *def)
{
  g_return_val_if_fail(point != NULL && knob != NULL, def);
  const PKnob *k = find(point, knob);
  return k && k->v.kind == TS_SCHED_STR ? k->v.s : def;
}

void
ts_sched_point_set_int(TsSchedPoint *point, const char *knob, gint64 value)
{
  g_return_if_fail(point != NULL && knob != NULL);
  ts__sched_point_append(point, knob, (TsSchedValue){.kind = TS_SCHED_INT, .i = value});
}

void
ts_sched_point_set_str(TsSchedPoint *point, const char *knob, const char *value)
{
  g_return_if_fail(point != NULL && knob != NULL && value != NULL);
  ts__sched_point_append(point, knob, (TsSchedValue){.kind = TS_SCHED_STR, .s = value});
}
