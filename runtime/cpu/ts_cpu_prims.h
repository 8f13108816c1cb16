/* ts_cpu_prims.h — the tile-primitive library that Tessera's generated C code #includes.
 *
 * Generated kernels are short loop nests; the work happens here: a BLIS-style GEMM (register
 * micro-kernels instantiated per schedule point by TS_DEFINE_UKR_F32, panel/block packing with
 * bf16/f16 -> f32 conversion), output conversion, 64-byte aligned scratch allocation, and
 * row-vector helpers (ts_vf_*) for elementwise and reduction ops.
 *
 * Header-only, everything static (inline), C17 / gnu17, GCC and clang. SIMD is written with GCC
 * vector extensions so one source serves SSE (TS_VEC 4), AVX2 (TS_VEC 8) and AVX-512 (TS_VEC 16)
 * and the compiler does register allocation; intrinsics appear only where vector extensions cannot express the
 * operation (F16C conversions, sqrt), each with a portable fallback. The runtime compiles with
 *   cc -O3 -march=native -fPIC -shared -fopenmp -std=gnu17 -ffp-contract=fast
 * and no -ffast-math, so `acc += a * b` becomes one FMA and IEEE semantics (NaN, Inf, signed
 * zero) otherwise hold; nothing here relies on reassociation.
 *
 * Layouts: row-major matrices with explicit leading dimensions; 16-bit dtypes are uint16_t bit
 * patterns (bf16 = top half of an f32; f16 = IEEE binary16).
 */
#ifndef TS_CPU_PRIMS_H
#define TS_CPU_PRIMS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && !defined(TS_CPU_LIGHT)
#include <immintrin.h>
#endif

#define TS_CPU_PRIMS_VERSION 1

/* ------------------------------------------------------------------------------------------ */
/* Small integer helpers                                                                        */
/* ------------------------------------------------------------------------------------------ */

static inline int64_t
ts_min_i64(int64_t a, int64_t b)
{
  return a < b ? a : b;
}

static inline int64_t
ts_max_i64(int64_t a, int64_t b)
{
  return a > b ? a : b;
}

/* Smallest multiple of m that is >= x (x >= 0, m > 0). */
static inline int64_t
ts_round_up_i64(int64_t x, int64_t m)
{
  return (x + m - 1) / m * m;
}

static inline int64_t
ts_ceil_div_i64(int64_t x, int64_t m)
{
  return (x + m - 1) / m;
}

/* ------------------------------------------------------------------------------------------ */
/* Aligned scratch                                                                              */
/* ------------------------------------------------------------------------------------------ */

/* 64 bytes = one cache line on x86 and the widest vector (AVX-512) we may ever load aligned.
 * Packed panels start on a line so the micro-kernel's B loads never split lines. Returns NULL
 * on failure; ts_cpu_alloc(0) returns a valid (one-line) block.
 *
 * Freed blocks are kept for the next call of the kernel, a few per module: a GEMM's buffers
 * are megabytes, and glibc returns such blocks to the system when they are freed at the top of
 * the heap (its trim threshold follows its mmap threshold, which follows the sizes freed), so
 * every call would fault its buffers in again — measured: bf16 GEMM 512^3 with 1 MiB buffers
 * took 0.62 ms a call instead of 0.27. Each block carries its size in the line before it; the
 * cache is a few atomic slots, emptied when the module is unloaded. */
#define TS_SCRATCH_SLOTS 8
static void *ts_scratch_slot_[TS_SCRATCH_SLOTS];

static inline size_t
ts_scratch_size_(void *p)
{
  return *(size_t *)((char *)p - 64);
}

/* Not inlined: a kernel allocates a handful of buffers, and each inlined copy of these loops
 * over the slots cost compile time (a flash attention candidate: 7 allocations, about a fifth
 * of its object code). */
__attribute__((noinline, unused)) static void *
ts_cpu_alloc(size_t bytes)
{
  size_t n = bytes == 0 ? 64 : (bytes + 63) & ~(size_t)63; /* aligned_alloc wants a multiple */
  if (n < bytes || n + 64 < n)
    return NULL; /* overflow */
  for (int i = 0; i < TS_SCRATCH_SLOTS; i++) {
    void *p = __atomic_exchange_n(&ts_scratch_slot_[i], NULL, __ATOMIC_ACQUIRE);
    if (p == NULL)
      continue;
    if (ts_scratch_size_(p) >= n && ts_scratch_size_(p) / 4 <= n)
      return p;
    free((char *)p - 64); /* the wrong size for the kernel's buffers now */
  }
  char *block = (char *)aligned_alloc(64, n + 64);
  if (block == NULL)
    return NULL;
  *(size_t *)block = n;
  return block + 64;
}

__attribute__((noinline, unused)) static void
ts_cpu_free(void *p)
{
  if (p == NULL)
    return;
  for (int i = 0; i < TS_SCRATCH_SLOTS; i++) {
    void *empty = NULL;
    if (__atomic_compare_exchange_n(&ts_scratch_slot_[i], &empty, p, 0, __ATOMIC_RELEASE,
                                    __ATOMIC_RELAXED))
      return;
  }
  free((char *)p - 64);
}

__attribute__((destructor, unused)) static void
ts_scratch_release_(void)
{
  for (int i = 0; i < TS_SCRATCH_SLOTS; i++) {
    void *p = __atomic_exchange_n(&ts_scratch_slot_[i], NULL, __ATOMIC_ACQUIRE);
    if (p != NULL)
      free((char *)p - 64);
  }
}

/* TS_CPU_LIGHT: only scratch, the f32 micro-kernels (TS_DEFINE_UKR_F32*), the micro-kernels'
 * declarations and the out-of-line functions', without the intrinsics headers none of those
 * use: what the CPU backend compiles a GEMM's driver and its f32 micro-kernels with, each an
 * object of its own (runtime/cpu/ts-cpu-pch.c), where parsing the rest was a fifth of the
 * compile. */
#ifndef TS_CPU_LIGHT

/* ------------------------------------------------------------------------------------------ */
/* Scalar dtype conversions (names prefixed ts_cpu_ so they never clash with the host library's */
/* ts_bf16_to_f32 & co. in kernels/ts-numerics.h). Round-to-nearest-even, NaN stays NaN,         */
/* overflow -> Inf, f16 subnormals exact.                                                       */
/* ------------------------------------------------------------------------------------------ */

static inline uint32_t
ts_cpu_f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float
ts_cpu_bits_f32(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static inline float
ts_cpu_bf16_to_f32(uint16_t h)
{
  return ts_cpu_bits_f32((uint32_t)h << 16);
}

static inline uint16_t
ts_cpu_f32_to_bf16(float f)
{
  uint32_t u = ts_cpu_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x0040u); /* quiet NaN, sign and payload top bits kept */
  /* RNE: add 0x7fff plus the lsb of the kept part; a carry into the exponent is the correct
   * rounding up (and overflows to Inf at the top). */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float
ts_cpu_f16_to_f32(uint16_t h)
{
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) /* Inf / NaN: payload shifted into the f32 mantissa */
    return ts_cpu_bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp != 0) /* normal: rebias 15 -> 127 */
    return ts_cpu_bits_f32(sign | ((exp + 112u) << 23) | (man << 13));
  /* zero / subnormal: man * 2^-24 is exact in f32 */
  float v = (float)man * 0x1p-24f;
  return sign ? -v : v;
}

/* fp8 (OCP): e4m3 (bias 7, NaN only S.1111.111, no Inf) and e5m2 (bias 15, IEEE-like). A
 * normal value's exponent and mantissa bits sit where f32's go, rebiased by an integer add;
 * a subnormal is its mantissa times the smallest subnormal, a normal f32 (no DAZ hazard). */
static inline float
ts_cpu_e4m3_to_f32(uint8_t b)
{
  const uint32_t mag = b & 0x7fu, sign = (uint32_t)(b & 0x80u) << 24;
  if (mag == 0x7fu)
    return ts_cpu_bits_f32(sign | 0x7fc00000u);
  if (mag >= 0x08u)
    return ts_cpu_bits_f32(sign | ((mag << 20) + (120u << 23)));
  return ts_cpu_bits_f32(sign | ts_cpu_f32_bits((float)mag * 0x1p-9f));
}

static inline float
ts_cpu_e5m2_to_f32(uint8_t b)
{
  const uint32_t mag = b & 0x7fu, sign = (uint32_t)(b & 0x80u) << 24;
  if (mag >= 0x7cu) /* exponent all ones: Inf (mantissa 0) or NaN */
    return ts_cpu_bits_f32(sign | (mag == 0x7cu ? 0x7f800000u : 0x7fc00000u));
  if (mag >= 0x04u)
    return ts_cpu_bits_f32(sign | ((mag << 21) + (112u << 23)));
  return ts_cpu_bits_f32(sign | ts_cpu_f32_bits((float)mag * 0x1p-16f));
}

static inline uint16_t
ts_cpu_f32_to_f16(float f)
{
  uint32_t u = ts_cpu_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) /* NaN: quiet, keep top payload bits */
    return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) /* >= 65520 (half-way above 65504) rounds to Inf; Inf stays Inf */
    return (uint16_t)(sign | 0x7c00u);
  if (a >= 0x38800000u) { /* >= 2^-14: normal f16 */
    uint32_t r = a - (112u << 23);  /* rebias 127 -> 15 */
    r += 0xfffu + ((r >> 13) & 1u); /* RNE on the 13 dropped bits */
    return (uint16_t)(sign | (r >> 13));
  }
  if (a < 0x33000000u) /* < 2^-25: rounds to zero (2^-25 itself is a tie -> even = 0) */
    return sign;
  /* subnormal f16: value = m * 2^-24 with m < 1024; shift the full 24-bit significand. */
  uint32_t e = a >> 23;                   /* 102 .. 112 */
  uint32_t m = (a & 0x7fffffu) | 0x800000u; /* 1.f * 2^23 */
  uint32_t shift = 126u - e;              /* 14 .. 24 bits dropped */
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (q & 1u)))
    q++;
  return (uint16_t)(sign | q);
}

/* ------------------------------------------------------------------------------------------ */
/* Scalar exp, the same algorithm as ts_vf_exp lane by lane                                     */
/* ------------------------------------------------------------------------------------------ */

/* exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n ln2 in [-0.347, 0.347].
 * - n is rounded with the 1.5*2^23 trick (no float->int conversion: no UB on NaN, no
 *   dependence on the rounding-mode-free cvt instructions).
 * - ln2 is split Cody-Waite style (0.693359375 has 9 significant bits, so n*C1 is exact for
 *   |n| <= 2^14) which keeps r accurate with or without FMA contraction.
 * - exp(r) is a degree-6 polynomial fitted for relative error on [-0.347, 0.347]: 2e-9 before
 *   float rounding (6e-8), so the result is within ~2 ulp (measured max rel. error 1.1e-7,
 *   reported by tests/test-cpu-prims.c; the bound we test is 2e-7). It replaced the degree-7
 *   Taylor polynomial: one multiply-add fewer, 9% faster on zmm vectors (Zen 4).
 * - 2^n is applied as two factors 2^(n/2) * 2^(n - n/2): each is a normal float for
 *   n in [-159, 128], so results that underflow to subnormals round correctly and x >= 88.73
 *   reaches Inf. x is clamped to [-110, 89] first: exp(-110) < 2^-150 -> 0, exp(89) > FLT_MAX
 *   -> Inf. Comparisons with NaN are false so NaN passes the clamps and the polynomial keeps it. */
#define TS_EXP_LO -110.0f
#define TS_EXP_HI 89.0f
#define TS_EXP_LOG2E 1.44269504088896341f
#define TS_EXP_LN2 0.693147180559945309f
#define TS_EXP_C1 0.693359375f
#define TS_EXP_C2 -2.12194440e-4f
#define TS_EXP_ROUND 12582912.0f /* 1.5 * 2^23 */
#define TS_EXP_P2 4.99999940e-01f
#define TS_EXP_P3 1.66664302e-01f
#define TS_EXP_P4 4.16680053e-02f
#define TS_EXP_P5 8.37418437e-03f
#define TS_EXP_P6 1.38436130e-03f

/* x clamped, n = round(x / ln2) (and as an integer, ni), and the remainder r = x - n ln2 the
 * polynomial is evaluated at. */
static inline float
ts_exp_reduce_(float x, int32_t *ni)
{
  x = x < TS_EXP_LO ? TS_EXP_LO : x;
  x = x > TS_EXP_HI ? TS_EXP_HI : x;
  float t = x * TS_EXP_LOG2E + TS_EXP_ROUND;
  float n = t - TS_EXP_ROUND;
  *ni = (int32_t)(ts_cpu_f32_bits(t) - ts_cpu_f32_bits(TS_EXP_ROUND));
  float r = x - n * TS_EXP_C1;
  return r - n * TS_EXP_C2;
}

/* p * 2^ni as two normal factors (|ni| <= 159). */
static inline float
ts_exp_scale_(float p, int32_t ni)
{
  int32_t n1 = ni / 2;
  int32_t n2 = ni - n1;
  float s1 = ts_cpu_bits_f32((uint32_t)(n1 + 127) << 23);
  float s2 = ts_cpu_bits_f32((uint32_t)(n2 + 127) << 23);
  return p * s1 * s2;
}

static inline float
ts_exp_f32(float x)
{
  int32_t ni;
  float r = ts_exp_reduce_(x, &ni);
  float p = TS_EXP_P6;
  p = p * r + TS_EXP_P5;
  p = p * r + TS_EXP_P4;
  p = p * r + TS_EXP_P3;
  p = p * r + TS_EXP_P2;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return ts_exp_scale_(p, ni);
}

