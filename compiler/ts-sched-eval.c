/* ts-sched-eval.c — constraints compiled against one environment into flat node arrays over
 * knob slots, grouped by the depth at which their last knob is bound, so enumeration can
 * prune a subtree the moment a constraint becomes decidable. Names are resolved once here,
 * not per point. */
#include "ts-sched-private.h"

enum {
  C_CONST,
  C_SLOT,
  C_NEG,
  C_NOT,
  C_AND,
  C_OR,
  C_MIN,
  C_MAX,
  C_BIN, /* C_BIN + TsExOp */
};

typedef struct {
  gint32 op, a, b;
  gint64 v; /* constant, or slot index */
} CNode;

typedef struct {
  GArray *nodes; /* CNode; root is the last one */
  char *text;    /* the constraint as printed, for error messages */
} Prog;

static void
prog_free(gpointer data)
{
  Prog *p = data;
  g_array_unref(p->nodes);
  g_free(p->text);
  g_free(p);
}

typedef struct {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  Prog *prog;
  int depth;
} Compiler;

static int
emit(Compiler *c, gint32 op, gint32 a, gint32 b, gint64 v)
{
  CNode n = {op, a, b, v};
  g_array_append_val(c->prog->nodes, n);
  return (int)c->prog->nodes->len - 1;
}

static gboolean
type_error(Compiler *c, GError **error, const char *what)
{
  g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_TYPE, "schedule: %s in constraint '%s'", what,
              c->prog->text);
  return FALSE;
}

/* Appends e's nodes; *out is its node index, *kind its type. */
static gboolean
compile(Compiler *c, const TsExpr *e, int *out, TsSchedKind *kind, GError **error)
{
  int a = -1, b = -1;
  TsSchedKind ka = TS_SCHED_INT, kb = TS_SCHED_INT;
  *kind = TS_SCHED_INT;
  switch (e->kind) {
  case TS_EX_INT:
    *out = emit(c, C_CONST, -1, -1, e->i);
    return TRUE;
  case TS_EX_STR:
    *kind = TS_SCHED_STR;
    /* Interned strings compare by pointer, like the knob slots. */
    *out = emit(c, C_CONST, -1, -1, (gint64)(gintptr)e->s);
    return TRUE;
  case TS_EX_NAME: {
    int k = ts_sched_space_knob_index(c->space, e->s);
    gint64 v;
    if (k >= 0) {
      *kind = ((const TsKnob *)g_ptr_array_index(c->space->knobs, k))->kind;
      c->depth = MAX(c->depth, k);
      *out = emit(c, C_SLOT, -1, -1, k);
    } else if (ts_sched_env_get(c->env, e->s, &v)) {
      *out = emit(c, C_CONST, -1, -1, v);
    } else {
      g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL,
                  "schedule: unknown name '%s' in constraint '%s' (neither a knob nor an "
                  "environment value)",
                  e->s, c->prog->text);
      return FALSE;
    }
    return TRUE;
  }
  default:
    break;
  }
  if (!compile(c, e->a, &a, &ka, error) || (e->b && !compile(c, e->b, &b, &kb, error)))
    return FALSE;
  gint32 op;
  switch (e->kind) {
  case TS_EX_NEG:
    op = C_NEG;
    break;
  case TS_EX_NOT:
    op = C_NOT;
    break;
  case TS_EX_MIN:
    op = C_MIN;
    break;
  case TS_EX_MAX:
    op = C_MAX;
    break;
  default:
    op = e->op == TS_OP_AND ? C_AND : e->op == TS_OP_OR ? C_OR : C_BIN + (gint32)e->op;
    break;
  }
  if (e->kind == TS_EX_BIN && (e->op == TS_OP_EQ || e->op == TS_OP_NE)) {
    if (ka != kb)
      return type_error(c, error, "a string compared with an integer");
  } else if (ka == TS_SCHED_STR || kb == TS_SCHED_STR) {
    return type_error(c, error, "a string used as a number");
  }
  *out = emit(c, op, a, b, 0);
  return TRUE;
}

/* 0 ok, 1 division by zero, 2 overflow. */
static int
ev(const CNode *nodes, int i, const gint64 *slots, gint64 *out)
{
  const CNode *x = &nodes[i];
  gint64 a, b;
  int r;
  switch (x->op) {
  case C_CONST:
    *out = x->v;
    return 0;
  case C_SLOT:
    *out = slots[x->v];
    return 0;
  case C_AND:
  case C_OR:
    if ((r = ev(nodes, x->a, slots, &a)))
      return r;
    if ((x->op == C_AND) != (a != 0)) { /* short-circuit, as in C */
      *out = a != 0;
      return 0;
    }
    if ((r = ev(nodes, x->b, slots, &b)))
      return r;
    *out = b != 0;
    return 0;
  default:
    break;
  }
  if ((r = ev(nodes, x->a, slots, &a)))
    return r;
  switch (x->op) {
  case C_NEG:
    return __builtin_sub_overflow((gint64)0, a, out) ? 2 : 0;
  case C_NOT:
    *out = !a;
    return 0;
  default:
    break;
  }
  if ((r = ev(nodes, x->b, slots, &b)))
    return r;
  switch (x->op) {
  case C_MIN:
    *out = MIN(a, b);
    return 0;
  case C_MAX:
    *out = MAX(a, b);
    return 0;
  default:
    return ts__sched_binop((TsExOp)(x->op - C_BIN), a, b, out);
  }
}

