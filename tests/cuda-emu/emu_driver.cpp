// emu_driver.cpp — runs one generated CUDA kernel (linked in, its entry and launch record under
// the names emu_entry.inc gives them) over its whole launch on the host emulator (emu_core.h)
// and checks every output element against an f64 reference from the same (rounded) inputs, with ts_numerics_rel_error's norm-wise relative error
// and ts_numerics_tolerance's bound. Inputs are random and nonzero; outputs are NaN-poisoned.
// usage: emu-kernel OP DIM... (gemm M N K | gemm_bias_relu M N K | flash_attention[_causal] B H S D | rows ops M N |
// saxpy N); env EMU_EAGER=1 applies cp.async at issue, EMU_PLANT=1..14 plants a bug (emu_core.h).
// The CTAs of a cluster (emu_cluster_size, consecutive along x) run together, each with its own
// shared memory. Compiled once per element type (-DSTORE, -DSTORE_NAME; -DFP8_IN, -DFP8_E5M2).
#include "ts_cuda_prims.cuh"
#include "ts-cuda-tma.h"
#include <string>

// The kernel's side (emu_entry.inc). A kernel that reads through the TMA has a record of its
// tensor maps (emu_tma_record, else null); they are planned from it exactly as the CUDA backend
// plans them (ts-cuda-tma.h), then encoded by the emulator instead of the driver.
extern "C" const unsigned *const emu_launch;
extern "C" const unsigned emu_cluster_size;
extern "C" const unsigned *const emu_tma_record;
extern "C" void emu_entry(const TsArgs &args, const TsTmaMaps &maps);

Emu emu;
static TsArgs g_args;
static TsTmaMaps g_maps;

static void trampoline()
{
  emu_entry(g_args, g_maps);
  emu.cur->done = true;
  emu.cta->n_done++;
  emu_fiber_switch(&emu.cur->fiber, &emu.sched); // never resumed
  abort();
}

#if defined(__x86_64__)
// emu_switch(save_sp, load_sp): pushes the System V callee-saved registers, stores the stack
// pointer through save_sp, loads load_sp and pops the other fiber's registers; its ret resumes
// that fiber. SSE and x87 control words are the same in every fiber and are not switched.
asm(".text\n"
    ".globl emu_switch\n"
    ".type emu_switch, @function\n"
    "emu_switch:\n"
    "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
    "  ret\n"
    ".size emu_switch, .-emu_switch\n");

// A fresh fiber's stack as emu_switch leaves a suspended one: six saved registers (zero), then
// the address its ret jumps to (entry), then a return address entry never uses, placed so that
// entry starts with the stack aligned as after a call (rsp = 8 mod 16).
static void fiber_init(EmuFiber *f, char *stack, size_t size, void (*entry)())
{
  uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)15;
  void **sp = (void **)top;
  *--sp = nullptr;
  *--sp = (void *)entry;
  for (int r = 0; r < 6; r++)
    *--sp = nullptr;
  f->sp = sp;
}
#else
static void fiber_init(EmuFiber *f, char *stack, size_t size, void (*entry)())
{
  getcontext(&f->ctx);
  f->ctx.uc_stack.ss_sp = stack;
  f->ctx.uc_stack.ss_size = size;
  f->ctx.uc_link = nullptr;
  makecontext(&f->ctx, entry, 0);
}
#endif
static double urand(uint64_t &s)
{
  s = s * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(s >> 11) / 9007199254740992.0;
}
typedef std::vector<STORE> Buf;
static Buf random_buf(size_t n, uint64_t &seed, double lo, double hi)
{
  Buf b(n);
  for (auto &x : b) {
    double v = lo + (hi - lo) * urand(seed);
    if (fabs(v) < 1e-3) v = 0.5; // never zero
    x = ts_from_f32<STORE>((float)v);
  }
  return b;
}
static double f(STORE x) { return ts_to_f32(x); }
#ifdef FP8_IN
// fp8 gemm (-DFP8_IN=ts_e4m3 or ts_e5m2, -DFP8_E5M2=0/1): inputs are random finite nonzero bit
// patterns, so every binade and the subnormals occur; B is stored [N, K]; the output (STORE)
// is bf16, times the per-tensor scales floats[0] and floats[1].
static double f8(unsigned char v) { return emu_fp8_to_f32(v, FP8_E5M2); }
static std::vector<FP8_IN> random_fp8(size_t n, uint64_t &seed)
{
  std::vector<FP8_IN> b(n);
  for (auto &x : b) {
    unsigned char v;
    do
      v = (unsigned char)(urand(seed) * 256);
    while (!std::isfinite(f8(v)) || f8(v) == 0);
    x.x = v;
  }
  return b;
}
#endif

