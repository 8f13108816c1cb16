// emu_core.h — a host emulation of the CUDA execution model for the generated kernels, force-
// included (-include) before the kernel source. One fiber (EmuFiber) per CUDA thread, run in
// turn by a scheduler; warp-wide instructions (ldmatrix, mma.m16n8k16, shfl) are computed once
// all 32 lanes have arrived; __syncthreads is a CTA barrier (exited threads count as arrived);
// cp.async is queued per thread and applied at cp.async.wait_group (EMU_EAGER=0) or at issue
// (1), and every ldmatrix read of a byte whose copy is still queued is reported as a race.
// Fragment layouts follow the PTX ISA text for mma.m16n8k16 and ldmatrix, written independently
// of the headers under test. wgmma.mma_async (sm_90a) is warpgroup-wide: issued once all 128
// threads arrived, queued, and computed as late as wgmma.wait_group allows, from shared memory
// located by decoding the matrix descriptors (swizzle mode, LBO, SBO) per the ISA text; shared
// memory it still has to read must not be overwritten, and cp.async data must have been fenced
// into the async proxy (fence.proxy.async) before it reads them. Named barriers (bar.sync,
// bar.arrive) count threads per id; a wait no arrival can complete, or an arrival left over at
// the CTA's end, is an error. stmatrix writes the fragment layout as generic-proxy writes that
// need a fence.proxy.async before a TMA store (cp.async.bulk.tensor shared -> global) reads them;
// a store reads and writes when its thread's bulk wait_group allows, and a stmatrix, cp.async
// or TMA copy into bytes a pending store reads is a race. fp8 wgmma (k32, e4m3/e5m2) reads both operands K-major from
// shared memory: a transposed operand is an error. EMU_PLANT selects a deliberate bug
// (self-test: must fail).
#pragma once
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <unistd.h>
#include <ucontext.h>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__
#define __grid_constant__
#define __cluster_dims__(...) // the driver gets the size as EMU_CLUSTER (run-emu.sh)

struct Dim3 { unsigned x, y, z; };
struct alignas(8) uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };

// A fiber. On x86-64 a switch saves the callee-saved registers on the fiber's stack and swaps
// stack pointers (emu_switch, in emu_driver.cpp): glibc's swapcontext also saves and restores
// the signal mask, a system call per switch (the suite: 178 -> 170 s, system time 54 -> 41 s,
// on two Zen 1 cores). Elsewhere, ucontext.
struct EmuFiber {
#if defined(__x86_64__)
  void *sp;
#else
  ucontext_t ctx;
#endif
};
#if defined(__x86_64__)
extern "C" void emu_switch(void **save_sp, void *load_sp);
static inline void emu_fiber_switch(EmuFiber *from, EmuFiber *to) { emu_switch(&from->sp, to->sp); }
#else
static inline void emu_fiber_switch(EmuFiber *from, EmuFiber *to) { swapcontext(&from->ctx, &to->ctx); }
#endif

struct EmuCopy { unsigned dst; const void *src; int bytes; bool valid; };
struct EmuCta;
struct EmuThread {
  EmuFiber fiber;
  EmuCta *cta;
  std::vector<char> stack;
  unsigned tid;
  bool done;
  std::vector<std::vector<EmuCopy>> groups; // committed cp.async groups, oldest first
  std::vector<EmuCopy> open;                // issued, not yet committed
  std::vector<EmuCopy> landed;              // applied since this thread's last fence.proxy.async
                                            // (cp.async data, stmatrix rows)
  std::vector<std::vector<struct EmuTmaStore>> bulk; // committed TMA-store groups, oldest first
  std::vector<struct EmuTmaStore> bulk_open;          // issued, not yet committed
  int wait_kind = -1;           // EmuWaitKind while suspended in a refused wait, else -1
  const char *wait_what = nullptr;
};
// The element types wgmma multiplies: 16-bit (k16 an instruction) and fp8 (k32).
enum EmuType { EMU_BF16, EMU_F16, EMU_E4M3, EMU_E5M2 };
static inline unsigned emu_type_bytes(int type) { return type >= EMU_E4M3 ? 1 : 2; }
static inline int emu_type_k(int type) { return type >= EMU_E4M3 ? 32 : 16; }

