#include "sl_array.h"

#include <string.h>

#include "sl_alloc.h"
#include "sl_error.h"
#include "sl_read.h"
#include "sl_type.h"

// Everything a node owns hangs off one allocation: the header below followed by
// its per-buffer tables and child structs, so that building a node costs one
// allocation and the release path has a single shape for every type.
struct sl_array_private {
  const struct sluice_allocator* alloc;
  size_t block_size;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;      // array->buffers points here
  void** owned;              // non-NULL: freed with sl_free_buffer(capacity)
  int64_t* capacities;
  struct sl_ref** refs;      // views retain their owner here
  struct ArrowArray** child_ptrs;
  struct ArrowArray* children;
  struct ArrowArray* dictionary;  // separate allocation, NULL if none
  // A foreign (or our own) parent kept alive because this node points into its
  // buffers after sl_array_project moved its children out.
  struct ArrowArray held;
};

#define SL_ALIGN8(n) (((n) + 7u) & ~(size_t)7u)

static void array_release(struct ArrowArray* array) {
  if (array == NULL || array->release == NULL) return;
  struct sl_array_private* p = array->private_data;
  if (p != NULL) {
    for (int64_t i = 0; i < p->n_buffers; ++i) {
      if (p->owned[i] != NULL) sl_free_buffer(p->alloc, p->owned[i], (size_t)p->capacities[i]);
      sl_ref_release(p->refs[i]);
    }
    for (int64_t i = 0; i < p->n_children; ++i) {
      if (p->children[i].release != NULL) p->children[i].release(&p->children[i]);
    }
    if (p->dictionary != NULL) {
      if (p->dictionary->release != NULL) p->dictionary->release(p->dictionary);
      sl_free(p->alloc, p->dictionary, sizeof *p->dictionary);
    }
    if (p->held.release != NULL) p->held.release(&p->held);
    sl_free(p->alloc, p, p->block_size);
  }
  array->release = NULL;
  array->private_data = NULL;
}

int sl_array_init(struct ArrowArray* out, const struct sluice_allocator* alloc,
                  int64_t n_buffers, int64_t n_children, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (n_buffers < 0 || n_children < 0 || n_buffers > 16 || n_children > (INT64_C(1) << 24)) {
    return sl_error_set(error, EINVAL, "array node with %lld buffers and %lld children",
                        (long long)n_buffers, (long long)n_children);
  }
  size_t nb = (size_t)n_buffers, nc = (size_t)n_children;
  size_t off_buffers = SL_ALIGN8(sizeof(struct sl_array_private));
  size_t off_owned = off_buffers + nb * sizeof(void*);
  size_t off_caps = off_owned + nb * sizeof(void*);
  size_t off_refs = off_caps + nb * sizeof(int64_t);
  size_t off_child_ptrs = off_refs + nb * sizeof(struct sl_ref*);
  size_t off_children = SL_ALIGN8(off_child_ptrs + nc * sizeof(struct ArrowArray*));
  size_t total = off_children + nc * sizeof(struct ArrowArray);
  uint8_t* block = sl_alloc(alloc, total);
  if (block == NULL) {
    return sl_error_set(error, ENOMEM, "out of memory allocating an array node (%zu bytes)",
                        total);
  }
  memset(block, 0, total);
  struct sl_array_private* p = (struct sl_array_private*)block;
  p->alloc = alloc;
  p->block_size = total;
  p->n_buffers = n_buffers;
  p->n_children = n_children;
  p->buffers = (const void**)(block + off_buffers);
  p->owned = (void**)(block + off_owned);
  p->capacities = (int64_t*)(block + off_caps);
  p->refs = (struct sl_ref**)(block + off_refs);
  p->child_ptrs = (struct ArrowArray**)(block + off_child_ptrs);
  p->children = (struct ArrowArray*)(block + off_children);
  for (size_t i = 0; i < nc; ++i) p->child_ptrs[i] = &p->children[i];
  out->n_buffers = n_buffers;
  out->n_children = n_children;
  out->buffers = nb > 0 ? p->buffers : NULL;
  out->children = nc > 0 ? p->child_ptrs : NULL;
  out->dictionary = NULL;
  out->private_data = p;
  out->release = array_release;
  return 0;
}

