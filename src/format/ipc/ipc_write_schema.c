// Arrow C Data Interface schema -> IPC Schema flatbuffer (Field tables, type
// tables, DictionaryEncoding, KeyValue metadata), and dictionary id
// assignment.
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_type.h"
#include "format/ipc/ipc_fbs.h"
#include "format/ipc/ipc_writer.h"

/// Deeper schemas are refused rather than risking the C stack.
#define IPCW_MAX_DEPTH 64

static const char* field_name(const struct ArrowSchema* f) {
  return f->name != NULL ? f->name : "";
}

/* ---- Dictionary ids ------------------------------------------------------ */

static int dicts_add(struct ipc_dicts* d, const struct ArrowSchema* field, const char* column,
                     struct sluice_error* error) {
  if (d->n == d->cap) {
    int64_t cap = d->cap ? d->cap * 2 : 8;
    struct ipc_dict_entry* items = sl_calloc(d->alloc, (size_t)cap, sizeof *items);
    if (items == NULL) return sl_error_set(error, ENOMEM, "arrow ipc writer: out of memory");
    if (d->n) memcpy(items, d->items, (size_t)d->n * sizeof *items);
    sl_free(d->alloc, d->items, (size_t)d->cap * sizeof *items);
    d->items = items;
    d->cap = cap;
  }
  struct ipc_dict_entry* e = &d->items[d->n++];
  memset(e, 0, sizeof *e);
  e->field = field;
  e->column = column;
  return 0;
}

static int collect(struct ipc_dicts* d, const struct ArrowSchema* f, const char* column,
                   int depth, struct sluice_error* error) {
  if (depth > IPCW_MAX_DEPTH)
    return sl_error_set(error, EINVAL, "column '%s': type nested deeper than %d levels",
                        column, IPCW_MAX_DEPTH);
  const struct ArrowSchema* values = f;
  if (f->dictionary != NULL) {
    SL_RETURN_NOT_OK(dicts_add(d, f, column, error));
    values = f->dictionary;
    if (values->dictionary != NULL)
      return sl_error_set(error, ENOTSUP,
                          "column '%s': a dictionary whose values are dictionary-encoded "
                          "is not supported", column);
  }
  if (values->n_children > 0 && values->children == NULL)
    return sl_error_set(error, EINVAL, "column '%s': schema node has no children array",
                        column);
  for (int64_t i = 0; i < values->n_children; i++)
    SL_RETURN_NOT_OK(collect(d, values->children[i], column, depth + 1, error));
  return 0;
}

int sl_ipc_dicts_collect(struct ipc_dicts* dicts, const struct sluice_allocator* alloc,
                      const struct ArrowSchema* root, struct sluice_error* error) {
  memset(dicts, 0, sizeof *dicts);
  dicts->alloc = alloc;
  if (root->n_children > 0 && root->children == NULL)
    return sl_error_set(error, EINVAL, "arrow ipc writer: schema has no children array");
  for (int64_t i = 0; i < root->n_children; i++) {
    const struct ArrowSchema* c = root->children[i];
    int rc = collect(dicts, c, field_name(c), 1, error);
    if (rc != 0) {
      sl_ipc_dicts_free(dicts);
      return rc;
    }
  }
  return 0;
}

void sl_ipc_dicts_free(struct ipc_dicts* dicts) {
  for (int64_t i = 0; i < dicts->n; i++)
    sl_ipc_snapshot_free(&dicts->items[i].last, dicts->alloc);
  sl_free(dicts->alloc, dicts->items, (size_t)dicts->cap * sizeof *dicts->items);
  dicts->items = NULL;
  dicts->n = dicts->cap = 0;
}

int64_t sl_ipc_dicts_find(const struct ipc_dicts* dicts, const struct ArrowSchema* field) {
  for (int64_t i = 0; i < dicts->n; i++)
    if (dicts->items[i].field == field) return i;
  return -1;
}

/* ---- KeyValue metadata ---------------------------------------------------- */

static int32_t read_i32(const char* p) {
  int32_t v;
  memcpy(&v, p, sizeof v);  // native order, as the C Data Interface defines it
  return v;
}

