#include "sl_sink_compress.h"

#include <errno.h>
#include <string.h>
#include <isa-l/igzip_lib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createCCtx_advanced: our allocator
#include <zstd.h>

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
};

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
      return sl_error_set(error, EIO, "%s: zstd compression failed: %s", c->name,
                          ZSTD_getErrorName(left));
    }
    SL_RETURN_NOT_OK(emit(c, ob.pos, error));
    int done = mode == ZSTD_e_end ? left == 0 : in->pos == in->size;
    if (done && ob.pos < ob.size) return 0;
  }
}

int sl_compressor_open(enum sl_compression kind, const char* name,
                       const struct sluice_allocator* alloc, sl_compressed_out out, void* ctx,
                       struct sl_compressor** compressor, struct sluice_error* error) {
  *compressor = NULL;
  if (kind != SL_COMPRESS_GZIP && kind != SL_COMPRESS_ZSTD) {
    return sl_error_set(error, ENOTSUP, "%s: cannot write %s-compressed output", name,
                        sl_compression_name(kind));
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
  ZSTD_inBuffer in = {data, n, 0};
  return zstd_run(c, &in, ZSTD_e_continue, error);
}

int sl_compressor_finish(struct sl_compressor* c, struct sluice_error* error) {
  if (c->kind == SL_COMPRESS_GZIP) {
    c->gzip->next_in = NULL;
    c->gzip->avail_in = 0;
    return gzip_run(c, 1, error);
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
  sl_free(alloc, c, sizeof *c);
}
