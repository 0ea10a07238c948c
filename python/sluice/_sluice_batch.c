// The _Batch type (one decoded struct array, shared with every export of it)
// and the _BufferView type: a read-only buffer-protocol window on one Arrow
// buffer, which numpy wraps without copying. Both hold a reference to the
// shared batch, so the bytes stay alive while any view or export does.
#include <errno.h>
#include <string.h>

#include "_sluice.h"

BatchObject* sp_batch_wrap(struct sp_shared_array* shared, SchemaObject* schema, int64_t split,
                           int64_t index, const char* metadata) {
  PyObject* meta = metadata != NULL
                       ? PyBytes_FromStringAndSize(metadata, (Py_ssize_t)sp_metadata_size(metadata))
                       : (Py_INCREF(Py_None), Py_None);
  BatchObject* self = meta != NULL ? PyObject_New(BatchObject, &SpBatchType) : NULL;
  if (self == NULL) {
    Py_XDECREF(meta);
    sp_shared_release(shared);
    return NULL;
  }
  self->metadata = meta;
  self->shared = shared;
  Py_INCREF(schema);
  self->schema = schema;
  self->split = split;
  self->index = index;
  return self;
}

static void batch_dealloc(BatchObject* self) {
  sp_shared_release(self->shared);
  Py_XDECREF(self->schema);
  Py_XDECREF(self->metadata);
  PyObject_Free(self);
}

static PyObject* batch_arrow_c_schema(BatchObject* self, PyObject* Py_UNUSED(ignored)) {
  return sp_schema_capsule(&self->schema->schema);
}

static PyObject* batch_arrow_c_array(BatchObject* self, PyObject* args, PyObject* kwargs) {
  static char* keywords[] = {"requested_schema", NULL};
  PyObject* requested = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|O", keywords, &requested)) return NULL;
  // A requested schema is a hint; the batch is exported in its own type.
  PyObject* schema = sp_schema_capsule(&self->schema->schema);
  if (schema == NULL) return NULL;
  struct ArrowArray out;
  sp_shared_mark(self->shared, &self->shared->array);
  if (sp_export_batch(self->shared, &out) != 0) {
    Py_DECREF(schema);
    return PyErr_NoMemory();
  }
  PyObject* array = sp_array_capsule_from(&out);
  if (array == NULL) {
    Py_DECREF(schema);
    return NULL;
  }
  return Py_BuildValue("(NN)", schema, array);
}

/// The array node at `path` and the window it is read through: the first
/// step (a column) takes the batch's offset and length.
static const struct ArrowArray* batch_at(BatchObject* self, PyObject* path, int64_t* offset,
                                         int64_t* length, int64_t* null_count) {
  if (!PyTuple_Check(path)) {
    PyErr_SetString(PyExc_TypeError, "path must be a tuple of ints");
    return NULL;
  }
  const struct ArrowArray* top = &self->shared->array;
  const struct ArrowArray* node = top;
  *offset = top->offset;
  *length = top->length;
  *null_count = top->null_count;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(path); ++k) {
    long long i = PyLong_AsLongLong(PyTuple_GET_ITEM(path, k));
    if (i == -1 && PyErr_Occurred()) return NULL;
    const struct ArrowArray* next = NULL;
    if (i == -1) {
      next = node->dictionary;
    } else if (i >= 0 && i < node->n_children) {
      next = node->children[i];
    }
    if (next == NULL) {
      PyErr_SetString(PyExc_IndexError, "array path out of range");
      return NULL;
    }
    if (k == 0 && i >= 0) {
      *offset = next->offset + top->offset;
      int whole = top->offset == 0 && top->length == next->length;
      *length = top->length;
      *null_count = whole || next->null_count == 0 ? next->null_count : -1;
    } else {
      *offset = next->offset;
      *length = next->length;
      *null_count = next->null_count;
    }
    node = next;
  }
  return node;
}

static PyObject* batch_node(BatchObject* self, PyObject* path) {
  int64_t offset, length, null_count;
  const struct ArrowArray* node = batch_at(self, path, &offset, &length, &null_count);
  if (node == NULL) return NULL;
  return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:O}", "length", (long long)length, "offset",
                       (long long)offset, "null_count", (long long)null_count, "n_buffers",
                       (long long)node->n_buffers, "n_children", (long long)node->n_children,
                       "has_dictionary", node->dictionary != NULL ? Py_True : Py_False);
}

static PyObject* batch_buffer(BatchObject* self, PyObject* args) {
  PyObject* path;
  long long i, nbytes;
  int writable = 0;
  if (!PyArg_ParseTuple(args, "O!LL|i", &PyTuple_Type, &path, &i, &nbytes, &writable)) return NULL;
  int64_t offset, length, null_count;
  const struct ArrowArray* node = batch_at(self, path, &offset, &length, &null_count);
  if (node == NULL) return NULL;
  if (i < 0 || i >= node->n_buffers || nbytes < 0) {
    PyErr_SetString(PyExc_IndexError, "buffer index out of range");
    return NULL;
  }
  const void* data = node->buffers[i];
  if (data == NULL) Py_RETURN_NONE;
  BufferViewObject* view = PyObject_New(BufferViewObject, &SpBufferViewType);
  if (view == NULL) return NULL;
  struct sp_shared_array* shared = self->shared;
  view->writable = writable > 0 && shared->own_memory && !sp_shared_marked(shared, data);
  // A read-only view that may outlive the call (a numpy array) keeps any
  // later view of the buffer read-only. writable < 0: a read whose view
  // goes nowhere (values copied out to Python objects, repr, to_pylist),
  // which leaves a later self_destruct free to hand the buffer out writable.
  if (!view->writable && writable >= 0) sp_shared_mark_buffer(shared, data);
  sp_shared_retain(shared);
  view->shared = shared;
  view->data = data;
  view->size = (Py_ssize_t)nbytes;
  return (PyObject*)view;
}

