// Writing an S3 object from a finished local file (the sink stages output in
// a temporary file, so a failed write never reaches S3): one PUT for small
// objects, a multipart upload with parts sent in parallel for large ones.
// On any error the multipart upload is aborted, so no partial object is ever
// visible.
#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "../core/sl_sleep.h"
#include "../core/sl_value_text.h"
#include "sl_s3.h"
#include "sl_s3_internal.h"
#include "sl_s3_xml.h"
#include "sl_sigv4.h"

#define S3_MIN_PART ((int64_t)5 << 20)
#define S3_DEFAULT_PART ((int64_t)8 << 20)
#define S3_MAX_PART ((int64_t)5 << 30)
#define S3_MAX_PARTS 10000
#define S3_UPLOAD_THREADS 4
#define S3_ATTEMPTS 6  // as reads (HTTP_MAX_ATTEMPTS) and listings: docs/remote.md

struct s3_response {
  long status;
  char etag[128];
  char body[8192];  ///< the start of the response body (XML)
  size_t body_len;
  int64_t length;  ///< Content-Length, -1 when absent
};

static size_t on_body(char* data, size_t size, size_t nmemb, void* user) {
  struct s3_response* r = user;
  size_t n = size * nmemb;
  size_t room = sizeof r->body - 1 - r->body_len;
  size_t k = n < room ? n : room;
  memcpy(r->body + r->body_len, data, k);
  r->body_len += k;
  r->body[r->body_len] = '\0';
  return n;
}

static size_t on_header(char* line, size_t size, size_t nitems, void* user) {
  struct s3_response* r = user;
  size_t n = size * nitems;
  if (n > 5 && strncasecmp(line, "etag:", 5) == 0) {
    const char* v = line + 5;
    size_t k = n - 5;
    while (k > 0 && (*v == ' ' || *v == '\t')) ++v, --k;
    while (k > 0 && (v[k - 1] == '\r' || v[k - 1] == '\n' || v[k - 1] == ' ')) --k;
    if (k < sizeof r->etag) {
      memcpy(r->etag, v, k);
      r->etag[k] = '\0';
    }
  } else if (n > 15 && strncasecmp(line, "content-length:", 15) == 0) {
    char text[32];
    size_t k = n - 15 < sizeof text - 1 ? n - 15 : sizeof text - 1;
    memcpy(text, line + 15, k);
    text[k] = '\0';
    char* end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n') ++end;
    r->length = errno == 0 && v >= 0 && *end == '\0' && end != text ? (int64_t)v : -1;
  }
  return n;
}

/// What an error answer's body says: S3's "Code: Message" (with the region
/// hint of sl_s3_error_text), else its first bytes on one line.
static void answer_text(const struct s3_response* resp, char* out, size_t cap) {
  if (sl_s3_error_text(resp->body, resp->body_len, out, cap) > 0) return;
  size_t k = 0;
  for (size_t i = 0; i < resp->body_len && i < 300 && k + 1 < cap; ++i) {
    char c = resp->body[i];
    out[k++] = c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
  }
  out[k] = '\0';
}

