// Scans of part of a dataset: splits [first, first + count), for Dask
// partitions that each read a group of splits inside a worker, and the
// per-split planned row counts sluice.read's gather path places rows by. All
// through the public API (sluice_scanner_open_with, sluice_dataset_split_rows),
// except the engine's slow-split test hook below.
#include <errno.h>
#include <string.h>

#include "_sluice.h"

/// The scan engine's test hook that delays one split (unordered-delivery
/// tests): a library-internal function (src/api/sluice_dataset_internal.h),
/// kept out of the public header on purpose. Declared here rather than included
/// so that the extension builds against include/sluice.h alone; it links the
/// static library, where the symbol is visible.
int sl_scanner_open_slow_split(struct sluice_dataset* dataset,
                               const struct sluice_scan_options* options, int64_t slow_split,
                               int64_t slow_delay_us, struct sluice_scanner** out,
                               struct sluice_error* error);

static int scanner_next(void* handle, struct ArrowArray* out, struct sluice_batch_tag* tag,
                        struct sluice_error* error) {
  return sluice_scanner_next(handle, out, tag, error);
}

static void scanner_close(void* handle) { sluice_scanner_close(handle); }

struct sp_scan_source sp_scanner_source(struct sluice_scanner* scanner) {
  struct sp_scan_source source = {scanner, scanner_next, scanner_close};
  return source;
}

PyObject* sp_split_rows(struct sluice_dataset* dataset) {
  // Where reading a little tells more rows ahead (a local Avro file's block
  // headers), read it: placing splits by their rows is worth that. A failure
  // leaves the counts unknown; the scan then meets and reports it.
  struct sluice_error error;
  Py_BEGIN_ALLOW_THREADS
  (void)sluice_dataset_count_split_rows(dataset, &error);
  Py_END_ALLOW_THREADS
  int64_t n = sluice_dataset_num_splits(dataset);
  PyObject* list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list != NULL && i < n; ++i) {
    PyObject* item = PyLong_FromLongLong((long long)sluice_dataset_split_rows(dataset, i));
    if (item == NULL) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, item);
  }
  return list;
}

int sp_split_scan_start(struct sluice_dataset* dataset, int64_t first, int64_t count,
                        int64_t slow_split, int64_t slow_delay_us, int ordered, int64_t memory,
                        const struct sluice_placement* placement, struct sp_scan_source* out,
                        struct sluice_error* error) {
  struct sluice_scan_options options;
  sluice_scan_options_init(&options);
  options.placement = placement;
  options.first_split = first;
  options.n_splits = count >= 0 ? count : -1;
  options.ordered = ordered >= 0 ? ordered != 0 : -1;
  options.memory_budget = memory > 0 ? memory : 0;
  struct sluice_scanner* scanner = NULL;
  int rc = slow_split >= 0 ? sl_scanner_open_slow_split(dataset, &options, slow_split,
                                                        slow_delay_us, &scanner, error)
                           : sluice_scanner_open_with(dataset, &options, &scanner, error);
  if (rc != 0) return rc;
  *out = sp_scanner_source(scanner);
  return 0;
}
