// Split block Bloom filters: membership checks for row-group pruning.
// xxHash is Debian's libxxhash, compiled in from its header (XXH_INLINE_ALL),
// so there is no library to link.
#include "pq_bloom.h"

#include <math.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>


uint64_t sl_pq_bloom_hash(const void* data, size_t size) { return XXH64(data, size, 0); }

static const uint32_t k_salt[8] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                   0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};

/// The 32-byte block of `hash` (blocks <= 2^22, so the product fits).
static uint8_t* block_of(const uint8_t* bitset, int64_t num_bytes, uint64_t hash) {
  uint64_t blocks = (uint64_t)num_bytes / 32;
  return (uint8_t*)(uintptr_t)(bitset + (((hash >> 32) * blocks) >> 32) * 32);
}

int sl_pq_bloom_may_contain(const uint8_t* bitset, int64_t num_bytes, uint64_t hash) {
  const uint8_t* block = block_of(bitset, num_bytes, hash);
  uint32_t key = (uint32_t)hash;
  for (int i = 0; i < 8; ++i) {
    const uint8_t* w = block + 4 * i;
    uint32_t word = (uint32_t)w[0] | (uint32_t)w[1] << 8 | (uint32_t)w[2] << 16 |
                    (uint32_t)w[3] << 24;
    if (!((word >> ((key * k_salt[i]) >> 27)) & 1)) return 0;
  }
  return 1;
}

void sl_pq_bloom_insert(uint8_t* bitset, int64_t num_bytes, uint64_t hash) {
  uint8_t* block = block_of(bitset, num_bytes, hash);
  uint32_t key = (uint32_t)hash;
  for (int i = 0; i < 8; ++i) {
    uint32_t bit = (key * k_salt[i]) >> 27;  // bit 0..31 of little-endian word i
    block[4 * i + bit / 8] |= (uint8_t)(1u << (bit % 8));
  }
}

int64_t sl_pq_bloom_size(int64_t ndv, double fpp) {
  const int64_t min_bytes = 32, max_bytes = (int64_t)128 << 20;
  if (ndv < 1) ndv = 1;
  double bits = -8.0 * (double)ndv / log1p(-pow(fpp, 1.0 / 8.0));
  int64_t size = min_bytes;
  while (size < max_bytes && (double)size * 8.0 < bits) size *= 2;
  return size;
}

/// The PLAIN bytes of value `v` (of kind `kind`) as a physical value of leaf
/// `f`, into buf or pointing at v's bytes: 1 with *p, *n; 0 when the value
/// cannot be put so (a conversion between the physical and Arrow values, a
/// value out of the physical type's range, NaN, bool). *other_zero is set
/// for a zero, whose twin of the other sign must be looked up too (the
/// filter takes -0.0 and 0.0 as equal).
static int plain_bytes(const struct pq_field* f, enum sl_filter_kind kind,
                       const union sl_filter_value* v, uint8_t buf[8], const uint8_t** p,
                       size_t* n, int* other_zero) {
  const struct pq_schema_element* e = f->element;
  *other_zero = 0;
  if (e == NULL) return 0;
  uint64_t bits = 0;
  switch (kind) {
    case SL_FILTER_BYTES:
      if (f->conv != PQ_CONV_BINARY || e->type != PQ_BYTE_ARRAY) return 0;
      *p = v->bytes.s;
      *n = v->bytes.len;
      return 1;
    case SL_FILTER_INT:
      if (f->conv != PQ_CONV_COPY) return 0;
      if (e->type == PQ_INT32 && v->i >= INT32_MIN && v->i <= INT32_MAX) {
        bits = (uint32_t)(int32_t)v->i;
        *n = 4;
      } else if (e->type == PQ_INT64) {
        bits = (uint64_t)v->i;
        *n = 8;
      } else {
        return 0;
      }
      break;
    case SL_FILTER_UINT:
      if (f->conv != PQ_CONV_COPY) return 0;
      if (e->type == PQ_INT32 && v->u <= UINT32_MAX) {
        bits = v->u;
        *n = 4;
      } else if (e->type == PQ_INT64) {
        bits = v->u;
        *n = 8;
      } else {
        return 0;
      }
      break;
    case SL_FILTER_FLOAT:
      if (f->conv != PQ_CONV_COPY || isnan(v->f)) return 0;
      if (e->type == PQ_DOUBLE) {
        memcpy(&bits, &v->f, 8);
        *n = 8;
      } else if (e->type == PQ_FLOAT && (double)(float)v->f == v->f) {
        float x = (float)v->f;
        uint32_t b32;
        memcpy(&b32, &x, 4);
        bits = b32;
        *n = 4;
      } else {
        return 0;
      }
      *other_zero = v->f == 0.0;
      break;
    case SL_FILTER_BOOL:
    case SL_FILTER_DECIMAL:
    case SL_FILTER_NULL:
      return 0;
  }
  for (size_t i = 0; i < *n; ++i) buf[i] = (uint8_t)(bits >> (8 * i));
  *p = buf;
  return 1;
}

