// Easy handles shared by the sources of one dataset: see sl_http_pool.h.
#include "sl_http_pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"

/// Handles kept idle. A dataset of many objects opens 8 at a time, each with
/// up to 4 readahead transfers; handles beyond this are closed when returned.
#define HTTP_POOL_KEEP 40

struct sl_http_pool {
  const struct sluice_allocator* alloc;
  atomic_int refs;
  struct sl_curl curl;
  pthread_mutex_t lock;
  CURL* idle[HTTP_POOL_KEEP];
  int n_idle;
  atomic_llong cache_left;  ///< whole-object bytes that may still be held
};

int sl_http_pool_create(const struct sluice_allocator* alloc, const char* what,
                        int64_t cache_bytes, struct sl_http_pool** out,
                        struct sluice_error* error) {
  *out = NULL;
  struct sl_http_pool* pool = sl_calloc(alloc, 1, sizeof *pool);
  if (pool == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", what);
  int rc = sl_curl_open(&pool->curl, what, error);
  if (rc != 0) {
    sl_free(alloc, pool, sizeof *pool);
    return rc;
  }
  pool->alloc = alloc;
  atomic_init(&pool->refs, 1);
  atomic_init(&pool->cache_left, cache_bytes > 0 ? cache_bytes : 0);
  pthread_mutex_init(&pool->lock, NULL);
  *out = pool;
  return 0;
}

void sl_http_pool_retain(struct sl_http_pool* pool) {
  atomic_fetch_add_explicit(&pool->refs, 1, memory_order_relaxed);
}

void sl_http_pool_release(struct sl_http_pool* pool) {
  if (pool == NULL || atomic_fetch_sub_explicit(&pool->refs, 1, memory_order_acq_rel) != 1) return;
  for (int i = 0; i < pool->n_idle; ++i) pool->curl.easy_cleanup(pool->idle[i]);
  pthread_mutex_destroy(&pool->lock);
  sl_curl_close(&pool->curl);
  sl_free(pool->alloc, pool, sizeof *pool);
}

CURL* sl_http_pool_get(struct sl_http_pool* pool) {
  CURL* h = NULL;
  pthread_mutex_lock(&pool->lock);
  if (pool->n_idle > 0) h = pool->idle[--pool->n_idle];
  pthread_mutex_unlock(&pool->lock);
  return h != NULL ? h : pool->curl.easy_init();
}

void sl_http_pool_put(struct sl_http_pool* pool, CURL* h) {
  if (h == NULL) return;
  pthread_mutex_lock(&pool->lock);
  if (pool->n_idle < HTTP_POOL_KEEP) {
    pool->idle[pool->n_idle++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&pool->lock);
  if (h != NULL) pool->curl.easy_cleanup(h);
}

const struct sl_curl* sl_http_pool_curl(const struct sl_http_pool* pool) { return &pool->curl; }

int sl_http_pool_cache_take(struct sl_http_pool* pool, int64_t bytes) {
  long long left = atomic_load(&pool->cache_left);
  while (left >= bytes) {
    if (atomic_compare_exchange_weak(&pool->cache_left, &left, left - bytes)) return 1;
  }
  return 0;
}

void sl_http_pool_cache_give(struct sl_http_pool* pool, int64_t bytes) {
  atomic_fetch_add(&pool->cache_left, bytes);
}
