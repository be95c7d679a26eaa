#ifndef PEREGRINE_CPYTHON_SHIM_H
#define PEREGRINE_CPYTHON_SHIM_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#endif
