// Parsing parquet.thrift FileMetaData and PageHeader into the structs of
// pq_meta.h. Unknown fields are skipped; known fields are type-checked and
// range-checked; every failure names the structure and field on the path
// to it, plus the byte offset (e.g. "FileMetaData.row_groups[2]:
// RowGroup.columns[0]: ... at byte 812: ...").
#include <errno.h>
#include <string.h>

#include "pq_meta.h"
#include "pq_schema.h"
#include "pq_thrift.h"
#include "../../core/sl_alloc.h"
#include "../../core/sl_error.h"

struct meta_ctx {
  struct pq_thrift_reader r;
  const struct sluice_allocator* alloc;
};

/// Runs `expr`; on failure prefixes the error with "Struct.field".
#define META_TRY(ctx, expr, where)                                           \
  do {                                                                       \
    int meta_rc_ = (expr);                                                   \
    if (meta_rc_ != 0) {                                                     \
      sl_error_prefix((ctx)->r.error, "%s", where);                          \
      return meta_rc_;                                                       \
    }                                                                        \
  } while (0)

static int meta_expect(struct meta_ctx* ctx, int type, int want, const char* where) {
  if (type == want) return 0;
  if (want == PQ_TT_BOOL_TRUE && type == PQ_TT_BOOL_FALSE) return 0;
  return sl_error_set(ctx->r.error, EILSEQ, "%s at byte %lld: unexpected thrift type %d",
                      where, (long long)ctx->r.pos, type);
}

static int meta_fail(struct meta_ctx* ctx, const char* where, const char* why) {
  return sl_error_set(ctx->r.error, EILSEQ, "%s at byte %lld: %s", where,
                      (long long)ctx->r.pos, why);
}

/// An integer field into [lo, hi].
static int meta_int(struct meta_ctx* ctx, int type, int64_t lo, int64_t hi, int64_t* out,
                    const char* where) {
  int64_t start = ctx->r.pos;
  int rc = sl_pq_thrift_read_int(&ctx->r, type, out);
  if (rc != 0) {
    sl_error_prefix(ctx->r.error, "%s", where);
    return rc;
  }
  if (*out < lo || *out > hi) {
    return sl_error_set(ctx->r.error, EILSEQ, "%s at byte %lld: value %lld out of range",
                        where, (long long)start, (long long)*out);
  }
  return 0;
}

static int meta_i32(struct meta_ctx* ctx, int type, int64_t lo, int32_t* out, const char* where) {
  int64_t v;
  SL_RETURN_NOT_OK(meta_int(ctx, type, lo, INT32_MAX, &v, where));
  *out = (int32_t)v;
  return 0;
}

static int meta_bytes(struct meta_ctx* ctx, int type, struct pq_bytes* out, const char* where) {
  SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_BINARY, where));
  META_TRY(ctx, sl_pq_thrift_read_binary(&ctx->r, &out->data, &out->size), where);
  out->present = 1;
  return 0;
}

/// Reads a list header of `want` elements and allocates `*items` (zeroed)
/// for them; a second occurrence of the field is an error (it would leak).
/// `min_bytes`: the fewest bytes a valid element takes, so that a hostile
/// count cannot make the allocation much larger than the footer.
static int meta_list(struct meta_ctx* ctx, int type, int want, void** items, int64_t* n,
                     size_t elem, int64_t min_bytes, const char* where) {
  SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_LIST, where));
  if (*items != NULL || *n != 0) return meta_fail(ctx, where, "duplicate field");
  int elem_type;
  int64_t count;
  META_TRY(ctx, sl_pq_thrift_list_begin(&ctx->r, &elem_type, &count), where);
  if (count == 0) return 0;  // any element type: see sl_pq_thrift_list_begin
  if (elem_type != want) return meta_fail(ctx, where, "unexpected list element type");
  if (count > (ctx->r.size - ctx->r.pos) / min_bytes) {
    return meta_fail(ctx, where, "more elements than the bytes left can hold");
  }
  *items = sl_calloc(ctx->alloc, (size_t)count, elem);
  if (*items == NULL) {
    return sl_error_set(ctx->r.error, ENOMEM, "%s: out of memory for %lld elements", where,
                        (long long)count);
  }
  *n = count;
  return 0;
}

/// Iterates the fields of a struct: `body` sees `id` and `type`, and must
/// consume the value (or `continue` to skip it via the default).
#define META_STRUCT(ctx, name, body)                                            \
  do {                                                                          \
    META_TRY(ctx, sl_pq_thrift_struct_begin(&(ctx)->r), name);                     \
    int16_t last_id_ = 0, id;                                                   \
    int type;                                                                   \
    for (;;) {                                                                  \
      int field_rc_ = sl_pq_thrift_field(&(ctx)->r, &last_id_, &id, &type);        \
      if (field_rc_ != 0) {                                                     \
        sl_error_prefix((ctx)->r.error, "%s", name);                            \
        return field_rc_;                                                       \
      }                                                                         \
      if (type == PQ_TT_STOP) break;                                            \
      int handled_ = 1;                                                         \
      body                                                                      \
      if (!handled_) META_TRY(ctx, sl_pq_thrift_skip(&(ctx)->r, type), name);      \
    }                                                                           \
    sl_pq_thrift_struct_end(&(ctx)->r);                                            \
  } while (0)

