# An enum value inside a loop body.
# expect: got 'info'
# expect: (line 6)
out = []
for i in range(3):
    out.append(everything_get_annotated_message(messageType='info'))
result = len(out)
