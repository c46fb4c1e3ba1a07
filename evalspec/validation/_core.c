/*
 * evalspec.validation._core: the compiled part of the validator's fast path.
 *
 * The one check no installable JSON parser does for us: that no object in a
 * line repeats a key, at any depth. Every fast parser keeps the last of two
 * equal keys, so the fast path must prove their absence before it vouches for
 * a line. Without this module it proves it by colon accounting (see fast.py);
 * with it, one pass over the raw bytes decides, exactly: a key's identity is
 * its decoded string (escapes decoded, surrogate pairs joined, compared as
 * UTF-8 bytes), so "a" and "\u0061" are the same key.
 *
 * The scan trusts nothing. It is run on the raw line before or after a strict
 * parser looked at it, and its answer only ever adds a condition to vouching:
 * True means "this text is well nested, no deeper than max_depth, and no object
 * in it repeats a key". Anything else (a repeat, malformed nesting, a lone
 * surrogate escape, an invalid escape, a string left open, too deep) is False:
 * the line goes to the precise path, which reports every error. On text that is
 * valid JSON the scan's tokens are the parser's tokens, so True is exact there;
 * on text that is not, the strict parser has already refused the line.
 *
 * Memory: bounded by the line (one key record per key, one decoded copy of the
 * escaped keys); small lines use stack buffers only. Any allocation failure is
 * a False answer, never a crash (the fast path only vouches).
 *
 * Portable C99 plus the CPython API; no compiler extensions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash;
    size_t off;      /* in the raw text, or in the scratch buffer if scratch */
    size_t len;
    int scratch;     /* decoded into the scratch buffer (the key held an escape) */
    const char *ptr; /* resolved when its object closes, for the comparison */
} Key;

typedef struct {
    Key *keys;
    size_t n_keys, cap_keys;
    char *scratch;
    size_t n_scratch, cap_scratch;
    size_t *frames; /* per open container: first key index, or SIZE_MAX for an array */
    size_t cap_frames;
    int heap_keys, heap_scratch, heap_frames;
    int collide; /* every hash is 0: the comparisons alone must decide */
} Scan;

#define SMALL_KEYS 64
#define SMALL_SCRATCH 512
#define SMALL_FRAMES 64
#define IS_ARRAY SIZE_MAX

