// Block codecs. Avro stores no uncompressed size (except inside snappy and
// zstd frames, where it is untrusted), so output buffers grow as data really
// arrives; a size a header claims only seeds the first reservation, capped.
// Output never grows past the reader's limit (max_block_bytes): the first
// byte past it stops decoding, so a small block that inflates to gigabytes
// costs the limit, not the gigabytes. Every codec library allocates through
// the sluice allocator.
#include <bzlib.h>
#include <stdint.h>
#include <inttypes.h>
#include <libdeflate.h>
#include <lzma.h>
#include <snappy-c.h>
#include <stdio.h>
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createDCtx_advanced: our allocator
#include <zstd.h>
#include <zstd_errors.h>

#include "avro_internal.h"
#include "codec/sl_codec_alloc.h"
#include "codec/sl_zstd_window.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_value_text.h"

int sl_avro_codec_from_name(const char* name, size_t n, enum avro_codec* out,
                         struct sluice_error* error) {
  static const struct {
    const char* name;
    enum avro_codec codec;
  } k_codecs[] = {{"null", AVRO_CODEC_NULL},      {"deflate", AVRO_CODEC_DEFLATE},
                  {"snappy", AVRO_CODEC_SNAPPY},  {"zstandard", AVRO_CODEC_ZSTD},
                  {"bzip2", AVRO_CODEC_BZIP2},    {"xz", AVRO_CODEC_XZ},
                  {"lzma", AVRO_CODEC_LZMA}};
  for (size_t i = 0; i < sizeof k_codecs / sizeof k_codecs[0]; ++i)
    if (strlen(k_codecs[i].name) == n && memcmp(k_codecs[i].name, name, n) == 0) {
      *out = k_codecs[i].codec;
      return 0;
    }
  char shown[4 * 64 + 8];  // the name as read, escaped (\xNN for bytes that are not UTF-8)
  sl_escaped(name, n, '\'', shown, sizeof shown);
  return sl_error_set(error, ENOTSUP, "unsupported Avro codec '%s'", shown);
}

void sl_avro_buf_release(struct avro_buf* b, const struct sluice_allocator* alloc) {
  if (b->data) sl_free_buffer(alloc, b->data, b->cap);
  b->data = NULL;
  b->size = b->cap = 0;
}

/// Capacity for `want` bytes, doubling, but never more than `most`.
static int buf_grow(struct avro_buf* b, size_t want, size_t most,
                    const struct sluice_allocator* alloc, struct sluice_error* error) {
  if (want <= b->cap) return 0;
  if (want > AVRO_MAX_BLOCK)
    return sl_error_set(error, EFBIG, "decompressed block larger than %zu bytes", AVRO_MAX_BLOCK);
  size_t cap = b->cap ? b->cap : 64 << 10;
  while (cap < want) cap *= 2;
  if (cap > most) cap = most;
  uint8_t* p = b->data ? sl_realloc_buffer(alloc, b->data, b->cap, cap) : sl_alloc_buffer(alloc, cap);
  if (p == NULL) return sl_error_set(error, ENOMEM, "out of memory (%zu bytes) decompressing a block", cap);
  b->data = p;
  b->cap = cap;
  return 0;
}

int sl_avro_buf_reserve(struct avro_buf* b, size_t want, const struct sluice_allocator* alloc,
                       struct sluice_error* error) {
  return buf_grow(b, want, SIZE_MAX, alloc, error);
}

/// Room for decompressed output: up to `want` bytes, never more than
/// `limit`. A codec that fills `limit` bytes decodes on into a few bytes of
/// spill: any byte there means the block passes the limit. (Room for limit
/// + 1 bytes would cost a copy of the whole buffer for that one byte.)
static int out_reserve(struct avro_buf* out, size_t want, size_t limit,
                       const struct sluice_allocator* alloc, struct sluice_error* error) {
  return buf_grow(out, want <= limit ? want : limit, limit, alloc, error);
}

/// Before each call of a streaming decoder: room for more output, doubled
/// when full, else (at the limit) the spill. Sets *dst and *room.
static int out_next(struct avro_buf* out, size_t limit, uint8_t* spill, size_t spill_size,
                    uint8_t** dst, size_t* room, const struct sluice_allocator* alloc,
                    struct sluice_error* error) {
  if (out->size == out->cap && out->cap < limit)
    SL_RETURN_NOT_OK(out_reserve(out, out->cap * 2, limit, alloc, error));
  if (out->size < out->cap) {
    *dst = out->data + out->size;
    *room = out->cap - out->size;
  } else {
    *dst = spill;
    *room = spill_size;
  }
  return 0;
}

static int too_large(const char* codec, size_t limit, struct sluice_error* error) {
  return sl_error_set(error, ERANGE, "%s data decompress to more than %zu bytes", codec, limit);
}

