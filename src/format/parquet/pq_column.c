// One column chunk -> one leaf's Arrow buffers. Values are decoded dense
// (nulls are not in the page data) straight into the output buffer at the
// page's first slot, converted in place where the widths allow, then spread
// backwards over the null slots; so required / null-free PLAIN pages cost one
// copy (or none: the decompressor writes into the output).
#include "pq_column.h"

#include <inttypes.h>
#include <string.h>
#include <zlib.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_utf8.h"
#include "pq_column_internal.h"
#include "pq_encoding.h"

void sl_pq_leaf_data_init(struct pq_leaf_data* d, const struct sluice_allocator* alloc) {
  memset(d, 0, sizeof *d);
  sl_buffer_init(&d->def, alloc);
  sl_buffer_init(&d->rep, alloc);
  sl_buffer_init(&d->validity, alloc);
  sl_buffer_init(&d->values, alloc);
  sl_buffer_init(&d->offsets, alloc);
  sl_buffer_init(&d->keys, alloc);
  d->keyed = 0;
  d->n_dict = 0;
}

void sl_pq_leaf_data_reset(struct pq_leaf_data* d) {
  sl_buffer_reset(&d->def);
  sl_buffer_reset(&d->rep);
  sl_buffer_reset(&d->validity);
  sl_buffer_reset(&d->values);
  sl_buffer_reset(&d->offsets);
  sl_buffer_reset(&d->keys);
  d->keyed = 0;
  d->n_levels = d->n_slots = d->null_count = d->n_dict = 0;
}

int sl_pq_column_reader_init(struct pq_column_reader* cr, const struct sluice_allocator* alloc,
                          struct sl_source* source, const struct pq_file_meta* meta,
                          int verify_checksums, struct sluice_error* error) {
  memset(cr, 0, sizeof *cr);
  cr->alloc = alloc;
  cr->source = source;
  cr->meta = meta;
  cr->verify_checksums = verify_checksums;
  struct sl_buffer* bufs[] = {&cr->page, &cr->dict, &cr->dict_out, &cr->dict_ptrs, &cr->dict_lens,
                              &cr->scratch, &cr->ptrs, &cr->lens, &cr->idx, &cr->delta,
                              &cr->saved};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; ++i) sl_buffer_init(bufs[i], alloc);
  return sl_pq_codec_ctx_new(alloc, &cr->codec, error);
}

void sl_pq_column_reader_release(struct pq_column_reader* cr) {
  struct sl_buffer* bufs[] = {&cr->page, &cr->dict, &cr->dict_out, &cr->dict_ptrs, &cr->dict_lens,
                              &cr->scratch, &cr->ptrs, &cr->lens, &cr->idx, &cr->delta,
                              &cr->saved};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; ++i) sl_buffer_reset(bufs[i]);
  if (cr->codec) sl_pq_codec_ctx_free(cr->codec);
  cr->codec = NULL;
  sl_view_release(&cr->span);
}

/// Makes room for `bytes` in a scratch buffer (contents not kept).
static int ensure_total(struct sl_buffer* b, int64_t total) {
  // Never leave data NULL: callers index it (+ 0) even for empty pages.
  if (total < 1) total = 1;
  if (total <= b->capacity) return 0;
  int64_t size = b->size;
  SL_RETURN_NOT_OK(sl_buffer_reserve(b, total - size));
  return 0;
}

/* ---- levels ---------------------------------------------------------------- */

static int decode_levels(enum pq_encoding enc, int v2, const uint8_t* data, int64_t size,
                         int64_t n, int max_level, int16_t* out, int64_t* consumed,
                         const struct chunk_where* w, struct sluice_error* error) {
  int bw = sl_pq_bit_width((uint64_t)max_level);
  if (v2) {
    struct pq_rle_decoder d;
    SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&d, data, size, bw, error)));
    SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_get_i16(&d, out, n, error)));
    *consumed = size;
    return 0;
  }
  if (enc == PQ_ENC_RLE) {
    if (size < 4) return sl_pq_chunk_error(w, error, EILSEQ, "truncated level length");
    uint32_t len;
    memcpy(&len, data, 4);
    if ((int64_t)len > size - 4) return sl_pq_chunk_error(w, error, EILSEQ, "level length past the page end");
    struct pq_rle_decoder d;
    SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_init(&d, data + 4, len, bw, error)));
    SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_rle_get_i16(&d, out, n, error)));
    *consumed = 4 + (int64_t)len;
    return 0;
  }
  if (enc == PQ_ENC_BIT_PACKED)
    return sl_pq_chunk_prefix(w, error, sl_pq_bit_packed_levels_decode(data, size, bw, n, out, consumed, error));
  return sl_pq_chunk_error(w, error, EILSEQ, "unsupported level encoding");
}

/* ---- scatter dense values over slots --------------------------------------- */

