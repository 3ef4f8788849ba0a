# Parsing a JSON file's content.
# result: {"name": "demo", "retries": 3, "debug": false}
import json
cfg = json.loads(filesystem_read_text_file(path='config.json')['content'])
retries = cfg.get('retries', 1)
result = {'name': cfg['name'], 'retries': retries, 'debug': cfg['debug']}
