// A dataset's cache of freed column buffers. Decoders fill batches of about
// the same size one after another, and a streaming consumer frees each batch
// soon after it arrives; through malloc those buffers go back to the kernel
// (glibc maps and unmaps blocks from 128 KiB up, and trims its heaps), so
// every batch faults its pages in afresh. Fresh pages are the dearest part
// of a load on many machines (on the benchmark VM a fault costs ~2.5 us, and
// faults were a third of the CPU time of a CSV read into pandas). The cache
// keeps freed blocks of 64 KiB and more, up to a bound, and hands them out
// again: recycled pages are mapped already.
//
// It wraps the default allocator only: a caller's allocator is used as
// given (tests count and fail its allocations). Blocks may outlive the
// dataset (a consumer holds its batches): the cache lives until it is closed
// and the last block it handed out is freed.
#ifndef SL_BUFFER_CACHE_H
#define SL_BUFFER_CACHE_H

#include <stdint.h>

#include "sluice.h"

struct sluice_buffer_cache;

/// A cache over `base` keeping at most `max_blocks` free blocks of at most
/// `max_bytes` in all. NULL when out of memory.
struct sluice_buffer_cache* sl_buffer_cache_create(const struct sluice_allocator* base,
                                               int64_t max_bytes, int max_blocks);

/// The allocator to use instead of `base`: its blocks of 64 KiB and more
/// come from the cache and return to it. Valid until the cache is gone.
const struct sluice_allocator* sl_buffer_cache_allocator(struct sluice_buffer_cache* cache);

/// Frees the free blocks and lets go of the cache: blocks still out go to
/// the base allocator when freed, and the last of them frees the cache.
/// NULL-safe.
void sl_buffer_cache_close(struct sluice_buffer_cache* cache);

/// How many blocks were handed out again (for tests and diagnostics).
int64_t sl_buffer_cache_reuses(struct sluice_buffer_cache* cache);

/// Non-zero when `alloc` is the default allocator or a cache over it (the
/// block pool maps its large blocks itself then).
int sl_alloc_is_default(const struct sluice_allocator* alloc);

#endif
