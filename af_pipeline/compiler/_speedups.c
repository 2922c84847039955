/* Hot steps of the day compiler in C; each has its definition in Python, which the tests hold
 * this to, and which does whatever this does not take (Unsupported).
 *
 * dump: the YAML rendering of a day document (af_pipeline.compiler.emit.to_yaml). emit.py's _yaml_map and _yaml_seq define the text: block style, keys sorted, a string plain
 * when it reads back as itself, else double-quoted with JSON's escapes. This module writes the
 * same bytes for documents of exact dicts, lists, strs, ints, floats, bools and None (what
 * compile_day and json.loads make); anything else raises Unsupported and emit.py writes it.
 * Python spends ~2.4 ms on the busiest benchmark day walking the document; this, ~0.2 ms.
 *
 * ref_ids: document.common_ref_ids (a day's snapshot refs as one prefix and integer ids): 0.54
 * against 0.08 ms on that day.
 *
 * tiny_number: emit._tiny_number (does orjson's text need json.dumps's): 0.16 against 0.01 ms.
 *
 * attribute: the search of enrich.SnapIndex.attribute_codes (each input event's nearest snapshot
 * of its stream), galloping from the last answer as events come in time order: 0.18 ms in numpy
 * against 0.04 ms.
 *
 * ring, rank: enrich.resolve_in_columns's search for each anonymous click's ring pairs and its
 * ranking of them (enrich._ring_pairs and enrich._rank in numpy, resolve_click the rule):
 * resolve_in_columns 0.81 -> 0.55 ms. Built with -ffp-contract=off (pyproject.toml): each
 * product and sum is rounded on its own, as numpy's are, so equal keys stay equal.
 *
 * md_frames: the rows of to_markdown's frames table (emit.md_frame_rows), most of a day's
 * Markdown: 0.63 -> 0.16 ms. Click targets beyond ASCII are judged by emit._telling itself.
 *
 * id_runs: document.id_runs_by_group (the evidence ids of every frame and interruption) from the
 * refs' ids as a list: 0.46 -> 0.19 ms with the list's conversion to numpy saved.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PyObject *Unsupported; /* the document holds something only emit.py writes */

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} Out;

/* A growing buffer (*buf, of *cap items of item bytes) made to hold need items: doubled from
 * first items. */
