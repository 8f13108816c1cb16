/* test-prof.c — device ceilings: measured on the CPU backend, sane against each other, stored
 * as JSON and read back, kept in the device row and re-measured only when the toolchain
 * changes; the roofline picks the lower roof. */
#include <glib.h>
#include <math.h>
#include <string.h>

#include "test-util.h"
#include "ts-op.h"
#include "ts-prof-private.h"

/* What a CPU ceiling set must hold. Timings on a shared VM drift by 30-80% between runs and a
 * neighbour can hold a core for a whole run, so only relations with a wide margin are checked,
 * and only between figures measured interleaved (ts__prof_run_benches): a slow spell then slows
 * both sides of the comparison alike. Nothing compares all cores against one core from below:
 * one stolen core stalls every all-core run. */
static void
check_cpu_ceilings(const TsProfCeilings *c, const TsDeviceInfo *d)
{
  /* Exactly the roofs of the levels the host reports, each with both figures. */
  const struct {
    const char *name;
    TsProfCeilingKind kind;
    gboolean present;
  } want[] = {{"f32", TS_PROF_COMPUTE, TRUE},       {"f64", TS_PROF_COMPUTE, TRUE},
              {"f32x4", TS_PROF_COMPUTE, d->vector_bits > 128},
              {"f32x8", TS_PROF_COMPUTE, d->vector_bits > 256},
              {"bf16_amx", TS_PROF_COMPUTE, d->arch && strstr(d->arch, "+amxbf16") != NULL},
              {"bf16_dot", TS_PROF_COMPUTE, d->arch && strstr(d->arch, "+avx512bf16") != NULL},
              {"l1", TS_PROF_MEMORY, d->l1_bytes > 0}, {"l2", TS_PROF_MEMORY, d->l2_bytes > 0},
              {"l3", TS_PROF_MEMORY, d->l3_bytes > 0}, {"dram", TS_PROF_MEMORY, TRUE},
              {"exp", TS_PROF_RATE, TRUE},      {"exp_fast", TS_PROF_RATE, TRUE},
              {"exp_x4", TS_PROF_RATE, d->vector_bits > 128},
              {"exp_fast_x4", TS_PROF_RATE, d->vector_bits > 128},
              {"exp_x8", TS_PROF_RATE, d->vector_bits > 256},
              {"exp_fast_x8", TS_PROF_RATE, d->vector_bits > 256}};
  guint n = 0;
  const char *method = ts_prof_ceilings_method(c);
  for (gsize i = 0; i < G_N_ELEMENTS(want); i++) {
    const TsProfCeiling *r = ts_prof_ceilings_get(c, want[i].name);
    if (!want[i].present) {
      g_assert_null(r);
      continue;
    }
    if (r == NULL) {
      /* Left out as impossible (a busy machine): the method says which and why. */
      g_autofree char *why = g_strdup_printf("%s not stored", want[i].name);
      g_assert_nonnull(strstr(method, why));
      g_test_message("%s", method);
      continue;
    }
    n++;
    g_test_message("%-4s %8.2f %s on %u cores, %8.2f on one", r->name, r->value,
                   ts_prof_ceiling_unit(r->kind), d->compute_units, r->per_core);
    g_assert_cmpint(r->kind, ==, want[i].kind);
    g_assert_true(isfinite(r->value) && isfinite(r->per_core));
    g_assert_cmpfloat(r->per_core, >, 0);
    g_assert_cmpfloat(r->value, >, 0);
    /* From above it holds: all cores cannot beat one core times their number by 50%, unless the
     * work per launch is miscounted (a thread count multiplied in twice). Not for L3: the one
     * thread reads half of it and each of the team a smaller share, and on a VM whose L3 is
     * partly other guests' the one thread's half spills to DRAM (a 2-core Zen 3 guest: 36.5
     * GB/s on one core, 109.7 on two). */
    if (strcmp(r->name, "l3") != 0)
      g_assert_cmpfloat(r->value, <, 1.5 * r->per_core * d->compute_units);
  }
  g_assert_cmpuint(ts_prof_ceilings_count(c), ==, n);

  /* Any machine this runs on does more than 1 GFLOP/s and 0.5 GB/s on one core. */
  const TsProfCeiling *f32 = ts_prof_ceilings_get(c, "f32"), *f64 = ts_prof_ceilings_get(c, "f64");
  const TsProfCeiling *dram = ts_prof_ceilings_get(c, "dram");
  g_assert_cmpfloat(f32->per_core, >, 1.0);
  g_assert_cmpfloat(dram->per_core, >, 0.5);
  /* The same registers hold half as many doubles: f64 is half of f32 on every SIMD unit we
   * know. A factor of two either way (a lane count wrong by two lands at 1.0 or 0.25). */
  if (f64) {
    g_assert_cmpfloat(f64->per_core, <, 0.95 * f32->per_core);
    g_assert_cmpfloat(f64->per_core, >, 0.3 * f32->per_core);
  }
  /* L1 and L2 deliver several times what DRAM does to one core (5-15x on the x86 and arm parts
   * we know); a 2x margin still catches a working set that spilled to memory or bytes
   * miscounted by a vector width. L3 is not compared: on a VM it is shared with other guests
   * (or reported as the host's whole L3) and can measure like DRAM. */
  const TsProfCeiling *l1 = ts_prof_ceilings_get(c, "l1"), *l2 = ts_prof_ceilings_get(c, "l2");
  if (l1)
    g_assert_cmpfloat(l1->per_core, >, 2 * dram->per_core);
  if (l2)
    g_assert_cmpfloat(l2->per_core, >, 1.5 * dram->per_core);
  g_assert_nonnull(strstr(method, "FMA"));
  g_assert_nonnull(strstr(method, "triad"));
  /* A vector exp is a range reduction, a polynomial of degree 4 or 6 and a scaling: between 8
   * and 200 FMA FLOPs of time a lane (72 and 82 on Zen 1). Outside, the count of exps per
   * repeat is wrong (lanes or chains), or the compiler dropped the chains. */
  for (const char *const *e = (const char *const[]){"exp", "exp_fast", NULL}; *e; e++) {
    const TsProfCeiling *x = ts_prof_ceilings_get(c, *e);
    if (x == NULL)
      continue;
    g_assert_cmpfloat(f32->per_core / x->per_core, >, 8);
    g_assert_cmpfloat(f32->per_core / x->per_core, <, 200);
  }
  g_assert_nonnull(strstr(method, "exp"));
}

