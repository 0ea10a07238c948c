// Memory sources: see sl_source_memory.h.
#include "sl_source_memory.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../core/sl_alloc.h"
#include "../core/sl_error.h"

/// Owns the caller's bytes: gives them back (release) with the last view.
struct memory_owner {
  struct sl_ref ref;  // first: the ref pointer is the struct pointer
  const struct sluice_allocator* alloc;
  void (*release)(void*);
  void* release_ctx;
};

static void owner_destroy(struct sl_ref* ref) {
  struct memory_owner* o = (struct memory_owner*)ref;
  if (o->release != NULL) o->release(o->release_ctx);
  sl_free(o->alloc, o, sizeof *o);
}

struct memory_source {
  struct sl_source base;  // first
  const uint8_t* data;
  int64_t cursor;  ///< read_next position
};

static int memory_read_at(struct sl_source* source, int64_t offset, int64_t length,
                          struct sl_view* out, struct sluice_error* error) {
  struct memory_source* m = (struct memory_source*)source;
  SL_RETURN_NOT_OK(sl_source_check_range(source, offset, length, out, error));
  out->data = length == 0 ? sl_empty_bytes : m->data + offset;
  out->size = length;
  out->owner = sl_ref_retain(source->owner);
  return 0;
}

static int memory_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                            struct sluice_error* error) {
  return sl_source_read_forward(source, &((struct memory_source*)source)->cursor, length, out,
                                error);
}

static int memory_seek(struct sl_source* source, int64_t offset, struct sluice_error* error) {
  if (offset < 0 || offset > source->size) {
    return sl_error_set(error, EINVAL, "%s: seek to %lld outside its %lld bytes", source->name,
                        (long long)offset, (long long)source->size);
  }
  ((struct memory_source*)source)->cursor = offset;
  return 0;
}

static void memory_close(struct sl_source* source) {
  const struct sluice_allocator* alloc = source->alloc;
  sl_ref_release(source->owner);
  sl_free(alloc, source->name, strlen(source->name) + 1);
  sl_free(alloc, source, sizeof(struct memory_source));
}

static const struct sl_source_ops memory_source_ops = {
    .read_at = memory_read_at,
    .read_next = memory_read_next,
    .close = memory_close,
    .seek = memory_seek,
};

int sl_memory_source_open(const void* data, size_t size, void (*release)(void*),
                          void* release_ctx, const char* name,
                          const struct sluice_allocator* alloc, struct sl_source** out,
                          struct sluice_error* error) {
  *out = NULL;
  if ((data == NULL && size > 0) || (uint64_t)size > (uint64_t)INT64_MAX) {
    if (release != NULL) release(release_ctx);
    return sl_error_set(error, EINVAL, "%s: %zu bytes at %s", name, size,
                        data == NULL ? "NULL" : "an address past what a size can count");
  }
  struct memory_source* m = sl_calloc(alloc, 1, sizeof *m);
  struct memory_owner* o = sl_alloc(alloc, sizeof *o);
  char* name_copy = sl_strdup(alloc, name);
  if (m == NULL || o == NULL || name_copy == NULL) {
    sl_free(alloc, m, sizeof *m);
    sl_free(alloc, o, sizeof *o);
    if (name_copy != NULL) sl_free(alloc, name_copy, strlen(name_copy) + 1);
    if (release != NULL) release(release_ctx);
    return sl_error_set(error, ENOMEM, "%s: out of memory", name);
  }
  sl_ref_init(&o->ref, owner_destroy);
  o->alloc = alloc;
  o->release = release;
  o->release_ctx = release_ctx;
  m->base.ops = &memory_source_ops;
  m->base.name = name_copy;
  m->base.size = (int64_t)size;
  m->base.alloc = alloc;
  m->base.owner = &o->ref;
  m->base.mapped = 1;  // views cost nothing: readers view the whole object
  m->data = size > 0 ? data : sl_empty_bytes;
  *out = &m->base;
  return 0;
}
