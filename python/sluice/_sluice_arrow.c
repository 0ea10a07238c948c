// C Data Interface plumbing of the extension, free of Python objects so that
// release callbacks can run on any thread without the GIL (pyarrow, polars and
// DuckDB release imported arrays from their own threads).
//
// Zero copy: an exported array is a new tree of struct ArrowArray nodes whose
// buffer pointers are the decoded batch's own; each node holds a reference to
// the shared batch, so the bytes live as long as the last export (or numpy
// view) of any part of them.
#include <errno.h>
#include <string.h>

#include "_sluice.h"

/* ---- Shared batches ----------------------------------------------------------- */

struct sp_shared_array* sp_shared_new(struct ArrowArray* array) {
  struct sp_shared_array* shared = PyMem_RawMalloc(sizeof *shared);
  if (shared == NULL) return NULL;
  atomic_init(&shared->refs, 1);
  shared->array = *array;
  shared->own_memory = 0;
  shared->marked = NULL;
  shared->n_marked = shared->cap_marked = 0;
  shared->mark_failed = 0;
  array->release = NULL;
  return shared;
}

void sp_shared_retain(struct sp_shared_array* shared) {
  atomic_fetch_add_explicit(&shared->refs, 1, memory_order_relaxed);
}

void sp_shared_mark_buffer(struct sp_shared_array* shared, const void* buffer) {
  if (buffer == NULL || shared->mark_failed || sp_shared_marked(shared, buffer)) return;
  if (shared->n_marked == shared->cap_marked) {
    int64_t cap = shared->cap_marked > 0 ? 2 * shared->cap_marked : 16;
    const void** grown = PyMem_RawRealloc(shared->marked, (size_t)cap * sizeof *grown);
    if (grown == NULL) {
      shared->mark_failed = 1;
      return;
    }
    shared->marked = grown;
    shared->cap_marked = cap;
  }
  shared->marked[shared->n_marked++] = buffer;
}

void sp_shared_mark(struct sp_shared_array* shared, const struct ArrowArray* a) {
  for (int64_t i = 0; i < a->n_buffers; ++i) sp_shared_mark_buffer(shared, a->buffers[i]);
  for (int64_t i = 0; i < a->n_children; ++i) sp_shared_mark(shared, a->children[i]);
  if (a->dictionary != NULL) sp_shared_mark(shared, a->dictionary);
}

int sp_shared_marked(const struct sp_shared_array* shared, const void* buffer) {
  if (shared->mark_failed) return 1;
  for (int64_t i = 0; i < shared->n_marked; ++i)
    if (shared->marked[i] == buffer) return 1;
  return 0;
}

void sp_shared_release(struct sp_shared_array* shared) {
  if (shared == NULL) return;
  if (atomic_fetch_sub_explicit(&shared->refs, 1, memory_order_acq_rel) == 1) {
    if (shared->array.release != NULL) shared->array.release(&shared->array);
    PyMem_RawFree(shared->marked);
    PyMem_RawFree(shared);
  }
}

/* ---- Exported nodes ------------------------------------------------------------ */

void sp_export_release(struct ArrowArray* array) {
  struct sp_export_node* node = array->private_data;
  // Children the consumer moved out have release == NULL already.
  for (int64_t i = 0; i < array->n_children; ++i) {
    if (node->children[i].release != NULL) node->children[i].release(&node->children[i]);
  }
  if (node->dictionary != NULL && node->dictionary->release != NULL) {
    node->dictionary->release(node->dictionary);
  }
  PyMem_RawFree(node->children);
  PyMem_RawFree(node->child_ptrs);
  PyMem_RawFree(node->dictionary);
  PyMem_RawFree(node->offsets);
  PyMem_RawFree(node->data);
  sp_shared_release(node->shared);
  PyMem_RawFree(node);
  array->release = NULL;
}

