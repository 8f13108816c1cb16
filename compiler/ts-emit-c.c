/* ts-emit-c.c — the C emitter: Tile IR → one C translation unit for the CPU backend.
 *
 * The generated code is deliberately short: loops, OpenMP work sharing for `parallel` nodes,
 * and calls into ts_cpu_prims.h (packing, MR×NR micro-kernels, vector row helpers), with the
 * schedule's numbers as compile-time constants so the compiler can fully specialise them. */
#include "ts-emit.h"

#include <string.h>

G_DEFINE_QUARK(ts-emit-error-quark, ts_emit_error)

typedef struct {
  const TsTileKernel *kernel;
  GString *out;
  GString *ukrs;       /* micro-kernel instantiations, emitted before the entry */
  GHashTable *ukr_set; /* names already instantiated */
  int depth;
  gint64 team;         /* threads of the innermost parallel region, 0 outside */
  GError **error;
  gboolean failed;
  gboolean amx; /* some mma runs on AMX tiles: each worker releases them when done */
  gboolean streamed; /* a map since the last fence wrote with non-temporal stores */
  /* thread-private f32 rows -> 1 if loops use them in lane pairs, 2 if in order */
  GHashTable *row_order;
  guint row_consts; /* TsExpSub constants declared so far (hoist_row_consts) */
} Emitter;

static gboolean
uses_amx(const TsTileNode *n)
{
  if (n->op == TS_TILE_MMA && ts_tile_get_dot(n) == TS_TILE_DOT_AMX)
    return TRUE;
  for (guint i = 0; n->children && i < n->children->len; i++)
    if (uses_amx(g_ptr_array_index(n->children, i)))
      return TRUE;
  return FALSE;
}

static void
line(Emitter *e, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
line(Emitter *e, const char *fmt, ...)
{
  va_list ap;
  g_string_append_printf(e->out, "%*s", e->depth * 2, "");
  va_start(ap, fmt);
  g_string_append_vprintf(e->out, fmt, ap);
  va_end(ap);
  g_string_append_c(e->out, '\n');
}

static void
fail(Emitter *e, TsEmitError code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void
fail(Emitter *e, TsEmitError code, const char *fmt, ...)
{
  if (e->failed)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(e->error, TS_EMIT_ERROR, code, msg);
  e->failed = TRUE;
}

/* Storage type of a dtype in generated C: 16-bit floats travel as their bit patterns. */
static const char *
c_type(TsDtype dtype)
{
  switch (dtype) {
  case TS_DTYPE_F64: return "double";
  case TS_DTYPE_F32: return "float";
  case TS_DTYPE_BF16:
  case TS_DTYPE_F16: return "uint16_t";
  case TS_DTYPE_FP8_E4M3:
  case TS_DTYPE_FP8_E5M2: return "uint8_t";
  case TS_DTYPE_INT32: return "int32_t";
  case TS_DTYPE_INT8: return "int8_t";
  default: return NULL;
  }
}

/* Suffix of the prims' per-dtype functions (ts_pack_a_panel_bf16, ts_vf_load_f16 ...). */
static const char *
prim_suffix(TsDtype dtype)
{
  switch (dtype) {
  case TS_DTYPE_F32: return "f32";
  case TS_DTYPE_BF16: return "bf16";
  case TS_DTYPE_F16: return "f16";
  case TS_DTYPE_FP8_E4M3: return "e4m3";
  case TS_DTYPE_FP8_E5M2: return "e5m2";
  default: return NULL;
  }
}

/* The leading identifier of a pointer expression such as "A + ic*K + pc". */
static char *
leading_ident(const char *expr)
{
  const char *p = expr;
  while (*p == ' ' || *p == '(')
    p++;
  const char *start = p;
  while (g_ascii_isalnum(*p) || *p == '_')
    p++;
  return g_strndup(start, p - start);
}

static const TsTileBuffer *
buffer_of(Emitter *e, const char *expr)
{
  g_autofree char *name = leading_ident(expr);
  const TsTileBuffer *b = ts_tile_kernel_find_buffer(e->kernel, name);
  if (b == NULL)
    fail(e, TS_EMIT_ERROR_INVALID, "tile IR: '%s' refers to unknown buffer '%s'", expr, name);
  return b;
}

static const char *
suffix_of(Emitter *e, const char *expr)
{
  const TsTileBuffer *b = buffer_of(e, expr);
  if (b == NULL)
    return "f32";
  const char *s = prim_suffix(b->dtype);
  if (s == NULL) {
    fail(e, TS_EMIT_ERROR_UNSUPPORTED, "C target: dtype %s of buffer '%s' is not supported",
         ts_dtype_name(b->dtype), b->name);
    return "f32";
  }
  return s;
}

/* Float expressions: math functions become the prims' vector or scalar versions. */
static char *
rewrite_float_expr(const char *expr, gboolean vector)
{
  static const struct {
    const char *name, *vec, *scalar;
  } fns[] = {
    {"exp", "ts_vf_exp", "ts_exp_f32"},
    {"exp_fast", "ts_vf_exp_fast", "ts_exp_fast_f32"},
    /* exp_fast_sub(x, m) = exp(x - m), m the same for every lane */
    {"exp_fast_sub", "ts_vf_exp_fast_sub", "ts_exp_fast_sub_f32"},
    /* the same with m's constants made ahead of the loop (hoist_row_consts) */
    {"exp_fast_sub_row", "ts_vf_exp_fast_sub_row", "ts_exp_fast_sub_row_f32"},
    /* exp_fast_sub for softmax's f16 output: m the row's max, results below 2^-100 as 2^-100 */
    {"exp_fast_sub_h", "ts_vf_exp_fast_sub_h", "ts_exp_fast_sub_h_f32"},
    {"exp_fast_sub_row_h", "ts_vf_exp_fast_sub_row_h", "ts_exp_fast_sub_row_h_f32"},
    {"sqrt", "ts_vf_sqrt", "sqrtf"},
    {"max", "ts_vf_max", "fmaxf"},
    /* a value with no view in it, where a vector is wanted (an argument of max) */
    {"splat", "ts_vf_splat", ""},
  };
  GString *out = g_string_new(NULL);
  const char *p = expr;
  while (*p) {
    if (g_ascii_isalpha(*p) || *p == '_') {
      const char *start = p;
      while (g_ascii_isalnum(*p) || *p == '_')
        p++;
      g_autofree char *id = g_strndup(start, p - start);
      const char *repl = id;
      for (guint i = 0; i < G_N_ELEMENTS(fns); i++)
        if (strcmp(id, fns[i].name) == 0 && *p == '(')
          repl = vector ? fns[i].vec : fns[i].scalar;
      g_string_append(out, repl);
    } else {
      g_string_append_c(out, *p++);
    }
  }
  return g_string_free(out, FALSE);
}

static gboolean
expr_mentions(const char *expr, const char *name)
{
  gsize len = strlen(name);
  for (const char *p = strstr(expr, name); p; p = strstr(p + 1, name)) {
    gboolean left = p == expr || !(g_ascii_isalnum(p[-1]) || p[-1] == '_');
    gboolean right = !(g_ascii_isalnum(p[len]) || p[len] == '_');
    if (left && right)
      return TRUE;
  }
  return FALSE;
}

/* End of the parenthesised list opening at open (its ')'), and its top-level comma, or NULL. */
static const char *
call_end(const char *open, const char **comma)
{
  int depth = 0;
  *comma = NULL;
  for (const char *p = open; *p; p++) {
    if (*p == '(')
      depth++;
    else if (*p == ')' && --depth == 0)
      return p;
    else if (*p == ',' && depth == 1 && *comma == NULL)
      *comma = p;
  }
  return NULL;
}

/* exp_fast_sub(a, m) where m is the same for every column (it names none of the node's views):
 * m's constants (TsExpSub) are declared once, ahead of the loop, and the call becomes
 * exp_fast_sub_row(a, ts_esK_). Made in the loop, they cost as much as the exp (the compiler
 * does not hoist the branches of the exp they need). exp_fast_sub_h the same way, into
 * exp_fast_sub_row_h. Returns expr rewritten. */
static char *
hoist_row_consts(Emitter *e, const TsTileNode *n, const char *expr)
{
  static const char fn[] = "exp_fast_sub";
  GString *out = g_string_new(NULL);
  const char *p = expr;
  for (const char *hit = strstr(p, fn); hit; hit = strstr(p, fn)) {
    const char *open = hit + strlen(fn);
    const gboolean h = g_str_has_prefix(open, "_h(");
    open += h ? 2 : 0;
    const char *comma, *end = NULL;
    gboolean word = hit == expr || !(g_ascii_isalnum(hit[-1]) || hit[-1] == '_');
    if (word && *open == '(')
      end = call_end(open, &comma);
    g_autofree char *m = end && comma ? g_strstrip(g_strndup(comma + 1, end - comma - 1)) : NULL;
    gboolean per_column = m == NULL;
    for (guint i = 0; m && i < n->views->len; i++)
      per_column |= expr_mentions(m, ((const TsTileView *)g_ptr_array_index(n->views, i))->name);
    if (per_column) {
      g_string_append_len(out, p, open - p);
      p = open;
      continue;
    }
    g_autofree char *a = g_strndup(open + 1, comma - open - 1);
    g_autofree char *inner = hoist_row_consts(e, n, a);
    guint k = e->row_consts++;
    line(e, "const TsExpSub ts_es%u_ = ts_exp_sub_row(%s);", k, m);
    g_string_append_len(out, p, hit - p);
    g_string_append_printf(out, "exp_fast_sub_row%s(%s, ts_es%u_)", h ? "_h" : "", inner, k);
    p = end + 1;
  }
  g_string_append(out, p);
  return g_string_free(out, FALSE);
}

/* A max over expr that can be taken on the bits (ts_vk_*): expr is a bare view of f16 or bf16
 * values. Returns the view, and in *neg_inf the dtype's -Inf bits, the max's start. */
static const TsTileView *
key_max_view(Emitter *e, const TsTileNode *n, const char *expr, const char **neg_inf)
{
  g_autofree char *name = g_strstrip(g_strdup(expr));
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    if (g_strcmp0(v->name, name) != 0)
      continue;
    const TsTileBuffer *b = buffer_of(e, v->buffer);
    if (b == NULL || b->any_order)
      return NULL;
    *neg_inf = b->dtype == TS_DTYPE_F16 ? "0xfc00" : b->dtype == TS_DTYPE_BF16 ? "0xff80" : NULL;
    return *neg_inf ? v : NULL;
  }
  return NULL;
}

/* Declares the views read by expr at column j, as vectors or scalars. */
static void
emit_view_loads_at(Emitter *e, const TsTileNode *n, const char *expr, const char *skip,
                   gboolean vector, const char *col)
{
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    if (g_strcmp0(v->name, skip) == 0 || !expr_mentions(expr, v->name))
      continue;
    const char *sfx = suffix_of(e, v->buffer);
    if (vector)
      line(e, "const ts_vf %s = ts_vf_load_%s(%s + (%s) + %s);", v->name, sfx, v->buffer,
           v->offset, col);
    else if (strcmp(sfx, "f32") == 0)
      line(e, "const float %s = %s[(%s) + %s];", v->name, v->buffer, v->offset, col);
    else
      line(e, "const float %s = ts_cpu_%s_to_f32(%s[(%s) + %s]);", v->name, sfx, v->buffer,
           v->offset, col);
  }
}