static void set_bits(uint8_t* bits, int64_t from, int64_t to) {
  for (int64_t i = from; i < to && (i & 7); ++i) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
  int64_t a = (from + 7) & ~(int64_t)7;
  if (a >= to) return;
  int64_t b = to & ~(int64_t)7;
  if (b > a) memset(bits + (a >> 3), 0xff, (size_t)((b - a) >> 3));
  for (int64_t i = b > a ? b : a; i < to; ++i) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/// The validity bitmap exists from the first null on; before that every slot
/// was valid. Sized for `cap_slots`.
static int ensure_validity(struct pq_leaf_data* d, int64_t cap_slots, int64_t valid_before) {
  int64_t need = (cap_slots + 7) / 8;
  if (d->validity.data == NULL) {
    SL_RETURN_NOT_OK(sl_buffer_reserve(&d->validity, need));
    memset(d->validity.data, 0, (size_t)d->validity.capacity);
    set_bits(d->validity.data, 0, valid_before);
  } else if (need > d->validity.capacity) {
    int64_t old = d->validity.capacity;
    d->validity.size = old;
    SL_RETURN_NOT_OK(sl_buffer_reserve(&d->validity, need - old));
    memset(d->validity.data + old, 0, (size_t)(d->validity.capacity - old));
  }
  d->validity.size = need;
  return 0;
}

/// Spreads nv dense values at slot s0 over the page's slots (backwards, in
/// place), zero-filling null slots, and marks validity.
static void spread_fixed(uint8_t* base, int32_t width, int64_t s0, int64_t nv, const int16_t* def,
                         int64_t n, int16_t maxd, int16_t anc, int64_t slots) {
  int64_t j = nv, s = slots;
  for (int64_t i = n - 1; i >= 0 && s > j; --i) {
    int16_t dl = def[i];
    if (dl < anc) continue;
    --s;
    uint8_t* to = base + (s0 + s) * width;
    if (dl == maxd)
      memcpy(to, base + (s0 + --j) * width, (size_t)width);
    else
      memset(to, 0, (size_t)width);
  }
}

static void mark_validity(uint8_t* bits, int64_t s0, const int16_t* def, int64_t n, int16_t maxd,
                          int16_t anc) {
  int64_t s = s0;
  for (int64_t i = 0; i < n; ++i) {
    int16_t dl = def[i];
    if (dl < anc) continue;
    if (dl == maxd) bits[s >> 3] |= (uint8_t)(1u << (s & 7));
    ++s;
  }
}

/* ---- pages ----------------------------------------------------------------- */

struct page_ctx {
  const struct pq_field* f;
  struct pq_leaf_data* out;
  int64_t cap_slots;  ///< slots the fixed buffers are sized for
  /// Slots the leaf holds at most (max_rep 0): the row group's rows, or a
  /// slice's.
  int64_t rows;
  int all_defined;    ///< the current page's def levels are all the maximum
  int64_t row_starts; ///< repetition levels of 0 in out (a repeated leaf's rows begun)
  /// A chunk read in slices: keyed leaf data borrows its cursor's dictionary
  /// (NULL: a copy of the chunk's of its own).
  struct pq_chunk_cursor* cursor;
};

static int varint_len(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

/// Whether RLE level bytes (no length prefix) are one run of `n` copies of
/// `level` (bit width <= 8): what writers emit for a page without nulls.
static int is_single_run(const uint8_t* data, int64_t size, int64_t n, int level) {
  uint64_t header = (uint64_t)n << 1;
  int hl = varint_len(header);
  if (size != hl + 1) return 0;
  for (int i = 0; i < hl; ++i) {
    uint8_t want = (uint8_t)((header >> (7 * i)) & 0x7f) | (i + 1 < hl ? 0x80 : 0);
    if (data[i] != want) return 0;
  }
  return data[hl] == level;
}

static int grow_slots(struct page_ctx* p, int64_t need, const struct chunk_where* w,
                      struct sluice_error* error) {
  const struct pq_field* f = p->f;
  struct pq_leaf_data* d = p->out;
  if (need <= p->cap_slots) return 0;
  int64_t cap = p->cap_slots * 2 > need ? p->cap_slots * 2 : need;
  int rc = 0;
  if (f->conv == PQ_CONV_BOOL) rc = ensure_total(&d->values, (cap + 7) / 8);
  else if (f->conv == PQ_CONV_BINARY && !d->keyed)  // keyed: offsets are the dictionary's
    rc = ensure_total(&d->offsets, (cap + 1) * (d->wide ? 8 : 4));
  // Flat values are mapped page by page as pages arrive (sl_pq_column_read).
  else if (f->out_width > 0 && f->rep == 0) rc = sl_buffer_grow_to(&d->values, cap * f->out_width);
  else if (f->out_width > 0) rc = ensure_total(&d->values, cap * f->out_width);
  if (rc == 0 && d->validity.data) rc = ensure_validity(d, cap, 0);
  if (rc != 0) {
    int64_t width = f->conv == PQ_CONV_BOOL ? 0 : f->conv == PQ_CONV_BINARY ? (d->wide ? 8 : 4) : f->out_width;
    return sl_pq_chunk_nomem(w, error, width > 0 ? cap * width : (cap + 7) / 8, "the row group's values");
  }
  if (f->conv == PQ_CONV_BOOL && d->values.capacity > d->values.size)  // bits are OR-ed in
    memset(d->values.data + d->values.size, 0, (size_t)(d->values.capacity - d->values.size));
  p->cap_slots = cap;
  return 0;
}

/// Switches a binary leaf to int64 offsets when its values are about to
/// pass what int32 offsets (or the caller's limit) allow; slots [0, s0] hold
/// offsets so far.
static int widen_offsets(struct page_ctx* p, int64_t s0, const struct chunk_where* w,
                         struct sluice_error* error) {
  struct pq_leaf_data* d = p->out;
  if (ensure_total(&d->offsets, (p->cap_slots + 1) * 8) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
  const int32_t* from = (const int32_t*)(const void*)d->offsets.data;
  int64_t* to = (int64_t*)(void*)d->offsets.data;
  for (int64_t i = s0; i >= 0; --i) {  // backwards: the int64s overlap the int32s below them
    int64_t v = from[i];
    to[i] = v;
  }
  d->wide = 1;
  return 0;
}

/* ---- dictionary leaves: keys into the chunk's dictionary ------------------- */

static int is_dictionary_encoding(enum pq_encoding enc) {
  return enc == PQ_ENC_RLE_DICTIONARY || enc == PQ_ENC_PLAIN_DICTIONARY;
}

/// Empty offsets (room for n + 1 int32) and values (`bytes`) buffers for n
/// binary values.
static int fresh_binary(const struct pq_leaf_data* d, int64_t n, int64_t bytes,
                        struct sl_buffer* offsets, struct sl_buffer* values) {
  sl_buffer_init(offsets, d->offsets.alloc);
  sl_buffer_init(values, d->values.alloc);
  if (sl_buffer_reserve(offsets, (n + 1) * 4) == 0 && sl_buffer_reserve(values, bytes + 1) == 0) {
    ((int32_t*)(void*)offsets->data)[0] = 0;
    return 0;
  }
  sl_buffer_reset(offsets);
  sl_buffer_reset(values);
  return ENOMEM;
}

/// d's values / offsets become views of the cursor's dictionary block,
/// which d does not own (the array they end in retains it).
static void keyed_borrow(struct pq_leaf_data* d, const struct pq_chunk_cursor* c) {
  int64_t osize = (c->keyed_n + 1) * 4;
  sl_buffer_borrow(&d->offsets, c->keyed_block, osize, c->keyed_ref);
  d->offsets.size = osize;
  // The values' capacity is their size: no padding is written into a block
  // that other batches read.
  sl_buffer_borrow(&d->values, c->keyed_block + c->keyed_values_at, c->keyed_bytes, c->keyed_ref);
  d->values.size = c->keyed_bytes;
  d->n_dict = c->keyed_n;
  d->keyed = 1;
}

/// The chunk's dictionary (cr) as Arrow offsets + values in one block of the
/// cursor's, shared by its slices.
static int keyed_share(struct pq_column_reader* cr, struct pq_chunk_cursor* c, int64_t bytes,
                       const struct chunk_where* w, struct sluice_error* error) {
  int64_t n = cr->dict_n;
  int64_t at = ((n + 1) * 4 + 63) & ~(int64_t)63;
  // Padded to 64 bytes past the values, as Arrow pads buffers.
  int64_t size = at + ((bytes + 63) & ~(int64_t)63) + 64;
  uint8_t* block = sl_alloc_buffer(cr->alloc, (size_t)size);
  if (block == NULL) return sl_pq_chunk_nomem(w, error, size, "the column chunk's dictionary");
  struct sl_ref* ref = sl_ref_wrap_buffer(cr->alloc, block, (size_t)size);
  if (ref == NULL) {
    sl_free_buffer(cr->alloc, block, (size_t)size);
    return sl_pq_chunk_nomem(w, error, 0, "the column chunk's dictionary");
  }
  const uint8_t* const* dp = (const uint8_t* const*)(const void*)cr->dict_ptrs.data;
  const int32_t* dl = (const int32_t*)(const void*)cr->dict_lens.data;
  int32_t* offs = (int32_t*)(void*)block;
  int32_t o = 0;
  offs[0] = 0;
  for (int64_t i = 0; i < n; ++i) {
    memcpy(block + at + o, dp[i], (size_t)dl[i]);
    o += dl[i];
    offs[i + 1] = o;
  }
  memset(block + (n + 1) * 4, 0, (size_t)(at - (n + 1) * 4));
  memset(block + at + bytes, 0, (size_t)(size - at - bytes));
  c->keyed_ref = ref;
  c->keyed_block = block;
  c->keyed_n = n;
  c->keyed_values_at = at;
  c->keyed_bytes = bytes;
  return 0;
}

/// The chunk's dictionary (cr) copied into d's values / offsets, before the
/// first page's keys (a chunk read in slices: made once, then borrowed);
/// d stays unkeyed when the dictionary holds over 2 GiB (its values then go
/// the usual way).
static int keyed_start(struct pq_column_reader* cr, struct page_ctx* p, struct pq_leaf_data* d,
                       const struct chunk_where* w, struct sluice_error* error) {
  int64_t n = cr->dict_n, bytes = 0;
  const uint8_t* const* dp = (const uint8_t* const*)(const void*)cr->dict_ptrs.data;
  const int32_t* dl = (const int32_t*)(const void*)cr->dict_lens.data;
  for (int64_t i = 0; i < n; ++i) bytes += dl[i];  // each < the page size
  if (bytes > INT32_MAX) return 0;
  if (p->cursor != NULL) {
    if (p->cursor->keyed_ref == NULL) SL_RETURN_NOT_OK(keyed_share(cr, p->cursor, bytes, w, error));
    keyed_borrow(d, p->cursor);
    return 0;
  }
  // Fresh buffers of the dictionary's size: those sized for the chunk's
  // values would be handed out (and their padding cleared) for nothing.
  struct sl_buffer offsets, values;
  if (fresh_binary(d, n, bytes, &offsets, &values) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
  int32_t* offs = (int32_t*)(void*)offsets.data;
  int32_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    memcpy(values.data + at, dp[i], (size_t)dl[i]);
    at += dl[i];
    offs[i + 1] = at;
  }
  values.size = at;
  offsets.size = (n + 1) * 4;
  sl_buffer_reset(&d->offsets);
  sl_buffer_reset(&d->values);
  d->offsets = offsets;
  d->values = values;
  d->n_dict = n;
  d->keyed = 1;
  return 0;
}

/// One dictionary-encoded page's keys at slots [s0, s0 + slots).
static int keyed_page(struct pq_column_reader* cr, struct page_ctx* p, const uint8_t* data,
                      int64_t size, int64_t s0, int64_t nv, int64_t slots, const int16_t* def,
                      int64_t n, const struct chunk_where* w, struct sluice_error* error) {
  struct pq_leaf_data* d = p->out;
  // Room for every slot at once when known (flat leaves: the rows).
  int64_t room = p->cap_slots > s0 + slots ? p->cap_slots : s0 + slots;
  int ready = cr->ready == PQ_READY_IDX;  // a piece's indices, in cr->idx
  if (ensure_total(&d->keys, room * 4) != 0 || (!ready && sl_pq_scratch_size(&cr->idx, nv * 4) != 0))
    return sl_pq_chunk_prefix(w, error, ENOMEM);
  uint32_t* keys = (uint32_t*)(void*)d->keys.data;
  // Without nulls the keys decode in place.
  uint32_t* idx = slots == nv ? keys + s0 : (uint32_t*)(void*)cr->idx.data;
  if (nv > 0) SL_RETURN_NOT_OK(sl_pq_dict_indices(cr, data, size, nv, idx, w, error));
  if (slots != nv) {
    int16_t maxd = p->f->def, anc = p->f->anc_def;
    int64_t s = s0, j = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (def[i] < anc) continue;
      keys[s++] = def[i] == maxd ? idx[j++] : 0;
    }
  }
  d->keys.size = (s0 + slots) * 4;
  return 0;
}

int sl_pq_leaf_unkey(struct pq_leaf_data* d) {
  if (!d->keyed) return 0;
  const uint32_t* keys = (const uint32_t*)(const void*)d->keys.data;
  const int32_t* doffs = (const int32_t*)(const void*)d->offsets.data;
  const uint8_t* bits = d->validity.data;  // present once a slot was null
  int64_t n = d->n_slots, bytes = 0;
  for (int64_t i = 0; i < n; ++i)
    if (!bits || (bits[i >> 3] >> (i & 7)) & 1) bytes += doffs[keys[i] + 1] - doffs[keys[i]];
  if (bytes > INT32_MAX) return EOVERFLOW;
  struct sl_buffer offsets, values;
  if (fresh_binary(d, n, bytes, &offsets, &values) != 0) return ENOMEM;
  int32_t* offs = (int32_t*)(void*)offsets.data;
  int32_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!bits || (bits[i >> 3] >> (i & 7)) & 1) {
      int32_t len = doffs[keys[i] + 1] - doffs[keys[i]];
      memcpy(values.data + at, d->values.data + doffs[keys[i]], (size_t)len);
      at += len;
    }
    offs[i + 1] = at;
  }
  offsets.size = (n + 1) * 4;
  values.size = at;
  sl_buffer_reset(&d->offsets);
  sl_buffer_reset(&d->values);
  sl_buffer_reset(&d->keys);
  d->offsets = offsets;
  d->values = values;
  d->keyed = 0;
  d->n_dict = 0;
  return 0;
}

