// AWS SigV4 header signing: canonical request -> string to sign -> signature
// with the derived key. Everything is built in fixed buffers on the stack (a
// request to sign is small), so the signer allocates nothing.
#include "sl_sigv4.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define SIGV4_MAX_HEADERS 32
#define SIGV4_MAX_PARAMS 64
#define SIGV4_TEXT 8192

/// An append-only text buffer that remembers overflow.
struct text {
  char* p;
  size_t len, cap;
  int overflow;
};

static void put(struct text* t, const char* s, size_t n) {
  if (t->overflow || n >= t->cap - t->len) {
    t->overflow = 1;
    return;
  }
  memcpy(t->p + t->len, s, n);
  t->len += n;
  t->p[t->len] = '\0';
}

static void puts_(struct text* t, const char* s) { put(t, s, strlen(s)); }

static void hex(const unsigned char* bytes, size_t n, char* out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = '\0';
}

int sl_sigv4_sha256_hex(const void* data, size_t n, char out[65]) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32) return EIO;
  hex(md, 32, out);
  return 0;
}

int sl_md5(const void* data, size_t n, unsigned char out[16]) {
  unsigned int len = 0;
  return EVP_Digest(data, n, out, &len, EVP_md5(), NULL) == 1 && len == 16 ? 0 : EIO;
}

static int hmac(const unsigned char* key, size_t key_len, const char* data, size_t n,
                unsigned char out[32]) {
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char*)data, n, out, &len) == NULL ||
      len != 32) {
    return EIO;
  }
  return 0;
}

size_t sl_sigv4_uri_encode(const char* in, int encode_slash, char* out, size_t cap) {
  static const char digits[] = "0123456789ABCDEF";
  size_t k = 0;
  for (const unsigned char* p = (const unsigned char*)in; *p != '\0'; ++p) {
    unsigned char c = *p;
    int keep = isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
               (c == '/' && !encode_slash);
    if (keep && c < 0x80) {
      if (k + 1 >= cap) return (size_t)-1;
      out[k++] = (char)c;
    } else {
      if (k + 3 >= cap) return (size_t)-1;
      out[k++] = '%';
      out[k++] = digits[c >> 4];
      out[k++] = digits[c & 15];
    }
  }
  if (k >= cap) return (size_t)-1;
  out[k] = '\0';
  return k;
}

void sl_sigv4_amz_date(long long unix_seconds, char out[17]) {
  time_t t = (time_t)unix_seconds;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
}

/* ---- Canonical pieces ----------------------------------------------------- */

struct span {
  const char* p;
  size_t n;
};

static int span_cmp(struct span a, struct span b) {
  size_t n = a.n < b.n ? a.n : b.n;
  int c = memcmp(a.p, b.p, n);
  if (c != 0) return c;
  return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
}

struct param {
  struct span key, value;
};

static int param_cmp(const void* a, const void* b) {
  const struct param* x = a;
  const struct param* y = b;
  int c = span_cmp(x->key, y->key);
  return c != 0 ? c : span_cmp(x->value, y->value);
}

/// Query parameters sorted by key, then value; "k" alone becomes "k=".
static int canonical_query(const char* query, struct text* t) {
  struct param params[SIGV4_MAX_PARAMS];
  size_t n = 0;
  for (const char* p = query; p != NULL && *p != '\0';) {
    const char* end = strchr(p, '&');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len > 0) {
      if (n == SIGV4_MAX_PARAMS) return EINVAL;
      const char* eq = memchr(p, '=', len);
      params[n].key.p = p;
      params[n].key.n = eq != NULL ? (size_t)(eq - p) : len;
      params[n].value.p = eq != NULL ? eq + 1 : p + len;
      params[n].value.n = eq != NULL ? len - (size_t)(eq - p) - 1 : 0;
      ++n;
    }
    p = end != NULL ? end + 1 : p + len;
  }
  qsort(params, n, sizeof *params, param_cmp);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0) puts_(t, "&");
    put(t, params[i].key.p, params[i].key.n);
    puts_(t, "=");
    put(t, params[i].value.p, params[i].value.n);
  }
  return 0;
}

struct canon_header {
  char name[64];
  const char* value;
};

static int header_cmp(const void* a, const void* b) {
  return strcmp(((const struct canon_header*)a)->name, ((const struct canon_header*)b)->name);
}