/* exp for results that are rounded to a 16-bit float (bf16: 2^-8 relative, f16: 2^-11), where
 * exp bounds the kernel (softmax's math("fast")): 2^t with t = x log2(e), n = floor(t),
 * 2^(t - n) by a degree-4 polynomial fitted for relative error on [0, 1] with p(0) = 1 (3.0e-6
 * with float coefficients), then scaled by 2^n. t is a float, not split Cody-Waite style: its
 * rounding and log2(e)'s cost under 6e-6 more for |x| <= 88, so the whole is measured within
 * 1e-5 of exp (tests/test-cpu-prims.c), a fiftieth of f16's half ulp, with half the
 * multiply-adds of ts_exp_f32.
 * - n is the floor, not the nearest integer, because vscalefps scales by 2^floor(t) itself:
 *   the AVX-512 version passes t, not n, and saves the subtraction n = t - f (with the folded
 *   low part below, the two were 15% of a bf16 softmax on a Zen 4 core).
 * - t is clamped to [-160, 129], integers, where 2^t is 0 and Inf: ±Inf, huge values and NaN
 *   need no special case, and n fits the scale's integer arithmetic.
 * - On AVX-512 (DQ) the vector version takes t - n from one vreduceps and scales with
 *   vscalefps, which need no clamp (vreduceps gives 0 for ±Inf, vscalefps saturates): the
 *   clamp's min and max were a sixth of the time on a Zen 4 core. Both give the same bits:
 *   out of range the polynomial's value does not matter, 2^n decides.
 * - The coefficients come scaled by a factor c (TsExp2Poly_), 1 except in exp(x - m) below. */
#define TS_EXP2_LO -160.0f
#define TS_EXP2_HI 129.0f
#define TS_EXP2_Q1 6.930446625e-01f
#define TS_EXP2_Q2 2.412810326e-01f
#define TS_EXP2_Q3 5.224115774e-02f
#define TS_EXP2_Q4 1.342733763e-02f

/* c * 2^f for f in [0, 1): the polynomial's coefficients times c */
typedef struct {
  float q0, q1, q2, q3, q4;
} TsExp2Poly_;

static inline TsExp2Poly_
ts_exp2_poly_(float c)
{
  return (TsExp2Poly_){c, c * TS_EXP2_Q1, c * TS_EXP2_Q2, c * TS_EXP2_Q3, c * TS_EXP2_Q4};
}

/* Horner's rule for a float or a ts_vf f (the same operations, so the same bits, in both) */
#define TS_EXP2_POLY_(q, f) ((((q).q4 * (f) + (q).q3) * (f) + (q).q2) * (f) + (q).q1) * (f) + (q).q0

/* m log2(e) as a float mh and the low part left over (exact with FMA), for exp(x - m) */
static inline float
ts_exp_split_(float m, float *ml)
{
  const float mh = m * TS_EXP_LOG2E;
  *ml = __builtin_fmaf(m, TS_EXP_LOG2E, -mh);
  return mh;
}

/* How f = t - floor(t) is rounded where it is not exact: for t in (-1, 0) the difference can
 * need more bits than a float has (t = -2^-30: 1 - 2^-30). With AVX-512DQ the vector exp takes
 * f from one vreduceps, which rounds it down, and every other width and the scalar code round
 * it down too (a fix-up of four operations), so that all give the same bits. Elsewhere f is
 * the plain difference, rounded to nearest, at every width: the fix-up was a fifth of the
 * fast exp's operations, and a 4096^2 16-bit softmax with math("fast") on one Zen 3 core ran
 * 1.2x faster without it. The two roundings differ by one ulp of f, in a few t of (-0.5, 0),
 * far below the polynomial's error; a kernel gives the same bits at every width on a machine,
 * not the same bits on machines with and without AVX-512DQ. */
#ifdef __AVX512DQ__
#define TS_EXP2_FRAC_DOWN_ 1
#else
#define TS_EXP2_FRAC_DOWN_ 0
#endif

/* t - n for n = floor(t), rounded as TS_EXP2_FRAC_DOWN_ says. Rounded down: the error of the
 * rounded difference is exact (Fast2Sum: |n| >= |t| there; for t >= 0 there is none). */
static inline float
ts_exp2_frac_(float t, float n)
{
  float f = t - n;
#if TS_EXP2_FRAC_DOWN_
  if (t - (f + n) < 0.0f)
    f = ts_cpu_bits_f32(ts_cpu_f32_bits(f) - 1u);
#endif
  return f;
}

/* c * 2^t, the part ts_exp_fast_f32 and ts_exp_fast_sub_f32 share */
static inline float
ts_exp2_fast_(float t, TsExp2Poly_ q)
{
  t = t < TS_EXP2_LO ? TS_EXP2_LO : t;
  t = t > TS_EXP2_HI ? TS_EXP2_HI : t;
  const float u = t + TS_EXP_ROUND;
  float n = u - TS_EXP_ROUND;
  int32_t ni = (int32_t)(ts_cpu_f32_bits(u) - ts_cpu_f32_bits(TS_EXP_ROUND));
  if (n > t) { /* rounded up: the floor is one less */
    n -= 1.0f;
    ni -= 1;
  }
  return ts_exp_scale_(TS_EXP2_POLY_(q, ts_exp2_frac_(t, n)), ni);
}

static inline float
ts_exp_fast_f32(float x)
{
  return ts_exp2_fast_(x * TS_EXP_LOG2E, ts_exp2_poly_(1.0f));
}

/* exp(x - m) for softmax, where the row's max m is the same for a whole row: with FMA,
 * t = x log2(e) - m log2(e) is one multiply-add less the low part ml of m log2(e), so t is as
 * accurate as (x - m) log2(e) for any m, large logits included, and the subtraction x - m
 * costs nothing. The low part is not subtracted from every t either: 2^(t' - ml) is
 * 2^t' * 2^-ml, and 2^-ml, once per row, scales the polynomial's coefficients. That holds
 * while |ml| <= 1 (|m| up to about 2^24), where 2^-ml is within [1/2, 2] and the clamps of t'
 * keep their meaning; beyond, t' - ml is computed as before (sub = ml).
 * The row's constants are a TsExpSub, made once per row by ts_exp_sub_row (generated code
 * declares one ahead of a row's loop: the compiler does not hoist the branches of its exp). */
typedef struct {
  float m, nmh, sub; /* m; -m log2(e) rounded; what is left to subtract from each t (or 0) */
  TsExp2Poly_ q;
} TsExpSub;

static inline TsExpSub
ts_exp_sub_row(float m)
{
  float ml;
  const float mh = ts_exp_split_(m, &ml);
  TsExpSub s = {m, -mh, 0.0f, ts_exp2_poly_(1.0f)};
  if (__builtin_fabsf(ml) <= 1.0f)
    s.q = ts_exp2_poly_(ts_exp_f32(-ml * TS_EXP_LN2));
  else /* also NaN */
    s.sub = ml;
  return s;
}

/* exp(x - m) = c 2^t for the m of s: t, and in *q the coefficients for it */
static inline float
ts_exp_sub_arg_f32_(float x, TsExpSub s, TsExp2Poly_ *q)
{
#ifdef __FMA__
  *q = s.q;
  return __builtin_fmaf(x, TS_EXP_LOG2E, s.nmh) - s.sub;
#else
  *q = ts_exp2_poly_(1.0f);
  return (x - s.m) * TS_EXP_LOG2E;
#endif
}

static inline float
ts_exp_fast_sub_row_f32(float x, TsExpSub s)
{
  TsExp2Poly_ q;
  const float t = ts_exp_sub_arg_f32_(x, s, &q);
  return ts_exp2_fast_(t, q);
}

static inline float
ts_exp_fast_sub_f32(float x, float m)
{
  return ts_exp_fast_sub_row_f32(x, ts_exp_sub_row(m));
}

/* exp(x - m) for a softmax whose output is f16: m is the row's max (x - m <= 86 is required)
 * and the result is multiplied by 1 / (the row's sum of these exps, 1 or more within the
 * polynomial's error: exp(0) is among them) before it is rounded to f16. Then t = (x - m)
 * log2(e) can be taken no lower than -100 (exp(x - m) read as about 2^-100 where it is
 * smaller, -Inf logits included): f16 rounds any result below 2^-25 to 0, so the output's bits
 * do not change, and the row's sum grows by at most N 2^-100.
 * In return the vector version has no branch on the range of t (on a Zen 3 core the check
 * and its branch were a tenth of the exp), and results stay normal floats, so no product of
 * them meets a subnormal. NaN stays NaN; the same bits as ts_exp_fast_sub_row_f32 for
 * t >= -100. */
#define TS_EXP_H_LO_ -100.0f

static inline float
ts_exp_fast_sub_row_h_f32(float x, TsExpSub s)
{
  TsExp2Poly_ q;
  const float t = ts_exp_sub_arg_f32_(x, s, &q);
  return ts_exp2_fast_(TS_EXP_H_LO_ > t ? TS_EXP_H_LO_ : t, q);
}

static inline float
ts_exp_fast_sub_h_f32(float x, float m)
{
  return ts_exp_fast_sub_row_h_f32(x, ts_exp_sub_row(m));
}

#endif /* TS_CPU_LIGHT */

/* ------------------------------------------------------------------------------------------ */
/* GEMM micro-kernel                                                                            */
/* ------------------------------------------------------------------------------------------ */

/* TS_DEFINE_UKR_F32(name, MR, NR, V, UNROLL) defines
 *   static void name(int64_t kc, const float *restrict Ap, const float *restrict Bp,
 *                    float *restrict C, int64_t ldc, int accumulate, int64_t mr, int64_t nr);
 * C[0..mr) x [0..nr) (row-major, row stride ldc) = (accumulate ? C : 0) + Ap * Bp, where Ap is one
 * packed MR-row panel (Ap[k*MR + i], from ts_pack_a_panel_*) and Bp one packed NR-column panel
 * (Bp[k*NR + j], from ts_pack_b_panel_*), both kc deep. Bp must be aligned to V floats (packed
 * buffers from ts_cpu_alloc are, since NR % V == 0); Ap and C need no alignment.
 *
 * Shape: the MR x NR tile lives in MR * NR/V vector accumulators for the whole k loop; each k
 * step loads NR/V vectors of B, broadcasts MR scalars of A and issues MR * NR/V FMAs. On AVX2
 * (16 ymm registers) the accumulators + NR/V B vectors + 1 broadcast must fit in 16: 6x16 uses
 * 12 + 2 + 1 = 15 and does 12 FMAs per 2 loads + 6 broadcasts, enough to keep Zen 3's two FMA
 * pipes (4-cycle latency -> 8 independent chains needed, we have 12) busy. 4x24 (12+3+1) and
 * 8x8 (8+1+1) also fit; 8x16 (16 acc) and 6x32 spill and are left for the tuner to find slow.
 * AVX-512 has 32 zmm registers of 16 floats: 14x32 with V = 16 keeps 28 accumulators + 2 B
 * vectors + 1 broadcast, 28 FMAs per 2 loads; 12x32 and 8x48 (24 + 3 + 1) fit too.
 *
 * Edges (mr < MR or nr < NR) compute the full tile into a local buffer and copy the valid part;
 * the packed panels are zero-padded so the extra lanes are harmless. */
/* A micro-kernel is static to the kernel that instantiates it, unless a translation unit of
 * its own defines it once for many kernels (the backend caches them: runtime/cpu/ts-cpu-pch.c);
 * that unit redefines TS_UKR_LINKAGE, and the kernels declare it with TS_DECLARE_UKR_*. */
#ifndef TS_UKR_LINKAGE
#define TS_UKR_LINKAGE __attribute__((unused)) static
#endif
#define TS_UKR_SHARED_ __attribute__((visibility("hidden")))

/* The f32 micro-kernels' parameters, packed or _RA. */
#define TS_UKR_F32_PARAMS_                                                                     \
  (int64_t kc, const float *restrict Ap, const float *restrict Bp, float *restrict C,           \
   int64_t ldc, int accumulate, int64_t mr, int64_t nr)

#define TS_DECLARE_UKR_F32(name, MR_, NR_, V_, UNROLL_) TS_DECLARE_UKR_F32_SLOT(name)
/* The declaration alone, without the tile: the CPU backend's shared drivers call their
 * micro-kernels under slot names (runtime/cpu/ts-cpu-pch.c), whatever the tile. */
#define TS_DECLARE_UKR_F32_SLOT(name) TS_UKR_SHARED_ void name TS_UKR_F32_PARAMS_
/* The bf16 dot-product micro-kernels' (TS_DEFINE_UKR_BF16DOT, below) over K-pair panels. */
#define TS_DECLARE_UKR_BF16DOT_SLOT(name)                                                       \
  TS_UKR_SHARED_ void name(int64_t kc, const uint16_t *restrict Ap2,                          \
                           const uint16_t *restrict Bp2, float *restrict C, int64_t ldc,       \
                           int accumulate, int64_t mr, int64_t nr)

#ifndef TS_UKR_PREFETCH_C
#define TS_UKR_PREFETCH_C 1 /* touch the C tile's lines before the k loop so the stores hit */
#endif

/* A partial tile's edge: the mr x nr corner of the full tile t (row stride NR) into C. A call
 * of its own, compiled small, for a path a few tiles a row take: inlined into each
 * micro-kernel, specialized to its tile and vectorized, it cost more to compile (cold, the
 * micro-kernels compiled 3-16% faster: 14x32, 6x32, 14x16 at V 16, interleaved runs). */
__attribute__((noinline, cold, unused)) static void
ts_ukr_store_edge_(const float *t, int64_t NR, float *restrict C, int64_t ldc, int accumulate,
                   int64_t mr, int64_t nr)
{
  for (int64_t i = 0; i < mr; i++)
    for (int64_t j = 0; j < nr; j++)
      C[i * ldc + j] = accumulate ? C[i * ldc + j] + t[i * NR + j] : t[i * NR + j];
}

/* GCC tuning for AMD's Zen (what -march=native picks there) folds a k step's B loads into the
 * FMAs that use them, loading each B vector once per row of the tile: with MR = 4 that took 16
 * loads per 12 FMAs, and 4x16 and 4x24 ran at 0.66 and 0.74 of 6x16's rate on Zen 3 (in L1,
 * one core). An empty asm that says it may change the vector keeps it in a register: 1.0 and
 * 0.93. A tile that spills anyway is left alone (4x32 ran 6% slower pinned). Intel tunings do
 * not fold; there the pin changes only which registers hold what. */
#if defined(__AVX512F__)
#define TS_UKR_VREGS_ 32
#else
#define TS_UKR_VREGS_ 16
#endif
/* Pinned only at a width the machine has registers for (V expands to 4, 8 or 16): an emulated
 * vector has no register to stay in. */
