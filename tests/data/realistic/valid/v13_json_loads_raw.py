# Parsing the config with json.loads.
# result: 3
import json
raw = filesystem_read_text_file(path='config.json')['content']
cfg = json.loads(raw)
result = cfg['retries']
