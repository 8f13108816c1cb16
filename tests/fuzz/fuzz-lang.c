/* fuzz-lang.c — libFuzzer harness of the kernel language's front end: any bytes end in a tree
 * (whose kernels' interfaces are then checked) or a GError whose message names a position and shows a caret, never a crash, a hang or a
 * stack overflow (nesting is bounded). */
#include <glib.h>
#include <stdint.h>
#include <string.h>

#include "ts-lang.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsLangNode) module = ts_lang_parse(text, "fuzz.tsk", &error);
  g_assert((module == NULL) == (error != NULL));
  if (module != NULL) {
    g_autofree char *printed = ts_lang_node_to_string(module);
    g_assert(g_str_has_prefix(printed, "(module"));
    /* Each kernel's interface is checked too: a kernel or an error, nothing else. */
    for (guint i = 0; i < module->kids->len; i++) {
      g_autoptr(GError) cerr = NULL;
      g_autoptr(TsLangKernel) k =
        ts_lang_kernel_check(g_ptr_array_index(module->kids, i), text, "fuzz.tsk", &cerr);
      g_assert((k == NULL) == (cerr != NULL));
      g_assert(k != NULL || g_str_has_prefix(cerr->message, "fuzz.tsk:"));
    }
  } else {
    g_assert(g_str_has_prefix(error->message, "fuzz.tsk:"));
    g_assert(strchr(error->message, '^') != NULL);
  }
  return 0;
}
