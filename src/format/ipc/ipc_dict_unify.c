// One dictionary per column across the batches of an IPC file. The file
// format cannot replace a dictionary, only extend it with deltas, yet a
// Parquet categorical column (one dictionary per row group) or any stream
// of separately encoded batches changes it. For top-level columns (or the
// values of top-level list columns) whose dictionary values are strings or
// binary (without nulls), the writer keeps
// one growing dictionary per column, its values in first-seen order, and
// maps each batch's indices into it: every dictionary it writes extends the
// last, so it goes out as a delta. A batch whose dictionary already is a
// prefix of the grown one keeps its index buffer (no copy).
#include "format/ipc/ipc_dict_unify.h"

#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_hash.h"
#include "core/sl_value_text.h"

struct ipc_unify_column {
  int64_t column;       ///< index among the batch's children
  int in_list;          ///< the dictionary is the values of that (list) column
  const char* name;     ///< its name (the writer's schema holds it)
  int large_values;     ///< 'U' / 'Z': int64 offsets
  int index_width;      ///< bytes per index
  int index_signed;
  struct sl_buffer offsets;  ///< n + 1 offsets, in the values' width
  struct sl_buffer data;
  int64_t n;
  int64_t* table;       ///< open addressing: value index + 1, 0 = empty
  int64_t table_cap;    ///< a power of two, > 2n
};

static void noop_release(struct ArrowArray* array) { array->release = NULL; }

static int64_t value_end(const struct ipc_unify_column* c, int64_t k) {
  if (c->large_values) {
    int64_t v;
    memcpy(&v, c->offsets.data + 8 * k, 8);
    return v;
  }
  int32_t v;
  memcpy(&v, c->offsets.data + 4 * k, 4);
  return v;
}

static int oom(struct sluice_error* error) {
  return sl_error_set(error, ENOMEM, "arrow ipc writer: out of memory unifying dictionaries");
}

static int grow_table(struct ipc_unify_column* c, const struct sluice_allocator* alloc,
                      struct sluice_error* error) {
  int64_t cap = c->table_cap == 0 ? 64 : c->table_cap * 2;
  int64_t* table = sl_calloc(alloc, (size_t)cap, sizeof *table);
  if (table == NULL) return oom(error);
  for (int64_t k = 0; k < c->n; ++k) {
    int64_t start = value_end(c, k), end = value_end(c, k + 1);
    uint64_t h = sl_hash_bytes(c->data.data + start, (size_t)(end - start)) & (uint64_t)(cap - 1);
    while (table[h] != 0) h = (h + 1) & (uint64_t)(cap - 1);
    table[h] = k + 1;
  }
  sl_free(alloc, c->table, (size_t)c->table_cap * sizeof *c->table);
  c->table = table;
  c->table_cap = cap;
  return 0;
}

/// The unified index of value p[0, n), added when new.
static int intern(struct ipc_unify_column* c, const struct sluice_allocator* alloc,
                  const uint8_t* p, int64_t n, int64_t* index, struct sluice_error* error) {
  if (2 * (c->n + 1) >= c->table_cap) SL_RETURN_NOT_OK(grow_table(c, alloc, error));
  uint64_t h = sl_hash_bytes(p, (size_t)n) & (uint64_t)(c->table_cap - 1);
  for (;; h = (h + 1) & (uint64_t)(c->table_cap - 1)) {
    int64_t e = c->table[h];
    if (e == 0) break;
    int64_t start = value_end(c, e - 1), end = value_end(c, e);
    if (end - start == n && (n == 0 || memcmp(c->data.data + start, p, (size_t)n) == 0)) {
      *index = e - 1;
      return 0;
    }
  }
  int64_t end = c->data.size + n;
  int w = c->large_values ? 8 : 4;
  if ((!c->large_values && end > INT32_MAX) || sl_buffer_reserve(&c->data, end) != 0 ||
      sl_buffer_reserve(&c->offsets, (c->n + 2) * w) != 0) {
    return end > INT32_MAX ? sl_error_set(error, EOVERFLOW, "arrow ipc writer: a unified "
                                          "dictionary passes 2 GiB of values")
                           : oom(error);
  }
  if (n > 0) memcpy(c->data.data + c->data.size, p, (size_t)n);
  c->data.size = end;
  if (c->large_values) {
    memcpy(c->offsets.data + 8 * (c->n + 1), &end, 8);
  } else {
    int32_t e32 = (int32_t)end;
    memcpy(c->offsets.data + 4 * (c->n + 1), &e32, 4);
  }
  c->offsets.size = (c->n + 2) * w;
  c->table[h] = ++c->n;
  *index = c->n - 1;
  return 0;
}

