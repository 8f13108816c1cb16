/* ts-studio-canvas.h — one drawing interface, two sinks: cairo (the window, PNG export) and SVG
 * (export). Every view draws through it, so the plot on screen and the exported file are the
 * same drawing code.
 *
 * Why not cairo's own SVG surface: it writes anonymous paths, so an exported roofline cannot
 * say which mark is which trial. The SVG sink keeps the views' semantics instead: groups carry
 * a class, an id and a title (the hover text), markers become <circle>/<rect> elements, text
 * stays text. A report, a CI artefact or a test can then read the file ("one element of class
 * 'trial ok' per verified trial").
 *
 * Coordinates are in device-independent pixels, origin top left, y down. Text is laid out with
 * Pango in both sinks, so widths measured for layout are the same on screen and in the file. */
#pragma once

#include <cairo.h>
#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  double r, g, b, a;
} TsRgba;

typedef enum {
  TS_CANVAS_ALIGN_START,  /* left / top */
  TS_CANVAS_ALIGN_CENTER,
  TS_CANVAS_ALIGN_END,    /* right / bottom */
} TsCanvasAlign;

typedef enum {
  TS_CANVAS_MARKER_CIRCLE,
  TS_CANVAS_MARKER_SQUARE,
  TS_CANVAS_MARKER_DIAMOND,
  TS_CANVAS_MARKER_CROSS, /* stroked: failures */
} TsCanvasMarker;

typedef struct _TsCanvas TsCanvas;

/* Draws onto cr (borrowed; its current transformation is the canvas's). */
TsCanvas *ts_canvas_new_cairo(cairo_t *cr);
/* Records an SVG document of width x height pixels; ts_canvas_svg_finish returns it. */
TsCanvas *ts_canvas_new_svg(double width, double height);
void ts_canvas_free(TsCanvas *canvas);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TsCanvas, ts_canvas_free)
/* The document so far, closed (open groups are closed). Only for SVG canvases. */
char *ts_canvas_svg_finish(TsCanvas *canvas);
gboolean ts_canvas_is_svg(const TsCanvas *canvas);

/* State: colour (fill and stroke), line width, dash (on 0: solid), font size in px. A group
 * saves and restores it. */
void ts_canvas_set_color(TsCanvas *canvas, TsRgba color);
void ts_canvas_set_line_width(TsCanvas *canvas, double width);
void ts_canvas_set_dash(TsCanvas *canvas, double on, double off);
void ts_canvas_set_font_size(TsCanvas *canvas, double px);
void ts_canvas_set_monospace(TsCanvas *canvas, gboolean monospace);

/* A semantic group: SVG <g class="cls" id="id"><title>title</title>...</g>; on cairo a
 * save/restore. Each of cls, id, title may be NULL. Groups nest. */
void ts_canvas_begin(TsCanvas *canvas, const char *cls, const char *id, const char *title);
void ts_canvas_end(TsCanvas *canvas);
/* Clips what follows (until the enclosing group ends) to a rectangle. */
void ts_canvas_clip(TsCanvas *canvas, double x, double y, double w, double h);

void ts_canvas_fill_background(TsCanvas *canvas, TsRgba color);
void ts_canvas_line(TsCanvas *canvas, double x0, double y0, double x1, double y1);
/* n points as x0,y0,x1,y1,...: stroked open polyline, or filled closed polygon. */
void ts_canvas_polyline(TsCanvas *canvas, const double *xy, guint n);
void ts_canvas_polygon(TsCanvas *canvas, const double *xy, guint n);
void ts_canvas_rect(TsCanvas *canvas, double x, double y, double w, double h, gboolean fill);
/* A marker of radius r centred on x, y (filled, except CROSS which is stroked). */
void ts_canvas_marker(TsCanvas *canvas, TsCanvasMarker shape, double x, double y, double r);
/* One line of text anchored at x, y by halign/valign, rotated by angle radians about the
 * anchor (-G_PI/2: reads bottom to top, for a y-axis title). */
void ts_canvas_text(TsCanvas *canvas, double x, double y, const char *text, TsCanvasAlign halign,
                    TsCanvasAlign valign, double angle);
/* Width and height in px of text at the current font. */
void ts_canvas_text_size(TsCanvas *canvas, const char *text, double *width, double *height);

/* Renders draw(canvas, width, height, data) to a file without a window: FILE.svg through the
 * SVG sink, FILE.png through a cairo image surface at scale (1 or 2). The format is taken from
 * the extension; any other is an error naming the path. */
typedef void (*TsCanvasDrawFunc)(TsCanvas *canvas, double width, double height, gpointer data);
gboolean ts_canvas_export(const char *path, double width, double height, double scale,
                          TsCanvasDrawFunc draw, gpointer data, GError **error);

G_END_DECLS
