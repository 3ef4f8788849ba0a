# A guessed verb for listing the folder.
# class: names
# expect: filesystem_list_directory
entries = filesystem_list_files(path='notes')
names = [l for l in entries['content'].splitlines() if l.strip()]
result = names