static void
emit_view_loads(Emitter *e, const TsTileNode *n, const char *expr, const char *skip,
                gboolean vector)
{
  emit_view_loads_at(e, n, expr, skip, vector, "j");
}

static const TsTileView *
find_view(const TsTileNode *n, const char *name)
{
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    if (g_strcmp0(v->name, name) == 0)
      return v;
  }
  return NULL;
}

/* A thread-private f32 row that only row loops touch (ts_tile_alloc_row): its lane order is
 * the kernel's own business, provided every loop over it uses the same one. */
static gboolean
private_row(const TsTileBuffer *b)
{
  return b->any_order && b->per_worker && b->dtype == TS_DTYPE_F32;
}

/* A view a loop touches: one expr reads, or a destination it writes. */
static gboolean
view_touched(const TsTileNode *n, const TsTileView *v, const char *expr)
{
  return expr_mentions(expr, v->name) || g_strcmp0(v->name, n->dst) == 0 ||
         g_strcmp0(v->name, n->drain) == 0;
}

/* A loop over bf16 rows runs on lane pairs (ts_vf_load2_bf16): every view it touches is bf16
 * or a thread-private f32 row, and one is bf16. A private row is then read and written as the
 * pairs themselves, the even lanes at j and the odd ones at j + TS_VEC, so every loop over it
 * must pair, or none: the order each loop uses is recorded, and a mix is refused.
 * A map over f16 rows pairs too, two consecutive vectors a step (ts_vf_load2_f16), for its
 * stores: one store of both vectors' halves, a whole 32-byte (ymm) or 64-byte (zmm) line
 * written where two half-width streaming stores were (a vector(8) f16 layernorm on Zen 3,
 * 1.03-1.14x). Its pairs are the values in order, so a private row keeps its order; a
 * reduction gains nothing from them and keeps its one-vector steps. */
