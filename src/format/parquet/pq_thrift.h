// A small Thrift *compact protocol* reader and writer, enough for Parquet
// metadata (parquet.thrift). Written by hand because Debian's Thrift C library
// (libthrift-c-glib) is GObject-based, pulls in glib, allocates outside the
// sluice allocator and does not bound what hostile input may ask for.
//
// Reader: a cursor over (data, size, pos). Every length and element count is
// checked against the bytes that remain, varints are overflow-checked per
// width, and skipping unknown fields is bounded by PQ_THRIFT_MAX_DEPTH.
// Errors are EINVAL with the byte offset of the bad value.
// Writer: appends to a struct sl_buffer; the caller tracks the last field id
// of each open struct (struct pq_thrift_writer keeps a small stack).
#ifndef PQ_THRIFT_H
#define PQ_THRIFT_H

#include <stdint.h>

#include "sluice.h"
#include "../../core/sl_buffer.h"

/// Nesting limit for structs/lists/maps, both when parsing known structures
/// and when skipping unknown ones.
#define PQ_THRIFT_MAX_DEPTH 64

enum pq_thrift_type {
  PQ_TT_STOP = 0, PQ_TT_BOOL_TRUE = 1, PQ_TT_BOOL_FALSE = 2, PQ_TT_BYTE = 3, PQ_TT_I16 = 4,
  PQ_TT_I32 = 5, PQ_TT_I64 = 6, PQ_TT_DOUBLE = 7, PQ_TT_BINARY = 8, PQ_TT_LIST = 9,
  PQ_TT_SET = 10, PQ_TT_MAP = 11, PQ_TT_STRUCT = 12,
};

struct pq_thrift_reader {
  const uint8_t* data;
  int64_t size;
  int64_t pos;
  int depth;                  ///< open structs/containers
  struct sluice_error* error;
};

void sl_pq_thrift_reader_init(struct pq_thrift_reader* r, const uint8_t* data, int64_t size,
                           struct sluice_error* error);

/// Reads a field header. *type = PQ_TT_STOP at the end of the struct. For
/// booleans, *type is PQ_TT_BOOL_TRUE / PQ_TT_BOOL_FALSE (the value is in the
/// header). `*last_id` is the previous field id of this struct (0 at start)
/// and is updated.
int sl_pq_thrift_field(struct pq_thrift_reader* r, int16_t* last_id, int16_t* id, int* type);

/// Enter/leave a nested struct (depth accounting only).
int sl_pq_thrift_struct_begin(struct pq_thrift_reader* r);
void sl_pq_thrift_struct_end(struct pq_thrift_reader* r);

int sl_pq_thrift_read_byte(struct pq_thrift_reader* r, int8_t* out);
int sl_pq_thrift_read_i16(struct pq_thrift_reader* r, int16_t* out);
int sl_pq_thrift_read_i32(struct pq_thrift_reader* r, int32_t* out);
int sl_pq_thrift_read_i64(struct pq_thrift_reader* r, int64_t* out);
int sl_pq_thrift_read_double(struct pq_thrift_reader* r, double* out);
/// A view of the bytes (into r->data).
int sl_pq_thrift_read_binary(struct pq_thrift_reader* r, const uint8_t** data, int64_t* size);
/// A bool list element (one byte).
int sl_pq_thrift_read_bool_element(struct pq_thrift_reader* r, int* out);
/// List/set header; the count is checked against the bytes left (each
/// element takes at least one byte, bools and structs included).
int sl_pq_thrift_list_begin(struct pq_thrift_reader* r, int* elem_type, int64_t* count);

/// Reads an integer field of type `type` (BYTE, I16, I32 or I64) as int64,
/// so that writers that widen or narrow a field are accepted. EINVAL otherwise.
int sl_pq_thrift_read_int(struct pq_thrift_reader* r, int type, int64_t* out);

/// Skips one value of `type` (any type; nested values bounded by depth).
int sl_pq_thrift_skip(struct pq_thrift_reader* r, int type);

/// Fails with EINVAL naming the offset: "<what> at byte N: <why>".
int sl_pq_thrift_fail(struct pq_thrift_reader* r, const char* what, const char* why);

struct pq_thrift_writer {
  struct sl_buffer* out;
  int16_t last_id[PQ_THRIFT_MAX_DEPTH];
  int depth;
  int status;   ///< first error (ENOMEM, ERANGE, EINVAL); later calls do nothing
};

void sl_pq_thrift_writer_init(struct pq_thrift_writer* w, struct sl_buffer* out);
/// Field header for a non-bool field.
void sl_pq_thrift_write_field(struct pq_thrift_writer* w, int16_t id, int type);
void sl_pq_thrift_write_bool_field(struct pq_thrift_writer* w, int16_t id, int value);
void sl_pq_thrift_write_i32_field(struct pq_thrift_writer* w, int16_t id, int32_t value);
void sl_pq_thrift_write_i64_field(struct pq_thrift_writer* w, int16_t id, int64_t value);
void sl_pq_thrift_write_binary_field(struct pq_thrift_writer* w, int16_t id, const uint8_t* data,
                                  int64_t size);
/// Begins a struct value (after its field header or as a list element);
/// sl_pq_thrift_write_struct_end writes the STOP byte.
void sl_pq_thrift_write_struct_begin(struct pq_thrift_writer* w);
void sl_pq_thrift_write_struct_end(struct pq_thrift_writer* w);
/// A struct-typed field whose value is an empty struct (union members).
void sl_pq_thrift_write_empty_struct_field(struct pq_thrift_writer* w, int16_t id);
void sl_pq_thrift_write_list_begin(struct pq_thrift_writer* w, int elem_type, int64_t count);
void sl_pq_thrift_write_varint(struct pq_thrift_writer* w, uint64_t value);
void sl_pq_thrift_write_zigzag(struct pq_thrift_writer* w, int64_t value);
void sl_pq_thrift_write_binary(struct pq_thrift_writer* w, const uint8_t* data, int64_t size);

#endif
