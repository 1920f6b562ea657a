/* The compiled build of kernbench/sim/fairshare.py: progressive filling in C.
 *
 * fairshare.py states the problem and the algorithm, and is what the pure-Python build
 * runs; this file is the same function, step for step, for the compiled build
 * (setup.py builds it in place of a mypyc-compiled fairshare.py). mypyc keeps every
 * list element boxed: its fill cost about 4,000 instructions per queue (a Triton
 * launch's solves were 59% of its simulation), where this one works on C arrays.
 *
 * The two must give the same rates bit for bit: the same float operations in the same
 * order (IEEE doubles, no contraction: setup.py compiles this with -ffp-contract=off),
 * the same tie rule (the lowest key, the first used link among equal ones).
 * tests/test_fairshare_native.py compares them on random inputs, and the pinned
 * digests hold for both builds.
 *
 * Per-link state is indexed by a link's place in the order of first use ("u"), not by
 * its id: a solve touches a few dozen of a topology's hundreds of links.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* A rate below this many bytes/ns is rounding, never a real share (fairshare.NO_RATE). */
static const double NO_RATE = 1e-9;

/* Link id -> its u in this call: a table kept between calls, valid where its stamp is
 * this call's (no clearing of hundreds of entries per call). */
static Py_ssize_t *slot_of = NULL;
static unsigned long *stamp_of = NULL;
static Py_ssize_t slots = 0;
static unsigned long stamp = 0;

static int
reserve_slots(Py_ssize_t nlinks)
{
    if (nlinks <= slots)
        return 0;
    Py_ssize_t *s = PyMem_Realloc(slot_of, (size_t)nlinks * sizeof(Py_ssize_t));
    if (s == NULL)
        return -1;
    slot_of = s;
    unsigned long *t = PyMem_Realloc(stamp_of, (size_t)nlinks * sizeof(unsigned long));
    if (t == NULL)
        return -1;
    stamp_of = t;
    memset(stamp_of + slots, 0, (size_t)(nlinks - slots) * sizeof(unsigned long));
    slots = nlinks;
    return 0;
}

typedef struct {
    /* per queue */
    double *rate, *began;
    char *frozen, *running;
    Py_ssize_t *owner, *qlink_at, *qlinks; /* qlinks[qlink_at[q] .. qlink_at[q+1]): u's */
    /* per used link u */
    double *bw, *load, *starts, *key;
    Py_ssize_t *active;
    char *full, *moved;
    Py_ssize_t *user_at, *users; /* queues on u, in queue order (CSR) */
    /* per requester */
    Py_ssize_t *mine_at, *mine, *at; /* its queues, oldest first (CSR); its active one */
    /* scratch */
    Py_ssize_t *hit, *touched, *fill;
} Arrays;

static void
release(Arrays *a)
{
    void **all = (void **)a;
    for (size_t i = 0; i < sizeof(Arrays) / sizeof(void *); i++)
        PyMem_Free(all[i]);
}

#define NEW(ptr, count) \
    ((ptr) = PyMem_Calloc((size_t)((count) > 0 ? (count) : 1), sizeof(*(ptr))))

