/* ts-half.c — bf16/f16/fp8 conversions, round-to-nearest-even, done with integer bit manipulation
 * so the result does not depend on the host FPU or compiler flags. A file of its own: the MPI
 * module's collectives (coll/ts-coll-mpi.c) link it without the rest of the numerics. */
#include "ts-half.h"

#include <math.h>
#include <string.h>

static uint32_t
f32_bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float
bits_f32(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

float
ts_bf16_to_f32(uint16_t bits)
{
  return bits_f32((uint32_t)bits << 16);
}

uint16_t
ts_f32_to_bf16(float value)
{
  uint32_t u = f32_bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    /* NaN: keep the payload's top bits; if they are all zero the result would read as Inf, so
     * set the quiet bit instead. */
    uint16_t h = (uint16_t)(u >> 16);
    return (h & 0x7f) != 0 ? h : (uint16_t)(h | 0x40);
  }
  /* Adding 0x7fff plus the lsb of the kept half rounds to nearest, ties to even; a carry out of
   * the largest finite value lands exactly on Inf, which is the right overflow result. */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

float
ts_f16_to_f32(uint16_t bits)
{
  uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu;
  uint32_t mant = bits & 0x3ffu;
  if (exp == 0x1f) /* Inf or NaN, payload kept */
    return bits_f32(sign | 0x7f800000u | (mant << 13));
  if (exp != 0)
    return bits_f32(sign | ((exp + 127 - 15) << 23) | (mant << 13));
  /* Zero or subnormal: mant * 2^-24 is exact in f32. */
  float v = ldexpf((float)mant, -24);
  return sign ? -v : v;
}

uint16_t
ts_f32_to_f16(float value)
{
  uint32_t u = f32_bits(value);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    if (a == 0x7f800000u)
      return sign | 0x7c00u;
    uint16_t m = (uint16_t)((a >> 13) & 0x3ffu);
    return sign | 0x7c00u | (m != 0 ? m : 0x200u);
  }
  int e32 = (int)(a >> 23);
  uint32_t m32 = (a & 0x7fffffu) | (e32 != 0 ? 0x800000u : 0);
  int e16 = e32 - 127 + 15;
  if (e16 >= 31)
    return sign | 0x7c00u;
  uint32_t r;
  int shift;
  if (e16 <= 0) {
    /* Subnormal result: the value is m32 * 2^(e32-150) and we need it in units of 2^-24, so the
     * shift is 126 - e32 (>= 14 here); 25 and beyond leaves less than half an ulp. */
    shift = 126 - e32;
    if (shift > 24)
      return sign;
    r = m32 >> shift;
  } else {
    shift = 13;
    r = ((uint32_t)e16 << 10) | ((m32 & 0x7fffffu) >> 13);
  }
  uint32_t rem = m32 & ((1u << shift) - 1u), half = 1u << (shift - 1);
  /* Ties to even; a carry into the exponent field is the correct next binade (or Inf). */
  if (rem > half || (rem == half && (r & 1u)))
    r++;
  return sign | (uint16_t)r;
}

/* ---- fp8 ---- */

/* An 8-bit format: exponent and mantissa widths, its largest finite magnitude pattern, and how
 * it spells Inf (0: it has none) and NaN. */
typedef struct {
  int ebits, mbits;
  uint8_t max_finite, inf, nan;
} Fp8Format;

static const Fp8Format e4m3 = {4, 3, 0x7e, 0, 0x7f};
static const Fp8Format e5m2 = {5, 2, 0x7b, 0x7c, 0x7f};

static float
fp8_to_f32(const Fp8Format *f, uint8_t bits)
{
  const int bias = (1 << (f->ebits - 1)) - 1, emax = (1 << f->ebits) - 1;
  const int e = (bits & 0x7f) >> f->mbits, m = bits & ((1 << f->mbits) - 1);
  float v;
  if ((bits & 0x7f) == f->nan || (f->inf && e == emax && m != 0))
    v = NAN;
  else if (f->inf && (bits & 0x7f) == f->inf)
    v = INFINITY;
  else if (e == 0)
    v = ldexpf((float)m, 1 - bias - f->mbits); /* exact: a few bits times a power of two */
  else
    v = ldexpf((float)(m | 1 << f->mbits), e - bias - f->mbits);
  return (bits & 0x80) ? -v : v;
}

static uint8_t
f32_to_fp8(const Fp8Format *f, float value, int saturate)
{
  const uint32_t u = f32_bits(value), a = u & 0x7fffffffu;
  const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  const uint8_t over = saturate ? f->max_finite : f->inf ? f->inf : f->nan;
  if (a > 0x7f800000u)
    return sign | f->nan;
  if (a == 0x7f800000u)
    return sign | over;
  const int bias = (1 << (f->ebits - 1)) - 1;
  const int e32 = (int)(a >> 23), e_eff = e32 != 0 ? e32 : 1;
  const uint32_t m32 = (a & 0x7fffffu) | (e32 != 0 ? 0x800000u : 0);
  const int e8 = e32 - 127 + bias;
  if (e8 >= (1 << f->ebits))
    return sign | over;
  uint32_t r;
  int shift;
  if (e8 <= 0) {
    /* Subnormal result: the value is m32 * 2^(e_eff - 150), wanted in units of 2^(1 - bias -
     * mbits); past 24 bits of shift less than half a unit is left. */
    shift = 151 - bias - f->mbits - e_eff;
    if (shift > 24)
      return sign;
    r = m32 >> shift;
  } else {
    shift = 23 - f->mbits;
    r = ((uint32_t)e8 << f->mbits) | ((m32 & 0x7fffffu) >> shift);
  }
  const uint32_t rem = m32 & ((1u << shift) - 1u), half = 1u << (shift - 1);
  /* Ties to even; a carry into the exponent field is the next binade, and past the largest
   * finite pattern (into e4m3's NaN or e5m2's Inf) it is an overflow. */
  if (rem > half || (rem == half && (r & 1u)))
    r++;
  return sign | (r > f->max_finite ? over : (uint8_t)r);
}

float
ts_fp8_e4m3_to_f32(uint8_t bits)
{
  return fp8_to_f32(&e4m3, bits);
}

uint8_t
ts_f32_to_fp8_e4m3(float value, int saturate)
{
  return f32_to_fp8(&e4m3, value, saturate);
}

float
ts_fp8_e5m2_to_f32(uint8_t bits)
{
  return fp8_to_f32(&e5m2, bits);
}

uint8_t
ts_f32_to_fp8_e5m2(float value, int saturate)
{
  return f32_to_fp8(&e5m2, value, saturate);
}
