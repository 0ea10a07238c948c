// Text output formats: JSON Lines and a CSV writer (RFC 4180 quoting where
// needed, a header row, nulls as empty fields by default, options). Values
// are spelled by src/core/sl_value_text so that every type has a text form.
#ifndef SL_TEXT_WRITERS_H
#define SL_TEXT_WRITERS_H

#include "../sl_format.h"

/// "jsonl" (.jsonl, .ndjson): one JSON object per row, keys = column names.
const struct sl_format_writer* sl_jsonl_writer(void);
/// "csv" (.csv): header row, then one line per row, "\n" line endings.
/// Options (sl_write_args.format_options): delimiter, header, null, quote,
/// line_terminator; see csv_writer.c for the spellings of values.
const struct sl_format_writer* sl_csv_writer(void);

/// Shared by both writers: walks `stream`, handing each batch (a struct array)
/// and its parsed columns to `write_batch`, and the header to `write_header`
/// (may be NULL). Reports stream errors with the stream's message.
struct sl_text_field;
struct sl_text_batch_writer {
  int (*write_header)(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                      struct sluice_error* error);
  int (*write_batch)(void* ctx, const struct sl_text_field* row, const struct ArrowArray* batch,
                     struct sl_sink* sink, struct sluice_error* error);
  void* ctx;
};

int sl_text_write_stream(struct ArrowArrayStream* stream, struct sl_sink* sink,
                         const struct sl_write_args* args,
                         const struct sl_text_batch_writer* writer, struct sluice_error* error);

/// Both writers' common cells without the general path (sl_value_render into
/// a scratch text, then copied): row `row` (before column->offset) of a plain
/// integer, float32 or float64 column, spelled straight into `out`. 1 when
/// done; 0 when the cell needs the general path (another type, a dictionary,
/// or a null unless `json`); -1 on ENOMEM. With `json`, a null or a
/// non-finite float is `null`.
struct sl_text;
int sl_text_spell_number(const struct sl_text_field* field, const struct ArrowArray* column,
                         int64_t row, int json, struct sl_text* out);

#endif
