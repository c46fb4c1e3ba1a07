/*
 * evalspec.validation._core: the compiled part of the validator's fast path.
 *
 * Three parts: unique_keys (below), the repeated-key proof on its own; Voucher, the
 * fast path's whole per-line check, which reuses the proof's key records; and
 * DigestTable, the task ids as digests (with id_digests, what workers send, and
 * span_lines, the parent's numbering of each chunk's lines for the table).
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

#include <limits.h>
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
 * The validator's table of task ids, 8 bytes a slot: 32 bits of the id's digest
 * and the 32-bit number of the first line that used it (0: an empty slot). Open
 * addressing, linear probing, at most 4/5 full. The number of slots is not a power
 * of two (a home slot is the mixed digest times the slots, over 2**32), so a table
 * reserved for n ids takes 1.25 n slots, not the next power of two above 4/3 n:
 * ~10 MiB at a million ids instead of 16. The
 * lines' byte offsets are not kept per id (that was 8 more bytes a slot): for every
 * 64 lines, `marks` keeps the offset of the first line of those 64 that holds an
 * id, so any id's line is found again from its mark by skipping at most 63 lines
 * (~0.25 bytes an id). A digest match is only a candidate: the caller re-reads the
 * first line and compares the real ids (an exact verdict), inserting the id with
 * insert() when they differ.
 */

#define LOW48 ((((uint64_t)1) << 48) - 1)
#define MARK_BITS 6 /* a mark per 64 lines */
#define MARK_NONE UINT64_MAX

typedef struct {
    PyObject_HEAD
    uint64_t *slots; /* a word a slot: line | tag << 32 */
    size_t n_slots;  /* any size: an id's home slot is its mixed digest scaled to it */
    size_t used;
    uint64_t *marks; /* per 64 lines: offset << 6 | line % 64 of its first line in the table */
    size_t n_marks;
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
static int64_t full_digest(PyObject *id) {
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
    return (int64_t)(uint32_t)(h ^ (h >> 32));
}

static uint32_t weaken(const DigestTable *t, uint32_t h) {
    return t->weak < 32 ? h & (uint32_t)((((uint64_t)1) << t->weak) - 1) : h;
}

static int64_t id_digest(DigestTable *t, PyObject *id) {
    int64_t h = full_digest(id);
    return h < 0 ? h : (int64_t)weaken(t, (uint32_t)h);
}

/* id_digests(ids): the 32-bit digests of a list of str, as native uint32 bytes (what
 * a worker process sends its parent instead of the ids). */
static PyObject *id_digests(PyObject *self, PyObject *ids) {
    PyObject *out;
    Py_ssize_t i, n;
    (void)self;
    if (!PyList_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "ids must be a list of str");
        return NULL;
    }
    n = PyList_GET_SIZE(ids);
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint32_t));
    if (out == NULL)
        return NULL;
    for (i = 0; i < n && i < PyList_GET_SIZE(ids); i++) {
        int64_t h = full_digest(PyList_GET_ITEM(ids, i));
        uint32_t digest = (uint32_t)h;
        if (h < 0) {
            Py_DECREF(out);
            return NULL;
        }
        memcpy(PyBytes_AS_STRING(out) + i * (Py_ssize_t)sizeof(uint32_t), &digest,
               sizeof(digest));
    }
    return out;
}

/* merged_digests(ids, digests): the digests of the valid lines, in order: digests[i]
 * (native uint32) where ids[i] is True, the digest of ids[i] where it is a str, none
 * where it is None. What block_digests() leaves, resolved in Python, made whole. */
static PyObject *merged_digests(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer sums;
    PyObject *ids, *out = NULL;
    Py_ssize_t i, n, k = 0;
    (void)self;
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "merged_digests(ids: list, digests: bytes)");
        return NULL;
    }
    ids = args[0];
    if (PyObject_GetBuffer(args[1], &sums, PyBUF_SIMPLE) < 0)
        return NULL;
    n = PyList_GET_SIZE(ids);
    if (sums.len != n * (Py_ssize_t)sizeof(uint32_t)) {
        PyErr_SetString(PyExc_ValueError, "digests: 4 bytes for each item of ids");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint32_t));
    if (out == NULL)
        goto done;
    for (i = 0; i < n && i < PyList_GET_SIZE(ids); i++) {
        PyObject *item = PyList_GET_ITEM(ids, i);
        uint32_t digest;
        if (item == Py_None)
            continue;
        if (item == Py_True) {
            memcpy(&digest, (const char *)sums.buf + i * (Py_ssize_t)sizeof(uint32_t),
                   sizeof(digest));
        } else {
            int64_t h = full_digest(item); /* a TypeError for anything but a str */
            if (h < 0) {
                Py_CLEAR(out);
                goto done;
            }
            digest = (uint32_t)h;
        }
        memcpy(PyBytes_AS_STRING(out) + k * (Py_ssize_t)sizeof(uint32_t), &digest,
               sizeof(digest));
        k++;
    }
    if (_PyBytes_Resize(&out, k * (Py_ssize_t)sizeof(uint32_t)) < 0)
        out = NULL;
done:
    PyBuffer_Release(&sums);
    return out;
}

/* span_lines(lengths, skipped, origin, shift, start): the line numbers (plus shift)
 * and byte offsets of a block's lines that hold an id, as two native int64 bytes.
 * lengths: each line's length (int64, its newline included), the first line being
 * `origin` at byte `start`; skipped: the lines (numbered from origin, increasing)
 * that hold no id. What the parent computes for every line of every block it
 * resolves, in one C loop instead of a chain of Python iterators. */
