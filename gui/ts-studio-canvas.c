/* ts-studio-canvas.c — the canvas's two sinks. The cairo sink forwards to cairo; the SVG sink
 * writes elements that keep the views' groups, ids and titles. Both lay text out with Pango
 * (the SVG sink on a scratch surface), so text sizes agree between the window and the file. */
#include "ts-studio-canvas.h"
#include "ts-output.h"

#include <math.h>
#include <pango/pangocairo.h>

#include "ts-studio-data.h"

typedef struct {
  TsRgba color;
  double line_width, dash_on, dash_off, font_px;
  gboolean monospace;
  guint svg_closes; /* SVG: </g> owed when this state is popped (the group, its clips) */
} CanvasState;

struct _TsCanvas {
  gboolean svg;
  cairo_t *cr;               /* the target (cairo sink) or the scratch context (SVG sink) */
  cairo_surface_t *scratch;  /* SVG sink only */
  GString *out;              /* SVG sink only */
  double width, height;
  GArray *stack;             /* CanvasState; the last is current */
  PangoLayout *layout;
  guint n_clips;
};

static CanvasState *
state(TsCanvas *c)
{
  return &g_array_index(c->stack, CanvasState, c->stack->len - 1);
}

static void
init_common(TsCanvas *c)
{
  c->stack = g_array_new(FALSE, TRUE, sizeof(CanvasState));
  CanvasState s = {.color = {0, 0, 0, 1}, .line_width = 1, .font_px = 12};
  g_array_append_val(c->stack, s);
  c->layout = pango_cairo_create_layout(c->cr);
}

TsCanvas *
ts_canvas_new_cairo(cairo_t *cr)
{
  g_return_val_if_fail(cr != NULL, NULL);
  TsCanvas *c = g_new0(TsCanvas, 1);
  c->cr = cairo_reference(cr);
  init_common(c);
  return c;
}

/* Numbers in SVG are C-locale decimals whatever the user's locale says. */
static void
num(GString *s, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  if (!isfinite(v))
    v = 0;
  g_string_append(s, g_ascii_formatd(buf, sizeof buf, "%.2f", v));
}

/* A numeric attribute: ` name="v"`. */
static void
attr(GString *s, const char *name, double v)
{
  g_string_append_printf(s, " %s=\"", name);
  num(s, v);
  g_string_append_c(s, '"');
}

TsCanvas *
ts_canvas_new_svg(double width, double height)
{
  TsCanvas *c = g_new0(TsCanvas, 1);
  c->svg = TRUE;
  c->width = width;
  c->height = height;
  c->scratch = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  c->cr = cairo_create(c->scratch);
  c->out = g_string_new("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                        "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\"");
  attr(c->out, "width", width);
  attr(c->out, "height", height);
  g_string_append(c->out, " viewBox=\"0 0 ");
  num(c->out, width);
  g_string_append_c(c->out, ' ');
  num(c->out, height);
  g_string_append(c->out, "\">\n");
  init_common(c);
  return c;
}

void
ts_canvas_free(TsCanvas *c)
{
  if (c == NULL)
    return;
  g_clear_object(&c->layout);
  cairo_destroy(c->cr);
  if (c->scratch)
    cairo_surface_destroy(c->scratch);
  if (c->out)
    g_string_free(c->out, TRUE);
  g_array_unref(c->stack);
  g_free(c);
}

gboolean
ts_canvas_is_svg(const TsCanvas *c)
{
  return c->svg;
}

char *
ts_canvas_svg_finish(TsCanvas *c)
{
  g_return_val_if_fail(c != NULL && c->svg, NULL);
  while (c->stack->len > 1)
    ts_canvas_end(c);
  for (guint i = 0; i < state(c)->svg_closes; i++)
    g_string_append(c->out, "</g>\n");
  state(c)->svg_closes = 0;
  g_string_append(c->out, "</svg>\n");
  return g_strdup(c->out->str);
}

/* ---- state ---- */

void
ts_canvas_set_color(TsCanvas *c, TsRgba color)
{
  state(c)->color = color;
}

void
ts_canvas_set_line_width(TsCanvas *c, double width)
{
  state(c)->line_width = width;
}

void
ts_canvas_set_dash(TsCanvas *c, double on, double off)
{
  state(c)->dash_on = on;
  state(c)->dash_off = off;
}

void
ts_canvas_set_font_size(TsCanvas *c, double px)
{
  state(c)->font_px = px;
}

void
ts_canvas_set_monospace(TsCanvas *c, gboolean monospace)
{
  state(c)->monospace = monospace;
}