/// Exports `src` (a node inside shared->array) into `out`: same buffers, same
/// shape; `offset`/`length` override the node's own (to cut a column).
static int export_node(struct sp_shared_array* shared, const struct ArrowArray* src,
                       int64_t offset, int64_t length, int64_t null_count,
                       struct ArrowArray* out) {
  struct sp_export_node* node = PyMem_RawCalloc(1, sizeof *node);
  if (node == NULL) return ENOMEM;
  int64_t n = src->n_children;
  if (n > 0) {
    node->children = PyMem_RawCalloc((size_t)n, sizeof *node->children);
    node->child_ptrs = PyMem_RawCalloc((size_t)n, sizeof *node->child_ptrs);
  }
  if (src->dictionary != NULL) node->dictionary = PyMem_RawCalloc(1, sizeof *node->dictionary);
  if ((n > 0 && (node->children == NULL || node->child_ptrs == NULL)) ||
      (src->dictionary != NULL && node->dictionary == NULL)) {
    PyMem_RawFree(node->children);
    PyMem_RawFree(node->child_ptrs);
    PyMem_RawFree(node->dictionary);
    PyMem_RawFree(node);
    return ENOMEM;
  }
  for (int64_t i = 0; i < n; ++i) {
    const struct ArrowArray* c = src->children[i];
    int rc = export_node(shared, c, c->offset, c->length, c->null_count, &node->children[i]);
    if (rc != 0) {
      for (int64_t j = 0; j < i; ++j) node->children[j].release(&node->children[j]);
      PyMem_RawFree(node->children);
      PyMem_RawFree(node->child_ptrs);
      PyMem_RawFree(node->dictionary);
      PyMem_RawFree(node);
      return rc;
    }
    node->child_ptrs[i] = &node->children[i];
  }
  if (src->dictionary != NULL) {
    const struct ArrowArray* d = src->dictionary;
    int rc = export_node(shared, d, d->offset, d->length, d->null_count, node->dictionary);
    if (rc != 0) {
      for (int64_t j = 0; j < n; ++j) node->children[j].release(&node->children[j]);
      PyMem_RawFree(node->children);
      PyMem_RawFree(node->child_ptrs);
      PyMem_RawFree(node->dictionary);
      PyMem_RawFree(node);
      return rc;
    }
  }
  sp_shared_retain(shared);
  node->shared = shared;
  out->length = length;
  out->null_count = null_count;
  out->offset = offset;
  out->n_buffers = src->n_buffers;
  out->n_children = n;
  // The source's buffer list lives as long as the shared batch; consumers
  // only read it.
  out->buffers = src->buffers;
  out->children = node->child_ptrs;
  out->dictionary = node->dictionary;
  out->release = sp_export_release;
  out->private_data = node;
  return 0;
}

/// Column `i` of a batch as its own array: the child cut to the batch's window.
static int export_child(struct sp_shared_array* shared, int64_t i, struct ArrowArray* out) {
  const struct ArrowArray* top = &shared->array;
  const struct ArrowArray* c = top->children[i];
  int64_t offset = c->offset + top->offset;
  int whole = top->offset == 0 && top->length == c->length;
  // A cut may drop or keep nulls: -1 = "compute it" per the spec.
  int64_t null_count = whole || c->null_count == 0 ? c->null_count : -1;
  return export_node(shared, c, offset, top->length, null_count, out);
}

int sp_export_column(struct sp_shared_array* shared, int64_t i, struct ArrowArray* out) {
  if (i < 0 || i >= shared->array.n_children) return EINVAL;
  return export_child(shared, i, out);
}

