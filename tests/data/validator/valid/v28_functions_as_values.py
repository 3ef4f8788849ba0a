# SDK functions passed around as values and called through variables.
readers = [memory_read_graph, filesystem_list_allowed_directories]
outs = [f() for f in readers]
call = everything_echo
echoed = call(message="through a variable")
result = (outs, echoed)