/// Where in out->def the levels of the page whose first entry is e0 go: a
/// top-level leaf keeps only the current page's (at 0), others the chunk's
/// (group nodes read them when the row group is assembled).
static int64_t page_def_at(const struct pq_field* f, int64_t e0) { return f->top_level ? 0 : e0; }

/// An INT96 value of the page that its unit cannot hold (sl_pq_dense_fixed
/// left which in cr): the error names its row (a flat column) or its level
/// entry in the chunk (under a list: entries are not rows).
static int int96_row_error(const struct pq_column_reader* cr, const struct pq_field* f,
                           const int16_t* def, int64_t n, const struct chunk_where* w,
                           struct sluice_error* error) {
  int64_t entry = cr->int96_unfit;
  if (def)
    for (int64_t i = 0, k = -1; i < n; ++i)
      if (def[i] == f->def && ++k == cr->int96_unfit) {
        entry = i;
        break;
      }
  char what[400];
  sl_pq_int96_describe(cr->int96_unfit_raw, f->int96_unit_ns, what, sizeof what);
  return sl_error_set(error, ERANGE, "%s: row group %" PRId64 ", column %s: %s %" PRId64 ": %s",
                      w->file, w->rg, w->path, f->rep == 0 ? "row" : "level entry",
                      w->page_entry + entry, what);
}

