#!/usr/bin/python3
"""contrib/docker/make-seccomp.py — writes contrib/docker/seccomp.json, the seccomp profile a
codemcp container needs: an allow-list like Docker's default (a syscall not listed fails with
ENOSYS, so new kernels' additions stay shut and programs fall back), which also lets the worker
sandbox build itself: clone/clone3/unshare with namespace flags, mount, umount2, pivot_root,
open_tree, move_mount, sethostname and Landlock. Everything else Docker's default refuses to
an unprivileged container stays refused (EPERM): kernel modules, kexec, reboot, keyrings, bpf,
perf, ptrace and process_vm_*, userfaultfd, io_uring, clock setting, NUMA policy, quotas,
swap, handle-based opens, setns and the rest of the new mount API.

The sandbox's own filter (src/worker/seal.c) then shuts namespaces, mounts and the rest again
for the code a worker runs. Run with the kernel headers of the oldest supported release
(Debian bookworm's linux-libc-dev):

    contrib/docker/make-seccomp.py > contrib/docker/seccomp.json
"""
import json
import re
import sys

HEADER = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"

REFUSED = {
    # the machine, not the container
    "acct", "reboot", "kexec_load", "kexec_file_load", "swapon", "swapoff", "syslog",
    "create_module", "init_module", "finit_module", "delete_module", "get_kernel_syms",
    "query_module", "uselib", "nfsservctl", "sysfs", "_sysctl", "ustat", "lookup_dcookie",
    "quotactl", "quotactl_fd", "iopl", "ioperm", "vhangup", "personality",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    # keys, BPF, tracing, other processes' memory
    "add_key", "request_key", "keyctl", "bpf", "perf_event_open", "fanotify_init",
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "userfaultfd",
    "name_to_handle_at", "open_by_handle_at",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "mbind", "set_mempolicy", "get_mempolicy", "move_pages", "migrate_pages",
    "set_mempolicy_home_node",
    # namespaces and mounts the sandbox does not use
    "setns", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
}


def main() -> int:
    with open(HEADER, encoding="ascii") as f:
        names = sorted(set(re.findall(r"^#define __NR_(\w+)\s+\d+", f.read(), re.M)))
    profile = {
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": 38,  # ENOSYS: unknown to this list, as if unknown to the kernel
        "syscalls": [
            {"names": [n for n in names if n not in REFUSED], "action": "SCMP_ACT_ALLOW"},
            {"names": sorted(REFUSED & set(names)), "action": "SCMP_ACT_ERRNO",
             "errnoRet": 1},  # EPERM, as Docker's default answers them
        ],
    }
    json.dump(profile, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
