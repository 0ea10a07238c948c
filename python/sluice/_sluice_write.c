// Writing: sluice_write over any 'arrow_array_stream' capsule (pyarrow,
// polars, DuckDB, sluice's own tables), and make_batch, which builds one
// struct array from Python buffers (numpy columns of a pandas DataFrame when
// pyarrow is not installed: dictionary columns for categoricals, the "pandas"
// schema metadata). make_batch copies the buffers: the array must
// stay valid after the Python objects are gone, and its release callback may
// run without the GIL.
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "_sluice.h"

/* ---- Ctrl-C during a write ---------------------------------------------------- */

// sluice_write runs on the calling thread (a producer may be tied to it: a
// sqlite3 cursor, thread-locals), with the GIL released. Its `cancelled`
// callback, polled before and after each batch and before the commit, runs
// Python's signal handlers when it is called on that thread: Ctrl-C then
// cancels the write, which is undone (nothing at the destination, an old file
// kept), and the handler's exception (KeyboardInterrupt) is raised after.
struct write_watch {
  pthread_t caller;
  atomic_int cancel;
  struct timespec checked;  // when the caller's thread last ran the signal handlers
  PyObject* type;  // the signal handler's exception, taken on the caller's thread
  PyObject* value;
  PyObject* traceback;
};

static int write_cancelled(void* user) {
  struct write_watch* w = user;
  if (atomic_load(&w->cancel)) return 1;
  if (!pthread_equal(pthread_self(), w->caller)) return 0;  // copy or upload threads
  // Polled per MiB written too: the GIL (which another thread may hold for
  // its switch interval) is taken at most every 20 ms.
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  int64_t since_ms = (int64_t)(now.tv_sec - w->checked.tv_sec) * 1000 +
                     (now.tv_nsec - w->checked.tv_nsec) / 1000000;
  if (since_ms < 20) return 0;
  w->checked = now;
  PyGILState_STATE gil = PyGILState_Ensure();
  if (PyErr_CheckSignals() != 0) {
    PyErr_Fetch(&w->type, &w->value, &w->traceback);
    atomic_store(&w->cancel, 1);
  }
  PyGILState_Release(gil);
  return atomic_load(&w->cancel);
}

int sp_s3_options(PyObject* dict, struct sluice_s3_options* out) {
  memset(out, 0, sizeof *out);
  if (dict == Py_None) return 0;
  if (!PyDict_Check(dict)) {
    PyErr_SetString(PyExc_TypeError, "s3 settings must be a dict");
    return -1;
  }
  struct {
    const char* key;
    const char** field;
  } strings[] = {{"access_key_id", &out->access_key_id},
                 {"secret_access_key", &out->secret_access_key},
                 {"session_token", &out->session_token},
                 {"profile", &out->profile},
                 {"region", &out->region},
                 {"endpoint_url", &out->endpoint_url},
                 {"addressing_style", &out->addressing_style}};
  for (size_t i = 0; i < sizeof strings / sizeof strings[0]; ++i) {
    PyObject* v = PyDict_GetItemString(dict, strings[i].key);  // borrowed
    if (v == NULL || v == Py_None) continue;
    *strings[i].field = sp_c_string(v, strings[i].key);
    if (*strings[i].field == NULL) return -1;
  }
  PyObject* v = PyDict_GetItemString(dict, "anonymous");
  if (v != NULL) {
    int truth = PyObject_IsTrue(v);
    if (truth < 0) return -1;
    out->anonymous = truth;
  }
  v = PyDict_GetItemString(dict, "part_size");
  if (v != NULL && v != Py_None) {
    long long n = PyLong_AsLongLong(v);
    if (n == -1 && PyErr_Occurred()) return -1;
    if (n < 0) {
      PyErr_SetString(PyExc_ValueError, "part_size must be >= 0");
      return -1;
    }
    out->part_size = n;
  }
  return 0;
}