static int grow_to(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t item, Py_ssize_t first)
{
    if (need <= *cap)
        return 0;
    Py_ssize_t n = *cap ? *cap : first;
    while (n < need)
        n *= 2;
    void *got = PyMem_Realloc(*buf, (size_t)n * item);
    if (got == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buf = got;
    *cap = n;
    return 0;
}

static int grow(Out *o, Py_ssize_t more)
{
    return grow_to((void **)&o->buf, &o->cap, o->len + more, 1, 65536);
}

static inline int put(Out *o, const char *s, Py_ssize_t n)
{
    if (grow(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

static inline int put_c(Out *o, char c)
{
    if (o->len == o->cap && grow(o, 1) < 0)
        return -1;
    o->buf[o->len++] = c;
    return 0;
}

static inline int put_pad(Out *o, Py_ssize_t n)
{
    if (grow(o, n) < 0)
        return -1;
    memset(o->buf + o->len, ' ', (size_t)n);
    o->len += n;
    return 0;
}

/* emit.py's _PLAIN: [A-Za-z][A-Za-z0-9 _./()@+-]* */
static inline int plain_char(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == ' ' || c == '_' ||
           c == '.' || c == '/' || c == '(' || c == ')' || c == '@' || c == '+' || c == '-';
}

/* emit.py's _YAML_WORDS: what YAML 1.1 would read as a bool or null */
static int yaml_word(const unsigned char *s, Py_ssize_t n)
{
    static const char *words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", NULL};
    char low[6];
    if (n > 5)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        low[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] + 32 : s[i]);
    for (int w = 0; words[w] != NULL; w++)
        if ((Py_ssize_t)strlen(words[w]) == n && memcmp(words[w], low, (size_t)n) == 0)
            return 1;
    return 0;
}

static int plain(PyObject *s)
{
    if (!PyUnicode_IS_ASCII(s))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    const unsigned char *c = PyUnicode_1BYTE_DATA(s);
    if (n == 0 || !((c[0] >= 'A' && c[0] <= 'Z') || (c[0] >= 'a' && c[0] <= 'z')) || c[n - 1] == ' ')
        return 0;
    for (Py_ssize_t i = 1; i < n; i++)
        if (!plain_char(c[i]))
            return 0;
    return !yaml_word(c, n);
}

/* emit.BIDI: the bidirectional controls (embeddings, overrides, isolates, marks) */
static inline int bidi(Py_UCS4 c)
{
    return c == 0x061c || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/* emit.py's _UNPRINTABLE: written as \uXXXX inside double quotes */
static inline int unprintable(Py_UCS4 c)
{
    return (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029 || (c >= 0xd800 && c <= 0xdfff) || c == 0xfeff ||
           c == 0xfffe || c == 0xffff || bidi(c);
}

static int put_u(Out *o, Py_UCS4 c)
{
    static const char hex[] = "0123456789abcdef";
    char e[6] = {'\\', 'u', hex[(c >> 12) & 15], hex[(c >> 8) & 15], hex[(c >> 4) & 15], hex[c & 15]};
    return put(o, e, 6);
}

static int put_utf8(Out *o, Py_UCS4 c)
{
    char b[4];
    Py_ssize_t n;
    if (c < 0x80) {
        b[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        b[0] = (char)(0xc0 | (c >> 6));
        b[1] = (char)(0x80 | (c & 0x3f));
        n = 2;
    } else if (c < 0x10000) {
        b[0] = (char)(0xe0 | (c >> 12));
        b[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        b[2] = (char)(0x80 | (c & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | (c >> 18));
        b[1] = (char)(0x80 | ((c >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((c >> 6) & 0x3f));
        b[3] = (char)(0x80 | (c & 0x3f));
        n = 4;
    }
    return put(o, b, n);
}

/* emit.py's _yaml_str: plain, or json.encoder.encode_basestring's text with the unprintable
 * characters escaped as well */
static int put_str(Out *o, PyObject *s)
{
    if (PyUnicode_READY(s) < 0)
        return -1;
    if (plain(s))
        return put(o, (const char *)PyUnicode_1BYTE_DATA(s), PyUnicode_GET_LENGTH(s));
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_ssize_t n = PyUnicode_GET_LENGTH(s);
    if (put_c(o, '"') < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        int r;
        switch (c) {
        case '"': r = put(o, "\\\"", 2); break;
        case '\\': r = put(o, "\\\\", 2); break;
        case '\n': r = put(o, "\\n", 2); break;
        case '\r': r = put(o, "\\r", 2); break;
        case '\t': r = put(o, "\\t", 2); break;
        case '\b': r = put(o, "\\b", 2); break;
        case '\f': r = put(o, "\\f", 2); break;
        default:
            r = (c < 0x20 || unprintable(c)) ? put_u(o, c) : put_utf8(o, c);
        }
        if (r < 0)
            return -1;
    }
    return put_c(o, '"');
}

/* emit.py's _yaml_float: repr when it has a dot and no exponent (YAML 1.1 reads only those as
 * floats), else six decimals */
static int put_float(Out *o, PyObject *v)
{
    double x = PyFloat_AS_DOUBLE(v);
    char *r = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (r == NULL)
        return -1;
    if (strchr(r, '.') == NULL || strchr(r, 'e') != NULL) {
        PyMem_Free(r);
        r = PyOS_double_to_string(x, 'f', 6, 0, NULL);
        if (r == NULL)
            return -1;
    }
    int rc = put(o, r, (Py_ssize_t)strlen(r));
    PyMem_Free(r);
    return rc;
}

static int put_int(Out *o, PyObject *v)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (overflow) {
        PyObject *t = PyObject_Str(v);
        if (t == NULL)
            return -1;
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(t, &n);
        int rc = u == NULL ? -1 : put(o, u, n);
        Py_DECREF(t);
        return rc;
    }
    char b[24];
    int n = snprintf(b, sizeof b, "%lld", x);
    return put(o, b, n);
}

/* emit.py's _yaml_scalar, for the exact types this module writes */
static int put_scalar(Out *o, PyObject *v)
{
    if (PyUnicode_CheckExact(v))
        return put_str(o, v);
    if (v == Py_None)
        return put(o, "null", 4);
    if (v == Py_True)
        return put(o, "true", 4);
    if (v == Py_False)
        return put(o, "false", 5);
    if (PyLong_CheckExact(v))
        return put_int(o, v);
    if (PyFloat_CheckExact(v))
        return put_float(o, v);
    if (PyDict_CheckExact(v))
        return put(o, "{}", 2); /* empty: a non-empty one is written as a block */
    if (PyList_CheckExact(v))
        return put(o, "[]", 2);
    PyErr_SetString(Unsupported, "a value of a type only emit.py writes");
    return -1;
}

static int write_seq(Out *o, PyObject *items, Py_ssize_t pad);

/* the items of a dict sorted by key (exact strs, distinct), as sorted(d) orders them, held as
 * borrowed references (nothing here runs Python code, so the dict cannot change meanwhile): a
 * document's dicts are small, and an insertion sort of them in place costs less than a list
 * of keys and its sort; a larger one is sorted by qsort */
#define SMALL 32

typedef struct {
    PyObject *k, *v;
} Item;

static int by_key(const void *a, const void *b)
{
    return PyUnicode_Compare(((const Item *)a)->k, ((const Item *)b)->k);
}

static int sorted_items(PyObject *d, Item *small, Item **items, Py_ssize_t *count)
{
    Py_ssize_t n = PyDict_GET_SIZE(d), pos = 0, i = 0;
    Item *it = n <= SMALL ? small : PyMem_Malloc(sizeof(Item) * (size_t)n);
    if (it == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *k, *v;
    while (PyDict_Next(d, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) {
            if (it != small)
                PyMem_Free(it);
            PyErr_SetString(Unsupported, "a key that is not a str");
            return -1;
        }
        Py_ssize_t j = i++;
        while (n <= SMALL && j > 0 && PyUnicode_Compare(it[j - 1].k, k) > 0) {
            it[j] = it[j - 1];
            j--;
        }
        it[j].k = k;
        it[j].v = v;
    }
    if (n > SMALL)
        qsort(it, (size_t)n, sizeof(Item), by_key);
    *items = it;
    *count = i;
    return 0;
}

/* emit.py's _yaml_map: the first line starts with "- " (a sequence item) when first_dash */
static int write_map(Out *o, PyObject *d, Py_ssize_t pad, int first_dash)
{
    Item small[SMALL], *items;
    Py_ssize_t n;
    if (sorted_items(d, small, &items, &n) < 0)
        return -1;
    int rc = 0;
    if (Py_EnterRecursiveCall(" while writing YAML")) {
        if (items != small)
            PyMem_Free(items);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n && rc == 0; i++) {
        PyObject *k = items[i].k, *v = items[i].v;
        if (i == 0 && first_dash) {
            rc = put_pad(o, pad - 2);
            if (rc == 0)
                rc = put(o, "- ", 2);
        } else {
            rc = put_pad(o, pad);
        }
        if (rc == 0)
            rc = put_str(o, k);
        if (rc != 0)
            break;
        if (PyDict_CheckExact(v) && PyDict_GET_SIZE(v) > 0) {
            rc = put(o, ":\n", 2);
            if (rc == 0)
                rc = write_map(o, v, pad + 2, 0);
        } else if (PyList_CheckExact(v) && PyList_GET_SIZE(v) > 0) {
            rc = put(o, ":\n", 2);
            if (rc == 0)
                rc = write_seq(o, v, pad);
        } else {
            rc = put(o, ": ", 2);
            if (rc == 0)
                rc = put_scalar(o, v);
            if (rc == 0)
                rc = put_c(o, '\n');
        }
    }
    Py_LeaveRecursiveCall();
    if (items != small)
        PyMem_Free(items);
    return rc;
}

/* emit.py's _yaml_seq: items at the parent key's indent, each after "- " */
static int write_seq(Out *o, PyObject *items, Py_ssize_t pad)
{
    if (Py_EnterRecursiveCall(" while writing YAML"))
        return -1;
    int rc = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items) && rc == 0; i++) {
        PyObject *v = PyList_GET_ITEM(items, i); /* borrowed: no Python code runs while we write */
        if (PyDict_CheckExact(v) && PyDict_GET_SIZE(v) > 0) {
            rc = write_map(o, v, pad + 2, 1);
        } else if (PyList_CheckExact(v) && PyList_GET_SIZE(v) > 0) {
            rc = put_pad(o, pad);
            if (rc == 0)
                rc = put(o, "-\n", 2);
            if (rc == 0)
                rc = write_seq(o, v, pad + 2);
        } else if ((PyDict_Check(v) && !PyDict_CheckExact(v)) || (PyList_Check(v) && !PyList_CheckExact(v))) {
            /* a subclass: emit.py tests these with isinstance */
            PyErr_SetString(Unsupported, "a dict or list subclass");
            rc = -1;
        } else {
            rc = put_pad(o, pad);
            if (rc == 0)
                rc = put(o, "- ", 2);
            if (rc == 0)
                rc = put_scalar(o, v);
            if (rc == 0)
                rc = put_c(o, '\n');
        }
    }
    Py_LeaveRecursiveCall();
    return rc;
}

static PyObject *dump(PyObject *self, PyObject *doc)
{
    if (!PyDict_CheckExact(doc)) {
        PyErr_SetString(Unsupported, "a document that is not a dict");
        return NULL;
    }
    Out o = {NULL, 0, 0};
    PyObject *text = NULL;
    if (write_map(&o, doc, 0, 0) == 0) {
        if (o.len == 0)
            text = PyUnicode_FromString("\n"); /* "\n".join([]) + "\n" */
        else
            text = PyUnicode_DecodeUTF8(o.buf, o.len, "strict");
    }
    PyMem_Free(o.buf);
    return text;
}

/* document.common_ref_ids: (prefix, ids) when every ref is one prefix (not ending in an ASCII
 * digit) and a plain ASCII decimal integer ("0" alone or no leading zero), else None. */
static PyObject *ref_ids(PyObject *self, PyObject *refs)
{
    if (!PyList_CheckExact(refs)) {
        PyErr_SetString(Unsupported, "refs that are not a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(refs);
    if (n == 0)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(refs, i))) {
            PyErr_SetString(Unsupported, "a ref that is not a str");
            return NULL;
        }
    }
    /* the common prefix of all refs (that of the least and the greatest, as Python finds it) */
    PyObject *first = PyList_GET_ITEM(refs, 0);
    int fk = PyUnicode_KIND(first);
    const void *fd = PyUnicode_DATA(first);
    Py_ssize_t lcp = PyUnicode_GET_LENGTH(first);
    for (Py_ssize_t i = 1; i < n && lcp > 0; i++) {
        PyObject *r = PyList_GET_ITEM(refs, i);
        int k = PyUnicode_KIND(r);
        const void *d = PyUnicode_DATA(r);
        Py_ssize_t m = PyUnicode_GET_LENGTH(r);
        if (m < lcp)
            lcp = m;
        Py_ssize_t j = 0;
        if (k == PyUnicode_1BYTE_KIND && fk == PyUnicode_1BYTE_KIND) {
            const Py_UCS1 *a = fd, *b = d;
            while (j < lcp && a[j] == b[j])
                j++;
        } else {
            while (j < lcp && PyUnicode_READ(fk, fd, j) == PyUnicode_READ(k, d, j))
                j++;
        }
        lcp = j;
    }
    Py_ssize_t cut = lcp; /* the prefix without its trailing digits */
    while (cut > 0) {
        Py_UCS4 c = PyUnicode_READ(fk, fd, cut - 1);
        if (c < '0' || c > '9')
            break;
        cut--;
    }
    PyObject *ids = PyList_New(n);
    if (ids == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(refs, i);
        int k = PyUnicode_KIND(r);
        const void *d = PyUnicode_DATA(r);
        Py_ssize_t m = PyUnicode_GET_LENGTH(r);
        /* a tail: one or more ASCII digits, "0" alone or no leading zero */
        if (m == cut || (PyUnicode_READ(k, d, cut) == '0' && m > cut + 1)) {
            Py_DECREF(ids);
            Py_RETURN_NONE;
        }
        long long v = 0;
        for (Py_ssize_t j = cut; j < m; j++) {
            Py_UCS4 c = PyUnicode_READ(k, d, j);
            if (c < '0' || c > '9') {
                Py_DECREF(ids);
                Py_RETURN_NONE;
            }
            v = v * 10 + (long long)(c - '0');
        }
        PyObject *id;
        if (m - cut <= 18) {
            id = PyLong_FromLongLong(v);
        } else { /* wider than int64: Python parses it */
            PyObject *tail = PyUnicode_Substring(r, cut, m);
            id = tail == NULL ? NULL : PyLong_FromUnicodeObject(tail, 10);
            Py_XDECREF(tail);
        }
        if (id == NULL) {
            Py_DECREF(ids);
            return NULL;
        }
        PyList_SET_ITEM(ids, i, id);
    }
    PyObject *head = PyUnicode_Substring(first, 0, cut);
    if (head == NULL) {
        Py_DECREF(ids);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, head, ids);
    Py_DECREF(head);
    Py_DECREF(ids);
    return out;
}

/* emit._number_starts: whether a JSON number starts at byte j (after ':', ',' or '[', with or
 * without a minus sign). */
static int number_starts(const char *raw, Py_ssize_t j)
{
    if (j > 0 && raw[j - 1] == '-')
        j--;
    return j > 0 && (raw[j - 1] == ':' || raw[j - 1] == ',' || raw[j - 1] == '[');
}

/* emit._tiny_number: whether orjson's text holds a number it writes otherwise than json.dumps
 * (0.0000... or an exponent below zero), found the same way: each "0.0000" and each "e-" (back
 * over the mantissa's digits and dots), then a look at what comes before the number. */
static PyObject *tiny_number(PyObject *self, PyObject *arg)
{
    if (!PyBytes_CheckExact(arg)) {
        PyErr_SetString(Unsupported, "text that is not bytes");
        return NULL;
    }
    const char *raw = PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg);
    const char *at = raw, *end = raw + n;
    /* by their rarer byte, '.' and '-', which memchr finds many times faster than memmem does
     * the whole patterns */
    while ((at = memchr(at, '.', (size_t)(end - at))) != NULL) {
        Py_ssize_t i = at - raw - 1; /* where "0.0000" would start */
        if (i >= 0 && n - i >= 6 && memcmp(raw + i, "0.0000", 6) == 0 && number_starts(raw, i))
            Py_RETURN_TRUE;
        at++;
    }
    at = raw;
    while ((at = memchr(at, '-', (size_t)(end - at))) != NULL) {
        Py_ssize_t i = at - raw - 1, j = i; /* where "e-" would start */
        if (i >= 0 && raw[i] == 'e') {
            while (j > 0 && ((raw[j - 1] >= '0' && raw[j - 1] <= '9') || raw[j - 1] == '.'))
                j--;
            if (j < i && number_starts(raw, j))
                Py_RETURN_TRUE;
        }
        at++;
    }
    Py_RETURN_FALSE;
}

/* A contiguous array (numpy's, by the buffer protocol) of n items (any number when n < 0) of
 * type want: 'q' int64, 'd' float64 or '?' bool; or -1 with Unsupported set. */
static int array_of(PyObject *obj, Py_buffer *view, Py_ssize_t n, char want, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(Unsupported, "%s is not a contiguous array", what);
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (f[0] == '=' || f[0] == '<' || f[0] == '@')
        f++;
    int ok = f[0] != '\0' && f[1] == '\0' && (want == 'q' ? (f[0] == 'l' || f[0] == 'q') && view->itemsize == 8
                                              : want == 'd' ? f[0] == 'd' && view->itemsize == 8
                                                            : f[0] == '?' && view->itemsize == 1);
    if (!ok || (n >= 0 && view->len / view->itemsize != n)) {
        PyBuffer_Release(view);
        PyErr_Format(Unsupported, "%s is not an array of the expected type and length", what);
        return -1;
    }
    return 0;
}

static int int64s(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable, const char *what)
{
    return array_of(obj, view, n, 'q', writable, what);
}

/* enrich.SnapIndex.attribute_codes after its grouping: for each event (time ets[i], group
 * codes[i], -1 for the last group; every event in the last group when codes is None) the
 * nearest time of its group's sorted times, the earlier one on a tie (SnapIndex.nearest);
 * pos[i] its position (the group's positions[j], or j when a group has none) and dist[i] the
 * distance. groups: a list of (times, positions or None), int64 arrays, none empty. */
static PyObject *attribute(PyObject *self, PyObject *args)
{
    PyObject *ets_o, *codes_o, *groups, *pos_o, *dist_o;
    if (!PyArg_ParseTuple(args, "OOO!OO", &ets_o, &codes_o, &PyList_Type, &groups, &pos_o, &dist_o))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(groups);
    if (k == 0) {
        PyErr_SetString(Unsupported, "no group");
        return NULL;
    }
    Py_buffer ets, codes, pos, dist;
    Py_buffer *tv = PyMem_Calloc((size_t)k, sizeof(Py_buffer)), *pv = PyMem_Calloc((size_t)k, sizeof(Py_buffer));
    int *has_p = PyMem_Calloc((size_t)k, sizeof(int));
    Py_ssize_t *hint = PyMem_Malloc((size_t)k * sizeof(Py_ssize_t)); /* per group: its last answer */
    int64_t *last = PyMem_Malloc((size_t)k * sizeof(int64_t)); /* and the time it answered */
    Py_ssize_t got = 0, n = -1;
    int ok = 0, have_codes = codes_o != Py_None;
    if (tv == NULL || pv == NULL || has_p == NULL || hint == NULL || last == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t g = 0; g < k; g++)
        hint[g] = -1;
    if (int64s(ets_o, &ets, -1, 0, "the event times") < 0)
        goto done;
    n = ets.len / 8;
    if (have_codes && int64s(codes_o, &codes, n, 0, "the event groups") < 0)
        goto free_ets;
    if (int64s(pos_o, &pos, n, 1, "the positions") < 0)
        goto free_codes;
    if (int64s(dist_o, &dist, n, 1, "the distances") < 0)
        goto free_pos;
    for (; got < k; got++) {
        PyObject *g = PyList_GET_ITEM(groups, got);
        if (!PyTuple_CheckExact(g) || PyTuple_GET_SIZE(g) != 2) {
            PyErr_SetString(Unsupported, "a group that is not (times, positions)");
            goto free_groups;
        }
        if (int64s(PyTuple_GET_ITEM(g, 0), &tv[got], -1, 0, "a group's times") < 0)
            goto free_groups;
        if (tv[got].len == 0) {
            PyBuffer_Release(&tv[got]);
            PyErr_SetString(Unsupported, "an empty group");
            goto free_groups;
        }
        has_p[got] = PyTuple_GET_ITEM(g, 1) != Py_None;
        if (has_p[got] && int64s(PyTuple_GET_ITEM(g, 1), &pv[got], tv[got].len / 8, 0, "a group's positions") < 0) {
            PyBuffer_Release(&tv[got]);
            goto free_groups;
        }
    }
    {
        const int64_t *t = ets.buf, *c = have_codes ? codes.buf : NULL;
        int64_t *po = pos.buf, *di = dist.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            int64_t g = c ? c[i] : -1;
            if (g < -1 || g >= k - 1) {
                PyErr_SetString(Unsupported, "an event group out of range");
                goto free_groups;
            }
            if (g < 0)
                g = k - 1;
            const int64_t *times = tv[g].buf;
            Py_ssize_t m = tv[g].len / 8, lo = 0, hi = m;
            int64_t x = t[i];
            if (hint[g] >= 0 && x >= last[g]) {
                /* events come in time order: the answer is at or after the group's last one,
                 * and near it; gallop there, then bisect (every time before lo is < x) */
                lo = hint[g];
                hi = lo;
                if (lo < m && times[lo] < x) {
                    Py_ssize_t step = 1;
                    lo = hi = lo + 1;
                    while (hi < m && times[hi] < x) {
                        lo = hi + 1;
                        step <<= 1;
                        hi = lo + step;
                    }
                    if (hi > m)
                        hi = m;
                }
            }
            while (lo < hi) { /* the first time >= x (numpy's searchsorted, side left) */
                Py_ssize_t mid = lo + (hi - lo) / 2;
                if (times[mid] < x)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            hint[g] = lo;
            last[g] = x;
            Py_ssize_t left = lo > 0 ? lo - 1 : 0, right = lo < m - 1 ? lo : m - 1;
            Py_ssize_t j = (lo == m || (lo > 0 && x - times[left] <= times[right] - x)) ? left : right;
            po[i] = has_p[g] ? ((const int64_t *)pv[g].buf)[j] : (int64_t)j;
            di[i] = x >= times[j] ? x - times[j] : times[j] - x;
        }
        ok = 1;
    }
free_groups:
    for (Py_ssize_t g = 0; g < got; g++) {
        PyBuffer_Release(&tv[g]);
        if (has_p[g])
            PyBuffer_Release(&pv[g]);
    }
    PyBuffer_Release(&dist);
free_pos:
    PyBuffer_Release(&pos);
free_codes:
    if (have_codes)
        PyBuffer_Release(&codes);
free_ets:
    PyBuffer_Release(&ets);
done:
    PyMem_Free(tv);
    PyMem_Free(pv);
    PyMem_Free(has_p);
    PyMem_Free(hint);
    PyMem_Free(last);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}

/* Arrays taken from Python objects, released together. */
typedef struct {
    Py_buffer view[16];
    int count;
} Views;

static const void *take(Views *v, PyObject *obj, Py_ssize_t n, char want, const char *what)
{
    if (array_of(obj, &v->view[v->count], n, want, 0, what) < 0)
        return NULL;
    return v->view[v->count++].buf;
}

static void release(Views *v)
{
    while (v->count > 0)
        PyBuffer_Release(&v->view[--v->count]);
}

/* enrich._ring_pairs's search: for each click k (time t[k], position nx[k], ny[k] and ring rx[k],
 * ry[k] in screen fractions), the elements of that time in the day's time-sorted columns (ts,
 * left, top, width, height; NaN for a missing bound) whose bounds widened by the ring hold the
 * click: resolve_click's first rejections. Returns (owner, elem) as bytes of int64s, the pairs
 * in click order, each click's elements in log order. */
static PyObject *ring(PyObject *self, PyObject *args)
{
    PyObject *o[10];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &o[9]))
        return NULL;
    Views v = {.count = 0};
    PyObject *owner = NULL, *elem = NULL, *out = NULL;
    int64_t *ow = NULL, *el = NULL;
    const int64_t *ts = take(&v, o[0], -1, 'q', "the element times");
    if (ts == NULL)
        goto done;
    Py_ssize_t n = v.view[0].len / 8;
    const double *left = take(&v, o[1], n, 'd', "the lefts"), *top = take(&v, o[2], n, 'd', "the tops");
    const double *width = left && top ? take(&v, o[3], n, 'd', "the widths") : NULL;
    const double *height = width ? take(&v, o[4], n, 'd', "the heights") : NULL;
    const int64_t *t = height ? take(&v, o[5], -1, 'q', "the click times") : NULL;
    if (t == NULL)
        goto done;
    Py_ssize_t k = v.view[v.count - 1].len / 8;
    const double *nx = take(&v, o[6], k, 'd', "the click xs"), *ny = nx ? take(&v, o[7], k, 'd', "the click ys") : NULL;
    const double *rx = ny ? take(&v, o[8], k, 'd', "the rings' widths") : NULL;
    const double *ry = rx ? take(&v, o[9], k, 'd', "the rings' heights") : NULL;
    if (ry == NULL)
        goto done;
    Py_ssize_t cap = 64, len = 0;
    ow = PyMem_Malloc((size_t)cap * 8);
    el = PyMem_Malloc((size_t)cap * 8);
    if (ow == NULL || el == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t c = 0; c < k; c++) {
        Py_ssize_t lo = 0, hi = n;
        while (lo < hi) { /* the click's snapshot's first element */
            Py_ssize_t mid = lo + (hi - lo) / 2;
            if (ts[mid] < t[c])
                lo = mid + 1;
            else
                hi = mid;
        }
        for (Py_ssize_t e = lo; e < n && ts[e] == t[c]; e++) {
            double l = left[e], w = width[e], tp = top[e], h = height[e];
            /* as numpy's test over all pairs: NaN bounds fail every comparison */
            if (!(l - rx[c] <= nx[c] && nx[c] <= l + w + rx[c] && tp - ry[c] <= ny[c] && ny[c] <= tp + h + ry[c]))
                continue;
            if (w < 0 || h < 0)
                continue;
            if (len == cap) {
                cap *= 2;
                int64_t *a = PyMem_Realloc(ow, (size_t)cap * 8), *b = a ? PyMem_Realloc(el, (size_t)cap * 8) : NULL;
                if (a != NULL)
                    ow = a;
                if (b == NULL) {
                    PyErr_NoMemory();
                    goto done;
                }
                el = b;
            }
            ow[len] = c;
            el[len++] = e;
        }
    }
    owner = PyBytes_FromStringAndSize((const char *)ow, len * 8);
    elem = owner ? PyBytes_FromStringAndSize((const char *)el, len * 8) : NULL;
    if (elem != NULL)
        out = PyTuple_Pack(2, owner, elem);
done:
    Py_XDECREF(owner);
    Py_XDECREF(elem);
    PyMem_Free(ow);
    PyMem_Free(el);
    release(&v);
    return out;
}

/* resolve_in_columns's ranking (enrich._rank): per click (owner, grouped in order, of k clicks,
 * at nx, ny), among its candidate pairs (cand), the smallest (ocr, area, -depth) of those whose
 * element (elem: a row of left, top, width, height) holds the click in its box; without one,
 * the smallest (ocr, squared pixel distance, area), the click's screen being sw x sh pixels.
 * For each click: None (no candidate), or (resolution, pair, tied) where tied says a second
 * pair has the same key (then the refs decide, in Python). */
static PyObject *rank(PyObject *self, PyObject *args)
{
    PyObject *o[13];
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8],
                          &o[9], &o[10], &o[11], &o[12]))
        return NULL;
    Views v = {.count = 0};
    PyObject *out = NULL, *exact = NULL, *tolerance = NULL;
    const int64_t *owner = take(&v, o[0], -1, 'q', "the owners");
    if (owner == NULL)
        goto done;
    Py_ssize_t n = v.view[0].len / 8;
    const int64_t *elem = take(&v, o[1], n, 'q', "the elements");
    const char *cand = elem ? take(&v, o[2], n, '?', "the candidates") : NULL;
    const char *ocr = cand ? take(&v, o[3], n, '?', "the ocr flags") : NULL;
    const int64_t *neg_depth = ocr ? take(&v, o[4], n, 'q', "the depths") : NULL;
    const double *sw = neg_depth ? take(&v, o[11], -1, 'd', "the screen widths") : NULL;
    if (sw == NULL)
        goto done;
    Py_ssize_t k = v.view[v.count - 1].len / 8;
    const double *sh = take(&v, o[12], k, 'd', "the screen heights");
    const double *nx = sh ? take(&v, o[5], k, 'd', "the xs") : NULL;
    const double *ny = nx ? take(&v, o[6], k, 'd', "the ys") : NULL;
    const double *lefts = ny ? take(&v, o[7], -1, 'd', "the lefts") : NULL;
    if (lefts == NULL)
        goto done;
    Py_ssize_t m = v.view[v.count - 1].len / 8;
    const double *tops = take(&v, o[8], m, 'd', "the tops");
    const double *widths = tops ? take(&v, o[9], m, 'd', "the widths") : NULL;
    const double *heights = widths ? take(&v, o[10], m, 'd', "the heights") : NULL;
    if (heights == NULL)
        goto done;
    for (Py_ssize_t p = 0; p < n; p++) {
        if (elem[p] < 0 || elem[p] >= m) {
            PyErr_SetString(Unsupported, "an element out of range");
            goto done;
        }
    }
    for (Py_ssize_t p = 0; p < n; p++) {
        if (owner[p] < 0 || owner[p] >= k || (p > 0 && owner[p] < owner[p - 1])) {
            PyErr_SetString(Unsupported, "owners out of order or range");
            goto done;
        }
    }
    exact = PyUnicode_InternFromString("exact");
    tolerance = exact ? PyUnicode_InternFromString("tolerance") : NULL;
    out = tolerance ? PyList_New(k) : NULL;
    if (out == NULL)
        goto done;
    for (Py_ssize_t c = 0; c < k; c++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(out, c, Py_None);
    }
    for (Py_ssize_t a = 0, b; a < n; a = b) {
        int64_t c = owner[a];
        for (b = a; b < n && owner[b] == c; b++)
            ;
        double x = nx[c], y = ny[c];
        /* inside a box: the smallest (ocr, area, -depth) */
        Py_ssize_t best = -1;
        double best_area = 0.0, best_d2 = 0.0;
        int tied = 0;
        for (Py_ssize_t p = a; p < b; p++) {
            int64_t e = elem[p];
            double left = lefts[e], top = tops[e], right = left + widths[e], bottom = top + heights[e];
            if (!cand[p] || !(left <= x && x <= right && top <= y && y <= bottom))
                continue;
            double area = widths[e] * heights[e];
            int cmp = best < 0 ? -1
                      : ocr[p] != ocr[best] ? (ocr[p] ? 1 : -1)
                      : area != best_area ? (area < best_area ? -1 : 1)
                      : neg_depth[p] != neg_depth[best] ? (neg_depth[p] < neg_depth[best] ? -1 : 1) : 0;
            if (cmp < 0) {
                best = p;
                best_area = area;
                tied = 0;
            } else if (cmp == 0) {
                tied = 1;
            }
        }
        PyObject *res = exact;
        if (best < 0) { /* else the nearest: the smallest (ocr, squared pixel distance, area) */
            res = tolerance;
            for (Py_ssize_t p = a; p < b; p++) {
                if (!cand[p])
                    continue;
                int64_t e = elem[p];
                double left = lefts[e], top = tops[e], right = left + widths[e], bottom = top + heights[e];
                double dx = (x < left ? left - x : (x > right ? x - right : 0.0)) * sw[c];
                double dy = (y < top ? top - y : (y > bottom ? y - bottom : 0.0)) * sh[c];
                double dx2 = dx * dx, dy2 = dy * dy; /* two products, then the sum: as numpy rounds */
                double d2 = dx2 + dy2, area = widths[e] * heights[e];
                int cmp = best < 0 ? -1
                          : ocr[p] != ocr[best] ? (ocr[p] ? 1 : -1)
                          : d2 != best_d2 ? (d2 < best_d2 ? -1 : 1)
                          : area != best_area ? (area < best_area ? -1 : 1) : 0;
                if (cmp < 0) {
                    best = p;
                    best_d2 = d2;
                    best_area = area;
                    tied = 0;
                } else if (cmp == 0) {
                    tied = 1;
                }
            }
        }
        if (best >= 0) {
            PyObject *item = Py_BuildValue("(OnO)", res, best, tied ? Py_True : Py_False);
            if (item == NULL) {
                Py_CLEAR(out);
                goto done;
            }
            Py_DECREF(Py_None); /* the slot's */
            PyList_SET_ITEM(out, c, item);
        }
    }
done:
    Py_XDECREF(exact);
    Py_XDECREF(tolerance);
    release(&v);
    return out;
}

/* ---- the Markdown frames table (emit.md_frame_rows) ---------------------------------------- */

/* the document's keys this part reads, made (and interned) once when the module loads */
enum { K_WINDOWS, K_TITLE, K_PAGES, K_CLICKED, K_INTERRUPTIONS, K_KIND, K_COUNT, K_ENTITY, K_RESOLUTION, K_TARGET, K_APP, K_SECONDS, K_SITE, K_KEYS, K_CLICKS, K_TEXT, K_SCROLLS, K_COPIES, K_PASTES, K_ID, K_START, K_END, K_ACTIVE_MIN, K_INPUT_RECORDED, K_INPUT, K_TYPED_TEXT, N_KEYS };
static const char *KEY_NAMES[N_KEYS] = {"windows", "title", "pages", "clicked", "interruptions", "kind", "count", "entity", "resolution", "target", "app", "seconds", "site", "keys", "clicks", "text", "scrolls", "copies", "pastes", "id", "start", "end", "active_min", "input_recorded", "input", "typed_text"};
static PyObject *KEY[N_KEYS];

/* d.get(key): a borrowed reference, NULL when absent (or with an error set) */
static inline PyObject *get(PyObject *d, int key)
{
    return PyDict_GetItemWithError(d, KEY[key]);
}

typedef struct { /* text being built, as code points */
    Py_UCS4 *buf;
    Py_ssize_t len, cap;
} Text;

static int t_grow(Text *t, Py_ssize_t more)
{
    return grow_to((void **)&t->buf, &t->cap, t->len + more, sizeof(Py_UCS4), 256);
}

static inline int t_char(Text *t, Py_UCS4 c)
{
    if (t->len == t->cap && t_grow(t, 1) < 0)
        return -1;
    t->buf[t->len++] = c;
    return 0;
}

static int t_ascii(Text *t, const char *s)
{
    Py_ssize_t n = (Py_ssize_t)strlen(s);
    if (t_grow(t, n) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++)
        t->buf[t->len++] = (unsigned char)s[i];
    return 0;
}

/* emit._CONTROL: control characters and bidirectional controls, shown as spaces */
static inline int control(Py_UCS4 c)
{
    return c <= 0x1f || (c >= 0x7f && c <= 0x9f) || bidi(c);
}

enum { RAW, MD, CELL };

/* n code points of kind at d appended: as they are (RAW), as emit._md (MD: printable, '|'
 * escaped) or as emit._cell (CELL: printable, whitespace runs as one space, no space at either
 * end, '|' as '/'). */
static int t_map(Text *t, int kind, const void *d, Py_ssize_t n, int mode)
{
    if (t_grow(t, 2 * n) < 0)
        return -1;
    Py_ssize_t start = t->len;
    int gap = 0; /* CELL: a whitespace run is pending */
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, d, i);
        if (mode != RAW && control(c))
            c = ' ';
        if (mode == CELL) {
            if (Py_UNICODE_ISSPACE(c)) {
                gap = 1;
                continue;
            }
            if (gap && t->len > start)
                t->buf[t->len++] = ' ';
            gap = 0;
            t->buf[t->len++] = c == '|' ? '/' : c;
        } else if (mode == MD && c == '|') {
            t->buf[t->len++] = '\\';
            t->buf[t->len++] = '|';
        } else {
            t->buf[t->len++] = c;
        }
    }
    return 0;
}

