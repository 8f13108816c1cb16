// ts_cuda_tma.cuh — tiles loaded by the Tensor Memory Accelerator (sm_90): one thread issues a
// cp.async.bulk.tensor per box, the TMA engine writes the box into shared memory in the
// requested swizzle, and an mbarrier counts the bytes that have landed, so the other threads
// spend no instructions or registers on addresses and wait on the barrier instead.
//
// Each global matrix is read through a tensor map (cuda.h's CUtensorMap: 128 opaque bytes,
// 128-byte aligned since CUDA 13) that the host encodes from the kernel's <entry>_tma record
// (ts-cuda-tma.h) and passes as the kernel's second parameter, `const __grid_constant__
// TsTmaMaps`: a map must live in the param, const or global space, and a __grid_constant__
// parameter is addressable there without a copy.
//
// Protocol of one ring slot (the generated loop, op-gemm.c): thread 0 posts the bytes it
// expects on the slot's mbarrier (arrive.expect_tx: its one arrival, the phase's count), then
// issues the copies, each of which credits its box's bytes when it lands; the phase completes
// when both are in, and every thread waits for that phase's parity before reading the slot.
// TMA writes and wgmma reads are both in the async proxy, so no proxy fence is needed between
// them (cp.async's data need one: ts_async_proxy_fence).
#pragma once

struct alignas(128) TsTmaMap {
  unsigned long long opaque[16];
};
struct TsTmaMaps {
  TsTmaMap map[4];
};

// ---- instructions (shared-memory operands are addresses from ts_smem_addr) ----
__device__ __forceinline__ void ts_mbar_init_one(unsigned bar, unsigned count)
{
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialised barriers visible to the async proxy (the TMA) and to the other threads
// (after the caller's __syncthreads).
__device__ __forceinline__ void ts_mbar_fence_init()
{
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ void ts_tma_prefetch_map(const TsTmaMap *map)
{
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}
// This thread's arrival on the barrier's current phase, which also raises the bytes the phase
// waits for by `bytes`.
__device__ __forceinline__ void ts_mbar_arrive_tx(unsigned bar, unsigned bytes)
{
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
               : "memory");
}
// This thread's arrival on the barrier's current phase, announcing no bytes.
__device__ __forceinline__ void ts_mbar_arrive(unsigned bar)
{
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// True once the phase of the given parity has completed (a bounded wait in hardware: callers
// loop).
__device__ __forceinline__ bool ts_mbar_try_wait(unsigned bar, unsigned parity)
{
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               "selp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
  return done != 0;
}
// Copies the box at element coordinates (c0 along a row, c1 rows down) of the map's matrix to
// shared memory at dst, in the map's swizzle; boxes past the matrix's edge are zero-filled and
// still credit their whole size to the barrier.
__device__ __forceinline__ void ts_tma_copy_2d(unsigned dst, const TsTmaMap *map, int c0, int c1, unsigned bar)
{
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
               "l"(map), "r"(c0), "r"(c1), "r"(bar)
               : "memory");
}

// ---- tiles ----
// The Tile IR has no 64-bit integer type, so a ring's mbarriers are allocated as pairs of
// int32: barrier i is bars + 2 * i (8-byte aligned: shared allocations start on 128 bytes).

// Thread 0 initialises N barriers, each completing a phase on one arrival (the expect_tx of
// the thread that issues the copies) plus the bytes it announced, and prefetches the maps'
// descriptors; the caller's __syncthreads then publishes the barriers to every thread.
template <int N>
__device__ __forceinline__ void ts_tma_init(int *bars, const TsTmaMap *a, const TsTmaMap *b)
{
  if (threadIdx.x != 0)
    return;
#pragma unroll
  for (int i = 0; i < N; i++)
    ts_mbar_init_one(ts_smem_addr(bars + 2 * i), 1);
  ts_mbar_fence_init();
  ts_tma_prefetch_map(a);
  ts_tma_prefetch_map(b);
}

// The warp-specialized ring (schedule("coop"), op-gemm.c): a producer warpgroup (its thread 0)
// loads the slices and CONSUMERS warpgroups multiply them. Slot s has two barriers: full[s] =
// bars + 2 s, whose phase completes when the slice's bytes have landed (one arrival, the
// producer's expect_tx), and empty[s] = bars + 2 (STAGES + s), whose phase completes when every
// consumer warpgroup has finished the wgmmas that read the slot (one arrival each). No CTA-wide
// barrier is left in the loop, so every slot of the ring can be in flight at once.
template <int STAGES, int CONSUMERS>
__device__ __forceinline__ void ts_tma_init_ws(int *bars, const TsTmaMap *a, const TsTmaMap *b)
{
  if (threadIdx.x != 0)
    return;
#pragma unroll
  for (int i = 0; i < STAGES; i++) {
    ts_mbar_init_one(ts_smem_addr(bars + 2 * i), 1);
    ts_mbar_init_one(ts_smem_addr(bars + 2 * (STAGES + i)), CONSUMERS);
  }
  ts_mbar_fence_init();
  ts_tma_prefetch_map(a);
  ts_tma_prefetch_map(b);
}

// One arrival per warpgroup (from its first thread) on the barrier, when `valid`: called by a
// consumer warpgroup once the wgmmas that read a slot have finished (ts_wgmma_wait), so the
// producer may refill it.
__device__ __forceinline__ void ts_mbar_arrive_wg(int *bar, bool valid)
{
  if (threadIdx.x % 128 == 0 && valid)
    ts_mbar_arrive(ts_smem_addr(bar));
}

// Thread 0 announces BYTES for the barrier's current phase and arrives on it, when `valid`
// (a slot past the last slice gets neither copies nor an arrival: nobody waits on it).
template <int BYTES> __device__ __forceinline__ void ts_tma_expect(int *bar, bool valid)
{
  static_assert(BYTES > 0 && BYTES < (1 << 20), "an mbarrier counts fewer than 2^20 bytes");
  if (threadIdx.x == 0 && valid)
    ts_mbar_arrive_tx(ts_smem_addr(bar), BYTES);
}

// Thread 0 copies the ROWS x COLS tile at (row0, col0) of the map's matrix into shared memory
// laid out as ts_tile_offset<ROWS, COLS, 2> (ts_cuda_gemm.cuh): COLS / 64 boxes of ROWS x 64
// 16-bit elements, one 128-byte swizzled panel each, panel after panel. The map's box must be
// {64, ROWS} with the 128-byte swizzle, and the tile on a 1024-byte boundary (where the
// swizzle pattern starts, as wgmma's descriptors assume). Its bytes go to `bar`.
template <class T, int ROWS, int COLS>
__device__ __forceinline__ void ts_tma_load_tile(T *smem, const TsTmaMap *map, long long row0,
                                                 long long col0, int *bar, bool valid)
{
  constexpr int BOX = 128 / (int)sizeof(T);
  static_assert(COLS % BOX == 0, "a TMA tile is whole 128-byte panels");
  if (threadIdx.x != 0 || !valid)
    return;
#pragma unroll
  for (int p = 0; p < COLS / BOX; p++)
    ts_tma_copy_2d(ts_smem_addr(smem + p * ROWS * BOX), map, (int)(col0 + p * BOX), (int)row0,
                   ts_smem_addr(bar));
}

// Every thread waits for the completion of phase `phase` (its parity) of the barrier.
__device__ __forceinline__ void ts_mbar_wait(int *bar, long long phase)
{
  const unsigned addr = ts_smem_addr(bar), parity = (unsigned)(phase & 1);
  while (!ts_mbar_try_wait(addr, parity)) {
  }
}
