// A minimal flatbuffer builder, enough for Arrow IPC metadata (Message,
// Schema, Footer). It builds back to front like the reference builder: a
// child object (string, vector, table) is finished before the parent that
// points at it, so that every uoffset points forward, as the format requires.
// Objects are named by fb_ref: their distance from the end of the buffer,
// which stays valid while the buffer grows downwards.
//
// Errors are sticky: after an allocation failure every call is a no-op that
// returns 0 and sl_fb_finish reports ENOMEM, so callers check once at the end.
#ifndef SL_FB_BUILD_H
#define SL_FB_BUILD_H

#include <stddef.h>
#include <stdint.h>

#include "sluice.h"

/// Reference to a finished object; 0 = none (absent field).
typedef uint32_t fb_ref;

/// The most vtable slots a table may use (Arrow's tables use at most 7).
#define FB_MAX_SLOTS 16

struct fb_builder {
  const struct sluice_allocator* alloc;
  uint8_t* buf;         ///< data lives in buf[cap - used, cap)
  size_t cap;
  size_t used;
  size_t minalign;      ///< largest alignment used so far
  int failed;           ///< sticky ENOMEM / overflow
  int in_table;
  size_t table_start;   ///< `used` when the open table was started
  int n_slots;          ///< 1 + highest slot set in the open table
  uint32_t slots[FB_MAX_SLOTS];  ///< `used` right after the field was pushed; 0 = unset
  fb_ref* stack;        ///< scratch stack of refs for vectors of offsets
  size_t stack_n;
  size_t stack_cap;
};

/// Makes an empty builder. Nothing is allocated until the first push.
void sl_fb_init(struct fb_builder* b, const struct sluice_allocator* alloc);
/// Empties the builder for the next buffer, keeping its memory.
void sl_fb_reset(struct fb_builder* b);
/// Frees the builder's memory.
void sl_fb_free(struct fb_builder* b);

/// A string (length-prefixed, NUL-terminated).
fb_ref sl_fb_string(struct fb_builder* b, const char* s, size_t n);

/// Reserves a vector of `n` inline elements of `elem_size` bytes aligned to
/// `align` (structs or scalars) and returns where to store them, little
/// endian, element i at ptr + i * elem_size. The pointer is valid only until
/// the next builder call. Returns NULL on failure (ref is then 0).
uint8_t* sl_fb_vector_reserve(struct fb_builder* b, size_t n, size_t elem_size, size_t align,
                           fb_ref* ref);

/// Pushes a ref on the scratch stack (to collect a vector's elements while
/// building them one by one, e.g. recursively).
void sl_fb_stack_push(struct fb_builder* b, fb_ref ref);
/// Current stack depth (remember it before pushing a vector's elements).
size_t sl_fb_stack_depth(const struct fb_builder* b);
/// Makes a vector of offsets from the refs pushed since depth `base` (in push
/// order) and pops them.
fb_ref sl_fb_vector_from_stack(struct fb_builder* b, size_t base);

/// Starts a table. Tables do not nest: build children first.
void sl_fb_table_start(struct fb_builder* b);
void sl_fb_add_u8(struct fb_builder* b, int slot, uint8_t v);
void sl_fb_add_i16(struct fb_builder* b, int slot, int16_t v);
void sl_fb_add_i32(struct fb_builder* b, int slot, int32_t v);
void sl_fb_add_i64(struct fb_builder* b, int slot, int64_t v);
/// An offset field pointing to a finished object (ignored when ref is 0).
void sl_fb_add_ref(struct fb_builder* b, int slot, fb_ref ref);
/// Writes the table and its vtable.
fb_ref sl_fb_table_end(struct fb_builder* b);

/// Writes the root offset. On success *data/*size describe the finished
/// buffer (owned by the builder; size is a multiple of 8) and 0 is returned.
int sl_fb_finish(struct fb_builder* b, fb_ref root, const uint8_t** data, size_t* size,
              struct sluice_error* error);

/// Little-endian stores into a reserved vector, whatever the host order.
void sl_fb_store_le32(uint8_t* p, int32_t v);
void sl_fb_store_le64(uint8_t* p, int64_t v);

#endif
