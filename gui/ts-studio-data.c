/* ts-studio-data.c — the studio's view of a schedule cache: opened read-only, its devices (with
 * their measured roofs) and keys read once at open, trials turned into the points the views
 * plot (roofline coordinates, wall-clock time, the best flag), runs, profiles and events. */
#include "ts-studio-data.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-coll.h"
#include "ts-cost-model.h"
#include "ts-ir.h"
#include "ts-op.h"
#include "ts-sched.h"

G_DEFINE_QUARK(ts-studio-error-quark, ts_studio_error)

/* A workload with what the trial listing needs and the public struct does not carry. The
 * public part comes first so a TsStudioWorkload* is a Workload*. */
typedef struct {
  TsStudioWorkload pub;
  const char *compute_roof; /* static: the roof the op is held to on its device, or NULL */
} Workload;

struct _TsStudioDb {
  char *path;
  TsDb *db;
  GPtrArray *devices;   /* TsStudioDevice*, by id */
  GPtrArray *workloads; /* Workload*, by workload, device, toolchain id */
};

static void
device_free(TsStudioDevice *d)
{
  g_free(d->backend);
  g_free(d->name);
  g_free(d->arch);
  ts_prof_ceilings_free(d->ceilings);
  g_free(d);
}

static void
workload_free(Workload *w)
{
  g_free(w->pub.op);
  g_free(w->pub.shape);
  g_free(w->pub.dtype);
  g_free(w->pub.toolchain);
  g_free(w->pub.label);
  g_free(w->pub.key);
  g_free(w);
}

void
ts_studio_db_free(TsStudioDb *db)
{
  if (db == NULL)
    return;
  g_clear_pointer(&db->workloads, g_ptr_array_unref);
  g_clear_pointer(&db->devices, g_ptr_array_unref);
  ts_db_close(db->db);
  g_free(db->path);
  g_free(db);
}

/* TsDb's messages say what SQLite found; the studio's say which file and what to do about it,
 * since the user picked the file in a dialog and may not know what a schedule cache is. */
static void
set_open_error(GError **error, const char *path, const GError *cause)
{
  const char *what;
  if (cause->domain != TS_DB_ERROR)
    what = "it could not be read";
  else {
    switch ((TsDbError)cause->code) {
    case TS_DB_ERROR_NOT_A_DB:
      what = "it is not a schedule cache (not an SQLite database). Open the file tessera-tune "
             "writes: $XDG_CACHE_HOME/tessera/schedules.db, or the --db path it was given";
      break;
    case TS_DB_ERROR_CORRUPT:
      what = "the file is corrupt. Restore it from a backup, or import an export "
             "(tessera-tune import) into a new file";
      break;
    case TS_DB_ERROR_TOO_NEW:
      what = "it was written by a newer tessera. Upgrade tessera to open it";
      break;
    case TS_DB_ERROR_NEEDS_UPGRADE:
      what = "it was written by an older tessera. Let this build's tessera-tune upgrade it "
             "once (for example: tessera-tune export --db FILE -o /dev/null), then open it "
             "again";
      break;
    case TS_DB_ERROR_OPEN:
      what = "no such file, or it cannot be opened. Check the path and its permissions";
      break;
    case TS_DB_ERROR_FOREIGN:
      what = "it is not a Tessera schedule cache (another application's database, or a schema "
             "no tessera writes); it was left untouched";
      break;
    default:
      what = "it could not be read";
      break;
    }
  }
  g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN, "Cannot open %s: %s (%s)", path,
              what, cause->message);
}

/* Ceilings are a bonus: a device the profiler never measured, or measured by an older tessera,
 * is still shown, without roofs. */
static TsProfCeilings *
load_ceilings(TsDb *db, gint64 device_id, GError **error)
{
  g_autoptr(GError) local = NULL;
  g_autofree char *json = ts_db_get_device_peaks(db, device_id, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return NULL;
  }
  if (json == NULL)
    return NULL;
  TsProfCeilings *c = ts_prof_ceilings_from_json(json, &local);
  if (c == NULL)
    g_debug("device %" G_GINT64_FORMAT ": stored ceilings ignored: %s", device_id,
            local->message);
  return c;
}

