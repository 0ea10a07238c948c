// Dictionary pruning. Most useful for pyarrow's files: strings are
// dictionary-encoded by default without a Bloom filter, and min/max rarely
// rule a value out of an unsorted column. Mapped sources (local files,
// memory) are judged while planning, like the Bloom filters: a dictionary
// page costs its decompression and no request, and the page headers are
// walked to see that every data page uses it. Remote ones as each split is
// about to be decoded, on the workers' threads, one request per dictionary
// page, believing encoding_stats (the pages are not fetched to be walked).
#include "pq_dict_prune.h"

#include <string.h>

#include "core/sl_alloc.h"
#include "pq_bloom.h"
#include "pq_column.h"

/// The largest dictionary page (uncompressed) looked into; writers cap
/// theirs at about 1 MiB by default.
#define DICT_MAX_BYTES ((int64_t)64 << 20)

int sl_pq_chunk_lists_dictionary(const struct pq_column_meta* m) {
  for (int64_t i = 0; i < m->n_encodings; ++i)
    if (m->encodings[i] == PQ_ENC_PLAIN_DICTIONARY || m->encodings[i] == PQ_ENC_RLE_DICTIONARY)
      return 1;
  return 0;
}

int sl_pq_chunk_may_be_dictionary_only(const struct pq_column_meta* m) {
  if (m->data_pages_dictionary >= 0) return m->data_pages_dictionary;
  return sl_pq_chunk_lists_dictionary(m);
}

/// Whether the pages after the dictionary page (chunk[pos, size)) are all
/// dictionary-encoded data pages (or pages that hold no values) and hold
/// the chunk's num_values: what the footer cannot always tell (polars and
/// format 2 writers without encoding_stats list PLAIN for the dictionary
/// page itself), and need not be believed where it does.
static int data_pages_dictionary(const struct pq_column_meta* m, const uint8_t* chunk,
                                 int64_t size, int64_t pos) {
  struct sluice_error ignored = {0, {0}};
  int64_t values = 0;
  while (values < m->num_values && pos < size) {
    struct pq_page_header h;
    int64_t header = 0;
    if (sl_pq_page_header_parse(chunk + pos, size - pos, &h, &header, &ignored) != 0 ||
        h.compressed_page_size > size - pos - header)
      return 0;
    pos += header + h.compressed_page_size;
    if (h.type == PQ_PAGE_DICTIONARY) return 0;
    if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2) continue;
    if ((h.encoding != PQ_ENC_PLAIN_DICTIONARY && h.encoding != PQ_ENC_RLE_DICTIONARY) ||
        h.num_values < 0)
      return 0;
    values += h.num_values;
  }
  return values == m->num_values;
}

/// What a dictionary is searched for: the condition's values as PLAIN
/// physical values, or (narrow) the condition itself, compared with each
/// INT32 entry as the decoder turns it into an int8/16 or uint8/16 (its low
/// bits), so that an entry past the narrow type matches as what it reads as.
struct dict_lookup {
  const struct pq_plain_values* values;
  const struct sl_filter_condition* narrow;
};

