// One column chunk: dictionary attempt, data pages (v1 or v2), compression,
// statistics. The whole chunk is encoded into memory (the caller writes it
// and rebases its offsets), so that chunks of a row group can be encoded on
// several threads.
//
// Dictionary: every value goes through a hash table; when the PLAIN
// dictionary would outgrow opt->dict_limit (1 MiB by default, as in Arrow
// C++), the rows before that value (whole rows, where a page may end) are
// written dictionary-encoded with the dictionary so far, and the rest PLAIN,
// as Arrow C++ falls back (the chunk lists both in its encoding_stats). To
// not waste time on columns that cannot benefit (random doubles, ids), the
// attempt is abandoned for the whole chunk when, after the first 16384
// values, more than half were distinct.
//
// Each dictionary-encoded page's indices take the bits of that page's
// largest index, not of the whole dictionary's (Arrow C++ sizes them from
// the dictionary so far): 10 categories take 4 bits, although the chunk's
// dictionary later grows to 36000 values.
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_hash.h"
#include "format/parquet/pq_bloom.h"
#include "format/parquet/pq_encoding.h"
#include "format/parquet/pq_meta.h"
#include "format/parquet/pq_write_internal.h"

#define PQW_PROBE_VALUES 16384
/// A dictionary page ends before the row of an index that would widen all
/// its indices by more than this many bits in all (more than a new page
/// costs), so that a few wide indices do not widen many narrow ones.
#define PQW_WIDEN_CUT_BITS 8192

int sl_pqw_scratch_init(struct pqw_scratch* s, const struct sluice_allocator* alloc,
                     struct sluice_error* error) {
  memset(s, 0, sizeof *s);
  s->alloc = alloc;
  sl_pqw_column_data_init(&s->data, alloc);
  sl_buffer_init(&s->page, alloc);
  sl_buffer_init(&s->compressed, alloc);
  sl_buffer_init(&s->header, alloc);
  sl_buffer_init(&s->dict_values, alloc);
  sl_buffer_init(&s->dict_table, alloc);
  sl_buffer_init(&s->indices, alloc);
  sl_buffer_init(&s->dict_plain, alloc);
  return sl_pq_codec_ctx_new(alloc, &s->codec, error);
}

void sl_pqw_scratch_free(struct pqw_scratch* s) {
  if (s->alloc == NULL && s->codec == NULL) return;
  sl_pqw_column_data_free(&s->data);
  sl_buffer_reset(&s->page);
  sl_buffer_reset(&s->compressed);
  sl_buffer_reset(&s->header);
  sl_buffer_reset(&s->dict_values);
  sl_buffer_reset(&s->dict_table);
  sl_buffer_reset(&s->indices);
  sl_buffer_reset(&s->dict_plain);
  if (s->codec != NULL) sl_pq_codec_ctx_free(s->codec);
  memset(s, 0, sizeof *s);
}

void sl_pqw_chunk_init(struct pqw_chunk* c, const struct sluice_allocator* alloc) {
  memset(c, 0, sizeof *c);
  sl_buffer_init(&c->bytes, alloc);
  sl_pq_column_meta_init(&c->meta);
}

void sl_pqw_chunk_free(struct pqw_chunk* c) {
  if (c->stat_bytes != NULL) sl_free(c->bytes.alloc, c->stat_bytes, (size_t)c->stat_size);
  c->stat_bytes = NULL;
  sl_buffer_reset(&c->bytes);
}

static int oom(struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "parquet writer: out of memory (column chunk)");
}

/// Bytes of one PLAIN value of a fixed-width physical type other than
/// BOOLEAN (the writer makes no INT96).
static int64_t plain_width(const struct pqw_leaf* leaf) {
  return leaf->type == PQ_FIXED_LEN_BYTE_ARRAY              ? leaf->type_length
         : (leaf->type == PQ_INT32 || leaf->type == PQ_FLOAT) ? 4
                                                              : 8;
}

/* ---- Dictionary ------------------------------------------------------------ */

static inline uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

