# read_multiple_files with one string.
# expect: `paths` must be array (list), got str 'notes.md'
result = filesystem_read_multiple_files(paths='notes.md')
