// String and binary views (Arrow "vu" / "vz", what polars exports) rewritten
// as large strings / binaries on the way into sluice_write: the writers take
// offsets + data. Everything else in a batch is passed through without a
// copy (the input batch is shared by the nodes exported from it).
//
// A view is 16 bytes: int32 length, then the data inline when length <= 12,
// else a 4-byte prefix, int32 buffer index and int32 offset into one of the
// variadic data buffers, whose sizes the last buffer lists (int64 each).
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "_sluice.h"

static int is_view(const char* format) {
  return strcmp(format, "vu") == 0 || strcmp(format, "vz") == 0;
}

static int has_views(const struct ArrowSchema* schema) {
  if (is_view(schema->format)) return 1;
  for (int64_t i = 0; i < schema->n_children; ++i) {
    if (has_views(schema->children[i])) return 1;
  }
  return schema->dictionary != NULL && has_views(schema->dictionary);
}

/// Our own copy: its strings are ours to shorten in place ("vu" -> "U").
static void rename_views(struct ArrowSchema* schema) {
  if (is_view(schema->format)) {
    char* format = (char*)schema->format;
    format[0] = format[1] == 'u' ? 'U' : 'Z';
    format[1] = '\0';
  }
  for (int64_t i = 0; i < schema->n_children; ++i) rename_views(schema->children[i]);
  if (schema->dictionary != NULL) rename_views(schema->dictionary);
}

/* ---- Converted nodes ---------------------------------------------------------- */

/// Offsets + data for elements [offset, offset + length) of a view array;
/// earlier offsets stay 0 so that the node keeps the source's offset (and
/// validity bitmap).
static int views_to_plain(const struct ArrowArray* src, struct sp_export_node* node, char* message,
                          size_t cap) {
  int64_t n_variadic = src->n_buffers - 3;
  if (n_variadic < 0 || src->buffers[1] == NULL) {
    snprintf(message, cap, "view array with %lld buffers", (long long)src->n_buffers);
    return EINVAL;
  }
  const uint8_t* views = src->buffers[1];
  const int64_t* sizes = src->buffers[src->n_buffers - 1];
  int64_t end = src->offset + src->length;
  node->offsets = PyMem_RawCalloc((size_t)end + 1, sizeof *node->offsets);
  if (node->offsets == NULL) return ENOMEM;
  int64_t total = 0;
  for (int64_t i = src->offset; i < end; ++i) {
    int32_t len;
    memcpy(&len, views + i * 16, 4);
    if (len < 0) {
      snprintf(message, cap, "view %lld: negative length %d", (long long)i, len);
      return EINVAL;
    }
    if (len > 12) {
      int32_t index, at;
      memcpy(&index, views + i * 16 + 8, 4);
      memcpy(&at, views + i * 16 + 12, 4);
      if (index < 0 || index >= n_variadic || at < 0 || sizes == NULL ||
          (int64_t)at + len > sizes[index] || src->buffers[2 + index] == NULL) {
        snprintf(message, cap, "view %lld: buffer %d offset %d length %d out of range",
                 (long long)i, index, at, len);
        return EINVAL;
      }
    }
    total += len;
    node->offsets[i + 1] = total;
  }
  node->data = PyMem_RawMalloc(total > 0 ? (size_t)total : 1);
  if (node->data == NULL) return ENOMEM;
  for (int64_t i = src->offset; i < end; ++i) {
    int32_t len;
    memcpy(&len, views + i * 16, 4);
    const uint8_t* from = views + i * 16 + 4;
    if (len > 12) {
      int32_t index, at;
      memcpy(&index, views + i * 16 + 8, 4);
      memcpy(&at, views + i * 16 + 12, 4);
      from = (const uint8_t*)src->buffers[2 + index] + at;
    }
    memcpy(node->data + node->offsets[i], from, (size_t)len);
  }
  return 0;
}

