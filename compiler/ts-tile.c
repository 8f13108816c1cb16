/* ts-tile.c — Tile IR construction and its printer (the Tile IR stage of the lowering
 * inspector). The tree is built by each op's lowering in kernels/ and read by the emitters. */
#include "ts-tile.h"

#include <stdarg.h>

const char *
ts_mem_space_name(TsMemSpace space)
{
  switch (space) {
  case TS_MEM_GLOBAL: return "global";
  case TS_MEM_SHARED: return "shared";
  case TS_MEM_REGISTER: return "register";
  }
  return "?";
}

static void
buffer_free(TsTileBuffer *buffer)
{
  if (buffer == NULL)
    return;
  g_free(buffer->name);
  g_free(buffer->size);
  g_free(buffer->layout);
  g_free(buffer);
}

static TsTileBuffer *
buffer_new(const char *name, TsMemSpace space, TsDtype dtype, const char *size,
           gboolean per_worker, const char *layout)
{
  TsTileBuffer *b = g_new0(TsTileBuffer, 1);
  b->name = g_strdup(name);
  b->space = space;
  b->dtype = dtype;
  b->size = g_strdup(size);
  b->per_worker = per_worker;
  b->layout = g_strdup(layout);
  return b;
}

static void
view_free(TsTileView *view)
{
  if (view == NULL)
    return;
  g_free(view->name);
  g_free(view->buffer);
  g_free(view->offset);
  g_free(view);
}

static void
tensor_map_free(TsTileTensorMap *map)
{
  g_free(map->name);
  g_free(map->buffer);
  g_free(map->inner);
  g_free(map->outer);
  g_free(map);
}

TsTileKernel *
ts_tile_kernel_new(const char *name, const char *op, const TsDtypePolicy *dtype)
{
  TsTileKernel *k = g_new0(TsTileKernel, 1);
  k->name = g_strdup(name);
  k->op = g_strdup(op);
  k->dtype = *dtype;
  k->params = g_ptr_array_new_with_free_func((GDestroyNotify)buffer_free);
  k->int_params = g_ptr_array_new_with_free_func(g_free);
  k->float_params = g_ptr_array_new_with_free_func(g_free);
  k->defines = g_ptr_array_new_with_free_func(g_free);
  k->launch_names = g_ptr_array_new_with_free_func(g_free);
  k->launch_values = g_array_new(FALSE, FALSE, sizeof(gint64));
  k->tensor_maps = g_ptr_array_new_with_free_func((GDestroyNotify)tensor_map_free);
  k->body = ts_tile_block_new();
  return k;
}

void
ts_tile_kernel_free(TsTileKernel *kernel)
{
  if (kernel == NULL)
    return;
  g_free(kernel->name);
  g_free(kernel->op);
  g_ptr_array_unref(kernel->params);
  g_ptr_array_unref(kernel->int_params);
  g_ptr_array_unref(kernel->float_params);
  g_ptr_array_unref(kernel->defines);
  g_ptr_array_unref(kernel->launch_names);
  g_array_unref(kernel->launch_values);
  g_ptr_array_unref(kernel->tensor_maps);
  ts_tile_node_free(kernel->body);
  g_free(kernel);
}

void
ts_tile_kernel_add_param(TsTileKernel *kernel, const char *name, TsDtype dtype, const char *size)
{
  g_ptr_array_add(kernel->params,
                  buffer_new(name, TS_MEM_GLOBAL, dtype, size, FALSE, "row-major"));
}

void
ts_tile_kernel_add_int_param(TsTileKernel *kernel, const char *name)
{
  g_ptr_array_add(kernel->int_params, g_strdup(name));
}

void
ts_tile_kernel_add_float_param(TsTileKernel *kernel, const char *name)
{
  g_ptr_array_add(kernel->float_params, g_strdup(name));
}

void
ts_tile_kernel_define(TsTileKernel *kernel, const char *name, gint64 value)
{
  g_ptr_array_add(kernel->defines, g_strdup_printf("%s=%" G_GINT64_FORMAT, name, value));
}

void
ts_tile_kernel_launch_const(TsTileKernel *kernel, const char *name, gint64 value)
{
  g_ptr_array_add(kernel->launch_names, g_strdup(name));
  g_array_append_val(kernel->launch_values, value);
}

