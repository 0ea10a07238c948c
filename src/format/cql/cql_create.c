// CREATE TABLE IF NOT EXISTS for the cql:// writer (-W create=true): the
// columns' CQL types from their Arrow types, the primary key from the
// partition_key and clustering_key options.
#include "cql_create.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "../../core/sl_alloc.h"
#include "../../core/sl_array.h"
#include "../../core/sl_error.h"
#include "../../core/sl_type.h"
#include "cql_text.h"

/// Whether a CQL type of this Arrow type is a collection or a tuple, which
/// must be frozen inside another collection or in the primary key.
static int needs_freezing(const struct sl_text_field* f) {
  const struct sl_text_field* v = f->dictionary != NULL ? f->dictionary : f;
  switch (v->type.id) {
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST:
    case SL_TYPE_MAP: case SL_TYPE_STRUCT:
      return 1;
    default:
      return 0;
  }
}

static int append_type(struct sl_text* t, const struct sl_text_field* f,
                       const struct ArrowSchema* s, int frozen,
                       const struct sl_text_field** unmapped);

/// `f`'s type, wrapped in frozen<> when it is a collection or tuple.
static int append_frozen(struct sl_text* t, const struct sl_text_field* f,
                         const struct ArrowSchema* s, const struct sl_text_field** unmapped) {
  return append_type(t, f, s, needs_freezing(f), unmapped);
}

/// Whether a fixed_size_list of `element` makes a vector the writer can fill:
/// it encodes vectors of float, double, int and bigint only (the fixed-size
/// elements; the others have a length before each element).
static int vector_element_ok(const struct sl_text_field* element) {
  const struct sl_text_field* e = element->dictionary != NULL ? element->dictionary : element;
  switch (e->type.id) {
    case SL_TYPE_FLOAT: case SL_TYPE_DOUBLE: case SL_TYPE_INT32: case SL_TYPE_UINT16:
    case SL_TYPE_INT64: case SL_TYPE_UINT32:
      return 1;
    default:
      return 0;
  }
}