int sl_ipc_unify_init(struct ipc_unify* u, const struct ArrowSchema* schema,
                   const struct sluice_allocator* alloc, struct sluice_error* error) {
  memset(u, 0, sizeof *u);
  u->alloc = alloc;
  for (int64_t c = 0; c < schema->n_children; ++c) {
    const struct ArrowSchema* f = schema->children[c];
    // A list's values: a Parquet list<string> read with dictionary=true
    // brings a dictionary per row group, like a categorical column.
    const char* lf = f->format;
    int in_list = (strcmp(lf, "+l") == 0 || strcmp(lf, "+L") == 0 ||
                   strncmp(lf, "+w:", 3) == 0) && f->n_children == 1;
    if (in_list) f = f->children[0];
    const struct ArrowSchema* d = f->dictionary;
    if (d == NULL || d->dictionary != NULL || strlen(d->format) != 1 ||
        strchr("uUzZ", d->format[0]) == NULL || strlen(f->format) != 1) {
      continue;
    }
    const char* at = strchr("cCsSiIlL", f->format[0]);
    if (at == NULL) continue;
    if (sl_grow_array(alloc, (void**)&u->cols, &u->cap, u->n + 1, sizeof *u->cols) != 0) {
      sl_ipc_unify_free(u);
      return oom(error);
    }
    struct ipc_unify_column* col = &u->cols[u->n++];
    memset(col, 0, sizeof *col);
    col->column = c;
    col->in_list = in_list;
    f = schema->children[c];
    col->name = f->name != NULL ? f->name : "";
    col->large_values = d->format[0] == 'U' || d->format[0] == 'Z';
    int64_t k = at - "cCsSiIlL";
    col->index_width = 1 << (k / 2);
    col->index_signed = k % 2 == 0;
    sl_buffer_init(&col->offsets, alloc);
    sl_buffer_init(&col->data, alloc);
    if (sl_buffer_reserve(&col->offsets, 8) != 0) {
      sl_ipc_unify_free(u);
      return oom(error);
    }
    memset(col->offsets.data, 0, 8);
    col->offsets.size = col->large_values ? 8 : 4;
  }
  return 0;
}

void sl_ipc_unify_free(struct ipc_unify* u) {
  for (int64_t i = 0; i < u->n; ++i) {
    sl_buffer_reset(&u->cols[i].offsets);
    sl_buffer_reset(&u->cols[i].data);
    sl_free(u->alloc, u->cols[i].table, (size_t)u->cols[i].table_cap * sizeof(int64_t));
  }
  sl_free(u->alloc, u->cols, (size_t)u->cap * sizeof *u->cols);
  memset(u, 0, sizeof *u);
}

static int64_t read_index(const uint8_t* p, int width, int is_signed) {
  switch (width) {
    case 1: return is_signed ? (int64_t)(int8_t)p[0] : (int64_t)p[0];
    case 2: { int16_t s; uint16_t v; memcpy(&v, p, 2); memcpy(&s, p, 2); return is_signed ? s : v; }
    case 4: { int32_t s; uint32_t v; memcpy(&v, p, 4); memcpy(&s, p, 4); return is_signed ? s : (int64_t)v; }
    default: { int64_t v; memcpy(&v, p, 8); return v; }
  }
}

/// The first byte at which a[0, n) and b[0, n) differ, or n.
static int64_t first_difference(const uint8_t* a, const uint8_t* b, int64_t n) {
  int64_t at = 0;
  for (const int64_t step = 4096; n - at > step && memcmp(a + at, b + at, step) == 0; at += step) {}
  while (at < n && a[at] == b[at]) at++;
  return at;
}