// One wgmma.mma_async of a warpgroup: D (m64 x n, in the 128 threads' registers) = A · B + D.
struct EmuWgmma {
  int n;
  uint64_t da, db;
  int type; // EmuType
  bool trans_a, trans_b, scale_d;
  float *d[128];
  bool a_regs;                 // A from registers (the RS form): no da
  const unsigned *a_at[128];   // each thread's four A registers ...
  unsigned a_issued[128][4];   // ... and what they held when the wgmma was issued
  std::vector<float> d_seen;   // D as issued (or as the wgmma before it on D left it), [t][i]
};
struct EmuGroup { // a warpgroup: its collectives and its queue of unfinished wgmmas
  int arrived = 0;
  unsigned gen = 0;
  int kind = -1;
  uint64_t in_a[128], in_b[128];
  float *in_d[128];
  const unsigned *in_ra[128];
  int in_i[128];
  bool fenced = false;                      // a wgmma.fence has been executed
  int regs = 0;                             // registers a thread after setmaxnreg (0: the launch's)
  std::vector<EmuWgmma> open;               // issued, not yet committed
  std::vector<std::vector<EmuWgmma>> groups; // committed, unfinished, oldest first
};
struct EmuWarp {
  int arrived = 0;
  unsigned gen = 0;
  int kind = -1;
  unsigned in_u[32][8];
  float in_f[32][8];
  unsigned out_u[32][8];
  float out_f[32][8];
};
// A TMA tensor map as the emulator encodes it (emu_tma_encode, from ts-cuda-tma.h's plan) into
// the 128 opaque bytes the kernel passes around, and reads back at each copy.
struct EmuTmaMap {
  uint64_t magic;
  const unsigned char *base;
  unsigned elem, swizzle;
  uint64_t dim[2], stride;
  uint32_t box[2];
};
static const uint64_t EMU_TMA_MAGIC = 0x746d61206d617073ull;
// One cp.async.bulk.tensor in flight: applied (and its bytes credited to its barrier) as late
// as a waiter allows, or at issue with EMU_EAGER=1.
struct EmuTma {
  unsigned dst;
  EmuTmaMap map;
  int c0, c1;
  unsigned bar;
};
// One cp.async.bulk.tensor store (shared -> global) in flight: it reads its box from shared
// memory, and writes the matrix, when the issuing thread's bulk wait lets it (or at issue with
// EMU_EAGER=1).
struct EmuTmaStore {
  unsigned src;
  EmuTmaMap map;
  int c0, c1;
};
// An mbarrier (PTX ISA "Parallel Synchronization and Communication Instructions: mbarrier"): the
// current phase completes when its pending arrivals reach zero and its transaction count (bytes
// announced by expect_tx, less bytes the copies have delivered) is zero; the next phase then
// starts with the initial count.
struct EmuBar {
  unsigned count = 0, pending = 0, phase = 0;
  long long tx = 0;
  std::vector<EmuTma> inflight;
};
// A named barrier (bar.sync / bar.arrive with an id): a phase completes when `count` threads
// have arrived, counting the waiting ones; every participant of a phase must give the same count.
struct EmuNamedBar {
  int arrived = 0, count = 0;
  unsigned gen = 0;
};
// One CTA: its threads, shared memory and what is tracked per byte of it, its barriers. The CTAs
// of a cluster run together, their threads interleaved by one scheduler.
struct EmuCta {
  std::vector<EmuThread> th;
  std::vector<EmuWarp> warps;
  int cta_arrived = 0, n_done = 0;
  unsigned cta_gen = 0;
  Dim3 bidx;
  unsigned rank = 0;        // in its cluster (%cluster_ctarank)
  unsigned char *smem = nullptr; // the kernel's ts_smem while one of its threads runs
  std::vector<int> pending; // per smem byte: copies issued and not yet applied
  std::vector<int> unfenced; // per smem byte: copies applied, not yet fenced into the async proxy
  std::vector<int> wg_reads; // per smem byte: reads of wgmmas not yet finished
  std::vector<int> store_reads; // per smem byte: reads of TMA stores not yet done
  std::vector<EmuGroup> wgs;
  std::vector<std::pair<unsigned, EmuBar>> bars; // by shared-memory address
  EmuNamedBar named[16];                         // bar.sync / bar.arrive ids
};
struct Emu {
  EmuFiber sched;
  EmuThread *cur = nullptr;
  EmuCta *cta = nullptr;     // the running thread's CTA
  std::vector<EmuCta> ctas;  // the cluster's, rank order
  Dim3 block, grid;
  unsigned cluster = 1;      // CTAs a cluster, along x
  int cluster_arrived = 0;   // barrier.cluster arrivals of the current phase
  unsigned cluster_gen = 0;
  size_t smem_bytes = 0;
  int eager = 0;
  int plant = 0; // 1: ldmatrix without .trans transposes; 2: cp.async.wait_group waits for nothing;
                 // 3: wgmma ignores imm-trans-b; 4: wgmma ignores the descriptor's swizzle mode;
                 // 5: the TMA ignores the map's swizzle; 6: an mbarrier wait waits for nothing;
                 // 7: a plain mbarrier arrive completes the phase (ignores the other arrivals);
                 // 8: bar.arrive on a named barrier is lost (not counted);
                 // 9: cp.async.bulk.wait_group.read waits for nothing;
                 // 10: a multicast TMA copy lands in the issuing CTA only;
                 // 11: a register-A wgmma swaps A registers 1 and 2 (rows g + 8 and columns
                 //     + 8 of the fragment); 12: setmaxnreg.dec releases nothing;
                 // 13: wgmma.wait_group N leaves N + 1 groups unfinished;
                 // 14: an fp8 wgmma is issued with imm-trans-b (emu_subst.cuh)
  long errors = 0;
  long round = 0;              // scheduler rounds (every live thread run once until it yields)
  long stalled_rounds = 0;     // rounds with a refused wait since a barrier phase last completed
  long last_refused_round = -1;
};

extern Emu emu;

// A barrier phase completed: the waits refused until now were not a deadlock.
static inline void emu_progress()
{
  emu.stalled_rounds = 0;
}

static inline Dim3 emu_tidx() { return Dim3{emu.cur->tid, 0, 0}; }
#define threadIdx (emu_tidx())
#define blockIdx (emu.cta->bidx)
// The kernels' extern __shared__ ts_smem[] is the running CTA's (their declarations are removed
// by prep.py and run-emu.sh).
#define ts_smem (emu.cta->smem)
#define gridDim (emu.grid)
#define blockDim (emu.block)

static inline void emu_yield() { emu_fiber_switch(&emu.cur->fiber, &emu.sched); }
static inline void __trap() { fprintf(stderr, "emu: __trap\n"); abort(); }
static inline void emu_fail(const char *what)
{
  if (emu.errors++ < 5)
    fprintf(stderr, "emu: %s (CTA %u,%u,%u thread %u)\n", what, emu.cta ? emu.cta->bidx.x : 0u,
            emu.cta ? emu.cta->bidx.y : 0u, emu.cta ? emu.cta->bidx.z : 0u,
            emu.cur ? emu.cur->tid : 0u);
}

// A wait (mbarrier, named or cluster barrier, register increase) answered "not yet": yield to
// the other threads. Thousands of scheduler rounds with refused waits and no phase completing
// mean that every live thread waits for a phase no one will complete, which hangs a GPU (no
// watchdog on datacenter parts): fail with `deadlock` instead of spinning forever. The kernels
// of run-emu.sh go at most 42 such rounds between phases. Counting rounds, not refusals: a wait
// only one thread refuses (the warpgroup's register increase) would take ~10^9 thread switches
// to reach a count of refusals.
#define EMU_DEADLOCK_ROUNDS 10000
// What a thread waits for, in the order a deadlock report names them, likeliest cause first: a
// warpgroup stuck on its register increase never reaches the arrivals that the others then wait
// for; a cluster barrier is mostly the teardown's, where CTAs wait for a peer stuck elsewhere.
enum EmuWaitKind { EMU_WAIT_REGS, EMU_WAIT_NAMED, EMU_WAIT_MBAR, EMU_WAIT_CLUSTER, EMU_WAIT_KINDS };
// Each kind of wait the cluster's threads are stuck in, once, with the first thread stuck in it.
static inline void emu_report_deadlock()
{
  bool named[EMU_WAIT_KINDS] = {};
  for (int k = 0; k < EMU_WAIT_KINDS; k++)
    for (auto &c : emu.ctas)
      for (auto &th : c.th)
        if (!th.done && th.wait_kind == k && !named[k]) {
          named[k] = true;
          emu.cta = &c;
          emu.cur = &th;
          emu_fail(th.wait_what);
        }
}
static inline void emu_refused_wait(EmuWaitKind kind, const char *deadlock)
{
  if (emu.last_refused_round != emu.round) {
    emu.last_refused_round = emu.round;
    emu.stalled_rounds++;
  }
  emu.cur->wait_kind = kind;
  emu.cur->wait_what = deadlock;
  if (emu.stalled_rounds > EMU_DEADLOCK_ROUNDS) {
    emu_report_deadlock();
    fflush(stdout);
    fflush(stderr);
    _exit(1); // on a fiber's stack: no atexit handlers or destructors
  }
  emu_yield();
  emu.cur->wait_kind = -1;
}

// A warp collective: the 32nd lane to arrive runs op over all lanes' inputs.
static inline void emu_warp_collective(int kind, const std::function<void(EmuWarp &)> &op)
{
  EmuWarp &w = emu.cta->warps[emu.cur->tid / 32];
  if (w.arrived == 0)
    w.kind = kind;
  else if (w.kind != kind) {
    fprintf(stderr, "emu: divergent collectives in warp %u: %d vs %d\n", emu.cur->tid / 32, w.kind, kind);
    abort();
  }
  unsigned g = w.gen;
  if (++w.arrived == 32) {
    op(w);
    w.arrived = 0;
    w.gen++;
  } else {
    while (w.gen == g)
      emu_yield();
  }
}

