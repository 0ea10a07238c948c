// What the schema tables say of a table's columns: see cql_schema.h.
#include "cql_schema.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_error.h"
#include "../../core/sl_value_text.h"

/// Appends `s` as a CQL string literal ('it''s').
static int append_literal(struct sl_text* t, const char* s) {
  int rc = sl_text_append_char(t, '\'');
  for (const char* p = s; rc == 0 && *p != '\0'; ++p) {
    rc = *p == '\'' ? sl_text_append(t, "''", 2) : sl_text_append_char(t, *p);
  }
  return rc == 0 ? sl_text_append_char(t, '\'') : rc;
}

/// SELECT column_name, kind, position FROM <schema>.columns WHERE ... of the table.
static int columns_query(struct sl_text* q, const char* schema, const char* keyspace,
                         const char* table) {
  int rc = sl_text_append_str(q, "SELECT column_name, kind, position FROM ");
  if (rc == 0) rc = sl_text_append_str(q, schema);
  if (rc == 0) rc = sl_text_append_str(q, ".columns WHERE keyspace_name = ");
  if (rc == 0) rc = append_literal(q, keyspace);
  if (rc == 0) rc = sl_text_append_str(q, " AND table_name = ");
  return rc == 0 ? append_literal(q, table) : rc;
}

static int kind_of(const uint8_t* s, int32_t n) {
  static const struct {
    const char* text;
    int kind;
  } kinds[] = {{"partition_key", CQL_KIND_PARTITION_KEY},
               {"clustering", CQL_KIND_CLUSTERING},
               {"static", CQL_KIND_STATIC}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    if (n >= 0 && strlen(kinds[i].text) == (size_t)n && memcmp(s, kinds[i].text, (size_t)n) == 0) {
      return kinds[i].kind;
    }
  }
  return CQL_KIND_REGULAR;
}

/// Copies the (column_name, kind, position) rows into `out`.
static int copy_columns(const struct cql_asker* a, const char* what, struct cql_rows* rows,
                        struct cql_table_columns* out, struct sluice_error* error) {
  if (rows->n_columns != 3) {
    return sl_error_set(error, EPROTO, "%s: %s: expected 3 columns, got %d", a->name, what,
                        (int)rows->n_columns);
  }
  out->columns = sl_calloc(a->alloc, (size_t)(rows->n_rows > 0 ? rows->n_rows : 1),
                           sizeof *out->columns);
  if (out->columns == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  out->capacity = rows->n_rows > 0 ? rows->n_rows : 1;
  for (int32_t i = 0; i < rows->n_rows; ++i) {
    const uint8_t *name, *kind, *pos;
    int32_t nn, kn, pn;
    SL_RETURN_NOT_OK(sl_cql_next_cell(a, what, rows, &name, &nn, error));
    SL_RETURN_NOT_OK(sl_cql_next_cell(a, what, rows, &kind, &kn, error));
    SL_RETURN_NOT_OK(sl_cql_next_cell(a, what, rows, &pos, &pn, error));
    if (nn <= 0) {
      return sl_error_set(error, EPROTO, "%s: %s: a column without a name", a->name, what);
    }
    struct cql_column_info* c = &out->columns[i];
    c->name = sl_strndup(a->alloc, (const char*)name, (size_t)nn);
    if (c->name == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
    out->n_columns = i + 1;
    c->kind = kind_of(kind, kn);
    c->position = -1;
    if (pn == 4) {
      struct sl_cql_cursor at = {pos, pos + 4};
      (void)sl_cql_read_int(&at, &c->position);  // 4 bytes: cannot fail
    }
  }
  return 0;
}

/// Asks one schema's columns table; a node that refuses the query as invalid
/// (0x2200) with `refusal_is_none` lists nothing there.
static int ask_schema(const struct cql_asker* a, struct sl_cql_conn* conn, const char* schema,
                      const char* keyspace, const char* table, int refusal_is_none,
                      struct cql_table_columns* out, struct sluice_error* error) {
  char what[64];
  snprintf(what, sizeof what, "reading %s.columns", schema);
  struct sl_text q;
  sl_text_init(&q, a->alloc);
  if (columns_query(&q, schema, keyspace, table) != 0) {
    sl_text_reset(&q);
    return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
  }
  struct cql_rows rows;
  struct sluice_error refused;
  sl_error_clear(&refused);
  int rc = sl_cql_small_query(a, conn, sl_text_cstr(&q), what, &rows, NULL, &refused);
  sl_text_reset(&q);
  if (rc != 0) {
    if (refusal_is_none && sl_cql_server_error(conn) == 0x2200) return 0;
    return sl_error_set(error, refused.code, "%s", refused.message);
  }
  return copy_columns(a, what, &rows, out, error);
}

int sl_cql_table_columns_read(const struct cql_asker* a, struct sl_cql_conn* conn,
                           const char* keyspace, const char* table, int virtual_too,
                           struct cql_table_columns* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  int rc = ask_schema(a, conn, "system_schema", keyspace, table, 0, out, error);
  if (rc == 0 && out->n_columns == 0 && virtual_too) {
    // Tables are listed in system_schema, virtual tables (system_views.*) in
    // system_virtual_schema, whose columns table has the same layout. Nodes
    // before Cassandra 4.0 have no virtual tables and refuse the query as
    // invalid (0x2200): then "no table". Any other failure (a broken
    // connection, unauthorized, overloaded) is the error.
    sl_cql_table_columns_free(out, a->alloc);
    rc = ask_schema(a, conn, "system_virtual_schema", keyspace, table, 1, out, error);
    out->virtual_table = rc == 0 && out->n_columns > 0;
  }
  if (rc != 0) sl_cql_table_columns_free(out, a->alloc);
  return rc;
}

void sl_cql_table_columns_free(struct cql_table_columns* t, const struct sluice_allocator* alloc) {
  if (t->columns != NULL) {
    for (int32_t i = 0; i < t->n_columns; ++i) {
      sl_free(alloc, t->columns[i].name, strlen(t->columns[i].name) + 1);
    }
    sl_free(alloc, t->columns, (size_t)t->capacity * sizeof *t->columns);
  }
  memset(t, 0, sizeof *t);
}

const struct cql_column_info* sl_cql_table_column(const struct cql_table_columns* t,
                                               const char* name) {
  for (int32_t i = 0; i < t->n_columns; ++i) {
    if (strcmp(t->columns[i].name, name) == 0) return &t->columns[i];
  }
  return NULL;
}
