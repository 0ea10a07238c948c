#include "sl_alloc.h"

#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define ERANGE_CODE ERANGE

// Blocks from DIRECT_MIN up are mapped and unmapped by the allocator itself,
// not by malloc. glibc keeps freed blocks in the arena of the thread that
// made them (a decoding worker) and, once one such block has been freed,
// raises its mmap threshold to that size, so that the freed batches of a
// streaming scan stayed resident, arena by arena: with 8 threads and a
// 16 MB budget, 400-800 MB. Unmapped at once, the memory a scan holds is
// what its budget counts plus the dataset's buffer cache (a quarter of it),
// which recycles blocks without the kernel. A header before the data keeps
// the mapping's length, so a block is unmapped whole whatever size its free
// names (both sides only have to agree that it is DIRECT_MIN or more).
// Under AddressSanitizer every block goes through malloc, which it checks.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define SL_ASAN 1
#endif
#if defined(__linux__) && !defined(SL_ASAN)
#define DIRECT_MIN ((size_t)256 << 10)
#define DIRECT_HEADER ((size_t)SL_BUFFER_ALIGNMENT)
#endif

size_t sl_alloc_direct_min(void) {
#if defined(DIRECT_MIN)
  return DIRECT_MIN;
#else
  return 0;
#endif
}

static void* default_allocate(void* ctx, size_t size, size_t alignment) {
  (void)ctx;
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
#if defined(DIRECT_MIN)
  if (size >= DIRECT_MIN) {
    size_t page = 4096;
    size_t length = (size + DIRECT_HEADER + page - 1) & ~(page - 1);
    if (length < size) return NULL;
    void* block = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return NULL;
    *(size_t*)block = length;
    return (uint8_t*)block + DIRECT_HEADER;  // page + 64: aligned for any `alignment` <= 64
  }
#endif
  // aligned_alloc wants a size that is a multiple of the alignment.
  size_t rounded = (size + alignment - 1) & ~(alignment - 1);
  if (rounded < size) return NULL;
  return aligned_alloc(alignment, rounded);
}

static void default_deallocate(void* ctx, void* ptr, size_t size) {
  (void)ctx;
#if defined(DIRECT_MIN)
  if (size >= DIRECT_MIN) {
    uint8_t* block = (uint8_t*)ptr - DIRECT_HEADER;
    munmap(block, *(size_t*)(void*)block);
    return;
  }
#else
  (void)size;
#endif
  free(ptr);
}

static const struct sluice_allocator default_allocator = {default_allocate, default_deallocate,
                                                          NULL};

const struct sluice_allocator* sluice_default_allocator(void) { return &default_allocator; }

static const struct sluice_allocator* resolve(const struct sluice_allocator* alloc) {
  return alloc != NULL ? alloc : &default_allocator;
}

void* sl_alloc(const struct sluice_allocator* alloc, size_t size) {
  alloc = resolve(alloc);
  if (size == 0) size = 1;
  return alloc->allocate(alloc->ctx, size, 16);
}

// Buffers are padded to a multiple of 64 so that vectorised loops may touch
// whole cache lines past the logical end without leaving the allocation.
static size_t padded(size_t size) {
  if (size == 0) size = 1;
  size_t p = (size + SL_BUFFER_ALIGNMENT - 1) & ~(size_t)(SL_BUFFER_ALIGNMENT - 1);
  return p < size ? 0 : p;
}

void* sl_alloc_buffer(const struct sluice_allocator* alloc, size_t size) {
  alloc = resolve(alloc);
  size_t p = padded(size);
  if (p == 0) return NULL;
  return alloc->allocate(alloc->ctx, p, SL_BUFFER_ALIGNMENT);
}

void* sl_calloc(const struct sluice_allocator* alloc, size_t count, size_t size) {
  size_t total;
  if (sl_mul_size(count, size, &total) != 0) return NULL;
  void* p = sl_alloc(alloc, total);
  if (p != NULL) memset(p, 0, total == 0 ? 1 : total);
  return p;
}

