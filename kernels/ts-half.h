/* ts-half.h — 16-bit float conversions (bf16, f16 as uint16_t bit patterns). GLib-free. */
#pragma once

#include <stdint.h>

/* Round-to-nearest-even conversions; NaN stays NaN, overflow rounds to Inf, f16 subnormals kept. */
float ts_bf16_to_f32(uint16_t bits);
uint16_t ts_f32_to_bf16(float value);
float ts_f16_to_f32(uint16_t bits);
uint16_t ts_f32_to_f16(float value);
