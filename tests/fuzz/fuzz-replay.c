/* fuzz-replay.c — libFuzzer harness of the recorded-tuning reader (Kernel Tuner cache files, T4
 * results, plain or gzip): a replay or a TS_TUNE_REPLAY_ERROR, never a crash. */
#include <glib.h>
#include <stdint.h>

#include "ts-tune-replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsTuneReplay) r = ts_tune_replay_load_data(data, size, "fuzz.json", &error);
  g_assert((r == NULL) == (error != NULL));
  return 0;
}
