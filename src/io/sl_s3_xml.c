// S3's XML answers (ListObjectsV2 pages, error bodies, multipart upload
// answers): the tag finder, the character-data decoder, and the text of an
// error answer. Apart from the signer and settings (sl_s3_internal.h), so
// that the HTTP source, which shows an S3-style error body of any server,
// needs no S3 internals. See sl_s3_xml.h.
#include "sl_s3_xml.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/// memmem, which C11 does not have.
static const char* find_bytes(const char* hay, size_t n, const char* needle, size_t k) {
  for (size_t i = 0; k <= n && i <= n - k; ++i) {
    const char* p = memchr(hay + i, needle[0], n - k - i + 1);
    if (p == NULL) return NULL;
    i = (size_t)(p - hay);
    if (memcmp(p, needle, k) == 0) return p;
  }
  return NULL;
}

int sl_s3_xml_find(const char* xml, size_t n, const char* tag, struct s3_xml_element* out) {
  size_t k = strlen(tag);
  char close[80];
  if (k + 4 > sizeof close) return 0;
  snprintf(close, sizeof close, "</%s>", tag);
  for (size_t pos = 0; pos < n;) {
    const char* lt = memchr(xml + pos, '<', n - pos);
    if (lt == NULL) return 0;
    size_t at = (size_t)(lt - xml);
    pos = at + 1;
    if (n - at < k + 2 || memcmp(lt + 1, tag, k) != 0) continue;
    char after = lt[1 + k];  // "<Key>", "<Key/>", "<Key attr=...>", not "<KeyCount>"
    if (after != '>' && after != '/' && after != ' ' && after != '\t' && after != '\r' &&
        after != '\n') {
      continue;
    }
    const char* gt = memchr(lt + 1 + k, '>', n - (at + 1 + k));
    if (gt == NULL) return 0;
    if (gt[-1] == '/') {  // empty element
      out->inner = gt + 1;
      out->inner_len = 0;
      out->end = gt + 1;
      return 1;
    }
    const char* inner = gt + 1;
    const char* end = find_bytes(inner, (size_t)(xml + n - inner), close, k + 3);
    if (end == NULL) return 0;
    out->inner = inner;
    out->inner_len = (size_t)(end - inner);
    out->end = end + k + 3;
    return 1;
  }
  return 0;
}

/// Appends code point `c` as UTF-8; 0 or EILSEQ (NUL, surrogate, out of range).
static int put_utf8(unsigned long c, char* out, size_t* k) {
  unsigned char* o = (unsigned char*)out + *k;
  if (c == 0 || (c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) return EILSEQ;
  if (c < 0x80) {
    o[0] = (unsigned char)c;
    *k += 1;
  } else if (c < 0x800) {
    o[0] = (unsigned char)(0xC0 | (c >> 6));
    o[1] = (unsigned char)(0x80 | (c & 0x3F));
    *k += 2;
  } else if (c < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (c >> 12));
    o[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (c & 0x3F));
    *k += 3;
  } else {
    o[0] = (unsigned char)(0xF0 | (c >> 18));
    o[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (c & 0x3F));
    *k += 4;
  }
  return 0;
}

int sl_s3_xml_decode(const char* in, size_t n, char* out, size_t* out_len) {
  static const struct {
    const char* name;
    char c;
  } named[] = {{"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"quot;", '"'}, {"apos;", '\''}};
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    char c = in[i];
    if (c == '\0' || c == '<') return EILSEQ;
    if (c != '&') {
      out[k++] = c;
      ++i;
      continue;
    }
    const char* semi = memchr(in + i, ';', n - i < 16 ? n - i : 16);
    if (semi == NULL) return EILSEQ;
    size_t len = (size_t)(semi - (in + i)) + 1;  // "&...;"
    if (len > 2 && in[i + 1] == '#') {
      int hex = in[i + 2] == 'x';
      size_t d = i + 2 + (size_t)hex;
      if (d == (size_t)(semi - in)) return EILSEQ;  // "&#;" / "&#x;"
      unsigned long v = 0;
      for (; d < (size_t)(semi - in); ++d) {
        char ch = in[d];
        int digit = ch >= '0' && ch <= '9'                ? ch - '0'
                    : hex && ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                    : hex && ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                                    : -1;
        if (digit < 0) return EILSEQ;
        v = v * (hex ? 16u : 10u) + (unsigned long)digit;
        if (v > 0x10FFFF) return EILSEQ;
      }
      if (put_utf8(v, out, &k) != 0) return EILSEQ;
    } else {
      size_t e = 0;
      while (e < sizeof named / sizeof named[0] &&
             (strlen(named[e].name) != len - 1 ||
              memcmp(in + i + 1, named[e].name, len - 1) != 0)) {
        ++e;
      }
      if (e == sizeof named / sizeof named[0]) return EILSEQ;
      out[k++] = named[e].c;
    }
    i += len;
  }
  out[k] = '\0';
  *out_len = k;
  return 0;
}

/// The decoded text of <tag> in xml[0, n) into out (cap bytes); "" when
/// absent, too long or malformed.
static void xml_field(const char* xml, size_t n, const char* tag, char* out, size_t cap) {
  struct s3_xml_element e;
  size_t len;
  out[0] = '\0';
  if (!sl_s3_xml_find(xml, n, tag, &e) || e.inner_len >= cap ||
      sl_s3_xml_decode(e.inner, e.inner_len, out, &len) != 0) {
    out[0] = '\0';
  }
}

size_t sl_s3_error_text(const char* xml, size_t n, char* out, size_t cap) {
  char code[128], message[512], endpoint[256], region[64];
  if (cap == 0) return 0;
  out[0] = '\0';
  xml_field(xml, n, "Code", code, sizeof code);
  if (code[0] == '\0') return 0;
  xml_field(xml, n, "Message", message, sizeof message);
  xml_field(xml, n, "Endpoint", endpoint, sizeof endpoint);
  xml_field(xml, n, "Region", region, sizeof region);
  // A 301 PermanentRedirect names the endpoint only: its region is the
  // part after "s3." (or the legacy "s3-") in an AWS host name.
  const char* r = strstr(endpoint, "s3.");
  if (r == NULL) r = strstr(endpoint, "s3-");
  const char* aws = strstr(endpoint, ".amazonaws.com");
  if (region[0] == '\0' && r != NULL && aws != NULL && r + 3 < aws) {
    size_t k = (size_t)(aws - (r + 3));
    if (k < sizeof region && memchr(r + 3, '.', k) == NULL) {
      memcpy(region, r + 3, k);
      region[k] = '\0';
    }
  }
  char where[512] = "";
  if (endpoint[0] != '\0' || region[0] != '\0') {
    // AWS tools follow such an answer to the bucket's region; sluice asks.
    snprintf(where, sizeof where, " (%s%s%s%s%s%s)", endpoint[0] != '\0' ? "endpoint " : "",
             endpoint, endpoint[0] != '\0' && region[0] != '\0' ? ", " : "",
             region[0] != '\0' ? "region " : "", region,
             region[0] != '\0' ? ": set the bucket's region (--region, AWS_REGION or the "
                                  "region option)" : "");
  }
  int w = snprintf(out, cap, "%s%s%s%s", code, message[0] != '\0' ? ": " : "", message, where);
  size_t len = w < 0 ? 0 : (size_t)w < cap ? (size_t)w : cap - 1;
  return len;
}
