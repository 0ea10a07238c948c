// Writing FileMetaData and PageHeader in the Thrift compact protocol. Only
// fields that are present are written. Like Arrow C++, a LogicalType is
// accompanied by the equivalent ConvertedType (when one exists) so that old
// readers still see the annotation, and every leaf gets a ColumnOrder
// (TypeDefinedOrder unless told otherwise), without which readers ignore
// min_value/max_value.
#include <errno.h>
#include <string.h>

#include "pq_meta.h"
#include "pq_thrift.h"
#include "../../core/sl_error.h"

static void write_bytes_field(struct pq_thrift_writer* w, int16_t id, const struct pq_bytes* b) {
  if (b->present) sl_pq_thrift_write_binary_field(w, id, b->data, b->size);
}

static void write_statistics(struct pq_thrift_writer* w, int16_t id,
                             const struct pq_statistics* s) {
  if (!s->present) return;
  sl_pq_thrift_write_field(w, id, PQ_TT_STRUCT);
  sl_pq_thrift_write_struct_begin(w);
  write_bytes_field(w, 1, &s->max);
  write_bytes_field(w, 2, &s->min);
  if (s->null_count >= 0) sl_pq_thrift_write_i64_field(w, 3, s->null_count);
  if (s->distinct_count >= 0) sl_pq_thrift_write_i64_field(w, 4, s->distinct_count);
  write_bytes_field(w, 5, &s->max_value);
  write_bytes_field(w, 6, &s->min_value);
  if (s->is_max_value_exact >= 0) sl_pq_thrift_write_bool_field(w, 7, s->is_max_value_exact);
  if (s->is_min_value_exact >= 0) sl_pq_thrift_write_bool_field(w, 8, s->is_min_value_exact);
  sl_pq_thrift_write_struct_end(w);
}

static void write_key_values(struct pq_thrift_writer* w, int16_t id, const struct pq_key_value* kv,
                             int64_t n) {
  if (n <= 0) return;
  sl_pq_thrift_write_field(w, id, PQ_TT_LIST);
  sl_pq_thrift_write_list_begin(w, PQ_TT_STRUCT, n);
  for (int64_t i = 0; i < n; ++i) {
    sl_pq_thrift_write_struct_begin(w);
    sl_pq_thrift_write_binary_field(w, 1, kv[i].key.data, kv[i].key.size);
    write_bytes_field(w, 2, &kv[i].value);
    sl_pq_thrift_write_struct_end(w);
  }
}

static void write_logical_type(struct pq_thrift_writer* w, const struct pq_logical_type* lt) {
  if (lt->kind == PQ_LOGICAL_NONE || lt->kind == PQ_LOGICAL_UNKNOWN_MEMBER) return;
  sl_pq_thrift_write_field(w, 10, PQ_TT_STRUCT);
  sl_pq_thrift_write_struct_begin(w);
  sl_pq_thrift_write_field(w, (int16_t)lt->kind, PQ_TT_STRUCT);
  sl_pq_thrift_write_struct_begin(w);
  switch (lt->kind) {
    case PQ_LOGICAL_DECIMAL:
      sl_pq_thrift_write_i32_field(w, 1, lt->decimal_scale);
      sl_pq_thrift_write_i32_field(w, 2, lt->decimal_precision);
      break;
    case PQ_LOGICAL_TIME: case PQ_LOGICAL_TIMESTAMP:
      sl_pq_thrift_write_bool_field(w, 1, lt->is_adjusted_to_utc);
      sl_pq_thrift_write_field(w, 2, PQ_TT_STRUCT);
      sl_pq_thrift_write_struct_begin(w);  // TimeUnit union
      sl_pq_thrift_write_empty_struct_field(w, (int16_t)lt->unit);
      sl_pq_thrift_write_struct_end(w);
      break;
    case PQ_LOGICAL_INTEGER: {
      sl_pq_thrift_write_field(w, 1, PQ_TT_BYTE);
      uint8_t bits = (uint8_t)lt->bit_width;
      if (w->status == 0) w->status = sl_buffer_append(w->out, &bits, 1);
      sl_pq_thrift_write_bool_field(w, 2, lt->is_signed);
      break;
    }
    default:
      break;  // the other members are empty structs
  }
  sl_pq_thrift_write_struct_end(w);
  sl_pq_thrift_write_struct_end(w);
}

