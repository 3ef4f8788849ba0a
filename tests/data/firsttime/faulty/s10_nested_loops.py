# Observations are text.
# expect: result['entities'][…]['observations'][…] is text (str)
g = memory_read_graph()
for e in g['entities']:
    for o in e['observations']:
        print(o['text'])
