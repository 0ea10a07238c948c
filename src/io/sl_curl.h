// libcurl, loaded when a remote location is first opened instead of linked:
// loading it (and the TLS, LDAP and SSH libraries it pulls in) took 5.5 ms
// of the CLI's 7 ms start and of `import sluice`, which local reads never
// need. Each holder of a table (an HTTP handle pool, sl_http_pool.h; an S3
// signer or writer) opens its own (the loader counts the opens), so sluice
// keeps no process-wide state of its own.
#ifndef SL_CURL_H
#define SL_CURL_H

#include <curl/curl.h>

#include "sluice.h"

/// The libcurl functions sluice calls.
struct sl_curl {
  void* lib;  ///< the dlopen handle (NULL = not loaded)
  CURLcode (*global_init)(long flags);
  void (*global_cleanup)(void);
  CURL* (*easy_init)(void);
  void (*easy_cleanup)(CURL* h);
  void (*easy_reset)(CURL* h);
  CURLcode (*easy_setopt)(CURL* h, CURLoption option, ...);
  CURLcode (*easy_getinfo)(CURL* h, CURLINFO info, ...);
  CURLcode (*easy_perform)(CURL* h);
  const char* (*easy_strerror)(CURLcode code);
  struct curl_slist* (*slist_append)(struct curl_slist* list, const char* line);
  void (*slist_free_all)(struct curl_slist* list);
};

/// Loads libcurl.so.4, resolves the functions and calls curl_global_init.
/// `what` names the object for the error (e.g. its URL). 0, or EIO with a
/// message when libcurl is missing or fails to start.
int sl_curl_open(struct sl_curl* curl, const char* what, struct sluice_error* error);

/// curl_global_cleanup and the library's release; a table that was never
/// opened is fine.
void sl_curl_close(struct sl_curl* curl);

/// A request's timeouts: `timeout_s` seconds to connect and without a byte
/// (a stalled transfer is then a timeout, which callers retry); 0 = 30 s to
/// connect and 60 s without a byte.
void sl_curl_set_timeouts(const struct sl_curl* curl, CURL* h, double timeout_s);

/// Why a request failed, for its message, into out[cap]: libcurl's error
/// buffer `errbuf` (else its text for `c`); "TLS error: " before it and how
/// to trust the server's certificate after it when the certificate or the
/// handshake failed; "timed out: " before it for a timeout. Every request
/// (reads, listings, uploads) words its failures so. Returns the errno
/// value that goes with it: EACCES, ETIMEDOUT or EIO.
int sl_curl_reason(const struct sl_curl* curl, CURLcode c, const char* errbuf, char* out,
                   size_t cap);

/// Whether a request that failed with `c` is worth sending again (with
/// backoff): the server or the network did not answer, or broke off.
/// Every request (reads, listings, uploads) retries the same failures.
int sl_curl_retryable(CURLcode c);

#endif
