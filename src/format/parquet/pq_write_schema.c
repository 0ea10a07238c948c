// Arrow schema -> Parquet schema, the way Arrow C++ maps types (with its
// default "compliant nested types": list groups "list"/"element", maps
// "key_value"/"key"/"value"). Each leaf remembers the Arrow nodes on its path
// so that pq_write_levels.c can compute definition and repetition levels.
//
//   null -> INT32 (NULL); bool -> BOOLEAN; int8/16, uint8/16/32 -> INT32
//   INTEGER(bits, signed); int32 -> INT32; int64 -> INT64; uint64 -> INT64
//   INTEGER(64, false); halffloat -> FLBA(2) FLOAT16; float, double;
//   utf8/large_utf8 -> BYTE_ARRAY STRING; binary/large_binary -> BYTE_ARRAY;
//   fixed_size_binary[n] -> FLBA(n); decimal128/256 -> FLBA(minimal bytes for
//   the precision) DECIMAL; date32 / date64 -> INT32 DATE; time32[s|ms] ->
//   INT32 TIME(ms); time64[us|ns] -> INT64 TIME; timestamp[s|ms] -> INT64
//   TIMESTAMP(ms), [us], [ns], isAdjustedToUTC when there is a time zone;
//   duration -> INT64; dictionary -> its values' type; list, large_list,
//   fixed_size_list -> 3-level LIST; map -> MAP; struct -> group. Intervals
//   and unions are ENOTSUP.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "format/parquet/pq_write_internal.h"

#define PQW_MAX_DEPTH 64

struct build_state {
  struct pqw_schema* s;
  const char* extension;  ///< the leaf field's ARROW:extension:name, or NULL
  struct pqw_step steps[PQW_MAX_DEPTH];
  struct pq_bytes names[PQW_MAX_DEPTH * 2];
  int n_names;
  int64_t column;
  const char* column_name;
};

static struct pq_bytes bytes_of(const char* s) {
  struct pq_bytes b;
  b.data = (const uint8_t*)s;
  b.size = (int64_t)strlen(s);
  b.present = 1;
  return b;
}

static int add_element(struct pqw_schema* s, const char* name, int64_t* index,
                       struct sluice_error* error) {
  if (sl_grow_array(s->alloc, (void**)&s->elements, &s->cap_elements, s->n_elements + 1,
                    sizeof *s->elements) != 0)
    return sl_error_set(error, ENOMEM, "parquet writer: out of memory (schema)");
  struct pq_schema_element* e = &s->elements[s->n_elements];
  sl_pq_schema_element_init(e);
  e->name = bytes_of(name);
  *index = s->n_elements++;
  return 0;
}

static int32_t decimal_bytes(int32_t precision) {
  for (int32_t n = 1; n < 64; ++n) {
    if ((double)precision <= floor((8.0 * n - 1.0) * log10(2.0))) return n;
  }
  return 64;
}

/// The field's PARQUET:field_id (Iceberg's column id, as pyarrow writes it
/// from the field metadata) when it is a whole number in int32's range that
/// is not negative; anything else is left out, as Arrow C++ leaves it.
static void set_field_id(struct pq_schema_element* e, const char* metadata) {
  int32_t n = 0;
  const char* v = sl_metadata_find(metadata, "PARQUET:field_id", &n);
  if (v == NULL || n <= 0 || n > 10) return;
  int64_t id = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (v[i] < '0' || v[i] > '9') return;
    id = id * 10 + (v[i] - '0');
  }
  if (id > INT32_MAX) return;
  e->has_field_id = 1;
  e->field_id = (int32_t)id;
}

