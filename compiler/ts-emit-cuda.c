/* ts-emit-cuda.c — the CUDA emitter: Tile IR → one CUDA C translation unit for NVRTC.
 *
 * A GPU kernel's Tile IR is a GRID node whose body is what one CTA does: loops, lets, shared and
 * register allocations, barriers, and tile intrinsics. Each intrinsic becomes a call of the
 * primitive library (ts_cuda_prims.cuh) with the schedule's numbers as template arguments, so
 * the generated code stays short enough to read in the lowering inspector and every
 * instruction-level detail (ldmatrix fragments, cp.async, swizzles) lives in one reviewed place.
 *
 * Shared ALLOCs are carved, in order and 128-byte aligned, from the dynamic shared memory the
 * GRID node declares; a static_assert checks that they fit, so a lowering that miscounts fails
 * to compile instead of corrupting memory. The dynamic shared memory itself starts on a
 * 1024-byte boundary, where the 128-byte swizzle pattern of wgmma operands repeats
 * (ts_cuda_wgmma.cuh). */
#include "ts-emit.h"

#include <string.h>

typedef struct {
  const TsTileKernel *kernel;
  GString *out;
  int depth;
  gboolean in_grid;
  GString *smem_end; /* byte offset expression of the end of the last shared allocation */
  GError **error;
  gboolean failed;
} Emitter;