TsSchedPlan *
ts__sched_plan_new(const TsSchedSpace *space, const TsSchedEnv *env, GError **error)
{
  g_autoptr(TsSchedPlan) plan = g_new0(TsSchedPlan, 1);
  guint n = space->knobs->len;
  plan->space = space;
  plan->n = n;
  plan->radix = g_new0(guint, MAX(n, 1));
  plan->vals = g_new0(gint64 *, MAX(n, 1));
  plan->at = g_new0(GPtrArray *, n + 1);
  plan->suffix = g_new0(guint64, n + 1);
  plan->slots = g_new0(gint64, MAX(n, 1));
  plan->idx = g_new0(guint, MAX(n, 1));
  plan->last_depth = -1;
  for (guint d = 0; d < n; d++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, d);
    plan->radix[d] = k->values->len;
    plan->vals[d] = g_new(gint64, k->values->len);
    for (guint i = 0; i < k->values->len; i++) {
      TsSchedValue v = g_array_index(k->values, TsSchedValue, i);
      plan->vals[d][i] = v.kind == TS_SCHED_INT ? v.i : (gint64)(gintptr)v.s;
    }
  }
  plan->suffix[n] = 1;
  for (guint d = n; d-- > 0;)
    if (__builtin_mul_overflow(plan->suffix[d + 1], (guint64)plan->radix[d], &plan->suffix[d]))
      plan->suffix[d] = G_MAXUINT64;
  for (guint d = 0; d <= n; d++)
    plan->at[d] = g_ptr_array_new_with_free_func(prog_free);

  for (guint i = 0; i < space->constraints->len; i++) {
    const TsExpr *e = g_ptr_array_index(space->constraints, i);
    Prog *prog = g_new0(Prog, 1);
    prog->nodes = g_array_new(FALSE, FALSE, sizeof(CNode));
    prog->text = ts__sched_expr_to_string(e);
    Compiler c = {space, env, prog, -1};
    int root;
    TsSchedKind kind;
    if (!compile(&c, e, &root, &kind, error)) {
      prog_free(prog);
      return NULL;
    }
    if (kind != TS_SCHED_INT) {
      type_error(&c, error, "a string used as a condition");
      prog_free(prog);
      return NULL;
    }
    g_ptr_array_add(plan->at[c.depth + 1], prog);
    plan->last_depth = MAX(plan->last_depth, c.depth);
  }
  return g_steal_pointer(&plan);
}

void
ts__sched_plan_free(TsSchedPlan *plan)
{
  if (!plan)
    return;
  for (guint d = 0; d < plan->n; d++)
    g_free(plan->vals ? plan->vals[d] : NULL);
  for (guint d = 0; plan->at && d <= plan->n; d++)
    if (plan->at[d])
      g_ptr_array_unref(plan->at[d]);
  g_free(plan->radix);
  g_free(plan->vals);
  g_free(plan->at);
  g_free(plan->suffix);
  g_free(plan->slots);
  g_free(plan->idx);
  g_free(plan);
}

int
ts__sched_plan_check_depth(TsSchedPlan *plan, int d, GError **error)
{
  GPtrArray *progs = plan->at[d + 1];
  for (guint i = 0; i < progs->len; i++) {
    const Prog *p = g_ptr_array_index(progs, i);
    gint64 v;
    int r = ev((const CNode *)p->nodes->data, (int)p->nodes->len - 1, plan->slots, &v);
    if (r) {
      g_autoptr(TsSchedPoint) pt = ts__sched_plan_point(plan, (guint)(d + 1));
      g_autofree char *text = ts_sched_point_to_string(pt);
      g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL,
                  "schedule: %s in constraint '%s' at point %s",
                  r == 1 ? "division by zero" : "integer overflow", p->text, text);
      return -1;
    }
    if (!v)
      return 0;
  }
  return 1;
}

TsSchedPoint *
ts__sched_plan_point(const TsSchedPlan *plan, guint n_bound)
{
  TsSchedPoint *p = ts__sched_point_new_sized(n_bound);
  for (guint d = 0; d < n_bound; d++) {
    const TsKnob *k = g_ptr_array_index(plan->space->knobs, d);
    TsSchedValue v = {.kind = k->kind};
    if (k->kind == TS_SCHED_INT)
      v.i = plan->slots[d];
    else
      v.s = (const char *)(gintptr)plan->slots[d];
    ts__sched_point_append(p, k->name, v);
  }
  return p;
}