static int meta_key_value(struct meta_ctx* ctx, struct pq_key_value* kv) {
  META_STRUCT(ctx, "KeyValue", {
    switch (id) {
      case 1: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &kv->key, "KeyValue.key")); break;
      case 2: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &kv->value, "KeyValue.value")); break;
      default: handled_ = 0;
    }
  });
  if (!kv->key.present) return meta_fail(ctx, "KeyValue", "missing required field key");
  return 0;
}

static int meta_key_values(struct meta_ctx* ctx, int type, struct pq_key_value** items,
                           int64_t* n, const char* where) {
  SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_STRUCT, (void**)items, n, sizeof **items, 3, where));
  for (int64_t i = 0; i < *n; ++i) {
    int rc = meta_key_value(ctx, &(*items)[i]);
    if (rc != 0) return sl_error_prefix(ctx->r.error, "%s[%lld]", where, (long long)i);
  }
  return 0;
}

static int meta_statistics(struct meta_ctx* ctx, int type, struct pq_statistics* s,
                           const char* where) {
  SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_STRUCT, where));
  s->present = 1;
  META_STRUCT(ctx, where, {
    switch (id) {
      case 1: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &s->max, "Statistics.max")); break;
      case 2: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &s->min, "Statistics.min")); break;
      case 3: case 4: {
        int64_t v;
        SL_RETURN_NOT_OK(meta_int(ctx, type, INT64_MIN, INT64_MAX, &v,
                                  id == 3 ? "Statistics.null_count" : "Statistics.distinct_count"));
        // A negative count says nothing: treat it as absent.
        *(id == 3 ? &s->null_count : &s->distinct_count) = v < 0 ? -1 : v;
        break;
      }
      case 5: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &s->max_value, "Statistics.max_value")); break;
      case 6: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &s->min_value, "Statistics.min_value")); break;
      case 7: case 8:
        SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_BOOL_TRUE, "Statistics.is_*_exact"));
        *(id == 7 ? &s->is_max_value_exact : &s->is_min_value_exact) = type == PQ_TT_BOOL_TRUE;
        break;
      default: handled_ = 0;
    }
  });
  return 0;
}

/// TimeUnit union -> unit; 0 for a member this reader does not know.
static int meta_time_unit(struct meta_ctx* ctx, int type, enum pq_time_unit* unit, int* known) {
  SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_STRUCT, "TimeUnit"));
  *known = 0;
  META_STRUCT(ctx, "TimeUnit", {
    handled_ = 0;
    if (id >= 1 && id <= 3 && type == PQ_TT_STRUCT) {
      *unit = (enum pq_time_unit)id;
      *known = 1;
    }
  });
  return 0;
}

static int meta_logical_member(struct meta_ctx* ctx, int16_t member, struct pq_logical_type* lt) {
  int unit_known = 1;
  META_STRUCT(ctx, "LogicalType member", {
    handled_ = 0;
    if (member == PQ_LOGICAL_DECIMAL && (id == 1 || id == 2)) {
      int32_t* dst = id == 1 ? &lt->decimal_scale : &lt->decimal_precision;
      SL_RETURN_NOT_OK(meta_i32(ctx, type, id == 1 ? INT32_MIN : 1, dst,
                                id == 1 ? "DecimalType.scale" : "DecimalType.precision"));
      handled_ = 1;
    } else if ((member == PQ_LOGICAL_TIME || member == PQ_LOGICAL_TIMESTAMP) && id == 1) {
      SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_BOOL_TRUE, "TimeType.isAdjustedToUTC"));
      lt->is_adjusted_to_utc = type == PQ_TT_BOOL_TRUE;
      handled_ = 1;
    } else if ((member == PQ_LOGICAL_TIME || member == PQ_LOGICAL_TIMESTAMP) && id == 2) {
      SL_RETURN_NOT_OK(meta_time_unit(ctx, type, &lt->unit, &unit_known));
      handled_ = 1;
    } else if (member == PQ_LOGICAL_INTEGER && id == 1) {
      int64_t bits;
      SL_RETURN_NOT_OK(meta_int(ctx, type, 8, 64, &bits, "IntType.bitWidth"));
      if (bits != 8 && bits != 16 && bits != 32 && bits != 64) {
        return meta_fail(ctx, "IntType.bitWidth", "not 8, 16, 32 or 64");
      }
      lt->bit_width = (int32_t)bits;
      handled_ = 1;
    } else if (member == PQ_LOGICAL_INTEGER && id == 2) {
      SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_BOOL_TRUE, "IntType.isSigned"));
      lt->is_signed = type == PQ_TT_BOOL_TRUE;
      handled_ = 1;
    }
  });
  if ((member == PQ_LOGICAL_TIME || member == PQ_LOGICAL_TIMESTAMP) && lt->unit == 0) {
    unit_known = 0;  // no unit: not usable as a time
  }
  if (!unit_known) lt->kind = PQ_LOGICAL_UNKNOWN_MEMBER;
  if (member == PQ_LOGICAL_DECIMAL && lt->decimal_precision <= 0) {
    return meta_fail(ctx, "DecimalType", "missing precision");
  }
  if (member == PQ_LOGICAL_INTEGER && lt->bit_width == 0) {
    return meta_fail(ctx, "IntType", "missing bitWidth");
  }
  return 0;
}

