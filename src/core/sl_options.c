// Format options: see sl_options.h.
#include "sl_options.h"

#include <string.h>

const char* sl_option_comma(const char* s) {
  // A bracket right after a letter or digit holds a type's parameters
  // ("timestamp[us, tz=UTC]", "decimal128(10, 2)"): its commas do not
  // separate. One after anything else is a plain character ("delimiter=[").
  int depth = 0;
  for (const char* p = s; *p != '\0'; ++p) {
    if ((*p == '[' || *p == '(') && p > s && ((p[-1] >= 'a' && p[-1] <= 'z') ||
                                              (p[-1] >= 'A' && p[-1] <= 'Z') ||
                                              (p[-1] >= '0' && p[-1] <= '9'))) {
      ++depth;
    } else if ((*p == ']' || *p == ')') && depth > 0) {
      --depth;
    } else if (*p == ',' && depth == 0) {
      return p;
    }
  }
  // A bracket never closed: its commas separate after all.
  return depth > 0 ? strchr(s, ',') : NULL;
}

int sl_option_next(const char** cursor, struct sl_option* out) {
  const char* o = *cursor;
  while (o != NULL && *o == ',') ++o;
  if (o == NULL || *o == '\0') {
    *cursor = o;
    return 0;
  }
  const char* end = sl_option_comma(o);
  size_t n = end != NULL ? (size_t)(end - o) : strlen(o);
  const char* eq = memchr(o, '=', n);
  // A lone comma right after '=' is the value (delimiter=,), not a separator;
  // "null_values=,header=true" has an empty value.
  if (eq != NULL && end == eq + 1 && (end[1] == ',' || end[1] == '\0')) ++n;
  *cursor = o + n;
  out->key = o;
  if (eq == NULL) {
    out->key_len = n;
    out->value = o + n;
    out->value_len = 0;
    return -1;
  }
  out->key_len = (size_t)(eq - o);
  out->value = eq + 1;
  out->value_len = n - out->key_len - 1;
  return 1;
}

int sl_option_conflict(const char* list, struct sl_option* first, struct sl_option* second) {
  const char* cursor = list;
  while (sl_option_next(&cursor, first) > 0) {
    const char* rest = cursor;
    while (sl_option_next(&rest, second) > 0) {
      if (second->key_len == first->key_len &&
          memcmp(second->key, first->key, first->key_len) == 0 &&
          (second->value_len != first->value_len ||
           memcmp(second->value, first->value, first->value_len) != 0))
        return 1;
    }
  }
  return 0;
}

int sl_option_is(const struct sl_option* option, const char* key) {
  return strlen(key) == option->key_len && memcmp(option->key, key, option->key_len) == 0;
}

int sl_option_true_false(const struct sl_option* option, int* out) {
  size_t n = option->value_len;
  if (n == 4 && memcmp(option->value, "true", 4) == 0) *out = 1;
  else if (n == 5 && memcmp(option->value, "false", 5) == 0) *out = 0;
  else return -1;
  return 0;
}