static inline void __syncthreads()
{
  unsigned g = emu.cta->cta_gen;
  if (++emu.cta->cta_arrived + emu.cta->n_done == (int)emu.block.x) {
    emu.cta->cta_arrived = 0;
    emu.cta->cta_gen++;
  } else {
    while (emu.cta->cta_gen == g)
      emu_yield();
  }
}

// shfl.sync.idx: every lane gets lane `src`'s value.
static inline int __shfl_sync(unsigned mask, int v, int src)
{
  if (mask != 0xffffffffu)
    emu_fail("shfl with a partial mask is not emulated");
  unsigned lane = emu.cur->tid % 32;
  EmuWarp &w = emu.cta->warps[emu.cur->tid / 32];
  w.in_u[lane][0] = (unsigned)v;
  emu_warp_collective(2000 + (src & 31), [&](EmuWarp &ww) {
    for (int l = 0; l < 32; l++)
      ww.out_u[l][0] = ww.in_u[src & 31][0];
  });
  return (int)w.out_u[lane][0];
}

static inline float __int_as_float(int v) { float f; memcpy(&f, &v, 4); return f; }
static inline float __uint_as_float(unsigned v) { float f; memcpy(&f, &v, 4); return f; }
static inline unsigned emu_f2u(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
static inline float emu_expf(float x) { return expf(x); }
#define __expf emu_expf // glibc declares an __expf it does not export
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }

static inline float __shfl_xor_sync(unsigned mask, float v, int m)
{
  if (mask != 0xffffffffu)
    emu_fail("shfl with a partial mask is not emulated");
  unsigned lane = emu.cur->tid % 32;
  EmuWarp &w = emu.cta->warps[emu.cur->tid / 32];
  w.in_f[lane][0] = v;
  emu_warp_collective(1000 + m, [&](EmuWarp &ww) {
    for (int l = 0; l < 32; l++)
      ww.out_f[l][0] = ww.in_f[l ^ m][0];
  });
  return w.out_f[lane][0];
}

// ---- conversions (round to nearest even, as cvt.rn) ----
static inline unsigned short emu_f32_to_bf16(float f)
{
  unsigned u = emu_f2u(f);
  if (std::isnan(f))
    return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
static inline unsigned short emu_f32_to_f16(float f)
{
  _Float16 h = (_Float16)f;
  unsigned short u;
  memcpy(&u, &h, 2);
  return u;
}
static inline float emu_f16_to_f32(unsigned short u)
{
  _Float16 h;
  memcpy(&h, &u, 2);
  return (float)h;
}
// The OCP fp8 formats from their definitions: e4m3 (bias 7, S.1111.111 its only NaN, no Inf)
// and e5m2 (bias 15, exponent 31 Inf or NaN); subnormals at exponent 1 - bias.
static inline float emu_fp8_to_f32(unsigned char b, bool e5m2)
{
  const int eb = e5m2 ? 5 : 4, mb = 7 - eb, bias = (1 << (eb - 1)) - 1;
  const int e = (b & 0x7f) >> mb, m = b & ((1 << mb) - 1);
  float v;
  if (!e5m2 && (b & 0x7f) == 0x7f)
    v = NAN;
  else if (e5m2 && e == 31)
    v = m ? NAN : INFINITY;
  else if (e == 0)
    v = ldexpf((float)m, 1 - bias - mb);
  else
    v = ldexpf((float)(m + (1 << mb)), e - bias - mb);
  return (b & 0x80) ? -v : v;
}

static inline float emu_elem_to_f32(int type, unsigned v)
{
  switch (type) {
  case EMU_BF16: return __uint_as_float(v << 16);
  case EMU_F16: return emu_f16_to_f32((unsigned short)v);
  default: return emu_fp8_to_f32((unsigned char)v, type == EMU_E5M2);
  }
}

static inline float emu_half(unsigned v, int hi, bool f16)
{
  unsigned short h = (unsigned short)(hi ? v >> 16 : v & 0xffff);
  return f16 ? emu_f16_to_f32(h) : __uint_as_float((unsigned)h << 16);
}

// ---- shared memory: addresses are byte offsets into the CTA's dynamic shared memory ----
static inline unsigned emu_smem_offset(const void *p)
{
  const unsigned char *c = (const unsigned char *)p;
  if (!(c >= emu.cta->smem && c <= emu.cta->smem + emu.smem_bytes)) {
    fprintf(stderr, "emu: shared-memory pointer outside the launch's %zu bytes\n", emu.smem_bytes);
    abort();
  }
  return (unsigned)(c - emu.cta->smem);
}

// ---- cp.async ----
static inline void emu_apply(const EmuCopy &c)
{
  if (c.valid)
    memcpy(emu.cta->smem + c.dst, c.src, c.bytes);
  else
    memset(emu.cta->smem + c.dst, 0, c.bytes);
  for (int i = 0; i < c.bytes; i++) {
    emu.cta->pending[c.dst + i]--;
    emu.cta->unfenced[c.dst + i]++;
  }
  if (emu.cur)
    emu.cur->landed.push_back(c);
}
static inline void emu_cp_async(unsigned dst, const void *src, int bytes, bool valid)
{
  if (dst % bytes || dst + bytes > emu.smem_bytes || ((uintptr_t)src % bytes))
    emu_fail("cp.async misaligned or outside shared memory");
  else {
    for (int i = 0; i < bytes; i++)
      if (emu.cta->wg_reads[dst + i] || emu.cta->store_reads[dst + i]) {
        emu_fail(emu.cta->wg_reads[dst + i]
                     ? "cp.async into shared memory that an unfinished wgmma reads"
                     : "cp.async into shared memory that a TMA store still reads");
        break;
      }
    EmuCopy c{dst, src, bytes, valid};
    for (int i = 0; i < bytes; i++)
      emu.cta->pending[dst + i]++;
    if (emu.eager)
      emu_apply(c);
    else
      emu.cur->open.push_back(c);
  }
}
static inline void emu_async_commit()
{
  emu.cur->groups.push_back(emu.cur->open);
  emu.cur->open.clear();
}
static inline void emu_async_wait(int n)
{
  if (emu.plant == 2)
    return;
  auto &g = emu.cur->groups;
  while ((int)g.size() > n) {
    for (auto &c : g.front())
      emu_apply(c);
    g.erase(g.begin());
  }
}
static inline void emu_check_read(unsigned addr, int bytes)
{
  if (addr + bytes > emu.smem_bytes) {
    emu_fail("ldmatrix outside shared memory");
    return;
  }
  for (int i = 0; i < bytes; i++)
    if (emu.cta->pending[addr + i]) {
      emu_fail("ldmatrix read a shared-memory byte whose cp.async was not waited for");
      return;
    }
}

// ---- ldmatrix .m8n8 .x2/.x4 (.trans): lanes 8q..8q+7 give the row addresses of matrix q;
// lane t receives row t/4, elements 2(t%4), 2(t%4)+1 (low half first); .trans delivers the
// transposed matrix's. ----
static inline void emu_ldmatrix(unsigned *r, int nmat, unsigned addr, bool trans)
{
  unsigned lane = emu.cur->tid % 32;
  EmuWarp &w = emu.cta->warps[emu.cur->tid / 32];
  w.in_u[lane][0] = addr;
  if (emu.plant == 1 && nmat == 4)
    trans = !trans;
  emu_warp_collective(nmat * 10 + trans, [&](EmuWarp &ww) {
    for (int q = 0; q < nmat; q++) {
      unsigned short m[8][8];
      for (int row = 0; row < 8; row++) {
        unsigned a = ww.in_u[q * 8 + row][0];
        if (a % 16)
          emu_fail("ldmatrix row address not 16-byte aligned");
        emu_check_read(a, 16);
        if (a + 16 <= emu.smem_bytes)
          memcpy(m[row], emu.cta->smem + a, 16);
      }
      for (int t = 0; t < 32; t++) {
        unsigned short lo, hi;
        if (!trans) {
          lo = m[t / 4][2 * (t % 4)];
          hi = m[t / 4][2 * (t % 4) + 1];
        } else {
          lo = m[2 * (t % 4)][t / 4];
          hi = m[2 * (t % 4) + 1][t / 4];
        }
        ww.out_u[t][q] = (unsigned)lo | ((unsigned)hi << 16);
      }
    }
  });
  for (int q = 0; q < nmat; q++)
    r[q] = w.out_u[lane][q];
}

// ---- mma.sync.m16n8k16.row.col.f32.{bf16,f16}: g = lane/4, t = lane%4;
// A regs {A[g][2t..]}, {A[g+8][2t..]}, {A[g][2t+8..]}, {A[g+8][2t+8..]};
// B regs {B[2t][g], B[2t+1][g]}, {B[2t+8][g], B[2t+9][g]};
// C/D C[g][2t], C[g][2t+1], C[g+8][2t], C[g+8][2t+1]. ----
static inline void emu_mma_16816(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2], bool f16)
{
  unsigned lane = emu.cur->tid % 32;
  EmuWarp &w = emu.cta->warps[emu.cur->tid / 32];
  for (int i = 0; i < 4; i++) {
    w.in_u[lane][i] = a[i];
    w.in_f[lane][i] = d[i];
  }
  w.in_u[lane][4] = b[0];
  w.in_u[lane][5] = b[1];
  emu_warp_collective(3, [&](EmuWarp &ww) {
    float A[16][16], B[16][8], C[16][8];
    for (int l = 0; l < 32; l++) {
      int g = l / 4, t = l % 4;
      for (int h = 0; h < 2; h++) {
        A[g][2 * t + h] = emu_half(ww.in_u[l][0], h, f16);
        A[g + 8][2 * t + h] = emu_half(ww.in_u[l][1], h, f16);
        A[g][2 * t + 8 + h] = emu_half(ww.in_u[l][2], h, f16);
        A[g + 8][2 * t + 8 + h] = emu_half(ww.in_u[l][3], h, f16);
        B[2 * t + h][g] = emu_half(ww.in_u[l][4], h, f16);
        B[2 * t + 8 + h][g] = emu_half(ww.in_u[l][5], h, f16);
      }
      C[g][2 * t] = ww.in_f[l][0];
      C[g][2 * t + 1] = ww.in_f[l][1];
      C[g + 8][2 * t] = ww.in_f[l][2];
      C[g + 8][2 * t + 1] = ww.in_f[l][3];
    }
    for (int l = 0; l < 32; l++) {
      int g = l / 4, t = l % 4;
      for (int e = 0; e < 4; e++) {
        int i = g + (e / 2) * 8, j = 2 * t + e % 2;
        double acc = C[i][j];
        for (int k = 0; k < 16; k++)
          acc += (double)A[i][k] * B[k][j];
        ww.out_f[l][e] = (float)acc;
      }
    }
  });
  for (int i = 0; i < 4; i++)
    d[i] = w.out_f[lane][i];
}