int sp_export_batch(struct sp_shared_array* shared, struct ArrowArray* out) {
  const struct ArrowArray* top = &shared->array;
  struct sp_export_node* node = PyMem_RawCalloc(1, sizeof *node);
  if (node == NULL) return ENOMEM;
  int64_t n = top->n_children;
  if (n > 0) {
    node->children = PyMem_RawCalloc((size_t)n, sizeof *node->children);
    node->child_ptrs = PyMem_RawCalloc((size_t)n, sizeof *node->child_ptrs);
    if (node->children == NULL || node->child_ptrs == NULL) {
      PyMem_RawFree(node->children);
      PyMem_RawFree(node->child_ptrs);
      PyMem_RawFree(node);
      return ENOMEM;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    int rc = export_child(shared, i, &node->children[i]);
    if (rc != 0) {
      for (int64_t j = 0; j < i; ++j) node->children[j].release(&node->children[j]);
      PyMem_RawFree(node->children);
      PyMem_RawFree(node->child_ptrs);
      PyMem_RawFree(node);
      return rc;
    }
    node->child_ptrs[i] = &node->children[i];
  }
  sp_shared_retain(shared);
  node->shared = shared;
  // A record batch has no top-level nulls; the window moved into the children.
  node->buffers[0] = NULL;  // the top-level struct's (absent) validity
  out->length = top->length;
  out->null_count = 0;
  out->offset = 0;
  out->n_buffers = 1;
  out->n_children = n;
  out->buffers = node->buffers;
  out->children = node->child_ptrs;
  out->dictionary = NULL;
  out->release = sp_export_release;
  out->private_data = node;
  return 0;
}

/* ---- Schemas ------------------------------------------------------------------- */

struct schema_node {
  char* format;
  char* name;
  char* metadata;
  struct ArrowSchema* children;
  struct ArrowSchema** child_ptrs;
};

int64_t sp_metadata_size(const char* metadata) {
  if (metadata == NULL) return 0;
  int32_t n;
  memcpy(&n, metadata, 4);
  int64_t size = 4;
  for (int32_t i = 0; i < n; ++i) {
    for (int part = 0; part < 2; ++part) {
      int32_t len;
      memcpy(&len, metadata + size, 4);
      size += 4 + (len > 0 ? len : 0);
    }
  }
  return size;
}

static void schema_release(struct ArrowSchema* schema) {
  struct schema_node* node = schema->private_data;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    if (node->children[i].release != NULL) node->children[i].release(&node->children[i]);
  }
  if (schema->dictionary != NULL) {
    if (schema->dictionary->release != NULL) schema->dictionary->release(schema->dictionary);
    PyMem_RawFree(schema->dictionary);
  }
  PyMem_RawFree(node->format);
  PyMem_RawFree(node->name);
  PyMem_RawFree(node->metadata);
  PyMem_RawFree(node->children);
  PyMem_RawFree(node->child_ptrs);
  PyMem_RawFree(node);
  schema->release = NULL;
}

static char* copy_bytes(const char* src, size_t size) {
  char* out = PyMem_RawMalloc(size > 0 ? size : 1);
  if (out != NULL && size > 0) memcpy(out, src, size);
  return out;
}

int sp_schema_new(struct ArrowSchema* out, const char* format, const char* name,
                  const char* metadata, int64_t flags, int64_t n_children) {
  struct schema_node* node = PyMem_RawCalloc(1, sizeof *node);
  if (node == NULL) return ENOMEM;
  node->format = copy_bytes(format, strlen(format) + 1);
  node->name = name != NULL ? copy_bytes(name, strlen(name) + 1) : NULL;
  node->metadata = metadata != NULL ? copy_bytes(metadata, (size_t)sp_metadata_size(metadata))
                                    : NULL;
  if (n_children > 0) {
    node->children = PyMem_RawCalloc((size_t)n_children, sizeof *node->children);
    node->child_ptrs = PyMem_RawCalloc((size_t)n_children, sizeof *node->child_ptrs);
  }
  if (node->format == NULL || (name != NULL && node->name == NULL) ||
      (metadata != NULL && node->metadata == NULL) ||
      (n_children > 0 && (node->children == NULL || node->child_ptrs == NULL))) {
    PyMem_RawFree(node->format);
    PyMem_RawFree(node->name);
    PyMem_RawFree(node->metadata);
    PyMem_RawFree(node->children);
    PyMem_RawFree(node->child_ptrs);
    PyMem_RawFree(node);
    return ENOMEM;
  }
  for (int64_t i = 0; i < n_children; ++i) node->child_ptrs[i] = &node->children[i];
  out->format = node->format;
  out->name = node->name;
  out->metadata = node->metadata;
  out->flags = flags;
  out->n_children = n_children;
  out->children = node->child_ptrs;
  out->dictionary = NULL;
  out->release = schema_release;
  out->private_data = node;
  return 0;
}

