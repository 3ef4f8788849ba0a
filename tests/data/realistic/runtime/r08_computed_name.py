# A misspelled function name computed at run time.
# class: names
# expect: memory_read_graph
verb = 'read_grpah'
fn = globals()['memory_' + verb]
g = fn()
result = len(g['entities'])