// ---- wgmma (sm_90a), warpgroup-wide ----
// A warpgroup collective: the 128th thread to arrive runs op.
static inline void emu_wg_collective(int kind, const std::function<void(EmuGroup &)> &op)
{
  if (emu.cta->wgs.empty() || emu.cur->tid / 128 >= emu.cta->wgs.size()) {
    fprintf(stderr, "emu: wgmma instruction in a block that is not whole warpgroups\n");
    abort();
  }
  EmuGroup &g = emu.cta->wgs[emu.cur->tid / 128];
  if (g.arrived == 0)
    g.kind = kind;
  else if (g.kind != kind) {
    fprintf(stderr, "emu: divergent wgmma instructions in warpgroup %u: %d vs %d\n",
            emu.cur->tid / 128, g.kind, kind);
    abort();
  }
  unsigned gen = g.gen;
  if (++g.arrived == 128) {
    op(g);
    g.arrived = 0;
    g.gen++;
  } else {
    while (g.gen == gen)
      emu_yield();
  }
}

// fence.proxy.async: this thread's landed cp.async data become visible to the async proxy.
static inline void emu_proxy_fence()
{
  for (auto &c : emu.cur->landed)
    for (int i = 0; i < c.bytes; i++)
      emu.cta->unfenced[c.dst + i]--;
  emu.cur->landed.clear();
}

// The shared-memory byte holding element (mn, k) of a 16-bit operand, decoded from a matrix
// descriptor as the PTX ISA describes it ("Matrix Descriptor Format", "Shared Memory Matrix
// Layout"): start address, leading (LBO) and stride (SBO) byte offsets, each stored >> 4 in 14
// bits at bits 0, 16, 32; base offset at bits 49-51; swizzle mode at bits 62-63 (1: 128-byte,
// 2: 64-byte, 3: 32-byte). A swizzled matrix is made of atoms whose rows are W = swizzle bytes
// long: K-major, atom rows run along K and the 8-row groups along M/N are SBO apart (LBO
// unused); MN-major, atom rows run along M/N, 8-row groups along K are SBO apart and atoms
// side by side along M/N (W / 2 elements each) are LBO apart. The swizzle XORs address bits
// [4, 4 + log2(W / 16)) with the bits three above them, i.e. the 16-byte chunk index with the
// row index within the repeating pattern of 8 rows (base offset 0: patterns start on W * 8-byte
// boundaries). The interleaved (no-swizzle) layouts are not used by the kernels and not emulated.
static inline unsigned emu_desc_addr(uint64_t desc, bool mn_major, int mn, int k, unsigned E)
{
  const unsigned start = (unsigned)(desc & 0x3fff) << 4;
  const unsigned lbo = (unsigned)((desc >> 16) & 0x3fff) << 4;
  const unsigned sbo = (unsigned)((desc >> 32) & 0x3fff) << 4;
  const unsigned base = (unsigned)(desc >> 49) & 7, mode = (unsigned)(desc >> 62) & 3;
  if (mode == 0 || base != 0) {
    emu_fail("wgmma descriptor: no-swizzle layouts and nonzero base offsets are not emulated");
    return 0;
  }
  const unsigned W = mode == 1 ? 128 : mode == 2 ? 64 : 32; // E: bytes per element
  unsigned addr;
  if (!mn_major) {
    if ((unsigned)k * E >= W)
      emu_fail("wgmma descriptor: K-major k slice wider than the swizzle row");
    addr = start + (unsigned)(mn / 8) * sbo + (unsigned)(mn % 8) * W + (unsigned)k * E;
  } else {
    const unsigned per_row = W / E;
    addr = start + (unsigned)mn / per_row * lbo + (unsigned)(k / 8) * sbo + (unsigned)(k % 8) * W +
           (unsigned)mn % per_row * E;
  }
  if (emu.plant == 4)
    return addr;
  return addr ^ (((addr >> 7) & (W / 16 - 1)) << 4);
}