/// The CQL type that the writer's encoders take values of `f` (schema node
/// `s`, whose extension names tell uuids) as, the nearest one (int64 ->
/// bigint, uint32 -> bigint: no CQL type is unsigned), so that a table
/// sluice read copies with its types: arrow.uuid -> uuid, fixed_size_list ->
/// vector. *unmapped = the field (f or a part of it) that has none: also a
/// fixed_size_list whose elements would make a vector the writer cannot
/// fill (vector_element_ok).
static int append_type(struct sl_text* t, const struct sl_text_field* f,
                       const struct ArrowSchema* s, int frozen,
                       const struct sl_text_field** unmapped) {
  const struct sl_text_field* v = f->dictionary != NULL ? f->dictionary : f;
  if (f->dictionary != NULL) s = s != NULL ? s->dictionary : NULL;
  const char* name = NULL;
  switch (v->type.id) {
    case SL_TYPE_BOOL: name = "boolean"; break;
    case SL_TYPE_INT8: name = "tinyint"; break;
    case SL_TYPE_INT16: case SL_TYPE_UINT8: name = "smallint"; break;
    case SL_TYPE_INT32: case SL_TYPE_UINT16: name = "int"; break;
    case SL_TYPE_INT64: case SL_TYPE_UINT32: name = "bigint"; break;
    case SL_TYPE_UINT64: name = "varint"; break;
    case SL_TYPE_FLOAT: name = "float"; break;
    case SL_TYPE_DOUBLE: name = "double"; break;
    case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING: name = "text"; break;
    case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY:
      name = "blob";
      break;
    case SL_TYPE_FIXED_SIZE_BINARY:
      name = v->type.byte_width == 16 && s != NULL &&
                     sl_metadata_is_extension(s->metadata, "arrow.uuid")
                 ? "uuid"
                 : "blob";
      break;
    case SL_TYPE_DATE32: case SL_TYPE_DATE64: name = "date"; break;
    case SL_TYPE_TIME32: case SL_TYPE_TIME64: name = "time"; break;
    case SL_TYPE_TIMESTAMP: name = "timestamp"; break;
    case SL_TYPE_DECIMAL128: name = "decimal"; break;
    case SL_TYPE_DURATION: case SL_TYPE_INTERVAL_MONTH_DAY_NANO: name = "duration"; break;
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST:
    case SL_TYPE_MAP:
      break;
    case SL_TYPE_STRUCT:
      if (v->n_children > 0) break;
      *unmapped = f;  // CQL has no tuple<>
      return 0;
    default:
      *unmapped = f;  // the caller names the column and its Arrow type
      return 0;
  }
  struct ArrowSchema* const* sc =
      s != NULL && s->n_children == v->n_children ? s->children : NULL;
  int rc = frozen && name == NULL ? sl_text_append_str(t, "frozen<") : 0;
  if (name != NULL) {
    rc = sl_text_append_str(t, name);
  } else if (v->type.id == SL_TYPE_MAP) {
    // map<key, value>: the entries struct's two children
    const struct sl_text_field* entries = &v->children[0];
    const struct ArrowSchema* es = sc != NULL && sc[0]->n_children == 2 ? sc[0] : NULL;
    if (rc == 0) rc = sl_text_append_str(t, "map<");
    if (rc == 0) rc = append_frozen(t, &entries->children[0], es ? es->children[0] : NULL, unmapped);
    if (rc == 0) rc = sl_text_append_str(t, ", ");
    if (rc == 0) rc = append_frozen(t, &entries->children[1], es ? es->children[1] : NULL, unmapped);
    if (rc == 0) rc = sl_text_append_char(t, '>');
  } else if (v->type.id == SL_TYPE_STRUCT) {
    // A tuple (always frozen in CQL): a UDT would need a CREATE TYPE first.
    if (rc == 0) rc = sl_text_append_str(t, "tuple<");
    for (int64_t i = 0; rc == 0 && i < v->n_children; ++i) {
      if (i > 0) rc = sl_text_append_str(t, ", ");
      if (rc == 0) rc = append_frozen(t, &v->children[i], sc ? sc[i] : NULL, unmapped);
    }
    if (rc == 0) rc = sl_text_append_char(t, '>');
  } else if (v->type.id == SL_TYPE_FIXED_SIZE_LIST) {
    // Cassandra 5's vector<T, N> (what sluice reads vectors as).
    if (!vector_element_ok(&v->children[0])) {
      *unmapped = v;
      return 0;
    }
    if (rc == 0) rc = sl_text_append_str(t, "vector<");
    if (rc == 0) rc = append_frozen(t, &v->children[0], sc ? sc[0] : NULL, unmapped);
    char size[32];
    snprintf(size, sizeof size, ", %d>", (int)v->type.list_size);
    if (rc == 0) rc = sl_text_append_str(t, size);
  } else {  // lists
    if (rc == 0) rc = sl_text_append_str(t, "list<");
    if (rc == 0) rc = append_frozen(t, &v->children[0], sc ? sc[0] : NULL, unmapped);
    if (rc == 0) rc = sl_text_append_char(t, '>');
  }
  if (rc == 0 && frozen && name == NULL) rc = sl_text_append_char(t, '>');
  return rc;
}

/// The column of `row` named `name` (n bytes), or -1.
static int64_t column_named(const struct sl_text_field* row, const char* name, size_t n) {
  for (int64_t i = 0; i < row->n_children; ++i) {
    if (strlen(row->children[i].name) == n && memcmp(row->children[i].name, name, n) == 0) {
      return i;
    }
  }
  return -1;
}

/// Appends the '|'-separated columns of `list` as quoted identifiers, ", "
/// between them; each must be a column of `row` (its flag in `in_key` set).
static int append_key(struct sl_text* t, const char* what, const char* list,
                      const struct sl_text_field* row, char* in_key, const char* name,
                      struct sluice_error* error) {
  int first = 1;
  for (const char* p = list; *p != '\0';) {
    size_t n = strcspn(p, "|");
    int64_t c = column_named(row, p, n);
    if (c < 0) {
      return sl_error_set(error, EINVAL, "%s: %s column '%.*s' is not a column of the data",
                          name, what, (int)n, p);
    }
    if (in_key[c]) {
      return sl_error_set(error, EINVAL, "%s: column '%.*s' is named twice in the primary key",
                          name, (int)n, p);
    }
    in_key[c] = 1;
    int rc = first ? 0 : sl_text_append_str(t, ", ");
    if (rc == 0) rc = sl_cql_append_ident(t, row->children[c].name);
    if (rc != 0) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
    first = 0;
    p += n + (p[n] == '|');
  }
  return 0;
}

