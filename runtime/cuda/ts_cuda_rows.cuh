// ts_cuda_rows.cuh — tile primitives of the memory-bound ops: saxpy, reduce_sum, softmax,
// layernorm and rmsnorm (sm_80+).
//
// A CTA works on a ROW TILE: BM rows x COLS columns at (r0, c0) of a row-major matrix. Its
// THREADS threads form BM row groups of TPR = THREADS / BM consecutive threads (TPR a power of
// two up to 32, or a multiple of 32). Thread t of a group holds PER = COLS / (TPR * VEC) vectors
// of VEC consecutive elements in registers, as f32 whatever the storage type: vector p lies at
// column c0 + (p * TPR + t) * VEC, so each load instruction of a warp reads one contiguous run
// of bytes. A vector moves as one access when VEC * sizeof(T) <= 16 bytes, else as 16-byte
// pieces (f32 with VEC 8); element offsets must be multiples of the piece, which the lowering
// ensures by choosing VEC to divide the row length.
//
// Everything is predicated, never branched around: rows past `rows` and columns past `cols` are
// neither read nor written (their registers hold 0), and every thread reaches every
// primitive, so the warp shuffles run with all 32 lanes and the barriers are uniform.
//
// A row reduction is two steps: each thread folds its own valid elements (ts_rows_accum),
// then the row group combines the partials (ts_rows_allreduce): xor shuffles within the TPR
// lanes of a row (all lanes end with the same bits), and when a row spans several warps, one
// shared float per warp and a barrier. A reduction writes one slot of WARPS floats; the next
// reduction must use the other slot (red + WARPS), so a slot is rewritten only after the
// barrier of the reduction in between has proved that every thread finished reading it.
#pragma once

// ---- reduction operators: identity, fold one element, combine two partials ----
struct ts_sum {
  static __device__ __forceinline__ float init() { return 0.0f; }
  static __device__ __forceinline__ float acc(float a, float x) { return a + x; }
  static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};
struct ts_sumsq {
  static __device__ __forceinline__ float init() { return 0.0f; }
  static __device__ __forceinline__ float acc(float a, float x) { return fmaf(x, x, a); }
  static __device__ __forceinline__ float combine(float a, float b) { return a + b; }
};
struct ts_max {
  static __device__ __forceinline__ float init() { return __int_as_float(0xff800000); }
  static __device__ __forceinline__ float acc(float a, float x) { return fmaxf(a, x); }
  static __device__ __forceinline__ float combine(float a, float b) { return fmaxf(a, b); }
};

// ---- elementwise maps x = F(x, a) over a register tile ----
struct ts_sub {
  static __device__ __forceinline__ float apply(float x, float a) { return x - a; }
};
struct ts_exp_sub {
  // ex2.approx: relative error ~2^-22, far inside the f32 tolerance (1e-5), and one MUFU op
  // per element keeps the kernel memory-bound.
  static __device__ __forceinline__ float apply(float x, float a) { return __expf(x - a); }
};

// The row-tile layout of one CTA (see the top of the file).
template <int BM, int THREADS, int VEC, int COLS, long long NCOLS> struct ts_row_tile {
  static constexpr int TPR = THREADS / BM;
  static constexpr int PER = COLS / (TPR * VEC);
  // Without a tail every vector lies wholly inside the row or wholly past it.
  static constexpr bool TAIL = NCOLS % VEC != 0;
  static_assert(THREADS % BM == 0 && TPR > 0, "BM must divide the CTA's threads");
  static_assert(TPR % 32 == 0 || (TPR & (TPR - 1)) == 0,
                "threads per row must be a power of two below 32 or a multiple of 32");
  static_assert(PER > 0 && COLS % (TPR * VEC) == 0, "COLS must be a multiple of TPR * VEC");
  static constexpr int STRIDE = TPR * VEC; // columns from one of a thread's vectors to the next
  // Unsigned division: TPR is a power of two or a multiple of 32, and shifts beat sign fixes.
  static __device__ __forceinline__ int row() { return (int)(threadIdx.x / TPR); }
  // Column of this thread's first vector in the tile at c0; vector p is STRIDE * p further, so
  // one address register and immediate offsets serve all of them.
  static __device__ __forceinline__ long long first(long long c0)
  {
    return c0 + (long long)(threadIdx.x % TPR) * VEC;
  }
  // The tile at c0 lies wholly inside the row: no masks (uniform; a constant when the row is
  // held whole, c0 = 0 and COLS = NCOLS).
  static __device__ __forceinline__ bool full(long long c0) { return c0 + COLS <= NCOLS; }
  // The vector at column c holds at least one element of the row / all of its VEC elements.
  static __device__ __forceinline__ bool any(bool full, long long c) { return full || c < NCOLS; }
  static __device__ __forceinline__ bool whole(bool full, long long c)
  {
    return full || (TAIL ? c + VEC <= NCOLS : c < NCOLS);
  }
};