// Calls f(address of the element's first byte, operand, row, k) for every element an m64nNkK
// wgmma reads (A 64 x K unless it comes from registers, B K x N; K 16, or 32 for fp8).
template <class F> static inline void emu_wgmma_bytes(const EmuWgmma &w, F f)
{
  const bool tb = emu.plant == 3 ? !w.trans_b : w.trans_b;
  const int K = emu_type_k(w.type);
  const unsigned E = emu_type_bytes(w.type);
  for (int m = 0; m < 64 && !w.a_regs; m++)
    for (int k = 0; k < K; k++)
      f(emu_desc_addr(w.da, w.trans_a, m, k, E), 0, m, k);
  for (int k = 0; k < K; k++)
    for (int n = 0; n < w.n; n++)
      f(emu_desc_addr(w.db, tb, n, k, E), 1, n, k);
}

static inline unsigned emu_smem_elem(unsigned a, unsigned E)
{
  if (a % E || a + E > emu.smem_bytes) {
    emu_fail("wgmma operand outside shared memory or misaligned");
    return 0;
  }
  for (unsigned i = a; i < a + E; i++) {
    if (emu.cta->pending[i]) {
      emu_fail("wgmma read a shared-memory byte whose copy (cp.async or TMA) was not waited for");
      break;
    }
    if (emu.cta->unfenced[i]) {
      emu_fail("wgmma read cp.async data not fenced into the async proxy (fence.proxy.async)");
      break;
    }
  }
  unsigned v = 0;
  memcpy(&v, emu.cta->smem + a, E); // little-endian, as the GPU
  return v;
}

// Runs one wgmma: accumulator register i of warpgroup thread t is D[16 (t / 32) + (t % 32) / 4
// + 8 ((i / 2) % 2)][8 (i / 4) + 2 (t % 4) + i % 2] (the ISA's m64nNk16 D fragment).
static inline void emu_wgmma_run(EmuWgmma &w)
{
  static float A[64][32], B[32][256];
  const unsigned E = emu_type_bytes(w.type);
  const int K = emu_type_k(w.type);
  emu_wgmma_bytes(w, [&](unsigned a, int which, int i, int k) {
    if (a + E <= emu.smem_bytes)
      for (unsigned b = 0; b < E; b++)
        emu.cta->wg_reads[a + b]--;
    const float f = emu_elem_to_f32(w.type, emu_smem_elem(a, E));
    if (which == 0)
      A[i][k] = f;
    else
      B[k][i] = f;
  });
  // The RS form: register j of warp w's lane l holds two elements of A (m16n8k16 A fragment:
  // row g = l / 4 (+ 8 for j odd), columns 2 (l % 4) + 8 (j / 2) and + 1). The hardware may read
  // them any time until the wgmma finishes, so a register changed since the issue is a bug.
  for (int t = 0; t < 128 && w.a_regs; t++)
    for (int j = 0; j < 4; j++) {
      if (w.a_at[t][j] != w.a_issued[t][j])
        emu_fail("a wgmma's register A operand changed before the wgmma finished (wgmma.wait_group)");
      const int jj = emu.plant == 11 ? (j == 1 ? 2 : j == 2 ? 1 : j) : j;
      const int r = 16 * (t / 32) + (t % 32) / 4 + 8 * (jj % 2), c = 2 * (t % 4) + 8 * (jj / 2);
      for (int h = 0; h < 2; h++) {
        const unsigned short v = (unsigned short)(w.a_issued[t][j] >> (16 * h));
        A[r][c + h] = emu_elem_to_f32(w.type, v);
      }
    }
  // The accumulators belong to the tensor cores from the issue to the wait: a thread writing
  // them in between (an O rescaled while the P·V that adds into it still runs) is a race.
  for (int t = 0; t < 128; t++)
    if (memcmp(w.d[t], &w.d_seen[(size_t)t * (w.n / 2)], sizeof(float) * (w.n / 2)) != 0) {
      emu_fail("a wgmma's accumulator registers were written while it was in flight (before its "
               "wgmma.wait_group)");
      break;
    }
  for (int t = 0; t < 128; t++)
    for (int i = 0; i < w.n / 2; i++) {
      const int r = 16 * (t / 32) + (t % 32) / 4 + 8 * ((i / 2) % 2);
      const int c = 8 * (i / 4) + 2 * (t % 4) + i % 2;
      double acc = w.scale_d ? w.d[t][i] : 0.0;
      for (int k = 0; k < K; k++)
        acc += (double)A[r][k] * B[k][c];
      w.d[t][i] = (float)acc;
    }
}

static inline void emu_wgmma_fence()
{
  emu_wg_collective(2000, [](EmuGroup &g) { g.fenced = true; });
}

// One wgmma.mma_async: A from the descriptor da, or (a != nullptr, the RS form) from the four
// registers at a of each thread.
static inline void emu_wgmma(float *d, int n, uint64_t da, uint64_t db, int scale_d, int type,
                             bool trans_a, bool trans_b, const unsigned *a = nullptr)
{
  // The ISA: imm-trans-a/b exist for .f16/.bf16 only; fp8 reads K-major operands, and its A
  // from registers is not used here.
  if (type >= EMU_E4M3 && (trans_a || trans_b || a))
    emu_fail("fp8 wgmma with a transposed (MN-major) or register operand: the ISA has K-major "
             "shared-memory operands only");
  EmuGroup &g = emu.cta->wgs[emu.cur->tid / 128];
  const unsigned t = emu.cur->tid % 128;
  g.in_a[t] = da;
  g.in_b[t] = db;
  g.in_d[t] = d;
  g.in_i[t] = scale_d;
  g.in_ra[t] = a;
  emu_wg_collective(a ? 2601 + n : 2001 + n, [&](EmuGroup &gg) {
    if (!gg.fenced)
      emu_fail("wgmma.mma_async before the warpgroup's first wgmma.fence");
    EmuWgmma w{n, gg.in_a[0], gg.in_b[0], type, trans_a, trans_b, gg.in_i[0] != 0, {},
               a != nullptr, {}, {}};
    for (int i = 0; i < 128; i++) {
      if (gg.in_a[i] != w.da || gg.in_b[i] != w.db || (gg.in_i[i] != 0) != w.scale_d)
        emu_fail("wgmma descriptors or scale-d differ across the warpgroup");
      w.d[i] = gg.in_d[i];
      w.d_seen.insert(w.d_seen.end(), gg.in_d[i], gg.in_d[i] + n / 2);
      w.a_at[i] = gg.in_ra[i];
      for (int j = 0; j < 4 && w.a_regs; j++)
        w.a_issued[i][j] = gg.in_ra[i][j];
    }
    const unsigned E = emu_type_bytes(type);
    emu_wgmma_bytes(w, [&](unsigned a, int, int, int) {
      if (a + E <= emu.smem_bytes)
        for (unsigned b = 0; b < E; b++)
          emu.cta->wg_reads[a + b]++;
    });
    gg.open.push_back(w);
  });
}

