# search_tools returns a list of dicts, not functions.
# class: async
# expect: ['name']
hits = search_tools('read a file')
fn = hits[0]
result = fn(path='todo.txt')['content']