// cuTensorMapEncodeTiled's checks (those the plan does not make), then the emulator's encoding.
static int encode_maps()
{
  if (!emu_tma_record)
    return 0;
  TsTmaPlan plans[TS_TMA_MAX_MAPS];
  const char *why = nullptr;
  const int n = ts_tma_plan(emu_tma_record, 1 + TS_TMA_WORDS * emu_tma_record[0], g_args.ints, 8, 8,
                            plans, &why);
  if (n < 0) { fprintf(stderr, "emu: tensor maps: %s\n", why); return 2; }
  for (int i = 0; i < n; i++) {
    const TsTmaPlan &p = plans[i];
    if (g_args.bufs[p.buf] == nullptr || (uintptr_t)g_args.bufs[p.buf] % 16) {
      fprintf(stderr, "emu: tensor map %d: buffer %u missing or not 16-byte aligned\n", i, p.buf);
      return 2;
    }
    EmuTmaMap m{EMU_TMA_MAGIC, (const unsigned char *)g_args.bufs[p.buf], p.elem_bytes,
                p.swizzle_bytes, {p.dim[0], p.dim[1]}, p.row_stride, {p.box[0], p.box[1]}};
    static_assert(sizeof m <= sizeof g_maps.map[0], "an encoded map fits the opaque bytes");
    memcpy(&g_maps.map[i], &m, sizeof m);
  }
  return 0;
}

static int run_launch()
{
  if (int rc = encode_maps()) return rc;
  const unsigned *L = emu_launch;
  emu.grid = Dim3{L[0], L[1], L[2]};
  emu.block = Dim3{L[3], L[4], L[5]};
  emu.cluster = emu_cluster_size;
  if (L[4] != 1 || L[5] != 1 || L[3] % 32) { fprintf(stderr, "emu: block shape not emulated\n"); return 2; }
  if (L[6] > 228 * 1024) { fprintf(stderr, "emu: %u bytes of shared memory\n", L[6]); return 2; }
  if (emu.cluster < 1 || emu.cluster > 8 || L[0] % emu.cluster) {
    fprintf(stderr, "emu: a grid of %u CTAs does not split into clusters of %u\n", L[0], emu.cluster);
    return 2;
  }
  emu.smem_bytes = L[6];
  // Each CTA of a cluster has its own shared memory, 1024-byte aligned like the kernels'.
  static std::vector<unsigned char> pool;
  pool.assign(emu.cluster * 228 * 1024 + 1024, 0);
  unsigned char *base = pool.data() + (1024 - (uintptr_t)pool.data() % 1024) % 1024;
  emu.ctas.clear();
  emu.ctas.resize(emu.cluster);
  for (unsigned bz = 0; bz < L[2]; bz++)
    for (unsigned by = 0; by < L[1]; by++)
      for (unsigned bx0 = 0; bx0 < L[0]; bx0 += emu.cluster) {
        for (unsigned r = 0; r < emu.cluster; r++) {
          EmuCta &c = emu.ctas[r];
          c = EmuCta();
          c.bidx = Dim3{bx0 + r, by, bz};
          c.rank = r;
          c.smem = base + r * 228 * 1024;
          memset(c.smem, 0xff, 228 * 1024); // garbage, not zeros
          c.pending.assign(L[6] + 16, 0);
          c.unfenced.assign(L[6] + 16, 0);
          c.wg_reads.assign(L[6] + 16, 0);
          c.store_reads.assign(L[6] + 16, 0);
          c.wgs.assign(L[3] % 128 ? 0 : L[3] / 128, EmuGroup());
          c.th.assign(L[3], EmuThread());
          c.warps.assign(L[3] / 32, EmuWarp());
          for (unsigned t = 0; t < L[3]; t++) {
            EmuThread &th = c.th[t];
            th.tid = t;
            th.cta = &c;
            th.done = false;
            th.stack.resize(256 * 1024);
            fiber_init(&th.fiber, th.stack.data(), th.stack.size(), trampoline);
          }
        }
        emu.cluster_arrived = 0;
        int alive = L[3] * emu.cluster;
        long spins = 0;
        while (alive > 0) {
          alive = 0;
          emu.round++;
          for (auto &c : emu.ctas) {
            for (auto &th : c.th)
              if (!th.done) {
                emu.cur = &th;
                emu.cta = &c;
                emu_fiber_switch(&emu.sched, &th.fiber);
                alive += !th.done;
              }
            if (c.cta_arrived > 0 && c.cta_arrived + c.n_done == (int)L[3]) { // exited threads
              c.cta_arrived = 0;
              c.cta_gen++;
            }
          }
          int done = 0;
          for (auto &c : emu.ctas)
            done += c.n_done;
          if (emu.cluster_arrived > 0 && emu.cluster_arrived + done == (int)(L[3] * emu.cluster)) {
            emu.cluster_arrived = 0; // the rest of the cluster exited
            emu.cluster_gen++;
          }
          if (++spins > 10000000) { fprintf(stderr, "emu: deadlock in CTA %u\n", bx0); return 2; }
        }
        emu.cur = nullptr;
        for (auto &c : emu.ctas) {
          emu.cta = &c;
          emu_tma_finish();
          for (auto &g : c.wgs)
            if (!g.open.empty() || !g.groups.empty())
              emu_fail("the kernel ended with wgmmas not waited for");
          for (auto &th : c.th) {
            if (!th.open.empty()) th.groups.push_back(th.open);
            for (auto &g : th.groups) for (auto &cp : g) emu_apply(cp);
          }
        }
        emu.cta = nullptr;
      }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc < 3) return 2;
  const std::string op = argv[1];
  long long d[4] = {0, 0, 0, 0};
  for (int i = 2; i < argc && i < 6; i++) d[i - 2] = atoll(argv[i]);
  uint64_t seed = 12345;
  emu.eager = getenv("EMU_EAGER") ? atoi(getenv("EMU_EAGER")) : 0;
  emu.plant = getenv("EMU_PLANT") ? atoi(getenv("EMU_PLANT")) : 0;
  for (int i = 0; i < 4; i++) g_args.ints[i] = d[i];
  const double eps = 1e-5, alpha = 1.75;
  g_args.floats[0] = op == "saxpy" ? alpha : eps;
  std::vector<Buf> in;
  Buf out;
  std::vector<double> ref;
