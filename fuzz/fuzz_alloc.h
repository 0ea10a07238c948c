// The allocator every fuzz target uses: a cap on single allocations so that
// a forged length is an ENOMEM the reader must handle, not an OOM kill of the
// fuzzer.
#ifndef SLUICE_FUZZ_ALLOC_H
#define SLUICE_FUZZ_ALLOC_H

#include <stddef.h>
#include <stdlib.h>

#include "sluice.h"

#define FUZZ_MAX_ALLOC (64u << 20)

static inline void* fuzz_allocate(void* ctx, size_t size, size_t alignment) {
  (void)ctx;
  if (size > FUZZ_MAX_ALLOC) return NULL;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  return aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
}

static inline void fuzz_deallocate(void* ctx, void* ptr, size_t size) {
  (void)ctx;
  (void)size;
  free(ptr);
}

#endif