/// Decodes the values of one data page whose levels are in out->def/rep at
/// entries [e0, e0 + n) (page_def_at).
static int page_values(struct pq_column_reader* cr, struct page_ctx* p, enum pq_encoding enc,
                       const uint8_t* data, int64_t size, int64_t e0, int64_t n,
                       const struct chunk_where* w, struct sluice_error* error) {
  const struct pq_field* f = p->f;
  struct pq_leaf_data* d = p->out;
  int16_t maxd = f->def, anc = f->anc_def;
  // Without nulls the levels say nothing (and a column's own are not kept).
  const int16_t* def = maxd > 0 && !p->all_defined
                           ? (const int16_t*)(const void*)d->def.data + page_def_at(f, e0)
                           : NULL;
  int64_t nv = n, slots = n;
  if (def) {
    nv = slots = 0;
    for (int64_t i = 0; i < n; ++i) {
      nv += def[i] == maxd;
      slots += def[i] >= anc;
    }
  }
  if (slots == 0) return 0;  // only entries under null / empty ancestors
  if (f->rep == 0 && d->n_slots + slots > p->rows)
    return sl_pq_chunk_error(w, error, EILSEQ, "more values than the row group has rows");
  if (f->dict && d->keyed && !is_dictionary_encoding(enc)) {
    // A writer's fallback to plain values (its dictionary grew too big):
    // the keys so far become values, and so do the rest.
    int rc = sl_pq_leaf_unkey(d);
    if (rc == EOVERFLOW)
      return sl_pq_chunk_error(w, error, rc, "more than 2 GiB of binary data in one column chunk "
                            "of a dictionary column (not supported)");
    if (rc != 0 || ensure_total(&d->offsets, (p->cap_slots + 1) * 4) != 0)
      return sl_pq_chunk_prefix(w, error, ENOMEM);
  }
  SL_RETURN_NOT_OK(grow_slots(p, d->n_slots + slots, w, error));
  int64_t s0 = d->n_slots;
  int has_nulls = slots > nv;
  if (has_nulls && f->nullable) {
    if (ensure_validity(d, p->cap_slots, s0) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    mark_validity(d->validity.data, s0, def, n, maxd, anc);
  } else if (d->validity.data) {
    set_bits(d->validity.data, s0, s0 + slots);
  }
  if (f->nullable) d->null_count += slots - nv;
  int dictionary_page = f->conv == PQ_CONV_BINARY && f->dict && is_dictionary_encoding(enc) &&
                        cr->has_dict;
  if (dictionary_page && !d->keyed && s0 == 0) SL_RETURN_NOT_OK(keyed_start(cr, p, d, w, error));
  if (f->conv == PQ_CONV_NULL) {
    if (nv > 0) return sl_pq_chunk_error(w, error, EILSEQ, "values in a column of the NULL type");
  } else if (dictionary_page && d->keyed) {
    SL_RETURN_NOT_OK(keyed_page(cr, p, data, size, s0, nv, slots, def, n, w, error));
  } else if (f->conv == PQ_CONV_BINARY) {
    SL_RETURN_NOT_OK(sl_pq_dense_byte_arrays(cr, enc, data, size, nv, w, error));
    const uint8_t** ptrs = (const uint8_t**)(void*)cr->ptrs.data;
    const int32_t* lens = (const int32_t*)(void*)cr->lens.data;
    int64_t bytes = 0;
    for (int64_t i = 0; i < nv; ++i) bytes += lens[i];  // lens are >= 0 (checked by the decoders)
    if (!d->wide && d->widen_above > 0 &&
        d->values.size + bytes > (d->widen_above < INT32_MAX ? d->widen_above : INT32_MAX))
      SL_RETURN_NOT_OK(widen_offsets(p, s0, w, error));
    if (!d->wide && d->values.size + bytes > INT32_MAX)
      return sl_pq_chunk_error(w, error, EOVERFLOW, "more than 2 GiB of binary data in one column "
                            "chunk of a nested column or a dictionary=true column (not supported)");
    if (bytes > INT64_MAX / 2 - d->values.size)
      return sl_pq_chunk_error(w, error, EOVERFLOW, "binary data size overflows");
    if (d->give_up_above > 0 && d->values.size + bytes > d->give_up_above)
      return sl_pq_chunk_error(w, error, EFBIG, "the values pass what the row group may decode to "
                               "at once");
    // At least one byte, so that values.data is never NULL (+ 0 on NULL is UB
    // even for pages of empty strings).
    if (sl_buffer_reserve(&d->values, bytes > 0 ? bytes : 1) != 0)
      return sl_pq_chunk_prefix(w, error, ENOMEM);
    int64_t at = d->values.size;
    uint8_t* vd = d->values.data;
    int64_t s = s0, j = 0;
    // The offsets stay within int32 (checked above) unless they are int64.
    int32_t* offs = d->wide ? NULL : (int32_t*)(void*)d->offsets.data;
    int64_t* offs64 = d->wide ? (int64_t*)(void*)d->offsets.data : NULL;
    if (!has_nulls) {
      for (int64_t i = 0; i < nv; ++i) {
        memcpy(vd + at, ptrs[i], (size_t)lens[i]);
        at += lens[i];
        if (offs) offs[++s] = (int32_t)at;
        else offs64[++s] = at;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        if (def[i] < anc) continue;
        if (def[i] == maxd) {
          memcpy(vd + at, ptrs[j], (size_t)lens[j]);
          at += lens[j];
          ++j;
        }
        if (offs) offs[++s] = (int32_t)at;
        else offs64[++s] = at;
      }
    }
    d->values.size = at;
  } else if (f->conv == PQ_CONV_BOOL) {
    if (sl_pq_scratch_size(&cr->scratch, nv) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    uint8_t* b = cr->scratch.data;
    SL_RETURN_NOT_OK(sl_pq_dense_fixed(cr, f, enc, data, size, nv, b, w, error));
    uint8_t* bits = d->values.data;
    int64_t s = s0, j = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (def && def[i] < anc) continue;
      if (!def || def[i] == maxd) {
        if (b[j++]) bits[s >> 3] |= (uint8_t)(1u << (s & 7));
      }
      ++s;
    }
    d->values.size = (s0 + slots + 7) / 8;
  } else {
    int32_t ow = f->out_width;
    uint8_t* dst = d->values.data + s0 * ow;
    int rc = sl_pq_dense_fixed(cr, f, enc, data, size, nv, dst, w, error);
    if (rc == ERANGE && f->conv == PQ_CONV_INT96) return int96_row_error(cr, f, def, n, w, error);
    if (rc != 0) return rc;
    if (has_nulls) spread_fixed(d->values.data, ow, s0, nv, def, n, maxd, anc, slots);
    d->values.size = (s0 + slots) * ow;
  }
  d->n_slots += slots;
  return 0;
}

/// Levels of a page into out->def (at page_def_at) / out->rep at entry e0;
/// validates them.
static int page_levels(struct page_ctx* p, int v2, enum pq_encoding rep_enc,
                       enum pq_encoding def_enc, const uint8_t* rdata, int64_t rsize,
                       const uint8_t* ddata, int64_t dsize, int64_t n, int64_t* used,
                       const struct chunk_where* w, struct sluice_error* error) {
  const struct pq_field* f = p->f;
  struct pq_leaf_data* d = p->out;
  int64_t e0 = d->n_levels, consumed = 0;
  *used = 0;
  if (f->rep > 0) {
    if (ensure_total(&d->rep, (e0 + n) * 2) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    int16_t* r = (int16_t*)(void*)d->rep.data + e0;
    SL_RETURN_NOT_OK(decode_levels(rep_enc, v2, rdata, rsize, n, f->rep, r, &consumed, w, error));
    for (int64_t i = 0; i < n; ++i)
      if (r[i] < 0 || r[i] > f->rep) return sl_pq_chunk_error(w, error, EILSEQ, "repetition level above the maximum");
    if (e0 == 0 && n > 0 && r[0] != 0)
      return sl_pq_chunk_error(w, error, EILSEQ, "the first repetition level is not 0");
    for (int64_t i = 0; i < n; ++i) p->row_starts += r[i] == 0;
    d->rep.size = (e0 + n) * 2;
    if (!v2) {
      *used += consumed;
      ddata += consumed;
      dsize -= consumed;
    }
  }
  p->all_defined = 0;
  if (f->def > 0) {
    int64_t at = page_def_at(f, e0);
    if (ensure_total(&d->def, (at + n) * 2) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    int16_t* dl = (int16_t*)(void*)d->def.data + at;
    // Fast path: a page without nulls is one RLE run of the maximum level.
    const uint8_t* run = ddata;
    int64_t run_size = dsize;
    uint32_t len = 0;
    if (!v2 && def_enc == PQ_ENC_RLE && dsize >= 4) {
      memcpy(&len, ddata, 4);
      run = ddata + 4;
      run_size = (int64_t)len <= dsize - 4 ? (int64_t)len : -1;
    }
    if (f->def < 256 && (v2 || def_enc == PQ_ENC_RLE) && run_size > 0 &&
        is_single_run(run, run_size, n, f->def)) {
      int16_t maxd = f->def;
      // A column's own levels have no reader but this page, which skips them.
      if (!f->top_level)
        for (int64_t i = 0; i < n; ++i) dl[i] = maxd;
      d->def.size = (at + n) * 2;
      p->all_defined = f->rep == 0;
      if (!v2) *used += 4 + run_size;
      return 0;
    }
    SL_RETURN_NOT_OK(decode_levels(def_enc, v2, ddata, dsize, n, f->def, dl, &consumed, w, error));
    for (int64_t i = 0; i < n; ++i)
      if (dl[i] < 0 || dl[i] > f->def) return sl_pq_chunk_error(w, error, EILSEQ, "definition level above the maximum");
    d->def.size = (at + n) * 2;
    if (!v2) *used += consumed;
  }
  return 0;
}

/// STRING values must be UTF-8 (Arrow's utf8 type promises it): the bytes
/// as a whole, and no value starting inside a character.
static int check_utf8(const struct pq_leaf_data* d, int64_t n, int64_t row0,
                      const struct chunk_where* w, struct sluice_error* error) {
  const int32_t* offs = d->wide ? NULL : (const int32_t*)(const void*)d->offsets.data;
  const int64_t* offs64 = d->wide ? (const int64_t*)(const void*)d->offsets.data : NULL;
#define PQ_OFF(i) (offs ? (int64_t)offs[i] : offs64[i])
  const uint8_t* data = d->values.data;
  int64_t bad = sl_utf8_invalid_at(data, d->values.size);
  for (int64_t i = 0; bad < 0 && i < n; ++i)
    if (PQ_OFF(i + 1) > PQ_OFF(i) && (data[PQ_OFF(i)] & 0xC0) == 0x80) bad = PQ_OFF(i);
  if (bad < 0) return 0;
  int64_t slot = 0;
  while (slot < n && PQ_OFF(slot + 1) <= bad) ++slot;
#undef PQ_OFF
  return sl_error_set(error, EILSEQ, "%s: row group %" PRId64 ", column %s: value %" PRId64
                      " of the chunk%s is not valid UTF-8 (a STRING column)", w->file, w->rg,
                      w->path, row0 + slot, d->keyed ? "'s dictionary" : "");
}

uint32_t sl_pq_page_crc(const uint8_t* data, int64_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  while (n > 0) {
    uInt k = n > (int64_t)1 << 30 ? (uInt)1 << 30 : (uInt)n;
    c = crc32(c, data, k);
    data += k;
    n -= k;
  }
  return (uint32_t)c;
}

/// v1 data page of a flat column with PLAIN fixed-width values and no
/// nulls: the page decompresses straight into the output buffer, placed so
/// that its values land at the page's first slot. The level bytes in front of
/// them (predicted: one RLE run, or none for required columns) overwrite the
/// tail of the previous page's values, which is saved and restored (the
/// first page of a chunk: only for snappy, which decompresses the level bytes
/// to `levels` and the values in place). Returns 1
/// when it took the page (then *rc is the status, `levels` holds the level
/// bytes and *values points at the values in place), 0 to use the normal path.
static int in_place_v1(struct pq_column_reader* cr, struct page_ctx* p, const struct pq_page_header* h,
                       enum pq_codec codec, const uint8_t* body, int64_t bsize, uint8_t* levels,
                       const uint8_t** values, int* rc, const struct chunk_where* w,
                       struct sluice_error* error) {
  const struct pq_field* f = p->f;
  struct pq_leaf_data* d = p->out;
  if (h->encoding != PQ_ENC_PLAIN || f->conv != PQ_CONV_COPY || f->rep != 0 || f->def > 1 ||
      f->out_width <= 0)
    return 0;
  int64_t n = h->num_values, ow = f->out_width;
  int64_t lsize = f->def == 0 ? 0 : 4 + varint_len((uint64_t)n << 1) + 1;
  if (f->def > 0 && h->definition_level_encoding != PQ_ENC_RLE) return 0;
  if (h->uncompressed_page_size != lsize + n * ow) return 0;
  if (d->n_slots + n > p->rows) return 0;
  if (grow_slots(p, d->n_slots + n, w, error) != 0) return 0;
  int64_t at = d->n_slots * ow - lsize;
  if (at + h->uncompressed_page_size > d->values.capacity) return 0;
  if (at >= 0) {
    uint8_t saved[24];
    memcpy(saved, d->values.data + at, (size_t)lsize);
    *rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, codec, body, bsize, d->values.data + at,
                                               h->uncompressed_page_size, error));
    memcpy(levels, d->values.data + at, (size_t)lsize);
    memcpy(d->values.data + at, saved, (size_t)lsize);
  } else if (codec == PQ_CODEC_SNAPPY) {
    // The chunk's first page has no earlier values to lend their bytes
    // (DuckDB writes one page per chunk): snappy scatters instead.
    *rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress_snappy_split(body, bsize, levels, lsize,
                                                               d->values.data + d->n_slots * ow, n * ow,
                                                               error));
  } else {
    return 0;
  }
  if (*rc == 0 && lsize > 0) {
    uint32_t len;
    memcpy(&len, levels, 4);
    if (len != (uint32_t)(lsize - 4) || !is_single_run(levels + 4, lsize - 4, n, 1))
      return 0;  // nulls after all (sizes matched by chance): the normal path redoes it
  }
  *values = d->values.data + d->n_slots * ow;
  return 1;
}

