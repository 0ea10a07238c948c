#include "core/sl_checked_stream.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/sl_alloc.h"
#include "core/sl_array.h"
#include "core/sl_error.h"
#include "core/sl_read.h"
#include "core/sl_type.h"
#include "core/sl_validate.h"

/// sl_array_validate's depth limit (the root is 0, a column 1, a child or
/// dictionary one more).
#define CHECKED_MAX_DEPTH 64
#include "core/sl_widen_decimals.h"

struct checked_stream {
  struct ArrowArrayStream* inner;
  const struct sluice_allocator* alloc;
  int (*cancelled)(void* user);
  void* cancelled_user;
  struct ArrowSchema schema;  ///< the inner stream's, read once (copies handed out)
  /// The inner stream's schema as it came, when it has decimal32/64 nodes
  /// (`schema` says decimal128 for them and batches are widened to match).
  struct ArrowSchema narrow;
  int64_t batches;            ///< batches handed on so far
  int64_t rows;               ///< and their rows
  struct sluice_error error;  ///< the last failure, for get_last_error
};

// A copy of the schema read at init: the caller's stream is asked once (some
// producers allow no more), and batches are checked against what the writer
// walks them by.
static int checked_get_schema(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  struct checked_stream* c = stream->private_data;
  c->error.code = 0;
  c->error.message[0] = '\0';
  return sl_schema_copy(&c->schema, c->alloc, out, &c->error);
}

/// 0 when every node of `s` has a type sl_type knows; else its error for
/// the first that has not, naming the column ("column 'a.item': unknown or
/// malformed Arrow format string '_pli128'", a polars Int128): every writer
/// would refuse it, some without saying which column holds it; or an
/// error for nesting deeper than CHECKED_MAX_DEPTH (which also bounds the
/// recursion). `path` is the name so far, `depth` 0 at the root.
static int unknown_type(const struct ArrowSchema* s, const char* path, int depth,
                        struct sluice_error* error) {
  struct sl_type t;
  char here[256];
  if (depth == 0) {
    here[0] = '\0';
  } else {
    snprintf(here, sizeof here, "%s%s%s", path, path[0] != '\0' ? "." : "",
             s->name != NULL ? s->name : "");
  }
  // Said here, before any batch: sl_array_validate would refuse every batch
  // at this depth as if it did not match its schema.
  if (depth > CHECKED_MAX_DEPTH) {
    return sl_error_set(error, ENOTSUP, "column '%s': the input is nested deeper than "
                        "sluice's limit of %d levels", here, CHECKED_MAX_DEPTH);
  }
  if (s->format == NULL) {
    return sl_error_set(error, EINVAL, "column '%s': no Arrow format string", here);
  }
  if (sl_type_parse(s->format, &t, error) != 0) {
    if (here[0] != '\0') sl_error_prefix(error, "column '%s'", here);
    return error->code != 0 ? error->code : EINVAL;
  }
  for (int64_t i = 0; i < s->n_children; ++i) {
    if (s->children == NULL || s->children[i] == NULL) {
      return sl_error_set(error, EINVAL, "column '%s': child %lld is missing", here,
                          (long long)i);
    }
    SL_RETURN_NOT_OK(unknown_type(s->children[i], here, depth + 1, error));
  }
  return s->dictionary == NULL ? 0 : unknown_type(s->dictionary, here, depth + 1, error);
}

/// The first null row of a batch (a struct array) whose own validity marks
/// rows null, else -1. Writers write a batch's columns and never look at
/// the struct's validity, so such rows would be written as whatever the
/// children hold under them; pyarrow refuses to import such a batch too.
/// Called after sl_array_validate: buffers[0] is there if n_buffers is 1.
static int64_t first_null_row(const struct ArrowArray* batch) {
  if (batch->null_count == 0 || batch->n_buffers < 1 || batch->buffers[0] == NULL) return -1;
  for (int64_t i = 0; i < batch->length; ++i) {
    if (!sl_bit_get(batch->buffers[0], batch->offset + i)) return i;
  }
  return -1;  // null_count -1 (not counted) and every row valid
}

/// ECANCELED (the error set) if the write was cancelled, else 0.
static int check_cancelled(struct checked_stream* c) {
  if (c->cancelled == NULL || !c->cancelled(c->cancelled_user)) return 0;
  return sl_error_set(&c->error, ECANCELED, "interrupted");
}