#define TS_UKR_PIN_CAT_(a, b) a##b
#define TS_UKR_PIN_(V_, v) TS_UKR_PIN_CAT_(TS_UKR_PIN_V, V_)(v)
#define TS_UKR_PIN_NONE_(v) ((void)0)
#if defined(__x86_64__) || defined(__i386__)
#define TS_UKR_PIN_V4(v) __asm__("" : "+v"(v))
#else
#define TS_UKR_PIN_V4 TS_UKR_PIN_NONE_
#endif
#if defined(__AVX__)
#define TS_UKR_PIN_V8 TS_UKR_PIN_V4
#else
#define TS_UKR_PIN_V8 TS_UKR_PIN_NONE_
#endif
#if defined(__AVX512F__)
#define TS_UKR_PIN_V16 TS_UKR_PIN_V4
#else
#define TS_UKR_PIN_V16 TS_UKR_PIN_NONE_
#endif

/* A k step: row i of the A column at Ap_[i * ars_] (1 in a packed panel). */
#define TS_UKR_STEP_(MR_, NR_, V_, vt_, acc_, Ap_, ars_, Bp_)                                    \
  do {                                                                                         \
    vt_ b_[(NR_) / (V_)];                                                                      \
    _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / (V_); j_++) b_[j_] =                 \
        *(const vt_ *)((Bp_) + j_ * (V_));                                                     \
    if ((MR_) * (NR_) / (V_) + (NR_) / (V_) + 1 <= TS_UKR_VREGS_)                              \
      _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / (V_); j_++) TS_UKR_PIN_(V_, b_[j_]); \
    _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                                \
    {                                                                                          \
      vt_ a_ = -(vt_){0} + (Ap_)[i_ * (ars_)]; /* -0 + x == x: folds to a broadcast */          \
      _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / (V_); j_++) acc_[i_][j_] +=        \
          a_ * b_[j_];                                                                         \
    }                                                                                          \
  } while (0)

/* The micro-kernel's body: A's row i at k is Ap[i * ars_ + k * acs_]. */
#define TS_UKR_F32_BODY_(MR_, NR_, V_, UNROLL_, ars_, acs_)                                     \
  {                                                                                            \
    typedef float vt_ __attribute__((vector_size((V_) * sizeof(float))));                      \
    typedef float vtu_ __attribute__((vector_size((V_) * sizeof(float)), aligned(4)));          \
    vt_ acc_[MR_][(NR_) / (V_)];                                                               \
    _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                                \
    {                                                                                          \
      _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / (V_); j_++) acc_[i_][j_] =         \
          (vt_){0};                                                                            \
    }                                                                                          \
    if (TS_UKR_PREFETCH_C && mr == (MR_) && nr == (NR_)) {                                     \
      _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                              \
      {                                                                                        \
        __builtin_prefetch(C + i_ * ldc, 1, 3);                                                \
        __builtin_prefetch(C + i_ * ldc + (NR_) - 1, 1, 3);                                    \
      }                                                                                        \
    }                                                                                          \
    int64_t k_ = 0;                                                                            \
    for (; k_ + (UNROLL_) <= kc; k_ += (UNROLL_)) {                                            \
      _Pragma("GCC unroll 16") for (int u_ = 0; u_ < (UNROLL_); u_++)                          \
          TS_UKR_STEP_(MR_, NR_, V_, vt_, acc_, Ap + (k_ + u_) * (acs_), ars_,                 \
                       Bp + (k_ + u_) * (NR_));                                                \
    }                                                                                          \
    for (; k_ < kc; k_++)                                                                      \
      TS_UKR_STEP_(MR_, NR_, V_, vt_, acc_, Ap + k_ * (acs_), ars_, Bp + k_ * (NR_));         \
    if (mr == (MR_) && nr == (NR_)) {                                                          \
      _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                              \
      {                                                                                        \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / (V_); j_++)                      \
        {                                                                                      \
          vtu_ *c_ = (vtu_ *)(C + i_ * ldc + j_ * (V_));                                       \
          *c_ = accumulate ? *c_ + acc_[i_][j_] : acc_[i_][j_];                                \
        }                                                                                      \
      }                                                                                        \
    } else {                                                                                   \
      float t_[(MR_) * (NR_)];                                                                 \
      memcpy(t_, acc_, sizeof t_);                                                             \
      ts_ukr_store_edge_(t_, (NR_), C, ldc, accumulate, mr, nr);                               \
    }                                                                                          \
  }