struct dict_build {
  const struct pqw_leaf* leaf;
  struct pqw_scratch* s;
  int64_t width;    ///< fixed width in bytes, 0 for byte arrays
  uint32_t* table;  ///< slots: entry + 1, 0 = empty
  uint64_t mask;
  int64_t n_entries;
  int64_t plain_bytes;
};

static inline struct pqw_ba value_at(const struct dict_build* b, const uint8_t* values, int64_t i) {
  if (b->width == 0) return ((const struct pqw_ba*)(const void*)values)[i];
  struct pqw_ba v = {values + i * b->width, b->width};
  return v;
}

static inline uint64_t value_hash(const struct dict_build* b, struct pqw_ba v) {
  if (b->width == 8) {
    uint64_t x;
    memcpy(&x, v.ptr, 8);
    return mix64(x);
  }
  if (b->width == 4) {
    uint32_t x;
    memcpy(&x, v.ptr, 4);
    return mix64(x);
  }
  return sl_hash_bytes(v.ptr, (size_t)v.len);
}

static int table_resize(struct dict_build* b, uint64_t cap, struct sluice_error* error) {
  struct sl_buffer* t = &b->s->dict_table;
  t->size = 0;
  if (sl_buffer_reserve(t, (int64_t)(cap * 4)) != 0) return oom(error);
  b->table = (uint32_t*)(void*)t->data;
  memset(b->table, 0, (size_t)cap * 4);
  t->size = (int64_t)(cap * 4);
  b->mask = cap - 1;
  const struct pqw_ba* entries = (const struct pqw_ba*)(const void*)b->s->dict_values.data;
  for (int64_t e = 0; e < b->n_entries; ++e) {
    uint64_t slot = value_hash(b, entries[e]) & b->mask;
    while (b->table[slot] != 0) slot = (slot + 1) & b->mask;
    b->table[slot] = (uint32_t)(e + 1);
  }
  return 0;
}

static inline int same_value(const struct dict_build* b, struct pqw_ba x, struct pqw_ba v) {
  if (b->width == 8) {  // one load each, not a call to memcmp
    uint64_t p, q;
    memcpy(&p, x.ptr, 8);
    memcpy(&q, v.ptr, 8);
    return p == q;
  }
  if (b->width == 4) {
    uint32_t p, q;
    memcpy(&p, x.ptr, 4);
    memcpy(&q, v.ptr, 4);
    return p == q;
  }
  return x.len == v.len && (v.len == 0 || memcmp(x.ptr, v.ptr, (size_t)v.len) == 0);
}

/// The entry of `v` (1-based) in the dictionary being built, added when new;
/// *found = 0 when adding it would pass the dictionary size limit.
static int dict_find_or_add(struct dict_build* b, const struct pqw_options* opt, struct pqw_ba v,
                            uint32_t* found, struct sluice_error* error) {
  struct pqw_scratch* s = b->s;
  uint64_t slot = value_hash(b, v) & b->mask;
  const struct pqw_ba* entries = (const struct pqw_ba*)(const void*)s->dict_values.data;
  for (;;) {
    uint32_t e = b->table[slot];
    if (e == 0) break;
    if (same_value(b, entries[e - 1], v)) {
      *found = e;
      return 0;
    }
    slot = (slot + 1) & b->mask;
  }
  *found = 0;
  b->plain_bytes += b->width == 0 ? 4 + v.len : b->width;
  if (b->plain_bytes > opt->dict_limit) return 0;
  if (sl_buffer_append(&s->dict_values, &v, sizeof v) != 0) return oom(error);
  *found = (uint32_t)(++b->n_entries);
  b->table[slot] = *found;
  if ((uint64_t)b->n_entries * 2 > b->mask) SL_RETURN_NOT_OK(table_resize(b, (b->mask + 1) * 2, error));
  return 0;
}

