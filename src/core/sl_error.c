#include "sl_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int sl_error_set(struct sluice_error* error, int code, const char* fmt, ...) {
  if (error != NULL) {
    va_list args;
    va_start(args, fmt);
    vsnprintf(error->message, sizeof error->message, fmt, args);
    va_end(args);
    error->code = code;
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

int sl_error_prefix(struct sluice_error* error, const char* fmt, ...) {
  if (error == NULL) return EIO;
  char prefix[512];
  va_list args;
  va_start(args, fmt);
  vsnprintf(prefix, sizeof prefix, fmt, args);
  va_end(args);
  char old[sizeof error->message];
  memcpy(old, error->message, sizeof old);
  old[sizeof old - 1] = '\0';
  // "prefix: old". An old message too long for what is left keeps its start
  // and its end around " [...] ": the end may be what a caller tells the
  // error by (a Python traceback's last line, as sl_input_error keeps it).
  static const char cut[] = " [...] ";
  size_t cap = sizeof error->message - 1;
  size_t plen = complete_utf8(prefix, strlen(prefix)), olen = complete_utf8(old, strlen(old));
  size_t room = cap - plen - 2;  // plen < 512 < cap - 2
  const char* tail = old + olen;
  size_t head = olen;
  if (olen > room) {
    head = (room - (sizeof cut - 1)) / 4;
    while (head > 0 && ((unsigned char)old[head] & 0xC0) == 0x80) --head;  // whole characters
    tail = old + olen - (room - (sizeof cut - 1) - head);
    while (((unsigned char)*tail & 0xC0) == 0x80) ++tail;
  }
  snprintf(error->message, sizeof error->message, "%.*s: %.*s%s%.*s", (int)plen, prefix,
           (int)head, old, olen > room ? cut : "", (int)(old + olen - tail), tail);
  return error->code;
}

void sl_error_clear(struct sluice_error* error) {
  if (error == NULL) return;
  error->code = 0;
  error->message[0] = '\0';
}