static void
escape_attr(GString *s, const char *name, const char *value)
{
  if (value == NULL)
    return;
  g_autofree char *e = g_markup_escape_text(value, -1);
  g_string_append_printf(s, " %s=\"%s\"", name, e);
}

void
ts_canvas_begin(TsCanvas *c, const char *cls, const char *id, const char *title)
{
  CanvasState s = *state(c);
  s.svg_closes = 0;
  if (c->svg) {
    g_string_append(c->out, "<g");
    escape_attr(c->out, "class", cls);
    escape_attr(c->out, "id", id);
    g_string_append_c(c->out, '>');
    if (title) {
      g_autofree char *e = g_markup_escape_text(title, -1);
      g_string_append_printf(c->out, "<title>%s</title>", e);
    }
    g_string_append_c(c->out, '\n');
    s.svg_closes = 1;
  } else {
    cairo_save(c->cr);
  }
  g_array_append_val(c->stack, s);
}

void
ts_canvas_end(TsCanvas *c)
{
  g_return_if_fail(c->stack->len > 1);
  if (c->svg) {
    for (guint i = 0; i < state(c)->svg_closes; i++)
      g_string_append(c->out, "</g>\n");
  } else {
    cairo_restore(c->cr);
  }
  g_array_set_size(c->stack, c->stack->len - 1);
}

void
ts_canvas_clip(TsCanvas *c, double x, double y, double w, double h)
{
  if (!c->svg) {
    cairo_rectangle(c->cr, x, y, w, h);
    cairo_clip(c->cr);
    return;
  }
  guint n = ++c->n_clips;
  g_string_append_printf(c->out, "<clipPath id=\"clip%u\"><rect", n);
  attr(c->out, "x", x);
  attr(c->out, "y", y);
  attr(c->out, "width", w);
  attr(c->out, "height", h);
  g_string_append_printf(c->out, "/></clipPath>\n<g clip-path=\"url(#clip%u)\">\n", n);
  state(c)->svg_closes++;
}

/* ---- SVG paint attributes ---- */

static void
svg_color(GString *s, const char *what, TsRgba color)
{
  g_string_append_printf(s, " %s=\"#%02x%02x%02x\"", what,
                         (guint)lround(CLAMP(color.r, 0, 1) * 255),
                         (guint)lround(CLAMP(color.g, 0, 1) * 255),
                         (guint)lround(CLAMP(color.b, 0, 1) * 255));
  if (color.a < 1) {
    g_autofree char *name = g_strconcat(what, "-opacity", NULL);
    attr(s, name, CLAMP(color.a, 0, 1));
  }
}

static void
svg_fill(TsCanvas *c)
{
  svg_color(c->out, "fill", state(c)->color);
}

static void
svg_stroke(TsCanvas *c)
{
  CanvasState *s = state(c);
  g_string_append(c->out, " fill=\"none\"");
  svg_color(c->out, "stroke", s->color);
  attr(c->out, "stroke-width", s->line_width);
  if (s->dash_on > 0) {
    g_string_append(c->out, " stroke-dasharray=\"");
    num(c->out, s->dash_on);
    g_string_append_c(c->out, ',');
    num(c->out, s->dash_off);
    g_string_append_c(c->out, '"');
  }
}

static void
svg_points(TsCanvas *c, const double *xy, guint n)
{
  g_string_append(c->out, " points=\"");
  for (guint i = 0; i < n; i++) {
    if (i)
      g_string_append_c(c->out, ' ');
    num(c->out, xy[2 * i]);
    g_string_append_c(c->out, ',');
    num(c->out, xy[2 * i + 1]);
  }
  g_string_append_c(c->out, '"');
}

/* ---- cairo paint ---- */

static void
cairo_source(TsCanvas *c)
{
  TsRgba k = state(c)->color;
  cairo_set_source_rgba(c->cr, k.r, k.g, k.b, k.a);
}

static void
cairo_stroke_now(TsCanvas *c)
{
  CanvasState *s = state(c);
  cairo_source(c);
  cairo_set_line_width(c->cr, s->line_width);
  if (s->dash_on > 0) {
    double d[2] = {s->dash_on, s->dash_off};
    cairo_set_dash(c->cr, d, 2, 0);
  } else {
    cairo_set_dash(c->cr, NULL, 0, 0);
  }
  cairo_stroke(c->cr);
}

/* ---- shapes ---- */

