// sl_array_filter: the rows of an array that a selection bitmap keeps, as a
// new array with offset 0 and buffers of its own. Every node is filtered
// with a selection in its own logical rows: the caller's bitmap for the
// top node and for struct and sparse union children (which line up with
// their parent row for row), and a list of (start, length) ranges for the
// children of lists and dense unions (whose rows come from offsets).
#include <stdint.h>
#include <string.h>

#include "sl_alloc.h"
#include "sl_endian.h"
#include "sl_array.h"
#include "sl_error.h"
#include "sl_row_filter.h"
#include "sl_type.h"

#define FILTER_MAX_DEPTH 64

/// Which rows of a node to keep. Node row r is at physical index
/// node->offset + base + r.
struct filter_sel {
  const uint8_t* bits;    ///< non-NULL: keep row r < n_bits when bit r is set
  int64_t n_bits;
  const int64_t* ranges;  ///< else n_ranges (start, length) pairs, in order
  int64_t n_ranges;
  int64_t base;   ///< a struct or sparse union parent's offset, passed down
  int64_t count;  ///< rows kept
};

/// Word `w` of a selection bitmap, LSB first, bits past n_bits cleared (the
/// caller's last byte may carry junk, and we must not read past it).
static inline uint64_t sel_word(const uint8_t* bits, int64_t n_bits, int64_t w) {
  int64_t left = n_bits - w * 64;
  const uint8_t* p = bits + w * 8;
  if (left >= 64) return sl_load_le64(p);
  uint64_t v = 0;
  for (int64_t i = 0; i * 8 < left; ++i) v |= (uint64_t)p[i] << (8 * i);
  return v & ((UINT64_C(1) << left) - 1);
}

static inline int64_t sel_n_words(const struct filter_sel* sel) {
  return (sel->n_bits + 63) / 64;
}

/// Walks the kept rows as maximal runs of consecutive rows (ranges as given).
struct run_iter {
  const struct filter_sel* sel;
  int64_t i;      ///< next range, or the bitmap word `word` came from
  int64_t n_words;
  uint64_t word;  ///< bits of word i not yet visited
};

static inline void run_iter_init(struct run_iter* it, const struct filter_sel* sel) {
  it->sel = sel;
  it->i = sel->bits != NULL ? -1 : 0;
  it->n_words = sel_n_words(sel);
  it->word = 0;
}

/// The next run of kept rows: 1, or 0 after the last.
static inline int run_next(struct run_iter* it, int64_t* start, int64_t* len) {
  const struct filter_sel* sel = it->sel;
  if (sel->bits == NULL) {
    if (it->i >= sel->n_ranges) return 0;
    *start = sel->ranges[2 * it->i];
    *len = sel->ranges[2 * it->i + 1];
    it->i++;
    return 1;
  }
  while (it->word == 0) {
    if (++it->i >= it->n_words) return 0;
    it->word = sel_word(sel->bits, sel->n_bits, it->i);
  }
  int tz = __builtin_ctzll(it->word);
  *start = it->i * 64 + tz;
  uint64_t rest = ~(it->word >> tz);  // zero bits where the run goes on
  if (rest != 0) {
    int ones = __builtin_ctzll(rest);
    if (tz + ones < 64) {
      *len = ones;
      it->word &= ~((UINT64_C(1) << (tz + ones)) - 1);
      return 1;
    }
  }
  // The run reaches the end of the word: follow it into the next words.
  *len = 64 - tz;
  it->word = 0;
  while (++it->i < it->n_words) {
    uint64_t w = sel_word(sel->bits, sel->n_bits, it->i);
    if (w == ~UINT64_C(0)) {
      *len += 64;
      continue;
    }
    int ones = __builtin_ctzll(~w);
    *len += ones;
    it->word = w & ~((UINT64_C(1) << ones) - 1);
    break;
  }
  return 1;
}

/* ---- Output buffers ------------------------------------------------------- */

static int oom(const struct ArrowSchema* schema, size_t bytes, struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "out of memory filtering column '%s' (%zu bytes)",
                      schema->name != NULL ? schema->name : "", bytes);
}

