// ts_cuda_prims.cuh — the CUDA tile-primitive library every generated kernel includes.
//
// Self-contained on purpose: nothing from the CUDA toolkit is included, so NVRTC needs no
// include path and a machine with only libnvrtc can check generated code. 16-bit floats are
// carried as bit patterns in distinct structs (so templates can tell bf16 from f16) and
// converted with PTX `cvt`; copies, ldmatrix and mma are inline PTX. sm_80 or newer.
//
// This file holds the core (types, the kernel ABI, conversions, async copies, ldmatrix, mma,
// swizzled shared-memory addressing, warp reductions); the op families build on it in
// ts_cuda_gemm.cuh (mma.sync), ts_cuda_wgmma.cuh (wgmma, sm_90a), ts_cuda_rows.cuh and
// ts_cuda_attn.cuh, included at the end.
#pragma once

// ---- the kernel ABI (ts-backend.h) ----
struct TsArgs {
  void *bufs[8];
  long long ints[8];
  double floats[4];
};

// ---- storage types ----
struct ts_bf16 { unsigned short x; };
struct ts_f16 { unsigned short x; };
// fp8 (OCP e4m3 / e5m2) bit patterns: only the tensor cores read them (fp8 wgmma), so they
// have no conversions here; their kernels write bf16.
struct ts_e4m3 { unsigned char x; };
struct ts_e5m2 { unsigned char x; };

__device__ __forceinline__ float ts_to_f32(float v) { return v; }
__device__ __forceinline__ float ts_to_f32(ts_bf16 v) { return __uint_as_float((unsigned)v.x << 16); }
__device__ __forceinline__ float ts_to_f32(ts_f16 v)
{
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.x));
  return f;
}

template <class T> __device__ __forceinline__ T ts_from_f32(float v);
template <> __device__ __forceinline__ float ts_from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ ts_bf16 ts_from_f32<ts_bf16>(float v)
{
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return ts_bf16{h};
}
template <> __device__ __forceinline__ ts_f16 ts_from_f32<ts_f16>(float v)
{
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return ts_f16{h};
}

