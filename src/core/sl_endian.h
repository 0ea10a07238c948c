// Integers in byte buffers at any alignment. Big-endian: Cassandra's
// protocol, TZif files, the Hadoop framing of Parquet's LZ4 (byte by byte;
// compilers turn these into one load or store and a byte swap). Little-endian
// 64-bit words: bitmaps and bit-packed runs read a word at a time.
#ifndef SL_ENDIAN_H
#define SL_ENDIAN_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define SL_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define SL_ALWAYS_INLINE inline
#endif

/// 8 bytes at p (all readable), little-endian.
static SL_ALWAYS_INLINE uint64_t sl_load_le64(const uint8_t* p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

/// v into p[0..8), least significant byte first.
static SL_ALWAYS_INLINE void sl_store_le64(uint8_t* p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(p, &v, 8);
}

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