char *
ts_tile_kernel_launch_text(const TsTileKernel *kernel)
{
  if (kernel->launch_names->len == 0)
    return NULL;
  GString *text = g_string_new(NULL);
  for (guint i = 0; i < kernel->launch_names->len; i++)
    g_string_append_printf(text, "%s%s=%" G_GINT64_FORMAT, i ? ", " : "",
                           (char *)g_ptr_array_index(kernel->launch_names, i),
                           g_array_index(kernel->launch_values, gint64, i));
  return g_string_free(text, FALSE);
}

void
ts_tile_kernel_add_tensor_map(TsTileKernel *kernel, const char *name, const char *buffer,
                              const char *inner, const char *outer, gint64 box_inner,
                              gint64 box_outer, gint64 swizzle)
{
  TsTileTensorMap *map = g_new0(TsTileTensorMap, 1);
  map->name = g_strdup(name);
  map->buffer = g_strdup(buffer);
  map->inner = g_strdup(inner);
  map->outer = g_strdup(outer);
  map->box_inner = box_inner;
  map->box_outer = box_outer;
  map->swizzle = swizzle;
  g_ptr_array_add(kernel->tensor_maps, map);
}

static const TsTileBuffer *
find_in_tree(const TsTileNode *node, const char *name)
{
  if (node->op == TS_TILE_ALLOC && g_strcmp0(node->buffer->name, name) == 0)
    return node->buffer;
  for (guint i = 0; node->children && i < node->children->len; i++) {
    const TsTileBuffer *b = find_in_tree(g_ptr_array_index(node->children, i), name);
    if (b)
      return b;
  }
  return NULL;
}

const TsTileBuffer *
ts_tile_kernel_find_buffer(const TsTileKernel *kernel, const char *name)
{
  for (guint i = 0; i < kernel->params->len; i++) {
    const TsTileBuffer *b = g_ptr_array_index(kernel->params, i);
    if (g_strcmp0(b->name, name) == 0)
      return b;
  }
  return find_in_tree(kernel->body, name);
}

static TsTileNode *
node_new(TsTileNode *parent, TsTileOp op)
{
  TsTileNode *n = g_new0(TsTileNode, 1);
  n->op = op;
  n->args = g_ptr_array_new_with_free_func(g_free);
  if (parent != NULL) {
    g_assert(parent->children != NULL);
    g_ptr_array_add(parent->children, n);
  }
  return n;
}

static void
node_add_children(TsTileNode *n)
{
  n->children = g_ptr_array_new_with_free_func((GDestroyNotify)ts_tile_node_free);
}

TsTileNode *
ts_tile_block_new(void)
{
  TsTileNode *n = node_new(NULL, TS_TILE_BLOCK);
  node_add_children(n);
  return n;
}

void
ts_tile_node_free(TsTileNode *node)
{
  if (node == NULL)
    return;
  g_free(node->var);
  g_free(node->var2);
  g_free(node->lo);
  g_free(node->hi);
  g_free(node->step);
  g_free(node->expr);
  g_free(node->dst);
  g_clear_pointer(&node->prefetch, g_ptr_array_unref);
  g_clear_pointer(&node->carries, g_ptr_array_unref);
  g_free(node->drain);
  g_free(node->drain_expr);
  g_clear_pointer(&node->args, g_ptr_array_unref);
  g_clear_pointer(&node->views, g_ptr_array_unref);
  g_clear_pointer(&node->children, g_ptr_array_unref);
  g_clear_pointer(&node->params, g_ptr_array_unref);
  buffer_free(node->buffer);
  g_free(node);
}

TsTileNode *
ts_tile_parallel(TsTileNode *parent, gint64 threads)
{
  TsTileNode *n = node_new(parent, TS_TILE_PARALLEL);
  node_add_children(n);
  n->ints[0] = threads;
  return n;
}

TsTileNode *
ts_tile_for(TsTileNode *parent, const char *var, const char *lo, const char *hi, const char *step,
            TsForKind kind)
{
  TsTileNode *n = node_new(parent, TS_TILE_FOR);
  node_add_children(n);
  n->var = g_strdup(var);
  n->lo = g_strdup(lo);
  n->hi = g_strdup(hi);
  n->step = g_strdup(step);
  n->for_kind = kind;
  return n;
}

