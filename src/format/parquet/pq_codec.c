// Parquet page codecs over Debian's libraries. Pages carry their exact
// uncompressed size, so every decompressor writes straight into the caller's
// buffer and must produce exactly that many bytes.
//
// Allocation: zstd, zlib and the brotli decoder allocate through the sluice
// allocator (src/codec/sl_codec_alloc.h); the zstd contexts and the gzip
// inflate state (src/codec/sl_gzip.h) live in the pq_codec_ctx and are reused
// from page to page.
// Two exceptions use malloc: libdeflate's compressor (gzip writing; 1.14 has
// no allocator hook with a context) and the brotli encoder (libbrotlienc
// exits the process when its allocator fails). snappy and LZ4 block calls
// allocate nothing.
#include "pq_codec.h"

#include <brotli/decode.h>
#include <brotli/encode.h>
#include <libdeflate.h>
#include <limits.h>
#include <lz4.h>
#include <lz4hc.h>
#define LZ4F_STATIC_LINKING_ONLY  // LZ4F_createDecompressionContext_advanced
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdbool.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createDCtx_advanced: our allocator
#include <zstd.h>
#include <zstd_errors.h>

#include "../../codec/sl_codec_alloc.h"
#include "../../codec/sl_codec_bound.h"
#include "../../codec/sl_gzip.h"
#include "../../codec/sl_snappy_split.h"
#include "../../core/sl_alloc.h"
#include "../../core/sl_endian.h"
#include "../../core/sl_error.h"

// Page sizes are Thrift i32 fields, and LZ4 / zlib take int / uInt lengths.
#define PQ_MAX_PAGE ((int64_t)INT32_MAX)

// Defaults (PQ_LEVEL_DEFAULT):
// - zstd 1: what pyarrow writes by default; about snappy's speed with a
//   clearly better ratio (level 3, zstd's own default, is ~1.5x slower to
//   write for a few percent).
// - gzip 6: zlib's and libdeflate's usual balance (pyarrow's 9 is several
//   times slower for ~1% smaller pages).
// - brotli 5: brotli's knee (quality >= 8 is an order of magnitude slower).
#define PQ_ZSTD_DEFAULT_LEVEL 1
#define PQ_GZIP_DEFAULT_LEVEL 6
#define PQ_BROTLI_DEFAULT_LEVEL 5

struct pq_codec_ctx {
  const struct sluice_allocator* alloc;
  ZSTD_DCtx* zstd_d;
  ZSTD_CCtx* zstd_c;
  LZ4F_dctx* lz4_frame;
  struct sl_gzip inflate;
  struct libdeflate_decompressor* gzip_d;  ///< gzip pages' fast path (made on first use)
  struct libdeflate_compressor* gzip_c;
  int gzip_level;
};

int sl_pq_codec_ctx_new(const struct sluice_allocator* alloc, struct pq_codec_ctx** out,
                     struct sluice_error* error) {
  struct pq_codec_ctx* ctx = sl_calloc(alloc, 1, sizeof *ctx);
  if (ctx == NULL) return sl_error_set(error, ENOMEM, "out of memory for a Parquet codec context");
  ctx->alloc = alloc;
  *out = ctx;
  return 0;
}

void sl_pq_codec_ctx_free(struct pq_codec_ctx* ctx) {
  if (ctx == NULL) return;
  ZSTD_freeDCtx(ctx->zstd_d);
  ZSTD_freeCCtx(ctx->zstd_c);
  if (ctx->lz4_frame) LZ4F_freeDecompressionContext(ctx->lz4_frame);
  sl_gzip_end(&ctx->inflate);
  if (ctx->gzip_d) libdeflate_free_decompressor(ctx->gzip_d);
  if (ctx->gzip_c) libdeflate_free_compressor(ctx->gzip_c);
  sl_free(ctx->alloc, ctx, sizeof *ctx);
}

