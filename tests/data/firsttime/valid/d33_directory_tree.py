# directory_tree with excludePatterns as a list.
# result: ["notes.md"]
import json
r = filesystem_directory_tree(path='.', excludePatterns=['*.txt'])
result = sorted(n['name'] for n in json.loads(r['content']))