/// The ConvertedType Arrow C++ writes beside a LogicalType (NONE if none).
static enum pq_converted_type converted_for(const struct pq_logical_type* lt) {
  switch (lt->kind) {
    case PQ_LOGICAL_STRING: return PQ_CT_UTF8;
    case PQ_LOGICAL_MAP: return PQ_CT_MAP;
    case PQ_LOGICAL_LIST: return PQ_CT_LIST;
    case PQ_LOGICAL_ENUM: return PQ_CT_ENUM;
    case PQ_LOGICAL_DECIMAL: return PQ_CT_DECIMAL;
    case PQ_LOGICAL_DATE: return PQ_CT_DATE;
    case PQ_LOGICAL_JSON: return PQ_CT_JSON;
    case PQ_LOGICAL_BSON: return PQ_CT_BSON;
    // The legacy time annotations mean "adjusted to UTC" (LogicalTypes.md).
    case PQ_LOGICAL_TIME:
      if (!lt->is_adjusted_to_utc) return PQ_CONVERTED_NONE;
      return lt->unit == PQ_MILLIS ? PQ_CT_TIME_MILLIS
             : lt->unit == PQ_MICROS ? PQ_CT_TIME_MICROS : PQ_CONVERTED_NONE;
    case PQ_LOGICAL_TIMESTAMP:
      if (!lt->is_adjusted_to_utc) return PQ_CONVERTED_NONE;
      return lt->unit == PQ_MILLIS ? PQ_CT_TIMESTAMP_MILLIS
             : lt->unit == PQ_MICROS ? PQ_CT_TIMESTAMP_MICROS : PQ_CONVERTED_NONE;
    case PQ_LOGICAL_INTEGER:
      switch (lt->bit_width) {
        case 8: return lt->is_signed ? PQ_CT_INT_8 : PQ_CT_UINT_8;
        case 16: return lt->is_signed ? PQ_CT_INT_16 : PQ_CT_UINT_16;
        case 32: return lt->is_signed ? PQ_CT_INT_32 : PQ_CT_UINT_32;
        case 64: return lt->is_signed ? PQ_CT_INT_64 : PQ_CT_UINT_64;
        default: return PQ_CONVERTED_NONE;
      }
    default: return PQ_CONVERTED_NONE;
  }
}

static void write_schema_element(struct pq_thrift_writer* w, const struct pq_schema_element* e) {
  sl_pq_thrift_write_struct_begin(w);
  if (e->has_type) sl_pq_thrift_write_i32_field(w, 1, (int32_t)e->type);
  if (e->has_type && e->type == PQ_FIXED_LEN_BYTE_ARRAY) {
    sl_pq_thrift_write_i32_field(w, 2, e->type_length);
  }
  if (e->has_repetition) sl_pq_thrift_write_i32_field(w, 3, (int32_t)e->repetition);
  sl_pq_thrift_write_binary_field(w, 4, e->name.data, e->name.size);
  if (!e->has_type) sl_pq_thrift_write_i32_field(w, 5, e->num_children);
  enum pq_converted_type ct = e->converted_type != PQ_CONVERTED_NONE ? e->converted_type
                                                                     : converted_for(&e->logical);
  if (ct != PQ_CONVERTED_NONE) sl_pq_thrift_write_i32_field(w, 6, (int32_t)ct);
  if (ct == PQ_CT_DECIMAL) {
    int from_logical = e->precision == 0 && e->logical.kind == PQ_LOGICAL_DECIMAL;
    sl_pq_thrift_write_i32_field(w, 7, from_logical ? e->logical.decimal_scale : e->scale);
    sl_pq_thrift_write_i32_field(w, 8, from_logical ? e->logical.decimal_precision : e->precision);
  }
  if (e->has_field_id) sl_pq_thrift_write_i32_field(w, 9, e->field_id);
  write_logical_type(w, &e->logical);
  sl_pq_thrift_write_struct_end(w);
}

