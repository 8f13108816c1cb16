/* ts-prof-ceiling-cuda.c — the GPU ceilings (next step). */
#include "ts-prof-private.h"

TsProfCeilings *
ts__prof_measure_cuda(TsBackend *be, GError **error)
{
  (void)be;
  g_set_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_UNAVAILABLE, "ceilings are not measured on the cuda backend yet");
  return NULL;
}
