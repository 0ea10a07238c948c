// Library-internal access to an opened dataset, for code that drives the scan
// engine itself (e.g. parallel aggregates through sl_scan_args.on_batch).
#ifndef SLUICE_DATASET_INTERNAL_H
#define SLUICE_DATASET_INTERNAL_H

#include "sluice.h"
#include "../scan/sl_scan.h"

/// Fills `args` with everything needed to scan `dataset` as its options say
/// (format, reader, splits, projection, threads, budget, order, limit,
/// allocator); on_batch and the test hooks are left empty. The pointers borrow
/// from the dataset: keep it open, or hold a reference (sl_dataset_retain),
/// until sl_scan_stop.
void sl_dataset_scan_args(struct sluice_dataset* dataset, struct sl_scan_args* args);
/// 0, or the error of a refine that left the dataset unscannable (copied
/// into `error`).
int sl_dataset_usable(const struct sluice_dataset* dataset, struct sluice_error* error);
/// 0, or ENOTSUP naming the first field of the dataset's columns (its
/// projection) of a type a reader describes but cannot read (an Arrow IPC
/// run-end encoded or list-view field): a scan fails on it before handing
/// out the schema, while a projection that leaves such columns out reads.
int sl_dataset_readable(const struct sluice_dataset* dataset, struct sluice_error* error);

/// A failed call's message on `dataset`, led by its location unless it
/// names it or one of its objects already (an allocation's, the scan
/// engine's and some readers' messages name none); returns rc.
int sl_dataset_name_error(const struct sluice_dataset* dataset, int rc,
                          struct sluice_error* error);

/// Reference counting of the dataset internals: sluice_dataset_close drops
/// the handle's reference, scans hold their own.
void sl_dataset_retain(struct sluice_dataset* dataset);
void sl_dataset_release(struct sluice_dataset* dataset);

/// The allocator the dataset was opened with (never NULL).
const struct sluice_allocator* sl_dataset_allocator(const struct sluice_dataset* dataset);
/// Its cache of freed buffers (NULL when opened with a caller's allocator).
struct sluice_buffer_cache* sl_dataset_buffer_cache(const struct sluice_dataset* dataset);
/// The location the dataset was opened from, for error messages.
const char* sl_dataset_location(const struct sluice_dataset* dataset);

/// A scanner (opened in sluice_scan_range.c): the engine numbers the splits it
/// was given from 0, so tags get first_split added back.
struct sluice_scanner {
  struct sluice_dataset* dataset;  // a reference of our own
  struct sl_scan* scan;
  int64_t first_split;
};

/// sluice_scanner_open_with plus the scan engine's test hook: split
/// `slow_split` (dataset numbering, -1 = none) waits `slow_delay_us` before it
/// is decoded. Not public: only the unordered-delivery tests use it, through
/// python/sluice/_sluice_splits.c, which repeats this prototype (keep in step).
int sl_scanner_open_slow_split(struct sluice_dataset* dataset,
                               const struct sluice_scan_options* options, int64_t slow_split,
                               int64_t slow_delay_us, struct sluice_scanner** out,
                               struct sluice_error* error);

#endif
