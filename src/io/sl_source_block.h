// The block a forward-only source reads into: views of its unconsumed bytes
// are handed out without copying; a read that needs more contiguous bytes
// than the block has left moves the unconsumed tail into a new block (views
// of the old one keep it alive). Shared by descriptors (sl_source_file.c)
// and inflated streams (sl_source_inflate.c), which differ only in how the
// block is filled.
#ifndef SL_SOURCE_BLOCK_H
#define SL_SOURCE_BLOCK_H

#include <stdint.h>

#include "sl_source.h"

/// Blocks are at least this large, so that small reads share one
/// allocation and one fill.
#define SL_STREAM_CHUNK ((int64_t)1 << 20)

struct sl_source_block {
  struct sl_ref* ref;  ///< our reference on `data` (views add theirs)
  uint8_t* data;
  int64_t cap;
  int64_t start;  ///< first unconsumed byte
  int64_t end;    ///< bytes filled
};

/// Makes data[start, cap) hold at least `need` bytes (moving the unconsumed
/// bytes to a new block when it does not). ENOMEM naming `name`.
int sl_source_block_room(struct sl_source_block* b, int64_t need,
                         const struct sluice_allocator* alloc, const char* name,
                         struct sluice_error* error);

/// A view of up to `length` unconsumed bytes (fewer when fewer are filled),
/// consumed when `consume`. Returns the view's size.
int64_t sl_source_block_view(struct sl_source_block* b, int64_t length, int consume,
                             struct sl_view* out);

void sl_source_block_free(struct sl_source_block* b);

#endif
