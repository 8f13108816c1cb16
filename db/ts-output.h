/* ts-output.h — how every tool writes a file the user named (exports, traces, reports).
 *
 * A regular file, or a path where nothing is yet, is replaced atomically (temp file + rename:
 * a reader never sees half a file). Anything else the user points at is written through, not
 * replaced: a symlink's target (itself replaced atomically when it is a regular file, so the
 * link stays), a FIFO, a character device (/dev/stdout, /dev/null; /dev/full reports that it
 * is full). A rename would have swapped those for a plain file: a device node replaced as
 * root, a pipe never read, a link cut.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* len -1: data is NUL-terminated. Errors are G_FILE_ERROR with the path in the message. */
gboolean ts_output_write(const char *path, const void *data, gssize len, GError **error);

G_END_DECLS
