// Cassandra tables, written: see cql_writer.h.
#include "cql_writer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_array.h"
#include "../../core/sl_buffer.h"
#include "../../core/sl_endian.h"
#include "../../core/sl_error.h"
#include "../../core/sl_options.h"
#include "../../core/sl_sleep.h"
#include "../../core/sl_value_text.h"
#include "../../io/sl_cql.h"
#include "cql_create.h"
#include "cql_encode.h"
#include "cql_rows.h"
#include "cql_schema.h"
#include "cql_text.h"

#define CQL_DEFAULT_BATCH_ROWS 32
#define CQL_MAX_BATCH_ROWS 65535
/// A batch stops growing here, far below Cassandra's default
/// batch_size_fail_threshold (50 KiB) so that wide rows cannot trip it.
#define CQL_BATCH_BYTES (16 << 10)
#define CQL_DEFAULT_IN_FLIGHT 128
#define CQL_MAX_IN_FLIGHT 4096
/// Tries of one request the node answers with a transient error (write
/// timeout, overloaded, unavailable: sent again after 100, 200, 400, 800 ms).
/// A broken connection is made again for as long as sl_cql_outage_wait says.
#define CQL_WRITE_ATTEMPTS 5
#define CQL_RETRY_BASE_MS 100

enum { RESULT_PREPARED = 0x0004 };

/// One request in flight (or being filled): its stream id is its index.
struct cql_slot {
  struct sl_buffer body;
  int64_t start;  ///< where the request begins in `body`
  int busy;       ///< sent, not answered yet
  int opcode;
  int64_t first_row, n_rows;
  int attempts;
};

/// A prepared INSERT: the PREPARE request (kept to prepare again on a new
/// connection), the node's id for it and its bound variables.
struct cql_statement {
  struct sl_buffer prepare_body;
  uint8_t id[256];
  uint16_t id_len;        ///< 0: not prepared
  int n_vars;             ///< the columns', then the timestamp's
  struct cql_type* vars;  ///< the bound variables' types, in column order
  int n_pk;
  uint16_t pk[64];  ///< bound variables that make the partition key
};

/// The shape of a row: all its columns, or (every clustering column null)
/// the static values of its partition only.
enum row_shape { ROW_WHOLE, ROW_STATIC };

struct cql_write {
  const struct sluice_allocator* alloc;
  char name[1024];  ///< the location, without its password
  struct sl_cql_address address;
  int consistency;
  int batch_rows;
  int in_flight;
  enum cql_null_mode nulls;
  /// create=true: CREATE TABLE IF NOT EXISTS first, with this primary key
  /// (options partition_key= and clustering_key=, '|'-separated columns).
  int create;
  char* partition_key;
  char* clustering_key;
  struct sl_cql_conn* conn;
  int reconnects;  ///< new connections since the last answer
  struct sl_cql_outage outage;  ///< failed connections since the last answer
  int broken;      ///< the connection failed for good: nothing more to wait for
  /// INSERT of every column (bound variable i is column i), and INSERT of
  /// the partition key and static columns, prepared at the first row of
  /// static values only (statics_cols lists its columns).
  struct cql_statement whole, statics;
  int n_columns;
  /// Each column's enum cql_column_kind (regular for a name the schema
  /// lacks), counts of the clustering and static columns among them, and the
  /// partition key and static columns in column order.
  int* kinds;
  int n_clustering, n_static;
  int* statics_cols;
  int n_statics_cols;
  int table_statics;  ///< static columns of the table, in the data or not
  /// The write time of the last row (microseconds since 1970): each row
  /// gets a later one, so that a key given twice keeps its last row
  /// whatever order the node applies requests in (see next_timestamp).
  int64_t last_timestamp;
  struct cql_encoder* encoders;
  struct cql_slot* slots;
  int* free_slots;
  int n_free;
  /// The group of rows being gathered: slot `filling` (-1: none), its
  /// partition key bytes, its rows.
  int filling;
  struct sl_buffer group_key;
  int group_rows;
  struct sl_buffer row;  ///< one row's values, then its key
  struct sl_buffer key;
  int64_t rows_seen;
  struct ArrowSchema schema;  ///< a copy: the columns' names point into it
  struct sl_text_field columns;
  int columns_ready;
};

/* ---- Options --------------------------------------------------------------------- */

