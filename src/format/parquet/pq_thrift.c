// Thrift compact protocol, by hand (see pq_thrift.h for why).
#include "pq_thrift.h"

#include <errno.h>
#include <string.h>

#include "../../core/sl_error.h"

void sl_pq_thrift_reader_init(struct pq_thrift_reader* r, const uint8_t* data, int64_t size,
                           struct sluice_error* error) {
  r->data = data;
  r->size = data == NULL || size < 0 ? 0 : size;
  r->pos = 0;
  r->depth = 0;
  r->error = error;
}

int sl_pq_thrift_fail(struct pq_thrift_reader* r, const char* what, const char* why) {
  return sl_error_set(r->error, EILSEQ, "%s at byte %lld: %s", what, (long long)r->pos, why);
}

/// An unsigned varint of at most `max_bits` significant bits.
static int thrift_varint(struct pq_thrift_reader* r, int max_bits, uint64_t* out,
                         const char* what) {
  uint64_t value = 0;
  int64_t start = r->pos;
  for (int shift = 0;; shift += 7) {
    if (r->pos >= r->size) {
      r->pos = start;
      return sl_pq_thrift_fail(r, what, "truncated varint");
    }
    uint8_t byte = r->data[r->pos++];
    uint64_t bits = byte & 0x7f;
    // The last byte may only carry the bits the type has left.
    if (shift >= max_bits || (max_bits - shift < 7 && (bits >> (max_bits - shift)) != 0)) {
      r->pos = start;
      return sl_pq_thrift_fail(r, what, "varint overflows its type");
    }
    value |= bits << shift;
    if ((byte & 0x80) == 0) break;
  }
  *out = value;
  return 0;
}

