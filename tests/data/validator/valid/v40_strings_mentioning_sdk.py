# SDK-looking names inside strings and comments are text.
# memory_delete_everything() would be bad
doc = "call memory_delete_all(force=True) to wipe"
tmpl = f"see filesystem_frobnicate() and {'everything_nope'}"
result = (doc, tmpl)
