// Shared state of the Arrow IPC reader: the parsed schema (an ArrowSchema plus
// a parallel tree describing how each field's buffers are laid out in a
// message body), the dictionary memo, and the decoders that turn
// RecordBatch / DictionaryBatch messages into ArrowArray trees.
#ifndef SL_IPC_INTERNAL_H
#define SL_IPC_INTERNAL_H

#include <stdint.h>

#include "sluice.h"
#include "core/sl_buffer.h"
#include "core/sl_ref.h"
#include "fb_read.h"
#include "format/sl_format.h"

/// Deepest nesting of fields accepted: bounds recursion on hostile input.
#define IPC_MAX_DEPTH 64

/// How a field's array sits in the body: which buffers, which children.
enum ipc_kind {
  IPC_KIND_NULL,          ///< no buffers
  IPC_KIND_FIXED,         ///< validity, values (bit_width bits each)
  IPC_KIND_VARBIN,        ///< validity, offsets (offset_width), data
  IPC_KIND_LIST,          ///< validity, offsets (offset_width); one child
  IPC_KIND_FIXED_LIST,    ///< validity; one child of list_size per slot
  IPC_KIND_STRUCT,        ///< validity; children
  IPC_KIND_SPARSE_UNION,  ///< [validity before V5], type ids; children
  IPC_KIND_DENSE_UNION,   ///< [validity before V5], type ids, offsets; children
  // Not decoded (sluice has no such arrays): laid out only so that a
  // projection can step over them.
  IPC_KIND_RUN_END,       ///< no buffers; run ends and values children
  IPC_KIND_LIST_VIEW,     ///< validity, offsets, sizes (offset_width); one child
};

struct ipc_field {
  enum ipc_kind kind;
  int32_t bit_width;     ///< FIXED: bits per value (1 = bool)
  /// FIXED: bits per value in the body when they differ from bit_width
  /// (decimal32 / decimal64 read as decimal128), else 0.
  int32_t stored_width;
  int32_t offset_width;  ///< VARBIN / LIST: 4 or 8 bytes
  /// VARBIN read from a BinaryView / Utf8View field: the body holds validity,
  /// 16-byte views and variadic data buffers, decoded into offsets + data.
  int is_view;
  /// This subtree holds a field the decoder cannot read (IPC_KIND_RUN_END /
  /// IPC_KIND_LIST_VIEW): its column can be left out of a projection, not
  /// read (sl_ipc_unsupported_error says why).
  int unsupported;
  /// Dictionary id when the field is dictionary-encoded (then kind/bit_width
  /// describe the indexes and dict_value the values), else -1.
  int64_t dict_id;
  struct ipc_field* dict_value;
  int64_t n_children;
  struct ipc_field* children;
  /// Field nodes / buffers (counted the V5 way) / union nodes in this subtree
  /// of a record batch, and where this field's subtree starts among its
  /// siblings': what projection needs to skip columns.
  int64_t n_nodes, n_buffers, n_unions;
  int64_t node_start, buffer_start, union_start;
  /// View fields in this subtree and before it among its siblings': each has
  /// an entry in a record batch's variadicBufferCounts, in this order.
  int64_t n_views, view_start;
};

/// A dictionary the schema refers to: its id and its value type.
struct ipc_dict_decl {
  int64_t id;
  char column[160];  ///< path of the (first) field using it, for messages
  const struct ipc_field* value;
  const struct ArrowSchema* value_schema;
};

struct ipc_schema {
  struct ArrowSchema schema;  ///< "+s", one child per field
  struct ipc_field root;      ///< STRUCT, one child per field
  int16_t version;            ///< MetadataVersion of the schema message/footer
  int64_t n_dicts;
  struct ipc_dict_decl* dicts;
  const struct sluice_allocator* alloc;
};

/// Where a message came from, for error messages.
struct ipc_where {
  const char* name;  ///< object name (source->name)
  int64_t offset;    ///< byte offset of the message in the object
};

/// sl_ipc_schema_parse flag: the schema only describes types (Parquet's
/// ARROW:schema), no IPC bodies follow, so types the IPC decoder cannot read
/// (binary/utf8 views, 32/64-bit decimals) are described by their format
/// strings instead of rejected.
#define IPC_SCHEMA_TYPES_ONLY 1u