static gboolean
paired_lanes(Emitter *e, const TsTileNode *n, const char *expr)
{
  gboolean bf16 = FALSE, f16 = FALSE, all = TRUE;
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    const TsTileBuffer *b = view_touched(n, v, expr) ? buffer_of(e, v->buffer) : NULL;
    if (b == NULL)
      continue;
    bf16 |= b->dtype == TS_DTYPE_BF16;
    f16 |= b->dtype == TS_DTYPE_F16;
    all &= b->dtype == TS_DTYPE_BF16 || b->dtype == TS_DTYPE_F16 || private_row(b);
  }
  const gboolean paired = all && (bf16 ? !f16 : f16 && n->op == TS_TILE_MAP);
  gpointer want = GINT_TO_POINTER(paired && bf16 ? 1 : 2);
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    const TsTileBuffer *b = view_touched(n, v, expr) ? buffer_of(e, v->buffer) : NULL;
    if (b == NULL || !private_row(b))
      continue;
    gpointer had = g_hash_table_lookup(e->row_order, b->name);
    if (had == NULL)
      g_hash_table_insert(e->row_order, b->name, want);
    else if (had != want)
      fail(e, TS_EMIT_ERROR_UNSUPPORTED,
           "C target: thread-private row '%s' is used in bf16 lane pairs by one loop and in "
           "order by another", b->name);
  }
  return paired;
}

/* Declares, for each view expr reads, its even and odd lanes at column j (NAME_e_, NAME_o_):
 * bf16 widened in pairs, a private f32 row as the two vectors it holds. */
static void
emit_view_loads2_at(Emitter *e, const TsTileNode *n, const char *expr, const char *col)
{
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    if (!expr_mentions(expr, v->name))
      continue;
    const TsTileBuffer *b = buffer_of(e, v->buffer);
    if (b != NULL && private_row(b)) {
      line(e, "const ts_vf %s_e_ = ts_vf_load_f32(%s + (%s) + %s);", v->name, v->buffer,
           v->offset, col);
      line(e, "const ts_vf %s_o_ = ts_vf_load_f32(%s + (%s) + %s + TS_VEC);", v->name,
           v->buffer, v->offset, col);
      continue;
    }
    line(e, "ts_vf %s_e_, %s_o_;", v->name, v->name);
    line(e, "ts_vf_load2_%s(%s + (%s) + %s, &%s_e_, &%s_o_);", suffix_of(e, v->buffer),
         v->buffer, v->offset, col, v->name, v->name);
  }
}

static void
emit_view_loads2(Emitter *e, const TsTileNode *n, const char *expr)
{
  emit_view_loads2_at(e, n, expr, "j");
}

/* Binds each view expr reads to its even or odd lanes (half: "e" or "o"). */
static void
emit_view_binds(Emitter *e, const TsTileNode *n, const char *expr, const char *half)
{
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    if (expr_mentions(expr, v->name))
      line(e, "const ts_vf %s = %s_%s_;", v->name, v->name, half);
  }
}

static void emit_node(Emitter *e, const TsTileNode *n);

static void
emit_body(Emitter *e, const TsTileNode *n)
{
  /* Allocations live until the end of the statement list that declared them. */
  g_autoptr(GPtrArray) allocs = g_ptr_array_new();
  for (guint i = 0; i < n->children->len && !e->failed; i++) {
    const TsTileNode *c = g_ptr_array_index(n->children, i);
    emit_node(e, c);
    if (c->op == TS_TILE_ALLOC && c->buffer->space != TS_MEM_REGISTER)
      g_ptr_array_add(allocs, c->buffer->name);
  }
  for (guint i = allocs->len; i > 0; i--)
    line(e, "ts_cpu_free(%s);", (char *)g_ptr_array_index(allocs, i - 1));
}

static const char *
arg(const TsTileNode *n, guint i)
{
  return g_ptr_array_index(n->args, i);
}

static void
emit_pack(Emitter *e, const TsTileNode *n)
{
  /* args: src, ld, rows, cols, dst. A blocks: rows x kc in MR-row panels; B blocks: kc x cols
   * in NR-column panels. With a reuse key (var) the pack is skipped while the key is the one
   * the worker's buffer already holds. */
  if (n->var)
    line(e, "if (%s_tag != (%s)) {", arg(n, 4), n->var);
  if (n->var)
    e->depth++;
  /* dot("bf16") packs K-pairs, dot("amx") 32-deep tile steps; FMAs take panels widened to
   * f32 from the source's dtype. */
  TsTileDot dot = ts_tile_get_dot(n);
  /* The panel's width by name where the kernel reads it at run time (Tile IR's panel(MR) for
   * A, panel(NR) for B): then nothing in the loops depends on the micro-tile. */
  const char *width = n->ints[0] == 0 ? "MR" : "NR";
  g_autofree char *panel =
    g_ptr_array_find_with_equal_func(e->kernel->launch_names, width, g_str_equal, NULL)
      ? g_strdup(width)
      : g_strdup_printf("%" G_GINT64_FORMAT, n->ints[1]);
  line(e, "ts_pack_%s_block_%s(%s, %s, %s, %s, %s, %s);",
       n->ints[0] == 0 ? "a" : n->ints[0] == 1 ? "b" : "bt",
       dot == TS_TILE_DOT_AMX    ? "amx"
       : dot == TS_TILE_DOT_BF16 ? "bf16x2"
                                 : suffix_of(e, arg(n, 0)),
       arg(n, 0), arg(n, 1), arg(n, 2), arg(n, 3), panel, arg(n, 4));
  if (n->var) {
    line(e, "%s_tag = (%s);", arg(n, 4), n->var);
    e->depth--;
    line(e, "}");
  }
}

/* A micro-kernel call: `define` instantiates `name` once per kernel (before the entry), then
 * args C, ldc, A panel, B panel, kc, accumulate, mr, nr become its (kc, A, B, C, ldc, ...). */
static void
emit_ukr_call(Emitter *e, const TsTileNode *n, const char *name, const char *define)
{
  if (!g_hash_table_contains(e->ukr_set, name)) {
    g_hash_table_add(e->ukr_set, g_strdup(name));
    g_string_append_printf(e->ukrs, "%s;\n", define);
  }
  line(e, "%s(%s, %s, %s, %s, %s, %s, %s, %s);", name, arg(n, 4), arg(n, 2), arg(n, 3), arg(n, 0),
       arg(n, 1), arg(n, 5), arg(n, 6), arg(n, 7));
}

