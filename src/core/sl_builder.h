// Builders: format readers (CSV, Avro, Parquet, ...) decode straight into Arrow
// columns through these. A builder tree mirrors an ArrowSchema; a reader keeps
// pointers to the leaf builders it fills and calls their typed append
// functions, so no per-value dispatch happens through the tree.
//
// Usage, for a record batch schema (a struct):
//
//   struct sl_builder batch;
//   sl_builder_init_from_schema(&batch, schema, alloc, &error);
//   struct sl_builder* price = sl_builder_child(&batch, 2);    // a "g" column
//   sl_builder_reserve(price, n_rows);                         // may fail: ENOMEM
//   for (...) sl_builder_append_double_unsafe(price, v);       // no checks
//   ...                                                        // other columns
//   sl_builder_struct_finish_rows(&batch, n_rows);             // n valid rows
//   sl_builder_finish(&batch, &out_array, &error);             // hand over
//   ...                                                        // next batch
//   sl_builder_release(&batch);
//
// Every `*_unsafe` append requires room reserved before (sl_builder_reserve for
// values; sl_builder_reserve_bytes as well for binary/utf8 bytes). The
// checked variants reserve themselves and return 0 / ENOMEM / EOVERFLOW.
//
// Nested values:
// - list / large_list / map: append the element's items to child 0, then
//   sl_builder_list_finish (ends one list element). map's child 0 is the
//   entries struct: append key and value to its children, then
//   sl_builder_struct_finish on the entries builder, per entry.
// - fixed_size_list: append exactly list_size items to child 0, then
//   sl_builder_list_finish.
// - struct: append one value to every child, then sl_builder_struct_finish
//   (or n values each, then sl_builder_struct_finish_rows(b, n)).
// - union: append the value to the child for the type code
//   (sl_builder_union_child), then sl_builder_union_finish(b, code). Sparse
//   unions pad the other children with nulls themselves.
// - dictionary-encoded column: the builder takes the index values (its type is
//   the index integer type); sl_builder_dictionary() is the builder of the
//   dictionary values. Both are handed over by finish, unless the dictionary
//   was frozen (sl_builder_freeze_dictionary) to be shared by many batches.
// - nulls: sl_builder_append_null(s) on any builder, nested ones included: it
//   appends the placeholder slots children need itself (do not also append to
//   the children).
//
// After an error (ENOMEM, EOVERFLOW, EINVAL) sibling builders may disagree in
// length: drop the batch with sl_builder_reset (or release the builder).
#ifndef SL_BUILDER_H
#define SL_BUILDER_H

#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "sl_buffer.h"
#include "sl_type.h"
#include "sluice.h"

struct sl_ref;

struct sl_builder {
  struct sl_type type;
  const struct sluice_allocator* alloc;
  int64_t length;       ///< values appended since the last finish
  int64_t null_count;
  int64_t capacity;     ///< values the buffers have room for (see sl_builder_reserve)
  int32_t value_width;  ///< bytes per value in `values` (0 for bool / no data)
  int32_t offset_width; ///< 4 or 8 for binary, utf8, lists, map; else 0
  /// Validity bitmap, allocated on the first null (NULL means all valid).
  /// Zero-filled up to `capacity` bits.
  struct sl_buffer validity;
  /// Fixed-width values; bool bits (zero-filled up to capacity); offsets
  /// (binary, utf8, lists, map; offset 0 written by the first reserve);
  /// union type ids.
  struct sl_buffer values;
  /// Binary/utf8 bytes; dense union offsets.
  struct sl_buffer extra;
  int64_t n_children;
  struct sl_builder* children;
  struct sl_builder* dictionary;  ///< dictionary values, NULL if not dict-encoded
  int8_t child_of_code[128];      ///< unions: child index of each type code, -1 if none
  /// A frozen dictionary (sl_builder_freeze_dictionary) attached to every
  /// batch as a view; NULL when the dictionary builder is finished per batch.
  struct sl_ref* frozen_ref;
  const struct ArrowArray* frozen_dictionary;
  /// Sizes of the previous batch: the first reserve after a finish grows to
  /// them at once instead of doubling its way up again.
  int64_t hint_values, hint_bytes;
};

/// Builds a builder tree for `schema` (any type listed in sl_type.h except
/// intervals is supported; intervals are fixed-width and work too). The
/// builder keeps no pointer into `schema`. On error the builder is released.
int sl_builder_init_from_schema(struct sl_builder* b, const struct ArrowSchema* schema,
                                const struct sluice_allocator* alloc, struct sluice_error* error);

/// Frees all memory of the tree. Safe on a zeroed or already released builder.
void sl_builder_release(struct sl_builder* b);

/// Hands the values appended so far to `out` (buffers move, no copy) and resets
/// the tree to empty for the next batch. Checks that children lengths agree
/// with their parents (EINVAL otherwise). On error `out` is released and the
/// builder is reset (its values are dropped).
int sl_builder_finish(struct sl_builder* b, struct ArrowArray* out, struct sluice_error* error);

