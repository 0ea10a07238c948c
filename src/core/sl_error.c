#include "sl_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sl_error_set(struct sluice_error* error, int code, const char* fmt, ...) {
  if (error != NULL) {
    // Formatted at full length first: a message naming a long object (a
    // 1 KiB S3 key) keeps its end, where the reason is (sl_error_set_ends).
    char full[8192];
    va_list args, again;
    va_start(args, fmt);
    va_copy(again, args);
    int n = vsnprintf(full, sizeof full, fmt, args);
    va_end(args);
    if (n < 0) full[0] = '\0';
    size_t len = n < 0 ? 0 : (size_t)n < sizeof full ? (size_t)n : sizeof full - 1;
    // Longer still (a 9 KB URL): formatted again whole, so that the end kept
    // is the message's, not the middle where the buffer cut it. (malloc, not
    // the allocator hook: an error message is no data, and a failure here
    // only keeps the cut text.)
    char* whole = n > 0 && (size_t)n >= sizeof full ? malloc((size_t)n + 1) : NULL;
    if (whole != NULL && vsnprintf(whole, (size_t)n + 1, fmt, again) == n) {
      sl_error_set_ends(error, code, "", whole, (size_t)n);
    } else if (len >= sizeof error->message) {
      sl_error_set_ends(error, code, "", full, len);
    } else {
      memcpy(error->message, full, len + 1);
      error->code = code;
    }
    free(whole);
    va_end(again);
  }
  return code;
}

/// n less a UTF-8 sequence cut off at the end of s[0..n) (vsnprintf cuts a
/// message at its buffer's size, whatever the bytes).
static size_t complete_utf8(const char* s, size_t n) {
  size_t lead = n, back = 0;
  while (lead > 0 && back < 4 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80) --lead, ++back;
  if (lead == 0) return n;
  unsigned char c = (unsigned char)s[lead - 1];
  size_t want = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return want > back + 1 ? lead - 1 : n;
}

int sl_error_set_ends(struct sluice_error* error, int code, const char* lead, const char* text,
                      size_t text_len) {
  if (error == NULL) return code;
  static const char cut[] = " [...] ";
  size_t cap = sizeof error->message - 1;
  size_t llen = strlen(lead);
  llen = complete_utf8(lead, llen < cap / 2 ? llen : cap / 2);  // leaves room for " [...] "
  size_t tlen = complete_utf8(text, text_len), room = cap - llen;
  const char* tail = text + tlen;
  size_t head = tlen;
  if (tlen > room) {
    head = (room - (sizeof cut - 1)) / 4;
    while (head > 0 && ((unsigned char)text[head] & 0xC0) == 0x80) --head;  // whole characters
    tail = text + tlen - (room - (sizeof cut - 1) - head);
    while (((unsigned char)*tail & 0xC0) == 0x80) ++tail;
  }
  snprintf(error->message, sizeof error->message, "%.*s%.*s%s%.*s", (int)llen, lead, (int)head,
           text, tlen > room ? cut : "", (int)(text + tlen - tail), tail);
  error->code = code;
  return code;
}

int sl_error_prefix(struct sluice_error* error, const char* fmt, ...) {
  if (error == NULL) return EIO;
  char lead[512];
  va_list args;
  va_start(args, fmt);
  int n = vsnprintf(lead, sizeof lead - 2, fmt, args);
  va_end(args);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof lead - 3 ? (size_t)n : sizeof lead - 3;
  len = complete_utf8(lead, len);  // a character vsnprintf cut off
  memcpy(lead + len, ": ", 3);     // "prefix: old"
  char old[sizeof error->message];
  memcpy(old, error->message, sizeof old);
  old[sizeof old - 1] = '\0';
  return sl_error_set_ends(error, error->code, lead, old, strlen(old));
}

int sl_error_names(const struct sluice_error* error, const char* name) {
  if (strstr(error->message, name) != NULL) return 1;
  const char* cut = strstr(error->message, " [...] ");
  size_t k = cut != NULL ? (size_t)(cut - error->message) : 0;
  return k > 0 && k < strlen(name) && strncmp(error->message, name, k) == 0;
}

int sl_error_name(struct sluice_error* error, const char* name) {
  if (error == NULL) return EIO;
  if (name == NULL || name[0] == '\0' || sl_error_names(error, name)) return error->code;
  return sl_error_prefix(error, "%s", name);
}

void sl_error_clear(struct sluice_error* error) {
  if (error == NULL) return;
  error->code = 0;
  error->message[0] = '\0';
}