static struct sl_array_private* ours(const struct ArrowArray* array) {
  return array->release == array_release ? array->private_data : NULL;
}

struct sl_ref* sl_array_buffer_owner(const struct ArrowArray* array, int64_t i) {
  const struct sl_array_private* p = ours(array);
  if (p == NULL || i < 0 || i >= p->n_buffers) return NULL;
  return p->refs[i];
}

void sl_array_set_buffer_owned(struct ArrowArray* array, int64_t i, void* data,
                               int64_t capacity) {
  struct sl_array_private* p = array->private_data;
  if (p->owned[i] != NULL) sl_free_buffer(p->alloc, p->owned[i], (size_t)p->capacities[i]);
  sl_ref_release(p->refs[i]);
  p->refs[i] = NULL;
  p->owned[i] = data;
  p->capacities[i] = capacity;
  p->buffers[i] = data;
}

void sl_array_set_buffer_view(struct ArrowArray* array, int64_t i, const void* data,
                              struct sl_ref* owner) {
  struct sl_array_private* p = array->private_data;
  if (p->owned[i] != NULL) sl_free_buffer(p->alloc, p->owned[i], (size_t)p->capacities[i]);
  p->owned[i] = NULL;
  p->capacities[i] = 0;
  // Retain first: the new owner may be the one already held.
  sl_ref_retain(owner);
  sl_ref_release(p->refs[i]);
  p->refs[i] = owner;
  p->buffers[i] = data;
}

void sl_array_take_buffer(struct ArrowArray* array, int64_t i, struct sl_buffer* buf) {
  if (buf->borrowed != NULL) {
    sl_array_set_buffer_view(array, i, buf->data, buf->borrowed);
    sl_buffer_reset(buf);  // forgets the borrowed bytes
    return;
  }
  int64_t capacity;
  uint8_t* data = sl_buffer_detach(buf, &capacity);
  sl_array_set_buffer_owned(array, i, data, capacity);
}

int sl_array_alloc_dictionary(struct ArrowArray* array, struct sluice_error* error) {
  struct sl_array_private* p = array->private_data;
  if (p->dictionary != NULL) {
    if (p->dictionary->release != NULL) p->dictionary->release(p->dictionary);
    array->dictionary = p->dictionary;
    return 0;
  }
  struct ArrowArray* dict = sl_alloc(p->alloc, sizeof *dict);
  if (dict == NULL) return sl_error_set(error, ENOMEM, "out of memory allocating a dictionary");
  memset(dict, 0, sizeof *dict);
  p->dictionary = dict;
  array->dictionary = dict;
  return 0;
}

void sl_array_move(struct ArrowArray* src, struct ArrowArray* dst) {
  memcpy(dst, src, sizeof *dst);
  // Our nodes' pointers into the private block stay valid: the block does not
  // move, only the struct that points at it.
  src->release = NULL;
  src->private_data = NULL;
}

const struct sluice_allocator* sl_array_allocator(const struct ArrowArray* array) {
  struct sl_array_private* p = ours(array);
  return p != NULL ? p->alloc : NULL;
}

static int project_shared(struct ArrowArray* in, const int64_t* columns, int64_t n_columns,
                          const struct sluice_allocator* alloc, struct ArrowArray* out,
                          struct sluice_error* error);

int sl_columns_repeat(const int64_t* columns, int64_t n_columns) {
  for (int64_t i = 0; i < n_columns; ++i)
    for (int64_t j = 0; j < i; ++j)
      if (columns[j] == columns[i]) return 1;
  return 0;
}