/// One signed request with a body (NULL/0 for none), retried on 5xx, 429 and
/// transient transport errors (so is one whose answer was lost: libcurl
/// itself sends a request again when a reused connection closes without an
/// answer). The answer's status is in resp->status.
/// Errors name the object and the S3 operation `op` ("UploadPart 3").
static int s3_request(struct s3_signer* g, const struct sl_remote_options* remote, CURL* h,
                      const char* object_url, const char* method, const char* op,
                      const char* query, const uint8_t* body, size_t n,
                      struct s3_response* resp, const char* location,
                      struct sluice_error* error) {
  char url[8448];
  int w = snprintf(url, sizeof url, "%s%s%s", object_url, query[0] != '\0' ? "?" : "", query);
  if (w < 0 || (size_t)w >= sizeof url) {
    return sl_error_set(error, ENAMETOOLONG, "%s: request URL too long", location);
  }
  char payload_hash[65];
  if (sl_sigv4_sha256_hex(body != NULL ? body : (const uint8_t*)"", n, payload_hash) != 0) {
    return sl_error_set(error, EIO, "%s: cannot hash the request body", location);
  }
  char errbuf[CURL_ERROR_SIZE];
  unsigned seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)resp;
  for (int attempt = 0;; ++attempt) {
    struct curl_slist* headers = NULL;
    headers = g->curl.slist_append(headers, "Expect:");
    if (headers != NULL && body != NULL) {
      struct curl_slist* more =
          g->curl.slist_append(headers, "Content-Type: application/octet-stream");
      if (more != NULL) headers = more;
    }
    if (headers == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", location);
    int rc = sl_s3_sign_request(g, method, query, payload_hash, &headers, error);
    if (rc != 0) {
      g->curl.slist_free_all(headers);
      return rc;
    }
    memset(resp, 0, sizeof *resp);
    resp->length = -1;
    sl_s3_curl_reset(&g->curl, h, url, remote, errbuf);
    g->curl.easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    if (strcmp(method, "HEAD") == 0) g->curl.easy_setopt(h, CURLOPT_NOBODY, 1L);
    g->curl.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    g->curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    g->curl.easy_setopt(h, CURLOPT_WRITEDATA, resp);
    g->curl.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    g->curl.easy_setopt(h, CURLOPT_HEADERDATA, resp);
    if (body != NULL) {
      g->curl.easy_setopt(h, CURLOPT_POSTFIELDS, (const char*)body);
      g->curl.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)n);
    }
    CURLcode c = g->curl.easy_perform(h);
    g->curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
    g->curl.slist_free_all(headers);
    int retry = 0;
    if (c != CURLE_OK) {
      retry = sl_curl_retryable(c);
      char reason[512];
      int code = sl_curl_reason(&g->curl, c, errbuf, reason, sizeof reason);
      sl_error_set(error, code, "%s: %s: %s", location, op, reason);
      if (!retry) return code;
    } else if (resp->status >= 500 || resp->status == 429) {
      retry = 1;
      char text[1200];
      answer_text(resp, text, sizeof text);
      sl_error_set(error, EIO, "%s: %s: HTTP %ld%s%s", location, op, resp->status,
                   text[0] != '\0' ? ": " : "", text);
    } else if (resp->status >= 300) {
      int code = resp->status == 403 || resp->status == 401 ? EACCES
                 : resp->status == 404                      ? ENOENT
                                                            : EIO;
      char text[1200];
      answer_text(resp, text, sizeof text);
      sl_error_set(error, code, "%s: %s: HTTP %ld%s%s", location, op, resp->status,
                   text[0] != '\0' ? ": " : "", text);
      sl_s3_auth_hint(g, code, error);
      return code;
    } else {
      return 0;
    }
    if (attempt + 1 >= S3_ATTEMPTS) return error != NULL && error->code != 0 ? error->code : EIO;
    sl_backoff(attempt, S3_BACKOFF_BASE_MS, LONG_MAX, &seed);
  }
}

/// The text of <tag>...</tag> in `xml`, entities decoded, or 0 when absent.
static int xml_value(const char* xml, const char* tag, char* out, size_t cap) {
  struct s3_xml_element e;
  size_t n;
  return sl_s3_xml_find(xml, strlen(xml), tag, &e) && e.inner_len < cap &&
         sl_s3_xml_decode(e.inner, e.inner_len, out, &n) == 0;
}

/* ---- Multipart ---------------------------------------------------------------- */

struct upload {
  struct s3_signer* g;
  const struct sl_remote_options* remote;
  const char* location;
  const char* url;
  const uint8_t* data;
  int64_t size;
  int64_t part_size;
  int64_t n_parts;
  /// "uploadId=..." (an UploadId of up to 511 bytes, each encoded in at
  /// most 3); "" until CreateMultipartUpload gave one.
  char upload_id_query[16 + 3 * 511];
  char (*etags)[128];
  pthread_mutex_t lock;
  pthread_cond_t done;  ///< a worker ended (the caller waits polling its cancel)
  int running;          ///< workers not ended yet
  int64_t next;
  int failed;
  struct sluice_error error;
};