static void line(Emitter *e, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

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

static void fail(Emitter *e, TsEmitError code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

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

/* Storage type of a dtype in generated CUDA: the prims' bf16/f16/fp8 bit-pattern structs. */
static const char *
cuda_type(TsDtype dtype)
{
  switch (dtype) {
  case TS_DTYPE_F64: return "double";
  case TS_DTYPE_F32: return "float";
  case TS_DTYPE_BF16: return "ts_bf16";
  case TS_DTYPE_F16: return "ts_f16";
  case TS_DTYPE_FP8_E4M3: return "ts_e4m3";
  case TS_DTYPE_FP8_E5M2: return "ts_e5m2";
  case TS_DTYPE_INT32: return "int";
  case TS_DTYPE_INT8: return "signed char";
  default: return NULL;
  }
}

/* A template argument: a dtype name becomes its CUDA type, anything else (numbers, constants,
 * expressions of them) is written as is. */
static const char *
template_arg(const char *value)
{
  static const TsDtype dtypes[] = {TS_DTYPE_F32, TS_DTYPE_BF16, TS_DTYPE_F16, TS_DTYPE_F64,
                                   TS_DTYPE_FP8_E4M3, TS_DTYPE_FP8_E5M2};
  for (guint i = 0; i < G_N_ELEMENTS(dtypes); i++)
    if (strcmp(value, ts_dtype_name(dtypes[i])) == 0)
      return cuda_type(dtypes[i]);
  return value;
}

static void emit_node(Emitter *e, const TsTileNode *n);

static int
index_of(const GPtrArray *names, const char *name)
{
  for (guint i = 0; i < names->len; i++)
    if (g_strcmp0(g_ptr_array_index(names, i), name) == 0)
      return (int)i;
  return -1;
}

/* The kernel's tensor maps as the <entry>_tma record the host encodes them from (the layout of
 * runtime/cuda/ts-cuda-tma.h), or NULL when it has none. */
static char *
tma_record_text(Emitter *e, const char *entry)
{
  const GPtrArray *maps = e->kernel->tensor_maps;
  if (maps->len == 0)
    return NULL;
  if (maps->len > 4) {
    fail(e, TS_EMIT_ERROR_UNSUPPORTED, "CUDA target: %u tensor maps; a kernel takes at most 4",
         maps->len);
    return NULL;
  }
  GString *r = g_string_new(NULL);
  g_string_append_printf(r,
                         "// Its TMA tensor maps: count, then per map the buffer, element bytes, "
                         "the integer arguments of\n// the row length and the row count, the box "
                         "(along a row, rows), the swizzle bytes and a mask of further\n// "
                         "integer arguments the row count is multiplied by.\n"
                         "extern \"C\" __constant__ unsigned int %s_tma[%u] = {%u",
                         entry, 1 + 8 * maps->len, maps->len);
  for (guint i = 0; i < maps->len; i++) {
    const TsTileTensorMap *m = g_ptr_array_index(maps, i);
    int buf = -1;
    for (guint j = 0; j < e->kernel->params->len; j++)
      if (g_strcmp0(((const TsTileBuffer *)g_ptr_array_index(e->kernel->params, j))->name,
                    m->buffer) == 0)
        buf = (int)j;
    const int inner = index_of(e->kernel->int_params, m->inner);
    /* The row count may be a product of dims ("B*H*S"): the first is the count's word, the
     * others bits of the multiplier mask. */
    g_auto(GStrv) factors = g_strsplit(m->outer, "*", -1);
    const int outer = index_of(e->kernel->int_params, g_strstrip(factors[0]));
    guint mul = 0;
    gboolean known = outer >= 0;
    for (guint f = 1; factors[f] != NULL && known; f++) {
      const int at = index_of(e->kernel->int_params, g_strstrip(factors[f]));
      known = at >= 0 && at < 32 && !(mul >> at & 1) && at != outer;
      mul |= known ? 1u << at : 0;
    }
    if (buf < 0 || inner < 0 || !known) {
      fail(e, TS_EMIT_ERROR_INVALID,
           "CUDA target: tensor map %s names %s[%s, %s], not a buffer and integer parameters "
           "of the kernel (rows: one, or a product of distinct ones)",
           m->name, m->buffer, m->outer, m->inner);
      break;
    }
    const TsTileBuffer *b = g_ptr_array_index(e->kernel->params, buf);
    g_string_append_printf(
        r, ", %d, %u, %d, %d, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %u",
        buf, ts_dtype_bits(b->dtype) / 8, inner, outer, m->box_inner, m->box_outer, m->swizzle,
        mul);
  }
  g_string_append(r, "};\n\n");
  return g_string_free(r, FALSE);
}

static void
emit_body(Emitter *e, const TsTileNode *n)
{
  for (guint i = 0; i < n->children->len && !e->failed; i++)
    emit_node(e, g_ptr_array_index(n->children, i));
}

static void
emit_alloc(Emitter *e, const TsTileNode *n)
{
  const TsTileBuffer *b = n->buffer;
  const char *t = cuda_type(b->dtype);
  if (t == NULL) {
    fail(e, TS_EMIT_ERROR_UNSUPPORTED, "CUDA target: cannot allocate %s buffer '%s'",
         ts_dtype_name(b->dtype), b->name);
    return;
  }
  switch (b->space) {
  case TS_MEM_REGISTER:
    /* Zeroed: register tiles are accumulators or running statistics. */
    line(e, "%s %s[%s] = {};", t, b->name, b->size);
    return;
  case TS_MEM_SHARED: {
    g_autofree char *start = g_strdup_printf("((%s + 127) / 128 * 128)", e->smem_end->str);
    line(e, "%s *const %s = reinterpret_cast<%s *>(ts_smem + %s); /* %s */", t, b->name, t, start,
         b->layout ? b->layout : "");
    g_string_printf(e->smem_end, "(%s + sizeof(%s) * (%s))", start, t, b->size);
    return;
  }
  case TS_MEM_GLOBAL:
    fail(e, TS_EMIT_ERROR_UNSUPPORTED,
         "CUDA target: global workspace '%s' cannot be allocated inside a kernel", b->name);
    return;
  }
}

static void
emit_intrinsic(Emitter *e, const TsTileNode *n)
{
  GString *call = g_string_new(NULL);
  g_string_append_printf(call, "ts_%s", n->var);
  if (n->params->len) {
    g_string_append_c(call, '<');
    for (guint i = 0; i < n->params->len; i++) {
      const char *kv = g_ptr_array_index(n->params, i);
      const char *eq = strchr(kv, '=');
      if (eq == NULL) {
        fail(e, TS_EMIT_ERROR_INVALID, "tile.%s: template constant '%s' is not NAME=VALUE",
             n->var, kv);
        break;
      }
      g_string_append_printf(call, "%s%s", i ? ", " : "", template_arg(eq + 1));
    }
    g_string_append_c(call, '>');
  }
  g_string_append_c(call, '(');
  for (guint i = 0; i < n->args->len; i++)
    g_string_append_printf(call, "%s%s", i ? ", " : "", (char *)g_ptr_array_index(n->args, i));
  g_string_append(call, ");");
  line(e, "%s", call->str);
  g_string_free(call, TRUE);
}

static gboolean
mentions(const char *expr, const char *name)
{
  const gsize len = strlen(name);
  for (const char *p = strstr(expr, name); p; p = strstr(p + 1, name)) {
    const gboolean left = p == expr || !(g_ascii_isalnum(p[-1]) || p[-1] == '_');
    const gboolean right = !(g_ascii_isalnum(p[len]) || p[len] == '_');
    if (left && right)
      return TRUE;
  }
  return FALSE;
}

/* A map over the thread's register tiles: element j of every view, the expression (CUDA C
 * over the views' names and the kernel's scalars), into element j of the destination. Every
 * thread of an elementwise kernel holds the same positions of each tile, so the map needs no
 * communication; the stores that follow skip positions outside the tensor. */
static void
emit_map(Emitter *e, const TsTileNode *n)
{
  const TsTileView *dst = NULL;
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    const TsTileBuffer *b = ts_tile_kernel_find_buffer(e->kernel, v->buffer);
    if (b == NULL || b->space != TS_MEM_REGISTER || b->dtype != TS_DTYPE_F32) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED,
           "CUDA target: a map reads and writes f32 register tiles; view '%s' is of '%s'",
           v->name, v->buffer);
      return;
    }
    if (g_strcmp0(v->name, n->dst) == 0)
      dst = v;
  }
  if (dst == NULL) {
    fail(e, TS_EMIT_ERROR_INVALID, "tile IR: map destination '%s' is not a view", n->dst);
    return;
  }
  /* A thread's map is over its own register tile: the row-wide sums, carried reductions and
   * second stores of CPU row passes have no meaning there. */
  if (n->var || n->carries || n->drain) {
    fail(e, TS_EMIT_ERROR_UNSUPPORTED,
         "CUDA target: a map's sum, carried reduction or second store is a CPU row-pass "
         "construct; GPU lowerings reduce rows with intrinsics");
    return;
  }
  line(e, "#pragma unroll");
  line(e, "for (int j = 0; j < (%s); j++) {", n->hi);
  e->depth++;
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    if (mentions(n->expr, v->name))
      line(e, "const float %s = %s[(%s) + j];", v->name, v->buffer, v->offset);
  }
  line(e, "%s[(%s) + j] = %s;", dst->buffer, dst->offset, n->expr);
  e->depth--;
  line(e, "}");
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
  case TS_TILE_GRID:
    if (e->in_grid) {
      fail(e, TS_EMIT_ERROR_INVALID, "CUDA target: a tile.grid inside another");
      break;
    }
    e->in_grid = TRUE;
    line(e, "const long long bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;");
    line(e, "(void)bx; (void)by; (void)bz;");
    emit_body(e, n);
    line(e, "static_assert(%s <= TS_SMEM_BYTES, \"shared allocations exceed the launch's "
            "dynamic shared memory\");", e->smem_end->str);
    break;
  case TS_TILE_FOR:
    if (n->for_kind == TS_FOR_PARALLEL || n->for_kind == TS_FOR_PARALLEL_DYNAMIC) {
      fail(e, TS_EMIT_ERROR_UNSUPPORTED,
           "CUDA target: parallel loop '%s' (CTA-level work is the grid's)", n->var);
      break;
    }
    if (n->for_kind == TS_FOR_UNROLL)
      line(e, "#pragma unroll");
    line(e, "for (long long %s = %s; %s < (%s); %s += %s) {", n->var, n->lo, n->var, n->hi, n->var,
         n->step);
    e->depth++;
    emit_body(e, n);
    e->depth--;
    line(e, "}");
    break;
  case TS_TILE_LET:
    if (n->dtype == TS_DTYPE_INT32)
      line(e, "const long long %s = %s;", n->var, n->expr);
    else
      line(e, "float %s = %s;", n->var, n->expr);
    break;
  case TS_TILE_ALLOC:
    emit_alloc(e, n);
    break;
  case TS_TILE_BARRIER:
    line(e, "__syncthreads();");
    break;
  case TS_TILE_IF:
    line(e, "if (%s) {", n->expr);
    e->depth++;
    emit_body(e, n);
    e->depth--;
    line(e, "}");
    break;
  case TS_TILE_INTRINSIC:
    emit_intrinsic(e, n);
    break;
  case TS_TILE_MAP:
    emit_map(e, n);
    break;
  case TS_TILE_PARALLEL:
  case TS_TILE_PACK:
  case TS_TILE_MMA:
  case TS_TILE_REDUCE:
  case TS_TILE_SOFTMAX_ONLINE:
  case TS_TILE_CONVERT:
  case TS_TILE_SET:
    fail(e, TS_EMIT_ERROR_UNSUPPORTED,
         "CUDA target: a CPU construct (parallel team, pack, micro-kernel mma, row "
         "reduce/convert/set) in a GPU kernel; GPU lowerings use tile.grid and intrinsics");
    break;
  }
}

