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

// ---- thread-block clusters (sm_90; cluster(m, n), op-gemm.c) ----
// This CTA's rank in its cluster.
__device__ __forceinline__ unsigned ts_cluster_rank()
{
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
// The shared::cluster address of this CTA's shared::cta address `addr` in CTA `rank`'s shared
// memory (the same offset there).
__device__ __forceinline__ unsigned ts_mapa(unsigned addr, unsigned rank)
{
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(addr), "r"(rank));
  return r;
}
// A plain arrival on an mbarrier of any CTA of the cluster, by its shared::cluster address.
__device__ __forceinline__ void ts_mbar_arrive_cluster(unsigned caddr)
{
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(caddr)
               : "memory");
}
// Every thread of every CTA of the cluster arrives, then waits for all (exited threads count):
// after it, barriers initialised before it may be used from any CTA; before a CTA exits, no
// other may still write its shared memory.
__device__ __forceinline__ void ts_cluster_sync()
{
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
// ts_tma_copy_2d into every CTA of `mask` (bit r: rank r): the box lands at the same offset dst
// of each, crediting its bytes to each one's mbarrier at offset bar.
__device__ __forceinline__ void ts_tma_copy_2d_multicast(unsigned dst, const TsTmaMap *map, int c0, int c1,
                                                         unsigned bar, unsigned short mask)
{
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
               "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
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
// barrier is left in the loop, so every slot of the ring can be in flight at once. With CTAS
// CTAs a cluster sharing an operand, a slot is written by every CTA's producer (its part of the
// shared operand, multicast), so its empty barrier completes on the releases of the consumers
// of every CTA (CONSUMERS x CTAS arrivals), and the caller's ts_cluster_sync publishes the
// barriers cluster-wide.
template <int STAGES, int CONSUMERS, int CTAS = 1>
__device__ __forceinline__ void ts_tma_init_ws(int *bars, const TsTmaMap *a, const TsTmaMap *b)
{
  if (threadIdx.x != 0)
    return;
#pragma unroll
  for (int i = 0; i < STAGES; i++) {
    ts_mbar_init_one(ts_smem_addr(bars + 2 * i), 1);
    ts_mbar_init_one(ts_smem_addr(bars + 2 * (STAGES + i)), CONSUMERS * CTAS);
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

// ---- the epilogue through shared memory and the TMA (epilogue("tma")) ----
// stmatrix: the warp stores four 8 x 8 matrices of 16-bit elements; register q of lane l holds
// row l / 4, columns 2 (l % 4) and + 1 of matrix q (the mma/wgmma accumulator layout), and lane
// l gives the shared address of row l % 8 of matrix l / 8 (16 bytes, 16-byte aligned).
__device__ __forceinline__ void ts_stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
// Stores the box at element coordinates (c0 along a row, c1 rows down) of the map's matrix from
// shared memory at src, in the map's swizzle; the part of the box past the matrix's edge is
// not written. Asynchronous: the issuing thread's bulk groups track it.
__device__ __forceinline__ void ts_tma_store_2d(const TsTmaMap *map, int c0, int c1, unsigned src)
{
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(map),
               "r"(c0), "r"(c1), "r"(src)
               : "memory");
}
__device__ __forceinline__ void ts_bulk_commit()
{
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until at most N of this thread's bulk groups still read their shared-memory source.
template <int N> __device__ __forceinline__ void ts_bulk_wait_read()
{
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
// Waits until at most N of this thread's bulk groups are unfinished (their writes done).
template <int N> __device__ __forceinline__ void ts_bulk_wait()
{
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// The 128 threads of math warpgroup W (0 or 1, after the producer) meet on named barrier 3 + W
// (ping-pong's turns use 1 and 2).
__device__ __forceinline__ void ts_wg_sync(int w)
{
  if (w == 0)
    ts_bar_sync_named<3, 128>();
  else
    ts_bar_sync_named<4, 128>();
}

// Rounds the accumulators to T and stores them through the warpgroup's staging tile and the
// TMA, instead of each thread writing its pairs to global memory (ts_wgmma_store_acc: 4-byte
// stores, half of each 32-byte sector a warp touches): (1) the thread that issued the previous
// tile's stores waits until they have read the staging tile; (2) every thread writes its
// fragments with stmatrix into it, laid out as ts_tile_offset<WM, BN, 2> (64-column panels of
// 128-byte rows, the 128-byte swizzle, conflict-free for the eight rows stmatrix writes at once);
// (3) fences them into the async proxy and meets the warpgroup; (4) its first thread issues one
// TMA store per panel (box 64 x WM; the map clips the matrix's edge) and commits them as a bulk
// group, which then runs while the warpgroup goes on to its next tile. Cs holds one WM x BN
// staging tile per math warpgroup (WM = BM / WGS rows, whose place in the tile is as in
// ts_wgmma_store_acc); ts_tma_store_drain waits for the last group before the kernel ends.
template <class T, int BM, int BN, int WGS, int WG0 = 0>
__device__ __forceinline__ void ts_wgmma_store_tma(T *Cs, const TsTmaMap *map, long long row0, long long col0,
                                                   float *acc)
{
  constexpr int WM = BM / WGS, MI = WM / 64;
  static_assert(BN % 64 == 0 && WM * 128 % 1024 == 0, "staging panels keep the 1024-byte pattern");
  ts_wgmma_fence_acc<MI * BN / 2>(acc);
  extern __shared__ unsigned char ts_smem[];
  if (ts_smem_addr(ts_smem) & 1023u)
    __trap();
  const int w = (int)threadIdx.x / 128 - WG0, t = (int)threadIdx.x % 128, lane = t % 32;
  T *stage = Cs + w * WM * BN;
  if (t == 0)
    ts_bulk_wait_read<0>();
  ts_wg_sync(w);
  // Matrix q of a stmatrix.x4: rows 8 (q % 2) of the warp's 16, columns 8 (j + q / 2).
  const int q = lane / 8, row = t / 32 * 16 + (q % 2) * 8 + lane % 8;
#pragma unroll
  for (int mi = 0; mi < MI; mi++)
#pragma unroll
    for (int j = 0; j < BN / 8; j += 2) {
      const float *v = acc + mi * (BN / 2) + j * 4;
      const int col = (j + q / 2) * 8;
      ts_stmatrix_x4(ts_smem_addr(stage + ts_tile_offset<WM, BN, 2>(mi * 64 + row, col)),
                     ts_pack2<T>(v[0], v[1]), ts_pack2<T>(v[2], v[3]), ts_pack2<T>(v[4], v[5]),
                     ts_pack2<T>(v[6], v[7]));
    }
  ts_async_proxy_fence();
  ts_wg_sync(w);
  if (t == 0) {
#pragma unroll
    for (int p = 0; p < BN / 64; p++)
      ts_tma_store_2d(map, (int)(col0 + p * 64), (int)(row0 + w % WGS * WM),
                      ts_smem_addr(stage + p * WM * 64));
    ts_bulk_commit();
  }
}

// The stores' issuing thread waits for its last bulk group before the kernel ends.
__device__ __forceinline__ void ts_tma_store_drain()
{
  if (threadIdx.x % 128 == 0)
    ts_bulk_wait<0>();
}

// ---- tiles of a cluster ----
// One arrival per warpgroup on the barrier at the same offset in each of the cluster's CTAS
// CTAs, when `valid`: a consumer hands a slot back to every producer that writes it.
template <int CTAS> __device__ __forceinline__ void ts_mbar_arrive_wg_cluster(int *bar, bool valid)
{
  if (threadIdx.x % 128 != 0 || !valid)
    return;
#pragma unroll
  for (int r = 0; r < CTAS; r++)
    ts_mbar_arrive_cluster(ts_mapa(ts_smem_addr(bar), (unsigned)r));
}

// Thread 0 loads this CTA's part of a ROWS x COLS tile shared by the cluster's PARTS CTAs and
// multicasts it to all of them: part r = this CTA's rank, rows [r ROWS / PARTS, (r + 1) ROWS /
// PARTS) of every 64-column panel (the map's box is {64, ROWS / PARTS}), each landing where
// ts_tma_load_tile would put it and crediting its bytes to every CTA's `bar`. Together the
// PARTS CTAs deliver the whole tile to each.
template <class T, int ROWS, int COLS, int PARTS>
__device__ __forceinline__ void ts_tma_load_tile_mc(T *smem, const TsTmaMap *map, long long row0,
                                                    long long col0, int *bar, bool valid)
{
  constexpr int BOX = 128 / (int)sizeof(T), PART = ROWS / PARTS;
  static_assert(COLS % BOX == 0 && ROWS % PARTS == 0 && PART % 8 == 0,
                "a part is whole 8-row swizzle groups of whole 128-byte panels");
  if (threadIdx.x != 0 || !valid)
    return;
  const int r = (int)ts_cluster_rank();
#pragma unroll
  for (int p = 0; p < COLS / BOX; p++)
    ts_tma_copy_2d_multicast(ts_smem_addr(smem + p * ROWS * BOX + r * PART * BOX), map,
                             (int)(col0 + p * BOX), (int)(row0 + r * PART), ts_smem_addr(bar),
                             (unsigned short)((1u << PARTS) - 1));
}
