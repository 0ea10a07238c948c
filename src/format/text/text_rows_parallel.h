// Spelling a batch's rows on all cores: the rows are cut into one range per
// core, each range is spelled into its own buffer on its own thread (the
// caller's thread takes one), and the buffers go to the sink in row order,
// so the output is the one a single thread would write. Spelling values as
// text is most of a text writer's work, and the scan that feeds it is
// already parallel. With helpers, a flusher thread writes one batch's text
// to the sink while the next batch is spelled (two sets of buffers).
#ifndef SL_TEXT_ROWS_PARALLEL_H
#define SL_TEXT_ROWS_PARALLEL_H

#include <stdint.h>

#include "sluice.h"
#include "core/sl_value_text.h"
#include "io/sl_sink.h"

/// Spells rows [begin, end) of `batch` into `out` (appending). `part` (0 ..
/// parts - 1) tells apart the threads, for per-thread scratch.
typedef int (*sl_text_spell_rows)(void* ctx, int part, const struct sl_text_field* row,
                                  const struct ArrowArray* batch, int64_t begin, int64_t end,
                                  struct sl_text* out, struct sluice_error* error);

struct sl_text_rows_pool;

/// Starts up to `max_parts` - 1 helper threads (one per core beyond the
/// caller's; none on one core). *parts gets how many parts batches are cut
/// into (>= 1). ENOMEM only: a thread that does not start means fewer parts.
int sl_text_rows_pool_start(const struct sluice_allocator* alloc, int max_parts,
                            sl_text_spell_rows spell, void* ctx,
                            struct sl_text_rows_pool** pool, int* parts,
                            struct sluice_error* error);

/// Spells all rows of `batch` and writes them to `sink` in order (maybe
/// after it returns: the batch is no longer needed then, but the sink must
/// not be written by anyone else until sl_text_rows_pool_finish). The first
/// error of any part (in row order), or of an earlier batch's write, is
/// returned.
int sl_text_rows_pool_write(struct sl_text_rows_pool* pool, const struct sl_text_field* row,
                            const struct ArrowArray* batch, struct sl_sink* sink,
                            struct sluice_error* error);

/// After the last sl_text_rows_pool_write, whose outcome was `rc`: waits
/// until every batch's text is in the sink. Returns `rc` when it is an error
/// (leaving `error` as it is), else the first write error, else 0.
int sl_text_rows_pool_finish(struct sl_text_rows_pool* pool, int rc, struct sluice_error* error);

/// Joins the threads and frees the pool (text not yet written is dropped:
/// call sl_text_rows_pool_finish first to keep it). NULL-safe.
void sl_text_rows_pool_stop(struct sl_text_rows_pool* pool);

#endif
