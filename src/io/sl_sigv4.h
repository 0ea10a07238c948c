// AWS Signature Version 4 (header-based signing), written here rather than
// taken from libcurl: Debian 12's libcurl 7.88 CURLOPT_AWS_SIGV4 neither adds
// x-amz-content-sha256 nor a session token, and signs the query string
// without canonicalising it (known gaps of that version). HMAC and SHA-256 come from
// OpenSSL's libcrypto.
#ifndef SL_SIGV4_H
#define SL_SIGV4_H

#include <stddef.h>

/// One request header to sign. Names in any case; values are trimmed and
/// their inner runs of spaces collapsed, as SigV4 canonicalisation wants.
struct sl_sigv4_header {
  const char* name;
  const char* value;
};

struct sl_sigv4_request {
  const char* method;        ///< "GET", "HEAD", "PUT", ...
  const char* path;          ///< canonical URI: already URI-encoded, e.g. "/bucket/a%20b"
  const char* query;         ///< raw query "k=v&k2=v2" (already encoded), "" or NULL = none
  const struct sl_sigv4_header* headers;  ///< every header to sign (host and x-amz-date included)
  size_t n_headers;
  const char* payload_hash;  ///< hex SHA-256 of the body, or "UNSIGNED-PAYLOAD"
  const char* amz_date;      ///< "YYYYMMDDTHHMMSSZ" (the x-amz-date value)
  const char* region;
  const char* service;       ///< "s3"
  const char* access_key;
  const char* secret_key;
};

/// Writes the Authorization header value ("AWS4-HMAC-SHA256 Credential=...,
/// SignedHeaders=..., Signature=...") into `out`. Returns 0, EINVAL (bad or
/// too many headers), ENAMETOOLONG (out too small) or ENOMEM.
int sl_sigv4_authorization(const struct sl_sigv4_request* request, char* out, size_t cap);

/// Hex SHA-256 of `n` bytes into `hex` (65 bytes with the NUL). 0 or EIO.
int sl_sigv4_sha256_hex(const void* data, size_t n, char hex[65]);

/// MD5 of `n` bytes into `out` (S3's ETags are MD5s). 0 or EIO.
int sl_md5(const void* data, size_t n, unsigned char out[16]);

/// URI-encodes `in` the SigV4 way (unreserved A-Z a-z 0-9 - . _ ~ kept,
/// everything else %XX; '/' kept unless `encode_slash`). Returns the length
/// written, or (size_t)-1 when `cap` is too small.
size_t sl_sigv4_uri_encode(const char* in, int encode_slash, char* out, size_t cap);

/// "YYYYMMDDTHHMMSSZ" for a UNIX time.
void sl_sigv4_amz_date(long long unix_seconds, char out[17]);

#endif
