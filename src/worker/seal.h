/* seal — the worker's last two locks, applied on itself after the sandbox is built and
 * before any thread starts: Landlock (best effort, by the ABI the kernel reports) and a
 * seccomp filter (libseccomp, all threads).
 *
 * The filter answers EPERM (EACCES for sockets) to what agent code never needs: ptrace and
 * process_vm_*, mount/umount/pivot_root/chroot, unshare/setns and namespace-creating clone
 * flags, keyctl and the key syscalls, bpf, perf_event_open, userfaultfd, io_uring, kexec,
 * module loading, clock and time setting, swap, reboot, acct, quotactl, handle-based opens,
 * iopl/ioperm, syslog; socket() of every family (socketpair(AF_UNIX) stays allowed: the
 * control channel and Python's socketpair() need nothing else; CODEMCP_SANDBOX_NET=host
 * allows sockets); and execve/execveat unless
 * subprocesses are allowed (CODEMCP_SANDBOX_SUBPROCESS). What one session could lock, watch,
 * name or fill for another, or for the gateway's own user, whatever Landlock the kernel has:
 * file locks, leases and F_NOTIFY (ENOLCK/EPERM), inotify (ENOSYS), bind and SO_PASSCRED /
 * SO_PASSPIDFD (no socket gets a name), memfd_create, memfd_secret and SysV shm, message
 * queues and semaphores (ENOSYS: memory RLIMIT_AS does not count), and raising RLIMIT_CPU.
 * Int arguments are compared on their low 32 bits (the kernel's view). Foreign syscall ABIs
 * (i386, x32) kill the process. Must not: be applied before the control descriptor and stdio are
 * set up — nothing after it can open sockets. */
#ifndef CODEMCP_SEAL_H
#define CODEMCP_SEAL_H

#include <stddef.h>

struct sbx_opts;

/* Landlock: read-only everywhere, read-write under /tmp and the CODEMCP_SANDBOX_RW paths,
 * no TCP bind/connect unless the host network is kept, and (ABI 6) no abstract Unix
 * sockets or signals outside the sandbox. Returns the ABI used (0: not available). */
int seal_landlock(const struct sbx_opts *o);

/* Loads the seccomp filter. 0, or -1 with the reason in err. */
int seal_seccomp(const struct sbx_opts *o, char *err, size_t errlen);

#endif