#ifdef FP8_IN
  std::vector<FP8_IN> a8, b8;
  if (op == "gemm") {
    const long long M = d[0], N = d[1], K = d[2];
    // Scales of no power of two, as a per-tensor cast picks them (amax / the format's largest).
    const float sa = FP8_E5M2 ? 1.0f / 57344 : 1.0f / 448, sb = FP8_E5M2 ? 3.0f / 57344 : 3.0f / 448;
    g_args.floats[0] = sa;
    g_args.floats[1] = sb;
    a8 = random_fp8(M * K, seed);
    b8 = random_fp8(N * K, seed);
    out.resize(M * N);
    ref.assign(M * N, 0);
    for (long long i = 0; i < M; i++)
      for (long long j = 0; j < N; j++) {
        double acc = 0;
        for (long long k = 0; k < K; k++) acc += f8(a8[i * K + k].x) * f8(b8[j * K + k].x);
        ref[i * N + j] = acc * sa * sb;
      }
  } else
#endif
  if (op == "gemm") {
    const long long M = d[0], N = d[1], K = d[2];
    in = {random_buf(M * K, seed, -1, 1), random_buf(K * N, seed, -1, 1)};
    out.resize(M * N);
    ref.assign(M * N, 0);
    for (long long i = 0; i < M; i++)
      for (long long k = 0; k < K; k++)
        for (long long j = 0; j < N; j++) ref[i * N + j] += f(in[0][i * K + k]) * f(in[1][k * N + j]);
  } else if (op == "gemm_bias_relu") {
    // examples/gemm_bias_relu.tsk: C = max(alpha * A B + bias, 0), alpha 0.5 (its default).
    const long long M = d[0], N = d[1], K = d[2];
    const float a = 0.5f;
    g_args.floats[0] = a;
    in = {random_buf(M * K, seed, -1, 1), random_buf(K * N, seed, -1, 1), random_buf(N, seed, -1, 1)};
    out.resize(M * N);
    ref.assign(M * N, 0);
    for (long long i = 0; i < M; i++)
      for (long long k = 0; k < K; k++)
        for (long long j = 0; j < N; j++) ref[i * N + j] += f(in[0][i * K + k]) * f(in[1][k * N + j]);
    for (long long i = 0; i < M; i++)
      for (long long j = 0; j < N; j++) ref[i * N + j] = fmax(a * ref[i * N + j] + f(in[2][j]), 0.0);
  } else if (op == "flash_attention" || op == "flash_attention_causal") {
    const bool causal = op == "flash_attention_causal";
    const long long BH = d[0] * d[1], S = d[2], D = d[3], n = BH * S * D;
    in = {random_buf(n, seed, -2, 2), random_buf(n, seed, -2, 2), random_buf(n, seed, -1, 1)};
    out.resize(n);
    ref.assign(n, 0);
    std::vector<double> p(S);
    for (long long h = 0; h < BH; h++)
      for (long long i = 0; i < S; i++) {
        const long long nk = causal ? i + 1 : S;
        double mx = -INFINITY, z = 0;
        for (long long j = 0; j < nk; j++) {
          double s = 0;
          for (long long e = 0; e < D; e++) s += f(in[0][(h * S + i) * D + e]) * f(in[1][(h * S + j) * D + e]);
          p[j] = s / sqrt((double)D);
          mx = fmax(mx, p[j]);
        }
        for (long long j = 0; j < nk; j++) { p[j] = exp(p[j] - mx); z += p[j]; }
        for (long long e = 0; e < D; e++) {
          double acc = 0;
          for (long long j = 0; j < nk; j++) acc += p[j] * f(in[2][(h * S + j) * D + e]);
          ref[(h * S + i) * D + e] = acc / z;
        }
      }
  } else if (op == "saxpy") {
    const long long N = d[0];
    in = {random_buf(N, seed, -2, 2), random_buf(N, seed, -2, 2)};
    out.resize(N);
    for (long long i = 0; i < N; i++) ref.push_back((double)(float)alpha * f(in[0][i]) + f(in[1][i]));
  } else {
    const long long M = d[0], N = d[1];
    in = {random_buf(M * N, seed, -3, 3)};
    if (op == "layernorm_safe" || op == "rmsnorm_safe") in.push_back(random_buf(N, seed, 0.5, 1.5));
    if (op == "layernorm_safe") in.push_back(random_buf(N, seed, -1, 1));
    out.resize(op == "reduce_sum" ? M : M * N);
    ref.assign(out.size(), 0);
    const double feps = (float)eps;
    for (long long i = 0; i < M; i++) {
      const STORE *x = &in[0][i * N];
      double s = 0, s2 = 0, mx = -INFINITY;
      for (long long j = 0; j < N; j++) { s += f(x[j]); s2 += f(x[j]) * f(x[j]); mx = fmax(mx, f(x[j])); }
      const double mean = s / N;
      double var = 0, z = 0;
      for (long long j = 0; j < N; j++) { var += (f(x[j]) - mean) * (f(x[j]) - mean); z += exp(f(x[j]) - mx); }
      var /= N;
      for (long long j = 0; j < N; j++) {
        double &r = op == "reduce_sum" ? ref[i] : ref[i * N + j];
        if (op == "reduce_sum") r = s;
        else if (op == "softmax_safe") r = exp(f(x[j]) - mx) / z;
        else if (op == "layernorm_safe") r = (f(x[j]) - mean) / sqrt(var + feps) * f(in[1][j]) + f(in[2][j]);
        else if (op == "rmsnorm_safe") r = f(x[j]) / sqrt(s2 / N + feps) * f(in[1][j]);
        else { fprintf(stderr, "unknown op %s\n", op.c_str()); return 2; }
      }
    }
  }
  for (auto &x : out) x = ts_from_f32<STORE>(NAN);
  size_t nb = 0;
#ifdef FP8_IN
  if (op == "gemm") {
    g_args.bufs[nb++] = a8.data();
    g_args.bufs[nb++] = b8.data();
  }
#endif
  for (auto &b : in) g_args.bufs[nb++] = b.data();
  g_args.bufs[nb] = out.data();
  int rc = run_launch();
  if (rc) return rc;
  // ts_numerics_rel_error: every element; a non-finite output fails.
  double diff2 = 0, ref2 = 0;
  long bad = 0;
  for (size_t i = 0; i < out.size(); i++) {
    const double o = f(out[i]);
    if (!std::isfinite(o)) { bad++; continue; }
    diff2 += (o - ref[i]) * (o - ref[i]);
    ref2 += ref[i] * ref[i];
  }
  const double rel = bad ? INFINITY : sqrt(diff2) / sqrt(ref2);
  const double tol = sizeof(STORE) == 4 ? 1e-5 : (std::string(STORE_NAME) == "bf16" ? 1e-2 : 1e-3);
  printf("rel_error %.3g (tolerance %g) elements %zu nonfinite %ld emulator_errors %ld\n", rel, tol,
         out.size(), bad, emu.errors);
  return (bad || emu.errors || !(rel <= tol)) ? 1 : 0;
}
