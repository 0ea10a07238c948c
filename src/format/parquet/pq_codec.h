// Parquet page compression codecs over Debian's libraries: snappy (C API),
// zlib (gzip, several concatenated members allowed), brotli, zstd, lz4 (the
// Hadoop framing of codec LZ4, with a fallback to raw LZ4 blocks, and
// LZ4_RAW). LZO is not supported (a clear error).
//
// A pq_codec_ctx holds the per-thread library contexts (zstd, zlib, brotli
// state) created on first use, all through the sluice allocator
// (src/codec/sl_codec_alloc.h). One per split / writer thread; not
// thread-safe.
#ifndef PQ_CODEC_H
#define PQ_CODEC_H

#include <limits.h>
#include <stdint.h>

#include "sluice.h"
#include "pq_meta.h"
#include "../../core/sl_buffer.h"

struct pq_codec_ctx;

int sl_pq_codec_ctx_new(const struct sluice_allocator* alloc, struct pq_codec_ctx** out,
                     struct sluice_error* error);
void sl_pq_codec_ctx_free(struct pq_codec_ctx* ctx);

/// Decompresses `src` (n bytes) into exactly `dst_size` bytes at `dst` (the
/// page header's uncompressed size). EINVAL, naming the codec, when the data
/// is corrupt or decompresses to a different size; ENOTSUP for LZO and
/// unknown codec numbers. PQ_CODEC_UNCOMPRESSED copies (callers avoid it).
int sl_pq_decompress(struct pq_codec_ctx* ctx, enum pq_codec codec, const uint8_t* src,
                  int64_t n, uint8_t* dst, int64_t dst_size, struct sluice_error* error);

/// Checks, before the caller allocates `dst_size` bytes for it, that the
/// `n` compressed bytes at `src` can decompress to that many: the snappy
/// length header must say it, zstd frames must be able to make it, and no
/// codec expands more than its worst case (src/codec/sl_codec_bound.h).
/// EILSEQ naming the codec and both sizes otherwise.
int sl_pq_decompress_check(enum pq_codec codec, const uint8_t* src, int64_t n, int64_t dst_size,
                           struct sluice_error* error);

/// SNAPPY into two places: the first `head_size` bytes of the page to
/// `head`, the other `tail_size` to `tail` (errors as sl_pq_decompress).
int sl_pq_decompress_snappy_split(const uint8_t* src, int64_t n, uint8_t* head, int64_t head_size,
                               uint8_t* tail, int64_t tail_size, struct sluice_error* error);

/// A compression level that means "the codec's default".
#define PQ_LEVEL_DEFAULT INT_MIN

/// Compresses `src` and appends the result to `out`. `level` is
/// PQ_LEVEL_DEFAULT or one sl_pq_codec_level accepted. Writers support UNCOMPRESSED, SNAPPY, GZIP, BROTLI, ZSTD,
/// LZ4_RAW (ENOTSUP for the others).
/// Checks `*level` (not PQ_LEVEL_DEFAULT) for `codec` and brings it into
/// the codec's range where pyarrow takes a level past it (zstd past 22 or
/// below its fastest, brotli past 11); EINVAL names the codec's range.
int sl_pq_codec_level(enum pq_codec codec, int* level, struct sluice_error* error);

int sl_pq_compress(struct pq_codec_ctx* ctx, enum pq_codec codec, int level, const uint8_t* src,
                int64_t n, struct sl_buffer* out, struct sluice_error* error);

/// "snappy" -> PQ_CODEC_SNAPPY, ..., "none"/"uncompressed" -> UNCOMPRESSED,
/// "lz4" / "lz4_raw" -> LZ4_RAW (what pyarrow writes for "lz4"). EINVAL if
/// unknown.
int sl_pq_codec_from_name(const char* name, enum pq_codec* out, struct sluice_error* error);
/// "SNAPPY", "GZIP", ... for messages.
const char* sl_pq_codec_name(enum pq_codec codec);

#endif