/// A new owned buffer of `n` items of `width` bytes as buffer `i` of `out`,
/// zero-filled when `zero` (bitmaps, which are written by OR).
static int new_buffer(struct ArrowArray* out, int64_t i, int64_t n, int64_t width, int zero,
                      const struct ArrowSchema* schema, uint8_t** data,
                      struct sluice_error* error) {
  size_t bytes;
  if (sl_mul_size((size_t)n, (size_t)width, &bytes) != 0) {
    return sl_error_set(error, ERANGE, "filtering column '%s': %lld values of %lld bytes overflow",
                        schema->name != NULL ? schema->name : "", (long long)n, (long long)width);
  }
  *data = sl_alloc_buffer(sl_array_allocator(out), bytes);
  if (*data == NULL) return oom(schema, bytes, error);
  if (zero) memset(*data, 0, bytes);
  else sl_prefault(*data, bytes);  // written whole: map the pages in one go
  sl_array_set_buffer_owned(out, i, *data, (int64_t)bytes);
  return 0;
}

/* ---- Bits: validity and bool values ---------------------------------------- */

/// ORs `n` bits of `src` from bit `s` into `dst` (zeroed) from bit `d`, one
/// destination byte at a time; reads no byte of `src` past the last bit.
static void copy_bits(uint8_t* dst, int64_t d, const uint8_t* src, int64_t s, int64_t n) {
  if (((d | s) & 7) == 0 && n >= 8) {
    int64_t bytes = n / 8;
    memcpy(dst + d / 8, src + s / 8, (size_t)bytes);
    d += bytes * 8;
    s += bytes * 8;
    n -= bytes * 8;
  }
  while (n > 0) {
    int dbit = (int)(d & 7), sbit = (int)(s & 7);
    int k = 8 - dbit;
    if (k > n) k = (int)n;
    unsigned v = (unsigned)src[s >> 3] >> sbit;
    if (sbit + k > 8) v |= (unsigned)src[(s >> 3) + 1] << (8 - sbit);
    v &= (1u << k) - 1;
    dst[d >> 3] |= (uint8_t)(v << dbit);
    d += k;
    s += k;
    n -= k;
  }
}

static int64_t count_set_bits(const uint8_t* bits, int64_t n) {
  int64_t set = 0;
  for (int64_t w = 0; w * 64 < n; ++w) set += __builtin_popcountll(sel_word(bits, n, w));
  return set;
}

/// 64 bits of `bits` from bit `pos`; bytes holding no bit below `end` are
/// not read (they may lie past the buffer) and read as zero.
static inline uint64_t load_bits64(const uint8_t* bits, int64_t pos, int64_t end) {
  const uint8_t* p = bits + (pos >> 3);
  int shift = (int)(pos & 7);
  int64_t avail = (end + 7) / 8 - (pos >> 3);
  uint64_t lo = 0, hi = 0;
  if (avail >= 9) {
    lo = sl_load_le64(p);
    hi = p[8];
  } else {
    for (int64_t i = 0; i < avail && i < 8; ++i) lo |= (uint64_t)p[i] << (8 * i);
    if (avail > 8) hi = p[8];
  }
  return shift == 0 ? lo : lo >> shift | hi << (64 - shift);
}

/// ORs the low `k` bits of `v` (1 <= k <= 64, no higher bit set) into `dst`
/// from bit `d`; dst must have 8 bytes of room past its last bit.
static inline void or_bits(uint8_t* dst, int64_t d, uint64_t v, int k) {
  uint8_t* p = dst + (d >> 3);
  int shift = (int)(d & 7);
  sl_store_le64(p, sl_load_le64(p) | v << shift);
  if (shift != 0 && shift + k > 64) p[8] |= (uint8_t)(v >> (64 - shift));
}

