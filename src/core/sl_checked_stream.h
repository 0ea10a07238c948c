// A pass-through ArrowArrayStream that validates each batch against the
// stream's schema before handing it on: what writers get from a caller's
// stream (pyarrow, polars, a C program) is input like any other, and a batch
// whose arrays do not match the schema (a string column where the schema
// says int64) would otherwise be read out of its buffers' bounds.
#ifndef SL_CHECKED_STREAM_H
#define SL_CHECKED_STREAM_H

#include "sluice.h"

/// Makes *out read `inner` (which stays the caller's: releasing *out does
/// not release it), failing get_next with EINVAL and a message naming the
/// batch and column when a batch does not match the schema, and with
/// ECANCELED when `cancelled` (optional) returns non-zero before a batch.
/// 0, or an errno (the schema could not be read: its message in *error).
int sl_checked_stream_init(struct ArrowArrayStream* inner, const struct sluice_allocator* alloc,
                           int (*cancelled)(void* user), void* cancelled_user,
                           struct ArrowArrayStream* out, struct sluice_error* error);

/// A writer's input `stream` failed with `rc` (get_schema or get_next): the
/// write's error is "reading the input: " and the stream's own message (a
/// reader's names the object, offset and reason), or strerror(rc). Returns rc.
int sl_input_error(struct ArrowArrayStream* stream, int rc, struct sluice_error* error);

#endif