/// Dictionary-encodes the values into s->indices and s->dict_values: the
/// first *n_encoded of them (all, or those before the one that would pass the
/// size limit). *used = 0 when the dictionary is abandoned (too many distinct
/// values, or a dictionary column's own dictionary passes the limit).
static int dict_try(const struct pqw_leaf* leaf, const struct pqw_options* opt,
                    struct pqw_scratch* s, int* used, int64_t* n_encoded,
                    struct sluice_error* error) {
  struct pqw_column_data* d = &s->data;
  struct dict_build b;
  memset(&b, 0, sizeof b);
  b.leaf = leaf;
  b.s = s;
  b.width = leaf->type == PQ_BYTE_ARRAY ? 0 : plain_width(leaf);
  *used = 0;
  *n_encoded = 0;
  s->dict_values.size = 0;
  s->indices.size = 0;
  if (sl_buffer_reserve(&s->indices, d->n_values * 4) != 0) return oom(error);
  uint32_t* idx = (uint32_t*)(void*)s->indices.data;
  // Sized for the values probed (or all, when fewer), not grown from small
  // by rehashing every entry at each doubling.
  int64_t expect = d->n_seed + (d->n_values < PQW_PROBE_VALUES ? d->n_values : PQW_PROBE_VALUES);
  int64_t most = opt->dict_limit / (b.width > 4 ? b.width : 4) + 1;  // entries under the limit
  if (expect > most) expect = most;
  uint64_t slots = 1024;
  while ((int64_t)slots < 2 * expect) slots *= 2;
  SL_RETURN_NOT_OK(table_resize(&b, slots, error));
  // A dictionary column's own dictionary first, in its order (d->seed).
  for (int64_t i = 0; i < d->n_seed; ++i) {
    uint32_t found;
    SL_RETURN_NOT_OK(dict_find_or_add(&b, opt, value_at(&b, d->seed.data, i), &found, error));
    if (found == 0) return 0;  // past the size limit: plain values
  }
  const uint8_t* values = d->vdata;
  int64_t n = d->n_values;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t found;
    SL_RETURN_NOT_OK(dict_find_or_add(&b, opt, value_at(&b, values, i), &found, error));
    if (found == 0) {  // past the size limit: the rest falls back to PLAIN
      n = i;
      break;
    }
    idx[i] = found - 1;
    // Mostly distinct values: not worth a dictionary (unless the column is
    // one: its dictionary is kept). More than half of the probe distinct
    // for long chunks; for chunks of up to 4 probes (a partitioned write
    // makes many), nearly all (random doubles, ids): 12K values drawn
    // 60K times are half distinct in the probe and still 2.4x smaller
    // dictionary-encoded.
    if (i + 1 == PQW_PROBE_VALUES && d->n_values > PQW_PROBE_VALUES && d->n_seed == 0) {
      int64_t most = d->n_values > 4 * PQW_PROBE_VALUES ? PQW_PROBE_VALUES / 2
                                                        : PQW_PROBE_VALUES / 10 * 9;
      if (b.n_entries > most) return 0;
    }
  }
  s->indices.size = n * 4;
  *n_encoded = n;
  // The PLAIN dictionary page body.
  s->dict_plain.size = 0;
  if (sl_buffer_reserve(&s->dict_plain, b.plain_bytes) != 0) return oom(error);
  const struct pqw_ba* entries = (const struct pqw_ba*)(const void*)s->dict_values.data;
  for (int64_t e = 0; e < b.n_entries; ++e) {
    if (b.width == 0) {
      uint32_t len = (uint32_t)entries[e].len;
      sl_buffer_append_unsafe(&s->dict_plain, &len, 4);
    }
    if (entries[e].len > 0) sl_buffer_append_unsafe(&s->dict_plain, entries[e].ptr, entries[e].len);
  }
  *used = 1;
  return 0;
}

/* ---- Pages --------------------------------------------------------------------- */