int sl_pq_condition_plain_values(const struct pq_field* f, const struct sl_filter_condition* c,
                              struct pq_plain_values* out) {
  out->n = 0;
  if (c->n_values < 1 || c->n_values > PQ_PLAIN_LOOKUPS / 2) return 0;
  for (int i = 0; i < c->n_values; ++i) {
    int other_zero = 0, k = out->n;
    if (!plain_bytes(f, c->kind, &c->values[i], out->bufs[k], &out->bytes[k], &out->lengths[k],
                     &other_zero))
      return 0;
    ++out->n;
    if (other_zero) {
      // The same bytes with the sign bit (last byte, little-endian) flipped.
      memcpy(out->bufs[k + 1], out->bytes[k], out->lengths[k]);
      out->bufs[k + 1][out->lengths[k] - 1] ^= 0x80;
      out->bytes[k + 1] = out->bufs[k + 1];
      out->lengths[k + 1] = out->lengths[k];
      ++out->n;
    }
  }
  return 1;
}

// A filter's header is a few bytes; a larger one is not a filter we know.
#define FILTER_MAX_HEADER 256

// The most bytes read at once for one column's filters.
#define FILTER_SPAN_MAX ((int64_t)16 << 20)

void sl_pq_bloom_cache_release(struct pq_bloom_cache* cache) {
  for (int i = 0; i < cache->n; ++i) sl_view_release(&cache->spans[i].view);
  cache->n = 0;
}

/// The cached range of leaf `leaf`'s filters, read on first use when every
/// row group's filter has a length and together they fill most of a range
/// of at most FILTER_SPAN_MAX; NULL when there is none (then each filter is
/// read on its own).
static const struct pq_bloom_span* span_of(const struct pq_file_meta* meta, int64_t leaf,
                                           struct sl_source* source,
                                           struct pq_bloom_cache* cache) {
  if (cache == NULL) return NULL;
  for (int i = 0; i < cache->n; ++i)
    if (cache->spans[i].leaf == leaf) return cache->spans[i].view.data ? &cache->spans[i] : NULL;
  if (cache->n == PQ_BLOOM_CACHE_COLUMNS) return NULL;
  struct pq_bloom_span* span = &cache->spans[cache->n++];
  memset(span, 0, sizeof *span);
  span->leaf = leaf;
  int64_t lo = INT64_MAX, hi = 0, total = 0;
  for (int64_t g = 0; g < meta->n_row_groups; ++g) {
    const struct pq_row_group* rg = &meta->row_groups[g];
    if (leaf >= rg->n_columns || !rg->columns[leaf].has_meta_data) return NULL;
    const struct pq_column_meta* m = &rg->columns[leaf].meta_data;
    if (m->bloom_filter_offset < 0) continue;
    int64_t at = m->bloom_filter_offset, n = m->bloom_filter_length;
    if (n <= 0 || n > FILTER_SPAN_MAX || at > source->size - n) return NULL;
    if (at < lo) lo = at;
    if (at + n > hi) hi = at + n;
    total += n;
  }
  if (total == 0 || hi - lo > FILTER_SPAN_MAX || hi - lo > 2 * total + ((int64_t)64 << 10))
    return NULL;
  struct sluice_error ignored = {0, {0}};
  if (sl_source_read_at(source, lo, hi - lo, &span->view, &ignored) != 0 ||
      span->view.size != hi - lo) {
    sl_view_release(&span->view);
    memset(&span->view, 0, sizeof span->view);
    return NULL;
  }
  span->start = lo;
  span->end = hi;
  return span;
}