static int meta_logical_type(struct meta_ctx* ctx, int type, struct pq_logical_type* lt) {
  SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_STRUCT, "SchemaElement.logicalType"));
  lt->kind = PQ_LOGICAL_UNKNOWN_MEMBER;  // an empty union tells nothing usable
  META_STRUCT(ctx, "LogicalType", {
    int known = type == PQ_TT_STRUCT && ((id >= 1 && id <= 8) || (id >= 10 && id <= 18));
    if (!known) {
      handled_ = 0;
      lt->kind = PQ_LOGICAL_UNKNOWN_MEMBER;
    } else {
      lt->kind = (enum pq_logical_kind)id;
      SL_RETURN_NOT_OK(meta_logical_member(ctx, id, lt));
    }
  });
  return 0;
}

static int meta_schema_element(struct meta_ctx* ctx, struct pq_schema_element* e) {
  sl_pq_schema_element_init(e);
  META_STRUCT(ctx, "SchemaElement", {
    int64_t v;
    switch (id) {
      case 1:
        SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &v, "SchemaElement.type"));
        if (v < PQ_BOOLEAN || v > PQ_FIXED_LEN_BYTE_ARRAY) {
          return meta_fail(ctx, "SchemaElement.type", "unknown physical type");
        }
        e->has_type = 1;
        e->type = (enum pq_physical_type)v;
        break;
      case 2:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &e->type_length, "SchemaElement.type_length"));
        break;
      case 3:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, 2, &v, "SchemaElement.repetition_type"));
        e->has_repetition = 1;
        e->repetition = (enum pq_repetition)v;
        break;
      case 4: SL_RETURN_NOT_OK(meta_bytes(ctx, type, &e->name, "SchemaElement.name")); break;
      case 5:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &e->num_children, "SchemaElement.num_children"));
        break;
      case 6:
        SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &v,
                                  "SchemaElement.converted_type"));
        // An annotation from the future tells nothing: ignore it.
        e->converted_type = v >= 0 && v <= PQ_CT_INTERVAL ? (enum pq_converted_type)v
                                                         : PQ_CONVERTED_NONE;
        break;
      case 7:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, INT32_MIN, &e->scale, "SchemaElement.scale"));
        break;
      case 8:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, INT32_MIN, &e->precision, "SchemaElement.precision"));
        break;
      case 9:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, INT32_MIN, &e->field_id, "SchemaElement.field_id"));
        e->has_field_id = 1;
        break;
      case 10: SL_RETURN_NOT_OK(meta_logical_type(ctx, type, &e->logical)); break;
      default: handled_ = 0;
    }
  });
  if (!e->name.present) return meta_fail(ctx, "SchemaElement", "missing required field name");
  return 0;
}

/// ColumnMetaData.encoding_stats, kept as the one thing the reader asks of
/// it: whether every data page is dictionary-encoded (dictionary pruning).
static int meta_encoding_stats(struct meta_ctx* ctx, int list_type, struct pq_column_meta* m) {
  static const char where[] = "ColumnMetaData.encoding_stats";
  // Another type under this id (no writer is known to put one) is skipped
  // like an unknown field: the stats only ever make the reader do less.
  if (list_type != PQ_TT_LIST) return sl_pq_thrift_skip(&ctx->r, list_type);
  int elem_type;
  int64_t count;
  META_TRY(ctx, sl_pq_thrift_list_begin(&ctx->r, &elem_type, &count), where);
  if (count > 0 && elem_type != PQ_TT_STRUCT) {
    for (int64_t i = 0; i < count; ++i) META_TRY(ctx, sl_pq_thrift_skip(&ctx->r, elem_type), where);
    return 0;
  }
  int dictionary = 0, other = 0;
  // Each element takes at least its stop byte: a hostile count runs out of bytes.
  for (int64_t i = 0; i < count; ++i) {
    int64_t page_type = -1, encoding = -1, pages = -1;
    META_STRUCT(ctx, "PageEncodingStats", {
      switch (id) {
        case 1: SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &page_type, "PageEncodingStats.page_type")); break;
        case 2: SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &encoding, "PageEncodingStats.encoding")); break;
        case 3: SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &pages, "PageEncodingStats.count")); break;
        default: handled_ = 0;
      }
    });
    if ((page_type != PQ_PAGE_DATA && page_type != PQ_PAGE_DATA_V2) || pages == 0) continue;
    if (encoding == PQ_ENC_PLAIN_DICTIONARY || encoding == PQ_ENC_RLE_DICTIONARY) dictionary = 1;
    else other = 1;
  }
  m->data_pages_dictionary = other ? 0 : dictionary ? 1 : -1;
  return 0;
}

