#!/usr/bin/python3
"""Reads a `perf record -e raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,
sched:sched_wakeup -p GW,WK` of bench/floor_trace.mjs and prints, per execute: the phases of
the gateway/worker critical path (client request read -> frame sent to the worker -> worker
has it -> worker's reply sent -> gateway has it -> answer written to the client), the two
hops split by whether the receiver ran on the sender's CPU, and the in-kernel time of each
syscall that did not sleep, where the woken worker ran against how long the gateway took to
send, and the worker's spurious wake-ups (see the end of main). The worker's socket is fd 3
in both workers; the gateway's descriptors are found from the syscalls (the fd the worker-bound frame goes to is the one
the gateway also reads replies from). Usage: floor_trace.py DATA GW_PID WK_PID [executes, for programs with calls]"""
import collections
import re
import statistics as st
import subprocess
import sys

NAMES = {0: 'read', 1: 'write', 3: 'close', 7: 'poll', 44: 'sendto', 45: 'recvfrom',
         257: 'openat', 286: 'timerfd_settime', 202: 'futex'}
SEND, RECV = (1, 44), (0, 45)


def events(data, tids=False):
    """(pid, cpu, µs, event, text) of each perf event; with tids, (pid, tid, cpu, ...)."""
    fields = 'pid,tid,cpu,time,event,trace' if tids else 'pid,cpu,time,event,trace'
    out = subprocess.run(['perf', 'script', '-i', data, '-F', fields],
                         capture_output=True, text=True, check=True).stdout
    who = r'(\d+)/(\d+)' if tids else r'(\d+)'
    for line in out.splitlines():
        m = re.match(r'\s*' + who + r'\s+\[(\d+)\]\s+([\d.]+):\s+(\S+):\s+(.*)', line)
        if m:
            g = m.groups()
            ids = tuple(int(x) for x in g[:-4])
            yield (*ids, int(g[-4]), float(g[-3]) * 1e6, g[-2], g[-1])