/// How many of the first values of `dict` (m values) are the grown
/// dictionary's first values, in its order: a dictionary that grew by
/// appending (a stream of deltas, or one fallen back to plain pages) is
/// compared, not hashed value by value, as the unified one holds it as the
/// last batch left it. Those values map to themselves.
static int64_t common_prefix(const struct ipc_unify_column* c, const struct ArrowArray* dict,
                             int64_t m) {
  const uint8_t* offs = dict->buffers[1];
  const uint8_t* data = dict->buffers[2];
  int64_t n = m < c->n ? m : c->n;
  if (n == 0) return 0;
  int64_t base = sl_offset_at(offs, dict->offset, c->large_values);
  if (base < 0) return 0;  // bad offsets: interning reports them
  int64_t j = 0;
  while (j < n && sl_offset_at(offs, dict->offset + j + 1, c->large_values) - base ==
                      value_end(c, j + 1))
    j++;
  int64_t bytes = value_end(c, j);
  if (bytes == 0) return j;
  if (data == NULL) return 0;
  int64_t same = first_difference(data + base, c->data.data, bytes);
  if (same == bytes) return j;
  int64_t lo = 0, hi = j;  // the most values that end by `same`
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (value_end(c, mid) <= same) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/// Bytes of a map over a dictionary of m values (at least one entry).
static size_t map_size(int64_t m) { return (size_t)(m > 0 ? m : 1) * sizeof(int64_t); }

/// Column `c` of this batch against the grown dictionary: `*map` (one entry
/// per value of the batch's dictionary, allocated here) and whether it is
/// the identity. 0 with *map NULL when the dictionary cannot be unified
/// (null values): the column is then written as it is.
static int map_dictionary(struct ipc_unify* u, struct ipc_unify_column* c,
                          const struct ArrowArray* dict, int64_t** map, int* identity,
                          struct sluice_error* error) {
  *map = NULL;
  *identity = 1;
  if (dict->null_count != 0 || dict->n_buffers < 3 || (dict->length > 0 && dict->buffers[1] == NULL))
    return 0;
  int64_t m = dict->length;
  int64_t* out = sl_alloc(u->alloc, map_size(m));
  if (out == NULL) return oom(error);
  const uint8_t* offs = dict->buffers[1];
  const uint8_t* data = dict->buffers[2];
  int64_t same = m > 0 ? common_prefix(c, dict, m) : 0;
  for (int64_t k = 0; k < same; ++k) out[k] = k;
  for (int64_t k = same; k < m; ++k) {
    int64_t at = dict->offset + k;
    int64_t start = sl_offset_at(offs, at, c->large_values);
    int64_t end = sl_offset_at(offs, at + 1, c->large_values);
    if (start < 0 || end < start || (end > start && data == NULL)) {
      sl_free(u->alloc, out, map_size(m));
      return sl_error_set(error, EINVAL, "arrow ipc writer: a dictionary of column %lld has "
                          "bad offsets", (long long)c->column);
    }
    int rc = intern(c, u->alloc, data + start, end - start, &out[k], error);
    if (rc != 0) {
      sl_free(u->alloc, out, map_size(m));
      return rc;
    }
    *identity &= out[k] == k;
  }
  *map = out;
  return 0;
}

/// The batch's indices through `map` into a new buffer (same offset).
static int remap_indices(struct ipc_unify* u, const struct ipc_unify_column* c,
                         const struct ArrowArray* col, const int64_t* map, int64_t m,
                         uint8_t** out, int64_t* out_size, struct sluice_error* error) {
  const int w = c->index_width;
  int64_t slots = col->offset + col->length;
  const uint8_t* valid = col->null_count != 0 ? col->buffers[0] : NULL;
  const uint8_t* in = col->buffers[1];
  int64_t max = w == 8 ? INT64_MAX  // (a shift by 63 or 64 is undefined)
                       : c->index_signed ? (INT64_C(1) << (8 * w - 1)) - 1
                                         : (INT64_C(1) << (8 * w)) - 1;
  if (c->n - 1 > max) {
    char shown[160];
    return sl_error_set(error, EOVERFLOW, "arrow ipc writer: column '%s': the unified dictionary "
                        "has %lld values, more than its %d-byte indices hold (an IPC file holds "
                        "one dictionary per column; write a stream, .arrows, or cast the "
                        "indices wider)", sl_escaped(c->name, strlen(c->name), '\'', shown,
                        sizeof shown), (long long)c->n, w);
  }
  size_t size = (size_t)(slots > 0 ? slots * w : 1);
  uint8_t* buf = sl_alloc_buffer(u->alloc, size);
  if (buf == NULL) return oom(error);
  memset(buf, 0, size);
  for (int64_t i = col->offset; i < slots; ++i) {
    if (valid != NULL && !((valid[i >> 3] >> (i & 7)) & 1)) continue;
    int64_t k = read_index(in + i * w, w, c->index_signed);
    if (k < 0 || k >= m) {
      sl_free_buffer(u->alloc, buf, size);
      return sl_error_set(error, EINVAL, "arrow ipc writer: column %lld, %s %lld: dictionary "
                          "index %lld out of range (%lld values)", (long long)c->column,
                          c->in_list ? "list value" : "row", (long long)(i - col->offset),
                          (long long)k, (long long)m);
    }
    int64_t v = map[k];
    uint8_t le[8];
    for (int b = 0; b < 8; ++b) le[b] = (uint8_t)((uint64_t)v >> (8 * b));
    memcpy(buf + i * w, le, (size_t)w);
  }
  *out = buf;
  *out_size = (int64_t)size;
  return 0;
}

int sl_ipc_unify_batch(struct ipc_unify* u, const struct ArrowArray* batch,
                    struct ipc_unified_batch* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  out->alloc = u->alloc;
  out->root = *batch;
  out->root.release = noop_release;
  if (u->n == 0) return 0;
  int64_t nc = batch->n_children;
  out->children = sl_calloc(u->alloc, (size_t)(nc > 0 ? nc : 1), sizeof *out->children);
  out->columns = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->columns);
  out->dicts = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->dicts);
  out->index_bufs = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->index_bufs);
  out->index_sizes = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->index_sizes);
  out->buffer_lists = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->buffer_lists);
  out->dict_buffers = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->dict_buffers);
  out->lists = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->lists);
  out->list_children = sl_calloc(u->alloc, (size_t)u->n, sizeof *out->list_children);
  out->n = u->n;
  if (out->children == NULL || out->columns == NULL || out->dicts == NULL ||
      out->index_bufs == NULL || out->index_sizes == NULL || out->buffer_lists == NULL ||
      out->dict_buffers == NULL || out->lists == NULL || out->list_children == NULL) {
    sl_ipc_unified_batch_free(out);
    return oom(error);
  }
  for (int64_t c = 0; c < nc; ++c) out->children[c] = batch->children[c];
  out->root.children = out->children;
  for (int64_t i = 0; i < u->n; ++i) {
    struct ipc_unify_column* c = &u->cols[i];
    if (c->column >= nc) continue;
    const struct ArrowArray* list = batch->children[c->column];
    const struct ArrowArray* col = list;
    if (c->in_list)
      col = list != NULL && list->n_children == 1 ? list->children[0] : NULL;
    if (col == NULL || col->dictionary == NULL || col->n_buffers != 2) continue;
    int64_t* map = NULL;
    int identity = 1;
    int rc = map_dictionary(u, c, col->dictionary, &map, &identity, error);
    if (rc == 0 && map != NULL && !identity) {
      rc = remap_indices(u, c, col, map, col->dictionary->length, &out->index_bufs[i],
                         &out->index_sizes[i], error);
    }
    int64_t m = col->dictionary->length;
    if (map != NULL) sl_free(u->alloc, map, map_size(m));
    if (rc != 0) {
      sl_ipc_unified_batch_free(out);
      return rc;
    }
    if (map == NULL) continue;  // not unifiable: written as it is
    // The grown dictionary as it stands: views of the column's buffers.
    struct ArrowArray* d = &out->dicts[i];
    memset(d, 0, sizeof *d);
    d->length = c->n;
    d->n_buffers = 3;
    out->dict_buffers[i][0] = NULL;
    out->dict_buffers[i][1] = c->offsets.data;
    out->dict_buffers[i][2] = c->data.data;
    d->buffers = out->dict_buffers[i];
    d->release = noop_release;
    struct ArrowArray* v = &out->columns[i];
    *v = *col;
    v->dictionary = d;
    v->release = noop_release;
    if (out->index_bufs[i] != NULL) {
      out->buffer_lists[i][0] = col->buffers[0];
      out->buffer_lists[i][1] = out->index_bufs[i];
      v->buffers = out->buffer_lists[i];
    }
    out->children[c->column] = v;
    if (c->in_list) {  // the list node again, its values the column above
      out->lists[i] = *list;
      out->lists[i].release = noop_release;
      out->list_children[i] = v;
      out->lists[i].children = &out->list_children[i];
      out->children[c->column] = &out->lists[i];
    }
  }
  return 0;
}