/// Parses a Schema table. `fb` is the flatbuffer it lives in (for reporting).
/// On error `out` is left reset. EILSEQ / ENOTSUP / ENOMEM.
int sl_ipc_schema_parse(const struct fb_table* schema_table, int16_t version, unsigned flags,
                     const struct sluice_allocator* alloc, const struct ipc_where* where,
                     struct ipc_schema* out, struct sluice_error* error);
void sl_ipc_schema_reset(struct ipc_schema* schema);

/// How much of a field of column `col` a read keeps, given the struct
/// fields the scan keeps (sl_split_fields, NULL = none): the field's path of
/// struct child indexes is at[1..depth] (depth 0 = the column itself), and
/// its parent is kept in part (IPC_USE_SOME) unless depth is 0.
enum ipc_use {
  IPC_USE_NONE,  ///< not decoded: the scan drops it (read as nulls)
  IPC_USE_SOME,  ///< a struct of which only some fields are kept
  IPC_USE_ALL,   ///< decoded whole
};
enum ipc_use sl_ipc_field_use(const struct sl_split_fields* fields, int64_t col,
                              const int64_t* at, int64_t depth);

/// ENOTSUP naming the first field of top-level column `col` whose type the
/// decoder cannot read (its path and type) among those a read with `fields`
/// decodes (sl_ipc_field_use); 0 if there is none.
int sl_ipc_unsupported_error(const struct ipc_schema* schema, int64_t col,
                             const struct sl_split_fields* fields, const char* name,
                             struct sluice_error* error);

/// Index of the dictionary declaration with `id`, or -1.
int64_t sl_ipc_schema_find_dict(const struct ipc_schema* schema, int64_t id);

/// Turns an fb_buf failure into an EILSEQ error naming object and offset.
int sl_ipc_fb_error(const struct fb_buf* fb, const struct ipc_where* where, const char* what,
                 struct sluice_error* error);

/* ---- Messages ------------------------------------------------------------ */

/// A parsed Message flatbuffer. Holds pointers into the metadata bytes;
/// do not copy the struct (tables point at its fb member).
struct ipc_message {
  struct fb_buf fb;
  struct fb_table message;
  struct fb_table header;  ///< the Schema / RecordBatch / DictionaryBatch table
  int16_t version;
  uint8_t header_type;     ///< enum ipc_message_header
  int64_t body_length;
};

/// Parses the flatbuffer of a Message (`meta`, `len` bytes, framing already
/// removed).
int sl_ipc_message_parse(const uint8_t* meta, size_t len, const struct ipc_where* where,
                      struct ipc_message* out, struct sluice_error* error);

/// Encodes the [KeyValue] vector at `slot` of `t` into `out` in the C Data
/// Interface metadata layout (out->size = 0 when absent or empty). 0, -1 if
/// malformed, ENOMEM.
int sl_ipc_read_kv_metadata(const struct fb_table* t, int slot, struct sl_buffer* out);
/// The Message's custom_metadata into `out` (size 0 when it has none).
int sl_ipc_message_metadata(const struct ipc_message* msg, struct sl_buffer* out,
                         const struct ipc_where* where, struct sluice_error* error);

/// Reads the framing prefix at `p` (n bytes available, n >= 8 preferred):
/// sets *prefix (4 or 8 bytes) and *meta_len (flatbuffer bytes incl. padding;
/// 0 = end of stream). EILSEQ on a negative length.
int sl_ipc_frame_prefix(const uint8_t* p, int64_t n, int64_t* prefix, int64_t* meta_len,
                     const struct ipc_where* where, struct sluice_error* error);

/* ---- Dictionaries -------------------------------------------------------- */

/// A decoded dictionary shared by every batch that refers to it: batches get
/// a tree of views that retain `ref`.
struct ipc_dict_value {
  struct sl_ref ref;
  const struct sluice_allocator* alloc;
  struct ArrowArray array;
};

/// A buffer that dictionary deltas are appended to in place: `size` bytes
/// used of `cap`, kept alive by `owner` (one reference is the memo's, one
/// more per array viewing it). Growing it moves the bytes to a new block and
/// leaves the old one to the arrays that still view it.
struct ipc_grow_buf {
  uint8_t* data;
  size_t size, cap;
  struct sl_ref* owner;
};

