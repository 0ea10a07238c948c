// Helpers of the Arrow IPC reader tests: an in-memory source (optionally
// forward-only, optionally recycling its buffer like a pipe) and a driver
// that opens a reader and decodes every split.
#ifndef SLUICE_TEST_IPC_READ_HELPERS_H
#define SLUICE_TEST_IPC_READ_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_ref.h"
#include "core/sl_validate.h"
#include "format/sl_format.h"
#include "io/sl_source.h"

/* ---- An in-memory source ------------------------------------------------- */

/// Bytes in memory behind the sl_source interface. `recycle` makes read_next
/// hand out owner-less views of a scratch buffer that the next read
/// overwrites, as a pipe source may.
struct mem_source {
  struct sl_source base;
  struct sl_ref ref;
  uint8_t* data;
  int64_t len;  ///< bytes in data (base.size is -1 for forward-only sources)
  int64_t cursor;
  int recycle;
  uint8_t* scratch;
  int64_t scratch_size;
};

static inline void mem_destroy(struct sl_ref* ref) {
  struct mem_source* m = (struct mem_source*)((char*)ref - offsetof(struct mem_source, ref));
  free(m->data);
  free(m->scratch);
  free(m->base.name);
  free(m);
}

static inline int mem_read_at(struct sl_source* source, int64_t offset, int64_t length,
                       struct sl_view* out, struct sluice_error* error) {
  struct mem_source* m = (struct mem_source*)source;
  out->data = NULL;
  out->size = 0;
  out->owner = NULL;
  if (offset < 0 || length < 0 || offset > m->len || length > m->len - offset)
    return sl_error_set(error, EIO, "%s: offset %lld: read of %lld bytes past the end",
                        source->name, (long long)offset, (long long)length);
  out->data = m->data + offset;
  out->size = length;
  out->owner = sl_ref_retain(&m->ref);
  return 0;
}

static inline int mem_read_next(struct sl_source* source, int64_t length, struct sl_view* out,
                         struct sluice_error* error) {
  struct mem_source* m = (struct mem_source*)source;
  int64_t n = m->len - m->cursor;
  if (length < n) n = length;
  if (!m->recycle) {
    int rc = mem_read_at(source, m->cursor, n, out, error);
    if (rc == 0) m->cursor += n;
    return rc;
  }
  if (n > m->scratch_size) {
    uint8_t* p = realloc(m->scratch, (size_t)n);
    if (p == NULL) return sl_error_set(error, ENOMEM, "scratch");
    m->scratch = p;
    m->scratch_size = n;
  }
  if (m->scratch) memset(m->scratch, 0xAB, (size_t)m->scratch_size);  // poison old views
  if (n > 0) memcpy(m->scratch, m->data + m->cursor, (size_t)n);
  m->cursor += n;
  out->data = m->scratch;
  out->size = n;
  out->owner = NULL;
  return 0;
}

static inline void mem_close(struct sl_source* source) {
  struct mem_source* m = (struct mem_source*)source;
  sl_ref_release(&m->ref);
}

static const struct sl_source_ops k_mem_ops = {
    .read_at = mem_read_at, .read_next = mem_read_next, .close = mem_close};
static const struct sl_source_ops k_mem_forward_ops = {.read_next = mem_read_next,
                                                       .close = mem_close};

static inline struct sl_source* mem_source_new(const char* name, const uint8_t* data, size_t size,
                                        int forward_only, int recycle) {
  struct mem_source* m = calloc(1, sizeof *m);
  assert_non_null(m);
  m->data = malloc(size ? size : 1);
  assert_non_null(m->data);
  if (size) memcpy(m->data, data, size);
  m->recycle = recycle;
  m->len = (int64_t)size;
  m->base.ops = forward_only ? &k_mem_forward_ops : &k_mem_ops;
  m->base.name = strdup(name);
  m->base.size = forward_only ? -1 : (int64_t)size;
  m->base.alloc = NULL;
  m->base.owner = NULL;
  sl_ref_init(&m->ref, mem_destroy);
  return &m->base;
}

/* ---- Reading everything -------------------------------------------------- */

#define MAX_BATCHES 64

struct read_result {
  int64_t n_batches;
  int64_t rows[MAX_BATCHES];
  int64_t n_fields;
  struct ArrowSchema schema;    ///< kept when keep_schema
  struct ArrowArray batches[4]; ///< first batches kept when keep_batches
  int64_t n_kept;
};

/// Opens `src` with `fmt`, reads every split (optionally only `columns`), and
/// re-validates each batch. Returns the first error code (0 = all good).
static inline int read_all(const struct sl_format_reader* fmt, struct sl_source* src,
                    const struct sluice_allocator* alloc, const int64_t* columns,
                    int64_t n_columns, int keep, struct read_result* res,
                    struct sluice_error* error) {
  memset(res, 0, sizeof *res);
  struct sl_reader_args args = {.source = src, .alloc = alloc, .batch_size = 0};
  void* reader = NULL;
  int rc = fmt->open(&args, &reader, error);
  if (rc != 0) return rc;
  struct ArrowSchema schema = {0};
  struct sl_split* splits = NULL;
  int64_t n_splits = 0;
  rc = fmt->schema(reader, &schema, error);
  if (rc == 0) {
    res->n_fields = schema.n_children;
    rc = fmt->plan_splits(reader, &splits, &n_splits, error);
  }
  for (int64_t s = 0; rc == 0 && s < n_splits; ++s) {
    void* state = NULL;
    int projected = 0;
    rc = fmt->split_open(reader, &splits[s], columns, n_columns, &state, &projected, error);
    if (rc != 0) break;
    for (;;) {
      struct ArrowArray batch;
      rc = fmt->split_next(state, &batch, error);
      if (rc != 0 || batch.release == NULL) break;
      if (columns == NULL) {
        // The reader validated already; a second, independent look catches
        // a reader that validated the wrong thing.
        struct sluice_error verr;
        assert_int_equal(sl_array_validate(&schema, &batch, SL_VALIDATE_FULL, NULL, &verr), 0);
      } else {
        assert_int_equal(batch.n_children, n_columns);
      }
      if (res->n_batches < MAX_BATCHES) res->rows[res->n_batches] = batch.length;
      res->n_batches++;
      if (keep && res->n_kept < 4) {
        sl_array_move(&batch, &res->batches[res->n_kept++]);
      } else {
        batch.release(&batch);
      }
    }
    fmt->split_close(state);
  }
  if (splits) sl_free(alloc, splits, (size_t)n_splits * sizeof *splits);
  if (keep && schema.release) {
    sl_schema_copy(&schema, alloc, &res->schema, NULL);
  }
  if (schema.release) schema.release(&schema);
  fmt->close(reader);
  return rc;
}

static inline void read_result_reset(struct read_result* res) {
  for (int64_t i = 0; i < res->n_kept; ++i)
    if (res->batches[i].release) res->batches[i].release(&res->batches[i]);
  if (res->schema.release) res->schema.release(&res->schema);
  res->n_kept = 0;
}

static inline int read_bytes(const struct sl_format_reader* fmt, const char* name, const uint8_t* data,
                      size_t size, int forward_only, int recycle,
                      const struct sluice_allocator* alloc, struct read_result* res,
                      struct sluice_error* error) {
  struct sl_source* src = mem_source_new(name, data, size, forward_only, recycle);
  int rc = read_all(fmt, src, alloc, NULL, 0, 0, res, error);
  sl_source_close(src);
  return rc;
}

static inline int ends_with(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

#endif
