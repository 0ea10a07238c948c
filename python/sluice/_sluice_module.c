// The module sluice._sluice: its functions and types, and the PyCapsules of
// the Arrow PyCapsule protocol. The public API lives in sluice/__init__.py;
// this module is the thin layer over libsluice it is built on.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_sluice.h"

/* ---- Capsules ---------------------------------------------------------------- */

static void schema_capsule_free(PyObject* capsule) {
  struct ArrowSchema* schema = PyCapsule_GetPointer(capsule, "arrow_schema");
  if (schema == NULL) {
    PyErr_Clear();
    return;
  }
  if (schema->release != NULL) schema->release(schema);
  PyMem_RawFree(schema);
}

static void array_capsule_free(PyObject* capsule) {
  struct ArrowArray* array = PyCapsule_GetPointer(capsule, "arrow_array");
  if (array == NULL) {
    PyErr_Clear();
    return;
  }
  if (array->release != NULL) array->release(array);
  PyMem_RawFree(array);
}

static void stream_capsule_free(PyObject* capsule) {
  struct ArrowArrayStream* stream = PyCapsule_GetPointer(capsule, "arrow_array_stream");
  if (stream == NULL) {
    PyErr_Clear();
    return;
  }
  if (stream->release != NULL) stream->release(stream);
  PyMem_RawFree(stream);
}

const char* sp_c_string(PyObject* object, const char* what) {
  Py_ssize_t size = 0;
  const char* text = NULL;
  if (PyUnicode_Check(object)) {
    text = PyUnicode_AsUTF8AndSize(object, &size);
  } else if (PyBytes_Check(object)) {
    text = PyBytes_AS_STRING(object);
    size = PyBytes_GET_SIZE(object);
  } else {
    PyErr_Format(PyExc_TypeError, "%s must be a str, not %.100s", what, Py_TYPE(object)->tp_name);
    return NULL;
  }
  if (text != NULL && strlen(text) != (size_t)size) {
    PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character: %R", what, object);
    return NULL;
  }
  return text;
}

int sp_c_string_or_none(PyObject* object, const char* what, const char** out) {
  *out = object == Py_None ? NULL : sp_c_string(object, what);
  return object != Py_None && *out == NULL ? -1 : 0;
}

PyObject* sp_schema_capsule(const struct ArrowSchema* schema_to_copy) {
  struct ArrowSchema* copy = PyMem_RawMalloc(sizeof *copy);
  if (copy == NULL) return PyErr_NoMemory();
  if (sp_schema_copy(schema_to_copy, copy) != 0) {
    PyMem_RawFree(copy);
    return PyErr_NoMemory();
  }
  PyObject* capsule = PyCapsule_New(copy, "arrow_schema", schema_capsule_free);
  if (capsule == NULL) {
    copy->release(copy);
    PyMem_RawFree(copy);
  }
  return capsule;
}

PyObject* sp_array_capsule_from(struct ArrowArray* moved) {
  struct ArrowArray* heap = PyMem_RawMalloc(sizeof *heap);
  if (heap == NULL) {
    moved->release(moved);
    return PyErr_NoMemory();
  }
  *heap = *moved;
  moved->release = NULL;
  PyObject* capsule = PyCapsule_New(heap, "arrow_array", array_capsule_free);
  if (capsule == NULL) {
    heap->release(heap);
    PyMem_RawFree(heap);
  }
  return capsule;
}

PyObject* sp_stream_capsule_from(struct ArrowArrayStream* moved) {
  struct ArrowArrayStream* heap = PyMem_RawMalloc(sizeof *heap);
  if (heap == NULL) {
    moved->release(moved);
    return PyErr_NoMemory();
  }
  *heap = *moved;
  moved->release = NULL;
  PyObject* capsule = PyCapsule_New(heap, "arrow_array_stream", stream_capsule_free);
  if (capsule == NULL) {
    heap->release(heap);
    PyMem_RawFree(heap);
  }
  return capsule;
}

/* ---- Module ------------------------------------------------------------------ */