int sl_array_project(struct ArrowArray* in, const int64_t* columns, int64_t n_columns,
                     const struct sluice_allocator* alloc, struct ArrowArray* out,
                     struct sluice_error* error) {
  if (in->release == NULL) return sl_error_set(error, EINVAL, "projecting a released array");
  for (int64_t i = 0; i < n_columns; ++i) {
    if (columns[i] < 0 || columns[i] >= in->n_children) {
      int rc = sl_error_set(error, EINVAL, "projected column %lld out of range (%lld columns)",
                            (long long)columns[i], (long long)in->n_children);
      in->release(in);
      return rc;
    }
  }
  if (sl_columns_repeat(columns, n_columns))
    return project_shared(in, columns, n_columns, alloc, out, error);
  int rc = sl_array_init(out, alloc, 1, n_columns, error);
  if (rc != 0) {
    in->release(in);
    return rc;
  }
  struct sl_array_private* p = out->private_data;
  out->length = in->length;
  out->null_count = in->null_count;
  out->offset = in->offset;
  // The validity bitmap stays in the parent, which we keep alive.
  p->buffers[0] = in->n_buffers > 0 ? in->buffers[0] : NULL;
  for (int64_t i = 0; i < n_columns; ++i) {
    sl_array_move(in->children[columns[i]], &p->children[i]);
  }
  sl_array_move(in, &p->held);
  return 0;
}

struct shared_array {
  struct sl_ref ref;  // first: the ref pointer is the holder pointer
  const struct sluice_allocator* alloc;
  struct ArrowArray array;
};

static void shared_array_destroy(struct sl_ref* ref) {
  struct shared_array* h = (struct shared_array*)ref;
  if (h->array.release != NULL) h->array.release(&h->array);
  sl_free(h->alloc, h, sizeof *h);
}

struct sl_ref* sl_array_share(struct ArrowArray* array, const struct sluice_allocator* alloc,
                              const struct ArrowArray** shared) {
  struct shared_array* h = sl_alloc(alloc, sizeof *h);
  if (h == NULL) return NULL;
  sl_ref_init(&h->ref, shared_array_destroy);
  h->alloc = alloc;
  sl_array_move(array, &h->array);
  *shared = &h->array;
  return &h->ref;
}

static int view_rec(const struct ArrowArray* src, struct sl_ref* owner,
                    const struct sluice_allocator* alloc, struct ArrowArray* out, int depth,
                    struct sluice_error* error) {
  if (depth > 64) {
    memset(out, 0, sizeof *out);
    return sl_error_set(error, EINVAL, "array nested deeper than 64 levels");
  }
  SL_RETURN_NOT_OK(sl_array_init(out, alloc, src->n_buffers, src->n_children, error));
  out->length = src->length;
  out->null_count = src->null_count;
  out->offset = src->offset;
  for (int64_t i = 0; i < src->n_buffers; ++i) {
    sl_array_set_buffer_view(out, i, src->buffers[i], owner);
  }
  int rc = 0;
  for (int64_t i = 0; rc == 0 && i < src->n_children; ++i) {
    rc = view_rec(src->children[i], owner, alloc, out->children[i], depth + 1, error);
  }
  if (rc == 0 && src->dictionary != NULL) {
    rc = sl_array_alloc_dictionary(out, error);
    if (rc == 0) rc = view_rec(src->dictionary, owner, alloc, out->dictionary, depth + 1, error);
  }
  if (rc != 0) out->release(out);
  return rc;
}

int sl_array_view(const struct ArrowArray* src, struct sl_ref* owner,
                  const struct sluice_allocator* alloc, struct ArrowArray* out,
                  struct sluice_error* error) {
  return view_rec(src, owner, alloc, out, 0, error);
}

/// sl_array_project of a column list that names a column more than once:
/// each child a view of the shared input, so that no column is copied.
static int project_shared(struct ArrowArray* in, const int64_t* columns, int64_t n_columns,
                          const struct sluice_allocator* alloc, struct ArrowArray* out,
                          struct sluice_error* error) {
  const struct ArrowArray* shared = NULL;
  struct sl_ref* ref = sl_array_share(in, alloc, &shared);
  if (ref == NULL) {
    in->release(in);
    return sl_error_set(error, ENOMEM, "out of memory projecting a batch");
  }
  int rc = sl_array_init(out, alloc, 1, n_columns, error);
  if (rc == 0) {
    out->length = shared->length;
    out->null_count = shared->null_count;
    out->offset = shared->offset;
    sl_array_set_buffer_view(out, 0, shared->n_buffers > 0 ? shared->buffers[0] : NULL, ref);
    for (int64_t i = 0; rc == 0 && i < n_columns; ++i)
      rc = sl_array_view(shared->children[columns[i]], ref, alloc, out->children[i], error);
    if (rc != 0) out->release(out);
  }
  sl_ref_release(ref);
  return rc;
}

