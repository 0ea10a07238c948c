// decimal32 and decimal64 (Arrow 18+; pyarrow's pa.decimal32/64) handed to
// a writer become decimal128 of the same precision and scale: every format
// sluice writes stores those values (Parquet and Avro by precision, CSV and
// JSON Lines as text), and its readers give decimal128 for them anyway, as
// they do for decimal32/64 in Arrow IPC input. One widening at the writers'
// door (sl_checked_stream) instead of a fourth and fifth decimal width in
// every writer.
#ifndef SL_WIDEN_DECIMALS_H
#define SL_WIDEN_DECIMALS_H

#include "sluice.h"

/// Whether the schema tree holds a decimal32 or decimal64 node.
int sl_schema_has_narrow_decimals(const struct ArrowSchema* schema);

/// In a sluice-made schema (sl_schema_init / sl_schema_copy): each decimal32
/// or decimal64 node becomes decimal128 ("d:5,2,32" -> "d:5,2").
void sl_schema_widen_decimals(struct ArrowSchema* schema);

/// Replaces *batch (of `narrow`'s shape, consumed) with a batch whose
/// decimal32 / decimal64 values are 16 bytes each; every other buffer is a
/// view of the original's. 0, or an errno with *error naming the column
/// (and *batch released).
int sl_array_widen_decimals(const struct ArrowSchema* narrow, struct ArrowArray* batch,
                            const struct sluice_allocator* alloc, struct sluice_error* error);

#endif