/// The values of a dictionary that has received deltas, with room to append
/// the next ones: each ipc_dict_value is a view of its first `length`
/// values, which never change. Unused (active = 0) until a delta comes, and
/// for values holding dictionaries or unions. A list's or struct's children
/// grow in `children` (their `active` unused).
struct ipc_dict_grow {
  int active;
  int has_validity;  ///< buffer 0 holds validity bits (some value was null)
  int64_t length, null_count;
  struct ipc_grow_buf buf[3];  ///< validity, values / offsets, data
  int64_t n_children;
  struct ipc_dict_grow* children;
};

/// The current dictionary of each declaration (parallel to schema->dicts;
/// NULL until a DictionaryBatch defines it).
struct ipc_dict_memo {
  int64_t n;
  struct ipc_dict_value** values;
  struct ipc_dict_grow* grow;  ///< parallel to values
};

int sl_ipc_dict_memo_init(struct ipc_dict_memo* memo, const struct ipc_schema* schema,
                       struct sluice_error* error);
void sl_ipc_dict_memo_reset(struct ipc_dict_memo* memo, const struct sluice_allocator* alloc);

/// A message body: bytes plus the ref that keeps them alive (may be NULL
/// only for bytes that are static).
struct ipc_body {
  const uint8_t* data;
  int64_t size;
  struct sl_ref* owner;
};

/// Applies a DictionaryBatch message (replace or delta) to `memo`. A delta
/// for an id without a dictionary is an error; so is a replacement when
/// `file_block` (the message's index among a file's dictionary blocks; -1
/// in a stream) is set.
int sl_ipc_dict_apply(const struct ipc_schema* schema, struct ipc_dict_memo* memo,
                   const struct ipc_message* msg, const struct ipc_body* body,
                   int64_t file_block, const struct ipc_where* where,
                   struct sluice_error* error);

/// A tree of views of `src` (buffers retained through `owner`) in `dst`.
int sl_ipc_array_view(const struct ArrowArray* src, struct sl_ref* owner,
                   const struct sluice_allocator* alloc, struct ArrowArray* dst,
                   struct sluice_error* error);

/* ---- Record batches ------------------------------------------------------ */

/// Decodes a RecordBatch message into a struct array of the `columns`
/// (indexes of top-level fields, NULL = all) and validates it fully. The
/// struct fields `fields` leaves out (NULL = none) are not decoded: they
/// read as nulls of type null, whatever their type.
int sl_ipc_decode_record_batch(const struct ipc_schema* schema, const struct ipc_dict_memo* memo,
                            const struct ipc_message* msg, const struct ipc_body* body,
                            const int64_t* columns, int64_t n_columns,
                            const struct sl_split_fields* fields,
                            const struct ipc_where* where, struct ArrowArray* out,
                            struct sluice_error* error);

/// A byte range of a message body.
struct ipc_span {
  int64_t start, end;
};

/// The body bytes the buffers of each of the `columns` lie in, one span per
/// column (at most n_columns; columns without buffers or whose buffers are
/// all empty give none), unsorted: what a projected read of a record batch
/// has to fetch. Buffers outside the body are EILSEQ.
int sl_ipc_record_batch_spans(const struct ipc_schema* schema, const struct ipc_message* msg,
                           const int64_t* columns, int64_t n_columns,
                           const struct ipc_where* where, struct ipc_span* spans,
                           int64_t* n_spans, struct sluice_error* error);

/// Decodes the single column of a dictionary's RecordBatch (`rb` table) as
/// `field`/`schema`, attaching nested dictionaries from `memo`, validated.
/// Messages name it as the dictionary of `column`.
int sl_ipc_decode_dictionary_values(const struct ipc_schema* schema,
                                 const struct ipc_dict_memo* memo, const struct fb_table* rb,
                                 int16_t version, const struct ipc_body* body,
                                 const struct ipc_field* field,
                                 const struct ArrowSchema* field_schema, const char* column,
                                 const struct ipc_where* where, struct ArrowArray* out,
                                 struct sluice_error* error);

#endif