static PyObject* sp_formats(PyObject* Py_UNUSED(module), PyObject* args) {
  int writers = 0;
  if (!PyArg_ParseTuple(args, "|p", &writers)) return NULL;
  const char* const* names = writers ? sluice_writer_formats() : sluice_reader_formats();
  PyObject* list = PyList_New(0);
  for (; list != NULL && names != NULL && *names != NULL; ++names) {
    PyObject* name = PyUnicode_FromString(*names);
    if (name == NULL || PyList_Append(list, name) != 0) {
      Py_XDECREF(name);
      Py_CLEAR(list);
      break;
    }
    Py_DECREF(name);
  }
  return list;
}

/// What the module keeps: one buffer cache every handle allocates through,
/// so that a program reading one table after another (a notebook, a loop
/// over files) reuses the memory of the tables it has dropped instead of
/// having the kernel map and zero fresh pages (sluice_buffer_cache_create).
struct sp_module_state {
  struct sluice_buffer_cache* cache;  ///< NULL: disabled or out of memory
};

static struct PyModuleDef module_def;

static struct sp_module_state* module_state(void) {
  PyObject* module = PyState_FindModule(&module_def);
  return module == NULL ? NULL : PyModule_GetState(module);
}

const struct sluice_allocator* sp_allocator(void) {
  struct sp_module_state* state = module_state();
  return state == NULL ? NULL : sluice_buffer_cache_allocator(state->cache);
}

static PyObject* sp_release_unused(PyObject* Py_UNUSED(module), PyObject* Py_UNUSED(args)) {
  struct sp_module_state* state = module_state();
  int64_t freed = 0;
  if (state != NULL && state->cache != NULL) {
    Py_BEGIN_ALLOW_THREADS
    freed = sluice_buffer_cache_release_unused(state->cache);
    Py_END_ALLOW_THREADS
  }
  return PyLong_FromLongLong((long long)freed);
}

/// os.register_at_fork's child handler (sluice/__init__.py): the cache's
/// lock may have been held by another thread at the fork.
static PyObject* sp_after_fork(PyObject* Py_UNUSED(module), PyObject* Py_UNUSED(args)) {
  struct sp_module_state* state = module_state();
  if (state != NULL) sluice_buffer_cache_after_fork(state->cache);
  Py_RETURN_NONE;
}

static void module_free(void* module) {
  struct sp_module_state* state = PyModule_GetState(module);
  if (state == NULL) return;
  sluice_buffer_cache_close(state->cache);  // blocks still in use outlive it
  state->cache = NULL;
}

/// The memory this process may use: the machine's, or its cgroup's limit
/// (a container's) when lower.
static int64_t memory_bytes(void) {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  int64_t total = pages > 0 && page > 0 ? (int64_t)pages * (int64_t)page : (int64_t)2 << 30;
  const char* const limits[] = {"/sys/fs/cgroup/memory.max",                     // cgroup v2
                                "/sys/fs/cgroup/memory/memory.limit_in_bytes"};  // v1
  for (size_t i = 0; i < sizeof limits / sizeof *limits; ++i) {
    FILE* f = fopen(limits[i], "r");
    if (f == NULL) continue;
    long long v = 0;
    if (fscanf(f, "%lld", &v) == 1 && v > 0 && v < total) total = (int64_t)v;  // ("max": none)
    fclose(f);
  }
  return total;
}

/// The cache's bound: SLUICE_BUFFER_CACHE_BYTES if set (below 1 MiB, 0
/// included, there is none: each handle keeps its own while it runs), else
/// an eighth of the memory this process may use, at most 2 GiB.
static int64_t cache_bytes(void) {
  const char* env = getenv("SLUICE_BUFFER_CACHE_BYTES");
  if (env != NULL && env[0] != '\0') {
    char* end = NULL;
    errno = 0;
    long long v = strtoll(env, &end, 10);
    if (errno == 0 && end != NULL && *end == '\0' && v >= 0) return v < (1 << 20) ? 0 : v;
    PyErr_WarnFormat(PyExc_RuntimeWarning, 1,
                     "SLUICE_BUFFER_CACHE_BYTES=%s is not a number of bytes; using the default",
                     env);
  }
  int64_t eighth = memory_bytes() / 8;
  int64_t most = (int64_t)2 << 30;
  return eighth < most ? eighth : most;
}