/// Stops u at a cancel (any thread; a hook may answer only on the caller's:
/// Python runs its signal handlers there): no further part starts.
static void check_cancel(struct upload* u) {
  int cancelled = sl_remote_cancelled(u->remote);
  pthread_mutex_lock(&u->lock);
  if (cancelled && !u->failed) {
    u->failed = 1;
    sl_error_set(&u->error, ECANCELED, "%s: interrupted", u->location);
  }
  pthread_mutex_unlock(&u->lock);
}

static void* upload_worker(void* arg) {
  struct upload* u = arg;
  CURL* h = u->g->curl.easy_init();
  struct s3_response* resp = sl_alloc(u->g->alloc, sizeof *resp);
  for (;;) {
    check_cancel(u);
    pthread_mutex_lock(&u->lock);
    int64_t k = u->failed ? u->n_parts : u->next++;
    if ((h == NULL || resp == NULL) && !u->failed) {
      u->failed = 1;
      sl_error_set(&u->error, ENOMEM, "%s: out of memory for an upload", u->location);
      k = u->n_parts;
    }
    pthread_mutex_unlock(&u->lock);
    if (k >= u->n_parts) break;
    int64_t offset = k * u->part_size;
    int64_t len = u->size - offset < u->part_size ? u->size - offset : u->part_size;
    char query[32 + sizeof u->upload_id_query];
    // Parameters in canonical (sorted) order: partNumber before uploadId.
    snprintf(query, sizeof query, "partNumber=%" PRId64 "&%s", k + 1, u->upload_id_query);
    struct sluice_error err;
    memset(&err, 0, sizeof err);
    char op[48];
    snprintf(op, sizeof op, "UploadPart %" PRId64, k + 1);
    int rc = s3_request(u->g, u->remote, h, u->url, "PUT", op, query, u->data + offset,
                        (size_t)len, resp, u->location, &err);
    if (rc == 0 && resp->etag[0] == '\0') {
      rc = sl_error_set(&err, EIO, "%s: part %" PRId64 " was stored without an ETag",
                        u->location, k + 1);
    }
    pthread_mutex_lock(&u->lock);
    if (rc != 0 && !u->failed) {
      u->failed = 1;
      u->error = err;
    } else if (rc == 0) {
      memcpy(u->etags[k], resp->etag, sizeof u->etags[k]);
    }
    pthread_mutex_unlock(&u->lock);
  }
  if (resp != NULL) sl_free(u->g->alloc, resp, sizeof *resp);
  if (h != NULL) u->g->curl.easy_cleanup(h);
  pthread_mutex_lock(&u->lock);
  --u->running;
  pthread_cond_signal(&u->done);
  pthread_mutex_unlock(&u->lock);
  return NULL;
}

/// 0-15 for a hex digit, else -1.
static int hex_digit(char c) {
  return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
}

/// The ETag S3 gives the object that u's parts make, "\"<MD5 of the parts'
/// MD5s>-<parts>\"", into out; 0 when it cannot be known (a part's ETag is
/// no MD5, as with SSE-KMS, or no memory).
static int multipart_etag(const struct upload* u, char out[64]) {
  size_t size = (size_t)u->n_parts * 16;
  unsigned char* md5s = sl_alloc(u->g->alloc, size);
  if (md5s == NULL) return 0;
  int ok = 1;
  for (int64_t k = 0; k < u->n_parts && ok; ++k) {
    const char* e = u->etags[k];
    ok = strlen(e) == 34 && e[0] == '"' && e[33] == '"';
    for (int i = 0; i < 16 && ok; ++i) {
      int hi = hex_digit(e[1 + 2 * i]), lo = hex_digit(e[2 + 2 * i]);
      ok = hi >= 0 && lo >= 0;
      md5s[k * 16 + i] = (unsigned char)(hi << 4 | lo);
    }
  }
  unsigned char md[16];
  if (ok && sl_md5(md5s, size, md) == 0) {
    int w = snprintf(out, 64, "\"");
    for (int i = 0; i < 16; ++i) w += snprintf(out + w, 64 - (size_t)w, "%02x", md[i]);
    snprintf(out + w, 64 - (size_t)w, "-%" PRId64 "\"", u->n_parts);
  } else {
    ok = 0;
  }
  sl_free(u->g->alloc, md5s, size);
  return ok;
}

