// What the S3 reader (sl_s3.c) and writer (sl_s3_write.c) share: resolved
// settings, the object's addressing, and request signing.
#ifndef SL_S3_INTERNAL_H
#define SL_S3_INTERNAL_H

#include <curl/curl.h>

#include "sluice.h"
#include "sl_curl.h"
#include "sl_source.h"

#define S3_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// The first retry of a listing page or a multipart request waits 100-200
/// ms, each later one twice as long (sl_backoff).
#define S3_BACKOFF_BASE_MS 200L

/// Everything a request needs; fixed-size fields keep it one allocation.
struct s3_settings {
  char access_key[256];
  char secret_key[256];
  char session_token[4096];
  char region[64];
  char endpoint[512];  ///< scheme://authority, no trailing '/'
  char profile[128];
  char addressing_style[16];  ///< "path", "virtual" or "" (by endpoint and bucket)
  int64_t part_size;          ///< multipart part size for writes (0 = default)
  int anonymous;              ///< unsigned by request (sluice_s3_options.anonymous)
  int profile_named;          ///< `profile` was asked for (option or AWS_PROFILE)
};

/// One object's signing context: settings plus the request's host and path.
struct s3_signer {
  const struct sluice_allocator* alloc;
  struct sl_curl curl;  ///< libcurl for the object's requests (loaded by sl_s3_prepare)
  struct s3_settings settings;
  char host[512];
  char path[4096];  ///< URI-encoded canonical path
  char name[4096];  ///< the location as messages show it (sl_location_shown)
};

/// Parses s3://bucket/key, resolves the settings (the caller's in
/// remote->s3 over the environment's; `remote` may be NULL), and writes the
/// object's URL (no query) into `url`. *out is freed with sl_s3_signer_destroy.
int sl_s3_prepare(const char* location, const struct sl_remote_options* remote,
               const struct sluice_allocator* alloc, struct s3_signer** out, char* url,
               size_t url_cap, struct sluice_error* error);
void sl_s3_signer_destroy(void* ctx);

/// Appends the SigV4 headers for one request on the object (query already
/// encoded and sorted or not: it is canonicalised for signing). Anonymous
/// settings add nothing.
int sl_s3_sign_request(struct s3_signer* g, const char* method, const char* query,
                    const char* payload_hash, struct curl_slist** headers,
                    struct sluice_error* error);

/// Resets `h` for one S3 request to `url`: the options every S3 request
/// shares (no signals, connect timeout, a stall under 1 byte/s for 60 s is a
/// timeout, errors into `errbuf`) and the TLS settings of `remote` (NULL =
/// verified against the system store).
void sl_s3_curl_reset(const struct sl_curl* curl, CURL* h, const char* url,
                   const struct sl_remote_options* remote, char* errbuf);

/// Adds a hint about credentials to an HTTP 401/403 error.
void sl_s3_auth_hint(struct s3_signer* g, int rc, struct sluice_error* error);

#endif