void sl_ipc_unified_batch_free(struct ipc_unified_batch* b) {
  for (int64_t i = 0; b->index_bufs != NULL && i < b->n; ++i) {
    if (b->index_bufs[i] != NULL)
      sl_free_buffer(b->alloc, b->index_bufs[i], (size_t)b->index_sizes[i]);
  }
  int64_t nc = b->root.n_children > 0 ? b->root.n_children : 1;
  sl_free(b->alloc, b->children, (size_t)nc * sizeof *b->children);
  sl_free(b->alloc, b->columns, (size_t)b->n * sizeof *b->columns);
  sl_free(b->alloc, b->dicts, (size_t)b->n * sizeof *b->dicts);
  sl_free(b->alloc, b->index_bufs, (size_t)b->n * sizeof *b->index_bufs);
  sl_free(b->alloc, b->index_sizes, (size_t)b->n * sizeof *b->index_sizes);
  sl_free(b->alloc, b->buffer_lists, (size_t)b->n * sizeof *b->buffer_lists);
  sl_free(b->alloc, b->dict_buffers, (size_t)b->n * sizeof *b->dict_buffers);
  sl_free(b->alloc, b->lists, (size_t)b->n * sizeof *b->lists);
  sl_free(b->alloc, b->list_children, (size_t)b->n * sizeof *b->list_children);
  memset(b, 0, sizeof *b);
}
