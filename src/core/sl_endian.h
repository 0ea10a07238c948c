// Big-endian integers in byte buffers: Cassandra's protocol, TZif files,
// the Hadoop framing of Parquet's LZ4. Byte by byte, so that any alignment
// works; compilers turn these into one load or store and a byte swap.
#ifndef SL_ENDIAN_H
#define SL_ENDIAN_H

#include <stdint.h>

/// The unsigned big-endian number in p[0..n), 1 <= n <= 8.
static inline uint64_t sl_load_be(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v = v << 8 | p[i];
  return v;
}

static inline uint32_t sl_load_be32(const uint8_t* p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/// The low n bytes of v into p[0..n), most significant first, 1 <= n <= 8.
static inline void sl_store_be(uint8_t* p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

#endif
