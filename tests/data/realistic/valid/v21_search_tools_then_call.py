# search_tools, then the function found called by name.
# result: {"found": true, "lines": 3}
hits = search_tools('read a text file')
names = [h['name'] for h in hits]
r = filesystem_read_text_file(path='todo.txt')
result = {'found': 'filesystem_read_text_file' in names, 'lines': len(r['content'].splitlines())}