/// After each call: `made` bytes came out at `dst`. ERANGE if into the spill.
static int out_took(struct avro_buf* out, const uint8_t* dst, const uint8_t* spill, size_t made,
                    const char* codec, size_t limit, struct sluice_error* error) {
  if (dst == spill) return made > 0 ? too_large(codec, limit, error) : 0;
  out->size += made;
  return 0;
}

/* ---- codecs ------------------------------------------------------------------ */

/// libdeflate decodes whole buffers about twice as fast as zlib's inflate,
/// but needs room for all of the output: retry with double the room, up to
/// the limit (where too little room means more than the limit). Its
/// decompressor (a few KiB of tables) comes from malloc: libdeflate 1.14 has
/// no allocator hook with a context, only a process-global one.
static int deflate_block(const uint8_t* in, size_t n, size_t limit, struct avro_buf* out,
                         const struct sluice_allocator* alloc, struct sluice_error* error) {
  // Deflate expands at most 1032:1; a buffer larger than that means bad data.
  size_t most = n > (SIZE_MAX >> 11) ? SIZE_MAX : n * 1032 + 4096;
  size_t want = out->cap > n * 2 ? out->cap : n * 4 + 4096;
  struct libdeflate_decompressor* d = libdeflate_alloc_decompressor();
  if (d == NULL) return sl_error_set(error, ENOMEM, "out of memory for inflate");
  int rc = 0;
  for (;;) {
    if ((rc = out_reserve(out, want, limit, alloc, error)) != 0) break;
    size_t got = 0, used = 0;
    enum libdeflate_result r =
        libdeflate_deflate_decompress_ex(d, in, n, out->data, out->cap, &used, &got);
    if (r == LIBDEFLATE_SUCCESS) {
      out->size = got;
      break;
    }
    if (r != LIBDEFLATE_INSUFFICIENT_SPACE || out->cap >= most) {
      rc = sl_error_set(error, EILSEQ, "deflate: corrupt or truncated data");
      break;
    }
    if (out->cap >= limit) {
      rc = too_large("deflate", limit, error);
      break;
    }
    want = out->cap * 2;
  }
  libdeflate_free_decompressor(d);
  return rc;
}

static int snappy_block(const uint8_t* in, size_t n, size_t limit, struct avro_buf* out,
                        const struct sluice_allocator* alloc, struct sluice_error* error) {
  if (n < 4) return sl_error_set(error, EILSEQ, "snappy block shorter than its CRC");
  size_t len;
  if (snappy_uncompressed_length((const char*)in, n - 4, &len) != SNAPPY_OK)
    return sl_error_set(error, EILSEQ, "snappy: corrupt length header");
  // A snappy tag expands to at most 64 bytes per 2 input bytes; anything
  // claiming more is corrupt, so the claim cannot reserve absurd memory.
  if (len > (n + 16) * 32) return sl_error_set(error, EILSEQ, "snappy: implausible length %zu", len);
  if (len > limit)
    return sl_error_set(error, ERANGE, "snappy data declare %zu decompressed bytes, more than %zu",
                        len, limit);
  SL_RETURN_NOT_OK(out_reserve(out, len > 0 ? len : 1, limit, alloc, error));
  size_t got = len;
  if (snappy_uncompress((const char*)in, n - 4, (char*)out->data, &got) != SNAPPY_OK || got != len)
    return sl_error_set(error, EILSEQ, "snappy: corrupt data");
  out->size = len;
  uint32_t want = (uint32_t)in[n - 4] << 24 | (uint32_t)in[n - 3] << 16 |
                  (uint32_t)in[n - 2] << 8 | in[n - 1];
  uint32_t crc = libdeflate_crc32(0, out->data, len);
  if (crc != want)
    return sl_error_set(error, EILSEQ, "snappy: CRC mismatch (stored %08" PRIx32 ", data %08"
                        PRIx32 ")", want, crc);
  return 0;
}

/// A zstd error as sluice reports it: a failed allocation is ENOMEM, the
/// rest is bad input.
static int zstd_error(size_t code, const uint8_t* in, size_t n, struct sluice_error* error) {
  if (ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation) {
    return sl_error_set(error, ENOMEM, "zstandard: out of memory");
  }
  char why[160];
  if (sl_zstd_window_error(code, in, n, why, sizeof why))
    return sl_error_set(error, ENOTSUP, "zstandard: %s", why);
  return sl_error_set(error, EILSEQ, "zstandard: %s", ZSTD_getErrorName(code));
}

