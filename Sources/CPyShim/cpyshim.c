#include "cpyshim.h"
#include <string.h>

void pshim_incref(PyObject *o) { Py_INCREF(o); }
void pshim_decref(PyObject *o) { Py_DECREF(o); }
void pshim_xdecref(PyObject *o) { Py_XDECREF(o); }
Py_ssize_t pshim_refcnt(PyObject *o) { return Py_REFCNT(o); }

PyObject *pshim_none(void) { return Py_None; }
PyObject *pshim_true(void) { return Py_True; }
PyObject *pshim_false(void) { return Py_False; }
PyObject *pshim_not_implemented(void) { return Py_NotImplemented; }

int pshim_bytes_check(PyObject *o) { return PyBytes_Check(o); }
int pshim_bytearray_check(PyObject *o) { return PyByteArray_Check(o); }
int pshim_unicode_check(PyObject *o) { return PyUnicode_Check(o); }
int pshim_tuple_check(PyObject *o) { return PyTuple_Check(o); }
int pshim_list_check(PyObject *o) { return PyList_Check(o); }
int pshim_dict_check(PyObject *o) { return PyDict_Check(o); }
int pshim_long_check(PyObject *o) { return PyLong_Check(o); }
int pshim_bool_check(PyObject *o) { return PyBool_Check(o); }
int pshim_is_type(PyObject *o, PyTypeObject *t) { return Py_IS_TYPE(o, t); }

char *pshim_bytes_data(PyObject *o) { return PyBytes_AS_STRING(o); }
Py_ssize_t pshim_bytes_size(PyObject *o) { return PyBytes_GET_SIZE(o); }
char *pshim_bytearray_data(PyObject *o) { return PyByteArray_AS_STRING(o); }
Py_ssize_t pshim_bytearray_size(PyObject *o) { return PyByteArray_GET_SIZE(o); }
PyObject *pshim_tuple_item(PyObject *o, Py_ssize_t i) { return PyTuple_GET_ITEM(o, i); }
Py_ssize_t pshim_tuple_size(PyObject *o) { return PyTuple_GET_SIZE(o); }
void pshim_tuple_set_item(PyObject *o, Py_ssize_t i, PyObject *v) { PyTuple_SET_ITEM(o, i, v); }
PyObject *pshim_list_item(PyObject *o, Py_ssize_t i) { return PyList_GET_ITEM(o, i); }
Py_ssize_t pshim_list_size(PyObject *o) { return PyList_GET_SIZE(o); }

PyObject *pshim_list_get_ref(PyObject *list, Py_ssize_t i) {
#if PY_VERSION_HEX >= 0x030D0000
    return PyList_GetItemRef(list, i);
#else
    PyObject *item = PyList_GetItem(list, i);
    Py_XINCREF(item);
    return item;
#endif
}

PyObject *pshim_dict_get_ref(PyObject *dict, PyObject *key) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *item = NULL;
    (void)PyDict_GetItemRef(dict, key, &item);
    return item;
#else
    PyObject *item = PyDict_GetItemWithError(dict, key);
    Py_XINCREF(item);
    return item;
#endif
}

PyObject *pshim_dict_get_ref_string(PyObject *dict, const char *key) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *item = NULL;
    (void)PyDict_GetItemStringRef(dict, key, &item);
    return item;
#else
    PyObject *k = PyUnicode_FromString(key);
    if (k == NULL) return NULL;
    PyObject *item = PyDict_GetItemWithError(dict, k);
    Py_DECREF(k);
    Py_XINCREF(item);
    return item;
#endif
}

int pshim_unicode_latin1(PyObject *s, const unsigned char **data, Py_ssize_t *length) {
    if (PyUnicode_KIND(s) != PyUnicode_1BYTE_KIND) return 0;
    *data = (const unsigned char *)PyUnicode_DATA(s);
    *length = PyUnicode_GET_LENGTH(s);
    return 1;
}

PyObject *pshim_unicode_latin1_new(const char *data, Py_ssize_t length) {
    return PyUnicode_DecodeLatin1(data, length, NULL);
}

PyObject *pshim_unicode_decimal(long long value) {
    char digits[24];
    int n = 0;
    unsigned long long v = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do { digits[sizeof digits - 1 - n++] = (char)('0' + v % 10); v /= 10; } while (v != 0);
    if (value < 0) digits[sizeof digits - 1 - n++] = '-';
    PyObject *s = PyUnicode_New(n, 127);
    if (s == NULL) return NULL;
    memcpy(PyUnicode_1BYTE_DATA(s), digits + sizeof digits - n, (size_t)n);
    return s;
}