/// Whether the n PLAIN values of a dictionary page (data[0..size)) may
/// include one of the looked-up values; 1 also when the page is shorter
/// than n values say (a damaged page is the decoder's to report).
static int dictionary_holds(const struct pq_field* f, const uint8_t* data, int64_t size,
                            int64_t n, const struct dict_lookup* lookup) {
  const struct pq_plain_values* values = lookup->values;
  if (lookup->narrow != NULL) {
    const struct sl_filter_condition* c = lookup->narrow;
    if (n > size / 4) return 1;
    int bits = f->conv == PQ_CONV_I32_TO_I8 ? 8 : 16;
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p = data + 4 * i;
      uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24;
      uint64_t low = u & ((1u << bits) - 1);
      // The value as the column's own type reads it (a dataset that joins
      // uint8 and int8 as int16 asks a uint8 column with a signed value).
      int64_t value = f->format[0] == 'C' || f->format[0] == 'S'
                          ? (int64_t)low
                          : (int64_t)low - ((low >> (bits - 1)) ? ((int64_t)1 << bits) : 0);
      // The condition's values are sorted (sl_row_filter_parse): bisect.
      union sl_filter_value v = {.i = value};
      if (c->kind == SL_FILTER_UINT && value < 0) continue;
      for (int lo = 0, hi = c->n_values; lo < hi;) {
        int mid = lo + (hi - lo) / 2;
        int s = c->kind == SL_FILTER_INT ? (c->values[mid].i > v.i) - (c->values[mid].i < v.i)
                                         : (c->values[mid].u > v.u) - (c->values[mid].u < v.u);
        if (s == 0) return 1;
        if (s < 0) lo = mid + 1;
        else hi = mid;
      }
    }
    return 0;
  }
  if (f->element->type == PQ_BYTE_ARRAY) {
    int64_t pos = 0;
    for (int64_t i = 0; i < n; ++i) {
      if (size - pos < 4) return 1;
      uint32_t len = (uint32_t)data[pos] | (uint32_t)data[pos + 1] << 8 |
                     (uint32_t)data[pos + 2] << 16 | (uint32_t)data[pos + 3] << 24;
      pos += 4;
      if (len > (uint64_t)(size - pos)) return 1;
      for (int k = 0; k < values->n; ++k)
        if (values->lengths[k] == len && memcmp(values->bytes[k], data + pos, len) == 0) return 1;
      pos += len;
    }
    return 0;
  }
  int64_t width = f->phys_width;
  if ((width != 4 && width != 8) || n > size / width) return 1;
  for (int k = 0; k < values->n; ++k) {
    if ((int64_t)values->lengths[k] != width) return 1;
    for (int64_t i = 0; i < n; ++i)
      if (memcmp(data + i * width, values->bytes[k], (size_t)width) == 0) return 1;
  }
  return 0;
}

/// Whether the dictionary page (PLAIN values; data[0..size) from its
/// header on) may hold one of `values`: 1 whenever it cannot be parsed and
/// decoded. *end = where the page ends in data.
static int page_may_hold(const struct pq_column_meta* m, const struct pq_field* f,
                         const struct dict_lookup* values, const uint8_t* data, int64_t size,
                         const struct sluice_allocator* alloc, struct pq_codec_ctx** codec,
                         int verify_checksums, int64_t* end) {
  struct sluice_error ignored = {0, {0}};
  struct pq_page_header h;
  int64_t header = 0;
  if (sl_pq_page_header_parse(data, size, &h, &header, &ignored) != 0 ||
      h.type != PQ_PAGE_DICTIONARY || h.num_values < 0 ||
      (h.encoding != PQ_ENC_PLAIN && h.encoding != PQ_ENC_PLAIN_DICTIONARY) ||
      h.compressed_page_size > size - header || h.uncompressed_page_size > DICT_MAX_BYTES)
    return 1;
  const uint8_t* body = data + header;
  int64_t body_size = h.compressed_page_size;
  // A corrupt page is the decoder's to report (as it does when the row
  // group is read), not a reason to skip the row group.
  if (h.has_crc && verify_checksums && sl_pq_page_crc(body, body_size) != h.crc) return 1;
  *end = header + body_size;
  if (m->codec == PQ_CODEC_UNCOMPRESSED) return dictionary_holds(f, body, body_size, h.num_values, values);
  int may = 1;
  int64_t usize = h.uncompressed_page_size;
  uint8_t* plain = sl_alloc(alloc, usize > 0 ? (size_t)usize : 1);
  if (plain != NULL && (*codec != NULL || sl_pq_codec_ctx_new(alloc, codec, &ignored) == 0) &&
      sl_pq_decompress(*codec, m->codec, body, body_size, plain, usize, &ignored) == 0)
    may = dictionary_holds(f, plain, usize, h.num_values, values);
  if (plain != NULL) sl_free(alloc, plain, usize > 0 ? (size_t)usize : 1);
  return may;
}