/// The kept bits of a bitmap starting at physical bit `first`, packed into
/// `dst` (zeroed, with 8 bytes of slack). A selection bitmap goes a word at a
/// time: one load of the 64 source bits it covers, then its kept bits.
static void gather_bits(const uint8_t* src, int64_t first, const struct filter_sel* sel,
                        uint8_t* dst) {
  if (sel->count == 0) return;
  int64_t d = 0;
  if (sel->bits != NULL) {
    int64_t n_words = sel_n_words(sel), end = first + sel->n_bits;
    for (int64_t w = 0; w < n_words; ++w) {
      uint64_t word = sel_word(sel->bits, sel->n_bits, w);
      if (word == 0) continue;
      uint64_t from = load_bits64(src, first + w * 64, end);
      if (word == ~UINT64_C(0)) {
        or_bits(dst, d, from, 64);
        d += 64;
        continue;
      }
      uint64_t packed = 0;
      int k = 0;
      do {
        packed |= (from >> __builtin_ctzll(word) & 1) << k++;
        word &= word - 1;
      } while (word != 0);
      or_bits(dst, d, packed, k);
      d += k;
    }
    return;
  }
  for (int64_t r = 0; r < sel->n_ranges; ++r) {
    copy_bits(dst, d, src, first + sel->ranges[2 * r], sel->ranges[2 * r + 1]);
    d += sel->ranges[2 * r + 1];
  }
}

/// Buffer 0 of `out` from in's validity; none when no row kept is null.
static int filter_validity(const struct ArrowSchema* schema, const struct ArrowArray* in,
                           const struct filter_sel* sel, struct ArrowArray* out,
                           struct sluice_error* error) {
  out->null_count = 0;
  if (in->n_buffers < 1 || in->buffers[0] == NULL || in->null_count == 0) return 0;
  uint8_t* dst;
  SL_RETURN_NOT_OK(new_buffer(out, 0, (sel->count + 7) / 8 + 8, 1, 1, schema, &dst, error));
  gather_bits(in->buffers[0], in->offset + sel->base, sel, dst);
  out->null_count = sel->count - count_set_bits(dst, sel->count);
  if (out->null_count == 0) sl_array_set_buffer_owned(out, 0, NULL, 0);
  return 0;
}

/* ---- Fixed-width values ------------------------------------------------------ */

/// The hot loop: a selection bitmap over values of `width` bytes. Inlined
/// with a constant width for the common sizes so each copy is one move.
static inline void gather_fixed_bits(const uint8_t* src, const struct filter_sel* sel,
                                     size_t width, uint8_t* dst) {
  int64_t n_words = sel_n_words(sel);
  for (int64_t w = 0; w < n_words; ++w) {
    uint64_t word = sel_word(sel->bits, sel->n_bits, w);
    if (word == 0) continue;
    const uint8_t* from = src + (size_t)w * 64 * width;
    if (word == ~UINT64_C(0)) {
      memcpy(dst, from, 64 * width);
      dst += 64 * width;
      continue;
    }
    do {
      memcpy(dst, from + (size_t)__builtin_ctzll(word) * width, width);
      dst += width;
      word &= word - 1;
    } while (word != 0);
  }
}

/// The kept values of width `width` from physical index `first` of `src`.
static void gather_fixed(const uint8_t* src, int64_t first, int64_t width,
                         const struct filter_sel* sel, uint8_t* dst) {
  if (sel->count == 0) return;  // an empty input may have no buffer at all
  src += first * width;
  if (sel->bits != NULL) {
    switch (width) {
      case 1: gather_fixed_bits(src, sel, 1, dst); return;
      case 2: gather_fixed_bits(src, sel, 2, dst); return;
      case 4: gather_fixed_bits(src, sel, 4, dst); return;
      case 8: gather_fixed_bits(src, sel, 8, dst); return;
      case 16: gather_fixed_bits(src, sel, 16, dst); return;
      default: gather_fixed_bits(src, sel, (size_t)width, dst); return;
    }
  }
  for (int64_t r = 0; r < sel->n_ranges; ++r) {
    size_t bytes = (size_t)(sel->ranges[2 * r + 1] * width);
    memcpy(dst, src + sel->ranges[2 * r] * width, bytes);
    dst += bytes;
  }
}

/* ---- Ranges for children --------------------------------------------------- */

/// A growing list of (start, length) ranges; adjacent ones merge.
struct range_list {
  int64_t* items;  ///< 2 per range
  int64_t cap;     ///< int64 items allocated
  int64_t n;       ///< ranges
  int64_t rows;    ///< sum of lengths
  const struct sluice_allocator* alloc;
};

