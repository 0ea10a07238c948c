// The few lossless casts between leaf types that objects of one dataset
// written by different tools disagree on (pyarrow writes string, polars
// large_string; one writer int32, another int64): the joined type of two
// formats, and a column cast to it. Buffers that stay the same (validity,
// string bytes) are views of the input, not copies. Nested columns (lists,
// structs, maps) are cast by their leaves, list and large_list by their
// offsets (sl_array_cast_type).
#ifndef SL_ARRAY_CAST_H
#define SL_ARRAY_CAST_H

#include <stddef.h>

#include "sluice.h"

/// The leaf format that holds the values of both `a` (the first object's)
/// and `b` losslessly, or NULL when there is none: `a` for string and
/// large_string (binary and large_binary) alike, the wider of two integers
/// (a signed one wide enough for an unsigned one), float64 for float32 and
/// float64 and for integers of up to 32 bits with either.
const char* sl_cast_join(const char* a, const char* b);

/// `*out` = `in` (of leaf format `from`, consumed) as format `to`, which
/// sl_cast_join gave for `from`. Same length, offset and nulls. EOVERFLOW
/// when large strings do not fit 32-bit offsets.
int sl_array_cast(const char* from, struct ArrowArray* in, const char* to,
                  const struct sluice_allocator* alloc, struct ArrowArray* out,
                  struct sluice_error* error);

/// Whether `s` is of type null (no buffers, every value null): a column of
/// it joins any type, its values cast to nulls of that type.
int sl_type_is_null(const struct ArrowSchema* s);

/// Whether `format` is a list's ("+l") or a large list's ("+L").
int sl_format_is_list(const char* format);

/// Whether `from` and `to` differ in some format of their trees (the
/// casts sl_array_cast_type makes; names, flags and metadata aside).
int sl_types_differ(const struct ArrowSchema* from, const struct ArrowSchema* to);

/// `*out` = `rows` nulls of `type`'s type (any type, nested ones too), at
/// offset 0.
int sl_array_nulls(const struct ArrowSchema* type, int64_t rows,
                   const struct sluice_allocator* alloc, struct ArrowArray* out,
                   struct sluice_error* error);

/// `*out` = `in` (of type `from`, consumed) as type `to`, of the same
/// shape but for leaves sl_array_cast casts and lists whose offsets are
/// 32-bit in one, 64-bit in the other (list and large_list): leaves inside
/// lists, structs and maps are cast too. Unchanged buffers are views. A
/// node of type null (a struct field None in every row, the items of
/// empty lists) becomes nulls of `to`'s type there, of its offset and
/// length. EOVERFLOW when large offsets do not fit 32 bits.
int sl_array_cast_type(const struct ArrowSchema* from, struct ArrowArray* in,
                       const struct ArrowSchema* to, const struct sluice_allocator* alloc,
                       struct ArrowArray* out, struct sluice_error* error);

#endif
