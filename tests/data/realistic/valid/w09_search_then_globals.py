# Held out (written after the fixes): search then globals.
# result: true
hits = search_tools('graph')
best = hits[0]
print(best['name'], best['signature'])
fn = globals()[best['name']]
result = callable(fn)