/// The fewest bytes a data page of `n` values can be, where that is certain:
/// a leaf whose every level is a value (no nulls, no lists) in PLAIN or
/// BYTE_STREAM_SPLIT, whose values have a least size. 0 elsewhere (RLE and
/// delta encodings, levels: a few bytes can say any count).
static int64_t least_page_bytes(const struct pq_field* f, const struct pq_page_header* h, int64_t n) {
  if (f->def != 0 || f->rep != 0) return 0;
  enum pq_physical_type t = f->element->type;
  if (h->encoding == PQ_ENC_PLAIN) {
    if (t == PQ_BOOLEAN) return (n + 7) / 8;
    if (t == PQ_BYTE_ARRAY) return 4 * n;  // each value's length
    return n * f->phys_width;
  }
  if (h->encoding == PQ_ENC_BYTE_STREAM_SPLIT && t != PQ_BOOLEAN && t != PQ_BYTE_ARRAY)
    return n * f->phys_width;
  return 0;
}

int sl_pq_chunk_range(const struct pq_column_meta* m, int64_t file_size, int64_t* start,
                   int64_t* length) {
  int64_t at = m->data_page_offset;
  if (m->dictionary_page_offset > 0 && m->dictionary_page_offset < at) at = m->dictionary_page_offset;
  int64_t len = m->total_compressed_size;
  if (at < 0 || len < 0 || at > file_size || len > file_size - at) return -1;
  len += file_size - at - len < 100 ? file_size - at - len : 100;
  *start = at;
  *length = len;
  return 0;
}

int sl_pq_column_reader_span(struct pq_column_reader* cr, int64_t start, int64_t length,
                          struct sluice_error* error) {
  sl_view_release(&cr->span);
  cr->span_at = start;
  return length > 0 ? sl_source_read_at(cr->source, start, length, &cr->span, error) : 0;
}

/* ---- a column chunk's pages ----------------------------------------------------- */

/// The column reader's dictionary and a cursor's trade places: a chunk read
/// a slice at a time keeps its own between slices (the split's other chunks
/// decode in between), while the scratch buffers stay the split's.
static void swap_dictionary(struct pq_column_reader* cr, struct pq_chunk_cursor* c) {
  struct sl_buffer* a[] = {&cr->dict, &cr->dict_out, &cr->dict_ptrs, &cr->dict_lens};
  struct sl_buffer* b[] = {&c->dict, &c->dict_out, &c->dict_ptrs, &c->dict_lens};
  for (size_t i = 0; i < sizeof a / sizeof *a; ++i) {
    struct sl_buffer t = *a[i];
    *a[i] = *b[i];
    *b[i] = t;
  }
  int64_t n = cr->dict_n;
  cr->dict_n = c->dict_n;
  c->dict_n = n;
  int has = cr->has_dict;
  cr->has_dict = c->has_dict;
  c->has_dict = has;
}

/// Checks the chunk of `f` in row group `rg` and gets its bytes (a view of
/// the reader's span, or a read of its own) into `c`.
static int chunk_open(struct pq_column_reader* cr, int64_t rg, const struct pq_field* f,
                      struct pq_chunk_cursor* c, struct chunk_where* w,
                      struct sluice_error* error) {
  const struct pq_file_meta* meta = cr->meta;
  c->f = f;
  c->rg = rg;
  const struct pq_row_group* g = &meta->row_groups[rg];
  if (f->leaf >= g->n_columns) return sl_pq_chunk_error(w, error, EILSEQ, "the row group has no chunk for this column");
  const struct pq_column_chunk* cc = &g->columns[f->leaf];
  if (cc->file_path.present && cc->file_path.size > 0)
    return sl_pq_chunk_error(w, error, ENOTSUP, "column chunks in other files are not supported");
  if (cc->encrypted) return sl_pq_chunk_error(w, error, ENOTSUP, "encrypted Parquet is not supported");
  if (!cc->has_meta_data) return sl_pq_chunk_error(w, error, EILSEQ, "column chunk without metadata");
  const struct pq_column_meta* m = &cc->meta_data;
  if (m->type != f->element->type)
    return sl_pq_chunk_error(w, error, EILSEQ, "chunk physical type differs from the schema");
  c->m = m;
  c->rows = g->num_rows;
  if (c->rows < 0) return sl_pq_chunk_error(w, error, EILSEQ, "negative row count");
  if (sl_pq_chunk_range(m, cr->source->size, &c->start, &c->len) != 0)
    return sl_pq_chunk_error(w, error, EILSEQ, "column chunk byte range outside the file");
  if (m->num_values < 0) return sl_pq_chunk_error(w, error, EILSEQ, "negative value count");
  // Flat and struct-only leaves have exactly one slot per row.
  if (f->rep == 0 && m->num_values != c->rows)
    return sl_pq_chunk_error(w, error, EILSEQ, "value count differs from the row count");
  return 0;
}

static int chunk_view(struct pq_column_reader* cr, struct pq_chunk_cursor* c,
                      const struct chunk_where* w, struct sluice_error* error) {
  int64_t start = c->start, len = c->len;
  c->pos = 0;
  c->dropped = start;
  if (cr->span.data != NULL && start >= cr->span_at && start - cr->span_at <= cr->span.size - len) {
    c->view.data = cr->span.data + (start - cr->span_at);
    c->view.size = len;
    c->view.owner = sl_ref_retain(cr->span.owner);
    return 0;
  }
  return sl_pq_chunk_prefix(w, error, sl_source_read_at(cr->source, start, len, &c->view, error));
}