static int parse_options(struct cql_write* w, const char* options, struct sluice_error* error) {
  w->consistency = SL_CQL_LOCAL_ONE;
  w->batch_rows = CQL_DEFAULT_BATCH_ROWS;
  w->in_flight = CQL_DEFAULT_IN_FLIGHT;
  w->nulls = CQL_NULL_UNSET;
  struct sl_option o;
  int more;
  while ((more = sl_option_next(&options, &o)) != 0) {
    if (more < 0) {
      return sl_error_set(error, EINVAL, "cql write option '%.*s': expected key=value",
                          (int)o.key_len, o.key);
    }
    int64_t n;
    int connection_option;
    SL_RETURN_NOT_OK(
        sl_cql_connection_option(&o, "cql write", &w->address, &connection_option, error));
    if (connection_option) continue;
    if (sl_option_is(&o, "consistency")) {
      SL_RETURN_NOT_OK(
          sl_cql_parse_consistency(o.value, o.value_len, "cql write", &w->consistency, error));
    } else if (sl_option_is(&o, "batch_rows")) {
      if (sl_parse_int64(o.value, o.value_len, 1, CQL_MAX_BATCH_ROWS, &n) != 0) {
        return sl_error_set(error, EINVAL, "cql write option batch_rows='%.*s': expected 1 to %d",
                            (int)o.value_len, o.value, CQL_MAX_BATCH_ROWS);
      }
      w->batch_rows = (int)n;
    } else if (sl_option_is(&o, "in_flight")) {
      if (sl_parse_int64(o.value, o.value_len, 1, CQL_MAX_IN_FLIGHT, &n) != 0) {
        return sl_error_set(error, EINVAL, "cql write option in_flight='%.*s': expected 1 to %d",
                            (int)o.value_len, o.value, CQL_MAX_IN_FLIGHT);
      }
      w->in_flight = (int)n;
    } else if (sl_option_is(&o, "create")) {
      SL_RETURN_NOT_OK(sl_cql_parse_bool(o.value, o.value_len, "cql write", "create", &w->create,
                                      error));
    } else if (sl_option_is(&o, "partition_key") || sl_option_is(&o, "clustering_key")) {
      char** list = sl_option_is(&o, "partition_key") ? &w->partition_key : &w->clustering_key;
      sl_free(w->alloc, *list, *list != NULL ? strlen(*list) + 1 : 0);
      *list = sl_strndup(w->alloc, o.value, o.value_len);
      if (*list == NULL) return sl_error_set(error, ENOMEM, "cql write: out of memory");
    } else if (sl_option_is(&o, "nulls")) {
      if (o.value_len == 5 && memcmp(o.value, "unset", 5) == 0) {
        w->nulls = CQL_NULL_UNSET;
      } else if (o.value_len == 4 && memcmp(o.value, "null", 4) == 0) {
        w->nulls = CQL_NULL_NULL;
      } else {
        return sl_error_set(error, EINVAL, "cql write option nulls='%.*s': expected unset or null",
                            (int)o.value_len, o.value);
      }
    } else {
      return sl_error_set(error, EINVAL,
                          "unknown cql write option '%.*s' (known: consistency, batch_rows, "
                          "in_flight, nulls, create, partition_key, clustering_key, tls, "
                          "tls_cert, tls_key, compression)",
                          (int)o.key_len, o.key);
    }
  }
  return 0;
}

/* ---- Preparing ----------------------------------------------------------------------- */

/// The column at place `k` of an INSERT of `cols` (NULL: every column).
static int column_at(const int* cols, int k) { return cols != NULL ? cols[k] : k; }

/// INSERT INTO "ks"."t" ("c1", ...) VALUES (?, ...) USING TIMESTAMP ? of
/// the `n` columns `cols` (NULL: every column of `row`).
static int insert_text(const struct cql_write* w, const struct sl_text_field* row,
                       const int* cols, int n, struct sl_text* t) {
  int rc = sl_text_append_str(t, "INSERT INTO ");
  if (rc == 0) rc = sl_cql_append_ident(t, w->address.keyspace);
  if (rc == 0) rc = sl_text_append_char(t, '.');
  if (rc == 0) rc = sl_cql_append_ident(t, w->address.table);
  if (rc == 0) rc = sl_text_append_str(t, " (");
  for (int k = 0; rc == 0 && k < n; ++k) {
    if (k > 0) rc = sl_text_append_str(t, ", ");
    if (rc == 0) rc = sl_cql_append_ident(t, row->children[column_at(cols, k)].name);
  }
  if (rc == 0) rc = sl_text_append_str(t, ") VALUES (");
  for (int k = 0; rc == 0 && k < n; ++k) rc = sl_text_append_str(t, k > 0 ? ", ?" : "?");
  return rc == 0 ? sl_text_append_str(t, ") USING TIMESTAMP ?") : rc;
}