static int meta_column_meta(struct meta_ctx* ctx, struct pq_column_meta* m) {
  int has_type = 0, has_path = 0, has_codec = 0, has_num_values = 0, has_data_page = 0;
  META_STRUCT(ctx, "ColumnMetaData", {
    int64_t v;
    switch (id) {
      case 1:
        SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &v, "ColumnMetaData.type"));
        if (v < PQ_BOOLEAN || v > PQ_FIXED_LEN_BYTE_ARRAY) {
          return meta_fail(ctx, "ColumnMetaData.type", "unknown physical type");
        }
        m->type = (enum pq_physical_type)v;
        has_type = 1;
        break;
      case 2:
        SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_I32, (void**)&m->encodings, &m->n_encodings,
                                   sizeof *m->encodings, 1, "ColumnMetaData.encodings"));
        for (int64_t i = 0; i < m->n_encodings; ++i) {
          META_TRY(ctx, sl_pq_thrift_read_i32(&ctx->r, &m->encodings[i]), "ColumnMetaData.encodings");
        }
        break;
      case 3:
        SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_BINARY, (void**)&m->path_in_schema, &m->n_path,
                                   sizeof *m->path_in_schema, 1, "ColumnMetaData.path_in_schema"));
        for (int64_t i = 0; i < m->n_path; ++i) {
          struct pq_bytes* p = &m->path_in_schema[i];
          META_TRY(ctx, sl_pq_thrift_read_binary(&ctx->r, &p->data, &p->size),
                   "ColumnMetaData.path_in_schema");
          p->present = 1;
        }
        has_path = 1;
        break;
      case 4:
        // Unknown codecs are kept: the reader reports them when it meets the column.
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT32_MAX, &v, "ColumnMetaData.codec"));
        m->codec = (enum pq_codec)v;
        has_codec = 1;
        break;
      case 5:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->num_values,
                                  "ColumnMetaData.num_values"));
        has_num_values = 1;
        break;
      case 6:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->total_uncompressed_size,
                                  "ColumnMetaData.total_uncompressed_size"));
        break;
      case 7:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->total_compressed_size,
                                  "ColumnMetaData.total_compressed_size"));
        break;
      case 8:
        SL_RETURN_NOT_OK(meta_key_values(ctx, type, &m->key_value_metadata,
                                         &m->n_key_value_metadata,
                                         "ColumnMetaData.key_value_metadata"));
        break;
      case 9:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->data_page_offset,
                                  "ColumnMetaData.data_page_offset"));
        has_data_page = 1;
        break;
      case 10:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->index_page_offset,
                                  "ColumnMetaData.index_page_offset"));
        break;
      case 11:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->dictionary_page_offset,
                                  "ColumnMetaData.dictionary_page_offset"));
        break;
      case 12:
        SL_RETURN_NOT_OK(meta_statistics(ctx, type, &m->statistics, "ColumnMetaData.statistics"));
        break;
      case 13: {
        // Stats only ever let the reader do less: a damaged list is skipped
        // as a whole (from where it began), not a reason to refuse the file.
        int64_t pos = ctx->r.pos;
        int depth = ctx->r.depth;
        struct sluice_error saved = *ctx->r.error;
        if (meta_encoding_stats(ctx, type, m) != 0) {
          *ctx->r.error = saved;
          ctx->r.pos = pos;
          ctx->r.depth = depth;
          m->data_pages_dictionary = -1;
          META_TRY(ctx, sl_pq_thrift_skip(&ctx->r, type), "ColumnMetaData.encoding_stats");
        }
        break;
      }
      case 14: case 15: {
        // Where the Bloom filter is: an index only, so a bad value means no
        // filter rather than a bad file (some old writers put another type
        // under these ids: skipped).
        if (type != PQ_TT_I64 && type != PQ_TT_I32) {
          handled_ = 0;
          break;
        }
        int64_t v;
        META_TRY(ctx, sl_pq_thrift_read_int(&ctx->r, type, &v), "ColumnMetaData.bloom_filter");
        if (id == 14) m->bloom_filter_offset = v >= 0 ? v : -1;
        else m->bloom_filter_length = v > 0 ? v : -1;
        break;
      }
      default: handled_ = 0;
    }
  });
  if (!has_type || !has_path || !has_codec || !has_num_values || !has_data_page) {
    return meta_fail(ctx, "ColumnMetaData", "missing a required field (type, path_in_schema, "
                     "codec, num_values or data_page_offset)");
  }
  return 0;
}

static int meta_column_chunk(struct meta_ctx* ctx, struct pq_column_chunk* c) {
  sl_pq_column_meta_init(&c->meta_data);
  META_STRUCT(ctx, "ColumnChunk", {
    switch (id) {
      case 1:
        SL_RETURN_NOT_OK(meta_bytes(ctx, type, &c->file_path, "ColumnChunk.file_path"));
        break;
      case 2:
        SL_RETURN_NOT_OK(meta_int(ctx, type, INT64_MIN, INT64_MAX, &c->file_offset,
                                  "ColumnChunk.file_offset"));
        break;
      case 3:
        SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_STRUCT, "ColumnChunk.meta_data"));
        if (c->has_meta_data) return meta_fail(ctx, "ColumnChunk.meta_data", "duplicate field");
        c->has_meta_data = 1;
        META_TRY(ctx, meta_column_meta(ctx, &c->meta_data), "ColumnChunk.meta_data");
        break;
      case 8: case 9:  // crypto_metadata, encrypted_column_metadata
        c->encrypted = 1;
        handled_ = 0;
        break;
      default: handled_ = 0;
    }
  });
  if (!c->has_meta_data && !c->encrypted) {
    return meta_fail(ctx, "ColumnChunk", "no meta_data and not encrypted");
  }
  return 0;
}

