// One hash for the project's hash tables: xxHash's XXH3 (Debian's libxxhash,
// compiled in from its header, so there is no library to link). Fast on the
// short keys the tables hold (names, dictionary values, partition keys) and
// well spread in the low bits the tables mask with.
#ifndef SLUICE_CORE_SL_HASH_H
#define SLUICE_CORE_SL_HASH_H

#include <stddef.h>
#include <stdint.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t sl_hash_bytes(const void* data, size_t size) {
  return XXH3_64bits(data, size);
}

#endif
