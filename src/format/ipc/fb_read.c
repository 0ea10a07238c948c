// Bounds-checked flatbuffer access: see fb_read.h. All positions are size_t
// and every addition is checked against buf->size before it can wrap.
#include "fb_read.h"

#include <string.h>

static int fb_fail(struct fb_buf* buf, size_t at, const char* why) {
  if (buf->why == NULL) {
    buf->why = why;
    buf->at = at;
  }
  return -1;
}

/// 1 if [pos, pos + n) lies inside the buffer.
static int fb_in(const struct fb_buf* buf, size_t pos, size_t n) {
  return pos <= buf->size && n <= buf->size - pos;
}

static uint16_t fb_load_u16(const uint8_t* p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

void sl_fb_buf_init(struct fb_buf* buf, const uint8_t* data, size_t size) {
  buf->data = data;
  buf->size = size;
  buf->why = NULL;
  buf->at = 0;
}

static int fb_table_at(struct fb_buf* buf, size_t pos, struct fb_table* out) {
  if (!fb_in(buf, pos, 4)) return fb_fail(buf, pos, "table outside the flatbuffer");
  int32_t soff = fb_load_i32(buf->data + pos);
  // vtable = pos - soffset, computed in 64 bits so neither sign can wrap.
  int64_t vt = (int64_t)pos - (int64_t)soff;
  if (vt < 0 || !fb_in(buf, (size_t)vt, 4))
    return fb_fail(buf, pos, "vtable outside the flatbuffer");
  uint16_t vt_size = fb_load_u16(buf->data + vt);
  uint16_t tbl_size = fb_load_u16(buf->data + vt + 2);
  if (vt_size < 4 || (vt_size & 1u) != 0 || !fb_in(buf, (size_t)vt, vt_size))
    return fb_fail(buf, (size_t)vt, "bad vtable size");
  if (tbl_size < 4 || !fb_in(buf, pos, tbl_size))
    return fb_fail(buf, pos, "table extends past the flatbuffer");
  out->buf = buf;
  out->pos = pos;
  out->vt = (size_t)vt;
  out->vt_size = vt_size;
  out->size = tbl_size;
  return 0;
}

int sl_fb_root(struct fb_buf* buf, struct fb_table* out) {
  if (!fb_in(buf, 0, 4)) return fb_fail(buf, 0, "flatbuffer shorter than its root offset");
  uint32_t root = fb_load_u32(buf->data);
  return fb_table_at(buf, root, out);
}

/// Offset (within the table) of field `slot` that is `width` bytes wide, or
/// 0 when absent; -1 when it does not fit the table.
static int64_t fb_field(const struct fb_table* t, int slot, size_t width) {
  size_t entry = 4 + 2 * (size_t)slot;
  if (slot < 0 || entry + 2 > t->vt_size) return 0;
  uint16_t off = fb_load_u16(t->buf->data + t->vt + entry);
  if (off == 0) return 0;
  if (off < 4 || (size_t)off + width > t->size)
    return fb_fail(t->buf, t->vt + entry, "field outside its table");
  return off;
}

int sl_fb_read_u8(const struct fb_table* t, int slot, uint8_t dflt, uint8_t* out) {
  int64_t off = fb_field(t, slot, 1);
  if (off < 0) return -1;
  *out = off ? t->buf->data[t->pos + (size_t)off] : dflt;
  return 0;
}

int sl_fb_read_bool(const struct fb_table* t, int slot, int dflt, int* out) {
  uint8_t v;
  if (sl_fb_read_u8(t, slot, dflt ? 1 : 0, &v) != 0) return -1;
  *out = v != 0;
  return 0;
}

int sl_fb_read_i16(const struct fb_table* t, int slot, int16_t dflt, int16_t* out) {
  int64_t off = fb_field(t, slot, 2);
  if (off < 0) return -1;
  if (off == 0) {
    *out = dflt;
  } else {
    memcpy(out, t->buf->data + t->pos + (size_t)off, 2);
  }
  return 0;
}

int sl_fb_read_i32(const struct fb_table* t, int slot, int32_t dflt, int32_t* out) {
  int64_t off = fb_field(t, slot, 4);
  if (off < 0) return -1;
  *out = off ? fb_load_i32(t->buf->data + t->pos + (size_t)off) : dflt;
  return 0;
}

int sl_fb_read_i64(const struct fb_table* t, int slot, int64_t dflt, int64_t* out) {
  int64_t off = fb_field(t, slot, 8);
  if (off < 0) return -1;
  *out = off ? fb_load_i64(t->buf->data + t->pos + (size_t)off) : dflt;
  return 0;
}

/// Follows the uoffset stored at absolute position `at`. 0 on success.
static int fb_follow(struct fb_buf* buf, size_t at, size_t* target) {
  uint32_t rel = fb_load_u32(buf->data + at);
  // at < size <= SIZE_MAX, rel < 2^32: the sum cannot wrap on 64-bit hosts,
  // and fb_in rejects anything beyond the buffer.
  if (rel == 0 || !fb_in(buf, at, (size_t)rel) || !fb_in(buf, at + rel, 4))
    return fb_fail(buf, at, "offset points outside the flatbuffer");
  *target = at + rel;
  return 0;
}

/// Position of the uoffset-valued field `slot`: 1 found, 0 absent, -1 bad.
static int fb_ref(const struct fb_table* t, int slot, size_t* target) {
  int64_t off = fb_field(t, slot, 4);
  if (off <= 0) return (int)off;
  if (fb_follow(t->buf, t->pos + (size_t)off, target) != 0) return -1;
  return 1;
}

int sl_fb_read_table(const struct fb_table* t, int slot, struct fb_table* out) {
  size_t target;
  int rc = fb_ref(t, slot, &target);
  if (rc <= 0) return rc;
  return fb_table_at(t->buf, target, out) == 0 ? 1 : -1;
}

static int fb_vec_at(struct fb_buf* buf, size_t pos, uint32_t elem_size, struct fb_vec* out) {
  uint32_t count = fb_load_u32(buf->data + pos);
  uint64_t bytes = (uint64_t)count * elem_size;
  if (bytes > buf->size || !fb_in(buf, pos + 4, (size_t)bytes))
    return fb_fail(buf, pos, "vector extends past the flatbuffer");
  out->buf = buf;
  out->pos = pos + 4;
  out->count = count;
  out->elem_size = elem_size;
  return 0;
}

int sl_fb_read_vec(const struct fb_table* t, int slot, uint32_t elem_size, struct fb_vec* out) {
  size_t target;
  out->buf = t->buf;
  out->pos = 0;
  out->count = 0;
  out->elem_size = elem_size;
  int rc = fb_ref(t, slot, &target);
  if (rc <= 0) return rc;
  return fb_vec_at(t->buf, target, elem_size, out) == 0 ? 1 : -1;
}

static int fb_string_at(struct fb_buf* buf, size_t pos, const char** s, uint32_t* len) {
  struct fb_vec v;
  if (fb_vec_at(buf, pos, 1, &v) != 0) return -1;
  *s = (const char*)(buf->data + v.pos);
  *len = v.count;
  return 0;
}

int sl_fb_read_string(const struct fb_table* t, int slot, const char** s, uint32_t* len) {
  size_t target;
  *s = NULL;
  *len = 0;
  int rc = fb_ref(t, slot, &target);
  if (rc <= 0) return rc;
  return fb_string_at(t->buf, target, s, len) == 0 ? 1 : -1;
}

const uint8_t* sl_fb_vec_elem(const struct fb_vec* v, uint32_t i) {
  return v->buf->data + v->pos + (size_t)i * v->elem_size;
}

int sl_fb_vec_table(const struct fb_vec* v, uint32_t i, struct fb_table* out) {
  size_t target;
  if (i >= v->count || v->elem_size != 4) return fb_fail(v->buf, v->pos, "vector index out of range");
  if (fb_follow(v->buf, v->pos + (size_t)i * 4, &target) != 0) return -1;
  return fb_table_at(v->buf, target, out);
}

int sl_fb_vec_string(const struct fb_vec* v, uint32_t i, const char** s, uint32_t* len) {
  size_t target;
  if (i >= v->count || v->elem_size != 4) return fb_fail(v->buf, v->pos, "vector index out of range");
  if (fb_follow(v->buf, v->pos + (size_t)i * 4, &target) != 0) return -1;
  return fb_string_at(v->buf, target, s, len);
}
