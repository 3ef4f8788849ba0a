# Held out (written after the fixes, measured before tuning): remove file.
# class: heldout
# expect: Functions of that server:
x = filesystem_remove_file(path='old.txt')
