/* ts-ir.c — Graph IR data: the dtype catalog, dtype policies, tensor types, shape bindings,
 * single-op graphs with their printer, and shape inference by unification. The text parsers live
 * in ts-ir-parse.c.
 */
#include "ts-ir.h"
#include "ts-ir-private.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK(ts - ir - error - quark, ts_ir_error)

/* One table for every dtype fact, so adding a dtype is one line (Redis-style catalog). */
static const struct {
  TsDtype dtype;
  const char *name;
  const char *alias; /* the seeds' spelling, accepted when parsing */
  guint bits;
  gboolean is_float;
} dtype_table[] = {
    {TS_DTYPE_F64, "f64", "fp64", 64, TRUE},
    {TS_DTYPE_F32, "f32", "fp32", 32, TRUE},
    /* tf32 is stored in 32 bits; only the multiplier sees 19 of them. */
    {TS_DTYPE_TF32, "tf32", NULL, 32, TRUE},
    {TS_DTYPE_BF16, "bf16", NULL, 16, TRUE},
    {TS_DTYPE_F16, "f16", "fp16", 16, TRUE},
    {TS_DTYPE_FP8_E4M3, "fp8_e4m3", NULL, 8, TRUE},
    {TS_DTYPE_FP8_E5M2, "fp8_e5m2", NULL, 8, TRUE},
    {TS_DTYPE_INT32, "int32", NULL, 32, FALSE},
    {TS_DTYPE_INT8, "int8", NULL, 8, FALSE},
    {TS_DTYPE_INT4, "int4", NULL, 4, FALSE},
};

static gint
dtype_index(TsDtype dtype)
{
  for (guint i = 0; i < G_N_ELEMENTS(dtype_table); i++)
    if (dtype_table[i].dtype == dtype)
      return (gint)i;
  return -1;
}

const char *
ts_dtype_name(TsDtype dtype)
{
  gint i = dtype_index(dtype);
  return i < 0 ? "invalid" : dtype_table[i].name;
}

TsDtype
ts_dtype_from_name(const char *name)
{
  if (name == NULL)
    return TS_DTYPE_INVALID;
  for (guint i = 0; i < G_N_ELEMENTS(dtype_table); i++)
    if (g_str_equal(name, dtype_table[i].name) ||
        (dtype_table[i].alias != NULL && g_str_equal(name, dtype_table[i].alias)))
      return dtype_table[i].dtype;
  return TS_DTYPE_INVALID;
}

guint
ts_dtype_bits(TsDtype dtype)
{
  gint i = dtype_index(dtype);
  return i < 0 ? 0 : dtype_table[i].bits;
}

gboolean
ts_dtype_is_float(TsDtype dtype)
{
  gint i = dtype_index(dtype);
  return i >= 0 && dtype_table[i].is_float;
}

gboolean
ts_dtype_is_fp8(TsDtype dtype)
{
  return dtype == TS_DTYPE_FP8_E4M3 || dtype == TS_DTYPE_FP8_E5M2;
}

const char *
ts__ir_known_dtypes(void)
{
  static gsize once = 0;
  static char *list = NULL;
  if (g_once_init_enter(&once)) {
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < G_N_ELEMENTS(dtype_table); i++)
      g_string_append_printf(s, "%s%s", i ? ", " : "", dtype_table[i].name);
    list = g_string_free(s, FALSE);
    g_once_init_leave(&once, 1);
  }
  return list;
}

