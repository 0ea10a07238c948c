// Cassandra tables, written: see cql_writer.h.
#include "cql_writer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_buffer.h"
#include "../../core/sl_endian.h"
#include "../../core/sl_error.h"
#include "../../core/sl_options.h"
#include "../../core/sl_sleep.h"
#include "../../core/sl_value_text.h"
#include "../../io/sl_cql.h"
#include "../text/text_writers.h"  // sl_text_write_stream: the stream walk every row writer shares
#include "cql_encode.h"
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

struct cql_write {
  const struct sluice_allocator* alloc;
  char name[1024];  ///< the location, without its password
  struct sl_cql_address address;
  int consistency;
  int batch_rows;
  int in_flight;
  enum cql_null_mode nulls;
  struct sl_cql_conn* conn;
  int reconnects;  ///< new connections since the last answer
  struct sl_buffer prepare_body;  ///< the PREPARE request, kept to prepare again
  uint8_t id[256];  ///< the prepared statement's id
  uint16_t id_len;
  int n_vars;             ///< the columns', then the timestamp's
  int n_columns;
  struct cql_type* vars;  ///< the bound variables' types, in column order
  /// The write time of the last row (microseconds since 1970): each row
  /// gets a later one, so that a key given twice keeps its last row
  /// whatever order the node applies requests in (see next_timestamp).
  int64_t last_timestamp;
  struct cql_encoder* encoders;
  int n_pk;
  uint16_t pk[64];  ///< bound variables that make the partition key
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
        cql_connection_option(&o, "cql write", &w->address, &connection_option, error));
    if (connection_option) continue;
    if (sl_option_is(&o, "consistency")) {
      SL_RETURN_NOT_OK(
          cql_parse_consistency(o.value, o.value_len, "cql write", &w->consistency, error));
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
                          "in_flight, nulls, tls, tls_cert, tls_key, compression)",
                          (int)o.key_len, o.key);
    }
  }
  return 0;
}

/* ---- Preparing ----------------------------------------------------------------------- */

/// INSERT INTO "ks"."t" ("c1", ...) VALUES (?, ...) USING TIMESTAMP ?
static int insert_text(const struct cql_write* w, const struct sl_text_field* row,
                       struct sl_text* t) {
  int rc = sl_text_append_str(t, "INSERT INTO ");
  if (rc == 0) rc = cql_append_ident(t, w->address.keyspace);
  if (rc == 0) rc = sl_text_append_char(t, '.');
  if (rc == 0) rc = cql_append_ident(t, w->address.table);
  if (rc == 0) rc = sl_text_append_str(t, " (");
  for (int64_t i = 0; rc == 0 && i < row->n_children; ++i) {
    if (i > 0) rc = sl_text_append_str(t, ", ");
    if (rc == 0) rc = cql_append_ident(t, row->children[i].name);
  }
  if (rc == 0) rc = sl_text_append_str(t, ") VALUES (");
  for (int64_t i = 0; rc == 0 && i < row->n_children; ++i) {
    rc = sl_text_append_str(t, i > 0 ? ", ?" : "?");
  }
  return rc == 0 ? sl_text_append_str(t, ") USING TIMESTAMP ?") : rc;
}

