// Block compression for the Avro writer (the inverse of avro_decompress).
#ifndef SL_AVRO_COMPRESS_H
#define SL_AVRO_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "avro_internal.h"

/// Compresses `n` bytes into `out` (grown as needed, contents replaced).
/// `level` < 0 = the codec's default.
int avro_compress(enum avro_codec codec, int level, const uint8_t* in, size_t n,
                  struct avro_buf* out, const struct sluice_allocator* alloc,
                  struct sluice_error* error);

#endif
