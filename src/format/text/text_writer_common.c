#include "text_writers.h"

#include <math.h>
#include <string.h>

#include "core/sl_checked_stream.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "core/sl_value_text.h"

int sl_text_write_stream(struct ArrowArrayStream* stream, struct sl_sink* sink,
                         const struct sl_write_args* args,
                         const struct sl_text_batch_writer* writer, struct sluice_error* error) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  int rc = stream->get_schema(stream, &schema);
  if (rc != 0) return sl_input_error(stream, rc, error);
  struct sl_text_field row;
  rc = sl_text_field_init(&row, &schema, args->alloc, error);
  if (rc != 0) {
    schema.release(&schema);
    return rc;
  }
  if (row.type.id != SL_TYPE_STRUCT) {
    rc = sl_error_set(error, EINVAL, "stream of '%s' arrays, expected a struct", schema.format);
  }
  if (rc == 0 && writer->write_header != NULL) {
    rc = writer->write_header(writer->ctx, &row, sink, error);
  }
  while (rc == 0) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    rc = stream->get_next(stream, &batch);
    if (rc != 0) {
      rc = sl_input_error(stream, rc, error);
      break;
    }
    if (batch.release == NULL) break;
    if (batch.n_children != row.n_children) {
      rc = sl_error_set(error, EINVAL, "batch has %lld columns, schema %lld",
                        (long long)batch.n_children, (long long)row.n_children);
    } else {
      rc = writer->write_batch(writer->ctx, &row, &batch, sink, error);
    }
    batch.release(&batch);
  }
  sl_text_field_reset(&row);
  schema.release(&schema);
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
  out->len += n;
  return 1;
}