int sp_write_setup_parse(PyObject* args, PyObject* kwargs, struct sp_write_setup* out) {
  static char* keywords[] = {"stream", "location", "format", "compression", "format_options",
                             "ca_bundle", "insecure", "fsync", "s3", "timeout",
                             "partition_by", "max_partitions", "existing_data_behavior",
                             "max_rows_per_file", NULL};
  memset(out, 0, sizeof *out);
  const char* format = NULL;
  const char* compression = NULL;
  PyObject* options_text = Py_None;  // str or os.fsencode's bytes (paths need not be UTF-8)
  PyObject* ca_bundle_path = Py_None;
  const char* format_options = NULL;
  const char* ca_bundle = NULL;
  int insecure = 0;
  int fsync = 1;
  PyObject* s3_dict = Py_None;
  double timeout = 0;
  PyObject* partition_by = Py_None;
  long long max_partitions = 0;
  int existing_data_behavior = 0;  // checked by the caller and by sluice_write
  long long max_rows_per_file = 0;  // likewise
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oy|zzOOppOdOLiL", keywords, &out->stream,
                                   &out->location, &format, &compression, &options_text,
                                   &ca_bundle_path, &insecure, &fsync, &s3_dict, &timeout,
                                   &partition_by, &max_partitions, &existing_data_behavior,
                                   &max_rows_per_file)) {
    return -1;
  }
  if (sp_c_string_or_none(options_text, "format_options", &format_options) != 0 ||
      sp_c_string_or_none(ca_bundle_path, "ca_bundle", &ca_bundle) != 0) {
    return -1;
  }
  // partition_by: a list of str (checked by the caller); the names are
  // borrowed from it.
  Py_ssize_t n_keys = 0;
  if (partition_by != Py_None) {
    if (!PyList_Check(partition_by) || PyList_GET_SIZE(partition_by) > 64) {
      PyErr_SetString(PyExc_ValueError, "partition_by must be a list of at most 64 column names");
      return -1;
    }
    n_keys = PyList_GET_SIZE(partition_by);
    for (Py_ssize_t i = 0; i < n_keys; i++) {
      PyObject* name = PyList_GET_ITEM(partition_by, i);
      out->keys[i] = sp_c_string(name, "a partition_by name");
      if (out->keys[i] == NULL) return -1;
    }
  }
  if (sp_s3_options(s3_dict, &out->s3) != 0) return -1;
  struct sluice_write_options* options = &out->options;
  sluice_write_options_init(options);
  options->allocator = sp_allocator();
  options->format = format;
  options->compression = compression;
  options->format_options = format_options;
  options->ca_bundle = ca_bundle;
  options->tls_insecure = insecure;
  options->timeout_s = timeout;
  options->no_fsync = !fsync;
  options->s3 = s3_dict != Py_None ? &out->s3 : NULL;  // its strings live in s3_dict
  options->partition_by = n_keys > 0 ? out->keys : NULL;
  options->n_partition_by = n_keys;
  options->max_partitions = max_partitions;
  options->existing_data_behavior = existing_data_behavior;
  options->max_rows_per_file = max_rows_per_file;
  return 0;
}

int sp_check_struct_stream(struct ArrowArrayStream* stream, struct ArrowSchema* out) {
  memset(out, 0, sizeof *out);
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = stream->get_schema(stream, out);
  Py_END_ALLOW_THREADS
  if (rc != 0) {  // the write reports it, with the producer's message
    if (out->release != NULL) out->release(out);
    out->release = NULL;
    return 0;
  }
  if (sp_check_struct(out, "writes") == 0) return 0;
  out->release(out);
  return -1;
}

