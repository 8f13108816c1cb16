// ts_cuda_attn.cuh — tile primitives of the FlashAttention-2 forward kernel (mma.sync m16n8k16,
// sm_80+), one per step of the algorithm as the generated code spells it out.
//
// A CTA owns BM query rows of one head; each of its BM / 16 warps owns 16 of them. Q, K, V and
// O are [B*H][S][D] row-major; the generated code passes each primitive the head's base
// pointer. Shared tiles are row-major with D columns and their 16-byte chunks XOR-swizzled by
// row (ts_swz<D, 1>), so the 8 rows one ldmatrix phase reads land on 8 different bank groups.
//
// Register tiles of a thread (fragment layouts of mma.m16n8k16, g = lane / 4, t = lane % 4):
//   qf[D/16][4]  Q as A fragments: k-slice kk of rows {g, g+8} x cols kk*16 + {2t, 2t+1, +8}
//   s[BN/8][4]   scores, then probabilities, as C fragments: s[n][0..1] row g, cols n*8 + 2t +
//                {0,1}; s[n][2..3] row g + 8
//   o[D/8][4]    the O accumulator, C fragments over D
//   m[2], l[2]   running row max (raw score units) and this thread's part of the running row
//                sum, for rows g and g + 8; the 4 lanes of a quad share rows, so maxima are
//                reduced across the quad at once and sums only at the end.
// The score scale 1/sqrt(D) is folded with log2(e) into one factor, so each probability is one
// FFMA and one ex2. The only inline PTX of this file is in the four helpers at the top (ex2,
// ldmatrix and its .trans, cp.async); everything else is plain C++ over them and the core's
// ts_mma_16816, which is what let the fragment logic be checked on a host emulation of those
// instructions (every point of the default spaces, tails, causal, both dtypes) without a GPU.
#pragma once

__device__ __forceinline__ float ts_attn_neg_inf() { return __int_as_float(0xff800000); }

// 2^x (ex2.approx: 2 ulp; 2^-inf = +0, which is what masked scores rely on).
__device__ __forceinline__ float ts_attn_exp2(float x)
{
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// ldmatrix on a 32-bit shared address. The fragment loops below address shared memory as one
// base register per lane plus constants: ts_swz<D, 1>(row, col) for the rows and 16-byte chunks
// a lane reads is row * D + ((col / 8) ^ (row & 7)) * 8, and with rows stepping by multiples of
// 8 and chunks by 2 that is base + (((2 * k) ^ y) * 16 bytes) with y = the lane's (chunk parity
// ^ row & 7) < 8; ((2k) ^ y) = (2k & ~7) + ((2k & 7) ^ y) leaves 4 distinct lane offsets, the
// rest immediates. Computed naively, ptxas keeps one address register per (tile, k) pair: 64
// registers at D=128 that the accumulators need.
__device__ __forceinline__ void ts_attn_ldsm_x4(unsigned (&r)[4], unsigned addr)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ts_attn_ldsm_x4_trans(unsigned (&r)[4], unsigned addr)
{
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// 16 bytes global -> shared (32-bit address) by cp.async.cg; zero-filled, nothing read, when
// !valid.
__device__ __forceinline__ void ts_attn_cp_async16(unsigned dst, const void *src, bool valid)
{
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0));
}

// Byte offset of 16-byte chunk 2k (+ the lane's parity) of a swizzled row, y as above.
__device__ __forceinline__ unsigned ts_attn_chunk(int k, int y)
{
  // (valid for rows of at least 8 chunks, D >= 64 16-bit elements: ts_swz's full 3-bit XOR)
  return (unsigned)(((2 * k) & ~7) + (((2 * k) & 7) ^ y)) * 16u;
}