static TsStudioDevice *
find_device(GPtrArray *devices, gint64 id)
{
  for (guint i = 0; i < devices->len; i++) {
    TsStudioDevice *d = devices->pdata[i];
    if (d->id == id)
      return d;
  }
  return NULL;
}

static gint
device_by_id(gconstpointer a, gconstpointer b)
{
  const TsStudioDevice *x = *(TsStudioDevice *const *)a, *y = *(TsStudioDevice *const *)b;
  return (x->id > y->id) - (x->id < y->id);
}

/* Names and counts the op library knows; an op this build does not know (a cache from another
 * tessera) is still listed, by its stored text, without FLOP counts. */
static void
resolve_op(TsDb *db, Workload *w)
{
  w->pub.flops = NAN;
  w->pub.bytes = NAN;
  g_autoptr(GError) local = NULL;
  /* A kernel file's op: registered from the source the cache keeps with its trials. */
  g_autofree char *src = NULL, *path = NULL;
  if (ts_op_lookup(w->pub.op) == NULL && g_str_has_prefix(w->pub.op, "kernel:") &&
      ts_db_get_kernel_source(db, w->pub.op, &path, &src, NULL))
    ts_op_register_kernel_op(w->pub.op, src, path, NULL);
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(w->pub.op, w->pub.shape, w->pub.dtype, &local);
  if (inst == NULL) {
    w->pub.label = g_strdup_printf("%s %s %s", w->pub.op, w->pub.shape, w->pub.dtype);
    return;
  }
  w->pub.label = ts_op_instance_describe(inst);
  w->pub.flops = ts_op_instance_flops(inst);
  w->pub.bytes = ts_op_instance_bytes(inst);
  w->compute_roof =
    ts_prof_compute_roof(w->pub.device->backend,
                         ts_dtype_name(ts_op_instance_dtype(inst)->storage),
                         ts_op_tensor_math(ts_op_instance_op(inst)));
}

static gboolean
read_keys(TsStudioDb *db, GError **error)
{
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db->db, error);
  if (keys == NULL)
    return FALSE;
  for (guint i = 0; i < keys->len; i++) {
    const TsDbTrialKey *k = keys->pdata[i];
    TsStudioDevice *dev = find_device(db->devices, k->device_id);
    if (dev == NULL) {
      dev = g_new0(TsStudioDevice, 1);
      dev->id = k->device_id;
      dev->backend = g_strdup(k->device.backend);
      dev->name = g_strdup(k->device.name);
      dev->arch = g_strdup(k->device.arch);
      dev->compute_units = k->device.compute_units;
      g_autoptr(GError) local = NULL;
      dev->ceilings = load_ceilings(db->db, dev->id, &local);
      g_ptr_array_add(db->devices, dev);
      if (local) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
      }
    }
    Workload *w = g_new0(Workload, 1);
    w->pub.workload_id = k->workload_id;
    w->pub.device_id = k->device_id;
    w->pub.toolchain_id = k->toolchain_id;
    w->pub.op = g_strdup(k->op);
    w->pub.shape = g_strdup(k->shape);
    w->pub.dtype = g_strdup(k->dtype);
    w->pub.toolchain = g_strdup_printf("%s %s", k->compiler, k->kgen_version);
    w->pub.device = dev;
    w->pub.n_trials = k->n_trials;
    w->pub.n_ok = k->n_ok;
    w->pub.key = g_strdup_printf("%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                                 k->workload_id, k->device_id, k->toolchain_id);
    resolve_op(db->db, w);
    g_ptr_array_add(db->workloads, w);
  }
  g_ptr_array_sort(db->devices, device_by_id);
  return TRUE;
}

TsStudioDb *
ts_studio_db_open(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(GError) local = NULL;
  g_autoptr(TsDb) handle = ts_db_open(path, TS_DB_OPEN_READ_ONLY, &local);
  if (handle == NULL) {
    set_open_error(error, path, local);
    return NULL;
  }
  /* SQLite reads only the pages a query touches, so a damaged file can open and list fine and
   * fail halfway through a view; better to refuse it here, where the message can say so. */
  g_autofree char *report = NULL;
  if (!ts_db_check_integrity(handle, &report)) {
    g_autofree char *first = g_strdup(report ? report : "");
    char *nl = strchr(first, '\n');
    if (nl)
      *nl = '\0';
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN,
                "Cannot open %s: the file is corrupt (integrity check: %s). Restore it from a "
                "backup, or import an export (tessera-tune import) into a new file",
                path, first);
    return NULL;
  }

  g_autoptr(TsStudioDb) db = g_new0(TsStudioDb, 1);
  db->path = g_strdup(path);
  db->db = g_steal_pointer(&handle);
  db->devices = g_ptr_array_new_with_free_func((GDestroyNotify)device_free);
  db->workloads = g_ptr_array_new_with_free_func((GDestroyNotify)workload_free);
  if (!read_keys(db, &local)) {
    set_open_error(error, path, local);
    return NULL;
  }
  return g_steal_pointer(&db);
}

