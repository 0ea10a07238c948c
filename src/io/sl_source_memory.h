// A source over bytes the caller already holds in memory (a file's contents
// in a Python bytes object, a buffer received over a socket): read in place,
// as a mapped file is.
#ifndef SL_SOURCE_MEMORY_H
#define SL_SOURCE_MEMORY_H

#include <stddef.h>

#include "sl_source.h"

/// A ranged source over `size` bytes at `data`. Views point into them; when
/// the source is closed and the last view released, `release(release_ctx)`
/// is called (NULL = none), from whichever thread lets go last. On failure
/// `release` has been called before this returns: the bytes are the
/// source's from the call on. `name` is what messages call the bytes.
int sl_memory_source_open(const void* data, size_t size, void (*release)(void*),
                          void* release_ctx, const char* name,
                          const struct sluice_allocator* alloc, struct sl_source** out,
                          struct sluice_error* error);

#endif