static int meta_row_group(struct meta_ctx* ctx, struct pq_row_group* g) {
  int has_columns = 0, has_rows = 0;
  g->file_offset = -1;
  g->total_compressed_size = -1;
  g->ordinal = -1;
  META_STRUCT(ctx, "RowGroup", {
    int64_t v;
    switch (id) {
      case 1:
        SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_STRUCT, (void**)&g->columns, &g->n_columns,
                                   sizeof *g->columns, 3, "RowGroup.columns"));
        for (int64_t i = 0; i < g->n_columns; ++i) {
          int rc = meta_column_chunk(ctx, &g->columns[i]);
          if (rc != 0) return sl_error_prefix(ctx->r.error, "RowGroup.columns[%lld]", (long long)i);
        }
        has_columns = 1;
        break;
      case 2:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &g->total_byte_size,
                                  "RowGroup.total_byte_size"));
        break;
      case 3:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &g->num_rows, "RowGroup.num_rows"));
        has_rows = 1;
        break;
      case 5:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &g->file_offset,
                                  "RowGroup.file_offset"));
        break;
      case 6:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &g->total_compressed_size,
                                  "RowGroup.total_compressed_size"));
        break;
      case 7:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT16_MAX, &v, "RowGroup.ordinal"));
        g->ordinal = (int32_t)v;
        break;
      default: handled_ = 0;
    }
  });
  if (!has_columns || !has_rows) {
    return meta_fail(ctx, "RowGroup", "missing required field columns or num_rows");
  }
  return 0;
}

/// Checks that num_children describe one tree covering exactly the list,
/// no deeper than PQ_MAX_SCHEMA_GROUPS, and returns the number of leaves.
static int meta_check_schema(struct meta_ctx* ctx, const struct pq_file_meta* m, int64_t* leaves) {
  if (m->n_schema < 1) return meta_fail(ctx, "FileMetaData.schema", "empty schema");
  int64_t remaining[PQ_MAX_SCHEMA_GROUPS];  // children still expected per open group
  int depth = 0;
  *leaves = 0;
  for (int64_t i = 0; i < m->n_schema; ++i) {
    const struct pq_schema_element* e = &m->schema[i];
    if (i > 0) {
      while (depth > 0 && remaining[depth - 1] == 0) --depth;
      if (depth == 0) {
        return sl_error_set(ctx->r.error, EILSEQ,
                            "FileMetaData.schema: element %lld is outside the tree "
                            "(num_children do not add up)", (long long)i);
      }
      --remaining[depth - 1];
    }
    int is_group = i == 0 || !e->has_type;
    if (!is_group) {
      if (e->num_children != 0) {
        return sl_error_set(ctx->r.error, EILSEQ,
                            "FileMetaData.schema[%lld]: a leaf with num_children %d",
                            (long long)i, (int)e->num_children);
      }
      if (e->type == PQ_FIXED_LEN_BYTE_ARRAY && e->type_length <= 0) {
        return sl_error_set(ctx->r.error, EILSEQ,
                            "FileMetaData.schema[%lld]: FIXED_LEN_BYTE_ARRAY without type_length",
                            (long long)i);
      }
      ++*leaves;
      continue;
    }
    if (i > 0 && e->num_children == 0) {
      return sl_error_set(ctx->r.error, EILSEQ,
                          "FileMetaData.schema[%lld]: group without children", (long long)i);
    }
    if (depth >= PQ_MAX_SCHEMA_GROUPS) {
      // Valid Parquet, but more groups than PQ_MAX_DEPTH Arrow levels take.
      return sl_error_set(ctx->r.error, ENOTSUP, "FileMetaData.schema[%lld]: nested deeper than "
                          "sluice's limit of %d levels", (long long)i, PQ_MAX_DEPTH);
    }
    remaining[depth++] = e->num_children;
  }
  while (depth > 0 && remaining[depth - 1] == 0) --depth;
  if (depth != 0) {
    return sl_error_set(ctx->r.error, EILSEQ,
                        "FileMetaData.schema: %lld elements, fewer than num_children announce",
                        (long long)m->n_schema);
  }
  return 0;
}

static int meta_check_row_groups(struct meta_ctx* ctx, const struct pq_file_meta* m,
                                 int64_t leaves) {
  int64_t rows = 0;
  for (int64_t g = 0; g < m->n_row_groups; ++g) {
    const struct pq_row_group* rg = &m->row_groups[g];
    if (rg->n_columns != leaves) {
      return sl_error_set(ctx->r.error, EILSEQ,
                          "FileMetaData.row_groups[%lld]: %lld column chunks for %lld leaf columns",
                          (long long)g, (long long)rg->n_columns, (long long)leaves);
    }
    if (rg->num_rows > INT64_MAX - rows) {
      return sl_error_set(ctx->r.error, EILSEQ, "FileMetaData.row_groups: row count overflows");
    }
    rows += rg->num_rows;
    int64_t leaf = 0;
    for (int64_t i = 1; i < m->n_schema && leaf < leaves; ++i) {
      if (!m->schema[i].has_type) continue;
      const struct pq_column_chunk* c = &rg->columns[leaf];
      if (c->has_meta_data && c->meta_data.type != m->schema[i].type) {
        return sl_error_set(ctx->r.error, EILSEQ,
                            "FileMetaData.row_groups[%lld].columns[%lld]: physical type %d "
                            "differs from the schema's %d", (long long)g, (long long)leaf,
                            (int)c->meta_data.type, (int)m->schema[i].type);
      }
      ++leaf;
    }
  }
  // FileMetaData.num_rows is not checked against the row groups: some writers
  // leave it 0 (parquet-testing's repeated_no_annotation.parquet), and readers
  // go by the row groups anyway.
  return 0;
}

