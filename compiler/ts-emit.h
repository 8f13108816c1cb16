/* ts-emit.h — target emitters: Tile IR → target source (the Target IR stage of the lowering
 * inspector). The C emitter writes a translation unit for the CPU backend that includes the
 * tile-primitive library ts_cpu_prims.h; the CUDA emitter will follow the same shape. */
#pragma once

#include <glib.h>

#include "ts-tile.h"

G_BEGIN_DECLS

#define TS_EMIT_ERROR (ts_emit_error_quark())
GQuark ts_emit_error_quark(void);

typedef enum {
  TS_EMIT_ERROR_UNSUPPORTED, /* a Tile IR construct the target cannot express */
  TS_EMIT_ERROR_INVALID,     /* malformed Tile IR (unknown buffer, bad view) */
} TsEmitError;

/* Appends text to out as a C comment line, with every star-slash inside it broken up, so that
 * nothing in text (a schedule's string knob, say) can end the comment and become code. */
void ts_emit_comment(GString *out, const char *text);

/* C source whose exported function `entry` has the kernel ABI of ts-backend.h. `banner` (may
 * be NULL) is written as the leading comment, e.g. the op and schedule point it came from. */
char *ts_emit_c(const TsTileKernel *kernel, const char *entry, const char *banner,
                GError **error);

/* CUDA C for NVRTC: includes ts_cuda_prims.cuh, declares the kernel `entry` with the CUDA ABI
 * of ts-backend.h (one TsArgs by value) and its launch record <entry>_launch from the kernel's
 * GRID node, carves shared ALLOCs out of dynamic shared memory, and turns each INTRINSIC into a
 * call of ts_<name><constants>(operands). */
char *ts_emit_cuda(const TsTileKernel *kernel, const char *entry, const char *banner,
                   GError **error);

G_END_DECLS
