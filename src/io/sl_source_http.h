// HTTP(S) sources through libcurl.
//
// Opening sends one ranged GET of the first 64 KiB: the 206's Content-Range
// gives the size, its ETag the version, and the bytes serve later reads
// there. An object of at most 256 KiB is then fetched whole by one more GET
// (by the opening GET itself when a listing gave its size) and read from
// memory. A server that ignores Range answers with a 200, which gives the
// size (its Content-Length) and version, and is read as one stream; one
// that answers oddly (a 206 without a total) is then asked by HEAD for the
// size, the ETag and Accept-Ranges (a HEAD refused with 405 or 501: one
// stream of unknown size).
// - Ranged reads (read_at, for formats with footers) are ranged GETs with
//   If-Match on the first ETag (If-Unmodified-Since its Last-Modified when
//   it has no strong ETag), and every response's ETag, else Last-Modified,
//   and total size are compared with the first's: an object replaced
//   mid-read is an error, not a mix of two versions, unless the server
//   gives neither validator and the new object has the same size.
// - Forward reads (read_next, for row formats) are served from a readahead
//   of parts (1 MiB by default). One GET streams the rest of the object
//   into them, as curl would; when that connection brings less than 128
//   MiB/s, helper threads fetch runs of parts ahead of it by ranged GETs
//   in parallel (each on a connection kept alive). A read of n bytes
//   returns a view into a fetched part; only a read that crosses a part
//   boundary copies, and only those n bytes.
// - Servers that do not announce "Accept-Ranges: bytes" are read as one
//   forward stream (read_at is then unavailable), cut into the same parts.
// - Requests take libcurl handles from a pool (sl_http_pool.h), shared by
//   the objects of one dataset when it passes one: connections outlive the
//   request, and the object, that opened them.
// - Read buffers come from a per-object pool (core/sl_block_pool.h) and
//   return to it when their last view goes.
// - Transfers are retried with exponential backoff and jitter on 5xx, 429,
//   timeouts and connection resets, resuming from the last byte received.
// - TLS is verified by default (sl_remote_options: insecure, CA bundle).
//
// The environment variable SLUICE_HTTP_PART_SIZE (bytes, >= 1) overrides the
// part size; tests use it to exercise reads across part boundaries.
// SLUICE_HTTP_FAST_LINK (bytes/s, >= 1) overrides the rate under which the
// readahead calls helpers; tests use it to force either way. A download
// that finds no free part for 5 s (a reader that paused) ends its GET and
// resumes with a new one later; SLUICE_HTTP_PARK_MS overrides the 5 s.
#ifndef SL_SOURCE_HTTP_H
#define SL_SOURCE_HTTP_H

#include <curl/curl.h>

#include "sl_source.h"

/// Adds per-request headers (e.g. an S3 SigV4 Authorization) for one request
/// attempt. `url` is the full request URL. Returns 0 or an errno code.
struct sl_http_signer {
  int (*sign)(void* ctx, const char* method, const char* url, struct curl_slist** headers,
              struct sluice_error* error);
  void* ctx;
  /// Frees ctx (NULL = nothing to free).
  void (*destroy)(void* ctx);
};

struct sl_http_config {
  const char* url;   ///< the http:// or https:// URL requested
  const char* name;  ///< what error messages call the object (NULL = url)
  struct sl_remote_options remote;
  int64_t part_size;   ///< readahead part size (0 = 8 MiB)
  int parallel;        ///< parts fetched at once (0 = 4)
  /// NULL = unsigned requests. Copied; the source owns signer->ctx from the
  /// call on (destroyed on close, or at once if opening fails).
  const struct sl_http_signer* signer;
};

/// An object sent with Content-Encoding gzip or zstd is opened as a
/// forward-only inflating source (sl_source_inflate_adopt) over the encoded
/// bytes: any number of gzip members or zstd frames, which libcurl's gzip
/// decoder is not.
int sl_http_source_open(const char* url, const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sl_source** out,
                        struct sluice_error* error);

/// Whether `source` is an HTTP forward stream (a server without Range
/// support) from which nothing was consumed yet (see sl_source_untouched).
int sl_http_source_untouched(const struct sl_source* source);

/// Whether `source` is an HTTP object sent with a Content-Encoding (its
/// bytes are decoded ones).
int sl_http_source_coded(const struct sl_source* source);

int sl_http_source_open_config(const struct sl_http_config* config,
                               const struct sluice_allocator* alloc, struct sl_source** out,
                               struct sluice_error* error);

#endif