const char* sl_pq_codec_name(enum pq_codec codec) {
  switch (codec) {
    case PQ_CODEC_UNCOMPRESSED: return "UNCOMPRESSED";
    case PQ_CODEC_SNAPPY: return "SNAPPY";
    case PQ_CODEC_GZIP: return "GZIP";
    case PQ_CODEC_LZO: return "LZO";
    case PQ_CODEC_BROTLI: return "BROTLI";
    case PQ_CODEC_LZ4: return "LZ4";
    case PQ_CODEC_ZSTD: return "ZSTD";
    case PQ_CODEC_LZ4_RAW: return "LZ4_RAW";
  }
  return "unknown codec";
}

static bool name_equal(const char* a, const char* b) {
  for (; *a && *b; ++a, ++b) {
    char ca = *a >= 'A' && *a <= 'Z' ? (char)(*a - 'A' + 'a') : *a;
    if (ca != *b) return false;
  }
  return *a == *b;
}

int sl_pq_codec_from_name(const char* name, enum pq_codec* out, struct sluice_error* error) {
  static const struct {
    const char* name;
    enum pq_codec codec;
  } k_names[] = {{"none", PQ_CODEC_UNCOMPRESSED}, {"uncompressed", PQ_CODEC_UNCOMPRESSED},
                 {"snappy", PQ_CODEC_SNAPPY},     {"gzip", PQ_CODEC_GZIP},
                 {"lzo", PQ_CODEC_LZO},           {"brotli", PQ_CODEC_BROTLI},
                 {"zstd", PQ_CODEC_ZSTD},         {"lz4", PQ_CODEC_LZ4_RAW},
                 {"lz4_raw", PQ_CODEC_LZ4_RAW}};
  if (name != NULL) {
    for (size_t i = 0; i < sizeof k_names / sizeof k_names[0]; ++i)
      if (name_equal(name, k_names[i].name)) {
        *out = k_names[i].codec;
        return 0;
      }
  }
  return sl_error_set(error, EINVAL,
                      "unknown Parquet compression '%.64s' (none, snappy, gzip, brotli, zstd, lz4, lz4_raw)",
                      name ? name : "(null)");
}

static int size_mismatch(struct sluice_error* error, const char* codec, const char* how,
                         int64_t dst_size) {
  return sl_error_set(error, EILSEQ, "%s: page %s (header says %lld uncompressed bytes)", codec,
                      how, (long long)dst_size);
}

/* ---- decompression ------------------------------------------------------------ */

/// The snappy length header must say `dst_size`.
static int snappy_check_length(const uint8_t* src, int64_t n, int64_t dst_size,
                               struct sluice_error* error) {
  size_t len;
  if (snappy_uncompressed_length((const char*)src, (size_t)n, &len) != SNAPPY_OK)
    return sl_error_set(error, EILSEQ, "SNAPPY: corrupt length header");
  if (len != (size_t)dst_size) {
    return sl_error_set(error, EILSEQ, "SNAPPY: page decompresses to %zu bytes, header says %lld",
                        len, (long long)dst_size);
  }
  return 0;
}

static int snappy_page(const uint8_t* src, int64_t n, uint8_t* dst, int64_t dst_size,
                       struct sluice_error* error) {
  int rc = snappy_check_length(src, n, dst_size, error);
  if (rc != 0) return rc;
  size_t len = (size_t)dst_size;
  if (snappy_uncompress((const char*)src, (size_t)n, (char*)dst, &len) != SNAPPY_OK ||
      len != (size_t)dst_size)
    return sl_error_set(error, EILSEQ, "SNAPPY: corrupt data");
  return 0;
}