gboolean
ts__ir_parse_size(const char *digits, gsize len, gint64 *out)
{
  if (digits == NULL || len == 0)
    return FALSE;
  gint64 v = 0;
  for (gsize i = 0; i < len; i++) {
    if (!g_ascii_isdigit(digits[i]))
      return FALSE;
    int d = digits[i] - '0';
    if (v > (G_MAXINT64 - d) / 10)
      return FALSE;
    v = v * 10 + d;
  }
  if (v <= 0)
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean
is_identifier(const char *s, gsize len)
{
  if (len == 0 || !(g_ascii_isalpha(s[0]) || s[0] == '_'))
    return FALSE;
  for (gsize i = 1; i < len; i++)
    if (!(g_ascii_isalnum(s[i]) || s[i] == '_'))
      return FALSE;
  return TRUE;
}

char *
ts__ir_dim_canonical(const char *name)
{
  if (name == NULL)
    return NULL;
  g_auto(GStrv) factors = g_strsplit(name, "*", -1);
  if (factors[0] == NULL) /* "" splits into no factors at all */
    return NULL;
  GString *out = g_string_new(NULL);
  for (guint i = 0; factors[i] != NULL; i++) {
    char *f = g_strstrip(factors[i]);
    gint64 unused;
    if (!is_identifier(f, strlen(f)) && !ts__ir_parse_size(f, strlen(f), &unused)) {
      g_string_free(out, TRUE);
      return NULL;
    }
    g_string_append_printf(out, "%s%s", i ? "*" : "", f);
  }
  return g_string_free(out, FALSE);
}

/* ---- dtype policies ---- */

/* Shortest %.Ng that reads back exactly, always with a '.' so it reads as a float (128.0). */
static void
append_double(GString *s, double v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int prec = 15; prec <= 17; prec++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
    g_ascii_formatd(buf, sizeof buf, fmt, v);
    if (g_ascii_strtod(buf, NULL) == v)
      break;
  }
  if (strchr(buf, '.') != NULL || strchr(buf, 'n') != NULL) {
    g_string_append(s, buf);
    return;
  }
  char *e = strchr(buf, 'e');
  if (e == NULL) {
    g_string_append_printf(s, "%s.0", buf);
  } else {
    g_string_append_len(s, buf, e - buf);
    g_string_append_printf(s, ".0%s", e);
  }
}

static void
append_policy(GString *s, const TsDtypePolicy *p)
{
  g_string_append(s, ts_dtype_name(p->storage));
  if (p->accum != TS_DTYPE_INVALID)
    g_string_append_printf(s, " @accum(%s)", ts_dtype_name(p->accum));
  if (p->loss_scale != 0.0) {
    g_string_append(s, " @loss_scale(");
    append_double(s, p->loss_scale);
    g_string_append_c(s, ')');
  }
  if (p->stochastic_round)
    g_string_append(s, " @stochastic_round");
  if (p->saturate)
    g_string_append(s, " @saturate");
}

char *
ts_dtype_policy_to_string(const TsDtypePolicy *policy)
{
  g_return_val_if_fail(policy != NULL, NULL);
  GString *s = g_string_new(NULL);
  append_policy(s, policy);
  return g_string_free(s, FALSE);
}

TsDtype
ts_dtype_policy_compute(const TsDtypePolicy *policy)
{
  g_return_val_if_fail(policy != NULL, TS_DTYPE_INVALID);
  return policy->accum != TS_DTYPE_INVALID ? policy->accum : policy->storage;
}

gboolean
ts_dtype_policy_equal(const TsDtypePolicy *a, const TsDtypePolicy *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  return a->storage == b->storage && a->accum == b->accum && a->loss_scale == b->loss_scale &&
         !a->stochastic_round == !b->stochastic_round && !a->saturate == !b->saturate;
}

/* ---- tensor types ---- */

TsTensorType *
ts_tensor_type_new(guint rank, const char *const *names, const TsDtypePolicy *dtype)
{
  g_return_val_if_fail(rank <= TS_MAX_RANK, NULL);
  g_return_val_if_fail(rank == 0 || names != NULL, NULL);
  g_return_val_if_fail(dtype != NULL, NULL);

  g_autoptr(TsTensorType) t = g_new0(TsTensorType, 1);
  t->dtype = *dtype;
  for (guint i = 0; i < rank; i++) {
    g_return_val_if_fail(names[i] != NULL, NULL);
    gint64 size;
    t->rank = i + 1; /* so the autoptr frees what is filled so far */
    if (ts__ir_parse_size(names[i], strlen(names[i]), &size)) {
      t->dims[i].name = NULL;
      t->dims[i].size = size;
      continue;
    }
    t->dims[i].name = ts__ir_dim_canonical(names[i]);
    t->dims[i].size = -1;
    g_return_val_if_fail(t->dims[i].name != NULL, NULL);
  }
  t->rank = rank;
  return g_steal_pointer(&t);
}

