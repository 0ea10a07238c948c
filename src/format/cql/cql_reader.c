// Cassandra tables: see cql_reader.h.
#include "cql_reader.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_array.h"
#include "../../core/sl_builder.h"
#include "../../core/sl_error.h"
#include "../../core/sl_options.h"
#include "../../core/sl_sleep.h"
#include "../../core/sl_value_text.h"
#include "../../io/sl_cql.h"
#include "cql_rows.h"
#include "cql_schema.h"
#include "cql_text.h"
#include "cql_type.h"

#define CQL_DEFAULT_PAGE_ROWS 10000
/// Tries of one page when the node answers that it timed out, is
/// overloaded or lacks replicas (the page is asked for again, from the same
/// paging state, after 100, 200, 400, 800 ms). A page whose connection
/// breaks is asked for on a new one for as long as sl_cql_outage_wait says.
#define CQL_PAGE_ATTEMPTS 5
#define CQL_RETRY_BASE_MS 100
#define CQL_DEFAULT_SPLITS 16
#define CQL_MAX_SPLITS 65536
/// Idle connections kept for later splits.
#define CQL_POOL 16
/// Key columns named in a value's error (a row's key is a few columns).
#define CQL_MAX_KEY_NAMES 8

struct cql_reader {
  const struct sluice_allocator* alloc;
  char* name;  ///< the location
  struct sl_cql_address address;
  int consistency;
  int32_t page_rows;
  int64_t n_splits;  ///< token ranges asked for
  int murmur3;       ///< the cluster's partitioner splits by token
  /// A virtual table (system_views.*, listed in system_virtual_schema):
  /// the node's own state, read whole in one split (no token ranges).
  int virtual_table;
  char* table_ref;   ///< "ks"."t"
  char* token_expr;  ///< token("pk1", "pk2")
  /// The primary key's columns (partition key, then clustering), to name a
  /// row in a value's error.
  char** key_names;
  int n_key_names;
  struct cql_type* columns;
  int64_t n_columns;
  struct ArrowSchema schema;
  pthread_mutex_t lock;
  struct sl_cql_conn* idle[CQL_POOL];
  int n_idle;
};

/* ---- Options ------------------------------------------------------------------ */

static int parse_options(struct cql_reader* r, const char* options, int64_t batch_size,
                         struct sluice_error* error) {
  r->consistency = SL_CQL_LOCAL_ONE;
  r->page_rows = batch_size > 0 && batch_size <= INT32_MAX ? (int32_t)batch_size
                                                            : CQL_DEFAULT_PAGE_ROWS;
  r->n_splits = CQL_DEFAULT_SPLITS;
  struct sl_option o;
  int more;
  while ((more = sl_option_next(&options, &o)) != 0) {
    if (more < 0) {
      return sl_error_set(error, EINVAL, "cql option '%.*s': expected key=value", (int)o.key_len,
                          o.key);
    }
    int64_t count;
    int connection_option;
    SL_RETURN_NOT_OK(sl_cql_connection_option(&o, "cql", &r->address, &connection_option, error));
    if (connection_option) continue;
    if (sl_option_is(&o, "consistency")) {
      SL_RETURN_NOT_OK(sl_cql_parse_consistency(o.value, o.value_len, "cql", &r->consistency, error));
    } else if (sl_option_is(&o, "page_rows")) {
      if (sl_parse_int64(o.value, o.value_len, 1, INT32_MAX, &count) != 0) {
        return sl_error_set(error, EINVAL, "cql option page_rows='%.*s': expected 1 or more",
                            (int)o.value_len, o.value);
      }
      r->page_rows = (int32_t)count;
    } else if (sl_option_is(&o, "splits")) {
      if (sl_parse_int64(o.value, o.value_len, 1, CQL_MAX_SPLITS, &count) != 0) {
        return sl_error_set(error, EINVAL, "cql option splits='%.*s': expected 1 to %d",
                            (int)o.value_len, o.value, CQL_MAX_SPLITS);
      }
      r->n_splits = count;
    } else {
      return sl_error_set(error, EINVAL,
                          "unknown cql option '%.*s' (known: consistency, page_rows, splits, "
                          "tls, tls_cert, tls_key, compression)",
                          (int)o.key_len, o.key);
    }
  }
  return 0;
}