// Copies rows [row0, row0 + ROWS) of a [rows][D] row-major matrix into a swizzled ROWS x D
// shared tile, 16 bytes per cp.async. Rows at or past `rows` are zero-filled without reading
// global memory: the tail of the sequence, and whole tiles past the last one a CTA needs.
// A thread copies one 16-byte column of the tile every RSTEP = THREADS / CPR rows; RSTEP is a
// multiple of the swizzle period (8 rows), so its swizzled column never changes and every
// chunk's global and shared address is the first one plus a constant: one pointer and one
// shared address a copy, whatever ROWS is, instead of an address register per chunk.
template <class T, int ROWS, int D, int THREADS>
__device__ __forceinline__ void ts_attn_copy_rows_async(T *smem, const T *g, long long row0,
                                                        long long rows)
{
  constexpr int EPC = 16 / (int)sizeof(T); // elements per chunk
  constexpr int CPR = D / EPC;             // chunks per row
  constexpr int RSTEP = THREADS / CPR;
  static_assert(D % EPC == 0 && THREADS % CPR == 0 && RSTEP % 8 == 0 && ROWS % RSTEP == 0,
                "a thread copies one swizzled column every RSTEP rows");
  const int r = (int)threadIdx.x / CPR, c = ((int)threadIdx.x % CPR) * EPC;
  const T *src = g + (row0 + r) * D + c;
  const unsigned dst = ts_smem_addr(smem + ts_swz<D, 1>(r, c));
  // Rows of this thread's column still in the matrix, clamped to 32 bits.
  const long long left64 = rows - row0 - r;
  const int left = left64 < 0 ? 0 : left64 > ROWS ? ROWS : (int)left64;
#pragma unroll
  for (int it = 0; it < ROWS / RSTEP; it++) {
    const bool valid = it * RSTEP < left;
    ts_attn_cp_async16(dst + (unsigned)(it * RSTEP * D * sizeof(T)),
                       valid ? src + it * RSTEP * D : g, valid);
  }
}

// m = -inf, l = 0: no key seen yet.
__device__ __forceinline__ void ts_attn_softmax_init(float *m, float *l)
{
  m[0] = m[1] = ts_attn_neg_inf();
  l[0] = l[1] = 0.f;
}

// Loads the warp's 16 rows of the Q tile (BM x D in shared memory) into A fragments, once.
// ldmatrix.x4: lanes 0-7 address rows 0-7 at cols 16k (a0), 8-15 rows 8-15 (a1), 16-23 rows
// 0-7 at cols 16k + 8 (a2), 24-31 rows 8-15 at 16k + 8 (a3).
template <class T, int D>
__device__ __forceinline__ void ts_attn_load_q(int *qf, const T *Qs)
{
  const int warp = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32;
  const int row = warp * 16 + lane % 16, y = (lane / 16) ^ (row & 7);
  const unsigned base = ts_smem_addr(Qs) + (unsigned)(row * D * (int)sizeof(T));
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++)
    ts_attn_ldsm_x4(*reinterpret_cast<unsigned(*)[4]>(qf + kk * 4), base + ts_attn_chunk(kk, y));
}

// s = Q · Kᵀ for one BN x D key tile. K is row-major [key][d], which is the column-major
// B operand mma wants (n = key, k = d), so plain ldmatrix gives B fragments: matrix j of an x4
// covers keys np*16 + (j / 2) * 8 + 0..7 at cols kk*16 + (j % 2) * 8 + 0..7, i.e. b0 and b1 of
// two adjacent n8 tiles.
template <class T, int BN, int D>
__device__ __forceinline__ void ts_attn_mma_qk(float *s, const int *qf, const T *Ks)
{
  static_assert(BN % 16 == 0 && D % 16 == 0, "BN and D must be multiples of 16");
  const int lane = (int)threadIdx.x % 32;
  const int row = (lane / 16) * 8 + lane % 8, y = ((lane / 8) % 2) ^ (row & 7);
  const unsigned base = ts_smem_addr(Ks) + (unsigned)(row * D * (int)sizeof(T));
#pragma unroll
  for (int i = 0; i < BN / 2; i++)
    s[i] = 0.f;
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) {
    const unsigned(&a)[4] = *reinterpret_cast<const unsigned(*)[4]>(qf + kk * 4);
#pragma unroll
    for (int np = 0; np < BN / 16; np++) {
      unsigned b[4];
      ts_attn_ldsm_x4(b, base + (unsigned)(np * 16 * D * (int)sizeof(T)) + ts_attn_chunk(kk, y));
      const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      ts_mma_16816<T>(*reinterpret_cast<float(*)[4]>(s + (2 * np) * 4), a, b0);
      ts_mma_16816<T>(*reinterpret_cast<float(*)[4]>(s + (2 * np + 1) * 4), a, b1);
    }
  }
}

