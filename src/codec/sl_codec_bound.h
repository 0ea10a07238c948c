// The most output a codec can make of a given number of compressed bytes, to
// refuse a declared uncompressed size (a Parquet page header, an Arrow IPC
// buffer's length prefix) before allocating it: a forged claim must not
// reserve memory the data cannot fill.
//
// Each ratio is the format's worst case, with margin:
// - snappy: a 3-byte copy element makes at most 64 bytes (21.3x);
// - deflate (gzip, zlib): at most 258 bytes from 2 bits (1032x);
// - lz4: each 0xFF length byte adds 255 bytes;
// - zstd: a 4-byte RLE block makes 128 KiB (32768x);
// - brotli: a meta-block of up to 16 MiB needs a header of 20 bits or more
//   (at most ~6.7 million x).
#ifndef SL_CODEC_BOUND_H
#define SL_CODEC_BOUND_H

#include <stdint.h>

#define SL_SNAPPY_MAX_RATIO 22
#define SL_DEFLATE_MAX_RATIO 1032
#define SL_LZ4_MAX_RATIO 256
#define SL_ZSTD_MAX_RATIO 65536
#define SL_BROTLI_MAX_RATIO ((int64_t)1 << 23)

/// 1 when `compressed` bytes of a codec that expands at most `ratio` times
/// can make `claimed` bytes (plus a little for frame headers and tiny
/// inputs).
static inline int sl_codec_claim_fits(int64_t compressed, int64_t claimed, int64_t ratio) {
  if (claimed <= 1024) return 1;
  if (compressed <= 0) return 0;
  return compressed > (INT64_MAX - 1024) / ratio || claimed <= compressed * ratio + 1024;
}

#endif