/// Whether chunk `m` of a mapped source may hold one of `values`: 1 unless
/// it starts with a dictionary page, every data page after it is
/// dictionary-encoded (by their headers), and the dictionary holds none.
static int mapped_chunk_may_hold(const struct pq_row_group_judge* j,
                                 const struct pq_column_meta* m, const struct pq_field* f,
                                 const struct dict_lookup* values) {
  struct sl_source* source = j->source;
  int64_t start, len;
  if (sl_pq_chunk_range(m, source->size, &start, &len) != 0) return 1;
  struct sluice_error ignored = {0, {0}};
  struct sl_view view = {0};
  if (sl_source_read_at(source, start, len, &view, &ignored) != 0) return 1;
  int64_t end = 0;
  int may = page_may_hold(m, f, values, view.data, view.size, j->alloc, j->codec,
                          j->verify_checksums, &end);
  if (!may && !data_pages_dictionary(m, view.data, view.size, end)) may = 1;
  sl_view_release(&view);
  return may;
}

/// Whether chunk `m` of a remote source may hold one of `values`, reading
/// its dictionary page alone (dictionary_page_offset up to
/// data_page_offset): only where encoding_stats say every data page is
/// dictionary-encoded, since the pages cannot be walked without fetching
/// the chunk. A read that fails sets j->failed.
static int remote_chunk_may_hold(struct pq_row_group_judge* j, const struct pq_column_meta* m,
                                 const struct pq_field* f, const struct dict_lookup* values) {
  int64_t at = m->dictionary_page_offset, end = m->data_page_offset;
  if (m->data_pages_dictionary != 1 || at <= 0 || end <= at || end > j->source->size ||
      end - at > DICT_MAX_BYTES + 4096 || end - at > j->remote_max_bytes)
    return 1;
  struct sl_view view = {0};
  int rc = sl_source_read_at(j->source, at, end - at, &view, j->error);
  if (rc != 0) {
    j->failed = rc;
    return 1;
  }
  int64_t page_end = 0;
  int may = page_may_hold(m, f, values, view.data, view.size, j->alloc, j->codec,
                          j->verify_checksums, &page_end);
  sl_view_release(&view);
  return may;
}

int sl_pq_condition_dictionary_may_match(struct pq_row_group_judge* j,
                                      const struct sl_filter_condition* c) {
  if (j->source == NULL || (!j->source->mapped && !j->remote_dictionaries) || j->failed ||
      j->rg < 0 || j->rg >= j->meta->n_row_groups)
    return 1;
  const struct pq_row_group* g = &j->meta->row_groups[j->rg];
  if (c->op != SL_FILTER_EQ || c->column < 0 || c->column >= j->schema->root.n_children) return 1;
  const struct pq_field* f = &j->schema->root.children[c->column];
  // As for statistics: a column of its own, not a leaf of a struct or list.
  if (f->kind != PQ_FIELD_LEAF || f->rep != 0 || f->leaf < 0 || f->leaf >= g->n_columns) return 1;
  const struct pq_column_chunk* cc = &g->columns[f->leaf];
  // (Chunks the reader refuses, in another file or encrypted, are not read.)
  if (!cc->has_meta_data || cc->meta_data.type != f->element->type || cc->encrypted ||
      (cc->file_path.present && cc->file_path.size > 0) ||
      !sl_pq_chunk_may_be_dictionary_only(&cc->meta_data))
    return 1;
  struct pq_plain_values values;
  struct dict_lookup lookup = {&values, NULL};
  if ((f->conv == PQ_CONV_I32_TO_I8 || f->conv == PQ_CONV_I32_TO_I16) &&
      f->element->type == PQ_INT32 && (c->kind == SL_FILTER_INT || c->kind == SL_FILTER_UINT))
    lookup.narrow = c;
  else if (!sl_pq_condition_plain_values(f, c, &values))
    return 1;
  if (!j->source->mapped) return remote_chunk_may_hold(j, &cc->meta_data, f, &lookup);
  return mapped_chunk_may_hold(j, &cc->meta_data, f, &lookup);
}