static void
emit_mma(Emitter *e, const TsTileNode *n)
{
  const gint64 MR = n->ints[0], NR = n->ints[1], V = n->ints[2], U = n->ints[3];
  g_autofree char *name = NULL, *define = NULL;
  switch (ts_tile_get_dot(n)) {
  case TS_TILE_DOT_AMX: {
    const gint64 tm = MR / 16, tn = NR / 16;
    if (MR % 16 || NR % 16 || tm < 1 || tn < 1 || tm * tn + tm + tn > 8) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED,
           "C target: an AMX micro-tile is 16x16, 16x32, 32x16, 32x32, 16x48 or 48x16 "
           "(eight tile registers for C, A and B; got %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT ")",
           MR, NR);
      return;
    }
    name = g_strdup_printf("ts_ukr_amx_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "_u%" G_GINT64_FORMAT,
                           MR, NR, U);
    define = g_strdup_printf("TS_DEFINE_UKR_AMX(%s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                             ", %" G_GINT64_FORMAT ")", name, MR, NR, U);
    break;
  }
  case TS_TILE_DOT_BF16:
    /* Pair-packed bf16 panels: the vdpbf16ps micro-kernel (16-float vectors, AVX512_BF16). */
    if (V != 16 || NR % 16 != 0) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED,
           "C target: the bf16 dot-product micro-kernel needs vector=16 and NR a multiple of 16 "
           "(got vector=%" G_GINT64_FORMAT ", NR=%" G_GINT64_FORMAT ")",
           V, NR);
      return;
    }
    name = g_strdup_printf("ts_ukr_bf16dot_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                           "_u%" G_GINT64_FORMAT, MR, NR, U);
    define = g_strdup_printf("TS_DEFINE_UKR_BF16DOT(%s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                             ", %" G_GINT64_FORMAT ")", name, MR, NR, U);
    break;
  case TS_TILE_DOT_FMA:
    if (NR % V != 0) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED,
           "C target: micro-tile width NR=%" G_GINT64_FORMAT " is not a multiple of vector=%" G_GINT64_FORMAT,
           NR, V);
      return;
    }
    if (n->ints[4] > 0) { /* A read in place, its row stride a constant of the kernel */
      name = g_strdup_printf("ts_ukr_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "_v%" G_GINT64_FORMAT
                             "_u%" G_GINT64_FORMAT "_ra%" G_GINT64_FORMAT, MR, NR, V, U,
                             n->ints[4]);
      define = g_strdup_printf("TS_DEFINE_UKR_F32_RA(%s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                               ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                               ")", name, MR, NR, V, U, n->ints[4]);
      break;
    }
    name = g_strdup_printf("ts_ukr_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "_v%" G_GINT64_FORMAT
                           "_u%" G_GINT64_FORMAT, MR, NR, V, U);
    define = g_strdup_printf("TS_DEFINE_UKR_F32(%s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                             ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ")", name, MR, NR, V, U);
    break;
  }
  emit_ukr_call(e, n, name, define);
}

/* The vector accumulators acc0 and acc1 folded into float acc. */
static void
emit_reduce_fold(Emitter *e, gboolean is_max)
{
  line(e, is_max ? "float acc = ts_vf_hmax(ts_vf_max(acc0, acc1));"
                 : "float acc = ts_vf_hsum(acc0 + acc1);");
}

/* One vector of the reduction into accumulator acc (0-3), the views loaded at col. */
static void
emit_reduce_vector(Emitter *e, const TsTileNode *n, gboolean is_max, const char *vexpr, int acc,
                   const char *col)
{
  line(e, "{");
  e->depth++;
  emit_view_loads_at(e, n, n->expr, NULL, TRUE, col);
  line(e, is_max ? "acc%d = ts_vf_max(acc%d, %s);" : "acc%d = acc%d + (%s);", acc, acc, vexpr);
  e->depth--;
  line(e, "}");
}

/* A lane pair of the reduction (2 * TS_VEC 16-bit values from col) into acc (even) and acc + 1. */
static void
emit_reduce_pair(Emitter *e, const TsTileNode *n, gboolean is_max, const char *vexpr, int acc,
                 const char *col)
{
  line(e, "{");
  e->depth++;
  emit_view_loads2_at(e, n, n->expr, col);
  for (int h = 0; h < 2; h++) {
    line(e, "{");
    e->depth++;
    emit_view_binds(e, n, n->expr, h ? "o" : "e");
    line(e, is_max ? "acc%d = ts_vf_max(acc%d, %s);" : "acc%d = acc%d + (%s);", acc + h,
         acc + h, vexpr);
    e->depth--;
    line(e, "}");
  }
  e->depth--;
  line(e, "}");
}

/* A loop of the reduction taking `width` vectors a step (4, 2 or 1), vector k into accumulator
 * k; where the views pair, two vectors are one lane pair. */
static void
emit_reduce_loop(Emitter *e, const TsTileNode *n, gboolean is_max, const char *vexpr,
                 gboolean paired, int width)
{
  static const char *const cols[] = {"j", "j + TS_VEC", "j + 2 * TS_VEC", "j + 3 * TS_VEC"};
  g_autofree char *step = width == 1 ? g_strdup("TS_VEC") : g_strdup_printf("%d * TS_VEC", width);
  line(e, "for (; j + %s <= (%s); j += %s) {", step, n->hi, step);
  e->depth++;
  for (int k = 0; k < width; k += paired ? 2 : 1) {
    if (paired)
      emit_reduce_pair(e, n, is_max, vexpr, k, cols[k]);
    else
      emit_reduce_vector(e, n, is_max, vexpr, k, cols[k]);
  }
  e->depth--;
  line(e, "}");
}

/* Opens the scalar loop over the columns a vector loop left (fewer than two vectors' worth),
 * kept scalar by TS_SCALAR_TAIL_ (ts_cpu_prims.h says what vectorizing it cost). */
static void
emit_scalar_tail(Emitter *e, const TsTileNode *n)
{
  line(e, "for (; j < (%s); j++) {", n->hi);
  e->depth++;
  line(e, "TS_SCALAR_TAIL_(j);");
}

static void emit_reduce_tail(Emitter *e, const TsTileNode *n, gboolean is_max,
                             const char *sexpr);

/* A max of 16-bit floats on their bits (ts_vk_*, key_max_view): no conversion per element. */
static void
emit_reduce_keys(Emitter *e, const TsTileNode *n, const TsTileView *v, const char *neg_inf)
{
  line(e, "float %s;", n->var);
  line(e, "{");
  e->depth++;
  line(e, "ts_vk acc0 = ts_vk_splat(%s), acc1 = acc0;", neg_inf);
  line(e, "int64_t j = 0;");
  line(e, "for (; j + 2 * TS_VEC <= (%s); j += 2 * TS_VEC) {", n->hi);
  e->depth++;
  line(e, "acc0 = ts_vk_max(acc0, ts_vk_load(%s + (%s) + j));", v->buffer, v->offset);
  line(e, "acc1 = ts_vk_max(acc1, ts_vk_load(%s + (%s) + j + TS_VEC));", v->buffer, v->offset);
  e->depth--;
  line(e, "}");
  line(e, "for (; j + TS_VEC <= (%s); j += TS_VEC)", n->hi);
  line(e, "  acc0 = ts_vk_max(acc0, ts_vk_load(%s + (%s) + j));", v->buffer, v->offset);
  line(e, "float acc = ts_cpu_%s_to_f32(ts_vk_hmax_bits(ts_vk_max(acc0, acc1)));",
       suffix_of(e, v->buffer));
  g_autofree char *sexpr = rewrite_float_expr(n->expr, FALSE);
  emit_reduce_tail(e, n, TRUE, sexpr); /* the tail's own float max */
}