/// The ColumnOrder union: the id of its (struct) member; 0 if empty.
static int meta_column_order(struct meta_ctx* ctx, int32_t* order) {
  *order = 0;
  META_STRUCT(ctx, "ColumnOrder", {
    if (type == PQ_TT_STRUCT) *order = id;
    handled_ = 0;  // the members are empty structs (or unknown ones): skip
  });
  return 0;
}

static int meta_file(struct meta_ctx* ctx, struct pq_file_meta* m) {
  int has_schema = 0, has_rows = 0, has_groups = 0, has_orders = 0;
  META_STRUCT(ctx, "FileMetaData", {
    switch (id) {
      case 1:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, INT32_MIN, &m->version, "FileMetaData.version"));
        break;
      case 2:
        SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_STRUCT, (void**)&m->schema, &m->n_schema,
                                   sizeof *m->schema, 3, "FileMetaData.schema"));
        for (int64_t i = 0; i < m->n_schema; ++i) {
          int rc = meta_schema_element(ctx, &m->schema[i]);
          if (rc != 0) {
            return sl_error_prefix(ctx->r.error, "FileMetaData.schema[%lld]",
                                   (long long)i);
          }
        }
        has_schema = 1;
        break;
      case 3:
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT64_MAX, &m->num_rows, "FileMetaData.num_rows"));
        has_rows = 1;
        break;
      case 4:
        SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_STRUCT, (void**)&m->row_groups,
                                   &m->n_row_groups, sizeof *m->row_groups, 5,
                                   "FileMetaData.row_groups"));
        for (int64_t i = 0; i < m->n_row_groups; ++i) {
          int rc = meta_row_group(ctx, &m->row_groups[i]);
          if (rc != 0) {
            return sl_error_prefix(ctx->r.error, "FileMetaData.row_groups[%lld]",
                                   (long long)i);
          }
        }
        has_groups = 1;
        break;
      case 5:
        SL_RETURN_NOT_OK(meta_key_values(ctx, type, &m->key_value_metadata,
                                         &m->n_key_value_metadata,
                                         "FileMetaData.key_value_metadata"));
        break;
      case 6:
        SL_RETURN_NOT_OK(meta_bytes(ctx, type, &m->created_by, "FileMetaData.created_by"));
        break;
      case 7:
        SL_RETURN_NOT_OK(meta_list(ctx, type, PQ_TT_STRUCT, (void**)&m->column_orders,
                                   &m->n_column_orders, sizeof *m->column_orders, 1,
                                   "FileMetaData.column_orders"));
        for (int64_t i = 0; i < m->n_column_orders; ++i) {
          int rc = meta_column_order(ctx, &m->column_orders[i]);
          if (rc != 0) {
            return sl_error_prefix(ctx->r.error, "FileMetaData.column_orders[%lld]",
                                   (long long)i);
          }
        }
        has_orders = 1;
        break;
      case 8:  // encryption_algorithm: plaintext footer of an encrypted file
        m->encrypted = 1;
        handled_ = 0;
        break;
      default: handled_ = 0;
    }
  });
  if (!has_schema || !has_rows || !has_groups) {
    return meta_fail(ctx, "FileMetaData", "missing required field schema, num_rows or row_groups");
  }
  m->no_column_orders = !has_orders;
  int64_t leaves;
  SL_RETURN_NOT_OK(meta_check_schema(ctx, m, &leaves));
  if (has_orders && m->n_column_orders != leaves) {
    return sl_error_set(ctx->r.error, EILSEQ,
                        "FileMetaData.column_orders: %lld entries for %lld leaf columns",
                        (long long)m->n_column_orders, (long long)leaves);
  }
  return meta_check_row_groups(ctx, m, leaves);
}

int sl_pq_file_meta_parse(const uint8_t* data, int64_t size, const struct sluice_allocator* alloc,
                       struct pq_file_meta* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  if (data == NULL || size <= 0) {
    return sl_error_set(error, EILSEQ, "FileMetaData: empty footer");
  }
  struct meta_ctx ctx;
  sl_pq_thrift_reader_init(&ctx.r, data, size, error);
  ctx.alloc = alloc;
  int rc = meta_file(&ctx, out);
  if (rc != 0) sl_pq_file_meta_free(out);
  return rc;
}

static void meta_free_key_values(const struct sluice_allocator* alloc, struct pq_key_value* kv,
                                 int64_t n) {
  sl_free(alloc, kv, (size_t)n * sizeof *kv);
}