// Masks the scores of the tile whose first key is k0: keys at or past S (the zero-filled tail)
// and, when CAUSAL, keys after the query row (q0 is the CTA's first row) become -inf. Only
// tiles that cross the diagonal or the end of the sequence need it (`needed`, the same for the
// whole CTA); the others return at once. The math threads start at thread T0 (128 behind a
// producer warpgroup), warp w of them owning rows 16w..16w + 15 of the CTA's.
template <int BN, int CAUSAL, int T0 = 0>
__device__ __forceinline__ void ts_attn_mask(float *s, long long q0, long long k0, long long S,
                                             bool needed)
{
  if (!needed)
    return;
  const int warp = ((int)threadIdx.x - T0) / 32, lane = (int)threadIdx.x % 32;
  // Relative to the CTA's first row, in 32 bits (S < 2^31): rows of this lane, the tile's keys.
  const int row = warp * 16 + lane / 4, key0 = (int)(k0 - q0) + (lane % 4) * 2;
  const int end = (int)(S - q0); // keys at or past it are past the sequence
#pragma unroll
  for (int n = 0; n < BN / 8; n++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int key = key0 + n * 8 + (e & 1);
      if (key >= end || (CAUSAL && key > row + (e >> 1) * 8))
        s[n * 4 + e] = ts_attn_neg_inf();
    }
}

// The online-softmax step for one tile: new running max m' = max(m, rowmax(s)); l is
// rescaled by alpha = 2^((m - m') c) (returned, for O: ts_attn_rescale); s becomes
// p = 2^(s c - m' c), added into l. c = scale · log2(e). A row with no unmasked key so far
// keeps m' = -inf; its exponent base is then 0 instead of -inf, so p = 2^-inf = 0 and alpha =
// 2^(-inf) = 0 rather than NaN (-inf - -inf).
template <int BN>
__device__ __forceinline__ void ts_attn_softmax_step(float *s, float *m, float *l, float *alpha,
                                                     float scale_log2)
{
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float mx = m[r];
#pragma unroll
    for (int n = 0; n < BN / 8; n++)
      mx = fmaxf(mx, fmaxf(s[n * 4 + r * 2], s[n * 4 + r * 2 + 1]));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float base = mx == ts_attn_neg_inf() ? 0.f : mx * scale_log2;
    alpha[r] = ts_attn_exp2(m[r] * scale_log2 - base);
    m[r] = mx;
    float sum = 0.f;
#pragma unroll
    for (int n = 0; n < BN / 8; n++)
#pragma unroll
      for (int e = 0; e < 2; e++) {
        const float p = ts_attn_exp2(fmaf(s[n * 4 + r * 2 + e], scale_log2, -base));
        s[n * 4 + r * 2 + e] = p;
        sum += p;
      }
    l[r] = l[r] * alpha[r] + sum;
  }
}

// O's rows scaled by their alpha (rows g and g + 8 of each n8 block).
template <int D> __device__ __forceinline__ void ts_attn_rescale(float *o, const float *alpha)
{
#pragma unroll
  for (int n = 0; n < D / 8; n++) {
    o[n * 4] *= alpha[0];
    o[n * 4 + 1] *= alpha[0];
    o[n * 4 + 2] *= alpha[1];
    o[n * 4 + 3] *= alpha[1];
  }
}

// Both at once: the step of the loops that rescale O as soon as the tile's max is known.
template <int BN, int D>
__device__ __forceinline__ void ts_attn_softmax_online(float *s, float *m, float *l, float *o,
                                                       float scale_log2)
{
  float alpha[2];
  ts_attn_softmax_step<BN>(s, m, l, alpha, scale_log2);
  ts_attn_rescale<D>(o, alpha);
}