#define TS_UKR_F32_ASSERTS_(name, MR_, NR_, V_, UNROLL_)                                       \
  _Static_assert((NR_) % (V_) == 0, #name ": NR must be a multiple of V");                   \
  _Static_assert((MR_) > 0 && (UNROLL_) > 0, #name ": MR and UNROLL must be positive")

#define TS_DEFINE_UKR_F32(name, MR_, NR_, V_, UNROLL_)                                           \
  TS_UKR_F32_ASSERTS_(name, MR_, NR_, V_, UNROLL_);                                            \
  TS_UKR_LINKAGE void name TS_UKR_F32_PARAMS_                                                  \
  TS_UKR_F32_BODY_(MR_, NR_, V_, UNROLL_, 1, (MR_))                                            \
  _Static_assert(1, "swallow the semicolon")

/* The same with A read in place: a row-major f32 matrix whose row stride LDA_ is a constant
 * (attention's probabilities, row by row as the softmax leaves them), not a packed panel. All
 * MR rows are read, the results of those past mr dropped. */
#define TS_DECLARE_UKR_F32_RA(name, MR_, NR_, V_, UNROLL_, LDA_)                                 \
  TS_DECLARE_UKR_F32(name, MR_, NR_, V_, UNROLL_)
#define TS_DEFINE_UKR_F32_RA(name, MR_, NR_, V_, UNROLL_, LDA_)                                  \
  TS_UKR_F32_ASSERTS_(name, MR_, NR_, V_, UNROLL_);                                            \
  TS_UKR_LINKAGE void name TS_UKR_F32_PARAMS_                                                  \
  TS_UKR_F32_BODY_(MR_, NR_, V_, UNROLL_, (LDA_), 1)                                           \
  _Static_assert(1, "swallow the semicolon")

#ifndef TS_CPU_LIGHT
/* ------------------------------------------------------------------------------------------ */
/* bf16 GEMM on the dot-product instruction (AVX512_BF16: vdpbf16ps)                            */
/* ------------------------------------------------------------------------------------------ */

/* vdpbf16ps multiplies the bf16 pairs of two registers and adds both products of each pair to
 * an f32 lane: 32 multiply-adds a zmm instruction, twice the f32 FMA's, and no conversion of
 * the inputs at all. The operands are therefore packed in pairs along K: an A panel as
 * Ap2[kp*MR*2 + i*2 + (k & 1)] (row i's elements k = 2kp and 2kp + 1 side by side, so one
 * 32-bit broadcast feeds a row), a B panel as Bp2[kp*NR*2 + j*2 + (k & 1)] (one zmm holds 16
 * columns' pairs). An odd K is padded with a zero element, as are rows and columns past the
 * edge. The products are exact in f32 and accumulate in f32; the instruction flushes
 * subnormal inputs and results to zero and rounds to nearest even. */
#define TS_KPAIRS(kc) (((kc) + 1) / 2)

static inline void
ts_pack_a_panel_bf16x2(const uint16_t *A, int64_t lda, int64_t mr_valid, int64_t kc, int64_t MR,
                       uint16_t *restrict Ap2)
{
  for (int64_t kp = 0; kp < TS_KPAIRS(kc); kp++) {
    int64_t k = 2 * kp;
    for (int64_t i = 0; i < MR; i++) {
      uint16_t *dst = Ap2 + (kp * MR + i) * 2;
      dst[0] = i < mr_valid ? A[i * lda + k] : 0;
      dst[1] = i < mr_valid && k + 1 < kc ? A[i * lda + k + 1] : 0;
    }
  }
}

static inline void
ts_pack_b_panel_bf16x2(const uint16_t *B, int64_t ldb, int64_t kc, int64_t nr_valid, int64_t NR,
                       uint16_t *restrict Bp2)
{
#ifdef __AVX512BW__
  /* Two rows' 32 columns interleaved into 32 pairs by two word permutes. */
  static const uint16_t lo_[32] __attribute__((aligned(64))) = {
    0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  static const uint16_t hi_[32] __attribute__((aligned(64))) = {
    16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
    24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i lo = _mm512_load_si512((const void *)lo_), hi = _mm512_load_si512((const void *)hi_);
#endif
  for (int64_t kp = 0; kp < TS_KPAIRS(kc); kp++) {
    int64_t k = 2 * kp;
    const uint16_t *r0 = B + k * ldb, *r1 = k + 1 < kc ? B + (k + 1) * ldb : NULL;
    uint16_t *dst = Bp2 + kp * NR * 2;
    int64_t j = 0;
#ifdef __AVX512BW__
    for (; j + 32 <= nr_valid; j += 32) {
      __m512i x = _mm512_loadu_si512((const void *)(r0 + j));
      __m512i y = r1 ? _mm512_loadu_si512((const void *)(r1 + j)) : _mm512_setzero_si512();
      _mm512_storeu_si512((void *)(dst + 2 * j), _mm512_permutex2var_epi16(x, lo, y));
      _mm512_storeu_si512((void *)(dst + 2 * j + 32), _mm512_permutex2var_epi16(x, hi, y));
    }
#endif
    for (; j < nr_valid; j++) {
      dst[2 * j] = r0[j];
      dst[2 * j + 1] = r1 ? r1[j] : 0;
    }
    memset(dst + 2 * nr_valid, 0, (size_t)(NR - nr_valid) * 2 * sizeof(uint16_t));
  }
}

/* Blocks of pair-packed panels, laid out as the f32 ones are (panel p at p * MR or NR columns
 * of 2 * TS_KPAIRS(kc) elements): what the gemm lowering's dot("bf16") packs. */
static inline void
ts_pack_a_block_bf16x2(const uint16_t *A, int64_t lda, int64_t mc, int64_t kc, int64_t MR,
                       uint16_t *restrict Ap2)
{
  for (int64_t i = 0; i < mc; i += MR)
    ts_pack_a_panel_bf16x2(A + i * lda, lda, mc - i < MR ? mc - i : MR, kc, MR,
                           Ap2 + i * 2 * TS_KPAIRS(kc));
}

static inline void
ts_pack_b_block_bf16x2(const uint16_t *B, int64_t ldb, int64_t kc, int64_t nc, int64_t NR,
                       uint16_t *restrict Bp2)
{
  for (int64_t j = 0; j < nc; j += NR)
    ts_pack_b_panel_bf16x2(B + j, ldb, kc, nc - j < NR ? nc - j : NR, NR,
                           Bp2 + j * 2 * TS_KPAIRS(kc));
}

#ifdef __AVX512BF16__
/* TS_DEFINE_UKR_BF16DOT(name, MR, NR, UNROLL) defines
 *   static void name(int64_t kc, const uint16_t *restrict Ap2, const uint16_t *restrict Bp2,
 *                    float *restrict C, int64_t ldc, int accumulate, int64_t mr, int64_t nr);
 * as TS_DEFINE_UKR_F32's, over pair-packed bf16 panels (ts_pack_*_panel_bf16x2), kc the depth in
 * elements. NR is a multiple of 16; Bp2 is 64-byte aligned (ts_cpu_alloc'd, NR*4 bytes a pair
 * row). 14x32 keeps 28 zmm accumulators + 2 B registers + 1 broadcast. */
#define TS_UKR_BF16DOT_STEP_(MR_, NR_, acc_, Ap2_, Bp2_)                                          \
  do {                                                                                         \
    __m512bh b_[(NR_) / 16];                                                                   \
    _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / 16; j_++) b_[j_] =                   \
        (__m512bh)_mm512_load_si512((const void *)((Bp2_) + j_ * 32));                         \
    _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                                \
    {                                                                                          \
      int32_t pair_;                                                                           \
      memcpy(&pair_, (Ap2_) + i_ * 2, sizeof pair_);                                           \
      __m512bh a_ = (__m512bh)_mm512_set1_epi32(pair_);                                        \
      _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / 16; j_++) acc_[i_][j_] =           \
          _mm512_dpbf16_ps(acc_[i_][j_], a_, b_[j_]);                                          \
    }                                                                                          \
  } while (0)

#define TS_DECLARE_UKR_BF16DOT(name, MR_, NR_, UNROLL_) TS_DECLARE_UKR_BF16DOT_SLOT(name)

#define TS_DEFINE_UKR_BF16DOT(name, MR_, NR_, UNROLL_)                                           \
  _Static_assert((NR_) % 16 == 0, #name ": NR must be a multiple of 16");                    \
  _Static_assert((MR_) > 0 && (UNROLL_) > 0, #name ": MR and UNROLL must be positive");      \
  TS_UKR_LINKAGE void name(int64_t kc, const uint16_t *restrict Ap2,                          \
                           const uint16_t *restrict Bp2, float *restrict C, int64_t ldc,       \
                           int accumulate, int64_t mr, int64_t nr)                             \
  {                                                                                            \
    __m512 acc_[MR_][(NR_) / 16];                                                              \
    _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                                \
    {                                                                                          \
      _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / 16; j_++) acc_[i_][j_] =           \
          _mm512_setzero_ps();                                                                 \
    }                                                                                          \
    const int64_t kp_n_ = TS_KPAIRS(kc);                                                       \
    int64_t kp_ = 0;                                                                           \
    for (; kp_ + (UNROLL_) <= kp_n_; kp_ += (UNROLL_)) {                                       \
      _Pragma("GCC unroll 16") for (int u_ = 0; u_ < (UNROLL_); u_++)                          \
          TS_UKR_BF16DOT_STEP_(MR_, NR_, acc_, Ap2 + (kp_ + u_) * (MR_) * 2,                   \
                               Bp2 + (kp_ + u_) * (NR_) * 2);                                  \
    }                                                                                          \
    for (; kp_ < kp_n_; kp_++)                                                                 \
      TS_UKR_BF16DOT_STEP_(MR_, NR_, acc_, Ap2 + kp_ * (MR_) * 2, Bp2 + kp_ * (NR_) * 2);      \
    if (mr == (MR_) && nr == (NR_)) {                                                          \
      _Pragma("GCC unroll 16") for (int i_ = 0; i_ < (MR_); i_++)                              \
      {                                                                                        \
        _Pragma("GCC unroll 8") for (int j_ = 0; j_ < (NR_) / 16; j_++)                        \
        {                                                                                      \
          float *c_ = C + i_ * ldc + j_ * 16;                                                  \
          _mm512_storeu_ps(c_, accumulate ? _mm512_add_ps(_mm512_loadu_ps(c_), acc_[i_][j_])   \
                                          : acc_[i_][j_]);                                     \
        }                                                                                      \
      }                                                                                        \
    } else {                                                                                   \
      float t_[(MR_) * (NR_)];                                                                 \
      memcpy(t_, acc_, sizeof t_);                                                             \
      ts_ukr_store_edge_(t_, (NR_), C, ldc, accumulate, mr, nr);                               \
    }                                                                                          \
  }                                                                                            \
  _Static_assert(1, "swallow the semicolon")
#endif /* __AVX512BF16__ */

/* ------------------------------------------------------------------------------------------ */
/* bf16 GEMM on AMX tiles (AMX-TILE, AMX-BF16: tdpbf16ps)                                      */
/* ------------------------------------------------------------------------------------------ */

/* AMX adds eight tile registers of up to 16 rows x 64 bytes and tdpbf16ps, which multiplies a
 * 16x32 bf16 tile of A by a 32x16 tile of B held as 16 rows of K-pairs (the vdpbf16ps layout:
 * row kp holds columns' (2kp, 2kp+1) pairs side by side) into a 16x16 f32 tile: 8192
 * multiply-adds an instruction, f32 accumulation, subnormals flushed as vdpbf16ps does. Every
 * tile here is 16 x 64 bytes, so one configuration serves every micro-tile shape.
 *
 * Layouts (depth rounded up to whole 32-element K steps, zero-padded, as are rows and columns
 * past the edge):
 *   A panel of MR rows:  Ap[(kb*MR + i)*32 + kk] = A[i][32kb + kk], so the 16x32 tile of rows
 *                        16r.. of step kb is 1 KiB of consecutive memory (row stride 64 bytes);
 *   B panel of NR cols:  the K-pair layout of ts_pack_b_panel_bf16x2 over the padded depth;
 *                        the tile of columns 16c.. of step kb has rows of NR*4 bytes.
 * Linux hands out the 8 KiB of tile state only to a process that asks for it
 * (arch_prctl(ARCH_REQ_XCOMP_PERM)); the host check that offers dot("amx") asks the kernel
 * whether it supports the state at all (ARCH_GET_XCOMP_SUPP). */
#define TS_AMX_DEPTH(kc) (((kc) + 31) / 32 * 32)
#define TS_PRAGMA_(x) _Pragma(#x)

static inline void
ts_pack_a_block_amx(const uint16_t *A, int64_t lda, int64_t mc, int64_t kc, int64_t MR,
                    uint16_t *restrict Ap)
{
  const int64_t depth = TS_AMX_DEPTH(kc);
  for (int64_t p = 0; p < mc; p += MR) {
    uint16_t *panel = Ap + p * depth;
    for (int64_t kb = 0; kb < depth / 32; kb++) {
      const int64_t k0 = kb * 32, n = kc - k0 < 32 ? kc - k0 : 32;
      for (int64_t i = 0; i < MR; i++) {
        uint16_t *dst = panel + (kb * MR + i) * 32;
        if (p + i < mc && n == 32) {
          memcpy(dst, A + (p + i) * lda + k0, 64); /* one zmm move */
        } else if (p + i < mc) {
          memcpy(dst, A + (p + i) * lda + k0, (size_t)n * sizeof(uint16_t));
          memset(dst + n, 0, (size_t)(32 - n) * sizeof(uint16_t));
        } else {
          memset(dst, 0, 32 * sizeof(uint16_t));
        }
      }
    }
  }
}

static inline void
ts_pack_b_block_amx(const uint16_t *B, int64_t ldb, int64_t kc, int64_t nc, int64_t NR,
                    uint16_t *restrict Bp)
{
  const int64_t depth = TS_AMX_DEPTH(kc);
  for (int64_t j = 0; j < nc; j += NR) {
    uint16_t *panel = Bp + j * depth;
    ts_pack_b_panel_bf16x2(B + j, ldb, kc, nc - j < NR ? nc - j : NR, NR, panel);
    /* The pairs past kc, to the next whole step. */
    memset(panel + TS_KPAIRS(kc) * NR * 2, 0,
           (size_t)(depth / 2 - TS_KPAIRS(kc)) * (size_t)NR * 2 * sizeof(uint16_t));
  }
}

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
} ts_amx_config_t;

static int ts_amx_permitted_;

/* Before a worker's first tile instruction (the kernel calls it at the start of each parallel
 * region): the process's permission (once: two threads asking at the same time is harmless)
 * and the thread's tile configuration, eight 16 x 64-byte tiles. */
static inline void
ts_amx_begin(void)
{
  if (!__atomic_load_n(&ts_amx_permitted_, __ATOMIC_ACQUIRE)) {
    syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */);
    __atomic_store_n(&ts_amx_permitted_, 1, __ATOMIC_RELEASE);
  }
  ts_amx_config_t cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.palette = 1;
  for (int t = 0; t < 8; t++) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

/* After a worker's last tile instruction of a kernel: the tile state goes back to its init
 * state, so context switches stop saving 8 KiB for it. */
static inline void
ts_amx_end(void)
{
  _tile_release();
}

/* The shapes: tile registers for C, then A, then B — MR/16 * NR/16 + MR/16 + NR/16 <= 8.
 * Each list names (i, j, C tile, A tile, B tile) per 16x16 block of C, the A tiles as (i, A
 * tile) and the B tiles as (j, B tile); the tile numbers are instruction operands, hence
 * literals. */
#define TS_AMX_C_16x16(X) X(0, 0, 0, 1, 2)
#define TS_AMX_A_16x16(X) X(0, 1)
#define TS_AMX_B_16x16(X) X(0, 2)
#define TS_AMX_C_16x32(X) X(0, 0, 0, 2, 3) X(0, 1, 1, 2, 4)
#define TS_AMX_A_16x32(X) X(0, 2)
#define TS_AMX_B_16x32(X) X(0, 3) X(1, 4)
#define TS_AMX_C_32x16(X) X(0, 0, 0, 2, 4) X(1, 0, 1, 3, 4)
#define TS_AMX_A_32x16(X) X(0, 2) X(1, 3)
#define TS_AMX_B_32x16(X) X(0, 4)
#define TS_AMX_C_32x32(X) X(0, 0, 0, 4, 6) X(0, 1, 1, 4, 7) X(1, 0, 2, 5, 6) X(1, 1, 3, 5, 7)
#define TS_AMX_A_32x32(X) X(0, 4) X(1, 5)
#define TS_AMX_B_32x32(X) X(0, 6) X(1, 7)
#define TS_AMX_C_16x48(X) X(0, 0, 0, 3, 4) X(0, 1, 1, 3, 5) X(0, 2, 2, 3, 6)
#define TS_AMX_A_16x48(X) X(0, 3)
#define TS_AMX_B_16x48(X) X(0, 4) X(1, 5) X(2, 6)
#define TS_AMX_C_48x16(X) X(0, 0, 0, 3, 6) X(1, 0, 1, 4, 6) X(2, 0, 2, 5, 6)
#define TS_AMX_A_48x16(X) X(0, 3) X(1, 4) X(2, 5)
#define TS_AMX_B_48x16(X) X(0, 6)

#define TS_AMX_LOAD_C_(i, j, c, a, b) _tile_loadd(c, cd_ + (i) * 16 * ld_ + (j) * 16, ld_ * 4);
#define TS_AMX_ZERO_C_(i, j, c, a, b) _tile_zero(c);
#define TS_AMX_STORE_C_(i, j, c, a, b) _tile_stored(c, cd_ + (i) * 16 * ld_ + (j) * 16, ld_ * 4);
#define TS_AMX_DOT_(i, j, c, a, b) _tile_dpbf16ps(c, a, b);
#define TS_AMX_LOAD_A_(i, a) _tile_loadd(a, ak_ + (i) * 16 * 32, 64);
#define TS_AMX_LOAD_B_(j, b) _tile_loadd(b, bk_ + (j) * 32, nr4_);

/* TS_DEFINE_UKR_AMX(name, MR, NR, UNROLL) defines, with the signature of
 * TS_DEFINE_UKR_BF16DOT's, C[0:mr, 0:nr] (+)= Ap · Bp over AMX-packed panels
 * (ts_pack_*_block_amx), kc the depth in elements; MRxNR one of 16x16, 16x32, 32x16, 32x32,
 * 16x48, 48x16, called between the worker's ts_amx_begin and ts_amx_end. A whole tile loads
 * and stores C in place; an edge computes into a local tile
 * and adds its valid corner. */
#define TS_DEFINE_UKR_AMX(name, MR_, NR_, UNROLL_)                                              \
  __attribute__((unused)) static void name(int64_t kc, const uint16_t *restrict Ap,           \
                                           const uint16_t *restrict Bp, float *restrict C,    \
                                           int64_t ldc, int accumulate, int64_t mr, int64_t nr) \
  {                                                                                            \
    float edge_[(MR_) * (NR_)] __attribute__((aligned(64)));                                   \
    const int whole_ = mr == (MR_) && nr == (NR_);                                             \
    float *cd_ = whole_ ? C : edge_;                                                           \
    const int64_t ld_ = whole_ ? ldc : (NR_);                                                  \
    const int64_t nr4_ = (NR_) * 4;                                                            \
    if (whole_ && accumulate) {                                                                \
      TS_AMX_C_##MR_##x##NR_(TS_AMX_LOAD_C_)                                                   \
    } else {                                                                                   \
      TS_AMX_C_##MR_##x##NR_(TS_AMX_ZERO_C_)                                                   \
    }                                                                                          \
    const int64_t steps_ = TS_AMX_DEPTH(kc) / 32;                                              \
    TS_PRAGMA_(GCC unroll UNROLL_) for (int64_t kb_ = 0; kb_ < steps_; kb_++)                  \
    {                                                                                          \
      const uint16_t *ak_ = Ap + kb_ * (MR_) * 32;                                             \
      const uint16_t *bk_ = Bp + kb_ * 16 * (NR_) * 2;                                         \
      TS_AMX_A_##MR_##x##NR_(TS_AMX_LOAD_A_)                                                   \
      TS_AMX_B_##MR_##x##NR_(TS_AMX_LOAD_B_)                                                   \
      TS_AMX_C_##MR_##x##NR_(TS_AMX_DOT_)                                                      \
    }                                                                                          \
    TS_AMX_C_##MR_##x##NR_(TS_AMX_STORE_C_)                                                    \
    if (!whole_)                                                                               \
      ts_ukr_store_edge_(edge_, (NR_), C, ldc, accumulate, mr, nr);                            \
  }                                                                                            \
  _Static_assert(1, "swallow the semicolon")
#endif /* AMX */

/* ------------------------------------------------------------------------------------------ */
/* Packing                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* One A panel: rows [0, mr_valid) x cols [0, kc) of A (row stride lda) -> Ap[k*MR + i], rows
 * mr_valid..MR-1 zero. Reading MR rows side by side keeps MR sequential streams, which the
 * hardware prefetchers follow (MR <= 16 streams). The element conversion is the only thing that
 * differs between dtypes, so one macro writes all three. */
/* Steps k0 .. kc - 1 of an A panel, element by element. */
#define TS_PACK_A_PANEL_BODY_(LOAD, k0)                                                        \
  do {                                                                                         \
    if (mr_valid == MR) {                                                                      \
      for (int64_t k = (k0); k < kc; k++)                                                      \
        for (int64_t i = 0; i < MR; i++)                                                       \
          Ap[k * MR + i] = LOAD(A[i * lda + k]);                                               \
    } else {                                                                                   \
      for (int64_t k = (k0); k < kc; k++) {                                                    \
        for (int64_t i = 0; i < mr_valid; i++)                                                 \
          Ap[k * MR + i] = LOAD(A[i * lda + k]);                                               \
        for (int64_t i = mr_valid; i < MR; i++)                                                \
          Ap[k * MR + i] = 0.0f;                                                               \
      }                                                                                        \
    }                                                                                          \
  } while (0)

#define TS_LOAD_F32_(x) (x)

#if defined(__AVX512F__)
/* r[k] <- column k of the 16 x 16 matrix whose rows are r[0..15]: four rounds of 16 shuffles
 * (pairs of lanes, of pairs, of 128-bit quarters, of halves). */
static inline void
ts_transpose16_ps_(__m512 r[16])
{
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; i++) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
}

static inline __m512
ts_load16_f32_(const float *p)
{
  return _mm512_loadu_ps(p);
}

static inline __m512
ts_load16_bf16_(const uint16_t *p)
{
  __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
}

/* An A panel of MR <= 16 rows 16 steps at a time: each row's 16 values loaded as one vector
 * (LOAD16 widens them to f32), the 16 x 16 block transposed in registers, its columns stored
 * MR lanes each. Element by element the panel is a strided gather, 7.6% of an f32 512^3 GEMM
 * on one thread of an Emerald Rapids core (perf), against 0.5% for B's contiguous panels. Sets
 * k0 to the steps done (0 if MR > 16). */
#define TS_PACK_A_PANEL_X16_(LOAD16, k0)                                                       \
  do {                                                                                         \
    if (MR > 16)                                                                               \
      break;                                                                                   \
    const __mmask16 m_ = (__mmask16)((1u << MR) - 1u);                                         \
    for (; (k0) + 16 <= kc; (k0) += 16) {                                                      \
      __m512 r_[16];                                                                           \
      for (int i_ = 0; i_ < 16; i_++)                                                          \
        r_[i_] = i_ < mr_valid ? LOAD16(A + i_ * lda + (k0)) : _mm512_setzero_ps();            \
      ts_transpose16_ps_(r_);                                                                  \
      for (int t_ = 0; t_ < 16; t_++)                                                          \
        _mm512_mask_storeu_ps(Ap + ((k0) + t_) * MR, m_, r_[t_]);                              \
    }                                                                                          \
  } while (0)
#else
#define TS_PACK_A_PANEL_X16_(LOAD16, k0) ((void)0)
#endif

static inline void
ts_pack_a_panel_f32(const float *A, int64_t lda, int64_t mr_valid, int64_t kc, int64_t MR,
                    float *restrict Ap)
{
  int64_t k0 = 0;
  TS_PACK_A_PANEL_X16_(ts_load16_f32_, k0);
  TS_PACK_A_PANEL_BODY_(TS_LOAD_F32_, k0);
}

static inline void
ts_pack_a_panel_bf16(const uint16_t *A, int64_t lda, int64_t mr_valid, int64_t kc, int64_t MR,
                     float *restrict Ap)
{
  int64_t k0 = 0;
  TS_PACK_A_PANEL_X16_(ts_load16_bf16_, k0);
  TS_PACK_A_PANEL_BODY_(ts_cpu_bf16_to_f32, k0);
}

/* f16 -> f32 row by row: F16C converts 8 contiguous values per instruction, the scattered
 * stores (stride MR) are cheap next to the scalar bit-twiddling fallback. */
static inline void
ts_cvt_f16_to_f32_n(const uint16_t *src, float *restrict dst, int64_t n)
{
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
  for (; i < n; i++)
    dst[i] = ts_cpu_f16_to_f32(src[i]);
}

static inline void
ts_pack_a_panel_f16(const uint16_t *A, int64_t lda, int64_t mr_valid, int64_t kc, int64_t MR,
                    float *restrict Ap)
{
#ifdef __F16C__
  float row[256];
  for (int64_t k0 = 0; k0 < kc; k0 += 256) {
    int64_t kn = ts_min_i64(256, kc - k0);
    for (int64_t i = 0; i < MR; i++) {
      if (i < mr_valid) {
        ts_cvt_f16_to_f32_n(A + i * lda + k0, row, kn);
        for (int64_t k = 0; k < kn; k++)
          Ap[(k0 + k) * MR + i] = row[k];
      } else {
        for (int64_t k = 0; k < kn; k++)
          Ap[(k0 + k) * MR + i] = 0.0f;
      }
    }
  }
#else
  TS_PACK_A_PANEL_BODY_(ts_cpu_f16_to_f32, 0);
#endif
}

/* One B panel: rows [0, kc) x cols [0, nr_valid) of B (row stride ldb) -> Bp[k*NR + j], cols
 * nr_valid..NR-1 zero. Each k is a contiguous copy of NR values. */
static inline void
ts_pack_b_panel_f32(const float *B, int64_t ldb, int64_t kc, int64_t nr_valid, int64_t NR,
                    float *restrict Bp)
{
  for (int64_t k = 0; k < kc; k++) {
    memcpy(Bp + k * NR, B + k * ldb, (size_t)nr_valid * sizeof(float));
    for (int64_t j = nr_valid; j < NR; j++)
      Bp[k * NR + j] = 0.0f;
  }
}

static inline void
ts_pack_b_panel_bf16(const uint16_t *B, int64_t ldb, int64_t kc, int64_t nr_valid, int64_t NR,
                     float *restrict Bp)
{
  for (int64_t k = 0; k < kc; k++) {
    for (int64_t j = 0; j < nr_valid; j++)
      Bp[k * NR + j] = ts_cpu_bf16_to_f32(B[k * ldb + j]);
    for (int64_t j = nr_valid; j < NR; j++)
      Bp[k * NR + j] = 0.0f;
  }
}

static inline void
ts_pack_b_panel_f16(const uint16_t *B, int64_t ldb, int64_t kc, int64_t nr_valid, int64_t NR,
                    float *restrict Bp)
{
  for (int64_t k = 0; k < kc; k++) {
    ts_cvt_f16_to_f32_n(B + k * ldb, Bp + k * NR, nr_valid);
    for (int64_t j = nr_valid; j < NR; j++)
      Bp[k * NR + j] = 0.0f;
  }
}

/* fp8 panels widen through the scalar conversion: packing is O(MK + KN) against the O(MNK)
 * of the product, and the conversion is a handful of integer operations. */
#define TS_DEFINE_PACK_PANELS_FP8_(SUFFIX)                                                     \
  static inline void ts_pack_a_panel_##SUFFIX(const uint8_t *A, int64_t lda, int64_t mr_valid, \
                                              int64_t kc, int64_t MR, float *restrict Ap)      \
  {                                                                                            \
    TS_PACK_A_PANEL_BODY_(ts_cpu_##SUFFIX##_to_f32, 0);                                        \
  }                                                                                            \
  static inline void ts_pack_b_panel_##SUFFIX(const uint8_t *B, int64_t ldb, int64_t kc,       \
                                              int64_t nr_valid, int64_t NR, float *restrict Bp) \
  {                                                                                            \
    for (int64_t k = 0; k < kc; k++) {                                                         \
      for (int64_t j = 0; j < nr_valid; j++)                                                   \
        Bp[k * NR + j] = ts_cpu_##SUFFIX##_to_f32(B[k * ldb + j]);                             \
      for (int64_t j = nr_valid; j < NR; j++)                                                  \
        Bp[k * NR + j] = 0.0f;                                                                 \
    }                                                                                          \
  }                                                                                            \
  /* B stored K-major ([N, K], row stride ldb): column j of the panel is row j of B, read    \
   * along its contiguous K. */                                                                \
  static inline void ts_pack_bt_panel_##SUFFIX(const uint8_t *B, int64_t ldb, int64_t kc,      \
                                               int64_t nr_valid, int64_t NR, float *restrict Bp) \
  {                                                                                            \
    for (int64_t j = 0; j < nr_valid; j++)                                                     \
      for (int64_t k = 0; k < kc; k++)                                                         \
        Bp[k * NR + j] = ts_cpu_##SUFFIX##_to_f32(B[j * ldb + k]);                             \
    for (int64_t k = 0; k < kc; k++)                                                           \
      for (int64_t j = nr_valid; j < NR; j++)                                                  \
        Bp[k * NR + j] = 0.0f;                                                                 \
  }                                                                                            \
  static inline void ts_pack_bt_block_##SUFFIX(const uint8_t *B, int64_t ldb, int64_t kc,      \
                                               int64_t nc, int64_t NR, float *restrict Bp)     \
  {                                                                                            \
    for (int64_t j = 0; j < nc; j += NR)                                                       \
      ts_pack_bt_panel_##SUFFIX(B + j * ldb, ldb, kc, ts_min_i64(NR, nc - j), NR, Bp + j * kc); \
  }                                                                                            \
  _Static_assert(1, "swallow the semicolon")