/// The common case, gzip members that fill the page exactly, by libdeflate:
/// whole buffers at about twice zlib's streaming speed (a gzip page is known
/// whole, with its decompressed size). 1 when the page is decoded; 0 when
/// anything is off (zlib framing, a size that differs, corrupt data), and
/// the zlib path decodes or reports it.
static int gzip_page_whole(struct pq_codec_ctx* ctx, const uint8_t* src, int64_t n, uint8_t* dst,
                           int64_t dst_size) {
  if (n < 2 || src[0] != 0x1f || src[1] != 0x8b) return 0;
  // libdeflate takes no allocator (1.14): a few KiB of tables from malloc,
  // kept for the context's life.
  if (ctx->gzip_d == NULL && (ctx->gzip_d = libdeflate_alloc_decompressor()) == NULL) return 0;
  size_t in_at = 0, out_at = 0;
  while (in_at < (size_t)n) {
    size_t used = 0, got = 0;
    if (libdeflate_gzip_decompress_ex(ctx->gzip_d, src + in_at, (size_t)n - in_at, dst + out_at,
                                      (size_t)dst_size - out_at, &used,
                                      &got) != LIBDEFLATE_SUCCESS) {
      return 0;
    }
    in_at += used;
    out_at += got;
  }
  return out_at == (size_t)dst_size;
}

/// gzip (or zlib), several members allowed back to back.
static int gzip_page(struct pq_codec_ctx* ctx, const uint8_t* src, int64_t n, uint8_t* dst,
                     int64_t dst_size, struct sluice_error* error) {
  if (gzip_page_whole(ctx, src, n, dst, dst_size)) return 0;
  int zr;
  int rc = sl_gzip_start(&ctx->inflate, ctx->alloc, SL_GZIP_OR_ZLIB, &zr);
  if (rc != 0) return sl_error_set(error, rc, "GZIP: cannot start inflate (%d)", zr);
  size_t used, made;
  enum sl_gzip_status st =
      sl_gzip_inflate(&ctx->inflate, src, (size_t)n, &used, dst, (size_t)dst_size, &made);
  if (st == SL_GZIP_OUT_FULL) {
    // The page is full: one spare byte shows whether more would follow.
    uint8_t probe;
    size_t more_used, more;
    st = sl_gzip_inflate(&ctx->inflate, src + used, (size_t)n - used, &more_used, &probe, 1, &more);
    if (more != 0) return size_mismatch(error, "GZIP", "decompresses to more bytes", dst_size);
  }
  switch (st) {
    case SL_GZIP_END:
      if ((int64_t)made != dst_size)
        return sl_error_set(error, EILSEQ, "GZIP: page decompresses to %lld bytes, header says %lld",
                            (long long)made, (long long)dst_size);
      return 0;
    case SL_GZIP_TRUNCATED:
      return sl_error_set(error, EILSEQ, "GZIP: truncated data (header says %lld uncompressed bytes)",
                          (long long)dst_size);
    case SL_GZIP_NOMEM: return sl_error_set(error, ENOMEM, "GZIP: out of memory");
    default:
      return sl_error_set(error, EILSEQ, "GZIP: corrupt data (%s)", sl_gzip_message(&ctx->inflate));
  }
}

static int brotli_page(struct pq_codec_ctx* ctx, const uint8_t* src, int64_t n, uint8_t* dst,
                       int64_t dst_size, struct sluice_error* error) {
  BrotliDecoderState* s =
      BrotliDecoderCreateInstance(sl_codec_alloc, sl_codec_free, sl_codec_opaque(ctx->alloc));
  if (s == NULL) return sl_error_set(error, ENOMEM, "BROTLI: out of memory for a decoder");
  size_t avail_in = (size_t)n, avail_out = (size_t)dst_size;
  const uint8_t* next_in = src;
  uint8_t* next_out = dst;
  BrotliDecoderResult r =
      BrotliDecoderDecompressStream(s, &avail_in, &next_in, &avail_out, &next_out, NULL);
  int rc = 0;
  if (r == BROTLI_DECODER_RESULT_SUCCESS) {
    if (avail_out != 0)
      rc = sl_error_set(error, EILSEQ, "BROTLI: page decompresses to %lld bytes, header says %lld",
                        (long long)(dst_size - (int64_t)avail_out), (long long)dst_size);
    else if (avail_in != 0)
      rc = sl_error_set(error, EILSEQ, "BROTLI: %zu bytes after the end of the stream", avail_in);
  } else if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT) {
    rc = size_mismatch(error, "BROTLI", "decompresses to more bytes", dst_size);
  } else if (r == BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT) {
    rc = sl_error_set(error, EILSEQ, "BROTLI: truncated data");
  } else {
    BrotliDecoderErrorCode code = BrotliDecoderGetErrorCode(s);
    rc = sl_error_set(error, code <= BROTLI_DECODER_ERROR_ALLOC_CONTEXT_MODES &&
                                  code >= BROTLI_DECODER_ERROR_ALLOC_BLOCK_TYPE_TREES
                              ? ENOMEM
                              : EILSEQ,
                      "BROTLI: %s", BrotliDecoderErrorString(code));
  }
  BrotliDecoderDestroyInstance(s);
  return rc;
}