/// Reads a Prepared result: the statement id, the partition key's bound
/// variables and every bound variable's type.
static int read_prepared(struct cql_write* w, const uint8_t* body, int64_t length,
                         struct sluice_error* error) {
  struct sl_cql_cursor c = {body, body + length};
  int32_t kind, flags, n_vars, n_pk;
  const uint8_t* id = NULL;
  uint16_t id_len = 0;
  int bad = sl_cql_read_int(&c, &kind) != 0 || kind != RESULT_PREPARED;
  if (!bad) {  // [short bytes]
    bad = sl_cql_read_short(&c, &id_len) != 0 || c.end - c.p < id_len || id_len > sizeof w->id;
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
  memcpy(w->id, id, id_len);
  w->id_len = id_len;
  w->n_pk = n_pk;
  for (int32_t i = 0; i < n_pk; ++i) {
    if (sl_cql_read_short(&c, &w->pk[i]) != 0 || w->pk[i] >= n_vars) {
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
  w->vars = sl_calloc(w->alloc, (size_t)(n_vars > 0 ? n_vars : 1), sizeof *w->vars);
  if (w->vars == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  for (int32_t i = 0; i < n_vars; ++i) {
    if (!(flags & 0x0001) &&
        (sl_cql_read_string(&c, &s, &n) != 0 || sl_cql_read_string(&c, &s, &n) != 0)) {
      return sl_error_set(error, EPROTO, "%s: a Prepared result cut short", w->name);
    }
    if (sl_cql_read_string(&c, &s, &n) != 0) {
      return sl_error_set(error, EPROTO, "%s: a Prepared result cut short", w->name);
    }
    int rc = cql_type_read(&c, (const char*)s, n, w->alloc, &w->vars[i]);
    if (rc == 0) w->n_vars = i + 1;
    if (rc == ENOMEM) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
    if (rc != 0) {
      return sl_error_set(error, EPROTO, "%s: bound variable %d of the Prepared result has a "
                          "malformed type", w->name, (int)i);
    }
  }
  return 0;
}

/// Sends the PREPARE (w->prepare_body) and waits for the answer.
static int ask_prepare(struct cql_write* w, const uint8_t** answer, int64_t* length,
                       struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_cql_send(w->conn, SL_CQL_OP_PREPARE, 0, w->prepare_body.data,
                               (size_t)w->prepare_body.size, error));
  return sl_cql_receive(w->conn, "preparing the INSERT", NULL, answer, length, error);
}

/// Prepares the INSERT of the stream's columns and pairs every column with
/// its bound variable's encoder (sl_text_write_stream's header step).
static int prepare(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                   struct sluice_error* error) {
  (void)sink;
  struct cql_write* w = ctx;
  if (row->n_children == 0) {
    return sl_error_set(error, EINVAL, "%s: the data has no columns to insert", w->name);
  }
  struct sl_text t;
  sl_text_init(&t, w->alloc);
  int rc = insert_text(w, row, &t);
  if (rc != 0) {
    sl_text_reset(&t);
    return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  }
  size_t n = t.len;
  rc = sl_buffer_append_be(&w->prepare_body, n, 4);  // [long string]
  if (rc == 0) rc = sl_buffer_append(&w->prepare_body, t.data, (int64_t)n);
  sl_text_reset(&t);
  if (rc != 0) rc = sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  const uint8_t* answer;
  int64_t answer_len;
  if (rc == 0) rc = ask_prepare(w, &answer, &answer_len, error);
  if (rc == 0) rc = read_prepared(w, answer, answer_len, error);
  if (rc == 0 &&
      (w->n_vars != row->n_children + 1 || w->vars[w->n_vars - 1].id != CQL_BIGINT)) {
    rc = sl_error_set(error, EPROTO,
                      "%s: the INSERT of %lld columns has %d bound variables, not the columns "
                      "and a timestamp",
                      w->name, (long long)row->n_children, w->n_vars);
  }
  if (rc != 0) return rc;
  w->n_columns = (int)row->n_children;
  w->encoders = sl_calloc(w->alloc, (size_t)w->n_columns, sizeof *w->encoders);
  if (w->encoders == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
  for (int i = 0; i < w->n_columns; ++i) {
    rc = cql_encoder_init(&w->encoders[i], &w->vars[i], &row->children[i], row->children[i].name,
                          w->alloc, error);
    if (rc != 0) return sl_error_prefix(error, "%s", w->name);
  }
  return 0;
}

/* ---- Requests in flight ----------------------------------------------------------------- */

static int send_slot(struct cql_write* w, int16_t stream, struct sluice_error* error) {
  const struct cql_slot* s = &w->slots[stream];
  return sl_cql_send(w->conn, s->opcode, stream, s->body.data + s->start,
                     (size_t)(s->body.size - s->start), error);
}

/// The connection broke with requests in flight (node restarted, connection
/// reset): after a pause, a new connection, the INSERT prepared again (the
/// node gives it the same id, a hash of its text) and every request in
/// flight sent again (INSERTs are idempotent).
static int resume(struct cql_write* w, struct sluice_error* error) {
  sl_cql_close(w->conn);
  w->conn = NULL;
  sl_sleep_ms((long)CQL_RETRY_BASE_MS << w->reconnects);
  ++w->reconnects;
  SL_RETURN_NOT_OK(sl_cql_connect(&w->address, w->name, w->alloc, &w->conn, error));
  const uint8_t* answer;
  int64_t length;
  SL_RETURN_NOT_OK(ask_prepare(w, &answer, &length, error));
  struct sl_cql_cursor c = {answer, answer + length};
  int32_t kind;
  uint16_t n;
  if (sl_cql_read_int(&c, &kind) != 0 || kind != RESULT_PREPARED ||
      sl_cql_read_short(&c, &n) != 0 || n != w->id_len || c.end - c.p < n ||
      memcmp(c.p, w->id, n) != 0) {
    return sl_error_set(error, EPROTO, "%s: on a new connection the node prepared the INSERT "
                        "under another id", w->name);
  }
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
    while (rc != 0 && rc != ENOMEM && w->reconnects + 1 < CQL_WRITE_ATTEMPTS) {
      sl_error_clear(error);
      rc = resume(w, error);
    }
    if (rc != 0 && error != NULL) {
      char message[sizeof error->message];
      snprintf(message, sizeof message, "%s", error->message);
      return sl_error_set(error, rc, "%s (connected %d times)", message, w->reconnects + 1);
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
  if (rc != 0 && s != NULL && code >= 0 && error != NULL) {
    char message[sizeof error->message];
    snprintf(message, sizeof message, "%s", error->message);
    // The node's words for a null key column (nulls are sent unset): say so.
    const char* hint = strstr(message, "Invalid unset value for column") != NULL
                           ? "; a primary key column is null there (a row of a partition "
                             "that holds only static values has null clustering columns)"
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
    // head from byte 1 on and sent from there.
    uint8_t* p = s->body.data + 1;
    sl_store_be(p, w->id_len, 2);
    memcpy(p + 2, w->id, w->id_len);
    sl_store_be(p + 2 + w->id_len, (uint64_t)w->consistency, 2);
    p[4 + w->id_len] = 0x01;
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

/// Encodes row i into w->row (<n><values><timestamp>) and its partition key
/// into w->key.
static int encode_row(struct cql_write* w, const struct ArrowArray* batch, int64_t i,
                      struct sluice_error* error) {
  int64_t starts[64] = {0};
  w->row.size = 0;
  w->key.size = 0;
  int rc = sl_buffer_append_be(&w->row, (unsigned)w->n_vars, 2);
  for (int v = 0; rc == 0 && v < w->n_columns; ++v) {
    const char* why = NULL;
    int64_t at = w->row.size;
    rc = cql_encode_value(&w->encoders[v], batch->children[v], i, w->nulls, &w->row, &why);
    if (rc == EINVAL) {
      return sl_error_set(error, EINVAL, "%s: row %lld, column '%s': %s", w->name,
                          (long long)(w->rows_seen + i + 1), w->encoders[v].arrow->name, why);
    }
    for (int k = 0; k < w->n_pk; ++k) {
      if (w->pk[k] == v) starts[k] = at;
    }
  }
  uint8_t stamp[12];  // [bytes] of 8: USING TIMESTAMP's value
  sl_store_be(stamp, 8, 4);
  sl_store_be(stamp + 4, (uint64_t)next_timestamp(w), 8);
  if (rc == 0) rc = sl_buffer_append(&w->row, stamp, sizeof stamp);
  for (int k = 0; rc == 0 && k < w->n_pk; ++k) {
    const uint8_t* p = w->row.data + starts[k];
    int32_t n = (int32_t)sl_load_be32(p);
    rc = sl_buffer_append(&w->key, p, 4 + (n > 0 ? n : 0));
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

static int write_rows(void* ctx, const struct sl_text_field* row, const struct ArrowArray* batch,
                      struct sl_sink* sink, struct sluice_error* error) {
  (void)row, (void)sink;
  struct cql_write* w = ctx;
  SL_RETURN_NOT_OK(check_mismatched(w, batch, error));
  for (int64_t i = 0; i < batch->length; ++i) {
    SL_RETURN_NOT_OK(encode_row(w, batch, i, error));
    if (w->filling >= 0) {
      // Another partition, a full batch or a large one: send what is gathered.
      struct cql_slot* s = &w->slots[w->filling];
      int same = w->n_pk > 0 && w->key.size == w->group_key.size &&
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
    struct cql_slot* s = &w->slots[w->filling];
    uint8_t kind = 1;  // a prepared statement
    int rc = sl_buffer_append(&s->body, &kind, 1);
    if (rc == 0) rc = sl_buffer_append_be(&s->body, w->id_len, 2);
    if (rc == 0) rc = sl_buffer_append(&s->body, w->id, w->id_len);
    if (rc == 0) rc = sl_buffer_append(&s->body, w->row.data, w->row.size);
    if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", w->name);
    ++w->group_rows;
  }
  w->rows_seen += batch->length;
  return 0;
}

/* ---- The writer ---------------------------------------------------------------------- */

static void write_free(struct cql_write* w) {
  sl_cql_close(w->conn);
  if (w->encoders != NULL) {
    for (int i = 0; i < w->n_columns; ++i) cql_encoder_free(&w->encoders[i], w->alloc);
    sl_free(w->alloc, w->encoders, (size_t)w->n_columns * sizeof *w->encoders);
  }
  if (w->vars != NULL) {
    for (int i = 0; i < w->n_vars; ++i) cql_type_free(&w->vars[i], w->alloc);
    sl_free(w->alloc, w->vars, (size_t)(w->n_vars > 0 ? w->n_vars : 1) * sizeof *w->vars);
  }
  if (w->slots != NULL) {
    for (int i = 0; i < w->in_flight; ++i) sl_buffer_reset(&w->slots[i].body);
    sl_free(w->alloc, w->slots, (size_t)w->in_flight * sizeof *w->slots);
  }
  sl_free(w->alloc, w->free_slots, (size_t)w->in_flight * sizeof *w->free_slots);
  sl_buffer_reset(&w->group_key);
  sl_buffer_reset(&w->row);
  sl_buffer_reset(&w->key);
  sl_buffer_reset(&w->prepare_body);
}

static int cql_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                     const struct sl_write_args* args, struct sluice_error* error) {
  (void)sink;
  struct cql_write w;
  memset(&w, 0, sizeof w);
  w.alloc = args->alloc;
  w.filling = -1;
  sl_buffer_init(&w.group_key, w.alloc);
  sl_buffer_init(&w.row, w.alloc);
  sl_buffer_init(&w.key, w.alloc);
  sl_buffer_init(&w.prepare_body, w.alloc);
  const char* location = args->location != NULL ? args->location : "cql://";
  sl_cql_redacted(location, w.name, sizeof w.name);
  // The location first: the TLS options go into the address it sets.
  int rc = sl_cql_parse_location(location, &w.address, w.alloc, error);
  if (rc == 0) rc = parse_options(&w, args->format_options, error);
  if (rc == 0 && args->compression != NULL) {  // --compression: the protocol's
    rc = cql_parse_compression(args->compression, strlen(args->compression), "cql write",
                               &w.address.compression, error);
  }
  if (rc == 0) rc = sl_cql_set_tls(&w.address, args->tls_insecure, args->ca_bundle, error);
  w.address.timeout_s = args->timeout_s;
  if (rc == 0) {
    w.slots = sl_calloc(w.alloc, (size_t)w.in_flight, sizeof *w.slots);
    w.free_slots = sl_calloc(w.alloc, (size_t)w.in_flight, sizeof *w.free_slots);
    if (w.slots == NULL || w.free_slots == NULL) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", w.name);
    } else {
      for (int i = 0; i < w.in_flight; ++i) {
        sl_buffer_init(&w.slots[i].body, w.alloc);
        w.free_slots[w.n_free++] = w.in_flight - 1 - i;  // stream 0 first
      }
    }
  }
  if (rc == 0) rc = sl_cql_connect(&w.address, w.name, w.alloc, &w.conn, error);
  if (rc == 0) {
    struct sl_text_batch_writer rows = {prepare, write_rows, &w};
    rc = sl_text_write_stream(stream, NULL, args, &rows, error);
  }
  if (rc == 0) rc = send_group(&w, error);
  while (rc == 0 && w.n_free < w.in_flight) rc = receive_one(&w, error);
  write_free(&w);
  return rc;
}

const struct sl_format_writer* sl_cql_writer(void) {
  static const char* const extensions[] = {NULL};
  static const struct sl_format_writer writer = {"cql", extensions, cql_write, 1, 0};
  return &writer;
}