static int grow(void **buf, size_t *cap, size_t item, int *heap, size_t need) {
    size_t cap2 = *cap;
    void *fresh;
    while (cap2 < need) {
        if (cap2 > ((size_t)-1) / 4 / item)
            return 0;
        cap2 *= 2;
    }
    if (*heap) {
        fresh = realloc(*buf, cap2 * item);
        if (fresh == NULL)
            return 0;
    } else {
        fresh = malloc(cap2 * item);
        if (fresh == NULL)
            return 0;
        memcpy(fresh, *buf, *cap * item);
        *heap = 1;
    }
    *buf = fresh;
    *cap = cap2;
    return 1;
}

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    /* FNV-1a: keys are short; it only spares most byte comparisons. */
    uint64_t h = 1469598103934665603ULL;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static int hex4(const unsigned char *p, const unsigned char *end, unsigned *out) {
    unsigned v = 0;
    int i;
    if (end - p < 4)
        return 0;
    for (i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static int put_scratch(Scan *s, const void *bytes, size_t n) {
    if (s->n_scratch + n > s->cap_scratch &&
        !grow((void **)&s->scratch, &s->cap_scratch, 1, &s->heap_scratch, s->n_scratch + n))
        return 0;
    memcpy(s->scratch + s->n_scratch, bytes, n);
    s->n_scratch += n;
    return 1;
}

/* Decode the escaped key text [p, end) (between its quotes) into the scratch
 * buffer as UTF-8. 0 on an invalid escape or a lone surrogate. */
static int decode_key(Scan *s, const unsigned char *p, const unsigned char *end) {
    while (p < end) {
        const unsigned char *run = p;
        unsigned char out[4];
        unsigned cp, lo;
        size_t n;
        while (p < end && *p != '\\')
            p++;
        if (p > run && !put_scratch(s, run, (size_t)(p - run)))
            return 0;
        if (p >= end)
            break;
        p++; /* the backslash */
        if (p >= end)
            return 0;
        switch (*p) {
        case '"': out[0] = '"'; break;
        case '\\': out[0] = '\\'; break;
        case '/': out[0] = '/'; break;
        case 'b': out[0] = '\b'; break;
        case 'f': out[0] = '\f'; break;
        case 'n': out[0] = '\n'; break;
        case 'r': out[0] = '\r'; break;
        case 't': out[0] = '\t'; break;
        case 'u':
            if (!hex4(p + 1, end, &cp))
                return 0;
            p += 4;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return 0; /* a lone low surrogate */
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (end - p < 7 || p[1] != '\\' || p[2] != 'u' || !hex4(p + 3, end, &lo) ||
                    lo < 0xDC00 || lo > 0xDFFF)
                    return 0; /* a lone high surrogate */
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            }
            if (cp < 0x80) {
                out[0] = (unsigned char)cp;
                n = 1;
            } else if (cp < 0x800) {
                out[0] = (unsigned char)(0xC0 | (cp >> 6));
                out[1] = (unsigned char)(0x80 | (cp & 0x3F));
                n = 2;
            } else if (cp < 0x10000) {
                out[0] = (unsigned char)(0xE0 | (cp >> 12));
                out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                out[2] = (unsigned char)(0x80 | (cp & 0x3F));
                n = 3;
            } else {
                out[0] = (unsigned char)(0xF0 | (cp >> 18));
                out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
                out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
                out[3] = (unsigned char)(0x80 | (cp & 0x3F));
                n = 4;
            }
            p++;
            if (!put_scratch(s, out, n))
                return 0;
            continue;
        default:
            return 0;
        }
        p++;
        if (!put_scratch(s, out, 1))
            return 0;
    }
    return 1;
}

static int key_order(const void *a, const void *b) {
    const Key *x = (const Key *)a, *y = (const Key *)b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->len ? memcmp(x->ptr, y->ptr, x->len) : 0;
}

/* Whether the keys [first, n_keys) of the object closing now are all distinct. */
static int distinct(Scan *s, const unsigned char *raw, size_t first) {
    Key *k = s->keys + first;
    size_t n = s->n_keys - first, i, j;
    for (i = 0; i < n; i++)
        k[i].ptr = k[i].scratch ? s->scratch + k[i].off : (const char *)raw + k[i].off;
    if (n <= 16) {
        for (i = 1; i < n; i++)
            for (j = 0; j < i; j++)
                if (key_order(k + i, k + j) == 0)
                    return 0;
        return 1;
    }
    /* A large object: sorted, equal keys are neighbours (n log n, even when
     * every hash collides). The keys are dropped when their object closes. */
    qsort(k, n, sizeof(Key), key_order);
    for (i = 1; i < n; i++)
        if (key_order(k + i, k + i - 1) == 0)
            return 0;
    return 1;
}

/* 1: well nested, at most max_depth deep, no repeated key; 0: anything else. */
static int scan(Scan *s, const unsigned char *raw, size_t size, Py_ssize_t max_depth) {
    const unsigned char *p = raw, *end = raw + size;
    size_t depth = 0;
    int want_key = 0; /* the next string is a key */
    while (p < end) {
        unsigned char c = *p++;
        switch (c) {
        case '"': {
            const unsigned char *start = p;
            int escaped;
            for (;;) {
                const unsigned char *q = memchr(p, '"', (size_t)(end - p));
                const unsigned char *b;
                if (q == NULL)
                    return 0; /* a string left open */
                /* A quote preceded by an odd run of backslashes is escaped. */
                b = q;
                while (b > start && b[-1] == '\\')
                    b--;
                p = q + 1;
                if (((size_t)(q - b) & 1) == 0)
                    break;
            }
            escaped = memchr(start, '\\', (size_t)(p - 1 - start)) != NULL;
            if (want_key) {
                Key *k;
                size_t len = (size_t)(p - 1 - start);
                if (s->n_keys == s->cap_keys &&
                    !grow((void **)&s->keys, &s->cap_keys, sizeof(Key), &s->heap_keys,
                          s->n_keys + 1))
                    return 0;
                k = s->keys + s->n_keys;
                if (escaped) {
                    size_t at = s->n_scratch;
                    if (!decode_key(s, start, p - 1))
                        return 0;
                    k->scratch = 1;
                    k->off = at;
                    k->len = s->n_scratch - at;
                    k->hash = s->collide ? 0
                                         : hash_bytes((const unsigned char *)s->scratch + at,
                                                      k->len);
                } else {
                    k->scratch = 0;
                    k->off = (size_t)(start - raw);
                    k->len = len;
                    k->hash = s->collide ? 0 : hash_bytes(start, len);
                }
                k->ptr = NULL;
                s->n_keys++;
                want_key = 0;
            }
            break;
        }
        case '{':
        case '[':
            if (depth >= (size_t)max_depth)
                return 0;
            if (depth == s->cap_frames &&
                !grow((void **)&s->frames, &s->cap_frames, sizeof(size_t), &s->heap_frames,
                      depth + 1))
                return 0;
            s->frames[depth++] = c == '{' ? s->n_keys : IS_ARRAY;
            want_key = c == '{';
            break;
        case '}':
            if (depth == 0 || s->frames[depth - 1] == IS_ARRAY)
                return 0;
            depth--;
            if (!distinct(s, raw, s->frames[depth]))
                return 0;
            s->n_keys = s->frames[depth];
            want_key = 0;
            break;
        case ']':
            if (depth == 0 || s->frames[depth - 1] != IS_ARRAY)
                return 0;
            depth--;
            want_key = 0;
            break;
        case ',':
            want_key = depth > 0 && s->frames[depth - 1] != IS_ARRAY;
            break;
        default:
            break; /* ':', white space, numbers and literals: nothing to prove */
        }
    }
    return depth == 0;
}

static PyObject *unique_keys_impl(PyObject *const *args, Py_ssize_t nargs, int collide,
                                  const char *name) {
    Py_buffer view;
    Py_ssize_t max_depth;
    Key small_keys[SMALL_KEYS];
    char small_scratch[SMALL_SCRATCH];
    size_t small_frames[SMALL_FRAMES];
    Scan s;
    int ok;
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly 2 arguments (%zd given)", name, nargs);
        return NULL;
    }
    max_depth = PyLong_AsSsize_t(args[1]);
    if (max_depth == -1 && PyErr_Occurred())
        return NULL;
    if (max_depth < 0) {
        PyErr_SetString(PyExc_ValueError, "max_depth must be >= 0");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    s.keys = small_keys;
    s.n_keys = 0;
    s.cap_keys = SMALL_KEYS;
    s.scratch = small_scratch;
    s.n_scratch = 0;
    s.cap_scratch = SMALL_SCRATCH;
    s.frames = small_frames;
    s.cap_frames = SMALL_FRAMES;
    s.heap_keys = s.heap_scratch = s.heap_frames = 0;
    s.collide = collide;
    ok = scan(&s, (const unsigned char *)view.buf, (size_t)view.len, max_depth);
    if (s.heap_keys)
        free(s.keys);
    if (s.heap_scratch)
        free(s.scratch);
    if (s.heap_frames)
        free(s.frames);
    PyBuffer_Release(&view);
    if (ok)
        Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *unique_keys(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return unique_keys_impl(args, nargs, 0, "unique_keys");
}

static PyObject *unique_keys_colliding(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return unique_keys_impl(args, nargs, 1, "unique_keys_colliding");
}


/* -- DigestTable: task ids as fixed-size digests ------------------------------------
 *
 * The validator's table of task ids, 16 bytes a slot: the first line that used
 * an id and that line's byte offset, with 32 bits of the id's digest kept in the
 * top 16 bits of each (lines and offsets stay below 2**48). Open addressing,
 * linear probing, at most 3/4 full. A digest match is only a candidate: the caller
 * re-reads the first line at its offset and compares the real ids (an exact
 * verdict), inserting the id with insert() when they differ.
 */

#define LOW48 ((((uint64_t)1) << 48) - 1)

typedef struct {
    PyObject_HEAD
    uint64_t *slots; /* 2 words a slot: line | tag_hi << 48, offset | tag_lo << 48 */
    size_t mask;     /* slots - 1 (a power of two) */
    size_t used;
    uint32_t weak;   /* keep only the low `weak` bits of a digest (tests: collisions) */
} DigestTable;

static uint32_t mix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x7feb352dU;
    h ^= h >> 15;
    h *= 0x846ca68bU;
    h ^= h >> 16;
    return h;
}

/* The 32-bit digest of a str, from its UTF-8 bytes (lone surrogates encoded as
 * themselves, "surrogatepass"): the same in every process. -1 on error. */
static int64_t id_digest(DigestTable *t, PyObject *id) {
    Py_ssize_t n;
    const char *bytes;
    PyObject *encoded = NULL;
    uint64_t h;
    if (!PyUnicode_Check(id)) {
        PyErr_SetString(PyExc_TypeError, "task ids must be str");
        return -1;
    }
    bytes = PyUnicode_AsUTF8AndSize(id, &n);
    if (bytes == NULL) {
        PyErr_Clear();
        encoded = PyUnicode_AsEncodedString(id, "utf-8", "surrogatepass");
        if (encoded == NULL)
            return -1;
        bytes = PyBytes_AS_STRING(encoded);
        n = PyBytes_GET_SIZE(encoded);
    }
    h = hash_bytes((const unsigned char *)bytes, (size_t)n);
    Py_XDECREF(encoded);
    h = (uint32_t)(h ^ (h >> 32));
    if (t->weak < 32)
        h &= (((uint64_t)1) << t->weak) - 1;
    return (int64_t)h;
}

static uint32_t slot_tag(const uint64_t *slot) {
    return (uint32_t)(((slot[0] >> 48) << 16) | (slot[1] >> 48));
}

static int table_resize(DigestTable *t, size_t n_slots) {
    uint64_t *old = t->slots, *fresh;
    size_t old_n = t->slots ? t->mask + 1 : 0, i;
    if (n_slots > ((size_t)-1) / 16 || n_slots > (((size_t)1) << 32))
        return 0;
    fresh = calloc(n_slots, 2 * sizeof(uint64_t));
    if (fresh == NULL)
        return 0;
    t->slots = fresh;
    t->mask = n_slots - 1;
    for (i = 0; i < old_n; i++) {
        const uint64_t *slot = old + 2 * i;
        size_t at;
        if (slot[0] == 0)
            continue;
        at = mix32(slot_tag(slot)) & t->mask;
        while (t->slots[2 * at] != 0)
            at = (at + 1) & t->mask;
        t->slots[2 * at] = slot[0];
        t->slots[2 * at + 1] = slot[1];
    }
    free(old);
    return 1;
}

/* Whether an entry with this digest is present. */
static int table_has(DigestTable *t, uint32_t tag) {
    size_t at = mix32(tag) & t->mask;
    while (t->slots[2 * at] != 0) {
        if (slot_tag(t->slots + 2 * at) == tag)
            return 1;
        at = (at + 1) & t->mask;
    }
    return 0;
}

static int table_put(DigestTable *t, uint32_t tag, long long line, long long offset) {
    size_t at;
    if (line <= 0 || offset < 0 || (uint64_t)line > LOW48 || (uint64_t)offset > LOW48) {
        PyErr_SetString(PyExc_OverflowError, "line numbers 1 to 2**48-1, offsets 0 to 2**48-1");
        return 0;
    }
    if ((t->used + 1) * 4 > (t->mask + 1) * 3 && !table_resize(t, 2 * (t->mask + 1))) {
        PyErr_NoMemory();
        return 0;
    }
    at = mix32(tag) & t->mask;
    while (t->slots[2 * at] != 0)
        at = (at + 1) & t->mask;
    t->slots[2 * at] = (uint64_t)line | ((uint64_t)(tag >> 16) << 48);
    t->slots[2 * at + 1] = (uint64_t)offset | ((uint64_t)(tag & 0xFFFF) << 48);
    t->used++;
    return 1;
}

static int get_int64s(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return 0;
    if (view->itemsize != 8 || view->format == NULL ||
        (strcmp(view->format, "q") != 0 && strcmp(view->format, "l") != 0) ||
        view->len / 8 != n) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_ValueError, "%s: an array('q') of one number per id", what);
        return 0;
    }
    return 1;
}

