#include "sl_gzip.h"

#include <errno.h>
#include <string.h>

#include "sl_codec_alloc.h"

// zlib counts in uInt: larger inputs and outputs are fed a piece at a time.
#define SL_GZIP_CHUNK ((size_t)1 << 30)

int sl_gzip_start(struct sl_gzip* g, const struct sluice_allocator* alloc,
                  enum sl_gzip_header header, int* zlib_code) {
  int zr;
  if (g->started) {
    zr = inflateReset(&g->z);
  } else {
    memset(&g->z, 0, sizeof g->z);
    g->z.zalloc = sl_codec_zlib_alloc;
    g->z.zfree = sl_codec_free;
    g->z.opaque = sl_codec_opaque(alloc);
    // 15: the largest window; +16 gzip only, +32 gzip or zlib by header.
    zr = inflateInit2(&g->z, 15 + (header == SL_GZIP_ONLY ? 16 : 32));
    g->started = zr == Z_OK;
  }
  if (zlib_code != NULL) *zlib_code = zr;
  if (zr == Z_OK) return 0;
  return zr == Z_MEM_ERROR ? ENOMEM : EINVAL;
}

void sl_gzip_end(struct sl_gzip* g) {
  if (g->started) inflateEnd(&g->z);
  g->started = false;
}

enum sl_gzip_status sl_gzip_inflate(struct sl_gzip* g, const uint8_t* in, size_t n,
                                    size_t* in_used, uint8_t* out, size_t room,
                                    size_t* out_made) {
  z_stream* z = &g->z;
  size_t used = 0, made = 0;
  enum sl_gzip_status status;
  z->msg = NULL;
  for (;;) {
    uInt in_chunk = (uInt)(n - used > SL_GZIP_CHUNK ? SL_GZIP_CHUNK : n - used);
    uInt out_chunk = (uInt)(room - made > SL_GZIP_CHUNK ? SL_GZIP_CHUNK : room - made);
    z->next_in = (Bytef*)(uintptr_t)(in + used);
    z->avail_in = in_chunk;
    z->next_out = out + made;
    z->avail_out = out_chunk;
    int zr = inflate(z, Z_NO_FLUSH);
    used += in_chunk - z->avail_in;
    made += out_chunk - z->avail_out;
    if (zr == Z_STREAM_END) {
      if (used == n) {
        status = SL_GZIP_END;
        break;
      }
      // Another member follows.
      if (inflateReset(z) != Z_OK) {
        status = SL_GZIP_CORRUPT;
        break;
      }
      continue;
    }
    if (zr == Z_OK || zr == Z_BUF_ERROR) {
      if (made == room) {
        status = SL_GZIP_OUT_FULL;
        break;
      }
      if (used == n) {
        status = SL_GZIP_TRUNCATED;
        break;
      }
      if (zr == Z_OK) continue;  // progress was made
    }
    status = zr == Z_MEM_ERROR ? SL_GZIP_NOMEM : SL_GZIP_CORRUPT;
    break;
  }
  *in_used = used;
  *out_made = made;
  return status;
}

const char* sl_gzip_message(const struct sl_gzip* g) {
  return g->z.msg != NULL ? g->z.msg : "inflate failed";
}
