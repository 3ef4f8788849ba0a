# File info of two files.
# result: {"todo.txt": 6, "config.json": 47}
sizes = {}
for p in ['todo.txt', 'config.json']:
    info = filesystem_get_file_info(path=p)['content']
    size = [l for l in info.splitlines() if l.startswith('size:')][0]
    sizes[p] = int(size.split(':')[1])
result = sizes
