// Nulls where the schema says a field is not nullable. Arrow arrays may hold
// them (the validity bitmap does not look at the field's flag); a writer
// whose format keeps the flag (Arrow IPC) refuses them, as pyarrow's does,
// rather than write a file whose "not null" field holds nulls.
#ifndef SL_REQUIRED_H
#define SL_REQUIRED_H

#include <stdint.h>

#include "sluice.h"

/// Checks record batch `batch` (a struct array, its children the columns)
/// against `schema`: a null in a field that is not nullable, at any depth
/// under a value that is not null (a null dictionary value counts as null),
/// is EINVAL naming the column path ("s.x") and the row, first_row + its
/// index in the batch. A union's value is its type id's child's slot (the
/// other children's slots there are not looked at); run-end encoded
/// children are not looked into. Returns 0 otherwise.
int sl_batch_check_required(const struct ArrowSchema* schema, const struct ArrowArray* batch,
                            int64_t first_row, struct sluice_error* error);

#endif