TS_DEFINE_PACK_PANELS_FP8_(e4m3);
TS_DEFINE_PACK_PANELS_FP8_(e5m2);

/* Whole blocks: an mc x kc block of A becomes ceil(mc/MR) panels, panel p at Ap + p*MR*kc; a
 * kc x nc block of B becomes ceil(nc/NR) panels, panel p at Bp + p*NR*kc. Buffers need
 * round_up(mc, MR) * kc and kc * round_up(nc, NR) floats. */
#define TS_DEFINE_PACK_BLOCKS_(SUFFIX, T)                                                      \
  static inline void ts_pack_a_block_##SUFFIX(const T *A, int64_t lda, int64_t mc, int64_t kc,  \
                                              int64_t MR, float *restrict Ap)                  \
  {                                                                                            \
    for (int64_t i = 0; i < mc; i += MR)                                                       \
      ts_pack_a_panel_##SUFFIX(A + i * lda, lda, ts_min_i64(MR, mc - i), kc, MR, Ap + i * kc); \
  }                                                                                            \
  static inline void ts_pack_b_block_##SUFFIX(const T *B, int64_t ldb, int64_t kc, int64_t nc,  \
                                              int64_t NR, float *restrict Bp)                  \
  {                                                                                            \
    for (int64_t j = 0; j < nc; j += NR)                                                       \
      ts_pack_b_panel_##SUFFIX(B + j, ldb, kc, ts_min_i64(NR, nc - j), NR, Bp + j * kc);       \
  }                                                                                            \
  _Static_assert(1, "swallow the semicolon")

TS_DEFINE_PACK_BLOCKS_(f32, float);
TS_DEFINE_PACK_BLOCKS_(bf16, uint16_t);
TS_DEFINE_PACK_BLOCKS_(f16, uint16_t);
TS_DEFINE_PACK_BLOCKS_(e4m3, uint8_t);
TS_DEFINE_PACK_BLOCKS_(e5m2, uint8_t);

/* A K-major B block ([N, K], row stride ldb) packs as an A block does: each of its rows is a
 * column of the panels, NR rows to a panel. Attention's Q K^T takes K so, its rows the keys. */
#define TS_DEFINE_PACK_BT_BLOCK_(SUFFIX, T)                                                    \
  static inline void ts_pack_bt_block_##SUFFIX(const T *B, int64_t ldb, int64_t kc, int64_t nc, \
                                               int64_t NR, float *restrict Bp)                 \
  {                                                                                            \
    ts_pack_a_block_##SUFFIX(B, ldb, nc, kc, NR, Bp);                                          \
  }                                                                                            \
  _Static_assert(1, "swallow the semicolon")

TS_DEFINE_PACK_BT_BLOCK_(f32, float);
TS_DEFINE_PACK_BT_BLOCK_(bf16, uint16_t);
TS_DEFINE_PACK_BT_BLOCK_(f16, uint16_t);

/* ------------------------------------------------------------------------------------------ */
/* Output conversion                                                                            */
/* ------------------------------------------------------------------------------------------ */

#if defined(__AVX512F__)
/* Lanes holding a subnormal float (0 < |x| < 2^-126), which vcvtneps2bf16 would flush: one
 * vfpclassps where AVX512DQ has it, else |x| - 1 < 2^23 - 1 on the bits. */
static inline __mmask16
ts_subnormal_mask16_(__m512 v)
{
#ifdef __AVX512DQ__
  return _mm512_fpclass_ps_mask(v, 0x20);
#else
  const __m512i a = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff));
  return _mm512_cmplt_epu32_mask(_mm512_sub_epi32(a, _mm512_set1_epi32(1)),
                                 _mm512_set1_epi32(0x007fffff));
#endif
}
#endif

#if defined(__AVX512F__) && defined(__AVX512VL__)
static inline __mmask8
ts_subnormal_mask8_(__m256 v)
{
#ifdef __AVX512DQ__
  return _mm256_fpclass_ps_mask(v, 0x20);
#else
  const __m256i a = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7fffffff));
  return _mm256_cmplt_epu32_mask(_mm256_sub_epi32(a, _mm256_set1_epi32(1)),
                                 _mm256_set1_epi32(0x007fffff));
#endif
}
#endif

/* x *= s over n floats: fp8 inputs' per-tensor scales, applied to the f32 accumulator once
 * before it is rounded to the output. */
static inline void
ts_scale_f32(float *x, int64_t n, float s)
{
  for (int64_t i = 0; i < n; i++)
    x[i] *= s;
}

static inline void
ts_store_f32_as_bf16(const float *src, uint16_t *dst, int64_t n)
{
  int64_t i = 0;
#if defined(__AVX512BF16__) && defined(__AVX512F__)
  /* vcvtneps2bf16, except for vectors with a subnormal lane, which it would flush (see
   * ts_vf_store_bf16): those take the exact loop. */
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(src + i);
    if (__builtin_expect(ts_subnormal_mask16_(v), 0)) {
      for (int64_t j = i; j < i + 16; j++)
        dst[j] = ts_cpu_f32_to_bf16(src[j]);
      continue;
    }
    _mm256_storeu_si256((__m256i *)(dst + i), (__m256i)_mm512_cvtneps_pbh(v));
  }
#endif
  for (; i < n; i++)
    dst[i] = ts_cpu_f32_to_bf16(src[i]);
}

static inline void
ts_store_f32_as_f16(const float *src, uint16_t *dst, int64_t n)
{
  int64_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8) /* imm 0 = round to nearest even, exceptions as MXCSR says */
    _mm_storeu_si128((__m128i *)(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), 0));
#endif
  for (; i < n; i++)
    dst[i] = ts_cpu_f32_to_f16(src[i]);
}

/* ------------------------------------------------------------------------------------------ */
/* Row vectors: TS_VEC floats (4 = SSE, 8 = AVX, 16 = AVX-512; define it before including;    */
/* default 8 with AVX, else 4)                                                                */
/* ------------------------------------------------------------------------------------------ */

#ifndef TS_VEC
#ifdef __AVX__
#define TS_VEC 8
#else
#define TS_VEC 4
#endif
#endif
#if TS_VEC != 4 && TS_VEC != 8 && TS_VEC != 16
#error "TS_VEC must be 4, 8 or 16"
#endif
#if (TS_VEC == 8 && !defined(__AVX__)) || (TS_VEC == 16 && !defined(__AVX512F__))
/* 32-byte vectors without AVX (64-byte ones without AVX-512) are emulated with narrower pairs
 * and passed differently from what a wider build would do. Every function taking ts_vf is static inline, so no such value ever
 * crosses a translation unit and the ABI warning (raised at the includer's call sites, hence
 * not popped) is noise. GCC still prints one "note: the ABI for passing parameters with 32-byte
 * alignment has changed in GCC 4.6" that no pragma silences; it is not a warning, and generated
 * code never asks for TS_VEC 8 without AVX. */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

typedef float ts_vf __attribute__((vector_size(TS_VEC * sizeof(float))));
typedef int32_t ts_vi __attribute__((vector_size(TS_VEC * sizeof(int32_t))));
typedef uint32_t ts_vu __attribute__((vector_size(TS_VEC * sizeof(uint32_t))));
typedef uint16_t ts_vh __attribute__((vector_size(TS_VEC * sizeof(uint16_t))));

/* First statement of a vector loop's scalar tail (j its column): the empty asm makes j opaque,
 * so the compiler does not vectorize a loop that runs fewer than two vectors' worth. GCC 12
 * vectorized them, each with alias checks and an epilogue of its own: over the default points
 * of twelve CPU kernels, 17% of their compile time (flash attention's 18%), for loops that
 * never run a full vector; run scalar, a tail costs little more (softmax bf16 at 2048 x 1000, a
 * tail of 8 of 1000 columns a pass: 1.5% slower, the median of 8 alternating runs, Zen 3). */