/* str(obj) appended, mapped as t_map's mode says */
static int t_text(Text *t, PyObject *obj, int mode)
{
    PyObject *s = PyUnicode_CheckExact(obj) ? Py_NewRef(obj) : PyObject_Str(obj);
    if (s == NULL)
        return -1;
    int rc = t_map(t, PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s), mode);
    Py_DECREF(s);
    return rc;
}

/* format(obj, "") appended (what an f-string writes) */
static int t_format(Text *t, PyObject *obj)
{
    if (PyUnicode_CheckExact(obj))
        return t_text(t, obj, RAW);
    PyObject *s = PyObject_Format(obj, NULL);
    if (s == NULL)
        return -1;
    int rc = t_text(t, s, RAW);
    Py_DECREF(s);
    return rc;
}

/* emit._q: the CELL text of obj cut to limit code points ("..." as U+2026), '"' as "'", quoted */
static int t_quote(Text *t, PyObject *obj, Py_ssize_t limit)
{
    if (t_char(t, '"') < 0)
        return -1;
    Py_ssize_t start = t->len;
    if (t_text(t, obj, CELL) < 0)
        return -1;
    if (t->len - start > limit) {
        t->len = start + limit - 1;
        t->buf[t->len++] = 0x2026;
    }
    for (Py_ssize_t i = start; i < t->len; i++)
        if (t->buf[i] == '"')
            t->buf[i] = '\'';
    return t_char(t, '"');
}