/// Whether the object at u's key is the one u's parts made (by HEAD: its
/// multipart ETag and size), for a CompleteMultipartUpload refused as if the
/// upload were gone: an attempt whose answer was lost may have completed it.
static int completed_already(struct upload* u, CURL* h, struct s3_response* resp) {
  char want[64];
  if (!multipart_etag(u, want)) return 0;
  struct sluice_error ignored;
  memset(&ignored, 0, sizeof ignored);
  if (s3_request(u->g, u->remote, h, u->url, "HEAD", "HeadObject", "", NULL, 0, resp,
                 u->location, &ignored) != 0) {
    return 0;
  }
  return resp->length == u->size && strcasecmp(resp->etag, want) == 0;
}

static int multipart(struct upload* u, CURL* h, struct s3_response* resp,
                     struct sluice_error* error) {
  const struct sluice_allocator* alloc = u->g->alloc;
  int rc = s3_request(u->g, u->remote, h, u->url, "POST", "CreateMultipartUpload", "uploads=",
                      (const uint8_t*)"", 0, resp, u->location, error);
  char upload_id[512];
  if (rc == 0 && !xml_value(resp->body, "UploadId", upload_id, sizeof upload_id)) {
    rc = sl_error_set(error, EIO, "%s: CreateMultipartUpload answered without an UploadId",
                      u->location);
  }
  if (rc != 0) return rc;
  char encoded[3 * sizeof upload_id];
  if (sl_sigv4_uri_encode(upload_id, 1, encoded, sizeof encoded) == (size_t)-1) {
    rc = sl_error_set(error, ENAMETOOLONG, "%s: UploadId too long", u->location);
  } else {
    snprintf(u->upload_id_query, sizeof u->upload_id_query, "uploadId=%s", encoded);
  }
  size_t etags_size = (size_t)u->n_parts * sizeof *u->etags;
  if (rc == 0) {
    u->etags = sl_calloc(alloc, (size_t)u->n_parts, sizeof *u->etags);
    if (u->etags == NULL) rc = sl_error_set(error, ENOMEM, "%s: out of memory", u->location);
  }
  if (rc == 0) {
    pthread_t threads[S3_UPLOAD_THREADS];
    int started = 0;
    pthread_mutex_init(&u->lock, NULL);
    pthread_cond_init(&u->done, NULL);
    for (int i = 0; i < S3_UPLOAD_THREADS && i < u->n_parts; ++i) {
      pthread_mutex_lock(&u->lock);
      ++u->running;
      pthread_mutex_unlock(&u->lock);
      if (pthread_create(&threads[i], NULL, upload_worker, u) != 0) {
        pthread_mutex_lock(&u->lock);
        --u->running;
        pthread_mutex_unlock(&u->lock);
        break;
      }
      ++started;
    }
    if (started == 0) {
      ++u->running;
      upload_worker(u);
    }
    // The parts go up until done or failed; a cancel on this (the caller's)
    // thread is polled meanwhile, and stops the parts not started yet.
    pthread_mutex_lock(&u->lock);
    while (u->running > 0) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += 50 * 1000000L;
      if (until.tv_nsec >= 1000000000L) until.tv_sec += 1, until.tv_nsec -= 1000000000L;
      pthread_cond_timedwait(&u->done, &u->lock, &until);
      pthread_mutex_unlock(&u->lock);
      check_cancel(u);
      pthread_mutex_lock(&u->lock);
    }
    pthread_mutex_unlock(&u->lock);
    for (int i = 0; i < started; ++i) pthread_join(threads[i], NULL);
    // Last call for a cancel: once CompleteMultipartUpload is sent, the
    // object is committed.
    check_cancel(u);
    pthread_cond_destroy(&u->done);
    pthread_mutex_destroy(&u->lock);
    if (u->failed) {
      rc = u->error.code != 0 ? u->error.code : EIO;
      if (error != NULL) *error = u->error;
    }
  }
  if (rc == 0) {
    // CompleteMultipartUpload: the parts in order with their ETags.
    size_t cap = 128 + (size_t)u->n_parts * 200;
    char* xml = sl_alloc(alloc, cap);
    if (xml == NULL) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", u->location);
    } else {
      size_t len = (size_t)snprintf(xml, cap, "<CompleteMultipartUpload>");
      for (int64_t k = 0; k < u->n_parts; ++k) {
        len += (size_t)snprintf(xml + len, cap - len,
                                "<Part><PartNumber>%" PRId64 "</PartNumber><ETag>%s</ETag></Part>",
                                k + 1, u->etags[k]);
      }
      len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
      rc = s3_request(u->g, u->remote, h, u->url, "POST", "CompleteMultipartUpload",
                      u->upload_id_query, (const uint8_t*)xml, len, resp, u->location, error);
      if (rc != 0 && (resp->status == 403 || resp->status == 404)) {
        // Refused as if the upload were gone (NoSuchUpload; s3s-fs says
        // AccessDenied): an attempt whose answer was lost may have completed
        // it (libcurl resends unseen on a connection closed before the
        // answer). Done if the key holds this upload's object.
        long status = resp->status;
        char text[1200];
        answer_text(resp, text, sizeof text);
        if (completed_already(u, h, resp)) {
          rc = 0;
          if (error != NULL) memset(error, 0, sizeof *error);
        } else {  // (no credentials hint: they did for the parts)
          rc = sl_error_set(error, rc, "%s: CompleteMultipartUpload: HTTP %ld%s%s (the upload "
                            "is gone, and the object at the key is not this upload's: if an "
                            "attempt whose answer was lost completed it, another write "
                            "replaced it since)", u->location, status,
                            text[0] != '\0' ? ": " : "", text);
        }
      }
      // S3 may answer 200 and still report an error in the body.
      if (rc == 0 && strstr(resp->body, "<Error>") != NULL) {
        char text[1200];
        answer_text(resp, text, sizeof text);
        rc = sl_error_set(error, EIO, "%s: CompleteMultipartUpload: %s", u->location, text);
      }
      sl_free(alloc, xml, cap);
    }
  }
  if (u->etags != NULL) sl_free(alloc, u->etags, etags_size);
  // No partial object: drop the parts (best effort; the error stays the
  // first one). Never without an upload id: a DELETE of the bare key would
  // remove the object this write was to replace.
  if (rc != 0 && u->upload_id_query[0] != '\0') {
    struct sluice_error ignored;
    s3_request(u->g, u->remote, h, u->url, "DELETE", "AbortMultipartUpload", u->upload_id_query,
               NULL, 0, resp, u->location, &ignored);
  }
  return rc;
}

