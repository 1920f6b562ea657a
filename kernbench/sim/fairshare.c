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
/* Past this many links a solve finds its lowest key on a heap, not by a scan
 * (fairshare.SCAN_MAX). */
static const Py_ssize_t SCAN_MAX = 64;

/* The links still to saturate as a binary heap by (key, u): its root is the link the
 * scan would pick (the lowest key, the first used among equal ones). ``where`` holds
 * each link's place in the heap plus one (0: not in it). */
typedef struct {
    Py_ssize_t *at;
    Py_ssize_t *where;
    const double *key;
    Py_ssize_t size;
} Heap;

static inline int
before(const Heap *h, Py_ssize_t a, Py_ssize_t b)
{
    return h->key[a] < h->key[b] || (h->key[a] == h->key[b] && a < b);
}

static void
sift_up(Heap *h, Py_ssize_t i)
{
    Py_ssize_t u = h->at[i];
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2, p = h->at[parent];
        if (!before(h, u, p))
            break;
        h->at[i] = p;
        h->where[p] = i + 1;
        i = parent;
    }
    h->at[i] = u;
    h->where[u] = i + 1;
}

static void
sift_down(Heap *h, Py_ssize_t i)
{
    Py_ssize_t u = h->at[i];
    for (;;) {
        Py_ssize_t child = 2 * i + 1;
        if (child >= h->size)
            break;
        if (child + 1 < h->size && before(h, h->at[child + 1], h->at[child]))
            child++;
        Py_ssize_t c = h->at[child];
        if (!before(h, c, u))
            break;
        h->at[i] = c;
        h->where[c] = i + 1;
        i = child;
    }
    h->at[i] = u;
    h->where[u] = i + 1;
}

/* Put link ``u`` in the heap under its current key, or take it out. */
static void
heap_set(Heap *h, Py_ssize_t u, int in)
{
    Py_ssize_t i = h->where[u] - 1;
    if (in) {
        if (i < 0) {
            i = h->size++;
            h->at[i] = u;
        }
        sift_up(h, i);
        sift_down(h, h->where[u] - 1);
    }
    else if (i >= 0) {
        h->where[u] = 0;
        Py_ssize_t last = h->at[--h->size];
        if (last != u) {
            h->at[i] = last;
            sift_up(h, i);
            sift_down(h, h->where[last] - 1);
        }
    }
}

/* Tables kept between calls (the GIL is held throughout, and a call never re-enters):
 * link id -> its u, and requester number -> its index in this call, each valid where
 * its stamp is this call's (no clearing of hundreds of entries per call); and one arena
 * the call's arrays are carved from (no allocation per call once it has grown). */
typedef struct {
    Py_ssize_t *slot;
    unsigned long *stamp;
    Py_ssize_t size;
} Table;

static Table link_table, requester_table;
static double *link_bw = NULL; /* by u: each used link's bandwidth */
static Py_ssize_t link_bw_size = 0;
static Py_ssize_t *indexed = NULL; /* the queues as numbers (progressive_fill) */
static Py_ssize_t indexed_size = 0;
static unsigned long stamp = 0;
static char *arena = NULL;
static size_t arena_size = 0;

static int
reserve(Table *t, Py_ssize_t size)
{
    if (size <= t->size)
        return 0;
    Py_ssize_t *s = PyMem_Realloc(t->slot, (size_t)size * sizeof(Py_ssize_t));
    if (s == NULL)
        return -1;
    t->slot = s;
    unsigned long *st = PyMem_Realloc(t->stamp, (size_t)size * sizeof(unsigned long));
    if (st == NULL)
        return -1;
    t->stamp = st;
    memset(t->stamp + t->size, 0, (size_t)(size - t->size) * sizeof(unsigned long));
    t->size = size;
    return 0;
}

/* The bytes ``count`` elements of ``size`` take in the arena (16-byte aligned). */
static size_t
span(Py_ssize_t count, size_t size)
{
    return ((size_t)(count > 0 ? count : 1) * size + 15) & ~(size_t)15;
}

/* Carve ``count`` zeroed elements of ``size`` bytes from the arena at ``*at``. */
static void *
carve(size_t *at, Py_ssize_t count, size_t size)
{
    size_t bytes = span(count, size);
    void *p = arena + *at;
    memset(p, 0, bytes);
    *at += bytes;
    return p;
}

