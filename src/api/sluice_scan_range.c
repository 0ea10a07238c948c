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
  if (args.filter != NULL) return -1;  // rows the filter drops are unknown until decoded
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

/// The reference that calls the caller's release when the scan and the last
/// array over its memory are done.
struct placement_owner {
  struct sl_ref ref;  // first
  void (*release)(void* ctx);
  void* ctx;
  const struct sluice_allocator* alloc;
};

static void placement_owner_destroy(struct sl_ref* ref) {
  struct placement_owner* o = (struct placement_owner*)ref;
  if (o->release != NULL) o->release(o->ctx);
  sl_free(o->alloc, o, sizeof *o);
}

/// Calls the placement's release on a path where no owner took it over
/// (the library calls it exactly once, also when opening fails).
static void release_placement(const struct sluice_scan_options* options) {
  if (options != NULL && options->placement != NULL && options->placement->release != NULL)
    options->placement->release(options->placement->ctx);
}

/// Checks a sluice_placement against the scan (one entry per projected
/// column, rows for its splits) and makes the owner that calls its release.
static int make_placement(const char* location, const struct sluice_placement* p,
                          const struct sl_scan_args* args, const struct sluice_allocator* alloc,
                          struct sl_scan_placement* out, struct sluice_error* error) {
  int64_t fields = args->schema != NULL ? args->schema->n_children : 0;
  int64_t projected = args->columns != NULL ? args->n_columns : fields;
  if (p->n_columns != projected || (projected > 0 && (p->values == NULL || p->widths == NULL)) ||
      (args->n_splits > 0 && p->split_rows == NULL)) {
    return sl_error_set(error, EINVAL, "%s: a placement of %lld columns for a scan of %lld",
                        location, (long long)p->n_columns, (long long)projected);
  }
  struct placement_owner* owner = sl_calloc(alloc, 1, sizeof *owner);
  if (owner == NULL)
    return sl_error_set(error, ENOMEM, "%s: out of memory placing a scan", location);
  sl_ref_init(&owner->ref, placement_owner_destroy);
  owner->release = p->release;
  owner->ctx = p->ctx;
  owner->alloc = alloc;
  *out = (struct sl_scan_placement){p, &owner->ref};
  return 0;
}

int sl_scanner_open_slow_split(struct sluice_dataset* dataset,
                               const struct sluice_scan_options* options, int64_t slow_split,
                               int64_t slow_delay_us, struct sluice_scanner** out,
                               struct sluice_error* error) {
  if (out != NULL) *out = NULL;
  if (dataset == NULL || out == NULL) {
    release_placement(options);
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
  int rc = sl_dataset_usable(dataset, error);
  if (rc == 0) rc = sl_dataset_readable(dataset, error);
  if (rc == 0) rc = check_options(location, options, args.n_splits, error);
  if (rc != 0) {
    release_placement(options);
    return rc;
  }
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
  struct sl_scan_placement placement;
  memset(&placement, 0, sizeof placement);
  if (options->placement != NULL) {
    rc = make_placement(location, options->placement, &args, alloc, &placement, error);
    if (rc != 0) {
      release_placement(options);
      return rc;
    }
    args.placement = &placement;
  }
  struct sluice_scanner* scanner = sl_alloc(alloc, sizeof *scanner);
  rc = scanner == NULL
               ? sl_error_set(error, ENOMEM, "%s: out of memory starting a scan", location)
               : sl_scan_start(&args, &scanner->scan, error);
  // The scan copied what it needs and holds the owner (or failed and let go).
  sl_ref_release(placement.owner);
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
  SL_ERROR_OR_SCRATCH(error);
  int rc = sl_scanner_open_slow_split(dataset, options, -1, 0, out, error);
  return sl_dataset_name_error(dataset, rc, error);  // (the engine's messages name none)
}
