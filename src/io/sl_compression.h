// The whole-file compressions sluice reads and writes (.csv.gz, .csv.zst,
// .csv.bz2, .csv.xz), told from a name or from the first bytes: shared by the inflating source
// (sl_source_inflate.h), the compressing sink (sl_sink_compress.h) and the
// format registry's look through compression suffixes.
#ifndef SL_COMPRESSION_H
#define SL_COMPRESSION_H

#include <stddef.h>
#include <stdint.h>

enum sl_compression {
  SL_COMPRESS_NONE,
  SL_COMPRESS_GZIP,
  SL_COMPRESS_ZSTD,
  SL_COMPRESS_BZIP2,
  SL_COMPRESS_XZ
};

/// Whether name[0, len) ends with `suffix`, ASCII case ignored.
int sl_name_ends_with(const char* name, size_t len, const char* suffix);

/// The length of `location`'s name, whose suffix tells format and
/// compression: an http(s):// URL's up to its query or fragment ('?', '#');
/// a path's or an s3:// key's whole ('?' and '#' are characters there).
size_t sl_location_name_length(const char* location);

/// The compression a file name asks for by its suffix (.gz, .gzip, .zst,
/// .zstd, .bz2, .bzip2, .xz; an http(s) URL's query or fragment ignored).
enum sl_compression sl_compression_for_name(const char* location);

/// The length of the compression suffix `location`'s name ends with (one of
/// the above, or one sluice does not compress whole with: .lz4, .snappy),
/// else 0.
size_t sl_compression_suffix_length(const char* location);

/// The length of a suffix naming a compression or archive sluice does not
/// write (.lz4, .snappy, .zip, .br, .lz, .lzma, .Z, .7z, .tar), else 0: a
/// writer must not put plain bytes under it. (Not looked through to tell
/// an input's format: x.csv.tar is no CSV.)
size_t sl_unwritten_compression_suffix_length(const char* location);

/// The length of a suffix naming a tar archive, compressed or not (.tar,
/// .tar.gz and .tar with any suffix above, .tgz, .tbz2, .tbz, .txz, .tzst),
/// else 0: a writer of one table must not put it under such a name.
size_t sl_archive_suffix_length(const char* location);

/// The first bytes sl_compression_of_bytes wants to tell every kind apart
/// (bzip2's stream header and block magic).
#define SL_COMPRESSION_MAGIC_BYTES 10

/// Whether the `n` bytes (fewer than SL_COMPRESSION_MAGIC_BYTES, at least
/// one) are a strict prefix of `kind`'s magic: an object that ends there was
/// cut short within it.
int sl_compression_magic_prefix(enum sl_compression kind, const uint8_t* head, int64_t n);

/// The compression the first `n` bytes of an object start with (gzip, zstd
/// (a frame or a skippable frame), bzip2 or xz magic), or NONE.
enum sl_compression sl_compression_of_bytes(const uint8_t* head, int64_t n);

/// The name of a compression or archive sluice does not read whose magic
/// the first `n` bytes start with (zip, lz4 frame, compress's .Z, lzip,
/// 7z, framed snappy), or NULL.
const char* sl_unread_compression_of_bytes(const uint8_t* head, int64_t n);

/// The compression's name in messages ("gzip", "zstd", "bzip2", "xz").
const char* sl_compression_name(enum sl_compression kind);

/// The compression a writer option names, as pandas spells them ("gzip",
/// "gz", "zstd", "zst", "bz2", "bzip2", "xz", "none"): 0, or EINVAL.
int sl_compression_of_option(const char* name, enum sl_compression* out);

/// The file name suffix of a whole-file compression (".gz", ...; "" for none).
const char* sl_compression_suffix(enum sl_compression kind);

#endif