/* All-core FMA peaks far below cores x one core's are called out; memory roofs, which need
 * not scale, and a GPU's (no per-core figure) are not. */
static void
test_scaling_note(void)
{
  g_autoptr(TsProfCeilings) c = ts_prof_ceilings_new("cpu", "gcc test");
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 199.6, 102.4);
  ts_prof_ceilings_set(c, "f64", TS_PROF_COMPUTE, 100.6, 51.1);
  ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 21.0, 21.1);
  ts_prof_ceilings_set(c, "exp", TS_PROF_RATE, 3.2, 3.4);
  g_assert_null(ts_prof_ceilings_scaling_note(c, 2));
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 111.6, 101.8); /* a core held by a fuzzer */
  g_autofree char *note = ts_prof_ceilings_scaling_note(c, 2);
  g_assert_nonnull(note);
  g_test_message("%s", note);
  g_assert_nonnull(strstr(note, "scale poorly on 2 cores (f32 111.6 GFLOP/s, 1.10x one core's "
                                "101.8): other work held cores"));
  g_assert_null(strstr(note, "f64"));
  g_assert_nonnull(strstr(note, "tessera-tune devices --measure"));
  g_assert_null(ts_prof_ceilings_scaling_note(c, 1));
  /* 3/5 of linear scaling is the line: 4 cores at 2.5x one core's pass, at 2.3x do not (nor
   * f64's 1.97x) */
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 250, 100);
  g_autofree char *f64_only = ts_prof_ceilings_scaling_note(c, 4);
  g_assert_nonnull(f64_only);
  g_assert_nonnull(strstr(f64_only, "on 4 cores (f64 100.6 GFLOP/s, 1.97x one core's 51.1)"));
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 230, 100);
  g_autofree char *four = ts_prof_ceilings_scaling_note(c, 4);
  g_assert_nonnull(four);
  g_assert_nonnull(strstr(four, "on 4 cores (f32 230.0 GFLOP/s, 2.30x one core's 100.0; f64 "
                                "100.6 GFLOP/s, 1.97x one core's 51.1)"));
  g_autoptr(TsProfCeilings) gpu = ts_prof_ceilings_new("cuda", "nvrtc test");
  ts_prof_ceilings_set(gpu, "bf16_tensor", TS_PROF_COMPUTE, 700000, 0);
  g_assert_null(ts_prof_ceilings_scaling_note(gpu, 132));
}

