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
  // Concatenate by hand: "prefix: old", truncated to the message size.
  size_t cap = sizeof error->message - 1, n = 0;
  for (const char* parts[3] = {prefix, ": ", old}, **p = parts; p < parts + 3; ++p) {
    size_t len = strlen(*p);
    if (len > cap - n) len = cap - n;
    memcpy(error->message + n, *p, len);
    n += len;
  }
  error->message[n] = '\0';
  return error->code;
}

void sl_error_clear(struct sluice_error* error) {
  if (error == NULL) return;
  error->code = 0;
  error->message[0] = '\0';
}
