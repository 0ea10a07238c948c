// A growable, 64-byte aligned byte buffer: the unit builders write into and
// then hand over to an ArrowArray without copying.
#ifndef SL_BUFFER_H
#define SL_BUFFER_H

#include <stdint.h>
#include <string.h>

#include "sluice.h"
#include "sl_endian.h"
#include "sl_ref.h"

struct sl_buffer {
  uint8_t* data;        ///< NULL until the first reserve
  int64_t size;         ///< bytes in use
  int64_t capacity;     ///< bytes allocated (a multiple of 64, unless borrowed)
  const struct sluice_allocator* alloc;
  /// Non-NULL: `data` is memory this reference owns (a caller's final
  /// columns, see sl_split_place), written in place. It is never freed here;
  /// growing past its capacity moves the bytes to owned memory. Not counted:
  /// the array the bytes end in retains it (sl_array_take_buffer).
  struct sl_ref* borrowed;
};

void sl_buffer_init(struct sl_buffer* buf, const struct sluice_allocator* alloc);
/// Ensures room for `additional` more bytes (geometric growth), which the
/// caller is about to write: those pages are mapped at once. ENOMEM/ERANGE.
int sl_buffer_reserve(struct sl_buffer* buf, int64_t additional);
/// Ensures a capacity of `total` bytes (geometric growth) without touching
/// the new memory: for capacity hints and buffers written by index.
int sl_buffer_grow_to(struct sl_buffer* buf, int64_t total);
int sl_buffer_append(struct sl_buffer* buf, const void* data, int64_t n);
/// Appends the low `n` bytes of `v`, most significant first (1 <= n <= 8).
static inline int sl_buffer_append_be(struct sl_buffer* buf, uint64_t v, int n) {
  uint8_t b[8];
  sl_store_be(b, v, n);
  return sl_buffer_append(buf, b, n);
}
/// Appends `n` zero bytes.
int sl_buffer_append_zeros(struct sl_buffer* buf, int64_t n);
/// Makes an empty buffer write into `capacity` bytes at `data`, owned by
/// `owner` (see sl_buffer.borrowed).
void sl_buffer_borrow(struct sl_buffer* buf, uint8_t* data, int64_t capacity,
                      struct sl_ref* owner);
/// Frees the memory (unless borrowed) and resets to empty.
void sl_buffer_reset(struct sl_buffer* buf);
/// Hands the memory to the caller (who frees it with sl_free_buffer(alloc,
/// data, capacity)) and resets the buffer to empty. `*capacity` receives the
/// allocated size. Not for borrowed buffers: see sl_array_take_buffer.
uint8_t* sl_buffer_detach(struct sl_buffer* buf, int64_t* capacity);

/// Unchecked fast append; the caller reserved room before.
static inline void sl_buffer_append_unsafe(struct sl_buffer* buf, const void* data, int64_t n) {
  memcpy(buf->data + buf->size, data, (size_t)n);
  buf->size += n;
}

#endif
