# head= written as a string.
# expect: `head` must be number (float), got str '5'
result = filesystem_read_text_file(path='notes.md', head='5')
