// Compressed CSV (.csv.gz, multi-member; .csv.zst, multi-frame), recognised by
// magic bytes. The input is inflated into memory at open, after which it is
// read exactly like a plain file (and can be split for parallel decoding).
// Bounded-memory streaming of huge compressed inputs is not done yet.
#include <string.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_createDCtx_advanced: our allocator
#include <zstd.h>

#include "csv_decompress.h"
#include "codec/sl_codec_alloc.h"
#include "codec/sl_gzip.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"


static int grow(struct csv_inflated* out, const struct sluice_allocator* alloc) {
  int64_t cap = out->cap < (1 << 20) ? (1 << 20) : out->cap * 2;
  if (cap < out->cap) return ENOMEM;
  uint8_t* b = out->data == NULL
                   ? sl_alloc_buffer(alloc, (size_t)cap)
                   : sl_realloc_buffer(alloc, out->data, (size_t)out->cap, (size_t)cap);
  if (b == NULL) return ENOMEM;
  out->data = b;
  out->cap = cap;
  return 0;
}

static int gunzip(const uint8_t* in, int64_t n, const struct sluice_allocator* alloc,
                  struct csv_inflated* out, const char* name, struct sluice_error* error) {
  struct sl_gzip g = {0};
  if (sl_gzip_start(&g, alloc, SL_GZIP_ONLY, NULL) != 0)
    return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  int rc = 0;
  size_t pos = 0;
  for (;;) {
    if (out->size == out->cap && grow(out, alloc) != 0) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory inflating", name);
      break;
    }
    size_t used, made;
    uint8_t* dst = out->data + out->size;
    enum sl_gzip_status st = sl_gzip_inflate(&g, in + pos, (size_t)n - pos, &used, dst,
                                             (size_t)(out->cap - out->size), &made);
    pos += used;
    out->size += (int64_t)made;
    if (st == SL_GZIP_OUT_FULL) continue;
    if (st == SL_GZIP_CORRUPT)
      rc = sl_error_set(error, EILSEQ, "%s: corrupt gzip data near compressed byte %lld: %s", name,
                        (long long)pos, sl_gzip_message(&g));
    else if (st == SL_GZIP_TRUNCATED)
      rc = sl_error_set(error, EILSEQ, "%s: truncated gzip data", name);
    else if (st == SL_GZIP_NOMEM)
      rc = sl_error_set(error, ENOMEM, "%s: out of memory inflating", name);
    break;
  }
  sl_gzip_end(&g);
  return rc;
}

static int unzstd(const uint8_t* in, int64_t n, const struct sluice_allocator* alloc,
                  struct csv_inflated* out, const char* name, struct sluice_error* error) {
  ZSTD_customMem mem = {sl_codec_alloc, sl_codec_free, sl_codec_opaque(alloc)};
  ZSTD_DCtx* dctx = ZSTD_createDCtx_advanced(mem);
  if (dctx == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  ZSTD_inBuffer ib = {in, (size_t)n, 0};
  size_t last = 0;
  int rc = 0;
  for (;;) {
    if (out->size == out->cap && grow(out, alloc) != 0) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory decompressing", name);
      break;
    }
    ZSTD_outBuffer ob = {out->data, (size_t)out->cap, (size_t)out->size};
    last = ZSTD_decompressStream(dctx, &ob, &ib);
    out->size = (int64_t)ob.pos;
    if (ZSTD_isError(last)) {
      rc = sl_error_set(error, EILSEQ, "%s: corrupt zstd data: %s", name, ZSTD_getErrorName(last));
      break;
    }
    if (ib.pos == ib.size && ob.pos < ob.size) {
      if (last != 0) rc = sl_error_set(error, EILSEQ, "%s: truncated zstd frame", name);
      break;
    }
  }
  ZSTD_freeDCtx(dctx);
  return rc;
}

int csv_maybe_decompress(const uint8_t* in, int64_t n, const struct sluice_allocator* alloc,
                         struct csv_inflated* out, const char* name, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  int rc;
  if (n >= 2 && in[0] == 0x1F && in[1] == 0x8B) {
    rc = gunzip(in, n, alloc, out, name, error);
  } else if (n >= 4 && in[0] == 0x28 && in[1] == 0xB5 && in[2] == 0x2F && in[3] == 0xFD) {
    rc = unzstd(in, n, alloc, out, name, error);
  } else {
    return 0;
  }
  if (rc == 0 && out->data == NULL) rc = grow(out, alloc);  // empty but decoded
  if (rc != 0) {
    if (out->data != NULL) sl_free_buffer(alloc, out->data, (size_t)out->cap);
    memset(out, 0, sizeof *out);
    if (error != NULL && error->code == 0) sl_error_set(error, rc, "%s: out of memory", name);
    return rc;
  }
  out->decoded = 1;
  return 0;
}