static void
emit_reduce(Emitter *e, const TsTileNode *n)
{
  gboolean is_max = g_strcmp0(n->step, "max") == 0;
  if (!is_max && g_strcmp0(n->step, "sum") != 0) {
    fail(e, TS_EMIT_ERROR_UNSUPPORTED, "C target: reduction '%s' (only sum and max)", n->step);
    return;
  }
  const char *neg_inf = NULL;
  const TsTileView *kv = is_max ? key_max_view(e, n, n->expr, &neg_inf) : NULL;
  if (kv != NULL) {
    emit_reduce_keys(e, n, kv, neg_inf);
    return;
  }
  const char *init = is_max ? "-INFINITY" : "0.0f";
  line(e, "float %s;", n->var);
  line(e, "{");
  e->depth++;
  g_autofree char *expr = hoist_row_consts(e, n, n->expr);
  g_autofree char *vexpr = rewrite_float_expr(expr, TRUE);
  g_autofree char *sexpr = rewrite_float_expr(expr, FALSE);
  /* Four independent vector accumulators, four vectors a step: through two, a chain of FMAs (4
   * cycles on Zen 3) or adds bounded a pass at two vectors a latency, where its loads and
   * arithmetic allow more (layernorm bf16's variance pass: the kernel 1.16x in L1 on Zen 3,
   * rmsnorm's sum of squares 1.2x). An exp a vector is no short chain, and four in flight
   * cost more registers than AVX2 has (softmax max_first f32 2% slower): two there. A step of
   * two vectors, then of one, takes the rest. */
  gboolean paired = paired_lanes(e, n, n->expr);
  gboolean four = strstr(vexpr, "ts_vf_exp") == NULL;
  line(e, four ? "ts_vf acc0 = ts_vf_splat(%s), acc1 = acc0, acc2 = acc0, acc3 = acc0;"
               : "ts_vf acc0 = ts_vf_splat(%s), acc1 = acc0;", init);
  line(e, "int64_t j = 0;");
  if (four) {
    emit_reduce_loop(e, n, is_max, vexpr, paired, 4);
    line(e, is_max ? "acc0 = ts_vf_max(acc0, acc2);" : "acc0 = acc0 + acc2;");
    line(e, is_max ? "acc1 = ts_vf_max(acc1, acc3);" : "acc1 = acc1 + acc3;");
  }
  emit_reduce_loop(e, n, is_max, vexpr, paired, 2);
  if (!paired)
    emit_reduce_loop(e, n, is_max, vexpr, paired, 1);
  emit_reduce_fold(e, is_max);
  emit_reduce_tail(e, n, is_max, sexpr);
}

/* After the fold (float acc): the columns left over done one by one, the result stored. */
static void
emit_reduce_tail(Emitter *e, const TsTileNode *n, gboolean is_max, const char *sexpr)
{
  emit_scalar_tail(e, n);
  emit_view_loads(e, n, n->expr, NULL, FALSE);
  line(e, is_max ? "acc = fmaxf(acc, %s);" : "acc += %s;", sexpr);
  e->depth--;
  line(e, "}");
  line(e, "%s = acc;", n->var);
  e->depth--;
  line(e, "}");
}

static void
emit_softmax_online(Emitter *e, const TsTileNode *n)
{
  g_autofree char *vexpr = rewrite_float_expr(n->expr, TRUE);
  g_autofree char *sexpr = rewrite_float_expr(n->expr, FALSE);
  line(e, "float %s, %s;", n->var, n->var2);
  line(e, "{");
  e->depth++;
  /* Per-lane running max and sum rescaled whenever the max grows (Milakov & Gimelshein). The
   * max is subtracted as at least -FLT_MAX (-0x1.fffffep+127f): a lane that has seen only -Inf
   * (a mask) would otherwise take exp(-Inf - -Inf), NaN, where its sum is 0. */
  line(e, "ts_vf mv = ts_vf_splat(-INFINITY), lv = ts_vf_splat(0.0f);");
  line(e, "int64_t j = 0;");
  line(e, "for (; j + TS_VEC <= (%s); j += TS_VEC) {", n->hi);
  e->depth++;
  emit_view_loads(e, n, n->expr, NULL, TRUE);
  line(e, "const ts_vf v = %s;", vexpr);
  line(e, "const ts_vf mn = ts_vf_max(mv, v);");
  line(e, "const ts_vf mf = ts_vf_max(mn, ts_vf_splat(-0x1.fffffep+127f));");
  line(e, "lv = lv * ts_vf_exp(mv - mf) + ts_vf_exp(v - mf);");
  line(e, "mv = mn;");
  e->depth--;
  line(e, "}");
  line(e, "float ms = ts_vf_hmax(mv), ls = 0.0f;");
  line(e, "if (j > 0)");
  line(e, "  ls = ts_vf_hsum(lv * ts_vf_exp(mv - ms));");
  emit_scalar_tail(e, n);
  emit_view_loads(e, n, n->expr, NULL, FALSE);
  line(e, "const float v = %s;", sexpr);
  line(e, "const float mn = fmaxf(ms, v), mf = fmaxf(mn, -0x1.fffffep+127f);");
  line(e, "ls = (ls == 0.0f ? 0.0f : ls * ts_exp_f32(ms - mf)) + ts_exp_f32(v - mf);");
  line(e, "ms = mn;");
  e->depth--;
  line(e, "}");
  line(e, "%s = ms;", n->var);
  line(e, "%s = ls;", n->var2);
  e->depth--;
  line(e, "}");
}

/* Stores a map's value at column j: a vector (val), a pair of vectors in the loop's lane order
 * (val the even lanes, val2 the odd), or a scalar (vector FALSE). */
