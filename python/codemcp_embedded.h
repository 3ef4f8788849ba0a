/*
 * codemcp_embedded.h — the Python runtime (package codemcp_rt) compiled into
 * codemcp-worker as source strings and as marshalled code objects.
 *
 * The table is generated at build time by python/embed.py from the .py files in python/codemcp_rt/
 * (meson: python_embedded_src, python_embedded_inc). The worker host serves it to
 * CPython through a meta-path importer; nothing here touches Python itself.
 */
#ifndef CODEMCP_EMBEDDED_H
#define CODEMCP_EMBEDDED_H

/* One module of the runtime. All strings are static and NUL-terminated. */
struct codemcp_embedded_module {
    const char *name;          /* dotted module name: "codemcp_rt", "codemcp_rt.errors" */
    const char *source;        /* the module's UTF-8 Python source */
    int is_package;            /* 1 for a package (__init__.py), else 0 */
    const unsigned char *code; /* marshal.dumps of its code object (codemcp_embedded_magic) */
    unsigned long code_len;
};

/* importlib.util.MAGIC_NUMBER of the Python that compiled the code objects. */
extern const unsigned char codemcp_embedded_magic[4];

/* Sorted by name; ends with an all-NULL entry. */
extern const struct codemcp_embedded_module codemcp_embedded_modules[];

#endif /* CODEMCP_EMBEDDED_H */
