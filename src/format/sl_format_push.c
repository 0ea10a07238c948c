// A writer's `write` in terms of its push interface: one way through the
// writer, whether the batches come from a stream or are handed over one by
// one (a partitioned write).
#include <string.h>

#include "core/sl_checked_stream.h"
#include "format/sl_format.h"

int sl_format_write_pushed(const struct sl_format_writer* writer,
                           struct ArrowArrayStream* stream, struct sl_sink* sink,
                           const struct sl_write_args* args, struct sluice_error* error) {
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  int rc = stream->get_schema(stream, &schema);
  if (rc != 0) return sl_input_error(stream, rc, error);
  void* state = NULL;
  rc = writer->open(&schema, sink, args, &state, error);
  schema.release(&schema);
  while (rc == 0) {
    struct ArrowArray batch;
    memset(&batch, 0, sizeof batch);
    rc = stream->get_next(stream, &batch);
    if (rc != 0) {
      rc = sl_input_error(stream, rc, error);
      break;
    }
    if (batch.release == NULL) break;
    rc = writer->push(state, &batch, 0, error);  // takes the batch
  }
  if (rc == 0) rc = writer->finish(state, error);
  if (state != NULL) writer->close(state);
  return rc;
}
