/* ts-cuda-tma.h — the TMA tensor maps of a generated kernel, from its `<entry>_tma` record and a
 * launch's dims to what cuTensorMapEncodeTiled needs.
 *
 * A kernel that loads tiles through the Tensor Memory Accelerator (sm_90) reads each global
 * matrix through a tensor map: a 128-byte descriptor of the matrix (address, extents, row
 * stride) and of the box one copy moves, encoded on the host by the driver and passed by value
 * as the kernel's second parameter (ts_cuda_tma.cuh). What to encode is the kernel's business:
 * the CUDA emitter writes it into the module as
 *
 *   extern "C" __constant__ unsigned int <entry>_tma[1 + 8 * n] = {n, <map 0>, ..., <map n-1>};
 *
 * with each map as the TS_TMA_* words below, naming the buffer and the integer parameters that
 * hold its extents, so the host needs nothing but the record and the launch's arguments. This
 * file is plain C without GLib: the backend (ts-backend-cuda.c) and the host emulator of the
 * CI (tests/cuda-emu) both plan from it, so the emulator checks the same mapping the GPU gets. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define TS_TMA_MAX_MAPS 4
#define TS_TMA_WORDS 8 /* record words per map */

/* The words of one map in the record. */
enum {
  TS_TMA_BUF,        /* index of the matrix in the kernel's buffers (TsArgs.bufs) */
  TS_TMA_ELEM_BYTES, /* 1, 2, 4 or 8 */
  TS_TMA_INNER_DIM,  /* index in TsArgs.ints of the contiguous extent (elements per row) */
  TS_TMA_OUTER_DIM,  /* index in TsArgs.ints of the row count */
  TS_TMA_BOX_INNER,  /* elements a copy moves along a row */
  TS_TMA_BOX_OUTER,  /* rows a copy moves */
  TS_TMA_SWIZZLE,    /* 0, 32, 64 or 128: the shared-memory swizzle pattern's row bytes */
  TS_TMA_OUTER_MUL,  /* bit i: the row count is also multiplied by TsArgs.ints[i] (0: none) */
};

/* One map, planned: a dense row-major matrix (rows of dim[0] elements, dim[1] of them). */
typedef struct {
  unsigned buf;
  unsigned elem_bytes;
  uint64_t dim[2];        /* [0] contiguous, [1] rows */
  uint64_t row_stride;    /* bytes from one row to the next */
  uint32_t box[2];        /* [0] along a row, [1] rows */
  unsigned swizzle_bytes; /* 0 (none), 32, 64 or 128 */
} TsTmaPlan;

/* Plans the maps of a record of `words` words for a launch with `n_ints` integer arguments
 * (`ints`) and `n_bufs` buffers: returns how many (0 to TS_TMA_MAX_MAPS), or -1 with *why set
 * to a static explanation when the record is malformed or a matrix cannot be described to the
 * TMA (its row stride must be a multiple of 16 bytes, a box at most 256 elements a side and,
 * swizzled, its row at most the swizzle's width). */
static inline int
ts_tma_plan(const unsigned *record, size_t words, const long long *ints, unsigned n_ints,
            unsigned n_bufs, TsTmaPlan *plans, const char **why)
{
  if (words == 0 || record[0] > TS_TMA_MAX_MAPS || words != 1 + (size_t)record[0] * TS_TMA_WORDS) {
    *why = "the tensor-map record must hold a count (at most 4) and 8 words per map";
    return -1;
  }
  const int n = (int)record[0];
  for (int i = 0; i < n; i++) {
    const unsigned *w = record + 1 + i * TS_TMA_WORDS;
    TsTmaPlan *p = &plans[i];
    const unsigned e = w[TS_TMA_ELEM_BYTES], swz = w[TS_TMA_SWIZZLE];
    if (w[TS_TMA_BUF] >= n_bufs || w[TS_TMA_INNER_DIM] >= n_ints || w[TS_TMA_OUTER_DIM] >= n_ints ||
        (n_ints < 32 && (w[TS_TMA_OUTER_MUL] >> n_ints) != 0)) {
      *why = "a tensor map names a buffer or an integer argument the launch does not have";
      return -1;
    }
    if ((e != 1 && e != 2 && e != 4 && e != 8) ||
        (swz != 0 && swz != 32 && swz != 64 && swz != 128)) {
      *why = "a tensor map's element size or swizzle is not one the TMA has";
      return -1;
    }
    const long long inner = ints[w[TS_TMA_INNER_DIM]];
    long long outer = ints[w[TS_TMA_OUTER_DIM]];
    /* Rows of several dims flattened ([B*H, S, D] read as B*H*S rows of D). */
    for (unsigned b = 0; b < n_ints && b < 32 && outer > 0 && outer <= (1ll << 32); b++)
      if (w[TS_TMA_OUTER_MUL] >> b & 1)
        outer = ints[b] <= 0                     ? 0
                : ints[b] > (1ll << 32) / outer ? (1ll << 33) /* too many: refused below */
                                                : outer * ints[b];
    if (inner <= 0 || outer <= 0 || inner > (1ll << 32) || outer > (1ll << 32)) {
      *why = "a tensor map's extents must be between 1 and 2^32 elements";
      return -1;
    }
    p->buf = w[TS_TMA_BUF];
    p->elem_bytes = e;
    p->dim[0] = (uint64_t)inner;
    p->dim[1] = (uint64_t)outer;
    p->row_stride = (uint64_t)inner * e;
    p->box[0] = w[TS_TMA_BOX_INNER];
    p->box[1] = w[TS_TMA_BOX_OUTER];
    p->swizzle_bytes = swz;
    if (p->row_stride % 16 != 0 || p->row_stride >= (1ull << 40)) {
      *why = "a matrix read through the TMA needs rows of a multiple of 16 bytes";
      return -1;
    }
    if (p->box[0] == 0 || p->box[1] == 0 || p->box[0] > 256 || p->box[1] > 256 ||
        (p->box[0] * e) % 16 != 0 || (swz != 0 && p->box[0] * e > swz)) {
      *why = "a tensor map's box must be 1 to 256 elements a side, its rows a multiple of 16 "
             "bytes and, swizzled, no wider than the swizzle";
      return -1;
    }
  }
  return n;
}
