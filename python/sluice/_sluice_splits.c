// Scans of part of a dataset: splits [first, first + count), for Dask
// partitions that each read a group of splits inside a worker, and the scan
// engine's test hook that delays one split (unordered-delivery tests). The
// public API scans all splits only, so this drives the library's internal
// scan engine (src/scan/sl_scan.h, src/api/sluice_dataset_internal.h); the
// extension links the static library, where those symbols are visible.
#include <errno.h>
#include <string.h>

#include "_sluice.h"
#include "api/sluice_dataset_internal.h"
#include "core/sl_error.h"

static int scanner_next(void* handle, struct ArrowArray* out, struct sluice_batch_tag* tag,
                        struct sluice_error* error) {
  return sluice_scanner_next(handle, out, tag, error);
}

static void scanner_close(void* handle) { sluice_scanner_close(handle); }

struct sp_scan_source sp_scanner_source(struct sluice_scanner* scanner) {
  struct sp_scan_source source = {scanner, scanner_next, scanner_close};
  return source;
}

struct split_scan {
  struct sluice_dataset* dataset;  // a reference of our own
  struct sl_scan* scan;
  int64_t first;
};

static int split_scan_next(void* handle, struct ArrowArray* out, struct sluice_batch_tag* tag,
                           struct sluice_error* error) {
  struct split_scan* s = handle;
  int rc = sl_scan_next(s->scan, out, tag, error);
  // The engine numbers the splits it was given from 0.
  if (rc == 0 && tag != NULL) tag->split += s->first;
  return rc;
}

static void split_scan_close(void* handle) {
  struct split_scan* s = handle;
  sl_scan_stop(s->scan);
  sl_dataset_release(s->dataset);
  PyMem_RawFree(s);
}

PyObject* sp_split_rows(struct sluice_dataset* dataset) {
  struct sl_scan_args args;
  sl_dataset_scan_args(dataset, &args);
  PyObject* list = PyList_New((Py_ssize_t)args.n_splits);
  for (int64_t i = 0; list != NULL && i < args.n_splits; ++i) {
    int64_t rows = args.splits[i].est_rows;
    PyObject* item = PyLong_FromLongLong(rows >= 0 ? (long long)rows : -1);
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
                        struct sp_scan_source* out, struct sluice_error* error) {
  int64_t n = sluice_dataset_num_splits(dataset);
  if (first < 0 || first > n || (count >= 0 && count > n - first)) {
    return sl_error_set(error, EINVAL, "splits %lld..%lld out of range: the dataset has %lld",
                        (long long)first, (long long)(count >= 0 ? first + count : n),
                        (long long)n);
  }
  struct split_scan* s = PyMem_RawCalloc(1, sizeof *s);
  if (s == NULL) return sl_error_set(error, ENOMEM, "out of memory starting a scan");
  struct sl_scan_args args;
  sl_dataset_scan_args(dataset, &args);
  args.splits += first;
  args.n_splits = count >= 0 ? count : n - first;
  int in_range = slow_split >= first && slow_split < first + args.n_splits;
  args.slow_split = in_range ? slow_split - first : -1;
  args.slow_split_delay_us = slow_delay_us;
  if (ordered >= 0) args.ordered = ordered != 0;
  if (memory > 0) args.memory_budget = memory;
  int rc = sl_scan_start(&args, &s->scan, error);
  if (rc != 0) {
    PyMem_RawFree(s);
    return rc;
  }
  // The engine borrows the reader and splits: keep the dataset alive.
  sl_dataset_retain(dataset);
  s->dataset = dataset;
  s->first = first;
  out->handle = s;
  out->next = split_scan_next;
  out->close = split_scan_close;
  return 0;
}