/// Decodes the C Data Interface metadata blob into a [KeyValue] vector
/// (*out = 0 when there is none).
int sl_ipc_build_kv_metadata(struct fb_builder* b, const char* meta, const char* what,
                          fb_ref* out, struct sluice_error* error) {
  *out = 0;
  if (meta == NULL) return 0;
  int32_t n = read_i32(meta);
  if (n < 0) return sl_error_set(error, EINVAL, "%s: metadata has a negative count", what);
  if (n == 0) return 0;
  const char* p = meta + 4;
  size_t base = sl_fb_stack_depth(b);
  for (int32_t i = 0; i < n; i++) {
    int32_t klen = read_i32(p);
    if (klen < 0) return sl_error_set(error, EINVAL, "%s: metadata key %d has negative length",
                                      what, (int)i);
    fb_ref key = sl_fb_string(b, p + 4, (size_t)klen);
    p += 4 + klen;
    int32_t vlen = read_i32(p);
    if (vlen < 0) return sl_error_set(error, EINVAL,
                                      "%s: metadata value %d has negative length", what, (int)i);
    fb_ref value = sl_fb_string(b, p + 4, (size_t)vlen);
    p += 4 + vlen;
    sl_fb_table_start(b);
    sl_fb_add_ref(b, IPC_KEY_VALUE_KEY, key);
    sl_fb_add_ref(b, IPC_KEY_VALUE_VALUE, value);
    sl_fb_stack_push(b, sl_fb_table_end(b));
  }
  *out = sl_fb_vector_from_stack(b, base);
  return 0;
}

/* ---- Types ---------------------------------------------------------------- */

static fb_ref empty_table(struct fb_builder* b) {
  sl_fb_table_start(b);
  return sl_fb_table_end(b);
}

static fb_ref int_table(struct fb_builder* b, int32_t bits, int is_signed) {
  sl_fb_table_start(b);
  sl_fb_add_i32(b, IPC_INT_BIT_WIDTH, bits);
  sl_fb_add_u8(b, IPC_INT_IS_SIGNED, (uint8_t)(is_signed != 0));
  return sl_fb_table_end(b);
}

static fb_ref unit_table(struct fb_builder* b, int slot, int16_t unit) {
  sl_fb_table_start(b);
  sl_fb_add_i16(b, slot, unit);
  return sl_fb_table_end(b);
}

