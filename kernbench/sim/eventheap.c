/* The compiled build of kernbench/sim/eventheap.py: heapq's heappush and heappop for
 * the PE queue's entries (time, eid, callback, argument), on a list or on an EventHeap.
 *
 * eventheap.py is heapq's own functions, which the pure-Python build runs; this file is
 * CPython's Modules/_heapqmodule.c (3.11) step for step with two changes. Two entries
 * are compared by `entry_less`, which reads a float time and an int eid in C where
 * heapq goes through tuple comparison (an equality test, then an order test, per item,
 * by generic calls). And an EventHeap, a list that keeps each entry's (time, eid)
 * beside it in a C array, moving with it, is sifted on that array: a comparison reads
 * two keys side by side in memory, not two tuples and two floats wherever they were
 * allocated (1:1 `neighbor` on 1,024 PEs: about 2,000 entries, a pop comparing some
 * 22 pairs, and those tuples and floats were most of its cache misses). Either way it
 * gives the comparison's very answer (an entry is a tuple, its eids unique), so the list
 * is the one heapq leaves after every call; anything else (a time that is not a float,
 * a NaN, equal or huge eids) is compared as heapq compares it.
 * tests/test_eventheap_native.py drives both with the same operations.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

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

/* An entry's key as the fast comparison reads it: `exact` when its time is a float that
 * is not a NaN and its eid an int within a long long; otherwise entries are compared
 * as tuples. */
typedef struct {
    double t;
    long long eid;
    int exact;
} Key;

static Key
key_of(PyObject *item)
{
    Key k = {0.0, 0, 0};
    if (PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) >= 2) {
        PyObject *t = PyTuple_GET_ITEM(item, 0), *e = PyTuple_GET_ITEM(item, 1);
        if (PyFloat_CheckExact(t) && PyLong_CheckExact(e)) {
            int over; /* (an exact int raises nothing: it overflows or converts) */
            long long v = PyLong_AsLongLongAndOverflow(e, &over);
            if (!over && !isnan(PyFloat_AS_DOUBLE(t))) {
                k.t = PyFloat_AS_DOUBLE(t);
                k.eid = v;
                k.exact = 1;
            }
        }
    }
    return k;
}

/* A list whose entries' keys are kept, in the same order, in `keys` (`n` of them, room
 * for `cap`): only heappush and heappop may change it, which they check. */
typedef struct {
    PyListObject list;
    Key *keys;
    Py_ssize_t n;
    Py_ssize_t cap;
} EventHeap;

static PyTypeObject EventHeapType;

/* The heap being sifted: its items, and, for an EventHeap, itself (its keys). */
typedef struct {
    PyListObject *heap;
    EventHeap *eh; /* NULL for a plain list */
} Sift;

/* 1 if item i < item j, 0 if not, -1 on an error (a comparison that ran Python code
 * and changed the list's size is an error, as heapq's). */
static int
less(Sift *s, Py_ssize_t i, Py_ssize_t j)
{
    if (s->eh != NULL) {
        Key *a = &s->eh->keys[i], *b = &s->eh->keys[j];
        if (a->exact && b->exact) {
            if (a->t < b->t)
                return 1;
            if (a->t > b->t)
                return 0;
            if (a->eid != b->eid)
                return a->eid < b->eid;
        }
    }
    Py_ssize_t size = PyList_GET_SIZE(s->heap);
    PyObject *a = s->heap->ob_item[i], *b = s->heap->ob_item[j];
    Py_INCREF(a);
    Py_INCREF(b);
    int cmp = entry_less(a, b);
    Py_DECREF(a);
    Py_DECREF(b);
    if (cmp >= 0 && size != PyList_GET_SIZE(s->heap)) {
        PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
        return -1;
    }
    return cmp;
}

static void
swap(Sift *s, Py_ssize_t i, Py_ssize_t j)
{
    PyObject **arr = s->heap->ob_item, *tmp = arr[i];
    arr[i] = arr[j];
    arr[j] = tmp;
    if (s->eh != NULL) {
        Key *keys = s->eh->keys;
        Key k = keys[i];
        keys[i] = keys[j];
        keys[j] = k;
    }
}

/* The rest is _heapqmodule.c's siftdown, siftup, heappush and heappop, on a Sift. */

static int
siftdown(Sift *s, Py_ssize_t startpos, Py_ssize_t pos)
{
    Py_ssize_t parentpos;
    int cmp;

    if (pos >= PyList_GET_SIZE(s->heap)) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return -1;
    }
    /* Follow the path to the root, moving parents down until finding a place
       newitem fits. */
    while (pos > startpos) {
        parentpos = (pos - 1) >> 1;
        cmp = less(s, pos, parentpos);
        if (cmp < 0)
            return -1;
        if (cmp == 0)
            break;
        swap(s, parentpos, pos);
        pos = parentpos;
    }
    return 0;
}

