// The whole-file compressions sluice reads and writes (.csv.gz, .csv.zst),
// told from a name or from the first bytes: shared by the inflating source
// (sl_source_inflate.h), the compressing sink (sl_sink_compress.h) and the
// format registry's look through compression suffixes.
#ifndef SL_COMPRESSION_H
#define SL_COMPRESSION_H

#include <stddef.h>
#include <stdint.h>

enum sl_compression { SL_COMPRESS_NONE, SL_COMPRESS_GZIP, SL_COMPRESS_ZSTD };

/// Whether name[0, len) ends with `suffix`, ASCII case ignored.
int sl_name_ends_with(const char* name, size_t len, const char* suffix);

/// The length of `location`'s name, whose suffix tells format and
/// compression: an http(s):// URL's up to its query or fragment ('?', '#');
/// a path's or an s3:// key's whole ('?' and '#' are characters there).
size_t sl_location_name_length(const char* location);

/// The compression a file name asks for by its suffix (.gz, .gzip, .zst,
/// .zstd; an http(s) URL's query or fragment ignored).
enum sl_compression sl_compression_for_name(const char* location);

/// The compression the first `n` bytes of an object start with (gzip or
/// zstd magic), or NONE.
enum sl_compression sl_compression_of_bytes(const uint8_t* head, int64_t n);

#endif