static inline void emu_wgmma_commit()
{
  emu_wg_collective(2300, [](EmuGroup &g) {
    g.groups.push_back(g.open);
    g.open.clear();
  });
}

// wgmma.wait_group n: every group but the newest n finishes (now, as late as allowed).
static inline void emu_wgmma_wait(int n)
{
  emu_wg_collective(2400 + n, [n](EmuGroup &g) {
    while ((int)g.groups.size() > n + (emu.plant == 13)) {
      for (auto &w : g.groups.front()) {
        emu_wgmma_run(w);
        // Later wgmmas on the same accumulators start from what this one left.
        auto follow = [&w](EmuWgmma &later) {
          if (&later == &w || later.n != w.n)
            return;
          for (int t = 0; t < 128; t++)
            if (later.d[t] == w.d[t])
              memcpy(&later.d_seen[(size_t)t * (w.n / 2)], w.d[t], sizeof(float) * (w.n / 2));
        };
        bool after = false;
        for (auto &grp : g.groups)
          for (auto &later : grp) {
            if (after)
              follow(later);
            after = after || &later == &w;
          }
        for (auto &later : g.open)
          follow(later);
      }
      g.groups.erase(g.groups.begin());
    }
  });
}

// ---- mbarriers and the TMA (sm_90) ----
static inline EmuBar *emu_bar(unsigned addr)
{
  for (auto &b : emu.cta->bars)
    if (b.first == addr)
      return &b.second;
  emu_fail("mbarrier operation on shared memory that no mbarrier.init initialised");
  return nullptr;
}

static inline void emu_mbar_init(unsigned addr, unsigned count)
{
  if (addr % 8 || addr + 8 > emu.smem_bytes || count == 0) {
    emu_fail("mbarrier.init misaligned, outside shared memory or with a zero count");
    return;
  }
  for (auto &b : emu.cta->bars)
    if (b.first == addr) {
      emu_fail("mbarrier.init of a barrier already initialised in this CTA");
      return;
    }
  EmuBar b;
  b.count = b.pending = count;
  emu.cta->bars.push_back({addr, b});
}

// Completes the current phase when every arrival and every announced byte are in.
static inline void emu_mbar_progress(EmuBar &b)
{
  // A peer CTA's multicast may land before this CTA's producer announced the phase's bytes; only
  // a phase with every arrival in and bytes still negative got more than announced.
  if (b.tx < 0 && b.pending == 0)
    emu_fail("an mbarrier received more TMA bytes than were announced (expect_tx)");
  if (b.pending == 0 && b.tx == 0) {
    b.phase++;
    b.pending = b.count;
    emu_progress();
  }
}

static inline void emu_mbar_arrive_tx(unsigned addr, unsigned bytes)
{
  EmuBar *b = emu_bar(addr);
  if (!b)
    return;
  if (b->pending == 0) {
    emu_fail("mbarrier arrival beyond the phase's expected count");
    return;
  }
  b->tx += bytes;
  b->pending--;
  emu_mbar_progress(*b);
}

// A plain arrival (no bytes). Planted bug 7 lets it complete the phase alone, as a barrier
// initialised with the wrong count would: a slot handed back by one consumer warpgroup while
// another still reads it must then be caught (the TMA overwriting an unfinished wgmma's operand).
static inline void emu_mbar_arrive(unsigned addr)
{
  EmuBar *b = emu_bar(addr);
  if (b && emu.plant == 7 && b->pending > 1)
    b->pending = 1;
  emu_mbar_arrive_tx(addr, 0);
}

// setmaxnreg: a warpgroup-wide instruction (every thread of the warpgroup executes it, with the
// same count); registers are not modelled, but the count's range and granularity are checked.
// setmaxnreg: a warpgroup-wide change of its threads' register count. The CTA starts with
// what __launch_bounds__(threads, 1) lets ptxas give every thread (65536 / threads, in steps
// of 8) and never gets more: an increase waits until decreases elsewhere have freed enough,
// and one that no decrease can satisfy hangs the warpgroup — a deadlock (a producer at 24 and
// two consumers at 240, or 40 and 232, fit three warpgroups' 168 each; 32 and 240 do not).
static inline void emu_setmaxnreg(int n, bool inc)
{
  if (n < 24 || n > 256 || n % 8)
    emu_fail("setmaxnreg count outside 24..256 or not a multiple of 8");
  if (emu.block.x % 128) {
    emu_fail("setmaxnreg in a block that is not whole warpgroups");
    return;
  }
  emu_wg_collective(inc ? 2701 : 2700, [n, inc](EmuGroup &g) {
    const int launch = std::min(255, (int)(65536 / emu.block.x) / 8 * 8);
    for (auto &other : emu.cta->wgs)
      if (other.regs == 0)
        other.regs = launch;
    if (inc ? n < g.regs : n > g.regs)
      emu_fail(inc ? "setmaxnreg.inc to fewer registers than the warpgroup holds"
                   : "setmaxnreg.dec to more registers than the warpgroup holds");
    auto used = [&]() {
      long total = 0;
      for (auto &other : emu.cta->wgs)
        total += (&other == &g ? n : other.regs) * 128l;
      return total;
    };
    while (used() > (long)launch * emu.block.x)
      emu_refused_wait(EMU_WAIT_REGS, "deadlock: setmaxnreg.inc waits for registers no "
                                      "warpgroup will release (the CTA keeps its launch's "
                                      "registers)");
    if (inc || emu.plant != 12)
      g.regs = n;
  });
}

// The shared-memory byte a TMA box writes byte `i` of its row `r` to: rows packed one after the
// other, then the swizzle's XOR of address bits [4, 4 + log2(S / 16)) with the bits three above
// (the same pattern the wgmma descriptors decode), applied to the absolute shared address as the
// hardware does; S = 128 is the 16-byte chunk index XOR-ed with the row within 8 rows.
static inline unsigned emu_tma_smem_addr(const EmuTmaMap &m, unsigned dst, unsigned r, unsigned i)
{
  const unsigned a = dst + r * m.box[0] * m.elem + i;
  if (m.swizzle == 0 || emu.plant == 5)
    return a;
  return a ^ (((a >> 7) & (m.swizzle / 16 - 1)) << 4);
}

static inline void emu_tma_apply(const EmuTma &t)
{
  const EmuTmaMap &m = t.map;
  for (unsigned r = 0; r < m.box[1]; r++)
    for (unsigned i = 0; i < m.box[0] * m.elem; i++) {
      const unsigned a = emu_tma_smem_addr(m, t.dst, r, i);
      const long long x = (long long)t.c0 + i / m.elem, y = (long long)t.c1 + r;
      const bool in = x >= 0 && y >= 0 && (uint64_t)x < m.dim[0] && (uint64_t)y < m.dim[1];
      emu.cta->smem[a] = in ? m.base[(uint64_t)y * m.stride + (uint64_t)x * m.elem + i % m.elem] : 0;
      emu.cta->pending[a]--;
    }
  EmuBar *b = emu_bar(t.bar);
  if (b) {
    b->tx -= (long long)m.box[0] * m.box[1] * m.elem;
    emu_mbar_progress(*b);
  }
}