TsTensorType *
ts_tensor_type_copy(const TsTensorType *type)
{
  if (type == NULL)
    return NULL;
  TsTensorType *t = g_new0(TsTensorType, 1);
  *t = *type;
  for (guint i = 0; i < t->rank; i++)
    t->dims[i].name = g_strdup(type->dims[i].name);
  return t;
}

void
ts_tensor_type_free(TsTensorType *type)
{
  if (type == NULL)
    return;
  for (guint i = 0; i < type->rank && i < TS_MAX_RANK; i++)
    g_free(type->dims[i].name);
  g_free(type);
}

gboolean
ts_tensor_type_equal(const TsTensorType *a, const TsTensorType *b)
{
  if (a == NULL || b == NULL)
    return a == b;
  if (a->rank != b->rank || !ts_dtype_policy_equal(&a->dtype, &b->dtype))
    return FALSE;
  for (guint i = 0; i < a->rank; i++) {
    if (g_strcmp0(a->dims[i].name, b->dims[i].name) != 0)
      return FALSE;
    if (a->dims[i].name == NULL && a->dims[i].size != b->dims[i].size)
      return FALSE;
  }
  return TRUE;
}

static void
append_dims(GString *s, const TsTensorType *t)
{
  for (guint i = 0; i < t->rank; i++) {
    if (i > 0)
      g_string_append_c(s, ',');
    if (t->dims[i].name != NULL)
      g_string_append_printf(s, "\"%s\"", t->dims[i].name);
    else
      g_string_append_printf(s, "%" G_GINT64_FORMAT, t->dims[i].size);
  }
}