int sl_array_struct_field(struct ArrowArray* column, const int64_t* path, int64_t depth,
                          const struct sluice_allocator* alloc, struct ArrowArray* out,
                          struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (column->release == NULL) return sl_error_set(error, EINVAL, "a field of a released array");
  const struct ArrowArray* top = NULL;
  struct sl_ref* ref = sl_array_share(column, alloc, &top);
  if (ref == NULL) {
    column->release(column);
    return sl_error_set(error, ENOMEM, "out of memory taking a struct field");
  }
  // Row j of node k is at index node->offset + base[k] + j of its buffers:
  // a child's rows start at its parent's offset.
  const struct ArrowArray* nodes[65];
  int64_t base[65];
  int rc = 0, masked = 0;
  nodes[0] = top;
  base[0] = 0;
  if (depth < 1 || depth > 64) rc = sl_error_set(error, EINVAL, "struct field path of %lld levels",
                                                 (long long)depth);
  for (int64_t k = 0; rc == 0 && k < depth; ++k) {
    const struct ArrowArray* n = nodes[k];
    if (path[k] < 0 || path[k] >= n->n_children) {
      rc = sl_error_set(error, EINVAL, "struct field %lld of a node with %lld children",
                        (long long)path[k], (long long)n->n_children);
      break;
    }
    if (n->null_count != 0 && n->n_buffers > 0 && n->buffers[0] != NULL) masked = 1;
    nodes[k + 1] = n->children[path[k]];
    base[k + 1] = base[k] + n->offset;
  }
  if (rc == 0) rc = sl_array_view(nodes[depth], ref, alloc, out, error);
  if (rc == 0) {
    const struct ArrowArray* leaf = nodes[depth];
    int64_t rows = top->length, first = leaf->offset + base[depth];
    out->offset = first;
    out->length = rows;
    out->null_count = leaf->null_count == 0 ? 0 : -1;  // (counted over its own rows)
    if (masked && out->n_buffers > 0) {
      // Null where the field or a struct above it is: a new bitmap, laid out
      // from index 0 so that the view's offset holds for every buffer.
      size_t bytes = (size_t)((first + rows + 7) / 8);
      uint8_t* bits = sl_alloc_buffer(alloc, bytes > 0 ? bytes : 1);
      if (bits == NULL) {
        rc = sl_error_set(error, ENOMEM, "out of memory masking a struct field (%zu bytes)", bytes);
        out->release(out);
      } else {
        memset(bits, 0, bytes > 0 ? bytes : 1);
        int64_t nulls = 0;
        for (int64_t j = 0; j < rows; ++j) {
          int valid = 1;
          for (int64_t k = 0; valid && k <= depth; ++k) {
            const struct ArrowArray* n = nodes[k];
            if (n->n_buffers > 0 && n->buffers[0] != NULL && n->null_count != 0)
              valid = sl_bit_get(n->buffers[0], n->offset + base[k] + j);
          }
          if (valid) bits[(first + j) >> 3] |= (uint8_t)(1u << ((first + j) & 7));
          nulls += !valid;
        }
        sl_array_set_buffer_owned(out, 0, bits, (int64_t)(bytes > 0 ? bytes : 1));
        out->null_count = nulls;
      }
    }
  }
  sl_ref_release(ref);
  return rc;
}

/* ---- byte size --------------------------------------------------------------- */

static int64_t bitmap_bytes(int64_t bits) { return (bits + 7) / 8; }

