/* pyfast — C shortcuts for the SDK call path of python/codemcp_rt/client.py, exposed in
 * `_codemcp` (pymod.c lists them). Pure functions of their arguments: no I/O, no state.
 *
 * Each one answers only the common case and returns None for anything else, so the Python
 * code that called it takes its general path and the wire carries the same bytes either way
 * (client.py keeps a Python twin of each, and tests/e2e/percall.test.mjs compares the two inside
 * a real worker on a corpus). Measured (callgrind, python/ call path with a fake transport):
 * the arguments' JSON plus the frame cost ~13k instructions in Python, the usual text reply
 * ~14k; these do each in ~1-2k. */
#ifndef CODEMCP_PYFAST_H
#define CODEMCP_PYFAST_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* call_frame(call_id: str, run_id_json: str, fragment: str, args: dict, timeout_ms: int|None)
 *   -> str | None: the call_tool frame client.call() sends, when every key of args is a str
 * and every value a str, bool, None, finite float or an int that fits 64 bits. */
PyObject *pyf_call_frame(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char pyf_call_frame_doc[];

/* call_frame for the C call path (args: its five arguments), noting on the same walk over the
 * arguments argguard's certain-fit test: *sure = 1 when `certain` (argguard.certain_types: key
 * -> frozenset of types) is a dict and every value's exact type is in its key's set (a key
 * not in it is the signature's business), or when there is no argument; else 0 (argguard's
 * check() must look). NULL with an exception only when a lookup in `certain` raised. */
PyObject *pyf_call_frame_certain(PyObject *const *args, PyObject *certain, int *sure);

/* text_result(raw: str, call_id: str) -> str | None: the text of a reply that is exactly
 * {"jsonrpc":"2.0","id":"<call_id>","result":{"content":[{"type":"text","text":"<text>"}]}}
 * with no escape in <text> (the gateway's compact form of the usual one-text-block result). */
PyObject *pyf_text_result(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
extern const char pyf_text_result_doc[];

/* For the C call path: 1 when the reply's UTF-8 bytes start and end as the reply text_result
 * reads (for the call id's bytes), with what lies between, <text> still escaped, in *text
 * (n bytes, borrowed from raw); else 0. Not checked here (one pass fewer over a big text):
 * that <text> is one JSON string ending at text[n] (pyj_text_value refuses it otherwise). */
int pyf_text_span_bytes(const char *raw, size_t len, const char *id, size_t idlen,
                        const char **text, size_t *n);

/* The JSON of a str, bool, None, finite float or 64-bit int exactly as jsonsafe's encoder
 * writes it (ensure_ascii off), when it is at most `limit` UTF-8 bytes (0: no limit): a new
 * str. NULL, with no exception set, for any other value (the caller takes Python's way). */
PyObject *pyf_scalar_json(PyObject *v /* borrowed */, size_t limit);

#endif
