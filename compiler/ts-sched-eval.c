/* ts-sched-eval.c — constraints compiled against one environment into flat node arrays over
 * knob slots, grouped by the depth at which their last knob is bound, so enumeration can
 * prune a subtree the moment a constraint becomes decidable. Names are resolved once here,
 * not per point. */
#include "ts-sched-private.h"

/* Postfix code for a small stack machine: children before parents, so no recursion at run
 * time; && and || jump over their right operand as C does. */
enum {
  C_CONST,
  C_SLOT,
  C_NEG,
  C_NOT,
  C_AND_JUMP, /* if top == 0: leave 0, jump; else pop */
  C_OR_JUMP,  /* if top != 0: leave 1, jump; else pop */
  C_BOOL,
  C_MIN,
  C_MAX,
  C_BIN, /* C_BIN + TsExOp */
};

/* Where a binary operator finds its right operand: the stack, or (a superinstruction that
 * halves dispatches on the usual `BM * BK <= 1024` shapes) inline as a constant or a slot. */
enum { R_STACK, R_CONST, R_SLOT };

typedef struct {
  gint16 op;
  gint16 rk;     /* binary operators: R_* */
  gint32 target; /* jumps */
  gint64 v;      /* constant, or slot index */
} CNode;

typedef struct {
  GArray *code;  /* CNode */
  gint64 *stack; /* max_depth entries */
  char *text;    /* the constraint as printed, for error messages */
} Prog;

static void
prog_free(gpointer data)
{
  Prog *p = data;
  g_array_unref(p->code);
  g_free(p->stack);
  g_free(p->text);
  g_free(p);
}

typedef struct {
  const TsSchedSpace *space;
  const TsSchedEnv *env;
  Prog *prog;
  int depth;
  GArray *reads; /* guint: the knobs the constraint reads */
} Compiler;

static void
emit(Compiler *c, gint32 op, gint64 v)
{
  CNode n = {(gint16)op, R_STACK, 0, v};
  g_array_append_val(c->prog->code, n);
}

static CNode *
code_at(Compiler *c, guint i)
{
  return &g_array_index(c->prog->code, CNode, i);
}

static gboolean
type_error(Compiler *c, GError **error, const char *what)
{
  g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_TYPE, "schedule: %s in constraint '%s'", what,
              c->prog->text);
  return FALSE;
}

/* Appends e's code; *kind is its type. Operators over constants (literals and environment
 * values) are folded unless folding fails, so the failure is reported per point as usual. */
