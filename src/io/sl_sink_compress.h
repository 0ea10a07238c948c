// Whole-file compression of a sink's bytes (a .csv.gz, .csv.zst, .csv.bz2 or
// .csv.xz output), the writing half of sl_source_inflate.h: gzip through
// Intel ISA-L (level 1, several times faster than zlib's fastest), zstd
// through libzstd (level 3, its default, on all cores), bzip2 through libbz2
// (level 9), xz through liblzma (preset 1).
#ifndef SL_SINK_COMPRESS_H
#define SL_SINK_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"
#include "sl_compression.h"

struct sl_compressor;

/// Where compressed bytes go: 0 or an errno-style code with `error` set.
typedef int (*sl_compressed_out)(void* ctx, const uint8_t* data, size_t n,
                                 struct sluice_error* error);

/// A compressor of `kind` (not NONE) handing its output to `out(ctx, ...)`;
/// `name` is for messages.
int sl_compressor_open(enum sl_compression kind, const char* name,
                       const struct sluice_allocator* alloc, sl_compressed_out out, void* ctx,
                       struct sl_compressor** compressor, struct sluice_error* error);
/// Compresses n bytes (output flows as buffers fill).
int sl_compressor_write(struct sl_compressor* c, const uint8_t* data, size_t n,
                        struct sluice_error* error);
/// Ends the compressed stream (gzip trailer, zstd epilogue, bzip2 and xz
/// stream ends).
int sl_compressor_finish(struct sl_compressor* c, struct sluice_error* error);
/// Compressed bytes handed out so far.
int64_t sl_compressor_output_bytes(const struct sl_compressor* c);
void sl_compressor_free(struct sl_compressor* c);

#endif
