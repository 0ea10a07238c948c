#include "sl_sink_compress.h"

#include <bzlib.h>
#include <errno.h>
#include <limits.h>
#include <lzma.h>
#include <string.h>
#include <isa-l/igzip_lib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createCCtx_advanced: our allocator
#include <zstd.h>
#include <zstd_errors.h>

#include "../codec/sl_codec_alloc.h"
#include "../core/sl_alloc.h"
#include "../core/sl_buffer_cache.h"
#include "../core/sl_error.h"

/// Compressed output is handed on in pieces of this size.
#define COMPRESSED_BUFFER ((size_t)1 << 20)

struct sl_compressor {
  enum sl_compression kind;
  const struct sluice_allocator* alloc;
  char* name;
  sl_compressed_out out;
  void* ctx;
  uint8_t* buf;  ///< COMPRESSED_BUFFER bytes
  int64_t output_bytes;
  struct isal_zstream* gzip;
  uint8_t* gzip_level_buf;
  ZSTD_CCtx* zstd;
  bz_stream* bzip2;  ///< set up (BZ2_bzCompressInit succeeded) when not NULL
  lzma_stream* xz;   ///< likewise (lzma_easy_encoder)
  lzma_allocator xz_allocator;
};

/// bzip2 at level 9 (900 kB blocks), as bzip2(1), Python's bz2 and so
/// pandas write it: the level sets the block size, hardly the speed.
#define BZIP2_LEVEL 9
/// xz preset 1, not xz(1)'s and Python's 6: on 20 MB of CSV 1.4 s against
/// 36 s (26 times slower for a file 23% smaller), and 10 MB of memory
/// against 85 MB; still 20% smaller than bzip2's.
#define XZ_PRESET 1

static int emit(struct sl_compressor* c, size_t n, struct sluice_error* error) {
  if (n == 0) return 0;
  c->output_bytes += (int64_t)n;
  return c->out(c->ctx, c->buf, n, error);
}

/// Runs ISA-L over the pending input until it is taken (and, when
/// finishing, until the stream's end is written).
static int gzip_run(struct sl_compressor* c, int finish, struct sluice_error* error) {
  struct isal_zstream* z = c->gzip;
  z->end_of_stream = (uint16_t)finish;
  for (;;) {
    z->next_out = c->buf;
    z->avail_out = (uint32_t)COMPRESSED_BUFFER;
    if (isal_deflate(z) != COMP_OK) {
      return sl_error_set(error, EIO, "%s: gzip compression failed", c->name);
    }
    SL_RETURN_NOT_OK(emit(c, COMPRESSED_BUFFER - z->avail_out, error));
    int done = finish ? z->internal_state.state == ZSTATE_END : z->avail_in == 0;
    if (done && z->avail_out > 0) return 0;
  }
}

static int zstd_run(struct sl_compressor* c, ZSTD_inBuffer* in, ZSTD_EndDirective mode,
                    struct sluice_error* error) {
  for (;;) {
    ZSTD_outBuffer ob = {c->buf, COMPRESSED_BUFFER, 0};
    size_t left = ZSTD_compressStream2(c->zstd, &ob, in, mode);
    if (ZSTD_isError(left)) {
      return sl_error_set(error,
                          ZSTD_getErrorCode(left) == ZSTD_error_memory_allocation ? ENOMEM : EIO,
                          "%s: zstd compression failed: %s", c->name, ZSTD_getErrorName(left));
    }
    SL_RETURN_NOT_OK(emit(c, ob.pos, error));
    int done = mode == ZSTD_e_end ? left == 0 : in->pos == in->size;
    if (done && ob.pos < ob.size) return 0;
  }
}