/// The next share of the piece's page into p->out: a flat leaf's entries
/// up to `want` slots; a repeated leaf's up to the entry that starts row
/// `want` + 1 of p->out (then *done), a step at a time, since where rows
/// start is known from the levels only (entries decoded past it are
/// decoded again by the next slice).
static int piece_take(struct pq_column_reader* cr, struct pq_chunk_cursor* c, struct page_ctx* p,
                      int64_t want, int* done, struct chunk_where* w, struct sluice_error* error) {
  const struct pq_field* f = c->f;
  struct pq_page_piece* pc = &c->piece;
  struct pq_leaf_data* d = p->out;
  w->page = c->start + pc->header;
  w->page_entry = pc->entry0 + pc->taken;
  int64_t left = pc->n - pc->taken, e0 = d->n_levels, k;
  if (f->rep == 0) {
    k = want - d->n_slots < left ? want - d->n_slots : left;
    SL_RETURN_NOT_OK(grow_slots(p, p->rows, w, error));
    if (f->out_width > 0)
      sl_prefault(d->values.data + d->n_slots * f->out_width, (size_t)(k * f->out_width));
  } else {
    int64_t step = 2 * (want - p->row_starts) + 64;
    k = step < left ? step : left;
    if (ensure_total(&d->rep, (e0 + k) * 2) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    int16_t* r = (int16_t*)(void*)d->rep.data + e0;
    struct pq_level_stream before = pc->rep;
    SL_RETURN_NOT_OK(sl_pq_level_stream_get(&pc->rep, r, k, w, error));
    if (e0 == 0 && k > 0 && r[0] != 0)
      return sl_pq_chunk_error(w, error, EILSEQ, "the first repetition level is not 0");
    int64_t starts = p->row_starts, cut = k;
    for (int64_t i = 0; i < k; ++i) {
      if (r[i] < 0 || r[i] > f->rep) return sl_pq_chunk_error(w, error, EILSEQ, "repetition level above the maximum");
      if (r[i] != 0) continue;
      if (starts == want) {
        cut = i;
        *done = 1;
        break;
      }
      ++starts;
    }
    if (cut < k) {  // the levels past the cut are the next slice's
      pc->rep = before;
      SL_RETURN_NOT_OK(sl_pq_level_stream_get(&pc->rep, r, cut, w, error));
      k = cut;
    }
    p->row_starts = starts;
    d->rep.size = (e0 + k) * 2;
  }
  p->all_defined = 0;
  if (f->def > 0 && k > 0) {
    int64_t at = page_def_at(f, e0);
    if (ensure_total(&d->def, (at + k) * 2) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
    int16_t* dl = (int16_t*)(void*)d->def.data + at;
    SL_RETURN_NOT_OK(sl_pq_level_stream_get(&pc->def, dl, k, w, error));
    int16_t maxd = f->def;
    int all = 1;
    for (int64_t i = 0; i < k; ++i) {
      if (dl[i] < 0 || dl[i] > maxd) return sl_pq_chunk_error(w, error, EILSEQ, "definition level above the maximum");
      all &= dl[i] == maxd;
    }
    d->def.size = (at + k) * 2;
    p->all_defined = all && f->rep == 0;
  }
  if (k > 0) {
    const int16_t* def = f->def > 0 && !p->all_defined
                             ? (const int16_t*)(const void*)d->def.data + page_def_at(f, e0)
                             : NULL;
    int64_t nv = k;
    if (def) {
      nv = 0;
      for (int64_t i = 0; i < k; ++i) nv += def[i] == f->def;
    }
    enum pq_encoding enc;
    const uint8_t* vdata;
    int64_t vsize;
    d->n_levels += k;
    int rc = sl_pq_piece_values(cr, f, pc, nv, &enc, &vdata, &vsize, w, error);
    if (rc == 0) rc = page_values(cr, p, enc, vdata, vsize, e0, k, w, error);
    cr->ready = 0;
    if (rc != 0) return rc;
    pc->taken += k;
    c->levels += k;
  }
  if (pc->taken == pc->n) sl_pq_piece_end(pc);
  if (f->rep == 0 && d->n_slots >= want) *done = 1;
  return 0;
}

/// A v2 data page's sections: repetition and definition levels, stored
/// uncompressed ahead of the values, and the values, compressed or not
/// (`compressed`: decompress `values_size` bytes to `values_usize`, a size
/// already checked against the codec's bound).
struct v2_sections {
  const uint8_t *rep, *def, *values;
  int64_t rep_size, def_size, values_size, values_usize;
  int compressed;
};

static int v2_sections(const struct pq_column_meta* m, const struct pq_page_header* h,
                       const uint8_t* body, int64_t bsize, struct v2_sections* s,
                       struct chunk_where* w, struct sluice_error* error) {
  int64_t rl = h->repetition_levels_byte_length, dl = h->definition_levels_byte_length;
  int64_t usize = h->uncompressed_page_size;
  if (rl < 0 || dl < 0 || rl > bsize - dl || rl + dl > usize)
    return sl_pq_chunk_error(w, error, EILSEQ, "level byte lengths exceed the page");
  s->rep = body;
  s->rep_size = rl;
  s->def = body + rl;
  s->def_size = dl;
  s->values = body + rl + dl;
  s->values_usize = usize - rl - dl;
  s->values_size = s->values_usize > 0 ? bsize - rl - dl : 0;
  s->compressed = h->is_compressed && m->codec != PQ_CODEC_UNCOMPRESSED && s->values_usize > 0;
  if (s->compressed)
    return sl_pq_chunk_prefix(w, error, sl_pq_decompress_check(m->codec, s->values, s->values_size,
                                                            s->values_usize, error));
  return 0;
}

/// Starts the data page of header h (its bytes at `body`, its header at
/// `pos` in the chunk) as the cursor's piece: decompressed into the
/// piece's own buffer, which outlives the slice (the reader's is the
/// split's, for every chunk).
static int piece_start(struct pq_column_reader* cr, struct pq_chunk_cursor* c,
                       const struct pq_page_header* h, const uint8_t* body, int64_t bsize,
                       int64_t pos, struct chunk_where* w, struct sluice_error* error) {
  const struct pq_column_meta* m = c->m;
  struct pq_page_piece* pc = &c->piece;
  int64_t usize = h->uncompressed_page_size;
  const uint8_t *rdata = body, *ddata = body, *vdata = body;
  int64_t rsize = bsize, dsize = bsize, vsize = bsize;
  if (h->type == PQ_PAGE_DATA_V2) {
    struct v2_sections s;
    SL_RETURN_NOT_OK(v2_sections(m, h, body, bsize, &s, w, error));
    rdata = s.rep;
    rsize = s.rep_size;
    ddata = s.def;
    dsize = s.def_size;
    vdata = s.values;
    vsize = s.values_size;
    if (s.compressed) {
      if (sl_pq_scratch_lazy(&pc->bytes, s.values_usize) != 0)
        return sl_pq_chunk_nomem(w, error, s.values_usize, "the decompressed page");
      SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, m->codec, vdata, vsize,
                                                                   pc->bytes.data, s.values_usize, error)));
      vdata = pc->bytes.data;
      vsize = s.values_usize;
    }
  } else if (m->codec != PQ_CODEC_UNCOMPRESSED) {
    if (sl_pq_scratch_lazy(&pc->bytes, usize) != 0) return sl_pq_chunk_nomem(w, error, usize, "the decompressed page");
    SL_RETURN_NOT_OK(sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, m->codec, body, bsize,
                                                                 pc->bytes.data, usize, error)));
    rdata = ddata = vdata = pc->bytes.data;
    rsize = dsize = vsize = usize;
  }
  SL_RETURN_NOT_OK(sl_pq_piece_open(pc, c->f, h, rdata, rsize, ddata, dsize, vdata, vsize, w, error));
  pc->header = pos;
  pc->entry0 = c->levels;
  return 0;
}

