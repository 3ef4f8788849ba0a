# read_multiple_files with a list.
# result: true
r = filesystem_read_multiple_files(paths=['todo.txt'])
result = 'a' in r['content']