static int zstd_block(const uint8_t* in, size_t n, size_t limit, struct avro_buf* out,
                      const struct sluice_allocator* alloc, struct sluice_error* error) {
  unsigned long long fcs = ZSTD_getFrameContentSize(in, n);
  int known = fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR;
  if (known && fcs > limit)
    return sl_error_set(error, ERANGE, "zstandard data declare %llu decompressed bytes (the frame "
                        "header), more than %zu", fcs, limit);
  ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(alloc)};
  ZSTD_DCtx* dctx = ZSTD_createDCtx_advanced(mem);
  if (dctx == NULL) return sl_error_set(error, ENOMEM, "out of memory for zstd");
  size_t first = n * 4 + 1024;
  if (known) {
    // Trust the claim only up to a bounded ratio; growth handles the rest.
    size_t cap = n > (SIZE_MAX >> 12) ? SIZE_MAX : n * 1024 + 4096;
    first = fcs < cap ? (size_t)fcs + 1 : cap;
  }
  int rc = out_reserve(out, first, limit, alloc, error);
  if (rc == 0 && known && fcs < first && ZSTD_findFrameCompressedSize(in, n) == n) {
    // One frame of known size (what writers emit): single-shot decoding
    // writes straight into the output, where streaming goes via its window.
    // (The room is at least fcs: fcs + 1, or the limit, which fcs is within.)
    size_t got = ZSTD_decompressDCtx(dctx, out->data, out->cap, in, n);
    ZSTD_freeDCtx(dctx);
    if (ZSTD_isError(got)) return zstd_error(got, in, n, error);
    if (got != fcs) return sl_error_set(error, EILSEQ, "zstandard: frame size mismatch");
    out->size = got;
    return 0;
  }
  ZSTD_inBuffer ib = {in, n, 0};
  uint8_t spill[64];
  while (rc == 0) {
    uint8_t* dst;
    size_t room;
    if ((rc = out_next(out, limit, spill, sizeof spill, &dst, &room, alloc, error)) != 0) break;
    ZSTD_outBuffer ob = {dst, room, 0};
    size_t last = ZSTD_decompressStream(dctx, &ob, &ib);
    if (ZSTD_isError(last)) {
      rc = zstd_error(last, in, n, error);
    } else if ((rc = out_took(out, dst, spill, ob.pos, "zstandard", limit, error)) != 0) {
      break;
    } else if (ib.pos == ib.size && (last == 0 || ob.pos < ob.size)) {
      // (0: the frame is decoded and flushed; called again, zstd would wait
      // for the next frame's header and call the data truncated)
      if (last != 0) rc = sl_error_set(error, EILSEQ, "zstandard: truncated frame");
      break;
    }
  }
  ZSTD_freeDCtx(dctx);
  return rc;
}

static int bzip2_begin(bz_stream* bz, const struct sluice_allocator* alloc,
                       struct sluice_error* error) {
  memset(bz, 0, sizeof *bz);
  bz->bzalloc = sl_codec_bzip2_alloc;
  bz->bzfree = sl_codec_free;
  bz->opaque = (void*)alloc;
  if (BZ2_bzDecompressInit(bz, 0, 0) != BZ_OK) return sl_error_set(error, ENOMEM, "out of memory for bzip2");
  return 0;
}

static int bzip2_block(const uint8_t* in, size_t n, size_t limit, struct avro_buf* out,
                       const struct sluice_allocator* alloc, struct sluice_error* error) {
  bz_stream bz;
  SL_RETURN_NOT_OK(bzip2_begin(&bz, alloc, error));
  int rc = out_reserve(out, n * 4 + 1024, limit, alloc, error);
  size_t in_left = n;
  const uint8_t* next = in;
  uint8_t spill[64];
  while (rc == 0) {
    uint8_t* dst;
    size_t room;
    if ((rc = out_next(out, limit, spill, sizeof spill, &dst, &room, alloc, error)) != 0) break;
    unsigned chunk_in = in_left > UINT32_MAX ? UINT32_MAX : (unsigned)in_left;
    unsigned chunk_out = room > UINT32_MAX ? UINT32_MAX : (unsigned)room;
    bz.next_in = (char*)next;
    bz.avail_in = chunk_in;
    bz.next_out = (char*)dst;
    bz.avail_out = chunk_out;
    int br = BZ2_bzDecompress(&bz);
    next += chunk_in - bz.avail_in;
    in_left -= chunk_in - bz.avail_in;
    if ((rc = out_took(out, dst, spill, chunk_out - bz.avail_out, "bzip2", limit, error)) != 0) break;
    if (br == BZ_STREAM_END) {
      if (in_left == 0) break;
      // Another stream follows (bzip2 files may be several streams, as
      // pbzip2 or `bz2.compress(a) + bz2.compress(b)` write them; Python's
      // bz2, which fastavro reads with, decodes them all): a fresh decoder.
      BZ2_bzDecompressEnd(&bz);
      SL_RETURN_NOT_OK(bzip2_begin(&bz, alloc, error));
      continue;
    }
    if (br != BZ_OK) {
      rc = sl_error_set(error, br == BZ_MEM_ERROR ? ENOMEM : EILSEQ, "bzip2: corrupt data (%d)", br);
    } else if (in_left == 0 && bz.avail_out != 0) {
      rc = sl_error_set(error, EILSEQ, "bzip2: truncated data");
    }
  }
  BZ2_bzDecompressEnd(&bz);
  return rc;
}