/* ---- Connections -------------------------------------------------------------- */

static int conn_get(struct cql_reader* r, struct sl_cql_conn** out, struct sluice_error* error) {
  pthread_mutex_lock(&r->lock);
  *out = r->n_idle > 0 ? r->idle[--r->n_idle] : NULL;
  pthread_mutex_unlock(&r->lock);
  if (*out != NULL) return 0;
  return sl_cql_connect(&r->address, r->name, r->alloc, out, error);
}

/// Back to the pool; a connection with an answer still unread is closed.
static void conn_put(struct cql_reader* r, struct sl_cql_conn* c, int clean) {
  if (c == NULL) return;
  pthread_mutex_lock(&r->lock);
  if (clean && r->n_idle < CQL_POOL) {
    r->idle[r->n_idle++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&r->lock);
  sl_cql_close(c);
}

/* ---- Query text ----------------------------------------------------------------- */

static char* text_copy(struct sl_text* t, const struct sluice_allocator* alloc) {
  return sl_strndup(alloc, sl_text_cstr(t), t->len);
}

/// Who the reader's queries come from (cql_rows.h).
static struct cql_asker asker(const struct cql_reader* r) {
  struct cql_asker a = {r->name, r->alloc, r->consistency};
  return a;
}

/* ---- Open ----------------------------------------------------------------------- */

static void cql_close(void* reader) {
  struct cql_reader* r = reader;
  if (r == NULL) return;
  for (int i = 0; i < r->n_idle; ++i) sl_cql_close(r->idle[i]);
  sl_cql_types_free(r->columns, r->n_columns, r->alloc);
  if (r->schema.release != NULL) r->schema.release(&r->schema);
  if (r->name != NULL) sl_free(r->alloc, r->name, strlen(r->name) + 1);
  if (r->table_ref != NULL) sl_free(r->alloc, r->table_ref, strlen(r->table_ref) + 1);
  if (r->token_expr != NULL) sl_free(r->alloc, r->token_expr, strlen(r->token_expr) + 1);
  for (int i = 0; i < r->n_key_names; ++i) {
    sl_free(r->alloc, r->key_names[i], strlen(r->key_names[i]) + 1);
  }
  if (r->key_names != NULL) {
    sl_free(r->alloc, r->key_names, CQL_MAX_KEY_NAMES * sizeof *r->key_names);
  }
  pthread_mutex_destroy(&r->lock);
  sl_free(r->alloc, r, sizeof *r);
}

/// token("pk1", "pk2"): the partition key columns of `t` in their order.
static int token_expr(struct cql_reader* r, const struct cql_table_columns* t,
                      struct sluice_error* error) {
  struct sl_text key;
  sl_text_init(&key, r->alloc);
  int rc = sl_text_append_str(&key, "token(") != 0 ? ENOMEM : 0;
  int n_keys = 0;
  for (int32_t i = 0; i < t->n_columns; ++i) n_keys += t->columns[i].kind == CQL_KIND_PARTITION_KEY;
  if (rc == 0 && n_keys == 0) {
    rc = sl_error_set(error, EPROTO, "%s: the schema lists no partition key", r->name);
  }
  if (rc == 0 && n_keys > 64) {  // (the pick below is O(n^2); CQL tables have a few)
    rc = sl_error_set(error, ENOTSUP, "%s: %d partition key columns (at most 64)", r->name,
                      n_keys);
  }
  // Partition key columns by position (at most a few: an O(n^2) pick).
  for (int k = 0; rc == 0 && k < n_keys; ++k) {
    const struct cql_column_info* best = NULL;
    for (int32_t i = 0; i < t->n_columns; ++i) {
      const struct cql_column_info* c = &t->columns[i];
      if (c->kind == CQL_KIND_PARTITION_KEY && c->position == k) best = c;
    }
    if (best == NULL) {
      rc = sl_error_set(error, EPROTO, "%s: partition key position %d is missing", r->name, k);
      break;
    }
    if ((k > 0 && sl_text_append(&key, ", ", 2) != 0) || sl_cql_append_ident(&key, best->name) != 0) {
      rc = ENOMEM;
    }
  }
  if (rc == 0 && sl_text_append_char(&key, ')') != 0) rc = ENOMEM;
  if (rc == 0) {
    r->token_expr = text_copy(&key, r->alloc);
    if (r->token_expr == NULL) rc = ENOMEM;
  }
  if (rc == ENOMEM) sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  sl_text_reset(&key);
  return rc;
}

/// r->key_names: the partition key's columns, then the clustering ones, each
/// in its position (the first CQL_MAX_KEY_NAMES).
static int key_names(struct cql_reader* r, const struct cql_table_columns* t,
                     struct sluice_error* error) {
  r->key_names = sl_calloc(r->alloc, CQL_MAX_KEY_NAMES, sizeof *r->key_names);
  if (r->key_names == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  static const int kinds[] = {CQL_KIND_PARTITION_KEY, CQL_KIND_CLUSTERING};
  for (int k = 0; k < 2; ++k) {
    for (int32_t pos = 0; pos < t->n_columns && r->n_key_names < CQL_MAX_KEY_NAMES; ++pos) {
      const struct cql_column_info* c = NULL;
      for (int32_t i = 0; i < t->n_columns; ++i) {
        if (t->columns[i].kind == kinds[k] && t->columns[i].position == pos) c = &t->columns[i];
      }
      if (c == NULL) break;
      r->key_names[r->n_key_names] = sl_strdup(r->alloc, c->name);
      if (r->key_names[r->n_key_names] == NULL) {
        return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
      }
      ++r->n_key_names;
    }
  }
  return 0;
}

/// The partitioner (token splits only for Murmur3), the partition key
/// columns in order (token(...)), the table's existence.
static int read_table_facts(struct cql_reader* r, struct sl_cql_conn* conn,
                            struct sluice_error* error) {
  struct cql_asker a = asker(r);
  struct cql_rows rows;
  const uint8_t* v;
  int32_t n;
  const char* what = "reading system.local";
  SL_RETURN_NOT_OK(sl_cql_small_query(&a, conn, "SELECT partitioner FROM system.local", what, &rows,
                                   NULL, error));
  if (rows.n_rows >= 1 && rows.n_columns == 1) {
    SL_RETURN_NOT_OK(sl_cql_next_cell(&a, what, &rows, &v, &n, error));
    static const char murmur3[] = "org.apache.cassandra.dht.Murmur3Partitioner";
    r->murmur3 = n == (int32_t)sizeof murmur3 - 1 && memcmp(v, murmur3, (size_t)n) == 0;
  }
  struct cql_table_columns t;
  SL_RETURN_NOT_OK(
      sl_cql_table_columns_read(&a, conn, r->address.keyspace, r->address.table, 1, &t, error));
  int rc = 0;
  if (t.n_columns == 0) {
    rc = sl_error_set(error, ENOENT,
                      "%s: no table '%s' in keyspace '%s' (names are case-sensitive, as "
                      "system_schema.tables and system_virtual_schema.tables list them)",
                      r->name, r->address.table, r->address.keyspace);
  }
  r->virtual_table = t.virtual_table;
  if (rc == 0) rc = token_expr(r, &t, error);
  if (rc == 0) rc = key_names(r, &t, error);
  sl_cql_table_columns_free(&t, r->alloc);
  return rc;
}

/// The columns and their types: the metadata of SELECT * ... LIMIT 1.
static int read_columns(struct cql_reader* r, struct sl_cql_conn* conn,
                        struct sluice_error* error) {
  struct sl_text q;
  sl_text_init(&q, r->alloc);
  int rc = sl_text_append_str(&q, "SELECT * FROM ");
  if (rc == 0) rc = sl_text_append_str(&q, r->table_ref);
  if (rc == 0) rc = sl_text_append_str(&q, " LIMIT 1");
  if (rc != 0) {
    sl_text_reset(&q);
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  }
  struct cql_rows rows;
  struct cql_asker a = asker(r);
  rc = sl_cql_small_query(&a, conn, sl_text_cstr(&q), "reading the table's columns", &rows,
                       &r->columns, error);
  sl_text_reset(&q);
  if (rc != 0) return rc;
  r->n_columns = rows.n_columns;
  rc = sl_schema_init(&r->schema, r->alloc, "+s", "", 0, r->n_columns, error);
  for (int64_t i = 0; rc == 0 && i < r->n_columns; ++i) {
    rc = sl_cql_type_arrow_schema(&r->columns[i], r->alloc, r->schema.children[i], error);
  }
  return rc;
}

static int cql_open(const struct sl_reader_args* args, void** reader,
                    struct sluice_error* error) {
  *reader = NULL;
  const char* location = args->location != NULL ? args->location : "cql://";
  char shown[1024];  // the location in messages: no password
  sl_cql_redacted(location, shown, sizeof shown);
  struct cql_reader* r = sl_calloc(args->alloc, 1, sizeof *r);
  if (r == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", shown);
  r->alloc = args->alloc;
  pthread_mutex_init(&r->lock, NULL);
  r->name = sl_strdup(r->alloc, shown);
  int rc = r->name == NULL ? sl_error_set(error, ENOMEM, "%s: out of memory", shown) : 0;
  // The location first: the TLS options go into the address it sets.
  if (rc == 0) rc = sl_cql_parse_location(location, &r->address, r->alloc, error);
  if (rc == 0) rc = parse_options(r, args->format_options, args->batch_size, error);
  if (rc == 0) rc = sl_cql_set_tls(&r->address, args->tls_insecure, args->ca_bundle, error);
  r->address.timeout_s = args->timeout_s;
  if (rc == 0) {
    struct sl_text t;
    sl_text_init(&t, r->alloc);
    rc = sl_cql_append_ident(&t, r->address.keyspace);
    if (rc == 0) rc = sl_text_append_char(&t, '.');
    if (rc == 0) rc = sl_cql_append_ident(&t, r->address.table);
    if (rc == 0) r->table_ref = text_copy(&t, r->alloc);
    if (rc != 0 || r->table_ref == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", shown);
    sl_text_reset(&t);
  }
  struct sl_cql_conn* conn = NULL;
  if (rc == 0) rc = conn_get(r, &conn, error);
  if (rc == 0) rc = read_table_facts(r, conn, error);
  if (rc == 0) rc = read_columns(r, conn, error);
  conn_put(r, conn, rc == 0);
  if (rc != 0) {
    cql_close(r);
    return rc;
  }
  *reader = r;
  return 0;
}

static int cql_schema(void* reader, struct ArrowSchema* out, struct sluice_error* error) {
  struct cql_reader* r = reader;
  return sl_schema_copy(&r->schema, r->alloc, out, error);
}

/* ---- Plan ------------------------------------------------------------------------- */

/// Token i of n equal steps over the Murmur3 ring [-2^63, 2^63 - 1].
static int64_t ring_bound(int64_t i, int64_t n) {
  if (i >= n) return INT64_MAX;
  uint64_t step = UINT64_MAX / (uint64_t)n;
  uint64_t u = (uint64_t)1 << 63;  // INT64_MIN's bits
  u += (uint64_t)i * step;
  int64_t v;
  memcpy(&v, &u, sizeof v);
  return v;
}

static int cql_plan(void* reader, struct sl_split** splits, int64_t* n,
                    struct sluice_error* error) {
  struct cql_reader* r = reader;
  int64_t count = r->murmur3 && !r->virtual_table ? r->n_splits : 1;
  *splits = sl_calloc(r->alloc, (size_t)count, sizeof **splits);
  if (*splits == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  for (int64_t i = 0; i < count; ++i) {
    struct sl_split* s = &(*splits)[i];
    s->index = i;
    // A token range (offset, length]: the whole ring when there is one split.
    s->offset = ring_bound(i, count);
    s->length = ring_bound(i + 1, count);
    s->est_bytes = 0;
    s->est_rows = -1;
  }
  *n = count;
  return 0;
}

/* ---- Splits ------------------------------------------------------------------------- */

struct cql_split {
  struct cql_reader* r;
  int64_t index, token_lo, token_hi;
  struct sl_cql_conn* conn;
  char* query;
  int64_t n_columns;
  const struct cql_type** types;
  struct ArrowSchema schema;
  struct sl_builder batch;
  /// The connection may serve another split: no answer left unread, no
  /// I/O or protocol error part-way through a frame.
  int reusable;
  int done;
  /// The paging state of the page asked for last (has_paging 0: the first
  /// page), kept to ask for it again.
  uint8_t* paging;
  int32_t paging_len;
  size_t paging_cap;
  int has_paging;
  int attempts;  ///< tries of the page asked for last
  int busy;      ///< of them, answered "not now" (sl_cql_transient)
  struct sl_cql_outage outage;  ///< failed connections since the last page
  int64_t rows_read;
};

static void cql_split_close(void* state) {
  struct cql_split* s = state;
  if (s == NULL) return;
  conn_put(s->r, s->conn, s->reusable);
  sl_builder_release(&s->batch);
  if (s->schema.release != NULL) s->schema.release(&s->schema);
  if (s->types != NULL) {
    sl_free(s->r->alloc, s->types, (size_t)(s->n_columns > 0 ? s->n_columns : 1) * sizeof *s->types);
  }
  if (s->query != NULL) sl_free(s->r->alloc, s->query, strlen(s->query) + 1);
  sl_free(s->r->alloc, s->paging, s->paging_cap);
  sl_free(s->r->alloc, s, sizeof *s);
}

static int build_query(struct cql_split* s, const int64_t* columns, int one_split) {
  struct cql_reader* r = s->r;
  struct sl_text q;
  sl_text_init(&q, r->alloc);
  int rc = sl_text_append_str(&q, "SELECT ");
  for (int64_t i = 0; rc == 0 && i < s->n_columns; ++i) {
    if (i > 0) rc = sl_text_append(&q, ", ", 2);
    if (rc == 0) rc = sl_cql_append_ident(&q, r->columns[columns != NULL ? columns[i] : i].name);
  }
  if (rc == 0) rc = sl_text_append_str(&q, " FROM ");
  if (rc == 0) rc = sl_text_append_str(&q, r->table_ref);
  if (rc == 0 && !one_split) {
    char bounds[96];
    snprintf(bounds, sizeof bounds, " > %" PRId64 " AND ", s->token_lo);
    rc = sl_text_append_str(&q, " WHERE ");
    if (rc == 0) rc = sl_text_append_str(&q, r->token_expr);
    if (rc == 0) rc = sl_text_append_str(&q, bounds);
    snprintf(bounds, sizeof bounds, " <= %" PRId64, s->token_hi);
    if (rc == 0) rc = sl_text_append_str(&q, r->token_expr);
    if (rc == 0) rc = sl_text_append_str(&q, bounds);
  }
  if (rc == 0) s->query = text_copy(&q, r->alloc);
  sl_text_reset(&q);
  return rc != 0 || s->query == NULL ? ENOMEM : 0;
}

/// Asks for the page after `state` (NULL: the first page), keeping a copy
/// of the state to ask again.
static int ask_page(struct cql_split* s, const uint8_t* state, int32_t len,
                    struct sluice_error* error) {
  struct cql_reader* r = s->r;
  if (state != NULL && state != s->paging) {
    if ((size_t)len > s->paging_cap) {
      uint8_t* grown = sl_alloc(r->alloc, (size_t)len);
      if (grown == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
      sl_free(r->alloc, s->paging, s->paging_cap);
      s->paging = grown;
      s->paging_cap = (size_t)len;
    }
    memcpy(s->paging, state, (size_t)len);
    s->paging_len = len;
    s->has_paging = 1;
  }
  return sl_cql_send_query(s->conn, s->query, r->consistency, r->page_rows,
                           s->has_paging ? s->paging : NULL, s->paging_len, 1, error);
}

/// After the connection broke (rather than the node answering with an
/// error): a new connection, and the page asked for again from the paging
/// state it was asked with, so that no row is read twice or lost.
static int ask_on_new_connection(struct cql_split* s, struct sluice_error* error) {
  struct cql_reader* r = s->r;
  sl_cql_close(s->conn);
  s->conn = NULL;
  SL_RETURN_NOT_OK(sl_cql_connect(&r->address, r->name, r->alloc, &s->conn, error));
  return ask_page(s, s->has_paging ? s->paging : NULL, s->paging_len, error);
}

static int cql_split_open(void* reader, const struct sl_split* split, const int64_t* columns,
                          int64_t n_columns, void** state, int* projected,
                          struct sluice_error* error) {
  struct cql_reader* r = reader;
  *state = NULL;
  // No columns asked for (a row count): read them all, the engine projects.
  if (columns != NULL && n_columns == 0) columns = NULL;
  *projected = columns != NULL;
  struct cql_split* s = sl_calloc(r->alloc, 1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  s->r = r;
  s->index = split->index;
  s->token_lo = split->offset;
  s->token_hi = split->length;
  s->n_columns = columns != NULL ? n_columns : r->n_columns;
  s->types = sl_calloc(r->alloc, (size_t)(s->n_columns > 0 ? s->n_columns : 1), sizeof *s->types);
  int rc = s->types == NULL ? ENOMEM : 0;
  for (int64_t i = 0; rc == 0 && i < s->n_columns; ++i) {
    int64_t c = columns != NULL ? columns[i] : i;
    if (c < 0 || c >= r->n_columns) {
      cql_split_close(s);
      return sl_error_set(error, EINVAL, "%s: column index %" PRId64 " out of range", r->name, c);
    }
    s->types[i] = &r->columns[c];
  }
  if (rc == 0) rc = build_query(s, columns, !r->murmur3 || r->virtual_table || r->n_splits == 1);
  if (rc != 0) {
    cql_split_close(s);
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  }
  rc = columns != NULL ? sl_schema_project(&r->schema, columns, n_columns, r->alloc, &s->schema,
                                           error)
                       : sl_schema_copy(&r->schema, r->alloc, &s->schema, error);
  if (rc == 0) rc = sl_builder_init_from_schema(&s->batch, &s->schema, r->alloc, error);
  if (rc == 0) {
    rc = conn_get(r, &s->conn, error);
    if (rc == 0) rc = ask_page(s, NULL, 0, error);
    // A pooled connection the node has closed since, or a node restarting:
    // asked again on a new connection.
    while (rc != 0 && rc != ENOMEM && sl_cql_outage_wait(&s->outage)) {
      sl_error_clear(error);
      ++s->attempts;
      rc = ask_on_new_connection(s, error);
    }
    if (rc != 0 && s->attempts > 0 && error != NULL) {
      char message[sizeof error->message];
      snprintf(message, sizeof message, "%s", error->message);
      rc = sl_error_set(error, rc, "%s (asked %d times, unreachable for %.0f s)", message,
                        s->attempts + 1, sl_cql_outage_seconds(&s->outage));
    }
  }
  if (rc != 0) {
    cql_split_close(s);
    return rc;
  }
  *state = s;
  return 0;
}

/// " (k=7, c='x')": the primary key of the row at `at` (its columns the
/// split reads), to find a row whose value is an error; "" when the split
/// reads none of them or they cannot be decoded either.
static void row_key_text(struct cql_split* s, struct sl_cql_cursor at, char* out, size_t cap) {
  struct cql_reader* r = s->r;
  out[0] = '\0';
  const uint8_t* cell[CQL_MAX_KEY_NAMES];
  int32_t len[CQL_MAX_KEY_NAMES];
  int64_t column[CQL_MAX_KEY_NAMES];
  const char* name[CQL_MAX_KEY_NAMES];
  int n = 0;
  for (int k = 0; k < r->n_key_names; ++k) {
    for (int64_t c = 0; c < s->n_columns; ++c) {
      if (strcmp(s->types[c]->name, r->key_names[k]) == 0) {
        name[n] = r->key_names[k], column[n++] = c;
        break;
      }
    }
  }
  if (n == 0) return;
  // The row's cells into a one-row batch: its key columns' values, others null.
  struct sl_builder b;
  struct sluice_error ignored = {0};
  if (sl_builder_init_from_schema(&b, &s->schema, r->alloc, &ignored) != 0) return;
  int rc = 0;
  for (int64_t c = 0; rc == 0 && c < s->n_columns; ++c) {
    const uint8_t* v;
    int32_t vn;
    if (sl_cql_read_bytes(&at, &v, &vn) != 0) rc = EILSEQ;
    for (int k = 0; rc == 0 && k < n; ++k) {
      if (column[k] == c) cell[k] = v, len[k] = vn;
    }
  }
  const char* why;
  for (int64_t c = 0; rc == 0 && c < s->n_columns; ++c) {
    int k = 0;
    while (k < n && column[k] != c) ++k;
    rc = sl_cql_value_append(s->types[c], sl_builder_child(&b, c), k < n ? cell[k] : NULL,
                             k < n ? len[k] : -1, &why);
  }
  struct ArrowArray batch = {0};
  if (rc == 0) rc = sl_builder_struct_finish_rows(&b, 1);
  if (rc == 0) rc = sl_builder_finish(&b, &batch, &ignored);
  sl_builder_release(&b);
  struct sl_text_field f;
  if (rc == 0 && sl_text_field_init(&f, &s->schema, r->alloc, &ignored) == 0) {
    struct sl_text t;
    sl_text_init(&t, r->alloc);
    for (int k = 0; rc == 0 && k < n; ++k) {
      const struct sl_text_field* kf = &f.children[column[k]];
      int quote = kf->type.id == SL_TYPE_STRING || kf->type.id == SL_TYPE_LARGE_STRING;
      rc = sl_text_append_str(&t, k == 0 ? " (" : ", ");
      if (rc == 0) rc = sl_text_append_str(&t, name[k]);
      if (rc == 0) rc = sl_text_append_str(&t, quote ? "='" : "=");
      if (rc == 0) {
        rc = sl_value_render(kf, batch.children[column[k]], 0, SL_TEXT_PLAIN, &t, &ignored);
      }
      if (rc == 0 && quote) rc = sl_text_append_char(&t, '\'');
    }
    if (rc == 0) rc = sl_text_append_char(&t, ')');
    if (rc == 0) snprintf(out, cap, "%s", sl_text_cstr(&t));
    sl_text_reset(&t);
    sl_text_field_reset(&f);
  }
  if (batch.release != NULL) batch.release(&batch);
}

/// Decodes the rows of one page into the batch builder.
static int decode_page(struct cql_split* s, struct cql_rows* rows, struct sluice_error* error) {
  struct cql_reader* r = s->r;
  if (rows->n_columns != s->n_columns) {
    return sl_error_set(error, EPROTO, "%s: split %" PRId64 ": a page has %d columns, not %" PRId64,
                        r->name, s->index, (int)rows->n_columns, s->n_columns);
  }
  if (sl_builder_reserve_tree(&s->batch, rows->n_rows) != 0) {
    return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
  }
  for (int32_t row = 0; row < rows->n_rows; ++row) {
    struct sl_cql_cursor row_start = rows->rows;
    for (int64_t c = 0; c < s->n_columns; ++c) {
      const uint8_t* v;
      int32_t n;
      const char* why = "a value runs past the end of the page";
      int rc = sl_cql_read_bytes(&rows->rows, &v, &n) != 0
                   ? EILSEQ
                   : sl_cql_value_append(s->types[c], sl_builder_child(&s->batch, c), v, n, &why);
      if (rc == ENOMEM) return sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
      if (rc != 0) {
        // Rows count from 1, as the writer's do.
        char key[512];
        row_key_text(s, row_start, key, sizeof key);
        return sl_error_set(error, EILSEQ,
                            "%s: split %" PRId64 " (tokens %" PRId64 " to %" PRId64
                            "), row %" PRId64 " of the split%s, column '%s': %s",
                            r->name, s->index, s->token_lo, s->token_hi,
                            s->rows_read + row + 1, key, s->types[c]->name, why);
      }
    }
  }
  s->rows_read += rows->n_rows;
  return sl_builder_struct_finish_rows(&s->batch, rows->n_rows) == 0
             ? 0
             : sl_error_set(error, ENOMEM, "%s: out of memory", r->name);
}

static int cql_split_next(void* state, struct ArrowArray* out, struct sluice_error* error) {
  struct cql_split* s = state;
  struct cql_reader* r = s->r;
  out->release = NULL;
  while (!s->done) {
    char what[64];
    snprintf(what, sizeof what, "split %" PRId64, s->index);
    const uint8_t* body;
    int64_t len;
    struct cql_rows rows;
    int rc = sl_cql_receive_result(s->conn, what, &body, &len, error);
    // Asked again after a pause: a page the node could not serve now, or one
    // whose connection broke (node restarted, connection reset), on a new one.
    int code = sl_cql_server_error(s->conn);
    int broken = rc != 0 && code < 0 && rc != ENOMEM;
    int asked_again = 0;
    while (rc != 0 && (broken ? sl_cql_outage_wait(&s->outage)
                              : sl_cql_transient(code) && s->busy + 1 < CQL_PAGE_ATTEMPTS)) {
      if (!broken) sl_sleep_ms((long)CQL_RETRY_BASE_MS << s->busy++);
      ++s->attempts;
      sl_error_clear(error);
      rc = broken ? ask_on_new_connection(s, error)
                  : ask_page(s, s->has_paging ? s->paging : NULL, s->paging_len, error);
      asked_again = rc == 0;
      broken = rc != 0 && rc != ENOMEM;  // could not even ask: the connection is gone
      code = -1;
    }
    if (asked_again) continue;
    if (rc != 0 && s->attempts > 0 && error != NULL) {
      char message[sizeof error->message];
      snprintf(message, sizeof message, "%s", error->message);
      if (s->outage.tries > 0) {
        rc = sl_error_set(error, rc, "%s (asked %d times, unreachable for %.0f s)", message,
                          s->attempts + 1, sl_cql_outage_seconds(&s->outage));
      } else {
        rc = sl_error_set(error, rc, "%s (asked %d times)", message, s->attempts + 1);
      }
    }
    s->attempts = 0;
    s->busy = 0;
    if (rc == 0) sl_cql_outage_end(&s->outage);
    struct cql_asker a = asker(r);
    if (rc == 0) rc = sl_cql_rows_parse(&a, what, body, len, &rows, NULL, error);
    if (rc != 0) {
      s->done = 1;
      return rc;
    }
    // Ask for the next page before decoding this one: the node reads it
    // while we decode (the answer waits in the socket).
    if (rows.paging_state != NULL) {
      rc = ask_page(s, rows.paging_state, rows.paging_len, error);
      // A connection that broke under the request fails the next receive,
      // which asks again on a new one: decode this page first.
      if (rc != 0 && rc != ENOMEM) {
        sl_error_clear(error);
        rc = 0;
      }
    } else {
      s->done = 1;
      s->reusable = 1;  // every answer read
    }
    if (rc == 0) rc = decode_page(s, &rows, error);
    if (rc != 0) {
      s->done = 1;
      sl_builder_reset(&s->batch);
      return rc;
    }
    if (rows.n_rows > 0) return sl_builder_finish(&s->batch, out, error);
  }
  return 0;
}

/* ---- Table ------------------------------------------------------------------------ */

/// Never detected from bytes: a cql:// location picks it.
static int cql_probe(const uint8_t* head, int64_t n) {
  (void)head;
  (void)n;
  return 0;
}

static const char* const k_extensions[] = {NULL};

static const struct sl_format_reader k_reader = {
    .name = "cql",
    .extensions = k_extensions,
    .probe = cql_probe,
    .open = cql_open,
    .schema = cql_schema,
    .plan_splits = cql_plan,
    .split_open = cql_split_open,
    .split_next = cql_split_next,
    .split_close = cql_split_close,
    .close = cql_close,
    .stored_stats = NULL,
};

const struct sl_format_reader* sl_cql_reader(void) { return &k_reader; }
