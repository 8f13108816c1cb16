/* ts-cost-private.h — what the files of costmodel/ share and nothing outside it may use. */
#pragma once

#include "ts-cost-model.h"

G_BEGIN_DECLS

/* Writes rows[0 .. n_rows) of dataset as an n_rows x n_out row-major matrix: the cell of
 * dataset column c goes to output column map[c], or nowhere when map[c] < 0 (map has one entry
 * per dataset column); cells a row lacks are NaN. */
void ts__cost_dataset_fill(const TsCostDataset *dataset, const guint *rows, guint n_rows,
                           const int *map, guint n_out, float *out);

G_END_DECLS