/* d[key], KeyError (then Python raises it) as Unsupported; a borrowed reference */
static PyObject *item(PyObject *d, int key)
{
    if (!PyDict_CheckExact(d)) {
        PyErr_SetString(Unsupported, "a frame part that is not a dict");
        return NULL;
    }
    PyObject *v = get(d, key);
    if (v == NULL && !PyErr_Occurred())
        PyErr_Format(Unsupported, "no %s", KEY_NAMES[key]);
    return v;
}

/* _GENERIC_TARGET's words; "static ?text" and "list ?item" as both spellings */
static const char *GENERIC[] = {"paragraph", "group", "text", "static text", "statictext", "cell", "row", "column",
                                "item", "list item", "listitem", "button", "link", "image", "region", "section",
                                "div", "span", "element", "node", "pane", "window", "label", "field", "frame", NULL};

/* emit._GENERIC_TARGET.match(text.strip()) for ASCII text: a word, whitespace, '#' or not,
 * digits, and nothing more (case ignored) */
static int generic_ascii(const Py_UCS1 *s, Py_ssize_t n)
{
    Py_ssize_t a = 0, b = n;
    while (a < b && Py_UNICODE_ISSPACE(s[a]))
        a++;
    while (b > a && Py_UNICODE_ISSPACE(s[b - 1]))
        b--;
    for (const char **w = GENERIC; *w != NULL; w++) {
        Py_ssize_t len = (Py_ssize_t)strlen(*w), i = a;
        if (b - a < len)
            continue;
        Py_ssize_t j = 0;
        while (j < len && (s[i + j] | 0x20) == (unsigned char)(*w)[j] && ((*w)[j] != ' ' || s[i + j] == ' '))
            j++;
        if (j < len)
            continue;
        i += len;
        while (i < b && Py_UNICODE_ISSPACE(s[i]))
            i++;
        if (i < b && s[i] == '#')
            i++;
        while (i < b && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == b)
            return 1;
    }
    return 0;
}