PyObject* sp_write(PyObject* Py_UNUSED(module), PyObject* args, PyObject* kwargs) {
  struct sp_write_setup setup;
  if (sp_write_setup_parse(args, kwargs, &setup) != 0) return NULL;
  struct ArrowArrayStream* stream = PyCapsule_GetPointer(setup.stream, "arrow_array_stream");
  if (stream == NULL) return NULL;
  if (stream->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the arrow_array_stream capsule was already consumed");
    return NULL;
  }
  struct ArrowSchema schema;
  if (sp_check_struct_stream(stream, &schema) != 0) return NULL;
  const char* location = setup.location;
  struct sluice_write_options options = setup.options;
  options.s3 = setup.options.s3 != NULL ? &setup.s3 : NULL;
  options.partition_by = setup.options.n_partition_by > 0 ? setup.keys : NULL;
  struct sluice_error error;
  memset(&error, 0, sizeof error);
  // Writers take offsets + data: views (polars' strings) are rewritten.
  struct ArrowArrayStream plain;
  int wrapped = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = sp_plain_stream(stream, &schema, &plain, &wrapped);
  Py_END_ALLOW_THREADS
  if (rc != 0) return PyErr_NoMemory();
  struct write_watch watch = {.caller = pthread_self()};
  atomic_init(&watch.cancel, 0);
  options.cancelled = write_cancelled;
  options.cancelled_user = &watch;
  Py_BEGIN_ALLOW_THREADS
  rc = sluice_write(wrapped ? &plain : stream, location, &options, &error);
  if (wrapped) plain.release(&plain);
  Py_END_ALLOW_THREADS
  if (watch.type != NULL) {  // undone (or, caught at its commit, done): raise
    PyErr_Restore(watch.type, watch.value, watch.traceback);
    return NULL;
  }
  if (rc != 0) return sp_raise_write_error(&error, rc);
  Py_RETURN_NONE;
}

/// The exception class a Python producer raised, when `message` carries its
/// traceback as pyarrow passes it on ("... Python exception: Traceback ...",
/// last line "RuntimeError: boom") and the class is a builtin one (a class
/// of the user's own cannot be found by its name): a new reference, its
/// message's start and length in *text / *text_len; else NULL.
static PyObject* producer_exception(const char* message, const char** text, size_t* text_len) {
  if (strstr(message, "Python exception: Traceback") == NULL) return NULL;
  size_t n = strlen(message);
  while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == ' ')) --n;
  size_t start = n;
  while (start > 0 && message[start - 1] != '\n') --start;
  size_t name_end = start;
  while (name_end < n && (isalnum((unsigned char)message[name_end]) || message[name_end] == '_'))
    ++name_end;
  if (name_end == start || (name_end < n && message[name_end] != ':')) return NULL;
  PyObject* name = PyUnicode_FromStringAndSize(message + start, (Py_ssize_t)(name_end - start));
  PyObject* cls = name != NULL ? PyDict_GetItemWithError(PyEval_GetBuiltins(), name) : NULL;
  Py_XDECREF(name);
  if (cls == NULL || !PyExceptionClass_Check(cls)) {
    PyErr_Clear();
    return NULL;
  }
  *text = message + (name_end < n ? name_end + 1 : n);
  while (*text < message + n && **text == ' ') ++*text;
  *text_len = (size_t)(message + n - *text);
  Py_INCREF(cls);
  return cls;
}

PyObject* sp_raise_write_error(struct sluice_error* error, int rc) {
  // A producer may have raised (e.g. a Python generator behind pyarrow).
  if (PyErr_Occurred()) return NULL;
  if (error->code == 0) error->code = rc;
  // A builtin exception raised inside a Python producer (a generator behind
  // pyarrow's reader, Ctrl-C there): pyarrow passes it on as its traceback's
  // text. The write is undone; raise it as its own class (as pyarrow's
  // writers re-raise it), the sluice error naming the object as its cause.
  const char* text = NULL;
  size_t text_len = 0;
  PyObject* cls = producer_exception(error->message, &text, &text_len);
  if (cls == NULL) return sp_raise_error(error);
  sp_raise_error(error);
  PyObject *cause_type, *cause, *cause_tb;
  PyErr_Fetch(&cause_type, &cause, &cause_tb);
  PyErr_NormalizeException(&cause_type, &cause, &cause_tb);
  if (cause != NULL && cause_tb != NULL) PyException_SetTraceback(cause, cause_tb);
  Py_XDECREF(cause_tb);
  PyObject* exc = text_len > 0 ? PyObject_CallFunction(cls, "s#", text, (Py_ssize_t)text_len)
                               : PyObject_CallNoArgs(cls);
  Py_DECREF(cls);
  if (exc == NULL || cause == NULL) {  // (a class that takes other arguments): the sluice error
    PyErr_Clear();
    Py_XDECREF(exc);
    PyErr_Restore(cause_type, cause, NULL);
    return NULL;
  }
  Py_XDECREF(cause_type);
  PyException_SetCause(exc, cause);  // (steals cause)
  PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
  Py_DECREF(exc);
  return NULL;
}