static int range_add(struct range_list* l, int64_t start, int64_t len) {
  if (len == 0) return 0;
  l->rows += len;
  if (l->n > 0 && l->items[2 * l->n - 2] + l->items[2 * l->n - 1] == start) {
    l->items[2 * l->n - 1] += len;
    return 0;
  }
  void* items = l->items;
  SL_RETURN_NOT_OK(sl_grow_array(l->alloc, &items, &l->cap, 2 * l->n + 2, sizeof(int64_t)));
  l->items = items;
  l->items[2 * l->n] = start;
  l->items[2 * l->n + 1] = len;
  l->n++;
  return 0;
}

static void range_free(struct range_list* l) {
  sl_free(l->alloc, l->items, (size_t)l->cap * sizeof(int64_t));
  l->items = NULL;
  l->cap = l->n = l->rows = 0;
}

static struct filter_sel ranges_sel(const struct range_list* l) {
  struct filter_sel s = {NULL, 0, l->items, l->n, 0, l->rows};
  return s;
}

/* ---- Offsets: binary, utf8, lists, maps ----------------------------------- */

/// Writes the kept elements' offsets, rebased to start at 0, into `dst` and
/// adds each run's span of child items (or bytes) to `spans` (may be NULL),
/// copying the bytes of `data` (may be NULL) to `out_data`.
static int rebase_offsets(const void* offsets, int large, int64_t first,
                          const struct filter_sel* sel, void* dst, struct range_list* spans,
                          const uint8_t* data, uint8_t* out_data) {
  struct run_iter it;
  run_iter_init(&it, sel);
  int64_t start, len, j = 0, at = 0;
  while (run_next(&it, &start, &len)) {
    int64_t s = first + start;
    int64_t from = sl_offset_at(offsets, s, large);
    int64_t to = sl_offset_at(offsets, s + len, large);
    int64_t shift = at - from;
    if (large) {
      const int64_t* o = (const int64_t*)offsets + s;
      int64_t* out = (int64_t*)dst + j;
      for (int64_t k = 0; k < len; ++k) out[k] = o[k] + shift;
    } else {
      const int32_t* o = (const int32_t*)offsets + s;
      int32_t* out = (int32_t*)dst + j;
      for (int64_t k = 0; k < len; ++k) out[k] = (int32_t)(o[k] + shift);
    }
    if (data != NULL && to > from) memcpy(out_data + at, data + from, (size_t)(to - from));
    if (spans != NULL) SL_RETURN_NOT_OK(range_add(spans, from, to - from));
    j += len;
    at += to - from;
  }
  if (large) ((int64_t*)dst)[j] = at;
  else ((int32_t*)dst)[j] = (int32_t)at;
  return 0;
}

static int64_t kept_span(const void* offsets, int large, int64_t first,
                         const struct filter_sel* sel) {
  struct run_iter it;
  run_iter_init(&it, sel);
  int64_t start, len, total = 0;
  while (run_next(&it, &start, &len)) {
    total += sl_offset_at(offsets, first + start + len, large) -
             sl_offset_at(offsets, first + start, large);
  }
  return total;
}

/* ---- Nodes ------------------------------------------------------------------- */

static int filter_node(const struct ArrowSchema* schema, const struct ArrowArray* in,
                       const struct filter_sel* sel, const struct sluice_allocator* alloc,
                       struct ArrowArray* out, int depth, struct sluice_error* error);

static int filter_binary(const struct ArrowSchema* schema, const struct ArrowArray* in,
                         const struct filter_sel* sel, int large, struct ArrowArray* out,
                         struct sluice_error* error) {
  int64_t first = in->offset + sel->base;
  const void* offsets = in->buffers[1];
  uint8_t *dst_offsets, *dst_data;
  SL_RETURN_NOT_OK(new_buffer(out, 1, sel->count + 1, large ? 8 : 4, 0, schema, &dst_offsets,
                              error));
  int64_t bytes = sel->count > 0 ? kept_span(offsets, large, first, sel) : 0;
  SL_RETURN_NOT_OK(new_buffer(out, 2, bytes, 1, 0, schema, &dst_data, error));
  if (sel->count == 0) {
    memset(dst_offsets, 0, large ? 8 : 4);
    return 0;
  }
  return rebase_offsets(offsets, large, first, sel, dst_offsets, NULL, in->buffers[2], dst_data);
}

