// Scanners over a range of a dataset's splits (sluice_scanner_open_with), with
// per-scan overrides of order, memory budget and threads; and the rows each
// split is planned to hold. The whole-dataset scanner is the default range.
#include <errno.h>
#include <string.h>

#include "sluice.h"
#include "core/sl_alloc.h"
#include "core/sl_error.h"
#include "scan/sl_scan.h"
#include "sluice_dataset_internal.h"

void sluice_scan_options_init(struct sluice_scan_options* options) {
  memset(options, 0, sizeof *options);
  options->first_split = 0;
  options->n_splits = -1;
  options->ordered = -1;
  options->memory_budget = 0;
  options->threads = 0;
}

int64_t sluice_dataset_split_rows(struct sluice_dataset* dataset, int64_t split) {
  if (dataset == NULL) return -1;
  struct sl_scan_args args;
  sl_dataset_scan_args(dataset, &args);
  if (split < 0 || split >= args.n_splits) return -1;
  int64_t rows = args.splits[split].est_rows;
  return rows >= 0 ? rows : -1;
}

/// EINVAL unless the options name splits inside the dataset's n_splits and
/// sensible overrides.
static int check_options(const char* location, const struct sluice_scan_options* o,
                         int64_t n_splits, struct sluice_error* error) {
  if (o->first_split < 0 || o->first_split > n_splits || o->n_splits < -1 ||
      (o->n_splits >= 0 && o->n_splits > n_splits - o->first_split)) {
    return sl_error_set(error, EINVAL,
                        "%s: splits from %lld (count %lld) out of range: the dataset has %lld "
                        "splits",
                        location, (long long)o->first_split, (long long)o->n_splits,
                        (long long)n_splits);
  }
  if (o->ordered < -1 || o->ordered > 1) {
    return sl_error_set(error, EINVAL, "%s: ordered is %d; use -1 (as opened), 0 or 1",
                        location, o->ordered);
  }
  if (o->memory_budget < 0 || o->threads < 0) {
    return sl_error_set(error, EINVAL, "%s: negative memory_budget (%lld) or threads (%d)",
                        location, (long long)o->memory_budget, o->threads);
  }
  return 0;
}

int sl_scanner_open_slow_split(struct sluice_dataset* dataset,
                               const struct sluice_scan_options* options, int64_t slow_split,
                               int64_t slow_delay_us, struct sluice_scanner** out,
                               struct sluice_error* error) {
  if (out != NULL) *out = NULL;
  if (dataset == NULL || out == NULL) {
    return sl_error_set(error, EINVAL, "sluice_scanner_open_with: NULL argument");
  }
  struct sluice_scan_options defaults;
  if (options == NULL) {
    sluice_scan_options_init(&defaults);
    options = &defaults;
  }
  const char* location = sl_dataset_location(dataset);
  struct sl_scan_args args;
  sl_dataset_scan_args(dataset, &args);
  SL_RETURN_NOT_OK(check_options(location, options, args.n_splits, error));
  int64_t first = options->first_split;
  int64_t count = options->n_splits >= 0 ? options->n_splits : args.n_splits - first;
  // No offset on an empty plan: its split array may be NULL.
  if (first > 0) args.splits += first;
  args.n_splits = count;
  if (options->ordered >= 0) args.ordered = options->ordered;
  if (options->memory_budget > 0) args.memory_budget = options->memory_budget;
  if (options->threads > 0) args.threads = options->threads;
  if (slow_split >= first && slow_split < first + count) {
    args.slow_split = slow_split - first;
    args.slow_split_delay_us = slow_delay_us;
  }
  const struct sluice_allocator* alloc = sl_dataset_allocator(dataset);
  struct sluice_scanner* scanner = sl_alloc(alloc, sizeof *scanner);
  if (scanner == NULL) {
    return sl_error_set(error, ENOMEM, "%s: out of memory starting a scan", location);
  }
  int rc = sl_scan_start(&args, &scanner->scan, error);
  if (rc != 0) {
    sl_free(alloc, scanner, sizeof *scanner);
    return rc;
  }
  // The engine borrows the reader and the splits: keep the dataset alive.
  sl_dataset_retain(dataset);
  scanner->dataset = dataset;
  scanner->first_split = first;
  *out = scanner;
  return 0;
}

int sluice_scanner_open_with(struct sluice_dataset* dataset,
                             const struct sluice_scan_options* options,
                             struct sluice_scanner** out, struct sluice_error* error) {
  return sl_scanner_open_slow_split(dataset, options, -1, 0, out, error);
}
