/* pyjson — the gateway's requests (compact JSON text) to Python objects in C, exposed as
 * `_codemcp.loads_fast` (pymod.c lists it); python/codemcp_rt/client.py's _parse calls it
 * first. Pure function of its argument: no I/O, no state.
 *
 * It answers only the common case: objects, arrays, strings (escapes included, no lone
 * surrogate), integers that fit 64 bits, reals (float() of their text, as json.loads),
 * true/false/null, at most 64 levels deep. Anything else (a longer integer, a lone surrogate,
 * a control character in a string, bad syntax, trailing data) returns Ellipsis, and the caller
 * takes json.loads, which gives the same value or the exact error it always gave. Measured
 * (callgrind, worker, empty program): the run request through the _json scanner ~25k instructions;
 * here a few thousand. */
#ifndef CODEMCP_PYJSON_H
#define CODEMCP_PYJSON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A cursor over UTF-8 JSON text, for a reader that walks a known shape itself (pyreq.c) with
 * the same rules as loads_fast: what these accept, loads_fast accepts, with the same value. */
struct pyj {
    const char *p, *end;
    char *buf; /* scratch for strings with escapes (PyMem_Free it when done) */
    size_t cap;
    PyObject *memo; /* object keys of this parse the key table does not keep (Py_XDECREF it) */
};
/* Skips JSON whitespace. */
void pyj_ws(struct pyj *j);
/* At the opening quote: the string (new ref), the cursor past it; NULL when loads_fast would
 * not take it (an exception may be set: the caller clears it). */
PyObject *pyj_str(struct pyj *j);
/* An integer loads_fast takes (at most 18 digits, no fraction or exponent): 0 with *out and
 * the cursor past it, or -1 (cursor unmoved). */
int pyj_ll(struct pyj *j, long long *out);

/* The text of a JSON string whose bytes, escapes included, are s[0..n) in UTF-8 between its
 * quotes (s[-1] and s[n] are quotes), read without making a str of the whole reply: 1 with
 * *value (as_json, and loads_fast takes the text: parsed with the cyclic GC paused), 0 with
 * *text (a new str of it, invalid UTF-8 replaced as the worker decodes a frame), -1 when it is
 * not one such string (an unescaped quote before s[n], a lone surrogate), -2 with an exception
 * (no memory). release(ud), when given, is called once the text has been copied out of s (s is
 * not read after it; it is not called when the text has no escape). New references. */
int pyj_text_value(const char *s, size_t n, int as_json, void (*release)(void *), void *ud,
                   PyObject **value, PyObject **text);

/* loads_fast(text: str) -> object | Ellipsis */
PyObject *pyj_loads_fast(PyObject *self, PyObject *text);
extern const char pyj_loads_fast_doc[];

#endif