/* The screen leaves out what no machine can produce, and says why. */
static void
test_screen(void)
{
  TsProfCpuFigure f[] = {
      {"f32", 200, 100, TRUE}, {"f64", 190, 50, TRUE},  {"l1", 900, 400, TRUE},
      {"l2", 500, 150, TRUE},  {"l3", 30, 12, TRUE},    {"dram", 40, 15, TRUE},
  };
  g_autoptr(GString) notes = g_string_new(NULL);
  ts__prof_cpu_screen(f, G_N_ELEMENTS(f), notes);
  g_test_message("%s", notes->str);
  g_assert_true(f[0].keep);
  g_assert_false(f[1].keep); /* f64 all-core above 3/4 of f32 */
  g_assert_true(f[2].keep && f[3].keep);
  g_assert_false(f[4].keep); /* l3 below dram */
  g_assert_true(f[5].keep);
  g_assert_nonnull(strstr(notes->str, "f64 not stored"));
  g_assert_nonnull(strstr(notes->str, "l3 not stored: 30.0 GB/s (12.0 on one core) below dram"));
  /* l2 then compares with dram (l3 left out); l1 slower than l2 goes too; a NaN goes. */
  TsProfCpuFigure g[] = {
      {"f32", NAN, 100, TRUE}, {"l1", 100, 90, TRUE}, {"l2", 500, 150, TRUE},
      {"dram", 40, 15, TRUE},  {"l3", 41, 15.5, TRUE},
  };
  g_string_truncate(notes, 0);
  ts__prof_cpu_screen(g, G_N_ELEMENTS(g), notes);
  g_assert_false(g[0].keep);
  g_assert_false(g[1].keep);
  g_assert_true(g[2].keep && g[3].keep);
  g_assert_true(g[4].keep); /* l3 measuring like DRAM (a VM's shared L3) is possible */
  /* A narrower vector's FMAs no faster than the widest's (within 10%). */
  TsProfCpuFigure v[] = {{"f32", 200, 100, TRUE}, {"f32x4", 200, 108, TRUE},
                         {"f32x8", 240, 100, TRUE}};
  g_string_truncate(notes, 0);
  ts__prof_cpu_screen(v, G_N_ELEMENTS(v), notes);
  g_assert_true(v[0].keep && v[1].keep);
  g_assert_false(v[2].keep);
  g_assert_nonnull(strstr(notes->str, "f32x8 not stored: 240.0 GFLOP/s (100.0 on one core) "
                                      "above f32's 200.0 (100.0)"));
  /* An exp rate above a quarter of the FMA rate was not computed. */
  TsProfCpuFigure x[] = {{"f32", 200, 100, TRUE}, {"exp", 2.4, 1.2, TRUE},
                         {"exp_fast", 40, 30, TRUE}};
  g_string_truncate(notes, 0);
  ts__prof_cpu_screen(x, G_N_ELEMENTS(x), notes);
  g_assert_true(x[0].keep && x[1].keep);
  g_assert_false(x[2].keep);
  g_assert_nonnull(strstr(notes->str, "exp_fast not stored: 40.00 G/s (30.00 on one core) above "
                                      "a quarter of f32's 200.0 GFLOP/s (100.0)"));
  /* Nor an exp on a narrower vector faster than on the widest (within 10%). */
  TsProfCpuFigure y[] = {{"f32", 200, 100, TRUE},      {"exp", 2.4, 1.2, TRUE},
                         {"exp_fast", 3.0, 1.5, TRUE}, {"exp_x4", 2.6, 1.3, TRUE},
                         {"exp_fast_x4", 3.0, 1.7, TRUE}};
  g_string_truncate(notes, 0);
  ts__prof_cpu_screen(y, G_N_ELEMENTS(y), notes);
  g_assert_true(y[0].keep && y[1].keep && y[2].keep && y[3].keep);
  g_assert_false(y[4].keep);
  g_assert_nonnull(strstr(notes->str, "exp_fast_x4 not stored: 3.00 G/s (1.70 on one core) "
                                      "above exp_fast's 3.00 (1.50)"));
  /* A sane set is left alone. */
  TsProfCpuFigure h[] = {{"f32", 200, 100, TRUE},   {"f64", 100, 50, TRUE},
                         {"f32x4", 100, 50, TRUE},  {"l2", 500, 150, TRUE},
                         {"dram", 40, 15, TRUE},    {"exp", 2.4, 1.2, TRUE},
                         {"exp_x4", 2.2, 1.1, TRUE}};
  g_string_truncate(notes, 0);
  ts__prof_cpu_screen(h, G_N_ELEMENTS(h), notes);
  for (gsize i = 0; i < G_N_ELEMENTS(h); i++)
    g_assert_true(h[i].keep);
  g_assert_cmpuint(notes->len, ==, 0);
}