/// Physical type, annotations and conversion of a leaf.
static int map_leaf(const struct build_state* st, const struct sl_type* t,
                    struct pq_schema_element* e, struct pqw_leaf* leaf,
                    struct sluice_error* error) {
  struct pq_logical_type* lg = &e->logical;
  e->has_type = 1;
  leaf->order = PQW_ORD_SIGNED;
  switch (t->id) {
    case SL_TYPE_NA:
      e->type = PQ_INT32;
      lg->kind = PQ_LOGICAL_NULL;
      leaf->conv = PQW_CV_NULL;
      leaf->order = PQW_ORD_NONE;
      break;
    case SL_TYPE_BOOL:
      e->type = PQ_BOOLEAN;
      leaf->conv = PQW_CV_BOOL;
      leaf->order = PQW_ORD_UNSIGNED;
      break;
    case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16: case SL_TYPE_UINT16:
    case SL_TYPE_UINT32: {
      int sign = t->id == SL_TYPE_INT8 || t->id == SL_TYPE_INT16;
      int bits = (t->id == SL_TYPE_INT8 || t->id == SL_TYPE_UINT8) ? 8
                 : t->id == SL_TYPE_UINT32 ? 32 : 16;
      e->type = PQ_INT32;
      lg->kind = PQ_LOGICAL_INTEGER;
      lg->bit_width = bits;
      lg->is_signed = sign;
      e->converted_type = sign ? (bits == 8 ? PQ_CT_INT_8 : PQ_CT_INT_16)
                               : (bits == 8 ? PQ_CT_UINT_8 : bits == 16 ? PQ_CT_UINT_16 : PQ_CT_UINT_32);
      leaf->conv = t->id == SL_TYPE_UINT32 ? PQW_CV_I32 : PQW_CV_I32_FROM_INT;
      leaf->order = sign ? PQW_ORD_SIGNED : PQW_ORD_UNSIGNED;
      break;
    }
    case SL_TYPE_INT32:
      e->type = PQ_INT32;
      leaf->conv = PQW_CV_I32;
      break;
    case SL_TYPE_INT64:
      e->type = PQ_INT64;
      leaf->conv = PQW_CV_I64;
      break;
    case SL_TYPE_UINT64:
      e->type = PQ_INT64;
      lg->kind = PQ_LOGICAL_INTEGER;
      lg->bit_width = 64;
      lg->is_signed = 0;
      e->converted_type = PQ_CT_UINT_64;
      leaf->conv = PQW_CV_I64;
      leaf->order = PQW_ORD_UNSIGNED;
      break;
    case SL_TYPE_HALF_FLOAT:
      e->type = PQ_FIXED_LEN_BYTE_ARRAY;
      e->type_length = 2;
      lg->kind = PQ_LOGICAL_FLOAT16;
      leaf->conv = PQW_CV_FLBA;
      leaf->order = PQW_ORD_FLOAT16;
      break;
    case SL_TYPE_FLOAT:
      e->type = PQ_FLOAT;
      leaf->conv = PQW_CV_F32;
      leaf->order = PQW_ORD_FLOAT;
      break;
    case SL_TYPE_DOUBLE:
      e->type = PQ_DOUBLE;
      leaf->conv = PQW_CV_F64;
      leaf->order = PQW_ORD_FLOAT;
      break;
    case SL_TYPE_STRING: case SL_TYPE_LARGE_STRING:
    case SL_TYPE_BINARY: case SL_TYPE_LARGE_BINARY:
      e->type = PQ_BYTE_ARRAY;
      if (t->id == SL_TYPE_STRING || t->id == SL_TYPE_LARGE_STRING) {
        // arrow.json is JSON text: Parquet's JSON annotation (DuckDB then
        // reads a JSON column, pyarrow arrow.json again).
        int json = st->extension != NULL && sl_metadata_is_extension(st->extension, "arrow.json");
        lg->kind = json ? PQ_LOGICAL_JSON : PQ_LOGICAL_STRING;
        e->converted_type = json ? PQ_CT_JSON : PQ_CT_UTF8;
      }
      leaf->conv = (t->id == SL_TYPE_STRING || t->id == SL_TYPE_BINARY) ? PQW_CV_BYTES32
                                                                         : PQW_CV_BYTES64;
      leaf->order = PQW_ORD_BYTES;
      break;
    case SL_TYPE_FIXED_SIZE_BINARY:
      if (t->byte_width <= 0)
        return sl_error_set(error, ENOTSUP, "parquet writer: column '%s': fixed_size_binary of "
                            "width %d has no Parquet type", st->column_name, (int)t->byte_width);
      e->type = PQ_FIXED_LEN_BYTE_ARRAY;
      e->type_length = t->byte_width;
      if (t->byte_width == 16 && st->extension != NULL &&
          sl_metadata_is_extension(st->extension, "arrow.uuid"))
        lg->kind = PQ_LOGICAL_UUID;  // as Arrow C++ writes arrow.uuid
      leaf->conv = PQW_CV_FLBA;
      leaf->order = PQW_ORD_BYTES;
      break;
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256:
      if (t->precision < 1 || t->precision > (t->id == SL_TYPE_DECIMAL128 ? 38 : 76))
        return sl_error_set(error, EINVAL, "parquet writer: column '%s': decimal precision %d "
                            "out of range", st->column_name, (int)t->precision);
      if (t->scale < 0 || t->scale > t->precision)  // as pyarrow refuses them
        return sl_error_set(error, ENOTSUP, "parquet writer: column '%s': decimal(%d, %d): "
                            "Parquet's scale is 0 to the precision (cast the column first)",
                            st->column_name, (int)t->precision, (int)t->scale);
      e->type = PQ_FIXED_LEN_BYTE_ARRAY;
      e->type_length = decimal_bytes(t->precision);
      lg->kind = PQ_LOGICAL_DECIMAL;
      lg->decimal_precision = t->precision;
      lg->decimal_scale = t->scale;
      e->converted_type = PQ_CT_DECIMAL;
      e->precision = t->precision;
      e->scale = t->scale;
      leaf->conv = PQW_CV_DECIMAL;
      leaf->order = PQW_ORD_DECIMAL_BE;
      break;
    case SL_TYPE_DATE32: case SL_TYPE_DATE64:
      e->type = PQ_INT32;
      lg->kind = PQ_LOGICAL_DATE;
      e->converted_type = PQ_CT_DATE;
      leaf->conv = t->id == SL_TYPE_DATE32 ? PQW_CV_I32 : PQW_CV_I32_DATE64;
      break;
    case SL_TYPE_TIME32:
      e->type = PQ_INT32;
      lg->kind = PQ_LOGICAL_TIME;
      lg->is_adjusted_to_utc = 0;  // as Arrow C++ writes times (so no legacy TIME_MILLIS)
      lg->unit = PQ_MILLIS;
      leaf->conv = t->unit == SL_SECOND ? PQW_CV_I32_TIME_S : PQW_CV_I32;
      break;
    case SL_TYPE_TIME64:
      e->type = PQ_INT64;
      lg->kind = PQ_LOGICAL_TIME;
      lg->is_adjusted_to_utc = 0;
      lg->unit = t->unit == SL_MICRO ? PQ_MICROS : PQ_NANOS;
      leaf->conv = PQW_CV_I64;
      break;
    case SL_TYPE_TIMESTAMP: {
      int utc = t->timezone != NULL && t->timezone[0] != '\0';
      e->type = PQ_INT64;
      lg->kind = PQ_LOGICAL_TIMESTAMP;
      lg->is_adjusted_to_utc = utc;
      lg->unit = (t->unit == SL_SECOND || t->unit == SL_MILLI) ? PQ_MILLIS
                 : t->unit == SL_MICRO ? PQ_MICROS : PQ_NANOS;
      if (utc && lg->unit == PQ_MILLIS) e->converted_type = PQ_CT_TIMESTAMP_MILLIS;
      if (utc && lg->unit == PQ_MICROS) e->converted_type = PQ_CT_TIMESTAMP_MICROS;
      leaf->conv = t->unit == SL_SECOND ? PQW_CV_I64_MUL1000 : PQW_CV_I64;
      break;
    }
    case SL_TYPE_DURATION:
      e->type = PQ_INT64;
      leaf->conv = PQW_CV_I64;
      break;
    default: {
      char name[64];
      sl_type_name(t, name, sizeof name);
      return sl_error_set(error, ENOTSUP, "parquet writer: column '%s': type %s has no Parquet "
                          "mapping", st->column_name, name);
    }
  }
  leaf->type = e->type;
  leaf->type_length = e->type_length;
  return 0;
}