static int zstd_page(struct pq_codec_ctx* ctx, const uint8_t* src, int64_t n, uint8_t* dst,
                     int64_t dst_size, struct sluice_error* error) {
  if (ctx->zstd_d == NULL) {
    ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(ctx->alloc)};
    ctx->zstd_d = ZSTD_createDCtx_advanced(mem);
    if (ctx->zstd_d == NULL) return sl_error_set(error, ENOMEM, "ZSTD: out of memory for a context");
  }
  size_t got = ZSTD_decompressDCtx(ctx->zstd_d, dst, (size_t)dst_size, src, (size_t)n);
  if (ZSTD_isError(got)) {
    if (ZSTD_getErrorCode(got) == ZSTD_error_dstSize_tooSmall)
      return size_mismatch(error, "ZSTD", "decompresses to more bytes", dst_size);
    if (ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation)
      return sl_error_set(error, ENOMEM, "ZSTD: out of memory");
    return sl_error_set(error, EILSEQ, "ZSTD: %s", ZSTD_getErrorName(got));
  }
  if (got != (size_t)dst_size)
    return sl_error_set(error, EILSEQ, "ZSTD: page decompresses to %zu bytes, header says %lld", got,
                        (long long)dst_size);
  return 0;
}

/// The Hadoop framing of codec LZ4: repeated (big-endian u32 uncompressed
/// size, u32 compressed size, LZ4 block). Returns false when the input is
/// not exactly that (the caller then tries a raw block), as Arrow does.
static bool lz4_hadoop(const uint8_t* src, int64_t n, uint8_t* dst, int64_t dst_size) {
  int64_t in = 0, out = 0;
  while (n - in >= 8) {
    uint32_t raw = sl_load_be32(src + in), packed = sl_load_be32(src + in + 4);
    in += 8;
    if (packed > n - in || raw > dst_size - out || packed > INT_MAX || raw > INT_MAX) return false;
    int got = LZ4_decompress_safe((const char*)src + in, (char*)dst + out, (int)packed, (int)raw);
    if (got < 0 || (uint32_t)got != raw) return false;
    in += packed;
    out += raw;
  }
  return in == n && out == dst_size && n > 0;
}

/// LZ4 frames (magic 04 22 4D 18), one or more: what early parquet-rs
/// versions wrote for codec LZ4.
static int lz4_frame_page(struct pq_codec_ctx* ctx, const uint8_t* src, int64_t n, uint8_t* dst,
                          int64_t dst_size, struct sluice_error* error) {
  if (ctx->lz4_frame == NULL) {
    LZ4F_CustomMem mem = {sl_codec_alloc, NULL, sl_codec_free, sl_codec_opaque(ctx->alloc)};
    ctx->lz4_frame = LZ4F_createDecompressionContext_advanced(mem, LZ4F_VERSION);
    if (ctx->lz4_frame == NULL) return sl_error_set(error, ENOMEM, "LZ4: out of memory for a frame context");
  } else {
    LZ4F_resetDecompressionContext(ctx->lz4_frame);
  }
  size_t in = 0, out = 0;
  for (;;) {
    size_t out_room = (size_t)dst_size - out, in_left = (size_t)n - in;
    size_t r = LZ4F_decompress(ctx->lz4_frame, dst + out, &out_room, src + in, &in_left, NULL);
    if (LZ4F_isError(r)) {
      if (LZ4F_getErrorCode(r) == LZ4F_ERROR_allocation_failed)
        return sl_error_set(error, ENOMEM, "LZ4: out of memory decoding an LZ4 frame");
      return sl_error_set(error, EILSEQ, "LZ4: corrupt LZ4 frame (%s)", LZ4F_getErrorName(r));
    }
    in += in_left;
    out += out_room;
    if (r == 0 && in == (size_t)n) break;  // last frame complete
    if (in == (size_t)n) return sl_error_set(error, EILSEQ, "LZ4: truncated LZ4 frame");
    if (in_left == 0 && out_room == 0)  // no progress: the output is full
      return size_mismatch(error, "LZ4", "decompresses to more bytes", dst_size);
  }
  if ((int64_t)out != dst_size)
    return sl_error_set(error, EILSEQ, "LZ4: page decompresses to %zu bytes, header says %lld", out,
                        (long long)dst_size);
  return 0;
}