static PyObject *DigestTable_add(DigestTable *t, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *ids, *candidates;
    Py_buffer lines, offsets;
    Py_ssize_t n, i;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add(ids, lines, offsets) takes 3 arguments");
        return NULL;
    }
    ids = args[0];
    if (!PyList_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "ids must be a list of str");
        return NULL;
    }
    n = PyList_GET_SIZE(ids);
    if (!get_int64s(args[1], &lines, n, "lines"))
        return NULL;
    if (!get_int64s(args[2], &offsets, n, "offsets")) {
        PyBuffer_Release(&lines);
        return NULL;
    }
    candidates = PyList_New(0);
    for (i = 0; candidates != NULL && i < n && i < PyList_GET_SIZE(ids); i++) {
        int64_t digest = id_digest(t, PyList_GET_ITEM(ids, i));
        if (digest < 0) {
            Py_CLEAR(candidates);
            break;
        }
        if (table_has(t, (uint32_t)digest)) {
            PyObject *pos = PyLong_FromSsize_t(i);
            if (pos == NULL || PyList_Append(candidates, pos) < 0)
                Py_CLEAR(candidates);
            Py_XDECREF(pos);
        } else if (!table_put(t, (uint32_t)digest, ((const long long *)lines.buf)[i],
                              ((const long long *)offsets.buf)[i])) {
            Py_CLEAR(candidates);
        }
    }
    PyBuffer_Release(&lines);
    PyBuffer_Release(&offsets);
    return candidates;
}