static PyObject *span_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer lengths, skipped;
    long long origin, shift, start, at;
    PyObject *lines_out = NULL, *offsets_out = NULL, *out = NULL;
    Py_ssize_t n, k, i, j = 0, w = 0;
    (void)self;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "span_lines(lengths, skipped, origin, shift, start) takes 5 arguments");
        return NULL;
    }
    origin = PyLong_AsLongLong(args[2]);
    shift = PyLong_AsLongLong(args[3]);
    start = PyLong_AsLongLong(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (PyObject_GetBuffer(args[0], &lengths, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &skipped, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&lengths);
        return NULL;
    }
    if (lengths.itemsize != 8 || skipped.itemsize != 8 || lengths.format == NULL ||
        skipped.format == NULL ||
        (strcmp(lengths.format, "q") != 0 && strcmp(lengths.format, "l") != 0) ||
        (strcmp(skipped.format, "q") != 0 && strcmp(skipped.format, "l") != 0)) {
        PyErr_SetString(PyExc_ValueError, "lengths and skipped: array('q')");
        goto done;
    }
    n = lengths.len / 8;
    k = skipped.len / 8;
    if (k > n || origin < 0 || start < 0 || origin > LLONG_MAX - n ||
        shift > LLONG_MAX - origin - n || shift < -origin) {
        PyErr_SetString(PyExc_ValueError, "span_lines: numbers out of range");
        goto done;
    }
    lines_out = PyBytes_FromStringAndSize(NULL, (n - k) * 8);
    offsets_out = PyBytes_FromStringAndSize(NULL, (n - k) * 8);
    if (lines_out == NULL || offsets_out == NULL)
        goto done;
    at = start;
    for (i = 0; i < n; i++) {
        long long len = ((const long long *)lengths.buf)[i];
        long long line = origin + i;
        if (j < k && ((const long long *)skipped.buf)[j] == line) {
            j++;
        } else {
            long long numbered = line + shift;
            if (w == n - k)
                break; /* a skipped line that is not one of these: refused below */
            memcpy(PyBytes_AS_STRING(lines_out) + w * 8, &numbered, 8);
            memcpy(PyBytes_AS_STRING(offsets_out) + w * 8, &at, 8);
            w++;
        }
        if (len < 0 || at > LLONG_MAX - len) {
            PyErr_SetString(PyExc_ValueError, "span_lines: a length out of range");
            goto done;
        }
        at += len;
    }
    if (j != k || w != n - k) {
        PyErr_SetString(PyExc_ValueError,
                        "span_lines: skipped must be increasing lines of the block");
        goto done;
    }
    out = PyTuple_Pack(2, lines_out, offsets_out);
done:
    Py_XDECREF(lines_out);
    Py_XDECREF(offsets_out);
    PyBuffer_Release(&lengths);
    PyBuffer_Release(&skipped);
    return out;
}

/* A hint to load memory soon; nothing where the compiler has no such builtin (C99). */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch((address), 0, 1)
#else
#define PREFETCH(address) ((void)(address))
#endif
#define PREFETCH_AHEAD 16

static uint32_t slot_tag(uint64_t slot) { return (uint32_t)(slot >> 32); }

/* The first slot to probe for a digest: its mix scaled to the slots (n_slots <= 2**32,
 * so the product fits 64 bits). */
static size_t home_slot(const DigestTable *t, uint32_t tag) {
    return (size_t)(((uint64_t)mix32(tag) * (uint64_t)t->n_slots) >> 32);
}

static size_t next_slot(const DigestTable *t, size_t at) {
    return at + 1 == t->n_slots ? 0 : at + 1;
}

/* Whether `used` entries fit n_slots at most 4/5 full (at least one slot stays empty,
 * which ends every probe). */
static int fits(size_t used, size_t n_slots) { return used * 5 <= n_slots * 4; }

static int table_resize(DigestTable *t, size_t n_slots) {
    uint64_t *old = t->slots, *fresh;
    size_t old_n = t->slots ? t->n_slots : 0, i;
    if (n_slots > ((size_t)-1) / 8 || (uint64_t)n_slots > (((uint64_t)1) << 32))
        return 0;
    fresh = calloc(n_slots, sizeof(uint64_t));
    if (fresh == NULL)
        return 0;
    t->slots = fresh;
    t->n_slots = n_slots;
    for (i = 0; i < old_n; i++) {
        size_t at;
        if (old[i] == 0)
            continue;
        at = home_slot(t, slot_tag(old[i]));
        while (t->slots[at] != 0)
            at = next_slot(t, at);
        t->slots[at] = old[i];
    }
    free(old);
    return 1;
}

/* Whether an entry with this digest is present. */
static int table_has(DigestTable *t, uint32_t tag) {
    size_t at = home_slot(t, tag);
    while (t->slots[at] != 0) {
        if (slot_tag(t->slots[at]) == tag)
            return 1;
        at = next_slot(t, at);
    }
    return 0;
}

/* Keep `offset` as the mark of line's 64 lines if it is the first of them seen. */
static int table_mark(DigestTable *t, uint64_t line, uint64_t offset) {
    size_t b = (size_t)(line >> MARK_BITS), i;
    uint64_t low = line & ((1u << MARK_BITS) - 1), *mark;
    if (b >= t->n_marks) {
        size_t n = t->n_marks ? t->n_marks : 256;
        uint64_t *grown;
        while (n <= b)
            n *= 2;
        grown = realloc(t->marks, n * sizeof(uint64_t));
        if (grown == NULL)
            return 0;
        for (i = t->n_marks; i < n; i++)
            grown[i] = MARK_NONE;
        t->marks = grown;
        t->n_marks = n;
    }
    mark = t->marks + b;
    /* Lines usually come in increasing order; an earlier one replaces the mark, so a
     * mark is never after a line of its 64 that the table holds. */
    if (*mark == MARK_NONE || (*mark & ((1u << MARK_BITS) - 1)) > low)
        *mark = (offset << MARK_BITS) | low;
    return 1;
}

