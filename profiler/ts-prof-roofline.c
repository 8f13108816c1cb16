/* ts-prof-roofline.c — the ceiling set (named roofs, stored as JSON in the device row) and the
 * roofline coordinates of a kernel against it. */
#include "ts-prof.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

struct _TsProfCeilings {
  char *backend;
  char *toolchain;
  char *method;
  GArray *roofs; /* TsProfCeiling, in the order set */
  int format;    /* the JSON version it was read from */
};

/* Each kind's section of the JSON, the key its figures are under, and their unit for people. */
static const struct {
  const char *section, *unit, *display;
} kinds[] = {
  [TS_PROF_COMPUTE] = {"compute", "gflops", "GFLOP/s"},
  [TS_PROF_MEMORY] = {"memory", "gbps", "GB/s"},
  [TS_PROF_RATE] = {"rates", "gops", "G/s"},
};

static void
roof_clear(gpointer p)
{
  TsProfCeiling *c = p;
  g_free(c->name);
}

TsProfCeilings *
ts_prof_ceilings_new(const char *backend, const char *toolchain)
{
  TsProfCeilings *c = g_new0(TsProfCeilings, 1);
  c->backend = g_strdup(backend ? backend : "");
  c->toolchain = g_strdup(toolchain ? toolchain : "");
  c->method = g_strdup("");
  c->format = TS_PROF_CEILINGS_FORMAT;
  c->roofs = g_array_new(FALSE, TRUE, sizeof(TsProfCeiling));
  g_array_set_clear_func(c->roofs, roof_clear);
  return c;
}

void
ts_prof_ceilings_free(TsProfCeilings *c)
{
  if (c == NULL)
    return;
  g_free(c->backend);
  g_free(c->toolchain);
  g_free(c->method);
  g_array_unref(c->roofs);
  g_free(c);
}

void
ts_prof_ceilings_set(TsProfCeilings *c, const char *name, TsProfCeilingKind kind, double value,
                     double per_core)
{
  for (guint i = 0; i < c->roofs->len; i++) {
    TsProfCeiling *r = &g_array_index(c->roofs, TsProfCeiling, i);
    if (strcmp(r->name, name) == 0) {
      r->kind = kind;
      r->value = value;
      r->per_core = per_core;
      return;
    }
  }
  TsProfCeiling r = {g_strdup(name), kind, value, per_core};
  g_array_append_val(c->roofs, r);
}

const TsProfCeiling *
ts_prof_ceilings_get(const TsProfCeilings *c, const char *name)
{
  for (guint i = 0; i < c->roofs->len; i++) {
    const TsProfCeiling *r = &g_array_index(c->roofs, TsProfCeiling, i);
    if (strcmp(r->name, name) == 0)
      return r;
  }
  return NULL;
}

char *
ts_prof_ceilings_scaling_note(const TsProfCeilings *c, guint cores)
{
  if (cores < 2)
    return NULL;
  g_autoptr(GString) low = g_string_new(NULL);
  for (guint i = 0; i < c->roofs->len; i++) {
    const TsProfCeiling *r = &g_array_index(c->roofs, TsProfCeiling, i);
    if (r->kind != TS_PROF_COMPUTE || r->per_core <= 0 || r->value >= 0.6 * cores * r->per_core)
      continue;
    g_string_append_printf(low, "%s%s %.1f GFLOP/s, %.2fx one core's %.1f", low->len ? "; " : "",
                           r->name, r->value, r->value / r->per_core, r->per_core);
  }
  if (low->len == 0)
    return NULL;
  return g_strdup_printf("the all-core FMA peaks scale poorly on %u cores (%s): other work held "
                         "cores while they were timed, or the cores share their FMA units (SMT "
                         "siblings); the roofs of multi-threaded kernels are then too low. "
                         "`tessera-tune devices --measure` on a quiet machine measures again",
                         cores, low->str);
}

guint
ts_prof_ceilings_count(const TsProfCeilings *c)
{
  return c->roofs->len;
}

const TsProfCeiling *
ts_prof_ceilings_nth(const TsProfCeilings *c, guint i)
{
  g_return_val_if_fail(i < c->roofs->len, NULL);
  return &g_array_index(c->roofs, TsProfCeiling, i);
}

const char *
ts_prof_ceilings_backend(const TsProfCeilings *c)
{
  return c->backend;
}

const char *
ts_prof_ceilings_toolchain(const TsProfCeilings *c)
{
  return c->toolchain;
}

int
ts_prof_ceilings_format(const TsProfCeilings *c)
{
  return c->format;
}