static PyObject *DigestTable_find(DigestTable *t, PyObject *id) {
    int64_t digest = id_digest(t, id);
    PyObject *found;
    size_t at;
    if (digest < 0)
        return NULL;
    found = PyList_New(0);
    if (found == NULL)
        return NULL;
    at = mix32((uint32_t)digest) & t->mask;
    while (t->slots[2 * at] != 0) {
        const uint64_t *slot = t->slots + 2 * at;
        if (slot_tag(slot) == (uint32_t)digest) {
            PyObject *pair = Py_BuildValue("(KK)", (unsigned long long)(slot[0] & LOW48),
                                           (unsigned long long)(slot[1] & LOW48));
            if (pair == NULL || PyList_Append(found, pair) < 0) {
                Py_XDECREF(pair);
                Py_DECREF(found);
                return NULL;
            }
            Py_DECREF(pair);
        }
        at = (at + 1) & t->mask;
    }
    return found;
}

static PyObject *DigestTable_insert(DigestTable *t, PyObject *const *args, Py_ssize_t nargs) {
    int64_t digest;
    long long line, offset;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "insert(task_id, line, offset) takes 3 arguments");
        return NULL;
    }
    digest = id_digest(t, args[0]);
    if (digest < 0)
        return NULL;
    line = PyLong_AsLongLong(args[1]);
    if (line == -1 && PyErr_Occurred())
        return NULL;
    offset = PyLong_AsLongLong(args[2]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    if (!table_put(t, (uint32_t)digest, line, offset))
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *DigestTable_nbytes(DigestTable *t, void *closure) {
    (void)closure;
    return PyLong_FromSize_t((t->mask + 1) * 2 * sizeof(uint64_t));
}

static Py_ssize_t DigestTable_len(DigestTable *t) { return (Py_ssize_t)t->used; }

static PyObject *DigestTable_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"weak_bits", NULL};
    unsigned int weak = 32;
    DigestTable *t;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$I", names, &weak))
        return NULL;
    if (weak == 0 || weak > 32) {
        PyErr_SetString(PyExc_ValueError, "weak_bits: 1 to 32");
        return NULL;
    }
    t = (DigestTable *)type->tp_alloc(type, 0);
    if (t == NULL)
        return NULL;
    t->weak = weak;
    t->slots = NULL;
    t->used = 0;
    if (!table_resize(t, 1024)) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    return (PyObject *)t;
}