static int filter_list(const struct ArrowSchema* schema, const struct ArrowArray* in,
                       const struct filter_sel* sel, int large,
                       const struct sluice_allocator* alloc, struct ArrowArray* out, int depth,
                       struct sluice_error* error) {
  uint8_t* dst_offsets;
  SL_RETURN_NOT_OK(new_buffer(out, 1, sel->count + 1, large ? 8 : 4, 0, schema, &dst_offsets,
                              error));
  struct range_list spans = {.alloc = alloc};
  int rc = 0;
  if (sel->count == 0) memset(dst_offsets, 0, large ? 8 : 4);
  else rc = rebase_offsets(in->buffers[1], large, in->offset + sel->base, sel, dst_offsets,
                           &spans, NULL, NULL);
  if (rc != 0) {
    rc = oom(schema, (size_t)spans.cap * sizeof(int64_t), error);
    range_free(&spans);
    return rc;
  }
  struct filter_sel child = ranges_sel(&spans);
  rc = filter_node(schema->children[0], in->children[0], &child, alloc, out->children[0],
                   depth + 1, error);
  range_free(&spans);
  return rc;
}

static int filter_fixed_size_list(const struct ArrowSchema* schema, const struct ArrowArray* in,
                                  const struct filter_sel* sel, int64_t size,
                                  const struct sluice_allocator* alloc, struct ArrowArray* out,
                                  int depth, struct sluice_error* error) {
  struct range_list spans = {.alloc = alloc};
  struct run_iter it;
  run_iter_init(&it, sel);
  int64_t start, len, first = in->offset + sel->base;
  while (run_next(&it, &start, &len)) {
    if (range_add(&spans, (first + start) * size, len * size) != 0) {
      int rc = oom(schema, (size_t)spans.cap * sizeof(int64_t), error);
      range_free(&spans);
      return rc;
    }
  }
  struct filter_sel child = ranges_sel(&spans);
  int rc = filter_node(schema->children[0], in->children[0], &child, alloc, out->children[0],
                       depth + 1, error);
  range_free(&spans);
  return rc;
}

/// Struct and sparse union children: row for row with the parent.
static int filter_aligned_children(const struct ArrowSchema* schema, const struct ArrowArray* in,
                                   const struct filter_sel* sel,
                                   const struct sluice_allocator* alloc, struct ArrowArray* out,
                                   int depth, struct sluice_error* error) {
  struct filter_sel child = *sel;
  child.base += in->offset;
  for (int64_t i = 0; i < in->n_children; ++i) {
    SL_RETURN_NOT_OK(filter_node(schema->children[i], in->children[i], &child, alloc,
                                 out->children[i], depth + 1, error));
  }
  return 0;
}

