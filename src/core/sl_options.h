// Format options as the API takes them: "key=value,key=value".
#ifndef SL_OPTIONS_H
#define SL_OPTIONS_H

#include <stddef.h>

struct sl_option {
  const char* key;  ///< not NUL-terminated
  size_t key_len;
  const char* value;  ///< not NUL-terminated
  size_t value_len;
};

/// The next option of the list at *cursor (advanced past it): 1 and *out;
/// 0 at the end of the list; -1 when an item has no '=' (*out->key, key_len
/// is the whole item, for the message). Empty items (",,") are skipped. A
/// lone comma right after '=' is the value: "delimiter=,,header=false" is
/// delimiter "," and header "false"; "null=,header=false" has an empty null.
int sl_option_next(const char** cursor, struct sl_option* out);

/// The first ',' of `s` that separates items, or NULL: commas inside a
/// bracket that follows a letter or digit ("timestamp[us, tz=UTC]",
/// "decimal128(10, 2)") are part of the item.
const char* sl_option_comma(const char* s);

/// Two items of the list with the same key and different values, the
/// first such pair: 1 with *first and *second; else 0. The search stops at
/// an item without '=' (the reader reports it).
int sl_option_conflict(const char* list, struct sl_option* first, struct sl_option* second);

/// Whether the option's key is `key`.
int sl_option_is(const struct sl_option* option, const char* key);

/// The option's value as a flag: 0 and *out = 1 for "true", 0 for "false";
/// -1 (*out unchanged) for any other value.
int sl_option_true_false(const struct sl_option* option, int* out);

#endif
