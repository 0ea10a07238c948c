// Listing S3 prefixes and globs: ListObjectsV2 pages (GET ?list-type=2),
// signed like every other S3 request (sl_s3_internal.h), followed by
// continuation tokens until IsTruncated is false; the keys are filtered here
// (sl_glob_match, hidden segments, directory markers) because S3 itself only
// filters by a literal prefix.
//
// SLUICE_S3_LIST_PAGE (1..1000) sets max-keys, the keys per page (default
// 1000, the S3 maximum); tests lower it to go through many pages.
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"
#include "../core/sl_sleep.h"
#include "../core/sl_value_text.h"
#include "sl_http_pool.h"
#include "sl_location.h"
#include "sl_s3_internal.h"
#include "sl_s3_xml.h"
#include "sl_sigv4.h"

#define LIST_ATTEMPTS 6  // as reads (HTTP_MAX_ATTEMPTS) and uploads: docs/remote.md
#define LIST_MAX_PAGE 1000
/// A page of 1000 keys of 1024 bytes is about 1.5 MB of XML; more than this
/// is not an S3 answer.
#define LIST_MAX_BODY ((int64_t)64 << 20)
#define LIST_MAX_TOKEN 4096
#define LIST_MAX_KEY 4096
#define LIST_URL 8192
#define LIST_QUERY (3 * LIST_MAX_TOKEN + 3 * LIST_MAX_KEY + 128)

/// Everything one listing needs, in one allocation (the buffers are large).
struct lister {
  const struct sluice_allocator* alloc;
  const struct sl_remote_options* remote;
  const char* location;
  char bucket[256];
  char prefix[LIST_MAX_KEY];  ///< literal prefix listed (escapes removed)
  char glob[LIST_MAX_KEY + 5]; ///< the glob after "bucket/"; a trailing '/' gets "*/**"
  int recursive;              ///< pattern is a plain "prefix/": every key under it
  const char* literal;        ///< a glob's text as a key (run[1].csv), NULL for a prefix
  int literal_found;          ///< the listing has that key: it is the object named
  int64_t literal_size;
  struct s3_signer* g;
  char base_url[LIST_URL];  ///< the bucket's URL, no query
  char token[LIST_MAX_TOKEN];
  char query[LIST_QUERY];
  char url[LIST_URL + LIST_QUERY + 2];
  char key[LIST_MAX_KEY];
  char name[LIST_MAX_KEY + 300];
  char text[1024];  ///< decoded error Code / Message
  // The answer being received.
  char* body;
  int64_t body_cap;
  size_t body_len;
  int body_too_large;
  long status;
  int cancelled;  ///< the caller's cancel hook said yes (list_progress)
};

/// The caller's cancel hook (sl_remote_options.cancelled: the open's or the
/// write's, called on the thread that lists), asked before each page (and
/// retry) and by libcurl's progress calls during one (at least once a
/// second, also while a server keeps the answer waiting): a Ctrl-C during a
/// long listing or a stalled one stopped the open only when the listing
/// ended or timed out.
static int list_cancelled(struct lister* l) {
  if (!l->cancelled && sl_remote_cancelled(l->remote)) l->cancelled = 1;
  return l->cancelled;
}

static int list_progress(void* user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                         curl_off_t ulnow) {
  (void)dltotal;
  (void)dlnow;
  (void)ultotal;
  (void)ulnow;
  return list_cancelled(user);
}

static size_t on_body(char* data, size_t size, size_t nmemb, void* user) {
  struct lister* l = user;
  size_t n = size * nmemb;
  if ((int64_t)(l->body_len + n) + 1 > LIST_MAX_BODY) {
    l->body_too_large = 1;
    return 0;  // aborts the transfer
  }
  if (sl_grow_array(l->alloc, (void**)&l->body, &l->body_cap, (int64_t)(l->body_len + n + 1), 1) !=
      0) {
    return 0;
  }
  memcpy(l->body + l->body_len, data, n);
  l->body_len += n;
  l->body[l->body_len] = '\0';
  return n;
}

/// What error messages call the listing: the location, its bucket and prefix.
#define WHAT "%s: listing bucket '%s' under prefix '%s'"
#define WHAT_ARGS l->location, l->bucket, l->prefix

static int keys_per_page(void) {
  const char* text = getenv("SLUICE_S3_LIST_PAGE");
  int64_t v;
  if (text != NULL && sl_parse_int64(text, strlen(text), 1, INT64_MAX, &v) == 0) {
    return v < LIST_MAX_PAGE ? (int)v : LIST_MAX_PAGE;
  }
  return LIST_MAX_PAGE;
}