static int filter_dense_union(const struct ArrowSchema* schema, const struct sl_type* type,
                              const struct ArrowArray* in, const struct filter_sel* sel,
                              const struct sluice_allocator* alloc, struct ArrowArray* out,
                              int depth, struct sluice_error* error) {
  int64_t n_children = in->n_children;
  int8_t child_of_code[128];
  memset(child_of_code, -1, sizeof child_of_code);
  for (int32_t k = 0; k < type->n_type_codes && k < n_children; ++k)
    if (type->type_codes[k] >= 0) child_of_code[type->type_codes[k]] = (int8_t)k;
  uint8_t *dst_ids, *dst_offsets;
  SL_RETURN_NOT_OK(new_buffer(out, 0, sel->count, 1, 0, schema, &dst_ids, error));
  SL_RETURN_NOT_OK(new_buffer(out, 1, sel->count, 4, 0, schema, &dst_offsets, error));
  int64_t first = in->offset + sel->base;
  gather_fixed(in->buffers[0], first, 1, sel, dst_ids);
  // Each kept row takes one item of its child, at the next offset there.
  size_t lists_bytes = (size_t)n_children * sizeof(struct range_list);
  struct range_list* lists = sl_alloc(alloc, lists_bytes);
  if (lists == NULL) return oom(schema, lists_bytes, error);
  for (int64_t c = 0; c < n_children; ++c) lists[c] = (struct range_list){.alloc = alloc};
  const int8_t* ids = (const int8_t*)dst_ids;
  const int32_t* offsets = (const int32_t*)in->buffers[1];
  int32_t* new_offsets = (int32_t*)dst_offsets;
  struct run_iter it;
  run_iter_init(&it, sel);
  int64_t start, len, j = 0;
  int rc = 0;
  while (rc == 0 && run_next(&it, &start, &len)) {
    for (int64_t k = 0; rc == 0 && k < len; ++k, ++j) {
      int c = ids[j] >= 0 ? child_of_code[ids[j]] : -1;
      if (c < 0) {
        rc = sl_error_set(error, EINVAL, "filtering column '%s': union type id %d is not one of "
                          "its type codes", schema->name != NULL ? schema->name : "", ids[j]);
        break;
      }
      new_offsets[j] = (int32_t)lists[c].rows;
      if (range_add(&lists[c], offsets[first + start + k], 1) != 0)
        rc = oom(schema, (size_t)lists[c].cap * sizeof(int64_t), error);
    }
  }
  for (int64_t c = 0; rc == 0 && c < n_children; ++c) {
    struct filter_sel child = ranges_sel(&lists[c]);
    rc = filter_node(schema->children[c], in->children[c], &child, alloc, out->children[c],
                     depth + 1, error);
  }
  for (int64_t c = 0; c < n_children; ++c) range_free(&lists[c]);
  sl_free(alloc, lists, lists_bytes);
  return rc;
}

/* ---- Dictionaries ------------------------------------------------------------ */

/// Whether every buffer of the tree is held by a reference (views, as
/// readers attach shared dictionaries), so a view tree can outlive `in`.
static int shareable(const struct ArrowArray* a, int depth) {
  if (depth > FILTER_MAX_DEPTH) return 0;
  for (int64_t i = 0; i < a->n_buffers; ++i)
    if (a->buffers[i] != NULL && sl_array_buffer_owner(a, i) == NULL) return 0;
  for (int64_t i = 0; i < a->n_children; ++i)
    if (!shareable(a->children[i], depth + 1)) return 0;
  return a->dictionary == NULL || shareable(a->dictionary, depth + 1);
}

/// A view tree of a shareable() tree, each buffer retaining its own owner.
static int share_tree(const struct ArrowArray* src, const struct sluice_allocator* alloc,
                      struct ArrowArray* out, struct sluice_error* error) {
  SL_RETURN_NOT_OK(sl_array_init(out, alloc, src->n_buffers, src->n_children, error));
  out->length = src->length;
  out->null_count = src->null_count;
  out->offset = src->offset;
  for (int64_t i = 0; i < src->n_buffers; ++i)
    sl_array_set_buffer_view(out, i, src->buffers[i], sl_array_buffer_owner(src, i));
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < src->n_children; ++i)
    rc = share_tree(src->children[i], alloc, out->children[i], error);
  if (rc == 0 && src->dictionary != NULL) {
    rc = sl_array_alloc_dictionary(out, error);
    if (rc == 0) rc = share_tree(src->dictionary, alloc, out->dictionary, error);
  }
  if (rc != 0) out->release(out);
  return rc;
}

/// out's dictionary: in's shared when its memory is reference-held, else a
/// copy (buffers owned by `in`'s node would die with it).
static int filter_dictionary(const struct ArrowSchema* schema, const struct ArrowArray* in,
                             const struct sluice_allocator* alloc, struct ArrowArray* out,
                             int depth, struct sluice_error* error) {
  if (in->dictionary == NULL) {
    return sl_error_set(error, EINVAL, "filtering column '%s': dictionary missing",
                        schema->name != NULL ? schema->name : "");
  }
  SL_RETURN_NOT_OK(sl_array_alloc_dictionary(out, error));
  if (shareable(in->dictionary, depth + 1)) {
    return share_tree(in->dictionary, alloc, out->dictionary, error);
  }
  int64_t all[2] = {0, in->dictionary->length};
  struct filter_sel every = {NULL, 0, all, all[1] > 0 ? 1 : 0, 0, all[1]};
  return filter_node(schema->dictionary, in->dictionary, &every, alloc, out->dictionary,
                     depth + 1, error);
}

