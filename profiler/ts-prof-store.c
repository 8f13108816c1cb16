/* ts-prof-store.c — ceilings kept in the device row: measured once per device, toolchain and
 * kernel-generator version (a new compiler can change what the FMA microbenchmark reaches, a
 * new ts_cpu_prims.h what its exp does), read back otherwise. */
#include "ts-prof.h"
#include "ts-op.h"

char *
ts_prof_toolchain_of(const TsDeviceInfo *d)
{
  return g_strdup_printf("%s %s", d->toolchain ? d->toolchain : "", TS_OP_EMIT_VERSION);
}

TsProfCeilings *
ts_prof_ceilings_load(TsDb *db, gint64 device_id, TsBackend *backend, GError **error)
{
  const TsDeviceInfo *d = ts_backend_describe(backend);
  g_autoptr(GError) local = NULL;
  g_autofree char *json = ts_db_get_device_peaks(db, device_id, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return NULL;
  }
  /* A stale or unreadable row is not an error: the microbenchmarks rebuild it. A row in an
   * older format lacks the roofs added since (the CPU's exp rates). */
  g_autoptr(TsProfCeilings) stored = json ? ts_prof_ceilings_from_json(json, NULL) : NULL;
  g_autofree char *toolchain = ts_prof_toolchain_of(d);
  if (stored && ts_prof_ceilings_format(stored) == TS_PROF_CEILINGS_FORMAT &&
      g_strcmp0(ts_prof_ceilings_toolchain(stored), toolchain) == 0 &&
      g_strcmp0(ts_prof_ceilings_backend(stored), d->backend) == 0)
    return g_steal_pointer(&stored);
  return NULL;
}

TsProfCeilings *
ts_prof_ceilings_ensure(TsDb *db, gint64 device_id, TsBackend *backend, gboolean remeasure,
                        gboolean *measured, GError **error)
{
  if (measured)
    *measured = FALSE;
  if (!remeasure) {
    g_autoptr(GError) local = NULL;
    TsProfCeilings *stored = ts_prof_ceilings_load(db, device_id, backend, &local);
    if (local) {
      g_propagate_error(error, g_steal_pointer(&local));
      return NULL;
    }
    if (stored)
      return stored;
  }
  g_autoptr(TsProfCeilings) fresh = ts_prof_measure_ceilings(backend, error);
  if (fresh == NULL)
    return NULL;
  g_autofree char *json = ts_prof_ceilings_to_json(fresh);
  if (!ts_db_set_device_peaks(db, device_id, json, error))
    return NULL;
  if (measured)
    *measured = TRUE;
  return g_steal_pointer(&fresh);
}
