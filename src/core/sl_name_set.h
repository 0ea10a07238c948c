// A set of names (NUL-terminated strings the caller keeps alive), each with
// an int64 value: finds duplicate names and looks names up in O(1) each, so
// that wide schemas (100k fields, 1M enum symbols) are not quadratic.
#ifndef SL_NAME_SET_H
#define SL_NAME_SET_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

struct sl_name_set {
  const struct sluice_allocator* alloc;
  const char** keys;  ///< NULL = empty slot; points at the caller's string
  int64_t* values;
  size_t cap;  ///< slots, a power of two (0 before the first add)
  size_t n;
};

/// An empty set (no allocation until the first add).
void sl_name_set_init(struct sl_name_set* s, const struct sluice_allocator* alloc);
void sl_name_set_release(struct sl_name_set* s);
/// The value of `name`, or -1 when it is not in the set.
int64_t sl_name_set_find(const struct sl_name_set* s, const char* name);
/// Adds `name` with `value` unless the set has it: *had is then its value
/// (kept), else -1. 0 or ENOMEM.
int sl_name_set_add(struct sl_name_set* s, const char* name, int64_t value, int64_t* had);
/// Adds `name` with `value`, or sets its value if the set has it. 0 or ENOMEM.
int sl_name_set_put(struct sl_name_set* s, const char* name, int64_t value);

#endif