/// Splits s3://bucket/pattern and finds the literal prefix before the first
/// glob character (escapes removed: `\*` is a literal '*').
static int parse_location(struct lister* l, struct sluice_error* error) {
  if (strncmp(l->location, "s3://", 5) != 0) {
    return sl_error_set(error, EINVAL, "%s: not an s3:// location", l->location);
  }
  const char* rest = l->location + strlen("s3://");
  const char* slash = strchr(rest, '/');
  if (slash == NULL || slash == rest) {
    return sl_error_set(error, EINVAL, "%s: expected s3://BUCKET/PREFIX/ or s3://BUCKET/GLOB",
                        l->location);
  }
  size_t bucket_len = (size_t)(slash - rest);
  if (bucket_len >= sizeof l->bucket || strcspn(rest, "*?[") < bucket_len) {
    return sl_error_set(error, EINVAL, "%s: bad bucket name (too long, or a glob)", l->location);
  }
  memcpy(l->bucket, rest, bucket_len);
  l->bucket[bucket_len] = '\0';
  const char* p = slash + 1;
  size_t pattern_len = strlen(p);
  if (pattern_len + 5 > sizeof l->glob) {
    return sl_error_set(error, ENAMETOOLONG, "%s: pattern too long", l->location);
  }
  // Like local globs, "logs/2024-*/" is every object under the directories it
  // matches, not an object it matches itself (as Python's glob and DuckDB).
  snprintf(l->glob, sizeof l->glob, "%s%s", p,
           pattern_len > 0 && p[pattern_len - 1] == '/' ? "*/**" : "");
  int glob;
  long k = sl_glob_literal_prefix(p, l->prefix, sizeof l->prefix, &glob);
  if (k < 0) return sl_error_set(error, ENAMETOOLONG, "%s: prefix too long", l->location);
  l->recursive = !glob;
  // (not a glob ending in '/': a key ending so is a directory marker)
  l->literal = glob && slash[pattern_len] != '/' ? slash + 1 : NULL;
  if (!glob && k > 0 && l->prefix[k - 1] != '/') {
    return sl_error_set(error, EINVAL, "%s: not a prefix (ending with '/') nor a glob",
                        l->location);
  }
  return 0;
}

/// The bucket's URL and signing path. sl_s3_prepare addresses objects, so it is
/// given a one-character key that is then cut off: ".../bucket/x" becomes
/// ".../bucket" (path-style) and "bucket.host/x" becomes "bucket.host/"
/// (virtual-hosted), the resources ListObjectsV2 is sent to.
static int prepare_bucket(struct lister* l, struct sluice_error* error) {
  char object[300];
  snprintf(object, sizeof object, "s3://%s/x", l->bucket);
  SL_RETURN_NOT_OK(
      sl_s3_prepare(object, l->remote, l->alloc, &l->g, l->base_url, sizeof l->base_url, error));
  size_t u = strlen(l->base_url), p = strlen(l->g->path);
  if (u < 2 || p < 2 || strcmp(l->base_url + u - 2, "/x") != 0 ||
      strcmp(l->g->path + p - 2, "/x") != 0) {
    return sl_error_set(error, EINVAL, WHAT ": unexpected request URL %s", WHAT_ARGS, l->base_url);
  }
  // Keep the '/' only when it is the whole path ("/" for virtual-hosted).
  int keep_slash = p == 2;
  l->base_url[u - 2 + (size_t)keep_slash] = '\0';
  l->g->path[p - 2 + (size_t)keep_slash] = '\0';
  return 0;
}

/// The query of one page, parameters in canonical (sorted) order and values
/// URI-encoded the SigV4 way ('/' too), so that it is signed as sent.
static int build_query(struct lister* l, int page_size, struct sluice_error* error) {
  char encoded_prefix[3 * LIST_MAX_KEY + 1];
  char encoded_token[3 * LIST_MAX_TOKEN + 1];
  if (sl_sigv4_uri_encode(l->prefix, 1, encoded_prefix, sizeof encoded_prefix) == (size_t)-1 ||
      sl_sigv4_uri_encode(l->token, 1, encoded_token, sizeof encoded_token) == (size_t)-1) {
    return sl_error_set(error, ENAMETOOLONG, WHAT ": request too long", WHAT_ARGS);
  }
  size_t n = 0;
  l->query[0] = '\0';
  if (l->token[0] != '\0') {
    n += (size_t)snprintf(l->query, sizeof l->query, "continuation-token=%s&", encoded_token);
  }
  n += (size_t)snprintf(l->query + n, sizeof l->query - n, "list-type=2&max-keys=%d", page_size);
  if (l->prefix[0] != '\0') {
    snprintf(l->query + n, sizeof l->query - n, "&prefix=%s", encoded_prefix);
  }
  int w = snprintf(l->url, sizeof l->url, "%s?%s", l->base_url, l->query);
  if (w < 0 || (size_t)w >= sizeof l->url) {
    return sl_error_set(error, ENAMETOOLONG, WHAT ": request URL too long", WHAT_ARGS);
  }
  return 0;
}