/* ---- Dispatch -------------------------------------------------------------- */

static int filter_values(const struct ArrowSchema* schema, const struct sl_type* type,
                         const struct ArrowArray* in, const struct filter_sel* sel,
                         const struct sluice_allocator* alloc, struct ArrowArray* out, int depth,
                         struct sluice_error* error) {
  int64_t first = in->offset + sel->base;
  uint8_t* dst;
  switch (type->id) {
    case SL_TYPE_NA:
      out->null_count = sel->count;
      return 0;
    case SL_TYPE_BOOL:
      SL_RETURN_NOT_OK(filter_validity(schema, in, sel, out, error));
      SL_RETURN_NOT_OK(new_buffer(out, 1, (sel->count + 7) / 8 + 8, 1, 1, schema, &dst, error));
      gather_bits(in->buffers[1], first, sel, dst);
      return 0;
    case SL_TYPE_BINARY: case SL_TYPE_STRING:
    case SL_TYPE_LARGE_BINARY: case SL_TYPE_LARGE_STRING:
      SL_RETURN_NOT_OK(filter_validity(schema, in, sel, out, error));
      return filter_binary(schema, in, sel,
                           type->id == SL_TYPE_LARGE_BINARY || type->id == SL_TYPE_LARGE_STRING,
                           out, error);
    case SL_TYPE_LIST: case SL_TYPE_LARGE_LIST: case SL_TYPE_MAP:
      SL_RETURN_NOT_OK(filter_validity(schema, in, sel, out, error));
      return filter_list(schema, in, sel, type->id == SL_TYPE_LARGE_LIST, alloc, out, depth,
                         error);
    case SL_TYPE_FIXED_SIZE_LIST:
      SL_RETURN_NOT_OK(filter_validity(schema, in, sel, out, error));
      return filter_fixed_size_list(schema, in, sel, type->list_size, alloc, out, depth, error);
    case SL_TYPE_STRUCT:
      SL_RETURN_NOT_OK(filter_validity(schema, in, sel, out, error));
      return filter_aligned_children(schema, in, sel, alloc, out, depth, error);
    case SL_TYPE_SPARSE_UNION:
      SL_RETURN_NOT_OK(new_buffer(out, 0, sel->count, 1, 0, schema, &dst, error));
      gather_fixed(in->buffers[0], first, 1, sel, dst);
      return filter_aligned_children(schema, in, sel, alloc, out, depth, error);
    case SL_TYPE_DENSE_UNION:
      return filter_dense_union(schema, type, in, sel, alloc, out, depth, error);
    default: {
      int64_t width = sl_type_bit_width(type) / 8;
      SL_RETURN_NOT_OK(filter_validity(schema, in, sel, out, error));
      SL_RETURN_NOT_OK(new_buffer(out, 1, sel->count, width, 0, schema, &dst, error));
      if (width > 0) gather_fixed(in->buffers[1], first, width, sel, dst);
      return 0;
    }
  }
}

static int filter_node(const struct ArrowSchema* schema, const struct ArrowArray* in,
                       const struct filter_sel* sel, const struct sluice_allocator* alloc,
                       struct ArrowArray* out, int depth, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  const char* name = schema->name != NULL ? schema->name : "";
  if (depth > FILTER_MAX_DEPTH) {
    return sl_error_set(error, EINVAL, "filtering column '%s': nested deeper than %d levels",
                        name, FILTER_MAX_DEPTH);
  }
  struct sl_type type;
  if (sl_type_parse(schema->format, &type, NULL) != 0) {
    return sl_error_set(error, ENOTSUP, "filtering column '%s': Arrow type '%.64s' is not "
                        "supported", name, schema->format != NULL ? schema->format : "");
  }
  if (type.id == SL_TYPE_NA && schema->n_children == 0) {
    // Nulls whatever the input holds: a scan's schema types the struct
    // fields it drops as null (sl_format_reader.prunes_fields), and an
    // object decoded whole still brings them with their own types.
    SL_RETURN_NOT_OK(sl_array_init(out, alloc, 0, 0, error));
    out->length = out->null_count = sel->count;
    return 0;
  }
  if (in->n_children != schema->n_children ||
      (type.id != SL_TYPE_NA && in->n_buffers != sl_type_n_buffers(type.id))) {
    return sl_error_set(error, EINVAL, "filtering column '%s': %lld buffers and %lld children "
                        "do not fit type '%.64s'", name, (long long)in->n_buffers,
                        (long long)in->n_children, schema->format);
  }
  SL_RETURN_NOT_OK(sl_array_init(out, alloc, sl_type_n_buffers(type.id), in->n_children, error));
  out->length = sel->count;
  int rc = filter_values(schema, &type, in, sel, alloc, out, depth, error);
  if (rc == 0 && schema->dictionary != NULL)
    rc = filter_dictionary(schema, in, alloc, out, depth, error);
  if (rc != 0) out->release(out);
  return rc;
}

