// Internal contracts of the Avro reader: the parsed writer schema (a DAG of
// nodes: named types are shared, recursion is refused), the compiled decoding
// program (a flat array of ops, one per value position, expanded from the DAG),
// the block codecs, and the value decoder.
#ifndef SL_AVRO_INTERNAL_H
#define SL_AVRO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/sl_builder.h"
#include "sluice.h"

/* ---- Schema ---------------------------------------------------------------- */

enum avro_kind {
  AVRO_NULL, AVRO_BOOLEAN, AVRO_INT, AVRO_LONG, AVRO_FLOAT, AVRO_DOUBLE, AVRO_BYTES,
  AVRO_STRING, AVRO_RECORD, AVRO_ENUM, AVRO_ARRAY, AVRO_MAP, AVRO_UNION, AVRO_FIXED
};

/// Logical types sluice maps to richer Arrow types. Unknown or invalid ones are
/// AVRO_LOGICAL_NONE (the spec says readers fall back to the underlying type).
enum avro_logical {
  AVRO_LOGICAL_NONE, AVRO_LOGICAL_DECIMAL, AVRO_LOGICAL_UUID, AVRO_LOGICAL_DATE,
  AVRO_LOGICAL_TIME_MS, AVRO_LOGICAL_TIME_US, AVRO_LOGICAL_TS_MS, AVRO_LOGICAL_TS_US,
  AVRO_LOGICAL_TS_NS, AVRO_LOGICAL_LOCAL_TS_MS, AVRO_LOGICAL_LOCAL_TS_US,
  AVRO_LOGICAL_LOCAL_TS_NS, AVRO_LOGICAL_DURATION
};

struct avro_node {
  enum avro_kind kind;
  enum avro_logical logical;
  int32_t precision, scale;   ///< decimal
  int64_t size;               ///< fixed
  int64_t enum_default;       ///< enum: index of its "default" symbol + 1 (0: none)
  char* name;                 ///< full name of a named type (record/enum/fixed), else NULL
  int64_t n;                  ///< fields / symbols / union branches; 1 for array, map
  struct avro_node** items;   ///< field types / branches / the item or value type
  char** names;               ///< field names or enum symbols (n of them)
  void** fields;              ///< record: each field's JSON object (json_t*, borrowed
                              ///< from avro_schema.json) for defaults and aliases
  int defining;               ///< named type being parsed: a reference to it is recursion
  void* json;                 ///< named type: its JSON object (json_t*, borrowed), for aliases
  /// The Arrow type sluice's writer noted ("sluice.arrow_type") where Avro's
  /// type is wider than the column's (int8 → int, large_utf8 → string,
  /// date64 → date, a zone's name, large_list → array): its format string,
  /// read back as that type; "" otherwise.
  char arrow_type[64];
};

/// The Avro name of a kind ("int", "record", ...), for messages.
const char* sl_avro_kind_name(enum avro_kind kind);

/// A parsed writer schema: owns every node.
struct avro_schema {
  const struct sluice_allocator* alloc;
  struct avro_node* root;
  struct avro_node** nodes;   ///< every node allocated, for release
  int64_t n_nodes, cap_nodes;
  int empty_record_name;      ///< a record named "" was accepted (polars writes them)
  void* json;                 ///< the parsed JSON (json_t*), kept for field defaults
};

/// Parses and validates the schema JSON (`n` bytes). EILSEQ with a message
/// naming the problem (the caller prefixes the object name).
int sl_avro_schema_parse(const char* json, size_t n, const struct sluice_allocator* alloc,
                      struct avro_schema* out, struct sluice_error* error);
void sl_avro_schema_release(struct avro_schema* s);

/// Is `node` a two-branch union with one "null" branch? Then *value is the
/// other branch and *null_index the null branch's index.
int sl_avro_node_nullable(const struct avro_node* node, const struct avro_node** value,
                       int* null_index);

/// The Arrow schema of the top-level columns (a struct): the record's fields,
/// or one column "value" when the top-level type is not a record. Metadata
/// carries the schema JSON as "avro.schema", then the n_user entries of
/// `user` (Arrow metadata pairs: the header's own keys).
int sl_avro_arrow_schema(const struct avro_schema* s, const char* json, size_t json_len,
                      const struct sl_buffer* user, int32_t n_user, struct ArrowSchema* out,
                      struct sluice_error* error);

/* ---- Program --------------------------------------------------------------- */