/// Reads a Prepared result into `st`: the statement id, the partition key's
/// bound variables and every bound variable's type.
static int read_prepared(struct cql_write* w, struct cql_statement* st, const uint8_t* body,
                         int64_t length, struct sluice_error* error) {
  struct sl_cql_cursor c = {body, body + length};
  int32_t kind, flags, n_vars, n_pk;
  const uint8_t* id = NULL;
  uint16_t id_len = 0;
  int bad = sl_cql_read_int(&c, &kind) != 0 || kind != RESULT_PREPARED;
  if (!bad) {  // [short bytes]
    // (An empty id would read as "not prepared": see cql_statement.id_len.)
    bad = sl_cql_read_short(&c, &id_len) != 0 || c.end - c.p < id_len || id_len == 0 ||
          id_len > sizeof st->id;
    id = c.p;
    if (!bad) c.p += id_len;
  }
  bad = bad || sl_cql_read_int(&c, &flags) != 0 || sl_cql_read_int(&c, &n_vars) != 0 ||
        sl_cql_read_int(&c, &n_pk) != 0 || n_vars < 0 || n_vars > 0xFFFF || n_pk < 0 ||
        n_pk > 64;
  if (bad) {
    return sl_error_set(error, EPROTO, "%s: the answer to PREPARE is not a Prepared result",
                        w->name);
  }
  memcpy(st->id, id, id_len);
  st->id_len = id_len;
  st->n_pk = n_pk;
  for (int32_t i = 0; i < n_pk; ++i) {
    // The last variable is USING TIMESTAMP's: never a key column.
    if (sl_cql_read_short(&c, &st->pk[i]) != 0 || st->pk[i] + 1 >= n_vars) {
      return sl_error_set(error, EPROTO, "%s: a Prepared result with a bad partition key index",
                          w->name);
    }
  }
  const uint8_t* s;
  size_t n;
  if (flags & 0x0001) {  // Global_tables_spec: keyspace and table once
    if (sl_cql_read_string(&c, &s, &n) != 0 || sl_cql_read_string(&c, &s, &n) != 0) {
      return sl_error_set(error, EPROTO, "%s: a Prepared result cut short", w->name);
    }
  }
  st->vars = sl_calloc(w->alloc, (size_t)(n_vars > 0 ? n_vars : 1), sizeof *st->vars);
  if (st->vars == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  st->n_vars = n_vars;  // the types not read yet are zeroed: statement_free frees them all
  for (int32_t i = 0; i < n_vars; ++i) {
    if (!(flags & 0x0001) &&
        (sl_cql_read_string(&c, &s, &n) != 0 || sl_cql_read_string(&c, &s, &n) != 0)) {
      return sl_error_set(error, EPROTO, "%s: a Prepared result cut short", w->name);
    }
    if (sl_cql_read_string(&c, &s, &n) != 0) {
      return sl_error_set(error, EPROTO, "%s: a Prepared result cut short", w->name);
    }
    int rc = sl_cql_type_read(&c, (const char*)s, n, w->alloc, &st->vars[i]);
    if (rc == ENOMEM) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
    if (rc != 0) {
      return sl_error_set(error, EPROTO, "%s: bound variable %d of the Prepared result has a "
                          "malformed type", w->name, (int)i);
    }
  }
  return 0;
}

static void statement_free(struct cql_statement* st, const struct sluice_allocator* alloc) {
  if (st->vars != NULL) {
    for (int i = 0; i < st->n_vars; ++i) sl_cql_type_free(&st->vars[i], alloc);
    sl_free(alloc, st->vars, (size_t)(st->n_vars > 0 ? st->n_vars : 1) * sizeof *st->vars);
  }
  sl_buffer_reset(&st->prepare_body);
}

/// Sends the PREPARE of `st` and waits for the answer (nothing else may be
/// in flight: the next answer is taken as this one's).
static int ask_prepare(struct cql_write* w, const struct cql_statement* st,
                       const uint8_t** answer, int64_t* length, struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_cql_send(w->conn, SL_CQL_OP_PREPARE, 0, st->prepare_body.data,
                               (size_t)st->prepare_body.size, error));
  return sl_cql_receive(w->conn, "preparing the INSERT", NULL, answer, length, error);
}

/// Prepares into `st` the INSERT of the `n` columns `cols` (NULL: every
/// column of `row`), whose bound variables must be those columns and the
/// timestamp.
static int prepare_statement(struct cql_write* w, struct cql_statement* st,
                             const struct sl_text_field* row, const int* cols, int n,
                             struct sluice_error* error) {
  struct sl_text t;
  sl_text_init(&t, w->alloc);
  int rc = insert_text(w, row, cols, n, &t);
  if (rc == 0) rc = sl_buffer_append_be(&st->prepare_body, t.len, 4);  // [long string]
  if (rc == 0) rc = sl_buffer_append(&st->prepare_body, t.data, (int64_t)t.len);
  sl_text_reset(&t);
  if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  const uint8_t* answer;
  int64_t answer_len;
  SL_RETURN_NOT_OK(ask_prepare(w, st, &answer, &answer_len, error));
  SL_RETURN_NOT_OK(read_prepared(w, st, answer, answer_len, error));
  if (st->n_vars != n + 1 || st->vars[st->n_vars - 1].id != CQL_BIGINT) {
    return sl_error_set(error, EPROTO,
                        "%s: the INSERT of %d columns has %d bound variables, not the columns "
                        "and a timestamp",
                        w->name, n, st->n_vars);
  }
  return 0;
}

/// Each column's kind in the table (system_schema.columns), and the
/// partition key and static columns: what a row of static values only
/// writes (see row_shape).
static int read_kinds(struct cql_write* w, const struct sl_text_field* row,
                      struct sluice_error* error) {
  struct cql_asker a = {w->name, w->alloc, w->consistency};
  struct cql_table_columns t;
  SL_RETURN_NOT_OK(
      sl_cql_table_columns_read(&a, w->conn, w->address.keyspace, w->address.table, 0, &t, error));
  w->kinds = sl_calloc(w->alloc, (size_t)w->n_columns, sizeof *w->kinds);
  w->statics_cols = sl_calloc(w->alloc, (size_t)w->n_columns, sizeof *w->statics_cols);
  int rc = w->kinds == NULL || w->statics_cols == NULL
               ? sl_error_set(error, ENOMEM, "%s: out of memory", w->name)
               : 0;
  for (int32_t i = 0; i < t.n_columns; ++i) {
    w->table_statics += t.columns[i].kind == CQL_KIND_STATIC;
  }
  for (int v = 0; rc == 0 && v < w->n_columns; ++v) {
    const struct cql_column_info* c = sl_cql_table_column(&t, row->children[v].name);
    w->kinds[v] = c != NULL ? c->kind : CQL_KIND_REGULAR;
    w->n_clustering += w->kinds[v] == CQL_KIND_CLUSTERING;
    w->n_static += w->kinds[v] == CQL_KIND_STATIC;
    if (w->kinds[v] == CQL_KIND_PARTITION_KEY || w->kinds[v] == CQL_KIND_STATIC) {
      w->statics_cols[w->n_statics_cols++] = v;
    }
  }
  sl_cql_table_columns_free(&t, w->alloc);
  return rc;
}

