/* ts-cost-dataset.c — training data for the learned cost model: rows of named features, each in
 * a group (one workload on one device) with its measured time.
 *
 * Rows are stored sparse (column, value) because the column set grows while rows arrive: a row
 * of a space with other knobs adds columns that earlier rows never had, and rewriting every
 * earlier row for each new column would be quadratic. The dense matrix XGBoost wants is built
 * once, when training or predicting. */
#include "ts-cost-private.h"

#include <math.h>

G_DEFINE_QUARK(ts - cost - error - quark, ts_cost_error)

typedef struct {
  guint column;
  float value;
} Cell;

typedef struct {
  guint group;
  double time_s;
  guint first, n; /* its cells: cells[first .. first + n) */
} Row;

/* A name table: index -> name and name -> index + 1 (0 is "absent" to g_hash_table_lookup). */
typedef struct {
  GPtrArray *names;
  GHashTable *index;
} Names;

struct _TsCostDataset {
  Names columns, groups;
  GArray *rows;  /* Row */
  GArray *cells; /* Cell */
  /* Per column, the row (+1) that last wrote it and where: a name given twice in one row
   * overwrites its cell instead of adding a second one (the later value wins). */
  GArray *stamp_row, *stamp_cell; /* guint, one per column */
};

static void
names_init(Names *t)
{
  t->names = g_ptr_array_new_with_free_func(g_free);
  t->index = g_hash_table_new(g_str_hash, g_str_equal);
}

static void
names_clear(Names *t)
{
  /* The keys are the strings in names: freed once, by the array. */
  g_hash_table_unref(t->index);
  g_ptr_array_unref(t->names);
}

/* The index of name, added when new; *added tells which. */
static guint
names_intern(Names *t, const char *name, gboolean *added)
{
  guint i = GPOINTER_TO_UINT(g_hash_table_lookup(t->index, name));
  *added = i == 0;
  if (i > 0)
    return i - 1;
  char *copy = g_strdup(name);
  g_ptr_array_add(t->names, copy);
  g_hash_table_insert(t->index, copy, GUINT_TO_POINTER(t->names->len));
  return t->names->len - 1;
}

TsCostDataset *
ts_cost_dataset_new(void)
{
  TsCostDataset *d = g_new0(TsCostDataset, 1);
  names_init(&d->columns);
  names_init(&d->groups);
  d->rows = g_array_new(FALSE, FALSE, sizeof(Row));
  d->cells = g_array_new(FALSE, FALSE, sizeof(Cell));
  d->stamp_row = g_array_new(FALSE, TRUE, sizeof(guint));
  d->stamp_cell = g_array_new(FALSE, TRUE, sizeof(guint));
  return d;
}

void
ts_cost_dataset_free(TsCostDataset *d)
{
  if (d == NULL)
    return;
  names_clear(&d->columns);
  names_clear(&d->groups);
  g_array_unref(d->rows);
  g_array_unref(d->cells);
  g_array_unref(d->stamp_row);
  g_array_unref(d->stamp_cell);
  g_free(d);
}

guint
ts_cost_dataset_add(TsCostDataset *d, const char *group, const char *const *names,
                    const float *values, guint n, double time_s)
{
  g_return_val_if_fail(d != NULL && group != NULL, G_MAXUINT);
  g_return_val_if_fail(n == 0 || (names != NULL && values != NULL), G_MAXUINT);
  g_return_val_if_fail(time_s > 0, G_MAXUINT); /* also refuses NaN */
  for (guint i = 0; i < n; i++)
    g_return_val_if_fail(names[i] != NULL, G_MAXUINT);
  gboolean added;
  Row row = {names_intern(&d->groups, group, &added), time_s, d->cells->len, 0};
  guint stamp = d->rows->len + 1;
  for (guint i = 0; i < n; i++) {
    guint c = names_intern(&d->columns, names[i], &added);
    if (added) {
      g_array_set_size(d->stamp_row, d->columns.names->len);
      g_array_set_size(d->stamp_cell, d->columns.names->len);
    }
    if (g_array_index(d->stamp_row, guint, c) == stamp) {
      g_array_index(d->cells, Cell, g_array_index(d->stamp_cell, guint, c)).value = values[i];
      continue;
    }
    g_array_index(d->stamp_row, guint, c) = stamp;
    g_array_index(d->stamp_cell, guint, c) = d->cells->len;
    Cell cell = {c, values[i]};
    g_array_append_val(d->cells, cell);
    row.n++;
  }
  g_array_append_val(d->rows, row);
  return d->rows->len - 1;
}

guint
ts_cost_dataset_n_rows(const TsCostDataset *d)
{
  return d->rows->len;
}

guint
ts_cost_dataset_n_columns(const TsCostDataset *d)
{
  return d->columns.names->len;
}

const char *
ts_cost_dataset_column_name(const TsCostDataset *d, guint column)
{
  g_return_val_if_fail(column < d->columns.names->len, NULL);
  return g_ptr_array_index(d->columns.names, column);
}

guint
ts_cost_dataset_n_groups(const TsCostDataset *d)
{
  return d->groups.names->len;
}

const char *
ts_cost_dataset_group_name(const TsCostDataset *d, guint group)
{
  g_return_val_if_fail(group < d->groups.names->len, NULL);
  return g_ptr_array_index(d->groups.names, group);
}

guint
ts_cost_dataset_row_group(const TsCostDataset *d, guint row)
{
  g_return_val_if_fail(row < d->rows->len, G_MAXUINT);
  return g_array_index(d->rows, Row, row).group;
}

double
ts_cost_dataset_row_time(const TsCostDataset *d, guint row)
{
  g_return_val_if_fail(row < d->rows->len, NAN);
  return g_array_index(d->rows, Row, row).time_s;
}

float
ts_cost_dataset_value(const TsCostDataset *d, guint row, guint column)
{
  g_return_val_if_fail(row < d->rows->len, NAN);
  const Row *r = &g_array_index(d->rows, Row, row);
  /* A row holds at most a hundred or so cells: a scan beats keeping them sorted. */
  for (guint i = 0; i < r->n; i++) {
    const Cell *c = &g_array_index(d->cells, Cell, r->first + i);
    if (c->column == column)
      return c->value;
  }
  return NAN;
}

void
ts__cost_dataset_fill(const TsCostDataset *d, const guint *rows, guint n_rows, const int *map,
                      guint n_out, float *out)
{
  for (gsize i = 0; i < (gsize)n_rows * n_out; i++)
    out[i] = NAN;
  for (guint i = 0; i < n_rows; i++) {
    g_assert(rows[i] < d->rows->len);
    const Row *r = &g_array_index(d->rows, Row, rows[i]);
    float *dst = out + (gsize)i * n_out;
    for (guint k = 0; k < r->n; k++) {
      const Cell *c = &g_array_index(d->cells, Cell, r->first + k);
      int to = map[c->column];
      if (to >= 0) {
        g_assert((guint)to < n_out);
        dst[to] = c->value;
      }
    }
  }
}