static PyObject *
progressive_fill(PyObject *module, PyObject *args)
{
    PyObject *requesters, *links, *bw;
    Py_ssize_t scan_max = SCAN_MAX;
    if (!PyArg_ParseTuple(args, "O!O!O!|n:progressive_fill", &PyList_Type, &requesters,
                          &PyList_Type, &links, &PyList_Type, &bw, &scan_max))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(links), nlinks = PyList_GET_SIZE(bw);
    if (PyList_GET_SIZE(requesters) != n) {
        PyErr_SetString(PyExc_ValueError, "progressive_fill: one requester per queue");
        return NULL;
    }
    if (reserve(&link_table, nlinks) < 0)
        return PyErr_NoMemory();
    if (nlinks > link_bw_size) {
        double *grown = PyMem_Realloc(link_bw, (size_t)nlinks * sizeof(double));
        if (grown == NULL)
            return PyErr_NoMemory();
        link_bw = grown;
        link_bw_size = nlinks;
    }
    stamp++;

    /* Each queue's links and requester, numbered in order of first use: read once
     * into ``indexed`` (its requester's index, where its links start, their u's). */
    Py_ssize_t refs = 0, used = 0, nreq = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        PyObject *route = PyList_GET_ITEM(links, q);
        if (!PyTuple_Check(route)) {
            PyErr_SetString(PyExc_TypeError, "progressive_fill: a queue's links are a tuple");
            return NULL;
        }
        refs += PyTuple_GET_SIZE(route);
    }
    if (2 * n + 1 + refs > indexed_size) {
        Py_ssize_t size = 2 * n + 1 + refs;
        Py_ssize_t *grown = PyMem_Realloc(indexed, (size_t)size * sizeof(Py_ssize_t));
        if (grown == NULL)
            return PyErr_NoMemory();
        indexed = grown;
        indexed_size = size;
    }
    Py_ssize_t *owner = indexed, *qlink_at = indexed + n, *qlinks = indexed + 2 * n + 1;
    qlink_at[0] = 0;
    for (Py_ssize_t q = 0; q < n; q++) {
        Py_ssize_t who = PyLong_AsSsize_t(PyList_GET_ITEM(requesters, q));
        if (who == -1 && PyErr_Occurred())
            return NULL;
        if (who < 0) {
            PyErr_Format(PyExc_ValueError, "progressive_fill: requester number %zd < 0", who);
            return NULL;
        }
        if (reserve(&requester_table, who + 1) < 0)
            return PyErr_NoMemory();
        if (requester_table.stamp[who] != stamp) {
            requester_table.stamp[who] = stamp;
            requester_table.slot[who] = nreq++;
        }
        owner[q] = requester_table.slot[who];
        PyObject *route = PyList_GET_ITEM(links, q);
        Py_ssize_t k = PyTuple_GET_SIZE(route), base = qlink_at[q];
        qlink_at[q + 1] = base + k;
        for (Py_ssize_t j = 0; j < k; j++) {
            Py_ssize_t id = PyLong_AsSsize_t(PyTuple_GET_ITEM(route, j));
            if (id == -1 && PyErr_Occurred())
                return NULL;
            if (id < 0 || id >= nlinks) {
                PyErr_Format(PyExc_IndexError, "progressive_fill: link id %zd of %zd", id,
                             nlinks);
                return NULL;
            }
            if (link_table.stamp[id] != stamp) {
                link_table.stamp[id] = stamp;
                link_table.slot[id] = used;
                double b = PyFloat_AsDouble(PyList_GET_ITEM(bw, id));
                if (b == -1.0 && PyErr_Occurred())
                    return NULL;
                link_bw[used++] = b;
            }
            qlinks[base + j] = link_table.slot[id];
        }
    }

    /* Per queue, per used link u, per requester: zeroed arrays carved from the arena,
     * listed once (type, name, count): what the arena needs is their spans' sum. */
    Py_ssize_t most = (used > nreq ? used : nreq) + 1;