char *
ts_tensor_type_to_string(const TsTensorType *type)
{
  g_return_val_if_fail(type != NULL, NULL);
  GString *s = g_string_new("Tensor[");
  append_dims(s, type);
  g_string_append(s, type->rank > 0 ? ", " : "");
  append_policy(s, &type->dtype);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* ---- shapes ---- */

typedef struct {
  char *name;
  gint64 size;
  char *context; /* who bound it, for "bound to 512 by 'A'" messages; may be NULL */
} Binding;

struct _TsShape {
  GArray *bindings; /* of Binding, insertion order; shapes hold a handful of dims */
};

static void
binding_clear(gpointer p)
{
  Binding *b = p;
  g_free(b->name);
  g_free(b->context);
}

TsShape *
ts_shape_new(void)
{
  TsShape *s = g_new0(TsShape, 1);
  s->bindings = g_array_new(FALSE, TRUE, sizeof(Binding));
  g_array_set_clear_func(s->bindings, binding_clear);
  return s;
}

TsShape *
ts_shape_copy(const TsShape *shape)
{
  if (shape == NULL)
    return NULL;
  TsShape *s = ts_shape_new();
  for (guint i = 0; i < shape->bindings->len; i++) {
    const Binding *b = &g_array_index(shape->bindings, Binding, i);
    Binding c = {g_strdup(b->name), b->size, g_strdup(b->context)};
    g_array_append_val(s->bindings, c);
  }
  return s;
}

void
ts_shape_free(TsShape *shape)
{
  if (shape == NULL)
    return;
  g_array_unref(shape->bindings);
  g_free(shape);
}

static const Binding *
shape_find(const TsShape *shape, const char *name)
{
  for (guint i = 0; shape != NULL && name != NULL && i < shape->bindings->len; i++) {
    const Binding *b = &g_array_index(shape->bindings, Binding, i);
    if (g_str_equal(b->name, name))
      return b;
  }
  return NULL;
}

gboolean
ts_shape_bind(TsShape *shape, const char *name, gint64 size, const char *context, GError **error)
{
  g_return_val_if_fail(shape != NULL, FALSE);
  g_return_val_if_fail(name != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

  if (size <= 0) {
    g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                "dim '%s' bound to %" G_GINT64_FORMAT "%s%s%s; sizes must be > 0", name, size,
                context ? " by '" : "", context ? context : "", context ? "'" : "");
    return FALSE;
  }
  const Binding *old = shape_find(shape, name);
  if (old != NULL) {
    if (old->size == size)
      return TRUE;
    GString *msg = g_string_new(NULL);
    g_string_append_printf(msg, "dim '%s' is bound to %" G_GINT64_FORMAT, name, old->size);
    if (old->context != NULL)
      g_string_append_printf(msg, " by '%s'", old->context);
    g_string_append_printf(msg, " but %" G_GINT64_FORMAT, size);
    if (context != NULL)
      g_string_append_printf(msg, " by '%s'", context);
    g_set_error_literal(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE, msg->str);
    g_string_free(msg, TRUE);
    return FALSE;
  }
  Binding b = {g_strdup(name), size, g_strdup(context)};
  g_array_append_val(shape->bindings, b);
  return TRUE;
}

gboolean
ts_shape_lookup(const TsShape *shape, const char *name, gint64 *size)
{
  const Binding *b = shape_find(shape, name);
  if (b != NULL && size != NULL)
    *size = b->size;
  return b != NULL;
}

gint64
ts_shape_get(const TsShape *shape, const char *name)
{
  const Binding *b = shape_find(shape, name);
  return b != NULL ? b->size : -1;
}

guint
ts_shape_n_dims(const TsShape *shape)
{
  return shape != NULL ? shape->bindings->len : 0;
}

const char *
ts_shape_dim_name(const TsShape *shape, guint i)
{
  g_return_val_if_fail(shape != NULL && i < shape->bindings->len, NULL);
  return g_array_index(shape->bindings, Binding, i).name;
}

gint64
ts_shape_dim_size(const TsShape *shape, guint i)
{
  g_return_val_if_fail(shape != NULL && i < shape->bindings->len, -1);
  return g_array_index(shape->bindings, Binding, i).size;
}

static void
append_shape(GString *s, const TsShape *shape, const char *sep)
{
  for (guint i = 0; i < ts_shape_n_dims(shape); i++) {
    const Binding *b = &g_array_index(shape->bindings, Binding, i);
    g_string_append_printf(s, "%s%s=%" G_GINT64_FORMAT, i ? sep : "", b->name, b->size);
  }
}

char *
ts_shape_to_string(const TsShape *shape)
{
  g_return_val_if_fail(shape != NULL, NULL);
  GString *s = g_string_new(NULL);
  append_shape(s, shape, ",");
  return g_string_free(s, FALSE);
}

/* Product of the factors of "B*H" under shape; -1 when a factor is unbound or on int64 overflow.
 * *unbound (may be NULL) receives the first unbound factor. */
static gint64
resolve_name(const char *name, const TsShape *shape, char **unbound)
{
  g_auto(GStrv) factors = g_strsplit(name, "*", -1);
  gint64 product = 1;
  for (guint i = 0; factors[i] != NULL; i++) {
    gint64 f;
    if (!ts__ir_parse_size(factors[i], strlen(factors[i]), &f) &&
        !ts_shape_lookup(shape, factors[i], &f)) {
      if (unbound != NULL)
        *unbound = g_strdup(factors[i]);
      return -1;
    }
    if (product > G_MAXINT64 / f)
      return -1;
    product *= f;
  }
  return product;
}

gint64
ts_dim_resolve(const TsDim *dim, const TsShape *shape)
{
  g_return_val_if_fail(dim != NULL, -1);
  if (dim->name == NULL)
    return dim->size;
  gint64 v = resolve_name(dim->name, shape, NULL);
  return v >= 0 ? v : dim->size;
}

/* ---- graphs ---- */

typedef struct {
  char *op;
  GPtrArray *inputs; /* of char* */
  TsGraphValue output;
  char *attrs;
} Node;

struct _TsGraph {
  char *name;
  GArray *inputs;   /* of TsGraphValue */
  GPtrArray *nodes; /* of Node* */
};

static void
value_clear(gpointer p)
{
  TsGraphValue *v = p;
  g_free(v->name);
  ts_tensor_type_free(v->type);
}

static void
node_free(gpointer p)
{
  Node *n = p;
  g_free(n->op);
  g_ptr_array_unref(n->inputs);
  value_clear(&n->output);
  g_free(n->attrs);
  g_free(n);
}

TsGraph *
ts_graph_new(const char *name)
{
  TsGraph *g = g_new0(TsGraph, 1);
  g->name = g_strdup(name != NULL ? name : "main");
  g->inputs = g_array_new(FALSE, TRUE, sizeof(TsGraphValue));
  g_array_set_clear_func(g->inputs, value_clear);
  g->nodes = g_ptr_array_new_with_free_func(node_free);
  return g;
}

void
ts_graph_free(TsGraph *graph)
{
  if (graph == NULL)
    return;
  g_free(graph->name);
  g_array_unref(graph->inputs);
  g_ptr_array_unref(graph->nodes);
  g_free(graph);
}

void
ts_graph_add_input(TsGraph *graph, const char *name, const TsTensorType *type)
{
  g_return_if_fail(graph != NULL && name != NULL && type != NULL);
  TsGraphValue v = {g_strdup(name), ts_tensor_type_copy(type)};
  g_array_append_val(graph->inputs, v);
}

void
ts_graph_add_node(TsGraph *graph, const char *op, const char *const *inputs, guint n_inputs,
                  const char *output, const TsTensorType *output_type, const char *attrs)
{
  g_return_if_fail(graph != NULL && op != NULL && output != NULL && output_type != NULL);
  g_return_if_fail(n_inputs == 0 || inputs != NULL);
  Node *n = g_new0(Node, 1);
  n->op = g_strdup(op);
  n->inputs = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n_inputs; i++)
    g_ptr_array_add(n->inputs, g_strdup(inputs[i]));
  n->output.name = g_strdup(output);
  n->output.type = ts_tensor_type_copy(output_type);
  n->attrs = g_strdup(attrs);
  g_ptr_array_add(graph->nodes, n);
}

