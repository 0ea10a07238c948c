// The scan engine: format-agnostic. Runs a reader's splits on a thread pool,
// keeps decoded bytes in flight under a budget, applies projection and limit,
// and delivers batches in plan order or as they finish, tagged with their
// (split, batch) position.
#ifndef SL_SCAN_H
#define SL_SCAN_H

#include <stdint.h>

#include "sluice.h"
#include "../format/sl_format.h"

/// A placed scan's memory (a checked sluice_placement): see struct
/// sl_split_place, which the scan derives from it per file column.
struct sl_scan_placement {
  const struct sluice_placement* user;  ///< per projected column (args.columns)
  struct sl_ref* owner;  ///< calls user->release; retained by the scan and by arrays over it
};

struct sl_scan_args {
  const struct sl_format_reader* format;
  void* reader;                    ///< borrowed; must outlive the scan
  const struct sl_split* splits;   ///< borrowed; copied by sl_scan_start
  int64_t n_splits;
  const int64_t* columns;          ///< projection (NULL = all); copied
  int64_t n_columns;
  const struct ArrowSchema* schema;///< full schema (for byte accounting)
  int threads;                     ///< 0 = one per core
  int64_t memory_budget;           ///< bytes in flight; 0 = default
  int ordered;
  /// -1 = none. The last batch is cut by shortening the top-level struct;
  /// once decoded rows are sure to fill the limit, workers stop decoding.
  int64_t limit;
  const struct sluice_allocator* alloc;
  /// Optional: called on the worker thread for every decoded (projected)
  /// batch before it is queued; a non-zero return fails the scan. Used for
  /// parallel aggregates (stats).
  int (*on_batch)(void* ctx, const struct ArrowArray* batch, struct sluice_error* error);
  void* on_batch_ctx;
  /// Optional: decode straight into the caller's columns (NULL = none).
  const struct sl_scan_placement* placement;
  /// Optional: only rows passing this filter (conditions on columns of
  /// `schema`, which must be given) are delivered; columns it needs beyond
  /// the projection are decoded and dropped after it. Borrowed: outlives
  /// the scan. Not with `placement`.
  const struct sl_row_filter* filter;
  /// Optional (with `columns`): per asked column NULL, or a struct field
  /// under it that the column becomes ({depth, child index per level}, as
  /// sl_array_struct_field). Borrowed: outlives the scan. Placement skips
  /// such columns.
  const int64_t* const* paths;
  /// Test hook: delay in microseconds before decoding split `slow_split`.
  int64_t slow_split;              ///< -1 = none
  int64_t slow_split_delay_us;
};

struct sl_scan;

int sl_scan_start(const struct sl_scan_args* args, struct sl_scan** out,
                  struct sluice_error* error);
/// Next batch (0 with out->release == NULL at the end).
int sl_scan_next(struct sl_scan* scan, struct ArrowArray* out, struct sluice_batch_tag* tag,
                 struct sluice_error* error);
/// Stops workers (waking any that wait on the budget), frees the scan.
void sl_scan_stop(struct sl_scan* scan);

/// Test/introspection: the largest number of bytes that was in flight at once.
int64_t sl_scan_peak_in_flight(const struct sl_scan* scan);

#endif
