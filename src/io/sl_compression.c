#include "sl_compression.h"

#include <errno.h>
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

/// Compression suffixes and what sluice reads and writes under them (NONE:
/// known as compression, but not one sluice compresses a whole file with).
/// A suffix that names the format (x.csv.lz4 is CSV, whose reader then says
/// lz4 is not read) is stripped before the format's extension is looked
/// up; the others (.zip, .tar, ...) are only refused as outputs, since a
/// file of such a name may be anything.
static const struct {
  const char* suffix;
  enum sl_compression kind;
  int names_format;
} k_suffixes[] = {
    {".gz", SL_COMPRESS_GZIP, 1},   {".gzip", SL_COMPRESS_GZIP, 1}, {".zst", SL_COMPRESS_ZSTD, 1},
    {".zstd", SL_COMPRESS_ZSTD, 1}, {".bz2", SL_COMPRESS_BZIP2, 1}, {".bzip2", SL_COMPRESS_BZIP2, 1},
    {".xz", SL_COMPRESS_XZ, 1},     {".lz4", SL_COMPRESS_NONE, 1},  {".snappy", SL_COMPRESS_NONE, 1},
    {".zip", SL_COMPRESS_NONE, 0},  {".br", SL_COMPRESS_NONE, 0},   {".lz", SL_COMPRESS_NONE, 0},
    {".lzma", SL_COMPRESS_NONE, 0}, {".z", SL_COMPRESS_NONE, 0},    {".7z", SL_COMPRESS_NONE, 0},
    {".tar", SL_COMPRESS_NONE, 0}};

/// The entry of k_suffixes the location's name ends with, or -1.
static int suffix_index(const char* location) {
  if (location == NULL) return -1;
  size_t len = sl_location_name_length(location);
  for (size_t i = 0; i < sizeof k_suffixes / sizeof k_suffixes[0]; ++i) {
    if (sl_name_ends_with(location, len, k_suffixes[i].suffix)) return (int)i;
  }
  return -1;
}

size_t sl_unwritten_compression_suffix_length(const char* location) {
  int i = suffix_index(location);
  return i >= 0 && k_suffixes[i].kind == SL_COMPRESS_NONE ? strlen(k_suffixes[i].suffix) : 0;
}

size_t sl_archive_suffix_length(const char* location) {
  if (location == NULL) return 0;
  size_t len = sl_location_name_length(location);
  static const char* const short_forms[] = {".tgz", ".tbz2", ".tbz", ".txz", ".tzst"};
  for (size_t i = 0; i < sizeof short_forms / sizeof short_forms[0]; ++i) {
    if (sl_name_ends_with(location, len, short_forms[i])) return strlen(short_forms[i]);
  }
  int i = suffix_index(location);
  size_t compressed = i >= 0 && k_suffixes[i].kind != SL_COMPRESS_NONE
                          ? strlen(k_suffixes[i].suffix) : 0;
  return sl_name_ends_with(location, len - compressed, ".tar") ? compressed + 4 : 0;
}

enum sl_compression sl_compression_for_name(const char* location) {
  int i = suffix_index(location);
  return i >= 0 ? k_suffixes[i].kind : SL_COMPRESS_NONE;
}

size_t sl_compression_suffix_length(const char* location) {
  int i = suffix_index(location);
  return i >= 0 && k_suffixes[i].names_format ? strlen(k_suffixes[i].suffix) : 0;
}

enum sl_compression sl_compression_of_bytes(const uint8_t* head, int64_t n) {
  if (n >= 2 && head[0] == 0x1F && head[1] == 0x8B) return SL_COMPRESS_GZIP;
  if (n >= 4 && head[0] == 0x28 && head[1] == 0xB5 && head[2] == 0x2F && head[3] == 0xFD) {
    return SL_COMPRESS_ZSTD;
  }
  // A zstd skippable frame (magic 0x184D2A50..5F, little-endian), which
  // libzstd's stream decoder passes over: pzstd starts every frame with one.
  if (n >= 4 && (head[0] & 0xF0) == 0x50 && head[1] == 0x2A && head[2] == 0x4D && head[3] == 0x18) {
    return SL_COMPRESS_ZSTD;
  }
  // bzip2: "BZh", the block size '1'..'9', then a block's magic (BCD pi) or,
  // for an empty stream, the end-of-stream one (BCD sqrt(pi)). Ten bytes,
  // not four: a text may well start "BZh1".
  static const uint8_t block[6] = {0x31, 0x41, 0x59, 0x26, 0x53, 0x59};
  static const uint8_t eos[6] = {0x17, 0x72, 0x45, 0x38, 0x50, 0x90};
  if (n >= 10 && memcmp(head, "BZh", 3) == 0 && head[3] >= '1' && head[3] <= '9' &&
      (memcmp(head + 4, block, 6) == 0 || memcmp(head + 4, eos, 6) == 0)) {
    return SL_COMPRESS_BZIP2;
  }
  static const uint8_t xz[6] = {0xFD, '7', 'z', 'X', 'Z', 0x00};
  if (n >= 6 && memcmp(head, xz, 6) == 0) return SL_COMPRESS_XZ;
  return SL_COMPRESS_NONE;
}

