// Block compression for the Avro writer: the inverse of avro_codec.c.
// deflate is raw RFC 1951: by default ISA-L's level 2, which compresses 5x
// (W1 CSV text) to 15x (W2's random doubles) faster than libdeflate's level 6
// for blocks 2% (doubles) to 10% (text) larger, about zlib level 6's size; an
// explicit level=N is libdeflate's level N (0..12), for the smaller file. snappy blocks are followed by the
// big-endian CRC32 of the uncompressed bytes; zstandard is one zstd frame;
// bzip2 and xz are whole streams. zstd, bzip2 and xz allocate through the
// sluice allocator; libdeflate's compressor comes from malloc (libdeflate 1.14
// has no allocator hook with a context).
#include "avro_compress.h"

#include <bzlib.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <limits.h>
#include <lzma.h>
#include <snappy-c.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createCCtx_advanced: our allocator
#include <zstd.h>
#include <zstd_errors.h>

#include "codec/sl_codec_alloc.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"

static int reserve(struct avro_buf* out, size_t want, const struct sluice_allocator* alloc,
                   struct sluice_error* error) {
  if (want <= out->cap) return 0;
  size_t cap = out->cap ? out->cap : 64 << 10;
  while (cap < want) {
    if (cap > SIZE_MAX / 2) return sl_error_set(error, EFBIG, "avro: block too large");
    cap *= 2;
  }
  uint8_t* p = out->data ? sl_realloc_buffer(alloc, out->data, out->cap, cap)
                         : sl_alloc_buffer(alloc, cap);
  if (p == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory (%zu bytes) compressing a block", cap);
  out->data = p;
  out->cap = cap;
  return 0;
}

/// ISA-L level 2, one shot. Its output is at most the input plus stored-block
/// headers (5 bytes per 64 KiB), so the room reserved always suffices.
static int isal_deflate_block(const uint8_t* in, size_t n, struct avro_buf* out,
                              const struct sluice_allocator* alloc, struct sluice_error* error) {
  if (n > UINT32_MAX / 2) return sl_error_set(error, EFBIG, "avro: deflate block of %zu bytes is too large", n);
  SL_RETURN_NOT_OK(reserve(out, n + n / 64 + 1024, alloc, error));
  struct isal_zstream* z = sl_alloc(alloc, sizeof *z);
  uint8_t* level_buf = sl_alloc(alloc, ISAL_DEF_LVL2_DEFAULT);
  int rc = 0;
  if (z == NULL || level_buf == NULL) {
    rc = sl_error_set(error, ENOMEM, "avro: out of memory for deflate");
  } else {
    isal_deflate_stateless_init(z);
    z->level = 2;
    z->level_buf = level_buf;
    z->level_buf_size = ISAL_DEF_LVL2_DEFAULT;
    z->next_in = (uint8_t*)(uintptr_t)in;
    z->avail_in = (uint32_t)n;
    z->next_out = out->data;
    z->avail_out = (uint32_t)(out->cap > UINT32_MAX ? UINT32_MAX : out->cap);
    z->flush = NO_FLUSH;
    z->end_of_stream = 1;
    int r = isal_deflate_stateless(z);
    if (r != COMP_OK) rc = sl_error_set(error, EIO, "avro: deflate (ISA-L) failed (%d)", r);
    else out->size = z->total_out;
  }
  sl_free(alloc, level_buf, ISAL_DEF_LVL2_DEFAULT);
  sl_free(alloc, z, sizeof *z);
  return rc;
}

static int libdeflate_block(int level, const uint8_t* in, size_t n, struct avro_buf* out,
                            const struct sluice_allocator* alloc, struct sluice_error* error) {
  if (level > 12) return sl_error_set(error, EINVAL, "avro: deflate level %d is not in 0..12", level);
  struct libdeflate_compressor* c = libdeflate_alloc_compressor(level);
  if (c == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory for deflate (level %d)", level);
  size_t bound = libdeflate_deflate_compress_bound(c, n);
  int rc = reserve(out, bound, alloc, error);
  if (rc == 0) {
    size_t got = libdeflate_deflate_compress(c, in, n, out->data, out->cap);
    if (got == 0) rc = sl_error_set(error, EIO, "avro: deflate failed");
    out->size = got;
  }
  libdeflate_free_compressor(c);
  return rc;
}

int sl_avro_compress(enum avro_codec codec, int level, const uint8_t* in, size_t n,
                  struct avro_buf* out, const struct sluice_allocator* alloc,
                  struct sluice_error* error) {
  out->size = 0;
  switch (codec) {
    case AVRO_CODEC_NULL:
      SL_RETURN_NOT_OK(reserve(out, n, alloc, error));
      if (n > 0) memcpy(out->data, in, n);
      out->size = n;
      return 0;
    case AVRO_CODEC_DEFLATE:
      return level < 0 ? isal_deflate_block(in, n, out, alloc, error)
                       : libdeflate_block(level, in, n, out, alloc, error);
    case AVRO_CODEC_SNAPPY: {
      size_t bound = snappy_max_compressed_length(n);
      SL_RETURN_NOT_OK(reserve(out, bound + 4, alloc, error));
      size_t got = out->cap - 4;
      if (snappy_compress((const char*)in, n, (char*)out->data, &got) != SNAPPY_OK) {
        return sl_error_set(error, EIO, "avro: snappy compression failed");
      }
      uint32_t crc = (uint32_t)libdeflate_crc32(0, in, n);
      out->data[got] = (uint8_t)(crc >> 24);
      out->data[got + 1] = (uint8_t)(crc >> 16);
      out->data[got + 2] = (uint8_t)(crc >> 8);
      out->data[got + 3] = (uint8_t)crc;
      out->size = got + 4;
      return 0;
    }
    case AVRO_CODEC_ZSTD: {
      ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(alloc)};
      ZSTD_CCtx* cctx = ZSTD_createCCtx_advanced(mem);
      if (cctx == NULL) return sl_error_set(error, ENOMEM, "avro: out of memory for zstd");
      int rc = reserve(out, ZSTD_compressBound(n), alloc, error);
      if (rc == 0) {
        size_t got = ZSTD_compressCCtx(cctx, out->data, out->cap, in, n, level == AVRO_LEVEL_DEFAULT ? 3 : level);
        if (ZSTD_isError(got))
          rc = sl_error_set(error, ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation ? ENOMEM : EIO,
                            "avro: zstd: %s", ZSTD_getErrorName(got));
        else out->size = got;
      }
      ZSTD_freeCCtx(cctx);
      return rc;
    }
    case AVRO_CODEC_BZIP2: {
      if (n > UINT_MAX / 2) return sl_error_set(error, EFBIG, "avro: block too large for bzip2");
      SL_RETURN_NOT_OK(reserve(out, n + n / 100 + 600, alloc, error));
      bz_stream s;
      memset(&s, 0, sizeof s);
      s.bzalloc = sl_codec_bzip2_alloc;
      s.bzfree = sl_codec_free;
      s.opaque = (void*)(uintptr_t)alloc;
      int lv = level < 1 || level > 9 ? 9 : level;
      if (BZ2_bzCompressInit(&s, lv, 0, 0) != BZ_OK) return sl_error_set(error, ENOMEM, "avro: bzip2 init failed");
      s.next_in = (char*)(uintptr_t)in;
      s.avail_in = (unsigned)n;
      s.next_out = (char*)out->data;
      s.avail_out = (unsigned)(out->cap > UINT_MAX ? UINT_MAX : out->cap);
      int r = BZ2_bzCompress(&s, BZ_FINISH);
      int rc = 0;
      if (r != BZ_STREAM_END) rc = sl_error_set(error, EIO, "avro: bzip2 compression failed (%d)", r);
      else out->size = (size_t)((char*)s.next_out - (char*)out->data);
      BZ2_bzCompressEnd(&s);
      return rc;
    }
    case AVRO_CODEC_XZ: {
      lzma_allocator la = {sl_codec_alloc_n, sl_codec_free, sl_codec_opaque(alloc)};
      SL_RETURN_NOT_OK(reserve(out, lzma_stream_buffer_bound(n), alloc, error));
      size_t pos = 0;
      lzma_ret r = lzma_easy_buffer_encode((uint32_t)(level < 0 || level > 9 ? 6 : level),
                                           LZMA_CHECK_CRC64, &la, in, n, out->data, &pos, out->cap);
      if (r != LZMA_OK)
        return sl_error_set(error, r == LZMA_MEM_ERROR ? ENOMEM : EIO, "avro: xz compression failed (%d)", (int)r);
      out->size = pos;
      return 0;
    }
    case AVRO_CODEC_LZMA: {  // avro-c's codec: a raw LZMA2 stream (see avro_internal.h)
      lzma_allocator la = {sl_codec_alloc_n, sl_codec_free, sl_codec_opaque(alloc)};
      lzma_options_lzma opt;
      if (sl_avro_lzma_options(level, &opt) != 0) return sl_error_set(error, EINVAL, "avro: bad lzma level %d", level);
      lzma_filter filters[2] = {{LZMA_FILTER_LZMA2, &opt}, {LZMA_VLI_UNKNOWN, NULL}};
      SL_RETURN_NOT_OK(reserve(out, lzma_stream_buffer_bound(n), alloc, error));
      size_t pos = 0;
      lzma_ret r = lzma_raw_buffer_encode(filters, &la, in, n, out->data, &pos, out->cap);
      if (r != LZMA_OK)
        return sl_error_set(error, r == LZMA_MEM_ERROR ? ENOMEM : EIO, "avro: lzma compression failed (%d)", (int)r);
      out->size = pos;
      return 0;
    }
  }
  return sl_error_set(error, ENOTSUP, "avro: unknown codec");
}
