// gzip inflation over zlib, on the sluice allocator: one or more gzip members
// back to back (as `cat a.gz b.gz` makes them, and as some writers emit
// pages), decoded into output the caller provides piece by piece. The caller
// keeps the positions and chooses how to grow (or not) its output.
#ifndef SL_GZIP_H
#define SL_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "sluice.h"

/// Which headers the stream accepts.
enum sl_gzip_header {
  SL_GZIP_ONLY,     ///< gzip members only
  SL_GZIP_OR_ZLIB,  ///< gzip or zlib, detected from the first bytes
};

struct sl_gzip {
  z_stream z;
  bool started;
};

enum sl_gzip_status {
  SL_GZIP_END,        ///< all input consumed and its last member complete
  SL_GZIP_OUT_FULL,   ///< the output room is used up: call again with more
  SL_GZIP_TRUNCATED,  ///< the input ended inside a member
  SL_GZIP_CORRUPT,    ///< bad data; sl_gzip_message() says why
  SL_GZIP_NOMEM,      ///< zlib's allocation failed
};

/// Starts `g` (zeroed, or ended) for a new input, or resets it when already
/// started so that one state serves many inputs. 0, ENOMEM, or EINVAL (zlib
/// refuses; *zlib_code, if not NULL, gets its code).
int sl_gzip_start(struct sl_gzip* g, const struct sluice_allocator* alloc,
                  enum sl_gzip_header header, int* zlib_code);
/// Frees zlib's state (safe on a never-started, zeroed `g`).
void sl_gzip_end(struct sl_gzip* g);

/// Inflates from in[0, n) into out[0, room), through member boundaries, until
/// it can go no further; *in_used and *out_made get how far it went.
enum sl_gzip_status sl_gzip_inflate(struct sl_gzip* g, const uint8_t* in, size_t n,
                                    size_t* in_used, uint8_t* out, size_t room,
                                    size_t* out_made);

/// Why the last sl_gzip_inflate said SL_GZIP_CORRUPT (never NULL).
const char* sl_gzip_message(const struct sl_gzip* g);

#endif
