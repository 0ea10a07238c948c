// RESULTs of kind Rows: see cql_rows.h.
#include "cql_rows.h"

#include <errno.h>
#include <string.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_error.h"

void sl_cql_types_free(struct cql_type* types, int64_t n, const struct sluice_allocator* alloc) {
  if (types == NULL) return;
  for (int64_t i = 0; i < n; ++i) sl_cql_type_free(&types[i], alloc);
  sl_free(alloc, types, (size_t)(n > 0 ? n : 1) * sizeof *types);
}

/// Skips or reads the column specs of a Rows result; with `types`, a new
/// array of the n_columns types (named) goes there.
static int read_specs(struct cql_rows* rows, const struct sluice_allocator* alloc,
                      struct cql_type** types) {
  struct sl_cql_cursor* c = &rows->specs;
  const uint8_t* s;
  size_t n;
  if (rows->global_spec &&
      (sl_cql_read_string(c, &s, &n) != 0 || sl_cql_read_string(c, &s, &n) != 0)) {
    return -1;
  }
  struct cql_type* all = NULL;
  if (types != NULL) {
    all = sl_calloc(alloc, (size_t)(rows->n_columns > 0 ? rows->n_columns : 1), sizeof *all);
    if (all == NULL) return ENOMEM;
  }
  int rc = 0;
  for (int32_t i = 0; rc == 0 && i < rows->n_columns; ++i) {
    if ((!rows->global_spec &&
         (sl_cql_read_string(c, &s, &n) != 0 || sl_cql_read_string(c, &s, &n) != 0)) ||
        sl_cql_read_string(c, &s, &n) != 0) {
      rc = -1;
      break;
    }
    struct cql_type scratch;
    struct cql_type* t = all != NULL ? &all[i] : &scratch;
    rc = sl_cql_type_read(c, (const char*)s, n, alloc, t);
    if (rc == 0 && all == NULL) sl_cql_type_free(t, alloc);
  }
  if (rc != 0) {
    sl_cql_types_free(all, rows->n_columns, alloc);  // (the ones not read are zeroed)
    return rc;
  }
  if (types != NULL) *types = all;
  return 0;
}

int sl_cql_rows_parse(const struct cql_asker* a, const char* what, const uint8_t* body, int64_t len,
                   struct cql_rows* rows, struct cql_type** types, struct sluice_error* error) {
  memset(rows, 0, sizeof *rows);
  struct sl_cql_cursor c = {body, body + len};
  int32_t kind, flags;
  if (sl_cql_read_int(&c, &kind) != 0 || kind != 2) {
    return sl_error_set(error, EPROTO, "%s: %s: the answer is not rows (result kind %d)", a->name,
                        what, kind);
  }
  int bad = sl_cql_read_int(&c, &flags) != 0 || sl_cql_read_int(&c, &rows->n_columns) != 0 ||
            rows->n_columns < 0;
  if (!bad && (flags & 0x0002)) {
    bad = sl_cql_read_bytes(&c, &rows->paging_state, &rows->paging_len) != 0;
  }
  rows->global_spec = (flags & 0x0001) != 0;
  rows->specs = c;
  if (!bad && !(flags & 0x0004)) {
    int rc = read_specs(rows, a->alloc, types);
    if (rc == ENOMEM) return sl_error_set(error, ENOMEM, "%s: out of memory", a->name);
    bad = rc != 0;
    c = rows->specs;
  } else if (!bad && types != NULL) {
    bad = 1;  // asked for the types, got none
  }
  if (!bad) bad = sl_cql_read_int(&c, &rows->n_rows) != 0 || rows->n_rows < 0;
  // Every value takes 4 bytes at least: a count beyond that is a lie.
  if (!bad && rows->n_columns > 0 &&
      (int64_t)rows->n_rows * rows->n_columns > (c.end - c.p) / 4) {
    bad = 1;
  }
  if (bad) {
    if (types != NULL) {
      sl_cql_types_free(*types, rows->n_columns, a->alloc);
      *types = NULL;
    }
    return sl_error_set(error, EPROTO, "%s: %s: malformed rows metadata (at byte %lld of %lld)",
                        a->name, what, (long long)(c.p - body), (long long)len);
  }
  rows->rows = c;
  return 0;
}

int sl_cql_small_query(const struct cql_asker* a, struct sl_cql_conn* conn, const char* cql,
                    const char* what, struct cql_rows* rows, struct cql_type** types,
                    struct sluice_error* error) {
  const uint8_t* body;
  int64_t len;
  SL_RETURN_NOT_OK(sl_cql_send_query(conn, cql, a->consistency, 0, NULL, 0, 0, error));
  SL_RETURN_NOT_OK(sl_cql_receive_result(conn, what, &body, &len, error));
  return sl_cql_rows_parse(a, what, body, len, rows, types, error);
}

int sl_cql_next_cell(const struct cql_asker* a, const char* what, struct cql_rows* rows,
                  const uint8_t** v, int32_t* n, struct sluice_error* error) {
  if (sl_cql_read_bytes(&rows->rows, v, n) != 0) {
    return sl_error_set(error, EPROTO, "%s: %s: a row runs past the end of the answer", a->name,
                        what);
  }
  return 0;
}
