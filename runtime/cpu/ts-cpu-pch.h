/* ts-cpu-pch.h — what the CPU backend compiles once and shares between kernels (private).
 *
 * Most of a candidate's compile time used to go to parsing ts_cpu_prims.h and the intrinsics
 * headers it pulls in (immintrin.h alone is ~40% of it), then to code that is the same in many
 * candidates. GCC can load a header it parsed once (a .gch beside it) when it is included
 * before any C token; the backend passes it with -include, so the generated source stays the
 * same and so does the code (checked by tests). And a source's micro-kernels, packing and
 * driver are compiled once each into objects under the artifact cache (one directory per
 * compiler, flags, header and host), a kernel being those linked. */
#pragma once

#include <glib.h>

typedef struct {
  const char *const *cc_argv; /* the compiler as the backend runs it */
  const char *version_line;   /* its `--version` first line */
  const char *host_name;      /* the host's CPU model and arch string: code compiled with */
  const char *host_arch;      /* -march=native is the host's, even in a shared cache */
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
 * next to it, built on first use under spec->cache_dir/pch-<hash of compiler, flags, header
 * and host>. NULL when precompiled headers are off (TS_CPU_PCH=0, not GCC) or the build
 * failed; *why (may be NULL) then says why, and the caller compiles without one. */
char *ts__cpu_pch_header(const TsCpuPchSpec *spec, int vec, char **why);

/* The name a driver's entry is compiled under (ts__cpu_split); the link gives it the
 * kernel's. */
#define TS_CPU_DRIVER_ENTRY "ts_kernel_entry_"

/* A generated source as objects to link, each compiled once into the artifact cache and
 * shared by every kernel after:
 * - its micro-kernels (its top-level TS_DEFINE_UKR_F32 and _BF16DOT lines): a tune's
 *   candidates differ in their loops and blocks far more often than in their micro-tile; the
 *   16-lane f32 and the bf16 dot-product ones assembled from ts-cpu-asm.c's text where that
 *   applies (asm-*.o);
 * - the packing and output conversions it calls (ts_cpu_prims.h's TS_OUTLINE_LIST_;
 *   TS_CPU_OUTLINE=0 leaves them inline): one object per set of them and TS_VEC, the calls
 *   renamed to it by #defines after the source's #include of the primitives;
 * - the rest, its driver, in a form that is the same text for every kernel that differs only
 *   in its micro-kernels and its entry's name: the micro-kernels declared and called as slots
 *   (ts_ukr_slot0_, ...), the entry named TS_CPU_DRIVER_ENTRY, the leading comment gone. A GEMM
 *   reads its blocks and micro-tile at run time, so a tune's candidates of one vector width,
 *   thread count and dot product share one, and one that brings no new micro-kernel is only
 *   linked.
 * The f32 micro-kernels, and drivers that need nothing more of the primitives, compile without
 * the intrinsics headers (TS_CPU_LIGHT); the rest with the precompiled header where there is
 * one. Appends the objects' paths to objects and to link_args the linker arguments that map
 * the slots and the entry back (-Wl,--defsym=...), and returns TRUE. FALSE, nothing appended,
 * when the split is off (TS_CPU_UKR_CACHE=0, not GCC, no artifact cache), the source has
 * neither micro-kernel nor packing, or an object failed to build (*why, may be NULL, says
 * which): the caller compiles the source whole. */
gboolean ts__cpu_split(const TsCpuPchSpec *spec, int vec, const char *source, const char *entry,
                       GPtrArray *objects, GPtrArray *link_args, char **why);