static int lz4_page(struct pq_codec_ctx* ctx, enum pq_codec codec, const uint8_t* src, int64_t n,
                    uint8_t* dst, int64_t dst_size, struct sluice_error* error) {
  if (codec == PQ_CODEC_LZ4) {
    if (lz4_hadoop(src, n, dst, dst_size)) return 0;
    if (n >= 4 && src[0] == 0x04 && src[1] == 0x22 && src[2] == 0x4D && src[3] == 0x18)
      return lz4_frame_page(ctx, src, n, dst, dst_size, error);
  }
  const char* name = sl_pq_codec_name(codec);
  int got = LZ4_decompress_safe((const char*)src, (char*)dst, (int)n, (int)dst_size);
  if (got < 0) {
    return sl_error_set(error, EILSEQ, "%s: corrupt data%s (or it decompresses to more than %lld bytes)",
                        name, codec == PQ_CODEC_LZ4 ? " (neither Hadoop framing nor a raw block)" : "",
                        (long long)dst_size);
  }
  if (got != dst_size)
    return sl_error_set(error, EILSEQ, "%s: page decompresses to %d bytes, header says %lld", name,
                        got, (long long)dst_size);
  return 0;
}

int sl_pq_decompress_check(enum pq_codec codec, const uint8_t* src, int64_t n, int64_t dst_size,
                           struct sluice_error* error) {
  const char* name = sl_pq_codec_name(codec);
  int64_t ratio;
  switch (codec) {
    case PQ_CODEC_SNAPPY:
      if (n > 0) SL_RETURN_NOT_OK(snappy_check_length(src, n, dst_size, error));
      ratio = SL_SNAPPY_MAX_RATIO;
      break;
    case PQ_CODEC_GZIP: ratio = SL_DEFLATE_MAX_RATIO; break;
    case PQ_CODEC_BROTLI: ratio = SL_BROTLI_MAX_RATIO; break;
    case PQ_CODEC_LZ4:
    case PQ_CODEC_LZ4_RAW: ratio = SL_LZ4_MAX_RATIO; break;
    case PQ_CODEC_ZSTD: {
      // The frames' content sizes where they say them, else 128 KiB per
      // block: what the bytes can make, exactly enough. Unparseable frames
      // get the ratio, and the decoder names what is wrong with them.
      unsigned long long most = n > 0 ? ZSTD_decompressBound(src, (size_t)n) : ZSTD_CONTENTSIZE_ERROR;
      if (most != ZSTD_CONTENTSIZE_ERROR) {
        if ((unsigned long long)dst_size <= most) return 0;
        return sl_error_set(error, EILSEQ, "ZSTD: the page header says %lld uncompressed bytes, "
                            "its %lld compressed bytes make at most %llu", (long long)dst_size,
                            (long long)n, most);
      }
      ratio = SL_ZSTD_MAX_RATIO;
      break;
    }
    default: return 0;  // UNCOMPRESSED is not decompressed; LZO and the rest are refused
  }
  if (sl_codec_claim_fits(n, dst_size, ratio)) return 0;
  return sl_error_set(error, EILSEQ, "%s: the page header says %lld uncompressed bytes from %lld "
                      "compressed bytes, more than the codec can expand", name, (long long)dst_size,
                      (long long)n);
}

