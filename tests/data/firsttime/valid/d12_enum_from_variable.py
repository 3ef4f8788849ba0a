# An enum value held in a variable.
# result: 2
kinds = ['error', 'success']
out = [everything_get_annotated_message(messageType=k) for k in kinds]
result = len(out)
