// The _Dataset and _Scanner types: sluice_dataset_open with the options of
// sluice.read / sluice.scan, and a scan that yields tagged batches. The GIL
// is released while the library opens, plans and waits for batches; a wait
// for a batch is cut into short slices between which signals are checked, so
// Ctrl-C stops a scan at once (its thread then closes the scanner, which
// stops the workers and frees the batches in flight). Opening polls
// signals too (open_cancelled), for a source that keeps it waiting.
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "_sluice.h"

static void dataset_dealloc(DatasetObject* self) {
  if (self->dataset != NULL) {
    struct sluice_dataset* ds = self->dataset;
    self->dataset = NULL;
    Py_BEGIN_ALLOW_THREADS
    sluice_dataset_close(ds);
    Py_END_ALLOW_THREADS
  }
  Py_XDECREF(self->schema);
  PyObject_Free(self);
}

static int dataset_check_open(DatasetObject* self) {
  if (self->dataset != NULL) return 0;
  PyErr_SetString(PyExc_ValueError, "the dataset is closed");
  return -1;
}

/// The cancel hook of an open (sluice_open_options.cancelled) run with the
/// GIL released: on the opening thread it takes the GIL back for a moment
/// and runs the signal handlers, so Ctrl-C stops an open that waits on a
/// pipe or a slow server; the KeyboardInterrupt stays set for the caller.
/// sluice's own threads only read the flag.
struct open_cancel {
  pthread_t opener;
  PyThreadState* saved;  ///< the opener's, while it runs without the GIL
  atomic_int interrupted;
};

static int open_cancelled(void* user) {
  struct open_cancel* c = user;
  if (atomic_load(&c->interrupted)) return 1;
  if (!pthread_equal(pthread_self(), c->opener)) return 0;
  PyEval_RestoreThread(c->saved);
  int raised = PyErr_CheckSignals() != 0;
  c->saved = PyEval_SaveThread();
  if (raised) atomic_store(&c->interrupted, 1);
  return raised;
}

