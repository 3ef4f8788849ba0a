# A KeyError on parsed data: the keys that exist must be listed.
# class: keyerror
# expect: 'retry'
# expect: retries
import json
raw = filesystem_read_text_file(path='config.json')['content']
cfg = json.loads(raw)
tries = cfg['retry']
result = tries * 2
