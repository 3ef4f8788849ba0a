# The upstream spelling leaked into the function name.
# expect: `filesystem_readTextFile` is not a known SDK function (line 5). Did you mean `filesystem_read_text_file`?
paths = ["/tmp/a.txt", "/tmp/b.txt"]
for p in paths:
    text = filesystem_readTextFile(path=p)
    print(p, len(str(text)))
