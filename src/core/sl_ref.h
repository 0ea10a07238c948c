// Reference-counted owners of memory that arrays point into without copying:
// an mmap'd file, a decompressed message body, a network buffer. An array that
// holds a view retains the owner and releases it in its release callback.
#ifndef SL_REF_H
#define SL_REF_H

#include <stdatomic.h>
#include <stddef.h>

#include "sluice.h"

struct sl_ref {
  atomic_long count;
  /// Called once when the count drops to zero; frees the owner (and the
  /// struct sl_ref itself, which is usually embedded in it).
  void (*destroy)(struct sl_ref* ref);
};

/// Sets count to 1 and the destroy callback.
void sl_ref_init(struct sl_ref* ref, void (*destroy)(struct sl_ref*));
/// NULL-safe. Returns `ref`.
struct sl_ref* sl_ref_retain(struct sl_ref* ref);
/// NULL-safe; destroys on the last release.
void sl_ref_release(struct sl_ref* ref);

/// A heap block (from sl_alloc_buffer) owned by a ref: the block is freed with
/// `alloc` when the last reference goes. Returns NULL on allocation failure
/// (the block is then NOT freed; the caller still owns it).
struct sl_ref* sl_ref_wrap_buffer(const struct sluice_allocator* alloc, void* data,
                                  size_t size);

#endif