static int64_t thrift_unzigzag(uint64_t v) {
  return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int sl_pq_thrift_read_byte(struct pq_thrift_reader* r, int8_t* out) {
  if (r->pos >= r->size) return sl_pq_thrift_fail(r, "byte", "truncated");
  *out = (int8_t)r->data[r->pos++];
  return 0;
}

int sl_pq_thrift_read_i16(struct pq_thrift_reader* r, int16_t* out) {
  uint64_t v = 0;
  SL_RETURN_NOT_OK(thrift_varint(r, 16, &v, "i16"));
  *out = (int16_t)thrift_unzigzag(v);
  return 0;
}

int sl_pq_thrift_read_i32(struct pq_thrift_reader* r, int32_t* out) {
  uint64_t v = 0;
  SL_RETURN_NOT_OK(thrift_varint(r, 32, &v, "i32"));
  *out = (int32_t)thrift_unzigzag(v);
  return 0;
}

int sl_pq_thrift_read_i64(struct pq_thrift_reader* r, int64_t* out) {
  uint64_t v = 0;
  SL_RETURN_NOT_OK(thrift_varint(r, 64, &v, "i64"));
  *out = thrift_unzigzag(v);
  return 0;
}

int sl_pq_thrift_read_int(struct pq_thrift_reader* r, int type, int64_t* out) {
  switch (type) {
    case PQ_TT_BYTE: {
      int8_t v = 0;
      SL_RETURN_NOT_OK(sl_pq_thrift_read_byte(r, &v));
      *out = v;
      return 0;
    }
    case PQ_TT_I16: {
      int16_t v = 0;
      SL_RETURN_NOT_OK(sl_pq_thrift_read_i16(r, &v));
      *out = v;
      return 0;
    }
    case PQ_TT_I32: {
      int32_t v = 0;
      SL_RETURN_NOT_OK(sl_pq_thrift_read_i32(r, &v));
      *out = v;
      return 0;
    }
    case PQ_TT_I64:
      return sl_pq_thrift_read_i64(r, out);
    default:
      return sl_pq_thrift_fail(r, "integer field", "has a non-integer type");
  }
}

int sl_pq_thrift_read_double(struct pq_thrift_reader* r, double* out) {
  if (r->size - r->pos < 8) return sl_pq_thrift_fail(r, "double", "truncated");
  uint64_t bits = 0;
  for (int b = 7; b >= 0; --b) bits = (bits << 8) | r->data[r->pos + b];
  memcpy(out, &bits, sizeof *out);
  r->pos += 8;
  return 0;
}

int sl_pq_thrift_read_binary(struct pq_thrift_reader* r, const uint8_t** data, int64_t* size) {
  uint64_t n;
  int64_t start = r->pos;
  SL_RETURN_NOT_OK(thrift_varint(r, 32, &n, "binary length"));
  if ((int64_t)n > r->size - r->pos) {
    r->pos = start;
    return sl_pq_thrift_fail(r, "binary", "length runs past the end of the buffer");
  }
  *data = n == 0 ? NULL : r->data + r->pos;
  *size = (int64_t)n;
  r->pos += (int64_t)n;
  return 0;
}

int sl_pq_thrift_read_bool_element(struct pq_thrift_reader* r, int* out) {
  int8_t b = 0;
  SL_RETURN_NOT_OK(sl_pq_thrift_read_byte(r, &b));
  // The C++ writer uses 1/2 (like field types), the Java one 1/0.
  if (b != 0 && b != 1 && b != 2) return sl_pq_thrift_fail(r, "bool", "not 0, 1 or 2");
  *out = b == 1;
  return 0;
}

int sl_pq_thrift_field(struct pq_thrift_reader* r, int16_t* last_id, int16_t* id, int* type) {
  if (r->pos >= r->size) return sl_pq_thrift_fail(r, "field header", "truncated struct");
  int64_t start = r->pos;
  uint8_t byte = r->data[r->pos++];
  *type = byte & 0x0f;
  if (*type == PQ_TT_STOP) {
    *id = 0;
    return 0;
  }
  if (*type > PQ_TT_STRUCT) {
    r->pos = start;
    return sl_pq_thrift_fail(r, "field header", "unknown field type");
  }
  int delta = byte >> 4;
  if (delta != 0) {
    int32_t next = (int32_t)*last_id + delta;
    if (next > INT16_MAX) {
      r->pos = start;
      return sl_pq_thrift_fail(r, "field header", "field id overflows i16");
    }
    *id = (int16_t)next;
  } else {
    SL_RETURN_NOT_OK(sl_pq_thrift_read_i16(r, id));
  }
  *last_id = *id;
  return 0;
}

int sl_pq_thrift_struct_begin(struct pq_thrift_reader* r) {
  if (r->depth >= PQ_THRIFT_MAX_DEPTH) {
    return sl_pq_thrift_fail(r, "struct", "nested too deeply");
  }
  ++r->depth;
  return 0;
}

void sl_pq_thrift_struct_end(struct pq_thrift_reader* r) {
  if (r->depth > 0) --r->depth;
}

int sl_pq_thrift_list_begin(struct pq_thrift_reader* r, int* elem_type, int64_t* count) {
  if (r->pos >= r->size) return sl_pq_thrift_fail(r, "list header", "truncated");
  int64_t start = r->pos;
  uint8_t byte = r->data[r->pos++];
  *elem_type = byte & 0x0f;
  uint64_t n = byte >> 4;
  if (n == 15) SL_RETURN_NOT_OK(thrift_varint(r, 32, &n, "list size"));
  // Every element, whatever its type, takes at least one byte, so a count
  // larger than the bytes left is a lie (and would size an allocation).
  if ((int64_t)n > r->size - r->pos) {
    r->pos = start;
    return sl_pq_thrift_fail(r, "list header", "more elements than bytes left");
  }
  // An empty list's element type is never used, and some writers leave it 0
  // (fastparquet writes an empty list as the single byte 0x00).
  if (n > 0 && (*elem_type == PQ_TT_STOP || *elem_type > PQ_TT_STRUCT)) {
    r->pos = start;
    return sl_pq_thrift_fail(r, "list header", "unknown element type");
  }
  *count = (int64_t)n;
  return 0;
}

static int thrift_skip_list(struct pq_thrift_reader* r) {
  int elem_type;
  int64_t n;
  SL_RETURN_NOT_OK(sl_pq_thrift_list_begin(r, &elem_type, &n));
  for (int64_t i = 0; i < n; ++i) {
    if (elem_type == PQ_TT_BOOL_TRUE || elem_type == PQ_TT_BOOL_FALSE) {
      int b;
      SL_RETURN_NOT_OK(sl_pq_thrift_read_bool_element(r, &b));
    } else {
      SL_RETURN_NOT_OK(sl_pq_thrift_skip(r, elem_type));
    }
  }
  return 0;
}

static int thrift_skip_map(struct pq_thrift_reader* r) {
  uint64_t n;
  SL_RETURN_NOT_OK(thrift_varint(r, 32, &n, "map size"));
  if (n == 0) return 0;
  if (r->pos >= r->size) return sl_pq_thrift_fail(r, "map header", "truncated");
  uint8_t types = r->data[r->pos++];
  int key_type = types >> 4, value_type = types & 0x0f;
  if ((int64_t)n > (r->size - r->pos) / 2) {
    return sl_pq_thrift_fail(r, "map header", "more entries than bytes left");
  }
  if (key_type == PQ_TT_STOP || key_type > PQ_TT_STRUCT || value_type == PQ_TT_STOP ||
      value_type > PQ_TT_STRUCT) {
    return sl_pq_thrift_fail(r, "map header", "unknown key or value type");
  }
  for (uint64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 2; ++k) {
      int t = k == 0 ? key_type : value_type;
      if (t == PQ_TT_BOOL_TRUE || t == PQ_TT_BOOL_FALSE) {
        int b;
        SL_RETURN_NOT_OK(sl_pq_thrift_read_bool_element(r, &b));
      } else {
        SL_RETURN_NOT_OK(sl_pq_thrift_skip(r, t));
      }
    }
  }
  return 0;
}

