# File info of a file that does not exist, parsed as if it succeeded.
# class: upstream_error
# expect: filesystem_get_file_info
# expect: ENOENT
sizes = {}
for p in ['todo.txt', 'gone.txt']:
    info = filesystem_get_file_info(path=p)['content']
    size = [l for l in info.splitlines() if l.startswith('size:')][0]
    sizes[p] = int(size.split(':')[1])
result = sizes
