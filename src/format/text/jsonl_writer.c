// JSON Lines: one object per row. Values are JSON values of their type
// (numbers, strings, nested arrays/objects); binary is a hex string, dates and
// times are ISO 8601 strings, non-finite floats are null. Rows are spelled on
// all cores (text_rows_parallel.h).
#include <string.h>

#include "text_writers.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "core/sl_name_set.h"
#include "core/sl_value_text.h"
#include "io/sl_sink.h"

#define JSONL_MAX_PARTS 16

struct jsonl_state {
  const struct sluice_allocator* alloc;
  /// The quoted, escaped keys ("name":) rendered once.
  struct sl_text keys;
  size_t* key_ends;
  int64_t n_keys;
};

static int jsonl_spell_rows(void* ctx, int part, const struct sl_text_field* row,
                            const struct ArrowArray* batch, int64_t begin, int64_t end,
                            struct sl_text* out, struct sluice_error* error) {
  (void)part;
  const struct jsonl_state* state = ctx;
  for (int64_t r = begin; r < end; ++r) {
    int64_t child_row = batch->offset + r;
    if (sl_text_append_char(out, '{') != 0) goto oom;
    for (int64_t c = 0; c < row->n_children; ++c) {
      size_t from = c == 0 ? 0 : state->key_ends[c - 1];
      if (c > 0 && sl_text_append_char(out, ',') != 0) goto oom;
      if (sl_text_append(out, state->keys.data + from, state->key_ends[c] - from) != 0) {
        goto oom;
      }
      int done = sl_text_spell_number(&row->children[c], batch->children[c], child_row, 1, out);
      if (done < 0) goto oom;
      if (done) continue;
      SL_RETURN_NOT_OK(sl_value_render(&row->children[c], batch->children[c], child_row,
                                       SL_TEXT_JSON, out, error));
    }
    if (sl_text_append(out, "}\n", 2) != 0) goto oom;
  }
  return 0;
oom:
  return sl_error_set(error, ENOMEM, "jsonl: out of memory");
}

/// A JSON object's keys must differ (pyarrow.json and DuckDB refuse a
/// repeated one, polars keeps one of them): columns, and the fields of every
/// struct below them, of one name are refused, as the Avro writer refuses
/// them. `path` names the struct ("" at the top).
static int check_structs_below(const struct sluice_allocator* alloc,
                               const struct sl_text_field* node, const char* column,
                               struct sluice_error* error);

static int check_distinct_names(const struct sluice_allocator* alloc,
                                const struct sl_text_field* node, const char* path,
                                struct sluice_error* error) {
  // Hashed: a linear search for each name took minutes on 100k columns.
  struct sl_name_set seen;
  sl_name_set_init(&seen, alloc);
  int rc = 0;
  for (int64_t c = 0; rc == 0 && c < node->n_children; ++c) {
    const struct sl_text_field* child = &node->children[c];
    int64_t had = -1;
    if (sl_name_set_add(&seen, child->name, c, &had) != 0) {
      rc = sl_error_set(error, ENOMEM, "jsonl: out of memory");
    } else if (had >= 0) {
      // -c cannot pick one of two columns of one name: it refuses the name.
      rc = sl_error_set(error, EINVAL, "jsonl: two %s%s%s are named '%s', and a JSON "
                        "object's keys must differ (%s)",
                        path[0] != '\0' ? "fields of struct '" : "columns", path,
                        path[0] != '\0' ? "'" : "", child->name,
                        path[0] != '\0' ? "leave the column out with -c, or rename one"
                                        : "rename one at the source");
    }
  }
  sl_name_set_release(&seen);
  SL_RETURN_NOT_OK(rc);
  for (int64_t c = 0; c < node->n_children; ++c) {
    SL_RETURN_NOT_OK(check_structs_below(alloc, &node->children[c], node->children[c].name, error));
  }
  return 0;
}

/// Every struct at or below `node` (in lists, maps, unions and dictionaries
/// too) renders as an object: each is checked; `column` names the column.
static int check_structs_below(const struct sluice_allocator* alloc,
                               const struct sl_text_field* node, const char* column,
                               struct sluice_error* error) {
  if (node->type.id == SL_TYPE_STRUCT) return check_distinct_names(alloc, node, column, error);
  for (int64_t c = 0; c < node->n_children; ++c) {
    SL_RETURN_NOT_OK(check_structs_below(alloc, &node->children[c], column, error));
  }
  return node->dictionary != NULL ? check_structs_below(alloc, node->dictionary, column, error) : 0;
}

static int jsonl_write_header(void* ctx, const struct sl_text_field* row, struct sl_sink* sink,
                              struct sluice_error* error) {
  (void)sink;
  struct jsonl_state* state = ctx;
  if (row->n_children == 0) return 0;
  SL_RETURN_NOT_OK(check_distinct_names(state->alloc, row, "", error));
  state->key_ends = sl_calloc(state->alloc, (size_t)row->n_children, sizeof(size_t));
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

static int jsonl_init(void* ctx, const struct sl_write_args* args, struct sluice_error* error) {
  struct jsonl_state* state = ctx;
  state->alloc = args->alloc;
  sl_text_init(&state->keys, args->alloc);
  if (args->format_options != NULL && args->format_options[strspn(args->format_options, ",")] != '\0') {
    // No options: a -W meant for another format is an error, not ignored.
    return sl_error_set(error, EINVAL, "JSON Lines writer: it takes no options ('%s')",
                        args->format_options);
  }
  return 0;
}

static void jsonl_release(void* ctx) {
  struct jsonl_state* state = ctx;
  sl_text_reset(&state->keys);
  sl_free(state->alloc, state->key_ends, (size_t)state->n_keys * sizeof(size_t));
}

static const struct sl_text_format k_jsonl_format = {
    .name = "jsonl", .ctx_size = sizeof(struct jsonl_state), .max_parts = JSONL_MAX_PARTS,
    .init = jsonl_init, .release = jsonl_release, .start = jsonl_write_header,
    .spell = jsonl_spell_rows};

static int jsonl_open(const struct ArrowSchema* schema, struct sl_sink* sink,
                      const struct sl_write_args* args, void** state, struct sluice_error* error) {
  return sl_text_writer_open(&k_jsonl_format, schema, sink, args, state, error);
}

static const struct sl_format_writer k_jsonl_writer;

static int jsonl_write(struct ArrowArrayStream* stream, struct sl_sink* sink,
                       const struct sl_write_args* args, struct sluice_error* error) {
  return sl_format_write_pushed(&k_jsonl_writer, stream, sink, args, error);
}

static const char* const k_jsonl_extensions[] = {".jsonl", ".ndjson", NULL};
static const struct sl_format_writer k_jsonl_writer = {
    .name = "jsonl", .extensions = k_jsonl_extensions, .write = jsonl_write, .compressible = 1,
    .open = jsonl_open, .push = sl_text_writer_push, .finish = sl_text_writer_finish,
    .close = sl_text_writer_close};

const struct sl_format_writer* sl_jsonl_writer(void) { return &k_jsonl_writer; }
