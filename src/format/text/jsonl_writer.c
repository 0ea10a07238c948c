// JSON Lines: one object per row. Values are JSON values of their type
// (numbers, strings, nested arrays/objects); binary is a hex string, dates and
// times are ISO 8601 strings, non-finite floats are null.
#include <string.h>

#include "text_writers.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_value_text.h"
#include "io/sl_sink.h"

#define JSONL_FLUSH_BYTES (1 << 16)

struct jsonl_state {
  struct sl_text line;
  /// The quoted, escaped keys ("name":) rendered once.
  struct sl_text keys;
  size_t* key_ends;
  int64_t n_keys;
};

static int jsonl_write_batch(void* ctx, const struct sl_text_field* row,
                             const struct ArrowArray* batch, struct sl_sink* sink,
                             struct sluice_error* error) {
  struct jsonl_state* state = ctx;
  for (int64_t r = 0; r < batch->length; ++r) {
    int64_t child_row = batch->offset + r;
    if (sl_text_append_char(&state->line, '{') != 0) goto oom;
    for (int64_t c = 0; c < row->n_children; ++c) {
      size_t begin = c == 0 ? 0 : state->key_ends[c - 1];
      if (c > 0 && sl_text_append_char(&state->line, ',') != 0) goto oom;
      if (sl_text_append(&state->line, state->keys.data + begin, state->key_ends[c] - begin) != 0) {
        goto oom;
      }
      SL_RETURN_NOT_OK(sl_value_render(&row->children[c], batch->children[c], child_row,
                                       SL_TEXT_JSON, &state->line, error));
    }
    if (sl_text_append(&state->line, "}\n", 2) != 0) goto oom;
    if (state->line.len >= JSONL_FLUSH_BYTES || r + 1 == batch->length) {
      SL_RETURN_NOT_OK(sl_sink_write(sink, state->line.data, (int64_t)state->line.len, error));
      sl_text_clear(&state->line);
    }
  }
  return 0;
oom:
  return sl_error_set(error, ENOMEM, "jsonl: out of memory");
}

static int jsonl_write_header(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                              struct sluice_error* error) {
  (void)sink;
  struct jsonl_state* state = ctx;
  if (row->n_children == 0) return 0;
  state->key_ends = sl_calloc(state->line.alloc, (size_t)row->n_children, sizeof(size_t));
  if (state->key_ends == NULL) return sl_error_set(error, ENOMEM, "jsonl: out of memory");
  state->n_keys = row->n_children;
  for (int64_t c = 0; c < row->n_children; ++c) {
    const char* name = row->children[c].name;
    if (sl_text_append_json_string(&state->keys, name, strlen(name)) != 0 ||
        sl_text_append_char(&state->keys, ':') != 0) {
      return sl_error_set(error, ENOMEM, "jsonl: out of memory");
    }
    state->key_ends[c] = state->keys.len;
  }
  return 0;
}

static int jsonl_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                       const struct sl_write_args* args, struct sluice_error* error) {
  struct jsonl_state state;
  memset(&state, 0, sizeof state);
  sl_text_init(&state.line, args->alloc);
  sl_text_init(&state.keys, args->alloc);
  struct sl_text_batch_writer writer = {jsonl_write_header, jsonl_write_batch, &state};
  int rc = sl_text_write_stream(stream, sink, args, &writer, error);
  sl_text_reset(&state.line);
  sl_text_reset(&state.keys);
  sl_free(args->alloc, state.key_ends, (size_t)state.n_keys * sizeof(size_t));
  return rc;
}

static const char* const k_jsonl_extensions[] = {".jsonl", ".ndjson", NULL};
static const struct sl_format_writer k_jsonl_writer = {"jsonl", k_jsonl_extensions, jsonl_write, 0, 0};

const struct sl_format_writer* sl_jsonl_writer(void) { return &k_jsonl_writer; }