const char *
ts_studio_db_path(const TsStudioDb *db)
{
  g_return_val_if_fail(db != NULL, NULL);
  return db->path;
}

TsDb *
ts_studio_db_handle(TsStudioDb *db)
{
  g_return_val_if_fail(db != NULL, NULL);
  return db->db;
}

GPtrArray *
ts_studio_db_devices(TsStudioDb *db)
{
  g_return_val_if_fail(db != NULL, NULL);
  return db->devices;
}

GPtrArray *
ts_studio_db_workloads(TsStudioDb *db)
{
  g_return_val_if_fail(db != NULL, NULL);
  return db->workloads;
}

/* Splits "W", "W/D" or "W/D/T" into ids; unset parts are 0. */
static gboolean
parse_key(const char *key, gint64 ids[3])
{
  g_auto(GStrv) parts = g_strsplit(key, "/", -1);
  guint n = g_strv_length(parts);
  if (n < 1 || n > 3)
    return FALSE;
  for (guint i = 0; i < 3; i++)
    ids[i] = 0;
  for (guint i = 0; i < n; i++) {
    guint64 v = 0;
    g_autofree char *part = g_strstrip(g_strdup(parts[i]));
    if (!g_ascii_string_to_unsigned(part, 10, 1, G_MAXINT64, &v, NULL))
      return FALSE;
    ids[i] = (gint64)v;
  }
  return TRUE;
}

const TsStudioWorkload *
ts_studio_db_find_workload(TsStudioDb *db, const char *key, GError **error)
{
  g_return_val_if_fail(db != NULL && key != NULL, NULL);
  gint64 ids[3];
  if (!parse_key(key, ids)) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                "workload '%s': expected W, W/D or W/D/T (workload, device and toolchain ids, "
                "e.g. 3 or 3/1/2)",
                key);
    return NULL;
  }
  const TsStudioWorkload *found = NULL;
  for (guint i = 0; i < db->workloads->len; i++) {
    const TsStudioWorkload *w = db->workloads->pdata[i];
    if (w->workload_id != ids[0] || (ids[1] && w->device_id != ids[1]) ||
        (ids[2] && w->toolchain_id != ids[2]))
      continue;
    /* A partial key names the key with the most trials: the one someone tuned for real. */
    if (found == NULL || w->n_trials > found->n_trials)
      found = w;
  }
  if (found == NULL)
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                "%s: no tuned workload %s (the cache holds %u tuned workloads; see the list)",
                db->path, key, db->workloads->len);
  return found;
}

/* ---- trials ---- */

void
ts_studio_trial_free(TsStudioTrial *t)
{
  if (t == NULL)
    return;
  g_free(t->schedule);
  g_free(t->strategy);
  g_free(t->error_text);
  g_free(t->created_at);
  g_free(t->bound);
  g_free(t);
}

static gboolean
number_member(JsonObject *o, const char *name, double *out)
{
  JsonNode *n = json_object_get_member(o, name);
  if (n == NULL || !JSON_NODE_HOLDS_VALUE(n))
    return FALSE;
  GType t = json_node_get_value_type(n);
  if (t != G_TYPE_DOUBLE && t != G_TYPE_INT64)
    return FALSE;
  *out = json_node_get_double(n);
  return TRUE;
}

/* The roofline the tuner stored with the trial: measured against the ceilings of that day,
 * which is what the trial should be judged by even if the device was re-measured since. */