/// Runs libbz2 over the pending input until it is taken (`action` BZ_RUN)
/// or the stream's end is written (BZ_FINISH).
static int bzip2_run(struct sl_compressor* c, int action, struct sluice_error* error) {
  bz_stream* z = c->bzip2;
  for (;;) {
    z->next_out = (char*)c->buf;
    z->avail_out = (unsigned)COMPRESSED_BUFFER;
    int r = BZ2_bzCompress(z, action);
    int want = action == BZ_FINISH ? BZ_FINISH_OK : BZ_RUN_OK;
    if (r != want && r != BZ_STREAM_END) {
      return sl_error_set(error, EIO, "%s: bzip2 compression failed (%d)", c->name, r);
    }
    SL_RETURN_NOT_OK(emit(c, COMPRESSED_BUFFER - z->avail_out, error));
    if (action == BZ_FINISH ? r == BZ_STREAM_END : z->avail_in == 0) return 0;
  }
}

static int xz_run(struct sl_compressor* c, lzma_action action, struct sluice_error* error) {
  lzma_stream* z = c->xz;
  for (;;) {
    z->next_out = c->buf;
    z->avail_out = COMPRESSED_BUFFER;
    lzma_ret r = lzma_code(z, action);
    if (r != LZMA_OK && r != LZMA_STREAM_END) {
      return sl_error_set(error, r == LZMA_MEM_ERROR ? ENOMEM : EIO,
                          "%s: xz compression failed (%d)", c->name, (int)r);
    }
    SL_RETURN_NOT_OK(emit(c, COMPRESSED_BUFFER - z->avail_out, error));
    int done = action == LZMA_FINISH ? r == LZMA_STREAM_END : z->avail_in == 0;
    if (done && z->avail_out > 0) return 0;
  }
}

