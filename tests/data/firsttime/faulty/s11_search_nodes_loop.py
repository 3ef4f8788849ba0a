# search_nodes result in a loop.
# expect: memory_search_nodes: result['entities'][…] has no field `type`
found = memory_search_nodes(query='ada')
result = {e['name']: e['type'] for e in found['entities']}