static int sp_finalizing(void) {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/// A Python object's buffer that a memory dataset reads in place: given back
/// (with the GIL) when sluice lets go of the bytes, possibly on a worker
/// thread, possibly after the dataset object is gone.
struct held_buffer {
  Py_buffer view;
};

static void release_held_buffer(void* ctx) {
  struct held_buffer* h = ctx;
  // At interpreter exit a thread cannot take the GIL: the bytes go with
  // the process.
  if (!Py_IsInitialized() || sp_finalizing()) return;
  PyGILState_STATE gil = PyGILState_Ensure();
  PyBuffer_Release(&h->view);
  PyMem_RawFree(h);
  PyGILState_Release(gil);
}

/// sluice_dataset_open_memory over `object`'s buffer (bytes, bytearray,
/// memoryview, a BytesIO's getbuffer(), numpy arrays of bytes ...).
static int open_buffer(PyObject* object, const struct sluice_open_options* options,
                       struct sluice_dataset** ds, struct sluice_error* error) {
  struct held_buffer* h = PyMem_RawCalloc(1, sizeof *h);
  if (h == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  if (PyObject_GetBuffer(object, &h->view, PyBUF_C_CONTIGUOUS) != 0) {
    PyMem_RawFree(h);
    return -1;
  }
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = sluice_dataset_open_memory(h->view.buf, (size_t)h->view.len, "<bytes>",
                                  release_held_buffer, h, options, ds, error);
  Py_END_ALLOW_THREADS
  return rc;
}

static PyObject* dataset_wrap(struct sluice_dataset* ds);

PyObject* sp_open(PyObject* Py_UNUSED(module), PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"location", "format", "columns", "threads", "ordered", "limit",
                             "batch_rows", "memory", "format_options", "hive_partitioning",
                             "partition_filter", "ca_bundle", "insecure", "s3", "timeout", "filter",
                             "union_by_name", NULL};
  PyObject* location;  // a str, or a list of str (sluice_dataset_open_many)
  const char* format = NULL;
  PyObject* columns = Py_None;
  int threads = 0, ordered = 1, hive = 1, union_by_name = 0;
  long long limit = -1, batch_rows = 0, memory = 0;
  PyObject* options_text = Py_None;  // str or os.fsencode's bytes (paths in it need not be UTF-8)
  const char* format_options = NULL;
  const char* partition_filter = NULL;
  const char* filter = NULL;
  PyObject* ca_bundle_path = Py_None;  // likewise
  const char* ca_bundle = NULL;
  int insecure = 0;
  PyObject* s3_dict = Py_None;
  double timeout = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|zOipLLLOpzOpOdzp", keywords, &location,
                                   &format, &columns, &threads, &ordered, &limit, &batch_rows,
                                   &memory, &options_text, &hive, &partition_filter,
                                   &ca_bundle_path, &insecure, &s3_dict, &timeout, &filter,
                                   &union_by_name)) {
    return NULL;
  }
  if (sp_c_string_or_none(options_text, "format_options", &format_options) != 0 ||
      sp_c_string_or_none(ca_bundle_path, "ca_bundle", &ca_bundle) != 0) {
    return NULL;
  }
  struct sluice_s3_options s3;
  if (sp_s3_options(s3_dict, &s3) != 0) return NULL;
  if (threads < 0 || batch_rows < 0 || memory < 0 || limit < -1) {
    PyErr_SetString(PyExc_ValueError,
                    "threads, batch_rows and memory must be >= 0 and limit >= 0 or None");
    return NULL;
  }
  struct sluice_open_options options;
  sluice_open_options_init(&options);
  options.allocator = sp_allocator();
  options.format = format;
  options.threads = threads;
  options.ordered = ordered;
  options.limit = limit;
  options.batch_size = batch_rows;
  if (memory > 0) options.memory_budget = memory;
  options.format_options = format_options;
  options.hive_partitioning = hive;
  options.union_by_name = union_by_name;
  options.partition_filter = partition_filter;
  options.filter = filter;
  options.ca_bundle = ca_bundle;
  options.tls_insecure = insecure;
  options.timeout_s = timeout;
  options.s3 = s3_dict != Py_None ? &s3 : NULL;  // its strings live in s3_dict

  PyObject* names = NULL;  // keeps the UTF-8 of each column name alive
  const char** column_names = NULL;
  if (columns != Py_None) {
    names = PySequence_Fast(columns, "columns must be a sequence of str");
    if (names == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(names);
    column_names = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *column_names);
    if (column_names == NULL) {
      Py_DECREF(names);
      return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(names, i);
      column_names[i] = sp_c_string(item, "a column name");
      if (column_names[i] == NULL) {
        PyMem_Free(column_names);
        Py_DECREF(names);
        return NULL;
      }
    }
    options.columns = column_names;
    options.n_columns = (size_t)n;
  }

  struct sluice_dataset* ds = NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc;
  if (PyObject_CheckBuffer(location)) {  // bytes in memory, read in place
    rc = open_buffer(location, &options, &ds, &error);
    PyMem_Free(column_names);
    Py_XDECREF(names);
    if (rc < 0) return NULL;
    if (rc != 0 && error.code == 0) error.code = rc;
    return rc != 0 ? sp_raise_error(&error) : dataset_wrap(ds);
  }
  // The location(s) as os.fsencode gives them (a path need not be UTF-8),
  // kept alive by `where`.
  PyObject* given = PyUnicode_Check(location) ? PyTuple_Pack(1, location)
                                              : PySequence_Tuple(location);
  Py_ssize_t n_where = given != NULL ? PyTuple_GET_SIZE(given) : 0;
  PyObject* where = given != NULL ? PyTuple_New(n_where) : NULL;
  const char** paths = where != NULL && n_where > 0 ? PyMem_Calloc((size_t)n_where, sizeof *paths)
                                                    : NULL;
  for (Py_ssize_t i = 0; paths != NULL && i < n_where; ++i) {
    PyObject* item = PyTuple_GET_ITEM(given, i);
    PyObject* encoded = PyUnicode_Check(item) ? PyUnicode_EncodeFSDefault(item) : NULL;
    if (encoded != NULL) PyTuple_SET_ITEM(where, i, encoded);
    paths[i] = encoded != NULL ? sp_c_string(encoded, "a location") : NULL;
    if (paths[i] == NULL) {
      PyMem_Free(paths);
      paths = NULL;
    }
  }
  Py_XDECREF(given);
  if (paths == NULL) {
    if (!PyErr_Occurred()) {
      PyErr_SetString(PyExc_TypeError, "location must be a str or a non-empty list of str");
    }
    Py_XDECREF(where);
    PyMem_Free(column_names);
    Py_XDECREF(names);
    return NULL;
  }
  int many = !PyUnicode_Check(location);
  struct open_cancel cancel = {.opener = pthread_self()};
  atomic_init(&cancel.interrupted, 0);
  options.cancelled = open_cancelled;
  options.cancelled_user = &cancel;
  cancel.saved = PyEval_SaveThread();
  rc = many ? sluice_dataset_open_many(paths, (size_t)n_where, &options, &ds, &error)
            : sluice_dataset_open(paths[0], &options, &ds, &error);
  PyEval_RestoreThread(cancel.saved);
  PyMem_Free(paths);
  Py_DECREF(where);
  PyMem_Free(column_names);
  Py_XDECREF(names);
  if (atomic_load(&cancel.interrupted)) {  // the KeyboardInterrupt is set
    if (rc == 0) {
      Py_BEGIN_ALLOW_THREADS
      sluice_dataset_close(ds);
      Py_END_ALLOW_THREADS
    }
    return NULL;
  }
  if (rc != 0) {
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  return dataset_wrap(ds);
}

