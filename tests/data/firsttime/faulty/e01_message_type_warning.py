# An enum value that does not exist.
# expect: `messageType` must be one of 'error', 'success', 'debug'; got 'warning'
result = everything_get_annotated_message(messageType='warning')