const char *
ts_prof_ceiling_unit(TsProfCeilingKind kind)
{
  g_return_val_if_fail(kind <= TS_PROF_RATE, "");
  return kinds[kind].display;
}

const char *
ts_prof_ceilings_method(const TsProfCeilings *c)
{
  return c->method;
}

void
ts_prof_ceilings_set_method(TsProfCeilings *c, const char *method)
{
  g_free(c->method);
  c->method = g_strdup(method ? method : "");
}

char *
ts_prof_ceilings_to_json(const TsProfCeilings *c)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "version");
  json_builder_add_int_value(b, TS_PROF_CEILINGS_FORMAT);
  json_builder_set_member_name(b, "backend");
  json_builder_add_string_value(b, c->backend);
  json_builder_set_member_name(b, "toolchain");
  json_builder_add_string_value(b, c->toolchain);
  json_builder_set_member_name(b, "method");
  json_builder_add_string_value(b, c->method);
  for (int kind = TS_PROF_COMPUTE; kind <= TS_PROF_RATE; kind++) {
    json_builder_set_member_name(b, kinds[kind].section);
    json_builder_begin_object(b);
    for (guint i = 0; i < c->roofs->len; i++) {
      const TsProfCeiling *r = &g_array_index(c->roofs, TsProfCeiling, i);
      if ((int)r->kind != kind)
        continue;
      json_builder_set_member_name(b, r->name);
      json_builder_begin_object(b);
      json_builder_set_member_name(b, kinds[kind].unit);
      json_builder_add_double_value(b, r->value);
      if (r->per_core > 0) {
        json_builder_set_member_name(b, "per_core");
        json_builder_add_double_value(b, r->per_core);
      }
      json_builder_end_object(b);
    }
    json_builder_end_object(b);
  }
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}

/* optional: the section may be missing or empty (the rates: a GPU has none, version 2 none) */
static gboolean
read_roofs(TsProfCeilings *c, JsonObject *o, TsProfCeilingKind kind, gboolean optional,
           GError **error)
{
  const char *member = kinds[kind].section;
  JsonNode *n = json_object_get_member(o, member);
  if (optional && n == NULL)
    return TRUE;
  if (n == NULL || !JSON_NODE_HOLDS_OBJECT(n) ||
      (!optional && json_object_get_size(json_node_get_object(n)) == 0)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "device ceilings: no \"%s\" roofs (re-measure with 'tessera-tune devices "
                "--measure')",
                member);
    return FALSE;
  }
  JsonObject *roofs = json_node_get_object(n);
  const char *unit = kinds[kind].unit;
  g_autoptr(GList) names = json_object_get_members(roofs);
  for (GList *l = names; l; l = l->next) {
    JsonNode *rn = json_object_get_member(roofs, l->data);
    JsonObject *r = JSON_NODE_HOLDS_OBJECT(rn) ? json_node_get_object(rn) : NULL;
    double v = r ? json_object_get_double_member_with_default(r, unit, -1) : -1;
    if (!(v > 0) || !isfinite(v)) {
      g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                  "device ceilings: roof \"%s\" has no positive \"%s\"", (const char *)l->data,
                  unit);
      return FALSE;
    }
    ts_prof_ceilings_set(c, l->data, kind, v,
                         json_object_get_double_member_with_default(r, "per_core", 0));
  }
  return TRUE;
}

TsProfCeilings *
ts_prof_ceilings_from_json(const char *json, GError **error)
{
  g_autoptr(JsonParser) p = json_parser_new();
  g_autoptr(GError) local = NULL;
  if (json == NULL || !json_parser_load_from_data(p, json, -1, &local)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO, "device ceilings: not JSON: %s",
                local ? local->message : "(none)");
    return NULL;
  }
  JsonNode *root = json_parser_get_root(p);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "device ceilings: expected a JSON object");
    return NULL;
  }
  JsonObject *o = json_node_get_object(root);
  gint64 format = json_object_get_int_member_with_default(o, "version", 1);
  if (format < 2 || format > TS_PROF_CEILINGS_FORMAT) {
    g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO,
                "device ceilings: stored in %s format (re-measure with 'tessera-tune "
                "devices --measure')",
                format < 2 ? "an older" : "a newer");
    return NULL;
  }
  g_autoptr(TsProfCeilings) c =
    ts_prof_ceilings_new(json_object_get_string_member_with_default(o, "backend", ""),
                         json_object_get_string_member_with_default(o, "toolchain", ""));
  ts_prof_ceilings_set_method(c, json_object_get_string_member_with_default(o, "method", ""));
  c->format = (int)format;
  if (!read_roofs(c, o, TS_PROF_COMPUTE, FALSE, error) ||
      !read_roofs(c, o, TS_PROF_MEMORY, FALSE, error) ||
      !read_roofs(c, o, TS_PROF_RATE, TRUE, error))
    return NULL;
  return g_steal_pointer(&c);
}