int sl_pq_thrift_skip(struct pq_thrift_reader* r, int type) {
  switch (type) {
    case PQ_TT_BOOL_TRUE: case PQ_TT_BOOL_FALSE:
      return 0;  // the value was in the field header
    case PQ_TT_BYTE: {
      int8_t v = 0;
      return sl_pq_thrift_read_byte(r, &v);
    }
    case PQ_TT_I16: case PQ_TT_I32: case PQ_TT_I64: {
      int64_t v;
      return sl_pq_thrift_read_int(r, type, &v);
    }
    case PQ_TT_DOUBLE: {
      double v;
      return sl_pq_thrift_read_double(r, &v);
    }
    case PQ_TT_BINARY: {
      const uint8_t* d;
      int64_t n;
      return sl_pq_thrift_read_binary(r, &d, &n);
    }
    case PQ_TT_LIST: case PQ_TT_SET: case PQ_TT_MAP: case PQ_TT_STRUCT: {
      SL_RETURN_NOT_OK(sl_pq_thrift_struct_begin(r));
      int rc;
      if (type == PQ_TT_LIST || type == PQ_TT_SET) {
        rc = thrift_skip_list(r);
      } else if (type == PQ_TT_MAP) {
        rc = thrift_skip_map(r);
      } else {
        int16_t last = 0, id;
        int t;
        for (;;) {
          rc = sl_pq_thrift_field(r, &last, &id, &t);
          if (rc != 0 || t == PQ_TT_STOP) break;
          rc = sl_pq_thrift_skip(r, t);
          if (rc != 0) break;
        }
      }
      sl_pq_thrift_struct_end(r);
      return rc;
    }
    default:
      return sl_pq_thrift_fail(r, "value", "unknown type");
  }
}

/* ---- writer ------------------------------------------------------------- */

void sl_pq_thrift_writer_init(struct pq_thrift_writer* w, struct sl_buffer* out) {
  memset(w, 0, sizeof *w);
  w->out = out;
}

static void thrift_put(struct pq_thrift_writer* w, const void* data, int64_t n) {
  if (w->status != 0 || n == 0) return;
  w->status = sl_buffer_append(w->out, data, n);
}