int sp_schema_copy(const struct ArrowSchema* src, struct ArrowSchema* out) {
  int rc = sp_schema_new(out, src->format, src->name, src->metadata, src->flags, src->n_children);
  if (rc != 0) return rc;
  // Children not yet filled have release == NULL (calloc): the release of a
  // half-built copy skips them.
  for (int64_t i = 0; i < src->n_children; ++i) {
    rc = sp_schema_copy(src->children[i], out->children[i]);
    if (rc != 0) {
      out->release(out);
      return rc;
    }
  }
  if (src->dictionary != NULL) {
    out->dictionary = PyMem_RawCalloc(1, sizeof *out->dictionary);
    if (out->dictionary == NULL) {
      out->release(out);
      return ENOMEM;
    }
    rc = sp_schema_copy(src->dictionary, out->dictionary);
    if (rc != 0) {
      out->release(out);
      return rc;
    }
  }
  return 0;
}

/* ---- A stream over shared batches ---------------------------------------------- */

struct batch_stream {
  struct ArrowSchema schema;
  struct sp_shared_array** batches;
  int64_t n;
  int64_t next;
  int64_t column;
  const char* last_error;
};

static int batch_stream_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct batch_stream* s = stream->private_data;
  int rc = sp_schema_copy(&s->schema, out);
  s->last_error = rc != 0 ? "sluice: out of memory copying the schema" : NULL;
  return rc;
}

static int batch_stream_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct batch_stream* s = stream->private_data;
  if (s->next >= s->n) {
    out->release = NULL;
    return 0;
  }
  struct sp_shared_array* b = s->batches[s->next];
  int rc = s->column < 0 ? sp_export_batch(b, out) : sp_export_column(b, s->column, out);
  if (rc != 0) {
    s->last_error = "sluice: out of memory exporting a batch";
    return rc;
  }
  // The stream hands each batch out once; drop its reference as it goes so
  // that a consumer streaming the table does not keep twice the memory.
  sp_shared_release(b);
  s->batches[s->next] = NULL;
  s->next++;
  return 0;
}

static const char* batch_stream_last_error(struct ArrowArrayStream* stream) {
  struct batch_stream* s = stream->private_data;
  return s->last_error;
}

static void batch_stream_release(struct ArrowArrayStream* stream) {
  struct batch_stream* s = stream->private_data;
  for (int64_t i = s->next; i < s->n; ++i) sp_shared_release(s->batches[i]);
  PyMem_RawFree(s->batches);
  if (s->schema.release != NULL) s->schema.release(&s->schema);
  PyMem_RawFree(s);
  stream->release = NULL;
}

int sp_stream_new(const struct ArrowSchema* schema, struct sp_shared_array* const* batches,
                  int64_t n, int64_t column, struct ArrowArrayStream* out) {
  struct batch_stream* s = PyMem_RawCalloc(1, sizeof *s);
  if (s == NULL) return ENOMEM;
  s->batches = PyMem_RawCalloc(n > 0 ? (size_t)n : 1, sizeof *s->batches);
  int rc = s->batches == NULL ? ENOMEM : 0;
  if (rc == 0) {
    if (column >= 0) {
      rc = column < schema->n_children ? sp_schema_copy(schema->children[column], &s->schema)
                                       : EINVAL;
    } else {
      rc = sp_schema_copy(schema, &s->schema);
    }
  }
  if (rc != 0) {
    PyMem_RawFree(s->batches);
    PyMem_RawFree(s);
    return rc;
  }
  for (int64_t i = 0; i < n; ++i) {
    sp_shared_mark(batches[i], &batches[i]->array);  // (called with the GIL)
    sp_shared_retain(batches[i]);
    s->batches[i] = batches[i];
  }
  s->n = n;
  s->column = column;
  out->get_schema = batch_stream_get_schema;
  out->get_next = batch_stream_get_next;
  out->get_last_error = batch_stream_last_error;
  out->release = batch_stream_release;
  out->private_data = s;
  return 0;
}