/// Decodes the chunk's pages from where `c` stands into p->out until it
/// holds `want` slots (INT64_MAX: to the chunk's end), a repeated leaf's
/// until the entry that starts its row `want` + 1: only then are its rows
/// known to be whole, since a row may go on in the next page (v1 pages). A
/// page that holds more than that (a flat leaf's), or may (a repeated
/// leaf's), becomes the cursor's piece, decoded as far as the slice needs
/// and on from there by the next.
static int read_pages(struct pq_column_reader* cr, struct pq_chunk_cursor* c, struct page_ctx* p,
                      int64_t want, struct chunk_where* w, struct sluice_error* error) {
  const struct pq_field* f = c->f;
  const struct pq_column_meta* m = c->m;
  const uint8_t* chunk = c->view.data;
  int64_t start = c->start, len = c->len;
  int rc = 0, done = 0;
  while (rc == 0 && !done) {
    if (c->piece.active) {
      rc = piece_take(cr, c, p, want, &done, w, error);
      continue;
    }
    if (c->pos >= len || c->levels >= m->num_values ||
        (f->rep == 0 ? p->out->n_slots >= want : p->row_starts > want))
      break;
    int64_t pos = c->pos;
    w->page = start + pos;
    w->page_entry = c->levels;
    struct pq_page_header h;
    int64_t hsize;
    rc = sl_pq_chunk_prefix(w, error, sl_pq_page_header_parse(chunk + pos, len - pos, &h, &hsize, error));
    if (rc != 0) break;
    if (h.compressed_page_size > len - pos - hsize) {
      rc = sl_pq_chunk_error(w, error, EILSEQ, "page extends past the column chunk");
      break;
    }
    const uint8_t* body = chunk + pos + hsize;
    int64_t bsize = h.compressed_page_size;
    c->pos = pos + hsize + bsize;
    if (h.has_crc && cr->verify_checksums && sl_pq_page_crc(body, bsize) != h.crc) {
      rc = sl_pq_chunk_error(w, error, EILSEQ, "page CRC mismatch (the page is corrupt)");
      break;
    }
    int64_t usize = h.uncompressed_page_size;
    // The header's size is a claim until the page is decoded: one the bytes
    // cannot make is refused before memory is reserved for it (2 GiB per
    // worker for a 274-byte file).
    if (m->codec != PQ_CODEC_UNCOMPRESSED && (h.type == PQ_PAGE_DICTIONARY || h.type == PQ_PAGE_DATA)) {
      rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress_check(m->codec, body, bsize, usize, error));
      if (rc != 0) break;
    }
    if (h.type == PQ_PAGE_DICTIONARY) {
      if (cr->has_dict || c->saw_data) {
        rc = sl_pq_chunk_error(w, error, EILSEQ, "a second or late dictionary page");
        break;
      }
      const uint8_t* dd = body;
      int64_t dsize = bsize;
      if (m->codec != PQ_CODEC_UNCOMPRESSED) {
        if (sl_pq_scratch_lazy(&cr->dict, usize) != 0) { rc = sl_pq_chunk_nomem(w, error, usize, "the decompressed dictionary page"); break; }
        rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, m->codec, body, bsize, cr->dict.data, usize, error));
        if (rc != 0) break;
        dd = cr->dict.data;
        dsize = usize;
      }
      rc = sl_pq_read_dictionary(cr, f, dd, dsize, h.num_values, w, error);
      continue;
    }
    if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2) continue;  // index pages etc.
    c->saw_data = 1;
    int64_t n = h.num_values;
    if (n < 0 || n > m->num_values - c->levels) {
      rc = sl_pq_chunk_error(w, error, EILSEQ, "page value count exceeds the column chunk's");
      break;
    }
    // Counts are claims: one the page's bytes cannot hold is refused before
    // memory is reserved and mapped for it (1 GB for a 124-byte file).
    int64_t least = least_page_bytes(f, &h, n);
    int64_t has = m->codec != PQ_CODEC_UNCOMPRESSED && (h.type == PQ_PAGE_DATA || h.is_compressed)
                      ? usize
                      : bsize;
    if (least > has) {
      rc = sl_pq_chunk_prefix(w, error, sl_error_set(error, EILSEQ, "the page says %" PRId64
                              " values, which need %" PRId64 " bytes or more; it has %" PRId64,
                              n, least, has));
      break;
    }
    if (want != INT64_MAX && (f->rep == 0 ? n > want - p->out->n_slots : n > want - p->row_starts)) {
      rc = piece_start(cr, c, &h, body, bsize, pos, w, error);
      continue;
    }
    struct page_ctx* pc = p;
    struct pq_leaf_data* out = pc->out;
    if (f->rep == 0 && (rc = grow_slots(pc, pc->rows, w, error)) != 0) break;
    // Map the memory of the page's slots in one call (fresh or the caller's,
    // in a placed scan), not page fault by page fault: that was a fifth of a
    // Parquet -> pandas load. Per page, not per chunk, so that what the
    // kernel zeroes is still in cache when the values land (W1 load: 0.65 ->
    // 0.62 s).
    if (f->rep == 0 && f->out_width > 0)
      sl_prefault(out->values.data + out->n_slots * f->out_width, (size_t)(n * f->out_width));
    int v2 = h.type == PQ_PAGE_DATA_V2;
    const uint8_t* vdata;
    int64_t vsize;
    int64_t used = 0;
    if (v2) {
      struct v2_sections s;
      if ((rc = v2_sections(m, &h, body, bsize, &s, w, error)) != 0) break;
      vdata = s.values;
      vsize = s.values_size;
      int64_t vusize = s.values_usize;
      rc = page_levels(pc, 1, PQ_ENC_RLE, PQ_ENC_RLE, s.rep, s.rep_size, s.def, s.def_size, n,
                       &used, w, error);
      if (rc != 0) break;
      int ow = f->out_width;
      if (s.compressed && h.encoding == PQ_ENC_PLAIN && f->conv == PQ_CONV_COPY && ow > 0 && vusize % ow == 0 &&
          vusize / ow <= n && grow_slots(pc, out->n_slots + n, w, error) == 0) {
        // PLAIN values decompress straight into the output (dense at the
        // page's first slot; page_values spreads them over nulls).
        uint8_t* dst = out->values.data + out->n_slots * ow;
        rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, m->codec, vdata, vsize, dst, vusize, error));
        if (rc != 0) break;
        vdata = dst;
        vsize = vusize;
      } else if (s.compressed) {
        if (sl_pq_scratch_lazy(&cr->page, vusize) != 0) { rc = sl_pq_chunk_nomem(w, error, vusize, "the decompressed page"); break; }
        rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, m->codec, vdata, vsize, cr->page.data, vusize, error));
        if (rc != 0) break;
        vdata = cr->page.data;
        vsize = vusize;
      }
    } else {
      const uint8_t* pd = body;
      int64_t psize = bsize;
      uint8_t levels[24];
      if (m->codec != PQ_CODEC_UNCOMPRESSED &&
          in_place_v1(cr, pc, &h, m->codec, body, bsize, levels, &vdata, &rc, w, error)) {
        if (rc != 0) break;
        int64_t lsize = usize - n * f->out_width;
        rc = page_levels(pc, 0, h.repetition_level_encoding, h.definition_level_encoding, levels,
                         lsize, levels, lsize, n, &used, w, error);
        if (rc != 0) break;
        vsize = n * f->out_width;
      } else {
        if (m->codec != PQ_CODEC_UNCOMPRESSED) {
          if (sl_pq_scratch_lazy(&cr->page, usize) != 0) { rc = sl_pq_chunk_nomem(w, error, usize, "the decompressed page"); break; }
          rc = sl_pq_chunk_prefix(w, error, sl_pq_decompress(cr->codec, m->codec, body, bsize, cr->page.data, usize, error));
          if (rc != 0) break;
          pd = cr->page.data;
          psize = usize;
        }
        rc = page_levels(pc, 0, h.repetition_level_encoding, h.definition_level_encoding, pd, psize,
                         pd, psize, n, &used, w, error);
        if (rc != 0) break;
        vdata = pd + used;
        vsize = psize - used;
      }
    }
    int64_t e0 = out->n_levels;
    out->n_levels += n;
    rc = page_values(cr, pc, h.encoding, vdata, vsize, e0, n, w, error);
    if (rc != 0) break;
    c->levels += n;
  }
  w->page = -1;
  return rc;
}

