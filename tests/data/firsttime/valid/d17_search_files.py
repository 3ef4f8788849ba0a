# search_files.
# result: true
r = filesystem_search_files(path='.', pattern='*.md')
result = r['content'].strip().endswith('notes.md')