def main():
    data, gw, wk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    evs = list(events(data))
    # gateway fds: the one it writes the worker-bound frame to is the one the worker's
    # reply comes from; of the others, the first read and write carry the client's lines.
    fds = collections.Counter()
    last = {}
    for pid, cpu, t, e, tr in evs:
        if pid == gw and e == 'raw_syscalls:sys_enter':
            mm = re.match(r'NR (\d+) \(([0-9a-f]+)', tr)
            fds[(int(mm[1]), int(mm[2], 16))] += 1
    wfd = max((k for k in fds if k[0] == 44), key=fds.get, default=None)
    if wfd is None:  # floor-gateway writes with write(2): the worker socket is fd 7
        wfd = (1, 7)
    wfd = wfd[1]
    cin = max((k for k in fds if k[0] == 0 and k[1] != wfd), key=fds.get)[1]
    cout = max((k for k in fds if k[0] == 1 and k[1] != wfd), key=fds.get)[1]
    seq, tags = [], {}
    hop = collections.defaultdict(list)
    dur = collections.defaultdict(list)
    sent = back = None
    woke = None  # when the gateway's poll last returned
    place = collections.defaultdict(lambda: [0, 0])  # (frame, gateway-in bucket) -> [same, other]
    frame = 'run'  # what the gateway's next frame to the worker carries: a run, or a call's reply
    in_read, spurious = False, 0
    for pid, cpu, t, e, tr in evs:
        if pid not in (gw, wk):
            continue
        if pid == gw and e == 'sched:sched_wakeup' and in_read and f' pid={wk} ' in tr:
            spurious += 1  # woken by the gateway consuming what it sent: no data for it
        if e == 'raw_syscalls:sys_enter':
            mm = re.match(r'NR (\d+) \(([0-9a-f]+)', tr)
            nr, fd = int(mm[1]), int(mm[2], 16)
            last[pid] = (nr, fd, t, False)
            if pid == gw:
                in_read = nr in RECV and fd == wfd
            if pid == gw and nr in SEND and fd == wfd:
                seq.append((t, 'g_send_w'))
                sent = (t, cpu, t - woke if woke else None, frame)
                frame = 'call reply'
            if pid == gw and nr == 1 and fd == cout:
                seq.append((t, 'g_write_c'))
            if pid == wk and nr in SEND and fd == 3:
                seq.append((t, 'w_send'))
                back = (t, cpu)
        elif e == 'sched:sched_switch' and pid in last:
            last[pid] = last[pid][:3] + (True,)
        elif e == 'raw_syscalls:sys_exit' and pid in last:
            nr, fd, t0, slept = last.pop(pid)
            if pid == gw and nr == 7:
                woke = t
            if pid == gw:
                in_read = False
            if not slept:
                dur[(pid, NAMES.get(nr, str(nr)))].append(t - t0)
            if int(tr.split('= ')[1]) <= 0:
                continue
            if pid == gw and nr == 0 and fd == cin:
                seq.append((t, 'g_read_c'))
                frame = 'run'
            if pid == gw and nr in RECV and fd == wfd:
                seq.append((t, 'g_recv_w'))
                if back:
                    hop['worker -> gateway, ' + ('same CPU' if cpu == back[1] else 'other CPU')].append(t - back[0])
                    back = None
            if pid == wk and nr in RECV and fd == 3:
                seq.append((t, 'w_recv'))
                if sent:
                    hop['gateway -> worker, ' + ('same CPU' if cpu == sent[1] else 'other CPU')].append(t - sent[0])
                    if sent[2] is not None:
                        place[(sent[3], min(int(sent[2] // 10) * 10, 60))][cpu != sent[1]] += 1
                    sent = None
    order = ['g_read_c', 'g_send_w', 'w_recv', 'w_send', 'g_recv_w', 'g_write_c']
    names = ['gateway in: client request read -> frame sent', 'hop gateway -> worker',
             'worker: frame received -> reply sent', 'hop worker -> gateway',
             'gateway out: reply received -> answer written']
    ph, tot, i = [[] for _ in names], [], 0
    while i <= len(seq) - 6:
        if [x[1] for x in seq[i:i + 6]] == order:
            ts = [x[0] for x in seq[i:i + 6]]
            for k in range(5):
                ph[k].append(ts[k + 1] - ts[k])
            tot.append(ts[5] - ts[0])
            i += 6
        else:
            i += 1
    print(f'{data}: {len(tot)} executes (gateway pid {gw}: client fds {cin}/{cout}, worker fd {wfd})')
    if tot:  # the phases are those of an execute without SDK calls (the empty program)
        print('| phase | median µs | mean µs |\n|---|---|---|')
        for n, p in zip(names, ph):
            print(f'| {n} | {st.median(p):.0f} | {st.mean(p):.0f} |')
        print(f'| total, client request read -> answer written | {st.median(tot):.0f} | {st.mean(tot):.0f} |')
    print('\n| hop | executes | median µs |\n|---|---|---|')
    for k in sorted(hop):
        print(f'| {k} | {len(hop[k])} | {st.median(hop[k]):.0f} |')
    # Where the woken worker runs depends on how long the gateway took from its wake-up to the
    # send: the longer, the likelier the CPU its waker left has gone idle and gets the worker.
    print('\n| frame | gateway: poll returned -> frame to the worker sent, µs | sends | worker on the other CPU |\n|---|---|---|---|')
    for f, k in sorted(place, key=lambda x: (x[0] != 'run', x[1])):
        same, other = place[(f, k)]
        print(f'| {f} | {k}{"+" if k == 60 else f"-{k + 10}"} | {same + other} | {other / (same + other):.0%} |')
    n_ex = len(tot) or int(sys.argv[4]) if len(sys.argv) > 4 or tot else 1
    print(f'\nworker woken inside the gateway\'s read of the worker socket (no data for it: '
          f'the write-space wake-up of a reader blocked in recv/read): {spurious / n_ex:.2f} per execute')
    print('\n| process | syscall | per execute | median µs in the kernel (calls that did not sleep) |\n|---|---|---|---|')
    for k in sorted(dur, key=lambda k: (k[0] != gw, -len(dur[k]))):
        if len(dur[k]) >= n_ex / 3:
            print(f'| {"gateway" if k[0] == gw else "worker"} | {k[1]} | {len(dur[k]) / n_ex:.2f} | {st.median(dur[k]):.0f} |')


if __name__ == '__main__':
    main()