static gboolean
validate_value(const TsGraphValue *v, const TsShape *shape, GError **error)
{
  for (guint i = 0; i < v->type->rank; i++) {
    const TsDim *d = &v->type->dims[i];
    if (d->name == NULL)
      continue;
    g_autofree char *unbound = NULL;
    gint64 size = resolve_name(d->name, shape, &unbound);
    if (unbound != NULL) {
      g_autofree char *bound = shape != NULL ? ts_shape_to_string(shape) : g_strdup("");
      g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                  "dim '%s' of %%%s is not bound by the shape (%s%s)", unbound, v->name,
                  *bound ? "bound: " : "nothing bound", bound);
      return FALSE;
    }
    if (size < 0) {
      g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                  "dim '%s' of %%%s overflows int64 under the shape", d->name, v->name);
      return FALSE;
    }
    if (d->size >= 0 && d->size != size) {
      g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                  "dim '%s' of %%%s is %" G_GINT64_FORMAT
                  " in its type but the shape makes it %" G_GINT64_FORMAT,
                  d->name, v->name, d->size, size);
      return FALSE;
    }
  }
  return TRUE;
}

gboolean
ts_graph_validate(const TsGraph *graph, const TsShape *shape, GError **error)
{
  g_return_val_if_fail(graph != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);

  g_autoptr(GHashTable) defined = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < graph->inputs->len; i++) {
    const TsGraphValue *v = &g_array_index(graph->inputs, TsGraphValue, i);
    if (!validate_value(v, shape, error))
      return FALSE;
    g_hash_table_add(defined, v->name);
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    const Node *n = g_ptr_array_index(graph->nodes, i);
    for (guint j = 0; j < n->inputs->len; j++) {
      const char *in = g_ptr_array_index(n->inputs, j);
      if (!g_hash_table_contains(defined, in)) {
        g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_PARSE,
                    "%s uses %%%s before it is defined (argument %u of %%%s)", n->op, in, j + 1,
                    n->output.name);
        return FALSE;
      }
    }
    if (!validate_value(&n->output, shape, error))
      return FALSE;
    g_hash_table_add(defined, n->output.name);
  }
  return TRUE;
}

