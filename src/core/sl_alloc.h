// The single allocation path. Everything goes through a struct
// sluice_allocator so that tests can count bytes and inject failures.
#ifndef SL_ALLOC_H
#define SL_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/// Alignment of every buffer handed out in an ArrowArray (Arrow recommends 64).
#define SL_BUFFER_ALIGNMENT 64

/// `alloc` may be NULL (= default allocator). Returns NULL on failure or when
/// size == 0 would overflow; size 0 is rounded up to 1.
void* sl_alloc(const struct sluice_allocator* alloc, size_t size);
/// Same, but 64-byte aligned and the padding bytes up to a multiple of 64 are
/// allocated too (so SIMD may read whole 64-byte blocks).
void* sl_alloc_buffer(const struct sluice_allocator* alloc, size_t size);
/// Zero-filled sl_alloc.
void* sl_calloc(const struct sluice_allocator* alloc, size_t count, size_t size);
/// Frees `ptr` (NULL is fine); `size` must be the size passed to sl_alloc /
/// sl_alloc_buffer.
void sl_free(const struct sluice_allocator* alloc, void* ptr, size_t size);
void sl_free_buffer(const struct sluice_allocator* alloc, void* ptr, size_t size);
/// Grows (or shrinks) a block from sl_alloc_buffer, copying min(old,new) bytes.
/// On failure returns NULL and leaves `ptr` untouched.
/// The size from which the default allocator maps blocks itself and unmaps
/// them when freed (0: never, as under AddressSanitizer).
size_t sl_alloc_direct_min(void);
/// A hint that the caller is about to write all of [ptr, ptr + size): maps
/// those pages in one call instead of one page fault each. A no-op for small
/// ranges and where the kernel lacks MADV_POPULATE_WRITE.
void sl_prefault(void* ptr, size_t size);
void* sl_realloc_buffer(const struct sluice_allocator* alloc, void* ptr, size_t old_size,
                        size_t new_size);
/// strdup through the allocator; free with sl_free(alloc, p, strlen(p) + 1).
char* sl_strdup(const struct sluice_allocator* alloc, const char* s);
char* sl_strndup(const struct sluice_allocator* alloc, const char* s, size_t n);

/// Grows a heap array of `elem`-byte items (from sl_alloc, `*cap` items; NULL
/// with cap 0 to start) so it holds at least `need` items, doubling from 16.
/// Existing items are kept. 0, ENOMEM or ERANGE (size overflow); on failure
/// the array is untouched.
int sl_grow_array(const struct sluice_allocator* alloc, void** items, int64_t* cap, int64_t need,
                  size_t elem);

/// Overflow-checked size arithmetic: return 0 on success, ERANGE on overflow.
int sl_mul_size(size_t a, size_t b, size_t* out);
int sl_add_size(size_t a, size_t b, size_t* out);

#endif
