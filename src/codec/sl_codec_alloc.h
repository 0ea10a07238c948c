// Allocation callbacks for the compression libraries (zstd, lz4, zlib, bzip2,
// xz), so that their contexts go through the handle's allocator too. Those
// libraries free without a size; a 16-byte header in front of each block keeps
// the size sl_free needs (and keeps the block 16-byte aligned).
//
// `opaque` is always the `const struct sluice_allocator*` (NULL = default),
// passed as void*: use sl_codec_opaque() to strip the const.
#ifndef SL_CODEC_ALLOC_H
#define SL_CODEC_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

static inline void* sl_codec_opaque(const struct sluice_allocator* alloc) {
  return (void*)(uintptr_t)alloc;
}

/// zstd (ZSTD_customMem) and lz4 (LZ4F_CustomMem) allocation.
void* sl_codec_alloc(void* opaque, size_t size);
/// Every library's free callback (NULL-safe).
void sl_codec_free(void* opaque, void* ptr);
/// xz (lzma_allocator): count * size, overflow-checked.
void* sl_codec_alloc_n(void* opaque, size_t count, size_t size);
/// zlib (alloc_func: voidpf (voidpf, uInt, uInt)).
void* sl_codec_zlib_alloc(void* opaque, unsigned int count, unsigned int size);
/// bzip2 (bzalloc: void* (void*, int, int)); negative counts fail.
void* sl_codec_bzip2_alloc(void* opaque, int count, int size);

#endif