/// A header value trimmed, with inner runs of spaces collapsed to one.
static void put_trimmed(struct text* t, const char* v) {
  while (*v == ' ' || *v == '\t') ++v;
  size_t n = strlen(v);
  while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t')) --n;
  int in_space = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = v[i] == '\t' ? ' ' : v[i];
    if (c == ' ') {
      if (in_space) continue;
      in_space = 1;
    } else {
      in_space = 0;
    }
    put(t, &c, 1);
  }
}

int sl_sigv4_authorization(const struct sl_sigv4_request* r, char* out, size_t cap) {
  if (r->n_headers == 0 || r->n_headers > SIGV4_MAX_HEADERS || r->amz_date == NULL ||
      strlen(r->amz_date) != 16) {
    return EINVAL;
  }
  struct canon_header headers[SIGV4_MAX_HEADERS];
  for (size_t i = 0; i < r->n_headers; ++i) {
    size_t n = strlen(r->headers[i].name);
    if (n == 0 || n >= sizeof headers[i].name) return EINVAL;
    for (size_t k = 0; k <= n; ++k) {
      headers[i].name[k] = (char)tolower((unsigned char)r->headers[i].name[k]);
    }
    headers[i].value = r->headers[i].value;
  }
  qsort(headers, r->n_headers, sizeof *headers, header_cmp);

  char signed_buf[1024];
  struct text signed_names = {signed_buf, 0, sizeof signed_buf, 0};
  signed_buf[0] = '\0';
  for (size_t i = 0; i < r->n_headers; ++i) {
    if (i > 0) puts_(&signed_names, ";");
    puts_(&signed_names, headers[i].name);
  }

  char creq_buf[SIGV4_TEXT];
  struct text creq = {creq_buf, 0, sizeof creq_buf, 0};
  creq_buf[0] = '\0';
  puts_(&creq, r->method);
  puts_(&creq, "\n");
  puts_(&creq, r->path != NULL && r->path[0] != '\0' ? r->path : "/");
  puts_(&creq, "\n");
  if (canonical_query(r->query, &creq) != 0) return EINVAL;
  puts_(&creq, "\n");
  for (size_t i = 0; i < r->n_headers; ++i) {
    puts_(&creq, headers[i].name);
    puts_(&creq, ":");
    put_trimmed(&creq, headers[i].value);
    puts_(&creq, "\n");
  }
  puts_(&creq, "\n");
  puts_(&creq, signed_buf);
  puts_(&creq, "\n");
  puts_(&creq, r->payload_hash);
  if (creq.overflow || signed_names.overflow) return ENAMETOOLONG;

  char creq_hash[65];
  if (sl_sigv4_sha256_hex(creq.p, creq.len, creq_hash) != 0) return EIO;
  char date[9];
  memcpy(date, r->amz_date, 8);
  date[8] = '\0';
  char scope[256];
  int w = snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, r->region, r->service);
  if (w < 0 || (size_t)w >= sizeof scope) return ENAMETOOLONG;
  char sts_buf[512];
  w = snprintf(sts_buf, sizeof sts_buf, "AWS4-HMAC-SHA256\n%s\n%s\n%s", r->amz_date, scope,
               creq_hash);
  if (w < 0 || (size_t)w >= sizeof sts_buf) return ENAMETOOLONG;

  // kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")
  char key0[256];
  w = snprintf(key0, sizeof key0, "AWS4%s", r->secret_key);
  if (w < 0 || (size_t)w >= sizeof key0) return ENAMETOOLONG;
  unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
  int rc = hmac((const unsigned char*)key0, (size_t)w, date, strlen(date), k1);
  if (rc == 0) rc = hmac(k1, 32, r->region, strlen(r->region), k2);
  if (rc == 0) rc = hmac(k2, 32, r->service, strlen(r->service), k3);
  if (rc == 0) rc = hmac(k3, 32, "aws4_request", strlen("aws4_request"), k4);
  if (rc == 0) rc = hmac(k4, 32, sts_buf, strlen(sts_buf), sig);
  memset(key0, 0, sizeof key0);
  if (rc != 0) return rc;
  char sig_hex[65];
  hex(sig, 32, sig_hex);
  w = snprintf(out, cap, "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
               r->access_key, scope, signed_buf, sig_hex);
  if (w < 0 || (size_t)w >= cap) return ENAMETOOLONG;
  return 0;
}