static int64_t byte_size_rec(const struct ArrowSchema* schema, const struct ArrowArray* array,
                             int depth) {
  if (array == NULL || array->release == NULL || depth > 64) return 0;
  int64_t end = array->offset + array->length;
  if (end < 0) end = 0;
  int64_t total = 0;
  struct sl_type type;
  if (schema == NULL || sl_type_parse(schema->format, &type, NULL) != 0) {
    // Unknown type: fall back to what we allocated, if the node is ours.
    struct sl_array_private* p = ours(array);
    if (p != NULL) {
      for (int64_t i = 0; i < p->n_buffers; ++i) total += p->capacities[i];
    }
  } else {
    const void* const* b = array->buffers;
    int64_t nb = array->n_buffers;
    int has_validity = type.id != SL_TYPE_NA && type.id != SL_TYPE_DENSE_UNION &&
                       type.id != SL_TYPE_SPARSE_UNION;
    if (has_validity && nb > 0 && b[0] != NULL) total += bitmap_bytes(end);
    switch (type.id) {
      case SL_TYPE_BINARY: case SL_TYPE_STRING:
      case SL_TYPE_LARGE_BINARY: case SL_TYPE_LARGE_STRING: {
        int large = type.id == SL_TYPE_LARGE_BINARY || type.id == SL_TYPE_LARGE_STRING;
        int64_t ow = large ? 8 : 4;
        if (nb >= 2 && b[1] != NULL) {
          total += (end + 1) * ow;
          if (end > 0) {
            int64_t last;
            if (large) {
              memcpy(&last, (const uint8_t*)b[1] + end * 8, 8);
            } else {
              int32_t l32;
              memcpy(&l32, (const uint8_t*)b[1] + end * 4, 4);
              last = l32;
            }
            if (last > 0) total += last;
          }
        }
        break;
      }
      case SL_TYPE_LIST: case SL_TYPE_MAP: total += (end + 1) * 4; break;
      case SL_TYPE_LARGE_LIST: total += (end + 1) * 8; break;
      case SL_TYPE_SPARSE_UNION: total += end; break;
      case SL_TYPE_DENSE_UNION: total += end * 5; break;
      default: {
        int64_t bits = sl_type_bit_width(&type);
        if (bits > 1) total += end * (bits / 8);
        else if (bits == 1) total += bitmap_bytes(end);
        break;
      }
    }
  }
  for (int64_t i = 0; i < array->n_children; ++i) {
    const struct ArrowSchema* cs =
        (schema != NULL && i < schema->n_children) ? schema->children[i] : NULL;
    total += byte_size_rec(cs, array->children[i], depth + 1);
  }
  if (array->dictionary != NULL) {
    total += byte_size_rec(schema != NULL ? schema->dictionary : NULL, array->dictionary,
                           depth + 1);
  }
  return total;
}

int64_t sl_array_byte_size(const struct ArrowSchema* schema, const struct ArrowArray* array) {
  return byte_size_rec(schema, array, 0);
}

static int64_t node_count(const struct ArrowArray* array, int depth) {
  if (array == NULL || array->release == NULL || depth > 64) return 0;
  int64_t n = 1;
  for (int64_t i = 0; i < array->n_children; ++i) n += node_count(array->children[i], depth + 1);
  return n + node_count(array->dictionary, depth + 1);
}

int64_t sl_array_held_bytes(const struct ArrowSchema* schema, const struct ArrowArray* array) {
  return byte_size_rec(schema, array, 0) + node_count(array, 0) * SL_ARRAY_NODE_BYTES;
}

/* ---- schema nodes --------------------------------------------------------------- */

struct sl_schema_private {
  const struct sluice_allocator* alloc;
  size_t block_size;
  int64_t n_children;
  struct ArrowSchema** child_ptrs;
  struct ArrowSchema* children;
  struct ArrowSchema* dictionary;
  char* metadata;
  int64_t metadata_size;
};