/// For a dictionary whose values span several batches (a Parquet column
/// chunk's dictionary page, an IPC dictionary batch): hands the values in the
/// dictionary builder over to a shared array that every later finish attaches
/// as a view (no copy), until the next freeze or release. Values appended to
/// the dictionary builder afterwards become visible only with the next freeze.
int sl_builder_freeze_dictionary(struct sl_builder* b, struct sluice_error* error);

/// Drops the values appended since the last finish (memory is freed).
void sl_builder_reset(struct sl_builder* b);

/// Ensures room for `n` more values in this builder (not its children, not
/// binary bytes). ENOMEM / EOVERFLOW.
int sl_builder_reserve(struct sl_builder* b, int64_t n);

/// sl_builder_reserve(n) on this builder and, recursively, on the children a
/// row of `n` implies: struct and sparse union children n, fixed_size_list
/// children n * list_size, list/map children n (a guess: one item per element).
/// Binary bytes are not reserved.
int sl_builder_reserve_tree(struct sl_builder* b, int64_t n);

/// A fixed-width builder with no values yet (not bool, not nested) writes
/// its next `rows` values into `data` (a placed scan's memory, owned by
/// `owner`) instead of memory of its own; more rows than that move them to
/// its own memory. 0, or EINVAL when the builder is not such a builder.
int sl_builder_borrow_values(struct sl_builder* b, uint8_t* data, int64_t rows,
                             struct sl_ref* owner);

/// Ensures room for `n` more bytes of binary/utf8 data. EOVERFLOW when a
/// 32-bit-offset column would pass 2 GiB (use large_utf8/large_binary).
int sl_builder_reserve_bytes(struct sl_builder* b, int64_t n);

/// Bytes currently held by the tree's buffers (for batch sizing).
int64_t sl_builder_byte_size(const struct sl_builder* b);

static inline struct sl_builder* sl_builder_child(struct sl_builder* b, int64_t i) {
  return &b->children[i];
}
static inline struct sl_builder* sl_builder_dictionary(struct sl_builder* b) {
  return b->dictionary;
}

/// Appends one / `n` nulls (any type, nested ones included).
int sl_builder_append_null(struct sl_builder* b);
int sl_builder_append_nulls(struct sl_builder* b, int64_t n);

/// Ends one list / large_list / map / fixed_size_list element (valid) whose
/// items were appended to child 0 since the previous element.
int sl_builder_list_finish(struct sl_builder* b);
/// For symmetry with list_finish; list elements need no set-up.
static inline int sl_builder_list_start(struct sl_builder* b) {
  (void)b;
  return 0;
}
/// Ends one valid struct row (each child got one value) / `n` rows.
int sl_builder_struct_finish(struct sl_builder* b);
int sl_builder_struct_finish_rows(struct sl_builder* b, int64_t n);
/// The child index for a union type code, or -1 if the code is not declared.
static inline int sl_builder_union_child(const struct sl_builder* b, int8_t type_code) {
  return type_code >= 0 ? b->child_of_code[type_code] : -1;
}
/// Ends one union value whose value was appended to the child of `type_code`.
int sl_builder_union_finish(struct sl_builder* b, int8_t type_code);

/// Decimal from a big-endian two's complement integer of `n` bytes (Avro,
/// Parquet FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY decimals); sign-extended.
/// EOVERFLOW if it does not fit the column's width.
int sl_builder_append_decimal_be(struct sl_builder* b, const uint8_t* be, int64_t n);
/// Decimal from an unscaled int64 (Parquet INT32/INT64 decimals).
int sl_builder_append_decimal_int64(struct sl_builder* b, int64_t unscaled);

/// Appends `n` valid fixed-width values stored contiguously (memcpy; bool not
/// included). For PLAIN-encoded pages and the like.
int sl_builder_append_values(struct sl_builder* b, const void* values, int64_t n);

/// Writing fixed-width values in place: after sl_builder_reserve(b, n), a
/// caller may store up to n values from sl_builder_values_end(b) on, then
/// commit the first `n` of them as valid in one call (a parser filling
/// several columns per row keeps its write positions in registers instead
/// of updating each builder per value).
static inline uint8_t* sl_builder_values_end(struct sl_builder* b) {
  return b->values.data + b->values.size;
}
void sl_builder_commit_values(struct sl_builder* b, int64_t n);

/// Appends `n` fixed-width slots from `values` (n * value_width bytes, as for
/// sl_builder_append_values) where slot i is null if `valid[i]` is 0 (one byte
/// per slot; NULL means all valid). Null slots' bytes are copied too.
int sl_builder_append_values_valid(struct sl_builder* b, const void* values,
                                   const uint8_t* valid, int64_t n);

/* ---- inline fast paths ------------------------------------------------------- */