// Two floats rounded into one 32-bit register of 16-bit values, `lo` in the low half: the
// operand format of mma.sync and of paired 16-bit stores.
template <class T> __device__ __forceinline__ unsigned ts_pack2(float lo, float hi);
template <> __device__ __forceinline__ unsigned ts_pack2<ts_bf16>(float lo, float hi)
{
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
template <> __device__ __forceinline__ unsigned ts_pack2<ts_f16>(float lo, float hi)
{
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// The two halves of a 32-bit register of 16-bit values, as floats.
__device__ __forceinline__ void ts_unpack2(ts_bf16, unsigned v, float &lo, float &hi)
{
  lo = __uint_as_float(v << 16);
  hi = __uint_as_float(v & 0xffff0000u);
}
__device__ __forceinline__ void ts_unpack2(ts_f16, unsigned v, float &lo, float &hi)
{
  lo = ts_to_f32(ts_f16{(unsigned short)(v & 0xffffu)});
  hi = ts_to_f32(ts_f16{(unsigned short)(v >> 16)});
}

// ---- vectors of VEC elements: the unit of a global load (VEC * sizeof(T) <= 16 bytes) ----
template <int BYTES> struct ts_vec_bytes;
template <> struct ts_vec_bytes<2> { typedef unsigned short type; };
template <> struct ts_vec_bytes<4> { typedef unsigned type; };
template <> struct ts_vec_bytes<8> { typedef uint2 type; };
template <> struct ts_vec_bytes<16> { typedef uint4 type; };

// Loads VEC elements at p (aligned to VEC * sizeof(T)) as floats.
template <class T, int VEC>
__device__ __forceinline__ void ts_load_vec(float (&v)[VEC], const T *p)
{
  typedef typename ts_vec_bytes<VEC * sizeof(T)>::type V;
  union { V raw; T e[VEC]; } u;
  u.raw = *reinterpret_cast<const V *>(p);
#pragma unroll
  for (int i = 0; i < VEC; i++)
    v[i] = ts_to_f32(u.e[i]);
}

// Rounds VEC floats to T and stores them at p (aligned to VEC * sizeof(T)).
template <class T, int VEC>
__device__ __forceinline__ void ts_store_vec(T *p, const float (&v)[VEC])
{
  typedef typename ts_vec_bytes<VEC * sizeof(T)>::type V;
  union { V raw; T e[VEC]; } u;
#pragma unroll
  for (int i = 0; i < VEC; i++)
    u.e[i] = ts_from_f32<T>(v[i]);
  *reinterpret_cast<V *>(p) = u.raw;
}

// ---- shared memory ----
__device__ __forceinline__ unsigned ts_smem_addr(const void *p)
{
  unsigned r;
  asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(r) : "l"(p));
  return r;
}

// Element offset of (row, col) in a row-major ROWS x COLS tile of 16-bit elements whose
// 16-byte chunks are XOR-swizzled by row (SWZ = 1) or not (SWZ = 0). Swizzling spreads the 8
// rows an ldmatrix reads across all 32 banks instead of one (COLS = 64 bf16 = 128 bytes per
// row: every row starts on bank 0). VEC-element sub-chunk offsets are kept.
template <int COLS, int SWZ>
__device__ __forceinline__ int ts_swz(int row, int col)
{
  constexpr int CHUNKS = COLS / 8;
  constexpr int MASK = (CHUNKS >= 8 ? 8 : CHUNKS) - 1;
  int chunk = col >> 3;
  if (SWZ)
    chunk ^= row & MASK;
  return row * COLS + (chunk << 3) + (col & 7);
}

// ---- asynchronous copies (cp.async, sm_80+) ----
// Copies BYTES (4, 8 or 16) from global to shared; with valid false the destination is
// zero-filled and nothing is read (the edge of a tile past the tensor's end).
template <int BYTES>
__device__ __forceinline__ void ts_cp_async(void *smem, const void *gmem, bool valid)
{
  unsigned s = ts_smem_addr(smem);
  int src = valid ? BYTES : 0;
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(src));
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(s), "l"(gmem), "n"(BYTES),
                 "r"(src));
}
__device__ __forceinline__ void ts_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Waits until at most N committed groups are still in flight (this thread's copies only: a
// barrier must follow before other threads' data is read).
template <int N> __device__ __forceinline__ void ts_async_wait()
{
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// ---- ldmatrix and mma.sync (m16n8k16, f32 accumulation) ----
__device__ __forceinline__ void ts_ldmatrix_x4(unsigned (&r)[4], const void *smem)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ts_smem_addr(smem)));
}
__device__ __forceinline__ void ts_ldmatrix_x4_trans(unsigned (&r)[4], const void *smem)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(ts_smem_addr(smem)));
}
__device__ __forceinline__ void ts_ldmatrix_x2(unsigned (&r)[2], const void *smem)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(ts_smem_addr(smem)));
}
__device__ __forceinline__ void ts_ldmatrix_x2_trans(unsigned (&r)[2], const void *smem)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(ts_smem_addr(smem)));
}

// d += a · b for one 16x8x16 tile: a is 4 registers (row-major 16x16), b 2 (col-major 16x8),
// d 4 floats: d[0..1] = row lane/4, cols 2*(lane%4)+{0,1}; d[2..3] = row lane/4 + 8.
template <class T>
__device__ __forceinline__ void ts_mma_16816(float (&d)[4], const unsigned (&a)[4],
                                             const unsigned (&b)[2]);
template <>
__device__ __forceinline__ void ts_mma_16816<ts_bf16>(float (&d)[4], const unsigned (&a)[4],
                                                      const unsigned (&b)[2])
{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void ts_mma_16816<ts_f16>(float (&d)[4], const unsigned (&a)[4],
                                                     const unsigned (&b)[2])
{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// ---- warp and CTA reductions ----
__device__ __forceinline__ float ts_warp_sum(float v)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float ts_warp_max(float v)
{
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// A running count in a register tile of one element: the Tile IR's lets are constants.
__device__ __forceinline__ void ts_count_add(int *c, long long n) { c[0] += (int)n; }

#include "ts_cuda_gemm.cuh"
#include "ts_cuda_wgmma.cuh"
#include "ts_cuda_tma.cuh"
#include "ts_cuda_rows.cuh"
#include "ts_cuda_attn.cuh"