static PyObject *
progressive_fill(PyObject *module, PyObject *args)
{
    PyObject *requesters, *links, *bw;
    if (!PyArg_ParseTuple(args, "O!O!O!:progressive_fill", &PyList_Type, &requesters,
                          &PyList_Type, &links, &PyList_Type, &bw))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(links), nlinks = PyList_GET_SIZE(bw);
    if (PyList_GET_SIZE(requesters) != n) {
        PyErr_SetString(PyExc_ValueError, "progressive_fill: one requester per queue");
        return NULL;
    }
    if (reserve_slots(nlinks) < 0)
        return PyErr_NoMemory();
    stamp++;

    Arrays a;
    memset(&a, 0, sizeof(a));
    PyObject *index = NULL, *result = NULL;
    Py_ssize_t refs = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *route = PyList_GET_ITEM(links, q);
        if (!PyTuple_Check(route)) {
            PyErr_SetString(PyExc_TypeError, "progressive_fill: a queue's links are a tuple");
            return NULL;
        }
        refs += PyTuple_GET_SIZE(route);
    }
    if (!NEW(a.rate, n) || !NEW(a.began, n) || !NEW(a.frozen, n) || !NEW(a.running, n) ||
        !NEW(a.owner, n) || !NEW(a.qlink_at, n + 1) || !NEW(a.qlinks, refs) ||
        !NEW(a.bw, refs) || !NEW(a.load, refs) || !NEW(a.starts, refs) || !NEW(a.key, refs) ||
        !NEW(a.active, refs) || !NEW(a.full, refs) || !NEW(a.moved, refs) ||
        !NEW(a.user_at, refs + 1) || !NEW(a.users, refs) || !NEW(a.mine_at, n + 1) ||
        !NEW(a.mine, n) || !NEW(a.at, n) || !NEW(a.hit, n) || !NEW(a.touched, refs) ||
        !NEW(a.fill, (refs > n ? refs : n) + 1)) {
        PyErr_NoMemory();
        goto done;
    }

    /* Number the links in order of first use; each queue's links as u's; count the
     * queues on each link and each requester's queues. */
    Py_ssize_t used = 0, nreq = 0;
    index = PyDict_New();
    if (index == NULL)
        goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *who = PyList_GET_ITEM(requesters, q);
        PyObject *r = PyDict_GetItemWithError(index, who);
        if (r == NULL) {
            if (PyErr_Occurred())
                goto done;
            r = PyLong_FromSsize_t(nreq);
            if (r == NULL || PyDict_SetItem(index, who, r) < 0) {
                Py_XDECREF(r);
                goto done;
            }
            Py_DECREF(r);
            a.owner[q] = nreq++;
        }
        else
            a.owner[q] = PyLong_AsSsize_t(r);
        a.mine_at[a.owner[q] + 1]++;
        PyObject *route = PyList_GET_ITEM(links, q);
        Py_ssize_t k = PyTuple_GET_SIZE(route), base = a.qlink_at[q];
        a.qlink_at[q + 1] = base + k;
        for (Py_ssize_t j = 0; j < k; j++) {
            Py_ssize_t id = PyLong_AsSsize_t(PyTuple_GET_ITEM(route, j));
            if (id == -1 && PyErr_Occurred())
                goto done;
            if (id < 0 || id >= nlinks) {
                PyErr_Format(PyExc_IndexError, "progressive_fill: link id %zd of %zd", id,
                             nlinks);
                goto done;
            }
            Py_ssize_t u;
            if (stamp_of[id] != stamp) {
                stamp_of[id] = stamp;
                u = slot_of[id] = used++;
                a.bw[u] = PyFloat_AsDouble(PyList_GET_ITEM(bw, id));
                if (a.bw[u] == -1.0 && PyErr_Occurred())
                    goto done;
            }
            else
                u = slot_of[id];
            a.qlinks[base + j] = u;
            a.user_at[u + 1]++;
        }
    }
    for (Py_ssize_t u = 0; u < used; u++)
        a.user_at[u + 1] += a.user_at[u];
    for (Py_ssize_t r = 0; r < nreq; r++)
        a.mine_at[r + 1] += a.mine_at[r];
    memset(a.fill, 0, (size_t)((refs > n ? refs : n) + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t q = 0; q < n; q++) {
        for (Py_ssize_t j = a.qlink_at[q]; j < a.qlink_at[q + 1]; j++) {
            Py_ssize_t u = a.qlinks[j];
            a.users[a.user_at[u] + a.fill[u]++] = q;
        }
    }
    memset(a.fill, 0, (size_t)((refs > n ? refs : n) + 1) * sizeof(Py_ssize_t));
    for (Py_ssize_t q = 0; q < n; q++) {
        Py_ssize_t r = a.owner[q];
        a.mine[a.mine_at[r] + a.fill[r]++] = q;
    }

    /* Every requester starts its oldest queue at level 0. */
    for (Py_ssize_t r = 0; r < nreq; r++) {
        Py_ssize_t q = a.mine[a.mine_at[r]];
        a.at[r] = 0;
        a.running[q] = 1;
        for (Py_ssize_t j = a.qlink_at[q]; j < a.qlink_at[q + 1]; j++)
            a.active[a.qlinks[j]] += 1;
    }
    for (Py_ssize_t u = 0; u < used; u++)
        if (a.active[u])
            a.key[u] = a.bw[u] / (double)a.active[u];

    for (;;) {
        /* The next link to saturate: the lowest key, the first used among equal ones. */
        Py_ssize_t lk = -1;
        double level = 0.0;
        for (Py_ssize_t u = 0; u < used; u++) {
            if (a.active[u] && !a.full[u] && (lk < 0 || a.key[u] < level)) {
                lk = u;
                level = a.key[u];
            }
        }
        if (lk < 0)
            break;
        a.full[lk] = 1;
        Py_ssize_t hits = 0, touched = 0;
        for (Py_ssize_t j = a.user_at[lk]; j < a.user_at[lk + 1]; j++) {
            Py_ssize_t q = a.users[j];
            if (!a.frozen[q]) {
                a.frozen[q] = 1;
                if (a.running[q])
                    a.hit[hits++] = q;
            }
        }
        for (Py_ssize_t h = 0; h < hits; h++) {
            Py_ssize_t q = a.hit[h];
            a.running[q] = 0;
            double share = level - a.began[q];
            if (share <= NO_RATE)
                share = 0.0;
            a.rate[q] = share;
            double b = a.began[q];
            for (Py_ssize_t j = a.qlink_at[q]; j < a.qlink_at[q + 1]; j++) {
                Py_ssize_t other = a.qlinks[j];
                if (other != lk) {
                    a.active[other] -= 1;
                    a.starts[other] -= b;
                    a.load[other] += share;
                    if (!a.moved[other]) {
                        a.moved[other] = 1;
                        a.touched[touched++] = other;
                    }
                }
            }
            Py_ssize_t r = a.owner[q], first = a.mine_at[r], count = a.mine_at[r + 1] - first;
            Py_ssize_t i = a.at[r] + 1;
            while (i < count && a.frozen[a.mine[first + i]])
                i++;
            a.at[r] = i;
            if (i < count) {
                Py_ssize_t next = a.mine[first + i];
                a.running[next] = 1;
                a.began[next] = level;
                for (Py_ssize_t j = a.qlink_at[next]; j < a.qlink_at[next + 1]; j++) {
                    Py_ssize_t other = a.qlinks[j];
                    a.active[other] += 1;
                    a.starts[other] += level;
                    if (!a.moved[other]) {
                        a.moved[other] = 1;
                        a.touched[touched++] = other;
                    }
                }
            }
        }
        for (Py_ssize_t t = 0; t < touched; t++) {
            Py_ssize_t other = a.touched[t];
            a.moved[other] = 0;
            Py_ssize_t k = a.active[other];
            if (k)
                a.key[other] = (a.bw[other] - a.load[other] + a.starts[other]) / (double)k;
        }
    }

    result = PyList_New(n);
    if (result == NULL)
        goto done;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *x = PyFloat_FromDouble(a.rate[q]);
        if (x == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, q, x);
    }
done:
    Py_XDECREF(index);
    release(&a);
    return result;
}

static PyMethodDef methods[] = {
    {"progressive_fill", progressive_fill, METH_VARARGS,
     "progressive_fill(requesters, links, bw) -> rates: fairshare.py's, in C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef fairshare_module = {
    PyModuleDef_HEAD_INIT,
    "kernbench.sim.fairshare",
    "Progressive filling over requesters (the compiled build of fairshare.py).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit_fairshare(void)
{
    PyObject *m = PyModule_Create(&fairshare_module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObject(m, "NO_RATE", PyFloat_FromDouble(NO_RATE)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
