# Python 2 print.
# expect: SyntaxError: Missing parentheses in call to 'print'
graph = memory_read_graph()
print graph
