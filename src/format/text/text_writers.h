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

struct sl_text_field;

/// A text format for the push interface below: its state (ctx_size bytes,
/// zeroed, then `init` with the writer's options; `release` frees what init
/// and the rest made), the header (`start`, NULL = none; written at open),
/// and how a range of rows is spelled (on up to max_parts threads,
/// text_rows_parallel.h). `written` (NULL = none) learns how many rows each
/// batch had, for row numbers in messages. `finish` (NULL = none) checks,
/// after the last batch is spelled, what no single batch could tell.
struct sl_text;
struct sl_text_format {
  const char* name;
  size_t ctx_size;
  int max_parts;
  int (*init)(void* ctx, const struct sl_write_args* args, struct sluice_error* error);
  void (*release)(void* ctx);
  int (*start)(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
               struct sluice_error* error);
  int (*spell)(void* ctx, int part, const struct sl_text_field* row,
               const struct ArrowArray* batch, int64_t begin, int64_t end, struct sl_text* out,
               struct sluice_error* error);
  void (*written)(void* ctx, int64_t rows);
  int (*finish)(void* ctx, const struct sl_text_field* row, struct sluice_error* error);
};

/// The push interface of sl_format_writer for a text format. The spelling
/// threads start with the first batch after open or after an ended row
/// group, and stop (their text in the sink) at SL_PUSH_END_ROW_GROUP and finish.
int sl_text_writer_open(const struct sl_text_format* format, const struct ArrowSchema* schema,
                        struct sl_sink* sink, const struct sl_write_args* args, void** state,
                        struct sluice_error* error);
int sl_text_writer_push(void* state, struct ArrowArray* batch, int flags,
                        struct sluice_error* error);
int sl_text_writer_finish(void* state, struct sluice_error* error);
void sl_text_writer_close(void* state);

/// The text writers' common cells without the general path (sl_value_render into
/// a scratch text, then copied): row `row` (before column->offset) of a plain
/// integer, float32 or float64 column, spelled straight into `out`. 1 when
/// done; 0 when the cell needs the general path (another type, a dictionary,
/// or a null unless `json`); -1 on ENOMEM. With `json`, a null or a
/// non-finite float is `null`.
struct sl_text;
int sl_text_spell_number(const struct sl_text_field* field, const struct ArrowArray* column,
                         int64_t row, int json, struct sl_text* out);

#endif