// VEC elements at p as floats, in pieces of at most 16 bytes (p aligned to a piece).
template <class T, int VEC>
__device__ __forceinline__ void ts_rows_ldv(float (&v)[VEC], const T *p)
{
  constexpr int PIECE = VEC * sizeof(T) <= 16 ? VEC : 16 / (int)sizeof(T);
  static_assert(VEC % PIECE == 0, "VEC must be a power of two");
#pragma unroll
  for (int q = 0; q < VEC; q += PIECE) {
    float w[PIECE];
    ts_load_vec<T, PIECE>(w, p + q);
#pragma unroll
    for (int i = 0; i < PIECE; i++)
      v[q + i] = w[i];
  }
}

template <class T, int VEC>
__device__ __forceinline__ void ts_rows_stv(T *p, const float (&v)[VEC])
{
  constexpr int PIECE = VEC * sizeof(T) <= 16 ? VEC : 16 / (int)sizeof(T);
#pragma unroll
  for (int q = 0; q < VEC; q += PIECE) {
    float w[PIECE];
#pragma unroll
    for (int i = 0; i < PIECE; i++)
      w[i] = v[q + i];
    ts_store_vec<T, PIECE>(p + q, w);
  }
}

// The VEC elements at p, column c of a row of NCOLS, as floats: one vector access when whole,
// else element by element up to the row's end (a row whose length is not a multiple of VEC).
template <class T, int VEC, long long NCOLS>
__device__ __forceinline__ void ts_rows_ldv_part(float (&v)[VEC], const T *p, long long c,
                                                 bool whole)
{
  if (whole) {
    ts_rows_ldv<T, VEC>(v, p);
  } else {
#pragma unroll
    for (int i = 0; i < VEC; i++)
      v[i] = c + i < NCOLS ? ts_to_f32(p[i]) : 0.0f;
  }
}

// x <- the row tile at (r0, c0) of src, a row-major matrix of rows x cols. The code is made
// for rows of NCOLS (masks and strides are constants): a launch with another row length traps
// rather than reading the wrong elements, as the launch-shape check does for the grid.
template <class T, int BM, int THREADS, int VEC, int COLS, long long NCOLS, int NX>
__device__ __forceinline__ void ts_rows_load(float (&x)[NX], const T *src, long long r0,
                                             long long c0, long long rows, long long cols)
{
  typedef ts_row_tile<BM, THREADS, VEC, COLS, NCOLS> L;
  static_assert(NX == L::PER * VEC, "register tile must hold PER * VEC floats");
  if (cols != NCOLS)
    __trap();
  const long long r = r0 + L::row(), c1 = L::first(c0);
  const bool full = L::full(c0);
  const T *at = src + (r < rows ? r : 0) * NCOLS + c1;
#pragma unroll
  for (int p = 0; p < L::PER; p++) {
    const long long c = c1 + p * L::STRIDE;
    float v[VEC] = {};
    if (r < rows && L::any(full, c))
      ts_rows_ldv_part<T, VEC, NCOLS>(v, at + p * L::STRIDE, c, L::whole(full, c));
#pragma unroll
    for (int i = 0; i < VEC; i++)
      x[p * VEC + i] = v[i];
  }
}

