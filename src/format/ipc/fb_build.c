#include "format/ipc/fb_build.h"

#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"

/// Flatbuffers are limited to 2 GiB (signed 32-bit offsets).
#define FB_MAX_SIZE ((size_t)0x7FFFFFF0u)

void sl_fb_init(struct fb_builder* b, const struct sluice_allocator* alloc) {
  memset(b, 0, sizeof *b);
  b->alloc = alloc;
  b->minalign = 8;
}

void sl_fb_reset(struct fb_builder* b) {
  b->used = 0;
  b->minalign = 8;
  b->failed = 0;
  b->in_table = 0;
  b->stack_n = 0;
}

void sl_fb_free(struct fb_builder* b) {
  sl_free(b->alloc, b->buf, b->cap);
  sl_free(b->alloc, b->stack, b->stack_cap * sizeof *b->stack);
  sl_fb_init(b, b->alloc);
}

void sl_fb_store_le32(uint8_t* p, int32_t v) {
  uint32_t u = (uint32_t)v;
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(u >> (8 * i));
}

void sl_fb_store_le64(uint8_t* p, int64_t v) {
  uint64_t u = (uint64_t)v;
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(u >> (8 * i));
}

static void store_le16(uint8_t* p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

/// Makes room for `n` more bytes below the current data. The data moves to
/// the end of the new block because positions are counted from the end.
static int fb_grow(struct fb_builder* b, size_t n) {
  if (b->failed) return 0;
  // Allocates on the first push even for 0 bytes so pointers are never NULL.
  if (b->buf != NULL && b->cap - b->used >= n) return 1;
  if (n > FB_MAX_SIZE - b->used) {
    b->failed = 1;
    return 0;
  }
  size_t need = b->used + n;
  size_t cap = b->cap ? b->cap : 1024;
  while (cap < need) cap *= 2;
  uint8_t* buf = sl_alloc(b->alloc, cap);
  if (buf == NULL) {
    b->failed = 1;
    return 0;
  }
  if (b->used) memcpy(buf + cap - b->used, b->buf + b->cap - b->used, b->used);
  sl_free(b->alloc, b->buf, b->cap);
  b->buf = buf;
  b->cap = cap;
  return 1;
}

/// Pointer to the byte at distance `pos` from the end.
static uint8_t* fb_at(struct fb_builder* b, size_t pos) { return b->buf + b->cap - pos; }

/// Pushes `n` bytes and returns where they go.
static uint8_t* fb_push(struct fb_builder* b, size_t n) {
  if (!fb_grow(b, n)) return NULL;
  b->used += n;
  return fb_at(b, b->used);
}

/// Pads so that after pushing `additional` more bytes the position is a
/// multiple of `align` (the reference builder's Prep).
static void fb_prep(struct fb_builder* b, size_t align, size_t additional) {
  if (align > b->minalign) b->minalign = align;
  size_t pad = (~(b->used + additional) + 1) & (align - 1);
  uint8_t* p = fb_push(b, pad);
  if (p != NULL && pad) memset(p, 0, pad);
}

/// Pushes a uoffset to `ref`: relative to where the offset itself lands.
static void fb_push_uoffset(struct fb_builder* b, fb_ref ref) {
  fb_prep(b, 4, 0);
  uint8_t* p = fb_push(b, 4);
  if (p != NULL) sl_fb_store_le32(p, (int32_t)(uint32_t)(b->used - ref));
}

fb_ref sl_fb_string(struct fb_builder* b, const char* s, size_t n) {
  if (n > FB_MAX_SIZE) {
    b->failed = 1;
    return 0;
  }
  fb_prep(b, 4, n + 1);
  uint8_t* p = fb_push(b, n + 1);
  if (p == NULL) return 0;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  p = fb_push(b, 4);
  if (p == NULL) return 0;
  sl_fb_store_le32(p, (int32_t)n);
  return (fb_ref)b->used;
}

uint8_t* sl_fb_vector_reserve(struct fb_builder* b, size_t n, size_t elem_size, size_t align,
                           fb_ref* ref) {
  *ref = 0;
  size_t bytes;
  if (sl_mul_size(n, elem_size, &bytes) != 0 || bytes > FB_MAX_SIZE) {
    b->failed = 1;
    return NULL;
  }
  fb_prep(b, 4, bytes);
  fb_prep(b, align, bytes);
  uint8_t* elems = fb_push(b, bytes);
  if (elems == NULL) return NULL;
  size_t elems_pos = b->used;
  uint8_t* p = fb_push(b, 4);
  if (p == NULL) return NULL;
  sl_fb_store_le32(p, (int32_t)n);
  *ref = (fb_ref)b->used;
  // Pushing the length may have grown (moved) the buffer.
  return fb_at(b, elems_pos);
}

void sl_fb_stack_push(struct fb_builder* b, fb_ref ref) {
  if (b->failed) return;
  if (b->stack_n == b->stack_cap) {
    size_t cap = b->stack_cap ? b->stack_cap * 2 : 32;
    fb_ref* s = sl_alloc(b->alloc, cap * sizeof *s);
    if (s == NULL) {
      b->failed = 1;
      return;
    }
    if (b->stack_n) memcpy(s, b->stack, b->stack_n * sizeof *s);
    sl_free(b->alloc, b->stack, b->stack_cap * sizeof *b->stack);
    b->stack = s;
    b->stack_cap = cap;
  }
  b->stack[b->stack_n++] = ref;
}

size_t sl_fb_stack_depth(const struct fb_builder* b) { return b->stack_n; }

fb_ref sl_fb_vector_from_stack(struct fb_builder* b, size_t base) {
  if (b->failed || base > b->stack_n) {
    b->failed = 1;
    return 0;
  }
  size_t n = b->stack_n - base;
  fb_prep(b, 4, 4 * n);
  // Back to front: the last element is pushed first.
  for (size_t i = n; i-- > 0;) fb_push_uoffset(b, b->stack[base + i]);
  b->stack_n = base;
  uint8_t* p = fb_push(b, 4);
  if (p == NULL) return 0;
  sl_fb_store_le32(p, (int32_t)n);
  return (fb_ref)b->used;
}

void sl_fb_table_start(struct fb_builder* b) {
  if (b->in_table) b->failed = 1;  // a caller bug, reported as a failure
  b->in_table = 1;
  b->table_start = b->used;
  b->n_slots = 0;
  memset(b->slots, 0, sizeof b->slots);
}

static uint8_t* fb_add_scalar(struct fb_builder* b, int slot, size_t size) {
  if (!b->in_table || slot < 0 || slot >= FB_MAX_SLOTS) {
    b->failed = 1;
    return NULL;
  }
  fb_prep(b, size, 0);
  uint8_t* p = fb_push(b, size);
  if (p == NULL) return NULL;
  b->slots[slot] = (uint32_t)b->used;
  if (slot + 1 > b->n_slots) b->n_slots = slot + 1;
  return p;
}

void sl_fb_add_u8(struct fb_builder* b, int slot, uint8_t v) {
  uint8_t* p = fb_add_scalar(b, slot, 1);
  if (p != NULL) *p = v;
}

void sl_fb_add_i16(struct fb_builder* b, int slot, int16_t v) {
  uint8_t* p = fb_add_scalar(b, slot, 2);
  if (p != NULL) store_le16(p, (uint16_t)v);
}

void sl_fb_add_i32(struct fb_builder* b, int slot, int32_t v) {
  uint8_t* p = fb_add_scalar(b, slot, 4);
  if (p != NULL) sl_fb_store_le32(p, v);
}

void sl_fb_add_i64(struct fb_builder* b, int slot, int64_t v) {
  uint8_t* p = fb_add_scalar(b, slot, 8);
  if (p != NULL) sl_fb_store_le64(p, v);
}

void sl_fb_add_ref(struct fb_builder* b, int slot, fb_ref ref) {
  if (ref == 0) return;
  if (!b->in_table || slot < 0 || slot >= FB_MAX_SLOTS) {
    b->failed = 1;
    return;
  }
  fb_push_uoffset(b, ref);
  b->slots[slot] = (uint32_t)b->used;
  if (slot + 1 > b->n_slots) b->n_slots = slot + 1;
}

fb_ref sl_fb_table_end(struct fb_builder* b) {
  if (!b->in_table) b->failed = 1;
  b->in_table = 0;
  // The table starts with an soffset to its vtable, patched below once the
  // vtable (placed just in front of the table) has a position.
  fb_prep(b, 4, 0);
  if (fb_push(b, 4) == NULL) return 0;
  size_t table = b->used;
  size_t inline_size = table - b->table_start;
  size_t vt_size = 4 + 2 * (size_t)b->n_slots;
  if (inline_size > 0xFFFF) {
    b->failed = 1;
    return 0;
  }
  uint8_t* vt = fb_push(b, vt_size);
  if (vt == NULL) return 0;
  store_le16(vt, (uint16_t)vt_size);
  store_le16(vt + 2, (uint16_t)inline_size);
  for (int i = 0; i < b->n_slots; i++) {
    uint16_t at = b->slots[i] ? (uint16_t)(table - b->slots[i]) : 0;
    store_le16(vt + 4 + 2 * i, at);
  }
  // soffset = table address - vtable address (vtable is below the table).
  sl_fb_store_le32(fb_at(b, table), (int32_t)(b->used - table));
  return (fb_ref)table;
}

int sl_fb_finish(struct fb_builder* b, fb_ref root, const uint8_t** data, size_t* size,
              struct sluice_error* error) {
  if (!b->failed && (b->in_table || root == 0)) b->failed = 1;
  fb_prep(b, b->minalign, 4);
  fb_push_uoffset(b, root);
  if (b->failed)
    return sl_error_set(error, ENOMEM, "arrow ipc writer: cannot build flatbuffer metadata "
                                       "(out of memory or over 2 GiB)");
  *data = fb_at(b, b->used);
  *size = b->used;
  return 0;
}