TsTileNode *
ts_tile_let(TsTileNode *parent, const char *var, TsDtype dtype, const char *expr)
{
  TsTileNode *n = node_new(parent, TS_TILE_LET);
  n->var = g_strdup(var);
  n->dtype = dtype;
  n->expr = g_strdup(expr);
  return n;
}

TsTileNode *
ts_tile_alloc(TsTileNode *parent, TsTileKernel *kernel, const char *name, TsMemSpace space,
              TsDtype dtype, const char *size, gboolean per_worker, const char *layout)
{
  TsTileNode *n = node_new(parent, TS_TILE_ALLOC);
  n->buffer = buffer_new(name, space, dtype, size, per_worker, layout);
  return n;
}

TsTileNode *
ts_tile_alloc_row(TsTileNode *parent, TsTileKernel *kernel, const char *name, const char *n,
                  const char *layout)
{
  TsTileNode *a = ts_tile_alloc(parent, kernel, name, TS_MEM_SHARED, TS_DTYPE_F32, n, TRUE,
                                layout);
  a->buffer->any_order = TRUE;
  return a;
}

static void
add_args(TsTileNode *n, const char *const *args, guint n_args)
{
  for (guint i = 0; i < n_args; i++)
    g_ptr_array_add(n->args, g_strdup(args[i]));
}

TsTileNode *
ts_tile_pack(TsTileNode *parent, int operand, gint64 panel, const char *src, const char *ld,
             const char *rows, const char *cols, const char *dst)
{
  TsTileNode *n = node_new(parent, TS_TILE_PACK);
  n->ints[0] = operand;
  n->ints[1] = panel;
  const char *args[] = {src, ld, rows, cols, dst};
  add_args(n, args, G_N_ELEMENTS(args));
  return n;
}

void
ts_tile_pack_set_reuse_key(TsTileNode *pack, const char *key)
{
  g_return_if_fail(pack->op == TS_TILE_PACK);
  g_free(pack->var);
  pack->var = g_strdup(key);
}

void
ts_tile_set_dot(TsTileNode *n, TsTileDot dot)
{
  g_return_if_fail(n->op == TS_TILE_PACK || n->op == TS_TILE_MMA);
  n->ints[5] = dot;
}

TsTileDot
ts_tile_get_dot(const TsTileNode *n)
{
  return n->op == TS_TILE_PACK || n->op == TS_TILE_MMA ? (TsTileDot)n->ints[5] : TS_TILE_DOT_FMA;
}

static const char *
dot_name(TsTileDot dot)
{
  return dot == TS_TILE_DOT_AMX ? "amx" : dot == TS_TILE_DOT_BF16 ? "bf16" : "fma";
}

TsTileNode *
ts_tile_mma(TsTileNode *parent, gint64 mr, gint64 nr, gint64 vector, gint64 unroll, const char *c,
            const char *ldc, const char *a, const char *b, const char *kc, const char *accumulate,
            const char *mr_valid, const char *nr_valid)
{
  TsTileNode *n = node_new(parent, TS_TILE_MMA);
  n->ints[0] = mr;
  n->ints[1] = nr;
  n->ints[2] = vector;
  n->ints[3] = unroll;
  const char *args[] = {c, ldc, a, b, kc, accumulate, mr_valid, nr_valid};
  add_args(n, args, G_N_ELEMENTS(args));
  return n;
}

void
ts_tile_mma_set_a_rows(TsTileNode *mma, gint64 lda)
{
  g_return_if_fail(mma->op == TS_TILE_MMA && lda > 0);
  mma->ints[4] = lda;
}

static void
node_add_views(TsTileNode *n)
{
  n->views = g_ptr_array_new_with_free_func((GDestroyNotify)view_free);
}

TsTileNode *
ts_tile_reduce(TsTileNode *parent, const char *var, const char *op, const char *expr,
               const char *n_cols)
{
  TsTileNode *n = node_new(parent, TS_TILE_REDUCE);
  node_add_views(n);
  n->var = g_strdup(var);
  n->step = g_strdup(op);
  n->expr = g_strdup(expr);
  n->hi = g_strdup(n_cols);
  return n;
}

