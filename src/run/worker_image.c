/* worker_image — building the worker image from installed files; see worker_image.h.
 *
 * The build context is a tar written to a temporary file and posted to the Engine's /build:
 * a two-line Dockerfile (FROM the base, COPY root/ /) and root/ holding the worker, its
 * libraries and Python's standard library at their real paths (directory symlinks such as
 * Debian's /lib -> usr/lib resolved, so COPY never replaces one with a directory). The tag
 * carries the worker binary's identity (inode, size, mtime): a reinstall builds anew. */
#include "worker_image.h"
#include "docker_engine.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define WKI_BASE     "debian:bookworm-slim"
#define WKI_MAX_LIBS 512

struct libset {
    char *path[WKI_MAX_LIBS];
    int n;
};

/* ---- a ustar writer ------------------------------------------------------------------ */

static void oct(char *dst, size_t width, unsigned long long v)
{
    snprintf(dst, width, "%0*llo", (int)width - 1, v);
}

static int tar_header(FILE *t, const char *name, unsigned mode, unsigned long long size)
{
    unsigned char h[512] = {0};
    size_t len = strlen(name);
    const char *base = name;
    if (len > 99) { /* split at a '/' into prefix (155) and name (100) */
        const char *cut = name + len - 99;
        while (*cut && *cut != '/')
            cut++;
        if (!*cut || cut - name > 154)
            return -1;
        memcpy(h + 345, name, (size_t)(cut - name));
        base = cut + 1;
    }
    memcpy(h, base, strlen(base));
    oct((char *)h + 100, 8, mode);
    oct((char *)h + 108, 8, 0);
    oct((char *)h + 116, 8, 0);
    oct((char *)h + 124, 12, size);
    oct((char *)h + 136, 12, 0);
    h[156] = '0';
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    return fwrite(h, 1, 512, t) == 512 ? 0 : -1;
}

static int tar_pad(FILE *t, unsigned long long size)
{
    static const char zero[512];
    size_t pad = (512 - size % 512) % 512;
    return fwrite(zero, 1, pad, t) == pad ? 0 : -1;
}

static int tar_data(FILE *t, const char *name, const char *data, size_t len)
{
    if (tar_header(t, name, 0644, len) < 0 || fwrite(data, 1, len, t) != len)
        return -1;
    return tar_pad(t, len);
}

/* Adds the file at src (symlinks followed) as root/<dst>. */
static int tar_file(FILE *t, const char *src, const char *dst)
{
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return fd < 0 && errno == EACCES ? 0 : -1;
    }
    char name[PATH_MAX + 8];
    snprintf(name, sizeof(name), "root%s", dst);
    int rc = tar_header(t, name, st.st_mode & 0755, (unsigned long long)st.st_size);
    char buf[65536];
    unsigned long long left = (unsigned long long)st.st_size;
    while (rc == 0 && left > 0) {
        ssize_t n = read(fd, buf, left < sizeof(buf) ? left : sizeof(buf));
        if (n <= 0 || fwrite(buf, 1, (size_t)n, t) != (size_t)n)
            rc = -1;
        else
            left -= (unsigned long long)n;
    }
    close(fd);
    return rc < 0 ? -1 : tar_pad(t, (unsigned long long)st.st_size);
}

/* ---- the libraries a binary loads ---------------------------------------------------- */

/* The ELF interpreter (PT_INTERP) of a 64-bit binary, or -1. */
static int elf_interp(const char *bin, char *out, size_t out_len)
{
    int fd = open(bin, O_RDONLY | O_CLOEXEC), rc = -1;
    Elf64_Ehdr eh;
    if (fd < 0)
        return -1;
    if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, 4) ||
        eh.e_ident[EI_CLASS] != ELFCLASS64)
        goto done;
    for (int i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + (Elf64_Off)i * eh.e_phentsize)) !=
            (ssize_t)sizeof(ph))
            goto done;
        if (ph.p_type == PT_INTERP && ph.p_filesz > 1 && ph.p_filesz < out_len) {
            if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
                goto done;
            out[ph.p_filesz - 1] = '\0';
            rc = 0;
            break;
        }
    }