int sl_pq_decompress(struct pq_codec_ctx* ctx, enum pq_codec codec, const uint8_t* src, int64_t n,
                  uint8_t* dst, int64_t dst_size, struct sluice_error* error) {
  const char* name = sl_pq_codec_name(codec);
  if (n < 0 || n > PQ_MAX_PAGE || dst_size < 0 || dst_size > PQ_MAX_PAGE)
    return sl_error_set(error, EILSEQ, "%s: invalid page sizes (%lld compressed, %lld uncompressed)",
                        name, (long long)n, (long long)dst_size);
  if ((src == NULL && n > 0) || (dst == NULL && dst_size > 0))
    return sl_error_set(error, EILSEQ, "%s: missing page buffer", name);
  if (n == 0 && codec != PQ_CODEC_LZO && (unsigned)codec <= 7) {
    // Some writers store an empty page as zero bytes whatever the codec;
    // no codec's real output is empty.
    if (dst_size == 0) return 0;
    return sl_error_set(error, EILSEQ, "%s: empty compressed page (header says %lld uncompressed bytes)",
                        name, (long long)dst_size);
  }
  // Libraries may not take NULL pointers even for empty ranges.
  uint8_t empty = 0;
  if (src == NULL) src = &empty;
  if (dst == NULL) dst = &empty;
  switch (codec) {
    case PQ_CODEC_UNCOMPRESSED:
      if (n != dst_size)
        return sl_error_set(error, EILSEQ, "UNCOMPRESSED: page has %lld bytes, header says %lld",
                            (long long)n, (long long)dst_size);
      if (n > 0) memmove(dst, src, (size_t)n);
      return 0;
    case PQ_CODEC_SNAPPY: return snappy_page(src, n, dst, dst_size, error);
    case PQ_CODEC_GZIP: return gzip_page(ctx, src, n, dst, dst_size, error);
    case PQ_CODEC_BROTLI: return brotli_page(ctx, src, n, dst, dst_size, error);
    case PQ_CODEC_ZSTD: return zstd_page(ctx, src, n, dst, dst_size, error);
    case PQ_CODEC_LZ4:
    case PQ_CODEC_LZ4_RAW: return lz4_page(ctx, codec, src, n, dst, dst_size, error);
    case PQ_CODEC_LZO: return sl_error_set(error, ENOTSUP, "LZO-compressed Parquet pages are not supported");
  }
  return sl_error_set(error, ENOTSUP, "unknown Parquet compression codec %d", (int)codec);
}

int sl_pq_decompress_snappy_split(const uint8_t* src, int64_t n, uint8_t* head, int64_t head_size,
                               uint8_t* tail, int64_t tail_size, struct sluice_error* error) {
  if (src == NULL || n <= 0 || n > PQ_MAX_PAGE || head_size < 0 || tail_size < 0 ||
      head_size > PQ_MAX_PAGE - tail_size)
    return sl_error_set(error, EILSEQ, "SNAPPY: invalid page sizes (%lld compressed, %lld uncompressed)",
                        (long long)n, (long long)(head_size + tail_size));
  int rc = snappy_check_length(src, n, head_size + tail_size, error);
  if (rc != 0) return rc;
  if (!sl_snappy_uncompress_split(src, (size_t)n, head, (size_t)head_size, tail, (size_t)tail_size))
    return sl_error_set(error, EILSEQ, "SNAPPY: corrupt data");
  return 0;
}

/* ---- compression -------------------------------------------------------------- */

static int reserve(struct sl_buffer* out, size_t bound, const char* name,
                   struct sluice_error* error) {
  if (bound == 0 || bound > (size_t)INT64_MAX)
    return sl_error_set(error, EINVAL, "%s: input too large to compress", name);
  int rc = sl_buffer_reserve(out, (int64_t)bound);
  if (rc != 0) return sl_error_set(error, rc, "%s: out of memory (%zu bytes) compressing a page", name, bound);
  return 0;
}

