/* ts-nvtx.c — ts-nvtx.h over the header-only NVTX3. NVTX3 itself finds the profiler's injection
 * library (NVTX_INJECTION64_PATH, set by nsys) with dlopen on the first call, so nothing is
 * linked and a process without a profiler pays only a branch.
 */
#include "config.h"

#include "ts-nvtx.h"

#if TS_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>

/* A domain of our own keeps our ranges in one row of the timeline, apart from the ranges of
 * libraries in the same process (cuBLAS, PyTorch). */
static nvtxDomainHandle_t
domain(void)
{
  static gsize once = 0;
  static nvtxDomainHandle_t handle = NULL;
  if (g_once_init_enter(&once)) {
    handle = nvtxDomainCreateA("tessera");
    g_once_init_leave(&once, 1);
  }
  return handle;
}

void
ts_nvtx_push(const char *name)
{
  g_return_if_fail(name != NULL);
  nvtxEventAttributes_t attr = {0};
  attr.version = NVTX_VERSION;
  attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attr.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attr.message.ascii = name;
  nvtxDomainRangePushEx(domain(), &attr);
}

void
ts_nvtx_pop(void)
{
  nvtxDomainRangePop(domain());
}

#else /* !TS_HAVE_NVTX */

void
ts_nvtx_push(const char *name)
{
}

void
ts_nvtx_pop(void)
{
}

#endif