/// CREATE TABLE IF NOT EXISTS of the stream's columns (create=true): an
/// existing table is kept as it is, and the rows go into it as usual.
static int create_table(struct cql_write* w, const struct sl_text_field* row,
                        struct sluice_error* error) {
  if (!w->create) {
    return sl_error_set(error, EINVAL, "%s: partition_key and clustering_key are the key of a "
                        "table to create: they go with create=true", w->name);
  }
  struct sl_text t;
  sl_text_init(&t, w->alloc);
  int rc = sl_cql_create_text(w->address.keyspace, w->address.table, row, &w->schema,
                           w->partition_key, w->clustering_key, w->name, w->alloc, &t, error);
  if (rc == 0) {
    rc = sl_cql_send_query(w->conn, sl_text_cstr(&t), w->consistency, 0, NULL, 0, 0, error);
  }
  const uint8_t* answer;
  int64_t length;
  if (rc == 0) rc = sl_cql_receive_result(w->conn, "creating the table", &answer, &length, error);
  sl_text_reset(&t);
  return rc;
}

/// Prepares the INSERT of the stream's columns, pairs every column with
/// its bound variable's encoder and learns the columns' kinds.
static int prepare(struct cql_write* w, const struct sl_text_field* row,
                   struct sluice_error* error) {
  if (row->n_children == 0) {
    return sl_error_set(error, EINVAL, "%s: the data has no columns to insert", w->name);
  }
  w->n_columns = (int)row->n_children;
  if (w->create || w->partition_key != NULL || w->clustering_key != NULL) {
    SL_RETURN_NOT_OK(create_table(w, row, error));
  }
  SL_RETURN_NOT_OK(prepare_statement(w, &w->whole, row, NULL, w->n_columns, error));
  w->encoders = sl_calloc(w->alloc, (size_t)w->n_columns, sizeof *w->encoders);
  if (w->encoders == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  for (int i = 0; i < w->n_columns; ++i) {
    int rc = sl_cql_encoder_init(&w->encoders[i], &w->whole.vars[i], &row->children[i],
                              row->children[i].name, w->alloc, error);
    if (rc != 0) return sl_error_prefix(error, "%s", w->name);
  }
  return read_kinds(w, row, error);
}

/* ---- Requests in flight ----------------------------------------------------------------- */

static int send_slot(struct cql_write* w, int16_t stream, struct sluice_error* error) {
  const struct cql_slot* s = &w->slots[stream];
  return sl_cql_send(w->conn, s->opcode, stream, s->body.data + s->start,
                     (size_t)(s->body.size - s->start), error);
}

/// Prepares `st` again on a new connection: the node must give it the id
/// the requests in flight carry (it does: the id is a hash of the text).
static int prepare_again(struct cql_write* w, const struct cql_statement* st,
                         struct sluice_error* error) {
  const uint8_t* answer;
  int64_t length;
  SL_RETURN_NOT_OK(ask_prepare(w, st, &answer, &length, error));
  struct sl_cql_cursor c = {answer, answer + length};
  int32_t kind;
  uint16_t n;
  if (sl_cql_read_int(&c, &kind) != 0 || kind != RESULT_PREPARED ||
      sl_cql_read_short(&c, &n) != 0 || n != st->id_len || c.end - c.p < n ||
      memcmp(c.p, st->id, n) != 0) {
    return sl_error_set(error, EPROTO, "%s: on a new connection the node prepared the INSERT "
                        "under another id", w->name);
  }
  return 0;
}

/// The connection broke with requests in flight (node restarted, connection
/// reset): a new connection, the INSERTs prepared again (a
/// restarted node has forgotten them, and the requests in flight may use
/// either) and every request in flight sent again (INSERTs are idempotent).
static int resume(struct cql_write* w, struct sluice_error* error) {
  sl_cql_close(w->conn);
  w->conn = NULL;
  SL_RETURN_NOT_OK(sl_cql_connect(&w->address, w->name, w->alloc, &w->conn, error));
  SL_RETURN_NOT_OK(prepare_again(w, &w->whole, error));
  if (w->statics.id_len > 0) SL_RETURN_NOT_OK(prepare_again(w, &w->statics, error));
  for (int i = 0; i < w->in_flight; ++i) {
    if (w->slots[i].busy) SL_RETURN_NOT_OK(send_slot(w, (int16_t)i, error));
  }
  return 0;
}

/// Waits for one answer and frees its slot; a request the node could not
/// take now is sent again after a pause (its slot stays busy), and a broken
/// connection is replaced (resume).
static int receive_one(struct cql_write* w, struct sluice_error* error) {
  int16_t stream;
  const uint8_t* body;
  int64_t length;
  int rc = sl_cql_receive(w->conn, "inserting", &stream, &body, &length, error);
  struct cql_slot* s = stream >= 0 && stream < w->in_flight ? &w->slots[stream] : NULL;
  int code = sl_cql_server_error(w->conn);
  if (rc != 0 && code < 0 && rc != ENOMEM) {
    while (rc != 0 && rc != ENOMEM && sl_cql_outage_wait(&w->outage)) {
      ++w->reconnects;
      sl_error_clear(error);
      rc = resume(w, error);
    }
    w->broken = rc != 0;
    if (rc != 0 && error != NULL) {
      char message[sizeof error->message];
      snprintf(message, sizeof message, "%s", error->message);
      return sl_error_set(error, rc, "%s (connected %d times, unreachable for %.0f s)", message,
                          w->reconnects + 1, sl_cql_outage_seconds(&w->outage));
    }
    return rc;
  }
  if (rc != 0 && s != NULL && sl_cql_transient(code) && s->attempts + 1 < CQL_WRITE_ATTEMPTS) {
    sl_sleep_ms((long)CQL_RETRY_BASE_MS << s->attempts);
    ++s->attempts;
    rc = send_slot(w, stream, error);
    if (rc != 0 && rc != ENOMEM) {  // broken: the next receive resumes
      sl_error_clear(error);
      rc = 0;
    }
    return rc;
  }
  if (rc != 0 && s != NULL && s->busy && code >= 0) {
    // Answered, if refused: its slot is free (settle waits for the others).
    s->busy = 0;
    w->free_slots[w->n_free++] = stream;
  }
  if (rc != 0 && s != NULL && code >= 0 && error != NULL) {
    char message[sizeof error->message];
    snprintf(message, sizeof message, "%s", error->message);
    // The node's words for a null key column (nulls are sent unset): say so.
    // (A null clustering column is found before sending, see row_shape; a
    // null partition key column of a whole row is left to the node.)
    const char* hint = strstr(message, "Invalid unset value for column") != NULL
                           ? "; a primary key column is null there"
                           : "";
    return sl_error_set(error, rc, "%s (rows %lld to %lld, sent %d times%s)", message,
                        (long long)s->first_row + 1, (long long)(s->first_row + s->n_rows),
                        s->attempts + 1, hint);
  }
  if (rc != 0) return rc;
  if (s == NULL || !s->busy) {
    return sl_error_set(error, EPROTO, "%s: an answer on stream %d, which no request used",
                        w->name, (int)stream);
  }
  s->busy = 0;
  w->reconnects = 0;
  sl_cql_outage_end(&w->outage);
  w->free_slots[w->n_free++] = stream;
  return 0;
}

/// Sends the gathered group: one EXECUTE, or an UNLOGGED BATCH of its rows.
static int send_group(struct cql_write* w, struct sluice_error* error) {
  if (w->filling < 0) return 0;
  struct cql_slot* s = &w->slots[w->filling];
  int rc = 0;
  if (w->group_rows == 1) {
    // The body holds a BATCH of one: <type><n:2><kind><id_len:2><id><values>.
    // An EXECUTE is <id_len:2><id><consistency:2><flags = values><values>:
    // one byte shorter before the values, so it is written over the batch's
    // head from byte 1 on and sent from there. The id is the row's own (of
    // the whole INSERT or the statics one), moved 3 bytes ahead.
    uint8_t* b = s->body.data;
    size_t id_len = (size_t)sl_load_be(b + 4, 2);
    memmove(b + 1, b + 4, 2 + id_len);
    sl_store_be(b + 3 + id_len, (uint64_t)w->consistency, 2);
    b[5 + id_len] = 0x01;
    s->start = 1;
    s->opcode = SL_CQL_OP_EXECUTE;
  } else {
    sl_store_be(s->body.data + 1, (uint64_t)w->group_rows, 2);
    rc = sl_buffer_append_be(&s->body, (unsigned)w->consistency, 2);
    uint8_t flags = 0;
    if (rc == 0) rc = sl_buffer_append(&s->body, &flags, 1);
    s->start = 0;
    s->opcode = SL_CQL_OP_BATCH;
  }
  if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  s->n_rows = w->group_rows;
  s->attempts = 0;
  int16_t stream = (int16_t)w->filling;
  w->filling = -1;
  w->group_rows = 0;
  s->busy = 1;
  rc = send_slot(w, stream, error);
  // A connection that broke under the request fails the next receive, which
  // sends every request in flight again on a new one.
  if (rc != 0 && rc != ENOMEM) {
    sl_error_clear(error);
    rc = 0;
  }
  return rc;
}

/// Starts a group in a free slot (waiting for an answer when none is free).
static int start_group(struct cql_write* w, int64_t first_row, struct sluice_error* error) {
  while (w->n_free == 0) SL_RETURN_NOT_OK(receive_one(w, error));
  w->filling = w->free_slots[--w->n_free];
  struct cql_slot* s = &w->slots[w->filling];
  s->body.size = 0;
  s->first_row = first_row;
  uint8_t head[3] = {1, 0, 0};  // UNLOGGED, statement count filled in by send_group
  int rc = sl_buffer_append(&s->body, head, 3);
  if (rc == 0) rc = sl_buffer_append(&w->group_key, w->key.data, w->key.size);
  return rc == 0 ? 0 : sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
}

/* ---- Rows ---------------------------------------------------------------------------- */

/// The write time of the next row: now, or a microsecond after the last row
/// when rows come faster than the clock ticks (the drivers' monotonic
/// timestamp generators do the same). With the node's own write times, two
/// requests for one key in flight at once could land in either order, and
/// within one batch (one write time) the larger value would win.
static int64_t next_timestamp(struct cql_write* w) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  int64_t us = (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
  w->last_timestamp = us > w->last_timestamp ? us : w->last_timestamp + 1;
  return w->last_timestamp;
}

/// Encodes into w->row (<n><values><timestamp>) row i's values of the
/// columns of its statement (`shape`), and its partition key into w->key.
static int encode_row(struct cql_write* w, const struct ArrowArray* batch, int64_t i,
                      enum row_shape shape, struct sluice_error* error) {
  const struct cql_statement* st = shape == ROW_STATIC ? &w->statics : &w->whole;
  const int* cols = shape == ROW_STATIC ? w->statics_cols : NULL;
  int64_t starts[64];
  for (int p = 0; p < 64; ++p) starts[p] = -1;
  w->row.size = 0;
  w->key.size = 0;
  int rc = sl_buffer_append_be(&w->row, (unsigned)st->n_vars, 2);
  for (int k = 0; rc == 0 && k < st->n_vars - 1; ++k) {
    int v = column_at(cols, k);
    const char* why = NULL;
    int64_t at = w->row.size;
    rc = sl_cql_encode_value(&w->encoders[v], batch->children[v], i, w->nulls, &w->row, &why);
    if (rc == EINVAL) {
      return sl_error_set(error, EINVAL, "%s: row %lld, column '%s': %s", w->name,
                          (long long)(w->rows_seen + i + 1), w->encoders[v].arrow->name, why);
    }
    // The key in the whole INSERT's order (a statics row's key groups with
    // the whole rows of its partition): its variables are the columns.
    for (int p = 0; p < w->whole.n_pk; ++p) {
      if (w->whole.pk[p] == v) starts[p] = at;
    }
  }
  uint8_t stamp[12];  // [bytes] of 8: USING TIMESTAMP's value
  sl_store_be(stamp, 8, 4);
  sl_store_be(stamp + 4, (uint64_t)next_timestamp(w), 8);
  if (rc == 0) rc = sl_buffer_append(&w->row, stamp, sizeof stamp);
  for (int p = 0; rc == 0 && p < w->whole.n_pk; ++p) {
    // A key part the node names but this statement lacks (the node's
    // Prepared answer and system_schema disagree): refused, not read.
    if (starts[p] < 0) {
      return sl_error_set(error, EPROTO, "%s: the node's partition key names a column the "
                          "INSERT does not have", w->name);
    }
    const uint8_t* at = w->row.data + starts[p];
    int32_t n = (int32_t)sl_load_be32(at);
    int64_t len = 4 + (int64_t)(n > 0 ? n : 0);
    if (len > w->row.size - starts[p]) {
      return sl_error_set(error, EPROTO, "%s: a partition key value overruns its row", w->name);
    }
    rc = sl_buffer_append(&w->key, at, len);
  }
  return rc == 0 ? 0 : sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
}

/// A column whose type does not fit its CQL column may only hold nulls
/// (cql_encoder.mismatch): its first value is an error before any row of
/// the batch is sent, so that a wrong column usually fails with nothing
/// written (Cassandra has no transaction to undo earlier batches).
static int check_mismatched(struct cql_write* w, const struct ArrowArray* batch,
                            struct sluice_error* error) {
  for (int v = 0; v < w->n_columns; ++v) {
    const struct cql_encoder* e = &w->encoders[v];
    if (e->mismatch[0] == '\0' || e->arrow == NULL) continue;
    for (int64_t i = 0; i < batch->length; ++i) {
      if (!sl_value_is_null(e->arrow, batch->children[v], i)) {
        return sl_error_set(error, EINVAL, "%s: row %lld, column '%s': %s", w->name,
                            (long long)(w->rows_seen + i + 1), e->arrow->name, e->mismatch);
      }
    }
  }
  return 0;
}

/// The first column of `kind` whose value in row i is null (`null`) or not,
/// or -1.
static int first_of_kind(const struct cql_write* w, const struct ArrowArray* batch, int64_t i,
                         int kind, int null) {
  for (int v = 0; v < w->n_columns; ++v) {
    if (w->kinds[v] == kind &&
        sl_value_is_null(w->encoders[v].arrow, batch->children[v], i) == null) {
      return v;
    }
  }
  return -1;
}

/// Row i's shape. A row whose clustering columns are all null is what a
/// read gives for a partition that holds static values only: it is
/// written as the INSERT of its partition key and static columns, which is
/// how Cassandra stores such a partition (no clustering row is made). Any
/// other null in the clustering columns, or such a row that has no static
/// column to write or holds a value with no row to go to, is EINVAL naming
/// the row and the column.
static int row_shape(const struct cql_write* w, const struct ArrowArray* batch, int64_t i,
                     enum row_shape* shape, struct sluice_error* error) {
  *shape = ROW_WHOLE;
  if (w->n_clustering == 0) return 0;
  int null_ck = first_of_kind(w, batch, i, CQL_KIND_CLUSTERING, 1);
  if (null_ck < 0) return 0;
  long long at = (long long)(w->rows_seen + i + 1);
  const char* ck = w->encoders[null_ck].arrow->name;
  int set_ck = first_of_kind(w, batch, i, CQL_KIND_CLUSTERING, 0);
  if (set_ck >= 0) {
    return sl_error_set(error, EINVAL,
                        "%s: row %lld, column '%s': a null clustering column while clustering "
                        "column '%s' is not (only a row of a partition's static values has "
                        "null clustering columns, and then all of them)",
                        w->name, at, ck, w->encoders[set_ck].arrow->name);
  }
  if (w->n_static == 0) {
    return sl_error_set(error, EINVAL,
                        "%s: row %lld, column '%s': a null clustering column, and %s (a row "
                        "whose clustering columns are null holds a partition's static values "
                        "only)",
                        w->name, at, ck,
                        w->table_statics == 0 ? "the table has no static columns"
                                              : "the data has none of the table's static columns");
  }
  int v = first_of_kind(w, batch, i, CQL_KIND_PARTITION_KEY, 1);
  if (v >= 0) {
    return sl_error_set(error, EINVAL, "%s: row %lld, column '%s': a null partition key column",
                        w->name, at, w->encoders[v].arrow->name);
  }
  v = first_of_kind(w, batch, i, CQL_KIND_REGULAR, 0);
  if (v >= 0) {
    return sl_error_set(error, EINVAL,
                        "%s: row %lld, column '%s': a value in a row whose clustering columns "
                        "are null (a row of a partition's static values only: a column that is "
                        "not static has no row to go to)",
                        w->name, at, w->encoders[v].arrow->name);
  }
  *shape = ROW_STATIC;
  return 0;
}

/// Prepares the INSERT of the partition key and static columns, once, at
/// the first row of static values only (tables without statics never pay
/// for it). Requests in flight are answered first: the PREPARE's answer is
/// taken as the next one to come.
static int prepare_statics(struct cql_write* w, const struct sl_text_field* row,
                           struct sluice_error* error) {
  if (w->statics.id_len > 0) return 0;
  SL_RETURN_NOT_OK(send_group(w, error));
  while (w->n_free < w->in_flight) SL_RETURN_NOT_OK(receive_one(w, error));
  return prepare_statement(w, &w->statics, row, w->statics_cols, w->n_statics_cols, error);
}

/// Checks every row's shape before any row of the batch is sent (as
/// check_mismatched), and prepares the statics INSERT when a row needs it.
static int check_shapes(struct cql_write* w, const struct sl_text_field* row,
                        const struct ArrowArray* batch, struct sluice_error* error) {
  int statics = 0;
  for (int64_t i = 0; i < batch->length; ++i) {
    enum row_shape shape;
    SL_RETURN_NOT_OK(row_shape(w, batch, i, &shape, error));
    statics |= shape == ROW_STATIC;
  }
  return statics ? prepare_statics(w, row, error) : 0;
}

static int write_rows(struct cql_write* w, const struct sl_text_field* row,
                      const struct ArrowArray* batch, struct sluice_error* error) {
  SL_RETURN_NOT_OK(check_mismatched(w, batch, error));
  SL_RETURN_NOT_OK(check_shapes(w, row, batch, error));
  for (int64_t i = 0; i < batch->length; ++i) {
    enum row_shape shape;
    SL_RETURN_NOT_OK(row_shape(w, batch, i, &shape, error));
    SL_RETURN_NOT_OK(encode_row(w, batch, i, shape, error));
    if (w->filling >= 0) {
      // Another partition, a full batch or a large one: send what is gathered.
      struct cql_slot* s = &w->slots[w->filling];
      int same = w->whole.n_pk > 0 && w->key.size == w->group_key.size &&
                 memcmp(w->key.data, w->group_key.data, (size_t)w->key.size) == 0;
      if (!same || w->group_rows >= w->batch_rows ||
          s->body.size + w->row.size > CQL_BATCH_BYTES) {
        SL_RETURN_NOT_OK(send_group(w, error));
      }
    }
    if (w->filling < 0) {
      w->group_key.size = 0;
      SL_RETURN_NOT_OK(start_group(w, w->rows_seen + i, error));
    }
    // A batch may mix the two INSERTs: each statement names its own id.
    const struct cql_statement* st = shape == ROW_STATIC ? &w->statics : &w->whole;
    struct cql_slot* s = &w->slots[w->filling];
    int64_t before = s->body.size;
    uint8_t kind = 1;  // a prepared statement
    int rc = sl_buffer_append(&s->body, &kind, 1);
    if (rc == 0) rc = sl_buffer_append_be(&s->body, st->id_len, 2);
    if (rc == 0) rc = sl_buffer_append(&s->body, st->id, st->id_len);
    if (rc == 0) rc = sl_buffer_append(&s->body, w->row.data, w->row.size);
    if (rc != 0) {
      s->body.size = before;  // whole rows only: settle sends the group
      return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
    }
    ++w->group_rows;
  }
  w->rows_seen += batch->length;
  return 0;
}

/* ---- The writer ---------------------------------------------------------------------- */

static void write_free(struct cql_write* w) {
  sl_cql_close(w->conn);
  if (w->columns_ready) sl_text_field_reset(&w->columns);
  if (w->schema.release != NULL) w->schema.release(&w->schema);
  if (w->encoders != NULL) {
    for (int i = 0; i < w->n_columns; ++i) sl_cql_encoder_free(&w->encoders[i], w->alloc);
    sl_free(w->alloc, w->encoders, (size_t)w->n_columns * sizeof *w->encoders);
  }
  sl_free(w->alloc, w->kinds, (size_t)w->n_columns * sizeof *w->kinds);
  sl_free(w->alloc, w->statics_cols, (size_t)w->n_columns * sizeof *w->statics_cols);
  statement_free(&w->whole, w->alloc);
  statement_free(&w->statics, w->alloc);
  if (w->partition_key != NULL) sl_free(w->alloc, w->partition_key, strlen(w->partition_key) + 1);
  if (w->clustering_key != NULL) {
    sl_free(w->alloc, w->clustering_key, strlen(w->clustering_key) + 1);
  }
  if (w->slots != NULL) {
    for (int i = 0; i < w->in_flight; ++i) sl_buffer_reset(&w->slots[i].body);
    sl_free(w->alloc, w->slots, (size_t)w->in_flight * sizeof *w->slots);
  }
  sl_free(w->alloc, w->free_slots, (size_t)w->in_flight * sizeof *w->free_slots);
  sl_buffer_reset(&w->group_key);
  sl_buffer_reset(&w->row);
  sl_buffer_reset(&w->key);
}

/// After a failed write (a refused batch, a bad value, an input error):
/// sends the rows gathered and waits for every request in flight, so that
/// the rows before the failure are written, as the docs promise. Closing
/// with requests unanswered would reset the connection, and the node may
/// drop what it has not applied yet. A connection that failed for good is
/// just closed. (After cql_finish there is nothing left to do here.)
static void settle(struct cql_write* w) {
  if (w->conn == NULL || w->broken || w->slots == NULL || w->free_slots == NULL) return;
  struct sluice_error ignored;  // the write's own error is the one to report
  memset(&ignored, 0, sizeof ignored);
  int rc = 0;
  if (w->filling >= 0 && w->group_rows == 0) {  // a group started, no row in it
    w->free_slots[w->n_free++] = w->filling;
    w->filling = -1;
  }
  rc = send_group(w, &ignored);
  while (rc == 0 && !w->broken && w->n_free < w->in_flight) {
    int free_before = w->n_free;
    rc = receive_one(w, &ignored);
    // A request the node refused frees its slot: wait for the others.
    if (rc != 0 && w->n_free > free_before) rc = 0;
  }
}

static void cql_close(void* state) {
  struct cql_write* w = state;
  if (w == NULL) return;
  settle(w);
  const struct sluice_allocator* alloc = w->alloc;
  write_free(w);
  sl_free(alloc, w, sizeof *w);
}

/// Connects to the node, creates the table if asked, and prepares the
/// INSERT of `schema`'s columns (a table writer: no sink).
static int cql_open(const struct ArrowSchema* schema, struct sl_sink* sink,
                    const struct sl_write_args* args, void** state, struct sluice_error* error) {
  (void)sink;
  *state = NULL;
  struct cql_write* w = sl_calloc(args->alloc, 1, sizeof *w);
  if (w == NULL) return sl_error_set(error, ENOMEM, "cql://: out of memory");
  w->alloc = args->alloc;
  w->filling = -1;
  sl_buffer_init(&w->group_key, w->alloc);
  sl_buffer_init(&w->row, w->alloc);
  sl_buffer_init(&w->key, w->alloc);
  sl_buffer_init(&w->whole.prepare_body, w->alloc);
  sl_buffer_init(&w->statics.prepare_body, w->alloc);
  const char* location = args->location != NULL ? args->location : "cql://";
  sl_cql_redacted(location, w->name, sizeof w->name);
  // The location first: the TLS options go into the address it sets.
  int rc = sl_cql_parse_location(location, &w->address, w->alloc, error);
  if (rc == 0) rc = parse_options(w, args->format_options, error);
  if (rc == 0 && args->compression != NULL) {  // --compression: the protocol's
    rc = sl_cql_parse_compression(args->compression, strlen(args->compression), "cql write",
                               &w->address.compression, error);
  }
  if (rc == 0) rc = sl_cql_set_tls(&w->address, args->tls_insecure, args->ca_bundle, error);
  w->address.timeout_s = args->timeout_s;
  if (rc == 0) {
    w->slots = sl_calloc(w->alloc, (size_t)w->in_flight, sizeof *w->slots);
    w->free_slots = sl_calloc(w->alloc, (size_t)w->in_flight, sizeof *w->free_slots);
    if (w->slots == NULL || w->free_slots == NULL) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
    } else {
      for (int i = 0; i < w->in_flight; ++i) {
        sl_buffer_init(&w->slots[i].body, w->alloc);
        w->free_slots[w->n_free++] = w->in_flight - 1 - i;  // stream 0 first
      }
    }
  }
  if (rc == 0) rc = sl_schema_copy(schema, w->alloc, &w->schema, error);
  if (rc == 0 && (rc = sl_text_field_init(&w->columns, &w->schema, w->alloc, error)) == 0) {
    w->columns_ready = 1;
  }
  if (rc == 0 && w->columns.type.id != SL_TYPE_STRUCT) {
    char tn[64];
    sl_format_name(w->schema.format, tn, sizeof tn);
    rc = sl_error_set(error, EINVAL, "%s: stream of %s arrays, expected a struct", w->name, tn);
  }
  if (rc == 0) rc = sl_cql_connect(&w->address, w->name, w->alloc, &w->conn, error);
  if (rc == 0) rc = prepare(w, &w->columns, error);
  if (rc != 0) {
    cql_close(w);
    return rc;
  }
  *state = w;
  return 0;
}