static int checked_get_next(struct ArrowArrayStream* stream, struct ArrowArray* out) {
  struct checked_stream* c = stream->private_data;
  c->error.code = 0;
  c->error.message[0] = '\0';
  out->release = NULL;
  int rc = check_cancelled(c);
  if (rc == 0) rc = c->inner->get_next(c->inner, out);
  // Also after: a signal that came while the source kept us waiting (a
  // pipe) must not let the end of its stream commit the output.
  if (rc == 0 && (rc = check_cancelled(c)) != 0 && out->release != NULL) out->release(out);
  if (rc != 0 || out->release == NULL) return rc;
  if (c->narrow.release != NULL &&
      sl_array_widen_decimals(&c->narrow, out, c->alloc, &c->error) != 0) {
    sl_error_prefix(&c->error, "batch %lld", (long long)c->batches);
    return c->error.code;
  }
  // First the counts of buffers and children and the lengths, per node,
  // which is what a writer walks by; O(columns), not O(values).
  if (sl_array_validate(&c->schema, out, SL_VALIDATE_MINIMAL, NULL, &c->error) != 0) {
    out->release(out);
    sl_error_prefix(&c->error, "batch %lld does not match the stream's schema",
                    (long long)c->batches);
    c->error.code = EINVAL;  // the caller's stream is at fault, not a file
    return EINVAL;
  }
  int64_t null_row = first_null_row(out);
  if (null_row >= 0) {
    out->release(out);
    return sl_error_set(&c->error, EINVAL,
                        "batch %lld, row %lld: the row is null (the batch's struct array has a "
                        "validity bitmap), and a record batch's rows cannot be null: drop or "
                        "fill them first",
                        (long long)c->batches, (long long)(c->rows + null_row));
  }
  // Then the values a writer would pass on as they are: offsets that
  // increase, and string columns' UTF-8 (a JSON writer would turn bad bytes
  // into other text, the Parquet and IPC writers make files that readers,
  // sluice's among them, refuse). One pass over the bytes, 32 a step, and
  // over the offsets where a byte is past ASCII: about 3% of a Parquet
  // write of short accented strings, nothing measurable on ASCII ones.
  if (sl_array_validate_rows(&c->schema, out, SL_VALIDATE_FULL_UTF8, NULL, c->rows,
                             &c->error) != 0) {
    out->release(out);
    sl_error_prefix(&c->error, "batch %lld", (long long)c->batches);
    c->error.code = EINVAL;
    return EINVAL;
  }
  c->batches++;
  c->rows += out->length;
  return 0;
}

static const char* checked_get_last_error(struct ArrowArrayStream* stream) {
  struct checked_stream* c = stream->private_data;
  if (c->error.message[0] != '\0') return c->error.message;
  return c->inner->get_last_error != NULL ? c->inner->get_last_error(c->inner) : NULL;
}

static void checked_release(struct ArrowArrayStream* stream) {
  struct checked_stream* c = stream->private_data;
  if (c->schema.release != NULL) c->schema.release(&c->schema);
  if (c->narrow.release != NULL) c->narrow.release(&c->narrow);
  sl_free(c->alloc, c, sizeof *c);
  stream->release = NULL;
}

int sl_input_error(struct ArrowArrayStream* stream, int rc, struct sluice_error* error) {
  const char* msg = stream->get_last_error != NULL ? stream->get_last_error(stream) : NULL;
  if (msg == NULL || msg[0] == '\0') return sl_error_set(error, rc, "reading the input: %s", strerror(rc));
  // A Python producer's message is a traceback, whose last line names the
  // exception (Python's sluice.write tells a Ctrl-C in the producer by it).
  return sl_error_set_ends(error, rc, "reading the input: ", msg, strlen(msg));
}

int sl_checked_stream_init(struct ArrowArrayStream* inner, const struct sluice_allocator* alloc,
                           int (*cancelled)(void* user), void* cancelled_user,
                           struct ArrowArrayStream* out, struct sluice_error* error) {
  memset(out, 0, sizeof *out);
  struct checked_stream* c = sl_calloc(alloc, 1, sizeof *c);
  if (c == NULL) return sl_error_set(error, ENOMEM, "out of memory");
  c->inner = inner;
  c->alloc = alloc;
  c->cancelled = cancelled;
  c->cancelled_user = cancelled_user;
  int rc = inner->get_schema(inner, &c->schema);
  if (rc != 0) {
    sl_free(alloc, c, sizeof *c);
    return sl_input_error(inner, rc, error);
  }
  if (sl_schema_has_narrow_decimals(&c->schema)) {
    // A copy of our own, whose format strings may be rewritten.
    c->narrow = c->schema;  // a moved root stays valid (C Data Interface)
    c->schema.release = NULL;
    rc = sl_schema_copy(&c->narrow, alloc, &c->schema, error);
    if (rc == 0) sl_schema_widen_decimals(&c->schema);
  }
  if (rc == 0) rc = unknown_type(&c->schema, "", 0, error);
  if (rc != 0) {
    if (c->schema.release != NULL) c->schema.release(&c->schema);
    if (c->narrow.release != NULL) c->narrow.release(&c->narrow);
    sl_free(alloc, c, sizeof *c);
    return rc;
  }
  out->get_schema = checked_get_schema;
  out->get_next = checked_get_next;
  out->get_last_error = checked_get_last_error;
  out->release = checked_release;
  out->private_data = c;
  return 0;
}
