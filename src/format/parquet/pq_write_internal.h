// Internals shared by the Parquet writer's files: the leaf columns an Arrow
// schema flattens into (pq_write_schema.c), the levels and dense values of one
// leaf over a row group (pq_write_levels.c), and the encoding of one column
// chunk into pages (pq_write_column.c). parquet_writer.c drives them.
#ifndef PQ_WRITE_INTERNAL_H
#define PQ_WRITE_INTERNAL_H

#include <stdint.h>

#include "sluice.h"
#include "core/sl_buffer.h"
#include "core/sl_type.h"
#include "format/parquet/pq_codec.h"
#include "format/parquet/pq_meta.h"

/// One Arrow node on the way from a top-level column down to a leaf.
enum pqw_step_kind { PQW_STRUCT, PQW_LIST, PQW_LARGE_LIST, PQW_FIXED_LIST, PQW_MAP, PQW_LEAF };

struct pqw_step {
  enum pqw_step_kind kind;
  int nullable;        ///< Parquet OPTIONAL: a null here is one definition level
  int64_t child;       ///< struct: child index; map: 0 = key, 1 = value
  int32_t list_size;   ///< fixed_size_list
  int16_t rep_level;   ///< list / map: repetition level of its elements
};

/// How Arrow values become Parquet physical values.
enum pqw_conv {
  PQW_CV_NULL, PQW_CV_BOOL,
  PQW_CV_I32_FROM_INT,   ///< int8/16, uint8/16 widened
  PQW_CV_I32,            ///< int32, uint32, date32, time32[ms] (copied)
  PQW_CV_I32_DATE64,     ///< date64 ms -> days
  PQW_CV_I32_TIME_S,     ///< time32[s] -> ms
  PQW_CV_I64,            ///< int64, uint64, time64, timestamp, duration (copied)
  PQW_CV_I64_MUL1000,    ///< timestamp[s] -> ms
  PQW_CV_F32, PQW_CV_F64,
  PQW_CV_FLBA,           ///< fixed_size_binary, halffloat (copied)
  PQW_CV_DECIMAL,        ///< decimal128/256 LE -> big-endian, type_length bytes
  PQW_CV_BYTES32, PQW_CV_BYTES64,  ///< binary/utf8, large_*
};

/// The order statistics use (parquet.thrift ColumnOrder / SortOrder).
enum pqw_order { PQW_ORD_NONE, PQW_ORD_SIGNED, PQW_ORD_UNSIGNED, PQW_ORD_BYTES,
                 PQW_ORD_FLOAT, PQW_ORD_FLOAT16, PQW_ORD_DECIMAL_BE };

struct pqw_leaf {
  struct pqw_step* steps;  ///< steps[0] = the top-level column ... steps[n-1] = leaf
  int n_steps;
  int64_t column;          ///< top-level column index
  int16_t max_def, max_rep;
  enum pq_physical_type type;
  int32_t type_length;     ///< FIXED_LEN_BYTE_ARRAY width
  enum pqw_conv conv;
  enum pqw_order order;
  struct sl_type value_type;  ///< of the values (a dictionary's value type)
  int is_dict;                ///< leaf arrays are dictionary-encoded
  struct sl_type index_type;  ///< dictionary indices
  const struct ArrowSchema* dict_field;  ///< that dictionary field (of the writer's schema)
  struct pq_bytes* path;      ///< path_in_schema (names borrowed)
  int64_t n_path;
  char* name;                 ///< "a.list.element" for messages (owned)
  int bloom;                  ///< write a Bloom filter of its values (-W bloom_filters)
};

/// The flattened schema: Parquet schema elements and leaves.
struct pqw_schema {
  const struct sluice_allocator* alloc;
  struct pq_schema_element* elements;
  int64_t n_elements, cap_elements;
  struct pqw_leaf* leaves;
  int64_t n_leaves, cap_leaves;
};

/// Builds the Parquet schema for `root` (a struct schema, kept alive by the
/// caller: names and time zones are borrowed). ENOTSUP names a column whose
/// type Parquet cannot hold.
int sl_pqw_schema_build(struct pqw_schema* s, const struct ArrowSchema* root,
                     const struct sluice_allocator* alloc, struct sluice_error* error);
void sl_pqw_schema_free(struct pqw_schema* s);

/// A range of rows of one input batch (a struct array) in a row group.
struct pqw_slice {
  const struct ArrowArray* batch;
  int64_t row, n_rows;
  int64_t input_row;  ///< its first row as the input counts it (errors name rows from it)
};

/// A byte-array value (points into the input batch).
struct pqw_ba {
  const uint8_t* ptr;
  int64_t len;
};

/// One leaf over a row group: levels and the dense (non-null) values in
/// physical form. Reused from chunk to chunk (sizes reset, memory kept).
struct pqw_column_data {
  struct sl_buffer def, rep;   ///< int16 levels (only when max_def / max_rep > 0)
  int64_t n_levels;
  struct sl_buffer values;     ///< fixed-width physical values, or struct pqw_ba
  /// The values to encode: values.data, or (one flat slice without nulls
  /// whose Arrow layout is already the physical one) the Arrow buffer itself.
  const uint8_t* vdata;
  int64_t n_values;
  int64_t null_count;
  int64_t n_rows;
  struct sl_buffer runs;       ///< scratch: (start, count) runs of value positions
  /// A dictionary leaf: the non-null values of the first dictionary met,
  /// converted as `values` (n_seed of them). The chunk's Parquet dictionary
  /// starts with them, so that it keeps the Arrow dictionary's order and its
  /// unused values (a pandas categorical's categories), as Arrow C++ writes.
  struct sl_buffer seed;
  int64_t n_seed;
  int seeded;
};