/* ---- make_batch ------------------------------------------------------------ */

struct built_node {
  void** buffers;
  int64_t n_buffers;
  struct ArrowArray* children;
  struct ArrowArray** child_ptrs;
  struct ArrowArray* dictionary;  // a dictionary column's values, or NULL
};

static void built_release(struct ArrowArray* array) {
  struct built_node* node = array->private_data;
  for (int64_t i = 0; i < array->n_children; ++i) {
    if (node->children[i].release != NULL) node->children[i].release(&node->children[i]);
  }
  if (node->dictionary != NULL) {
    if (node->dictionary->release != NULL) node->dictionary->release(node->dictionary);
    PyMem_RawFree(node->dictionary);
  }
  for (int64_t i = 0; i < node->n_buffers; ++i) PyMem_RawFree(node->buffers[i]);
  PyMem_RawFree(node->buffers);
  PyMem_RawFree(node->children);
  PyMem_RawFree(node->child_ptrs);
  PyMem_RawFree(node);
  array->release = NULL;
}

static int built_init(struct ArrowArray* out, int64_t length, int64_t null_count,
                      int64_t n_buffers, int64_t n_children) {
  struct built_node* node = PyMem_RawCalloc(1, sizeof *node);
  if (node == NULL) return ENOMEM;
  node->buffers = PyMem_RawCalloc(n_buffers > 0 ? (size_t)n_buffers : 1, sizeof(void*));
  if (n_children > 0) {
    node->children = PyMem_RawCalloc((size_t)n_children, sizeof *node->children);
    node->child_ptrs = PyMem_RawCalloc((size_t)n_children, sizeof *node->child_ptrs);
  }
  if (node->buffers == NULL ||
      (n_children > 0 && (node->children == NULL || node->child_ptrs == NULL))) {
    PyMem_RawFree(node->buffers);
    PyMem_RawFree(node->children);
    PyMem_RawFree(node->child_ptrs);
    PyMem_RawFree(node);
    return ENOMEM;
  }
  node->n_buffers = n_buffers;
  for (int64_t i = 0; i < n_children; ++i) node->child_ptrs[i] = &node->children[i];
  memset(out, 0, sizeof *out);
  out->length = length;
  out->null_count = null_count;
  out->n_buffers = n_buffers;
  out->n_children = n_children;
  out->buffers = (const void**)node->buffers;
  out->children = node->child_ptrs;
  out->release = built_release;
  out->private_data = node;
  return 0;
}

/// Buffers a flat column of this format has (validity first).
static int64_t buffers_for_format(const char* format) {
  if (strcmp(format, "n") == 0) return 0;
  if (strcmp(format, "u") == 0 || strcmp(format, "z") == 0 || strcmp(format, "U") == 0 ||
      strcmp(format, "Z") == 0) {
    return 3;
  }
  return 2;
}

