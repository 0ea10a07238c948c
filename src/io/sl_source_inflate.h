// Compressed input read as a stream: a forward-only source of the inflated
// bytes of a gzip (any number of members back to back), zstd (any number of
// frames), bzip2 or xz (any number of streams) object, over any other
// source, in bounded memory: one view of the compressed bytes and one block
// of inflated ones at a time. bzip2 and xz decode in sl_inflate_codec.h.
#ifndef SL_SOURCE_INFLATE_H
#define SL_SOURCE_INFLATE_H

#include <stdint.h>

#include "sl_compression.h"
#include "sl_source.h"

/// A forward-only source (read_next, read_some, peek) of the inflated bytes
/// of `compressed`, which is `kind` (not NONE: what
/// sl_compression_of_bytes said of its first bytes). `compressed` is
/// borrowed: it must outlive the new source, which does not close it.
/// Errors in the data name the object and the compressed byte offset.
int sl_source_inflate_open(struct sl_source* compressed, enum sl_compression kind,
                           struct sl_source** out, struct sluice_error* error);

/// As sl_source_inflate_open, and the new source owns `compressed`: it
/// closes it (also when this fails). An HTTP body sent with a
/// Content-Encoding is decoded so.
int sl_source_inflate_adopt(struct sl_source* compressed, enum sl_compression kind,
                            struct sl_source** out, struct sluice_error* error);

/// Whether `source` is an inflating source nothing was read from yet
/// (peeks aside): sl_source_untouched's answer for it.
int sl_source_inflate_untouched(const struct sl_source* source);

/// Whether the inflated stream can start again from its first byte (the
/// compressed object has ranged reads of memory already there: a file).
int sl_source_inflate_rewindable(const struct sl_source* inflated);

/// Starts the inflated stream again from its first byte, for a second scan.
/// ENOTSUP unless rewindable. Views handed out before stay valid.
int sl_source_inflate_rewind(struct sl_source* inflated, struct sluice_error* error);

/// The error the compressed data gave as far as it was inflated ahead of
/// the reader (waiting for the inflating thread to get there), or 0. Bytes
/// that do not parse may be what corrupt data inflated to before its check
/// failed (bzip2 checks a block's CRC after handing out its bytes, gzip a
/// member's at its end): this error then says what is wrong.
int sl_source_inflate_failure(struct sl_source* inflated, struct sluice_error* error);

/// What `source`'s first bytes say it is compressed with: *kind (NONE for
/// plain bytes), and *unread, the name of a compression sluice does not
/// read (lz4, snappy, ...) or NULL. Peeks; reads nothing away.
int sl_source_compression(struct sl_source* source, enum sl_compression* kind,
                          const char** unread, struct sluice_error* error);

/// For a reader of text or frames that inflates its input: when `*source`'s
/// first bytes are gzip, zstd, bzip2 or xz, *inflated becomes the inflating
/// source (owned by the caller) and *source points to it; plain bytes leave
/// both as they are; a compression sluice does not read is ENOTSUP, named.
/// Plain bytes under a name that says compressed (`name`, x.csv.gz) are
/// read as they are (misnamed, or decoded by the server), unless they end
/// within that compression's magic (EIO, "truncated") or, for a reader of
/// `text`, their first bytes are binary (EINVAL, "named .gz but not gzip
/// data": a damaged header).
int sl_source_inflate_if_compressed(struct sl_source** source, struct sl_source** inflated,
                                    const char* name, int text, struct sluice_error* error);

/// `rc`, a reader's failure on `inflated` (NULL: plain input), or the
/// decompressor's own error when it has one (sl_source_inflate_failure):
/// that names the object's real fault.
int sl_source_inflate_failure_first(struct sl_source* inflated, int rc,
                                    struct sluice_error* error);

#endif