void sl_pqw_column_data_init(struct pqw_column_data* d, const struct sluice_allocator* alloc);
void sl_pqw_column_data_free(struct pqw_column_data* d);

/// The first rows of a row group folded out of the batches they came in
/// (sl_pqw_acc_fold), so that those batches need not be held: tiny batches
/// cost more held than their rows, and batches of a dictionary-delta stream
/// each hold the whole dictionary so far. A leaf's levels and values as
/// sl_pqw_column_data_fill makes them, with byte-array values (and the
/// seed) copied into `bytes`: their ptr fields hold offsets into it. A
/// dictionary leaf's values are stored once each, however many rows use them.
struct pqw_acc {
  struct pqw_column_data data;
  struct sl_buffer bytes;
  struct sl_buffer distinct;  ///< dictionary leaves: struct pqw_ba (offset) per value stored
  struct sl_buffer table;     ///< hash slots over `distinct` (uint32 entry + 1, 0 = empty)
};

void sl_pqw_acc_init(struct pqw_acc* a, const struct sluice_allocator* alloc);
void sl_pqw_acc_free(struct pqw_acc* a);
/// Appends the levels and values of `leaf` over the slices to `a`, copying
/// what they point to, so that the slices' batches can be released.
int sl_pqw_acc_fold(struct pqw_acc* a, const struct pqw_leaf* leaf,
                    const struct pqw_slice* slices, int64_t n_slices, struct sluice_error* error);
/// About the bytes of the dictionary of `leaf` in `batch`; 0 when it is
/// `*last` (the previous batch's: an IPC stream's batches share one), which
/// it then becomes.
int64_t sl_pqw_dict_bytes(const struct pqw_leaf* leaf, const struct ArrowArray* batch,
                          const void** last);

/// Computes levels and values of `leaf` over the rows folded into `acc`
/// (NULL: none), then the slices (replacing what `d` held). The folded rows'
/// buffers move to `d` (`acc` gets d's and keeps `bytes`, which d's values
/// then point into: it lives until the chunk is encoded).
int sl_pqw_column_data_fill(struct pqw_column_data* d, const struct pqw_leaf* leaf,
                         struct pqw_acc* acc, const struct pqw_slice* slices, int64_t n_slices,
                         struct sluice_error* error);

/// Writer options that matter to a column chunk.
struct pqw_options {
  enum pq_codec codec;
  int level;                  ///< PQ_LEVEL_DEFAULT = codec default
  int64_t row_group_size;     ///< rows
  int64_t page_size;          ///< bytes (estimated, before compression)
  int64_t dict_limit;         ///< dictionary page bytes before falling back to PLAIN
  int data_page_version;      ///< 1 or 2
  int dictionary;
  int statistics;
  int threads;
  double bloom_fpp;           ///< false-positive rate of the Bloom filters written
};

/// Per-thread scratch for encoding chunks.
struct pqw_scratch {
  const struct sluice_allocator* alloc;
  struct pq_codec_ctx* codec;
  struct pqw_column_data data;
  struct sl_buffer page;        ///< uncompressed page body
  struct sl_buffer compressed;
  struct sl_buffer header;
  struct sl_buffer dict_values; ///< struct pqw_ba per dictionary entry
  struct sl_buffer dict_table;  ///< hash slots (uint32, 0 = empty)
  struct sl_buffer indices;     ///< uint32 per value
  struct sl_buffer dict_plain;  ///< PLAIN-encoded dictionary page body
};

int sl_pqw_scratch_init(struct pqw_scratch* s, const struct sluice_allocator* alloc,
                     struct sluice_error* error);
void sl_pqw_scratch_free(struct pqw_scratch* s);

/// One encoded column chunk: its bytes and its metadata (offsets relative to
/// the chunk's start; the caller rebases them when it writes the bytes).
struct pqw_chunk {
  struct sl_buffer bytes;
  struct pq_column_meta meta;
  /// A dictionary leaf: at most this many distinct values are in the chunk
  /// (the dictionary a reader builds for it, whose indices the stored Arrow
  /// schema's index type must hold).
  int64_t distinct_bound;
  int32_t encodings[4];
  uint8_t* stat_bytes;          ///< owned copy of min and max
  int64_t stat_size;
};

void sl_pqw_chunk_init(struct pqw_chunk* c, const struct sluice_allocator* alloc);
void sl_pqw_chunk_free(struct pqw_chunk* c);
/// Encodes leaf `leaf` over the rows folded into `acc` (NULL: none) and the
/// slices into `out` (dictionary page, data pages, statistics).
int sl_pqw_chunk_encode(const struct pqw_leaf* leaf, const struct pqw_options* opt,
                     struct pqw_acc* acc, const struct pqw_slice* slices, int64_t n_slices,
                     struct pqw_scratch* scratch, struct pqw_chunk* out,
                     struct sluice_error* error);

/// Statistics of dense values (pq_write_stats.c): fills min/max (owned by
/// chunk->stat_bytes) and sets present / exact flags in chunk->meta.
int sl_pqw_stats_compute(const struct pqw_leaf* leaf, const uint8_t* values, int64_t n_values,
                      int64_t null_count, struct pqw_chunk* chunk, struct sluice_error* error);

#endif
