// What the schema tables say of a table's columns: each column's name,
// kind (partition key, clustering, static, regular) and position in its key.
// The reader builds token(<partition key>) from it; the writer finds the
// clustering and static columns (a row of static values only is written
// without its null clustering columns).
#ifndef CQL_SCHEMA_H
#define CQL_SCHEMA_H

#include <stdint.h>

#include "sluice.h"
#include "../../io/sl_cql.h"
#include "cql_rows.h"

enum cql_column_kind {
  CQL_KIND_REGULAR = 0,
  CQL_KIND_PARTITION_KEY,
  CQL_KIND_CLUSTERING,
  CQL_KIND_STATIC,
};

struct cql_column_info {
  char* name;
  int kind;          ///< enum cql_column_kind
  int32_t position;  ///< in the partition key or the clustering columns (-1 for the others)
};

struct cql_table_columns {
  struct cql_column_info* columns;
  int32_t n_columns;  ///< 0: no such table
  int32_t capacity;   ///< entries allocated (the rows the node listed)
  /// Listed in system_virtual_schema (a virtual table: the node's own state).
  int virtual_table;
};

/// Reads what system_schema.columns lists of keyspace.table and, with
/// `virtual_too`, system_virtual_schema.columns when the first lists
/// nothing. A table in neither has no columns (out->n_columns 0).
int sl_cql_table_columns_read(const struct cql_asker* a, struct sl_cql_conn* conn,
                           const char* keyspace, const char* table, int virtual_too,
                           struct cql_table_columns* out, struct sluice_error* error);
void sl_cql_table_columns_free(struct cql_table_columns* t, const struct sluice_allocator* alloc);

/// The column named `name` (NUL-terminated), or NULL.
const struct cql_column_info* sl_cql_table_column(const struct cql_table_columns* t,
                                               const char* name);

#endif
