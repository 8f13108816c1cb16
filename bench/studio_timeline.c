/* studio_timeline — how long tessera-studio's timeline takes to prepare and to draw a frame of
 * 10^4, 10^5 and 10^6 events, against the 16 ms of a 60 Hz frame.
 *
 * The traces are synthesised as a tuning session records them: per trial, an NVTX range with a
 * compile, warm-up and measure ranges (the measure split into batches) on the host thread,
 * kernels spread over 4 device streams, a copy in and out, and the trial's buffers allocated and
 * freed on the device. Frames are drawn into a 1600x900 image surface (as the window's cairo
 * node is) with the whole span, 1/1000 of it in the middle, and a deep zoom of a few kernels;
 * each figure is the median of several frames, since the machine is shared and noisy.
 *
 *   studio_timeline [--frames N] [--max-events N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ts-studio-timeline.h"
#include "ts-trace.h"

#define WIDTH 1600
#define HEIGHT 900
#define N_STREAMS 4
#define KERNELS_PER_TRIAL 40

static const char *kernel_names[] = {
    "gemm_f32_128x128_k8", "gemm_f32_64x128_k16", "gemm_f16_wgmma_128x256", "softmax_rows_1024",
    "layernorm_f32_4096",  "reduce_sum_f32",      "conv2d_nhwc_3x3",        "l2_flush",
};

/* A duration around mean_ns, log-normally spread as kernel times are. */
static gint64
spread(GRand *rng, double mean_ns)
{
  double u1 = g_rand_double_range(rng, 1e-9, 1), u2 = g_rand_double(rng);
  double z = sqrt(-2 * log(u1)) * cos(2 * G_PI * u2);
  return MAX(1, (gint64)(mean_ns * exp(0.5 * z - 0.125)));
}

static void
add(GArray *a, const char *kind, const char *name, gint64 start, gint64 dur, guint64 bytes,
    guint64 address, guint32 lane, guint32 depth)
{
  TsDbEvent e = {
      .kind = g_intern_static_string(kind),
      .name = g_intern_string(name),
      .start_ns = start,
      .dur_ns = dur,
      .bytes = bytes,
      .address = address,
      .lane = lane,
      .depth = depth,
  };
  g_array_append_val(a, e);
}

static int
cmp_start(gconstpointer pa, gconstpointer pb)
{
  const TsDbEvent *a = pa, *b = pb;
  if (a->start_ns != b->start_ns)
    return a->start_ns < b->start_ns ? -1 : 1;
  return a->dur_ns > b->dur_ns ? -1 : a->dur_ns < b->dur_ns;
}

static GArray *
synthesise(guint target, guint32 seed)
{
  g_autoptr(GRand) rng = g_rand_new_with_seed(seed);
  GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(TsDbEvent), target + 128);
  const guint32 host = 1, dev = TS_TRACE_DEVICE_LANE;
  gint64 t = 0;
  guint64 next_address = 0x7f0000000000;
  for (guint trial = 0; a->len < target; trial++) {
    gint64 trial_start = t;
    char name[32];
    /* Compile: mostly a cache hit, sometimes a real build. */
    gint64 compile = g_rand_int_range(rng, 0, 10) == 0 ? spread(rng, 800e3) : spread(rng, 15e3);
    add(a, "compile", "gemm module", t, compile, 0, 0, host, 1);
    t += compile + 2000;
    guint64 bytes = (guint64)g_rand_int_range(rng, 1, 64) << 20;
    guint64 addr[3];
    for (int b = 0; b < 3; b++) {
      addr[b] = next_address;
      next_address += bytes;
      add(a, "alloc", "buffer", t + b * 300, 0, bytes, addr[b], dev, 0);
    }
    add(a, "memcpy", "HtoD", t + 1000, spread(rng, 20e3), 2 * bytes, 0, dev, 0);
    t += 25000;
    /* Warm-up then measure; the kernels run on 4 streams side by side. */
    gint64 phase_start = t;
    gint64 stream_t[N_STREAMS];
    for (int s = 0; s < N_STREAMS; s++)
      stream_t[s] = t + s * 500;
    guint batch = 0;
    gint64 batch_start = t, measure_start = 0;
    const char *kname = kernel_names[g_rand_int_range(rng, 0, G_N_ELEMENTS(kernel_names))];
    for (int k = 0; k < KERNELS_PER_TRIAL; k++) {
      int s = k % N_STREAMS;
      gint64 dur = spread(rng, 8e3);
      add(a, "kernel", k % 10 == 9 ? "l2_flush" : kname, stream_t[s], dur, 0, 0, dev + s, 0);
      stream_t[s] += dur + spread(rng, 1.5e3);
      if (k == 7) { /* warm-up done */
        gint64 end = stream_t[0];
        for (int i = 0; i < N_STREAMS; i++)
          end = MAX(end, stream_t[i]);
        add(a, "range", "warmup", phase_start, end - phase_start, 0, 0, host, 1);
        measure_start = batch_start = end;
        for (int i = 0; i < N_STREAMS; i++)
          stream_t[i] = end;
      }
      if (k > 7 && (k - 7) % 8 == 0) {
        g_snprintf(name, sizeof name, "batch %u", batch++);
        add(a, "range", name, batch_start, stream_t[s] - batch_start, 0, 0, host, 2);
        batch_start = stream_t[s];
      }
    }
    gint64 end = stream_t[0];
    for (int i = 0; i < N_STREAMS; i++)
      end = MAX(end, stream_t[i]);
    add(a, "range", "measure", measure_start, end - measure_start, 0, 0, host, 1);
    add(a, "memcpy", "DtoH", end + 500, spread(rng, 10e3), bytes, 0, dev, 0);
    t = end + 15000;
    for (int b = 0; b < 3; b++)
      add(a, "free", "buffer", t + b * 200, 0, bytes, addr[b], dev, 0);
    g_snprintf(name, sizeof name, "trial %u", trial);
    add(a, "range", name, trial_start, t + 1000 - trial_start, 0, 0, host, 0);
    t += spread(rng, 5e3) + 2000;
  }
  g_array_sort(a, cmp_start); /* as a recorded trace comes: by start */
  return a;
}

