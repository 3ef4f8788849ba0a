/* pyreq — the gateway's usual `run` request read straight from its text, in C.
 *
 * pyrun.c asks it first for every request: it walks the frame's members (jsonrpc, id, method,
 * params and the params the gateway writes, src/run/run_params.c) and builds only the few Python
 * objects a plain run needs (code, run_id, namespace, allow_mutations) instead of the whole
 * params dict. It takes a strict subset of what pyrun's plain-run rules accept: any member it
 * does not know, a duplicate, a value of another type or form (null where a flag is expected,
 * a float, a non-empty drop/disabled/unavailable list, an escaped method name, a jsonrpc other
 * than "2.0", ...) and it
 * says no, and the request goes whole to the Python handler, which answers it as it answers
 * every request. Its strings and integers are read with pyjson.c's rules, so the params dict
 * loads_fast builds later from the same text (pyq_params) holds the same values.
 * Pure function of its argument: no I/O, no state; GIL held. */
#ifndef CODEMCP_PYREQ_H
#define CODEMCP_PYREQ_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

struct pyq_run {
    long long id;
    PyObject *code, *run_id, *session; /* new refs (exact str); session non-empty */
    PyObject *allow;                   /* new ref: None, or a list of str */
    int validate, dry, reset, fresh;   /* 0/1, defaults as runner.py reads them */
    Py_ssize_t max_output, max_result; /* 1 MiB when absent or null */
};

/* 1: text is a plain run request, q filled in (release it with pyq_release); 0: not one (q
 * holds nothing, no exception set). enforce_mutations true is "not one". */
int pyq_scan_run(PyObject *text /* borrowed str */, struct pyq_run *q);
void pyq_release(struct pyq_run *q);

/* scan_run(text: str) -> dict | None: what pyq_scan_run reads from a frame (None: not a plain
 * run), for tests that hold it against the plain-run rules applied to json.loads' dict. */
PyObject *pyq_scan_run_py(PyObject *self, PyObject *text);
extern const char pyq_scan_run_doc[];

/* The request's params as a dict (new ref), for the runtime's Python steps that read them;
 * NULL with an exception when the text does not hold them. */
PyObject *pyq_params(PyObject *text /* borrowed str */);

#endif
