// BYTE_STREAM_SPLIT: byte k of value i is at data[k * n + i]. Widths 4 and 8
// (FLOAT/DOUBLE/INT32/INT64) get fixed-width loops the compiler unrolls.
#include <string.h>

#include "pq_bits.h"
#include "pq_encoding.h"
#include "../../core/sl_error.h"

static SL_ALWAYS_INLINE void bss_gather(const uint8_t* data, int64_t n, const int width, uint8_t* out) {
  for (int64_t i = 0; i < n; ++i)
    for (int k = 0; k < width; ++k) out[i * width + k] = data[k * n + i];
}

int sl_pq_byte_stream_split_decode(const uint8_t* data, int64_t size, int64_t n, int width,
                                uint8_t* out, struct sluice_error* error) {
  if (width <= 0 || n < 0)
    return sl_error_set(error, EILSEQ, "BYTE_STREAM_SPLIT: invalid width %d or count %lld", width,
                        (long long)n);
  if (n > INT64_MAX / width || size < n * width || (data == NULL && n > 0))
    return sl_error_set(error, EILSEQ,
                        "BYTE_STREAM_SPLIT: %lld values of %d bytes do not fit in %lld bytes",
                        (long long)n, width, (long long)size);
  switch (width) {
    case 4: bss_gather(data, n, 4, out); break;
    case 8: bss_gather(data, n, 8, out); break;
    case 2: bss_gather(data, n, 2, out); break;
    default: bss_gather(data, n, width, out); break;
  }
  return 0;
}