/// The filter of a column chunk, header and bitset: 0 with *bitset and
/// *num_bytes, -1 when there is none that can be read and used. The bytes
/// are in the cache's span, or in *view (*owned = 1: the caller releases it).
static int read_filter(const struct pq_file_meta* meta, int64_t leaf,
                       const struct pq_column_meta* m, struct sl_source* source,
                       struct pq_bloom_cache* cache, struct sl_view* view, int* owned,
                       const uint8_t** bitset, int64_t* num_bytes) {
  int64_t at = m->bloom_filter_offset, size = source->size;
  *owned = 0;
  if (at < 0 || at >= size) return -1;
  struct sluice_error ignored = {0, {0}};
  int64_t header = 0;
  const struct pq_bloom_span* span = span_of(meta, leaf, source, cache);
  if (span != NULL && at >= span->start && at < span->end) {
    const uint8_t* p = span->view.data + (at - span->start);
    int64_t avail = span->end - at;
    if (sl_pq_bloom_header_parse(p, avail, &header, num_bytes, &ignored) != 0 ||
        *num_bytes > avail - header)
      return -1;
    *bitset = p + header;
    return 0;
  }
  // Without a length (older writers): the header first, then all of it. A
  // length past any filter's (a header and 128 MiB) is not believed.
  int64_t want = m->bloom_filter_length > 0 ? m->bloom_filter_length : 256;
  if (want > FILTER_MAX_HEADER + ((int64_t)128 << 20)) want = 256;
  if (want > size - at) want = size - at;
  if (sl_source_read_at(source, at, want, view, &ignored) != 0) return -1;
  if (sl_pq_bloom_header_parse(view->data, view->size, &header, num_bytes, &ignored) != 0 ||
      *num_bytes > size - at - header) {
    sl_view_release(view);
    return -1;
  }
  if (view->size < header + *num_bytes) {
    sl_view_release(view);
    if (sl_source_read_at(source, at, header + *num_bytes, view, &ignored) != 0) return -1;
    if (view->size < header + *num_bytes) {
      sl_view_release(view);
      return -1;
    }
  }
  *owned = 1;
  *bitset = view->data + header;
  return 0;
}

int sl_pq_condition_bloom_may_match(const struct pq_row_group_judge* j,
                                 const struct sl_filter_condition* c) {
  if (j->source == NULL || j->rg < 0 || j->rg >= j->meta->n_row_groups) return 1;
  const struct pq_row_group* g = &j->meta->row_groups[j->rg];
  if (c->op != SL_FILTER_EQ || c->column < 0 || c->column >= j->schema->root.n_children) return 1;
  const struct pq_field* f = &j->schema->root.children[c->column];
  // As for statistics: a column of its own, not a leaf of a struct or list.
  if (f->kind != PQ_FIELD_LEAF || f->rep != 0 || f->leaf < 0 || f->leaf >= g->n_columns) return 1;
  const struct pq_column_chunk* cc = &g->columns[f->leaf];
  if (!cc->has_meta_data || cc->meta_data.bloom_filter_offset < 0) return 1;
  // The values' bytes first: a column none of them can be put in as its
  // physical values (int8, a literal past INT32) needs no filter read.
  struct pq_plain_values values;
  if (!sl_pq_condition_plain_values(f, c, &values)) return 1;
  struct sl_view view = {0};
  const uint8_t* bitset = NULL;
  int64_t num_bytes = 0;
  int owned = 0;
  if (read_filter(j->meta, f->leaf, &cc->meta_data, j->source, j->bloom, &view, &owned, &bitset,
                  &num_bytes) != 0)
    return 1;
  int may = 0;
  for (int i = 0; i < values.n && !may; ++i)
    may = sl_pq_bloom_may_contain(bitset, num_bytes,
                               sl_pq_bloom_hash(values.bytes[i], values.lengths[i]));
  if (owned) sl_view_release(&view);
  return may;
}