static gboolean
stored_roofline(JsonObject *metrics, TsStudioTrial *t)
{
  JsonNode *rn = json_object_get_member(metrics, "roofline");
  if (rn == NULL || !JSON_NODE_HOLDS_OBJECT(rn))
    return FALSE;
  JsonObject *r = json_node_get_object(rn);
  double ai, gflops, bound_gflops, fraction;
  const char *bound = json_object_get_string_member_with_default(r, "bound", NULL);
  if (!number_member(r, "intensity", &ai) || !number_member(r, "gflops", &gflops) ||
      !number_member(r, "bound_gflops", &bound_gflops) ||
      !number_member(r, "fraction", &fraction) || bound == NULL)
    return FALSE;
  /* ts_prof_roofline_to_json writes an infinite intensity (no DRAM bytes) as -1. */
  t->intensity = ai < 0 ? INFINITY : ai;
  t->gflops = gflops;
  t->bound_gflops = bound_gflops;
  t->fraction = fraction;
  t->bound = g_strdup(bound);
  return TRUE;
}

/* What the kernel uses, as the compiler reported it (the tuner stores registers and spills of
 * GPU kernels with the trial's metrics). */
static void
stored_resources(JsonObject *metrics, TsStudioTrial *t)
{
  const struct {
    const char *name;
    gint *v;
  } f[] = {{"registers", &t->registers},
           {"spill_stores", &t->spill_stores},
           {"spill_loads", &t->spill_loads}};
  for (guint i = 0; i < G_N_ELEMENTS(f); i++) {
    double v;
    if (number_member(metrics, f[i].name, &v) && v >= 0 && v < G_MAXINT)
      *f[i].v = (gint)v;
  }
}

const char *
ts_studio_level_name(TsStudioLevel level)
{
  static const char *const names[] = {"dram", "l2", "l1"};
  g_return_val_if_fail(level < TS_STUDIO_N_LEVELS, NULL);
  return names[level];
}

const char *
ts_studio_level_label(TsStudioLevel level)
{
  static const char *const labels[] = {"DRAM", "L2", "L1"};
  g_return_val_if_fail(level < TS_STUDIO_N_LEVELS, NULL);
  return labels[level];
}

/* A figure of the "gpu_metrics" member `tessera-tune profile` stores: {"value": x, ...}, with
 * null for a counter the chip lacks. */
static double
figure_value(JsonObject *gm, const char *key)
{
  JsonNode *n = json_object_get_member(gm, key);
  double v;
  if (n == NULL || !JSON_NODE_HOLDS_OBJECT(n) || !number_member(json_node_get_object(n), "value", &v))
    return NAN;
  return v >= 0 ? v : NAN;
}

/* Traffic per level as the hardware counted it, in place of the compulsory bytes the op's
 * formula gives: the hierarchical roofline (one point per level, against that level's roof). */
static void
stored_levels(const Workload *w, JsonObject *metrics, TsStudioTrial *t)
{
  JsonNode *n = json_object_get_member(metrics, "gpu_metrics");
  if (n == NULL || !JSON_NODE_HOLDS_OBJECT(n))
    return;
  JsonObject *gm = json_node_get_object(n);
  t->level_bytes[TS_STUDIO_LEVEL_DRAM] =
      figure_value(gm, "dram_read_bytes") + figure_value(gm, "dram_write_bytes");
  t->level_bytes[TS_STUDIO_LEVEL_L2] = figure_value(gm, "l2_bytes");
  t->level_bytes[TS_STUDIO_LEVEL_L1] = figure_value(gm, "l1_bytes");
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
    if (t->level_bytes[l] > 0 && isfinite(w->pub.flops) && w->pub.flops > 0)
      t->level_intensity[l] = w->pub.flops / t->level_bytes[l];
}

/* Coordinates from the op's counts and today's ceilings, for trials stored without them. */
static void
computed_roofline(const Workload *w, TsStudioTrial *t)
{
  if (!isfinite(w->pub.flops) || !(t->median_ns > 0))
    return;
  TsProfRoofline roof;
  const TsProfCeilings *c = w->pub.device->ceilings;
  if (c && ts_prof_roofline(c, w->compute_roof, w->pub.flops, w->pub.bytes, t->median_ns * 1e-9,
                            &roof)) {
    t->intensity = roof.intensity;
    t->gflops = roof.gflops;
    t->bound_gflops = roof.bound_gflops;
    t->fraction = roof.fraction;
    t->bound = g_strdup(roof.bound);
    return;
  }
  t->gflops = w->pub.flops / t->median_ns; /* FLOP per ns is GFLOP/s */
  if (w->pub.bytes > 0)
    t->intensity = w->pub.flops / w->pub.bytes;
}

