# Writes hidden in a helper and a loop are still direct calls.
# options: {"enforce_mutations": true, "allow_mutations": ["filesystem_create_directory"]}
# expect: filesystem_write_file is a write tool and was not authorized (line 8).
# expect: filesystem_move_file is a write tool and was not authorized (line 11).
def save(path, text):
    filesystem_create_directory(path="/tmp/out")
    for attempt in range(3):
        r = filesystem_write_file(path=path, content=text)
        if r:
            break
    filesystem_move_file(source=path, destination=path + ".bak")

save("/tmp/out/a.txt", "hello")
