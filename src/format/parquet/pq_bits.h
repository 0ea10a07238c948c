// Small byte-level helpers shared by the Parquet encoding decoders (private to
// pq_rle.c, pq_delta.c, pq_plain.c): unaligned little-endian loads and
// ULEB128 / zigzag varints with overflow checks.
#ifndef PQ_BITS_H
#define PQ_BITS_H

#include <stdint.h>
#include <string.h>

#include "../../core/sl_endian.h"

/// Up to 8 bytes at p, of which only `avail` (may be <= 0) are readable; the
/// missing high bytes read as zero.
static inline uint64_t pq_load_le64_bounded(const uint8_t* p, int64_t avail) {
  if (avail >= 8) return sl_load_le64(p);
  uint64_t v = 0;
  for (int64_t i = 0; i < avail; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static inline uint32_t pq_load_le32(const uint8_t* p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/// ULEB128 of at most `max_bytes` bytes (5 for 32-bit, 10 for 64-bit values)
/// at data[*pos]. Returns 0, 1 (truncated) or 2 (too long / overflows 64 bits).
static inline int pq_read_uvarint(const uint8_t* data, int64_t size, int64_t* pos, int max_bytes,
                                  uint64_t* out) {
  uint64_t v = 0;
  int64_t p = *pos;
  for (int i = 0; i < max_bytes; ++i) {
    if (p >= size) return 1;
    uint8_t b = data[p++];
    if (i == 9 && b > 1) return 2;  // bits beyond 64
    v |= (uint64_t)(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *out = v;
      *pos = p;
      return 0;
    }
  }
  return 2;
}

static inline int64_t pq_zigzag_decode(uint64_t v) {
  return (int64_t)((v >> 1) ^ (~(v & 1) + 1));
}

#endif