int sl_avro_lzma_options(int level, void* lzma_options_lzma_out) {
  lzma_options_lzma* opt = lzma_options_lzma_out;
  if (lzma_lzma_preset(opt, (uint32_t)(level < 0 || level > 9 ? 6 : level))) return EINVAL;
  if (opt->dict_size > (UINT32_C(8) << 20)) opt->dict_size = UINT32_C(8) << 20;
  return 0;
}

/// An xz container (codec "xz"), or avro-c's raw LZMA2 stream (`raw`, codec
/// "lzma").
static int xz_block(const uint8_t* in, size_t n, int raw, size_t limit, struct avro_buf* out,
                    const struct sluice_allocator* alloc, struct sluice_error* error) {
  lzma_allocator la = {sl_codec_alloc_n, sl_codec_free, sl_codec_opaque(alloc)};
  lzma_stream xs = LZMA_STREAM_INIT;
  xs.allocator = &la;
  lzma_options_lzma opt;
  lzma_filter filters[2] = {{LZMA_FILTER_LZMA2, &opt}, {LZMA_VLI_UNKNOWN, NULL}};
  lzma_ret init = raw ? (sl_avro_lzma_options(6, &opt) != 0 ? LZMA_OPTIONS_ERROR
                                                         : lzma_raw_decoder(&xs, filters))
                      : lzma_stream_decoder(&xs, UINT64_MAX, LZMA_CONCATENATED);
  if (init != LZMA_OK) {
    lzma_end(&xs);
    return sl_error_set(error, init == LZMA_MEM_ERROR ? ENOMEM : EINVAL, "%s: decoder setup failed (%d)",
                        raw ? "lzma" : "xz", (int)init);
  }
  const char* what = raw ? "lzma" : "xz";
  int rc = out_reserve(out, n * 4 + 1024, limit, alloc, error);
  xs.next_in = in;
  xs.avail_in = n;
  uint8_t spill[64];
  while (rc == 0) {
    uint8_t* dst;
    size_t room;
    if ((rc = out_next(out, limit, spill, sizeof spill, &dst, &room, alloc, error)) != 0) break;
    xs.next_out = dst;
    xs.avail_out = room;
    lzma_ret r = lzma_code(&xs, xs.avail_in == 0 ? LZMA_FINISH : LZMA_RUN);
    if ((rc = out_took(out, dst, spill, room - xs.avail_out, what, limit, error)) != 0) break;
    if (r == LZMA_STREAM_END) break;
    if (r == LZMA_MEM_ERROR) rc = sl_error_set(error, ENOMEM, "%s: out of memory", what);
    else if (r == LZMA_BUF_ERROR && xs.avail_out != 0) rc = sl_error_set(error, EILSEQ, "%s: truncated data", what);
    else if (r != LZMA_OK && r != LZMA_BUF_ERROR) rc = sl_error_set(error, EILSEQ, "%s: corrupt data (%d)", what, (int)r);
  }
  lzma_end(&xs);
  return rc;
}

int sl_avro_decompress(enum avro_codec codec, const uint8_t* in, size_t n, size_t limit,
                       struct avro_buf* out, const struct sluice_allocator* alloc,
                       struct sluice_error* error) {
  out->size = 0;
  if (n > AVRO_MAX_BLOCK)
    return sl_error_set(error, EFBIG, "compressed block larger than %zu bytes", AVRO_MAX_BLOCK);
  if (limit > AVRO_MAX_BLOCK) limit = AVRO_MAX_BLOCK;
  switch (codec) {
    case AVRO_CODEC_DEFLATE: return deflate_block(in, n, limit, out, alloc, error);
    case AVRO_CODEC_SNAPPY: return snappy_block(in, n, limit, out, alloc, error);
    case AVRO_CODEC_ZSTD: return zstd_block(in, n, limit, out, alloc, error);
    case AVRO_CODEC_BZIP2: return bzip2_block(in, n, limit, out, alloc, error);
    case AVRO_CODEC_XZ: return xz_block(in, n, 0, limit, out, alloc, error);
    case AVRO_CODEC_LZMA: return xz_block(in, n, 1, limit, out, alloc, error);
    default: return sl_error_set(error, EINVAL, "codec %d needs no decompression", (int)codec);
  }
}