static int table_put(DigestTable *t, uint32_t tag, long long line, long long offset) {
    size_t at;
    if (line <= 0 || offset < 0 || (uint64_t)line > UINT32_MAX || (uint64_t)offset > LOW48) {
        PyErr_SetString(PyExc_OverflowError, "line numbers 1 to 2**32-1, offsets 0 to 2**48-1");
        return 0;
    }
    if (!fits(t->used + 1, t->n_slots) && !table_resize(t, 2 * t->n_slots)) {
        PyErr_NoMemory();
        return 0;
    }
    if (!table_mark(t, (uint64_t)line, (uint64_t)offset)) {
        PyErr_NoMemory();
        return 0;
    }
    at = home_slot(t, tag);
    while (t->slots[at] != 0)
        at = next_slot(t, at);
    t->slots[at] = (uint64_t)line | ((uint64_t)tag << 32);
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

/* Insert each entry whose digest is new; the positions of the others, in order.
 * The digests come from ids (a list of str) or, when ids is NULL, from digests
 * (n native uint32, as id_digests wrote them). */
static PyObject *add_entries(DigestTable *t, PyObject *ids, const Py_buffer *digests, Py_ssize_t n,
                             PyObject *lines_obj, PyObject *offsets_obj) {
    PyObject *candidates;
    Py_buffer lines, offsets;
    Py_ssize_t i;
    if (!get_int64s(lines_obj, &lines, n, "lines"))
        return NULL;
    if (!get_int64s(offsets_obj, &offsets, n, "offsets")) {
        PyBuffer_Release(&lines);
        return NULL;
    }
    candidates = PyList_New(0);
    for (i = 0; candidates != NULL && i < n; i++) {
        int64_t digest;
        if (ids != NULL) {
            if (i >= PyList_GET_SIZE(ids))
                break; /* the list shrank under us: stop, never read past it */
            digest = id_digest(t, PyList_GET_ITEM(ids, i));
        } else {
            uint32_t d;
            memcpy(&d, (const char *)digests->buf + i * (Py_ssize_t)sizeof(uint32_t), sizeof(d));
            digest = (int64_t)weaken(t, d);
            if (i + PREFETCH_AHEAD < n) {
                /* The slots are a table of megabytes probed at random: each probe is a
                 * cache miss, so the home slot of a digest some way ahead is fetched
                 * now (the parent of --jobs spent ~90 ns an id waiting for memory). */
                uint32_t ahead;
                memcpy(&ahead,
                       (const char *)digests->buf +
                           (i + PREFETCH_AHEAD) * (Py_ssize_t)sizeof(uint32_t),
                       sizeof(ahead));
                PREFETCH(t->slots + home_slot(t, weaken(t, ahead)));
            }
        }
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

static PyObject *DigestTable_add(DigestTable *t, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add(ids, lines, offsets) takes 3 arguments");
        return NULL;
    }
    if (!PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "ids must be a list of str");
        return NULL;
    }
    return add_entries(t, args[0], NULL, PyList_GET_SIZE(args[0]), args[1], args[2]);
}

static PyObject *DigestTable_add_digests(DigestTable *t, PyObject *const *args, Py_ssize_t nargs) {
    Py_buffer digests;
    PyObject *candidates;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "add_digests(digests, lines, offsets) takes 3 arguments");
        return NULL;
    }
    if (PyObject_GetBuffer(args[0], &digests, PyBUF_SIMPLE) < 0)
        return NULL;
    if (digests.len % (Py_ssize_t)sizeof(uint32_t) != 0) {
        PyBuffer_Release(&digests);
        PyErr_SetString(PyExc_ValueError, "digests: 4 bytes a digest");
        return NULL;
    }
    candidates = add_entries(t, NULL, &digests, digests.len / (Py_ssize_t)sizeof(uint32_t),
                             args[1], args[2]);
    PyBuffer_Release(&digests);
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
    at = home_slot(t, (uint32_t)digest);
    while (t->slots[at] != 0) {
        uint64_t slot = t->slots[at];
        if (slot_tag(slot) == (uint32_t)digest) {
            uint64_t line = slot & UINT32_MAX, mark, low = line & ((1u << MARK_BITS) - 1);
            PyObject *triple;
            /* Every line in the table has set or kept its mark, at or before it. */
            mark = t->marks[line >> MARK_BITS];
            triple = Py_BuildValue("(KKK)", (unsigned long long)line,
                                   (unsigned long long)(mark >> MARK_BITS),
                                   (unsigned long long)(low - (mark & ((1u << MARK_BITS) - 1))));
            if (triple == NULL || PyList_Append(found, triple) < 0) {
                Py_XDECREF(triple);
                Py_DECREF(found);
                return NULL;
            }
            Py_DECREF(triple);
        }
        at = next_slot(t, at);
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

/* reserve(n): room for n entries in all (at most 4/5 full) in one resize, so a
 * table that will hold n never holds its old and new slots at once later; sized
 * to n exactly (1.25 n slots), not rounded up to a power of two. */
static PyObject *DigestTable_reserve(DigestTable *t, PyObject *arg) {
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    size_t slots;
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || (size_t)n > (((size_t)1) << 31)) {
        PyErr_SetString(PyExc_ValueError, "reserve: 0 to 2**31 entries");
        return NULL;
    }
    slots = ((size_t)n * 5 + 3) / 4;
    if (slots > t->n_slots && !table_resize(t, slots))
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *DigestTable_nbytes(DigestTable *t, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(t->n_slots * sizeof(uint64_t) + t->n_marks * sizeof(uint64_t));
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
    t->marks = NULL;
    t->n_marks = 0;
    if (!table_resize(t, 1024)) {
        Py_DECREF(t);
        return PyErr_NoMemory();
    }
    return (PyObject *)t;
}

static void DigestTable_dealloc(DigestTable *t) {
    free(t->slots);
    free(t->marks);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyMethodDef DigestTable_methods[] = {
    {"add", (PyCFunction)(void (*)(void))DigestTable_add, METH_FASTCALL,
     "add(ids, lines, offsets, /)\n--\n\n"
     "Insert each id (a list of str; lines and offsets: array('q')) whose digest is\n"
     "new; return the positions of the others, in order (candidates to decide)."},
    {"add_digests", (PyCFunction)(void (*)(void))DigestTable_add_digests, METH_FASTCALL,
     "add_digests(digests, lines, offsets, /)\n--\n\n"
     "add(), with the ids' digests as id_digests() wrote them."},
    {"reserve", (PyCFunction)DigestTable_reserve, METH_O,
     "reserve(n, /)\n--\n\nRoom for n entries in all, in one resize."},
    {"find", (PyCFunction)DigestTable_find, METH_O,
     "find(task_id, /)\n--\n\n(line, offset, skip) of every entry whose digest is task_id's: its line\n"
     "starts skip lines after the line at byte offset."},
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
    .tp_doc = "Task ids as 32-bit digests with their first line (8 bytes a slot).",
    .tp_new = DigestTable_new,
    .tp_dealloc = (destructor)DigestTable_dealloc,
    .tp_methods = DigestTable_methods,
    .tp_getset = DigestTable_getset,
    .tp_as_sequence = &DigestTable_sequence,
};

/* -- Voucher: the fast path's whole per-line check, building no object --------------
 *
 * Voucher(...).block(data) splits a block of whole lines at b"\n" (no bytes object
 * per line) and, for each line, answers what the Python fast path answers, more
 * cheaply: the line's task id (a str) when the line is certainly a valid task at
 * stages 1-5, else None ("don't know": the caller asks the Python fast path, then
 * the precise path). One strict pass per line validates the JSON grammar (UTF-8,
 * escapes, numbers, nesting), the fields and their types, the category/metric/
 * post-process triple and single targets, the task id and prompt rules, that no
 * object repeats a key (at any depth, keys compared decoded), and the few-shot
 * pre-filter of fast.py's _maybe_embedded: a line whose prompt might embed a
 * few-shot block is "don't know", never vouched for. The only objects built are
 * the ids of vouched lines. Whatever is unusual (a BOM, an integer of more than
 * 19 digits, a float near the overflow limit, a lone surrogate) is "don't know":
 * the Python paths decide it exactly as before.
 */

#define N_FIELDS 8 /* task_id category prompt targets metric_name post_process
                      few_shot_examples metadata, in evalspec.fields order */
#define F_ID 0
#define F_CATEGORY 1
#define F_PROMPT 2
#define F_TARGETS 3
#define F_METRIC 4
#define F_RULE 5
#define F_SHOTS 6
#define F_META 7
#define MAX_SHOTS 64
#define MAX_INT_DIGITS 19
#define MAX_FLOAT_MAGNITUDE 300

typedef struct {
    const char *ptr;
    size_t len;
} Name;

typedef struct {
    size_t off, len;
    int scratch;
} Span;

typedef struct {
    PyObject_HEAD
    Name fields[N_FIELDS];
    Name example_fields[2];
    Name *names[3]; /* categories, metrics, post-processes */
    size_t n_names[3];
    int *legal;     /* [cat][metric][rule] -> -1 illegal, 0 any targets, k+1: single set k */
    Name **singles; /* single-target sets */
    size_t *n_singles;
    size_t n_sets;
    size_t max_shots;
    Py_ssize_t max_depth;
    PyObject *keep; /* the Python objects whose UTF-8 the names point into */
} Voucher;

typedef struct {
    const unsigned char *raw, *p, *end;
    Scan *s;
    Py_ssize_t max_depth;
} Line;

/* 1 for the bytes a JSON string holds as they are: printable ASCII but '"' and '\\'. */
static unsigned char plain_byte[256];

static void init_tables(void) {
    int c;
    for (c = 0x20; c < 0x80; c++)
        plain_byte[c] = c != '"' && c != '\\';
}

static int is_json_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static void skip_ws(Line *l) {
    while (l->p < l->end && is_json_ws(*l->p))
        l->p++;
}

/* Python's str.isspace for one code point. */
static inline int py_space(unsigned cp) {
    if (cp < 0x80)
        return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* The code point of the valid UTF-8 sequence at p (its length in *n). */
static inline unsigned utf8_at(const unsigned char *p, size_t *n) {
    unsigned char c = p[0];
    if (c < 0x80) {
        *n = 1;
        return c;
    }
    if (c < 0xE0) {
        *n = 2;
        return ((unsigned)(c & 0x1F) << 6) | (p[1] & 0x3F);
    }
    if (c < 0xF0) {
        *n = 3;
        return ((unsigned)(c & 0x0F) << 12) | ((unsigned)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    }
    *n = 4;
    return ((unsigned)(c & 0x07) << 18) | ((unsigned)(p[1] & 0x3F) << 12) |
           ((unsigned)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}

/* The length of the valid UTF-8 sequence at p (no surrogates, no overlong form,
 * at most U+10FFFF), 0 if it is not one. */
static size_t utf8_valid(const unsigned char *p, const unsigned char *end) {
    unsigned char c = p[0];
    size_t avail = (size_t)(end - p);
    if (c >= 0xC2 && c <= 0xDF)
        return avail >= 2 && (p[1] & 0xC0) == 0x80 ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return avail >= 3 && p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return avail >= 4 && p[1] >= lo && p[1] <= hi && (p[2] & 0xC0) == 0x80 &&
                       (p[3] & 0xC0) == 0x80
                   ? 4
                   : 0;
    }
    return 0;
}

/* A JSON string at l->p (its opening quote): checks it strictly and records its
 * decoded text in *out (escaped text decoded into the scratch buffer). 0: not a
 * string JSON and the precise path read the same way (or a lone surrogate). */
static int read_string(Line *l, Span *out) {
    const unsigned char *p = l->p + 1, *end = l->end, *start = p;
    int escaped = 0;
    if (l->p >= end || *l->p != '"')
        return 0;
    for (;;) {
        unsigned char c;
        while (p < end && plain_byte[*p])
            p++;
        if (p >= end)
            return 0;
        c = *p;
        if (c == '"')
            break;
        if (c == '\\') {
            unsigned cp, lo;
            escaped = 1;
            if (end - p < 2)
                return 0;
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                continue;
            case 'u':
                if (!hex4(p + 2, end, &cp))
                    return 0;
                p += 6;
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    return 0;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, end, &lo) ||
                        lo < 0xDC00 || lo > 0xDFFF)
                        return 0;
                    p += 6;
                }
                continue;
            default:
                return 0;
            }
        }
        if (c < 0x20)
            return 0; /* a raw control character */
        {
            size_t n = utf8_valid(p, end);
            if (n == 0)
                return 0;
            p += n;
        }
    }
    l->p = p + 1;
    if (!escaped) {
        out->scratch = 0;
        out->off = (size_t)(start - l->raw);
        out->len = (size_t)(p - start);
        return 1;
    }
    out->scratch = 1;
    out->off = l->s->n_scratch;
    if (!decode_key(l->s, start, p))
        return 0;
    out->len = l->s->n_scratch - out->off;
    return 1;
}