static void
emit_map_store(Emitter *e, const TsTileView *dst, gboolean stream, gboolean vector,
               const char *val, const char *val2)
{
  const char *sfx = suffix_of(e, dst->buffer);
  const char *how = stream ? "stream" : "store";
  if (!vector && strcmp(sfx, "f32") == 0)
    line(e, "%s[(%s) + j] = %s;", dst->buffer, dst->offset, val);
  else if (!vector)
    line(e, "%s[(%s) + j] = ts_cpu_f32_to_%s(%s);", dst->buffer, dst->offset, sfx, val);
  else if (val2 == NULL)
    line(e, "ts_vf_%s_%s(%s + (%s) + j, %s);", how, sfx, dst->buffer, dst->offset, val);
  else if (strcmp(sfx, "f32") == 0) { /* a private row: the pairs as they are */
    line(e, "ts_vf_%s_f32(%s + (%s) + j, %s);", how, dst->buffer, dst->offset, val);
    line(e, "ts_vf_%s_f32(%s + (%s) + j + TS_VEC, %s);", how, dst->buffer, dst->offset, val2);
  } else {
    line(e, "ts_vf_%s2_%s(%s + (%s) + j, %s, %s);", how, sfx, dst->buffer, dst->offset, val,
         val2);
  }
}

static gboolean
carry_is_max(const TsTileCarry *c)
{
  return g_strcmp0(c->op, "max") == 0;
}

/* One vector step of a map at column j: the value (ts_v_ plus suffix) of the lanes the views
 * are bound to, added to the map's sum and to each carried reduction (its accumulator `half`:
 * 0 for the even lanes of a pair or a whole vector, 1 for the odd lanes). Carries with keys[c]
 * are not: they are maxes taken on the bits. */
static void
emit_map_value(Emitter *e, const TsTileNode *n, const char *suffix, const char *vexpr,
               int half, gboolean reads, const TsTileView *const *keys)
{
  /* A map of scalars only still needs a vector-typed value (GCC widens scalar operands). */
  line(e, reads ? "const ts_vf ts_v%s_ = %s;" : "const ts_vf ts_v%s_ = ts_vf_splat(0.0f) + (%s);",
       suffix, vexpr);
  if (n->var)
    line(e, "ts_sum_v += ts_v%s_;", suffix);
  for (guint c = 0; n->carries && c < n->carries->len; c++) {
    const TsTileCarry *cr = g_ptr_array_index(n->carries, c);
    if (keys && keys[c])
      continue; /* taken on the bits, once a step (emit_map) */
    g_autofree char *cexpr = rewrite_float_expr(cr->expr, TRUE);
    line(e, carry_is_max(cr) ? "ts_car%u_%d = ts_vf_max(ts_car%u_%d, %s);"
                             : "ts_car%u_%d = ts_car%u_%d + (%s);",
         c, half, c, half, cexpr);
  }
  if (n->drain) {
    g_autofree char *dexpr = rewrite_float_expr(n->drain_expr, TRUE);
    line(e, "const ts_vf ts_d%s_ = %s;", suffix, dexpr);
  }
}

static void
emit_map(Emitter *e, const TsTileNode *n)
{
  const TsTileView *dst = find_view(n, n->dst);
  if (dst == NULL) {
    fail(e, TS_EMIT_ERROR_INVALID, "tile IR: map destination '%s' is not a view", n->dst);
    return;
  }
  const guint n_carries = n->carries ? n->carries->len : 0;
  /* What the loop reads: the map's views, the carried reductions' and the second store's; the
   * vector steps read the views of carried maxes taken on the bits (keys) as keys only. */
  GString *reads_vec = g_string_new(n->expr);
  GString *reads_all = g_string_new(NULL);
  g_autofree const TsTileView **keys = g_new0(const TsTileView *, n_carries + 1);
  g_autofree const char **key_inf = g_new0(const char *, n_carries + 1);
  for (guint c = 0; c < n_carries; c++) {
    const TsTileCarry *cr = g_ptr_array_index(n->carries, c);
    if (!carry_is_max(cr) && g_strcmp0(cr->op, "sum") != 0) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED, "C target: carried reduction '%s' (only sum and max)",
           cr->op);
      g_string_free(reads_vec, TRUE);
      g_string_free(reads_all, TRUE);
      return;
    }
    keys[c] = carry_is_max(cr) ? key_max_view(e, n, cr->expr, &key_inf[c]) : NULL;
    g_string_append_printf(keys[c] ? reads_all : reads_vec, " %s", cr->expr);
  }
  if (n->drain)
    g_string_append_printf(reads_vec, " %s", n->drain_expr);
  g_string_prepend(reads_all, reads_vec->str);
  g_autofree char *vall = g_string_free(reads_vec, FALSE);
  g_autofree char *all = g_string_free(reads_all, FALSE);
  const TsTileView *drain = n->drain ? find_view(n, n->drain) : NULL;
  if (n->drain && drain == NULL) {
    fail(e, TS_EMIT_ERROR_INVALID, "tile IR: map's second destination '%s' is not a view",
         n->drain);
    return;
  }
  g_autofree char *dsexpr = n->drain ? rewrite_float_expr(n->drain_expr, FALSE) : NULL;
  gboolean reads = FALSE;
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    reads |= expr_mentions(n->expr, v->name);
  }
  gboolean paired = paired_lanes(e, n, vall);
  if (n->var)
    line(e, "float %s;", n->var);
  line(e, "{");
  e->depth++;
  g_autofree char *expr = hoist_row_consts(e, n, n->expr);
  g_autofree char *vexpr = rewrite_float_expr(expr, TRUE);
  g_autofree char *sexpr = rewrite_float_expr(expr, FALSE);
  if (n->var)
    line(e, "ts_vf ts_sum_v = ts_vf_splat(0.0f);");
  for (guint c = 0; c < n_carries; c++) {
    const char *init = carry_is_max(g_ptr_array_index(n->carries, c)) ? "-INFINITY" : "0.0f";
    if (keys[c])
      line(e, "ts_vk ts_car%u_0 = ts_vk_splat(%s), ts_car%u_1 = ts_car%u_0;", c, key_inf[c], c, c);
    else
      line(e, "ts_vf ts_car%u_0 = ts_vf_splat(%s), ts_car%u_1 = ts_vf_splat(%s);", c, init, c,
           init);
  }
  line(e, "int64_t j = 0;");
  line(e, paired ? "for (; j + 2 * TS_VEC <= (%s); j += 2 * TS_VEC) {"
                 : "for (; j + TS_VEC <= (%s); j += TS_VEC) {",
       n->hi);
  e->depth++;
  for (guint p = 0; n->prefetch && p < n->prefetch->len; p++)
    line(e, "__builtin_prefetch((%s) + j, 0, %d);", (const char *)g_ptr_array_index(n->prefetch, p),
         n->prefetch_l2 ? 1 : 3);
  for (guint c = 0; c < n_carries; c++) {
    if (keys[c] == NULL)
      continue;
    line(e, "ts_car%u_0 = ts_vk_max(ts_car%u_0, ts_vk_load(%s + (%s) + j));", c, c,
         keys[c]->buffer, keys[c]->offset);
    if (paired)
      line(e, "ts_car%u_1 = ts_vk_max(ts_car%u_1, ts_vk_load(%s + (%s) + j + TS_VEC));", c, c,
           keys[c]->buffer, keys[c]->offset);
  }
  if (paired) {
    emit_view_loads2(e, n, vall);
    line(e, drain ? "ts_vf ts_ve_, ts_vo_, ts_de_, ts_do_;" : "ts_vf ts_ve_, ts_vo_;");
    for (int h = 0; h < 2; h++) {
      line(e, "{");
      e->depth++;
      emit_view_binds(e, n, vall, h ? "o" : "e");
      emit_map_value(e, n, h ? "1" : "0", vexpr, h, reads, keys);
      line(e, "%s = ts_v%d_;", h ? "ts_vo_" : "ts_ve_", h);
      if (drain)
        line(e, "%s = ts_d%d_;", h ? "ts_do_" : "ts_de_", h);
      e->depth--;
      line(e, "}");
    }
    emit_map_store(e, dst, n->stream, TRUE, "ts_ve_", "ts_vo_");
    if (drain)
      emit_map_store(e, drain, n->drain_stream, TRUE, "ts_de_", "ts_do_");
  } else {
    /* The destination is loaded too when the expression reads it: an in-place map (y = y * r). */
    emit_view_loads(e, n, vall, NULL, TRUE);
    emit_map_value(e, n, "", vexpr, 0, reads, keys);
    emit_map_store(e, dst, n->stream, TRUE, "ts_v_", NULL);
    if (drain)
      emit_map_store(e, drain, n->drain_stream, TRUE, "ts_d_", NULL);
  }
  e->depth--;
  line(e, "}");
  if (n->var)
    line(e, "float ts_sum_s = ts_vf_hsum(ts_sum_v);");
  for (guint c = 0; c < n_carries; c++) {
    if (keys[c])
      line(e, "float ts_car%u_s = ts_cpu_%s_to_f32(ts_vk_hmax_bits(ts_vk_max(ts_car%u_0, "
              "ts_car%u_1)));", c, suffix_of(e, keys[c]->buffer), c, c);
    else
      line(e,
           carry_is_max(g_ptr_array_index(n->carries, c))
               ? "float ts_car%u_s = ts_vf_hmax(ts_vf_max(ts_car%u_0, ts_car%u_1));"
               : "float ts_car%u_s = ts_vf_hsum(ts_car%u_0 + ts_car%u_1);",
           c, c, c);
  }
  emit_scalar_tail(e, n);
  emit_view_loads(e, n, all, NULL, FALSE);
  line(e, "const float ts_v_ = %s;", sexpr);
  if (n->var)
    line(e, "ts_sum_s += ts_v_;");
  for (guint c = 0; c < n_carries; c++) {
    const TsTileCarry *cr = g_ptr_array_index(n->carries, c);
    g_autofree char *csexpr = rewrite_float_expr(cr->expr, FALSE);
    if (carry_is_max(cr))
      line(e, "ts_car%u_s = fmaxf(ts_car%u_s, %s);", c, c, csexpr);
    else
      line(e, "ts_car%u_s += %s;", c, csexpr);
  }
  emit_map_store(e, dst, FALSE, FALSE, "ts_v_", NULL);
  if (drain) {
    line(e, "const float ts_d_ = %s;", dsexpr);
    emit_map_store(e, drain, FALSE, FALSE, "ts_d_", NULL);
  }
  e->depth--;
  line(e, "}");
  if (n->var)
    line(e, "%s = ts_sum_s;", n->var);
  for (guint c = 0; c < n_carries; c++)
    line(e, "%s = ts_car%u_s;", ((const TsTileCarry *)g_ptr_array_index(n->carries, c))->var, c);
  e->depth--;
  line(e, "}");
  e->streamed |= n->stream || (drain && n->drain_stream);
}