void
ts_canvas_fill_background(TsCanvas *c, TsRgba color)
{
  if (c->svg) {
    g_string_append(c->out, "<rect class=\"background\" x=\"0\" y=\"0\" width=\"100%\" "
                            "height=\"100%\"");
    svg_color(c->out, "fill", color);
    g_string_append(c->out, "/>\n");
    return;
  }
  cairo_save(c->cr);
  cairo_set_source_rgba(c->cr, color.r, color.g, color.b, color.a);
  cairo_paint(c->cr);
  cairo_restore(c->cr);
}

void
ts_canvas_line(TsCanvas *c, double x0, double y0, double x1, double y1)
{
  double xy[4] = {x0, y0, x1, y1};
  ts_canvas_polyline(c, xy, 2);
}

void
ts_canvas_polyline(TsCanvas *c, const double *xy, guint n)
{
  if (n < 2)
    return;
  if (c->svg) {
    g_string_append(c->out, "<polyline");
    svg_points(c, xy, n);
    svg_stroke(c);
    g_string_append(c->out, "/>\n");
    return;
  }
  cairo_move_to(c->cr, xy[0], xy[1]);
  for (guint i = 1; i < n; i++)
    cairo_line_to(c->cr, xy[2 * i], xy[2 * i + 1]);
  cairo_stroke_now(c);
}

void
ts_canvas_polygon(TsCanvas *c, const double *xy, guint n)
{
  if (n < 3)
    return;
  if (c->svg) {
    g_string_append(c->out, "<polygon");
    svg_points(c, xy, n);
    svg_fill(c);
    g_string_append(c->out, "/>\n");
    return;
  }
  cairo_move_to(c->cr, xy[0], xy[1]);
  for (guint i = 1; i < n; i++)
    cairo_line_to(c->cr, xy[2 * i], xy[2 * i + 1]);
  cairo_close_path(c->cr);
  cairo_source(c);
  cairo_fill(c->cr);
}

static void
svg_rect(TsCanvas *c, double x, double y, double w, double h)
{
  g_string_append(c->out, "<rect");
  attr(c->out, "x", x);
  attr(c->out, "y", y);
  attr(c->out, "width", w);
  attr(c->out, "height", h);
}

void
ts_canvas_rect(TsCanvas *c, double x, double y, double w, double h, gboolean fill)
{
  if (c->svg) {
    svg_rect(c, x, y, w, h);
    if (fill)
      svg_fill(c);
    else
      svg_stroke(c);
    g_string_append(c->out, "/>\n");
    return;
  }
  cairo_rectangle(c->cr, x, y, w, h);
  if (fill) {
    cairo_source(c);
    cairo_fill(c->cr);
  } else {
    cairo_stroke_now(c);
  }
}

void
ts_canvas_marker(TsCanvas *c, TsCanvasMarker shape, double x, double y, double r)
{
  switch (shape) {
  case TS_CANVAS_MARKER_CIRCLE:
    if (c->svg) {
      g_string_append(c->out, "<circle");
      attr(c->out, "cx", x);
      attr(c->out, "cy", y);
      attr(c->out, "r", r);
      svg_fill(c);
      g_string_append(c->out, "/>\n");
    } else {
      cairo_new_sub_path(c->cr);
      cairo_arc(c->cr, x, y, r, 0, 2 * G_PI);
      cairo_source(c);
      cairo_fill(c->cr);
    }
    break;
  case TS_CANVAS_MARKER_SQUARE:
    ts_canvas_rect(c, x - r, y - r, 2 * r, 2 * r, TRUE);
    break;
  case TS_CANVAS_MARKER_DIAMOND: {
    double xy[8] = {x, y - r, x + r, y, x, y + r, x - r, y};
    ts_canvas_polygon(c, xy, 4);
    break;
  }
  case TS_CANVAS_MARKER_CROSS:
    if (c->svg) {
      const double ends[8] = {x - r, y - r, x + r, y + r, x - r, y + r, x + r, y - r};
      g_string_append(c->out, "<path d=\"");
      for (guint i = 0; i < 4; i++) {
        g_string_append(c->out, i % 2 ? "L" : "M");
        num(c->out, ends[2 * i]);
        g_string_append_c(c->out, ' ');
        num(c->out, ends[2 * i + 1]);
      }
      g_string_append_c(c->out, '"');
      svg_stroke(c);
      g_string_append(c->out, "/>\n");
    } else {
      cairo_move_to(c->cr, x - r, y - r);
      cairo_line_to(c->cr, x + r, y + r);
      cairo_move_to(c->cr, x - r, y + r);
      cairo_line_to(c->cr, x + r, y - r);
      cairo_stroke_now(c);
    }
    break;
  }
}

