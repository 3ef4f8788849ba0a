# The schema's camelCase name was snake_cased.
# options: {"dry_run": true, "enforce_mutations": true}
# expect: unknown argument `dry_run` for filesystem_edit_file (line 5). Did you mean `dryRun`?
edits = [{"oldText": "foo", "newText": "bar"}]
preview = filesystem_edit_file(path="/tmp/a.txt", edits=edits, dry_run=True)
result = preview