static void write_column_meta(struct pq_thrift_writer* w, const struct pq_column_meta* m) {
  sl_pq_thrift_write_field(w, 3, PQ_TT_STRUCT);
  sl_pq_thrift_write_struct_begin(w);
  sl_pq_thrift_write_i32_field(w, 1, (int32_t)m->type);
  sl_pq_thrift_write_field(w, 2, PQ_TT_LIST);
  sl_pq_thrift_write_list_begin(w, PQ_TT_I32, m->n_encodings);
  for (int64_t i = 0; i < m->n_encodings; ++i) sl_pq_thrift_write_zigzag(w, m->encodings[i]);
  sl_pq_thrift_write_field(w, 3, PQ_TT_LIST);
  sl_pq_thrift_write_list_begin(w, PQ_TT_BINARY, m->n_path);
  for (int64_t i = 0; i < m->n_path; ++i) {
    sl_pq_thrift_write_binary(w, m->path_in_schema[i].data, m->path_in_schema[i].size);
  }
  sl_pq_thrift_write_i32_field(w, 4, (int32_t)m->codec);
  sl_pq_thrift_write_i64_field(w, 5, m->num_values);
  sl_pq_thrift_write_i64_field(w, 6, m->total_uncompressed_size);
  sl_pq_thrift_write_i64_field(w, 7, m->total_compressed_size);
  write_key_values(w, 8, m->key_value_metadata, m->n_key_value_metadata);
  sl_pq_thrift_write_i64_field(w, 9, m->data_page_offset);
  if (m->index_page_offset >= 0) sl_pq_thrift_write_i64_field(w, 10, m->index_page_offset);
  if (m->dictionary_page_offset >= 0) sl_pq_thrift_write_i64_field(w, 11, m->dictionary_page_offset);
  write_statistics(w, 12, &m->statistics);
  if (m->n_data_pages > 0 && m->n_data_pages <= INT32_MAX) {
    // encoding_stats: what readers check before pruning by dictionaries.
    // A chunk that fell back from its dictionary has pages of both, listed
    // PLAIN first as Arrow C++ lists them.
    int has_dictionary = m->dictionary_page_offset >= 0;
    int64_t n_dict = m->n_dictionary_data_pages, n_plain = m->n_data_pages - n_dict;
    int64_t counts[2] = {n_plain, n_dict};
    const int32_t encodings[2] = {PQ_ENC_PLAIN, PQ_ENC_RLE_DICTIONARY};
    sl_pq_thrift_write_field(w, 13, PQ_TT_LIST);
    sl_pq_thrift_write_list_begin(w, PQ_TT_STRUCT, has_dictionary + (n_plain > 0) + (n_dict > 0));
    if (has_dictionary) {
      sl_pq_thrift_write_struct_begin(w);
      sl_pq_thrift_write_i32_field(w, 1, PQ_PAGE_DICTIONARY);
      sl_pq_thrift_write_i32_field(w, 2, PQ_ENC_PLAIN);
      sl_pq_thrift_write_i32_field(w, 3, 1);
      sl_pq_thrift_write_struct_end(w);
    }
    for (int k = 0; k < 2; ++k) {
      if (counts[k] <= 0) continue;
      sl_pq_thrift_write_struct_begin(w);
      sl_pq_thrift_write_i32_field(w, 1, m->data_pages_v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA);
      sl_pq_thrift_write_i32_field(w, 2, encodings[k]);
      sl_pq_thrift_write_i32_field(w, 3, (int32_t)counts[k]);
      sl_pq_thrift_write_struct_end(w);
    }
  }
  if (m->bloom_filter_offset >= 0) {
    sl_pq_thrift_write_i64_field(w, 14, m->bloom_filter_offset);
    if (m->bloom_filter_length > 0 && m->bloom_filter_length <= INT32_MAX)
      sl_pq_thrift_write_i32_field(w, 15, (int32_t)m->bloom_filter_length);
  }
  sl_pq_thrift_write_struct_end(w);
}

static int write_status(const struct pq_thrift_writer* w, const char* what,
                        struct sluice_error* error) {
  if (w->status == 0) return 0;
  return sl_error_set(error, w->status, "%s: %s", what,
                      w->status == ENOMEM ? "out of memory"
                      : w->status == ERANGE ? "a length or count does not fit in i32"
                                            : "nested too deeply");
}