/* emit._telling(click): 1, 0, or -1 with an error; ``telling`` answers what C does not */
static int is_telling(PyObject *click, PyObject *telling)
{
    if (PyDict_CheckExact(click)) {
        PyObject *res = get(click, K_RESOLUTION);
        PyObject *target = get(click, K_TARGET);
        if (res != NULL && PyUnicode_CheckExact(res) && target != NULL && PyUnicode_CheckExact(target)
            && PyUnicode_IS_ASCII(target)) {
            if (PyUnicode_CompareWithASCIIString(res, "zone") == 0)
                return 0;
            return !generic_ascii(PyUnicode_1BYTE_DATA(target), PyUnicode_GET_LENGTH(target));
        }
    }
    PyObject *got = PyObject_CallOneArg(telling, click);
    if (got == NULL)
        return -1;
    int truth = PyObject_IsTrue(got);
    Py_DECREF(got);
    return truth;
}

/* emit._detail(f, max_pages) appended */
static int t_detail(Text *t, PyObject *f, Py_ssize_t max_pages, PyObject *telling)
{
    int parts = 0;
#define PART() (parts++ ? t_ascii(t, "; ") : 0)
    PyObject *windows = get(f, K_WINDOWS);
    if (windows != NULL && PyObject_IsTrue(windows)) {
        if (!PyList_CheckExact(windows) || !PyDict_CheckExact(PyList_GET_ITEM(windows, 0))) {
            PyErr_SetString(Unsupported, "windows that are not a list of dicts");
            return -1;
        }
        PyObject *title = get(PyList_GET_ITEM(windows, 0), K_TITLE);
        if (title != NULL && PyObject_IsTrue(title) && (PART() < 0 || t_quote(t, title, 60) < 0))
            return -1;
    }
    PyObject *lists[3] = {get(f, K_PAGES), get(f, K_CLICKED),
                          get(f, K_INTERRUPTIONS)};
    for (int l = 0; l < 3; l++) {
        if (lists[l] != NULL && !PyList_CheckExact(lists[l])) {
            PyErr_SetString(Unsupported, "pages, clicks or interruptions that are not a list");
            return -1;
        }
    }
    PyObject *one = PyLong_FromLong(1);
    if (one == NULL)
        return -1;
    int rc = 0;
    Py_ssize_t n = lists[0] ? PyList_GET_SIZE(lists[0]) : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < n && i < max_pages; i++) {
        PyObject *pg = PyList_GET_ITEM(lists[0], i), *kind = item(pg, K_KIND), *count = kind ? item(pg, K_COUNT) : NULL;
        if (count == NULL) {
            rc = -1;
            break;
        }
        PyObject *entity = get(pg, K_ENTITY);
        int more = PyObject_RichCompareBool(count, one, Py_GT);
        rc = more < 0 ? -1 : PART();
        if (rc == 0)
            rc = t_format(t, kind);
        if (rc == 0 && entity != NULL)
            rc = t_char(t, ' ') < 0 ? -1 : t_quote(t, entity, 40);
        if (rc == 0 && more)
            rc = t_ascii(t, " x") < 0 ? -1 : t_format(t, count);
    }
    n = lists[1] ? PyList_GET_SIZE(lists[1]) : 0;
    for (Py_ssize_t i = 0, shown = 0; rc == 0 && i < n && shown < 3; i++) {
        PyObject *c = PyList_GET_ITEM(lists[1], i);
        int tell = is_telling(c, telling);
        if (tell <= 0) {
            rc = tell;
            continue;
        }
        shown++;
        PyObject *target = item(c, K_TARGET), *res = target ? item(c, K_RESOLUTION) : NULL;
        PyObject *count = res ? item(c, K_COUNT) : NULL;
        if (count == NULL || PART() < 0 || t_ascii(t, "click ") < 0 || t_quote(t, target, 40) < 0 || t_char(t, ' ') < 0
            || t_format(t, res) < 0 || t_ascii(t, " x") < 0 || t_format(t, count) < 0)
            rc = -1;
    }
    n = lists[2] ? PyList_GET_SIZE(lists[2]) : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < n && i < 3; i++) {
        PyObject *it = PyList_GET_ITEM(lists[2], i), *app = item(it, K_APP), *secs = app ? item(it, K_SECONDS) : NULL;
        PyObject *site = secs ? get(it, K_SITE) : NULL;
        if (secs == NULL || PART() < 0 || t_ascii(t, "interrupted ") < 0 || t_quote(t, app, 40) < 0
            || (site != NULL && (t_ascii(t, " (") < 0 || t_format(t, site) < 0 || t_char(t, ')') < 0))
            || t_char(t, ' ') < 0 || t_format(t, secs) < 0 || t_char(t, 's') < 0)
            rc = -1;
    }
