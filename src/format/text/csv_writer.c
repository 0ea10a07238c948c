// A plain CSV writer; the CSV format issue brings a fuller one (dialects,
// options). Null and the empty string differ: null is an empty field, the
// empty string is "".
#include <string.h>

#include "text_writers.h"
#include "core/sl_error.h"
#include "core/sl_value_text.h"
#include "io/sl_sink.h"

/// Flush the line buffer to the sink past this size, so that memory stays
/// bounded whatever the batch size.
#define CSV_FLUSH_BYTES (1 << 16)

struct csv_state {
  struct sl_text line;
  struct sl_text cell;
};

static int csv_needs_quotes(const char* s, size_t n) {
  if (n == 0) return 1;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r') return 1;
  }
  return 0;
}

static int csv_append_cell(struct sl_text* line, const char* s, size_t n) {
  if (!csv_needs_quotes(s, n)) return sl_text_append(line, s, n);
  SL_RETURN_NOT_OK(sl_text_append_char(line, '"'));
  size_t run = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s[i] == '"') {  // doubled, per RFC 4180
      SL_RETURN_NOT_OK(sl_text_append(line, s + run, i + 1 - run));
      run = i;
    }
  }
  SL_RETURN_NOT_OK(sl_text_append(line, s + run, n - run));
  return sl_text_append_char(line, '"');
}

static int csv_flush(struct csv_state* state, struct sl_sink* sink, struct sluice_error* error) {
  if (state->line.len == 0) return 0;
  int rc = sl_sink_write(sink, state->line.data, (int64_t)state->line.len, error);
  sl_text_clear(&state->line);
  return rc;
}

static int csv_write_header(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                            struct sluice_error* error) {
  struct csv_state* state = ctx;
  int rc = 0;
  for (int64_t c = 0; c < row->n_children && rc == 0; ++c) {
    if (c > 0) rc = sl_text_append_char(&state->line, ',');
    const char* name = row->children[c].name;
    if (rc == 0) rc = csv_append_cell(&state->line, name, strlen(name));
  }
  if (rc == 0) rc = sl_text_append_char(&state->line, '\n');
  if (rc != 0) return sl_error_set(error, rc, "csv: out of memory");
  return csv_flush(state, sink, error);
}

static int csv_write_batch(void* ctx, const struct sl_text_field* row,
                           const struct ArrowArray* batch, struct sl_sink* sink,
                           struct sluice_error* error) {
  struct csv_state* state = ctx;
  for (int64_t r = 0; r < batch->length; ++r) {
    // Struct offsets apply to the children: child row = offset + r.
    int64_t child_row = batch->offset + r;
    for (int64_t c = 0; c < row->n_children; ++c) {
      const struct sl_text_field* field = &row->children[c];
      const struct ArrowArray* column = batch->children[c];
      if (c > 0 && sl_text_append_char(&state->line, ',') != 0) goto oom;
      if (sl_value_is_null(field, column, child_row)) continue;
      sl_text_clear(&state->cell);
      SL_RETURN_NOT_OK(
          sl_value_render(field, column, child_row, SL_TEXT_PLAIN, &state->cell, error));
      if (csv_append_cell(&state->line, sl_text_cstr(&state->cell), state->cell.len) != 0) {
        goto oom;
      }
    }
    if (sl_text_append_char(&state->line, '\n') != 0) goto oom;
    if (state->line.len >= CSV_FLUSH_BYTES) SL_RETURN_NOT_OK(csv_flush(state, sink, error));
  }
  return csv_flush(state, sink, error);
oom:
  return sl_error_set(error, ENOMEM, "csv: out of memory");
}

static int csv_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                     const struct sl_write_args* args, struct sluice_error* error) {
  struct csv_state state;
  sl_text_init(&state.line, args->alloc);
  sl_text_init(&state.cell, args->alloc);
  struct sl_text_batch_writer writer = {csv_write_header, csv_write_batch, &state};
  int rc = sl_text_write_stream(stream, sink, args, &writer, error);
  sl_text_reset(&state.line);
  sl_text_reset(&state.cell);
  return rc;
}

static const char* const k_csv_extensions[] = {".csv", NULL};
static const struct sl_format_writer k_csv_writer = {"csv", k_csv_extensions, csv_write};

const struct sl_format_writer* sl_csv_writer(void) { return &k_csv_writer; }