/// A Dataset object owning `ds` (closed on failure).
static PyObject* dataset_wrap(struct sluice_dataset* ds) {
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct ArrowSchema schema;
  int rc = sluice_dataset_schema(ds, &schema, &error);
  if (rc != 0) {
    sluice_dataset_close(ds);
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  DatasetObject* self = PyObject_New(DatasetObject, &SpDatasetType);
  if (self == NULL) {
    schema.release(&schema);
    sluice_dataset_close(ds);
    return NULL;
  }
  self->dataset = ds;
  self->schema = sp_schema_wrap(&schema);
  if (self->schema == NULL) {
    Py_DECREF(self);
    return NULL;
  }
  return (PyObject*)self;
}

static PyObject* dataset_schema(DatasetObject* self, PyObject* Py_UNUSED(ignored)) {
  Py_INCREF(self->schema);
  return (PyObject*)self->schema;
}

/// Every column's type, projected or not: those a filter may name (the
/// Python layer checks its filters' values against them).
static PyObject* dataset_full_schema(DatasetObject* self, PyObject* Py_UNUSED(ignored)) {
  if (dataset_check_open(self) != 0) return NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  struct ArrowSchema schema;
  int rc = sluice_dataset_full_schema(self->dataset, &schema, &error);
  if (rc != 0) {
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  return (PyObject*)sp_schema_wrap(&schema);
}

static PyObject* dataset_is_partition_key(DatasetObject* self, PyObject* name) {
  if (dataset_check_open(self) != 0) return NULL;
  const char* column = PyUnicode_AsUTF8(name);
  if (column == NULL) return NULL;
  return PyBool_FromLong(sluice_dataset_is_partition_key(self->dataset, column));
}

static PyObject* dataset_type_inferred(DatasetObject* self, PyObject* name) {
  if (dataset_check_open(self) != 0) return NULL;
  const char* column = PyUnicode_AsUTF8(name);
  if (column == NULL) return NULL;
  return PyBool_FromLong(sluice_dataset_type_inferred(self->dataset, column));
}

static PyObject* dataset_get_format(DatasetObject* self, void* Py_UNUSED(closure)) {
  if (dataset_check_open(self) != 0) return NULL;
  return PyUnicode_FromString(sluice_dataset_format(self->dataset));
}

static PyObject* dataset_get_num_splits(DatasetObject* self, void* Py_UNUSED(closure)) {
  if (dataset_check_open(self) != 0) return NULL;
  return PyLong_FromLongLong(sluice_dataset_num_splits(self->dataset));
}

static PyObject* dataset_split_rows(DatasetObject* self, PyObject* Py_UNUSED(ignored)) {
  if (dataset_check_open(self) != 0) return NULL;
  return sp_split_rows(self->dataset);
}

static PyObject* dataset_scan(DatasetObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"first_split", "num_splits", "slow_split", "slow_split_delay_us",
                             "ordered", "memory", "placement", "split_rows", NULL};
  long long first = 0, count = -1, slow_split = -1, slow_us = 0, memory = 0;
  int ordered = -1;  // -1: as the dataset was opened
  PyObject* gather = NULL;
  PyObject* split_rows = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|LLLLiLOO", keywords, &first, &count,
                                   &slow_split, &slow_us, &ordered, &memory, &gather,
                                   &split_rows)) {
    return NULL;
  }
  if (dataset_check_open(self) != 0) return NULL;
  // A placed scan decodes into the _Gather's columns (rows per split given).
  struct sp_placement placement;
  memset(&placement, 0, sizeof placement);
  int placed = gather != NULL && gather != Py_None;
  int64_t n_all = sluice_dataset_num_splits(self->dataset);
  int64_t n_scan = count >= 0 ? count : n_all - first;  // a bad range: the library says so
  if (placed && (split_rows == NULL ||
                 sp_gather_placement(gather, split_rows, n_scan, &placement) != 0)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "placement needs split_rows");
    return NULL;
  }
  struct sp_scan_source source;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc;
  int whole = first == 0 && count < 0 && slow_split < 0 && ordered < 0 && memory <= 0 && !placed;
  Py_BEGIN_ALLOW_THREADS
  if (whole) {
    struct sluice_scanner* scanner = NULL;
    rc = sluice_scanner_open(self->dataset, &scanner, &error);
    if (rc == 0) source = sp_scanner_source(scanner);
  } else {
    rc = sp_split_scan_start(self->dataset, first, count, slow_split, slow_us, ordered, memory,
                             placed ? &placement.placement : NULL, &source, &error);
  }
  Py_END_ALLOW_THREADS
  sp_placement_free(&placement);  // the library copied it (and releases the hold)
  if (rc != 0) {
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  struct sp_pump* pump = NULL;
  rc = sp_pump_start(&source, &pump);
  if (rc != 0) {
    source.close(source.handle);
    return sp_raise(rc, "sluice: cannot start the scan's thread");
  }
  ScannerObject* scan = PyObject_New(ScannerObject, &SpScannerType);
  if (scan == NULL) {
    sp_pump_cancel(pump);
    return NULL;
  }
  scan->pump = pump;
  scan->state = SP_SCAN_RUNNING;
  Py_INCREF(self);
  scan->dataset = self;
  Py_INCREF(self->schema);
  scan->schema = self->schema;
  return (PyObject*)scan;
}