enum avro_op_kind {
  OP_NULL, OP_BOOL, OP_INT32, OP_INT64, OP_FLOAT, OP_DOUBLE, OP_BINARY, OP_FIXED, OP_ENUM,
  OP_RECORD, OP_ARRAY, OP_MAP, OP_NULLABLE, OP_UNION, OP_DEC_BYTES, OP_DEC_FIXED, OP_DURATION,
  // Reader schema resolution (avro_resolve.c); OP_INT_AS_LONG into a
  // time-micros reader has the day's length in op->size, as OP_TIME:
  OP_INT_AS_LONG, OP_INT_AS_FLOAT, OP_INT_AS_DOUBLE, OP_LONG_AS_FLOAT, OP_LONG_AS_DOUBLE,
  OP_FLOAT_AS_DOUBLE,
  // An int or long read into a narrower or unsigned column (arrow_type; the
  // format character in op->size), range-checked:
  OP_NARROW,
  // An int or long scaled into its arrow_type's unit (date → date64, millis →
  // seconds): op->size is the factor, negative to divide (exactly).
  OP_RESCALE,
  OP_HALF,  ///< a float read as float16 (arrow_type "e"); an error unless exact
  OP_TIME,  ///< time-millis / time-micros: an error outside [0, op->size), one day
  OP_ENUM_MAP,  ///< writer symbol index → reader index via an int32 table in the pool
  OP_DEFAULT,   ///< a reader-only field: kid 0 decodes the default's bytes from the pool
  OP_STRING,    ///< like OP_BINARY, and the bytes must be UTF-8 (Arrow utf8 requires it)
  OP_TO_BRANCH,   ///< writer non-union → reader union: kid 0 fills branch `size`
  OP_UNION_MAP,   ///< writer union → reader union: targets = reader branch per writer branch
  OP_UNION_TO_ONE ///< writer union → reader non-union: targets 0, or -1 for no match
};

struct avro_op {
  uint8_t kind;
  int8_t null_index;   ///< OP_NULLABLE: the branch index meaning null
  uint8_t null_error;  ///< OP_NULLABLE: the reader's type is not nullable: null is an error
  int32_t n_kids;      ///< children ops: fields, branches, item / value, nullable value
  int32_t kids;        ///< index of the first child in avro_program.kids
  int64_t size;        ///< fixed size; enum symbol count
  int64_t min_size;    ///< fewest bytes one value can take (0 for null, empty records)
  const struct avro_node* node;  ///< the schema node (enum symbols: the reader's)
  /// OP_RECORD under a reader schema: the writer's record, whose field names
  /// the kids follow (node is the reader's); OP_ENUM_MAP: the writer's enum
  /// (its symbols, for messages); NULL otherwise.
  const struct avro_node* writer;
  int64_t pool_off, pool_len;    ///< OP_DEFAULT bytes, OP_ENUM_MAP table
};

/// The writer schema compiled once: ops in pre-order, op 0 is the top-level
/// row (a record, or a one-field wrapper around a non-record root).
struct avro_program {
  const struct sluice_allocator* alloc;
  struct avro_op* ops;
  int64_t n_ops, cap_ops;
  int32_t* kids;
  /// Per kid of a record: the builder child it fills (-1: skipped). Equal to
  /// the kid's position unless a reader schema reorders or drops fields.
  int32_t* targets;
  int64_t n_kids, cap_kids;
  uint8_t* pool;  ///< constants: encoded defaults, enum maps
  int64_t n_pool, cap_pool;
  int out_of_memory;  ///< an op could not be added for want of memory, not room
  /// A writer's top-level union read as the reader schema's record: each row
  /// starts with the union's index, which must be this (its record branch)
  /// minus 1; 0 otherwise.
  int64_t root_branch;
  const struct avro_node* root_union;  ///< that writer union, for messages
};

/// Compiles `s` (EINVAL when the expansion passes a size limit: a DAG of named
/// types can blow up exponentially).
int sl_avro_program_build(const struct avro_schema* s, struct avro_program* out,
                       struct sluice_error* error);
void sl_avro_program_release(struct avro_program* p);

/// Compiles the writer schema `w` resolved against the reader schema `r`
/// (field matching by name and aliases, defaults, promotions, enum symbol
/// maps; the batches then have the reader's Arrow schema). EILSEQ naming the
/// field when the schemas cannot be resolved.
int sl_avro_program_build_resolved(const struct avro_schema* w, const struct avro_schema* r,
                                struct avro_program* out, struct sluice_error* error);

/* shared by avro_plan.c and avro_resolve.c */
int32_t sl_avro_program_new_op(struct avro_program* p, uint8_t kind, int64_t n_kids,
                            const struct avro_node* node);
int sl_avro_program_emit(struct avro_program* p, const struct avro_node* n, int32_t* out,
                      struct sluice_error* error);
/// The error of an op sl_avro_program_new_op could not add: ENOMEM, or EINVAL
/// when the program passed its size limit.
int sl_avro_program_too_big(const struct avro_program* p, struct sluice_error* error);
/// Appends bytes to the pool; returns their offset or -1 (ENOMEM).
int64_t sl_avro_program_pool_add(struct avro_program* p, const void* data, int64_t n);

/// Builder pointer for every op of the program (NULL = skip). `columns` select
/// top-level fields in the order of `root`'s children (NULL = all). Enum
/// dictionaries get their symbols and are frozen here.
int sl_avro_program_bind(const struct avro_program* p, struct sl_builder* root,
                      const int64_t* columns, int64_t n_columns, struct sl_builder** bld,
                      struct sluice_error* error);

/* ---- Decoding -------------------------------------------------------------- */