static const unsigned char *span_ptr(const Line *l, const Span *sp) {
    return sp->scratch ? (const unsigned char *)l->s->scratch + sp->off : l->raw + sp->off;
}

static int read_number(Line *l) {
    const unsigned char *p = l->p, *end = l->end;
    size_t int_digits = 0;
    int fraction = 0;
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return 0;
    if (*p == '0') {
        p++;
        int_digits = 1;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') {
            p++;
            int_digits++;
        }
    } else {
        return 0;
    }
    if (p < end && *p == '.') {
        const unsigned char *digits = ++p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == digits)
            return 0;
        fraction = 1;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        long exponent = 0;
        int negative = 0, n = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            negative = *p++ == '-';
        while (p < end && *p >= '0' && *p <= '9') {
            if (++n > 4)
                return 0; /* far from any float the fast path needs: don't know */
            exponent = exponent * 10 + (*p++ - '0');
        }
        if (n == 0)
            return 0;
        /* Finite for certain: below 10**(int digits + exponent). */
        if (!negative && (long)int_digits + exponent > MAX_FLOAT_MAGNITUDE)
            return 0;
        fraction = 1;
    }
    if (fraction ? int_digits > MAX_FLOAT_MAGNITUDE : int_digits > MAX_INT_DIGITS)
        return 0; /* a long integer, or a float that might overflow: don't know */
    l->p = p;
    return 1;
}

