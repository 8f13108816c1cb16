// ts_cuda_wgmma.cuh — tile primitives of the warpgroup tensor-core GEMM (wgmma.mma_async,
// sm_90a only; the space's `has_wgmma` constraint keeps these kernels off other arches).
//
// The CTA is WGS warpgroups of 128 threads; warpgroup g owns rows [g * BM / WGS, (g + 1) * BM /
// WGS) of the BM x BN tile of C as BM / WGS / 64 m64nBNk16 accumulators. Both operands are read
// by the tensor cores straight from shared memory through 64-bit matrix descriptors, so no
// fragment passes through registers. The BK = 64 slices (one 128-byte row of 16-bit elements)
// come from the same cp.async ring as the mma.sync path, written in the layout the descriptors
// describe (ts_tile_offset with SWZ = 2, ts_cuda_gemm.cuh):
//   A slice, BM x 64, K-major: 128-byte rows, 16-byte chunks xor-ed by row % 8 — the PTX
//     128-byte swizzle; 8-row groups 1024 bytes apart (the stride byte offset).
//   B slice, 64 x BN, N-major (global B is [K, N], N contiguous, and wgmma reads a 16-bit B
//     transposed with imm-trans-b = 1): BN / 64 panels of 64 x 64, each 64 k-rows of 128 bytes
//     swizzled alike; k-row groups of 8 are 1024 bytes apart (stride byte offset), the panels
//     64 * 128 bytes apart (leading byte offset).
//   fp8 (e4m3, e5m2): BK = 128 elements make the same 128-byte rows, an instruction takes 32
//     of them (m64nNk32), and B is K-major like A — global B stored [N, K], a BN x 128 slice
//     of 128-byte rows — since fp8 wgmma cannot transpose an operand.
// The hardware applies the swizzle to address bits (bits 4-6 ^= bits 7-9), so every tile must
// start on a 1024-byte boundary: the emitter aligns dynamic shared memory to 1024 and each ring
// slice is a multiple of 8 KiB (both static_asserted or trapped on).
#pragma once

// ---- instructions ----
// 64-bit shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address,
// leading and stride dimension byte offsets, each (x & 0x3ffff) >> 4 in a 14-bit field at bits
// 0, 16 and 32; base offset (bits 49-51) 0 since tiles start on the pattern's 1024-byte
// boundary; swizzle mode 1 (128-byte) in bits 62-63.
__device__ __forceinline__ unsigned long long ts_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
  return (unsigned long long)((addr & 0x3ffffu) >> 4) |
         (unsigned long long)((lbo & 0x3ffffu) >> 4) << 16 |
         (unsigned long long)((sbo & 0x3ffffu) >> 4) << 32 | 1ull << 62;
}