char *
ts_graph_to_string(const TsGraph *graph, const TsShape *shape)
{
  g_return_val_if_fail(graph != NULL, NULL);
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "graph %s(", graph->name);
  append_shape(s, shape, ", ");
  g_string_append(s, ") {\n");
  for (guint i = 0; i < graph->inputs->len; i++) {
    const TsGraphValue *v = &g_array_index(graph->inputs, TsGraphValue, i);
    g_autofree char *t = ts_tensor_type_to_string(v->type);
    g_string_append_printf(s, "  %%%s : %s\n", v->name, t);
  }
  for (guint i = 0; i < graph->nodes->len; i++) {
    const Node *n = g_ptr_array_index(graph->nodes, i);
    g_autofree char *t = ts_tensor_type_to_string(n->output.type);
    g_string_append_printf(s, "  %%%s = %s(", n->output.name, n->op);
    for (guint j = 0; j < n->inputs->len; j++)
      g_string_append_printf(s, "%s%%%s", j ? ", " : "", (char *)g_ptr_array_index(n->inputs, j));
    g_string_append_c(s, ')');
    if (n->attrs != NULL && *n->attrs)
      g_string_append_printf(s, " {%s}", n->attrs);
    g_string_append_printf(s, " : %s\n", t);
  }
  g_string_append(s, "}\n");
  return g_string_free(s, FALSE);
}

/* ---- shape inference ---- */

static char *
signature_text(const TsTensorType *t)
{
  GString *s = g_string_new("Tensor[");
  append_dims(s, t);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* "B*H" against a known size: checks it when every factor is bound, solves the single unbound
 * factor when it divides evenly, and otherwise leaves the factors for a later argument. */
static gboolean
unify_product(const char *tmpl, gint64 size, TsShape *shape, const char *arg, GError **error)
{
  g_auto(GStrv) factors = g_strsplit(tmpl, "*", -1);
  gint64 known = 1;
  const char *unbound = NULL;
  guint n_unbound = 0;
  for (guint i = 0; factors[i] != NULL; i++) {
    gint64 f;
    if (ts__ir_parse_size(factors[i], strlen(factors[i]), &f) ||
        ts_shape_lookup(shape, factors[i], &f)) {
      if (known > G_MAXINT64 / f)
        known = G_MAXINT64; /* cannot match any real size; reported below */
      else
        known *= f;
    } else {
      unbound = factors[i];
      n_unbound++;
    }
  }
  if (n_unbound == 1 && size % known == 0)
    return ts_shape_bind(shape, unbound, size / known, arg, error);
  if (n_unbound == 0 && known != size) {
    g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                "dim '%s' is %" G_GINT64_FORMAT " under the bindings but %" G_GINT64_FORMAT
                " in '%s'",
                tmpl, known, size, arg);
    return FALSE;
  }
  if (n_unbound == 1) {
    g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                "dim '%s' is %" G_GINT64_FORMAT " in '%s', not a multiple of %" G_GINT64_FORMAT,
                tmpl, size, arg, known);
    return FALSE;
  }
  return TRUE;
}

