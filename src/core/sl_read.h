// Reading values out of Arrow buffers: a validity/boolean bit, a bitmap's
// nulls, and an integer of any width and sign (dictionary indexes, integer
// columns).
#ifndef SL_READ_H
#define SL_READ_H

#include <stdint.h>
#include <string.h>

#include "sl_type.h"

/// Bit `i` (LSB first, as Arrow lays out bitmaps).
static inline int sl_bit_get(const void* bits, int64_t i) {
  return (((const uint8_t*)bits)[i >> 3] >> (i & 7)) & 1;
}

/// Bits in [offset, offset + length) that are 0: a validity bitmap's nulls.
static inline int64_t sl_bitmap_count_unset(const uint8_t* bits, int64_t offset, int64_t length) {
  int64_t set = 0, i = offset, end = offset + length;
  for (; i < end && (i & 7); i++) set += sl_bit_get(bits, i);
  for (; i + 64 <= end; i += 64) {
    uint64_t w;
    memcpy(&w, bits + (i >> 3), 8);
    set += __builtin_popcountll(w);
  }
  for (; i < end; i++) set += sl_bit_get(bits, i);
  return length - set;
}

/// Element `i` of an integer buffer of type `id` (int8..uint64), widened to
/// int64 (uint64 above INT64_MAX wraps: callers that care check the type).
static inline int64_t sl_int_value(enum sl_type_id id, const void* data, int64_t i) {
  switch (id) {
    case SL_TYPE_INT8: return ((const int8_t*)data)[i];
    case SL_TYPE_UINT8: return ((const uint8_t*)data)[i];
    case SL_TYPE_INT16: return ((const int16_t*)data)[i];
    case SL_TYPE_UINT16: return ((const uint16_t*)data)[i];
    case SL_TYPE_INT32: return ((const int32_t*)data)[i];
    case SL_TYPE_UINT32: return ((const uint32_t*)data)[i];
    case SL_TYPE_UINT64: return (int64_t)((const uint64_t*)data)[i];
    default: return ((const int64_t*)data)[i];
  }
}

#endif
