// C error code + message -> the sluice.Error subclass for that code. The
// classes are plain Python (sluice/_errors.py) so that they can inherit from
// the built-in exceptions users already catch (ValueError, OSError, ...).
#include <string.h>

#include "_sluice.h"

PyObject* sp_raise(int code, const char* message) {
  // A message may quote bytes of the input that are not UTF-8 (a codec
  // name, a value): they show as \xNN rather than failing the decode.
  PyObject* text = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "backslashreplace");
  if (text == NULL) return NULL;
  PyObject* module = PyImport_ImportModule("sluice._errors");
  if (module == NULL) {
    Py_DECREF(text);
    return NULL;
  }
  PyObject* exc = PyObject_CallMethod(module, "from_code", "iO", code, text);
  Py_DECREF(module);
  Py_DECREF(text);
  if (exc == NULL) return NULL;
  PyErr_SetObject((PyObject*)Py_TYPE(exc), exc);
  Py_DECREF(exc);
  return NULL;
}

PyObject* sp_raise_error(const struct sluice_error* error) {
  int code = error->code != 0 ? error->code : EIO;
  const char* message = error->message[0] != '\0' ? error->message : "sluice: unknown error";
  return sp_raise(code, message);
}
