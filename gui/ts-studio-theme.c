/* ts-studio-theme.c — the light and dark palettes. Status colours keep their meaning across
 * both (green verified, red wrong result, ...); series colours are Tableau's 10 minus the two
 * that read as status, lighter on dark backgrounds. */
#include "ts-studio-theme.h"

#include <string.h>

#define RGB(hex) {((hex) >> 16 & 0xff) / 255.0, ((hex) >> 8 & 0xff) / 255.0, ((hex) & 0xff) / 255.0, 1}

static const TsStudioTheme light = {
  .dark = FALSE,
  .background = RGB(0xffffff),
  .foreground = RGB(0x1e1e1e),
  .muted = RGB(0x6e6e6e),
  .grid = RGB(0xe4e4e4),
  .frame = RGB(0x9a9a9a),
  .accent = RGB(0x1c71d8),
  .highlight = RGB(0xe5a50a),
  .status = {RGB(0x26a269), RGB(0x9141ac), RGB(0xc64600), RGB(0x865e3c), RGB(0xc01c28)},
  .series = {RGB(0x4e79a7), RGB(0xf28e2b), RGB(0x76b7b2), RGB(0xb07aa1), RGB(0x9c755f),
             RGB(0xedc948), RGB(0xff9da7), RGB(0x59a14f)},
  .compute_roof = RGB(0x1e1e1e),
  .memory_roof = RGB(0x1c71d8),
};

static const TsStudioTheme dark = {
  .dark = TRUE,
  .background = RGB(0x1e1e1e),
  .foreground = RGB(0xf0f0f0),
  .muted = RGB(0xa0a0a0),
  .grid = RGB(0x383838),
  .frame = RGB(0x707070),
  .accent = RGB(0x78aeed),
  .highlight = RGB(0xf8e45c),
  .status = {RGB(0x57e389), RGB(0xc061cb), RGB(0xff7800), RGB(0xcdab8f), RGB(0xff7b63)},
  .series = {RGB(0x7aa6d6), RGB(0xffae5c), RGB(0x9fd8d3), RGB(0xd3a6c8), RGB(0xc9a48e),
             RGB(0xf5dc7a), RGB(0xffc2c8), RGB(0x8cd17d)},
  .compute_roof = RGB(0xf0f0f0),
  .memory_roof = RGB(0x78aeed),
};

const TsStudioTheme *
ts_studio_theme(gboolean is_dark)
{
  return is_dark ? &dark : &light;
}

/* The strategies and trace kinds get fixed slots so two of them never share a colour; any
 * other name hashes to a slot. */
static const char *const fixed[TS_STUDIO_N_SERIES] = {
  "exhaustive", "random", "annealing", "evolutionary", "model", "replay", "kernel", "memcpy",
};

TsRgba
ts_studio_theme_series(const TsStudioTheme *theme, const char *name)
{
  if (name == NULL)
    return theme->muted;
  for (guint i = 0; i < TS_STUDIO_N_SERIES; i++)
    if (strcmp(fixed[i], name) == 0)
      return theme->series[i];
  return theme->series[g_str_hash(name) % TS_STUDIO_N_SERIES];
}

TsRgba
ts_studio_rgba_alpha(TsRgba color, double alpha)
{
  color.a = alpha;
  return color;
}
