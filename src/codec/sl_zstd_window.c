#include "sl_zstd_window.h"

#include <stdio.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader, ZSTD_WINDOWLOG_LIMIT_DEFAULT
#include <zstd.h>
#include <zstd_errors.h>

int sl_zstd_window_error(size_t code, const void* src, size_t n, char* buf, size_t cap) {
  if (ZSTD_getErrorCode(code) != ZSTD_error_frameParameter_windowTooLarge) return 0;
  unsigned long long limit = (1ULL << ZSTD_WINDOWLOG_LIMIT_DEFAULT) >> 20;
  ZSTD_frameHeader h;
  if (src != NULL && ZSTD_getFrameHeader(&h, src, n) == 0 && h.frameType == ZSTD_frame &&
      (h.windowSize >> 20) > limit) {
    snprintf(buf, cap, "the zstd frame needs a window of %llu MiB, more than the %llu MiB limit "
             "(it was written with zstd --long or a high level)", h.windowSize >> 20, limit);
  } else {
    snprintf(buf, cap, "the zstd frame needs a window larger than the %llu MiB limit (it was "
             "written with zstd --long or a high level)", limit);
  }
  return 1;
}
