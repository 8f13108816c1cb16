/* fuzz-kernel.c — libFuzzer harness of kernel files as ops: any bytes end in an error, or in an
 * op whose default point on each target is lowered and emitted (or refused with an error) and
 * whose f64 reference is computed at a small shape — never a crash or a hang. Registered ops
 * stay for the process (a few per distinct kernel the fuzzer finds). */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "ts-op.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  g_autoptr(GError) error = NULL;
  const TsOpDef *op = ts_op_register_kernel(text, NULL, NULL, &error);
  g_assert((op == NULL) == (error != NULL));
  if (op == NULL)
    return 0;
  /* Small sizes, one per dim, unequal so that a swapped dim shows. */
  g_autofree char *dims = ts_op_dims(op);
  g_auto(GStrv) names = g_strsplit(dims, ",", -1);
  g_autoptr(GString) shape = g_string_new(NULL);
  for (guint i = 0; names[i]; i++)
    g_string_append_printf(shape, "%s%s=%u", i ? "," : "", names[i], 37u - 8u * i);
  const char *dtype = ts_op_kernel_dtype(op);
  g_autoptr(TsOpInstance) inst = ts_op_instance_new(ts_op_name(op), shape->str, dtype, &error);
  g_assert((inst == NULL) == (error != NULL));
  if (inst == NULL)
    return 0;
  static const char *const backends[] = {"cpu", "cuda"};
  for (guint b = 0; b < G_N_ELEMENTS(backends); b++) {
    g_autoptr(GError) perr = NULL;
    g_autoptr(TsSchedPoint) point = ts_op_instance_complete_point(inst, backends[b], NULL, &perr);
    g_assert((point == NULL) == (perr != NULL));
    if (point == NULL)
      continue;
    g_autofree char *src = ts_op_emit(inst, backends[b], point, NULL, NULL, &perr);
    g_assert((src == NULL) == (perr != NULL));
  }
  gsize n = 0;
  const double *ref = ts_op_instance_reference(inst, 1, &n, NULL);
  g_assert(ref != NULL && n > 0);
  return 0;
}