void sl_pq_file_meta_free(struct pq_file_meta* m) {
  if (m == NULL) return;
  const struct sluice_allocator* alloc = m->alloc;
  for (int64_t g = 0; g < m->n_row_groups; ++g) {
    struct pq_row_group* rg = &m->row_groups[g];
    for (int64_t c = 0; c < rg->n_columns; ++c) {
      struct pq_column_meta* cm = &rg->columns[c].meta_data;
      sl_free(alloc, cm->encodings, (size_t)cm->n_encodings * sizeof *cm->encodings);
      sl_free(alloc, cm->path_in_schema, (size_t)cm->n_path * sizeof *cm->path_in_schema);
      meta_free_key_values(alloc, cm->key_value_metadata, cm->n_key_value_metadata);
    }
    sl_free(alloc, rg->columns, (size_t)rg->n_columns * sizeof *rg->columns);
  }
  sl_free(alloc, m->row_groups, (size_t)m->n_row_groups * sizeof *m->row_groups);
  sl_free(alloc, m->schema, (size_t)m->n_schema * sizeof *m->schema);
  meta_free_key_values(alloc, m->key_value_metadata, m->n_key_value_metadata);
  sl_free(alloc, m->column_orders, (size_t)m->n_column_orders * sizeof *m->column_orders);
  memset(m, 0, sizeof *m);
  m->alloc = alloc;
}

/* ---- page headers ------------------------------------------------------- */

static int meta_page_encoding(struct meta_ctx* ctx, int type, enum pq_encoding* out,
                              const char* where) {
  int64_t v;
  // Unknown encodings are kept as numbers: the decoder reports them.
  SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT32_MAX, &v, where));
  *out = (enum pq_encoding)v;
  return 0;
}

static int meta_data_page(struct meta_ctx* ctx, int v2, struct pq_page_header* h) {
  const char* name = v2 ? "DataPageHeaderV2" : "DataPageHeader";
  int has_values = 0, has_encoding = 0;
  META_STRUCT(ctx, name, {
    if (id == 1) {
      SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->num_values, "num_values"));
      has_values = 1;
    } else if ((!v2 && id == 2) || (v2 && id == 4)) {
      SL_RETURN_NOT_OK(meta_page_encoding(ctx, type, &h->encoding, "encoding"));
      has_encoding = 1;
    } else if (!v2 && id == 3) {
      SL_RETURN_NOT_OK(meta_page_encoding(ctx, type, &h->definition_level_encoding,
                                          "definition_level_encoding"));
    } else if (!v2 && id == 4) {
      SL_RETURN_NOT_OK(meta_page_encoding(ctx, type, &h->repetition_level_encoding,
                                          "repetition_level_encoding"));
    } else if ((!v2 && id == 5) || (v2 && id == 8)) {
      SL_RETURN_NOT_OK(meta_statistics(ctx, type, &h->statistics, "statistics"));
    } else if (v2 && id == 2) {
      SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->num_nulls, "num_nulls"));
    } else if (v2 && id == 3) {
      SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->num_rows, "num_rows"));
    } else if (v2 && id == 5) {
      SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->definition_levels_byte_length,
                                "definition_levels_byte_length"));
    } else if (v2 && id == 6) {
      SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->repetition_levels_byte_length,
                                "repetition_levels_byte_length"));
    } else if (v2 && id == 7) {
      SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_BOOL_TRUE, "is_compressed"));
      h->is_compressed = type == PQ_TT_BOOL_TRUE;
    } else {
      handled_ = 0;
    }
  });
  if (!has_values || !has_encoding) {
    return meta_fail(ctx, name, "missing required field num_values or encoding");
  }
  if (v2 && (int64_t)h->definition_levels_byte_length + h->repetition_levels_byte_length >
                h->compressed_page_size) {
    return meta_fail(ctx, name, "level lengths exceed the page size");
  }
  return 0;
}

static int meta_dictionary_page(struct meta_ctx* ctx, struct pq_page_header* h) {
  int has_values = 0, has_encoding = 0;
  META_STRUCT(ctx, "DictionaryPageHeader", {
    if (id == 1) {
      SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->num_values, "num_values"));
      has_values = 1;
    } else if (id == 2) {
      SL_RETURN_NOT_OK(meta_page_encoding(ctx, type, &h->encoding, "encoding"));
      has_encoding = 1;
    } else if (id == 3) {
      SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_BOOL_TRUE, "is_sorted"));
      h->is_sorted = type == PQ_TT_BOOL_TRUE;
    } else {
      handled_ = 0;
    }
  });
  if (!has_values || !has_encoding) {
    return meta_fail(ctx, "DictionaryPageHeader", "missing required field num_values or encoding");
  }
  return 0;
}