static void DigestTable_dealloc(DigestTable *t) {
    free(t->slots);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef DigestTable_methods[] = {
    {"add", (PyCFunction)(void (*)(void))DigestTable_add, METH_FASTCALL,
     "add(ids, lines, offsets, /)\n--\n\n"
     "Insert each id (a list of str; lines and offsets: array('q')) whose digest is\n"
     "new; return the positions of the others, in order (candidates to decide)."},
    {"find", (PyCFunction)DigestTable_find, METH_O,
     "find(task_id, /)\n--\n\n(line, offset) of every entry whose digest is task_id's."},
    {"insert", (PyCFunction)(void (*)(void))DigestTable_insert, METH_FASTCALL,
     "insert(task_id, line, offset, /)\n--\n\nInsert an id whose digest is not new."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef DigestTable_getset[] = {
    {"nbytes", (getter)DigestTable_nbytes, NULL, "bytes of the slots", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PySequenceMethods DigestTable_sequence = {.sq_length = (lenfunc)DigestTable_len};

static PyTypeObject DigestTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "evalspec.validation._core.DigestTable",
    .tp_basicsize = sizeof(DigestTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Task ids as 32-bit digests with their first line and offset.",
    .tp_new = DigestTable_new,
    .tp_dealloc = (destructor)DigestTable_dealloc,
    .tp_methods = DigestTable_methods,
    .tp_getset = DigestTable_getset,
    .tp_as_sequence = &DigestTable_sequence,
};

static PyMethodDef core_methods[] = {
    {"unique_keys", (PyCFunction)(void (*)(void))unique_keys, METH_FASTCALL,
     "unique_keys(data, max_depth, /)\n--\n\n"
     "True when the JSON text ``data`` is well nested, at most ``max_depth`` deep,\n"
     "and no object in it repeats a key (keys compared decoded); else False."},
    {"unique_keys_colliding", (PyCFunction)(void (*)(void))unique_keys_colliding, METH_FASTCALL,
     "unique_keys_colliding(data, max_depth, /)\n--\n\n"
     "unique_keys with every key hash equal: the exact comparisons alone decide\n"
     "(for tests of the collision path)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core",
    "The validator's compiled core: the repeated-key proof in one pass over the raw bytes.", -1,
    core_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__core(void) {
    PyObject *module;
    if (PyType_Ready(&DigestTableType) < 0)
        return NULL;
    module = PyModule_Create(&core_module);
    if (module == NULL)
        return NULL;
    Py_INCREF(&DigestTableType);
    if (PyModule_AddObject(module, "DigestTable", (PyObject *)&DigestTableType) < 0) {
        Py_DECREF(&DigestTableType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