TsTileNode *
ts_tile_softmax_online(TsTileNode *parent, const char *m, const char *l, const char *x,
                       const char *n_cols)
{
  TsTileNode *n = node_new(parent, TS_TILE_SOFTMAX_ONLINE);
  node_add_views(n);
  n->var = g_strdup(m);
  n->var2 = g_strdup(l);
  n->expr = g_strdup(x);
  n->hi = g_strdup(n_cols);
  return n;
}

TsTileNode *
ts_tile_map(TsTileNode *parent, const char *dst, const char *expr, const char *n_cols)
{
  TsTileNode *n = node_new(parent, TS_TILE_MAP);
  node_add_views(n);
  n->dst = g_strdup(dst);
  n->expr = g_strdup(expr);
  n->hi = g_strdup(n_cols);
  return n;
}

void
ts_tile_map_set_prefetch(TsTileNode *map, const char *where)
{
  g_return_if_fail(map->op == TS_TILE_MAP);
  g_clear_pointer(&map->prefetch, g_ptr_array_unref);
  ts_tile_map_add_prefetch(map, where);
}

void
ts_tile_map_add_prefetch(TsTileNode *map, const char *where)
{
  g_return_if_fail(map->op == TS_TILE_MAP);
  if (map->prefetch == NULL)
    map->prefetch = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(map->prefetch, g_strdup(where));
}

void
ts_tile_map_set_prefetch_l2(TsTileNode *map, const char *where)
{
  ts_tile_map_set_prefetch(map, where);
  map->prefetch_l2 = TRUE;
}

static void
carry_free(gpointer p)
{
  TsTileCarry *c = p;
  g_free(c->var);
  g_free(c->op);
  g_free(c->expr);
  g_free(c);
}

void
ts_tile_map_add_carry(TsTileNode *map, const char *var, const char *op, const char *expr)
{
  g_return_if_fail(map->op == TS_TILE_MAP);
  if (map->carries == NULL)
    map->carries = g_ptr_array_new_with_free_func(carry_free);
  TsTileCarry *c = g_new0(TsTileCarry, 1);
  c->var = g_strdup(var);
  c->op = g_strdup(op);
  c->expr = g_strdup(expr);
  g_ptr_array_add(map->carries, c);
}

void
ts_tile_map_set_drain(TsTileNode *map, const char *dst, const char *expr, gboolean stream)
{
  g_return_if_fail(map->op == TS_TILE_MAP);
  g_free(map->drain);
  g_free(map->drain_expr);
  map->drain = g_strdup(dst);
  map->drain_expr = g_strdup(expr);
  map->drain_stream = stream;
}

void
ts_tile_map_set_stream(TsTileNode *map)
{
  g_return_if_fail(map->op == TS_TILE_MAP);
  map->stream = TRUE;
}

void
ts_tile_map_set_sum(TsTileNode *map, const char *var)
{
  g_return_if_fail(map->op == TS_TILE_MAP);
  g_free(map->var);
  map->var = g_strdup(var);
}

TsTileNode *
ts_tile_convert(TsTileNode *parent, const char *src, const char *dst, const char *n_elems)
{
  return ts_tile_convert_scaled(parent, src, dst, n_elems, NULL);
}

TsTileNode *
ts_tile_convert_scaled(TsTileNode *parent, const char *src, const char *dst, const char *n_elems,
                       const char *scale)
{
  TsTileNode *n = node_new(parent, TS_TILE_CONVERT);
  const char *args[] = {src, dst, n_elems, scale};
  add_args(n, args, scale ? 4 : 3);
  return n;
}

TsTileNode *
ts_tile_grid(TsTileNode *parent, gint64 gx, gint64 gy, gint64 gz, gint64 threads,
             gint64 smem_bytes)
{
  TsTileNode *n = node_new(parent, TS_TILE_GRID);
  node_add_children(n);
  n->ints[0] = gx;
  n->ints[1] = gy;
  n->ints[2] = gz;
  n->ints[3] = threads;
  n->ints[4] = smem_bytes;
  n->ints[5] = 1;
  return n;
}