void sl_pq_thrift_write_varint(struct pq_thrift_writer* w, uint64_t value) {
  uint8_t bytes[10];
  int n = 0;
  do {
    uint8_t b = value & 0x7f;
    value >>= 7;
    bytes[n++] = (uint8_t)(b | (value != 0 ? 0x80 : 0));
  } while (value != 0);
  thrift_put(w, bytes, n);
}

void sl_pq_thrift_write_zigzag(struct pq_thrift_writer* w, int64_t value) {
  sl_pq_thrift_write_varint(w, ((uint64_t)value << 1) ^ (uint64_t)(value >> 63));
}

void sl_pq_thrift_write_field(struct pq_thrift_writer* w, int16_t id, int type) {
  if (w->status != 0) return;
  int16_t* last = &w->last_id[w->depth];
  int delta = (int)id - *last;
  if (delta > 0 && delta <= 15) {
    uint8_t b = (uint8_t)((delta << 4) | type);
    thrift_put(w, &b, 1);
  } else {
    uint8_t b = (uint8_t)type;
    thrift_put(w, &b, 1);
    sl_pq_thrift_write_zigzag(w, id);
  }
  *last = id;
}

void sl_pq_thrift_write_bool_field(struct pq_thrift_writer* w, int16_t id, int value) {
  sl_pq_thrift_write_field(w, id, value ? PQ_TT_BOOL_TRUE : PQ_TT_BOOL_FALSE);
}

void sl_pq_thrift_write_i32_field(struct pq_thrift_writer* w, int16_t id, int32_t value) {
  sl_pq_thrift_write_field(w, id, PQ_TT_I32);
  sl_pq_thrift_write_zigzag(w, value);
}

void sl_pq_thrift_write_i64_field(struct pq_thrift_writer* w, int16_t id, int64_t value) {
  sl_pq_thrift_write_field(w, id, PQ_TT_I64);
  sl_pq_thrift_write_zigzag(w, value);
}

void sl_pq_thrift_write_binary(struct pq_thrift_writer* w, const uint8_t* data, int64_t size) {
  if (w->status == 0 && (size < 0 || size > INT32_MAX)) w->status = ERANGE;
  sl_pq_thrift_write_varint(w, (uint64_t)size);
  thrift_put(w, data, size);
}

void sl_pq_thrift_write_binary_field(struct pq_thrift_writer* w, int16_t id, const uint8_t* data,
                                  int64_t size) {
  sl_pq_thrift_write_field(w, id, PQ_TT_BINARY);
  sl_pq_thrift_write_binary(w, data, size);
}

void sl_pq_thrift_write_struct_begin(struct pq_thrift_writer* w) {
  if (w->status != 0) return;
  if (w->depth + 1 >= PQ_THRIFT_MAX_DEPTH) {
    w->status = EINVAL;
    return;
  }
  w->last_id[++w->depth] = 0;
}

void sl_pq_thrift_write_struct_end(struct pq_thrift_writer* w) {
  uint8_t stop = PQ_TT_STOP;
  thrift_put(w, &stop, 1);
  if (w->status == 0 && w->depth > 0) --w->depth;
}

void sl_pq_thrift_write_empty_struct_field(struct pq_thrift_writer* w, int16_t id) {
  sl_pq_thrift_write_field(w, id, PQ_TT_STRUCT);
  sl_pq_thrift_write_struct_begin(w);
  sl_pq_thrift_write_struct_end(w);
}

void sl_pq_thrift_write_list_begin(struct pq_thrift_writer* w, int elem_type, int64_t count) {
  if (w->status == 0 && (count < 0 || count > INT32_MAX)) w->status = ERANGE;
  if (count < 15) {
    uint8_t b = (uint8_t)((count << 4) | elem_type);
    thrift_put(w, &b, 1);
  } else {
    uint8_t b = (uint8_t)(0xf0 | elem_type);
    thrift_put(w, &b, 1);
    sl_pq_thrift_write_varint(w, (uint64_t)count);
  }
}