static inline void sl_builder_mark_valid_(struct sl_builder* b) {
  if (b->validity.data != NULL) {
    b->validity.data[b->length >> 3] |= (uint8_t)(1u << (b->length & 7));
  }
  b->length++;
}

// One checked wrapper and one unsafe append per C type; all fixed-width types
// of that width share them (date32/time32 use int32, timestamps int64, ...).
#define SL_BUILDER_FIXED(name, ctype)                                                 \
  static inline void sl_builder_append_##name##_unsafe(struct sl_builder* b, ctype v) { \
    assert(b->value_width == (int32_t)sizeof v && b->length < b->capacity);          \
    memcpy(b->values.data + b->values.size, &v, sizeof v);                           \
    b->values.size += (int64_t)sizeof v;                                              \
    sl_builder_mark_valid_(b);                                                        \
  }                                                                                   \
  static inline int sl_builder_append_##name(struct sl_builder* b, ctype v) {          \
    if (b->length >= b->capacity) {                                                   \
      int rc_ = sl_builder_reserve(b, 1);                                             \
      if (rc_ != 0) return rc_;                                                       \
    }                                                                                 \
    sl_builder_append_##name##_unsafe(b, v);                                          \
    return 0;                                                                         \
  }

SL_BUILDER_FIXED(int8, int8_t)
SL_BUILDER_FIXED(uint8, uint8_t)
SL_BUILDER_FIXED(int16, int16_t)
SL_BUILDER_FIXED(uint16, uint16_t)  ///< also halffloat bits
SL_BUILDER_FIXED(int32, int32_t)    ///< also date32, time32, month interval
SL_BUILDER_FIXED(uint32, uint32_t)
SL_BUILDER_FIXED(int64, int64_t)    ///< also date64, time64, timestamp, duration
SL_BUILDER_FIXED(uint64, uint64_t)
SL_BUILDER_FIXED(float, float)
SL_BUILDER_FIXED(double, double)
#undef SL_BUILDER_FIXED

static inline void sl_builder_append_bool_unsafe(struct sl_builder* b, int v) {
  assert(b->type.id == SL_TYPE_BOOL && b->length < b->capacity);
  if (v) b->values.data[b->length >> 3] |= (uint8_t)(1u << (b->length & 7));
  sl_builder_mark_valid_(b);
}
static inline int sl_builder_append_bool(struct sl_builder* b, int v) {
  if (b->length >= b->capacity) {
    int rc = sl_builder_reserve(b, 1);
    if (rc != 0) return rc;
  }
  sl_builder_append_bool_unsafe(b, v);
  return 0;
}

/// fixed_size_binary, decimal128/256 (little-endian), intervals: copies
/// value_width bytes.
static inline void sl_builder_append_fixed_unsafe(struct sl_builder* b, const void* v) {
  assert(b->values.data != NULL && b->length < b->capacity);
  memcpy(b->values.data + b->values.size, v, (size_t)b->value_width);
  b->values.size += b->value_width;
  sl_builder_mark_valid_(b);
}
static inline int sl_builder_append_fixed(struct sl_builder* b, const void* v) {
  if (b->length >= b->capacity) {
    int rc = sl_builder_reserve(b, 1);
    if (rc != 0) return rc;
  }
  sl_builder_append_fixed_unsafe(b, v);
  return 0;
}

/// binary, large_binary, utf8, large_utf8 (the bytes are not checked for UTF-8).
static inline void sl_builder_append_binary_unsafe(struct sl_builder* b, const void* data,
                                                   int64_t n) {
  assert(b->offset_width != 0 && b->length < b->capacity &&
         b->extra.capacity - b->extra.size >= n);
  if (n > 0) memcpy(b->extra.data + b->extra.size, data, (size_t)n);
  b->extra.size += n;
  uint8_t* slot = b->values.data + (b->length + 1) * b->offset_width;
  if (b->offset_width == 4) {
    int32_t end = (int32_t)b->extra.size;
    memcpy(slot, &end, 4);
  } else {
    int64_t end = b->extra.size;
    memcpy(slot, &end, 8);
  }
  sl_builder_mark_valid_(b);
}
static inline int sl_builder_append_binary(struct sl_builder* b, const void* data, int64_t n) {
  if (b->length >= b->capacity) {
    int rc = sl_builder_reserve(b, 1);
    if (rc != 0) return rc;
  }
  if (b->extra.capacity - b->extra.size < n ||
      (b->offset_width == 4 && n > INT32_MAX - b->extra.size)) {
    int rc = sl_builder_reserve_bytes(b, n);
    if (rc != 0) return rc;
  }
  sl_builder_append_binary_unsafe(b, data, n);
  return 0;
}
static inline int sl_builder_append_string(struct sl_builder* b, const char* s) {
  return sl_builder_append_binary(b, s, (int64_t)strlen(s));
}

#endif