void
ts_tile_grid_set_cluster(TsTileNode *grid, gint64 ctas)
{
  g_return_if_fail(grid != NULL && grid->op == TS_TILE_GRID && ctas >= 1);
  g_return_if_fail(grid->ints[0] % ctas == 0);
  grid->ints[5] = ctas;
}

TsTileNode *
ts_tile_intrinsic(TsTileNode *parent, const char *name, const char *params, ...)
{
  TsTileNode *n = node_new(parent, TS_TILE_INTRINSIC);
  n->var = g_strdup(name);
  n->params = g_ptr_array_new_with_free_func(g_free);
  if (params != NULL && *params != '\0') {
    g_auto(GStrv) kv = g_strsplit(params, ",", -1);
    for (guint i = 0; kv[i]; i++)
      g_ptr_array_add(n->params, g_strstrip(g_strdup(kv[i])));
  }
  va_list ap;
  va_start(ap, params);
  for (const char *a = va_arg(ap, const char *); a; a = va_arg(ap, const char *))
    g_ptr_array_add(n->args, g_strdup(a));
  va_end(ap);
  return n;
}

static const TsTileNode *
find_grid(const TsTileNode *n)
{
  if (n->op == TS_TILE_GRID)
    return n;
  for (guint i = 0; n->children && i < n->children->len; i++) {
    const TsTileNode *g = find_grid(g_ptr_array_index(n->children, i));
    if (g)
      return g;
  }
  return NULL;
}

const TsTileNode *
ts_tile_kernel_grid(const TsTileKernel *kernel)
{
  return find_grid(kernel->body);
}

TsTileNode *
ts_tile_barrier(TsTileNode *parent)
{
  return node_new(parent, TS_TILE_BARRIER);
}

TsTileNode *
ts_tile_set(TsTileNode *parent, const char *buffer, const char *index, const char *expr)
{
  TsTileNode *n = node_new(parent, TS_TILE_SET);
  n->dst = g_strdup(buffer);
  n->lo = g_strdup(index);
  n->expr = g_strdup(expr);
  return n;
}

TsTileNode *
ts_tile_if(TsTileNode *parent, const char *cond)
{
  TsTileNode *n = node_new(parent, TS_TILE_IF);
  node_add_children(n);
  n->expr = g_strdup(cond);
  return n;
}

void
ts_tile_node_add_view(TsTileNode *node, const char *name, const char *buffer, const char *offset)
{
  g_return_if_fail(node->views != NULL);
  TsTileView *v = g_new0(TsTileView, 1);
  v->name = g_strdup(name);
  v->buffer = g_strdup(buffer);
  v->offset = g_strdup(offset);
  g_ptr_array_add(node->views, v);
}

/* ---- printer ---- */

static const char *
arg(const TsTileNode *n, guint i)
{
  return g_ptr_array_index(n->args, i);
}

static void
print_views(GString *out, const TsTileNode *n)
{
  if (n->views == NULL || n->views->len == 0)
    return;
  g_string_append(out, "  with ");
  for (guint i = 0; i < n->views->len; i++) {
    const TsTileView *v = g_ptr_array_index(n->views, i);
    g_string_append_printf(out, "%s%s = %s[%s:]", i ? ", " : "", v->name, v->buffer, v->offset);
  }
}

static void print_node(GString *out, const TsTileNode *n, int depth);

static void
print_children(GString *out, const TsTileNode *n, int depth)
{
  for (guint i = 0; i < n->children->len; i++)
    print_node(out, g_ptr_array_index(n->children, i), depth);
}

