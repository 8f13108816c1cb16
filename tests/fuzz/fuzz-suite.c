/* fuzz-suite.c — libFuzzer harness of the perf gate's suite files: a suite or a
 * TS_GATE_ERROR_SUITE naming the file, group and key, never a crash. */
#include <glib.h>
#include <stdint.h>

#include "ts-gate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsGateSuite) suite =
    ts_gate_suite_parse((const char *)data, (gssize)size, "fuzz.suite", &error);
  g_assert((suite == NULL) == (error != NULL));
  return 0;
}
