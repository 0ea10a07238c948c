// The _Schema type: owns one struct ArrowSchema (a struct type, one child per
// column) and exports copies of it through the PyCapsule protocol. The Python
// side (sluice.Schema) reads names, types and metadata through _node().
#include <errno.h>
#include <string.h>

#include "_sluice.h"

SchemaObject* sp_schema_wrap(struct ArrowSchema* schema) {
  SchemaObject* self = PyObject_New(SchemaObject, &SpSchemaType);
  if (self == NULL) {
    if (schema->release != NULL) schema->release(schema);
    return NULL;
  }
  self->schema = *schema;
  schema->release = NULL;
  return self;
}

static void schema_dealloc(SchemaObject* self) {
  if (self->schema.release != NULL) self->schema.release(&self->schema);
  PyObject_Free(self);
}

/// The node at `path` (child indices; -1 = the dictionary), or NULL + error.
static const struct ArrowSchema* schema_at(const struct ArrowSchema* node, PyObject* path) {
  if (!PyTuple_Check(path)) {
    PyErr_SetString(PyExc_TypeError, "path must be a tuple of ints");
    return NULL;
  }
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(path); ++k) {
    long long i = PyLong_AsLongLong(PyTuple_GET_ITEM(path, k));
    if (i == -1 && PyErr_Occurred()) return NULL;
    if (i == -1) {
      node = node->dictionary;
    } else if (i >= 0 && i < node->n_children) {
      node = node->children[i];
    } else {
      node = NULL;
    }
    if (node == NULL) {
      PyErr_SetString(PyExc_IndexError, "schema path out of range");
      return NULL;
    }
  }
  return node;
}

static PyObject* schema_node(SchemaObject* self, PyObject* path) {
  const struct ArrowSchema* node = schema_at(&self->schema, path);
  if (node == NULL) return NULL;
  PyObject* metadata = Py_None;
  Py_INCREF(Py_None);
  if (node->metadata != NULL) {
    Py_DECREF(Py_None);
    metadata = PyBytes_FromStringAndSize(node->metadata, (Py_ssize_t)sp_metadata_size(node->metadata));
    if (metadata == NULL) return NULL;
  }
  return Py_BuildValue("{s:s,s:z,s:L,s:N,s:L,s:O}", "format", node->format, "name", node->name,
                       "flags", (long long)node->flags, "metadata", metadata, "n_children",
                       (long long)node->n_children, "has_dictionary",
                       node->dictionary != NULL ? Py_True : Py_False);
}

static PyObject* schema_arrow_c_schema(SchemaObject* self, PyObject* Py_UNUSED(ignored)) {
  return sp_schema_capsule(&self->schema);
}

static PyObject* schema_child_capsule(SchemaObject* self, PyObject* arg) {
  long long i = PyLong_AsLongLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i < 0 || i >= self->schema.n_children) {
    PyErr_SetString(PyExc_IndexError, "column out of range");
    return NULL;
  }
  return sp_schema_capsule(self->schema.children[i]);
}

static PyObject* schema_from_capsule(PyObject* Py_UNUSED(cls), PyObject* capsule) {
  struct ArrowSchema* src = PyCapsule_GetPointer(capsule, "arrow_schema");
  if (src == NULL) return NULL;
  if (src->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the arrow_schema capsule was already released");
    return NULL;
  }
  struct ArrowSchema copy;
  if (sp_schema_copy(src, &copy) != 0) return PyErr_NoMemory();
  return (PyObject*)sp_schema_wrap(&copy);
}

static PyMethodDef schema_methods[] = {
    {"__arrow_c_schema__", (PyCFunction)schema_arrow_c_schema, METH_NOARGS,
     "The schema as an 'arrow_schema' PyCapsule (a copy owned by the capsule)."},
    {"_node", (PyCFunction)schema_node, METH_O,
     "_node(path) -> dict: format, name, flags, metadata, n_children, has_dictionary."},
    {"_child_capsule", (PyCFunction)schema_child_capsule, METH_O,
     "_child_capsule(i) -> 'arrow_schema' capsule of column i's field."},
    {"_from_capsule", (PyCFunction)schema_from_capsule, METH_O | METH_STATIC,
     "_from_capsule(capsule) -> _Schema: a copy of an 'arrow_schema' capsule's schema."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject SpSchemaType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sluice._sluice._Schema",
    .tp_basicsize = sizeof(SchemaObject),
    .tp_dealloc = (destructor)schema_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An Arrow schema owned by sluice (use sluice.Schema).",
    .tp_methods = schema_methods,
};
