# A disabled tool and a bad keyword in one program.
# expect: `filesystem_read_media_file` is disabled in this gateway's configuration (line 4).
# expect: unknown argument `paths` for filesystem_read_text_file (line 5). Did you mean `path`?
img = filesystem_read_media_file(path="/tmp/x.png")
txt = filesystem_read_text_file(paths="/tmp/x.txt")
