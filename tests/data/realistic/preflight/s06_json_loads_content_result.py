# json.loads over the whole {content: str} result of a file read.
# class: shapes
# expect: ['content']
import json
cfg = json.loads(filesystem_read_text_file(path='config.json'))
retries = cfg.get('retries', 1)
result = {'name': cfg['name'], 'retries': retries}