#define FILL_ARRAYS(X)                                                              \
    X(double, rate, n)                                                              \
    X(double, began, n)                                                             \
    X(char, frozen, n)                                                              \
    X(char, running, n)                                                             \
    X(Py_ssize_t, users, refs) /* queues on u, in order */                          \
    X(Py_ssize_t, hit, n)                                                           \
    X(Py_ssize_t, mine, n) /* a requester's, oldest first */                        \
    X(Py_ssize_t, placed, most)                                                     \
    X(double, load, used)                                                           \
    X(double, starts, used)                                                         \
    X(double, key, used)                                                            \
    X(Py_ssize_t, active, used)                                                     \
    X(Py_ssize_t, user_at, used + 1)                                                \
    X(Py_ssize_t, touched, used)                                                    \
    X(char, full, used)                                                             \
    X(char, moved, used)                                                            \
    X(Py_ssize_t, heaped, used)                                                     \
    X(Py_ssize_t, where, used)                                                      \
    X(Py_ssize_t, mine_at, nreq + 1)                                                \
    X(Py_ssize_t, next_of, nreq) /* "at": its active one */
#define SPAN_OF(type, name, count) +span((count), sizeof(type))
#define CARVE(type, name, count) type *name = carve(&at, (count), sizeof(type));
    size_t need = 0 FILL_ARRAYS(SPAN_OF);
    if (need > arena_size) {
        char *grown = PyMem_Realloc(arena, need);
        if (grown == NULL)
            return PyErr_NoMemory();
        arena = grown;
        arena_size = need;
    }
    size_t at = 0;
    FILL_ARRAYS(CARVE)
#undef CARVE
#undef SPAN_OF
#undef FILL_ARRAYS
    double *cap = link_bw; /* read in the first pass, by u */

    for (Py_ssize_t q = 0; q < n; q++) {
        mine_at[owner[q] + 1]++;
        for (Py_ssize_t j = qlink_at[q]; j < qlink_at[q + 1]; j++)
            user_at[qlinks[j] + 1]++;
    }
    for (Py_ssize_t u = 0; u < used; u++)
        user_at[u + 1] += user_at[u];
    for (Py_ssize_t r = 0; r < nreq; r++)
        mine_at[r + 1] += mine_at[r];
    for (Py_ssize_t q = 0; q < n; q++)
        for (Py_ssize_t j = qlink_at[q]; j < qlink_at[q + 1]; j++) {
            Py_ssize_t u = qlinks[j];
            users[user_at[u] + placed[u]++] = q;
        }
    memset(placed, 0, (size_t)most * sizeof(Py_ssize_t));
    for (Py_ssize_t q = 0; q < n; q++) {
        Py_ssize_t r = owner[q];
        mine[mine_at[r] + placed[r]++] = q;
    }

    /* Every requester starts its oldest queue at level 0. */
    for (Py_ssize_t r = 0; r < nreq; r++) {
        Py_ssize_t q = mine[mine_at[r]];
        running[q] = 1;
        for (Py_ssize_t j = qlink_at[q]; j < qlink_at[q + 1]; j++)
            active[qlinks[j]] += 1;
    }
    for (Py_ssize_t u = 0; u < used; u++)
        if (active[u])
            key[u] = cap[u] / (double)active[u];
    int scan = used <= scan_max; /* else the heap holds the links to saturate */
    Heap heap = {heaped, where, key, 0};
    if (!scan)
        for (Py_ssize_t u = 0; u < used; u++)
            if (active[u])
                heap_set(&heap, u, 1);

    for (;;) {
        /* The next link to saturate: the lowest key, the first used among equal ones. */
        Py_ssize_t lk = -1;
        double level = 0.0;
        if (scan) {
            for (Py_ssize_t u = 0; u < used; u++) {
                if (active[u] && !full[u] && (lk < 0 || key[u] < level)) {
                    lk = u;
                    level = key[u];
                }
            }
        }
        else if (heap.size) {
            lk = heaped[0];
            level = key[lk];
            heap_set(&heap, lk, 0);
        }
        if (lk < 0)
            break;
        full[lk] = 1;
        Py_ssize_t hits = 0, touches = 0;
        for (Py_ssize_t j = user_at[lk]; j < user_at[lk + 1]; j++) {
            Py_ssize_t q = users[j];
            if (!frozen[q]) {
                frozen[q] = 1;
                if (running[q])
                    hit[hits++] = q;
            }
        }
        for (Py_ssize_t h = 0; h < hits; h++) {
            Py_ssize_t q = hit[h];
            running[q] = 0;
            double share = level - began[q];
            if (share <= NO_RATE)
                share = 0.0;
            rate[q] = share;
            double b = began[q];
            for (Py_ssize_t j = qlink_at[q]; j < qlink_at[q + 1]; j++) {
                Py_ssize_t other = qlinks[j];
                if (other != lk) {
                    active[other] -= 1;
                    starts[other] -= b;
                    load[other] += share;
                    if (!moved[other]) {
                        moved[other] = 1;
                        touched[touches++] = other;
                    }
                }
            }
            Py_ssize_t r = owner[q], first = mine_at[r], count = mine_at[r + 1] - first;
            Py_ssize_t i = next_of[r] + 1;
            while (i < count && frozen[mine[first + i]])
                i++;
            next_of[r] = i;
            if (i < count) {
                Py_ssize_t next = mine[first + i];
                running[next] = 1;
                began[next] = level;
                for (Py_ssize_t j = qlink_at[next]; j < qlink_at[next + 1]; j++) {
                    Py_ssize_t other = qlinks[j];
                    active[other] += 1;
                    starts[other] += level;
                    if (!moved[other]) {
                        moved[other] = 1;
                        touched[touches++] = other;
                    }
                }
            }
        }
        for (Py_ssize_t t = 0; t < touches; t++) {
            Py_ssize_t other = touched[t];
            moved[other] = 0;
            Py_ssize_t k = active[other];
            if (k)
                key[other] = (cap[other] - load[other] + starts[other]) / (double)k;
            if (!scan)
                heap_set(&heap, other, k && !full[other]);
        }
    }

    PyObject *result = PyList_New(n);
    if (result == NULL)
        return NULL;
    PyObject *last = NULL; /* equal rates share one float (many are 0.0) */
    for (Py_ssize_t q = 0; q < n; q++) {
        if (last != NULL && memcmp(&rate[q], &rate[q - 1], sizeof(double)) == 0) {
            Py_INCREF(last);
        }
        else {
            last = PyFloat_FromDouble(rate[q]);
            if (last == NULL) {
                Py_DECREF(result);
                return NULL;
            }
        }
        PyList_SET_ITEM(result, q, last);
    }
    return result;
}