/// The Type union member for a parsed type: *type_type and its table.
static int build_type(struct fb_builder* b, const struct ArrowSchema* f, const struct sl_type* t,
                      uint8_t* type_type, fb_ref* out, struct sluice_error* error) {
  switch (t->id) {
    case SL_TYPE_NA: *type_type = IPC_TYPE_NULL; *out = empty_table(b); return 0;
    case SL_TYPE_BOOL: *type_type = IPC_TYPE_BOOL; *out = empty_table(b); return 0;
    case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16: case SL_TYPE_UINT16:
    case SL_TYPE_INT32: case SL_TYPE_UINT32: case SL_TYPE_INT64: case SL_TYPE_UINT64: {
      static const int32_t bits[] = {8, 8, 16, 16, 32, 32, 64, 64};
      int k = (int)(t->id - SL_TYPE_INT8);
      *type_type = IPC_TYPE_INT;
      *out = int_table(b, bits[k], k % 2 == 0);
      return 0;
    }
    case SL_TYPE_HALF_FLOAT: case SL_TYPE_FLOAT: case SL_TYPE_DOUBLE:
      *type_type = IPC_TYPE_FLOATING_POINT;
      *out = unit_table(b, IPC_FLOATING_POINT_PRECISION,
                        (int16_t)(t->id - SL_TYPE_HALF_FLOAT + IPC_PRECISION_HALF));
      return 0;
    case SL_TYPE_BINARY: *type_type = IPC_TYPE_BINARY; *out = empty_table(b); return 0;
    case SL_TYPE_LARGE_BINARY: *type_type = IPC_TYPE_LARGE_BINARY; *out = empty_table(b); return 0;
    case SL_TYPE_STRING: *type_type = IPC_TYPE_UTF8; *out = empty_table(b); return 0;
    case SL_TYPE_LARGE_STRING: *type_type = IPC_TYPE_LARGE_UTF8; *out = empty_table(b); return 0;
    case SL_TYPE_FIXED_SIZE_BINARY:
      *type_type = IPC_TYPE_FIXED_SIZE_BINARY;
      sl_fb_table_start(b);
      sl_fb_add_i32(b, IPC_FIXED_SIZE_BINARY_BYTE_WIDTH, t->byte_width);
      *out = sl_fb_table_end(b);
      return 0;
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256:
      *type_type = IPC_TYPE_DECIMAL;
      sl_fb_table_start(b);
      sl_fb_add_i32(b, IPC_DECIMAL_PRECISION, t->precision);
      sl_fb_add_i32(b, IPC_DECIMAL_SCALE, t->scale);
      sl_fb_add_i32(b, IPC_DECIMAL_BIT_WIDTH, t->byte_width * 8);
      *out = sl_fb_table_end(b);
      return 0;
    case SL_TYPE_DATE32: case SL_TYPE_DATE64:
      *type_type = IPC_TYPE_DATE;
      *out = unit_table(b, IPC_DATE_UNIT,
                        t->id == SL_TYPE_DATE32 ? IPC_DATE_DAY : IPC_DATE_MILLISECOND);
      return 0;
    case SL_TYPE_TIME32: case SL_TYPE_TIME64:
      *type_type = IPC_TYPE_TIME;
      sl_fb_table_start(b);
      sl_fb_add_i16(b, IPC_TIME_UNIT, (int16_t)t->unit);
      sl_fb_add_i32(b, IPC_TIME_BIT_WIDTH, t->id == SL_TYPE_TIME32 ? 32 : 64);
      *out = sl_fb_table_end(b);
      return 0;
    case SL_TYPE_TIMESTAMP: {
      *type_type = IPC_TYPE_TIMESTAMP;
      fb_ref tz = 0;
      if (t->timezone != NULL && t->timezone[0] != '\0')
        tz = sl_fb_string(b, t->timezone, strlen(t->timezone));
      sl_fb_table_start(b);
      sl_fb_add_i16(b, IPC_TIMESTAMP_UNIT, (int16_t)t->unit);
      sl_fb_add_ref(b, IPC_TIMESTAMP_TIMEZONE, tz);
      *out = sl_fb_table_end(b);
      return 0;
    }
    case SL_TYPE_DURATION:
      *type_type = IPC_TYPE_DURATION;
      *out = unit_table(b, IPC_DURATION_UNIT, (int16_t)t->unit);
      return 0;
    case SL_TYPE_INTERVAL_MONTHS: case SL_TYPE_INTERVAL_DAY_TIME:
    case SL_TYPE_INTERVAL_MONTH_DAY_NANO: {
      static const int16_t units[] = {IPC_INTERVAL_YEAR_MONTH, IPC_INTERVAL_DAY_TIME,
                                      IPC_INTERVAL_MONTH_DAY_NANO};
      *type_type = IPC_TYPE_INTERVAL;
      *out = unit_table(b, IPC_INTERVAL_UNIT, units[t->id - SL_TYPE_INTERVAL_MONTHS]);
      return 0;
    }
    case SL_TYPE_LIST: *type_type = IPC_TYPE_LIST; *out = empty_table(b); return 0;
    case SL_TYPE_LARGE_LIST: *type_type = IPC_TYPE_LARGE_LIST; *out = empty_table(b); return 0;
    case SL_TYPE_STRUCT: *type_type = IPC_TYPE_STRUCT; *out = empty_table(b); return 0;
    case SL_TYPE_FIXED_SIZE_LIST:
      *type_type = IPC_TYPE_FIXED_SIZE_LIST;
      sl_fb_table_start(b);
      sl_fb_add_i32(b, IPC_FIXED_SIZE_LIST_LIST_SIZE, t->list_size);
      *out = sl_fb_table_end(b);
      return 0;
    case SL_TYPE_MAP:
      *type_type = IPC_TYPE_MAP;
      sl_fb_table_start(b);
      sl_fb_add_u8(b, IPC_MAP_KEYS_SORTED, (f->flags & ARROW_FLAG_MAP_KEYS_SORTED) ? 1 : 0);
      *out = sl_fb_table_end(b);
      return 0;
    case SL_TYPE_DENSE_UNION: case SL_TYPE_SPARSE_UNION: {
      *type_type = IPC_TYPE_UNION;
      fb_ref ids;
      uint8_t* p = sl_fb_vector_reserve(b, (size_t)t->n_type_codes, 4, 4, &ids);
      for (int32_t i = 0; p != NULL && i < t->n_type_codes; i++)
        sl_fb_store_le32(p + 4 * i, t->type_codes[i]);
      sl_fb_table_start(b);
      sl_fb_add_i16(b, IPC_UNION_MODE,
                 t->id == SL_TYPE_DENSE_UNION ? IPC_UNION_DENSE : IPC_UNION_SPARSE);
      sl_fb_add_ref(b, IPC_UNION_TYPE_IDS, ids);
      *out = sl_fb_table_end(b);
      return 0;
    }
    default: {
      char tn[64];
      sl_type_name(t, tn, sizeof tn);
      return sl_error_set(error, ENOTSUP, "type %s cannot be written to Arrow IPC", tn);
    }
  }
}

/* ---- Fields --------------------------------------------------------------- */

