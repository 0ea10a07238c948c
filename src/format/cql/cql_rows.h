// RESULTs of kind Rows: their metadata, a cursor over their cells, and small
// unpaged queries whose rows the caller walks. The table reader's pages and
// the system tables that both the reader and the writer ask about a table
// (cql_schema.c) are read through these.
#ifndef CQL_ROWS_H
#define CQL_ROWS_H

#include <stdint.h>

#include "sluice.h"
#include "../../io/sl_cql.h"
#include "cql_type.h"

/// Who asks: the location (without its password) that prefixes messages,
/// the allocator, and the consistency level of queries.
struct cql_asker {
  const char* name;
  const struct sluice_allocator* alloc;
  int consistency;
};

struct cql_rows {
  int32_t n_columns;
  const uint8_t* paging_state;  ///< NULL on the last page
  int32_t paging_len;
  struct sl_cql_cursor specs;  ///< column specs (empty with No_metadata)
  int global_spec;
  int32_t n_rows;
  struct sl_cql_cursor rows;  ///< rows_count * n_columns [bytes]
};

/// Parses a RESULT body as Rows: metadata, then the cursor at the rows.
/// With `types`, a new array of the n_columns types (named) goes there
/// (free it with sl_cql_types_free). `what` says what was asked (for messages).
int sl_cql_rows_parse(const struct cql_asker* a, const char* what, const uint8_t* body, int64_t len,
                   struct cql_rows* rows, struct cql_type** types, struct sluice_error* error);

/// Runs a small unpaged query and returns its Rows (valid until the next
/// use of `conn`).
int sl_cql_small_query(const struct cql_asker* a, struct sl_cql_conn* conn, const char* cql,
                    const char* what, struct cql_rows* rows, struct cql_type** types,
                    struct sluice_error* error);

/// The next cell of `rows`, bounds-checked (*n = -1 for null).
int sl_cql_next_cell(const struct cql_asker* a, const char* what, struct cql_rows* rows,
                  const uint8_t** v, int32_t* n, struct sluice_error* error);

/// Frees `n` types (each freed by sl_cql_type_free) and their array.
void sl_cql_types_free(struct cql_type* types, int64_t n, const struct sluice_allocator* alloc);

#endif
