# Binding and use inside one function.
# expect: memory_search_nodes: result['entities'][0] has no field `entity_type` (line 6). Did you mean `entityType`?
def kind_of(name):
    found = memory_search_nodes(query=name)
    if found["entities"]:
        return found["entities"][0]["entity_type"]
    return None

result = kind_of("Ada")