int sl_pq_file_meta_write(const struct pq_file_meta* meta, struct sl_buffer* out,
                       struct sluice_error* error) {
  if (meta->encrypted) {
    return sl_error_set(error, ENOTSUP, "writing FileMetaData: encryption is not supported");
  }
  struct pq_thrift_writer w;
  sl_pq_thrift_writer_init(&w, out);
  int64_t leaves = 0;
  for (int64_t i = 1; i < meta->n_schema; ++i) leaves += meta->schema[i].has_type != 0;
  sl_pq_thrift_write_struct_begin(&w);
  sl_pq_thrift_write_i32_field(&w, 1, meta->version);
  sl_pq_thrift_write_field(&w, 2, PQ_TT_LIST);
  sl_pq_thrift_write_list_begin(&w, PQ_TT_STRUCT, meta->n_schema);
  for (int64_t i = 0; i < meta->n_schema; ++i) write_schema_element(&w, &meta->schema[i]);
  sl_pq_thrift_write_i64_field(&w, 3, meta->num_rows);
  sl_pq_thrift_write_field(&w, 4, PQ_TT_LIST);
  sl_pq_thrift_write_list_begin(&w, PQ_TT_STRUCT, meta->n_row_groups);
  for (int64_t g = 0; g < meta->n_row_groups; ++g) {
    const struct pq_row_group* rg = &meta->row_groups[g];
    sl_pq_thrift_write_struct_begin(&w);
    sl_pq_thrift_write_field(&w, 1, PQ_TT_LIST);
    sl_pq_thrift_write_list_begin(&w, PQ_TT_STRUCT, rg->n_columns);
    for (int64_t c = 0; c < rg->n_columns; ++c) {
      const struct pq_column_chunk* cc = &rg->columns[c];
      if (cc->encrypted || !cc->has_meta_data) {
        return sl_error_set(error, ENOTSUP,
                            "writing FileMetaData: column chunk %lld of row group %lld has no "
                            "plaintext metadata", (long long)c, (long long)g);
      }
      sl_pq_thrift_write_struct_begin(&w);
      write_bytes_field(&w, 1, &cc->file_path);
      sl_pq_thrift_write_i64_field(&w, 2, cc->file_offset);
      write_column_meta(&w, &cc->meta_data);
      sl_pq_thrift_write_struct_end(&w);
    }
    sl_pq_thrift_write_i64_field(&w, 2, rg->total_byte_size);
    sl_pq_thrift_write_i64_field(&w, 3, rg->num_rows);
    if (rg->file_offset >= 0) sl_pq_thrift_write_i64_field(&w, 5, rg->file_offset);
    if (rg->total_compressed_size >= 0) sl_pq_thrift_write_i64_field(&w, 6, rg->total_compressed_size);
    if (rg->ordinal >= 0) {
      sl_pq_thrift_write_field(&w, 7, PQ_TT_I16);
      sl_pq_thrift_write_zigzag(&w, rg->ordinal);
    }
    sl_pq_thrift_write_struct_end(&w);
  }
  write_key_values(&w, 5, meta->key_value_metadata, meta->n_key_value_metadata);
  write_bytes_field(&w, 6, &meta->created_by);
  if (leaves > 0 && !meta->no_column_orders) {
    if (meta->column_orders != NULL && meta->n_column_orders != leaves) {
      return sl_error_set(error, EINVAL, "writing FileMetaData: %lld column orders for %lld leaves",
                          (long long)meta->n_column_orders, (long long)leaves);
    }
    sl_pq_thrift_write_field(&w, 7, PQ_TT_LIST);
    sl_pq_thrift_write_list_begin(&w, PQ_TT_STRUCT, leaves);
    for (int64_t i = 0; i < leaves; ++i) {
      int32_t order = meta->column_orders != NULL ? meta->column_orders[i] : PQ_ORDER_TYPE_DEFINED;
      sl_pq_thrift_write_struct_begin(&w);
      if (order > 0 && order <= INT16_MAX) sl_pq_thrift_write_empty_struct_field(&w, (int16_t)order);
      sl_pq_thrift_write_struct_end(&w);
    }
  }
  sl_pq_thrift_write_struct_end(&w);
  return write_status(&w, "writing FileMetaData", error);
}

