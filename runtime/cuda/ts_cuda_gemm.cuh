// ts_cuda_gemm.cuh — tile primitives of the tensor-core GEMM (mma.sync m16n8k16, sm_80+).
//
// The CTA computes a BM x BN tile of C = A · B (A row-major M x K, B row-major K x N) in BK
// slices staged through a ring of shared-memory buffers filled by cp.async (the generated code
// runs the multi-stage loop: copy slice t + STAGES - 1 while computing slice t). Warps form a
// WARPS_M x WARPS_N grid; each owns a (BM / WARPS_M) x (BN / WARPS_N) piece of C held in
// registers as m16n8 f32 accumulators, laid out [mi][ni][4].
#pragma once

// Element offset of (row, col) in a shared ROWS x COLS tile of 16-bit elements. SWZ 0 and 1:
// row-major, 16-byte chunks xor-swizzled by row when 1 (ts_swz). SWZ 2: the wgmma operand
// layout (ts_cuda_wgmma.cuh) — COLS / 64 panels of ROWS x 64, one after the other, each row
// 128 bytes whose 16-byte chunks are xor-ed by row % 8 (the PTX 128-byte swizzle when the tile
// starts on a 1024-byte boundary).
template <int ROWS, int COLS, int SWZ>
__device__ __forceinline__ int ts_tile_offset(int row, int col)
{
  if constexpr (SWZ != 2) {
    return ts_swz<COLS, SWZ>(row, col);
  } else {
    static_assert(COLS % 64 == 0, "128-byte swizzled tiles are whole 64-column panels");
    return (col >> 6) * ROWS * 64 + row * 64 + ((((col >> 3) & 7) ^ (row & 7)) << 3) + (col & 7);
  }
}

// Copies the ROWS x COLS tile at (row0, col0) of a row-major matrix (leading dimension ld,
// extent rows x cols) into a shared tile laid out as ts_tile_offset<ROWS, COLS, SWZ>, VEC
// elements per cp.async. What lies past the extent is zero-filled, so edge tiles need no other
// special case. Needs cols % VEC == 0 (the space's alignment constraint) for rows to be copied
// whole.
template <class T, int ROWS, int COLS, int VEC, int SWZ, int THREADS>
__device__ __forceinline__ void ts_copy_tile_async(T *smem, const T *g, long long ld, long long row0,
                                                   long long col0, long long rows, long long cols)
{
  constexpr int VPR = COLS / VEC;
  constexpr int TOTAL = ROWS * VPR;
  constexpr int ITERS = (TOTAL + THREADS - 1) / THREADS;
  static_assert(COLS % VEC == 0, "tile width must be a multiple of the vector width");
  static_assert(VEC * sizeof(T) == 4 || VEC * sizeof(T) == 8 || VEC * sizeof(T) == 16,
                "cp.async moves 4, 8 or 16 bytes");
#pragma unroll
  for (int it = 0; it < ITERS; it++) {
    const int i = it * THREADS + (int)threadIdx.x;
    if (TOTAL % THREADS != 0 && i >= TOTAL)
      break;
    const int r = i / VPR, c = (i % VPR) * VEC;
    const long long gr = row0 + r, gc = col0 + c;
    const bool valid = gr < rows && gc + VEC <= cols;
    const T *src = valid ? g + gr * ld + gc : g;
    ts_cp_async<VEC * sizeof(T)>(smem + ts_tile_offset<ROWS, COLS, SWZ>(r, c), src, valid);
  }
}

// acc += As · Bs for one BK slice held in shared memory (As: BM x BK, Bs: BK x BN, both
// row-major and swizzled alike). A fragments come from ldmatrix, B fragments from
// ldmatrix.trans (B is stored k-major, mma wants it n-major).
template <class T, int BM, int BN, int BK, int WARPS_M, int WARPS_N, int SWZ>
__device__ __forceinline__ void ts_mma_tile(float *acc, const T *As, const T *Bs)
{
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, MI = WM / 16, NI = WN / 8;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 16 == 0,
                "warp tiles must be multiples of 16 x 16 and BK of 16");
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    unsigned a[MI][4], b[NI][2];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
      ts_ldmatrix_x4(a[mi], As + ts_swz<BK, SWZ>(wm * WM + mi * 16 + lane % 16, kk + (lane / 16) * 8));
