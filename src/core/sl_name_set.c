#include "sl_name_set.h"

#include <errno.h>
#include <string.h>
#include "sl_alloc.h"
#include "sl_hash.h"

static uint64_t hash_name(const char* p) { return sl_hash_bytes(p, strlen(p)); }

void sl_name_set_init(struct sl_name_set* s, const struct sluice_allocator* alloc) {
  memset(s, 0, sizeof *s);
  s->alloc = alloc;
}

void sl_name_set_release(struct sl_name_set* s) {
  if (s->cap > 0) {
    sl_free(s->alloc, s->keys, s->cap * sizeof *s->keys);
    sl_free(s->alloc, s->values, s->cap * sizeof *s->values);
  }
  sl_name_set_init(s, s->alloc);
}

/// The slot of `name`, or the empty slot where it goes (cap > 0).
static size_t slot_of(const struct sl_name_set* s, const char* name) {
  size_t i = (size_t)hash_name(name) & (s->cap - 1);
  while (s->keys[i] != NULL && strcmp(s->keys[i], name) != 0) i = (i + 1) & (s->cap - 1);
  return i;
}

int64_t sl_name_set_find(const struct sl_name_set* s, const char* name) {
  if (s->n == 0) return -1;
  size_t i = slot_of(s, name);
  return s->keys[i] != NULL ? s->values[i] : -1;
}

/// Room for one more name at a load of at most 1/2 (doubling from 64).
static int reserve_one(struct sl_name_set* s) {
  if (s->n + 1 <= s->cap / 2) return 0;
  size_t cap = s->cap > 0 ? s->cap * 2 : 64;
  if (cap < s->cap || cap > SIZE_MAX / sizeof(int64_t)) return ENOMEM;
  struct sl_name_set grown = {s->alloc, NULL, NULL, cap, 0};
  grown.keys = sl_calloc(s->alloc, cap, sizeof *grown.keys);
  grown.values = sl_calloc(s->alloc, cap, sizeof *grown.values);
  if (grown.keys == NULL || grown.values == NULL) {
    if (grown.keys != NULL) sl_free(s->alloc, grown.keys, cap * sizeof *grown.keys);
    if (grown.values != NULL) sl_free(s->alloc, grown.values, cap * sizeof *grown.values);
    return ENOMEM;
  }
  for (size_t i = 0; i < s->cap; ++i) {
    if (s->keys[i] == NULL) continue;
    size_t j = slot_of(&grown, s->keys[i]);
    grown.keys[j] = s->keys[i];
    grown.values[j] = s->values[i];
  }
  grown.n = s->n;
  sl_name_set_release(s);
  *s = grown;
  return 0;
}

static int insert(struct sl_name_set* s, const char* name, int64_t value, int replace,
                  int64_t* had) {
  *had = -1;
  if (reserve_one(s) != 0) return ENOMEM;
  size_t i = slot_of(s, name);
  if (s->keys[i] != NULL) {
    *had = s->values[i];
    if (replace) s->values[i] = value;
    return 0;
  }
  s->keys[i] = name;
  s->values[i] = value;
  ++s->n;
  return 0;
}

int sl_name_set_add(struct sl_name_set* s, const char* name, int64_t value, int64_t* had) {
  return insert(s, name, value, 0, had);
}

int sl_name_set_put(struct sl_name_set* s, const char* name, int64_t value) {
  int64_t had;
  return insert(s, name, value, 1, &had);
}
