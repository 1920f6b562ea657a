/* The compiled build of kernbench/sim/eventheap.py: heapq's heappush and heappop for
 * the PE queue's entries (time, eid, callback, argument).
 *
 * eventheap.py is heapq's own functions, which the pure-Python build runs; this file is
 * CPython's Modules/_heapqmodule.c (3.11) step for step with one change: two entries
 * are compared by `entry_less`, which reads a float time and an int eid in C where
 * heapq goes through tuple comparison (an equality test, then an order test, per item,
 * by generic calls). It gives the comparison's very answer (an entry is a tuple, its
 * eids unique), so the heap list is the one heapq leaves after every call; anything
 * else (a time that is not a float, a NaN, equal or huge eids) is compared as heapq
 * compares it. tests/test_eventheap_native.py drives both with the same operations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* 1 if a < b, 0 if not, -1 on an error: `a < b` for two tuples. */
static int
entry_less(PyObject *a, PyObject *b)
{
    if (PyTuple_CheckExact(a) && PyTuple_CheckExact(b) && PyTuple_GET_SIZE(a) >= 2 &&
        PyTuple_GET_SIZE(b) >= 2) {
        PyObject *ta = PyTuple_GET_ITEM(a, 0), *tb = PyTuple_GET_ITEM(b, 0);
        if (PyFloat_CheckExact(ta) && PyFloat_CheckExact(tb)) {
            double x = PyFloat_AS_DOUBLE(ta), y = PyFloat_AS_DOUBLE(tb);
            if (x < y)
                return 1;
            if (x > y)
                return 0;
            if (x == y) { /* a tie on time (not NaN): the eids decide */
                PyObject *ea = PyTuple_GET_ITEM(a, 1), *eb = PyTuple_GET_ITEM(b, 1);
                if (PyLong_CheckExact(ea) && PyLong_CheckExact(eb)) {
                    int over_a, over_b;
                    long long u = PyLong_AsLongLongAndOverflow(ea, &over_a);
                    long long v = PyLong_AsLongLongAndOverflow(eb, &over_b);
                    if (!over_a && !over_b && u != v)
                        return u < v;
                    if (PyErr_Occurred())
                        return -1;
                }
            }
        }
    }
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* The rest is _heapqmodule.c's siftdown, siftup, heappush and heappop. */

static int
siftdown(PyListObject *heap, Py_ssize_t startpos, Py_ssize_t pos)
{
    PyObject *newitem, *parent, **arr;
    Py_ssize_t parentpos, size;
    int cmp;

    size = PyList_GET_SIZE(heap);
    if (pos >= size) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return -1;
    }
    /* Follow the path to the root, moving parents down until finding a place
       newitem fits. */
    arr = heap->ob_item;
    newitem = arr[pos];
    while (pos > startpos) {
        parentpos = (pos - 1) >> 1;
        parent = arr[parentpos];
        Py_INCREF(newitem);
        Py_INCREF(parent);
        cmp = entry_less(newitem, parent);
        Py_DECREF(parent);
        Py_DECREF(newitem);
        if (cmp < 0)
            return -1;
        if (size != PyList_GET_SIZE(heap)) {
            PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
            return -1;
        }
        if (cmp == 0)
            break;
        arr = heap->ob_item;
        parent = arr[parentpos];
        newitem = arr[pos];
        arr[parentpos] = newitem;
        arr[pos] = parent;
        pos = parentpos;
    }
    return 0;
}

static int
siftup(PyListObject *heap, Py_ssize_t pos)
{
    Py_ssize_t startpos, endpos, childpos, limit;
    PyObject *tmp1, *tmp2, **arr;
    int cmp;

    endpos = PyList_GET_SIZE(heap);
    startpos = pos;
    if (pos >= endpos) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return -1;
    }
    /* Bubble up the smaller child until hitting a leaf. */
    arr = heap->ob_item;
    limit = endpos >> 1; /* smallest pos that has no child */
    while (pos < limit) {
        /* Set childpos to index of smaller child. */
        childpos = 2 * pos + 1; /* leftmost child position */
        if (childpos + 1 < endpos) {
            PyObject *a = arr[childpos];
            PyObject *b = arr[childpos + 1];
            Py_INCREF(a);
            Py_INCREF(b);
            cmp = entry_less(a, b);
            Py_DECREF(a);
            Py_DECREF(b);
            if (cmp < 0)
                return -1;
            childpos += ((unsigned)cmp ^ 1); /* increment when cmp==0 */
            arr = heap->ob_item;             /* arr may have changed */
            if (endpos != PyList_GET_SIZE(heap)) {
                PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
                return -1;
            }
        }
        /* Move the smaller child up. */
        tmp1 = arr[childpos];
        tmp2 = arr[pos];
        arr[childpos] = tmp2;
        arr[pos] = tmp1;
        pos = childpos;
    }
    /* Bubble it up to its final resting place (by sifting its parents down). */
    return siftdown(heap, startpos, pos);
}

static PyObject *
heappush(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "heappush expected 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *heap = args[0], *item = args[1];
    if (!PyList_Check(heap)) {
        PyErr_SetString(PyExc_TypeError, "heap argument must be a list");
        return NULL;
    }
    if (PyList_Append(heap, item))
        return NULL;
    if (siftdown((PyListObject *)heap, 0, PyList_GET_SIZE(heap) - 1))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
heappop(PyObject *module, PyObject *heap)
{
    PyObject *lastelt, *returnitem;
    Py_ssize_t n;

    if (!PyList_Check(heap)) {
        PyErr_SetString(PyExc_TypeError, "heap argument must be a list");
        return NULL;
    }
    /* raises IndexError if the heap is empty */
    n = PyList_GET_SIZE(heap);
    if (n == 0) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return NULL;
    }
    lastelt = PyList_GET_ITEM(heap, n - 1);
    Py_INCREF(lastelt);
    if (PyList_SetSlice(heap, n - 1, n, NULL)) {
        Py_DECREF(lastelt);
        return NULL;
    }
    n--;
    if (!n)
        return lastelt;
    returnitem = PyList_GET_ITEM(heap, 0);
    PyList_SET_ITEM(heap, 0, lastelt);
    if (siftup((PyListObject *)heap, 0)) {
        Py_DECREF(returnitem);
        return NULL;
    }
    return returnitem;
}

static PyMethodDef methods[] = {
    {"heappush", (PyCFunction)(void (*)(void))heappush, METH_FASTCALL,
     "heappush(heap, item): heapq's, comparing (float time, int eid) entries in C."},
    {"heappop", heappop, METH_O,
     "heappop(heap) -> item: heapq's, comparing (float time, int eid) entries in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef eventheap_module = {
    PyModuleDef_HEAD_INIT,
    "kernbench.sim.eventheap",
    "The PE queue's event heap (the compiled build of eventheap.py).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit_eventheap(void)
{
    return PyModule_Create(&eventheap_module);
}