// cp.async writes shared memory in the generic proxy and wgmma reads it in the async proxy:
// each writer fences after its copies landed, before the barrier that publishes them.
__device__ __forceinline__ void ts_async_proxy_fence()
{
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Orders this thread's register accesses before the warpgroup's next wgmma.mma_async.
__device__ __forceinline__ void ts_wgmma_fence()
{
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void ts_wgmma_commit()
{
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most N committed wgmma groups of this warpgroup are unfinished.
template <int N> __device__ __forceinline__ void ts_wgmma_wait()
{
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// The accumulators are written by the tensor cores behind the compiler's back between a wgmma
// and its wait: an empty asm that "reads and writes" each one keeps the compiler from moving or
// copying them across those points.
template <int NACC> __device__ __forceinline__ void ts_wgmma_fence_acc(float *acc)
{
#pragma unroll
  for (int i = 0; i < NACC; i++)
    asm volatile("" : "+f"(acc[i])::"memory");
}

// PTX has no register ranges: the accumulator lists are spelled out. TS_WG_R10(t) is the ten
// operands %t0 .. %t9 (t empty: %0 .. %9); TS_WG_D8(i) binds d[i] .. d[i + 7] in order.
#define TS_WG_R10(t)                                                                             \
  "%" #t "0, %" #t "1, %" #t "2, %" #t "3, %" #t "4, %" #t "5, %" #t "6, %" #t "7, %" #t "8, %" #t "9"
#define TS_WG_D8(i)                                                                              \
  "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]),    \
    "+f"(d[i + 6]), "+f"(d[i + 7])
#define TS_WG_D32(i) TS_WG_D8(i), TS_WG_D8(i + 8), TS_WG_D8(i + 16), TS_WG_D8(i + 24)
#define TS_WG_REGS64 TS_WG_R10() ", " TS_WG_R10(1) ", " TS_WG_R10(2) ", %30, %31"
#define TS_WG_REGS128                                                                            \
  TS_WG_R10() ", " TS_WG_R10(1) ", " TS_WG_R10(2) ", " TS_WG_R10(3) ", " TS_WG_R10(4) ", "       \
  TS_WG_R10(5) ", %60, %61, %62, %63"
#define TS_WG_REGS256                                                                            \
  TS_WG_R10() ", " TS_WG_R10(1) ", " TS_WG_R10(2) ", " TS_WG_R10(3) ", " TS_WG_R10(4) ", "       \
  TS_WG_R10(5) ", " TS_WG_R10(6) ", " TS_WG_R10(7) ", " TS_WG_R10(8) ", " TS_WG_R10(9) ", "      \
  TS_WG_R10(10) ", " TS_WG_R10(11) ", %120, %121, %122, %123, %124, %125, %126, %127"

template <class T> constexpr bool ts_is_bf16 = false;
template <> constexpr bool ts_is_bf16<ts_bf16> = true;
template <class T> constexpr bool ts_is_e4m3 = false;
template <> constexpr bool ts_is_e4m3<ts_e4m3> = true;

// d (N/2 floats per thread) = A · B + (scale_d ? d : 0) for one m64nNk16 step of the
// warpgroup: A (64 x 16, K-major) and B (16 x N) from the descriptors, B N-major (TB = 1,
// imm-trans-b: a [K, N] row-major operand, as gemm's B) or K-major (TB = 0: stored [N, K], as
// attention's K for Q·Kᵀ); imm-scale-a/b = 1, imm-trans-a = 0. Thread t of the warpgroup holds,
// for each 8-column block j, d[4j + e] = D[16 (t / 32) + (t % 32) / 4 + 8 (e / 2)][8j + 2 (t % 4)
// + e % 2].
template <class T, int N, int TB = 1>
__device__ __forceinline__ void ts_wgmma_ss(float *d, unsigned long long da, unsigned long long db, int scale_d)
{
  static_assert(N == 64 || N == 128 || N == 256, "wgmma tiles are 64, 128 or 256 columns wide");
  static_assert(TB == 0 || TB == 1, "imm-trans-b is 0 or 1");
  if constexpr (N == 64 && ts_is_bf16<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{" TS_WG_REGS64 "}, %32, %33, p, 1, 1, 0, %35;\n}\n"
                 : TS_WG_D32(0)
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
  else if constexpr (N == 64)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{" TS_WG_REGS64 "}, %32, %33, p, 1, 1, 0, %35;\n}\n"
                 : TS_WG_D32(0)
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
  else if constexpr (N == 128 && ts_is_bf16<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{" TS_WG_REGS128 "}, %64, %65, p, 1, 1, 0, %67;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32)
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
  else if constexpr (N == 128)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                 "{" TS_WG_REGS128 "}, %64, %65, p, 1, 1, 0, %67;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32)
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
  else if constexpr (ts_is_bf16<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
                 "{" TS_WG_REGS256 "}, %128, %129, p, 1, 1, 0, %131;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32), TS_WG_D32(64), TS_WG_D32(96)
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
                 "{" TS_WG_REGS256 "}, %128, %129, p, 1, 1, 0, %131;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32), TS_WG_D32(64), TS_WG_D32(96)
                 : "l"(da), "l"(db), "r"(scale_d), "n"(TB));
}

// d += A · B (or = with scale_d 0) for one m64nNk32 step on fp8 (e4m3 or e5m2, both operands
// the same type): A (64 x 32) and B (32 x N) both K-major — fp8 wgmma has no transpose from
// shared memory (imm-trans is for 16-bit types only), so B comes stored [N, K]. The
// accumulator layout is ts_wgmma_ss's.
template <class T, int N>
__device__ __forceinline__ void ts_wgmma_ss8(float *d, unsigned long long da, unsigned long long db, int scale_d)
{
  static_assert(N == 64 || N == 128 || N == 256, "wgmma tiles are 64, 128 or 256 columns wide");
  static_assert(sizeof(T) == 1, "ts_wgmma_ss8 multiplies fp8 operands");
  if constexpr (N == 64 && ts_is_e4m3<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
                 "{" TS_WG_REGS64 "}, %32, %33, p, 1, 1;\n}\n"
                 : TS_WG_D32(0)
                 : "l"(da), "l"(db), "r"(scale_d));
  else if constexpr (N == 64)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 "
                 "{" TS_WG_REGS64 "}, %32, %33, p, 1, 1;\n}\n"
                 : TS_WG_D32(0)
                 : "l"(da), "l"(db), "r"(scale_d));
  else if constexpr (N == 128 && ts_is_e4m3<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
                 "{" TS_WG_REGS128 "}, %64, %65, p, 1, 1;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32)
                 : "l"(da), "l"(db), "r"(scale_d));
  else if constexpr (N == 128)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2 "
                 "{" TS_WG_REGS128 "}, %64, %65, p, 1, 1;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32)
                 : "l"(da), "l"(db), "r"(scale_d));
  else if constexpr (ts_is_e4m3<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 "
                 "{" TS_WG_REGS256 "}, %128, %129, p, 1, 1;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32), TS_WG_D32(64), TS_WG_D32(96)
                 : "l"(da), "l"(db), "r"(scale_d));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2 "
                 "{" TS_WG_REGS256 "}, %128, %129, p, 1, 1;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32), TS_WG_D32(64), TS_WG_D32(96)
                 : "l"(da), "l"(db), "r"(scale_d));
}