static int append_plain(const struct pqw_leaf* leaf, const uint8_t* values, int64_t v0,
                        int64_t n, struct sl_buffer* out, struct sluice_error* error) {
  if (n == 0) return 0;
  switch (leaf->type) {
    case PQ_BOOLEAN: {
      int64_t nb = (n + 7) / 8;
      if (sl_buffer_reserve(out, nb) != 0) return oom(error);
      uint8_t* p = out->data + out->size;
      memset(p, 0, (size_t)nb);
      for (int64_t i = 0; i < n; ++i) p[i >> 3] |= (uint8_t)((values[v0 + i] & 1) << (i & 7));
      out->size += nb;
      return 0;
    }
    case PQ_BYTE_ARRAY: {
      const struct pqw_ba* v = (const struct pqw_ba*)(const void*)values + v0;
      int64_t total = 0;
      for (int64_t i = 0; i < n; ++i) total += 4 + v[i].len;
      if (sl_buffer_reserve(out, total) != 0) return oom(error);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t len = (uint32_t)v[i].len;
        sl_buffer_append_unsafe(out, &len, 4);
        if (len > 0) sl_buffer_append_unsafe(out, v[i].ptr, v[i].len);
      }
      return 0;
    }
    default: {
      int64_t w = plain_width(leaf);
      if (sl_buffer_append(out, values + v0 * w, n * w) != 0) return oom(error);
      return 0;
    }
  }
}

/// Appends levels as an RLE/bit-packed hybrid; with a 4-byte length prefix for v1.
/// all_max: every level is max_level (definition levels of a chunk without
/// nulls or lists), written as one run without reading them.
static int append_levels(const struct sl_buffer* levels, int64_t l0, int64_t n, int max_level,
                         int all_max, int prefixed, struct sl_buffer* out, int32_t* length,
                         struct sluice_error* error) {
  int64_t start = out->size;
  if (prefixed && sl_buffer_append_zeros(out, 4) != 0) return oom(error);
  const int16_t* lv = (const int16_t*)(const void*)levels->data + l0;
  int width = sl_pq_bit_width((uint64_t)max_level);
  int rc = all_max ? sl_pq_rle_encode_run((uint32_t)max_level, n, width, out)
                   : sl_pq_rle_encode_i16(lv, n, width, out);
  if (rc != 0) return rc == ENOMEM ? oom(error) : sl_error_set(error, rc, "parquet writer: "
                                                                 "level encoding failed");
  int64_t len = out->size - start - (prefixed ? 4 : 0);
  if (len > INT32_MAX)
    return sl_error_set(error, EFBIG, "parquet writer: levels of a page too large");
  if (prefixed) {
    uint32_t l = (uint32_t)len;
    memcpy(out->data + start, &l, 4);
  }
  *length = (int32_t)len;
  return 0;
}

struct page_writer {
  const struct pqw_leaf* leaf;
  const struct pqw_options* opt;
  struct pqw_scratch* s;
  struct pqw_chunk* out;
  int64_t uncompressed_total;
};

/// Compresses the page body held in s->page (levels_len bytes of v2 levels
/// first, kept uncompressed) and appends header + body to the chunk.
static int emit_page(struct page_writer* w, struct pq_page_header* h, int64_t levels_len,
                     struct sluice_error* error) {
  struct pqw_scratch* s = w->s;
  const uint8_t* body = s->page.data;
  int64_t body_size = s->page.size;
  if (s->page.size > INT32_MAX)
    return sl_error_set(error, EFBIG, "parquet writer: column '%s': a page of %lld bytes is "
                        "too large", w->leaf->name, (long long)s->page.size);
  if (w->opt->codec != PQ_CODEC_UNCOMPRESSED) {
    s->compressed.size = 0;
    if (levels_len > 0 && sl_buffer_append(&s->compressed, s->page.data, levels_len) != 0)
      return oom(error);
    static const uint8_t k_empty[1] = {0};
    const uint8_t* values = s->page.size > levels_len ? s->page.data + levels_len : k_empty;
    SL_RETURN_NOT_OK(sl_pq_compress(s->codec, w->opt->codec, w->opt->level, values,
                                 s->page.size - levels_len, &s->compressed, error));
    body = s->compressed.data;
    body_size = s->compressed.size;
    if (body_size > INT32_MAX)
      return sl_error_set(error, EFBIG, "parquet writer: column '%s': a compressed page is too "
                          "large", w->leaf->name);
  }
  h->uncompressed_page_size = (int32_t)s->page.size;
  h->compressed_page_size = (int32_t)body_size;
  s->header.size = 0;
  SL_RETURN_NOT_OK(sl_pq_page_header_write(h, &s->header, error));
  if (sl_buffer_append(&w->out->bytes, s->header.data, s->header.size) != 0 ||
      sl_buffer_append(&w->out->bytes, body, body_size) != 0)
    return oom(error);
  w->uncompressed_total += s->header.size + s->page.size;
  return 0;
}