/* After an item of a container closed by `close`: 1 if another item follows (its
 * comma read), 0 if the container closed here (read), -1 on anything else. */
static int next_item(Line *l, unsigned char close) {
    skip_ws(l);
    if (l->p < l->end && *l->p == ',') {
        l->p++;
        skip_ws(l);
        return 1;
    }
    if (l->p >= l->end || *l->p != close)
        return -1;
    l->p++;
    return 0;
}

static int read_value(Line *l, Py_ssize_t depth);

static int read_literal(Line *l, const char *word, size_t n) {
    if ((size_t)(l->end - l->p) < n || memcmp(l->p, word, n) != 0)
        return 0;
    l->p += n;
    return 1;
}

/* An object or array at l->p, at nesting level depth + 1. */
static int read_container(Line *l, Py_ssize_t depth) {
    Scan *s = l->s;
    int object = *l->p == '{';
    unsigned char close = object ? '}' : ']';
    size_t first = s->n_keys;
    int more;
    if (depth + 1 > l->max_depth)
        return 0;
    l->p++;
    skip_ws(l);
    if (l->p < l->end && *l->p == close) {
        l->p++;
        return 1;
    }
    for (;;) {
        if (object) {
            Span key;
            Key *k;
            if (!read_string(l, &key))
                return 0;
            if (s->n_keys == s->cap_keys &&
                !grow((void **)&s->keys, &s->cap_keys, sizeof(Key), &s->heap_keys, s->n_keys + 1))
                return 0;
            k = s->keys + s->n_keys++;
            k->scratch = key.scratch;
            k->off = key.off;
            k->len = key.len;
            k->ptr = NULL;
            k->hash = hash_bytes(span_ptr(l, &key), key.len);
            skip_ws(l);
            if (l->p >= l->end || *l->p != ':')
                return 0;
            l->p++;
            skip_ws(l);
        }
        if (!read_value(l, depth + 1))
            return 0;
        more = next_item(l, close);
        if (more < 0)
            return 0;
        if (!more)
            break;
    }
    if (object) {
        if (!distinct(s, l->raw, first))
            return 0;
        s->n_keys = first;
    }
    return 1;
}

static int read_value(Line *l, Py_ssize_t depth) {
    Span ignored;
    if (l->p >= l->end)
        return 0;
    switch (*l->p) {
    case '{':
    case '[':
        return read_container(l, depth);
    case '"':
        return read_string(l, &ignored);
    case 't':
        return read_literal(l, "true", 4);
    case 'f':
        return read_literal(l, "false", 5);
    case 'n':
        return read_literal(l, "null", 4);
    default:
        return read_number(l);
    }
}

static int name_index(const Name *names, size_t n, const unsigned char *p, size_t len) {
    size_t i;
    for (i = 0; i < n; i++)
        if (names[i].len == len && memcmp(names[i].ptr, p, len) == 0)
            return (int)i;
    return -1;
}

static const unsigned char *find_bytes(const unsigned char *hay, size_t n, const unsigned char *needle,
                                       size_t m) {
    const unsigned char *p = hay, *last;
    if (m == 0)
        return hay;
    if (m > n)
        return NULL;
    last = hay + (n - m);
    while (p <= last) {
        p = memchr(p, needle[0], (size_t)(last - p) + 1);
        if (p == NULL)
            return NULL;
        if (memcmp(p, needle, m) == 0)
            return p;
        p++;
    }
    return NULL;
}

/* The first token of text [i, n) from i on (white-space separated, Python's
 * isspace): its span in *start, *stop; 0 when there is none. */
static int next_token(const unsigned char *text, size_t n, size_t i, size_t *start, size_t *stop) {
    size_t len;
    while (i < n && py_space(utf8_at(text + i, &len)))
        i += len;
    if (i >= n)
        return 0;
    *start = i;
    while (i < n && !py_space(utf8_at(text + i, &len)))
        i += len;
    *stop = i;
    return 1;
}

/* The last token of text (0 when it has none). */
static int last_token(const unsigned char *text, size_t n, size_t *start, size_t *stop) {
    size_t i = 0, a, b;
    int found = 0;
    while (next_token(text, n, i, &a, &b)) {
        *start = a;
        *stop = b;
        found = 1;
        i = b;
    }
    return found;
}

/* Whether every token of text is in the prompt; *tokens counts those seen. */
static int tokens_in(const unsigned char *text, size_t n, const unsigned char *prompt, size_t pn,
                     size_t *tokens) {
    size_t i = 0, a, b;
    while (next_token(text, n, i, &a, &b)) {
        (*tokens)++;
        if (find_bytes(prompt, pn, text + a, b - a) == NULL)
            return 0;
        i = b;
    }
    return 1;
}

static int token_missing(const unsigned char *text, size_t n, int last, const unsigned char *prompt,
                         size_t pn) {
    size_t a, b;
    if (!(last ? last_token(text, n, &a, &b) : next_token(text, n, 0, &a, &b)))
        return 0;
    return find_bytes(prompt, pn, text + a, b - a) == NULL;
}

/* fast.py's _maybe_embedded on decoded UTF-8: 1 when the prompt might hold a
 * few-shot block (the line is then not vouched for here). */
