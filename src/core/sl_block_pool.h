// A pool of read buffers handed out as reference-counted blocks: when a
// block's last reference goes, its memory returns to the pool for the next
// read instead of to the system. Fresh memory costs a page fault and the
// zeroing of each 4 KiB page on first write (a third of the CPU time of a
// CSV read over S3, whose 32 MiB ranges were each fresh); recycled memory
// is mapped already.
//
// Blocks may outlive the pool's owner (arrays keep views into them): the
// pool lives until it is closed and its last block is released.
#ifndef SL_BLOCK_POOL_H
#define SL_BLOCK_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "sl_ref.h"
#include "sluice.h"

struct sl_block_pool;

/// A pool that keeps at most `max_bytes` of free blocks. NULL on failure.
struct sl_block_pool* sl_block_pool_create(const struct sluice_allocator* alloc,
                                           int64_t max_bytes);

/// Frees the free blocks and lets go of the pool: blocks still out are freed
/// (not kept) when released. NULL-safe.
void sl_block_pool_close(struct sl_block_pool* pool);

/// The owner will not read for a while (a dataset's object that was read
/// to the end): the free blocks are freed, and so are blocks coming back,
/// until the next sl_block_pool_get.
void sl_block_pool_idle(struct sl_block_pool* pool);

/// A block of at least `size` bytes, owned by the returned ref (one
/// reference), its memory at *data. A free block is reused when one is large
/// enough and at most twice the size (a small read does not pin a large
/// block); *recycled is then 1 (its pages are mapped). NULL when out of
/// memory.
struct sl_ref* sl_block_pool_get(struct sl_block_pool* pool, size_t size, uint8_t** data,
                                 int* recycled);

#endif