done:
    close(fd);
    return rc;
}

static void libset_add(struct libset *s, const char *path)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->path[i], path) == 0)
            return;
    if (s->n < WKI_MAX_LIBS)
        s->path[s->n++] = strdup(path);
}

/* Adds what `interp --list file` names (as ldd does). 0 / -1. */
static int list_libs(const char *interp, const char *file, struct libset *s)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[1], 1);
    char *argv[] = {(char *)interp, "--list", (char *)file, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, interp, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc != 0) {
        close(p[0]);
        return -1;
    }
    FILE *f = fdopen(p[0], "r");
    char line[PATH_MAX + 64];
    while (f && fgets(line, sizeof(line), f)) {
        char *path = strstr(line, "=> ");
        path = path ? path + 3 : line + strspn(line, " \t");
        if (*path != '/')
            continue;
        path[strcspn(path, " \n")] = '\0';
        libset_add(s, path);
    }
    if (f)
        fclose(f);
    else
        close(p[0]);
    int st;
    waitpid(pid, &st, 0);
    return 0;
}

/* The path of lib with its directory resolved and its own name kept (a soname). */
static int real_dir_path(const char *lib, char *out, size_t out_len)
{
    char dir[PATH_MAX], copy[PATH_MAX], rdir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", lib);
    snprintf(copy, sizeof(copy), "%s", lib);
    if (!realpath(dirname(dir), rdir))
        return -1;
    snprintf(out, out_len, "%s/%s", rdir, basename(copy));
    return 0;
}

/* ---- Python's standard library ------------------------------------------------------- */

static FILE *walk_tar;
static const char *walk_interp;
static struct libset *walk_libs;
static int walk_failed;

static int on_stdlib_file(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag != FTW_F && flag != FTW_SL)
        return 0;
    if (tar_file(walk_tar, path, path) < 0) {
        struct stat s2;
        if (stat(path, &s2) == 0 && S_ISREG(s2.st_mode))
            walk_failed = 1; /* a dangling link or a special file is left out */
        return 0;
    }
    size_t n = strlen(path);
    if (n > 3 && strcmp(path + n - 3, ".so") == 0)
        list_libs(walk_interp, path, walk_libs);
    return 0;
}