int sl_s3_part_size(int64_t given, const char* location, int64_t* out,
                    struct sluice_error* error) {
  int64_t part = S3_DEFAULT_PART;
  const char* text = getenv("SLUICE_S3_PART_SIZE");
  char shown[128];  // (the variable's value as messages spell values)
  if (given < 0) return sl_error_set(error, EINVAL, "%s: negative multipart part size", location);
  if (given > 0) {
    part = given;
  } else if (text != NULL && text[0] != '\0') {
    if (sl_parse_size(text, strlen(text), 1, INT64_MAX, &part) != 0) {
      return sl_error_set(error, EINVAL, "%s: SLUICE_S3_PART_SIZE='%s' is not a size in bytes "
                          "(k, m, g suffixes; e.g. 16m)", location,
                          sl_escaped(text, strlen(text), '\'', shown, sizeof shown));
    }
  }
  if (part > S3_MAX_PART) {
    char from[192];
    if (given > 0) {
      snprintf(from, sizeof from, "part size %" PRId64 " bytes (part_size; CLI --part-size)", part);
    } else {
      snprintf(from, sizeof from, "SLUICE_S3_PART_SIZE='%s'",
               sl_escaped(text, strlen(text), '\'', shown, sizeof shown));
    }
    return sl_error_set(error, EINVAL, "%s: %s is more than S3 takes in one part: at most 5g "
                        "(5 GiB, %" PRId64 " bytes)", location, from, S3_MAX_PART);
  }
  *out = part < S3_MIN_PART ? S3_MIN_PART : part;
  return 0;
}