int sl_pq_bloom_header_write(int64_t num_bytes, struct sl_buffer* out, struct sluice_error* error) {
  if (num_bytes <= 0 || num_bytes > INT32_MAX)
    return sl_error_set(error, EINVAL, "writing BloomFilterHeader: %lld bytes", (long long)num_bytes);
  struct pq_thrift_writer w;
  sl_pq_thrift_writer_init(&w, out);
  sl_pq_thrift_write_struct_begin(&w);
  sl_pq_thrift_write_i32_field(&w, 1, (int32_t)num_bytes);
  // algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED: each a union
  // whose member 1 is an empty struct.
  for (int16_t id = 2; id <= 4; ++id) {
    sl_pq_thrift_write_field(&w, id, PQ_TT_STRUCT);
    sl_pq_thrift_write_struct_begin(&w);
    sl_pq_thrift_write_empty_struct_field(&w, 1);
    sl_pq_thrift_write_struct_end(&w);
  }
  sl_pq_thrift_write_struct_end(&w);
  return write_status(&w, "writing BloomFilterHeader", error);
}

int sl_pq_page_header_write(const struct pq_page_header* h, struct sl_buffer* out,
                         struct sluice_error* error) {
  struct pq_thrift_writer w;
  sl_pq_thrift_writer_init(&w, out);
  sl_pq_thrift_write_struct_begin(&w);
  sl_pq_thrift_write_i32_field(&w, 1, (int32_t)h->type);
  sl_pq_thrift_write_i32_field(&w, 2, h->uncompressed_page_size);
  sl_pq_thrift_write_i32_field(&w, 3, h->compressed_page_size);
  if (h->has_crc) sl_pq_thrift_write_i32_field(&w, 4, (int32_t)h->crc);
  switch (h->type) {
    case PQ_PAGE_DATA:
      sl_pq_thrift_write_field(&w, 5, PQ_TT_STRUCT);
      sl_pq_thrift_write_struct_begin(&w);
      sl_pq_thrift_write_i32_field(&w, 1, h->num_values);
      sl_pq_thrift_write_i32_field(&w, 2, (int32_t)h->encoding);
      sl_pq_thrift_write_i32_field(&w, 3, (int32_t)h->definition_level_encoding);
      sl_pq_thrift_write_i32_field(&w, 4, (int32_t)h->repetition_level_encoding);
      write_statistics(&w, 5, &h->statistics);
      sl_pq_thrift_write_struct_end(&w);
      break;
    case PQ_PAGE_DICTIONARY:
      sl_pq_thrift_write_field(&w, 7, PQ_TT_STRUCT);
      sl_pq_thrift_write_struct_begin(&w);
      sl_pq_thrift_write_i32_field(&w, 1, h->num_values);
      sl_pq_thrift_write_i32_field(&w, 2, (int32_t)h->encoding);
      if (h->is_sorted) sl_pq_thrift_write_bool_field(&w, 3, 1);
      sl_pq_thrift_write_struct_end(&w);
      break;
    case PQ_PAGE_DATA_V2:
      sl_pq_thrift_write_field(&w, 8, PQ_TT_STRUCT);
      sl_pq_thrift_write_struct_begin(&w);
      sl_pq_thrift_write_i32_field(&w, 1, h->num_values);
      sl_pq_thrift_write_i32_field(&w, 2, h->num_nulls);
      sl_pq_thrift_write_i32_field(&w, 3, h->num_rows);
      sl_pq_thrift_write_i32_field(&w, 4, (int32_t)h->encoding);
      sl_pq_thrift_write_i32_field(&w, 5, h->definition_levels_byte_length);
      sl_pq_thrift_write_i32_field(&w, 6, h->repetition_levels_byte_length);
      if (!h->is_compressed) sl_pq_thrift_write_bool_field(&w, 7, 0);
      write_statistics(&w, 8, &h->statistics);
      sl_pq_thrift_write_struct_end(&w);
      break;
    default:
      return sl_error_set(error, EINVAL, "writing PageHeader: page type %d is not writable",
                          (int)h->type);
  }
  sl_pq_thrift_write_struct_end(&w);
  return write_status(&w, "writing PageHeader", error);
}