TsTensorType *
ts_ir_infer_op(const char *op, const TsTensorType *const *sig_inputs,
               const TsTensorType *const *inputs, const char *const *arg_names, guint n_inputs,
               const TsTensorType *sig_output, TsShape *shape, GError **error)
{
  g_return_val_if_fail(n_inputs == 0 || (sig_inputs != NULL && inputs != NULL), NULL);
  g_return_val_if_fail(sig_output != NULL && shape != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);

  /* Template dim -> the actual's symbolic name, when the actual size is not known yet. */
  g_autoptr(GHashTable) symbols = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autofree char *of_op = op != NULL ? g_strdup_printf(" of %s", op) : g_strdup("");

  for (guint i = 0; i < n_inputs; i++) {
    const TsTensorType *sig = sig_inputs[i], *in = inputs[i];
    g_autofree char *fallback = g_strdup_printf("#%u", i + 1);
    const char *arg = arg_names != NULL && arg_names[i] != NULL ? arg_names[i] : fallback;
    g_return_val_if_fail(sig != NULL && in != NULL, NULL);

    if (in->rank != sig->rank) {
      g_autofree char *want = signature_text(sig);
      g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_RANK,
                  "rank mismatch: argument '%s'%s has rank %u, expected %u (%s)", arg, of_op,
                  in->rank, sig->rank, want);
      return NULL;
    }
    if (in->dtype.storage != inputs[0]->dtype.storage) {
      const char *first = arg_names != NULL && arg_names[0] != NULL ? arg_names[0] : "#1";
      g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_DTYPE,
                  "argument '%s'%s is %s but '%s' is %s; inputs must share a storage dtype", arg,
                  of_op, ts_dtype_name(in->dtype.storage), first,
                  ts_dtype_name(inputs[0]->dtype.storage));
      return NULL;
    }
    for (guint d = 0; d < sig->rank; d++) {
      const TsDim *t = &sig->dims[d], *a = &in->dims[d];
      gint64 size = ts_dim_resolve(a, shape);
      if (t->name == NULL) {
        if (size >= 0 && size != t->size) {
          g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                      "argument '%s'%s: dim %u is %" G_GINT64_FORMAT ", expected %" G_GINT64_FORMAT,
                      arg, of_op, d, size, t->size);
          return NULL;
        }
        continue;
      }
      if (size >= 0) {
        gboolean ok = strchr(t->name, '*') != NULL
                          ? unify_product(t->name, size, shape, arg, error)
                          : ts_shape_bind(shape, t->name, size, arg, error);
        if (!ok)
          return NULL;
        continue;
      }
      /* Both symbolic and unknown: remember that the template dim is the actual's name. */
      const char *prev = g_hash_table_lookup(symbols, t->name);
      if (prev != NULL && !g_str_equal(prev, a->name)) {
        g_set_error(error, TS_IR_ERROR, TS_IR_ERROR_SHAPE,
                    "dim '%s'%s is '%s' in an earlier argument but '%s' in '%s'", t->name, of_op,
                    prev, a->name, arg);
        return NULL;
      }
      g_hash_table_insert(symbols, g_strdup(t->name), g_strdup(a->name));
    }
  }

  TsTensorType *out = ts_tensor_type_copy(sig_output);
  if (n_inputs > 0)
    out->dtype = inputs[0]->dtype;
  for (guint d = 0; d < out->rank; d++) {
    TsDim *dim = &out->dims[d];
    if (dim->name == NULL)
      continue;
    dim->size = resolve_name(dim->name, shape, NULL);
    const char *alias = g_hash_table_lookup(symbols, dim->name);
    if (dim->size < 0 && alias != NULL) {
      g_free(dim->name);
      dim->name = g_strdup(alias);
    }
  }
  return out;
}

TsTensorType *
ts_ir_infer(const TsTensorType *const *sig_inputs, const TsTensorType *const *inputs,
            const char *const *arg_names, guint n_inputs, const TsTensorType *sig_output,
            TsShape *shape, GError **error)
{
  return ts_ir_infer_op(NULL, sig_inputs, inputs, arg_names, n_inputs, sig_output, shape, error);
}
