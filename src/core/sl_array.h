// Generic ArrowArray / ArrowSchema nodes produced by sluice. One release
// function frees any node: its owned buffers, its children, its dictionary,
// and the references it holds on memory owned elsewhere (views).
#ifndef SL_ARRAY_H
#define SL_ARRAY_H

#include <stdint.h>
#include <string.h>

#include "sluice.h"
#include "sl_buffer.h"
#include "sl_ref.h"

/// Offset `i` of an int64 (`large`) or int32 offsets buffer, which need not
/// be aligned (a buffer read in place from a file).
static inline int64_t sl_offset_at(const void* offsets, int64_t i, int large) {
  if (large) {
    int64_t v;
    memcpy(&v, (const uint8_t*)offsets + i * 8, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, (const uint8_t*)offsets + i * 4, 4);
  return v;
}

/// Makes `out` a valid node with `n_buffers` NULL buffers and `n_children`
/// children that are allocated but empty (release == NULL) for the caller to
/// fill (e.g. with another sl_array_init). length/null_count/offset are 0.
/// On error `out` is left released (out->release == NULL).
int sl_array_init(struct ArrowArray* out, const struct sluice_allocator* alloc,
                  int64_t n_buffers, int64_t n_children, struct sluice_error* error);

/// Buffer `i` becomes `data`, owned by the node: freed with
/// sl_free_buffer(alloc, data, capacity) on release. `data` may be NULL.
void sl_array_set_buffer_owned(struct ArrowArray* array, int64_t i, void* data,
                               int64_t capacity);

/// Buffer `i` becomes a view of memory owned by `owner` (retained here,
/// released with the node). `owner` may be NULL when the memory is static.
void sl_array_set_buffer_view(struct ArrowArray* array, int64_t i, const void* data,
                              struct sl_ref* owner);

/// Buffer `i` becomes the bytes of `buf`, which is left empty: owned by the
/// node, or a view retaining the owner of a borrowed buffer.
void sl_array_take_buffer(struct ArrowArray* array, int64_t i, struct sl_buffer* buf);

/// Gives the node a dictionary node, allocated empty for the caller to fill.
int sl_array_alloc_dictionary(struct ArrowArray* array, struct sluice_error* error);

/// The ref that keeps buffer `i` of a sluice node alive (set by
/// sl_array_set_buffer_view), or NULL: owned buffers, static memory, foreign
/// nodes.
struct sl_ref* sl_array_buffer_owner(const struct ArrowArray* array, int64_t i);

/// Moves `*src` into `*dst` (dst must be released/empty); src becomes released.
void sl_array_move(struct ArrowArray* src, struct ArrowArray* dst);

/// The allocator a node was made with (NULL if the node is not sluice's).
const struct sluice_allocator* sl_array_allocator(const struct ArrowArray* array);

/// Whether a column list names some column more than once.
int sl_columns_repeat(const int64_t* columns, int64_t n_columns);

/// A struct-array view of `columns` (indexes into in->children) of a struct
/// array `in`, which is consumed (moved into out's ownership). Children not
/// selected are released; a column named twice is two views of one child.
int sl_array_project(struct ArrowArray* in, const int64_t* columns, int64_t n_columns,
                     const struct sluice_allocator* alloc, struct ArrowArray* out,
                     struct sluice_error* error);

/// `*column` (consumed) becomes `out`: its struct field at `path` (`depth`
/// child indexes, each into a struct node; 1..64), one row per row of the
/// column, null where the field or a struct on the way is null. Views of
/// the column's buffers but for the validity bitmap, made anew when a
/// struct on the way has nulls. The field must have a validity bitmap
/// (not a union).
int sl_array_struct_field(struct ArrowArray* column, const int64_t* path, int64_t depth,
                          const struct sluice_allocator* alloc, struct ArrowArray* out,
                          struct sluice_error* error);

/// Bytes reachable from the array's buffers (counting each buffer once at the
/// size its type implies for length+offset; used for the memory budget).
int64_t sl_array_byte_size(const struct ArrowSchema* schema, const struct ArrowArray* array);
/// What the memory budget charges for an array: sl_array_byte_size plus
/// SL_ARRAY_NODE_BYTES for each node (child, dictionary). A batch of one
/// row holds a few hundred bytes of structs and allocations per column,
/// so counting its data alone let a reader run thousands of tiny batches
/// past the budget.
int64_t sl_array_held_bytes(const struct ArrowSchema* schema, const struct ArrowArray* array);
/// An array node's own memory: the struct (80 bytes), its private block
/// and buffer pointers, and up to three allocations' headers and 64-byte
/// padding.
#define SL_ARRAY_NODE_BYTES 384

/// Moves `*array` into a new reference-counted holder so that several arrays
/// can share it (a dictionary that applies to many batches). `*shared`
/// receives the held array, valid while the returned ref lives. Returns NULL on
/// ENOMEM, leaving `*array` untouched (still the caller's).
struct sl_ref* sl_array_share(struct ArrowArray* array, const struct sluice_allocator* alloc,
                              const struct ArrowArray** shared);

/// Makes `out` a tree of nodes with the shape and lengths of `src` whose
/// buffers are views of src's, each retaining `owner` (the holder of `src`,
/// e.g. from sl_array_share). On error `out` is left released.
int sl_array_view(const struct ArrowArray* src, struct sl_ref* owner,
                  const struct sluice_allocator* alloc, struct ArrowArray* out,
                  struct sluice_error* error);

/* ---- Schema nodes ---------------------------------------------------------- */

/// Makes `out` a valid schema node: copies of `format` and `name` (name may be
/// NULL), flags, and `n_children` children allocated empty for the caller to
/// fill. On error `out` is left released.
int sl_schema_init(struct ArrowSchema* out, const struct sluice_allocator* alloc,
                   const char* format, const char* name, int64_t flags, int64_t n_children,
                   struct sluice_error* error);

/// Sets the node's metadata to a copy of an encoded metadata blob (the C Data
/// Interface binary layout: int32 count, then per pair int32 len + key bytes +
/// int32 len + value bytes). NULL clears it.
int sl_schema_set_metadata(struct ArrowSchema* schema, const char* metadata,
                           struct sluice_error* error);

/// Sets one entry of the node's metadata (a sluice-made node): `key` takes
/// `value`, replacing an entry of that key; the others stay, in order.
int sl_schema_put_metadata(struct ArrowSchema* schema, const char* key, const char* value,
                           struct sluice_error* error);

/// Marks the node as the Arrow extension type `name` ("arrow.uuid", ...):
/// its metadata becomes the extension name and an empty extension metadata.
int sl_schema_set_extension(struct ArrowSchema* schema, const char* name,
                            struct sluice_error* error);

/// Size in bytes of an encoded metadata blob (0 for NULL).
int64_t sl_metadata_size(const char* metadata);
/// The value of `key` in a C Data Interface metadata blob (NULL metadata
/// allowed), with its length in *value_len; NULL when the key is absent.
const char* sl_metadata_find(const char* metadata, const char* key, int32_t* value_len);
/// 1 when field metadata `metadata` names the extension type `name`
/// (ARROW:extension:name = "arrow.uuid", ...).
int sl_metadata_is_extension(const char* metadata, const char* name);
/// The entries of a metadata blob in order (NULL metadata has none).
struct sl_metadata_iter {
  const char* at;  ///< the next entry
  int32_t left;    ///< entries not yet given
};
void sl_metadata_iter_init(struct sl_metadata_iter* it, const char* metadata);
/// The next entry's key and value (negative lengths read as 0): 1, or 0
/// after the last.
int sl_metadata_iter_next(struct sl_metadata_iter* it, const char** key, int32_t* key_len,
                          const char** value, int32_t* value_len);

/// Gives the node a dictionary node, allocated empty for the caller to fill.
int sl_schema_alloc_dictionary(struct ArrowSchema* schema, struct sluice_error* error);

/// Deep copy of any schema (sluice's or another producer's) into `out`.
int sl_schema_copy(const struct ArrowSchema* src, const struct sluice_allocator* alloc,
                   struct ArrowSchema* out, struct sluice_error* error);

/// A struct schema with copies of the children `columns` of `in`.
int sl_schema_project(const struct ArrowSchema* in, const int64_t* columns,
                      int64_t n_columns, const struct sluice_allocator* alloc,
                      struct ArrowSchema* out, struct sluice_error* error);

#endif