char *
ts_emit_cuda(const TsTileKernel *kernel, const char *entry, const char *banner, GError **error)
{
  g_return_val_if_fail(kernel != NULL && entry != NULL, NULL);
  const TsTileNode *grid = ts_tile_kernel_grid(kernel);
  if (grid == NULL) {
    g_set_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_INVALID,
                "CUDA target: kernel %s has no tile.grid (it was lowered for the CPU)",
                kernel->name);
    return NULL;
  }
  if (kernel->params->len > 8 || kernel->int_params->len > 8 || kernel->float_params->len > 4) {
    g_set_error(error, TS_EMIT_ERROR, TS_EMIT_ERROR_UNSUPPORTED,
                "CUDA target: kernel %s has more parameters than TsArgs holds (8 buffers, 8 "
                "integers, 4 floats)", kernel->name);
    return NULL;
  }
  Emitter e = {
    .kernel = kernel,
    .out = g_string_new(NULL),
    .depth = 1,
    .smem_end = g_string_new("0"),
    .error = error,
  };

  for (guint i = 0; i < kernel->params->len; i++) {
    const TsTileBuffer *b = g_ptr_array_index(kernel->params, i);
    const char *t = cuda_type(b->dtype);
    if (t == NULL) {
      fail(&e, TS_EMIT_ERROR_UNSUPPORTED, "CUDA target: dtype %s of '%s' is not supported",
           ts_dtype_name(b->dtype), b->name);
      break;
    }
    line(&e, "%s *const __restrict__ %s = static_cast<%s *>(ts_args.bufs[%u]);", t, b->name, t, i);
  }
  for (guint i = 0; i < kernel->int_params->len; i++)
    line(&e, "const long long %s = ts_args.ints[%u];",
         (char *)g_ptr_array_index(kernel->int_params, i), i);
  for (guint i = 0; i < kernel->float_params->len; i++)
    line(&e, "const float %s = (float)ts_args.floats[%u];",
         (char *)g_ptr_array_index(kernel->float_params, i), i);
  g_autofree char *tma_record = tma_record_text(&e, entry);
  for (guint i = 0; i < kernel->tensor_maps->len; i++)
    line(&e, "const TsTmaMap *const %s = &ts_tma.map[%u];",
         ((const TsTileTensorMap *)g_ptr_array_index(kernel->tensor_maps, i))->name, i);
  /* A launch whose shape is not the one the code was generated for would index out of
   * bounds silently: trap instead (one compare per CTA). */
  line(&e, "if (threadIdx.x == 0 && (gridDim.x != %s_launch[0] || gridDim.y != %s_launch[1] || "
           "gridDim.z != %s_launch[2] || blockDim.x != %s_launch[3]))", entry, entry, entry,
       entry);
  line(&e, "  __trap();");
  emit_node(&e, kernel->body);

  gboolean failed = e.failed;
  g_autofree char *body = g_string_free(e.out, failed);
  g_string_free(e.smem_end, TRUE);
  if (failed)
    return NULL;

  GString *src = g_string_new(NULL);
  ts_emit_comment(src, banner ? banner : kernel->name);
  g_string_append(src, "#include \"ts_cuda_prims.cuh\"\n\n");
  g_string_append(src, "#define min(a, b) ((a) < (b) ? (a) : (b))\n"
                       "#define max(a, b) ((a) > (b) ? (a) : (b))\n");
  for (guint i = 0; i < kernel->defines->len; i++) {
    g_auto(GStrv) kv = g_strsplit(g_ptr_array_index(kernel->defines, i), "=", 2);
    g_string_append_printf(src, "static constexpr long long %s = %s;\n", kv[0], kv[1]);
  }
  /* Launch constants are compiled in like defines: a GPU kernel's tile sizes shape its
   * registers and shared memory. */
  for (guint i = 0; i < kernel->launch_names->len; i++)
    g_string_append_printf(src, "static constexpr long long %s = %" G_GINT64_FORMAT ";\n",
                           (char *)g_ptr_array_index(kernel->launch_names, i),
                           g_array_index(kernel->launch_values, gint64, i));
  g_string_append_printf(src, "static constexpr long long TS_SMEM_BYTES = %" G_GINT64_FORMAT ";\n",
                         grid->ints[4]);
  g_string_append_printf(src,
                         "\n// The launch this code was generated for: grid x, y, z; block x, y, "
                         "z; dynamic shared memory bytes.\n"
                         "extern \"C\" __constant__ unsigned int %s_launch[7] = {%" G_GINT64_FORMAT
                         ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                         ", 1, 1, %" G_GINT64_FORMAT "};\n\n",
                         entry, grid->ints[0], grid->ints[1], grid->ints[2], grid->ints[3],
                         grid->ints[4]);
  if (tma_record)
    g_string_append(src, tma_record);
  /* Minimum one resident CTA per SM: without it, LTO's ptxas caps a 128-thread kernel at 128
   * registers and spills tiles that fit in 164 (measured with `tessera-tune check`). The
   * schedule's tile sizes, not the compiler, choose the occupancy. */
  /* A cluster size fixed at compile time: the plain cuLaunchKernel launches it (the grid is a
   * multiple of it). */
  g_autofree char *cluster =
    grid->ints[5] > 1 ? g_strdup_printf("__cluster_dims__(%" G_GINT64_FORMAT ", 1, 1) ", grid->ints[5])
                      : g_strdup("");
  g_string_append_printf(src,
                         "extern \"C\" __global__ void %s__launch_bounds__(%" G_GINT64_FORMAT ", 1)\n"
                         "%s(const TsArgs ts_args%s)\n{\n"
                         "  extern __shared__ __align__(1024) unsigned char ts_smem[];\n"
                         "  (void)ts_smem;\n",
                         cluster, grid->ints[3], entry,
                         tma_record ? ", const __grid_constant__ TsTmaMaps ts_tma" : "");
  g_string_append(src, body);
  g_string_append(src, "}\n");
  return g_string_free(src, FALSE);
}