int sl_compressor_open(enum sl_compression kind, const char* name,
                       const struct sluice_allocator* alloc, sl_compressed_out out, void* ctx,
                       struct sl_compressor** compressor, struct sluice_error* error) {
  *compressor = NULL;
  if (kind == SL_COMPRESS_NONE) {
    return sl_error_set(error, EINVAL, "%s: no compression to write with", name);
  }
  struct sl_compressor* c = sl_calloc(alloc, 1, sizeof *c);
  if (c == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  c->kind = kind;
  c->alloc = alloc;
  c->out = out;
  c->ctx = ctx;
  c->name = sl_strdup(alloc, name);
  c->buf = sl_alloc(alloc, COMPRESSED_BUFFER);
  int ok = c->name != NULL && c->buf != NULL;
  if (ok && kind == SL_COMPRESS_GZIP) {
    c->gzip = sl_alloc(alloc, sizeof *c->gzip);
    c->gzip_level_buf = sl_alloc(alloc, ISAL_DEF_LVL1_DEFAULT);
    ok = c->gzip != NULL && c->gzip_level_buf != NULL;
    if (ok) {
      isal_deflate_init(c->gzip);
      c->gzip->level = 1;
      c->gzip->level_buf = c->gzip_level_buf;
      c->gzip->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
      c->gzip->gzip_flag = IGZIP_GZIP;
    }
  } else if (ok && kind == SL_COMPRESS_BZIP2) {
    bz_stream* z = sl_calloc(alloc, 1, sizeof *z);
    if (z != NULL) {
      z->bzalloc = sl_codec_bzip2_alloc;
      z->bzfree = sl_codec_free;
      z->opaque = sl_codec_opaque(alloc);
      if (BZ2_bzCompressInit(z, BZIP2_LEVEL, 0, 0) != BZ_OK) {
        sl_free(alloc, z, sizeof *z);
        z = NULL;
      }
    }
    c->bzip2 = z;
    ok = z != NULL;
  } else if (ok && kind == SL_COMPRESS_XZ) {
    lzma_stream* z = sl_alloc(alloc, sizeof *z);
    if (z != NULL) {
      lzma_stream init = LZMA_STREAM_INIT;
      *z = init;
      c->xz_allocator.alloc = sl_codec_alloc_n;
      c->xz_allocator.free = sl_codec_free;
      c->xz_allocator.opaque = sl_codec_opaque(alloc);
      z->allocator = &c->xz_allocator;
      if (lzma_easy_encoder(z, XZ_PRESET, LZMA_CHECK_CRC64) != LZMA_OK) {
        lzma_end(z);
        sl_free(alloc, z, sizeof *z);
        z = NULL;
      }
    }
    c->xz = z;
    ok = z != NULL;
  } else if (ok) {
    ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(alloc)};
    c->zstd = ZSTD_createCCtx_advanced(mem);
    ok = c->zstd != NULL;
    // Workers compress while the writer formats (no effect on a libzstd
    // built without threads). Not with a caller's allocator: libzstd
    // 1.5.4's multithreaded path writes through NULL when one of its
    // allocations fails (an allocation-failure sweep found it), and callers
    // bring their own allocator to count and to fail allocations. With the
    // default one a failed malloc there would crash too: out of memory
    // inside libzstd, not a state sluice can reach otherwise.
    if (ok && sl_alloc_is_default(alloc)) {
      (void)ZSTD_CCtx_setParameter(c->zstd, ZSTD_c_nbWorkers, 2);
    }
  }
  if (!ok) {
    sl_compressor_free(c);
    return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  *compressor = c;
  return 0;
}

int sl_compressor_write(struct sl_compressor* c, const uint8_t* data, size_t n,
                        struct sluice_error* error) {
  if (n == 0) return 0;
  if (c->kind == SL_COMPRESS_GZIP) {
    while (n > 0) {  // ISA-L counts in 32 bits
      uint32_t piece = n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
      c->gzip->next_in = (uint8_t*)(uintptr_t)data;
      c->gzip->avail_in = piece;
      SL_RETURN_NOT_OK(gzip_run(c, 0, error));
      data += piece;
      n -= piece;
    }
    return 0;
  }
  if (c->kind == SL_COMPRESS_BZIP2) {
    while (n > 0) {  // libbz2 counts in unsigned int
      unsigned piece = n > UINT_MAX ? UINT_MAX : (unsigned)n;
      c->bzip2->next_in = (char*)(uintptr_t)data;
      c->bzip2->avail_in = piece;
      SL_RETURN_NOT_OK(bzip2_run(c, BZ_RUN, error));
      data += piece;
      n -= piece;
    }
    return 0;
  }
  if (c->kind == SL_COMPRESS_XZ) {
    c->xz->next_in = data;
    c->xz->avail_in = n;
    return xz_run(c, LZMA_RUN, error);
  }
  ZSTD_inBuffer in = {data, n, 0};
  return zstd_run(c, &in, ZSTD_e_continue, error);
}

int sl_compressor_finish(struct sl_compressor* c, struct sluice_error* error) {
  if (c->kind == SL_COMPRESS_GZIP) {
    c->gzip->next_in = NULL;
    c->gzip->avail_in = 0;
    return gzip_run(c, 1, error);
  }
  if (c->kind == SL_COMPRESS_BZIP2) {
    c->bzip2->next_in = NULL;
    c->bzip2->avail_in = 0;
    return bzip2_run(c, BZ_FINISH, error);
  }
  if (c->kind == SL_COMPRESS_XZ) {
    c->xz->next_in = NULL;
    c->xz->avail_in = 0;
    return xz_run(c, LZMA_FINISH, error);
  }
  ZSTD_inBuffer in = {NULL, 0, 0};
  return zstd_run(c, &in, ZSTD_e_end, error);
}

int64_t sl_compressor_output_bytes(const struct sl_compressor* c) { return c->output_bytes; }

void sl_compressor_free(struct sl_compressor* c) {
  if (c == NULL) return;
  const struct sluice_allocator* alloc = c->alloc;
  if (c->name != NULL) sl_free(alloc, c->name, strlen(c->name) + 1);
  sl_free(alloc, c->buf, COMPRESSED_BUFFER);
  sl_free(alloc, c->gzip, sizeof *c->gzip);
  sl_free(alloc, c->gzip_level_buf, ISAL_DEF_LVL1_DEFAULT);
  ZSTD_freeCCtx(c->zstd);
  if (c->bzip2 != NULL) {
    BZ2_bzCompressEnd(c->bzip2);
    sl_free(alloc, c->bzip2, sizeof *c->bzip2);
  }
  if (c->xz != NULL) {
    lzma_end(c->xz);
    sl_free(alloc, c->xz, sizeof *c->xz);
  }
  sl_free(alloc, c, sizeof *c);
}
