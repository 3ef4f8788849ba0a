/* worker_image — the container image Docker-isolated workers run (worker_docker.c): the one
 * CODEMCP_DOCKER_IMAGE names, or one built on first use from what is installed here, with
 * no registry: the local base image plus the installed codemcp-worker, the shared libraries
 * it and Python's extension modules load (as the dynamic loader lists them) and Python's
 * standard library, all under the image's read-only root. Blocking: a helper thread's. */
#ifndef CODEMCP_WORKER_IMAGE_H
#define CODEMCP_WORKER_IMAGE_H

#include <stddef.h>

/* Where codemcp-worker is inside a built image. */
#define WKI_WORKER_PATH "/opt/codemcp/codemcp-worker"

/* Makes sure the image exists: `named` (CODEMCP_DOCKER_IMAGE) must already; otherwise the
 * image for worker_bin is built when missing. Its name goes to image. 0, or -1 with err. */
int wki_ensure(const char *named, const char *worker_bin, char *image, size_t image_len, char *err,
               size_t err_len);

#endif