/// S3's <Code> and <Message> of an error answer (sl_s3_error_text), "" when
/// there are none.
static const char* error_text(struct lister* l) {
  sl_s3_error_text(l->body != NULL ? l->body : "", l->body_len, l->text, sizeof l->text);
  return l->text;
}

/// GETs one page into l->body (a 2xx answer), retried on 5xx, 429 and
/// transient transport errors. Other HTTP errors name S3's Code and Message.
static int fetch_page(struct lister* l, CURL* h, struct sluice_error* error) {
  char errbuf[CURL_ERROR_SIZE];
  unsigned seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)l;
  for (int attempt = 0;; ++attempt) {
    if (list_cancelled(l)) {  // (before each page, and each retry)
      return sl_error_set(error, ECANCELED, WHAT ": interrupted", WHAT_ARGS);
    }
    struct curl_slist* headers = NULL;
    int rc = sl_s3_sign_request(l->g, "GET", l->query, S3_EMPTY_SHA256, &headers, error);
    if (rc != 0) {
      l->g->curl.slist_free_all(headers);
      return sl_error_prefix(error, WHAT, WHAT_ARGS);
    }
    l->body_len = 0;
    l->body_too_large = 0;
    l->status = 0;
    if (l->body != NULL) l->body[0] = '\0';
    sl_s3_curl_reset(&l->g->curl, h, l->url, l->remote, errbuf);
    l->g->curl.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    l->g->curl.easy_setopt(h, CURLOPT_WRITEDATA, l);
    if (l->remote != NULL && l->remote->cancelled != NULL) {
      l->g->curl.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
      l->g->curl.easy_setopt(h, CURLOPT_XFERINFOFUNCTION, list_progress);
      l->g->curl.easy_setopt(h, CURLOPT_XFERINFODATA, l);
    }
    if (headers != NULL) l->g->curl.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    CURLcode c = l->g->curl.easy_perform(h);
    l->g->curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &l->status);
    l->g->curl.slist_free_all(headers);
    int retry = 0;
    if (c == CURLE_ABORTED_BY_CALLBACK && l->cancelled) {
      return sl_error_set(error, ECANCELED, WHAT ": interrupted", WHAT_ARGS);
    }
    if (c != CURLE_OK) {
      if (l->body_too_large) {
        return sl_error_set(error, EIO, WHAT ": the answer is larger than %lld bytes", WHAT_ARGS,
                            (long long)LIST_MAX_BODY);
      }
      if (c == CURLE_WRITE_ERROR) {
        return sl_error_set(error, ENOMEM, WHAT ": out of memory", WHAT_ARGS);
      }
      retry = sl_curl_retryable(c);
      char reason[512];
      int code = sl_curl_reason(&l->g->curl, c, errbuf, reason, sizeof reason);
      sl_error_set(error, code, WHAT ": %s", WHAT_ARGS, reason);
      if (!retry) return code;
    } else if (l->status >= 500 || l->status == 429) {
      retry = 1;
      sl_error_set(error, EIO, WHAT ": HTTP %ld %s", WHAT_ARGS, l->status, error_text(l));
    } else if (l->status >= 300 || l->status < 200) {
      int code = l->status == 403 || l->status == 401 ? EACCES
                 : l->status == 404                   ? ENOENT
                                                      : EIO;
      sl_error_set(error, code, WHAT ": HTTP %ld %s", WHAT_ARGS, l->status, error_text(l));
      sl_s3_auth_hint(l->g, code, error);
      return code;
    } else {
      return 0;
    }
    if (attempt + 1 >= LIST_ATTEMPTS) return error != NULL && error->code != 0 ? error->code : EIO;
    sl_backoff(attempt, S3_BACKOFF_BASE_MS, LONG_MAX, &seed);
  }
}