static int add_leaf(struct build_state* st, int depth, const struct sl_type* value_type,
                    const struct ArrowSchema* f, int64_t element, struct sluice_error* error) {
  struct pqw_schema* s = st->s;
  if (sl_grow_array(s->alloc, (void**)&s->leaves, &s->cap_leaves, s->n_leaves + 1,
                    sizeof *s->leaves) != 0)
    return sl_error_set(error, ENOMEM, "parquet writer: out of memory (schema)");
  struct pqw_leaf* leaf = &s->leaves[s->n_leaves];
  memset(leaf, 0, sizeof *leaf);
  leaf->column = st->column;
  leaf->value_type = *value_type;
  if (f->dictionary != NULL) {
    leaf->is_dict = 1;
    leaf->dict_field = f;
    SL_RETURN_NOT_OK(sl_type_parse(f->format, &leaf->index_type, error));
  }
  st->extension = f->dictionary == NULL ? f->metadata : NULL;
  int rc = map_leaf(st, value_type, &s->elements[element], leaf, error);
  st->extension = NULL;
  if (rc != 0) return rc;
  // Count it only once its arrays are allocated, so that free sees them.
  s->n_leaves++;
  leaf->n_steps = depth + 1;
  leaf->steps = sl_calloc(s->alloc, (size_t)leaf->n_steps, sizeof *leaf->steps);
  leaf->path = sl_calloc(s->alloc, (size_t)st->n_names, sizeof *leaf->path);
  // Names joined by '.', and the NUL.
  size_t name_len = 0;
  for (int i = 0; i < st->n_names; ++i) name_len += (size_t)st->names[i].size + 1;
  leaf->name = sl_alloc(s->alloc, name_len);
  if (leaf->steps == NULL || leaf->path == NULL || leaf->name == NULL) {
    sl_free(s->alloc, leaf->steps, (size_t)leaf->n_steps * sizeof *leaf->steps);
    sl_free(s->alloc, leaf->path, (size_t)st->n_names * sizeof *leaf->path);
    sl_free(s->alloc, leaf->name, name_len);
    s->n_leaves--;
    return sl_error_set(error, ENOMEM, "parquet writer: out of memory (schema)");
  }
  memcpy(leaf->steps, st->steps, (size_t)leaf->n_steps * sizeof *leaf->steps);
  memcpy(leaf->path, st->names, (size_t)st->n_names * sizeof *leaf->path);
  leaf->n_path = st->n_names;
  size_t k = 0;
  for (int i = 0; i < st->n_names; ++i) {
    if (i > 0) leaf->name[k++] = '.';
    memcpy(leaf->name + k, st->names[i].data, (size_t)st->names[i].size);
    k += (size_t)st->names[i].size;
  }
  leaf->name[k] = '\0';
  for (int i = 0; i <= depth; ++i) {
    const struct pqw_step* p = &leaf->steps[i];
    if (p->nullable) leaf->max_def++;
    if (p->kind != PQW_STRUCT && p->kind != PQW_LEAF) {
      leaf->max_def++;
      leaf->max_rep++;
    }
  }
  return 0;
}

