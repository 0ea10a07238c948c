#include "sl_ref.h"

#include "sl_alloc.h"

void sl_ref_init(struct sl_ref* ref, void (*destroy)(struct sl_ref*)) {
  atomic_init(&ref->count, 1);
  ref->destroy = destroy;
}

struct sl_ref* sl_ref_retain(struct sl_ref* ref) {
  if (ref != NULL) atomic_fetch_add_explicit(&ref->count, 1, memory_order_relaxed);
  return ref;
}

void sl_ref_release(struct sl_ref* ref) {
  if (ref == NULL) return;
  if (atomic_fetch_sub_explicit(&ref->count, 1, memory_order_acq_rel) == 1) ref->destroy(ref);
}

struct buffer_ref {
  struct sl_ref ref;  // first, so the ref pointer is the struct pointer
  const struct sluice_allocator* alloc;
  void* data;
  size_t size;
};

static void buffer_ref_destroy(struct sl_ref* ref) {
  struct buffer_ref* b = (struct buffer_ref*)ref;
  sl_free_buffer(b->alloc, b->data, b->size);
  sl_free(b->alloc, b, sizeof *b);
}

struct sl_ref* sl_ref_wrap_buffer(const struct sluice_allocator* alloc, void* data,
                                  size_t size) {
  struct buffer_ref* b = sl_alloc(alloc, sizeof *b);
  if (b == NULL) return NULL;
  sl_ref_init(&b->ref, buffer_ref_destroy);
  b->alloc = alloc;
  b->data = data;
  b->size = size;
  return &b->ref;
}
