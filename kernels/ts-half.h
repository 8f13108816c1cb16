/* ts-half.h — 16- and 8-bit float conversions (bf16, f16 as uint16_t bit patterns; fp8 as
 * uint8_t). GLib-free. */
#pragma once

#include <stdint.h>

/* Round-to-nearest-even conversions; NaN stays NaN, overflow rounds to Inf, f16 subnormals kept. */
float ts_bf16_to_f32(uint16_t bits);
uint16_t ts_f32_to_bf16(float value);
float ts_f16_to_f32(uint16_t bits);
uint16_t ts_f32_to_f16(float value);

/* fp8, the OCP 8-bit floats: e4m3 (E4M3FN: bias 7, no Inf, NaN only as S.1111.111, largest
 * finite 448, smallest subnormal 2^-9) and e5m2 (bias 15, IEEE-like with Inf and NaNs, largest
 * finite 57344, smallest subnormal 2^-16). Round to nearest, ties to even. With `saturate`,
 * overflow and Inf become the largest finite value of that sign (what PTX's cvt.rn.satfinite
 * does); without, overflow is NaN in e4m3 and Inf in e5m2. NaN stays NaN. */
float ts_fp8_e4m3_to_f32(uint8_t bits);
uint8_t ts_f32_to_fp8_e4m3(float value, int saturate);
float ts_fp8_e5m2_to_f32(uint8_t bits);
uint8_t ts_f32_to_fp8_e5m2(float value, int saturate);
