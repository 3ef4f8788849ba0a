#!/usr/bin/python3
"""Reads a `perf record -e raw_syscalls:sys_enter,raw_syscalls:sys_exit,sched:sched_switch,
sched:sched_wakeup -p {gw},{wk},{up},{cl}` of bench/floor_trace.mjs (all four processes: the
client, the gateway, the worker, the upstream) and prints two tables:

1. Milestones of an execute, µs after the gateway read the client's request (quartiles of the
   first and of the last such event in each execute): the worker's reads and sends, the
   gateway's writes to the upstream, the upstream's reads and writes, the gateway's reads of
   them and its frames to the worker, the answer. For 50 concurrent calls this shows where an
   arm's time goes before the upstream starts (head) and after its last reply (tail).
2. Whether the client was preempted by the gateway it woke (it was still runnable, state R,
   when the gateway ran) against where the woken worker then ran (the gateway's CPU or the
   other), with the client's round trip for each: a CPU that still has the client runnable
   does not get the worker.

Descriptors are found from the syscalls: the worker's socket is fd 3 in both workers; the
gateway's are the fds it reads and writes most (client in/out, worker, upstream in/out).
Usage: floor_timeline.py DATA GW WK UP CL   (pids; floor_trace.mjs prints GW and WK)"""
import collections
import re
import statistics as st
import sys

from floor_trace import events  # bench/floor_trace.py, beside this file

READ, WRITE = (0, 45), (1, 44)  # read/recvfrom, write/sendto


def syscalls(evs):
    """('sys', pid, cpu, t_enter, t_exit, nr, fd, ret) of the main threads' syscalls and
    ('switch', pid, cpu, t, still runnable) of their context switches, in order."""
    open_ = {}
    for pid, tid, cpu, t, e, tr in evs:
        if pid != tid:
            continue
        if e == 'raw_syscalls:sys_enter':
            m = re.match(r'NR (\d+) \(([0-9a-f]+)', tr)
            open_[tid] = (t, int(m[1]), int(m[2], 16))
        elif e == 'sched:sched_switch':
            yield ('switch', pid, cpu, t, 'prev_state=R' in tr)
        elif e == 'raw_syscalls:sys_exit' and tid in open_:
            t0, nr, fd = open_.pop(tid)
            yield ('sys', pid, cpu, t0, t, nr, fd, int(tr.split('= ')[1]))


def main():
    data = sys.argv[1]
    gw, wk, up, cl = map(int, sys.argv[2:6])
    recs = list(syscalls(events(data, tids=True)))
    # The worker's socket is the one descriptor the gateway both reads and writes; the client's
    # are the ones it reads right after the client wrote and writes right before the client
    # reads; the upstream's are the others.
    sysrecs = [r for r in recs if r[0] == 'sys' and r[7] > 0]
    rd = collections.Counter(r[6] for r in sysrecs if r[1] == gw and r[5] in READ)
    wr = collections.Counter(r[6] for r in sysrecs if r[1] == gw and r[5] in WRITE)
    wfd = max(rd.keys() & wr.keys(), key=lambda f: rd[f] + wr[f])
    clw = collections.Counter(r[6] for r in sysrecs if r[1] == cl and r[5] == 1).most_common(1)[0][0]
    after_cl, before_cl, wrote, last_gw_write = collections.Counter(), collections.Counter(), False, None
    for r in sysrecs:
        if r[1] == cl and r[5] == 1 and r[6] == clw:
            wrote = True
        elif r[1] == gw and r[5] in READ and wrote:
            after_cl[r[6]] += 1
            wrote = False
        elif r[1] == gw and r[5] in WRITE and r[6] != wfd:
            last_gw_write = r[6]
        elif r[1] == cl and r[5] in READ and last_gw_write is not None:
            before_cl[last_gw_write] += 1
            last_gw_write = None
    cin = after_cl.most_common(1)[0][0]
    cout = before_cl.most_common(1)[0][0]
    upin = max(wr.keys() - {wfd, cout}, key=wr.get, default=-1)
    upout = max(rd.keys() - {wfd, cin}, key=rd.get, default=-1)
    print(f'{data}: gateway fds client {cin}/{cout}, worker {wfd}, upstream {upin}/{upout}; client writes fd {clw}')

    # milestone: (what it is, process, syscalls, descriptor)
    milestones = {'w recv': ('worker reads a frame', wk, READ, 3),
                  'w send': ('worker sends a frame', wk, WRITE, 3),
                  'g->up': ('gateway writes to the upstream', gw, WRITE, upin),
                  'up read': ('upstream reads', up, READ, 0),
                  'up write': ('upstream writes a reply', up, WRITE, 1),
                  'g read up': ('gateway reads the upstream', gw, READ, upout),
                  'g->w': ('gateway sends to the worker', gw, WRITE, wfd),
                  'w->g read': ('gateway reads the worker', gw, READ, wfd),
                  'g answer': ('gateway writes the answer', gw, WRITE, cout)}
    which = {(p, nr, fd): k for k, (_, p, nrs, fd) in milestones.items() for nr in nrs}
    ex, cur = [], None
    for r in recs:
        if r[0] == 'switch':
            _, pid, cpu, t, runnable = r
            if cur is not None and pid == cl and 'cl_switch' not in cur:
                cur['cl_switch'] = 'R' if runnable else 'S'
            continue
        _, pid, cpu, t0, t, nr, fd, ret = r
        if pid == cl and nr == 1 and fd == clw:
            cur = {'t_cl': t0}
            ex.append(cur)
            continue
        if cur is None:
            continue
        if pid == gw and nr in WRITE and fd == wfd and 'gsend_cpu' not in cur:
            cur['gsend_cpu'] = cpu
        if pid == wk and nr in READ and fd == 3 and ret > 0 and 'wrecv_cpu' not in cur:
            cur['wrecv_cpu'] = cpu
        if pid == cl and nr in READ and ret > 0 and 'cl_read' not in cur:
            cur['cl_read'] = t
        if ret <= 0:
            continue
        if pid == gw and nr in READ and fd == cin:
            cur['t0'] = t
        key = which.get((pid, nr, fd))
        if key and 't0' in cur:
            cur.setdefault(key, []).append(t - cur['t0'])
    ex = [x for x in ex[10:-2] if 't0' in x]
    q = lambda v: '%5.0f %5.0f %5.0f' % tuple(st.quantiles(v, n=4)) if len(v) > 1 else '-'
    print(f'\n{len(ex)} executes. µs after the gateway read the request, quartiles (25/50/75 %)\n')
    print('| event | first in the execute | last in the execute | per execute |\n|---|---|---|---|')
    for k, (n, *_) in milestones.items():
        have = [x[k] for x in ex if k in x]
        if have:
            print(f'| {n} | {q([h[0] for h in have])} | {q([h[-1] for h in have])} | '
                  f'{st.median(len(h) for h in have):.0f} |')
    print('\n| client when the gateway ran | worker woken on | executes | client round trip, median µs |\n|---|---|---|---|')
    table = collections.defaultdict(list)
    for x in ex:
        if {'cl_switch', 'gsend_cpu', 'wrecv_cpu', 'cl_read'} <= x.keys():
            where = "the gateway's CPU" if x['gsend_cpu'] == x['wrecv_cpu'] else 'the other CPU'
            table[('preempted (R)' if x['cl_switch'] == 'R' else 'asleep (S)', where)].append(x['cl_read'] - x['t_cl'])
    for k in sorted(table):
        print(f'| {k[0]} | {k[1]} | {len(table[k])} | {st.median(table[k]):.0f} |')


if __name__ == '__main__':
    main()
