#include "sl_buffer_cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "sl_alloc.h"

/// Blocks from this size up are cached; smaller ones go straight to the
/// base allocator (malloc keeps those mapped itself).
#define CACHE_MIN ((size_t)64 << 10)
/// Each cached-size block starts with a header holding its capacity, so the
/// block is reused by what it really holds, whatever size its free names.
/// One alignment unit keeps the data 64-byte aligned.
#define CACHE_HEADER ((size_t)SL_BUFFER_ALIGNMENT)

struct sluice_buffer_cache {
  struct sluice_allocator self;  ///< what the dataset allocates with
  const struct sluice_allocator* base;
  /// One for the owner until sl_buffer_cache_close, one per block out.
  atomic_long refs;
  pthread_mutex_t lock;
  int closed;
  int n_free;
  int max_free;
  int64_t free_bytes;
  int64_t max_bytes;
  atomic_llong reuses;
  struct free_block {
    uint8_t* block;  ///< the header's address
    size_t cap;      ///< bytes after the header
  } free[];  ///< max_free of them
};

static size_t cache_size(int max_blocks) {
  return sizeof(struct sluice_buffer_cache) + (size_t)max_blocks * sizeof(struct free_block);
}

static void cache_release(struct sluice_buffer_cache* c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_destroy(&c->lock);
  c->base->deallocate(c->base->ctx, c, cache_size(c->max_free));
}

/// A kept block of at least `size` bytes and at most a quarter more (a small
/// request does not pin a large block), most recently freed first; NULL if
/// none.
static uint8_t* take_free(struct sluice_buffer_cache* c, size_t size) {
  uint8_t* block = NULL;
  pthread_mutex_lock(&c->lock);
  for (int i = c->n_free - 1; i >= 0; --i) {
    size_t cap = c->free[i].cap;
    if (cap >= size && cap - size <= size / 4) {
      block = c->free[i].block;
      c->free_bytes -= (int64_t)cap;
      atomic_fetch_add_explicit(&c->reuses, 1, memory_order_relaxed);
      c->free[i] = c->free[--c->n_free];
      break;
    }
  }
  pthread_mutex_unlock(&c->lock);
  return block;
}

/// A request of `bytes` that no kept block fits, when what is kept and the
/// request pass half the bound: kept blocks of at least `bytes` in all are
/// freed first, from the oldest end of the list (take_free reorders it a
/// little), and the kernel gives their pages to the fresh block. Else a
/// table of another shape read after one was dropped held both (peak 3.1 GB
/// where either took 1.9). Below half the bound nothing is freed: freeing
/// on every miss emptied the cache of what the next read of the same table
/// wanted, each miss freeing the next one's block (a 4M-row struct read
/// again cost 360 ms of CPU, not 165).
static void evict(struct sluice_buffer_cache* c, size_t bytes) {
  enum { BATCH = 32 };
  struct free_block out[BATCH];
  size_t freed = 0;
  for (;;) {
    int n = 0;
    pthread_mutex_lock(&c->lock);
    if (freed == 0 && c->free_bytes + (int64_t)bytes <= c->max_bytes / 2) {
      pthread_mutex_unlock(&c->lock);
      return;
    }
    while (n < BATCH && n < c->n_free && freed < bytes) {
      out[n] = c->free[n];
      freed += out[n].cap;
      n++;
    }
    if (n > 0) {
      memmove(c->free, c->free + n, (size_t)(c->n_free - n) * sizeof *c->free);
      c->n_free -= n;
      for (int i = 0; i < n; ++i) c->free_bytes -= (int64_t)out[i].cap;
    }
    int more = freed < bytes && c->n_free > 0;
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < n; ++i) {
      c->base->deallocate(c->base->ctx, out[i].block, CACHE_HEADER + out[i].cap);
    }
    if (!more) return;
  }
}

static void* cache_allocate(void* ctx, size_t size, size_t alignment) {
  struct sluice_buffer_cache* c = ctx;
  void* out;
  if (size < CACHE_MIN || size > SIZE_MAX - CACHE_HEADER) {
    out = c->base->allocate(c->base->ctx, size, alignment);
  } else {
    uint8_t* block = take_free(c, size);
    if (block == NULL) {
      evict(c, size);
      block = c->base->allocate(c->base->ctx, CACHE_HEADER + size, SL_BUFFER_ALIGNMENT);
      if (block != NULL) *(size_t*)block = size;
    }
    out = block == NULL ? NULL : block + CACHE_HEADER;
  }
  if (out != NULL) atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
  return out;
}

