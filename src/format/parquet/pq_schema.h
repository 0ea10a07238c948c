// The Parquet schema as Arrow sees it: the flattened SchemaElement list of
// the footer turned into a tree of Arrow fields (struct / list / map / leaf),
// with the types pyarrow.parquet.read_table gives by default, and for every
// node the definition / repetition levels that say where its slots and nulls
// are (the Dremel encoding, see pq_assemble.h).
#ifndef PQ_SCHEMA_H
#define PQ_SCHEMA_H

#include <stdint.h>

#include "sluice.h"
#include "pq_meta.h"

/// Deepest nesting accepted (levels fit int16 with room to spare).
#define PQ_MAX_DEPTH 64
/// Parquet groups (the root included) that PQ_MAX_DEPTH Arrow levels may
/// take: a LIST or MAP takes two (the annotated group and its repeated one).
#define PQ_MAX_SCHEMA_GROUPS (2 * PQ_MAX_DEPTH + 1)

enum pq_field_kind { PQ_FIELD_LEAF, PQ_FIELD_STRUCT, PQ_FIELD_LIST, PQ_FIELD_MAP };

/// How a leaf's physical values become the Arrow values.
enum pq_conv {
  PQ_CONV_COPY,       ///< same bytes (int32, int64, float, double, FLBA, ...)
  PQ_CONV_BOOL,       ///< one byte per value -> bitmap
  PQ_CONV_I32_TO_I8,  ///< INT32 annotated as 8-bit integer
  PQ_CONV_I32_TO_I16,
  PQ_CONV_INT96,      ///< Impala timestamp -> int64 in the unit of int96_unit_ns
  PQ_CONV_DEC_I32,    ///< INT32 / INT64 unscaled -> decimal128/256 little-endian
  PQ_CONV_DEC_I64,
  PQ_CONV_DEC_BE,     ///< big-endian two's complement bytes (FLBA / BYTE_ARRAY) -> decimal
  PQ_CONV_BINARY,     ///< BYTE_ARRAY -> binary / utf8 (int32 offsets)
  PQ_CONV_NULL,       ///< logical NULL: every slot null, no buffers
};

struct pq_field {
  enum pq_field_kind kind;
  char* name;          ///< NUL-terminated copy
  int nullable;
  /// A slot of this node exists for a level entry when rep <= `rep` and
  /// def >= `anc_def`; the slot is non-null when def >= `def`.
  int16_t def, rep, anc_def;
  /// LIST / MAP: an entry is an element (the list is non-empty) when
  /// def >= elem_def and rep <= rep + 1.
  int16_t elem_def;
  struct pq_field* children;
  int64_t n_children;
  int64_t first_leaf;  ///< the leaf whose levels describe this node
  int64_t n_leaves;    ///< leaves under this node (1 for a leaf)
  /* leaves only */
  int64_t leaf;                      ///< index among the leaves (row group columns)
  /// A column of its own (a child of the root): only its pages read its
  /// definition levels, so they are kept per page, not per chunk.
  int top_level;
  const struct pq_schema_element* element;
  enum pq_conv conv;
  int32_t phys_width;                ///< bytes per fixed-width physical value (0 = BYTE_ARRAY)
  int32_t out_width;                 ///< bytes per Arrow value (0 = bool/binary/null)
  int is_string;                     ///< utf8 output
  char format[80];                   ///< Arrow format string
  char* path;                        ///< dotted column path (leaves), for messages
  int has_field_id;                  ///< the schema element's field_id (Iceberg's column
  int32_t field_id;                  ///< ids), given as PARQUET:field_id, as pyarrow does
  /* restored from the footer's ARROW:schema (pq_arrow_schema.c) */
  char* metadata;                    ///< Arrow field metadata blob (sl_alloc'd) or NULL
  int64_t metadata_size;
  const char* extension;             ///< Arrow extension name implied by the logical type
  int large;                         ///< 64-bit offsets (large_list / large_string / large_binary)
  int dict;                          ///< dictionary<index_format, format> output
  int dict_ordered;                  ///< ... whose order means something (pandas ordered categorical)
  int32_t fixed_size;                ///< LIST read as fixed_size_list<N> (no dictionary under it)
  int keys_sorted;                   ///< MAP whose ARROW:schema says its keys are sorted
  /// INT96: nanoseconds per unit of the timestamp read (1 = ns, the
  /// default; 1000 = us, ...: -O int96_timestamp_unit).
  int64_t int96_unit_ns;
  char dict_index_format[4];
};

struct pq_schema {
  struct pq_field root;       ///< STRUCT, one child per top-level column
  struct pq_field** leaves;   ///< n_leaves pointers into the tree, in file order
  int64_t n_leaves;
  struct ArrowSchema arrow;   ///< "+s", one child per top-level column
  const struct sluice_allocator* alloc;
};

/// Builds the tree and the Arrow schema. `name` (the file) prefixes errors.
/// EINVAL for schemas that are malformed or that pyarrow also refuses.
int sl_pq_schema_build(const struct pq_file_meta* meta, const struct sluice_allocator* alloc,
                    const char* name, struct pq_schema* out, struct sluice_error* error);
void sl_pq_schema_release(struct pq_schema* schema);

/// Restores what Parquet cannot say from the footer's "ARROW:schema" entry
/// (written by Arrow C++), the way Arrow C++ does: timestamp time zones,
/// large strings and lists, durations, narrow decimals, dictionaries,
/// extension metadata. A malformed entry is ignored (ENOMEM is returned).
/// Also rebuilds schema->arrow.
int sl_pq_schema_apply_arrow(struct pq_schema* schema, const struct pq_file_meta* meta,
                          const char* name, struct sluice_error* error);

/// Rebuilds schema->arrow from the field tree (after changing fields).
int sl_pq_schema_rebuild_arrow(struct pq_schema* schema, struct sluice_error* error);

/// The Arrow schema of one field (name, nullability, children).
int sl_pq_field_arrow_schema(const struct pq_field* f, const struct sluice_allocator* alloc,
                          struct ArrowSchema* out, struct sluice_error* error);

#endif