static void
emit_node(Emitter *e, const TsTileNode *n)
{
  if (e->failed)
    return;
  switch (n->op) {
  case TS_TILE_BLOCK:
    emit_body(e, n);
    break;
  case TS_TILE_PARALLEL: {
    gint64 outer = e->team;
    if (n->ints[0] > 1)
      line(e, "#pragma omp parallel num_threads(%" G_GINT64_FORMAT ")", n->ints[0]);
    line(e, "{");
    e->depth++;
    e->team = n->ints[0];
    if (e->amx)
      line(e, "ts_amx_begin();");
    emit_body(e, n);
    /* Each worker's non-temporal stores are made visible before the team ends. */
    if (e->streamed)
      line(e, "ts_stream_fence();");
    e->streamed = FALSE;
    if (e->amx)
      line(e, "ts_amx_end();");
    e->team = outer;
    e->depth--;
    line(e, "}");
    break;
  }
  case TS_TILE_FOR:
    if (n->for_kind == TS_FOR_PARALLEL && e->team > 1)
      line(e, "#pragma omp for schedule(static)");
    else if (n->for_kind == TS_FOR_PARALLEL_DYNAMIC && e->team > 1)
      line(e, "#pragma omp for schedule(dynamic)");
    else if (n->for_kind == TS_FOR_UNROLL)
      line(e, "#pragma GCC unroll 8");
    line(e, "for (int64_t %s = %s; %s < (%s); %s += %s) {", n->var, n->lo, n->var, n->hi, n->var,
         n->step);
    e->depth++;
    emit_body(e, n);
    e->depth--;
    line(e, "}");
    break;
  case TS_TILE_LET:
    if (n->dtype == TS_DTYPE_INT32) {
      line(e, "const int64_t %s = %s;", n->var, n->expr);
    } else {
      g_autofree char *s = rewrite_float_expr(n->expr, FALSE);
      line(e, "const float %s = %s;", n->var, s);
    }
    break;
  case TS_TILE_ALLOC: {
    const char *t = c_type(n->buffer->dtype);
    if (t == NULL) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED, "C target: cannot allocate %s buffer '%s'",
           ts_dtype_name(n->buffer->dtype), n->buffer->name);
      break;
    }
    if (n->buffer->space == TS_MEM_REGISTER)
      line(e, "%s %s[%s] __attribute__((aligned(64)));", t, n->buffer->name, n->buffer->size);
    else
      line(e, "%s *restrict %s = (%s *)ts_cpu_alloc(sizeof(%s) * (size_t)(%s));", t,
           n->buffer->name, t, t, n->buffer->size);
    if (n->buffer->per_worker && n->buffer->space == TS_MEM_SHARED)
      line(e, "int64_t %s_tag = -1; /* what the buffer holds, for packs with a reuse key */ "
              "(void)%s_tag;", n->buffer->name, n->buffer->name);
    break;
  }
  case TS_TILE_PACK:
    emit_pack(e, n);
    break;
  case TS_TILE_MMA:
    emit_mma(e, n);
    break;
  case TS_TILE_REDUCE:
    emit_reduce(e, n);
    break;
  case TS_TILE_SOFTMAX_ONLINE:
    emit_softmax_online(e, n);
    break;
  case TS_TILE_MAP:
    emit_map(e, n);
    break;
  case TS_TILE_CONVERT: {
    const TsTileBuffer *dst = buffer_of(e, arg(n, 1));
    if (n->args->len > 3) /* the source is the kernel's own f32 workspace, scaled in place */
      line(e, "ts_scale_f32(%s, %s, (float)(%s));", arg(n, 0), arg(n, 2), arg(n, 3));
    if (dst && dst->dtype != TS_DTYPE_F32)
      line(e, "ts_store_f32_as_%s(%s, %s, %s);", suffix_of(e, arg(n, 1)), arg(n, 0), arg(n, 1),
           arg(n, 2));
    else
      line(e, "memcpy(%s, %s, sizeof(float) * (size_t)(%s));", arg(n, 1), arg(n, 0), arg(n, 2));
    break;
  }
  case TS_TILE_BARRIER:
    if (e->team > 1)
      line(e, "#pragma omp barrier");
    break;
  case TS_TILE_SET: {
    const TsTileBuffer *b = buffer_of(e, n->dst);
    if (b != NULL && b->dtype != TS_DTYPE_F32) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED, "C target: tile.set stores f32, '%s' is %s", n->dst,
           ts_dtype_name(b->dtype));
      break;
    }
    g_autofree char *s = rewrite_float_expr(n->expr, FALSE);
    line(e, "%s[%s] = %s;", n->dst, n->lo, s);
    break;
  }
  case TS_TILE_IF:
    line(e, "if (%s) {", n->expr);
    e->depth++;
    emit_body(e, n);
    e->depth--;
    line(e, "}");
    break;
  case TS_TILE_GRID:
  case TS_TILE_INTRINSIC:
    fail(e, TS_EMIT_ERROR_UNSUPPORTED, "C target: '%s' is a GPU construct (use the cuda backend)",
         n->op == TS_TILE_GRID ? "tile.grid" : n->var);
    break;
  }
}

