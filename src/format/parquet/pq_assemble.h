// Definition / repetition levels -> the nested Arrow arrays (Dremel record
// assembly): validity bitmaps and list offsets for structs, lists and maps at
// any depth, over the leaves decoded by pq_column.
#ifndef PQ_ASSEMBLE_H
#define PQ_ASSEMBLE_H

#include <stdint.h>

#include "sluice.h"
#include "pq_column.h"
#include "pq_schema.h"

/// Whether `need` (per leaf of the file, NULL = every leaf) marks some
/// leaf under `f`.
int sl_pq_needs_field(const uint8_t* need, const struct pq_field* f);

/// Builds the array of top-level field `f` (`rows` slots) from `leaves`
/// (indexed by leaf number; the leaves under `f` must have been read, or
/// those `need` marks: a struct field with none of them read comes out as
/// nulls). The leaves' buffers are moved into the array. `file` / `rg`
/// name errors, and `first_row` (the first row's number in the row group)
/// their rows.
int sl_pq_assemble_field(const struct pq_field* f, struct pq_leaf_data* leaves,
                         const uint8_t* need, int64_t rows, const struct sluice_allocator* alloc,
                         const char* file, int64_t rg, int64_t first_row, struct ArrowArray* out,
                         struct sluice_error* error);

#endif
