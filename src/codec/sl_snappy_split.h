// Snappy decompression into two places: the first bytes of the output to
// one buffer, the rest to another. libsnappy's C API writes one flat buffer;
// its C++ RawUncompressToIOVec scatters (copies that reach back across the
// seam included). A Parquet v1 page uses it to send its level bytes to
// scratch and its values straight into the output column.
#ifndef SL_SNAPPY_SPLIT_H
#define SL_SNAPPY_SPLIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Decompresses `src` (n bytes), which must decompress to exactly
/// head_len + tail_len bytes (the caller checked the length header), into
/// `head` then `tail`. 1 on success, 0 on corrupt data.
int sl_snappy_uncompress_split(const uint8_t* src, size_t n, uint8_t* head, size_t head_len,
                               uint8_t* tail, size_t tail_len);

#ifdef __cplusplus
}
#endif

#endif