const char* sl_unread_compression_of_bytes(const uint8_t* head, int64_t n) {
  static const struct {
    const char* name;
    uint8_t size;
    uint8_t magic[6];
  } k_magics[] = {{"zip", 4, {'P', 'K', 3, 4}},          {"zip", 4, {'P', 'K', 5, 6}},
                  {"lz4", 4, {0x04, 0x22, 0x4D, 0x18}},   {"compress (.Z)", 2, {0x1F, 0x9D}},
                  {"lzip", 5, {'L', 'Z', 'I', 'P', 1}},      {"7z", 6, {'7', 'z', 0xBC, 0xAF, 0x27, 0x1C}},
                  {"snappy", 6, {0xFF, 0x06, 0, 0, 's', 'N'}}};
  for (size_t i = 0; i < sizeof k_magics / sizeof k_magics[0]; ++i) {
    if (n >= k_magics[i].size && memcmp(head, k_magics[i].magic, k_magics[i].size) == 0) {
      return k_magics[i].name;
    }
  }
  return NULL;
}

int sl_compression_magic_prefix(enum sl_compression kind, const uint8_t* head, int64_t n) {
  static const uint8_t gzip[] = {0x1F, 0x8B};
  static const uint8_t zstd[] = {0x28, 0xB5, 0x2F, 0xFD};
  static const uint8_t skippable[] = {0x50, 0x2A, 0x4D, 0x18};
  static const uint8_t bzip2[] = {'B', 'Z', 'h', '9', 0x31, 0x41, 0x59, 0x26, 0x53, 0x59};
  static const uint8_t bzip2_eos[] = {'B', 'Z', 'h', '9', 0x17, 0x72, 0x45, 0x38, 0x50, 0x90};
  static const uint8_t xz[] = {0xFD, '7', 'z', 'X', 'Z', 0x00};
  const uint8_t* magics[2] = {NULL, NULL};
  int64_t size = 0;
  switch (kind) {
    case SL_COMPRESS_GZIP: magics[0] = gzip, size = 2; break;
    case SL_COMPRESS_ZSTD: magics[0] = zstd, magics[1] = skippable, size = 4; break;
    case SL_COMPRESS_BZIP2: magics[0] = bzip2, magics[1] = bzip2_eos, size = 10; break;
    case SL_COMPRESS_XZ: magics[0] = xz, size = 6; break;
    case SL_COMPRESS_NONE: break;
  }
  if (n < 1 || n >= size) return 0;
  for (int m = 0; m < 2 && magics[m] != NULL; ++m) {
    int64_t i = 0;
    for (; i < n; ++i) {
      uint8_t a = head[i], b = magics[m][i];
      // (a skippable frame's first byte is 0x50..0x5F; bzip2's level '1'..'9')
      if (magics[m] == skippable && i == 0) a &= 0xF0;
      if ((magics[m] == bzip2 || magics[m] == bzip2_eos) && i == 3 && a >= '1' && a <= '9') a = '9';
      if (a != b) break;
    }
    if (i == n) return 1;
  }
  return 0;
}

const char* sl_compression_name(enum sl_compression kind) {
  switch (kind) {
    case SL_COMPRESS_GZIP: return "gzip";
    case SL_COMPRESS_ZSTD: return "zstd";
    case SL_COMPRESS_BZIP2: return "bzip2";
    case SL_COMPRESS_XZ: return "xz";
    case SL_COMPRESS_NONE: break;
  }
  return "none";
}

// Writer options name a compression as its suffix does, without the dot
// ("gz", "gzip", "bz2", ...), as pandas spells them.
int sl_compression_of_option(const char* name, enum sl_compression* out) {
  if (strcmp(name, "none") == 0) {
    *out = SL_COMPRESS_NONE;
    return 0;
  }
  for (size_t i = 0; i < sizeof k_suffixes / sizeof k_suffixes[0]; ++i) {
    if (k_suffixes[i].kind != SL_COMPRESS_NONE && strcmp(name, k_suffixes[i].suffix + 1) == 0) {
      *out = k_suffixes[i].kind;
      return 0;
    }
  }
  return EINVAL;
}

// The first suffix k_suffixes lists for a kind is the one written.
const char* sl_compression_suffix(enum sl_compression kind) {
  for (size_t i = 0; kind != SL_COMPRESS_NONE && i < sizeof k_suffixes / sizeof k_suffixes[0];
       ++i) {
    if (k_suffixes[i].kind == kind) return k_suffixes[i].suffix;
  }
  return "";
}