static int build_node(struct build_state* st, const struct ArrowSchema* f, const char* name,
                      int depth, int16_t rep, int force_required, struct sluice_error* error) {
  struct pqw_schema* s = st->s;
  if (depth >= PQW_MAX_DEPTH)
    return sl_error_set(error, ENOTSUP, "parquet writer: column '%s' nested deeper than %d levels",
                        st->column_name, PQW_MAX_DEPTH);
  if (f->format == NULL)
    return sl_error_set(error, EINVAL, "parquet writer: column '%s': schema without a format",
                        st->column_name);
  struct sl_type t;
  const struct ArrowSchema* values = f->dictionary != NULL ? f->dictionary : f;
  SL_RETURN_NOT_OK(sl_type_parse(values->format, &t, error));
  if (f->dictionary != NULL && (values->n_children > 0 || values->dictionary != NULL))
    return sl_error_set(error, ENOTSUP, "parquet writer: column '%s': dictionaries of nested "
                        "values are not supported", st->column_name);
  int nullable = !force_required && ((f->flags & ARROW_FLAG_NULLABLE) || t.id == SL_TYPE_NA);
  int64_t e = 0;
  SL_RETURN_NOT_OK(add_element(s, name, &e, error));
  set_field_id(&s->elements[e], f->metadata);
  s->elements[e].has_repetition = 1;
  s->elements[e].repetition = nullable ? PQ_OPTIONAL : PQ_REQUIRED;
  st->names[st->n_names++] = bytes_of(name);
  struct pqw_step* step = &st->steps[depth];
  memset(step, 0, sizeof *step);
  step->nullable = nullable;
  int rc = 0;
  switch (t.id) {
    case SL_TYPE_STRUCT:
      if (f->n_children == 0)
        return sl_error_set(error, ENOTSUP, "parquet writer: column '%s': a struct without "
                            "fields has no Parquet type", st->column_name);
      step->kind = PQW_STRUCT;
      s->elements[e].num_children = (int32_t)f->n_children;
      for (int64_t i = 0; rc == 0 && i < f->n_children; ++i) {
        st->steps[depth].child = i;
        const char* cn = f->children[i]->name != NULL ? f->children[i]->name : "";
        rc = build_node(st, f->children[i], cn, depth + 1, rep, 0, error);
      }
      break;
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_FIXED_SIZE_LIST: {
      if (f->n_children != 1)
        return sl_error_set(error, EINVAL, "parquet writer: column '%s': list without one child",
                            st->column_name);
      step->kind = t.id == SL_TYPE_LIST ? PQW_LIST
                   : t.id == SL_TYPE_LARGE_LIST ? PQW_LARGE_LIST : PQW_FIXED_LIST;
      step->list_size = t.list_size;
      step->rep_level = (int16_t)(rep + 1);
      s->elements[e].num_children = 1;
      s->elements[e].logical.kind = PQ_LOGICAL_LIST;
      s->elements[e].converted_type = PQ_CT_LIST;
      int64_t g = 0;
      SL_RETURN_NOT_OK(add_element(s, "list", &g, error));
      s->elements[g].has_repetition = 1;
      s->elements[g].repetition = PQ_REPEATED;
      s->elements[g].num_children = 1;
      st->names[st->n_names++] = bytes_of("list");
      rc = build_node(st, f->children[0], "element", depth + 1, (int16_t)(rep + 1), 0, error);
      st->n_names--;
      break;
    }
    case SL_TYPE_MAP: {
      const struct ArrowSchema* entries = f->n_children == 1 ? f->children[0] : NULL;
      if (entries == NULL || entries->n_children != 2)
        return sl_error_set(error, EINVAL, "parquet writer: column '%s': map without a "
                            "key/value entries struct", st->column_name);
      step->kind = PQW_MAP;
      step->rep_level = (int16_t)(rep + 1);
      s->elements[e].num_children = 1;
      s->elements[e].logical.kind = PQ_LOGICAL_MAP;
      s->elements[e].converted_type = PQ_CT_MAP;
      int64_t g = 0;
      SL_RETURN_NOT_OK(add_element(s, "key_value", &g, error));
      s->elements[g].has_repetition = 1;
      s->elements[g].repetition = PQ_REPEATED;
      s->elements[g].num_children = 2;
      st->names[st->n_names++] = bytes_of("key_value");
      for (int64_t i = 0; rc == 0 && i < 2; ++i) {
        st->steps[depth].child = i;
        rc = build_node(st, entries->children[i], i == 0 ? "key" : "value", depth + 1,
                        (int16_t)(rep + 1), i == 0, error);
      }
      st->n_names--;
      break;
    }
    default:
      step->kind = PQW_LEAF;
      rc = add_leaf(st, depth, &t, f, e, error);
      break;
  }
  st->n_names--;
  return rc;
}

