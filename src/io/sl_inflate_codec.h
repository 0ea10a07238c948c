// The bzip2 and xz decoders of the inflating source (sl_source_inflate.c),
// a file each, behind one small interface: the source feeds them the
// compressed bytes it reads and keeps the offsets its messages name.
#ifndef SL_INFLATE_CODEC_H
#define SL_INFLATE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/// What one step did.
struct sl_inflate_step {
  size_t used;       ///< compressed bytes taken
  size_t made;       ///< inflated bytes written
  int ended;         ///< the input ended (`finish`) and its last stream is complete
  const char* what;  ///< on EILSEQ: "corrupt bzip2 data", "truncated xz data", ...
  const char* why;   ///< ... and the library's reason
};

struct sl_inflate_codec {
  /// A decoder's state through `alloc` (libbz2's and liblzma's own
  /// allocations too), or NULL when out of memory.
  void* (*create)(const struct sluice_allocator* alloc);
  /// Ready for the object's first byte: 0 or ENOMEM.
  int (*reset)(void* state);
  /// Inflates from in[0, in_left) into out[0, room); `finish`: no input
  /// follows these bytes. 0; EILSEQ for data that does not inflate (`what`
  /// and `why` set; truncated data among it); ENOMEM.
  int (*step)(void* state, const uint8_t* in, size_t in_left, int finish, uint8_t* out,
              size_t room, struct sl_inflate_step* step);
  void (*destroy)(void* state);
};

/// Any number of bzip2 streams back to back (`cat a.bz2 b.bz2`, pbzip2).
extern const struct sl_inflate_codec sl_inflate_bzip2;
/// Any number of xz streams back to back, with stream padding between.
extern const struct sl_inflate_codec sl_inflate_xz;

#endif