const char *
ts_prof_compute_roof(const char *backend, const char *storage_dtype, gboolean tensor_op)
{
  gboolean gpu = g_strcmp0(backend, "cuda") == 0;
  if (gpu && tensor_op) {
    static const char *const tensor[][2] = {{"bf16", "bf16_tensor"},
                                            {"f16", "f16_tensor"},
                                            {"fp8_e4m3", "fp8_tensor"},
                                            {"fp8_e5m2", "fp8_tensor"},
                                            {"f32", "tf32_tensor"}};
    for (guint i = 0; i < G_N_ELEMENTS(tensor); i++)
      if (g_strcmp0(storage_dtype, tensor[i][0]) == 0)
        return tensor[i][1];
  }
  /* A CPU's bf16 GEMM is held to the fastest of its engines that were measured (ts_prof_roofline):
   * AMX tiles, vdpbf16ps or f32 FMAs on widened panels. */
  if (!gpu && tensor_op && g_strcmp0(storage_dtype, "bf16") == 0)
    return "bf16_amx";
  return g_strcmp0(storage_dtype, "f64") == 0 ? "f64" : "f32";
}

gboolean
ts_prof_roofline(const TsProfCeilings *c, const char *compute, double flops, double bytes,
                 double seconds, TsProfRoofline *out)
{
  const TsProfCeiling *peak = compute ? ts_prof_ceilings_get(c, compute) : NULL;
  if (peak != NULL && peak->kind != TS_PROF_COMPUTE)
    peak = NULL;
  /* A CPU's bf16 GEMM runs on whichever engine is fastest here, and the tuner picks it: on an
   * Emerald Rapids core vdpbf16ps does 80 GFLOP/s where f32 FMAs on widened panels do 166, so a
   * roof of vdpbf16ps alone would put the kernel above 100% of it. */
  if (g_strcmp0(compute, "bf16_amx") == 0) {
    const char *engines[] = {"bf16_dot", "f32"};
    for (guint i = 0; i < G_N_ELEMENTS(engines); i++) {
      const TsProfCeiling *e = ts_prof_ceilings_get(c, engines[i]);
      if (e != NULL && e->kind == TS_PROF_COMPUTE && (peak == NULL || e->value > peak->value))
        peak = e;
    }
  }
  if (peak == NULL)
    peak = ts_prof_ceilings_get(c, "f32");
  const TsProfCeiling *dram = ts_prof_ceilings_get(c, "dram");
  if (peak == NULL || dram == NULL || !(seconds > 0))
    return FALSE;
  double ai = bytes > 0 ? flops / bytes : INFINITY;
  double mem_roof = ai * dram->value;
  gboolean memory_bound = mem_roof < peak->value;
  *out = (TsProfRoofline){
    .intensity = ai,
    .gflops = flops / seconds * 1e-9,
    .compute = peak->name,
    .bound = memory_bound ? dram->name : peak->name,
    .bound_gflops = memory_bound ? mem_roof : peak->value,
  };
  out->fraction = out->gflops / out->bound_gflops;
  return TRUE;
}

char *
ts_prof_roofline_to_json(const TsProfRoofline *r)
{
  g_autoptr(JsonBuilder) b = json_builder_new();
  json_builder_begin_object(b);
  json_builder_set_member_name(b, "intensity");
  json_builder_add_double_value(b, isfinite(r->intensity) ? r->intensity : -1);
  json_builder_set_member_name(b, "gflops");
  json_builder_add_double_value(b, r->gflops);
  json_builder_set_member_name(b, "compute");
  json_builder_add_string_value(b, r->compute);
  json_builder_set_member_name(b, "bound");
  json_builder_add_string_value(b, r->bound);
  json_builder_set_member_name(b, "bound_gflops");
  json_builder_add_double_value(b, r->bound_gflops);
  json_builder_set_member_name(b, "fraction");
  json_builder_add_double_value(b, r->fraction);
  json_builder_end_object(b);
  g_autoptr(JsonNode) root = json_builder_get_root(b);
  return json_to_string(root, FALSE);
}
