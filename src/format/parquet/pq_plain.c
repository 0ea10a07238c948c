// PLAIN decoding of BOOLEAN (bit-packed, LSB first) and BYTE_ARRAY (4-byte
// little-endian length + bytes). Fixed-width PLAIN values need no decoding:
// the reader copies them.
#include <string.h>

#include "pq_bits.h"
#include "pq_encoding.h"
#include "../../core/sl_error.h"

int sl_pq_plain_bool_decode(const uint8_t* data, int64_t size, int64_t n, uint8_t* out,
                         int64_t* consumed, struct sluice_error* error) {
  if (n < 0 || n > INT64_MAX - 7)
    return sl_error_set(error, EILSEQ, "PLAIN BOOLEAN: invalid value count %lld", (long long)n);
  int64_t need = n / 8 + (n % 8 != 0);
  if (size < need || (data == NULL && need > 0))
    return sl_error_set(error, EILSEQ, "PLAIN BOOLEAN: %lld values need %lld bytes, have %lld",
                        (long long)n, (long long)need, (long long)size);
  int64_t whole = n / 8;
  for (int64_t b = 0; b < whole; ++b) {
    uint8_t byte = data[b];
    uint8_t* o = out + b * 8;
    for (int k = 0; k < 8; ++k) o[k] = (uint8_t)((byte >> k) & 1);
  }
  for (int64_t i = whole * 8; i < n; ++i) out[i] = (uint8_t)((data[i >> 3] >> (i & 7)) & 1);
  *consumed = need;
  return 0;
}

int sl_pq_plain_byte_array_decode(const uint8_t* data, int64_t size, int64_t n,
                               const uint8_t** ptrs, int32_t* lens, int64_t* consumed,
                               struct sluice_error* error) {
  if (n < 0) return sl_error_set(error, EILSEQ, "PLAIN BYTE_ARRAY: negative value count");
  if (size < 0 || (data == NULL && size > 0))
    return sl_error_set(error, EILSEQ, "PLAIN BYTE_ARRAY: invalid buffer");
  int64_t pos = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (size - pos < 4)
      return sl_error_set(error, EILSEQ,
                          "PLAIN BYTE_ARRAY: length of value %lld truncated at byte %lld",
                          (long long)i, (long long)pos);
    uint32_t len = pq_load_le32(data + pos);
    pos += 4;
    if (len > INT32_MAX || (int64_t)len > size - pos)
      return sl_error_set(error, EILSEQ,
                          "PLAIN BYTE_ARRAY: value %lld at byte %lld has length %u but %lld bytes remain",
                          (long long)i, (long long)(pos - 4), len, (long long)(size - pos));
    ptrs[i] = data + pos;
    lens[i] = (int32_t)len;
    pos += len;
  }
  *consumed = pos;
  return 0;
}