int sl_array_filter(const struct ArrowSchema* schema, const struct ArrowArray* in,
                    const uint8_t* selection, int64_t selected,
                    const struct sluice_allocator* alloc, struct ArrowArray* out,
                    struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  // A wrong count would size the buffers short of what the bitmap writes.
  int64_t set = count_set_bits(selection, in->length);
  if (set != selected) {
    return sl_error_set(error, EINVAL, "row filter: %lld rows selected, the selection has %lld",
                        (long long)selected, (long long)set);
  }
  struct filter_sel sel = {selection, in->length, NULL, 0, 0, selected};
  return filter_node(schema, in, &sel, alloc, out, 0, error);
}

/// Whether any buffer of the tree is a view retaining an owner (shared).
static int has_views(const struct ArrowArray* a, int depth) {
  if (depth > FILTER_MAX_DEPTH) return 0;
  for (int64_t i = 0; i < a->n_buffers; ++i)
    if (sl_array_buffer_owner(a, i) != NULL) return 1;
  for (int64_t i = 0; i < a->n_children; ++i)
    if (has_views(a->children[i], depth + 1)) return 1;
  return a->dictionary != NULL && has_views(a->dictionary, depth + 1);
}

/// Replaces the dictionaries filter_node shared (views of the input's)
/// with copies, all the way down.
static int unshare_dictionaries(const struct ArrowSchema* schema, struct ArrowArray* a,
                                const struct sluice_allocator* alloc, int depth,
                                struct sluice_error* error) {
  if (depth > FILTER_MAX_DEPTH) return 0;
  for (int64_t i = 0; i < a->n_children; ++i)
    SL_RETURN_NOT_OK(unshare_dictionaries(schema->children[i], a->children[i], alloc,
                                          depth + 1, error));
  if (a->dictionary == NULL) return 0;
  if (has_views(a->dictionary, depth + 1)) {
    int64_t all[2] = {0, a->dictionary->length};
    struct filter_sel every = {NULL, 0, all, all[1] > 0 ? 1 : 0, 0, all[1]};
    struct ArrowArray copy;
    SL_RETURN_NOT_OK(filter_node(schema->dictionary, a->dictionary, &every, alloc, &copy,
                                 depth + 1, error));
    a->dictionary->release(a->dictionary);
    sl_array_move(&copy, a->dictionary);
  }
  return unshare_dictionaries(schema->dictionary, a->dictionary, alloc, depth + 1, error);
}

int sl_array_copy(const struct ArrowSchema* schema, const struct ArrowArray* in, int64_t row,
                  int64_t n_rows, const struct sluice_allocator* alloc, struct ArrowArray* out,
                  struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (row < 0 || n_rows < 0 || row > in->length || n_rows > in->length - row) {
    return sl_error_set(error, EINVAL, "copying rows %lld..%lld of an array of %lld rows",
                        (long long)row, (long long)(row + n_rows), (long long)in->length);
  }
  int64_t range[2] = {row, n_rows};
  struct filter_sel sel = {NULL, 0, range, n_rows > 0 ? 1 : 0, 0, n_rows};
  SL_RETURN_NOT_OK(filter_node(schema, in, &sel, alloc, out, 0, error));
  int rc = unshare_dictionaries(schema, out, alloc, 0, error);
  if (rc != 0) out->release(out);
  return rc;
}