static void
print_node(GString *out, const TsTileNode *n, int depth)
{
  if (n->op == TS_TILE_BLOCK) {
    print_children(out, n, depth);
    return;
  }
  g_string_append_printf(out, "%*s", depth * 2, "");
  switch (n->op) {
  case TS_TILE_BLOCK:
    break;
  case TS_TILE_PARALLEL:
    g_string_append_printf(out, "tile.parallel threads=%" G_GINT64_FORMAT ":\n", n->ints[0]);
    print_children(out, n, depth + 1);
    return;
  case TS_TILE_FOR:
    g_string_append_printf(out, "for %s in tile.range(%s, %s, %s)%s:\n", n->var, n->lo, n->hi,
                           n->step,
                           n->for_kind == TS_FOR_PARALLEL           ? " parallel"
                           : n->for_kind == TS_FOR_PARALLEL_DYNAMIC ? " parallel(dynamic)"
                           : n->for_kind == TS_FOR_UNROLL           ? " unroll"
                                                                    : "");
    print_children(out, n, depth + 1);
    return;
  case TS_TILE_LET:
    g_string_append_printf(out, "let %s: %s = %s", n->var,
                           n->dtype == TS_DTYPE_INT32 ? "index" : ts_dtype_name(n->dtype), n->expr);
    break;
  case TS_TILE_ALLOC:
    g_string_append_printf(out, "%s = tile.alloc(%s %s[%s], %s%s)", n->buffer->name,
                           ts_mem_space_name(n->buffer->space), ts_dtype_name(n->buffer->dtype),
                           n->buffer->size, n->buffer->layout,
                           n->buffer->per_worker ? ", per-worker" : "");
    break;
  case TS_TILE_PACK:
    g_string_append_printf(out,
                           "tile.pack_%s(%s, ld=%s, rows=%s, cols=%s) -> %s  panel(%s=%" G_GINT64_FORMAT ")",
                           n->ints[0] == 0 ? "a" : n->ints[0] == 1 ? "b" : "bt", arg(n, 0),
                           arg(n, 1), arg(n, 2), arg(n, 3), arg(n, 4),
                           n->ints[0] == 0 ? "MR" : "NR", n->ints[1]);
    if (n->var)
      g_string_append_printf(out, " reuse_key=(%s)", n->var);
    if (ts_tile_get_dot(n) != TS_TILE_DOT_FMA)
      g_string_append_printf(out, " dot=%s", dot_name(ts_tile_get_dot(n)));
    break;
  case TS_TILE_MMA:
    g_string_append_printf(out,
                           "tile.mma(%s, ldc=%s) %s= %s . %s  k=%s valid=%sx%s micro=%" G_GINT64_FORMAT
                           "x%" G_GINT64_FORMAT " vector=%" G_GINT64_FORMAT " unroll=%" G_GINT64_FORMAT,
                           arg(n, 0), arg(n, 1), g_strcmp0(arg(n, 5), "0") == 0 ? "" : "(+)",
                           arg(n, 2), arg(n, 3), arg(n, 4), arg(n, 6), arg(n, 7), n->ints[0],
                           n->ints[1], n->ints[2], n->ints[3]);
    if (g_strcmp0(arg(n, 5), "0") != 0 && g_strcmp0(arg(n, 5), "1") != 0)
      g_string_append_printf(out, " accumulate_if=(%s)", arg(n, 5));
    if (n->ints[4] > 0)
      g_string_append_printf(out, " a_rows(ld=%" G_GINT64_FORMAT ")", n->ints[4]);
    if (ts_tile_get_dot(n) != TS_TILE_DOT_FMA)
      g_string_append_printf(out, " dot=%s", dot_name(ts_tile_get_dot(n)));
    break;
  case TS_TILE_REDUCE:
    g_string_append_printf(out, "%s = tile.reduce_%s(%s, j < %s)", n->var, n->step, n->expr, n->hi);
    print_views(out, n);
    break;
  case TS_TILE_SOFTMAX_ONLINE:
    g_string_append_printf(out, "(%s, %s) = tile.softmax_online(%s, j < %s)", n->var, n->var2,
                           n->expr, n->hi);
    print_views(out, n);
    break;
  case TS_TILE_MAP:
    g_string_append_printf(out, "%s = tile.map(%s, j < %s)", n->dst, n->expr, n->hi);
    if (n->var)
      g_string_append_printf(out, " sum->%s", n->var);
    for (guint c = 0; n->carries && c < n->carries->len; c++) {
      const TsTileCarry *cr = g_ptr_array_index(n->carries, c);
      g_string_append_printf(out, " carry %s = reduce_%s(%s)", cr->var, cr->op, cr->expr);
    }
    if (n->drain)
      g_string_append_printf(out, " and %s = %s%s", n->drain, n->drain_expr,
                             n->drain_stream ? " (stream)" : "");
    print_views(out, n);
    for (guint p = 0; n->prefetch && p < n->prefetch->len; p++)
      g_string_append_printf(out, " prefetch%s=(%s)", n->prefetch_l2 ? "_l2" : "",
                             (const char *)g_ptr_array_index(n->prefetch, p));
    if (n->stream)
      g_string_append(out, " stream");
    break;
  case TS_TILE_CONVERT:
    g_string_append_printf(out, "tile.convert(%s -> %s, n=%s", arg(n, 0), arg(n, 1), arg(n, 2));
    if (n->args->len > 3)
      g_string_append_printf(out, ", scale=%s", arg(n, 3));
    g_string_append(out, ")");
    break;
  case TS_TILE_BARRIER:
    g_string_append(out, "tile.barrier()");
    break;
  case TS_TILE_SET:
    g_string_append_printf(out, "%s[%s] = %s", n->dst, n->lo, n->expr);
    break;
  case TS_TILE_IF:
    g_string_append_printf(out, "if %s:\n", n->expr);
    print_children(out, n, depth + 1);
    return;
  case TS_TILE_GRID:
    g_string_append_printf(out,
                           "tile.grid(%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                           ") threads=%" G_GINT64_FORMAT " smem=%" G_GINT64_FORMAT,
                           n->ints[0], n->ints[1], n->ints[2], n->ints[3], n->ints[4]);
    if (n->ints[5] > 1)
      g_string_append_printf(out, " cluster=%" G_GINT64_FORMAT, n->ints[5]);
    g_string_append(out, ":  # one CTA at (bx, by, bz)\n");
    print_children(out, n, depth + 1);
    return;
  case TS_TILE_INTRINSIC:
    g_string_append_printf(out, "tile.%s", n->var);
    if (n->params->len) {
      g_string_append_c(out, '<');
      for (guint i = 0; i < n->params->len; i++)
        g_string_append_printf(out, "%s%s", i ? ", " : "", (char *)g_ptr_array_index(n->params, i));
      g_string_append_c(out, '>');
    }
    g_string_append_c(out, '(');
    for (guint i = 0; i < n->args->len; i++)
      g_string_append_printf(out, "%s%s", i ? ", " : "", arg(n, i));
    g_string_append_c(out, ')');
    break;
  }
  g_string_append_c(out, '\n');
}

