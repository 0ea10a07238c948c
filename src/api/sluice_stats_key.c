// Comparable keys of Arrow values, for min/max over computed and stored
// statistics alike: one order for every ordered type.
#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_read.h"
#include "api/sluice_stats_internal.h"

/// The key of row `i` (not null); SL_KEY_NONE for types without an order.
void sl_stats_key_of(const struct sl_text_field* field, const struct ArrowArray* array,
                     int64_t i, struct sl_stats_key* key) {
  int64_t p = array->offset + i;
  const void* data = array->n_buffers > 1 ? array->buffers[1] : NULL;
  key->kind = SL_KEY_NONE;
  if (field->dictionary != NULL) {
    int64_t index = sl_int_value(field->type.id, data, p);
    if (array->dictionary != NULL && index >= 0 && index < array->dictionary->length) {
      sl_stats_key_of(field->dictionary, array->dictionary, index, key);
    }
    return;
  }
  switch (field->type.id) {
    case SL_TYPE_BOOL:
      key->kind = SL_KEY_I64;
      key->i = sl_bit_get(data, p);
      break;
    case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16: case SL_TYPE_UINT16:
    case SL_TYPE_INT32: case SL_TYPE_UINT32:
      key->kind = SL_KEY_I64;
      key->i = sl_int_value(field->type.id, data, p);
      break;
    case SL_TYPE_DATE32: case SL_TYPE_TIME32: case SL_TYPE_INTERVAL_MONTHS:
      key->kind = field->type.id == SL_TYPE_INTERVAL_MONTHS ? SL_KEY_NONE : SL_KEY_I64;
      key->i = ((const int32_t*)data)[p];
      break;
    case SL_TYPE_INT64: case SL_TYPE_DATE64: case SL_TYPE_TIME64: case SL_TYPE_TIMESTAMP:
    case SL_TYPE_DURATION:
      key->kind = SL_KEY_I64;
      key->i = ((const int64_t*)data)[p];
      break;
    case SL_TYPE_UINT64:
      key->kind = SL_KEY_U64;
      key->u = ((const uint64_t*)data)[p];
      break;
    case SL_TYPE_FLOAT: case SL_TYPE_DOUBLE: case SL_TYPE_HALF_FLOAT: {
      double v;
      if (field->type.id == SL_TYPE_DOUBLE) {
        v = ((const double*)data)[p];
      } else if (field->type.id == SL_TYPE_FLOAT) {
        v = ((const float*)data)[p];
      } else {  // order of half floats = order of their magnitudes with sign
        uint16_t h = ((const uint16_t*)data)[p];
        int exponent = (h >> 10) & 0x1f;
        if (exponent == 31 && (h & 0x3ff) != 0) return;  // NaN
        v = exponent == 31 ? INFINITY : (exponent == 0 ? ldexp(h & 0x3ff, -24)
                                                       : ldexp((h & 0x3ff) + 1024, exponent - 25));
        if (h & 0x8000) v = -v;
      }
      // NaN has no place in an order; min/max skip it, as pyarrow does.
      if (!isnan(v)) {
        key->kind = SL_KEY_F64;
        key->d = v;
      }
      break;
    }
    case SL_TYPE_STRING: case SL_TYPE_BINARY: {
      const int32_t* offsets = data;
      key->kind = SL_KEY_BYTES;
      key->n = (int64_t)offsets[p + 1] - offsets[p];
      key->bytes = key->n == 0 ? NULL : (const uint8_t*)array->buffers[2] + offsets[p];
      break;
    }
    case SL_TYPE_LARGE_STRING: case SL_TYPE_LARGE_BINARY: {
      const int64_t* offsets = data;
      key->kind = SL_KEY_BYTES;
      key->n = offsets[p + 1] - offsets[p];
      key->bytes = key->n == 0 ? NULL : (const uint8_t*)array->buffers[2] + offsets[p];
      break;
    }
    case SL_TYPE_FIXED_SIZE_BINARY:
      key->kind = SL_KEY_BYTES;
      key->n = field->type.byte_width;
      key->bytes = key->n == 0 ? NULL : (const uint8_t*)data + p * key->n;
      break;
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256: {
      int width = field->type.id == SL_TYPE_DECIMAL128 ? 16 : 32;
      const uint8_t* le = (const uint8_t*)data + p * width;
      key->kind = SL_KEY_DECIMAL;
      key->n = width;
      for (int b = 0; b < width; ++b) key->decimal[b] = le[width - 1 - b];
      key->decimal[0] ^= 0x80;
      break;
    }
    default:
      break;
  }
}

int sl_stats_type_has_order(const struct sl_text_field* field) {
  if (field->dictionary != NULL) return sl_stats_type_has_order(field->dictionary);
  switch (field->type.id) {
    case SL_TYPE_BOOL: case SL_TYPE_INT8: case SL_TYPE_UINT8: case SL_TYPE_INT16:
    case SL_TYPE_UINT16: case SL_TYPE_INT32: case SL_TYPE_UINT32: case SL_TYPE_DATE32:
    case SL_TYPE_TIME32: case SL_TYPE_INT64: case SL_TYPE_DATE64: case SL_TYPE_TIME64:
    case SL_TYPE_TIMESTAMP: case SL_TYPE_DURATION: case SL_TYPE_UINT64: case SL_TYPE_FLOAT:
    case SL_TYPE_DOUBLE: case SL_TYPE_HALF_FLOAT: case SL_TYPE_STRING: case SL_TYPE_BINARY:
    case SL_TYPE_LARGE_STRING: case SL_TYPE_LARGE_BINARY: case SL_TYPE_FIXED_SIZE_BINARY:
    case SL_TYPE_DECIMAL128: case SL_TYPE_DECIMAL256:
      return 1;
    default:
      return 0;
  }
}

int sl_stats_key_compare(const struct sl_stats_key* a, const struct sl_stats_key* b) {
  switch (a->kind) {
    case SL_KEY_I64: return (a->i > b->i) - (a->i < b->i);
    case SL_KEY_U64: return (a->u > b->u) - (a->u < b->u);
    case SL_KEY_F64: return (a->d > b->d) - (a->d < b->d);
    case SL_KEY_DECIMAL: return memcmp(a->decimal, b->decimal, (size_t)a->n);
    case SL_KEY_BYTES: {
      int64_t n = a->n < b->n ? a->n : b->n;
      int c = n > 0 ? memcmp(a->bytes, b->bytes, (size_t)n) : 0;
      return c != 0 ? c : (a->n > b->n) - (a->n < b->n);
    }
    default: return 0;
  }
}

/// Makes `dst` (a merged key) a copy of `src` whose bytes live in *storage.
int sl_stats_key_store(struct sl_stats_key* dst, const struct sl_stats_key* src,
                       uint8_t** storage, size_t* cap, const struct sluice_allocator* alloc) {
  *dst = *src;
  if (src->kind != SL_KEY_BYTES || src->n == 0) return 0;
  if ((size_t)src->n > *cap) {
    uint8_t* bigger = sl_alloc(alloc, (size_t)src->n);
    if (bigger == NULL) return ENOMEM;
    sl_free(alloc, *storage, *cap);
    *storage = bigger;
    *cap = (size_t)src->n;
  }
  memcpy(*storage, src->bytes, (size_t)src->n);
  dst->bytes = *storage;
  return 0;
}