static int brotli_compress(struct pq_codec_ctx* ctx, int level, const uint8_t* src, int64_t n,
                           struct sl_buffer* out, struct sluice_error* error) {
  (void)ctx;
  // malloc, not the sluice allocator: Debian's libbrotlienc (1.0.9) calls
  // exit() when an allocation fails, so an allocator that refuses (a memory
  // budget, a test) must never be asked by the encoder.
  BrotliEncoderState* s = BrotliEncoderCreateInstance(NULL, NULL, NULL);
  if (s == NULL) return sl_error_set(error, ENOMEM, "BROTLI: out of memory for an encoder");
  BrotliEncoderSetParameter(s, BROTLI_PARAM_QUALITY,
                            (uint32_t)(level == PQ_LEVEL_DEFAULT ? PQ_BROTLI_DEFAULT_LEVEL : level));
  BrotliEncoderSetParameter(s, BROTLI_PARAM_SIZE_HINT, (uint32_t)n);
  size_t bound = BrotliEncoderMaxCompressedSize((size_t)n);
  int rc = reserve(out, bound ? bound : (size_t)n + 1024, "BROTLI", error);
  size_t avail_in = (size_t)n;
  const uint8_t* next_in = src;
  while (rc == 0) {
    if (out->size == out->capacity && (rc = reserve(out, (size_t)out->capacity, "BROTLI", error)) != 0)
      break;
    size_t avail_out = (size_t)(out->capacity - out->size);
    uint8_t* next_out = out->data + out->size;
    if (!BrotliEncoderCompressStream(s, BROTLI_OPERATION_FINISH, &avail_in, &next_in, &avail_out,
                                     &next_out, NULL)) {
      rc = sl_error_set(error, ENOMEM, "BROTLI: compression failed (out of memory?)");
      break;
    }
    out->size = next_out - out->data;
    if (BrotliEncoderIsFinished(s)) break;
  }
  BrotliEncoderDestroyInstance(s);
  return rc;
}

int sl_pq_codec_level(enum pq_codec codec, int* level, struct sluice_error* error) {
  int lo = 0, hi = 0;
  switch (codec) {
    case PQ_CODEC_ZSTD:  // its negative levels are its fastest
      lo = ZSTD_minCLevel();
      hi = ZSTD_maxCLevel();
      *level = *level < lo ? lo : *level > hi ? hi : *level;
      return 0;
    case PQ_CODEC_BROTLI:
      hi = BROTLI_MAX_QUALITY;
      if (*level > hi) *level = hi;
      break;
    case PQ_CODEC_LZ4_RAW:  // below LZ4HC_CLEVEL_MIN the fast coder; LZ4HC caps at 12
      return 0;
    case PQ_CODEC_GZIP:
      hi = 12;  // libdeflate's 10-12 are its slow, strongest levels
      break;
    default:
      return sl_error_set(error, EINVAL, "codec %s has no compression levels (compression_level=%d): "
                          "leave compression_level out, or choose zstd, gzip, brotli or lz4",
                          sl_pq_codec_name(codec), *level);
  }
  if (*level < lo || *level > hi) {
    return sl_error_set(error, EINVAL, "%s compression levels are %d to %d, not %d",
                        sl_pq_codec_name(codec), lo, hi, *level);
  }
  return 0;
}