static TsStudioTrial *
trial_from_db(const Workload *w, const TsDbTrial *d, guint index, GDateTime *first,
              gint64 best_id)
{
  TsStudioTrial *t = g_new0(TsStudioTrial, 1);
  t->id = d->id;
  t->run_id = d->run_id;
  t->index = index;
  t->status = d->status;
  t->schedule = g_strdup(d->schedule);
  t->strategy = g_strdup(d->strategy);
  t->error_text = g_strdup(d->error_text);
  t->created_at = g_strdup(d->created_at);
  t->median_ns = d->median_ns;
  t->min_ns = d->min_ns;
  t->max_ns = d->max_ns;
  t->predicted_ns = d->predicted_cost;
  t->wall_s = t->gflops = t->intensity = t->bound_gflops = t->fraction = NAN;
  t->best = d->id == best_id;
  g_autoptr(GDateTime) at = d->created_at ? g_date_time_new_from_iso8601(d->created_at, NULL)
                                          : NULL;
  if (at && first)
    t->wall_s = (double)g_date_time_difference(at, first) / G_USEC_PER_SEC;
  t->compile_ms = d->compile_ms;
  t->registers = t->spill_stores = t->spill_loads = -1;
  t->cpu_per_wall = NAN;
  for (guint l = 0; l < TS_STUDIO_N_LEVELS; l++)
    t->level_bytes[l] = t->level_intensity[l] = NAN;
  g_autoptr(JsonParser) parser = json_parser_new();
  JsonNode *root = d->metrics_json && json_parser_load_from_data(parser, d->metrics_json, -1, NULL)
                       ? json_parser_get_root(parser)
                       : NULL;
  JsonObject *metrics = root && JSON_NODE_HOLDS_OBJECT(root) ? json_node_get_object(root) : NULL;
  if (metrics)
    stored_resources(metrics, t);
  double cpu_ns;
  if (metrics && number_member(metrics, "process_cpu_ns", &cpu_ns) && t->median_ns > 0)
    t->cpu_per_wall = cpu_ns / t->median_ns;
  if (metrics && d->status == TS_DB_TRIAL_OK)
    stored_levels(w, metrics, t);
  if (d->status == TS_DB_TRIAL_OK && !(metrics && stored_roofline(metrics, t)))
    computed_roofline(w, t);
  return t;
}

static void
set_read_error(GError **error, TsStudioDb *db, GError *cause)
{
  g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN, "Cannot read %s: %s", db->path,
              cause->message);
}

GPtrArray *
ts_studio_db_trials(TsStudioDb *db, const TsStudioWorkload *workload, GError **error)
{
  g_return_val_if_fail(db != NULL && workload != NULL, NULL);
  const Workload *w = (const Workload *)workload;
  g_autoptr(GError) local = NULL;
  g_autoptr(GPtrArray) rows =
    ts_db_list_trials(db->db, workload->workload_id, workload->device_id,
                      workload->toolchain_id, TS_DB_ORDER_INSERTION, &local);
  if (rows == NULL) {
    set_read_error(error, db, local);
    return NULL;
  }
  gint64 best_id = 0;
  g_autoptr(TsDbTrial) best = ts_db_get_best(db->db, workload->workload_id, workload->device_id,
                                             workload->toolchain_id, &local);
  if (best)
    best_id = best->id;
  else if (!g_error_matches(local, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND)) {
    set_read_error(error, db, local);
    return NULL;
  }
  g_autoptr(GDateTime) first = NULL;
  if (rows->len > 0) {
    const TsDbTrial *t0 = rows->pdata[0];
    if (t0->created_at)
      first = g_date_time_new_from_iso8601(t0->created_at, NULL);
  }
  GPtrArray *out = g_ptr_array_new_full(rows->len, (GDestroyNotify)ts_studio_trial_free);
  for (guint i = 0; i < rows->len; i++)
    g_ptr_array_add(out, trial_from_db(w, rows->pdata[i], i, first, best_id));
  return out;
}

/* ---- runs, profiles, events ---- */