/// Sends `batch`'s rows (taken), gathered into CQL batches; a row group
/// means nothing to a table.
static int cql_push(void* state, struct ArrowArray* batch, int flags,
                    struct sluice_error* error) {
  (void)flags;
  struct cql_write* w = state;
  if (batch == NULL || batch->release == NULL) return 0;
  int rc = batch->n_children == w->columns.n_children
               ? write_rows(w, &w->columns, batch, error)
               : sl_error_set(error, EINVAL, "%s: batch has %lld columns, schema %lld", w->name,
                              (long long)batch->n_children, (long long)w->columns.n_children);
  batch->release(batch);
  return rc;
}

/// Sends the last rows gathered and waits for every answer.
static int cql_finish(void* state, struct sluice_error* error) {
  struct cql_write* w = state;
  int rc = send_group(w, error);
  while (rc == 0 && w->n_free < w->in_flight) rc = receive_one(w, error);
  return rc;
}

static const struct sl_format_writer k_cql_writer;

static int cql_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                     const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&k_cql_writer, stream, sink, args, error);
}

static const char* const k_cql_extensions[] = {NULL};
static const struct sl_format_writer k_cql_writer = {
    .name = "cql", .extensions = k_cql_extensions, .write = cql_write, .table = 1,
    .open = cql_open, .push = cql_push, .finish = cql_finish, .close = cql_close};

const struct sl_format_writer* sl_cql_writer(void) { return &k_cql_writer; }
