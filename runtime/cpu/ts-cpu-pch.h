/* ts-cpu-pch.h — precompiled primitive headers for the CPU backend (private).
 *
 * Most of a candidate's compile time used to go to parsing ts_cpu_prims.h and the intrinsics
 * headers it pulls in (immintrin.h alone is ~40% of it). GCC can load a header it parsed once
 * (a .gch beside it) when it is included before any C token; the backend passes it with
 * -include, so the generated source stays the same and so does the code (checked by tests). */
#pragma once

#include <glib.h>

typedef struct {
  const char *const *cc_argv; /* the compiler as the backend runs it */
  const char *version_line;   /* its `--version` first line */
  gboolean is_gcc;            /* .gch lookup is GCC's; other compilers get no PCH */
  const char *const *flags;   /* the backend's fixed flags (-shared is dropped here) */
  gsize n_flags;
  GBytes *prims;              /* ts_cpu_prims.h's text */
  const char *cache_dir;      /* the backend's artifact cache (already checked private) */
} TsCpuPchSpec;

/* The TS_VEC a generated source asks for, when everything before its #include of
 * ts_cpu_prims.h is comments, system #includes and `#define TS_VEC N` (what a PCH holding that
 * header with TS_VEC = N may stand in for); else 0. */
int ts__cpu_pch_source_vec(const char *source);

/* The absolute path to pass as `-include` for TS_VEC = vec: a wrapper header with its .gch
 * next to it, built on first use under spec->cache_dir/pch-<hash of compiler, flags and
 * header>. NULL when precompiled headers are off (TS_CPU_PCH=0, not GCC) or the build failed;
 * *why (may be NULL) then says why, and the caller compiles without one. */
char *ts__cpu_pch_header(const TsCpuPchSpec *spec, int vec, char **why);