int sl_pq_compress(struct pq_codec_ctx* ctx, enum pq_codec codec, int level, const uint8_t* src,
                int64_t n, struct sl_buffer* out, struct sluice_error* error) {
  const char* name = sl_pq_codec_name(codec);
  if (n < 0 || n > PQ_MAX_PAGE)
    return sl_error_set(error, EINVAL, "%s: page of %lld bytes is too large to compress", name,
                        (long long)n);
  uint8_t empty = 0;
  if (src == NULL) {
    if (n > 0) return sl_error_set(error, EINVAL, "%s: missing page buffer", name);
    src = &empty;
  }
  switch (codec) {
    case PQ_CODEC_UNCOMPRESSED: {
      int rc = sl_buffer_append(out, src, n);
      if (rc != 0) return sl_error_set(error, rc, "out of memory for an uncompressed page");
      return 0;
    }
    case PQ_CODEC_SNAPPY: {
      size_t bound = snappy_max_compressed_length((size_t)n);
      SL_RETURN_NOT_OK(reserve(out, bound, name, error));
      size_t got = (size_t)(out->capacity - out->size);
      if (snappy_compress((const char*)src, (size_t)n, (char*)out->data + out->size, &got) != SNAPPY_OK)
        return sl_error_set(error, EIO, "SNAPPY: compression failed");
      out->size += (int64_t)got;
      return 0;
    }
    case PQ_CODEC_GZIP: {
      int lv = level == PQ_LEVEL_DEFAULT ? PQ_GZIP_DEFAULT_LEVEL : level;
      if (ctx->gzip_c == NULL || ctx->gzip_level != lv) {
        if (ctx->gzip_c) libdeflate_free_compressor(ctx->gzip_c);
        ctx->gzip_c = libdeflate_alloc_compressor(lv);
        ctx->gzip_level = lv;
        if (ctx->gzip_c == NULL) return sl_error_set(error, ENOMEM, "GZIP: out of memory for a compressor");
      }
      size_t bound = libdeflate_gzip_compress_bound(ctx->gzip_c, (size_t)n);
      SL_RETURN_NOT_OK(reserve(out, bound, name, error));
      size_t got = libdeflate_gzip_compress(ctx->gzip_c, src, (size_t)n, out->data + out->size,
                                            (size_t)(out->capacity - out->size));
      if (got == 0) return sl_error_set(error, EIO, "GZIP: compression failed");
      out->size += (int64_t)got;
      return 0;
    }
    case PQ_CODEC_BROTLI: return brotli_compress(ctx, level, src, n, out, error);
    case PQ_CODEC_ZSTD: {
      int lv = level == PQ_LEVEL_DEFAULT ? PQ_ZSTD_DEFAULT_LEVEL : level;
      if (ctx->zstd_c == NULL) {
        ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(ctx->alloc)};
        ctx->zstd_c = ZSTD_createCCtx_advanced(mem);
        if (ctx->zstd_c == NULL) return sl_error_set(error, ENOMEM, "ZSTD: out of memory for a context");
      }
      size_t bound = ZSTD_compressBound((size_t)n);
      SL_RETURN_NOT_OK(reserve(out, bound, name, error));
      size_t got = ZSTD_compressCCtx(ctx->zstd_c, out->data + out->size,
                                     (size_t)(out->capacity - out->size), src, (size_t)n, lv);
      if (ZSTD_isError(got)) {
        return sl_error_set(error, ZSTD_getErrorCode(got) == ZSTD_error_memory_allocation ? ENOMEM : EIO,
                            "ZSTD: %s", ZSTD_getErrorName(got));
      }
      out->size += (int64_t)got;
      return 0;
    }
    case PQ_CODEC_LZ4_RAW: {
      if (n > LZ4_MAX_INPUT_SIZE) return sl_error_set(error, EINVAL, "LZ4_RAW: page too large");
      int bound = LZ4_compressBound((int)n);
      SL_RETURN_NOT_OK(reserve(out, (size_t)bound, name, error));
      int room = (int)(out->capacity - out->size > INT_MAX ? INT_MAX : out->capacity - out->size);
      char* to = (char*)out->data + out->size;
      // As Arrow C++ compresses LZ4: levels from LZ4HC_CLEVEL_MIN up with
      // the high-compression coder (which takes those past its 12 as 12, as
      // pyarrow does), lower ones (and none) with the fast one.
      int got = level >= LZ4HC_CLEVEL_MIN
                    ? LZ4_compress_HC((const char*)src, to, (int)n, room, level)
                    : LZ4_compress_default((const char*)src, to, (int)n, room);
      if (got <= 0) return sl_error_set(error, EIO, "LZ4_RAW: compression failed");
      out->size += got;
      return 0;
    }
    case PQ_CODEC_LZO:
    case PQ_CODEC_LZ4:
      return sl_error_set(error, ENOTSUP, "writing %s-compressed Parquet pages is not supported", name);
  }
  return sl_error_set(error, ENOTSUP, "unknown Parquet compression codec %d", (int)codec);
}
