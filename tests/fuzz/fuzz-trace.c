/* fuzz-trace.c — libFuzzer harness of the studio's Chrome-trace reader: events or a
 * TS_STUDIO_ERROR, never a crash. */
#include <glib.h>
#include <stdint.h>

#include "ts-studio-data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  g_autoptr(GError) error = NULL;
  GArray *events = ts_studio_trace_load_data(text, size, "fuzz.json", &error);
  g_assert((events == NULL) == (error != NULL));
  if (events)
    g_array_unref(events);
  return 0;
}