struct avro_decoder {
  const uint8_t* p;
  const uint8_t* end;
  const struct avro_program* prog;
  struct sl_builder** bld;
  /// Values that take no bytes (nulls, empty records) cannot be bounded by
  /// the data, so a split gets a budget of them: a forged count fails fast
  /// instead of spinning.
  int64_t empty_left;
};

/// A zigzag varint (an Avro int or long) at *p, before `end`: 0 with *p
/// moved past it; 1 when the bytes end first; 2 when it is longer than 10
/// bytes. The one varint decoder over memory (block data and headers).
static inline int avro_zigzag(const uint8_t** p, const uint8_t* end, int64_t* out) {
  const uint8_t* q = *p;
  uint64_t v = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (q >= end) return 1;
    uint8_t b = *q++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *p = q;
      *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
      return 0;
    }
  }
  return 2;
}

/// The budget of byte-less values per split (objects and array or map items
/// of only nulls and empty records): their count is all a block says of
/// them, so a few bytes could claim 10^12 of them, hours of decoding. At
/// about 14 ns a value this is 4 s a split; 2^26 refused a valid file of
/// 80 million null rows that fastavro reads.
#define AVRO_MAX_EMPTY_VALUES (INT64_C(1) << 28)

/// Decodes one top-level object (row) into the bound builders; the caller
/// finishes the root struct row(s). Errors carry only the reason; the caller
/// prefixes the file, block and offset.
int sl_avro_decode_row(struct avro_decoder* d, struct sluice_error* error);
/// sl_avro_decode_row `n` times; *done: the rows decoded whole.
int sl_avro_decode_rows(struct avro_decoder* d, int64_t n, int64_t* done, struct sluice_error* error);

/// Whether `n` top-level objects fill [p, end) exactly, skipped rather than
/// decoded (1 = yes; also when objects may take no bytes, which the data
/// cannot bound): how a block after a copy of the sync marker in data is
/// told from a real one.
int sl_avro_objects_fill(const struct avro_program* prog, const uint8_t* p, const uint8_t* end,
                         int64_t n);

/// The most fields sl_avro_decode_flat_rows takes.
#define AVRO_FLAT_MAX 64
/// 1 when every top-level field is a bound int, long, float or double (no
/// unions, nothing skipped): sl_avro_decode_flat_rows may decode the rows.
int sl_avro_flat_row(const struct avro_decoder* d);
/// Decodes `n` rows of a flat record (sl_avro_flat_row) straight into the
/// columns; the general path when a column is nullable or lacks room for `n`.
/// *done: the rows decoded whole (on error, the failing row's index).
int sl_avro_decode_flat_rows(struct avro_decoder* d, int64_t n, int64_t* done,
                          struct sluice_error* error);

/* ---- Codecs ---------------------------------------------------------------- */

/// AVRO_CODEC_LZMA is avro-c's codec "lzma" (not in the spec): one raw LZMA2
/// stream per block, no container, with the dictionary of xz preset 6 (8 MiB).
enum avro_codec { AVRO_CODEC_NULL, AVRO_CODEC_DEFLATE, AVRO_CODEC_SNAPPY, AVRO_CODEC_ZSTD,
                  AVRO_CODEC_BZIP2, AVRO_CODEC_XZ, AVRO_CODEC_LZMA };

/// The LZMA2 options avro-c's "lzma" codec uses (preset 6, so an 8 MiB
/// dictionary; a larger one could fail in avro-c's decoder). 0 or EINVAL.
int sl_avro_lzma_options(int level, void* lzma_options_lzma_out);

/// EINVAL with a message for an unknown codec name (`n` bytes, not NUL-terminated).
int sl_avro_codec_from_name(const char* name, size_t n, enum avro_codec* out,
                         struct sluice_error* error);

/// Blocks are decoded whole in memory; beyond this a file is not sane input
/// (and 32-bit lengths inside codecs would overflow).
#define AVRO_MAX_BLOCK ((size_t)1 << 34)
/// max_block_bytes's floor, as CSV's max_row_bytes's: the default memory budget.
#define AVRO_MIN_BLOCK_LIMIT ((int64_t)256 << 20)

/// A growable output buffer for decompressed blocks, reused across blocks.
struct avro_buf {
  uint8_t* data;
  size_t size, cap;
};
void sl_avro_buf_release(struct avro_buf* b, const struct sluice_allocator* alloc);
/// Ensures `want` bytes of capacity (contents up to size preserved); EFBIG
/// past the block size limit.
int sl_avro_buf_reserve(struct avro_buf* b, size_t want, const struct sluice_allocator* alloc,
                     struct sluice_error* error);

/// Decompresses one block into `out` (size = decompressed bytes), stopping
/// as soon as more than `limit` (at most AVRO_MAX_BLOCK) bytes come out, or
/// a size the data declare passes it: ERANGE then, `out` never grown past
/// `limit` bytes. Errors carry only the reason.
int sl_avro_decompress(enum avro_codec codec, const uint8_t* in, size_t n, size_t limit,
                       struct avro_buf* out, const struct sluice_allocator* alloc,
                       struct sluice_error* error);

#endif
