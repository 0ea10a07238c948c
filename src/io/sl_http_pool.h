// libcurl easy handles shared by the HTTP(S) and S3 sources of one dataset.
//
// An easy handle keeps the connections it opened alive, so a handle taken
// back from the pool by the next object's request reuses its connection (and
// TLS session) instead of opening a new one: reading a prefix of 200 small
// objects opened 201 connections before, one per object. libcurl's own
// shared connection cache (CURLSH with CURL_LOCK_DATA_CONNECT) is not safe
// across threads (libcurl known bug 11.11); a handle used by one thread at a
// time is.
//
// The pool is reference counted: the dataset creates it for its open, each
// source holds a reference while it lives, and the last release closes the
// handles and their connections.
//
// It also keeps the byte budget for small objects held whole in memory
// (sl_source_http.c): a dataset opens all its objects before it scans them,
// so without a bound a prefix of many small objects would be held whole at
// once.
#ifndef SL_HTTP_POOL_H
#define SL_HTTP_POOL_H

#include <curl/curl.h>

#include "sl_curl.h"
#include "sluice.h"

struct sl_http_pool;

/// A pool with no handles yet (libcurl is loaded now) and `cache_bytes` for
/// whole small objects. `what` names the location for the error when
/// libcurl is missing.
int sl_http_pool_create(const struct sluice_allocator* alloc, const char* what,
                        int64_t cache_bytes, struct sl_http_pool** out,
                        struct sluice_error* error);
void sl_http_pool_retain(struct sl_http_pool* pool);
/// Drops a reference; NULL is fine.
void sl_http_pool_release(struct sl_http_pool* pool);

/// A handle for one thread's requests: a pooled one (its options are for the
/// caller to reset) or a new one; NULL when out of memory.
CURL* sl_http_pool_get(struct sl_http_pool* pool);
/// Returns `h` to the pool (or closes it when the pool is full); NULL is fine.
void sl_http_pool_put(struct sl_http_pool* pool, CURL* h);

/// The libcurl functions, loaded by the pool, for its handles' users.
const struct sl_curl* sl_http_pool_curl(const struct sl_http_pool* pool);

/// Reserves `bytes` of the whole-object budget: 1, or 0 when they do not fit.
int sl_http_pool_cache_take(struct sl_http_pool* pool, int64_t bytes);
/// Gives back a reservation.
void sl_http_pool_cache_give(struct sl_http_pool* pool, int64_t bytes);

#endif
