// Arrow data from other producers into sluice objects, without copies:
// import_stream drains an 'arrow_array_stream' capsule into _Batch objects,
// import_array takes one ('arrow_schema', 'arrow_array') pair. The imported
// arrays stay owned by their producer's release callbacks; each _Batch holds
// one, so sluice.Table.from_arrow(polars_df).to_pandas() works without
// pyarrow. Both must be struct arrays (one child per column), as record
// batches are exported.
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "_sluice.h"

int sp_check_struct(const struct ArrowSchema* schema, const char* verb) {
  const char* format = schema->format != NULL ? schema->format : "";
  if (strcmp(format, "+s") == 0) return 0;
  PyErr_Format(PyExc_TypeError, "sluice %s record batches (struct arrays), not Arrow type '%s'",
               verb, format);
  return -1;
}

/// 0 when no row of `array` (a struct array, one child per column) is
/// null, else -1 with sluice.InvalidArgumentError naming the first null row
/// (`batch` is the batch's number in a stream, or -1). A batch's columns
/// are its children, so a null row would be read as whatever the children
/// hold under it; pyarrow refuses to import such an array as a record batch
/// too (pushing the nulls down into every child would be a copy).
static int check_no_null_rows(const struct ArrowArray* array, long long batch) {
  if (array->null_count == 0 || array->n_buffers < 1 || array->buffers == NULL ||
      array->buffers[0] == NULL) {
    return 0;
  }
  const uint8_t* bits = array->buffers[0];
  for (int64_t i = 0; i < array->length; ++i) {
    int64_t at = array->offset + i;
    if ((bits[at >> 3] >> (at & 7)) & 1) continue;
    char where[64] = "";
    if (batch >= 0) snprintf(where, sizeof where, "batch %lld, ", batch);
    char message[320];
    snprintf(message, sizeof message,
             "%srow %lld: the row is null (the struct array has a validity bitmap), and sluice "
             "imports struct arrays as record batches, whose rows cannot be null (pyarrow "
             "refuses them too): drop or fill the null rows first",
             where, (long long)i);
    sp_raise(EINVAL, message);
    return -1;
  }
  return 0;  // null_count -1 (not counted) and every row valid
}

PyObject* sp_import_stream(PyObject* Py_UNUSED(module), PyObject* capsule) {
  struct ArrowArrayStream* stream = PyCapsule_GetPointer(capsule, "arrow_array_stream");
  if (stream == NULL) return NULL;
  if (stream->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the arrow_array_stream capsule was already consumed");
    return NULL;
  }
  struct ArrowSchema schema;
  memset(&schema, 0, sizeof schema);
  int rc;
  Py_BEGIN_ALLOW_THREADS
  rc = stream->get_schema(stream, &schema);
  Py_END_ALLOW_THREADS
  if (rc != 0) {
    if (PyErr_Occurred()) return NULL;
    const char* message = stream->get_last_error != NULL ? stream->get_last_error(stream) : NULL;
    return sp_raise(rc, message != NULL ? message : "the stream failed to give its schema");
  }
  if (sp_check_struct(&schema, "imports") != 0) {
    schema.release(&schema);
    return NULL;
  }
  SchemaObject* schema_object = sp_schema_wrap(&schema);
  if (schema_object == NULL) return NULL;
  PyObject* batches = PyList_New(0);
  while (batches != NULL) {
    struct ArrowArray array;
    memset(&array, 0, sizeof array);
    Py_BEGIN_ALLOW_THREADS
    rc = stream->get_next(stream, &array);
    Py_END_ALLOW_THREADS
    if (rc != 0) {
      Py_CLEAR(batches);
      if (!PyErr_Occurred()) {
        const char* message =
            stream->get_last_error != NULL ? stream->get_last_error(stream) : NULL;
        sp_raise(rc, message != NULL ? message : "the stream failed to give a batch");
      }
      break;
    }
    if (array.release == NULL) break;
    if (array.n_children != schema_object->schema.n_children) {
      array.release(&array);
      Py_CLEAR(batches);
      PyErr_SetString(PyExc_ValueError, "a batch of the stream does not match its schema");
      break;
    }
    if (check_no_null_rows(&array, (long long)PyList_GET_SIZE(batches)) != 0) {
      array.release(&array);
      Py_CLEAR(batches);
      break;
    }
    struct sp_shared_array* shared = sp_shared_new(&array);
    if (shared == NULL) {
      array.release(&array);
      Py_CLEAR(batches);
      PyErr_NoMemory();
      break;
    }
    PyObject* batch = (PyObject*)sp_batch_wrap(shared, schema_object, 0, PyList_GET_SIZE(batches),
                                               NULL);
    if (batch == NULL || PyList_Append(batches, batch) != 0) {
      Py_XDECREF(batch);
      Py_CLEAR(batches);
      break;
    }
    Py_DECREF(batch);
  }
  if (batches == NULL) {
    Py_DECREF(schema_object);
    return NULL;
  }
  return Py_BuildValue("(NN)", (PyObject*)schema_object, batches);
}

PyObject* sp_import_array(PyObject* Py_UNUSED(module), PyObject* args) {
  PyObject* schema_capsule;
  PyObject* array_capsule;
  if (!PyArg_ParseTuple(args, "OO", &schema_capsule, &array_capsule)) return NULL;
  struct ArrowSchema* schema = PyCapsule_GetPointer(schema_capsule, "arrow_schema");
  if (schema == NULL) return NULL;
  struct ArrowArray* array = PyCapsule_GetPointer(array_capsule, "arrow_array");
  if (array == NULL) return NULL;
  if (schema->release == NULL || array->release == NULL) {
    PyErr_SetString(PyExc_ValueError, "the capsules were already consumed");
    return NULL;
  }
  if (sp_check_struct(schema, "imports") != 0) return NULL;
  if (array->n_children != schema->n_children) {
    PyErr_SetString(PyExc_ValueError, "the array does not match its schema");
    return NULL;
  }
  if (check_no_null_rows(array, -1) != 0) return NULL;
  struct ArrowSchema copy;
  if (sp_schema_copy(schema, &copy) != 0) return PyErr_NoMemory();
  SchemaObject* schema_object = sp_schema_wrap(&copy);
  if (schema_object == NULL) return NULL;
  // Moved out of the capsule, whose destructor then sees release == NULL.
  struct sp_shared_array* shared = sp_shared_new(array);
  if (shared == NULL) {
    Py_DECREF(schema_object);
    return PyErr_NoMemory();
  }
  PyObject* batch = (PyObject*)sp_batch_wrap(shared, schema_object, 0, 0, NULL);
  Py_DECREF(schema_object);
  return batch;
}