// o += P · V for one BN x D value tile. P stays in registers: the two C fragments of n8 tiles
// 2j and 2j + 1 hold exactly the A fragment of k16 slice j (a0 = row g keys 2t.., a1 = row
// g + 8, a2 and a3 the same 8 keys later), rounded to T in pairs. V is row-major [key][d], the
// row-major (k-major) B operand, so ldmatrix.trans gives its fragments, as in ts_mma_tile.
template <class T, int BN, int D>
__device__ __forceinline__ void ts_attn_mma_pv(float *o, const float *p, const T *Vs)
{
  const int lane = (int)threadIdx.x % 32;
  // ldmatrix.x4.trans: lanes 0-7 rows (keys) 0-7 at cols 16dp (b0 of n8 tile 2dp), 8-15 keys
  // 8-15 (its b1), 16-23 and 24-31 the same at cols 16dp + 8 (tile 2dp + 1).
  const int row = lane % 16, y = (lane / 16) ^ (row & 7);
  const unsigned base = ts_smem_addr(Vs) + (unsigned)(row * D * (int)sizeof(T));
  unsigned a[BN / 16][4];
#pragma unroll
  for (int j = 0; j < BN / 16; j++) {
    const float *c0 = p + (2 * j) * 4, *c1 = p + (2 * j + 1) * 4;
    a[j][0] = ts_pack2<T>(c0[0], c0[1]);
    a[j][1] = ts_pack2<T>(c0[2], c0[3]);
    a[j][2] = ts_pack2<T>(c1[0], c1[1]);
    a[j][3] = ts_pack2<T>(c1[2], c1[3]);
  }
#pragma unroll
  for (int dp = 0; dp < D / 16; dp++) {
#pragma unroll
    for (int j = 0; j < BN / 16; j++) {
      unsigned b[4];
      ts_attn_ldsm_x4_trans(b, base + (unsigned)(j * 16 * D * (int)sizeof(T)) + ts_attn_chunk(dp, y));
      const unsigned b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
      ts_mma_16816<T>(*reinterpret_cast<float(*)[4]>(o + (2 * dp) * 4), a[j], b0);
      ts_mma_16816<T>(*reinterpret_cast<float(*)[4]>(o + (2 * dp + 1) * 4), a[j], b1);
    }
  }
}

// 1 / l of the thread's rows lane / 4 and lane / 4 + 8, the row sums completed across the quad
// (each lane summed its own columns); a row that never saw a key (l = 0) gets 0.
__device__ __forceinline__ void ts_attn_row_inv(const float *l, float *inv)
{
#pragma unroll
  for (int r = 0; r < 2; r++) {
    float sum = l[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    inv[r] = sum > 0.f ? 1.f / sum : 0.f;
  }
}

// O = o / l for the warp's rows below S, rounded to T and stored as pairs (32-bit stores); a
// row that never saw a key stores 0. T0 as in ts_attn_mask.
template <class T, int D, int T0 = 0>
__device__ __forceinline__ void ts_attn_store(T *O, const float *o, const float *l, long long q0,
                                              long long S)
{
  const int warp = ((int)threadIdx.x - T0) / 32, lane = (int)threadIdx.x % 32;
  float inv[2];
  ts_attn_row_inv(l, inv);
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const long long row = q0 + warp * 16 + lane / 4 + r * 8;
    if (row >= S)
      continue;
    T *dst = O + row * D + (lane % 4) * 2;
#pragma unroll
    for (int n = 0; n < D / 8; n++)
      *reinterpret_cast<unsigned *>(dst + n * 8) =
          ts_pack2<T>(o[n * 4 + r * 2] * inv[r], o[n * 4 + r * 2 + 1] * inv[r]);
  }
}

// ---- FlashAttention-3 style on wgmma (sm_90a; mma("wgmma"), op-attention.c) ----
// (ts_attn_store_tma, the epilogue("tma") form of ts_attn_store, is at the end of the file.)
// A CTA of three warpgroups walks one or more query tiles: warpgroup 0 is the producer, whose
// thread 0 loads each tile's BM x D Q into one of QBUFS buffers and the BN x D K and V tiles of
// each key tile into a STAGES-deep ring by TMA; warpgroups 1 and 2 are the consumers, each
// owning 64 of the BM = 128 query rows. Per key
// tile a consumer computes S = Q·Kᵀ with wgmmas reading both operands from shared memory, runs
// the online softmax on S where the wgmma left it (the accumulator layout of a warp is the
// mma.sync C layout, so ts_attn_mask and ts_attn_softmax_online serve unchanged), then
// O += P·V with P from registers (ts_wgmma_rs). Shared tiles are the TMA's 128-byte-swizzled
// panels (ts_tma_load_tile): D / 64 panels of ROWS rows of 64 elements, panel after panel,
// each on a 1024-byte boundary; Q and K are read K-major (d along a 128-byte row), V
// N-major (imm-trans-b: keys are its k, d its n).
// Barriers, as pairs of int32 (bars + 2 i): full[s] (i = s; one arrival, the producer's
// expect_tx, plus K's and V's bytes), empty[s] (i = STAGES + s; one arrival per consumer
// warpgroup once its wgmmas reading the slot have finished), then the Q buffers' full and empty
// barriers (i = 2 STAGES + b and 2 STAGES + QBUFS + b).