// x <- the columns of the tile at c0 that this thread holds, read from the vector src[0, NCOLS)
// instead of from its row: a [N] operand broadcast over the rows (layernorm's gamma), the same
// registers in every row group. Columns past NCOLS hold 0.
template <class T, int BM, int THREADS, int VEC, int COLS, long long NCOLS, int NX>
__device__ __forceinline__ void ts_rows_load_bcast(float (&x)[NX], const T *src, long long c0)
{
  typedef ts_row_tile<BM, THREADS, VEC, COLS, NCOLS> L;
  static_assert(NX == L::PER * VEC, "register tile must hold PER * VEC floats");
  const long long c1 = L::first(c0);
  const bool full = L::full(c0);
#pragma unroll
  for (int p = 0; p < L::PER; p++) {
    const long long c = c1 + p * L::STRIDE;
    float v[VEC] = {};
    if (L::any(full, c))
      ts_rows_ldv_part<T, VEC, NCOLS>(v, src + c, c, L::whole(full, c));
#pragma unroll
    for (int i = 0; i < VEC; i++)
      x[p * VEC + i] = v[i];
  }
}

// s <- OP(s, every element of this thread's part of the tile that lies inside the row).
template <class OP, int BM, int THREADS, int VEC, int COLS, long long NCOLS, int NX>
__device__ __forceinline__ void ts_rows_accum(float &s, const float (&x)[NX], long long c0)
{
  typedef ts_row_tile<BM, THREADS, VEC, COLS, NCOLS> L;
  static_assert(NX == L::PER * VEC, "register tile must hold PER * VEC floats");
  const long long c1 = L::first(c0);
  const bool full = L::full(c0);
#pragma unroll
  for (int p = 0; p < L::PER; p++)
#pragma unroll
    for (int i = 0; i < VEC; i++)
      if (L::whole(full, c1 + p * L::STRIDE) || (L::TAIL && c1 + p * L::STRIDE + i < NCOLS))
        s = OP::acc(s, x[p * VEC + i]);
}

// Combines the partials s of each row group; every thread of the row ends with the row's
// value. red: WARPS floats of shared memory when a row spans several warps (else unused, may
// be null). Must be reached by every thread of the CTA.
template <class OP, int BM, int THREADS>
__device__ __forceinline__ void ts_rows_allreduce(float &s, float *red)
{
  constexpr int TPR = THREADS / BM, WIDTH = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1)
    s = OP::combine(s, __shfl_xor_sync(0xffffffffu, s, o));
  if constexpr (TPR > 32) {
    constexpr int WPR = TPR / 32; // warps per row
    const int warp = (int)(threadIdx.x / 32), first = warp / WPR * WPR;
    if (threadIdx.x % 32 == 0)
      red[warp] = s;
    __syncthreads();
    s = red[first];
#pragma unroll
    for (int w = 1; w < WPR; w++)
      s = OP::combine(s, red[first + w]);
  }
}

// ---- online softmax (rows too long for registers): running max m and sum l of exp(x - m) ----
// Folds the thread's valid elements of one tile into (m, l): the tile's max first, then one
// rescale of l per tile rather than per element. A row of -inf so far stays (-inf, 0).
template <int BM, int THREADS, int VEC, int COLS, long long NCOLS, int NX>
__device__ __forceinline__ void ts_rows_accum_softmax(float &m, float &l, const float (&x)[NX],
                                                      long long c0)
{
  typedef ts_row_tile<BM, THREADS, VEC, COLS, NCOLS> L;
  float tm = ts_max::init();
  ts_rows_accum<ts_max, BM, THREADS, VEC, COLS, NCOLS>(tm, x, c0);
  const float mn = fmaxf(m, tm);
  if (mn != ts_max::init()) {
    const long long c1 = L::first(c0);
    const bool full = L::full(c0);
    float t = l * __expf(m - mn); // m = -inf (nothing yet): l = 0 and exp(-inf) = 0
#pragma unroll
    for (int p = 0; p < L::PER; p++)
#pragma unroll
      for (int i = 0; i < VEC; i++)
        if (L::whole(full, c1 + p * L::STRIDE) || (L::TAIL && c1 + p * L::STRIDE + i < NCOLS))
          t += __expf(x[p * VEC + i] - mn);
    l = t;
    m = mn;
  }
}

__device__ __forceinline__ void ts_softmax_combine(float &m, float &l, float m2, float l2)
{
  const float mn = fmaxf(m, m2);
  l = mn == ts_max::init() ? 0.0f : l * __expf(m - mn) + l2 * __expf(m2 - mn);
  m = mn;
}