static void schema_release(struct ArrowSchema* schema) {
  if (schema == NULL || schema->release == NULL) return;
  struct sl_schema_private* p = schema->private_data;
  if (p != NULL) {
    for (int64_t i = 0; i < p->n_children; ++i) {
      if (p->children[i].release != NULL) p->children[i].release(&p->children[i]);
    }
    if (p->dictionary != NULL) {
      if (p->dictionary->release != NULL) p->dictionary->release(p->dictionary);
      sl_free(p->alloc, p->dictionary, sizeof *p->dictionary);
    }
    sl_free(p->alloc, p->metadata, (size_t)p->metadata_size);
    sl_free(p->alloc, p, p->block_size);
  }
  schema->release = NULL;
  schema->private_data = NULL;
}

int sl_schema_init(struct ArrowSchema* out, const struct sluice_allocator* alloc,
                   const char* format, const char* name, int64_t flags, int64_t n_children,
                   struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  if (format == NULL || n_children < 0 || n_children > (INT64_C(1) << 24)) {
    return sl_error_set(error, EINVAL, "schema node with no format or %lld children",
                        (long long)n_children);
  }
  size_t nc = (size_t)n_children;
  size_t format_len = strlen(format) + 1;
  size_t name_len = name != NULL ? strlen(name) + 1 : 0;
  size_t off_child_ptrs = SL_ALIGN8(sizeof(struct sl_schema_private));
  size_t off_children = SL_ALIGN8(off_child_ptrs + nc * sizeof(struct ArrowSchema*));
  size_t off_format = off_children + nc * sizeof(struct ArrowSchema);
  size_t off_name = off_format + format_len;
  size_t total = off_name + name_len;
  if (total < off_name) return sl_error_set(error, ERANGE, "schema node too large");
  uint8_t* block = sl_alloc(alloc, total);
  if (block == NULL) {
    return sl_error_set(error, ENOMEM, "out of memory allocating a schema node (%zu bytes)",
                        total);
  }
  memset(block, 0, off_format);
  struct sl_schema_private* p = (struct sl_schema_private*)block;
  p->alloc = alloc;
  p->block_size = total;
  p->n_children = n_children;
  p->child_ptrs = (struct ArrowSchema**)(block + off_child_ptrs);
  p->children = (struct ArrowSchema*)(block + off_children);
  for (size_t i = 0; i < nc; ++i) p->child_ptrs[i] = &p->children[i];
  memcpy(block + off_format, format, format_len);
  if (name != NULL) memcpy(block + off_name, name, name_len);
  out->format = (const char*)(block + off_format);
  out->name = name != NULL ? (const char*)(block + off_name) : NULL;
  out->metadata = NULL;
  out->flags = flags;
  out->n_children = n_children;
  out->children = nc > 0 ? p->child_ptrs : NULL;
  out->dictionary = NULL;
  out->private_data = p;
  out->release = schema_release;
  return 0;
}