// Thread 0 initialises the ring's full/empty pairs and the Q buffers' (full: the producer's
// expect_tx; empty: both consumers, once a query tile's Q·Kᵀ are done) and prefetches the
// three maps; the caller's __syncthreads publishes them.
template <int STAGES, int QBUFS>
__device__ __forceinline__ void ts_attn_ws_init(int *bars, const TsTmaMap *q, const TsTmaMap *k,
                                                const TsTmaMap *v)
{
  if (threadIdx.x != 0)
    return;
#pragma unroll
  for (int i = 0; i < STAGES; i++) {
    ts_mbar_init_one(ts_smem_addr(bars + 2 * i), 1);
    ts_mbar_init_one(ts_smem_addr(bars + 2 * (STAGES + i)), 2);
  }
#pragma unroll
  for (int i = 0; i < QBUFS; i++) {
    ts_mbar_init_one(ts_smem_addr(bars + 2 * (2 * STAGES + i)), 1);
    ts_mbar_init_one(ts_smem_addr(bars + 2 * (2 * STAGES + QBUFS + i)), 2);
  }
  ts_mbar_fence_init();
  ts_tma_prefetch_map(q);
  ts_tma_prefetch_map(k);
  ts_tma_prefetch_map(v);
}

// Issues s (BN / 2 floats a thread) = this consumer warpgroup's 64 rows of Q times the key
// tile's transpose, D / 16 k16 steps, as one wgmma group. Consumer w = threadIdx.x / 128 - WG0
// reads Q rows 64w..64w + 63.
template <class T, int BM, int BN, int D, int WG0 = 1>
__device__ __forceinline__ void ts_attn_wg_qk_issue(float *s, const T *Qs, const T *Ks)
{
  constexpr int ROW = 128, EPR = ROW / (int)sizeof(T); // a panel row: bytes, elements
  static_assert(D % EPR == 0 && BM % 64 == 0 && BN % 64 == 0, "whole panels, m64 row blocks");
  const int w = (int)threadIdx.x / 128 - WG0;
  const unsigned q = ts_smem_addr(Qs) + (unsigned)(w * 64 * ROW), k = ts_smem_addr(Ks);
  ts_wgmma_fence_acc<BN / 2>(s);
  ts_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < D / 16; kk++) {
    // Step kk is in panel kk * 16 / EPR, 32 bytes per step along its rows; SBO = 8 rows.
    const unsigned p = (unsigned)(kk * 16 / EPR), off = (unsigned)(kk * 16 % EPR * (int)sizeof(T));
    const unsigned long long da = ts_wgmma_desc(q + p * BM * ROW + off, 16, 8 * ROW);
    const unsigned long long db = ts_wgmma_desc(k + p * BN * ROW + off, 16, 8 * ROW);
    ts_wgmma_ss<T, BN, 0>(s, da, db, kk > 0);
  }
  ts_wgmma_commit();
}

// Waits until at most N of the warpgroup's wgmma groups are unfinished; acc (NACC floats),
// written by the groups that finished, may then be read.
template <int N, int NACC> __device__ __forceinline__ void ts_attn_wg_wait(float *acc)
{
  ts_wgmma_wait<N>();
  ts_wgmma_fence_acc<NACC>(acc);
}

// ts_attn_wg_qk_issue, then its wait: returns with s computed.
template <class T, int BM, int BN, int D, int WG0 = 1>
__device__ __forceinline__ void ts_attn_wg_qk(float *s, const T *Qs, const T *Ks)
{
  ts_attn_wg_qk_issue<T, BM, BN, D, WG0>(s, Qs, Ks);
  ts_attn_wg_wait<0, BN / 2>(s);
}

// The probabilities p (in the score registers) rounded to T in pairs: a[BN / 16][4], the
// A fragments of the P·V wgmmas' k16 steps.
template <class T, int BN>
__device__ __forceinline__ void ts_attn_pack_p(unsigned *a, const float *p)
{
#pragma unroll
  for (int j = 0; j < BN / 16; j++) {
    const float *c0 = p + (2 * j) * 4, *c1 = p + (2 * j + 1) * 4;
    a[4 * j] = ts_pack2<T>(c0[0], c0[1]);
    a[4 * j + 1] = ts_pack2<T>(c0[2], c0[3]);
    a[4 * j + 2] = ts_pack2<T>(c1[0], c1[1]);
    a[4 * j + 3] = ts_pack2<T>(c1[2], c1[3]);
  }
}