#undef PART
    Py_DECREF(one);
    return rc;
}

/* emit._vol(v) appended */
static int t_vol(Text *t, PyObject *v)
{
    PyObject *keys = item(v, K_KEYS), *clicks = keys ? item(v, K_CLICKS) : NULL;
    if (clicks == NULL || t_format(t, keys) < 0 || t_ascii(t, " keys, ") < 0 || t_format(t, clicks) < 0
        || t_ascii(t, " clicks") < 0)
        return -1;
    static const int more[] = {K_TEXT, K_SCROLLS, K_COPIES, K_PASTES};
    for (int k = 0; k < 4; k++) {
        PyObject *x = get(v, more[k]);
        int truth = x == NULL ? (PyErr_Occurred() ? -1 : 0) : PyObject_IsTrue(x);
        if (truth < 0 || (truth && (t_ascii(t, ", ") < 0 || t_format(t, x) < 0 || t_char(t, ' ') < 0
                                    || t_ascii(t, KEY_NAMES[more[k]]) < 0)))
            return -1;
    }
    return 0;
}

static PyObject *t_take(Text *t)
{
    PyObject *s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, t->buf, t->len);
    t->len = 0;
    return s;
}

/* emit.md_frame_rows(frames, typed): the rows of to_markdown's frames table. ``telling`` is
 * emit._telling, for the click targets this does not judge itself (not ASCII). */