static int
siftup(Sift *s, Py_ssize_t pos)
{
    Py_ssize_t startpos, endpos, childpos, limit;
    int cmp;

    endpos = PyList_GET_SIZE(s->heap);
    startpos = pos;
    if (pos >= endpos) {
        PyErr_SetString(PyExc_IndexError, "index out of range");
        return -1;
    }
    /* Bubble up the smaller child until hitting a leaf. */
    limit = endpos >> 1; /* smallest pos that has no child */
    while (pos < limit) {
        /* Set childpos to index of smaller child. */
        childpos = 2 * pos + 1; /* leftmost child position */
        if (childpos + 1 < endpos) {
            cmp = less(s, childpos, childpos + 1);
            if (cmp < 0)
                return -1;
            childpos += ((unsigned)cmp ^ 1); /* increment when cmp==0 */
        }
        /* Move the smaller child up. */
        swap(s, childpos, pos);
        pos = childpos;
    }
    /* Bubble it up to its final resting place (by sifting its parents down). */
    return siftdown(s, startpos, pos);
}

/* The Sift of `heap`, a list or an EventHeap; -1 (an error set) if it is neither, or
 * an EventHeap changed by anything but heappush and heappop. */
static int
sift_of(PyObject *heap, Sift *s)
{
    if (!PyList_Check(heap)) {
        PyErr_SetString(PyExc_TypeError, "heap argument must be a list");
        return -1;
    }
    s->heap = (PyListObject *)heap;
    s->eh = NULL;
    if (Py_IS_TYPE(heap, &EventHeapType)) {
        EventHeap *h = (EventHeap *)heap;
        if (h->n != PyList_GET_SIZE(heap)) {
            PyErr_SetString(PyExc_RuntimeError,
                            "an EventHeap changed other than by heappush and heappop");
            return -1;
        }
        s->eh = h;
    }
    return 0;
}

static PyObject *
heappush(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Sift s;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "heappush expected 2 arguments, got %zd", nargs);
        return NULL;
    }
    PyObject *heap = args[0], *item = args[1];
    if (sift_of(heap, &s))
        return NULL;
    if (s.eh != NULL) {
        EventHeap *h = s.eh;
        if (h->n == h->cap) {
            Py_ssize_t cap = h->cap ? 2 * h->cap : 64;
            Key *keys = PyMem_Realloc(h->keys, (size_t)cap * sizeof(Key));
            if (keys == NULL)
                return PyErr_NoMemory();
            h->keys = keys;
            h->cap = cap;
        }
        if (PyList_Append(heap, item))
            return NULL;
        h->keys[h->n++] = key_of(item);
    }
    else if (PyList_Append(heap, item))
        return NULL;
    if (siftdown(&s, 0, PyList_GET_SIZE(heap) - 1))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
heappop(PyObject *module, PyObject *heap)
{
    PyObject *lastelt, *returnitem;
    Py_ssize_t n;
    Sift s;

    if (sift_of(heap, &s))
        return NULL;
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
    if (s.eh != NULL)
        s.eh->n = n;
    if (!n)
        return lastelt;
    returnitem = PyList_GET_ITEM(heap, 0);
    PyList_SET_ITEM(heap, 0, lastelt);
    if (s.eh != NULL)
        s.eh->keys[0] = s.eh->keys[n];
    if (siftup(&s, 0)) {
        Py_DECREF(returnitem);
        return NULL;
    }
    return returnitem;
}

static void
eventheap_dealloc(EventHeap *self)
{
    PyMem_Free(self->keys);
    self->keys = NULL;
    PyList_Type.tp_dealloc((PyObject *)self);
}

static PyTypeObject EventHeapType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kernbench.sim.eventheap.EventHeap",
    .tp_basicsize = sizeof(EventHeap),
    .tp_dealloc = (destructor)eventheap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT, /* the list's collector support is inherited */
    .tp_doc = "An empty list that keeps its entries' (time, eid) keys in a C array: "
              "change it only by heappush and heappop.",
};

static PyObject *
new_heap(PyObject *module, PyObject *unused)
{
    return PyType_GenericAlloc(&EventHeapType, 0);
}

static PyMethodDef methods[] = {
    {"new_heap", new_heap, METH_NOARGS, "new_heap() -> an empty EventHeap."},
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
    EventHeapType.tp_base = &PyList_Type;
    if (PyType_Ready(&EventHeapType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&eventheap_module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&EventHeapType);
    if (PyModule_AddObject(m, "EventHeap", (PyObject *)&EventHeapType) < 0) {
        Py_DECREF(&EventHeapType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