static gboolean
compile(Compiler *c, const TsExpr *e, TsSchedKind *kind, GError **error)
{
  TsSchedKind ka = TS_SCHED_INT, kb = TS_SCHED_INT;
  *kind = TS_SCHED_INT;
  switch (e->kind) {
  case TS_EX_INT:
    emit(c, C_CONST, e->i);
    return TRUE;
  case TS_EX_STR:
    *kind = TS_SCHED_STR;
    /* Interned strings compare by pointer, like the knob slots. */
    emit(c, C_CONST, (gint64)(gintptr)e->s);
    return TRUE;
  case TS_EX_NAME: {
    int k = ts_sched_space_knob_index(c->space, e->s);
    gint64 v;
    if (k >= 0) {
      *kind = ((const TsKnob *)g_ptr_array_index(c->space->knobs, k))->kind;
      c->depth = MAX(c->depth, k);
      guint knob = (guint)k;
      g_array_append_val(c->reads, knob);
      emit(c, C_SLOT, k);
    } else if (ts_sched_env_get(c->env, e->s, &v)) {
      emit(c, C_CONST, v);
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
  guint start = c->prog->code->len;
  if (!compile(c, e->a, &ka, error))
    return FALSE;
  guint bstart = c->prog->code->len;
  guint jump = 0;
  gboolean logic = e->kind == TS_EX_BIN && (e->op == TS_OP_AND || e->op == TS_OP_OR);
  if (logic) {
    jump = c->prog->code->len;
    emit(c, e->op == TS_OP_AND ? C_AND_JUMP : C_OR_JUMP, 0);
  }
  if (e->b && !compile(c, e->b, &kb, error))
    return FALSE;
  if (e->kind == TS_EX_BIN && (e->op == TS_OP_EQ || e->op == TS_OP_NE)) {
    if (ka != kb)
      return type_error(c, error, "a string compared with an integer");
  } else if (ka == TS_SCHED_STR || kb == TS_SCHED_STR) {
    return type_error(c, error, "a string used as a number");
  }
  if (logic) {
    emit(c, C_BOOL, 0);
    code_at(c, jump)->target = (gint32)c->prog->code->len;
    return TRUE;
  }
  gint32 op = e->kind == TS_EX_NEG   ? C_NEG
              : e->kind == TS_EX_NOT ? C_NOT
              : e->kind == TS_EX_MIN ? C_MIN
              : e->kind == TS_EX_MAX ? C_MAX
                                     : C_BIN + (gint32)e->op;
  guint len = c->prog->code->len - start;
  if (len == (e->b ? 2u : 1u) && code_at(c, start)->op == C_CONST &&
      code_at(c, c->prog->code->len - 1)->op == C_CONST) {
    gint64 a = code_at(c, start)->v, b = code_at(c, start + len - 1)->v, v = 0;
    int r = 0;
    if (op == C_NEG)
      r = __builtin_sub_overflow((gint64)0, a, &v);
    else if (op == C_NOT)
      v = !a;
    else if (op == C_MIN || op == C_MAX)
      v = op == C_MIN ? MIN(a, b) : MAX(a, b);
    else
      r = ts__sched_binop(e->op, a, b, &v);
    if (r == 0) {
      g_array_set_size(c->prog->code, start);
      emit(c, C_CONST, v);
      return TRUE;
    }
  }
  if (op >= C_BIN && c->prog->code->len == bstart + 1 &&
      (code_at(c, bstart)->op == C_CONST || code_at(c, bstart)->op == C_SLOT)) {
    CNode *b = code_at(c, bstart);
    b->rk = b->op == C_CONST ? R_CONST : R_SLOT;
    b->op = (gint16)op;
    return TRUE;
  }
  emit(c, op, 0);
  return TRUE;
}

static guint
max_stack(const GArray *code)
{
  guint sp = 0, most = 1;
  for (guint i = 0; i < code->len; i++) {
    gint32 op = g_array_index(code, CNode, i).op;
    if (op == C_CONST || op == C_SLOT)
      sp++;
    else if ((op >= C_MIN && g_array_index(code, CNode, i).rk == R_STACK) || op == C_AND_JUMP ||
             op == C_OR_JUMP)
      sp--; /* a jump's fall-through pops; its taken branch is never deeper */
    most = MAX(most, sp);
  }
  return most;
}

/* 0 ok, 1 division by zero, 2 overflow. */
static int
run(const Prog *p, const gint64 *slots, gint64 *out)
{
  const CNode *code = (const CNode *)p->code->data;
  gint64 *st = p->stack;
  guint n = p->code->len;
  int sp = 0;
  for (guint pc = 0; pc < n; pc++) {
    const CNode *x = &code[pc];
    switch (x->op) {
    case C_CONST:
      st[sp++] = x->v;
      break;
    case C_SLOT:
      st[sp++] = slots[x->v];
      break;
    case C_NEG:
      if (__builtin_sub_overflow((gint64)0, st[sp - 1], &st[sp - 1]))
        return 2;
      break;
    case C_NOT:
      st[sp - 1] = !st[sp - 1];
      break;
    case C_AND_JUMP:
      if (st[sp - 1] == 0)
        pc = (guint)x->target - 1;
      else
        sp--;
      break;
    case C_OR_JUMP:
      if (st[sp - 1] != 0) {
        st[sp - 1] = 1;
        pc = (guint)x->target - 1;
      } else {
        sp--;
      }
      break;
    case C_BOOL:
      st[sp - 1] = st[sp - 1] != 0;
      break;
    case C_MIN:
      sp--;
      st[sp - 1] = MIN(st[sp - 1], st[sp]);
      break;
    case C_MAX:
      sp--;
      st[sp - 1] = MAX(st[sp - 1], st[sp]);
      break;
    default: {
      gint64 b = x->rk == R_STACK ? st[--sp] : x->rk == R_CONST ? x->v : slots[x->v];
      gint64 *a = &st[sp - 1];
      switch (x->op - C_BIN) {
      /* The frequent operators inline; the rest (division, overflow paths) share the helper. */
      case TS_OP_ADD:
        if (__builtin_add_overflow(*a, b, a))
          return 2;
        break;
      case TS_OP_MUL:
        if (__builtin_mul_overflow(*a, b, a))
          return 2;
        break;
      case TS_OP_LE:
        *a = *a <= b;
        break;
      case TS_OP_EQ:
        *a = *a == b;
        break;
      case TS_OP_NE:
        *a = *a != b;
        break;
      default: {
        int r = ts__sched_binop((TsExOp)(x->op - C_BIN), *a, b, a);
        if (r)
          return r;
        break;
      }
      }
      break;
    }
    }
  }
  *out = st[0];
  return 0;
}

/* The group of knob d: its smallest member (union by the smaller index). */
static guint
group_find(guint *group, guint d)
{
  while (group[d] != d) {
    group[d] = group[group[d]];
    d = group[d];
  }
  return d;
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
  plan->slots = g_new0(gint64, MAX(n, 1));
  plan->idx = g_new0(guint, MAX(n, 1));
  plan->group = g_new(guint, MAX(n, 1));
  for (guint d = 0; d < n; d++)
    plan->group[d] = d;
  for (guint d = 0; d < n; d++) {
    const TsKnob *k = g_ptr_array_index(space->knobs, d);
    plan->radix[d] = k->values->len;
    plan->vals[d] = g_new(gint64, k->values->len);
    for (guint i = 0; i < k->values->len; i++) {
      TsSchedValue v = g_array_index(k->values, TsSchedValue, i);
      plan->vals[d][i] = v.kind == TS_SCHED_INT ? v.i : (gint64)(gintptr)v.s;
    }
  }
  for (guint d = 0; d <= n; d++)
    plan->at[d] = g_ptr_array_new_with_free_func(prog_free);

  for (guint i = 0; i < space->constraints->len; i++) {
    const TsExpr *e = g_ptr_array_index(space->constraints, i);
    Prog *prog = g_new0(Prog, 1);
    prog->code = g_array_new(FALSE, FALSE, sizeof(CNode));
    prog->text = ts__sched_expr_to_string(e);
    g_autoptr(GArray) reads = g_array_new(FALSE, FALSE, sizeof(guint));
    Compiler c = {space, env, prog, -1, reads};
    TsSchedKind kind;
    if (!compile(&c, e, &kind, error)) {
      prog_free(prog);
      return NULL;
    }
    for (guint r = 1; r < reads->len; r++) {
      guint a = group_find(plan->group, g_array_index(reads, guint, 0));
      guint b = group_find(plan->group, g_array_index(reads, guint, r));
      plan->group[MAX(a, b)] = MIN(a, b);
    }
    if (kind != TS_SCHED_INT) {
      type_error(&c, error, "a string used as a condition");
      prog_free(prog);
      return NULL;
    }
    prog->stack = g_new(gint64, max_stack(prog->code));
    g_ptr_array_add(plan->at[c.depth + 1], prog);
  }
  for (guint d = 0; d < n; d++)
    plan->group[d] = group_find(plan->group, d);
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
  g_free(plan->slots);
  g_free(plan->idx);
  g_free(plan->group);
  g_free(plan);
}

int
ts__sched_plan_check_depth(TsSchedPlan *plan, int d, GError **error)
{
  GPtrArray *progs = plan->at[d + 1];
  for (guint i = 0; i < progs->len; i++) {
    const Prog *p = g_ptr_array_index(progs, i);
    gint64 v;
    int r = run(p, plan->slots, &v);
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
    ts__sched_point_push_interned(p, k->name, v);
  }
  return p;
}