static int meta_page_header(struct meta_ctx* ctx, struct pq_page_header* h) {
  int has_type = 0, has_sizes = 0, has_sub = 0;
  META_STRUCT(ctx, "PageHeader", {
    int64_t v;
    switch (id) {
      case 1:
        // Unknown page types are kept: the reader skips such pages.
        SL_RETURN_NOT_OK(meta_int(ctx, type, 0, INT32_MAX, &v, "PageHeader.type"));
        h->type = (enum pq_page_type)v;
        has_type = 1;
        break;
      case 2:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->uncompressed_page_size,
                                  "PageHeader.uncompressed_page_size"));
        has_sizes |= 1;
        break;
      case 3:
        SL_RETURN_NOT_OK(meta_i32(ctx, type, 0, &h->compressed_page_size,
                                  "PageHeader.compressed_page_size"));
        has_sizes |= 2;
        break;
      case 4: {
        SL_RETURN_NOT_OK(meta_int(ctx, type, INT32_MIN, INT32_MAX, &v, "PageHeader.crc"));
        h->has_crc = 1;
        h->crc = (uint32_t)(int32_t)v;
        break;
      }
      case 5: case 7: case 8: {
        int want = id == 5 ? PQ_PAGE_DATA : id == 7 ? PQ_PAGE_DICTIONARY : PQ_PAGE_DATA_V2;
        if (!has_type || (int)h->type != want || (has_sizes != 3)) {
          handled_ = 0;  // a sub-header that does not match the type: ignore it
          break;
        }
        SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_STRUCT, "PageHeader sub-header"));
        if (has_sub) return meta_fail(ctx, "PageHeader", "duplicate sub-header");
        int rc = id == 7 ? meta_dictionary_page(ctx, h) : meta_data_page(ctx, id == 8, h);
        if (rc != 0) return sl_error_prefix(ctx->r.error, "PageHeader");
        has_sub = 1;
        break;
      }
      default: handled_ = 0;
    }
  });
  if (!has_type || has_sizes != 3) {
    return meta_fail(ctx, "PageHeader", "missing required field type or page sizes");
  }
  int needs_sub = h->type == PQ_PAGE_DATA || h->type == PQ_PAGE_DICTIONARY ||
                  h->type == PQ_PAGE_DATA_V2;
  if (needs_sub && !has_sub) {
    return meta_fail(ctx, "PageHeader", "missing the header for its page type");
  }
  return 0;
}

/// A union of empty structs whose member must be field 1 (BloomFilterAlgorithm
/// BLOCK, BloomFilterHash XXHASH, BloomFilterCompression UNCOMPRESSED).
static int meta_union_first(struct meta_ctx* ctx, int type, int* is_first, const char* where) {
  SL_RETURN_NOT_OK(meta_expect(ctx, type, PQ_TT_STRUCT, where));
  int members = 0, first = 0;
  META_STRUCT(ctx, where, {
    ++members;
    first = id == 1 && type == PQ_TT_STRUCT;
    handled_ = 0;
  });
  *is_first = members == 1 && first;
  return 0;
}

int sl_pq_bloom_header_parse(const uint8_t* data, int64_t size, int64_t* header_size,
                          int64_t* num_bytes, struct sluice_error* error) {
  struct meta_ctx ctx;
  sl_pq_thrift_reader_init(&ctx.r, data, size, error);
  ctx.alloc = NULL;
  struct meta_ctx* c = &ctx;
  int64_t n = -1;
  int usable[3] = {0, 0, 0};
  META_STRUCT(c, "BloomFilterHeader", {
    switch (id) {
      case 1:
        SL_RETURN_NOT_OK(meta_int(c, type, 0, INT32_MAX, &n, "BloomFilterHeader.numBytes"));
        break;
      case 2: case 3: case 4:
        SL_RETURN_NOT_OK(meta_union_first(c, type, &usable[id - 2], "BloomFilterHeader"));
        break;
      default: handled_ = 0;
    }
  });
  // The spec caps filters at 128 MiB; blocks are 32 bytes.
  if (n <= 0 || n % 32 != 0 || n > ((int64_t)128 << 20)) {
    return meta_fail(c, "BloomFilterHeader", "numBytes is not a positive multiple of 32 up to 128 MiB");
  }
  if (!usable[0] || !usable[1] || !usable[2]) {
    return meta_fail(c, "BloomFilterHeader", "not a split block, xxHash, uncompressed filter");
  }
  *header_size = c->r.pos;
  *num_bytes = n;
  return 0;
}

int sl_pq_page_header_parse(const uint8_t* data, int64_t size, struct pq_page_header* out,
                         int64_t* header_size, struct sluice_error* error) {
  sl_pq_page_header_init(out);
  *header_size = 0;
  struct meta_ctx ctx;
  sl_pq_thrift_reader_init(&ctx.r, data, size, error);
  ctx.alloc = NULL;
  int rc = meta_page_header(&ctx, out);
  if (rc != 0) {
    sl_pq_page_header_init(out);
    return rc;
  }
  *header_size = ctx.r.pos;
  return 0;
}

/* ---- initialisers -------------------------------------------------------- */

void sl_pq_statistics_init(struct pq_statistics* s) {
  memset(s, 0, sizeof *s);
  s->null_count = -1;
  s->distinct_count = -1;
  s->is_max_value_exact = -1;
  s->is_min_value_exact = -1;
}

void sl_pq_page_header_init(struct pq_page_header* h) {
  memset(h, 0, sizeof *h);
  h->is_compressed = 1;
  sl_pq_statistics_init(&h->statistics);
}

void sl_pq_schema_element_init(struct pq_schema_element* e) {
  memset(e, 0, sizeof *e);
  e->converted_type = PQ_CONVERTED_NONE;
  e->logical.kind = PQ_LOGICAL_NONE;
}

void sl_pq_column_meta_init(struct pq_column_meta* m) {
  memset(m, 0, sizeof *m);
  m->index_page_offset = -1;
  m->dictionary_page_offset = -1;
  m->bloom_filter_offset = -1;
  m->bloom_filter_length = -1;
  m->data_pages_dictionary = -1;
  sl_pq_statistics_init(&m->statistics);
}
