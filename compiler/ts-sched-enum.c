/* ts-sched-enum.c — walking the valid points without materialising the space: the lazy
 * iterator, counting, and uniform sampling. All three share one depth-first cursor over the
 * mixed-radix digits that prunes a subtree as soon as a constraint bound at its depth fails. */
#include "ts-sched-private.h"

struct _TsSchedIter {
  TsSchedSpace *space; /* own copy: the caller's space may change or go away */
  TsSchedPlan *plan;
  GError *plan_error; /* compile error, reported by the first next() */
  int d;
  enum { ITER_FRESH, ITER_RUNNING, ITER_DONE } state;
};

/* Moves the cursor to the next valid full assignment (knobs >= 1): 1 found, 0 exhausted,
 * -1 error. With resume FALSE it starts from digit 0 at depth *d == 0. */
static int
dfs_next(TsSchedPlan *plan, int *d, gboolean resume, GError **error)
{
  int last = (int)plan->n - 1;
  if (resume) {
    *d = last;
    plan->idx[last]++;
  }
  for (;;) {
    int k = *d;
    if (plan->idx[k] >= plan->radix[k]) {
      if (k == 0)
        return 0;
      (*d)--;
      plan->idx[k - 1]++;
      continue;
    }
    ts__sched_plan_bind(plan, (guint)k, plan->idx[k]);
    int r = ts__sched_plan_check_depth(plan, k, error);
    if (r < 0)
      return -1;
    if (r == 0) {
      plan->idx[k]++;
      continue;
    }
    if (k == last)
      return 1;
    (*d)++;
    plan->idx[k + 1] = 0;
  }
}

TsSchedIter *
ts_sched_iter_new(const TsSchedSpace *space, const TsSchedEnv *env)
{
  g_return_val_if_fail(space != NULL, NULL);
  TsSchedIter *it = g_new0(TsSchedIter, 1);
  it->space = ts_sched_space_copy(space);
  /* Names are resolved here, once, against env; env need not outlive the iterator. */
  it->plan = ts__sched_plan_new(it->space, env, &it->plan_error);
  return it;
}

void
ts_sched_iter_free(TsSchedIter *iter)
{
  if (!iter)
    return;
  ts__sched_plan_free(iter->plan);
  g_clear_error(&iter->plan_error);
  ts_sched_space_free(iter->space);
  g_free(iter);
}

gboolean
ts_sched_iter_next(TsSchedIter *iter, TsSchedPoint **point, GError **error)
{
  g_return_val_if_fail(iter != NULL && point != NULL, FALSE);
  *point = NULL;
  if (iter->state == ITER_DONE)
    return FALSE;
  if (!iter->plan) {
    iter->state = ITER_DONE;
    g_propagate_error(error, g_steal_pointer(&iter->plan_error));
    return FALSE;
  }
  TsSchedPlan *plan = iter->plan;
  gboolean resume = iter->state == ITER_RUNNING;
  if (!resume) {
    iter->state = ITER_RUNNING;
    int r = ts__sched_plan_check_depth(plan, -1, error);
    if (r <= 0 || plan->n == 0) {
      iter->state = ITER_DONE;
      if (r > 0) /* no knobs: the single empty point */
        *point = ts__sched_plan_point(plan, 0);
      return r > 0;
    }
    iter->d = 0;
    plan->idx[0] = 0;
  }
  int r = dfs_next(plan, &iter->d, resume, error);
  if (r <= 0) {
    iter->state = ITER_DONE;
    return FALSE;
  }
  *point = ts__sched_plan_point(plan, plan->n);
  return TRUE;
}

static gboolean
count_overflow(GError **error)
{
  g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EVAL,
              "schedule: the number of valid points overflows 64 bits");
  return FALSE;
}

/* The valid assignments of one group of knobs (m[0..k-1], in order), which shares no constraint
 * with a knob outside it: a walk over its own knobs alone, checking at each the constraints
 * decided there. The group's last knob is where one of its constraints is decided (a
 * constraint reading it reads no deeper knob of the group), so every leaf of the walk is a
 * whole assignment; a knob no constraint reads is a group of its own, all of its values valid. */
static gboolean
count_group(TsSchedPlan *plan, const guint *m, guint k, guint64 *count, GError **error)
{
  if (plan->at[m[k - 1] + 1]->len == 0) {
    g_assert(k == 1);
    *count = plan->radix[m[0]];
    return TRUE;
  }
  guint64 total = 0;
  guint j = 0;
  plan->idx[m[0]] = 0;
  for (;;) {
    const guint d = m[j];
    if (plan->idx[d] >= plan->radix[d]) {
      if (j == 0)
        break;
      j--;
      plan->idx[m[j]]++;
      continue;
    }
    ts__sched_plan_bind(plan, d, plan->idx[d]);
    int ok = ts__sched_plan_check_depth(plan, (int)d, error);
    if (ok < 0)
      return FALSE;
    if (ok > 0 && j + 1 < k) {
      j++;
      plan->idx[m[j]] = 0;
      continue;
    }
    total += ok > 0;
    plan->idx[d]++;
  }
  *count = total;
  return TRUE;
}

/* The product of each group's count (ts__sched_plan_new's groups: knobs that share no
 * constraint are counted apart), so a space of independent parts is counted in the sum of
 * their sizes, not their product: 10^7 points in three groups of 100, 1000 and 100. The groups
 * are counted in the order of their first knob; an empty one ends the count (the space is
 * empty, however large the groups before it), so a later group's constraints are not
 * evaluated. */