/// The chunk's Bloom filter (header, then bitset) after its pages, sized for
/// its distinct values (the dictionary's, else one per value): every value's
/// PLAIN bytes hashed in. Booleans, INT96 and the null type get none.
static int append_bloom(const struct pqw_leaf* leaf, const struct pqw_options* opt,
                        struct pqw_scratch* s, int use_dict, int64_t n_dict,
                        struct pqw_chunk* out, struct sluice_error* error) {
  const struct pqw_column_data* d = &s->data;
  if (leaf->type == PQ_BOOLEAN || leaf->type == PQ_INT96 || leaf->conv == PQW_CV_NULL ||
      d->n_values == 0)
    return 0;
  int64_t n = use_dict ? n_dict : d->n_values;
  const uint8_t* values = d->vdata;
  if (use_dict) values = leaf->type == PQ_BYTE_ARRAY ? s->dict_values.data : s->dict_plain.data;
  int64_t size = sl_pq_bloom_size(n, opt->bloom_fpp);
  s->header.size = 0;
  SL_RETURN_NOT_OK(sl_pq_bloom_header_write(size, &s->header, error));
  struct pq_column_meta* m = &out->meta;
  m->bloom_filter_offset = out->bytes.size;
  m->bloom_filter_length = s->header.size + size;
  if (sl_buffer_append(&out->bytes, s->header.data, s->header.size) != 0 ||
      sl_buffer_append_zeros(&out->bytes, size) != 0)
    return oom(error);
  uint8_t* bits = out->bytes.data + out->bytes.size - size;
  if (leaf->type == PQ_BYTE_ARRAY) {
    const struct pqw_ba* v = (const struct pqw_ba*)(const void*)values;
    for (int64_t i = 0; i < n; ++i) sl_pq_bloom_insert(bits, size, sl_pq_bloom_hash(v[i].ptr, (size_t)v[i].len));
  } else {
    int64_t w = plain_width(leaf);
    for (int64_t i = 0; i < n; ++i) sl_pq_bloom_insert(bits, size, sl_pq_bloom_hash(values + i * w, (size_t)w));
  }
  return 0;
}

/// About the bytes the chunk's pages will take (uncompressed: an upper
/// bound for incompressible values, whose pages are what makes chunks big),
/// so that its buffer is sized once: grown by doubling, every step copied
/// the chunk and mapped fresh pages (half of a partitioned write's page
/// faults, when each row group's buffers start empty).
/// idx_width: bits per dictionary index (0: PLAIN).
static int64_t chunk_size_estimate(const struct pqw_leaf* leaf, const struct pqw_options* opt,
                                   const struct pqw_scratch* s, int idx_width) {
  const struct pqw_column_data* d = &s->data;
  int64_t n = d->n_values, values;
  if (idx_width > 0) {
    values = s->dict_plain.size + (n * idx_width + 7) / 8;
  } else if (leaf->type == PQ_BYTE_ARRAY) {
    const struct pqw_ba* v = (const struct pqw_ba*)(const void*)d->vdata;
    values = 0;
    for (int64_t i = 0; i < n; ++i) values += 4 + v[i].len;
  } else {
    values = leaf->type == PQ_BOOLEAN ? (n + 7) / 8 : n * plain_width(leaf);
  }
  int64_t levels = (d->n_levels * (sl_pq_bit_width((uint64_t)leaf->max_def) +
                                   sl_pq_bit_width((uint64_t)leaf->max_rep)) + 7) / 8;
  int64_t body = values + levels;
  int64_t pages = body / (opt->page_size > 0 ? opt->page_size : 1) + 2;
  return body + body / 64 + pages * 64;  // compressor's worst case, headers
}