/* A device row holding an f32 and a DRAM roof that no machine measures, as if measured with
 * toolchain. */
static void
plant_ceilings(TsDb *db, gint64 id, const char *backend, const char *toolchain)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsProfCeilings) c = ts_prof_ceilings_new(backend, toolchain);
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 1234.5, 0);
  ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 67.8, 0);
  g_autofree char *json = ts_prof_ceilings_to_json(c);
  g_assert_true(ts_db_set_device_peaks(db, id, json, &error));
  g_assert_no_error(error);
}

static void
test_measure_and_store(void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsBackend) be = ts_backend_open("cpu", &error);
  g_assert_no_error(error);
  g_autofree char *dir = g_dir_make_tmp("ts-prof-XXXXXX", &error);
  ts_backend_set_cache_dir(be, dir);
  g_autoptr(TsProfCeilings) c = ts_prof_measure_ceilings(be, &error);
  g_assert_no_error(error);
  g_assert_nonnull(c);
  const TsDeviceInfo *d = ts_backend_describe(be);
  check_cpu_ceilings(c, d);
  g_autofree char *toolchain = ts_prof_toolchain_of(d);
  g_assert_cmpstr(ts_prof_ceilings_toolchain(c), ==, toolchain);
  g_assert_nonnull(strstr(toolchain, d->toolchain));
  g_assert_nonnull(strstr(toolchain, TS_OP_EMIT_VERSION));

  /* JSON round trip, every roof. */
  g_autofree char *json = ts_prof_ceilings_to_json(c);
  g_autoptr(TsProfCeilings) back = ts_prof_ceilings_from_json(json, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(ts_prof_ceilings_count(back), ==, ts_prof_ceilings_count(c));
  for (guint i = 0; i < ts_prof_ceilings_count(c); i++) {
    const TsProfCeiling *a = ts_prof_ceilings_nth(c, i);
    const TsProfCeiling *b = ts_prof_ceilings_get(back, a->name);
    g_assert_nonnull(b);
    g_assert_cmpint(a->kind, ==, b->kind);
    g_assert_cmpfloat_with_epsilon(a->value, b->value, 1e-9 * a->value);
    g_assert_cmpfloat_with_epsilon(a->per_core, b->per_core, 1e-9 * (a->per_core + 1));
  }
  g_assert_cmpstr(ts_prof_ceilings_method(back), ==, ts_prof_ceilings_method(c));

  /* In the device row: read back, not re-measured; a changed toolchain re-measures. */
  g_autofree char *db_path = g_build_filename(dir, "cache.db", NULL);
  g_autoptr(TsDb) db = ts_db_open(db_path, TS_DB_OPEN_DEFAULT, &error);
  g_assert_no_error(error);
  TsDbDevice dev = {d->backend, d->name, d->arch, d->compute_units, d->memory_bytes,
                    d->l1_bytes, d->l2_bytes, d->l3_bytes, d->smem_per_block, d->vector_bits};
  gint64 id = ts_db_ensure_device(db, &dev, &error);
  g_assert_no_error(error);
  plant_ceilings(db, id, d->backend, toolchain);
  gboolean measured = TRUE;
  g_autoptr(TsProfCeilings) got = ts_prof_ceilings_ensure(db, id, be, FALSE, &measured, &error);
  g_assert_no_error(error);
  g_assert_false(measured);
  g_assert_cmpfloat(ts_prof_ceilings_get(got, "f32")->value, ==, 1234.5);

  plant_ceilings(db, id, d->backend, "gcc 1.0 (another)");
  g_autoptr(TsProfCeilings) fresh = ts_prof_ceilings_ensure(db, id, be, FALSE, &measured, &error);
  g_assert_no_error(error);
  g_assert_true(measured);
  g_assert_cmpstr(ts_prof_ceilings_toolchain(fresh), ==, toolchain);
  g_assert_cmpfloat(ts_prof_ceilings_get(fresh, "f32")->value, !=, 1234.5);
  /* ... and stored: the next call reads it. */
  g_autoptr(TsProfCeilings) again = ts_prof_ceilings_ensure(db, id, be, FALSE, &measured, &error);
  g_assert_false(measured);
  g_assert_cmpfloat(ts_prof_ceilings_get(again, "f32")->value, ==,
                    ts_prof_ceilings_get(fresh, "f32")->value);
  /* The same compiler with an older kernel generator (whose exp the rates timed) too. */
  g_autofree char *older_kgen = g_strdup_printf("%s tessera-kgen-0", d->toolchain);
  plant_ceilings(db, id, d->backend, older_kgen);
  g_autoptr(TsProfCeilings) fresh2 = ts_prof_ceilings_ensure(db, id, be, FALSE, &measured, &error);
  g_assert_no_error(error);
  g_assert_true(measured);
  g_assert_cmpstr(ts_prof_ceilings_toolchain(fresh2), ==, toolchain);
  /* A row of the format before the exp rates is read (the studio shows it) but measured again
   * for the cost model, whatever its toolchain: here the current one. */
  g_autofree char *v2 = g_strdup_printf(
    "{\"version\": 2, \"backend\": \"%s\", \"toolchain\": \"%s\", \"compute\": {\"f32\": "
    "{\"gflops\": 1234.5}}, \"memory\": {\"dram\": {\"gbps\": 67.8}}}",
    d->backend, toolchain);
  g_autoptr(TsProfCeilings) read2 = ts_prof_ceilings_from_json(v2, &error);
  g_assert_no_error(error);
  g_assert_cmpint(ts_prof_ceilings_format(read2), ==, 2);
  g_assert_null(ts_prof_ceilings_get(read2, "exp"));
  g_assert_true(ts_db_set_device_peaks(db, id, v2, &error));
  g_autoptr(TsProfCeilings) remeasured =
    ts_prof_ceilings_ensure(db, id, be, FALSE, &measured, &error);
  g_assert_no_error(error);
  g_assert_true(measured);
  g_assert_cmpint(ts_prof_ceilings_format(remeasured), ==, TS_PROF_CEILINGS_FORMAT);
  g_assert_cmpint(ts_prof_ceilings_get(remeasured, "exp")->kind, ==, TS_PROF_RATE);
  g_clear_pointer(&db, ts_db_close);
  ts_test_remove_tree(dir);
}

