# Held out (written after the fixes, measured before tuning): listing splitlines.
# class: heldout
# expect: result['content'].splitlines(
files = filesystem_list_directory(path='.')
for line in files.splitlines():
    print(line)