// Issues o += P·V for one key tile as one wgmma group: BN / 16 register-A wgmmas (a from
// ts_attn_pack_p, which must keep its values until the group has finished), V's d panels as
// N-major B (LBO = one panel, BN rows; SBO = 8 rows).
template <class T, int BN, int D>
__device__ __forceinline__ void ts_attn_wg_pv_issue(float *o, const unsigned *a, const T *Vs)
{
  constexpr int ROW = 128;
  const unsigned v = ts_smem_addr(Vs);
  ts_wgmma_fence_acc<D / 2>(o);
  ts_wgmma_fence();
#pragma unroll
  for (int j = 0; j < BN / 16; j++)
    ts_wgmma_rs<T, D>(o, a + 4 * j, ts_wgmma_desc(v + (unsigned)(j * 16 * ROW), BN * ROW, 8 * ROW), 1);
  ts_wgmma_commit();
}

// o += P·V with p in the score registers; returns with the wgmmas finished, so the slot may be
// reused.
template <class T, int BN, int D>
__device__ __forceinline__ void ts_attn_wg_pv(float *o, const float *p, const T *Vs)
{
  unsigned a[BN / 4];
  ts_attn_pack_p<T, BN>(a, p);
  ts_attn_wg_pv_issue<T, BN, D>(o, a, Vs);
  ts_attn_wg_wait<0, D / 2>(o);
}

// epilogue("tma"): ts_attn_store through shared memory and the TMA. The consumer warpgroup
// writes O / l, rounded to T, with stmatrix over its own 64 rows of the tile's Q buffer Qs —
// every wgmma that read them has finished, and the other consumer's read only its rows — in
// the Q tile's layout (ts_tile_offset<BM, D, 2>: D / 64 panels of BM 128-byte rows, the
// 128-byte swizzle, so the eight rows of a stmatrix hit eight bank groups), fences the writes
// into the async proxy, and its first thread stores them as D / 64 boxes of 64 x 64 through the
// map of O ([B*H*S, D] from row0, the tile's first row) and waits until the boxes have been
// read: the buffer may then go back to the producer (the caller's arrival, from the same
// thread). Every thread writes whole 16-byte rows, where ts_attn_store writes 4 bytes a lane.
// Only for parts of the tile that lie inside the head (the map would store rows past S into
// the next head's); the caller stores the others with ts_attn_store.
template <class T, int BM, int D, int T0>
__device__ __forceinline__ void ts_attn_store_tma(T *Qs, const TsTmaMap *map, long long row0,
                                                  const float *o, const float *l)
{
  static_assert(BM % 64 == 0 && D % 64 == 0 && sizeof(T) == 2,
                "64-row parts of whole 64-column panels of 16-bit elements");
  const int w = ((int)threadIdx.x - T0) / 128, t = ((int)threadIdx.x - T0) % 128, lane = t % 32;
  float inv[2];
  ts_attn_row_inv(l, inv);
  // Every warp of the warpgroup is past its last wgmma's wait before any row is overwritten.
  ts_wg_sync(w);
  // Matrix q of a stmatrix.x4: rows 8 (q % 2) of the warp's 16, columns 8 (j + q / 2).
  const int q = lane / 8, row = w * 64 + t / 32 * 16 + (q % 2) * 8 + lane % 8;
#pragma unroll
  for (int j = 0; j < D / 8; j += 2) {
    const float *v = o + j * 4;
    const int col = (j + q / 2) * 8;
    ts_stmatrix_x4(ts_smem_addr(Qs + ts_tile_offset<BM, D, 2>(row, col)),
                   ts_pack2<T>(v[0] * inv[0], v[1] * inv[0]), ts_pack2<T>(v[2] * inv[1], v[3] * inv[1]),
                   ts_pack2<T>(v[4] * inv[0], v[5] * inv[0]), ts_pack2<T>(v[6] * inv[1], v[7] * inv[1]));
  }
  ts_async_proxy_fence();
  ts_wg_sync(w);
  if (t == 0) {
#pragma unroll
    for (int p = 0; p < D / 64; p++)
      ts_tma_store_2d(map, p * 64, (int)(row0 + w * 64), ts_smem_addr(Qs + p * BM * 64 + w * 64 * 64));
    ts_bulk_commit();
    ts_bulk_wait_read<0>();
  }
}
