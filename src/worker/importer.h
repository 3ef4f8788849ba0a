/* importer — loads the codemcp_rt package from Python sources compiled into the binary.
 *
 * python/embed.py turns the python/codemcp_rt sources into a C table at build time; this module
 * looks names up in it and installs a small meta-path finder (Python source kept below in
 * importer.c) so `import codemcp_rt.worker_main` needs no file on disk. With
 * CODEMCP_PYTHONPATH_DEV=dir[:dir...] those directories go first on sys.path and the
 * embedded table becomes a fallback (development only). */
#ifndef CODEMCP_IMPORTER_H
#define CODEMCP_IMPORTER_H

#include <stddef.h>

/* Looks up a module of the embedded table. Returns 0 and sets *source (static storage) and
 * *is_package, or -1 if the name is not embedded. Thread-safe (read-only data). */
int imp_lookup(const char *name, const char **source, int *is_package);

/* The module's code object as marshal bytes (static storage), or -1: not embedded, or
 * compiled by a Python whose magic number is not this interpreter's (compile the source). */
int imp_code(const char *name, const unsigned char **code, size_t *len);

/* Number of embedded modules (0 when the build had no python/ runtime). */
int imp_count(void);

/* Installs the finder into the running interpreter (GIL held). dev_path is
 * CODEMCP_PYTHONPATH_DEV or NULL. 0, or -1 with a Python exception set. */
int imp_install(const char *dev_path);

#endif
