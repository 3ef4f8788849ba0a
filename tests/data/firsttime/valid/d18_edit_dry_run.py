# edit_file with the right nested keys, dry run.
# result: true
r = filesystem_edit_file(path='notes.md', edits=[{'oldText': 'hello', 'newText': 'howdy'}], dryRun=True)
result = 'howdy' in r['content']
