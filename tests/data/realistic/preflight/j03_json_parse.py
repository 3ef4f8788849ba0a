# Parsing the config with JSON.parse.
# class: js
# expect: json.loads(
raw = filesystem_read_text_file(path='config.json')['content']
cfg = JSON.parse(raw)
result = cfg['retries']