char *
ts_tile_kernel_to_string(const TsTileKernel *kernel)
{
  GString *out = g_string_new(NULL);
  g_autofree char *dt = ts_dtype_policy_to_string(&kernel->dtype);
  g_string_append_printf(out, "tile.kernel %s  # op %s, %s\n", kernel->name, kernel->op, dt);
  for (guint i = 0; i < kernel->defines->len; i++)
    g_string_append_printf(out, "  const %s\n", (char *)g_ptr_array_index(kernel->defines, i));
  for (guint i = 0; i < kernel->launch_names->len; i++)
    g_string_append_printf(out, "  launch const %s=%" G_GINT64_FORMAT "\n",
                           (char *)g_ptr_array_index(kernel->launch_names, i),
                           g_array_index(kernel->launch_values, gint64, i));
  for (guint i = 0; i < kernel->params->len; i++) {
    const TsTileBuffer *b = g_ptr_array_index(kernel->params, i);
    g_string_append_printf(out, "  param %s: global %s[%s]\n", b->name, ts_dtype_name(b->dtype),
                           b->size);
  }
  for (guint i = 0; i < kernel->int_params->len; i++)
    g_string_append_printf(out, "  param %s: index\n", (char *)g_ptr_array_index(kernel->int_params, i));
  for (guint i = 0; i < kernel->float_params->len; i++)
    g_string_append_printf(out, "  param %s: f32\n", (char *)g_ptr_array_index(kernel->float_params, i));
  for (guint i = 0; i < kernel->tensor_maps->len; i++) {
    const TsTileTensorMap *m = g_ptr_array_index(kernel->tensor_maps, i);
    g_string_append_printf(out,
                           "  tensor_map %s: %s[%s, %s] box %" G_GINT64_FORMAT "x%" G_GINT64_FORMAT
                           ", swizzle %" G_GINT64_FORMAT "B\n",
                           m->name, m->buffer, m->outer, m->inner, m->box_outer, m->box_inner,
                           m->swizzle);
  }
  g_string_append(out, "body:\n");
  print_node(out, kernel->body, 1);
  return g_string_free(out, FALSE);
}