static void cache_deallocate(void* ctx, void* ptr, size_t size) {
  struct sluice_buffer_cache* c = ctx;
  if (ptr == NULL) return;
  if (size < CACHE_MIN || size > SIZE_MAX - CACHE_HEADER) {
    c->base->deallocate(c->base->ctx, ptr, size);
  } else {
    uint8_t* block = (uint8_t*)ptr - CACHE_HEADER;
    size_t cap = *(const size_t*)block;
    pthread_mutex_lock(&c->lock);
    int keep = !c->closed && c->n_free < c->max_free &&
               c->free_bytes + (int64_t)cap <= c->max_bytes;
    if (keep) {
      c->free[c->n_free].block = block;
      c->free[c->n_free].cap = cap;
      c->n_free++;
      c->free_bytes += (int64_t)cap;
    }
    pthread_mutex_unlock(&c->lock);
    if (!keep) c->base->deallocate(c->base->ctx, block, CACHE_HEADER + cap);
  }
  cache_release(c);
}

struct sluice_buffer_cache* sl_buffer_cache_create(const struct sluice_allocator* base,
                                               int64_t max_bytes, int max_blocks) {
  if (base == NULL) base = sluice_default_allocator();
  if (max_blocks < 1) max_blocks = 1;
  struct sluice_buffer_cache* c = base->allocate(base->ctx, cache_size(max_blocks), _Alignof(max_align_t));
  if (c == NULL) return NULL;
  if (pthread_mutex_init(&c->lock, NULL) != 0) {
    base->deallocate(base->ctx, c, cache_size(max_blocks));
    return NULL;
  }
  c->max_free = max_blocks;
  c->self = (struct sluice_allocator){cache_allocate, cache_deallocate, c};
  c->base = base;
  atomic_init(&c->refs, 1);
  c->closed = 0;
  c->n_free = 0;
  c->free_bytes = 0;
  c->max_bytes = max_bytes;
  atomic_init(&c->reuses, 0);
  return c;
}

const struct sluice_allocator* sl_buffer_cache_allocator(struct sluice_buffer_cache* cache) {
  return &cache->self;
}

/// Frees the free blocks, one at a time outside the lock (other threads
/// may be keeping and taking blocks meanwhile); `closing` also sends the
/// blocks coming back later to the base allocator. Returns the bytes freed.
static int64_t free_kept(struct sluice_buffer_cache* cache, int closing) {
  int64_t bytes = 0;
  pthread_mutex_lock(&cache->lock);
  if (closing) cache->closed = 1;
  while (cache->n_free > 0) {
    struct free_block kept = cache->free[--cache->n_free];
    cache->free_bytes -= (int64_t)kept.cap;
    pthread_mutex_unlock(&cache->lock);
    cache->base->deallocate(cache->base->ctx, kept.block, CACHE_HEADER + kept.cap);
    bytes += (int64_t)kept.cap;
    pthread_mutex_lock(&cache->lock);
  }
  pthread_mutex_unlock(&cache->lock);
  return bytes;
}

void sluice_buffer_cache_after_fork(struct sluice_buffer_cache* cache) {
  if (cache == NULL) return;
  // One thread now: nothing else can hold or take the lock.
  (void)pthread_mutex_init(&cache->lock, NULL);
  free_kept(cache, 0);
}

void sl_buffer_cache_close(struct sluice_buffer_cache* cache) {
  if (cache == NULL) return;
  free_kept(cache, 1);
  cache_release(cache);
}

int64_t sl_buffer_cache_reuses(struct sluice_buffer_cache* cache) {
  return (int64_t)atomic_load_explicit(&cache->reuses, memory_order_relaxed);
}

int sl_alloc_is_default(const struct sluice_allocator* alloc) {
  if (alloc == NULL || alloc == sluice_default_allocator()) return 1;
  if (alloc->allocate != cache_allocate) return 0;
  const struct sluice_buffer_cache* c = alloc->ctx;
  return c->base == sluice_default_allocator();
}

/* ---- The public face: one cache shared by handles ------------------------ */

struct sluice_buffer_cache* sluice_buffer_cache_create(int64_t max_bytes) {
  if (max_bytes < 0) return NULL;
  // Room for as many blocks as max_bytes holds of the smallest kept size,
  // within bounds (a slot is 16 bytes; a table freed whole is thousands of
  // blocks).
  int64_t slots = max_bytes / (int64_t)CACHE_MIN;
  return sl_buffer_cache_create(NULL, max_bytes,
                                slots < 64 ? 64 : slots > 16384 ? 16384 : (int)slots);
}

const struct sluice_allocator* sluice_buffer_cache_allocator(struct sluice_buffer_cache* cache) {
  return cache == NULL ? NULL : sl_buffer_cache_allocator(cache);
}

int64_t sluice_buffer_cache_release_unused(struct sluice_buffer_cache* cache) {
  return cache == NULL ? 0 : free_kept(cache, 0);
}

void sluice_buffer_cache_close(struct sluice_buffer_cache* cache) { sl_buffer_cache_close(cache); }