/// A segment of `rel` (a '/'-separated path that starts at segment
/// `depth` of the key) starting with '.' or '_': hidden files, _SUCCESS
/// markers, .crc files, _temporary directories; unless the glob names it
/// itself (`_x*.csv`; `glob` NULL for a prefix).
static int has_hidden_segment(const char* rel, size_t depth, const char* glob) {
  for (const char* s = rel; *s != '\0'; ++depth) {
    if ((*s == '.' || *s == '_') && (glob == NULL || !sl_glob_names_hidden(glob, depth, *s))) {
      return 1;
    }
    const char* slash = strchr(s, '/');
    if (slash == NULL) break;
    s = slash + 1;
  }
  return 0;
}

/// Whether `key` is one of the objects the location names.
static int wanted(const struct lister* l, const char* key) {
  size_t n = strlen(key);
  size_t prefix_len = strlen(l->prefix);
  if (n == 0 || key[n - 1] == '/') return 0;  // directory marker
  if (strncmp(key, l->prefix, prefix_len) != 0) return 0;  // not under the prefix
  // As for local globs, hidden names count from the directory the literal
  // prefix ends in: "dir/*.csv" skips dir/_x.csv, "dir/_tmp/*.csv" does not.
  size_t dir_len = prefix_len;
  while (dir_len > 0 && l->prefix[dir_len - 1] != '/') --dir_len;
  size_t depth = 0;
  for (size_t i = 0; i < dir_len; ++i) depth += l->prefix[i] == '/';
  if (has_hidden_segment(key + dir_len, depth, l->recursive ? NULL : l->glob)) return 0;
  return l->recursive || sl_glob_match(l->glob, key);
}

/// Adds the wanted keys of one page and finds the next continuation token
/// (l->token, "" on the last page).
static int take_page(struct lister* l, struct sl_location_list* out, struct sluice_error* error) {
  const char* body = l->body != NULL ? l->body : "";
  size_t n = l->body_len;
  struct s3_xml_element root, e;
  if (!sl_s3_xml_find(body, n, "ListBucketResult", &root)) {
    if (sl_s3_xml_find(body, n, "Error", &e)) {
      return sl_error_set(error, EIO, WHAT ": %s", WHAT_ARGS, error_text(l));
    }
    return sl_error_set(error, EIO, WHAT ": malformed answer (no ListBucketResult): %.200s",
                        WHAT_ARGS, body);
  }
  const char* at = root.inner;
  const char* end = root.inner + root.inner_len;
  while (sl_s3_xml_find(at, (size_t)(end - at), "Contents", &e)) {
    struct s3_xml_element key;
    size_t key_len;
    if (!sl_s3_xml_find(e.inner, e.inner_len, "Key", &key)) {
      return sl_error_set(error, EIO, WHAT ": malformed answer (an entry without a Key)",
                          WHAT_ARGS);
    }
    if (key.inner_len >= sizeof l->key) {
      return sl_error_set(error, EIO, WHAT ": malformed answer (a Key of %zu bytes)", WHAT_ARGS,
                          key.inner_len);
    }
    if (sl_s3_xml_decode(key.inner, key.inner_len, l->key, &key_len) != 0 || key_len == 0 ||
        memchr(l->key, '\0', key_len) != NULL) {
      return sl_error_set(error, EIO, WHAT ": malformed answer (bad Key '%.*s')", WHAT_ARGS,
                          (int)(key.inner_len < 200 ? key.inner_len : 200), key.inner);
    }
    // The size lets a small object be fetched whole by its opening GET
    // (a hint only: a missing or odd <Size> is just not known).
    struct s3_xml_element size_text;
    int64_t size = 0;
    if (!sl_s3_xml_find(e.inner, e.inner_len, "Size", &size_text) ||
        sl_parse_int64(size_text.inner, size_text.inner_len, 0, INT64_MAX, &size) != 0) {
      size = 0;
    }
    if (l->literal != NULL && strcmp(l->key, l->literal) == 0) {
      l->literal_found = 1;
      l->literal_size = size;
    }
    if (wanted(l, l->key)) {
      int w = snprintf(l->name, sizeof l->name, "s3://%s/%s", l->bucket, l->key);
      if (w < 0 || (size_t)w >= sizeof l->name) {
        return sl_error_set(error, ENAMETOOLONG, WHAT ": key too long", WHAT_ARGS);
      }
      if (sl_location_list_add(out, l->name, (size_t)w, size, l->alloc) != 0) {
        return sl_error_set(error, ENOMEM, WHAT ": out of memory", WHAT_ARGS);
      }
    }
    at = e.end;
  }
  struct s3_xml_element truncated, token;
  if (!sl_s3_xml_find(root.inner, root.inner_len, "IsTruncated", &truncated)) {
    return sl_error_set(error, EIO, WHAT ": malformed answer (no IsTruncated)", WHAT_ARGS);
  }
  int more = truncated.inner_len == 4 && memcmp(truncated.inner, "true", 4) == 0;
  if (!more && !(truncated.inner_len == 5 && memcmp(truncated.inner, "false", 5) == 0)) {
    return sl_error_set(error, EIO, WHAT ": malformed answer (IsTruncated '%.*s')", WHAT_ARGS,
                        (int)(truncated.inner_len < 20 ? truncated.inner_len : 20),
                        truncated.inner);
  }
  if (!more) {
    l->token[0] = '\0';
    return 0;
  }
  char next[LIST_MAX_TOKEN];
  size_t next_len = 0;
  if (!sl_s3_xml_find(root.inner, root.inner_len, "NextContinuationToken", &token) ||
      token.inner_len == 0) {
    return sl_error_set(error, EIO,
                        WHAT ": the answer is truncated but has no NextContinuationToken",
                        WHAT_ARGS);
  }
  if (token.inner_len >= sizeof next ||
      sl_s3_xml_decode(token.inner, token.inner_len, next, &next_len) != 0) {
    return sl_error_set(error, EIO, WHAT ": malformed answer (bad NextContinuationToken)",
                        WHAT_ARGS);
  }
  // The same token again would list the same page forever.
  if (strcmp(next, l->token) == 0) {
    return sl_error_set(error, EIO, WHAT ": the server repeated continuation token '%.200s'",
                        WHAT_ARGS, next);
  }
  memcpy(l->token, next, next_len + 1);
  return 0;
}