// The same step with A from registers (the RS form): a[0..3] are the warp's 16 rows of the
// 64 x 16 A slice in the m16n8k16 A fragment layout (a0 row g cols 2t, 2t+1; a1 row g + 8; a2
// and a3 the same 8 columns later; g = lane / 4, t = lane % 4, each a pair of T), which is the
// layout of the accumulator's two 8-column blocks 2k and 2k + 1 rounded to T in pairs — so a
// wgmma's result feeds the next one without passing through shared memory (attention's P·V).
// B N-major (imm-trans-b = 1). The registers must not change until the wgmma has finished.
template <class T, int N>
__device__ __forceinline__ void ts_wgmma_rs(float *d, const unsigned *a, unsigned long long db, int scale_d)
{
  static_assert(N == 64 || N == 128, "the register-A wgmma is used 64 or 128 columns wide");
  if constexpr (N == 64 && ts_is_bf16<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{" TS_WG_REGS64 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : TS_WG_D32(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
  else if constexpr (N == 64)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 "
                 "{" TS_WG_REGS64 "}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : TS_WG_D32(0)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
  else if constexpr (ts_is_bf16<T>)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
                 "{" TS_WG_REGS128 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                 "{" TS_WG_REGS128 "}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : TS_WG_D32(0), TS_WG_D32(32)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d));
}

// Warp-specialized kernels hand registers from the producer warpgroup, which needs few, to the
// consumers, which hold the accumulators (sm_90a): every thread of a warpgroup executes one of
// these; the kernel starts with the launch's per-thread count (__launch_bounds__).
template <int N> __device__ __forceinline__ void ts_setmaxnreg_dec()
{
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N> __device__ __forceinline__ void ts_setmaxnreg_inc()
{
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Named barriers 1..15 (0 is __syncthreads'): bar.sync waits until THREADS threads (whole
// warps) have arrived on barrier ID in this phase, counting itself; bar.arrive counts this
// thread without waiting. Immediate ids let ptxas count the barriers a kernel uses (a register
// id reserves all 16). The ping-pong schedule orders its two consumer warpgroups' main loops
// with them.
template <int ID, int THREADS> __device__ __forceinline__ void ts_bar_sync_named()
{
  asm volatile("bar.sync %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}
template <int ID, int THREADS> __device__ __forceinline__ void ts_bar_arrive_named()
{
  asm volatile("bar.arrive %0, %1;\n" ::"n"(ID), "n"(THREADS) : "memory");
}

// This thread's warpgroup, as a value the compiler knows to be the same across each warp (a
// broadcast from lane 0): branches on it are warp-uniform, which wgmma code needs to stay
// unserialized.
__device__ __forceinline__ int ts_warpgroup()
{
  return __shfl_sync(0xffffffffu, (int)threadIdx.x / 128, 0);
}

// ---- tiles ----
// acc += As · Bs for one BK slice of one 128-byte row (64 16-bit elements, or 128 fp8; layouts
// above, but fp8's B: BN x 128 K-major, stored [N, K], laid out as A is), issued
// asynchronously: the slice's BK / 16 (fp8: BK / 32) x MI wgmmas form one group, and on return only that group may still be running — the
// previous slice's has finished, so its ring buffer may be refilled once every warpgroup has
// passed this point (the next iteration's barrier). acc holds MI blocks of BN / 2 floats. The
// warpgroups doing the math are WG0, WG0 + 1, ... (WG0 = 1 behind a producer warpgroup); the
// rows a warpgroup owns repeat every WGS of them, so with WGS = 1 each owns the whole tile (the
// ping-pong schedule, where the two consumers work on different tiles).
template <class T, int BM, int BN, int BK, int WGS, int WG0 = 0>
__device__ __forceinline__ void ts_wgmma_tile(float *acc, const T *As, const T *Bs)
{
  constexpr int WM = BM / WGS, MI = WM / 64, ROW = BK * (int)sizeof(T);
  static_assert(ROW == 128, "a BK slice row must be one 128-byte swizzle row");
  static_assert(WM % 64 == 0 && BN % 64 == 0, "warpgroup tiles are m64 blocks, BN whole panels");
  static_assert(BM * ROW % 1024 == 0 && BK * BN * (int)sizeof(T) % 1024 == 0,
                "ring slices must keep every tile on a 1024-byte boundary");
  const unsigned a = ts_smem_addr(As) + (unsigned)(((int)threadIdx.x / 128 - WG0) % WGS * WM * ROW);
  const unsigned b = ts_smem_addr(Bs);
  ts_wgmma_fence_acc<MI * BN / 2>(acc);
  ts_wgmma_fence();
  // An instruction's K: 32 bytes of the row either way.
  constexpr bool FP8 = sizeof(T) == 1;
  constexpr int KS = FP8 ? 32 : 16;
#pragma unroll
  for (int kk = 0; kk < BK; kk += KS) {
    // B: 16 k-rows further down each panel; LBO = one 64 x 64 panel, SBO = 8 k-rows. fp8's
    // K-major B: 32 bytes along its rows, as A.
    const unsigned long long db = FP8 ? ts_wgmma_desc(b + kk, 16, 8 * ROW)
                                      : ts_wgmma_desc(b + kk * ROW, BK * ROW, 8 * ROW);
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
      // A: KS elements (32 bytes) along the swizzled row; SBO = 8 rows; LBO is unused by a
      // swizzled K-major layout (the ISA assumes 1), so 16 bytes encodes that 1.
      const unsigned long long da =
        ts_wgmma_desc(a + mi * 64 * ROW + kk * (int)sizeof(T), 16, 8 * ROW);
      if constexpr (FP8)
        ts_wgmma_ss8<T, BN>(acc + mi * (BN / 2), da, db, 1);
      else
        ts_wgmma_ss<T, BN>(acc + mi * (BN / 2), da, db, 1);
    }
  }
  ts_wgmma_commit();
  ts_wgmma_wait<1>();
  ts_wgmma_fence_acc<MI * BN / 2>(acc);
}

// acc *= s over a thread's NACC accumulators: fp8 inputs' per-tensor scales, applied once to
// a finished tile before it is rounded (after ts_wgmma_wait<0>).
template <int NACC> __device__ __forceinline__ void ts_acc_scale(float *acc, float s)
{
  ts_wgmma_fence_acc<NACC>(acc);
#pragma unroll
  for (int i = 0; i < NACC; i++)
    acc[i] *= s;
}

// The fragment layout of ts_wgmma_ss over the BM x BN tile at (row0, col0), walked once for the
// store and the epilogue: f(v, r, c) for each of the thread's pairs of accumulators v[0], v[1],
// which hold elements (r, c) and (r, c + 1). WG0 as in ts_wgmma_tile.
template <int BM, int BN, int WGS, int WG0, class P, class F>
__device__ __forceinline__ void ts_wgmma_acc_pairs(P *acc, long long row0, long long col0, F f)
{
  constexpr int WM = BM / WGS, MI = WM / 64;
  const int t = (int)threadIdx.x - 128 * WG0, lane = t % 32;
  const long long r0 = row0 + t / 128 % WGS * WM + t / 32 % 4 * 16 + lane / 4;
  const long long c0 = col0 + (lane % 4) * 2;
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int j = 0; j < BN / 8; j++)
#pragma unroll
      for (int h = 0; h < 2; h++)
        f(acc + mi * (BN / 2) + j * 4 + h * 2, r0 + mi * 64 + h * 8, c0 + j * 8);
}

// Replaces each of the thread's accumulators of the BM x BN tile at (row0, col0) (the fragment
// layout of ts_wgmma_ss) by f(value, row, column): a kernel file's GEMM epilogue, before either
// store. Called after ts_wgmma_wait<0>. WG0 as in ts_wgmma_tile.
template <int BM, int BN, int WGS, int WG0 = 0, class F>
__device__ __forceinline__ void ts_wgmma_acc_epilogue(float *acc, long long row0, long long col0, F f)
{
  ts_wgmma_fence_acc<BM / WGS / 64 * BN / 2>(acc);
  ts_wgmma_acc_pairs<BM, BN, WGS, WG0>(acc, row0, col0, [&](float *v, long long r, long long c) {
    v[0] = f(v[0], r, c);
    v[1] = f(v[1], r, c + 1);
  });
}

// Rounds the accumulators to T and stores them into the BM x BN tile of C at (row0, col0)
// (leading dimension ldc, extent rows x cols), in the fragment layout of ts_wgmma_ss. Called
// after ts_wgmma_wait<0>: the operand fence keeps the compiler from reading acc before it.
// WG0 as in ts_wgmma_tile.
template <class T, int BM, int BN, int WGS, int WG0 = 0>
__device__ __forceinline__ void ts_wgmma_store_acc(T *C, long long ldc, long long row0, long long col0,
                                                   long long rows, long long cols, float *acc)
{
  constexpr int WM = BM / WGS, MI = WM / 64;
  ts_wgmma_fence_acc<MI * BN / 2>(acc);
  // Checked here, after the last wgmma, because a trap on a divergent path before one makes
  // ptxas serialize every wgmma of the kernel (C7518).
  extern __shared__ unsigned char ts_smem[];
  if (ts_smem_addr(ts_smem) & 1023u)
    __trap();
  ts_wgmma_acc_pairs<BM, BN, WGS, WG0>(acc, row0, col0, [&](const float *v, long long r, long long c) {
    ts_store_pair<T>(C, ldc, r, c, rows, cols, v[0], v[1]);
  });
}

// ---- warp specialization: the ping-pong order ----
// schedule("pingpong") (op-gemm.c): consumer warpgroups 1 and 2 take turns on the tensor cores,
// one tile each, so one's epilogue runs while the other's main loop does. Consumer c's turn
// begins on named barrier 1 + c, which the other consumer arrives on once its own main loop
// has issued its last wgmma: bar.sync by the waiting warpgroup's 128 threads plus bar.arrive
// by the other's 128 complete a phase of 256. `valid` skips a turn with no predecessor (the
// CTA's first tile) or no successor (its last), so every arrival is matched by a wait.
__device__ __forceinline__ void ts_order_wait(int id, bool valid)
{
  if (valid && id == 1)
    ts_bar_sync_named<1, 256>();
  else if (valid)
    ts_bar_sync_named<2, 256>();
}
__device__ __forceinline__ void ts_order_signal(int id, bool valid)
{
  if (valid && id == 1)
    ts_bar_arrive_named<1, 256>();
  else if (valid)
    ts_bar_arrive_named<2, 256>();
}