static inline void emu_tma_copy_2d(unsigned dst, const void *map_ptr, int c0, int c1, unsigned bar)
{
  EmuTmaMap m;
  memcpy(&m, map_ptr, sizeof m);
  if (m.magic != EMU_TMA_MAGIC) {
    emu_fail("cp.async.bulk.tensor with a pointer that is not an encoded tensor map");
    return;
  }
  const unsigned bytes = m.box[0] * m.box[1] * m.elem;
  // The hardware wants 128-byte aligned destinations; the swizzle pattern itself repeats every
  // 8 swizzle rows, so a box that should line up with a wgmma layout must start on one.
  if (dst % 128 || dst + bytes > emu.smem_bytes) {
    emu_fail("cp.async.bulk.tensor destination misaligned or outside shared memory");
    return;
  }
  if (!emu_bar(bar))
    return;
  EmuTma t{dst, m, c0, c1, bar};
  for (unsigned r = 0; r < m.box[1]; r++)
    for (unsigned i = 0; i < m.box[0] * m.elem; i++) {
      const unsigned a = emu_tma_smem_addr(m, dst, r, i);
      if (emu.cta->wg_reads[a] || emu.cta->store_reads[a]) {
        emu_fail(emu.cta->wg_reads[a] ? "TMA copy into shared memory that an unfinished wgmma reads"
                                      : "TMA copy into shared memory that a TMA store still reads");
        r = m.box[1];
        break;
      }
      emu.cta->pending[a]++;
    }
  if (emu.eager)
    emu_tma_apply(t);
  else
    emu_bar(bar)->inflight.push_back(t);
}

// try_wait.parity P: true once the phase of parity P has completed, i.e. the current phase's
// parity is no longer P. Copies still in flight on the barrier land now, the latest a waiter
// lets them; a false answer yields to the other threads.
static inline bool emu_mbar_try_wait(unsigned addr, unsigned parity)
{
  if (emu.plant == 6)
    return true;
  EmuBar *b = emu_bar(addr);
  if (!b)
    return true;
  std::vector<EmuTma> landing;
  landing.swap(b->inflight);
  for (auto &t : landing)
    emu_tma_apply(t);
  if ((b->phase & 1) != parity)
    return true;
  // Between two phase completions a working kernel makes a few scheduler rounds of progress
  // (a handful of warp collectives).
  emu_refused_wait(EMU_WAIT_MBAR,
                   "deadlock: an mbarrier wait on a phase that cannot complete");
  return false;
}

// Named barriers (bar.sync / bar.arrive id, count): ids 1..15 (0 belongs to __syncthreads),
// counts in whole warps within the block; a phase's participants must agree on the count.
static inline EmuNamedBar *emu_named(unsigned id, unsigned count)
{
  if (id == 0 || id >= 16 || count == 0 || count % 32 || count > emu.block.x) {
    emu_fail("named barrier with id 0 or above 15, or a thread count that is not whole warps "
             "within the block");
    return nullptr;
  }
  EmuNamedBar &b = emu.cta->named[id];
  if (b.arrived == 0)
    b.count = (int)count;
  else if (b.count != (int)count) {
    emu_fail("named barrier arrivals of one phase disagree on the thread count");
    return nullptr;
  }
  return &b;
}

static inline void emu_named_complete(EmuNamedBar &b)
{
  if (b.arrived == b.count) {
    b.arrived = 0;
    b.gen++;
    emu_progress();
  }
}

static inline void emu_bar_arrive_named(unsigned id, unsigned count)
{
  EmuNamedBar *b = emu_named(id, count);
  if (!b || emu.plant == 8)
    return;
  b->arrived++;
  emu_named_complete(*b);
}

// Waits like an mbarrier try_wait loop, so a wait no arrival will ever complete is reported as
// a deadlock (a hung GPU) instead of spinning the emulator forever.
static inline void emu_bar_sync_named(unsigned id, unsigned count)
{
  EmuNamedBar *b = emu_named(id, count);
  if (!b)
    return;
  const unsigned g = b->gen;
  b->arrived++;
  emu_named_complete(*b);
  while (b->gen == g)
    emu_refused_wait(EMU_WAIT_NAMED,
                     "deadlock: a bar.sync on a named barrier whose phase cannot complete");
}

// ---- thread-block clusters ----
// A shared::cluster address from mapa: bit 31 set, the CTA's rank in bits 24..30, the offset
// below; a shared::cta address (bit 31 clear) is the issuing CTA's own.
static inline unsigned emu_cluster_rank() { return emu.cta->rank; }
static inline unsigned emu_mapa(unsigned addr, unsigned rank)
{
  if (rank >= emu.cluster || addr >= (1u << 24)) {
    emu_fail("mapa to a rank outside the cluster or an address outside shared memory");
    return addr;
  }
  return 1u << 31 | rank << 24 | addr;
}

// Runs f with `rank`'s CTA as the current one (its shared memory, barriers and trackers).
// A CTA whose threads have all exited has given its shared memory back: another CTA's access to
// it would hit whatever runs there next.
template <class F> static inline void emu_in_cta(unsigned rank, F f)
{
  if (emu.ctas[rank].n_done == (int)emu.block.x) {
    emu_fail("access to the shared memory of a cluster CTA that has exited (a cluster barrier "
             "missing before its exit)");
    return;
  }
  EmuCta *self = emu.cta;
  emu.cta = &emu.ctas[rank];
  f();
  emu.cta = self;
}

static inline void emu_mbar_arrive_cluster(unsigned caddr)
{
  const unsigned rank = caddr >> 31 ? (caddr >> 24) & 0x7f : emu.cta->rank;
  if (rank >= emu.cluster) {
    emu_fail("mbarrier arrival on a shared::cluster address outside the cluster");
    return;
  }
  emu_in_cta(rank, [&] { emu_mbar_arrive(caddr & 0xffffff); });
}

// barrier.cluster.arrive + wait: every thread of every CTA of the cluster (exited ones count).
static inline void emu_cluster_sync()
{
  const unsigned g = emu.cluster_gen;
  int done = 0;
  for (auto &c : emu.ctas)
    done += c.n_done;
  if (++emu.cluster_arrived + done == (int)(emu.cluster * emu.block.x)) {
    emu.cluster_arrived = 0;
    emu.cluster_gen++;
    emu_progress();
    return;
  }
  while (emu.cluster_gen == g)
    emu_refused_wait(EMU_WAIT_CLUSTER, "deadlock: a barrier.cluster wait that cannot complete");
}

