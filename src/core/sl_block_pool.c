#include "sl_block_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "sl_alloc.h"
#include "sl_buffer_cache.h"

/// Free blocks kept at most (a handful are in flight at a time: the parts of
/// a readahead, the ranges of the splits being decoded).
#define POOL_SLOTS 16

struct pool_entry {
  uint8_t* data;
  size_t cap;
};

struct sl_block_pool {
  const struct sluice_allocator* alloc;
  /// One for the owner until sl_block_pool_close, one per block out.
  atomic_long refs;
  pthread_mutex_t lock;
  int closed;
  int idle;  ///< sl_block_pool_idle until the next get: blocks coming back are freed
  int n_free;
  int64_t free_bytes;
  int64_t max_bytes;
  struct pool_entry free[POOL_SLOTS];
};

struct pooled_block {
  struct sl_ref ref;  // first, so the ref pointer is the struct pointer
  struct sl_block_pool* pool;
  uint8_t* data;
  size_t cap;
};

/// Blocks from this size up are mapped from the kernel, and unmapped when
/// freed, when the pool uses the default allocator. Through malloc, the
/// 64 KiB edges of a dataset's many objects (freed after each open) left
/// holes that 64-byte-aligned requests of the same size did not fit: RSS
/// grew by ~125 KiB per object opened. A caller's allocator is always used
/// as given (tests count and fail its allocations).
#define POOL_MAP_FROM ((size_t)64 << 10)

static int maps_blocks(const struct sl_block_pool* pool, size_t size) {
#if defined(__linux__)
  return size >= POOL_MAP_FROM && sl_alloc_is_default(pool->alloc);
#else
  (void)pool;
  (void)size;
  return 0;
#endif
}

static uint8_t* block_alloc(const struct sl_block_pool* pool, size_t size) {
#if defined(__linux__)
  if (maps_blocks(pool, size)) {
    void* p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
  }
#endif
  return sl_alloc_buffer(pool->alloc, size);
}

static void block_free(const struct sl_block_pool* pool, uint8_t* data, size_t size) {
#if defined(__linux__)
  if (maps_blocks(pool, size)) {
    munmap(data, size);
    return;
  }
#endif
  sl_free_buffer(pool->alloc, data, size);
}

/// The last reference goes only after sl_block_pool_close, which emptied the
/// free list and made released blocks bypass it: nothing is left to free.
static void pool_release(struct sl_block_pool* pool) {
  if (atomic_fetch_sub_explicit(&pool->refs, 1, memory_order_acq_rel) != 1) return;
  pthread_mutex_destroy(&pool->lock);
  sl_free(pool->alloc, pool, sizeof *pool);
}

struct sl_block_pool* sl_block_pool_create(const struct sluice_allocator* alloc,
                                           int64_t max_bytes) {
  struct sl_block_pool* pool = sl_calloc(alloc, 1, sizeof *pool);
  if (pool == NULL) return NULL;
  if (pthread_mutex_init(&pool->lock, NULL) != 0) {
    sl_free(alloc, pool, sizeof *pool);
    return NULL;
  }
  pool->alloc = alloc;
  pool->max_bytes = max_bytes;
  atomic_init(&pool->refs, 1);
  return pool;
}

/// Frees the free blocks (lock held).
static void free_kept(struct sl_block_pool* pool) {
  for (int i = 0; i < pool->n_free; ++i)
    block_free(pool, pool->free[i].data, pool->free[i].cap);
  pool->n_free = 0;
  pool->free_bytes = 0;
}

void sl_block_pool_close(struct sl_block_pool* pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->lock);
  pool->closed = 1;
  free_kept(pool);
  pthread_mutex_unlock(&pool->lock);
  pool_release(pool);
}

void sl_block_pool_idle(struct sl_block_pool* pool) {
  pthread_mutex_lock(&pool->lock);
  pool->idle = 1;
  free_kept(pool);
  pthread_mutex_unlock(&pool->lock);
}

/// The last reference to a block went: back to the pool while it is open
/// and has room, else freed.
static void pooled_block_destroy(struct sl_ref* ref) {
  struct pooled_block* b = (struct pooled_block*)ref;
  struct sl_block_pool* pool = b->pool;
  pthread_mutex_lock(&pool->lock);
  int keep = !pool->closed && !pool->idle && pool->n_free < POOL_SLOTS &&
             pool->free_bytes + (int64_t)b->cap <= pool->max_bytes;
  if (keep) {
    pool->free[pool->n_free++] = (struct pool_entry){b->data, b->cap};
    pool->free_bytes += (int64_t)b->cap;
  }
  pthread_mutex_unlock(&pool->lock);
  if (!keep) block_free(pool, b->data, b->cap);
  sl_free(pool->alloc, b, sizeof *b);
  pool_release(pool);
}

struct sl_ref* sl_block_pool_get(struct sl_block_pool* pool, size_t size, uint8_t** data,
                                 int* recycled) {
  *data = NULL;
  *recycled = 0;
  if (size == 0) size = 1;
  struct pooled_block* b = sl_alloc(pool->alloc, sizeof *b);
  if (b == NULL) return NULL;
  b->data = NULL;
  pthread_mutex_lock(&pool->lock);
  pool->idle = 0;
  int best = -1;
  for (int i = 0; i < pool->n_free; ++i) {
    size_t cap = pool->free[i].cap;
    if (cap >= size && cap / 2 <= size && (best < 0 || cap < pool->free[best].cap)) best = i;
  }
  if (best >= 0) {
    b->data = pool->free[best].data;
    b->cap = pool->free[best].cap;
    pool->free_bytes -= (int64_t)b->cap;
    pool->free[best] = pool->free[--pool->n_free];
    *recycled = 1;
  }
  pthread_mutex_unlock(&pool->lock);
  if (b->data == NULL) {
    b->data = block_alloc(pool, size);
    b->cap = size;
    if (b->data == NULL) {
      sl_free(pool->alloc, b, sizeof *b);
      return NULL;
    }
  }
  sl_ref_init(&b->ref, pooled_block_destroy);
  b->pool = pool;
  atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
  *data = b->data;
  return &b->ref;
}