/// Where the dictionary-encoded pages of a chunk end when only its first
/// n_encoded values are (a fallback): the level entry of the first value
/// that is not, moved back to its row's start (a page holds whole rows).
static int64_t dictionary_levels(const struct pqw_leaf* leaf, const struct pqw_column_data* d,
                                 int64_t n_encoded) {
  const int16_t* def = (const int16_t*)(const void*)d->def.data;
  const int16_t* rep = (const int16_t*)(const void*)d->rep.data;
  int64_t l = n_encoded;
  if (d->n_values != d->n_levels) {  // nulls or lists: walk the levels to the value
    int64_t v = 0;
    for (l = 0; l < d->n_levels; ++l) {
      if (leaf->max_def > 0 && def[l] != leaf->max_def) continue;
      if (v == n_encoded) break;
      ++v;
    }
  }
  while (leaf->max_rep > 0 && l > 0 && rep[l] != 0) --l;
  return l;
}

int sl_pqw_chunk_encode(const struct pqw_leaf* leaf, const struct pqw_options* opt,
                     struct pqw_acc* acc, const struct pqw_slice* slices, int64_t n_slices,
                     struct pqw_scratch* s, struct pqw_chunk* out, struct sluice_error* error) {
  struct pqw_column_data* d = &s->data;
  SL_RETURN_NOT_OK(sl_pqw_column_data_fill(d, leaf, acc, slices, n_slices, error));
  out->bytes.size = 0;
  if (out->stat_bytes != NULL) sl_free(out->bytes.alloc, out->stat_bytes, (size_t)out->stat_size);
  out->stat_bytes = NULL;
  out->stat_size = 0;
  struct pq_column_meta* m = &out->meta;
  sl_pq_column_meta_init(m);
  m->type = leaf->type;
  m->path_in_schema = leaf->path;
  m->n_path = leaf->n_path;
  m->codec = opt->codec;
  m->num_values = d->n_levels;

  int use_dict = 0;
  int64_t n_encoded = 0;
  // A chunk of nulls only gets a dictionary page too (empty, or an Arrow
  // dictionary's values), as Arrow C++ writes it: a categorical keeps its
  // categories.
  if (opt->dictionary && leaf->type != PQ_BOOLEAN)
    SL_RETURN_NOT_OK(dict_try(leaf, opt, s, &use_dict, &n_encoded, error));
  // Level entries [0, dict_levels) go to dictionary-encoded pages, the rest
  // (after a fallback) to PLAIN ones.
  int64_t dict_levels = d->n_levels;
  if (use_dict && n_encoded < d->n_values) {
    dict_levels = dictionary_levels(leaf, d, n_encoded);
    if (dict_levels == 0) use_dict = 0;  // not even the first row fits
  }
  int all_dict = use_dict && dict_levels == d->n_levels;
  int64_t n_dict = use_dict ? s->dict_values.size / (int64_t)sizeof(struct pqw_ba) : 0;
  // (PLAIN values past a fallback may each be another distinct one)
  out->distinct_bound = !use_dict ? d->n_values : n_dict + (all_dict ? 0 : d->n_values - n_encoded);
  int idx_width = use_dict ? sl_pq_bit_width((uint64_t)(n_dict > 1 ? n_dict - 1 : 1)) : 0;

  // Arrow C++ writes no statistics for columns of the null type.
  if (opt->statistics && leaf->conv != PQW_CV_NULL) {
    const uint8_t* sv = d->vdata;
    int64_t sn = d->n_values;
    // The dictionary holds each value once, so its bounds are the chunk's
    // and cheaper to find, unless it began as an Arrow dictionary's values
    // (d->seed), some of which no row of this chunk may use, or the chunk
    // fell back to PLAIN values it does not hold.
    if (all_dict && d->n_seed == 0) {
      sv = leaf->type == PQ_BYTE_ARRAY ? s->dict_values.data : s->dict_plain.data;
      sn = n_dict;
    }
    SL_RETURN_NOT_OK(sl_pqw_stats_compute(leaf, sv, sn, d->null_count, out, error));
  }

  if (sl_buffer_grow_to(&out->bytes, chunk_size_estimate(leaf, opt, s, all_dict ? idx_width : 0)) != 0)
    return oom(error);
  struct page_writer w = {leaf, opt, s, out, 0};
  int n_enc = 0;
  if (use_dict) {
    struct pq_page_header h;
    sl_pq_page_header_init(&h);
    h.type = PQ_PAGE_DICTIONARY;
    h.num_values = (int32_t)n_dict;
    h.encoding = PQ_ENC_PLAIN;
    s->page.size = 0;
    if (sl_buffer_append(&s->page, s->dict_plain.data, s->dict_plain.size) != 0) return oom(error);
    m->dictionary_page_offset = 0;
    SL_RETURN_NOT_OK(emit_page(&w, &h, 0, error));
    out->encodings[n_enc++] = PQ_ENC_PLAIN;
  }
  out->encodings[n_enc++] = PQ_ENC_RLE;
  out->encodings[n_enc++] = use_dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN;
  m->encodings = out->encodings;
  m->n_encodings = n_enc;
  m->data_page_offset = out->bytes.size;

  // Bits per value, to cut pages near opt->page_size before compression.
  int64_t fixed_cost = leaf->type == PQ_BOOLEAN ? 1 : plain_width(leaf) * 8;
  int64_t page_bits = opt->page_size * 8;
  const struct pqw_ba* ba = (const struct pqw_ba*)(const void*)d->vdata;
  const int16_t* def = (const int16_t*)(const void*)d->def.data;
  const int16_t* rep = (const int16_t*)(const void*)d->rep.data;
  const uint32_t* idx = (const uint32_t*)(const void*)s->indices.data;
  int has_levels = leaf->max_def > 0 || leaf->max_rep > 0;
  int all_defined = leaf->max_rep == 0 && d->null_count == 0;  // every level max_def
  int v2 = opt->data_page_version == 2;
  int64_t lv = 0, vv = 0;
  while (lv < d->n_levels) {
    int64_t l_end = lv, v_end = vv, bits = 0;
    int sized = 0;
    int dict_page = use_dict && lv < dict_levels;
    int64_t end = dict_page ? dict_levels : d->n_levels;  // of this page's encoding
    if (!dict_page && d->n_values == d->n_levels && leaf->max_rep == 0 &&
        leaf->type != PQ_BYTE_ARRAY) {
      // Every level is a value of fixed cost: the page's end is arithmetic.
      int64_t per = fixed_cost + 2;
      int64_t n_page = (page_bits + per - 1) / per;
      l_end = end - lv < n_page ? end : lv + n_page;
      v_end = l_end;
      sized = 1;
    }
    uint32_t page_max = 0;  // the page's largest index so far
    int page_width = 1;     // its bits (at least 1, as Arrow C++ writes them)
    int rescan = 0;         // page_max may be of an index left to the next page
    if (dict_page && d->n_values == d->n_levels && leaf->max_rep == 0) {
      // Every level is an index: the page ends where indices of its width
      // so far fill it, or before one that would widen too many.
      int64_t k = lv;
      for (;;) {
        int64_t per = page_width + 2, fill = (page_bits + per - 1) / per;
        int64_t stop = end - lv < fill ? end : lv + fill;
        while (stop - k >= 64) {  // blocks without a wider index, vectorised
          uint32_t most = 0;
          for (int j = 0; j < 64; ++j) most = idx[k + j] > most ? idx[k + j] : most;
          if (most > page_max) break;
          k += 64;
        }
        while (k < stop && idx[k] <= page_max) ++k;
        if (k >= stop) break;
        int wider = sl_pq_bit_width(idx[k]);
        if (wider > page_width && k > lv && (k - lv) * (wider - page_width) > PQW_WIDEN_CUT_BITS)
          break;
        page_max = idx[k++];
        if (wider > page_width) page_width = wider;
      }
      l_end = v_end = k;
      sized = 1;
    }
    int64_t row_l = lv, row_v = vv;        // where the last row begun starts
    while (!sized && l_end < end) {
      if (leaf->max_rep == 0 || rep[l_end] == 0) {
        row_l = l_end;
        row_v = v_end;
      }
      int present = !has_levels || leaf->max_def == 0 || def[l_end] == leaf->max_def;
      if (present) {
        if (dict_page) {
          uint32_t ix = idx[v_end];
          if (ix > page_max) {
            int wider = sl_pq_bit_width(ix);
            if (wider > page_width && row_l > lv &&
                (v_end - vv) * (wider - page_width) > PQW_WIDEN_CUT_BITS) {
              rescan = row_l < l_end;  // the next page begins with this row
              l_end = row_l;
              v_end = row_v;
              break;
            }
            page_max = ix;
            if (wider > page_width) page_width = wider;
          }
          bits = (v_end + 1 - vv) * page_width + 2 * (l_end - lv);
        } else if (leaf->type == PQ_BYTE_ARRAY) {
          bits += (4 + ba[v_end].len) * 8;
        } else {
          bits += fixed_cost;
        }
        v_end++;
      }
      bits += 2;  // levels, roughly
      l_end++;
      if (bits >= page_bits && (leaf->max_rep == 0 || l_end == end || rep[l_end] == 0))
        break;
    }
    int64_t n_lv = l_end - lv, n_v = v_end - vv;
    if (n_lv > INT32_MAX)
      return sl_error_set(error, EFBIG, "parquet writer: column '%s': too many values in a page",
                          leaf->name);
    struct pq_page_header h;
    sl_pq_page_header_init(&h);
    h.type = v2 ? PQ_PAGE_DATA_V2 : PQ_PAGE_DATA;
    h.num_values = (int32_t)n_lv;
    h.encoding = dict_page ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN;
    h.definition_level_encoding = PQ_ENC_RLE;
    h.repetition_level_encoding = PQ_ENC_RLE;
    s->page.size = 0;
    int32_t rep_len = 0, def_len = 0;
    if (leaf->max_rep > 0)
      SL_RETURN_NOT_OK(append_levels(&d->rep, lv, n_lv, leaf->max_rep, 0, !v2, &s->page, &rep_len, error));
    if (leaf->max_def > 0)
      SL_RETURN_NOT_OK(append_levels(&d->def, lv, n_lv, leaf->max_def, all_defined, !v2, &s->page,
                                     &def_len, error));
    int64_t levels_len = s->page.size;
    if (dict_page) {
      if (rescan) {
        page_max = 0;
        for (int64_t k = vv; k < v_end; ++k) page_max = idx[k] > page_max ? idx[k] : page_max;
        page_width = page_max > 1 ? sl_pq_bit_width(page_max) : 1;
      }
      uint8_t bw = (uint8_t)page_width;  // the byte before the indices
      if (sl_buffer_append(&s->page, &bw, 1) != 0) return oom(error);
      // (no indices at all in a chunk of nulls only: idx may be NULL)
      int rc = sl_pq_rle_encode_u32(n_v > 0 ? idx + vv : idx, n_v, page_width, &s->page);
      if (rc != 0) return rc == ENOMEM ? oom(error) : sl_error_set(error, rc, "parquet writer: "
                                                                     "index encoding failed");
    } else if (leaf->conv != PQW_CV_NULL) {
      SL_RETURN_NOT_OK(append_plain(leaf, d->vdata, vv, n_v, &s->page, error));
    }
    if (v2) {
      int64_t rows = n_lv;
      if (leaf->max_rep > 0) {
        rows = 0;
        for (int64_t k = lv; k < l_end; ++k) rows += rep[k] == 0;
      }
      h.num_nulls = (int32_t)(n_lv - n_v);
      h.num_rows = (int32_t)rows;
      h.definition_levels_byte_length = def_len;
      h.repetition_levels_byte_length = rep_len;
      h.is_compressed = opt->codec != PQ_CODEC_UNCOMPRESSED;
    }
    SL_RETURN_NOT_OK(emit_page(&w, &h, v2 ? levels_len : 0, error));
    m->n_data_pages++;
    m->n_dictionary_data_pages += dict_page;
    lv = l_end;
    vv = v_end;
  }
  m->data_pages_v2 = v2;
  m->total_uncompressed_size = w.uncompressed_total;
  m->total_compressed_size = out->bytes.size;
  if (leaf->bloom) SL_RETURN_NOT_OK(append_bloom(leaf, opt, s, all_dict, n_dict, out, error));
  return 0;
}