int sl_s3_expand(const char* location, const struct sl_remote_options* remote,
                 const struct sluice_allocator* alloc, struct sl_location_list* out,
                 struct sluice_error* error) {
  struct lister* l = sl_calloc(alloc, 1, sizeof *l);
  if (l == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", location);
  l->alloc = alloc;
  l->remote = remote;
  l->location = location;
  int rc = parse_location(l, error);
  if (rc == 0) rc = prepare_bucket(l, error);
  // The dataset's handles when it has them: the listing's connection then
  // serves the first objects' reads.
  struct sl_http_pool* pool = remote != NULL ? remote->http_pool : NULL;
  CURL* h = NULL;
  if (rc == 0 && (h = pool != NULL ? sl_http_pool_get(pool) : l->g->curl.easy_init()) == NULL) {
    rc = sl_error_set(error, ENOMEM, "%s: out of memory", location);
  }
  int page_size = keys_per_page();
  size_t before = out->n;
  while (rc == 0) {
    rc = build_query(l, page_size, error);
    if (rc == 0) rc = fetch_page(l, h, error);
    if (rc == 0) rc = take_page(l, out, error);
    if (rc != 0 || l->token[0] == '\0') break;
  }
  if (rc == 0 && l->literal_found) {
    // A key spelled as the glob is (run[1].csv) is that object, as a local
    // path that exists is that file and as pyarrow reads it: the objects
    // matched instead are dropped.
    while (out->n > before) {
      --out->n;
      sl_free(alloc, out->names[out->n], strlen(out->names[out->n]) + 1);
    }
    int w = snprintf(l->name, sizeof l->name, "s3://%s/%s", l->bucket, l->literal);
    if (w < 0 || (size_t)w >= sizeof l->name ||
        sl_location_list_add(out, l->name, (size_t)w, l->literal_size, alloc) != 0) {
      rc = sl_error_set(error, ENOMEM, "%s: out of memory", location);
    }
  }
  if (rc == 0 && out->n == before) {
    rc = sl_error_set(error, ENOENT, "%s: no objects %s (bucket '%s', prefix '%s'; names "
                      "starting with '.' or '_' are skipped%s)", location,
                      l->recursive ? "under this prefix" : "match this pattern", l->bucket,
                      l->prefix,
                      l->recursive ? "" : " unless the glob spells that character: _x*.csv");
  }
  if (pool != NULL) {
    sl_http_pool_put(pool, h);
  } else if (h != NULL) {
    l->g->curl.easy_cleanup(h);
  }
  if (l->body != NULL) sl_free(alloc, l->body, (size_t)l->body_cap);
  sl_s3_signer_destroy(l->g);
  sl_free(alloc, l, sizeof *l);
  return rc;
}