/// Fills column `out` from (null_count, [buffer or None, ...]) or, for a
/// dictionary column (`values_format` not NULL: `format` is the indices'),
/// (null_count, [buffers], values_length, (values_null_count, [buffers])).
static int build_column(struct ArrowArray* out, const char* format, const char* values_format,
                        int64_t length, PyObject* spec) {
  long long null_count;
  PyObject* buffers;
  long long values_length = -1;
  PyObject* values = NULL;
  if (!PyArg_ParseTuple(spec, "LO!|LO!", &null_count, &PyList_Type, &buffers, &values_length,
                        &PyTuple_Type, &values)) {
    return -1;
  }
  if ((values_format != NULL) != (values != NULL) || (values != NULL && values_length < 0)) {
    PyErr_SetString(PyExc_ValueError,
                    "a dictionary field needs (null_count, buffers, values_length, values), "
                    "another field (null_count, buffers)");
    return -1;
  }
  int64_t n = buffers_for_format(format);
  if (PyList_GET_SIZE(buffers) != n) {
    PyErr_Format(PyExc_ValueError, "a column of format '%s' needs %lld buffers, got %zd", format,
                 (long long)n, PyList_GET_SIZE(buffers));
    return -1;
  }
  if (built_init(out, length, null_count, n, 0) != 0) {
    PyErr_NoMemory();
    return -1;
  }
  struct built_node* node = out->private_data;
  for (int64_t i = 0; i < n; ++i) {
    PyObject* item = PyList_GET_ITEM(buffers, i);
    if (item == Py_None) {
      if (i > 0) {
        PyErr_SetString(PyExc_ValueError, "only the validity buffer may be None");
        return -1;
      }
      continue;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(item, &view, PyBUF_SIMPLE) != 0) return -1;
    // Never a NULL data buffer, even when empty: some consumers dereference it.
    node->buffers[i] = PyMem_RawMalloc(view.len > 0 ? (size_t)view.len : 8);
    if (node->buffers[i] == NULL) {
      PyBuffer_Release(&view);
      PyErr_NoMemory();
      return -1;
    }
    if (view.len > 0) memcpy(node->buffers[i], view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
  }
  if (values != NULL) {
    // (released with `out`, even half-built: calloc leaves release NULL)
    node->dictionary = PyMem_RawCalloc(1, sizeof *node->dictionary);
    if (node->dictionary == NULL) {
      PyErr_NoMemory();
      return -1;
    }
    out->dictionary = node->dictionary;
    return build_column(node->dictionary, values_format, NULL, values_length, values);
  }
  return 0;
}

/// Arrow's metadata layout (int32 count, then int32-length-prefixed key and
/// value bytes) of a {str: str} dict, in *out (PyMem_Raw; NULL for None).
static int build_metadata(PyObject* dict, char** out) {
  *out = NULL;
  if (dict == Py_None) return 0;
  if (!PyDict_Check(dict)) {
    PyErr_SetString(PyExc_TypeError, "make_batch: metadata must be a dict of str or None");
    return -1;
  }
  Py_ssize_t pos = 0;
  PyObject* key;
  PyObject* value;
  size_t size = 4;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    Py_ssize_t klen, vlen;
    if (!PyUnicode_Check(key) || !PyUnicode_Check(value) ||
        PyUnicode_AsUTF8AndSize(key, &klen) == NULL ||
        PyUnicode_AsUTF8AndSize(value, &vlen) == NULL) {
      if (!PyErr_Occurred()) {
        PyErr_SetString(PyExc_TypeError, "make_batch: metadata keys and values must be str");
      }
      return -1;
    }
    if (klen > INT32_MAX || vlen > INT32_MAX || size > (size_t)INT32_MAX) {
      PyErr_SetString(PyExc_ValueError, "make_batch: metadata larger than 2 GiB");
      return -1;
    }
    size += 8 + (size_t)klen + (size_t)vlen;
  }
  if (size > (size_t)INT32_MAX) {
    PyErr_SetString(PyExc_ValueError, "make_batch: metadata larger than 2 GiB");
    return -1;
  }
  char* buf = PyMem_RawMalloc(size);
  if (buf == NULL) {
    PyErr_NoMemory();
    return -1;
  }
  int32_t count = (int32_t)PyDict_GET_SIZE(dict);
  memcpy(buf, &count, 4);
  size_t at = 4;
  pos = 0;
  while (PyDict_Next(dict, &pos, &key, &value)) {
    for (int part = 0; part < 2; ++part) {
      Py_ssize_t len;
      const char* text = PyUnicode_AsUTF8AndSize(part == 0 ? key : value, &len);
      int32_t n32 = (int32_t)len;  // (both checked above)
      memcpy(buf + at, &n32, 4);
      if (len > 0) memcpy(buf + at + 4, text, (size_t)len);
      at += 4 + (size_t)len;
    }
  }
  *out = buf;
  return 0;
}

/// The values schema of dictionary field `field` (released with it).
static int add_dictionary_schema(struct ArrowSchema* field, const char* values_format) {
  field->dictionary = PyMem_RawCalloc(1, sizeof *field->dictionary);
  if (field->dictionary == NULL) return ENOMEM;
  return sp_schema_new(field->dictionary, values_format, NULL, NULL, ARROW_FLAG_NULLABLE, 0);
}

