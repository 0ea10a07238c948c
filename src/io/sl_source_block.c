#include "sl_source_block.h"

#include <errno.h>
#include <string.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"


int sl_source_block_room(struct sl_source_block* b, int64_t need,
                         const struct sluice_allocator* alloc, const char* name,
                         struct sluice_error* error) {
  if (b->cap - b->start >= need) return 0;
  int64_t cap = need > SL_STREAM_CHUNK ? need : SL_STREAM_CHUNK;
  uint8_t* block = sl_alloc_buffer(alloc, (size_t)cap);
  if (block == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory for a %lld-byte read buffer", name,
                        (long long)cap);
  }
  struct sl_ref* ref = sl_ref_wrap_buffer(alloc, block, (size_t)cap);
  if (ref == NULL) {
    sl_free_buffer(alloc, block, (size_t)cap);
    return sl_error_set(error, ENOMEM, "%s: out of memory for a read buffer", name);
  }
  int64_t kept = b->end - b->start;
  if (kept > 0) memcpy(block, b->data + b->start, (size_t)kept);
  sl_ref_release(b->ref);
  b->ref = ref;
  b->data = block;
  b->cap = cap;
  b->start = 0;
  b->end = kept;
  return 0;
}

int64_t sl_source_block_view(struct sl_source_block* b, int64_t length, int consume,
                             struct sl_view* out) {
  int64_t avail = b->end - b->start;
  int64_t n = length < avail ? length : avail;
  out->owner = NULL;
  out->size = n > 0 ? n : 0;
  if (n <= 0) {
    out->data = sl_empty_bytes;
    return 0;
  }
  out->data = b->data + b->start;
  out->owner = sl_ref_retain(b->ref);
  if (consume) b->start += n;
  // A block grown for a large peek (a CSV reader's sample grown for a long
  // first row) goes once read: the view keeps its bytes, and the next fill
  // makes a block of the usual size.
  if (b->start == b->end && b->cap > 4 * SL_STREAM_CHUNK) sl_source_block_free(b);
  return n;
}

void sl_source_block_free(struct sl_source_block* b) {
  sl_ref_release(b->ref);
  memset(b, 0, sizeof *b);
}