static int maybe_embedded(const unsigned char *prompt, size_t pn, const Span *shots, size_t n_shots,
                          const Line *l) {
    size_t i, len, last_space_end = 0;
    int cue_end = 0;
    /* A cue at the end: "：", or ":" when the prompt holds another ":". */
    if (pn >= 1 && prompt[pn - 1] == ':')
        cue_end = memchr(prompt, ':', pn - 1) != NULL;
    else if (pn >= 3 && memcmp(prompt + pn - 3, "\xEF\xBC\x9A", 3) == 0)
        cue_end = 1;
    if (cue_end) { /* where the last token starts: after the last white space */
        i = pn;
        while (i > 0) {
            size_t at = i - 1;
            while (at > 0 && (prompt[at] & 0xC0) == 0x80)
                at--;
            if (py_space(utf8_at(prompt + at, &len))) {
                last_space_end = i;
                break;
            }
            i = at;
        }
    }
    if (cue_end) {
        /* The last token, as a cue: somewhere before the end too? */
        const unsigned char *cue = prompt + last_space_end;
        size_t cn = pn - last_space_end;
        if (find_bytes(prompt, pn, cue, cn) != cue)
            return 1;
    }
    for (i = 0; i < n_shots; i++) {
        /* Rule (a) needs every token of the example in the prompt: the completion's
         * last token and the example prompt's first and last rule most out. */
        size_t tokens = 0;
        const Span *ex = shots + 2 * i;
        const unsigned char *text = span_ptr(l, ex), *completion = span_ptr(l, ex + 1);
        if (token_missing(completion, ex[1].len, 1, prompt, pn) ||
            token_missing(text, ex[0].len, 0, prompt, pn) ||
            token_missing(text, ex[0].len, 1, prompt, pn))
            continue;
        if (tokens_in(text, ex[0].len, prompt, pn, &tokens) &&
            tokens_in(completion, ex[1].len, prompt, pn, &tokens) && tokens > 0)
            return 1;
    }
    return 0;
}

static int read_example(Line *l, const Voucher *v, Span *out) {
    int seen = 0, which, more;
    if (l->p >= l->end || *l->p != '{')
        return 0;
    l->p++;
    skip_ws(l);
    for (;;) {
        Span key;
        if (!read_string(l, &key))
            return 0;
        which = name_index(v->example_fields, 2, span_ptr(l, &key), key.len);
        if (which < 0 || (seen & (1 << which)))
            return 0;
        seen |= 1 << which;
        skip_ws(l);
        if (l->p >= l->end || *l->p != ':')
            return 0;
        l->p++;
        skip_ws(l);
        if (!read_string(l, out + which))
            return 0;
        more = next_item(l, '}');
        if (more < 0)
            return 0;
        if (!more)
            return seen == 3;
    }
}

/* 1 and the id's span when the line [raw, end) is certainly a valid task. */
static int vouch_line(const Voucher *v, Scan *s, const unsigned char *raw, const unsigned char *end,
                      Span *id) {
    Line l;
    Span strings[N_FIELDS], shots[2 * MAX_SHOTS], first_target = {0, 0, 0};
    size_t n_shots = 0, n_targets = 0, i, len;
    int seen = 0, ci, mi, ri, rule, more;
    const unsigned char *p;
    l.raw = raw;
    l.p = raw;
    l.end = end;
    l.s = s;
    l.max_depth = v->max_depth;
    s->n_keys = 0;
    s->n_scratch = 0;
    skip_ws(&l);
    if (l.p >= end || *l.p != '{' || v->max_depth < 1)
        return 0;
    l.p++;
    skip_ws(&l);
    for (;;) {
        Span key;
        int field;
        if (!read_string(&l, &key))
            return 0;
        field = name_index(v->fields, N_FIELDS, span_ptr(&l, &key), key.len);
        if (field < 0 || (seen & (1 << field)))
            return 0; /* an unknown field or a repeated one */
        seen |= 1 << field;
        skip_ws(&l);
        if (l.p >= end || *l.p != ':')
            return 0;
        l.p++;
        skip_ws(&l);
        if (field == F_TARGETS || field == F_SHOTS) {
            if (l.p >= end || *l.p != '[' || v->max_depth < 2)
                return 0;
            l.p++;
            skip_ws(&l);
            if (l.p < end && *l.p == ']') {
                l.p++;
            } else {
                for (;;) {
                    if (field == F_TARGETS) {
                        Span t;
                        if (!read_string(&l, &t))
                            return 0;
                        if (n_targets++ == 0)
                            first_target = t;
                    } else {
                        if (n_shots >= v->max_shots || v->max_depth < 3)
                            return 0;
                        if (!read_example(&l, v, shots + 2 * n_shots))
                            return 0;
                        n_shots++;
                    }
                    more = next_item(&l, ']');
                    if (more < 0)
                        return 0;
                    if (!more)
                        break;
                }
            }
            if (field == F_TARGETS && n_targets == 0)
                return 0;
        } else if (field == F_META) {
            if (l.p >= end || *l.p != '{' || !read_container(&l, 1))
                return 0;
        } else if (!read_string(&l, strings + field)) {
            return 0;
        }
        more = next_item(&l, '}');
        if (more < 0)
            return 0;
        if (!more)
            break;
    }
    skip_ws(&l);
    if (l.p != end || (seen & 0x3F) != 0x3F)
        return 0;
    /* The scratch buffer no longer grows: its spans can be read now. */
    ci = name_index(v->names[0], v->n_names[0], span_ptr(&l, strings + F_CATEGORY),
                    strings[F_CATEGORY].len);
    mi = name_index(v->names[1], v->n_names[1], span_ptr(&l, strings + F_METRIC),
                    strings[F_METRIC].len);
    ri = name_index(v->names[2], v->n_names[2], span_ptr(&l, strings + F_RULE),
                    strings[F_RULE].len);
    if (ci < 0 || mi < 0 || ri < 0)
        return 0;
    rule = v->legal[((size_t)ci * v->n_names[1] + (size_t)mi) * v->n_names[2] + (size_t)ri];
    if (rule < 0)
        return 0;
    if (rule > 0) {
        size_t set = (size_t)(rule - 1);
        if (n_targets != 1 || name_index(v->singles[set], v->n_singles[set],
                                         span_ptr(&l, &first_target), first_target.len) < 0)
            return 0;
    }
    /* The id: non-empty, no white space. */
    if (strings[F_ID].len == 0)
        return 0;
    p = span_ptr(&l, strings + F_ID);
    for (i = 0; i < strings[F_ID].len; i += len)
        if (py_space(utf8_at(p + i, &len)))
            return 0;
    /* The prompt: non-empty, not ending in white space, no few-shot block. */
    if (strings[F_PROMPT].len == 0)
        return 0;
    p = span_ptr(&l, strings + F_PROMPT);
    {
        size_t n = strings[F_PROMPT].len, back = n - 1;
        while (back > 0 && (p[back] & 0xC0) == 0x80)
            back--;
        if (py_space(utf8_at(p + back, &len)))
            return 0;
        if (maybe_embedded(p, n, shots, n_shots, &l))
            return 0;
    }
    *id = strings[F_ID];
    return 1;
}