/* The stdlib directory libpython's soname implies (/usr/lib/python3.X). */
static int stdlib_dir(const struct libset *s, char *out, size_t out_len)
{
    for (int i = 0; i < s->n; i++) {
        const char *b = strrchr(s->path[i], '/');
        const char *v = b ? strstr(b, "libpython3.") : NULL;
        if (!v)
            continue;
        int minor = atoi(v + strlen("libpython3."));
        snprintf(out, out_len, "/usr/lib/python3.%d", minor);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    return -1;
}

/* ---- the build --------------------------------------------------------------------------- */

static int write_context(FILE *t, const char *bin, char *err, size_t err_len)
{
    char interp[PATH_MAX], pydir[PATH_MAX];
    struct libset libs = {.n = 0};
    int rc = -1;
    if (elf_interp(bin, interp, sizeof(interp)) < 0) {
        snprintf(err, err_len, "%s is not a dynamically linked 64-bit ELF binary", bin);
        goto done;
    }
    if (list_libs(interp, bin, &libs) < 0 || stdlib_dir(&libs, pydir, sizeof(pydir)) < 0) {
        snprintf(err, err_len, "cannot list the libraries of %s, or find its Python library", bin);
        goto done;
    }
    static const char dockerfile[] = "FROM " WKI_BASE "\nCOPY root/ /\n";
    walk_tar = t;
    walk_interp = interp;
    walk_libs = &libs;
    walk_failed = 0;
    if (tar_data(t, "Dockerfile", dockerfile, sizeof(dockerfile) - 1) < 0 ||
        tar_file(t, bin, WKI_WORKER_PATH) < 0 || nftw(pydir, on_stdlib_file, 32, FTW_PHYS) < 0 ||
        walk_failed) {
        snprintf(err, err_len, "cannot write the image's build context: %s", strerror(errno));
        goto done;
    }
    for (int i = 0; i < libs.n; i++) {
        char dst[PATH_MAX + 8];
        if (real_dir_path(libs.path[i], dst, sizeof(dst)) < 0 ||
            tar_file(t, libs.path[i], dst) < 0) {
            snprintf(err, err_len, "cannot add %s to the image", libs.path[i]);
            goto done;
        }
    }
    static const char end[1024];
    rc = fwrite(end, 1, sizeof(end), t) == sizeof(end) ? 0 : -1;
done:
    for (int i = 0; i < libs.n; i++)
        free(libs.path[i]);
    return rc;
}

/* The build's answer is a stream of JSON lines; an "error" line means it failed. */
static int build_failed(const char *body, char *err, size_t err_len)
{
    const char *e = body ? strstr(body, "\"error\"") : NULL;
    if (!e)
        return 0;
    const char *line = e;
    while (line > body && line[-1] != '\n')
        line--;
    json_t *j = json_loadb(line, strcspn(line, "\r\n"), 0, NULL);
    const char *msg = json_string_value(json_object_get(j, "error"));
    snprintf(err, err_len, "the worker image build failed: %s", msg ? msg : "(no message)");
    json_decref(j);
    return 1;
}

static int image_exists(const char *image, char *err, size_t err_len)
{
    char path[600];
    struct dk_reply r;
    snprintf(path, sizeof(path), "/images/%s/json", image);
    if (dk_call("GET", path, NULL, NULL, 0, 10000, &r) < 0) {
        snprintf(err, err_len, "cannot reach the Docker daemon: %s", r.err);
        dk_reply_free(&r);
        return -1;
    }
    dk_reply_free(&r);
    return r.status == 200;
}

static int build(const char *bin, const char *image, char *err, size_t err_len)
{
    FILE *t = tmpfile();
    int rc = -1;
    if (!t) {
        snprintf(err, err_len, "cannot make a temporary file: %s", strerror(errno));
        return -1;
    }
    if (write_context(t, bin, err, err_len) < 0 || fflush(t) != 0)
        goto done;
    long len = ftell(t);
    rewind(t);
    char path[700];
    snprintf(path, sizeof(path), "/build?t=%s&rm=1&forcerm=1&pull=0&networkmode=none", image);
    struct dk_reply r;
    if (dk_call("POST", path, NULL, t, len, 600000, &r) < 0)
        snprintf(err, err_len, "the worker image build failed: %s", r.err);
    else if (r.status != 200)
        snprintf(err, err_len, "the worker image build failed (HTTP %ld): %.300s", r.status,
                 r.body.data ? r.body.data : "");
    else if (!build_failed(r.body.data, err, err_len))
        rc = 0;
    dk_reply_free(&r);
done:
    fclose(t);
    return rc;
}

int wki_ensure(const char *named, const char *worker_bin, char *image, size_t image_len, char *err,
               size_t err_len)
{
    if (named && *named) {
        snprintf(image, image_len, "%s", named);
        int e = image_exists(image, err, err_len);
        if (e == 0)
            snprintf(err, err_len, "CODEMCP_DOCKER_IMAGE=%s: no such image in the Docker daemon",
                     named);
        return e == 1 ? 0 : -1;
    }
    struct stat st;
    if (stat(worker_bin, &st) < 0) {
        snprintf(err, err_len, "%s: %s", worker_bin, strerror(errno));
        return -1;
    }
    snprintf(image, image_len, "codemcp-worker:%lx-%lx-%lx", (unsigned long)st.st_ino,
             (unsigned long)st.st_size, (unsigned long)st.st_mtime);
    int e = image_exists(image, err, err_len);
    if (e != 0)
        return e == 1 ? 0 : -1;
    int e2 = image_exists(WKI_BASE, err, err_len);
    if (e2 <= 0) {
        if (e2 == 0)
            snprintf(err, err_len,
                     "the worker image is built from %s, which the Docker daemon does not "
                     "have: make it (contrib/docker/make-base.sh) or set CODEMCP_DOCKER_IMAGE",
                     WKI_BASE);
        return -1;
    }
    return build(worker_bin, image, err, err_len);
}
