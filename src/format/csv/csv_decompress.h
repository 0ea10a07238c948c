// Whole-input decompression for .csv.gz / .csv.zst (see csv_decompress.c).
#ifndef SL_CSV_DECOMPRESS_H
#define SL_CSV_DECOMPRESS_H

#include <stdint.h>

#include "sluice.h"

struct csv_inflated {
  uint8_t* data;  ///< sl_alloc_buffer'd, cap bytes
  int64_t size, cap;
  int decoded;    ///< 1 when the input was compressed and data holds it inflated
};

/// If `in` starts with gzip or zstd magic, inflates it into `out` (decoded=1);
/// otherwise leaves out->decoded = 0 and returns 0.
int csv_maybe_decompress(const uint8_t* in, int64_t n, const struct sluice_allocator* alloc,
                         struct csv_inflated* out, const char* name, struct sluice_error* error);

#endif
