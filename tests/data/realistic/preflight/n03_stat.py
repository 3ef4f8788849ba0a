# A guessed verb for file metadata.
# class: names
# expect: filesystem_get_file_info
sizes = {}
for p in ['todo.txt', 'config.json']:
    info = filesystem_stat(path=p)
    sizes[p] = info['content']
result = sizes