gboolean
ts_sched_space_count_valid(const TsSchedSpace *space, const TsSchedEnv *env, guint64 *count,
                           GError **error)
{
  g_return_val_if_fail(space != NULL, FALSE);
  g_autoptr(TsSchedPlan) plan = ts__sched_plan_new(space, env, error);
  if (!plan)
    return FALSE;
  int r = ts__sched_plan_check_depth(plan, -1, error);
  if (r < 0)
    return FALSE;
  guint64 total = r > 0;
  gboolean overflow = FALSE; /* an error unless a later group is empty */
  g_autofree guint *members = g_new(guint, MAX(plan->n, 1));
  for (guint g = 0; g < plan->n && total > 0; g++) {
    if (plan->group[g] != g)
      continue;
    guint k = 0;
    for (guint d = g; d < plan->n; d++)
      if (plan->group[d] == g)
        members[k++] = d;
    guint64 part;
    if (!count_group(plan, members, k, &part, error))
      return FALSE;
    overflow = part > 0 && (overflow || __builtin_mul_overflow(total, part, &total));
    total = part > 0 ? total : 0;
  }
  if (overflow)
    return count_overflow(error);
  if (count)
    *count = total;
  return TRUE;
}

static char *
digits_key(const TsSchedPlan *plan)
{
  GString *s = g_string_sized_new(plan->n * 3);
  for (guint d = 0; d < plan->n; d++)
    g_string_append_printf(s, "%u,", plan->idx[d]);
  return g_string_free(s, FALSE);
}

static guint64
rand64(GRand *rng)
{
  return (guint64)g_rand_int(rng) << 32 | g_rand_int(rng);
}

/* Uniform m-subset of the valid points not yet in seen (reservoir sampling over the lazy
 * enumeration), appended to out in random order. */
static gboolean
sample_by_enumeration(TsSchedPlan *plan, GHashTable *seen, guint m, GRand *rng, GPtrArray *out,
                      GError **error)
{
  g_autoptr(GPtrArray) res = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  guint64 t = 0;
  int d = 0;
  plan->idx[0] = 0;
  gboolean resume = FALSE;
  int r;
  while ((r = dfs_next(plan, &d, resume, error)) > 0) {
    resume = TRUE;
    g_autofree char *key = digits_key(plan);
    if (g_hash_table_contains(seen, key))
      continue;
    t++;
    if (res->len < m) {
      g_ptr_array_add(res, ts__sched_plan_point(plan, plan->n));
    } else {
      guint64 j = rand64(rng) % t; /* bias below 2^-40 for any realistic t */
      if (j < m) {
        ts_sched_point_free(res->pdata[j]);
        res->pdata[j] = ts__sched_plan_point(plan, plan->n);
      }
    }
  }
  if (r < 0)
    return FALSE;
  /* Reservoir order is not uniform; a Fisher-Yates shuffle makes the sequence so. */
  for (guint i = res->len; i > 1; i--) {
    guint j = (guint)g_rand_int_range(rng, 0, (gint32)i);
    gpointer tmp = res->pdata[i - 1];
    res->pdata[i - 1] = res->pdata[j];
    res->pdata[j] = tmp;
  }
  for (guint i = 0; i < res->len; i++)
    g_ptr_array_add(out, g_steal_pointer(&res->pdata[i]));
  return TRUE;
}

GPtrArray *
ts_sched_space_sample(const TsSchedSpace *space, const TsSchedEnv *env, guint n, GRand *rng,
                      GError **error)
{
  g_return_val_if_fail(space != NULL && rng != NULL, NULL);
  g_autoptr(TsSchedPlan) plan = ts__sched_plan_new(space, env, error);
  if (!plan)
    return NULL;
  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func((GDestroyNotify)ts_sched_point_free);
  int r = ts__sched_plan_check_depth(plan, -1, error);
  if (r < 0)
    return NULL;
  if (r > 0 && plan->n == 0 && n > 0)
    g_ptr_array_add(out, ts__sched_plan_point(plan, 0));
  if (r > 0 && plan->n > 0 && n > 0) {
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    guint64 attempts = 0, accepted = 0;
    /* Rejection is exact (each accepted draw is uniform over the valid points not yet drawn);
     * stop once fewer than 1 in 20 draws is accepted — enumeration is then cheaper. Low
     * acceptance also covers asking for more points than exist (duplicates are rejections). */
    while (out->len < n && !(attempts >= 64 && accepted * 20 < attempts)) {
      attempts++;
      for (guint d = 0; d < plan->n; d++)
        ts__sched_plan_bind(plan, d, (guint)g_rand_int_range(rng, 0, (gint32)plan->radix[d]));
      int ok = 1;
      for (guint d = 0; d < plan->n && ok > 0; d++)
        ok = ts__sched_plan_check_depth(plan, (int)d, error);
      if (ok < 0)
        return NULL;
      if (ok == 0)
        continue;
      char *key = digits_key(plan);
      if (!g_hash_table_add(seen, key))
        continue;
      accepted++;
      g_ptr_array_add(out, ts__sched_plan_point(plan, plan->n));
    }
    if (out->len < n && !sample_by_enumeration(plan, seen, n - out->len, rng, out, error))
      return NULL;
  }
  if (out->len == 0 && n > 0) {
    g_set_error(error, TS_SCHED_ERROR, TS_SCHED_ERROR_EMPTY,
                "schedule: no point of the space satisfies the constraints");
    return NULL;
  }
  return g_steal_pointer(&out);
}