static void
test_json_errors(void)
{
  g_autoptr(GError) error = NULL;
  g_assert_null(ts_prof_ceilings_from_json("not json", &error));
  g_assert_error(error, TS_BACKEND_ERROR, TS_BACKEND_ERROR_IO);
  g_clear_error(&error);
  /* A format newer than this build's is refused, not half read. */
  g_assert_null(ts_prof_ceilings_from_json("{\"version\": 4, \"compute\": {\"f32\": {\"gflops\": "
                                           "5}}, \"memory\": {\"dram\": {\"gbps\": 3}}}",
                                           &error));
  g_assert_nonnull(strstr(error->message, "newer format"));
  g_clear_error(&error);
  /* Rates are optional; one that is there needs a positive figure. */
  g_assert_null(ts_prof_ceilings_from_json(
    "{\"version\": 3, \"compute\": {\"f32\": {\"gflops\": 5}}, \"memory\": {\"dram\": "
    "{\"gbps\": 3}}, \"rates\": {\"exp\": {\"gflops\": 1}}}",
    &error));
  g_assert_nonnull(strstr(error->message, "roof \"exp\" has no positive \"gops\""));
  g_clear_error(&error);
  /* The first format (flat f32_gflops_all ...) asks for a re-measure. */
  g_assert_null(ts_prof_ceilings_from_json("{\"f32_gflops_all\": 3, \"dram_gbps\": 2}", &error));
  g_assert_nonnull(strstr(error->message, "re-measure"));
  g_clear_error(&error);
  g_assert_null(ts_prof_ceilings_from_json(
    "{\"version\": 2, \"compute\": {\"f32\": {\"gflops\": 5}}, \"memory\": {}}", &error));
  g_assert_nonnull(strstr(error->message, "memory"));
  g_clear_error(&error);
  g_assert_null(ts_prof_ceilings_from_json("{\"version\": 2, \"compute\": {\"f32\": {\"gflops\": "
                                           "-1}}, \"memory\": {\"dram\": {\"gbps\": 3}}}",
                                           &error));
  g_assert_nonnull(strstr(error->message, "\"f32\""));
}