#pragma unroll
    for (int ni = 0; ni < NI; ni += 2) {
      unsigned t[4];
      ts_ldmatrix_x4_trans(t, Bs + ts_swz<BN, SWZ>(kk + lane % 8 + ((lane / 8) % 2) * 8,
                                                    wn * WN + ni * 8 + (lane / 16) * 8));
      b[ni][0] = t[0];
      b[ni][1] = t[1];
      b[ni + 1][0] = t[2];
      b[ni + 1][1] = t[3];
    }
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
      for (int ni = 0; ni < NI; ni++)
        ts_mma_16816<T>(*reinterpret_cast<float(*)[4]>(acc + (mi * NI + ni) * 4), a[mi], b[ni]);
  }
}

// Rounds v0, v1 to T and stores them at C[r][c], C[r][c + 1] (leading dimension ldc) where
// they lie inside rows x cols: one 32-bit store when both do and the pair is aligned.
template <class T>
__device__ __forceinline__ void ts_store_pair(T *C, long long ldc, long long r, long long c,
                                              long long rows, long long cols, float v0, float v1)
{
  if (r >= rows)
    return;
  if (c + 1 < cols && ((r * ldc + c) & 1) == 0) {
    *reinterpret_cast<unsigned *>(C + r * ldc + c) = ts_pack2<T>(v0, v1);
  } else {
    if (c < cols)
      C[r * ldc + c] = ts_from_f32<T>(v0);
    if (c + 1 < cols)
      C[r * ldc + c + 1] = ts_from_f32<T>(v1);
  }
}

// The m16n8 fragment layout of the BM x BN tile at (row0, col0), walked once for the store and
// the epilogue: f(v, r, c) for each of the thread's pairs of accumulators v[0], v[1], which
// hold elements (r, c) and (r, c + 1).
template <int BM, int BN, int WARPS_M, int WARPS_N, class P, class F>
__device__ __forceinline__ void ts_acc_pairs(P *acc, long long row0, long long col0, F f)
{
  constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N, MI = WM / 16, NI = WN / 8;
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int wm = warp / WARPS_N, wn = warp % WARPS_N;
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int ni = 0; ni < NI; ni++)
#pragma unroll
      for (int h = 0; h < 2; h++)
        f(acc + (mi * NI + ni) * 4 + h * 2, row0 + wm * WM + mi * 16 + lane / 4 + h * 8,
          col0 + wn * WN + ni * 8 + (lane % 4) * 2);
}

// Replaces each accumulator of the BM x BN tile at (row0, col0) by f(value, row, column): a
// kernel file's GEMM epilogue (a scale, a bias, an activation), in registers before the store.
template <int BM, int BN, int WARPS_M, int WARPS_N, class F>
__device__ __forceinline__ void ts_acc_epilogue(float *acc, long long row0, long long col0, F f)
{
  ts_acc_pairs<BM, BN, WARPS_M, WARPS_N>(acc, row0, col0, [&](float *v, long long r, long long c) {
    v[0] = f(v[0], r, c);
    v[1] = f(v[1], r, c + 1);
  });
}

// Rounds the accumulators to T and stores them into the BM x BN tile of C at (row0, col0)
// (leading dimension ldc, extent rows x cols): pairs of adjacent columns as one 32-bit store.
template <class T, int BM, int BN, int WARPS_M, int WARPS_N>
__device__ __forceinline__ void ts_store_acc(T *C, long long ldc, long long row0, long long col0,
                                             long long rows, long long cols, const float *acc)
{
  ts_acc_pairs<BM, BN, WARPS_M, WARPS_N>(acc, row0, col0,
                                         [&](const float *v, long long r, long long c) {
    ts_store_pair<T>(C, ldc, r, c, rows, cols, v[0], v[1]);
  });
}