int sl_cql_create_text(const char* keyspace, const char* table, const struct sl_text_field* row,
                    const struct ArrowSchema* schema, const char* partition_key,
                    const char* clustering_key, const char* name,
                    const struct sluice_allocator* alloc, struct sl_text* t,
                    struct sluice_error* error) {
  if (partition_key == NULL || partition_key[0] == '\0') {
    return sl_error_set(error, EINVAL, "%s: create=true needs partition_key=COLUMN[|COLUMN...] "
                        "(and clustering_key= for more key columns)", name);
  }
  char* in_key = sl_calloc(alloc, (size_t)(row->n_children > 0 ? row->n_children : 1), 1);
  if (in_key == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  struct sl_text key;
  sl_text_init(&key, alloc);
  int rc = sl_text_append_str(&key, "PRIMARY KEY ((") != 0 ? ENOMEM : 0;
  if (rc == 0) rc = append_key(&key, "partition_key", partition_key, row, in_key, name, error);
  if (rc == 0 && sl_text_append_char(&key, ')') != 0) rc = ENOMEM;
  if (rc == 0 && clustering_key != NULL && clustering_key[0] != '\0') {
    if (sl_text_append_str(&key, ", ") != 0) rc = ENOMEM;
    if (rc == 0) rc = append_key(&key, "clustering_key", clustering_key, row, in_key, name, error);
  }
  if (rc == 0 && sl_text_append_char(&key, ')') != 0) rc = ENOMEM;
  if (rc == 0 && (sl_text_append_str(t, "CREATE TABLE IF NOT EXISTS ") != 0 ||
                  sl_cql_append_ident(t, keyspace) != 0 || sl_text_append_char(t, '.') != 0 ||
                  sl_cql_append_ident(t, table) != 0 || sl_text_append_str(t, " (") != 0)) {
    rc = ENOMEM;
  }
  for (int64_t i = 0; rc == 0 && i < row->n_children; ++i) {
    const struct sl_text_field* unmapped = NULL;
    if (sl_cql_append_ident(t, row->children[i].name) != 0 || sl_text_append_char(t, ' ') != 0 ||
        append_type(t, &row->children[i],
                    schema != NULL && schema->n_children == row->n_children ? schema->children[i]
                                                                            : NULL,
                    in_key[i] && needs_freezing(&row->children[i]), &unmapped) != 0 ||
        sl_text_append_str(t, ", ") != 0) {
      rc = ENOMEM;
    } else if (unmapped != NULL && unmapped->type.id == SL_TYPE_FIXED_SIZE_LIST) {
      const struct sl_text_field* e = &unmapped->children[0];
      char element[128];
      sl_type_name(&(e->dictionary != NULL ? e->dictionary : e)->type, element, sizeof element);
      rc = sl_error_set(error, ENOTSUP, "%s: column '%s': a fixed_size_list is created as a CQL "
                        "vector, and sluice writes vectors of float, double, int and bigint "
                        "only (Arrow float32, float64, int32, int64 elements), not of %s; cast "
                        "the column, or create the table yourself (a list takes it)", name,
                        row->children[i].name, element);
    } else if (unmapped != NULL) {
      char arrow[128];
      sl_type_name(&row->children[i].type, arrow, sizeof arrow);
      rc = sl_error_set(error, ENOTSUP, "%s: column '%s' (Arrow %s) has no CQL type to create it "
                        "with (or a part of it has none); create the table yourself", name,
                        row->children[i].name, arrow);
    }
  }
  if (rc == 0 && (sl_text_append(t, sl_text_cstr(&key), key.len) != 0 ||
                  sl_text_append_char(t, ')') != 0)) {
    rc = ENOMEM;
  }
  sl_text_reset(&key);
  sl_free(alloc, in_key, (size_t)(row->n_children > 0 ? row->n_children : 1));
  if (rc == ENOMEM) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  return rc;
}
