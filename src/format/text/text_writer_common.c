#include "text_writers.h"

#include <math.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "core/sl_value_text.h"
#include "text_rows_parallel.h"

struct text_writer {
  const struct sl_text_format* format;
  const struct sluice_allocator* alloc;
  struct sl_sink* sink;
  struct ArrowSchema schema;  ///< a copy: the row's names point into it
  struct sl_text_field row;
  int row_ready;
  struct sl_text_rows_pool* pool;  ///< NULL between row groups
  void* ctx;
};

void sl_text_writer_close(void* state) {
  struct text_writer* w = state;
  if (w == NULL) return;
  sl_text_rows_pool_stop(w->pool);
  if (w->ctx != NULL) {
    w->format->release(w->ctx);
    sl_free(w->alloc, w->ctx, w->format->ctx_size);
  }
  if (w->row_ready) sl_text_field_reset(&w->row);
  if (w->schema.release != NULL) w->schema.release(&w->schema);
  sl_free(w->alloc, w, sizeof *w);
}

int sl_text_writer_open(const struct sl_text_format* format, const struct ArrowSchema* schema,
                        struct sl_sink* sink, const struct sl_write_args* args, void** state,
                        struct sluice_error* error) {
  *state = NULL;
  struct text_writer* w = sl_calloc(args->alloc, 1, sizeof *w);
  if (w == NULL) return sl_error_set(error, ENOMEM, "%s: out of memory", format->name);
  w->format = format;
  w->alloc = args->alloc;
  w->sink = sink;
  int rc = 0;
  if ((w->ctx = sl_calloc(w->alloc, 1, format->ctx_size)) == NULL) {
    rc = sl_error_set(error, ENOMEM, "%s: out of memory", format->name);
  }
  if (rc == 0) rc = format->init(w->ctx, args, error);
  if (rc == 0) rc = sl_schema_copy(schema, w->alloc, &w->schema, error);
  if (rc == 0 && (rc = sl_text_field_init(&w->row, &w->schema, w->alloc, error)) == 0) {
    w->row_ready = 1;
  }
  if (rc == 0 && w->row.type.id != SL_TYPE_STRUCT) {
    char tn[64];
    sl_format_name(w->schema.format, tn, sizeof tn);
    rc = sl_error_set(error, EINVAL, "stream of %s arrays, expected a struct", tn);
  }
  if (rc == 0 && format->start != NULL) rc = format->start(w->ctx, &w->row, sink, error);
  if (rc != 0) {
    sl_text_writer_close(w);
    return rc;
  }
  *state = w;
  return 0;
}

/// Waits until the spelling threads' text is in the sink and stops them.
static int stop_pool(struct text_writer* w, int rc, struct sluice_error* error) {
  if (w->pool == NULL) return rc;
  rc = sl_text_rows_pool_finish(w->pool, rc, error);
  sl_text_rows_pool_stop(w->pool);
  w->pool = NULL;
  return rc;
}

int sl_text_writer_push(void* state, struct ArrowArray* batch, int flags,
                        struct sluice_error* error) {
  struct text_writer* w = state;
  int rc = 0;
  if (batch != NULL && batch->release != NULL) {
    int parts;
    if (batch->n_children != w->row.n_children) {
      rc = sl_error_set(error, EINVAL, "batch has %lld columns, schema %lld",
                        (long long)batch->n_children, (long long)w->row.n_children);
    } else if (w->pool == NULL) {
      rc = sl_text_rows_pool_start(w->alloc, w->format->max_parts, w->format->spell, w->ctx,
                                   &w->pool, &parts, error);
    }
    if (rc == 0) rc = sl_text_rows_pool_write(w->pool, &w->row, batch, w->sink, error);
    if (rc == 0 && w->format->written != NULL) w->format->written(w->ctx, batch->length);
    batch->release(batch);
  }
  return (flags & SL_PUSH_END_ROW_GROUP) || rc != 0 ? stop_pool(w, rc, error) : 0;
}

int sl_text_writer_finish(void* state, struct sluice_error* error) {
  struct text_writer* w = state;
  int rc = stop_pool(w, 0, error);
  if (rc == 0 && w->format->finish != NULL) rc = w->format->finish(w->ctx, &w->row, error);
  return rc;
}

int sl_text_spell_number(const struct sl_text_field* field, const struct ArrowArray* column,
                         int64_t row, int json, struct sl_text* out) {
  enum sl_type_id id = field->type.id;
  if (field->dictionary != NULL || column->dictionary != NULL || id > SL_TYPE_DOUBLE ||
      id < SL_TYPE_INT8 || id == SL_TYPE_HALF_FLOAT) {
    return 0;
  }
  int64_t p = column->offset + row;
  if (sl_text_room(out, 40) != 0) return -1;
  char* at = out->data + out->len;
  size_t room = out->cap - out->len;
  if (column->null_count != 0 && column->buffers[0] != NULL && !sl_bit_get(column->buffers[0], p)) {
    if (!json) return 0;  // the CSV null spelling: the general path knows its cases
    memcpy(at, "null", 5);
    out->len += 4;
    return 1;
  }
  const void* values = column->buffers[1];
  size_t n;
  switch (id) {
    case SL_TYPE_DOUBLE: {
      double v = ((const double*)values)[p];
      if (json && !isfinite(v)) return 0;  // JSON has no spelling for it: null
      n = sl_format_double(v, at, room);
      break;
    }
    case SL_TYPE_FLOAT: {
      float v = ((const float*)values)[p];
      if (json && !isfinite(v)) return 0;
      n = sl_format_float(v, at, room);
      break;
    }
    case SL_TYPE_UINT64: n = sl_format_uint64(((const uint64_t*)values)[p], at); break;
    default: n = sl_format_int64(sl_int_value(id, values, p), at); break;
  }
  if (json && (id == SL_TYPE_DOUBLE || id == SL_TYPE_FLOAT)) n = sl_json_float_spelling(at, n);
  out->len += n;
  return 1;
}