int sl_pqw_schema_build(struct pqw_schema* s, const struct ArrowSchema* root,
                     const struct sluice_allocator* alloc, struct sluice_error* error) {
  memset(s, 0, sizeof *s);
  s->alloc = alloc;
  if (root->format == NULL || strcmp(root->format, "+s") != 0)
    return sl_error_set(error, EINVAL, "parquet writer: the stream's schema must be a struct, "
                        "got '%s'", root->format != NULL ? root->format : "(null)");
  if (root->n_children == 0)
    return sl_error_set(error, ENOTSUP, "parquet writer: a table without columns cannot be "
                        "written as Parquet");
  int64_t r = 0;
  SL_RETURN_NOT_OK(add_element(s, "schema", &r, error));
  s->elements[r].num_children = (int32_t)root->n_children;
  struct build_state* st = sl_calloc(alloc, 1, sizeof *st);
  if (st == NULL) return sl_error_set(error, ENOMEM, "parquet writer: out of memory (schema)");
  st->s = s;
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < root->n_children; ++i) {
    const char* name = root->children[i]->name != NULL ? root->children[i]->name : "";
    st->column = i;
    st->column_name = name;
    st->n_names = 0;
    rc = build_node(st, root->children[i], name, 0, 0, 0, error);
  }
  sl_free(alloc, st, sizeof *st);
  return rc;
}

void sl_pqw_schema_free(struct pqw_schema* s) {
  for (int64_t i = 0; i < s->n_leaves; ++i) {
    struct pqw_leaf* l = &s->leaves[i];
    if (l->steps != NULL) sl_free(s->alloc, l->steps, (size_t)l->n_steps * sizeof *l->steps);
    if (l->path != NULL) sl_free(s->alloc, l->path, (size_t)l->n_path * sizeof *l->path);
    if (l->name != NULL) sl_free(s->alloc, l->name, strlen(l->name) + 1);
  }
  sl_free(s->alloc, s->leaves, (size_t)s->cap_leaves * sizeof *s->leaves);
  sl_free(s->alloc, s->elements, (size_t)s->cap_elements * sizeof *s->elements);
  memset(s, 0, sizeof *s);
}