#define TS_SCALAR_TAIL_(j) __asm__("" : "+r"(j))

static inline ts_vf
ts_vf_splat(float x)
{
  /* -0.0f + x is x for every x (+0 + x would turn -0 into +0), so the compiler may fold the add
   * away and emit a plain broadcast. */
  return -(ts_vf){0} + x;
}

static inline ts_vf
ts_vf_load_f32(const void *p)
{
  ts_vf v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline void
ts_vf_store_f32(void *p, ts_vf v)
{
  memcpy(p, &v, sizeof v);
}

static inline ts_vf
ts_vf_load_bf16(const void *p)
{
  /* One widening move and a shift (GCC splits the generic conversion below into halves). */
#if defined(__AVX512F__) && TS_VEC == 16
  return (ts_vf)_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)),
                                  16);
#elif defined(__AVX2__) && TS_VEC == 8
  return (ts_vf)_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16);
#endif
  ts_vh h;
  memcpy(&h, p, sizeof h);
  ts_vu u = __builtin_convertvector(h, ts_vu) << 16;
  return (ts_vf)u;
}

/* Without NaNs the rounding is its increment alone: where AVX or SSE gives a whole vector's
 * unordered compare in one mask, a vector with no NaN lane (ts_vf_nan_in_, for one vector or
 * two) skips the NaN's share. TS_BF16_SHORT_ says whether this width has it. */
#if ((defined(__AVX__) && TS_VEC == 8) || (defined(__SSE__) && TS_VEC == 4)) &&                 \
  !(defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__)
#define TS_BF16_SHORT_ 1
static inline int
ts_vf_nan_in_(ts_vf a, ts_vf b)
{
#if TS_VEC == 8
  return _mm256_movemask_ps(_mm256_cmp_ps((__m256)a, (__m256)b, _CMP_UNORD_Q));
#else
  return _mm_movemask_ps(_mm_cmpunord_ps((__m128)a, (__m128)b));
#endif
}
#else
#define TS_BF16_SHORT_ 0
#endif

/* u's rounding to bf16 when u is not a NaN */
static inline ts_vu
ts_vu_bf16_round_number_(ts_vu u)
{
  return u + (0x7fffu + ((u >> 16) & 1u));
}

/* v rounded to bf16 as ts_cpu_f32_to_bf16 does, each lane's bf16 in the high half of its word
 * (the low half is left over from the rounding): an even lane of a pair takes it shifted down,
 * an odd one masked, in place (ts_vf_to_bf16x2_). A NaN lane gets no rounding increment, which
 * could carry through its mantissa into the exponent or the sign, and its quiet bit set. The
 * NaN test is one unordered compare (an integer one where -ffinite-math-only would fold it):
 * on a Zen 1 core 2.8 G values/s of the pass below, against 2.6 with the integer test and 2.5
 * choosing between a rounded and a quieted word. */
static inline ts_vu
ts_vf_bf16_round_(ts_vf v)
{
  ts_vu u = (ts_vu)v;
#if TS_BF16_SHORT_
  if (__builtin_expect(!ts_vf_nan_in_(v, v), 1))
    return ts_vu_bf16_round_number_(u);
#endif
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
  ts_vu nan = (ts_vu)((ts_vi)(u & 0x7fffffffu) > 0x7f800000); /* all-ones where NaN */
#else
  ts_vu nan = (ts_vu)(v != v);
#endif
  ts_vu bias = ~nan & (0x7fffu + ((u >> 16) & 1u));
  return (u | (nan & 0x00400000u)) + bias;
}

/* v rounded to bf16, lane by lane as ts_cpu_f32_to_bf16 does. */
static inline ts_vh
ts_vf_to_bf16_(ts_vf v)
{
#if defined(__AVX512BF16__) && defined(__AVX512VL__) && (TS_VEC == 16 || TS_VEC == 8)
  /* vcvtneps2bf16 rounds to nearest even as the code below does, in one instruction, but
   * flushes subnormal inputs to zero; a vector holding one (|x| < 2^-126, never in practice)
   * takes the exact path, so every lane stays bit-identical to ts_cpu_f32_to_bf16. */
#if TS_VEC == 16
  if (__builtin_expect(!ts_subnormal_mask16_((__m512)v), 1))
    return (ts_vh)_mm512_cvtneps_pbh((__m512)v);
#else
  if (__builtin_expect(!ts_subnormal_mask8_((__m256)v), 1))
    return (ts_vh)_mm256_cvtneps_pbh((__m256)v);
#endif
#endif
  ts_vu w = ts_vf_bf16_round_(v) >> 16;
#if defined(__AVX2__) && TS_VEC == 8
  /* The words are below 2^16, so the saturating pack of the two halves is exact: no mask, and
   * no lane-crossing permute as the generic narrowing takes. */
  const __m256i x = (__m256i)w;
  return (ts_vh)_mm_packus_epi32(_mm256_castsi256_si128(x), _mm256_extracti128_si256(x, 1));
#else
  return __builtin_convertvector(w, ts_vh);
#endif
}

static inline void
ts_vf_store_bf16(void *p, ts_vf v)
{
  ts_vh h = ts_vf_to_bf16_(v);
  memcpy(p, &h, sizeof h);
}

static inline ts_vf
ts_vf_load_f16(const void *p)
{
#if defined(__AVX512F__) && TS_VEC == 16
  return (ts_vf)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
#elif defined(__F16C__) && TS_VEC == 8
  return (ts_vf)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#elif defined(__F16C__) && TS_VEC == 4
  return (ts_vf)_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)p));
#else
  uint16_t h[TS_VEC];
  ts_vf v;
  memcpy(h, p, sizeof h);
  for (int i = 0; i < TS_VEC; i++)
    v[i] = ts_cpu_f16_to_f32(h[i]);
  return v;
#endif
}

/* v rounded to f16 (nearest even), lane by lane as ts_cpu_f32_to_f16 does. */
static inline ts_vh
ts_vf_to_f16_(ts_vf v)
{
#if defined(__AVX512F__) && TS_VEC == 16
  return (ts_vh)_mm512_cvtps_ph((__m512)v, 0);
#elif defined(__F16C__) && TS_VEC == 8
  return (ts_vh)_mm256_cvtps_ph((__m256)v, 0);
#else
  ts_vh h;
#if defined(__F16C__) && TS_VEC == 4
  const __m128i c = _mm_cvtps_ph((__m128)v, 0);
  memcpy(&h, &c, sizeof h);
#else
  for (int i = 0; i < TS_VEC; i++)
    h[i] = ts_cpu_f32_to_f16(v[i]);
#endif
  return h;
#endif
}

static inline void
ts_vf_store_f16(void *p, ts_vf v)
{
  ts_vh h = ts_vf_to_f16_(v);
  memcpy(p, &h, sizeof h);
}

/* Non-temporal stores of `size` bytes (a vector's: 8 to 64) at p where p is aligned to its size
 * and the target has them; a plain store otherwise, so any p and any target work. The writes
 * bypass the caches (no read of the line before it is written) and are ordered only by
 * ts_stream_fence(), which every writer calls before the data is read elsewhere. */
static inline void
ts_stream_bytes_(void *p, const void *v, size_t size)
{
#if defined(__SSE2__) && defined(__x86_64__)
  if (((uintptr_t)p & (size - 1)) == 0) {
    switch (size) {
#ifdef __AVX512F__
    case 64:
      _mm512_stream_si512((void *)p, _mm512_loadu_si512(v));
      return;
#endif
#ifdef __AVX__
    case 32:
      _mm256_stream_si256((__m256i *)p, _mm256_loadu_si256((const __m256i *)v));
      return;
#endif
    case 16:
      _mm_stream_si128((__m128i *)p, _mm_loadu_si128((const __m128i *)v));
      return;
    case 8: {
      long long q;
      memcpy(&q, v, sizeof q);
      _mm_stream_si64((long long *)p, q);
      return;
    }
    default:
      break;
    }
  }
#endif
  memcpy(p, v, size);
}

static inline void
ts_stream_fence(void)
{
#if defined(__SSE2__)
  _mm_sfence();
#else
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void
ts_vf_stream_f32(void *p, ts_vf v)
{
  ts_stream_bytes_(p, &v, sizeof v);
}

static inline void
ts_vf_stream_bf16(void *p, ts_vf v)
{
  ts_vh h = ts_vf_to_bf16_(v);
  ts_stream_bytes_(p, &h, sizeof h);
}

static inline void
ts_vf_stream_f16(void *p, ts_vf v)
{
  ts_vh h = ts_vf_to_f16_(v);
  ts_stream_bytes_(p, &h, sizeof h);
}

/* f16 in vector pairs: ts_vf_load2_f16 reads 2 * TS_VEC values at p as two f32 vectors, *e
 * the first TS_VEC and *o the next; ts_vf_store2_f16 and ts_vf_stream2_f16 write both back in
 * one store. A streaming store then fills a whole ymm (zmm) where two half-width ones did:
 * the last pass of a vector(8) f16 layernorm from memory, 1.03-1.14x on Zen 3. */
static inline void
ts_vf_load2_f16(const void *p, ts_vf *e, ts_vf *o)
{
  *e = ts_vf_load_f16(p);
  *o = ts_vf_load_f16((const uint16_t *)p + TS_VEC);
}

/* e's and o's f16 bits, in order, as one vector of both (ts_vf_store2_f16's store). */
#if defined(__AVX512F__) && TS_VEC == 16
#define TS_F16X2_(e, o)                                                                           \
  _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtps_ph((__m512)(e), 0)),                     \
                     _mm512_cvtps_ph((__m512)(o), 0), 1)
#define TS_F16X2_STORE_(p, w) _mm512_storeu_si512((p), (w))
#define TS_F16X2_STREAM_(p, w) _mm512_stream_si512((void *)(p), (w))
#elif defined(__F16C__) && TS_VEC == 8
#define TS_F16X2_(e, o)                                                                           \
  _mm256_set_m128i(_mm256_cvtps_ph((__m256)(o), 0), _mm256_cvtps_ph((__m256)(e), 0))
#define TS_F16X2_STORE_(p, w) _mm256_storeu_si256((__m256i *)(p), (w))
#define TS_F16X2_STREAM_(p, w) _mm256_stream_si256((__m256i *)(p), (w))
#endif

static inline void
ts_vf_store2_f16(void *p, ts_vf e, ts_vf o)
{
#ifdef TS_F16X2_
  TS_F16X2_STORE_(p, TS_F16X2_(e, o));
#else
  const ts_vh h[2] = {ts_vf_to_f16_(e), ts_vf_to_f16_(o)};
  memcpy(p, h, sizeof h);
#endif
}

/* Written from the register: ts_stream_bytes_ takes the bytes by address, and its unaligned
 * fallback kept the vector on the stack, a store a step. */
static inline void
ts_vf_stream2_f16(void *p, ts_vf e, ts_vf o)
{
#ifdef TS_F16X2_
  if (((uintptr_t)p & (2 * sizeof(ts_vh) - 1)) == 0)
    TS_F16X2_STREAM_(p, TS_F16X2_(e, o));
  else
    TS_F16X2_STORE_(p, TS_F16X2_(e, o));
#else
  const ts_vh h[2] = {ts_vf_to_f16_(e), ts_vf_to_f16_(o)};
  ts_stream_bytes_(p, h, sizeof h);
#endif
}

/* bf16 in lane pairs. ts_vf_load2_bf16 reads 2 * TS_VEC values at p as two f32 vectors: *e the
 * even-indexed values, *o the odd-indexed ones. Each 32-bit word holds an even value in its low
 * half and the next odd one in its high half (little-endian), so one shift and one mask widen
 * 32 values with no lane-crossing shuffle; ts_vf_load_bf16's vpmovzxwd is one, and three of
 * them a vector bounded a bf16 layernorm's last pass (half its speed with data in cache).
 * Elementwise code treats e and o alike and stores them with ts_vf_store2_bf16 or
 * ts_vf_stream2_bf16, which restore the order; a reduction needs no order. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "lane pairs assume little-endian");

static inline void
ts_vf_load2_bf16(const void *p, ts_vf *e, ts_vf *o)
{
  ts_vu u;
  memcpy(&u, p, sizeof u);
  *e = (ts_vf)(u << 16);
  *o = (ts_vf)(u & 0xffff0000u);
}

/* The pair's words: re's high halves shifted down into the even words, ro's high halves kept
 * in the odd ones. A word blend takes the odd words as they are, one operation where masking
 * and merging took two (a pass that writes bf16 spends about a tenth of its operations here). */
static inline ts_vu
ts_vu_bf16_pair_(ts_vu re, ts_vu ro)
{
  const ts_vu even = re >> 16;
#if defined(__AVX512BW__) && TS_VEC == 16
  return (ts_vu)_mm512_mask_blend_epi16(0xaaaaaaaau, (__m512i)even, (__m512i)ro);
#elif defined(__AVX2__) && TS_VEC == 8
  return (ts_vu)_mm256_blend_epi16((__m256i)even, (__m256i)ro, 0xaa);
#elif defined(__SSE4_1__) && TS_VEC == 4
  return (ts_vu)_mm_blend_epi16((__m128i)even, (__m128i)ro, 0xaa);
#else
  return even | (ro & 0xffff0000u);
#endif
}

/* e and o rounded to bf16 lane by lane as ts_cpu_f32_to_bf16 does, interleaved back. */
static inline ts_vu
ts_vf_to_bf16x2_(ts_vf e, ts_vf o)
{
#if defined(__AVX512BF16__) && defined(__AVX512VL__) && defined(__AVX512BW__)
  /* One rounding of both vectors (e's values in the low half) and one word permutation; a
   * subnormal lane, which vcvtne2ps2bf16 flushes, takes the exact path as in ts_vf_to_bf16_. */
#if TS_VEC == 16
  if (__builtin_expect(!(ts_subnormal_mask16_((__m512)e) | ts_subnormal_mask16_((__m512)o)), 1)) {
    const __m512i idx = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9,
                                         24, 8, 23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1,
                                         16, 0);
    return (ts_vu)_mm512_permutexvar_epi16(idx, (__m512i)_mm512_cvtne2ps_pbh((__m512)o,
                                                                             (__m512)e));
  }
