# Fan-out with gather and a join in memory.
names = ["Ada", "Grace", "Alan"]
pend = [memory_search_nodes(query=n) for n in names]
outs = gather(*pend)
hits = {}
for n, o in zip(names, outs):
    if o["ok"]:
        hits[n] = [e["name"] for e in o["value"]["entities"]]
    else:
        hits[n] = o["error"]["kind"]
result = hits
