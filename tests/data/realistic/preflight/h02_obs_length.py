# Held out (written after the fixes, measured before tuning): obs length.
# class: heldout
# expect: len(x)
g = memory_open_nodes(names=['Ann'])
for ent in g['entities']:
    for obs in ent['observations']:
        print(obs.length)