static int32_t read_i32(const char* p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

int64_t sl_metadata_size(const char* metadata) {
  if (metadata == NULL) return 0;
  int32_t count = read_i32(metadata);
  int64_t size = 4;
  for (int64_t i = 0; i < (int64_t)count * 2; ++i) {
    int32_t len = read_i32(metadata + size);
    size += 4 + (len > 0 ? len : 0);
  }
  return size;
}

void sl_metadata_iter_init(struct sl_metadata_iter* it, const char* metadata) {
  it->at = metadata != NULL ? metadata + 4 : NULL;
  it->left = metadata != NULL ? read_i32(metadata) : 0;
}

int sl_metadata_iter_next(struct sl_metadata_iter* it, const char** key, int32_t* key_len,
                          const char** value, int32_t* value_len) {
  if (it->left <= 0) return 0;
  int32_t klen = read_i32(it->at);
  *key = it->at + 4;
  *key_len = klen > 0 ? klen : 0;
  int32_t vlen = read_i32(*key + *key_len);
  *value = *key + *key_len + 4;
  *value_len = vlen > 0 ? vlen : 0;
  it->at = *value + *value_len;
  it->left--;
  return 1;
}

const char* sl_metadata_find(const char* metadata, const char* key, int32_t* value_len) {
  size_t want = strlen(key);
  struct sl_metadata_iter it;
  sl_metadata_iter_init(&it, metadata);
  const char *k, *v;
  int32_t klen, vlen;
  while (sl_metadata_iter_next(&it, &k, &klen, &v, &vlen)) {
    if ((size_t)klen == want && memcmp(k, key, want) == 0) {
      *value_len = vlen;
      return v;
    }
  }
  return NULL;
}

int sl_metadata_is_extension(const char* metadata, const char* name) {
  int32_t n = 0;
  const char* v = sl_metadata_find(metadata, "ARROW:extension:name", &n);
  return v != NULL && (size_t)n == strlen(name) && memcmp(v, name, (size_t)n) == 0;
}

int sl_schema_set_metadata(struct ArrowSchema* schema, const char* metadata,
                           struct sluice_error* error) {
  struct sl_schema_private* p = schema->private_data;
  char* copy = NULL;
  int64_t size = 0;
  if (metadata != NULL) {
    size = sl_metadata_size(metadata);
    copy = sl_alloc(p->alloc, (size_t)size);
    if (copy == NULL) return sl_error_set(error, ENOMEM, "out of memory copying metadata");
    memcpy(copy, metadata, (size_t)size);
  }
  sl_free(p->alloc, p->metadata, (size_t)p->metadata_size);
  p->metadata = copy;
  p->metadata_size = size;
  schema->metadata = copy;
  return 0;
}

int sl_schema_put_metadata(struct ArrowSchema* schema, const char* key, const char* value,
                           struct sluice_error* error) {
  struct sl_schema_private* p = schema->private_data;
  size_t key_len = strlen(key), value_len = strlen(value);
  if (key_len > INT32_MAX / 2 || value_len > INT32_MAX / 2)
    return sl_error_set(error, EINVAL, "metadata entry '%.40s' is too long", key);
  // The other entries as they were, in order, then this one.
  int64_t size = 4 + 8 + (int64_t)key_len + (int64_t)value_len;
  int32_t count = 1;
  struct sl_metadata_iter it;
  const char *k, *v;
  int32_t kl, vl;
  sl_metadata_iter_init(&it, schema->metadata);
  while (sl_metadata_iter_next(&it, &k, &kl, &v, &vl)) {
    if ((size_t)kl == key_len && memcmp(k, key, key_len) == 0) continue;
    size += 8 + (int64_t)kl + vl;
    ++count;
  }
  char* blob = sl_alloc(p->alloc, (size_t)size);
  if (blob == NULL) return sl_error_set(error, ENOMEM, "out of memory setting metadata");
  char* at = blob;
  memcpy(at, &count, 4), at += 4;
  sl_metadata_iter_init(&it, schema->metadata);
  while (sl_metadata_iter_next(&it, &k, &kl, &v, &vl)) {
    if ((size_t)kl == key_len && memcmp(k, key, key_len) == 0) continue;
    memcpy(at, &kl, 4), at += 4;
    if (kl > 0) memcpy(at, k, (size_t)kl), at += kl;
    memcpy(at, &vl, 4), at += 4;
    if (vl > 0) memcpy(at, v, (size_t)vl), at += vl;
  }
  int32_t n = (int32_t)key_len;
  memcpy(at, &n, 4), at += 4;
  memcpy(at, key, key_len), at += key_len;
  n = (int32_t)value_len;
  memcpy(at, &n, 4), at += 4;
  if (value_len > 0) memcpy(at, value, value_len);
  sl_free(p->alloc, p->metadata, (size_t)p->metadata_size);
  p->metadata = blob;
  p->metadata_size = size;
  schema->metadata = blob;
  return 0;
}

int sl_schema_set_extension(struct ArrowSchema* schema, const char* name,
                            struct sluice_error* error) {
  // {"ARROW:extension:name": name, "ARROW:extension:metadata": ""}
  static const char k_name[] = "ARROW:extension:name", k_meta[] = "ARROW:extension:metadata";
  size_t name_len = strlen(name);
  if (name_len > 64) return sl_error_set(error, EINVAL, "extension name '%s' is too long", name);
  char blob[160];
  size_t at = 0;
  int32_t v = 2;
  memcpy(blob + at, &v, 4), at += 4;
  v = (int32_t)(sizeof k_name - 1);
  memcpy(blob + at, &v, 4), at += 4;
  memcpy(blob + at, k_name, sizeof k_name - 1), at += sizeof k_name - 1;
  v = (int32_t)name_len;
  memcpy(blob + at, &v, 4), at += 4;
  memcpy(blob + at, name, name_len), at += name_len;
  v = (int32_t)(sizeof k_meta - 1);
  memcpy(blob + at, &v, 4), at += 4;
  memcpy(blob + at, k_meta, sizeof k_meta - 1), at += sizeof k_meta - 1;
  v = 0;
  memcpy(blob + at, &v, 4);
  return sl_schema_set_metadata(schema, blob, error);
}

int sl_schema_alloc_dictionary(struct ArrowSchema* schema, struct sluice_error* error) {
  struct sl_schema_private* p = schema->private_data;
  if (p->dictionary != NULL) {
    if (p->dictionary->release != NULL) p->dictionary->release(p->dictionary);
    schema->dictionary = p->dictionary;
    return 0;
  }
  struct ArrowSchema* dict = sl_alloc(p->alloc, sizeof *dict);
  if (dict == NULL) return sl_error_set(error, ENOMEM, "out of memory allocating a dictionary");
  memset(dict, 0, sizeof *dict);
  p->dictionary = dict;
  schema->dictionary = dict;
  return 0;
}

static int schema_copy_rec(const struct ArrowSchema* src, const struct sluice_allocator* alloc,
                           struct ArrowSchema* out, int depth, struct sluice_error* error) {
  if (depth > 128) {
    memset(out, 0, sizeof *out);
    return sl_error_set(error, EINVAL, "schema nested deeper than 128 levels");
  }
  if (src == NULL || src->release == NULL || src->format == NULL ||
      src->n_children < 0 || (src->n_children > 0 && src->children == NULL)) {
    memset(out, 0, sizeof *out);
    return sl_error_set(error, EINVAL, "copying an invalid or released schema");
  }
  SL_RETURN_NOT_OK(sl_schema_init(out, alloc, src->format, src->name, src->flags,
                                  src->n_children, error));
  int rc = sl_schema_set_metadata(out, src->metadata, error);
  for (int64_t i = 0; rc == 0 && i < src->n_children; ++i) {
    if (src->children[i] == NULL) {
      rc = sl_error_set(error, EINVAL, "schema child %lld is NULL", (long long)i);
    } else {
      rc = schema_copy_rec(src->children[i], alloc, out->children[i], depth + 1, error);
    }
  }
  if (rc == 0 && src->dictionary != NULL) {
    rc = sl_schema_alloc_dictionary(out, error);
    if (rc == 0) rc = schema_copy_rec(src->dictionary, alloc, out->dictionary, depth + 1, error);
  }
  if (rc != 0) out->release(out);
  return rc;
}

int sl_schema_copy(const struct ArrowSchema* src, const struct sluice_allocator* alloc,
                   struct ArrowSchema* out, struct sluice_error* error) {
  return schema_copy_rec(src, alloc, out, 0, error);
}

int sl_schema_project(const struct ArrowSchema* in, const int64_t* columns,
                      int64_t n_columns, const struct sluice_allocator* alloc,
                      struct ArrowSchema* out, struct sluice_error* error) {
  for (int64_t i = 0; i < n_columns; ++i) {
    if (columns[i] < 0 || columns[i] >= in->n_children) {
      memset(out, 0, sizeof *out);
      return sl_error_set(error, EINVAL, "projected column %lld out of range (%lld columns)",
                          (long long)columns[i], (long long)in->n_children);
    }
  }
  SL_RETURN_NOT_OK(sl_schema_init(out, alloc, "+s", in->name, in->flags, n_columns, error));
  int rc = sl_schema_set_metadata(out, in->metadata, error);
  for (int64_t i = 0; rc == 0 && i < n_columns; ++i) {
    rc = sl_schema_copy(in->children[columns[i]], alloc, out->children[i], error);
  }
  if (rc != 0) out->release(out);
  return rc;
}