void sl_free(const struct sluice_allocator* alloc, void* ptr, size_t size) {
  if (ptr == NULL) return;
  alloc = resolve(alloc);
  alloc->deallocate(alloc->ctx, ptr, size == 0 ? 1 : size);
}

void sl_free_buffer(const struct sluice_allocator* alloc, void* ptr, size_t size) {
  if (ptr == NULL) return;
  alloc = resolve(alloc);
  alloc->deallocate(alloc->ctx, ptr, padded(size));
}

// Fresh memory costs one page fault per 4 KiB on first write; asking the
// kernel to map a range that is about to be written in one call costs about
// 40% less (measured on W1 loads, where output page faults were a third of
// the CPU time). From 32 KiB up: an Avro row of 16,000 doubles (125 KiB)
// was under the earlier 128 KiB floor and faulted page by page (W2 load:
// 0.20 -> 0.155 s with it mapped). The value is Linux's, for C libraries
// older than 5.14.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
void sl_prefault(void* ptr, size_t size) {
#if defined(__linux__)
  if (ptr == NULL || size < ((size_t)32 << 10)) return;
  uintptr_t page = 4096;
  uintptr_t start = ((uintptr_t)ptr + page - 1) & ~(page - 1);
  uintptr_t end = ((uintptr_t)ptr + size) & ~(page - 1);
  if (end <= start) return;
  // Recycled memory (a dataset's buffer cache, malloc's free lists) is mapped
  // already, and populating it again walks every page for nothing (7% of a
  // streamed Avro read). A range whose first and last pages are resident is
  // taken as mapped: at worst some pages then fault one by one.
  unsigned char first = 0, last = 0;
  if (mincore((void*)start, page, &first) == 0 && (first & 1) &&
      mincore((void*)(end - page), page, &last) == 0 && (last & 1)) {
    return;
  }
  // Failure (an old kernel, memory that is not plain anonymous memory) only
  // means the pages fault in one by one as before.
  (void)madvise((void*)start, end - start, MADV_POPULATE_WRITE);
#else
  (void)ptr;
  (void)size;
#endif
}

void* sl_realloc_buffer(const struct sluice_allocator* alloc, void* ptr, size_t old_size,
                        size_t new_size) {
  void* fresh = sl_alloc_buffer(alloc, new_size);
  if (fresh == NULL) return NULL;
  if (ptr != NULL) {
    memcpy(fresh, ptr, old_size < new_size ? old_size : new_size);
    sl_free_buffer(alloc, ptr, old_size);
  }
  return fresh;
}

char* sl_strndup(const struct sluice_allocator* alloc, const char* s, size_t n) {
  char* out = sl_alloc(alloc, n + 1);
  if (out == NULL) return NULL;
  if (n > 0) memcpy(out, s, n);  // (s may be NULL when n is 0: an empty text)
  out[n] = '\0';
  return out;
}

char* sl_strdup(const struct sluice_allocator* alloc, const char* s) {
  return sl_strndup(alloc, s, strlen(s));
}

int sl_mul_size(size_t a, size_t b, size_t* out) {
  if (b != 0 && a > SIZE_MAX / b) return ERANGE_CODE;
  *out = a * b;
  return 0;
}

int sl_add_size(size_t a, size_t b, size_t* out) {
  if (a > SIZE_MAX - b) return ERANGE_CODE;
  *out = a + b;
  return 0;
}

int sl_grow_array(const struct sluice_allocator* alloc, void** items, int64_t* cap, int64_t need,
                  size_t elem) {
  if (need <= *cap) return 0;
  int64_t n = *cap > 0 ? *cap : 16;
  while (n < need) {
    if (n > INT64_MAX / 2) return ERANGE_CODE;
    n *= 2;
  }
  size_t bytes;
  if (sl_mul_size((size_t)n, elem, &bytes) != 0) return ERANGE_CODE;
  void* fresh = sl_alloc(alloc, bytes);
  if (fresh == NULL) return ENOMEM;
  if (*items != NULL) {
    memcpy(fresh, *items, (size_t)*cap * elem);
    sl_free(alloc, *items, (size_t)*cap * elem);
  }
  *items = fresh;
  *cap = n;
  return 0;
}
