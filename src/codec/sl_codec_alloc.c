#include "sl_codec_alloc.h"

#include <string.h>

#include "core/sl_alloc.h"

#define SL_CODEC_HEADER 16

void* sl_codec_alloc(void* opaque, size_t size) {
  size_t total;
  if (sl_add_size(size, SL_CODEC_HEADER, &total) != 0) return NULL;
  uint8_t* p = sl_alloc(opaque, total);
  if (p == NULL) return NULL;
  memcpy(p, &total, sizeof total);
  return p + SL_CODEC_HEADER;
}

void sl_codec_free(void* opaque, void* ptr) {
  if (ptr == NULL) return;
  uint8_t* p = (uint8_t*)ptr - SL_CODEC_HEADER;
  size_t total;
  memcpy(&total, p, sizeof total);
  sl_free(opaque, p, total);
}

void* sl_codec_alloc_n(void* opaque, size_t count, size_t size) {
  size_t n;
  if (sl_mul_size(count, size, &n) != 0) return NULL;
  return sl_codec_alloc(opaque, n);
}

void* sl_codec_zlib_alloc(void* opaque, unsigned int count, unsigned int size) {
  return sl_codec_alloc_n(opaque, count, size);
}

void* sl_codec_bzip2_alloc(void* opaque, int count, int size) {
  if (count < 0 || size < 0) return NULL;
  return sl_codec_alloc_n(opaque, (size_t)count, (size_t)size);
}
