# eval/exec make the program dynamic.
fn = eval("memory_read_graph")
exec("memory_helper = lambda: 42")
result = (fn(), memory_helper())