static PyMethodDef module_methods[] = {
    {"open", (PyCFunction)(void (*)(void))sp_open, METH_VARARGS | METH_KEYWORDS,
     "open(location, format=None, columns=None, threads=0, ordered=True, limit=-1, "
     "batch_rows=0, memory=0, format_options=None) -> _Dataset"},
    {"write", (PyCFunction)(void (*)(void))sp_write, METH_VARARGS | METH_KEYWORDS,
     "write(stream_capsule, location, format=None, compression=None, format_options=None)"},
    {"make_batch", (PyCFunction)sp_make_batch, METH_VARARGS,
     "make_batch(fields, length, columns, metadata=None) -> _Batch: fields [(name, format, "
     "nullable[, values_format or None, ordered, field metadata {str: str}])], columns [(null_count, [buffers][, values_length, "
     "(values_null_count, [buffers])])] (copied; a values_format makes a dictionary field, "
     "format its indices'); metadata the schema's {str: str}."},
    {"batches_stream", (PyCFunction)sp_batches_stream, METH_VARARGS,
     "batches_stream(schema, batches, column=-1) -> 'arrow_array_stream' capsule (zero copy)."},
    {"import_stream", (PyCFunction)sp_import_stream, METH_O,
     "import_stream(capsule) -> (_Schema, [_Batch]): drains an 'arrow_array_stream' (zero copy)."},
    {"import_array", (PyCFunction)sp_import_array, METH_VARARGS,
     "import_array(schema_capsule, array_capsule) -> _Batch (zero copy; the array is moved)."},
    {"after_fork", sp_after_fork, METH_NOARGS,
     "after_fork(): in a forked child, the module's buffer cache made the child's alone."},
    {"release_unused", sp_release_unused, METH_NOARGS,
     "release_unused() -> bytes freed of the memory kept from dropped tables for the next reads."},
    {"formats", (PyCFunction)sp_formats, METH_VARARGS,
     "formats(writers=False) -> names of the formats sluice reads (or writes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "sluice._sluice",
    .m_doc = "The C layer of sluice over libsluice (use the sluice package).",
    .m_size = sizeof(struct sp_module_state),
    .m_methods = module_methods,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__sluice(void) {
  PyTypeObject* types[] = {&SpSchemaType, &SpBatchType, &SpBufferViewType, &SpDatasetType,
                           &SpScannerType, &SpGatherType, &SpWriterType};
  const char* names[] = {"_Schema", "_Batch", "_BufferView", "_Dataset", "_Scanner", "_Gather",
                         "_Writer"};
  for (size_t i = 0; i < sizeof types / sizeof *types; ++i) {
    if (PyType_Ready(types[i]) != 0) return NULL;
  }
  int64_t bytes = cache_bytes();
  if (PyErr_Occurred()) return NULL;  // the warning was made an error
  PyObject* module = PyModule_Create(&module_def);
  if (module == NULL) return NULL;
  struct sp_module_state* state = PyModule_GetState(module);
  // Out of memory only leaves each handle its own cache.
  state->cache = bytes > 0 ? sluice_buffer_cache_create(bytes) : NULL;
  for (size_t i = 0; i < sizeof types / sizeof *types; ++i) {
    Py_INCREF(types[i]);
    if (PyModule_AddObject(module, names[i], (PyObject*)types[i]) != 0) {
      Py_DECREF(types[i]);
      Py_DECREF(module);
      return NULL;
    }
  }
  if (PyModule_AddStringConstant(module, "version", SLUICE_VERSION_STRING) != 0) {
    Py_DECREF(module);
    return NULL;
  }
  return module;
}