// ts_rows_allreduce for (m, l) pairs; red: 2 * WARPS floats (both slots).
template <int BM, int THREADS>
__device__ __forceinline__ void ts_rows_allreduce_softmax(float &m, float &l, float *red)
{
  constexpr int TPR = THREADS / BM, WIDTH = TPR < 32 ? TPR : 32;
#pragma unroll
  for (int o = WIDTH / 2; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, o);
    ts_softmax_combine(m, l, m2, l2);
  }
  if constexpr (TPR > 32) {
    constexpr int WPR = TPR / 32, WARPS = THREADS / 32;
    const int warp = (int)(threadIdx.x / 32), first = warp / WPR * WPR;
    if (threadIdx.x % 32 == 0) {
      red[warp] = m;
      red[WARPS + warp] = l;
    }
    __syncthreads();
    m = red[first];
    l = red[WARPS + first];
#pragma unroll
    for (int w = 1; w < WPR; w++)
      ts_softmax_combine(m, l, red[first + w], red[WARPS + first + w]);
  }
}

// ---- maps over a register tile ----
template <class F, int NX>
__device__ __forceinline__ void ts_rows_map(float (&x)[NX], float a)
{
#pragma unroll
  for (int i = 0; i < NX; i++)
    x[i] = F::apply(x[i], a);
}

// y <- a * x + y
template <int NX>
__device__ __forceinline__ void ts_rows_axpy(float (&y)[NX], float a, const float (&x)[NX])
{
#pragma unroll
  for (int i = 0; i < NX; i++)
    y[i] = fmaf(a, x[i], y[i]);
}

// The row tile at (r0, c0) of dst <- x * scale * gamma[c] + beta[c], rounded to T; gamma and
// beta are per-column vectors of the row (NCOLS long), either may be null (1 and 0). Writes
// exactly the tile's elements inside the matrix.
template <class T, int BM, int THREADS, int VEC, int COLS, long long NCOLS, int NX>
__device__ __forceinline__ void ts_rows_store(T *dst, long long r0, long long c0, long long rows,
                                              const float (&x)[NX], float scale, const T *gamma,
                                              const T *beta)
{
  typedef ts_row_tile<BM, THREADS, VEC, COLS, NCOLS> L;
  static_assert(NX == L::PER * VEC, "register tile must hold PER * VEC floats");
  const long long r = r0 + L::row();
  if (r >= rows)
    return; // no barrier or shuffle follows in this primitive
  const long long c1 = L::first(c0);
  const bool full = L::full(c0);
  T *at = dst + r * NCOLS + c1;
#pragma unroll
  for (int p = 0; p < L::PER; p++) {
    const long long c = c1 + p * L::STRIDE;
    if (!L::any(full, c))
      continue;
    const bool whole = L::whole(full, c);
    float v[VEC];
#pragma unroll
    for (int i = 0; i < VEC; i++)
      v[i] = x[p * VEC + i] * scale;
    if (gamma != nullptr) {
      float g[VEC];
      ts_rows_ldv_part<T, VEC, NCOLS>(g, gamma + c, c, whole);
#pragma unroll
      for (int i = 0; i < VEC; i++)
        v[i] *= g[i];
    }
    if (beta != nullptr) {
      float b[VEC];
      ts_rows_ldv_part<T, VEC, NCOLS>(b, beta + c, c, whole);
#pragma unroll
      for (int i = 0; i < VEC; i++)
        v[i] += b[i];
    }
    if (whole) {
      ts_rows_stv<T, VEC>(at + p * L::STRIDE, v);
    } else {
#pragma unroll
      for (int i = 0; i < VEC; i++)
        if (c + i < NCOLS)
          at[p * L::STRIDE + i] = ts_from_f32<T>(v[i]);
    }
  }
}

// dst[r] <- s for each row r of the tile below rows (one thread per row writes).
template <class T, int BM, int THREADS>
__device__ __forceinline__ void ts_rows_store_scalar(T *dst, long long r0, long long rows, float s)
{
  constexpr int TPR = THREADS / BM;
  const long long r = r0 + (int)(threadIdx.x / TPR);
  if (threadIdx.x % TPR == 0 && r < rows)
    dst[r] = ts_from_f32<T>(s);
}