int pshim_dict_version(PyObject *dict, uint64_t *version) {
#if PY_VERSION_HEX < 0x030E0000
    /* Deprecated since 3.12 (PEP 699) but still advanced on every change
       through 3.13, atomically on free-threaded builds. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    *version = ((PyDictObject *)dict)->ma_version_tag;
#pragma GCC diagnostic pop
    return 1;
#else
    (void)dict;
    *version = 0;
    return 0;
#endif
}

PyObject *pshim_dict_new_presized(Py_ssize_t minused) {
#if PY_VERSION_HEX < 0x030F0000
    return _PyDict_NewPresized(minused);
#else
    (void)minused;
    return PyDict_New();
#endif
}

PyTypeObject *pshim_type(PyObject *o) { return Py_TYPE(o); }
const char *pshim_type_name(PyObject *o) { return Py_TYPE(o)->tp_name; }

PyObject *pshim_call0(PyObject *callable) { return PyObject_CallNoArgs(callable); }

void pshim_module_gil_not_used(PyObject *m) {
#ifdef Py_GIL_DISABLED
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#else
    (void)m;
#endif
}
PyObject *pshim_call1(PyObject *callable, PyObject *a) { return PyObject_CallOneArg(callable, a); }
PyObject *pshim_call2(PyObject *callable, PyObject *a, PyObject *b) {
    PyObject *args[3] = {NULL, a, b};
    return PyObject_Vectorcall(callable, args + 1, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}
PyObject *pshim_call3(PyObject *callable, PyObject *a, PyObject *b, PyObject *c) {
    PyObject *args[4] = {NULL, a, b, c};
    return PyObject_Vectorcall(callable, args + 1, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

PyObject *pshim_call5(PyObject *callable, PyObject *a, PyObject *b, PyObject *c, PyObject *d, PyObject *e) {
    PyObject *args[6] = {NULL, a, b, c, d, e};
    return PyObject_Vectorcall(callable, args + 1, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

#ifndef PEREGRINE_BUILD_PYTHON
#define PEREGRINE_BUILD_PYTHON ""
#endif
const char *pshim_build_python(void) { return PEREGRINE_BUILD_PYTHON; }

int pshim_initialize(const char *program_name, int argc, char **argv, char *err, size_t errlen) {
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    // The embedded interpreter must not install its own signal handlers:
    // the server owns SIGINT/SIGTERM/SIGHUP through a signalfd.
    config.install_signal_handlers = 0;
    config.parse_argv = 0;
    PyStatus status;
    if (program_name && program_name[0]) {
        status = PyConfig_SetBytesString(&config, &config.program_name, program_name);
        if (PyStatus_Exception(status)) goto fail;
        // `executable` drives prefix and pyvenv.cfg discovery, so the
        // embedded interpreter sees the same site-packages as that python.
        status = PyConfig_SetBytesString(&config, &config.executable, program_name);
        if (PyStatus_Exception(status)) goto fail;
    }
    status = PyConfig_SetBytesArgv(&config, argc, argv);
    if (PyStatus_Exception(status)) goto fail;
    status = Py_InitializeFromConfig(&config);
    if (PyStatus_Exception(status)) goto fail;
    PyConfig_Clear(&config);
    return 0;
fail:
    snprintf(err, errlen, "%s%s%s", status.func ? status.func : "", status.func ? ": " : "",
             status.err_msg ? status.err_msg : "Python initialisation failed");
    PyConfig_Clear(&config);
    return -1;
}

PyObject *pshim_fetch_exception(void) {
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (!type) return NULL;
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb && value) PyException_SetTraceback(value, tb);
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

void pshim_restore_exception(PyObject *exc) {
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore((PyObject *)Py_TYPE(exc), exc, tb);
    Py_INCREF(Py_TYPE(exc));
#endif
}

PyObject *pshim_exc_type_error(void) { return PyExc_TypeError; }
PyObject *pshim_exc_exception(void) { return PyExc_Exception; }
PyObject *pshim_exc_value_error(void) { return PyExc_ValueError; }
PyObject *pshim_exc_runtime_error(void) { return PyExc_RuntimeError; }
PyObject *pshim_exc_os_error(void) { return PyExc_OSError; }
PyObject *pshim_exc_stop_iteration(void) { return PyExc_StopIteration; }
PyObject *pshim_exc_assertion_error(void) { return PyExc_AssertionError; }

PyObject *pshim_call_method0(PyObject *o, const char *name) {
    PyObject *n = PyUnicode_FromString(name);
    if (!n) return NULL;
    PyObject *r = PyObject_CallMethodNoArgs(o, n);
    Py_DECREF(n);
    return r;
}
int pshim_list_exact(PyObject *o) { return PyList_CheckExact(o); }
int pshim_tuple_exact(PyObject *o) { return PyTuple_CheckExact(o); }

void pshim_heap_dealloc(PyObject *o) {
    PyTypeObject *tp = Py_TYPE(o);
    tp->tp_free(o);
    Py_DECREF(tp);
}

void pshim_stop_iteration(PyObject *value) {
    PyObject *exc = PyObject_CallOneArg(PyExc_StopIteration, value);
    if (exc) {
        PyErr_SetObject(PyExc_StopIteration, exc);
        Py_DECREF(exc);
    }
}

int pshim_gen_return(void) { return PYGEN_RETURN; }
int pshim_gen_error(void) { return PYGEN_ERROR; }
