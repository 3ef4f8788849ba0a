# Held out (written after the fixes): roundtrip json.
# result: true
import json
info = filesystem_get_file_info(path='todo.txt')
data = json.loads(json.dumps(info))
size = data['content']
result = 'size' in size