static int
cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double
median_frame_ms(TsStudioView *view, cairo_surface_t *surface, guint frames, guint *drawn)
{
  double *ms = g_new(double, frames);
  for (guint f = 0; f < frames; f++) {
    gint64 t0 = g_get_monotonic_time();
    cairo_t *cr = cairo_create(surface);
    TsCanvas *c = ts_canvas_new_cairo(cr);
    ts_studio_view_draw(view, c, WIDTH, HEIGHT);
    ts_canvas_free(c);
    cairo_destroy(cr);
    cairo_surface_flush(surface);
    ms[f] = (g_get_monotonic_time() - t0) / 1e3;
  }
  *drawn = view->n_drawn;
  qsort(ms, frames, sizeof *ms, cmp_double);
  double m = ms[frames / 2];
  g_free(ms);
  return m;
}

int
main(int argc, char **argv)
{
  guint frames = 15, max_events = 1000000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (g_str_equal(argv[i], "--frames"))
      frames = MAX(1, (guint)atoi(argv[i + 1]));
    else if (g_str_equal(argv[i], "--max-events"))
      max_events = (guint)atoi(argv[i + 1]);
  }
  cairo_surface_t *surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, WIDTH, HEIGHT);
  printf("timeline frames at %dx%d, median of %u\n\n", WIDTH, HEIGHT, frames);
  printf("%9s %10s %-16s %10s %8s\n", "events", "prepare", "window", "frame", "marks");
  gboolean pass = TRUE, measured = FALSE;
  for (guint n = 10000; n <= max_events; n *= 10) {
    g_autoptr(GArray) events = synthesise(n, 42);
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(TsStudioView) view = ts_studio_timeline_new(events);
    double prep_ms = (g_get_monotonic_time() - t0) / 1e3;
    gint64 s0, s1;
    ts_studio_timeline_get_span(view, &s0, &s1);
    gint64 len = s1 - s0, mid = s0 + len / 2;
    struct {
      const char *name;
      gint64 w;
    } cases[] = {
        {"whole span", len},
        {"1/1000 middle", len / 1000},
        {"deep (~3 kern.)", 30000},
    };
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
      ts_studio_timeline_set_range(view, mid - cases[k].w / 2, mid + cases[k].w / 2);
      guint drawn = 0;
      double ms = median_frame_ms(view, surface, frames, &drawn);
      printf("%9u %8.1f ms %-16s %7.2f ms %8u\n", events->len, prep_ms, cases[k].name, ms, drawn);
      if (n >= 1000000) {
        measured = TRUE;
        pass &= ms <= 16;
      }
    }
  }
  if (measured)
    printf("\n10^6 events, every window <= 16 ms: %s\n", pass ? "PASS" : "FAIL");
  cairo_surface_destroy(surface);
  return 0;
}
