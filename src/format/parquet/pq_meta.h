// Parquet metadata (parquet.thrift) as plain C structs: the file footer
// (FileMetaData) and page headers, read from and written to the Thrift
// compact protocol (pq_thrift.h). Only the fields sluice uses are kept;
// everything else is skipped on read (and never written).
//
// Reading: every byte string (names, statistics, key/value metadata) is a
// view into the buffer that was parsed (struct pq_bytes), so the caller keeps
// that buffer alive as long as the metadata. Arrays are allocated with the
// allocator and freed by sl_pq_file_meta_free. Every length, count, enum and
// nesting depth is validated; bad input gives EINVAL with a message naming the
// structure, field and byte offset within the parsed buffer.
#ifndef PQ_META_H
#define PQ_META_H

#include <stdint.h>

#include "sluice.h"
#include "../../core/sl_buffer.h"

/// A byte string: a view (reading) or borrowed memory (writing). data may be
/// NULL only when size is 0; `present` tells an absent optional field from an
/// empty one.
struct pq_bytes {
  const uint8_t* data;
  int64_t size;
  int present;
};

enum pq_physical_type {
  PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_INT96 = 3, PQ_FLOAT = 4,
  PQ_DOUBLE = 5, PQ_BYTE_ARRAY = 6, PQ_FIXED_LEN_BYTE_ARRAY = 7,
};

