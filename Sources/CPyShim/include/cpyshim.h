// CPyShim: the CPython macros and static-inline functions, as real
// functions Swift can call. Nothing here holds logic of its own.
#ifndef PEREGRINE_CPYSHIM_H
#define PEREGRINE_CPYSHIM_H

// Python.h through the CPython module, so Swift sees one PyObject type.
#include "../../CPython/shim.h"
#include <stddef.h>
#include <stdint.h>

void pshim_incref(PyObject *o);
void pshim_decref(PyObject *o);
void pshim_xdecref(PyObject *o);
Py_ssize_t pshim_refcnt(PyObject *o);

PyObject *pshim_none(void);
PyObject *pshim_true(void);
PyObject *pshim_false(void);
PyObject *pshim_not_implemented(void);

int pshim_bytes_check(PyObject *o);
int pshim_bytearray_check(PyObject *o);
int pshim_unicode_check(PyObject *o);
int pshim_tuple_check(PyObject *o);
int pshim_list_check(PyObject *o);
int pshim_list_exact(PyObject *o);
int pshim_tuple_exact(PyObject *o);
int pshim_dict_check(PyObject *o);
int pshim_long_check(PyObject *o);
int pshim_bool_check(PyObject *o);
int pshim_is_type(PyObject *o, PyTypeObject *t);

char *pshim_bytes_data(PyObject *o);
Py_ssize_t pshim_bytes_size(PyObject *o);
char *pshim_bytearray_data(PyObject *o);
Py_ssize_t pshim_bytearray_size(PyObject *o);
PyObject *pshim_tuple_item(PyObject *o, Py_ssize_t i);
Py_ssize_t pshim_tuple_size(PyObject *o);
void pshim_tuple_set_item(PyObject *o, Py_ssize_t i, PyObject *v);  // steals v
PyObject *pshim_list_item(PyObject *o, Py_ssize_t i);
Py_ssize_t pshim_list_size(PyObject *o);

// Strong references out of containers another party may change (an
// application's list or dict: under free-threaded CPython another thread may
// replace the item while we use it). PyList_GetItemRef / PyDict_GetItemRef /
// PyDict_GetItemStringRef on 3.13+, the borrowing call plus an incref below.
// Each returns a new reference, or NULL: an index out of range (IndexError
// set), a missing key (no exception) or a failed lookup (exception set).
PyObject *pshim_list_get_ref(PyObject *list, Py_ssize_t i);
PyObject *pshim_dict_get_ref(PyObject *dict, PyObject *key);
PyObject *pshim_dict_get_ref_string(PyObject *dict, const char *key);

// The 1-byte-per-character (latin-1 range) contents of a str, without a
// copy; 0 if the str has wider characters.
int pshim_unicode_latin1(PyObject *s, const unsigned char **data, Py_ssize_t *length);
// A new str from latin-1 bytes.
PyObject *pshim_unicode_latin1_new(const char *data, Py_ssize_t length);
/// The decimal digits of `value` as a new str (a port number for REMOTE_PORT).
PyObject *pshim_unicode_decimal(long long value);
/// A dict with room for `minused` items before it must grow (copies of it
/// keep that room: see the WSGI environ template).
PyObject *pshim_dict_new_presized(Py_ssize_t minused);
/* Stores a value in *version that changes whenever the dict is modified
   (PEP 509's version tag) and returns 1; returns 0 on interpreters that no
   longer keep one (3.14 and later). */
int pshim_dict_version(PyObject *dict, uint64_t *version);

PyTypeObject *pshim_type(PyObject *o);
const char *pshim_type_name(PyObject *o);

// Vectorcall with positional arguments only.
PyObject *pshim_call0(PyObject *callable);
/* On a free-threaded build (Py_GIL_DISABLED), declares that module `m` is
 * safe without the GIL (PyUnstable_Module_SetGIL, Py_MOD_GIL_NOT_USED);
 * a no-op on builds with the GIL. */
void pshim_module_gil_not_used(PyObject *m);
PyObject *pshim_call1(PyObject *callable, PyObject *a);
PyObject *pshim_call2(PyObject *callable, PyObject *a, PyObject *b);
PyObject *pshim_call_method0(PyObject *o, const char *name);
PyObject *pshim_call3(PyObject *callable, PyObject *a, PyObject *b, PyObject *c);
PyObject *pshim_call5(PyObject *callable, PyObject *a, PyObject *b, PyObject *c, PyObject *d, PyObject *e);

// The interpreter this binary was built against (its sys.executable at build
// time); the default program name when the launcher does not name one.
const char *pshim_build_python(void);

// Py_Initialize with a program name (for sys.prefix / venv discovery) and
// argv. Returns NULL on success or a static message. On error the status
// message is copied to err.
int pshim_initialize(const char *program_name, int argc, char **argv, char *err, size_t errlen);

// The pending exception, normalised, with its traceback attached (new
// reference), cleared; NULL if none. PyErr_GetRaisedException before 3.12.
PyObject *pshim_fetch_exception(void);
// Raises `exc` again (steals the reference).
void pshim_restore_exception(PyObject *exc);

// Exception types (C globals are shared mutable state to Swift 6).
PyObject *pshim_exc_type_error(void);
PyObject *pshim_exc_exception(void);
PyObject *pshim_exc_value_error(void);
PyObject *pshim_exc_runtime_error(void);
PyObject *pshim_exc_os_error(void);
PyObject *pshim_exc_stop_iteration(void);
PyObject *pshim_exc_assertion_error(void);

// Frees an instance of a heap type and drops the instance's reference to
// its type, as a heap type's tp_dealloc must.
void pshim_heap_dealloc(PyObject *o);
// Raises StopIteration carrying `value` (any object, tuples included).
void pshim_stop_iteration(PyObject *value);
int pshim_gen_return(void);   // PYGEN_RETURN
int pshim_gen_error(void);    // PYGEN_ERROR

#endif
