# options: {"enforce_mutations": true, "allow_mutations": ["memory_create_entities", "memory_create_relations"]}
# Writes named in allow_mutations.
ents = [{"name": n, "entityType": "person", "observations": []} for n in ("Ada", "Grace")]
made = memory_create_entities(entities=ents)
rel = memory_create_relations(relations=[{"from": "Ada", "to": "Grace", "relationType": "knows"}])
result = {"made": [e["name"] for e in made["entities"]], "rel": rel["relations"][0]["relationType"]}
