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
  key->truncated = 0;
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
    case SL_KEY_F64:  // -0 below +0, so that which one is met first does not matter
      if (a->d == b->d) return (signbit(b->d) != 0) - (signbit(a->d) != 0);
      return (a->d > b->d) - (a->d < b->d);
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

void sl_stats_key_cap(struct sl_stats_key* key, int utf8) {
  if (key->kind != SL_KEY_BYTES || key->n <= SL_STATS_BYTES_CAP) return;
  int64_t cut = SL_STATS_BYTES_CAP;
  // bytes[cut] exists (the value is longer): a continuation byte there means
  // the cut would split a character, which starts at most 3 bytes back (in
  // text that is not valid UTF-8, the bytes are cut where they are).
  int64_t back = cut;
  while (utf8 && back > cut - 3 && (key->bytes[back] & 0xC0) == 0x80) --back;
  if ((key->bytes[back] & 0xC0) != 0x80) cut = back;
  key->n = cut;
  key->truncated = 1;
}

int sl_stats_key_pick(const struct sl_stats_key* a, const struct sl_stats_key* b, int want_max,
                      int* truncated) {
  int take;
  if (a->kind != SL_KEY_BYTES || (!a->truncated && !b->truncated)) {
    int c = sl_stats_key_compare(b, a);
    take = want_max ? c > 0 : c < 0;  // ties keep a
    *truncated = take ? b->truncated : a->truncated;
    return take;
  }
  int64_t n = a->n < b->n ? a->n : b->n;
  int c = n > 0 ? memcmp(a->bytes, b->bytes, (size_t)n) : 0;
  if (c != 0) {  // a byte both keys hold decides, whatever follows
    take = want_max ? c < 0 : c > 0;
  } else if (a->n == b->n) {
    // Same bytes: an exact value is below every longer value starting so.
    *truncated = want_max ? a->truncated || b->truncated : a->truncated && b->truncated;
    return 0;
  } else {
    // One is a prefix of the other. If the shorter is truncated, both start
    // with it and it is the tightest bound known; if exact, it is the min.
    int b_shorter = b->n < a->n;
    int shorter_truncated = b_shorter ? b->truncated : a->truncated;
    take = shorter_truncated || !want_max ? b_shorter : !b_shorter;
  }
  *truncated = take ? b->truncated : a->truncated;
  return take;
}

/// Length of the UTF-8 sequence led by byte c (0 for a continuation or an
/// invalid lead byte).
static int utf8_lead_length(uint8_t c) {
  return c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
}

static int utf8_encode(uint32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = (uint8_t)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (uint8_t)(0xC0 | cp >> 6);
    out[1] = (uint8_t)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (uint8_t)(0xE0 | cp >> 12);
    out[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    out[2] = (uint8_t)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (uint8_t)(0xF0 | cp >> 18);
  out[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
  out[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
  out[3] = (uint8_t)(0x80 | (cp & 0x3F));
  return 4;
}

void sl_stats_bytes_above(const uint8_t* p, int64_t n, int utf8, uint8_t* out, int64_t* out_n) {
  *out_n = -1;
  if (!utf8) {
    while (n > 0 && p[n - 1] == 0xFF) --n;  // 0xFF carries into the byte before
    if (n == 0) return;
    memcpy(out, p, (size_t)n);
    out[n - 1]++;
    *out_n = n;
    return;
  }
  // UTF-8 orders bytes as code points: the prefix with its last code point
  // incremented is above everything that starts with the prefix.
  while (n > 0) {
    int64_t start = n - 1;
    while (start > 0 && n - start < 4 && (p[start] & 0xC0) == 0x80) --start;
    int len = utf8_lead_length(p[start]);
    if (len != n - start) return;  // not valid UTF-8: no bound we can spell
    uint32_t cp = len == 1 ? p[start] : (uint32_t)(p[start] & (0x7F >> len));
    for (int k = 1; k < len; ++k) cp = cp << 6 | (p[start + k] & 0x3F);
    if (cp < 0x10FFFF) {
      cp = cp + 1 == 0xD800 ? 0xE000 : cp + 1;  // surrogates are no characters
      memcpy(out, p, (size_t)start);
      *out_n = start + utf8_encode(cp, out + start);
      return;
    }
    n = start;  // U+10FFFF has no successor: carry into the character before
  }
}

int sl_stats_field_is_utf8(const struct sl_text_field* field) {
  while (field->dictionary != NULL) field = field->dictionary;
  return field->type.id == SL_TYPE_STRING || field->type.id == SL_TYPE_LARGE_STRING;
}

int sl_stats_bytes_string(const struct sl_text_field* field, const uint8_t* p, int64_t n,
                          char** out, int64_t* len) {
  struct sl_text text;
  sl_text_init(&text, NULL);
  int rc = sl_stats_field_is_utf8(field)
               ? sl_text_append(&text, n > 0 ? (const char*)p : "", (size_t)n)
               : sl_text_append_binary(field, p, n, &text);
  *out = rc == 0 ? sl_strndup(NULL, sl_text_cstr(&text), text.len) : NULL;
  *len = (int64_t)text.len;
  sl_text_reset(&text);
  return *out == NULL ? ENOMEM : 0;
}
