/* fuzz-sched.c — libFuzzer harness of the Schedule IR parser: a space (constraints, dict form,
 * base/with_*) and a point, each parsed; what parses is printed and must parse again (the
 * round trip the cache's stored schedules rely on), and a small space's first points are
 * enumerated. Every input must end in a value or a GError, never a crash or a hang. */
#include <glib.h>
#include <stdint.h>

#include "ts-sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSchedSpace) space = ts_sched_space_parse(text, &error);
  guint64 n_points = 0;
  /* Enumeration walks the raw product until it finds valid points: bounded here, since a
   * fuzzer-made space of 10^12 points with no valid one would only be slow, not wrong. */
  if (space != NULL && ts_sched_space_size(space, &n_points) && n_points <= 100000) {
    g_autofree char *printed = ts_sched_space_to_string(space);
    g_autoptr(TsSchedSpace) again = ts_sched_space_parse(printed, NULL);
    g_assert(again != NULL);
    g_autoptr(TsSchedEnv) env = ts_sched_env_new();
    ts_sched_env_set(env, "M", 1024);
    ts_sched_env_set(env, "N", 1024);
    ts_sched_env_set(env, "K", 1024);
    g_autoptr(TsSchedIter) it = ts_sched_iter_new(space, env);
    TsSchedPoint *p = NULL;
    for (int i = 0; i < 64 && ts_sched_iter_next(it, &p, NULL); i++)
      ts_sched_point_free(p);
  }
  g_clear_error(&error);
  g_autoptr(TsSchedPoint) point = ts_sched_point_parse(text, &error);
  if (point != NULL) {
    g_autofree char *printed = ts_sched_point_to_string(point);
    g_autoptr(TsSchedPoint) again = ts_sched_point_parse(printed, NULL);
    g_assert(again != NULL);
  }
  return 0;
}