static PyObject* batch_get_num_rows(BatchObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromLongLong(self->shared->array.length);
}
static PyObject* batch_get_num_columns(BatchObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromLongLong(self->shared->array.n_children);
}
static PyObject* batch_get_split(BatchObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromLongLong(self->split);
}
static PyObject* batch_get_index(BatchObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromLongLong(self->index);
}
static PyObject* batch_get_schema(BatchObject* self, void* Py_UNUSED(closure)) {
  Py_INCREF(self->schema);
  return (PyObject*)self->schema;
}

static PyObject* batch_get_metadata(BatchObject* self, void* Py_UNUSED(closure)) {
  Py_INCREF(self->metadata);
  return self->metadata;
}

/// The same batch (its buffers shared) with another tag and metadata: a
/// batch read back from the Arrow IPC bytes it was pickled as gets its own.
static PyObject* batch_with_tag(BatchObject* self, PyObject* args) {
  long long split, index;
  PyObject* metadata;
  if (!PyArg_ParseTuple(args, "LLO", &split, &index, &metadata)) return NULL;
  if (metadata != Py_None && !PyBytes_Check(metadata)) {
    PyErr_Format(PyExc_TypeError, "_with_tag: metadata must be bytes or None, not %s",
                 Py_TYPE(metadata)->tp_name);
    return NULL;
  }
  BatchObject* copy = PyObject_New(BatchObject, &SpBatchType);
  if (copy == NULL) return NULL;
  sp_shared_retain(self->shared);
  copy->shared = self->shared;
  Py_INCREF(self->schema);
  copy->schema = self->schema;
  copy->split = split;
  copy->index = index;
  Py_INCREF(metadata);
  copy->metadata = metadata;
  return (PyObject*)copy;
}

static PyGetSetDef batch_getset[] = {
    {"metadata", (getter)batch_get_metadata, NULL,
     "Custom metadata the source attached to the batch (bytes, Arrow layout) or None.", NULL},
    {"num_rows", (getter)batch_get_num_rows, NULL, "Rows in the batch.", NULL},
    {"num_columns", (getter)batch_get_num_columns, NULL, "Columns in the batch.", NULL},
    {"split", (getter)batch_get_split, NULL, "The split that produced the batch.", NULL},
    {"index", (getter)batch_get_index, NULL, "The batch's index within its split.", NULL},
    {"schema", (getter)batch_get_schema, NULL, "The batch's _Schema.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef batch_methods[] = {
    {"__arrow_c_schema__", (PyCFunction)batch_arrow_c_schema, METH_NOARGS,
     "The batch's struct type as an 'arrow_schema' PyCapsule."},
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))batch_arrow_c_array,
     METH_VARARGS | METH_KEYWORDS,
     "(arrow_schema, arrow_array) PyCapsules; the array shares the batch's buffers."},
    {"_with_tag", (PyCFunction)batch_with_tag, METH_VARARGS,
     "_with_tag(split, index, metadata) -> _Batch: the same buffers, another tag and "
     "metadata (bytes in the Arrow layout, or None)."},
    {"_node", (PyCFunction)batch_node, METH_O,
     "_node(path) -> dict: length, offset, null_count, n_buffers, n_children, has_dictionary."},
    {"_buffer", (PyCFunction)batch_buffer, METH_VARARGS,
     "_buffer(path, i, nbytes, writable=0) -> _BufferView over buffer i of the node at path, "
     "or None; writable (1) only when asked and the batch owns its memory; -1: read-only and "
     "transient (the caller copies the values out and drops the view)."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject SpBatchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._Batch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)batch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One decoded batch (use sluice.Batch).",
    .tp_methods = batch_methods,
    .tp_getset = batch_getset,
};

/* ---- _BufferView ------------------------------------------------------------ */

static void view_dealloc(BufferViewObject* self) {
  sp_shared_release(self->shared);
  PyObject_Free(self);
}

static int view_getbuffer(BufferViewObject* self, Py_buffer* view, int flags) {
  return PyBuffer_FillInfo(view, (PyObject*)self, (void*)self->data, self->size,
                           !self->writable, flags);
}

static PyObject* view_get_address(BufferViewObject* self, void* Py_UNUSED(closure)) {
  return PyLong_FromVoidPtr((void*)self->data);
}

static PyBufferProcs view_as_buffer = {
    .bf_getbuffer = (getbufferproc)view_getbuffer,
    .bf_releasebuffer = NULL,
};

static PyGetSetDef view_getset[] = {
    {"address", (getter)view_get_address, NULL, "Address of the first byte.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static Py_ssize_t view_length(BufferViewObject* self) { return self->size; }

static PySequenceMethods view_as_sequence = {
    .sq_length = (lenfunc)view_length,
};

PyTypeObject SpBufferViewType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._BufferView",
    .tp_basicsize = sizeof(BufferViewObject),
    .tp_dealloc = (destructor)view_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A read-only window on one Arrow buffer; keeps its batch alive.",
    .tp_as_buffer = &view_as_buffer,
    .tp_as_sequence = &view_as_sequence,
    .tp_getset = view_getset,
};