/* block() and block_digests(): with `digests`, a vouched line whose id holds no
 * escape gets True and its id's digest (from the raw bytes, as full_digest() computes
 * it from the str: the same UTF-8 bytes), not a str; an escaped id still gets its str. */
static PyObject *voucher_block(Voucher *v, PyObject *data, int digests) {
    Py_buffer view;
    const unsigned char *p, *end, *nl;
    PyObject *ids = NULL, *lengths = NULL, *sums = NULL, *result = NULL;
    Key small_keys[SMALL_KEYS];
    char small_scratch[SMALL_SCRATCH];
    Scan s;
    Py_ssize_t n = 0, i;
    s.keys = small_keys;
    s.n_keys = 0;
    s.cap_keys = SMALL_KEYS;
    s.scratch = small_scratch;
    s.n_scratch = 0;
    s.cap_scratch = SMALL_SCRATCH;
    s.frames = NULL; /* unused: the nesting is the C stack, at most max_depth deep */
    s.cap_frames = 0;
    s.heap_keys = s.heap_scratch = s.heap_frames = 0;
    s.collide = 0;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    p = (const unsigned char *)view.buf;
    end = p + view.len;
    while (p < end) { /* the lines: one per b"\n", and a last one without it */
        nl = memchr(p, '\n', (size_t)(end - p));
        n++;
        p = nl == NULL ? end : nl + 1;
    }
    ids = PyList_New(n); /* its unset items are NULL, which its dealloc skips */
    lengths = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (ids == NULL || lengths == NULL)
        goto done;
    if (digests) {
        sums = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint32_t));
        if (sums == NULL)
            goto done;
        if (n)
            memset(PyBytes_AS_STRING(sums), 0, (size_t)n * sizeof(uint32_t));
    }
    p = (const unsigned char *)view.buf;
    for (i = 0; i < n; i++) {
        const unsigned char *stop;
        int64_t length;
        Span id;
        PyObject *got = Py_None;
        nl = memchr(p, '\n', (size_t)(end - p));
        stop = nl == NULL ? end : nl + 1;
        length = (int64_t)(stop - p);
        memcpy(PyBytes_AS_STRING(lengths) + i * (Py_ssize_t)sizeof(int64_t), &length,
               sizeof(length));
        if (vouch_line(v, &s, p, stop, &id)) {
            const char *text = id.scratch ? s.scratch + id.off : (const char *)p + id.off;
            if (sums != NULL && !id.scratch) {
                uint64_t h = hash_bytes((const unsigned char *)text, id.len);
                uint32_t digest = (uint32_t)(h ^ (h >> 32));
                memcpy(PyBytes_AS_STRING(sums) + i * (Py_ssize_t)sizeof(uint32_t), &digest,
                       sizeof(digest));
                got = Py_True;
                Py_INCREF(got);
            } else {
                got = PyUnicode_DecodeUTF8(text, (Py_ssize_t)id.len, NULL);
                if (got == NULL)
                    goto done;
            }
        } else {
            Py_INCREF(Py_None);
        }
        PyList_SET_ITEM(ids, i, got);
        p = stop;
    }
    result = sums != NULL ? PyTuple_Pack(3, ids, lengths, sums) : PyTuple_Pack(2, ids, lengths);
done:
    if (s.heap_keys)
        free(s.keys);
    if (s.heap_scratch)
        free(s.scratch);
    Py_XDECREF(ids);
    Py_XDECREF(lengths);
    Py_XDECREF(sums);
    PyBuffer_Release(&view);
    return result;
}

static PyObject *Voucher_block(Voucher *v, PyObject *data) { return voucher_block(v, data, 0); }

static PyObject *Voucher_block_digests(Voucher *v, PyObject *data) {
    return voucher_block(v, data, 1);
}

/* UTF-8 views of a tuple of str, kept alive by the tuple. */
static Name *names_of(PyObject *seq, size_t *n, PyObject *keep) {
    PyObject *tuple = PySequence_Tuple(seq);
    Name *names;
    Py_ssize_t i, size;
    if (tuple == NULL)
        return NULL;
    if (PyList_Append(keep, tuple) < 0) {
        Py_DECREF(tuple);
        return NULL;
    }
    Py_DECREF(tuple); /* keep holds it */
    size = PyTuple_GET_SIZE(tuple);
    names = PyMem_Calloc((size_t)size + 1, sizeof(Name));
    if (names == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (i = 0; i < size; i++) {
        Py_ssize_t len;
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        const char *utf8;
        if (!PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "names must be str");
            PyMem_Free(names);
            return NULL;
        }
        utf8 = PyUnicode_AsUTF8AndSize(item, &len);
        if (utf8 == NULL) {
            PyMem_Free(names);
            return NULL;
        }
        names[i].ptr = utf8;
        names[i].len = (size_t)len;
    }
    *n = (size_t)size;
    return names;
}

static void Voucher_dealloc(Voucher *v) {
    size_t i;
    for (i = 0; i < 3; i++)
        PyMem_Free(v->names[i]);
    if (v->singles != NULL)
        for (i = 0; i < v->n_sets; i++)
            PyMem_Free(v->singles[i]);
    PyMem_Free(v->singles);
    PyMem_Free(v->n_singles);
    PyMem_Free(v->legal);
    Py_XDECREF(v->keep);
    Py_TYPE(v)->tp_free((PyObject *)v);
}