static PyObject *md_frames(PyObject *self, PyObject *args)
{
    PyObject *frames, *telling;
    int typed;
    if (!PyArg_ParseTuple(args, "O!pO", &PyList_Type, &frames, &typed, &telling))
        return NULL;
    PyObject *out = PyList_New(0), *empty = PyUnicode_FromString("");
    Text t = {NULL, 0, 0}, detail = {NULL, 0, 0};
    int rc = out == NULL || empty == NULL ? -1 : 0;
    for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(frames); i++) {
        PyObject *f = PyList_GET_ITEM(frames, i);
        PyObject *id = item(f, K_ID), *start = id ? item(f, K_START) : NULL, *end = start ? item(f, K_END) : NULL;
        PyObject *app = end ? item(f, K_APP) : NULL, *active = app ? item(f, K_ACTIVE_MIN) : NULL;
        if (active == NULL) {
            rc = -1;
            break;
        }
        PyObject *site = get(f, K_SITE);
        PyObject *recorded = get(f, K_INPUT_RECORDED);
        double minutes;
        if (PyFloat_CheckExact(active)) {
            minutes = PyFloat_AS_DOUBLE(active);
        } else {
            PyErr_SetString(Unsupported, "active minutes that are not a float");
            rc = -1;
            break;
        }
        char *fixed = PyOS_double_to_string(minutes, 'f', 2, 0, NULL);
        if (fixed == NULL) {
            rc = -1;
            break;
        }
        rc = (t_ascii(&t, "| ") < 0 || t_format(&t, id) < 0 || t_ascii(&t, " | ") < 0 || t_format(&t, start) < 0
              || t_char(&t, '-') < 0 || t_format(&t, end) < 0 || t_ascii(&t, " | ") < 0 || t_text(&t, app, MD) < 0
              || t_ascii(&t, " | ") < 0 || t_text(&t, site != NULL ? site : empty, MD) < 0 || t_ascii(&t, " | ") < 0
              || t_ascii(&t, fixed) < 0 || t_ascii(&t, " | ") < 0) ? -1 : 0;
        PyMem_Free(fixed);
        if (rc == 0 && recorded == Py_False) {
            rc = t_ascii(&t, "input not recorded by this source"); /* emit.NO_INPUT */
        } else if (rc == 0) {
            PyObject *input = item(f, K_INPUT);
            rc = input == NULL ? -1 : t_vol(&t, input);
        }
        if (rc == 0)
            rc = t_ascii(&t, " | ");
        if (rc == 0) { /* _md(_detail(f, 8)) */
            rc = t_detail(&detail, f, 8, telling) < 0 ? -1 : t_map(&t, PyUnicode_4BYTE_KIND, detail.buf, detail.len, MD);
            detail.len = 0;
        }
        if (rc == 0)
            rc = t_ascii(&t, " |");
        PyObject *row = rc == 0 ? t_take(&t) : NULL;
        if (row == NULL || PyList_Append(out, row) < 0)
            rc = -1;
        Py_XDECREF(row);
        PyObject *text = rc == 0 && typed ? get(f, K_TYPED_TEXT) : NULL;
        int truth = text == NULL ? 0 : PyObject_IsTrue(text);
        if (truth < 0) {
            rc = -1;
        } else if (truth) {
            row = t_ascii(&t, "| | | | | | typed | ") < 0 || t_text(&t, text, MD) < 0 || t_ascii(&t, " |") < 0 ? NULL : t_take(&t);
            if (row == NULL || PyList_Append(out, row) < 0)
                rc = -1;
            Py_XDECREF(row);
        }
    }
    PyMem_Free(t.buf);
    PyMem_Free(detail.buf);
    Py_XDECREF(empty);
    if (rc < 0) {
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

/* ---- evidence ids (document.id_runs_by_group) ----------------------------------------------- */

static int by_value(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* document.id_runs of each group's ids: ids a list of ints, groups lists of places in it (none
 * empty); "1-3,7,9-10" per group, sorted distinct ids, a run "a-b" when every id from a to b is
 * there. Unsupported for an id or place that is not an int64. */
static PyObject *id_runs(PyObject *self, PyObject *args)
{
    PyObject *ids, *groups;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &ids, &PyList_Type, &groups))
        return NULL;
    Py_ssize_t n_ids = PyList_GET_SIZE(ids), n = PyList_GET_SIZE(groups), cap = 0;
    long long *vals = NULL;
    char *text = NULL;
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t g = 0; g < n; g++) {
        PyObject *group = PyList_GET_ITEM(groups, g);
        if (!PyList_CheckExact(group) || PyList_GET_SIZE(group) == 0) {
            PyErr_SetString(Unsupported, "a group that is not a list of places");
            goto fail;
        }
        Py_ssize_t m = PyList_GET_SIZE(group);
        if (m > cap) {
            cap = m * 2;
            long long *v = PyMem_Realloc(vals, (size_t)cap * sizeof(long long));
            char *t = v ? PyMem_Realloc(text, (size_t)cap * 42) : NULL; /* two 20-digit numbers, '-' and ',' */
            if (v != NULL)
                vals = v;
            if (t == NULL) {
                PyErr_NoMemory();
                goto fail;
            }
            text = t;
        }
        for (Py_ssize_t i = 0; i < m; i++) {
            PyObject *place = PyList_GET_ITEM(group, i), *id;
            Py_ssize_t at = PyLong_CheckExact(place) ? PyLong_AsSsize_t(place) : -1;
            if (at < 0 || at >= n_ids || !PyLong_CheckExact(id = PyList_GET_ITEM(ids, at))) {
                PyErr_Clear();
                PyErr_SetString(Unsupported, "a place or id that is not an int in range");
                goto fail;
            }
            int overflow;
            vals[i] = PyLong_AsLongLongAndOverflow(id, &overflow);
            if (overflow || (vals[i] == -1 && PyErr_Occurred()) || vals[i] < 0 || vals[i] >= (1LL << 62)) {
                PyErr_Clear();
                PyErr_SetString(Unsupported, "an id past int64");
                goto fail;
            }
        }
        qsort(vals, (size_t)m, sizeof(long long), by_value);
        Py_ssize_t len = 0;
        for (Py_ssize_t i = 0; i < m;) {
            long long start = vals[i], prev = start;
            for (i++; i < m && vals[i] <= prev + 1; i++) /* the run, repeated ids included */
                prev = vals[i];
            len += prev > start ? sprintf(text + len, len ? ",%lld-%lld" : "%lld-%lld", start, prev)
                                : sprintf(text + len, len ? ",%lld" : "%lld", start);
        }
        PyObject *runs = PyUnicode_DecodeASCII(text, len, NULL);
        if (runs == NULL)
            goto fail;
        PyList_SET_ITEM(out, g, runs);
    }
    PyMem_Free(vals);
    PyMem_Free(text);
    return out;