void
ts_studio_run_free(TsStudioRun *run)
{
  if (run == NULL)
    return;
  g_free(run->strategy);
  g_free(run->budget);
  g_free(run->status);
  g_free(run->started_at);
  g_free(run->finished_at);
  g_free(run);
}

GPtrArray *
ts_studio_db_runs(TsStudioDb *db, const TsStudioWorkload *workload, GError **error)
{
  g_return_val_if_fail(db != NULL && workload != NULL, NULL);
  g_autoptr(GError) local = NULL;
  g_autoptr(GPtrArray) rows = ts_db_list_runs(db->db, workload->workload_id,
                                              workload->device_id, workload->toolchain_id, &local);
  if (rows == NULL) {
    set_read_error(error, db, local);
    return NULL;
  }
  GPtrArray *out = g_ptr_array_new_full(rows->len, (GDestroyNotify)ts_studio_run_free);
  for (guint i = 0; i < rows->len; i++) {
    TsDbRun *r = rows->pdata[i];
    TsStudioRun *s = g_new0(TsStudioRun, 1);
    s->id = r->id;
    s->strategy = g_steal_pointer(&r->strategy);
    s->budget = g_steal_pointer(&r->budget);
    s->status = g_steal_pointer(&r->status);
    s->started_at = g_steal_pointer(&r->started_at);
    s->finished_at = g_steal_pointer(&r->finished_at);
    s->seed = r->seed;
    g_ptr_array_add(out, s);
  }
  return out;
}

GPtrArray *
ts_studio_db_profiles(TsStudioDb *db, const TsStudioWorkload *workload, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(GError) local = NULL;
  GPtrArray *all =
    ts_db_list_profiles(db->db, workload ? workload->workload_id : 0, &local);
  if (all == NULL) {
    set_read_error(error, db, local);
    return NULL;
  }
  if (workload == NULL)
    return all;
  /* A studio workload is a whole key: the same op profiled on another device or with another
   * toolchain belongs to another entry of the list. */
  for (guint i = all->len; i-- > 0;) {
    const TsDbProfile *p = all->pdata[i];
    if (p->device_id != workload->device_id || p->toolchain_id != workload->toolchain_id)
      g_ptr_array_remove_index(all, i);
  }
  return all;
}

char *
ts_studio_db_profile_subject(TsStudioDb *db, const TsDbProfile *profile)
{
  g_return_val_if_fail(db != NULL && profile != NULL, NULL);
  if (profile->workload_id == 0)
    return g_strdup("a tuning session");
  for (guint i = 0; i < db->workloads->len; i++) {
    const TsStudioWorkload *w = db->workloads->pdata[i];
    if (w->workload_id == profile->workload_id && w->device_id == profile->device_id &&
        w->toolchain_id == profile->toolchain_id)
      return g_strdup(w->label);
  }
  /* Profiled but never tuned: no key lists it, so name it by id as `tessera-tune show` does. */
  return g_strdup_printf("workload %" G_GINT64_FORMAT, profile->workload_id);
}

GArray *
ts_studio_db_events(TsStudioDb *db, gint64 profile_id, GError **error)
{
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(GError) local = NULL;
  /* An unknown id reads as no events; the views must tell that apart from an empty profile. */
  g_autoptr(TsDbProfile) profile = ts_db_get_profile(db->db, profile_id, &local);
  if (profile == NULL) {
    if (g_error_matches(local, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND))
      g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                  "%s: no profile %" G_GINT64_FORMAT, db->path, profile_id);
    else
      set_read_error(error, db, local);
    return NULL;
  }
  GArray *events = ts_db_profile_events(db->db, profile_id, &local);
  if (events == NULL)
    set_read_error(error, db, local);
  return events;
}

/* ---- the learned model's scores ---- */

void
ts_studio_learned_free(TsStudioLearned *learned)
{
  if (learned == NULL)
    return;
  g_free(learned->kind);
  if (learned->scores)
    g_array_unref(learned->scores);
  g_free(learned);
}

