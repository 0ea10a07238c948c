#include "sl_buffer.h"

#include <errno.h>

#include "sl_alloc.h"

void sl_buffer_init(struct sl_buffer* buf, const struct sluice_allocator* alloc) {
  buf->data = NULL;
  buf->size = 0;
  buf->capacity = 0;
  buf->alloc = alloc;
  buf->borrowed = NULL;
}

void sl_buffer_borrow(struct sl_buffer* buf, uint8_t* data, int64_t capacity,
                      struct sl_ref* owner) {
  sl_buffer_reset(buf);
  buf->data = data;
  buf->capacity = capacity;
  buf->borrowed = owner;
}

int sl_buffer_grow_to(struct sl_buffer* buf, int64_t need) {
  if (need <= buf->capacity) return 0;
  int64_t cap = buf->capacity < 64 ? 64 : buf->capacity;
  while (cap < need) cap = cap > INT64_MAX / 2 ? need : cap * 2;
  cap = (cap + 63) & ~(int64_t)63;
  uint8_t* fresh;
  if (buf->borrowed != NULL) {  // outgrew the caller's memory: move to owned
    fresh = sl_alloc_buffer(buf->alloc, (size_t)cap);
    if (fresh == NULL) return ENOMEM;
    if (buf->size > 0) memcpy(fresh, buf->data, (size_t)buf->size);
    buf->borrowed = NULL;
  } else {
    fresh = sl_realloc_buffer(buf->alloc, buf->data, (size_t)buf->capacity, (size_t)cap);
    if (fresh == NULL) return ENOMEM;
  }
  buf->data = fresh;
  buf->capacity = cap;
  return 0;
}

int sl_buffer_reserve(struct sl_buffer* buf, int64_t additional) {
  if (additional < 0 || buf->size > INT64_MAX - additional) return ERANGE;
  int rc = sl_buffer_grow_to(buf, buf->size + additional);
  if (rc == 0 && additional > 0) sl_prefault(buf->data + buf->size, (size_t)additional);
  return rc;
}

int sl_buffer_append(struct sl_buffer* buf, const void* data, int64_t n) {
  int rc = sl_buffer_reserve(buf, n);
  if (rc != 0) return rc;
  if (n > 0) sl_buffer_append_unsafe(buf, data, n);
  return 0;
}

int sl_buffer_append_zeros(struct sl_buffer* buf, int64_t n) {
  int rc = sl_buffer_reserve(buf, n);
  if (rc != 0) return rc;
  if (n > 0) memset(buf->data + buf->size, 0, (size_t)n);
  buf->size += n;
  return 0;
}

void sl_buffer_reset(struct sl_buffer* buf) {
  if (buf->borrowed == NULL) sl_free_buffer(buf->alloc, buf->data, (size_t)buf->capacity);
  buf->borrowed = NULL;
  buf->data = NULL;
  buf->size = 0;
  buf->capacity = 0;
}

uint8_t* sl_buffer_detach(struct sl_buffer* buf, int64_t* capacity) {
  uint8_t* data = buf->data;
  *capacity = buf->capacity;
  buf->data = NULL;
  buf->size = 0;
  buf->capacity = 0;
  return data;
}
