#include "sl_compression.h"

#include <string.h>

#include "sl_source.h"

int sl_name_ends_with(const char* name, size_t len, const char* suffix) {
  size_t n = strlen(suffix);
  if (n == 0 || n > len) return 0;
  for (size_t i = 0; i < n; ++i) {
    char a = name[len - n + i], b = suffix[i];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (b >= 'A' && b <= 'Z') b = (char)(b - 'A' + 'a');
    if (a != b) return 0;
  }
  return 1;
}

size_t sl_location_name_length(const char* location) {
  return sl_location_is_http(location) ? strcspn(location, "?#") : strlen(location);
}

enum sl_compression sl_compression_for_name(const char* location) {
  if (location == NULL) return SL_COMPRESS_NONE;
  size_t len = sl_location_name_length(location);
  if (sl_name_ends_with(location, len, ".gz") || sl_name_ends_with(location, len, ".gzip")) {
    return SL_COMPRESS_GZIP;
  }
  if (sl_name_ends_with(location, len, ".zst") || sl_name_ends_with(location, len, ".zstd")) {
    return SL_COMPRESS_ZSTD;
  }
  return SL_COMPRESS_NONE;
}

enum sl_compression sl_compression_of_bytes(const uint8_t* head, int64_t n) {
  if (n >= 2 && head[0] == 0x1F && head[1] == 0x8B) return SL_COMPRESS_GZIP;
  if (n >= 4 && head[0] == 0x28 && head[1] == 0xB5 && head[2] == 0x2F && head[3] == 0xFD) {
    return SL_COMPRESS_ZSTD;
  }
  return SL_COMPRESS_NONE;
}
