// Sinks: where written bytes go. A file sink writes to a temporary file in the
// target's directory and renames it over the target on commit, so an error
// leaves nothing half-written and an existing file undamaged.
#ifndef SL_SINK_H
#define SL_SINK_H

#include <stdint.h>

#include "sluice.h"

struct sl_sink;

/// Opens a sink for `location` (a path or "-" for standard output).
int sl_sink_open(const char* location, const struct sluice_allocator* alloc,
                 struct sl_sink** out, struct sluice_error* error);
/// Appends bytes (buffered).
int sl_sink_write(struct sl_sink* sink, const void* data, int64_t n, struct sluice_error* error);
/// Bytes written so far (the current offset; IPC file footers need it).
int64_t sl_sink_position(const struct sl_sink* sink);
/// Flushes, fsyncs nothing, renames into place, frees the sink.
int sl_sink_commit(struct sl_sink* sink, struct sluice_error* error);
/// Removes the temporary file, frees the sink. NULL-safe.
void sl_sink_abort(struct sl_sink* sink);

#endif