static void
test_roofline(void)
{
  g_autoptr(TsProfCeilings) c = ts_prof_ceilings_new("cuda", "nvrtc 13.0");
  ts_prof_ceilings_set(c, "f32", TS_PROF_COMPUTE, 200, 0);
  ts_prof_ceilings_set(c, "bf16_tensor", TS_PROF_COMPUTE, 800, 0);
  ts_prof_ceilings_set(c, "dram", TS_PROF_MEMORY, 40, 0);
  TsProfRoofline r;
  /* 1 FLOP per byte: memory bound at 40 GFLOP/s; 1e9 FLOPs in 0.05 s = 20 GFLOP/s, half. */
  g_assert_true(ts_prof_roofline(c, "f32", 1e9, 1e9, 0.05, &r));
  g_assert_cmpfloat(r.bound_gflops, ==, 40);
  g_assert_cmpstr(r.bound, ==, "dram");
  g_assert_cmpfloat_with_epsilon(r.fraction, 0.5, 1e-12);
  /* 100 FLOP per byte: compute bound, by the roof asked for. */
  g_assert_true(ts_prof_roofline(c, "f32", 1e11, 1e9, 1, &r));
  g_assert_cmpfloat(r.bound_gflops, ==, 200);
  g_assert_cmpstr(r.bound, ==, "f32");
  g_assert_true(ts_prof_roofline(c, "bf16_tensor", 1e11, 1e9, 1, &r));
  g_assert_cmpfloat(r.bound_gflops, ==, 800);
  g_assert_cmpstr(r.compute, ==, "bf16_tensor");
  /* A roof the device lacks falls back to f32; no DRAM roof or no time is no coordinate. */
  g_assert_true(ts_prof_roofline(c, "fp8_tensor", 1e11, 1e9, 1, &r));
  g_assert_cmpstr(r.compute, ==, "f32");
  g_assert_false(ts_prof_roofline(c, "f32", 1e9, 1e9, 0, &r));
  g_autoptr(TsProfCeilings) nodram = ts_prof_ceilings_new("cpu", "");
  ts_prof_ceilings_set(nodram, "f32", TS_PROF_COMPUTE, 200, 0);
  g_assert_false(ts_prof_roofline(nodram, "f32", 1e9, 1e9, 1, &r));

  g_assert_cmpstr(ts_prof_compute_roof("cuda", "bf16", TRUE), ==, "bf16_tensor");
  g_assert_cmpstr(ts_prof_compute_roof("cuda", "bf16", FALSE), ==, "f32");
  g_assert_cmpstr(ts_prof_compute_roof("cpu", "bf16", TRUE), ==, "bf16_amx");
  g_assert_cmpstr(ts_prof_compute_roof("cpu", "bf16", FALSE), ==, "f32");
  /* The roofline holds a CPU's bf16 GEMM to the fastest of its engines measured: AMX tiles,
   * vdpbf16ps, f32 FMAs on widened panels. */
  g_assert_true(ts_prof_roofline(c, "bf16_amx", 1e12, 1e9, 1, &r));
  const char *fastest = "f32";
  for (const char *const *e = (const char *const[]){"bf16_dot", "bf16_amx", NULL}; *e; e++)
    if (ts_prof_ceilings_get(c, *e) &&
        ts_prof_ceilings_get(c, *e)->value > ts_prof_ceilings_get(c, fastest)->value)
      fastest = *e;
  g_assert_cmpstr(r.compute, ==, fastest);
  g_autoptr(TsProfCeilings) dot = ts_prof_ceilings_new("cpu", "");
  ts_prof_ceilings_set(dot, "f32", TS_PROF_COMPUTE, 100, 50);
  ts_prof_ceilings_set(dot, "bf16_dot", TS_PROF_COMPUTE, 200, 100);
  ts_prof_ceilings_set(dot, "dram", TS_PROF_MEMORY, 30, 20);
  g_assert_true(ts_prof_roofline(dot, "bf16_amx", 1e12, 1e9, 1, &r));
  g_assert_cmpstr(r.compute, ==, "bf16_dot");
  g_assert_cmpfloat(r.bound_gflops, ==, 200);
  /* A core whose vdpbf16ps is slower than its FMAs (Emerald Rapids: 80 against 166 GFLOP/s)
   * keeps the f32 roof: its tuned bf16 GEMM runs on FMAs. */
  ts_prof_ceilings_set(dot, "bf16_dot", TS_PROF_COMPUTE, 80, 40);
  g_assert_true(ts_prof_roofline(dot, "bf16_amx", 1e12, 1e9, 1, &r));
  g_assert_cmpstr(r.compute, ==, "f32");
  g_assert_cmpfloat(r.bound_gflops, ==, 100);
  ts_prof_ceilings_set(dot, "bf16_amx", TS_PROF_COMPUTE, 2000, 1000);
  g_assert_true(ts_prof_roofline(dot, "bf16_amx", 1e12, 1e9, 1, &r));
  g_assert_cmpstr(r.compute, ==, "bf16_amx");
  g_assert_cmpstr(ts_prof_compute_roof("cpu", "f64", TRUE), ==, "f64");
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  g_test_add_func("/prof/ceilings", test_measure_and_store);
  g_test_add_func("/prof/ceilings-screen", test_screen);
  g_test_add_func("/prof/ceilings-scaling-note", test_scaling_note);
  g_test_add_func("/prof/ceilings-json-errors", test_json_errors);
  g_test_add_func("/prof/roofline", test_roofline);
  return g_test_run();
}
