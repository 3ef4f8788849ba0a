# old/new for oldText/newText.
# expect: `edits[0]` has `old` where the key is `oldText`: rename it
# expect: `edits[0]` has `new` where the key is `newText`
result = filesystem_edit_file(path='notes.md', edits=[{'old': 'a', 'new': 'b'}], dryRun=True)