void
ts_emit_comment(GString *out, const char *text)
{
  g_string_append(out, "/* ");
  for (const char *c = text; *c; c++) {
    g_string_append_c(out, *c);
    if (c[0] == '*' && c[1] == '/')
      g_string_append_c(out, ' ');
  }
  g_string_append(out, " */\n");
}

char *
ts_emit_c(const TsTileKernel *kernel, const char *entry, const char *banner, GError **error)
{
  g_return_val_if_fail(kernel != NULL && entry != NULL, NULL);
  if (kernel->tensor_maps->len > 0) {
    g_set_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED,
                "C target: kernel %s reads through TMA tensor maps, a GPU (sm_90) construct",
                kernel->name);
    return NULL;
  }
  Emitter e = {
    .kernel = kernel,
    .out = g_string_new(NULL),
    .ukrs = g_string_new(NULL),
    .ukr_set = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
    .depth = 1,
    .error = error,
    .amx = uses_amx(kernel->body),
    .row_order = g_hash_table_new(g_str_hash, g_str_equal),
  };

  for (guint i = 0; i < kernel->params->len; i++) {
    const TsTileBuffer *b = g_ptr_array_index(kernel->params, i);
    const char *t = c_type(b->dtype);
    if (t == NULL) {
      fail(&e, TS_EMIT_ERROR_UNSUPPORTED, "C target: dtype %s of '%s' is not supported",
           ts_dtype_name(b->dtype), b->name);
      break;
    }
    line(&e, "%s *restrict %s = (%s *)bufs[%u];", t, b->name, t, i);
  }
  for (guint i = 0; i < kernel->int_params->len; i++)
    line(&e, "const int64_t %s = ints[%u];", (char *)g_ptr_array_index(kernel->int_params, i), i);
  /* The launch constants' values are not in the text: every point that differs only in them
   * compiles to the same source, one artifact. */
  for (guint i = 0; i < kernel->launch_names->len; i++)
    line(&e, "const int64_t %s = ints[%u]; /* launch constant */",
         (char *)g_ptr_array_index(kernel->launch_names, i), kernel->int_params->len + i);
  for (guint i = 0; i < kernel->float_params->len; i++)
    line(&e, "const float %s = (float)floats[%u];",
         (char *)g_ptr_array_index(kernel->float_params, i), i);
  line(&e, "(void)bufs; (void)ints; (void)floats;");
  emit_node(&e, kernel->body);
  if (e.streamed) /* a streaming map outside any parallel region */
    line(&e, "ts_stream_fence();");

  g_hash_table_unref(e.ukr_set);
  g_hash_table_unref(e.row_order);
  if (e.failed) {
    g_string_free(e.out, TRUE);
    g_string_free(e.ukrs, TRUE);
    return NULL;
  }

  GString *src = g_string_new(NULL);
  ts_emit_comment(src, banner ? banner : kernel->name);
  g_string_append(src, "#include <stdint.h>\n#include <string.h>\n#include <math.h>\n");
  for (guint i = 0; i < kernel->defines->len; i++) {
    g_auto(GStrv) kv = g_strsplit(g_ptr_array_index(kernel->defines, i), "=", 2);
    if (g_strcmp0(kv[0], "VEC") == 0)
      g_string_append_printf(src, "#define TS_VEC %s\n", kv[1]);
  }
  g_string_append(src, "#include \"ts_cpu_prims.h\"\n\n");
  g_string_append(src, "#define min(a, b) ((a) < (b) ? (a) : (b))\n"
                       "#define max(a, b) ((a) > (b) ? (a) : (b))\n");
  for (guint i = 0; i < kernel->defines->len; i++) {
    g_auto(GStrv) kv = g_strsplit(g_ptr_array_index(kernel->defines, i), "=", 2);
    g_string_append_printf(src, "#define %s %s\n", kv[0], kv[1]);
  }
  g_string_append_c(src, '\n');
  g_string_append(src, e.ukrs->str);
  g_string_append_printf(src,
                         "\n__attribute__((visibility(\"default\")))\n"
                         "void %s(void *const *bufs, const int64_t *ints, const double *floats);\n"
                         "void\n%s(void *const *bufs, const int64_t *ints, const double *floats)\n{\n",
                         entry, entry);
  g_string_append(src, e.out->str);
  g_string_append(src, "}\n");
  g_string_free(e.out, TRUE);
  g_string_free(e.ukrs, TRUE);
  return g_string_free(src, FALSE);
}