static PyObject* dataset_refine(DatasetObject* self, PyObject* Py_UNUSED(ignored)) {
  if (dataset_check_open(self) != 0) return NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int changed = 0;
  int rc = sluice_dataset_refine(self->dataset, &changed, &error);
  struct ArrowSchema schema;
  if (rc == 0 && changed) rc = sluice_dataset_schema(self->dataset, &schema, &error);
  if (rc != 0) {
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  if (changed) {  // scans from here on have the wider schema
    SchemaObject* wider = sp_schema_wrap(&schema);
    if (wider == NULL) return NULL;
    SchemaObject* old = self->schema;
    self->schema = wider;
    Py_DECREF(old);
  }
  return PyBool_FromLong(changed);
}

static PyObject* dataset_stats(DatasetObject* self, PyObject* Py_UNUSED(ignored)) {
  if (dataset_check_open(self) != 0) return NULL;
  struct sluice_column_stats* stats = NULL;
  int64_t n = 0;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = sluice_dataset_stats(self->dataset, &stats, &n, &error);
  Py_END_ALLOW_THREADS
  // Stats read a CSV again when a column widens (sluice_dataset_refine):
  // the schema the figures are of may be wider than the one kept.
  struct ArrowSchema schema;
  if (rc == 0) rc = sluice_dataset_schema(self->dataset, &schema, &error);
  if (rc != 0) {
    sluice_stats_free(stats, n);
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  SchemaObject* now = sp_schema_wrap(&schema);
  if (now == NULL) {
    sluice_stats_free(stats, n);
    return NULL;
  }
  Py_SETREF(self->schema, now);
  PyObject* list = PyList_New((Py_ssize_t)n);
  for (int64_t i = 0; list != NULL && i < n; ++i) {
    const struct sluice_column_stats* s = &stats[i];
    // min / max may hold U+0000: built from their lengths, not as C strings.
    PyObject* item = Py_BuildValue(
        "{s:s,s:s,s:L,s:L,s:z#,s:z#,s:s,s:N,s:N}", "name", s->name != NULL ? s->name : "",
        "type", s->type != NULL ? s->type : "", "count", (long long)s->count, "null_count",
        (long long)s->null_count, "min", s->has_min_max ? s->min : NULL,
        (Py_ssize_t)(s->has_min_max ? s->min_len : 0), "max", s->has_min_max ? s->max : NULL,
        (Py_ssize_t)(s->has_min_max ? s->max_len : 0), "source",
        s->from_metadata ? "metadata" : "computed", "min_exact",
        PyBool_FromLong(s->has_min_max && s->min_exact), "max_exact",
        PyBool_FromLong(s->has_min_max && s->max_exact));
    if (item == NULL) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, item);
  }
  sluice_stats_free(stats, n);
  return list;
}

static PyObject* dataset_close(DatasetObject* self, PyObject* Py_UNUSED(ignored)) {
  if (self->dataset != NULL) {
    struct sluice_dataset* ds = self->dataset;
    self->dataset = NULL;
    Py_BEGIN_ALLOW_THREADS
    sluice_dataset_close(ds);
    Py_END_ALLOW_THREADS
  }
  Py_RETURN_NONE;
}

static PyGetSetDef dataset_getset[] = {
    {"format", (getter)dataset_get_format, NULL, "The format the dataset is read as.", NULL},
    {"num_splits", (getter)dataset_get_num_splits, NULL, "Splits the scan plans to read.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef dataset_methods[] = {
    {"schema", (PyCFunction)dataset_schema, METH_NOARGS, "The (projected) _Schema."},
    {"full_schema", (PyCFunction)dataset_full_schema, METH_NOARGS,
     "The _Schema of every column, projected or not (those a filter may name)."},
    {"is_partition_key", (PyCFunction)dataset_is_partition_key, METH_O,
     "is_partition_key(name) -> whether column `name` comes from key=value directories."},
    {"type_inferred", (PyCFunction)dataset_type_inferred, METH_O,
     "type_inferred(name) -> whether column `name`'s type was inferred from a sample and a "
     "later value may still widen it (refine)."},
    {"scan", (PyCFunction)(void (*)(void))dataset_scan, METH_VARARGS | METH_KEYWORDS,
     "scan(first_split=0, num_splits=-1, slow_split=-1, slow_split_delay_us=0, ordered=-1, "
     "memory=0, placement=None, split_rows=None) -> _Scanner over all splits or splits "
     "[first, first + num); slow_split delays one (a test hook); placement, a _Gather with "
     "room for sum(split_rows), lets readers decode straight into its columns."},
    {"stats", (PyCFunction)dataset_stats, METH_NOARGS, "Per-column statistics (list of dict)."},
    {"refine", (PyCFunction)dataset_refine, METH_NOARGS,
     "After a failed scan: True when a value that did not fit a column's inferred type "
     "widened it (scan again), False when the error stands."},
    {"split_rows", (PyCFunction)dataset_split_rows, METH_NOARGS,
     "Rows each split is planned to hold (-1 = not known ahead), in plan order."},
    {"close", (PyCFunction)dataset_close, METH_NOARGS, "Close the dataset (scans stay valid)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject SpDatasetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._Dataset",
    .tp_basicsize = sizeof(DatasetObject),
    .tp_dealloc = (destructor)dataset_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An opened dataset (see sluice.read / sluice.scan).",
    .tp_methods = dataset_methods,
    .tp_getset = dataset_getset,
};

/* ---- _Scanner --------------------------------------------------------------- */

/// Ends the scan, saying why (the first reason stays): a thread waiting for
/// a batch wakes up and reads the state before it returns.
static void scanner_stop(ScannerObject* self, int state) {
  if (self->state == SP_SCAN_RUNNING) self->state = state;
  struct sp_pump* pump = self->pump;
  self->pump = NULL;
  if (pump == NULL) return;
  // Closed now (unless a batch is being made: Ctrl-C must not wait for it),
  // so that what the scan held is let go when close() returns.
  Py_BEGIN_ALLOW_THREADS
  sp_pump_close(pump);
  Py_END_ALLOW_THREADS
}

/// next() on a scan that is over: StopIteration after its end (or after it
/// raised its error), else a ValueError that says why there is no batch,
/// so that a consumer cannot take a closed scan's rows for all of them.
static PyObject* scanner_over(ScannerObject* self) {
  switch (self->state) {
    case SP_SCAN_CLOSED:
      PyErr_SetString(PyExc_ValueError,
                      "the scan was closed (close() or the end of its with block)");
      return NULL;
    case SP_SCAN_INTERRUPTED:
      PyErr_SetString(PyExc_ValueError, "the scan was stopped by Ctrl-C");
      return NULL;
    case SP_SCAN_EXPORTED:
      PyErr_SetString(PyExc_ValueError, "the scan was handed to an Arrow consumer "
                                        "(__arrow_c_stream__): its batches go there");
      return NULL;
    default:
      return NULL;  // StopIteration
  }
}

/// How long one wait for a batch lasts before signals are checked again.
#define SCANNER_WAIT_SLICE_MS 50

static void scanner_dealloc(ScannerObject* self) {
  scanner_stop(self, SP_SCAN_CLOSED);
  Py_XDECREF(self->schema);
  Py_XDECREF(self->dataset);
  PyObject_Free(self);
}

static PyObject* scanner_next(ScannerObject* self) {
  struct ArrowArray out;
  struct sluice_batch_tag tag;
  struct sluice_error error;
  memset(&tag, 0, sizeof tag);
  memset(&error, 0, sizeof error);
  out.release = NULL;
  int rc;
  for (;;) {
    // Another Python thread may have closed the scan while we waited.
    struct sp_pump* pump = self->pump;
    if (pump == NULL) return scanner_over(self);
    Py_BEGIN_ALLOW_THREADS
    rc = sp_pump_next(pump, &out, &tag, &error, SCANNER_WAIT_SLICE_MS);
    Py_END_ALLOW_THREADS
    if (rc == ECANCELED) {  // ended by another thread: closed, or its end taken there
      if (self->state == SP_SCAN_FAILED) {
        PyErr_SetString(PyExc_ValueError, "the scan failed in another thread");
        return NULL;
      }
      return scanner_over(self);
    }
    if (rc != ETIMEDOUT) break;
    // Ctrl-C while waiting: give the scan up; its thread frees it.
    if (PyErr_CheckSignals() != 0) {
      scanner_stop(self, SP_SCAN_INTERRUPTED);
      return NULL;
    }
  }
  if (rc != 0) {
    scanner_stop(self, SP_SCAN_FAILED);
    if (error.code == 0) error.code = rc;
    return sp_raise_error(&error);
  }
  if (out.release == NULL) {
    scanner_stop(self, SP_SCAN_ENDED);
    return NULL;
  }
  if (PyErr_CheckSignals() != 0) {
    out.release(&out);
    scanner_stop(self, SP_SCAN_INTERRUPTED);
    return NULL;
  }
  // The tag's metadata stays valid until the pump's next call, which waits
  // for our next request: the batch copies it now.
  struct sp_shared_array* shared = sp_shared_new(&out);
  if (shared == NULL) {
    out.release(&out);
    scanner_stop(self, SP_SCAN_FAILED);
    return PyErr_NoMemory();
  }
  return (PyObject*)sp_batch_wrap(shared, self->schema, tag.split, tag.batch, tag.metadata);
}

static PyObject* scanner_close(ScannerObject* self, PyObject* Py_UNUSED(ignored)) {
  scanner_stop(self, SP_SCAN_CLOSED);
  Py_RETURN_NONE;
}

// The rest of the scan as one 'arrow_array_stream' capsule: the stream takes
// the pump over, so the scanner ends here whatever the consumer does.
static PyObject* scanner_arrow_c_stream(ScannerObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"requested_schema", NULL};
  PyObject* requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", keywords, &requested)) return NULL;
  if (self->pump == NULL) {
    if (scanner_over(self) == NULL && !PyErr_Occurred()) {
      PyErr_SetString(PyExc_ValueError, "the scan was already consumed");
    }
    return NULL;
  }
  struct ArrowArrayStream stream;
  if (sp_pump_stream(self->pump, &self->schema->schema, &stream) != 0) return PyErr_NoMemory();
  self->pump = NULL;
  self->state = SP_SCAN_EXPORTED;
  return sp_stream_capsule_from(&stream);
}

static PyObject* scanner_iter(PyObject* self) {
  Py_INCREF(self);
  return self;
}

static PyMethodDef scanner_methods[] = {
    {"close", (PyCFunction)scanner_close, METH_NOARGS,
     "Stop the workers and free batches in flight (batches returned stay valid); next() "
     "then raises ValueError, also in a thread waiting for a batch."},
    {"__arrow_c_stream__", (PyCFunction)(void (*)(void))scanner_arrow_c_stream,
     METH_VARARGS | METH_KEYWORDS,
     "__arrow_c_stream__(requested_schema=None) -> the batches not yet taken, as an "
     "'arrow_array_stream' capsule; the scanner is consumed."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject SpScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._Scanner",
    .tp_basicsize = sizeof(ScannerObject),
    .tp_dealloc = (destructor)scanner_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A running scan: iterate for _Batch objects as they are ready.",
    .tp_iter = scanner_iter,
    .tp_iternext = (iternextfunc)scanner_next,
    .tp_methods = scanner_methods,
};
