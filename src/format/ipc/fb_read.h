// A small bounds-checked flatbuffer reader. Arrow IPC metadata arrives from
// untrusted files, so every uoffset, soffset, vtable entry, vector length and
// string is checked against the buffer before it is followed; loads go
// through memcpy (little-endian host assumed, as everywhere in sluice) so
// that nothing depends on alignment.
//
// Failures return -1 and record the reason and the flatbuffer-relative byte
// position in the struct fb_buf, which the caller turns into a sluice_error.
#ifndef SL_FB_READ_H
#define SL_FB_READ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/// The flatbuffer bytes plus the first failure seen while reading them.
struct fb_buf {
  const uint8_t* data;
  size_t size;
  const char* why;  ///< static string, NULL while nothing failed
  size_t at;        ///< position (in the flatbuffer) of the failure
};

/// A table: its position and its (checked) vtable.
struct fb_table {
  struct fb_buf* buf;
  size_t pos;        ///< start of the table (where its soffset lives)
  size_t vt;         ///< start of its vtable
  uint16_t vt_size;  ///< bytes in the vtable
  uint16_t size;     ///< bytes of inline table data (from the vtable)
};

/// A vector: `count` elements of `elem_size` bytes starting at `pos`.
struct fb_vec {
  struct fb_buf* buf;
  size_t pos;
  uint32_t count;
  uint32_t elem_size;
};

/// Initialises `buf` over `data`/`size` with no failure recorded.
void sl_fb_buf_init(struct fb_buf* buf, const uint8_t* data, size_t size);

/// Reads the root table. -1 when the buffer is too small or malformed.
int sl_fb_root(struct fb_buf* buf, struct fb_table* out);

/// Scalars of a table field; the default when the field is absent. -1 when
/// the field is present but lies outside the table.
int sl_fb_read_u8(const struct fb_table* t, int slot, uint8_t dflt, uint8_t* out);
int sl_fb_read_i16(const struct fb_table* t, int slot, int16_t dflt, int16_t* out);
int sl_fb_read_i32(const struct fb_table* t, int slot, int32_t dflt, int32_t* out);
int sl_fb_read_i64(const struct fb_table* t, int slot, int64_t dflt, int64_t* out);
/// A bool field (any non-zero byte is true).
int sl_fb_read_bool(const struct fb_table* t, int slot, int dflt, int* out);

/// A sub-table. Returns 1 and fills `out` when present, 0 when absent, -1 on
/// malformed input.
int sl_fb_read_table(const struct fb_table* t, int slot, struct fb_table* out);

/// A vector of `elem_size`-byte elements (4 for offsets to tables/strings,
/// the struct size for structs). 1 present, 0 absent (out->count = 0), -1 bad.
int sl_fb_read_vec(const struct fb_table* t, int slot, uint32_t elem_size, struct fb_vec* out);

/// A string field: `*s` points into the buffer (not NUL-terminated as far as
/// we rely on), `*len` bytes. 1 present, 0 absent (*s = NULL, *len = 0), -1 bad.
int sl_fb_read_string(const struct fb_table* t, int slot, const char** s, uint32_t* len);

/// Element `i` of a vector of tables.
int sl_fb_vec_table(const struct fb_vec* v, uint32_t i, struct fb_table* out);
/// Element `i` of a vector of strings.
int sl_fb_vec_string(const struct fb_vec* v, uint32_t i, const char** s, uint32_t* len);
/// Address of element `i` of a vector of scalars/structs (already bounds-checked
/// as a whole by sl_fb_read_vec). Load with memcpy.
const uint8_t* sl_fb_vec_elem(const struct fb_vec* v, uint32_t i);

/// Little-endian loads from possibly unaligned memory.
static inline int32_t fb_load_i32(const uint8_t* p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline int64_t fb_load_i64(const uint8_t* p) {
  int64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline uint32_t fb_load_u32(const uint8_t* p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

#endif
