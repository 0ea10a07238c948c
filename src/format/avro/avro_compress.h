// Block compression for the Avro writer (the inverse of sl_avro_decompress).
#ifndef SL_AVRO_COMPRESS_H
#define SL_AVRO_COMPRESS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "avro_internal.h"

/// The codec's default level (zstandard's negative levels are levels).
#define AVRO_LEVEL_DEFAULT INT_MIN

/// Compresses `n` bytes into `out` (grown as needed, contents replaced).
/// `level` is AVRO_LEVEL_DEFAULT or within the codec's range.
int sl_avro_compress(enum avro_codec codec, int level, const uint8_t* in, size_t n,
                  struct avro_buf* out, const struct sluice_allocator* alloc,
                  struct sluice_error* error);

#endif