static PyObject *Voucher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"fields", "example_fields", "legal", "max_few_shot", "max_depth", NULL};
    PyObject *fields, *example_fields, *legal, *key, *value, *tuple;
    Py_ssize_t max_few_shot, max_depth, pos = 0;
    Voucher *v;
    size_t i, n, cells;
    Name *list;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO!nn", kw, &fields, &example_fields,
                                     &PyDict_Type, &legal, &max_few_shot, &max_depth))
        return NULL;
    if (max_few_shot < 0 || max_few_shot > MAX_SHOTS || max_depth < 0) {
        PyErr_SetString(PyExc_ValueError, "max_few_shot: 0 to 64; max_depth: >= 0");
        return NULL;
    }
    v = (Voucher *)type->tp_alloc(type, 0); /* zeroed */
    if (v == NULL)
        return NULL;
    v->max_shots = (size_t)max_few_shot;
    v->max_depth = max_depth;
    v->keep = PyList_New(0);
    if (v->keep == NULL)
        goto fail;
    list = names_of(fields, &n, v->keep);
    if (list == NULL)
        goto fail;
    if (n != N_FIELDS) {
        PyMem_Free(list);
        PyErr_SetString(PyExc_ValueError, "fields: the 8 task fields, in evalspec.fields order");
        goto fail;
    }
    memcpy(v->fields, list, sizeof(v->fields));
    PyMem_Free(list);
    list = names_of(example_fields, &n, v->keep);
    if (list == NULL)
        goto fail;
    if (n != 2) {
        PyMem_Free(list);
        PyErr_SetString(PyExc_ValueError, "example_fields: the 2 example fields");
        goto fail;
    }
    memcpy(v->example_fields, list, sizeof(v->example_fields));
    PyMem_Free(list);
    /* The distinct names of each part of the legal triples, then the triples. */
    for (i = 0; i < 3; i++) {
        PyObject *names = PySet_New(NULL), *sorted;
        pos = 0;
        if (names == NULL)
            goto fail;
        while (PyDict_Next(legal, &pos, &key, &value)) {
            if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 3 ||
                PySet_Add(names, PyTuple_GET_ITEM(key, (Py_ssize_t)i)) < 0) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "legal: keys are (category, metric, rule)");
                Py_DECREF(names);
                goto fail;
            }
        }
        sorted = PySequence_List(names);
        Py_DECREF(names);
        if (sorted == NULL)
            goto fail;
        v->names[i] = names_of(sorted, &v->n_names[i], v->keep);
        Py_DECREF(sorted);
        if (v->names[i] == NULL)
            goto fail;
    }
    cells = v->n_names[0] * v->n_names[1] * v->n_names[2];
    v->legal = PyMem_Malloc((cells ? cells : 1) * sizeof(int));
    n = (size_t)PyDict_GET_SIZE(legal);
    v->singles = PyMem_Calloc(n + 1, sizeof(Name *));
    v->n_singles = PyMem_Calloc(n + 1, sizeof(size_t));
    if (v->legal == NULL || v->singles == NULL || v->n_singles == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (i = 0; i < cells; i++)
        v->legal[i] = -1;
    pos = 0;
    while (PyDict_Next(legal, &pos, &key, &value)) {
        int at[3];
        size_t k;
        for (k = 0; k < 3; k++) {
            Py_ssize_t len;
            const char *utf8 = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(key, (Py_ssize_t)k), &len);
            if (utf8 == NULL)
                goto fail;
            at[k] = name_index(v->names[k], v->n_names[k], (const unsigned char *)utf8, (size_t)len);
        }
        cells = ((size_t)at[0] * v->n_names[1] + (size_t)at[1]) * v->n_names[2] + (size_t)at[2];
        if (value == Py_None) {
            v->legal[cells] = 0;
            continue;
        }
        tuple = PySequence_Tuple(value);
        if (tuple == NULL)
            goto fail;
        v->singles[v->n_sets] = names_of(tuple, &v->n_singles[v->n_sets], v->keep);
        Py_DECREF(tuple);
        if (v->singles[v->n_sets] == NULL)
            goto fail;
        v->legal[cells] = (int)++v->n_sets;
    }
    return (PyObject *)v;
fail:
    Py_DECREF(v);
    return NULL;
}

static PyMethodDef Voucher_methods[] = {
    {"block", (PyCFunction)Voucher_block, METH_O,
     "block(data, /)\n--\n\n"
     "(ids, lengths) of the lines of data (split at b'\\n', each keeping it): ids[i] is\n"
     "line i's task id when it is certainly a valid task, else None; lengths holds each\n"
     "line's length in bytes as native int64."},
    {"block_digests", (PyCFunction)Voucher_block_digests, METH_O,
     "block_digests(data, /)\n--\n\n"
     "block(), and the ids as digests: (ids, lengths, digests), where ids[i] is True\n"
     "when line i is vouched for and its id holds no escape (digests[i], native\n"
     "uint32, is the id's id_digests() digest), its id (a str) when it is vouched for\n"
     "otherwise, else None."},
    {NULL, NULL, 0, NULL}};

static PyTypeObject VoucherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "evalspec.validation._core.Voucher",
    .tp_basicsize = sizeof(Voucher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The fast path's per-line check of one spec version, in one pass a line.",
    .tp_new = Voucher_new,
    .tp_dealloc = (destructor)Voucher_dealloc,
    .tp_methods = Voucher_methods,
};

static PyMethodDef core_methods[] = {
    {"id_digests", (PyCFunction)id_digests, METH_O,
     "id_digests(ids, /)\n--\n\n"
     "The 32-bit digests of a list of str (UTF-8, surrogatepass), as native uint32 bytes."},
    {"merged_digests", (PyCFunction)(void (*)(void))merged_digests, METH_FASTCALL,
     "merged_digests(ids, digests, /)\n--\n\n"
     "The valid lines' digests in order (native uint32 bytes): digests[i] where ids[i]\n"
     "is True, the id_digests() digest of ids[i] where it is a str, none for None."},
    {"span_lines", (PyCFunction)(void (*)(void))span_lines, METH_FASTCALL,
     "span_lines(lengths, skipped, origin, shift, start, /)\n--\n\n"
     "(lines, offsets) as native int64 bytes: the number (plus shift) and byte offset\n"
     "of each line of a block not in skipped (lines numbered from origin at byte start)."},
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
    init_tables();
    if (PyType_Ready(&DigestTableType) < 0 || PyType_Ready(&VoucherType) < 0)
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
    Py_INCREF(&VoucherType);
    if (PyModule_AddObject(module, "Voucher", (PyObject *)&VoucherType) < 0) {
        Py_DECREF(&VoucherType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
