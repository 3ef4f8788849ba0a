# Options object for read_text_file.
# expect: pass arguments as keywords: filesystem_read_text_file(path='notes.md', head=1)
result = filesystem_read_text_file({'path': 'notes.md', 'head': 1})
