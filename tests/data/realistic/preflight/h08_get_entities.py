# Held out (written after the fixes, measured before tuning): get entities.
# class: heldout
# expect: memory_open_nodes
r = memory_get_entities(names=['Ann'])
result = r
