/* worker_idblock — which part of the sandbox id range this gateway's sessions run as.
 *
 * Sessions run as uids of their own outside (a subordinate range, or CODEMCP_ROOT_UID_BASE for
 * root) so that what the kernel keeps per user (pipe pages, inotify watches, ucounts) is not
 * shared. Every gateway of one user reads the same range, so two gateways would hand their
 * sessions the same uids. The range is cut into IDBLOCK_COUNT blocks; a gateway takes the first
 * block no other gateway holds, by an flock() on a file named for the range and the block in a
 * directory only its user can write. The kernel drops the lock when the gateway is gone (even
 * SIGKILLed), so nothing is ever left claimed. When every block is held the gateway says so and
 * shares the whole range, as if it were alone. */
#include "admin_paths.h"
#include "log.h"
#include "workers_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* Blocks a range is cut into: 64 gateways of one user at once, each with a 1,024-id block
 * of a 65,536-id range (enough turns for 16 slots: workers.c next_ids). */
#define IDBLOCK_COUNT 64
/* Where root gateways meet: one place on the machine, whatever their HOME. */
#define IDBLOCK_ROOT_DIR "/run/codemcp-ids"

static int held_fd = -1; /* the held block's lock, open for the gateway's life */

/* The directory the gateways of this user meet in, opened; -1 (said why) when there is none
 * this user alone can write. */
static int open_meeting_dir(void)
{
    char buf[4096];
    const char *dir = NULL;
    if (geteuid() == 0 && (mkdir(IDBLOCK_ROOT_DIR, 0700) == 0 || errno == EEXIST))
        dir = IDBLOCK_ROOT_DIR;
    else if (admp_dir(buf, sizeof(buf), 1))
        dir = buf;
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && !(st.st_mode & 022))
        return fd;
    log_warn("worker",
             "sandbox ids: no private directory to share the id range out with other "
             "gateways of this user in (%s): sessions may share uids with theirs",
             dir ? dir : strerror(errno));
    if (fd >= 0)
        close(fd);
    return -1;
}

unsigned long idblock_claim(unsigned long start, unsigned long count, unsigned long n_workers,
                            unsigned long *base)
{
    unsigned long size = count / IDBLOCK_COUNT;
    *base = 0;
    if (size < n_workers) /* too small a range to share out: every slot keeps a place */
        return count;
    int dfd = open_meeting_dir();
    if (dfd < 0)
        return count;
    for (unsigned long b = 0; b < IDBLOCK_COUNT; b++) {
        char name[64];
        snprintf(name, sizeof(name), "ids-%lu-%lu.lock", start, b);
        int fd = openat(dfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            held_fd = fd;
            *base = b * size;
            close(dfd);
            log_info("worker",
                     "sandbox ids: this gateway's sessions take uids %lu-%lu (block %lu "
                     "of %d; other gateways of this user take others)",
                     start + *base, start + *base + size - 1, b, IDBLOCK_COUNT);
            return size;
        }
        close(fd);
    }
    close(dfd);
    log_warn("worker",
             "sandbox ids: all %d blocks of the id range are held by other gateways of "
             "this user: this one's sessions share uids with theirs",
             IDBLOCK_COUNT);
    return count;
}