enum pq_repetition { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

/// ConvertedType (legacy annotations); PQ_CONVERTED_NONE when absent.
enum pq_converted_type {
  PQ_CONVERTED_NONE = -1,
  PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2, PQ_CT_LIST = 3, PQ_CT_ENUM = 4,
  PQ_CT_DECIMAL = 5, PQ_CT_DATE = 6, PQ_CT_TIME_MILLIS = 7, PQ_CT_TIME_MICROS = 8,
  PQ_CT_TIMESTAMP_MILLIS = 9, PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11,
  PQ_CT_UINT_16 = 12, PQ_CT_UINT_32 = 13, PQ_CT_UINT_64 = 14, PQ_CT_INT_8 = 15,
  PQ_CT_INT_16 = 16, PQ_CT_INT_32 = 17, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19, PQ_CT_BSON = 20,
  PQ_CT_INTERVAL = 21,
};

/// LogicalType union member set; PQ_LOGICAL_NONE when absent. Members a
/// reader does not know (a newer writer's) parse as PQ_LOGICAL_UNKNOWN_MEMBER
/// so that the column falls back to its physical type.
enum pq_logical_kind {
  PQ_LOGICAL_NONE = 0,
  PQ_LOGICAL_STRING = 1, PQ_LOGICAL_MAP = 2, PQ_LOGICAL_LIST = 3, PQ_LOGICAL_ENUM = 4,
  PQ_LOGICAL_DECIMAL = 5, PQ_LOGICAL_DATE = 6, PQ_LOGICAL_TIME = 7, PQ_LOGICAL_TIMESTAMP = 8,
  PQ_LOGICAL_INTEGER = 10, PQ_LOGICAL_NULL = 11, PQ_LOGICAL_JSON = 12, PQ_LOGICAL_BSON = 13,
  PQ_LOGICAL_UUID = 14, PQ_LOGICAL_FLOAT16 = 15, PQ_LOGICAL_VARIANT = 16,
  PQ_LOGICAL_GEOMETRY = 17, PQ_LOGICAL_GEOGRAPHY = 18,
  PQ_LOGICAL_UNKNOWN_MEMBER = 1000,
};

enum pq_time_unit { PQ_MILLIS = 1, PQ_MICROS = 2, PQ_NANOS = 3 };

struct pq_logical_type {
  enum pq_logical_kind kind;
  int32_t decimal_scale, decimal_precision;  ///< DECIMAL
  int is_adjusted_to_utc;                    ///< TIME, TIMESTAMP
  enum pq_time_unit unit;                    ///< TIME, TIMESTAMP
  int32_t bit_width;                         ///< INTEGER: 8, 16, 32, 64
  int is_signed;                             ///< INTEGER
};

/// One node of the flattened schema tree (depth-first, root first).
struct pq_schema_element {
  int has_type;                 ///< leaves have a physical type, groups do not
  enum pq_physical_type type;
  int32_t type_length;          ///< FIXED_LEN_BYTE_ARRAY width (0 if absent)
  int has_repetition;           ///< the root usually has none
  enum pq_repetition repetition;
  struct pq_bytes name;
  int32_t num_children;         ///< 0 for leaves
  enum pq_converted_type converted_type;
  int32_t scale, precision;     ///< legacy DECIMAL (0 if absent)
  int has_field_id;
  int32_t field_id;
  struct pq_logical_type logical;
};

struct pq_statistics {
  int present;                  ///< the Statistics struct was in the metadata
  struct pq_bytes max, min;     ///< legacy, signed comparison (see PITFALLS)
  int64_t null_count;           ///< -1 when absent
  int64_t distinct_count;       ///< -1 when absent
  struct pq_bytes max_value, min_value;
  int is_max_value_exact, is_min_value_exact;  ///< -1 absent, 0, 1
};

enum pq_codec {
  PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_GZIP = 2, PQ_CODEC_LZO = 3,
  PQ_CODEC_BROTLI = 4, PQ_CODEC_LZ4 = 5, PQ_CODEC_ZSTD = 6, PQ_CODEC_LZ4_RAW = 7,
};

enum pq_encoding {
  PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
  PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6,
  PQ_ENC_DELTA_BYTE_ARRAY = 7, PQ_ENC_RLE_DICTIONARY = 8, PQ_ENC_BYTE_STREAM_SPLIT = 9,
};

struct pq_key_value {
  struct pq_bytes key, value;
};

struct pq_column_meta {
  enum pq_physical_type type;
  int32_t* encodings;           ///< n_encodings values of enum pq_encoding
  int64_t n_encodings;
  struct pq_bytes* path_in_schema;
  int64_t n_path;
  enum pq_codec codec;
  int64_t num_values;
  int64_t total_uncompressed_size;
  int64_t total_compressed_size;
  int64_t data_page_offset;
  int64_t index_page_offset;       ///< -1 when absent
  int64_t dictionary_page_offset;  ///< -1 when absent (0 is a known writer bug: treat
                                   ///< as absent unless it equals a valid page start)
  struct pq_statistics statistics;
  struct pq_key_value* key_value_metadata;
  int64_t n_key_value_metadata;
  int64_t bloom_filter_offset;  ///< -1 when absent (or not a valid offset)
  int64_t bloom_filter_length;  ///< header and bitset; -1 when absent
  /// From encoding_stats: 1 when every data page is dictionary-encoded, 0
  /// when some is not, -1 when the writer did not say (no stats, or no
  /// data page in them).
  int data_pages_dictionary;
  /// Writing: encoding_stats for a chunk of n_data_pages data pages (v2 or
  /// not), n_dictionary_data_pages of them RLE_DICTIONARY and the rest PLAIN
  /// (a writer's fallback), after its dictionary page if
  /// dictionary_page_offset >= 0. None are written when n_data_pages is 0.
  int64_t n_data_pages;
  int64_t n_dictionary_data_pages;
  int data_pages_v2;
};

struct pq_column_chunk {
  struct pq_bytes file_path;       ///< columns in another file: unsupported (error)
  int64_t file_offset;
  int has_meta_data;
  struct pq_column_meta meta_data;
  int encrypted;                   ///< crypto_metadata or encrypted_column_metadata set
};

struct pq_row_group {
  struct pq_column_chunk* columns;
  int64_t n_columns;
  int64_t total_byte_size;
  int64_t num_rows;
  int64_t file_offset;             ///< -1 when absent
  int64_t total_compressed_size;   ///< -1 when absent
  int32_t ordinal;                 ///< -1 when absent
};

struct pq_file_meta {
  int32_t version;
  struct pq_schema_element* schema;   ///< n_schema elements, root first
  int64_t n_schema;
  int64_t num_rows;
  struct pq_row_group* row_groups;
  int64_t n_row_groups;
  struct pq_key_value* key_value_metadata;
  int64_t n_key_value_metadata;
  struct pq_bytes created_by;
  int encrypted;                      ///< encryption_algorithm present (plaintext footer mode)
  /// Reading: the footer had no column_orders (older writers; readers then
  /// trust only signed-order legacy statistics). Writing: 0 (the default)
  /// writes column_orders, without which readers ignore min_value/max_value;
  /// 1 omits them (to rewrite such a footer faithfully).
  int no_column_orders;
  /// The ColumnOrder union member of each leaf, when the footer has
  /// column_orders (n_column_orders = number of leaves; else NULL, 0):
  /// PQ_ORDER_TYPE_DEFINED, PQ_ORDER_IEEE754_TOTAL, or another number for an
  /// order sluice does not know (whose min_value/max_value are not used).
  /// Writing: NULL writes TypeDefinedOrder for every leaf.
  int32_t* column_orders;
  int64_t n_column_orders;
  /// Allocator the arrays came from (reading), for sl_pq_file_meta_free.
  const struct sluice_allocator* alloc;
};

/// ColumnOrder union members (FileMetaData.column_orders).
enum pq_column_order { PQ_ORDER_TYPE_DEFINED = 1, PQ_ORDER_IEEE754_TOTAL = 2 };

enum pq_page_type {
  PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3,
};

struct pq_page_header {
  enum pq_page_type type;           ///< other values are kept as read (skip the page)
  int32_t uncompressed_page_size;   ///< validated >= 0
  int32_t compressed_page_size;     ///< validated >= 0
  int has_crc;
  uint32_t crc;                     ///< CRC-32 (zlib) of the page bytes after the header
  /// DATA_PAGE (v1)
  int32_t num_values;
  enum pq_encoding encoding;
  enum pq_encoding definition_level_encoding, repetition_level_encoding;
  /// DATA_PAGE_V2 (num_values and encoding above are shared)
  int32_t num_nulls, num_rows;
  int32_t definition_levels_byte_length, repetition_levels_byte_length;
  int is_compressed;                ///< default 1
  /// DICTIONARY_PAGE (num_values and encoding above are shared)
  int is_sorted;
  struct pq_statistics statistics;  ///< page statistics (v1 / v2), usually absent
};

/// Parses a FileMetaData from `data` (the footer bytes between the start of
/// the footer and the 4-byte length + "PAR1"). Views into `data` stay valid
/// while `data` does. On error *out is left empty (nothing to free).
int sl_pq_file_meta_parse(const uint8_t* data, int64_t size, const struct sluice_allocator* alloc,
                       struct pq_file_meta* out, struct sluice_error* error);
void sl_pq_file_meta_free(struct pq_file_meta* meta);

/// A split block Bloom filter's header (BloomFilterHeader) at data[0..size):
/// 0 with *header_size and *num_bytes (its bitset's length, a positive
/// multiple of 32 up to 128 MiB) when it is one sluice can check (block
/// algorithm, xxHash, uncompressed); EILSEQ otherwise.
int sl_pq_bloom_header_parse(const uint8_t* data, int64_t size, int64_t* header_size,
                          int64_t* num_bytes, struct sluice_error* error);

/// Parses a PageHeader at the start of `data` (up to `size` bytes; a header is
/// usually < 100 bytes but statistics can make it larger). *header_size
/// receives the bytes the header used. EINVAL if it does not fit in `size`.
int sl_pq_page_header_parse(const uint8_t* data, int64_t size, struct pq_page_header* out,
                         int64_t* header_size, struct sluice_error* error);

/// Writing: appends the compact-protocol encoding to `out`. Fields that are
/// absent (present == 0, -1 sentinels, PQ_LOGICAL_NONE, ...) are not written.
int sl_pq_file_meta_write(const struct pq_file_meta* meta, struct sl_buffer* out,
                       struct sluice_error* error);
/// Appends the BloomFilterHeader of a split block, xxHash, uncompressed filter
/// of `num_bytes` bytes.
int sl_pq_bloom_header_write(int64_t num_bytes, struct sl_buffer* out, struct sluice_error* error);
int sl_pq_page_header_write(const struct pq_page_header* header, struct sl_buffer* out,
                         struct sluice_error* error);

/// Initialises optional fields to "absent" (-1 sentinels, NONE kinds,
/// is_compressed = 1, ...) so that writers fill only what they set.
void sl_pq_statistics_init(struct pq_statistics* stats);
void sl_pq_page_header_init(struct pq_page_header* header);
void sl_pq_schema_element_init(struct pq_schema_element* element);
void sl_pq_column_meta_init(struct pq_column_meta* meta);

/// The order a column's statistics are chosen and compared in (from its
/// logical, converted and physical type, as TypeDefinedOrder says).
enum pq_stats_order {
  PQ_STATS_ORDER_NONE = 0,     ///< INT96, INTERVAL, unknown logical types: no order
  PQ_STATS_ORDER_BOOL,
  PQ_STATS_ORDER_SIGNED,       ///< INT32 / INT64 as signed
  PQ_STATS_ORDER_UNSIGNED,     ///< INT32 / INT64 as unsigned (UINT_*, INTEGER unsigned)
  PQ_STATS_ORDER_FLOAT,
  PQ_STATS_ORDER_DOUBLE,
  PQ_STATS_ORDER_FLOAT16,      ///< FIXED_LEN_BYTE_ARRAY(2) half floats
  PQ_STATS_ORDER_BYTES,        ///< unsigned lexicographic
  PQ_STATS_ORDER_DECIMAL,      ///< big-endian two's complement of any length
};

/// Merges the statistics of column `leaf` (index among the leaves, i.e. into
/// row_group.columns) over every row group, choosing min/max with the sort
/// order the column's logical/converted/physical type implies (signed,
/// unsigned, lexicographic unsigned bytes, IEEE floats ignoring NaN; INT96 and
/// interval have no order). Uses min_value/max_value, and the legacy min/max
/// only where they are valid for the type (signed order). Results are views
/// of one row group's PLAIN-encoded bound bytes (BYTE_ARRAY without a length
/// prefix).
struct pq_merged_stats {
  int64_t null_count;   ///< sum over row groups; -1 if any row group lacks it
  int has_min_max;      ///< every row group with non-null values has usable bounds
  struct pq_bytes min, max;
  int min_exact, max_exact;  ///< absent is_*_exact counts as exact except for
                             ///< BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY
  /// The order min and max are in (PQ_STATS_ORDER_NONE when !has_min_max).
  enum pq_stats_order order;
};
int sl_pq_merge_column_stats(const struct pq_file_meta* meta, int64_t leaf,
                          struct pq_merged_stats* out, struct sluice_error* error);
/// The same over row groups [first, first + count) only: with count = 1, the
/// trusted statistics of one column chunk (what row-group pruning judges by).
int sl_pq_merge_column_stats_range(const struct pq_file_meta* meta, int64_t leaf, int64_t first,
                                int64_t count, struct pq_merged_stats* out,
                                struct sluice_error* error);

#endif