static inline void emu_tma_copy_2d(unsigned dst, const void *map_ptr, int c0, int c1, unsigned bar);
// The same box into every CTA of mask, each crediting its own barrier at offset bar. Planted
// bug 10 drops the other CTAs: their full barriers then wait for bytes that never come.
static inline void emu_tma_copy_2d_multicast(unsigned dst, const void *map, int c0, int c1,
                                             unsigned bar, unsigned mask)
{
  if (mask == 0 || mask >> emu.cluster) {
    emu_fail("multicast TMA copy with an empty mask or ranks outside the cluster");
    return;
  }
  if (emu.plant == 10)
    mask = 1u << emu.cta->rank;
  for (unsigned r = 0; r < emu.cluster; r++)
    if (mask >> r & 1)
      emu_in_cta(r, [&] { emu_tma_copy_2d(dst, map, c0, c1, bar); });
}

// ---- the TMA-store epilogue ----
// stmatrix.m8n8.x4 (b16): register q of lane l holds row l / 4, columns 2 (l % 4) and + 1 of
// matrix q; lane l addresses row l % 8 of matrix l / 8. A row is a generic-proxy write of the
// lane that addressed it, so that lane's fence.proxy.async must precede a TMA store reading it.
static inline void emu_stmatrix_x4(unsigned addr, const unsigned (&r)[4])
{
  unsigned lane = emu.cur->tid % 32, warp = emu.cur->tid / 32;
  EmuWarp &w = emu.cta->warps[warp];
  w.in_u[lane][0] = addr;
  for (int q = 0; q < 4; q++)
    w.in_u[lane][1 + q] = r[q];
  emu_warp_collective(3000, [&](EmuWarp &ww) {
    for (int q = 0; q < 4; q++)
      for (int row = 0; row < 8; row++) {
        const unsigned a = ww.in_u[q * 8 + row][0];
        if (a % 16 || a + 16 > emu.smem_bytes) {
          emu_fail("stmatrix row address misaligned or outside shared memory");
          continue;
        }
        for (unsigned i = a; i < a + 16; i++)
          if (emu.cta->store_reads[i] || emu.cta->wg_reads[i] || emu.cta->pending[i]) {
            emu_fail(emu.cta->store_reads[i] ? "stmatrix into shared memory that a TMA store still reads"
                                        : "stmatrix into shared memory that a copy or wgmma uses");
            break;
          }
        for (int c = 0; c < 4; c++) { // lane 4 row + c holds columns 2c, 2c + 1
          const unsigned v = ww.in_u[row * 4 + c][1 + q];
          memcpy(emu.cta->smem + a + 4 * c, &v, 4);
        }
        for (unsigned i = a; i < a + 16; i++)
          emu.cta->unfenced[i]++;
        emu.cta->th[warp * 32 + q * 8 + row].landed.push_back(EmuCopy{a, nullptr, 16, true});
      }
  });
}

static inline void emu_tma_store_apply(const EmuTmaStore &st)
{
  const EmuTmaMap &m = st.map;
  unsigned char *base = const_cast<unsigned char *>(m.base);
  for (unsigned r = 0; r < m.box[1]; r++)
    for (unsigned i = 0; i < m.box[0] * m.elem; i++) {
      const unsigned a = emu_tma_smem_addr(m, st.src, r, i);
      const long long x = (long long)st.c0 + i / m.elem, y = (long long)st.c1 + r;
      if (x >= 0 && y >= 0 && (uint64_t)x < m.dim[0] && (uint64_t)y < m.dim[1])
        base[(uint64_t)y * m.stride + (uint64_t)x * m.elem + i % m.elem] = emu.cta->smem[a];
      emu.cta->store_reads[a]--;
    }
}

static inline void emu_tma_store_2d(const void *map_ptr, int c0, int c1, unsigned src)
{
  EmuTmaStore st;
  memcpy(&st.map, map_ptr, sizeof st.map);
  if (st.map.magic != EMU_TMA_MAGIC) {
    emu_fail("cp.async.bulk.tensor store with a pointer that is not an encoded tensor map");
    return;
  }
  const unsigned bytes = st.map.box[0] * st.map.box[1] * st.map.elem;
  if (src % 128 || src + bytes > emu.smem_bytes) {
    emu_fail("cp.async.bulk.tensor store source misaligned or outside shared memory");
    return;
  }
  st.src = src;
  st.c0 = c0;
  st.c1 = c1;
  for (unsigned r = 0; r < st.map.box[1]; r++)
    for (unsigned i = 0; i < st.map.box[0] * st.map.elem; i++) {
      const unsigned a = emu_tma_smem_addr(st.map, src, r, i);
      if (emu.cta->unfenced[a] || emu.cta->pending[a]) {
        emu_fail(emu.cta->unfenced[a] ? "TMA store reads shared memory written by the generic proxy "
                                   "and not fenced into the async proxy (fence.proxy.async)"
                                 : "TMA store reads shared memory whose copy was not waited for");
        r = st.map.box[1];
        break;
      }
    }
  for (unsigned r = 0; r < st.map.box[1]; r++)
    for (unsigned i = 0; i < st.map.box[0] * st.map.elem; i++)
      emu.cta->store_reads[emu_tma_smem_addr(st.map, src, r, i)]++;
  if (emu.eager)
    emu_tma_store_apply(st);
  else
    emu.cur->bulk_open.push_back(st);
}

static inline void emu_bulk_commit()
{
  emu.cur->bulk.push_back(emu.cur->bulk_open);
  emu.cur->bulk_open.clear();
}

// wait_group(.read) N: the oldest groups beyond N complete now (reads and writes alike: the
// emulator has no separate write-back to model).
static inline void emu_bulk_wait(int n, bool read_only)
{
  if (read_only && emu.plant == 9)
    return;
  auto &g = emu.cur->bulk;
  while ((int)g.size() > n) {
    for (auto &st : g.front())
      emu_tma_store_apply(st);
    g.erase(g.begin());
  }
}

// The end of a CTA: copies nobody waited for land (their data were never read, or the reads
// were reported), and a barrier still owed bytes would have hung the kernel on a GPU.
static inline void emu_tma_finish()
{
  for (auto &b : emu.cta->bars) {
    std::vector<EmuTma> landing;
    landing.swap(b.second.inflight);
    for (auto &t : landing)
      emu_tma_apply(t);
    if (b.second.tx != 0)
      emu_fail("an mbarrier still expects TMA bytes when the CTA ends");
  }
  emu.cta->bars.clear();
  // A TMA store still reading shared memory when the CTA ends reads memory the next CTA owns.
  for (auto &th : emu.cta->th) {
    if (!th.bulk.empty() || !th.bulk_open.empty())
      emu_fail("TMA stores not waited for (cp.async.bulk.wait_group) when the CTA ends");
    for (auto &g : th.bulk)
      for (auto &st : g)
        emu_tma_store_apply(st);
    for (auto &st : th.bulk_open)
      emu_tma_store_apply(st);
    th.bulk.clear();
    th.bulk_open.clear();
  }
  // An arrival nobody waited for is a protocol error: the next launch on this SM would start
  // with the barrier part-way through a phase.
  for (auto &nb : emu.cta->named) {
    if (nb.arrived != 0)
      emu_fail("a named barrier has arrivals no bar.sync completed when the CTA ends");
    nb = EmuNamedBar();
  }
}
