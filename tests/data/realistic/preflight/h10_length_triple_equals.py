# Held out (written after the fixes, measured before tuning): length triple equals.
# class: heldout
# expect: Python writes `==`
g = memory_read_graph()
if g['entities'].length === 0:
    print('empty')