PyObject* sp_make_batch(PyObject* Py_UNUSED(module), PyObject* args) {
  PyObject* fields;
  long long length;
  PyObject* columns;
  PyObject* metadata_dict = Py_None;
  if (!PyArg_ParseTuple(args, "O!LO!|O", &PyList_Type, &fields, &length, &PyList_Type, &columns,
                        &metadata_dict)) {
    return NULL;
  }
  Py_ssize_t n = PyList_GET_SIZE(fields);
  if (PyList_GET_SIZE(columns) != n || length < 0) {
    PyErr_SetString(PyExc_ValueError, "make_batch: one column per field and length >= 0");
    return NULL;
  }
  char* metadata;
  if (build_metadata(metadata_dict, &metadata) != 0) return NULL;
  struct ArrowSchema schema;
  int rc = sp_schema_new(&schema, "+s", "", metadata, 0, n);
  PyMem_RawFree(metadata);  // (copied)
  if (rc != 0) return PyErr_NoMemory();
  struct ArrowArray array;
  if (built_init(&array, length, 0, 1, n) != 0) {
    schema.release(&schema);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    const char* name;
    const char* format;
    int nullable;
    const char* values_format = NULL;
    int ordered = 0;
    PyObject* field_metadata_dict = Py_None;  // (an extension type's name)
    char* field_metadata = NULL;
    int failed = !PyArg_ParseTuple(PyList_GET_ITEM(fields, i), "ssp|zpO", &name, &format,
                                   &nullable, &values_format, &ordered, &field_metadata_dict) ||
                 build_metadata(field_metadata_dict, &field_metadata) != 0;
    if (!failed) {
      rc = sp_schema_new(schema.children[i], format, name, field_metadata,
                         (nullable ? ARROW_FLAG_NULLABLE : 0) |
                             (ordered ? ARROW_FLAG_DICTIONARY_ORDERED : 0),
                         0);
      PyMem_RawFree(field_metadata);  // (copied)
      failed = rc != 0;
    }
    if (failed ||
        (values_format != NULL && add_dictionary_schema(schema.children[i], values_format) != 0) ||
        build_column(array.children[i], format, values_format, length,
                     PyList_GET_ITEM(columns, i)) != 0) {
      if (!PyErr_Occurred()) PyErr_NoMemory();
      schema.release(&schema);
      array.release(&array);
      return NULL;
    }
  }
  SchemaObject* schema_object = sp_schema_wrap(&schema);
  if (schema_object == NULL) {
    array.release(&array);
    return NULL;
  }
  struct sp_shared_array* shared = sp_shared_new(&array);
  if (shared == NULL) {
    array.release(&array);
    Py_DECREF(schema_object);
    return PyErr_NoMemory();
  }
  PyObject* batch = (PyObject*)sp_batch_wrap(shared, schema_object, 0, 0, NULL);
  Py_DECREF(schema_object);
  return batch;
}

/* ---- A stream over batches ------------------------------------------------- */

PyObject* sp_batches_stream(PyObject* Py_UNUSED(module), PyObject* args) {
  SchemaObject* schema;
  PyObject* batches;
  long long column = -1;
  if (!PyArg_ParseTuple(args, "O!O|L", &SpSchemaType, &schema, &batches, &column)) return NULL;
  PyObject* seq = PySequence_Fast(batches, "batches must be a sequence of _Batch");
  if (seq == NULL) return NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  struct sp_shared_array** shared = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *shared);
  if (shared == NULL) {
    Py_DECREF(seq);
    return PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(seq, i);
    if (!PyObject_TypeCheck(item, &SpBatchType)) {
      PyMem_Free(shared);
      Py_DECREF(seq);
      PyErr_SetString(PyExc_TypeError, "batches must be a sequence of _Batch");
      return NULL;
    }
    shared[i] = ((BatchObject*)item)->shared;
  }
  if (column >= schema->schema.n_children) {
    PyMem_Free(shared);
    Py_DECREF(seq);
    PyErr_SetString(PyExc_IndexError, "column out of range");
    return NULL;
  }
  struct ArrowArrayStream stream;
  int rc = sp_stream_new(&schema->schema, shared, (int64_t)n, column, &stream);
  PyMem_Free(shared);
  Py_DECREF(seq);
  if (rc != 0) return PyErr_NoMemory();
  return sp_stream_capsule_from(&stream);
}