static int build_field(struct fb_builder* b, const struct ArrowSchema* f,
                       const struct ipc_dicts* dicts, const char* column, int depth, fb_ref* out,
                       struct sluice_error* error) {
  if (depth > IPCW_MAX_DEPTH)
    return sl_error_set(error, EINVAL, "column '%s': type nested deeper than %d levels",
                        column, IPCW_MAX_DEPTH);
  const struct ArrowSchema* values = f->dictionary != NULL ? f->dictionary : f;
  struct sl_type t;
  int rc = sl_type_parse(values->format, &t, error);
  if (rc != 0) return sl_error_prefix(error, "column '%s'", column);

  // Children first: tables cannot nest while being built.
  size_t base = sl_fb_stack_depth(b);
  for (int64_t i = 0; i < values->n_children; i++) {
    fb_ref child = 0;
    SL_RETURN_NOT_OK(build_field(b, values->children[i], dicts, column, depth + 1, &child,
                                 error));
    sl_fb_stack_push(b, child);
  }
  fb_ref children = sl_fb_vector_from_stack(b, base);

  uint8_t type_type = 0;
  fb_ref type = 0;
  SL_RETURN_NOT_OK(build_type(b, values, &t, &type_type, &type, error));

  fb_ref dictionary = 0;
  if (f->dictionary != NULL) {
    struct sl_type index;
    rc = sl_type_parse(f->format, &index, error);
    if (rc != 0) return sl_error_prefix(error, "column '%s': dictionary index", column);
    if (index.id < SL_TYPE_INT8 || index.id > SL_TYPE_UINT64) {
      char tn[64];
      sl_type_name(&index, tn, sizeof tn);
      return sl_error_set(error, EINVAL,
                          "column '%s': dictionary index type %s is not an integer type",
                          column, tn);
    }
    int k = (int)(index.id - SL_TYPE_INT8);
    fb_ref index_type = int_table(b, 8 << (k / 2), k % 2 == 0);
    sl_fb_table_start(b);
    sl_fb_add_i64(b, IPC_DICTIONARY_ENCODING_ID, sl_ipc_dicts_find(dicts, f));
    sl_fb_add_ref(b, IPC_DICTIONARY_ENCODING_INDEX_TYPE, index_type);
    sl_fb_add_u8(b, IPC_DICTIONARY_ENCODING_IS_ORDERED,
              (f->flags & ARROW_FLAG_DICTIONARY_ORDERED) ? 1 : 0);
    dictionary = sl_fb_table_end(b);
  }

  fb_ref metadata = 0;
  SL_RETURN_NOT_OK(sl_ipc_build_kv_metadata(b, f->metadata, column, &metadata, error));
  fb_ref name = sl_fb_string(b, field_name(f), strlen(field_name(f)));

  sl_fb_table_start(b);
  sl_fb_add_ref(b, IPC_FIELD_NAME, name);
  sl_fb_add_u8(b, IPC_FIELD_NULLABLE, (f->flags & ARROW_FLAG_NULLABLE) ? 1 : 0);
  sl_fb_add_u8(b, IPC_FIELD_TYPE_TYPE, type_type);
  sl_fb_add_ref(b, IPC_FIELD_TYPE, type);
  sl_fb_add_ref(b, IPC_FIELD_DICTIONARY, dictionary);
  sl_fb_add_ref(b, IPC_FIELD_CHILDREN, children);
  sl_fb_add_ref(b, IPC_FIELD_CUSTOM_METADATA, metadata);
  *out = sl_fb_table_end(b);
  return 0;
}

int sl_ipc_build_schema(struct fb_builder* b, const struct ArrowSchema* root,
                     const struct ipc_dicts* dicts, fb_ref* out, struct sluice_error* error) {
  if (root->format == NULL || strcmp(root->format, "+s") != 0)
    return sl_error_set(error, EINVAL,
                        "arrow ipc writer: the stream's schema must be a struct ('+s'), got '%s'",
                        root->format != NULL ? root->format : "(null)");
  size_t base = sl_fb_stack_depth(b);
  for (int64_t i = 0; i < root->n_children; i++) {
    fb_ref field = 0;
    const struct ArrowSchema* c = root->children[i];
    SL_RETURN_NOT_OK(build_field(b, c, dicts, field_name(c), 1, &field, error));
    sl_fb_stack_push(b, field);
  }
  fb_ref fields = sl_fb_vector_from_stack(b, base);
  fb_ref metadata = 0;
  SL_RETURN_NOT_OK(sl_ipc_build_kv_metadata(b, root->metadata, "schema", &metadata, error));
  sl_fb_table_start(b);
  sl_fb_add_i16(b, IPC_SCHEMA_ENDIANNESS, IPC_ENDIAN_LITTLE);
  sl_fb_add_ref(b, IPC_SCHEMA_FIELDS, fields);
  sl_fb_add_ref(b, IPC_SCHEMA_CUSTOM_METADATA, metadata);
  *out = sl_fb_table_end(b);
  return 0;
}
