# One edit dict where a list is required.
# expect: `edits` must be array (list), got a dict
result = filesystem_edit_file(path='notes.md', edits={'oldText': 'a', 'newText': 'b'})