/* Whether trained_on_json's "groups" hold a group of workload (an op instance's description). */
static gboolean
trained_with(const char *trained_on_json, const char *workload)
{
  g_autoptr(JsonParser) p = json_parser_new();
  if (trained_on_json == NULL || !json_parser_load_from_data(p, trained_on_json, -1, NULL))
    return FALSE;
  JsonNode *root = json_parser_get_root(p);
  if (!JSON_NODE_HOLDS_OBJECT(root))
    return FALSE;
  JsonNode *groups = json_object_get_member(json_node_get_object(root), "groups");
  if (groups == NULL || !JSON_NODE_HOLDS_ARRAY(groups))
    return FALSE;
  JsonArray *a = json_node_get_array(groups);
  for (guint i = 0; i < json_array_get_length(a); i++) {
    const char *g = json_array_get_string_element(a, i);
    g_autofree char *w = g ? ts_cost_group_workload(g) : NULL;
    if (w && strcmp(w, workload) == 0)
      return TRUE;
  }
  return FALSE;
}

TsStudioLearned *
ts_studio_db_learned(TsStudioDb *db, const TsStudioWorkload *workload, GPtrArray *trials,
                     GError **error)
{
  g_return_val_if_fail(db != NULL && workload != NULL && trials != NULL, NULL);
  const TsStudioDevice *device = workload->device;
  g_autofree char *kind = ts_cost_model_kind(device->backend);
  g_autoptr(GError) local = NULL;
  gint64 id = 0;
  g_autofree char *trained_on = NULL;
  g_autoptr(GBytes) blob = ts_db_get_model(db->db, kind, &id, &trained_on, NULL, &local);
  if (blob == NULL) {
    if (g_error_matches(local, TS_DB_ERROR, TS_DB_ERROR_NOT_FOUND))
      g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NO_MODEL,
                  "No learned cost model of kind %s in %s: train one with 'tessera-tune model "
                  "train' (or tune with --strategy model, which trains one).",
                  kind, db->path);
    else
      set_read_error(error, db, local);
    return NULL;
  }
  g_autoptr(TsCostModel) model = ts_cost_model_deserialize(blob, &local);
  if (model == NULL) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN, "%s, model %" G_GINT64_FORMAT
                " (%s): %s", db->path, id, kind, local->message);
    return NULL;
  }
  /* The device as the key stored it: the features training saw. */
  g_autoptr(GPtrArray) keys = ts_db_list_trial_keys(db->db, &local);
  if (keys == NULL) {
    set_read_error(error, db, local);
    return NULL;
  }
  const TsDbTrialKey *key = NULL;
  for (guint i = 0; i < keys->len && key == NULL; i++) {
    const TsDbTrialKey *k = keys->pdata[i];
    if (k->workload_id == workload->workload_id && k->device_id == workload->device_id &&
        k->toolchain_id == workload->toolchain_id)
      key = k;
  }
  g_autoptr(TsOpInstance) inst =
      key ? ts_op_instance_new(key->op, key->shape, key->dtype, NULL) : NULL;
  if (inst == NULL) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NO_MODEL,
                "%s: the learned model cannot score %s (an op this build does not know)",
                db->path, workload->label);
    return NULL;
  }
  TsDeviceInfo dev;
  ts_cost_key_device(key, &dev);
  g_autoptr(TsCostTarget) target = ts_cost_target_new(inst, device->backend, &dev,
                                                      device->ceilings);
  guint n = ts_cost_n_features(target);
  g_autofree float *rows = g_new(float, (gsize)n * MAX(trials->len, 1));
  g_autofree guint *row_of = g_new(guint, MAX(trials->len, 1));
  guint n_rows = 0;
  for (guint i = 0; i < trials->len; i++) {
    const TsStudioTrial *t = trials->pdata[i];
    g_autoptr(TsSchedPoint) point = ts_sched_point_parse(t->schedule, NULL);
    row_of[i] = G_MAXUINT;
    if (point == NULL)
      continue;
    ts_cost_features(target, point, NULL, rows + (gsize)n * n_rows);
    row_of[i] = n_rows++;
  }
  g_autofree double *scores = g_new(double, MAX(n_rows, 1));
  if (n_rows > 0 && !ts_cost_model_predict_rows(model, ts_cost_feature_names(target), n, rows,
                                                  n_rows, scores, &local)) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_OPEN,
                "%s, model %" G_GINT64_FORMAT ": %s", db->path, id, local->message);
    return NULL;
  }
  TsStudioLearned *out = g_new0(TsStudioLearned, 1);
  out->model_id = id;
  out->kind = g_steal_pointer(&kind);
  g_autofree char *described = ts_op_instance_describe(inst);
  out->in_sample = trained_with(trained_on, described);
  out->scores = g_array_sized_new(FALSE, FALSE, sizeof(double), trials->len);
  for (guint i = 0; i < trials->len; i++) {
    double v = row_of[i] == G_MAXUINT ? NAN : scores[row_of[i]];
    g_array_append_val(out->scores, v);
  }
  return out;
}