/// A binary leaf's offsets sized, and its STRING values checked (`row0`:
/// the chunk's row of out's first, for the message), unless `checked` (a
/// cursor's dictionary, found valid for an earlier slice).
static int finish_binary(const struct pq_field* f, struct pq_leaf_data* out, int64_t row0,
                         int checked, const struct chunk_where* w, struct sluice_error* error) {
  if (f->conv != PQ_CONV_BINARY) return 0;
  // Keyed: the dictionary's values are checked, not each row's.
  int64_t n = out->keyed ? out->n_dict : out->n_slots;
  if (out->values.borrowed == NULL) out->offsets.size = (n + 1) * (out->wide ? 8 : 4);
  return f->is_string && !checked ? check_utf8(out, n, out->keyed ? 0 : row0, w, error) : 0;
}

/// The bytes to reserve for a binary chunk's values. Its uncompressed size
/// bounds its PLAIN values (lengths + bytes): reserving it once spares the
/// values buffer its doublings, each a copy into fresh pages (a fifth of the
/// time of a string column). A hint only: dictionary pages may expand further
/// and then grow as usual; capped by what the compressed bytes can plausibly
/// hold, so a forged size cannot reserve memory the data does not back.
static int64_t binary_bytes_hint(const struct pq_chunk_cursor* c) {
  int64_t hint = c->m->total_uncompressed_size;
  return hint > (int64_t)64 * c->len ? (int64_t)64 * c->len : hint;
}

/// Room for offset 0 of a binary leaf, and for `hint` bytes of values.
static int start_binary(struct pq_leaf_data* out, int64_t hint, const struct chunk_where* w,
                        struct sluice_error* error) {
  if (ensure_total(&out->offsets, 8) != 0) return sl_pq_chunk_prefix(w, error, ENOMEM);
  memset(out->offsets.data, 0, 8);
  if (hint > INT32_MAX) hint = INT32_MAX;
  if (hint > 0 && sl_buffer_grow_to(&out->values, out->values.size + hint) != 0)
    return sl_pq_chunk_prefix(w, error, ENOMEM);
  return 0;
}

int sl_pq_column_read(struct pq_column_reader* cr, int64_t rg, const struct pq_field* f,
                   struct pq_leaf_data* out, struct sluice_error* error) {
  struct chunk_where w = {.file = cr->source->name, .rg = rg, .path = f->path, .page = -1};
  sl_pq_leaf_data_reset(out);
  cr->has_dict = 0;
  cr->dict_n = 0;
  struct pq_chunk_cursor c;
  memset(&c, 0, sizeof c);
  SL_RETURN_NOT_OK(chunk_open(cr, rg, f, &c, &w, error));
  int64_t rows = c.rows;
  if (out->place != NULL && f->out_width > 0 && f->rep == 0)
    sl_buffer_borrow(&out->values, out->place, rows * f->out_width, out->place_owner);
  // Flat and struct-only leaves are sized once, at the first data page, once
  // it has been found able to hold its values.
  struct page_ctx p = {.f = f, .out = out, .cap_slots = 0, .rows = rows};
  if (f->conv == PQ_CONV_BINARY) {
    SL_RETURN_NOT_OK(start_binary(out, binary_bytes_hint(&c), &w, error));
  }
  SL_RETURN_NOT_OK(chunk_view(cr, &c, &w, error));
  int rc = read_pages(cr, &c, &p, INT64_MAX, &w, error);
  if (rc == 0 && c.levels != c.m->num_values)
    rc = sl_pq_chunk_error(&w, error, EILSEQ, "the pages hold fewer values than the column chunk claims");
  if (rc == 0) rc = finish_binary(f, out, 0, 0, &w, error);
  sl_view_release(&c.view);
  return rc;
}

/* ---- a column chunk a slice of rows at a time --------------------------------- */

int sl_pq_cursor_open(struct pq_column_reader* cr, int64_t rg, const struct pq_field* f, int wide,
                      int64_t widen_above, struct pq_chunk_cursor* c, struct sluice_error* error) {
  struct chunk_where w = {.file = cr->source->name, .rg = rg, .path = f->path, .page = -1};
  memset(c, 0, sizeof *c);
  struct sl_buffer* bufs[] = {&c->dict, &c->dict_out, &c->dict_ptrs, &c->dict_lens};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; ++i) sl_buffer_init(bufs[i], cr->alloc);
  sl_pq_piece_init(&c->piece, cr->alloc);
  c->wide = wide;
  c->widen_above = widen_above;
  c->open = 1;
  SL_RETURN_NOT_OK(chunk_open(cr, rg, f, c, &w, error));
  return chunk_view(cr, c, &w, error);
}

/// Frees what the cursor holds but its keyed dictionary, which its last
/// slice's leaf data may still borrow.
static void cursor_close(struct pq_chunk_cursor* c) {
  if (!c->open) return;
  struct sl_buffer* bufs[] = {&c->dict, &c->dict_out, &c->dict_ptrs, &c->dict_lens};
  for (size_t i = 0; i < sizeof bufs / sizeof *bufs; ++i) sl_buffer_reset(bufs[i]);
  sl_pq_piece_release(&c->piece);
  sl_view_release(&c->view);
  c->open = 0;
}

void sl_pq_cursor_release(struct pq_chunk_cursor* c) {
  cursor_close(c);
  sl_ref_release(c->keyed_ref);
  c->keyed_ref = NULL;
  c->keyed_block = NULL;
}

int64_t sl_pq_cursor_held(const struct pq_chunk_cursor* c) {
  if (!c->open) return 0;
  int64_t bytes = c->dict.capacity + c->dict_out.capacity + c->dict_ptrs.capacity +
                  c->dict_lens.capacity + sl_pq_piece_held(&c->piece);
  if (c->keyed_ref != NULL) bytes += c->keyed_values_at + c->keyed_bytes;
  return bytes;
}

int sl_pq_cursor_next(struct pq_column_reader* cr, struct pq_chunk_cursor* c, int64_t rows,
                      struct pq_leaf_data* out, struct sluice_error* error) {
  const struct pq_field* f = c->f;
  struct chunk_where w = {.file = cr->source->name, .rg = c->rg, .path = f->path, .page = -1};
  sl_pq_leaf_data_reset(out);
  if (!c->open || rows <= 0 || rows > c->rows - c->row)
    return sl_pq_chunk_error(&w, error, EINVAL, "rows asked past the column chunk's");
  struct page_ctx p = {.f = f, .out = out, .cap_slots = 0, .rows = rows, .cursor = c};
  int rc = 0;
  if (f->conv == PQ_CONV_BINARY) {
    // The slice's share of the chunk's values.
    int64_t hint = (int64_t)((double)binary_bytes_hint(c) * ((double)rows / (double)c->rows));
    rc = start_binary(out, hint, &w, error);
  }
  // Slots are reserved once a page is found able to hold its values (as
  // sl_pq_column_read does), not on the row count's word alone.
  if (rc == 0) {
    swap_dictionary(cr, c);
    rc = read_pages(cr, c, &p, rows, &w, error);
    swap_dictionary(cr, c);
  }
  if (rc == 0 && (f->rep == 0 ? out->n_slots != rows : p.row_starts != rows))
    rc = sl_pq_chunk_error(&w, error, EILSEQ, "the pages hold fewer values than the column chunk claims");
  if (rc == 0 && f->rep > 0 && c->row + rows == c->rows && c->piece.active)
    rc = sl_pq_chunk_error(&w, error, EILSEQ, "the pages hold more rows than the row group has");
  int shared = out->keyed && c->keyed_ref != NULL && out->values.borrowed == c->keyed_ref;
  if (rc == 0) rc = finish_binary(f, out, c->row, shared && c->keyed_checked, &w, error);
  if (rc == 0 && shared) c->keyed_checked = 1;
  if (rc != 0) return rc;
  c->row += rows;
  // The pages read are done with (a mapped file's can leave memory), up to
  // the piece's, whose bytes the next slice reads on.
  int64_t upto = c->start + (c->piece.active ? c->piece.header : c->pos);
  if (upto > c->dropped) {
    sl_source_drop(cr->source, c->dropped, upto - c->dropped);
    c->dropped = upto;
  }
  if (c->row == c->rows) cursor_close(c);
  return 0;
}