/* ---- text ---- */

static void
layout_text(TsCanvas *c, const char *text)
{
  CanvasState *s = state(c);
  PangoFontDescription *fd =
    pango_font_description_from_string(s->monospace ? "Monospace" : "Sans");
  pango_font_description_set_absolute_size(fd, s->font_px * PANGO_SCALE);
  pango_layout_set_font_description(c->layout, fd);
  pango_font_description_free(fd);
  pango_layout_set_text(c->layout, text, -1);
}

void
ts_canvas_text_size(TsCanvas *c, const char *text, double *width, double *height)
{
  layout_text(c, text);
  int w, h;
  pango_layout_get_pixel_size(c->layout, &w, &h);
  if (width)
    *width = w;
  if (height)
    *height = h;
}

static double
align_factor(TsCanvasAlign a)
{
  return a == TS_CANVAS_ALIGN_START ? 0 : a == TS_CANVAS_ALIGN_CENTER ? 0.5 : 1;
}

void
ts_canvas_text(TsCanvas *c, double x, double y, const char *text, TsCanvasAlign halign,
               TsCanvasAlign valign, double angle)
{
  if (text == NULL || *text == '\0')
    return;
  layout_text(c, text);
  int w, h;
  pango_layout_get_pixel_size(c->layout, &w, &h);
  double dx = -align_factor(halign) * w, dy = -align_factor(valign) * h;
  if (c->svg) {
    double baseline = pango_layout_get_baseline(c->layout) / (double)PANGO_SCALE;
    g_autofree char *e = g_markup_escape_text(text, -1);
    g_string_append(c->out, "<text");
    attr(c->out, "x", x + dx);
    attr(c->out, "y", y + dy + baseline);
    attr(c->out, "font-size", state(c)->font_px);
    g_string_append_printf(c->out, " font-family=\"%s\"",
                           state(c)->monospace ? "monospace" : "sans-serif");
    svg_fill(c);
    if (angle != 0) {
      g_string_append(c->out, " transform=\"rotate(");
      num(c->out, angle * 180 / G_PI);
      g_string_append_c(c->out, ' ');
      num(c->out, x);
      g_string_append_c(c->out, ' ');
      num(c->out, y);
      g_string_append(c->out, ")\"");
    }
    g_string_append_printf(c->out, ">%s</text>\n", e);
    return;
  }
  cairo_save(c->cr);
  cairo_translate(c->cr, x, y);
  if (angle != 0)
    cairo_rotate(c->cr, angle);
  cairo_move_to(c->cr, dx, dy);
  cairo_source(c);
  pango_cairo_update_layout(c->cr, c->layout);
  pango_cairo_show_layout(c->cr, c->layout);
  cairo_restore(c->cr);
}

/* ---- export ---- */

gboolean
ts_canvas_export(const char *path, double width, double height, double scale,
                 TsCanvasDrawFunc draw, gpointer data, GError **error)
{
  g_return_val_if_fail(path != NULL && draw != NULL, FALSE);
  if (g_str_has_suffix(path, ".svg")) {
    g_autoptr(TsCanvas) c = ts_canvas_new_svg(width, height);
    draw(c, width, height, data);
    g_autofree char *svg = ts_canvas_svg_finish(c);
    g_autoptr(GError) local = NULL;
    if (!ts_output_write(path, svg, -1, &local)) {
      g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT, "cannot write %s: %s", path,
                  local->message);
      return FALSE;
    }
    return TRUE;
  }
  if (!g_str_has_suffix(path, ".png")) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT,
                "%s: unknown image format (the output's name must end in .svg or .png)", path);
    return FALSE;
  }
  if (scale <= 0)
    scale = 1;
  cairo_surface_t *surface = cairo_image_surface_create(
    CAIRO_FORMAT_ARGB32, (int)ceil(width * scale), (int)ceil(height * scale));
  cairo_t *cr = cairo_create(surface);
  cairo_scale(cr, scale, scale);
  TsCanvas *c = ts_canvas_new_cairo(cr);
  draw(c, width, height, data);
  ts_canvas_free(c);
  cairo_destroy(cr);
  cairo_status_t st = cairo_surface_write_to_png(surface, path);
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) {
    g_set_error(error, TS_STUDIO_ERROR, TS_STUDIO_ERROR_EXPORT, "cannot write %s: %s", path,
                cairo_status_to_string(st));
    return FALSE;
  }
  return TRUE;
}