#elif TS_VEC == 8
  if (__builtin_expect(!(ts_subnormal_mask8_((__m256)e) | ts_subnormal_mask8_((__m256)o)), 1)) {
    const __m256i idx = _mm256_set_epi16(15, 7, 14, 6, 13, 5, 12, 4, 11, 3, 10, 2, 9, 1, 8, 0);
    return (ts_vu)_mm256_permutexvar_epi16(idx, (__m256i)_mm256_cvtne2ps_pbh((__m256)o,
                                                                             (__m256)e));
  }
#endif
#endif
  /* Rounded in place, each pair is one shift and one blend: no narrowing to 16-bit lanes and back
   * (a pack, a lane-crossing permute and two widenings on AVX2). Measured on a Zen 1 core for
   * the pass y = w * s from an f32 row in L1 to bf16: 2.4 against 1.45 G values/s. */
#if TS_BF16_SHORT_
  /* one compare for both vectors */
  if (__builtin_expect(!ts_vf_nan_in_(e, o), 1))
    return ts_vu_bf16_pair_(ts_vu_bf16_round_number_((ts_vu)e),
                            ts_vu_bf16_round_number_((ts_vu)o));
#endif
  return ts_vu_bf16_pair_(ts_vf_bf16_round_(e), ts_vf_bf16_round_(o));
}

static inline void
ts_vf_store2_bf16(void *p, ts_vf e, ts_vf o)
{
  ts_vu w = ts_vf_to_bf16x2_(e, o);
  memcpy(p, &w, sizeof w);
}

static inline void
ts_vf_stream2_bf16(void *p, ts_vf e, ts_vf o)
{
  ts_vu w = ts_vf_to_bf16x2_(e, o);
  ts_stream_bytes_(p, &w, sizeof w);
}

/* Lane select without the vector ?: (GCC accepts it only in C++): m is all-ones / all-zeros. */
static inline ts_vf
ts_vf_select_(ts_vi m, ts_vf a, ts_vf b)
{
  return (ts_vf)((m & (ts_vi)a) | (~m & (ts_vi)b));
}

/* a > b ? a : b per lane, i.e. MAXPS: when either is NaN the result is b. Written as the
 * instruction where there is one (the compiler turns the select into a compare and two
 * masked logic operations otherwise: a third of softmax's max pass). */
static inline ts_vf
ts_vf_max(ts_vf a, ts_vf b)
{
#if defined(__AVX512F__) && TS_VEC == 16
  return (ts_vf)_mm512_max_ps((__m512)a, (__m512)b);
#elif defined(__AVX__) && TS_VEC == 8
  return (ts_vf)_mm256_max_ps((__m256)a, (__m256)b);
#elif defined(__SSE__) && TS_VEC == 4
  return (ts_vf)_mm_max_ps((__m128)a, (__m128)b);
#else
  return ts_vf_select_((ts_vi)(a > b), a, b);
#endif
}

/* a < b ? a : b per lane, i.e. MINPS. */
static inline ts_vf
ts_vf_min(ts_vf a, ts_vf b)
{
#if defined(__AVX512F__) && TS_VEC == 16
  return (ts_vf)_mm512_min_ps((__m512)a, (__m512)b);
#elif defined(__AVX__) && TS_VEC == 8
  return (ts_vf)_mm256_min_ps((__m256)a, (__m256)b);
#elif defined(__SSE__) && TS_VEC == 4
  return (ts_vf)_mm_min_ps((__m128)a, (__m128)b);
#else
  return ts_vf_select_((ts_vi)(a < b), a, b);
#endif
}

/* Horizontal sum as a fixed pairwise tree (lane i + lane i+V/2 first): deterministic order,
 * error grows with log2(V) rather than V. */
static inline float
ts_vf_hsum(ts_vf v)
{
#if TS_VEC == 16
  float w[8];
  for (int i = 0; i < 8; i++)
    w[i] = v[i] + v[i + 8];
  return ((w[0] + w[4]) + (w[2] + w[6])) + ((w[1] + w[5]) + (w[3] + w[7]));
#elif TS_VEC == 8
  return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
#else
  return (v[0] + v[2]) + (v[1] + v[3]);
#endif
}

static inline float
ts_vf_hmax(ts_vf v)
{
  float m = v[0];
  for (int i = 1; i < TS_VEC; i++)
    m = v[i] > m ? v[i] : m;
  return m;
}

/* The max of 16-bit floats (f16 or bf16) taken on their bits, without converting them (the
 * next row's max, which softmax's pipelines take in a pass that computes exps: its f16
 * conversion was a tenth of that pass on a Zen 4 core). As signed integers the bits of values
 * with the sign bit clear order as the floats do, NaNs above +Inf; those with it set order in
 * reverse: -0 is the least integer and the largest of them as a float, negative NaNs the
 * greatest integers. So a ts_vk keeps two integers a lane: the max of the bits (hi), which is
 * the largest value when any has its sign bit clear, and their min (lo), which is the largest
 * value when none has. One integer max and one min a vector, with no ordered key made of each
 * value first (three operations more: with them the next row's max was 8 of a bf16 skew
 * softmax's ~60 operations per 16 values). The result is what a max over keys ordered as the
 * floats (-0 below +0, NaNs beyond the infinities) gives: a negative NaN never wins over the
 * -Inf a max starts from. */
typedef int16_t ts_vh_ __attribute__((vector_size(TS_VEC * sizeof(int16_t))));
typedef struct {
  ts_vh_ hi, lo;
} ts_vk;

/* every lane the 16-bit float `bits` (the dtype's -Inf, to start a max) */
static inline ts_vk
ts_vk_splat(uint16_t bits)
{
  const ts_vh_ h = (ts_vh_){0} + (int16_t)bits;
  return (ts_vk){h, h};
}

/* the TS_VEC 16-bit floats at p */
static inline ts_vk
ts_vk_load(const void *p)
{
  ts_vh_ h;
  memcpy(&h, p, sizeof h);
  return (ts_vk){h, h};
}

static inline ts_vk
ts_vk_max(ts_vk a, ts_vk b)
{
#if defined(__AVX2__) && TS_VEC == 16
  return (ts_vk){(ts_vh_)_mm256_max_epi16((__m256i)a.hi, (__m256i)b.hi),
                 (ts_vh_)_mm256_min_epi16((__m256i)a.lo, (__m256i)b.lo)};
#elif defined(__SSE2__) && TS_VEC == 8
  return (ts_vk){(ts_vh_)_mm_max_epi16((__m128i)a.hi, (__m128i)b.hi),
                 (ts_vh_)_mm_min_epi16((__m128i)a.lo, (__m128i)b.lo)};
#else
  const ts_vh_ up = (ts_vh_)(a.hi > b.hi), down = (ts_vh_)(a.lo < b.lo);
  return (ts_vk){(a.hi & up) | (b.hi & ~up), (a.lo & down) | (b.lo & ~down)};
#endif
}

/* the bits of the largest value in k */
static inline uint16_t
ts_vk_hmax_bits(ts_vk k)
{
  int16_t hi = k.hi[0], lo = k.lo[0];
  for (int i = 1; i < TS_VEC; i++) {
    hi = k.hi[i] > hi ? k.hi[i] : hi;
    lo = k.lo[i] < lo ? k.lo[i] : lo;
  }
  return (uint16_t)(hi >= 0 ? hi : lo);
}

static inline ts_vf
ts_vf_sqrt(ts_vf v)
{
#if defined(__AVX512F__) && TS_VEC == 16
  return (ts_vf)_mm512_sqrt_ps((__m512)v);
#elif defined(__AVX__) && TS_VEC == 8
  return (ts_vf)_mm256_sqrt_ps((__m256)v);
#elif defined(__SSE__) && TS_VEC == 4
  return (ts_vf)_mm_sqrt_ps((__m128)v);
#elif defined(__SSE__) && TS_VEC == 8
  ts_vf r;
  __m128 lo, hi;
  memcpy(&lo, &v, sizeof lo);
  memcpy(&hi, (const float *)&v + 4, sizeof hi);
  lo = _mm_sqrt_ps(lo);
  hi = _mm_sqrt_ps(hi);
  memcpy(&r, &lo, sizeof lo);
  memcpy((float *)&r + 4, &hi, sizeof hi);
  return r;
#else
  ts_vf r;
  for (int i = 0; i < TS_VEC; i++)
    r[i] = __builtin_sqrtf(v[i]);
  return r;
#endif
}

/* x clamped to [lo, hi] lane by lane, a NaN lane kept: vmaxps/vminps return their second
 * operand when either is NaN. On AVX2 the two instructions instead of a compare and three logic
 * operations for each bound made the exp 1.14x faster on a Zen 1 core (0.57 -> 0.65 G/s, 8
 * lanes; 1.24x at 4). */
static inline ts_vf
ts_vf_clamp_(ts_vf x, float lo, float hi)
{
#if defined(__AVX__) && TS_VEC == 8
  return (ts_vf)_mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), (__m256)x));
#elif defined(__SSE__) && TS_VEC == 4
  return (ts_vf)_mm_min_ps(_mm_set1_ps(hi), _mm_max_ps(_mm_set1_ps(lo), (__m128)x));
#elif defined(__AVX512F__) && TS_VEC == 16
  return (ts_vf)_mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), (__m512)x));
#else
  x = ts_vf_select_((ts_vi)(x < ts_vf_splat(lo)), ts_vf_splat(lo), x);
  return ts_vf_select_((ts_vi)(x > ts_vf_splat(hi)), ts_vf_splat(hi), x);
#endif
}

/* The exps below scale p by 2^n with two multiplies, so that results that underflow round as a
 * subnormal should (and with a clamp, so that huge n cannot wrap). Where no vscalefps does it in
 * one instruction, a vector whose every lane keeps the result a normal float takes a shorter
 * path: n added to p's exponent field, exact there, hence the same bits, and no clamp (on a Zen 3
 * core 10.3 -> 7.3 cycles a vector for exp, 10.7 -> 7.3 for the fast exp; all 2^32 inputs
 * checked bit for bit against the long path). TS_EXP_SHORT_ says whether this width has it;
 * ts_vf_beyond_ is nonzero when a lane of v has |v| > lim or is NaN, the lanes the long path
 * must take. */
#if (defined(__AVX__) && TS_VEC == 8 && !(defined(__AVX512F__) && defined(__AVX512VL__))) ||     \
  (defined(__SSE__) && TS_VEC == 4)
#define TS_EXP_SHORT_ 1
static inline int
ts_vf_beyond_(ts_vf v, float lim)
{
#if TS_VEC == 8
  const __m256 a = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), (__m256)v);
  return _mm256_movemask_ps(_mm256_cmp_ps(a, _mm256_set1_ps(lim), _CMP_NLE_UQ));
#else
  const __m128 a = _mm_andnot_ps(_mm_set1_ps(-0.0f), (__m128)v);
  return _mm_movemask_ps(_mm_cmpnle_ps(a, _mm_set1_ps(lim)));
#endif
}

/* p * 2^ni for a normal float p and a normal result: the integer add to the exponent field */
static inline ts_vf
ts_vf_scale_normal_(ts_vf p, ts_vi ni)
{
  return (ts_vf)((ts_vi)p + (ni << 23));
}

/* The long path's argument, for a vector beyond the short path: the lanes below `zero_below`,
 * whose result rounds to +0 (-Inf among them, as masked logits are), are marked in *zero and
 * taken as 0, since the scale's underflow to 0 costs a microcode assist (on a Zen 3 core a
 * vector of them took 26 cycles instead of 10); the rest clamped to [lo, hi]. */
static inline ts_vf
ts_vf_exp_long_arg_(ts_vf x, float zero_below, float lo, float hi, ts_vi *zero)
{
  *zero = (ts_vi)(x < zero_below);
  return ts_vf_clamp_((ts_vf)((ts_vi)x & ~*zero), lo, hi);
}
#else
#define TS_EXP_SHORT_ 0
#endif

/* p * 2^n for the exps below (n integral, as a float; ni the same as an integer). */
static inline ts_vf
ts_vf_exp_scale_(ts_vf p, ts_vf n, ts_vi ni)
{
#if defined(__AVX512F__) && (TS_VEC == 16 || (defined(__AVX512VL__) && TS_VEC == 8))
  /* vscalefps: p * 2^n with one rounding, subnormal results included: the same value as the
   * two exact-then-rounded products below, in one instruction. */
  (void)ni;
#if TS_VEC == 16
  return (ts_vf)_mm512_scalef_ps((__m512)p, (__m512)n);
#else
  return (ts_vf)_mm256_scalef_ps((__m256)p, (__m256)n);
#endif
#endif
  (void)n;
  /* ni split in two halves, rounded down rather than toward zero as the scalar version's C
   * division: p * 2^n1 is exact for either split (p near 1, |n1| <= 75), so the one rounding,
   * by 2^n2, gives the same bits, and the shift alone saves two operations (exp 1.06x faster
   * on a Zen 1 core; every float in [-110, -80), [80, 89) and [-1, 1) checked). */
  ts_vi n1 = ni >> 1;
  ts_vi n2 = ni - n1;
  ts_vf s1 = (ts_vf)((n1 + 127) << 23);
  ts_vf s2 = (ts_vf)((n2 + 127) << 23);
  return p * s1 * s2;
}

/* ts_exp_reduce_ lane by lane, for x already clamped to [TS_EXP_LO, TS_EXP_HI] where that
 * matters: the remainder r, with n as a float (*n) and as an integer (*ni). */
static inline ts_vf
ts_vf_exp_reduce_(ts_vf x, ts_vf *n, ts_vi *ni)
{
  const ts_vf round = ts_vf_splat(TS_EXP_ROUND);
  ts_vf t = x * TS_EXP_LOG2E + round;
  *n = t - round;
  *ni = (ts_vi)t - (ts_vi)round;
  ts_vf r = x - *n * TS_EXP_C1;
  return r - *n * TS_EXP_C2;
}