static int plain_node_of(struct sp_shared_array* shared, const struct ArrowArray* src,
                         const struct ArrowSchema* schema, struct ArrowArray* out,
                         char* message, size_t cap) {
  if (src->n_children != schema->n_children ||
      (src->dictionary == NULL) != (schema->dictionary == NULL)) {
    snprintf(message, cap, "a batch does not match the stream's schema");
    return EINVAL;
  }
  struct sp_export_node* node = PyMem_RawCalloc(1, sizeof *node);
  if (node == NULL) return ENOMEM;
  int64_t n = src->n_children;
  int rc = 0;
  if (n > 0) {
    node->children = PyMem_RawCalloc((size_t)n, sizeof *node->children);
    node->child_ptrs = PyMem_RawCalloc((size_t)n, sizeof *node->child_ptrs);
    if (node->children == NULL || node->child_ptrs == NULL) rc = ENOMEM;
  }
  if (rc == 0 && src->dictionary != NULL) {
    node->dictionary = PyMem_RawCalloc(1, sizeof *node->dictionary);
    if (node->dictionary == NULL) rc = ENOMEM;
  }
  sp_shared_retain(shared);
  node->shared = shared;
  memset(out, 0, sizeof *out);
  out->length = src->length;
  out->null_count = src->null_count;
  out->offset = src->offset;
  out->n_children = n;
  out->children = node->child_ptrs;
  out->dictionary = node->dictionary;
  out->release = sp_export_release;
  out->private_data = node;
  if (rc == 0 && is_view(schema->format)) {
    rc = views_to_plain(src, node, message, cap);
    node->buffers[0] = src->buffers[0];
    node->buffers[1] = node->offsets;
    node->buffers[2] = node->data;
    out->n_buffers = 3;
    out->buffers = node->buffers;
  } else {
    out->n_buffers = src->n_buffers;
    out->buffers = src->buffers;
  }
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    rc = plain_node_of(shared, src->children[i], schema->children[i], &node->children[i],
                       message, cap);
    node->child_ptrs[i] = &node->children[i];
  }
  if (rc == 0 && src->dictionary != NULL) {
    rc = plain_node_of(shared, src->dictionary, schema->dictionary, node->dictionary, message,
                       cap);
  }
  if (rc != 0) {
    // Children not reached are zeroed (release == NULL): release skips them.
    int have_children = node->children != NULL && node->child_ptrs != NULL;
    out->n_children = have_children ? n : 0;
    for (int64_t i = 0; have_children && i < n; ++i) node->child_ptrs[i] = &node->children[i];
    sp_export_release(out);
  }
  return rc;
}

/* ---- The adapter stream ------------------------------------------------------- */

struct plain_stream {
  struct ArrowArrayStream input;
  struct ArrowSchema input_schema;
  struct ArrowSchema schema;  // views renamed
  char message[256];
  int own_error;
};

static int plain_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct plain_stream* s = stream->private_data;
  s->own_error = 1;
  snprintf(s->message, sizeof s->message, "out of memory copying the schema");
  return sp_schema_copy(&s->schema, out);
}

static int plain_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct plain_stream* s = stream->private_data;
  struct ArrowArray batch;
  memset(&batch, 0, sizeof batch);
  s->own_error = 0;
  int rc = s->input.get_next(&s->input, &batch);
  if (rc != 0) return rc;
  if (batch.release == NULL) {
    out->release = NULL;
    return 0;
  }
  s->own_error = 1;
  snprintf(s->message, sizeof s->message, "out of memory converting string views");
  struct sp_shared_array* shared = sp_shared_new(&batch);
  if (shared == NULL) {
    batch.release(&batch);
    return ENOMEM;
  }
  rc = plain_node_of(shared, &shared->array, &s->input_schema, out, s->message,
                     sizeof s->message);
  sp_shared_release(shared);
  return rc;
}

static const char* plain_last_error(struct ArrowArrayStream* stream) {
  struct plain_stream* s = stream->private_data;
  if (s->own_error) return s->message;
  return s->input.get_last_error != NULL ? s->input.get_last_error(&s->input) : NULL;
}

static void plain_stream_release(struct ArrowArrayStream* stream) {
  struct plain_stream* s = stream->private_data;
  if (s->input.release != NULL) s->input.release(&s->input);
  if (s->input_schema.release != NULL) s->input_schema.release(&s->input_schema);
  if (s->schema.release != NULL) s->schema.release(&s->schema);
  PyMem_RawFree(s);
  stream->release = NULL;
}

int sp_plain_stream(struct ArrowArrayStream* input, struct ArrowSchema* schema,
                    struct ArrowArrayStream* out, int* wrapped) {
  *wrapped = 0;
  if (schema->release == NULL) return 0;  // let the writer report the stream's own error
  if (!has_views(schema)) {
    schema->release(schema);
    return 0;
  }
  struct plain_stream* s = PyMem_RawCalloc(1, sizeof *s);
  if (s == NULL || sp_schema_copy(schema, &s->schema) != 0) {
    PyMem_RawFree(s);
    schema->release(schema);
    return ENOMEM;
  }
  rename_views(&s->schema);
  s->input_schema = *schema;
  schema->release = NULL;  // moved into the adapter
  s->input = *input;
  input->release = NULL;  // moved into the adapter
  out->get_schema = plain_get_schema;
  out->get_next = plain_get_next;
  out->get_last_error = plain_last_error;
  out->release = plain_stream_release;
  out->private_data = s;
  *wrapped = 1;
  return 0;
}