fail:
    PyMem_Free(vals);
    PyMem_Free(text);
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"dump", dump, METH_O, "The YAML text of a document (emit.to_yaml's), or Unsupported."},
    {"ref_ids", ref_ids, METH_O, "document.common_ref_ids of a list of str, or Unsupported."},
    {"tiny_number", tiny_number, METH_O, "emit._tiny_number of bytes, or Unsupported."},
    {"attribute", attribute, METH_VARARGS, "SnapIndex.attribute_codes's search, into pos and dist, or Unsupported."},
    {"ring", ring, METH_VARARGS, "enrich._ring_pairs's search: (owner, elem) as bytes of int64s, or Unsupported."},
    {"rank", rank, METH_VARARGS, "resolve_in_columns's ranking of each click's pairs, or Unsupported."},
    {"md_frames", md_frames, METH_VARARGS, "emit.md_frame_rows(frames, typed) given emit._telling, or Unsupported."},
    {"id_runs", id_runs, METH_VARARGS, "document.id_runs_by_group of a list of ids, or Unsupported."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", "hot compiler steps in C (see _speedups.c)", -1, methods};

PyMODINIT_FUNC PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    for (int k = 0; k < N_KEYS; k++) {
        KEY[k] = PyUnicode_InternFromString(KEY_NAMES[k]);
        if (KEY[k] == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    Unsupported = PyErr_NewException("af_pipeline.compiler._speedups.Unsupported", PyExc_TypeError, NULL);
    if (Unsupported == NULL || PyModule_AddObjectRef(m, "Unsupported", Unsupported) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