/* ---- collectives ---- */

void
ts_studio_bandwidth_series_free(TsStudioBandwidthSeries *series)
{
  if (series == NULL)
    return;
  g_free(series->algorithm);
  g_array_unref(series->points);
  g_free(series);
}

static gint
by_bytes(gconstpointer a, gconstpointer b)
{
  double x = ((const TsStudioBandwidthPoint *)a)->bytes;
  double y = ((const TsStudioBandwidthPoint *)b)->bytes;
  return (x > y) - (x < y);
}

GPtrArray *
ts_studio_db_bandwidth(TsStudioDb *db, const TsStudioWorkload *workload, GError **error)
{
  g_return_val_if_fail(db != NULL && workload != NULL, NULL);
  TsCollWorkload self;
  if (!ts_coll_workload_parse(&self, workload->op, workload->shape, workload->dtype, 0, NULL)) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_NOT_FOUND,
                "%s is not a collective: bus bandwidth is drawn for all_reduce, all_gather and "
                "reduce_scatter", workload->label);
    return NULL;
  }
  GPtrArray *series =
    g_ptr_array_new_with_free_func((GDestroyNotify)ts_studio_bandwidth_series_free);
  g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < db->workloads->len; i++) {
    const TsStudioWorkload *w = db->workloads->pdata[i];
    TsCollWorkload c;
    if (w->device_id != workload->device_id || w->toolchain_id != workload->toolchain_id ||
        g_strcmp0(w->op, workload->op) != 0 || g_strcmp0(w->dtype, workload->dtype) != 0 ||
        !ts_coll_workload_parse(&c, w->op, w->shape, w->dtype, 0, NULL) ||
        c.ranks != self.ranks)
      continue;
    g_autoptr(GError) local = NULL;
    g_autoptr(GPtrArray) rows = ts_db_list_trials(db->db, w->workload_id, w->device_id,
                                                  w->toolchain_id, TS_DB_ORDER_INSERTION, &local);
    if (rows == NULL) {
      set_read_error(error, db, local);
      g_ptr_array_unref(series);
      return NULL;
    }
    for (guint r = 0; r < rows->len; r++) {
      const TsDbTrial *t = rows->pdata[r];
      g_autoptr(TsSchedPoint) point = t->status == TS_DB_TRIAL_OK && t->median_ns > 0
                                        ? ts_sched_point_parse(t->schedule, NULL)
                                        : NULL;
      const char *algorithm = point ? ts_sched_point_get_str(point, "algorithm", NULL) : NULL;
      if (algorithm == NULL)
        continue;
      TsStudioBandwidthSeries *s = g_hash_table_lookup(by_name, algorithm);
      if (s == NULL) {
        s = g_new0(TsStudioBandwidthSeries, 1);
        s->algorithm = g_strdup(algorithm);
        s->points = g_array_new(FALSE, FALSE, sizeof(TsStudioBandwidthPoint));
        g_ptr_array_add(series, s);
        g_hash_table_insert(by_name, s->algorithm, s);
      }
      TsStudioBandwidthPoint p = {(double)c.bytes, ts_coll_busbw(&c, t->median_ns), t->median_ns,
                                  t->id};
      gboolean placed = FALSE;
      for (guint k = 0; k < s->points->len && !placed; k++) {
        TsStudioBandwidthPoint *q = &g_array_index(s->points, TsStudioBandwidthPoint, k);
        if (q->bytes == p.bytes) {
          if (p.median_ns < q->median_ns)
            *q = p;
          placed = TRUE;
        }
      }
      if (!placed)
        g_array_append_val(s->points, p);
    }
  }
  for (guint i = 0; i < series->len; i++)
    g_array_sort(((TsStudioBandwidthSeries *)series->pdata[i])->points, by_bytes);
  return series;
}