/// The part size for an object of `size` bytes: sl_s3_part_size's, doubled
/// as needed to stay within 10,000 parts.
static int part_size_setting(int64_t given, int64_t size, const char* location, int64_t* out,
                             struct sluice_error* error) {
  int64_t part;
  SL_RETURN_NOT_OK(sl_s3_part_size(given, location, &part, error));
  while ((size + part - 1) / part > S3_MAX_PARTS) part *= 2;
  *out = part;
  return 0;
}

int sl_s3_upload_file(const char* location, const struct sl_remote_options* remote, int fd,
                      int64_t offset, int64_t size, const struct sluice_allocator* alloc,
                      struct sluice_error* error) {
  char url[8192];
  struct s3_signer* g;
  int rc = sl_s3_prepare(location, remote, alloc, &g, url, sizeof url, error);
  if (rc != 0) return rc;
  const char* shown = g->name;  // for messages
  const uint8_t* data = (const uint8_t*)"";
  void* map = NULL;
  if (size > 0) {
    map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, (off_t)offset);
    if (map == MAP_FAILED) {
      map = NULL;
      rc = sl_error_set(error, EIO, "%s: cannot map the staged output", shown);
    } else {
      data = map;
    }
  }
  CURL* h = rc == 0 ? g->curl.easy_init() : NULL;
  struct s3_response* resp = rc == 0 ? sl_alloc(alloc, sizeof *resp) : NULL;
  if (rc == 0 && (h == NULL || resp == NULL)) {
    rc = sl_error_set(error, ENOMEM, "%s: out of memory", shown);
  }
  int64_t part = 0;
  if (rc == 0) rc = part_size_setting(g->settings.part_size, size, shown, &part, error);
  if (rc == 0) {
    if (size <= part) {
      rc = s3_request(g, remote, h, url, "PUT", "PutObject", "", data, (size_t)size, resp,
                      shown, error);
    } else {
      struct upload* u = sl_calloc(alloc, 1, sizeof *u);
      if (u == NULL) {
        rc = sl_error_set(error, ENOMEM, "%s: out of memory", shown);
      } else {
        u->g = g;
        u->remote = remote;
        u->location = shown;
        u->url = url;
        u->data = data;
        u->size = size;
        u->part_size = part;
        u->n_parts = (size + part - 1) / part;
        rc = multipart(u, h, resp, error);
        sl_free(alloc, u, sizeof *u);
      }
    }
  }
  if (resp != NULL) sl_free(alloc, resp, sizeof *resp);
  if (h != NULL) g->curl.easy_cleanup(h);
  if (map != NULL) munmap(map, (size_t)size);
  sl_s3_signer_destroy(g);
  return rc;
}

int sl_s3_delete_object(const char* location, const struct sl_remote_options* remote,
                        const struct sluice_allocator* alloc, struct sluice_error* error) {
  char url[8192];
  struct s3_signer* g;
  SL_RETURN_NOT_OK(sl_s3_prepare(location, remote, alloc, &g, url, sizeof url, error));
  const char* shown = g->name;  // for messages
  CURL* h = g->curl.easy_init();
  struct s3_response* resp = sl_alloc(alloc, sizeof *resp);
  int rc = h == NULL || resp == NULL ? sl_error_set(error, ENOMEM, "%s: out of memory", shown)
                                     : s3_request(g, remote, h, url, "DELETE", "DeleteObject",
                                                  "", NULL, 0, resp, shown, error);
  if (resp != NULL) sl_free(alloc, resp, sizeof *resp);
  if (h != NULL) g->curl.easy_cleanup(h);
  sl_s3_signer_destroy(g);
  return rc;
}