/* exp(r) for r in [-0.347, 0.347] */
static inline ts_vf
ts_vf_exp_poly_(ts_vf r)
{
  ts_vf p = ts_vf_splat(TS_EXP_P6);
  p = p * r + TS_EXP_P5;
  p = p * r + TS_EXP_P4;
  p = p * r + TS_EXP_P3;
  p = p * r + TS_EXP_P2;
  p = p * r + 1.0f;
  return p * r + 1.0f;
}

/* Lane-wise ts_exp_f32 (same constants, same operation order: results are bit-identical). */
static inline ts_vf
ts_vf_exp(ts_vf x)
{
  ts_vf n;
  ts_vi ni;
#if TS_EXP_SHORT_
  /* |x| <= 86: |n| <= 124 and exp(r) within [0.7, 1.42], so p * 2^n is normal and the clamp
   * changes nothing. Otherwise x < -104 rounds to +0 (below 2^-150 by 3%, far beyond the
   * polynomial's error). The reduction and the polynomial are shared by both paths: a copy in
   * each crowded the registers and slowed the short one. */
  const int beyond = ts_vf_beyond_(x, 86.0f);
  ts_vi zero = {0};
  if (__builtin_expect(beyond, 0))
    x = ts_vf_exp_long_arg_(x, -104.0f, TS_EXP_LO, TS_EXP_HI, &zero);
  const ts_vf p = ts_vf_exp_poly_(ts_vf_exp_reduce_(x, &n, &ni));
  if (__builtin_expect(!beyond, 1))
    return ts_vf_scale_normal_(p, ni);
  return (ts_vf)((ts_vi)ts_vf_exp_scale_(p, n, ni) & ~zero);
#else
  const ts_vf r = ts_vf_exp_reduce_(ts_vf_clamp_(x, TS_EXP_LO, TS_EXP_HI), &n, &ni);
  return ts_vf_exp_scale_(ts_vf_exp_poly_(r), n, ni);
#endif
}

/* floor(t) as a float (*n) and an integer (*ni), and t - floor(t) rounded as ts_exp2_frac_
 * rounds it. floor(t): one vroundps where there is one (on a Zen 1 core the fast exp went from
 * 0.59 to 0.69 G/s at 8 lanes, 0.51 to 0.65 at 4), else rounded to nearest and one less where
 * that went up. */
static inline ts_vf
ts_vf_floor_frac_(ts_vf t, ts_vf *n, ts_vi *ni)
{
#if defined(__AVX__) && TS_VEC == 8
  *n = (ts_vf)_mm256_floor_ps((__m256)t);
  *ni = (ts_vi)_mm256_cvttps_epi32((__m256)*n);
#elif defined(__SSE4_1__) && TS_VEC == 4
  *n = (ts_vf)_mm_floor_ps((__m128)t);
  *ni = (ts_vi)_mm_cvttps_epi32((__m128)*n);
#else
  const ts_vf round = ts_vf_splat(TS_EXP_ROUND);
  const ts_vf u = t + round;
  *n = u - round;
  *ni = (ts_vi)u - (ts_vi)round;
  const ts_vi up = (ts_vi)(*n > t); /* all-ones (-1) where rounded up: the floor is one less */
  *n = ts_vf_select_(up, *n - 1.0f, *n);
  *ni += up;
#endif
  const ts_vf f = t - *n;
#if TS_EXP2_FRAC_DOWN_
  return (ts_vf)((ts_vi)f + (ts_vi)(t - (f + *n) < 0.0f));
#else
  return f;
#endif
}

/* ts_exp2_fast_ lane by lane (the same bits, see ts_exp_fast_f32). */
static inline ts_vf
ts_vf_exp2_fast_(ts_vf t, TsExp2Poly_ q)
{
#if defined(__AVX512DQ__) && (TS_VEC == 16 || (defined(__AVX512VL__) && TS_VEC == 8))
  /* imm 0x09: round down, no precision exception, no fraction bits kept: f = t - floor(t);
   * vscalefps multiplies by 2^floor(t) */
#if TS_VEC == 16
  const __m512 f = _mm512_reduce_ps((__m512)t, 0x09);
  return (ts_vf)_mm512_scalef_ps((__m512)(TS_EXP2_POLY_(q, (ts_vf)f)), (__m512)t);
#else
  const __m256 f = _mm256_reduce_ps((__m256)t, 0x09);
  return (ts_vf)_mm256_scalef_ps((__m256)(TS_EXP2_POLY_(q, (ts_vf)f)), (__m256)t);
#endif
#else
  ts_vf n, f;
  ts_vi ni;
#if TS_EXP_SHORT_
  /* |t| <= 125: floor(t) within [-125, 125] and c 2^f within [1/2, 4] (c, q's q0, is within
   * [1/2, 2]; f rounded to nearest can be 1), so the result is normal and the clamp changes
   * nothing. Otherwise t < -152 rounds to +0 (c 2^t < 2^-150). */
  const int beyond = ts_vf_beyond_(t, 125.0f);
  ts_vi zero = {0};
  if (__builtin_expect(beyond, 0))
    t = ts_vf_exp_long_arg_(t, -152.0f, TS_EXP2_LO, TS_EXP2_HI, &zero);
  f = ts_vf_floor_frac_(t, &n, &ni);
  const ts_vf p = TS_EXP2_POLY_(q, f);
  if (__builtin_expect(!beyond, 1))
    return ts_vf_scale_normal_(p, ni);
  return (ts_vf)((ts_vi)ts_vf_exp_scale_(p, n, ni) & ~zero);
#else
  f = ts_vf_floor_frac_(ts_vf_clamp_(t, TS_EXP2_LO, TS_EXP2_HI), &n, &ni);
  return ts_vf_exp_scale_(TS_EXP2_POLY_(q, f), n, ni);
#endif
#endif
}

/* ts_exp_fast_f32 lane by lane: for results rounded to 16 bits. */
static inline ts_vf
ts_vf_exp_fast(ts_vf x)
{
  return ts_vf_exp2_fast_(x * TS_EXP_LOG2E, ts_exp2_poly_(1.0f));
}

#ifdef __FMA__
/* x log2(e) + nmh with one rounding, as the scalar exps' fmaf */
static inline ts_vf
ts_vf_fma_row_(ts_vf x, float nmh)
{
  ts_vf t;
#if defined(__AVX512F__) && TS_VEC == 16
  t = (ts_vf)_mm512_fmadd_ps((__m512)x, _mm512_set1_ps(TS_EXP_LOG2E), _mm512_set1_ps(nmh));
#elif TS_VEC == 8
  t = (ts_vf)_mm256_fmadd_ps((__m256)x, _mm256_set1_ps(TS_EXP_LOG2E), _mm256_set1_ps(nmh));
#elif TS_VEC == 4
  t = (ts_vf)_mm_fmadd_ps((__m128)x, _mm_set1_ps(TS_EXP_LOG2E), _mm_set1_ps(nmh));
#else /* 16 lanes without AVX-512 */
  for (int i = 0; i < TS_VEC; i++)
    t[i] = __builtin_fmaf(x[i], TS_EXP_LOG2E, nmh);
#endif
  return t;
}
#endif

/* exp(x - m) = c 2^t for the m of s: t lane by lane as ts_exp_fast_sub_row_f32 takes it, and
 * in *q the coefficients for it. The branch is the same for every vector of a row (and keeps
 * the subtraction, rarely needed, out of the exp's dependency chain). */
static inline ts_vf
ts_vf_exp_sub_arg_(ts_vf x, TsExpSub s, TsExp2Poly_ *q)
{
#ifdef __FMA__
  const ts_vf t = ts_vf_fma_row_(x, s.nmh);
  *q = s.q;
  if (__builtin_expect(s.sub == 0.0f, 1))
    return t;
  return t - s.sub;
#else
  *q = ts_exp2_poly_(1.0f);
  return (x - s.m) * TS_EXP_LOG2E;
#endif
}

/* ts_exp_fast_sub_row_f32 lane by lane: exp(x - m) for the m of s. */
static inline ts_vf
ts_vf_exp_fast_sub_row(ts_vf x, TsExpSub s)
{
  TsExp2Poly_ q;
  const ts_vf t = ts_vf_exp_sub_arg_(x, s, &q);
  return ts_vf_exp2_fast_(t, q);
}

/* ts_exp_fast_sub_f32 lane by lane; generated code calls ts_vf_exp_fast_sub_row */
static inline ts_vf
ts_vf_exp_fast_sub(ts_vf x, float m)
{
  return ts_vf_exp_fast_sub_row(x, ts_exp_sub_row(m));
}

/* c * 2^t for t in [-100, 125] (NaN too), where TS_EXP_SHORT_'s path needs no check */
static inline ts_vf
ts_vf_exp2_fast_h_(ts_vf t, TsExp2Poly_ q)
{
  t = ts_vf_max(ts_vf_splat(TS_EXP_H_LO_), t); /* MAXPS keeps a NaN t */
#if TS_EXP_SHORT_
  ts_vf n;
  ts_vi ni;
  const ts_vf f = ts_vf_floor_frac_(t, &n, &ni);
  return ts_vf_scale_normal_(TS_EXP2_POLY_(q, f), ni);
#else
  return ts_vf_exp2_fast_(t, q);
#endif
}

/* ts_exp_fast_sub_row_h_f32 lane by lane (softmax into f16) */
static inline ts_vf
ts_vf_exp_fast_sub_row_h(ts_vf x, TsExpSub s)
{
  TsExp2Poly_ q;
  const ts_vf t = ts_vf_exp_sub_arg_(x, s, &q);
  return ts_vf_exp2_fast_h_(t, q);
}

static inline ts_vf
ts_vf_exp_fast_sub_h(ts_vf x, float m)
{
  return ts_vf_exp_fast_sub_row_h(x, ts_exp_sub_row(m));
}

#endif /* TS_CPU_LIGHT */

/* ------------------------------------------------------------------------------------------ */
/* Out-of-line packing and output conversion                                                  */
/* ------------------------------------------------------------------------------------------ */

/* What a GEMM kernel calls besides its micro-kernel: inlined, the packs and conversions were
 * two thirds of a candidate's compile, yet they do not depend on the schedule's constants. The
 * CPU backend (runtime/cpu/ts-cpu-pch.c) compiles them once per compiler, flags and TS_VEC into
 * an object defining NAME_ol_ for each NAME below (TS_OUTLINE_DEFINE_), and compiles a kernel
 * that calls NAME with `#define NAME NAME_ol_` ahead of its code: one line per entry, read from
 * this list. A kernel compiled without that (the list changed, or the object is off) calls the
 * inline versions above and computes the same. */
#define TS_OUTLINE_LIST_(X)                                                                    \
  X(ts_pack_a_block_f32, (const float *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,         \
                          float *restrict p), (a, ld, mc, kc, mr, p))                            \
  X(ts_pack_a_block_bf16, (const uint16_t *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,     \
                           float *restrict p), (a, ld, mc, kc, mr, p))                           \
  X(ts_pack_a_block_f16, (const uint16_t *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,      \
                          float *restrict p), (a, ld, mc, kc, mr, p))                            \
  X(ts_pack_a_block_e4m3, (const uint8_t *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,      \
                           float *restrict p), (a, ld, mc, kc, mr, p))                           \
  X(ts_pack_a_block_e5m2, (const uint8_t *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,      \
                           float *restrict p), (a, ld, mc, kc, mr, p))                           \
  X(ts_pack_b_block_f32, (const float *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,         \
                          float *restrict p), (b, ld, kc, nc, nr, p))                            \
  X(ts_pack_b_block_bf16, (const uint16_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,     \
                           float *restrict p), (b, ld, kc, nc, nr, p))                           \
  X(ts_pack_b_block_f16, (const uint16_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,      \
                          float *restrict p), (b, ld, kc, nc, nr, p))                            \
  X(ts_pack_b_block_e4m3, (const uint8_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,      \
                           float *restrict p), (b, ld, kc, nc, nr, p))                           \
  X(ts_pack_b_block_e5m2, (const uint8_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,      \
                           float *restrict p), (b, ld, kc, nc, nr, p))                           \
  X(ts_pack_bt_block_f32, (const float *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,        \
                           float *restrict p), (b, ld, kc, nc, nr, p))                           \
  X(ts_pack_bt_block_bf16, (const uint16_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,    \
                            float *restrict p), (b, ld, kc, nc, nr, p))                          \
  X(ts_pack_bt_block_f16, (const uint16_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,     \
                           float *restrict p), (b, ld, kc, nc, nr, p))                           \
  X(ts_pack_bt_block_e4m3, (const uint8_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,     \
                            float *restrict p), (b, ld, kc, nc, nr, p))                          \
  X(ts_pack_bt_block_e5m2, (const uint8_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,     \
                            float *restrict p), (b, ld, kc, nc, nr, p))                          \
  X(ts_pack_a_block_bf16x2, (const uint16_t *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,   \
                             uint16_t *restrict p), (a, ld, mc, kc, mr, p))                      \
  X(ts_pack_b_block_bf16x2, (const uint16_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,   \
                             uint16_t *restrict p), (b, ld, kc, nc, nr, p))                      \
  X(ts_pack_a_block_amx, (const uint16_t *a, int64_t ld, int64_t mc, int64_t kc, int64_t mr,      \
                          uint16_t *restrict p), (a, ld, mc, kc, mr, p))                         \
  X(ts_pack_b_block_amx, (const uint16_t *b, int64_t ld, int64_t kc, int64_t nc, int64_t nr,      \
                          uint16_t *restrict p), (b, ld, kc, nc, nr, p))                         \
  X(ts_store_f32_as_bf16, (const float *src, uint16_t *dst, int64_t n), (src, dst, n))           \
  X(ts_store_f32_as_f16, (const float *src, uint16_t *dst, int64_t n), (src, dst, n))

/* Hidden: each kernel's shared object has its own copy, as with the shared micro-kernels. */
#define TS_OUTLINE_DECLARE_(name, params, args)                                                 \
  __attribute__((visibility("hidden"))) void name##_ol_ params;
#define TS_OUTLINE_DEFINE_(name, params, args)                                                  \
  __attribute__((visibility("hidden"))) void name##_ol_ params { name args; }
TS_OUTLINE_LIST_(TS_OUTLINE_DECLARE_)

#endif /* TS_CPU_PRIMS_H */