/* age_order: positions by (head, position), a merge sort with the comparison inline
 * (qsort's comparator call and element copies cost twice as much here). */
typedef struct {
    long long head;
    Py_ssize_t at;
} Aged;

static Aged *aged = NULL, *spare = NULL;
static Py_ssize_t aged_size = 0;

static void
merge_sort(Aged *a, Aged *tmp, Py_ssize_t n)
{
    if (n < 12) { /* insertion sort: stable, and cheapest for short runs */
        for (Py_ssize_t i = 1; i < n; i++) {
            Aged x = a[i];
            Py_ssize_t j = i;
            while (j > 0 && a[j - 1].head > x.head) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    Py_ssize_t half = n / 2;
    merge_sort(a, tmp, half);
    merge_sort(a + half, tmp, n - half);
    if (a[half - 1].head <= a[half].head)
        return; /* already in order */
    memcpy(tmp, a, (size_t)half * sizeof(Aged));
    Py_ssize_t i = 0, j = half, k = 0;
    while (i < half && j < n)
        a[k++] = a[j].head < tmp[i].head ? a[j++] : tmp[i++];
    while (i < half)
        a[k++] = tmp[i++];
}

static PyObject *
age_order(PyObject *module, PyObject *heads)
{
    if (!PyList_Check(heads)) {
        PyErr_SetString(PyExc_TypeError, "age_order: heads are a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(heads);
    if (n > aged_size) {
        Aged *grown = PyMem_Realloc(aged, (size_t)n * sizeof(Aged));
        if (grown == NULL)
            return PyErr_NoMemory();
        aged = grown;
        grown = PyMem_Realloc(spare, (size_t)n * sizeof(Aged));
        if (grown == NULL)
            return PyErr_NoMemory();
        spare = grown;
        aged_size = n;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long head = PyLong_AsLongLong(PyList_GET_ITEM(heads, i));
        if (head == -1 && PyErr_Occurred())
            return NULL;
        aged[i].head = head;
        aged[i].at = i;
    }
    merge_sort(aged, spare, n);
    PyObject *result = PyList_New(n);
    if (result == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromSsize_t(aged[i].at);
        if (x == NULL) {
            Py_DECREF(result);
            return NULL;
        }
        PyList_SET_ITEM(result, i, x);
    }
    return result;
}

static PyMethodDef methods[] = {
    {"progressive_fill", progressive_fill, METH_VARARGS,
     "progressive_fill(requesters, links, bw, scan_max=SCAN_MAX) -> rates: fairshare.py's, "
     "in C."},
    {"age_order", age_order, METH_O, "age_order(heads) -> positions: fairshare.py's, in C."},
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
